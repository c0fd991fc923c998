//! AEAD: AES-GCM messages sealed under a fresh random nonce each (the engine's `Aead`).

use std::ffi::c_char;

use parcrypt::hazmat::Direction;
use parcrypt::{Aead, CipherSpec};

use crate::error::{Failure, ParcryptError, ParcryptStatus};
use crate::{
    entry, free, make, out_pointer, required_str, sized, suite_and_key, Handle, Message,
    ParcryptEngine,
};

/// The bytes of the random nonce at the front of a sealed message.
pub const PARCRYPT_AEAD_NONCE_BYTES: usize = 12;

/// The bytes sealing adds to a message: the 12-byte nonce in front and the 16-byte tag at
/// the end. A sealed message shorter than this is refused.
pub const PARCRYPT_AEAD_OVERHEAD: usize = 28;

const _: () = assert!(PARCRYPT_AEAD_NONCE_BYTES == parcrypt::NONCE_BYTES);
const _: () = assert!(PARCRYPT_AEAD_OVERHEAD == parcrypt::SEAL_OVERHEAD);

/// AES-GCM under one key (`aes-128-gcm`, `aes-192-gcm` or `aes-256-gcm`) on an engine,
/// every message sealed under a fresh random 96-bit nonce from the operating system: the
/// call to reach for first. A sealed message is `nonce (12) || ciphertext || tag (16)`,
/// which any AES-GCM library opens given the first 12 bytes as the nonce. One handle seals
/// at most 2^32 messages (NIST SP 800-38D's limit for random nonces; then
/// `PARCRYPT_STATUS_STATE`: make a new key). Any number of threads may use one at once.
pub struct ParcryptAead {
    aead: Aead,
}

impl Handle for ParcryptAead {
    const NAME: &'static str = "aead";
}

/// Makes an AEAD. `name`: a NUL-terminated AES-GCM suite name (`aes-256-gcm`; any other
/// suite is `PARCRYPT_STATUS_INVALID_ARGUMENT`). `key`: `key_length` bytes (16, 24 or 32,
/// as the suite says; `parcrypt_aead_generate_key` makes one), copied and wiped when the
/// handle is freed. On success `*aead` is the new handle, to free with `parcrypt_aead_free`.
///
/// # Safety
/// `engine` is NULL or a live engine; `name` is NULL or NUL-terminated; `key` is NULL or
/// readable for `key_length` bytes; `aead` and `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_aead_new(
    engine: *const ParcryptEngine,
    name: *const c_char,
    key: *const u8,
    key_length: usize,
    aead: *mut *mut ParcryptAead,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = || {
        // SAFETY: each pointer meets the contract above for the length given with it.
        let (engine, suite, key) = unsafe { suite_and_key(engine, name, key, key_length) }?;
        crate::error::warn_engine(engine, suite);
        Ok(ParcryptAead {
            aead: Aead::new(engine.clone(), suite, key)?,
        })
    };
    // SAFETY: `aead` and `error` are NULL or writable (the contract above).
    unsafe { make(aead, error, body) }
}

/// Frees an AEAD (NULL is ignored); its copy of the key is wiped.
///
/// # Safety
/// `aead` is NULL or a handle not freed before, with no other call on it running.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_aead_free(aead: *mut ParcryptAead) {
    // SAFETY: the contract above is `free`'s.
    unsafe { free(aead) }
}

/// Writes a new random key for the AES-GCM suite `name` from the operating system into
/// `key`, which holds `key_capacity` bytes; its length (16, 24 or 32) goes to
/// `*key_length` (also when the capacity is too small: `PARCRYPT_STATUS_OUTPUT_TOO_SMALL`).
/// The key is the caller's to keep secret and wipe.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `key` is NULL or writable for `key_capacity` bytes;
/// `key_length` and `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_aead_generate_key(
    name: *const c_char,
    key: *mut u8,
    key_capacity: usize,
    key_length: *mut usize,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = || {
        let out_length = out_pointer(key_length, "key_length")?;
        // SAFETY: `name` is NULL or NUL-terminated (the contract above).
        let name = unsafe { required_str(name, "cipher name") }?;
        let suite: CipherSpec = name.parse()?;
        let made = Aead::generate_key(suite)?;
        // SAFETY: `out_length` is non-NULL and writable (the contract above).
        unsafe { out_length.write(made.len()) };
        if key_capacity < made.len() {
            return Err(Failure::new(
                ParcryptStatus::OutputTooSmall,
                format!(
                    "the key buffer holds {key_capacity} bytes; {name} needs {}",
                    made.len()
                ),
            )
            .needing(made.len()));
        }
        if key.is_null() {
            return Err(Failure::null("key"));
        }
        // SAFETY: `key` is non-NULL and writable for `key_capacity` bytes, at least
        // `made.len()` (checked above).
        let out = unsafe { std::slice::from_raw_parts_mut(key, made.len()) };
        out.copy_from_slice(&made);
        Ok(())
    };
    // SAFETY: `error` is NULL or writable (the contract above).
    unsafe { entry(error, body) }
}

/// Seals the `input_length` bytes at `input` under a fresh random nonce, with `aad` as
/// additional authenticated data (NULL, 0 for none), into `output`, which holds
/// `output_capacity` bytes (at least `input_length + PARCRYPT_AEAD_OVERHEAD`) and may not
/// overlap `input`. `*output_length` gets the bytes written (`nonce || ciphertext || tag`),
/// or, with `PARCRYPT_STATUS_OUTPUT_TOO_SMALL`, the bytes needed.
///
/// # Safety
/// `aead` is NULL or live; `input` and `aad` are NULL or readable for their lengths;
/// `output` is NULL or writable for `output_capacity` bytes, not changed by others during
/// the call; `output_length` and `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_aead_seal(
    aead: *const ParcryptAead,
    input: *const u8,
    input_length: usize,
    aad: *const u8,
    aad_length: usize,
    output: *mut u8,
    output_capacity: usize,
    output_length: *mut usize,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let message = Message {
        input,
        input_length,
        aad,
        aad_length,
        output,
        output_capacity,
        output_length,
    };
    // SAFETY: the same contract as ours.
    unsafe { run(aead, Direction::Encrypt, message, error) }
}

/// Opens a sealed message (`nonce || ciphertext || tag`, `input_length` bytes at `input`)
/// made with `aad`, into `output` (at least `input_length - PARCRYPT_AEAD_OVERHEAD` bytes,
/// not overlapping `input`). A message shorter than `PARCRYPT_AEAD_OVERHEAD`, a changed
/// byte or another AAD is `PARCRYPT_STATUS_AUTHENTICATION_FAILED`, and the output then
/// holds no plaintext.
///
/// # Safety
/// As `parcrypt_aead_seal`.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_aead_open(
    aead: *const ParcryptAead,
    input: *const u8,
    input_length: usize,
    aad: *const u8,
    aad_length: usize,
    output: *mut u8,
    output_capacity: usize,
    output_length: *mut usize,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let message = Message {
        input,
        input_length,
        aad,
        aad_length,
        output,
        output_capacity,
        output_length,
    };
    // SAFETY: the same contract as ours.
    unsafe { run(aead, Direction::Decrypt, message, error) }
}

/// One message through `aead` (encryption seals, decryption opens), with the checks every
/// call makes.
///
/// # Safety
/// The contract of `parcrypt_aead_seal` for every pointer.
unsafe fn run(
    aead: *const ParcryptAead,
    direction: Direction,
    message: Message,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    // SAFETY: every pointer meets this function's contract for its length.
    let body = |ParcryptAead { aead }: &_| unsafe { run_checked(aead, direction, &message) };
    // SAFETY: `aead` is NULL or live; `output_length` and `error` are NULL or writable (this
    // function's contract).
    unsafe { sized(aead, message.output_length, "output_length", error, body) }
}

/// # Safety
/// As [`run`].
unsafe fn run_checked(
    aead: &Aead,
    direction: Direction,
    message: &Message,
) -> Result<usize, Failure> {
    // SAFETY: `input` and `aad` are NULL or readable for their lengths (this function's
    // contract).
    let (input, aad) = unsafe { (message.input()?, message.aad()?) };
    let needed = match direction {
        Direction::Encrypt => Aead::sealed_length(input.len()),
        // Too short to be sealed: refused below, by the engine, before any output.
        Direction::Decrypt => Aead::opened_length(input.len()).unwrap_or(0),
    };
    if message.output_capacity < needed {
        return Err(Failure::new(
            ParcryptStatus::OutputTooSmall,
            format!(
                "the output buffer holds {} bytes; this message needs {needed}",
                message.output_capacity
            ),
        )
        .needing(needed));
    }
    if message.overlaps() {
        return Err(Failure::invalid(
            "output overlaps input: give a separate buffer",
        ));
    }
    // SAFETY: `output` is NULL or writable for `output_capacity` bytes, untouched by others
    // during the call (the contract), and apart from `input` (checked above).
    let output = unsafe { message.output() }?;
    Ok(match direction {
        Direction::Encrypt => aead.seal_into(input, output, aad)?,
        Direction::Decrypt => aead.open_into(input, output, aad)?,
    })
}
