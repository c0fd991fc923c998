//! `parcrypt devices`: what can run here, and why anything cannot.

use std::fmt::Display;

use parcrypt::devices::tuning::{device_identity, tune_file};
use parcrypt::devices::{available_threads, tune_table_in};
use parcrypt::devices::{cpu_features, KernelFamily};
use parcrypt::environment::tune_directory;
use parcrypt::errors::GpuError;
use parcrypt::Backend;

use super::Failure;

pub fn run() -> Result<(), Failure> {
    let threads = available_threads();
    show!("CPU: {} hardware threads; {}", threads, cpu_features())?;
    let families: Vec<&str> = KernelFamily::supported()
        .into_iter()
        .map(KernelFamily::name)
        .collect();
    show!(
        "CPU kernels: {} (--kernels FAMILY limits them to one of: {})",
        KernelFamily::detected(),
        families.join(", ")
    )?;
    show!("backends:")?;
    show!("  seq      available   one thread")?;
    show!("  threads  available   static equal split over {threads} threads (--threads N)")?;
    show!("  pool     available   work stealing over {threads} threads (--threads N)")?;
    show!("  auto     available   one thread or the pool, chosen per job by a cost model measured on this machine; a tuned GPU for the jobs it was measured to win (`parcrypt tune`)")?;
    print_gpu(
        Backend::Opencl,
        parcrypt::devices::OpenClDevice::list(),
        "no OpenCL device found (install a driver, or pocl-opencl-icd for the CPU)",
    )?;
    print_gpu(
        Backend::Cuda,
        parcrypt::devices::CudaDevice::list(),
        "the CUDA driver found no device",
    )?;
    print_gpu(
        Backend::Hip,
        parcrypt::devices::HipDevice::list(),
        "no AMD GPU present",
    )?;
    Ok(())
}

/// The lines of one GPU backend: its devices and device #0's tuning, or why it is
/// unavailable (`none_found` when the backend loads and lists no device).
fn print_gpu<D: Display>(
    backend: Backend,
    listed: Result<Vec<D>, GpuError>,
    none_found: &str,
) -> Result<(), Failure> {
    let name = backend.name();
    match listed {
        Ok(devices) if !devices.is_empty() => {
            show!(
                "  {name:<8} available   {} device(s); --backend {name} uses #0",
                devices.len()
            )?;
            for device in &devices {
                show!("             {device}")?;
            }
            print_tuning(backend, &devices[0].to_string())
        }
        Ok(_) => show!("  {name:<8} unavailable {none_found}"),
        // One line either way: the HIP runtime does not load, or it loads and sees no GPU
        // ("no AMD GPU present (what it said)").
        Err(GpuError::NoHipRuntime { looked_for, .. }) => {
            show!("  {name:<8} unavailable not available here (no libamdhip64; tried {looked_for})")
        }
        Err(error) => show!("  {name:<8} unavailable {error}"),
    }
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
