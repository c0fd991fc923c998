//! Finding libamdhip64 and the AMD GPUs it drives.

use std::ffi::{c_char, c_int, c_void};
use std::fmt;

use super::library::{self, Runtime};
use crate::GpuError;

/// `hipDeviceAttribute_t` values used here (the same in ROCm 5 and 6).
const ATTRIBUTE_CLOCK_RATE: c_int = 5;
const ATTRIBUTE_INTEGRATED: c_int = 16;
const ATTRIBUTE_MULTIPROCESSOR_COUNT: c_int = 63;
const ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: c_int = 74;
const ATTRIBUTE_WARP_SIZE: c_int = 87;

/// Bytes reserved for `hipDeviceProp_t`, which is 792 bytes in ROCm 5 and about 1.5 KiB in
/// ROCm 6: room for either.
const PROPERTIES_BYTES: usize = 8192;

/// One HIP device as `parcrypt devices` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HipDeviceInfo {
    /// The number to pass to [`HipDevice::open`](super::HipDevice::open): the runtime's
    /// ordinal (after `HIP_VISIBLE_DEVICES`).
    pub index: usize,
    /// The device's name as the runtime reports it.
    pub name: String,
    /// The GPU target with its features, e.g. `gfx90a:sramecc+:xnack-`; the kernels are
    /// compiled for its `gfxNNN` part.
    pub architecture: String,
    /// Number of compute units.
    pub compute_units: u32,
    /// Peak clock, in megahertz (0 where the runtime does not say).
    pub clock_mhz: u32,
    /// Size of the device's global memory, in bytes.
    pub global_memory_bytes: u64,
    /// LDS one work-group may have; decides how many table copies fit.
    pub shared_memory_per_block_bytes: u64,
    /// Lanes per wavefront: 64 on CDNA, 32 on RDNA.
    pub wavefront: u32,
    /// Whether the GPU shares the host's memory (an APU).
    pub integrated: bool,
    /// The HIP runtime's version, e.g. (5, 2, 21153).
    pub runtime_version: (u32, u32, u32),
}

impl HipDeviceInfo {
    /// The `gfxNNN` target the kernels are compiled for.
    pub fn target(&self) -> &str {
        library::base_target(&self.architecture)
    }
}

impl fmt::Display for HipDeviceInfo {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (major, minor, patch) = self.runtime_version;
        crate::DeviceLine {
            index: self.index,
            name: &self.name,
            platform: format_args!("HIP, {}", self.architecture),
            units: format_args!("{} compute units", self.compute_units),
            clock_mhz: (self.clock_mhz > 0).then_some(self.clock_mhz),
            global_memory_bytes: self.global_memory_bytes,
            memory: format_args!(
                "{} KiB LDS per work-group, wavefront {}{}",
                self.shared_memory_per_block_bytes / 1024,
                self.wavefront,
                if self.integrated { ", integrated" } else { "" },
            ),
            driver: format_args!("HIP runtime {major}.{minor}.{patch}"),
        }
        .fmt(formatter)
    }
}

/// Loads the runtime and initialises it; returns it and how many devices it sees. A runtime
/// that finds no AMD GPU gives [`GpuError::NoAmdGpu`] with what it said.
pub(crate) fn initialise() -> Result<(&'static Runtime, usize), GpuError> {
    let runtime = library::runtime()?;
    let file = library::runtime_file().unwrap_or("libamdhip64");
    // SAFETY: hipInit takes flags (0) and only initialises the runtime.
    let status = unsafe { (runtime.hipInit)(0) };
    if status != 0 {
        return Err(GpuError::NoAmdGpu {
            detail: format!("{file}: hipInit returned {}", runtime.describe(status)),
        });
    }
    let mut count: c_int = 0;
    // SAFETY: the runtime writes one int to a live local.
    let status = unsafe { (runtime.hipGetDeviceCount)(&mut count) };
    if status != 0 {
        return Err(GpuError::NoAmdGpu {
            detail: format!(
                "{file}: hipGetDeviceCount returned {}",
                runtime.describe(status)
            ),
        });
    }
    match usize::try_from(count).unwrap_or(0) {
        0 => Err(GpuError::NoAmdGpu {
            detail: format!("{file}: hipGetDeviceCount found 0 devices"),
        }),
        count => Ok((runtime, count)),
    }
}

/// The runtime with device `index` made current on this thread, or why there is none.
pub(crate) fn select(index: usize) -> Result<&'static Runtime, GpuError> {
    let (runtime, count) = initialise()?;
    if index >= count {
        return Err(GpuError::NoHipDevice { index, count });
    }
    let ordinal = ordinal(index)?;
    // SAFETY: `ordinal` is below the device count.
    runtime.check("hipSetDevice", unsafe { (runtime.hipSetDevice)(ordinal) })?;
    Ok(runtime)
}

/// `index` as the runtime's `int` ordinal.
pub(crate) fn ordinal(index: usize) -> Result<c_int, GpuError> {
    c_int::try_from(index)
        .map_err(|_| GpuError::InvalidInput(format!("no HIP device number {index}")))
}

fn attribute(runtime: &Runtime, ordinal: c_int, attribute: c_int) -> Result<u32, GpuError> {
    let mut value: c_int = 0;
    // SAFETY: `ordinal` is an existing device; the runtime writes one int.
    runtime.check("hipDeviceGetAttribute", unsafe {
        (runtime.hipDeviceGetAttribute)(&mut value, attribute, ordinal)
    })?;
    Ok(u32::try_from(value).unwrap_or(0))
}

/// The runtime's version, e.g. 50221153 as (5, 2, 21153).
fn runtime_version(runtime: &Runtime) -> Result<(u32, u32, u32), GpuError> {
    let mut version: c_int = 0;
    // SAFETY: the runtime writes one int.
    runtime.check("hipRuntimeGetVersion", unsafe {
        (runtime.hipRuntimeGetVersion)(&mut version)
    })?;
    let version = u32::try_from(version).unwrap_or(0);
    Ok((
        version / 10_000_000,
        version / 100_000 % 100,
        version % 100_000,
    ))
}

/// The `gcnArchName` of the device's properties. Its offset differs between ROCm 5's
/// `hipDeviceProp_t` and ROCm 6's, so it is found as the one string in the structure that
/// starts with `gfx` (past the 256-byte name at its start).
fn architecture(ordinal: c_int) -> Result<String, GpuError> {
    let Some(properties) = library::device_properties() else {
        return Err(GpuError::Hip {
            call: "hipGetDeviceProperties",
            code: "the runtime exports no hipGetDeviceProperties".into(),
        });
    };
    let runtime = library::runtime()?;
    let mut buffer = vec![0u64; PROPERTIES_BYTES / 8];
    // SAFETY: the buffer is 8 KiB, 8-byte aligned and zeroed, larger than any version's
    // hipDeviceProp_t, which the runtime fills for an existing device.
    runtime.check("hipGetDeviceProperties", unsafe {
        properties(buffer.as_mut_ptr().cast::<c_void>(), ordinal)
    })?;
    let bytes: Vec<u8> = buffer.iter().flat_map(|word| word.to_ne_bytes()).collect();
    find_target_name(&bytes[256..]).ok_or_else(|| GpuError::Hip {
        call: "hipGetDeviceProperties",
        code: "no gcnArchName (gfx...) in the device properties".into(),
    })
}

/// The first NUL-terminated string in `bytes` that starts a field with `gfx` followed by a
/// digit, e.g. `gfx90a:sramecc+:xnack-`.
pub(crate) fn find_target_name(bytes: &[u8]) -> Option<String> {
    (0..bytes.len().saturating_sub(4)).find_map(|start| {
        let previous_is_end = start == 0 || bytes[start - 1] == 0;
        if !previous_is_end || !bytes[start..].starts_with(b"gfx") {
            return None;
        }
        let rest = &bytes[start..];
        let end = rest.iter().position(|&byte| byte == 0)?;
        let name = std::str::from_utf8(&rest[..end]).ok()?;
        let valid = name[3..].starts_with(|character: char| character.is_ascii_digit())
            && name
                .chars()
                .all(|character| character.is_ascii_alphanumeric() || ":+-_".contains(character));
        valid.then(|| name.to_string())
    })
}

/// Describes device `index`.
pub(crate) fn describe(index: usize) -> Result<HipDeviceInfo, GpuError> {
    let runtime = select(index)?;
    let ordinal = ordinal(index)?;
    let mut name = [0 as c_char; 256];
    // SAFETY: the buffer holds the 256 bytes passed as its length.
    runtime.check("hipDeviceGetName", unsafe {
        (runtime.hipDeviceGetName)(name.as_mut_ptr(), 256, ordinal)
    })?;
    name[255] = 0;
    let mut memory = 0usize;
    // SAFETY: the runtime writes one size_t.
    runtime.check("hipDeviceTotalMem", unsafe {
        (runtime.hipDeviceTotalMem)(&mut memory, ordinal)
    })?;
    Ok(HipDeviceInfo {
        index,
        // SAFETY: NUL-terminated within the buffer (its last byte was set to NUL).
        name: unsafe { library::owned_text(name.as_ptr()) },
        architecture: architecture(ordinal)?,
        compute_units: attribute(runtime, ordinal, ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        // Reported in kHz.
        clock_mhz: attribute(runtime, ordinal, ATTRIBUTE_CLOCK_RATE).unwrap_or(0) / 1000,
        global_memory_bytes: memory as u64,
        shared_memory_per_block_bytes: u64::from(attribute(
            runtime,
            ordinal,
            ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
        )?),
        wavefront: attribute(runtime, ordinal, ATTRIBUTE_WARP_SIZE)?,
        integrated: attribute(runtime, ordinal, ATTRIBUTE_INTEGRATED).is_ok_and(|value| value != 0),
        runtime_version: runtime_version(runtime)?,
    })
}

/// Every device the runtime sees; [`GpuError::NoAmdGpu`] when it sees none.
pub(crate) fn describe_all() -> Result<Vec<HipDeviceInfo>, GpuError> {
    let (_, count) = initialise()?;
    (0..count).map(describe).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_name_is_found_among_other_fields() {
        let mut bytes = vec![0u8; 64];
        bytes[3..7].copy_from_slice(b"gfx!");
        bytes[20..42].copy_from_slice(b"gfx90a:sramecc+:xnack-");
        assert_eq!(
            find_target_name(&bytes).as_deref(),
            Some("gfx90a:sramecc+:xnack-")
        );
        assert_eq!(find_target_name(&[0u8; 64]), None);
        // The kernels are compiled for the target without its features.
        assert_eq!(library::base_target("gfx90a:sramecc+:xnack-"), "gfx90a");
        // A name inside another string does not count.
        let mut inside = vec![0u8; 32];
        inside[0..9].copy_from_slice(b"xxgfx1100");
        assert_eq!(find_target_name(&inside), None);
    }

    #[test]
    fn without_a_gpu_listing_says_why() {
        crate::host::assert_lists_or_says_why(
            describe_all(),
            |device: &HipDeviceInfo| {
                assert!(device.target().starts_with("gfx"), "{device}");
                device.index
            },
            |error| {
                matches!(
                    error,
                    GpuError::NoHipRuntime { .. } | GpuError::NoAmdGpu { .. }
                )
            },
        );
    }
}
