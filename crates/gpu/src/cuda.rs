//! The CUDA backend: the shared host ([`crate::GpuHost`]) over the CUDA adapter
//! (`cuda/adapter.rs`), the driver API through `cudarc`, with libcuda and libnvrtc opened at
//! run time, so that this crate builds and its other tests run on machines without CUDA;
//! there every call returns [`GpuError::NoCudaDriver`] or [`GpuError::NoNvrtc`].
//!
//! A device is opened once: the kernels are compiled by NVRTC for its architecture (an
//! `sm_XY` CUBIN, or PTX when NVRTC does not know the GPU) or loaded from the disk cache,
//! self-tested, and given reusable buffers. The ways in:
//! - [`CudaDevice::process`]: ordinary host memory. Slabs are staged through pinned buffers,
//!   because only pinned memory can be copied asynchronously.
//! - [`CudaDevice::process_pinned`]: host memory that is already pinned (see
//!   [`CudaDevice::alloc_pinned`]); copied straight to and from the device.
//! - [`CudaDevice::process_device_buffer`]: data already on the GPU, processed in place with
//!   no host round trip.
//! - [`CudaDevice::process_foreign`]: data on the GPU that another library owns (a CuPy
//!   array, a PyTorch tensor), described by a [`ForeignDeviceMemory`](crate::ForeignDeviceMemory),
//!   in place or into a second such range; [`CudaDevice::ghash_foreign`] hashes it for GCM.
//! - [`MappedBuffer`] ([`CudaDevice::mapped_buffer`]): zero-copy, page-locked host memory
//!   mapped into the device's address space, which the kernels read and write over the bus;
//!   [`CudaDevice::process_zero_copy`] copies ordinary data through such a buffer.
//!
//! The host paths pipeline slabs over [`STREAMS`] streams: slab `k` goes to stream
//! `k % STREAMS` with that stream's own device buffers, so the upload of one slab, the kernel
//! of another and the download of a third run at the same time on GPUs with separate copy
//! engines.

mod adapter;
mod compiler;
mod device_buffers;
mod devices;
mod foreign;
mod zero_copy;

use std::path::PathBuf;
use std::sync::Arc;

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaContext, CudaModule, CudaSlice, CudaStream, PinnedHostSlice};
use cudarc::nvrtc::Ptx;

/// The cudarc this crate was built with, for callers that hand it device buffers.
pub use cudarc;

pub use adapter::STREAMS;
pub use compiler::{
    check_nvrtc, compile_check, compile_for_report, compile_variant, host_variants, nvrtc_version,
    CompiledReport, KernelVariant, STATIC_SHARED_LIMIT_BYTES,
};
pub use devices::CudaDeviceInfo;
pub use foreign::DeviceAllocation;

use crate::host::arguments::{KernelLimits, KernelTable};
use crate::host::{self, slab_size, validate_geometry, Devices, GpuHost, State};
use crate::host::{KEY_TABLE_WORDS, ROUND_KEY_WORDS};
use crate::kernel_source::{self, kernel_name, CipherFamily, KernelOperation};
use crate::{
    program_cache, self_test, DeviceKind, GpuError, KernelCache, LaunchGeometry, OpenOptions,
    ProgramOrigin, TableCopies,
};
use adapter::{alloc_pinned_zeroed, Cuda, CudaKernel, Extra, Keys};
use compiler::ImageKind;
use devices::CudaResultExt;

/// An opened, self-tested CUDA device: the shared host over the CUDA adapter.
///
/// `process` and the other entry points may be called from several threads; calls on one
/// device run one at a time.
pub type CudaDevice = GpuHost<Cuda>;

/// Mapped, page-locked host memory a [`CudaDevice`] processes in place; see
/// [`CudaDevice::mapped_buffer`].
pub type MappedBuffer<'device> = host::zero_copy::MappedBuffer<'device, Cuda>;

/// Data in this device's memory, as [`CudaDevice::process_device_buffer`] takes it.
pub type DeviceBuffer = CudaSlice<u8>;

/// Page-locked host memory, as [`CudaDevice::alloc_pinned`] gives it.
pub type PinnedBuffer = PinnedHostSlice<u8>;

impl Devices for Cuda {
    type Info = CudaDeviceInfo;

    /// A driver with no usable device gives an empty list; no driver gives
    /// [`GpuError::NoCudaDriver`].
    fn list() -> Result<Vec<CudaDeviceInfo>, GpuError> {
        devices::describe_all()
    }

    fn open_with(index: usize, options: &OpenOptions) -> Result<CudaDevice, GpuError> {
        let info = devices::describe(index)?;
        check_nvrtc()?;
        let table_copies = options.table_copies.unwrap_or_else(|| {
            TableCopies::for_device(DeviceKind::Gpu, info.shared_memory_per_block_bytes)
        });
        table_copies.validate()?;
        let variant = KernelVariant::for_table_copies(table_copies);
        check_shared_memory(&info, variant)?;
        let geometry = options
            .geometry
            .unwrap_or_else(|| LaunchGeometry::default_for(DeviceKind::Gpu));
        validate_geometry(geometry)?;
        let (major, minor) = info.compute_capability;
        let architecture = compiler::architecture_for(major, minor)?;
        let source = kernel_source::cuda_source();
        let compile_options = variant.nvrtc_options(&architecture);
        let cache_entry = cache_entry(&options.kernel_cache, &info, &compile_options, &source)?;
        // CUDA names no largest allocation: only MAX_SLAB_BYTES bounds the slab.
        let slab_bytes = slab_size(options.slab_bytes, u64::MAX);

        let context = CudaContext::new(index).or_cuda("cuDevicePrimaryCtxRetain")?;
        let module_source = ModuleSource {
            architecture: &architecture,
            source: &source,
            options: &compile_options,
            cache_entry: cache_entry.as_deref(),
        };
        let (module, origin) = load_or_compile(&context, &module_source)?;
        let assemble = |module, origin| {
            CudaDevice::assemble(
                info.clone(),
                Arc::clone(&context),
                module,
                origin,
                variant,
                architecture.clone(),
                geometry,
                slab_bytes,
            )
        };
        let opened = assemble(module, origin)?;
        self_test::accept_or_rebuild(opened, origin, CudaDevice::self_test, || {
            let module = compile_and_store(&context, &module_source)?;
            assemble(module, ProgramOrigin::Compiled)
        })
    }

    fn info(&self) -> &CudaDeviceInfo {
        &self.info
    }
}

impl GpuHost<Cuda> {
    /// Creates streams, kernels and buffers around a loaded module.
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        info: CudaDeviceInfo,
        context: Arc<CudaContext>,
        module: Arc<CudaModule>,
        origin: ProgramOrigin,
        variant: KernelVariant,
        architecture: String,
        geometry: LaunchGeometry,
        slab_bytes: usize,
    ) -> Result<Self, GpuError> {
        let streams = (0..STREAMS)
            .map(|_| context.new_stream().or_cuda("cuStreamCreate"))
            .collect::<Result<Vec<_>, _>>()?;
        context.bind_to_thread().or_cuda("cuCtxSetCurrent")?;
        let kernels = KernelTable::load(|name, cipher| {
            let function = module.load_function(name).or_cuda("cuModuleGetFunction")?;
            // Segmented CTR has CTR's tables, so its operation's bytes; GHASH has none.
            let shared_bytes = cipher.map_or(0, |(family, operation)| {
                variant.launch_shared_bytes(family, operation)
            });
            if shared_bytes > STATIC_SHARED_LIMIT_BYTES {
                // Blocks may not have more than 48 KiB of shared memory unless each kernel
                // opts in to its size.
                function
                    .set_attribute(
                        CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        shared_bytes as i32,
                    )
                    .or_cuda("cuFuncSetAttribute")?;
            }
            let max_threads_per_block = function
                .max_threads_per_block()
                .or_cuda("cuFuncGetAttribute")?;
            let max_group_size = usize::try_from(max_threads_per_block).unwrap_or(1);
            // A kernel whose tables let only one group of the configured size onto a
            // multiprocessor (Blowfish's 128 KiB per-lane S-boxes) runs a persistent grid
            // of one wider group per multiprocessor.
            let mut limits = KernelLimits::groups_of(max_group_size);
            if shared_bytes > 0 {
                let group_size = geometry.threads_per_group.clamp(1, max_group_size.max(1));
                let resident = function
                    .occupancy_max_active_blocks_per_multiprocessor(
                        u32::try_from(group_size).unwrap_or(u32::MAX),
                        shared_bytes as usize,
                        None,
                    )
                    .or_cuda("cuOccupancyMaxActiveBlocksPerMultiprocessor")?;
                if resident <= 1 {
                    limits.resident_groups = Some(info.multiprocessors.max(1) as usize);
                }
            }
            let kernel = CudaKernel {
                function,
                shared_bytes,
            };
            Ok((kernel, limits))
        })?;
        let stream = &streams[0];
        let aes_tables = stream
            .clone_htod(&kernel_source::aes_table_words())
            .or_cuda("cuMemcpyHtoDAsync")?;
        let keys = Keys {
            round_keys: stream.alloc_zeros(ROUND_KEY_WORDS).or_cuda("cuMemAlloc")?,
            key_tables: stream.alloc_zeros(KEY_TABLE_WORDS).or_cuda("cuMemAlloc")?,
            aes_tables,
            key_staging: alloc_pinned_zeroed(&context, ROUND_KEY_WORDS + KEY_TABLE_WORDS)?,
            key_ready: context.new_event(None).or_cuda("cuEventCreate")?,
        };
        let extra = Extra {
            cbc_scratch: None,
            tail_block: stream.alloc_zeros(16).or_cuda("cuMemAlloc")?,
        };
        let state = State::new(geometry, kernels, keys, extra);
        stream.synchronize().or_cuda("cuStreamSynchronize")?;
        let adapter = Cuda {
            info,
            variant,
            architecture,
            streams,
            _module: module,
            context,
        };
        let host = GpuHost::new(adapter, state, slab_bytes, origin, variant.table_copies);
        Ok(host)
    }

    /// The known-answer vectors through both the host path and the in-place device path.
    fn self_test(&self) -> Result<(), GpuError> {
        let name = &self.adapter.info.name;
        self_test::run(name, |key, operation, data| {
            self.process(key, operation, data)
        })?;
        let stream = self.stream();
        self_test::run(name, |key, operation, data| {
            let mut buffer = stream.clone_htod(&*data).or_cuda("cuMemcpyHtoDAsync")?;
            self.process_device_buffer(key, operation, &mut buffer)?;
            stream
                .memcpy_dtoh(&buffer, data)
                .or_cuda("cuMemcpyDtoHAsync")?;
            stream.synchronize().or_cuda("cuStreamSynchronize")
        })
    }

    /// The compiled variant: table copies and static or dynamic shared memory.
    pub fn kernel_variant(&self) -> KernelVariant {
        self.adapter.variant
    }

    /// What the kernels were compiled for: `sm_XY` (CUBIN) or `compute_XY` (PTX).
    pub fn architecture(&self) -> &str {
        &self.adapter.architecture
    }

    /// The CUDA context (the device's primary context), for allocating buffers to hand to
    /// [`CudaDevice::process_device_buffer`].
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.adapter.context
    }

    /// The stream device-buffer calls run on. Buffers allocated on it, and work queued on
    /// it, are ordered with those calls without further synchronisation.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.adapter.streams[0]
    }
}

/// Refuses table copies whose shared memory the device cannot give one block.
fn check_shared_memory(info: &CudaDeviceInfo, variant: KernelVariant) -> Result<(), GpuError> {
    for family in CipherFamily::ALL {
        for operation in KernelOperation::ALL {
            let bytes = u64::from(variant.table_bytes(family, operation));
            if bytes > info.shared_memory_per_block_bytes {
                return Err(GpuError::InvalidInput(format!(
                    "{} needs {bytes} bytes of shared memory with {}, but {} allows {} per \
                     block; use fewer copies",
                    kernel_name(family, operation),
                    variant.table_copies,
                    info.name.trim(),
                    info.shared_memory_per_block_bytes
                )));
            }
        }
    }
    Ok(())
}

/// What a device's module is built from, and where its image is cached.
#[derive(Clone, Copy)]
struct ModuleSource<'a> {
    architecture: &'a str,
    source: &'a str,
    options: &'a [String],
    cache_entry: Option<&'a std::path::Path>,
}

/// The module from the cache file at `cache_entry` if there is a usable one, else compiled
/// from source and stored there for next time.
fn load_or_compile(
    context: &Arc<CudaContext>,
    module_source: &ModuleSource<'_>,
) -> Result<(Arc<CudaModule>, ProgramOrigin), GpuError> {
    let kind = ImageKind::of(module_source.architecture)?;
    if let Some(image) = module_source
        .cache_entry
        .and_then(program_cache::load)
        .filter(|image| kind.plausible(image))
    {
        if let Ok(module) = context.load_module(Ptx::from_binary(image)) {
            return Ok((module, ProgramOrigin::Cache));
        }
    }
    let module = compile_and_store(context, module_source)?;
    Ok((module, ProgramOrigin::Compiled))
}

/// Compiles from source and stores the image at `cache_entry` (replacing what is there).
fn compile_and_store(
    context: &Arc<CudaContext>,
    module_source: &ModuleSource<'_>,
) -> Result<Arc<CudaModule>, GpuError> {
    let ModuleSource {
        architecture,
        source,
        options,
        cache_entry,
    } = *module_source;
    let image = compiler::compile_source(source, architecture, options)?;
    let module = context
        .load_module(Ptx::from_binary(image.clone()))
        .or_cuda("cuModuleLoadData")?;
    if let Some(path) = cache_entry {
        program_cache::store(path, &image);
    }
    Ok(module)
}

/// The cache file for this device, driver, NVRTC, options and source; `None` when caching
/// is off or there is no cache directory.
fn cache_entry(
    cache: &KernelCache,
    info: &CudaDeviceInfo,
    options: &[String],
    source: &str,
) -> Result<Option<PathBuf>, GpuError> {
    let device = || {
        let (nvrtc_major, nvrtc_minor) = nvrtc_version()?;
        let (major, minor) = info.compute_capability;
        let (driver_major, driver_minor) = info.driver_version;
        Ok([
            "cuda".to_string(),
            info.name.clone(),
            format!("compute capability {major}.{minor}"),
            format!("driver {driver_major}.{driver_minor}"),
            format!("nvrtc {nvrtc_major}.{nvrtc_minor}"),
        ])
    };
    program_cache::module_entry(cache, device, options, source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GpuOperation, KeyMaterial};
    use parcrypt_ciphers::Algorithm;
    use parcrypt_modes::ctr::CounterRule;

    #[test]
    fn segmented_kernels_are_entry_points_under_nvrtc() {
        if crate::test_support::gpu_or_skip(check_nvrtc(), "NVRTC").is_none() {
            return;
        }
        // The per-lane variant, as PTX: what an H200 loads, with dynamic shared memory.
        let variant = KernelVariant::for_table_copies(TableCopies::uniform(32));
        let ptx = compile_variant("compute_90", variant).unwrap();
        let text = String::from_utf8_lossy(&ptx);
        for family in CipherFamily::ALL {
            let name = kernel_source::ctr_segments_kernel_name(family);
            assert!(text.contains(&format!(".entry {name}(")), "{name}");
        }
    }

    /// Device 0's description, or `None` after saying why there is no GPU to test on.
    fn gpu_or_skip() -> Option<CudaDeviceInfo> {
        crate::test_support::gpu_or_skip(devices::describe(0), "CUDA GPU/driver")
    }

    #[test]
    fn a_cached_binary_that_fails_the_self_test_is_replaced() {
        let Some(info) = gpu_or_skip() else { return };
        let copies = TableCopies::for_device(DeviceKind::Gpu, info.shared_memory_per_block_bytes);
        let variant = KernelVariant::for_table_copies(copies);
        let (major, minor) = info.compute_capability;
        let architecture = compiler::architecture_for(major, minor).unwrap();
        let options = variant.nvrtc_options(&architecture);
        let source = kernel_source::cuda_source();
        // An image of subtly wrong kernels stored under the name of the real ones.
        program_cache::stale::assert_wrong_binary_replaced::<Cuda>(
            &source,
            copies,
            |cache| cache_entry(cache, &info, &options, &source).unwrap(),
            |wrong_source, _| {
                compiler::compile_source(wrong_source, &architecture, &options).unwrap()
            },
        );
    }

    #[test]
    fn keys_are_wiped_after_every_call() {
        if gpu_or_skip().is_none() {
            return;
        }
        let device = CudaDevice::open(0).unwrap();
        let key = KeyMaterial::new(Algorithm::Blowfish, b"a key to forget").unwrap();
        let operation = GpuOperation::Ctr {
            counter: vec![1; 8],
            rule: CounterRule::Full,
        };
        device.process(&key, &operation, &mut [0; 100]).unwrap();
        let mut buffer = device.stream().alloc_zeros::<u8>(100).unwrap();
        device
            .process_device_buffer(&key, &operation, &mut buffer)
            .unwrap();
        let mut state = device.lock_state();
        let stream = device.stream();
        assert!(stream
            .clone_dtoh(&state.keys.round_keys)
            .unwrap()
            .iter()
            .all(|&word| word == 0));
        assert!(stream
            .clone_dtoh(&state.keys.key_tables)
            .unwrap()
            .iter()
            .all(|&word| word == 0));
        assert!(state
            .keys
            .key_staging
            .as_mut_slice()
            .unwrap()
            .iter()
            .all(|&word| word == 0));
    }

    #[test]
    fn without_a_driver_open_says_why() {
        host::assert_opens_or_says_why(CudaDevice::open(0), |error| {
            matches!(
                error,
                GpuError::NoCudaDriver { .. }
                    | GpuError::NoCudaDevice { .. }
                    | GpuError::NoNvrtc { .. }
            )
        });
    }
}
