//! Finding libOpenCL, its platforms and their devices.

use std::sync::{Mutex, PoisonError};

use opencl3::device::{
    Device, CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU,
};
use opencl3::error_codes::CL_DEVICE_NOT_FOUND;
use opencl3::platform::get_platforms;
use opencl3::types::cl_device_id;

use crate::error::ApiResultExt;
use crate::{DeviceInfo, DeviceKind, GpuError};

/// A device found on this machine, with what identifies its compiled binaries.
pub(crate) struct FoundDevice {
    pub(crate) info: DeviceInfo,
    pub(crate) id: cl_device_id,
    pub(crate) platform_version: String,
}

/// The library names the loader tries, in order, for the error message.
fn library_names() -> String {
    let default = if cfg!(target_os = "windows") {
        "OpenCL.dll"
    } else if cfg!(target_os = "macos") {
        "/System/Library/Frameworks/OpenCL.framework/OpenCL"
    } else {
        "libOpenCL.so.1"
    };
    match std::env::var("OPENCL_DYLIB_PATH") {
        Ok(paths) if !paths.is_empty() => {
            format!(
                "{} (from OPENCL_DYLIB_PATH), then {default}",
                paths.split(';').collect::<Vec<_>>().join(", ")
            )
        }
        _ => default.to_string(),
    }
}

/// Opens libOpenCL once (the loader caches the outcome). Every other OpenCL call returns a
/// bare error code when the library is missing; this says which file was looked for.
pub(crate) fn check_library() -> Result<(), GpuError> {
    match cl3::load_library() {
        Ok(_) => Ok(()),
        Err(error) => Err(GpuError::NoOpenClLibrary {
            looked_for: library_names(),
            reason: error.to_string(),
        }),
    }
}

fn kind_of(device_type: u64) -> DeviceKind {
    if device_type & CL_DEVICE_TYPE_GPU != 0 {
        DeviceKind::Gpu
    } else if device_type & CL_DEVICE_TYPE_CPU != 0 {
        DeviceKind::Cpu
    } else if device_type & CL_DEVICE_TYPE_ACCELERATOR != 0 {
        DeviceKind::Accelerator
    } else {
        DeviceKind::Other
    }
}

fn describe(index: usize, id: cl_device_id, platform: &str) -> Result<DeviceInfo, GpuError> {
    let device = Device::new(id);
    let query = "clGetDeviceInfo";
    Ok(DeviceInfo {
        index,
        name: device.name().or_api(query)?,
        vendor: device.vendor().or_api(query)?,
        platform: platform.to_string(),
        version: device.version().or_api(query)?,
        driver_version: device.driver_version().or_api(query)?,
        kind: kind_of(device.dev_type().or_api(query)?),
        compute_units: device.max_compute_units().or_api(query)?,
        clock_mhz: device.max_clock_frequency().or_api(query)?,
        global_memory_bytes: device.global_mem_size().or_api(query)?,
        local_memory_bytes: device.local_mem_size().or_api(query)?,
        max_allocation_bytes: device.max_mem_alloc_size().or_api(query)?,
        little_endian: device.endian_little().or_api(query)?,
    })
}

/// Every device of every platform, numbered in that order.
pub(crate) fn find_all() -> Result<Vec<FoundDevice>, GpuError> {
    // The ICD loader and PoCL 3.1 initialise their platforms lazily on the first query, and
    // two threads making that first query together were seen to get an empty device list
    // or a crash. Enumeration is rare and quick, so it is simply done one thread at a time.
    static ENUMERATION: Mutex<()> = Mutex::new(());
    let _one_at_a_time = ENUMERATION.lock().unwrap_or_else(PoisonError::into_inner);
    check_library()?;
    let platforms = get_platforms().map_err(|error| GpuError::NoPlatform {
        code: format!("{error} ({})", error.0),
    })?;
    if platforms.is_empty() {
        return Err(GpuError::NoPlatform {
            code: "clGetPlatformIDs returned none".into(),
        });
    }
    let mut found = Vec::new();
    for platform in platforms {
        let platform_name = platform.name().or_api("clGetPlatformInfo")?;
        let platform_version = platform.version().or_api("clGetPlatformInfo")?;
        let ids = match platform.get_devices(CL_DEVICE_TYPE_ALL) {
            Ok(ids) => ids,
            // A platform with nothing plugged in is not an error for the others.
            Err(error) if error.0 == CL_DEVICE_NOT_FOUND => Vec::new(),
            Err(error) => return Err(GpuError::api("clGetDeviceIDs", error)),
        };
        for id in ids {
            let info = describe(found.len(), id, &platform_name)?;
            found.push(FoundDevice {
                info,
                id,
                platform_version: platform_version.clone(),
            });
        }
    }
    Ok(found)
}
