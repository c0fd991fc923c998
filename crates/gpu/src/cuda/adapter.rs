//! The shared host's calls ([`Api`]) in CUDA, through `cudarc`: [`STREAMS`] streams whose
//! slabs are staged through pinned buffers (only pinned memory copies asynchronously), the
//! key uploaded from pinned memory on stream 0 and fenced for the others with an event, and
//! waits that retry once (cudarc reports a stored bookkeeping error first) and return an
//! error when they fail, unless the driver says copies into host memory are still queued and
//! stay so (see [`Cuda::wait`]).
//!
//! With three streams the upload of slab `k + 3` never waits for anything but the download
//! of slab `k`, which has long finished when kernels are faster than the bus.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::sys::{CUdeviceptr, CU_MEMHOSTALLOC_PORTABLE};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr,
    DevicePtrMut, DeviceRepr, LaunchConfig, PinnedHostSlice, PushKernelArg, ValidAsZeroBits,
};
use zeroize::Zeroize;

use super::devices::{CudaDeviceInfo, CudaResultExt};
use super::KernelVariant;
use crate::host::arguments::{Argument, MOST_ARGUMENTS};
use crate::host::stream_slot::{SlotBuffer, StreamKeys, StreamSlot};
use crate::host::{Api, GpuHost, Launch, Outcome, Staging, TimingJob, ROUND_KEY_WORDS};
use crate::{GpuApi, GpuError, KeyMaterial};

/// Streams, each with its own slab buffers, that consecutive slabs rotate over.
pub const STREAMS: usize = 3;

/// A CUDA device's handles: what the shared host drives through [`Api`].
pub struct Cuda {
    pub(crate) info: CudaDeviceInfo,
    pub(crate) variant: KernelVariant,
    pub(crate) architecture: String,
    pub(crate) streams: Vec<Arc<CudaStream>>,
    // Kept alive for the functions loaded from it.
    pub(crate) _module: Arc<CudaModule>,
    pub(crate) context: Arc<CudaContext>,
}

/// A kernel function and the dynamic shared memory to request at launch (0 in a static
/// variant and for GHASH).
pub struct CudaKernel {
    pub(crate) function: CudaFunction,
    pub(crate) shared_bytes: u32,
}

/// A stream's slab buffers, grown on demand and kept for later calls.
pub type Slot = StreamSlot<CudaSlice<u8>, PinnedHostSlice<u8>>;

impl SlotBuffer for CudaSlice<u8> {
    fn byte_len(&self) -> usize {
        self.len()
    }
}

impl SlotBuffer for PinnedHostSlice<u8> {
    fn byte_len(&self) -> usize {
        self.len()
    }
}

/// The device's key buffers, the fixed AES tables, and what uploading the key needs.
pub type Keys = StreamKeys<CudaSlice<u32>, PinnedHostSlice<u32>, CudaEvent>;

/// What only the device-buffer path keeps between calls.
pub struct Extra {
    /// Device-buffer CBC decryption: the ciphertext the kernel reads while it writes
    /// plaintext over the caller's buffer.
    pub(crate) cbc_scratch: Option<CudaSlice<u8>>,
    /// Device-buffer CTR: one whole block for a final partial block.
    pub(crate) tail_block: CudaSlice<u8>,
}

/// The kernels' `u32x4` (vendor_cuda.h): a 16-byte aligned by-value parameter.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub(crate) struct Words4(pub [u32; 4]);
/// The kernels' `u32x2`: an 8-byte aligned by-value parameter.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub(crate) struct Words2(pub [u32; 2]);

// SAFETY: plain words with exactly the size and alignment of the CUDA structs they stand
// for; the driver copies the parameter's size in bytes from them.
unsafe impl DeviceRepr for Words4 {}
// SAFETY: as above.
unsafe impl DeviceRepr for Words2 {}

/// One argument's value as the driver copies it.
#[derive(Clone, Copy)]
enum Value {
    Pointer(CUdeviceptr),
    U32(u32),
    U64(u64),
    Words4(Words4),
    Words2(Words2),
}

/// Launches `launch` on `stream`, its buffers being `input`, `output` and `counters`
/// (device addresses) and the key's buffers.
///
/// # Safety
/// The launch's arguments must be its kernel's parameter list; `input`, `output` and
/// `counters` (where the list names it) must address live allocations of this context that
/// hold what the launch reads and writes and outlive it (their owners stay borrowed until
/// the streams are synchronised); the key buffers must hold the key the launch is for.
pub(crate) unsafe fn launch_on(
    stream: &CudaStream,
    launch: &Launch<'_, Cuda>,
    (input, output, counters): (CUdeviceptr, CUdeviceptr, Option<CUdeviceptr>),
) -> Outcome {
    let (kernel, keys, arguments, shape) =
        (launch.kernel, launch.keys, launch.arguments, launch.shape);
    let (round_keys, _round_keys_record) = keys.round_keys.device_ptr(stream);
    let (key_tables, _key_tables_record) = keys.key_tables.device_ptr(stream);
    let (aes_tables, _aes_tables_record) = keys.aes_tables.device_ptr(stream);
    // On the stack: a launch allocates nothing.
    let mut values = [Value::U32(0); MOST_ARGUMENTS];
    let count = arguments.as_slice().len();
    for (value, argument) in values.iter_mut().zip(arguments.as_slice()) {
        *value = match *argument {
            Argument::Input => Value::Pointer(input),
            Argument::Output => Value::Pointer(output),
            Argument::Counters | Argument::Sums => Value::Pointer(counters.ok_or_else(|| {
                GpuError::InvalidInput(
                    "segmented CTR and GCM's sums need the slot's side buffer".into(),
                )
            })?),
            Argument::RoundKeys => Value::Pointer(round_keys),
            Argument::KeyTables => Value::Pointer(key_tables),
            Argument::AesTables => Value::Pointer(aes_tables),
            Argument::U32(value) => Value::U32(value),
            Argument::U64(value) => Value::U64(value),
            Argument::Words4(words) => Value::Words4(Words4(words)),
            Argument::Words2(words) => Value::Words2(Words2(words)),
        };
    }
    let config = LaunchConfig {
        grid_dim: (
            u32::try_from(shape.groups)
                .unwrap_or(u32::MAX)
                .min(i32::MAX as u32),
            1,
            1,
        ),
        block_dim: (shape.group_size as u32, 1, 1),
        shared_mem_bytes: kernel.shared_bytes,
    };
    let mut builder = stream.launch_builder(&kernel.function);
    for value in &values[..count] {
        match value {
            Value::Pointer(pointer) => builder.arg(pointer),
            Value::U32(value) => builder.arg(value),
            Value::U64(value) => builder.arg(value),
            Value::Words4(words) => builder.arg(words),
            Value::Words2(words) => builder.arg(words),
        };
    }
    // SAFETY: the arguments follow the kernel's signature in parcrypt.cl in order and type
    // (the caller's guarantee: the shared host's list for this kernel), with pointers as
    // device addresses, u32x4 / u32x2 as the aligned structs above. Every pointer is into a
    // live allocation of this context that outlives the launch (the caller's guarantee for
    // the data, counter and key buffers; the key buffers' records are held until after the
    // launch). The grid-stride loops never index past the block count, whatever the grid.
    // The dynamic shared memory is what the variant's tables take, and the kernel was
    // allowed that much at load time.
    unsafe { builder.launch(config) }.or_cuda("cuLaunchKernel")?;
    Ok(())
}

/// Page-locked host memory, zeroed. Not write-combined (cudarc's `alloc_pinned` default):
/// the host reads results back out of it, and reads of write-combined memory are uncached.
/// Portable: pinned for every context, not only the one that allocated it.
pub(crate) fn alloc_pinned_zeroed<T: DeviceRepr + ValidAsZeroBits>(
    context: &Arc<CudaContext>,
    length: usize,
) -> Result<PinnedHostSlice<T>, GpuError> {
    alloc_pinned_zeroed_with_flags(context, length, CU_MEMHOSTALLOC_PORTABLE)
}

/// [`alloc_pinned_zeroed`] with the `cuMemHostAlloc` flags given.
pub(crate) fn alloc_pinned_zeroed_with_flags<T: DeviceRepr + ValidAsZeroBits>(
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

/// Below this, one thread copies a staged slab: threads cost more than they save.
pub(crate) const PARALLEL_COPY_BYTES: usize = 4 << 20;

/// Copies `source` into `destination` (same length) on several threads. Staging ordinary
/// memory through pinned buffers costs two host copies per byte, and one thread copies far
/// slower than the bus moves data; the host's memory bandwidth is what several reach.
pub(crate) fn copy_in_parallel(destination: &mut [u8], source: &[u8]) {
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
fn staging_bytes(staged: Option<&mut PinnedHostSlice<u8>>) -> Result<&mut [u8], GpuError> {
    staged
        .expect("reserve allocates staging for staged slabs")
        .as_mut_slice()
        .or_cuda("cuEventSynchronize")
}

/// Whether `error` is one of the faults after which the CUDA context is unusable and has
/// stopped executing (an illegal address or instruction, a failed launch, a device assert).
pub(crate) fn context_is_dead(error: &cudarc::driver::DriverError) -> bool {
    use cudarc::driver::sys::CUresult;
    matches!(
        error.0,
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
            | CUresult::CUDA_ERROR_LAUNCH_FAILED
            | CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
            | CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUresult::CUDA_ERROR_INVALID_PC
            | CUresult::CUDA_ERROR_ASSERT
            | CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR
    )
}

/// How long [`Cuda::wait`] watches a stream that failed to synchronise for its queued work
/// to finish or fail before it concludes that the work is stuck.
pub(crate) const STALLED_STREAM_GRACE: Duration = Duration::from_secs(10);

/// Whether the driver still reports queued work on `stream` after [`STALLED_STREAM_GRACE`]:
/// `cuStreamQuery` answers CUDA_SUCCESS when all of it finished and an error when the stream
/// failed (then none of it runs any more); only CUDA_ERROR_NOT_READY means copies may still
/// run.
fn stream_keeps_queued_work(stream: &CudaStream) -> bool {
    use cudarc::driver::sys::{cuStreamQuery, CUresult};
    let started = std::time::Instant::now();
    loop {
        // SAFETY: the stream is live (the adapter owns it); the call only reads its state.
        let status = unsafe { cuStreamQuery(stream.cu_stream()) };
        if status != CUresult::CUDA_ERROR_NOT_READY {
            return false;
        }
        if started.elapsed() >= STALLED_STREAM_GRACE {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl Api for Cuda {
    const API: GpuApi = GpuApi::Cuda;
    const QUEUES: usize = STREAMS;
    type Kernel = CudaKernel;
    type Slot = Slot;
    type Keys = Keys;
    type Mapped = super::zero_copy::HostMapped;
    type Event = ();
    type Extra = Extra;

    fn device_name(&self) -> String {
        self.info.name.trim().to_string()
    }

    fn description(&self) -> String {
        format!(
            "{} [{}, {}]",
            self.info, self.architecture, self.variant.table_copies
        )
    }

    fn identity_description(&self) -> String {
        self.info.to_string()
    }

    fn new_slot(stream: usize) -> Slot {
        Slot::new(stream)
    }

    fn reserve(&self, slot: &mut Slot, bytes: usize, limit: usize, staging: Staging) -> Outcome {
        let stream = &self.streams[slot.stream];
        slot.reserve(
            bytes,
            limit,
            staging,
            |capacity| stream.alloc_zeros(capacity).or_cuda("cuMemAlloc"),
            |capacity| alloc_pinned_zeroed(stream.context(), capacity),
        )
    }

    fn reserve_sums(&self, slot: &mut Slot, bytes: usize) -> Outcome {
        let stream = &self.streams[slot.stream];
        slot.reserve_sums(bytes, |capacity| {
            stream.alloc_zeros(capacity).or_cuda("cuMemAlloc")
        })
    }

    fn upload_counters(&self, slot: &mut Slot, counters: &[u8]) -> Outcome {
        self.reserve_sums(slot, counters.len())?;
        let stream = &self.streams[slot.stream];
        let buffer = slot.counters.as_mut().expect("allocated above");
        // From pageable memory, which CUDA copies out before this returns; in stream order
        // after this slot's previous launch, which read the buffer.
        stream
            .memcpy_htod(counters, &mut buffer.slice_mut(..counters.len()))
            .or_cuda("cuMemcpyHtoDAsync")?;
        Ok(())
    }

    unsafe fn upload(&self, slot: &mut Slot, data: &[u8], offset: usize) -> Outcome {
        let stream = &self.streams[slot.stream];
        let range = offset..offset + data.len();
        let input = slot.input.as_mut().expect("reserve allocates the input");
        // Asynchronous: the device reads `data` (or the staging buffer) after this returns,
        // which the caller's contract allows.
        if slot.staging == Staging::Staged {
            let staged = staging_bytes(slot.staged.as_mut())?;
            copy_in_parallel(&mut staged[range.clone()], data);
            stream
                .memcpy_htod(&staged[range.clone()], &mut input.slice_mut(range))
                .or_cuda("cuMemcpyHtoDAsync")?;
        } else {
            stream
                .memcpy_htod(data, &mut input.slice_mut(range))
                .or_cuda("cuMemcpyHtoDAsync")?;
        }
        Ok(())
    }

    unsafe fn launch(&self, slot: &mut Slot, launch: Launch<'_, Self>) -> Outcome {
        let stream = &self.streams[slot.stream];
        let (Some(input), Some(output)) = (slot.input.as_ref(), slot.output.as_mut()) else {
            unreachable!("reserve leaves both buffers allocated");
        };
        let (input_pointer, _input_record) = input.device_ptr(stream);
        let (output_pointer, _output_record) = output.device_ptr_mut(stream);
        let counter_record = slot
            .counters
            .as_ref()
            .filter(|_| launch.arguments.uses_side_buffer())
            .map(|buffer| buffer.device_ptr(stream));
        let counters = counter_record.as_ref().map(|(pointer, _)| *pointer);
        // SAFETY: the slot's buffers hold the launch's blocks and, for segmented CTR, this
        // slab's counter blocks, uploaded just before in stream order (the caller's
        // guarantee); they live in the locked device state until the streams are
        // synchronised, and their records are held until after the launch.
        unsafe { launch_on(stream, &launch, (input_pointer, output_pointer, counters)) }
    }

    unsafe fn download(&self, slot: &mut Slot, data: &mut [u8]) -> Outcome {
        let stream = &self.streams[slot.stream];
        let length = data.len();
        let output = slot.output.as_ref().expect("reserve allocates the output");
        if slot.staging == Staging::Staged {
            let staged = staging_bytes(slot.staged.as_mut())?;
            stream
                .memcpy_dtoh(&output.slice(..length), &mut staged[..length])
                .or_cuda("cuMemcpyDtoHAsync")?;
        } else {
            stream
                .memcpy_dtoh(&output.slice(..length), data)
                .or_cuda("cuMemcpyDtoHAsync")?;
        }
        Ok(())
    }

    /// Straight into `sums` (pageable: the driver finishes the copy before it returns).
    unsafe fn download_sums(&self, slot: &mut Slot, sums: &mut [u8]) -> Outcome {
        let stream = &self.streams[slot.stream];
        let buffer = slot
            .counters
            .as_ref()
            .expect("reserve_sums allocates the side buffer");
        stream
            .memcpy_dtoh(&buffer.slice(..sums.len()), sums)
            .or_cuda("cuMemcpyDtoHAsync")?;
        Ok(())
    }

    /// Waits for the stream's slab to come back and, when it was staged, copies it out to
    /// `data`: the staging buffer is then free for the stream's next slab.
    fn finish_slab(&self, slot: &mut Slot, data: &mut [u8]) -> Outcome {
        self.streams[slot.stream]
            .synchronize()
            .or_cuda("cuStreamSynchronize")?;
        if slot.staging == Staging::Staged {
            let staged = staging_bytes(slot.staged.as_mut())?;
            copy_in_parallel(data, &staged[..data.len()]);
        }
        Ok(())
    }

    /// A failed wait is an error, not an abort, whenever nothing can still touch host memory:
    /// the context is dead (a kernel fault stops all of its work), or the driver reports that
    /// the stream holds no queued work any more (cuStreamQuery: finished or failed, not
    /// "not ready"). Only when the driver keeps reporting queued work on a stream it will not
    /// wait for, for [`STALLED_STREAM_GRACE`], could returning hand memory back while a copy
    /// may still write it; that one case still aborts the process.
    fn wait(&self, host_memory_in_flight: bool) -> Outcome {
        let mut outcome = Ok(());
        for stream in &self.streams {
            // cudarc reports an error stored by earlier bookkeeping (an event record, a
            // free) before it synchronises, and clears it: the first failure may not be this
            // stream's at all, so the wait is tried once more before anything is concluded.
            let waited = stream.synchronize().or_else(|_| stream.synchronize());
            if let Err(error) = waited {
                if host_memory_in_flight
                    && !context_is_dead(&error)
                    && stream_keeps_queued_work(stream)
                {
                    // Not eprintln!: it panics when stderr fails, and a panic unwinds
                    // (handing the memory back) instead of aborting.
                    let _ = writeln!(
                        std::io::stderr(),
                        "parcrypt: CUDA stream could not be drained ({error}) and still has \
                         queued copies; host memory may still be in use by the device, aborting"
                    );
                    std::process::abort();
                }
                outcome = outcome.and(Err(error).or_cuda("cuStreamSynchronize"));
            }
        }
        outcome
    }

    /// Copies the key's words to the device on stream 0 and makes the other streams wait
    /// for them.
    fn upload_key(&self, keys: &mut Keys, key: &KeyMaterial, decrypting: bool) -> Outcome {
        let stream = &self.streams[0];
        let round_keys = key.round_keys(decrypting);
        let tables = key.key_tables();
        let staging = keys
            .key_staging
            .as_mut_slice()
            .or_cuda("cuEventSynchronize")?;
        staging[..round_keys.len()].copy_from_slice(round_keys);
        staging[ROUND_KEY_WORDS..ROUND_KEY_WORDS + tables.len()].copy_from_slice(tables);
        stream
            .memcpy_htod(
                &staging[..round_keys.len()],
                &mut keys.round_keys.slice_mut(..round_keys.len()),
            )
            .or_cuda("cuMemcpyHtoDAsync")?;
        if !tables.is_empty() {
            stream
                .memcpy_htod(
                    &staging[ROUND_KEY_WORDS..ROUND_KEY_WORDS + tables.len()],
                    &mut keys.key_tables.slice_mut(..tables.len()),
                )
                .or_cuda("cuMemcpyHtoDAsync")?;
        }
        keys.key_ready.record(stream).or_cuda("cuEventRecord")?;
        for other in &self.streams[1..] {
            other.wait(&keys.key_ready).or_cuda("cuStreamWaitEvent")?;
        }
        Ok(())
    }

    /// Overwrites the device's and the staging buffer's copies of the key. Runs after every
    /// stream is idle.
    fn wipe_key(&self, keys: &mut Keys, _key: &KeyMaterial) -> Outcome {
        let stream = &self.streams[0];
        let device_wiped = stream
            .memset_zeros(&mut keys.round_keys)
            .and_then(|()| stream.memset_zeros(&mut keys.key_tables))
            .and_then(|()| stream.synchronize())
            .or_cuda("cuMemsetD8Async");
        // Wiped whatever the device said: the uploads from the staging buffer finished
        // before the streams went idle, and a device that failed reads nothing more.
        let staging_wiped = keys
            .key_staging
            .as_mut_slice()
            .map(Zeroize::zeroize)
            .or_cuda("cuEventSynchronize");
        device_wiped.and(staging_wiped)
    }

    /// The host path records no per-kernel events on CUDA: kernel times come from events
    /// around the device-buffer and mapped launches instead.
    fn kernel_time(_events: &[()]) -> Outcome<Duration> {
        Ok(Duration::ZERO)
    }

    /// The data is copied to the device once; each run is timed with CUDA events around
    /// the launches on the device buffer (no host copies in the time).
    fn kernel_times(device: &GpuHost<Self>, job: TimingJob<'_>) -> Outcome<Vec<Duration>> {
        if job.data.is_empty() {
            return Ok(vec![Duration::ZERO; job.runs]);
        }
        let mut buffer = device.adapter.streams[0]
            .clone_htod(&*job.data)
            .or_cuda("cuMemcpyHtoDAsync")?;
        (0..job.runs)
            .map(|_| device.process_device_buffer_timed(job.key, job.operation, &mut buffer))
            .collect()
    }

    fn copy_host(destination: &mut [u8], source: &[u8]) {
        copy_in_parallel(destination, source);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
