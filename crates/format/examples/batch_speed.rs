//! Where a file's batch spends its time on a backend: `seal_batch` and `open_batch` of the
//! backend's batcher (what the file pipeline calls for each batch) on batches of 16 KiB
//! chunks in file layout, beside the host-only steps of the GPU batcher at the same size
//! (gathering the chunk texts into one buffer: a new one, wiped after, as the batcher did
//! until 2026-11-26, or the batcher's reused one; deriving the chunks' nonces).
//! Wall clock, median of the repeats after one warm-up, GB/s of plaintext.
//!
//! `cargo run --release -p parcrypt-format --example batch_speed -- [BACKEND] [CHUNKS,..]
//! [REPEATS]` (BACKEND: seq, pool, cuda, opencl...; CHUNKS per batch, default 256,4096)
// An example reports to the person running it.
#![allow(clippy::disallowed_macros)]

use std::error::Error;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use parcrypt_engine::{Backend, Engine};
use parcrypt_format::batcher_for;
use parcrypt_format::cobblestone::{MessageKeys, Suite, CHUNK_BYTES, SEALED_CHUNK_BYTES};
use zeroize::Zeroizing;

/// What a timed piece of work returns.
type Work = Result<(), Box<dyn Error>>;

fn median_of(repeats: usize, mut work: impl FnMut() -> Work) -> Result<Duration, Box<dyn Error>> {
    work()?;
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let started = Instant::now();
        work()?;
        samples.push(started.elapsed());
    }
    samples.sort();
    Ok(samples[samples.len() / 2])
}

fn run() -> Result<(), Box<dyn Error>> {
    let mut arguments = std::env::args().skip(1);
    let backend: Backend = arguments
        .next()
        .unwrap_or_else(|| "pool".to_string())
        .parse()?;
    let batches: Vec<usize> = arguments
        .next()
        .unwrap_or_else(|| "256,4096".to_string())
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let repeats: usize = arguments.next().map_or(Ok(5), |text| text.parse())?;
    let engine = Engine::builder().backend(backend).no_tune().build()?;
    let batcher = batcher_for(&engine);
    let keys = MessageKeys::derive(Suite::Cobblestone128, &[1; 16], &[2; 24], b"")?;
    println!("batcher: {}", batcher.name());
    for chunks in batches {
        let text_bytes = chunks * CHUNK_BYTES;
        // Times `work` and reports it as `what`.
        let timed = |what: &str, work: &mut dyn FnMut() -> Work| -> Work {
            let time = median_of(repeats, work)?;
            println!(
                "{chunks:>5} chunks ({:>3} MiB)  {what:<34} {:>9.3} ms {:>7.2} GB/s",
                text_bytes >> 20,
                time.as_secs_f64() * 1e3,
                text_bytes as f64 / time.as_secs_f64() / 1e9
            );
            Ok(())
        };
        let plain: Vec<u8> = (0..chunks * SEALED_CHUNK_BYTES)
            .map(|index| index as u8)
            .collect();
        let mut batch = plain.clone();
        timed("seal_batch", &mut || {
            batch.copy_from_slice(&plain);
            Ok(batcher.seal_batch(&keys, 0, &mut batch)?)
        })?;
        let sealed = batch.clone();
        timed("open_batch", &mut || {
            batch.copy_from_slice(&sealed);
            Ok(batcher.open_batch(&keys, 0, &mut batch)?)
        })?;
        timed("copy of the batch (for scale)", &mut || {
            batch.copy_from_slice(&sealed);
            Ok(())
        })?;
        let gather = |texts: &mut Vec<u8>| {
            texts.clear();
            for chunk in batch.chunks(SEALED_CHUNK_BYTES) {
                texts.extend_from_slice(&chunk[..CHUNK_BYTES]);
            }
            std::hint::black_box(&texts);
        };
        timed("gather texts into a new buffer, wipe", &mut || {
            gather(&mut Zeroizing::new(Vec::with_capacity(batch.len())));
            Ok(())
        })?;
        let mut reused = Vec::new();
        timed("gather texts into a reused buffer", &mut || {
            gather(&mut reused);
            Ok(())
        })?;
        timed("nonces of the chunks", &mut || {
            for index in 0..chunks as u64 {
                std::hint::black_box(keys.nonce(index)?);
            }
            Ok(())
        })?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("batch_speed: {error}");
            ExitCode::FAILURE
        }
    }
}
