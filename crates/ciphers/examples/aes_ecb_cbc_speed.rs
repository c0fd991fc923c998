//! AES-ECB and AES-CBC on one core: our kernels against `openssl speed`, measured in the same
//! run so that clock and load conditions are shared.
//!
//! Run with `cargo run --release -p parcrypt-ciphers --example aes_ecb_cbc_speed`; add
//! `-- --kernels FAMILY` (`aes-ni`, `vaes-256`, ...) to hold our kernels to that family, as
//! `FastAes::with_ceiling` does, and set `OPENSSL_ia32cap` to hold OpenSSL to the same
//! features (on OpenSSL 3, `OPENSSL_ia32cap=":~0x600C0230000"` clears AVX-512F/DQ/IFMA/BW/VL,
//! VAES and VPCLMULQDQ from CPUID leaf 7; the child `openssl` inherits it).
//!
//! For AES-128 and AES-256 it runs `openssl speed -evp aes-N-ecb` and `aes-N-cbc` (encrypt,
//! and CBC with `-decrypt`) over 16 KiB buffers, then through `FastAes` on a 16 KiB buffer
//! (stays in L1/L2, as OpenSSL's does) and a 16 MiB one (streams through memory): ECB
//! encryption and decryption (`encrypt_blocks` / `decrypt_blocks`), CBC encryption
//! (`BlockCipher::cbc_encrypt`, the fused kernel), CBC decryption through the fused kernel
//! (`BlockCipher::cbc_decrypt`, what `parcrypt_modes::cbc::decrypt` calls first) and the
//! mode's fallback for ciphers without one (256-block `decrypt_blocks` batches, a saved copy,
//! the XOR).
//! For scale, the `aes` crate's own block functions on 16 KiB. Each figure is the median of
//! several timed runs after a warm-up, with the best run alongside.

use aes::cipher::{Array, BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};
use parcrypt_ciphers::aes::FastAes;
use parcrypt_ciphers::BlockCipher;

#[path = "support/timing.rs"]
mod timing;

use timing::{kernel_ceiling, measure, openssl_bytes_per_second, Rate, OPENSSL_BLOCK};

const LARGE: usize = 16 << 20;

fn main() {
    println!("CPU: {}", parcrypt_ciphers::cpu_features());
    let ceiling = kernel_ceiling();
    if let Some(family) = ceiling {
        println!("kernels: at most {family}");
    }
    for key_length in [16, 32] {
        let bits = key_length * 8;
        let key: Vec<u8> = (0..key_length as u8)
            .map(|byte| byte.wrapping_mul(37) ^ 0x5A)
            .collect();
        let cipher = FastAes::with_ceiling(&key, ceiling);
        let crate_cipher = CrateCipher::new(&key);

        println!("\naes-{bits}");
        let openssl_ecb = openssl_bytes_per_second(&format!("aes-{bits}-ecb"), false);
        let openssl_cbc = openssl_bytes_per_second(&format!("aes-{bits}-cbc"), false);
        let openssl_cbc_decrypt = openssl_bytes_per_second(&format!("aes-{bits}-cbc"), true);
        report_openssl(&format!("openssl aes-{bits}-ecb"), openssl_ecb);
        report_openssl(&format!("openssl aes-{bits}-cbc"), openssl_cbc);
        report_openssl(
            &format!("openssl aes-{bits}-cbc -decrypt"),
            openssl_cbc_decrypt,
        );

        for size in [OPENSSL_BLOCK, LARGE] {
            let label = if size == OPENSSL_BLOCK {
                "16 KiB"
            } else {
                "16 MiB"
            };
            let rate = measure(size, |data| cipher.encrypt_blocks(data));
            report(&format!("ECB encrypt, {label}"), rate, openssl_ecb);
            let rate = measure(size, |data| cipher.decrypt_blocks(data));
            report(&format!("ECB decrypt, {label}"), rate, openssl_ecb);
            let rate = measure(size, |data| cbc_encrypt(&cipher, data));
            report(&format!("CBC encrypt, {label}"), rate, openssl_cbc);
            if cipher.cbc_decrypt(&[0u8; 16], &mut [0u8; 16]) {
                let rate = measure(size, |data| cbc_decrypt_fused(&cipher, data));
                report(&format!("CBC decrypt, {label}"), rate, openssl_cbc_decrypt);
            } else {
                println!("  CBC decrypt, {label:<23} no fused kernel under this ceiling");
            }
            let rate = measure(size, |data| cbc_decrypt_batched(&cipher, data));
            report(
                &format!("CBC decrypt unfused, {label}"),
                rate,
                openssl_cbc_decrypt,
            );
        }
        let rate = measure(OPENSSL_BLOCK, |data| crate_cipher.encrypt(data));
        report("aes crate ECB encrypt, 16 KiB", rate, openssl_ecb);
        let rate = measure(OPENSSL_BLOCK, |data| crate_cipher.decrypt(data));
        report("aes crate ECB decrypt, 16 KiB", rate, openssl_ecb);
    }
}

/// The `aes` crate on its own, as `FastAes` used it for ECB before our kernel.
enum CrateCipher {
    Aes128(aes::Aes128),
    Aes256(aes::Aes256),
}

impl CrateCipher {
    fn new(key: &[u8]) -> Self {
        match key.len() {
            16 => CrateCipher::Aes128(aes::Aes128::new_from_slice(key).expect("16-byte key")),
            _ => CrateCipher::Aes256(aes::Aes256::new_from_slice(key).expect("32-byte key")),
        }
    }

    fn encrypt(&self, data: &mut [u8]) {
        let blocks = Array::cast_slice_from_core_mut(data.as_chunks_mut::<16>().0);
        match self {
            CrateCipher::Aes128(cipher) => cipher.encrypt_blocks(blocks),
            CrateCipher::Aes256(cipher) => cipher.encrypt_blocks(blocks),
        }
    }

    fn decrypt(&self, data: &mut [u8]) {
        let blocks = Array::cast_slice_from_core_mut(data.as_chunks_mut::<16>().0);
        match self {
            CrateCipher::Aes128(cipher) => cipher.decrypt_blocks(blocks),
            CrateCipher::Aes256(cipher) => cipher.decrypt_blocks(blocks),
        }
    }
}

fn cbc_encrypt(cipher: &FastAes, data: &mut [u8]) {
    let mut chain = [0x42u8; 16];
    assert!(
        cipher.cbc_encrypt(&mut chain, data),
        "no fused CBC kernel on this CPU"
    );
}

fn cbc_decrypt_fused(cipher: &FastAes, data: &mut [u8]) {
    assert!(
        cipher.cbc_decrypt(&[0x42u8; 16], data),
        "no fused CBC decryption kernel on this CPU"
    );
}

/// What `parcrypt_modes::cbc::decrypt` does without a fused kernel: batches of 256 blocks
/// through `decrypt_blocks`, then the XOR with the saved ciphertext.
fn cbc_decrypt_batched(cipher: &FastAes, data: &mut [u8]) {
    const BATCH: usize = 256 * 16;
    let mut saved = [0u8; BATCH];
    let mut chain = [0x42u8; 16];
    for batch in data.chunks_mut(BATCH) {
        let saved = &mut saved[..batch.len()];
        saved.copy_from_slice(batch);
        cipher.decrypt_blocks(batch);
        xor_in_place(&mut batch[..16], &chain);
        xor_in_place(&mut batch[16..], &saved[..saved.len() - 16]);
        chain.copy_from_slice(&saved[saved.len() - 16..]);
    }
}

fn xor_in_place(target: &mut [u8], source: &[u8]) {
    for (t, s) in target.iter_mut().zip(source) {
        *t ^= s;
    }
}

fn report_openssl(label: &str, rate: Option<f64>) {
    match rate {
        Some(rate) => println!("  {label:<35} {:7.2} GB/s", rate / 1e9),
        None => println!("  {label:<35} not available"),
    }
}

fn report(label: &str, rate: Rate, openssl: Option<f64>) {
    let ratio = openssl
        .map(|openssl| {
            format!(
                "  {:5.2}x openssl (best {:5.2}x)",
                rate.median / openssl,
                rate.best / openssl
            )
        })
        .unwrap_or_default();
    println!(
        "  {label:<35} {:7.2} GB/s (best {:6.2}){ratio}",
        rate.median / 1e9,
        rate.best / 1e9
    );
}
