//! Files in the parcrypt format (or bare Cobblestone), byte-compatible with
//! `parcrypt encrypt` and `parcrypt decrypt`: whole files, a random-access reader and a
//! writer. Outputs appear whole or not at all (the format crate's `OutputFile`).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use parcrypt::age;
use parcrypt::files::{decrypt_file_with as decrypt_path, encrypt_file_with as encrypt_path};
use parcrypt::files::{OutputFile, PipelineOptions};
use parcrypt::hazmat::stream::pipeline::read_full;
use parcrypt::secrets::checked_key;
use parcrypt::SecretBytes;
use parcrypt::{
    Decryptor, EncryptingWriter, Encryptor, Format, Secret, SeekableReader, Setup, Suite,
};
use parcrypt::{Identity, Recipient};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use zeroize::Zeroizing;

use crate::buffers::{key_bytes, Input, Output};
use crate::errors;
use crate::keys::{self, Direction};
use crate::options::{self, Options};

/// The secret of one call: the key (`key`, 16 or 32 bytes-like bytes; never a str), the
/// passphrase (str, UTF-8, or bytes), or public keys (`recipients` to encrypt, `identities`
/// to decrypt): exactly one of them.
pub(crate) struct Secrets {
    key: Option<SecretBytes>,
    passphrase: Option<SecretBytes>,
    recipients: Vec<Recipient>,
    identities: Vec<Identity>,
}

/// The error for `identities=` given to an encryption.
fn identities_to_encrypt() -> PyErr {
    PyValueError::new_err(
        "identities decrypt: to encrypt to their owners give recipients=[...] (parcrypt.recipient_of(identity) gives an identity's recipient)",
    )
}

/// The error for `recipients=` given to a decryption.
fn recipients_to_decrypt() -> PyErr {
    PyValueError::new_err(
        "recipients encrypt: to decrypt give identities=[...] (identity files, or AGE-SECRET-KEY-... text)",
    )
}

/// A passphrase as bytes (a str as UTF-8), in memory wiped when dropped.
fn passphrase_bytes(passphrase: &Bound<'_, PyAny>) -> PyResult<SecretBytes> {
    Ok(Zeroizing::new(match passphrase.cast::<PyString>() {
        Ok(text) => text.to_str()?.as_bytes().to_vec(),
        Err(_) => Input::get(passphrase)?.bytes().to_vec(),
    }))
}

impl Secrets {
    /// The secret of `options` for a call going `direction`; an identity file others can
    /// read warns (`stacklevel` as [`errors::warn`]'s).
    pub(crate) fn get(
        py: Python<'_>,
        options: &Options<'_>,
        direction: Direction,
        stacklevel: i32,
    ) -> PyResult<Self> {
        let (public, name) = match direction {
            Direction::Encrypt if options.identities.is_some() => {
                return Err(identities_to_encrypt())
            }
            Direction::Decrypt if options.recipients.is_some() => {
                return Err(recipients_to_decrypt())
            }
            Direction::Encrypt => (options.recipients.as_ref(), "recipients"),
            Direction::Decrypt => (options.identities.as_ref(), "identities"),
        };
        let given = [
            options.key.is_some(),
            options.passphrase.is_some(),
            public.is_some(),
        ];
        match given.iter().filter(|given| **given).count() {
            0 => {
                return Err(PyValueError::new_err(format!(
                    "give a key, a passphrase or {name} (exactly one)"
                )))
            }
            1 => {}
            _ => {
                return Err(PyValueError::new_err(format!(
                    "give a key, a passphrase or {name}: exactly one, not several"
                )))
            }
        }
        let key = options
            .key
            .as_ref()
            .map(|key| -> PyResult<SecretBytes> {
                checked_key(key_bytes("key", key)?)
                    .map_err(|error| PyValueError::new_err(error.to_string()))
            })
            .transpose()?;
        let passphrase = options
            .passphrase
            .as_ref()
            .map(passphrase_bytes)
            .transpose()?;
        let (mut recipients, mut identities) = (Vec::new(), Vec::new());
        if let Some(public) = public {
            match direction {
                Direction::Encrypt => recipients = keys::recipients(public)?,
                Direction::Decrypt => identities = keys::identities(py, public, stacklevel)?,
            }
        }
        Ok(Secrets {
            key,
            passphrase,
            recipients,
            identities,
        })
    }

    pub(crate) fn secret(&self) -> Secret<'_> {
        match (&self.key, &self.passphrase) {
            (Some(key), _) => Secret::Key(key),
            (None, Some(passphrase)) => Secret::Passphrase(passphrase),
            (None, None) if !self.recipients.is_empty() => Secret::Recipients(&self.recipients),
            (None, None) => Secret::Identities(&self.identities),
        }
    }

    /// Warns (`parcrypt.ParcryptWarning`) about every weakness of a new message set up as
    /// `setup` under this secret, as `parcrypt encrypt` does (issue 31 finding 7): a short
    /// passphrase, cheap key derivation. `stacklevel` as [`errors::warn`]'s.
    pub(crate) fn warn(&self, py: Python<'_>, setup: &Setup<'_>, stacklevel: i32) -> PyResult<()> {
        for weakness in setup.warnings(self.secret()) {
            errors::warn(py, &weakness, stacklevel)?;
        }
        Ok(())
    }

    /// The setup of a new message under this secret in `format` (a name), with `context`
    /// bound into its key derivation; the default argon2id cost.
    pub(crate) fn setup<'a>(
        &self,
        format: &str,
        context: Option<&'a Input>,
    ) -> PyResult<Setup<'a>> {
        Ok(Setup {
            format: parse_format(format)?,
            suite: self.suite()?,
            context: context.map_or(&[][..], Input::bytes),
            ..Setup::default()
        })
    }

    /// The suite a new file gets: the key's length decides (AES-128 for a passphrase or
    /// recipients, as `parcrypt encrypt` without `--cipher`).
    pub(crate) fn suite(&self) -> PyResult<Suite> {
        match &self.key {
            Some(key) => Suite::for_key_length(key.len()).map_err(errors::format),
            None => Ok(Suite::Cobblestone128),
        }
    }
}

pub(crate) fn parse_format(name: &str) -> PyResult<Format> {
    if name == AGE {
        return Err(PyValueError::new_err(
            "format=\"age\" is for encrypt_file, decrypt_file and open: an age file is not planned in parts",
        ));
    }
    name.parse().map_err(PyValueError::new_err)
}

/// The name of age v1 files among the formats.
const AGE: &str = "age";

/// Whether `src` is to be read as an age file: `format="age"`, or the parcrypt default and a
/// regular file that starts as an age file does (binary or armored), as `parcrypt decrypt`
/// recognises one.
pub(crate) fn reads_as_age(format: &str, src: &Path) -> bool {
    match format {
        AGE => true,
        // A file that cannot be read is left to the format path, which says why.
        "parcrypt" => age::is_age_file(src).unwrap_or(false),
        _ => false,
    }
}

/// Whether `start`, a file's first bytes (2 KiB are plenty), begins an age file, binary or
/// armored (`parcrypt.open` asks it of an object in a store before choosing its reader).
#[pyfunction]
pub fn is_age(start: &[u8]) -> bool {
    age::is_age(start)
}

/// Runs the whole-file age call `work` with the GIL released, its payload on `threads`
/// ([`Options::age_threads`]).
fn on_threads(
    py: Python<'_>,
    threads: Option<usize>,
    work: impl FnOnce() -> parcrypt::Result<u64> + Send,
) -> PyResult<u64> {
    py.detach(|| age::on_threads(threads, work))
        .map_err(|error| errors::age(error, ""))?
        .map_err(errors::any)
}

/// The recipients of a new age file: `recipients=`, or `passphrase=` (scrypt) alone.
fn age_recipients(
    py: Python<'_>,
    options: &Options<'_>,
    stacklevel: i32,
) -> PyResult<Vec<Recipient>> {
    if options.key.is_some() {
        return Err(PyValueError::new_err(
            "an age file is encrypted to recipients or a passphrase, not a key",
        ));
    }
    if options.identities.is_some() {
        return Err(identities_to_encrypt());
    }
    if options.context.is_some() {
        return Err(PyValueError::new_err(
            "context is not part of the age format",
        ));
    }
    match (&options.recipients, &options.passphrase) {
        (Some(recipients), None) => keys::recipients(recipients),
        (None, Some(passphrase)) => {
            let passphrase = passphrase_bytes(passphrase)?;
            if let Some(weakness) = parcrypt::secrets::passphrase_weakness(&passphrase) {
                errors::warn(py, &weakness, stacklevel)?;
            }
            let passphrase = age::Passphrase::new(passphrase.to_vec());
            Ok(vec![Recipient::from(age::ScryptRecipient::new(passphrase))])
        }
        (Some(_), Some(_)) => Err(PyValueError::new_err(
            "give recipients or a passphrase (exactly one): a passphrase must be an age file's only recipient",
        )),
        (None, None) => Err(PyValueError::new_err(
            "an age file needs recipients or a passphrase (exactly one)",
        )),
    }
}

/// The identities that open the age file `src`: the passphrase of a passphrase (scrypt)
/// file, else `identities=`.
fn age_identities(
    py: Python<'_>,
    options: &Options<'_>,
    src: &Path,
    stacklevel: i32,
) -> PyResult<Vec<Identity>> {
    if options.key.is_some() {
        return Err(PyValueError::new_err(
            "this is an age file: give identities=[...] (or the passphrase of a passphrase file), not a key",
        ));
    }
    if options.recipients.is_some() {
        return Err(recipients_to_decrypt());
    }
    if options.context.is_some() {
        return Err(PyValueError::new_err(
            "context is not part of the age format",
        ));
    }
    if options.armor {
        return Err(PyValueError::new_err(
            "armor is for writing age files: an armored one is recognised when read",
        ));
    }
    let input = parcrypt::files::open_input(src).map_err(errors::format)?;
    let passphrase_file = py
        .detach(|| age::Decryptor::new(input).map(|header| header.is_passphrase()))
        .map_err(|error| errors::age(error, ""))?;
    match (passphrase_file, &options.identities, &options.passphrase) {
        (_, Some(_), Some(_)) => Err(PyValueError::new_err(
            "give identities or a passphrase (exactly one)",
        )),
        (true, None, Some(passphrase)) => {
            let passphrase = age::Passphrase::new(passphrase_bytes(passphrase)?.to_vec());
            Ok(vec![Identity::from(age::ScryptIdentity::new(passphrase))])
        }
        (true, _, None) => Err(PyValueError::new_err(
            "this age file is encrypted with a passphrase: give passphrase=",
        )),
        (false, Some(identities), None) => keys::identities(py, identities, stacklevel),
        (false, None, _) => Err(PyValueError::new_err(
            "this age file is encrypted to recipients: give identities=[...]",
        )),
    }
}

/// Encrypts the file `src` into `dst` as `parcrypt encrypt` does; returns the plaintext
/// bytes. `dst` appears only once it is complete.
#[pyfunction]
#[pyo3(
    signature = (src, dst, **options),
    text_signature = "(src, dst, *, key=None, passphrase=None, recipients=None, backend=\"auto\", threads=None, overwrite=False, format=\"parcrypt\", context=None, armor=False)"
)]
pub fn encrypt_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<u64> {
    let options = Options::take("encrypt_file", options::FILE, options)?;
    if options.format == AGE {
        let recipients = age_recipients(py, &options, 3)?;
        let (armor, overwrite) = (options.armor, options.overwrite);
        let threads = options.age_threads()?;
        return on_threads(py, threads, || {
            age::encrypt_file(&src, &dst, &recipients, armor, overwrite)
        });
    }
    let (secrets, context) = options.secrets(py, Direction::Encrypt, 3)?;
    let setup = secrets.setup(&options.format, context.as_ref())?;
    // Called by parcrypt._file, called by parcrypt.encrypt_file (which takes URLs and file
    // objects too): the warning points at encrypt_file's caller.
    secrets.warn(py, &setup, 3)?;
    let runtime = options.runtime()?;
    let pipeline = pipeline_options(&options);
    py.detach(|| {
        let batcher = runtime.batcher.as_ref();
        encrypt_path(batcher, &setup, secrets.secret(), &src, &dst, &pipeline)
    })
    .map_err(errors::format)
}

/// Decrypts the file `src` into `dst` as `parcrypt decrypt` does; returns the plaintext
/// bytes. `dst` appears only once every chunk has authenticated.
#[pyfunction]
#[pyo3(
    signature = (src, dst, **options),
    text_signature = "(src, dst, *, key=None, passphrase=None, identities=None, backend=\"auto\", threads=None, overwrite=False, format=\"parcrypt\", context=None)"
)]
pub fn decrypt_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<u64> {
    let options = Options::take("decrypt_file", options::FILE, options)?;
    if reads_as_age(&options.format, &src) {
        let identities = age_identities(py, &options, &src, 3)?;
        let overwrite = options.overwrite;
        let threads = options.age_threads()?;
        return on_threads(py, threads, || {
            age::decrypt_file(&src, &dst, &identities, overwrite)
        });
    }
    let (secrets, context) = options.secrets(py, Direction::Decrypt, 3)?;
    let format = parse_format(&options.format)?;
    let runtime = options.runtime()?;
    let pipeline = pipeline_options(&options);
    let context = context.as_ref().map_or(&[][..], Input::bytes);
    py.detach(|| {
        let batcher = runtime.batcher.as_ref();
        decrypt_path(
            batcher,
            format,
            secrets.secret(),
            context,
            &src,
            &dst,
            &pipeline,
        )
    })
    .map_err(errors::format)
}

/// The whole-file pipeline's options: only `overwrite` is Python's to choose.
fn pipeline_options(options: &Options<'_>) -> PipelineOptions<'static> {
    PipelineOptions {
        overwrite: options.overwrite,
        ..PipelineOptions::default()
    }
}

/// A reader's or writer's state behind its lock, `None` once closed.
///
/// The lock is only ever taken with the GIL released (inside `py.detach`), and let go
/// before the GIL is taken back: a thread holding the GIL never waits on it, so threads
/// sharing one handle take turns instead of deadlocking (issue 31 finding 6). A panic while
/// it was held leaves the state as it was; the next call goes on with it.
struct Handle<T>(Mutex<Option<T>>);

impl<T: Send> Handle<T> {
    fn new(open: T) -> Self {
        Handle(Mutex::new(Some(open)))
    }

    fn lock(&self) -> MutexGuard<'_, Option<T>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `work` on the open state with the GIL released and the lock held.
    fn with<R: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce(&mut T) -> Result<R, Failed> + Send,
    ) -> PyResult<R> {
        py.detach(|| work(self.lock().as_mut().ok_or(Failed::Closed)?))
            .map_err(PyErr::from)
    }

    /// Closes: takes the state out under the lock and hands it to `finish` after the lock is
    /// let go (closing a file may take a moment), with the GIL released. `None` when it was
    /// closed already.
    fn close<R: Send>(&self, py: Python<'_>, finish: impl FnOnce(T) -> R + Send) -> Option<R> {
        py.detach(|| {
            let open = self.lock().take();
            open.map(finish)
        })
    }

    /// Whether it is closed.
    fn closed(&self, py: Python<'_>) -> bool {
        py.detach(|| self.lock().is_none())
    }
}

/// Why a reader or writer call failed, made into a Python exception once the GIL is back.
enum Failed {
    Closed,
    Io(std::io::Error),
    Format(parcrypt::errors::FormatError),
}

impl From<Failed> for PyErr {
    fn from(failed: Failed) -> PyErr {
        match failed {
            Failed::Closed => PyValueError::new_err("I/O operation on closed file"),
            Failed::Io(error) => errors::io(error),
            Failed::Format(error) => errors::format(error),
        }
    }
}

/// Runs `work` (a call of an age reader or writer) on the handle's threads, kept for its
/// life (`age::Threads`; every core when none were asked for). For a parcrypt file's reader
/// or writer they are every core, unused: its engine has its own.
fn age_call<R: Send>(
    threads: &age::Threads,
    work: impl FnOnce() -> Result<R, Failed> + Send,
) -> Result<R, Failed> {
    threads.install(work)
}

/// Random access to an encrypted file's plaintext: every byte handed out has authenticated.
/// Threads may share one: their calls take turns (see [`Handle`]).
#[pyclass(module = "parcrypt", frozen)]
pub struct Reader {
    inner: Handle<Plaintext>,
    /// The threads an age file's payload is opened on ([`age_call`]).
    threads: age::Threads,
}

impl Reader {
    /// Runs `work` on the open reader with the GIL released, on the reader's threads.
    fn with<R: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce(&mut Plaintext) -> Result<R, Failed> + Send,
    ) -> PyResult<R> {
        let threads = &self.threads;
        self.inner
            .with(py, |reader| age_call(threads, || work(reader)))
    }
}

/// The reader behind a [`Reader`]: a parcrypt (or Cobblestone) file's, or a binary age
/// file's.
enum Plaintext {
    Parcrypt(SeekableReader<'static, File>),
    Age(age::SeekableReader<File>),
}

impl Plaintext {
    /// The plaintext's length (authenticated).
    fn plaintext_len(&mut self) -> Result<u64, parcrypt::errors::FormatError> {
        match self {
            Plaintext::Parcrypt(reader) => reader.plaintext_len(),
            Plaintext::Age(reader) => Ok(reader.plaintext_len()),
        }
    }
}

impl Read for Plaintext {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Plaintext::Parcrypt(reader) => reader.read(buffer),
            Plaintext::Age(reader) => reader.read(buffer),
        }
    }
}

impl Seek for Plaintext {
    fn seek(&mut self, position: SeekFrom) -> std::io::Result<u64> {
        match self {
            Plaintext::Parcrypt(reader) => reader.seek(position),
            Plaintext::Age(reader) => reader.seek(position),
        }
    }
}

/// Opens `path` for reading its plaintext (`parcrypt.open(path, "rb")`).
#[pyfunction]
#[pyo3(signature = (path, **options))]
pub fn open_reader(
    py: Python<'_>,
    path: PathBuf,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Reader> {
    let options = Options::take("open_reader", options::READER, options)?;
    if reads_as_age(&options.format, &path) {
        // A GPU backend does not apply; the payload is opened on `threads` (every core when
        // none), one for `seq`, as decrypt_file does.
        let threads = options.age_pool()?;
        // Called by parcrypt.open: a warning points at its caller.
        let identities = age_identities(py, &options, &path, 2)?;
        let input = parcrypt::files::open_input(&path).map_err(errors::format)?;
        // Made on its threads: the reader sizes its batches for the pool it starts on.
        let reader = py
            .detach(|| threads.install(|| age::SeekableReader::new(input, &identities)))
            .map_err(|error| errors::age(error, ""))?;
        return Ok(Reader {
            inner: Handle::new(Plaintext::Age(reader)),
            threads,
        });
    }
    let (secrets, context) = options.secrets(py, Direction::Decrypt, 2)?;
    let format = parse_format(&options.format)?;
    let runtime = options.runtime()?;
    let input = parcrypt::files::open_input(&path).map_err(errors::format)?;
    let context = context.as_ref().map_or(&[][..], Input::bytes);
    let reader = py
        .detach(|| {
            Decryptor::new(format, input)?
                .unlock(secrets.secret(), context)?
                .seekable(runtime.batcher.as_ref())
        })
        .map_err(errors::format)?;
    Ok(Reader {
        inner: Handle::new(Plaintext::Parcrypt(reader)),
        threads: age::Threads::default(),
    })
}

#[pymethods]
impl Reader {
    /// Reads into the writable buffer `buffer`; returns the bytes read (0 at the end).
    fn readinto(&self, py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        let mut output = Output::get(buffer)?;
        let target = output.bytes_mut();
        self.with(py, |reader| read_full(reader, target).map_err(Failed::Io))
    }

    /// Reads up to `size` bytes (all the rest for a negative `size`); fewer only at the end.
    #[pyo3(signature = (size=-1))]
    fn read<'py>(&self, py: Python<'py>, size: Option<i64>) -> PyResult<Bound<'py, PyBytes>> {
        let wanted = match size {
            Some(size) if size >= 0 => Some(
                usize::try_from(size).map_err(|_| PyValueError::new_err("size is too large"))?,
            ),
            _ => None,
        };
        let bytes = self.with(py, |reader| {
            let Some(wanted) = wanted else {
                let mut all = Vec::new();
                reader.read_to_end(&mut all).map_err(Failed::Io)?;
                return Ok(all);
            };
            // No more than what is left: a huge `size` must not allocate a huge buffer.
            let total = reader.plaintext_len().map_err(Failed::Format)?;
            let left = total.saturating_sub(reader.stream_position().map_err(Failed::Io)?);
            let wanted = wanted.min(usize::try_from(left).unwrap_or(usize::MAX));
            let mut buffer = vec![0u8; wanted];
            let got = read_full(reader, &mut buffer).map_err(Failed::Io)?;
            buffer.truncate(got);
            Ok(buffer)
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Moves to `offset` from the start (`whence` 0), the current place (1) or the end (2);
    /// returns the new place.
    #[pyo3(signature = (offset, whence=0))]
    fn seek(&self, py: Python<'_>, offset: i64, whence: i32) -> PyResult<u64> {
        let position =
            match whence {
                0 => SeekFrom::Start(u64::try_from(offset).map_err(|_| {
                    PyValueError::new_err(format!("negative seek position {offset}"))
                })?),
                1 => SeekFrom::Current(offset),
                2 => SeekFrom::End(offset),
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "whence must be 0, 1 or 2, not {whence}"
                    )))
                }
            };
        self.with(py, |reader| reader.seek(position).map_err(Failed::Io))
    }

    /// The current place.
    fn tell(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |reader| reader.stream_position().map_err(Failed::Io))
    }

    /// The plaintext's length (the final chunk authenticates first).
    fn size(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |reader| reader.plaintext_len().map_err(Failed::Format))
    }

    /// Closes the file; reading after it raises ValueError.
    fn close(&self, py: Python<'_>) {
        self.inner.close(py, drop);
    }

    /// Whether it is closed.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        self.inner.closed(py)
    }
}

/// What a writer holds while open: the sealing writer over a second handle of the output
/// file (they share the file's position), and the output to commit at the close.
struct Writing {
    writer: Sealing,
    output: OutputFile,
}

/// The sealing writer of a [`Writing`]: a parcrypt (or Cobblestone) file's or an age file's.
enum Sealing {
    Parcrypt(EncryptingWriter<'static, File>),
    Age(age::Encryptor<File>),
}

impl Sealing {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Sealing::Parcrypt(writer) => writer.write_all(bytes),
            Sealing::Age(writer) => writer.write_all(bytes),
        }
    }

    /// Seals the last chunk and writes everything out.
    fn finish(self) -> parcrypt::Result<()> {
        match self {
            Sealing::Parcrypt(writer) => drop(writer.finish()?),
            Sealing::Age(writer) => drop(writer.finish()?),
        }
        Ok(())
    }
}

/// Writes a new encrypted file; `close` seals the last chunk and makes the file appear.
/// Threads may share one: their writes take turns, each written whole (see [`Handle`]).
#[pyclass(module = "parcrypt", frozen)]
pub struct Writer {
    inner: Handle<Writing>,
    /// The threads an age file's payload is sealed on ([`age_call`]).
    threads: age::Threads,
}

/// Opens `path` for writing (`parcrypt.open(path, "wb")`).
#[pyfunction]
#[pyo3(signature = (path, **options))]
pub fn open_writer(
    py: Python<'_>,
    path: PathBuf,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Writer> {
    let options = Options::take("open_writer", options::FILE, options)?;
    let overwrite = options.overwrite;
    if options.format == AGE {
        // A GPU backend does not apply; the payload is sealed on `threads` (every core when
        // none), one for `seq`, as encrypt_file does.
        let threads = options.age_pool()?;
        // Called by parcrypt.open: a warning points at its caller.
        let recipients = age_recipients(py, &options, 2)?;
        let armor = options.armor;
        let writing = py
            .detach(|| -> parcrypt::Result<Writing> {
                let mut output = OutputFile::create(&path, None, overwrite)?;
                let handle = output
                    .file()
                    .try_clone()
                    .map_err(parcrypt::errors::FormatError::Write)?;
                // Made on its threads: the writer sizes its batches for the pool it starts on.
                let writer = threads.install(|| age::encrypt(&recipients, armor, handle))?;
                Ok(Writing {
                    writer: Sealing::Age(writer),
                    output,
                })
            })
            .map_err(errors::any)?;
        return Ok(Writer {
            inner: Handle::new(writing),
            threads,
        });
    }
    let (secrets, context) = options.secrets(py, Direction::Encrypt, 2)?;
    let setup = secrets.setup(&options.format, context.as_ref())?;
    // Called by parcrypt.open: the warning points at its caller.
    secrets.warn(py, &setup, 2)?;
    let runtime = options.runtime()?;
    let writing = py
        .detach(|| -> Result<Writing, parcrypt::errors::FormatError> {
            let mut output = OutputFile::create(&path, None, overwrite)?;
            let handle = output
                .file()
                .try_clone()
                .map_err(parcrypt::errors::FormatError::Write)?;
            let writer = Encryptor::new(&setup, secrets.secret())?
                .wrap_output(runtime.batcher.as_ref(), handle)?;
            Ok(Writing {
                writer: Sealing::Parcrypt(writer),
                output,
            })
        })
        .map_err(errors::format)?;
    Ok(Writer {
        inner: Handle::new(writing),
        threads: age::Threads::default(),
    })
}

#[pymethods]
impl Writer {
    /// Writes all of `data` (any bytes-like object); returns its length.
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        let input = Input::get(data)?;
        let bytes = input.bytes();
        let threads = &self.threads;
        self.inner.with(py, |writing| {
            age_call(threads, || {
                writing.writer.write_all(bytes).map_err(Failed::Io)
            })
        })?;
        Ok(bytes.len())
    }

    /// Seals the last chunk, writes the file to disk and gives it its name.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        // The sealing and the sync to disk run after the lock is let go, the sealing on the
        // writer's threads.
        let threads = &self.threads;
        self.inner
            .close(py, |Writing { writer, output }| -> parcrypt::Result<()> {
                threads.install(|| writer.finish())?;
                Ok(output.commit()?)
            })
            .unwrap_or(Ok(()))
            .map_err(errors::any)
    }

    /// Stops writing and leaves no file behind.
    fn abort(&self, py: Python<'_>) {
        self.inner.close(py, drop);
    }

    /// Whether it is closed (or aborted).
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        self.inner.closed(py)
    }
}
