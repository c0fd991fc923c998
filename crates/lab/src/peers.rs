//! Peers in the lab: other libraries measured the same way as parcrypt, in the same run.
//!
//! Each peer is a small harness in the repository's `peers/` folder (aws-lc-rs and RustCrypto
//! in one Rust program, OpenSSL's EVP in C, pyca/cryptography in Python, Go's crypto/cipher,
//! Java's javax.crypto). They all speak one protocol (peers/README.md):
//!
//! ```text
//! HARNESS CIPHER DIRECTION BYTES THREADS RUNS MIN_SECONDS
//! ```
//!
//! and print one JSON line ([`PeerRun`]). Every harness checks a known answer (a NIST GCM
//! vector, an SP 800-38A CTR vector) before it measures and refuses to report otherwise;
//! keys are set once outside timing, buffers are written before timing and reused, every
//! message gets a fresh IV (GCM decryption: the IV its ciphertext was made with, set again),
//! a warm-up run finds how many messages last `MIN_SECONDS`, and each timed run has
//! `THREADS` OS threads, each with its own buffers, released together. parcrypt's own rows
//! follow the same protocol in this process, beside a copy of the same bytes with no cipher,
//! the copy floor ([`measure_parcrypt`]).
//!
//! [`PeerSetup::detect`] finds each toolchain and [`PeerSetup::prepare`] builds each harness
//! once into a cache folder, again only when its sources change; a missing toolchain makes
//! a [`Missing`] line (`go: not on this machine (no go on PATH)`), never an error.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use parcrypt_ciphers::{memory, Implementation, KernelFamily};
use parcrypt_engine::{Backend, Engine, JobError, KeyedCipher};
use parcrypt_modes::ctr;
use parcrypt_modes::gcm::nonce_text_counter;
use parcrypt_modes::{CipherSpec, Direction, Mode};
use serde::{Deserialize, Serialize};

use crate::lab::{direction_name, Lab, Level};
use crate::masks::{self, PeerMask};
use crate::record::{BenchRecord, Report, Timing};
use crate::stats::Stats;
use crate::summary::{self, Summary, Table};
use crate::BenchError;

/// The scenario name of peer figures in records.
pub const SCENARIO: &str = "peers";

/// The backend name of parcrypt's own rows.
pub const PARCRYPT: &str = "parcrypt";

/// The copy floor's name in the records: the same buffers read and written by the same
/// threads with no cipher (measured by [`measure_parcrypt`], beside parcrypt).
pub const COPY: &str = "copy";

/// GCM decryption in one pass, the plaintext written before the tag is checked (what
/// `decrypt_into` ran before it authenticated first), measured beside parcrypt's own row,
/// which authenticates first (two passes).
pub const ONE_PASS: &str = "parcrypt one-pass";

/// GCM decryption's first pass alone: GHASH over the ciphertext, nothing written.
pub const GHASH_PASS: &str = "ghash pass";

/// GCM decryption's second pass alone: CTR from the ciphertext into the output.
pub const CTR_PASS: &str = "ctr pass";

/// The rows of parcrypt's own that are no peer: the one-pass comparison and the floors.
const OWN_ROWS: [&str; 4] = [ONE_PASS, GHASH_PASS, CTR_PASS, COPY];

/// The ciphers every harness knows.
pub const CIPHERS: [&str; 4] = ["aes-128-gcm", "aes-256-gcm", "aes-128-ctr", "aes-256-ctr"];

/// GCM's tag length.
const TAG_BYTES: usize = 16;

/// The peers, in the order their rows appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// aws-lc-rs (AWS-LC), through `peers/rust`.
    AwsLcRs,
    /// RustCrypto `aes-gcm`, `ctr` + `aes`, through `peers/rust`.
    RustCrypto,
    /// OpenSSL's EVP interface, `peers/evp.c`.
    Evp,
    /// pyca/cryptography, `peers/pyca.py`.
    Pyca,
    /// Go's crypto/cipher, `peers/go`.
    Go,
    /// Java's javax.crypto, `peers/java/Peer.java`.
    Java,
}

impl Peer {
    /// Every peer.
    pub const ALL: [Peer; 6] = [
        Peer::AwsLcRs,
        Peer::RustCrypto,
        Peer::Evp,
        Peer::Pyca,
        Peer::Go,
        Peer::Java,
    ];

    /// The name in tables and records (the `peer` field of its output).
    pub fn name(self) -> &'static str {
        match self {
            Peer::AwsLcRs => "aws-lc-rs",
            Peer::RustCrypto => "rustcrypto",
            Peer::Evp => "evp",
            Peer::Pyca => "pyca",
            Peer::Go => "go",
            Peer::Java => "java",
        }
    }

    /// A peer by name.
    pub fn from_name(name: &str) -> Option<Peer> {
        Peer::ALL.into_iter().find(|peer| peer.name() == name)
    }
}

/// Peers by name (`aws-lc-rs`, `rustcrypto`, `evp`, `pyca`, `go`, `java`).
pub fn parse_list(names: &[String]) -> Result<Vec<Peer>, BenchError> {
    let mut peers = Vec::new();
    for name in names {
        let name = name.trim().to_ascii_lowercase();
        let peer = Peer::from_name(&name).ok_or_else(|| {
            let known: Vec<&str> = Peer::ALL.iter().map(|peer| peer.name()).collect();
            BenchError::Usage(format!(
                "unknown peer '{name}' (choose {})",
                known.join(", ")
            ))
        })?;
        if !peers.contains(&peer) {
            peers.push(peer);
        }
    }
    Ok(peers)
}

/// What one measurement asks of a harness: the protocol's arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerQuery {
    /// One of [`CIPHERS`].
    pub cipher: String,
    pub direction: Direction,
    /// Bytes per message.
    pub bytes: usize,
    /// OS threads, each with its own buffers and messages.
    pub threads: usize,
    /// Timed runs.
    pub runs: usize,
    /// The least time a run lasts: the warm-up doubles the messages until one does.
    pub min_seconds: f64,
    /// `--kernels`: parcrypt's engine held to this family and each peer's process started
    /// with its mask ([`PeerMask`]); `None`: everything the CPU has. Not a protocol argument.
    pub kernels: Option<KernelFamily>,
}

impl PeerQuery {
    /// The protocol's arguments, in order.
    pub fn arguments(&self) -> Vec<String> {
        vec![
            self.cipher.clone(),
            direction_name(self.direction).to_string(),
            self.bytes.to_string(),
            self.threads.to_string(),
            self.runs.to_string(),
            format!("{}", self.min_seconds),
        ]
    }
}

/// What a harness prints: one JSON line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerRun {
    /// [`Peer::name`], or [`PARCRYPT`].
    pub peer: String,
    /// The library and its version, as the harness reports it.
    pub library: String,
    pub cipher: String,
    pub direction: String,
    /// Bytes per message.
    pub bytes: u64,
    pub threads: usize,
    /// Messages each thread processed in each timed run.
    pub messages: u64,
    /// Wall seconds of each timed run.
    pub seconds: Vec<f64>,
    /// Under `--kernels`: how the run was held to the family ([`PeerMask::describe`]), or
    /// that it could not be; the record's `note`. Never printed by a harness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub masking: Option<String>,
}

impl PeerRun {
    /// Reads a harness's output: the last line that parses as a [`PeerRun`] with at least
    /// one run, whatever came before it.
    pub fn parse(output: &str) -> Result<PeerRun, String> {
        let line = output
            .lines()
            .rev()
            .find(|line| line.trim_start().starts_with('{'))
            .ok_or_else(|| "printed no result line".to_string())?;
        let run: PeerRun = serde_json::from_str(line.trim())
            .map_err(|error| format!("unreadable result line ({error})"))?;
        if run.seconds.is_empty() || run.messages == 0 || run.threads == 0 {
            return Err("a result line with no runs".into());
        }
        if run.seconds.iter().any(|s| !s.is_finite() || *s <= 0.0) {
            return Err("a result line with a run of no time".into());
        }
        Ok(run)
    }

    /// Bytes each timed run processed, all threads together.
    pub fn bytes_per_run(&self) -> u64 {
        self.bytes * self.messages * self.threads as u64
    }

    /// The record of this run: per message figures (each run's wall time over the
    /// messages of all threads), so that `mb_per_s` is the throughput of all threads.
    pub fn record(&self) -> BenchRecord {
        let mut record = BenchRecord::new(
            SCENARIO,
            &self.cipher,
            &self.direction,
            &self.peer,
            self.threads,
            self.bytes,
            Timing::EndToEnd,
        );
        let jobs = (self.messages * self.threads as u64).max(1);
        let samples: Vec<Duration> = self
            .seconds
            .iter()
            .map(|seconds| Duration::from_secs_f64(seconds / jobs as f64))
            .collect();
        let stats = Stats::from_samples(&samples);
        record.warmup = 1;
        record.runs = stats.runs;
        record.jobs_per_run = jobs as usize;
        record.median_s = stats.median.as_secs_f64();
        record.mean_s = stats.mean.as_secs_f64();
        record.min_s = stats.min.as_secs_f64();
        record.max_s = stats.max.as_secs_f64();
        record.stddev_s = stats.stddev.as_secs_f64();
        record.mb_per_s = if record.median_s > 0.0 {
            self.bytes as f64 / record.median_s / 1e6
        } else {
            0.0
        };
        record.variant = Some(self.library.clone());
        record.note = self.masking.clone();
        record
    }
}

/// A peer that cannot run here, and why in a few words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    pub peer: Peer,
    pub reason: String,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: not on this machine ({})",
            self.peer.name(),
            self.reason
        )
    }
}

/// A harness ready to run: the program and the arguments before the protocol's.
#[derive(Clone, Debug)]
pub struct Harness {
    pub peer: Peer,
    pub program: PathBuf,
    pub prefix: Vec<OsString>,
    /// JVM: heap flags depend on the message size.
    java: bool,
}

impl Harness {
    /// A harness that runs `program` with `prefix` before the query's arguments, outside
    /// a JVM.
    fn native(peer: Peer, program: PathBuf, prefix: Vec<OsString>) -> Harness {
        Harness {
            peer,
            program,
            prefix,
            java: false,
        }
    }

    /// Runs one measurement and reads its line. A harness that fails (its known answer
    /// included) gives its last stderr line as the error.
    pub fn run(&self, query: &PeerQuery) -> Result<PeerRun, String> {
        let mut command = Command::new(&self.program);
        let mask = query.kernels.map(|family| PeerMask::new(self.peer, family));
        if let Some(mask) = &mask {
            command.envs(mask.env.iter().map(|(name, value)| (name, value)));
            command.args(&mask.jvm_flags);
        }
        if self.java {
            // The heap holds every thread's buffers (and GCM decryption's internal copy):
            // sized and touched before anything is timed.
            let heap_mib = 256 + 4 * ((query.bytes * query.threads.max(1)) >> 20);
            command.args([
                format!("-Xms{heap_mib}m"),
                format!("-Xmx{heap_mib}m"),
                "-XX:+AlwaysPreTouch".into(),
            ]);
        }
        let output = command
            .args(&self.prefix)
            .args(query.arguments())
            .stdin(Stdio::null())
            .output()
            .map_err(|error| format!("{}: {error}", self.program.display()))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let last = stderr.lines().rev().find(|line| !line.trim().is_empty());
            return Err(last.unwrap_or("failed with no message").trim().to_string());
        }
        let run = PeerRun::parse(&String::from_utf8_lossy(&output.stdout))?;
        if run.peer != self.peer.name()
            || run.cipher != query.cipher
            || run.bytes != query.bytes as u64
            || run.threads != query.threads
        {
            return Err("its result line does not answer the question asked".into());
        }
        Ok(PeerRun {
            masking: mask.map(|mask| mask.describe()),
            ..run
        })
    }
}

/// Where the harnesses come from, where they are built, and where tools are looked for.
#[derive(Clone, Debug)]
pub struct PeerSetup {
    /// The `peers/` folder with the harness sources.
    pub sources: PathBuf,
    /// Where builds go (cargo's target folder included).
    pub cache: PathBuf,
    /// The search path for toolchains (and the `PATH` the builds see).
    pub path: OsString,
    /// A JDK to prefer over `java` on the path (`JAVA_HOME`).
    pub java_home: Option<PathBuf>,
}

impl PeerSetup {
    /// The defaults: sources from `PARCRYPT_PEERS_DIR` or this checkout's `peers/`; builds
    /// in `PARCRYPT_PEERS_CACHE`, else `$XDG_CACHE_HOME/parcrypt/peers`, else
    /// `~/.cache/parcrypt/peers`; tools on `PATH`; `JAVA_HOME` when set.
    pub fn detect() -> PeerSetup {
        let sources = std::env::var_os("PARCRYPT_PEERS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers"));
        let cache = std::env::var_os("PARCRYPT_PEERS_CACHE")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("XDG_CACHE_HOME")
                    .map(|folder| PathBuf::from(folder).join("parcrypt/peers"))
            })
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(|home| PathBuf::from(home).join(".cache/parcrypt/peers"))
            })
            .unwrap_or_else(|| std::env::temp_dir().join("parcrypt-peers"));
        PeerSetup {
            sources,
            cache,
            path: std::env::var_os("PATH").unwrap_or_default(),
            java_home: std::env::var_os("JAVA_HOME").map(PathBuf::from),
        }
    }

    /// `program` on the search path, if there.
    pub fn find(&self, program: &str) -> Option<PathBuf> {
        std::env::split_paths(&self.path)
            .map(|folder| folder.join(program))
            .find(|candidate| candidate.is_file())
    }

    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command.env("PATH", &self.path).stdin(Stdio::null());
        command
    }

    /// Finds the toolchain of `peer` and builds its harness when its sources changed since
    /// the last build. `progress` hears what takes long (the first aws-lc-rs build).
    pub fn prepare(&self, peer: Peer, progress: &mut dyn FnMut(&str)) -> Result<Harness, Missing> {
        let missing = |reason: &str| Missing {
            peer,
            reason: reason.to_string(),
        };
        match peer {
            Peer::AwsLcRs | Peer::RustCrypto => {
                let cargo = self
                    .find("cargo")
                    .ok_or_else(|| missing("no cargo on PATH"))?;
                if peer == Peer::AwsLcRs {
                    if self.find("cmake").is_none() {
                        return Err(missing("no cmake, which aws-lc-rs needs"));
                    }
                    if self.find("cc").is_none() {
                        return Err(missing("no C compiler (cc), which aws-lc-rs needs"));
                    }
                }
                let program = self
                    .rust_harness(&cargo, progress)
                    .map_err(|e| missing(&e))?;
                Ok(Harness::native(peer, program, vec![peer.name().into()]))
            }
            Peer::Evp => {
                let cc = self
                    .find("cc")
                    .ok_or_else(|| missing("no C compiler (cc)"))?;
                let source = self.sources.join("evp.c");
                let program = self.cache.join("evp");
                self.build_once(&program, &[&source], || {
                    let output = self
                        .command(&cc)
                        .args(["-O2", "-pthread"])
                        .arg(&source)
                        .arg("-o")
                        .arg(&program)
                        .arg("-lcrypto")
                        .output()
                        .map_err(|error| error.to_string())?;
                    if output.status.success() {
                        Ok(())
                    } else if String::from_utf8_lossy(&output.stderr).contains("openssl/") {
                        Err("no OpenSSL headers (libssl-dev)".into())
                    } else {
                        Err("evp.c did not compile".into())
                    }
                })
                .map_err(|e| missing(&e))?;
                Ok(Harness::native(peer, program, Vec::new()))
            }
            Peer::Pyca => {
                let python = self
                    .find("python3")
                    .ok_or_else(|| missing("no python3 on PATH"))?;
                let has_module = self
                    .command(&python)
                    .args(["-c", "import cryptography.hazmat.primitives.ciphers.aead"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|status| status.success());
                if !has_module {
                    return Err(missing("python3 has no cryptography module"));
                }
                let script = self.sources.join("pyca.py");
                Ok(Harness::native(peer, python, vec![script.into()]))
            }
            Peer::Go => {
                let go = self.find("go").ok_or_else(|| missing("no go on PATH"))?;
                let folder = self.sources.join("go");
                let program = self.cache.join("go-peer");
                self.build_once(
                    &program,
                    &[&folder.join("main.go"), &folder.join("go.mod")],
                    || {
                        let mut command = self.command(&go);
                        command
                            .current_dir(&folder)
                            .arg("build")
                            .arg("-o")
                            .arg(&program)
                            .arg(".");
                        run_build(command, "the Go harness did not build")
                    },
                )
                .map_err(|e| missing(&e))?;
                Ok(Harness::native(peer, program, Vec::new()))
            }
            Peer::Java => {
                let from_home = |name: &str| {
                    self.java_home
                        .as_ref()
                        .map(|home| home.join("bin").join(name))
                        .filter(|path| path.is_file())
                };
                let java = from_home("java")
                    .or_else(|| self.find("java"))
                    .ok_or_else(|| missing("no java on PATH"))?;
                let javac = from_home("javac")
                    .or_else(|| self.find("javac"))
                    .ok_or_else(|| missing("no javac (a JDK) on PATH"))?;
                let source = self.sources.join("java/Peer.java");
                let classes = self.cache.join("java");
                let marker = classes.join("Peer.class");
                self.build_once_keyed(&marker, &[&source], javac.as_os_str(), || {
                    let mut command = self.command(&javac);
                    command.arg("-d").arg(&classes).arg(&source);
                    run_build(command, "Peer.java did not compile")
                })
                .map_err(|e| missing(&e))?;
                Ok(Harness {
                    peer,
                    program: java,
                    prefix: vec!["-cp".into(), classes.into(), "Peer".into()],
                    java: true,
                })
            }
        }
    }

    /// `cargo build --release` of peers/rust into the cache (cargo rebuilds only what
    /// changed). Says so first when AWS-LC has never been built.
    fn rust_harness(
        &self,
        cargo: &Path,
        progress: &mut dyn FnMut(&str),
    ) -> Result<PathBuf, String> {
        let target = self.cache.join("rust-target");
        let program = target.join("release/parcrypt-peer-rust");
        if !program.is_file() {
            progress(
                "peers: building aws-lc-rs and RustCrypto once (AWS-LC compiles with cmake and a C \
                 compiler: several minutes the first time)",
            );
        }
        let mut command = self.command(cargo);
        command
            .args(["build", "--release", "--quiet", "--manifest-path"])
            .arg(self.sources.join("rust/Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target)
            .env_remove("RUSTFLAGS");
        run_build(command, "the Rust harness did not build")?;
        Ok(program)
    }

    fn build_once(
        &self,
        program: &Path,
        sources: &[&Path],
        build: impl FnOnce() -> Result<(), String>,
    ) -> Result<(), String> {
        self.build_once_keyed(program, sources, OsStr::new(""), build)
    }

    /// Runs `build` unless `program` exists and its stamp matches the sources' digest.
    fn build_once_keyed(
        &self,
        program: &Path,
        sources: &[&Path],
        key: &OsStr,
        build: impl FnOnce() -> Result<(), String>,
    ) -> Result<(), String> {
        let mut digest = Fnv::default();
        digest.add(key.as_encoded_bytes());
        for source in sources {
            let bytes = std::fs::read(source)
                .map_err(|error| format!("cannot read {}: {error}", source.display()))?;
            digest.add(&bytes);
        }
        let stamp_path = program.with_extension("stamp");
        let stamp = format!("{:016x}", digest.0);
        if program.exists() && std::fs::read_to_string(&stamp_path).ok().as_deref() == Some(&stamp)
        {
            return Ok(());
        }
        std::fs::create_dir_all(&self.cache).map_err(|error| error.to_string())?;
        build()?;
        std::fs::write(&stamp_path, stamp).map_err(|error| error.to_string())
    }
}

fn run_build(mut command: Command, failure: &str) -> Result<(), String> {
    let output = command.output().map_err(|error| error.to_string())?;
    if output.status.success() {
        Ok(())
    } else {
        Err(failure.to_string())
    }
}

/// FNV-1a over the sources: enough to notice an edit.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn add(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        // Separate the files, so that moving bytes from one to the next changes the digest.
        self.0 = (self.0 ^ 0xff).wrapping_mul(0x0100_0000_01b3);
    }
}

/// The harnesses that are ready, and one line for each peer that is not.
pub fn prepare_all(
    setup: &PeerSetup,
    peers: &[Peer],
    progress: &mut dyn FnMut(&str),
) -> (Vec<Harness>, Vec<Missing>) {
    let mut ready = Vec::new();
    let mut missing = Vec::new();
    for &peer in peers {
        match setup.prepare(peer, progress) {
            Ok(harness) => ready.push(harness),
            Err(line) => missing.push(line),
        }
    }
    (ready, missing)
}

/// One message through parcrypt as the peers' protocol runs it: `cipher` was keyed once,
/// outside the timing, and this message brings its own IV. As aws-lc-rs's harness does (the
/// only forms its API has), encryption and CTR decryption work in place on `output` (its
/// first `input.len()` bytes, the GCM tag after them), `input` being copied in only when
/// `copy_input` (a check; the timed runs start from a copy made before them); GCM
/// decryption goes from `input` (ciphertext then tag) into `output`.
pub fn parcrypt_message(
    cipher: &KeyedCipher,
    direction: Direction,
    iv: &[u8],
    input: &[u8],
    output: &mut [u8],
    copy_input: bool,
) -> Result<(), JobError> {
    let gcm_opening = direction == Direction::Decrypt && cipher.suite().mode == Mode::Gcm;
    if gcm_opening {
        cipher.decrypt_into(Some(iv), input, output, None)?;
        return Ok(());
    }
    if copy_input {
        output[..input.len()].copy_from_slice(input);
    }
    match direction {
        Direction::Encrypt => cipher.encrypt_in_place(Some(iv), output, input.len(), None)?,
        Direction::Decrypt => cipher.decrypt_in_place(Some(iv), output, input.len(), None)?,
    };
    Ok(())
}

/// Bytes of unused room after each thread's buffer in every harness: allocated one after
/// another, one thread's output could otherwise end in the cache line (or the 128-byte pair
/// the L2 prefetcher fetches together) where the next thread's buffer starts, and whether it
/// did depended on the process (parcrypt's two-thread 1 KiB GCM encryption measured 7.8-8.9
/// GB/s adjacent, 14.8-16.0 spaced, on the Zen 5 VM). `peers/` uses the same 4 KiB.
pub const BUFFER_SPACING: usize = 4096;

/// `bytes` moved into an allocation with [`BUFFER_SPACING`] bytes of room after it.
fn spaced(bytes: Vec<u8>) -> Vec<u8> {
    let mut spaced = Vec::with_capacity(bytes.len() + BUFFER_SPACING);
    spaced.extend_from_slice(&bytes);
    spaced
}

/// What a message of [`measure_parcrypt`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Contender {
    Parcrypt,
    /// GCM decryption only: [`ONE_PASS`], [`GHASH_PASS`], [`CTR_PASS`].
    OnePass,
    GhashPass,
    CtrPass,
    /// The pass of `parcrypt_ciphers::memory` that moves the bytes parcrypt's message moves.
    Copy,
}

impl Contender {
    fn name(self) -> &'static str {
        match self {
            Contender::Parcrypt => PARCRYPT,
            Contender::OnePass => ONE_PASS,
            Contender::GhashPass => GHASH_PASS,
            Contender::CtrPass => CTR_PASS,
            Contender::Copy => COPY,
        }
    }

    fn library(self) -> String {
        match self {
            Contender::Parcrypt => {
                format!("parcrypt {} (seq per thread)", env!("CARGO_PKG_VERSION"))
            }
            Contender::OnePass => "decrypt_into_unshared: one fused CTR + GHASH pass, tag checked \
                 after"
                .into(),
            Contender::GhashPass => "GcmKey::hash_range over the ciphertext".into(),
            Contender::CtrPass => "ctr::apply_into from the ciphertext into the output".into(),
            Contender::Copy => {
                "no cipher: each message's bytes read and written once on the same buffers".into()
            }
        }
    }
}

/// parcrypt measured by the peers' protocol, in this process: the same key, buffers, IVs,
/// warm-up, messages per run and threads (each thread with a `seq` engine of its own, so
/// that each message runs on its thread as a peer's does). Returns parcrypt's run and the
/// copy floor's ([`COPY`]), the most memory lets any row reach: the same buffers and
/// threads, each message's bytes read and written once with no cipher. In place
/// (encryption, CTR decryption) every byte is rewritten where it lies
/// (`memory::rewrite_in_place`); GCM decryption's text is copied from its input into the
/// output (`memory::copy_into`: streaming stores from 8 MiB, as parcrypt's kernels write).
/// GCM decryption adds three rows of parcrypt's own: the one-pass decryption that writes
/// plaintext before the tag is checked ([`ONE_PASS`], what parcrypt's row, authenticated
/// first, is compared with) and each of the two passes alone ([`GHASH_PASS`],
/// [`CTR_PASS`]), whose times add up to the floor of authenticating first. All take turns
/// run by run, so that all see the host as it is (on the shared VM its memory bandwidth
/// moves by half from minute to minute). parcrypt's run comes first, the copy's last.
pub fn measure_parcrypt(query: &PeerQuery) -> Result<Vec<PeerRun>, BenchError> {
    let spec: CipherSpec = query
        .cipher
        .parse()
        .map_err(|_| BenchError::Usage(format!("unknown cipher {}", query.cipher)))?;
    let gcm = spec.mode == Mode::Gcm;
    let encrypt = query.direction == Direction::Encrypt;
    let key: Vec<u8> = (0..spec.algorithm.key_lengths().1 as u8).collect();
    let fixed_iv = vec![0x5a; if gcm { 12 } else { 16 }];
    let tag = if gcm { TAG_BYTES } else { 0 };
    let threads = query.threads.max(1);
    // Keyed once, outside the timing, as every peer's context is; each thread gets a clone
    // (the key schedule is shared) and a `seq` engine runs each message on its own thread.
    let mut builder = Engine::builder().backend(Backend::Seq);
    let mut implementation = Implementation::Fast;
    if let Some(family) = query.kernels {
        builder = builder.kernels(family);
        implementation = Implementation::Limited(family);
    }
    let engine = builder.build()?;
    let cipher = KeyedCipher::new(engine, spec, &key)?;
    // The passes alone run the block cipher and GHASH key the keyed cipher runs.
    let block_cipher = parcrypt_ciphers::new_cipher(spec.algorithm, implementation, &key)
        .map_err(JobError::from)?;
    let mut buffers = Vec::with_capacity(threads);
    for _ in 0..threads {
        let plain: Vec<u8> = (0..query.bytes)
            .map(|i| (i as u8).wrapping_mul(31))
            .collect();
        let input = if gcm && !encrypt {
            let mut sealed = vec![0u8; query.bytes + tag];
            parcrypt_message(
                &cipher,
                Direction::Encrypt,
                &fixed_iv,
                &plain,
                &mut sealed,
                true,
            )?;
            sealed
        } else {
            plain
        };
        // The output starts as a copy of the input, made here, outside the timing: the peers'
        // harnesses copy nothing in their timed runs either (aws-lc-rs's seals its output
        // buffer in place, whatever it holds). Copying in each run's first message, as this
        // did before, cost a whole extra pass at large sizes: at 256 MiB on the Zen 5 VM,
        // AES-128-GCM encryption read 20.2-21.0 GB/s with it and 21.8-25.7 without.
        let mut output = spaced(vec![0x11u8; query.bytes + tag]);
        output[..input.len()].copy_from_slice(&input);
        buffers.push((spaced(input), output));
    }
    let run = |buffers: &mut Vec<(Vec<u8>, Vec<u8>)>,
               contender: Contender,
               count: u64|
     -> Result<f64, BenchError> {
        let barrier = Barrier::new(threads + 1);
        std::thread::scope(|scope| {
            let handles: Vec<_> = buffers
                .iter_mut()
                .enumerate()
                .map(|(thread, (input, output))| {
                    let (barrier, fixed_iv) = (&barrier, &fixed_iv);
                    let (cipher, block_cipher) = (cipher.clone(), &block_cipher);
                    scope.spawn(move || -> Result<(), BenchError> {
                        let mut iv = fixed_iv.clone();
                        barrier.wait();
                        for index in 0..count {
                            if encrypt || !gcm {
                                iv[0] = thread as u8;
                                iv[4..12].copy_from_slice(&index.to_be_bytes());
                            }
                            match contender {
                                Contender::Parcrypt => parcrypt_message(
                                    &cipher,
                                    query.direction,
                                    &iv,
                                    input,
                                    output,
                                    false,
                                )?,
                                Contender::OnePass => {
                                    cipher.decrypt_into_unshared(Some(&iv), input, output, None)?;
                                }
                                Contender::GhashPass => {
                                    let key = cipher.gcm_key().expect("GCM");
                                    std::hint::black_box(key.hash_range(&input[..query.bytes]));
                                }
                                Contender::CtrPass => {
                                    let nonce = iv[..12].try_into().expect("a 96-bit nonce");
                                    ctr::apply_into(
                                        block_cipher.as_ref(),
                                        nonce_text_counter(nonce),
                                        &input[..query.bytes],
                                        &mut output[..query.bytes],
                                    );
                                }
                                Contender::Copy if gcm && !encrypt => {
                                    memory::copy_into(&input[..query.bytes], output)
                                }
                                Contender::Copy => {
                                    memory::rewrite_in_place(&mut output[..query.bytes])
                                }
                            }
                        }
                        std::hint::black_box(&output);
                        Ok(())
                    })
                })
                .collect();
            barrier.wait();
            let start = Instant::now();
            let mut outcome = Ok(());
            for handle in handles {
                let result = handle
                    .join()
                    .unwrap_or_else(|_| Err(BenchError::Mismatch("a thread panicked".into())));
                outcome = outcome.and(result);
            }
            outcome.map(|()| start.elapsed().as_secs_f64())
        })
    };
    let contenders: &[Contender] = if gcm && !encrypt {
        &[
            Contender::Parcrypt,
            Contender::OnePass,
            Contender::GhashPass,
            Contender::CtrPass,
            Contender::Copy,
        ]
    } else {
        &[Contender::Parcrypt, Contender::Copy]
    };
    let mut counts = vec![1u64; contenders.len()];
    for (contender, count) in contenders.iter().zip(&mut counts) {
        while run(&mut buffers, *contender, *count)? < query.min_seconds {
            *count *= 2;
        }
    }
    let mut seconds = vec![Vec::with_capacity(query.runs.max(1)); contenders.len()];
    for _ in 0..query.runs.max(1) {
        for (index, contender) in contenders.iter().enumerate() {
            seconds[index].push(run(&mut buffers, *contender, counts[index])?);
        }
    }
    Ok(contenders
        .iter()
        .zip(counts)
        .zip(seconds)
        .map(|((contender, messages), seconds)| PeerRun {
            peer: contender.name().into(),
            library: contender.library(),
            cipher: query.cipher.clone(),
            direction: direction_name(query.direction).into(),
            bytes: query.bytes as u64,
            threads,
            messages,
            seconds,
            // The copy runs no kernel of any family.
            masking: query
                .kernels
                .filter(|_| *contender != Contender::Copy)
                .map(masks::parcrypt_note),
        })
        .collect())
}

/// What `parcrypt-lab --peers` measures.
#[derive(Clone, Debug)]
pub struct PeerOptions {
    /// Of [`CIPHERS`].
    pub ciphers: Vec<String>,
    pub directions: Vec<Direction>,
    /// Bytes per message.
    pub sizes: Vec<usize>,
    /// Thread counts.
    pub threads: Vec<usize>,
    pub runs: usize,
    pub min_seconds: f64,
    /// Which peers to try.
    pub peers: Vec<Peer>,
    /// `--kernels`: every row held to this family ([`PeerQuery::kernels`]).
    pub kernels: Option<KernelFamily>,
}

impl PeerOptions {
    /// The defaults for `level` with `threads` cores: AES-128-GCM, AES-256-GCM and
    /// AES-128-CTR both ways; 16 B, 1 KiB, 16 KiB, 1 MiB (and 256 MiB beyond `quick`);
    /// one thread and `threads`.
    pub fn new(level: Level, threads: usize) -> PeerOptions {
        let mut sizes = vec![16, 1 << 10, 16 << 10, 1 << 20];
        if level != Level::Quick {
            sizes.push(256 << 20);
        }
        let mut thread_counts = vec![1];
        if threads > 1 {
            thread_counts.push(threads);
        }
        PeerOptions {
            ciphers: vec![
                "aes-128-gcm".into(),
                "aes-256-gcm".into(),
                "aes-128-ctr".into(),
            ],
            directions: vec![Direction::Encrypt, Direction::Decrypt],
            sizes,
            threads: thread_counts,
            runs: level.pick(3, 5, 5),
            min_seconds: level.pick(0.02, 0.1, 0.2),
            peers: Peer::ALL.to_vec(),
            kernels: None,
        }
    }
}

/// Records a note for each missing peer, then measures parcrypt and each ready harness (from
/// [`prepare_all`]) at every cipher, direction, size and thread count. A peer that fails one
/// measurement (its known answer included) gets a note and no figure there.
pub fn run(
    lab: &mut Lab,
    ready: &[Harness],
    missing: &[Missing],
    options: &PeerOptions,
) -> Result<(), BenchError> {
    for cipher in &options.ciphers {
        if !CIPHERS.contains(&cipher.as_str()) {
            return Err(BenchError::Usage(format!(
                "the peers know {} only, not {cipher}",
                CIPHERS.join(", ")
            )));
        }
    }
    if let Some(family) = options.kernels {
        family
            .check()
            .map_err(|error| BenchError::Unsupported(error.to_string()))?;
    }
    for line in missing {
        lab.note(SCENARIO, line.to_string())?;
    }
    for cipher in &options.ciphers {
        for &direction in &options.directions {
            for &threads in &options.threads {
                for &bytes in &options.sizes {
                    let query = PeerQuery {
                        cipher: cipher.clone(),
                        direction,
                        bytes,
                        threads,
                        runs: options.runs,
                        min_seconds: options.min_seconds,
                        kernels: options.kernels,
                    };
                    let what = format!(
                        "{cipher} {} {} x{threads}",
                        direction_name(direction),
                        summary::size(bytes as u64)
                    );
                    lab.progress(&format!("peers: {what} on parcrypt"));
                    for run in measure_parcrypt(&query)? {
                        lab.push(run.record())?;
                    }
                    for harness in ready {
                        lab.progress(&format!("peers: {what} on {}", harness.peer.name()));
                        match harness.run(&query) {
                            Ok(run) => lab.push(run.record())?,
                            Err(reason) => lab.note(
                                SCENARIO,
                                format!("{} failed at {what}: {reason}", harness.peer.name()),
                            )?,
                        }
                    }
                }
            }
        }
    }
    lab.progress_done();
    Ok(())
}

/// The peers' tables, when the report has peer figures: one per cipher and direction,
/// parcrypt and each peer as rows (by thread count), sizes as columns in MB/s, and a row
/// per thread count with parcrypt's speed over the fastest peer's (`~` when their run
/// times overlap).
pub fn summarize(report: &Report) -> Option<Summary> {
    let records: Vec<&BenchRecord> = report.scenario(SCENARIO).collect();
    if records.is_empty() && report.notes_of(SCENARIO).next().is_none() {
        return None;
    }
    let mut summary = Summary::new(
        report,
        SCENARIO,
        "parcrypt beside its peers: key set once, a fresh IV per message, warm buffers",
    );
    let ciphers = summary::distinct(&records, |record| record.cipher.clone());
    for cipher in &ciphers {
        for direction in ["encrypt", "decrypt"] {
            let chosen: Vec<&BenchRecord> = records
                .iter()
                .copied()
                .filter(|record| &record.cipher == cipher && record.direction == direction)
                .collect();
            if chosen.is_empty() {
                continue;
            }
            summary
                .tables
                .push(peer_table(cipher, direction, &chosen, report.run.clock_hz));
        }
    }
    Some(summary)
}

fn peer_table(
    cipher: &str,
    direction: &str,
    records: &[&BenchRecord],
    clock_hz: Option<f64>,
) -> Table {
    let mut sizes = summary::distinct(records, |record| record.bytes);
    sizes.sort_unstable();
    let mut threads = summary::distinct(records, |record| record.threads);
    threads.sort_unstable();
    let mut names = summary::distinct(records, |record| record.backend.clone());
    // parcrypt first, then the peers in their usual order, then parcrypt's one-pass row and
    // the floors, the copy last.
    names.sort_by_key(|name| match name.as_str() {
        PARCRYPT => 0,
        _ => match OWN_ROWS.iter().position(|own| own == name) {
            Some(index) => 100 + index,
            None => 1 + Peer::from_name(name).map_or(99, |peer| peer as usize),
        },
    });
    let size_labels: Vec<String> = sizes.iter().map(|&bytes| summary::size(bytes)).collect();
    let mut columns = vec!["implementation", "threads"];
    columns.extend(size_labels.iter().map(String::as_str));
    let mut table = Table::new(format!("peers: {cipher} {direction}, MB/s"), &columns);
    let find = |name: &str, threads: usize, bytes: u64| {
        records
            .iter()
            .copied()
            .rev()
            .find(|r| r.backend == name && r.threads == threads && r.bytes == bytes)
    };
    // Whether `name` has a figure on `threads` threads at any of the sizes.
    let measured = |name: &str, threads: usize| {
        sizes
            .iter()
            .any(|&bytes| find(name, threads, bytes).is_some())
    };
    // Under `--kernels`, how each row was held to the family (its records' note).
    let masking = |name: &str| {
        records
            .iter()
            .rev()
            .find(|record| record.backend == name)
            .and_then(|record| record.note.as_deref())
            .filter(|note| masks::row_mark(Some(note)).is_some())
    };
    let mut runs = 0;
    for &count in &threads {
        for name in &names {
            if !measured(name, count) {
                continue;
            }
            let label = match masks::row_mark(masking(name)) {
                Some(mark) => format!("{name} {mark}"),
                None => name.clone(),
            };
            let mut row = vec![label, count.to_string()];
            for &bytes in &sizes {
                let record = find(name, count, bytes);
                runs = runs.max(record.map_or(0, |r| r.runs));
                row.push(summary::or_dash(record.map(|r| summary::mbps(r.mb_per_s))));
            }
            table.row(row);
        }
        let fastest_peer = |bytes: u64| {
            names
                .iter()
                .filter(|name| *name != PARCRYPT && !OWN_ROWS.contains(&name.as_str()))
                .filter_map(|name| find(name, count, bytes))
                .max_by(|a, b| a.mb_per_s.total_cmp(&b.mb_per_s))
        };
        let mut ratio = vec!["parcrypt x fastest peer".to_string(), count.to_string()];
        for &bytes in &sizes {
            let ours = find(PARCRYPT, count, bytes);
            let fastest = fastest_peer(bytes);
            ratio.push(summary::or_dash(ours.zip(fastest).map(|(ours, peer)| {
                let text = format!(
                    "{} {}",
                    summary::times(ours.mb_per_s / peer.mb_per_s.max(1e-12)),
                    peer.backend
                );
                summary::marked(text, summary::within_noise(ours, peer))
            })));
        }
        table.row(ratio);
        // parcrypt's speed over another row's, where that row was measured.
        for (label, other) in [("parcrypt x one-pass", ONE_PASS), ("parcrypt x copy", COPY)] {
            if !measured(other, count) {
                continue;
            }
            let mut share = vec![label.to_string(), count.to_string()];
            for &bytes in &sizes {
                let pair = find(PARCRYPT, count, bytes).zip(find(other, count, bytes));
                share.push(summary::or_dash(pair.map(|(ours, floor)| {
                    let text = summary::times(ours.mb_per_s / floor.mb_per_s.max(1e-12));
                    summary::marked(text, summary::within_noise(ours, floor))
                })));
            }
            table.row(share);
        }
        if let Some(clock_hz) = clock_hz {
            // Cycles per byte of one core: the clock times the threads over the bytes a
            // second of all threads together.
            let cycles_per_byte = |record: Option<&BenchRecord>| {
                summary::or_dash(record.map(|record| {
                    let value = clock_hz * count as f64 / (record.mb_per_s.max(1e-12) * 1e6);
                    format!("{value:.3}")
                }))
            };
            let mut ours = vec!["parcrypt cycles/byte".to_string(), count.to_string()];
            let mut theirs = vec!["fastest peer cycles/byte".to_string(), count.to_string()];
            for &bytes in &sizes {
                ours.push(cycles_per_byte(find(PARCRYPT, count, bytes)));
                theirs.push(cycles_per_byte(fastest_peer(bytes)));
            }
            table.row(ours);
            table.row(theirs);
        }
        if measured(GHASH_PASS, count) {
            // The two passes one after the other: their times add up.
            let mut share = vec!["parcrypt x both passes".to_string(), count.to_string()];
            for &bytes in &sizes {
                let floor = find(GHASH_PASS, count, bytes)
                    .zip(find(CTR_PASS, count, bytes))
                    .map(|(ghash, ctr)| 1.0 / (1.0 / ghash.mb_per_s + 1.0 / ctr.mb_per_s));
                let ours = find(PARCRYPT, count, bytes);
                share.push(summary::or_dash(ours.zip(floor).map(|(ours, floor)| {
                    summary::times(ours.mb_per_s / floor.max(1e-12))
                })));
            }
            table.row(share);
        }
    }
    table.note(format!(
        "MB/s of all threads together (10^6 bytes/s), median of {runs} timed runs; each thread \
         has its own buffers and runs whole messages (fresh IV, {direction}, {}), as many as \
         last the minimum run time.",
        if cipher.ends_with("gcm") {
            "16-byte tag made or checked"
        } else {
            "no tag"
        }
    ));
    table.note(format!(
        "\"parcrypt x fastest peer\": parcrypt's MB/s over the fastest peer's at that size and \
         thread count, that peer named; {} marks a ratio inside the run-to-run noise (the two \
         figures' run times overlap).",
        summary::NOISE_MARK
    ));
    if names.iter().any(|name| name == ONE_PASS) {
        table.note(format!(
            "GCM decryption: parcrypt's row authenticates first (GHASH over the ciphertext and \
             the tag check, then CTR: two passes, no plaintext in the output before the tag \
             matched); \"{ONE_PASS}\" decrypts in one fused pass and checks the tag after \
             (plaintext is written first: what decryption into the caller's memory ran before); \
             \"{GHASH_PASS}\" and \"{CTR_PASS}\" are the two passes alone, and \"parcrypt x \
             both passes\" is parcrypt's speed over theirs one after the other (their times \
             added)."
        ));
    }
    if let Some(clock_hz) = clock_hz {
        table.note(format!(
            "cycles/byte: per core, at the clock measured at the start of the run ({:.2} GHz, \
             a chain of dependent additions; under wide vector code some cores run slower, \
             which would make these figures a little high, never low).",
            clock_hz / 1e9
        ));
    }
    if names.iter().any(|name| name == COPY) {
        table.note(
            "\"copy\": no cipher, the most memory lets any row reach (the copy floor): the \
             same buffers and threads, each message's bytes read and written once (in place, \
             or for GCM decryption copied into the output with the kernels' streaming \
             stores); \"parcrypt x copy\" is parcrypt's share of it.",
        );
    }
    // Which library and version each row measured (a JDK's javax.crypto, say, differs by
    // version by two orders of magnitude at 1 MiB on one machine).
    let libraries: Vec<String> = names
        .iter()
        .filter(|name| *name != COPY)
        .filter_map(|name| {
            let record = records
                .iter()
                .rev()
                .find(|record| &record.backend == name)?;
            Some(format!("{name}: {}", record.variant.as_deref()?))
        })
        .collect();
    if !libraries.is_empty() {
        table.note(format!("measured: {}.", libraries.join("; ")));
    }
    let held: Vec<String> = names
        .iter()
        .filter_map(|name| Some(format!("{name}: {}", masking(name)?)))
        .collect();
    if !held.is_empty() {
        table.note(format!(
            "--kernels: [masked] rows ran held to the family, [not masked] rows could not be; \
             {}.",
            held.join("; ")
        ));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_line_reads_back() {
        let line =
            "starting\n{\"peer\":\"evp\",\"library\":\"OpenSSL 3.0\",\"cipher\":\"aes-128-gcm\",\
                    \"direction\":\"encrypt\",\"bytes\":1024,\"threads\":2,\"messages\":1000,\
                    \"seconds\":[0.2,0.1,0.4]}\n";
        let run = PeerRun::parse(line).expect("parses");
        assert_eq!(run.peer, "evp");
        assert_eq!(run.bytes_per_run(), 1024 * 1000 * 2);
        let record = run.record();
        assert_eq!(record.scenario, SCENARIO);
        assert_eq!(record.backend, "evp");
        assert_eq!(record.jobs_per_run, 2000);
        // The median run, 0.2 s, moved 2 048 000 bytes: 10.24 MB/s.
        assert!(
            (record.mb_per_s - 10.24).abs() < 1e-9,
            "{}",
            record.mb_per_s
        );
        assert!((record.min_s - 0.1 / 2000.0).abs() < 1e-15);
        assert_eq!(record.variant.as_deref(), Some("OpenSSL 3.0"));
    }

    /// The peer table of AES-128-GCM result lines in `direction`, one for each (peer,
    /// library, seconds of its runs), 8 messages of 1 MiB on one thread, parsed as a peer's
    /// output is.
    fn gcm_table(direction: &str, runs: &[(&str, &str, &str)]) -> Table {
        let records: Vec<BenchRecord> = runs
            .iter()
            .map(|(peer, library, seconds)| {
                let line = format!(
                    "{{\"peer\":\"{peer}\",\"library\":\"{library}\",\"cipher\":\"aes-128-gcm\",\
                     \"direction\":\"{direction}\",\"bytes\":1048576,\"threads\":1,\"messages\":8,\
                     \"seconds\":[{seconds}]}}"
                );
                PeerRun::parse(&line).expect("parses").record()
            })
            .collect();
        let chosen: Vec<&BenchRecord> = records.iter().collect();
        peer_table("aes-128-gcm", direction, &chosen, None)
    }

    /// [`gcm_table`] of decryption lines, every peer's library named `x`, one for each (peer,
    /// seconds of its runs).
    fn decrypt_table(runs: &[(&str, &str)]) -> Table {
        let runs: Vec<(&str, &str, &str)> = runs
            .iter()
            .map(|&(peer, seconds)| (peer, "x", seconds))
            .collect();
        gcm_table("decrypt", &runs)
    }

    /// The first cell of each of `table`'s rows.
    fn first_column(table: &Table) -> Vec<&str> {
        table.rows.iter().map(|row| row[0].as_str()).collect()
    }

    #[test]
    fn the_table_names_each_rows_library() {
        let table = gcm_table(
            "encrypt",
            &[
                ("evp", "OpenSSL 3.0.22", "0.01"),
                ("java", "Java 17.0.15 javax.crypto", "0.08"),
            ],
        );
        assert_eq!(
            table.notes.last().map(String::as_str),
            Some("measured: evp: OpenSSL 3.0.22; java: Java 17.0.15 javax.crypto.")
        );
        assert_eq!(table.rows.len(), 3, "two peers and the ratio row");
    }

    #[test]
    fn bad_result_lines_are_refused() {
        assert!(PeerRun::parse("").is_err());
        assert!(PeerRun::parse("{not json}").is_err());
        let no_runs = "{\"peer\":\"go\",\"library\":\"x\",\"cipher\":\"aes-128-ctr\",\"direction\":\"decrypt\",\
                       \"bytes\":16,\"threads\":1,\"messages\":4,\"seconds\":[]}";
        assert!(PeerRun::parse(no_runs).is_err());
        let zero = no_runs.replace("[]", "[0.0]");
        assert!(PeerRun::parse(&zero).is_err());
    }

    #[test]
    fn peers_are_named_once() {
        let names = ["pyca".to_string(), "EVP".into(), "pyca".into()];
        assert_eq!(parse_list(&names).expect("known"), [Peer::Pyca, Peer::Evp]);
        let error = parse_list(&["boringssl".to_string()]).expect_err("unknown");
        assert!(
            error.to_string().contains("unknown peer 'boringssl'"),
            "{error}"
        );
    }

    #[test]
    fn a_toolchain_that_is_not_on_the_path_is_one_short_line() {
        let empty = tempfile::tempdir().expect("temp dir");
        let setup = PeerSetup {
            sources: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers"),
            cache: empty.path().join("cache"),
            path: empty.path().as_os_str().to_owned(),
            java_home: None,
        };
        let mut heard = Vec::new();
        let (ready, missing) =
            prepare_all(&setup, &Peer::ALL, &mut |text| heard.push(text.to_string()));
        assert!(ready.is_empty());
        let lines: Vec<String> = missing.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "aws-lc-rs: not on this machine (no cargo on PATH)",
                "rustcrypto: not on this machine (no cargo on PATH)",
                "evp: not on this machine (no C compiler (cc))",
                "pyca: not on this machine (no python3 on PATH)",
                "go: not on this machine (no go on PATH)",
                "java: not on this machine (no java on PATH)",
            ]
        );
        assert!(heard.is_empty(), "nothing was built: {heard:?}");
        assert!(!setup.cache.exists(), "nothing was written");
    }

    #[test]
    fn the_copy_row_comes_last_is_no_peer_and_gets_its_own_ratio() {
        // The copy is faster than everyone; parcrypt takes twice its time, pyca four times.
        let table = decrypt_table(&[(COPY, "0.01"), ("pyca", "0.04"), (PARCRYPT, "0.02")]);
        assert_eq!(
            first_column(&table),
            [
                PARCRYPT,
                "pyca",
                COPY,
                "parcrypt x fastest peer",
                "parcrypt x copy"
            ]
        );
        assert_eq!(table.rows[3][2], "2.00x pyca", "the copy is not a peer");
        assert_eq!(table.rows[4][2], "0.50x");
        assert!(table
            .notes
            .iter()
            .any(|note| note.starts_with("\"copy\": no cipher")));
        assert!(!table.notes.last().expect("notes").contains("copy:"));
    }

    /// GCM decryption's own rows (one pass, the passes alone) are parcrypt's, never a
    /// peer; parcrypt's row is compared with the one-pass row and with its passes' sum.
    #[test]
    fn gcm_decryption_shows_one_pass_beside_two_passes() {
        // Every own row is faster than the peer; parcrypt takes 0.08 s, its passes 0.02 and
        // 0.06 (0.08 together), one pass 0.04.
        let table = decrypt_table(&[
            (COPY, "0.01"),
            (CTR_PASS, "0.06"),
            (GHASH_PASS, "0.02"),
            (ONE_PASS, "0.04"),
            ("aws-lc-rs", "0.16"),
            (PARCRYPT, "0.08"),
        ]);
        assert_eq!(
            first_column(&table),
            [
                PARCRYPT,
                "aws-lc-rs",
                ONE_PASS,
                GHASH_PASS,
                CTR_PASS,
                COPY,
                "parcrypt x fastest peer",
                "parcrypt x one-pass",
                "parcrypt x copy",
                "parcrypt x both passes",
            ]
        );
        assert_eq!(table.rows[6][2], "2.00x aws-lc-rs");
        assert_eq!(table.rows[7][2], "0.50x");
        assert_eq!(table.rows[9][2], "1.00x");
    }

    #[test]
    fn the_copy_is_measured_by_the_parcrypt_rows_protocol() {
        for (cipher, direction) in [
            ("aes-128-gcm", Direction::Encrypt),
            ("aes-128-gcm", Direction::Decrypt),
            ("aes-128-ctr", Direction::Decrypt),
        ] {
            let expected: &[&str] = if cipher.ends_with("gcm") && direction == Direction::Decrypt {
                &[PARCRYPT, ONE_PASS, GHASH_PASS, CTR_PASS, COPY]
            } else {
                &[PARCRYPT, COPY]
            };
            let query = PeerQuery {
                cipher: cipher.into(),
                direction,
                bytes: 4096,
                threads: 2,
                runs: 3,
                min_seconds: 0.0,
                kernels: None,
            };
            let runs = measure_parcrypt(&query).expect("measures");
            assert_eq!(runs.len(), expected.len());
            for (run, peer) in runs.iter().zip(expected) {
                assert_eq!((run.peer.as_str(), run.threads), (*peer, 2));
                assert_eq!(run.seconds.len(), 3);
                assert!(run.seconds.iter().all(|&seconds| seconds > 0.0));
                assert_eq!(run.bytes_per_run(), 4096 * run.messages * 2);
            }
        }
    }

    /// A harness under `--kernels` is started with its mask: a stand-in `evp` (a shell
    /// script) prints the `OPENSSL_ia32cap` it was given as its library, and the run says how
    /// it was masked.
    #[test]
    fn a_peer_process_gets_its_mask_in_its_environment() {
        let script = "printf '{\"peer\":\"evp\",\"library\":\"cap=%s\",\"cipher\":\"%s\",\
                      \"direction\":\"%s\",\"bytes\":%s,\"threads\":%s,\"messages\":1,\
                      \"seconds\":[0.5]}\\n' \"$OPENSSL_ia32cap\" \"$1\" \"$2\" \"$3\" \"$4\"";
        let harness = Harness::native(
            Peer::Evp,
            PathBuf::from("/bin/sh"),
            vec!["-c".into(), script.into(), "sh".into()],
        );
        let mut query = PeerQuery {
            cipher: "aes-128-gcm".into(),
            direction: Direction::Encrypt,
            bytes: 64,
            threads: 1,
            runs: 1,
            min_seconds: 0.0,
            kernels: Some(KernelFamily::AesNi),
        };
        let run = harness.run(&query).expect("runs");
        assert_eq!(run.library, "cap=~0x0:~0x5e42d0230000");
        assert_eq!(
            run.record().note.as_deref(),
            Some("masked to aes-ni (OPENSSL_ia32cap=~0x0:~0x5e42d0230000)")
        );
        query.kernels = None;
        let run = harness.run(&query).expect("runs");
        let inherited = std::env::var("OPENSSL_ia32cap").unwrap_or_default();
        assert_eq!(run.library, format!("cap={inherited}"));
        assert_eq!(run.masking, None);
    }

    #[test]
    fn masked_rows_are_marked_in_the_table() {
        let query = PeerQuery {
            cipher: "aes-128-ctr".into(),
            direction: Direction::Encrypt,
            bytes: 1024,
            threads: 1,
            runs: 1,
            min_seconds: 0.0,
            kernels: Some(KernelFamily::Portable),
        };
        let mut records: Vec<BenchRecord> = measure_parcrypt(&query)
            .expect("measures")
            .iter()
            .map(PeerRun::record)
            .collect();
        assert_eq!(
            records[0].note.as_deref(),
            Some("masked to portable (EngineBuilder::kernels)")
        );
        assert_eq!(records[1].note, None, "the copy runs no kernel");
        let mut rust = records[0].clone();
        rust.backend = "rustcrypto".into();
        rust.note = Some(PeerMask::new(Peer::RustCrypto, KernelFamily::Portable).describe());
        records.push(rust);
        let chosen: Vec<&BenchRecord> = records.iter().collect();
        let table = peer_table("aes-128-ctr", "encrypt", &chosen, None);
        assert_eq!(
            first_column(&table)[..3],
            ["parcrypt [masked]", "rustcrypto [not masked]", COPY]
        );
        assert!(table
            .notes
            .last()
            .expect("notes")
            .starts_with("--kernels: "));
    }

    /// With a measured clock, the table gives parcrypt's and the fastest peer's cycles per
    /// byte of one core: clock x threads / rate.
    #[test]
    fn cycles_per_byte_come_from_the_clock() {
        let query = PeerQuery {
            cipher: "aes-128-ctr".into(),
            direction: Direction::Encrypt,
            bytes: 1024,
            threads: 1,
            runs: 1,
            min_seconds: 0.0,
            kernels: None,
        };
        let mut records: Vec<BenchRecord> = measure_parcrypt(&query)
            .expect("measures")
            .iter()
            .map(PeerRun::record)
            .collect();
        records[0].mb_per_s = 2000.0;
        let mut slower = records[0].clone();
        slower.backend = "aws-lc-rs".into();
        slower.mb_per_s = 1000.0;
        let mut faster = records[0].clone();
        faster.backend = "rustcrypto".into();
        faster.mb_per_s = 8000.0;
        records.extend([slower, faster]);
        let chosen: Vec<&BenchRecord> = records.iter().collect();
        let row = |table: &Table, label: &str| {
            let rows = &table.rows;
            rows.iter()
                .find(|row| row[0] == label)
                .map(|row| row[2].clone())
        };
        let table = peer_table("aes-128-ctr", "encrypt", &chosen, Some(4.0e9));
        assert_eq!(
            row(&table, "parcrypt cycles/byte").as_deref(),
            Some("2.000")
        );
        assert_eq!(
            row(&table, "fastest peer cycles/byte").as_deref(),
            Some("0.500")
        );
        assert!(table.notes.iter().any(|note| note.contains("4.00 GHz")));
        let table = peer_table("aes-128-ctr", "encrypt", &chosen, None);
        assert_eq!(row(&table, "parcrypt cycles/byte"), None);
    }

    #[test]
    fn queries_are_the_protocols_arguments() {
        let query = PeerQuery {
            cipher: "aes-256-gcm".into(),
            direction: Direction::Decrypt,
            bytes: 16384,
            threads: 2,
            runs: 5,
            min_seconds: 0.1,
            kernels: None,
        };
        assert_eq!(
            query.arguments(),
            ["aes-256-gcm", "decrypt", "16384", "2", "5", "0.1"]
        );
    }

    #[test]
    fn parcrypt_messages_match_the_known_answers() {
        let engine = Engine::builder()
            .backend(Backend::Seq)
            .build()
            .expect("seq");
        // NIST GCM test case 2: zero key, zero IV, one zero block.
        let spec: CipherSpec = "aes-128-gcm".parse().expect("spec");
        let cipher = KeyedCipher::new(engine, spec, &[0; 16]).expect("keyed");
        let mut sealed = [0u8; 32];
        parcrypt_message(
            &cipher,
            Direction::Encrypt,
            &[0; 12],
            &[0; 16],
            &mut sealed,
            true,
        )
        .expect("seals");
        assert_eq!(
            hex::encode(sealed),
            "0388dace60b6a392f328c2b971b2fe78ab6e47d42cec13bdf53a67b21257bddf"
        );
        let mut opened = [9u8; 32];
        parcrypt_message(
            &cipher,
            Direction::Decrypt,
            &[0; 12],
            &sealed,
            &mut opened,
            false,
        )
        .expect("opens");
        assert_eq!(opened[..16], [0; 16]);
        sealed[3] ^= 1;
        assert!(parcrypt_message(
            &cipher,
            Direction::Decrypt,
            &[0; 12],
            &sealed,
            &mut opened,
            false
        )
        .is_err());
    }
}
