//! age v1 files ([age-encryption.org/v1](https://c2sp.org/age)), read and written at
//! parcrypt's speed: the ChaCha20-Poly1305 STREAM payload is sealed and opened in batches of
//! 16 to 64 chunks (1 to 4 MiB, 8 chunks per thread) in parallel on every core, and
//! [`SeekableReader`] reads any range of a file by decrypting only the chunks under it.
//!
//! - Recipients and identities ([`Recipient`], [`Identity`]): X25519 (`age1...` /
//!   `AGE-SECRET-KEY-1...`), age 1.3's post-quantum hybrid ML-KEM-768 + X25519
//!   (`age1pq1...` / `AGE-SECRET-KEY-PQ-1...`) and scrypt passphrases; identity files in
//!   age-keygen's layout ([`parse_identities`], [`generate_identity_file`]) and recipients
//!   files ([`parse_recipients`]).
//! - Writing: [`encrypt`] returns an [`Encryptor`] (a `Write`; [`Encryptor::finish`] seals
//!   the final chunk), binary or ASCII-armored.
//! - Reading: [`Decryptor::new`] reads and checks the header (binary or armored, recognised by
//!   its first line), [`Decryptor::decrypt`] unwraps the file key with the identities, checks
//!   the header's MAC in constant time and returns a [`StreamReader`] that releases only
//!   authenticated chunks; [`StreamReader::decrypt_to`] writes them out batch by batch.
//!   [`decrypt_to_vec`] returns nothing unless every chunk authenticated.
//!
//! Every length in a header is bounded before it is buffered ([`header::MAX_LINE_BYTES`],
//! [`header::MAX_STANZAS`], [`header::MAX_BODY_BYTES`], [`header::MAX_HEADER_BYTES`]); scrypt
//! work factors above 2^22 are refused unless the identity raises its limit. Keys are wiped
//! when dropped and never printed by `Debug`. Every error is one line ([`Error`]).
//!
//! ```
//! use std::io::{Read, Write};
//! use parcrypt_age::{encrypt, Decryptor, Identity, X25519Identity};
//!
//! let identity = X25519Identity::generate();
//! let mut writer = encrypt(&[identity.to_public().into()], false, Vec::new())?;
//! writer.write_all(b"attack at dawn")?;
//! let file = writer.finish()?;
//!
//! let mut plaintext = Vec::new();
//! Decryptor::new(file.as_slice())?
//!     .decrypt(&[Identity::from(identity)])?
//!     .read_to_end(&mut plaintext)?;
//! assert_eq!(plaintext, b"attack at dawn");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod armor;
mod bech32;
mod error;
pub mod header;
mod hpke;
mod keys;
mod seekable;
pub mod stream;

use std::io::{self, BufRead, BufReader, Read, Write};

use zeroize::Zeroize;

pub use error::{Error, Result};
pub use header::{Header, Stanza};
pub use keys::{
    generate_identity_file, parse_identities, parse_recipients, FileKey, HybridIdentity,
    HybridRecipient, Identity, Passphrase, Recipient, ScryptIdentity, ScryptRecipient,
    X25519Identity, X25519Recipient, DEFAULT_MAX_SCRYPT_WORK_FACTOR, DEFAULT_SCRYPT_WORK_FACTOR,
    MAX_KEY_FILE_BYTES,
};
pub use seekable::SeekableReader;

use armor::{ArmorError, ArmorReader, ArmorWriter};
use stream::{PayloadKey, BATCH_CHUNKS, CHUNK_BYTES, NONCE_BYTES, SEALED_CHUNK_BYTES};

/// Where the payload's batches are sealed and opened: every core (rayon's global pool), or a
/// pool of its own, started once and kept for as long as this value lives (a reader or
/// writer called many times holds one, rather than starting threads on every call).
/// Cloning shares the pool.
#[derive(Clone, Debug, Default)]
pub struct Threads {
    pool: Option<std::sync::Arc<rayon::ThreadPool>>,
}

impl Threads {
    /// `None`: every core; `Some(n)`: a pool of `n` threads (at least one), started here (a
    /// command line's `--threads`; `Some(1)` for a `seq` run).
    pub fn new(threads: Option<usize>) -> Result<Threads> {
        let Some(threads) = threads else {
            return Ok(Threads::default());
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .thread_name(|index| format!("parcrypt-age-{index}"))
            .build()
            .map_err(|error| {
                io::Error::other(format!("cannot start {threads} threads: {error}"))
            })?;
        Ok(Threads {
            pool: Some(std::sync::Arc::new(pool)),
        })
    }

    /// Runs `work` (any calls of this crate) with its batches on these threads; batches are
    /// sized for the pool they run on.
    pub fn install<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(work),
            None => work(),
        }
    }
}

/// Runs `work` (any calls of this crate) with the payload's batches sealed or opened on
/// `threads` threads ([`Threads::new`]: `None` is every core, `Some(n)` a pool of `n` threads
/// made for this call). A reader or writer called many times keeps a [`Threads`] instead.
///
/// ```
/// use parcrypt_age::{encrypt_to_vec, on_threads, X25519Identity};
///
/// let identity = X25519Identity::generate();
/// let file = on_threads(Some(1), || {
///     assert_eq!(rayon::current_num_threads(), 1);
///     encrypt_to_vec(&[identity.to_public().into()], false, &[7; 100_000])
/// })??;
/// # Ok::<(), parcrypt_age::Error>(())
/// ```
pub fn on_threads<R: Send>(threads: Option<usize>, work: impl FnOnce() -> R + Send) -> Result<R> {
    Ok(Threads::new(threads)?.install(work))
}

/// How many chunks are sealed or opened together: 32 for each of rayon's threads, at least 16
/// and at most [`BATCH_CHUNKS`] (64, 4 MiB). Each batch ends in a join of the sealing and the
/// I/O, so fewer, larger batches keep both cores busier: on the 2-core machine with nothing
/// else running, 64 chunks in place of 16 took 7 % less wall time to encrypt 1 GiB and 14 %
/// less to decrypt it (9 alternating runs of each release binary, files in
/// /dev/shm); 128 chunks changed nothing, and one thread is the same at 16 or 32.
#[derive(Clone, Copy)]
struct Batch {
    chunks: usize,
}

impl Batch {
    fn for_this_pool() -> Batch {
        Batch {
            chunks: (32 * rayon::current_num_threads()).clamp(16, BATCH_CHUNKS),
        }
    }

    /// Plaintext bytes in a full batch.
    fn bytes(self) -> usize {
        self.chunks * CHUNK_BYTES
    }

    /// Sealed bytes in a full batch.
    fn sealed(self) -> usize {
        self.chunks * SEALED_CHUNK_BYTES
    }

    /// The sealed bytes read for a batch: its chunks and one byte more, which tells whether
    /// the input ends after them.
    fn read(self) -> usize {
        self.sealed() + 1
    }
}

/// Whether `start` (the first bytes of a file) is an age file, binary or armored.
pub fn is_age(start: &[u8]) -> bool {
    let start = trim_leading_whitespace(start);
    start.starts_with(b"age-encryption.org/") || start.starts_with(armor::BEGIN.as_bytes())
}

fn trim_leading_whitespace(bytes: &[u8]) -> &[u8] {
    let first = bytes
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    &bytes[first..]
}

/// Turns an I/O error carrying an armor error back into [`Error::Armor`].
fn classify(error: Error) -> Error {
    match error {
        Error::Io(io) => classify_io(io),
        other => other,
    }
}

fn classify_io(error: io::Error) -> Error {
    let is_armor = error
        .get_ref()
        .is_some_and(|inner| inner.downcast_ref::<ArmorError>().is_some());
    if is_armor {
        let inner = error.into_inner().expect("checked");
        let armor = inner.downcast::<ArmorError>().expect("checked");
        return Error::Armor(armor.0);
    }
    let is_ours = error
        .get_ref()
        .is_some_and(|inner| inner.downcast_ref::<Error>().is_some());
    if is_ours {
        let inner = error.into_inner().expect("checked");
        return *inner.downcast::<Error>().expect("checked");
    }
    Error::Io(error)
}

// --- writing --------------------------------------------------------------------------

enum Sink<W: Write> {
    Plain(W),
    Armored(ArmorWriter<W>),
}

impl<W: Write> Sink<W> {
    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Sink::Plain(w) => w.write_all(data),
            Sink::Armored(w) => w.write_all(data),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            Sink::Armored(w) => w.flush(),
        }
    }
}

/// Starts an age file for `recipients` on `output`: writes the header and the payload's
/// nonce, and returns the writer of the plaintext. `armor`: ASCII armor around the file.
///
/// Refuses an empty list, a passphrase with other recipients, and post-quantum recipients
/// mixed with others (as age does).
pub fn encrypt<W: Write + Send>(
    recipients: &[Recipient],
    armor: bool,
    output: W,
) -> Result<Encryptor<W>> {
    Recipient::check_combination(recipients)?;
    let file_key = FileKey::generate();
    let stanzas = recipients
        .iter()
        .map(|r| r.wrap(&file_key))
        .collect::<Result<Vec<_>>>()?;
    let header = Header::seal(stanzas, &file_key);
    let mut nonce = [0u8; NONCE_BYTES];
    getrandom::fill(&mut nonce).expect("the operating system's random generator");
    let key = PayloadKey::new(&file_key, &nonce);
    let mut sink = if armor {
        Sink::Armored(ArmorWriter::new(output)?)
    } else {
        Sink::Plain(output)
    };
    sink.write_all(header.as_bytes())?;
    sink.write_all(&nonce)?;
    Ok(Encryptor {
        sealer: Sealer {
            sink,
            key,
            next: 0,
            sealed: Vec::new(),
            sealed_len: 0,
            spare: Vec::new(),
        },
        batch: Batch::for_this_pool(),
        buffer: Vec::new(),
        filled: 0,
        ahead: Vec::new(),
    })
}

/// Encrypts `plaintext` to `recipients` in memory.
pub fn encrypt_to_vec(recipients: &[Recipient], armor: bool, plaintext: &[u8]) -> Result<Vec<u8>> {
    let mut writer = encrypt(recipients, armor, Vec::new())?;
    writer.write_all(plaintext)?;
    writer.finish()
}

/// Makes `buffer` `len` bytes long once (zeroed pages from the allocator); it is reused after.
fn allocate(buffer: &mut Vec<u8>, len: usize) {
    if buffer.len() < len {
        *buffer = vec![0; len];
    }
}

/// Reads into `buffer` until it is full or the input ends; returns the bytes read.
fn read_full<R: Read + ?Sized>(input: &mut R, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match input.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

/// The plaintext side of an age file being written ([`encrypt`]): buffers a batch (16 to 64
/// chunks of 64 KiB), seals its chunks in parallel while the batch before is written out. [`Encryptor::copy_from`]
/// reads a whole input straight into its batches and also reads the next batch while one is
/// sealed. [`Encryptor::finish`] seals the final chunk; a writer dropped without it leaves a
/// truncated file that no reader accepts.
pub struct Encryptor<W: Write> {
    sealer: Sealer<W>,
    batch: Batch,
    /// Plaintext not sealed yet: `buffer[..filled]` (the buffer is a batch long once used).
    buffer: Vec<u8>,
    filled: usize,
    /// Where [`Encryptor::copy_from`] reads the batch after the one being sealed.
    ahead: Vec<u8>,
}

/// The sealing side of an [`Encryptor`]: the output, the payload key, the chunk count and
/// the sealed batches.
struct Sealer<W: Write> {
    sink: Sink<W>,
    key: PayloadKey,
    /// The index of the first chunk not sealed yet.
    next: u64,
    /// A sealed batch not written yet: `sealed[..sealed_len]`.
    sealed: Vec<u8>,
    sealed_len: usize,
    /// Where the next batch is sealed.
    spare: Vec<u8>,
}

impl<W: Write + Send> Sealer<W> {
    /// Seals `plain` as the next chunks into `spare` while the sealed batch before is written,
    /// then keeps the new batch as the one to write next.
    fn seal(&mut self, plain: &[u8], final_batch: bool) -> io::Result<()> {
        let Sealer {
            sink,
            key,
            next,
            sealed,
            sealed_len,
            spare,
        } = self;
        allocate(spare, stream::sealed_len(plain.len()));
        let (written, len) = rayon::join(
            || sink.write_all(&sealed[..*sealed_len]),
            || stream::seal_into(key, *next, plain, final_batch, spare),
        );
        written?;
        *next += plain.len().div_ceil(CHUNK_BYTES) as u64;
        std::mem::swap(sealed, spare);
        *sealed_len = len;
        Ok(())
    }
}

impl<W: Write + Send> Encryptor<W> {
    /// Seals the buffered plaintext (see [`Sealer::seal`]) and empties the buffer.
    fn seal_buffer(&mut self, final_batch: bool) -> io::Result<()> {
        self.sealer.seal(&self.buffer[..self.filled], final_batch)?;
        // Plaintext the caller gave (not key material): reused, not wiped.
        self.filled = 0;
        Ok(())
    }

    /// Encrypts everything `input` holds up to its end (the plaintext so far, then this);
    /// returns the bytes read. Reads whole batches straight into the batch buffers, and reads
    /// the next batch and writes the batch before while one is sealed: faster than
    /// [`io::copy`] into this writer, which goes 8 KiB at a time through a copy. More may be
    /// written after it; [`Encryptor::finish`] ends the file.
    pub fn copy_from<R: Read + Send + ?Sized>(&mut self, input: &mut R) -> io::Result<u64> {
        let batch_bytes = self.batch.bytes();
        allocate(&mut self.buffer, batch_bytes);
        if self.filled == batch_bytes {
            // More is coming only if the input has some: look before sealing.
            allocate(&mut self.ahead, batch_bytes);
            let n = read_full(input, &mut self.ahead[..batch_bytes])?;
            if n == 0 {
                return Ok(0);
            }
            self.seal_buffer(false)?;
            std::mem::swap(&mut self.buffer, &mut self.ahead);
            self.filled = n;
            if n < batch_bytes {
                return Ok(n as u64);
            }
            return self.copy_full(input).map(|more| more + n as u64);
        }
        let start = self.filled;
        let n = read_full(input, &mut self.buffer[start..batch_bytes])?;
        self.filled += n;
        if self.filled < batch_bytes {
            return Ok(n as u64);
        }
        self.copy_full(input).map(|more| more + n as u64)
    }

    /// [`Encryptor::copy_from`] with a full buffer: seals it (as not final) while the batch
    /// before is written and the next one read. When the input turns out to end there, the
    /// full buffer stays unsealed (the sealed copy is dropped) for [`Encryptor::finish`] to
    /// seal as the final batch.
    fn copy_full<R: Read + Send + ?Sized>(&mut self, input: &mut R) -> io::Result<u64> {
        let batch_bytes = self.batch.bytes();
        let batch_chunks = self.batch.chunks;
        let sealed_bytes = self.batch.sealed();
        allocate(&mut self.ahead, batch_bytes);
        let mut total = 0u64;
        loop {
            let Encryptor {
                sealer:
                    Sealer {
                        sink,
                        key,
                        next,
                        sealed,
                        sealed_len,
                        spare,
                    },
                buffer,
                filled,
                ahead,
                ..
            } = &mut *self;
            debug_assert_eq!(*filled, batch_bytes);
            allocate(spare, sealed_bytes);
            let (io, len) = rayon::join(
                || -> io::Result<usize> {
                    sink.write_all(&sealed[..*sealed_len])?;
                    *sealed_len = 0;
                    read_full(input, &mut ahead[..batch_bytes])
                },
                || stream::seal_into(key, *next, &buffer[..batch_bytes], false, spare),
            );
            let n = io?;
            if n == 0 {
                return Ok(total);
            }
            *next += batch_chunks as u64;
            std::mem::swap(sealed, spare);
            *sealed_len = len;
            std::mem::swap(buffer, ahead);
            *filled = n;
            total += n as u64;
            if n < batch_bytes {
                return Ok(total);
            }
        }
    }

    /// Seals the last chunk, ends the armor, flushes, and returns the output.
    pub fn finish(mut self) -> Result<W> {
        self.seal_buffer(true)?;
        let sealer = &mut self.sealer;
        sealer.sink.write_all(&sealer.sealed[..sealer.sealed_len])?;
        sealer.sealed_len = 0;
        match self.sealer.sink {
            Sink::Plain(mut w) => {
                w.flush()?;
                Ok(w)
            }
            Sink::Armored(w) => Ok(w.finish()?),
        }
    }
}

impl<W: Write + Send> Write for Encryptor<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        let batch_bytes = self.batch.bytes();
        // A full buffer is sealed only once more data shows it is not the end.
        if self.filled == batch_bytes {
            self.seal_buffer(false)?;
        }
        if self.filled == 0 && data.len() > batch_bytes {
            // A whole batch with more after it: sealed from the caller's bytes, no copy.
            self.sealer.seal(&data[..batch_bytes], false)?;
            return Ok(batch_bytes);
        }
        allocate(&mut self.buffer, batch_bytes);
        let take = data.len().min(batch_bytes - self.filled);
        self.buffer[self.filled..self.filled + take].copy_from_slice(&data[..take]);
        self.filled += take;
        Ok(take)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.sealer.sink.flush()
    }
}

// --- reading --------------------------------------------------------------------------

type Prefixed<R> = io::Chain<io::Cursor<Vec<u8>>, R>;

enum Input<R: Read> {
    Plain(BufReader<Prefixed<R>>),
    Armored(BufReader<ArmorReader<BufReader<Prefixed<R>>>>),
}

impl<R: Read> Read for Input<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::Plain(r) => r.read(buf),
            Input::Armored(r) => r.read(buf),
        }
    }
}

impl<R: Read> BufRead for Input<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            Input::Plain(r) => r.fill_buf(),
            Input::Armored(r) => r.fill_buf(),
        }
    }

    fn consume(&mut self, amount: usize) {
        match self {
            Input::Plain(r) => r.consume(amount),
            Input::Armored(r) => r.consume(amount),
        }
    }
}

/// An age file whose header has been read and checked for syntax (see [`Decryptor::new`]).
pub struct Decryptor<R: Read> {
    input: Input<R>,
    header: Header,
    armored: bool,
}

impl<R: Read> Decryptor<R> {
    /// Reads the header of the age file on `input`, binary or ASCII-armored: armored when
    /// its first line (after up to 1 KiB of whitespace) starts with `-----`, as the armor's
    /// begin line does (the armor is then checked strictly).
    pub fn new(input: R) -> Result<Decryptor<R>> {
        Decryptor::with_armor(input, None)
    }

    /// Reads the header of the age file on `input`: `Some(true)`: ASCII-armored,
    /// `Some(false)`: binary, `None`: recognised as [`Decryptor::new`] does.
    pub fn with_armor(mut input: R, armored: Option<bool>) -> Result<Decryptor<R>> {
        let want = armor::BEGIN.len();
        let mut prefix = Vec::with_capacity(128);
        while armored.is_none() {
            let first = prefix.iter().position(|c: &u8| !c.is_ascii_whitespace());
            match first {
                Some(first) if prefix.len() - first >= want => break,
                _ if prefix.len() > 1024 + want => break,
                _ => {}
            }
            let mut piece = [0u8; 64];
            let n = match input.read(&mut piece) {
                Ok(n) => n,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(Error::Io(error)),
            };
            if n == 0 {
                break;
            }
            prefix.extend_from_slice(&piece[..n]);
        }
        let armored =
            armored.unwrap_or_else(|| trim_leading_whitespace(&prefix).starts_with(b"-----"));
        let prefixed = io::Cursor::new(prefix).chain(input);
        let mut input = if armored {
            Input::Armored(BufReader::with_capacity(
                1 << 16,
                ArmorReader::new(BufReader::with_capacity(1 << 16, prefixed)),
            ))
        } else {
            Input::Plain(BufReader::with_capacity(1 << 16, prefixed))
        };
        let header = Header::parse(&mut input).map_err(classify)?;
        Ok(Decryptor {
            input,
            header,
            armored,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Whether the file is ASCII-armored.
    pub fn is_armored(&self) -> bool {
        self.armored
    }

    /// Whether the file is encrypted to a passphrase (its only stanza is `scrypt`).
    pub fn is_passphrase(&self) -> bool {
        self.header.stanzas().iter().any(|s| s.kind == "scrypt")
    }

    /// Unwraps the file key with the first identity that can, checks the header's MAC, reads
    /// the payload's nonce and returns the reader of the plaintext.
    pub fn decrypt(mut self, identities: &[Identity]) -> Result<StreamReader<R>> {
        let file_key = unwrap_file_key(&self.header, identities)?;
        let mut nonce = [0u8; NONCE_BYTES];
        self.input.read_exact(&mut nonce).map_err(|error| {
            if error.kind() == io::ErrorKind::UnexpectedEof {
                Error::Header("the payload's nonce is missing or short".into())
            } else {
                classify_io(error)
            }
        })?;
        Ok(StreamReader {
            input: self.input,
            key: PayloadKey::new(&file_key, &nonce),
            batch: Batch::for_this_pool(),
            next: 0,
            sealed: Vec::new(),
            filled: 0,
            plain: Vec::new(),
            plain_len: 0,
            position: 0,
            failed: None,
            done: false,
        })
    }
}

/// Unwraps the file key of `header` with the first of `identities` that can and checks the
/// header's MAC with it. Refuses a header where an scrypt stanza is not alone.
pub fn unwrap_file_key(header: &Header, identities: &[Identity]) -> Result<FileKey> {
    if identities.is_empty() {
        return Err(Error::Key("no identities given".into()));
    }
    let stanzas = header.stanzas();
    if stanzas.len() > 1 && stanzas.iter().any(|s| s.kind == "scrypt") {
        return Err(Error::Header(
            "an scrypt stanza must be the header's only stanza".into(),
        ));
    }
    for identity in identities {
        if let Some(file_key) = identity.unwrap(stanzas)? {
            header.verify(&file_key)?;
            return Ok(file_key);
        }
    }
    let mut kinds: Vec<&str> = stanzas.iter().map(|s| s.kind.as_str()).collect();
    kinds.dedup();
    Err(Error::NoMatch(kinds.join(", ")))
}

/// Reads and decrypts `file` (binary or armored) whole: the plaintext, or an error and
/// nothing.
pub fn decrypt_to_vec(file: &[u8], identities: &[Identity]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let result = Decryptor::new(file)?
        .decrypt(identities)?
        .decrypt_to(&mut out);
    match result {
        Ok(_) => Ok(out),
        Err(error) => {
            out.zeroize();
            Err(error)
        }
    }
}

/// Reads into `sealed[*filled..]` until a batch and one byte are there or the input ends
/// (then returns true). `filled` counts what was read, also when an error interrupts.
fn fill_batch<R: Read>(
    input: &mut Input<R>,
    batch: Batch,
    sealed: &mut Vec<u8>,
    filled: &mut usize,
) -> io::Result<bool> {
    let want = batch.read();
    allocate(sealed, want);
    while *filled < want {
        match input.read(&mut sealed[*filled..want]) {
            Ok(0) => return Ok(true),
            Ok(n) => *filled += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(false)
}

/// The sealed bytes of a batch read by [`fill_batch`] that are opened now: all of them at
/// the end, else the batch's chunks without the byte after them.
fn batch_take(batch: Batch, filled: usize, at_end: bool) -> usize {
    if at_end {
        filled
    } else {
        batch.sealed()
    }
}

/// The plaintext of an age file ([`Decryptor::decrypt`]): reads a batch (16 to 64 chunks) at a time,
/// opens them in parallel and releases them only when all of them authenticated; the chunks
/// before a failing one are released, then the error. The end of the input without an
/// authenticated final chunk is an error.
pub struct StreamReader<R: Read> {
    input: Input<R>,
    key: PayloadKey,
    batch: Batch,
    next: u64,
    /// Sealed bytes read and not opened yet: `sealed[..filled]` (a batch and a byte long
    /// once used).
    sealed: Vec<u8>,
    filled: usize,
    /// Released plaintext: `plain[position..plain_len]` is not read yet.
    plain: Vec<u8>,
    plain_len: usize,
    position: usize,
    failed: Option<String>,
    done: bool,
}

impl<R: Read> StreamReader<R> {
    /// Reads the next batch and opens it into `self.plain`; sets `failed` or `done`.
    fn next_batch(&mut self) -> Result<()> {
        let batch = self.batch;
        let at_end = fill_batch(&mut self.input, batch, &mut self.sealed, &mut self.filled)
            .map_err(classify_io)?;
        let take = batch_take(batch, self.filled, at_end);
        allocate(&mut self.plain, batch.bytes());
        let result = stream::open_into(
            &self.key,
            self.next,
            &self.sealed[..take],
            at_end,
            false,
            &mut self.plain,
        );
        self.carry(at_end);
        self.position = 0;
        match result {
            Ok(len) => {
                self.plain_len = len;
                self.next += take.div_ceil(SEALED_CHUNK_BYTES) as u64;
                self.done = at_end;
            }
            Err(failure) => {
                self.plain_len = failure.released;
                self.next += failure.good as u64;
                self.failed = Some(failure.reason);
            }
        }
        Ok(())
    }

    /// After a batch was opened: the byte read after it starts the next one.
    fn carry(&mut self, at_end: bool) {
        if at_end {
            self.filled = 0;
        } else {
            self.sealed[0] = self.sealed[self.batch.sealed()];
            self.filled = 1;
        }
    }
}

impl<R: Read + Send> StreamReader<R> {
    /// Writes the plaintext to `output` batch by batch as each authenticates, and returns its
    /// length: while a batch is opened, the batch before is written and the next one read.
    /// On an error, what was written is authenticated plaintext (a destination that must
    /// hold all or nothing is a temporary file renamed on success).
    pub fn decrypt_to(mut self, output: &mut (dyn Write + Send)) -> Result<u64> {
        // First what a reader left.
        let from = self.position.min(self.plain_len);
        output.write_all(&self.plain[from..self.plain_len])?;
        let mut total = (self.plain_len - from) as u64;
        self.position = self.plain_len;
        if let Some(reason) = self.failed.take() {
            return Err(Error::Payload(reason));
        }
        if self.done {
            return Ok(total);
        }
        let batch = self.batch;
        let mut at_end = fill_batch(&mut self.input, batch, &mut self.sealed, &mut self.filled)
            .map_err(classify_io)?;
        allocate(&mut self.plain, batch.bytes());
        // The batch read while one is opened, and the plaintext written meanwhile.
        let mut ahead = Vec::new();
        let mut other = zeroize::Zeroizing::new(vec![0u8; batch.bytes()]);
        let mut ready = 0;
        loop {
            let take = batch_take(batch, self.filled, at_end);
            let StreamReader {
                input,
                key,
                next,
                sealed,
                plain,
                ..
            } = &mut self;
            let mut ahead_filled = 0;
            let (io, opened) = rayon::join(
                || -> io::Result<Option<io::Result<bool>>> {
                    output.write_all(&other[..ready])?;
                    if at_end {
                        return Ok(None);
                    }
                    allocate(&mut ahead, batch.read());
                    ahead[0] = sealed[batch.sealed()];
                    ahead_filled = 1;
                    Ok(Some(fill_batch(
                        input,
                        batch,
                        &mut ahead,
                        &mut ahead_filled,
                    )))
                },
                || stream::open_into(key, *next, &sealed[..take], at_end, false, plain),
            );
            let read = io?;
            total += ready as u64;
            let len = match opened {
                Ok(len) => len,
                Err(failure) => {
                    output.write_all(&self.plain[..failure.released])?;
                    return Err(Error::Payload(failure.reason));
                }
            };
            self.next += take.div_ceil(SEALED_CHUNK_BYTES) as u64;
            match read {
                None => {
                    output.write_all(&self.plain[..len])?;
                    return Ok(total + len as u64);
                }
                Some(Err(error)) => {
                    output.write_all(&self.plain[..len])?;
                    return Err(classify_io(error));
                }
                Some(Ok(end)) => at_end = end,
            }
            std::mem::swap(&mut self.sealed, &mut ahead);
            self.filled = ahead_filled;
            std::mem::swap(&mut self.plain, &mut *other);
            ready = len;
        }
    }
}

impl<R: Read> Read for StreamReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.position < self.plain_len {
                let n = buf.len().min(self.plain_len - self.position);
                buf[..n].copy_from_slice(&self.plain[self.position..self.position + n]);
                self.position += n;
                return Ok(n);
            }
            if let Some(reason) = &self.failed {
                return Err(Error::Payload(reason.clone()).into());
            }
            if self.done || buf.is_empty() {
                return Ok(0);
            }
            self.next_batch()?;
        }
    }
}

impl<R: Read> Drop for StreamReader<R> {
    fn drop(&mut self) {
        self.plain.zeroize();
    }
}
