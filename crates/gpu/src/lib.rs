//! The GPU layer: block-cipher kernels compiled at run time, and one host that drives them
//! through OpenCL, CUDA or HIP.
//!
//! There is one kernel source text, `kernels/parcrypt.cl`, for every compiler: the host puts
//! a small vendor header in front of it (`kernels/vendor_opencl.h` for OpenCL C,
//! `kernels/vendor_cuda.h` for NVRTC, `kernels/vendor_hip.h` then `vendor_cuda.h` for
//! hiprtc) and compiles the result for the device at hand; see
//! [`kernel_source`]. Key schedules are expanded once on the host with the CPU crate's code
//! ([`KeyMaterial`]), so a kernel and its CPU twin cannot disagree on the schedule.
//!
//! The host is written once, [`GpuHost`]: slabs and their buffers, queues (streams) that
//! overlap one slab's copies with another's kernel, launch shapes and tuning, key upload and
//! wipe, GHASH segments, zero-copy mapped memory ([`GpuMappedBuffer`]) and the self-test.
//! Each API is an adapter that only translates its calls: [`OpenClDevice`] is the host over
//! OpenCL, [`CudaDevice`] over CUDA (which adds pinned and device-memory paths),
//! [`HipDevice`] over HIP for AMD GPUs (compile-checked only: it has not run on one). All run
//! ECB, CTR and CBC decryption for AES, Blowfish and RC6, and GHASH partial sums for GCM
//! ([`GpuDevice::ghash_segments`]), so that a GCM message's authentication runs where its
//! CTR part runs. Output is bit-identical to the CPU path (`parcrypt-modes` over
//! `parcrypt-ciphers`); the tests compare every operation.
//!
//! GPU libraries are loaded at run time: on a machine without libOpenCL every OpenCL call
//! returns [`GpuError::NoOpenClLibrary`], and nothing else is affected. Each API is also a
//! cargo feature (`opencl`, `cuda`, `hip`, on by default); a build without one has the same types,
//! whose entry points return [`GpuError::NotInThisBuild`].
//!
//! Each device runs a known-answer self-test of every kernel when it is opened and is refused
//! if any result is wrong, so a miscompiled kernel or a broken driver never encrypts data.

#![warn(missing_docs)]
// Without any GPU API nothing opens a device: the host's constructors and the sizes only
// the real adapters use have no caller then, and stay compiled so that such a build checks
// them too.
#![cfg_attr(
    not(any(feature = "opencl", feature = "cuda", feature = "hip")),
    allow(dead_code)
)]

#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(not(all(feature = "opencl", feature = "cuda", feature = "hip")))]
mod disabled;
mod error;
mod foreign;
pub mod ghash;
#[cfg(feature = "hip")]
pub mod hip;
mod host;
pub mod kernel_source;
mod key_material;
#[cfg(feature = "opencl")]
pub mod opencl;
mod operation;
mod options;
mod program_cache;
mod self_test;
#[cfg(test)]
mod test_support;
pub mod tuning;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

#[cfg(not(feature = "cuda"))]
pub use disabled::cuda;
#[cfg(not(feature = "hip"))]
pub use disabled::hip;
#[cfg(not(feature = "opencl"))]
pub use disabled::opencl;

pub use cuda::{CudaDevice, CudaDeviceInfo, DeviceAllocation};
pub use error::GpuError;
pub use foreign::ForeignDeviceMemory;
pub use hip::{HipDevice, HipDeviceInfo};
pub use host::zero_copy::MappedBuffer as GpuMappedBuffer;
pub use host::GpuHost;
pub use kernel_source::{aes_timing_leak, AesTimingLeak, TableCopies};
pub use key_material::KeyMaterial;
pub use opencl::OpenClDevice;
pub use operation::GpuOperation;
pub use options::{KernelCache, OpenOptions, ProgramOrigin, DEFAULT_SLAB_BYTES};
pub use tuning::TuneTable;

/// The GPU programming interface a device is driven through.
///
/// Displays as the name the command line, tune files and messages use (`opencl`, `cuda`,
/// `hip`),
/// so that a device's API travels typed and is spelled in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuApi {
    /// OpenCL, through libOpenCL loaded at run time.
    Opencl,
    /// CUDA, through libcuda and NVRTC loaded at run time.
    Cuda,
    /// HIP (AMD GPUs), through libamdhip64 and hiprtc loaded at run time.
    Hip,
}

impl GpuApi {
    /// The API's name as users type it and tune files carry it: `opencl`, `cuda` or `hip`.
    pub fn name(self) -> &'static str {
        self.names().0
    }

    /// The API's name as people write it in prose: `OpenCL`, `CUDA` or `HIP`.
    pub fn title(self) -> &'static str {
        self.names().1
    }

    /// Both names, side by side: ([`GpuApi::name`], [`GpuApi::title`]).
    fn names(self) -> (&'static str, &'static str) {
        match self {
            GpuApi::Opencl => ("opencl", "OpenCL"),
            GpuApi::Cuda => ("cuda", "CUDA"),
            GpuApi::Hip => ("hip", "HIP"),
        }
    }
}

impl fmt::Display for GpuApi {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// What kind of processor an OpenCL device is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// A CPU exposed through OpenCL (PoCL, for example).
    Cpu,
    /// A graphics processor.
    Gpu,
    /// A dedicated accelerator that is neither CPU nor GPU (an FPGA board, for example).
    Accelerator,
    /// A device that reports none of the types above.
    Other,
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            DeviceKind::Cpu => "CPU",
            DeviceKind::Gpu => "GPU",
            DeviceKind::Accelerator => "accelerator",
            DeviceKind::Other => "other",
        })
    }
}

/// One device as `parcrypt devices` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The number to pass to [`OpenClDevice::open`]: devices of all platforms, in order.
    pub index: usize,
    /// The device's name as the driver reports it.
    pub name: String,
    /// The device vendor's name as the driver reports it.
    pub vendor: String,
    /// The name of the OpenCL platform (driver) the device belongs to.
    pub platform: String,
    /// The device's OpenCL version string.
    pub version: String,
    /// The driver's version string.
    pub driver_version: String,
    /// What kind of processor the device is.
    pub kind: DeviceKind,
    /// Number of compute units (streaming multiprocessors, CPU cores, ...).
    pub compute_units: u32,
    /// Highest clock frequency, in megahertz.
    pub clock_mhz: u32,
    /// Size of the device's global memory, in bytes.
    pub global_memory_bytes: u64,
    /// Local (shared) memory per work-group; decides how many table copies fit.
    pub local_memory_bytes: u64,
    /// The largest single buffer the device allows; slabs are kept below it.
    pub max_allocation_bytes: u64,
    /// Whether the device stores words little-endian; the kernels need it to.
    pub little_endian: bool,
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        DeviceLine {
            index: self.index,
            name: &self.name,
            platform: format_args!("{}, {}", self.platform.trim(), self.kind),
            units: format_args!("{} compute units", self.compute_units),
            clock_mhz: None,
            global_memory_bytes: self.global_memory_bytes,
            memory: format_args!("{} KiB local memory", self.local_memory_bytes / 1024),
            driver: format_args!(
                "{}, driver {}",
                self.version.trim(),
                self.driver_version.trim()
            ),
        }
        .fmt(formatter)
    }
}

/// The one line `parcrypt devices` shows for a device of any API:
/// `#index name (platform; units[ at clock MHz], memory GiB, memory; driver)`. The
/// descriptions of every API ([`DeviceInfo`], [`CudaDeviceInfo`], [`HipDeviceInfo`]) display
/// through it.
pub(crate) struct DeviceLine<'a> {
    pub(crate) index: usize,
    /// The name as the driver reports it (trimmed here).
    pub(crate) name: &'a str,
    /// What drives the device: the platform and kind, or the API and architecture.
    pub(crate) platform: fmt::Arguments<'a>,
    /// The compute units, e.g. `132 multiprocessors`.
    pub(crate) units: fmt::Arguments<'a>,
    /// The peak clock, where the line shows one.
    pub(crate) clock_mhz: Option<u32>,
    pub(crate) global_memory_bytes: u64,
    /// The memory a work-group may have, and what follows it before the driver.
    pub(crate) memory: fmt::Arguments<'a>,
    /// The driver or runtime and its version.
    pub(crate) driver: fmt::Arguments<'a>,
}

impl fmt::Display for DeviceLine<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (index, name) = (self.index, self.name.trim());
        write!(
            formatter,
            "#{index} {name} ({}; {}",
            self.platform, self.units
        )?;
        if let Some(clock_mhz) = self.clock_mhz {
            write!(formatter, " at {clock_mhz} MHz")?;
        }
        let gibibytes = self.global_memory_bytes as f64 / (1u64 << 30) as f64;
        write!(
            formatter,
            ", {gibibytes:.1} GiB, {}; {})",
            self.memory, self.driver
        )
    }
}

/// How a kernel launch is shaped: a later tuner sweeps these.
///
/// Every kernel walks its blocks in a grid-stride loop, so any shape is correct; the shape
/// only trades the per-group cost of copying tables into local memory (fewer, fuller
/// threads) against parallelism (more threads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchGeometry {
    /// Work-items per work-group (CUDA: threads per block). Clamped per kernel to what the
    /// device allows for it.
    pub threads_per_group: usize,
    /// Blocks each work-item processes, on average: the grid is sized to
    /// `blocks / blocks_per_thread` work-items, rounded up to whole groups.
    pub blocks_per_thread: usize,
}

impl LaunchGeometry {
    /// A starting point per kind of device, before any tuning: GPUs want many resident
    /// warps; CPU OpenCL runs a work-group as a loop on one core, so fewer, longer groups
    /// keep the table copy cheap.
    pub fn default_for(kind: DeviceKind) -> Self {
        match kind {
            DeviceKind::Cpu => LaunchGeometry {
                threads_per_group: 64,
                blocks_per_thread: 64,
            },
            _ => LaunchGeometry {
                threads_per_group: 256,
                blocks_per_thread: 16,
            },
        }
    }
}

/// What the engine needs from a GPU, whichever API drives it (OpenCL, CUDA).
pub trait GpuDevice: Send + Sync {
    /// The API that drives the device; displays as "opencl" or "cuda".
    fn api(&self) -> GpuApi;
    /// One line for `parcrypt devices` and benchmark reports.
    fn description(&self) -> String;
    /// The line that ties this device to its tune file: the API and the device as
    /// [`GpuDevice::description`]'s first part prints it ([`tuning::device_identity`]).
    fn identity(&self) -> String;

    /// What kind of processor runs the kernels (an OpenCL device may be the CPU).
    fn kind(&self) -> DeviceKind {
        DeviceKind::Gpu
    }

    /// The table copies the kernels were compiled with; `None` where the device does not
    /// say, and then AES on it counts as leaking ([`GpuDevice::aes_timing_leak`]).
    fn table_copies(&self) -> Option<TableCopies> {
        None
    }

    /// Why AES `operation` on this device may leak its key through timing, or `None` when
    /// its table layout closes the channels a layout can ([`aes_timing_leak`]).
    fn aes_timing_leak(&self, operation: kernel_source::KernelOperation) -> Option<AesTimingLeak> {
        match self.table_copies() {
            Some(copies) => aes_timing_leak(self.kind(), copies, operation),
            None => Some(AesTimingLeak::UnknownLayout),
        }
    }

    /// The launch shape used where no tune table applies.
    fn launch_geometry(&self) -> LaunchGeometry;

    /// Sets the launch shape for later calls, and drops any tune table: an explicit shape
    /// wins. Any shape gives the same output.
    fn set_launch_geometry(&self, geometry: LaunchGeometry) -> Result<(), GpuError>;

    /// Installs (or removes) a tune table: later calls launch each kernel with the shape
    /// tuned for its cipher, operation and input size, and with the launch shape where the
    /// table has none.
    fn set_tuning(&self, table: Option<Arc<TuneTable>>);

    /// The installed tune table.
    fn tuning(&self) -> Option<Arc<TuneTable>>;

    /// The shape a call of `operation` on `algorithm` over `bytes` launches with: the tune
    /// table's for that size, else [`GpuDevice::launch_geometry`].
    fn geometry_for(
        &self,
        algorithm: parcrypt_ciphers::Algorithm,
        operation: &GpuOperation,
        bytes: usize,
    ) -> LaunchGeometry {
        tuning::choose_geometry(
            self.launch_geometry(),
            self.tuning().as_deref(),
            algorithm,
            operation.kernel_operation(),
            bytes,
        )
    }

    /// Runs `operation` over `data` `runs` times and returns each run's kernel time from
    /// the device's own timers (copies excluded), for tuning. `data` ends up processed
    /// `runs` times or not at all, depending on the API: it is scratch.
    fn kernel_times(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
        runs: usize,
    ) -> Result<Vec<Duration>, GpuError>;

    /// Runs `operation` over host `data` in place: copies in, launches, copies out and
    /// synchronises before returning, so the caller may use `data` at once.
    fn process(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
    ) -> Result<(), GpuError>;

    /// GHASH partial sums of `data` on the device: one per consecutive segment of
    /// `segment_bytes` (a multiple of 16; the last segment may be shorter, a final partial
    /// block is zero-padded), each from a zero state, in order. `hash_key` is H = E_K(0^128).
    /// Join them with [`ghash::join_partials`] or `GcmAccumulator::append`.
    ///
    /// Devices without the kernel return [`GpuError::Unsupported`], on which callers hash on
    /// the CPU.
    fn ghash_segments(
        &self,
        hash_key: &[u8; 16],
        data: &[u8],
        segment_bytes: usize,
    ) -> Result<Vec<u128>, GpuError> {
        let _ = (hash_key, data, segment_bytes);
        Err(GpuError::Unsupported {
            api: self.api(),
            operation: "GHASH",
        })
    }

    /// The GHASH of all of `data` from a zero state (a final partial block zero-padded): the
    /// partial sum of one range for `GcmAccumulator::append`. Devices with the
    /// `ghash_groups` kernel join the segments of each work-group on the device, so the host
    /// joins one 16-byte sum per 1 MiB; the default joins [`GpuDevice::ghash_segments`]'s
    /// sums on the host.
    fn ghash_whole(&self, hash_key: &[u8; 16], data: &[u8]) -> Result<u128, GpuError> {
        let segment_bytes = ghash::WHOLE_SEGMENT_BYTES;
        let partials = self.ghash_segments(hash_key, data, segment_bytes)?;
        let key = parcrypt_modes::ghash::GhashKey::new(hash_key);
        Ok(ghash::join_partials(
            &key,
            &partials,
            segment_bytes,
            data.len(),
        ))
    }

    /// GCM's text pass over host `data` in place, `operation` being its CTR (not
    /// segmented), and the GHASH of the ciphertext from a zero state (a final partial block
    /// zero-padded): the partial sum of one range for `GcmAccumulator::append`. The devices
    /// of the shared host upload the data once, run CTR and `ghash_groups` on the same
    /// device buffer, and download only the text and one 16-byte sum per 1 MiB.
    ///
    /// Devices without this return [`GpuError::Unsupported`] before touching `data`; callers
    /// then run [`GpuDevice::process`] and hash apart.
    fn process_gcm(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        hash_key: &[u8; 16],
        direction: ghash::GcmDirection,
        data: &mut [u8],
    ) -> Result<u128, GpuError> {
        let _ = (key, operation, hash_key, direction, data);
        Err(GpuError::Unsupported {
            api: self.api(),
            operation: "GCM",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each API's description of a device against the line it must display as.
    #[test]
    fn every_api_describes_a_device_on_one_line_with_the_facts() {
        let opencl = DeviceInfo {
            index: 1,
            name: " cpu-haswell ".into(),
            vendor: "GenuineIntel".into(),
            platform: "Portable Computing Language".into(),
            version: "OpenCL 3.0 PoCL ".into(),
            driver_version: "6.0".into(),
            kind: DeviceKind::Cpu,
            compute_units: 2,
            clock_mhz: 2400,
            global_memory_bytes: 6 << 29,
            local_memory_bytes: 256 << 10,
            max_allocation_bytes: 1 << 30,
            little_endian: true,
        };
        // Pushed to where a build has the API.
        #[cfg_attr(not(any(feature = "cuda", feature = "hip")), allow(unused_mut))]
        let mut lines = vec![(
            opencl.to_string(),
            "#1 cpu-haswell (Portable Computing Language, CPU; 2 compute units, 3.0 GiB, \
             256 KiB local memory; OpenCL 3.0 PoCL, driver 6.0)",
        )];
        #[cfg(feature = "cuda")]
        lines.push((
            CudaDeviceInfo {
                index: 0,
                name: "NVIDIA H200".into(),
                compute_capability: (9, 0),
                multiprocessors: 132,
                clock_mhz: 1980,
                global_memory_bytes: 150_000_000_000,
                shared_memory_per_block_bytes: 232_448,
                copy_engines: 7,
                driver_version: (13, 0),
            }
            .to_string(),
            "#0 NVIDIA H200 (CUDA, compute capability 9.0; 132 multiprocessors at 1980 MHz, \
             139.7 GiB, 227 KiB shared memory per block, 7 copy engines; driver CUDA 13.0)",
        ));
        #[cfg(feature = "hip")]
        lines.push((
            HipDeviceInfo {
                index: 0,
                name: "AMD Instinct MI210".into(),
                architecture: "gfx90a:sramecc+:xnack-".into(),
                compute_units: 104,
                clock_mhz: 1700,
                global_memory_bytes: 64 << 30,
                shared_memory_per_block_bytes: 65536,
                wavefront: 64,
                integrated: false,
                runtime_version: (5, 2, 21153),
            }
            .to_string(),
            "#0 AMD Instinct MI210 (HIP, gfx90a:sramecc+:xnack-; 104 compute units at 1700 MHz, \
             64.0 GiB, 64 KiB LDS per work-group, wavefront 64; HIP runtime 5.2.21153)",
        ));
        for (line, expected) in lines {
            assert_eq!(line, expected);
        }
    }
}
