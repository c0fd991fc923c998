//! The CUDA backend: the driver API through `cudarc`, with libcuda and libnvrtc opened at run
//! time, so that this crate builds and its other tests run on machines without CUDA; there
//! every call returns [`GpuError::NoCudaDriver`] or [`GpuError::NoNvrtc`].
//!
//! A device is opened once: the kernels are compiled by NVRTC for its architecture (an
//! `sm_XY` CUBIN, or PTX when NVRTC does not know the GPU) or loaded from the disk cache,
//! self-tested, and given reusable buffers. Three ways in:
//! - [`CudaDevice::process`]: ordinary host memory. Slabs are staged through pinned buffers,
//!   because only pinned memory can be copied asynchronously.
//! - [`CudaDevice::process_pinned`]: host memory that is already pinned (see
//!   [`CudaDevice::alloc_pinned`]); copied straight to and from the device.
//! - [`CudaDevice::process_device_buffer`]: data already on the GPU, processed in place with
//!   no host round trip.
//! - [`MappedBuffer`] ([`CudaDevice::mapped_buffer`]): zero-copy, page-locked host memory
//!   mapped into the device's address space, which the kernels read and write over the bus;
//!   [`CudaDevice::process_zero_copy`] copies ordinary data through such a buffer.
//!
//! The host paths pipeline slabs over [`STREAMS`] streams: slab `k` goes to stream
//! `k % STREAMS` with that stream's own device buffers, so the upload of one slab, the kernel
//! of another and the download of a third run at the same time on GPUs with separate copy
//! engines. With three streams the upload of slab `k + 3` never waits for anything but the
//! download of slab `k`, which has long finished when kernels are faster than the bus.

mod compiler;
mod devices;
mod zero_copy;

use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use cudarc::driver::sys::{
    CUdeviceptr, CUevent_flags, CUfunction_attribute, CU_MEMHOSTALLOC_PORTABLE,
};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, CudaViewMut,
    DevicePtr, DevicePtrMut, DeviceRepr, DeviceSlice, LaunchConfig, PinnedHostSlice, PushKernelArg,
    ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;
use parcrypt_modes::ctr::Counter;
use zeroize::Zeroize;

/// The cudarc this crate was built with, for callers that hand it device buffers.
pub use cudarc;

pub use compiler::{
    check_nvrtc, compile_check, compile_variant, host_variants, nvrtc_version, KernelVariant,
    STATIC_SHARED_LIMIT_BYTES,
};
pub use devices::CudaDeviceInfo;
pub use zero_copy::MappedBuffer;

use crate::ghash::{self, SegmentPlan};
use crate::host::{
    grown_capacity, launch_shape, slab_size, validate_geometry, KEY_TABLE_WORDS, MAX_SLAB_BYTES,
    ROUND_KEY_WORDS,
};
use crate::kernel_source::{self, kernel_name, CipherFamily, KernelOperation};
use crate::operation::{ModeArguments, SlabChain};
use crate::{
    program_cache, self_test, tuning, DeviceKind, GpuApi, GpuDevice, GpuError, GpuOperation,
    KernelCache, KeyMaterial, LaunchGeometry, OpenOptions, ProgramOrigin, TableCopies, TuneTable,
};
use compiler::ImageKind;
use devices::CudaResultExt;

/// Data in this device's memory, as [`CudaDevice::process_device_buffer`] takes it.
pub type DeviceBuffer = CudaSlice<u8>;

/// Page-locked host memory, as [`CudaDevice::alloc_pinned`] gives it.
pub type PinnedBuffer = PinnedHostSlice<u8>;

/// Streams, each with its own slab buffers, that consecutive slabs rotate over.
pub const STREAMS: usize = 3;

/// The kernels' `u32x4` (vendor_cuda.h): a 16-byte aligned by-value parameter.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Words4([u32; 4]);
/// The kernels' `u32x2`: an 8-byte aligned by-value parameter.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct Words2([u32; 2]);

// SAFETY: plain words with exactly the size and alignment of the CUDA structs they stand
// for; the driver copies the parameter's size in bytes from them.
unsafe impl DeviceRepr for Words4 {}
// SAFETY: as above.
unsafe impl DeviceRepr for Words2 {}

/// One kernel of the loaded module and how it must be launched.
struct LoadedKernel {
    family: CipherFamily,
    operation: KernelOperation,
    /// The segmented variant of the CTR kernel ([`kernel_source::ctr_segments_kernel_name`]).
    segmented: bool,
    function: CudaFunction,
    /// The most threads per block the kernel's registers allow.
    max_threads_per_block: usize,
    /// Dynamic shared memory to request at launch (0 in a static variant).
    shared_bytes: u32,
}

/// The GHASH kernel, which belongs to no cipher family.
struct GhashFunction {
    function: CudaFunction,
    max_threads_per_block: usize,
}

/// A stream's slab buffers, grown on demand and kept for later calls.
#[derive(Default)]
struct Slot {
    input: Option<CudaSlice<u8>>,
    output: Option<CudaSlice<u8>>,
    /// Pinned host memory ordinary (pageable) data is staged through.
    staging: Option<PinnedHostSlice<u8>>,
    /// Segmented CTR: the slab's counter blocks.
    counters: Option<CudaSlice<u8>>,
}

impl Slot {
    /// Makes the counter buffer hold at least `bytes`.
    fn reserve_counters(&mut self, stream: &Arc<CudaStream>, bytes: usize) -> Result<(), GpuError> {
        if self.counters.as_ref().map_or(0, CudaSlice::len) < bytes {
            self.counters = None;
            self.counters = Some(
                stream
                    .alloc_zeros(bytes.next_power_of_two())
                    .or_cuda("cuMemAlloc")?,
            );
        }
        Ok(())
    }

    fn reserve(
        &mut self,
        stream: &Arc<CudaStream>,
        bytes: usize,
        limit: usize,
        staged: bool,
    ) -> Result<(), GpuError> {
        let device_capacity = self.input.as_ref().map_or(0, CudaSlice::len);
        if device_capacity < bytes || self.output.is_none() {
            let capacity = grown_capacity(bytes, limit);
            // Dropped first so the device can reuse their memory; the frees are ordered
            // after the work already queued on this stream.
            self.input = None;
            self.output = None;
            self.input = Some(stream.alloc_zeros(capacity).or_cuda("cuMemAlloc")?);
            self.output = Some(stream.alloc_zeros(capacity).or_cuda("cuMemAlloc")?);
        }
        let staging_capacity = self.staging.as_ref().map_or(0, PinnedHostSlice::len);
        if staged && staging_capacity < bytes {
            self.staging = None;
            self.staging = Some(alloc_pinned_zeroed(
                stream.context(),
                grown_capacity(bytes, limit),
            )?);
        }
        Ok(())
    }
}

/// Page-locked host memory, zeroed. Not write-combined (cudarc's `alloc_pinned` default):
/// the host reads results back out of it, and reads of write-combined memory are uncached.
/// Portable: pinned for every context, not only the one that allocated it.
fn alloc_pinned_zeroed<T: DeviceRepr + ValidAsZeroBits>(
    context: &Arc<CudaContext>,
    length: usize,
) -> Result<PinnedHostSlice<T>, GpuError> {
    alloc_pinned_zeroed_with_flags(context, length, CU_MEMHOSTALLOC_PORTABLE)
}

/// [`alloc_pinned_zeroed`] with the `cuMemHostAlloc` flags given.
fn alloc_pinned_zeroed_with_flags<T: DeviceRepr + ValidAsZeroBits>(
    context: &Arc<CudaContext>,
    length: usize,
    flags: u32,
) -> Result<PinnedHostSlice<T>, GpuError> {
    // SAFETY: the memory is zeroed below before any reference to it is made.
    let mut pinned = unsafe { context.alloc_pinned_with_flags::<T>(length.max(1), flags) }
        .or_cuda("cuMemHostAlloc")?;
    let pointer = pinned.as_mut_ptr().or_cuda("cuEventSynchronize")?;
    // SAFETY: `pointer` starts an allocation of `length.max(1)` values of T that nothing
    // else can reach yet, and all-zero bytes are a valid T (ValidAsZeroBits).
    unsafe { std::ptr::write_bytes(pointer, 0, length.max(1)) };
    Ok(pinned)
}

/// What a call changes: buffers, the key, the geometry.
struct DeviceState {
    geometry: LaunchGeometry,
    /// Shapes per cipher, operation and size from `parcrypt tune`, ahead of `geometry`.
    tuning: Option<Arc<TuneTable>>,
    slots: Vec<Slot>,
    round_keys: CudaSlice<u32>,
    key_tables: CudaSlice<u32>,
    aes_tables: CudaSlice<u32>,
    /// Pinned, so that key words go straight from here to the device and never through a
    /// driver staging buffer this crate cannot wipe.
    key_staging: PinnedHostSlice<u32>,
    /// Recorded on stream 0 after the key upload; the other streams wait for it.
    key_ready: CudaEvent,
    /// Device-buffer CBC decryption: the ciphertext the kernel reads while it writes
    /// plaintext over the caller's buffer.
    cbc_scratch: Option<CudaSlice<u8>>,
    /// Device-buffer CTR: one whole block for a final partial block.
    tail_block: CudaSlice<u8>,
    /// The mapped host buffer [`CudaDevice::process_zero_copy`] stages through, kept for
    /// later calls.
    zero_copy: Option<zero_copy::HostMapped>,
}

/// The buffers and values every launch passes besides its data.
struct KeyArguments<'a> {
    key: &'a KeyMaterial,
    round_keys: &'a CudaSlice<u32>,
    key_tables: &'a CudaSlice<u32>,
    aes_tables: &'a CudaSlice<u32>,
    geometry: LaunchGeometry,
}

/// An opened, self-tested CUDA device.
///
/// `process` and the other entry points may be called from several threads; calls on one
/// device run one at a time.
pub struct CudaDevice {
    info: CudaDeviceInfo,
    variant: KernelVariant,
    architecture: String,
    origin: ProgramOrigin,
    slab_bytes: usize,
    kernels: Vec<LoadedKernel>,
    ghash: GhashFunction,
    state: Mutex<DeviceState>,
    streams: Vec<Arc<CudaStream>>,
    // Kept alive for the functions loaded from it.
    _module: Arc<CudaModule>,
    context: Arc<CudaContext>,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CudaDevice")
            .field("info", &self.info)
            .field("variant", &self.variant)
            .field("architecture", &self.architecture)
            .field("origin", &self.origin)
            .field("slab_bytes", &self.slab_bytes)
            .finish_non_exhaustive()
    }
}

impl CudaDevice {
    /// Every CUDA device the driver sees, for `parcrypt devices`. A driver with no usable
    /// device gives an empty list; no driver gives [`GpuError::NoCudaDriver`].
    pub fn list() -> Result<Vec<CudaDeviceInfo>, GpuError> {
        devices::describe_all()
    }

    /// Opens device `index` with the default options.
    pub fn open(index: usize) -> Result<Self, GpuError> {
        Self::open_with(index, &OpenOptions::default())
    }

    /// Opens device `index`: compiles (or loads) the kernels, runs the self-test and refuses
    /// the device if any kernel gives a wrong answer.
    pub fn open_with(index: usize, options: &OpenOptions) -> Result<Self, GpuError> {
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
        let (module, origin) = load_or_compile(
            &context,
            &architecture,
            &source,
            &compile_options,
            cache_entry.as_deref(),
        )?;
        let assemble = |module, origin| {
            Self::assemble(
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
        self_test::accept_or_rebuild(opened, origin, Self::self_test, || {
            let module = compile_and_store(
                &context,
                &architecture,
                &source,
                &compile_options,
                cache_entry.as_deref(),
            )?;
            assemble(module, ProgramOrigin::Compiled)
        })
    }

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
        let mut kernels = Vec::new();
        for family in CipherFamily::ALL {
            for loaded in kernel_source::family_kernels(family) {
                let operation = loaded.operation;
                let function = module
                    .load_function(loaded.name)
                    .or_cuda("cuModuleGetFunction")?;
                // Segmented CTR has CTR's tables, so its operation's bytes.
                let shared_bytes = variant.launch_shared_bytes(family, operation);
                if shared_bytes > STATIC_SHARED_LIMIT_BYTES {
                    // Blocks may not have more than 48 KiB of shared memory unless each
                    // kernel opts in to its size.
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
                kernels.push(LoadedKernel {
                    family,
                    operation,
                    segmented: loaded.segmented,
                    function,
                    max_threads_per_block: usize::try_from(max_threads_per_block)
                        .unwrap_or(1)
                        .max(1),
                    shared_bytes,
                });
            }
        }
        let ghash_function = module
            .load_function(ghash::KERNEL_NAME)
            .or_cuda("cuModuleGetFunction")?;
        let ghash = GhashFunction {
            max_threads_per_block: usize::try_from(
                ghash_function
                    .max_threads_per_block()
                    .or_cuda("cuFuncGetAttribute")?,
            )
            .unwrap_or(1)
            .max(1),
            function: ghash_function,
        };
        let stream = &streams[0];
        let aes_tables = stream
            .clone_htod(&kernel_source::aes_table_words())
            .or_cuda("cuMemcpyHtoDAsync")?;
        let state = DeviceState {
            geometry,
            tuning: None,
            slots: (0..STREAMS).map(|_| Slot::default()).collect(),
            round_keys: stream.alloc_zeros(ROUND_KEY_WORDS).or_cuda("cuMemAlloc")?,
            key_tables: stream.alloc_zeros(KEY_TABLE_WORDS).or_cuda("cuMemAlloc")?,
            aes_tables,
            key_staging: alloc_pinned_zeroed(&context, ROUND_KEY_WORDS + KEY_TABLE_WORDS)?,
            key_ready: context.new_event(None).or_cuda("cuEventCreate")?,
            cbc_scratch: None,
            tail_block: stream.alloc_zeros(16).or_cuda("cuMemAlloc")?,
            zero_copy: None,
        };
        stream.synchronize().or_cuda("cuStreamSynchronize")?;
        Ok(CudaDevice {
            info,
            variant,
            architecture,
            origin,
            slab_bytes,
            kernels,
            ghash,
            state: Mutex::new(state),
            streams,
            _module: module,
            context,
        })
    }

    /// The known-answer vectors through both the host path and the in-place device path.
    fn self_test(&self) -> Result<(), GpuError> {
        self_test::run(&self.info.name, |key, operation, data| {
            self.process(key, operation, data)
        })?;
        let stream = &self.streams[0];
        self_test::run(&self.info.name, |key, operation, data| {
            let mut buffer = stream.clone_htod(&*data).or_cuda("cuMemcpyHtoDAsync")?;
            self.process_device_buffer(key, operation, &mut buffer)?;
            stream
                .memcpy_dtoh(&buffer, data)
                .or_cuda("cuMemcpyDtoHAsync")?;
            stream.synchronize().or_cuda("cuStreamSynchronize")
        })
    }

    pub fn info(&self) -> &CudaDeviceInfo {
        &self.info
    }

    /// The device's name as its driver reports it.
    pub fn name(&self) -> String {
        self.info.name.trim().to_string()
    }

    /// The table copies the kernels were compiled with (see the top of `parcrypt.cl` for
    /// what fewer than 32 means for timing).
    pub fn table_copies(&self) -> TableCopies {
        self.variant.table_copies
    }

    /// The compiled variant: table copies and static or dynamic shared memory.
    pub fn kernel_variant(&self) -> KernelVariant {
        self.variant
    }

    /// What the kernels were compiled for: `sm_XY` (CUBIN) or `compute_XY` (PTX).
    pub fn architecture(&self) -> &str {
        &self.architecture
    }

    pub fn program_origin(&self) -> ProgramOrigin {
        self.origin
    }

    pub fn slab_bytes(&self) -> usize {
        self.slab_bytes
    }

    /// The CUDA context (the device's primary context), for allocating buffers to hand to
    /// [`CudaDevice::process_device_buffer`].
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.context
    }

    /// The stream device-buffer calls run on. Buffers allocated on it, and work queued on
    /// it, are ordered with those calls without further synchronisation.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.streams[0]
    }

    pub fn launch_geometry(&self) -> LaunchGeometry {
        self.lock_state().geometry
    }

    /// Changes the launch shape for later calls (for tuning); any shape gives the same
    /// output.
    pub fn set_launch_geometry(&self, geometry: LaunchGeometry) -> Result<(), GpuError> {
        validate_geometry(geometry)?;
        let mut state = self.lock_state();
        state.geometry = geometry;
        state.tuning = None;
        Ok(())
    }

    /// Installs or removes a tune table; see [`GpuDevice::set_tuning`].
    pub fn set_tuning(&self, table: Option<Arc<TuneTable>>) {
        self.lock_state().tuning = table;
    }

    pub fn tuning(&self) -> Option<Arc<TuneTable>> {
        self.lock_state().tuning.clone()
    }

    fn lock_state(&self) -> MutexGuard<'_, DeviceState> {
        // A panic while holding the lock leaves only scratch buffers and key words behind,
        // all of which every call sets afresh.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The kernel of `family` for `operation` (never the segmented CTR kernel).
    fn kernel(&self, family: CipherFamily, operation: KernelOperation) -> &LoadedKernel {
        self.kernels
            .iter()
            .find(|loaded| {
                loaded.family == family && loaded.operation == operation && !loaded.segmented
            })
            .expect("a kernel exists for every family and operation")
    }

    /// The kernel that runs `operation` for `family`, the segmented CTR kernel included.
    fn kernel_for(&self, family: CipherFamily, operation: &GpuOperation) -> &LoadedKernel {
        let (kernel_operation, segmented) = (operation.kernel_operation(), operation.segmented());
        self.kernels
            .iter()
            .find(|loaded| {
                loaded.family == family
                    && loaded.operation == kernel_operation
                    && loaded.segmented == segmented
            })
            .expect("a kernel exists for every family and operation")
    }

    /// GHASH partial sums of host `data`, one per segment of `segment_bytes`; see
    /// [`GpuDevice::ghash_segments`]. Slab by slab on stream 0: the data is ciphertext and
    /// the hash key (secret: it is H) a kernel argument, so it is in no buffer of ours; the
    /// driver keeps launch arguments in its own parameter memory, which this crate cannot
    /// wipe.
    pub fn ghash_segments(
        &self,
        hash_key: &[u8; 16],
        data: &[u8],
        segment_bytes: usize,
    ) -> Result<Vec<u128>, GpuError> {
        let plan = SegmentPlan::new(segment_bytes, self.slab_bytes)?;
        let segments = ghash::segment_count(data.len(), segment_bytes);
        if segments == 0 {
            return Ok(Vec::new());
        }
        let (key_high, key_low) = ghash::prepared_key_words(hash_key);
        let blocks_per_segment = plan.blocks_per_segment();
        // One call at a time per device, as for `process`; the geometry is read under it.
        let state = self.lock_state();
        let geometry = LaunchGeometry {
            threads_per_group: state.geometry.threads_per_group,
            blocks_per_thread: 1,
        };
        self.context.bind_to_thread().or_cuda("cuCtxSetCurrent")?;
        let stream = &self.streams[0];
        let mut partials = Vec::with_capacity(segments);
        let mut padded = Vec::new();
        for slab in data.chunks(plan.slab_bytes) {
            let blocks = slab.len().div_ceil(16);
            let slab_segments = ghash::segment_count(slab.len(), segment_bytes);
            // A final partial block is hashed zero-padded; only the last slab can have one.
            let input = if slab.len() % 16 == 0 {
                stream.clone_htod(slab)
            } else {
                padded.clear();
                padded.extend_from_slice(slab);
                padded.resize(blocks * 16, 0);
                stream.clone_htod(&padded)
            }
            .or_cuda("cuMemcpyHtoDAsync")?;
            let mut output = stream
                .alloc_zeros::<u64>(2 * slab_segments)
                .or_cuda("cuMemAlloc")?;
            let block_count = u32::try_from(blocks).map_err(|_| {
                GpuError::InvalidInput(format!("{blocks} blocks do not fit one launch"))
            })?;
            let (group_size, groups) =
                launch_shape(geometry, slab_segments, self.ghash.max_threads_per_block);
            let config = LaunchConfig {
                grid_dim: (u32::try_from(groups).unwrap_or(u32::MAX), 1, 1),
                block_dim: (group_size as u32, 1, 1),
                shared_mem_bytes: 0,
            };
            {
                let (input_pointer, _input_record) = input.device_ptr(stream);
                let (output_pointer, _output_record) = output.device_ptr_mut(stream);
                let mut launch = stream.launch_builder(&self.ghash.function);
                launch
                    .arg(&input_pointer)
                    .arg(&output_pointer)
                    .arg(&block_count)
                    .arg(&blocks_per_segment)
                    .arg(&key_high)
                    .arg(&key_low);
                // SAFETY: the arguments follow `ghash_segments` in parcrypt.cl in order and
                // type: input and partials as device pointers, block count and blocks per
                // segment as u32, the key's high and low words as u64. `input` holds
                // `blocks` whole blocks and `output` two u64 per segment of them, both live
                // allocations of this context that outlive the launch (they are dropped
                // only after the copy back below, which is ordered after the kernel on the
                // same stream); the kernel indexes only below those counts.
                unsafe { launch.launch(config) }.or_cuda("cuLaunchKernel")?;
            }
            let words = stream.clone_dtoh(&output).or_cuda("cuMemcpyDtoHAsync")?;
            stream.synchronize().or_cuda("cuStreamSynchronize")?;
            partials.extend(
                words
                    .chunks_exact(2)
                    .map(|pair| ghash::partial_from_words(pair[0], pair[1])),
            );
        }
        drop(state);
        Ok(partials)
    }

    /// Page-locked host memory of `bytes` bytes, zeroed, for [`CudaDevice::process_pinned`]:
    /// the copies from and to it need no staging, so the pipeline runs at the bus's speed.
    pub fn alloc_pinned(&self, bytes: usize) -> Result<PinnedHostSlice<u8>, GpuError> {
        if bytes == 0 {
            return Err(GpuError::InvalidInput(
                "a pinned buffer needs at least one byte".into(),
            ));
        }
        alloc_pinned_zeroed(&self.context, bytes)
    }

    /// A copy of `data` in this device's memory, allocated on [`CudaDevice::stream`] and
    /// complete when this returns, for [`CudaDevice::process_device_buffer`].
    pub fn copy_to_device(&self, data: &[u8]) -> Result<DeviceBuffer, GpuError> {
        let stream = &self.streams[0];
        let buffer = stream.clone_htod(data).or_cuda("cuMemcpyHtoDAsync")?;
        stream.synchronize().or_cuda("cuStreamSynchronize")?;
        Ok(buffer)
    }

    /// Runs `operation` under `key` over `data` in place: copies in, computes, copies out,
    /// and returns when the result is in `data`. ECB and CBC need whole blocks; CTR takes
    /// any length. `data` is staged through pinned buffers; pinned data should go to
    /// [`CudaDevice::process_pinned`].
    pub fn process(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
    ) -> Result<(), GpuError> {
        self.run_host(key, operation, data, true)
    }

    /// As [`CudaDevice::process`], over `data[range]`, copying directly between the pinned
    /// buffer and the device.
    pub fn process_pinned(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut PinnedHostSlice<u8>,
        range: Range<usize>,
    ) -> Result<(), GpuError> {
        let length = data.len();
        // Waits for whatever cudarc itself queued on the buffer.
        let bytes = data.as_mut_slice().or_cuda("cuEventSynchronize")?;
        let Some(bytes) = bytes.get_mut(range.clone()) else {
            return Err(GpuError::InvalidInput(format!(
                "range {range:?} is outside the {length}-byte pinned buffer"
            )));
        };
        self.run_host(key, operation, bytes, false)
    }

    /// Runs `operation` in place over a buffer already in this device's memory: no host
    /// copies of the data. Work queued on the buffer's own stream (and, through cudarc's
    /// event tracking, work recorded on the buffer) comes first; the call returns when the
    /// result is in the buffer and the key is wiped.
    pub fn process_device_buffer(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        buffer: &mut CudaSlice<u8>,
    ) -> Result<(), GpuError> {
        self.run_device(key, operation, &mut buffer.as_view_mut(), None)
    }

    /// As [`CudaDevice::process_device_buffer`], over part of a buffer. The view must start
    /// on a 16-byte boundary (8 for Blowfish), as the kernels load whole blocks.
    pub fn process_device_view(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        buffer: &mut CudaViewMut<'_, u8>,
    ) -> Result<(), GpuError> {
        self.run_device(key, operation, buffer, None)
    }

    /// As [`CudaDevice::process_device_buffer`], and returns the time the GPU spent on the
    /// data (kernels, plus the copies CBC and a partial CTR block need), measured with CUDA
    /// events on the stream: the key upload and the host's own overhead are not in it.
    pub fn process_device_buffer_timed(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        buffer: &mut CudaSlice<u8>,
    ) -> Result<Duration, GpuError> {
        // CU_EVENT_DEFAULT: cudarc's default events do not record time.
        let new_event = || {
            self.context
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .or_cuda("cuEventCreate")
        };
        let events = (new_event()?, new_event()?);
        self.run_device(key, operation, &mut buffer.as_view_mut(), Some(&events))?;
        if buffer.is_empty() {
            return Ok(Duration::ZERO);
        }
        let milliseconds = events
            .0
            .elapsed_ms(&events.1)
            .or_cuda("cuEventElapsedTime")?;
        Ok(Duration::from_secs_f64(
            f64::from(milliseconds.max(0.0)) / 1e3,
        ))
    }

    fn run_host(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
        staged: bool,
    ) -> Result<(), GpuError> {
        operation.validate(key.algorithm(), data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let mut state = self.lock_state();
        let decrypting = operation.kernel_operation().decrypts();
        let uploaded = self.upload_key(&mut state, key, decrypting);
        let ran =
            uploaded.and_then(|()| self.run_host_slabs(&mut state, key, operation, data, staged));
        self.wait_for_streams(true)?;
        let wiped = self.wipe_key(&mut state);
        ran.and(wiped)
    }

    fn run_device(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        buffer: &mut CudaViewMut<'_, u8>,
        timing: Option<&(CudaEvent, CudaEvent)>,
    ) -> Result<(), GpuError> {
        let algorithm = key.algorithm();
        operation.validate(algorithm, buffer.len())?;
        if buffer.is_empty() {
            return Ok(());
        }
        let buffer_stream = Arc::clone(DeviceSlice::stream(buffer));
        if buffer_stream.context() != &self.context {
            return Err(GpuError::InvalidInput(format!(
                "the device buffer belongs to another CUDA context (device {}), not to {}",
                buffer_stream.context().ordinal(),
                self.name()
            )));
        }
        let stream = &self.streams[0];
        let mut state = self.lock_state();
        // Work the caller queued on the buffer's stream must finish before ours starts.
        let ordered = if buffer_stream.as_ref() == stream.as_ref() {
            Ok(())
        } else {
            stream.join(&buffer_stream).or_cuda("cuStreamWaitEvent")
        };
        let decrypting = operation.kernel_operation().decrypts();
        let uploaded = ordered.and_then(|()| self.upload_key(&mut state, key, decrypting));
        let ran = uploaded
            .and_then(|()| self.run_device_launches(&mut state, key, operation, buffer, timing));
        // Device memory only: a failed wait cannot leave host memory being written.
        let waited = self.wait_for_streams(false);
        let wiped = self.wipe_key(&mut state);
        ran.and(waited).and(wiped)
    }

    /// Copies the key's words to the device on stream 0 and makes the other streams wait
    /// for them.
    fn upload_key(
        &self,
        state: &mut DeviceState,
        key: &KeyMaterial,
        decrypting: bool,
    ) -> Result<(), GpuError> {
        let stream = &self.streams[0];
        let round_keys = key.round_keys(decrypting);
        let tables = key.key_tables();
        let staging = state
            .key_staging
            .as_mut_slice()
            .or_cuda("cuEventSynchronize")?;
        staging[..round_keys.len()].copy_from_slice(round_keys);
        staging[ROUND_KEY_WORDS..ROUND_KEY_WORDS + tables.len()].copy_from_slice(tables);
        stream
            .memcpy_htod(
                &staging[..round_keys.len()],
                &mut state.round_keys.slice_mut(..round_keys.len()),
            )
            .or_cuda("cuMemcpyHtoDAsync")?;
        if !tables.is_empty() {
            stream
                .memcpy_htod(
                    &staging[ROUND_KEY_WORDS..ROUND_KEY_WORDS + tables.len()],
                    &mut state.key_tables.slice_mut(..tables.len()),
                )
                .or_cuda("cuMemcpyHtoDAsync")?;
        }
        state.key_ready.record(stream).or_cuda("cuEventRecord")?;
        for other in &self.streams[1..] {
            other.wait(&state.key_ready).or_cuda("cuStreamWaitEvent")?;
        }
        Ok(())
    }

    /// Overwrites the device's and the staging buffer's copies of the key, so that they do
    /// not outlive the call. Runs after every stream is idle.
    fn wipe_key(&self, state: &mut DeviceState) -> Result<(), GpuError> {
        let stream = &self.streams[0];
        let device_wiped = stream
            .memset_zeros(&mut state.round_keys)
            .and_then(|()| stream.memset_zeros(&mut state.key_tables))
            .and_then(|()| stream.synchronize())
            .or_cuda("cuMemsetD8Async");
        // Wiped whatever the device said: the uploads from the staging buffer finished
        // before the streams went idle, and a device that failed reads nothing more.
        let staging_wiped = state
            .key_staging
            .as_mut_slice()
            .map(Zeroize::zeroize)
            .or_cuda("cuEventSynchronize");
        device_wiped.and(staging_wiped)
    }

    /// Waits until every stream is idle. `host_memory_in_flight`: copies may still be
    /// reading or writing host memory that safe code can reach (the caller's pinned data,
    /// the staging buffers); if the device cannot say that they stopped, returning would
    /// hand that memory back while it can still change, so the process is aborted instead,
    /// unless the error is a fault that stopped the context (then nothing runs any more).
    fn wait_for_streams(&self, host_memory_in_flight: bool) -> Result<(), GpuError> {
        let mut outcome = Ok(());
        for stream in &self.streams {
            // cudarc reports an error stored by earlier bookkeeping (an event record, a
            // free) before it synchronises, and clears it: the first failure may not be this
            // stream's at all, so the wait is tried once more before anything is concluded.
            let waited = stream.synchronize().or_else(|_| stream.synchronize());
            if let Err(error) = waited {
                // A kernel fault poisons the context: the device stops all of its work, so
                // no copy can still touch host memory, and the error (which names the fault)
                // is worth more to the caller than an abort.
                if host_memory_in_flight && !context_is_dead(&error) {
                    eprintln!(
                        "parcrypt: CUDA stream could not be drained ({error}); host memory may \
                         still be in use by the device, aborting"
                    );
                    std::process::abort();
                }
                outcome = outcome.and(Err(error).or_cuda("cuStreamSynchronize"));
            }
        }
        outcome
    }

    /// Queues every slab: upload, kernel, download on rotating streams; a stream's previous
    /// slab is finished (and, when staged, copied out) before the stream takes the next.
    /// Returns once everything is queued and the last slabs are back, or at the first
    /// failure; the caller then waits for the streams.
    fn run_host_slabs(
        &self,
        state: &mut DeviceState,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
        staged: bool,
    ) -> Result<(), GpuError> {
        let DeviceState {
            geometry,
            tuning,
            slots,
            round_keys,
            key_tables,
            aes_tables,
            ..
        } = state;
        let arguments = KeyArguments {
            key,
            round_keys,
            key_tables,
            aes_tables,
            geometry: tuning::choose_geometry(
                *geometry,
                tuning.as_deref(),
                key.algorithm(),
                operation.kernel_operation(),
                data.len(),
            ),
        };
        let block_size = key.algorithm().block_size();
        let kernel = self.kernel_for(CipherFamily::of(key.algorithm()), operation);
        // Segmented CTR: slabs of whole segments.
        let slab_bytes = operation.slab_bytes(self.slab_bytes)?;
        let mut chain = SlabChain::new(operation);
        let mut pending: [Option<Range<usize>>; STREAMS] = Default::default();
        let mut slab_index = 0;
        let mut offset = 0;
        while offset < data.len() {
            let range = offset..offset + slab_bytes.min(data.len() - offset);
            let length = range.len();
            let slot_index = slab_index % STREAMS;
            let stream = &self.streams[slot_index];
            let slot = &mut slots[slot_index];
            if let Some(done) = pending[slot_index].take() {
                finish_slab(stream, slot, &mut data[done], staged)?;
            }
            let blocks = length.div_ceil(block_size);
            slot.reserve(stream, blocks * block_size, self.slab_bytes, staged)?;
            // Taken before this slab's download is queued: for CBC it copies the slab's last
            // ciphertext block, which the download overwrites.
            let mode = chain.next(&data[range.clone()], block_size);
            let counters = match mode {
                ModeArguments::Segments { first, count, .. } => {
                    operation.segment_counters(block_size, first, count)
                }
                _ => &[],
            };
            if !counters.is_empty() {
                slot.reserve_counters(stream, counters.len())?;
                let buffer = slot.counters.as_mut().expect("reserved above");
                // From pageable memory, which CUDA copies out before this returns; in
                // stream order after this slot's previous launch, which read the buffer.
                stream
                    .memcpy_htod(counters, &mut buffer.slice_mut(..counters.len()))
                    .or_cuda("cuMemcpyHtoDAsync")?;
            }
            let (Some(input), Some(output)) = (slot.input.as_mut(), slot.output.as_mut()) else {
                unreachable!("reserve leaves both buffers allocated");
            };

            // The copies are asynchronous: the device reads and writes `data[range]` (or the
            // staging buffer) after these calls return. Nothing here touches that memory
            // again until `finish_slab` has synchronised this stream, and `data` stays
            // borrowed until the caller has waited for every stream.
            if staged {
                let staging = staging_bytes(slot.staging.as_mut())?;
                copy_in_parallel(&mut staging[..length], &data[range.clone()]);
                stream
                    .memcpy_htod(&staging[..length], &mut input.slice_mut(..length))
                    .or_cuda("cuMemcpyHtoDAsync")?;
            } else {
                stream
                    .memcpy_htod(&data[range.clone()], &mut input.slice_mut(..length))
                    .or_cuda("cuMemcpyHtoDAsync")?;
            }
            {
                let (input_pointer, _input_record) = input.device_ptr(stream);
                let (output_pointer, _output_record) = output.device_ptr_mut(stream);
                let counter_record = slot
                    .counters
                    .as_ref()
                    .filter(|_| !counters.is_empty())
                    .map(|buffer| buffer.device_ptr(stream));
                launch_kernel_with(
                    stream,
                    kernel,
                    &arguments,
                    input_pointer,
                    output_pointer,
                    blocks,
                    mode,
                    counter_record.as_ref().map(|(pointer, _)| *pointer),
                )?;
            }
            if staged {
                let staging = staging_bytes(slot.staging.as_mut())?;
                stream
                    .memcpy_dtoh(&output.slice(..length), &mut staging[..length])
                    .or_cuda("cuMemcpyDtoHAsync")?;
            } else {
                stream
                    .memcpy_dtoh(&output.slice(..length), &mut data[range.clone()])
                    .or_cuda("cuMemcpyDtoHAsync")?;
            }
            pending[slot_index] = Some(range);
            offset += length;
            slab_index += 1;
        }
        for step in 0..STREAMS {
            let slot_index = (slab_index + step) % STREAMS;
            if let Some(done) = pending[slot_index].take() {
                finish_slab(
                    &self.streams[slot_index],
                    &mut slots[slot_index],
                    &mut data[done],
                    staged,
                )?;
            }
        }
        Ok(())
    }

    /// The device-buffer path: ECB and CTR run in place in launches of at most
    /// [`MAX_SLAB_BYTES`]; CBC decryption reads each chunk's ciphertext from a scratch copy;
    /// a final partial CTR block goes through a one-block buffer.
    fn run_device_launches(
        &self,
        state: &mut DeviceState,
        key: &KeyMaterial,
        operation: &GpuOperation,
        buffer: &mut CudaViewMut<'_, u8>,
        timing: Option<&(CudaEvent, CudaEvent)>,
    ) -> Result<(), GpuError> {
        let stream = &self.streams[0];
        let block_size = key.algorithm().block_size();
        let family = CipherFamily::of(key.algorithm());
        let kernel = self.kernel_for(family, operation);
        // Segments no longer than the host paths' slabs, so that every path takes the same
        // operations.
        operation.slab_bytes(self.slab_bytes)?;
        let length = buffer.len();
        let whole_bytes = length / block_size * block_size;
        {
            let (pointer, _record) = buffer.device_ptr(stream);
            if pointer % block_size as CUdeviceptr != 0 {
                return Err(GpuError::InvalidInput(format!(
                    "the device buffer starts at {pointer:#x}, not on a {block_size}-byte \
                     boundary; the kernels load whole blocks"
                )));
            }
        }
        let DeviceState {
            geometry,
            tuning,
            round_keys,
            key_tables,
            aes_tables,
            cbc_scratch,
            tail_block,
            ..
        } = state;
        let arguments = KeyArguments {
            key,
            round_keys,
            key_tables,
            aes_tables,
            geometry: tuning::choose_geometry(
                *geometry,
                tuning.as_deref(),
                key.algorithm(),
                operation.kernel_operation(),
                length,
            ),
        };

        if let GpuOperation::CbcDecrypt { previous } = operation {
            let chunk_bytes = self.slab_bytes.min(whole_bytes);
            let previous_blocks =
                chunk_previous_blocks(stream, buffer, previous, chunk_bytes, block_size)?;
            if let Some((start, _)) = timing {
                start.record(stream).or_cuda("cuEventRecord")?;
            }
            if cbc_scratch.as_ref().map_or(0, CudaSlice::len) < chunk_bytes {
                *cbc_scratch = None;
                *cbc_scratch = Some(stream.alloc_zeros(chunk_bytes).or_cuda("cuMemAlloc")?);
            }
            let scratch = cbc_scratch.as_mut().expect("allocated above");
            for (chunk, previous_block) in previous_blocks.chunks_exact(block_size).enumerate() {
                let start = chunk * chunk_bytes;
                let chunk_length = chunk_bytes.min(whole_bytes - start);
                let range = start..start + chunk_length;
                stream
                    .memcpy_dtod(
                        &buffer.slice(range.clone()),
                        &mut scratch.slice_mut(..chunk_length),
                    )
                    .or_cuda("cuMemcpyDtoDAsync")?;
                let mode = mode_arguments_at(operation, block_size, 0, previous_block);
                let (input_pointer, _input_record) = scratch.device_ptr(stream);
                let mut chunk_view = buffer.slice_mut(range);
                let (output_pointer, _output_record) = chunk_view.device_ptr_mut(stream);
                launch_kernel(
                    stream,
                    kernel,
                    &arguments,
                    input_pointer,
                    output_pointer,
                    chunk_length / block_size,
                    mode,
                )?;
            }
        } else {
            if let Some((start, _)) = timing {
                start.record(stream).or_cuda("cuEventRecord")?;
            }
            // Segmented CTR: launches of whole segments, with every counter block uploaded
            // once (the data is on the device already; its counters are smaller than it).
            let chunk_bytes = operation.slab_bytes(MAX_SLAB_BYTES / 16 * 16)?;
            let device_counters = match operation {
                GpuOperation::CtrSegments { counters, .. } => Some(
                    stream
                        .clone_htod(counters.as_slice())
                        .or_cuda("cuMemcpyHtoDAsync")?,
                ),
                _ => None,
            };
            let mut start = 0;
            while start < whole_bytes {
                let chunk_length = chunk_bytes.min(whole_bytes - start);
                let segments = operation.segment_arguments(block_size, start, chunk_length);
                let mode = segments.unwrap_or_else(|| {
                    mode_arguments_at(operation, block_size, (start / block_size) as u64, &[])
                });
                let counter_view = match (mode, device_counters.as_ref()) {
                    (ModeArguments::Segments { first, count, .. }, Some(counters)) => {
                        Some(counters.slice(first * block_size..(first + count) * block_size))
                    }
                    _ => None,
                };
                let counter_record = counter_view.as_ref().map(|view| view.device_ptr(stream));
                let mut chunk_view = buffer.slice_mut(start..start + chunk_length);
                let (pointer, _record) = chunk_view.device_ptr_mut(stream);
                // In place: input and output are the same memory. The ECB and CTR kernels
                // read block i only in the thread that then writes block i, and read it
                // before writing it, so no thread ever reads a block another has written
                // and no load can see a store it should not (the non-coherent read-only
                // cache that `const __restrict__` allows is never asked for a written
                // block). CBC, whose threads read their neighbour's block, does not run in
                // place.
                launch_kernel_with(
                    stream,
                    kernel,
                    &arguments,
                    pointer,
                    pointer,
                    chunk_length / block_size,
                    mode,
                    counter_record.as_ref().map(|(pointer, _)| *pointer),
                )?;
                start += chunk_length;
            }
            if whole_bytes < length {
                // Only CTR gets here (the others need whole blocks): the last partial block
                // is processed as a whole block in a buffer of its own, then its front is
                // copied back.
                let tail = whole_bytes..length;
                stream
                    .memcpy_dtod(
                        &buffer.slice(tail.clone()),
                        &mut tail_block.slice_mut(..tail.len()),
                    )
                    .or_cuda("cuMemcpyDtoDAsync")?;
                // Segmented CTR runs its last block as one-block CTR from that block's own
                // counter.
                let (mode, tail_kernel) =
                    match operation.segment_block_as_ctr(block_size, whole_bytes) {
                        Some(single) => (
                            mode_arguments_at(&single, block_size, 0, &[]),
                            self.kernel(family, KernelOperation::Ctr),
                        ),
                        None => (
                            mode_arguments_at(
                                operation,
                                block_size,
                                (whole_bytes / block_size) as u64,
                                &[],
                            ),
                            kernel,
                        ),
                    };
                {
                    let (pointer, _record) = tail_block.device_ptr_mut(stream);
                    launch_kernel(stream, tail_kernel, &arguments, pointer, pointer, 1, mode)?;
                }
                stream
                    .memcpy_dtod(&tail_block.slice(..tail.len()), &mut buffer.slice_mut(tail))
                    .or_cuda("cuMemcpyDtoDAsync")?;
                // The block held data and a whole keystream block: leave neither behind.
                stream.memset_zeros(tail_block).or_cuda("cuMemsetD8Async")?;
            }
        }
        if let Some((_, end)) = timing {
            end.record(stream).or_cuda("cuEventRecord")?;
        }
        Ok(())
    }
}

/// Below this, one thread copies a staged slab: threads cost more than they save.
const PARALLEL_COPY_BYTES: usize = 4 << 20;

/// Copies `source` into `destination` (same length) on several threads. Staging ordinary
/// memory through pinned buffers costs two host copies per byte, and one thread copies far
/// slower than the bus moves data; the host's memory bandwidth is what several reach.
fn copy_in_parallel(destination: &mut [u8], source: &[u8]) {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(8);
    if source.len() < PARALLEL_COPY_BYTES || threads < 2 {
        destination.copy_from_slice(source);
        return;
    }
    let piece = source.len().div_ceil(threads);
    std::thread::scope(|scope| {
        for (to, from) in destination.chunks_mut(piece).zip(source.chunks(piece)) {
            scope.spawn(move || to.copy_from_slice(from));
        }
    });
}

/// The pinned staging buffer of a slot as bytes.
fn staging_bytes(staging: Option<&mut PinnedHostSlice<u8>>) -> Result<&mut [u8], GpuError> {
    staging
        .expect("reserve allocates staging for staged slabs")
        .as_mut_slice()
        .or_cuda("cuEventSynchronize")
}

/// Waits for a slot's slab to come back and, when it was staged, copies it out to `data`.
fn finish_slab(
    stream: &CudaStream,
    slot: &mut Slot,
    data: &mut [u8],
    staged: bool,
) -> Result<(), GpuError> {
    stream.synchronize().or_cuda("cuStreamSynchronize")?;
    if staged {
        let staging = staging_bytes(slot.staging.as_mut())?;
        copy_in_parallel(data, &staging[..data.len()]);
    }
    Ok(())
}

/// The ciphertext block before each CBC chunk of `chunk_bytes`, one block per chunk: the
/// caller's `previous` for the first, the buffer's own blocks for the rest. They are read
/// before any chunk is decrypted over its ciphertext, gathered on the device so that one
/// small download brings them all.
fn chunk_previous_blocks(
    stream: &Arc<CudaStream>,
    buffer: &CudaViewMut<'_, u8>,
    previous: &[u8],
    chunk_bytes: usize,
    block_size: usize,
) -> Result<Vec<u8>, GpuError> {
    let whole_bytes = buffer.len() / block_size * block_size;
    let chunks = whole_bytes.div_ceil(chunk_bytes);
    let mut blocks = vec![0u8; chunks * block_size];
    blocks[..block_size].copy_from_slice(previous);
    if chunks > 1 {
        let mut gathered = stream
            .alloc_zeros::<u8>((chunks - 1) * block_size)
            .or_cuda("cuMemAlloc")?;
        for chunk in 1..chunks {
            let end = chunk * chunk_bytes;
            stream
                .memcpy_dtod(
                    &buffer.slice(end - block_size..end),
                    &mut gathered.slice_mut((chunk - 1) * block_size..chunk * block_size),
                )
                .or_cuda("cuMemcpyDtoDAsync")?;
        }
        stream
            .memcpy_dtoh(&gathered, &mut blocks[block_size..])
            .or_cuda("cuMemcpyDtoHAsync")?;
        // A pageable destination makes the download synchronous; waiting says so plainly.
        stream.synchronize().or_cuda("cuStreamSynchronize")?;
    }
    Ok(blocks)
}

/// The mode arguments of a launch whose first block lies `first_block` blocks into the
/// range `operation` describes; `previous` is the ciphertext block before it (CBC only).
fn mode_arguments_at(
    operation: &GpuOperation,
    block_size: usize,
    first_block: u64,
    previous: &[u8],
) -> ModeArguments {
    let shifted = match operation {
        GpuOperation::Ctr { counter, rule } => {
            let mut block = vec![0u8; block_size];
            Counter::new(counter, *rule)
                .advanced(first_block)
                .write(&mut block);
            GpuOperation::Ctr {
                counter: block,
                rule: *rule,
            }
        }
        GpuOperation::CbcDecrypt { .. } => GpuOperation::CbcDecrypt {
            previous: previous.to_vec(),
        },
        other => other.clone(),
    };
    // The first step of a chain is the launch's own arguments; the slab it is shown is only
    // read for the step after (its length for CTR, its last block for CBC).
    SlabChain::new(&shifted).next(&[0u8; 16][..block_size], block_size)
}

/// Launches `kernel` over `block_count` blocks from `input` to `output` on `stream`.
fn launch_kernel(
    stream: &CudaStream,
    kernel: &LoadedKernel,
    arguments: &KeyArguments<'_>,
    input: CUdeviceptr,
    output: CUdeviceptr,
    block_count: usize,
    mode: ModeArguments,
) -> Result<(), GpuError> {
    launch_kernel_with(
        stream,
        kernel,
        arguments,
        input,
        output,
        block_count,
        mode,
        None,
    )
}

/// [`launch_kernel`], with the device buffer of the launch's counter blocks that segmented
/// CTR reads (`ModeArguments::Segments`, which is refused without one).
#[allow(clippy::too_many_arguments)]
fn launch_kernel_with(
    stream: &CudaStream,
    kernel: &LoadedKernel,
    arguments: &KeyArguments<'_>,
    input: CUdeviceptr,
    output: CUdeviceptr,
    block_count: usize,
    mode: ModeArguments,
    counters: Option<CUdeviceptr>,
) -> Result<(), GpuError> {
    let (round_keys, _round_keys_record) = arguments.round_keys.device_ptr(stream);
    let (key_tables, _key_tables_record) = arguments.key_tables.device_ptr(stream);
    let (aes_tables, _aes_tables_record) = arguments.aes_tables.device_ptr(stream);
    let block_count_argument = u32::try_from(block_count).map_err(|_| {
        GpuError::InvalidInput(format!("{block_count} blocks do not fit one launch"))
    })?;
    let rounds = arguments.key.rounds();
    let block_size = arguments.key.algorithm().block_size();
    let (block_words, rule) = match mode {
        ModeArguments::None | ModeArguments::Segments { .. } => ([0; 4], None),
        ModeArguments::Counter { words, rule } => (words, Some(rule)),
        ModeArguments::Previous { words } => (words, None),
    };
    let segments = match mode {
        ModeArguments::Segments {
            blocks_per_segment,
            rule,
            ..
        } => {
            let Some(counters) = counters else {
                return Err(GpuError::InvalidInput(
                    "segmented CTR runs through CudaDevice::process, process_pinned and the \
                     device-buffer calls only, not through mapped memory"
                        .into(),
                ));
            };
            Some((counters, blocks_per_segment, rule))
        }
        _ => None,
    };
    if kernel.segmented != segments.is_some() {
        return Err(GpuError::InvalidInput(
            "segment arguments go with a segmented CTR kernel and only with one".into(),
        ));
    }
    let words4 = Words4(block_words);
    let words2 = Words2([block_words[0], block_words[1]]);

    let (group_size, groups) = launch_shape(
        arguments.geometry,
        block_count,
        kernel.max_threads_per_block,
    );
    let config = LaunchConfig {
        grid_dim: (
            u32::try_from(groups)
                .unwrap_or(u32::MAX)
                .min(i32::MAX as u32),
            1,
            1,
        ),
        block_dim: (group_size as u32, 1, 1),
        shared_mem_bytes: kernel.shared_bytes,
    };

    let mut launch = stream.launch_builder(&kernel.function);
    launch
        .arg(&input)
        .arg(&output)
        .arg(&block_count_argument)
        .arg(&round_keys);
    match kernel.family {
        CipherFamily::Aes => {
            launch.arg(&rounds).arg(&aes_tables);
        }
        CipherFamily::Blowfish => {
            launch.arg(&key_tables);
        }
        CipherFamily::Rc6 => {}
    }
    if let Some((counters, blocks_per_segment, rule)) = &segments {
        launch.arg(counters).arg(blocks_per_segment).arg(rule);
    } else if !matches!(mode, ModeArguments::None) {
        if block_size == 16 {
            launch.arg(&words4);
        } else {
            launch.arg(&words2);
        }
    }
    if let Some(rule) = &rule {
        launch.arg(rule);
    }
    // SAFETY: the arguments follow the kernel signatures in parcrypt.cl in order and type:
    // input and output as device pointers, the block count, the round keys, then per family
    // the round count and table buffer (AES) or the S-box buffer (Blowfish), then the
    // mode's counter and rule or previous block as u32x4 (16-byte blocks) or u32x2 (8-byte
    // blocks), or for the *_ctr_segments kernels (checked above to go with segment
    // arguments) the counter buffer, blocks per segment and rule; the callers upload one
    // counter block for each segment of the launch to that buffer, in stream order before
    // it, and keep it alive until the streams are synchronised. Every pointer is into a
    // live allocation of this context: `input` and
    // `output` hold at least `block_count` blocks (the callers size slab buffers to whole
    // blocks, and device-buffer launches cover only whole blocks of the caller's buffer),
    // the key buffers hold the words the kernels read (ROUND_KEY_WORDS, KEY_TABLE_WORDS,
    // the 576 AES table words), and all of them outlive the launch because their owners
    // are borrowed until the streams have been synchronised. The grid-stride loops never
    // index past `block_count`, whatever the grid. The dynamic shared memory is what the
    // variant's tables take, and the kernel was allowed that much at load time.
    unsafe { launch.launch(config) }.or_cuda("cuLaunchKernel")?;
    Ok(())
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

/// The module from the cache file at `cache_entry` if there is a usable one, else compiled
/// from source and stored there for next time.
fn load_or_compile(
    context: &Arc<CudaContext>,
    architecture: &str,
    source: &str,
    options: &[String],
    cache_entry: Option<&std::path::Path>,
) -> Result<(Arc<CudaModule>, ProgramOrigin), GpuError> {
    let kind = ImageKind::of(architecture)?;
    if let Some(image) = cache_entry
        .and_then(program_cache::load)
        .filter(|image| kind.plausible(image))
    {
        if let Ok(module) = context.load_module(Ptx::from_binary(image)) {
            return Ok((module, ProgramOrigin::Cache));
        }
    }
    let module = compile_and_store(context, architecture, source, options, cache_entry)?;
    Ok((module, ProgramOrigin::Compiled))
}

/// Compiles from source and stores the image at `cache_entry` (replacing what is there).
fn compile_and_store(
    context: &Arc<CudaContext>,
    architecture: &str,
    source: &str,
    options: &[String],
    cache_entry: Option<&std::path::Path>,
) -> Result<Arc<CudaModule>, GpuError> {
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
    let Some(directory) = program_cache::directory(cache) else {
        return Ok(None);
    };
    let (nvrtc_major, nvrtc_minor) = nvrtc_version()?;
    let identity = [
        "cuda".to_string(),
        info.name.clone(),
        format!(
            "compute capability {}.{}",
            info.compute_capability.0, info.compute_capability.1
        ),
        format!("driver {}.{}", info.driver_version.0, info.driver_version.1),
        format!("nvrtc {nvrtc_major}.{nvrtc_minor}"),
        options.join(" "),
    ];
    let mut parts: Vec<&str> = identity.iter().map(String::as_str).collect();
    parts.push(source);
    Ok(Some(program_cache::entry_path(&directory, &parts)))
}

/// Whether `error` is one of the faults after which the CUDA context is unusable and has
/// stopped executing (an illegal address or instruction, a failed launch, a device assert).
fn context_is_dead(error: &cudarc::driver::DriverError) -> bool {
    use cudarc::driver::sys::CUresult;
    matches!(
        error.0,
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
            | CUresult::CUDA_ERROR_LAUNCH_FAILED
            | CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
            | CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUresult::CUDA_ERROR_INVALID_PC
            | CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUresult::CUDA_ERROR_ASSERT
    )
}

impl GpuDevice for CudaDevice {
    fn api(&self) -> GpuApi {
        GpuApi::Cuda
    }

    fn identity(&self) -> String {
        tuning::device_identity(GpuApi::Cuda.name(), &self.info.to_string())
    }

    fn launch_geometry(&self) -> LaunchGeometry {
        CudaDevice::launch_geometry(self)
    }

    fn set_launch_geometry(&self, geometry: LaunchGeometry) -> Result<(), GpuError> {
        CudaDevice::set_launch_geometry(self, geometry)
    }

    fn set_tuning(&self, table: Option<Arc<TuneTable>>) {
        CudaDevice::set_tuning(self, table)
    }

    fn tuning(&self) -> Option<Arc<TuneTable>> {
        CudaDevice::tuning(self)
    }

    /// The data is copied to the device once; each run is timed with CUDA events around
    /// the launches on the device buffer (no host copies in the time).
    fn kernel_times(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
        runs: usize,
    ) -> Result<Vec<Duration>, GpuError> {
        if data.is_empty() {
            return Ok(vec![Duration::ZERO; runs]);
        }
        let mut buffer = self.streams[0]
            .clone_htod(&*data)
            .or_cuda("cuMemcpyHtoDAsync")?;
        (0..runs)
            .map(|_| self.process_device_buffer_timed(key, operation, &mut buffer))
            .collect()
    }

    fn description(&self) -> String {
        format!(
            "{} [{}, {}]",
            self.info, self.architecture, self.variant.table_copies
        )
    }

    fn process(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
    ) -> Result<(), GpuError> {
        CudaDevice::process(self, key, operation, data)
    }

    fn ghash_segments(
        &self,
        hash_key: &[u8; 16],
        data: &[u8],
        segment_bytes: usize,
    ) -> Result<Vec<u128>, GpuError> {
        CudaDevice::ghash_segments(self, hash_key, data, segment_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parcrypt_ciphers::Algorithm;
    use parcrypt_modes::ctr::CounterRule;

    #[test]
    fn device_is_shareable_between_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<CudaDevice>();
    }

    #[test]
    fn only_faults_that_stop_the_context_count_as_dead() {
        use cudarc::driver::sys::CUresult;
        use cudarc::driver::DriverError;
        assert!(context_is_dead(&DriverError(
            CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
        )));
        assert!(context_is_dead(&DriverError(
            CUresult::CUDA_ERROR_LAUNCH_FAILED
        )));
        assert!(!context_is_dead(&DriverError(
            CUresult::CUDA_ERROR_OUT_OF_MEMORY
        )));
        assert!(!context_is_dead(&DriverError(
            CUresult::CUDA_ERROR_NOT_READY
        )));
    }

    #[test]
    fn parallel_copies_copy_everything() {
        for length in [0, 5, PARALLEL_COPY_BYTES - 1, PARALLEL_COPY_BYTES + 4097] {
            let source: Vec<u8> = (0..length).map(|index| (index * 7) as u8).collect();
            let mut destination = vec![0u8; length];
            copy_in_parallel(&mut destination, &source);
            assert_eq!(destination, source);
        }
    }

    #[test]
    fn parameter_structs_have_the_kernels_layout() {
        assert_eq!(std::mem::size_of::<Words4>(), 16);
        assert_eq!(std::mem::align_of::<Words4>(), 16);
        assert_eq!(std::mem::size_of::<Words2>(), 8);
        assert_eq!(std::mem::align_of::<Words2>(), 8);
    }

    #[test]
    fn launch_arguments_continue_the_chain() {
        // A launch 3 blocks in gets the counter the slab chain gives the slab after 3 blocks.
        let mut start = [0xffu8; 16];
        start[0] = 0x12;
        let operation = GpuOperation::Ctr {
            counter: start.to_vec(),
            rule: CounterRule::Full,
        };
        let mut chain = SlabChain::new(&operation);
        chain.next(&[0; 48], 16);
        assert_eq!(
            mode_arguments_at(&operation, 16, 3, &[]),
            chain.next(&[0; 16], 16)
        );
        let cbc = GpuOperation::CbcDecrypt {
            previous: vec![0; 8],
        };
        assert_eq!(
            mode_arguments_at(&cbc, 8, 0, &[1, 0, 0, 0, 2, 0, 0, 0]),
            ModeArguments::Previous {
                words: [1, 2, 0, 0]
            }
        );
        assert_eq!(
            mode_arguments_at(&GpuOperation::EcbEncrypt, 16, 7, &[]),
            ModeArguments::None
        );
    }

    #[test]
    fn segmented_kernels_are_entry_points_under_nvrtc() {
        if let Err(error) = check_nvrtc() {
            println!("SKIPPED: {error}");
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
        match devices::describe(0) {
            Ok(info) => Some(info),
            Err(error) => {
                println!("SKIPPED: no CUDA GPU/driver [{error}]");
                None
            }
        }
    }

    #[test]
    fn a_cached_binary_that_fails_the_self_test_is_replaced() {
        let Some(info) = gpu_or_skip() else { return };
        let directory = tempfile::tempdir().unwrap();
        let cache = KernelCache::Directory(directory.path().to_path_buf());
        let copies = TableCopies::for_device(DeviceKind::Gpu, info.shared_memory_per_block_bytes);
        let variant = KernelVariant::for_table_copies(copies);
        let (major, minor) = info.compute_capability;
        let architecture = compiler::architecture_for(major, minor).unwrap();
        let options = variant.nvrtc_options(&architecture);
        let source = kernel_source::cuda_source();
        // An image of subtly wrong kernels stored under the name of the real ones.
        let wrong_source = program_cache::stale::wrong_source(&source);
        let path = cache_entry(&cache, &info, &options, &source)
            .unwrap()
            .unwrap();
        let stale = compiler::compile_source(&wrong_source, &architecture, &options).unwrap();
        program_cache::store(&path, &stale);
        program_cache::stale::assert_replaced_on_open(&path, &stale, copies, cache, |options| {
            CudaDevice::open_with(0, options).map(|opened| opened.program_origin())
        });
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
            .clone_dtoh(&state.round_keys)
            .unwrap()
            .iter()
            .all(|&word| word == 0));
        assert!(stream
            .clone_dtoh(&state.key_tables)
            .unwrap()
            .iter()
            .all(|&word| word == 0));
        assert!(state
            .key_staging
            .as_mut_slice()
            .unwrap()
            .iter()
            .all(|&word| word == 0));
    }

    #[test]
    fn without_a_driver_open_says_why() {
        match CudaDevice::open(0) {
            Ok(device) => {
                let key = KeyMaterial::new(Algorithm::Aes128, &[0; 16]).unwrap();
                device
                    .process(&key, &GpuOperation::EcbEncrypt, &mut [0; 32])
                    .unwrap();
            }
            Err(error) => assert!(
                matches!(
                    error,
                    GpuError::NoCudaDriver { .. }
                        | GpuError::NoCudaDevice { .. }
                        | GpuError::NoNvrtc { .. }
                ),
                "{error}"
            ),
        }
    }
}
