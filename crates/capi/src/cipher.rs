//! Ciphers: one suite and key on an engine, whole messages in memory, one call each.

use std::ffi::c_char;

use parcrypt::hazmat::Direction;

use crate::error::{Failure, ParcryptError, ParcryptStatus};
use crate::keyed::{Buffers, Keyed, Setup};
use crate::{free, make, optional_bytes, sized, suite_and_key, Handle, Message, ParcryptEngine};

/// `parcrypt_cipher_new` flag: ECB and CBC without PKCS#7 padding (messages must then be
/// whole blocks).
pub const PARCRYPT_CIPHER_NO_PADDING: u32 = 1;

/// `parcrypt_cipher_new` flag: take GCM IVs of 1 to 11 bytes, at creation and per message
/// (refused otherwise: they are hashed into the counter and collide far sooner than
/// 12-byte ones). Only to read or match data that another program made with them.
pub const PARCRYPT_CIPHER_ALLOW_SHORT_GCM_IV: u32 = 2;

/// `parcrypt_cipher_max_output_length` direction: encryption.
pub const PARCRYPT_ENCRYPT: i32 = 0;
/// `parcrypt_cipher_max_output_length` direction: decryption.
pub const PARCRYPT_DECRYPT: i32 = 1;

/// A cipher suite (`aes-128-gcm`, `bf-cbc`, `rc6-256-ctr`, ...) with its key and IV on an
/// engine, as `parcrypt raw` runs them: ECB and CBC pad with PKCS#7 (unless
/// `PARCRYPT_CIPHER_NO_PADDING`), CTR counts over the whole IV, GCM appends the 16-byte tag
/// and checks it before releasing anything. Every call is one whole message. Any number of
/// threads may call one cipher at once. To seal messages under AES-GCM without managing
/// nonces, use a `ParcryptAead` (`parcrypt_aead_new`) instead.
pub struct ParcryptCipher {
    pub(crate) keyed: Keyed,
}

impl Handle for ParcryptCipher {
    const NAME: &'static str = "cipher";
}

/// Makes a cipher. `name`: a NUL-terminated suite name. `key`: `key_length` bytes (16, 24
/// or 32 for AES and RC6; 4 to 56 for Blowfish), copied and wiped when the cipher is
/// freed. `iv`: none for ECB (NULL, 0); one block for CBC and CTR; 12 bytes or more for GCM
/// (12 is the fast path; 1 to 11 only with `PARCRYPT_CIPHER_ALLOW_SHORT_GCM_IV`). This IV
/// encrypts one message: a second `parcrypt_cipher_encrypt` (on any thread) fails with
/// `PARCRYPT_STATUS_STATE`, while decryption may use it again. An IV may also be left out
/// (NULL, 0) for a cipher used with the `_iv` calls, which take one per message. `flags`: 0,
/// or `PARCRYPT_CIPHER_NO_PADDING` and `PARCRYPT_CIPHER_ALLOW_SHORT_GCM_IV` or-ed.
///
/// # Safety
/// `engine` is NULL or a live engine; `name` is NULL or NUL-terminated; `key` and `iv` are
/// NULL or readable for their lengths; `cipher` and `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_cipher_new(
    engine: *const ParcryptEngine,
    name: *const c_char,
    key: *const u8,
    key_length: usize,
    iv: *const u8,
    iv_length: usize,
    flags: u32,
    cipher: *mut *mut ParcryptCipher,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = || {
        // SAFETY: each pointer meets the contract above for the length given with it.
        let ((engine, suite, key), iv) = unsafe {
            (
                suite_and_key(engine, name, key, key_length)?,
                optional_bytes(iv, iv_length, "iv")?,
            )
        };
        if flags & !(PARCRYPT_CIPHER_NO_PADDING | PARCRYPT_CIPHER_ALLOW_SHORT_GCM_IV) != 0 {
            return Err(Failure::invalid(format!("unknown cipher flags {flags:#x}")));
        }
        let setup = Setup {
            padding: flags & PARCRYPT_CIPHER_NO_PADDING == 0,
            allow_short_gcm_iv: flags & PARCRYPT_CIPHER_ALLOW_SHORT_GCM_IV != 0,
        };
        let keyed = Keyed::new(engine.clone(), suite, key, iv, setup)?;
        Ok(ParcryptCipher { keyed })
    };
    // SAFETY: `cipher` and `error` are NULL or writable (the contract above).
    unsafe { make(cipher, error, body) }
}

/// Frees a cipher (NULL is ignored); its copy of the key is wiped.
///
/// # Safety
/// `cipher` is NULL or a cipher not freed before, with no other call on it running.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_cipher_free(cipher: *mut ParcryptCipher) {
    // SAFETY: the contract above is `free`'s.
    unsafe { free(cipher) }
}

/// The most bytes a message of `input_length` bytes turns into (`direction`:
/// `PARCRYPT_ENCRYPT` or `PARCRYPT_DECRYPT`): 16 more for GCM encryption, up to one block
/// more for padded encryption, 16 fewer for GCM decryption. Written to `*output_length`.
///
/// # Safety
/// `cipher` is NULL or a live cipher; `output_length` and `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_cipher_max_output_length(
    cipher: *const ParcryptCipher,
    direction: i32,
    input_length: usize,
    output_length: *mut usize,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = |cipher: &ParcryptCipher| {
        let direction = direction_of(direction)?;
        Ok(cipher.keyed.max_output_length(direction, input_length))
    };
    // SAFETY: `cipher` is NULL or live; `output_length` and `error` are NULL or writable
    // (the contract above).
    unsafe { sized(cipher, output_length, "output_length", error, body) }
}

/// Encrypts one message of `input_length` bytes at `input` into `output`, which holds
/// `output_capacity` bytes (at least `parcrypt_cipher_max_output_length`), under the IV
/// the cipher was made with: its one message (`PARCRYPT_STATUS_STATE` once it has encrypted
/// one; a call refused for a too small output or a bad argument leaves it unspent). `aad`
/// is GCM's additional authenticated data (NULL, 0 for none). The bytes written go to
/// `*output_length`; when the output is too small, it says how many are needed
/// (`PARCRYPT_STATUS_OUTPUT_TOO_SMALL`). `output` may be `input` itself (in place, the
/// capacity counting from there), but may not otherwise overlap it.
///
/// # Safety
/// `cipher` is NULL or live; `input` and `aad` are NULL or readable for their lengths;
/// `output` is NULL or writable for `output_capacity` bytes, not changed by others during
/// the call; `output_length` and `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_cipher_encrypt(
    cipher: *const ParcryptCipher,
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
    unsafe { run(cipher, Direction::Encrypt, None, message, error) }
}

/// Decrypts one message, as `parcrypt_cipher_encrypt` encrypts. For GCM the tag is checked
/// before any plaintext is written into `output` (a thread or a file mapping watching it
/// never sees a byte of a forged message); when it does not match the call returns
/// `PARCRYPT_STATUS_AUTHENTICATION_FAILED` with the output zeroed. On any failure the output
/// holds no plaintext.
///
/// # Safety
/// As `parcrypt_cipher_encrypt`.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_cipher_decrypt(
    cipher: *const ParcryptCipher,
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
    unsafe { run(cipher, Direction::Decrypt, None, message, error) }
}

/// `parcrypt_cipher_encrypt` under its own IV (`iv`, `iv_length`) for this message: the
/// way to encrypt many messages with one cipher. Never repeat an IV under one key.
///
/// # Safety
/// As `parcrypt_cipher_encrypt`; `iv` is NULL or readable for `iv_length` bytes.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_cipher_encrypt_iv(
    cipher: *const ParcryptCipher,
    iv: *const u8,
    iv_length: usize,
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
    unsafe {
        run(
            cipher,
            Direction::Encrypt,
            Some((iv, iv_length)),
            message,
            error,
        )
    }
}

/// `parcrypt_cipher_decrypt` under its own IV for this message.
///
/// # Safety
/// As `parcrypt_cipher_encrypt_iv`.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_cipher_decrypt_iv(
    cipher: *const ParcryptCipher,
    iv: *const u8,
    iv_length: usize,
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
    unsafe {
        run(
            cipher,
            Direction::Decrypt,
            Some((iv, iv_length)),
            message,
            error,
        )
    }
}

pub(crate) fn direction_of(direction: i32) -> Result<Direction, Failure> {
    match direction {
        PARCRYPT_ENCRYPT => Ok(Direction::Encrypt),
        PARCRYPT_DECRYPT => Ok(Direction::Decrypt),
        other => Err(Failure::invalid(format!(
            "direction {other} is neither PARCRYPT_ENCRYPT (0) nor PARCRYPT_DECRYPT (1)"
        ))),
    }
}

/// One message through `cipher`, with the checks every cipher call makes.
///
/// # Safety
/// The contract of `parcrypt_cipher_encrypt_iv` for every pointer.
unsafe fn run(
    cipher: *const ParcryptCipher,
    direction: Direction,
    iv: Option<(*const u8, usize)>,
    message: Message,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    // SAFETY: every pointer meets this function's contract for its length.
    let body = |cipher: &ParcryptCipher| unsafe { run_checked(cipher, direction, iv, &message) };
    // SAFETY: `cipher` is NULL or live; `output_length` and `error` are NULL or writable
    // (this function's contract).
    unsafe { sized(cipher, message.output_length, "output_length", error, body) }
}

/// # Safety
/// As [`run`].
unsafe fn run_checked(
    cipher: &ParcryptCipher,
    direction: Direction,
    iv: Option<(*const u8, usize)>,
    message: &Message,
) -> Result<usize, Failure> {
    // SAFETY: `iv` and `aad` are NULL or readable for their lengths (this function's
    // contract).
    let (iv, aad) = unsafe {
        (
            match iv {
                Some((pointer, length)) => Some(
                    optional_bytes(pointer, length, "iv")?
                        .ok_or_else(|| Failure::new(ParcryptStatus::BadIv, "the IV is empty"))?,
                ),
                None => None,
            },
            message.aad()?,
        )
    };
    let in_place = !message.input.is_null() && message.input == message.output.cast_const();
    let buffers = if in_place {
        if message.input_length > message.output_capacity {
            return Err(Failure::invalid(
                "in place, output_capacity must be at least input_length",
            ));
        }
        // SAFETY: `output` is writable for `output_capacity` bytes and nobody else touches
        // it during the call (the contract); the input is the same memory and is read only
        // through this slice.
        let buffer = unsafe { message.output() }?;
        Buffers::InPlace {
            buffer,
            length: message.input_length,
        }
    } else {
        if message.overlaps() {
            return Err(Failure::invalid(
                "output overlaps input (in place, pass the same pointer for both)",
            ));
        }
        // SAFETY: `input` is NULL or readable for `input_length` bytes; `output` is NULL or
        // writable for `output_capacity` bytes, untouched by others during the call (the
        // contract), and apart from `input` (checked above).
        let (input, output) = unsafe { (message.input()?, message.output()?) };
        Buffers::Separate { input, output }
    };
    cipher.keyed.process(direction, iv, aad, buffers)
}
