//! AES-CTR on one core: our fused kernel against `openssl speed`, measured in the same run so
//! that clock and load conditions are shared.
//!
//! Run with `cargo run --release -p parcrypt-ciphers --example aes_ctr_speed`; add
//! `-- --kernels FAMILY` to hold the kernel to that family, with `OPENSSL_ia32cap` set to hold
//! OpenSSL to the same features (see `aes_ecb_cbc_speed`).
//!
//! For each key size it runs `openssl speed -evp aes-N-ctr -bytes 16384 -seconds 1 -mr`, then
//! `BlockCipher::ctr32_xor` over a 16 KiB buffer (stays in L1/L2, as OpenSSL's does) and a
//! 16 MiB one (streams through memory), and, for scale, the unfused path the mode would take
//! without a kernel (counter blocks written out, `encrypt_blocks`, XOR). Each figure is the
//! median of several timed runs after a warm-up.

use parcrypt_ciphers::aes::FastAes;
use parcrypt_ciphers::BlockCipher;

#[path = "support/timing.rs"]
mod timing;

use timing::{kernel_ceiling, measure, openssl_bytes_per_second, Rate, OPENSSL_BLOCK};

fn main() {
    println!("CPU: {}", parcrypt_ciphers::cpu_features());
    let ceiling = kernel_ceiling();
    if let Some(family) = ceiling {
        println!("kernels: at most {family}");
    }
    for (name, key_length) in [("aes-128-ctr", 16), ("aes-256-ctr", 32)] {
        let key: Vec<u8> = (0..key_length as u8)
            .map(|byte| byte.wrapping_mul(37) ^ 0x5A)
            .collect();
        let cipher = FastAes::with_ceiling(&key, ceiling);
        let openssl = openssl_bytes_per_second(name, false);

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
