//! Random access to an age file's plaintext: only the chunks under a read are read and
//! opened (up to 64 in parallel), and the final chunk is authenticated when the reader is
//! made, so the plaintext's length can be trusted before any seek from the end.

use std::io::{self, BufReader, Read, Seek, SeekFrom};

use zeroize::Zeroize;

use crate::error::{Error, Result};
use crate::header::Header;
use crate::keys::Identity;
use crate::stream::{
    self, PayloadKey, BATCH_CHUNKS, CHUNK_BYTES, NONCE_BYTES, SEALED_CHUNK_BYTES, TAG_BYTES,
};

/// A `Read + Seek` view of a binary (not armored) age file's plaintext.
pub struct SeekableReader<R: Read + Seek> {
    input: R,
    key: PayloadKey,
    payload_start: u64,
    chunks: u64,
    plaintext_len: u64,
    position: u64,
    cache_first: u64,
    cache: Vec<u8>,
    sealed: Vec<u8>,
}

impl<R: Read + Seek> SeekableReader<R> {
    /// Reads the header of the age file `input`, unwraps the file key with `identities`,
    /// checks the header's MAC and authenticates the final chunk.
    pub fn new(mut input: R, identities: &[Identity]) -> Result<SeekableReader<R>> {
        input.seek(SeekFrom::Start(0))?;
        let header = {
            let mut buffered = BufReader::with_capacity(1 << 14, &mut input);
            let start = io::BufRead::fill_buf(&mut buffered)?;
            if !crate::trim_leading_whitespace(start).starts_with(b"age-encryption.org/")
                && crate::is_age(start)
            {
                return Err(Error::Armor(
                    "an armored file cannot be read at random: decrypt it whole".into(),
                ));
            }
            Header::parse(&mut buffered)?
        };
        let file_key = crate::unwrap_file_key(&header, identities)?;
        input.seek(SeekFrom::Start(header.len() as u64))?;
        let mut nonce = [0u8; NONCE_BYTES];
        input.read_exact(&mut nonce).map_err(|error| {
            if error.kind() == io::ErrorKind::UnexpectedEof {
                Error::Header("the payload's nonce is missing or short".into())
            } else {
                Error::Io(error)
            }
        })?;
        let payload_start = (header.len() + NONCE_BYTES) as u64;
        let total = input.seek(SeekFrom::End(0))?;
        let sealed_len = total - payload_start;
        if sealed_len == 0 {
            return Err(Error::Payload("no chunks after the nonce".into()));
        }
        let chunks = sealed_len.div_ceil(SEALED_CHUNK_BYTES as u64);
        let last_len = sealed_len - (chunks - 1) * SEALED_CHUNK_BYTES as u64;
        if last_len < TAG_BYTES as u64 {
            return Err(Error::Payload(format!(
                "chunk {} is shorter than its tag: the file is truncated",
                chunks - 1
            )));
        }
        let mut reader = SeekableReader {
            input,
            key: PayloadKey::new(&file_key, &nonce),
            payload_start,
            chunks,
            plaintext_len: (chunks - 1) * CHUNK_BYTES as u64 + last_len - TAG_BYTES as u64,
            position: 0,
            cache_first: 0,
            cache: Vec::new(),
            sealed: Vec::new(),
        };
        reader.load(chunks - 1, 1)?;
        Ok(reader)
    }

    /// The plaintext's length (authenticated: the final chunk was opened).
    pub fn plaintext_len(&self) -> u64 {
        self.plaintext_len
    }

    /// Reads and opens chunks `first..first + count` into the cache.
    fn load(&mut self, first: u64, count: u64) -> Result<()> {
        let end = first + count;
        let start_byte = self.payload_start + first * SEALED_CHUNK_BYTES as u64;
        let end_byte = (self.payload_start + end * SEALED_CHUNK_BYTES as u64)
            .min(self.payload_start + self.sealed_len());
        self.input.seek(SeekFrom::Start(start_byte))?;
        self.sealed.resize((end_byte - start_byte) as usize, 0);
        self.input.read_exact(&mut self.sealed)?;
        self.cache_first = first;
        stream::open(
            &self.key,
            first,
            &self.sealed,
            end == self.chunks,
            true,
            &mut self.cache,
        )
        .map_err(|failure| {
            self.cache.clear();
            Error::Payload(failure.reason)
        })
    }

    fn sealed_len(&self) -> u64 {
        (self.chunks - 1) * SEALED_CHUNK_BYTES as u64
            + (self.plaintext_len - (self.chunks - 1) * CHUNK_BYTES as u64)
            + TAG_BYTES as u64
    }
}

impl<R: Read + Seek> Read for SeekableReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.position >= self.plaintext_len || buf.is_empty() {
            return Ok(0);
        }
        let cache_start = self.cache_first * CHUNK_BYTES as u64;
        let cached =
            self.position >= cache_start && self.position < cache_start + self.cache.len() as u64;
        if !cached {
            let chunk = self.position / CHUNK_BYTES as u64;
            // The chunks under this read, at most a batch.
            let end = (self.position + buf.len() as u64 - 1) / CHUNK_BYTES as u64;
            let count = (end - chunk + 1)
                .min(BATCH_CHUNKS as u64)
                .min(self.chunks - chunk);
            self.load(chunk, count)?;
        }
        let offset = (self.position - self.cache_first * CHUNK_BYTES as u64) as usize;
        let n = buf.len().min(self.cache.len() - offset);
        buf[..n].copy_from_slice(&self.cache[offset..offset + n]);
        self.position += n as u64;
        Ok(n)
    }
}

impl<R: Read + Seek> Seek for SeekableReader<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(offset) => Some(offset),
            SeekFrom::End(delta) => self.plaintext_len.checked_add_signed(delta),
            SeekFrom::Current(delta) => self.position.checked_add_signed(delta),
        };
        let target = target.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the plaintext",
            )
        })?;
        self.position = target;
        Ok(target)
    }
}

impl<R: Read + Seek> Drop for SeekableReader<R> {
    fn drop(&mut self) {
        self.cache.zeroize();
    }
}
