//! `parcrypt devices`: what can run here, and why anything cannot.

use parcrypt_ciphers::cpu_features;
use parcrypt_engine::available_threads;

use super::Failure;

pub fn run() -> Result<(), Failure> {
    let threads = available_threads();
    println!("CPU: {} hardware threads; {}", threads, cpu_features());
    println!("backends:");
    println!("  seq      available   one thread");
    println!("  threads  available   static equal split over {threads} threads (--threads N)");
    println!("  pool     available   work stealing over {threads} threads (--threads N)");
    println!("  auto     available   one thread or the pool, chosen per job by a cost model measured on this machine");
    match parcrypt_gpu::OpenClDevice::list() {
        Ok(devices) if !devices.is_empty() => {
            println!("  opencl   available   {} device(s); --backend opencl uses #0", devices.len());
            for device in devices {
                println!("             {device}");
            }
        }
        Ok(_) => println!("  opencl   unavailable no OpenCL device found (install a driver, or pocl-opencl-icd for the CPU)"),
        Err(error) => println!("  opencl   unavailable {error}"),
    }
    match parcrypt_gpu::CudaDevice::list() {
        Ok(devices) if !devices.is_empty() => {
            println!("  cuda     available   {} device(s); --backend cuda uses #0", devices.len());
            for device in devices {
                println!("             {device}");
            }
        }
        Ok(_) => println!("  cuda     unavailable the CUDA driver found no device"),
        Err(error) => println!("  cuda     unavailable {error}"),
    }
    Ok(())
}
