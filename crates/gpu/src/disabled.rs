//! What stands in for a GPU API whose cargo feature is off: an adapter ([`Unavailable`]) of
//! which no device can exist, so that the shared host gives the same public types and
//! methods as in a full build, and the engine, the file format, the bench lab and the command
//! line compile unchanged. Every way in (`OpenClDevice::list`,
//! `OpenClDevice::open`, ...) says that the API is not in this build.
//!
//! The adapter's types are uninhabited, so its methods need no behaviour: each is a `match`
//! on nothing, which the compiler checks.

use std::marker::PhantomData;
use std::time::Duration;

use crate::host::zero_copy::{KernelTime, MappedMemory};
use crate::host::{Api, Devices, GpuHost, Launch, Outcome, Staging, TimingJob};
use crate::{GpuApi, GpuError, KeyMaterial, OpenOptions};

pub use crate::host::Never;

/// Which API is missing, for its messages.
pub trait Missing: Send + Sync + 'static {
    /// The API.
    const API: GpuApi;
    /// Its description of a device, as its `list()` would give it.
    type Info;
}

/// The adapter of an API that is not in this build: no value of it exists.
pub struct Unavailable<M> {
    never: Never,
    api: PhantomData<M>,
}

/// The error every entry point of a disabled API returns.
fn not_in_this_build(api: GpuApi) -> GpuError {
    GpuError::NotInThisBuild { api }
}

impl<M: Missing> Api for Unavailable<M> {
    const API: GpuApi = M::API;
    const QUEUES: usize = 1;
    type Kernel = Never;
    type Slot = Never;
    type Keys = Never;
    type Mapped = Never;
    type Event = Never;
    type Extra = Never;

    fn device_name(&self) -> String {
        match self.never {}
    }
    fn description(&self) -> String {
        match self.never {}
    }
    fn identity_description(&self) -> String {
        match self.never {}
    }
    fn new_slot(_queue: usize) -> Never {
        unreachable!("no device of an API outside this build is ever opened")
    }
    fn reserve(&self, slot: &mut Never, _: usize, _: usize, _: Staging) -> Outcome {
        match *slot {}
    }
    fn upload_counters(&self, slot: &mut Never, _: &[u8]) -> Outcome {
        match *slot {}
    }
    fn reserve_sums(&self, slot: &mut Never, _: usize) -> Outcome {
        match *slot {}
    }
    unsafe fn download_sums(&self, slot: &mut Never, _: &mut [u8]) -> Outcome {
        match *slot {}
    }
    unsafe fn upload(&self, slot: &mut Never, _: &[u8], _: usize) -> Outcome {
        match *slot {}
    }
    unsafe fn launch(&self, slot: &mut Never, _: Launch<'_, Self>) -> Outcome<Never> {
        match *slot {}
    }
    unsafe fn download(&self, slot: &mut Never, _: &mut [u8]) -> Outcome {
        match *slot {}
    }
    fn finish_slab(&self, slot: &mut Never, _: &mut [u8]) -> Outcome {
        match *slot {}
    }
    fn wait(&self, _: bool) -> Outcome {
        match self.never {}
    }
    fn upload_key(&self, keys: &mut Never, _: &KeyMaterial, _: bool) -> Outcome {
        match *keys {}
    }
    fn wipe_key(&self, keys: &mut Never, _: &KeyMaterial) -> Outcome {
        match *keys {}
    }
    fn kernel_time(_events: &[Never]) -> Outcome<Duration> {
        Ok(Duration::ZERO)
    }
    fn kernel_times(device: &GpuHost<Self>, _: TimingJob<'_>) -> Outcome<Vec<Duration>> {
        match device.adapter.never {}
    }
}

impl<M: Missing> MappedMemory for Unavailable<M> {
    fn new_mapped(&self, _bytes: usize) -> Outcome<Never> {
        match self.never {}
    }
    fn host_unified_memory(&self) -> bool {
        match self.never {}
    }
    fn max_allocation_bytes(&self) -> u64 {
        match self.never {}
    }
    unsafe fn run_mapped(&self, halves: &mut Never, _: Launch<'_, Self>) -> KernelTime {
        match *halves {}
    }
}

/// Every way to a device of a missing API says that it is not in this build.
impl<M: Missing> Devices for Unavailable<M> {
    type Info = M::Info;

    fn list() -> Result<Vec<M::Info>, GpuError> {
        Err(not_in_this_build(M::API))
    }

    fn open_with(_index: usize, _options: &OpenOptions) -> Result<GpuHost<Self>, GpuError> {
        Err(not_in_this_build(M::API))
    }

    fn info(&self) -> &M::Info {
        match self.never {}
    }
}

/// The marker of a missing API and its device type, of which no value can exist:
/// `missing_api!(Marker, Variant, "Title", Device, Info)`.
macro_rules! missing_api {
    ($marker:ident, $api:ident, $title:literal, $device:ident, $info:ty) => {
        #[doc = concat!("Marks ", $title, " as missing.")]
        pub struct $marker;

        impl Missing for $marker {
            const API: GpuApi = GpuApi::$api;
            type Info = $info;
        }

        #[doc = concat!("The ", $title, " device type; in this build none can be opened.")]
        pub type $device = GpuHost<Unavailable<$marker>>;
    };
}

/// A missing API's description of a device (the item of its `list()`), of which no value
/// can exist: `missing_info!(Name, "described by")`.
#[cfg(any(not(feature = "cuda"), not(feature = "hip")))]
macro_rules! missing_info {
    ($name:ident, $described_by:literal) => {
        #[doc = concat!(
                    "A device as ", $described_by, " describes it; in this build there is none."
                )]
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $name {
            never: Never,
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, _formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self.never {}
            }
        }
    };
}

/// OpenCL in a build without the `opencl` feature.
#[cfg(not(feature = "opencl"))]
pub mod opencl {
    use super::*;
    use crate::{DeviceInfo, TableCopies};

    missing_api!(OpenClMissing, Opencl, "OpenCL", OpenClDevice, DeviceInfo);

    impl crate::host::TimesHostLaunches for Unavailable<OpenClMissing> {}

    /// Mapped memory of an OpenCL device; in this build there is none.
    pub type MappedBuffer<'device> = crate::GpuMappedBuffer<'device, Unavailable<OpenClMissing>>;

    impl GpuHost<Unavailable<OpenClMissing>> {
        /// Always [`GpuError::NotInThisBuild`].
        pub fn compile_check(_index: usize, _table_copies: TableCopies) -> Result<(), GpuError> {
            Err(not_in_this_build(GpuApi::Opencl))
        }
    }
}

/// CUDA in a build without the `cuda` feature.
#[cfg(not(feature = "cuda"))]
pub mod cuda {
    use std::ops::Range;

    use super::*;
    use crate::GpuOperation;

    /// Streams the CUDA host rotates slabs over (as in a build with CUDA).
    pub const STREAMS: usize = 3;

    missing_api!(CudaMissing, Cuda, "CUDA", CudaDevice, CudaDeviceInfo);

    /// Mapped memory of a CUDA device; in this build there is none.
    pub type MappedBuffer<'device> = crate::GpuMappedBuffer<'device, Unavailable<CudaMissing>>;

    missing_info!(CudaDeviceInfo, "the CUDA driver");

    /// Data in device memory; in this build there is none.
    #[derive(Debug)]
    pub struct DeviceBuffer {
        never: Never,
    }

    impl DeviceBuffer {
        /// The buffer's length in bytes (never called: no buffer exists).
        pub fn len(&self) -> usize {
            match self.never {}
        }

        /// Whether the buffer is empty (never called: no buffer exists).
        pub fn is_empty(&self) -> bool {
            match self.never {}
        }
    }

    /// Device memory for a result; in this build there is none.
    #[derive(Debug)]
    pub struct DeviceAllocation {
        never: Never,
    }

    impl DeviceAllocation {
        /// The device address (never called: no allocation exists).
        pub fn address(&self) -> u64 {
            match self.never {}
        }

        /// The length in bytes (never called: no allocation exists).
        pub fn len(&self) -> usize {
            match self.never {}
        }

        /// Whether it is empty (never called: no allocation exists).
        pub fn is_empty(&self) -> bool {
            match self.never {}
        }

        /// The device ordinal (never called: no allocation exists).
        pub fn device(&self) -> usize {
            match self.never {}
        }

        /// The memory, lent (never called: no allocation exists).
        pub fn as_foreign(&mut self) -> crate::ForeignDeviceMemory<'_> {
            match self.never {}
        }
    }

    /// Page-locked host memory; in this build there is none.
    #[derive(Debug)]
    pub struct PinnedBuffer {
        never: Never,
    }

    impl PinnedBuffer {
        /// The buffer's bytes (never called: no buffer exists).
        pub fn as_mut_slice(&mut self) -> Result<&mut [u8], GpuError> {
            match self.never {}
        }
    }

    impl GpuHost<Unavailable<CudaMissing>> {
        /// What the kernels were compiled for (never called: no device exists).
        pub fn architecture(&self) -> &str {
            match self.adapter.never {}
        }

        /// Pinned host memory (never called: no device exists).
        pub fn alloc_pinned(&self, _bytes: usize) -> Result<PinnedBuffer, GpuError> {
            match self.adapter.never {}
        }

        /// A device-memory copy of `data` (never called: no device exists).
        pub fn copy_to_device(&self, _data: &[u8]) -> Result<DeviceBuffer, GpuError> {
            match self.adapter.never {}
        }

        /// Runs over pinned memory (never called: no device exists).
        pub fn process_pinned(
            &self,
            _key: &KeyMaterial,
            _operation: &GpuOperation,
            data: &mut PinnedBuffer,
            _range: Range<usize>,
        ) -> Result<(), GpuError> {
            match data.never {}
        }

        /// Runs over device memory (never called: no device exists).
        pub fn process_device_buffer(
            &self,
            _key: &KeyMaterial,
            _operation: &GpuOperation,
            buffer: &mut DeviceBuffer,
        ) -> Result<(), GpuError> {
            match buffer.never {}
        }

        /// The driver's ordinal (never called: no device exists).
        pub fn ordinal(&self) -> usize {
            match self.adapter.never {}
        }

        /// The stream handle (never called: no device exists).
        pub fn stream_handle(&self) -> usize {
            match self.adapter.never {}
        }

        /// Device memory for a result (never called: no device exists).
        pub fn alloc_device(&self, _length: usize) -> Result<DeviceAllocation, GpuError> {
            match self.adapter.never {}
        }

        /// Runs over foreign device memory (never called: no device exists).
        pub fn process_foreign(
            &self,
            _key: &KeyMaterial,
            _operation: &GpuOperation,
            _input: &crate::ForeignDeviceMemory<'_>,
            _output: &crate::ForeignDeviceMemory<'_>,
        ) -> Result<(), GpuError> {
            match self.adapter.never {}
        }

        /// GHASH over foreign device memory (never called: no device exists).
        pub fn ghash_foreign(
            &self,
            _hash_key: &[u8; 16],
            _data: &crate::ForeignDeviceMemory<'_>,
            _segment_bytes: usize,
        ) -> Result<Vec<(u128, usize)>, GpuError> {
            match self.adapter.never {}
        }

        /// Writes into foreign device memory (never called: no device exists).
        pub fn write_foreign(
            &self,
            _memory: &crate::ForeignDeviceMemory<'_>,
            _bytes: &[u8],
        ) -> Result<(), GpuError> {
            match self.adapter.never {}
        }

        /// Reads foreign device memory (never called: no device exists).
        pub fn read_foreign(
            &self,
            _memory: &crate::ForeignDeviceMemory<'_>,
            _bytes: &mut [u8],
        ) -> Result<(), GpuError> {
            match self.adapter.never {}
        }

        /// Runs over device memory, timed (never called: no device exists).
        pub fn process_device_buffer_timed(
            &self,
            _key: &KeyMaterial,
            _operation: &GpuOperation,
            buffer: &mut DeviceBuffer,
        ) -> Result<Duration, GpuError> {
            match buffer.never {}
        }
    }
}

/// HIP in a build without the `hip` feature.
#[cfg(not(feature = "hip"))]
pub mod hip {
    use super::*;

    /// Streams the HIP host rotates slabs over (as in a build with HIP).
    pub const STREAMS: usize = 3;

    missing_api!(HipMissing, Hip, "HIP", HipDevice, HipDeviceInfo);

    missing_info!(HipDeviceInfo, "the HIP runtime");

    impl GpuHost<Unavailable<HipMissing>> {
        /// The target the kernels were compiled for (never called: no device exists).
        pub fn architecture(&self) -> &str {
            match self.adapter.never {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::GpuError;

    /// `opened` failed because `title` is not in this build.
    fn assert_not_in_this_build<T>(opened: Result<T, GpuError>, title: &str) -> String {
        let Err(error) = opened else {
            panic!("{title} opened in a build without it");
        };
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("{title} is not in this build")),
            "{message}"
        );
        message
    }

    #[cfg(not(feature = "opencl"))]
    #[test]
    fn opencl_says_it_is_not_in_this_build() {
        let message = assert_not_in_this_build(super::opencl::OpenClDevice::open(0), "OpenCL");
        assert_eq!(
            message,
            "OpenCL is not in this build (built without the `opencl` feature); rebuild with \
             `--features opencl` or use another backend"
        );
    }

    #[cfg(not(feature = "hip"))]
    #[test]
    fn hip_says_it_is_not_in_this_build() {
        assert_not_in_this_build(super::hip::HipDevice::list(), "HIP");
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn cuda_says_it_is_not_in_this_build() {
        assert_not_in_this_build(super::cuda::CudaDevice::list(), "CUDA");
    }
}
