//! The exported functions called from Rust, as C calls them: results against the library
//! called directly, error objects, and one decryptor shared by threads.

use std::ffi::{CStr, CString};
use std::ptr::{null, null_mut};
use std::sync::Arc;

use parcrypt::hazmat::Cipher;
use parcrypt::{Backend, Engine};

use super::*;

fn engine(backend: &CStr) -> *mut ParcryptEngine {
    made(|engine, error| {
        // SAFETY: a NUL-terminated name and writable out-parameters.
        unsafe { parcrypt_engine_new(backend.as_ptr(), 2, engine, error) }
    })
    .expect("an engine")
}

/// The handle a `parcrypt_*_new` call (`call`, given the out-parameters) makes, or its
/// failure's status and message; checks that a failure sets no handle and an error object
/// of its own status, and a success none.
fn made<T>(
    call: impl FnOnce(*mut *mut T, *mut *mut ParcryptError) -> ParcryptStatus,
) -> Result<*mut T, (ParcryptStatus, String)> {
    let (mut handle, mut error) = (null_mut(), null_mut());
    let status = call(&mut handle, &mut error);
    if status == ParcryptStatus::Ok {
        assert!(error.is_null() && !handle.is_null());
        Ok(handle)
    } else {
        assert!(handle.is_null(), "a failed call set the handle");
        let (object_status, message) = take_error(error);
        assert_eq!(object_status, status);
        Err((status, message))
    }
}

/// The status and message of a failed call's error object, which is freed.
fn take_error(error: *mut ParcryptError) -> (ParcryptStatus, String) {
    assert!(!error.is_null(), "a failure without an error object");
    // SAFETY: a live error object, freed once at the end.
    unsafe {
        let status = parcrypt_error_status(error);
        let message = CStr::from_ptr(parcrypt_error_message(error))
            .to_str()
            .unwrap()
            .to_owned();
        parcrypt_error_free(error);
        (status, message)
    }
}

/// An entry point that makes a handle on an engine from a NUL-terminated name, a key, a
/// second byte string and flags: `parcrypt_cipher_new` (a suite name and an IV),
/// `parcrypt_file_encryptor_new` and `parcrypt_file_decryptor_open` (a file and a context).
type KeyedNew<T> = unsafe extern "C" fn(
    *const ParcryptEngine,
    *const c_char,
    *const u8,
    usize,
    *const u8,
    usize,
    u32,
    *mut *mut T,
    *mut *mut ParcryptError,
) -> ParcryptStatus;

/// The handle `call` makes on `engine` from `name`, `key` and `second`, without flags (as
/// [`made`] checks it).
fn keyed_new<T>(
    call: KeyedNew<T>,
    engine: *const ParcryptEngine,
    name: &CStr,
    key: &[u8],
    second: &[u8],
) -> Result<*mut T, (ParcryptStatus, String)> {
    made(|handle, error| {
        // SAFETY: live engine, NUL-terminated name, slices for their lengths, writable outs.
        unsafe {
            call(
                engine,
                name.as_ptr(),
                key.as_ptr(),
                key.len(),
                second.as_ptr(),
                second.len(),
                0,
                handle,
                error,
            )
        }
    })
}

fn cipher(
    engine: *const ParcryptEngine,
    name: &CStr,
    key: &[u8],
    iv: &[u8],
) -> Result<*mut ParcryptCipher, (ParcryptStatus, String)> {
    keyed_new(parcrypt_cipher_new, engine, name, key, iv)
}

/// A seekable decryptor of the file at `path`, sealed under `key` without a context.
fn open_decryptor(
    engine: *const ParcryptEngine,
    path: &CStr,
    key: &[u8],
) -> *mut ParcryptFileDecryptor {
    keyed_new(parcrypt_file_decryptor_open, engine, path, key, &[]).expect("a file decryptor")
}

/// A call's outcome: `Ok`, or the status and message of its error object (which is freed;
/// its status is the one the call returned).
fn outcome(
    status: ParcryptStatus,
    error: *mut ParcryptError,
) -> Result<(), (ParcryptStatus, String)> {
    if status == ParcryptStatus::Ok {
        assert!(error.is_null(), "a success with an error object");
        return Ok(());
    }
    let (object_status, message) = take_error(error);
    assert_eq!(object_status, status);
    Err((status, message))
}

/// `parcrypt_file_decryptor_read` into `buffer`, or `_read_at` from `offset`: the bytes
/// it says it read, and its outcome.
///
/// # Safety
/// `decryptor` is live.
unsafe fn read_plaintext(
    decryptor: *const ParcryptFileDecryptor,
    offset: Option<u64>,
    buffer: &mut [u8],
) -> (usize, Result<(), (ParcryptStatus, String)>) {
    let (at, capacity) = (buffer.as_mut_ptr(), buffer.len());
    let (mut read, mut error) = (usize::MAX, null_mut());
    // SAFETY: this function's contract; the buffer is ours for its length.
    let status = unsafe {
        match offset {
            None => parcrypt_file_decryptor_read(decryptor, at, capacity, &mut read, &mut error),
            Some(offset) => parcrypt_file_decryptor_read_at(
                decryptor, offset, at, capacity, &mut read, &mut error,
            ),
        }
    };
    (read, outcome(status, error))
}

/// A segmented message of `input_length` bytes for `direction` under `cipher`'s own IV,
/// without AAD.
fn segmented_new(
    cipher: *const ParcryptCipher,
    direction: i32,
    input_length: usize,
) -> Result<*mut ParcryptSegmented, (ParcryptStatus, String)> {
    made(|segmented, error| {
        // SAFETY: a live cipher and writable outs.
        unsafe {
            parcrypt_segmented_new(
                cipher,
                direction,
                null(),
                0,
                null(),
                0,
                input_length,
                segmented,
                error,
            )
        }
    })
}

/// `parcrypt_segmented_run` of the body's `output.len()` bytes from `offset`, read at
/// `input`.
///
/// # Safety
/// `segmented` is live; `input` is readable for `output.len()` bytes (and, for CBC
/// decryption past offset 0, the block before it).
unsafe fn run_segment(
    segmented: *const ParcryptSegmented,
    offset: usize,
    input: *const u8,
    output: &mut [u8],
) -> Result<(), (ParcryptStatus, String)> {
    let mut error = null_mut();
    // SAFETY: this function's contract; `output` is ours for its length.
    let status = unsafe {
        parcrypt_segmented_run(
            segmented,
            offset,
            input,
            output.as_mut_ptr(),
            output.len(),
            &mut error,
        )
    };
    outcome(status, error)
}

/// `parcrypt_segmented_finish` of the message's whole `input` into `output`: the bytes
/// written.
///
/// # Safety
/// `segmented` is live and `input` holds at least its input length.
unsafe fn finish_segments(
    segmented: *const ParcryptSegmented,
    input: &[u8],
    output: &mut [u8],
) -> Result<usize, (ParcryptStatus, String)> {
    let (mut written, mut error) = (0, null_mut());
    // SAFETY: this function's contract; the slices are ours for their lengths.
    let status = unsafe {
        parcrypt_segmented_finish(
            segmented,
            input.as_ptr(),
            output.as_mut_ptr(),
            output.len(),
            &mut written,
            &mut error,
        )
    };
    outcome(status, error).map(|()| written)
}

/// A whole-message call's raw memory, as C gives it: `input_length` bytes at `input` to
/// write into `capacity` bytes at `output` (no AAD).
#[derive(Clone, Copy)]
struct Memory {
    input: *const u8,
    input_length: usize,
    output: *mut u8,
    capacity: usize,
}

impl Memory {
    fn of(input: &[u8], output: &mut [u8]) -> Memory {
        Memory {
            input: input.as_ptr(),
            input_length: input.len(),
            output: output.as_mut_ptr(),
            capacity: output.len(),
        }
    }
}

/// What a call that writes bytes returned: its status, the length it wrote (`usize::MAX`
/// before the call) and its error object (NULL on success).
type Written = (ParcryptStatus, usize, *mut ParcryptError);

/// A whole-message entry point without an IV of its own: `parcrypt_cipher_encrypt` and
/// `_decrypt`, `parcrypt_aead_seal` and `_open`.
type MessageCall<T> = unsafe extern "C" fn(
    *const T,
    *const u8,
    usize,
    *const u8,
    usize,
    *mut u8,
    usize,
    *mut usize,
    *mut *mut ParcryptError,
) -> ParcryptStatus;

/// `call` on `handle` over `memory`.
///
/// # Safety
/// `handle` is live; `memory` is readable and writable as it says.
unsafe fn message<T>(call: MessageCall<T>, handle: *const T, memory: Memory) -> Written {
    let (mut written, mut error) = (usize::MAX, null_mut());
    let Memory {
        input,
        input_length,
        output,
        capacity,
    } = memory;
    // SAFETY: this function's contract.
    let status = unsafe {
        call(
            handle,
            input,
            input_length,
            null(),
            0,
            output,
            capacity,
            &mut written,
            &mut error,
        )
    };
    (status, written, error)
}

/// `parcrypt_cipher_encrypt_iv` on `cipher` under `iv` over `memory`.
///
/// # Safety
/// As [`message`].
unsafe fn encrypt_iv(cipher: *const ParcryptCipher, iv: &[u8], memory: Memory) -> Written {
    let (mut written, mut error) = (usize::MAX, null_mut());
    // SAFETY: this function's contract, and `iv` for its length.
    let status = unsafe {
        parcrypt_cipher_encrypt_iv(
            cipher,
            iv.as_ptr(),
            iv.len(),
            memory.input,
            memory.input_length,
            null(),
            0,
            memory.output,
            memory.capacity,
            &mut written,
            &mut error,
        )
    };
    (status, written, error)
}

/// The output of a whole-message call that must succeed: `call` on `cipher`, or with an
/// `iv` `parcrypt_cipher_encrypt_iv`.
fn whole(
    call: MessageCall<ParcryptCipher>,
    cipher: *const ParcryptCipher,
    iv: Option<&[u8]>,
    input: &[u8],
) -> Vec<u8> {
    let mut output = vec![0u8; input.len() + 32];
    let memory = Memory::of(input, &mut output);
    // SAFETY: a live cipher, slices for their lengths.
    let (status, written, error) = unsafe {
        match iv {
            None => message(call, cipher, memory),
            Some(iv) => encrypt_iv(cipher, iv, memory),
        }
    };
    assert_eq!(status, ParcryptStatus::Ok, "{:?}", take_error(error));
    output.truncate(written);
    output
}

/// `input` encrypted by `cipher`, under its creation IV or `iv`.
fn seal(cipher: *const ParcryptCipher, iv: Option<&[u8]>, input: &[u8]) -> Vec<u8> {
    whole(parcrypt_cipher_encrypt, cipher, iv, input)
}

/// A whole-file entry point: `parcrypt_encrypt_file` or `parcrypt_decrypt_file`.
type FileCall = unsafe extern "C" fn(
    *const ParcryptEngine,
    *const c_char,
    *const c_char,
    *const u8,
    usize,
    *const u8,
    usize,
    u32,
    *mut u64,
    *mut *mut ParcryptError,
) -> ParcryptStatus;

/// `call` from `source` to `destination` under `key` (no context) with `flags`: the status,
/// and the error object's status when there is one (which is freed).
fn whole_file(
    call: FileCall,
    engine: *const ParcryptEngine,
    [source, destination]: [&CStr; 2],
    key: &[u8],
    flags: u32,
) -> (ParcryptStatus, Option<ParcryptStatus>) {
    let mut error = null_mut();
    // SAFETY: a live engine, NUL-terminated paths, a key for its length, writable outs.
    let status = unsafe {
        call(
            engine,
            source.as_ptr(),
            destination.as_ptr(),
            key.as_ptr(),
            key.len(),
            null(),
            0,
            flags,
            null_mut(),
            &mut error,
        )
    };
    (status, (!error.is_null()).then(|| take_error(error).0))
}

#[test]
fn every_suite_matches_the_library_called_directly() {
    let abi_engine = engine(c"pool");
    let direct = Arc::new(Engine::new(Backend::Seq, None).unwrap());
    let names = [
        "aes-128-ecb",
        "aes-192-cbc",
        "aes-256-ctr",
        "aes-256-gcm",
        "bf-cbc",
        "bf-ctr",
        "rc6-128-gcm",
        "rc6-256-cbc",
    ];
    for name in names {
        let suite: parcrypt::CipherSpec = name.parse().unwrap();
        let key: Vec<u8> = (0..suite.algorithm.key_lengths().1.min(32))
            .map(|i| i as u8)
            .collect();
        let iv: Vec<u8> = match suite.mode {
            parcrypt::hazmat::Mode::Ecb => Vec::new(),
            parcrypt::hazmat::Mode::Gcm => vec![3; 12],
            _ => vec![5; suite.algorithm.block_size()],
        };
        let name_c = CString::new(name).unwrap();
        let handle = cipher(abi_engine, &name_c, &key, &iv).unwrap();
        let reference = Cipher::new(
            direct.clone(),
            suite,
            &key,
            (!iv.is_empty()).then_some(&iv[..]),
        )
        .unwrap();
        let iv = (!iv.is_empty()).then_some(&iv[..]);
        for length in [0usize, 1, 15, 16, 17, 1000, 70_000] {
            let message: Vec<u8> = (0..length).map(|i| (i * 13) as u8).collect();
            // Many messages under one IV, for the test's sake: through the per-call IV, as
            // the creation IV encrypts one message only (issue 31 finding 3).
            let sealed = seal(handle, iv, &message);
            let expected = reference.keyed().encrypt(iv, &message, None).unwrap();
            assert_eq!(sealed, expected, "{name} {length}");
        }
        // The creation IV's one message.
        let message = b"the creation IV's one message";
        assert_eq!(
            seal(handle, None, message),
            reference.encrypt(message, None).unwrap(),
            "{name}"
        );
        // SAFETY: a live cipher, freed once.
        unsafe { parcrypt_cipher_free(handle) };
    }
    // SAFETY: a live engine, freed once.
    unsafe { parcrypt_engine_free(abi_engine) };
}

/// The errors of files to public-key recipients map onto the statuses of their version-1
/// kin: a missing identity as a missing passphrase, a header MAC as a chunk's tag, a
/// commitment after the header opened as a wrong key, refused recipients as a bad argument.
#[test]
fn recipient_file_errors_have_the_statuses_of_their_kin() {
    use parcrypt::errors::FormatError as E;
    for (error, status) in [
        (E::NeedsIdentity, ParcryptStatus::BadKey),
        (E::NeedsPassphrase, ParcryptStatus::BadKey),
        (
            E::Recipients("no recipient".into()),
            ParcryptStatus::InvalidArgument,
        ),
        (
            E::NoMatchingIdentity("X25519".into()),
            ParcryptStatus::WrongKey,
        ),
        (E::WrongKey, ParcryptStatus::WrongKey),
        (E::HeaderMismatch, ParcryptStatus::WrongKey),
        (
            E::DamagedStanza("bad share".into()),
            ParcryptStatus::BadFormat,
        ),
        (E::DamagedHeader("reserved byte"), ParcryptStatus::BadFormat),
        (E::HeaderMac, ParcryptStatus::AuthenticationFailed),
        (
            E::DamagedChunk { index: 0, bytes: 1 },
            ParcryptStatus::AuthenticationFailed,
        ),
    ] {
        let what = format!("{error:?}");
        assert_eq!(Failure::from(error).status, status, "{what}");
    }
    // Through an I/O error from a reader, as a C reader meets them.
    let wrapped = std::io::Error::other(E::HeaderMac);
    assert_eq!(
        Failure::from(wrapped).status,
        ParcryptStatus::AuthenticationFailed
    );
}

/// A file to a public-key recipient, given to C's readers with a key or a passphrase (all C
/// can give): refused as a bad key, nothing written, one line that asks for an identity.
#[test]
fn a_recipient_file_asks_c_for_an_identity() {
    let folder = tempfile::tempdir().unwrap();
    let path = |name: &str| CString::new(folder.path().join(name).to_str().unwrap()).unwrap();
    std::fs::write(folder.path().join("plain"), b"to a recipient").unwrap();
    let identity = parcrypt::age::X25519Identity::generate();
    let recipients = [parcrypt::Recipient::from(identity.to_public())];
    parcrypt::encrypt_file(
        folder.path().join("plain"),
        folder.path().join("sealed"),
        parcrypt::Secret::Recipients(&recipients),
    )
    .unwrap();
    let engine = engine(c"seq");
    let (sealed, out) = (path("sealed"), path("out"));
    for flags in [0, PARCRYPT_FILE_PASSPHRASE] {
        let status = whole_file(
            parcrypt_decrypt_file,
            engine,
            [&sealed, &out],
            &[7; 16],
            flags,
        );
        assert_eq!(
            status,
            (ParcryptStatus::BadKey, Some(ParcryptStatus::BadKey)),
            "{flags}"
        );
        assert!(!folder.path().join("out").exists());
    }
    let (status, message) =
        keyed_new(parcrypt_file_decryptor_open, engine, &sealed, &[7; 16], &[]).unwrap_err();
    assert_eq!(status, ParcryptStatus::BadKey);
    assert!(
        message.contains("give an identity") && !message.contains('\n'),
        "{message}"
    );
    // SAFETY: a live engine, freed once.
    unsafe { parcrypt_engine_free(engine) };
}

#[test]
fn failures_carry_a_status_and_one_line() {
    let engine = engine(c"seq");
    let (status, message) = cipher(engine, c"aes-128-xts", &[0; 16], &[0; 16]).unwrap_err();
    assert_eq!(status, ParcryptStatus::UnknownName);
    assert!(
        message.contains("aes-128-xts") && !message.contains('\n'),
        "{message}"
    );
    let (status, message) = cipher(engine, c"aes-128-ctr", &[0; 17], &[0; 16]).unwrap_err();
    assert_eq!(status, ParcryptStatus::BadKey, "{message}");
    let (status, _) = cipher(null(), c"aes-128-ctr", &[0; 16], &[0; 16]).unwrap_err();
    assert_eq!(status, ParcryptStatus::NullPointer);
    // A message with a line break inside comes out on one line.
    let error = ParcryptError::from(Failure::invalid("first\nsecond\0third"));
    let object = Box::into_raw(Box::new(error));
    let (_, message) = take_error(object);
    assert_eq!(message, "first second third");
    // SAFETY: a live engine, freed once.
    unsafe { parcrypt_engine_free(engine) };
}

#[test]
fn a_panic_becomes_a_status() {
    let outcome: Result<(), Failure> = guard(|| panic!("boom"));
    let failure = outcome.unwrap_err();
    assert_eq!(failure.status, ParcryptStatus::Internal);
    let mut error = null_mut();
    // SAFETY: `error` is writable.
    let status = unsafe { report(&mut error, Err(failure)) };
    assert_eq!(status, ParcryptStatus::Internal);
    let (_, message) = take_error(error);
    assert!(message.contains("panicked"), "{message}");
}

#[test]
fn threads_share_one_file_decryptor() {
    let folder = tempfile::tempdir().unwrap();
    let sealed = CString::new(folder.path().join("shared.parcrypt").to_str().unwrap()).unwrap();
    let engine = engine(c"pool");
    let key = [0x42u8; 32];
    let plain: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let encryptor = keyed_new(parcrypt_file_encryptor_new, engine, &sealed, &key, &[])
        .expect("a file encryptor");
    // SAFETY: a live encryptor, slices for their lengths.
    unsafe {
        for piece in plain.chunks(50_001) {
            let status =
                parcrypt_file_encryptor_write(encryptor, piece.as_ptr(), piece.len(), null_mut());
            assert_eq!(status, ParcryptStatus::Ok);
        }
        assert_eq!(
            parcrypt_file_encryptor_finish(encryptor, null_mut()),
            ParcryptStatus::Ok
        );
        parcrypt_file_encryptor_free(encryptor);
    }
    let decryptor = open_decryptor(engine, &sealed, &key);
    // Raw pointers are not Send: the threads get the handle's address.
    let shared = decryptor as usize;
    std::thread::scope(|scope| {
        for thread in 0..4usize {
            let plain = &plain;
            scope.spawn(move || {
                for round in 0..20usize {
                    let offset = (thread * 70_001 + round * 9_973) % (plain.len() - 5000);
                    let mut piece = vec![0u8; 5000];
                    let decryptor = shared as *const ParcryptFileDecryptor;
                    // SAFETY: the decryptor lives until every thread ended.
                    let (read, outcome) =
                        unsafe { read_plaintext(decryptor, Some(offset as u64), &mut piece) };
                    assert_eq!(outcome, Ok(()));
                    assert_eq!(read, piece.len());
                    assert_eq!(piece, plain[offset..offset + 5000]);
                }
            });
        }
    });
    // SAFETY: live handles, freed once after every thread ended.
    unsafe {
        parcrypt_file_decryptor_free(decryptor);
        parcrypt_engine_free(engine);
    }
}

/// A message cut into segments run on two threads (out of place, so CBC decryption splits
/// too) gives the bytes of the whole-message call; a gap, a bad cut and a modified GCM tag
/// are refused, and the failed tag leaves the output untouched.
#[test]
fn segmented_messages_match_whole_ones() {
    let engine = engine(c"seq");
    for (name, key_length, iv_length) in [
        (c"aes-128-ctr", 16, 16),
        (c"aes-256-gcm", 32, 12),
        (c"aes-128-cbc", 16, 16),
        (c"bf-ecb", 16, 0),
    ] {
        let key: Vec<u8> = (0..key_length).map(|i| i as u8 * 3 + 1).collect();
        let iv: Vec<u8> = (0..iv_length).map(|i| i as u8 ^ 0x5a).collect();
        // A cipher's creation IV encrypts one message (issue 31 finding 3): the whole call
        // and the segments each get a cipher of their own.
        let make = || cipher(engine, name, &key, &iv).expect("cipher");
        for length in [0usize, 1, 16, 17, 1000, 70_000] {
            let plaintext: Vec<u8> = (0..length).map(|i| (i % 251) as u8).collect();
            let (once, cipher) = (make(), make());
            let whole = seal(once, None, &plaintext);
            // SAFETY: made above, freed once.
            unsafe { parcrypt_cipher_free(once) };
            let sealed = run_segments(cipher, PARCRYPT_ENCRYPT, &plaintext).expect("encrypt");
            assert_eq!(sealed, whole, "{name:?} {length}");
            let opened = run_segments(cipher, PARCRYPT_DECRYPT, &sealed).expect("decrypt");
            assert_eq!(opened, plaintext, "{name:?} {length}");
            if name == c"aes-256-gcm" {
                let mut bad = sealed.clone();
                let last = bad.len() - 1;
                bad[last] ^= 1;
                let (status, message) = run_segments(cipher, PARCRYPT_DECRYPT, &bad).unwrap_err();
                assert_eq!(status, ParcryptStatus::AuthenticationFailed, "{message}");
            }
            // SAFETY: made above, freed once.
            unsafe { parcrypt_cipher_free(cipher) };
        }
    }
    let cipher = cipher(engine, c"aes-128-ctr", &[1; 16], &[2; 16]).expect("cipher");
    let segmented = segmented_new(cipher, PARCRYPT_ENCRYPT, 64).expect("a segmented message");
    let data = [0u8; 64];
    let mut output = [0u8; 64];
    // SAFETY: live handles, buffers for their lengths.
    unsafe {
        let (status, _) = run_segment(segmented, 8, data.as_ptr(), &mut output[..16]).unwrap_err();
        assert_eq!(
            status,
            ParcryptStatus::InvalidArgument,
            "a cut off the blocks"
        );
        assert_eq!(
            run_segment(segmented, 0, data.as_ptr(), &mut output[..32]),
            Ok(())
        );
        let (status, message) = finish_segments(segmented, &data, &mut output).unwrap_err();
        assert_eq!(status, ParcryptStatus::InvalidArgument, "a gap");
        assert!(message.contains("cover"), "{message}");
        parcrypt_segmented_free(segmented);
        parcrypt_cipher_free(cipher);
        parcrypt_engine_free(engine);
    }
}

/// The message through `parcrypt_segmented_*`: the body cut in two at a block boundary,
/// the two halves run on two threads, then finished.
fn run_segments(
    cipher: *const ParcryptCipher,
    direction: i32,
    input: &[u8],
) -> Result<Vec<u8>, (ParcryptStatus, String)> {
    struct Shared(*mut ParcryptSegmented);
    // SAFETY: a segmented message may be used from many threads (the header's promise,
    // checked by the compiler for `ParcryptSegmented`).
    unsafe impl Send for Shared {}
    // SAFETY: as above.
    unsafe impl Sync for Shared {}
    let segmented = segmented_new(cipher, direction, input.len())?;
    let (mut body, mut alignment) = (0, 0);
    // SAFETY: a live handle and writable outs.
    let status =
        unsafe { parcrypt_segmented_layout(segmented, 0, &mut body, &mut alignment, null_mut()) };
    assert_eq!(status, ParcryptStatus::Ok);
    let mut output = vec![0u8; input.len() + 32];
    let cut = (body / 2)
        .checked_div(alignment)
        .map_or(body, |blocks| blocks * alignment);
    let shared = Shared(segmented);
    // A round of segments, then `authenticate`: GCM decryption's first round writes nothing,
    // and a second runs once its tag matched.
    for round in 0..2 {
        let (first, second) = output[..body].split_at_mut(cut);
        let statuses = std::thread::scope(|scope| {
            let shared = &shared;
            // SAFETY: the input and output ranges are the body's first `cut` bytes.
            let a = scope.spawn(move || unsafe { run_segment(shared.0, 0, input.as_ptr(), first) });
            // SAFETY: the rest of the body, inside the whole input (CBC reads the block
            // before it).
            let b = scope.spawn(move || unsafe {
                run_segment(shared.0, cut, input.as_ptr().add(cut), second)
            });
            [a.join().unwrap(), b.join().unwrap()]
        });
        assert_eq!(statuses, [Ok(()), Ok(())]);
        if round == 1 {
            break;
        }
        let (mut again, mut error) = (0, null_mut());
        // SAFETY: a live handle, the whole input, writable outs.
        let status = unsafe {
            parcrypt_segmented_authenticate(segmented, input.as_ptr(), &mut again, &mut error)
        };
        if status != ParcryptStatus::Ok {
            assert!(
                output.iter().all(|byte| *byte == 0),
                "a failed tag leaves the output untouched"
            );
            let failure = take_error(error);
            // SAFETY: made above, freed once.
            unsafe { parcrypt_segmented_free(segmented) };
            return Err(failure);
        }
        if again == 0 {
            break;
        }
    }
    // SAFETY: a live handle, the whole input.
    let result = match unsafe { finish_segments(segmented, input, &mut output) } {
        Ok(written) => {
            output.truncate(written);
            Ok(output)
        }
        Err(failure) => {
            assert!(
                output.iter().all(|byte| *byte == 0),
                "a failed finish leaves no plaintext"
            );
            Err(failure)
        }
    };
    // SAFETY: made above, freed once.
    unsafe { parcrypt_segmented_free(segmented) };
    result
}

/// Issue 31 finding 1, the C readers: a file cut after whole chunks and given 16 junk bytes
/// (a fake empty final chunk, which the parts planner once took for the message's end) is
/// refused by `parcrypt_decrypt_file` (no output left) and by the file decryptor, whether
/// read to its end, read at the length the size claims, measured or seeked from the end.
#[test]
fn the_file_readers_refuse_a_cut_file() {
    let folder = tempfile::tempdir().unwrap();
    let path = |name: &str| CString::new(folder.path().join(name).to_str().unwrap()).unwrap();
    let (plain_path, sealed_path, cut_path, out_path) =
        (path("plain"), path("sealed"), path("cut"), path("out"));
    let engine = engine(c"seq");
    let key = [0x31u8; 16];
    let chunk = 16 * 1024;
    let plain: Vec<u8> = (0..3 * chunk + 100).map(|i| (i % 253) as u8).collect();
    std::fs::write(folder.path().join("plain"), &plain).unwrap();
    let files = [&*plain_path, &sealed_path];
    let status = whole_file(parcrypt_encrypt_file, engine, files, &key, 0);
    assert_eq!(status, (ParcryptStatus::Ok, None));
    let sealed = std::fs::read(folder.path().join("sealed")).unwrap();
    let envelope = sealed.len() - (3 * (chunk + 16) + 100 + 16);
    for kept in 0..=3 {
        let mut cut = sealed[..envelope + kept * (chunk + 16)].to_vec();
        cut.extend_from_slice(&[0xa5; 16]);
        std::fs::write(folder.path().join("cut"), &cut).unwrap();
        let claimed = (kept * chunk) as u64;

        let files = [&*cut_path, &out_path];
        let failed = ParcryptStatus::AuthenticationFailed;
        let status = whole_file(parcrypt_decrypt_file, engine, files, &key, 0);
        assert_eq!(status, (failed, Some(failed)), "cut after {kept}");
        assert!(
            !folder.path().join("out").exists(),
            "cut after {kept}: output left"
        );

        let shared = open_decryptor(engine, &cut_path, &key).cast_const();
        // Read from the start until the reader stops: it must fail, never end cleanly.
        let mut buffer = vec![0u8; 10_000];
        let mut released = 0u64;
        let ended_with = loop {
            // SAFETY: a live decryptor.
            let (read, outcome) = unsafe { read_plaintext(shared, None, &mut buffer) };
            if let Err((status, _)) = outcome {
                break status;
            }
            if read == 0 {
                break ParcryptStatus::Ok;
            }
            let start = released as usize;
            assert_eq!(buffer[..read], plain[start..start + read]);
            released += read as u64;
        };
        assert_eq!(
            ended_with,
            ParcryptStatus::AuthenticationFailed,
            "cut after {kept}: read to a clean end after {released} bytes"
        );
        let (mut read, mut length, mut position) = (0, 0, 0);
        // SAFETY: as above; NULL error out-parameters are allowed.
        unsafe {
            assert_eq!(
                parcrypt_file_decryptor_read_at(
                    shared,
                    claimed,
                    buffer.as_mut_ptr(),
                    buffer.len(),
                    &mut read,
                    null_mut()
                ),
                ParcryptStatus::AuthenticationFailed
            );
            assert_eq!(read, 0);
            assert_eq!(
                parcrypt_file_decryptor_length(shared, &mut length, null_mut()),
                ParcryptStatus::AuthenticationFailed
            );
            assert_eq!(
                parcrypt_file_decryptor_seek(
                    shared,
                    0,
                    PARCRYPT_SEEK_END,
                    &mut position,
                    null_mut()
                ),
                ParcryptStatus::AuthenticationFailed
            );
            parcrypt_file_decryptor_free(shared.cast_mut());
        }
    }
    // SAFETY: a live engine, freed once.
    unsafe { parcrypt_engine_free(engine) };
}

/// The buffer rules every whole-message call shares: an AEAD refuses its output on its
/// input (in place or overlapping), a cipher works in place and refuses a partial overlap,
/// and `*output_length` says 0 after a failure, or the bytes needed when the output is too
/// small.
#[test]
fn whole_message_calls_share_the_buffer_rules() {
    let engine = engine(c"seq");
    let key = [7u8; 32];
    let aead = made(|aead, error| {
        // SAFETY: a live engine, a NUL-terminated name, a key for its length, writable outs.
        unsafe {
            parcrypt_aead_new(
                engine,
                c"aes-256-gcm".as_ptr(),
                key.as_ptr(),
                32,
                aead,
                error,
            )
        }
    })
    .expect("an AEAD");
    let mut memory = vec![1u8; 200];
    let base = memory.as_mut_ptr();
    for (input_at, output_at, expected) in [
        (0, 0, ParcryptStatus::InvalidArgument),
        (0, 10, ParcryptStatus::InvalidArgument),
        (0, 100, ParcryptStatus::Ok),
    ] {
        // SAFETY: a live AEAD; 60 input bytes and 90 output bytes inside `memory`.
        let (status, written, error) = unsafe {
            let (input, output) = (base.add(input_at), base.add(output_at));
            let memory = Memory {
                input,
                input_length: 60,
                output,
                capacity: 90,
            };
            message(parcrypt_aead_seal, aead, memory)
        };
        assert_eq!(status, expected, "seal at {input_at} into {output_at}");
        if expected == ParcryptStatus::Ok {
            assert!(error.is_null());
            assert_eq!(written, 60 + PARCRYPT_AEAD_OVERHEAD);
        } else {
            assert_eq!(written, 0, "a refused call says 0 bytes");
            let (object, message) = take_error(error);
            assert_eq!(object, expected);
            assert!(message.contains("overlaps"), "{message}");
        }
    }
    let mut small = [0u8; 40];
    let memory = Memory::of(&memory[..20], &mut small);
    // SAFETY: a live AEAD, 20 input bytes, an output of its length.
    let (status, needed, error) = unsafe { message(parcrypt_aead_seal, aead, memory) };
    assert_eq!(status, ParcryptStatus::OutputTooSmall);
    assert_eq!(needed, 20 + PARCRYPT_AEAD_OVERHEAD);
    take_error(error);
    // SAFETY: a live AEAD, freed once.
    unsafe { parcrypt_aead_free(aead) };

    let ctr = cipher(engine, c"aes-256-ctr", &key, &[0u8; 16]).expect("aes-256-ctr");
    let plain: Vec<u8> = (0..64u8).collect();
    let expected = seal(ctr, Some(&[9u8; 16]), &plain);
    let mut in_place = plain.clone();
    let at = in_place.as_mut_ptr();
    let memory = Memory {
        input: at,
        input_length: 64,
        output: at,
        capacity: 64,
    };
    // SAFETY: a live cipher; the message in place, readable and writable for its length.
    let (status, written, _) = unsafe { encrypt_iv(ctr, &[9u8; 16], memory) };
    assert_eq!(status, ParcryptStatus::Ok);
    assert_eq!((written, &in_place), (64, &expected), "in place");
    let mut memory = vec![0u8; 128];
    let base = memory.as_mut_ptr();
    // SAFETY: a live cipher; 64 input bytes and 64 output bytes inside `memory`.
    let (status, written, error) = unsafe {
        let memory = Memory {
            input: base,
            input_length: 64,
            output: base.add(8),
            capacity: 64,
        };
        encrypt_iv(ctr, &[9u8; 16], memory)
    };
    assert_eq!(status, ParcryptStatus::InvalidArgument);
    assert_eq!(written, 0);
    take_error(error);
    // A failed length query says 0 too.
    let (mut length, mut error) = (usize::MAX, null_mut());
    // SAFETY: a live cipher, writable outs.
    let status = unsafe { parcrypt_cipher_max_output_length(ctr, 7, 10, &mut length, &mut error) };
    assert_eq!(status, ParcryptStatus::InvalidArgument);
    assert_eq!(length, 0);
    take_error(error);
    // SAFETY: a live cipher and engine, each freed once.
    unsafe {
        parcrypt_cipher_free(ctr);
        parcrypt_engine_free(engine);
    }
}

/// `PARCRYPT_FILE_REPLACE` is the former name of `PARCRYPT_FILE_OVERWRITE` and still works.
#[test]
fn replace_is_the_former_name_of_overwrite() {
    assert_eq!(PARCRYPT_FILE_REPLACE, PARCRYPT_FILE_OVERWRITE);
    let folder = tempfile::tempdir().unwrap();
    let plain = folder.path().join("plain");
    std::fs::write(&plain, b"a few bytes").unwrap();
    let (source, destination) = (
        CString::new(plain.to_str().unwrap()).unwrap(),
        CString::new(folder.path().join("sealed").to_str().unwrap()).unwrap(),
    );
    let engine = engine(c"seq");
    let key = [3u8; 16];
    let files = [&*source, &destination];
    let encrypt = |flags| whole_file(parcrypt_encrypt_file, engine, files, &key, flags).0;
    assert_eq!(encrypt(0), ParcryptStatus::Ok);
    assert_eq!(encrypt(0), ParcryptStatus::Io, "the destination exists");
    assert_eq!(encrypt(PARCRYPT_FILE_OVERWRITE), ParcryptStatus::Ok);
    assert_eq!(encrypt(PARCRYPT_FILE_REPLACE), ParcryptStatus::Ok);
    // SAFETY: a live engine, freed once.
    unsafe { parcrypt_engine_free(engine) };
}

/// `parcrypt_keygen` without a path: the identity file's text and its recipient, both
/// freed (and wiped) with `parcrypt_string_free`.
fn keygen_text(flags: u32) -> (String, String) {
    let (mut text, mut recipient, mut error) = (null_mut(), null_mut(), null_mut());
    // SAFETY: no path, writable out-parameters.
    let status = unsafe { parcrypt_keygen(flags, null(), &mut text, &mut recipient, &mut error) };
    outcome(status, error).expect("keygen");
    // SAFETY: NUL-terminated strings from the library, each freed once.
    unsafe {
        let owned = (
            CStr::from_ptr(text).to_str().unwrap().to_owned(),
            CStr::from_ptr(recipient).to_str().unwrap().to_owned(),
        );
        parcrypt_string_free(text);
        parcrypt_string_free(recipient);
        owned
    }
}

/// A whole-file call with `secret` (text) and `flags`, without a context: its outcome.
fn file_call(
    call: FileCall,
    engine: *const ParcryptEngine,
    paths: [&std::path::Path; 2],
    secret: &[u8],
    flags: u32,
) -> Result<u64, (ParcryptStatus, String)> {
    file_call_with_context(call, engine, paths, secret, &[], flags)
}

/// Files to recipients through the C calls: X25519 and hybrid identities made by
/// `parcrypt_keygen`, several recipients in one recipients file (each identity opens the
/// file alone), a streaming encryptor and a seekable decryptor, and the library reading
/// what C wrote.
#[test]
fn files_to_recipients_open_with_each_identity() {
    let folder = tempfile::tempdir().unwrap();
    let at = |name: &str| folder.path().join(name);
    let engine = engine(c"pool");
    for flags in [0, PARCRYPT_KEYGEN_POST_QUANTUM] {
        let (alice, alice_public) = keygen_text(flags);
        let (bob, bob_public) = keygen_text(flags);
        let prefix = if flags == 0 { "age1" } else { "age1pq1" };
        assert!(alice_public.starts_with(prefix) && bob_public.starts_with(prefix));
        assert!(alice.contains(&format!("# public key: {alice_public}\n")));
        let recipients = format!("# two of us\n{alice_public}\n\n{bob_public}\n");
        for size in [0usize, 1, 15, 16, 17, 65_535, 65_537] {
            let plaintext: Vec<u8> = (0..size).map(|i| (i * 31 + size) as u8).collect();
            std::fs::write(at("plain"), &plaintext).unwrap();
            let sealed = at("sealed");
            let written = file_call(
                parcrypt_encrypt_file,
                engine,
                [&at("plain"), &sealed],
                recipients.as_bytes(),
                PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_OVERWRITE,
            );
            assert_eq!(written, Ok(size as u64), "{size}");
            for identity in [&alice, &bob] {
                let opened = file_call(
                    parcrypt_decrypt_file,
                    engine,
                    [&sealed, &at("opened")],
                    identity.as_bytes(),
                    PARCRYPT_FILE_IDENTITIES | PARCRYPT_FILE_OVERWRITE,
                );
                assert_eq!(opened, Ok(size as u64), "{size}");
                assert_eq!(std::fs::read(at("opened")).unwrap(), plaintext, "{size}");
            }
            // The library, called directly, reads what C wrote.
            let identities = parcrypt::age::parse_identities(bob.as_bytes()).unwrap();
            std::fs::remove_file(at("direct")).ok();
            parcrypt::decrypt_file(
                &sealed,
                at("direct"),
                parcrypt::Secret::Identities(&identities),
            )
            .unwrap();
            assert_eq!(std::fs::read(at("direct")).unwrap(), plaintext);
        }
        // The streaming encryptor and the seekable decryptor.
        let plaintext: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
        let streamed = CString::new(at(&format!("streamed-{flags}")).to_str().unwrap()).unwrap();
        let encryptor = made(|handle, error| {
            // SAFETY: a live engine, a NUL-terminated path, text for its length, outs.
            unsafe {
                parcrypt_file_encryptor_new(
                    engine,
                    streamed.as_ptr(),
                    recipients.as_ptr(),
                    recipients.len(),
                    null(),
                    0,
                    PARCRYPT_FILE_RECIPIENTS,
                    handle,
                    error,
                )
            }
        })
        .unwrap();
        for piece in plaintext.chunks(7919) {
            let mut error = null_mut();
            // SAFETY: a live encryptor, a slice for its length.
            let status = unsafe {
                parcrypt_file_encryptor_write(encryptor, piece.as_ptr(), piece.len(), &mut error)
            };
            outcome(status, error).unwrap();
        }
        let mut error = null_mut();
        // SAFETY: a live encryptor, freed once after.
        unsafe {
            let status = parcrypt_file_encryptor_finish(encryptor, &mut error);
            outcome(status, error).unwrap();
            parcrypt_file_encryptor_free(encryptor);
        }
        let decryptor = made(|handle, error| {
            // SAFETY: as above.
            unsafe {
                parcrypt_file_decryptor_open(
                    engine,
                    streamed.as_ptr(),
                    alice.as_ptr(),
                    alice.len(),
                    null(),
                    0,
                    PARCRYPT_FILE_IDENTITIES,
                    handle,
                    error,
                )
            }
        })
        .unwrap();
        let mut buffer = vec![0u8; 1000];
        // SAFETY: a live decryptor.
        let (read, result) = unsafe { read_plaintext(decryptor, Some(50_000), &mut buffer) };
        assert_eq!((read, result), (1000, Ok(())));
        assert_eq!(buffer, plaintext[50_000..51_000]);
        // SAFETY: a live decryptor, freed once.
        unsafe { parcrypt_file_decryptor_free(decryptor) };
    }
    // SAFETY: a live engine, freed once.
    unsafe { parcrypt_engine_free(engine) };
}

/// Flags that make no sense together, the wrong way round, or with text that does not
/// parse: refused with the status a C caller can act on and one line that quotes no key.
#[test]
fn recipient_flags_refuse_misuse() {
    let folder = tempfile::tempdir().unwrap();
    let at = |name: &str| folder.path().join(name);
    std::fs::write(at("plain"), b"misuse").unwrap();
    let engine = engine(c"seq");
    let (identity, recipient) = keygen_text(0);
    let (_, hybrid) = keygen_text(PARCRYPT_KEYGEN_POST_QUANTUM);
    // The start of the secret key's line, which no message may quote.
    let secret_key = &identity.lines().last().unwrap()[..24];
    let plain = at("plain");
    let sealed = at("sealed");
    let encrypt = |secret: &str, flags| {
        file_call(
            parcrypt_encrypt_file,
            engine,
            [&plain, &sealed],
            secret.as_bytes(),
            flags,
        )
    };
    let invalid = ParcryptStatus::InvalidArgument;
    for (flags, secret, status, words) in [
        (
            PARCRYPT_FILE_IDENTITIES,
            &identity,
            invalid,
            "identities decrypt",
        ),
        (
            PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_PASSPHRASE,
            &recipient,
            invalid,
            "exclude",
        ),
        (
            PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_IDENTITIES,
            &recipient,
            invalid,
            "exclude",
        ),
        (
            PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_COBBLESTONE,
            &recipient,
            invalid,
            "Cobblestone",
        ),
        (
            PARCRYPT_FILE_RECIPIENTS,
            &identity,
            ParcryptStatus::BadKey,
            "line 3",
        ),
        (
            PARCRYPT_FILE_RECIPIENTS,
            &String::from("# nobody\n"),
            ParcryptStatus::BadKey,
            "no recipients",
        ),
    ] {
        let (got, message) = encrypt(secret, flags).unwrap_err();
        assert_eq!(got, status, "{flags:#x}: {message}");
        assert!(
            message.contains(words) && !message.contains('\n'),
            "{message}"
        );
        assert!(
            !message.contains(secret_key),
            "a secret in the message: {message}"
        );
        assert!(!sealed.exists());
    }
    let malformed = format!("{}x\n", &recipient[..recipient.len() - 1]);
    let (got, message) = encrypt(&malformed, PARCRYPT_FILE_RECIPIENTS).unwrap_err();
    assert_eq!(got, ParcryptStatus::BadKey, "{message}");
    assert!(
        message.contains("line 1") && !message.contains(&malformed[..20]),
        "{message}"
    );
    let (got, message) = encrypt(
        &format!("{recipient}\n{hybrid}\n"),
        PARCRYPT_FILE_RECIPIENTS,
    )
    .unwrap_err();
    assert_eq!(got, invalid, "{message}");
    assert!(message.contains("mixed"), "{message}");
    // A file to X25519, then the wrong ways to open it.
    encrypt(&recipient, PARCRYPT_FILE_RECIPIENTS).unwrap();
    let opened = at("opened");
    let decrypt = |secret: &str, flags| {
        file_call(
            parcrypt_decrypt_file,
            engine,
            [&sealed, &opened],
            secret.as_bytes(),
            flags,
        )
    };
    let (other, _) = keygen_text(0);
    for (secret, flags, status) in [
        (&recipient, PARCRYPT_FILE_RECIPIENTS, invalid),
        (&other, PARCRYPT_FILE_IDENTITIES, ParcryptStatus::WrongKey),
        (
            &identity,
            PARCRYPT_FILE_IDENTITIES | PARCRYPT_FILE_PASSPHRASE,
            invalid,
        ),
        (&recipient, PARCRYPT_FILE_IDENTITIES, ParcryptStatus::BadKey),
        (&identity, 0, ParcryptStatus::BadKey),
    ] {
        let (got, message) = decrypt(secret, flags).unwrap_err();
        assert_eq!(got, status, "{flags:#x}: {message}");
        assert!(
            !message.contains(secret_key) && !message.contains('\n'),
            "{message}"
        );
        assert!(!opened.exists(), "{flags:#x} left a destination");
    }
    assert_eq!(decrypt(&identity, PARCRYPT_FILE_IDENTITIES), Ok(6));
    // SAFETY: a live engine, freed once.
    unsafe { parcrypt_engine_free(engine) };
}

/// `parcrypt_keygen` with a path: a 0600 file that the file calls read, the recipient back,
/// the identity out-parameter NULL; a second call to the same path is refused and leaves
/// the key alone.
#[test]
fn keygen_writes_a_private_file_once() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("key.txt");
    let path_c = CString::new(path.to_str().unwrap()).unwrap();
    let call = |identity: *mut *mut c_char, recipient: *mut *mut c_char| {
        let mut error = null_mut();
        // SAFETY: a NUL-terminated path, writable (or NULL) out-parameters.
        let status = unsafe {
            parcrypt_keygen(
                PARCRYPT_KEYGEN_POST_QUANTUM,
                path_c.as_ptr(),
                identity,
                recipient,
                &mut error,
            )
        };
        outcome(status, error)
    };
    let (mut identity, mut recipient) = (std::ptr::NonNull::dangling().as_ptr(), null_mut());
    call(&mut identity, &mut recipient).unwrap();
    assert!(identity.is_null());
    // SAFETY: a string from the library, freed once.
    let public = unsafe {
        let public = CStr::from_ptr(recipient).to_str().unwrap().to_owned();
        parcrypt_string_free(recipient);
        public
    };
    assert!(public.starts_with("age1pq1"));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&format!("# public key: {public}\n")));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let (status, message) = call(null_mut(), &mut recipient).unwrap_err();
    assert_eq!(status, ParcryptStatus::Io);
    assert!(message.contains("already exists"), "{message}");
    assert!(recipient.is_null());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    // Without a path the identity must have somewhere to go; unknown flags are refused.
    let mut error = null_mut();
    // SAFETY: NULL out-parameters are allowed to be checked.
    let status = unsafe { parcrypt_keygen(0, null(), null_mut(), &mut recipient, &mut error) };
    assert_eq!(
        outcome(status, error).unwrap_err().0,
        ParcryptStatus::NullPointer
    );
    // SAFETY: as above.
    let status = unsafe { parcrypt_keygen(2, null(), null_mut(), null_mut(), &mut error) };
    assert_eq!(
        outcome(status, error).unwrap_err().0,
        ParcryptStatus::InvalidArgument
    );
    // SAFETY: NULL is ignored.
    unsafe { parcrypt_string_free(null_mut()) };
}

#[test]
fn identity_files_are_read_through_the_library() {
    let folder = tempfile::tempdir().unwrap();
    let read = |path: &std::path::Path| {
        let path_c = CString::new(path.to_str().unwrap()).unwrap();
        let mut text = std::ptr::NonNull::dangling().as_ptr();
        let mut error = null_mut();
        // SAFETY: a NUL-terminated path, a writable out-parameter.
        let status = unsafe { parcrypt_read_identity_file(path_c.as_ptr(), &mut text, &mut error) };
        outcome(status, error)
            .map(|()| {
                // SAFETY: a string from the library, freed once.
                unsafe {
                    let owned = CStr::from_ptr(text).to_str().unwrap().to_owned();
                    parcrypt_string_free(text);
                    owned
                }
            })
            .inspect_err(|_| assert!(text.is_null()))
    };
    let path = folder.path().join("key.txt");
    parcrypt::age::write_identity_file(&path, false).unwrap();
    assert_eq!(
        read(&path).unwrap(),
        std::fs::read_to_string(&path).unwrap()
    );
    // A key that does not parse: BAD_KEY, and the message does not quote it.
    let bad = folder.path().join("bad.txt");
    std::fs::write(&bad, "AGE-SECRET-KEY-1NOTAKEYATALL\n").unwrap();
    let (status, message) = read(&bad).unwrap_err();
    assert_eq!(status, ParcryptStatus::BadKey, "{message}");
    assert!(!message.contains("NOTAKEY"), "{message}");
    // A missing file: IO.
    let (status, _) = read(&folder.path().join("missing.txt")).unwrap_err();
    assert_eq!(status, ParcryptStatus::Io);
    // NULL path and NULL out-parameter.
    let mut error = null_mut();
    let mut text = null_mut();
    // SAFETY: NULL arguments are checked.
    let status = unsafe { parcrypt_read_identity_file(null(), &mut text, &mut error) };
    assert_eq!(
        outcome(status, error).unwrap_err().0,
        ParcryptStatus::NullPointer
    );
}

/// A whole-file call with `secret` (text), `context` and `flags`: its outcome.
fn file_call_with_context(
    call: FileCall,
    engine: *const ParcryptEngine,
    [source, destination]: [&std::path::Path; 2],
    secret: &[u8],
    context: &[u8],
    flags: u32,
) -> Result<u64, (ParcryptStatus, String)> {
    let source = CString::new(source.to_str().unwrap()).unwrap();
    let destination = CString::new(destination.to_str().unwrap()).unwrap();
    let (mut bytes, mut error) = (u64::MAX, null_mut());
    // SAFETY: a live engine, NUL-terminated paths, byte strings for their lengths, outs.
    let status = unsafe {
        call(
            engine,
            source.as_ptr(),
            destination.as_ptr(),
            secret.as_ptr(),
            secret.len(),
            context.as_ptr(),
            context.len(),
            flags,
            &mut bytes,
            &mut error,
        )
    };
    outcome(status, error).map(|()| bytes)
}

const ARMOR_BEGIN: &[u8] = b"-----BEGIN AGE ENCRYPTED FILE-----";

/// age files through the C calls: X25519 and hybrid recipients from `parcrypt_keygen`,
/// binary and armored, at sizes around age's 64 KiB chunk, on one thread (`seq`) and on a
/// pool; each file opened by the C call without `PARCRYPT_FILE_AGE` (recognised by its
/// header) and by the library called directly, and a file the library wrote opened by C.
#[test]
fn age_files_round_trip_with_recipients() {
    let folder = tempfile::tempdir().unwrap();
    let at = |name: &str| folder.path().join(name);
    let (plain, sealed, opened) = (at("plain"), at("sealed.age"), at("opened"));
    let mut round_trips = 0;
    for backend in [c"seq", c"pool"] {
        let engine = engine(backend);
        for keygen_flags in [0, PARCRYPT_KEYGEN_POST_QUANTUM] {
            let (identity, recipient) = keygen_text(keygen_flags);
            let identities = parcrypt::age::parse_identities(identity.as_bytes()).unwrap();
            for armor in [0, PARCRYPT_FILE_ARMOR] {
                for size in [0usize, 1, 65_535, 65_536, 65_537, (1 << 20) + 3] {
                    let data: Vec<u8> = (0..size).map(|i| (i * 13 + size) as u8).collect();
                    std::fs::write(&plain, &data).unwrap();
                    let flags = PARCRYPT_FILE_AGE
                        | PARCRYPT_FILE_RECIPIENTS
                        | PARCRYPT_FILE_OVERWRITE
                        | armor;
                    let written = file_call(
                        parcrypt_encrypt_file,
                        engine,
                        [&plain, &sealed],
                        recipient.as_bytes(),
                        flags,
                    );
                    assert_eq!(written, Ok(size as u64), "{size}");
                    let file = std::fs::read(&sealed).unwrap();
                    assert!(parcrypt::age::is_age(&file));
                    assert_eq!(file.starts_with(ARMOR_BEGIN), armor != 0, "{size}");
                    assert_eq!(
                        file.starts_with(b"age-encryption.org/v1\n"),
                        armor == 0,
                        "{size}"
                    );
                    let back = file_call(
                        parcrypt_decrypt_file,
                        engine,
                        [&sealed, &opened],
                        identity.as_bytes(),
                        PARCRYPT_FILE_IDENTITIES | PARCRYPT_FILE_OVERWRITE,
                    );
                    assert_eq!(back, Ok(size as u64), "{size}");
                    assert_eq!(std::fs::read(&opened).unwrap(), data, "{size}");
                    // The library, called directly, reads what C wrote.
                    assert_eq!(
                        parcrypt::age::decrypt_to_vec(&file, &identities).unwrap(),
                        data
                    );
                    // And C reads what the library wrote.
                    let recipients = parcrypt::age::parse_recipients(recipient.as_bytes()).unwrap();
                    let library =
                        parcrypt::age::encrypt_to_vec(&recipients, armor != 0, &data).unwrap();
                    std::fs::write(at("library.age"), &library).unwrap();
                    let back = file_call(
                        parcrypt_decrypt_file,
                        engine,
                        [&at("library.age"), &opened],
                        identity.as_bytes(),
                        PARCRYPT_FILE_AGE | PARCRYPT_FILE_IDENTITIES | PARCRYPT_FILE_OVERWRITE,
                    );
                    assert_eq!(back, Ok(size as u64), "{size}");
                    assert_eq!(std::fs::read(&opened).unwrap(), data, "{size}");
                    round_trips += 1;
                }
            }
        }
        // SAFETY: a live engine, freed once.
        unsafe { parcrypt_engine_free(engine) };
    }
    assert_eq!(round_trips, 2 * 2 * 2 * 6);
}

/// age files to a passphrase (scrypt), binary and armored: each opens with the passphrase;
/// a wrong passphrase is a wrong key, the other kind of secret a bad key, an empty
/// passphrase refused; none leaves a destination.
#[test]
fn age_files_to_a_passphrase() {
    let folder = tempfile::tempdir().unwrap();
    let at = |name: &str| folder.path().join(name);
    let (plain, sealed, opened) = (at("plain"), at("sealed.age"), at("opened"));
    let engine = engine(c"pool");
    let (identity, recipient) = keygen_text(0);
    for (armor, size) in [(0, 65_537usize), (PARCRYPT_FILE_ARMOR, 1)] {
        let data: Vec<u8> = (0..size).map(|i| (i * 7 + 1) as u8).collect();
        std::fs::write(&plain, &data).unwrap();
        let flags = PARCRYPT_FILE_AGE | PARCRYPT_FILE_PASSPHRASE | PARCRYPT_FILE_OVERWRITE | armor;
        let written = file_call(
            parcrypt_encrypt_file,
            engine,
            [&plain, &sealed],
            b"correct horse battery staple",
            flags,
        );
        assert_eq!(written, Ok(size as u64));
        let file = std::fs::read(&sealed).unwrap();
        assert_eq!(file.starts_with(ARMOR_BEGIN), armor != 0);
        let decrypt = |secret: &[u8], flags| {
            file_call(
                parcrypt_decrypt_file,
                engine,
                [&sealed, &opened],
                secret,
                flags,
            )
        };
        for (secret, flags, status) in [
            (
                &b"correct horse battery stapler"[..],
                PARCRYPT_FILE_PASSPHRASE,
                ParcryptStatus::WrongKey,
            ),
            (
                identity.as_bytes(),
                PARCRYPT_FILE_IDENTITIES,
                ParcryptStatus::BadKey,
            ),
            (&[7u8; 16][..], 0, ParcryptStatus::BadKey),
            (b"", PARCRYPT_FILE_PASSPHRASE, ParcryptStatus::BadKey),
        ] {
            let (got, message) = decrypt(secret, flags).unwrap_err();
            assert_eq!(got, status, "{flags:#x}: {message}");
            assert!(
                !message.contains('\n') && !message.contains("horse"),
                "{message}"
            );
            assert!(!opened.exists(), "{flags:#x} left a destination");
        }
        assert_eq!(
            decrypt(b"correct horse battery staple", PARCRYPT_FILE_PASSPHRASE),
            Ok(size as u64)
        );
        assert_eq!(std::fs::read(&opened).unwrap(), data);
        std::fs::remove_file(&opened).unwrap();
    }
    // A passphrase for a file to recipients: a bad key, naming what it needs.
    file_call(
        parcrypt_encrypt_file,
        engine,
        [&plain, &sealed],
        recipient.as_bytes(),
        PARCRYPT_FILE_AGE | PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_OVERWRITE,
    )
    .unwrap();
    let (got, message) = file_call(
        parcrypt_decrypt_file,
        engine,
        [&sealed, &opened],
        b"a passphrase",
        PARCRYPT_FILE_PASSPHRASE,
    )
    .unwrap_err();
    assert_eq!(got, ParcryptStatus::BadKey, "{message}");
    assert!(message.contains("PARCRYPT_FILE_IDENTITIES"), "{message}");
    // An empty passphrase protects nothing.
    let (got, message) = file_call(
        parcrypt_encrypt_file,
        engine,
        [&plain, &at("never")],
        b"",
        PARCRYPT_FILE_AGE | PARCRYPT_FILE_PASSPHRASE,
    )
    .unwrap_err();
    assert_eq!(got, ParcryptStatus::BadKey, "{message}");
    assert!(!opened.exists() && !at("never").exists());
    // SAFETY: a live engine, freed once.
    unsafe { parcrypt_engine_free(engine) };
}

/// The age flags' misuse: each refused with its status and one line, nothing written; a
/// wrong identity and a damaged payload leave no destination.
#[test]
fn age_flags_refuse_misuse() {
    let folder = tempfile::tempdir().unwrap();
    let at = |name: &str| folder.path().join(name);
    let (plain, sealed, never) = (at("plain"), at("sealed.age"), at("never"));
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 241) as u8).collect();
    std::fs::write(&plain, &data).unwrap();
    let engine = engine(c"pool");
    let (identity, recipient) = keygen_text(0);
    let invalid = ParcryptStatus::InvalidArgument;
    let key = [9u8; 16];
    let cases: [(&[u8], &[u8], u32, &str); 6] = [
        (&key, b"", PARCRYPT_FILE_AGE, "raw key"),
        (
            &key,
            b"",
            PARCRYPT_FILE_AGE | PARCRYPT_FILE_COBBLESTONE,
            "COBBLESTONE",
        ),
        (
            recipient.as_bytes(),
            b"",
            PARCRYPT_FILE_AGE | PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_COBBLESTONE,
            "COBBLESTONE",
        ),
        (
            recipient.as_bytes(),
            b"",
            PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_ARMOR,
            "needs PARCRYPT_FILE_AGE",
        ),
        (&key, b"", PARCRYPT_FILE_ARMOR, "needs PARCRYPT_FILE_AGE"),
        (
            recipient.as_bytes(),
            b"ctx",
            PARCRYPT_FILE_AGE | PARCRYPT_FILE_RECIPIENTS,
            "context",
        ),
    ];
    for (secret, context, flags, words) in cases {
        let (got, message) = file_call_with_context(
            parcrypt_encrypt_file,
            engine,
            [&plain, &never],
            secret,
            context,
            flags,
        )
        .unwrap_err();
        assert_eq!(got, invalid, "{flags:#x}: {message}");
        assert!(
            message.contains(words) && !message.contains('\n'),
            "{message}"
        );
        assert!(!never.exists());
    }
    file_call(
        parcrypt_encrypt_file,
        engine,
        [&plain, &sealed],
        recipient.as_bytes(),
        PARCRYPT_FILE_AGE | PARCRYPT_FILE_RECIPIENTS,
    )
    .unwrap();
    // To decrypt: a key (with the flag, or recognised by the header), a context, the flag
    // on a parcrypt file, the streaming encryptor and the seekable decryptor.
    let decrypt = |source: &std::path::Path, secret: &[u8], context: &[u8], flags| {
        file_call_with_context(
            parcrypt_decrypt_file,
            engine,
            [source, &never],
            secret,
            context,
            flags,
        )
    };
    for (secret, context, flags, status) in [
        (&key[..], &b""[..], PARCRYPT_FILE_AGE, invalid),
        (&key[..], b"", 0, ParcryptStatus::BadKey),
        (
            identity.as_bytes(),
            b"ctx",
            PARCRYPT_FILE_IDENTITIES,
            invalid,
        ),
        (
            identity.as_bytes(),
            b"ctx",
            PARCRYPT_FILE_AGE | PARCRYPT_FILE_IDENTITIES,
            invalid,
        ),
    ] {
        let (got, message) = decrypt(&sealed, secret, context, flags).unwrap_err();
        assert_eq!(got, status, "{flags:#x}: {message}");
        assert!(!message.contains('\n'), "{message}");
        assert!(!never.exists());
    }
    let parcrypt_file = at("sealed.parcrypt");
    file_call(
        parcrypt_encrypt_file,
        engine,
        [&plain, &parcrypt_file],
        &key,
        0,
    )
    .unwrap();
    let (got, message) = decrypt(
        &parcrypt_file,
        identity.as_bytes(),
        b"",
        PARCRYPT_FILE_AGE | PARCRYPT_FILE_IDENTITIES,
    )
    .unwrap_err();
    assert_eq!(got, ParcryptStatus::BadFormat, "{message}");
    let never_c = CString::new(never.to_str().unwrap()).unwrap();
    let (got, message) = made(|handle, error| {
        // SAFETY: a live engine, a NUL-terminated path, text for its length, outs.
        unsafe {
            parcrypt_file_encryptor_new(
                engine,
                never_c.as_ptr(),
                recipient.as_ptr(),
                recipient.len(),
                null(),
                0,
                PARCRYPT_FILE_AGE | PARCRYPT_FILE_RECIPIENTS,
                handle,
                error,
            )
        }
    })
    .unwrap_err();
    assert_eq!(got, invalid, "{message}");
    assert!(message.contains("parcrypt_encrypt_file"), "{message}");
    let sealed_c = CString::new(sealed.to_str().unwrap()).unwrap();
    let (got, message) = made(|handle, error| {
        // SAFETY: as above.
        unsafe {
            parcrypt_file_decryptor_open(
                engine,
                sealed_c.as_ptr(),
                identity.as_ptr(),
                identity.len(),
                null(),
                0,
                PARCRYPT_FILE_IDENTITIES,
                handle,
                error,
            )
        }
    })
    .unwrap_err();
    assert_eq!(got, invalid, "{message}");
    assert!(message.contains("parcrypt_decrypt_file"), "{message}");
    // A wrong identity: found from the header, no destination.
    let (other, _) = keygen_text(0);
    let (got, message) =
        decrypt(&sealed, other.as_bytes(), b"", PARCRYPT_FILE_IDENTITIES).unwrap_err();
    assert_eq!(got, ParcryptStatus::WrongKey, "{message}");
    assert!(
        !message.contains(&other.lines().last().unwrap()[..24]),
        "{message}"
    );
    assert!(!never.exists());
    // A damaged payload (a byte of the second chunk, after the first's plaintext could
    // have been written) and a cut one: authentication fails, no destination.
    let file = std::fs::read(&sealed).unwrap();
    for damaged in [
        {
            let mut damaged = file.clone();
            let at = damaged.len() - 70_000;
            damaged[at] ^= 0x20;
            damaged
        },
        file[..file.len() - 100].to_vec(),
    ] {
        std::fs::write(at("damaged.age"), &damaged).unwrap();
        let (got, message) = decrypt(
            &at("damaged.age"),
            identity.as_bytes(),
            b"",
            PARCRYPT_FILE_IDENTITIES,
        )
        .unwrap_err();
        assert_eq!(got, ParcryptStatus::AuthenticationFailed, "{message}");
        assert!(!never.exists(), "a damaged age file left a destination");
    }
    assert_eq!(
        decrypt(&sealed, identity.as_bytes(), b"", PARCRYPT_FILE_IDENTITIES),
        Ok(data.len() as u64)
    );
    assert_eq!(std::fs::read(&never).unwrap(), data);
    // SAFETY: a live engine, freed once.
    unsafe { parcrypt_engine_free(engine) };
}
