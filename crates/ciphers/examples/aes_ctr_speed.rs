//! AES-CTR on one core: our fused kernel against `openssl speed`, measured in the same run so
//! that clock and load conditions are shared.
//!
//! Run with `cargo run --release -p parcrypt-ciphers --example aes_ctr_speed`.
//!
//! For each key size it runs `openssl speed -evp aes-N-ctr -bytes 16384 -seconds 1 -mr`, then
//! `BlockCipher::ctr32_xor` over a 16 KiB buffer (stays in L1/L2, as OpenSSL's does) and a
//! 16 MiB one (streams through memory), and, for scale, the unfused path the mode would take
//! without a kernel (counter blocks written out, `encrypt_blocks`, XOR). Each figure is the
//! median of several timed runs after a warm-up.

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use parcrypt_ciphers::aes::FastAes;
use parcrypt_ciphers::BlockCipher;

const RUNS: usize = 9;
const RUN_TIME: Duration = Duration::from_millis(200);
const OPENSSL_BLOCK: usize = 16 * 1024;

fn main() {
    println!("CPU: {}", parcrypt_ciphers::cpu_features());
    for (name, key_length) in [("aes-128-ctr", 16), ("aes-256-ctr", 32)] {
        let key: Vec<u8> = (0..key_length as u8)
            .map(|byte| byte.wrapping_mul(37) ^ 0x5A)
            .collect();
        let cipher = FastAes::new(&key);
        let openssl = openssl_bytes_per_second(name);

        let fused_small = measure(OPENSSL_BLOCK, |data| fused(&cipher, data));
        let fused_large = measure(16 << 20, |data| fused(&cipher, data));
        let unfused_small = measure(OPENSSL_BLOCK, |data| unfused(&cipher, data));

        println!("\n{name}");
        match openssl {
            Some(rate) => println!("  openssl speed, 16 KiB         {:7.2} GB/s", rate / 1e9),
            None => println!("  openssl speed                 not available"),
        }
        report("fused kernel, 16 KiB", fused_small, openssl);
        report("fused kernel, 16 MiB", fused_large, openssl);
        report("unfused (aes crate), 16 KiB", unfused_small, openssl);
    }
}

/// Bytes per second over the timed runs.
struct Rate {
    median: f64,
    /// The fastest run: on a shared machine the one least disturbed by other work.
    best: f64,
}

fn report(label: &str, rate: Rate, openssl: Option<f64>) {
    let ratio = openssl
        .map(|openssl| format!("  {:5.2}x openssl", rate.median / openssl))
        .unwrap_or_default();
    println!(
        "  {label:<29} {:7.2} GB/s (best {:6.2}){ratio}",
        rate.median / 1e9,
        rate.best / 1e9
    );
}

fn fused(cipher: &FastAes, data: &mut [u8]) {
    let counter = [0x42u8; 16];
    assert!(
        cipher.ctr32_xor(&counter, data),
        "no fused CTR kernel on this CPU"
    );
}

/// What `parcrypt_modes::ctr::apply` does when a cipher has no fused path.
fn unfused(cipher: &FastAes, data: &mut [u8]) {
    let mut keystream = [0u8; 4096];
    let mut counter = u128::from_be_bytes([0x42u8; 16]);
    for piece in data.chunks_mut(keystream.len()) {
        let keystream = &mut keystream[..piece.len().next_multiple_of(16)];
        for block in keystream.chunks_exact_mut(16) {
            block.copy_from_slice(&counter.to_be_bytes());
            counter = counter.wrapping_add(1);
        }
        cipher.encrypt_blocks(keystream);
        for (byte, key_byte) in piece.iter_mut().zip(keystream.iter()) {
            *byte ^= key_byte;
        }
    }
}

/// Rate of `work` over a pre-touched buffer of `size` bytes, from [`RUNS`] runs of at least
/// [`RUN_TIME`] each after one warm-up run.
fn measure(size: usize, mut work: impl FnMut(&mut [u8])) -> Rate {
    let mut buffer = vec![0x17u8; size];
    // Clock reads between calls cost as much as a few hundred bytes of CTR: read it once per
    // batch of at least 1 MiB.
    let calls_per_check = (1usize << 20).div_ceil(size);
    let mut one_run = || {
        let start = Instant::now();
        let mut bytes = 0usize;
        while start.elapsed() < RUN_TIME {
            for _ in 0..calls_per_check {
                work(black_box(&mut buffer));
            }
            bytes += size * calls_per_check;
        }
        bytes as f64 / start.elapsed().as_secs_f64()
    };
    one_run();
    let mut rates: Vec<f64> = (0..RUNS).map(|_| one_run()).collect();
    rates.sort_by(f64::total_cmp);
    Rate {
        median: rates[RUNS / 2],
        best: rates[RUNS - 1],
    }
}

/// OpenSSL's figure for `cipher` over 16 KiB buffers, from the `+F:` line of its
/// machine-readable output (`+F:index:name:bytes-per-second`).
fn openssl_bytes_per_second(cipher: &str) -> Option<f64> {
    let bytes = OPENSSL_BLOCK.to_string();
    let output = Command::new("openssl")
        .args([
            "speed", "-evp", cipher, "-bytes", &bytes, "-seconds", "1", "-mr",
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().rev().find(|line| line.starts_with("+F:"))?;
    line.rsplit(':').next()?.trim().parse().ok()
}
