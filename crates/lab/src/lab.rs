//! The lab: what a run may use (backends, OpenSSL, meters), how hard it measures (level,
//! repetitions), and the recorder every figure goes through.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use parcrypt_engine::{Backend, Engine, EngineBuilder, EngineError};
use parcrypt_modes::{CipherSpec, Direction};

use crate::energy::{EnergyMeters, Scope};
use crate::gpu::DirectDevice;
use crate::openssl::{self, SpeedQuery};
use crate::record::{BenchRecord, Note, Report, RunInfo, Timing};
use crate::recorder::Recorder;
use crate::stats::{Repetition, Sampled};
use crate::throughput::in_memory;
use crate::{machine, BenchError};

pub use parcrypt_bench::speed::direction_name;

/// How much a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Small sizes, few runs: the whole lab in under a minute on two cores.
    Quick,
    /// The default `parcrypt-lab` run: every scenario, trimmed, in a few minutes.
    Short,
    /// The seeds' own sizes and repetitions.
    Full,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Quick => "quick",
            Level::Short => "short",
            Level::Full => "full",
        }
    }

    /// One of three values by level.
    pub fn pick<T>(self, quick: T, short: T, full: T) -> T {
        match self {
            Level::Quick => quick,
            Level::Short => short,
            Level::Full => full,
        }
    }
}

/// What the command line chose.
#[derive(Clone, Debug)]
pub struct LabOptions {
    pub level: Level,
    /// Threads for the parallel CPU backends (and OpenSSL's processes).
    pub threads: usize,
    /// Backends to measure; `None`: seq, threads, pool, auto and every GPU backend that
    /// opens.
    pub backends: Option<Vec<Backend>>,
    pub openssl: bool,
    /// The sweep's ciphers and sizes, and its file size (0: no file table).
    pub ciphers: Option<Vec<CipherSpec>>,
    pub sizes: Option<Vec<usize>>,
    pub file_bytes: Option<usize>,
    /// Exactly this many timed runs per figure, instead of each scenario's own choice.
    pub runs: Option<usize>,
    /// Where generated files go.
    pub scratch: PathBuf,
    /// What every engine is built from (tune directory, kernel cache, GCM kernel, pool
    /// spin: the command line passes the user's); backend and threads are set per engine.
    /// The default has no tune file: untuned GPU backends and a CPU-only `auto`.
    pub builder: EngineBuilder,
    /// `--kernels`: the CPU kernel family `builder` holds the engines to; `openssl speed`
    /// then runs with the same family's `OPENSSL_ia32cap` mask.
    pub kernels: Option<parcrypt_ciphers::KernelFamily>,
}

impl LabOptions {
    /// Defaults for `level` on this machine.
    pub fn new(level: Level) -> Self {
        LabOptions {
            level,
            threads: parcrypt_engine::available_threads(),
            backends: None,
            openssl: true,
            ciphers: None,
            sizes: None,
            file_bytes: None,
            runs: None,
            scratch: scratch_folder(),
            builder: Engine::builder(),
            kernels: None,
        }
    }
}

impl LabOptions {
    /// An engine for `backend` with `threads` threads, built from [`LabOptions::builder`].
    pub fn engine(&self, backend: Backend, threads: usize) -> Result<Engine, EngineError> {
        self.builder
            .clone()
            .backend(backend)
            .threads(threads)
            .build()
    }
}

/// A folder for generated files: memory-backed when the machine has one, so that file
/// figures measure the program rather than the disk.
pub fn scratch_folder() -> PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// A GPU backend that opened: the engine (the user's path) and, opened on first use, the
/// device itself (for what the engine does not expose).
pub struct GpuBackend {
    pub backend: Backend,
    pub engine: Engine,
    pub description: String,
    direct: OnceLock<Result<DirectDevice, String>>,
}

impl GpuBackend {
    pub fn direct(&self) -> Result<&DirectDevice, String> {
        self.direct
            .get_or_init(|| DirectDevice::open(self.backend).map_err(|error| error.to_string()))
            .as_ref()
            .map_err(Clone::clone)
    }
}

pub struct Lab {
    options: LabOptions,
    recorder: Recorder,
    meters: EnergyMeters,
    gpus: Vec<Arc<GpuBackend>>,
    /// Why each GPU backend that did not open did not.
    gpu_failures: Vec<String>,
    progress: bool,
}

impl Lab {
    /// Opens the GPU backends, looks for energy meters, and starts the record (in
    /// `output/results.jsonl` when an output folder is given).
    pub fn new(
        options: LabOptions,
        command: &str,
        scenarios: &[String],
        output: Option<&std::path::Path>,
    ) -> Result<Lab, BenchError> {
        let mut gpus = Vec::new();
        let mut gpu_failures = Vec::new();
        for backend in Backend::GPU {
            let requested = options
                .backends
                .as_ref()
                .is_some_and(|list| list.contains(&backend));
            if options.backends.is_some() && !requested {
                continue;
            }
            match options.engine(backend, options.threads) {
                Ok(engine) => {
                    let description = engine
                        .gpu()
                        .map(|gpu| gpu.description())
                        .unwrap_or_default();
                    gpus.push(Arc::new(GpuBackend {
                        backend,
                        engine,
                        description,
                        direct: OnceLock::new(),
                    }));
                }
                Err(error) if requested => return Err(error.into()),
                Err(error) => gpu_failures.push(error.to_string()),
            }
        }
        let nvidia = gpus
            .iter()
            .any(|gpu| gpu.backend == Backend::Cuda)
            .then_some(0);
        let meters = EnergyMeters::probe(nvidia);
        let started_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |time| time.as_secs());
        let run = RunInfo {
            parcrypt_version: env!("CARGO_PKG_VERSION").into(),
            revision: source_revision(),
            started_unix,
            command: command.into(),
            level: options.level.name().into(),
            scenarios: scenarios.to_vec(),
            host: machine::host(),
            cpu: machine::cpu_model(),
            cpu_features: parcrypt_ciphers::cpu_features(),
            clock_hz: parcrypt_ciphers::clock::core_clock_hz(5),
            threads: options.threads,
            memory_bytes: machine::memory_bytes(),
            os: machine::os(),
            openssl: if options.openssl {
                openssl::version()
            } else {
                None
            },
            gpus: gpus
                .iter()
                .map(|gpu| format!("{}: {}", gpu.backend, gpu.description))
                .chain(gpu_failures.iter().cloned())
                .collect(),
        };
        let recorder = Recorder::new(run, output)?;
        Ok(Lab {
            options,
            recorder,
            meters,
            gpus,
            gpu_failures,
            progress: std::io::stderr().is_terminal(),
        })
    }

    pub fn options(&self) -> &LabOptions {
        &self.options
    }

    pub fn level(&self) -> Level {
        self.options.level
    }

    pub fn threads(&self) -> usize {
        self.options.threads
    }

    /// Whether OpenSSL figures are wanted and OpenSSL is there.
    pub fn openssl(&self) -> bool {
        self.recorder.report().run.openssl.is_some()
    }

    /// The GPU backends that opened.
    pub fn gpus(&self) -> Vec<Arc<GpuBackend>> {
        self.gpus.clone()
    }

    /// Why GPU backends are missing, one line each.
    pub fn gpu_failures(&self) -> &[String] {
        &self.gpu_failures
    }

    /// The energy meters that could not be opened, one line each.
    pub fn energy_unavailable(&self) -> Vec<String> {
        self.meters.unavailable().to_vec()
    }

    /// Of `wanted` CPU backends, those the options allow.
    pub fn cpu_backends(&self, wanted: &[Backend]) -> Vec<Backend> {
        wanted
            .iter()
            .copied()
            .filter(|backend| {
                self.options
                    .backends
                    .as_ref()
                    .is_none_or(|list| list.contains(backend))
            })
            .collect()
    }

    /// `repetition`, unless the options fix the number of runs.
    pub fn repetition(&self, repetition: Repetition) -> Repetition {
        match self.options.runs {
            Some(runs) => Repetition {
                min_runs: runs.max(1),
                max_runs: runs.max(1),
                ..repetition
            },
            None => repetition,
        }
    }

    /// Shows what is being measured (on a terminal only).
    pub fn progress(&self, text: &str) {
        if self.progress {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[K{text}");
            let _ = stderr.flush();
        }
    }

    /// Clears the progress line.
    pub fn progress_done(&self) {
        self.progress("");
    }

    pub fn note(&mut self, scenario: &str, text: impl Into<String>) -> Result<(), BenchError> {
        Ok(self.recorder.note(Note {
            scenario: scenario.into(),
            text: text.into(),
        })?)
    }

    pub fn report(&self) -> &Report {
        self.recorder.report()
    }

    pub fn finish(self) -> Report {
        self.progress_done();
        self.recorder.into_report()
    }

    /// Adds the ratios to `seq` and to OpenSSL measured earlier in the run, and records it.
    /// Times an in-place pass over `bytes` that does no cipher work on `engine` (the memory
    /// ceiling no cipher pass can beat) and records it for `scenario`.
    pub fn push_memory_pass(
        &mut self,
        scenario: &str,
        engine: &Engine,
        bytes: usize,
        repetition: Repetition,
    ) -> Result<(), BenchError> {
        let sampled = crate::throughput::memory_pass(engine, bytes, self.repetition(repetition));
        self.push(
            BenchRecord::new(
                scenario,
                crate::throughput::MEMORY_PASS,
                "xor",
                engine.backend().name(),
                engine.threads(),
                bytes as u64,
                Timing::EndToEnd,
            )
            .with_figures(&sampled),
        )
    }

    /// Times `spec` on `gpu`'s CUDA device with the data already in device memory (kernel
    /// time from CUDA events) and records it for `scenario`, labelled with `cipher`. A GPU
    /// backend that is not CUDA records nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn push_cuda_kernel(
        &mut self,
        scenario: &str,
        cipher: &str,
        gpu: &GpuBackend,
        spec: CipherSpec,
        direction: Direction,
        bytes: usize,
        threads: usize,
        repetition: Repetition,
    ) -> Result<(), BenchError> {
        let Some(cuda) = gpu.direct().ok().and_then(|device| device.cuda()) else {
            return Ok(());
        };
        let sampled = crate::gpu::time_cuda(
            cuda,
            spec,
            direction,
            bytes,
            crate::gpu::Residence::DeviceKernel,
            self.repetition(repetition),
            &mut (),
        )?;
        let mut record = BenchRecord::new(
            scenario,
            cipher,
            direction_name(direction),
            "cuda",
            threads,
            bytes as u64,
            Timing::KernelOnly,
        )
        .with_figures(&sampled);
        record.transfer = Some("device".into());
        record.device = Some(cuda.name());
        self.push(record)
    }

    pub fn push(&mut self, mut record: BenchRecord) -> Result<(), BenchError> {
        derive_ratios(&self.recorder.report().records, &mut record);
        Ok(self.recorder.record(record)?)
    }

    /// Measures `spec` over `data` on `engine` (see [`in_memory`]), with the energy of the
    /// timed runs when `energy` names meters that exist. Returns the record unpushed, for
    /// the caller to label.
    #[allow(clippy::too_many_arguments)]
    pub fn measure_engine(
        &mut self,
        scenario: &str,
        spec: CipherSpec,
        direction: Direction,
        engine: &Engine,
        data: &mut [u8],
        repetition: Repetition,
        energy: Option<Scope>,
    ) -> Result<BenchRecord, BenchError> {
        let backend = engine.backend();
        self.progress(&format!(
            "{scenario}: {spec} {} {} on {backend}",
            direction_name(direction),
            crate::summary::size(data.len() as u64)
        ));
        let repetition = self.repetition(repetition);
        let mut record = BenchRecord::new(
            scenario,
            &spec.to_string(),
            direction_name(direction),
            backend.name(),
            engine.threads(),
            data.len() as u64,
            Timing::EndToEnd,
        );
        let sampled = match energy {
            Some(scope) => self.with_energy(scope, &mut record, |probe| {
                Ok(in_memory(spec, direction, engine, data, repetition, probe)?)
            })?,
            None => in_memory(spec, direction, engine, data, repetition, &mut ())?,
        };
        if let Some(gpu) = engine.gpu() {
            record.transfer = Some("pageable".into());
            record.device = Some(crate::gpu::device_name(&gpu.description()));
        }
        Ok(record.with_figures(&sampled))
    }

    /// Measures `spec` over `data` on each of `engines` in turn (see
    /// [`Lab::measure_engine`]) and records each figure as it is.
    #[allow(clippy::too_many_arguments)]
    pub fn push_engines(
        &mut self,
        scenario: &str,
        spec: CipherSpec,
        direction: Direction,
        engines: &[&Engine],
        data: &mut [u8],
        repetition: Repetition,
        energy: Option<Scope>,
    ) -> Result<(), BenchError> {
        for engine in engines {
            let record =
                self.measure_engine(scenario, spec, direction, engine, data, repetition, energy)?;
            self.push(record)?;
        }
        Ok(())
    }

    /// Runs `measure` with an energy probe over `scope` when one exists, and puts the joules
    /// per job in `record`.
    pub fn with_energy(
        &mut self,
        scope: Scope,
        record: &mut BenchRecord,
        measure: impl FnOnce(&mut dyn crate::stats::Probe) -> Result<Sampled, BenchError>,
    ) -> Result<Sampled, BenchError> {
        match self.meters.reading(scope) {
            Some(mut reading) => {
                let sampled = measure(&mut reading)?;
                set_energy(record, &sampled, reading.meter_names(), reading.joules());
                Ok(sampled)
            }
            None => measure(&mut ()),
        }
    }

    /// `openssl speed -evp` for the same work, recorded as an `openssl` row with
    /// `processes` as its threads; nothing when OpenSSL is off, missing, or lacks the cipher.
    pub fn openssl_speed(
        &mut self,
        scenario: &str,
        spec: CipherSpec,
        direction: Direction,
        bytes: usize,
        processes: usize,
    ) -> Result<(), BenchError> {
        if !self.openssl()
            || bytes > openssl::MAX_SPEED_BYTES
            || openssl::evp_name(&spec.to_string()).is_none()
        {
            return Ok(());
        }
        self.progress(&format!(
            "{scenario}: openssl speed -evp {spec} {} {} x{processes}",
            direction_name(direction),
            crate::summary::size(bytes as u64)
        ));
        let name = spec.to_string();
        let query = SpeedQuery {
            spec: &name,
            direction,
            bytes,
            seconds: 1,
            processes,
            kernels: self.options.kernels,
        };
        if let Some(rate) = openssl::speed_of(&query) {
            let mut record = BenchRecord::new(
                scenario,
                &name,
                direction_name(direction),
                "openssl",
                processes,
                bytes as u64,
                Timing::EndToEnd,
            )
            .with_rate(rate, 1);
            record.note = Some(format!(
                "openssl speed -evp {name} -bytes {bytes}{}{}",
                if processes > 1 {
                    format!(" -multi {processes}")
                } else {
                    String::new()
                },
                if direction == Direction::Decrypt {
                    " -decrypt"
                } else {
                    ""
                }
            ));
            if let Some(mask) = self.options.kernels.and_then(crate::masks::openssl_ia32cap) {
                if let Some(note) = &mut record.note {
                    note.push_str(&format!(" with OPENSSL_ia32cap={mask}"));
                }
            }
            self.push(record)?;
        }
        Ok(())
    }
}

fn set_energy(
    record: &mut BenchRecord,
    sampled: &Sampled,
    meters: String,
    joules: Result<f64, String>,
) {
    match joules {
        Ok(joules) => {
            record.energy_j = Some(joules / sampled.jobs().max(1) as f64);
            record.energy_meter = Some(meters);
        }
        Err(reason) => record.note = Some(format!("energy meter {meters} failed: {reason}")),
    }
}

/// Fills `speedup_vs_seq` and `ratio_vs_openssl` from the latest matching figures in
/// `earlier`: same scenario, cipher, direction and size; file figures against file figures,
/// everything else against in-memory ones; OpenSSL with as many processes as `record` has
/// threads.
pub fn derive_ratios(earlier: &[BenchRecord], record: &mut BenchRecord) {
    let class = |timing: Timing| {
        if timing == Timing::File {
            Timing::File
        } else {
            Timing::EndToEnd
        }
    };
    let same_work = |other: &&BenchRecord| {
        other.scenario == record.scenario
            && other.cipher == record.cipher
            && other.direction == record.direction
            && other.bytes == record.bytes
            && class(other.timing) == class(record.timing)
    };
    if record.backend == "openssl" {
        return;
    }
    if record.backend == "seq" && record.timing != Timing::KernelOnly {
        record.speedup_vs_seq = Some(1.0);
    } else if let Some(seq) = earlier
        .iter()
        .rev()
        .filter(same_work)
        .find(|other| other.backend == "seq" && other.median_s > 0.0)
    {
        record.speedup_vs_seq = Some(seq.median_s / record.median_s.max(1e-15));
    }
    if let Some(openssl) = earlier
        .iter()
        .rev()
        .filter(same_work)
        .find(|other| other.backend == "openssl" && other.threads == record.threads)
    {
        record.ratio_vs_openssl = Some(openssl.median_s / record.median_s.max(1e-15));
    }
}

/// The git revision of the working directory (`abc1234`, `abc1234-dirty` with uncommitted
/// changes), when the run starts inside a checkout.
pub fn source_revision() -> Option<String> {
    let git = |arguments: &[&str]| {
        std::process::Command::new("git")
            .args(arguments)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
    };
    let revision = git(&["rev-parse", "--short", "HEAD"])?;
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|status| !status.is_empty());
    Some(if dirty {
        format!("{revision}-dirty")
    } else {
        revision
    })
}
