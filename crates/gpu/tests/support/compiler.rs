//! What the compile-only tests (`cuda_nvrtc.rs`, `hip_compile.rs`) share: whether the
//! run-time compiler they need can be loaded here, or why they are skipped.
//!
//! Included with `#[path = "support/compiler.rs"] mod compiler;`.

use parcrypt_gpu::GpuError;

/// Whether the run-time compiler `name` can be loaded (`loaded`: the library's check of
/// it). Where it cannot, prints `skip_message` and the reason and returns `false`, or fails:
/// under `CI`, which installs the compiler, and with `required_on_gpu_machines` under
/// `PARCRYPT_REQUIRE_GPU=1` (a GPU machine).
pub fn present(
    name: &str,
    loaded: Result<(), GpuError>,
    skip_message: &str,
    required_on_gpu_machines: bool,
) -> bool {
    let Err(error) = loaded else {
        return true;
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "CI is set, so {name} must be loadable, but: {error}"
    );
    assert!(
        !required_on_gpu_machines || std::env::var("PARCRYPT_REQUIRE_GPU").as_deref() != Ok("1"),
        "PARCRYPT_REQUIRE_GPU=1 (a GPU machine), so {name} must be loadable: {error}"
    );
    println!("{skip_message}");
    println!("  ({error})");
    false
}
