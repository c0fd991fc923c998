//! Stitched AES-GCM on 256-bit registers with VAES and VPCLMULQDQ (AVX2 only), for CPUs
//! that have the 256-bit forms of those instructions but no AVX-512 (and, by measurement, a
//! candidate where 512-bit operations are split in two).
//!
//! A batch is [`BATCH_BLOCKS`] counter blocks in eight ymm registers of two blocks: eight
//! independent AES chains. Between the AES rounds of a batch the loop multiplies the sixteen
//! blocks of a batch of ciphertext by H^16..H^1 (Karatsuba: three `vpclmulqdq` per register
//! of two blocks) and sums the products unreduced, reducing once per batch (aggregated
//! reduction); the arithmetic is that of `ghash::x86_pclmul`, two lanes at a time. AVX2 has
//! only sixteen vector registers, so sixteen blocks per batch is what fits beside the round
//! keys without spilling the chains. Encryption hashes the batch [`ENCRYPT_HASH_LAG`] back and
//! the last ones after the loop; decryption hashes the batch it decrypts.
//!
//! Counters are kept byte-reversed per lane, so a step is one `vpaddd` on the low 32-bit
//! word; the caller guarantees that word does not wrap within a call.

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use crate::ghash::soft::FOLD_CONSTANT;
use crate::ghash::POWERS;

use super::Text;

/// Blocks per batch: eight ymm registers, one GHASH reduction.
pub(super) const BATCH_BLOCKS: usize = 16;
/// Bytes per batch.
pub(super) const BATCH_BYTES: usize = 16 * BATCH_BLOCKS;
const VECTORS: usize = BATCH_BLOCKS / 2;
/// How many batches behind the AES encryption hashes the ciphertext (see `vaes512`).
const ENCRYPT_HASH_LAG: usize = 2;
/// The most round keys AES has (AES-256).
const MAX_ROUND_KEYS: usize = 15;

// AES-128's 9 middle rounds carry the products of the eight vectors.
const _: () = assert!(VECTORS == 8 && BATCH_BLOCKS <= POWERS);

/// Whether this CPU has every feature [`process`] enables.
pub(super) fn is_available() -> bool {
    is_x86_feature_detected!("aes")
        && is_x86_feature_detected!("vaes")
        && is_x86_feature_detected!("vpclmulqdq")
        && is_x86_feature_detected!("pclmulqdq")
        && is_x86_feature_detected!("avx2")
}

/// Unreduced sums of products, per 128-bit lane: `high * y^128 + middle * y^64 + low`.
#[derive(Clone, Copy)]
struct Products {
    low: __m256i,
    middle: __m256i,
    high: __m256i,
}

/// Two powers of H with, in both halves of each lane, the sum of its halves.
#[derive(Clone, Copy)]
struct Power {
    value: __m256i,
    halves_sum: __m256i,
}

/// Encrypts (or with `DECRYPT` decrypts) `text` with AES-CTR from `counter` in one pass (in
/// place or into a separate output) and continues the running GHASH `state` over its
/// ciphertext: the contract of
/// `vaes512::process`, with batches of [`BATCH_BYTES`].
///
/// # Safety
/// The CPU must have every feature [`is_available`] checks, and `text` must keep the
/// contract of [`Text`].
#[target_feature(enable = "aes,vaes,vpclmulqdq,pclmulqdq,avx2")]
pub(super) unsafe fn process<const ROUNDS: usize, const DECRYPT: bool>(
    round_keys: &[[u8; 16]],
    powers: &[u128; POWERS],
    counter: &[u8; 16],
    state: &mut u128,
    text: Text,
) {
    assert!(ROUNDS < MAX_ROUND_KEYS && round_keys.len() == ROUNDS + 1);
    let mut keys = [_mm256_setzero_si256(); MAX_ROUND_KEYS];
    for (key, bytes) in keys.iter_mut().zip(round_keys) {
        // SAFETY: `bytes` is a 16-byte array; `loadu` has no alignment requirement.
        *key = _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) });
    }
    let first_power = POWERS - BATCH_BLOCKS;
    let batch_powers: [Power; VECTORS] = core::array::from_fn(|vector| {
        // SAFETY: entries `first_power + 2 * vector` and the next are 32 readable bytes of
        // the table (`2 * vector + 1 < BATCH_BLOCKS`); `loadu` has no alignment requirement.
        let value = unsafe {
            _mm256_loadu_si256((&powers[first_power + 2 * vector] as *const u128).cast())
        };
        Power {
            value,
            halves_sum: halves_sum(value),
        }
    });

    let reverse_lane = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let reverse = _mm256_broadcastsi128_si256(reverse_lane);
    // SAFETY: `counter` is a 16-byte array; `loadu` has no alignment requirement.
    let first = _mm_shuffle_epi8(
        unsafe { _mm_loadu_si128(counter.as_ptr().cast()) },
        reverse_lane,
    );
    let mut counters = _mm256_add_epi32(
        _mm256_broadcastsi128_si256(first),
        _mm256_set_epi32(0, 0, 0, 1, 0, 0, 0, 0),
    );

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
            let first = unsafe { load_reversed(last, 0, reverse) };
            let first = _mm256_xor_si256(first, _mm256_zextsi128_si256(accumulator));
            let mut sum = product(first, batch_powers[0]);
            for (vector, power) in batch_powers.iter().enumerate().skip(1) {
                // SAFETY: as above, `vector < VECTORS`.
                let data = unsafe { load_reversed(last, vector, reverse) };
                sum = add(sum, product(data, *power));
            }
            accumulator = reduce(sum);
        }
    }

    // SAFETY: a `u128` is 16 writable bytes; `storeu` has no alignment requirement.
    unsafe { _mm_storeu_si128((state as *mut u128).cast(), accumulator) };
}

/// One batch: AES-CTR over the batch read at `source` and written at `target` (the same
/// address when in place) and, with `HASH`, GHASH of the batch at `hashed` folded into
/// `accumulator`, the products of one vector per AES round.
///
/// # Safety
/// `source`, `target` and `hashed` must each point to [`BATCH_BYTES`] bytes (`target`
/// writable, and either `source` itself or disjoint from it), and the CPU must have the
/// features of [`process`].
#[inline]
#[target_feature(enable = "aes,vaes,vpclmulqdq,pclmulqdq,avx2")]
unsafe fn run_batch<const ROUNDS: usize, const HASH: bool>(
    keys: &[__m256i; MAX_ROUND_KEYS],
    powers: &[Power; VECTORS],
    counters: &mut __m256i,
    reverse: __m256i,
    (source, target): (*const u8, *mut u8),
    hashed: *const u8,
    accumulator: &mut __m128i,
) {
    let two_blocks = _mm256_set_epi32(0, 0, 0, 2, 0, 0, 0, 2);
    let mut blocks = [_mm256_setzero_si256(); VECTORS];
    for block in &mut blocks {
        *block = _mm256_xor_si256(_mm256_shuffle_epi8(*counters, reverse), keys[0]);
        *counters = _mm256_add_epi32(*counters, two_blocks);
    }
    let mut sum = if HASH {
        // SAFETY: `hashed` is a whole batch (the caller's guarantee).
        let first = unsafe { load_reversed(hashed, 0, reverse) };
        let first = _mm256_xor_si256(first, _mm256_zextsi128_si256(*accumulator));
        Some(product(first, powers[0]))
    } else {
        None
    };
    for (round, key) in keys[1..VECTORS].iter().enumerate() {
        for block in &mut blocks {
            *block = _mm256_aesenc_epi128(*block, *key);
        }
        keep_round_order(&mut blocks);
        if let Some(partial) = &mut sum {
            // SAFETY: `hashed` is a whole batch and `round + 1 < VECTORS`.
            let vector = unsafe { load_reversed(hashed, round + 1, reverse) };
            *partial = add(*partial, product(vector, powers[round + 1]));
        }
    }
    if let Some(sum) = sum {
        *accumulator = reduce(sum);
    }
    for key in &keys[VECTORS..ROUNDS] {
        for block in &mut blocks {
            *block = _mm256_aesenc_epi128(*block, *key);
        }
        keep_round_order(&mut blocks);
    }
    for (vector, block) in blocks.iter().enumerate() {
        // SAFETY: vector `vector` of the batch is 32 bytes within it, read (after every read
        // of it for GHASH, when in place) and then written; `loadu`/`storeu` need no
        // alignment.
        unsafe {
            let data = _mm256_loadu_si256(source.add(32 * vector).cast());
            let result = _mm256_aesenclast_epi128(*block, _mm256_xor_si256(keys[ROUNDS], data));
            _mm256_storeu_si256(target.add(32 * vector).cast(), result);
        }
    }
}

/// Vector `vector` (two blocks) of the batch at `batch`, byte-reversed per block for GHASH.
///
/// # Safety
/// `batch` must point to [`BATCH_BYTES`] readable bytes and `vector` be below [`VECTORS`].
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load_reversed(batch: *const u8, vector: usize, reverse: __m256i) -> __m256i {
    debug_assert!(vector < VECTORS);
    // SAFETY: the caller guarantees the 32 bytes are readable; no alignment is needed.
    _mm256_shuffle_epi8(
        unsafe { _mm256_loadu_si256(batch.add(32 * vector).cast()) },
        reverse,
    )
}

/// Each lane with its halves swapped and added: the Karatsuba middle operand.
#[inline]
#[target_feature(enable = "avx2")]
fn halves_sum(value: __m256i) -> __m256i {
    _mm256_xor_si256(value, _mm256_shuffle_epi32::<0x4e>(value))
}

/// Karatsuba products of two blocks with two powers, lane by lane (see
/// `ghash::x86_pclmul::product`).
#[inline]
#[target_feature(enable = "vpclmulqdq,pclmulqdq,avx2")]
fn product(left: __m256i, right: Power) -> Products {
    Products {
        low: _mm256_clmulepi64_epi128::<0x00>(left, right.value),
        middle: _mm256_clmulepi64_epi128::<0x00>(halves_sum(left), right.halves_sum),
        high: _mm256_clmulepi64_epi128::<0x11>(left, right.value),
    }
}

#[inline]
#[target_feature(enable = "avx2")]
fn add(sum: Products, term: Products) -> Products {
    Products {
        low: _mm256_xor_si256(sum.low, term.low),
        middle: _mm256_xor_si256(sum.middle, term.middle),
        high: _mm256_xor_si256(sum.high, term.high),
    }
}

/// The reduction of `ghash::x86_pclmul` in each lane (after completing the Karatsuba middle
/// product), then the sum of the two lanes.
#[inline]
#[target_feature(enable = "vpclmulqdq,pclmulqdq,avx2")]
fn reduce(products: Products) -> __m128i {
    let constant = _mm256_set1_epi64x(FOLD_CONSTANT as i64);
    let fold = _mm256_clmulepi64_epi128::<0x00>(products.low, constant);
    let middle = _mm256_xor_si256(
        _mm256_xor_si256(
            products.middle,
            _mm256_xor_si256(products.low, products.high),
        ),
        _mm256_xor_si256(_mm256_shuffle_epi32::<0x4e>(products.low), fold),
    );
    let fold = _mm256_clmulepi64_epi128::<0x00>(middle, constant);
    let lanes = _mm256_xor_si256(
        _mm256_xor_si256(products.high, _mm256_shuffle_epi32::<0x4e>(middle)),
        fold,
    );
    _mm_xor_si128(
        _mm256_castsi256_si128(lanes),
        _mm256_extracti128_si256::<1>(lanes),
    )
}

/// Pins the round-major order of the AES rounds across the eight vectors (see
/// `vaes512::keep_round_order`).
#[inline]
#[target_feature(enable = "avx")]
fn keep_round_order(blocks: &mut [__m256i; VECTORS]) {
    let [b0, b1, b2, b3, b4, b5, b6, b7] = blocks;
    // SAFETY: the template is a comment: it executes nothing and leaves every register as
    // it was.
    unsafe {
        core::arch::asm!(
            "/* {b0} {b1} {b2} {b3} {b4} {b5} {b6} {b7} */",
            b0 = inout(ymm_reg) * b0,
            b1 = inout(ymm_reg) * b1,
            b2 = inout(ymm_reg) * b2,
            b3 = inout(ymm_reg) * b3,
            b4 = inout(ymm_reg) * b4,
            b5 = inout(ymm_reg) * b5,
            b6 = inout(ymm_reg) * b6,
            b7 = inout(ymm_reg) * b7,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
}
