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
use crate::keys::Direction;
use crate::runtime::{self, Runtime};

/// The options a function was given, each at its default when not given.
pub(crate) struct Options<'py> {
    pub(crate) key: Option<Bound<'py, PyAny>>,
    pub(crate) passphrase: Option<Bound<'py, PyAny>>,
    /// Public-key recipients (`age1...`, files of them), to encrypt to.
    pub(crate) recipients: Option<Bound<'py, PyAny>>,
    /// Identities (`AGE-SECRET-KEY-...`, identity files), to decrypt with.
    pub(crate) identities: Option<Bound<'py, PyAny>>,
    /// ASCII armor around an age file (`format="age"` only).
    pub(crate) armor: bool,
    backend: String,
    threads: Option<usize>,
    /// Whether an existing output may be replaced.
    pub(crate) overwrite: bool,
    /// The file format's name (`parcrypt` or `cobblestone`).
    pub(crate) format: String,
    pub(crate) context: Option<Bound<'py, PyAny>>,
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
            recipients: None,
            identities: None,
            armor: false,
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
                "recipients" => taken.recipients = object,
                "identities" => taken.identities = object,
                "armor" => taken.armor = value.extract()?,
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

    /// The key, passphrase or public keys (exactly one: recipients to encrypt, identities
    /// to decrypt) and the context, in that order of checking. An identity file others can
    /// read warns, `stacklevel` as [`crate::errors::warn`]'s.
    pub(crate) fn secrets(
        &self,
        py: Python<'_>,
        direction: Direction,
        stacklevel: i32,
    ) -> PyResult<(Secrets, Option<Input>)> {
        if self.armor {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "armor is for age files (format=\"age\")",
            ));
        }
        let secrets = Secrets::get(py, self, direction, stacklevel)?;
        let context = self.context.as_ref().map(Input::get).transpose()?;
        Ok((secrets, context))
    }

    /// The threads an age file's payload runs on, as `parcrypt encrypt --format age` takes
    /// `--backend` and `--threads` (`parcrypt::age::threads_for`): one for `seq`, `threads`
    /// else (every core when `None`). A GPU backend is a ValueError: age's
    /// ChaCha20-Poly1305 runs on the CPU.
    pub(crate) fn age_threads(&self) -> PyResult<Option<usize>> {
        let backend: parcrypt::Backend = self.backend.parse().map_err(crate::errors::engine)?;
        parcrypt::age::threads_for(backend, self.threads)
            .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string()))
    }

    /// The pool of [`Options::age_threads`], started once for a reader's or writer's life.
    pub(crate) fn age_pool(&self) -> PyResult<parcrypt::age::Threads> {
        parcrypt::age::Threads::new(self.age_threads()?)
            .map_err(|error| crate::errors::age(error, ""))
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
    "recipients",
    "identities",
    "armor",
    "backend",
    "threads",
    "overwrite",
    "format",
    "context",
];

/// What `open_reader` takes: all but `overwrite` and `armor`.
pub(crate) const READER: &[&str] = &[
    "key",
    "passphrase",
    "recipients",
    "identities",
    "backend",
    "threads",
    "format",
    "context",
];
