//! What `parcrypt encrypt|decrypt` shows while and after it works: a progress bar and the
//! `--stats` line.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use parcrypt::files::StageTimes;

/// The `--stats` line: the rate of the whole streaming run (the key derivation before it
/// excluded, the final rename included) and each stage's busy time.
pub fn print_stats(what: &str, bytes: u64, started: Instant, backend: &str, stages: &StageTimes) {
    let wall = started.elapsed().as_secs_f64();
    say!(
        "parcrypt: {what} {bytes} bytes in {wall:.3} s ({:.2} GB/s); busy: read {:.3} s, \
         {backend} {:.3} s, write {:.3} s (the stages overlap: the largest bounds the run)",
        bytes as f64 / wall.max(1e-9) / 1e9,
        stages.read().as_secs_f64(),
        stages.process().as_secs_f64(),
        stages.write().as_secs_f64(),
    );
}

/// A progress bar on stderr, only when stderr is a terminal, only without --quiet, and only
/// once the work has run for half a second (quick jobs print nothing).
pub struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    shown: AtomicBool,
}

impl Progress {
    const DELAY: Duration = Duration::from_millis(500);

    pub fn new(quiet: bool, total: Option<u64>, what: &'static str) -> Progress {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let template = if total.is_some() {
                "{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}"
            } else {
                "{msg} {bytes} {binary_bytes_per_sec} {elapsed}"
            };
            let style = ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden())
                .with_style(style)
                .with_message(what)
        });
        Progress {
            bar,
            started: Instant::now(),
            shown: AtomicBool::new(false),
        }
    }

    pub fn update(&self, bytes: u64) {
        let Some(bar) = &self.bar else { return };
        bar.set_position(bytes);
        if !self.shown.load(Ordering::Relaxed) && self.started.elapsed() >= Self::DELAY {
            self.shown.store(true, Ordering::Relaxed);
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // An error is about to be printed: leave its line clean.
        self.finish();
    }
}
