//! Where work runs: the [`Backend`] names, the [`Engine`] that holds a backend's threads and
//! device, and the CPU backends' dispatch of work items (`seq`, the `threads` team, the
//! caller-led `pool` team). How `auto` chooses is in the cost module, the GPU in the gpu module.

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use parcrypt_ciphers::KernelFamily;

use crate::cost::{CostModel, CALIBRATION_SLOTS};
use crate::gpu::AutoGpu;
use crate::team::Team;

/// Where work runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// One thread, the reference every other backend is compared with.
    Seq,
    /// A static equal split over N threads, as OpenMP's `parallel for` or Java `Thread`s do:
    /// thread i always takes the i-th equal range. The threads are started once
    /// per engine (like an OpenMP team), not once per job.
    Threads,
    /// Dynamic self-scheduling, in the spirit of Java's ForkJoin: the job is cut into many
    /// work items that the caller and the pool's threads take in turn as each is free, so
    /// that a slow core does not hold the others back.
    Pool,
    /// One thread or the pool, chosen per job by a cost model measured on this machine;
    /// with a tune file, also a GPU for the jobs it was measured to finish first.
    Auto,
    /// The first OpenCL device (or the one the builder names).
    Opencl,
    /// The first CUDA device (or the one the builder names).
    Cuda,
    /// The first HIP device, an AMD GPU (or the one the builder names).
    Hip,
}

impl Backend {
    /// The CPU backends, always available.
    pub const CPU: [Backend; 4] = [Backend::Seq, Backend::Threads, Backend::Pool, Backend::Auto];
    /// The GPU backends, available when a device, its driver and (for CUDA) NVRTC or (for
    /// HIP) hiprtc are.
    pub const GPU: [Backend; 3] = [Backend::Opencl, Backend::Cuda, Backend::Hip];

    /// Whether this backend runs its work on a GPU.
    pub fn is_gpu(self) -> bool {
        Backend::GPU.contains(&self)
    }

    /// The name the command line and tune files use.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Seq => "seq",
            Backend::Threads => "threads",
            Backend::Pool => "pool",
            Backend::Auto => "auto",
            Backend::Opencl => "opencl",
            Backend::Cuda => "cuda",
            Backend::Hip => "hip",
        }
    }

    /// Whether this backend keeps a thread pool (every backend but `seq`: GPU backends run
    /// CBC encryption and, on devices without a GHASH kernel, GHASH on it).
    fn has_pool(self) -> bool {
        self != Backend::Seq
    }
}

impl From<parcrypt_gpu::GpuApi> for Backend {
    /// The backend that drives devices of a GPU API.
    fn from(api: parcrypt_gpu::GpuApi) -> Self {
        match api {
            parcrypt_gpu::GpuApi::Opencl => Backend::Opencl,
            parcrypt_gpu::GpuApi::Cuda => Backend::Cuda,
            parcrypt_gpu::GpuApi::Hip => Backend::Hip,
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Backend {
    type Err = EngineError;
    fn from_str(name: &str) -> Result<Self, EngineError> {
        Backend::CPU
            .into_iter()
            .chain(Backend::GPU)
            .find(|backend| backend.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| EngineError::UnknownBackend(name.to_string()))
    }
}

/// Why an engine could not be built.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A backend name that is not one of [`Backend::CPU`] or [`Backend::GPU`].
    #[error("unknown backend '{0}' (choose seq, threads, pool, opencl, cuda, hip or auto)")]
    UnknownBackend(String),
    /// The GPU backend asked for has no usable device here.
    #[error("{backend} backend unavailable: {reason}")]
    Gpu {
        /// The backend asked for.
        backend: Backend,
        /// What the GPU layer said.
        reason: String,
    },
    /// Zero threads were asked for.
    #[error("--threads must be at least 1")]
    ZeroThreads,
    /// More threads were asked for than [`max_threads`] allows on this machine.
    #[error("--threads {asked} is too many: at most {max} on this machine ({per_core} per core, at least {floor})", per_core = THREADS_PER_CORE, floor = MIN_MAX_THREADS)]
    TooManyThreads {
        /// The threads asked for.
        asked: usize,
        /// The most this machine allows.
        max: usize,
    },
    /// The operating system refused the pool's threads.
    #[error("could not start the thread pool: {0}")]
    Pool(String),
    /// [`crate::EngineBuilder::kernels`] named a kernel family this CPU cannot run.
    #[error(transparent)]
    UnsupportedKernels(#[from] parcrypt_ciphers::kernels::UnsupportedKernels),
}

/// The number of threads the machine offers.
pub fn available_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// How many threads per core [`max_threads`] allows: the work is CPU-bound, so more
/// threads than cores only add switching; eight per core leaves room for experiments (and
/// for cores a container hides) without letting a typo start a hundred thousand threads.
pub const THREADS_PER_CORE: usize = 8;

/// The least [`max_threads`] ever is, however few cores are seen, so that a small machine
/// or container can still run scaling experiments.
pub const MIN_MAX_THREADS: usize = 64;

/// The most threads an engine accepts on this machine: [`THREADS_PER_CORE`] times
/// [`available_threads`], and at least [`MIN_MAX_THREADS`]. More is refused with
/// [`EngineError::TooManyThreads`] before any thread is started.
pub fn max_threads() -> usize {
    available_threads()
        .saturating_mul(THREADS_PER_CORE)
        .max(MIN_MAX_THREADS)
}

/// Checks a thread count for an engine: at least 1 and at most [`max_threads`]. Front ends
/// call it to refuse a count as soon as it is parsed; [`Engine::builder`] calls it too.
pub fn check_threads(threads: usize) -> Result<usize, EngineError> {
    let max = max_threads();
    match threads {
        0 => Err(EngineError::ZeroThreads),
        n if n > max => Err(EngineError::TooManyThreads { asked: n, max }),
        n => Ok(n),
    }
}

/// A backend with its threads, ready to run work. Build one with [`Engine::builder`]
/// (or [`Engine::new`] for a backend and thread count alone).
///
/// Cloning is cheap: the threads, the device and the measured cost models are shared by
/// every clone (and stop when the last clone is dropped), so a program builds one engine and
/// hands clones to whatever needs one.
#[derive(Clone)]
pub struct Engine {
    pub(crate) backend: Backend,
    pub(crate) threads: usize,
    /// The `threads` backend's team (rayon, for its broadcast).
    pub(crate) pool: Option<Arc<rayon::ThreadPool>>,
    /// The team that every other backend but `seq` splits work over, led by the caller.
    pub(crate) team: Option<Arc<Team>>,
    /// The device of a GPU backend.
    pub(crate) gpu: Option<Arc<dyn parcrypt_gpu::GpuDevice>>,
    /// `auto`'s cost models per cipher, mode and direction, measured once per engine (read
    /// without a lock: a small job's whole cost is a few hundred nanoseconds).
    pub(crate) calibration: Arc<[OnceLock<Option<CostModel>>; CALIBRATION_SLOTS]>,
    /// `auto`'s GPU, when a tune file says it wins some jobs.
    pub(crate) auto_gpu: Option<Arc<AutoGpu>>,
    /// The highest CPU kernel family its keys may use (`None`: the fastest this CPU has).
    pub(crate) kernels: Option<KernelFamily>,
}

/// Lets every call that takes an engine (`impl Into<Arc<Engine>>`) take `&engine` too: the
/// handle made is a clone, which shares the engine's threads and device.
impl From<&Engine> for Arc<Engine> {
    fn from(engine: &Engine) -> Self {
        Arc::new(engine.clone())
    }
}

impl Engine {
    /// An engine on `backend` with `threads` threads (`None`: all cores) that reads no tune
    /// file: GPU backends launch with their default shapes and `auto` stays on the CPU. Use
    /// [`Engine::builder`] to name a device or a tune file.
    ///
    /// ```
    /// use parcrypt_engine::{Backend, Engine};
    /// let engine = Engine::new(Backend::Pool, Some(2))?;
    /// assert_eq!((engine.backend(), engine.threads()), (Backend::Pool, 2));
    /// # Ok::<(), parcrypt_engine::EngineError>(())
    /// ```
    pub fn new(backend: Backend, threads: Option<usize>) -> Result<Self, EngineError> {
        let mut builder = Engine::builder().backend(backend);
        if let Some(threads) = threads {
            builder = builder.threads(threads);
        }
        builder.build()
    }

    /// Starts the threads of `backend` (one for `seq`), a `pool` team's threads looking for
    /// the next job for `spin` before they park; the GPU and tune table are added by the
    /// builder.
    pub(crate) fn start(
        backend: Backend,
        threads: Option<usize>,
        spin: std::time::Duration,
    ) -> Result<Self, EngineError> {
        let threads = match threads {
            Some(n) => check_threads(n)?,
            None => available_threads(),
        };
        let pool = if backend == Backend::Threads {
            Some(Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|index| format!("parcrypt-pool-{index}"))
                    .build()
                    .map_err(|error| EngineError::Pool(error.to_string()))?,
            ))
        } else {
            None
        };
        let team = if backend.has_pool() && backend != Backend::Threads {
            Some(Arc::new(
                Team::start(threads, spin).map_err(|error| EngineError::Pool(error.to_string()))?,
            ))
        } else {
            None
        };
        Ok(Engine {
            backend,
            threads: if backend.has_pool() { threads } else { 1 },
            pool,
            team,
            gpu: None,
            calibration: Arc::new(std::array::from_fn(|_| OnceLock::new())),
            auto_gpu: None,
            kernels: None,
        })
    }

    /// The backend this engine was built for (`auto` stays `auto`; see [`Engine::resolve`]).
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The threads work is split over (1 for `seq`).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The highest CPU kernel family this engine's keys may use
    /// ([`crate::EngineBuilder::kernels`]; `None`: the fastest this CPU has).
    pub fn kernels(&self) -> Option<KernelFamily> {
        self.kernels
    }

    /// Cuts `length` bytes into work items, each a multiple of `align` bytes except the
    /// last, and returns their lengths in order. `model` lets `auto` choose well.
    pub fn plan(&self, length: usize, align: usize, model: Option<CostModel>) -> Vec<usize> {
        split_lengths(length, align, self.items(length, align, model))
    }

    /// How many work items [`Engine::plan`] cuts a job into, without cutting it (nor
    /// allocating): 1 means the job runs on the calling thread.
    pub(crate) fn items(&self, length: usize, align: usize, model: Option<CostModel>) -> usize {
        let pieces = match self.backend {
            Backend::Seq => 1,
            Backend::Threads => self.threads,
            Backend::Auto => self.auto_items(length, model),
            Backend::Pool | Backend::Opencl | Backend::Cuda | Backend::Hip => {
                self.pool_items(length)
            }
        };
        pieces.clamp(1, (length / align).max(1))
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
        self.run_ranges(ranges, work)
    }

    /// [`Engine::run`] over data that is only read (GHASH over a ciphertext before anything
    /// is decrypted): `work(index, offset, range)` over consecutive ranges of `data`.
    pub fn run_read<R, F>(&self, data: &[u8], lengths: &[usize], work: F) -> Vec<R>
    where
        R: Send,
        F: Fn(usize, usize, &[u8]) -> R + Sync,
    {
        debug_assert_eq!(lengths.iter().sum::<usize>(), data.len());
        let mut ranges = Vec::with_capacity(lengths.len());
        let mut offset = 0;
        for &length in lengths {
            ranges.push((offset, &data[offset..offset + length]));
            offset += length;
        }
        self.run_ranges(ranges, work)
    }

    /// [`Engine::run`] from `input` into `output` (of the same length): `work(index, offset,
    /// input range, output range)` over the same consecutive ranges of both, so that a job
    /// out of place reads its input once instead of copying it first.
    ///
    /// # Panics
    /// If the lengths differ.
    pub fn run_into<R, F>(
        &self,
        input: &[u8],
        output: &mut [u8],
        lengths: &[usize],
        work: F,
    ) -> Vec<R>
    where
        R: Send,
        F: Fn(usize, usize, &[u8], &mut [u8]) -> R + Sync,
    {
        assert_eq!(input.len(), output.len(), "the output must match the input");
        debug_assert_eq!(lengths.iter().sum::<usize>(), input.len());
        let mut ranges = Vec::with_capacity(lengths.len());
        let (mut from, mut to) = (input, output);
        let mut offset = 0;
        for &length in lengths {
            let (range_from, from_tail) = from.split_at(length);
            let (range_to, to_tail) = to.split_at_mut(length);
            ranges.push((offset, (range_from, range_to)));
            offset += length;
            (from, to) = (from_tail, to_tail);
        }
        self.run_ranges(ranges, |index, offset, (from, to)| {
            work(index, offset, from, to)
        })
    }

    /// The dispatch of [`Engine::run`] and [`Engine::run_into`]: one range on the calling
    /// thread, several on the pool (or the `threads` team).
    fn run_ranges<T, R, F>(&self, mut ranges: Vec<(usize, T)>, work: F) -> Vec<R>
    where
        T: Send,
        R: Send,
        F: Fn(usize, usize, T) -> R + Sync,
    {
        if ranges.len() == 1 {
            let (offset, range) = ranges.pop().expect("one range");
            return vec![work(0, offset, range)];
        }
        // Several ranges mean the plan chose to split: `auto` splits onto the pool.
        match (&self.pool, &self.team) {
            (Some(pool), _) => run_on_team(pool, ranges, work),
            (None, Some(team)) => run_shared(team, self.threads, ranges, work),
            (None, None) => ranges
                .into_iter()
                .enumerate()
                .map(|(index, (offset, range))| work(index, offset, range))
                .collect(),
        }
    }
}

/// What runs one range of a split: `(index, offset, range)` to its result, on whichever
/// thread takes the range.
trait RangeWork<T, R>: Fn(usize, usize, T) -> R + Sync {}

impl<T, R, F: Fn(usize, usize, T) -> R + Sync> RangeWork<T, R> for F {}

/// A range waiting for the thread that takes it: (offset, range).
type Slot<T> = std::sync::Mutex<Option<(usize, T)>>;

/// One slot per range, in order.
fn into_slots<T>(ranges: Vec<(usize, T)>) -> Vec<Slot<T>> {
    ranges
        .into_iter()
        .map(|range| std::sync::Mutex::new(Some(range)))
        .collect()
}

/// The slot's range, if no thread has taken it yet (a panic elsewhere does not lose it).
fn take_slot<T>(slot: &Slot<T>) -> Option<(usize, T)> {
    slot.lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .take()
}

/// The `threads` backend's static split: pool thread t takes ranges t, t + N, t + 2N, ...
/// whatever the others are doing (no stealing); the plan makes that one range per thread.
/// Each slot is taken exactly once, by the thread it belongs to.
fn run_on_team<T: Send, R: Send>(
    pool: &rayon::ThreadPool,
    ranges: Vec<(usize, T)>,
    work: impl RangeWork<T, R>,
) -> Vec<R> {
    let count = ranges.len();
    let slots = into_slots(ranges);
    let per_thread = pool.broadcast(|context| {
        (context.index()..count)
            .step_by(context.num_threads())
            .filter_map(|index| {
                take_slot(&slots[index]).map(|(offset, range)| (index, work(index, offset, range)))
            })
            .collect::<Vec<_>>()
    });
    let mut results: Vec<(usize, R)> = per_thread.into_iter().flatten().collect();
    results.sort_by_key(|(index, _)| *index);
    results.into_iter().map(|(_, result)| result).collect()
}

/// The pool's dynamic split: the calling thread and up to `threads - 1` team threads take
/// the ranges in order from a shared counter until none is left, so the caller starts at
/// once, a thread that wakes late (or is slowed) simply takes fewer ranges, and one that
/// wakes after the last range is taken is not waited for (see the team module).
///
/// Waking a sleeping thread costs tens of microseconds on a VM: with the caller only
/// waiting (`install` and a parallel iterator), a 1 MiB AES-CTR job on two threads took
/// longer than on the caller alone, and with rayon's scope (the caller working, but waiting
/// for every spawned task to start) a 256 KiB one ran at a quarter of one thread's rate.
fn run_shared<T: Send, R: Send>(
    team: &Team,
    threads: usize,
    ranges: Vec<(usize, T)>,
    work: impl RangeWork<T, R>,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};

    let count = ranges.len();
    let slots = into_slots(ranges);
    let results: Vec<std::sync::Mutex<Option<R>>> =
        (0..count).map(|_| std::sync::Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let drain = || loop {
        let index = next.fetch_add(1, Ordering::Relaxed);
        let Some(slot) = slots.get(index) else {
            break;
        };
        if let Some((offset, range)) = take_slot(slot) {
            let result = work(index, offset, range);
            *results[index]
                .lock()
                .unwrap_or_else(|poison| poison.into_inner()) = Some(result);
        }
    };
    team.run(threads.saturating_sub(1).min(count - 1), &drain);
    results
        .into_iter()
        .map(|result| {
            result
                .into_inner()
                .unwrap_or_else(|poison| poison.into_inner())
                .expect("every range ran: the scope ends only when every thread has drained")
        })
        .collect()
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
    fn names_parse_and_gpu_backends_explain_themselves() {
        for backend in Backend::CPU.into_iter().chain(Backend::GPU) {
            assert_eq!(backend.name().parse::<Backend>().unwrap(), backend);
            assert_eq!(
                backend.name().to_uppercase().parse::<Backend>().unwrap(),
                backend
            );
        }
        assert!(matches!(
            "gpu9".parse::<Backend>(),
            Err(EngineError::UnknownBackend(_))
        ));
    }

    #[test]
    fn thread_counts_are_bounded_before_any_thread_starts() {
        let max = max_threads();
        assert!(max >= MIN_MAX_THREADS && max >= THREADS_PER_CORE * available_threads());
        assert!(matches!(check_threads(0), Err(EngineError::ZeroThreads)));
        assert_eq!(check_threads(max).unwrap(), max);
        for asked in [max + 1, 100_000, usize::MAX] {
            let error = Engine::new(Backend::Pool, Some(asked)).err().unwrap();
            assert!(
                matches!(error, EngineError::TooManyThreads { asked: a, max: m } if a == asked && m == max),
                "{error}"
            );
            assert!(error
                .to_string()
                .starts_with(&format!("--threads {asked} is too many")));
        }
        assert!(Engine::builder().threads(0).build().is_err());
    }
}
