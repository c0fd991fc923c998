//! Stitched AES-GCM on 128-bit registers with AES-NI and PCLMULQDQ, for CPUs without VAES.
//!
//! A batch is [`BATCH_BLOCKS`] counter blocks, one per xmm register: eight independent AES
//! chains, enough to keep `aesenc` (latency about 4 cycles, two per cycle on recent cores)
//! busy. Between the AES rounds of a batch the loop multiplies the eight blocks of a batch of
//! ciphertext by H^8..H^1 (Karatsuba, three `pclmulqdq` each) and sums the products
//! unreduced, so one reduction serves eight blocks (aggregated reduction); the arithmetic is
//! that of `ghash::x86_pclmul`, whose helpers this module reuses. As in the VAES-512 kernel,
//! encryption hashes the batch [`ENCRYPT_HASH_LAG`] back (its ciphertext is already written)
//! and the last ones after the loop; decryption hashes the batch it decrypts.
//!
//! The counter is kept byte-reversed, so a step is one `paddd` on its low 32-bit word; the
//! caller guarantees that word does not wrap within a call.
//!
//! The loop is `stitched::stitched_loop`, shared with `vaes256`; this module gives it the
//! operations on one block a register.

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use crate::ghash::x86_pclmul::{add, product, reduce, with_halves_sum};
use crate::ghash::POWERS;

use super::stitched::{Power, ENCRYPT_HASH_LAG};
use super::Text;

/// Blocks per batch: one xmm register each, one GHASH reduction.
pub(super) const BATCH_BLOCKS: usize = 8;
/// Bytes per batch.
pub(super) const BATCH_BYTES: usize = 16 * BATCH_BLOCKS;

// AES-128's 9 middle rounds carry the eight products of a batch.
const _: () = assert!(BATCH_BLOCKS == 8 && BATCH_BLOCKS <= POWERS);

/// Whether this CPU has every feature [`process`] enables.
pub(super) fn is_available() -> bool {
    is_x86_feature_detected!("aes")
        && is_x86_feature_detected!("pclmulqdq")
        && is_x86_feature_detected!("ssse3")
        && is_x86_feature_detected!("sse4.1")
}

/// One block a register.
type Vector = __m128i;
/// Registers per batch: one block each.
const VECTORS: usize = BATCH_BLOCKS;

super::stitched::stitched_loop!("aes,pclmulqdq,ssse3,sse4.1");

#[inline]
#[target_feature(enable = "sse2")]
fn widen_key(key: __m128i) -> Vector {
    key
}

/// H^8..H^1, the last entries of the table.
#[inline]
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
fn batch_powers(powers: &[u128; POWERS]) -> [Power<Vector>; VECTORS] {
    core::array::from_fn(|block| {
        // SAFETY: a `u128` is 16 readable bytes; `loadu` has no alignment requirement.
        let value = unsafe {
            _mm_loadu_si128((&powers[POWERS - BATCH_BLOCKS + block] as *const u128).cast())
        };
        with_halves_sum(value)
    })
}

#[inline]
#[target_feature(enable = "ssse3")]
fn byte_reverse() -> Vector {
    _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
}

#[inline]
#[target_feature(enable = "ssse3")]
fn first_counters(counter: &[u8; 16], reverse: Vector) -> Vector {
    // SAFETY: `counter` is a 16-byte array; `loadu` has no alignment requirement.
    _mm_shuffle_epi8(unsafe { _mm_loadu_si128(counter.as_ptr().cast()) }, reverse)
}

#[inline]
#[target_feature(enable = "sse2")]
fn with_state(data: Vector, state: __m128i) -> Vector {
    _mm_xor_si128(data, state)
}

super::stitched::register_operations! {
    features: "aes,pclmulqdq,ssse3,sse4.1",
    load: _mm_loadu_si128,
    store: _mm_storeu_si128,
    xor: _mm_xor_si128,
    shuffle: _mm_shuffle_epi8,
    add_epi32: _mm_add_epi32,
    counter_step: _mm_set_epi32(0, 0, 0, 1),
    aes_round: _mm_aesenc_si128,
    aes_last_round: _mm_aesenclast_si128,
}

super::stitched::keep_round_order!(xmm_reg, "sse2");
