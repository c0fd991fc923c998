//! The shared host's calls ([`Api`]) in OpenCL, on `opencl3`: two in-order queues with
//! profiling, device buffers grown per queue, blocking key writes, `clFinish` waits.

use std::io::Write;
use std::ptr;
use std::time::Duration;

use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::context::Context;
use opencl3::device::Device as ClDevice;
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::{cl_mem, Buffer, ClMem, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::{cl_device_id, CL_BLOCKING, CL_NON_BLOCKING};

use crate::error::ApiResultExt;
use crate::host::arguments::Argument;
use crate::host::{
    busy_nanoseconds, grown_capacity, Api, GpuHost, Launch, Outcome, Staging, TimingJob,
    KEY_TABLE_WORDS, ROUND_KEY_WORDS,
};
use crate::{DeviceInfo, DeviceKind, GpuApi, GpuError, KeyMaterial};

/// An OpenCL device's handles: what the shared host drives through [`Api`].
pub struct OpenCl {
    pub(crate) info: DeviceInfo,
    /// Slab `k` goes to queue `k % 2`: on a device with separate copy engines the copies of
    /// one slab overlap the kernel of the other (PoCL runs them one after the other, which
    /// is still correct).
    pub(crate) queues: [CommandQueue; 2],
    /// Whether the device shares the host's memory (`CL_DEVICE_HOST_UNIFIED_MEMORY`).
    pub(crate) host_unified_memory: bool,
    pub(crate) device: ClDevice,
    // Kept alive for the kernels made from it.
    pub(crate) _program: Program,
    pub(crate) context: Context,
}

/// A queue's pair of slab buffers, grown on demand and kept for later calls, and the side
/// buffer (segmented CTR's counter blocks, or GCM's GHASH sums).
pub struct Slot {
    /// The queue this slot's slabs run on.
    queue: usize,
    input: Option<Buffer<u8>>,
    output: Option<Buffer<u8>>,
    capacity: usize,
    counters: Option<Buffer<u8>>,
    counter_capacity: usize,
}

/// The device's key buffers and the fixed AES tables.
pub struct Keys {
    pub(crate) round_keys: Buffer<u32>,
    pub(crate) key_tables: Buffer<u32>,
    pub(crate) aes_tables: Buffer<u32>,
}

/// A device buffer of `bytes` bytes that the driver allocates.
pub(crate) fn byte_buffer(
    context: &Context,
    flags: u64,
    bytes: usize,
) -> Result<Buffer<u8>, GpuError> {
    // SAFETY: no host pointer is passed and no flag asks for one, so the driver allocates
    // memory of `bytes` bytes that only it accesses.
    unsafe { Buffer::<u8>::create(context, flags, bytes, ptr::null_mut()) }.or_api("clCreateBuffer")
}

/// A read-only device buffer of `words` u32.
pub(crate) fn word_buffer(context: &Context, words: usize) -> Result<Buffer<u32>, GpuError> {
    // SAFETY: no host pointer, no host-pointer flags: the driver allocates the memory.
    unsafe { Buffer::<u32>::create(context, CL_MEM_READ_ONLY, words, ptr::null_mut()) }
        .or_api("clCreateBuffer")
}

/// Copies `words` into `buffer` and returns once the device has them: a finished command,
/// which is what OpenCL requires before commands on the other queue may read the buffer.
pub(crate) fn write_words(
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

/// An in-order queue with profiling enabled, so that timed calls can read their kernels'
/// start and end times. Profiling only records timestamps; it changes no result, and its
/// cost is not measurable next to a slab's copies and kernel.
pub(crate) fn create_queue(
    context: &Context,
    device_id: cl_device_id,
) -> Result<CommandQueue, GpuError> {
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

/// Sets the launch's kernel arguments from their roles and enqueues it on `queue`.
///
/// # Safety
/// The launch's arguments must be its kernel's parameter list; `input`, `output` and
/// `counters` (where the list names it) must be buffers of the device's context that hold
/// what the launch reads and writes, stay alive, and that the host does not touch until it
/// has completed.
pub(crate) unsafe fn enqueue_kernel(
    queue: &CommandQueue,
    launch: &Launch<'_, OpenCl>,
    (input, output, counters): (cl_mem, cl_mem, Option<cl_mem>),
) -> Outcome<Event> {
    let (kernel, keys) = (launch.kernel, launch.keys);
    for (index, argument) in launch.arguments.as_slice().iter().enumerate() {
        let index = index as u32;
        // SAFETY: the arguments are the kernel's list (the caller's guarantee), so each
        // value has the size and layout of its parameter: `cl_mem` for pointers, `u32` /
        // `u64`, `[u32; 4]` / `[u32; 2]` for `u32x4` / `u32x2`.
        unsafe {
            match *argument {
                Argument::Input => kernel.set_arg(index, &input),
                Argument::Output => kernel.set_arg(index, &output),
                Argument::Counters | Argument::Sums => match counters {
                    Some(counters) => kernel.set_arg(index, &counters),
                    None => {
                        return Err(GpuError::InvalidInput(
                            "segmented CTR and GCM's sums need the slot's side buffer".into(),
                        ))
                    }
                },
                Argument::RoundKeys => kernel.set_arg(index, &keys.round_keys.get()),
                Argument::KeyTables => kernel.set_arg(index, &keys.key_tables.get()),
                Argument::AesTables => kernel.set_arg(index, &keys.aes_tables.get()),
                Argument::U32(value) => kernel.set_arg(index, &value),
                Argument::U64(value) => kernel.set_arg(index, &value),
                Argument::Words4(words) => kernel.set_arg(index, &words),
                Argument::Words2(words) => kernel.set_arg(index, &words),
            }
        }
        .or_api("clSetKernelArg")?;
    }
    let shape = launch.shape;
    // SAFETY: every argument was set above; the sizes are one-dimensional, with the global
    // size a multiple of the group size as OpenCL 1.2 requires. The caller guarantees the
    // data buffers; the key buffers hold what the kernels read.
    unsafe {
        queue.enqueue_nd_range_kernel(
            kernel.get(),
            1,
            ptr::null(),
            [shape.groups * shape.group_size].as_ptr(),
            [shape.group_size].as_ptr(),
            &[],
        )
    }
    .or_api("clEnqueueNDRangeKernel")
}

impl Api for OpenCl {
    const API: GpuApi = GpuApi::Opencl;
    const QUEUES: usize = 2;
    type Kernel = Kernel;
    type Slot = Slot;
    type Keys = Keys;
    type Mapped = super::zero_copy::HostMapped;
    type Event = Event;
    type Extra = ();

    fn device_name(&self) -> String {
        self.info.name.trim().to_string()
    }

    fn description(&self) -> String {
        self.info.to_string()
    }

    fn identity_description(&self) -> String {
        self.info.to_string()
    }

    fn kind(&self) -> DeviceKind {
        self.info.kind
    }

    fn new_slot(queue: usize) -> Slot {
        Slot {
            queue,
            input: None,
            output: None,
            capacity: 0,
            counters: None,
            counter_capacity: 0,
        }
    }

    /// OpenCL copies straight from and to the caller's memory whatever `_staging` says:
    /// the driver pins or stages pageable memory itself.
    fn reserve(&self, slot: &mut Slot, bytes: usize, limit: usize, _staging: Staging) -> Outcome {
        if slot.capacity >= bytes && slot.input.is_some() && slot.output.is_some() {
            return Ok(());
        }
        let capacity = grown_capacity(bytes, limit);
        // Dropping the old buffers first lets the device reuse their memory. A buffer still
        // used by an enqueued command is only freed once that command completes.
        slot.input = None;
        slot.output = None;
        slot.capacity = 0;
        slot.input = Some(byte_buffer(&self.context, CL_MEM_READ_ONLY, capacity)?);
        // Read as well: GCM hashes the ciphertext a CTR launch left there.
        slot.output = Some(byte_buffer(&self.context, CL_MEM_READ_WRITE, capacity)?);
        slot.capacity = capacity;
        Ok(())
    }

    fn reserve_sums(&self, slot: &mut Slot, bytes: usize) -> Outcome {
        if slot.counter_capacity < bytes || slot.counters.is_none() {
            let capacity = bytes.next_power_of_two();
            slot.counters = None;
            slot.counter_capacity = 0;
            // Written by `ghash_groups`, read by the counter kernels.
            slot.counters = Some(byte_buffer(&self.context, CL_MEM_READ_WRITE, capacity)?);
            slot.counter_capacity = capacity;
        }
        Ok(())
    }

    fn upload_counters(&self, slot: &mut Slot, counters: &[u8]) -> Outcome {
        self.reserve_sums(slot, counters.len())?;
        let buffer = slot.counters.as_mut().expect("allocated above");
        let queue = &self.queues[slot.queue];
        // SAFETY: non-blocking; `counters` is borrowed from the caller's operation, which
        // it holds (unchanged) until it has waited for both queues, and the buffer holds at
        // least its length (grown above). In queue order after this slot's previous launch.
        unsafe { queue.enqueue_write_buffer(buffer, CL_NON_BLOCKING, 0, counters, &[]) }
            .or_api("clEnqueueWriteBuffer")?;
        Ok(())
    }

    unsafe fn upload(&self, slot: &mut Slot, data: &[u8], offset: usize) -> Outcome {
        let input = slot.input.as_mut().expect("reserve allocates the input");
        let queue = &self.queues[slot.queue];
        // SAFETY: non-blocking, so the device reads `data` after this returns, which the
        // caller allows; the buffer holds `offset + data.len()` bytes (reserved).
        unsafe { queue.enqueue_write_buffer(input, CL_NON_BLOCKING, offset, data, &[]) }
            .or_api("clEnqueueWriteBuffer")?;
        Ok(())
    }

    unsafe fn launch(&self, slot: &mut Slot, launch: Launch<'_, Self>) -> Outcome<Event> {
        let (input, output, counters) =
            launch
                .arguments
                .slot_buffers(&slot.input, &slot.output, &slot.counters);
        // SAFETY: the slot's two buffers are distinct buffers of this context holding the
        // launch's blocks (the caller's guarantee), alive in the locked device state; the
        // counter buffer holds this slab's counter blocks, written just before in queue
        // order, and is not written again until the queues are drained (the slot's next
        // slab writes it after this launch, in order).
        unsafe {
            enqueue_kernel(
                &self.queues[slot.queue],
                &launch,
                (
                    input.get(),
                    output.get(),
                    counters.map(|buffer| buffer.get()),
                ),
            )
        }
    }

    unsafe fn download(&self, slot: &mut Slot, data: &mut [u8]) -> Outcome {
        let output = slot.output.as_ref().expect("reserve allocates the output");
        let queue = &self.queues[slot.queue];
        // SAFETY: non-blocking; the device writes `data` after the kernel, in queue order,
        // and the caller leaves it untouched until the queues are drained. The buffer holds
        // at least `data.len()` bytes (reserved).
        unsafe { queue.enqueue_read_buffer(output, CL_NON_BLOCKING, 0, data, &[]) }
            .or_api("clEnqueueReadBuffer")?;
        Ok(())
    }

    unsafe fn download_sums(&self, slot: &mut Slot, sums: &mut [u8]) -> Outcome {
        let buffer = slot
            .counters
            .as_ref()
            .expect("reserve_sums allocates the side buffer");
        let queue = &self.queues[slot.queue];
        // SAFETY: non-blocking; the device writes `sums` after the slot's launches, in queue
        // order, and the caller leaves it untouched until the queues are drained. The buffer
        // holds at least `sums.len()` bytes (reserve_sums).
        unsafe { queue.enqueue_read_buffer(buffer, CL_NON_BLOCKING, 0, sums, &[]) }
            .or_api("clEnqueueReadBuffer")?;
        Ok(())
    }

    fn flush(&self, slot: &Slot) -> Outcome {
        self.queues[slot.queue].flush().or_api("clFlush")
    }

    /// In-order queues copy straight into the caller's memory: a queue's next slab is
    /// ordered after its previous one without waiting here.
    fn finish_slab(&self, _slot: &mut Slot, _data: &mut [u8]) -> Outcome {
        Ok(())
    }

    fn wait(&self, _host_memory_in_flight: bool) -> Outcome {
        for queue in &self.queues {
            if queue.finish().is_err() {
                // The device may still be copying into the caller's buffer, and there is no
                // other way to know when it stops; returning would hand that memory back
                // while it can still change under safe code.
                // Not eprintln!: it panics when stderr fails, and a panic unwinds (handing
                // the memory back) instead of aborting.
                let _ = writeln!(
                    std::io::stderr(),
                    "parcrypt: OpenCL queue could not be drained (device lost?); aborting"
                );
                std::process::abort();
            }
        }
        Ok(())
    }

    fn upload_key(&self, keys: &mut Keys, key: &KeyMaterial, decrypting: bool) -> Outcome {
        write_words(
            &self.queues[0],
            &mut keys.round_keys,
            key.round_keys(decrypting),
        )?;
        if !key.key_tables().is_empty() {
            write_words(&self.queues[0], &mut keys.key_tables, key.key_tables())?;
        }
        Ok(())
    }

    fn wipe_key(&self, keys: &mut Keys, key: &KeyMaterial) -> Outcome {
        write_words(&self.queues[0], &mut keys.round_keys, &[0; ROUND_KEY_WORDS])?;
        if !key.key_tables().is_empty() {
            write_words(&self.queues[0], &mut keys.key_tables, &[0; KEY_TABLE_WORDS])?;
        }
        Ok(())
    }

    /// From each kernel's `CL_PROFILING_COMMAND_START` to `_END` (copies excluded), counting
    /// the time during which at least one kernel ran: kernels of the two queues may overlap
    /// (PoCL runs them side by side), and overlapping time counts once.
    fn kernel_time(events: &[Event]) -> Outcome<Duration> {
        let mut intervals = Vec::with_capacity(events.len());
        for event in events {
            let start = event
                .profiling_command_start()
                .or_api("clGetEventProfilingInfo")?;
            let end = event
                .profiling_command_end()
                .or_api("clGetEventProfilingInfo")?;
            intervals.push((start, end.max(start)));
        }
        Ok(Duration::from_nanos(busy_nanoseconds(intervals)))
    }

    fn kernel_times(device: &GpuHost<Self>, job: TimingJob<'_>) -> Outcome<Vec<Duration>> {
        device.timed_runs(job, Staging::Direct)
    }
}
