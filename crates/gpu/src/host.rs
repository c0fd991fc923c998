//! The GPU host, written once for every API: a device's state and lock, slabs and their
//! buffers, the rotation of slabs over queues (streams) that overlaps one slab's copies with
//! another's kernel, launch shapes and tuning, key upload and wipe, GHASH segments, and
//! zero-copy mapped memory ([`zero_copy`]). An API is an adapter implementing [`Api`]: it
//! allocates, copies, launches a kernel given its arguments by role ([`arguments`]), waits,
//! and maps host memory; and [`Devices`]: it lists and opens its devices (compiling the one
//! kernel source with its vendor header), behind the `list`, `open`, `open_with` and `info`
//! written here once. OpenCL, CUDA and HIP are three such adapters; adding an API means
//! writing another and its vendor header, nothing here.

pub(crate) mod arguments;
#[cfg(any(feature = "cuda", feature = "hip"))]
pub(crate) mod stream_slot;
pub(crate) mod zero_copy;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::ghash::{self, append_tail, join_group_sums, GcmDirection, SegmentPlan};
use crate::kernel_source::CipherFamily;
use crate::operation::{ModeArguments, SlabChain};
use crate::{
    tuning, DeviceKind, GpuApi, GpuDevice, GpuError, GpuOperation, KeyMaterial, LaunchGeometry,
    OpenOptions, ProgramOrigin, TableCopies, TuneTable,
};
use arguments::{Argument, ArgumentList, KernelTable, LoadedKernel};
use parcrypt_modes::ghash::GhashKey;

/// The largest slab or launch: keeps every block index of a launch well inside the kernels'
/// 32-bit counters (2^27 blocks of 8 bytes).
pub(crate) const MAX_SLAB_BYTES: usize = 1 << 30;

/// Round-key words the key buffer holds: AES-256's 60 is the most any cipher needs.
pub(crate) const ROUND_KEY_WORDS: usize = 64;
/// Key-dependent table words: Blowfish's four S-boxes.
pub(crate) const KEY_TABLE_WORDS: usize = 1024;

/// The slab size actually used: whole 16-byte blocks (so every cipher's blocks and CBC
/// chaining line up at slab edges), at least one block, at most [`MAX_SLAB_BYTES`] and
/// within the device's largest buffer, `max_allocation_bytes`.
pub(crate) fn slab_size(requested: usize, max_allocation_bytes: u64) -> usize {
    let device_limit = usize::try_from(max_allocation_bytes).unwrap_or(usize::MAX);
    let bytes = requested.min(device_limit).min(MAX_SLAB_BYTES);
    (bytes / 16 * 16).max(16)
}

/// The size to allocate for a slab buffer that must hold `bytes`: small inputs get small
/// buffers, rounded up to a power of two so that growing inputs do not reallocate every
/// call; nothing grows past `limit` (the slab size) unless `bytes` itself does.
pub(crate) fn grown_capacity(bytes: usize, limit: usize) -> usize {
    bytes.next_power_of_two().min(limit).max(bytes)
}

/// The length of the union of `[start, end)` intervals, in the same unit.
#[cfg_attr(not(any(feature = "opencl", feature = "hip")), allow(dead_code))]
pub(crate) fn busy_nanoseconds(mut intervals: Vec<(u64, u64)>) -> u64 {
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

/// A value no code can make: the types of an adapter that has no such thing (a mapped
/// buffer where an API maps no host memory, every type of an API not in this build) hold
/// one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Never {}

/// Refuses launch shapes without threads or without blocks per thread.
pub(crate) fn validate_geometry(geometry: LaunchGeometry) -> Result<(), GpuError> {
    if geometry.threads_per_group == 0 || geometry.blocks_per_thread == 0 {
        return Err(GpuError::InvalidInput(format!(
            "launch geometry needs at least one thread per group and one block per thread, \
             got {geometry:?}"
        )));
    }
    Ok(())
}

/// The shape of a launch over `blocks` blocks of a kernel that allows at most
/// `max_group_size` threads per group: `(threads per group, groups)`, with at least one
/// thread per group and one group, and the grid sized to `blocks / blocks_per_thread`
/// threads rounded up to whole groups.
pub(crate) fn launch_shape(
    geometry: LaunchGeometry,
    blocks: usize,
    max_group_size: usize,
) -> Shape {
    let group_size = geometry.threads_per_group.min(max_group_size).max(1);
    let threads = blocks.div_ceil(geometry.blocks_per_thread);
    Shape {
        group_size,
        groups: threads.div_ceil(group_size).max(1),
    }
}

/// Which GHASH kernel a call runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GhashKernel {
    /// `ghash_segments`: one sum per segment.
    Segments,
    /// `ghash_groups`: one sum per work-group of `group` segments.
    Groups { group: usize },
}

/// The work-group size for `ghash_groups`: a power of two, at most its 256 segments and the
/// kernel's own limit.
pub(crate) fn ghash_group_size(max_group_size: usize) -> usize {
    let limit = max_group_size.clamp(1, ghash::GROUP_SEGMENTS);
    1 << limit.ilog2()
}

/// GCM's GHASH beside the CTR launches of [`GpuHost::run_slabs`]: each slab's whole 4 KiB
/// segments are hashed on the device from the slot buffer that holds the ciphertext, joined
/// per work-group there, and the sums collected in each slot's side buffer, downloaded
/// once at the end of the call.
struct GcmPass<'a> {
    plan: SegmentPlan,
    /// The keys for work-groups of `group`.
    keys: ghash::GroupKeys,
    /// Segments per work-group of `ghash_groups`, so per sum.
    group: usize,
    /// The slot buffer the ciphertext is in: the output when encrypting, the input when
    /// decrypting.
    source: Argument,
    /// Sums per slab at most.
    slab_sums: usize,
    /// Per queue, the sums of its slabs in order, `slab_sums` per slab.
    sums: &'a mut [Vec<u8>],
}

/// The GHASH of all of `data` on the host (a final partial block zero-padded).
fn append_tail_all(key: &GhashKey, data: &[u8]) -> u128 {
    let whole = data.len() / 16 * 16;
    let mut sum = 0u128;
    key.update(&mut sum, &data[..whole]);
    let mut last = [0u8; 16];
    last[..data.len() - whole].copy_from_slice(&data[whole..]);
    if whole < data.len() {
        key.update(&mut sum, &last);
    }
    sum
}

/// How host data reaches the device buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Staging {
    /// Copied straight between the caller's memory and the device.
    Direct,
    /// Copied through the adapter's own host buffers first (CUDA: pinned memory, since
    /// only pinned memory copies asynchronously; the caller's memory is pageable).
    Staged,
}

/// The shape of one launch: threads per group and groups, from [`launch_shape`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub group_size: usize,
    pub groups: usize,
}

/// A device call's result.
pub type Outcome<T = ()> = Result<T, GpuError>;

/// One kernel launch as the host hands it to an adapter: the kernel, the key's buffers,
/// the arguments by role and the shape.
pub struct Launch<'a, A: Api> {
    pub kernel: &'a A::Kernel,
    pub keys: &'a A::Keys,
    pub arguments: &'a ArgumentList,
    pub shape: Shape,
    /// Whether the caller wants the kernel's own time (the mapped paths; the slab paths
    /// collect every launch's event instead).
    pub timed: bool,
}

/// Repeated runs of one operation, timed by the device for tuning.
pub struct TimingJob<'a> {
    pub key: &'a KeyMaterial,
    pub operation: &'a GpuOperation,
    pub data: &'a mut [u8],
    pub runs: usize,
}

/// What a GPU API must provide for the shared host: the few calls that differ per API.
/// Queues are numbered `0..QUEUES`; slab `k` of a call runs on queue `k % QUEUES` with
/// that queue's [`Api::Slot`] of buffers, which knows its queue.
///
/// The unsafe methods enqueue work that reads or writes host memory after they return;
/// their contract is the one the host keeps: the memory stays borrowed, and untouched by
/// the host, until [`Api::finish_slab`] of that slot or [`Api::wait`] has returned.
///
/// This trait is public only so that the device types can name it; it lives in a private
/// module, so nothing outside this crate can name, implement or call it.
pub trait Api: Sized + Send + Sync + 'static {
    /// Which API this is, for messages and tune files.
    const API: GpuApi;
    /// Queues (streams) slabs rotate over, each with its own buffers.
    const QUEUES: usize;
    /// A compiled kernel function.
    type Kernel: Send;
    /// A queue's slab buffers (input, output, counters, staging), grown on demand.
    type Slot: Send;
    /// The device's copies of the key, and what uploading them needs.
    type Keys: Send;
    /// Two halves of host memory mapped for the device ([`zero_copy`]).
    type Mapped: zero_copy::MappedHalves;
    /// A launched kernel, for its profiled time (`()` where the API times otherwise).
    type Event: Send;
    /// State only this API's own entry points use, kept under the device's lock.
    type Extra: Send;

    /// The device's name, for messages and the self-test.
    fn device_name(&self) -> String;
    /// One line for `parcrypt devices` and reports.
    fn description(&self) -> String;
    /// The device as [`crate::tuning::device_identity`] names it, without the API.
    fn identity_description(&self) -> String;
    /// What kind of processor runs the kernels: a GPU unless the adapter says otherwise.
    fn kind(&self) -> DeviceKind {
        DeviceKind::Gpu
    }

    /// The empty buffers of queue `queue`.
    fn new_slot(queue: usize) -> Self::Slot;

    /// Makes `slot` hold at least `bytes` in its input and output buffers (and its staging
    /// buffer when staged), grown as [`grown_capacity`] says up to `limit`; its copies
    /// until the next `reserve` go as `staging` says.
    fn reserve(
        &self,
        slot: &mut Self::Slot,
        bytes: usize,
        limit: usize,
        staging: Staging,
    ) -> Outcome;

    /// Copies segmented CTR's counter blocks for the slot's next launch into its counter
    /// buffer (grown to fit), in queue order after the slot's previous launch. `counters`
    /// is read before this returns or stays borrowed as for [`Api::upload`].
    fn upload_counters(&self, slot: &mut Self::Slot, counters: &[u8]) -> Outcome;

    /// Makes the slot's side buffer (the counter buffer of [`Api::upload_counters`]) hold at
    /// least `bytes`, for GCM's GHASH sums ([`arguments::Argument::Sums`]); what it held
    /// may be lost. Called before any launch of the call writes sums there.
    fn reserve_sums(&self, slot: &mut Self::Slot, bytes: usize) -> Outcome;

    /// Enqueues the copy of the first `sums.len()` bytes of the slot's side buffer into
    /// `sums`, straight (never through the staging buffer), in queue order after the slot's
    /// launches.
    ///
    /// # Safety
    /// As for [`Api::upload`]: `sums` stays borrowed and untouched until the queues are
    /// waited for; the side buffer holds `sums.len()` bytes ([`Api::reserve_sums`]).
    unsafe fn download_sums(&self, slot: &mut Self::Slot, sums: &mut [u8]) -> Outcome;

    /// Enqueues the copy of `data` into the slot's input buffer at byte `offset`.
    ///
    /// # Safety
    /// `data` must stay borrowed and unwritten until the slot is finished or the queues
    /// waited for; the buffer must hold `offset + data.len()` bytes (reserved).
    unsafe fn upload(&self, slot: &mut Self::Slot, data: &[u8], offset: usize) -> Outcome;

    /// Enqueues the kernel over the slot's buffers (input to output, and its counter buffer
    /// where the arguments name it) with the key's buffers.
    ///
    /// # Safety
    /// The arguments must be the kernel's parameter list ([`arguments::cipher_arguments`]
    /// or [`arguments::ghash_arguments`] for that kernel), its block count within what the
    /// reserved buffers hold; the keys hold the key the launch is for.
    unsafe fn launch(
        &self,
        slot: &mut Self::Slot,
        launch: Launch<'_, Self>,
    ) -> Outcome<Self::Event>;

    /// Enqueues the copy of the first `data.len()` bytes of the slot's output buffer into
    /// `data` (through the staging buffer when staged: [`Api::finish_slab`] copies it out).
    ///
    /// # Safety
    /// As for [`Api::upload`]: `data` stays borrowed and untouched until the slot is
    /// finished or the queues waited for.
    unsafe fn download(&self, slot: &mut Self::Slot, data: &mut [u8]) -> Outcome;

    /// Starts the device on what was enqueued on the slot's queue. Nothing to do by default:
    /// for APIs that submit work as it is queued.
    fn flush(&self, slot: &Self::Slot) -> Outcome {
        let _ = slot;
        Ok(())
    }

    /// Before a queue takes its next slab: waits for its previous one, and when staged
    /// copies the result out of the staging buffer into `data`. Nothing to do where
    /// in-order queues and direct copies already order everything.
    fn finish_slab(&self, slot: &mut Self::Slot, data: &mut [u8]) -> Outcome;

    /// Waits until every queue is idle. `host_memory_in_flight`: copies may still touch
    /// host memory safe code can reach; an adapter that cannot make sure they stopped must
    /// abort the process rather than return.
    fn wait(&self, host_memory_in_flight: bool) -> Outcome;

    /// Copies the key's words to the device, visible to every queue.
    fn upload_key(&self, keys: &mut Self::Keys, key: &KeyMaterial, decrypting: bool) -> Outcome;

    /// Overwrites every copy of the key the device and the adapter hold.
    fn wipe_key(&self, keys: &mut Self::Keys, key: &KeyMaterial) -> Outcome;

    /// The time during which at least one of `events`' kernels ran.
    fn kernel_time(events: &[Self::Event]) -> Outcome<Duration>;

    /// Kernel-only times of the job's runs, for tuning.
    fn kernel_times(device: &GpuHost<Self>, job: TimingJob<'_>) -> Outcome<Vec<Duration>>;

    /// Copies host memory to host memory (staging, mapped buffers).
    fn copy_host(destination: &mut [u8], source: &[u8]) {
        destination.copy_from_slice(source);
    }
}

/// How an API finds and opens its devices: what [`GpuHost::list`], [`GpuHost::open`],
/// [`GpuHost::open_with`] and [`GpuHost::info`] call. Public only as [`Api`] is.
pub trait Devices: Api {
    /// What the driver reports about one device, as `list` gives it.
    type Info;

    /// Every device the API sees.
    fn list() -> Result<Vec<Self::Info>, GpuError>;

    /// Opens device `index` of `list` with `options`: compiles (or loads) the kernels, runs
    /// the self-test and refuses the device if any kernel gives a wrong answer.
    fn open_with(index: usize, options: &OpenOptions) -> Result<GpuHost<Self>, GpuError>;

    /// What the driver reports about the opened device.
    fn info(&self) -> &Self::Info;
}

/// What a call changes, under the device's lock: the launch shape, the kernels (whose
/// arguments OpenCL sets per launch), buffers, the key.
pub struct State<A: Api> {
    pub(crate) geometry: LaunchGeometry,
    /// Shapes per cipher, operation and size from `parcrypt tune`, ahead of `geometry`.
    pub(crate) tuning: Option<Arc<TuneTable>>,
    pub(crate) kernels: KernelTable<A::Kernel>,
    pub(crate) slots: Vec<A::Slot>,
    pub(crate) keys: A::Keys,
    /// The mapped buffer [`GpuHost::process_zero_copy`] stages through, kept for later calls.
    pub(crate) zero_copy: Option<A::Mapped>,
    // Only CUDA keeps state of its own (the device-buffer path's scratch buffers).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) extra: A::Extra,
}

impl<A: Api> State<A> {
    /// A freshly opened device's state: no tune table, empty slots, no mapped buffer.
    pub(crate) fn new(
        geometry: LaunchGeometry,
        kernels: KernelTable<A::Kernel>,
        keys: A::Keys,
        extra: A::Extra,
    ) -> Self {
        State {
            geometry,
            tuning: None,
            kernels,
            slots: (0..A::QUEUES).map(A::new_slot).collect(),
            keys,
            zero_copy: None,
            extra,
        }
    }

    /// The kernel that runs `operation` for `key` and the shape tuned for `bytes`.
    pub(crate) fn cipher_kernel(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        bytes: usize,
    ) -> (&LoadedKernel<A::Kernel>, LaunchGeometry) {
        let kernel_operation = operation.kernel_operation();
        let geometry = tuning::choose_geometry(
            self.geometry,
            self.tuning.as_deref(),
            key.algorithm(),
            kernel_operation,
            bytes,
        );
        let kernel = self.kernels.find(
            CipherFamily::of(key.algorithm()),
            kernel_operation,
            operation.segmented(),
        );
        (kernel, geometry)
    }
}

/// An opened, self-tested GPU device of API `A`: [`crate::OpenClDevice`] and
/// [`crate::CudaDevice`] are this type.
///
/// `process` and the other entry points may be called from several threads; calls on one
/// device run one at a time.
pub struct GpuHost<A: Api> {
    // Dropped first (field order): buffers and kernels before the adapter's queues,
    // program and context.
    pub(crate) state: Mutex<State<A>>,
    pub(crate) adapter: A,
    pub(crate) slab_bytes: usize,
    pub(crate) origin: ProgramOrigin,
    pub(crate) table_copies: TableCopies,
    /// Bytes of data the host paths have copied to the device ([`GpuHost::uploaded_bytes`]).
    pub(crate) uploaded: AtomicU64,
}

/// Shows the device as its one-line description (what the driver reports, and
/// what the kernels were compiled for).
impl<A: Api> std::fmt::Debug for GpuHost<A> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("GpuHost")
            .field("api", &A::API)
            .field("device", &self.adapter.description())
            .field("table_copies", &self.table_copies)
            .field("origin", &self.origin)
            .field("slab_bytes", &self.slab_bytes)
            .finish_non_exhaustive()
    }
}

impl<A: Api> GpuHost<A> {
    /// Wraps an adapter and its state; the caller self-tests the result.
    pub(crate) fn new(
        adapter: A,
        state: State<A>,
        slab_bytes: usize,
        origin: ProgramOrigin,
        table_copies: TableCopies,
    ) -> Self {
        GpuHost {
            state: Mutex::new(state),
            adapter,
            slab_bytes,
            origin,
            table_copies,
            uploaded: AtomicU64::new(0),
        }
    }

    /// Bytes of data the host paths ([`GpuHost::process`], [`GpuHost::process_gcm`], the
    /// GHASH calls) have copied from host memory to the device since the device was opened:
    /// the texts and a zero-padded final block, not keys, counter blocks or kernel arguments.
    /// It shows how often data crosses the bus (GCM: once).
    pub fn uploaded_bytes(&self) -> u64 {
        self.uploaded.load(Ordering::Relaxed)
    }

    fn count_upload(&self, bytes: usize) {
        self.uploaded.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// The device's name as its driver reports it.
    pub fn name(&self) -> String {
        self.adapter.device_name()
    }

    /// The table copies the kernels were compiled with (see the top of `parcrypt.cl` for
    /// what fewer than 32 means for timing).
    pub fn table_copies(&self) -> TableCopies {
        self.table_copies
    }

    /// Whether the kernels were compiled here or loaded from the binary cache.
    pub fn program_origin(&self) -> ProgramOrigin {
        self.origin
    }

    /// Bytes per slab: the most one launch and one buffer of the pipeline hold.
    pub fn slab_bytes(&self) -> usize {
        self.slab_bytes
    }

    /// The launch shape used where no tune table applies.
    pub fn launch_geometry(&self) -> LaunchGeometry {
        self.lock_state().geometry
    }

    /// Changes the launch shape for later calls (for tuning) and drops any tune table; any
    /// shape gives the same output.
    pub fn set_launch_geometry(&self, geometry: LaunchGeometry) -> Result<(), GpuError> {
        validate_geometry(geometry)?;
        let mut state = self.lock_state();
        state.geometry = geometry;
        state.tuning = None;
        Ok(())
    }

    /// Installs or removes a tune table; see [`GpuDevice::set_tuning`].
    pub fn set_tuning(&self, table: Option<Arc<TuneTable>>) {
        self.lock_state().tuning = table;
    }

    /// The installed tune table.
    pub fn tuning(&self) -> Option<Arc<TuneTable>> {
        self.lock_state().tuning.clone()
    }

    pub(crate) fn lock_state(&self) -> MutexGuard<'_, State<A>> {
        // A panic while holding the lock leaves only scratch buffers, kernel arguments and
        // key words behind, all of which every call sets afresh.
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
        self.run_host(key, operation, data, Staging::Staged, None)
    }

    /// [`GpuHost::process`], timed: returns the kernels' time and the call's wall time end to
    /// end (key upload and wipe included). The kernel time is read from each slab's launch
    /// (the copies excluded) and counts the time during which at least one kernel ran:
    /// kernels of different queues may overlap, and overlapping time counts once, so the
    /// kernel time never exceeds the span of the call. Both are zero for empty data.
    pub(crate) fn run_timed(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
        staging: Staging,
    ) -> Result<(Duration, Duration), GpuError> {
        operation.validate(key.algorithm(), data.len())?;
        if data.is_empty() {
            return Ok((Duration::ZERO, Duration::ZERO));
        }
        let started = std::time::Instant::now();
        let mut events = Vec::new();
        self.run_host(key, operation, data, staging, Some(&mut events))?;
        let end_to_end = started.elapsed();
        Ok((A::kernel_time(&events)?, end_to_end))
    }

    /// The kernel times of the job's runs, each run through [`GpuHost::run_timed`] (for the
    /// adapters that time kernels by events on the host path: OpenCL, HIP).
    #[cfg_attr(not(any(feature = "opencl", feature = "hip")), allow(dead_code))]
    pub(crate) fn timed_runs(
        &self,
        job: TimingJob<'_>,
        staging: Staging,
    ) -> Outcome<Vec<Duration>> {
        let TimingJob {
            key,
            operation,
            data,
            runs,
        } = job;
        (0..runs)
            .map(|_| {
                self.run_timed(key, operation, data, staging)
                    .map(|(kernel, _)| kernel)
            })
            .collect()
    }

    /// The host paths: validates, locks, uploads the key, runs every slab, waits for the
    /// queues and wipes the key. `events` collects each slab's kernel for timing.
    pub(crate) fn run_host(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
        staging: Staging,
        events: Option<&mut Vec<A::Event>>,
    ) -> Result<(), GpuError> {
        operation.validate(key.algorithm(), data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let mut state = self.lock_state();
        let decrypting = operation.kernel_operation().decrypts();
        let uploaded = self.adapter.upload_key(&mut state.keys, key, decrypting);
        let ran = uploaded
            .and_then(|()| self.run_slabs(&mut state, key, operation, data, staging, events, None));
        // A failed wait returns at once: it means the device stopped (an adapter that
        // cannot tell aborts instead), and nothing is left to wipe on a stopped device.
        self.adapter.wait(true)?;
        let wiped = self.adapter.wipe_key(&mut state.keys, key);
        ran.and(wiped)
    }

    /// Enqueues every slab: upload, kernel, download on rotating queues; a queue's previous
    /// slab is finished (and, when staged, copied out) before the queue takes the next.
    /// Returns once everything is enqueued and the last slabs are finished, or at the first
    /// failure; the caller then waits for the queues. With `gcm`, slabs are whole 4 KiB
    /// segments (but the last), each slab's segments are hashed on the device after its CTR
    /// launch, and the slots' sums are downloaded after the last slab.
    #[allow(clippy::too_many_arguments)]
    fn run_slabs(
        &self,
        state: &mut State<A>,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
        staging: Staging,
        mut events: Option<&mut Vec<A::Event>>,
        mut gcm: Option<&mut GcmPass<'_>>,
    ) -> Result<(), GpuError> {
        let adapter = &self.adapter;
        let block_size = key.algorithm().block_size();
        // Segmented CTR: slabs of whole segments; GCM: of whole GHASH segments.
        let slab_bytes = match gcm.as_ref() {
            Some(pass) => pass.plan.slab_bytes,
            None => operation.slab_bytes(self.slab_bytes)?,
        };
        let State {
            slots,
            keys,
            kernels,
            geometry,
            tuning,
            ..
        } = state;
        let kernel_operation = operation.kernel_operation();
        let geometry = tuning::choose_geometry(
            *geometry,
            tuning.as_deref(),
            key.algorithm(),
            kernel_operation,
            data.len(),
        );
        let kernel = kernels.find(
            CipherFamily::of(key.algorithm()),
            kernel_operation,
            operation.segmented(),
        );
        if let Some(pass) = gcm.as_ref() {
            for (slot, sums) in slots.iter_mut().zip(pass.sums.iter()) {
                if !sums.is_empty() {
                    adapter.reserve_sums(slot, sums.len())?;
                }
            }
        }
        let mut chain = SlabChain::new(operation);
        let mut pending: Vec<Option<Range<usize>>> = vec![None; A::QUEUES];
        let mut slab_index = 0;
        let mut offset = 0;
        while offset < data.len() {
            let range = offset..offset + slab_bytes.min(data.len() - offset);
            let length = range.len();
            let queue = slab_index % A::QUEUES;
            let slot = &mut slots[queue];
            if let Some(done) = pending[queue].take() {
                adapter.finish_slab(slot, &mut data[done])?;
            }
            let blocks = length.div_ceil(block_size);
            adapter.reserve(slot, blocks * block_size, self.slab_bytes, staging)?;
            // Taken before this slab's download is enqueued: for CBC it copies the slab's
            // last ciphertext block, which the download overwrites.
            let mode = chain.next(&data[range.clone()], block_size);
            let counters = match mode {
                ModeArguments::Segments { first, count, .. } => {
                    operation.segment_counters(block_size, first, count)
                }
                _ => &[],
            };
            if !counters.is_empty() {
                // In queue order after this slot's previous launch, which read the buffer.
                adapter.upload_counters(slot, counters)?;
            }
            let arguments = arguments::cipher_arguments(
                kernel.segmented,
                key,
                blocks,
                mode,
                !counters.is_empty(),
            )?;
            let shape = kernel.shape(geometry, blocks);
            let launch = Launch {
                kernel: &kernel.kernel,
                keys,
                arguments: &arguments,
                shape,
                // Adapters whose kernels are timed only on request (HIP) time them when the
                // caller collects the events.
                timed: events.is_some(),
            };
            // SAFETY: the copies are asynchronous: the device reads and writes
            // `data[range]` (or the staging buffer) after these calls return. Nothing here
            // touches that memory again until `finish_slab` has finished this slot, and
            // `data` stays borrowed until the caller has waited for every queue. The slot's
            // buffers hold `blocks` whole blocks (reserved above), its counter buffer this
            // slab's counter blocks (uploaded just before, in queue order), and the
            // arguments are the kernel's own list for these blocks.
            unsafe {
                adapter.upload(slot, &data[range.clone()], 0)?;
                self.count_upload(length);
                let launched = adapter.launch(slot, launch)?;
                if let Some(events) = events.as_mut() {
                    events.push(launched);
                }
            }
            if let Some(pass) = gcm.as_mut() {
                let segments = length / pass.plan.segment_bytes;
                if segments > 0 {
                    let arguments = arguments::ghash_group_arguments(
                        pass.source,
                        Argument::Sums,
                        segments * pass.plan.segment_bytes / 16,
                        pass.plan.blocks_per_segment(),
                        pass.keys,
                        slab_index / A::QUEUES * pass.slab_sums,
                    )?;
                    let launch = Launch {
                        kernel: &kernels.ghash_groups,
                        keys,
                        arguments: &arguments,
                        // Exactly `group` threads per work-group (the kernel's tree needs
                        // it), one work-group per `group` segments.
                        shape: Shape {
                            group_size: pass.group,
                            groups: segments.div_ceil(pass.group),
                        },
                        timed: events.is_some(),
                    };
                    // SAFETY: in queue order after this slab's upload and CTR launch, the
                    // kernel reads the slab's whole segments from the slot buffer holding
                    // the ciphertext (reserved for the slab's blocks) and writes its sums
                    // into the side buffer at this slab's place, which `reserve_sums` sized
                    // for every slab of this queue before the first launch. The arguments
                    // are `ghash_groups`' own list.
                    let launched = unsafe { adapter.launch(slot, launch)? };
                    if let Some(events) = events.as_mut() {
                        events.push(launched);
                    }
                }
            }
            // SAFETY: as for the upload above: `data[range]` stays borrowed and untouched
            // until `finish_slab` or the caller's wait; the output buffer holds the slab.
            unsafe { adapter.download(slot, &mut data[range.clone()])? };
            // Starts the device on this slab while the next one is enqueued.
            adapter.flush(slot)?;
            pending[queue] = Some(range);
            offset += length;
            slab_index += 1;
        }
        if let Some(pass) = gcm {
            for (slot, sums) in slots.iter_mut().zip(pass.sums.iter_mut()) {
                if !sums.is_empty() {
                    // SAFETY: `sums` is borrowed from `process_gcm`'s vectors until it has
                    // waited for every queue; the side buffer holds `sums.len()` bytes
                    // (reserved above), written by this queue's GHASH launches before, in
                    // queue order.
                    unsafe { adapter.download_sums(slot, sums)? };
                    adapter.flush(slot)?;
                }
            }
        }
        for step in 0..A::QUEUES {
            let queue = (slab_index + step) % A::QUEUES;
            if let Some(done) = pending[queue].take() {
                adapter.finish_slab(&mut slots[queue], &mut data[done])?;
            }
        }
        Ok(())
    }

    /// GCM's text pass over host `data` in place, with the GHASH of its ciphertext from a
    /// zero state (a final partial block zero-padded) for `GcmAccumulator::append`: the data
    /// crosses the bus once each way. Each slab is uploaded, runs `operation` (CTR, not
    /// segmented, on a 16-byte block cipher) and `ghash_groups` over the same device buffer
    /// (the output when encrypting, the input when decrypting), and only the text and one
    /// 16-byte sum per 1 MiB come back; the host joins those sums and hashes the final
    /// part shorter than a 4 KiB segment itself. On a device whose slab is shorter than a
    /// segment the hash runs on the host.
    pub fn process_gcm(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        hash_key: &[u8; 16],
        direction: GcmDirection,
        data: &mut [u8],
    ) -> Result<u128, GpuError> {
        operation.validate(key.algorithm(), data.len())?;
        if !matches!(operation, GpuOperation::Ctr { .. }) || key.algorithm().block_size() != 16 {
            return Err(GpuError::InvalidInput(
                "GCM runs CTR (not segmented) on a 16-byte block cipher".into(),
            ));
        }
        let ghash_key = GhashKey::new(hash_key);
        if data.is_empty() {
            return Ok(0);
        }
        let segment_bytes = ghash::WHOLE_SEGMENT_BYTES;
        let whole = data.len() / segment_bytes * segment_bytes;
        let Ok(plan) = SegmentPlan::new(segment_bytes, self.slab_bytes) else {
            // A slab shorter than a segment: the text on the device, the hash here.
            let hash_here = |data: &[u8]| append_tail_all(&ghash_key, data);
            return Ok(match direction {
                GcmDirection::Encrypt => {
                    self.process(key, operation, data)?;
                    hash_here(data)
                }
                GcmDirection::Decrypt => {
                    let sum = hash_here(data);
                    self.process(key, operation, data)?;
                    sum
                }
            });
        };
        // Decryption overwrites the ciphertext: keep the tail the host hashes.
        let ciphertext_tail = match direction {
            GcmDirection::Decrypt => data[whole..].to_vec(),
            GcmDirection::Encrypt => Vec::new(),
        };
        let slabs = data.len().div_ceil(plan.slab_bytes);
        let mut state = self.lock_state();
        let group = ghash_group_size(state.kernels.ghash_groups_max_group_size);
        let slab_sums = (plan.slab_bytes / segment_bytes).div_ceil(group);
        // Slab k runs on queue k % QUEUES, its sums after that queue's earlier slabs'; with
        // no whole segment (data under 4 KiB) there are none to reserve or download.
        let mut sums: Vec<Vec<u8>> = (0..A::QUEUES)
            .map(|queue| {
                let queue_slabs = (slabs + A::QUEUES - 1 - queue) / A::QUEUES;
                let bytes = if whole == 0 {
                    0
                } else {
                    16 * slab_sums * queue_slabs
                };
                vec![0u8; bytes]
            })
            .collect();
        let mut pass = GcmPass {
            plan,
            keys: ghash::GroupKeys::new(hash_key, group),
            group,
            source: match direction {
                GcmDirection::Encrypt => Argument::Output,
                GcmDirection::Decrypt => Argument::Input,
            },
            slab_sums,
            sums: &mut sums,
        };
        let decrypting = operation.kernel_operation().decrypts();
        let uploaded = self.adapter.upload_key(&mut state.keys, key, decrypting);
        let ran = uploaded.and_then(|()| {
            self.run_slabs(
                &mut state,
                key,
                operation,
                data,
                Staging::Staged,
                None,
                Some(&mut pass),
            )
        });
        // As in `run_host`: the data and the sums may be in flight until the queues drain.
        self.adapter.wait(true)?;
        let wiped = self.adapter.wipe_key(&mut state.keys, key);
        drop(state);
        ran.and(wiped)?;
        let full_group = ghash_key.power((group * segment_bytes / 16) as u64);
        let mut sum = 0u128;
        for slab in 0..slabs {
            let length = plan.slab_bytes.min(data.len() - slab * plan.slab_bytes);
            if length < segment_bytes {
                break;
            }
            let first = slab / A::QUEUES * slab_sums;
            sum = join_group_sums(
                &ghash_key,
                &full_group,
                sum,
                &sums[slab % A::QUEUES][16 * first..],
                length / segment_bytes,
                group,
            );
        }
        let tail = match direction {
            GcmDirection::Encrypt => &data[whole..],
            GcmDirection::Decrypt => &ciphertext_tail[..],
        };
        Ok(append_tail(&ghash_key, sum, tail))
    }

    /// GHASH partial sums of `data`, one per segment of `segment_bytes`; see
    /// [`GpuDevice::ghash_segments`]. Nothing secret stays on the device: the hash key (H)
    /// is a kernel argument, which the driver keeps in its own parameter memory, and the
    /// data is ciphertext.
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
        // A final partial block, zero-padded; outlives the wait below, as the copies need.
        let mut last_block = [0u8; 16];
        self.run_ghash_slabs(
            self.lock_state(),
            hash_key,
            plan,
            GhashKernel::Segments,
            data,
            &mut partial_bytes,
            &mut last_block,
        )?;
        Ok(partial_bytes
            .chunks_exact(16)
            .map(|pair| {
                let high = u64::from_le_bytes(pair[..8].try_into().expect("8 bytes"));
                let low = u64::from_le_bytes(pair[8..].try_into().expect("8 bytes"));
                ghash::partial_from_words(high, low)
            })
            .collect())
    }

    /// The GHASH of all of `data` from a zero state: whole 4 KiB segments on the device,
    /// joined per work-group there (`ghash_groups`), the groups' sums joined here with H to
    /// the power of a whole group's blocks computed once, and a tail shorter than a segment
    /// hashed here. See [`GpuDevice::ghash_whole`].
    pub fn ghash_whole(&self, hash_key: &[u8; 16], data: &[u8]) -> Result<u128, GpuError> {
        let segment_bytes = ghash::WHOLE_SEGMENT_BYTES;
        let plan = SegmentPlan::new(segment_bytes, self.slab_bytes)?;
        let key = GhashKey::new(hash_key);
        let whole = data.len() / segment_bytes * segment_bytes;
        let (device_part, tail) = data.split_at(whole);
        let mut sum = 0u128;
        if !device_part.is_empty() {
            let state = self.lock_state();
            let group = ghash_group_size(state.kernels.ghash_groups_max_group_size);
            let segments_per_slab = plan.slab_bytes / segment_bytes;
            let groups_in = |segments: usize| segments.div_ceil(group);
            let slab_groups = groups_in(segments_per_slab);
            let slabs = device_part.len().div_ceil(plan.slab_bytes);
            let mut partial_bytes = vec![0u8; 16 * slab_groups * slabs];
            let mut last_block = [0u8; 16];
            self.run_ghash_slabs(
                state,
                hash_key,
                plan,
                GhashKernel::Groups { group },
                device_part,
                &mut partial_bytes,
                &mut last_block,
            )?;
            let full_group = key.power((group * segment_bytes / 16) as u64);
            for (slab, sums) in device_part
                .chunks(plan.slab_bytes)
                .zip(partial_bytes.chunks(16 * slab_groups))
            {
                let segments = slab.len() / segment_bytes;
                sum = join_group_sums(&key, &full_group, sum, sums, segments, group);
            }
        }
        sum = append_tail(&key, sum, tail);
        Ok(sum)
    }

    /// [`GpuHost::enqueue_ghash_slabs`] under `state`, then the wait for every queue, which
    /// comes whether or not the enqueueing failed (host memory, the data and the partial
    /// sums, may be in flight until the queues drain), and only then the lock's release.
    #[allow(clippy::too_many_arguments)]
    fn run_ghash_slabs(
        &self,
        mut state: MutexGuard<'_, State<A>>,
        hash_key: &[u8; 16],
        plan: SegmentPlan,
        kernel: GhashKernel,
        data: &[u8],
        partial_bytes: &mut [u8],
        last_block: &mut [u8; 16],
    ) -> Result<(), GpuError> {
        let enqueued = self.enqueue_ghash_slabs(
            &mut state,
            hash_key,
            plan,
            kernel,
            data,
            partial_bytes,
            last_block,
        );
        let waited = self.adapter.wait(true);
        drop(state);
        enqueued.and(waited)
    }

    /// Enqueues every slab of whole segments: upload (a final partial block zero-padded),
    /// kernel, download of the slab's partial sums (one per segment, or one per work-group
    /// of segments with [`GhashKernel::Groups`]), on rotating queues. The caller waits.
    #[allow(clippy::too_many_arguments)]
    fn enqueue_ghash_slabs(
        &self,
        state: &mut State<A>,
        hash_key: &[u8; 16],
        plan: SegmentPlan,
        kernel: GhashKernel,
        data: &[u8],
        partial_bytes: &mut [u8],
        last_block: &mut [u8; 16],
    ) -> Result<(), GpuError> {
        let adapter = &self.adapter;
        let prepared_key = ghash::prepared_key_words(hash_key);
        // H^group for `ghash_groups`, made once per call rather than per slab.
        let group_keys = match kernel {
            GhashKernel::Segments => None,
            GhashKernel::Groups { group } => Some(ghash::GroupKeys::new(hash_key, group)),
        };
        let blocks_per_segment = plan.blocks_per_segment();
        let segments_per_slab = plan.slab_bytes / plan.segment_bytes;
        let sums_per_slab = match kernel {
            GhashKernel::Segments => segments_per_slab,
            GhashKernel::Groups { group } => segments_per_slab.div_ceil(group),
        };
        // One thread per segment: the grid-stride loop gives a thread more only when the
        // device allows fewer threads than segments.
        let geometry = LaunchGeometry {
            threads_per_group: state.geometry.threads_per_group,
            blocks_per_thread: 1,
        };
        let State {
            slots,
            keys,
            kernels,
            ..
        } = state;
        let slabs = data
            .chunks(plan.slab_bytes)
            .zip(partial_bytes.chunks_mut(16 * sums_per_slab));
        for (slab_index, (slab, slab_partials)) in slabs.enumerate() {
            let queue = slab_index % A::QUEUES;
            let slot = &mut slots[queue];
            let blocks = slab.len().div_ceil(16);
            let segments = ghash::segment_count(slab.len(), plan.segment_bytes);
            adapter.reserve(slot, blocks * 16, self.slab_bytes, Staging::Direct)?;
            let whole = slab.len() / 16 * 16;
            let arguments = match group_keys {
                None => arguments::ghash_arguments(blocks, blocks_per_segment, prepared_key)?,
                Some(group_keys) => arguments::ghash_group_arguments(
                    Argument::Input,
                    Argument::Output,
                    blocks,
                    blocks_per_segment,
                    group_keys,
                    0,
                )?,
            };
            let (ghash_kernel, shape, sums) = match kernel {
                GhashKernel::Segments => (
                    &kernels.ghash,
                    launch_shape(geometry, segments, kernels.ghash_max_group_size),
                    segments,
                ),
                // Exactly `group` threads per work-group (the kernel's tree needs it), one
                // work-group per `group` segments.
                GhashKernel::Groups { group } => (
                    &kernels.ghash_groups,
                    Shape {
                        group_size: group,
                        groups: segments.div_ceil(group),
                    },
                    segments.div_ceil(group),
                ),
            };
            let slab_partials = &mut slab_partials[..16 * sums];
            let launch = Launch {
                kernel: ghash_kernel,
                keys,
                arguments: &arguments,
                shape,
                timed: false,
            };
            // SAFETY: `slab` is borrowed from `data`, and the partial sums and `last_block`
            // from the caller (`ghash_segments` or `ghash_whole`), until `run_ghash_slabs`
            // has waited for every queue, and nothing touches them before. Only the final slab can end in a partial block, so
            // `last_block` is written once, before its copy is enqueued. The slot's buffers
            // hold `blocks * 16` bytes (reserved), at least the 16 bytes per segment the
            // kernel writes (every segment has a block); the arguments are the GHASH
            // kernel's own list.
            unsafe {
                if whole > 0 {
                    adapter.upload(slot, &slab[..whole], 0)?;
                    self.count_upload(whole);
                }
                if whole < slab.len() {
                    last_block[..slab.len() - whole].copy_from_slice(&slab[whole..]);
                    adapter.upload(slot, &last_block[..], whole)?;
                    self.count_upload(16);
                }
                adapter.launch(slot, launch)?;
                adapter.download(slot, slab_partials)?;
            }
            adapter.flush(slot)?;
        }
        Ok(())
    }
}

/// An API whose host path times every launch by the device's own clock (OpenCL's profiling
/// events), so that [`GpuHost::process_timed`] gives kernel times. Public only as [`Api`] is.
pub trait TimesHostLaunches: Api {}

impl<A: TimesHostLaunches> GpuHost<A> {
    /// [`GpuHost::process`] with the data copied straight between `data` and the device,
    /// timed: returns the kernels' time and the call's wall time end to end (key upload and
    /// wipe included). The kernel time is read from each slab's launch
    /// (`CL_PROFILING_COMMAND_START` to `_END`, the copies excluded) and counts the time
    /// during which at least one kernel ran: kernels of the two queues may overlap (PoCL
    /// runs them side by side), and overlapping time counts once, so the kernel time never
    /// exceeds the span of the call. Both are zero for empty data. On PoCL the "device" is
    /// the CPU, so the kernel time is CPU time.
    pub fn process_timed(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
    ) -> Result<(Duration, Duration), GpuError> {
        self.run_timed(key, operation, data, Staging::Direct)
    }
}

impl<A: Devices> GpuHost<A> {
    /// Every device the API's driver sees, for `parcrypt devices`. A CUDA driver without a
    /// usable device lists none; a HIP runtime without one gives [`GpuError::NoAmdGpu`]; no
    /// driver gives the API's own error ([`GpuError::NoOpenClLibrary`],
    /// [`GpuError::NoCudaDriver`], [`GpuError::NoHipRuntime`]), and an API not in this build
    /// [`GpuError::NotInThisBuild`].
    pub fn list() -> Result<Vec<A::Info>, GpuError> {
        A::list()
    }

    /// Opens device `index` of [`GpuHost::list`] with the default options.
    pub fn open(index: usize) -> Result<Self, GpuError> {
        A::open_with(index, &OpenOptions::default())
    }

    /// Opens device `index` of [`GpuHost::list`]: compiles (or loads) the kernels, runs the
    /// self-test and refuses the device if any kernel gives a wrong answer.
    pub fn open_with(index: usize, options: &OpenOptions) -> Result<Self, GpuError> {
        A::open_with(index, options)
    }

    /// What the driver reports about the device.
    pub fn info(&self) -> &A::Info {
        self.adapter.info()
    }
}

impl<A: Api> GpuDevice for GpuHost<A> {
    fn api(&self) -> GpuApi {
        A::API
    }

    fn description(&self) -> String {
        self.adapter.description()
    }

    fn identity(&self) -> String {
        tuning::device_identity(A::API.name(), &self.adapter.identity_description())
    }

    fn kind(&self) -> DeviceKind {
        self.adapter.kind()
    }

    fn table_copies(&self) -> Option<TableCopies> {
        Some(self.table_copies)
    }

    fn launch_geometry(&self) -> LaunchGeometry {
        GpuHost::launch_geometry(self)
    }

    fn set_launch_geometry(&self, geometry: LaunchGeometry) -> Result<(), GpuError> {
        GpuHost::set_launch_geometry(self, geometry)
    }

    fn set_tuning(&self, table: Option<Arc<TuneTable>>) {
        GpuHost::set_tuning(self, table)
    }

    fn tuning(&self) -> Option<Arc<TuneTable>> {
        GpuHost::tuning(self)
    }

    fn kernel_times(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
        runs: usize,
    ) -> Result<Vec<Duration>, GpuError> {
        let job = TimingJob {
            key,
            operation,
            data,
            runs,
        };
        A::kernel_times(self, job)
    }

    fn process(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
    ) -> Result<(), GpuError> {
        GpuHost::process(self, key, operation, data)
    }

    fn ghash_segments(
        &self,
        hash_key: &[u8; 16],
        data: &[u8],
        segment_bytes: usize,
    ) -> Result<Vec<u128>, GpuError> {
        GpuHost::ghash_segments(self, hash_key, data, segment_bytes)
    }

    fn ghash_whole(&self, hash_key: &[u8; 16], data: &[u8]) -> Result<u128, GpuError> {
        GpuHost::ghash_whole(self, hash_key, data)
    }

    fn process_gcm(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        hash_key: &[u8; 16],
        direction: GcmDirection,
        data: &mut [u8],
    ) -> Result<u128, GpuError> {
        GpuHost::process_gcm(self, key, operation, hash_key, direction, data)
    }
}

/// What the CUDA and HIP backends' tests of opening without a GPU share: opening device 0
/// either worked, and the device then encrypts a block, or failed with an error `expected`
/// accepts (no driver, runtime, device or run-time compiler here).
#[cfg(all(test, any(feature = "cuda", feature = "hip")))]
pub(crate) fn assert_opens_or_says_why<A: Api>(
    opened: Result<GpuHost<A>, GpuError>,
    expected: impl FnOnce(&GpuError) -> bool,
) {
    match opened {
        Ok(device) => {
            let key = KeyMaterial::new(parcrypt_ciphers::Algorithm::Aes128, &[0; 16]).unwrap();
            device
                .process(&key, &GpuOperation::EcbEncrypt, &mut [0; 32])
                .unwrap();
        }
        Err(error) => assert!(expected(&error), "{error}"),
    }
}

/// What the CUDA and HIP backends' listing tests share: the devices `listed` are numbered
/// in order (`index`, which may check more of each), or listing failed with an error
/// `expected` accepts (no driver or runtime here).
#[cfg(all(test, any(feature = "cuda", feature = "hip")))]
pub(crate) fn assert_lists_or_says_why<Info>(
    listed: Result<Vec<Info>, GpuError>,
    index: impl Fn(&Info) -> usize,
    expected: impl FnOnce(&GpuError) -> bool,
) {
    match listed {
        Ok(devices) => {
            for (number, device) in devices.iter().enumerate() {
                assert_eq!(index(device), number);
            }
        }
        Err(error) => assert!(expected(&error), "{error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_SLAB_BYTES;

    #[test]
    fn slabs_are_whole_blocks_within_limits() {
        assert_eq!(slab_size(DEFAULT_SLAB_BYTES, 2 << 30), DEFAULT_SLAB_BYTES);
        assert_eq!(slab_size(1000, 2 << 30), 992);
        assert_eq!(slab_size(3, 2 << 30), 16);
        assert_eq!(slab_size(DEFAULT_SLAB_BYTES, 1 << 20), 1 << 20);
        assert_eq!(slab_size(usize::MAX, u64::MAX), MAX_SLAB_BYTES);
        // No device limit (CUDA): only the blocks and MAX_SLAB_BYTES.
        assert_eq!(slab_size(64 << 20, u64::MAX), 64 << 20);
        assert_eq!(slab_size(1000, u64::MAX), 992);
        assert_eq!(slab_size(3, u64::MAX), 16);
    }

    #[test]
    fn slab_buffers_grow_by_powers_of_two_up_to_the_slab() {
        assert_eq!(grown_capacity(1000, 4096), 1024);
        assert_eq!(grown_capacity(5000, 4096), 5000);
        assert_eq!(grown_capacity(4096, 4096), 4096);
    }

    #[test]
    fn overlapping_kernel_intervals_count_once() {
        assert_eq!(busy_nanoseconds(Vec::new()), 0);
        assert_eq!(busy_nanoseconds(vec![(10, 20)]), 10);
        assert_eq!(busy_nanoseconds(vec![(15, 30), (10, 20), (40, 45)]), 25);
        assert_eq!(busy_nanoseconds(vec![(10, 20), (20, 25), (12, 14)]), 15);
    }

    #[test]
    fn zero_geometry_is_refused() {
        let bad = LaunchGeometry {
            threads_per_group: 0,
            blocks_per_thread: 4,
        };
        assert!(validate_geometry(bad).is_err());
        let bad = LaunchGeometry {
            threads_per_group: 4,
            blocks_per_thread: 0,
        };
        assert!(validate_geometry(bad).is_err());
    }

    #[test]
    fn devices_are_shareable_between_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<crate::OpenClDevice>();
        assert_send_sync::<crate::CudaDevice>();
    }

    fn shape(group_size: usize, groups: usize) -> Shape {
        Shape { group_size, groups }
    }

    #[test]
    fn launches_cover_every_block_in_whole_groups() {
        let geometry = LaunchGeometry {
            threads_per_group: 256,
            blocks_per_thread: 16,
        };
        // 1000 blocks: 63 threads, one group of 256.
        assert_eq!(launch_shape(geometry, 1000, 1024), shape(256, 1));
        // Clamped to what the kernel allows: 63 threads in groups of 32.
        assert_eq!(launch_shape(geometry, 1000, 32), shape(32, 2));
        assert_eq!(launch_shape(geometry, 1 << 20, 1024), shape(256, 256));
        // Nothing to do still launches one group (never the case on the hosts' paths).
        assert_eq!(launch_shape(geometry, 0, 1024), shape(256, 1));
    }
}
