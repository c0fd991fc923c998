//! Device memory that another library owns ([`ForeignDeviceMemory`]), processed where it
//! lies: the cipher kernels in place or into a second foreign range, GHASH partial sums
//! over it, and small reads and writes (a GCM tag). Results that belong to nobody yet go to
//! a [`DeviceAllocation`], which the caller may lend on (for example through DLPack).
//!
//! Every call checks what the driver can tell about the memory (the device the address is
//! on, and that the range lies inside one allocation), makes its stream wait for the
//! owner's stream when one is named, and returns only when the device work is complete,
//! so the owner may use the memory at once.

use std::sync::Arc;

use cudarc::driver::result;
use cudarc::driver::sys::{self, CUdeviceptr, CUevent_flags, CUevent_wait_flags, CUstream};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr};

use super::adapter::{launch_on, Cuda};
use super::devices::CudaResultExt;
use crate::ghash::{self, SegmentPlan};
use crate::host::arguments::{ghash_arguments, ghash_group_arguments, Argument};
use crate::host::{launch_shape, GpuHost, Launch, Shape, MAX_SLAB_BYTES};
use crate::{ForeignDeviceMemory, GpuError, GpuOperation, KeyMaterial, LaunchGeometry};

/// Device memory a [`CudaDevice`](super::CudaDevice) allocated for a result, freed on drop.
///
/// Before freeing, the drop waits for all work on the device's context (work that another
/// library queued on the memory after it was lent on, on a stream this crate does not
/// know, included), so the memory is never freed under a running kernel.
pub struct DeviceAllocation {
    slice: Option<CudaSlice<u8>>,
    address: u64,
    context: Arc<CudaContext>,
    length: usize,
    device: usize,
}

impl std::fmt::Debug for DeviceAllocation {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("DeviceAllocation")
            .field("address", &self.address())
            .field("length", &self.length)
            .field("device", &self.device)
            .finish()
    }
}

impl DeviceAllocation {
    crate::foreign::device_range_accessors!(
        "The device address of the first byte (0 for an empty allocation, which holds no \
         device memory)."
    );

    /// The memory, lent for as long as `self` is borrowed, to pass to the calls that take
    /// [`ForeignDeviceMemory`].
    pub fn as_foreign(&mut self) -> ForeignDeviceMemory<'_> {
        // SAFETY: the range is this allocation (or empty), live on `self.device` in its
        // primary context until `self` drops, which the borrow prevents while the
        // description exists; `&mut self` makes it the only one lent. Work on it is queued
        // on the device's stream 0, which every call uses, so no producer stream is needed.
        unsafe { ForeignDeviceMemory::new(self.address(), self.length, self.device, None) }
    }
}

impl Drop for DeviceAllocation {
    fn drop(&mut self) {
        if let Some(slice) = self.slice.take() {
            // Work queued on the memory by whoever it was lent to runs on streams we do not
            // know: wait for the whole context. An error here (a dead context) leaves
            // nothing to wait for; the free below is then what cudarc does on any drop.
            let _ = self
                .context
                .bind_to_thread()
                .and_then(|()| self.context.synchronize());
            drop(slice);
        }
    }
}

/// A foreign range seen as a cudarc slice for the span of one call, never freed: dropping
/// the guard leaks the slice back to its owner, even when unwinding.
struct Lent {
    slice: Option<CudaSlice<u8>>,
}

impl Lent {
    /// # Safety
    /// `address .. address + length` must be live device memory of `stream`'s context that
    /// nobody else touches while the guard lives (the [`ForeignDeviceMemory`] contract), and
    /// `length` must not be 0.
    unsafe fn new(stream: &Arc<CudaStream>, address: CUdeviceptr, length: usize) -> Self {
        // SAFETY: the caller's contract: a live allocation with room for `length` bytes.
        // u8 is valid for any bytes. The slice is leaked, never freed (see Drop).
        let slice = unsafe { stream.upgrade_device_ptr::<u8>(address, length) };
        Lent { slice: Some(slice) }
    }

    fn slice(&mut self) -> &mut CudaSlice<u8> {
        self.slice.as_mut().expect("present until dropped")
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Some(slice) = self.slice.take() {
            // Gives the address back without freeing it: the owner frees its memory.
            let _ = slice.leak();
        }
    }
}

impl GpuHost<Cuda> {
    /// The driver's ordinal of this device.
    pub fn ordinal(&self) -> usize {
        self.adapter.info.index
    }

    /// The `CUstream` handle (as an integer) that every call on device memory runs on: the
    /// stream to hand a producer (DLPack's `__dlpack__(stream=...)`) so that it orders its
    /// own work before parcrypt's. Valid while the device is open.
    pub fn stream_handle(&self) -> usize {
        self.adapter.streams[0].cu_stream() as usize
    }

    /// `length` bytes of zeroed device memory on this device, for a result. Complete when
    /// this returns.
    pub fn alloc_device(&self, length: usize) -> Result<DeviceAllocation, GpuError> {
        let stream = &self.adapter.streams[0];
        let (slice, address) = if length == 0 {
            (None, 0)
        } else {
            let slice = stream.alloc_zeros::<u8>(length).or_cuda("cuMemAlloc")?;
            let address = {
                let (pointer, _record) = slice.device_ptr(stream);
                pointer
            };
            stream.synchronize().or_cuda("cuStreamSynchronize")?;
            (Some(slice), address)
        };
        Ok(DeviceAllocation {
            slice,
            address,
            context: Arc::clone(&self.adapter.context),
            length,
            device: self.ordinal(),
        })
    }

    /// Runs `operation` under `key` from `input` into `output`, both device memory of this
    /// device that someone else owns: in place when they are the same range, else the input
    /// is copied into the output on the device first and processed there (`input` is left
    /// as it was). Nothing goes through the host. The lengths must be equal; ranges that
    /// overlap without being the same are refused. Supports what
    /// [`CudaDevice::process_device_buffer`](super::CudaDevice::process_device_buffer) does
    /// (ECB, CBC decryption, CTR, segmented CTR); an output that does not start on a
    /// block boundary is processed through an aligned scratch copy. Returns when the result
    /// is in `output` and the key is wiped from the device. On an error a separate output is
    /// left zeroed (or untouched); in place, the data may be partly processed.
    pub fn process_foreign(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        input: &ForeignDeviceMemory<'_>,
        output: &ForeignDeviceMemory<'_>,
    ) -> Result<(), GpuError> {
        operation.validate(key.algorithm(), input.len())?;
        if input.len() != output.len() {
            return Err(GpuError::InvalidInput(format!(
                "the input is {} bytes and the output {}: they must be equal",
                input.len(),
                output.len()
            )));
        }
        let in_place = input.same_as(output);
        if !in_place && input.overlaps(output) {
            return Err(GpuError::InvalidInput(
                "the output overlaps the input at another address: give the same memory (in \
                 place) or a separate range"
                    .into(),
            ));
        }
        if input.is_empty() {
            return Ok(());
        }
        self.check_foreign(input)?;
        self.check_foreign(output)?;
        self.wait_for_producers(&[input, output])?;
        let stream = &self.adapter.streams[0];
        let raw = stream.cu_stream();
        let block_size = key.algorithm().block_size() as u64;
        let length = input.len();
        if output.address().is_multiple_of(block_size) {
            if !in_place {
                // SAFETY: both ranges are live device memory of this context (the
                // ForeignDeviceMemory contract, checked by the driver above) of `length`
                // bytes, and they do not overlap (checked above).
                unsafe {
                    result::memcpy_dtod_async(output.address(), input.address(), length, raw)
                }
                .or_cuda("cuMemcpyDtoDAsync")?;
            }
            // SAFETY: `output` is live device memory of this context that nobody else
            // touches during this call (the ForeignDeviceMemory contract); not empty.
            let mut lent = unsafe { Lent::new(stream, output.address(), length) };
            let processed = self.process_device_buffer(key, operation, lent.slice());
            if processed.is_err() && !in_place {
                // The output may hold the copied input: leave zeros instead (best effort:
                // the error being reported is the one that matters).
                // SAFETY: `output` is `length` live bytes of this context (contract).
                let _ = unsafe { result::memset_d8_async(output.address(), 0, length, raw) };
                let _ = stream.synchronize();
            }
            return processed;
        }
        // A misaligned output: through an aligned scratch buffer, wiped afterwards.
        let mut scratch = stream.alloc_zeros::<u8>(length).or_cuda("cuMemAlloc")?;
        let scratch_address = {
            let (pointer, _record) = scratch.device_ptr(stream);
            pointer
        };
        // SAFETY: `input` is `length` live bytes of this context (contract) and the scratch
        // buffer is a fresh allocation of `length` bytes on this stream.
        unsafe { result::memcpy_dtod_async(scratch_address, input.address(), length, raw) }
            .or_cuda("cuMemcpyDtoDAsync")?;
        let processed = self.process_device_buffer(key, operation, &mut scratch);
        let copied = processed.and_then(|()| {
            // SAFETY: as above, from the scratch buffer into `output` (contract).
            unsafe { result::memcpy_dtod_async(output.address(), scratch_address, length, raw) }
                .or_cuda("cuMemcpyDtoDAsync")
        });
        let wiped = stream.memset_zeros(&mut scratch).or_cuda("cuMemsetD8Async");
        let waited = stream.synchronize().or_cuda("cuStreamSynchronize");
        copied.and(wiped).and(waited)
    }

    /// GHASH partial sums of foreign device memory (GCM ciphertext), computed on the device:
    /// `(partial, bytes)` for consecutive ranges that cover the data in order, each the
    /// GHASH of its range from a zero state (a final partial block zero-padded). Feed them
    /// to `GcmAccumulator::append`. `hash_key` is H = E_K(0^128); `segment_bytes` (a
    /// multiple of 16) is what one device thread hashes at most: data too short to give
    /// every multiprocessor two work-groups gets shorter segments (down to 1 KiB). Whole
    /// segments are joined per work-group on the device (`ghash_groups`), so a range is up
    /// to a work-group of segments (1 MiB at 4 KiB segments) and only one 16-byte sum per
    /// range comes back; a final short segment is a range of its own. Every range but the
    /// last is whole blocks.
    pub fn ghash_foreign(
        &self,
        hash_key: &[u8; 16],
        data: &ForeignDeviceMemory<'_>,
        segment_bytes: usize,
    ) -> Result<Vec<(u128, usize)>, GpuError> {
        // The caller's segment, checked: whole blocks, at most the largest launch.
        SegmentPlan::new(segment_bytes, MAX_SLAB_BYTES)?;
        let length = data.len();
        if length == 0 {
            return Ok(Vec::new());
        }
        self.check_foreign(data)?;
        self.wait_for_producers(&[data])?;
        let stream = &self.adapter.streams[0];
        let mut state = self.lock_state();
        let group = crate::host::ghash_group_size(state.kernels.ghash_groups_max_group_size);
        let segment_bytes = spread_segment_bytes(
            segment_bytes,
            length,
            group,
            self.info().multiprocessors as usize,
        );
        // The data is on the device already: a launch may cover the largest slab any
        // device takes (1 GiB), so that the device has a thread per segment to run.
        let plan = SegmentPlan::new(segment_bytes, MAX_SLAB_BYTES)?;
        let direct_bytes = direct_part(data.address(), length, segment_bytes);
        let staged_bytes = length - direct_bytes;
        // (device address, bytes) of each region to hash: in place, then from a zeroed
        // aligned copy.
        let mut regions = Vec::with_capacity(2);
        if direct_bytes > 0 {
            regions.push((data.address(), direct_bytes));
        }
        let mut staged = None;
        if staged_bytes > 0 {
            let buffer = stream
                .alloc_zeros::<u8>(staged_bytes.div_ceil(16) * 16)
                .or_cuda("cuMemAlloc")?;
            let pointer = {
                let (pointer, _record) = buffer.device_ptr(stream);
                pointer
            };
            // SAFETY: `data` is live device memory of this context (contract) with
            // `staged_bytes` bytes after `direct_bytes`; the buffer is a fresh allocation of
            // at least that many bytes on this stream.
            unsafe {
                result::memcpy_dtod_async(
                    pointer,
                    data.address() + direct_bytes as u64,
                    staged_bytes,
                    stream.cu_stream(),
                )
            }
            .or_cuda("cuMemcpyDtoDAsync")?;
            regions.push((pointer, staged_bytes));
            staged = Some(buffer);
        }
        // Every launch, planned first: (address, bytes, whole segments or one short one),
        // and the ranges their sums stand for, in order.
        let mut launches = Vec::new();
        let mut ranges = Vec::new();
        for &(address, bytes) in &regions {
            let mut offset = 0;
            while offset < bytes {
                let slab = plan.slab_bytes.min(bytes - offset);
                let whole = slab / segment_bytes * segment_bytes;
                let launch_address = address + offset as u64;
                if whole > 0 {
                    launches.push((launch_address, whole, GhashLaunch::Groups, ranges.len()));
                    let segments = whole / segment_bytes;
                    for first in (0..segments).step_by(group) {
                        ranges.push(segment_bytes * group.min(segments - first));
                    }
                } else {
                    launches.push((launch_address, slab, GhashLaunch::Short, ranges.len()));
                    ranges.push(slab);
                }
                offset += if whole > 0 { whole } else { slab };
            }
        }
        let sums = stream
            .alloc_zeros::<u8>(16 * ranges.len())
            .or_cuda("cuMemAlloc")?;
        let sums_address = {
            let (pointer, _record) = sums.device_ptr(stream);
            pointer
        };
        let geometry = LaunchGeometry {
            threads_per_group: state.geometry.threads_per_group,
            blocks_per_thread: 1,
        };
        let group_keys = ghash::GroupKeys::new(hash_key, group);
        let state = &mut *state;
        let (kernels, keys) = (&state.kernels, &state.keys);
        for (address, bytes, kind, first_sum) in launches {
            let blocks = bytes.div_ceil(16);
            let (kernel, arguments, shape, output) = match kind {
                GhashLaunch::Groups => {
                    let segments = bytes / segment_bytes;
                    (
                        &kernels.ghash_groups,
                        ghash_group_arguments(
                            Argument::Input,
                            Argument::Output,
                            blocks,
                            plan.blocks_per_segment(),
                            group_keys,
                            first_sum,
                        )?,
                        // Exactly `group` threads per work-group (the kernel's tree needs
                        // it), one work-group per `group` segments.
                        Shape {
                            group_size: group,
                            groups: segments.div_ceil(group),
                        },
                        sums_address,
                    )
                }
                GhashLaunch::Short => (
                    &kernels.ghash,
                    ghash_arguments(blocks, plan.blocks_per_segment(), group_keys.key)?,
                    launch_shape(geometry, 1, kernels.ghash_max_group_size),
                    sums_address + 16 * first_sum as u64,
                ),
            };
            let launch = Launch {
                kernel,
                keys,
                arguments: &arguments,
                shape,
                timed: false,
            };
            // SAFETY: the arguments are the kernel's own list. The input is `blocks` whole
            // 16-byte blocks, 16-byte aligned: inside `data` (contract; in place only when
            // aligned, and a final partial block only from the copy) or inside the
            // zero-padded staging buffer, which lives until after the synchronisation
            // below. `ghash_groups` writes its sums from index `first_sum` of the sums
            // buffer, `ghash_segments` its one sum at that index: the buffer has room for
            // every range planned above.
            unsafe { launch_on(stream, &launch, (address, output, None)) }?;
        }
        let mut sum_bytes = vec![0u8; sums.len()];
        let copied = stream
            .memcpy_dtoh(&sums, &mut sum_bytes)
            .or_cuda("cuMemcpyDtoHAsync");
        // A pageable destination: the copy is complete only after the stream is; the
        // staging buffer is freed only once the kernels that read it are done.
        let waited = stream.synchronize().or_cuda("cuStreamSynchronize");
        drop(staged);
        copied.and(waited)?;
        Ok(sum_bytes
            .chunks_exact(16)
            .zip(ranges)
            .map(|(pair, bytes)| {
                let high = u64::from_le_bytes(pair[..8].try_into().expect("8 bytes"));
                let low = u64::from_le_bytes(pair[8..].try_into().expect("8 bytes"));
                (ghash::partial_from_words(high, low), bytes)
            })
            .collect())
    }

    /// Copies `bytes` from the host into foreign device memory of the same length (a GCM
    /// tag, say). Complete when this returns.
    pub fn write_foreign(
        &self,
        memory: &ForeignDeviceMemory<'_>,
        bytes: &[u8],
    ) -> Result<(), GpuError> {
        let mismatch = || {
            format!(
                "{} bytes do not fit {} bytes of device memory",
                bytes.len(),
                memory.len()
            )
        };
        self.copy_foreign(
            memory,
            bytes.len(),
            mismatch,
            "cuMemcpyHtoDAsync",
            |stream| {
                // SAFETY: `memory` is `bytes.len()` live bytes of this context (contract);
                // `bytes` stays borrowed until `copy_foreign` has synchronised the stream.
                unsafe { result::memcpy_htod_async(memory.address(), bytes, stream) }
            },
        )
    }

    /// Copies foreign device memory into `bytes` on the host (a GCM tag, say). Complete when
    /// this returns.
    pub fn read_foreign(
        &self,
        memory: &ForeignDeviceMemory<'_>,
        bytes: &mut [u8],
    ) -> Result<(), GpuError> {
        let length = bytes.len();
        let mismatch = || {
            format!(
                "{} bytes of device memory do not fit {length} bytes",
                memory.len()
            )
        };
        self.copy_foreign(memory, length, mismatch, "cuMemcpyDtoHAsync", |stream| {
            // SAFETY: `memory` is `bytes.len()` live bytes of this context (contract);
            // `bytes` stays borrowed until `copy_foreign` has synchronised the stream.
            unsafe { result::memcpy_dtoh_async(bytes, memory.address(), stream) }
        })
    }

    /// What both foreign copies share: a `length` that is not `memory`'s is refused with
    /// `mismatch`; otherwise, once `memory` is known to be this device's and its producers
    /// are waited for, `copy` queues the copy (the driver call `call`) on stream 0, which is
    /// synchronised before this returns.
    fn copy_foreign(
        &self,
        memory: &ForeignDeviceMemory<'_>,
        length: usize,
        mismatch: impl FnOnce() -> String,
        call: &'static str,
        copy: impl FnOnce(CUstream) -> Result<(), cudarc::driver::DriverError>,
    ) -> Result<(), GpuError> {
        if memory.len() != length {
            return Err(GpuError::InvalidInput(mismatch()));
        }
        if length == 0 {
            return Ok(());
        }
        self.check_foreign(memory)?;
        self.wait_for_producers(&[memory])?;
        let stream = &self.adapter.streams[0];
        let copied = copy(stream.cu_stream()).or_cuda(call);
        let waited = stream.synchronize().or_cuda("cuStreamSynchronize");
        copied.and(waited)
    }

    /// Refuses memory of another device, and ranges the driver says are not inside one
    /// allocation of this device (where the driver can say; memory it cannot describe, such
    /// as some virtual-memory mappings, passes on the caller's word).
    fn check_foreign(&self, memory: &ForeignDeviceMemory<'_>) -> Result<(), GpuError> {
        let ordinal = self.ordinal();
        if memory.device() != ordinal {
            return Err(GpuError::InvalidInput(format!(
                "the memory is on CUDA device #{}, and this is device #{ordinal}",
                memory.device()
            )));
        }
        if memory.is_empty() {
            return Ok(());
        }
        self.adapter
            .context
            .bind_to_thread()
            .or_cuda("cuCtxSetCurrent")?;
        let mut device: i32 = -1;
        // SAFETY: the attribute is a 32-bit integer, written into `device`; the driver only
        // looks the address up.
        let asked = unsafe {
            sys::cuPointerGetAttribute(
                (&mut device as *mut i32).cast(),
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                memory.address(),
            )
        }
        .result();
        match asked {
            Ok(()) if usize::try_from(device).ok() != Some(ordinal) => {
                return Err(GpuError::InvalidInput(format!(
                    "the address {:#x} belongs to CUDA device #{device}, not #{ordinal}",
                    memory.address()
                )))
            }
            Ok(()) => {}
            Err(error) => {
                return Err(GpuError::InvalidInput(format!(
                    "the driver does not know the address {:#x} as device memory ({error:?})",
                    memory.address()
                )))
            }
        }
        let (mut base, mut size): (CUdeviceptr, usize) = (0, 0);
        // SAFETY: the driver writes the allocation's base and size into the two locals.
        let range = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, memory.address()) }
            .result();
        if range.is_ok() && memory.address() + memory.len() as u64 > base + size as u64 {
            return Err(GpuError::InvalidInput(format!(
                "{} bytes at {:#x} run past the end of their allocation ({size} bytes at \
                 {base:#x})",
                memory.len(),
                memory.address()
            )));
        }
        Ok(())
    }

    /// Makes stream 0 wait for the work queued so far on each memory's producer stream.
    fn wait_for_producers(&self, memories: &[&ForeignDeviceMemory<'_>]) -> Result<(), GpuError> {
        let stream = &self.adapter.streams[0];
        let mut waited: Vec<usize> = Vec::new();
        for producer in memories
            .iter()
            .filter_map(|memory| memory.producer_stream())
        {
            if waited.contains(&producer) || producer == self.stream_handle() {
                continue;
            }
            waited.push(producer);
            self.adapter
                .context
                .bind_to_thread()
                .or_cuda("cuCtxSetCurrent")?;
            let event = result::event::create(CUevent_flags::CU_EVENT_DISABLE_TIMING)
                .or_cuda("cuEventCreate")?;
            // SAFETY: `producer` is a live stream of this context or a special handle (the
            // ForeignDeviceMemory contract); the event was just created and is destroyed
            // below, after the wait has been enqueued (CUDA keeps what the wait needs).
            let ordered = unsafe {
                result::event::record(event, producer as CUstream)
                    .and_then(|()| {
                        result::stream::wait_event(
                            stream.cu_stream(),
                            event,
                            CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
                        )
                    })
                    .or_cuda("cuStreamWaitEvent")
            };
            // SAFETY: the event is ours and no longer needed by us.
            let destroyed = unsafe { result::event::destroy(event) }.or_cuda("cuEventDestroy");
            ordered.and(destroyed)?;
        }
        Ok(())
    }
}

/// The bytes of `length` at device address `address` that GHASH reads in place: everything
/// when the data starts on a 16-byte boundary and ends on one (its last segment may be
/// short); all but the segment of a final partial block when only the start is aligned;
/// nothing when the start is misaligned. The rest is hashed from a zeroed, aligned copy, so
/// that the kernels load whole aligned blocks.
fn direct_part(address: u64, length: usize, segment_bytes: usize) -> usize {
    if !address.is_multiple_of(16) {
        0
    } else if length.is_multiple_of(16) {
        length
    } else {
        length / segment_bytes * segment_bytes
    }
}

/// The least segment [`spread_segment_bytes`] goes down to: 64 blocks per thread, against
/// the 17 multiplications of a work-group's join.
const LEAST_SPREAD_SEGMENT_BYTES: usize = 1024;

/// The segment `ghash_foreign` hashes per thread for `length` bytes: the caller's, halved
/// (while it stays whole blocks and at least [`LEAST_SPREAD_SEGMENT_BYTES`]) until the data
/// gives every multiprocessor two work-groups of `group` threads: 64 MiB in 4 KiB segments
/// would be 64 work-groups, half an H100's multiprocessors idle.
fn spread_segment_bytes(
    requested: usize,
    length: usize,
    group: usize,
    multiprocessors: usize,
) -> usize {
    let mut segment = requested;
    while segment / 2 >= LEAST_SPREAD_SEGMENT_BYTES
        && segment.is_multiple_of(32)
        && length / (segment * group) < 2 * multiprocessors
    {
        segment /= 2;
    }
    segment
}

/// Which GHASH kernel one launch of [`CudaDevice::ghash_foreign`] runs.
#[derive(Clone, Copy)]
enum GhashLaunch {
    /// `ghash_groups` over whole segments: one sum per work-group.
    Groups,
    /// `ghash_segments` over one short final segment: one sum.
    Short,
}

#[cfg(test)]
mod tests {
    use super::{direct_part, spread_segment_bytes};

    #[test]
    fn segments_shrink_until_every_multiprocessor_has_two_work_groups() {
        // A GiB fills 132 multiprocessors twice over in 4 KiB segments of 256-thread groups.
        assert_eq!(spread_segment_bytes(4096, 1 << 30, 256, 132), 4096);
        // 64 MiB would be 64 groups: halved to 1 KiB (256 groups), no further.
        assert_eq!(spread_segment_bytes(4096, 64 << 20, 256, 132), 1024);
        assert_eq!(spread_segment_bytes(4096, 4096, 256, 132), 1024);
        // 128 MiB: 2 KiB gives 256 groups, 264 are wanted; 1 KiB gives 512.
        assert_eq!(spread_segment_bytes(4096, 128 << 20, 256, 132), 1024);
        assert_eq!(spread_segment_bytes(4096, 256 << 20, 256, 132), 2048);
        // Never below the caller's when that is small already, never off whole blocks.
        assert_eq!(spread_segment_bytes(1024, 4096, 256, 132), 1024);
        assert_eq!(spread_segment_bytes(48, 4096, 256, 132), 48);
        assert_eq!(spread_segment_bytes(3 * 1024, 4096, 256, 132), 1536);
    }

    #[test]
    fn the_direct_part_never_passes_the_data() {
        // Whole blocks: all of it in place, a short last segment included.
        assert_eq!(direct_part(0x1000, 16, 4096), 16);
        assert_eq!(direct_part(0x1000, 3 * 4096 + 16, 4096), 3 * 4096 + 16);
        assert_eq!(direct_part(0x1000, 2 * 4096, 4096), 2 * 4096);
        // A final partial block: its segment is staged.
        assert_eq!(direct_part(0x1000, 1, 4096), 0);
        assert_eq!(direct_part(0x1000, 4096 + 5, 4096), 4096);
        assert_eq!(direct_part(0x1000, (1 << 20) + 3, 4096), 1 << 20);
        // A misaligned start: everything staged.
        assert_eq!(direct_part(0x1005, 2 * 4096, 4096), 0);
        for length in 0..3 * 4096 + 40 {
            for address in [0x1000u64, 0x1008] {
                let bytes = direct_part(address, length, 4096);
                assert!(bytes <= length, "{length} at {address:#x}");
            }
        }
    }
}
