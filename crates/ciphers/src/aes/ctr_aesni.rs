//! Fused AES-CTR on 128-bit AES-NI, for CPUs without 512-bit VAES: one block per xmm
//! register, [`BLOCKS_PER_STEP`] in flight, the data read and written once.
//!
//! The counter layout is the one of [`super::ctr_vaes512`]: byte-reversed blocks, so that
//! stepping the big-endian low word is a `paddd` and a `pshufb` restores block order.

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use super::fast::MAX_ROUND_KEYS;

/// Independent blocks per main-loop step: AES-NI has a latency of about four cycles at up
/// to two per cycle on current cores, and 8 blocks plus 15 round keys still fit the 16 xmm
/// registers closely enough (AES-256 reloads a few keys from L1).
pub(super) const BLOCKS_PER_STEP: usize = 8;

const STEP_BYTES: usize = BLOCKS_PER_STEP * 16;

/// XORs the CTR keystream starting at `counter` into the `len` bytes at `input` and writes
/// the result at `output`, in one pass, with the first `ROUNDS + 1` FIPS-197 round keys; the
/// contract is the one of [`super::ctr_vaes512::ctr32_xor`].
///
/// # Safety
/// The CPU must support AES-NI and SSSE3. `input` must be valid for reads and `output` for
/// writes of `len` bytes, nothing else may access them during the call, and `output` must
/// be `input` itself or a region disjoint from it.
#[target_feature(enable = "aes,ssse3")]
pub(super) unsafe fn ctr32_xor<const ROUNDS: usize>(
    round_keys: &[[u8; 16]; MAX_ROUND_KEYS],
    counter: &[u8; 16],
    input: *const u8,
    output: *mut u8,
    len: usize,
) {
    let keys = load_round_keys::<ROUNDS>(round_keys);

    // Byte j takes byte 15 - j: block order <-> counter-as-integer order.
    let reverse = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    // SAFETY: `counter` is a 16-byte array; `loadu` has no alignment requirement.
    let mut counters =
        _mm_shuffle_epi8(unsafe { _mm_loadu_si128(counter.as_ptr().cast()) }, reverse);
    let one_block = _mm_set_epi32(0, 0, 0, 1);

    let steps = len / STEP_BYTES;
    for step in 0..steps {
        let mut blocks = [_mm_setzero_si128(); BLOCKS_PER_STEP];
        for block in &mut blocks {
            *block = _mm_xor_si128(_mm_shuffle_epi8(counters, reverse), keys[0]);
            counters = _mm_add_epi32(counters, one_block);
        }
        for key in &keys[1..ROUNDS] {
            for block in &mut blocks {
                *block = _mm_aesenc_si128(*block, *key);
            }
            keep_round_order(&mut blocks);
        }
        // The last round ends with a key XOR, so XORing the data into that key instead
        // takes the data XOR off the end of each chain.
        for (index, block) in blocks.iter().enumerate() {
            let at = step * STEP_BYTES + index * 16;
            // SAFETY: `at + 16 <= steps * STEP_BYTES <= len`, so the block lies within both
            // regions; it is read before it is written, and `loadu`/`storeu` need no
            // alignment.
            unsafe {
                let data = _mm_loadu_si128(input.add(at).cast());
                let last_key = _mm_xor_si128(keys[ROUNDS], data);
                _mm_storeu_si128(
                    output.add(at).cast(),
                    _mm_aesenclast_si128(*block, last_key),
                );
            }
        }
    }

    let mut at = steps * STEP_BYTES;
    while len - at >= 16 {
        let block = _mm_shuffle_epi8(counters, reverse);
        counters = _mm_add_epi32(counters, one_block);
        // SAFETY: `at + 16 <= len`: the block lies within both regions, read then written;
        // no alignment needed.
        unsafe {
            let data = _mm_loadu_si128(input.add(at).cast());
            _mm_storeu_si128(
                output.add(at).cast(),
                encrypt_xor::<ROUNDS>(&keys, block, data),
            );
        }
        at += 16;
    }

    let partial = len - at;
    if partial != 0 {
        // SSE has no byte-masked loads: go through a whole block on the stack.
        let mut buffer = [0u8; 16];
        // SAFETY: the `partial < 16` bytes from `at` lie within `input`, and `buffer` is a
        // separate local array.
        unsafe { core::ptr::copy_nonoverlapping(input.add(at), buffer.as_mut_ptr(), partial) };
        let block = _mm_shuffle_epi8(counters, reverse);
        // SAFETY: `buffer` is a 16-byte array, read and written whole; no alignment needed.
        unsafe {
            let data = _mm_loadu_si128(buffer.as_ptr().cast());
            _mm_storeu_si128(
                buffer.as_mut_ptr().cast(),
                encrypt_xor::<ROUNDS>(&keys, block, data),
            );
        }
        // SAFETY: the `partial` bytes from `at` lie within `output`; `buffer` is separate.
        unsafe { core::ptr::copy_nonoverlapping(buffer.as_ptr(), output.add(at), partial) };
    }
}

/// Round keys 0..=`ROUNDS` in xmm registers (the rest zero), loaded once per call; the CBC
/// encryption kernel shares it.
#[inline]
#[target_feature(enable = "sse2")]
pub(super) fn load_round_keys<const ROUNDS: usize>(
    round_keys: &[[u8; 16]; MAX_ROUND_KEYS],
) -> [__m128i; MAX_ROUND_KEYS] {
    let mut keys = [_mm_setzero_si128(); MAX_ROUND_KEYS];
    for (register, key) in keys.iter_mut().zip(round_keys).take(ROUNDS + 1) {
        // SAFETY: `key` is a 16-byte array; `loadu` has no alignment requirement.
        *register = unsafe { _mm_loadu_si128(key.as_ptr().cast()) };
    }
    keys
}

/// Pins the round-major order across the step's blocks (shared by the AES-NI ECB and CBC
/// decryption kernels); see
/// `super::ecb_vaes512::keep_round_order` for why (LLVM otherwise emits whole chains one after
/// another, leaving only about three in flight).
#[inline]
#[target_feature(enable = "sse2")]
pub(super) fn keep_round_order(blocks: &mut [__m128i; BLOCKS_PER_STEP]) {
    let [b0, b1, b2, b3, b4, b5, b6, b7] = blocks;
    pin_round_order!(xmm_reg: b0, b1, b2, b3, b4, b5, b6, b7);
}

encrypt_xor! {
    features: "aes,ssse3",
    vector: __m128i,
    xor: _mm_xor_si128,
    aes_round: _mm_aesenc_si128,
    aes_last_round: _mm_aesenclast_si128,
}

#[cfg(test)]
mod tests {
    use crate::aes::fast::CtrPath;
    use crate::aes::kernel_tests::{agrees_with_generic_ctr, matches_sp800_38a, path_tests};

    path_tests! {
        aesni_agrees_with_generic_ctr: agrees_with_generic_ctr(CtrPath::AesNi),
        aesni_matches_sp800_38a: matches_sp800_38a(CtrPath::AesNi),
    }
}
