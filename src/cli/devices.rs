//! `parcrypt devices`: what can run here, and why anything cannot.

use parcrypt_ciphers::cpu_features;
use parcrypt_engine::{available_threads, tune_table_in, Backend};
use parcrypt_gpu::tuning::{device_identity, tune_directory, tune_file};

use super::Failure;

pub fn run() -> Result<(), Failure> {
    let threads = available_threads();
    println!("CPU: {} hardware threads; {}", threads, cpu_features());
    println!("backends:");
    println!("  seq      available   one thread");
    println!("  threads  available   static equal split over {threads} threads (--threads N)");
    println!("  pool     available   work stealing over {threads} threads (--threads N)");
    println!("  auto     available   one thread or the pool, chosen per job by a cost model measured on this machine; a tuned GPU for the jobs it was measured to win (`parcrypt tune`)");
    match parcrypt_gpu::OpenClDevice::list() {
        Ok(devices) if !devices.is_empty() => {
            println!("  opencl   available   {} device(s); --backend opencl uses #0", devices.len());
            for device in &devices {
                println!("             {device}");
            }
            print_tuning(Backend::Opencl, &devices[0].to_string());
        }
        Ok(_) => println!("  opencl   unavailable no OpenCL device found (install a driver, or pocl-opencl-icd for the CPU)"),
        Err(error) => println!("  opencl   unavailable {error}"),
    }
    match parcrypt_gpu::CudaDevice::list() {
        Ok(devices) if !devices.is_empty() => {
            println!(
                "  cuda     available   {} device(s); --backend cuda uses #0",
                devices.len()
            );
            for device in &devices {
                println!("             {device}");
            }
            print_tuning(Backend::Cuda, &devices[0].to_string());
        }
        Ok(_) => println!("  cuda     unavailable the CUDA driver found no device"),
        Err(error) => println!("  cuda     unavailable {error}"),
    }
    Ok(())
}

/// Whether device #0 of a GPU backend has a tune file, and what `auto` takes from it.
fn print_tuning(backend: Backend, description: &str) {
    let identity = device_identity(backend.name(), description);
    let Some(directory) = tune_directory() else {
        println!("             not tuned (no tune directory: set PARCRYPT_TUNE_DIR or HOME)");
        return;
    };
    let path = tune_file(&directory, backend.name(), &identity);
    match tune_table_in(&directory, backend, &identity) {
        None if path.exists() => println!(
            "             tune file {} is unreadable or from another device: untuned (run `parcrypt tune --backend {backend}`)",
            path.display()
        ),
        None => println!("             not tuned (run `parcrypt tune --backend {backend}`)"),
        Some(table) => {
            let wins: Vec<String> = table
                .crossovers
                .iter()
                .filter_map(|crossover| {
                    crossover.gpu_from_bytes.map(|bytes| format!("{} {} from {bytes} B", crossover.spec, crossover.direction))
                })
                .collect();
            println!(
                "             tuned: {} launch shapes in {}; auto uses it for {}",
                table.shapes.len(),
                path.display(),
                if wins.is_empty() { "nothing (the CPU won every job measured)".to_string() } else { wins.join(", ") }
            );
        }
    }
}
