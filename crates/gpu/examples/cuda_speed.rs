//! CUDA throughput, for the record (benchmarks proper live in parcrypt-bench); written for
//! the H200 and the targets in docs/design.md.
//!
//! (a) Data already on the GPU: a device buffer (1 GiB by default) encrypted in place,
//!     timed with CUDA events on the stream; warm-up runs first, then the median of the
//!     repeats, as GB/s (10^9 bytes per second).
//! (b) Host -> GPU -> host from pinned memory, end to end: the wall time of a synchronised
//!     `process_pinned` call. In the same run the pinned copy rates it is held against:
//!     upload alone, download alone, and both at once on two streams (the pipeline moves every
//!     byte both ways, so with full-duplex copies its ideal is the "both at once" time).
//!
//! `cargo run --release -p parcrypt-gpu --example cuda_speed -- [DEVICE] [MIB] [REPEATS]
//! [SLAB_MIB,SLAB_MIB..] [THREADS_PER_GROUP BLOCKS_PER_THREAD]`
//!
//! Without a CUDA driver or GPU it says so and exits with status 1.
// An example reports to the person running it, on stderr.
#![allow(clippy::disallowed_macros)]

#[path = "support/common.rs"]
mod common;

use std::error::Error;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use parcrypt_ciphers::Algorithm;
use parcrypt_gpu::{CudaDevice, GpuOperation, KeyMaterial, LaunchGeometry, OpenOptions};
use parcrypt_modes::ctr::CounterRule;
use parcrypt_modes::ghash::GhashKey;

use common::{measure, median};

struct Settings {
    index: usize,
    bytes: usize,
    repeats: usize,
    slab_mebibytes: Vec<usize>,
    geometry: Option<LaunchGeometry>,
}

fn parse_settings() -> Result<Settings, Box<dyn Error>> {
    let mut arguments = std::env::args().skip(1);
    let index = arguments.next().map_or(Ok(0), |text| text.parse())?;
    let mebibytes: usize = arguments.next().map_or(Ok(1024), |text| text.parse())?;
    let repeats: usize = arguments.next().map_or(Ok(7), |text| text.parse())?;
    let slab_mebibytes = match arguments.next() {
        Some(text) => text
            .split(',')
            .map(str::parse)
            .collect::<Result<Vec<usize>, _>>()?,
        None => vec![16, 64],
    };
    let threads_per_group: Option<usize> = arguments.next().map(|text| text.parse()).transpose()?;
    let blocks_per_thread: Option<usize> = arguments.next().map(|text| text.parse()).transpose()?;
    let geometry = match (threads_per_group, blocks_per_thread) {
        (Some(threads_per_group), Some(blocks_per_thread)) => Some(LaunchGeometry {
            threads_per_group,
            blocks_per_thread,
        }),
        _ => None,
    };
    if repeats < 5 {
        return Err("use at least 5 repeats: the median of fewer says little".into());
    }
    Ok(Settings {
        index,
        bytes: mebibytes << 20,
        repeats,
        slab_mebibytes,
        geometry,
    })
}

/// The ciphers and modes the design's GPU targets name.
fn cases() -> Vec<(&'static str, Algorithm, usize, GpuOperation)> {
    let ctr = |block_size| GpuOperation::Ctr {
        counter: vec![0; block_size],
        rule: CounterRule::Full,
    };
    vec![
        ("aes-128-ctr", Algorithm::Aes128, 16, ctr(16)),
        ("aes-256-ctr", Algorithm::Aes256, 32, ctr(16)),
        ("bf-ctr", Algorithm::Blowfish, 16, ctr(8)),
        ("rc6-128-ctr", Algorithm::Rc6_128, 16, ctr(16)),
        (
            "aes-128-ecb",
            Algorithm::Aes128,
            16,
            GpuOperation::EcbEncrypt,
        ),
    ]
}

fn rate(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / time.as_secs_f64() / 1e9
}

fn run() -> Result<(), Box<dyn Error>> {
    let settings = parse_settings()?;
    let devices = CudaDevice::list()?;
    if devices.is_empty() {
        return Err("the CUDA driver sees no GPU".into());
    }
    for info in &devices {
        println!("{info}");
    }
    let options = OpenOptions {
        geometry: settings.geometry,
        ..OpenOptions::default()
    };
    let started = Instant::now();
    let device = CudaDevice::open_with(settings.index, &options)?;
    let variant = device.kernel_variant();
    println!(
        "opened {} in {:.2?}: {}, {:?}, {}, {} shared memory, {:?}",
        device.name(),
        started.elapsed(),
        device.architecture(),
        device.program_origin(),
        variant.table_copies,
        if variant.dynamic_shared {
            "dynamic"
        } else {
            "static"
        },
        device.launch_geometry()
    );
    let bytes = settings.bytes;
    let repeats = settings.repeats;
    let stream = device.stream().clone();

    println!(
        "\n(a) data on the GPU: {} MiB in place, CUDA events, median of {repeats}",
        bytes >> 20
    );
    let mut buffer = stream.alloc_zeros::<u8>(bytes)?;
    // Zeros would make every ECB block look the same table entries up; a keystream makes the
    // data look random.
    let filler = KeyMaterial::new(Algorithm::Aes128, &[0x5c; 16])?;
    device.process_device_buffer(
        &filler,
        &GpuOperation::Ctr {
            counter: vec![0x11; 16],
            rule: CounterRule::Full,
        },
        &mut buffer,
    )?;
    for (name, algorithm, key_length, operation) in cases() {
        let key = KeyMaterial::new(algorithm, &vec![0x2b; key_length])?;
        let mut wall = Vec::new();
        let gpu = measure(2, repeats, || {
            let started = Instant::now();
            let gpu = device.process_device_buffer_timed(&key, &operation, &mut buffer)?;
            wall.push(started.elapsed());
            Ok(gpu)
        })?;
        let wall = median(wall.split_off(2));
        println!(
            "{name:<12} {:8.1} GB/s on the GPU ({:.3} ms); whole call {:8.1} GB/s ({:.3} ms, key \
             upload and synchronisation included)",
            rate(bytes, gpu),
            gpu.as_secs_f64() * 1e3,
            rate(bytes, wall),
            wall.as_secs_f64() * 1e3
        );
    }
    drop(buffer);
    device_gcm(&device, bytes, repeats)?;

    println!(
        "\n(b) host -> GPU -> host from pinned memory, {} MiB, wall clock, median of {repeats}",
        bytes >> 20
    );
    let context = device.context().clone();
    let upload_stream = context.new_stream()?;
    let download_stream = context.new_stream()?;
    let mut upload_target = upload_stream.alloc_zeros::<u8>(bytes)?;
    let download_source = download_stream.alloc_zeros::<u8>(bytes)?;
    let mut pinned_source = device.alloc_pinned(bytes)?;
    let mut pinned_target = device.alloc_pinned(bytes)?;
    for (index, byte) in pinned_source.as_mut_slice()?.iter_mut().enumerate() {
        *byte = (index * 131 + 7) as u8;
    }
    let upload = measure(1, repeats, || {
        let started = Instant::now();
        upload_stream.memcpy_htod(pinned_source.as_slice()?, &mut upload_target)?;
        upload_stream.synchronize()?;
        Ok(started.elapsed())
    })?;
    let download = measure(1, repeats, || {
        let started = Instant::now();
        download_stream.memcpy_dtoh(&download_source, pinned_target.as_mut_slice()?)?;
        download_stream.synchronize()?;
        Ok(started.elapsed())
    })?;
    let both = measure(1, repeats, || {
        let started = Instant::now();
        let target = pinned_target.as_mut_slice()?;
        upload_stream.memcpy_htod(pinned_source.as_slice()?, &mut upload_target)?;
        download_stream.memcpy_dtoh(&download_source, target)?;
        upload_stream.synchronize()?;
        download_stream.synchronize()?;
        Ok(started.elapsed())
    })?;
    println!(
        "pinned copies: upload {:.1} GB/s, download {:.1} GB/s, both at once {:.1} GB/s each way",
        rate(bytes, upload),
        rate(bytes, download),
        rate(bytes, both)
    );
    let slower_one_way = upload.max(download);
    drop((upload_target, download_source, pinned_target));

    // What the engine's `GpuDevice::process` gets: ordinary memory, staged through pinned
    // buffers by host copies. Touched first: fresh pages are mapped lazily.
    let mut ordinary: Vec<u8> = (0..bytes).map(|index| (index * 131 + 7) as u8).collect();
    let (name, algorithm, key_length, operation) = cases().swap_remove(0);
    let key = KeyMaterial::new(algorithm, &vec![0x2b; key_length])?;
    let staged = measure(1, repeats, || {
        let started = Instant::now();
        device.process(&key, &operation, &mut ordinary)?;
        Ok(started.elapsed())
    })?;
    println!(
        "{name:<12} ordinary memory, slabs of {:>4} MiB: {:6.1} GB/s end to end (staged through \
         pinned buffers)",
        device.slab_bytes() >> 20,
        rate(bytes, staged)
    );
    drop(ordinary);

    for slab_mebibytes in &settings.slab_mebibytes {
        let piped = CudaDevice::open_with(
            settings.index,
            &OpenOptions {
                slab_bytes: slab_mebibytes << 20,
                ..options.clone()
            },
        )?;
        for (name, algorithm, key_length, operation) in cases() {
            let key = KeyMaterial::new(algorithm, &vec![0x2b; key_length])?;
            let end_to_end = measure(1, repeats, || {
                let started = Instant::now();
                piped.process_pinned(&key, &operation, &mut pinned_source, 0..bytes)?;
                Ok(started.elapsed())
            })?;
            println!(
                "{name:<12} slabs of {slab_mebibytes:>4} MiB: {:6.1} GB/s end to end, {:5.1} % of \
                 both-at-once copies, {:5.1} % of the slower one-way copy",
                rate(bytes, end_to_end),
                100.0 * both.as_secs_f64() / end_to_end.as_secs_f64(),
                100.0 * slower_one_way.as_secs_f64() / end_to_end.as_secs_f64()
            );
        }
    }
    Ok(())
}

/// GCM on device memory as the engine runs it for GPU arrays (`Crypter` on foreign memory):
/// CTR in place (`process_foreign`), GHASH of the ciphertext on the device
/// (`ghash_foreign`), and the host's join of the ranges it returns; wall clock of the whole
/// synchronised call, and GHASH (with its join) alone.
fn device_gcm(device: &CudaDevice, bytes: usize, repeats: usize) -> Result<(), Box<dyn Error>> {
    let hash_key = [0x66; 16];
    let ghash = GhashKey::new(&hash_key);
    let key = KeyMaterial::new(Algorithm::Aes128, &[0x2b; 16])?;
    let operation = GpuOperation::Ctr {
        counter: vec![0; 16],
        rule: CounterRule::Low32,
    };
    let mut allocation = device.alloc_device(bytes)?;
    let memory = allocation.as_foreign();
    device.process_foreign(&key, &operation, &memory, &memory)?;
    let hash = |ranges: Vec<(u128, usize)>| {
        ranges.iter().fold(0u128, |state, &(partial, length)| {
            ghash.append_partial(state, partial, length as u64)
        })
    };
    let mut ranges = 0;
    let ghash_time = measure(2, repeats, || {
        let started = Instant::now();
        let partials = device.ghash_foreign(&hash_key, &memory, 4096)?;
        ranges = partials.len();
        std::hint::black_box(hash(partials));
        Ok(started.elapsed())
    })?;
    let gcm_time = measure(2, repeats, || {
        let started = Instant::now();
        device.process_foreign(&key, &operation, &memory, &memory)?;
        let partials = device.ghash_foreign(&hash_key, &memory, 4096)?;
        std::hint::black_box(hash(partials));
        Ok(started.elapsed())
    })?;
    println!(
        "ghash        {:8.1} GB/s whole call ({:.3} ms; the device's sums and the host's join \
         of {ranges} ranges)",
        rate(bytes, ghash_time),
        ghash_time.as_secs_f64() * 1e3
    );
    println!(
        "aes-128-gcm  {:8.1} GB/s whole call ({:.3} ms; CTR in place, GHASH, join: the text \
         pass of GCM on device memory)",
        rate(bytes, gcm_time),
        gcm_time.as_secs_f64() * 1e3
    );
    Ok(())
}

fn main() -> ExitCode {
    common::exit_code("cuda_speed", run())
}
