//! AES-GCM on one core through `GcmKey::process_range`, once per GCM kernel this CPU has
//! (the stitched VAES-512, VAES-256 and AES-NI kernels and the two-pass path: CTR then GHASH
//! per 4 KiB piece), with AES-CTR alone for scale, in the same run so clock and load are
//! shared. The kernels are measured interleaved: each of the timed rounds runs every kernel
//! once, and each figure is the median of its rounds.
//!
//! Run with `cargo run --release -p parcrypt-modes --example gcm_stitched_speed [SIZE_MIB]`
//! (the largest size, 64 MiB by default).

// An example prints its measurements.
#![allow(clippy::disallowed_macros)]

use std::time::Instant;

use parcrypt_ciphers::{new_cipher, Algorithm, BlockCipher, Implementation};
use parcrypt_modes::gcm::{GcmKernel, GcmKey};
use parcrypt_modes::Direction;

const ROUNDS: usize = 9;

fn main() {
    let largest_mib: usize = std::env::args()
        .nth(1)
        .and_then(|text| text.parse().ok())
        .unwrap_or(64);
    let kernels = GcmKernel::available();
    println!(
        "GB/s, one core, median of {ROUNDS} interleaved rounds; kernels: {}",
        kernels
            .iter()
            .map(|kernel| kernel.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (algorithm, key_length) in [(Algorithm::Aes128, 16), (Algorithm::Aes256, 32)] {
        let key = vec![0x5Au8; key_length];
        let cipher = new_cipher(algorithm, Implementation::Fast, &key).expect("valid key");
        let cipher = cipher.as_ref();
        let base = GcmKey::new(cipher).expect("AES");
        let keys: Vec<GcmKey> = kernels
            .iter()
            .map(|kernel| {
                let mut key = base.clone();
                assert_eq!(key.set_kernel(*kernel), *kernel);
                key
            })
            .collect();
        for size in [16 << 10, 1 << 20, largest_mib << 20] {
            let mut data = vec![1u8; size];
            // Variant 0 is CTR, then every kernel encrypting, then every kernel decrypting.
            let directions = [Direction::Encrypt, Direction::Decrypt];
            let gbps = rates(&mut data, 1 + 2 * keys.len(), |which, data| {
                if which == 0 {
                    cipher.ctr32_xor(&[0x42; 16], data);
                } else {
                    let direction = directions[(which - 1) / keys.len()];
                    run(&keys[(which - 1) % keys.len()], cipher, direction, data);
                }
            });
            let mut line = format!("{algorithm} {:>7} KiB  ctr {:6.2}", size >> 10, gbps[0]);
            for (direction, rates) in directions.iter().zip(gbps[1..].chunks(keys.len())) {
                line += &format!("  | {direction:?}");
                for (kernel, gbps) in kernels.iter().zip(rates) {
                    line += &format!(" {kernel} {gbps:6.2}");
                }
            }
            println!("{line}");
        }
    }
}

fn run(key: &GcmKey, cipher: &dyn BlockCipher, direction: Direction, data: &mut [u8]) {
    let message = key.message_with_nonce(cipher, &[7; 12]);
    std::hint::black_box(key.process_range(&message, cipher, direction, 0, data));
}

/// Median GB/s of each of `count` variants of `run` (told which by its first argument) over
/// `data`, timed in interleaved rounds after a warm-up.
fn rates(data: &mut [u8], count: usize, mut run: impl FnMut(usize, &mut [u8])) -> Vec<f64> {
    let size = data.len();
    let repeats = ((256 << 20) / size).clamp(1, 4096);
    for which in 0..count {
        run(which, data);
    }
    let mut samples = vec![Vec::with_capacity(ROUNDS); count];
    for _ in 0..ROUNDS {
        for (which, samples) in samples.iter_mut().enumerate() {
            let start = Instant::now();
            for _ in 0..repeats {
                run(which, data);
            }
            samples.push((size * repeats) as f64 / start.elapsed().as_secs_f64() / 1e9);
        }
    }
    samples
        .into_iter()
        .map(|mut rates| {
            rates.sort_by(f64::total_cmp);
            rates[rates.len() / 2]
        })
        .collect()
}
