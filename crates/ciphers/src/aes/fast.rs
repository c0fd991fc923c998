//! Hardware AES: our own kernels for CTR, ECB and CBC encryption, the RustCrypto `aes` crate
//! where no kernel fits this CPU (and as the reference the kernels are tested against).
//!
//! The crate picks AES-NI, VAES-256 or VAES-512 at run time, but goes through memory where
//! a mode needs more than whole blocks: CTR through it means writing counter blocks out,
//! encrypting them and XORing them into the data in a second pass, and CBC encryption means
//! one call per block. The fused kernels ([`super::ctr_vaes512`], [`super::ctr_aesni`],
//! [`super::cbc_aesni`]) keep counters or the chain in registers and touch the data once; the
//! VAES-512 ECB kernel ([`super::ecb_vaes512`]) keeps 48 blocks in flight, about three times
//! the crate's rate. They need the plain FIPS-197 round keys, which the crate does not
//! expose, so this file expands the key a second time into [`RoundKeys`] (and, for ECB
//! decryption, derives the equivalent-inverse-cipher keys from them).

use aes::cipher::{Array, BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::BlockCipher;

/// One of the three AES key sizes through the `aes` crate, key schedule wiped on drop (crate
/// feature `zeroize`).
enum CrateCipher {
    Aes128(aes::Aes128),
    Aes192(aes::Aes192),
    Aes256(aes::Aes256),
}

/// The most round keys any key size needs: AES-256 has 14 rounds plus the initial key.
pub(super) const MAX_ROUND_KEYS: usize = 15;

/// FIPS-197 encryption round keys, each in the byte order the AES instructions take.
///
/// Cache-line aligned, so that the 240 bytes of keys the kernels load per call span the fewest
/// lines (four).
#[derive(Zeroize, ZeroizeOnDrop)]
#[repr(C, align(64))]
pub(super) struct RoundKeys {
    pub(super) keys: [[u8; 16]; MAX_ROUND_KEYS],
    /// 10, 12 or 14.
    pub(super) rounds: usize,
}

impl RoundKeys {
    /// FIPS-197 section 5.2 key expansion, word by word, for 16-, 24- and 32-byte keys.
    pub(super) fn expand(key: &[u8]) -> Self {
        let key_words = key.len() / 4;
        let rounds = key_words + 6;
        let total_words = 4 * (rounds + 1);
        // Words hold their four bytes in memory order (little-endian integers), so a round
        // key is four consecutive words written back with `to_le_bytes`.
        let mut words = [0u32; 4 * MAX_ROUND_KEYS];
        for (word, bytes) in words.iter_mut().zip(key.chunks_exact(4)) {
            *word = u32::from_le_bytes(bytes.try_into().expect("4-byte chunk"));
        }
        let mut round_constant = 1u8;
        for index in key_words..total_words {
            let mut temp = words[index - 1];
            if index % key_words == 0 {
                // RotWord moves byte 0 to the end: in a little-endian integer that is a
                // right rotation by one byte.
                temp = sub_word(temp.rotate_right(8)) ^ u32::from(round_constant);
                round_constant = multiply_by_x(round_constant);
            } else if key_words > 6 && index % key_words == 4 {
                temp = sub_word(temp);
            }
            words[index] = words[index - key_words] ^ temp;
        }
        let mut keys = [[0u8; 16]; MAX_ROUND_KEYS];
        for (round_key, four_words) in keys.iter_mut().zip(words[..total_words].chunks_exact(4)) {
            for (bytes, word) in round_key.chunks_exact_mut(4).zip(four_words) {
                bytes.copy_from_slice(&word.to_le_bytes());
            }
        }
        words.zeroize();
        RoundKeys { keys, rounds }
    }
}

/// Doubling in GF(2^8) modulo the AES polynomial x^8 + x^4 + x^3 + x + 1.
fn multiply_by_x(value: u8) -> u8 {
    (value << 1) ^ (0x1B * (value >> 7))
}

/// Product in GF(2^8), with no branches or table look-ups that depend on the operands: the key
/// passes through here, and key-dependent memory access or timing would leak it.
fn gf_multiply(mut left: u8, right: u8) -> u8 {
    let mut product = 0u8;
    for bit in 0..8 {
        product ^= left & 0u8.wrapping_sub((right >> bit) & 1);
        left = multiply_by_x(left);
    }
    product
}

/// The AES S-box computed, not looked up: the multiplicative inverse as x^254 (0 maps to 0),
/// then the FIPS-197 affine map. Slow, but it runs only 40 to 60 times per key.
fn sub_byte(value: u8) -> u8 {
    // x^254 = x^(2+4+8+16+32+64+128): square repeatedly, multiplying in each square.
    let mut square = gf_multiply(value, value);
    let mut inverse = square;
    for _ in 0..6 {
        square = gf_multiply(square, square);
        inverse = gf_multiply(inverse, square);
    }
    inverse
        ^ inverse.rotate_left(1)
        ^ inverse.rotate_left(2)
        ^ inverse.rotate_left(3)
        ^ inverse.rotate_left(4)
        ^ 0x63
}

fn sub_word(word: u32) -> u32 {
    u32::from_le_bytes(word.to_le_bytes().map(sub_byte))
}

/// Which fused CTR kernel this CPU can run, decided once per key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CtrPath {
    /// 512-bit VAES with AVX-512BW byte shuffles and masks.
    Vaes512,
    /// 128-bit AES-NI, eight blocks in flight.
    AesNi,
    /// No AES instructions: the mode falls back to `encrypt_blocks`.
    None,
}

impl CtrPath {
    /// The fastest kernel whose features this CPU has.
    fn detect() -> Self {
        if Self::Vaes512.is_available() {
            CtrPath::Vaes512
        } else if Self::AesNi.is_available() {
            CtrPath::AesNi
        } else {
            CtrPath::None
        }
    }

    /// Whether this CPU has every feature the kernel enables.
    fn is_available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected;
            match self {
                CtrPath::Vaes512 => {
                    is_x86_feature_detected!("aes")
                        && is_x86_feature_detected!("vaes")
                        && is_x86_feature_detected!("avx512f")
                        && is_x86_feature_detected!("avx512bw")
                }
                CtrPath::AesNi => {
                    is_x86_feature_detected!("aes") && is_x86_feature_detected!("ssse3")
                }
                CtrPath::None => false,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }
}

/// Which ECB kernel [`FastAes::encrypt_blocks`] and [`FastAes::decrypt_blocks`] use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EcbPath {
    /// Our 512-bit VAES kernel, 48 blocks in flight.
    Vaes512,
    /// The `aes` crate (itself AES-NI or VAES where present).
    Crate,
}

impl EcbPath {
    fn detect() -> Self {
        if Self::Vaes512.is_available() {
            EcbPath::Vaes512
        } else {
            EcbPath::Crate
        }
    }

    fn is_available(self) -> bool {
        match self {
            // The same features as the VAES-512 CTR kernel.
            EcbPath::Vaes512 => CtrPath::Vaes512.is_available(),
            EcbPath::Crate => true,
        }
    }
}

/// Which fused CBC encryption kernel this CPU can run. CBC encryption is one block at a time
/// whatever the register width, so there is no VAES variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CbcPath {
    /// 128-bit AES-NI. (A VEX-encoded build, which saves the register copy before the two
    /// `aesenclast`s, measured the same: the copy is eliminated at rename.)
    AesNi,
    /// No AES instructions: the mode falls back to one `encrypt_blocks` call per block.
    None,
}

impl CbcPath {
    fn detect() -> Self {
        if Self::AesNi.is_available() {
            CbcPath::AesNi
        } else {
            CbcPath::None
        }
    }

    fn is_available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected;
            match self {
                CbcPath::AesNi => is_x86_feature_detected!("aes"),
                CbcPath::None => false,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }
}

/// AES with any of the three key sizes: our kernels where this CPU has their features, the
/// `aes` crate otherwise.
pub struct FastAes {
    cipher: CrateCipher,
    round_keys: RoundKeys,
    /// Equivalent-inverse-cipher round keys for the ECB decryption kernel; present exactly
    /// when `ecb_path` is [`EcbPath::Vaes512`]. Wiped on drop like `round_keys`.
    decrypt_round_keys: Option<RoundKeys>,
    ctr_path: CtrPath,
    ecb_path: EcbPath,
    cbc_path: CbcPath,
}

impl FastAes {
    /// `key` must be 16, 24 or 32 bytes long (checked by [`crate::new_cipher`]).
    pub fn new(key: &[u8]) -> Self {
        let cipher = match key.len() {
            16 => CrateCipher::Aes128(aes::Aes128::new_from_slice(key).expect("16-byte key")),
            24 => CrateCipher::Aes192(aes::Aes192::new_from_slice(key).expect("24-byte key")),
            32 => CrateCipher::Aes256(aes::Aes256::new_from_slice(key).expect("32-byte key")),
            other => panic!("AES key of {other} bytes reached FastAes::new"),
        };
        let round_keys = RoundKeys::expand(key);
        let ecb_path = EcbPath::detect();
        let decrypt_round_keys = match ecb_path {
            #[cfg(target_arch = "x86_64")]
            EcbPath::Vaes512 => {
                // SAFETY: the VAES-512 path is only detected on CPUs with AES-NI.
                Some(unsafe { super::ecb_vaes512::inverse_round_keys(&round_keys) })
            }
            _ => None,
        };
        FastAes {
            cipher,
            round_keys,
            decrypt_round_keys,
            ctr_path: CtrPath::detect(),
            ecb_path,
            cbc_path: CbcPath::detect(),
        }
    }

    /// Encrypts whole blocks through the `aes` crate, whatever kernel is detected: the
    /// fallback, and the reference the kernels are tested against.
    pub(super) fn crate_encrypt_blocks(&self, blocks: &mut [u8]) {
        let blocks = as_blocks(blocks);
        match &self.cipher {
            CrateCipher::Aes128(c) => c.encrypt_blocks(blocks),
            CrateCipher::Aes192(c) => c.encrypt_blocks(blocks),
            CrateCipher::Aes256(c) => c.encrypt_blocks(blocks),
        }
    }

    /// Decrypts whole blocks through the `aes` crate; see [`Self::crate_encrypt_blocks`].
    pub(super) fn crate_decrypt_blocks(&self, blocks: &mut [u8]) {
        let blocks = as_blocks(blocks);
        match &self.cipher {
            CrateCipher::Aes128(c) => c.decrypt_blocks(blocks),
            CrateCipher::Aes192(c) => c.decrypt_blocks(blocks),
            CrateCipher::Aes256(c) => c.decrypt_blocks(blocks),
        }
    }

    /// Encrypts through ECB path `path` instead of the detected one, so that tests check
    /// every path this CPU supports. Returns `false`, touching nothing, when the CPU lacks
    /// `path`'s features.
    #[cfg(test)]
    pub(super) fn ecb_encrypt_with(&self, path: EcbPath, blocks: &mut [u8]) -> bool {
        // SAFETY: `is_available` has just confirmed `path`'s features.
        path.is_available() && unsafe { self.run_ecb(path, false, blocks) }
    }

    /// Decryption twin of [`Self::ecb_encrypt_with`].
    #[cfg(test)]
    pub(super) fn ecb_decrypt_with(&self, path: EcbPath, blocks: &mut [u8]) -> bool {
        // SAFETY: as above.
        path.is_available() && unsafe { self.run_ecb(path, true, blocks) }
    }

    /// Runs ECB path `path` in place, decrypting if `decrypt`. Returns `false`, touching
    /// nothing, only when the kernel's decryption keys are missing (the path was not the
    /// detected one).
    ///
    /// # Safety
    /// The CPU must have `path`'s features ([`EcbPath::is_available`]).
    unsafe fn run_ecb(&self, path: EcbPath, decrypt: bool, blocks: &mut [u8]) -> bool {
        match path {
            #[cfg(target_arch = "x86_64")]
            EcbPath::Vaes512 => {
                assert!(
                    blocks.len().is_multiple_of(16),
                    "AES input is not a whole number of blocks"
                );
                if !decrypt {
                    // SAFETY: the caller guarantees the kernel's features; the kernel reads
                    // and writes only inside `blocks`.
                    unsafe { super::ecb_vaes512::encrypt(&self.round_keys, blocks) };
                    return true;
                }
                let Some(inverse_keys) = &self.decrypt_round_keys else {
                    return false;
                };
                // SAFETY: as above; `inverse_keys` came from `inverse_round_keys`.
                unsafe { super::ecb_vaes512::decrypt(inverse_keys, blocks) };
                true
            }
            _ if decrypt => {
                self.crate_decrypt_blocks(blocks);
                true
            }
            _ => {
                self.crate_encrypt_blocks(blocks);
                true
            }
        }
    }

    /// Runs CBC kernel `path` instead of the detected one; see [`Self::ecb_encrypt_with`].
    #[cfg(test)]
    pub(super) fn cbc_encrypt_with(
        &self,
        path: CbcPath,
        chain: &mut [u8],
        data: &mut [u8],
    ) -> bool {
        // SAFETY: `is_available` has just confirmed `path`'s features.
        path.is_available() && unsafe { self.run_cbc_kernel(path, chain, data) }
    }

    /// Returns `false` for [`CbcPath::None`], otherwise runs the kernel and returns `true`.
    ///
    /// # Safety
    /// The CPU must have `path`'s features ([`CbcPath::is_available`]).
    unsafe fn run_cbc_kernel(&self, path: CbcPath, chain: &mut [u8], data: &mut [u8]) -> bool {
        if path == CbcPath::None {
            return false;
        }
        let chain: &mut [u8; 16] = chain
            .try_into()
            .expect("the CBC chain is one 16-byte block");
        let (blocks, rest) = data.as_chunks_mut::<16>();
        assert!(rest.is_empty(), "CBC input is not a whole number of blocks");
        match path {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the caller guarantees the kernel's features; the kernel reads and
            // writes only `chain` and `blocks`.
            CbcPath::AesNi => unsafe {
                super::cbc_aesni::cbc_encrypt(&self.round_keys, chain, blocks);
                true
            },
            _ => {
                // See `run_ctr_kernel`: keeps other architectures free of unused warnings.
                let _ = (&self.round_keys, chain, blocks);
                false
            }
        }
    }

    /// Runs the fused CTR kernel `path` instead of the detected one, so that tests check
    /// every kernel this CPU supports. Returns `false`, touching nothing, when the CPU lacks
    /// `path`'s features.
    #[cfg(test)]
    pub(super) fn ctr32_xor_with(
        &self,
        path: CtrPath,
        counter: &[u8; 16],
        data: &mut [u8],
    ) -> bool {
        // SAFETY: `is_available` has just confirmed `path`'s features.
        path.is_available() && unsafe { self.run_ctr_kernel(path, counter, data) }
    }

    /// Returns `false` for [`CtrPath::None`], otherwise runs the kernel and returns `true`.
    ///
    /// # Safety
    /// The CPU must have `path`'s features ([`CtrPath::is_available`]).
    unsafe fn run_ctr_kernel(&self, path: CtrPath, counter: &[u8; 16], data: &mut [u8]) -> bool {
        match path {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the caller guarantees the kernel's features; the kernel reads and
            // writes only inside `data`.
            CtrPath::Vaes512 => unsafe {
                super::ctr_vaes512::ctr32_xor(&self.round_keys, counter, data);
                true
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            CtrPath::AesNi => unsafe {
                super::ctr_aesni::ctr32_xor(&self.round_keys, counter, data);
                true
            },
            _ => {
                // No kernel for this path or architecture; naming the operands keeps builds
                // for other architectures free of unused-value warnings.
                let _ = (&self.round_keys, counter, data);
                false
            }
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
        // SAFETY: `ecb_path` came from `EcbPath::detect`, which only picks a kernel whose
        // features this CPU has. Encryption never refuses.
        let done = unsafe { self.run_ecb(self.ecb_path, false, blocks) };
        debug_assert!(done);
    }

    fn decrypt_blocks(&self, blocks: &mut [u8]) {
        // SAFETY: as in `encrypt_blocks`; the detected path always has its decryption keys.
        let done = unsafe { self.run_ecb(self.ecb_path, true, blocks) };
        debug_assert!(done);
    }

    fn ctr32_xor(&self, counter: &[u8; 16], data: &mut [u8]) -> bool {
        // SAFETY: `ctr_path` came from `CtrPath::detect`, which only picks a kernel whose
        // features this CPU has.
        unsafe { self.run_ctr_kernel(self.ctr_path, counter, data) }
    }

    fn cbc_encrypt(&self, chain: &mut [u8], data: &mut [u8]) -> bool {
        // SAFETY: `cbc_path` came from `CbcPath::detect`, which only picks a kernel whose
        // features this CPU has.
        unsafe { self.run_cbc_kernel(self.cbc_path, chain, data) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_expansion_matches_fips_197_appendix_a() {
        // FIPS-197 appendix A.1, A.2, A.3: the first and last round keys of each example.
        let cases: [(&str, &str, &str); 3] = [
            (
                "2b7e151628aed2a6abf7158809cf4f3c",
                "a0fafe1788542cb123a339392a6c7605",
                "d014f9a8c9ee2589e13f0cc8b6630ca6",
            ),
            (
                "8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b",
                "62f8ead2522c6b7bfe0c91f72402f5a5",
                "e98ba06f448c773c8ecc720401002202",
            ),
            (
                "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
                "1f352c073b6108d72d9810a30914dff4",
                "fe4890d1e6188d0b046df344706c631e",
            ),
        ];
        for (key, second, last) in cases {
            let key = hex::decode(key).expect("test hex");
            let expanded = RoundKeys::expand(&key);
            assert_eq!(expanded.rounds, key.len() / 4 + 6);
            assert_eq!(expanded.keys[0], key[..16]);
            assert_eq!(hex::encode(expanded.keys[1]), second);
            assert_eq!(hex::encode(expanded.keys[expanded.rounds]), last);
        }
    }

    #[test]
    fn computed_sbox_matches_known_entries() {
        assert_eq!(sub_byte(0x00), 0x63);
        assert_eq!(sub_byte(0x01), 0x7c);
        assert_eq!(sub_byte(0x53), 0xed);
        assert_eq!(sub_byte(0xff), 0x16);
    }
}
