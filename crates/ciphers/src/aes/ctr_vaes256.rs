//! Fused AES-CTR on 256-bit VAES without AVX-512 (Zen 3 and 4 under a ceiling, Alder Lake
//! and later client cores): two blocks per ymm register, 16 blocks in flight, the data read
//! and written once.
//!
//! The rounds are [`super::ecb_vaes256`]'s; the counters are kept as
//! [`super::ctr_vaes512`] keeps them, byte-reversed per lane, so that a step of two blocks is
//! one `vpaddd` and one `vpshufb` restores block order.

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use super::ecb_vaes256::{all_but_last_round, broadcast_round_keys, STEP_BYTES};
use super::fast::MAX_ROUND_KEYS;

/// Bytes in one ymm register: two blocks.
const VECTOR_BYTES: usize = 32;

/// XORs the CTR keystream starting at `counter` into the `len` bytes at `input` and writes
/// the result at `output`, in one pass, with the first `ROUNDS + 1` FIPS-197 round keys; the
/// contract is the one of [`super::ctr_vaes512::ctr32_xor`].
///
/// # Safety
/// The CPU must support AES-NI, VAES and AVX2. `input` must be valid for reads and `output`
/// for writes of `len` bytes, nothing else may access them during the call, and `output` must
/// be `input` itself or a region disjoint from it.
#[target_feature(enable = "aes,vaes,avx2")]
pub(super) unsafe fn ctr32_xor<const ROUNDS: usize>(
    round_keys: &[[u8; 16]; MAX_ROUND_KEYS],
    counter: &[u8; 16],
    input: *const u8,
    output: *mut u8,
    len: usize,
) {
    let keys = broadcast_round_keys::<ROUNDS>(round_keys);

    // Byte j of a lane takes byte 15 - j: block order <-> counter-as-integer order.
    let reverse_lane = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let reverse = _mm256_broadcastsi128_si256(reverse_lane);
    // SAFETY: `counter` is a 16-byte array; `loadu` has no alignment requirement.
    let first = _mm_shuffle_epi8(
        unsafe { _mm_loadu_si128(counter.as_ptr().cast()) },
        reverse_lane,
    );
    // Lane i holds counter + i; every step adds two to both lanes' low words.
    let mut counters = _mm256_add_epi32(
        _mm256_broadcastsi128_si256(first),
        _mm256_set_epi32(0, 0, 0, 1, 0, 0, 0, 0),
    );
    let two_blocks = _mm256_set_epi32(0, 0, 0, 2, 0, 0, 0, 2);
    let mut next_two = || {
        let blocks = _mm256_shuffle_epi8(counters, reverse);
        counters = _mm256_add_epi32(counters, two_blocks);
        blocks
    };

    let steps = len / STEP_BYTES;
    for step in 0..steps {
        let mut blocks = [(); super::ecb_vaes256::VECTORS_PER_STEP].map(|()| next_two());
        all_but_last_round::<ROUNDS, false>(&keys, &mut blocks);
        // The last round ends with a key XOR, so XORing the data into that key instead
        // takes the data XOR off the end of each chain.
        for (vector, block) in blocks.iter().enumerate() {
            let at = step * STEP_BYTES + vector * VECTOR_BYTES;
            // SAFETY: `at + 32 <= steps * STEP_BYTES <= len`, so the 32 bytes lie within
            // both regions; each vector is read before it is written, and `loadu`/`storeu`
            // need no alignment.
            unsafe {
                let data = _mm256_loadu_si256(input.add(at).cast());
                let last_key = _mm256_xor_si256(keys[ROUNDS], data);
                _mm256_storeu_si256(
                    output.add(at).cast(),
                    _mm256_aesenclast_epi128(*block, last_key),
                );
            }
        }
    }

    let mut at = steps * STEP_BYTES;
    while len - at >= VECTOR_BYTES {
        let block = next_two();
        // SAFETY: `at + 32 <= len`: the 32 bytes lie within both regions, read then
        // written; no alignment needed.
        unsafe {
            let data = _mm256_loadu_si256(input.add(at).cast());
            _mm256_storeu_si256(
                output.add(at).cast(),
                encrypt_xor::<ROUNDS>(&keys, block, data),
            );
        }
        at += VECTOR_BYTES;
    }

    let partial = len - at;
    if partial != 0 {
        // Up to 31 bytes: AVX2 has no byte-masked loads, so go through a register's worth
        // on the stack.
        let mut buffer = [0u8; VECTOR_BYTES];
        // SAFETY: the `partial < 32` bytes from `at` lie within `input`, and `buffer` is a
        // separate local array.
        unsafe { core::ptr::copy_nonoverlapping(input.add(at), buffer.as_mut_ptr(), partial) };
        let block = next_two();
        // SAFETY: `buffer` is a 32-byte array, read and written whole; no alignment needed.
        unsafe {
            let data = _mm256_loadu_si256(buffer.as_ptr().cast());
            _mm256_storeu_si256(
                buffer.as_mut_ptr().cast(),
                encrypt_xor::<ROUNDS>(&keys, block, data),
            );
        }
        // SAFETY: the `partial` bytes from `at` lie within `output`; `buffer` is separate.
        unsafe { core::ptr::copy_nonoverlapping(buffer.as_ptr(), output.add(at), partial) };
        // The buffer held the message's last bytes (plaintext one way or the other).
        zeroize::Zeroize::zeroize(&mut buffer);
    }
}

encrypt_xor! {
    features: "aes,vaes,avx2",
    vector: __m256i,
    xor: _mm256_xor_si256,
    aes_round: _mm256_aesenc_epi128,
    aes_last_round: _mm256_aesenclast_epi128,
}

#[cfg(test)]
mod tests {
    use crate::aes::fast::CtrPath;
    use crate::aes::kernel_tests::{agrees_with_generic_ctr, matches_sp800_38a, path_tests};

    path_tests! {
        vaes256_agrees_with_generic_ctr: agrees_with_generic_ctr(CtrPath::Vaes256),
        vaes256_matches_sp800_38a: matches_sp800_38a(CtrPath::Vaes256),
    }
}
