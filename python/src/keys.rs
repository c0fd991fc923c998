//! Keys people can share (age's): `recipients=` to encrypt to, `identities=` to decrypt
//! with, `parcrypt.keygen` and `parcrypt.recipient_of`. Everything is parsed and read by
//! the library (`parcrypt::age`): this file only takes Python's values apart.
//!
//! An item of `recipients=` is recipient text (`age1...`, `age1pq1...`, or a recipients
//! file's text: one a line, `#` comments) or an `os.PathLike` recipients file; an item of
//! `identities=` is identity text (`AGE-SECRET-KEY-1...`, `AGE-SECRET-KEY-PQ-1...`, or an
//! identity file's text) or an `os.PathLike` identity file, which warns
//! (`parcrypt.ParcryptWarning`) when other users can read it. A single item may be given
//! without a list around it. Errors name the item, never its secret text.

use std::path::PathBuf;

use parcrypt::age::{self, Identity, Recipient};
use parcrypt::errors::AgeError;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};
use zeroize::Zeroizing;

use crate::buffers::Input;
use crate::errors;

/// Which way a call goes, and so which keys it may be given.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Encrypt,
    Decrypt,
}

/// One item of `recipients=` or `identities=`.
enum Item {
    /// Key text, read in place from the Python object (its bytes copied into memory wiped
    /// when dropped).
    Text(Zeroizing<Vec<u8>>),
    File(PathBuf),
}

/// Whether `value` is one item rather than a list of them.
fn is_single(value: &Bound<'_, PyAny>) -> bool {
    value.is_instance_of::<PyString>()
        || value.is_instance_of::<PyBytes>()
        || value.is_instance_of::<PyByteArray>()
        || value.hasattr("__fspath__").unwrap_or(false)
}

/// The items of `name=` (`recipients` or `identities`), each read.
fn items(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Vec<Item>> {
    let objects: Vec<Bound<'_, PyAny>> = if is_single(value) {
        vec![value.clone()]
    } else {
        value
            .try_iter()
            .map_err(|_| {
                PyTypeError::new_err(format!(
                    "{name} must be a list of key strings or os.PathLike key files, not {}",
                    type_name(value)
                ))
            })?
            .collect::<PyResult<_>>()?
    };
    if objects.is_empty() {
        return Err(PyValueError::new_err(format!(
            "{name} is empty: give at least one"
        )));
    }
    objects
        .iter()
        .enumerate()
        .map(|(index, object)| item(name, index, object))
        .collect()
}

fn item(name: &str, index: usize, object: &Bound<'_, PyAny>) -> PyResult<Item> {
    if let Ok(text) = object.cast::<PyString>() {
        return Ok(Item::Text(Zeroizing::new(
            text.to_str()?.as_bytes().to_vec(),
        )));
    }
    if object.hasattr("__fspath__")? {
        return Ok(Item::File(object.extract()?));
    }
    match Input::get(object) {
        Ok(input) => Ok(Item::Text(Zeroizing::new(input.bytes().to_vec()))),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{name}[{index}] must be a str or an os.PathLike file, not {}",
            type_name(object)
        ))),
    }
}

fn type_name(object: &Bound<'_, PyAny>) -> String {
    object
        .get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |name| name.to_string())
}

/// `error` with a hint when `text` (which failed to parse) holds no key at all (no `marker`
/// in it): a path given as a `str` is taken for key text.
fn with_hint(error: AgeError, text: &[u8], marker: &str) -> AgeError {
    let has_key = text
        .windows(marker.len())
        .any(|window| window.eq_ignore_ascii_case(marker.as_bytes()));
    match error {
        AgeError::Key(reason) if !has_key => AgeError::Key(format!(
            "{reason} (a str is key text: give a key file as a pathlib.Path)"
        )),
        other => other,
    }
}

/// The recipients of `recipients=`, in order.
pub(crate) fn recipients(value: &Bound<'_, PyAny>) -> PyResult<Vec<Recipient>> {
    let mut recipients = Vec::new();
    for (index, item) in items("recipients", value)?.into_iter().enumerate() {
        let found = match item {
            Item::Text(text) => age::parse_recipients(&text).map_err(|error| {
                errors::age(
                    with_hint(error, &text, "age1"),
                    &format!("recipients[{index}]: "),
                )
            })?,
            Item::File(path) => age::read_recipients_file(&path).map_err(errors::any)?,
        };
        recipients.extend(found);
    }
    Ok(recipients)
}

/// The identities of `identities=`, in order; an identity file that other users can read
/// warns (`stacklevel` as [`errors::warn`]'s).
pub(crate) fn identities(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    stacklevel: i32,
) -> PyResult<Vec<Identity>> {
    let mut identities = Vec::new();
    for (index, item) in items("identities", value)?.into_iter().enumerate() {
        let found = match item {
            Item::Text(text) => age::parse_identities(&text).map_err(|error| {
                let error = with_hint(error, &text, "AGE-SECRET-KEY-");
                errors::age(error, &format!("identities[{index}]: "))
            })?,
            Item::File(path) => {
                if let Some(warning) = age::identity_file_warning(&path) {
                    errors::warn(py, &warning, stacklevel)?;
                }
                age::read_identity_file(&path).map_err(errors::any)?
            }
        };
        identities.extend(found);
    }
    Ok(identities)
}

/// Makes a new identity (X25519, or with `pq` the ML-KEM-768 + X25519 hybrid), writes it to
/// `path` (age-keygen's layout, mode 0600; an existing file is refused) and returns its
/// recipient.
#[pyfunction]
#[pyo3(signature = (path, *, pq=false))]
pub fn keygen_file(py: Python<'_>, path: PathBuf, pq: bool) -> PyResult<String> {
    py.detach(|| age::write_identity_file(&path, pq))
        .map(|recipient| recipient.to_string())
        .map_err(errors::any)
}

/// Makes a new identity (as [`keygen_file`]) and returns `(identity_file_text, recipient)`.
#[pyfunction]
#[pyo3(signature = (*, pq=false))]
pub fn keygen_text(pq: bool) -> (String, String) {
    let (text, recipient) = age::generate_identity_file(pq);
    // Into a Python str, which cannot be wiped: the caller asked for the text.
    (text.as_str().to_owned(), recipient.to_string())
}

/// The recipient (`age1...`, `age1pq1...`) of the one identity in `identity` (identity text
/// or an `os.PathLike` identity file).
#[pyfunction]
pub fn recipient_of(py: Python<'_>, identity: &Bound<'_, PyAny>) -> PyResult<String> {
    // Called by parcrypt.recipient_of: a warning points at its caller.
    let identities = identities(py, identity, 2)?;
    match identities.as_slice() {
        [one] => one
            .to_public()
            .map(|recipient| recipient.to_string())
            .ok_or_else(|| PyValueError::new_err("a passphrase has no recipient")),
        many => Err(PyValueError::new_err(format!(
            "{} identities given: give one to get its recipient",
            many.len()
        ))),
    }
}
