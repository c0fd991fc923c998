//! Batches of GCM chunks for the tests, laid out as an encrypted file lays them out (text,
//! then a tag, per chunk): shared by the engine's chunk tests and the format's unit tests
//! (`#[path]`), which check the same layout from both sides.

#![allow(dead_code)] // each includer uses what it needs

use parcrypt_engine::chunks::TAG_BYTES;
use parcrypt_engine::{Backend, Engine};

/// Lengths on both sides of a block and of a 4 KiB GHASH segment.
pub const EDGE_LENGTHS: [usize; 8] = [0, 1, 15, 16, 17, 4095, 4096, 4097];

/// The machine's GPU engines (OpenCL on PoCL in CI), saying which are missing.
pub fn gpu_engines() -> Vec<Engine> {
    Backend::GPU
        .iter()
        .filter_map(|&backend| match Engine::new(backend, Some(2)) {
            Ok(engine) => Some(engine),
            Err(error) => {
                println!("SKIPPED {}: {error}", backend.name());
                None
            }
        })
        .collect()
}

/// A batch in its layout (text, then a zeroed tag, per chunk) of `text_bytes` in chunks of
/// `chunk`, and its plaintext.
pub fn layout(text_bytes: usize, chunk: usize) -> (Vec<u8>, Vec<u8>) {
    let plaintext: Vec<u8> = (0..text_bytes).map(|i| (i * 7 + i / 5000) as u8).collect();
    let mut batch = Vec::new();
    for piece in plaintext.chunks(chunk) {
        batch.extend_from_slice(piece);
        batch.extend_from_slice(&[0u8; TAG_BYTES]);
    }
    if text_bytes == 0 {
        batch.extend_from_slice(&[0u8; TAG_BYTES]);
    }
    (plaintext, batch)
}

/// The texts of a batch in chunks of `chunk`, tags left out.
pub fn texts_of(batch: &[u8], chunk: usize) -> Vec<u8> {
    batch
        .chunks(chunk + TAG_BYTES)
        .flat_map(|piece| piece[..piece.len() - TAG_BYTES].to_vec())
        .collect()
}
