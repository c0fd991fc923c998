//! The streaming pipeline without file I/O: encrypt generated data into a sink, and decrypt
//! an in-memory message into a sink, on the pool with all cores. Shows how close the format
//! comes to the raw AES-GCM rate once the disk (or tmpfs) is out of the way.
//! `cargo run --release -p parcrypt-format --example pipeline_speed [GiB] [chunks per batch]`

use std::io::{self, Read};
use std::time::Instant;

use parcrypt_engine::{Backend, Engine};
use parcrypt_format::stream::{decrypt_chunks, encrypt_chunks};
use parcrypt_format::{CpuChunks, Envelope, Secret, Setup, StreamOptions};

fn main() {
    let gibibytes: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(4);
    let length = gibibytes << 30;
    let engine = Engine::new(Backend::Pool, None).unwrap();
    let batcher = CpuChunks::new(&engine);
    let (_, keys) = Envelope::create(&Setup::default(), Secret::Key(&[1; 16])).unwrap();
    let batch_chunks: usize = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    let options = StreamOptions::with_batch_chunks(batch_chunks);
    for _ in 0..3 {
        let start = Instant::now();
        encrypt_chunks(
            &batcher,
            &keys,
            &mut io::repeat(0x5a).take(length),
            &mut io::sink(),
            &options,
        )
        .unwrap();
        let seconds = start.elapsed().as_secs_f64();
        println!(
            "encrypt {gibibytes} GiB, repeat -> sink: {seconds:.2} s, {:.2} GB/s",
            length as f64 / seconds / 1e9
        );
    }
    // Decrypt: one 256 MiB message, read again and again from memory.
    let message_length = 256u64 << 20;
    let mut sealed = Vec::new();
    encrypt_chunks(
        &batcher,
        &keys,
        &mut io::repeat(0x5a).take(message_length),
        &mut sealed,
        &options,
    )
    .unwrap();
    let rounds = (length / message_length).max(1);
    for _ in 0..3 {
        let start = Instant::now();
        for _ in 0..rounds {
            decrypt_chunks(&batcher, &keys, &mut &sealed[..], &mut io::sink(), &options).unwrap();
        }
        let seconds = start.elapsed().as_secs_f64();
        println!(
            "decrypt {} GiB, memory -> sink: {seconds:.2} s, {:.2} GB/s",
            (rounds * message_length) >> 30,
            (rounds * message_length) as f64 / seconds / 1e9
        );
    }
}
