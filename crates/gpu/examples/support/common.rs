//! What the examples share: the median of repeated runs after a warm-up, and the exit of
//! an example that failed.
//!
//! Included with `#[path = "support/common.rs"] mod common;`.

use std::error::Error;
use std::process::ExitCode;
use std::time::Duration;

/// The median of `samples` (the upper one of an even count).
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Runs `work` `warm_up` times untimed, then `repeats` times, and returns the median of the
/// times it reports.
#[allow(dead_code)] // not every example measures this way
pub fn measure(
    warm_up: usize,
    repeats: usize,
    mut work: impl FnMut() -> Result<Duration, Box<dyn Error>>,
) -> Result<Duration, Box<dyn Error>> {
    for _ in 0..warm_up {
        work()?;
    }
    let samples = (0..repeats)
        .map(|_| work())
        .collect::<Result<Vec<_>, _>>()?;
    Ok(median(samples))
}

/// The exit code of example `name` whose work gave `result`: success, or failure after
/// saying why.
#[allow(dead_code)] // not every example can fail
pub fn exit_code(name: &str, result: Result<(), Box<dyn Error>>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{name}: {error}");
            ExitCode::FAILURE
        }
    }
}
