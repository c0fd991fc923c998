//! The HIP backend (AMD GPUs): the shared host ([`crate::GpuHost`]) over the HIP
//! adapter (`hip/adapter.rs`), with libamdhip64 and hiprtc opened at run time through this
//! crate's own function table, so that this crate builds and its other tests run on machines
//! without ROCm; there every call returns [`GpuError::NoHipRuntime`], and a runtime that
//! finds no AMD GPU gives [`GpuError::NoAmdGpu`].
//!
//! A device is opened once: the kernels (the one source, with `vendor_hip.h` in front of
//! `vendor_cuda.h`) are compiled by hiprtc for its `gfxNNN` target or loaded from the disk
//! cache, self-tested, and given reusable buffers. Table copies fit 64 KiB of LDS: 32 for
//! AES encryption, 16 for AES decryption and Blowfish ([`table_copies_for`]). [`HipDevice::process`] stages ordinary host
//! memory through pinned buffers over [`STREAMS`] streams, as the CUDA host does.
//!
//! What is checked without a GPU: every kernel compiles with hiprtc for AMD targets
//! ([`compile_check`]; the `hip_compile` test). Nothing here has run on an AMD GPU.

mod adapter;
mod compiler;
mod devices;
mod library;

use std::path::PathBuf;

pub use adapter::STREAMS;
pub use compiler::{
    check_target, compile_check, compile_for, hiprtc_options, hiprtc_version, kernel_names,
    known_targets, missing_kernels, table_copies_for, LDS_LIMIT_BYTES,
};
pub use devices::HipDeviceInfo;

use crate::host::arguments::{KernelLimits, KernelTable};
use crate::host::{slab_size, validate_geometry, Devices, GpuHost, State};
use crate::host::{KEY_TABLE_WORDS, ROUND_KEY_WORDS};
use crate::kernel_source;
use crate::{
    program_cache, self_test, DeviceKind, GpuError, KernelCache, LaunchGeometry, OpenOptions,
    ProgramOrigin,
};
use adapter::{DeviceMemory, Event, Hip, HipKernel, Keys, Module, PinnedMemory, Stream};
use library::Runtime;

/// `HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
const FUNCTION_MAX_THREADS_PER_BLOCK: i32 = 0;
/// Threads per group where the runtime does not report a kernel's limit.
const FALLBACK_MAX_THREADS: usize = 256;

/// An opened, self-tested HIP device: the shared host over the HIP adapter.
///
/// `process` and the other entry points may be called from several threads; calls on one
/// device run one at a time.
pub type HipDevice = GpuHost<Hip>;

/// Whether the HIP runtime (libamdhip64) can be loaded here, and if not why.
pub fn check_runtime() -> Result<(), GpuError> {
    library::runtime().map(|_| ())
}

/// Whether hiprtc can be loaded here, and if not why.
pub fn check_hiprtc() -> Result<(), GpuError> {
    library::rtc().map(|_| ())
}

impl Devices for Hip {
    type Info = HipDeviceInfo;

    /// No runtime gives [`GpuError::NoHipRuntime`]; a runtime without a device
    /// [`GpuError::NoAmdGpu`].
    fn list() -> Result<Vec<HipDeviceInfo>, GpuError> {
        devices::describe_all()
    }

    fn open_with(index: usize, options: &OpenOptions) -> Result<HipDevice, GpuError> {
        let info = devices::describe(index)?;
        let runtime = devices::select(index)?;
        check_hiprtc()?;
        let table_copies = options
            .table_copies
            .unwrap_or_else(|| table_copies_for(info.shared_memory_per_block_bytes));
        table_copies.validate()?;
        let lds = info.shared_memory_per_block_bytes.min(LDS_LIMIT_BYTES);
        if table_copies.largest_table_bytes() > lds {
            return Err(GpuError::InvalidInput(format!(
                "{table_copies} need {} bytes of LDS per work-group, but {} allows {lds}; use \
                 fewer copies",
                table_copies.largest_table_bytes(),
                info.name.trim(),
            )));
        }
        let geometry = options
            .geometry
            .unwrap_or_else(|| LaunchGeometry::default_for(DeviceKind::Gpu));
        validate_geometry(geometry)?;
        let target = info.target().to_string();
        check_target(&target)?;
        let source = kernel_source::hip_source();
        let compile_options = hiprtc_options(&target, table_copies);
        let cache_entry = cache_entry(&options.kernel_cache, &info, &compile_options, &source)?;
        let slab_bytes = slab_size(options.slab_bytes, u64::MAX);
        let compile = || -> Result<Vec<u8>, GpuError> {
            let image = compiler::compile_source(&source, &target, &compile_options)?;
            if let Some(path) = &cache_entry {
                program_cache::store(path, &image);
            }
            Ok(image)
        };
        let cached = cache_entry
            .as_deref()
            .and_then(program_cache::load)
            .filter(|image| compiler::plausible_code_object(image));
        let (module, origin) = match cached.map(|image| Module::load(runtime, &image)) {
            Some(Ok(module)) => (module, ProgramOrigin::Cache),
            _ => (Module::load(runtime, &compile()?)?, ProgramOrigin::Compiled),
        };
        let assemble = |module, origin| {
            HipDevice::assemble(
                info.clone(),
                runtime,
                module,
                origin,
                table_copies,
                geometry,
                slab_bytes,
            )
        };
        let opened = assemble(module, origin)?;
        self_test::accept_or_rebuild(opened, origin, HipDevice::self_test, || {
            let module = Module::load(runtime, &compile()?)?;
            assemble(module, ProgramOrigin::Compiled)
        })
    }

    fn info(&self) -> &HipDeviceInfo {
        &self.info
    }
}

impl GpuHost<Hip> {
    /// Creates streams, kernels and buffers around a loaded module.
    fn assemble(
        info: HipDeviceInfo,
        runtime: &'static Runtime,
        module: Module,
        origin: ProgramOrigin,
        table_copies: crate::TableCopies,
        geometry: LaunchGeometry,
        slab_bytes: usize,
    ) -> Result<Self, GpuError> {
        let ordinal = devices::ordinal(info.index)?;
        let streams = (0..STREAMS)
            .map(|_| Stream::new(runtime))
            .collect::<Result<Vec<_>, _>>()?;
        let kernels = KernelTable::load(|name, _cipher| {
            let symbol = std::ffi::CString::new(name).expect("kernel names have no NUL");
            let mut function = std::ptr::null_mut();
            // SAFETY: a live module; the runtime writes one function handle.
            runtime.check("hipModuleGetFunction", unsafe {
                (runtime.hipModuleGetFunction)(&mut function, module.handle, symbol.as_ptr())
            })?;
            let mut max_threads = 0;
            // SAFETY: a function of the live module; the runtime writes one int.
            let status = unsafe {
                (runtime.hipFuncGetAttribute)(
                    &mut max_threads,
                    FUNCTION_MAX_THREADS_PER_BLOCK,
                    function,
                )
            };
            // A runtime that will not say gets groups of 256, which every AMD GPU runs
            // (the kernels declare no launch bounds, so the compiler allows up to 1024).
            let max_threads = match status {
                0 => usize::try_from(max_threads).unwrap_or(1),
                _ => FALLBACK_MAX_THREADS,
            };
            Ok((HipKernel { function }, KernelLimits::groups_of(max_threads)))
        })?;
        let stream = &streams[0];
        let aes_words = kernel_source::aes_table_words();
        let aes_tables = DeviceMemory::zeroed(runtime, aes_words.len() * 4, stream.handle)?;
        // SAFETY: the buffer holds the table's bytes; the source is a live Vec waited for
        // below (the stream is synchronised before `aes_words` drops).
        runtime.check("hipMemcpyHtoDAsync", unsafe {
            (runtime.hipMemcpyHtoDAsync)(
                aes_tables.address(),
                aes_words.as_ptr().cast_mut().cast(),
                aes_words.len() * 4,
                stream.handle,
            )
        })?;
        let keys = Keys {
            round_keys: DeviceMemory::zeroed(runtime, ROUND_KEY_WORDS * 4, stream.handle)?,
            key_tables: DeviceMemory::zeroed(runtime, KEY_TABLE_WORDS * 4, stream.handle)?,
            aes_tables,
            key_staging: PinnedMemory::zeroed(runtime, (ROUND_KEY_WORDS + KEY_TABLE_WORDS) * 4)?,
            key_ready: Event::new(runtime, false)?,
        };
        stream.synchronize()?;
        drop(aes_words);
        let state = State::new(geometry, kernels, keys, ());
        let adapter = Hip {
            info,
            ordinal,
            table_copies,
            runtime,
            streams,
            _module: module,
        };
        Ok(GpuHost::new(
            adapter,
            state,
            slab_bytes,
            origin,
            table_copies,
        ))
    }

    /// The known-answer vectors through the host path.
    fn self_test(&self) -> Result<(), GpuError> {
        self_test::run(&self.adapter.info.name, |key, operation, data| {
            self.process(key, operation, data)
        })
    }

    /// The `gfxNNN` target the kernels were compiled for.
    pub fn architecture(&self) -> &str {
        self.adapter.info.target()
    }

    /// Whether the GPU shares the host's memory (an APU): `hipDeviceAttributeIntegrated`.
    pub fn host_unified_memory(&self) -> bool {
        self.adapter.info.integrated
    }
}

/// The cache file for this device, runtime, hiprtc, options and source; `None` when caching
/// is off or there is no cache directory.
fn cache_entry(
    cache: &KernelCache,
    info: &HipDeviceInfo,
    options: &[String],
    source: &str,
) -> Result<Option<PathBuf>, GpuError> {
    let device = || {
        let (rtc_major, rtc_minor) = hiprtc_version()?;
        let (major, minor, patch) = info.runtime_version;
        Ok([
            "hip".to_string(),
            info.name.clone(),
            info.architecture.clone(),
            format!("runtime {major}.{minor}.{patch}"),
            format!("hiprtc {rtc_major}.{rtc_minor}"),
        ])
    };
    program_cache::module_entry(cache, device, options, source)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Device 0's description, or `None` after saying why there is no GPU to test on.
    fn gpu_or_skip() -> Option<HipDeviceInfo> {
        crate::test_support::found_or_skip(devices::describe(0), "AMD GPU/HIP runtime", None)
    }

    #[test]
    fn a_cached_binary_that_fails_the_self_test_is_replaced() {
        let Some(info) = gpu_or_skip() else { return };
        let copies = table_copies_for(info.shared_memory_per_block_bytes);
        let options = hiprtc_options(info.target(), copies);
        let source = kernel_source::hip_source();
        // A code object of subtly wrong kernels stored under the name of the real ones.
        program_cache::stale::assert_wrong_binary_replaced::<Hip>(
            &source,
            copies,
            |cache| cache_entry(cache, &info, &options, &source).unwrap(),
            |wrong_source, _| {
                compiler::compile_source(wrong_source, info.target(), &options).unwrap()
            },
        );
    }

    #[test]
    fn without_a_gpu_open_says_why() {
        crate::host::assert_opens_or_says_why(HipDevice::open(0), |error| {
            matches!(
                error,
                GpuError::NoHipRuntime { .. }
                    | GpuError::NoAmdGpu { .. }
                    | GpuError::NoHiprtc { .. }
            )
        });
    }
}
