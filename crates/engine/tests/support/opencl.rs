//! What the engine's OpenCL tests share: the device, or why a test is skipped without one,
//! and the pieces of the made-up tune tables they install.

use std::sync::Arc;

use parcrypt_engine::{Backend, CipherSpec, Engine, KeyedCipher};
use parcrypt_gpu::tuning::TunedShape;
use parcrypt_gpu::{LaunchGeometry, OpenClDevice};

/// The name of the first OpenCL device listed, or `None` after printing why the test is
/// skipped. Under `CI`, which installs PoCL, a missing device fails the test instead.
pub fn first_device_name() -> Option<String> {
    let reason = match OpenClDevice::list() {
        Ok(devices) if !devices.is_empty() => return Some(devices[0].to_string()),
        Ok(_) => "no OpenCL device".to_string(),
        Err(error) => error.to_string(),
    };
    if std::env::var_os("CI").is_some() {
        panic!("CI is set, so an OpenCL device (PoCL) must be present, but: {reason}");
    }
    println!("SKIPPED: no OpenCL device (install pocl-opencl-icd) [{reason}]");
    None
}

/// The first OpenCL device, opened; `None` as [`first_device_name`] says.
#[allow(dead_code)] // each test file uses what it needs
pub fn open_first_device() -> Option<OpenClDevice> {
    first_device_name()?;
    Some(OpenClDevice::open(0).unwrap_or_else(|error| panic!("opening OpenCL device: {error}")))
}

/// The OpenCL backend on two host threads; `None` as [`first_device_name`] says.
#[allow(dead_code)] // each test file uses what it needs
pub fn opencl_engine() -> Option<Engine> {
    first_device_name()?;
    Some(Engine::new(Backend::Opencl, Some(2)).expect("OpenCL engine"))
}

/// The OpenCL engine of [`opencl_engine`] and a `seq` one, to compare a key's bytes on both.
#[allow(dead_code)] // each test file uses what it needs
pub struct OpenclAndSeq {
    gpu: Arc<Engine>,
    seq: Arc<Engine>,
}

#[allow(dead_code)] // each test file uses what it needs
impl OpenclAndSeq {
    /// Both engines; `None` as [`first_device_name`] says.
    pub fn new() -> Option<Self> {
        Some(OpenclAndSeq {
            gpu: Arc::new(opencl_engine()?),
            seq: Arc::new(Engine::new(Backend::Seq, None).unwrap()),
        })
    }

    /// `key` for `suite` on the OpenCL engine, then on `seq`.
    pub fn keyed(&self, suite: CipherSpec, key: &[u8]) -> (KeyedCipher, KeyedCipher) {
        let on = |engine: &Arc<Engine>| KeyedCipher::new(Arc::clone(engine), suite, key).unwrap();
        (on(&self.gpu), on(&self.seq))
    }
}

/// A launch shape of `threads_per_group` work-items that take `blocks_per_thread` each.
pub fn geometry(threads_per_group: usize, blocks_per_thread: usize) -> LaunchGeometry {
    LaunchGeometry {
        threads_per_group,
        blocks_per_thread,
    }
}

/// A tuned shape for AES-128 CTR from `bytes` on, with the kernel times it was chosen by.
pub fn aes_128_ctr_shape(
    bytes: u64,
    geometry: LaunchGeometry,
    kernel_seconds: f64,
    untuned_kernel_seconds: f64,
) -> TunedShape {
    TunedShape {
        algorithm: "aes-128".into(),
        operation: "ctr".into(),
        bytes,
        threads_per_group: geometry.threads_per_group,
        blocks_per_thread: geometry.blocks_per_thread,
        kernel_seconds,
        untuned_kernel_seconds,
        decision: None,
    }
}
