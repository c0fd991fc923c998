//! Stitched AES-GCM on 128-bit registers with AES-NI and PCLMULQDQ, for CPUs without VAES.
//!
//! A batch is [`BATCH_BLOCKS`] counter blocks, one per xmm register: eight independent AES
//! chains, enough to keep `aesenc` (latency about 4 cycles, two per cycle on recent cores)
//! busy. Between the AES rounds of a batch the loop multiplies the eight blocks of a batch of
//! ciphertext by H^8..H^1 (Karatsuba, three `pclmulqdq` each) and sums the products
//! unreduced, so one reduction serves eight blocks (aggregated reduction); the arithmetic is
//! that of `ghash::x86_pclmul`, whose helpers this module reuses. As in the VAES-512 kernel,
//! encryption hashes the batch [`ENCRYPT_HASH_LAG`] back (its ciphertext is already written)
//! and the last ones after the loop; decryption hashes the batch it decrypts.
//!
//! The counter is kept byte-reversed, so a step is one `paddd` on its low 32-bit word; the
//! caller guarantees that word does not wrap within a call.

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use crate::ghash::x86_pclmul::{add, halves_sum, product, reduce, Products};
use crate::ghash::POWERS;

use super::Text;

/// Blocks per batch: one xmm register each, one GHASH reduction.
pub(super) const BATCH_BLOCKS: usize = 8;
/// Bytes per batch.
pub(super) const BATCH_BYTES: usize = 16 * BATCH_BLOCKS;
/// How many batches behind the AES encryption hashes the ciphertext (see `vaes512`).
const ENCRYPT_HASH_LAG: usize = 2;
/// The most round keys AES has (AES-256).
const MAX_ROUND_KEYS: usize = 15;

// AES-128's 9 middle rounds carry the eight products of a batch.
const _: () = assert!(BATCH_BLOCKS == 8 && BATCH_BLOCKS <= POWERS);

/// Whether this CPU has every feature [`process`] enables.
pub(super) fn is_available() -> bool {
    is_x86_feature_detected!("aes")
        && is_x86_feature_detected!("pclmulqdq")
        && is_x86_feature_detected!("ssse3")
        && is_x86_feature_detected!("sse4.1")
}

/// A power of H with the sum of its halves (the Karatsuba middle operand).
#[derive(Clone, Copy)]
struct Power {
    value: __m128i,
    halves_sum: __m128i,
}

/// Encrypts (or with `DECRYPT` decrypts) `text` with AES-CTR from `counter` in one pass (in
/// place or into a separate output) and continues the running GHASH `state` over its
/// ciphertext: the contract of
/// `vaes512::process`, with batches of [`BATCH_BYTES`].
///
/// # Safety
/// The CPU must have every feature [`is_available`] checks, and `text` must keep the
/// contract of [`Text`].
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
pub(super) unsafe fn process<const ROUNDS: usize, const DECRYPT: bool>(
    round_keys: &[[u8; 16]],
    powers: &[u128; POWERS],
    counter: &[u8; 16],
    state: &mut u128,
    text: Text,
) {
    assert!(ROUNDS < MAX_ROUND_KEYS && round_keys.len() == ROUNDS + 1);
    let mut keys = [_mm_setzero_si128(); MAX_ROUND_KEYS];
    for (key, bytes) in keys.iter_mut().zip(round_keys) {
        // SAFETY: `bytes` is a 16-byte array; `loadu` has no alignment requirement.
        *key = unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) };
    }
    let batch_powers: [Power; BATCH_BLOCKS] = core::array::from_fn(|block| {
        // SAFETY: a `u128` is 16 readable bytes; `loadu` has no alignment requirement.
        let value = unsafe {
            _mm_loadu_si128((&powers[POWERS - BATCH_BLOCKS + block] as *const u128).cast())
        };
        Power {
            value,
            halves_sum: halves_sum(value),
        }
    });

    let reverse = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    // SAFETY: `counter` is a 16-byte array; `loadu` has no alignment requirement.
    let mut counters =
        _mm_shuffle_epi8(unsafe { _mm_loadu_si128(counter.as_ptr().cast()) }, reverse);

    // SAFETY: a `u128` is 16 readable bytes; `loadu` has no alignment requirement.
    let mut accumulator = unsafe { _mm_loadu_si128((state as *const u128).cast()) };

    let batches = text.batches(BATCH_BYTES);
    // Everything is read at `input` and written at `output`, at offsets below `text.len()`.
    let (input, output) = (text.input(), text.output());
    for index in 0..batches {
        // SAFETY: `index < batches`, so the batch lies within the text.
        let source = unsafe { input.add(index * BATCH_BYTES) };
        // SAFETY: as above.
        let target = unsafe { output.add(index * BATCH_BYTES) };
        let hashed = if DECRYPT || index < ENCRYPT_HASH_LAG {
            source
        } else {
            // SAFETY: `index >= ENCRYPT_HASH_LAG`: that output batch lies within the text
            // and was written by an earlier batch.
            unsafe { target.sub(ENCRYPT_HASH_LAG * BATCH_BYTES) }.cast_const()
        };
        let run = if DECRYPT || index >= ENCRYPT_HASH_LAG {
            run_batch::<ROUNDS, true>
        } else {
            run_batch::<ROUNDS, false>
        };
        // SAFETY: `source`, `target` and `hashed` are whole batches within the text, which
        // keeps the contract of `Text`; the caller of `process` guarantees the CPU features.
        unsafe {
            run(
                &keys,
                &batch_powers,
                &mut counters,
                reverse,
                (source, target),
                hashed,
                &mut accumulator,
            )
        };
    }

    if !DECRYPT {
        for index in batches.saturating_sub(ENCRYPT_HASH_LAG)..batches {
            // SAFETY: `index < batches`: the output batch lies within the text.
            let last = unsafe { output.add(index * BATCH_BYTES) }.cast_const();
            // SAFETY: `last` is a whole batch within the text.
            let first = _mm_xor_si128(unsafe { load_reversed(last, 0, reverse) }, accumulator);
            let mut sum = product(first, batch_powers[0].value, batch_powers[0].halves_sum);
            for (block, power) in batch_powers.iter().enumerate().skip(1) {
                // SAFETY: as above, `block < BATCH_BLOCKS`.
                let data = unsafe { load_reversed(last, block, reverse) };
                sum = add(sum, product(data, power.value, power.halves_sum));
            }
            accumulator = reduce(sum);
        }
    }

    // SAFETY: a `u128` is 16 writable bytes; `storeu` has no alignment requirement.
    unsafe { _mm_storeu_si128((state as *mut u128).cast(), accumulator) };
}

/// One batch: AES-CTR over the batch read at `source` and written at `target` (the same
/// address when in place) and, with `HASH`, GHASH of the batch at `hashed` folded into
/// `accumulator`, one product per AES round.
///
/// # Safety
/// `source`, `target` and `hashed` must each point to [`BATCH_BYTES`] bytes (`target`
/// writable, and either `source` itself or disjoint from it), and the CPU must have the
/// features of [`process`].
#[inline]
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn run_batch<const ROUNDS: usize, const HASH: bool>(
    keys: &[__m128i; MAX_ROUND_KEYS],
    powers: &[Power; BATCH_BLOCKS],
    counters: &mut __m128i,
    reverse: __m128i,
    (source, target): (*const u8, *mut u8),
    hashed: *const u8,
    accumulator: &mut __m128i,
) {
    let one = _mm_set_epi32(0, 0, 0, 1);
    let mut blocks = [_mm_setzero_si128(); BATCH_BLOCKS];
    for block in &mut blocks {
        *block = _mm_xor_si128(_mm_shuffle_epi8(*counters, reverse), keys[0]);
        *counters = _mm_add_epi32(*counters, one);
    }
    let mut sum: Option<Products> = if HASH {
        // SAFETY: `hashed` is a whole batch (the caller's guarantee).
        let first = _mm_xor_si128(unsafe { load_reversed(hashed, 0, reverse) }, *accumulator);
        Some(product(first, powers[0].value, powers[0].halves_sum))
    } else {
        None
    };
    for (round, key) in keys[1..BATCH_BLOCKS].iter().enumerate() {
        for block in &mut blocks {
            *block = _mm_aesenc_si128(*block, *key);
        }
        keep_round_order(&mut blocks);
        if let Some(partial) = &mut sum {
            let power = powers[round + 1];
            // SAFETY: `hashed` is a whole batch and `round + 1 < BATCH_BLOCKS`.
            let data = unsafe { load_reversed(hashed, round + 1, reverse) };
            *partial = add(*partial, product(data, power.value, power.halves_sum));
        }
    }
    if let Some(sum) = sum {
        *accumulator = reduce(sum);
    }
    for key in &keys[BATCH_BLOCKS..ROUNDS] {
        for block in &mut blocks {
            *block = _mm_aesenc_si128(*block, *key);
        }
        keep_round_order(&mut blocks);
    }
    for (index, block) in blocks.iter().enumerate() {
        // SAFETY: block `index` of the batch is 16 bytes within it, read (after every read of
        // it for GHASH, when in place) and then written; `loadu`/`storeu` need no alignment.
        unsafe {
            let data = _mm_loadu_si128(source.add(16 * index).cast());
            let result = _mm_aesenclast_si128(*block, _mm_xor_si128(keys[ROUNDS], data));
            _mm_storeu_si128(target.add(16 * index).cast(), result);
        }
    }
}

/// Block `block` of the batch at `batch`, byte-reversed for GHASH.
///
/// # Safety
/// `batch` must point to [`BATCH_BYTES`] readable bytes and `block` be below
/// [`BATCH_BLOCKS`].
#[inline]
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn load_reversed(batch: *const u8, block: usize, reverse: __m128i) -> __m128i {
    debug_assert!(block < BATCH_BLOCKS);
    // SAFETY: the caller guarantees the 16 bytes are readable; no alignment is needed.
    _mm_shuffle_epi8(
        unsafe { _mm_loadu_si128(batch.add(16 * block).cast()) },
        reverse,
    )
}

/// Pins the round-major order of the AES rounds across the eight blocks (see
/// `vaes512::keep_round_order`).
#[inline]
#[target_feature(enable = "sse2")]
fn keep_round_order(blocks: &mut [__m128i; BATCH_BLOCKS]) {
    let [b0, b1, b2, b3, b4, b5, b6, b7] = blocks;
    // SAFETY: the template is a comment: it executes nothing and leaves every register as
    // it was.
    unsafe {
        core::arch::asm!(
            "/* {b0} {b1} {b2} {b3} {b4} {b5} {b6} {b7} */",
            b0 = inout(xmm_reg) * b0,
            b1 = inout(xmm_reg) * b1,
            b2 = inout(xmm_reg) * b2,
            b3 = inout(xmm_reg) * b3,
            b4 = inout(xmm_reg) * b4,
            b5 = inout(xmm_reg) * b5,
            b6 = inout(xmm_reg) * b6,
            b7 = inout(xmm_reg) * b7,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
}
