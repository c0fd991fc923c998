//! Random access to a message's plaintext through [`Read`] + [`Seek`].
//!
//! Plaintext byte `i` lives in chunk `i / 16 KiB` at a fixed place in the file, so a read
//! opens only the chunks under it: reading 1 KiB in the middle of a large file reads and
//! authenticates one or two chunks. Sequential reads grow to whole batches, so that reading
//! on from a place is as parallel as streaming.
//!
//! The message length is only what the file's size claims until the final chunk
//! authenticates at its index (a cut file is otherwise a shorter valid-looking one): so
//! the final chunk is opened before anything depends on the length (a seek from the end,
//! a read at or past the end, [`SeekableReader::plaintext_len`]).

use std::io::{self, Read, Seek, SeekFrom};

use zeroize::Zeroize;

use crate::chunks::ChunkBatcher;
use crate::cobblestone::{Geometry, MessageKeys, CHUNK_BYTES, SEALED_CHUNK_BYTES, TAG_BYTES};
use crate::error::FormatError;
use crate::reader::copy_text;

/// A [`Read`] + [`Seek`] over a message's plaintext, made by
/// [`UnlockedDecryptor::seekable`](crate::reader::UnlockedDecryptor::seekable). Positions
/// are plaintext offsets.
///
/// ```
/// use std::io::{Read, Seek, SeekFrom};
/// use parcrypt_format::{CpuChunks, Decryptor, Encryptor, Format, Secret, Setup};
/// use parcrypt_engine::{Backend, Engine};
///
/// let engine = Engine::new(Backend::Seq, None)?;
/// let batcher = CpuChunks::new(&engine);
/// let key = [9u8; 16];
/// let plain: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
/// let mut sealed = Vec::new();
/// Encryptor::new(&Setup::default(), Secret::Key(&key))?
///     .encrypt_stream(&batcher, &mut &plain[..], &mut sealed, &Default::default())?;
///
/// let file = std::io::Cursor::new(sealed);
/// let mut reader = Decryptor::new(Format::Parcrypt, file)?
///     .unlock(Secret::Key(&key), b"")?
///     .seekable(&batcher)?;
/// reader.seek(SeekFrom::Start(50_000))?;
/// let mut piece = [0u8; 1024];
/// reader.read_exact(&mut piece)?;
/// assert_eq!(&piece[..], &plain[50_000..51_024]);
/// assert_eq!(reader.seek(SeekFrom::End(0))?, 100_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SeekableReader<'b, R> {
    input: R,
    keys: MessageKeys,
    batcher: &'b dyn ChunkBatcher,
    /// Where chunk 0 starts in the input.
    chunks_start: u64,
    /// Bytes of the chunk area.
    sealed_bytes: u64,
    /// What the input's size says; trusted once `length_verified`.
    geometry: Geometry,
    length_verified: bool,
    /// The plaintext position of the next read.
    position: u64,
    /// Opened chunks in their sealed layout; allocated on the first read.
    buffer: Vec<u8>,
    /// Chunks the buffer holds at most.
    batch: usize,
    /// The message index of the buffer's first chunk.
    window_first: u64,
    /// Authenticated plaintext bytes in the buffer (0: nothing to hand out).
    window_text: usize,
}

impl<'b, R: Read + Seek> SeekableReader<'b, R> {
    /// The chunks start at `input`'s current position and run to its end.
    pub(crate) fn new(
        mut input: R,
        keys: MessageKeys,
        batcher: &'b dyn ChunkBatcher,
    ) -> Result<SeekableReader<'b, R>, FormatError> {
        let chunks_start = input.stream_position().map_err(FormatError::Read)?;
        let end = input.seek(SeekFrom::End(0)).map_err(FormatError::Read)?;
        let sealed_bytes = end
            .checked_sub(chunks_start)
            .ok_or(FormatError::TruncatedHeader("Cobblestone"))?;
        let geometry = Geometry::for_sealed(sealed_bytes)?;
        Ok(SeekableReader {
            input,
            keys,
            batcher,
            chunks_start,
            sealed_bytes,
            geometry,
            length_verified: false,
            position: 0,
            buffer: Vec::new(),
            batch: batcher.preferred_batch_chunks().max(1),
            window_first: 0,
            window_text: 0,
        })
    }

    /// The plaintext length, once the final chunk has authenticated.
    pub fn plaintext_len(&mut self) -> Result<u64, FormatError> {
        self.verify_length()?;
        Ok(self.geometry.plaintext_bytes)
    }

    fn verify_length(&mut self) -> Result<(), FormatError> {
        if !self.length_verified {
            self.load(self.geometry.chunks - 1, 1)?;
        }
        Ok(())
    }

    /// Reads and opens up to `count` chunks from chunk `first` into the buffer. When a
    /// chunk fails, the authenticated chunks before it stay readable and the error is
    /// returned only if the first chunk failed (a later read reaches the failed one).
    fn load(&mut self, first: u64, count: usize) -> Result<(), FormatError> {
        let count = (count as u64).min(self.geometry.chunks - first);
        let start = Geometry::sealed_offset(first);
        let end = Geometry::sealed_offset(first + count).min(self.sealed_bytes);
        let bytes = (end - start) as usize;
        if self.buffer.len() < bytes {
            self.buffer = vec![0u8; self.batch.max(count as usize) * SEALED_CHUNK_BYTES];
        }
        self.window_text = 0;
        self.input
            .seek(SeekFrom::Start(self.chunks_start + start))
            .map_err(FormatError::Read)?;
        self.input
            .read_exact(&mut self.buffer[..bytes])
            .map_err(|error| match error.kind() {
                io::ErrorKind::UnexpectedEof => FormatError::Read(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the input file became shorter while it was read",
                )),
                _ => FormatError::Read(error),
            })?;
        self.window_first = first;
        match self
            .batcher
            .open_batch(&self.keys, first, &mut self.buffer[..bytes])
        {
            Ok(()) => {
                self.window_text = bytes - count as usize * TAG_BYTES;
                if first + count == self.geometry.chunks {
                    self.length_verified = true;
                }
                Ok(())
            }
            Err(FormatError::DamagedChunk { index, .. })
                if index > first && index < first + count =>
            {
                self.window_text = (index - first) as usize * CHUNK_BYTES;
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    fn window_start(&self) -> u64 {
        self.window_first * CHUNK_BYTES as u64
    }
}

impl<R: Read + Seek> Read for SeekableReader<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        if self.position >= self.geometry.plaintext_bytes {
            self.verify_length()?;
            return Ok(0);
        }
        let window_end = self.window_start() + self.window_text as u64;
        if self.position < self.window_start() || self.position >= window_end {
            let first = self.position / CHUNK_BYTES as u64;
            // Reading on from the window's end is streaming: take whole batches. A read
            // elsewhere takes only the chunks under it.
            let count = if self.window_text > 0 && self.position == window_end {
                self.batch
            } else {
                let reach = (self.position % CHUNK_BYTES as u64) as usize + out.len();
                reach.div_ceil(CHUNK_BYTES).clamp(1, self.batch)
            };
            self.load(first, count)?;
        }
        let from = (self.position - self.window_start()) as usize;
        let copied = copy_text(&self.buffer, from, self.window_text - from, out);
        self.position += copied as u64;
        Ok(copied)
    }
}

impl<R: Read + Seek> Seek for SeekableReader<'_, R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let (base, offset) = match to {
            SeekFrom::Start(position) => {
                self.position = position;
                return Ok(position);
            }
            SeekFrom::End(offset) => (self.plaintext_len()?, offset),
            SeekFrom::Current(offset) => (self.position, offset),
        };
        let position = base.checked_add_signed(offset).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot seek before the start of the plaintext",
            )
        })?;
        self.position = position;
        Ok(position)
    }
}

impl<R> Drop for SeekableReader<'_, R> {
    fn drop(&mut self) {
        self.buffer.zeroize();
    }
}
