//! What one core can do for stitched AES-128-GCM with 512-bit VAES and VPCLMULQDQ, measured
//! beside the kernel itself: the least work a 512-byte batch needs, written as plainly as
//! possible (timing only; nothing it computes is GCM).
//!
//! - `aes`: CTR's work: eight vectors of fresh counters, ten AES-128 rounds, the data loaded,
//!   XORed (into the last round key) and stored.
//! - `clmul`: GHASH's work: the same 512 bytes loaded and byte-reversed, three carry-less
//!   multiplications a vector (Karatsuba) summed into three sums, two more for the reduction.
//! - `both`: the two in one loop, the multiplications of two vectors after every odd round
//!   (as `gcm/vaes512.rs` places them), with eleven round keys and eight power vectors as a
//!   real batch has; `both, one key and power` with a single register for all of them, the
//!   least any arrangement can need (the compiler orders the instructions in both).
//! - `kernel`: `GcmKey::process_range` encrypting the same 16 KiB again and again.
//!
//! The buffer is 16 KiB, in L1, so memory is out of the picture. If `both` takes about the
//! sum of `aes` and `clmul` rather than the larger of them, the core cannot overlap the two
//! kinds of work, and the kernel's rate is bounded near `both`, whatever its arrangement.
//!
//! Run with `cargo run --release -p parcrypt-modes --example gcm512_bound`; each figure is the
//! median of 9 rounds, one timed pass of every variant per round (about 64 MiB each).

// An example prints its measurements.
#![allow(clippy::disallowed_macros)]

#[cfg(target_arch = "x86_64")]
mod probe {
    use core::arch::x86_64::*;
    use std::time::Instant;

    use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
    use parcrypt_modes::gcm::GcmKey;
    use parcrypt_modes::Direction;

    /// Bytes in the rotating buffer: 32 batches, in L1.
    const BUFFER: usize = 16 << 10;
    /// Bytes a batch covers: eight 64-byte vectors.
    const BATCH: usize = 512;
    /// Work per timed pass.
    const PASS: usize = 64 << 20;

    pub fn run() {
        let available = is_x86_feature_detected!("aes")
            && is_x86_feature_detected!("vaes")
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("vpclmulqdq");
        if !available {
            println!("this CPU lacks VAES-512 or VPCLMULQDQ: nothing to measure");
            return;
        }
        let input: Vec<u8> = (0..BUFFER).map(|index| (index * 7) as u8).collect();
        let mut output = vec![0u8; BUFFER];
        let key = [0x5Au8; 16];
        let cipher = new_cipher(Algorithm::Aes128, Implementation::Fast, &key).expect("AES");
        let gcm = GcmKey::new(cipher.as_ref()).expect("AES");
        let message = gcm.message_with_nonce(cipher.as_ref(), &[7; 12]);
        let operands = Operands::new();
        let names = ["aes", "clmul", "both, one key and power", "both", "kernel"];
        let mut samples: [Vec<f64>; 5] = Default::default();
        for _ in 0..9 {
            for (variant, samples) in samples.iter_mut().enumerate() {
                let start = Instant::now();
                for _ in 0..PASS / BUFFER {
                    match variant {
                        // SAFETY: the features were detected above.
                        0 => unsafe {
                            batches::<true, false, true>(&input, &mut output, &operands)
                        },
                        // SAFETY: as above.
                        1 => unsafe {
                            batches::<false, true, true>(&input, &mut output, &operands)
                        },
                        // SAFETY: as above.
                        2 => unsafe {
                            batches::<true, true, false>(&input, &mut output, &operands)
                        },
                        // SAFETY: as above.
                        3 => unsafe { batches::<true, true, true>(&input, &mut output, &operands) },
                        _ => {
                            std::hint::black_box(gcm.process_range(
                                &message,
                                cipher.as_ref(),
                                Direction::Encrypt,
                                0,
                                &mut output,
                            ));
                        }
                    }
                }
                std::hint::black_box(&output);
                samples.push(start.elapsed().as_secs_f64());
            }
        }
        println!("per 512-byte batch, one core, 16 KiB in L1, median of 9 rounds:");
        for (name, samples) in names.iter().zip(samples.iter_mut()) {
            samples.sort_by(f64::total_cmp);
            let seconds = samples[samples.len() / 2];
            let nanoseconds = seconds * 1e9 / (PASS / BATCH) as f64;
            println!(
                "  {name:<24} {nanoseconds:6.2} ns  {:6.1} GB/s",
                PASS as f64 / seconds / 1e9
            );
        }
    }

    /// Eleven round keys and eight vectors of powers with their halves' sums (arbitrary
    /// values: only the count matters).
    struct Operands {
        keys: [__m512i; 11],
        powers: [[__m512i; 2]; 8],
    }

    impl Operands {
        fn new() -> Self {
            // SAFETY: `set1` needs only AVX-512F, which `run` checked before calling this.
            let vector = |value: usize| unsafe { _mm512_set1_epi32(value as i32 * 0x0101_0101) };
            Operands {
                keys: core::array::from_fn(|round| vector(round + 1)),
                powers: core::array::from_fn(|index| {
                    [vector(3 * index + 1), vector(5 * index + 2)]
                }),
            }
        }
    }

    /// One pass over `input` into `output`, batch by batch: with `AES` the CTR work, with
    /// `CLMUL` the GHASH work, stitched when both.
    ///
    /// # Safety
    /// The CPU must have AES, VAES, AVX-512F/BW and VPCLMULQDQ.
    #[target_feature(enable = "aes,vaes,avx512f,avx512bw,vpclmulqdq")]
    unsafe fn batches<const AES: bool, const CLMUL: bool, const DISTINCT: bool>(
        input: &[u8],
        output: &mut [u8],
        operands: &Operands,
    ) {
        assert_eq!(input.len(), output.len());
        let key = _mm512_set1_epi32(0x0505_0505);
        let reverse = _mm512_broadcast_i32x4(_mm_set_epi8(
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
        ));
        let one = _mm512_set1_epi32(1);
        // One register for every round key and power, or the eleven keys and sixteen power
        // vectors a real batch has.
        let round_key = |round: usize| if DISTINCT { operands.keys[round] } else { key };
        let power = |vector: usize, part: usize| {
            if DISTINCT {
                operands.powers[vector][part]
            } else {
                key
            }
        };
        let mut counter = _mm512_set1_epi32(9);
        let mut sums = [_mm512_setzero_si512(); 3];
        let mut reduced = _mm512_setzero_si512();
        for (source, target) in input
            .chunks_exact(BATCH)
            .zip(output.chunks_exact_mut(BATCH))
        {
            let load = |vector: usize| {
                // SAFETY: `source` is a whole batch and `vector < 8`; no alignment needed.
                unsafe { _mm512_loadu_si512(source.as_ptr().add(64 * vector).cast()) }
            };
            let mut blocks = [_mm512_setzero_si512(); 8];
            if AES {
                for block in &mut blocks {
                    counter = _mm512_add_epi32(counter, one);
                    *block = _mm512_xor_si512(counter, round_key(0));
                }
            }
            for round in 1..10 {
                if AES {
                    for block in &mut blocks {
                        *block = _mm512_aesenc_epi128(*block, round_key(round));
                    }
                }
                if CLMUL && round % 2 == 1 && round < 8 {
                    for vector in [round - 1, round] {
                        let data = _mm512_shuffle_epi8(load(vector), reverse);
                        let halves = _mm512_xor_si512(data, _mm512_shuffle_epi32::<0x4e>(data));
                        sums[0] =
                            _mm512_xor_si512(sums[0], _mm512_clmulepi64_epi128::<0x00>(data, key));
                        sums[1] = _mm512_xor_si512(
                            sums[1],
                            _mm512_clmulepi64_epi128::<0x00>(halves, power(vector, 1)),
                        );
                        sums[2] =
                            _mm512_xor_si512(sums[2], _mm512_clmulepi64_epi128::<0x11>(data, key));
                    }
                }
                if CLMUL && round == 8 {
                    let fold = _mm512_clmulepi64_epi128::<0x00>(sums[0], key);
                    let middle = _mm512_ternarylogic_epi64::<0x96>(sums[1], sums[2], fold);
                    reduced =
                        _mm512_xor_si512(reduced, _mm512_clmulepi64_epi128::<0x00>(middle, key));
                    sums = [_mm512_setzero_si512(); 3];
                }
            }
            if AES {
                for (vector, block) in blocks.iter().enumerate() {
                    let result = _mm512_aesenclast_epi128(
                        *block,
                        _mm512_xor_si512(round_key(10), load(vector)),
                    );
                    // SAFETY: `target` is a whole batch and `vector < 8`; no alignment needed.
                    unsafe {
                        _mm512_storeu_si512(target.as_mut_ptr().add(64 * vector).cast(), result)
                    };
                }
            }
        }
        std::hint::black_box((reduced, counter));
    }
}

fn main() {
    #[cfg(target_arch = "x86_64")]
    probe::run();
    #[cfg(not(target_arch = "x86_64"))]
    println!("an x86-64 probe: nothing to measure here");
}
