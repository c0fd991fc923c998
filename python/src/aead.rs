//! `parcrypt.Aead`: AES-GCM with a fresh random nonce per message (the engine's `Aead`).

use parcrypt::errors::JobError;
use parcrypt::Aead as EngineAead;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffers::{new_bytes, Input};
use crate::errors;
use crate::runtime::{keyed_repr, run_message, suite, Keying};

/// AES-GCM under one key, every message sealed under a fresh random 96-bit nonce from the
/// operating system: the call to reach for first.
///
/// `seal` returns `nonce (12 bytes) || ciphertext || tag (16 bytes)`, which any AES-GCM
/// library opens given the first 12 bytes as the nonce; `open` takes it back and returns the
/// plaintext, or raises `parcrypt.InvalidTag` (a changed byte, another AAD, a cut message).
/// One object (the key, keyed once) seals at most 2^32 messages, NIST SP 800-38D's limit
/// for random nonces; it may be shared by threads.
#[pyclass(module = "parcrypt", name = "Aead", frozen)]
pub struct Aead {
    aead: EngineAead,
    /// The suite's name, such as `aes-256-gcm`.
    #[pyo3(get)]
    name: String,
    /// The backend asked for (its name in lower case).
    #[pyo3(get)]
    backend: &'static str,
}

#[pymethods]
impl Aead {
    /// `Aead(name, key, *, backend="auto", threads=None)`.
    #[new]
    #[pyo3(signature = (name, key, *, backend="auto", threads=None))]
    fn new(
        py: Python<'_>,
        name: &str,
        key: &Bound<'_, PyAny>,
        backend: &str,
        threads: Option<usize>,
    ) -> PyResult<Self> {
        let keying = Keying::new(py, suite(name)?, key, backend, threads)?;
        let aead = EngineAead::new(keying.engine, keying.spec, &keying.key).map_err(errors::job)?;
        Ok(Aead {
            aead,
            name: keying.spec.to_string(),
            backend: keying.backend.name(),
        })
    }

    /// A new random key for the AES-GCM suite `name`, from the operating system.
    #[staticmethod]
    fn generate_key<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        let key = EngineAead::generate_key(suite(name)?).map_err(errors::job)?;
        Ok(PyBytes::new(py, &key))
    }

    /// Seals `data` (any bytes-like object) with `aad` as additional authenticated data:
    /// `nonce || ciphertext || tag`, as `bytes`.
    #[pyo3(signature = (data, aad=None))]
    fn seal<'py>(
        &self,
        data: &Bound<'py, PyAny>,
        aad: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let (sealed, written) =
            self.run_to_new_bytes(data, aad, EngineAead::sealed_length, EngineAead::seal_into)?;
        debug_assert_eq!(written, sealed.as_bytes().len());
        Ok(sealed)
    }

    /// Opens a sealed message (`nonce || ciphertext || tag`) made with `aad` and returns the
    /// plaintext as `bytes`; raises `parcrypt.InvalidTag` unless it is genuine.
    #[pyo3(signature = (data, aad=None))]
    fn open<'py>(
        &self,
        data: &Bound<'py, PyAny>,
        aad: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        // A message too short to be sealed is refused by the engine, before any output.
        let opened_length = |sealed| EngineAead::opened_length(sealed).unwrap_or(0);
        let (opened, _) = self.run_to_new_bytes(data, aad, opened_length, EngineAead::open_into)?;
        Ok(opened)
    }

    fn __repr__(&self) -> String {
        keyed_repr("Aead", &self.name, self.backend)
    }
}

impl Aead {
    /// `call` (sealing or opening) from the bytes-like `data`, with the bytes-like `aad`,
    /// into a new `bytes` of `output_length(data's length)`; returns it and the bytes
    /// written. The GIL is released for large messages ([`run_message`]).
    fn run_to_new_bytes<'py>(
        &self,
        data: &Bound<'py, PyAny>,
        aad: Option<&Bound<'py, PyAny>>,
        output_length: impl FnOnce(usize) -> usize,
        call: impl FnOnce(&EngineAead, &[u8], &mut [u8], Option<&[u8]>) -> Result<usize, JobError>
            + Send,
    ) -> PyResult<(Bound<'py, PyBytes>, usize)> {
        let py = data.py();
        let input = Input::get(data)?;
        let aad_input = aad.map(Input::get).transpose()?;
        let aad = aad_input.as_ref().map(Input::bytes);
        let data = input.bytes();
        let (bytes, mut output) = new_bytes(py, output_length(data.len()))?;
        let out = output.bytes_mut();
        let aead = &self.aead;
        let work = move || {
            let out = out; // moved in whole: the closure runs once
            call(aead, data, out, aad)
        };
        let written = run_message(py, data.len(), work).map_err(errors::job)?;
        Ok((bytes, written))
    }
}
