//! [`EngineBuilder`]: the backend, its threads, its device, the tune tables it follows and
//! every tuning knob, all said by the caller. Nothing is read from the environment or the
//! user's configuration: the front ends read those (the facade's `environment` module) and
//! pass them here as options.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parcrypt_ciphers::KernelFamily;
use parcrypt_gpu::KernelCache;
use parcrypt_modes::gcm::GcmKernel;

use crate::gpu::{open_gpu, AutoGpu, TuneTables};
use crate::team::DEFAULT_SPIN;
use crate::{Backend, Engine, EngineError};

/// Builds an [`Engine`]; start with [`Engine::builder`].
///
/// ```
/// use parcrypt_engine::{Backend, Engine};
/// let engine = Engine::builder()
///     .backend(Backend::Threads)
///     .threads(3)
///     .no_tune()
///     .build()?;
/// assert_eq!(engine.threads(), 3);
/// # Ok::<(), parcrypt_engine::EngineError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "an engine builder does nothing until `build` is called"]
pub struct EngineBuilder {
    backend: Backend,
    threads: Option<usize>,
    device: usize,
    tuning: TuneSource,
    pool_spin: Duration,
    kernel_cache: KernelCache,
    gcm_kernel: Option<GcmKernel>,
    streaming_stores: Option<bool>,
    kernels: Option<KernelFamily>,
}

/// Where an engine's tune tables come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum TuneSource {
    /// None: GPU backends use their default launch shapes, `auto` stays on the CPU.
    #[default]
    None,
    /// A directory of tune files, one per device, as `parcrypt tune` stores them.
    Directory(PathBuf),
    /// One tune file, used when it was measured on the engine's device.
    File(PathBuf),
}

impl Engine {
    /// A builder for an `auto` engine on all cores, device 0, no tune file, no kernel cache
    /// on disk, and the process's GCM kernel and streaming stores left as they are.
    pub fn builder() -> EngineBuilder {
        EngineBuilder {
            backend: Backend::Auto,
            threads: None,
            device: 0,
            tuning: TuneSource::None,
            pool_spin: DEFAULT_SPIN,
            kernel_cache: KernelCache::Disabled,
            gcm_kernel: None,
            streaming_stores: None,
            kernels: None,
        }
    }
}

/// Options that set one field of the builder (to a value, or `Some` of it), each
/// `pub fn NAME(mut self, VALUE) -> Self`: written once, so that none can forget to
/// return the builder.
macro_rules! options {
    ($(
        $(#[$doc:meta])* fn $name:ident($($value:ident: $type:ty)?) => $field:ident = $set:expr;
    )*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, $($value: $type)?) -> Self {
            self.$field = $set;
            self
        }
    )*};
}

impl EngineBuilder {
    options! {
        /// Where work runs (default `auto`).
        fn backend(backend: Backend) => backend = backend;

        /// The threads `threads`, `pool` and `auto` split work over (default: all cores;
        /// `seq` always uses one). Zero, or more than [`crate::max_threads`] (eight per core,
        /// at least 64), makes [`EngineBuilder::build`] fail before any thread starts.
        fn threads(threads: usize) => threads = Some(threads);

        /// The device a GPU backend (or `auto`'s tuned GPU) uses, by its index in the API's
        /// listing (default 0).
        fn device(index: usize) => device = index;

        /// Follow the tune files in `directory` (one per device, as `parcrypt tune` writes
        /// them): GPU backends launch with the shapes measured best on their device, and `auto`
        /// sends a tuned GPU the jobs it was measured to finish first.
        fn tune_directory(directory: impl Into<PathBuf>) =>
            tuning = TuneSource::Directory(directory.into());

        /// Follow the one tune file at `path` (as `parcrypt tune --output` writes it), where it
        /// was measured on this engine's device.
        fn tune_file(path: impl AsRef<Path>) =>
            tuning = TuneSource::File(path.as_ref().to_path_buf());

        /// Follow no tune file (the default): default launch shapes, `auto` on the CPU only.
        fn no_tune() => tuning = TuneSource::None;

        /// How long an idle `pool` (or `auto`) thread keeps looking for the next job before it
        /// parks (default [`crate::DEFAULT_POOL_SPIN`], 200 µs): back-to-back small jobs find it
        /// awake; zero parks at once, leaving the core to other work sooner.
        fn pool_spin(spin: Duration) => pool_spin = spin;

        /// Keep the GPU's compiled kernels in `directory` between runs (created when needed),
        /// so that opening the device later skips the compiler. By default nothing is written
        /// to disk and the kernels are compiled whenever a device is opened.
        fn kernel_cache_directory(directory: impl Into<PathBuf>) =>
            kernel_cache = KernelCache::Directory(directory.into());

        /// Where the GPU's compiled kernels are kept between runs
        /// ([`KernelCache::Disabled`], the default, always compiles).
        fn kernel_cache(cache: KernelCache) => kernel_cache = cache;

        /// Makes every AES-GCM key made from [`EngineBuilder::build`] on run `kernel` (falling
        /// back to the next one this CPU has), for comparisons: every kernel gives the same
        /// bytes. Unset (the default), the process keeps its choice, the fastest unless asked.
        ///
        /// Process-wide, not this engine's alone: GCM keys are also made where no engine is
        /// involved (see [`parcrypt_modes::gcm::set_default_kernel`]).
        fn gcm_kernel(kernel: GcmKernel) => gcm_kernel = Some(kernel);

        /// `false`: AES-GCM runs its two passes (CTR, then GHASH) instead of a stitched kernel,
        /// the same as [`EngineBuilder::gcm_kernel`] with [`GcmKernel::TwoPass`]; `true` asks for
        /// the fastest kernel again. Process-wide, as `gcm_kernel` is.
        fn stitched_gcm(stitched: bool) =>
            gcm_kernel = Some(if stitched { GcmKernel::fastest() } else { GcmKernel::TwoPass });

        /// `false`: long out-of-place AES calls write their output with ordinary stores instead
        /// of streaming (non-temporal) ones, for comparisons; the bytes are the same. Unset (the
        /// default), the process keeps its choice, on unless asked.
        ///
        /// Process-wide, not this engine's alone: the AES kernels also run where no engine is
        /// involved (see [`parcrypt_ciphers::aes::set_streaming_stores`]).
        fn streaming_stores(allowed: bool) => streaming_stores = Some(allowed);

        /// The highest CPU kernel family this engine's keys may use: each key picks, once,
        /// the fastest AES, GCM, GHASH and RC6 code of at most `family`, so that every
        /// family can be measured and tested on a machine that has them all (the bytes are
        /// the same). Unset (the default), keys use the fastest this CPU has. A family this
        /// CPU lacks makes [`EngineBuilder::build`] fail ([`EngineError::UnsupportedKernels`],
        /// naming the features it lacks). This engine's alone: keys made elsewhere are not
        /// limited.
        fn kernels(family: KernelFamily) => kernels = Some(family);
    }

    /// Starts the threads and opens the GPU of a GPU backend. A missing or damaged tune file
    /// is not an error: the engine is then untuned.
    pub fn build(self) -> Result<Engine, EngineError> {
        if let Some(family) = self.kernels {
            family.check()?;
        }
        // The process-wide knobs first: the GPU's self-test below already makes keys.
        if let Some(kernel) = self.gcm_kernel {
            parcrypt_modes::gcm::set_default_kernel(Some(kernel));
        }
        if let Some(allowed) = self.streaming_stores {
            parcrypt_ciphers::aes::set_streaming_stores(allowed);
        }
        let mut engine = Engine::start(self.backend, self.threads, self.pool_spin)?;
        engine.kernels = self.kernels;
        let tables = match &self.tuning {
            TuneSource::None => None,
            TuneSource::Directory(directory) => Some(TuneTables::Directory(directory.clone())),
            TuneSource::File(path) => Some(TuneTables::from_file(path)),
        };
        if self.backend.is_gpu() {
            let device = open_gpu(self.backend, self.device, &self.kernel_cache)?;
            if let Some(tables) = &tables {
                let table = tables.table_for(self.backend, &device.identity());
                device.set_tuning(table.map(Arc::new));
            }
            engine.gpu = Some(Arc::from(device));
        }
        if self.backend == Backend::Auto {
            engine.auto_gpu = tables
                .as_ref()
                .and_then(|tables| AutoGpu::discover(tables, self.device, &self.kernel_cache))
                .map(Arc::new);
        }
        Ok(engine)
    }
}
