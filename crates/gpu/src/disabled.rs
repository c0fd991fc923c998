//! What stands in for a GPU API whose cargo feature is off: the same public types and entry
//! points, so that the engine, the file format, the bench lab and the command line compile
//! unchanged, and every way in ([`list`](opencl::OpenClDevice::list),
//! [`open`](opencl::OpenClDevice::open)) says that the API is not in this build.
//!
//! A device of a disabled API can never exist (its types hold an uninhabited value), so its
//! methods need no behaviour: each is a `match` on nothing, which the compiler checks.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use crate::{
    GpuApi, GpuDevice, GpuError, GpuOperation, KeyMaterial, LaunchGeometry, OpenOptions,
    ProgramOrigin, TableCopies, TuneTable,
};

/// A value no code can make: it marks the types of an API that is not in this build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Never {}

/// The error every entry point of a disabled API returns.
fn not_in_this_build(api: GpuApi) -> GpuError {
    GpuError::NotInThisBuild { api }
}

/// The methods both disabled devices share, written once: every one is unreachable because
/// no device value exists.
macro_rules! disabled_device {
    ($device:ident, $info:ty, $api:expr) => {
        impl $device {
            /// Always [`GpuError::NotInThisBuild`]: this build has no such device.
            pub fn list() -> Result<Vec<$info>, GpuError> {
                Err(super::not_in_this_build($api))
            }

            /// Always [`GpuError::NotInThisBuild`].
            pub fn open(_index: usize) -> Result<Self, GpuError> {
                Err(super::not_in_this_build($api))
            }

            /// Always [`GpuError::NotInThisBuild`].
            pub fn open_with(_index: usize, _options: &OpenOptions) -> Result<Self, GpuError> {
                Err(super::not_in_this_build($api))
            }

            /// The device's name (never called: no device exists).
            pub fn name(&self) -> String {
                match self.never {}
            }

            /// What the driver reports (never called: no device exists).
            pub fn info(&self) -> &$info {
                match self.never {}
            }

            /// The compiled table copies (never called: no device exists).
            pub fn table_copies(&self) -> TableCopies {
                match self.never {}
            }

            /// Where the kernels came from (never called: no device exists).
            pub fn program_origin(&self) -> ProgramOrigin {
                match self.never {}
            }

            /// Bytes per slab (never called: no device exists).
            pub fn slab_bytes(&self) -> usize {
                match self.never {}
            }

            /// The launch shape (never called: no device exists).
            pub fn launch_geometry(&self) -> LaunchGeometry {
                match self.never {}
            }

            /// Sets the launch shape (never called: no device exists).
            pub fn set_launch_geometry(&self, _geometry: LaunchGeometry) -> Result<(), GpuError> {
                match self.never {}
            }

            /// Installs a tune table (never called: no device exists).
            pub fn set_tuning(&self, _table: Option<Arc<TuneTable>>) {
                match self.never {}
            }

            /// The tune table (never called: no device exists).
            pub fn tuning(&self) -> Option<Arc<TuneTable>> {
                match self.never {}
            }

            /// Runs an operation (never called: no device exists).
            pub fn process(
                &self,
                _key: &KeyMaterial,
                _operation: &GpuOperation,
                _data: &mut [u8],
            ) -> Result<(), GpuError> {
                match self.never {}
            }

            /// GHASH partial sums (never called: no device exists).
            pub fn ghash_segments(
                &self,
                _hash_key: &[u8; 16],
                _data: &[u8],
                _segment_bytes: usize,
            ) -> Result<Vec<u128>, GpuError> {
                match self.never {}
            }

            /// Whether the device shares host memory (never called: no device exists).
            pub fn host_unified_memory(&self) -> bool {
                match self.never {}
            }

            /// The largest mapped buffer (never called: no device exists).
            pub fn max_mapped_bytes(&self) -> usize {
                match self.never {}
            }

            /// A mapped buffer (never called: no device exists).
            pub fn mapped_buffer(&self, _len: usize) -> Result<MappedBuffer<'_>, GpuError> {
                match self.never {}
            }

            /// Runs an operation through mapped memory (never called: no device exists).
            pub fn process_zero_copy(
                &self,
                _key: &KeyMaterial,
                _operation: &GpuOperation,
                _data: &mut [u8],
            ) -> Result<(), GpuError> {
                match self.never {}
            }
        }

        impl GpuDevice for $device {
            fn api(&self) -> GpuApi {
                $api
            }
            fn description(&self) -> String {
                match self.never {}
            }
            fn identity(&self) -> String {
                match self.never {}
            }
            fn launch_geometry(&self) -> LaunchGeometry {
                match self.never {}
            }
            fn set_launch_geometry(&self, _geometry: LaunchGeometry) -> Result<(), GpuError> {
                match self.never {}
            }
            fn set_tuning(&self, _table: Option<Arc<TuneTable>>) {
                match self.never {}
            }
            fn tuning(&self) -> Option<Arc<TuneTable>> {
                match self.never {}
            }
            fn kernel_times(
                &self,
                _key: &KeyMaterial,
                _operation: &GpuOperation,
                _data: &mut [u8],
                _runs: usize,
            ) -> Result<Vec<Duration>, GpuError> {
                match self.never {}
            }
            fn process(
                &self,
                _key: &KeyMaterial,
                _operation: &GpuOperation,
                _data: &mut [u8],
            ) -> Result<(), GpuError> {
                match self.never {}
            }
        }

        /// Mapped host memory of a device that cannot exist in this build.
        #[derive(Debug)]
        pub struct MappedBuffer<'device> {
            never: super::Never,
            _device: PhantomData<&'device $device>,
        }

        impl MappedBuffer<'_> {
            /// Bytes in use (never called: no buffer exists).
            pub fn len(&self) -> usize {
                match self.never {}
            }

            /// Whether no byte is in use (never called: no buffer exists).
            pub fn is_empty(&self) -> bool {
                match self.never {}
            }

            /// Bytes allocated (never called: no buffer exists).
            pub fn capacity(&self) -> usize {
                match self.never {}
            }

            /// Changes the bytes in use (never called: no buffer exists).
            pub fn set_len(&mut self, _len: usize) -> Result<(), GpuError> {
                match self.never {}
            }

            /// The bytes in use (never called: no buffer exists).
            pub fn as_slice(&self) -> &[u8] {
                match self.never {}
            }

            /// The bytes in use, writable (never called: no buffer exists).
            pub fn as_mut_slice(&mut self) -> &mut [u8] {
                match self.never {}
            }

            /// Runs an operation in place (never called: no buffer exists).
            pub fn process(
                &mut self,
                _key: &KeyMaterial,
                _operation: &GpuOperation,
            ) -> Result<(), GpuError> {
                match self.never {}
            }

            /// Runs an operation in place, timed (never called: no buffer exists).
            pub fn process_timed(
                &mut self,
                _key: &KeyMaterial,
                _operation: &GpuOperation,
            ) -> Result<(Duration, Duration), GpuError> {
                match self.never {}
            }
        }
    };
}

/// OpenCL in a build without the `opencl` feature.
#[cfg(not(feature = "opencl"))]
pub mod opencl {
    use super::*;
    use crate::DeviceInfo;

    /// An OpenCL device; in this build none can be opened.
    #[derive(Debug)]
    pub struct OpenClDevice {
        never: Never,
    }

    disabled_device!(OpenClDevice, DeviceInfo, GpuApi::Opencl);

    impl OpenClDevice {
        /// Always [`GpuError::NotInThisBuild`].
        pub fn compile_check(_index: usize, _table_copies: TableCopies) -> Result<(), GpuError> {
            Err(not_in_this_build(GpuApi::Opencl))
        }

        /// A timed run (never called: no device exists).
        pub fn process_timed(
            &self,
            _key: &KeyMaterial,
            _operation: &GpuOperation,
            _data: &mut [u8],
        ) -> Result<(Duration, Duration), GpuError> {
            match self.never {}
        }
    }
}

/// CUDA in a build without the `cuda` feature.
#[cfg(not(feature = "cuda"))]
pub mod cuda {
    use std::fmt;
    use std::ops::Range;

    use super::*;

    /// Streams the CUDA host rotates slabs over (as in a build with CUDA).
    pub const STREAMS: usize = 3;

    /// A CUDA device as the driver describes it; in this build there is none.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct CudaDeviceInfo {
        never: Never,
    }

    impl fmt::Display for CudaDeviceInfo {
        fn fmt(&self, _formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self.never {}
        }
    }

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

    /// A CUDA device; in this build none can be opened.
    #[derive(Debug)]
    pub struct CudaDevice {
        never: Never,
    }

    disabled_device!(CudaDevice, CudaDeviceInfo, GpuApi::Cuda);

    impl CudaDevice {
        /// What the kernels were compiled for (never called: no device exists).
        pub fn architecture(&self) -> &str {
            match self.never {}
        }

        /// Pinned host memory (never called: no device exists).
        pub fn alloc_pinned(&self, _bytes: usize) -> Result<PinnedBuffer, GpuError> {
            match self.never {}
        }

        /// A device-memory copy of `data` (never called: no device exists).
        pub fn copy_to_device(&self, _data: &[u8]) -> Result<DeviceBuffer, GpuError> {
            match self.never {}
        }

        /// Runs over pinned memory (never called: no device exists).
        pub fn process_pinned(
            &self,
            _key: &KeyMaterial,
            _operation: &GpuOperation,
            _data: &mut PinnedBuffer,
            _range: Range<usize>,
        ) -> Result<(), GpuError> {
            match self.never {}
        }

        /// Runs over device memory (never called: no device exists).
        pub fn process_device_buffer(
            &self,
            _key: &KeyMaterial,
            _operation: &GpuOperation,
            _buffer: &mut DeviceBuffer,
        ) -> Result<(), GpuError> {
            match self.never {}
        }

        /// Runs over device memory, timed (never called: no device exists).
        pub fn process_device_buffer_timed(
            &self,
            _key: &KeyMaterial,
            _operation: &GpuOperation,
            _buffer: &mut DeviceBuffer,
        ) -> Result<Duration, GpuError> {
            match self.never {}
        }
    }
}

#[cfg(test)]
mod tests {
    #[cfg(not(feature = "opencl"))]
    #[test]
    fn opencl_says_it_is_not_in_this_build() {
        let error = super::opencl::OpenClDevice::open(0).unwrap_err();
        assert_eq!(
            error.to_string(),
            "OpenCL is not in this build (built without the `opencl` feature); rebuild with \
             `--features opencl` or use another backend"
        );
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn cuda_says_it_is_not_in_this_build() {
        let error = super::cuda::CudaDevice::list().unwrap_err();
        assert!(
            error.to_string().starts_with("CUDA is not in this build"),
            "{error}"
        );
    }
}
