//! `parcrypt-lab`: the benchmark lab's command line (the flags `parcrypt bench` had before
//! the lab left the product). It parses arguments, runs the lab and prints; measuring,
//! records, scenarios and exporters live in the library.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;

use clap::Parser;
use parcrypt_bench::report::parse_size;
use parcrypt_ciphers::KernelFamily;
use parcrypt_engine::{available_threads, Backend, CipherSpec};
use parcrypt_lab::export::{self, table};
use parcrypt_lab::lab::{Lab, LabOptions, Level};
use parcrypt_lab::{peers, scenario, summary};

#[derive(Parser)]
#[command(
    name = "parcrypt-lab",
    version,
    about = "parcrypt's benchmark lab: the sweep, the seed experiments S0-S4 and peer libraries, \
             with OpenSSL and a raw copy measured in the same run",
    after_help = scenario_help()
)]
struct LabArgs {
    /// Scenarios, comma-separated: sweep, s0, s1, s2, s3, s4 or all (what each measures:
    /// below)
    #[arg(long, value_delimiter = ',')]
    scenario: Vec<String>,
    /// Small sizes and few runs: the whole lab in under a minute
    #[arg(long)]
    quick: bool,
    /// The seeds' own sizes and repetitions (the default for a named --scenario)
    #[arg(long, conflicts_with = "quick")]
    full: bool,
    /// Folder for the results: results.jsonl (written as the run goes), then results.json,
    /// results.csv and results.md
    #[arg(long, short, value_name = "DIR")]
    output: Option<PathBuf>,
    /// Measure nothing: redraw the tables and DIR/README.md (with DIR's plots) from DIR's
    /// results
    #[arg(long, value_name = "DIR", conflicts_with_all = ["output", "scenario", "quick", "full"])]
    report: Option<PathBuf>,
    /// Sweep: ciphers, comma-separated (default: by level)
    #[arg(long, value_delimiter = ',', value_parser = typed::<CipherSpec>())]
    ciphers: Vec<CipherSpec>,
    /// Backends, comma-separated (default: seq, threads, pool, auto and every GPU backend
    /// this machine has)
    #[arg(long, value_delimiter = ',', value_parser = typed::<Backend>())]
    backends: Vec<Backend>,
    /// Sweep: bytes per job, comma-separated (suffixes K, M, G)
    #[arg(long, alias = "size", value_delimiter = ',', value_parser = parse_size)]
    sizes: Vec<usize>,
    /// Sweep: size of the generated file for the end-to-end table (0 skips it)
    #[arg(long, value_parser = parse_size)]
    file_size: Option<usize>,
    /// Exactly this many timed runs per figure (default: as many as fit each figure's time)
    #[arg(long)]
    repeat: Option<usize>,
    /// Threads for threads/pool and OpenSSL's processes (default: all cores; at most 8 per
    /// core, and 64)
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,
    /// Do not run OpenSSL for comparison
    #[arg(long)]
    no_openssl: bool,
    /// Peers as rows beside parcrypt: aws-lc-rs, rustcrypto, evp (OpenSSL), pyca, go, java,
    /// each where its toolchain is present (`--peers=pyca,evp` picks some). AES-GCM/CTR per
    /// message, with a `copy` row (no cipher: the same bytes read and written once) as the
    /// copy floor; --ciphers, --sizes, --threads and --repeat apply. Alone it runs only the
    /// peers. The first build of aws-lc-rs takes several minutes
    #[arg(long, value_name = "PEERS", num_args = 0..=1, require_equals = true, value_delimiter = ',')]
    peers: Option<Vec<String>>,
    /// Hold every row to one CPU kernel family: portable, aes-ni, vaes-256 or vaes-512.
    /// parcrypt's engines take it (as `parcrypt bench --kernels`); each peer's process is
    /// started with its own mask of the features above it (OPENSSL_ia32cap for evp, pyca
    /// and aws-lc-rs, GODEBUG cpu.* for go, -XX:UseAVX for java; rustcrypto has none and is
    /// marked "not masked")
    #[arg(long, value_name = "FAMILY", value_parser = typed::<KernelFamily>())]
    kernels: Option<KernelFamily>,
}

/// An error phrased for the user, printed as one line.
struct Failure(String);

impl<E: fmt::Display> From<E> for Failure {
    fn from(error: E) -> Self {
        Failure(error.to_string())
    }
}

/// One line of the report on stdout; a stdout that cannot be written is a [`Failure`].
fn show(text: impl fmt::Display) -> Result<(), Failure> {
    writeln!(std::io::stdout().lock(), "{text}")
        .map_err(|error| Failure(format!("cannot write output: {error}")))
}

/// The clap value parser of a type that parses from text (a backend, a cipher suite).
fn typed<T>() -> impl clap::builder::TypedValueParser<Value = T>
where
    T: FromStr + Clone + Send + Sync + 'static,
    T::Err: fmt::Display,
{
    |text: &str| text.parse::<T>().map_err(|error| error.to_string())
}

/// `--threads`: a count the engine accepts.
fn parse_threads(text: &str) -> Result<usize, String> {
    let threads = text
        .trim()
        .parse::<usize>()
        .map_err(|_| format!("'{text}' is not a number of threads"))?;
    parcrypt_engine::check_threads(threads).map_err(|error| error.to_string())
}

/// The scenarios and how levels work, under `--help`.
fn scenario_help() -> String {
    let mut text = String::from("Scenarios (what each measures):\n");
    for (name, description) in scenario::DESCRIPTIONS {
        text += &format!("  {name:<6} {description}\n");
    }
    text += "\nWithout --scenario every scenario runs, trimmed to a few minutes; a named --scenario runs \
             at the seeds' sizes (as --full), and --quick shrinks anything to under a minute.\n\
             Plots, and a report with them: python3 scripts/report.py DIR (after --output DIR).";
    text
}

fn main() -> ExitCode {
    let args = LabArgs::parse();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(message)) => {
            let _ = writeln!(std::io::stderr().lock(), "parcrypt-lab: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: LabArgs) -> Result<(), Failure> {
    if let Some(folder) = &args.report {
        return redraw(folder);
    }
    if let Some(family) = args.kernels {
        family.check()?;
    }
    let level = if args.quick {
        Level::Quick
    } else if args.full || !args.scenario.is_empty() {
        Level::Full
    } else {
        Level::Short
    };
    let names = if args.scenario.is_empty() {
        vec!["all".to_string()]
    } else {
        args.scenario.clone()
    };
    let scenarios = if args.peers.is_some() && args.scenario.is_empty() {
        Vec::new()
    } else {
        scenario::parse_names(&names)?
    };
    let mut options = LabOptions::new(level);
    options.threads = args.threads.unwrap_or_else(available_threads);
    options.openssl = !args.no_openssl;
    options.runs = args.repeat.filter(|&runs| runs > 0);
    if !args.backends.is_empty() {
        options.backends = Some(args.backends.clone());
    }
    if !args.ciphers.is_empty() {
        options.ciphers = Some(args.ciphers.clone());
    }
    // The user's environment (docs/ENVIRONMENT.md), as parcrypt's own commands take it.
    options.builder = parcrypt::environment::apply(options.builder)?;
    if let Some(family) = args.kernels {
        options.builder = options.builder.kernels(family);
        options.kernels = Some(family);
    }
    if !args.sizes.is_empty() {
        options.sizes = Some(args.sizes.clone());
    }
    options.file_bytes = args.file_size;

    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let mut recorded = scenarios.clone();
    if args.peers.is_some() {
        recorded.push(peers::SCENARIO.to_string());
    }
    let mut lab = Lab::new(options, &command, &recorded, args.output.as_deref())?;
    let run = &lab.report().run;
    let clock = run
        .clock_hz
        .map(|hz| format!("; clock {:.2} GHz measured", hz / 1e9))
        .unwrap_or_default();
    show(format_args!(
        "parcrypt-lab ({} level): {}; {} threads{clock}; {}",
        level.name(),
        run.cpu,
        run.threads,
        run.cpu_features
    ))?;
    if let Some(family) = args.kernels {
        show(format_args!(
            "kernels: {family} (parcrypt's engines held to it; each peer masked its own way)"
        ))?;
    }
    show(format_args!(
        "OpenSSL: {}",
        run.openssl.as_deref().unwrap_or("not used")
    ))?;
    for gpu in &run.gpus {
        show(format_args!("GPU backend: {}", summary::backend_line(gpu)))?;
    }
    for reason in lab.energy_unavailable() {
        show(reason)?;
    }
    if let Some(folder) = &args.output {
        show(format_args!(
            "writing {} as the run goes",
            folder.join(export::JSON_LINES_FILE).display()
        ))?;
    }
    show("")?;

    let mut outcome = Ok(());
    for name in &scenarios {
        if let Err(error) = scenario::run(&mut lab, name) {
            outcome = Err(Failure(format!("scenario {name}: {error}")));
            break;
        }
        lab.progress_done();
        if let Some(summary) = scenario::summarize_one(lab.report(), name) {
            show(table::render(&summary))?;
        }
    }
    if args.peers.is_some() && outcome.is_ok() {
        outcome = run_peers(&mut lab, &args);
    }
    let report = lab.finish();
    if let Some(folder) = &args.output {
        for path in export::write_results(folder, &report)? {
            show(format_args!("wrote {}", path.display()))?;
        }
        show(format_args!(
            "plots and a report with them: python3 scripts/report.py {}",
            folder.display()
        ))?;
    }
    outcome
}

/// `--peers`: the peers' options from the command line, the run, its table.
fn run_peers(lab: &mut Lab, args: &LabArgs) -> Result<(), Failure> {
    let mut options = peers::PeerOptions::new(lab.level(), lab.threads());
    if !args.ciphers.is_empty() {
        options.ciphers = args.ciphers.iter().map(ToString::to_string).collect();
    }
    if !args.sizes.is_empty() {
        options.sizes = args.sizes.clone();
    }
    if let Some(runs) = args.repeat.filter(|&runs| runs > 0) {
        options.runs = runs;
    }
    options.kernels = args.kernels;
    if let Some(names) = args.peers.as_ref().filter(|names| !names.is_empty()) {
        options.peers = peers::parse_list(names)?;
    }
    let setup = peers::PeerSetup::detect();
    show(format_args!(
        "peers: preparing the harnesses in {}",
        setup.cache.display()
    ))?;
    let (ready, missing) = peers::prepare_all(&setup, &options.peers, &mut |text| {
        let _ = show(text);
    });
    for line in &missing {
        show(line)?;
    }
    let names: Vec<&str> = ready.iter().map(|harness| harness.peer.name()).collect();
    show(format_args!("peers ready: {}", names.join(", ")))?;
    let outcome = peers::run(lab, &ready, &missing, &options)
        .map_err(|error| Failure(format!("peers: {error}")));
    lab.progress_done();
    if let Some(summary) = peers::summarize(lab.report()) {
        show(table::render(&summary))?;
    }
    outcome
}

/// `--report DIR`: the tables again, and DIR/README.md with the plots found there.
fn redraw(folder: &Path) -> Result<(), Failure> {
    let report = export::read_results(folder).map_err(Failure)?;
    for summary in scenario::summarize(&report) {
        show(table::render(&summary))?;
    }
    export::write_results(folder, &report)?;
    let path = export::write_report(folder, &report)?;
    show(format_args!("wrote {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_parse_as_parcrypt_bench_took_them() {
        let args = LabArgs::try_parse_from([
            "parcrypt-lab",
            "--scenario",
            "sweep,s2",
            "--quick",
            "--ciphers",
            "aes-128-ctr",
            "--sizes",
            "4K,1M",
            "--peers=pyca,evp",
        ])
        .expect("parses");
        assert_eq!(args.scenario, ["sweep", "s2"]);
        assert_eq!(args.sizes, [4096, 1 << 20]);
        assert_eq!(
            args.peers.as_deref(),
            Some(&["pyca".to_string(), "evp".to_string()][..])
        );
        assert_eq!(args.kernels, None);
    }

    #[test]
    fn kernels_takes_a_family_name_and_refuses_others() {
        for family in KernelFamily::ALL {
            let args =
                LabArgs::try_parse_from(["parcrypt-lab", "--peers", "--kernels", family.name()])
                    .expect("parses");
            assert_eq!(args.kernels, Some(family));
        }
        let error = LabArgs::try_parse_from(["parcrypt-lab", "--kernels", "avx9"])
            .err()
            .expect("refused");
        assert!(
            error.to_string().contains("unknown kernel family 'avx9'"),
            "{error}"
        );
    }
}
