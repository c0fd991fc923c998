//! Identities for files to public-key recipients, as `parcrypt keygen` makes them: a new
//! identity written to a private file or handed back as text, its recipient with it, and
//! the one function that frees (and wipes) the strings this library returns.

use std::ffi::{c_char, CString};
use std::ptr::null_mut;

use zeroize::{Zeroize, Zeroizing};

use crate::error::{Failure, ParcryptError, ParcryptStatus};
use crate::{entry, write_if_wanted};

/// `parcrypt_keygen` flag: a post-quantum hybrid identity (ML-KEM-768 + X25519,
/// `AGE-SECRET-KEY-PQ-1...`, recipient `age1pq1...`) instead of an X25519 one.
pub const PARCRYPT_KEYGEN_POST_QUANTUM: u32 = 1;

/// Makes a new identity, as `parcrypt keygen [-o PATH] [--pq]` does, through the library
/// (`parcrypt::age`). `flags`: 0 or `PARCRYPT_KEYGEN_POST_QUANTUM`.
///
/// With a `path`, the identity file is written there (age-keygen's layout: `# created`,
/// `# public key`, the secret key) with mode 0600; an existing file is never replaced
/// (`PARCRYPT_STATUS_IO`, and the file is left as it was), and `*identity_text` (when
/// `identity_text` is not NULL) is set to NULL: the secret exists only in the file.
/// Without a path (NULL), `*identity_text` (required) gets that file's text, to store as
/// the caller sees fit; it is a secret: free it with `parcrypt_string_free`, which wipes it.
///
/// `*recipient` (when `recipient` is not NULL) gets the public key, `age1...` or
/// `age1pq1...`, NUL-terminated, to give to whoever encrypts (`PARCRYPT_FILE_RECIPIENTS`);
/// free it with `parcrypt_string_free`. On failure both out-parameters are NULL.
///
/// # Safety
/// `path` is NULL or NUL-terminated; `identity_text`, `recipient` and `error` are NULL or
/// valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_keygen(
    flags: u32,
    path: *const c_char,
    identity_text: *mut *mut c_char,
    recipient: *mut *mut c_char,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    // SAFETY: both are NULL or writable (the contract above).
    unsafe {
        write_if_wanted(identity_text, null_mut());
        write_if_wanted(recipient, null_mut());
    }
    let body = || {
        if flags & !PARCRYPT_KEYGEN_POST_QUANTUM != 0 {
            return Err(Failure::invalid(format!("unknown keygen flags {flags:#x}")));
        }
        let post_quantum = flags & PARCRYPT_KEYGEN_POST_QUANTUM != 0;
        let (text, public) = if path.is_null() {
            if identity_text.is_null() {
                return Err(Failure::null(
                    "identity_text (without a path the identity is returned there)",
                ));
            }
            let (text, public) = parcrypt::age::generate_identity_file(post_quantum);
            (Some(text), public)
        } else {
            // SAFETY: non-NULL and NUL-terminated (the contract above).
            let path = unsafe { crate::path(path, "path") }?;
            (
                None,
                parcrypt::age::write_identity_file(&path, post_quantum)?,
            )
        };
        let public = owned_string(public.to_string().as_bytes())?;
        let text = match text.map(|text| owned_string(text.as_bytes())).transpose() {
            Ok(text) => text,
            Err(failure) => {
                // SAFETY: made just above, given to nobody.
                unsafe { parcrypt_string_free(public) };
                return Err(failure);
            }
        };
        // SAFETY: both are NULL or writable (the contract above); each string goes to one
        // out-parameter, or is freed here when the caller did not want it.
        unsafe {
            if let Some(text) = text {
                identity_text.write(text);
            }
            if recipient.is_null() {
                parcrypt_string_free(public);
            } else {
                recipient.write(public);
            }
        }
        Ok(())
    };
    // SAFETY: `error` is NULL or writable (the contract above).
    unsafe { entry(error, body) }
}

/// Reads the identity file at `path` through the library, for `PARCRYPT_FILE_IDENTITIES`:
/// `*identity_text` gets its text (at most 16 MiB, every identity in it parsed; a secret:
/// free it with `parcrypt_string_free`, which wipes it). A file that users other than its
/// owner can read gets a warning through the warning callback (as `parcrypt decrypt -i`
/// prints one), and is read all the same. A file that cannot be read is
/// `PARCRYPT_STATUS_IO`, a key in it that does not parse `PARCRYPT_STATUS_BAD_KEY` (the
/// message names the line, never its content); `*identity_text` is then NULL.
///
/// # Safety
/// `path` is NULL or NUL-terminated; `identity_text` and `error` are NULL or valid for
/// writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_read_identity_file(
    path: *const c_char,
    identity_text: *mut *mut c_char,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    // SAFETY: NULL or writable (the contract above).
    unsafe { write_if_wanted(identity_text, null_mut()) };
    let body = || {
        if identity_text.is_null() {
            return Err(Failure::null("identity_text"));
        }
        // SAFETY: NULL or NUL-terminated (the contract above); NULL is refused there.
        let path = unsafe { crate::path(path, "path") }?;
        if let Some(warning) = parcrypt::age::identity_file_warning(&path) {
            crate::error::warn(&warning);
        }
        let text = parcrypt::age::read_identity_file_text(&path)?;
        let owned = owned_string(&text)?;
        // SAFETY: not NULL (checked above) and writable (the contract above).
        unsafe { identity_text.write(owned) };
        Ok(())
    };
    // SAFETY: `error` is NULL or writable (the contract above).
    unsafe { entry(error, body) }
}

/// A NUL-terminated copy of `text` that the caller frees with [`parcrypt_string_free`]. Its
/// memory is allocated once at its final size, so that no copy of a secret is left behind
/// by a reallocation.
fn owned_string(text: &[u8]) -> Result<*mut c_char, Failure> {
    let mut bytes = Zeroizing::new(vec![0u8; text.len() + 1]);
    bytes[..text.len()].copy_from_slice(text);
    // `vec!` allocates exactly its length: the conversions below keep that allocation.
    let owned = CString::from_vec_with_nul(std::mem::take(&mut *bytes)).map_err(|refused| {
        refused.into_bytes().zeroize();
        Failure::new(ParcryptStatus::Internal, "a key's text holds a NUL byte")
    })?;
    Ok(owned.into_raw())
}

/// Frees a string this library returned (`parcrypt_keygen`'s identity text and recipient),
/// wiping its bytes first; NULL is ignored.
///
/// # Safety
/// `text` is NULL or a string returned by this library, not freed before, and not used
/// after this call.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_string_free(text: *mut c_char) {
    if text.is_null() {
        return;
    }
    // SAFETY: it came from `CString::into_raw` (`owned_string`) and is freed once, its NUL
    // unmoved (the contract above).
    let owned = unsafe { CString::from_raw(text) };
    let mut bytes = owned.into_bytes_with_nul();
    bytes.zeroize();
}
