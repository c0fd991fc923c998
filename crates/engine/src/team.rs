//! The `pool` backend's threads: a team that the calling thread leads.
//!
//! A job is one `Fn() + Sync` (in practice: "take ranges from a shared counter until none is
//! left"). The caller opens the job, runs it itself at once, then closes it and waits only
//! for the team threads that actually *joined* it. A thread that wakes after the caller has
//! closed the job never touches it. So a job never waits for a sleeping thread to wake: on
//! a VM that wake costs tens of microseconds, longer than a whole 1 MiB AES-CTR job on one
//! core, and with rayon's scope (which must wait for every spawned task) a 256 KiB job on
//! two threads ran at a quarter of one thread's rate.
//!
//! Between jobs a team thread keeps looking for the next one for a short while (yielding
//! its core to any other runnable thread while it looks) before it parks, the way an OpenMP
//! team spins before it sleeps, so that back-to-back jobs (a benchmark loop, a file's
//! chunks, a JVM's calls) find it awake. The engine's builder sets that while
//! (`EngineBuilder::pool_spin`; zero parks at once); the default is [`DEFAULT_SPIN`].
//!
//! One job at a time: a second caller that finds the team busy (another thread's job, or a
//! job started from inside a job) runs its job alone on its own thread instead of waiting.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a team thread looks for the next job before it parks.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(200);

/// The job state word: the epoch in the high 32 bits, [`OPEN`] while threads may join, and
/// the number of threads inside the job in the bits below.
const OPEN: u64 = 1 << 31;
const JOINED: u64 = OPEN - 1;

fn epoch(state: u64) -> u64 {
    state >> 32
}

/// What a job's threads share, on the caller's stack for the length of the job.
struct JobCell<'a> {
    work: &'a (dyn Fn() + Sync + 'a),
    /// The first panic of a team thread, re-raised on the caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

struct Shared {
    state: AtomicU64,
    /// The open job, valid from the store that opens an epoch until the caller has seen
    /// the joined count fall to zero after closing it (lifetime erased: see `Team::run`).
    job: AtomicPtr<JobCell<'static>>,
    /// How many team threads the open job wants.
    wanted: AtomicUsize,
    /// Set while a caller leads a job.
    busy: AtomicBool,
    /// Parked threads wait here; `sleepers` says whether a caller must wake them.
    sleepers: AtomicUsize,
    park: Mutex<()>,
    wake: Condvar,
    stop: AtomicBool,
    spin: Duration,
}

/// A team of `threads - 1` threads that, with the caller, run one job at a time.
pub(crate) struct Team {
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
}

impl Team {
    /// Starts `threads - 1` team threads (none for one thread), each looking for the next
    /// job for `spin` before it parks.
    pub(crate) fn start(threads: usize, spin: Duration) -> std::io::Result<Team> {
        let shared = Arc::new(Shared {
            state: AtomicU64::new(0),
            job: AtomicPtr::new(std::ptr::null_mut()),
            wanted: AtomicUsize::new(0),
            busy: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            park: Mutex::new(()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            spin,
        });
        let mut team = Team {
            shared,
            handles: Vec::new(),
        };
        for index in 1..threads {
            let shared = Arc::clone(&team.shared);
            let handle = std::thread::Builder::new()
                .name(format!("parcrypt-pool-{index}"))
                .spawn(move || member(&shared))?;
            // On an error above, dropping `team` stops the threads started so far.
            team.handles.push(handle);
        }
        Ok(team)
    }

    /// Runs `work` on the calling thread and on up to `helpers` team threads at once, and
    /// returns when every thread that took part has returned from it. `work` must make
    /// progress alone: the caller may be the only thread that runs it. A panic in any
    /// thread's `work` is raised here, after the others have finished.
    pub(crate) fn run(&self, helpers: usize, work: &(dyn Fn() + Sync)) {
        let shared = &*self.shared;
        let helpers = helpers.min(self.handles.len());
        if helpers == 0
            || shared
                .busy
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            work();
            return;
        }
        let cell = JobCell {
            work,
            panic: Mutex::new(None),
        };
        // SAFETY (of the lifetime erasure): team threads dereference this pointer only
        // between joining the epoch opened below (a CAS that needs OPEN set in that epoch)
        // and leaving it (a decrement of the joined count). `Closer::drop` clears OPEN and
        // then waits for the joined count to reach zero before this frame can return or
        // unwind, so no thread reads `cell` after it is gone.
        let pointer = std::ptr::from_ref(&cell)
            .cast_mut()
            .cast::<JobCell<'static>>();
        shared.job.store(pointer, Ordering::Relaxed);
        shared.wanted.store(helpers, Ordering::Relaxed);
        let state = shared.state.load(Ordering::Relaxed);
        debug_assert_eq!(
            state & (OPEN | JOINED),
            0,
            "a closed job has no threads left"
        );
        // SeqCst pairs with the parking thread's SeqCst increment of `sleepers` and load of
        // `state` (see `member`): one of the two sees the other's write, so no thread parks
        // through an opened job without being woken.
        shared.state.store(
            (epoch(state).wrapping_add(1) << 32) | OPEN,
            Ordering::SeqCst,
        );
        if shared.sleepers.load(Ordering::SeqCst) > 0 {
            let _guard = shared
                .park
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            shared.wake.notify_all();
        }
        {
            let _closer = Closer(shared);
            work();
        }
        let panic = cell
            .panic
            .into_inner()
            .unwrap_or_else(|poison| poison.into_inner());
        if let Some(payload) = panic {
            panic::resume_unwind(payload);
        }
    }
}

/// Closes the caller's job and waits for the threads inside it, also when the caller's own
/// `work` panics.
struct Closer<'a>(&'a Shared);

impl Drop for Closer<'_> {
    fn drop(&mut self) {
        let shared = self.0;
        shared.state.fetch_and(!OPEN, Ordering::AcqRel);
        let mut spins = 0u32;
        // Acquire pairs with the Release decrement of a leaving thread: its writes (its
        // results, its panic) are visible once the count is zero.
        while shared.state.load(Ordering::Acquire) & JOINED != 0 {
            spins += 1;
            if spins < 1 << 10 {
                std::hint::spin_loop();
            } else {
                // A joined thread was preempted inside its range: give it the core.
                std::thread::yield_now();
            }
        }
        shared.job.store(std::ptr::null_mut(), Ordering::Relaxed);
        shared.busy.store(false, Ordering::Release);
    }
}

/// A team thread: join each job it finds open, look for the next for `spin`, then park.
fn member(shared: &Shared) {
    let mut seen = epoch(shared.state.load(Ordering::Acquire));
    let mut idle_since = Instant::now();
    loop {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        let state = shared.state.load(Ordering::Acquire);
        if epoch(state) != seen {
            if state & OPEN != 0
                && ((state & JOINED) as usize) < shared.wanted.load(Ordering::Relaxed)
            {
                if shared
                    .state
                    .compare_exchange_weak(state, state + 1, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    continue;
                }
                take_part(shared);
            }
            seen = epoch(state);
            idle_since = Instant::now();
            continue;
        }
        if idle_since.elapsed() < shared.spin {
            // Yield rather than spin: the core stays free for any other runnable thread
            // (a file's reader and writer). Pure spinning measured no faster here.
            std::thread::yield_now();
            continue;
        }
        let mut guard = shared
            .park
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        shared.sleepers.fetch_add(1, Ordering::SeqCst);
        while epoch(shared.state.load(Ordering::SeqCst)) == seen
            && !shared.stop.load(Ordering::SeqCst)
        {
            guard = shared
                .wake
                .wait(guard)
                .unwrap_or_else(|poison| poison.into_inner());
        }
        shared.sleepers.fetch_sub(1, Ordering::SeqCst);
        drop(guard);
        idle_since = Instant::now();
    }
}

/// Runs the open job on a thread that has just joined it, then leaves it.
fn take_part(shared: &Shared) {
    let pointer = shared.job.load(Ordering::Relaxed);
    // SAFETY: this thread joined the epoch while it was open (the Acquire CAS in `member`
    // synchronises with the caller's store that opened it, which follows its store of
    // `job`), and the caller keeps the cell alive until this thread leaves below.
    let cell = unsafe { &*pointer };
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| (cell.work)())) {
        let mut first = cell
            .panic
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        first.get_or_insert(payload);
    }
    // Release: this thread's writes happen before the caller sees it gone.
    shared.state.fetch_sub(1, Ordering::Release);
}

impl Drop for Team {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        {
            let _guard = self
                .shared
                .park
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            self.shared.wake.notify_all();
        }
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A job of `items` items taken from a counter; returns how often each item ran.
    fn counted_job(team: &Team, helpers: usize, items: usize) -> Vec<usize> {
        let next = AtomicUsize::new(0);
        let runs: Vec<AtomicUsize> = (0..items).map(|_| AtomicUsize::new(0)).collect();
        team.run(helpers, &|| loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(run) = runs.get(index) else { break };
            run.fetch_add(1, Ordering::Relaxed);
            std::hint::black_box((0..200).sum::<usize>());
        });
        runs.into_iter().map(AtomicUsize::into_inner).collect()
    }

    #[test]
    fn many_jobs_run_every_item_exactly_once() {
        for threads in [1, 2, 3, 5] {
            let team = Team::start(threads, DEFAULT_SPIN).unwrap();
            for job in 0..20_000 {
                let items = 1 + job % 17;
                let runs = counted_job(&team, threads - 1, items);
                assert!(runs.iter().all(|&n| n == 1), "job {job}: {runs:?}");
            }
        }
    }

    #[test]
    fn team_threads_take_part_and_parked_threads_wake() {
        let team = Team::start(2, DEFAULT_SPIN).unwrap();
        for round in 0..5 {
            // Let the team thread park, then give it a job the caller cannot finish alone.
            std::thread::sleep(DEFAULT_SPIN * 5 + Duration::from_millis(5));
            let arrived = AtomicUsize::new(0);
            let both = || {
                arrived.fetch_add(1, Ordering::SeqCst);
                let deadline = Instant::now() + Duration::from_secs(10);
                while arrived.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
                    std::thread::yield_now();
                }
            };
            team.run(1, &both);
            assert_eq!(
                arrived.into_inner(),
                2,
                "round {round}: the team thread never came"
            );
        }
    }

    #[test]
    fn a_panic_reaches_the_caller_and_the_team_keeps_working() {
        let team = Team::start(3, DEFAULT_SPIN).unwrap();
        for round in 0..50 {
            let next = AtomicUsize::new(0);
            let result = panic::catch_unwind(AssertUnwindSafe(|| {
                team.run(2, &|| loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= 64 {
                        break;
                    }
                    if index == 40 {
                        panic!("item forty");
                    }
                })
            }));
            let payload = result.expect_err("the panic must reach the caller");
            assert_eq!(
                payload.downcast_ref::<&str>(),
                Some(&"item forty"),
                "{round}"
            );
            assert!(counted_job(&team, 2, 9).iter().all(|&n| n == 1));
        }
    }

    #[test]
    fn concurrent_and_nested_callers_each_finish() {
        let team = Team::start(3, DEFAULT_SPIN).unwrap();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for items in 1..500 {
                        assert!(counted_job(&team, 2, items % 23 + 1)
                            .iter()
                            .all(|&n| n == 1));
                    }
                });
            }
        });
        // A job that starts a job on the same team runs the inner one on its own thread.
        let inner_runs = AtomicUsize::new(0);
        team.run(2, &|| {
            let runs = counted_job(&team, 2, 5);
            assert!(runs.iter().all(|&n| n == 1));
            inner_runs.fetch_add(1, Ordering::Relaxed);
        });
        assert!(inner_runs.into_inner() >= 1);
    }
}
