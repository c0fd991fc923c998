//! The shared host's calls ([`Api`]) in HIP, through this crate's own function table
//! ([`super::library`]): [`STREAMS`] streams whose slabs are staged through pinned buffers
//! (`hipHostMalloc`, the memory asynchronous copies need), the key uploaded from pinned memory
//! on stream 0 and fenced for the others with an event, kernels launched with
//! `hipModuleLaunchKernel` and their arguments resolved by the host
//! ([`ArgumentList::values`](crate::host::arguments::ArgumentList::values)).
//!
//! Nothing here has run on an AMD GPU: it is written against ROCm's headers and compiled,
//! and every call's result is checked, but no test has exercised it on a device.

use std::ffi::{c_int, c_void};
use std::ptr::NonNull;
use std::time::Duration;

use zeroize::Zeroize;

use super::library::{Handle, Runtime};
use super::HipDeviceInfo;
use crate::host::arguments::{ArgumentValue, LaunchBuffers, MOST_ARGUMENTS};
use crate::host::stream_slot::{SlotBuffer, StreamKeys, StreamSlot};
use crate::host::{
    busy_nanoseconds, Api, GpuHost, Launch, Never, Outcome, Staging, TimingJob, ROUND_KEY_WORDS,
};
use crate::{GpuApi, GpuError, KeyMaterial, TableCopies};

/// Streams, each with its own slab buffers, that consecutive slabs rotate over.
pub const STREAMS: usize = 3;

/// `hipStreamNonBlocking`: the streams do not wait for the null stream.
const STREAM_NON_BLOCKING: u32 = 1;
/// `hipEventDefault`, which records time; `hipEventDisableTiming` for the key fence.
const EVENT_DEFAULT: u32 = 0;
const EVENT_DISABLE_TIMING: u32 = 2;
/// `hipHostMallocPortable`: pinned for every device, not only the current one.
const HOST_MALLOC_PORTABLE: u32 = 1;

/// Device memory from `hipMalloc`, freed when dropped.
pub struct DeviceMemory {
    runtime: &'static Runtime,
    pointer: NonNull<c_void>,
    bytes: usize,
}

// SAFETY: a device address, valid from any host thread; the HIP runtime is thread-safe and
// the memory is freed once, by the owner.
unsafe impl Send for DeviceMemory {}

impl DeviceMemory {
    /// `bytes` (at least one) of device memory on the current device, zeroed on `stream`.
    pub(crate) fn zeroed(
        runtime: &'static Runtime,
        bytes: usize,
        stream: Handle,
    ) -> Result<Self, GpuError> {
        let bytes = bytes.max(1);
        let mut pointer: *mut c_void = std::ptr::null_mut();
        // SAFETY: the runtime writes one device address to a live local.
        runtime.check("hipMalloc", unsafe {
            (runtime.hipMalloc)(&mut pointer, bytes)
        })?;
        let pointer = NonNull::new(pointer).ok_or(GpuError::Hip {
            call: "hipMalloc",
            code: "returned a null pointer".into(),
        })?;
        let memory = DeviceMemory {
            runtime,
            pointer,
            bytes,
        };
        // SAFETY: the allocation holds `bytes` bytes; the stream belongs to the current device.
        runtime.check("hipMemsetAsync", unsafe {
            (runtime.hipMemsetAsync)(memory.pointer.as_ptr(), 0, bytes, stream)
        })?;
        Ok(memory)
    }

    pub(crate) fn address(&self) -> *mut c_void {
        self.pointer.as_ptr()
    }

    /// The address `offset` bytes in.
    fn at(&self, offset: usize) -> *mut c_void {
        // A device address: offset arithmetic only, never dereferenced on the host.
        self.pointer
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(offset)
            .cast()
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        // SAFETY: allocated by hipMalloc and freed only here; hipFree waits for the work that
        // uses it (the host waits for every stream before it drops buffers anyway).
        let _ = unsafe { (self.runtime.hipFree)(self.pointer.as_ptr()) };
    }
}

/// Page-locked host memory from `hipHostMalloc`, zeroed, freed when dropped.
pub struct PinnedMemory {
    runtime: &'static Runtime,
    pointer: NonNull<u8>,
    bytes: usize,
}

// SAFETY: ordinary host memory owned by this value, reached through `&self` / `&mut self`
// only; the runtime lets any thread free it.
unsafe impl Send for PinnedMemory {}

impl PinnedMemory {
    /// `bytes` (at least one) of pinned host memory, zeroed.
    pub(crate) fn zeroed(runtime: &'static Runtime, bytes: usize) -> Result<Self, GpuError> {
        let bytes = bytes.max(1);
        let mut pointer: *mut c_void = std::ptr::null_mut();
        // SAFETY: the runtime writes one host address to a live local.
        runtime.check("hipHostMalloc", unsafe {
            (runtime.hipHostMalloc)(&mut pointer, bytes, HOST_MALLOC_PORTABLE)
        })?;
        let pointer = NonNull::new(pointer.cast::<u8>()).ok_or(GpuError::Hip {
            call: "hipHostMalloc",
            code: "returned a null pointer".into(),
        })?;
        // SAFETY: `bytes` bytes just allocated that nothing else can reach yet.
        unsafe { std::ptr::write_bytes(pointer.as_ptr(), 0, bytes) };
        Ok(PinnedMemory {
            runtime,
            pointer,
            bytes,
        })
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `bytes` initialised bytes owned by `self`; the device touches them only
        // between an enqueued copy and the wait the host makes before it looks again.
        unsafe { std::slice::from_raw_parts_mut(self.pointer.as_ptr(), self.bytes) }
    }
}

impl Drop for PinnedMemory {
    fn drop(&mut self) {
        // SAFETY: allocated by hipHostMalloc and freed only here.
        let _ = unsafe { (self.runtime.hipHostFree)(self.pointer.as_ptr().cast()) };
    }
}

/// A runtime object that `$release` frees when the value is dropped: a struct of the
/// runtime and the object's handle, usable from any thread.
macro_rules! runtime_object {
    ($(#[$doc:meta])* $name:ident, $release:ident) => {
        $(#[$doc])*
        pub struct $name {
            runtime: &'static Runtime,
            pub(crate) handle: Handle,
        }

        // SAFETY: a runtime handle, usable from any thread (the HIP runtime is thread-safe).
        unsafe impl Send for $name {}
        // SAFETY: as above; every use goes through the runtime's own locking.
        unsafe impl Sync for $name {}

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: the handle was created by the runtime for this value alone
                // (hipStreamCreateWithFlags, hipEventCreateWithFlags, hipModuleLoadData) and
                // is released only here, once.
                let _ = unsafe { (self.runtime.$release)(self.handle) };
            }
        }
    };
}

runtime_object!(
    /// A stream, destroyed when dropped.
    Stream,
    hipStreamDestroy
);

impl Stream {
    pub(crate) fn new(runtime: &'static Runtime) -> Result<Self, GpuError> {
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: the runtime writes one stream handle to a live local.
        runtime.check("hipStreamCreateWithFlags", unsafe {
            (runtime.hipStreamCreateWithFlags)(&mut handle, STREAM_NON_BLOCKING)
        })?;
        Ok(Stream { runtime, handle })
    }

    pub(crate) fn synchronize(&self) -> Outcome {
        // SAFETY: a live stream.
        self.runtime.check("hipStreamSynchronize", unsafe {
            (self.runtime.hipStreamSynchronize)(self.handle)
        })
    }
}

runtime_object!(
    /// An event, destroyed when dropped.
    Event,
    hipEventDestroy
);

impl Event {
    pub(crate) fn new(runtime: &'static Runtime, timing: bool) -> Result<Self, GpuError> {
        let flags = if timing {
            EVENT_DEFAULT
        } else {
            EVENT_DISABLE_TIMING
        };
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: the runtime writes one event handle to a live local.
        runtime.check("hipEventCreateWithFlags", unsafe {
            (runtime.hipEventCreateWithFlags)(&mut handle, flags)
        })?;
        Ok(Event { runtime, handle })
    }

    fn record(&self, stream: &Stream) -> Outcome {
        // SAFETY: a live event and stream of the same device.
        self.runtime.check("hipEventRecord", unsafe {
            (self.runtime.hipEventRecord)(self.handle, stream.handle)
        })
    }

    /// Milliseconds from `self` to `end`, both recorded and completed.
    fn elapsed_ms(&self, end: &Event) -> Result<f32, GpuError> {
        let mut milliseconds = 0f32;
        // SAFETY: two live timing events; the runtime writes one float.
        self.runtime.check("hipEventElapsedTime", unsafe {
            (self.runtime.hipEventElapsedTime)(&mut milliseconds, self.handle, end.handle)
        })?;
        Ok(milliseconds)
    }
}

runtime_object!(
    /// A loaded code object, unloaded when dropped (after the kernels and buffers: the host
    /// drops its state before the adapter).
    Module,
    hipModuleUnload
);

impl Module {
    /// Loads a code object hiprtc made for the current device.
    pub(crate) fn load(runtime: &'static Runtime, image: &[u8]) -> Result<Self, GpuError> {
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: `image` is a whole code object (checked plausible by the caller) that
        // outlives the call; the runtime copies it and writes one module handle.
        runtime.check("hipModuleLoadData", unsafe {
            (runtime.hipModuleLoadData)(&mut handle, image.as_ptr().cast())
        })?;
        Ok(Module { runtime, handle })
    }
}

/// A HIP device's handles: what the shared host drives through [`Api`].
pub struct Hip {
    pub(crate) info: HipDeviceInfo,
    pub(crate) ordinal: c_int,
    pub(crate) table_copies: TableCopies,
    pub(crate) runtime: &'static Runtime,
    pub(crate) streams: Vec<Stream>,
    // Kept loaded for the functions taken from it; dropped after the streams.
    pub(crate) _module: Module,
}

impl Hip {
    /// Makes the device current on the calling thread (HIP's current device is per thread).
    pub(crate) fn make_current(&self) -> Outcome {
        // SAFETY: the ordinal of the device this adapter was opened on.
        self.runtime.check("hipSetDevice", unsafe {
            (self.runtime.hipSetDevice)(self.ordinal)
        })
    }
}

/// A kernel function of the loaded module.
pub struct HipKernel {
    pub(crate) function: Handle,
}

// SAFETY: a function handle of a module the device keeps loaded; usable from any thread.
unsafe impl Send for HipKernel {}

/// A stream's slab buffers, grown on demand and kept for later calls.
pub type Slot = StreamSlot<DeviceMemory, PinnedMemory>;

impl SlotBuffer for DeviceMemory {
    fn byte_len(&self) -> usize {
        self.bytes
    }
}

impl SlotBuffer for PinnedMemory {
    fn byte_len(&self) -> usize {
        self.bytes
    }
}

/// The device's key buffers, the fixed AES tables, and what uploading the key needs.
pub type Keys = StreamKeys<DeviceMemory, PinnedMemory, Event>;

/// A kernel launch between two timing events, for [`Api::kernel_time`].
pub struct TimedLaunch {
    start: Event,
    end: Event,
}

/// One parameter as `hipModuleLaunchKernel` reads it: the bytes of the value, aligned for
/// the widest parameter (`u32x4`).
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Parameter([u8; 16]);

impl Parameter {
    fn of(value: ArgumentValue<*mut c_void>) -> Self {
        let mut bytes = [0u8; 16];
        match value {
            ArgumentValue::Pointer(pointer) => {
                bytes[..8].copy_from_slice(&(pointer as u64).to_ne_bytes())
            }
            ArgumentValue::U32(value) => bytes[..4].copy_from_slice(&value.to_ne_bytes()),
            ArgumentValue::U64(value) => bytes[..8].copy_from_slice(&value.to_ne_bytes()),
            ArgumentValue::Words4(words) => {
                for (chunk, word) in bytes.chunks_exact_mut(4).zip(words) {
                    chunk.copy_from_slice(&word.to_ne_bytes());
                }
            }
            ArgumentValue::Words2(words) => {
                for (chunk, word) in bytes[..8].chunks_exact_mut(4).zip(words) {
                    chunk.copy_from_slice(&word.to_ne_bytes());
                }
            }
        }
        Parameter(bytes)
    }
}

impl Hip {
    /// Launches `launch` on `stream` over `input`, `output` and `counters`, between timing
    /// events when the launch asks for its time.
    ///
    /// # Safety
    /// The launch's arguments must be its kernel's parameter list; `input`, `output` and
    /// `counters` must be live device allocations of this device holding what the launch
    /// reads and writes, alive until the streams are synchronised; the key buffers hold the
    /// key the launch is for.
    unsafe fn launch_on(
        &self,
        stream: &Stream,
        launch: &Launch<'_, Self>,
        (input, output, counters): (*mut c_void, *mut c_void, Option<*mut c_void>),
    ) -> Outcome<Option<TimedLaunch>> {
        let keys = launch.keys;
        let buffers = LaunchBuffers {
            input,
            output,
            counters,
            round_keys: keys.round_keys.address(),
            key_tables: keys.key_tables.address(),
            aes_tables: keys.aes_tables.address(),
        };
        let (values, count) = launch.arguments.values(&buffers)?;
        // On the stack: a launch allocates nothing.
        let mut parameters = [Parameter([0; 16]); MOST_ARGUMENTS];
        for (parameter, value) in parameters.iter_mut().zip(&values[..count]) {
            *parameter = Parameter::of(*value);
        }
        let mut pointers = [std::ptr::null_mut::<c_void>(); MOST_ARGUMENTS];
        for (pointer, parameter) in pointers.iter_mut().zip(parameters.iter_mut()) {
            *pointer = (parameter as *mut Parameter).cast();
        }
        let timing = match launch.timed {
            true => Some(TimedLaunch {
                start: Event::new(self.runtime, true)?,
                end: Event::new(self.runtime, true)?,
            }),
            false => None,
        };
        if let Some(timing) = &timing {
            timing.start.record(stream)?;
        }
        let groups = u32::try_from(launch.shape.groups)
            .unwrap_or(u32::MAX)
            .min(i32::MAX as u32);
        let group_size = u32::try_from(launch.shape.group_size).unwrap_or(1);
        // SAFETY: the parameters follow the kernel's signature in parcrypt.cl in order and
        // type (the caller's guarantee: the shared host's list for this kernel), pointers as
        // 64-bit device addresses and u32x4 / u32x2 as their words, each in a 16-byte aligned
        // slot that lives past the call (the runtime copies the values at launch). Every
        // address is of a live allocation of this device that outlives the launch (the
        // caller's guarantee for data and counters; the key buffers live in the locked
        // state). The kernels' tables are static shared memory, so no dynamic shared bytes
        // are asked for; the grid-stride loops never index past the block count.
        self.runtime.check("hipModuleLaunchKernel", unsafe {
            (self.runtime.hipModuleLaunchKernel)(
                launch.kernel.function,
                groups,
                1,
                1,
                group_size,
                1,
                1,
                0,
                stream.handle,
                pointers.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })?;
        if let Some(timing) = &timing {
            timing.end.record(stream)?;
        }
        Ok(timing)
    }
}

/// The slot's pinned staging buffer as bytes.
fn staging_bytes(staged: Option<&mut PinnedMemory>) -> &mut [u8] {
    staged
        .expect("reserve allocates staging for staged slabs")
        .as_mut_slice()
}

impl Api for Hip {
    const API: GpuApi = GpuApi::Hip;
    const QUEUES: usize = STREAMS;
    type Kernel = HipKernel;
    type Slot = Slot;
    type Keys = Keys;
    type Mapped = Never;
    type Event = Option<TimedLaunch>;
    type Extra = ();

    fn device_name(&self) -> String {
        self.info.name.trim().to_string()
    }

    fn description(&self) -> String {
        format!("{} [{}]", self.info, self.table_copies)
    }

    fn identity_description(&self) -> String {
        self.info.to_string()
    }

    fn new_slot(stream: usize) -> Slot {
        Slot::new(stream)
    }

    fn reserve(&self, slot: &mut Slot, bytes: usize, limit: usize, staging: Staging) -> Outcome {
        // Every call's first device step: the device becomes current on this thread.
        self.make_current()?;
        let stream = self.streams[slot.stream].handle;
        slot.reserve(
            bytes,
            limit,
            staging,
            |capacity| DeviceMemory::zeroed(self.runtime, capacity, stream),
            |capacity| PinnedMemory::zeroed(self.runtime, capacity),
        )
    }

    fn reserve_sums(&self, slot: &mut Slot, bytes: usize) -> Outcome {
        let stream = self.streams[slot.stream].handle;
        slot.reserve_sums(bytes, |capacity| {
            DeviceMemory::zeroed(self.runtime, capacity, stream)
        })
    }

    fn upload_counters(&self, slot: &mut Slot, counters: &[u8]) -> Outcome {
        self.reserve_sums(slot, counters.len())?;
        let stream = &self.streams[slot.stream];
        let buffer = slot.counters.as_ref().expect("allocated above");
        // SAFETY: the buffer holds `counters.len()` bytes; `counters` stays borrowed for the
        // call (the host's contract), and the copy is waited for before this returns, in
        // stream order after this slot's previous launch, which read the buffer.
        self.runtime.check("hipMemcpyHtoDAsync", unsafe {
            (self.runtime.hipMemcpyHtoDAsync)(
                buffer.address(),
                counters.as_ptr().cast_mut().cast(),
                counters.len(),
                stream.handle,
            )
        })?;
        stream.synchronize()
    }

    unsafe fn upload(&self, slot: &mut Slot, data: &[u8], offset: usize) -> Outcome {
        let stream = &self.streams[slot.stream];
        let input = slot.input.as_ref().expect("reserve allocates the input");
        let source = if slot.staging == Staging::Staged {
            let staged = staging_bytes(slot.staged.as_mut());
            let range = offset..offset + data.len();
            staged[range.clone()].copy_from_slice(data);
            staged[range].as_mut_ptr()
        } else {
            data.as_ptr().cast_mut()
        };
        // SAFETY: the input buffer holds `offset + data.len()` bytes (reserved); the source
        // (the caller's data or the slot's staging buffer) stays borrowed and untouched until
        // the slot is finished or the streams waited for (the caller's contract). The runtime
        // only reads from it.
        self.runtime.check("hipMemcpyHtoDAsync", unsafe {
            (self.runtime.hipMemcpyHtoDAsync)(
                input.at(offset),
                source.cast(),
                data.len(),
                stream.handle,
            )
        })
    }

    unsafe fn launch(&self, slot: &mut Slot, launch: Launch<'_, Self>) -> Outcome<Self::Event> {
        let stream = &self.streams[slot.stream];
        let (input, output, counters) =
            launch
                .arguments
                .slot_buffers(&slot.input, &slot.output, &slot.counters);
        // SAFETY: the slot's buffers hold the launch's blocks and, for segmented CTR, this
        // slab's counter blocks, uploaded just before (the caller's guarantee); they live
        // in the locked device state until the streams are synchronised.
        unsafe {
            self.launch_on(
                stream,
                &launch,
                (
                    input.address(),
                    output.address(),
                    counters.map(DeviceMemory::address),
                ),
            )
        }
    }

    unsafe fn download(&self, slot: &mut Slot, data: &mut [u8]) -> Outcome {
        let stream = &self.streams[slot.stream];
        let length = data.len();
        let output = slot.output.as_ref().expect("reserve allocates the output");
        let destination = if slot.staging == Staging::Staged {
            staging_bytes(slot.staged.as_mut()).as_mut_ptr()
        } else {
            data.as_mut_ptr()
        };
        // SAFETY: the output buffer holds at least `length` bytes (reserved for the slab);
        // the destination (the caller's data or the staging buffer, both at least `length`
        // bytes) stays borrowed and untouched until the slot is finished or the streams
        // waited for (the caller's contract).
        self.runtime.check("hipMemcpyDtoHAsync", unsafe {
            (self.runtime.hipMemcpyDtoHAsync)(
                destination.cast(),
                output.address(),
                length,
                stream.handle,
            )
        })
    }

    unsafe fn download_sums(&self, slot: &mut Slot, sums: &mut [u8]) -> Outcome {
        let stream = &self.streams[slot.stream];
        let buffer = slot
            .counters
            .as_ref()
            .expect("reserve_sums allocates the side buffer");
        // SAFETY: the side buffer holds at least `sums.len()` bytes (reserve_sums); `sums`
        // stays borrowed and untouched until the streams are waited for (the caller's
        // contract).
        self.runtime.check("hipMemcpyDtoHAsync", unsafe {
            (self.runtime.hipMemcpyDtoHAsync)(
                sums.as_mut_ptr().cast(),
                buffer.address(),
                sums.len(),
                stream.handle,
            )
        })
    }

    /// Waits for the stream's slab to come back and, when it was staged, copies it out to
    /// `data`: the staging buffer is then free for the stream's next slab.
    fn finish_slab(&self, slot: &mut Slot, data: &mut [u8]) -> Outcome {
        self.streams[slot.stream].synchronize()?;
        if slot.staging == Staging::Staged {
            let staged = staging_bytes(slot.staged.as_mut());
            data.copy_from_slice(&staged[..data.len()]);
        }
        Ok(())
    }

    /// Waits for every stream, retrying a failed wait once and then waiting for the whole
    /// device. It returns the error rather than aborting: a HIP stream whose wait fails has
    /// faulted (HIP errors are sticky), and the device-wide wait is the last word the runtime
    /// gives on whether copies still run.
    fn wait(&self, _host_memory_in_flight: bool) -> Outcome {
        let mut outcome = Ok(());
        for stream in &self.streams {
            if let Err(error) = stream.synchronize().or_else(|_| stream.synchronize()) {
                // SAFETY: takes no arguments; waits for all work of the current device.
                let _ = unsafe { (self.runtime.hipDeviceSynchronize)() };
                outcome = outcome.and(Err(error));
            }
        }
        outcome
    }

    /// Copies the key's words to the device on stream 0 and makes the other streams wait
    /// for them.
    fn upload_key(&self, keys: &mut Keys, key: &KeyMaterial, decrypting: bool) -> Outcome {
        self.make_current()?;
        let stream = &self.streams[0];
        let round_keys = key.round_keys(decrypting);
        let tables = key.key_tables();
        let staging = keys.key_staging.as_mut_slice();
        let table_offset = ROUND_KEY_WORDS * 4;
        // Word by word, so that no other copy of the key is made on the way.
        let (round_part, table_part) = staging.split_at_mut(table_offset);
        for (bytes, word) in round_part.chunks_exact_mut(4).zip(round_keys) {
            bytes.copy_from_slice(&word.to_ne_bytes());
        }
        for (bytes, word) in table_part.chunks_exact_mut(4).zip(tables) {
            bytes.copy_from_slice(&word.to_ne_bytes());
        }
        let staging_pointer = staging.as_mut_ptr();
        // SAFETY: the key buffers hold ROUND_KEY_WORDS and KEY_TABLE_WORDS words, at least the
        // key's; the pinned staging buffer holds both at these offsets and stays untouched
        // until the streams are waited for (the host wipes it only after that).
        self.runtime.check("hipMemcpyHtoDAsync", unsafe {
            (self.runtime.hipMemcpyHtoDAsync)(
                keys.round_keys.address(),
                staging_pointer.cast(),
                round_keys.len() * 4,
                stream.handle,
            )
        })?;
        if !tables.is_empty() {
            // SAFETY: as above.
            self.runtime.check("hipMemcpyHtoDAsync", unsafe {
                (self.runtime.hipMemcpyHtoDAsync)(
                    keys.key_tables.address(),
                    staging_pointer.wrapping_add(table_offset).cast(),
                    tables.len() * 4,
                    stream.handle,
                )
            })?;
        }
        keys.key_ready.record(stream)?;
        for other in &self.streams[1..] {
            // SAFETY: a live stream and a recorded event of the same device.
            self.runtime.check("hipStreamWaitEvent", unsafe {
                (self.runtime.hipStreamWaitEvent)(other.handle, keys.key_ready.handle, 0)
            })?;
        }
        Ok(())
    }

    /// Overwrites the device's and the staging buffer's copies of the key. Runs after every
    /// stream is idle.
    fn wipe_key(&self, keys: &mut Keys, _key: &KeyMaterial) -> Outcome {
        let stream = &self.streams[0];
        let mut device_wiped = Ok(());
        for buffer in [&keys.round_keys, &keys.key_tables] {
            // SAFETY: a live allocation of `byte_len()` bytes of this device.
            device_wiped = device_wiped.and(self.runtime.check("hipMemsetAsync", unsafe {
                (self.runtime.hipMemsetAsync)(buffer.address(), 0, buffer.byte_len(), stream.handle)
            }));
        }
        let device_wiped = device_wiped.and_then(|()| stream.synchronize());
        // Wiped whatever the device said: the uploads from the staging buffer finished
        // before the streams went idle.
        keys.key_staging.as_mut_slice().zeroize();
        device_wiped
    }

    /// The time during which at least one timed launch ran, from each launch's events
    /// measured against the first launch's start (HIP events give only differences).
    fn kernel_time(events: &[Self::Event]) -> Outcome<Duration> {
        let timed: Vec<&TimedLaunch> = events.iter().flatten().collect();
        let Some(first) = timed.first() else {
            return Ok(Duration::ZERO);
        };
        let mut intervals = Vec::with_capacity(timed.len());
        for launch in &timed {
            let start = f64::from(first.start.elapsed_ms(&launch.start)?);
            let end = f64::from(first.start.elapsed_ms(&launch.end)?);
            intervals.push((start, end.max(start)));
        }
        // Launches on other streams may start before the first one: shift to non-negative
        // nanoseconds.
        let earliest = intervals
            .iter()
            .map(|&(start, _)| start)
            .fold(0f64, f64::min);
        let nanoseconds = |milliseconds: f64| ((milliseconds - earliest) * 1e6) as u64;
        Ok(Duration::from_nanos(busy_nanoseconds(
            intervals
                .into_iter()
                .map(|(start, end)| (nanoseconds(start), nanoseconds(end)))
                .collect(),
        )))
    }

    /// Each run through the staged host path, its kernels timed by events.
    fn kernel_times(device: &GpuHost<Self>, job: TimingJob<'_>) -> Outcome<Vec<Duration>> {
        device.timed_runs(job, Staging::Staged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_hold_each_value_in_native_order() {
        let words = Parameter::of(ArgumentValue::Words4([1, 2, 3, 4]));
        assert_eq!(&words.0[..4], &1u32.to_ne_bytes());
        assert_eq!(&words.0[12..], &4u32.to_ne_bytes());
        let pair = Parameter::of(ArgumentValue::Words2([7, 9]));
        assert_eq!(&pair.0[4..8], &9u32.to_ne_bytes());
        let wide = Parameter::of(ArgumentValue::U64(0x0102_0304_0506_0708));
        assert_eq!(&wide.0[..8], &0x0102_0304_0506_0708u64.to_ne_bytes());
        let pointer = Parameter::of(ArgumentValue::Pointer(0x1000 as *mut c_void));
        assert_eq!(&pointer.0[..8], &0x1000u64.to_ne_bytes());
        assert_eq!(std::mem::align_of::<Parameter>(), 16);
    }
}
