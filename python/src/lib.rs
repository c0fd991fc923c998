//! `parcrypt._parcrypt`: the native module of the `parcrypt` Python package.
//!
//! A thin layer: every capability is a call into the parcrypt crates (the engine's
//! [`Aead`](parcrypt::Aead) and [`Cipher`](parcrypt::hazmat::Cipher) for whole
//! messages in memory, the format crate's
//! files, readers and writers). What lives here is only what Python needs: taking Python
//! buffers without copying them, releasing the GIL while the engine works, and turning
//! every error into a Python exception (`parcrypt.Error`, `parcrypt.InvalidTag`,
//! `ValueError`, `OSError`). A Rust panic never crosses into Python as an abort: PyO3
//! turns one into `pyo3_runtime.PanicException`, and none is expected on any input.
//!
//! Engines (their thread pools, their GPU contexts) are made once per backend and thread
//! count and shared by every cipher and file the process opens, so that a `Cipher` per
//! message (its IV encrypts one message) costs no thread start-up.

mod aead;
mod buffers;
mod cipher;
mod errors;
mod files;
mod gpu_arrays;
mod keys;
mod options;
mod parts;
mod runtime;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use parcrypt::devices::available_threads;
use parcrypt::Backend;

/// The backends this machine offers, as `parcrypt devices` lists them: one dict each with
/// `name`, `available` and `detail` (what it is, or why it cannot run here).
#[pyfunction]
fn backends(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let threads = available_threads();
    let mut rows = vec![
        ("seq", true, "one thread".to_string()),
        (
            "threads",
            true,
            format!("static equal split over {threads} threads"),
        ),
        (
            "pool",
            true,
            format!("work items taken in turn by {threads} threads, the caller one of them"),
        ),
        (
            "auto",
            true,
            "one thread or the pool, chosen per job by a cost model measured on this machine; a tuned GPU for the jobs it was measured to win".to_string(),
        ),
    ];
    for (backend, listed) in gpu_devices() {
        let row = match listed {
            Ok(devices) if !devices.is_empty() => (
                backend.name(),
                true,
                format!("{} device(s); #0 is used", devices.len()),
            ),
            Ok(_) => (backend.name(), false, "no device found".to_string()),
            Err(reason) => (backend.name(), false, reason),
        };
        rows.push(row);
    }
    dicts(py, ["name", "available", "detail"], rows)
}

/// The CPU and every GPU device found, as `parcrypt devices` describes them: one dict each
/// with `backend` (`cpu`, `opencl`, `cuda`, `hip`), `index` and `description`.
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let mut rows = vec![(
        "cpu",
        0usize,
        format!(
            "{} hardware threads; {}",
            available_threads(),
            parcrypt::devices::cpu_features()
        ),
    )];
    for (backend, listed) in gpu_devices() {
        for (index, description) in listed.unwrap_or_default().into_iter().enumerate() {
            rows.push((backend.name(), index, description));
        }
    }
    dicts(py, ["backend", "index", "description"], rows)
}

/// `rows` as dicts, each row's three values under the three `keys`.
fn dicts<'py, A, B, C>(
    py: Python<'py>,
    keys: [&str; 3],
    rows: Vec<(A, B, C)>,
) -> PyResult<Vec<Bound<'py, PyDict>>>
where
    A: IntoPyObject<'py>,
    B: IntoPyObject<'py>,
    C: IntoPyObject<'py>,
{
    rows.into_iter()
        .map(|(a, b, c)| {
            let row = PyDict::new(py);
            row.set_item(keys[0], a)?;
            row.set_item(keys[1], b)?;
            row.set_item(keys[2], c)?;
            Ok(row)
        })
        .collect()
}

/// Each GPU backend with its devices' descriptions, or why it has none.
fn gpu_devices() -> [(Backend, Result<Vec<String>, String>); 3] {
    use parcrypt::devices::{CudaDevice, HipDevice, OpenClDevice};
    fn described<D: ToString, E: ToString>(
        listed: Result<Vec<D>, E>,
    ) -> Result<Vec<String>, String> {
        listed
            .map(|devices| devices.iter().map(ToString::to_string).collect())
            .map_err(|error| error.to_string())
    }
    [
        (Backend::Opencl, described(OpenClDevice::list())),
        (Backend::Cuda, described(CudaDevice::list())),
        (Backend::Hip, described(HipDevice::list())),
    ]
}

/// The module `parcrypt._parcrypt`.
#[pymodule]
fn _parcrypt(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("Error", py.get_type::<errors::Error>())?;
    module.add("InvalidTag", py.get_type::<errors::InvalidTag>())?;
    module.add("ParcryptWarning", py.get_type::<errors::ParcryptWarning>())?;
    module.add_class::<aead::Aead>()?;
    module.add_class::<cipher::Cipher>()?;
    module.add_class::<gpu_arrays::DeviceArray>()?;
    module.add_class::<files::Reader>()?;
    module.add_class::<files::Writer>()?;
    module.add_class::<parts::PartJob>()?;
    module.add_function(wrap_pyfunction!(backends, module)?)?;
    module.add_function(wrap_pyfunction!(devices, module)?)?;
    module.add_function(wrap_pyfunction!(files::encrypt_file, module)?)?;
    module.add_function(wrap_pyfunction!(files::decrypt_file, module)?)?;
    module.add_function(wrap_pyfunction!(files::open_reader, module)?)?;
    module.add_function(wrap_pyfunction!(files::open_writer, module)?)?;
    module.add_function(wrap_pyfunction!(files::is_age, module)?)?;
    module.add_function(wrap_pyfunction!(keys::keygen_file, module)?)?;
    module.add_function(wrap_pyfunction!(keys::keygen_text, module)?)?;
    module.add_function(wrap_pyfunction!(keys::recipient_of, module)?)?;
    module.add_function(wrap_pyfunction!(parts::parts_plan_encrypt, module)?)?;
    module.add_function(wrap_pyfunction!(parts::parts_plan_decrypt, module)?)?;
    module.add_function(wrap_pyfunction!(parts::parts_layout, module)?)?;
    module.add_function(wrap_pyfunction!(parts::parts_envelope_reach, module)?)?;
    module.add_function(wrap_pyfunction!(parts::parts_prepare_sealed, module)?)?;
    module.add_function(wrap_pyfunction!(parts::parts_prepare_plain, module)?)?;
    module.add_function(wrap_pyfunction!(parts::parts_encrypt_with_salts, module)?)?;
    Ok(())
}
