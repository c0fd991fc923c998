//! Encrypting into any [`Write`]: the [`Encryptor`] sets a message up, and either wraps a
//! writer ([`Encryptor::wrap_output`], for programs that produce data piece by piece) or
//! runs the three-stage streaming pipeline from a reader ([`Encryptor::encrypt_stream`],
//! the fastest path, which the command line and [`crate::file::encrypt_file`] take).

use std::io::{self, Read, Write};

use zeroize::Zeroize;

use crate::chunks::{batch_chunks, ChunkBatcher};
use crate::cobblestone::{MessageKeys, CHUNK_BYTES, SEALED_CHUNK_BYTES, TAG_BYTES};
use crate::error::FormatError;
use crate::message::{Envelope, Salts, Secret, Setup};
use crate::stream::{encrypt_chunks, StreamOptions};

/// A new message: its envelope (the bytes before chunk 0) and the keys its chunks are
/// sealed with, derived from a key or a passphrase.
///
/// ```
/// use std::io::Write;
/// use parcrypt_format::{Decryptor, Encryptor, Format, Secret, Setup, CpuChunks};
/// use parcrypt_engine::{Backend, Engine};
///
/// let engine = Engine::new(Backend::Pool, None)?;
/// let batcher = CpuChunks::new(&engine);
/// let key = [7u8; 16];
///
/// let encryptor = Encryptor::new(&Setup::default(), Secret::Key(&key))?;
/// let mut writer = encryptor.wrap_output(&batcher, Vec::new())?;
/// writer.write_all(b"hello, ")?;
/// writer.write_all(b"world")?;
/// let sealed = writer.finish()?;
///
/// let decryptor = Decryptor::new(Format::Parcrypt, &sealed[..])?;
/// let mut reader = decryptor.unlock(Secret::Key(&key), b"")?.reader(&batcher);
/// let mut plain = Vec::new();
/// std::io::Read::read_to_end(&mut reader, &mut plain)?;
/// assert_eq!(plain, b"hello, world");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Encryptor {
    envelope: Envelope,
    keys: MessageKeys,
}

impl Encryptor {
    /// Sets up a message with fresh random salts. A passphrase is stretched here (argon2id,
    /// as costly as `setup.argon2` says), once for the whole message.
    pub fn new(setup: &Setup<'_>, secret: Secret<'_>) -> Result<Encryptor, FormatError> {
        let (envelope, keys) = Envelope::create(setup, secret)?;
        Ok(Encryptor { envelope, keys })
    }

    /// [`Encryptor::new`] with given salts. A salt must never repeat under one key: this is
    /// for known-answer tests and reproducible comparisons only.
    pub fn with_salts(
        setup: &Setup<'_>,
        secret: Secret<'_>,
        salts: Salts,
    ) -> Result<Encryptor, FormatError> {
        let (envelope, keys) = Envelope::create_with_salts(setup, secret, salts)?;
        Ok(Encryptor { envelope, keys })
    }

    /// The bytes that precede the chunks, parsed.
    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// Writes the envelope to `output` and returns a writer that seals what is written to
    /// it, a batch of chunks at a time on `batcher` (so the chunks of a batch are sealed in
    /// parallel). [`EncryptingWriter::finish`] seals the final chunk; a writer dropped
    /// without it leaves a message that fails to decrypt (its final chunk is missing).
    pub fn wrap_output<W: Write>(
        self,
        batcher: &dyn ChunkBatcher,
        mut output: W,
    ) -> Result<EncryptingWriter<'_, W>, FormatError> {
        output
            .write_all(&self.envelope.to_bytes())
            .map_err(FormatError::Write)?;
        let batch = batcher.preferred_batch_chunks().max(1);
        Ok(EncryptingWriter {
            output: Some(output),
            batcher,
            keys: self.keys,
            buffer: vec![0u8; batch * SEALED_CHUNK_BYTES],
            batch,
            filled: 0,
            next_chunk: 0,
            failed: false,
        })
    }

    /// Encrypts everything `reader` yields into a whole message (envelope, then chunks) on
    /// `writer`, reading, sealing and writing in three overlapping stages; returns the
    /// plaintext bytes. The fastest way from one stream to another.
    pub fn encrypt_stream(
        self,
        batcher: &dyn ChunkBatcher,
        reader: &mut (dyn Read + Send),
        writer: &mut (dyn Write + Send),
        options: &StreamOptions<'_>,
    ) -> Result<u64, FormatError> {
        writer
            .write_all(&self.envelope.to_bytes())
            .map_err(FormatError::Write)?;
        encrypt_chunks(batcher, &self.keys, reader, writer, options)
    }
}

/// A [`Write`] that encrypts into another writer; made by [`Encryptor::wrap_output`].
///
/// Plaintext is copied once, straight into its chunk's place in a batch buffer; a full
/// batch is sealed in place on the batcher and written in one piece. An error leaves the
/// writer failed: every later call returns an error, since the output is incomplete.
pub struct EncryptingWriter<'b, W: Write> {
    /// `None` once [`EncryptingWriter::finish`] has handed it back.
    output: Option<W>,
    batcher: &'b dyn ChunkBatcher,
    keys: MessageKeys,
    /// Chunks in their sealed layout: 16 KiB of text, then room for the tag.
    buffer: Vec<u8>,
    /// Chunks per batch.
    batch: usize,
    /// Plaintext bytes in the buffer.
    filled: usize,
    /// The message index of the buffer's first chunk.
    next_chunk: u64,
    failed: bool,
}

impl<W: Write> EncryptingWriter<'_, W> {
    /// Seals the chunks in the buffer (with the final, short chunk when `last`) and writes
    /// them out.
    fn seal_buffer(&mut self, last: bool) -> Result<(), FormatError> {
        let full = self.filled / CHUNK_BYTES;
        let sealed = if last {
            full * SEALED_CHUNK_BYTES + self.filled % CHUNK_BYTES + TAG_BYTES
        } else {
            full * SEALED_CHUNK_BYTES
        };
        let batch = &mut self.buffer[..sealed];
        let chunks = batch_chunks(self.next_chunk, batch)?;
        self.batcher
            .seal_batch(&self.keys, self.next_chunk, batch)?;
        let output = self
            .output
            .as_mut()
            .ok_or_else(|| FormatError::Write(io::Error::other("the writer was finished")))?;
        output.write_all(batch).map_err(FormatError::Write)?;
        self.next_chunk += chunks;
        self.filled = 0;
        Ok(())
    }

    fn check(&self) -> io::Result<()> {
        if self.failed || self.output.is_none() {
            return Err(io::Error::other(
                "the encrypting writer failed or was finished earlier; its output is incomplete",
            ));
        }
        Ok(())
    }

    /// Seals the last chunk, flushes the output and hands it back. Only now is the message
    /// complete.
    pub fn finish(mut self) -> Result<W, FormatError> {
        self.check().map_err(FormatError::Write)?;
        self.seal_buffer(true)?;
        let mut output = self
            .output
            .take()
            .ok_or_else(|| FormatError::Write(io::Error::other("the writer was finished")))?;
        output.flush().map_err(FormatError::Write)?;
        Ok(output)
    }
}

impl<W: Write> Write for EncryptingWriter<'_, W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.check()?;
        let capacity = self.batch * CHUNK_BYTES;
        let mut written = 0;
        while written < data.len() {
            if self.filled == capacity {
                // A full chunk is never the final one (that one is short), so a full batch
                // can be sealed as soon as it fills.
                if let Err(error) = self.seal_buffer(false) {
                    self.failed = true;
                    return Err(error.into());
                }
            }
            let in_chunk = self.filled % CHUNK_BYTES;
            let place = self.filled / CHUNK_BYTES * SEALED_CHUNK_BYTES + in_chunk;
            let piece = (CHUNK_BYTES - in_chunk).min(data.len() - written);
            self.buffer[place..place + piece].copy_from_slice(&data[written..written + piece]);
            self.filled += piece;
            written += piece;
        }
        Ok(written)
    }

    /// Flushes the output; chunks still filling stay in the buffer (a chunk is sealed
    /// once, whole).
    fn flush(&mut self) -> io::Result<()> {
        self.check()?;
        match self.output.as_mut() {
            Some(output) => output.flush(),
            None => Ok(()),
        }
    }
}

impl<W: Write> Drop for EncryptingWriter<'_, W> {
    fn drop(&mut self) {
        // Plaintext not yet sealed must not linger in freed memory.
        self.buffer.zeroize();
    }
}
