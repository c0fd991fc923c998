//! The one result record every exporter reads, and the run it belongs to.
//!
//! A run is written as it goes, one JSON object per line ([`Line`]): the run's description
//! first, then every measurement and note in the order they were made. An interrupted run
//! keeps every line written before it stopped, and [`Report::from_json_lines`] reads them
//! back.

use serde::{Deserialize, Serialize};

use crate::stats::Sampled;

/// What a figure's time covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    /// Data in host memory before and after, as a library caller sees it: key setup, the
    /// work, and for GPU backends the copies both ways with the device synchronised.
    EndToEnd,
    /// GPU only: data already in device memory, timed by the device's own events.
    KernelOnly,
    /// A file read, processed and written through the streaming path (or `openssl enc`).
    File,
}

impl Timing {
    /// As a table title says it.
    pub fn label(self) -> &'static str {
        match self {
            Timing::EndToEnd => "end to end",
            Timing::KernelOnly => "kernel only",
            Timing::File => "through files",
        }
    }
}

/// One measured figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchRecord {
    /// `sweep`, `s0` .. `s4`.
    pub scenario: String,
    /// Cipher and mode as on the command line (`aes-128-ecb`), or `memory` for the memory
    /// ceiling (an in-place pass with no cipher work, direction `xor`).
    pub cipher: String,
    /// `aes-128`, `bf`, `rc6-128`, or `memory`.
    pub algorithm: String,
    /// Key length in bits (Blowfish: the key the benchmark uses); 0 for `memory`.
    pub key_bits: u32,
    /// `ecb`, `cbc`, `ctr`, `gcm`; empty for `memory`.
    pub mode: String,
    /// `encrypt`, `decrypt`, or `xor` for the memory ceiling.
    pub direction: String,
    /// `seq`, `threads`, `pool`, `auto`, `opencl`, `cuda`, or `openssl`.
    pub backend: String,
    /// Threads (CPU backends; OpenSSL's processes); the host threads of a GPU backend.
    pub threads: usize,
    /// Bytes per job.
    pub bytes: u64,
    pub timing: Timing,
    /// GPU backends: where the data lives and how it moves: `pageable` (ordinary memory,
    /// staged by the driver), `pinned`, `device` (already on the GPU), `zero_copy`.
    pub transfer: Option<String>,
    /// GPU backends: work-items per work-group (CUDA: threads per block).
    pub threads_per_group: Option<usize>,
    /// GPU backends: cipher blocks per work-item.
    pub blocks_per_thread: Option<usize>,
    /// GPU backends: the device's name.
    pub device: Option<String>,
    /// A scenario's own label for the figure (s3: `sweep`, `confirm-tuned`,
    /// `confirm-untuned`; s0: the seed technology it stands for).
    pub variant: Option<String>,
    pub warmup: usize,
    /// Timed runs.
    pub runs: usize,
    /// Jobs back to back in each timed run (small inputs); times are per job.
    pub jobs_per_run: usize,
    pub median_s: f64,
    pub mean_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    pub stddev_s: f64,
    /// 10^6 bytes per second at the median time.
    pub mb_per_s: f64,
    /// This figure's speed over `seq`'s for the same cipher, direction, size and timing.
    pub speedup_vs_seq: Option<f64>,
    /// This figure's speed over OpenSSL's for the same cipher, direction and size, with as
    /// many OpenSSL processes as this figure has threads.
    pub ratio_vs_openssl: Option<f64>,
    /// Joules per job, from the meters named in `energy_meter`.
    pub energy_j: Option<f64>,
    pub energy_meter: Option<String>,
    pub note: Option<String>,
}

impl BenchRecord {
    /// A record of `cipher` (parsed for its parts) with no figures yet: see
    /// [`BenchRecord::with_figures`].
    pub fn new(
        scenario: &str,
        cipher: &str,
        direction: &str,
        backend: &str,
        threads: usize,
        bytes: u64,
        timing: Timing,
    ) -> Self {
        let (algorithm, key_bits, mode) = cipher_parts(cipher);
        BenchRecord {
            scenario: scenario.into(),
            cipher: cipher.into(),
            algorithm,
            key_bits,
            mode,
            direction: direction.into(),
            backend: backend.into(),
            threads,
            bytes,
            timing,
            transfer: None,
            threads_per_group: None,
            blocks_per_thread: None,
            device: None,
            variant: None,
            warmup: 0,
            runs: 0,
            jobs_per_run: 0,
            median_s: 0.0,
            mean_s: 0.0,
            min_s: 0.0,
            max_s: 0.0,
            stddev_s: 0.0,
            mb_per_s: 0.0,
            speedup_vs_seq: None,
            ratio_vs_openssl: None,
            energy_j: None,
            energy_meter: None,
            note: None,
        }
    }

    /// Fills the time and speed fields from a measurement.
    pub fn with_figures(mut self, sampled: &Sampled) -> Self {
        let stats = &sampled.stats;
        self.warmup = sampled.warmup;
        self.runs = stats.runs;
        self.jobs_per_run = sampled.jobs_per_run;
        self.median_s = stats.median.as_secs_f64();
        self.mean_s = stats.mean.as_secs_f64();
        self.min_s = stats.min.as_secs_f64();
        self.max_s = stats.max.as_secs_f64();
        self.stddev_s = stats.stddev.as_secs_f64();
        self.mb_per_s = stats.rate(self.bytes) / 1e6;
        self
    }

    /// Fills the time and speed fields from a rate measured by another program (OpenSSL),
    /// which reports no spread: one run of `seconds` per job.
    pub fn with_rate(mut self, bytes_per_second: f64, runs: usize) -> Self {
        let seconds = self.bytes as f64 / bytes_per_second.max(1e-12);
        self.warmup = 0;
        self.runs = runs;
        self.jobs_per_run = 1;
        self.median_s = seconds;
        self.mean_s = seconds;
        self.min_s = seconds;
        self.max_s = seconds;
        self.stddev_s = 0.0;
        self.mb_per_s = bytes_per_second / 1e6;
        self
    }

    /// The key that matches figures of the same work on different backends.
    pub fn work_key(&self) -> (&str, &str, &str, u64, Timing) {
        (
            &self.scenario,
            &self.cipher,
            &self.direction,
            self.bytes,
            self.timing,
        )
    }
}

/// `aes-128-ecb` -> (`aes-128`, 128, `ecb`); `bf-ctr` -> (`bf`, 256, `ctr`): the benchmark's
/// Blowfish key is 32 bytes; `memory` -> (`memory`, 0, ``).
fn cipher_parts(cipher: &str) -> (String, u32, String) {
    match cipher.parse::<parcrypt_modes::CipherSpec>() {
        Ok(spec) => {
            let (_, longest) = spec.algorithm.key_lengths();
            let key_bytes = longest.min(crate::throughput::BENCH_KEY.len());
            (
                spec.algorithm.name().into(),
                8 * key_bytes as u32,
                spec.mode.name().into(),
            )
        }
        Err(_) => (cipher.into(), 0, String::new()),
    }
}

/// The machine and the run, as the report's header shows them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub parcrypt_version: String,
    /// The git revision the run was made from, when known (`-dirty`: with uncommitted
    /// changes).
    #[serde(default)]
    pub revision: Option<String>,
    /// Seconds since the Unix epoch at the start.
    pub started_unix: u64,
    pub command: String,
    /// `quick`, `short` or `full`.
    pub level: String,
    pub scenarios: Vec<String>,
    pub host: String,
    pub cpu: String,
    pub cpu_features: String,
    /// The core clock measured at the start of the run (a chain of dependent additions,
    /// `parcrypt_ciphers::clock`), in Hz, from which cycles per byte are quoted; `None` off
    /// x86-64 and in reports made before it was recorded.
    #[serde(default)]
    pub clock_hz: Option<f64>,
    pub threads: usize,
    pub memory_bytes: u64,
    pub os: String,
    pub openssl: Option<String>,
    /// One line per GPU backend that opened (or why it did not).
    pub gpus: Vec<String>,
}

/// Something a reader must know that is not a figure: a meter or feature that is missing,
/// a backend that was skipped and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    pub scenario: String,
    pub text: String,
}

/// One line of `results.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Line {
    Run(RunInfo),
    Record(BenchRecord),
    Note(Note),
}

/// A whole run: what `results.json` holds and every exporter reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub run: RunInfo,
    pub records: Vec<BenchRecord>,
    pub notes: Vec<Note>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("line {line}: {error}")]
    Json {
        line: usize,
        error: serde_json::Error,
    },
    #[error("no run line: the file does not start a parcrypt-lab run")]
    NoRun,
}

impl Report {
    pub fn new(run: RunInfo) -> Self {
        Report {
            run,
            records: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Reads `results.jsonl`; a last line cut short by an interruption is skipped.
    pub fn from_json_lines(text: &str) -> Result<Report, ReadError> {
        let mut report: Option<Report> = None;
        let lines: Vec<&str> = text
            .lines()
            .filter(|line| !line.trim().is_empty())
            .collect();
        for (index, text) in lines.iter().enumerate() {
            let line: Line = match serde_json::from_str(text) {
                Ok(line) => line,
                Err(_) if index + 1 == lines.len() => break,
                Err(error) => {
                    return Err(ReadError::Json {
                        line: index + 1,
                        error,
                    })
                }
            };
            match line {
                Line::Run(run) => report = Some(Report::new(run)),
                Line::Record(record) => report
                    .as_mut()
                    .ok_or(ReadError::NoRun)?
                    .records
                    .push(record),
                Line::Note(note) => report.as_mut().ok_or(ReadError::NoRun)?.notes.push(note),
            }
        }
        report.ok_or(ReadError::NoRun)
    }

    /// The records of one scenario, in run order.
    pub fn scenario<'a>(&'a self, scenario: &'a str) -> impl Iterator<Item = &'a BenchRecord> + 'a {
        self.records
            .iter()
            .filter(move |record| record.scenario == scenario)
    }

    /// The notes of one scenario.
    pub fn notes_of<'a>(&'a self, scenario: &'a str) -> impl Iterator<Item = &'a Note> + 'a {
        self.notes
            .iter()
            .filter(move |note| note.scenario == scenario)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cipher_names_split_into_parts() {
        assert_eq!(
            cipher_parts("aes-192-gcm"),
            ("aes-192".into(), 192, "gcm".into())
        );
        assert_eq!(cipher_parts("bf-ecb"), ("bf".into(), 256, "ecb".into()));
        assert_eq!(cipher_parts("memory"), ("memory".into(), 0, String::new()));
    }
}
