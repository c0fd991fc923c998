//! Fused AES-CTR on the ARMv8 Cryptography Extensions (aarch64): one block per 128-bit NEON
//! register, [`BLOCKS_PER_STEP`] in flight, the data read and written once.
//!
//! `AESE` is AddRoundKey, SubBytes and ShiftRows, and `AESMC` MixColumns, so a round is
//! `aesmc(aese(state, key))` with the key of the round before, and the last round ends with
//! a plain XOR of the last key (into which the data is XORed first). The counters are kept
//! with each 32-bit word byte-reversed, so that stepping the big-endian low word is one
//! `add` of the fourth lane and a `rev32` restores block order.
//!
//! Tested under qemu-user (`-cpu max`); not yet timed on an Arm machine.

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::aarch64::*;

use super::fast::MAX_ROUND_KEYS;

/// Independent blocks per main-loop step: ARMv8 cores issue `AESE`/`AESMC` pairs with a
/// latency of two to three cycles at one or more per cycle, and 8 blocks plus 15 round keys
/// fit the 32 NEON registers.
pub(super) const BLOCKS_PER_STEP: usize = 8;

const STEP_BYTES: usize = BLOCKS_PER_STEP * 16;

/// XORs the CTR keystream starting at `counter` (only its last 32-bit big-endian word
/// steps, wrapping) into the `len` bytes at `input` and writes the result at `output`, in
/// one pass, with the first `ROUNDS + 1` FIPS-197 round keys; a final partial block uses the
/// front of its keystream block.
///
/// # Safety
/// The CPU must support the ARMv8 AES instructions. `input` must be valid for reads and
/// `output` for writes of `len` bytes, nothing else may access them during the call, and
/// `output` must be `input` itself or a region disjoint from it.
#[target_feature(enable = "aes")]
pub(super) unsafe fn ctr32_xor<const ROUNDS: usize>(
    round_keys: &[[u8; 16]; MAX_ROUND_KEYS],
    counter: &[u8; 16],
    input: *const u8,
    output: *mut u8,
    len: usize,
) {
    let mut keys = [vdupq_n_u8(0); MAX_ROUND_KEYS];
    for (register, key) in keys.iter_mut().zip(round_keys).take(ROUNDS + 1) {
        // SAFETY: `key` is a 16-byte array; `vld1q_u8` has no alignment requirement.
        *register = unsafe { vld1q_u8(key.as_ptr()) };
    }

    // SAFETY: `counter` is a 16-byte array.
    let mut counters = vreinterpretq_u32_u8(vrev32q_u8(unsafe { vld1q_u8(counter.as_ptr()) }));
    let one_block = vsetq_lane_u32::<3>(1, vdupq_n_u32(0));

    let steps = len / STEP_BYTES;
    for step in 0..steps {
        let mut blocks = [vdupq_n_u8(0); BLOCKS_PER_STEP];
        for block in &mut blocks {
            *block = vrev32q_u8(vreinterpretq_u8_u32(counters));
            counters = vaddq_u32(counters, one_block);
        }
        for key in &keys[..ROUNDS - 1] {
            for block in &mut blocks {
                *block = vaesmcq_u8(vaeseq_u8(*block, *key));
            }
        }
        for (index, block) in blocks.iter().enumerate() {
            let at = step * STEP_BYTES + index * 16;
            // SAFETY: `at + 16 <= steps * STEP_BYTES <= len`, so the block lies within both
            // regions; it is read before it is written, and NEON loads and stores of bytes
            // need no alignment.
            unsafe {
                let data = vld1q_u8(input.add(at));
                let last_key = veorq_u8(keys[ROUNDS], data);
                vst1q_u8(
                    output.add(at),
                    veorq_u8(vaeseq_u8(*block, keys[ROUNDS - 1]), last_key),
                );
            }
        }
    }

    let mut at = steps * STEP_BYTES;
    while len - at >= 16 {
        let block = vrev32q_u8(vreinterpretq_u8_u32(counters));
        counters = vaddq_u32(counters, one_block);
        // SAFETY: `at + 16 <= len`: the block lies within both regions, read then written;
        // no alignment needed.
        unsafe {
            let data = vld1q_u8(input.add(at));
            vst1q_u8(output.add(at), encrypt_xor::<ROUNDS>(&keys, block, data));
        }
        at += 16;
    }

    let partial = len - at;
    if partial != 0 {
        // Through a whole block on the stack: the bytes past `len` are not ours to read.
        let mut buffer = [0u8; 16];
        // SAFETY: the `partial < 16` bytes from `at` lie within `input`, and `buffer` is a
        // separate local array.
        unsafe { core::ptr::copy_nonoverlapping(input.add(at), buffer.as_mut_ptr(), partial) };
        let block = vrev32q_u8(vreinterpretq_u8_u32(counters));
        // SAFETY: `buffer` is a 16-byte array, read and written whole.
        unsafe {
            let data = vld1q_u8(buffer.as_ptr());
            vst1q_u8(
                buffer.as_mut_ptr(),
                encrypt_xor::<ROUNDS>(&keys, block, data),
            );
        }
        // SAFETY: the `partial` bytes from `at` lie within `output`; `buffer` is separate.
        unsafe { core::ptr::copy_nonoverlapping(buffer.as_ptr(), output.add(at), partial) };
    }
}

/// AES of the counter block `block`, XORed with `input`.
#[inline]
#[target_feature(enable = "aes")]
fn encrypt_xor<const ROUNDS: usize>(
    keys: &[uint8x16_t; MAX_ROUND_KEYS],
    block: uint8x16_t,
    input: uint8x16_t,
) -> uint8x16_t {
    let mut state = block;
    for key in &keys[..ROUNDS - 1] {
        state = vaesmcq_u8(vaeseq_u8(state, *key));
    }
    veorq_u8(
        vaeseq_u8(state, keys[ROUNDS - 1]),
        veorq_u8(keys[ROUNDS], input),
    )
}

#[cfg(test)]
mod tests {
    use crate::aes::fast::CtrPath;
    use crate::aes::kernel_tests::{agrees_with_generic_ctr, matches_sp800_38a, path_tests};

    path_tests! {
        armv8_agrees_with_generic_ctr: agrees_with_generic_ctr(CtrPath::Armv8),
        armv8_matches_sp800_38a: matches_sp800_38a(CtrPath::Armv8),
    }
}
