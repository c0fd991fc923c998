//! GHASH throughput of each implementation on one core, next to RustCrypto's `ghash`.
//!
//! Run: `cargo run --release -p parcrypt-modes --example ghash_speed`
//!
//! A 64 KiB buffer (small enough to stay in L2, so this measures the arithmetic, not memory) is
//! hashed repeatedly; each figure is the median of several timed runs after a warm-up.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ghash::universal_hash::UniversalHash;
use parcrypt_modes::ghash::{GhashKey, Implementation};
use rand::rngs::StdRng;
use rand::{Rng, RngExt, SeedableRng};

const BUFFER_BYTES: usize = 64 * 1024;
const RUNS: usize = 11;
const RUN_TIME: Duration = Duration::from_millis(100);
const WARM_UP_TIME: Duration = Duration::from_millis(300);

/// Median and best GB/s of `RUNS` runs of `hash_buffer`, each repeated for about `RUN_TIME`.
/// The best run shows what the code can do when nothing else competes for the core.
fn measure(mut hash_buffer: impl FnMut()) -> (f64, f64) {
    let warm_up_start = Instant::now();
    let mut calls_in_warm_up = 0u64;
    while warm_up_start.elapsed() < WARM_UP_TIME {
        hash_buffer();
        calls_in_warm_up += 1;
    }
    let calls_per_run =
        (calls_in_warm_up * RUN_TIME.as_nanos() as u64 / WARM_UP_TIME.as_nanos() as u64).max(1);

    let mut rates: Vec<f64> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..calls_per_run {
                hash_buffer();
            }
            (calls_per_run * BUFFER_BYTES as u64) as f64 / start.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    (rates[RUNS / 2], rates[RUNS - 1])
}

fn main() {
    let mut rng = StdRng::seed_from_u64(1);
    let mut buffer = vec![0u8; BUFFER_BYTES];
    rng.fill_bytes(&mut buffer);
    let h: [u8; 16] = rng.random();

    println!(
        "GHASH over a {} KiB buffer, median of {RUNS} runs, one thread",
        BUFFER_BYTES / 1024
    );
    println!("default implementation here: {}", Implementation::fastest());
    for &implementation in Implementation::ALL {
        let Some(key) = GhashKey::with_implementation(&h, implementation) else {
            println!("{:>24}: not available on this CPU", implementation.name());
            continue;
        };
        let mut state = 0u128;
        let (median, best) = measure(|| key.update(black_box(&mut state), black_box(&buffer)));
        black_box(state);
        let name = format!("parcrypt {}", implementation.name());
        println!("{name:>24}: {median:6.2} GB/s (best run {best:.2})");
    }

    let mut reference = ghash::GHash::new(&h.into());
    let (median, best) = measure(|| reference.update_padded(black_box(&buffer)));
    black_box(reference.finalize());
    println!(
        "{:>24}: {median:6.2} GB/s (best run {best:.2})",
        "RustCrypto ghash 0.6"
    );

    // GCM may hash in pieces between batches of AES: the cost of many short calls.
    let key = GhashKey::new(&h);
    for piece in [64, 256, 512, 4096] {
        let mut state = 0u128;
        let (median, best) = measure(|| {
            for chunk in buffer.chunks_exact(piece) {
                key.update(black_box(&mut state), black_box(chunk));
            }
        });
        black_box(state);
        let name = format!("{} in {piece} B pieces", key.implementation());
        println!("{name:>24}: {median:6.2} GB/s (best run {best:.2})");
    }

    // Joining partial sums: the cost per call of mul_h_pow for a 1 GiB range.
    let calls = 100_000u32;
    let start = Instant::now();
    let mut x = 1u128;
    for _ in 0..calls {
        x = key.mul_h_pow(black_box(x), black_box(1 << 26));
    }
    black_box(x);
    let nanoseconds = start.elapsed().as_nanos() as f64 / f64::from(calls);
    println!(
        "mul_h_pow(x, 2^26) with {}: {nanoseconds:.0} ns per call",
        key.implementation()
    );
}
