//! Fused AES-CTR on 512-bit VAES: four blocks per zmm register, counters kept in registers,
//! the data read and written once.
//!
//! Counters live as byte-reversed blocks, so the big-endian low 32-bit word of each block is
//! the lowest little-endian dword of its 128-bit lane and stepping is one `vpaddd`; a
//! `vpshufb` turns them back into big-endian blocks per use. The caller guarantees the low
//! word does not wrap, so no carry into the upper 96 bits is ever needed.
//!
//! The main loop keeps [`VECTORS_PER_STEP`] independent zmm chains in flight, enough to cover
//! the latency of `vaesenc` at two per cycle; every round key is broadcast to all four lanes
//! once per call and stays in a register (11 to 15 of the 32 zmm registers).

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use super::ecb_vaes512::{
    broadcast_round_keys, keep_round_order, STEP_BYTES, VECTORS_PER_STEP, VECTOR_BYTES,
};
use super::fast::MAX_ROUND_KEYS;

/// XORs the CTR keystream starting at `counter` into the `len` bytes at `input` and writes
/// the result at `output`, in one pass, with the first `ROUNDS + 1` FIPS-197 round keys; the
/// contract is [`crate::BlockCipher::ctr32_xor`]'s (in place when `output == input`) and
/// [`crate::BlockCipher::ctr32_xor_into`]'s.
///
/// # Safety
/// The CPU must support AES-NI, VAES, AVX-512F and AVX-512BW. `input` must be valid for
/// reads and `output` for writes of `len` bytes, nothing else may access them during the
/// call, and `output` must be `input` itself or a region disjoint from it.
#[target_feature(enable = "aes,vaes,avx512f,avx512bw")]
pub(super) unsafe fn ctr32_xor<const ROUNDS: usize>(
    round_keys: &[[u8; 16]; MAX_ROUND_KEYS],
    counter: &[u8; 16],
    input: *const u8,
    output: *mut u8,
    len: usize,
) {
    let keys = broadcast_round_keys::<ROUNDS>(round_keys);
    let address = output as usize;
    if !streams_output(input, output, len) || !address.is_multiple_of(16) {
        // SAFETY: the caller's guarantees are the body's.
        unsafe { ctr32_xor_body::<ROUNDS, false>(&keys, counter, input, output, len) };
        return;
    }
    // Whole blocks up to the output's next 64-byte boundary with ordinary stores, the rest
    // with streaming ones (which need that alignment), from the counter that far on.
    let head = (64 - address % 64) % 64;
    // SAFETY: `head < 64 <= len`: the first `head` bytes of both regions.
    unsafe { ctr32_xor_body::<ROUNDS, false>(&keys, counter, input, output, head) };
    let mut rest_counter = *counter;
    let low = u32::from_be_bytes(rest_counter[12..].try_into().expect("four bytes"));
    rest_counter[12..].copy_from_slice(&low.wrapping_add((head / 16) as u32).to_be_bytes());
    // SAFETY: the remaining `len - head` bytes of both regions; `output + head` is 64-byte
    // aligned; the caller keeps the low counter word from wrapping over the whole `len`.
    unsafe {
        ctr32_xor_body::<ROUNDS, true>(
            &keys,
            &rest_counter,
            input.add(head),
            output.add(head),
            len - head,
        );
        _mm_sfence();
    }
}

/// Out of place, kernel calls of at least this many bytes write their output with streaming
/// (non-temporal) stores, which skip reading each output line into the cache before
/// overwriting it: a third less memory traffic when neither buffer fits in the cache. On the
/// 2-core Zen 5 VM, AES-128-CTR from one 256 MiB buffer into another ran 1.3x faster on one
/// thread (19 to 25 GB/s) and on two; at 4 MiB (in the cache) streaming was slower, at 8 MiB
/// even. The kernel sees one work item, so a job split over threads streams only where its
/// items are this long. In place, the line is in the cache already: nothing to gain.
pub const STREAM_FROM_BYTES: usize = 8 << 20;

/// Whether a kernel call writing `len` bytes from `input` to `output` should use streaming
/// stores, alignment aside: the regions are apart, the call is at least
/// [`STREAM_FROM_BYTES`] long, and streaming stores are allowed
/// ([`crate::aes::set_streaming_stores`], on unless turned off, for comparisons). The one
/// rule of this CTR kernel and the stitched AES-GCM kernel.
pub fn streams_output(input: *const u8, output: *const u8, len: usize) -> bool {
    len >= STREAM_FROM_BYTES && input != output && crate::aes::streaming_stores()
}

/// The kernel over `len` bytes; with `STREAM`, `output` is 64-byte aligned and the main
/// loop writes with streaming stores (the caller fences after).
#[target_feature(enable = "aes,vaes,avx512f,avx512bw")]
unsafe fn ctr32_xor_body<const ROUNDS: usize, const STREAM: bool>(
    keys: &[__m512i; MAX_ROUND_KEYS],
    counter: &[u8; 16],
    input: *const u8,
    output: *mut u8,
    len: usize,
) {
    let keys = *keys;
    let mut counters = Vaes512Counters::new(counter);

    let steps = len / STEP_BYTES;
    for step in 0..steps {
        let mut blocks = [_mm512_setzero_si512(); VECTORS_PER_STEP];
        for block in &mut blocks {
            *block = _mm512_xor_si512(counters.next_four(), keys[0]);
        }
        for key in &keys[1..ROUNDS] {
            for block in &mut blocks {
                *block = _mm512_aesenc_epi128(*block, *key);
            }
            keep_round_order(&mut blocks);
        }
        // The last round ends with a key XOR, so XORing the data into that key instead
        // takes the data XOR off the end of each chain.
        for (vector, block) in blocks.iter().enumerate() {
            let at = step * STEP_BYTES + vector * VECTOR_BYTES;
            // SAFETY: `at + 64 <= steps * STEP_BYTES <= len`, so the 64 bytes lie within
            // both regions; each vector is read before it is written (in place, that is
            // the only access to it), and `loadu`/`storeu` need no alignment.
            unsafe {
                let data = _mm512_loadu_si512(input.add(at).cast());
                let last_key = _mm512_xor_si512(keys[ROUNDS], data);
                let result = _mm512_aesenclast_epi128(*block, last_key);
                if STREAM {
                    _mm512_stream_si512(output.add(at).cast(), result);
                } else {
                    _mm512_storeu_si512(output.add(at).cast(), result);
                }
            }
        }
    }

    let mut at = steps * STEP_BYTES;
    while len - at >= VECTOR_BYTES {
        let keystream_input = counters.next_four();
        // SAFETY: `at + 64 <= len`: the 64 bytes lie within both regions, read then
        // written; no alignment needed.
        unsafe {
            let data = _mm512_loadu_si512(input.add(at).cast());
            let result = encrypt_xor::<ROUNDS>(&keys, keystream_input, data);
            _mm512_storeu_si512(output.add(at).cast(), result);
        }
        at += VECTOR_BYTES;
    }

    let partial = len - at;
    if partial != 0 {
        // Up to 63 bytes: whole blocks and the front of one more, all through byte masks.
        let mask: __mmask64 = (1u64 << partial) - 1;
        let keystream_input = counters.next_four();
        // SAFETY: `mask` selects exactly the `partial` bytes from `at` to `len`; AVX-512
        // masked loads and stores do not touch (or fault on) the bytes they mask off.
        unsafe {
            let data = _mm512_maskz_loadu_epi8(mask, input.add(at).cast());
            let result = encrypt_xor::<ROUNDS>(&keys, keystream_input, data);
            _mm512_mask_storeu_epi8(output.add(at).cast(), mask, result);
        }
    }
}

/// The counter blocks of a 512-bit VAES CTR kernel, four per zmm register, from a first
/// counter block whose big-endian low 32-bit word the caller keeps from wrapping.
///
/// The counters are held byte-reversed per 128-bit lane, so the block's big-endian low word
/// is the lane's lowest little-endian dword and a step of four blocks is one `vpaddd`;
/// [`Vaes512Counters::next_four`] turns them back into blocks with one `vpshufb`. Shared by
/// the CTR kernel here and the stitched AES-GCM kernel of `parcrypt-modes`.
#[derive(Clone, Copy, Debug)]
pub struct Vaes512Counters {
    /// The next four counters, byte-reversed per lane.
    next: __m512i,
    /// The per-lane byte reversal (byte j of a lane takes byte 15 - j).
    reverse: __m512i,
    /// Four in the low dword of every lane.
    four_blocks: __m512i,
}

impl Vaes512Counters {
    /// Counters from `counter` on: lane i of the first register is `counter + i`.
    ///
    /// # Safety
    /// Safe to call from code compiled with AVX-512F and AVX-512BW enabled; anywhere else the
    /// caller must make sure the CPU has both.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    pub fn new(counter: &[u8; 16]) -> Self {
        let reverse_lane = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        // SAFETY: `counter` is a 16-byte array; `loadu` has no alignment requirement.
        let first = _mm_shuffle_epi8(
            unsafe { _mm_loadu_si128(counter.as_ptr().cast()) },
            reverse_lane,
        );
        Self {
            next: _mm512_add_epi32(
                _mm512_broadcast_i32x4(first),
                _mm512_set_epi32(0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0),
            ),
            reverse: _mm512_broadcast_i32x4(reverse_lane),
            four_blocks: _mm512_set_epi32(0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4),
        }
    }

    /// The next `4 * N` counter blocks (as the bytes AES encrypts), four a register, stepping
    /// past them.
    ///
    /// When the last byte of the block does not carry within the batch (all but about one
    /// batch in `256 / (4 * N)`), the blocks are made big-endian directly: one `vpshufb` of
    /// the first counter and one `vpaddd` of a constant per register that adds to that byte
    /// alone, instead of one `vpshufb` per register. Otherwise they are made as
    /// [`Vaes512Counters::next_four`] does.
    ///
    /// # Safety
    /// Safe to call from code compiled with AVX-512F and AVX-512BW enabled; anywhere else the
    /// caller must make sure the CPU has both.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    pub fn next_batch<const N: usize>(&mut self) -> [__m512i; N] {
        const { assert!(N >= 1 && 4 * N <= 256) };
        let last_byte = _mm_cvtsi128_si32(_mm512_castsi512_si128(self.next)) as u8;
        if usize::from(last_byte) + 4 * N <= 256 {
            let first = _mm512_shuffle_epi8(self.next, self.reverse);
            // `first` holds the next four blocks already (lane i is counter + i); register r
            // adds 4r to byte 15 of every lane: the top byte of each lane's dword 3.
            let blocks = core::array::from_fn(|register| {
                let step = ((4 * register) as i32) << 24;
                _mm512_add_epi32(
                    first,
                    _mm512_set_epi32(step, 0, 0, 0, step, 0, 0, 0, step, 0, 0, 0, step, 0, 0, 0),
                )
            });
            let advance = _mm512_set_epi32(
                0,
                0,
                0,
                4 * N as i32,
                0,
                0,
                0,
                4 * N as i32,
                0,
                0,
                0,
                4 * N as i32,
                0,
                0,
                0,
                4 * N as i32,
            );
            self.next = _mm512_add_epi32(self.next, advance);
            blocks
        } else {
            core::array::from_fn(|_| self.next_four())
        }
    }

    /// The next four counter blocks (as the bytes AES encrypts), stepping past them.
    ///
    /// # Safety
    /// Safe to call from code compiled with AVX-512F and AVX-512BW enabled; anywhere else the
    /// caller must make sure the CPU has both.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    pub fn next_four(&mut self) -> __m512i {
        let blocks = _mm512_shuffle_epi8(self.next, self.reverse);
        self.next = _mm512_add_epi32(self.next, self.four_blocks);
        blocks
    }
}

encrypt_xor! {
    features: "aes,vaes,avx512f,avx512bw",
    vector: __m512i,
    xor: _mm512_xor_si512,
    aes_round: _mm512_aesenc_epi128,
    aes_last_round: _mm512_aesenclast_epi128,
}

#[cfg(test)]
// Tests say on stderr what this machine could not run; libtest shows it.
#[allow(clippy::disallowed_macros)]
pub(super) mod tests {
    use rand::Rng;

    use crate::aes::fast::{CtrPath, FastAes};
    use crate::aes::kernel_tests::{
        agrees_with_generic_ctr, generic_ctr32_xor, matches_sp800_38a, path_tests,
    };
    use crate::test_vectors::assert_same_bytes;

    /// `next_batch` (big-endian fast path and byte-reversed fallback) gives the same blocks as
    /// `next_four`, from every last counter byte, over batches that do and do not carry.
    #[test]
    fn vaes512_counter_batches_match_single_steps() {
        use core::arch::x86_64::__m512i;

        use super::Vaes512Counters;

        if !(std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw"))
        {
            eprintln!("Vaes512Counters: AVX-512 not available on this CPU; skipped");
            return;
        }
        fn bytes(vector: __m512i) -> [u8; 64] {
            // SAFETY: `__m512i` and `[u8; 64]` have the same size, and every bit pattern is
            // a valid byte array.
            unsafe { core::mem::transmute(vector) }
        }
        #[target_feature(enable = "avx512f,avx512bw")]
        fn compare<const N: usize>(counter: &[u8; 16]) {
            let mut batched = Vaes512Counters::new(counter);
            let mut single = Vaes512Counters::new(counter);
            for batch in 0..20 {
                let blocks = batched.next_batch::<N>();
                for (register, block) in blocks.iter().enumerate() {
                    assert_eq!(
                        bytes(*block),
                        bytes(single.next_four()),
                        "counter {}, batch {batch}, register {register}",
                        hex::encode(counter)
                    );
                }
            }
        }
        for last in 0..=255u8 {
            // Low word far from wrapping: only the last byte carries.
            let mut counter = [0xA5u8; 16];
            counter[12..].copy_from_slice(&[0, 0x12, 0x34, last]);
            // SAFETY: the features were checked above.
            unsafe {
                compare::<8>(&counter);
                compare::<12>(&counter);
                compare::<1>(&counter);
            }
        }
    }

    path_tests! {
        vaes512_agrees_with_generic_ctr: agrees_with_generic_ctr(CtrPath::Vaes512),
        vaes512_matches_sp800_38a: matches_sp800_38a(CtrPath::Vaes512),
    }

    /// Outputs long enough for streaming stores, at every 16-byte offset from a 64-byte
    /// boundary (and at an odd one, which keeps ordinary stores): the same bytes as the
    /// generic path, the input untouched, nothing written around the output, with the last
    /// block's counter word at 0xFFFFFFFF so that the step past the aligned head is checked
    /// right up to the wrap.
    #[test]
    fn vaes512_streaming_stores_match_the_generic_path() {
        use super::STREAM_FROM_BYTES;

        let mut rng = rand::rng();
        let mut input = vec![0u8; STREAM_FROM_BYTES + 4096];
        rng.fill_bytes(&mut input);
        const GUARD: usize = 128;
        for (case, (key_size, extra, offset)) in [
            (16, 0, 0),
            (32, 5, 16),
            (24, 1000, 32),
            (16, 4096, 48),
            (32, 777, 8),
            (16, 63, 16),
        ]
        .into_iter()
        .enumerate()
        {
            let len = STREAM_FROM_BYTES + extra;
            let mut key = vec![0u8; key_size];
            rng.fill_bytes(&mut key);
            let cipher = FastAes::new(&key);
            let mut counter = [0u8; 16];
            rng.fill_bytes(&mut counter);
            let low = (1u64 << 32) - len.div_ceil(16) as u64;
            counter[12..].copy_from_slice(&(low as u32).to_be_bytes());

            let source = &input[..len];
            let mut expected = source.to_vec();
            generic_ctr32_xor(&cipher, &counter, &mut expected);
            let mut buffer = vec![0xA5u8; len + 2 * GUARD + 64];
            let start = GUARD + (64 - buffer.as_ptr() as usize % 64) % 64 + offset;
            let ran = cipher.ctr32_xor_into_with(
                CtrPath::Vaes512,
                &counter,
                source,
                &mut buffer[start..start + len],
            );
            if !ran {
                eprintln!("Vaes512 kernel not available on this CPU; skipped");
                return;
            }
            assert_same_bytes(
                &buffer[start..start + len],
                &expected,
                format_args!("case {case}: {len} bytes at offset {offset}"),
            );
            assert!(
                buffer[..start].iter().all(|&byte| byte == 0xA5)
                    && buffer[start + len..].iter().all(|&byte| byte == 0xA5),
                "case {case}: bytes written around the output"
            );
            assert_eq!(source, &input[..len], "case {case}: the input was changed");
        }
    }
}
