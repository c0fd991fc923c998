//! Hardware AES through the RustCrypto `aes` crate.
//!
//! The crate picks AES-NI, VAES-256 or VAES-512 at run time and keeps up to 64 blocks in
//! flight per call; this file only adapts its typed block slices to our byte slices.

use aes::cipher::{Array, BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};

use crate::BlockCipher;

/// One of the three AES key sizes, key schedule wiped on drop (crate feature `zeroize`).
pub enum FastAes {
    Aes128(aes::Aes128),
    Aes192(aes::Aes192),
    Aes256(aes::Aes256),
}

impl FastAes {
    /// `key` must be 16, 24 or 32 bytes long (checked by [`crate::new_cipher`]).
    pub fn new(key: &[u8]) -> Self {
        match key.len() {
            16 => FastAes::Aes128(aes::Aes128::new_from_slice(key).expect("16-byte key")),
            24 => FastAes::Aes192(aes::Aes192::new_from_slice(key).expect("24-byte key")),
            32 => FastAes::Aes256(aes::Aes256::new_from_slice(key).expect("32-byte key")),
            other => panic!("AES key of {other} bytes reached FastAes::new"),
        }
    }
}

/// Views whole 16-byte blocks of `bytes` as the crate's block type.
fn as_blocks(bytes: &mut [u8]) -> &mut [aes::Block] {
    let (blocks, rest) = bytes.as_chunks_mut::<16>();
    assert!(rest.is_empty(), "AES input is not a whole number of blocks");
    Array::cast_slice_from_core_mut(blocks)
}

impl BlockCipher for FastAes {
    fn block_size(&self) -> usize {
        16
    }

    fn encrypt_blocks(&self, blocks: &mut [u8]) {
        let blocks = as_blocks(blocks);
        match self {
            FastAes::Aes128(c) => c.encrypt_blocks(blocks),
            FastAes::Aes192(c) => c.encrypt_blocks(blocks),
            FastAes::Aes256(c) => c.encrypt_blocks(blocks),
        }
    }

    fn decrypt_blocks(&self, blocks: &mut [u8]) {
        let blocks = as_blocks(blocks);
        match self {
            FastAes::Aes128(c) => c.decrypt_blocks(blocks),
            FastAes::Aes192(c) => c.decrypt_blocks(blocks),
            FastAes::Aes256(c) => c.decrypt_blocks(blocks),
        }
    }
}
