//! GHASH with x86-64 PCLMULQDQ on 128-bit registers.
//!
//! Blocks are byte-swapped on load, which puts the element's integer (see the parent module)
//! in the register. Sixteen blocks are multiplied by H^16..H^1 and their 256-bit products
//! summed before a single reduction (aggregated reduction), since the reduction is linear.

use core::arch::x86_64::*;

use super::soft::FOLD_CONSTANT;

pub(super) fn is_available() -> bool {
    is_x86_feature_detected!("pclmulqdq") && is_x86_feature_detected!("ssse3")
}

super::karatsuba_lanes! {
    vector: __m128i,
    features: "pclmulqdq,ssse3",
    xor: _mm_xor_si128,
    clmul: _mm_clmulepi64_si128,
    shuffle_epi32: _mm_shuffle_epi32,
    fold_constant: _mm_set_epi64x(0, FOLD_CONSTANT as i64),
    reduce: reduce,
}

#[inline]
#[target_feature(enable = "pclmulqdq,ssse3")]
fn load_block(block: &[u8]) -> __m128i {
    assert!(block.len() >= 16);
    // SAFETY: the assertion guarantees 16 readable bytes; `loadu` has no alignment requirement.
    let bytes = unsafe { _mm_loadu_si128(block.as_ptr().cast()) };
    let reverse = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    _mm_shuffle_epi8(bytes, reverse)
}

/// A `u128` in a register, low 64 bits in the low lane (x86 is little-endian).
#[inline]
#[target_feature(enable = "pclmulqdq,ssse3")]
fn load_element(element: &u128) -> __m128i {
    // SAFETY: a `u128` is 16 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm_loadu_si128((element as *const u128).cast()) }
}

#[inline]
#[target_feature(enable = "pclmulqdq,ssse3")]
fn to_element(vector: __m128i) -> u128 {
    let low = _mm_cvtsi128_si64(vector) as u64;
    let high = _mm_cvtsi128_si64(_mm_unpackhi_epi64(vector, vector)) as u64;
    (u128::from(high) << 64) | u128::from(low)
}

super::aggregated_update! {
    vector: __m128i,
    features: "pclmulqdq,ssse3",
    xor: _mm_xor_si128,
    group: 16,
}
