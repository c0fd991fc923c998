//! RC6 on AVX-512F: one 512-bit vector holds one word of 16 blocks, and AVX-512 has the
//! variable rotate RC6 is built on (`vprolvd`/`vprorvd`), so a round is a handful of
//! instructions for 16 blocks.

use core::arch::x86_64::{
    __m512i, _mm512_add_epi32, _mm512_loadu_si512, _mm512_mullo_epi32, _mm512_rol_epi32,
    _mm512_rolv_epi32, _mm512_rorv_epi32, _mm512_set1_epi32, _mm512_storeu_si512, _mm512_sub_epi32,
    _mm512_unpackhi_epi32, _mm512_unpackhi_epi64, _mm512_unpacklo_epi32, _mm512_unpacklo_epi64,
    _mm512_xor_si512,
};

// A round is one long dependency chain (add, multiply, rotate, xor, rotate, add), so
// throughput grows with the vectors in flight: on a Zen 5 core 1, 2, 4, 6 and 8 gave 4.4,
// 6.9, 11.0, 13.1 and 12.0 GB/s; at 8 the 32 state vectors no longer fit the registers.
// AVX-512 has the variable rotates RC6's `<<<` and `>>>` are (low five bits of each lane of
// the amount), so they are plain lane-wise operations here.
simd_backend!(
    feature: "avx512f",
    vector: __m512i,
    blocks_per_vector: 16,
    in_flight: 6,
    splat: _mm512_set1_epi32,
    operations: {
        add => _mm512_add_epi32,
        sub => _mm512_sub_epi32,
        xor => _mm512_xor_si512,
        rotate_left => _mm512_rolv_epi32,
        rotate_right => _mm512_rorv_epi32,
    },
    unpack: [
        _mm512_unpacklo_epi32,
        _mm512_unpackhi_epi32,
        _mm512_unpacklo_epi64,
        _mm512_unpackhi_epi64,
    ],
    load: _mm512_loadu_si512,
    store: _mm512_storeu_si512,
);

/// f(x) = x(2x + 1) <<< 5 in every lane.
#[target_feature(enable = "avx512f")]
#[inline]
fn quadratic(x: __m512i) -> __m512i {
    let doubled_plus_one = add(add(x, x), splat(1));
    _mm512_rol_epi32::<5>(_mm512_mullo_epi32(x, doubled_plus_one))
}
