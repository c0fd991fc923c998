//! The engine: splits a job into work items and runs them on a backend.
//!
//! Backends:
//! - `seq`: one thread, the reference every other backend is compared with.
//! - `threads`: a static equal split over N threads, as OpenMP's `parallel for` or Java
//!   `Thread`s do (seeds S0).
//! - `pool`: work stealing on rayon, as Java's ForkJoin does: the job is cut into many work
//!   items and idle threads steal them, so a slow core does not hold the others back.
//! - `auto`: picks by input size (see [`AUTO_PARALLEL_THRESHOLD`]).
//!
//! [`Crypter`] runs one message through a cipher and mode on an engine, in as many calls as
//! the caller likes; [`stream::process_stream`] drives it from a reader to a writer in bounded
//! memory.

pub mod crypter;
pub mod stream;

use std::fmt;
use std::str::FromStr;

use rayon::prelude::*;

pub use crypter::{Crypter, JobError};

/// Inputs shorter than this stay on one thread under `auto`: below it, waking the pool costs
/// more than the work (measured on the 2-core development machine; see README).
pub const AUTO_PARALLEL_THRESHOLD: usize = 256 * 1024;

/// The smallest work item `pool` cuts a job into.
const POOL_MIN_ITEM_BYTES: usize = 64 * 1024;

/// Where work runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    Seq,
    Threads,
    Pool,
    Auto,
}

impl Backend {
    pub const ALL: [Backend; 4] = [Backend::Seq, Backend::Threads, Backend::Pool, Backend::Auto];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Seq => "seq",
            Backend::Threads => "threads",
            Backend::Pool => "pool",
            Backend::Auto => "auto",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("unknown backend '{0}' (choose seq, threads, pool, opencl, cuda or auto)")]
    UnknownBackend(String),
    #[error("backend '{0}' is not available in this build yet (see `parcrypt devices`)")]
    Unavailable(String),
    #[error("--threads must be at least 1")]
    ZeroThreads,
    #[error("could not start the thread pool: {0}")]
    Pool(String),
}

impl FromStr for Backend {
    type Err = EngineError;
    fn from_str(name: &str) -> Result<Self, EngineError> {
        match name.to_ascii_lowercase().as_str() {
            "seq" => Ok(Backend::Seq),
            "threads" => Ok(Backend::Threads),
            "pool" => Ok(Backend::Pool),
            "auto" => Ok(Backend::Auto),
            "opencl" | "cuda" => Err(EngineError::Unavailable(name.to_string())),
            _ => Err(EngineError::UnknownBackend(name.to_string())),
        }
    }
}

/// The number of threads the machine offers.
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// A backend with its threads, ready to run work.
pub struct Engine {
    backend: Backend,
    threads: usize,
    pool: Option<rayon::ThreadPool>,
}

impl Engine {
    /// `threads`: `None` means all cores.
    pub fn new(backend: Backend, threads: Option<usize>) -> Result<Self, EngineError> {
        let threads = match threads {
            Some(0) => return Err(EngineError::ZeroThreads),
            Some(n) => n,
            None => available_threads(),
        };
        let pool = match backend {
            Backend::Pool | Backend::Auto => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|index| format!("parcrypt-pool-{index}"))
                    .build()
                    .map_err(|error| EngineError::Pool(error.to_string()))?,
            ),
            Backend::Seq | Backend::Threads => None,
        };
        let threads = if backend == Backend::Seq { 1 } else { threads };
        Ok(Engine { backend, threads, pool })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The backend that will actually run a job of `length` bytes.
    pub fn resolve(&self, length: usize) -> Backend {
        match self.backend {
            Backend::Auto if length < AUTO_PARALLEL_THRESHOLD || self.threads == 1 => Backend::Seq,
            Backend::Auto => Backend::Pool,
            other => other,
        }
    }

    /// Cuts `length` bytes into work items, each a multiple of `align` bytes except the
    /// last, and returns their lengths in order.
    pub fn plan(&self, length: usize, align: usize) -> Vec<usize> {
        let pieces = match self.resolve(length) {
            Backend::Seq => 1,
            Backend::Threads => self.threads,
            // Several items per thread so that stealing can even out uneven progress.
            _ => (self.threads * 8).min(length / POOL_MIN_ITEM_BYTES).max(1),
        };
        split_lengths(length, align, pieces)
    }

    /// Runs `work(index, offset, range)` over consecutive ranges of `data` with the given
    /// lengths (from [`Engine::plan`]) and returns the results in range order.
    pub fn run<R, F>(&self, data: &mut [u8], lengths: &[usize], work: F) -> Vec<R>
    where
        R: Send,
        F: Fn(usize, usize, &mut [u8]) -> R + Sync,
    {
        debug_assert_eq!(lengths.iter().sum::<usize>(), data.len());
        let mut ranges = Vec::with_capacity(lengths.len());
        let mut rest = data;
        let mut offset = 0;
        for &length in lengths {
            let (range, tail) = rest.split_at_mut(length);
            ranges.push((offset, range));
            offset += length;
            rest = tail;
        }
        if ranges.len() == 1 {
            let (offset, range) = ranges.pop().expect("one range");
            return vec![work(0, offset, range)];
        }
        match (self.resolve(offset), &self.pool) {
            (Backend::Pool, Some(pool)) => pool.install(|| {
                ranges
                    .into_par_iter()
                    .enumerate()
                    .map(|(index, (offset, range))| work(index, offset, range))
                    .collect()
            }),
            (Backend::Threads, _) => std::thread::scope(|scope| {
                let work = &work;
                let handles: Vec<_> = ranges
                    .into_iter()
                    .enumerate()
                    .map(|(index, (offset, range))| scope.spawn(move || work(index, offset, range)))
                    .collect();
                handles
                    .into_iter()
                    .map(|handle| match handle.join() {
                        Ok(result) => result,
                        Err(panic) => std::panic::resume_unwind(panic),
                    })
                    .collect()
            }),
            _ => ranges
                .into_iter()
                .enumerate()
                .map(|(index, (offset, range))| work(index, offset, range))
                .collect(),
        }
    }
}

/// Splits `length` into at most `pieces` lengths, all multiples of `align` except the last.
fn split_lengths(length: usize, align: usize, pieces: usize) -> Vec<usize> {
    let units = length / align;
    let pieces = pieces.clamp(1, units.max(1));
    let mut lengths = Vec::with_capacity(pieces);
    let base = units / pieces;
    let extra = units % pieces;
    for index in 0..pieces {
        lengths.push((base + usize::from(index < extra)) * align);
    }
    // Whatever does not fill a whole unit rides on the last range.
    *lengths.last_mut().expect("at least one piece") += length - units * align;
    lengths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_cover_the_input_and_stay_aligned() {
        for length in [0usize, 1, 15, 16, 17, 100, 4096 + 5, 1 << 20] {
            for align in [8usize, 16] {
                for pieces in [1usize, 2, 3, 7, 64] {
                    let lengths = split_lengths(length, align, pieces);
                    assert_eq!(lengths.iter().sum::<usize>(), length);
                    assert!(lengths.len() <= pieces.max(1));
                    for l in &lengths[..lengths.len() - 1] {
                        assert_eq!(l % align, 0);
                    }
                }
            }
        }
    }

    #[test]
    fn every_backend_runs_every_range_once_in_order() {
        for backend in Backend::ALL {
            let engine = Engine::new(backend, Some(3)).unwrap();
            let mut data = vec![0u8; 3 << 20];
            let lengths = engine.plan(data.len(), 16);
            let offsets = engine.run(&mut data, &lengths, |index, offset, range| {
                range.iter_mut().for_each(|b| *b = b.wrapping_add(1));
                (index, offset, range.len())
            });
            assert!(data.iter().all(|&b| b == 1), "{backend}: a byte was missed or done twice");
            let mut expected_offset = 0;
            for (position, (index, offset, length)) in offsets.into_iter().enumerate() {
                assert_eq!((index, offset), (position, expected_offset));
                expected_offset += length;
            }
            assert_eq!(expected_offset, data.len());
        }
    }

    #[test]
    fn names_parse_and_gpu_backends_explain_themselves() {
        for backend in Backend::ALL {
            assert_eq!(backend.name().parse::<Backend>().unwrap(), backend);
        }
        assert!(matches!("cuda".parse::<Backend>(), Err(EngineError::Unavailable(_))));
        assert!(matches!("gpu9".parse::<Backend>(), Err(EngineError::UnknownBackend(_))));
    }
}
