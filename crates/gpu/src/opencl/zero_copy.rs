//! Zero-copy in OpenCL: buffers in host-visible memory (`CL_MEM_ALLOC_HOST_PTR`) that the
//! host reaches by mapping them; the shared host ([`crate::host::zero_copy`]) does the rest.
//! Where the device shares the host's memory (PoCL, integrated and embedded GPUs) mapping
//! and unmapping hand the same memory back and forth; a discrete GPU's driver may instead
//! move the data over the bus when the buffer is unmapped and mapped again.
//!
//! A call unmaps the front half, runs the kernel from it into the back half, maps that one
//! and shows it from then on.

use std::ptr::{self, NonNull};

use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::memory::{
    cl_mem, Buffer, ClMem, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_WRITE,
};
use opencl3::types::CL_BLOCKING;

use super::adapter::{create_queue, enqueue_kernel, OpenCl};
use crate::error::ApiResultExt;
use crate::host::zero_copy::{KernelTime, MappedHalves, MappedMemory, BLOCK_BYTES};
use crate::host::{Api, Launch, Outcome};
use crate::GpuError;

/// Whether `device` says it shares the host's memory; `false` when the driver does not
/// answer (the query is deprecated since OpenCL 2.0, though drivers still answer it).
pub(super) fn reports_unified_memory(device: &Device) -> bool {
    device.host_unified_memory().unwrap_or(false)
}

/// Two halves of host-visible device memory with a queue of their own; the front half is
/// mapped for the host between calls, the back half is where the next kernel writes.
pub struct HostMapped {
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
}

impl Drop for HostMapped {
    fn drop(&mut self) {
        // Unmapped before the halves are released; errors leave nothing to do, the release
        // that follows frees the memory either way.
        let _ = self.unmap_front();
        let _ = self.queue.finish();
    }
}

impl MappedHalves for HostMapped {
    fn capacity(&self) -> usize {
        self.capacity
    }

    fn bytes(&self) -> &[u8] {
        match self.mapped {
            // SAFETY: a mapping of `capacity` bytes that stays valid until it is unmapped,
            // which takes `&mut self`; every byte was zeroed when the buffer was made or
            // written by a kernel since, and no kernel writes the front half while it is
            // mapped (kernels run only inside `run_mapped`, on the unmapped halves).
            Some(pointer) => unsafe { std::slice::from_raw_parts(pointer.as_ptr(), self.capacity) },
            None => &[],
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match self.mapped {
            // SAFETY: as in `bytes`, and `&mut self` makes the slice the only access.
            Some(pointer) => unsafe {
                std::slice::from_raw_parts_mut(pointer.as_ptr(), self.capacity)
            },
            None => &mut [],
        }
    }
}

impl MappedMemory for OpenCl {
    fn new_mapped(&self, bytes: usize) -> Outcome<HostMapped> {
        HostMapped::new(&self.context, &self.device, bytes)
    }

    fn host_unified_memory(&self) -> bool {
        self.host_unified_memory
    }

    fn max_allocation_bytes(&self) -> u64 {
        self.info.max_allocation_bytes
    }

    /// Unmaps the front half, runs the kernel from it into the back half on the buffer's
    /// own queue, and maps the back half as the new front, which waits for the kernel.
    unsafe fn run_mapped(&self, mapped: &mut HostMapped, launch: Launch<'_, Self>) -> KernelTime {
        if mapped.mapped.is_none() {
            return Err(GpuError::InvalidInput(
                "the mapped buffer lost its mapping after an earlier device error; allocate \
                 a new one"
                    .into(),
            ));
        }
        mapped.unmap_front()?;
        let input = mapped.halves[mapped.front].get();
        let output = mapped.halves[1 - mapped.front].get();
        // SAFETY: two different buffers of the device's context, each of `capacity` bytes,
        // at least the launch's blocks (the caller's guarantee); the halves live as long as
        // `mapped`, which stays borrowed until the blocking map below has waited for the
        // kernel, and neither half is mapped while it runs.
        let launched = unsafe { enqueue_kernel(&mapped.queue, &launch, (input, output, None)) };
        let event = match launched {
            Ok(event) => event,
            Err(error) => {
                // Nothing ran: the input half is still the front, mapped again if possible.
                let _ = mapped.map_front();
                return Err(error);
            }
        };
        mapped.front = 1 - mapped.front;
        if let Err(error) = mapped.map_front() {
            // Waited for, so that no kernel is left running on memory this buffer owns;
            // the buffer has no mapping from now on.
            let _ = mapped.queue.finish();
            return Err(error);
        }
        if !launch.timed {
            return Ok(None);
        }
        OpenCl::kernel_time(std::slice::from_ref(&event)).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{KEY_TABLE_WORDS, ROUND_KEY_WORDS};
    use crate::opencl::OpenClDevice;
    use crate::{GpuOperation, KeyMaterial, OpenOptions};
    use parcrypt_ciphers::Algorithm;
    use parcrypt_modes::ctr::CounterRule;

    /// Device 0 with small slabs, or `None` after saying why (a failure under CI).
    fn device() -> Option<OpenClDevice> {
        crate::opencl::tests::first_device()?;
        let options = OpenOptions {
            slab_bytes: 4096,
            ..OpenOptions::default()
        };
        Some(OpenClDevice::open_with(0, &options).unwrap())
    }

    fn device_key_words(device: &OpenClDevice) -> Vec<u32> {
        let state = device.lock_state();
        let mut words = vec![1u32; ROUND_KEY_WORDS + KEY_TABLE_WORDS];
        let (round_keys, key_tables) = words.split_at_mut(ROUND_KEY_WORDS);
        // SAFETY: blocking reads of whole buffers into slices of their sizes.
        unsafe {
            device.adapter.queues[0]
                .enqueue_read_buffer(&state.keys.round_keys, CL_BLOCKING, 0, round_keys, &[])
                .unwrap();
            device.adapter.queues[0]
                .enqueue_read_buffer(&state.keys.key_tables, CL_BLOCKING, 0, key_tables, &[])
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
