//! GPU dispatch: the device of a GPU backend, and the tuned GPU `auto` may send a job to.
//!
//! The GPU runs ECB, CTR, CBC decryption and GCM (CTR and GHASH); the engine's pool does
//! what a GPU cannot split (CBC encryption). Under `auto`, a GPU is used only where a tune
//! file the caller passed (see [`crate::EngineBuilder`]) says it finishes a job first, and
//! it is opened on the first job that goes to it.
//!
//! The device kernels run AES with lookup tables, which is constant time only on a GPU
//! that keeps a copy of each table per lane ([`parcrypt_gpu::aes_timing_leak`]). `auto`
//! never sends AES anywhere else (the CPU's hardware AES is constant time); a GPU backend
//! named by the caller still runs AES on its device, and [`Engine::warnings`] says why that
//! may leak the key. Blowfish and RC6 keep going where the tune table says: RC6 reads no
//! tables, and Blowfish's key-dependent S-boxes are table lookups on the CPU as well.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use parcrypt_gpu::kernel_source::{CipherFamily, KernelOperation};
use parcrypt_gpu::{AesTimingLeak, GpuDevice, KernelCache, OpenOptions, TuneTable};
use parcrypt_modes::{CipherSpec, Direction};

use crate::{Backend, Engine, EngineError};

/// A GPU `auto` may send jobs to: the tune table measured on it, and the device, opened
/// on first use (`None` inside when opening failed: `auto` then stays on the CPU).
pub(crate) struct AutoGpu {
    backend: Backend,
    device_index: usize,
    table: Arc<TuneTable>,
    /// Where the device keeps its compiled kernels when it is opened.
    kernel_cache: KernelCache,
    device: OnceLock<Option<Box<dyn GpuDevice>>>,
}

/// Where an engine finds tune tables, as the caller said.
pub(crate) enum TuneTables {
    /// A tune directory: one file per device, named by its identity.
    Directory(PathBuf),
    /// One table, read from the file the caller named (`None` when it was unreadable).
    Table(Option<TuneTable>),
}

impl TuneTables {
    /// Reads the file a caller named. A missing or damaged file only means untuned shapes.
    pub(crate) fn from_file(path: &Path) -> Self {
        TuneTables::Table(TuneTable::load(path).ok().flatten())
    }

    /// Whether a table of `backend` may be here (cheap: no device is touched).
    fn may_hold(&self, backend: Backend) -> bool {
        match self {
            TuneTables::Directory(directory) => {
                parcrypt_gpu::tuning::any_tune_file(directory, backend.name())
            }
            TuneTables::Table(table) => table
                .as_ref()
                .is_some_and(|table| table.api == backend.name()),
        }
    }

    /// The table measured on the device with this identity, if there is one.
    pub(crate) fn table_for(&self, backend: Backend, identity: &str) -> Option<TuneTable> {
        match self {
            TuneTables::Directory(directory) => tune_table_in(directory, backend, identity),
            TuneTables::Table(table) => table
                .as_ref()
                .filter(|table| table.device == identity)
                .cloned(),
        }
    }
}

/// The tune table stored in `directory` for the device with this identity, if there is a
/// readable one measured on it. A missing or damaged file only means untuned shapes: never
/// an error.
pub fn tune_table_in(directory: &Path, backend: Backend, identity: &str) -> Option<TuneTable> {
    let path = parcrypt_gpu::tuning::tune_file(directory, backend.name(), identity);
    TuneTable::load(&path)
        .ok()
        .flatten()
        .filter(|table| table.device == identity)
}

impl AutoGpu {
    /// The tuned GPU `auto` may use: the first of CUDA, HIP and OpenCL whose device
    /// `device_index` has a table in `tables` in which the GPU wins some job. Devices are
    /// only listed (not opened) here, and only for an API that has tables at all.
    pub(crate) fn discover(
        tables: &TuneTables,
        device_index: usize,
        kernel_cache: &KernelCache,
    ) -> Option<AutoGpu> {
        [Backend::Cuda, Backend::Hip, Backend::Opencl]
            .into_iter()
            .find_map(|backend| {
                if !tables.may_hold(backend) {
                    return None;
                }
                let identity = device_identity(backend, device_index)?;
                let table = tables.table_for(backend, &identity)?;
                let wins = table
                    .crossovers
                    .iter()
                    .any(|crossover| crossover.gpu_from_bytes.is_some());
                wins.then(|| AutoGpu {
                    backend,
                    device_index,
                    table: Arc::new(table),
                    kernel_cache: kernel_cache.clone(),
                    device: OnceLock::new(),
                })
            })
    }
}

/// The identity line of a GPU backend's device, from its listing (nothing is compiled).
fn device_identity(backend: Backend, index: usize) -> Option<String> {
    let description = match backend {
        Backend::Opencl => parcrypt_gpu::OpenClDevice::list()
            .ok()?
            .get(index)?
            .to_string(),
        Backend::Cuda => parcrypt_gpu::CudaDevice::list()
            .ok()?
            .get(index)?
            .to_string(),
        Backend::Hip => parcrypt_gpu::HipDevice::list()
            .ok()?
            .get(index)?
            .to_string(),
        _ => return None,
    };
    Some(parcrypt_gpu::tuning::device_identity(
        backend.name(),
        &description,
    ))
}

/// Why AES in `spec` and `direction` on `device` may leak the key through timing; `None`
/// for other ciphers, for CBC encryption (which no device runs) and for a GPU whose table
/// layout closes the channels ([`parcrypt_gpu::aes_timing_leak`]).
fn aes_timing_leak(
    device: &dyn GpuDevice,
    spec: CipherSpec,
    direction: Direction,
) -> Option<AesTimingLeak> {
    if CipherFamily::of(spec.algorithm) != CipherFamily::Aes {
        return None;
    }
    device.aes_timing_leak(KernelOperation::for_mode(spec.mode, direction)?)
}

/// A device as a warning names it: its description up to the details in parentheses.
fn device_name(device: &dyn GpuDevice) -> String {
    let description = device.description();
    match description.split_once(" (") {
        Some((name, _)) => name.trim().to_string(),
        None => description.trim().to_string(),
    }
}

/// Something the user of an engine should know, which the library never prints itself
/// (see [`Engine::warnings`]). Each displays as one line.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EngineWarning {
    /// AES runs on a device whose table lookups may leak the key through timing.
    TableAes {
        /// The GPU backend the caller named.
        backend: Backend,
        /// The device, as its description names it.
        device: String,
        /// Why its table AES is not constant time.
        leak: AesTimingLeak,
    },
}

impl fmt::Display for EngineWarning {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineWarning::TableAes {
                backend,
                device,
                leak,
            } => write!(
                formatter,
                "AES on {backend} device {device} uses lookup tables that are not constant \
                 time: {leak}; timing can leak the key to code sharing the device (auto \
                 never sends AES to such a device)"
            ),
        }
    }
}

/// Opens device `index` of a GPU backend, keeping its compiled kernels in `kernel_cache`, or
/// says why it cannot.
pub(crate) fn open_gpu(
    backend: Backend,
    index: usize,
    kernel_cache: &KernelCache,
) -> Result<Box<dyn GpuDevice>, EngineError> {
    let options = OpenOptions {
        kernel_cache: kernel_cache.clone(),
        ..OpenOptions::default()
    };
    let reason = |error: parcrypt_gpu::GpuError| EngineError::Gpu {
        backend,
        reason: error.to_string(),
    };
    match backend {
        Backend::Opencl => Ok(Box::new(
            parcrypt_gpu::OpenClDevice::open_with(index, &options).map_err(reason)?,
        )),
        Backend::Cuda => Ok(Box::new(
            parcrypt_gpu::CudaDevice::open_with(index, &options).map_err(reason)?,
        )),
        Backend::Hip => Ok(Box::new(
            parcrypt_gpu::HipDevice::open_with(index, &options).map_err(reason)?,
        )),
        other => unreachable!("{other} is not a GPU backend"),
    }
}

impl Engine {
    /// An `auto` engine that sends the jobs `table` says the GPU wins to `device` (already
    /// open), for callers and tests that hold the device and the table themselves.
    pub fn auto_with_gpu(
        threads: Option<usize>,
        device: Box<dyn GpuDevice>,
        table: TuneTable,
    ) -> Result<Self, EngineError> {
        let mut engine = Engine::new(Backend::Auto, threads)?;
        let backend = Backend::from(device.api());
        let table = Arc::new(table);
        device.set_tuning(Some(Arc::clone(&table)));
        engine.auto_gpu = Some(Arc::new(AutoGpu {
            backend,
            device_index: 0,
            table,
            kernel_cache: KernelCache::Disabled,
            device: OnceLock::from(Some(device)),
        }));
        Ok(engine)
    }

    /// The GPU of a GPU backend.
    pub fn gpu(&self) -> Option<&dyn GpuDevice> {
        self.gpu.as_deref()
    }

    /// The GPU a job of `length` bytes runs on: a GPU backend's device, or under `auto` a
    /// tuned GPU where the tune table says it finishes such a job first (opened now if this
    /// is the first such job); `None` means the CPU.
    pub fn gpu_for(
        &self,
        spec: CipherSpec,
        direction: Direction,
        length: usize,
    ) -> Option<&dyn GpuDevice> {
        if let Some(gpu) = self.gpu.as_deref() {
            return Some(gpu);
        }
        let auto = self.auto_gpu.as_ref()?;
        if !auto.table.gpu_wins(spec, direction, length) {
            return None;
        }
        let device = auto
            .device
            .get_or_init(|| {
                let device = open_gpu(auto.backend, auto.device_index, &auto.kernel_cache).ok()?;
                // The table belongs to the device it was measured on.
                (device.identity() == auto.table.device).then(|| {
                    device.set_tuning(Some(Arc::clone(&auto.table)));
                    device
                })
            })
            .as_deref()?;
        // Issue 31 finding 7: however fast, table AES that may leak the key is never
        // chosen for the caller.
        aes_timing_leak(device, spec, direction)
            .is_none()
            .then_some(device)
    }

    /// What the caller should be told about running `spec` (either direction) on this
    /// engine: for AES on a GPU backend the caller named, whose device's table AES may leak
    /// the key through timing, one [`EngineWarning::TableAes`]. `auto` never runs AES on
    /// such a device, so it has none. The library prints nothing: front ends show these
    /// (the command line on stderr, the bindings in their own idiom), best through
    /// [`Engine::take_warnings`].
    pub fn warnings(&self, spec: CipherSpec) -> Vec<EngineWarning> {
        let Some(device) = self.gpu.as_deref() else {
            return Vec::new();
        };
        [Direction::Encrypt, Direction::Decrypt]
            .into_iter()
            .find_map(|direction| aes_timing_leak(device, spec, direction))
            .map(|leak| EngineWarning::TableAes {
                backend: self.backend,
                device: device_name(device),
                leak,
            })
            .into_iter()
            .collect()
    }

    /// [`Engine::warnings`], each one returned once per process: a warning already returned
    /// by an earlier call (on any engine) is left out, so that a program making many
    /// ciphers is told once.
    pub fn take_warnings(&self, spec: CipherSpec) -> Vec<EngineWarning> {
        static GIVEN: OnceLock<Mutex<HashSet<EngineWarning>>> = OnceLock::new();
        let mut given = GIVEN
            .get_or_init(|| Mutex::new(HashSet::new()))
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.warnings(spec)
            .into_iter()
            .filter(|warning| given.insert(warning.clone()))
            .collect()
    }

    /// Whether any job of this cipher, mode and direction may run on a GPU (so that a
    /// crypter prepares the key for one).
    pub fn may_use_gpu(&self, spec: CipherSpec, direction: Direction) -> bool {
        self.gpu.is_some()
            || self
                .auto_gpu
                .as_ref()
                .is_some_and(|auto| auto.table.gpu_ever_wins(spec, direction))
    }

    /// The tune table `auto` follows, with its GPU backend, when it has one.
    pub fn auto_tuning(&self) -> Option<(Backend, &TuneTable)> {
        self.auto_gpu
            .as_ref()
            .map(|auto| (auto.backend, auto.table.as_ref()))
    }
}
