//! This machine's compute: CPU features, thread counts, GPUs, and tuning an engine for a
//! device.
//!
//! Listing GPUs needs no engine: [`OpenClDevice::list`], [`CudaDevice::list`] and
//! [`HipDevice::list`] each return the devices of one API, or an error naming why that API
//! is not available here (not in this build, no driver). A tune file (made by [`tune::tune`],
//! as `parcrypt tune` does) records the launch shapes and the sizes from which a GPU beats
//! the CPU; [`crate::EngineBuilder::tune_directory`] reads it.
//!
//! ```
//! let threads = parcrypt::devices::available_threads();
//! assert!(threads >= 1);
//! println!("{threads} threads; CPU: {}", parcrypt::devices::cpu_features());
//! match parcrypt::devices::OpenClDevice::list() {
//!     Ok(devices) => println!("{} OpenCL devices", devices.len()),
//!     Err(why) => println!("no OpenCL here: {why}"),
//! }
//! ```

pub use parcrypt_ciphers::cpu_features;
/// The CPU kernel families, the highest an engine's keys may use
/// ([`crate::EngineBuilder::kernels`]; [`KernelFamily::detected`] is this CPU's best).
pub use parcrypt_ciphers::KernelFamily;
pub use parcrypt_engine::{
    available_threads, check_threads, cuda_device, cuda_device_with_cache, max_threads,
    tune_table_in, MIN_MAX_THREADS, THREADS_PER_CORE,
};
/// Where compiled GPU kernels are kept ([`crate::EngineBuilder::kernel_cache`]).
pub use parcrypt_gpu::KernelCache;
pub use parcrypt_gpu::{
    CudaDevice, CudaDeviceInfo, DeviceAllocation, ForeignDeviceMemory, GpuError, HipDevice,
    HipDeviceInfo, OpenClDevice, TuneTable,
};
/// The AES-GCM kernels of this CPU ([`crate::EngineBuilder::gcm_kernel`]).
pub use parcrypt_modes::gcm::GcmKernel;

/// Tuning an engine for one GPU: measuring launch shapes and crossovers into a tune file.
pub mod tune {
    pub use parcrypt_engine::tune::*;
}

/// Where tune files live and how they are named.
pub mod tuning {
    pub use parcrypt_gpu::tuning::{
        any_tune_file, device_identity, tune_file, TunedShape, TUNE_FORMAT,
    };
}
