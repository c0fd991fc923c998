//! `parcrypt devices`: what can run here, and why anything cannot.

use parcrypt::devices::cpu_features;
use parcrypt::devices::tuning::{device_identity, tune_file};
use parcrypt::devices::{available_threads, tune_table_in};
use parcrypt::environment::tune_directory;
use parcrypt::errors::GpuError;
use parcrypt::Backend;

use super::Failure;

pub fn run() -> Result<(), Failure> {
    let threads = available_threads();
    show!("CPU: {} hardware threads; {}", threads, cpu_features())?;
    show!("backends:")?;
    show!("  seq      available   one thread")?;
    show!("  threads  available   static equal split over {threads} threads (--threads N)")?;
    show!("  pool     available   work stealing over {threads} threads (--threads N)")?;
    show!("  auto     available   one thread or the pool, chosen per job by a cost model measured on this machine; a tuned GPU for the jobs it was measured to win (`parcrypt tune`)")?;
    match parcrypt::devices::OpenClDevice::list() {
        Ok(devices) if !devices.is_empty() => {
            show!("  opencl   available   {} device(s); --backend opencl uses #0", devices.len())?;
            for device in &devices {
                show!("             {device}")?;
            }
            print_tuning(Backend::Opencl, &devices[0].to_string())?;
        }
        Ok(_) => show!("  opencl   unavailable no OpenCL device found (install a driver, or pocl-opencl-icd for the CPU)")?,
        Err(error) => show!("  opencl   unavailable {error}")?,
    }
    match parcrypt::devices::CudaDevice::list() {
        Ok(devices) if !devices.is_empty() => {
            show!(
                "  cuda     available   {} device(s); --backend cuda uses #0",
                devices.len()
            )?;
            for device in &devices {
                show!("             {device}")?;
            }
            print_tuning(Backend::Cuda, &devices[0].to_string())?;
        }
        Ok(_) => show!("  cuda     unavailable the CUDA driver found no device")?,
        Err(error) => show!("  cuda     unavailable {error}")?,
    }
    match parcrypt::devices::HipDevice::list() {
        Ok(devices) if !devices.is_empty() => {
            show!(
                "  hip      available   {} device(s); --backend hip uses #0",
                devices.len()
            )?;
            for device in &devices {
                show!("             {device}")?;
            }
            print_tuning(Backend::Hip, &devices[0].to_string())?;
        }
        Ok(_) => show!("  hip      unavailable no AMD GPU present")?,
        // One line either way: the runtime does not load, or it loads and sees no GPU
        // ("no AMD GPU present (what it said)").
        Err(GpuError::NoHipRuntime { looked_for, .. }) => {
            show!("  hip      unavailable not available here (no libamdhip64; tried {looked_for})")?
        }
        Err(error) => show!("  hip      unavailable {error}")?,
    }
    Ok(())
}

/// Whether device #0 of a GPU backend has a tune file, and what `auto` takes from it.
fn print_tuning(backend: Backend, description: &str) -> Result<(), Failure> {
    let identity = device_identity(backend.name(), description);
    let Some(directory) = tune_directory() else {
        return show!("             not tuned (no tune directory: set PARCRYPT_TUNE_DIR or HOME)");
    };
    let path = tune_file(&directory, backend.name(), &identity);
    match tune_table_in(&directory, backend, &identity) {
        None if path.exists() => show!(
            "             tune file {} is unreadable or from another device: untuned (run `parcrypt tune --backend {backend}`)",
            path.display()
        )?,
        None => show!("             not tuned (run `parcrypt tune --backend {backend}`)")?,
        Some(table) => {
            let wins: Vec<String> = table
                .crossovers
                .iter()
                .filter_map(|crossover| {
                    crossover.gpu_from_bytes.map(|bytes| format!("{} {} from {bytes} B", crossover.spec, crossover.direction))
                })
                .collect();
            show!(
                "             tuned: {} launch shapes in {}; auto uses it for {}",
                table.shapes.len(),
                path.display(),
                if wins.is_empty() { "nothing (the CPU won every job measured)".to_string() } else { wins.join(", ") }
            )?;
        }
    }
    Ok(())
}
