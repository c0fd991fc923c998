//! Zero-copy in CUDA: page-locked host memory mapped into the device's address space
//! (`cuMemHostAlloc` with `CU_MEMHOSTALLOC_DEVICEMAP`, its device address from
//! `cuMemHostGetDevicePointer`), which the kernels read and write directly: no copy to or
//! from device memory is made, every load and store of the kernel crosses the bus instead.
//! The shared host ([`crate::host::zero_copy`]) does the rest.
//!
//! On a discrete GPU (the H200) the kernel's loads and stores then run at the bus's speed
//! rather than device memory's: the data still crosses the bus once each way, only without
//! separate copies and their latency, so whether it beats copying depends on the size and
//! the machine (benchmark scenario s4 measures it). On GPUs that share the host's memory
//! (Jetson and other integrated GPUs) mapped memory is the GPU's own memory.

use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::sys::{
    self, CUdevice_attribute, CUdeviceptr, CUevent_flags, CU_MEMHOSTALLOC_DEVICEMAP,
    CU_MEMHOSTALLOC_PORTABLE,
};
use cudarc::driver::{CudaContext, PinnedHostSlice};

use super::adapter::{alloc_pinned_zeroed_with_flags, launch_on, Cuda};
use super::devices::CudaResultExt;
use crate::host::zero_copy::{KernelTime, MappedHalves, MappedMemory, BLOCK_BYTES};
use crate::host::{Api, Launch, Outcome};
use crate::GpuError;

/// One half: the pinned allocation (which frees itself), its host address and the address
/// the device reaches it at.
struct Half {
    host: NonNull<u8>,
    device: CUdeviceptr,
    // Owns the memory; never handed to cudarc's copies, so its event is never recorded.
    _pinned: PinnedHostSlice<u8>,
}

/// Two halves of mapped, page-locked host memory; the front half is the one the host sees.
pub struct HostMapped {
    halves: [Half; 2],
    front: usize,
    /// Bytes in each half: whole blocks, at least one.
    capacity: usize,
}

// SAFETY: the host pointers address memory the pinned allocations own, reached only through
// `&self` (shared bytes) and `&mut self` (exclusive bytes); kernels touch it only inside
// calls that hold `&mut self` and wait for them. Pinned allocations may be freed from any
// thread.
unsafe impl Send for HostMapped {}
// SAFETY: as above; `&HostMapped` gives nothing but a shared byte slice.
unsafe impl Sync for HostMapped {}

impl HostMapped {
    /// Two zeroed halves of at least `bytes` bytes each, mapped for the device.
    fn new(context: &Arc<CudaContext>, bytes: usize) -> Result<Self, GpuError> {
        let can_map = context
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)
            .or_cuda("cuDeviceGetAttribute")?;
        if can_map == 0 {
            return Err(GpuError::Unsupported {
                api: crate::GpuApi::Cuda,
                operation: "mapped (zero-copy) host memory",
            });
        }
        let capacity = bytes.div_ceil(BLOCK_BYTES).max(1) * BLOCK_BYTES;
        let half = || -> Result<Half, GpuError> {
            // Portable as the other pinned buffers; not write-combined, since the host
            // reads the results back out of it.
            let mut pinned = alloc_pinned_zeroed_with_flags::<u8>(
                context,
                capacity,
                CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE,
            )?;
            let host = pinned.as_mut_ptr().or_cuda("cuEventSynchronize")?;
            let host = NonNull::new(host).ok_or(GpuError::InvalidInput(
                "cuMemHostAlloc returned a null pointer".into(),
            ))?;
            context.bind_to_thread().or_cuda("cuCtxSetCurrent")?;
            let mut device: CUdeviceptr = 0;
            // SAFETY: `host` starts an allocation made by cuMemHostAlloc with DEVICEMAP in
            // this context, which is current; the driver writes one device address.
            unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host.as_ptr().cast(), 0) }
                .result()
                .or_cuda("cuMemHostGetDevicePointer")?;
            Ok(Half {
                host,
                device,
                _pinned: pinned,
            })
        };
        Ok(HostMapped {
            halves: [half()?, half()?],
            front: 0,
            capacity,
        })
    }
}

impl MappedHalves for HostMapped {
    fn capacity(&self) -> usize {
        self.capacity
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `capacity` zeroed-at-allocation bytes owned by the half's pinned buffer,
        // alive as long as `self`; no kernel runs on them outside `run_mapped`, which takes
        // `&mut self` and waits for the kernel before returning.
        unsafe { std::slice::from_raw_parts(self.halves[self.front].host.as_ptr(), self.capacity) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `&mut self` makes the slice the only access.
        unsafe {
            std::slice::from_raw_parts_mut(self.halves[self.front].host.as_ptr(), self.capacity)
        }
    }
}

impl MappedMemory for Cuda {
    fn new_mapped(&self, bytes: usize) -> Outcome<HostMapped> {
        HostMapped::new(&self.context, bytes)
    }

    /// `CU_DEVICE_ATTRIBUTE_INTEGRATED`: Jetson and other integrated GPUs; `false` on
    /// discrete GPUs such as the H200, and when the driver does not answer.
    fn host_unified_memory(&self) -> bool {
        self.context
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED)
            .is_ok_and(|integrated| integrated != 0)
    }

    /// CUDA names no largest allocation: one launch (1 GiB) is the bound.
    fn max_allocation_bytes(&self) -> u64 {
        u64::MAX
    }

    /// One launch on stream 0 from the front half into the back half, between two timing
    /// events when `timed`; waits for every stream, then shows the back half.
    unsafe fn run_mapped(&self, mapped: &mut HostMapped, launch: Launch<'_, Self>) -> KernelTime {
        // CU_EVENT_DEFAULT: cudarc's default events do not record time.
        let new_event = || {
            self.context
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .or_cuda("cuEventCreate")
        };
        let timing = match launch.timed {
            true => Some((new_event()?, new_event()?)),
            false => None,
        };
        let stream = &self.streams[0];
        let input = mapped.halves[mapped.front].device;
        let output = mapped.halves[1 - mapped.front].device;
        let started = match &timing {
            Some((start, _)) => start.record(stream).or_cuda("cuEventRecord"),
            None => Ok(()),
        };
        // The kernel reads one half and writes the other straight in host memory: two
        // distinct mapped allocations of `capacity` bytes each, at least the launch's blocks
        // (the caller's guarantee), alive as long as `mapped`, which stays borrowed until
        // the streams are synchronised below.
        let launched = started
            .and_then(|()| {
                // SAFETY: as above, and the arguments are the kernel's own list (the
                // caller's guarantee), with no counter buffer (mapped paths refuse
                // segmented CTR).
                unsafe { launch_on(stream, &launch, (input, output, None)) }
            })
            .and_then(|()| match &timing {
                Some((_, end)) => end.record(stream).or_cuda("cuEventRecord"),
                None => Ok(()),
            });
        // Host memory is in flight whether or not a later step failed: the wait returns only
        // once no copy can touch it (see `Cuda::wait`).
        let waited = self.wait(true);
        launched?;
        waited?;
        mapped.front = 1 - mapped.front;
        let Some((start, end)) = timing else {
            return Ok(None);
        };
        let milliseconds = start.elapsed_ms(&end).or_cuda("cuEventElapsedTime")?;
        Ok(Some(Duration::from_secs_f64(
            f64::from(milliseconds.max(0.0)) / 1e3,
        )))
    }
}
