//! [`EngineBuilder`]: the backend, its threads, its device and the tune tables it follows,
//! all said by the caller. Nothing is read from the user's configuration unless the caller
//! passes it (the command line passes the user's tune directory itself).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::gpu::{open_gpu, AutoGpu, TuneTables};
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
    /// A builder for an `auto` engine on all cores, device 0, no tune file.
    pub fn builder() -> EngineBuilder {
        EngineBuilder {
            backend: Backend::Auto,
            threads: None,
            device: 0,
            tuning: TuneSource::None,
        }
    }
}

impl EngineBuilder {
    /// Where work runs (default `auto`).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// The threads `threads`, `pool` and `auto` split work over (default: all cores;
    /// `seq` always uses one). Zero, or more than [`crate::max_threads`] (eight per core,
    /// at least 64), makes [`EngineBuilder::build`] fail before any thread starts.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// The device a GPU backend (or `auto`'s tuned GPU) uses, by its index in the API's
    /// listing (default 0).
    pub fn device(mut self, index: usize) -> Self {
        self.device = index;
        self
    }

    /// Follow the tune files in `directory` (one per device, as `parcrypt tune` writes
    /// them): GPU backends launch with the shapes measured best on their device, and `auto`
    /// sends a tuned GPU the jobs it was measured to finish first.
    pub fn tune_directory(mut self, directory: impl Into<PathBuf>) -> Self {
        self.tuning = TuneSource::Directory(directory.into());
        self
    }

    /// Follow the one tune file at `path` (as `parcrypt tune --output` writes it), where it
    /// was measured on this engine's device.
    pub fn tune_file(mut self, path: impl AsRef<Path>) -> Self {
        self.tuning = TuneSource::File(path.as_ref().to_path_buf());
        self
    }

    /// Follow no tune file (the default): default launch shapes, `auto` on the CPU only.
    pub fn no_tune(mut self) -> Self {
        self.tuning = TuneSource::None;
        self
    }

    /// Starts the threads and opens the GPU of a GPU backend. A missing or damaged tune file
    /// is not an error: the engine is then untuned.
    pub fn build(self) -> Result<Engine, EngineError> {
        let mut engine = Engine::start(self.backend, self.threads)?;
        let tables = match &self.tuning {
            TuneSource::None => None,
            TuneSource::Directory(directory) => Some(TuneTables::Directory(directory.clone())),
            TuneSource::File(path) => Some(TuneTables::from_file(path)),
        };
        if self.backend.is_gpu() {
            let device = open_gpu(self.backend, self.device)?;
            if let Some(tables) = &tables {
                let table = tables.table_for(self.backend, &device.identity());
                device.set_tuning(table.map(Arc::new));
            }
            engine.gpu = Some(device);
        }
        if self.backend == Backend::Auto {
            engine.auto_gpu = tables
                .as_ref()
                .and_then(|tables| AutoGpu::discover(tables, self.device));
        }
        Ok(engine)
    }
}
