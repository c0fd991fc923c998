//! The device calls of the encrypted file format's GPU path, timed one by one from ordinary
//! (pageable) host memory: a file's batch costs segmented CTR (one counter per 16 KiB
//! chunk) and GHASH partial sums per 16 KiB chunk. Beside them, for scale, plain CTR and the
//! whole-range GHASH of the same bytes. Wall clock around each synchronised call; warm-up
//! first, then the median of the repeats, as GB/s (10^9 bytes per second).
//!
//! `cargo run --release -p parcrypt-gpu --example chunk_calls -- [cuda|opencl] [MIB,MIB..]
//! [REPEATS]`
// An example reports to the person running it.
#![allow(clippy::disallowed_macros)]

#[path = "support/common.rs"]
mod common;

use std::error::Error;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use parcrypt_ciphers::Algorithm;
use parcrypt_gpu::{CudaDevice, GpuDevice, GpuOperation, KeyMaterial, OpenClDevice};
use parcrypt_modes::ctr::CounterRule;

const CHUNK_BYTES: usize = 16 * 1024;

/// The median wall time of `repeats` calls of `call`, after two untimed ones.
fn time(
    repeats: usize,
    mut call: impl FnMut() -> Result<(), Box<dyn Error>>,
) -> Result<Duration, Box<dyn Error>> {
    common::measure(2, repeats, || {
        let started = Instant::now();
        call()?;
        Ok(started.elapsed())
    })
}

fn run() -> Result<(), Box<dyn Error>> {
    let mut arguments = std::env::args().skip(1);
    let api = arguments.next().unwrap_or_else(|| "cuda".to_string());
    let sizes: Vec<usize> = arguments
        .next()
        .unwrap_or_else(|| "4,64".to_string())
        .split(',')
        .map(|text| text.parse::<usize>().map(|mebibytes| mebibytes << 20))
        .collect::<Result<_, _>>()?;
    let repeats: usize = arguments.next().map_or(Ok(5), |text| text.parse())?;
    let device: Box<dyn GpuDevice> = match api.as_str() {
        "cuda" => Box::new(CudaDevice::open(0)?),
        "opencl" => Box::new(OpenClDevice::open(0)?),
        other => return Err(format!("unknown API '{other}' (cuda, opencl)").into()),
    };
    let key = KeyMaterial::new(Algorithm::Aes128, &[7; 16])?;
    let hash_key = [9u8; 16];
    println!("{api}");
    for bytes in sizes {
        let mut data: Vec<u8> = (0..bytes).map(|index| index as u8).collect();
        let segments = bytes.div_ceil(CHUNK_BYTES);
        let calls: [(&str, GpuOperation); 2] = [
            (
                "ctr",
                GpuOperation::Ctr {
                    counter: vec![0; 16],
                    rule: CounterRule::Full,
                },
            ),
            (
                "ctr, 16 KiB segments",
                GpuOperation::CtrSegments {
                    counters: (0..segments * 16).map(|index| index as u8).collect(),
                    segment_bytes: CHUNK_BYTES,
                    rule: CounterRule::Low32,
                },
            ),
        ];
        for (name, operation) in &calls {
            let median = time(repeats, || Ok(device.process(&key, operation, &mut data)?))?;
            report(bytes, name, median);
        }
        for segment_bytes in [CHUNK_BYTES, 4096] {
            let median = time(repeats, || {
                device.ghash_segments(&hash_key, &data, segment_bytes)?;
                Ok(())
            })?;
            report(
                bytes,
                &format!("ghash, {segment_bytes}-byte segments"),
                median,
            );
        }
        let median = time(repeats, || {
            device.ghash_whole(&hash_key, &data)?;
            Ok(())
        })?;
        report(bytes, "ghash, whole", median);
    }
    Ok(())
}

fn report(bytes: usize, name: &str, median: Duration) {
    println!(
        "{:>5} MiB  {name:<28} {:>9.3} ms  {:>7.2} GB/s",
        bytes >> 20,
        median.as_secs_f64() * 1e3,
        bytes as f64 / median.as_secs_f64() / 1e9
    );
}

fn main() -> ExitCode {
    common::exit_code("chunk_calls", run())
}
