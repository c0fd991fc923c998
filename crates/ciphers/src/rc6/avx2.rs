//! RC6 on AVX2: one 256-bit vector holds one word of 8 blocks. AVX2 has no rotate, so the
//! variable rotates are built from the per-lane shifts `vpsllvd`/`vpsrlvd`.

use core::arch::x86_64::{
    __m256i, _mm256_add_epi32, _mm256_and_si256, _mm256_loadu_si256, _mm256_mullo_epi32,
    _mm256_or_si256, _mm256_set1_epi32, _mm256_slli_epi32, _mm256_sllv_epi32, _mm256_srli_epi32,
    _mm256_srlv_epi32, _mm256_storeu_si256, _mm256_sub_epi32, _mm256_unpackhi_epi32,
    _mm256_unpackhi_epi64, _mm256_unpacklo_epi32, _mm256_unpacklo_epi64, _mm256_xor_si256,
};

// Latency bound like the AVX-512 path: on a Zen 5 core 2, 4, 6 and 8 vectors in flight gave
// 2.3, 2.6, 3.1 and 3.1 GB/s. Eight spill some of the 32 state vectors out of the 16
// registers but hide the multiply latency best, and 64 blocks per iteration match the
// modes' batches.
simd_backend!(
    feature: "avx2",
    vector: __m256i,
    blocks_per_vector: 8,
    in_flight: 8,
    splat: _mm256_set1_epi32,
    operations: { add => _mm256_add_epi32, sub => _mm256_sub_epi32, xor => _mm256_xor_si256 },
    unpack: [
        _mm256_unpacklo_epi32,
        _mm256_unpackhi_epi32,
        _mm256_unpacklo_epi64,
        _mm256_unpackhi_epi64,
    ],
    load: _mm256_loadu_si256,
    store: _mm256_storeu_si256,
);

/// Generates a variable rotate from the per-lane shifts: `$toward` by the low five bits of
/// `amount`, ORed with `$away` by 32 minus them. A shift by 32 gives zero in `vpsllvd` and
/// `vpsrlvd`, so a rotation by zero comes out as `x` unchanged.
macro_rules! variable_rotate {
    ($name:ident, $toward:ident, $away:ident) => {
        #[target_feature(enable = "avx2")]
        #[inline]
        fn $name(x: __m256i, amount: __m256i) -> __m256i {
            let amount = _mm256_and_si256(amount, splat(31));
            let complement = _mm256_sub_epi32(splat(32), amount);
            _mm256_or_si256($toward(x, amount), $away(x, complement))
        }
    };
}

variable_rotate!(rotate_left, _mm256_sllv_epi32, _mm256_srlv_epi32);
variable_rotate!(rotate_right, _mm256_srlv_epi32, _mm256_sllv_epi32);

/// f(x) = x(2x + 1) <<< 5 in every lane.
#[target_feature(enable = "avx2")]
#[inline]
fn quadratic(x: __m256i) -> __m256i {
    let product = _mm256_mullo_epi32(x, add(add(x, x), splat(1)));
    _mm256_or_si256(
        _mm256_slli_epi32::<5>(product),
        _mm256_srli_epi32::<27>(product),
    )
}
