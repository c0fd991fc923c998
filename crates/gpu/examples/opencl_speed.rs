//! End-to-end OpenCL throughput, for the record (benchmarks proper live in parcrypt-bench):
//! host buffer in, kernel, host buffer out, device synchronised.
//!
//! `cargo run --release -p parcrypt-gpu --example opencl_speed -- [DEVICE] [MIB] [COPIES]
//! [THREADS_PER_GROUP BLOCKS_PER_THREAD]`

use std::time::Instant;

use parcrypt_ciphers::Algorithm;
use parcrypt_gpu::{
    GpuOperation, KeyMaterial, LaunchGeometry, OpenClDevice, OpenOptions, TableCopies,
};
use parcrypt_modes::ctr::CounterRule;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut arguments = std::env::args().skip(1);
    let index: usize = arguments.next().map_or(Ok(0), |text| text.parse())?;
    let mebibytes: usize = arguments.next().map_or(Ok(64), |text| text.parse())?;
    let copies: Option<u32> = arguments.next().map(|text| text.parse()).transpose()?;
    let threads_per_group: Option<usize> = arguments.next().map(|text| text.parse()).transpose()?;
    let blocks_per_thread: Option<usize> = arguments.next().map(|text| text.parse()).transpose()?;

    for info in OpenClDevice::list()? {
        println!("{info}");
    }
    let geometry = match (threads_per_group, blocks_per_thread) {
        (Some(threads_per_group), Some(blocks_per_thread)) => Some(LaunchGeometry {
            threads_per_group,
            blocks_per_thread,
        }),
        _ => None,
    };
    let options = OpenOptions {
        table_copies: copies.map(TableCopies::uniform),
        geometry,
        ..OpenOptions::default()
    };
    let started = Instant::now();
    let device = OpenClDevice::open_with(index, &options)?;
    println!(
        "opened {} in {:.2?} ({:?}, {}, {:?})",
        device.name(),
        started.elapsed(),
        device.program_origin(),
        device.table_copies(),
        device.launch_geometry()
    );

    // Touched before timing: a fresh zeroed allocation is lazily mapped.
    let mut data: Vec<u8> = (0..mebibytes << 20).map(|index| index as u8).collect();
    let cases = [
        (
            "aes-128-ctr",
            Algorithm::Aes128,
            16,
            GpuOperation::Ctr {
                counter: vec![0; 16],
                rule: CounterRule::Full,
            },
        ),
        (
            "aes-256-ctr",
            Algorithm::Aes256,
            32,
            GpuOperation::Ctr {
                counter: vec![0; 16],
                rule: CounterRule::Full,
            },
        ),
        (
            "aes-128-cbc decrypt",
            Algorithm::Aes128,
            16,
            GpuOperation::CbcDecrypt {
                previous: vec![0; 16],
            },
        ),
        (
            "bf-ctr",
            Algorithm::Blowfish,
            16,
            GpuOperation::Ctr {
                counter: vec![0; 8],
                rule: CounterRule::Full,
            },
        ),
        (
            "rc6-128-ctr",
            Algorithm::Rc6_128,
            16,
            GpuOperation::Ctr {
                counter: vec![0; 16],
                rule: CounterRule::Full,
            },
        ),
    ];
    for (name, algorithm, key_length, operation) in cases {
        let key = KeyMaterial::new(algorithm, &vec![0x2b; key_length])?;
        // One untimed run: first launches compile and allocate.
        device.process(&key, &operation, &mut data[..1 << 20])?;
        let mut seconds = Vec::new();
        for _ in 0..3 {
            let started = Instant::now();
            device.process(&key, &operation, &mut data)?;
            seconds.push(started.elapsed().as_secs_f64());
        }
        seconds.sort_by(f64::total_cmp);
        println!(
            "{name:<20} {mebibytes} MiB: median {:.3} s, {:.1} MB/s end to end",
            seconds[1],
            data.len() as f64 / seconds[1] / 1e6
        );
    }
    Ok(())
}
