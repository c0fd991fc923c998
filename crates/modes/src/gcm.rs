//! GCM (SP 800-38D) for 128-bit block ciphers (AES, RC6).
//!
//! The message is split into ranges of whole blocks. Each range is run through CTR (with the
//! `inc32` counter rule) and GHASH from a zero state, fused in L1-sized pieces so the data is
//! read from memory once; the partial GHASH sums are then joined in order with powers of H by
//! a [`GcmAccumulator`]. Decryption hashes the ciphertext *before* decrypting each piece, so
//! the tag can be checked by the caller before any plaintext leaves its control.

use parcrypt_ciphers::BlockCipher;
use subtle::ConstantTimeEq;
use zeroize::Zeroize;

use crate::ctr::{self, Counter, CounterRule};
use crate::ghash::GhashKey;
use crate::Direction;

/// Bytes of a range processed by CTR then GHASH before moving on (stays in L1).
const FUSED_PIECE_BYTES: usize = 4096;

/// The longest plaintext GCM allows: 2^39 - 256 bits (SP 800-38D section 5.2.1.1).
pub const MAX_TEXT_BYTES: u64 = (1 << 36) - 32;

/// The tag length parcrypt writes and expects.
pub const TAG_BYTES: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GcmError {
    #[error("GCM needs an IV of at least 1 byte")]
    EmptyIv,
    #[error("GCM needs a 128-bit block cipher")]
    BlockSize,
    #[error("GCM message too long: at most {MAX_TEXT_BYTES} bytes under one key and IV")]
    TooLong,
    #[error("authentication failed: the tag does not match (wrong key, IV or AAD, or the data was modified)")]
    TagMismatch,
}

/// Per-message GCM state derived from the key and IV: the GHASH key, the pre-counter block
/// J0 and E_K(J0), which masks the tag.
pub struct Gcm {
    ghash: GhashKey,
    first_text_counter: Counter,
    tag_mask: [u8; 16],
}

impl Gcm {
    pub fn new(cipher: &dyn BlockCipher, iv: &[u8]) -> Result<Self, GcmError> {
        if cipher.block_size() != 16 {
            return Err(GcmError::BlockSize);
        }
        if iv.is_empty() {
            return Err(GcmError::EmptyIv);
        }
        let mut hash_subkey = [0u8; 16];
        cipher.encrypt_blocks(&mut hash_subkey);
        let ghash = GhashKey::new(&hash_subkey);
        hash_subkey.zeroize();

        // J0 = IV || 0^31 || 1 for 96-bit IVs, GHASH(IV || pad || [len(IV)]_64) otherwise.
        let mut pre_counter = [0u8; 16];
        if iv.len() == 12 {
            pre_counter[..12].copy_from_slice(iv);
            pre_counter[15] = 1;
        } else {
            let mut state = 0u128;
            hash_padded(&ghash, &mut state, iv);
            let mut length_block = [0u8; 16];
            length_block[8..].copy_from_slice(&(iv.len() as u64 * 8).to_be_bytes());
            ghash.update(&mut state, &length_block);
            pre_counter = state.to_be_bytes();
        }
        let mut tag_mask = pre_counter;
        cipher.encrypt_blocks(&mut tag_mask);
        let first_text_counter = Counter::new(&pre_counter, CounterRule::Low32).advanced(1);
        Ok(Gcm {
            ghash,
            first_text_counter,
            tag_mask,
        })
    }

    pub fn ghash_key(&self) -> &GhashKey {
        &self.ghash
    }

    /// Encrypts or decrypts the range of the message that starts at block `first_block`
    /// (only the last range of a message may end in a partial block) and returns the
    /// GHASH partial sum of the range's ciphertext, from a zero state.
    pub fn process_range(
        &self,
        cipher: &dyn BlockCipher,
        direction: Direction,
        first_block: u64,
        data: &mut [u8],
    ) -> u128 {
        let mut state = 0u128;
        let mut counter = self.first_text_counter.advanced(first_block);
        for piece in data.chunks_mut(FUSED_PIECE_BYTES) {
            if direction == Direction::Decrypt {
                hash_padded(&self.ghash, &mut state, piece);
            }
            ctr::apply(cipher, counter, piece);
            if direction == Direction::Encrypt {
                hash_padded(&self.ghash, &mut state, piece);
            }
            counter = counter.advanced((FUSED_PIECE_BYTES / 16) as u64);
        }
        state
    }

    /// The counter block of text block `first_block` (for a GPU or other CTR engine).
    pub fn text_counter(&self, first_block: u64) -> Counter {
        self.first_text_counter.advanced(first_block)
    }

    /// The GHASH partial sum of a range of ciphertext from a zero state (a final partial
    /// block zero-padded), for engines that run the CTR part elsewhere.
    pub fn hash_range(&self, ciphertext: &[u8]) -> u128 {
        let mut state = 0u128;
        for piece in ciphertext.chunks(FUSED_PIECE_BYTES) {
            hash_padded(&self.ghash, &mut state, piece);
        }
        state
    }

    /// The tag for a finished accumulator.
    pub fn tag(&self, accumulator: &GcmAccumulator) -> [u8; 16] {
        let mut state = accumulator.state;
        let mut length_block = [0u8; 16];
        length_block[..8].copy_from_slice(&(accumulator.aad_bytes * 8).to_be_bytes());
        length_block[8..].copy_from_slice(&(accumulator.text_bytes * 8).to_be_bytes());
        self.ghash.update(&mut state, &length_block);
        let mut tag = state.to_be_bytes();
        for (t, m) in tag.iter_mut().zip(&self.tag_mask) {
            *t ^= m;
        }
        tag
    }

    /// Compares the computed tag with `received` in constant time.
    pub fn verify(&self, accumulator: &GcmAccumulator, received: &[u8]) -> Result<(), GcmError> {
        let mut expected = self.tag(accumulator);
        let equal: bool = expected.as_slice().ct_eq(received).into();
        expected.zeroize();
        if equal {
            Ok(())
        } else {
            Err(GcmError::TagMismatch)
        }
    }
}

impl Drop for Gcm {
    fn drop(&mut self) {
        self.tag_mask.zeroize();
    }
}

/// Hashes `data`, zero-padding a final partial block.
fn hash_padded(ghash: &GhashKey, state: &mut u128, data: &[u8]) {
    let whole = data.len() / 16 * 16;
    ghash.update(state, &data[..whole]);
    if whole < data.len() {
        let mut last = [0u8; 16];
        last[..data.len() - whole].copy_from_slice(&data[whole..]);
        ghash.update(state, &last);
    }
}

/// The running GHASH of one message: AAD first, then ranges of ciphertext in order.
#[derive(Debug, Default, Clone)]
pub struct GcmAccumulator {
    state: u128,
    aad_bytes: u64,
    text_bytes: u64,
}

impl GcmAccumulator {
    pub fn new(gcm: &Gcm, aad: &[u8]) -> Self {
        let mut state = 0u128;
        hash_padded(&gcm.ghash, &mut state, aad);
        GcmAccumulator {
            state,
            aad_bytes: aad.len() as u64,
            text_bytes: 0,
        }
    }

    /// Appends the partial sum of the next range of `bytes` ciphertext bytes (a whole number
    /// of blocks except for the message's last range).
    pub fn append(&mut self, gcm: &Gcm, partial: u128, bytes: u64) -> Result<(), GcmError> {
        debug_assert!(
            self.text_bytes.is_multiple_of(16),
            "a partial block must end the message"
        );
        let total = self
            .text_bytes
            .checked_add(bytes)
            .ok_or(GcmError::TooLong)?;
        if total > MAX_TEXT_BYTES {
            return Err(GcmError::TooLong);
        }
        let blocks = bytes.div_ceil(16);
        self.state = gcm.ghash.mul_h_pow(self.state, blocks) ^ partial;
        self.text_bytes = total;
        Ok(())
    }

    /// Ciphertext bytes appended so far.
    pub fn text_bytes(&self) -> u64 {
        self.text_bytes
    }
}

impl Drop for GcmAccumulator {
    fn drop(&mut self) {
        self.state.zeroize();
    }
}

/// One-shot GCM over a whole buffer on the calling thread: `data` is replaced by its
/// ciphertext and the tag is returned.
pub fn seal(
    cipher: &dyn BlockCipher,
    iv: &[u8],
    aad: &[u8],
    data: &mut [u8],
) -> Result<[u8; 16], GcmError> {
    let gcm = Gcm::new(cipher, iv)?;
    let mut accumulator = GcmAccumulator::new(&gcm, aad);
    if data.len() as u64 > MAX_TEXT_BYTES {
        return Err(GcmError::TooLong);
    }
    let partial = gcm.process_range(cipher, Direction::Encrypt, 0, data);
    accumulator.append(&gcm, partial, data.len() as u64)?;
    Ok(gcm.tag(&accumulator))
}

/// One-shot GCM decryption on the calling thread. On a tag mismatch `data` is wiped to
/// zeros, so no unauthenticated plaintext survives the call.
pub fn open(
    cipher: &dyn BlockCipher,
    iv: &[u8],
    aad: &[u8],
    data: &mut [u8],
    tag: &[u8],
) -> Result<(), GcmError> {
    let gcm = Gcm::new(cipher, iv)?;
    let mut accumulator = GcmAccumulator::new(&gcm, aad);
    if data.len() as u64 > MAX_TEXT_BYTES {
        return Err(GcmError::TooLong);
    }
    let partial = gcm.process_range(cipher, Direction::Decrypt, 0, data);
    accumulator.append(&gcm, partial, data.len() as u64)?;
    let verdict = gcm.verify(&accumulator, tag);
    if verdict.is_err() {
        data.zeroize();
    }
    verdict
}
