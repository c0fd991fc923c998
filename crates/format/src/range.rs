//! Random-access decryption of a byte range of the plaintext.
//!
//! Plaintext byte `i` lives in chunk `i / 16 KiB`, and chunk `k` starts `k * (16 KiB + 16)`
//! bytes into the chunk area, so a range needs only the chunks that cover it. The message
//! length, though, is only a claim of the file's size until the final chunk authenticates
//! at its index: when a range is relative to the end, or reaches the end of the length the
//! size suggests (or past it), the final chunk is opened first, as the specification
//! requires.
//!
//! The chunks of the range then go through the same pipeline as streaming decryption
//! ([`crate::stream`]): one thread reads batch k+1, the backend opens batch k (spread over
//! every core by the CPU backends, in one launch on a GPU), one thread writes the part of
//! batch k-1 inside the range. Memory stays at three batches however long the range, and
//! a batch is written only once all its chunks authenticated.

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::str::FromStr;

use zeroize::Zeroizing;

use crate::chunks::ChunkBatcher;
use crate::cobblestone::{Geometry, MessageKeys, CHUNK_BYTES, SEALED_CHUNK_BYTES, TAG_BYTES};
use crate::error::FormatError;
use crate::stream::{run_pipeline, Emit, Fill, Step, StreamOptions};

/// One end of a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Bytes from the start of the plaintext.
    FromStart(u64),
    /// Bytes before the end of the plaintext.
    FromEnd(u64),
}

/// A half-open range of plaintext bytes, `START:END` as in Python slices: either end may
/// be omitted (the start, the end of the message), `-N` counts from the end, and ends past
/// the message are clamped to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    /// The first byte.
    pub start: Bound,
    /// `None`: to the end of the message.
    pub end: Option<Bound>,
}

impl ByteRange {
    /// Whether the range can only be resolved once the message length is authenticated.
    pub fn relative_to_end(&self) -> bool {
        matches!(self.start, Bound::FromEnd(_)) || !matches!(self.end, Some(Bound::FromStart(_)))
    }

    /// The range as absolute offsets in a message of `length` bytes (start <= end).
    pub fn resolve(&self, length: u64) -> (u64, u64) {
        let place = |bound: Bound| match bound {
            Bound::FromStart(offset) => offset.min(length),
            Bound::FromEnd(back) => length.saturating_sub(back),
        };
        let start = place(self.start);
        let end = self.end.map_or(length, place);
        (start, end.max(start))
    }
}

impl FromStr for ByteRange {
    type Err = FormatError;
    fn from_str(text: &str) -> Result<Self, FormatError> {
        let refuse = |why: &str| {
            FormatError::Range(format!(
                "bad range '{text}': {why} (write START:END, e.g. 0:4096, 1M:2M, -100:, :-1K)"
            ))
        };
        let (start, end) = text.split_once(':').ok_or_else(|| refuse("no ':'"))?;
        let bound = |part: &str| -> Result<Option<Bound>, FormatError> {
            let part = part.trim();
            if part.is_empty() {
                return Ok(None);
            }
            let (from_end, digits) = match part.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, part),
            };
            let value = parse_size(digits)
                .ok_or_else(|| refuse(&format!("'{part}' is not a byte offset")))?;
            Ok(Some(if from_end {
                Bound::FromEnd(value)
            } else {
                Bound::FromStart(value)
            }))
        };
        Ok(ByteRange {
            start: bound(start)?.unwrap_or(Bound::FromStart(0)),
            end: bound(end)?,
        })
    }
}

impl fmt::Display for ByteRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |bound: Bound| match bound {
            Bound::FromStart(offset) => offset.to_string(),
            Bound::FromEnd(back) => format!("-{back}"),
        };
        write!(
            f,
            "{}:{}",
            show(self.start),
            self.end.map(show).unwrap_or_default()
        )
    }
}

/// A byte count with an optional binary suffix (K, M, G, T; KiB etc. accepted).
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(split);
    let number: u64 = digits.parse().ok()?;
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        _ => return None,
    };
    number.checked_mul(1u64 << shift)
}

/// Decrypts plaintext bytes `range` of the message whose chunk area starts at
/// `chunks_offset` in `reader` (after the envelope) and runs to the end of the input, and
/// writes them to `writer`. Returns the bytes written. Every chunk is authenticated before
/// any of its bytes is written; when a chunk fails, the authenticated bytes of the range
/// before it are written and the call returns the error.
pub fn decrypt_range<R: Read + Seek + Send + ?Sized>(
    batcher: &dyn ChunkBatcher,
    keys: &MessageKeys,
    reader: &mut R,
    chunks_offset: u64,
    range: ByteRange,
    writer: &mut (dyn Write + Send),
    options: &StreamOptions<'_>,
) -> Result<u64, FormatError> {
    let total = reader.seek(SeekFrom::End(0)).map_err(FormatError::Read)?;
    let sealed = total
        .checked_sub(chunks_offset)
        .ok_or(FormatError::TruncatedHeader("Cobblestone"))?;
    let geometry = Geometry::for_sealed(sealed)?;
    let length = geometry.plaintext_bytes;
    // A range that ends at the message's end (or past it) depends on the length as much as
    // one counted from the end: a file cut at a chunk boundary, plus a tag's worth of junk,
    // claims a shorter length whose bytes all lie in genuine chunks.
    let reaches_end = matches!(range.end, Some(Bound::FromStart(end)) if end >= length)
        || matches!(range.start, Bound::FromStart(start) if start >= length);
    if range.relative_to_end() || reaches_end {
        authenticate_length(batcher, keys, reader, chunks_offset, &geometry)?;
    }
    let (start, end) = range.resolve(length);
    if start == end {
        writer.flush().map_err(FormatError::Write)?;
        return Ok(0);
    }
    let first = start / CHUNK_BYTES as u64;
    let last = (end - 1) / CHUNK_BYTES as u64;
    let sealed_end = |chunk: u64| Geometry::sealed_offset(chunk).min(sealed);
    reader
        .seek(SeekFrom::Start(
            chunks_offset + Geometry::sealed_offset(first),
        ))
        .map_err(FormatError::Read)?;
    let mut chunks = (&mut *reader).take(sealed_end(last + 1) - Geometry::sealed_offset(first));
    // A short range needs no more than its own chunks per buffer.
    let batch = options
        .batch_chunks(batcher)
        .min((last - first + 1) as usize);
    let mut next = first;
    let mut written = 0u64;
    run_pipeline(
        &mut chunks,
        writer,
        batch * SEALED_CHUNK_BYTES,
        Fill::Whole,
        options.stages,
        |buffer| {
            let count = (batch as u64).min(last - next + 1);
            let expected = (sealed_end(next + count) - Geometry::sealed_offset(next)) as usize;
            if buffer.filled != expected {
                // The size was measured above: the file was cut while it was read.
                let error = io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the input file became shorter while it was read",
                );
                return Err(FormatError::Read(error));
            }
            // The part of the range in this batch, as offsets into the batch's text.
            let text_start = next * CHUNK_BYTES as u64;
            let text_end = text_start + (expected as u64 - count * TAG_BYTES as u64);
            let skip = start.saturating_sub(text_start);
            let take = end.min(text_end) - start.max(text_start);
            let emit = |bytes: usize| Emit::Texts {
                sealed: bytes,
                skip: skip as usize,
                take: take as usize,
            };
            match batcher.open_batch(keys, next, &mut buffer.bytes[..expected]) {
                Ok(()) => {}
                Err(error @ FormatError::DamagedChunk { index, .. })
                    if index >= next && index < next + count =>
                {
                    // Release the range's bytes in the chunks before the damaged one only.
                    let good = index - next;
                    written += (good * CHUNK_BYTES as u64).saturating_sub(skip).min(take);
                    options.report(written);
                    return Ok(Step {
                        emit: emit(good as usize * SEALED_CHUNK_BYTES),
                        outcome: Some(Err(error)),
                    });
                }
                Err(error) => return Err(error),
            }
            written += take;
            options.report(written);
            next += count;
            Ok(Step {
                emit: emit(expected),
                outcome: (next > last).then_some(Ok(())),
            })
        },
    )?;
    Ok(written)
}

/// Authenticates the length that a chunk area's size claims (`geometry`, from
/// [`Geometry::for_sealed`]): the final chunk, the short one, must open at its index, as the
/// specification requires before anything depends on the length. The chunk area starts at
/// `chunks_offset` in `reader`. Fails with [`FormatError::DamagedChunk`] naming the final
/// chunk when the file was cut, extended or damaged there; its plaintext is wiped.
pub(crate) fn authenticate_length<R: Read + Seek + ?Sized>(
    batcher: &dyn ChunkBatcher,
    keys: &MessageKeys,
    reader: &mut R,
    chunks_offset: u64,
    geometry: &Geometry,
) -> Result<(), FormatError> {
    let last = geometry.chunks - 1;
    let start = Geometry::sealed_offset(last);
    let mut final_chunk = Zeroizing::new(vec![0u8; (geometry.sealed_bytes() - start) as usize]);
    read_at(reader, chunks_offset + start, &mut final_chunk)?;
    batcher.open_batch(keys, last, &mut final_chunk)
}

fn read_at<R: Read + Seek + ?Sized>(
    reader: &mut R,
    offset: u64,
    buffer: &mut [u8],
) -> Result<(), FormatError> {
    reader
        .seek(SeekFrom::Start(offset))
        .map_err(FormatError::Read)?;
    reader.read_exact(buffer).map_err(FormatError::Read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_resolve_like_slices() {
        let cases = [
            ("0:10", 100, (0, 10)),
            (":10", 100, (0, 10)),
            ("90:", 100, (90, 100)),
            ("-10:", 100, (90, 100)),
            (":-10", 100, (0, 90)),
            ("-10:-5", 100, (90, 95)),
            ("50:200", 100, (50, 100)),
            ("200:300", 100, (100, 100)),
            ("60:40", 100, (60, 60)),
            ("-1000:", 100, (0, 100)),
            ("1K:2K", 4096, (1024, 2048)),
            (":", 7, (0, 7)),
        ];
        for (text, length, expected) in cases {
            let range: ByteRange = text.parse().unwrap();
            assert_eq!(range.resolve(length), expected, "{text}");
        }
        assert!(!"0:10".parse::<ByteRange>().unwrap().relative_to_end());
        assert!("0:".parse::<ByteRange>().unwrap().relative_to_end());
        assert!("-5:10".parse::<ByteRange>().unwrap().relative_to_end());
        for bad in [
            "",
            "10",
            "a:b",
            "1:2:3",
            "--1:",
            "1X:",
            "99999999999999999999:",
        ] {
            assert!(bad.parse::<ByteRange>().is_err(), "{bad}");
        }
        assert_eq!("-5:1K".parse::<ByteRange>().unwrap().to_string(), "-5:1024");
    }
}
