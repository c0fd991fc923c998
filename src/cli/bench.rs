//! `parcrypt bench`: how fast parcrypt's own backends are on this machine, as `openssl speed`
//! and `cryptsetup benchmark` tell theirs. The run itself (checks against seq, timing,
//! medians, the table and JSON) is the library's (`parcrypt::bench`); this file parses
//! arguments and prints.
//!
//! The benchmark lab (scenarios, peers, OpenSSL in the same run, result folders) is a program
//! of its own, `parcrypt-lab`, not linked here. Its flags still work on `parcrypt bench`: they
//! say so in one line and run `parcrypt-lab` from the folder this program is in.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;
use parcrypt::bench::{available_threads, report, Backend, Bench, CipherSpec, Plan};
use parcrypt::devices::KernelFamily;

/// `--sizes` here and `parcrypt tune --max-size`: 4096, 64K, 16M, 1G.
pub(super) use parcrypt::bench::report::parse_size;

use super::{typed, Failure};

#[derive(Args)]
#[command(after_help = "Examples:
  parcrypt bench --quick                          a few seconds, every backend
  parcrypt bench --ciphers aes-256-gcm --sizes 1M,64M --backends seq,pool,cuda
  parcrypt bench --json > speed.json              the figures for a program

Every backend is first checked to give seq's bytes; then each cipher, direction, size and
backend is timed in memory, end to end, and the median of several runs is shown.

Comparisons with OpenSSL, other libraries and the seed experiments are the benchmark lab's:
`parcrypt-lab --help` (built with `cargo build --release -p parcrypt-lab`; see docs/LAB.md).")]
pub struct BenchArgs {
    /// A few seconds: AES-128 in CTR, GCM and CBC at two sizes
    #[arg(long)]
    quick: bool,
    /// Ciphers, comma-separated (default: AES-128 in every mode, AES-256 CTR and GCM,
    /// Blowfish and RC6 in CTR)
    #[arg(long, value_delimiter = ',', value_parser = typed::<CipherSpec>())]
    ciphers: Vec<CipherSpec>,
    /// Backends, comma-separated (default: seq, threads, pool, auto and every GPU backend
    /// this machine has)
    #[arg(long, value_delimiter = ',', value_parser = typed::<Backend>())]
    backends: Vec<Backend>,
    /// Bytes per job, comma-separated (suffixes K, M, G; default 16K,1M,16M)
    #[arg(long, alias = "size", value_delimiter = ',', value_parser = parse_size)]
    sizes: Vec<usize>,
    /// Exactly this many timed runs per figure (default: as many as fit each figure's time)
    #[arg(long)]
    repeat: Option<usize>,
    /// Threads for threads, pool and auto (default: all cores; at most 8 per core, and 64)
    #[arg(long, value_name = "N", value_parser = super::parse_threads)]
    threads: Option<usize>,
    /// The highest CPU kernel family to use: portable, aes-ni, vaes-256 or vaes-512
    /// (default: the best this CPU has; one it lacks is refused)
    #[arg(long, value_name = "FAMILY", value_parser = super::named::<KernelFamily>(), hide_possible_values = true)]
    kernels: Option<KernelFamily>,
    /// The figures as JSON on stdout (median, fastest and slowest run, MB/s) instead of the
    /// table
    #[arg(long, conflicts_with_all = LAB_FLAGS)]
    json: bool,

    // The lab's flags, from before the lab left this program: accepted, not shown, and
    // handed to `parcrypt-lab` with the rest of the command line.
    #[arg(long, value_delimiter = ',', hide = true)]
    scenario: Vec<String>,
    #[arg(long, hide = true, conflicts_with = "quick")]
    full: bool,
    #[arg(long, short, value_name = "DIR", hide = true)]
    output: Option<PathBuf>,
    #[arg(long, value_name = "DIR", hide = true)]
    report: Option<PathBuf>,
    #[arg(long, value_parser = parse_size, hide = true)]
    file_size: Option<usize>,
    #[arg(long, hide = true)]
    no_openssl: bool,
    #[arg(long, num_args = 0..=1, require_equals = true, value_delimiter = ',', hide = true)]
    peers: Option<Vec<String>>,
}

/// The flags that belong to `parcrypt-lab`.
const LAB_FLAGS: [&str; 7] = [
    "scenario",
    "full",
    "output",
    "report",
    "file_size",
    "no_openssl",
    "peers",
];

impl BenchArgs {
    /// Whether the command line asks for the lab.
    fn wants_lab(&self) -> bool {
        !self.scenario.is_empty()
            || self.full
            || self.output.is_some()
            || self.report.is_some()
            || self.file_size.is_some()
            || self.no_openssl
            || self.peers.is_some()
    }
}

pub fn run(args: BenchArgs) -> Result<(), Failure> {
    if args.wants_lab() {
        return run_lab();
    }
    let threads = args.threads.unwrap_or_else(available_threads);
    let mut plan = if args.quick {
        Plan::quick(threads)
    } else {
        Plan::standard(threads)
    };
    if !args.ciphers.is_empty() {
        plan.ciphers = args.ciphers.clone();
    }
    if !args.sizes.is_empty() {
        plan.sizes = args.sizes.clone();
    }
    if !args.backends.is_empty() {
        plan.backends = Some(args.backends.clone());
    }
    if let Some(runs) = args.repeat.filter(|&runs| runs > 0) {
        plan = plan.with_runs(runs);
    }
    // The user's environment (docs/ENVIRONMENT.md): tune files, kernel cache, GCM kernel,
    // streaming stores and pool spin, as every other command's engines take them.
    plan.builder = parcrypt::environment::apply(plan.builder)?;
    if let Some(family) = args.kernels {
        plan.builder = plan.builder.kernels(family);
    }
    let bench = Bench::open(plan)?;
    if !args.json {
        show!(
            "parcrypt bench: {}; {threads} threads; {}; kernels: {}",
            bench.cpu(),
            bench.cpu_features(),
            bench.kernels()
        )?;
        for line in bench.gpus().iter().chain(bench.unavailable()) {
            show!("GPU backend: {line}")?;
        }
        show!("")?;
    }
    let on_terminal = std::io::stderr().is_terminal();
    let mut progress = |text: &str| {
        if on_terminal {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[K{text}");
            let _ = stderr.flush();
        }
    };
    let outcome = bench.run(&mut progress);
    progress("");
    let run = outcome?;
    if args.json {
        show!("{}", report::json(&run).trim_end())?;
    } else {
        show!("{}", report::table(&run).trim_end())?;
    }
    Ok(())
}

/// The name of the lab's program, next to this one.
const LAB: &str = "parcrypt-lab";

/// Runs `parcrypt-lab` with this command line's arguments after `bench`, once a line has said
/// that this is where they live now.
fn run_lab() -> Result<(), Failure> {
    let arguments: Vec<OsString> = std::env::args_os()
        .skip(1)
        .skip_while(|argument| argument != "bench")
        .skip(1)
        .collect();
    let shown: Vec<String> = arguments
        .iter()
        .map(|argument| argument.to_string_lossy().into_owned())
        .collect();
    say!(
        "parcrypt: warning: these options moved to the benchmark lab; run `{LAB} {}` instead (running it now)",
        shown.join(" ")
    );
    let here =
        std::env::current_exe().map_err(|error| Failure(format!("cannot find {LAB}: {error}")))?;
    let folder = here.parent().unwrap_or(std::path::Path::new("."));
    let lab = folder.join(format!("{LAB}{}", std::env::consts::EXE_SUFFIX));
    if !lab.is_file() {
        return Err(Failure(format!(
            "{LAB} is not in {} (the lab is not installed with parcrypt): build it with `cargo build --release -p {LAB}`",
            folder.display()
        )));
    }
    let mut command = std::process::Command::new(&lab);
    command.args(&arguments);
    hand_over(command, &lab)
}

/// Replaces this process with `command` (so the lab's exit status is the caller's); returns
/// only when it could not be started.
#[cfg(unix)]
fn hand_over(mut command: std::process::Command, lab: &std::path::Path) -> Result<(), Failure> {
    use std::os::unix::process::CommandExt;
    let error = command.exec();
    Err(Failure(format!("cannot run {}: {error}", lab.display())))
}

/// Runs `command` and ends as it ended.
#[cfg(not(unix))]
fn hand_over(mut command: std::process::Command, lab: &std::path::Path) -> Result<(), Failure> {
    let status = command
        .status()
        .map_err(|error| Failure(format!("cannot run {}: {error}", lab.display())))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure(format!("{LAB} failed ({status})")))
    }
}
