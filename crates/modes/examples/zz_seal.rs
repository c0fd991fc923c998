#![allow(clippy::disallowed_macros)]
use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
use parcrypt_modes::gcm::GcmKey;
use std::hint::black_box;
use std::time::Instant;
fn main() {
    let cipher = new_cipher(Algorithm::Aes128, Implementation::Fast, &[1u8; 16]).unwrap();
    let cipher = cipher.as_ref();
    let key = GcmKey::new(cipher).unwrap();
    let n = 20_000_000;
    let size: usize = std::env::args().nth(1).map_or(16, |s| s.parse().unwrap());
    let mut data = vec![3u8; size];
    let mut nonce = [7u8; 12];
    let t = Instant::now();
    for i in 0..n {
        nonce[0] = i as u8;
        black_box(key.seal(cipher, &nonce, &[], &mut data).unwrap());
    }
    println!(
        "{size} B seal {:.1} ns",
        t.elapsed().as_secs_f64() * 1e9 / n as f64
    );
}
