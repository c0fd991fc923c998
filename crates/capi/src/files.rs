//! Encrypted files (`parcrypt encrypt|decrypt`'s format): whole files in one call, a
//! streaming encryptor that writes a file from plaintext given piece by piece, and a
//! seekable decryptor that reads a file's plaintext anywhere, releasing only bytes whose
//! chunk authenticated.

use std::ffi::c_char;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use parcrypt::age::{Identity, Recipient};
use parcrypt::errors::FormatError;
use parcrypt::files::{OutputFile, OutputPlan, PipelineOptions as FileOptions};
use parcrypt::hazmat::Direction;
use parcrypt::Engine;
use parcrypt::{
    batcher_for, Argon2Params, ChunkBatcher, Decryptor, EncryptingWriter, Encryptor, Format,
    KdfLimits, Secret, SeekableReader, Setup, Suite,
};
use self_cell::self_cell;

use crate::error::{warn, Failure, ParcryptError, ParcryptStatus};
use crate::{
    bytes, entry, free, handle, make, on, out_pointer, output, path, sized, write_if_wanted,
    Handle, ParcryptEngine,
};

/// File flag: overwrite a destination that exists (never the source itself), the option
/// every front end names `overwrite` (the command line's `--overwrite`).
pub const PARCRYPT_FILE_OVERWRITE: u32 = 1;
/// The former name of `PARCRYPT_FILE_OVERWRITE`, kept for the programs that use it.
pub const PARCRYPT_FILE_REPLACE: u32 = PARCRYPT_FILE_OVERWRITE;
/// File flag: the secret is a passphrase (stretched with argon2id, as the file's header
/// says), not a 16- or 32-byte key.
pub const PARCRYPT_FILE_PASSPHRASE: u32 = 2;
/// File flag: a bare Cobblestone message (no parcrypt header; needs a key), as
/// `--format cobblestone` reads and writes.
pub const PARCRYPT_FILE_COBBLESTONE: u32 = 4;
/// File flag, for encryption only: the secret is the text of a recipients file, as
/// `parcrypt encrypt -R FILE` reads it: one public key a line (`age1...` X25519 or
/// `age1pq1...` post-quantum hybrid, not mixed), `#` comments and empty lines ignored. The
/// file is encrypted to every one of them; any one's identity opens it.
pub const PARCRYPT_FILE_RECIPIENTS: u32 = 8;
/// File flag, for decryption only: the secret is the text of an identity file, as
/// `parcrypt keygen` and age-keygen write it (`AGE-SECRET-KEY-1...` or
/// `AGE-SECRET-KEY-PQ-1...` lines, `#` comments), as `parcrypt decrypt -i FILE` reads it;
/// the first identity that opens one of the file's recipients is used.
pub const PARCRYPT_FILE_IDENTITIES: u32 = 16;
/// File flag: an age v1 file ([age-encryption.org/v1](https://c2sp.org/age)), as
/// `parcrypt encrypt --format age` writes it, in place of parcrypt's format. To encrypt it
/// takes `PARCRYPT_FILE_RECIPIENTS` (X25519 or post-quantum hybrid recipients) or
/// `PARCRYPT_FILE_PASSPHRASE` (an scrypt file); never a raw key, a context or
/// `PARCRYPT_FILE_COBBLESTONE`. Decryption recognises an age file by its header without
/// it. Whole-file calls only; age files are sealed and opened on the CPU (the engine's
/// threads; a GPU engine is refused).
pub const PARCRYPT_FILE_AGE: u32 = 32;
/// File flag, with `PARCRYPT_FILE_AGE`: ASCII armor (PEM, `-----BEGIN AGE ENCRYPTED
/// FILE-----`) around the age file, as `parcrypt encrypt --format age -a` writes it.
/// Decryption recognises armor by itself.
pub const PARCRYPT_FILE_ARMOR: u32 = 64;

/// `parcrypt_file_decryptor_seek` origin: from the start.
pub const PARCRYPT_SEEK_SET: i32 = 0;
/// `parcrypt_file_decryptor_seek` origin: from the current position.
pub const PARCRYPT_SEEK_CUR: i32 = 1;
/// `parcrypt_file_decryptor_seek` origin: from the end (authenticates the final chunk).
pub const PARCRYPT_SEEK_END: i32 = 2;

/// The chunk batcher the command line takes for an engine (`batcher_for`).
type Batcher<'a> = Box<dyn ChunkBatcher + 'a>;

self_cell!(
    /// An engine's chunk batcher with the engine it borrows, so that a handle can hold it.
    struct EngineChunks {
        owner: Arc<Engine>,
        #[covariant]
        dependent: Batcher,
    }
);

impl EngineChunks {
    fn of(engine: &Arc<Engine>) -> EngineChunks {
        EngineChunks::new(engine.clone(), |engine| batcher_for(engine))
    }

    fn batcher(&self) -> &dyn ChunkBatcher {
        self.borrow_dependent().as_ref()
    }
}

type SealingWriter<'a> = Option<EncryptingWriter<'a, File>>;

self_cell!(
    /// An encrypting writer with the batcher it borrows.
    struct WriterCell {
        owner: EngineChunks,
        #[covariant]
        dependent: SealingWriter,
    }
);

type PlainReader<'a> = SeekableReader<'a, File>;

self_cell!(
    /// A seekable plaintext reader with the batcher it borrows.
    struct ReaderCell {
        owner: EngineChunks,
        #[covariant]
        dependent: PlainReader,
    }
);

/// The secret a file call was given, parsed: recipients and identities are parsed from the
/// caller's text by the library (`parcrypt::age::parse_recipients`, `parse_identities`),
/// whose identities wipe themselves when dropped.
enum Given<'a> {
    Key(&'a [u8]),
    Passphrase(&'a [u8]),
    Recipients(Vec<Recipient>),
    Identities(Vec<Identity>),
}

/// The file, the secret and the options every file call takes, checked.
struct FileSecret<'a> {
    given: Given<'a>,
    context: &'a [u8],
    format: Format,
    overwrite: bool,
    /// `PARCRYPT_FILE_AGE`, or (to decrypt) a source whose header says age.
    age: bool,
    /// `PARCRYPT_FILE_ARMOR`.
    armor: bool,
}

impl FileSecret<'_> {
    /// The secret as the library takes it.
    fn secret(&self) -> Secret<'_> {
        match &self.given {
            Given::Key(key) => Secret::Key(key),
            Given::Passphrase(passphrase) => Secret::Passphrase(passphrase),
            Given::Recipients(recipients) => Secret::Recipients(recipients),
            Given::Identities(identities) => Secret::Identities(identities),
        }
    }
}

/// What the flags say the secret is, checked against the direction: one kind of secret at
/// most (a key without any), recipients to encrypt, identities to decrypt, neither in a bare
/// Cobblestone message.
fn secret_kind(flags: u32, direction: Direction) -> Result<u32, Failure> {
    let known = PARCRYPT_FILE_OVERWRITE
        | PARCRYPT_FILE_PASSPHRASE
        | PARCRYPT_FILE_COBBLESTONE
        | PARCRYPT_FILE_RECIPIENTS
        | PARCRYPT_FILE_IDENTITIES
        | PARCRYPT_FILE_AGE
        | PARCRYPT_FILE_ARMOR;
    if flags & !known != 0 {
        return Err(Failure::invalid(format!("unknown file flags {flags:#x}")));
    }
    let kind =
        flags & (PARCRYPT_FILE_PASSPHRASE | PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_IDENTITIES);
    if kind.count_ones() > 1 {
        return Err(Failure::invalid(
            "PARCRYPT_FILE_PASSPHRASE, PARCRYPT_FILE_RECIPIENTS and PARCRYPT_FILE_IDENTITIES \
             exclude each other: give one kind of secret",
        ));
    }
    let cobblestone = flags & PARCRYPT_FILE_COBBLESTONE != 0;
    let age = flags & PARCRYPT_FILE_AGE != 0;
    if flags & PARCRYPT_FILE_ARMOR != 0 && !age {
        return Err(Failure::invalid(
            "PARCRYPT_FILE_ARMOR is ASCII armor around an age file: it needs PARCRYPT_FILE_AGE",
        ));
    }
    if age && cobblestone {
        return Err(Failure::invalid(
            "PARCRYPT_FILE_AGE and PARCRYPT_FILE_COBBLESTONE exclude each other: give one format",
        ));
    }
    if age && kind == 0 {
        return Err(Failure::invalid(match direction {
            Direction::Encrypt => {
                "an age file is encrypted to recipients (PARCRYPT_FILE_RECIPIENTS) or a \
                 passphrase (PARCRYPT_FILE_PASSPHRASE), not with a raw key"
            }
            Direction::Decrypt => {
                "an age file opens with identities (PARCRYPT_FILE_IDENTITIES) or a passphrase \
                 (PARCRYPT_FILE_PASSPHRASE), not with a raw key"
            }
        }));
    }
    match (kind, direction) {
        (PARCRYPT_FILE_RECIPIENTS, Direction::Decrypt) => Err(Failure::invalid(
            "recipients encrypt; to decrypt, give an identity file with PARCRYPT_FILE_IDENTITIES",
        )),
        (PARCRYPT_FILE_IDENTITIES, Direction::Encrypt) => Err(Failure::invalid(
            "identities decrypt; to encrypt, give their recipients with PARCRYPT_FILE_RECIPIENTS",
        )),
        (PARCRYPT_FILE_PASSPHRASE, _) if cobblestone => Err(Failure::invalid(
            "a bare Cobblestone message needs a key, not a passphrase",
        )),
        (PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_IDENTITIES, _) if cobblestone => {
            Err(Failure::invalid(
                "a bare Cobblestone message has no room for recipients: use the parcrypt format",
            ))
        }
        _ => Ok(kind),
    }
}

/// # Safety
/// `secret` and `context` are NULL or readable for their lengths during `'a`.
unsafe fn file_secret<'a>(
    direction: Direction,
    secret: *const u8,
    secret_length: usize,
    context: *const u8,
    context_length: usize,
    flags: u32,
) -> Result<FileSecret<'a>, Failure> {
    let kind = secret_kind(flags, direction)?;
    // SAFETY: both are NULL or readable for their lengths (this function's contract).
    let (secret, context) = unsafe {
        (
            bytes(secret, secret_length, "secret")?,
            bytes(context, context_length, "context")?,
        )
    };
    let given = match kind {
        PARCRYPT_FILE_PASSPHRASE => Given::Passphrase(secret),
        PARCRYPT_FILE_RECIPIENTS => Given::Recipients(parcrypt::age::parse_recipients(secret)?),
        PARCRYPT_FILE_IDENTITIES => Given::Identities(parcrypt::age::parse_identities(secret)?),
        _ => Given::Key(secret),
    };
    let format = if flags & PARCRYPT_FILE_COBBLESTONE != 0 {
        Format::Cobblestone
    } else {
        Format::Parcrypt
    };
    let file = FileSecret {
        given,
        context,
        format,
        overwrite: flags & PARCRYPT_FILE_OVERWRITE != 0,
        age: flags & PARCRYPT_FILE_AGE != 0,
        armor: flags & PARCRYPT_FILE_ARMOR != 0,
    };
    if file.age {
        file.check_age()?;
    }
    Ok(file)
}

/// What every call that opens a file checks first: the engine, the file's name (`path`,
/// with its parameter's name), then the secret, the context and the flags (a pointer with
/// its length each), the flags against `direction`.
///
/// # Safety
/// `engine` is NULL or live, `path` NULL or NUL-terminated, `secret` and `context` NULL or
/// readable for their lengths, during `'a`.
unsafe fn file_arguments<'a>(
    direction: Direction,
    engine: *const ParcryptEngine,
    path: (*const c_char, &str),
    secret: (*const u8, usize),
    context: (*const u8, usize),
    flags: u32,
) -> Result<(&'a Arc<Engine>, PathBuf, FileSecret<'a>), Failure> {
    // SAFETY: every pointer meets this function's contract.
    let (engine, path, file) = unsafe {
        (
            handle(engine)?,
            crate::path(path.0, path.1)?,
            file_secret(direction, secret.0, secret.1, context.0, context.1, flags)?,
        )
    };
    Ok((&engine.engine, path, file))
}

/// How a new message is set up: AES-128 for a passphrase, recipients or a 16-byte key,
/// AES-256 for a 32-byte key, parcrypt's default argon2id costs (as `parcrypt encrypt`
/// does). What makes it weak (a short passphrase) goes to the warning callback, as the
/// command line prints it (issue 31 finding 7).
fn setup_for<'a>(file: &FileSecret<'a>) -> Result<Setup<'a>, Failure> {
    let suite = match file.given {
        Given::Key(key) => Suite::for_key_length(key.len())?,
        _ => Suite::Cobblestone128,
    };
    let setup = Setup {
        format: file.format,
        suite,
        context: file.context,
        argon2: Argon2Params::DEFAULT,
    };
    for weakness in setup.warnings(file.secret()) {
        warn(&weakness);
    }
    Ok(setup)
}

fn file_options(overwrite: bool) -> FileOptions<'static> {
    FileOptions {
        overwrite,
        kdf_limits: KdfLimits::DEFAULT,
        ..FileOptions::default()
    }
}

/// Encrypts the file `source` into `destination`, as `parcrypt encrypt` does, through the
/// streaming pipeline on `engine`. `secret`: a 16- or 32-byte key (AES-128 or AES-256); with
/// `PARCRYPT_FILE_PASSPHRASE` a passphrase; with `PARCRYPT_FILE_RECIPIENTS` the text of a
/// recipients file (`age1...` / `age1pq1...` public keys, one a line; AES-128 chunks under
/// a random file key wrapped for each). `context`: bytes bound into the key derivation
/// (NULL, 0 for none; decryption must give the same). `flags`: `PARCRYPT_FILE_OVERWRITE`,
/// `PARCRYPT_FILE_COBBLESTONE` and at most one of `PARCRYPT_FILE_PASSPHRASE` and
/// `PARCRYPT_FILE_RECIPIENTS` (`PARCRYPT_FILE_IDENTITIES`, two kinds of secret, or
/// recipients in a Cobblestone message are `PARCRYPT_STATUS_INVALID_ARGUMENT`; a recipient
/// that does not parse is `PARCRYPT_STATUS_BAD_KEY`, its message naming the line, never its
/// content). The destination is checked before the key is derived, and appears only once
/// the whole file is on disk. `*plaintext_bytes` (when not NULL) gets the bytes encrypted.
/// With `PARCRYPT_FILE_AGE` the file is an age v1 file to the recipients (or, with
/// `PARCRYPT_FILE_PASSPHRASE`, an scrypt file), armored with `PARCRYPT_FILE_ARMOR`; a raw
/// key, a context, `PARCRYPT_FILE_COBBLESTONE`, `PARCRYPT_FILE_ARMOR` without
/// `PARCRYPT_FILE_AGE` and a GPU engine are `PARCRYPT_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `engine` is NULL or live; `source` and `destination` are NULL or NUL-terminated;
/// `secret` and `context` are NULL or readable for their lengths; `plaintext_bytes` and
/// `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_encrypt_file(
    engine: *const ParcryptEngine,
    source: *const c_char,
    destination: *const c_char,
    secret: *const u8,
    secret_length: usize,
    context: *const u8,
    context_length: usize,
    flags: u32,
    plaintext_bytes: *mut u64,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let secret = (secret, secret_length);
    let context = (context, context_length);
    // SAFETY: the same contract as ours.
    unsafe {
        whole_file(
            Direction::Encrypt,
            engine,
            [source, destination],
            secret,
            context,
            flags,
            plaintext_bytes,
            error,
        )
    }
}

/// Decrypts the file `source` into `destination`, as `parcrypt decrypt` does. The
/// destination appears only once every chunk authenticated: a wrong key, a damaged or a
/// truncated file leaves nothing behind. Arguments as `parcrypt_encrypt_file`, except that
/// a file encrypted to recipients takes `PARCRYPT_FILE_IDENTITIES` and the text of an
/// identity file as its secret (`PARCRYPT_STATUS_WRONG_KEY` when none of its identities
/// opens the file), and `PARCRYPT_FILE_RECIPIENTS` is refused
/// (`PARCRYPT_STATUS_INVALID_ARGUMENT`). An age file (binary or armored) is recognised by
/// its header whatever the flags, as `parcrypt decrypt` does, and opens with
/// `PARCRYPT_FILE_IDENTITIES` (or `PARCRYPT_FILE_PASSPHRASE` for an scrypt file; the other
/// kind, or a key, is `PARCRYPT_STATUS_BAD_KEY`); no identity that opens it is
/// `PARCRYPT_STATUS_WRONG_KEY`, a damaged payload `PARCRYPT_STATUS_AUTHENTICATION_FAILED`,
/// and neither leaves a destination. A context or a GPU engine is refused for an age file.
///
/// # Safety
/// As `parcrypt_encrypt_file`.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_decrypt_file(
    engine: *const ParcryptEngine,
    source: *const c_char,
    destination: *const c_char,
    secret: *const u8,
    secret_length: usize,
    context: *const u8,
    context_length: usize,
    flags: u32,
    plaintext_bytes: *mut u64,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let secret = (secret, secret_length);
    let context = (context, context_length);
    // SAFETY: the same contract as ours.
    unsafe {
        whole_file(
            Direction::Decrypt,
            engine,
            [source, destination],
            secret,
            context,
            flags,
            plaintext_bytes,
            error,
        )
    }
}

/// A whole file through `engine`, as `parcrypt encrypt` or `parcrypt decrypt` runs it.
///
/// # Safety
/// The contract of `parcrypt_encrypt_file`, `paths` being `source` and `destination` and
/// `secret` and `context` each a pointer with its length.
#[allow(clippy::too_many_arguments)]
unsafe fn whole_file(
    direction: Direction,
    engine: *const ParcryptEngine,
    paths: [*const c_char; 2],
    secret: (*const u8, usize),
    context: (*const u8, usize),
    flags: u32,
    plaintext_bytes: *mut u64,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = || {
        // SAFETY: every pointer meets this function's contract.
        let ((engine, source, file), destination) = unsafe {
            (
                file_arguments(
                    direction,
                    engine,
                    (paths[0], "source"),
                    secret,
                    context,
                    flags,
                )?,
                path(paths[1], "destination")?,
            )
        };
        let mut file = file;
        if direction == Direction::Decrypt && !file.age {
            file.age = is_age_file(&source)?;
        }
        let bytes = if file.age {
            age_file(direction, engine, &source, &destination, &file)?
        } else {
            parcrypt_file(direction, engine, &source, &destination, &file)?
        };
        // SAFETY: `plaintext_bytes` is NULL or writable (this function's contract).
        unsafe { write_if_wanted(plaintext_bytes, bytes) };
        Ok(())
    };
    // SAFETY: `error` is NULL or writable (this function's contract).
    unsafe { entry(error, body) }
}

/// A whole file in parcrypt's format (or a bare Cobblestone message) through the engine's
/// streaming pipeline; returns the plaintext's length.
fn parcrypt_file(
    direction: Direction,
    engine: &Engine,
    source: &Path,
    destination: &Path,
    file: &FileSecret<'_>,
) -> Result<u64, Failure> {
    let batcher = batcher_for(engine);
    let options = file_options(file.overwrite);
    Ok(match direction {
        Direction::Encrypt => parcrypt::files::encrypt_file_with(
            batcher.as_ref(),
            &setup_for(file)?,
            file.secret(),
            source,
            destination,
            &options,
        )?,
        Direction::Decrypt => parcrypt::files::decrypt_file_with(
            batcher.as_ref(),
            file.format,
            file.secret(),
            file.context,
            source,
            destination,
            &options,
        )?,
    })
}

impl FileSecret<'_> {
    /// Refuses what an age file has no room for: a context, a raw key (a source recognised
    /// as age by its header may come with one).
    fn check_age(&self) -> Result<(), Failure> {
        if !self.context.is_empty() {
            return Err(Failure::invalid(
                "an age file has no context: give NULL, 0 with PARCRYPT_FILE_AGE or an age file",
            ));
        }
        if let Given::Key(_) = self.given {
            return Err(Failure::new(
                ParcryptStatus::BadKey,
                "this is an age file: give its identities (PARCRYPT_FILE_IDENTITIES) or its \
                 passphrase (PARCRYPT_FILE_PASSPHRASE), not a key",
            ));
        }
        Ok(())
    }
}

/// Whether the file at `source` is an age file (`parcrypt::age::is_age_file`).
fn is_age_file(source: &Path) -> Result<bool, Failure> {
    parcrypt::age::is_age_file(source).map_err(|error| FormatError::Read(error).into())
}

/// The threads an age job runs on for `engine`, as `parcrypt --backend B --threads N` runs
/// it (`parcrypt::age::threads_for`): a GPU engine is refused.
fn age_threads(engine: &Engine) -> Result<Option<usize>, Failure> {
    parcrypt::age::threads_for(engine.backend(), Some(engine.threads())).map_err(Into::into)
}

/// A whole age file through the library (`parcrypt::age::encrypt_file`, `decrypt_file`)
/// on the engine's threads; returns the plaintext's length. To encrypt: to the recipients,
/// or to the passphrase (scrypt, age's default work factor). To decrypt: the identities, or
/// the passphrase for an scrypt file (the work factor held to age's default limit); which
/// one the file needs is read from its header first, so the wrong kind gets its own message.
fn age_file(
    direction: Direction,
    engine: &Engine,
    source: &Path,
    destination: &Path,
    file: &FileSecret<'_>,
) -> Result<u64, Failure> {
    use parcrypt::age::{Passphrase, ScryptIdentity, ScryptRecipient};
    file.check_age()?;
    let threads = age_threads(engine)?;
    let passphrase = |passphrase: &[u8]| {
        if passphrase.is_empty() {
            return Err(Failure::new(
                ParcryptStatus::BadKey,
                "the passphrase is empty: an age file needs one to protect it",
            ));
        }
        Ok(Passphrase::new(passphrase.to_vec()))
    };
    let bytes = match direction {
        Direction::Encrypt => {
            let scrypt;
            let recipients: &[Recipient] = match &file.given {
                Given::Recipients(recipients) => recipients,
                Given::Passphrase(secret) => {
                    // A short passphrase goes to the warning callback, as in parcrypt's format.
                    if let Some(weakness) = parcrypt::secrets::passphrase_weakness(secret) {
                        warn(&weakness);
                    }
                    scrypt = [Recipient::from(ScryptRecipient::new(passphrase(secret)?))];
                    &scrypt
                }
                _ => {
                    return Err(Failure::invalid(
                        "an age file needs recipients or a passphrase",
                    ))
                }
            };
            parcrypt::age::on_threads(threads, || {
                parcrypt::age::encrypt_file(
                    source,
                    destination,
                    recipients,
                    file.armor,
                    file.overwrite,
                )
            })??
        }
        Direction::Decrypt => {
            let is_passphrase =
                parcrypt::age::Decryptor::new(parcrypt::files::open_input(source)?)?
                    .is_passphrase();
            let scrypt;
            let identities: &[Identity] =
                match (&file.given, is_passphrase) {
                    (Given::Identities(identities), false) => identities,
                    (Given::Passphrase(secret), true) => {
                        scrypt = [Identity::from(ScryptIdentity::new(passphrase(secret)?))];
                        &scrypt
                    }
                    (_, true) => {
                        return Err(Failure::new(
                            ParcryptStatus::BadKey,
                            "this age file is encrypted to a passphrase: give it with \
                         PARCRYPT_FILE_PASSPHRASE",
                        ))
                    }
                    (_, false) => return Err(Failure::new(
                        ParcryptStatus::BadKey,
                        "this age file is encrypted to recipients: give an identity file's text \
                         with PARCRYPT_FILE_IDENTITIES",
                    )),
                };
            parcrypt::age::on_threads(threads, || {
                parcrypt::age::decrypt_file(source, destination, identities, file.overwrite)
            })??
        }
    };
    Ok(bytes)
}

/// Writes an encrypted file from plaintext given piece by piece
/// (`parcrypt_file_encryptor_write`), sealed a batch of 16 KiB chunks at a time on the
/// engine. The file appears at its name only when `parcrypt_file_encryptor_finish`
/// succeeds; freed before that, or after a failure, it leaves nothing. Calls may come
/// from any thread; on one encryptor they take turns.
pub struct ParcryptFileEncryptor {
    state: Mutex<Writing>,
}

impl Handle for ParcryptFileEncryptor {
    const NAME: &'static str = "encryptor";
}

enum Writing {
    Open {
        cell: WriterCell,
        output: OutputFile,
    },
    Finished,
    Failed,
}

/// Starts an encrypted file at `destination` (checked now: an existing file without
/// `PARCRYPT_FILE_OVERWRITE`, a folder, a missing folder are refused). Secret, context and
/// flags as `parcrypt_encrypt_file` (recipients included).
///
/// # Safety
/// `engine` is NULL or live; `destination` is NULL or NUL-terminated; `secret` and
/// `context` are NULL or readable for their lengths; `encryptor` and `error` are NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_file_encryptor_new(
    engine: *const ParcryptEngine,
    destination: *const c_char,
    secret: *const u8,
    secret_length: usize,
    context: *const u8,
    context_length: usize,
    flags: u32,
    encryptor: *mut *mut ParcryptFileEncryptor,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = || {
        let (secret, context) = ((secret, secret_length), (context, context_length));
        // SAFETY: every pointer meets the contract above.
        let (engine, destination, file) = unsafe {
            file_arguments(
                Direction::Encrypt,
                engine,
                (destination, "destination"),
                secret,
                context,
                flags,
            )
        }?;
        if file.age {
            return Err(Failure::invalid(
                "the streaming encryptor writes parcrypt files: write an age file whole with \
                 parcrypt_encrypt_file and PARCRYPT_FILE_AGE",
            ));
        }
        let setup = setup_for(&file)?;
        // The destination is refused before the key derivation, as the command line does.
        let plan = OutputPlan::check(&destination, None, file.overwrite)?;
        let sealer = Encryptor::new(&setup, file.secret())?;
        let mut output = plan.open()?;
        let writer_file = output.file().try_clone().map_err(FormatError::Write)?;
        let cell = WriterCell::try_new(EngineChunks::of(engine), |chunks| {
            sealer.wrap_output(chunks.batcher(), writer_file).map(Some)
        })?;
        Ok(ParcryptFileEncryptor {
            state: Mutex::new(Writing::Open { cell, output }),
        })
    };
    // SAFETY: `encryptor` and `error` are NULL or writable (the contract above).
    unsafe { make(encryptor, error, body) }
}

fn lock<T>(mutex: &Mutex<T>) -> Result<MutexGuard<'_, T>, Failure> {
    mutex.lock().map_err(|_| {
        Failure::new(
            ParcryptStatus::State,
            "this handle failed inside the library earlier and cannot be used",
        )
    })
}

/// Encrypts `length` plaintext bytes at `data` into the file. A failure leaves the
/// encryptor failed: later calls fail too, and no file appears.
///
/// # Safety
/// `encryptor` is NULL or live; `data` is NULL or readable for `length` bytes; `error` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_file_encryptor_write(
    encryptor: *const ParcryptFileEncryptor,
    data: *const u8,
    length: usize,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = |encryptor: &ParcryptFileEncryptor| {
        // SAFETY: `data` is NULL or readable for `length` bytes (the contract above).
        let data = unsafe { bytes(data, length, "data") }?;
        let mut state = lock(&encryptor.state)?;
        let Writing::Open { cell, .. } = &mut *state else {
            return Err(not_open(&state));
        };
        let written = cell.with_dependent_mut(|_, writer| match writer {
            Some(writer) => writer.write_all(data).map_err(Failure::from),
            None => Err(Failure::new(
                ParcryptStatus::State,
                "the encryptor finished",
            )),
        });
        if written.is_err() {
            *state = Writing::Failed;
        }
        written
    };
    // SAFETY: `encryptor` is NULL or live, `error` NULL or writable (the contract above).
    unsafe { on(encryptor, error, body) }
}

fn not_open(state: &Writing) -> Failure {
    match state {
        Writing::Finished => Failure::new(
            ParcryptStatus::State,
            "the encrypted file is already finished",
        ),
        _ => Failure::new(
            ParcryptStatus::State,
            "an earlier call on this encryptor failed; its file is incomplete and was not made",
        ),
    }
}

/// Seals the final chunk, writes the file to disk and gives it its name. Only now does the
/// file exist.
///
/// # Safety
/// `encryptor` is NULL or live; `error` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_file_encryptor_finish(
    encryptor: *const ParcryptFileEncryptor,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = |encryptor: &ParcryptFileEncryptor| {
        let mut state = lock(&encryptor.state)?;
        let Writing::Open { .. } = &*state else {
            return Err(not_open(&state));
        };
        let Writing::Open { mut cell, output } = std::mem::replace(&mut *state, Writing::Failed)
        else {
            return Err(not_open(&Writing::Failed));
        };
        let sealed = cell.with_dependent_mut(|_, writer| match writer.take() {
            Some(writer) => writer.finish().map(drop).map_err(Failure::from),
            None => Err(Failure::new(
                ParcryptStatus::State,
                "the encryptor finished",
            )),
        });
        drop(cell);
        sealed?;
        output.commit()?;
        *state = Writing::Finished;
        Ok(())
    };
    // SAFETY: `encryptor` is NULL or live, `error` NULL or writable (the contract above).
    unsafe { on(encryptor, error, body) }
}

/// Frees an encryptor (NULL is ignored). Unless it finished, its file is not made.
///
/// # Safety
/// `encryptor` is NULL or an encryptor not freed before, with no other call on it running.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_file_encryptor_free(encryptor: *mut ParcryptFileEncryptor) {
    // SAFETY: the contract above is `free`'s.
    unsafe { free(encryptor) }
}

/// Reads an encrypted file's plaintext anywhere: a read opens and authenticates only the
/// chunks under it (sequential reads grow to whole batches), and no byte of a chunk that
/// failed is ever handed out. The length is trusted only once the final chunk
/// authenticated. Calls may come from any thread; on one decryptor they take turns.
pub struct ParcryptFileDecryptor {
    reader: Mutex<ReaderCell>,
}

impl Handle for ParcryptFileDecryptor {
    const NAME: &'static str = "decryptor";
}

/// Opens the encrypted file `source`: reads its header and checks the secret against its
/// key commitment (`PARCRYPT_STATUS_WRONG_KEY` otherwise) before any chunk is read. Secret,
/// context and flags as `parcrypt_decrypt_file` (identities for a file to recipients;
/// `PARCRYPT_FILE_OVERWRITE` is meaningless here and ignored). A passphrase file's key
/// derivation is held to parcrypt's default budget.
///
/// # Safety
/// `engine` is NULL or live; `source` is NULL or NUL-terminated; `secret` and `context`
/// are NULL or readable for their lengths; `decryptor` and `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_file_decryptor_open(
    engine: *const ParcryptEngine,
    source: *const c_char,
    secret: *const u8,
    secret_length: usize,
    context: *const u8,
    context_length: usize,
    flags: u32,
    decryptor: *mut *mut ParcryptFileDecryptor,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = || {
        let (secret, context) = ((secret, secret_length), (context, context_length));
        // SAFETY: every pointer meets the contract above.
        let (engine, source, file) = unsafe {
            file_arguments(
                Direction::Decrypt,
                engine,
                (source, "source"),
                secret,
                context,
                flags,
            )
        }?;
        if file.age || is_age_file(&source)? {
            return Err(Failure::invalid(
                "the seekable decryptor reads parcrypt files: decrypt an age file whole with \
                 parcrypt_decrypt_file",
            ));
        }
        let input = open(&source)?;
        let unlocked = Decryptor::new(file.format, input)?
            .kdf_limits(KdfLimits::DEFAULT)
            .unlock(file.secret(), file.context)?;
        let cell = ReaderCell::try_new(EngineChunks::of(engine), |chunks| {
            unlocked.seekable(chunks.batcher())
        })?;
        Ok(ParcryptFileDecryptor {
            reader: Mutex::new(cell),
        })
    };
    // SAFETY: `decryptor` and `error` are NULL or writable (the contract above).
    unsafe { make(decryptor, error, body) }
}

impl ParcryptFileDecryptor {
    /// Runs `read` on the plaintext reader; the calls on one decryptor take turns.
    fn reading<T>(
        &self,
        read: impl FnOnce(&mut PlainReader<'_>) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        let mut cell = lock(&self.reader)?;
        cell.with_dependent_mut(|_, reader| read(reader))
    }
}

fn open(source: &Path) -> Result<File, Failure> {
    let file = parcrypt::files::open_input(source)?;
    match file.metadata() {
        Ok(metadata) if metadata.is_file() => Ok(file),
        _ => Err(Failure::new(
            ParcryptStatus::Io,
            format!("'{}' is not a regular file", source.display()),
        )),
    }
}

/// Reads plaintext from the current position into `buffer` (`capacity` bytes), as much as
/// there is up to `capacity`; `*read` gets the bytes read, 0 only at the end. A damaged
/// or truncated file fails (`PARCRYPT_STATUS_AUTHENTICATION_FAILED`) once the authenticated
/// bytes before the damage were read; the buffer then holds no byte of the damaged chunk.
///
/// # Safety
/// `decryptor` is NULL or live; `buffer` is NULL or writable for `capacity` bytes and not
/// touched by others during the call; `read` and `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_file_decryptor_read(
    decryptor: *const ParcryptFileDecryptor,
    buffer: *mut u8,
    capacity: usize,
    read: *mut usize,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    // SAFETY: the same contract as ours, with no seek first.
    unsafe { read_from(decryptor, None, buffer, capacity, read, error) }
}

/// `parcrypt_file_decryptor_read` from plaintext offset `offset` (the position is left
/// after the bytes read).
///
/// # Safety
/// As `parcrypt_file_decryptor_read`.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_file_decryptor_read_at(
    decryptor: *const ParcryptFileDecryptor,
    offset: u64,
    buffer: *mut u8,
    capacity: usize,
    read: *mut usize,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    // SAFETY: the same contract as ours.
    unsafe { read_from(decryptor, Some(offset), buffer, capacity, read, error) }
}

/// # Safety
/// As `parcrypt_file_decryptor_read`.
unsafe fn read_from(
    decryptor: *const ParcryptFileDecryptor,
    offset: Option<u64>,
    buffer: *mut u8,
    capacity: usize,
    read: *mut usize,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = |decryptor: &ParcryptFileDecryptor| {
        // SAFETY: `buffer` is NULL or writable for `capacity` bytes, touched by nobody else
        // during the call (the contract).
        let buffer = unsafe { output(buffer, capacity, "buffer", "capacity") }?;
        decryptor.reading(|reader| {
            if let Some(offset) = offset {
                reader.seek(SeekFrom::Start(offset))?;
            }
            let mut filled = 0;
            while filled < buffer.len() {
                match reader.read(&mut buffer[filled..]) {
                    Ok(0) => break,
                    Ok(count) => filled += count,
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                    // The bytes before the failure authenticated: hand them out now, and
                    // the failure on the next call.
                    Err(_) if filled > 0 => break,
                    Err(error) => return Err(error.into()),
                }
            }
            Ok(filled)
        })
    };
    // SAFETY: `decryptor` is NULL or live; `read` and `error` are NULL or writable (this
    // function's contract).
    unsafe { sized(decryptor, read, "read", error, body) }
}

/// Moves the read position: `offset` from the start (`PARCRYPT_SEEK_SET`), the current
/// position (`PARCRYPT_SEEK_CUR`) or the end (`PARCRYPT_SEEK_END`, which authenticates
/// the final chunk). `*position` (when not NULL) gets the new position.
///
/// # Safety
/// `decryptor` is NULL or live; `position` and `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_file_decryptor_seek(
    decryptor: *const ParcryptFileDecryptor,
    offset: i64,
    whence: i32,
    position: *mut u64,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = |decryptor: &ParcryptFileDecryptor| {
        let from = match whence {
            PARCRYPT_SEEK_SET => SeekFrom::Start(u64::try_from(offset).map_err(|_| {
                Failure::invalid(format!("cannot seek to {offset}, before the start"))
            })?),
            PARCRYPT_SEEK_CUR => SeekFrom::Current(offset),
            PARCRYPT_SEEK_END => SeekFrom::End(offset),
            other => {
                return Err(Failure::invalid(format!(
                    "whence {other} is not PARCRYPT_SEEK_SET, _CUR or _END"
                )))
            }
        };
        let now = decryptor.reading(|reader| Ok(reader.seek(from)?))?;
        // SAFETY: `position` is NULL or writable (the contract above).
        unsafe { write_if_wanted(position, now) };
        Ok(())
    };
    // SAFETY: `decryptor` is NULL or live, `error` NULL or writable (the contract above).
    unsafe { on(decryptor, error, body) }
}

/// The plaintext's length, into `*length`; authenticates the final chunk first (a cut
/// file fails here rather than looking shorter).
///
/// # Safety
/// `decryptor` is NULL or live; `length` and `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_file_decryptor_length(
    decryptor: *const ParcryptFileDecryptor,
    length: *mut u64,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = |decryptor: &ParcryptFileDecryptor| {
        let out = out_pointer(length, "length")?;
        let bytes = decryptor.reading(|reader| Ok(reader.plaintext_len()?))?;
        // SAFETY: non-NULL and writable (the contract above).
        unsafe { out.write(bytes) };
        Ok(())
    };
    // SAFETY: `decryptor` is NULL or live, `error` NULL or writable (the contract above).
    unsafe { on(decryptor, error, body) }
}

/// Frees a decryptor (NULL is ignored) and closes its file.
///
/// # Safety
/// `decryptor` is NULL or a decryptor not freed before, with no other call on it running.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_file_decryptor_free(decryptor: *mut ParcryptFileDecryptor) {
    // SAFETY: the contract above is `free`'s.
    unsafe { free(decryptor) }
}
