//! age v1 files ([age-encryption.org/v1](https://c2sp.org/age)), read and written at
//! parcrypt's speed: the ChaCha20-Poly1305 STREAM payload is sealed and opened in batches of
//! 64 chunks (4 MiB) in parallel on every core, and [`SeekableReader`] reads any range of a
//! file by decrypting only the chunks under it.
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

const BATCH_BYTES: usize = BATCH_CHUNKS * CHUNK_BYTES;

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
        sink,
        key,
        next: 0,
        buffer: Vec::with_capacity(BATCH_BYTES),
        sealed: Vec::with_capacity(BATCH_CHUNKS * SEALED_CHUNK_BYTES),
        spare: Vec::with_capacity(BATCH_CHUNKS * SEALED_CHUNK_BYTES),
    })
}

/// Encrypts `plaintext` to `recipients` in memory.
pub fn encrypt_to_vec(recipients: &[Recipient], armor: bool, plaintext: &[u8]) -> Result<Vec<u8>> {
    let mut writer = encrypt(recipients, armor, Vec::new())?;
    writer.write_all(plaintext)?;
    writer.finish()
}

/// The plaintext side of an age file being written ([`encrypt`]): buffers 4 MiB, seals it as
/// 64 chunks in parallel while the batch before is written out. [`Encryptor::finish`] seals
/// the final chunk; a writer dropped without it leaves a truncated file that no reader
/// accepts.
pub struct Encryptor<W: Write> {
    sink: Sink<W>,
    key: PayloadKey,
    next: u64,
    buffer: Vec<u8>,
    /// A sealed batch not written yet (empty when none).
    sealed: Vec<u8>,
    spare: Vec<u8>,
}

impl<W: Write + Send> Encryptor<W> {
    /// Seals the buffer into `spare` while `sealed` (the batch before) is written, then
    /// keeps the new batch in `sealed` for the next call (or `finish`) to write.
    fn seal_buffer(&mut self, final_batch: bool) -> io::Result<()> {
        let Encryptor {
            sink,
            key,
            next,
            buffer,
            sealed,
            spare,
        } = self;
        spare.clear();
        let (written, ()) = rayon::join(
            || sink.write_all(sealed),
            || stream::seal(key, *next, buffer, final_batch, spare),
        );
        written?;
        *next += buffer.len().div_ceil(CHUNK_BYTES) as u64;
        // Plaintext the caller gave (not key material): cleared, not wiped.
        buffer.clear();
        std::mem::swap(sealed, spare);
        Ok(())
    }

    /// Seals the last chunk, ends the armor, flushes, and returns the output.
    pub fn finish(mut self) -> Result<W> {
        self.seal_buffer(true)?;
        self.sink.write_all(&self.sealed)?;
        self.sealed.clear();
        match self.sink {
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
        // A full buffer is sealed only once more data shows it is not the end.
        if self.buffer.len() == BATCH_BYTES {
            self.seal_buffer(false)?;
        }
        let take = data.len().min(BATCH_BYTES - self.buffer.len());
        self.buffer.extend_from_slice(&data[..take]);
        Ok(take)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.sink.flush()
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
            next: 0,
            sealed: Vec::new(),
            plain: Vec::new(),
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

/// The plaintext of an age file ([`Decryptor::decrypt`]): reads 64 chunks (4 MiB) at a time,
/// opens them in parallel and releases them only when all of them authenticated; the chunks
/// before a failing one are released, then the error. The end of the input without an
/// authenticated final chunk is an error.
pub struct StreamReader<R: Read> {
    input: Input<R>,
    key: PayloadKey,
    next: u64,
    sealed: Vec<u8>,
    plain: Vec<u8>,
    position: usize,
    failed: Option<String>,
    done: bool,
}

impl<R: Read> StreamReader<R> {
    /// Reads the next batch into `self.plain`; sets `failed` or `done`.
    fn next_batch(&mut self) -> Result<()> {
        let target = BATCH_CHUNKS * SEALED_CHUNK_BYTES + 1;
        let mut at_end = false;
        let mut filled = self.sealed.len();
        self.sealed.resize(target, 0);
        while filled < target {
            match self.input.read(&mut self.sealed[filled..]) {
                Ok(0) => {
                    at_end = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => {
                    self.sealed.truncate(filled);
                    return Err(classify_io(error));
                }
            }
        }
        self.sealed.truncate(filled);
        let take = if at_end {
            self.sealed.len()
        } else {
            target - 1
        };
        let result = stream::open(
            &self.key,
            self.next,
            &self.sealed[..take],
            at_end,
            false,
            &mut self.plain,
        );
        self.sealed.drain(..take);
        self.position = 0;
        match result {
            Ok(()) => {
                self.next += take.div_ceil(SEALED_CHUNK_BYTES) as u64;
                self.done = at_end;
            }
            Err(failure) => {
                self.next += failure.good as u64;
                self.failed = Some(failure.reason);
            }
        }
        Ok(())
    }
}

impl<R: Read + Send> StreamReader<R> {
    /// Writes the plaintext to `output` batch by batch as each authenticates (a batch is
    /// written while the next one is read and opened); returns its length. On an error, what
    /// was written is authenticated plaintext (a destination that must hold all or nothing is
    /// a temporary file renamed on success).
    pub fn decrypt_to(mut self, output: &mut (dyn Write + Send)) -> Result<u64> {
        let mut total = 0u64;
        // What is released and not yet written: first what a reader left.
        let mut ready = std::mem::take(&mut self.plain);
        let mut from = self.position.min(ready.len());
        loop {
            if self.done || self.failed.is_some() {
                output.write_all(&ready[from..])?;
                total += (ready.len() - from) as u64;
                ready.zeroize();
                return match self.failed.take() {
                    Some(reason) => Err(Error::Payload(reason)),
                    None => Ok(total),
                };
            }
            // `self.plain` is the spare buffer here: the next batch goes into it.
            let (written, opened) =
                rayon::join(|| output.write_all(&ready[from..]), || self.next_batch());
            written?;
            opened?;
            total += (ready.len() - from) as u64;
            std::mem::swap(&mut ready, &mut self.plain);
            from = 0;
        }
    }
}

impl<R: Read> Read for StreamReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.position < self.plain.len() {
                let n = buf.len().min(self.plain.len() - self.position);
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
