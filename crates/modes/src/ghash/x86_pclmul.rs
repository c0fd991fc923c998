//! GHASH with x86-64 PCLMULQDQ on 128-bit registers.
//!
//! Blocks are byte-swapped on load, which puts the element's integer (see the parent module)
//! in the register. Sixteen blocks are multiplied by H^16..H^1 and their 256-bit products
//! summed before a single reduction (aggregated reduction), since the reduction is linear.

use core::arch::x86_64::*;

use super::soft::FOLD_CONSTANT;
use super::POWERS;

const BLOCKS_PER_GROUP: usize = 16;
const _: () = assert!(BLOCKS_PER_GROUP <= POWERS);

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

/// `left * right` for a `right` made by `super::prepare`.
#[inline]
#[target_feature(enable = "pclmulqdq,ssse3")]
pub(super) fn mul_prepared(left: u128, right_prepared: u128) -> u128 {
    let right = with_halves_sum(load_element(&right_prepared));
    to_element(reduce(product(load_element(&left), right)))
}

/// The table of powers of H (see `super::fill_powers_with`), with the multiplications
/// inlined so that the independent chains overlap in the carry-less multiplier.
#[target_feature(enable = "pclmulqdq,ssse3")]
pub(super) fn fill_powers(h: u128, powers: &mut [u128; POWERS]) {
    super::fill_powers_with(h, powers, |left, right| mul_prepared(left, right));
}

/// Hashes `group` (whole blocks, one per entry of `powers`) into `accumulator` with a single
/// reduction: block `i` is multiplied by `powers[i]`, the accumulator joins the first block.
#[inline]
#[target_feature(enable = "pclmulqdq,ssse3")]
fn hash_group(accumulator: __m128i, group: &[u8], powers: &[u128]) -> __m128i {
    debug_assert_eq!(group.len(), 16 * powers.len());
    let (first, rest) = group.split_at(16);
    let first_power = load_element(&powers[0]);
    let first = _mm_xor_si128(load_block(first), accumulator);
    let mut sum = product(first, with_halves_sum(first_power));
    for (block, power) in rest.chunks_exact(16).zip(&powers[1..]) {
        let power = load_element(power);
        sum = add(sum, product(load_block(block), with_halves_sum(power)));
    }
    reduce(sum)
}

/// The running GHASH over `blocks` (whole blocks), continuing from `state`.
#[target_feature(enable = "pclmulqdq,ssse3")]
pub(super) fn update(powers: &[u128; POWERS], state: &mut u128, blocks: &[u8]) {
    let mut accumulator = load_element(state);
    let mut groups = blocks.chunks_exact(16 * BLOCKS_PER_GROUP);
    for group in &mut groups {
        accumulator = hash_group(accumulator, group, &powers[POWERS - BLOCKS_PER_GROUP..]);
    }
    let rest = groups.remainder();
    if !rest.is_empty() {
        accumulator = hash_group(accumulator, rest, &powers[POWERS - rest.len() / 16..]);
    }
    *state = to_element(accumulator);
}
