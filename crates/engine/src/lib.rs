//! The engine: splits a job into work items and runs them on a backend.
//!
//! Backends:
//! - `seq`: one thread, the reference every other backend is compared with.
//! - `threads`: a static equal split over N threads, as OpenMP's `parallel for` or Java
//!   `Thread`s do (seeds S0): thread i always takes the i-th equal range. The threads are
//!   started once per engine (like an OpenMP team), not once per job.
//! - `pool`: work stealing on rayon, as Java's ForkJoin does: the job is cut into many work
//!   items and idle threads steal them, so a slow core does not hold the others back.
//! - `opencl`, `cuda`: the GPU runs ECB, CTR, CBC decryption and GCM's CTR part; the CPU
//!   pool does what a GPU cannot split (CBC encryption) and, for now, GCM's GHASH.
//! - `auto`: picks by a calibrated cost model (see [`CostModel`]): one thread for inputs
//!   too small to repay waking the pool, the pool above; and, where `parcrypt tune` has
//!   measured this machine's GPU (a tune file, see [`parcrypt_gpu::tuning`]), the GPU for
//!   jobs at or above the size from which it was measured to finish first. The GPU is
//!   opened on the first job that goes to it.
//!
//! [`Crypter`] runs one message through a cipher and mode on an engine, in as many calls as
//! the caller likes; [`stream::process_stream`] drives it from a reader to a writer in bounded
//! memory.

pub mod crypter;
pub mod stream;
pub mod tune;

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

pub use crypter::{Crypter, JobError};

/// Under `auto`, inputs shorter than this stay on one thread when no cost model is known
/// for the job (a conservative figure for the fastest cipher; see [`CostModel`]).
pub const AUTO_PARALLEL_THRESHOLD: usize = 1 << 20;

/// The smallest work item `pool` cuts a job into.
const POOL_MIN_ITEM_BYTES: usize = 64 * 1024;

/// The least one-thread work `auto` puts in one item: enough that an item's own cost in the
/// pool (a steal, a join) stays a few per cent of it, for fast and slow ciphers alike.
const AUTO_MIN_ITEM_SECONDS: f64 = 5e-6;

/// The share of the one-thread time a split must promise to finish in (see `auto_items`).
const AUTO_MIN_SPLIT_GAIN: f64 = 0.9;

/// Cost models are kept per cipher, mode and direction.
const CALIBRATION_SLOTS: usize =
    parcrypt_ciphers::Algorithm::ALL.len() * parcrypt_modes::Mode::ALL.len() * 2;

/// Where work runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    Seq,
    Threads,
    Pool,
    Auto,
    Opencl,
    Cuda,
}

impl Backend {
    /// The CPU backends, always available.
    pub const CPU: [Backend; 4] = [Backend::Seq, Backend::Threads, Backend::Pool, Backend::Auto];
    /// The GPU backends, available when a device, its driver and (for CUDA) NVRTC are.
    pub const GPU: [Backend; 2] = [Backend::Opencl, Backend::Cuda];

    pub fn is_gpu(self) -> bool {
        Backend::GPU.contains(&self)
    }

    pub fn name(self) -> &'static str {
        match self {
            Backend::Seq => "seq",
            Backend::Threads => "threads",
            Backend::Pool => "pool",
            Backend::Auto => "auto",
            Backend::Opencl => "opencl",
            Backend::Cuda => "cuda",
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
    #[error("{backend} backend unavailable: {reason}")]
    Gpu { backend: Backend, reason: String },
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
            "opencl" => Ok(Backend::Opencl),
            "cuda" => Ok(Backend::Cuda),
            _ => Err(EngineError::UnknownBackend(name.to_string())),
        }
    }
}

/// The number of threads the machine offers.
pub fn available_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// What `auto` knows about a job: how fast one thread runs it, measured on this machine.
///
/// `auto` splits a job when the split's fixed cost (handing the items to the pool, waking
/// its threads, joining them, data moving between caches) plus the work spread over the
/// threads that get a share promises at least a tenth off the work on one thread:
/// `split + n / (rate * workers) < 0.9 * n / rate`, where no item holds less than 5
/// microseconds of work. Both figures are measured per cipher, mode and direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostModel {
    pub seq_bytes_per_second: f64,
    /// Seconds a split job takes beyond its one-thread time divided by the threads.
    pub split_seconds: f64,
}

/// A backend with its threads, ready to run work.
pub struct Engine {
    backend: Backend,
    threads: usize,
    pool: Option<rayon::ThreadPool>,
    /// The device of a GPU backend.
    gpu: Option<Box<dyn parcrypt_gpu::GpuDevice>>,
    /// `auto`'s cost models per cipher, mode and direction, measured once per engine (read
    /// without a lock: a small job's whole cost is a few hundred nanoseconds).
    calibration: [OnceLock<Option<CostModel>>; CALIBRATION_SLOTS],
    /// `auto`'s GPU, when a tune file says it wins some jobs.
    auto_gpu: Option<AutoGpu>,
}

/// A GPU `auto` may send jobs to: the tune table measured on it, and the device, opened
/// on first use (`None` inside when opening failed: `auto` then stays on the CPU).
struct AutoGpu {
    backend: Backend,
    table: Arc<parcrypt_gpu::TuneTable>,
    device: OnceLock<Option<Box<dyn parcrypt_gpu::GpuDevice>>>,
}

/// Whether an engine reads tune files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tuning {
    /// GPU backends launch with the shapes in this device's tune file, and `auto` uses a
    /// tuned GPU where it was measured to win.
    FromTuneFiles,
    /// No tune file is read: GPU backends use their default shape and `auto` stays on the
    /// CPU (what `parcrypt tune` itself compares against).
    Ignore,
}

impl Engine {
    /// `threads`: `None` means all cores. Reads tune files ([`Tuning::FromTuneFiles`]).
    pub fn new(backend: Backend, threads: Option<usize>) -> Result<Self, EngineError> {
        Self::with_tuning(backend, threads, Tuning::FromTuneFiles)
    }

    /// [`Engine::new`], saying whether tune files are read.
    pub fn with_tuning(
        backend: Backend,
        threads: Option<usize>,
        tuning: Tuning,
    ) -> Result<Self, EngineError> {
        let threads = match threads {
            Some(0) => return Err(EngineError::ZeroThreads),
            Some(n) => n,
            None => available_threads(),
        };
        let pool = match backend {
            Backend::Threads | Backend::Pool | Backend::Auto | Backend::Opencl | Backend::Cuda => {
                Some(
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .thread_name(|index| format!("parcrypt-pool-{index}"))
                        .build()
                        .map_err(|error| EngineError::Pool(error.to_string()))?,
                )
            }
            Backend::Seq => None,
        };
        let threads = if backend == Backend::Seq { 1 } else { threads };
        let gpu = match backend {
            Backend::Opencl | Backend::Cuda => {
                let device = open_gpu(backend)?;
                if tuning == Tuning::FromTuneFiles {
                    device.set_tuning(tune_table_for(backend, &device.identity()).map(Arc::new));
                }
                Some(device)
            }
            _ => None,
        };
        let auto_gpu = match (backend, tuning) {
            (Backend::Auto, Tuning::FromTuneFiles) => AutoGpu::discover(),
            _ => None,
        };
        Ok(Engine {
            backend,
            threads,
            pool,
            gpu,
            calibration: std::array::from_fn(|_| OnceLock::new()),
            auto_gpu,
        })
    }

    /// An `auto` engine that sends the jobs `table` says the GPU wins to `device` (already
    /// open): what [`Engine::new`] builds from a tune file, for callers and tests that hold
    /// the device and the table themselves.
    pub fn auto_with_gpu(
        threads: Option<usize>,
        device: Box<dyn parcrypt_gpu::GpuDevice>,
        table: parcrypt_gpu::TuneTable,
    ) -> Result<Self, EngineError> {
        let mut engine = Self::with_tuning(Backend::Auto, threads, Tuning::Ignore)?;
        let backend = match device.api() {
            parcrypt_gpu::GpuApi::Cuda => Backend::Cuda,
            parcrypt_gpu::GpuApi::Opencl => Backend::Opencl,
        };
        let table = Arc::new(table);
        device.set_tuning(Some(Arc::clone(&table)));
        engine.auto_gpu = Some(AutoGpu {
            backend,
            table,
            device: OnceLock::from(Some(device)),
        });
        Ok(engine)
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The GPU of a GPU backend.
    pub fn gpu(&self) -> Option<&dyn parcrypt_gpu::GpuDevice> {
        self.gpu.as_deref()
    }

    /// The GPU a job of `length` bytes runs on: a GPU backend's device, or under `auto` a
    /// tuned GPU where the tune table says it finishes such a job first (opened now if this
    /// is the first such job); `None` means the CPU.
    pub fn gpu_for(
        &self,
        spec: parcrypt_modes::CipherSpec,
        direction: parcrypt_modes::Direction,
        length: usize,
    ) -> Option<&dyn parcrypt_gpu::GpuDevice> {
        if let Some(gpu) = self.gpu.as_deref() {
            return Some(gpu);
        }
        let auto = self.auto_gpu.as_ref()?;
        if !auto.table.gpu_wins(spec, direction, length) {
            return None;
        }
        auto.device
            .get_or_init(|| {
                let device = open_gpu(auto.backend).ok()?;
                // The table belongs to the device it was measured on.
                (device.identity() == auto.table.device).then(|| {
                    device.set_tuning(Some(Arc::clone(&auto.table)));
                    device
                })
            })
            .as_deref()
    }

    /// Whether any job of this cipher, mode and direction may run on a GPU (so that a
    /// crypter prepares the key for one).
    pub fn may_use_gpu(
        &self,
        spec: parcrypt_modes::CipherSpec,
        direction: parcrypt_modes::Direction,
    ) -> bool {
        self.gpu.is_some()
            || self
                .auto_gpu
                .as_ref()
                .is_some_and(|auto| auto.table.gpu_ever_wins(spec, direction))
    }

    /// The tune table `auto` follows, with its GPU backend, when it has one.
    pub fn auto_tuning(&self) -> Option<(Backend, &parcrypt_gpu::TuneTable)> {
        self.auto_gpu
            .as_ref()
            .map(|auto| (auto.backend, auto.table.as_ref()))
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The backend that will actually run a job of `length` bytes.
    pub fn resolve(&self, length: usize, model: Option<CostModel>) -> Backend {
        match self.backend {
            Backend::Auto if self.auto_items(length, model) > 1 => Backend::Pool,
            Backend::Auto => Backend::Seq,
            other => other,
        }
    }

    /// How many items `auto` cuts a job of `length` bytes into: one (on the calling thread)
    /// unless the cost model says the pool finishes first; then items of at least
    /// [`AUTO_MIN_ITEM_SECONDS`] of work, at most 8 per thread, in a multiple of the threads
    /// that get one (so that no thread gets one more item than another).
    fn auto_items(&self, length: usize, model: Option<CostModel>) -> usize {
        if self.threads == 1 {
            return 1;
        }
        let Some(model) = model else {
            return if length >= AUTO_PARALLEL_THRESHOLD {
                self.pool_items(length)
            } else {
                1
            };
        };
        let alone = length as f64 / model.seq_bytes_per_second.max(1.0);
        let items = ((alone / AUTO_MIN_ITEM_SECONDS) as usize).min(self.threads * 8);
        if items < 2 {
            return 1;
        }
        let workers = items.min(self.threads);
        let shared = model.split_seconds + alone / workers as f64;
        // A split must promise a tenth off: one that misses by less leaves `auto` within its
        // target on one thread, while a wrong split (threads to wake, data to move to other
        // caches) can cost far more than it promised.
        if shared < alone * AUTO_MIN_SPLIT_GAIN {
            items - items % workers
        } else {
            1
        }
    }

    /// How many items `pool` cuts a job of `length` bytes into: several per thread, so
    /// that stealing can even out uneven progress, none under [`POOL_MIN_ITEM_BYTES`].
    fn pool_items(&self, length: usize) -> usize {
        (self.threads * 8).min(length / POOL_MIN_ITEM_BYTES).max(1)
    }

    /// The cost model of a cipher, mode and direction on this machine, measured on first use
    /// (a throwaway key over 256 KiB, on one thread and split, a few times each; see
    /// `crypter::calibrate`) and remembered by the engine. Only `auto` with several threads
    /// needs it; other engines return `None` without measuring.
    pub fn cost_model(
        &self,
        spec: parcrypt_modes::CipherSpec,
        direction: parcrypt_modes::Direction,
    ) -> Option<CostModel> {
        if self.backend != Backend::Auto || self.threads == 1 {
            return None;
        }
        let slot =
            ((spec.algorithm as usize * parcrypt_modes::Mode::ALL.len() + spec.mode as usize) * 2)
                + usize::from(direction == parcrypt_modes::Direction::Decrypt);
        *self.calibration[slot].get_or_init(|| crypter::calibrate(self, spec, direction))
    }

    /// Cuts `length` bytes into work items, each a multiple of `align` bytes except the
    /// last, and returns their lengths in order. `model` lets `auto` choose well.
    pub fn plan(&self, length: usize, align: usize, model: Option<CostModel>) -> Vec<usize> {
        let pieces = match self.backend {
            Backend::Seq => 1,
            Backend::Threads => self.threads,
            Backend::Auto => self.auto_items(length, model),
            Backend::Pool | Backend::Opencl | Backend::Cuda => self.pool_items(length),
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
        // Several ranges mean the plan chose to split: `auto` splits onto the pool.
        match (self.backend, &self.pool) {
            (Backend::Pool | Backend::Auto | Backend::Opencl | Backend::Cuda, Some(pool)) => pool
                .install(|| {
                    ranges
                        .into_par_iter()
                        .enumerate()
                        .map(|(index, (offset, range))| work(index, offset, range))
                        .collect()
                }),
            (Backend::Threads, Some(pool)) => {
                // Static split: pool thread t takes ranges t, t + N, t + 2N, ... whatever the
                // others are doing (no stealing); the plan makes that one range per thread.
                // Each slot is taken exactly once, by the thread it belongs to.
                let count = ranges.len();
                let slots: Vec<Slot<'_>> = ranges
                    .into_iter()
                    .map(|range| std::sync::Mutex::new(Some(range)))
                    .collect();
                let per_thread = pool.broadcast(|context| {
                    (context.index()..count)
                        .step_by(context.num_threads())
                        .filter_map(|index| {
                            let taken = slots[index]
                                .lock()
                                .unwrap_or_else(|poison| poison.into_inner())
                                .take();
                            taken.map(|(offset, range)| (index, work(index, offset, range)))
                        })
                        .collect::<Vec<_>>()
                });
                let mut results: Vec<(usize, R)> = per_thread.into_iter().flatten().collect();
                results.sort_by_key(|(index, _)| *index);
                results.into_iter().map(|(_, result)| result).collect()
            }
            _ => ranges
                .into_iter()
                .enumerate()
                .map(|(index, (offset, range))| work(index, offset, range))
                .collect(),
        }
    }
}

/// A range waiting for the `threads` team member it belongs to: (offset, bytes).
type Slot<'a> = std::sync::Mutex<Option<(usize, &'a mut [u8])>>;

impl AutoGpu {
    /// The tuned GPU `auto` may use: the first of CUDA and OpenCL whose device 0 has a tune
    /// file in which the GPU wins some job. Devices are only listed (not opened) here, and
    /// only for an API that has tune files at all.
    fn discover() -> Option<AutoGpu> {
        let directory = parcrypt_gpu::tuning::tune_directory()?;
        [Backend::Cuda, Backend::Opencl]
            .into_iter()
            .find_map(|backend| {
                if !parcrypt_gpu::tuning::any_tune_file(&directory, backend.name()) {
                    return None;
                }
                let identity = first_device_identity(backend)?;
                let table = tune_table_for(backend, &identity)?;
                let wins = table
                    .crossovers
                    .iter()
                    .any(|crossover| crossover.gpu_from_bytes.is_some());
                wins.then(|| AutoGpu {
                    backend,
                    table: Arc::new(table),
                    device: OnceLock::new(),
                })
            })
    }
}

/// The identity line of a GPU backend's device 0, from its listing (nothing is compiled).
fn first_device_identity(backend: Backend) -> Option<String> {
    let description = match backend {
        Backend::Opencl => parcrypt_gpu::OpenClDevice::list()
            .ok()?
            .first()?
            .to_string(),
        Backend::Cuda => parcrypt_gpu::CudaDevice::list().ok()?.first()?.to_string(),
        _ => return None,
    };
    Some(parcrypt_gpu::tuning::device_identity(
        backend.name(),
        &description,
    ))
}

/// The tune table stored for the device with this identity, if there is a readable one
/// measured on it. A missing or damaged file only means untuned shapes: never an error.
pub fn tune_table_for(backend: Backend, identity: &str) -> Option<parcrypt_gpu::TuneTable> {
    let directory = parcrypt_gpu::tuning::tune_directory()?;
    let path = parcrypt_gpu::tuning::tune_file(&directory, backend.name(), identity);
    parcrypt_gpu::TuneTable::load(&path)
        .ok()
        .flatten()
        .filter(|table| table.device == identity)
}

/// Opens the first device of a GPU backend, or says why it cannot.
fn open_gpu(backend: Backend) -> Result<Box<dyn parcrypt_gpu::GpuDevice>, EngineError> {
    let reason = |error: parcrypt_gpu::GpuError| EngineError::Gpu {
        backend,
        reason: error.to_string(),
    };
    match backend {
        Backend::Opencl => Ok(Box::new(
            parcrypt_gpu::OpenClDevice::open(0).map_err(reason)?,
        )),
        Backend::Cuda => Ok(Box::new(parcrypt_gpu::CudaDevice::open(0).map_err(reason)?)),
        other => unreachable!("{other} is not a GPU backend"),
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
        for backend in Backend::CPU {
            let engine = Engine::new(backend, Some(3)).unwrap();
            let mut data = vec![0u8; 3 << 20];
            let lengths = engine.plan(data.len(), 16, None);
            let offsets = engine.run(&mut data, &lengths, |index, offset, range| {
                range.iter_mut().for_each(|b| *b = b.wrapping_add(1));
                (index, offset, range.len())
            });
            assert!(
                data.iter().all(|&b| b == 1),
                "{backend}: a byte was missed or done twice"
            );
            let mut expected_offset = 0;
            for (position, (index, offset, length)) in offsets.into_iter().enumerate() {
                assert_eq!((index, offset), (position, expected_offset));
                expected_offset += length;
            }
            assert_eq!(expected_offset, data.len());
        }
    }

    #[test]
    fn auto_keeps_small_jobs_on_one_thread_and_splits_large_ones() {
        let engine = Engine::new(Backend::Auto, Some(2)).unwrap();
        let fast = Some(CostModel {
            seq_bytes_per_second: 50e9,
            split_seconds: 5e-6,
        });
        let slow = Some(CostModel {
            seq_bytes_per_second: 1e6,
            split_seconds: 5e-6,
        });
        assert_eq!(engine.resolve(1024, fast), Backend::Seq);
        assert_eq!(engine.resolve(1 << 30, fast), Backend::Pool);
        // A slow cipher repays the pool much sooner than a fast one.
        assert_eq!(engine.resolve(256 << 10, slow), Backend::Pool);
        assert_eq!(engine.plan(1024, 16, fast).len(), 1);
        let single = Engine::new(Backend::Auto, Some(1)).unwrap();
        assert_eq!(single.resolve(1 << 30, fast), Backend::Seq);
        // Calibration measures a positive rate and a finite split cost for real ciphers, and
        // remembers them.
        for name in ["aes-128-gcm", "bf-cbc"] {
            for direction in [
                parcrypt_modes::Direction::Encrypt,
                parcrypt_modes::Direction::Decrypt,
            ] {
                let model = engine.cost_model(name.parse().unwrap(), direction).unwrap();
                assert!(model.seq_bytes_per_second > 0.0 && model.seq_bytes_per_second.is_finite());
                assert!(
                    model.split_seconds >= 0.0 && model.split_seconds < 1.0,
                    "{model:?}"
                );
                assert_eq!(
                    engine.cost_model(name.parse().unwrap(), direction),
                    Some(model)
                );
            }
        }
        assert!(Engine::new(Backend::Pool, Some(2))
            .unwrap()
            .cost_model(
                "aes-128-gcm".parse().unwrap(),
                parcrypt_modes::Direction::Encrypt
            )
            .is_none());
    }

    #[test]
    fn auto_items_hold_enough_work_and_share_out_evenly() {
        for threads in [2usize, 3, 16] {
            let engine = Engine::new(Backend::Auto, Some(threads)).unwrap();
            for rate in [1e6, 7e8, 5e10] {
                let model = Some(CostModel {
                    seq_bytes_per_second: rate,
                    split_seconds: 8e-6,
                });
                for length in [0usize, 1, 1024, 16 << 10, 64 << 10, 1 << 20, 64 << 20] {
                    let lengths = engine.plan(length, 16, model);
                    assert_eq!(lengths.iter().sum::<usize>(), length);
                    let items = lengths.len();
                    assert!(items <= threads * 8, "{items} items for {threads} threads");
                    if items == 1 {
                        assert_eq!(engine.resolve(length, model), Backend::Seq);
                        continue;
                    }
                    assert_eq!(engine.resolve(length, model), Backend::Pool);
                    assert_eq!(
                        items % items.min(threads),
                        0,
                        "{items} items over {threads} threads"
                    );
                    for item in &lengths {
                        // Alignment may take up to one block off an item.
                        let seconds = (item + 16) as f64 / rate;
                        assert!(
                            seconds >= AUTO_MIN_ITEM_SECONDS,
                            "{item}-byte item at {rate} B/s"
                        );
                    }
                    // A split is only made where it promises a tenth off the one-thread time.
                    let alone = length as f64 / rate;
                    let workers = items.min(threads) as f64;
                    assert!(8e-6 + alone / workers < alone * AUTO_MIN_SPLIT_GAIN);
                }
            }
            // A job of many seconds on one thread is always split, into 8 items per thread.
            let slow = Some(CostModel {
                seq_bytes_per_second: 1e6,
                split_seconds: 8e-6,
            });
            assert_eq!(engine.plan(64 << 20, 16, slow).len(), threads * 8);
            // A split that costs more than it saves is not made, whatever the size.
            let costly = Some(CostModel {
                seq_bytes_per_second: 1e9,
                split_seconds: 1.0,
            });
            assert_eq!(engine.plan(64 << 20, 16, costly).len(), 1);
        }
    }

    #[test]
    fn names_parse_and_gpu_backends_explain_themselves() {
        for backend in Backend::CPU.into_iter().chain(Backend::GPU) {
            assert_eq!(backend.name().parse::<Backend>().unwrap(), backend);
        }
        assert!(matches!(
            "gpu9".parse::<Backend>(),
            Err(EngineError::UnknownBackend(_))
        ));
    }
}
