//! Throughput of the engine on data in memory and through files.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;

use parcrypt_ciphers::Implementation;
use parcrypt_engine::crypter::JobSpec;
use parcrypt_engine::stream::{chunk_bytes_for, process_stream, StreamError};
use parcrypt_engine::{Crypter, Engine, JobError};
use parcrypt_modes::{CipherSpec, Direction, Mode};

use crate::stats::{measure_repeated, Probe, Repetition, Sampled, SystemClock};

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

/// The job a benchmark of `spec` runs: the benchmark key and IV, no padding, fast code.
pub fn job<'a>(
    spec: CipherSpec,
    direction: Direction,
    key: &'a [u8],
    iv: Option<&'a [u8]>,
) -> JobSpec<'a> {
    JobSpec {
        spec,
        direction,
        key,
        iv,
        allow_short_gcm_iv: false,
        aad: None,
        padding: false,
        implementation: Implementation::Fast,
    }
}

/// A buffer of `bytes` bytes, every page written before any timing.
pub fn touched_buffer(bytes: usize) -> Vec<u8> {
    (0..bytes)
        .map(|index| (index as u8).wrapping_mul(31))
        .collect()
}

/// `bytes` pseudo-random bytes from `seed` (SplitMix64): the seeds' "random inputs",
/// reproducible from run to run.
pub fn random_buffer(bytes: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    let mut data = Vec::with_capacity(bytes + 8);
    while data.len() < bytes {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        data.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    data.truncate(bytes);
    data
}

/// Times `spec` over `data` in place on `engine`, one job being key setup plus one pass over
/// the data (whole blocks: the caller rounds the length). For GPU backends a job copies the
/// data to the device and back and returns with the device synchronised.
pub fn in_memory(
    spec: CipherSpec,
    direction: Direction,
    engine: &Engine,
    data: &mut [u8],
    repetition: Repetition,
    probe: &mut dyn Probe,
) -> Result<Sampled, JobError> {
    let (key, iv) = bench_key_iv(spec);
    let job = job(spec, direction, key, iv.as_deref());
    // Fail before timing if the job cannot run at all.
    Crypter::new(engine, &job)?;
    measure_repeated(&mut SystemClock::default(), repetition, probe, || {
        Crypter::new(engine, &job)
            .and_then(|mut crypter| crypter.update(data))
            .map(|()| None)
    })
}

/// Encrypts or decrypts `input` into `output` through the streaming path the command line
/// uses (files opened, chunks read, processed and written).
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
    let mut reader =
        BufReader::with_capacity(1 << 20, File::open(input).map_err(StreamError::Read)?);
    let mut writer =
        BufWriter::with_capacity(1 << 20, File::create(output).map_err(StreamError::Write)?);
    process_stream(crypter, &mut reader, &mut writer, chunk_bytes_for(engine))
}

/// The cipher name of [`memory_pass`] figures in records.
pub const MEMORY_PASS: &str = "memory";

/// Times an in-place pass over `bytes` bytes that does no cipher work, split over the
/// engine's threads the way a job would be (`parcrypt_ciphers::memory::rewrite_in_place`,
/// every byte XORed with a constant: the in-place pass of the peers' `copy` row too). It
/// reads and writes every cache line once, as an in-place cipher pass does, so no cipher
/// pass of the same size on the same backend can beat it. (For an in-place job a copy
/// between two buffers is no such ceiling: it moves twice the lines. For a job from one
/// buffer into another it is, and the peers' row copies there.)
pub fn memory_pass(engine: &Engine, bytes: usize, repetition: Repetition) -> Sampled {
    let mut data = touched_buffer(bytes);
    let lengths = engine.plan(bytes, 64, None);
    let outcome: Result<Sampled, std::convert::Infallible> =
        measure_repeated(&mut SystemClock::default(), repetition, &mut (), || {
            engine.run(&mut data, &lengths, |_, _, range| {
                parcrypt_ciphers::memory::rewrite_in_place(range);
            });
            std::hint::black_box(&data);
            Ok(None)
        });
    match outcome {
        Ok(sampled) => sampled,
        Err(never) => match never {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_buffers_are_reproducible_and_not_constant() {
        let a = random_buffer(1001, 7);
        assert_eq!(a.len(), 1001);
        assert_eq!(a, random_buffer(1001, 7));
        assert_ne!(a, random_buffer(1001, 8));
        assert!(a.iter().filter(|&&byte| byte == a[0]).count() < 50);
    }
}
