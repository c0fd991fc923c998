//! Medians and spreads of repeated timings.

use std::time::{Duration, Instant};

/// Summary of repeated timings of the same work.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    pub median: Duration,
    pub min: Duration,
    pub max: Duration,
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
        Stats { median, min: sorted[0], max: sorted[sorted.len() - 1], runs: sorted.len() }
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
pub fn measure(clock: &mut dyn Clock, warmup: usize, repeats: usize, mut work: impl FnMut()) -> Stats {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock that advances by scripted steps, one per reading.
    struct ScriptedClock {
        readings: Vec<Duration>,
    }

    impl Clock for ScriptedClock {
        fn now(&mut self) -> Duration {
            self.readings.remove(0)
        }
    }

    #[test]
    fn median_and_spread_come_from_the_timed_runs_only() {
        let ms = Duration::from_millis;
        // Three timed runs of 5, 1 and 3 ms; warm-up runs read no clock.
        let mut clock = ScriptedClock { readings: vec![ms(0), ms(5), ms(10), ms(11), ms(20), ms(23)] };
        let mut calls = 0;
        let stats = measure(&mut clock, 2, 3, || calls += 1);
        assert_eq!(calls, 5);
        assert_eq!(stats, Stats { median: ms(3), min: ms(1), max: ms(5), runs: 3 });
        assert!((stats.rate(3_000) - 1_000_000.0).abs() < 1e-6);
    }

    #[test]
    fn even_sample_counts_average_the_middle_pair() {
        let ms = Duration::from_millis;
        let stats = Stats::from_samples(&[ms(4), ms(1), ms(2), ms(8)]);
        assert_eq!(stats.median, ms(3));
    }
}
