//! GHASH with the ARMv8 Cryptography Extensions' 64-bit polynomial multiply (PMULL) on
//! aarch64: the arithmetic of [`super::x86_pclmul`] (the same `karatsuba_lanes!` expansion,
//! aggregated reduction over 16 blocks), with NEON intrinsics standing in for the x86 ones.
//!
//! Blocks are byte-reversed on load (`rev64` within each half, then the halves swapped),
//! which puts the element's integer (see the parent module) in the register with its low 64
//! bits in lane 0, as on x86.

use core::arch::aarch64::*;

use super::soft::FOLD_CONSTANT;

/// Two 64-bit lanes: a field element's integer, low half in lane 0.
type Vector = uint64x2_t;

pub(super) fn is_available() -> bool {
    std::arch::is_aarch64_feature_detected!("pmull")
}

/// The carry-less product of lane 0 of each operand (`SELECT` 0x00) or of lane 1 of each
/// (0x11), in `_mm_clmulepi64_si128`'s notation: the two selections `karatsuba_lanes!` uses.
#[inline]
#[target_feature(enable = "neon,aes")]
fn clmul<const SELECT: i32>(left: Vector, right: Vector) -> Vector {
    const { assert!(SELECT == 0x00 || SELECT == 0x11) };
    let product = if SELECT == 0x00 {
        vmull_p64(vgetq_lane_u64::<0>(left), vgetq_lane_u64::<0>(right))
    } else {
        vmull_high_p64(vreinterpretq_p64_u64(left), vreinterpretq_p64_u64(right))
    };
    vreinterpretq_u64_p128(product)
}

/// The register with its 64-bit halves swapped: `_mm_shuffle_epi32::<0x4e>`, the one
/// shuffle `karatsuba_lanes!` uses.
#[inline]
#[target_feature(enable = "neon")]
fn swap_halves<const SHUFFLE: i32>(value: Vector) -> Vector {
    const { assert!(SHUFFLE == 0x4e) };
    vextq_u64::<1>(value, value)
}

super::karatsuba_lanes! {
    vector: Vector,
    features: "neon,aes",
    xor: veorq_u64,
    clmul: clmul,
    shuffle_epi32: swap_halves,
    fold_constant: vcombine_u64(vcreate_u64(FOLD_CONSTANT), vcreate_u64(0)),
    reduce: reduce,
}

#[inline]
#[target_feature(enable = "neon")]
fn load_block(block: &[u8]) -> Vector {
    assert!(block.len() >= 16);
    // SAFETY: the assertion guarantees 16 readable bytes; `vld1q_u8` has no alignment
    // requirement.
    let bytes = unsafe { vld1q_u8(block.as_ptr()) };
    let reversed = vreinterpretq_u64_u8(vrev64q_u8(bytes));
    vextq_u64::<1>(reversed, reversed)
}

/// A `u128` in a register, low 64 bits in lane 0 (aarch64 Linux is little-endian).
#[inline]
#[target_feature(enable = "neon")]
fn load_element(element: &u128) -> Vector {
    // SAFETY: a `u128` is 16 readable bytes; `vld1q_u64` needs only 8-byte alignment, which
    // `u128` has.
    unsafe { vld1q_u64((element as *const u128).cast()) }
}

#[inline]
#[target_feature(enable = "neon")]
fn to_element(vector: Vector) -> u128 {
    (u128::from(vgetq_lane_u64::<1>(vector)) << 64) | u128::from(vgetq_lane_u64::<0>(vector))
}

super::aggregated_update! {
    vector: Vector,
    features: "neon,aes",
    xor: veorq_u64,
    group: 16,
}
