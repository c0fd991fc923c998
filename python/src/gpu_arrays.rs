//! Arrays on a GPU (DLPack objects whose device is not the CPU).

use pyo3::PyErr;

use crate::errors::Error;

/// Why an array on `device` (`id`) cannot be encrypted here: no CUDA device on this machine,
/// or (with one) that this build does not encrypt device arrays in place yet.
pub fn unsupported(device: &str, id: i64) -> PyErr {
    let cuda = parcrypt::gpu::CudaDevice::list();
    let reason = match &cuda {
        Ok(devices) if !devices.is_empty() => {
            "this build of parcrypt does not yet encrypt device arrays in place: copy the array to the host (e.g. .get() or .cpu()) first".to_string()
        }
        Ok(_) => "this machine has no CUDA device".to_string(),
        Err(error) => format!("the CUDA backend is unavailable here: {error}"),
    };
    Error::new_err(format!(
        "the array is on {device} #{id}, and parcrypt cannot encrypt it there: {reason}"
    ))
}
