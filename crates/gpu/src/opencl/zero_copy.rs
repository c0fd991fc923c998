//! Zero-copy on OpenCL: buffers in host-visible memory (`CL_MEM_ALLOC_HOST_PTR`) that the
//! host reaches by mapping them, and kernels read and write in place of device copies, as
//! embedded GPUs that share the host's memory are meant to be used (seed S4).
//!
//! What is and is not zero-copy:
//! - [`MappedBuffer`]: the caller writes its data straight into the mapped memory
//!   ([`MappedBuffer::as_mut_slice`]) and reads the result from there. No byte is copied by
//!   this crate. Whether the driver copies depends on the device: where the device shares
//!   the host's memory ([`OpenClDevice::host_unified_memory`]; PoCL, integrated and
//!   embedded GPUs) mapping and unmapping hand the same memory back and forth; a discrete
//!   GPU's driver may instead move the data over the bus when the buffer is unmapped and
//!   mapped again, which is what `process` does anyway.
//! - [`OpenClDevice::process_zero_copy`]: ordinary host data, copied into a mapped buffer
//!   and back out again by the host (two host copies, as `process` has a write and a read),
//!   to compare the paths on the same data.
//!
//! The kernels read their input and write their output through `restrict` pointers, so they
//! never run in place: a mapped buffer is two halves of host-visible memory. A call runs
//! the kernel from the half the host sees (unmapped for the call) into the other, maps that
//! one and shows it from then on, so to the caller the buffer is processed in place.

use std::ptr::{self, NonNull};
use std::time::{Duration, Instant};

use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::event::Event;
use opencl3::memory::{
    cl_mem, Buffer, ClMem, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_WRITE,
};
use opencl3::types::CL_BLOCKING;

use super::{create_queue, CipherLaunch, DeviceState, OpenClDevice};
use crate::error::ApiResultExt;
use crate::host::{grown_capacity, slab_size};
use crate::operation::{ModeArguments, SlabChain};
use crate::{GpuError, GpuOperation, KeyMaterial};

/// Mapped buffers hold whole 16-byte blocks, so that a final partial CTR block (or an 8-byte
/// Blowfish block) is a whole block inside the buffer when the kernel reads and writes it.
const BLOCK_BYTES: usize = 16;

/// Whether `device` says it shares the host's memory; `false` when the driver does not
/// answer (the query is deprecated since OpenCL 2.0, though drivers still answer it).
pub(super) fn reports_unified_memory(device: &Device) -> bool {
    device.host_unified_memory().unwrap_or(false)
}

fn lost_mapping() -> GpuError {
    GpuError::InvalidInput(
        "the mapped buffer lost its mapping after an earlier device error; allocate a new one"
            .into(),
    )
}

/// Segmented CTR uploads counter blocks per launch, which only the copy path does.
fn refuse_segments(operation: &GpuOperation) -> Result<(), GpuError> {
    if matches!(operation, GpuOperation::CtrSegments { .. }) {
        return Err(GpuError::Unsupported {
            api: crate::GpuApi::Opencl,
            operation: "segmented CTR through mapped host memory",
        });
    }
    Ok(())
}

/// Two halves of host-visible device memory with a queue of their own; the front half is
/// mapped for the host between calls, the back half is where the next kernel writes.
pub(super) struct HostMapped {
    halves: [Buffer<u8>; 2],
    /// Which half the host sees.
    front: usize,
    /// Bytes in each half: whole blocks, at least one.
    capacity: usize,
    /// The front half's mapping, `capacity` bytes; `None` only after a failure left the
    /// buffer without one.
    mapped: Option<NonNull<u8>>,
    /// Dropped after the halves (field order), which `Drop` unmaps on it first.
    queue: CommandQueue,
}

// SAFETY: the pointer is a mapping of memory the OpenCL buffer owns, reached only through
// `&self` (shared bytes) and `&mut self` (exclusive bytes, unmapping); OpenCL buffers and
// queues may be used from any thread.
unsafe impl Send for HostMapped {}
// SAFETY: as above; `&HostMapped` gives nothing but a shared byte slice.
unsafe impl Sync for HostMapped {}

impl HostMapped {
    /// Two zeroed halves of at least `bytes` bytes each, the front one mapped.
    pub(super) fn new(context: &Context, device: &Device, bytes: usize) -> Result<Self, GpuError> {
        let capacity = bytes.div_ceil(BLOCK_BYTES).max(1) * BLOCK_BYTES;
        let queue = create_queue(context, device.id())?;
        let allocate = || {
            // SAFETY: no host pointer is passed; ALLOC_HOST_PTR asks the driver for memory
            // the host can map, which only the driver allocates and frees.
            unsafe {
                Buffer::<u8>::create(
                    context,
                    CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                    capacity,
                    ptr::null_mut(),
                )
            }
            .or_api("clCreateBuffer")
        };
        let mut halves = [allocate()?, allocate()?];
        for half in &mut halves {
            // SAFETY: the fill covers exactly the buffer's `capacity` bytes, with a pattern
            // that lives in static memory; the blocking map below comes after it in queue
            // order, so no byte is seen before it is zero.
            unsafe { queue.enqueue_fill_buffer(half, &[0u8], 0, capacity, &[]) }
                .or_api("clEnqueueFillBuffer")?;
        }
        let mut mapped = HostMapped {
            halves,
            front: 0,
            capacity,
            mapped: None,
            queue,
        };
        mapped.map_front()?;
        Ok(mapped)
    }

    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Maps the front half for reading and writing and waits until the mapping is usable:
    /// every command before it on the queue (a kernel writing the half) has finished.
    fn map_front(&mut self) -> Result<(), GpuError> {
        debug_assert!(self.mapped.is_none());
        let mut pointer: cl_mem = ptr::null_mut();
        // SAFETY: blocking, so the driver has written `pointer` when this returns; the
        // region is the whole buffer.
        unsafe {
            self.queue.enqueue_map_buffer(
                &self.halves[self.front],
                CL_BLOCKING,
                CL_MAP_READ | CL_MAP_WRITE,
                0,
                self.capacity,
                &mut pointer,
                &[],
            )
        }
        .or_api("clEnqueueMapBuffer")?;
        self.mapped = Some(
            NonNull::new(pointer.cast::<u8>()).ok_or(GpuError::InvalidInput(
                "clEnqueueMapBuffer returned a null pointer".into(),
            ))?,
        );
        Ok(())
    }

    /// Gives the front half back to the device. The host may not touch the old mapping
    /// afterwards, which `&mut self` and `mapped` being `None` ensure.
    fn unmap_front(&mut self) -> Result<(), GpuError> {
        let Some(pointer) = self.mapped.take() else {
            return Ok(());
        };
        // SAFETY: `pointer` is the front half's mapping, made by `map_front` on this queue;
        // no slice of it outlives the `&mut self` borrow of this call.
        let unmapped = unsafe {
            self.queue.enqueue_unmap_mem_object(
                self.halves[self.front].get(),
                pointer.as_ptr().cast(),
                &[],
            )
        };
        if let Err(error) = unmapped {
            self.mapped = Some(pointer);
            return Err(GpuError::api("clEnqueueUnmapMemObject", error));
        }
        Ok(())
    }

    /// The front half as the host sees it: `capacity` bytes, empty without a mapping.
    pub(super) fn bytes(&self) -> &[u8] {
        match self.mapped {
            // SAFETY: a mapping of `capacity` bytes that stays valid until it is unmapped,
            // which takes `&mut self`; every byte was zeroed when the buffer was made or
            // written by a kernel since, and no kernel writes the front half while it is
            // mapped (kernels run only inside `run`, on the unmapped halves).
            Some(pointer) => unsafe { std::slice::from_raw_parts(pointer.as_ptr(), self.capacity) },
            None => &[],
        }
    }

    /// As [`HostMapped::bytes`], writable.
    pub(super) fn bytes_mut(&mut self) -> &mut [u8] {
        match self.mapped {
            // SAFETY: as in `bytes`, and `&mut self` makes the slice the only access.
            Some(pointer) => unsafe {
                std::slice::from_raw_parts_mut(pointer.as_ptr(), self.capacity)
            },
            None => &mut [],
        }
    }

    /// Runs `launch` over the first `blocks` blocks of the front half into the back half
    /// and makes the back half the mapped front: the result is then in `bytes()`. Returns
    /// the kernel's event (for its profiled time) once the result can be read.
    fn run(
        &mut self,
        launch: &CipherLaunch<'_>,
        blocks: usize,
        mode_arguments: ModeArguments,
    ) -> Result<Event, GpuError> {
        if self.mapped.is_none() {
            return Err(lost_mapping());
        }
        debug_assert!(blocks * launch.key.algorithm().block_size() <= self.capacity);
        self.unmap_front()?;
        let input = self.halves[self.front].get();
        let output = self.halves[1 - self.front].get();
        // SAFETY: two different buffers of the device's context, each of `capacity` bytes,
        // at least `blocks` blocks (checked by the callers against the length); the halves
        // live as long as `self`, which stays borrowed until the blocking map below has
        // waited for the kernel, and neither half is mapped while it runs.
        let launched =
            unsafe { launch.enqueue(&self.queue, input, output, blocks, mode_arguments) };
        let event = match launched {
            Ok(event) => event,
            Err(error) => {
                // Nothing ran: the input half is still the front, mapped again if possible.
                let _ = self.map_front();
                return Err(error);
            }
        };
        self.front = 1 - self.front;
        if let Err(error) = self.map_front() {
            // Waited for, so that no kernel is left running on memory this buffer owns;
            // the buffer has no mapping from now on.
            let _ = self.queue.finish();
            return Err(error);
        }
        Ok(event)
    }
}

impl Drop for HostMapped {
    fn drop(&mut self) {
        // Unmapped before the halves are released; errors leave nothing to do, the release
        // that follows frees the memory either way.
        let _ = self.unmap_front();
        let _ = self.queue.finish();
    }
}

/// `len` bytes of host-visible memory that an [`OpenClDevice`] processes in place, with
/// no copy by this crate: write the data with [`MappedBuffer::as_mut_slice`], call
/// [`MappedBuffer::process`], read the result with [`MappedBuffer::as_slice`].
///
/// Made by [`OpenClDevice::mapped_buffer`]. A call runs one kernel over the whole length,
/// so a buffer holds at most [`OpenClDevice::max_mapped_bytes`]. The memory is zeroed when
/// the buffer is made; it is not wiped when the buffer is dropped (like `process`'s own
/// device buffers, it holds data, never keys).
pub struct MappedBuffer<'device> {
    device: &'device OpenClDevice,
    inner: HostMapped,
    len: usize,
}

impl std::fmt::Debug for MappedBuffer<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("MappedBuffer")
            .field("device", &self.device.name())
            .field("len", &self.len)
            .field("capacity", &self.inner.capacity)
            .field("mapped", &self.inner.mapped.is_some())
            .finish()
    }
}

impl MappedBuffer<'_> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most bytes [`MappedBuffer::set_len`] allows: the length asked for, rounded up to
    /// whole 16-byte blocks.
    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }

    /// Changes how many bytes the buffer shows and processes, within its capacity. Bytes
    /// that come into view hold whatever the memory last held (zero, or earlier data).
    pub fn set_len(&mut self, len: usize) -> Result<(), GpuError> {
        if len > self.inner.capacity {
            return Err(GpuError::InvalidInput(format!(
                "{len} bytes do not fit a mapped buffer of {} bytes",
                self.inner.capacity
            )));
        }
        self.len = len;
        Ok(())
    }

    /// The data, read straight from the mapped memory. Empty only when a device error
    /// left the buffer without a mapping (then [`MappedBuffer::process`] says so).
    pub fn as_slice(&self) -> &[u8] {
        self.inner.bytes().get(..self.len).unwrap_or(&[])
    }

    /// The data, written straight into the mapped memory.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        let len = self.len;
        let bytes = self.inner.bytes_mut();
        if bytes.len() >= len {
            &mut bytes[..len]
        } else {
            &mut []
        }
    }

    /// Runs `operation` under `key` over the buffer's bytes, in place as the caller sees
    /// them; returns when the result can be read and the device's copy of the key is
    /// wiped. ECB and CBC need whole blocks; CTR takes any length.
    pub fn process(&mut self, key: &KeyMaterial, operation: &GpuOperation) -> Result<(), GpuError> {
        self.run(key, operation).map(|_| ())
    }

    /// [`MappedBuffer::process`], timed: the kernel's time (OpenCL profiling, as
    /// [`OpenClDevice::process_timed`]) and the call's wall time, unmapping and mapping,
    /// key upload and wipe included. Both are zero for an empty buffer.
    pub fn process_timed(
        &mut self,
        key: &KeyMaterial,
        operation: &GpuOperation,
    ) -> Result<(Duration, Duration), GpuError> {
        let started = Instant::now();
        let event = self.run(key, operation)?;
        let end_to_end = started.elapsed();
        let Some(event) = event else {
            return Ok((Duration::ZERO, Duration::ZERO));
        };
        let start = event
            .profiling_command_start()
            .or_api("clGetEventProfilingInfo")?;
        let end = event
            .profiling_command_end()
            .or_api("clGetEventProfilingInfo")?;
        Ok((Duration::from_nanos(end.saturating_sub(start)), end_to_end))
    }

    fn run(
        &mut self,
        key: &KeyMaterial,
        operation: &GpuOperation,
    ) -> Result<Option<Event>, GpuError> {
        operation.validate(key.algorithm(), self.len)?;
        refuse_segments(operation)?;
        if self.len == 0 {
            return Ok(None);
        }
        let len = self.len;
        let inner = &mut self.inner;
        self.device.with_key(key, operation, |state| {
            let block_size = key.algorithm().block_size();
            let (launch, _, _) = state.cipher_launch(key, operation, len);
            let data = inner.bytes().get(..len).ok_or_else(lost_mapping)?;
            let mode_arguments = SlabChain::new(operation).next(data, block_size);
            inner
                .run(&launch, len.div_ceil(block_size), mode_arguments)
                .map(Some)
        })
    }
}

impl OpenClDevice {
    /// Whether the device says it shares the host's memory (`CL_DEVICE_HOST_UNIFIED_MEMORY`:
    /// integrated and embedded GPUs, and CPU devices such as PoCL). Only there can mapped
    /// buffers save the copies; a discrete GPU reads mapped memory over the bus or has its
    /// driver copy it. `false` also when the driver does not answer the query.
    pub fn host_unified_memory(&self) -> bool {
        self.host_unified_memory
    }

    /// The largest [`MappedBuffer`]: one kernel launch (at most 1 GiB) within the
    /// device's largest buffer.
    pub fn max_mapped_bytes(&self) -> usize {
        slab_size(usize::MAX, self.info.max_allocation_bytes)
    }

    /// Host-visible memory for `len` bytes that this device processes in place; see
    /// [`MappedBuffer`].
    pub fn mapped_buffer(&self, len: usize) -> Result<MappedBuffer<'_>, GpuError> {
        let limit = self.max_mapped_bytes();
        if len > limit {
            return Err(GpuError::InvalidInput(format!(
                "a mapped buffer holds at most {limit} bytes on {}, asked for {len}",
                self.name()
            )));
        }
        Ok(MappedBuffer {
            device: self,
            inner: HostMapped::new(&self.context, &self.device, len)?,
            len,
        })
    }

    /// [`OpenClDevice::process`] through mapped host memory instead of device buffers:
    /// slab by slab, `data` is copied into a mapped buffer (kept for later calls), the
    /// kernel reads and writes mapped memory, and the result is copied back. The host still
    /// copies every byte in and out; only [`MappedBuffer`] avoids that. Same output as
    /// `process`; the key is wiped before this returns.
    pub fn process_zero_copy(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
    ) -> Result<(), GpuError> {
        operation.validate(key.algorithm(), data.len())?;
        refuse_segments(operation)?;
        if data.is_empty() {
            return Ok(());
        }
        let block_size = key.algorithm().block_size();
        // Slabs bound the host-visible memory a call keeps, as they bound device memory
        // in `process`; whole 16-byte blocks, so CBC and CTR chain at their edges.
        let slab_bytes = self.slab_bytes;
        self.with_key(key, operation, |state| {
            let (launch, _, cache) = state.cipher_launch(key, operation, data.len());
            let needed = data.len().min(slab_bytes).div_ceil(BLOCK_BYTES) * BLOCK_BYTES;
            let fits = cache
                .as_ref()
                .is_some_and(|mapped| mapped.capacity() >= needed && mapped.mapped.is_some());
            if !fits {
                // Dropped first, so that its memory can be reused.
                *cache = None;
                *cache = Some(HostMapped::new(
                    &self.context,
                    &self.device,
                    grown_capacity(needed, slab_bytes),
                )?);
            }
            let mapped = cache.as_mut().expect("allocated above");
            let mut chain = SlabChain::new(operation);
            for slab in data.chunks_mut(slab_bytes) {
                let length = slab.len();
                mapped
                    .bytes_mut()
                    .get_mut(..length)
                    .ok_or_else(lost_mapping)?
                    .copy_from_slice(slab);
                let mode_arguments = chain.next(slab, block_size);
                mapped.run(&launch, length.div_ceil(block_size), mode_arguments)?;
                slab.copy_from_slice(&mapped.bytes()[..length]);
            }
            Ok(())
        })
    }

    /// Locks the device, uploads `key`, runs `work`, and wipes the key whatever happened.
    /// `work` must leave no kernel running (the mapped paths wait for theirs by mapping
    /// the result).
    fn with_key<T>(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        work: impl FnOnce(&mut DeviceState) -> Result<T, GpuError>,
    ) -> Result<T, GpuError> {
        let mut state = self.lock_state();
        let decrypting = operation.kernel_operation().decrypts();
        let outcome = self
            .upload_key(&mut state, key, decrypting)
            .and_then(|()| work(&mut state));
        let wiped = self.wipe_key(&mut state, key);
        match (outcome, wiped) {
            (Ok(value), Ok(())) => Ok(value),
            (Err(error), _) | (Ok(_), Err(error)) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{KEY_TABLE_WORDS, ROUND_KEY_WORDS};
    use crate::opencl::devices;
    use crate::opencl::OpenOptions;
    use parcrypt_ciphers::Algorithm;
    use parcrypt_modes::ctr::CounterRule;

    /// Device 0 with small slabs, or `None` after saying why (a failure under CI).
    fn device() -> Option<OpenClDevice> {
        match devices::find_all() {
            Ok(found) if !found.is_empty() => Some(
                OpenClDevice::open_with(
                    0,
                    &OpenOptions {
                        slab_bytes: 4096,
                        ..OpenOptions::default()
                    },
                )
                .unwrap(),
            ),
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

    fn device_key_words(device: &OpenClDevice) -> Vec<u32> {
        let state = device.lock_state();
        let mut words = vec![1u32; ROUND_KEY_WORDS + KEY_TABLE_WORDS];
        let (round_keys, key_tables) = words.split_at_mut(ROUND_KEY_WORDS);
        // SAFETY: blocking reads of whole buffers into slices of their sizes.
        unsafe {
            device.queues[0]
                .enqueue_read_buffer(&state.round_keys, CL_BLOCKING, 0, round_keys, &[])
                .unwrap();
            device.queues[0]
                .enqueue_read_buffer(&state.key_tables, CL_BLOCKING, 0, key_tables, &[])
                .unwrap();
        }
        words
    }

    #[test]
    fn keys_are_wiped_after_zero_copy_calls() {
        let Some(device) = device() else { return };
        let key = KeyMaterial::new(Algorithm::Blowfish, b"a key to forget").unwrap();
        let operation = GpuOperation::Ctr {
            counter: vec![1; 8],
            rule: CounterRule::Full,
        };
        let mut data = vec![0u8; 10_000];
        device
            .process_zero_copy(&key, &operation, &mut data)
            .unwrap();
        assert!(device_key_words(&device).iter().all(|&word| word == 0));
        let mut mapped = device.mapped_buffer(100).unwrap();
        mapped.process(&key, &operation).unwrap();
        assert!(device_key_words(&device).iter().all(|&word| word == 0));
    }

    #[test]
    fn mapped_buffers_are_zeroed_sized_in_blocks_and_bounded() {
        let Some(device) = device() else { return };
        let mut mapped = device.mapped_buffer(17).unwrap();
        assert_eq!((mapped.len(), mapped.capacity()), (17, 32));
        assert!(mapped.as_slice().iter().all(|&byte| byte == 0));
        mapped.set_len(32).unwrap();
        assert_eq!(mapped.as_mut_slice().len(), 32);
        assert!(mapped.set_len(33).is_err());
        let empty = device.mapped_buffer(0).unwrap();
        assert!(empty.is_empty() && empty.as_slice().is_empty());
        assert!(matches!(
            device.mapped_buffer(device.max_mapped_bytes() + 1),
            Err(GpuError::InvalidInput(_))
        ));
        // Shown in a reply, not checked: PoCL says yes.
        println!("host unified memory: {}", device.host_unified_memory());
    }
}
