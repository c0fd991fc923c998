//! Decrypting from any [`Read`]: the [`Decryptor`] reads the envelope (and so learns whether
//! a key, a passphrase or an identity is needed), [`Decryptor::unlock`] checks the secret
//! against the key commitment (and a recipient header's MAC), and the [`UnlockedDecryptor`] then yields the plaintext as a [`Read`]
//! ([`DecryptingReader`]), as a [`Read`] + [`Seek`]
//! ([`SeekableReader`]), or through the three-stage pipeline
//! into a writer ([`UnlockedDecryptor::decrypt_to`], the fastest path).
//!
//! Whatever the path, a chunk's bytes are released only once it authenticated: a damaged
//! or missing chunk is an error, never bytes.

use std::io::{self, Read, Seek, Write};

use zeroize::Zeroize;

use crate::chunks::{batch_chunks, ChunkBatcher};
use crate::cobblestone::{MessageKeys, CHUNK_BYTES, SEALED_CHUNK_BYTES, TAG_BYTES};
use crate::error::FormatError;
use crate::header::KdfLimits;
use crate::message::{read_up_to, Envelope, Format, Secret};
use crate::range::{decrypt_range, ByteRange};
use crate::seekable::SeekableReader;
use crate::stream::{decrypt_chunks, StreamOptions};

/// A message whose envelope has been read, waiting for its secret.
///
/// ```
/// use std::io::Read;
/// use parcrypt_format::{CpuChunks, Decryptor, Encryptor, Format, Secret, Setup};
/// use parcrypt_engine::{Backend, Engine};
///
/// let engine = Engine::new(Backend::Seq, None)?;
/// let batcher = CpuChunks::new(&engine);
/// let key = [1u8; 32];
/// let setup = Setup { suite: parcrypt_format::Suite::Cobblestone256, ..Setup::default() };
/// let mut sealed = Vec::new();
/// Encryptor::new(&setup, Secret::Key(&key))?.encrypt_stream(
///     &batcher, &mut &b"attack at dawn"[..], &mut sealed, &Default::default())?;
///
/// let decryptor = Decryptor::new(Format::Parcrypt, &sealed[..])?;
/// assert!(!decryptor.envelope().needs_passphrase());
/// let mut plain = String::new();
/// decryptor.unlock(Secret::Key(&key), b"")?.reader(&batcher).read_to_string(&mut plain)?;
/// assert_eq!(plain, "attack at dawn");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A passphrase is stretched only within a budget, [`KdfLimits::DEFAULT`] unless
/// [`Decryptor::kdf_limits`] says otherwise: a header asking for more argon2id memory,
/// passes or lanes is refused ([`FormatError::KdfBudget`]) before any work, since nothing
/// in a file can be trusted before it is unlocked.
///
/// ```
/// use parcrypt_format::{Argon2Params, Decryptor, Encryptor, Format, FormatError, KdfLimits};
/// use parcrypt_format::{Secret, Setup};
///
/// // 512 MiB and one pass: more memory than the default budget of 256 MiB.
/// let setup = Setup {
///     argon2: Argon2Params { memory_kib: 512 * 1024, passes: 1, lanes: 1 },
///     ..Setup::default()
/// };
/// let envelope = parcrypt_format::Envelope::create_with_salts(
///     &Setup { argon2: Argon2Params { memory_kib: 64, passes: 1, lanes: 1 }, ..setup },
///     Secret::Passphrase(b"pass"),
///     parcrypt_format::Salts { cobblestone: [0; 24], argon2: [0; 16] },
/// )?.0;
/// let mut header = envelope.to_bytes();
/// header[12..16].copy_from_slice(&(512u32 * 1024).to_be_bytes());
///
/// let refused = Decryptor::new(Format::Parcrypt, &header[..])?
///     .unlock(Secret::Passphrase(b"pass"), b"");
/// assert!(matches!(refused, Err(FormatError::KdfBudget { .. })));
///
/// let raised = KdfLimits { max_memory_kib: 512 * 1024, ..KdfLimits::DEFAULT };
/// let decryptor = Decryptor::new(Format::Parcrypt, &header[..])?.kdf_limits(raised);
/// assert!(decryptor.check_kdf().is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Decryptor<R> {
    input: R,
    envelope: Envelope,
    limits: KdfLimits,
}

impl<R: Read> Decryptor<R> {
    /// Reads the envelope from `input` (no further than its end).
    pub fn new(format: Format, mut input: R) -> Result<Decryptor<R>, FormatError> {
        let envelope = Envelope::read(format, &mut input)?;
        Ok(Decryptor {
            input,
            envelope,
            limits: KdfLimits::DEFAULT,
        })
    }

    /// The argon2id budget [`Decryptor::unlock`] holds the header to (default
    /// [`KdfLimits::DEFAULT`], four times parcrypt's default costs). Raise it only for
    /// files from a source trusted not to make the reader spend gigabytes and minutes.
    pub fn kdf_limits(mut self, limits: KdfLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Refuses a header over the budget ([`FormatError::KdfBudget`]) without doing any
    /// work: call it before asking for a passphrase. [`Decryptor::unlock`] checks again.
    pub fn check_kdf(&self) -> Result<(), FormatError> {
        self.envelope.check_kdf(&self.limits)
    }

    /// The envelope: [`Envelope::needs_passphrase`] and [`Envelope::needs_identity`] say
    /// which secret to ask for.
    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// Derives the message keys from `secret` and `context` (argon2id first for a
    /// passphrase, within the [`Decryptor::kdf_limits`] budget; for a file to recipients,
    /// the file key unwrapped by the first identity that can and the header's MAC checked)
    /// and checks them against the key commitment, before any chunk is read.
    pub fn unlock(
        self,
        secret: Secret<'_>,
        context: &[u8],
    ) -> Result<UnlockedDecryptor<R>, FormatError> {
        let keys = self.envelope.unlock_within(secret, context, &self.limits)?;
        Ok(UnlockedDecryptor {
            input: self.input,
            keys,
        })
    }
}

/// A message whose secret was right: choose how to read its plaintext.
pub struct UnlockedDecryptor<R> {
    input: R,
    keys: MessageKeys,
}

impl<R: Read> UnlockedDecryptor<R> {
    /// The plaintext as a [`Read`], opened a batch of chunks at a time on `batcher`.
    pub fn reader(self, batcher: &dyn ChunkBatcher) -> DecryptingReader<'_, R> {
        DecryptingReader {
            input: self.input,
            keys: self.keys,
            batcher,
            buffer: Vec::new(),
            next_chunk: 0,
            position: 0,
            available: 0,
            pending: None,
            ended: false,
            failed: false,
        }
    }

    /// Decrypts the rest of the input into `writer`, reading, opening and writing in three
    /// overlapping stages; returns the plaintext bytes. Only authenticated chunks reach
    /// `writer`; on error, what was written is an incomplete prefix to discard.
    pub fn decrypt_to(
        mut self,
        batcher: &dyn ChunkBatcher,
        writer: &mut (dyn Write + Send),
        options: &StreamOptions<'_>,
    ) -> Result<u64, FormatError>
    where
        R: Send,
    {
        decrypt_chunks(batcher, &self.keys, &mut self.input, writer, options)
    }
}

impl<R: Read + Seek> UnlockedDecryptor<R> {
    /// The plaintext as a [`Read`] + [`Seek`]: a read opens only the chunks it needs.
    pub fn seekable(
        self,
        batcher: &dyn ChunkBatcher,
    ) -> Result<SeekableReader<'_, R>, FormatError> {
        SeekableReader::new(self.input, self.keys, batcher)
    }

    /// Decrypts the plaintext bytes in `range` into `writer` through the three-stage
    /// pipeline, reading only the chunks that cover it; returns the bytes written.
    pub fn decrypt_range_to(
        mut self,
        batcher: &dyn ChunkBatcher,
        range: ByteRange,
        writer: &mut (dyn Write + Send),
        options: &StreamOptions<'_>,
    ) -> Result<u64, FormatError>
    where
        R: Send,
    {
        let chunks_offset = self.input.stream_position().map_err(FormatError::Read)?;
        decrypt_range(
            batcher,
            &self.keys,
            &mut self.input,
            chunks_offset,
            range,
            writer,
            options,
        )
    }
}

/// A [`Read`] that yields a message's plaintext, made by [`UnlockedDecryptor::reader`]. It
/// reads a batch of sealed chunks, opens them on the batcher, and hands out their text;
/// a damaged chunk or a missing end is an error once the authenticated chunks before it
/// are read, and no byte of a chunk that failed is ever handed out.
pub struct DecryptingReader<'b, R> {
    input: R,
    keys: MessageKeys,
    batcher: &'b dyn ChunkBatcher,
    /// Opened chunks in their sealed layout; allocated on the first read.
    buffer: Vec<u8>,
    /// The message index of the chunk after the buffer's.
    next_chunk: u64,
    /// Plaintext bytes of the buffer already handed out.
    position: usize,
    /// Plaintext bytes of the buffer that authenticated.
    available: usize,
    /// The error to return once the authenticated bytes before it are handed out.
    pending: Option<FormatError>,
    /// The message ended properly with the buffer's chunks.
    ended: bool,
    failed: bool,
}

impl<R: Read> DecryptingReader<'_, R> {
    /// Reads and opens the next batch of chunks.
    fn next_batch(&mut self) -> Result<(), FormatError> {
        if self.buffer.is_empty() {
            let batch = self.batcher.preferred_batch_chunks().max(1);
            self.buffer = vec![0u8; batch * SEALED_CHUNK_BYTES];
        }
        let filled = read_up_to(&mut self.input, &mut self.buffer)?;
        let input_ended = filled < self.buffer.len();
        let full = filled / SEALED_CHUNK_BYTES;
        let tail = filled % SEALED_CHUNK_BYTES;
        // A message ends with a short chunk of at least a tag. The whole chunks before a
        // bad ending are opened first, so that damage is reported before truncation.
        let (openable, ending) = match (input_ended, tail) {
            (false, _) => (filled, None),
            (true, 0) => (
                filled,
                Some(FormatError::TruncatedAfter {
                    chunks: self.next_chunk + full as u64,
                }),
            ),
            (true, tail) if tail < TAG_BYTES => (
                full * SEALED_CHUNK_BYTES,
                Some(FormatError::TruncatedChunk {
                    index: self.next_chunk + full as u64,
                    bytes: tail,
                }),
            ),
            (true, _) => (filled, None),
        };
        let first = self.next_chunk;
        let batch = &mut self.buffer[..openable];
        let chunks = batch_chunks(first, batch)?;
        self.position = 0;
        match self.batcher.open_batch(&self.keys, first, batch) {
            Ok(()) => {
                self.available = openable - chunks as usize * TAG_BYTES;
                self.ended = input_ended && ending.is_none();
                self.pending = ending;
            }
            Err(error @ FormatError::DamagedChunk { index, .. })
                if index >= first && index < first + chunks =>
            {
                self.available = (index - first) as usize * CHUNK_BYTES;
                self.pending = Some(error);
            }
            Err(error) => {
                self.available = 0;
                return Err(error);
            }
        }
        self.next_chunk = first + chunks;
        Ok(())
    }
}

impl<R: Read> Read for DecryptingReader<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.failed {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the message failed to decrypt earlier; nothing more is released",
                ));
            }
            if out.is_empty() {
                return Ok(0);
            }
            if self.position < self.available {
                let copied = copy_text(
                    &self.buffer,
                    self.position,
                    self.available - self.position,
                    out,
                );
                self.position += copied;
                return Ok(copied);
            }
            if let Some(error) = self.pending.take() {
                self.failed = true;
                return Err(error.into());
            }
            if self.ended {
                return Ok(0);
            }
            if let Err(error) = self.next_batch() {
                self.failed = true;
                return Err(error.into());
            }
        }
    }
}

impl<R> Drop for DecryptingReader<'_, R> {
    fn drop(&mut self) {
        self.buffer.zeroize();
    }
}

/// Copies chunk text out of a buffer in the sealed layout (16 KiB of text, then a tag),
/// from text offset `from`, at most `limit` bytes and at most `out.len()`; returns the
/// bytes copied.
pub(crate) fn copy_text(sealed: &[u8], from: usize, limit: usize, out: &mut [u8]) -> usize {
    let wanted = limit.min(out.len());
    let mut copied = 0;
    while copied < wanted {
        let text = from + copied;
        let in_chunk = text % CHUNK_BYTES;
        let place = text / CHUNK_BYTES * SEALED_CHUNK_BYTES + in_chunk;
        let piece = (CHUNK_BYTES - in_chunk).min(wanted - copied);
        out[copied..copied + piece].copy_from_slice(&sealed[place..place + piece]);
        copied += piece;
    }
    copied
}
