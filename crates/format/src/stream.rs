//! Streaming the chunks of a message from a reader to a writer in bounded memory.
//!
//! Batches of chunks run through the engine's one streaming pipeline
//! (`parcrypt_engine::stream::pipeline`) over [`PIPELINE_BUFFERS`] batch buffers: one thread
//! reads batch k+1, the caller's thread seals or opens batch k on the backend (all cores, or
//! a GPU), one writes batch k-1. Memory stays at three batches (12 MiB with the default of
//! 256 chunks per batch) whatever the input size.
//!
//! Buffers hold chunks in their sealed layout (16 KiB of text, then room for the tag), so
//! the backend works in place: encryption reads plaintext straight into each chunk's text
//! (vectored reads) and writes the sealed batch in one piece; decryption reads the sealed
//! batch in one piece and writes each chunk's text (vectored writes).
//!
//! Decryption writes only chunks that authenticated: when a chunk fails, the chunks before
//! it are written, and the call returns the error. Nothing after a failed chunk, and no
//! byte of an unauthenticated chunk, ever reaches the writer.

use std::io::{self, IoSlice, IoSliceMut, Read, Write};

use parcrypt_engine::stream::pipeline::{self, read_full, PipelineError};
pub use parcrypt_engine::stream::{StageTimes, PIPELINE_BUFFERS};

pub use crate::chunks::DEFAULT_BATCH_CHUNKS;
use crate::chunks::{batch_chunks, ChunkBatcher};
use crate::cobblestone::{MessageKeys, CHUNK_BYTES, SEALED_CHUNK_BYTES, TAG_BYTES};
use crate::error::FormatError;

/// Tuning and reporting for a streaming call.
#[derive(Clone, Copy, Default)]
pub struct StreamOptions<'a> {
    /// Chunks per batch; 0 (the default) takes the backend's
    /// [`ChunkBatcher::preferred_batch_chunks`].
    pub batch_chunks: usize,
    /// Called on the processing thread after each batch with the plaintext bytes done so far.
    pub progress: Option<&'a (dyn Fn(u64) + Sync)>,
    /// Where the time of each stage is added up, for a breakdown of a run.
    pub stages: Option<&'a StageTimes>,
}

impl StreamOptions<'_> {
    /// `batch_chunks` chunks per batch, with no progress report and no stage timing.
    pub fn with_batch_chunks(batch_chunks: usize) -> Self {
        StreamOptions {
            batch_chunks,
            ..StreamOptions::default()
        }
    }

    pub(crate) fn batch_chunks(&self, batcher: &dyn ChunkBatcher) -> usize {
        match self.batch_chunks {
            0 => batcher.preferred_batch_chunks().max(1),
            chunks => chunks,
        }
    }

    pub(crate) fn report(&self, bytes: u64) {
        if let Some(progress) = self.progress {
            progress(bytes);
        }
    }
}

/// A batch buffer and what the reader put in it.
pub(crate) type Buffer = pipeline::Buffer;

/// How the reader fills a buffer.
#[derive(Clone, Copy)]
pub(crate) enum Fill {
    /// Plaintext into the text part of each chunk slot.
    Slots { chunks: usize },
    /// Sealed bytes, contiguously.
    Whole,
}

/// What the writer writes from a processed buffer.
pub(crate) enum Emit {
    /// The first `n` bytes, as they are.
    Prefix(usize),
    /// The text of each chunk in the first `sealed` bytes of a sealed layout, less the
    /// first `skip` bytes of that text, and at most `take` bytes of it (a byte range).
    Texts {
        sealed: usize,
        skip: usize,
        take: usize,
    },
}

impl Emit {
    /// All the text of the chunks in the first `sealed` bytes.
    fn all_texts(sealed: usize) -> Emit {
        Emit::Texts {
            sealed,
            skip: 0,
            take: usize::MAX,
        }
    }
}

impl pipeline::Emit for Emit {
    fn write_to(&self, writer: &mut dyn Write, bytes: &[u8]) -> io::Result<()> {
        match *self {
            Emit::Prefix(length) => writer.write_all(&bytes[..length]),
            Emit::Texts { sealed, skip, take } => write_texts(writer, &bytes[..sealed], skip, take),
        }
    }
}

/// What the processing stage decided about a buffer.
pub(crate) type Step = pipeline::Step<Emit, FormatError>;

/// Encrypts everything `reader` yields into the chunks of a message (the envelope must
/// already be written) and returns the plaintext bytes.
pub fn encrypt_chunks(
    batcher: &dyn ChunkBatcher,
    keys: &MessageKeys,
    reader: &mut (dyn Read + Send),
    writer: &mut (dyn Write + Send),
    options: &StreamOptions<'_>,
) -> Result<u64, FormatError> {
    let fill = |chunks| Fill::Slots { chunks };
    run_chunks(batcher, reader, writer, options, fill, |buffer, done| {
        let full = buffer.filled / CHUNK_BYTES;
        let sealed = if buffer.ended {
            // The final chunk: whatever is left, possibly nothing; its tag follows its text.
            full * SEALED_CHUNK_BYTES + buffer.filled % CHUNK_BYTES + TAG_BYTES
        } else {
            full * SEALED_CHUNK_BYTES
        };
        let batch_bytes = &mut buffer.bytes[..sealed];
        let chunks = batch_chunks(done.next_chunk, batch_bytes)?;
        batcher.seal_batch(keys, done.next_chunk, batch_bytes)?;
        done.advance(chunks, buffer.filled as u64, options);
        Ok(Step {
            emit: Emit::Prefix(sealed),
            outcome: buffer.ended.then_some(Ok(())),
        })
    })
}

/// Decrypts the chunks of a message (the envelope must already be read and unlocked) and
/// returns the plaintext bytes. Only authenticated chunks reach `writer`; on error, what
/// was written is a prefix of the message that the caller must treat as incomplete.
pub fn decrypt_chunks(
    batcher: &dyn ChunkBatcher,
    keys: &MessageKeys,
    reader: &mut (dyn Read + Send),
    writer: &mut (dyn Write + Send),
    options: &StreamOptions<'_>,
) -> Result<u64, FormatError> {
    let fill = |_| Fill::Whole;
    run_chunks(batcher, reader, writer, options, fill, |buffer, done| {
        let next_chunk = done.next_chunk;
        let filled = buffer.filled;
        let full = filled / SEALED_CHUNK_BYTES;
        let tail = filled % SEALED_CHUNK_BYTES;
        // A buffer that is not the last holds only full chunks. The last one must end with
        // the short final chunk: at least a tag. Whole chunks before a bad ending are
        // still opened first, so that damage is reported before truncation.
        let (openable, ending) = match (buffer.ended, tail) {
            (false, _) => (filled, None),
            (true, 0) => (
                filled,
                Some(FormatError::TruncatedAfter {
                    chunks: next_chunk + full as u64,
                }),
            ),
            (true, tail) if tail < TAG_BYTES => (
                full * SEALED_CHUNK_BYTES,
                Some(FormatError::TruncatedChunk {
                    index: next_chunk + full as u64,
                    bytes: tail,
                }),
            ),
            (true, _) => (filled, None),
        };
        let batch_bytes = &mut buffer.bytes[..openable];
        let chunks = batch_chunks(next_chunk, batch_bytes)?;
        match batcher.open_batch(keys, next_chunk, batch_bytes) {
            Ok(()) => {}
            Err(error @ FormatError::DamagedChunk { index, .. })
                if index >= next_chunk && index < next_chunk + chunks =>
            {
                // Release the chunks before the damaged one, and nothing else.
                let good = (index - next_chunk) as usize * SEALED_CHUNK_BYTES;
                done.advance(0, (index - next_chunk) * CHUNK_BYTES as u64, options);
                return Ok(Step {
                    emit: Emit::all_texts(good),
                    outcome: Some(Err(error)),
                });
            }
            Err(error) => return Err(error),
        }
        done.advance(chunks, openable as u64 - chunks * TAG_BYTES as u64, options);
        let outcome = match (buffer.ended, ending) {
            (_, Some(error)) => Some(Err(error)),
            (true, None) => Some(Ok(())),
            (false, None) => None,
        };
        Ok(Step {
            emit: Emit::all_texts(openable),
            outcome,
        })
    })
}

/// How far a message's chunks have come: the index of the next chunk and the plaintext
/// bytes sealed or released so far.
#[derive(Default)]
struct ChunksDone {
    next_chunk: u64,
    plaintext: u64,
}

impl ChunksDone {
    /// Counts `chunks` more chunks and `plaintext` more bytes, and reports the bytes.
    fn advance(&mut self, chunks: u64, plaintext: u64, options: &StreamOptions<'_>) {
        self.next_chunk += chunks;
        self.plaintext += plaintext;
        options.report(self.plaintext);
    }
}

/// The pipeline both directions run over a message's chunks: buffers of a batch of sealed
/// chunks (the batch `options` and `batcher` agree on), read as `fill` says for the batch,
/// each handed to `process` with how far the message has come. Returns the plaintext bytes.
fn run_chunks(
    batcher: &dyn ChunkBatcher,
    reader: &mut (dyn Read + Send),
    writer: &mut (dyn Write + Send),
    options: &StreamOptions<'_>,
    fill: impl FnOnce(usize) -> Fill,
    mut process: impl FnMut(&mut Buffer, &mut ChunksDone) -> Result<Step, FormatError>,
) -> Result<u64, FormatError> {
    let batch = options.batch_chunks(batcher);
    let mut done = ChunksDone::default();
    run_pipeline(
        reader,
        writer,
        batch * SEALED_CHUNK_BYTES,
        fill(batch),
        options.stages,
        |buffer| process(buffer, &mut done),
    )?;
    Ok(done.plaintext)
}

/// Reads plaintext into the text part of each chunk slot of `buffer`, in order, until every
/// slot is full or the input ends; returns the plaintext bytes read.
fn fill_slots(reader: &mut dyn Read, buffer: &mut [u8]) -> io::Result<usize> {
    let mut slices: Vec<IoSliceMut<'_>> = buffer
        .chunks_mut(SEALED_CHUNK_BYTES)
        .map(|slot| IoSliceMut::new(&mut slot[..CHUNK_BYTES]))
        .collect();
    let mut remaining = &mut slices[..];
    let mut filled = 0;
    while !remaining.is_empty() {
        match reader.read_vectored(remaining) {
            Ok(0) => break,
            Ok(read) => {
                filled += read;
                IoSliceMut::advance_slices(&mut remaining, read);
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

/// Writes the text of every chunk in `sealed` (a sealed layout of whole chunks and at most
/// one short final chunk), less its first `skip` bytes and at most `take` bytes of it.
fn write_texts(
    writer: &mut dyn Write,
    sealed: &[u8],
    mut skip: usize,
    mut take: usize,
) -> io::Result<()> {
    let mut slices: Vec<IoSlice<'_>> =
        Vec::with_capacity(sealed.len().div_ceil(SEALED_CHUNK_BYTES));
    for chunk in sealed.chunks(SEALED_CHUNK_BYTES) {
        if take == 0 {
            break;
        }
        let text = &chunk[..chunk.len().saturating_sub(TAG_BYTES)];
        let dropped = skip.min(text.len());
        skip -= dropped;
        let kept = take.min(text.len() - dropped);
        take -= kept;
        if kept > 0 {
            slices.push(IoSlice::new(&text[dropped..dropped + kept]));
        }
    }
    let mut remaining = &mut slices[..];
    IoSlice::advance_slices(&mut remaining, 0);
    while !remaining.is_empty() {
        match writer.write_vectored(remaining) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the output accepts no more bytes",
                ))
            }
            Ok(written) => IoSlice::advance_slices(&mut remaining, written),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Runs the engine's pipeline with a reader that fills buffers as `fill` says, until
/// `process` reports an outcome.
pub(crate) fn run_pipeline<P>(
    reader: &mut (dyn Read + Send),
    writer: &mut (dyn Write + Send),
    buffer_bytes: usize,
    fill: Fill,
    stages: Option<&StageTimes>,
    process: P,
) -> Result<(), FormatError>
where
    P: FnMut(&mut Buffer) -> Result<Step, FormatError>,
{
    let fill = move |reader: &mut dyn Read, buffer: &mut Buffer| {
        let (read, ended) = match fill {
            Fill::Slots { chunks } => {
                let read = fill_slots(reader, &mut buffer.bytes)?;
                (read, read < chunks * CHUNK_BYTES)
            }
            Fill::Whole => {
                let read = read_full(reader, &mut buffer.bytes)?;
                (read, read < buffer.bytes.len())
            }
        };
        buffer.filled = read;
        buffer.ended = ended;
        Ok(())
    };
    pipeline::run(reader, writer, buffer_bytes, stages, fill, process).map_err(
        |error| match error {
            PipelineError::Read(error) => FormatError::Read(error),
            PipelineError::Write(error) => FormatError::Write(error),
            PipelineError::Stage(error) => error,
        },
    )
}
