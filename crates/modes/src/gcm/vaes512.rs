//! Stitched AES-GCM on 512-bit VAES and VPCLMULQDQ: one loop runs the AES rounds of a batch
//! of [`BATCH_BLOCKS`] counter blocks and, between them, the carry-less multiplications of
//! GHASH over a batch of ciphertext, so the AES units and the multiplier work at the same
//! time and the data passes through the core once.
//!
//! A batch is eight zmm registers of four blocks: eight independent AES chains (enough to
//! cover the latency of `vaesenc`), and 32 GHASH products summed unreduced with H^32..H^1
//! and reduced once per batch (the aggregated reduction of `ghash::x86_vpclmul`, whose
//! helpers this module reuses). Encryption hashes the ciphertext of the *previous* batch
//! while the current one is in the AES rounds (its own ciphertext does not exist yet), and
//! the last batch after the loop; decryption knows its ciphertext up front and hashes the
//! batch it is decrypting.
//!
//! Counters are kept byte-reversed per lane as in the CTR kernel of `parcrypt-ciphers`, so a
//! step is one `vpaddd` on the low 32-bit word; the caller guarantees that word does not
//! wrap within a call.

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use crate::ghash::x86_vpclmul::{
    add, byte_reverse_lanes, load_powers, product, reduce, with_halves_sum, Power,
};
use crate::ghash::POWERS;

/// Blocks per batch: one GHASH reduction, eight zmm registers.
pub(super) const BATCH_BLOCKS: usize = POWERS;
/// Bytes per batch.
pub(super) const BATCH_BYTES: usize = 16 * BATCH_BLOCKS;
const VECTORS: usize = BATCH_BLOCKS / 4;
/// The most round keys AES has (AES-256).
const MAX_ROUND_KEYS: usize = 15;

const _: () = assert!(VECTORS == 8 && BATCH_BLOCKS.is_multiple_of(4));

/// Whether this CPU has every feature [`process`] enables.
pub(super) fn is_available() -> bool {
    is_x86_feature_detected!("aes")
        && is_x86_feature_detected!("vaes")
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("vpclmulqdq")
        && is_x86_feature_detected!("pclmulqdq")
        && is_x86_feature_detected!("avx2")
}

/// Encrypts (or with `DECRYPT` decrypts) `data` in place with AES-CTR from `counter` and
/// continues the running GHASH `state` over its ciphertext.
///
/// `round_keys` holds the `ROUNDS + 1` FIPS-197 encryption round keys; `powers` is the
/// table of `GhashKey::powers`. `data.len()` must be a multiple of [`BATCH_BYTES`], and the
/// low 32-bit word of `counter` must not wrap within `data` (both asserted or relied on by
/// the caller: a wrap would only give wrong output, never unsound memory access).
///
/// # Safety
/// The CPU must have every feature [`is_available`] checks.
#[target_feature(enable = "aes,vaes,avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
pub(super) unsafe fn process<const ROUNDS: usize, const DECRYPT: bool>(
    round_keys: &[[u8; 16]],
    powers: &[u128; POWERS],
    counter: &[u8; 16],
    state: &mut u128,
    data: &mut [u8],
) {
    assert!(ROUNDS < MAX_ROUND_KEYS && round_keys.len() == ROUNDS + 1);
    let mut keys = [_mm512_setzero_si512(); MAX_ROUND_KEYS];
    for (key, bytes) in keys.iter_mut().zip(round_keys) {
        // SAFETY: `bytes` is a 16-byte array; `loadu` has no alignment requirement.
        *key = _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) });
    }
    let batch_powers: [Power; VECTORS] =
        core::array::from_fn(|register| with_halves_sum(load_powers(&powers[register * 4..])));

    let reverse_lane = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let reverse = _mm512_broadcast_i32x4(reverse_lane);
    // SAFETY: `counter` is a 16-byte array; `loadu` has no alignment requirement.
    let first = _mm_shuffle_epi8(
        unsafe { _mm_loadu_si128(counter.as_ptr().cast()) },
        reverse_lane,
    );
    let mut counters = _mm512_add_epi32(
        _mm512_broadcast_i32x4(first),
        _mm512_set_epi32(0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0),
    );
    let four_blocks = _mm512_set_epi32(0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4);

    // SAFETY: a `u128` is 16 readable bytes; `loadu` has no alignment requirement.
    let mut accumulator = unsafe { _mm_loadu_si128((state as *const u128).cast()) };
    // Encryption: the byte-reversed ciphertext of the batch before, hashed during this one.
    let mut pending: Option<[__m512i; VECTORS]> = None;

    let (batches, rest) = data.as_chunks_mut::<BATCH_BYTES>();
    assert!(rest.is_empty(), "stitched GCM takes whole batches");
    for batch in batches {
        let mut input = [_mm512_setzero_si512(); VECTORS];
        for (vector, bytes) in input.iter_mut().zip(batch.as_chunks::<64>().0) {
            // SAFETY: `bytes` is a 64-byte array; `loadu` has no alignment requirement.
            *vector = unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) };
        }
        let to_hash = if DECRYPT {
            Some(input.map(|vector| byte_reverse_lanes(vector)))
        } else {
            pending
        };

        let mut blocks = [_mm512_setzero_si512(); VECTORS];
        for block in &mut blocks {
            *block = _mm512_xor_si512(_mm512_shuffle_epi8(counters, reverse), keys[0]);
            counters = _mm512_add_epi32(counters, four_blocks);
        }
        // One GHASH product per AES round: AES-128 has 9 middle rounds for 8 products.
        let mut sum = to_hash.map(|hash| {
            let first = _mm512_xor_si512(hash[0], _mm512_zextsi128_si512(accumulator));
            product(first, batch_powers[0])
        });
        for (round, key) in keys[1..ROUNDS].iter().enumerate() {
            for block in &mut blocks {
                *block = _mm512_aesenc_epi128(*block, *key);
            }
            if let (Some(hash), Some(partial)) = (&to_hash, &mut sum) {
                if let Some(power) = batch_powers.get(round + 1) {
                    *partial = add(*partial, product(hash[round + 1], *power));
                }
            }
        }
        if let Some(sum) = sum {
            accumulator = reduce(sum);
        }

        let mut output = [_mm512_setzero_si512(); VECTORS];
        for ((out, block), input) in output.iter_mut().zip(&blocks).zip(&input) {
            // The last round ends with a key XOR: XORing the data into that key takes the
            // data XOR off the end of the chain.
            *out = _mm512_aesenclast_epi128(*block, _mm512_xor_si512(keys[ROUNDS], *input));
        }
        for (out, bytes) in output.iter().zip(batch.as_chunks_mut::<64>().0) {
            // SAFETY: `bytes` is a 64-byte array; `storeu` has no alignment requirement.
            unsafe { _mm512_storeu_si512(bytes.as_mut_ptr().cast(), *out) };
        }
        if !DECRYPT {
            pending = Some(output.map(|vector| byte_reverse_lanes(vector)));
        }
    }

    if let Some(hash) = pending {
        let first = _mm512_xor_si512(hash[0], _mm512_zextsi128_si512(accumulator));
        let mut sum = product(first, batch_powers[0]);
        for (vector, power) in hash[1..].iter().zip(&batch_powers[1..]) {
            sum = add(sum, product(*vector, *power));
        }
        accumulator = reduce(sum);
    }

    // SAFETY: a `u128` is 16 writable bytes; `storeu` has no alignment requirement.
    unsafe { _mm_storeu_si128((state as *mut u128).cast(), accumulator) };
}
