//! Throughput of the engine on data in memory and through files.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;

use parcrypt_ciphers::Implementation;
use parcrypt_engine::crypter::JobSpec;
use parcrypt_engine::stream::{process_stream, StreamError, DEFAULT_CHUNK_BYTES};
use parcrypt_engine::{Crypter, Engine, JobError};
use parcrypt_modes::{CipherSpec, Direction, Mode};

use crate::stats::{measure, Stats, SystemClock};

/// A fixed benchmark key long enough for every cipher (they take a prefix).
pub const BENCH_KEY: [u8; 32] = *b"parcrypt benchmark key, not real";

/// The key and IV a benchmark of `spec` uses.
pub fn bench_key_iv(spec: CipherSpec) -> (&'static [u8], Option<Vec<u8>>) {
    let (_, longest) = spec.algorithm.key_lengths();
    let key = &BENCH_KEY[..longest.min(32)];
    let iv = match spec.mode {
        Mode::Ecb => None,
        Mode::Gcm => Some(vec![0x5A; 12]),
        _ => Some(vec![0xA5; spec.algorithm.block_size()]),
    };
    (key, iv)
}

fn job<'a>(spec: CipherSpec, direction: Direction, key: &'a [u8], iv: Option<&'a [u8]>) -> JobSpec<'a> {
    JobSpec { spec, direction, key, iv, aad: None, padding: false, implementation: Implementation::Fast }
}

/// A buffer of `bytes` bytes, every page written before any timing.
pub fn touched_buffer(bytes: usize) -> Vec<u8> {
    (0..bytes).map(|index| (index as u8).wrapping_mul(31)).collect()
}

/// Times `spec` over `bytes` in memory (rounded down to whole blocks), in place, on
/// `engine`: key setup plus one pass over the data per run.
pub fn in_memory(
    spec: CipherSpec,
    direction: Direction,
    engine: &Engine,
    bytes: usize,
    warmup: usize,
    repeats: usize,
) -> Result<Stats, JobError> {
    in_memory_batched(spec, direction, engine, bytes, 1, warmup, repeats)
}

/// Like [`in_memory`], but each timed sample runs `jobs` whole jobs back to back, so that
/// small inputs are timed over a measurable span; divide the median by `jobs`.
pub fn in_memory_batched(
    spec: CipherSpec,
    direction: Direction,
    engine: &Engine,
    bytes: usize,
    jobs: usize,
    warmup: usize,
    repeats: usize,
) -> Result<Stats, JobError> {
    let block_size = spec.algorithm.block_size();
    let mut buffer = touched_buffer(bytes / block_size * block_size);
    let (key, iv) = bench_key_iv(spec);
    let job = job(spec, direction, key, iv.as_deref());
    // Fail before timing if the job cannot run at all.
    Crypter::new(engine, &job)?;
    let mut failure = None;
    let stats = measure(&mut SystemClock::default(), warmup, repeats, || {
        for _ in 0..jobs.max(1) {
            let result = Crypter::new(engine, &job).and_then(|mut crypter| crypter.update(&mut buffer));
            if let Err(error) = result {
                failure.get_or_insert(error);
            }
        }
    });
    match failure {
        Some(error) => Err(error),
        None => Ok(stats),
    }
}

/// Encrypts or decrypts `input` into `output` through the streaming path the command line
/// uses (files opened, chunks read, processed and written, output synced).
pub fn file_pass(
    spec: CipherSpec,
    direction: Direction,
    engine: &Engine,
    input: &Path,
    output: &Path,
) -> Result<u64, StreamError> {
    let (key, iv) = bench_key_iv(spec);
    let mut job = job(spec, direction, key, iv.as_deref());
    job.padding = true;
    let crypter = Crypter::new(engine, &job)?;
    let mut reader = BufReader::with_capacity(1 << 20, File::open(input).map_err(StreamError::Read)?);
    let mut writer = BufWriter::with_capacity(1 << 20, File::create(output).map_err(StreamError::Write)?);
    process_stream(crypter, &mut reader, &mut writer, DEFAULT_CHUNK_BYTES)
}

/// Times a plain copy of `bytes` bytes split over the engine's threads the way a job would
/// be: the memory ceiling that an in-place pass (read and write every byte) cannot beat.
/// Each timed sample copies `jobs` times.
pub fn memcpy(engine: &Engine, bytes: usize, jobs: usize, warmup: usize, repeats: usize) -> Stats {
    let source = touched_buffer(bytes);
    let mut target = touched_buffer(bytes);
    let lengths = engine.plan(bytes, 64, None);
    measure(&mut SystemClock::default(), warmup, repeats, || {
        for _ in 0..jobs.max(1) {
            engine.run(&mut target, &lengths, |_, offset, range| {
                range.copy_from_slice(&source[offset..offset + range.len()]);
            });
        }
    })
}
