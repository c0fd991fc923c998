//! The keyword options that the file functions (`encrypt_file`, `decrypt_file`, the reader
//! and writer behind `parcrypt.open`) and the parts planners share: the stubs'
//! `_FileOptions`. Each function takes them as `**options` and reads them here, in one
//! place, instead of repeating seven keyword-only parameters; its `text_signature` still
//! shows them one by one.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::buffers::Input;
use crate::files::Secrets;
use crate::runtime::{self, Runtime};

/// The options a function was given, each at its default when not given.
pub(crate) struct Options<'py> {
    key: Option<Bound<'py, PyAny>>,
    passphrase: Option<Bound<'py, PyAny>>,
    backend: String,
    threads: Option<usize>,
    /// Whether an existing output may be replaced.
    pub(crate) overwrite: bool,
    /// The file format's name (`parcrypt` or `cobblestone`).
    pub(crate) format: String,
    context: Option<Bound<'py, PyAny>>,
    /// Fixed salts `(cobblestone, argon2)` (parts planning only).
    pub(crate) salts: Option<(Vec<u8>, Vec<u8>)>,
}

impl<'py> Options<'py> {
    /// Reads `options`, the `**options` of `function`, which takes the names in `accepted`.
    /// Another name raises `TypeError` as for a keyword argument the function does not have,
    /// and a value of the wrong type the `TypeError` of its conversion.
    pub(crate) fn take(
        function: &str,
        accepted: &[&str],
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Self> {
        let mut taken = Options {
            key: None,
            passphrase: None,
            backend: "auto".to_string(),
            threads: None,
            overwrite: false,
            format: "parcrypt".to_string(),
            context: None,
            salts: None,
        };
        for (name, value) in options.into_iter().flat_map(|options| options.iter()) {
            let name: String = name.extract()?;
            let unexpected = || {
                PyTypeError::new_err(format!(
                    "{function}() got an unexpected keyword argument '{name}'"
                ))
            };
            if !accepted.contains(&name.as_str()) {
                return Err(unexpected());
            }
            let object = (!value.is_none()).then(|| value.clone());
            match name.as_str() {
                "key" => taken.key = object,
                "passphrase" => taken.passphrase = object,
                "context" => taken.context = object,
                "backend" => taken.backend = value.extract()?,
                "threads" => taken.threads = value.extract()?,
                "overwrite" => taken.overwrite = value.extract()?,
                "format" => taken.format = value.extract()?,
                "salts" => taken.salts = value.extract()?,
                _ => return Err(unexpected()),
            }
        }
        Ok(taken)
    }

    /// The key or passphrase (exactly one) and the context, in that order of checking.
    pub(crate) fn secrets(&self) -> PyResult<(Secrets, Option<Input>)> {
        let secrets = Secrets::get(self.key.as_ref(), self.passphrase.as_ref())?;
        let context = self.context.as_ref().map(Input::get).transpose()?;
        Ok((secrets, context))
    }

    /// The shared runtime for the backend and thread count asked for.
    pub(crate) fn runtime(&self) -> PyResult<&'static Runtime> {
        runtime::runtime(&self.backend, self.threads)
    }
}

/// What `encrypt_file`, `decrypt_file` and `open_writer` take.
pub(crate) const FILE: &[&str] = &[
    "key",
    "passphrase",
    "backend",
    "threads",
    "overwrite",
    "format",
    "context",
];

/// What `open_reader` takes: all but `overwrite`.
pub(crate) const READER: &[&str] = &[
    "key",
    "passphrase",
    "backend",
    "threads",
    "format",
    "context",
];
