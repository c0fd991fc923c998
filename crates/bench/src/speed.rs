//! One run of `parcrypt bench`: ciphers x directions x sizes x backends in memory, every
//! backend checked against `seq` before anything is timed.

use std::time::Duration;

use parcrypt_ciphers::KernelFamily;
use parcrypt_engine::{Backend, Engine, EngineBuilder, EngineError};
use parcrypt_modes::{CipherSpec, Direction, Mode};

use crate::report::backend_line;
use crate::stats::{Repetition, Stats};
use crate::throughput::{in_memory, random_buffer};
use crate::verify::backends_agree;
use crate::BenchError;

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// What a run measures.
#[derive(Clone, Debug)]
pub struct Plan {
    pub ciphers: Vec<CipherSpec>,
    /// Bytes per job; each is rounded down to whole blocks of the cipher.
    pub sizes: Vec<usize>,
    /// The backends to time, in this order; `None`: seq, threads, pool, auto and every GPU
    /// backend that opens on this machine (those that do not are listed as unavailable).
    pub backends: Option<Vec<Backend>>,
    /// Threads of the parallel CPU backends.
    pub threads: usize,
    pub repetition: Repetition,
    /// What every engine of the run is built from (tune directory, kernel cache, GCM kernel,
    /// pool spin: the front end passes the user's); each engine's backend and threads are the
    /// plan's. The default has no tune file: untuned GPU backends and a CPU-only `auto`.
    pub builder: EngineBuilder,
}

impl Plan {
    /// The default run: AES at both common key sizes in every mode, Blowfish and RC6, at
    /// three sizes, on every backend; about a minute on two cores.
    pub fn standard(threads: usize) -> Plan {
        Plan {
            ciphers: specs(&[
                "aes-128-ecb",
                "aes-128-cbc",
                "aes-128-ctr",
                "aes-128-gcm",
                "aes-256-ctr",
                "aes-256-gcm",
                "bf-ctr",
                "rc6-128-ctr",
            ]),
            sizes: vec![16 * KIB, MIB, 16 * MIB],
            backends: None,
            threads,
            repetition: Repetition::adaptive(3, 10, Duration::from_millis(150)),
            builder: Engine::builder(),
        }
    }

    /// A few seconds: three AES modes at two sizes.
    pub fn quick(threads: usize) -> Plan {
        Plan {
            ciphers: specs(&["aes-128-ctr", "aes-128-gcm", "aes-128-cbc"]),
            sizes: vec![64 * KIB, 4 * MIB],
            repetition: Repetition::adaptive(3, 5, Duration::from_millis(60)),
            ..Plan::standard(threads)
        }
    }

    /// Exactly `runs` timed runs per figure (at least one) instead of as many as fit.
    pub fn with_runs(mut self, runs: usize) -> Plan {
        self.repetition.min_runs = runs.max(1);
        self.repetition.max_runs = runs.max(1);
        self
    }

    /// An engine for `backend` with this plan's threads and options.
    fn engine(&self, backend: Backend) -> Result<Engine, EngineError> {
        self.builder
            .clone()
            .backend(backend)
            .threads(self.threads)
            .build()
    }
}

fn specs(names: &[&str]) -> Vec<CipherSpec> {
    names
        .iter()
        .map(|name| name.parse().expect("a valid cipher name"))
        .collect()
}

/// The directions worth timing: CTR decryption is the same pass as its encryption.
pub fn directions(spec: CipherSpec) -> &'static [Direction] {
    if spec.mode == Mode::Ctr {
        &[Direction::Encrypt]
    } else {
        &[Direction::Encrypt, Direction::Decrypt]
    }
}

/// `bytes` rounded down to whole blocks of `spec`'s cipher (the timed jobs have no padding).
pub fn whole_blocks(spec: CipherSpec, bytes: usize) -> usize {
    let block = spec.algorithm.block_size();
    bytes / block * block
}

/// One timed figure: a cipher, direction and size on one backend.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub cipher: CipherSpec,
    pub direction: Direction,
    pub backend: Backend,
    /// The engine's threads (1 for seq and GPU backends' host side as the engine says).
    pub threads: usize,
    pub bytes: usize,
    /// Per job: median, spread and the number of timed runs.
    pub stats: Stats,
}

impl Figure {
    /// MB/s (10^6 bytes per second) at the median time.
    pub fn mb_per_s(&self) -> f64 {
        self.stats.rate(self.bytes as u64) / 1e6
    }

    /// How the table names the backend: `seq`, `pool x2`, `cuda`.
    pub fn label(&self) -> String {
        backend_label(self.backend, self.threads)
    }
}

/// `seq`, `opencl`, or a parallel CPU backend with its threads (`pool x2`).
pub fn backend_label(backend: Backend, threads: usize) -> String {
    if matches!(backend, Backend::Threads | Backend::Pool | Backend::Auto) {
        format!("{backend} x{threads}")
    } else {
        backend.to_string()
    }
}

/// A finished run: the machine, what could not be measured, and the figures.
#[derive(Clone, Debug)]
pub struct Run {
    pub cpu: String,
    pub cpu_features: String,
    /// The CPU kernel family the engines' keys used: the builder's ceiling
    /// (`EngineBuilder::kernels`), else the best this CPU has.
    pub kernels: KernelFamily,
    pub threads: usize,
    /// `cuda: NVIDIA ...`, one line per GPU backend that opened.
    pub gpus: Vec<String>,
    /// One short line per GPU backend that did not open.
    pub unavailable: Vec<String>,
    /// How many backend runs gave `seq`'s bytes before timing.
    pub checked: usize,
    pub figures: Vec<Figure>,
}

/// The engines of a plan, opened: what a run will time.
pub struct Bench {
    plan: Plan,
    cpu: String,
    cpu_features: String,
    kernels: KernelFamily,
    engines: Vec<Engine>,
    gpus: Vec<String>,
    unavailable: Vec<String>,
}

impl Bench {
    /// Opens the plan's backends. A GPU backend the plan names that does not open is an
    /// error; one only tried (no backends named) becomes an unavailable line.
    pub fn open(plan: Plan) -> Result<Bench, BenchError> {
        if plan.ciphers.is_empty() || plan.sizes.is_empty() {
            return Err(BenchError::Usage(
                "nothing to measure: no ciphers or no sizes".into(),
            ));
        }
        let (wanted, tried_gpus) = match &plan.backends {
            Some(list) => (list.clone(), Vec::new()),
            None => (Backend::CPU.to_vec(), Backend::GPU.to_vec()),
        };
        let mut engines = Vec::new();
        for backend in wanted {
            if !engines
                .iter()
                .any(|engine: &Engine| engine.backend() == backend)
            {
                engines.push(plan.engine(backend)?);
            }
        }
        let mut unavailable = Vec::new();
        for backend in tried_gpus {
            match plan.engine(backend) {
                Ok(engine) => engines.push(engine),
                Err(error) => unavailable.push(backend_line(&error.to_string())),
            }
        }
        let gpus = engines
            .iter()
            .filter_map(|engine| {
                let gpu = engine.gpu()?;
                Some(format!("{}: {}", engine.backend(), gpu.description()))
            })
            .collect();
        let kernels = engines
            .first()
            .and_then(Engine::kernels)
            .unwrap_or_else(KernelFamily::detected);
        Ok(Bench {
            plan,
            cpu: crate::machine::cpu_model(),
            cpu_features: parcrypt_ciphers::cpu_features(),
            kernels,
            engines,
            gpus,
            unavailable,
        })
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The CPU's model name.
    pub fn cpu(&self) -> &str {
        &self.cpu
    }

    /// The CPU features the ciphers use here (AES-NI, VAES, ...).
    pub fn cpu_features(&self) -> &str {
        &self.cpu_features
    }

    /// The CPU kernel family the engines' keys use ([`Run::kernels`]).
    pub fn kernels(&self) -> KernelFamily {
        self.kernels
    }

    /// `cuda: NVIDIA ...`, one line per GPU backend that opened.
    pub fn gpus(&self) -> &[String] {
        &self.gpus
    }

    /// One short line per GPU backend that was tried and did not open.
    pub fn unavailable(&self) -> &[String] {
        &self.unavailable
    }

    /// Checks every backend against `seq`, then times every figure; `progress` hears what
    /// is being measured.
    pub fn run(&self, progress: &mut dyn FnMut(&str)) -> Result<Run, BenchError> {
        let plan = &self.plan;
        let engines: Vec<&Engine> = self.engines.iter().collect();
        progress("checking every backend against seq");
        let checked = backends_agree(&plan.ciphers, &engines)?;
        let mut figures = Vec::new();
        for &cipher in &plan.ciphers {
            for &direction in directions(cipher) {
                for &size in &plan.sizes {
                    let bytes = whole_blocks(cipher, size);
                    let mut data = random_buffer(bytes, bytes as u64);
                    for engine in &engines {
                        let label = backend_label(engine.backend(), engine.threads());
                        progress(&format!(
                            "{cipher} {} {} on {label}",
                            direction_name(direction),
                            crate::report::size(bytes as u64)
                        ));
                        let sampled = in_memory(
                            cipher,
                            direction,
                            engine,
                            &mut data,
                            plan.repetition,
                            &mut (),
                        )?;
                        figures.push(Figure {
                            cipher,
                            direction,
                            backend: engine.backend(),
                            threads: engine.threads(),
                            bytes,
                            stats: sampled.stats,
                        });
                    }
                }
            }
        }
        Ok(Run {
            cpu: self.cpu.clone(),
            cpu_features: self.cpu_features.clone(),
            kernels: self.kernels,
            threads: plan.threads,
            gpus: self.gpus.clone(),
            unavailable: self.unavailable.clone(),
            checked,
            figures,
        })
    }
}

/// `encrypt` or `decrypt`.
pub fn direction_name(direction: Direction) -> &'static str {
    match direction {
        Direction::Encrypt => "encrypt",
        Direction::Decrypt => "decrypt",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_down_to_whole_blocks() {
        let aes: CipherSpec = "aes-128-cbc".parse().unwrap();
        let blowfish: CipherSpec = "bf-cbc".parse().unwrap();
        assert_eq!(whole_blocks(aes, 100), 96);
        assert_eq!(whole_blocks(blowfish, 100), 96);
        assert_eq!(whole_blocks(blowfish, 7), 0);
        assert_eq!(whole_blocks(aes, 4096), 4096);
    }

    #[test]
    fn ctr_is_timed_one_way_and_other_modes_both() {
        assert_eq!(directions("aes-128-ctr".parse().unwrap()).len(), 1);
        assert_eq!(directions("aes-128-gcm".parse().unwrap()).len(), 2);
    }

    #[test]
    fn labels_name_the_threads_of_parallel_backends_only() {
        assert_eq!(backend_label(Backend::Seq, 1), "seq");
        assert_eq!(backend_label(Backend::Pool, 4), "pool x4");
        assert_eq!(backend_label(Backend::Cuda, 4), "cuda");
    }

    #[test]
    fn a_plan_with_nothing_to_measure_is_refused() {
        let mut plan = Plan::quick(1);
        plan.sizes.clear();
        let error = Bench::open(plan).err().expect("refused");
        assert!(error.to_string().contains("nothing to measure"), "{error}");
    }

    #[test]
    fn fixed_runs_fix_both_bounds() {
        let plan = Plan::standard(2).with_runs(4);
        assert_eq!(plan.repetition.min_runs, 4);
        assert_eq!(plan.repetition.max_runs, 4);
        assert_eq!(Plan::quick(2).with_runs(0).repetition.max_runs, 1);
    }
}
