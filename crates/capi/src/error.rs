//! Status codes, the error object, the mapping of the library's errors onto them, and the
//! callback that receives the library's warnings.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CString};
use std::fmt::Display;
use std::sync::{PoisonError, RwLock};

use parcrypt::errors::EngineError;
use parcrypt::errors::FormatError;
use parcrypt::errors::JobError;

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
    /// is not UTF-8, unpadded input that is not whole blocks, an unknown flag, flags that
    /// exclude each other (two kinds of secret, recipients to decrypt, identities to
    /// encrypt), recipients a file cannot be written to.
    InvalidArgument = 2,
    /// The cipher or backend name is not one parcrypt knows.
    UnknownName = 3,
    /// The key (or passphrase) is not one the cipher or file takes: its length, or a key
    /// given where the file needs a passphrase (or the reverse), or either given for a file
    /// encrypted to public-key recipients (which needs an identity).
    BadKey = 4,
    /// The IV is missing, has the wrong length, or was given to ECB.
    BadIv = 5,
    /// The output buffer is too small; `*output_length` says how many bytes it needs.
    OutputTooSmall = 6,
    /// Authentication failed: a GCM tag, a file chunk, or the MAC of a file's recipient
    /// header did not match (wrong key, IV or AAD, or modified, truncated or extended data).
    /// No plaintext was released.
    AuthenticationFailed = 7,
    /// Decrypted padding is not PKCS#7: wrong key or IV, or not this cipher's ciphertext.
    BadPadding = 8,
    /// The key, passphrase or identity does not open this file: its key commitment did not
    /// match (a wrong key, passphrase or context), or no identity opens any of its
    /// recipients.
    WrongKey = 9,
    /// Not a parcrypt file, a damaged or truncated header (a malformed recipient stanza
    /// included), a newer format version, or key derivation costs over the budget.
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

/// `text` as one line for C: control characters (a NUL among them: a C string ends at the
/// first) become spaces, the ends are trimmed, and `empty` stands in for nothing left.
fn one_line(text: &str, empty: &str) -> CString {
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let line = line.trim();
    CString::new(if line.is_empty() { empty } else { line }).unwrap_or_default()
}

impl From<Failure> for ParcryptError {
    fn from(failure: Failure) -> Self {
        ParcryptError {
            status: failure.status,
            message: one_line(&failure.message, "failed"),
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
        use parcrypt::errors::JobError as E;
        let status = match &error {
            E::Key(_) => ParcryptStatus::BadKey,
            E::IvLength { .. } | E::IvMissing(_) | E::IvNotUsed(_) => ParcryptStatus::BadIv,
            E::AadNotUsed | E::PartialBlock { .. } => ParcryptStatus::InvalidArgument,
            E::BadPadding(_) => ParcryptStatus::BadPadding,
            E::MissingTag(_) => ParcryptStatus::AuthenticationFailed,
            E::Gcm(gcm) => match gcm {
                parcrypt::errors::GcmError::EmptyIv => ParcryptStatus::BadIv,
                parcrypt::errors::GcmError::TagMismatch => ParcryptStatus::AuthenticationFailed,
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
            | E::DamagedStanza(_)
            | E::TruncatedHeader(_)
            | E::KdfBudget { .. }
            | E::KdfLimits(_)
            | E::TooLong => ParcryptStatus::BadFormat,
            E::KeyLength(_)
            | E::KeySuiteMismatch { .. }
            | E::NeedsPassphrase
            | E::NeedsKey
            | E::NeedsIdentity
            | E::EmptyPassphrase
            | E::Secret(_) => ParcryptStatus::BadKey,
            // A commitment that fails after a recipient header opened (a wrong context, or a
            // header moved onto another message) is what a wrong context is for version 1; no
            // identity for any recipient is a wrong secret.
            E::WrongKey | E::HeaderMismatch | E::NoMatchingIdentity(_) => ParcryptStatus::WrongKey,
            E::DamagedChunk { .. }
            | E::TruncatedAfter { .. }
            | E::TruncatedChunk { .. }
            | E::HeaderMac => ParcryptStatus::AuthenticationFailed,
            E::Range(_) | E::Recipients(_) => ParcryptStatus::InvalidArgument,
            E::Backend(_) => ParcryptStatus::Backend,
            E::Kdf(_) | E::Random(_) => ParcryptStatus::Internal,
            _ => ParcryptStatus::Io,
        };
        Failure::new(status, error.to_string())
    }
}

impl From<parcrypt::errors::AgeError> for Failure {
    /// A recipient or identity that does not parse (a malformed key, an empty file) is a
    /// bad key, recipients that cannot share a file a bad argument; the messages name the
    /// line, never its content.
    fn from(error: parcrypt::errors::AgeError) -> Self {
        use parcrypt::errors::AgeError as E;
        let status = match &error {
            E::Key(_) => ParcryptStatus::BadKey,
            E::Recipients(_) => ParcryptStatus::InvalidArgument,
            E::NoMatch(_) => ParcryptStatus::WrongKey,
            E::HeaderMac | E::Payload(_) => ParcryptStatus::AuthenticationFailed,
            E::Header(_) | E::Armor(_) | E::WorkFactor { .. } => ParcryptStatus::BadFormat,
            E::Io(_) => ParcryptStatus::Io,
            _ => ParcryptStatus::InvalidArgument,
        };
        Failure::new(status, error.to_string())
    }
}

impl From<parcrypt::Error> for Failure {
    /// The facade's error: each variant as the detailed error it wraps.
    fn from(error: parcrypt::Error) -> Self {
        match error {
            parcrypt::Error::Engine(error) => error.into(),
            parcrypt::Error::Cipher(error) => error.into(),
            parcrypt::Error::File(error) => error.into(),
            parcrypt::Error::Suite(error) => error.into(),
            parcrypt::Error::Age(error) => error.into(),
            parcrypt::Error::Io(error) => error.into(),
            parcrypt::Error::Secret(error) => {
                Failure::new(ParcryptStatus::BadKey, error.to_string())
            }
            other => Failure::new(ParcryptStatus::Backend, other.to_string()),
        }
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
    // SAFETY: the contract above is `free`'s (`report` makes error objects as `make` does
    // handles: with `Box::into_raw`).
    unsafe { crate::free(error) }
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

impl From<parcrypt::errors::SpecError> for Failure {
    fn from(error: parcrypt::errors::SpecError) -> Self {
        Failure::new(ParcryptStatus::UnknownName, error.to_string())
    }
}

/// Receives the library's warnings: what makes a call's result weaker than it should be
/// without stopping it (a passphrase shorter than 8 bytes; `parcrypt encrypt` prints the
/// same lines). `context` is the pointer given to `parcrypt_set_warning_callback`;
/// `message` is one NUL-terminated line, valid only until the callback returns.
pub type ParcryptWarningCallback =
    Option<unsafe extern "C" fn(context: *mut c_void, message: *const c_char)>;

/// The callback set, with its context.
struct WarningSink {
    callback: unsafe extern "C" fn(*mut c_void, *const c_char),
    context: *mut c_void,
}

// SAFETY: the context is only ever handed back to the callback, and the caller of
// `parcrypt_set_warning_callback` promised that the callback may run on any thread, on
// several at once, with that context.
unsafe impl Send for WarningSink {}
// SAFETY: as for Send; the sink itself is never changed, only replaced under the lock.
unsafe impl Sync for WarningSink {}

/// The callback, read-locked while it runs: setting a new one waits for every running call
/// of the old one, so that once `parcrypt_set_warning_callback` returns, the old context is
/// never used again and may be freed.
static WARNING_SINK: RwLock<Option<WarningSink>> = RwLock::new(None);

thread_local! {
    /// Whether this thread is inside the warning callback: a warning raised by a parcrypt
    /// call the callback makes is dropped (a second read lock while a writer waits would
    /// deadlock), and setting the callback from inside it is refused.
    static IN_WARNING_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// Hands the engine's warnings about running `suite` on it (a named GPU backend whose table
/// AES is not constant time) to the warning callback; each is given once per process.
pub(crate) fn warn_engine(engine: &parcrypt::Engine, suite: parcrypt::CipherSpec) {
    for warning in engine.take_warnings(suite) {
        warn(&warning);
    }
}

/// Hands `warning` to the warning callback, when one is set, on this thread.
pub(crate) fn warn(warning: &dyn Display) {
    if IN_WARNING_CALLBACK.with(Cell::get) {
        return;
    }
    let sink = WARNING_SINK.read().unwrap_or_else(PoisonError::into_inner);
    let Some(sink) = sink.as_ref() else {
        return;
    };
    let message = one_line(&warning.to_string(), "warning");
    IN_WARNING_CALLBACK.with(|inside| inside.set(true));
    // SAFETY: the callback and its context are what the caller set, with the contract of
    // `parcrypt_set_warning_callback` (callable from any thread with that context); the
    // message is a NUL-terminated line that lives until after the call. The read lock
    // keeps the sink from being replaced while it runs.
    unsafe { (sink.callback)(sink.context, message.as_ptr()) };
    IN_WARNING_CALLBACK.with(|inside| inside.set(false));
}

/// Sets the function that receives the library's warnings, for the whole process; NULL
/// (the default) drops them. A warning reaches it on the thread of the call that warns,
/// before that call returns: `parcrypt_encrypt_file` and `parcrypt_file_encryptor_new` warn
/// about a passphrase shorter than 8 bytes.
///
/// Threads: it may be set at any time from any thread; warnings from calls on several
/// threads may reach the callback at once, so it must be thread-safe, and must not unwind
/// (no C++ exception, no `longjmp` out of it). Once this returns, the previous callback is
/// not running and is never called again: its context may be freed. From inside the
/// callback this is refused (`PARCRYPT_STATUS_STATE`: it would wait for itself), and
/// warnings of parcrypt calls the callback makes are dropped.
///
/// # Safety
/// `callback` is NULL or a function that may be called as described above, with `context`,
/// until it is replaced; `error` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_set_warning_callback(
    callback: ParcryptWarningCallback,
    context: *mut c_void,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let outcome = crate::guard(|| {
        if IN_WARNING_CALLBACK.with(Cell::get) {
            return Err(Failure::new(
                ParcryptStatus::State,
                "the warning callback cannot be set from inside the warning callback",
            ));
        }
        let sink = callback.map(|callback| WarningSink { callback, context });
        *WARNING_SINK.write().unwrap_or_else(PoisonError::into_inner) = sink;
        Ok(())
    });
    // SAFETY: `error` is NULL or writable (the contract above).
    unsafe { crate::report(error, outcome) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;
    use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

    static CALLS: AtomicUsize = AtomicUsize::new(0);
    static NESTED_STATUS: AtomicI32 = AtomicI32::new(-1);

    /// Counts the calls that bring this test's line and context, and tries to replace itself
    /// (which must be refused) and to warn again (which must be dropped, not deadlock). It
    /// asserts nothing itself: a panic cannot leave an `extern "C"` function.
    unsafe extern "C" fn reentering(context: *mut c_void, message: *const c_char) {
        // SAFETY: the library passes a NUL-terminated line valid during this call.
        let line = unsafe { CStr::from_ptr(message) };
        if context as usize != 0x5eed || line != c"one line: two" {
            return;
        }
        CALLS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: NULL callback and error pointers are allowed.
        let status = unsafe {
            parcrypt_set_warning_callback(None, std::ptr::null_mut(), std::ptr::null_mut())
        };
        NESTED_STATUS.store(status as i32, Ordering::SeqCst);
        warn(&"one line:\ntwo");
    }

    #[test]
    fn the_callback_gets_one_line_and_cannot_replace_itself() {
        // SAFETY: `reentering` may run on any thread with this context (it only reads it).
        let status = unsafe {
            parcrypt_set_warning_callback(
                Some(reentering),
                0x5eed as *mut c_void,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(status, ParcryptStatus::Ok);
        warn(&"one line:\ntwo");
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
        assert_eq!(
            NESTED_STATUS.load(Ordering::SeqCst),
            ParcryptStatus::State as i32
        );
        // SAFETY: NULL unsets it.
        let status = unsafe {
            parcrypt_set_warning_callback(None, std::ptr::null_mut(), std::ptr::null_mut())
        };
        assert_eq!(status, ParcryptStatus::Ok);
        warn(&"nobody hears this");
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
    }
}
