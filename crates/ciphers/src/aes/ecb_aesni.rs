//! AES block encryption and decryption (ECB) on 128-bit AES-NI, for CPUs without 512-bit
//! VAES (and under an AES-NI or VAES-256 ceiling): one block per xmm register,
//! [`BLOCKS_PER_STEP`] in flight, the round keys loaded once per call.
//!
//! Eight independent blocks cover the AES unit's latency (about four cycles) at one or two
//! instructions per cycle. The structure is the AES-NI CTR kernel's ([`super::ctr_aesni`])
//! with the data as the input of the rounds; decryption uses the equivalent inverse cipher,
//! with the keys of [`super::ecb_vaes512::inverse_round_keys`]. The tail of one to seven
//! blocks runs as one group of eight with the missing blocks zero: the latency of one block,
//! not seven.

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use super::ctr_aesni::{keep_round_order, load_round_keys, BLOCKS_PER_STEP};
use super::fast::MAX_ROUND_KEYS;

/// Bytes in one main-loop step.
pub(super) const STEP_BYTES: usize = BLOCKS_PER_STEP * 16;

/// Encrypts every 16-byte block of `data` in place with the first `ROUNDS + 1` FIPS-197
/// round keys, or with `DECRYPT` decrypts it with keys from
/// [`super::ecb_vaes512::inverse_round_keys`].
///
/// # Safety
/// The CPU must support AES-NI. `data.len()` should be a multiple of 16 (a partial final
/// block is left untouched).
#[target_feature(enable = "aes")]
pub(super) unsafe fn ecb<const ROUNDS: usize, const DECRYPT: bool>(
    round_keys: &[[u8; 16]; MAX_ROUND_KEYS],
    data: &mut [u8],
) {
    let keys = load_round_keys::<ROUNDS>(round_keys);

    let (steps, rest) = data.as_chunks_mut::<STEP_BYTES>();
    for step in steps {
        let mut blocks = load_group(step);
        all_but_last_round::<ROUNDS, DECRYPT>(&keys, &mut blocks);
        for block in &mut blocks {
            *block = last_round::<DECRYPT>(*block, keys[ROUNDS]);
        }
        store_group(step, &blocks);
    }

    if rest.len() >= 16 {
        let mut blocks = load_group(rest);
        all_but_last_round::<ROUNDS, DECRYPT>(&keys, &mut blocks);
        for block in &mut blocks {
            *block = last_round::<DECRYPT>(*block, keys[ROUNDS]);
        }
        store_group(rest, &blocks);
    }
}

/// The whole blocks at the front of `bytes` (at most [`BLOCKS_PER_STEP`] of them), zero
/// past them.
#[inline]
#[target_feature(enable = "sse2")]
pub(super) fn load_group(bytes: &[u8]) -> [__m128i; BLOCKS_PER_STEP] {
    let mut blocks = [_mm_setzero_si128(); BLOCKS_PER_STEP];
    for (block, bytes) in blocks.iter_mut().zip(bytes.as_chunks::<16>().0) {
        // SAFETY: `bytes` is a 16-byte array, read whole; `loadu` has no alignment
        // requirement.
        *block = unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) };
    }
    blocks
}

/// Writes the front of `blocks` over the whole blocks of `bytes`, the inverse of
/// [`load_group`].
#[inline]
#[target_feature(enable = "sse2")]
pub(super) fn store_group(bytes: &mut [u8], blocks: &[__m128i; BLOCKS_PER_STEP]) {
    for (block, bytes) in blocks.iter().zip(bytes.as_chunks_mut::<16>().0) {
        // SAFETY: `bytes` is a 16-byte array, written whole; no alignment needed.
        unsafe { _mm_storeu_si128(bytes.as_mut_ptr().cast(), *block) };
    }
}

/// The initial key XOR and every round but the last (of AES encryption or, with `DECRYPT`,
/// of the equivalent inverse cipher) on the group's independent blocks, round by round
/// across them.
#[inline]
#[target_feature(enable = "aes")]
pub(super) fn all_but_last_round<const ROUNDS: usize, const DECRYPT: bool>(
    keys: &[__m128i; MAX_ROUND_KEYS],
    blocks: &mut [__m128i; BLOCKS_PER_STEP],
) {
    for block in blocks.iter_mut() {
        *block = _mm_xor_si128(*block, keys[0]);
    }
    for key in &keys[1..ROUNDS] {
        for block in blocks.iter_mut() {
            *block = if DECRYPT {
                _mm_aesdec_si128(*block, *key)
            } else {
                _mm_aesenc_si128(*block, *key)
            };
        }
        keep_round_order(blocks);
    }
}

/// The last round with key `key`.
#[inline]
#[target_feature(enable = "aes")]
fn last_round<const DECRYPT: bool>(block: __m128i, key: __m128i) -> __m128i {
    if DECRYPT {
        _mm_aesdeclast_si128(block, key)
    } else {
        _mm_aesenclast_si128(block, key)
    }
}

#[cfg(test)]
mod tests {
    use crate::aes::ecb_vaes512::tests::{agrees_with_crate, matches_sp800_38a};
    use crate::aes::fast::EcbPath;
    use crate::aes::kernel_tests::path_tests;

    path_tests! {
        aesni_agrees_with_crate: agrees_with_crate(EcbPath::AesNi),
        aesni_matches_sp800_38a: matches_sp800_38a(EcbPath::AesNi),
    }
}
