//! Finding libcuda and the GPUs it drives.

use std::fmt;

use cudarc::driver::result::{self as driver, DriverError};
use cudarc::driver::sys::{self, CUdevice_attribute};

use crate::GpuError;

/// One CUDA device as `parcrypt devices` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaDeviceInfo {
    /// The number to pass to [`CudaDevice::open`](super::CudaDevice::open): the driver's
    /// ordinal (after `CUDA_VISIBLE_DEVICES`).
    pub index: usize,
    /// The device's name as the driver reports it.
    pub name: String,
    /// (major, minor), e.g. (9, 0) for Hopper.
    pub compute_capability: (u32, u32),
    /// Number of streaming multiprocessors.
    pub multiprocessors: u32,
    /// 0 where the driver no longer reports it.
    pub clock_mhz: u32,
    /// Size of the device's global memory, in bytes.
    pub global_memory_bytes: u64,
    /// Shared memory one block may have once it opts in; decides how many table copies fit.
    pub shared_memory_per_block_bytes: u64,
    /// DMA engines: two or more let host-to-device and device-to-host copies overlap.
    pub copy_engines: u32,
    /// The CUDA version the driver implements, e.g. (13, 0).
    pub driver_version: (u32, u32),
}

impl fmt::Display for CudaDeviceInfo {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ((major, minor), (driver_major, driver_minor)) =
            (self.compute_capability, self.driver_version);
        crate::DeviceLine {
            index: self.index,
            name: &self.name,
            platform: format_args!("CUDA, compute capability {major}.{minor}"),
            units: format_args!("{} multiprocessors", self.multiprocessors),
            clock_mhz: (self.clock_mhz > 0).then_some(self.clock_mhz),
            global_memory_bytes: self.global_memory_bytes,
            memory: format_args!(
                "{} KiB shared memory per block, {} copy engines",
                self.shared_memory_per_block_bytes / 1024,
                self.copy_engines
            ),
            driver: format_args!("driver CUDA {driver_major}.{driver_minor}"),
        }
        .fmt(formatter)
    }
}

pub(crate) trait CudaResultExt<T> {
    /// `.or_cuda("cuSomething")?` on a driver result.
    fn or_cuda(self, call: &'static str) -> Result<T, GpuError>;
}

impl<T> CudaResultExt<T> for Result<T, DriverError> {
    fn or_cuda(self, call: &'static str) -> Result<T, GpuError> {
        self.map_err(|error| GpuError::Cuda {
            call,
            code: describe_error(error),
        })
    }
}

/// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
fn describe_error(error: DriverError) -> String {
    match error.error_string() {
        Ok(text) => format!("{:?} ({})", error.0, text.to_string_lossy()),
        Err(_) => format!("{:?}", error.0),
    }
}

/// The usual file names of library `name` among those cudarc tries, for a message: the
/// full list also holds Windows-style spellings nobody looks for on Linux.
pub(crate) fn library_names(name: &str) -> String {
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    let candidates = cudarc::get_lib_name_candidates(name);
    let plain = format!("{DLL_PREFIX}{name}{DLL_SUFFIX}");
    let mut shown: Vec<&str> = Vec::new();
    for candidate in &candidates {
        if candidate.starts_with(&plain) && !shown.contains(&candidate.as_str()) {
            shown.push(candidate);
        }
    }
    format!(
        "{} (or {} other spellings)",
        shown.join(", "),
        candidates.len() - shown.len()
    )
}

/// Finds libcuda and initialises it; returns how many devices it sees. Must come before any
/// other driver call: cudarc panics on first use of a library it cannot open.
pub(crate) fn initialise() -> Result<usize, GpuError> {
    // SAFETY: only tries to open the library under each candidate name; no symbol is used.
    if !unsafe { sys::is_culib_present() } {
        return Err(GpuError::NoCudaDriver {
            looked_for: library_names("cuda"),
        });
    }
    // A driver without a usable GPU (no device, a container without the device files, a
    // driver and kernel module that disagree) fails here: for the caller that is "no
    // device", with the driver's reason.
    if let Err(error) = driver::init() {
        return Err(GpuError::NoCudaDevice {
            index: 0,
            count: 0,
            detail: format!(": cuInit failed with {}", describe_error(error)),
        });
    }
    let count = driver::device::get_count().or_cuda("cuDeviceGetCount")?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// The driver's device handle for ordinal `index`, or why there is none.
pub(crate) fn device_handle(index: usize) -> Result<sys::CUdevice, GpuError> {
    let count = initialise().map_err(|error| match error {
        GpuError::NoCudaDevice { count, detail, .. } => GpuError::NoCudaDevice {
            index,
            count,
            detail,
        },
        other => other,
    })?;
    if index >= count {
        return Err(GpuError::NoCudaDevice {
            index,
            count,
            detail: String::new(),
        });
    }
    driver::device::get(index as i32).or_cuda("cuDeviceGet")
}

fn attribute(device: sys::CUdevice, attribute: CUdevice_attribute) -> Result<u32, GpuError> {
    // SAFETY: `device` is a handle the driver returned for an existing ordinal.
    let value = unsafe { driver::device::get_attribute(device, attribute) }
        .or_cuda("cuDeviceGetAttribute")?;
    Ok(u32::try_from(value).unwrap_or(0))
}

pub(crate) fn driver_version() -> Result<(u32, u32), GpuError> {
    let mut version = 0;
    // SAFETY: the driver writes one int to a live local.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .or_cuda("cuDriverGetVersion")?;
    let version = u32::try_from(version).unwrap_or(0);
    Ok((version / 1000, version % 1000 / 10))
}

/// Describes device `index` without creating a context (which would take memory and time).
pub(crate) fn describe(index: usize) -> Result<CudaDeviceInfo, GpuError> {
    let device = device_handle(index)?;
    let major = attribute(
        device,
        CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
    )?;
    let minor = attribute(
        device,
        CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
    )?;
    // SAFETY: as for `attribute`.
    let memory = unsafe { driver::device::total_mem(device) }.or_cuda("cuDeviceTotalMem")?;
    Ok(CudaDeviceInfo {
        index,
        name: driver::device::get_name(device).or_cuda("cuDeviceGetName")?,
        compute_capability: (major, minor),
        multiprocessors: attribute(
            device,
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )?,
        // Reported in kHz; deprecated in newer drivers, so a failure is not fatal.
        clock_mhz: attribute(device, CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
            .unwrap_or(0)
            / 1000,
        global_memory_bytes: memory as u64,
        shared_memory_per_block_bytes: u64::from(attribute(
            device,
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )?),
        copy_engines: attribute(
            device,
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT,
        )?,
        driver_version: driver_version()?,
    })
}

/// Every device the driver sees.
pub(crate) fn describe_all() -> Result<Vec<CudaDeviceInfo>, GpuError> {
    let count = match initialise() {
        Ok(count) => count,
        // A driver with no usable device lists none rather than failing.
        Err(GpuError::NoCudaDevice { .. }) => 0,
        Err(error) => return Err(error),
    };
    (0..count).map(describe).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_driver_listing_says_so_or_lists_devices() {
        crate::host::assert_lists_or_says_why(
            describe_all(),
            |device: &CudaDeviceInfo| device.index,
            |error| {
                matches!(error, GpuError::NoCudaDriver { .. })
                    && error.to_string().contains("libcuda.so")
            },
        );
    }
}
