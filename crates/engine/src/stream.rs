//! Streaming a message from a reader to a writer in bounded memory.
//!
//! The input is read in chunks of a fixed size; every chunk goes through the engine in
//! parallel while memory stays at about two chunks, whatever the input size. The last few
//! bytes (the padded block or the GCM tag, see [`Crypter::holdback`]) are kept back until
//! the end of the input is known.

use std::io::{self, Read, Write};

use crate::crypter::{Crypter, JobError};

/// Bytes read per chunk by default: large enough to feed every core, small enough for
/// bounded memory.
pub const DEFAULT_CHUNK_BYTES: usize = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("cannot read input: {0}")]
    Read(io::Error),
    #[error("cannot write output: {0}")]
    Write(io::Error),
    #[error("{0}")]
    Job(#[from] JobError),
}

/// Reads until `buffer` is full or the input ends; returns the bytes read.
fn fill(reader: &mut dyn Read, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

/// Runs the whole input through `crypter` and writes the output; returns the bytes written.
///
/// For GCM decryption the output is written *before* the tag is checked at the end: on
/// error the caller must discard what the writer received (the command line writes to a
/// temporary file that it deletes).
pub fn process_stream(
    mut crypter: Crypter<'_>,
    reader: &mut dyn Read,
    writer: &mut dyn Write,
    chunk_bytes: usize,
) -> Result<u64, StreamError> {
    let block_size = crypter.block_size();
    let holdback = crypter.holdback();
    let chunk_bytes = (chunk_bytes / 16).max(1) * 16;
    debug_assert_eq!(chunk_bytes % block_size, 0);
    let mut buffer = vec![0u8; chunk_bytes + holdback];
    let mut filled = 0;
    let mut written = 0u64;
    loop {
        let read = fill(reader, &mut buffer[filled..]).map_err(StreamError::Read)?;
        filled += read;
        if filled < buffer.len() {
            // The input has ended: the rest is the final piece.
            buffer.truncate(filled);
            crypter.finish(&mut buffer)?;
            writer.write_all(&buffer).map_err(StreamError::Write)?;
            writer.flush().map_err(StreamError::Write)?;
            return Ok(written + buffer.len() as u64);
        }
        crypter.update(&mut buffer[..chunk_bytes])?;
        writer.write_all(&buffer[..chunk_bytes]).map_err(StreamError::Write)?;
        written += chunk_bytes as u64;
        buffer.copy_within(chunk_bytes.., 0);
        filled = holdback;
    }
}
