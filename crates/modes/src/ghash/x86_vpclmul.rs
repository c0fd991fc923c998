//! GHASH with x86-64 AVX-512 and VPCLMULQDQ: four blocks per 512-bit register.
//!
//! Each 128-bit lane works like the PCLMULQDQ code: 32 blocks (eight registers) are multiplied
//! by H^32..H^1, the products summed, reduced lane by lane, and the four lanes added, once per
//! 32 blocks. Sixteen blocks per group left the multiplier idle while each group waited for the
//! previous reduction (27 GB/s against 44 GB/s on Zen 5). Fewer than 32 remaining blocks use
//! the last powers of the table and masked loads, so no tail needs a loop of single blocks.

use core::arch::x86_64::*;

use super::soft::FOLD_CONSTANT;
use super::POWERS;

const LANES: usize = 4;
const REGISTERS_PER_GROUP: usize = POWERS / LANES;
const GROUP_BYTES: usize = 16 * POWERS;
const _: () = assert!(POWERS.is_multiple_of(LANES) && REGISTERS_PER_GROUP >= 2);

pub(crate) fn is_available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("vpclmulqdq")
        && is_x86_feature_detected!("pclmulqdq")
        && is_x86_feature_detected!("avx2")
        // `GhashKey::mul_prepared` runs the PCLMULQDQ code, which needs it.
        && is_x86_feature_detected!("ssse3")
}

super::karatsuba_lanes! {
    vector: __m512i,
    features: "avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2",
    xor: _mm512_xor_si512,
    clmul: _mm512_clmulepi64_epi128,
    shuffle_epi32: _mm512_shuffle_epi32,
    fold_constant: _mm512_set1_epi64(FOLD_CONSTANT as i64),
    reduce: reduce_lanes,
}

/// Four consecutive powers of H, each with the sum of its halves.
pub(crate) type Power = super::Power<__m512i>;

#[inline]
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
pub(crate) fn byte_reverse_lanes(vector: __m512i) -> __m512i {
    let reverse = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    _mm512_shuffle_epi8(vector, _mm512_broadcast_i32x4(reverse))
}

/// Four blocks, byte-swapped in their lanes.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
fn load_blocks(blocks: &[u8]) -> __m512i {
    assert!(blocks.len() >= 16 * LANES);
    // SAFETY: the assertion guarantees 64 readable bytes; `loadu` has no alignment requirement.
    byte_reverse_lanes(unsafe { _mm512_loadu_si512(blocks.as_ptr().cast()) })
}

/// `lanes` (1..=4) blocks, byte-swapped in their lanes; the lanes above are zero.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
fn load_blocks_partial(blocks: &[u8], lanes: usize) -> __m512i {
    assert!((1..=LANES).contains(&lanes) && blocks.len() >= 16 * lanes);
    let mask = lane_mask(lanes);
    // SAFETY: a masked load reads only the 64-bit elements its mask selects (masked-off
    // elements are neither read nor able to fault), here the first `16 * lanes` bytes, which
    // the assertion guarantees are readable.
    byte_reverse_lanes(unsafe { _mm512_maskz_loadu_epi64(mask, blocks.as_ptr().cast()) })
}

/// Four consecutive powers from the table.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
pub(crate) fn load_powers(powers: &[u128]) -> __m512i {
    assert!(powers.len() >= LANES);
    // SAFETY: the assertion guarantees 64 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm512_loadu_si512(powers.as_ptr().cast()) }
}

/// `lanes` (1..=4) consecutive powers from the table; the lanes above are zero.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
fn load_powers_partial(powers: &[u128], lanes: usize) -> __m512i {
    assert!((1..=LANES).contains(&lanes) && powers.len() >= lanes);
    // SAFETY: as in `load_blocks_partial`, only the first `lanes` elements of 16 bytes are
    // read, and the assertion guarantees they exist.
    unsafe { _mm512_maskz_loadu_epi64(lane_mask(lanes), powers.as_ptr().cast()) }
}

/// Mask of the 64-bit elements of the first `lanes` 128-bit lanes.
#[inline]
fn lane_mask(lanes: usize) -> __mmask8 {
    ((1u32 << (2 * lanes)) - 1) as __mmask8
}

/// `sum + first + second`, one three-way XOR per part.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn add2(sum: Products, first: Products, second: Products) -> Products {
    Products {
        low: _mm512_ternarylogic_epi64::<0x96>(sum.low, first.low, second.low),
        middle: _mm512_ternarylogic_epi64::<0x96>(sum.middle, first.middle, second.middle),
        high: _mm512_ternarylogic_epi64::<0x96>(sum.high, first.high, second.high),
    }
}

impl Products {
    /// Empty sums.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(crate) fn zero() -> Self {
        Self {
            low: _mm512_setzero_si512(),
            middle: _mm512_setzero_si512(),
            high: _mm512_setzero_si512(),
        }
    }

    /// The three sums, for code that must name their registers (an ordering barrier).
    pub(crate) fn parts_mut(&mut self) -> [&mut __m512i; 3] {
        [&mut self.low, &mut self.middle, &mut self.high]
    }
}

/// The reduction of each lane ([`reduce_lanes`]), followed by the sum of the lanes.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
pub(crate) fn reduce(products: Products) -> __m128i {
    let lanes = reduce_lanes(products);
    let halves = _mm256_xor_si256(
        _mm512_castsi512_si256(lanes),
        _mm512_extracti64x4_epi64::<1>(lanes),
    );
    _mm_xor_si128(
        _mm256_castsi256_si128(halves),
        _mm256_extracti128_si256::<1>(halves),
    )
}

/// The running GHASH over `blocks` (whole blocks), continuing from `state`.
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
pub(super) fn update(powers: &[u128; POWERS], state: &mut u128, blocks: &[u8]) {
    // SAFETY: a `u128` is 16 readable bytes; `loadu` has no alignment requirement.
    let mut accumulator = unsafe { _mm_loadu_si128((state as *const u128).cast()) };

    let mut groups = blocks.chunks_exact(GROUP_BYTES);
    // Short inputs (GCM hashes AAD and the length block separately) skip loading the table.
    if blocks.len() >= GROUP_BYTES {
        let group_powers: [Power; REGISTERS_PER_GROUP] = core::array::from_fn(|register| {
            with_halves_sum(load_powers(&powers[register * LANES..]))
        });
        for group in &mut groups {
            let (first, rest) = group.split_at(16 * LANES);
            let first = _mm512_xor_si512(load_blocks(first), _mm512_zextsi128_si512(accumulator));
            let mut sum = product(first, group_powers[0]);
            for (blocks, power) in rest.chunks_exact(16 * LANES).zip(&group_powers[1..]) {
                sum = add(sum, product(load_blocks(blocks), *power));
            }
            accumulator = reduce(sum);
        }
    }

    let rest = groups.remainder();
    if !rest.is_empty() {
        let count = rest.len() / 16;
        let rest_powers = &powers[POWERS - count..];
        let mut sum: Option<Products> = None;
        for start in (0..count).step_by(LANES) {
            let lanes = (count - start).min(LANES);
            let mut data = load_blocks_partial(&rest[16 * start..], lanes);
            if start == 0 {
                data = _mm512_xor_si512(data, _mm512_zextsi128_si512(accumulator));
            }
            let power = with_halves_sum(load_powers_partial(&rest_powers[start..], lanes));
            let term = product(data, power);
            sum = Some(sum.map_or(term, |sum| add(sum, term)));
        }
        accumulator = reduce(sum.expect("at least one block remains"));
    }

    // SAFETY: a `u128` is 16 writable bytes; `storeu` has no alignment requirement.
    unsafe { _mm_storeu_si128((state as *mut u128).cast(), accumulator) };
}
