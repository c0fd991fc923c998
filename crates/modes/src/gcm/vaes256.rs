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
//!
//! The loop is `stitched::stitched_loop`, shared with `aesni`; this module gives it the
//! operations on two blocks a register.

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use crate::ghash::soft::FOLD_CONSTANT;
use crate::ghash::POWERS;

use super::stitched::{Power, ENCRYPT_HASH_LAG};
use super::Text;

/// Blocks per batch: eight ymm registers, one GHASH reduction.
pub(super) const BATCH_BLOCKS: usize = 16;
/// Bytes per batch.
pub(super) const BATCH_BYTES: usize = 16 * BATCH_BLOCKS;
const VECTORS: usize = BATCH_BLOCKS / 2;
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

/// Two blocks a register.
type Vector = __m256i;

crate::ghash::karatsuba_lanes! {
    vector: __m256i,
    features: "vpclmulqdq,pclmulqdq,avx2",
    xor: _mm256_xor_si256,
    clmul: _mm256_clmulepi64_epi128,
    shuffle_epi32: _mm256_shuffle_epi32,
    fold_constant: _mm256_set1_epi64x(FOLD_CONSTANT as i64),
    reduce: reduce_lanes,
}

super::stitched::stitched_loop!("aes,vaes,vpclmulqdq,pclmulqdq,avx2");

#[inline]
#[target_feature(enable = "avx2")]
fn widen_key(key: __m128i) -> Vector {
    _mm256_broadcastsi128_si256(key)
}

/// H^16..H^1, the last entries of the table, two a register.
#[inline]
#[target_feature(enable = "vpclmulqdq,pclmulqdq,avx2")]
fn batch_powers(powers: &[u128; POWERS]) -> [Power<Vector>; VECTORS] {
    let first_power = POWERS - BATCH_BLOCKS;
    core::array::from_fn(|vector| {
        // SAFETY: entries `first_power + 2 * vector` and the next are 32 readable bytes of
        // the table (`2 * vector + 1 < BATCH_BLOCKS`); `loadu` has no alignment requirement.
        let value = unsafe {
            _mm256_loadu_si256((&powers[first_power + 2 * vector] as *const u128).cast())
        };
        with_halves_sum(value)
    })
}

#[inline]
#[target_feature(enable = "avx2")]
fn byte_reverse() -> Vector {
    _mm256_broadcastsi128_si256(_mm_set_epi8(
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    ))
}

/// The first two counter blocks, `counter` and the next, byte-reversed.
#[inline]
#[target_feature(enable = "avx2")]
fn first_counters(counter: &[u8; 16], reverse: Vector) -> Vector {
    // SAFETY: `counter` is a 16-byte array; `loadu` has no alignment requirement.
    let first = _mm_shuffle_epi8(
        unsafe { _mm_loadu_si128(counter.as_ptr().cast()) },
        _mm256_castsi256_si128(reverse),
    );
    _mm256_add_epi32(
        _mm256_broadcastsi128_si256(first),
        _mm256_set_epi32(0, 0, 0, 1, 0, 0, 0, 0),
    )
}

/// `state` added to the first of the two blocks.
#[inline]
#[target_feature(enable = "avx2")]
fn with_state(data: Vector, state: __m128i) -> Vector {
    _mm256_xor_si256(data, _mm256_zextsi128_si256(state))
}

super::stitched::register_operations! {
    features: "aes,vaes,vpclmulqdq,pclmulqdq,avx2",
    load: _mm256_loadu_si256,
    store: _mm256_storeu_si256,
    xor: _mm256_xor_si256,
    shuffle: _mm256_shuffle_epi8,
    add_epi32: _mm256_add_epi32,
    counter_step: _mm256_set_epi32(0, 0, 0, 2, 0, 0, 0, 2),
    aes_round: _mm256_aesenc_epi128,
    aes_last_round: _mm256_aesenclast_epi128,
}

/// The reduction of each lane ([`reduce_lanes`]), then the sum of the two lanes.
#[inline]
#[target_feature(enable = "vpclmulqdq,pclmulqdq,avx2")]
fn reduce(products: Products) -> __m128i {
    let lanes = reduce_lanes(products);
    _mm_xor_si128(
        _mm256_castsi256_si128(lanes),
        _mm256_extracti128_si256::<1>(lanes),
    )
}

super::stitched::keep_round_order!(ymm_reg, "avx");
