//! What keying AES costs: nanoseconds per `FastAes::new` (and drop, which wipes the keys), per
//! boxed `new_cipher`, and, for scale, per `aes` crate key schedule.
//!
//! Run with `cargo run --release -p parcrypt-ciphers --example aes_key_setup_speed`.
//!
//! parcrypt keys a cipher per message and per job, so on small messages this is a fixed cost
//! per job next to the bytes themselves. Each figure is the median over [`RUNS`] runs of
//! [`CALLS`] calls after a warm-up, with the best run alongside; the key goes through
//! `black_box` on the way in and the cipher on the way out, so neither the schedule nor the
//! wipe can be optimised away.

use std::hint::black_box;
use std::time::Instant;

use aes::cipher::KeyInit;
use parcrypt_ciphers::aes::FastAes;
use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};

const RUNS: usize = 15;
const CALLS: usize = 20_000;

fn main() {
    println!("CPU: {}", parcrypt_ciphers::cpu_features());
    println!("ns per call, median (best) of {RUNS} runs of {CALLS} calls\n");
    println!(
        "{:<9} {:>22} {:>22} {:>22}",
        "key", "FastAes::new + drop", "new_cipher + drop", "aes crate new + drop"
    );
    for (algorithm, key_length) in [
        (Algorithm::Aes128, 16),
        (Algorithm::Aes192, 24),
        (Algorithm::Aes256, 32),
    ] {
        let key: Vec<u8> = (0..key_length as u8)
            .map(|byte| byte.wrapping_mul(37) ^ 0x5A)
            .collect();
        let fast = nanoseconds_per_call(|| {
            black_box(FastAes::new(black_box(&key)));
        });
        let boxed = nanoseconds_per_call(|| {
            black_box(
                new_cipher(algorithm, Implementation::Fast, black_box(&key)).expect("valid key"),
            );
        });
        let crate_only = nanoseconds_per_call(|| match key_length {
            16 => {
                black_box(aes::Aes128::new_from_slice(black_box(&key)).expect("16-byte key"));
            }
            24 => {
                black_box(aes::Aes192::new_from_slice(black_box(&key)).expect("24-byte key"));
            }
            _ => {
                black_box(aes::Aes256::new_from_slice(black_box(&key)).expect("32-byte key"));
            }
        });
        println!(
            "{:<9} {:>22} {:>22} {:>22}",
            algorithm.name(),
            fast.to_string(),
            boxed.to_string(),
            crate_only.to_string()
        );
    }
}

/// Nanoseconds per call over the timed runs.
struct Figure {
    median: f64,
    /// The fastest run: on a shared machine the one least disturbed by other work.
    best: f64,
}

impl std::fmt::Display for Figure {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{:8.1} ({:7.1})", self.median, self.best)
    }
}

fn nanoseconds_per_call(mut call: impl FnMut()) -> Figure {
    let mut one_run = || {
        let start = Instant::now();
        for _ in 0..CALLS {
            call();
        }
        start.elapsed().as_secs_f64() * 1e9 / CALLS as f64
    };
    // Warm-up: caches, branch predictors, the feature-detection caches and the clock.
    one_run();
    let mut figures: Vec<f64> = (0..RUNS).map(|_| one_run()).collect();
    figures.sort_by(f64::total_cmp);
    Figure {
        median: figures[RUNS / 2],
        best: figures[0],
    }
}
