//! Medians and spreads of repeated timings, and how many repetitions a figure gets.

use std::time::{Duration, Instant};

/// Summary of repeated timings of the same work.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    pub median: Duration,
    pub mean: Duration,
    pub min: Duration,
    pub max: Duration,
    /// Sample standard deviation (0 for a single sample).
    pub stddev: Duration,
    pub runs: usize,
}

impl Stats {
    /// Summarises `samples` (at least one).
    pub fn from_samples(samples: &[Duration]) -> Stats {
        assert!(!samples.is_empty(), "no samples");
        let mut sorted = samples.to_vec();
        sorted.sort();
        let middle = sorted.len() / 2;
        let median = if sorted.len() % 2 == 1 {
            sorted[middle]
        } else {
            (sorted[middle - 1] + sorted[middle]) / 2
        };
        let seconds: Vec<f64> = sorted.iter().map(Duration::as_secs_f64).collect();
        let mean = seconds.iter().sum::<f64>() / seconds.len() as f64;
        let variance = if seconds.len() > 1 {
            seconds.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>()
                / (seconds.len() - 1) as f64
        } else {
            0.0
        };
        Stats {
            median,
            mean: Duration::from_secs_f64(mean),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            stddev: Duration::from_secs_f64(variance.sqrt()),
            runs: sorted.len(),
        }
    }

    /// Bytes per second at the median time.
    pub fn rate(&self, bytes: u64) -> f64 {
        bytes as f64 / self.median.as_secs_f64().max(1e-12)
    }
}

/// Where time comes from: the real clock, or a scripted one in tests.
pub trait Clock {
    fn now(&mut self) -> Duration;
}

/// The monotonic system clock.
pub struct SystemClock(Instant);

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock(Instant::now())
    }
}

impl Clock for SystemClock {
    fn now(&mut self) -> Duration {
        self.0.elapsed()
    }
}

/// Runs `work` `warmup` times untimed, then `repeats` times timed.
pub fn measure(
    clock: &mut dyn Clock,
    warmup: usize,
    repeats: usize,
    mut work: impl FnMut(),
) -> Stats {
    for _ in 0..warmup {
        work();
    }
    let samples: Vec<Duration> = (0..repeats.max(1))
        .map(|_| {
            let start = clock.now();
            work();
            clock.now() - start
        })
        .collect();
    Stats::from_samples(&samples)
}

/// How often a figure's work runs: warm-up, then enough timed runs to fill `target`, within
/// `min_runs..=max_runs`. Work shorter than `min_sample` is repeated inside each timed run
/// (several jobs back to back) so that the clock's resolution and the cost of reading it do
/// not show in the figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Repetition {
    pub warmup: usize,
    pub min_runs: usize,
    pub max_runs: usize,
    pub target: Duration,
    pub min_sample: Duration,
}

impl Repetition {
    /// Exactly `runs` timed runs of one job each after one warm-up (as the seeds report a
    /// mean of 10).
    pub fn exactly(runs: usize) -> Self {
        Repetition {
            warmup: 1,
            min_runs: runs.max(1),
            max_runs: runs.max(1),
            target: Duration::ZERO,
            min_sample: Duration::ZERO,
        }
    }

    /// Adaptive: at least `min_runs` (3 is the least a median means anything with), as many
    /// as fit in `target`, at most `max_runs`.
    pub fn adaptive(min_runs: usize, max_runs: usize, target: Duration) -> Self {
        Repetition {
            warmup: 1,
            min_runs: min_runs.max(1),
            max_runs: max_runs.max(min_runs.max(1)),
            target,
            min_sample: Duration::from_millis(2),
        }
    }
}

/// Something to start and stop around the timed runs only (an energy meter).
pub trait Probe {
    fn start(&mut self);
    fn stop(&mut self);
}

/// No probe.
impl Probe for () {
    fn start(&mut self) {}
    fn stop(&mut self) {}
}

/// The outcome of [`measure_repeated`]: per-job statistics and how they were obtained.
#[derive(Clone, Debug, PartialEq)]
pub struct Sampled {
    /// Per job: each timed run's time divided by its jobs.
    pub stats: Stats,
    pub warmup: usize,
    pub jobs_per_run: usize,
}

impl Sampled {
    /// Jobs timed in all.
    pub fn jobs(&self) -> usize {
        self.stats.runs * self.jobs_per_run
    }
}

/// Measures one job of `work` as [`Repetition`] says.
///
/// `work` runs one job and returns `Some(time)` when the device timed the job itself (GPU
/// events, for kernel-only figures): a run made only of such jobs counts their sum instead
/// of the host clock. The first warm-up job is timed to choose the jobs per run and the run
/// count; `probe` is started just before the first timed run and stopped just after the
/// last.
pub fn measure_repeated<E>(
    clock: &mut dyn Clock,
    repetition: Repetition,
    probe: &mut dyn Probe,
    mut work: impl FnMut() -> Result<Option<Duration>, E>,
) -> Result<Sampled, E> {
    // One job, timed: how long the work takes, cold caches and lazy allocations included.
    let start = clock.now();
    let reported = work()?;
    let first = reported.unwrap_or_else(|| clock.now() - start);
    let jobs_per_run = if first < repetition.min_sample && !repetition.min_sample.is_zero() {
        let per_job = first.max(Duration::from_nanos(50));
        (repetition.min_sample.as_nanos() / per_job.as_nanos()).clamp(1, 1_000_000) as usize + 1
    } else {
        1
    };
    let mut run = |clock: &mut dyn Clock| -> Result<Duration, E> {
        let start = clock.now();
        let mut device_time = Some(Duration::ZERO);
        for _ in 0..jobs_per_run {
            let reported = work()?;
            device_time = device_time.zip(reported).map(|(sum, time)| sum + time);
        }
        let elapsed = clock.now() - start;
        Ok(device_time.unwrap_or(elapsed))
    };
    for _ in 1..repetition.warmup {
        run(clock)?;
    }
    let per_run = first * jobs_per_run as u32;
    let fitting = if per_run.is_zero() {
        repetition.max_runs
    } else {
        (repetition.target.as_secs_f64() / per_run.as_secs_f64()) as usize
    };
    let runs = fitting.clamp(repetition.min_runs, repetition.max_runs);
    probe.start();
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        samples.push(run(clock)? / jobs_per_run as u32);
    }
    probe.stop();
    Ok(Sampled {
        stats: Stats::from_samples(&samples),
        warmup: repetition.warmup.max(1),
        jobs_per_run,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock that returns scripted readings, one per call.
    struct ScriptedClock {
        readings: Vec<Duration>,
    }

    impl Clock for ScriptedClock {
        fn now(&mut self) -> Duration {
            self.readings.remove(0)
        }
    }

    /// A fake clock the work itself advances, as real time would.
    struct SharedClock<'a>(&'a std::cell::Cell<Duration>);

    impl Clock for SharedClock<'_> {
        fn now(&mut self) -> Duration {
            self.0.get()
        }
    }

    #[test]
    fn median_and_spread_come_from_the_timed_runs_only() {
        let ms = Duration::from_millis;
        // Three timed runs of 5, 1 and 3 ms; warm-up runs read no clock.
        let mut clock = ScriptedClock {
            readings: vec![ms(0), ms(5), ms(10), ms(11), ms(20), ms(23)],
        };
        let mut calls = 0;
        let stats = measure(&mut clock, 2, 3, || calls += 1);
        assert_eq!(calls, 5);
        assert_eq!(
            (stats.median, stats.min, stats.max, stats.runs),
            (ms(3), ms(1), ms(5), 3)
        );
        assert_eq!(stats.mean, ms(3));
        assert_eq!(stats.stddev, ms(2));
        assert!((stats.rate(3_000) - 1_000_000.0).abs() < 1e-6);
    }

    #[test]
    fn even_sample_counts_average_the_middle_pair() {
        let ms = Duration::from_millis;
        let stats = Stats::from_samples(&[ms(4), ms(1), ms(2), ms(8)]);
        assert_eq!(stats.median, ms(3));
        assert_eq!(Stats::from_samples(&[ms(4)]).stddev, Duration::ZERO);
    }

    #[derive(Default)]
    struct CountingProbe {
        started_at_job: Option<usize>,
        stopped_at_job: Option<usize>,
    }

    #[test]
    fn slow_work_gets_one_job_per_run_and_runs_fill_the_target() {
        let time = std::cell::Cell::new(Duration::ZERO);
        let mut clock = SharedClock(&time);
        let mut jobs = 0;
        let repetition = Repetition::adaptive(3, 20, Duration::from_millis(100));
        let sampled = measure_repeated::<()>(&mut clock, repetition, &mut (), || {
            jobs += 1;
            time.set(time.get() + Duration::from_millis(10));
            Ok(None)
        })
        .unwrap();
        // 10 ms a job: 1 job per run, 100 ms / 10 ms = 10 runs, plus the timed first job.
        assert_eq!(sampled.jobs_per_run, 1);
        assert_eq!(sampled.stats.runs, 10);
        assert_eq!(jobs, 11);
        assert_eq!(sampled.stats.median, Duration::from_millis(10));
    }

    #[test]
    fn short_work_is_batched_and_reported_per_job() {
        let time = std::cell::Cell::new(Duration::ZERO);
        let mut clock = SharedClock(&time);
        let mut jobs = 0usize;
        let mut probe = CountingProbe::default();
        struct Recording<'a> {
            probe: &'a mut CountingProbe,
            jobs: &'a std::cell::Cell<usize>,
        }
        impl Probe for Recording<'_> {
            fn start(&mut self) {
                self.probe.started_at_job = Some(self.jobs.get());
            }
            fn stop(&mut self) {
                self.probe.stopped_at_job = Some(self.jobs.get());
            }
        }
        let job_counter = std::cell::Cell::new(0usize);
        let mut recording = Recording {
            probe: &mut probe,
            jobs: &job_counter,
        };
        let repetition = Repetition {
            warmup: 2,
            min_runs: 3,
            max_runs: 5,
            target: Duration::from_millis(1),
            min_sample: Duration::from_millis(2),
        };
        let sampled = measure_repeated::<()>(&mut clock, repetition, &mut recording, || {
            jobs += 1;
            job_counter.set(jobs);
            time.set(time.get() + Duration::from_micros(100));
            Ok(None)
        })
        .unwrap();
        // 100 us a job: 2 ms / 100 us + 1 = 21 jobs per run; the target is shorter than one
        // run, so the minimum of 3 runs; one extra warm-up run of 21 jobs.
        assert_eq!(sampled.jobs_per_run, 21);
        assert_eq!(sampled.stats.runs, 3);
        assert_eq!(sampled.jobs(), 63);
        assert_eq!(jobs, 1 + 21 + 63);
        assert_eq!(sampled.stats.median, Duration::from_micros(100));
        assert_eq!(probe.started_at_job, Some(22));
        assert_eq!(probe.stopped_at_job, Some(85));
    }

    #[test]
    fn device_reported_times_replace_the_host_clock() {
        let time = std::cell::Cell::new(Duration::ZERO);
        let mut clock = SharedClock(&time);
        let sampled = measure_repeated::<()>(&mut clock, Repetition::exactly(4), &mut (), || {
            // The host waits 5 ms (launch, synchronisation), the device says 1 ms of work.
            time.set(time.get() + Duration::from_millis(5));
            Ok(Some(Duration::from_millis(1)))
        })
        .unwrap();
        assert_eq!(sampled.stats.runs, 4);
        assert_eq!(sampled.stats.median, Duration::from_millis(1));
    }

    #[test]
    fn errors_stop_the_measurement() {
        let mut clock = SystemClock::default();
        let mut calls = 0;
        let result = measure_repeated(&mut clock, Repetition::exactly(3), &mut (), || {
            calls += 1;
            if calls == 2 {
                Err("broken")
            } else {
                Ok(None)
            }
        });
        assert_eq!(result, Err("broken"));
    }
}
