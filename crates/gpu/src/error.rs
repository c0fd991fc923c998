//! Errors of the GPU layer, written for the person who has to fix the machine.

use parcrypt_ciphers::KeyError;

/// Why a GPU operation could not run.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error(
        "no OpenCL library: could not load {looked_for} ({reason}). Install an OpenCL loader \
         and driver (Debian/Ubuntu: `apt install ocl-icd-libopencl1` plus `pocl-opencl-icd` \
         for the CPU or your GPU vendor's OpenCL driver), or set OPENCL_DYLIB_PATH to the \
         library's path"
    )]
    NoOpenClLibrary { looked_for: String, reason: String },

    #[error(
        "no OpenCL platform: libOpenCL loaded, but it found no driver (ICD) registered in \
         /etc/OpenCL/vendors or OCL_ICD_VENDORS ({code}). Install one, e.g. `pocl-opencl-icd` \
         for the CPU or your GPU vendor's OpenCL driver"
    )]
    NoPlatform { code: String },

    #[error("no OpenCL device number {index}: this machine has {count} (see `parcrypt devices`)")]
    NoDevice { index: usize, count: usize },

    #[error(
        "the OpenCL compiler for {device} rejected the kernels (build options `{options}`). \
         Full build log:\n{log}"
    )]
    Build {
        device: String,
        options: String,
        log: String,
    },

    #[error(
        "kernel self-test failed on {device}: {kernel} on the {vector} vector gave {got}, \
         expected {expected}. This device's results cannot be trusted, so parcrypt refuses \
         it; update its driver or use another backend"
    )]
    SelfTest {
        device: String,
        kernel: &'static str,
        vector: &'static str,
        expected: String,
        got: String,
    },

    #[error("{device} is a big-endian device; parcrypt's kernels need a little-endian one")]
    BigEndianDevice { device: String },

    #[error("OpenCL call {call} failed: {code}")]
    Api { call: &'static str, code: String },

    #[error(
        "no CUDA driver: could not load {looked_for}. Install the NVIDIA driver (it brings \
         libcuda), or make its folder visible through LD_LIBRARY_PATH; use another backend \
         on machines without an NVIDIA GPU"
    )]
    NoCudaDriver { looked_for: String },

    #[error(
        "NVRTC not found: could not load {looked_for}, which compiles the CUDA kernels at run \
         time. `pip install nvidia-cuda-nvrtc==13.0.88` and put its lib folder \
         (site-packages/nvidia/cu13/lib) on LD_LIBRARY_PATH, or install the CUDA toolkit and \
         put its lib64 folder there"
    )]
    NoNvrtc { looked_for: String },

    #[error(
        "no CUDA device number {index}: the CUDA driver sees {count}{detail} (see `parcrypt \
         devices`)"
    )]
    NoCudaDevice {
        index: usize,
        count: usize,
        detail: String,
    },

    #[error(
        "NVRTC rejected the kernels for {arch} ({result}; options `{options}`). Full log:\n{log}"
    )]
    NvrtcCompile {
        arch: String,
        options: String,
        result: String,
        log: String,
    },

    #[error("CUDA call {call} failed: {code}")]
    Cuda { call: &'static str, code: String },

    #[error(transparent)]
    Key(#[from] KeyError),

    #[error("{0}")]
    InvalidInput(String),

    #[error(
        "the {api} backend cannot run {operation} on the device; the caller runs it on the \
         CPU instead"
    )]
    Unsupported {
        api: crate::GpuApi,
        operation: &'static str,
    },

    #[error(
        "{title} is not in this build (built without the `{name}` feature); rebuild with \
         `--features {name}` or use another backend",
        title = .api.title(),
        name = .api.name()
    )]
    NotInThisBuild { api: crate::GpuApi },
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
