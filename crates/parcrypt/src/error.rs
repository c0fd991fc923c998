//! The one error type of the facade, and the detailed errors it wraps.
//!
//! Every fallible call in this crate returns a result whose error converts into [`Error`]
//! with `?`, so a program can use `parcrypt::Result<T>` throughout. A program that needs
//! to tell failures apart matches on the variants, whose payloads are the detailed error
//! types re-exported here.

use std::fmt;
use std::io;

pub use parcrypt_age::Error as AgeError;
pub use parcrypt_engine::{EngineError, JobError};
pub use parcrypt_format::{FormatError, SecretError};
pub use parcrypt_gpu::GpuError;
pub use parcrypt_modes::gcm::GcmError;
pub use parcrypt_modes::SpecError;

/// What went wrong in a parcrypt call.
///
/// The message (`Display`) is the one-line sentence of the inner error, written for a
/// person; the variant says which part of the library refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An engine could not be built (threads, device, backend not in this build).
    Engine(EngineError),
    /// A cipher or AEAD call refused its arguments or failed authentication.
    Cipher(JobError),
    /// A parcrypt or Cobblestone file could not be written or opened (wrong key, damaged
    /// or truncated file, destination exists, input and output are one file...).
    File(FormatError),
    /// A key or passphrase could not be read or was refused.
    Secret(SecretError),
    /// A cipher name such as `aes-256-gcm` could not be parsed.
    Suite(SpecError),
    /// A GPU could not be listed, opened or run.
    Gpu(GpuError),
    /// An age file could not be written or opened, or an age key was refused (see
    /// [`crate::age`]).
    Age(AgeError),
    /// Reading or writing failed outside the calls above.
    Io(io::Error),
}

impl Error {
    /// Whether the data failed authentication or the secret is wrong: a tag or key
    /// commitment mismatch, no identity for a file's recipients, a header MAC mismatch, a
    /// damaged or truncated file. Nothing was released for it.
    pub fn is_authentication_failure(&self) -> bool {
        match self {
            Error::Cipher(error) => job_error_is_tag_mismatch(error),
            Error::File(error) => matches!(
                error,
                FormatError::WrongKey
                    | FormatError::NoMatchingIdentity(_)
                    | FormatError::HeaderMac
                    | FormatError::HeaderMismatch
                    | FormatError::DamagedStanza(_)
                    | FormatError::DamagedChunk { .. }
                    | FormatError::DamagedHeader(_)
                    | FormatError::TruncatedHeader(_)
                    | FormatError::TruncatedAfter { .. }
                    | FormatError::TruncatedChunk { .. }
            ),
            Error::Age(error) => matches!(
                error,
                AgeError::NoMatch(_) | AgeError::HeaderMac | AgeError::Payload(_)
            ),
            _ => false,
        }
    }
}

fn job_error_is_tag_mismatch(error: &JobError) -> bool {
    matches!(error, JobError::Gcm(GcmError::TagMismatch))
}

impl fmt::Display for Error {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Engine(error) => error.fmt(formatter),
            Error::Cipher(error) => error.fmt(formatter),
            Error::File(error) => error.fmt(formatter),
            Error::Secret(error) => error.fmt(formatter),
            Error::Suite(error) => error.fmt(formatter),
            Error::Gpu(error) => error.fmt(formatter),
            Error::Age(error) => error.fmt(formatter),
            Error::Io(error) => error.fmt(formatter),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The inner error is this error's whole message, so its own cause is the source.
        match self {
            Error::Engine(error) => error.source(),
            Error::Cipher(error) => error.source(),
            Error::File(error) => error.source(),
            Error::Secret(error) => error.source(),
            Error::Suite(error) => error.source(),
            Error::Gpu(error) => error.source(),
            Error::Age(error) => error.source(),
            Error::Io(error) => error.source(),
        }
    }
}

macro_rules! from_inner {
    ($($inner:ty => $variant:ident),* $(,)?) => {
        $(
            impl From<$inner> for Error {
                fn from(error: $inner) -> Self {
                    Error::$variant(error)
                }
            }
        )*
    };
}

from_inner! {
    EngineError => Engine,
    JobError => Cipher,
    FormatError => File,
    SecretError => Secret,
    SpecError => Suite,
    GpuError => Gpu,
    AgeError => Age,
    io::Error => Io,
}

/// A result whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
