//! Tuning aid for the VAES-512 stitched AES-GCM kernel: stitched encryption and decryption
//! through `GcmKey::process_range` beside AES-CTR alone, AES-128 and AES-256, at 16 KiB,
//! 1 MiB and 256 MiB (or the sizes in bytes given as arguments), measured in alternation.
//!
//! Run with `cargo run --release -p parcrypt-modes --example gcm512_tuning [SIZE...]`; each
//! figure is the median GB/s of 9 rounds, one timed pass of every variant per round.

// An example prints its measurements.
#![allow(clippy::disallowed_macros)]

use std::time::Instant;

/// Wall-clock time, or with `CLOCK=cpu` the time this thread spent on a CPU (from
/// `/proc/thread-self/schedstat`), which leaves out the time other work on a loaded machine
/// took the core away.
enum Clock {
    Wall(Instant),
    Cpu(u64),
}

impl Clock {
    fn now() -> Self {
        if std::env::var("CLOCK").is_ok_and(|clock| clock == "cpu") {
            Self::Cpu(on_cpu_nanoseconds())
        } else {
            Self::Wall(Instant::now())
        }
    }

    fn elapsed_seconds(&self) -> f64 {
        match self {
            Self::Wall(start) => start.elapsed().as_secs_f64(),
            Self::Cpu(start) => (on_cpu_nanoseconds() - start) as f64 / 1e9,
        }
    }
}

fn on_cpu_nanoseconds() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    text.split_whitespace()
        .next()
        .and_then(|field| field.parse().ok())
        .expect("a count of nanoseconds")
}

use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
use parcrypt_modes::gcm::GcmKey;
use parcrypt_modes::Direction;

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|size| size.parse().expect("a size in bytes"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![16 << 10, 1 << 20, 256 << 20]
    } else {
        sizes
    };
    let rounds: usize =
        std::env::var("ROUNDS").map_or(9, |rounds| rounds.parse().expect("a count"));
    for size in sizes {
        for (algorithm, key_length) in [(Algorithm::Aes128, 16), (Algorithm::Aes256, 32)] {
            let key = vec![0x5Au8; key_length];
            let cipher = new_cipher(algorithm, Implementation::Fast, &key).expect("valid key");
            let cipher = cipher.as_ref();
            let gcm = GcmKey::new(cipher).expect("AES");
            let message = gcm.message_with_nonce(cipher, &[7; 12]);
            let mut data = vec![1u8; size];
            // Passes per timed sample: about `WORK_MIB` (default 256) MiB of work.
            let work: usize =
                std::env::var("WORK_MIB").map_or(256, |mib| mib.parse().expect("a count"));
            let repeats = ((work << 20) / size).clamp(1, 1 << 14);
            let mut samples = [const { Vec::new() }; 3];
            for _ in 0..rounds {
                for (variant, samples) in samples.iter_mut().enumerate() {
                    let start = Clock::now();
                    for _ in 0..repeats {
                        match variant {
                            0 => {
                                cipher.ctr32_xor(&[0x42; 16], &mut data);
                            }
                            1 | 2 => {
                                let direction = if variant == 1 {
                                    Direction::Encrypt
                                } else {
                                    Direction::Decrypt
                                };
                                std::hint::black_box(
                                    gcm.process_range(&message, cipher, direction, 0, &mut data),
                                );
                            }
                            _ => unreachable!(),
                        }
                    }
                    samples.push((size * repeats) as f64 / start.elapsed_seconds() / 1e9);
                }
            }
            // The median, and the best run (the one least disturbed by other work).
            let figures = |samples: &mut Vec<f64>| {
                samples.sort_by(f64::total_cmp);
                format!(
                    "{:6.2} ({:6.2})",
                    samples[samples.len() / 2],
                    samples[samples.len() - 1]
                )
            };
            let [ctr, enc, dec] = samples.each_mut().map(figures);
            println!(
                "{algorithm} {:>7} KiB  ctr {ctr}  gcm enc {enc}  gcm dec {dec}  (GB/s median (best), kernel {})",
                size >> 10,
                gcm.kernel().name()
            );
        }
    }
}
