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
simd_backend!(feature: "avx512f", vector: __m512i, blocks_per_vector: 16, in_flight: 6);

#[target_feature(enable = "avx512f")]
#[inline]
fn splat(value: u32) -> __m512i {
    _mm512_set1_epi32(value as i32)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn add(x: __m512i, y: __m512i) -> __m512i {
    _mm512_add_epi32(x, y)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn sub(x: __m512i, y: __m512i) -> __m512i {
    _mm512_sub_epi32(x, y)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn xor(x: __m512i, y: __m512i) -> __m512i {
    _mm512_xor_si512(x, y)
}

/// Rotates each lane left by the low five bits of the matching lane of `amount`, as RC6's
/// `<<<` does.
#[target_feature(enable = "avx512f")]
#[inline]
fn rotate_left(x: __m512i, amount: __m512i) -> __m512i {
    _mm512_rolv_epi32(x, amount)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn rotate_right(x: __m512i, amount: __m512i) -> __m512i {
    _mm512_rorv_epi32(x, amount)
}

/// f(x) = x(2x + 1) <<< 5 in every lane.
#[target_feature(enable = "avx512f")]
#[inline]
fn quadratic(x: __m512i) -> __m512i {
    let doubled_plus_one = add(add(x, x), splat(1));
    _mm512_rol_epi32::<5>(_mm512_mullo_epi32(x, doubled_plus_one))
}

/// Transposes the 4x4 word matrix in each 128-bit lane: four vectors of four whole blocks
/// become the A, B, C and D words of those 16 blocks, and back again (the transpose is its
/// own inverse). Lane order ends up permuted, which is harmless because every lane goes
/// through the same rounds and the store applies the same transpose.
#[target_feature(enable = "avx512f")]
#[inline]
fn transpose([row0, row1, row2, row3]: [__m512i; 4]) -> [__m512i; 4] {
    let low01 = _mm512_unpacklo_epi32(row0, row1);
    let high01 = _mm512_unpackhi_epi32(row0, row1);
    let low23 = _mm512_unpacklo_epi32(row2, row3);
    let high23 = _mm512_unpackhi_epi32(row2, row3);
    [
        _mm512_unpacklo_epi64(low01, low23),
        _mm512_unpackhi_epi64(low01, low23),
        _mm512_unpacklo_epi64(high01, high23),
        _mm512_unpackhi_epi64(high01, high23),
    ]
}

#[target_feature(enable = "avx512f")]
#[inline]
fn load_group(group: &Group) -> [__m512i; 4] {
    let pointer = group.as_ptr().cast::<__m512i>();
    // SAFETY: `group` is 16 blocks of 16 bytes, 256 initialised bytes borrowed for this call:
    // exactly the four 64-byte vectors read here. `loadu` has no alignment requirement.
    let rows = unsafe {
        [
            _mm512_loadu_si512(pointer.cast()),
            _mm512_loadu_si512(pointer.add(1).cast()),
            _mm512_loadu_si512(pointer.add(2).cast()),
            _mm512_loadu_si512(pointer.add(3).cast()),
        ]
    };
    transpose(rows)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn store_group(group: &mut Group, words: [__m512i; 4]) {
    let [row0, row1, row2, row3] = transpose(words);
    let pointer = group.as_mut_ptr().cast::<__m512i>();
    // SAFETY: `group` is 256 bytes borrowed mutably and exclusively for this call: exactly
    // the four 64-byte vectors written here. `storeu` has no alignment requirement.
    unsafe {
        _mm512_storeu_si512(pointer.cast(), row0);
        _mm512_storeu_si512(pointer.add(1).cast(), row1);
        _mm512_storeu_si512(pointer.add(2).cast(), row2);
        _mm512_storeu_si512(pointer.add(3).cast(), row3);
    }
}
