//! The engine's own in-memory rate for one `Cipher` job, for comparison with front ends in
//! the same run (python/bench.py compares the Python package with it).
//!
//! `cargo run --release -p parcrypt --example cipher_rate -- SUITE BYTES BACKEND RUNS JOB`
//!
//! JOB is `into` (encrypt into a separate, touched output buffer: `Cipher::encrypt_into`),
//! `inplace` (encrypt the output buffer's first BYTES in place: `Cipher::encrypt_in_place`),
//! `new` (encrypt into a new `Vec`: `Cipher::encrypt`) or `call` (a new `Cipher` and
//! `encrypt` per message, as a caller does who needs a fresh IV per message: the per-call
//! cost). Prints one line per timed run: the seconds it took. Timing only; nothing asserted.
#![allow(clippy::disallowed_macros)]

use std::time::Instant;

use parcrypt::hazmat::{Cipher, Direction, Mode};
use parcrypt::{Backend, CipherSpec, Engine};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [suite, bytes, backend, runs, job] = arguments.as_slice() else {
        return Err("usage: cipher_rate SUITE BYTES BACKEND RUNS into|inplace|new|call".into());
    };
    let suite: CipherSpec = suite.parse()?;
    let bytes: usize = bytes.parse()?;
    let backend: Backend = backend.parse()?;
    let runs: usize = runs.parse()?;
    let engine = std::sync::Arc::new(Engine::new(backend, None)?);
    let key = vec![7u8; suite.algorithm.key_lengths().1.min(32)];
    let iv_length = match suite.mode {
        Mode::Ecb => None,
        Mode::Gcm => Some(12),
        _ => Some(suite.algorithm.block_size()),
    };
    let iv = iv_length.map(|length| vec![1u8; length]);
    let cipher = Cipher::new(engine.clone(), suite, &key, iv.as_deref())?;
    // Touched buffers: a fresh zeroed page costs a fault on its first write.
    let input: Vec<u8> = (0..bytes).map(|index| index as u8).collect();
    let mut output = vec![1u8; cipher.max_output_length(Direction::Encrypt, bytes)];
    // Every run encrypts under the one test IV: through the keyed cipher, as a `Cipher`'s own
    // IV encrypts one message only.
    let keyed = cipher.keyed();
    let iv = iv.as_deref();
    // Warm up: threads, tables, caches.
    keyed.encrypt_into(iv, &input, &mut output, None)?;
    for _ in 0..runs {
        let started = Instant::now();
        match job.as_str() {
            "into" => {
                keyed.encrypt_into(iv, &input, &mut output, None)?;
            }
            "inplace" => {
                keyed.encrypt_in_place(iv, &mut output, bytes, None)?;
            }
            "new" => {
                std::hint::black_box(keyed.encrypt(iv, &input, None)?);
            }
            "call" => {
                // Per-call cost is small: time a batch of calls and report the mean.
                let calls = 1000;
                for _ in 0..calls {
                    let fresh = Cipher::new(engine.clone(), suite, &key, iv)?;
                    std::hint::black_box(fresh.encrypt(&input, None)?);
                }
                println!("{:.9}", started.elapsed().as_secs_f64() / calls as f64);
                continue;
            }
            other => {
                return Err(format!("unknown job '{other}' (into, inplace, new or call)").into())
            }
        }
        println!("{:.9}", started.elapsed().as_secs_f64());
    }
    Ok(())
}
