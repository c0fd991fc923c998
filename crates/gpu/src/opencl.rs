//! The OpenCL backend, on the `opencl3` crate with libOpenCL loaded at run time.
//!
//! A device is opened once: its kernels are compiled (or loaded from the binary cache),
//! self-tested, and given reusable buffers. [`OpenClDevice::process`] then copies host data
//! in, runs a kernel and copies the result back, slab by slab: slab `k` goes to queue
//! `k % 2` with that queue's own input and output buffers, so on a device with separate
//! copy engines the copies of one slab overlap the kernel of the other (PoCL runs them one
//! after the other, which is still correct).
//!
//! Zero-copy: a [`MappedBuffer`] ([`OpenClDevice::mapped_buffer`]) is host-visible memory
//! that the kernels read and write in place of device buffers, as on GPUs that share the
//! host's memory ([`OpenClDevice::host_unified_memory`]);
//! [`OpenClDevice::process_zero_copy`] copies ordinary data through one.

mod devices;
mod program;
mod zero_copy;

use std::path::PathBuf;
use std::ptr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::{cl_mem, Buffer, ClMem, CL_MEM_READ_ONLY, CL_MEM_WRITE_ONLY};
use opencl3::program::Program;
use opencl3::types::{cl_device_id, CL_BLOCKING, CL_NON_BLOCKING};

pub use zero_copy::MappedBuffer;

use crate::error::ApiResultExt;
use crate::ghash::{self, SegmentPlan};
use crate::host::{
    grown_capacity, launch_shape, slab_size, validate_geometry, KEY_TABLE_WORDS, ROUND_KEY_WORDS,
};
use crate::kernel_source::{self, CipherFamily, KernelOperation};
use crate::operation::{ModeArguments, SlabChain};
use crate::{
    program_cache, self_test, tuning, DeviceInfo, DeviceKind, GpuApi, GpuDevice, GpuError,
    GpuOperation, KernelCache, KeyMaterial, LaunchGeometry, OpenOptions, ProgramOrigin,
    TableCopies, TuneTable,
};

/// One compiled kernel and the largest work-group the device allows for it (which depends
/// on the kernel's local memory and registers).
struct LoadedKernel {
    family: CipherFamily,
    operation: KernelOperation,
    /// The segmented variant of the CTR kernel ([`kernel_source::ctr_segments_kernel_name`]).
    segmented: bool,
    kernel: Kernel,
    max_group_size: usize,
}

/// The GHASH kernel, which belongs to no cipher family.
struct GhashKernel {
    kernel: Kernel,
    max_group_size: usize,
}

/// A queue's pair of slab buffers, grown on demand and kept for later calls.
#[derive(Default)]
struct Slot {
    input: Option<Buffer<u8>>,
    output: Option<Buffer<u8>>,
    capacity: usize,
    /// Segmented CTR: the slab's counter blocks.
    counters: Option<Buffer<u8>>,
    counter_capacity: usize,
}

impl Slot {
    /// Makes the counter buffer hold at least `bytes`.
    fn reserve_counters(&mut self, context: &Context, bytes: usize) -> Result<(), GpuError> {
        if self.counter_capacity >= bytes && self.counters.is_some() {
            return Ok(());
        }
        let capacity = bytes.next_power_of_two();
        self.counters = None;
        self.counter_capacity = 0;
        // SAFETY: no host pointer and no host-pointer flags: the driver allocates the memory.
        let counters =
            unsafe { Buffer::<u8>::create(context, CL_MEM_READ_ONLY, capacity, ptr::null_mut()) }
                .or_api("clCreateBuffer")?;
        self.counters = Some(counters);
        self.counter_capacity = capacity;
        Ok(())
    }

    /// Makes both buffers hold at least `bytes`, grown as [`grown_capacity`] says up to
    /// `limit`, the slab size.
    fn reserve(&mut self, context: &Context, bytes: usize, limit: usize) -> Result<(), GpuError> {
        if self.capacity >= bytes && self.input.is_some() && self.output.is_some() {
            return Ok(());
        }
        let capacity = grown_capacity(bytes, limit);
        // Dropping the old buffers first lets the device reuse their memory. A buffer still
        // used by an enqueued command is only freed once that command completes.
        self.input = None;
        self.output = None;
        self.capacity = 0;
        // SAFETY: no host pointer is passed and no flag asks for one, so the driver
        // allocates device memory of `capacity` bytes that only it accesses.
        let input =
            unsafe { Buffer::<u8>::create(context, CL_MEM_READ_ONLY, capacity, ptr::null_mut()) }
                .or_api("clCreateBuffer")?;
        // SAFETY: as above.
        let output =
            unsafe { Buffer::<u8>::create(context, CL_MEM_WRITE_ONLY, capacity, ptr::null_mut()) }
                .or_api("clCreateBuffer")?;
        self.input = Some(input);
        self.output = Some(output);
        self.capacity = capacity;
        Ok(())
    }
}

/// What a call changes: kernels (their arguments are set per launch), buffers, geometry.
struct DeviceState {
    geometry: LaunchGeometry,
    /// Shapes per cipher, operation and size from `parcrypt tune`, ahead of `geometry`.
    tuning: Option<Arc<TuneTable>>,
    kernels: Vec<LoadedKernel>,
    ghash: GhashKernel,
    slots: [Slot; 2],
    round_keys: Buffer<u32>,
    key_tables: Buffer<u32>,
    aes_tables: Buffer<u32>,
    /// The mapped host buffer [`OpenClDevice::process_zero_copy`] stages through, kept for
    /// later calls.
    zero_copy: Option<zero_copy::HostMapped>,
}

/// An opened, self-tested OpenCL device.
///
/// `process` may be called from several threads; calls on one device run one at a time.
pub struct OpenClDevice {
    info: DeviceInfo,
    table_copies: TableCopies,
    origin: ProgramOrigin,
    slab_bytes: usize,
    state: Mutex<DeviceState>,
    queues: [CommandQueue; 2],
    /// Whether the device shares the host's memory (`CL_DEVICE_HOST_UNIFIED_MEMORY`).
    host_unified_memory: bool,
    device: Device,
    // Kept alive for the kernels made from it.
    _program: Program,
    context: Context,
}

impl std::fmt::Debug for OpenClDevice {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("OpenClDevice")
            .field("info", &self.info)
            .field("table_copies", &self.table_copies)
            .field("origin", &self.origin)
            .field("slab_bytes", &self.slab_bytes)
            .finish_non_exhaustive()
    }
}

/// Sets kernel arguments in order, as `clSetKernelArg` errors rather than panics.
struct ArgumentList<'a> {
    kernel: &'a Kernel,
    next: u32,
}

impl ArgumentList<'_> {
    /// # Safety
    /// `T` must have the size and layout of the kernel's parameter at this position:
    /// `cl_mem` for pointers, `u32` / `u64` for `u32` / `u64`, `[u32; 2]` / `[u32; 4]` for `u32x2` / `u32x4`.
    unsafe fn push<T>(&mut self, value: &T) -> Result<(), GpuError> {
        // SAFETY: the caller guarantees the type matches the parameter.
        unsafe { self.kernel.set_arg(self.next, value) }.or_api("clSetKernelArg")?;
        self.next += 1;
        Ok(())
    }
}

/// A cipher kernel and what every launch of it in one call passes besides the data: the
/// launch shape and the key's buffers. Made by [`DeviceState::cipher_launch`], so it borrows
/// the state the caller has locked.
struct CipherLaunch<'a> {
    loaded: &'a LoadedKernel,
    geometry: LaunchGeometry,
    key: &'a KeyMaterial,
    round_keys: &'a Buffer<u32>,
    key_tables: &'a Buffer<u32>,
    aes_tables: &'a Buffer<u32>,
}

impl DeviceState {
    /// The launch of `operation` under `key` for a call over `bytes` bytes (the shape the
    /// tune table or the launch geometry gives), with the buffers a call may use.
    fn cipher_launch<'a>(
        &'a mut self,
        key: &'a KeyMaterial,
        operation: &GpuOperation,
        bytes: usize,
    ) -> (
        CipherLaunch<'a>,
        &'a mut [Slot; 2],
        &'a mut Option<zero_copy::HostMapped>,
    ) {
        let DeviceState {
            geometry,
            tuning,
            kernels,
            slots,
            ghash: _,
            round_keys,
            key_tables,
            aes_tables,
            zero_copy,
        } = self;
        let family = CipherFamily::of(key.algorithm());
        let kernel_operation = operation.kernel_operation();
        let geometry = tuning::choose_geometry(
            *geometry,
            tuning.as_deref(),
            key.algorithm(),
            kernel_operation,
            bytes,
        );
        let segmented = operation.segmented();
        let loaded = kernels
            .iter()
            .find(|loaded| {
                loaded.family == family
                    && loaded.operation == kernel_operation
                    && loaded.segmented == segmented
            })
            .expect("a kernel exists for every family and operation");
        let launch = CipherLaunch {
            loaded,
            geometry,
            key,
            round_keys,
            key_tables,
            aes_tables,
        };
        (launch, slots, zero_copy)
    }
}

impl CipherLaunch<'_> {
    /// Sets the kernel's arguments and enqueues it on `queue` over `blocks` blocks from
    /// `input` to `output`; `mode_arguments` are those of the launch's first block.
    ///
    /// # Safety
    /// `input` and `output` must be two different buffers of the device's context, each
    /// holding at least `blocks` blocks of the key's cipher, that stay alive, and that the
    /// host neither writes (`input`) nor reads or writes (`output`) until the launch has
    /// completed.
    unsafe fn enqueue(
        &self,
        queue: &CommandQueue,
        input: cl_mem,
        output: cl_mem,
        blocks: usize,
        mode_arguments: ModeArguments,
    ) -> Result<Event, GpuError> {
        // SAFETY: the caller's guarantees, and no counter buffer (segmented CTR refuses).
        unsafe { self.enqueue_with(queue, input, output, blocks, mode_arguments, None) }
    }

    /// [`CipherLaunch::enqueue`], with the buffer of the launch's counter blocks that
    /// segmented CTR reads (`ModeArguments::Segments`; without one it is refused).
    ///
    /// # Safety
    /// As for `enqueue`; and `counters`, when given, must be a buffer of the device's
    /// context holding the counter blocks of every segment of the launch, that stays alive
    /// and that the host does not write until the launch has completed.
    unsafe fn enqueue_with(
        &self,
        queue: &CommandQueue,
        input: cl_mem,
        output: cl_mem,
        blocks: usize,
        mode_arguments: ModeArguments,
        counters: Option<cl_mem>,
    ) -> Result<Event, GpuError> {
        let loaded = self.loaded;
        if loaded.segmented != matches!(mode_arguments, ModeArguments::Segments { .. }) {
            return Err(GpuError::InvalidInput(
                "segment arguments go with a segmented CTR kernel and only with one".into(),
            ));
        }
        let block_size = self.key.algorithm().block_size();
        let mut arguments = ArgumentList {
            kernel: &loaded.kernel,
            next: 0,
        };
        let block_count = blocks as u32;
        // SAFETY: the order and types follow the kernel signatures in parcrypt.cl: input,
        // output, block count, round keys, then per family the round count and table
        // buffer (AES) or the S-box buffer (Blowfish), then the mode's counter and rule
        // or previous block as u32x4 (16-byte blocks) or u32x2 (8-byte blocks), or for the
        // *_ctr_segments kernels the counter buffer, blocks per segment and rule.
        unsafe {
            arguments.push(&input)?;
            arguments.push(&output)?;
            arguments.push(&block_count)?;
            arguments.push(&self.round_keys.get())?;
            match loaded.family {
                CipherFamily::Aes => {
                    arguments.push(&self.key.rounds())?;
                    arguments.push(&self.aes_tables.get())?;
                }
                CipherFamily::Blowfish => arguments.push(&self.key_tables.get())?,
                CipherFamily::Rc6 => {}
            }
            match mode_arguments {
                ModeArguments::None => {}
                ModeArguments::Counter { words, rule } => {
                    push_block_words(&mut arguments, words, block_size)?;
                    arguments.push(&rule)?;
                }
                ModeArguments::Previous { words } => {
                    push_block_words(&mut arguments, words, block_size)?;
                }
                ModeArguments::Segments {
                    blocks_per_segment,
                    rule,
                    ..
                } => {
                    let Some(counters) = counters else {
                        return Err(GpuError::InvalidInput(
                            "segmented CTR runs through OpenClDevice::process (and \
                             process_timed) only, not through mapped memory"
                                .into(),
                        ));
                    };
                    arguments.push(&counters)?;
                    arguments.push(&blocks_per_segment)?;
                    arguments.push(&rule)?;
                }
            }
        }

        let (group_size, groups) = launch_shape(self.geometry, blocks, loaded.max_group_size);
        let global_size = groups * group_size;
        // SAFETY: every argument was set above; the sizes are one-dimensional, with the
        // global size a multiple of the group size as OpenCL 1.2 requires. The caller
        // guarantees the data buffers; the key buffers hold what the kernels read.
        unsafe {
            queue.enqueue_nd_range_kernel(
                loaded.kernel.get(),
                1,
                ptr::null(),
                [global_size].as_ptr(),
                [group_size].as_ptr(),
                &[],
            )
        }
        .or_api("clEnqueueNDRangeKernel")
    }
}

/// An in-order queue with profiling enabled, so that [`OpenClDevice::process_timed`] can read
/// its kernels' start and end times. Profiling only records timestamps; it changes no
/// result, and its cost is not measurable next to a slab's copies and kernel.
fn create_queue(context: &Context, device_id: cl_device_id) -> Result<CommandQueue, GpuError> {
    let properties = CL_QUEUE_PROFILING_ENABLE;
    // SAFETY: `device_id` is the device `context` was created for.
    let queue = unsafe { CommandQueue::create_with_properties(context, device_id, properties, 0) };
    match queue {
        Ok(queue) => Ok(queue),
        // OpenCL 1.2 drivers lack clCreateCommandQueueWithProperties.
        // SAFETY: as above.
        Err(_) => unsafe { CommandQueue::create(context, device_id, properties) }
            .or_api("clCreateCommandQueue"),
    }
}

/// A read-only device buffer of `words` u32.
fn word_buffer(context: &Context, words: usize) -> Result<Buffer<u32>, GpuError> {
    // SAFETY: no host pointer, no host-pointer flags: the driver allocates the memory.
    unsafe { Buffer::<u32>::create(context, CL_MEM_READ_ONLY, words, ptr::null_mut()) }
        .or_api("clCreateBuffer")
}

/// Copies `words` into `buffer` and returns once the device has them: a finished command,
/// which is what OpenCL requires before commands on the other queue may read the buffer.
fn write_words(
    queue: &CommandQueue,
    buffer: &mut Buffer<u32>,
    words: &[u32],
) -> Result<(), GpuError> {
    // SAFETY: the write is blocking, so `words` is read before this returns; the buffer was
    // created with at least `words.len()` words (callers pass at most its size).
    unsafe { queue.enqueue_write_buffer(buffer, CL_BLOCKING, 0, words, &[]) }
        .or_api("clEnqueueWriteBuffer")?;
    Ok(())
}

impl OpenClDevice {
    /// Every OpenCL device of every platform, for `parcrypt devices`.
    pub fn list() -> Result<Vec<DeviceInfo>, GpuError> {
        Ok(devices::find_all()?
            .into_iter()
            .map(|found| found.info)
            .collect())
    }

    /// Opens device `index` of [`OpenClDevice::list`] with the default options.
    pub fn open(index: usize) -> Result<Self, GpuError> {
        Self::open_with(index, &OpenOptions::default())
    }

    /// Opens device `index`: compiles (or loads) the kernels, runs the self-test and refuses
    /// the device if any kernel gives a wrong answer.
    pub fn open_with(index: usize, options: &OpenOptions) -> Result<Self, GpuError> {
        let found = devices::find_all()?;
        let count = found.len();
        let device = found
            .into_iter()
            .nth(index)
            .ok_or(GpuError::NoDevice { index, count })?;
        let info = &device.info;
        if !info.little_endian {
            return Err(GpuError::BigEndianDevice {
                device: info.name.clone(),
            });
        }
        let table_copies = options
            .table_copies
            .unwrap_or_else(|| TableCopies::for_device(info.kind, info.local_memory_bytes));
        table_copies.validate()?;
        let geometry = options
            .geometry
            .unwrap_or_else(|| LaunchGeometry::default_for(info.kind));
        validate_geometry(geometry)?;

        let source = kernel_source::opencl_source();
        let build_options = build_options(table_copies);
        let cache_entry = cache_entry(&options.kernel_cache, &device, &build_options, &source);

        let context = Context::from_device(&Device::new(device.id)).or_api("clCreateContext")?;
        let (program, origin) = program::load_or_compile(
            &context,
            device.id,
            &info.name,
            &source,
            &build_options,
            cache_entry.as_deref(),
        )?;
        let slab_bytes = slab_size(options.slab_bytes, info.max_allocation_bytes);
        let opened = Self::assemble(
            &device,
            context,
            program,
            origin,
            table_copies,
            geometry,
            slab_bytes,
        )?;
        self_test::accept_or_rebuild(opened, origin, Self::self_test, || {
            let context =
                Context::from_device(&Device::new(device.id)).or_api("clCreateContext")?;
            let program = program::compile_and_store(
                &context,
                device.id,
                &info.name,
                &source,
                &build_options,
                cache_entry.as_deref(),
            )?;
            Self::assemble(
                &device,
                context,
                program,
                ProgramOrigin::Compiled,
                table_copies,
                geometry,
                slab_bytes,
            )
        })
    }

    /// Compiles the kernels for device `index` with `table_copies`, creating every kernel,
    /// without the cache or a self-test: the check that each `-D` variant builds.
    pub fn compile_check(index: usize, table_copies: TableCopies) -> Result<(), GpuError> {
        table_copies.validate()?;
        let found = devices::find_all()?;
        let count = found.len();
        let device = found
            .into_iter()
            .nth(index)
            .ok_or(GpuError::NoDevice { index, count })?;
        let context = Context::from_device(&Device::new(device.id)).or_api("clCreateContext")?;
        let program = program::compile(
            &context,
            device.id,
            &device.info.name,
            &kernel_source::opencl_source(),
            &build_options(table_copies),
        )?;
        for family in CipherFamily::ALL {
            for function in kernel_source::family_kernels(family) {
                Kernel::create(&program, function.name).or_api("clCreateKernel")?;
            }
        }
        Kernel::create(&program, ghash::KERNEL_NAME).or_api("clCreateKernel")?;
        Ok(())
    }

    /// Creates queues, kernels and buffers around a built program.
    fn assemble(
        device: &devices::FoundDevice,
        context: Context,
        program: Program,
        origin: ProgramOrigin,
        table_copies: TableCopies,
        geometry: LaunchGeometry,
        slab_bytes: usize,
    ) -> Result<Self, GpuError> {
        let queues = [
            create_queue(&context, device.id)?,
            create_queue(&context, device.id)?,
        ];
        let mut kernels = Vec::new();
        for family in CipherFamily::ALL {
            for function in kernel_source::family_kernels(family) {
                let kernel = Kernel::create(&program, function.name).or_api("clCreateKernel")?;
                let max_group_size = kernel
                    .get_work_group_size(device.id)
                    .or_api("clGetKernelWorkGroupInfo")?;
                kernels.push(LoadedKernel {
                    family,
                    operation: function.operation,
                    segmented: function.segmented,
                    kernel,
                    max_group_size,
                });
            }
        }
        let ghash_kernel = Kernel::create(&program, ghash::KERNEL_NAME).or_api("clCreateKernel")?;
        let ghash = GhashKernel {
            max_group_size: ghash_kernel
                .get_work_group_size(device.id)
                .or_api("clGetKernelWorkGroupInfo")?,
            kernel: ghash_kernel,
        };
        let mut aes_tables = word_buffer(&context, 576)?;
        write_words(
            &queues[0],
            &mut aes_tables,
            &kernel_source::aes_table_words(),
        )?;
        let state = DeviceState {
            geometry,
            tuning: None,
            kernels,
            ghash,
            slots: Default::default(),
            round_keys: word_buffer(&context, ROUND_KEY_WORDS)?,
            key_tables: word_buffer(&context, KEY_TABLE_WORDS)?,
            aes_tables,
            zero_copy: None,
        };
        let device_handle = Device::new(device.id);
        Ok(OpenClDevice {
            info: device.info.clone(),
            table_copies,
            origin,
            slab_bytes,
            state: Mutex::new(state),
            queues,
            host_unified_memory: zero_copy::reports_unified_memory(&device_handle),
            device: device_handle,
            _program: program,
            context,
        })
    }

    fn self_test(&self) -> Result<(), GpuError> {
        self_test::run(&self.info.name, |key, operation, data| {
            self.process(key, operation, data)
        })
    }

    /// The device's name as its driver reports it.
    pub fn name(&self) -> String {
        self.info.name.trim().to_string()
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The table copies the kernels were compiled with (see the top of `parcrypt.cl` for
    /// what fewer than 32 means for timing).
    pub fn table_copies(&self) -> TableCopies {
        self.table_copies
    }

    pub fn program_origin(&self) -> ProgramOrigin {
        self.origin
    }

    pub fn slab_bytes(&self) -> usize {
        self.slab_bytes
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

    /// Installs or removes a tune table; see [`crate::GpuDevice::set_tuning`].
    pub fn set_tuning(&self, table: Option<Arc<TuneTable>>) {
        self.lock_state().tuning = table;
    }

    pub fn tuning(&self) -> Option<Arc<TuneTable>> {
        self.lock_state().tuning.clone()
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, DeviceState> {
        // A panic while holding the lock leaves only scratch buffers and kernel arguments
        // behind, all of which every call sets afresh.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `operation` under `key` over `data` in place: copies in, computes, copies out,
    /// and returns when the result is in `data`. ECB and CBC need whole blocks; CTR takes
    /// any length.
    pub fn process(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
    ) -> Result<(), GpuError> {
        operation.validate(key.algorithm(), data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let mut state = self.lock_state();
        let decrypting = operation.kernel_operation().decrypts();
        let uploaded = self.upload_key(&mut state, key, decrypting);
        let ran = uploaded.and_then(|()| self.run_slabs(&mut state, key, operation, data, None));
        self.wait_for_queues();
        let wiped = self.wipe_key(&mut state, key);
        ran.and(wiped)
    }

    /// [`OpenClDevice::process`], timed: returns the kernels' time and the call's wall time
    /// end to end (key upload and wipe included). The kernel time is read from each slab's
    /// launch (`CL_PROFILING_COMMAND_START` to `_END`, the copies excluded) and counts the
    /// time during which at least one kernel ran: kernels of the two queues may overlap (PoCL
    /// runs them side by side), and overlapping time counts once, so the kernel time never
    /// exceeds the span of the call. Both are zero for empty data. On PoCL the "device" is
    /// the CPU, so the kernel time is CPU time.
    pub fn process_timed(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
    ) -> Result<(Duration, Duration), GpuError> {
        operation.validate(key.algorithm(), data.len())?;
        if data.is_empty() {
            return Ok((Duration::ZERO, Duration::ZERO));
        }
        let started = Instant::now();
        let mut state = self.lock_state();
        let decrypting = operation.kernel_operation().decrypts();
        let mut events = Vec::new();
        let uploaded = self.upload_key(&mut state, key, decrypting);
        let ran = uploaded
            .and_then(|()| self.run_slabs(&mut state, key, operation, data, Some(&mut events)));
        self.wait_for_queues();
        let wiped = self.wipe_key(&mut state, key);
        drop(state);
        let end_to_end = started.elapsed();
        ran.and(wiped)?;
        let mut intervals = Vec::with_capacity(events.len());
        for event in &events {
            let start = event
                .profiling_command_start()
                .or_api("clGetEventProfilingInfo")?;
            let end = event
                .profiling_command_end()
                .or_api("clGetEventProfilingInfo")?;
            intervals.push((start, end.max(start)));
        }
        Ok((
            Duration::from_nanos(busy_nanoseconds(intervals)),
            end_to_end,
        ))
    }

    fn upload_key(
        &self,
        state: &mut DeviceState,
        key: &KeyMaterial,
        decrypting: bool,
    ) -> Result<(), GpuError> {
        write_words(
            &self.queues[0],
            &mut state.round_keys,
            key.round_keys(decrypting),
        )?;
        if !key.key_tables().is_empty() {
            write_words(&self.queues[0], &mut state.key_tables, key.key_tables())?;
        }
        Ok(())
    }

    /// Overwrites the device's copy of the key, so that it does not outlive the call.
    fn wipe_key(&self, state: &mut DeviceState, key: &KeyMaterial) -> Result<(), GpuError> {
        write_words(
            &self.queues[0],
            &mut state.round_keys,
            &[0; ROUND_KEY_WORDS],
        )?;
        if !key.key_tables().is_empty() {
            write_words(
                &self.queues[0],
                &mut state.key_tables,
                &[0; KEY_TABLE_WORDS],
            )?;
        }
        Ok(())
    }

    /// Waits until both queues are idle, so that no copy still reads or writes host memory.
    fn wait_for_queues(&self) {
        for queue in &self.queues {
            if queue.finish().is_err() {
                // The device may still be copying into the caller's buffer, and there is no
                // other way to know when it stops; returning would hand that memory back
                // while it can still change under safe code.
                eprintln!("parcrypt: OpenCL queue could not be drained (device lost?); aborting");
                std::process::abort();
            }
        }
    }

    /// Enqueues every slab: write, kernel, read on alternating queues. Returns as soon as
    /// everything is enqueued or an enqueue fails; the caller waits for the queues.
    fn run_slabs(
        &self,
        state: &mut DeviceState,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
        mut kernel_events: Option<&mut Vec<Event>>,
    ) -> Result<(), GpuError> {
        let block_size = key.algorithm().block_size();
        // Segmented CTR: slabs of whole segments.
        let slab_bytes = operation.slab_bytes(self.slab_bytes)?;
        let (launch, slots, _) = state.cipher_launch(key, operation, data.len());
        let mut chain = SlabChain::new(operation);

        for (slab_index, slab) in data.chunks_mut(slab_bytes).enumerate() {
            let queue = &self.queues[slab_index % 2];
            let slot = &mut slots[slab_index % 2];
            let blocks = slab.len().div_ceil(block_size);
            slot.reserve(&self.context, blocks * block_size, self.slab_bytes)?;
            // Taken before this slab's read-back is enqueued: for CBC it copies the slab's
            // last ciphertext block, which the read-back overwrites.
            let mode_arguments = chain.next(slab, block_size);
            let counters = match mode_arguments {
                ModeArguments::Segments { first, count, .. } => {
                    operation.segment_counters(block_size, first, count)
                }
                _ => &[],
            };
            if !counters.is_empty() {
                slot.reserve_counters(&self.context, counters.len())?;
            }
            let (Some(input), Some(output)) = (slot.input.as_mut(), slot.output.as_ref()) else {
                unreachable!("reserve leaves both buffers allocated");
            };

            // SAFETY: non-blocking, so the device reads `slab` after this returns. `slab` is a
            // disjoint piece of `data`, which stays borrowed (and is not touched by this
            // function again) until `process` has waited for both queues; the buffer holds
            // at least `slab.len()` bytes (reserved above).
            unsafe { queue.enqueue_write_buffer(input, CL_NON_BLOCKING, 0, slab, &[]) }
                .or_api("clEnqueueWriteBuffer")?;
            let mut counter_buffer = None;
            if !counters.is_empty() {
                let buffer = slot.counters.as_mut().expect("reserved above");
                // SAFETY: non-blocking; `counters` is borrowed from `operation`, which the
                // caller holds (unchanged) until it has waited for both queues, and the
                // buffer holds at least its length (reserved above).
                unsafe { queue.enqueue_write_buffer(buffer, CL_NON_BLOCKING, 0, counters, &[]) }
                    .or_api("clEnqueueWriteBuffer")?;
                counter_buffer = Some(buffer.get());
            }

            // SAFETY: the slot's two buffers are distinct, hold `blocks` whole blocks
            // (reserved above), live in the device state this call has locked, and the host
            // touches neither until `process` has waited for both queues. The counter
            // buffer, for segmented CTR, holds this slab's segments' counter blocks (written
            // just before, in queue order) and is not written again until both queues are
            // drained: the next slab of this queue writes it after this launch, in order.
            let launched = unsafe {
                launch.enqueue_with(
                    queue,
                    input.get(),
                    output.get(),
                    blocks,
                    mode_arguments,
                    counter_buffer,
                )
            }?;
            if let Some(events) = kernel_events.as_mut() {
                events.push(launched);
            }

            // SAFETY: non-blocking; the device writes `slab` after the kernel, in queue order.
            // As for the write, `slab` stays borrowed and untouched until both queues are
            // drained, and the buffer holds at least `slab.len()` bytes.
            unsafe { queue.enqueue_read_buffer(output, CL_NON_BLOCKING, 0, slab, &[]) }
                .or_api("clEnqueueReadBuffer")?;
            // Starts the device on this slab while the next one is enqueued.
            queue.flush().or_api("clFlush")?;
        }
        Ok(())
    }
}

impl OpenClDevice {
    /// GHASH partial sums of `data`, one per segment of `segment_bytes`; see
    /// [`crate::GpuDevice::ghash_segments`]. Nothing secret stays on the device: the hash key
    /// is a kernel argument, and the data is ciphertext.
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
        // 16 bytes per segment: the (high, low) u64 pair the kernel writes, device order.
        let mut partial_bytes = vec![0u8; 16 * segments];
        let mut state = self.lock_state();
        let ran = self.run_ghash_slabs(&mut state, hash_key, plan, data, &mut partial_bytes);
        self.wait_for_queues();
        ran?;
        Ok(partial_bytes
            .chunks_exact(16)
            .map(|pair| {
                let high = u64::from_le_bytes(pair[..8].try_into().expect("8 bytes"));
                let low = u64::from_le_bytes(pair[8..].try_into().expect("8 bytes"));
                ghash::partial_from_words(high, low)
            })
            .collect())
    }

    /// Enqueues every slab of whole segments: upload (a final partial block zero-padded),
    /// kernel, download of the slab's partial sums, on alternating queues. The caller
    /// waits for the queues.
    fn run_ghash_slabs(
        &self,
        state: &mut DeviceState,
        hash_key: &[u8; 16],
        plan: SegmentPlan,
        data: &[u8],
        partial_bytes: &mut [u8],
    ) -> Result<(), GpuError> {
        let (key_high, key_low) = ghash::prepared_key_words(hash_key);
        let blocks_per_segment = plan.blocks_per_segment();
        let segments_per_slab = plan.slab_bytes / plan.segment_bytes;
        // One thread per segment: the grid-stride loop gives a thread more only when the
        // device allows fewer threads than segments.
        let geometry = LaunchGeometry {
            threads_per_group: state.geometry.threads_per_group,
            blocks_per_thread: 1,
        };
        let slabs = data
            .chunks(plan.slab_bytes)
            .zip(partial_bytes.chunks_mut(16 * segments_per_slab));
        for (slab_index, (slab, slab_partials)) in slabs.enumerate() {
            let queue = &self.queues[slab_index % 2];
            let slot = &mut state.slots[slab_index % 2];
            let blocks = slab.len().div_ceil(16);
            let segments = ghash::segment_count(slab.len(), plan.segment_bytes);
            slot.reserve(&self.context, blocks * 16, self.slab_bytes)?;
            let (Some(input), Some(output)) = (slot.input.as_mut(), slot.output.as_ref()) else {
                unreachable!("reserve leaves both buffers allocated");
            };
            let whole = slab.len() / 16 * 16;
            if whole > 0 {
                // SAFETY: non-blocking, so the device reads `slab` after this returns; `slab`
                // is borrowed from `data` until `ghash_segments` has waited for both queues,
                // and the buffer holds at least `blocks * 16 >= whole` bytes.
                unsafe {
                    queue.enqueue_write_buffer(input, CL_NON_BLOCKING, 0, &slab[..whole], &[])
                }
                .or_api("clEnqueueWriteBuffer")?;
            }
            if whole < slab.len() {
                let mut last = [0u8; 16];
                last[..slab.len() - whole].copy_from_slice(&slab[whole..]);
                // SAFETY: blocking, so `last` is read before it goes out of scope; the block
                // at `whole` is the buffer's last of `blocks`, inside its capacity.
                unsafe { queue.enqueue_write_buffer(input, CL_BLOCKING, whole, &last, &[]) }
                    .or_api("clEnqueueWriteBuffer")?;
            }

            let mut arguments = ArgumentList {
                kernel: &state.ghash.kernel,
                next: 0,
            };
            let block_count = blocks as u32;
            // SAFETY: the order and types follow `ghash_segments` in parcrypt.cl: input and
            // partials buffers, block count and blocks per segment as u32, the key's high
            // and low words as u64. The output buffer holds `blocks * 16` bytes, at least the
            // 16 bytes per segment the kernel writes (every segment has a block).
            unsafe {
                arguments.push(&input.get())?;
                arguments.push(&output.get())?;
                arguments.push(&block_count)?;
                arguments.push(&blocks_per_segment)?;
                arguments.push(&key_high)?;
                arguments.push(&key_low)?;
            }
            let (group_size, groups) = launch_shape(geometry, segments, state.ghash.max_group_size);
            // SAFETY: every argument was set above; one-dimensional sizes, the global size a
            // multiple of the group size.
            unsafe {
                queue.enqueue_nd_range_kernel(
                    state.ghash.kernel.get(),
                    1,
                    ptr::null(),
                    [groups * group_size].as_ptr(),
                    [group_size].as_ptr(),
                    &[],
                )
            }
            .or_api("clEnqueueNDRangeKernel")?;

            let slab_partials = &mut slab_partials[..16 * segments];
            // SAFETY: non-blocking; the device writes `slab_partials` after the kernel, in
            // queue order. It is a disjoint piece of the caller's vector, untouched until
            // both queues are drained, and the buffer holds more than its length.
            unsafe { queue.enqueue_read_buffer(output, CL_NON_BLOCKING, 0, slab_partials, &[]) }
                .or_api("clEnqueueReadBuffer")?;
            queue.flush().or_api("clFlush")?;
        }
        Ok(())
    }
}

/// The length of the union of `[start, end)` intervals, in the same unit.
fn busy_nanoseconds(mut intervals: Vec<(u64, u64)>) -> u64 {
    intervals.sort_unstable();
    let mut total = 0u64;
    let mut current: Option<(u64, u64)> = None;
    for (start, end) in intervals {
        match current {
            Some((_, current_end)) if start <= current_end => {
                if let Some(open) = current.as_mut() {
                    open.1 = open.1.max(end);
                }
            }
            _ => {
                if let Some((open_start, open_end)) = current {
                    total += open_end - open_start;
                }
                current = Some((start, end));
            }
        }
    }
    if let Some((open_start, open_end)) = current {
        total += open_end - open_start;
    }
    total
}

/// Pushes a counter or previous block as `u32x4` or, for 8-byte blocks, `u32x2`.
///
/// # Safety
/// The kernel's next parameter must be `u32x4` for 16-byte blocks and `u32x2` for 8-byte.
unsafe fn push_block_words(
    arguments: &mut ArgumentList<'_>,
    words: [u32; 4],
    block_size: usize,
) -> Result<(), GpuError> {
    // SAFETY: the caller guarantees the parameter type that matches `block_size`.
    unsafe {
        if block_size == 16 {
            arguments.push(&words)
        } else {
            arguments.push(&[words[0], words[1]])
        }
    }
}

/// The cache file for this device, driver, options and source; `None` when caching is off
/// or there is no cache directory.
fn cache_entry(
    cache: &KernelCache,
    device: &devices::FoundDevice,
    build_options: &str,
    source: &str,
) -> Option<PathBuf> {
    let directory = program_cache::directory(cache)?;
    let info = &device.info;
    Some(program_cache::entry_path(
        &directory,
        &[
            &info.platform,
            &device.platform_version,
            &info.name,
            &info.version,
            &info.driver_version,
            build_options,
            source,
        ],
    ))
}

fn build_options(table_copies: TableCopies) -> String {
    format!("-cl-std=CL1.2 {}", table_copies.compiler_options())
}

impl GpuDevice for OpenClDevice {
    fn api(&self) -> GpuApi {
        GpuApi::Opencl
    }

    fn identity(&self) -> String {
        tuning::device_identity(GpuApi::Opencl.name(), &self.info().to_string())
    }

    fn kind(&self) -> DeviceKind {
        self.info().kind
    }

    fn launch_geometry(&self) -> LaunchGeometry {
        OpenClDevice::launch_geometry(self)
    }

    fn set_launch_geometry(&self, geometry: LaunchGeometry) -> Result<(), GpuError> {
        OpenClDevice::set_launch_geometry(self, geometry)
    }

    fn set_tuning(&self, table: Option<Arc<TuneTable>>) {
        OpenClDevice::set_tuning(self, table)
    }

    fn tuning(&self) -> Option<Arc<TuneTable>> {
        OpenClDevice::tuning(self)
    }

    fn kernel_times(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
        runs: usize,
    ) -> Result<Vec<Duration>, GpuError> {
        (0..runs)
            .map(|_| {
                OpenClDevice::process_timed(self, key, operation, data).map(|(kernel, _)| kernel)
            })
            .collect()
    }

    fn description(&self) -> String {
        self.info().to_string()
    }

    fn process(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
    ) -> Result<(), GpuError> {
        OpenClDevice::process(self, key, operation, data)
    }

    fn ghash_segments(
        &self,
        hash_key: &[u8; 16],
        data: &[u8],
        segment_bytes: usize,
    ) -> Result<Vec<u128>, GpuError> {
        OpenClDevice::ghash_segments(self, hash_key, data, segment_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_kernel_intervals_count_once() {
        assert_eq!(busy_nanoseconds(Vec::new()), 0);
        assert_eq!(busy_nanoseconds(vec![(10, 20)]), 10);
        assert_eq!(busy_nanoseconds(vec![(15, 30), (10, 20), (40, 45)]), 25);
        assert_eq!(busy_nanoseconds(vec![(10, 20), (20, 25), (12, 14)]), 15);
    }

    #[test]
    fn device_is_shareable_between_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<OpenClDevice>();
    }

    /// The first device, or `None` after saying why (a failure under CI, which has PoCL).
    fn first_device() -> Option<devices::FoundDevice> {
        match devices::find_all() {
            Ok(found) if !found.is_empty() => found.into_iter().next(),
            outcome => {
                let reason = outcome.map(|found| found.len());
                assert!(
                    std::env::var_os("CI").is_none(),
                    "CI needs an OpenCL device: {reason:?}"
                );
                println!("SKIPPED: no OpenCL device (install pocl-opencl-icd)");
                None
            }
        }
    }

    #[test]
    fn a_build_failure_carries_the_whole_log() {
        let Some(device) = first_device() else { return };
        let context = Context::from_device(&Device::new(device.id)).unwrap();
        // 12 copies get past no host check here, so the kernels' own #error must stop them.
        let options = "-D BLOWFISH_TABLE_COPIES=12";
        let Err(error) = program::compile(
            &context,
            device.id,
            &device.info.name,
            &kernel_source::opencl_source(),
            options,
        ) else {
            panic!("12 table copies must not compile");
        };
        let message = error.to_string();
        assert!(matches!(error, GpuError::Build { .. }), "{message}");
        assert!(message.contains(options), "{message}");
        assert!(
            message.contains("BLOWFISH_TABLE_COPIES must be 1, 2, 4, 8, 16 or 32"),
            "{message}"
        );
        // The #line directive makes the compiler name the kernel file, not the header.
        assert!(message.contains("parcrypt.cl"), "{message}");
    }

    #[test]
    fn a_cached_binary_that_fails_the_self_test_is_replaced() {
        let Some(device) = first_device() else { return };
        let directory = tempfile::tempdir().unwrap();
        let cache = KernelCache::Directory(directory.path().to_path_buf());
        let copies = TableCopies::for_device(device.info.kind, device.info.local_memory_bytes);
        let options = build_options(copies);
        let source = kernel_source::opencl_source();
        // A binary of subtly wrong kernels stored under the name of the real ones.
        let wrong_source = program_cache::stale::wrong_source(&source);
        let context = Context::from_device(&Device::new(device.id)).unwrap();
        let path = cache_entry(&cache, &device, &options, &source).unwrap();
        program::compile_and_store(
            &context,
            device.id,
            "test",
            &wrong_source,
            &options,
            Some(&path),
        )
        .unwrap();
        let stale = std::fs::read(&path).unwrap();
        program_cache::stale::assert_replaced_on_open(&path, &stale, copies, cache, |options| {
            OpenClDevice::open_with(0, options).map(|opened| opened.program_origin())
        });
    }
}
