//! One-thread speed of sealing 16 KiB chunks: the shared-GHASH-key chunk cipher against
//! `parcrypt_modes::gcm::seal` per chunk (which rebuilds the GHASH key every call) and one
//! long GCM message (the raw rate). `cargo run --release -p parcrypt-format --example chunk_speed`

use std::time::Instant;

use parcrypt_ciphers::{new_cipher, Implementation};
use parcrypt_format::chunks::ChunkCipher;
use parcrypt_format::cobblestone::{MessageKeys, Suite, CHUNK_BYTES};

fn main() {
    let keys = MessageKeys::derive(Suite::Cobblestone128, &[1; 16], &[2; 24], b"").unwrap();
    let chunk_cipher = ChunkCipher::new(&keys, Implementation::Fast).unwrap();
    let cipher = new_cipher(
        Suite::Cobblestone128.algorithm(),
        Implementation::Fast,
        keys.key(),
    )
    .unwrap();
    let mut data = vec![5u8; 1 << 20];
    let rounds = 400;
    let gigabytes = (data.len() * rounds) as f64 / 1e9;
    for _ in 0..2 {
        let start = Instant::now();
        for _ in 0..rounds {
            for (index, chunk) in data.chunks_mut(CHUNK_BYTES).enumerate() {
                std::hint::black_box(chunk_cipher.seal(&keys.nonce(index as u64).unwrap(), chunk));
            }
        }
        println!(
            "chunk cipher seal   {:6.2} GB/s",
            gigabytes / start.elapsed().as_secs_f64()
        );
        let start = Instant::now();
        for _ in 0..rounds / 2 {
            let tags: Vec<[u8; 16]> = data
                .chunks_mut(CHUNK_BYTES)
                .enumerate()
                .map(|(index, chunk)| chunk_cipher.seal(&keys.nonce(index as u64).unwrap(), chunk))
                .collect();
            for ((index, chunk), tag) in data.chunks_mut(CHUNK_BYTES).enumerate().zip(&tags) {
                assert!(chunk_cipher.open(&keys.nonce(index as u64).unwrap(), chunk, tag));
            }
        }
        println!(
            "seal then open      {:6.2} GB/s (per direction)",
            gigabytes / start.elapsed().as_secs_f64()
        );
        let start = Instant::now();
        for _ in 0..rounds {
            for (index, chunk) in data.chunks_mut(CHUNK_BYTES).enumerate() {
                std::hint::black_box(
                    parcrypt_modes::gcm::seal(
                        cipher.as_ref(),
                        &keys.nonce(index as u64).unwrap(),
                        &[],
                        chunk,
                    )
                    .unwrap(),
                );
            }
        }
        println!(
            "gcm::seal per chunk {:6.2} GB/s",
            gigabytes / start.elapsed().as_secs_f64()
        );
        let start = Instant::now();
        for _ in 0..rounds {
            std::hint::black_box(
                parcrypt_modes::gcm::seal(cipher.as_ref(), &[0; 12], &[], &mut data).unwrap(),
            );
        }
        println!(
            "gcm::seal 1 MiB     {:6.2} GB/s",
            gigabytes / start.elapsed().as_secs_f64()
        );
    }
}
