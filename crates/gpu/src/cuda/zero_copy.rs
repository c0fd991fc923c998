//! Zero-copy on CUDA: page-locked host memory mapped into the device's address space
//! (`cuMemHostAlloc` with `CU_MEMHOSTALLOC_DEVICEMAP`, its device address from
//! `cuMemHostGetDevicePointer`), which the kernels read and write directly: no copy to or
//! from device memory is made, every load and store of the kernel crosses the bus instead.
//!
//! What is and is not zero-copy:
//! - [`MappedBuffer`]: the caller writes its data straight into the mapped memory and reads
//!   the result from there; nothing is copied.
//! - [`CudaDevice::process_zero_copy`]: ordinary host data, copied by the host into a
//!   mapped buffer and back out again, to compare the paths on the same data.
//!
//! On a discrete GPU (the H200) the kernel's loads and stores then run at the bus's speed
//! rather than device memory's: the data still crosses the bus once each way, only without
//! separate copies and their latency, so whether it beats copying depends on the size and
//! the machine (benchmark scenario s4 measures it). On GPUs that share the host's memory
//! ([`CudaDevice::host_unified_memory`]: Jetson and other integrated GPUs) mapped memory is
//! the GPU's own memory.
//!
//! As on OpenCL, the kernels' input and output are `restrict` pointers, so a mapped buffer
//! is two halves: a call runs the kernel from the half the host sees into the other, and
//! shows that one from then on.

use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::sys::{
    self, CUdevice_attribute, CUdeviceptr, CUevent_flags, CU_MEMHOSTALLOC_DEVICEMAP,
    CU_MEMHOSTALLOC_PORTABLE,
};
use cudarc::driver::{CudaContext, CudaEvent, PinnedHostSlice};

use super::devices::CudaResultExt;
use super::{
    alloc_pinned_zeroed_with_flags, copy_in_parallel, launch_kernel, CudaDevice, DeviceState,
    KeyArguments,
};
use crate::host::{grown_capacity, slab_size};
use crate::kernel_source::CipherFamily;
use crate::operation::{ModeArguments, SlabChain};
use crate::{tuning, GpuError, GpuOperation, KeyMaterial};

/// Mapped buffers hold whole 16-byte blocks, so that a final partial CTR block is a whole
/// block inside the buffer when the kernel reads and writes it.
const BLOCK_BYTES: usize = 16;

/// One half: the pinned allocation (which frees itself), its host address and the address
/// the device reaches it at.
struct Half {
    host: NonNull<u8>,
    device: CUdeviceptr,
    // Owns the memory; never handed to cudarc's copies, so its event is never recorded.
    _pinned: PinnedHostSlice<u8>,
}

/// Two halves of mapped, page-locked host memory; the front half is the one the host sees.
pub(super) struct HostMapped {
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

    fn capacity(&self) -> usize {
        self.capacity
    }

    /// The front half as the host sees it: `capacity` bytes.
    fn bytes(&self) -> &[u8] {
        // SAFETY: `capacity` zeroed-at-allocation bytes owned by the half's pinned buffer,
        // alive as long as `self`; no kernel runs on them outside `run`, which takes
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

/// `len` bytes of mapped, page-locked host memory that a [`CudaDevice`] processes in place
/// with no copy: write the data with [`MappedBuffer::as_mut_slice`], call
/// [`MappedBuffer::process`], read the result with [`MappedBuffer::as_slice`].
///
/// Made by [`CudaDevice::mapped_buffer`]. A call runs one kernel over the whole length, so a
/// buffer holds at most [`CudaDevice::max_mapped_bytes`]. The memory is zeroed when the
/// buffer is made; it is not wiped when the buffer is dropped (it holds data, never keys).
pub struct MappedBuffer<'device> {
    device: &'device CudaDevice,
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

    pub fn as_slice(&self) -> &[u8] {
        &self.inner.bytes()[..self.len]
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut self.inner.bytes_mut()[..len]
    }

    /// Runs `operation` under `key` over the buffer's bytes, in place as the caller sees
    /// them; returns when the result can be read and the device's copy of the key is
    /// wiped. ECB and CBC need whole blocks; CTR takes any length.
    pub fn process(&mut self, key: &KeyMaterial, operation: &GpuOperation) -> Result<(), GpuError> {
        self.run(key, operation, None)
    }

    /// [`MappedBuffer::process`], timed: the kernel's time (CUDA events around the launch,
    /// which includes its loads and stores over the bus) and the call's wall time, key
    /// upload and wipe included. Both are zero for an empty buffer.
    pub fn process_timed(
        &mut self,
        key: &KeyMaterial,
        operation: &GpuOperation,
    ) -> Result<(Duration, Duration), GpuError> {
        if self.len == 0 {
            operation.validate(key.algorithm(), 0)?;
            return Ok((Duration::ZERO, Duration::ZERO));
        }
        // CU_EVENT_DEFAULT: cudarc's default events do not record time.
        let new_event = || {
            self.device
                .context
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .or_cuda("cuEventCreate")
        };
        let events = (new_event()?, new_event()?);
        let started = Instant::now();
        self.run(key, operation, Some(&events))?;
        let end_to_end = started.elapsed();
        let milliseconds = events
            .0
            .elapsed_ms(&events.1)
            .or_cuda("cuEventElapsedTime")?;
        let kernel = Duration::from_secs_f64(f64::from(milliseconds.max(0.0)) / 1e3);
        Ok((kernel, end_to_end))
    }

    fn run(
        &mut self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        timing: Option<&(CudaEvent, CudaEvent)>,
    ) -> Result<(), GpuError> {
        operation.validate(key.algorithm(), self.len)?;
        refuse_segments(operation)?;
        if self.len == 0 {
            return Ok(());
        }
        let len = self.len;
        let device = self.device;
        let inner = &mut self.inner;
        device.with_key(key, operation, |state| {
            let block_size = key.algorithm().block_size();
            let mode = SlabChain::new(operation).next(&inner.bytes()[..len], block_size);
            device.run_mapped(state, inner, key, operation, len, mode, timing)
        })
    }
}

/// Segmented CTR uploads counter blocks per launch, which only the copy paths do.
fn refuse_segments(operation: &GpuOperation) -> Result<(), GpuError> {
    if matches!(operation, GpuOperation::CtrSegments { .. }) {
        return Err(GpuError::Unsupported {
            api: crate::GpuApi::Cuda,
            operation: "segmented CTR through mapped host memory",
        });
    }
    Ok(())
}

impl CudaDevice {
    /// Whether the GPU shares the host's memory (`CU_DEVICE_ATTRIBUTE_INTEGRATED`: Jetson
    /// and other integrated GPUs), where mapped host memory is the GPU's own memory and
    /// zero-copy saves the copies outright. `false` on discrete GPUs such as the H200, and
    /// when the driver does not answer.
    pub fn host_unified_memory(&self) -> bool {
        self.context
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED)
            .is_ok_and(|integrated| integrated != 0)
    }

    /// The largest [`MappedBuffer`]: one kernel launch (at most 1 GiB).
    pub fn max_mapped_bytes(&self) -> usize {
        slab_size(usize::MAX, u64::MAX)
    }

    /// Mapped, page-locked host memory for `len` bytes that this device processes in place;
    /// see [`MappedBuffer`]. [`GpuError::Unsupported`] where the GPU cannot map host memory.
    pub fn mapped_buffer(&self, len: usize) -> Result<MappedBuffer<'_>, GpuError> {
        let limit = self.max_mapped_bytes();
        if len > limit {
            return Err(GpuError::InvalidInput(format!(
                "a mapped buffer holds at most {limit} bytes, asked for {len}"
            )));
        }
        Ok(MappedBuffer {
            device: self,
            inner: HostMapped::new(&self.context, len)?,
            len,
        })
    }

    /// [`CudaDevice::process`] through mapped host memory instead of device buffers: slab
    /// by slab, `data` is copied into a mapped buffer (kept for later calls), the kernel
    /// reads and writes it over the bus, and the result is copied back. The host still
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
        let slab_bytes = self.slab_bytes;
        self.with_key(key, operation, |state| {
            let needed = data.len().min(slab_bytes).div_ceil(BLOCK_BYTES) * BLOCK_BYTES;
            if state
                .zero_copy
                .as_ref()
                .is_some_and(|mapped| mapped.capacity() < needed)
            {
                // Freed first, so that its memory can be reused.
                state.zero_copy = None;
            }
            let mut mapped = match state.zero_copy.take() {
                Some(mapped) => mapped,
                None => HostMapped::new(&self.context, grown_capacity(needed, slab_bytes))?,
            };
            let mut chain = SlabChain::new(operation);
            let mut outcome = Ok(());
            for slab in data.chunks_mut(slab_bytes) {
                let length = slab.len();
                copy_in_parallel(&mut mapped.bytes_mut()[..length], slab);
                let mode = chain.next(slab, block_size);
                outcome = self.run_mapped(state, &mut mapped, key, operation, length, mode, None);
                if outcome.is_err() {
                    break;
                }
                copy_in_parallel(slab, &mapped.bytes()[..length]);
            }
            state.zero_copy = Some(mapped);
            outcome
        })
    }

    /// Runs one kernel over the first `length` bytes of `mapped`'s front half into its back
    /// half, waits for it, and makes the back half the front.
    #[allow(clippy::too_many_arguments)]
    fn run_mapped(
        &self,
        state: &mut DeviceState,
        mapped: &mut HostMapped,
        key: &KeyMaterial,
        operation: &GpuOperation,
        length: usize,
        mode: ModeArguments,
        timing: Option<&(CudaEvent, CudaEvent)>,
    ) -> Result<(), GpuError> {
        let DeviceState {
            geometry,
            tuning,
            round_keys,
            key_tables,
            aes_tables,
            ..
        } = state;
        let kernel_operation = operation.kernel_operation();
        let arguments = KeyArguments {
            key,
            round_keys,
            key_tables,
            aes_tables,
            geometry: tuning::choose_geometry(
                *geometry,
                tuning.as_deref(),
                key.algorithm(),
                kernel_operation,
                length,
            ),
        };
        let kernel = self.kernel(CipherFamily::of(key.algorithm()), kernel_operation);
        let blocks = length.div_ceil(key.algorithm().block_size());
        debug_assert!(blocks * key.algorithm().block_size() <= mapped.capacity);
        let stream = &self.streams[0];
        let input = mapped.halves[mapped.front].device;
        let output = mapped.halves[1 - mapped.front].device;
        let started = match timing {
            Some((start, _)) => start.record(stream).or_cuda("cuEventRecord"),
            None => Ok(()),
        };
        // The kernel reads one half and writes the other straight in host memory: two
        // distinct mapped allocations of `capacity >= blocks` whole blocks each, alive as
        // long as `mapped`, which stays borrowed until the streams are synchronised below.
        let launched = started
            .and_then(|()| launch_kernel(stream, kernel, &arguments, input, output, blocks, mode))
            .and_then(|()| match timing {
                Some((_, end)) => end.record(stream).or_cuda("cuEventRecord"),
                None => Ok(()),
            });
        // Host memory is in flight whether or not a later step failed: a failed wait aborts.
        let waited = self.wait_for_streams(true);
        launched?;
        waited?;
        mapped.front = 1 - mapped.front;
        Ok(())
    }

    /// Locks the device, uploads `key`, runs `work`, waits for every stream and wipes the
    /// key whatever happened.
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
        let waited = self.wait_for_streams(true);
        let wiped = self.wipe_key(&mut state);
        match (outcome, waited, wiped) {
            (Ok(value), Ok(()), Ok(())) => Ok(value),
            (Err(error), _, _) | (Ok(_), Err(error), _) | (Ok(_), Ok(()), Err(error)) => Err(error),
        }
    }
}
