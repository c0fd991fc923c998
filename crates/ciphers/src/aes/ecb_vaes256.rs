//! AES-ECB (both directions) and fused AES-CBC decryption on 256-bit VAES without AVX-512
//! (Zen 3 and 4 under a ceiling, Alder Lake and later client cores): two blocks per ymm
//! register, [`VECTORS_PER_STEP`] registers (16 blocks) in flight, the round keys loaded
//! and broadcast once per call.
//!
//! The structure is the AES-NI kernels' ([`super::ecb_aesni`], [`super::cbc_aesni`]) at
//! twice the width: eight vectors plus up to 15 round keys fill the 16 ymm registers that
//! AVX2 has (AES-256 reloads a few keys from L1). Decryption uses the equivalent inverse
//! cipher ([`super::ecb_vaes512::inverse_round_keys`] for ECB; CBC derives the keys in
//! registers as [`super::cbc_vaes512`] does). The last one to fifteen blocks go through a
//! zero-padded step on the stack, so that one loop body, inlined, serves both (see
//! [`super::cbc_aesni::cbc_decrypt`] for why).

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use super::fast::MAX_ROUND_KEYS;

/// ymm registers in flight per step: two blocks each.
pub(super) const VECTORS_PER_STEP: usize = 8;

/// Bytes in one step: 16 blocks.
pub(super) const STEP_BYTES: usize = VECTORS_PER_STEP * 32;

/// Encrypts every 16-byte block of `data` in place with the first `ROUNDS + 1` FIPS-197
/// round keys, or with `DECRYPT` decrypts it with keys from
/// [`super::ecb_vaes512::inverse_round_keys`].
///
/// # Safety
/// The CPU must support AES-NI, VAES and AVX2. `data.len()` should be a multiple of 16 (a
/// partial final block is left as it was).
#[target_feature(enable = "aes,vaes,avx2")]
pub(super) unsafe fn ecb<const ROUNDS: usize, const DECRYPT: bool>(
    round_keys: &[[u8; 16]; MAX_ROUND_KEYS],
    data: &mut [u8],
) {
    let keys = broadcast_round_keys::<ROUNDS>(round_keys);
    let whole = data.len() / 16 * 16;
    let (steps, rest) = data[..whole].as_chunks_mut::<STEP_BYTES>();
    let mut tail = [0u8; STEP_BYTES];
    tail[..rest.len()].copy_from_slice(rest);
    let tail_step = (!rest.is_empty()).then_some(&mut tail);
    for step in steps.iter_mut().chain(tail_step) {
        let mut blocks = load_step(step);
        all_but_last_round::<ROUNDS, DECRYPT>(&keys, &mut blocks);
        for block in &mut blocks {
            *block = if DECRYPT {
                _mm256_aesdeclast_epi128(*block, keys[ROUNDS])
            } else {
                _mm256_aesenclast_epi128(*block, keys[ROUNDS])
            };
        }
        store_step(step, &blocks);
    }
    rest.copy_from_slice(&tail[..rest.len()]);
    // The tail held data (plaintext one way or the other): wipe the copy.
    zeroize::Zeroize::zeroize(&mut tail);
}

/// Decrypts the whole blocks of `data` in CBC mode, in place, with `previous` as the
/// ciphertext block before them; the contract is [`crate::BlockCipher::cbc_decrypt`]'s.
/// `round_keys` are the FIPS-197 encryption round keys, of which the first `ROUNDS + 1` are
/// used. Each step loads all of its ciphertext before storing anything; the operand of a
/// vector's chaining XOR is the vector moved up one block, the block below coming from the
/// top lane of the vector before (one `vperm2i128`), folded into the last round's key.
///
/// # Safety
/// The CPU must support AES-NI, VAES and AVX2. `data.len()` should be a multiple of 16 (a
/// partial final block is left as it was).
#[target_feature(enable = "aes,vaes,avx2")]
pub(super) unsafe fn cbc_decrypt<const ROUNDS: usize>(
    round_keys: &[[u8; 16]; MAX_ROUND_KEYS],
    previous: &[u8; 16],
    data: &mut [u8],
) {
    let load = |key: &[u8; 16]| {
        // SAFETY: `key` is a 16-byte array; `loadu` has no alignment requirement.
        unsafe { _mm_loadu_si128(key.as_ptr().cast()) }
    };
    // The equivalent inverse cipher's keys: the encryption keys in reverse order,
    // InvMixColumns applied to all but the first and last.
    let mut keys = [_mm256_setzero_si256(); MAX_ROUND_KEYS];
    keys[0] = _mm256_broadcastsi128_si256(load(&round_keys[ROUNDS]));
    for (wide, key) in keys[1..ROUNDS]
        .iter_mut()
        .zip(round_keys[1..ROUNDS].iter().rev())
    {
        *wide = _mm256_broadcastsi128_si256(_mm_aesimc_si128(load(key)));
    }
    keys[ROUNDS] = _mm256_broadcastsi128_si256(load(&round_keys[0]));

    // The ciphertext vector before the current one: only its top lane is used.
    let mut below = _mm256_broadcastsi128_si256(load(previous));
    let whole = data.len() / 16 * 16;
    let (steps, rest) = data[..whole].as_chunks_mut::<STEP_BYTES>();
    let mut tail = [0u8; STEP_BYTES];
    tail[..rest.len()].copy_from_slice(rest);
    let tail_step = (!rest.is_empty()).then_some(&mut tail);
    for step in steps.iter_mut().chain(tail_step) {
        // Every ciphertext block is in a register before anything is stored.
        let ciphertext = load_step(step);
        let mut blocks = ciphertext;
        all_but_last_round::<ROUNDS, true>(&keys, &mut blocks);
        for (block, current) in blocks.iter_mut().zip(ciphertext) {
            // The top lane of `below`, then the bottom lane of `current`.
            let chained = _mm256_permute2x128_si256::<0x21>(below, current);
            below = current;
            *block = _mm256_aesdeclast_epi128(*block, _mm256_xor_si256(keys[ROUNDS], chained));
        }
        store_step(step, &blocks);
    }
    rest.copy_from_slice(&tail[..rest.len()]);
    // The tail held plaintext: wipe the copy.
    zeroize::Zeroize::zeroize(&mut tail);
}

/// Round keys 0..=`ROUNDS`, each in both lanes of a ymm register (the rest zero).
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn broadcast_round_keys<const ROUNDS: usize>(
    round_keys: &[[u8; 16]; MAX_ROUND_KEYS],
) -> [__m256i; MAX_ROUND_KEYS] {
    let mut keys = [_mm256_setzero_si256(); MAX_ROUND_KEYS];
    for (wide, key) in keys.iter_mut().zip(round_keys).take(ROUNDS + 1) {
        // SAFETY: `key` is a 16-byte array; `loadu` has no alignment requirement.
        *wide = _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(key.as_ptr().cast()) });
    }
    keys
}

/// The vectors of one step.
#[inline]
#[target_feature(enable = "avx2")]
fn load_step(step: &[u8; STEP_BYTES]) -> [__m256i; VECTORS_PER_STEP] {
    let mut blocks = [_mm256_setzero_si256(); VECTORS_PER_STEP];
    for (block, bytes) in blocks.iter_mut().zip(step.as_chunks::<32>().0) {
        // SAFETY: `bytes` is a 32-byte array, read whole; no alignment needed.
        *block = unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) };
    }
    blocks
}

/// Writes `blocks` over one step.
#[inline]
#[target_feature(enable = "avx2")]
fn store_step(step: &mut [u8; STEP_BYTES], blocks: &[__m256i; VECTORS_PER_STEP]) {
    for (block, bytes) in blocks.iter().zip(step.as_chunks_mut::<32>().0) {
        // SAFETY: `bytes` is a 32-byte array, written whole; no alignment needed.
        unsafe { _mm256_storeu_si256(bytes.as_mut_ptr().cast(), *block) };
    }
}

/// The initial key XOR and every round but the last (of AES encryption or, with `DECRYPT`,
/// of the equivalent inverse cipher), round by round across the step's vectors.
#[inline]
#[target_feature(enable = "aes,vaes,avx2")]
pub(super) fn all_but_last_round<const ROUNDS: usize, const DECRYPT: bool>(
    keys: &[__m256i; MAX_ROUND_KEYS],
    blocks: &mut [__m256i; VECTORS_PER_STEP],
) {
    for block in blocks.iter_mut() {
        *block = _mm256_xor_si256(*block, keys[0]);
    }
    for key in &keys[1..ROUNDS] {
        for block in blocks.iter_mut() {
            *block = if DECRYPT {
                _mm256_aesdec_epi128(*block, *key)
            } else {
                _mm256_aesenc_epi128(*block, *key)
            };
        }
        let [b0, b1, b2, b3, b4, b5, b6, b7] = blocks;
        pin_round_order!(ymm_reg: b0, b1, b2, b3, b4, b5, b6, b7);
    }
}

#[cfg(test)]
mod tests {
    use crate::aes::cbc_vaes512::tests::{agrees_with_generic_cbc, matches_sp800_38a};
    use crate::aes::ecb_vaes512::tests::{agrees_with_crate, matches_sp800_38a as ecb_sp800};
    use crate::aes::fast::EcbPath;
    use crate::aes::kernel_tests::path_tests;

    path_tests! {
        vaes256_ecb_agrees_with_crate: agrees_with_crate(EcbPath::Vaes256),
        vaes256_ecb_matches_sp800_38a: ecb_sp800(EcbPath::Vaes256),
        vaes256_cbc_decrypt_agrees_with_generic_cbc: agrees_with_generic_cbc(EcbPath::Vaes256),
        vaes256_cbc_decrypt_matches_sp800_38a: matches_sp800_38a(EcbPath::Vaes256),
    }
}
