//! How a job is cut into work items, and `auto`'s calibrated cost model: one thread for
//! inputs too small to repay waking the pool, the pool above.

use parcrypt_ciphers::Implementation;
use parcrypt_modes::{CipherSpec, Direction, Mode};

use crate::crypter::{Crypter, JobSpec};
use crate::{Backend, Engine};

/// Under `auto`, inputs shorter than this stay on one thread when no cost model is known
/// for the job (a conservative figure for the fastest cipher; see [`CostModel`]).
pub const AUTO_PARALLEL_THRESHOLD: usize = 1 << 20;

/// The smallest work item `pool` cuts a job into.
const POOL_MIN_ITEM_BYTES: usize = 64 * 1024;

/// The least one-thread work `auto` puts in one item: enough that an item's own cost in the
/// pool (a steal, a join) stays a few per cent of it, for fast and slow ciphers alike.
const AUTO_MIN_ITEM_SECONDS: f64 = 5e-6;

/// The share of the one-thread time a split must promise to finish in (see `auto_items`).
const AUTO_MIN_SPLIT_GAIN: f64 = 0.9;

/// Cost models are kept per cipher, mode and direction.
pub(crate) const CALIBRATION_SLOTS: usize =
    parcrypt_ciphers::Algorithm::ALL.len() * Mode::ALL.len() * 2;

/// Bytes the calibration of `auto` times.
const CALIBRATION_BYTES: usize = 256 << 10;

/// Rounds of the calibration; each times the job once on one thread and once split.
const CALIBRATION_ROUNDS: usize = 5;

/// What `auto` knows about a job: how fast one thread runs it, measured on this machine.
///
/// `auto` splits a job when the split's fixed cost (handing the items to the pool, waking
/// its threads, joining them, data moving between caches) plus the work spread over the
/// threads that get a share promises at least a tenth off the work on one thread:
/// `split + n / (rate * workers) < 0.9 * n / rate`, where no item holds less than 5
/// microseconds of work. Both figures are measured per cipher, mode and direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostModel {
    /// Bytes per second one thread runs the job at.
    pub seq_bytes_per_second: f64,
    /// Seconds a split job takes beyond its one-thread time divided by the threads.
    pub split_seconds: f64,
}

impl Engine {
    /// The backend that will actually run a job of `length` bytes.
    pub fn resolve(&self, length: usize, model: Option<CostModel>) -> Backend {
        match self.backend {
            Backend::Auto if self.auto_items(length, model) > 1 => Backend::Pool,
            Backend::Auto => Backend::Seq,
            other => other,
        }
    }

    /// How many items `auto` cuts a job of `length` bytes into: one (on the calling thread)
    /// unless the cost model says the pool finishes first; then items of at least
    /// [`AUTO_MIN_ITEM_SECONDS`] of work, at most 8 per thread, in a multiple of the threads
    /// that get one (so that no thread gets one more item than another).
    pub(crate) fn auto_items(&self, length: usize, model: Option<CostModel>) -> usize {
        if self.threads == 1 {
            return 1;
        }
        let Some(model) = model else {
            return if length >= AUTO_PARALLEL_THRESHOLD {
                self.pool_items(length)
            } else {
                1
            };
        };
        let alone = length as f64 / model.seq_bytes_per_second.max(1.0);
        let items = ((alone / AUTO_MIN_ITEM_SECONDS) as usize).min(self.threads * 8);
        if items < 2 {
            return 1;
        }
        let workers = items.min(self.threads);
        let shared = model.split_seconds + alone / workers as f64;
        // A split must promise a tenth off: one that misses by less leaves `auto` within its
        // target on one thread, while a wrong split (threads to wake, data to move to other
        // caches) can cost far more than it promised.
        if shared < alone * AUTO_MIN_SPLIT_GAIN {
            items - items % workers
        } else {
            1
        }
    }

    /// How many items `pool` cuts a job of `length` bytes into: several per thread, so
    /// that a slowed thread takes fewer, none under [`POOL_MIN_ITEM_BYTES`]. Four per thread
    /// ran 1 MiB AES-CTR jobs about 1.15x faster than eight (fewer ranges to hand out and
    /// combine), and two per thread had slow outliers when a core was taken away.
    pub(crate) fn pool_items(&self, length: usize) -> usize {
        (self.threads * 4).min(length / POOL_MIN_ITEM_BYTES).max(1)
    }

    /// The cost model of a cipher, mode and direction on this machine, measured on first use
    /// (a throwaway key over 256 KiB, on one thread and split, a few times each; see
    /// `calibrate`) and remembered by the engine. Only `auto` with several threads needs it;
    /// other engines return `None` without measuring.
    pub fn cost_model(&self, spec: CipherSpec, direction: Direction) -> Option<CostModel> {
        if self.backend != Backend::Auto || self.threads == 1 {
            return None;
        }
        let slot = ((spec.algorithm as usize * Mode::ALL.len() + spec.mode as usize) * 2)
            + usize::from(direction == Direction::Decrypt);
        *self.calibration[slot].get_or_init(|| calibrate(self, spec, direction))
    }
}

/// A key and an all-zero IV for jobs that are only timed.
pub(crate) struct TimedJob {
    spec: CipherSpec,
    direction: Direction,
    key: Vec<u8>,
    iv: Option<Vec<u8>>,
}

impl TimedJob {
    /// `key` must have a length `spec`'s algorithm takes; the IV has the length `spec` takes
    /// (none for ECB, 12 bytes for GCM).
    pub(crate) fn new(spec: CipherSpec, direction: Direction, key: Vec<u8>) -> Self {
        let iv = match spec.mode {
            Mode::Ecb => None,
            Mode::Gcm => Some(vec![0u8; 12]),
            _ => Some(vec![0u8; spec.algorithm.block_size()]),
        };
        TimedJob {
            spec,
            direction,
            key,
            iv,
        }
    }

    /// The job, unpadded, on the fast implementation.
    pub(crate) fn spec(&self) -> JobSpec<'_> {
        JobSpec {
            spec: self.spec,
            direction: self.direction,
            key: &self.key,
            iv: self.iv.as_deref(),
            allow_short_gcm_iv: false,
            aad: None,
            padding: false,
            implementation: Implementation::Fast,
        }
    }
}

/// Calibrates `auto` on `engine` (an `auto` engine with several threads) for one cipher, mode
/// and direction: [`CALIBRATION_BYTES`] with a throwaway all-zero key and IV, timed on the
/// calling thread and split over the engine's pool in turn, each job set up afresh as a
/// caller's would be (so that a costly key schedule lets the pool's threads fall asleep
/// first, as it does in use). The split's fixed cost is what the split took beyond the
/// one-thread time divided by the threads (best runs of each).
fn calibrate(engine: &Engine, spec: CipherSpec, direction: Direction) -> Option<CostModel> {
    let timed = TimedJob::new(spec, direction, vec![0u8; spec.algorithm.key_lengths().0]);
    let job = timed.spec();
    // Models under which `auto` never splits, and always splits into its most items.
    let split_never = CostModel {
        seq_bytes_per_second: f64::MAX,
        split_seconds: 0.0,
    };
    let split_always = CostModel {
        seq_bytes_per_second: 1.0,
        split_seconds: 0.0,
    };
    let mut scratch = vec![0u8; CALIBRATION_BYTES];
    let mut alone = Vec::with_capacity(CALIBRATION_ROUNDS);
    let mut split = Vec::with_capacity(CALIBRATION_ROUNDS);
    // One untimed pass of each first: tables, pages and the pool's threads warm.
    for round in 0..=CALIBRATION_ROUNDS {
        for (model, times) in [(split_never, &mut alone), (split_always, &mut split)] {
            // The CPU is calibrated, whatever GPU `auto` may also have.
            let mut crypter = Crypter::on_cpu_with_cost_model(engine, &job, model).ok()?;
            let start = std::time::Instant::now();
            crypter.update(&mut scratch).ok()?;
            if round > 0 {
                times.push(start.elapsed().as_secs_f64());
            }
        }
    }
    // The best of each: what this machine does when nothing else gets in the way (other
    // work on the machine only ever adds time, and one disturbed round must not keep
    // `auto` off the pool for the engine's life).
    let best = |times: &[f64]| times.iter().copied().fold(f64::INFINITY, f64::min);
    let (alone, split) = (best(&alone).max(1e-9), best(&split));
    let shared = alone / engine.threads() as f64;
    Some(CostModel {
        seq_bytes_per_second: CALIBRATION_BYTES as f64 / alone,
        split_seconds: (split - shared).max(0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_keeps_small_jobs_on_one_thread_and_splits_large_ones() {
        let engine = Engine::new(Backend::Auto, Some(2)).unwrap();
        let fast = Some(CostModel {
            seq_bytes_per_second: 50e9,
            split_seconds: 5e-6,
        });
        let slow = Some(CostModel {
            seq_bytes_per_second: 1e6,
            split_seconds: 5e-6,
        });
        assert_eq!(engine.resolve(1024, fast), Backend::Seq);
        assert_eq!(engine.resolve(1 << 30, fast), Backend::Pool);
        // A slow cipher repays the pool much sooner than a fast one.
        assert_eq!(engine.resolve(256 << 10, slow), Backend::Pool);
        assert_eq!(engine.plan(1024, 16, fast).len(), 1);
        let single = Engine::new(Backend::Auto, Some(1)).unwrap();
        assert_eq!(single.resolve(1 << 30, fast), Backend::Seq);
        // Calibration measures a positive rate and a finite split cost for real ciphers, and
        // remembers them.
        for name in ["aes-128-gcm", "bf-cbc"] {
            for direction in [Direction::Encrypt, Direction::Decrypt] {
                let model = engine.cost_model(name.parse().unwrap(), direction).unwrap();
                assert!(model.seq_bytes_per_second > 0.0 && model.seq_bytes_per_second.is_finite());
                assert!(
                    model.split_seconds >= 0.0 && model.split_seconds < 1.0,
                    "{model:?}"
                );
                assert_eq!(
                    engine.cost_model(name.parse().unwrap(), direction),
                    Some(model)
                );
            }
        }
        assert!(Engine::new(Backend::Pool, Some(2))
            .unwrap()
            .cost_model("aes-128-gcm".parse().unwrap(), Direction::Encrypt)
            .is_none());
    }

    #[test]
    fn auto_items_hold_enough_work_and_share_out_evenly() {
        for threads in [2usize, 3, 16] {
            let engine = Engine::new(Backend::Auto, Some(threads)).unwrap();
            for rate in [1e6, 7e8, 5e10] {
                let model = Some(CostModel {
                    seq_bytes_per_second: rate,
                    split_seconds: 8e-6,
                });
                for length in [0usize, 1, 1024, 16 << 10, 64 << 10, 1 << 20, 64 << 20] {
                    let lengths = engine.plan(length, 16, model);
                    assert_eq!(lengths.iter().sum::<usize>(), length);
                    let items = lengths.len();
                    assert!(items <= threads * 8, "{items} items for {threads} threads");
                    if items == 1 {
                        assert_eq!(engine.resolve(length, model), Backend::Seq);
                        continue;
                    }
                    assert_eq!(engine.resolve(length, model), Backend::Pool);
                    assert_eq!(
                        items % items.min(threads),
                        0,
                        "{items} items over {threads} threads"
                    );
                    for item in &lengths {
                        // Alignment may take up to one block off an item.
                        let seconds = (item + 16) as f64 / rate;
                        assert!(
                            seconds >= AUTO_MIN_ITEM_SECONDS,
                            "{item}-byte item at {rate} B/s"
                        );
                    }
                    // A split is only made where it promises a tenth off the one-thread time.
                    let alone = length as f64 / rate;
                    let workers = items.min(threads) as f64;
                    assert!(8e-6 + alone / workers < alone * AUTO_MIN_SPLIT_GAIN);
                }
            }
            // A job of many seconds on one thread is always split, into 8 items per thread.
            let slow = Some(CostModel {
                seq_bytes_per_second: 1e6,
                split_seconds: 8e-6,
            });
            assert_eq!(engine.plan(64 << 20, 16, slow).len(), threads * 8);
            // A split that costs more than it saves is not made, whatever the size.
            let costly = Some(CostModel {
                seq_bytes_per_second: 1e9,
                split_seconds: 1.0,
            });
            assert_eq!(engine.plan(64 << 20, 16, costly).len(), 1);
        }
    }
}
