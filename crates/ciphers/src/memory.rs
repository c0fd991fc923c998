//! Passes over memory with no cipher in them: the floor that the kernels' rates are measured
//! against (the benchmark lab's `copy` rows). Each reads and writes the same bytes the way a
//! kernel does, so that a cipher's rate over the pass's rate, on the same buffers in the same
//! run, says how far the cipher is from what memory allows.
//!
//! - [`copy_into`]: one buffer into another, with streaming stores from
//!   [`crate::aes::STREAM_FROM_BYTES`] up, as the CTR and GCM kernels write (the widest the
//!   CPU has: 512-, 256- or 128-bit), else `copy_from_slice`. On the 2-core Zen 5 VM, 256 MiB
//!   with 512-bit streaming stores copied at about 25.5-26.8 GB/s, with 128-bit ones 21-23 and
//!   with glibc's `memcpy` 17.7-19.2 (a C probe, one thread).
//! - [`rewrite_in_place`]: every byte read and written back changed, as in-place encryption
//!   does.

/// Copies `input` into `output[..input.len()]` the way the kernels write their output out of
/// place: streaming stores for long copies (see the module documentation).
///
/// # Panics
/// If `output` is shorter than `input`.
pub fn copy_into(input: &[u8], output: &mut [u8]) {
    let output = &mut output[..input.len()];
    #[cfg(target_arch = "x86_64")]
    if crate::aes::streams_output(input.as_ptr(), output.as_ptr(), input.len()) {
        stream::copy(input, output);
        return;
    }
    output.copy_from_slice(input);
}

/// Reads every byte of `buffer` and writes it back changed (XOR `0x5a`), as encryption in
/// place reads and writes each line once. Twice restores the bytes. (A plain byte loop: the
/// compiler makes it full-width vector XORs.)
pub fn rewrite_in_place(buffer: &mut [u8]) {
    buffer.iter_mut().for_each(|byte| *byte ^= 0x5a);
}

#[cfg(target_arch = "x86_64")]
mod stream {
    use core::arch::x86_64::*;

    /// Streaming copy of `input` into `output` (the same length): the bytes before the
    /// output's first 64-byte boundary and after its last whole vector go the ordinary way.
    pub(super) fn copy(input: &[u8], output: &mut [u8]) {
        assert_eq!(input.len(), output.len());
        let head = output.as_ptr().align_offset(64).min(output.len());
        output[..head].copy_from_slice(&input[..head]);
        let (input, output) = (&input[head..], &mut output[head..]);
        let width = if is_x86_feature_detected!("avx512f") {
            64
        } else if is_x86_feature_detected!("avx") {
            32
        } else {
            16
        };
        let body = output.len() / width * width;
        // SAFETY: the feature each call enables was detected above (SSE2 is part of
        // x86_64); `input` and `output` are `body` bytes long at least and `output` is
        // 64-byte aligned (the head went above), so every store is aligned to its width.
        unsafe {
            match width {
                64 => copy_512(input.as_ptr(), output.as_mut_ptr(), body),
                32 => copy_256(input.as_ptr(), output.as_mut_ptr(), body),
                _ => copy_128(input.as_ptr(), output.as_mut_ptr(), body),
            }
            // Streaming stores are weakly ordered: visible before the caller goes on.
            _mm_sfence();
        }
        output[body..].copy_from_slice(&input[body..]);
    }

    /// One streaming copy loop per vector width: `$name(input, output, len)` copies `len`
    /// bytes (a multiple of `$width`) with `$load` and `$store`.
    macro_rules! stream_copy {
        ($name:ident, $features:literal, $width:literal, $load:ident, $store:ident) => {
            /// # Safety
            /// The CPU has the features enabled here; `len` (a multiple of the width)
            /// readable bytes at `input`, writable and width-aligned at `output`.
            #[target_feature(enable = $features)]
            unsafe fn $name(input: *const u8, output: *mut u8, len: usize) {
                for at in (0..len).step_by($width) {
                    // SAFETY: `at + width <= len`; the caller's guarantees; the load needs
                    // no alignment, the store has its width's.
                    unsafe { $store(output.add(at).cast(), $load(input.add(at).cast())) };
                }
            }
        };
    }

    stream_copy!(
        copy_512,
        "avx512f",
        64,
        _mm512_loadu_si512,
        _mm512_stream_si512
    );
    stream_copy!(copy_256, "avx", 32, _mm256_loadu_si256, _mm256_stream_si256);
    stream_copy!(copy_128, "sse2", 16, _mm_loadu_si128, _mm_stream_si128);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_exact_at_every_offset_and_length() {
        // Short copies, and streaming ones at 64-byte boundaries and off them.
        let long = crate::aes::STREAM_FROM_BYTES + 777;
        let input: Vec<u8> = (0..long + 64).map(|i| (i * 7 + i / 251) as u8).collect();
        let mut output = vec![0u8; long + 128];
        for (offset, length) in [
            (0, 0),
            (3, 1),
            (5, 100),
            (0, long),
            (17, long),
            (63, long - 9),
        ] {
            output.fill(0xee);
            copy_into(&input[offset..offset + length], &mut output[offset..]);
            assert_eq!(
                &output[offset..offset + length],
                &input[offset..offset + length]
            );
            assert!(output[..offset].iter().all(|&byte| byte == 0xee));
            assert!(output[offset + length..].iter().all(|&byte| byte == 0xee));
        }
    }

    #[test]
    fn rewriting_changes_every_byte_and_twice_restores_them() {
        for length in [0, 1, 7, 8, 9, 4096 + 3] {
            let original: Vec<u8> = (0..length).map(|i| i as u8).collect();
            let mut buffer = original.clone();
            rewrite_in_place(&mut buffer);
            assert!(buffer.iter().zip(&original).all(|(a, b)| a ^ b == 0x5a));
            rewrite_in_place(&mut buffer);
            assert_eq!(buffer, original);
        }
    }
}
