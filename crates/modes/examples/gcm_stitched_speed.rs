//! AES-GCM on one core through `GcmKey::process_range`: the stitched kernel against the
//! two-pass path (CTR then GHASH per 4 KiB piece), with AES-CTR alone for scale, in the same
//! run so clock and load are shared.
//!
//! Run with `cargo run --release -p parcrypt-modes --example gcm_stitched_speed`.
//! Each figure is the median of 15 timed runs after a warm-up.

// An example prints its measurements.
#![allow(clippy::disallowed_macros)]

use std::time::Instant;

use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
use parcrypt_modes::gcm::GcmKey;
use parcrypt_modes::Direction;

fn main() {
    for (algorithm, key_length) in [(Algorithm::Aes128, 16), (Algorithm::Aes256, 32)] {
        let key = vec![0x5Au8; key_length];
        let cipher = new_cipher(algorithm, Implementation::Fast, &key).expect("valid key");
        let cipher = cipher.as_ref();
        let mut stitched = GcmKey::new(cipher).expect("AES");
        let on = stitched.set_stitched(true);
        let mut two_pass = stitched.clone();
        two_pass.set_stitched(false);
        let message = stitched.message_with_nonce(cipher, &[7; 12]);
        for size in [16 << 10, 1 << 20, 64 << 20] {
            let ctr = rate(size, |data| {
                cipher.ctr32_xor(&[0x42; 16], data);
            });
            let mut line = format!("{algorithm} {:>6} KiB  ctr {ctr:6.2}", size >> 10);
            for direction in [Direction::Encrypt, Direction::Decrypt] {
                for (name, key) in [("two-pass", &two_pass), ("stitched", &stitched)] {
                    if name == "stitched" && !on {
                        continue;
                    }
                    let gbps = rate(size, |data| {
                        std::hint::black_box(
                            key.process_range(&message, cipher, direction, 0, data),
                        );
                    });
                    line += &format!("  {direction:?} {name} {gbps:6.2}");
                }
            }
            println!("{line}  (GB/s)");
        }
    }
}

/// Median GB/s of `run` over a buffer of `size` bytes.
fn rate(size: usize, mut run: impl FnMut(&mut [u8])) -> f64 {
    let mut data = vec![1u8; size];
    let repeats = ((256 << 20) / size).clamp(1, 4096);
    run(&mut data);
    let mut rates: Vec<f64> = (0..15)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..repeats {
                run(&mut data);
            }
            (size * repeats) as f64 / start.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}
