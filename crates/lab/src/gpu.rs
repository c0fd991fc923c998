//! GPU devices opened by the lab itself, for what the engine does not expose: the launch
//! shape (tuning), data already on the device (kernel-only times), pinned host memory.

use std::time::Duration;

use parcrypt_engine::Backend;
use parcrypt_gpu::{
    CudaDevice, DeviceKind, GpuDevice, GpuError, GpuOperation, HipDevice, KeyMaterial,
    LaunchGeometry, OpenClDevice,
};
use parcrypt_modes::ctr::CounterRule;
use parcrypt_modes::{CipherSpec, Direction, Mode};

use crate::stats::{measure_repeated, Probe, Repetition, Sampled, SystemClock};
use crate::throughput::{bench_key_iv, random_buffer};
use crate::BenchError;

/// An OpenCL, CUDA or HIP device, opened with the default options (the engine's choice).
pub enum DirectDevice {
    OpenCl(Box<OpenClDevice>),
    Cuda(Box<CudaDevice>),
    Hip(Box<HipDevice>),
}

impl DirectDevice {
    /// Device 0 of a GPU backend.
    pub fn open(backend: Backend) -> Result<Self, GpuError> {
        match backend {
            Backend::Opencl => Ok(DirectDevice::OpenCl(Box::new(OpenClDevice::open(0)?))),
            Backend::Cuda => Ok(DirectDevice::Cuda(Box::new(CudaDevice::open(0)?))),
            Backend::Hip => Ok(DirectDevice::Hip(Box::new(HipDevice::open(0)?))),
            other => Err(GpuError::InvalidInput(format!(
                "{other} is not a GPU backend"
            ))),
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            DirectDevice::OpenCl(_) => Backend::Opencl,
            DirectDevice::Cuda(_) => Backend::Cuda,
            DirectDevice::Hip(_) => Backend::Hip,
        }
    }

    pub fn name(&self) -> String {
        match self {
            DirectDevice::OpenCl(device) => device.name(),
            DirectDevice::Cuda(device) => device.name(),
            DirectDevice::Hip(device) => device.name(),
        }
    }

    /// The shape used before any tuning: the device kind's default.
    pub fn untuned_geometry(&self) -> LaunchGeometry {
        match self {
            DirectDevice::OpenCl(device) => LaunchGeometry::default_for(device.info().kind),
            DirectDevice::Cuda(_) | DirectDevice::Hip(_) => {
                LaunchGeometry::default_for(DeviceKind::Gpu)
            }
        }
    }

    /// The device as the engine drives it, for what both APIs do alike (host data in,
    /// result back in host memory, device synchronised; the launch shape).
    pub fn gpu(&self) -> &dyn GpuDevice {
        match self {
            DirectDevice::OpenCl(device) => device.as_ref(),
            DirectDevice::Cuda(device) => device.as_ref(),
            DirectDevice::Hip(device) => device.as_ref(),
        }
    }

    pub fn launch_geometry(&self) -> LaunchGeometry {
        self.gpu().launch_geometry()
    }

    pub fn set_launch_geometry(&self, geometry: LaunchGeometry) -> Result<(), GpuError> {
        self.gpu().set_launch_geometry(geometry)
    }

    pub fn opencl(&self) -> Option<&OpenClDevice> {
        match self {
            DirectDevice::OpenCl(device) => Some(device),
            DirectDevice::Cuda(_) | DirectDevice::Hip(_) => None,
        }
    }

    pub fn cuda(&self) -> Option<&CudaDevice> {
        match self {
            DirectDevice::Cuda(device) => Some(device),
            DirectDevice::OpenCl(_) | DirectDevice::Hip(_) => None,
        }
    }

    /// Whether the device says it shares the host's memory, where zero-copy is expected to
    /// win (OpenCL: `CL_DEVICE_HOST_UNIFIED_MEMORY`; CUDA and HIP: an integrated GPU).
    pub fn host_unified_memory(&self) -> bool {
        match self {
            DirectDevice::OpenCl(device) => device.host_unified_memory(),
            DirectDevice::Cuda(device) => device.host_unified_memory(),
            DirectDevice::Hip(device) => device.host_unified_memory(),
        }
    }

    /// Whether the device's API maps host memory for its kernels (zero-copy): OpenCL and
    /// CUDA do, the HIP adapter does not.
    pub fn maps_host_memory(&self) -> bool {
        !matches!(self, DirectDevice::Hip(_))
    }
}

/// A device's name from the engine's one-line description (`#0 NAME (details...)`), for
/// records: the run's header keeps the whole description.
pub fn device_name(description: &str) -> String {
    let without_index = match description.strip_prefix('#') {
        Some(rest) => rest.split_once(' ').map_or(rest, |(_, name)| name),
        None => description,
    };
    without_index
        .split(" (")
        .next()
        .unwrap_or(without_index)
        .trim()
        .to_string()
}

/// The operation a GPU runs for `spec` in `direction` with the benchmark's IV, when the
/// GPU runs it alone (ECB, CTR, CBC decryption; not CBC encryption, not GCM's GHASH).
pub fn operation(spec: CipherSpec, direction: Direction) -> Option<GpuOperation> {
    let (_, iv) = bench_key_iv(spec);
    match (spec.mode, direction) {
        (Mode::Ecb, Direction::Encrypt) => Some(GpuOperation::EcbEncrypt),
        (Mode::Ecb, Direction::Decrypt) => Some(GpuOperation::EcbDecrypt),
        (Mode::Ctr, _) => Some(GpuOperation::Ctr {
            counter: iv?,
            rule: CounterRule::Full,
        }),
        (Mode::Cbc, Direction::Decrypt) => Some(GpuOperation::CbcDecrypt { previous: iv? }),
        _ => None,
    }
}

fn key_and_operation(
    spec: CipherSpec,
    direction: Direction,
) -> Result<(KeyMaterial, GpuOperation), BenchError> {
    let operation = operation(spec, direction).ok_or_else(|| {
        BenchError::Unsupported(format!(
            "{spec} {direction:?} does not run on the GPU alone"
        ))
    })?;
    let (key, _) = bench_key_iv(spec);
    Ok((KeyMaterial::new(spec.algorithm, key)?, operation))
}

/// End to end through the device directly (key schedule prepared once): what tuning
/// compares, since the launch shape is all that changes.
pub fn time_host(
    device: &DirectDevice,
    spec: CipherSpec,
    direction: Direction,
    data: &mut [u8],
    repetition: Repetition,
) -> Result<Sampled, BenchError> {
    let (key, operation) = key_and_operation(spec, direction)?;
    measure_repeated(&mut SystemClock::default(), repetition, &mut (), || {
        device
            .gpu()
            .process(&key, &operation, data)
            .map(|()| None)
            .map_err(BenchError::from)
    })
}

/// Kernel-only times on an OpenCL device: each job is a whole host-to-host call
/// ([`OpenClDevice::process_timed`]), of which only the kernels' time from OpenCL profiling
/// events counts (copies excluded; kernels overlapping on the two queues count once). On a
/// CPU device such as PoCL the kernels run on the CPU, so these are CPU times.
pub fn time_opencl_kernel(
    device: &OpenClDevice,
    spec: CipherSpec,
    direction: Direction,
    data: &mut [u8],
    repetition: Repetition,
    probe: &mut dyn Probe,
) -> Result<Sampled, BenchError> {
    let (key, operation) = key_and_operation(spec, direction)?;
    measure_repeated(&mut SystemClock::default(), repetition, probe, || {
        let (kernel, _end_to_end) = device.process_timed(&key, &operation, data)?;
        Ok(Some(kernel))
    })
}

/// How host data reaches the device in the zero-copy comparison (s4). Every path prepares
/// the key once, so that only the data's way differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostTransfer {
    /// `process`: copied into device buffers and back.
    Copy,
    /// `process_zero_copy`: copied by the host into mapped host memory and back out; the
    /// kernel reads and writes the mapped memory.
    ZeroCopyStaged,
    /// The data lives in a mapped buffer the kernel reads and writes: no copy at all.
    ZeroCopyMapped,
    /// As [`HostTransfer::ZeroCopyMapped`], the kernel's own time (OpenCL profiling or CUDA
    /// events).
    ZeroCopyMappedKernel,
}

/// Times `spec` over `bytes` of random data moved as `transfer` says, on an OpenCL or CUDA
/// device opened by the lab.
pub fn time_host_transfer(
    device: &DirectDevice,
    spec: CipherSpec,
    direction: Direction,
    bytes: usize,
    transfer: HostTransfer,
    repetition: Repetition,
    probe: &mut dyn Probe,
) -> Result<Sampled, BenchError> {
    let (key, operation) = key_and_operation(spec, direction)?;
    let mut data = random_buffer(bytes, 0x5eed);
    let clock = &mut SystemClock::default();
    match transfer {
        HostTransfer::Copy => measure_repeated(clock, repetition, probe, || {
            device.gpu().process(&key, &operation, &mut data)?;
            Ok(None)
        }),
        HostTransfer::ZeroCopyStaged => measure_repeated(clock, repetition, probe, || {
            match device {
                DirectDevice::OpenCl(device) => {
                    device.process_zero_copy(&key, &operation, &mut data)?
                }
                DirectDevice::Cuda(device) => {
                    device.process_zero_copy(&key, &operation, &mut data)?
                }
                DirectDevice::Hip(_) => Err(no_mapped_memory())?,
            }
            Ok(None)
        }),
        HostTransfer::ZeroCopyMapped | HostTransfer::ZeroCopyMappedKernel => {
            // Each job is one call on the buffer, timed by the host clock (end to end) or
            // by the device (the kernel alone).
            let kernel_only = transfer == HostTransfer::ZeroCopyMappedKernel;
            // The two APIs' mapped buffers are different types with the same methods.
            macro_rules! time_mapped {
                ($device:expr) => {{
                    let mut buffer = $device.mapped_buffer(bytes)?;
                    buffer.as_mut_slice().copy_from_slice(&data);
                    measure_repeated(clock, repetition, probe, || {
                        if kernel_only {
                            Ok(Some(buffer.process_timed(&key, &operation)?.0))
                        } else {
                            buffer.process(&key, &operation)?;
                            Ok(None)
                        }
                    })
                }};
            }
            match device {
                DirectDevice::OpenCl(device) => time_mapped!(device),
                DirectDevice::Cuda(device) => time_mapped!(device),
                DirectDevice::Hip(_) => Err(no_mapped_memory().into()),
            }
        }
    }
}

/// What a zero-copy measurement on HIP gets: the HIP adapter maps no host memory.
fn no_mapped_memory() -> GpuError {
    GpuError::Unsupported {
        api: parcrypt_gpu::GpuApi::Hip,
        operation: "mapped (zero-copy) host memory",
    }
}

/// Where the data of a CUDA measurement lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Residence {
    /// Page-locked host memory: the copies need no staging.
    Pinned,
    /// Already in device memory; the wall time of the synchronised call.
    Device,
    /// Already in device memory; the kernels' time from CUDA events.
    DeviceKernel,
}

/// Times `spec` over `bytes` of random data placed as `residence` says, on a CUDA device.
pub fn time_cuda(
    device: &CudaDevice,
    spec: CipherSpec,
    direction: Direction,
    bytes: usize,
    residence: Residence,
    repetition: Repetition,
    probe: &mut dyn Probe,
) -> Result<Sampled, BenchError> {
    let (key, operation) = key_and_operation(spec, direction)?;
    let data = random_buffer(bytes, 0x5eed);
    let cuda = |error: &dyn std::fmt::Display| {
        BenchError::Gpu(GpuError::InvalidInput(format!("CUDA: {error}")))
    };
    match residence {
        Residence::Pinned => {
            let mut pinned = device.alloc_pinned(bytes)?;
            pinned
                .as_mut_slice()
                .map_err(|error| cuda(&error))?
                .copy_from_slice(&data);
            measure_repeated(&mut SystemClock::default(), repetition, probe, || {
                device
                    .process_pinned(&key, &operation, &mut pinned, 0..bytes)
                    .map(|()| None)
                    .map_err(BenchError::from)
            })
        }
        Residence::Device | Residence::DeviceKernel => {
            let mut buffer = device.copy_to_device(&data)?;
            measure_repeated(&mut SystemClock::default(), repetition, probe, || {
                if residence == Residence::DeviceKernel {
                    let kernel: Duration =
                        device.process_device_buffer_timed(&key, &operation, &mut buffer)?;
                    Ok(Some(kernel))
                } else {
                    device.process_device_buffer(&key, &operation, &mut buffer)?;
                    Ok(None)
                }
            })
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn device_names_drop_the_index_and_the_details() {
        assert_eq!(super::device_name("#0 pthread-skylake-avx512-AMD EPYC (Portable Computing Language, CPU; 2 compute units)"), "pthread-skylake-avx512-AMD EPYC");
        assert_eq!(
            super::device_name("#1 NVIDIA H200 (CUDA, compute capability 9.0) [sm_90]"),
            "NVIDIA H200"
        );
        assert_eq!(super::device_name("plain"), "plain");
    }
}
