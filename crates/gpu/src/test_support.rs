//! What this crate's unit tests read from the environment, in one place: whether the run
//! must find its GPUs (`PARCRYPT_REQUIRE_GPU=1`, as the GPU job sets it) and whether it runs
//! under CI (`CI`, where PoCL is installed, so OpenCL must work). Compiled for tests only:
//! the library itself reads no environment variable.

// Only the backends' tests use it: a build without any has nothing to test.
#![cfg_attr(
    not(any(feature = "opencl", feature = "cuda", feature = "hip")),
    allow(dead_code)
)]

use std::fmt::Display;

/// Whether a missing GPU API (NVRTC, a CUDA device) is a failure rather than a skip.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn gpu_required() -> bool {
    std::env::var("PARCRYPT_REQUIRE_GPU").as_deref() == Ok("1")
}

/// Whether the tests run under CI, which installs PoCL: a missing OpenCL device fails.
#[cfg_attr(not(feature = "opencl"), allow(dead_code))]
pub(crate) fn in_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// What a test needs from the machine (`found`), or `None` after saying why `what` is
/// missing: a failure where `must_find` gives the reason it has to be here, else a skip.
pub(crate) fn found_or_skip<T>(
    found: Result<T, impl Display>,
    what: &str,
    must_find: Option<&str>,
) -> Option<T> {
    match found {
        Ok(found) => Some(found),
        Err(reason) => {
            if let Some(why) = must_find {
                panic!("{why}, so {what} must be present: {reason}");
            }
            println!("SKIPPED: no {what} [{reason}]");
            None
        }
    }
}

/// [`found_or_skip`] for a GPU API, which must be present under `PARCRYPT_REQUIRE_GPU=1`.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn gpu_or_skip<T>(found: Result<T, impl Display>, what: &str) -> Option<T> {
    found_or_skip(
        found,
        what,
        gpu_required().then_some("PARCRYPT_REQUIRE_GPU=1"),
    )
}
