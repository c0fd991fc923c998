//! Zero-copy: host memory the kernels read and write in place of device buffers, as GPUs
//! that share the host's memory (integrated and embedded GPUs) are meant to be used. The
//! adapter allocates it
//! (OpenCL: `CL_MEM_ALLOC_HOST_PTR` buffers it maps; CUDA: page-locked memory mapped into
//! the device's address space) and runs one kernel on it; everything else is here.
//!
//! What is and is not zero-copy:
//! - [`MappedBuffer`]: the caller writes its data straight into the mapped memory
//!   ([`MappedBuffer::as_mut_slice`]) and reads the result from there. No byte is copied by
//!   this crate. Whether the driver copies depends on the device: where it shares the
//!   host's memory ([`GpuHost::host_unified_memory`]) mapped memory is the GPU's own; a
//!   discrete GPU reads it over the bus, or its driver moves it when it is (un)mapped.
//! - [`GpuHost::process_zero_copy`]: ordinary host data, copied into a mapped buffer and
//!   back out again by the host, to compare the paths on the same data.
//!
//! A mapped buffer is two halves (CBC decryption cannot run in place, and one layout serves
//! every mode). A call runs the kernel from the half
//! the host sees into the other, and shows that one from then on, so to the caller the
//! buffer is processed in place.

use std::time::{Duration, Instant};

use super::{grown_capacity, slab_size, Api, GpuHost, Launch, Outcome, State};
use crate::operation::{ModeArguments, SlabChain};
use crate::{GpuError, GpuOperation, KeyMaterial};

/// Mapped buffers hold whole 16-byte blocks, so that a final partial CTR block (or an 8-byte
/// Blowfish block) is a whole block inside the buffer when the kernel reads and writes it.
pub(crate) const BLOCK_BYTES: usize = 16;

/// Two halves of host memory mapped for a device; the front half is the one the host sees.
pub trait MappedHalves: Send + Sync {
    /// Bytes in each half: whole blocks, at least one.
    fn capacity(&self) -> usize;

    /// The front half as the host sees it: the whole capacity, or nothing where an earlier
    /// device error left the buffer without a mapping.
    fn bytes(&self) -> &[u8];

    /// As [`MappedHalves::bytes`], writable.
    fn bytes_mut(&mut self) -> &mut [u8];
}

/// No mapped memory: the halves of an API that maps none (HIP here) or is not in this build.
impl MappedHalves for super::Never {
    fn capacity(&self) -> usize {
        match *self {}
    }

    fn bytes(&self) -> &[u8] {
        match *self {}
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match *self {}
    }
}

/// A mapped launch's kernel time, where one was asked for.
pub type KernelTime = Outcome<Option<Duration>>;

/// What an API does with its mapped memory; the rest of zero-copy is written once here.
pub trait MappedMemory: Api {
    /// Two zeroed halves of at least `bytes` bytes each (whole blocks), the front one
    /// visible to the host.
    fn new_mapped(&self, bytes: usize) -> Outcome<Self::Mapped>;

    /// Whether the device shares the host's memory, where mapped memory is its own.
    fn host_unified_memory(&self) -> bool;

    /// The largest buffer the device allows (at most one launch is made per call).
    fn max_allocation_bytes(&self) -> u64;

    /// Runs the launch from the front half into the back half, waits for it and makes the
    /// back half the front; returns the kernel's own time when the launch asks for it.
    ///
    /// # Safety
    /// The launch's arguments must be its kernel's parameter list for at most the blocks
    /// the halves hold, and its keys hold the key the launch is for.
    unsafe fn run_mapped(&self, halves: &mut Self::Mapped, launch: Launch<'_, Self>) -> KernelTime;
}

fn lost_mapping() -> GpuError {
    GpuError::InvalidInput(
        "the mapped buffer lost its mapping after an earlier device error; allocate a new one"
            .into(),
    )
}

/// Segmented CTR uploads counter blocks per launch, which only the copy paths do.
fn refuse_segments<A: Api>(operation: &GpuOperation) -> Result<(), GpuError> {
    if matches!(operation, GpuOperation::CtrSegments { .. }) {
        return Err(GpuError::Unsupported {
            api: A::API,
            operation: "segmented CTR through mapped host memory",
        });
    }
    Ok(())
}

/// `len` bytes of host memory mapped for a device, which processes them in place with no
/// copy by this crate: write the data with [`MappedBuffer::as_mut_slice`], call
/// [`MappedBuffer::process`], read the result with [`MappedBuffer::as_slice`].
///
/// Made by [`GpuHost::mapped_buffer`]. A call runs one kernel over the whole length, so a
/// buffer holds at most [`GpuHost::max_mapped_bytes`]. The memory is zeroed when the buffer
/// is made; it is not wiped when the buffer is dropped (like the devices' own slab buffers,
/// it holds data, never keys).
pub struct MappedBuffer<'device, A: MappedMemory> {
    device: &'device GpuHost<A>,
    inner: A::Mapped,
    len: usize,
}

impl<A: MappedMemory> std::fmt::Debug for MappedBuffer<'_, A> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("MappedBuffer")
            .field("device", &self.device.name())
            .field("len", &self.len)
            .field("capacity", &self.inner.capacity())
            .field("mapped", &!self.inner.bytes().is_empty())
            .finish()
    }
}

impl<A: MappedMemory> MappedBuffer<'_, A> {
    /// Bytes the buffer shows and processes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer shows no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most bytes [`MappedBuffer::set_len`] allows: the length asked for, rounded up to
    /// whole 16-byte blocks.
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// Changes how many bytes the buffer shows and processes, within its capacity. Bytes
    /// that come into view hold whatever the memory last held (zero, or earlier data).
    pub fn set_len(&mut self, len: usize) -> Result<(), GpuError> {
        let capacity = self.capacity();
        if len > capacity {
            return Err(GpuError::InvalidInput(format!(
                "{len} bytes do not fit a mapped buffer of {capacity} bytes"
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
        self.inner.bytes_mut().get_mut(..len).unwrap_or(&mut [])
    }

    /// Runs `operation` under `key` over the buffer's bytes, in place as the caller sees
    /// them; returns when the result can be read and the device's copy of the key is
    /// wiped. ECB and CBC need whole blocks; CTR takes any length.
    pub fn process(&mut self, key: &KeyMaterial, operation: &GpuOperation) -> Result<(), GpuError> {
        self.run(key, operation, false).map(|_| ())
    }

    /// [`MappedBuffer::process`], timed: the kernel's time (OpenCL profiling, CUDA events
    /// around the launch; its loads and stores of mapped memory included) and the call's
    /// wall time, key upload and wipe included. Both are zero for an empty buffer.
    pub fn process_timed(
        &mut self,
        key: &KeyMaterial,
        operation: &GpuOperation,
    ) -> Result<(Duration, Duration), GpuError> {
        let started = Instant::now();
        let kernel = self.run(key, operation, true)?;
        let end_to_end = started.elapsed();
        match kernel {
            Some(kernel) => Ok((kernel, end_to_end)),
            None => Ok((Duration::ZERO, Duration::ZERO)),
        }
    }

    fn run(
        &mut self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        timed: bool,
    ) -> Result<Option<Duration>, GpuError> {
        operation.validate(key.algorithm(), self.len)?;
        refuse_segments::<A>(operation)?;
        if self.len == 0 {
            return Ok(None);
        }
        let len = self.len;
        let device = self.device;
        let inner = &mut self.inner;
        device.with_key(key, operation, |state| {
            let data = inner.bytes().get(..len).ok_or_else(lost_mapping)?;
            let mode = SlabChain::new(operation).next(data, key.algorithm().block_size());
            device.run_mapped(state, inner, key, operation, len, mode, timed)
        })
    }
}

impl<A: MappedMemory> GpuHost<A> {
    /// Whether the device shares the host's memory (OpenCL's
    /// `CL_DEVICE_HOST_UNIFIED_MEMORY`: integrated and embedded GPUs, and CPU devices such
    /// as PoCL; CUDA's integrated GPUs such as Jetson). Only there can mapped buffers save
    /// the copies; a discrete GPU (the H200) reads mapped memory over the bus. `false` also
    /// when the driver does not answer.
    pub fn host_unified_memory(&self) -> bool {
        self.adapter.host_unified_memory()
    }

    /// The largest [`MappedBuffer`]: one kernel launch (at most 1 GiB) within the
    /// device's largest buffer.
    pub fn max_mapped_bytes(&self) -> usize {
        slab_size(usize::MAX, self.adapter.max_allocation_bytes())
    }

    /// Mapped host memory for `len` bytes that this device processes in place; see
    /// [`MappedBuffer`]. [`GpuError::Unsupported`] where the device cannot map host memory.
    pub fn mapped_buffer(&self, len: usize) -> Result<MappedBuffer<'_, A>, GpuError> {
        let limit = self.max_mapped_bytes();
        if len > limit {
            return Err(GpuError::InvalidInput(format!(
                "a mapped buffer holds at most {limit} bytes on {}, asked for {len}",
                self.name()
            )));
        }
        Ok(MappedBuffer {
            device: self,
            inner: self.adapter.new_mapped(len)?,
            len,
        })
    }

    /// [`GpuHost::process`] through mapped host memory instead of device buffers: slab by
    /// slab, `data` is copied into a mapped buffer (kept for later calls), the kernel reads
    /// and writes mapped memory, and the result is copied back. The host still copies every
    /// byte in and out; only [`MappedBuffer`] avoids that. Same output as `process`; the
    /// key is wiped before this returns.
    pub fn process_zero_copy(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
    ) -> Result<(), GpuError> {
        operation.validate(key.algorithm(), data.len())?;
        refuse_segments::<A>(operation)?;
        if data.is_empty() {
            return Ok(());
        }
        let block_size = key.algorithm().block_size();
        // Slabs bound the mapped memory a call keeps, as they bound device memory in
        // `process`; whole 16-byte blocks, so CBC and CTR chain at their edges.
        let slab_bytes = self.slab_bytes;
        self.with_key(key, operation, |state| {
            let needed = data.len().min(slab_bytes).div_ceil(BLOCK_BYTES) * BLOCK_BYTES;
            let fits = state
                .zero_copy
                .as_ref()
                .is_some_and(|mapped| mapped.capacity() >= needed && !mapped.bytes().is_empty());
            if !fits {
                // Dropped first, so that its memory can be reused.
                state.zero_copy = None;
                state.zero_copy = Some(
                    self.adapter
                        .new_mapped(grown_capacity(needed, slab_bytes))?,
                );
            }
            let mut mapped = state.zero_copy.take().expect("allocated above");
            let mut chain = SlabChain::new(operation);
            let mut outcome = Ok(());
            for slab in data.chunks_mut(slab_bytes) {
                let length = slab.len();
                let Some(front) = mapped.bytes_mut().get_mut(..length) else {
                    outcome = Err(lost_mapping());
                    break;
                };
                A::copy_host(front, slab);
                let mode = chain.next(slab, block_size);
                outcome = self
                    .run_mapped(state, &mut mapped, key, operation, length, mode, false)
                    .map(|_| ());
                if outcome.is_err() {
                    break;
                }
                A::copy_host(slab, &mapped.bytes()[..length]);
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
        state: &mut State<A>,
        mapped: &mut A::Mapped,
        key: &KeyMaterial,
        operation: &GpuOperation,
        length: usize,
        mode: ModeArguments,
        timed: bool,
    ) -> KernelTime {
        let (kernel, geometry) = state.cipher_kernel(key, operation, length);
        let blocks = length.div_ceil(key.algorithm().block_size());
        debug_assert!(blocks * key.algorithm().block_size() <= mapped.capacity());
        let arguments =
            super::arguments::cipher_arguments(kernel.segmented, key, blocks, mode, false)?;
        let launch = Launch {
            kernel: &kernel.kernel,
            keys: &state.keys,
            arguments: &arguments,
            shape: kernel.shape(geometry, blocks),
            timed,
        };
        // SAFETY: the arguments are the kernel's own list for `blocks` blocks, which the
        // halves hold (`length` is within their capacity: checked by the callers), and the
        // keys were uploaded for `key` by `with_key`.
        unsafe { self.adapter.run_mapped(mapped, launch) }
    }

    /// Locks the device, uploads `key`, runs `work`, waits for every queue and wipes the
    /// key whatever happened.
    pub(crate) fn with_key<T>(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        work: impl FnOnce(&mut State<A>) -> Result<T, GpuError>,
    ) -> Result<T, GpuError> {
        let mut state = self.lock_state();
        let decrypting = operation.kernel_operation().decrypts();
        let outcome = self
            .adapter
            .upload_key(&mut state.keys, key, decrypting)
            .and_then(|()| work(&mut state));
        // Host memory is in flight whether or not a step failed: the adapter returns from the
        // wait only once no copy can touch it.
        let waited = self.adapter.wait(true);
        let wiped = self.adapter.wipe_key(&mut state.keys, key);
        match (outcome, waited, wiped) {
            (Ok(value), Ok(()), Ok(())) => Ok(value),
            (Err(error), _, _) | (Ok(_), Err(error), _) | (Ok(_), Ok(()), Err(error)) => Err(error),
        }
    }
}
