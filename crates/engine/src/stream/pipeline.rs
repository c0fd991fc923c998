//! The one read -> process -> write pipeline that every stream runs: the raw cipher
//! ([`super::process_stream`]) and the Cobblestone chunks of `parcrypt_format::stream`.
//!
//! Three threads work over [`PIPELINE_BUFFERS`] buffers: one reads buffer k+1, the caller's
//! thread processes buffer k (all cores, or a GPU), one writes buffer k-1. A run then takes
//! about as long as its slowest stage rather than the sum of the three, and memory stays at
//! three buffers whatever the input size. The buffers travel between the threads through
//! bounded channels; nothing is copied or allocated per buffer by the pipeline itself.
//!
//! What a stream does is given as three parts: how the reader fills a buffer, how the
//! caller's thread processes it (and what the writer is to write of it, which may be less
//! than the buffer: bytes held back, tags left out), and the [`Emit`] that writes it. The
//! processing stage decides when the stream is complete or failed; on failure nothing it
//! did not hand to the writer is written, so a stage that releases only authenticated bytes
//! keeps that promise through the pipeline.

use std::io::{self, Read, Write};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::{Duration, Instant};

use zeroize::Zeroize;

/// Buffers in flight: one being read, one being processed, one being written.
pub const PIPELINE_BUFFERS: usize = 3;

/// A pipeline buffer and what the reader put in it.
pub struct Buffer {
    /// The buffer; a processing stage may replace it (a final piece that grew past it).
    pub bytes: Vec<u8>,
    /// Bytes the reader put in, wherever its fill function put them.
    pub filled: usize,
    /// The input ended within this buffer: it is the last one.
    pub ended: bool,
}

/// What the processing stage decided about a buffer.
pub struct Step<E, Error> {
    /// What the writer writes from the buffer.
    pub emit: E,
    /// `None`: go on; `Some(Ok)`: the stream is complete; `Some(Err)`: stop with this error
    /// once `emit` is written.
    pub outcome: Option<Result<(), Error>>,
}

/// How the writer writes a processed buffer.
pub trait Emit: Send {
    /// Writes this buffer's output, taken from `bytes` (the whole buffer).
    fn write_to(&self, writer: &mut dyn Write, bytes: &[u8]) -> io::Result<()>;
}

/// A range of the buffer, written as it is.
impl Emit for Range<usize> {
    fn write_to(&self, writer: &mut dyn Write, bytes: &[u8]) -> io::Result<()> {
        writer.write_all(&bytes[self.clone()])
    }
}

/// Why a pipeline stopped.
#[derive(Debug)]
pub enum PipelineError<Error> {
    /// The reader failed.
    Read(io::Error),
    /// The writer failed.
    Write(io::Error),
    /// The processing stage failed.
    Stage(Error),
}

/// The time each stage of the pipeline spent on its own work: reading (inside `read`),
/// processing (sealing, opening, encrypting on the backend), writing (inside `write`). The
/// stages overlap, so a run's wall time is about the largest of the three, not their sum; a
/// stage near the wall time is the one that bounds the run.
#[derive(Debug, Default)]
pub struct StageTimes {
    read_nanos: AtomicU64,
    process_nanos: AtomicU64,
    write_nanos: AtomicU64,
}

impl StageTimes {
    /// Time spent reading.
    pub fn read(&self) -> Duration {
        Duration::from_nanos(self.read_nanos.load(Ordering::Relaxed))
    }

    /// Time spent processing.
    pub fn process(&self) -> Duration {
        Duration::from_nanos(self.process_nanos.load(Ordering::Relaxed))
    }

    /// Time spent writing.
    pub fn write(&self) -> Duration {
        Duration::from_nanos(self.write_nanos.load(Ordering::Relaxed))
    }
}

/// Adds the time `work` takes to `counter`, when there is one.
fn timed<T>(counter: Option<&AtomicU64>, work: impl FnOnce() -> T) -> T {
    let Some(counter) = counter else {
        return work();
    };
    let started = Instant::now();
    let result = work();
    let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    counter.fetch_add(nanos, Ordering::Relaxed);
    result
}

/// Reads until `buffer` is full or the input ends; returns the bytes read.
pub fn read_full(reader: &mut dyn Read, buffer: &mut [u8]) -> io::Result<usize> {
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

/// The reader stage: fills free buffers and passes them on until the input ends or fails.
fn read_stage<F>(
    reader: &mut (dyn Read + Send),
    mut fill: F,
    free: Receiver<Buffer>,
    filled: SyncSender<io::Result<Buffer>>,
    time: Option<&AtomicU64>,
) where
    F: FnMut(&mut dyn Read, &mut Buffer) -> io::Result<()>,
{
    for mut buffer in free {
        let result = timed(time, || fill(reader, &mut buffer));
        let last = result.is_err() || buffer.ended;
        if filled.send(result.map(|()| buffer)).is_err() || last {
            return;
        }
    }
}

/// The writer stage: writes what each processed buffer emits and returns the buffer.
fn write_stage<E: Emit>(
    writer: &mut (dyn Write + Send),
    processed: Receiver<(Buffer, E)>,
    free: SyncSender<Buffer>,
    time: Option<&AtomicU64>,
) -> io::Result<()> {
    for (buffer, emit) in processed {
        timed(time, || emit.write_to(writer, &buffer.bytes))?;
        // The reader may have stopped already: a closed channel is not an error here.
        let _ = free.send(buffer);
    }
    writer.flush()
}

/// Runs `reader` through the pipeline into `writer` until `process` reports an outcome.
///
/// `fill` runs on the reader thread: it fills a buffer of `buffer_bytes` from the reader
/// and sets [`Buffer::filled`] and [`Buffer::ended`]. `process` runs on the calling thread,
/// in input order, and says what to write. A buffer whose processing failed is wiped and
/// never written. With `stages`, each stage's time is added up there.
pub fn run<E, Error, F, P>(
    reader: &mut (dyn Read + Send),
    writer: &mut (dyn Write + Send),
    buffer_bytes: usize,
    stages: Option<&StageTimes>,
    fill: F,
    mut process: P,
) -> Result<(), PipelineError<Error>>
where
    E: Emit,
    F: FnMut(&mut dyn Read, &mut Buffer) -> io::Result<()> + Send,
    P: FnMut(&mut Buffer) -> Result<Step<E, Error>, Error>,
{
    let (free_sender, free_receiver) = sync_channel::<Buffer>(PIPELINE_BUFFERS);
    let (filled_sender, filled_receiver) = sync_channel::<io::Result<Buffer>>(PIPELINE_BUFFERS);
    let (processed_sender, processed_receiver) = sync_channel::<(Buffer, E)>(PIPELINE_BUFFERS);
    for _ in 0..PIPELINE_BUFFERS {
        let buffer = Buffer {
            bytes: vec![0u8; buffer_bytes],
            filled: 0,
            ended: false,
        };
        free_sender
            .send(buffer)
            .expect("the channel holds every buffer");
    }
    std::thread::scope(|scope| {
        let read_time = stages.map(|stages| &stages.read_nanos);
        let write_time = stages.map(|stages| &stages.write_nanos);
        let process_time = stages.map(|stages| &stages.process_nanos);
        let reader_thread =
            scope.spawn(move || read_stage(reader, fill, free_receiver, filled_sender, read_time));
        let writer_thread =
            scope.spawn(move || write_stage(writer, processed_receiver, free_sender, write_time));

        let outcome = (|| -> Result<(), PipelineError<Error>> {
            for message in filled_receiver.iter() {
                let mut buffer = message.map_err(PipelineError::Read)?;
                let step = match timed(process_time, || process(&mut buffer)) {
                    Ok(step) => step,
                    Err(error) => {
                        buffer.bytes.zeroize();
                        return Err(PipelineError::Stage(error));
                    }
                };
                if processed_sender.send((buffer, step.emit)).is_err() {
                    break;
                }
                if let Some(outcome) = step.outcome {
                    return outcome.map_err(PipelineError::Stage);
                }
            }
            // Reached only when a stage stopped early: the writer's error explains it.
            Err(PipelineError::Write(io::Error::other("the writer stopped")))
        })();
        drop(processed_sender);
        drop(filled_receiver);
        let written = writer_thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        // Joined by hand, not left to the scope: a scope returns once a thread's closure is
        // done, before the thread has run its thread-local destructors (the channels keep a
        // context per thread), and a leak check at that moment (the fuzzers') would report
        // them; `join` waits until the thread has exited. The reader ends once the writer
        // has dropped the free channel and the filled one is closed.
        reader_thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match (outcome, written) {
            (Ok(()), Ok(())) => Ok(()),
            (Ok(()) | Err(PipelineError::Write(_)), Err(error)) => Err(PipelineError::Write(error)),
            (Err(error), _) => Err(error),
        }
    })
}
