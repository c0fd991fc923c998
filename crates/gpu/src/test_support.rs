//! What this crate's unit tests read from the environment, in one place: whether the run
//! must find its GPUs (`PARCRYPT_REQUIRE_GPU=1`, as the GPU job sets it) and whether it runs
//! under CI (`CI`, where PoCL is installed, so OpenCL must work). Compiled for tests only:
//! the library itself reads no environment variable.

/// Whether a missing GPU API (NVRTC, a CUDA device) is a failure rather than a skip.
pub(crate) fn gpu_required() -> bool {
    std::env::var("PARCRYPT_REQUIRE_GPU").as_deref() == Ok("1")
}

/// Whether the tests run under CI, which installs PoCL: a missing OpenCL device fails.
pub(crate) fn in_ci() -> bool {
    std::env::var_os("CI").is_some()
}
