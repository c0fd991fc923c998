//! Status codes, the error object, and the mapping of the library's errors onto them.

use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use parcrypt_engine::crypter::JobError;
use parcrypt_engine::EngineError;
use parcrypt_format::FormatError;

/// What a call did. Every fallible function returns one (as `int32_t`); 0 is success.
/// New codes may be added at the end; callers treat an unknown non-zero code as failure.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParcryptStatus {
    /// Success.
    Ok = 0,
    /// A required pointer (a handle, an out-parameter, a byte string with a non-zero
    /// length) was NULL.
    NullPointer = 1,
    /// An argument is not acceptable: a length too large, overlapping buffers, a name that
    /// is not UTF-8, unpadded input that is not whole blocks, an unknown flag.
    InvalidArgument = 2,
    /// The cipher or backend name is not one parcrypt knows.
    UnknownName = 3,
    /// The key (or passphrase) is not one the cipher or file takes: its length, or a key
    /// given where the file needs a passphrase (or the reverse).
    BadKey = 4,
    /// The IV is missing, has the wrong length, or was given to ECB.
    BadIv = 5,
    /// The output buffer is too small; `*output_length` says how many bytes it needs.
    OutputTooSmall = 6,
    /// Authentication failed: a GCM tag, or a file chunk, did not match (wrong key, IV or
    /// AAD, or modified, truncated or extended data). No plaintext was released.
    AuthenticationFailed = 7,
    /// Decrypted padding is not PKCS#7: wrong key or IV, or not this cipher's ciphertext.
    BadPadding = 8,
    /// The key or passphrase does not open this file (its key commitment did not match).
    WrongKey = 9,
    /// Not a parcrypt file, a damaged or truncated header, a newer format version, or key
    /// derivation costs over the budget.
    BadFormat = 10,
    /// Reading or writing a file failed, or the output is refused (exists without
    /// replace, is a folder, its folder is missing).
    Io = 11,
    /// The backend failed or is not available (no GPU, bad thread count).
    Backend = 12,
    /// The handle cannot do this now: a file encryptor already finished, a handle whose
    /// earlier call failed inside the library, a cipher whose creation IV has encrypted its
    /// one message, or an AEAD key that has sealed 2^32 messages.
    State = 13,
    /// An internal error (a panic caught at the boundary). Please report it.
    Internal = 14,
}

impl ParcryptStatus {
    /// The code's name, NUL-terminated.
    fn name(self) -> &'static str {
        match self {
            ParcryptStatus::Ok => "PARCRYPT_STATUS_OK\0",
            ParcryptStatus::NullPointer => "PARCRYPT_STATUS_NULL_POINTER\0",
            ParcryptStatus::InvalidArgument => "PARCRYPT_STATUS_INVALID_ARGUMENT\0",
            ParcryptStatus::UnknownName => "PARCRYPT_STATUS_UNKNOWN_NAME\0",
            ParcryptStatus::BadKey => "PARCRYPT_STATUS_BAD_KEY\0",
            ParcryptStatus::BadIv => "PARCRYPT_STATUS_BAD_IV\0",
            ParcryptStatus::OutputTooSmall => "PARCRYPT_STATUS_OUTPUT_TOO_SMALL\0",
            ParcryptStatus::AuthenticationFailed => "PARCRYPT_STATUS_AUTHENTICATION_FAILED\0",
            ParcryptStatus::BadPadding => "PARCRYPT_STATUS_BAD_PADDING\0",
            ParcryptStatus::WrongKey => "PARCRYPT_STATUS_WRONG_KEY\0",
            ParcryptStatus::BadFormat => "PARCRYPT_STATUS_BAD_FORMAT\0",
            ParcryptStatus::Io => "PARCRYPT_STATUS_IO\0",
            ParcryptStatus::Backend => "PARCRYPT_STATUS_BACKEND\0",
            ParcryptStatus::State => "PARCRYPT_STATUS_STATE\0",
            ParcryptStatus::Internal => "PARCRYPT_STATUS_INTERNAL\0",
        }
    }
}

/// A failed call's status and one-line message. Made by the library, read with
/// `parcrypt_error_status` and `parcrypt_error_message`, freed with `parcrypt_error_free`.
/// Immutable: any thread may read it.
pub struct ParcryptError {
    status: ParcryptStatus,
    message: CString,
}

/// Why a call failed, inside the crate.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) status: ParcryptStatus,
    message: String,
    /// For [`ParcryptStatus::OutputTooSmall`]: the bytes the output needs.
    pub(crate) needed: Option<usize>,
}

impl Failure {
    pub(crate) fn new(status: ParcryptStatus, message: impl Into<String>) -> Self {
        Failure {
            status,
            message: message.into(),
            needed: None,
        }
    }

    /// The same failure, saying the output needs `needed` bytes.
    pub(crate) fn needing(mut self, needed: usize) -> Self {
        self.needed = Some(needed);
        self
    }

    pub(crate) fn null(what: &str) -> Self {
        Failure::new(ParcryptStatus::NullPointer, format!("{what} is NULL"))
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Failure::new(ParcryptStatus::InvalidArgument, message)
    }
}

impl From<Failure> for ParcryptError {
    fn from(failure: Failure) -> Self {
        // One line, and no NUL inside (a C string ends at the first).
        let line: String = failure
            .message
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let line = line.trim();
        let line = if line.is_empty() { "failed" } else { line };
        ParcryptError {
            status: failure.status,
            message: CString::new(line).unwrap_or_default(),
        }
    }
}

impl From<EngineError> for Failure {
    fn from(error: EngineError) -> Self {
        let status = match error {
            EngineError::UnknownBackend(_) => ParcryptStatus::UnknownName,
            _ => ParcryptStatus::Backend,
        };
        Failure::new(status, error.to_string())
    }
}

impl From<JobError> for Failure {
    fn from(error: JobError) -> Self {
        use parcrypt_engine::crypter::JobError as E;
        let status = match &error {
            E::Key(_) => ParcryptStatus::BadKey,
            E::IvLength { .. } | E::IvMissing(_) | E::IvNotUsed(_) => ParcryptStatus::BadIv,
            E::AadNotUsed | E::PartialBlock { .. } => ParcryptStatus::InvalidArgument,
            E::BadPadding(_) => ParcryptStatus::BadPadding,
            E::MissingTag(_) => ParcryptStatus::AuthenticationFailed,
            E::Gcm(gcm) => match gcm {
                parcrypt_modes::gcm::GcmError::EmptyIv => ParcryptStatus::BadIv,
                parcrypt_modes::gcm::GcmError::TagMismatch => ParcryptStatus::AuthenticationFailed,
                _ => ParcryptStatus::InvalidArgument,
            },
            E::Gpu(_) => ParcryptStatus::Backend,
            E::OutputTooSmall { .. } => ParcryptStatus::OutputTooSmall,
            E::Segment(_) => ParcryptStatus::InvalidArgument,
            E::ShortGcmIv { .. } => ParcryptStatus::BadIv,
            // The cipher's IV has encrypted its one message: the handle cannot do that again.
            E::IvSpent(_) | E::NonceBudget => ParcryptStatus::State,
            E::BirthdayBound { .. } | E::AeadSuite(_) => ParcryptStatus::InvalidArgument,
            E::ShortSealed(_) => ParcryptStatus::AuthenticationFailed,
            E::Random(_) => ParcryptStatus::Internal,
        };
        Failure::new(status, error.to_string())
    }
}

impl From<FormatError> for Failure {
    fn from(error: FormatError) -> Self {
        use FormatError as E;
        let status = match &error {
            E::NotParcrypt
            | E::UnsupportedVersion(_)
            | E::DamagedHeader(_)
            | E::TruncatedHeader(_)
            | E::KdfBudget { .. }
            | E::KdfLimits(_)
            | E::TooLong => ParcryptStatus::BadFormat,
            E::KeyLength(_)
            | E::KeySuiteMismatch { .. }
            | E::NeedsPassphrase
            | E::NeedsKey
            | E::EmptyPassphrase
            | E::Secret(_) => ParcryptStatus::BadKey,
            E::WrongKey => ParcryptStatus::WrongKey,
            E::DamagedChunk { .. } | E::TruncatedAfter { .. } | E::TruncatedChunk { .. } => {
                ParcryptStatus::AuthenticationFailed
            }
            E::Range(_) => ParcryptStatus::InvalidArgument,
            E::Backend(_) => ParcryptStatus::Backend,
            E::Kdf(_) | E::Random(_) => ParcryptStatus::Internal,
            _ => ParcryptStatus::Io,
        };
        Failure::new(status, error.to_string())
    }
}

impl From<std::io::Error> for Failure {
    /// An I/O error from a `Read`/`Write` over a message: a [`FormatError`] inside is
    /// mapped as one, anything else is [`ParcryptStatus::Io`].
    fn from(error: std::io::Error) -> Self {
        if error
            .get_ref()
            .is_some_and(|inner| inner.downcast_ref::<FormatError>().is_some())
        {
            let inner = error.into_inner().expect("checked above");
            if let Ok(format) = inner.downcast::<FormatError>() {
                return Failure::from(*format);
            }
            return Failure::new(ParcryptStatus::Io, "I/O error");
        }
        Failure::new(ParcryptStatus::Io, error.to_string())
    }
}

/// The status of an error object (`PARCRYPT_STATUS_INTERNAL` for NULL).
///
/// # Safety
/// `error` is NULL or a live error object.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_error_status(error: *const ParcryptError) -> ParcryptStatus {
    // SAFETY: a non-NULL `error` is a live error object (the contract above).
    match unsafe { error.as_ref() } {
        Some(error) => error.status,
        None => ParcryptStatus::Internal,
    }
}

/// The error's message: one line, NUL-terminated, never empty, valid until the object is
/// freed. A static message for NULL.
///
/// # Safety
/// `error` is NULL or a live error object.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_error_message(error: *const ParcryptError) -> *const c_char {
    // SAFETY: a non-NULL `error` is a live error object (the contract above).
    match unsafe { error.as_ref() } {
        Some(error) => error.message.as_ptr(),
        None => c"no error object (NULL)".as_ptr(),
    }
}

/// Frees an error object (NULL is ignored).
///
/// # Safety
/// `error` is NULL or an error object not freed before.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_error_free(error: *mut ParcryptError) {
    if !error.is_null() {
        // SAFETY: it came from `Box::into_raw` and is freed once (the contract above).
        let owned = unsafe { Box::from_raw(error) };
        let _ = catch_unwind(AssertUnwindSafe(move || drop(owned)));
    }
}

/// A status code's name (`"PARCRYPT_STATUS_BAD_KEY"`), NUL-terminated and living forever;
/// `"PARCRYPT_STATUS_UNKNOWN_STATUS"` for a code this library does not have.
#[no_mangle]
pub extern "C" fn parcrypt_status_name(status: i32) -> *const c_char {
    const ALL: [ParcryptStatus; 15] = [
        ParcryptStatus::Ok,
        ParcryptStatus::NullPointer,
        ParcryptStatus::InvalidArgument,
        ParcryptStatus::UnknownName,
        ParcryptStatus::BadKey,
        ParcryptStatus::BadIv,
        ParcryptStatus::OutputTooSmall,
        ParcryptStatus::AuthenticationFailed,
        ParcryptStatus::BadPadding,
        ParcryptStatus::WrongKey,
        ParcryptStatus::BadFormat,
        ParcryptStatus::Io,
        ParcryptStatus::Backend,
        ParcryptStatus::State,
        ParcryptStatus::Internal,
    ];
    let name = ALL
        .iter()
        .find(|known| **known as i32 == status)
        .map_or("PARCRYPT_STATUS_UNKNOWN_STATUS\0", |known| known.name());
    name.as_ptr().cast()
}

impl From<parcrypt_modes::SpecError> for Failure {
    fn from(error: parcrypt_modes::SpecError) -> Self {
        Failure::new(ParcryptStatus::UnknownName, error.to_string())
    }
}
