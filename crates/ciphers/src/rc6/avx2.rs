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
simd_backend!(feature: "avx2", vector: __m256i, blocks_per_vector: 8, in_flight: 8);

#[target_feature(enable = "avx2")]
#[inline]
fn splat(value: u32) -> __m256i {
    _mm256_set1_epi32(value as i32)
}

#[target_feature(enable = "avx2")]
#[inline]
fn add(x: __m256i, y: __m256i) -> __m256i {
    _mm256_add_epi32(x, y)
}

#[target_feature(enable = "avx2")]
#[inline]
fn sub(x: __m256i, y: __m256i) -> __m256i {
    _mm256_sub_epi32(x, y)
}

#[target_feature(enable = "avx2")]
#[inline]
fn xor(x: __m256i, y: __m256i) -> __m256i {
    _mm256_xor_si256(x, y)
}

/// Rotates each lane left by the low five bits of the matching lane of `amount`. A shift by
/// 32 gives zero in `vpsrlvd`, so a rotation by zero comes out as `x` unchanged.
#[target_feature(enable = "avx2")]
#[inline]
fn rotate_left(x: __m256i, amount: __m256i) -> __m256i {
    let amount = _mm256_and_si256(amount, splat(31));
    let complement = _mm256_sub_epi32(splat(32), amount);
    _mm256_or_si256(
        _mm256_sllv_epi32(x, amount),
        _mm256_srlv_epi32(x, complement),
    )
}

#[target_feature(enable = "avx2")]
#[inline]
fn rotate_right(x: __m256i, amount: __m256i) -> __m256i {
    let amount = _mm256_and_si256(amount, splat(31));
    let complement = _mm256_sub_epi32(splat(32), amount);
    _mm256_or_si256(
        _mm256_srlv_epi32(x, amount),
        _mm256_sllv_epi32(x, complement),
    )
}

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

/// Transposes the 4x4 word matrix in each 128-bit lane: four vectors of two whole blocks
/// each become the A, B, C and D words of those 8 blocks, and back again (the transpose is
/// its own inverse). Lane order ends up permuted, which is harmless because every lane goes
/// through the same rounds and the store applies the same transpose.
#[target_feature(enable = "avx2")]
#[inline]
fn transpose([row0, row1, row2, row3]: [__m256i; 4]) -> [__m256i; 4] {
    let low01 = _mm256_unpacklo_epi32(row0, row1);
    let high01 = _mm256_unpackhi_epi32(row0, row1);
    let low23 = _mm256_unpacklo_epi32(row2, row3);
    let high23 = _mm256_unpackhi_epi32(row2, row3);
    [
        _mm256_unpacklo_epi64(low01, low23),
        _mm256_unpackhi_epi64(low01, low23),
        _mm256_unpacklo_epi64(high01, high23),
        _mm256_unpackhi_epi64(high01, high23),
    ]
}

#[target_feature(enable = "avx2")]
#[inline]
fn load_group(group: &Group) -> [__m256i; 4] {
    let pointer = group.as_ptr().cast::<__m256i>();
    // SAFETY: `group` is 8 blocks of 16 bytes, 128 initialised bytes borrowed for this call:
    // exactly the four 32-byte vectors read here. `loadu` has no alignment requirement.
    let rows = unsafe {
        [
            _mm256_loadu_si256(pointer),
            _mm256_loadu_si256(pointer.add(1)),
            _mm256_loadu_si256(pointer.add(2)),
            _mm256_loadu_si256(pointer.add(3)),
        ]
    };
    transpose(rows)
}

#[target_feature(enable = "avx2")]
#[inline]
fn store_group(group: &mut Group, words: [__m256i; 4]) {
    let [row0, row1, row2, row3] = transpose(words);
    let pointer = group.as_mut_ptr().cast::<__m256i>();
    // SAFETY: `group` is 128 bytes borrowed mutably and exclusively for this call: exactly
    // the four 32-byte vectors written here. `storeu` has no alignment requirement.
    unsafe {
        _mm256_storeu_si256(pointer, row0);
        _mm256_storeu_si256(pointer.add(1), row1);
        _mm256_storeu_si256(pointer.add(2), row2);
        _mm256_storeu_si256(pointer.add(3), row3);
    }
}
