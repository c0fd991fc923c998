//! Errors of the GPU layer, written for the person who has to fix the machine.

use parcrypt_ciphers::KeyError;

/// Why a GPU operation could not run.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// The OpenCL loader library (libOpenCL) could not be loaded.
    #[error(
        "no OpenCL library: could not load {looked_for} ({reason}). Install an OpenCL loader \
         and driver (Debian/Ubuntu: `apt install ocl-icd-libopencl1` plus `pocl-opencl-icd` \
         for the CPU or your GPU vendor's OpenCL driver), or set OPENCL_DYLIB_PATH to the \
         library's path"
    )]
    NoOpenClLibrary {
        /// The library file names or path that were tried.
        looked_for: String,
        /// The loader's own explanation of why loading failed.
        reason: String,
    },

    /// libOpenCL loaded, but no OpenCL driver (platform) is registered with it.
    #[error(
        "no OpenCL platform: libOpenCL loaded, but it found no driver (ICD) registered in \
         /etc/OpenCL/vendors or OCL_ICD_VENDORS ({code}). Install one, e.g. `pocl-opencl-icd` \
         for the CPU or your GPU vendor's OpenCL driver"
    )]
    NoPlatform {
        /// The OpenCL error code and its name, or a note that the list came back empty.
        code: String,
    },

    /// The OpenCL device index asked for is past the end of the device list.
    #[error("no OpenCL device number {index}: this machine has {count} (see `parcrypt devices`)")]
    NoDevice {
        /// The device index that was asked for, counted from 0.
        index: usize,
        /// How many OpenCL devices the machine has.
        count: usize,
    },

    /// The OpenCL driver failed to compile the kernel source for a device.
    #[error(
        "the OpenCL compiler for {device} rejected the kernels (build options `{options}`). \
         Full build log:\n{log}"
    )]
    Build {
        /// The device's name as the driver reports it.
        device: String,
        /// The build options (`-D` defines and flags) passed to the compiler.
        options: String,
        /// The compiler's whole build log.
        log: String,
    },

    /// A compiled kernel gave a wrong result on a known test vector, so the device is
    /// refused.
    #[error(
        "kernel self-test failed on {device}: {kernel} on the {vector} vector gave {got}, \
         expected {expected}. This device's results cannot be trusted, so parcrypt refuses \
         it; update its driver or use another backend"
    )]
    SelfTest {
        /// The device's name.
        device: String,
        /// The name of the kernel that gave the wrong result.
        kernel: &'static str,
        /// Where the test vector comes from (for example "FIPS-197 C.1 (AES-128)").
        vector: &'static str,
        /// The correct output, in hexadecimal.
        expected: String,
        /// The output the device produced, in hexadecimal.
        got: String,
    },

    /// The OpenCL device stores words big-endian, which the kernels do not support.
    #[error("{device} is a big-endian device; parcrypt's kernels need a little-endian one")]
    BigEndianDevice {
        /// The device's name.
        device: String,
    },

    /// An OpenCL call returned an error code.
    #[error("OpenCL call {call} failed: {code}")]
    Api {
        /// The name of the OpenCL function that failed (for example `clEnqueueNDRangeKernel`).
        call: &'static str,
        /// The error code's name and number.
        code: String,
    },

    /// The CUDA driver library (libcuda) could not be loaded.
    #[error(
        "no CUDA driver: could not load {looked_for}. Install the NVIDIA driver (it brings \
         libcuda), or make its folder visible through LD_LIBRARY_PATH; use another backend \
         on machines without an NVIDIA GPU"
    )]
    NoCudaDriver {
        /// The library file names that were tried.
        looked_for: String,
    },

    /// The NVRTC run-time compiler library could not be loaded, so no CUDA kernels can be
    /// built.
    #[error(
        "NVRTC not found: could not load {looked_for}, which compiles the CUDA kernels at run \
         time. `pip install nvidia-cuda-nvrtc==13.0.88` and put its lib folder \
         (site-packages/nvidia/cu13/lib) on LD_LIBRARY_PATH, or install the CUDA toolkit and \
         put its lib64 folder there"
    )]
    NoNvrtc {
        /// The library file names that were tried.
        looked_for: String,
    },

    /// The CUDA device index asked for does not exist, or the driver could not start.
    #[error(
        "no CUDA device number {index}: the CUDA driver sees {count}{detail} (see `parcrypt \
         devices`)"
    )]
    NoCudaDevice {
        /// The device index that was asked for, counted from 0.
        index: usize,
        /// How many devices the CUDA driver sees.
        count: usize,
        /// Why the driver sees none, starting with ": " (empty when the index is simply
        /// out of range).
        detail: String,
    },

    /// NVRTC failed to compile the kernel source for a GPU architecture.
    #[error(
        "NVRTC rejected the kernels for {arch} ({result}; options `{options}`). Full log:\n{log}"
    )]
    NvrtcCompile {
        /// The GPU architecture compiled for (for example `sm_90`).
        arch: String,
        /// The compiler options, joined by spaces.
        options: String,
        /// NVRTC's result code.
        result: String,
        /// NVRTC's whole compile log.
        log: String,
    },

    /// A CUDA driver or NVRTC call returned an error.
    #[error("CUDA call {call} failed: {code}")]
    Cuda {
        /// The name of the CUDA function that failed (for example `cuMemAlloc`).
        call: &'static str,
        /// The error code, with the driver's description where it gives one.
        code: String,
    },

    /// The HIP runtime (libamdhip64) could not be loaded: no ROCm here.
    #[error(
        "no libamdhip64 (the HIP runtime): could not load {looked_for} ({reason}). Install \
         ROCm's HIP runtime (Debian 12: `apt install libamdhip64-5 libhiprtc-builtins5`) on a \
         machine with an AMD GPU, or use another backend"
    )]
    NoHipRuntime {
        /// The library file names that were tried.
        looked_for: String,
        /// The loader's reason for the last one.
        reason: String,
    },

    /// hiprtc, the HIP run-time compiler, could not be loaded, so no HIP kernels can be built.
    #[error(
        "hiprtc not found: could not load {looked_for} ({reason}). Install ROCm's hiprtc \
         (Debian 12: `apt install libamdhip64-5 libhiprtc-builtins5`; ROCm 6: `hiprtc`)"
    )]
    NoHiprtc {
        /// Where hiprtc was looked for.
        looked_for: String,
        /// The loader's reason.
        reason: String,
    },

    /// The HIP runtime loaded but sees no AMD GPU.
    #[error("no AMD GPU present ({detail})")]
    NoAmdGpu {
        /// What the runtime said, e.g. "hipGetDeviceCount: hipErrorNoDevice (100)".
        detail: String,
    },

    /// The HIP device index asked for is past the end of the runtime's list.
    #[error("no HIP device number {index}: the HIP runtime sees {count} (see `parcrypt devices`)")]
    NoHipDevice {
        /// The device index that was asked for, counted from 0.
        index: usize,
        /// How many devices the HIP runtime sees.
        count: usize,
    },

    /// hiprtc failed to compile the kernel source for a GPU target.
    #[error(
        "hiprtc rejected the kernels for {target} ({result}; options `{options}`). Full log:\n{log}"
    )]
    HiprtcCompile {
        /// The GPU target compiled for (for example `gfx90a`).
        target: String,
        /// The compiler options, joined by spaces.
        options: String,
        /// hiprtc's result code.
        result: String,
        /// hiprtc's whole compile log.
        log: String,
    },

    /// A HIP runtime or hiprtc call returned an error.
    #[error("HIP call {call} failed: {code}")]
    Hip {
        /// The name of the HIP function that failed (for example `hipMalloc`).
        call: &'static str,
        /// The error's name and number.
        code: String,
    },

    /// The key does not fit the cipher.
    #[error(transparent)]
    Key(#[from] KeyError),

    /// The caller's request is malformed (lengths, counts or settings out of range); holds
    /// the whole message.
    #[error("{0}")]
    InvalidInput(String),

    /// The backend has no device path for this operation; the caller falls back to the CPU.
    #[error(
        "the {api} backend cannot run {operation} on the device; the caller runs it on the \
         CPU instead"
    )]
    Unsupported {
        /// The GPU programming interface that was asked.
        api: crate::GpuApi,
        /// What it cannot do, in words (for example "GHASH").
        operation: &'static str,
    },

    /// Support for this GPU programming interface was left out at compile time.
    #[error(
        "{title} is not in this build (built without the `{name}` feature); rebuild with \
         `--features {name}` or use another backend",
        title = .api.title(),
        name = .api.name()
    )]
    NotInThisBuild {
        /// The GPU programming interface whose cargo feature was off.
        api: crate::GpuApi,
    },
}

#[cfg(feature = "opencl")]
impl GpuError {
    /// Wraps an OpenCL error code with the name of the call that returned it.
    pub(crate) fn api(call: &'static str, error: opencl3::error_codes::ClError) -> Self {
        GpuError::Api {
            call,
            code: format!("{error} ({})", error.0),
        }
    }
}

/// `.or_api("clSomething")?` on an opencl3 result.
#[cfg(feature = "opencl")]
pub(crate) trait ApiResultExt<T> {
    fn or_api(self, call: &'static str) -> Result<T, GpuError>;
}

#[cfg(feature = "opencl")]
impl<T> ApiResultExt<T> for Result<T, opencl3::error_codes::ClError> {
    fn or_api(self, call: &'static str) -> Result<T, GpuError> {
        self.map_err(|error| GpuError::api(call, error))
    }
}
