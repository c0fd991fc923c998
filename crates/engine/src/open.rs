//! GCM decryption that releases no byte before the tag matched: authenticate first, then
//! decrypt.
//!
//! A GCM tag covers the whole message, so a one-pass decryption must hand out plaintext
//! before it knows whether the message is genuine. [`Authenticated`] splits the work in two
//! passes instead:
//!
//! 1. **Authenticate.** The ciphertext is read once and only hashed (GHASH over the AAD and
//!    the ciphertext, split over the engine's threads like every GCM job; no CTR), and the
//!    tag is computed and compared with the received one in constant time. Nothing is
//!    decrypted and nothing is written.
//! 2. **Decrypt.** Only if the tag matched, [`Authenticated::decrypt`] reads the ciphertext
//!    again, decrypts it and writes the plaintext as it goes.
//!
//! Where the ciphertext is read twice from depends on where the plaintext goes
//! ([`OpenOptions::destination`]):
//!
//! - By default ([`Destination::Irrevocable`]: a pipe, stdout, memory that others read) the
//!   first pass keeps a private copy of the *ciphertext* (never the plaintext) and the
//!   second pass decrypts that copy, so that exactly the bytes that were authenticated are
//!   decrypted, whatever happens to the input in between. The copy is held in memory up to
//!   [`MEMORY_SPOOL_BYTES`] (64 MiB), beyond that in an unnamed temporary file in the
//!   system's temporary folder (`$TMPDIR`, else `/tmp`). On Linux the file is made with
//!   `O_TMPFILE` and never has a name, so even a `SIGKILL` leaves nothing behind; elsewhere
//!   it is unlinked as soon as it is made. The folder needs room for the whole ciphertext.
//!   A pipe or other stream, which cannot be read twice, is always read this way.
//! - Where the caller discards the output when [`Authenticated::decrypt`] fails
//!   ([`Destination::Discardable`]: a temporary file deleted on error, as the command
//!   line's `-o FILE`), a seekable input (a regular file, or any `Read + Seek`) is read
//!   twice in place, from the position it had when given, and nothing is copied.
//!
//! Read in place, the input may change between the passes (another process rewrites the
//! file). A file given to [`Authenticated::file`] is checked first: its identity (device,
//! inode, size, modification and change times in nanoseconds) is taken before the first
//! pass and compared after it and before the second, which then fails with
//! [`StreamError::Changed`] before writing anything. A change that the check cannot see (a
//! write within the file system's timestamp granularity, or during the second pass) is
//! still caught: the second pass hashes the ciphertext again as it decrypts (the fused
//! CTR + GHASH of every GCM decryption) and fails at the end with an authentication error,
//! or with [`StreamError::Changed`] when the input got shorter, after writing what it read,
//! which is why only a discardable output may be read in place (issue 31 finding 7).
//! Input appended after the first pass is not read.
//!
//! ```
//! use parcrypt_engine::open::{Authenticated, OpenOptions};
//! use parcrypt_engine::{Backend, Cipher, Engine};
//!
//! let cipher = Cipher::new(Engine::new(Backend::Pool, Some(2))?, "aes-128-gcm".parse()?, &[7u8; 16], Some(&[1u8; 12]))?;
//! let sealed = cipher.encrypt(b"attack at dawn", Some(b"header"))?;
//!
//! let mut input = std::io::Cursor::new(sealed.clone());
//! let options = OpenOptions::default();
//! let authenticated = Authenticated::seekable(&cipher, Some(b"header"), &mut input, &options)?;
//! let mut plaintext = Vec::new();
//! authenticated.decrypt(&mut plaintext, &options)?;
//! assert_eq!(plaintext, b"attack at dawn");
//!
//! // A forged message fails in the first pass: nothing has been written anywhere.
//! let mut forged = sealed;
//! forged[3] ^= 1;
//! assert!(Authenticated::stream(&cipher, Some(b"header"), &mut &forged[..], &options).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom, Write};

use parcrypt_modes::gcm::{GcmAccumulator, GcmKey, GcmMessage, TAG_BYTES};
use parcrypt_modes::{Direction, Mode};

use crate::crypter::{check_iv_and_aad, ghash_on_engine, JobError};
use crate::stream::pipeline::{self, Step};
use crate::stream::{process_stream_with_progress, StreamError, DEFAULT_CHUNK_BYTES};
use crate::{Cipher, CostModel, Engine};

/// The longest piped ciphertext held in memory between the passes (64 MiB); a longer one
/// goes to an unnamed temporary file.
pub const MEMORY_SPOOL_BYTES: usize = 64 << 20;

/// Bytes read from a pipe per call while spooling it.
const SPOOL_STEP_BYTES: usize = 1 << 20;

/// Which part of the work a progress report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reading a piped ciphertext into memory or a temporary file (its length is unknown).
    Spooling,
    /// The first pass: hashing the ciphertext and checking the tag.
    Authenticating,
    /// The second pass: decrypting and writing, after the tag matched.
    Decrypting,
}

/// What becomes of plaintext that [`Authenticated::decrypt`] has written when it then
/// fails, which decides whether a seekable input may be read twice in place (see the
/// [module](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Destination {
    /// It cannot be taken back (a pipe, stdout, a socket, memory that others read): the
    /// input is read once into a private copy of its ciphertext, authenticated, and the copy
    /// decrypted, so that no plaintext of an input changed in between is ever released.
    #[default]
    Irrevocable,
    /// The caller discards the output when [`Authenticated::decrypt`] fails (a temporary
    /// file removed on error): a seekable input is read twice in place, with no copy.
    Discardable,
}

/// How [`Authenticated`] reads and reports.
#[derive(Clone, Copy)]
pub struct OpenOptions<'a> {
    /// Bytes read per chunk (see [`crate::stream::chunk_bytes_for`]).
    pub chunk_bytes: usize,
    /// The longest ciphertext copy held in memory; longer ones are spooled to a file.
    pub memory_limit: usize,
    /// Where the plaintext goes; [`Destination::Irrevocable`] unless the caller says.
    pub destination: Destination,
    /// Called on the calling thread with the phase and the input bytes it has read so far.
    pub progress: Option<&'a (dyn Fn(Phase, u64) + Sync)>,
}

impl Default for OpenOptions<'_> {
    /// [`DEFAULT_CHUNK_BYTES`] chunks, [`MEMORY_SPOOL_BYTES`] in memory, an irrevocable
    /// destination, no progress.
    fn default() -> Self {
        OpenOptions {
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            memory_limit: MEMORY_SPOOL_BYTES,
            destination: Destination::Irrevocable,
            progress: None,
        }
    }
}

impl OpenOptions<'_> {
    fn report(&self, phase: Phase, bytes: u64) {
        if let Some(progress) = self.progress {
            progress(phase, bytes);
        }
    }
}

/// What can be read twice.
trait SeekRead: Read + Seek + Send {}

impl<T: Read + Seek + Send> SeekRead for T {}

/// Where the authenticated ciphertext is read again from.
enum Source<'r> {
    /// The caller's seekable input, from `start`.
    Seekable {
        input: &'r mut dyn SeekRead,
        start: u64,
    },
    /// A piped ciphertext held in memory.
    Memory(Cursor<Vec<u8>>),
    /// A piped ciphertext in an unnamed temporary file.
    Spooled(File),
}

/// A GCM message whose tag matched, ready to be decrypted: made by the first pass
/// ([`Authenticated::seekable`], [`Authenticated::stream`] or [`Authenticated::file`]),
/// consumed by the second ([`Authenticated::decrypt`]). See the [module](self) for what is
/// read when, and what is kept where.
pub struct Authenticated<'c, 'r> {
    cipher: &'c Cipher,
    aad: Option<&'c [u8]>,
    source: Source<'r>,
    /// The message's bytes: ciphertext and tag.
    length: u64,
    /// A file read in place, checked unchanged before the second pass.
    watched: Option<Watched>,
}

impl<'c, 'r> Authenticated<'c, 'r> {
    /// The first pass over a seekable input, from its current position to its end: hashes
    /// the ciphertext and checks the tag (the last 16 bytes). Fails with
    /// [`JobError::Gcm`] (in [`StreamError::Job`]) when the tag does not match, and with
    /// [`JobError::MissingTag`] when the input is shorter than a tag. The input is copied
    /// as a stream is, unless the destination is [`Destination::Discardable`] (then it is
    /// read again in place by the second pass).
    pub fn seekable<R: Read + Seek + Send>(
        cipher: &'c Cipher,
        aad: Option<&'c [u8]>,
        input: &'r mut R,
        options: &OpenOptions<'_>,
    ) -> Result<Self, StreamError> {
        if options.destination == Destination::Irrevocable {
            return Self::stream(cipher, aad, input, options);
        }
        check_gcm_cipher(cipher)?;
        let start = input.stream_position().map_err(StreamError::Read)?;
        let length = authenticate(cipher, aad, input, options)?;
        Ok(Authenticated {
            cipher,
            aad,
            source: Source::Seekable { input, start },
            length,
            watched: None,
        })
    }

    /// The first pass over a stream that cannot be read twice (a pipe): reads it to its end
    /// while hashing, keeping the ciphertext in memory up to
    /// [`OpenOptions::memory_limit`] bytes and in an unnamed temporary file beyond.
    pub fn stream(
        cipher: &'c Cipher,
        aad: Option<&'c [u8]>,
        reader: &mut (dyn Read + Send),
        options: &OpenOptions<'_>,
    ) -> Result<Self, StreamError> {
        check_gcm_cipher(cipher)?;
        let source = spool(reader, options)?;
        let mut authenticated = Authenticated {
            cipher,
            aad,
            source,
            length: 0,
            watched: None,
        };
        let reader = authenticated.source.reader();
        authenticated.length = authenticate(cipher, aad, reader, options)?;
        Ok(authenticated)
    }

    /// The first pass over an open file: read twice in place when it is a regular file and
    /// the destination [`Destination::Discardable`], its identity checked unchanged after
    /// this pass and before the second; copied as a stream otherwise (an irrevocable
    /// destination, a FIFO, a character device, a terminal).
    pub fn file(
        cipher: &'c Cipher,
        aad: Option<&'c [u8]>,
        file: &'r mut File,
        options: &OpenOptions<'_>,
    ) -> Result<Self, StreamError> {
        let metadata = file.metadata().map_err(StreamError::Read)?;
        if !metadata.is_file() || options.destination == Destination::Irrevocable {
            return Self::stream(cipher, aad, file, options);
        }
        let watched = Watched {
            file: file.try_clone().map_err(StreamError::Read)?,
            identity: parcrypt_sys::FileIdentity::of(&metadata),
        };
        let mut authenticated = Self::seekable(cipher, aad, file, options)?;
        watched.check()?;
        authenticated.watched = Some(watched);
        Ok(authenticated)
    }

    /// The message's length: ciphertext and tag.
    pub fn message_bytes(&self) -> u64 {
        self.length
    }

    /// The plaintext's length (the message less its tag).
    pub fn plaintext_bytes(&self) -> u64 {
        self.length - TAG_BYTES as u64
    }

    /// The second pass: decrypts the authenticated message into `writer` and returns the
    /// plaintext bytes written. The ciphertext is hashed again on the way and the tag
    /// checked at the end, so a file changed since the first pass ends in an error (after
    /// its plaintext was written: discard the output then).
    pub fn decrypt(
        mut self,
        writer: &mut (dyn Write + Send),
        options: &OpenOptions<'_>,
    ) -> Result<u64, StreamError> {
        if let Some(watched) = &self.watched {
            watched.check()?;
        }
        let length = self.length;
        let cipher = self.cipher;
        let aad = self.aad;
        let reader = self.source.reader();
        let crypter = cipher.decryptor(aad)?;
        let report = |bytes: u64| options.report(Phase::Decrypting, bytes);
        let written = process_stream_with_progress(
            crypter,
            &mut <&mut (dyn Read + Send) as Read>::take(reader, length),
            writer,
            options.chunk_bytes,
            Some(&report),
        )?;
        if written != length - TAG_BYTES as u64 {
            return Err(StreamError::Changed);
        }
        Ok(written)
    }
}

impl<'r> Source<'r> {
    /// The source rewound to the message's start.
    fn reader(&mut self) -> &mut (dyn Read + Send + 'r) {
        match self {
            Source::Seekable { input, start } => {
                // A failed seek shows up as a short or failed read, which the pass reports.
                let _ = input.seek(SeekFrom::Start(*start));
                &mut **input
            }
            Source::Memory(cursor) => {
                cursor.set_position(0);
                cursor
            }
            Source::Spooled(file) => {
                let _ = file.rewind();
                file
            }
        }
    }
}

/// A file read twice in place, with its identity before the first pass.
struct Watched {
    file: File,
    identity: parcrypt_sys::FileIdentity,
}

impl Watched {
    /// [`StreamError::Changed`] unless the file is still what the first pass started on.
    fn check(&self) -> Result<(), StreamError> {
        let metadata = self.file.metadata().map_err(StreamError::Read)?;
        if parcrypt_sys::FileIdentity::of(&metadata) != self.identity {
            return Err(StreamError::Changed);
        }
        Ok(())
    }
}

fn check_gcm_cipher(cipher: &Cipher) -> Result<(), StreamError> {
    if cipher.suite().mode != Mode::Gcm {
        return Err(StreamError::NotAuthenticated(cipher.suite()));
    }
    Ok(())
}

/// Reads a piped ciphertext to its end: into memory up to the limit, then into an unnamed
/// temporary file.
fn spool<'r>(
    reader: &mut (dyn Read + Send),
    options: &OpenOptions<'_>,
) -> Result<Source<'r>, StreamError> {
    let limit = options.memory_limit;
    let mut memory = Vec::new();
    loop {
        if memory.len() > limit {
            break;
        }
        let start = memory.len();
        let step = SPOOL_STEP_BYTES.min(limit + 1 - start);
        memory.resize(start + step, 0);
        let read = read_some(reader, &mut memory[start..])?;
        memory.truncate(start + read);
        options.report(Phase::Spooling, memory.len() as u64);
        if read == 0 {
            return Ok(Source::Memory(Cursor::new(memory)));
        }
    }
    let mut file = tempfile::tempfile().map_err(StreamError::Spool)?;
    file.write_all(&memory).map_err(StreamError::Spool)?;
    let mut total = memory.len() as u64;
    memory.clear();
    memory.resize(options.chunk_bytes.clamp(SPOOL_STEP_BYTES, 16 << 20), 0);
    loop {
        let read = read_some(reader, &mut memory)?;
        if read == 0 {
            break;
        }
        file.write_all(&memory[..read])
            .map_err(StreamError::Spool)?;
        total += read as u64;
        options.report(Phase::Spooling, total);
    }
    Ok(Source::Spooled(file))
}

/// One read, retried when interrupted.
fn read_some(reader: &mut dyn Read, buffer: &mut [u8]) -> Result<usize, StreamError> {
    loop {
        match reader.read(buffer) {
            Ok(read) => return Ok(read),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(StreamError::Read(error)),
        }
    }
}

/// The first pass: hashes everything `reader` holds but the last 16 bytes, checks those as
/// the tag, and returns the bytes read. Runs in the streaming pipeline (one thread reads
/// while the engine hashes) and writes nothing.
fn authenticate(
    cipher: &Cipher,
    aad: Option<&[u8]>,
    reader: &mut (dyn Read + Send),
    options: &OpenOptions<'_>,
) -> Result<u64, StreamError> {
    let mut authenticator = Some(Authenticator::new(cipher, aad)?);
    let holdback = TAG_BYTES;
    let chunk_bytes = (options.chunk_bytes / 16).max(1) * 16;
    let fill = move |reader: &mut dyn Read, buffer: &mut pipeline::Buffer| {
        buffer.filled = pipeline::read_full(reader, &mut buffer.bytes[holdback..])?;
        buffer.ended = buffer.filled < chunk_bytes;
        Ok(())
    };
    let mut carried = [0u8; TAG_BYTES];
    let mut carried_length = 0usize;
    let mut total = 0u64;
    let process = |buffer: &mut pipeline::Buffer| -> Result<Step<_, JobError>, JobError> {
        total += buffer.filled as u64;
        options.report(Phase::Authenticating, total);
        let start = holdback - carried_length;
        buffer.bytes[start..holdback].copy_from_slice(&carried[..carried_length]);
        let end = holdback + buffer.filled;
        if buffer.ended {
            let authenticator = authenticator.take().expect("the final piece comes once");
            authenticator.finish(&buffer.bytes[start..end])?;
            return Ok(Step {
                emit: 0..0,
                outcome: Some(Ok(())),
            });
        }
        let body_end = end - holdback;
        authenticator
            .as_mut()
            .expect("no chunk follows the final piece")
            .update(&buffer.bytes[start..body_end])?;
        carried_length = holdback;
        carried.copy_from_slice(&buffer.bytes[body_end..end]);
        Ok(Step {
            emit: 0..0,
            outcome: None,
        })
    };
    pipeline::run(
        reader,
        &mut io::sink(),
        holdback + chunk_bytes,
        None,
        fill,
        process,
    )?;
    Ok(total)
}

/// GHASH alone over a GCM message's ciphertext, split over the engine, and the tag check.
struct Authenticator<'c> {
    engine: &'c Engine,
    key: &'c GcmKey,
    message: GcmMessage,
    accumulator: GcmAccumulator,
    cost_model: Option<CostModel>,
}

impl<'c> Authenticator<'c> {
    /// Starts the message under the cipher's GCM key, built once with the cipher.
    fn new(cipher: &'c Cipher, aad: Option<&[u8]>) -> Result<Self, JobError> {
        let spec = cipher.suite();
        let iv = check_iv_and_aad(spec, cipher.iv(), aad, cipher.keyed().allows_short_gcm_iv())?;
        let schedule = cipher.keyed().schedule();
        let key = schedule.gcm()?;
        let message = key.message(schedule.cipher(), iv)?;
        let accumulator = GcmAccumulator::new(key, aad.unwrap_or_default());
        let engine = cipher.engine();
        Ok(Authenticator {
            engine,
            key,
            message,
            accumulator,
            cost_model: engine.cost_model(spec, Direction::Decrypt),
        })
    }

    /// Hashes whole blocks of ciphertext (left unchanged).
    fn update(&mut self, ciphertext: &[u8]) -> Result<(), JobError> {
        let lengths = self.engine.plan(ciphertext.len(), 16, self.cost_model);
        let partial = ghash_on_engine(self.engine, self.key, ciphertext, &lengths);
        self.accumulator
            .append(self.key, partial, ciphertext.len() as u64)?;
        Ok(())
    }

    /// Hashes the last ciphertext bytes of `tail` and checks its last 16 bytes as the tag.
    fn finish(mut self, tail: &[u8]) -> Result<(), JobError> {
        if tail.len() < TAG_BYTES {
            return Err(JobError::MissingTag(
                self.accumulator.text_bytes() + tail.len() as u64,
            ));
        }
        let (text, tag) = tail.split_at(tail.len() - TAG_BYTES);
        let partial = self.key.hash_range(text);
        self.accumulator
            .append(self.key, partial, text.len() as u64)?;
        self.key.verify(&self.message, &self.accumulator, tag)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Backend;

    fn cipher(backend: Backend, name: &str, iv: &[u8]) -> Cipher {
        let engine = Engine::new(backend, Some(2)).unwrap();
        let spec: crate::CipherSpec = name.parse().unwrap();
        let key = vec![5u8; spec.algorithm.key_lengths().0];
        // The 7-byte IV below is a short GCM IV, taken only when asked for.
        let keyed = crate::KeyedCipher::new(engine, spec, &key).unwrap();
        Cipher::from_keyed(keyed.allow_short_gcm_iv(true), Some(iv)).unwrap()
    }

    /// Every path (in place, in memory, spooled) at chunk boundaries, on one thread and on
    /// the pool: a genuine message decrypts to what the one-shot decryption gives; a forged
    /// one fails in the first pass.
    #[test]
    fn both_passes_equal_one_shot_and_forgeries_fail_first() {
        for backend in [Backend::Seq, Backend::Pool] {
            for (name, iv) in [("aes-128-gcm", &[3u8; 12][..]), ("rc6-256-gcm", &[4u8; 7])] {
                let cipher = cipher(backend, name, iv);
                for length in [0usize, 1, 15, 16, 17, 63, 64, 65, 200, 1000] {
                    let plaintext: Vec<u8> = (0..length).map(|i| (i * 7) as u8).collect();
                    // Many messages under the test's one IV: through the keyed cipher, as a
                    // `Cipher`'s IV encrypts one message only.
                    let sealed = cipher
                        .keyed()
                        .encrypt(cipher.iv(), &plaintext, Some(b"aad"))
                        .unwrap();
                    for chunk_bytes in [16, 64, 1 << 20] {
                        for memory_limit in [0, 40, usize::MAX / 4] {
                            let options = OpenOptions {
                                chunk_bytes,
                                memory_limit,
                                destination: Destination::Irrevocable,
                                progress: None,
                            };
                            // Copied first (irrevocable), then read twice in place.
                            for destination in [Destination::Irrevocable, Destination::Discardable]
                            {
                                let options = OpenOptions {
                                    destination,
                                    ..options
                                };
                                let mut cursor = Cursor::new(sealed.clone());
                                let first = Authenticated::seekable(
                                    &cipher,
                                    Some(b"aad"),
                                    &mut cursor,
                                    &options,
                                )
                                .unwrap();
                                assert_eq!(first.plaintext_bytes(), length as u64);
                                let mut output = Vec::new();
                                first.decrypt(&mut output, &options).unwrap();
                                assert_eq!(output, plaintext, "{name} {length} {chunk_bytes}");
                            }

                            let first = Authenticated::stream(
                                &cipher,
                                Some(b"aad"),
                                &mut &sealed[..],
                                &options,
                            )
                            .unwrap();
                            let mut output = Vec::new();
                            first.decrypt(&mut output, &options).unwrap();
                            assert_eq!(output, plaintext);

                            for flip in [0, sealed.len() / 2, sealed.len() - 1] {
                                let mut forged = sealed.clone();
                                forged[flip] ^= 0x20;
                                let error = Authenticated::stream(
                                    &cipher,
                                    Some(b"aad"),
                                    &mut &forged[..],
                                    &options,
                                )
                                .err()
                                .expect("a forgery is refused");
                                assert!(
                                    matches!(error, StreamError::Job(JobError::Gcm(_))),
                                    "{error}"
                                );
                            }
                            assert!(Authenticated::stream(
                                &cipher,
                                None,
                                &mut &sealed[..],
                                &options
                            )
                            .is_err());
                        }
                    }
                }
                for short in 0..TAG_BYTES {
                    let error = Authenticated::stream(
                        &cipher,
                        None,
                        &mut &vec![0u8; short][..],
                        &OpenOptions::default(),
                    )
                    .err()
                    .unwrap();
                    assert!(matches!(error, StreamError::Job(JobError::MissingTag(_))));
                }
            }
        }
    }

    #[test]
    fn a_seekable_input_is_read_from_where_it_stood() {
        let cipher = cipher(Backend::Seq, "aes-256-gcm", &[9u8; 12]);
        let sealed = cipher.encrypt(b"from the middle", None).unwrap();
        let mut bytes = b"prefix".to_vec();
        bytes.extend_from_slice(&sealed);
        for destination in [Destination::Irrevocable, Destination::Discardable] {
            let mut cursor = Cursor::new(bytes.clone());
            cursor.set_position(6);
            let options = OpenOptions {
                destination,
                ..OpenOptions::default()
            };
            let first = Authenticated::seekable(&cipher, None, &mut cursor, &options).unwrap();
            let mut output = Vec::new();
            first.decrypt(&mut output, &options).unwrap();
            assert_eq!(output, b"from the middle", "{destination:?}");
        }
    }

    /// A sealed file of `length` bytes of 0x55 in a temporary file, and the cipher.
    fn sealed_file(length: usize) -> (Cipher, Vec<u8>, File) {
        let cipher = cipher(Backend::Seq, "aes-128-gcm", &[1u8; 12]);
        let sealed = cipher.encrypt(&vec![0x55u8; length], None).unwrap();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&sealed).unwrap();
        file.rewind().unwrap();
        (cipher, sealed, file)
    }

    /// Flips the ciphertext byte at `offset` of `file` through a handle of its own (the
    /// plaintext byte there would then decrypt to 0x54).
    fn flip(file: &File, sealed: &[u8], offset: usize) {
        let mut writer = file.try_clone().unwrap();
        writer.seek(SeekFrom::Start(offset as u64)).unwrap();
        writer.write_all(&[sealed[offset] ^ 1]).unwrap();
        writer.flush().unwrap();
    }

    /// Issue 31 finding 7: a regular file rewritten between the passes, decrypted into a
    /// destination that cannot be taken back (the default: here a `Vec`, on the command
    /// line a pipe). Before, the second pass read the file again and wrote the changed
    /// file's plaintext before its tag check failed; now it decrypts the copy the first
    /// pass authenticated, so the output is exactly the authenticated plaintext.
    #[test]
    fn a_file_changed_between_the_passes_releases_none_of_its_plaintext() {
        let (cipher, sealed, file) = sealed_file(100_000);
        let options = OpenOptions::default();
        assert_eq!(options.destination, Destination::Irrevocable);
        let mut handle = file.try_clone().unwrap();
        let first = Authenticated::file(&cipher, None, &mut handle, &options).unwrap();
        for offset in [10, 50_000, 99_999] {
            flip(&file, &sealed, offset);
        }
        file.set_len(60_000).unwrap();
        let mut output = Vec::new();
        let written = first.decrypt(&mut output, &options).unwrap();
        assert_eq!(written, 100_000);
        assert!(
            output.iter().all(|&byte| byte == 0x55),
            "changed plaintext released"
        );
        assert_eq!(output.len(), 100_000);
    }

    /// Issue 31 finding 7, the file rewritten while the first pass runs (from its progress
    /// report), once as the authenticating pass starts and once while the copy is being
    /// read: the output is the authenticated plaintext or nothing at all, never plaintext
    /// of the changed bytes.
    #[test]
    fn a_file_changed_during_the_first_pass_releases_none_of_its_plaintext() {
        for phase in [Phase::Authenticating, Phase::Spooling] {
            let length = 3 << 20;
            let (cipher, sealed, file) = sealed_file(length);
            let flipped = std::sync::atomic::AtomicBool::new(false);
            let report = |seen: Phase, _: u64| {
                if seen == phase && !flipped.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    flip(&file, &sealed, length - 10);
                }
            };
            let options = OpenOptions {
                chunk_bytes: 1 << 16,
                progress: Some(&report),
                ..OpenOptions::default()
            };
            let mut handle = file.try_clone().unwrap();
            let mut output = Vec::new();
            let outcome = Authenticated::file(&cipher, None, &mut handle, &options)
                .and_then(|first| first.decrypt(&mut output, &options));
            assert!(flipped.into_inner(), "{phase:?} was reported");
            match &outcome {
                Ok(written) => {
                    assert_eq!(*written as usize, length, "{phase:?}");
                    assert!(output.iter().all(|&byte| byte == 0x55), "{phase:?}");
                }
                Err(error) => {
                    assert!(
                        matches!(error, StreamError::Job(JobError::Gcm(_))),
                        "{phase:?}: {error}"
                    );
                    assert!(output.is_empty(), "{phase:?}: released before the tag");
                }
            }
            if phase == Phase::Authenticating {
                assert!(outcome.is_ok(), "the copy was complete before the change");
            }
        }
    }

    /// Read in place for a discardable destination: a change the identity check sees
    /// (new times, a new size) fails before the second pass writes anything; one it may
    /// miss (a byte rewritten within the timestamp granularity) fails at the end, after
    /// writing, which the discardable destination then drops.
    #[test]
    fn a_discardable_destination_reads_in_place_and_checks_the_file() {
        let options = OpenOptions {
            destination: Destination::Discardable,
            ..OpenOptions::default()
        };
        let (cipher, sealed, file) = sealed_file(100);
        let mut handle = file.try_clone().unwrap();
        let first = Authenticated::file(&cipher, None, &mut handle, &options).unwrap();
        let mut output = Vec::new();
        first.decrypt(&mut output, &options).unwrap();
        assert_eq!(output, [0x55u8; 100]);

        // New times only (the bytes are the same): refused before writing.
        let mut handle = file.try_clone().unwrap();
        handle.rewind().unwrap();
        let first = Authenticated::file(&cipher, None, &mut handle, &options).unwrap();
        file.set_modified(std::time::SystemTime::UNIX_EPOCH)
            .unwrap();
        let mut output = Vec::new();
        let error = first.decrypt(&mut output, &options).unwrap_err();
        assert!(matches!(error, StreamError::Changed), "{error}");
        assert!(output.is_empty());

        // Shortened: refused before writing.
        let mut handle = file.try_clone().unwrap();
        handle.rewind().unwrap();
        let first = Authenticated::file(&cipher, None, &mut handle, &options).unwrap();
        file.set_len(50).unwrap();
        let mut output = Vec::new();
        let error = first.decrypt(&mut output, &options).unwrap_err();
        assert!(matches!(error, StreamError::Changed), "{error}");
        assert!(output.is_empty());

        // A byte rewritten: refused, before or after writing.
        let (cipher, sealed_again, file) = sealed_file(100);
        assert_eq!(sealed, sealed_again);
        let mut handle = file.try_clone().unwrap();
        let first = Authenticated::file(&cipher, None, &mut handle, &options).unwrap();
        flip(&file, &sealed, 10);
        let error = first.decrypt(&mut Vec::new(), &options).unwrap_err();
        assert!(
            matches!(
                error,
                StreamError::Changed | StreamError::Job(JobError::Gcm(_))
            ),
            "{error}"
        );
    }

    #[test]
    fn progress_reports_each_phase() {
        let cipher = cipher(Backend::Seq, "aes-128-gcm", &[1u8; 12]);
        let sealed = cipher.encrypt(&vec![1u8; 5000], None).unwrap();
        let seen = std::sync::Mutex::new(Vec::new());
        let report = |phase: Phase, bytes: u64| seen.lock().unwrap().push((phase, bytes));
        let options = OpenOptions {
            chunk_bytes: 1024,
            memory_limit: 100,
            progress: Some(&report),
            ..OpenOptions::default()
        };
        let first = Authenticated::stream(&cipher, None, &mut &sealed[..], &options).unwrap();
        first.decrypt(&mut io::sink(), &options).unwrap();
        let seen = seen.into_inner().unwrap();
        for phase in [Phase::Spooling, Phase::Authenticating, Phase::Decrypting] {
            let last = seen.iter().rev().find(|(p, _)| *p == phase).unwrap();
            assert_eq!(last.1, sealed.len() as u64, "{phase:?}");
        }
    }
}
