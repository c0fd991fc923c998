//! Stitched AES-GCM on 512-bit VAES and VPCLMULQDQ: one loop runs the AES rounds of a batch
//! of [`BATCH_BLOCKS`] counter blocks and, between them, the carry-less multiplications of
//! GHASH over a batch of ciphertext, so the AES units and the multiplier work at the same
//! time and the data passes through the core once.
//!
//! A batch is eight zmm registers of four blocks: eight independent AES chains (enough to
//! cover the latency of `vaesenc`), and 32 GHASH products summed unreduced with H^32..H^1
//! and reduced once per batch (the aggregated reduction of `ghash::x86_vpclmul`, whose
//! helpers this module reuses). Encryption hashes the ciphertext of the batch two back
//! ([`ENCRYPT_HASH_LAG`]) while the current one is in the AES rounds (its own ciphertext does
//! not exist yet), and the last two after the loop; decryption knows its ciphertext up front and hashes the
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
/// How many batches behind the AES encryption hashes the ciphertext: the batch two back
/// rather than the one just written, whose stores may still be on their way to L1 (about 6%
/// faster on Zen 5 than one back).
const ENCRYPT_HASH_LAG: usize = 2;
/// The most round keys AES has (AES-256).
const MAX_ROUND_KEYS: usize = 15;

// Eight vectors name the operands of `keep_round_order`; AES-128's 9 middle rounds carry
// the products of vectors 1..8.
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

    assert!(
        data.len().is_multiple_of(BATCH_BYTES),
        "stitched GCM takes whole batches"
    );
    let batches = data.len() / BATCH_BYTES;
    // Everything is read and written through this pointer, at offsets below `data.len()`:
    // encryption reads an earlier batch's ciphertext back (from L1) instead of keeping it
    // in registers, which would only spill them to the stack every batch.
    let base = data.as_mut_ptr();
    let counter_steps = CounterSteps {
        reverse,
        four_blocks,
    };
    for index in 0..batches {
        // SAFETY: `index < batches`, so the batch lies within `data`.
        let batch = unsafe { base.add(index * BATCH_BYTES) };
        // Decryption hashes the batch it decrypts; encryption the one before, if any.
        let hashed = if DECRYPT || index < ENCRYPT_HASH_LAG {
            batch
        } else {
            // SAFETY: `index >= ENCRYPT_HASH_LAG`: that batch lies within `data`.
            unsafe { batch.sub(ENCRYPT_HASH_LAG * BATCH_BYTES) }
        };
        let run = if DECRYPT || index >= ENCRYPT_HASH_LAG {
            run_batch::<ROUNDS, true>
        } else {
            run_batch::<ROUNDS, false>
        };
        // SAFETY: `batch` and `hashed` are whole batches within `data`; the caller of
        // `process` guarantees the CPU features.
        unsafe {
            run(
                &keys,
                &batch_powers,
                &mut counters,
                counter_steps,
                batch,
                hashed,
                &mut accumulator,
            )
        };
    }

    // Encryption's last batches, not hashed in the loop, in order.
    if !DECRYPT {
        for index in batches.saturating_sub(ENCRYPT_HASH_LAG)..batches {
            // SAFETY: `index < batches`: the batch lies within `data`.
            let last = unsafe { base.add(index * BATCH_BYTES) };
            // SAFETY: `last` is a whole batch within `data`.
            let first = unsafe { load_reversed(last, 0) };
            let first = _mm512_xor_si512(first, _mm512_zextsi128_si512(accumulator));
            let mut sum = product(first, batch_powers[0]);
            for (vector, power) in batch_powers.iter().enumerate().skip(1) {
                // SAFETY: as above.
                sum = add(sum, product(unsafe { load_reversed(last, vector) }, *power));
            }
            accumulator = reduce(sum);
        }
    }

    // SAFETY: a `u128` is 16 writable bytes; `storeu` has no alignment requirement.
    unsafe { _mm_storeu_si128((state as *mut u128).cast(), accumulator) };
}

/// What steps the counters: the per-lane byte reversal and the step of four blocks.
#[derive(Clone, Copy)]
struct CounterSteps {
    reverse: __m512i,
    four_blocks: __m512i,
}

/// One batch: AES-CTR over the batch at `batch` in place and, with `HASH`, GHASH of the
/// batch at `hashed` (the same batch when decrypting, the one before when encrypting)
/// folded into `accumulator`, its products placed one per AES round.
///
/// # Safety
/// `batch` and `hashed` must each point to [`BATCH_BYTES`] bytes (`batch` writable), and the
/// CPU must have the features of [`process`].
#[inline]
#[target_feature(enable = "aes,vaes,avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
unsafe fn run_batch<const ROUNDS: usize, const HASH: bool>(
    keys: &[__m512i; MAX_ROUND_KEYS],
    powers: &[Power; VECTORS],
    counters: &mut __m512i,
    steps: CounterSteps,
    batch: *mut u8,
    hashed: *const u8,
    accumulator: &mut __m128i,
) {
    let mut blocks = [_mm512_setzero_si512(); VECTORS];
    for block in &mut blocks {
        *block = _mm512_xor_si512(_mm512_shuffle_epi8(*counters, steps.reverse), keys[0]);
        *counters = _mm512_add_epi32(*counters, steps.four_blocks);
    }
    let mut sum = if HASH {
        // SAFETY: `hashed` is a whole batch (the caller's guarantee).
        let first = unsafe { load_reversed(hashed, 0) };
        let first = _mm512_xor_si512(first, _mm512_zextsi128_si512(*accumulator));
        Some(product(first, powers[0]))
    } else {
        None
    };
    // Rounds 1..VECTORS each carry the product of one more vector (AES-128 has 9 middle
    // rounds, so every size has room for all of them); the rest are AES alone.
    for (round, key) in keys[1..VECTORS].iter().enumerate() {
        for block in &mut blocks {
            *block = _mm512_aesenc_epi128(*block, *key);
        }
        keep_round_order(&mut blocks);
        if let Some(partial) = &mut sum {
            // SAFETY: `hashed` is a whole batch and `round + 1 < VECTORS`.
            let vector = unsafe { load_reversed(hashed, round + 1) };
            *partial = add(*partial, product(vector, powers[round + 1]));
        }
    }
    if let Some(sum) = sum {
        *accumulator = reduce(sum);
    }
    for key in &keys[VECTORS..ROUNDS] {
        for block in &mut blocks {
            *block = _mm512_aesenc_epi128(*block, *key);
        }
        keep_round_order(&mut blocks);
    }
    for (vector, block) in blocks.iter().enumerate() {
        // SAFETY: vector `vector` of the batch is 64 bytes within it, read (after every read
        // of it for GHASH) and then written; `loadu`/`storeu` need no alignment.
        unsafe {
            let bytes = batch.add(64 * vector);
            let input = _mm512_loadu_si512(bytes.cast());
            // The last round ends with a key XOR: XORing the data into that key takes the
            // data XOR off the end of the chain.
            let output = _mm512_aesenclast_epi128(*block, _mm512_xor_si512(keys[ROUNDS], input));
            _mm512_storeu_si512(bytes.cast(), output);
        }
    }
}

/// Vector `vector` (four blocks) of the batch at `batch`, byte-reversed per block for GHASH.
///
/// # Safety
/// `batch` must point to [`BATCH_BYTES`] readable bytes and `vector` be below [`VECTORS`].
#[inline]
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
unsafe fn load_reversed(batch: *const u8, vector: usize) -> __m512i {
    debug_assert!(vector < VECTORS);
    // SAFETY: the caller guarantees the 64 bytes are readable; no alignment is needed.
    byte_reverse_lanes(unsafe { _mm512_loadu_si512(batch.add(64 * vector).cast()) })
}

/// Makes the compiler issue the AES rounds round by round across the eight vectors.
///
/// Left alone, LLVM emits each vector's whole round chain before the next one's (to save
/// registers), which leaves only a few chains in the out-of-order window and the GHASH work
/// bunched up in front of them. An empty `asm!` that takes and returns every vector makes
/// round r+1 of any vector depend on round r of all of them, which pins the round-major
/// order (as the CTR kernels of `parcrypt-ciphers` do) and costs no instruction.
#[inline]
#[target_feature(enable = "avx512f")]
fn keep_round_order(blocks: &mut [__m512i; VECTORS]) {
    let [b0, b1, b2, b3, b4, b5, b6, b7] = blocks;
    // SAFETY: the template is a comment: it executes nothing and leaves every register as
    // it was.
    unsafe {
        core::arch::asm!(
            "/* {b0} {b1} {b2} {b3} {b4} {b5} {b6} {b7} */",
            b0 = inout(zmm_reg) * b0,
            b1 = inout(zmm_reg) * b1,
            b2 = inout(zmm_reg) * b2,
            b3 = inout(zmm_reg) * b3,
            b4 = inout(zmm_reg) * b4,
            b5 = inout(zmm_reg) * b5,
            b6 = inout(zmm_reg) * b6,
            b7 = inout(zmm_reg) * b7,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
}
