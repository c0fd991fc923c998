//! Every error of the parcrypt crates as a Python exception, with the CLI's one-line reason,
//! and every warning of theirs as a Python warning (`parcrypt.ParcryptWarning`).

use std::ffi::CString;
use std::fmt::Display;
use std::io::ErrorKind;

use parcrypt::errors::{AgeError, GcmError};
use parcrypt::errors::{EngineError, JobError};
use parcrypt::errors::{FormatError, SecretError};
use pyo3::create_exception;
use pyo3::exceptions::{
    PyException, PyFileExistsError, PyFileNotFoundError, PyIsADirectoryError, PyOSError,
    PyPermissionError, PyUserWarning, PyValueError,
};
use pyo3::prelude::*;

create_exception!(
    parcrypt,
    Error,
    PyException,
    "Any failure of parcrypt that is not a bad argument or a file system error."
);
create_exception!(
    parcrypt,
    InvalidTag,
    Error,
    "Authentication failed: a GCM tag or a file chunk does not match (wrong key, IV, AAD or passphrase, or the data was modified). No plaintext is returned."
);

create_exception!(
    parcrypt,
    ParcryptWarning,
    PyUserWarning,
    "A weakness in what parcrypt was asked to do that does not stop it (a short passphrase, key derivation costs below OWASP's minimums), as `parcrypt encrypt` prints it. Shown once per place by default; `warnings.simplefilter(\"error\", parcrypt.ParcryptWarning)` makes it an exception."
);

/// Issues `warning` with Python's `warnings.warn` as a [`ParcryptWarning`], attributed to
/// the frame `stacklevel` levels up (1: whoever called the native function). An error is a
/// filter that turned the warning into an exception: the call must then stop.
pub fn warn(py: Python<'_>, warning: &dyn Display, stacklevel: i32) -> PyResult<()> {
    // A library warning is one line of text; a NUL inside would be a bug, shown as one.
    let message = CString::new(warning.to_string())
        .unwrap_or_else(|_| c"parcrypt: a warning with a NUL byte inside".to_owned());
    PyErr::warn(
        py,
        py.get_type::<ParcryptWarning>().as_any(),
        &message,
        stacklevel,
    )
}

/// Warns (as [`warn`]) of what the engine says about running `spec` on it: a named GPU
/// backend whose table AES is not constant time. Each warning is given once per process.
pub fn warn_engine(
    py: Python<'_>,
    engine: &parcrypt::Engine,
    spec: parcrypt::CipherSpec,
) -> PyResult<()> {
    for warning in engine.take_warnings(spec) {
        warn(py, &warning, 2)?;
    }
    Ok(())
}

/// A message-level error (the engine's [`JobError`]).
pub fn job(error: JobError) -> PyErr {
    let reason = match &error {
        // The engine's line names the CLI's flag.
        JobError::IvMissing(spec) => {
            format!("{spec} needs an IV: give iv= to Cipher() or to this call")
        }
        _ => error.to_string(),
    };
    match error {
        JobError::Gcm(GcmError::TagMismatch) | JobError::ShortSealed(_) => {
            InvalidTag::new_err(reason)
        }
        JobError::ShortGcmIv { .. } | JobError::BirthdayBound { .. } | JobError::AeadSuite(_) => {
            PyValueError::new_err(reason)
        }
        JobError::Key(_)
        | JobError::IvLength { .. }
        | JobError::IvMissing(_)
        | JobError::IvNotUsed(_)
        | JobError::AadNotUsed
        | JobError::PartialBlock { .. }
        | JobError::MissingTag(_)
        | JobError::OutputTooSmall { .. }
        | JobError::Gcm(_) => PyValueError::new_err(reason),
        _ => Error::new_err(reason),
    }
}

/// An engine that cannot be built.
pub fn engine(error: EngineError) -> PyErr {
    match error {
        EngineError::Gpu { .. } | EngineError::Pool(_) => Error::new_err(error.to_string()),
        _ => PyValueError::new_err(error.to_string()),
    }
}

/// A file-level error (the format crate's [`FormatError`]).
pub fn format(error: FormatError) -> PyErr {
    let reason = error.to_string();
    match &error {
        FormatError::WrongKey
        | FormatError::DamagedChunk { .. }
        | FormatError::TruncatedAfter { .. }
        | FormatError::TruncatedChunk { .. }
        // A file to recipients: no identity unwrapped its file key, or its header (a
        // stanza, the MAC, the header's tie to the message) does not authenticate.
        | FormatError::NoMatchingIdentity(_)
        | FormatError::DamagedStanza(_)
        | FormatError::HeaderMac
        | FormatError::HeaderMismatch => InvalidTag::new_err(reason),
        FormatError::KeyLength(_)
        | FormatError::KeySuiteMismatch { .. }
        | FormatError::NeedsPassphrase
        | FormatError::NeedsKey
        | FormatError::NeedsIdentity
        | FormatError::Recipients(_)
        | FormatError::EmptyPassphrase
        | FormatError::KdfLimits(_)
        | FormatError::Range(_) => PyValueError::new_err(reason),
        FormatError::Secret(secret) => match secret {
            SecretError::ReadKeyFile { .. } | SecretError::ReadPassphraseFile { .. } => {
                PyOSError::new_err(reason)
            }
            _ => PyValueError::new_err(reason),
        },
        FormatError::OutputExists(_) => PyFileExistsError::new_err(reason),
        FormatError::InputIsFolder(_) | FormatError::OutputIsFolder(_) => {
            PyIsADirectoryError::new_err(reason)
        }
        FormatError::OutputFolderNotWritable { .. } => PyPermissionError::new_err(reason),
        FormatError::OpenInput { error, .. } | FormatError::OpenOutput { error, .. } => {
            match error.kind() {
                ErrorKind::NotFound => PyFileNotFoundError::new_err(reason),
                ErrorKind::PermissionDenied => PyPermissionError::new_err(reason),
                _ => PyOSError::new_err(reason),
            }
        }
        FormatError::OutputFolderMissing { .. } => PyFileNotFoundError::new_err(reason),
        FormatError::Read(_)
        | FormatError::Write(_)
        | FormatError::OutputIsInput(_)
        | FormatError::StdoutIsInput
        | FormatError::DanglingLink { .. }
        | FormatError::CreateTemporary { .. }
        | FormatError::FinishOutput { .. }
        | FormatError::PersistOutput { .. } => PyOSError::new_err(reason),
        _ => Error::new_err(reason),
    }
}

/// An age error (the `parcrypt::age` calls), its message after `prefix` (which names the
/// argument a malformed key came from; the library's messages never quote a key).
pub fn age(error: AgeError, prefix: &str) -> PyErr {
    let reason = format!("{prefix}{error}");
    match error {
        // No identity opened the file, its header's MAC or its payload did not authenticate.
        AgeError::NoMatch(_) | AgeError::HeaderMac | AgeError::Payload(_) => {
            InvalidTag::new_err(reason)
        }
        AgeError::Key(_) | AgeError::Recipients(_) => PyValueError::new_err(reason),
        AgeError::Io(error) => io(error),
        _ => Error::new_err(reason),
    }
}

/// Any error of the facade (`parcrypt::Error`), as its inner error's exception.
pub fn any(error: parcrypt::Error) -> PyErr {
    match error {
        parcrypt::Error::File(error) => format(error),
        parcrypt::Error::Secret(error) => format(FormatError::Secret(error)),
        parcrypt::Error::Age(error) => age(error, ""),
        parcrypt::Error::Cipher(error) => job(error),
        parcrypt::Error::Engine(error) => engine(error),
        parcrypt::Error::Io(error) => io(error),
        other => Error::new_err(other.to_string()),
    }
}

/// An I/O error from a reader or writer: the format crate's and the age crate's errors
/// travel inside `io::Error`, and come back out as what they are; others become the
/// `OSError` subclass of their kind.
pub fn io(error: std::io::Error) -> PyErr {
    if error.get_ref().is_some_and(|inner| inner.is::<AgeError>()) {
        return match error.into_inner().map(|inner| inner.downcast::<AgeError>()) {
            Some(Ok(inner)) => age(*inner, ""),
            _ => Error::new_err("an I/O error without its reason"),
        };
    }
    if error
        .get_ref()
        .is_some_and(|inner| inner.is::<FormatError>())
    {
        return match error
            .into_inner()
            .map(|inner| inner.downcast::<FormatError>())
        {
            Some(Ok(inner)) => format(*inner),
            _ => Error::new_err("an I/O error without its reason"),
        };
    }
    let reason = error.to_string();
    match error.kind() {
        ErrorKind::NotFound => PyFileNotFoundError::new_err(reason),
        ErrorKind::PermissionDenied => PyPermissionError::new_err(reason),
        ErrorKind::AlreadyExists => PyFileExistsError::new_err(reason),
        _ => PyOSError::new_err(reason),
    }
}
