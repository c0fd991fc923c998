//! Argument parsing into typed values, and dispatch. Each subcommand's file parses its
//! arguments, calls the library and reports; none holds logic of its own.
//!
//! Exit status: 0 success, 1 a failure (one line on stderr), 2 a usage error, 141 the
//! reader of stdout went away (no message, as `cat` ends; see [`parcrypt::files::pipes`]).

/// Writes one line to stderr, as `eprintln!` does, except that a stderr that cannot be
/// written (`2>/dev/full`, a closed file) loses the line instead of panicking: a message
/// is never a reason to change the exit status. `eprintln!` is refused by clippy.toml.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::cli::say(format_args!($($arg)*))
    };
}

/// Writes one line of a report to stdout, as `println!` does, except that a stdout that
/// cannot be written (`>/dev/full`) is a [`Failure`] ("cannot write output: ..."), not a
/// panic; use it as `show!(...)?`. `println!` is denied in this crate (src/main.rs).
macro_rules! show {
    ($($arg:tt)*) => {
        $crate::cli::show(format_args!($($arg)*))
    };
}

mod age;
mod bench;
mod decrypt;
mod devices;
mod docs;
mod encrypt;
mod files;
mod progress;
mod raw;
mod tune;

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;
use std::str::FromStr;

use clap::{Parser, Subcommand};
use parcrypt::devices::KernelFamily;
use parcrypt::{Backend, Engine};

/// The quick start, shown at the end of `parcrypt --help` and in the man page.
const EXAMPLES: &str = "\
Examples:
  Encrypt a file, asked for a passphrase (twice), and decrypt it (asked once):
    parcrypt encrypt notes.txt -o notes.txt.pc
    parcrypt decrypt notes.txt.pc -o notes.txt
  Without a prompt, the passphrase from a file or from the environment:
    parcrypt encrypt --passphrase-file pass.txt notes.txt -o notes.txt.pc
    PARCRYPT_PASSPHRASE=\"$SECRET\" parcrypt decrypt notes.txt.pc -o notes.txt
  Replace an existing output (--force and -f are the older names):
    parcrypt decrypt notes.txt.pc -o notes.txt --overwrite
  What this machine can run on, and how fast:
    parcrypt devices
    parcrypt bench
  Shell completion (bash, zsh, fish, elvish, powershell):
    parcrypt completions bash > ~/.local/share/bash-completion/completions/parcrypt";

#[derive(Parser)]
#[command(
    name = "parcrypt",
    version,
    about = "Block-cipher encryption at the speed of the hardware",
    long_about = "parcrypt runs AES-128/192/256, Blowfish and RC6 in ECB, CBC, CTR and GCM on one \
                  thread (seq), on every core (threads, pool) and on GPUs (opencl, cuda, hip), with output \
                  that is bit-for-bit the same on every backend and matches OpenSSL.",
    after_help = EXAMPLES
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// One cipher and mode with an explicit key and IV, byte-compatible with `openssl enc -nosalt`
    #[command(subcommand)]
    Raw(raw::RawCommand),
    /// Encrypt a file: Cobblestone chunks (AES-GCM) under a passphrase, a key or to public-key recipients, or an age file
    Encrypt(encrypt::EncryptArgs),
    /// Decrypt a file made by `parcrypt encrypt`, a bare Cobblestone message, or an age file
    Decrypt(encrypt::DecryptArgs),
    /// Make an age identity (X25519, or post-quantum with --pq) in age-keygen's layout
    Keygen(age::KeygenArgs),
    /// List backends and devices, and why any is unavailable
    #[command(after_help = "\
Examples:
  parcrypt devices        what --backend can name on this machine, and why not the rest
  parcrypt encrypt --backend opencl notes.txt -o notes.txt.pc")]
    Devices,
    /// Encrypt and decrypt generated data on every backend and print the speed table
    Bench(bench::BenchArgs),
    /// Measure a GPU's best launch shapes and CPU/GPU crossover, and store them for the engine
    Tune(tune::TuneArgs),
    /// Print a shell's completion script for parcrypt to stdout
    Completions(docs::CompletionsArgs),
    /// Print parcrypt's man page (roff) to stdout, or write one per subcommand into a folder
    #[command(hide = true)]
    Manpage(docs::ManpageArgs),
}

/// An error already phrased for the user, printed as one line.
#[derive(Debug)]
pub struct Failure(pub String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(error: E) -> Self {
        Failure(error.to_string())
    }
}

/// A value that did not parse into its type, phrased by the type's own error. It is
/// reported as every other failure is (one line, exit status 1), not as a usage error.
#[derive(Debug)]
pub(crate) struct Refused(pub(crate) String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// A type whose values are named by a fixed set of words, so that a mistyped one can be
/// answered with the nearest ("did you mean 'threads'?").
pub(crate) trait Named: FromStr {
    /// Every name the type parses from.
    fn names() -> Vec<String>;
}

impl Named for Backend {
    fn names() -> Vec<String> {
        Backend::CPU
            .into_iter()
            .chain(Backend::GPU)
            .map(|backend| backend.name().to_string())
            .collect()
    }
}

impl Named for KernelFamily {
    fn names() -> Vec<String> {
        KernelFamily::ALL
            .into_iter()
            .map(|family| family.name().to_string())
            .collect()
    }
}

impl Named for parcrypt::CipherSpec {
    fn names() -> Vec<String> {
        parcrypt::CipherSpec::all()
            .into_iter()
            .map(|spec| spec.to_string())
            .collect()
    }
}

/// The name among `names` nearest to a mistyped `text`, if one is near enough to be what
/// was meant (clap's own measure and threshold for subcommands and options).
pub(crate) fn nearest<'a>(text: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let text = text.to_ascii_lowercase();
    names
        .into_iter()
        .map(|name| (strsim::jaro(&text, name), name))
        .filter(|(similarity, _)| *similarity > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| name)
}

/// `message`, followed by "did you mean" and the name nearest to `text` when one is near.
pub(crate) fn with_suggestion<'a>(
    message: impl fmt::Display,
    text: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> String {
    match nearest(text, names) {
        Some(name) => format!("{message}; did you mean '{name}'?"),
        None => message.to_string(),
    }
}

/// The clap value parser of a type named by a fixed set of words (a backend, a cipher): a
/// refusal is phrased by the type's own error, with the nearest name when one is near.
fn typed<T>() -> impl clap::builder::TypedValueParser<Value = T>
where
    T: Named + Clone + Send + Sync + 'static,
    T::Err: fmt::Display,
{
    |text: &str| {
        text.parse::<T>().map_err(|error| {
            let names = T::names();
            Refused(with_suggestion(
                error,
                text,
                names.iter().map(String::as_str),
            ))
        })
    }
}

/// [`typed`] that also tells clap every name, for the shell completions (`--backend <TAB>`).
/// The arguments that use it set `hide_possible_values`: their help names the values already.
#[derive(Clone)]
pub(crate) struct NamedParser<T>(std::marker::PhantomData<fn() -> T>);

fn named<T>() -> NamedParser<T> {
    NamedParser(std::marker::PhantomData)
}

impl<T> clap::builder::TypedValueParser for NamedParser<T>
where
    T: Named + Clone + Send + Sync + 'static,
    T::Err: fmt::Display,
{
    type Value = T;

    fn parse_ref(
        &self,
        command: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        typed::<T>().parse_ref(command, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            T::names()
                .into_iter()
                .map(clap::builder::PossibleValue::new),
        ))
    }
}

/// The first paragraph of clap's rendered error in one line, less its "error: ": a line that
/// ends with ':' is followed by what it introduces (the arguments that were not provided).
fn one_line(rendered: &str) -> String {
    let mut lines = rendered.lines();
    let first = lines.next().unwrap_or("invalid arguments");
    let mut line = first.strip_prefix("error: ").unwrap_or(first).to_string();
    if line.ends_with(':') {
        let listed: Vec<&str> = lines
            .map(str::trim)
            .take_while(|item| !item.is_empty())
            .collect();
        line = format!("{line} {}", listed.join(", "));
    }
    line
}

/// The one-line hint of a usage error: what clap found near a mistyped subcommand, option or
/// value, or its own tip (such as how to pass a value that starts with '-').
fn usage_hint(error: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    // clap lists the candidates from the least to the most similar: the nearest goes first.
    let names = |value: &ContextValue| match value {
        ContextValue::String(text) => vec![text.clone()],
        ContextValue::Strings(texts) => texts.iter().rev().cloned().collect(),
        _ => Vec::new(),
    };
    for kind in [
        ContextKind::SuggestedSubcommand,
        ContextKind::SuggestedArg,
        ContextKind::SuggestedValue,
    ] {
        let candidates = error.get(kind).map(names).unwrap_or_default();
        if !candidates.is_empty() {
            return Some(format!("did you mean '{}'?", candidates.join("' or '")));
        }
    }
    match error.get(ContextKind::Suggested) {
        Some(ContextValue::StyledStrs(tips)) => tips.first().map(|tip| tip.to_string()),
        _ => None,
    }
}

/// `--threads`: a count the engine accepts (at least 1, at most `max_threads`), refused as
/// one line like every other bad value, a number too large for any integer included.
fn parse_threads(text: &str) -> Result<usize, Refused> {
    let threads = match text.trim().parse::<usize>() {
        Ok(threads) => threads,
        Err(error) if *error.kind() == std::num::IntErrorKind::PosOverflow => {
            return Err(Refused(format!(
                "--threads {} is too many: at most {} on this machine",
                text.trim(),
                parcrypt::devices::max_threads()
            )))
        }
        Err(_) => {
            return Err(Refused(format!(
                "--threads '{text}' is not a number of threads"
            )))
        }
    };
    parcrypt::devices::check_threads(threads).map_err(|error| Refused(error.to_string()))
}

/// Says on stderr what the engine warns about running `spec` on it (table AES on a device
/// where it is not constant time), each warning once per process.
fn say_engine_warnings(engine: &Engine, spec: parcrypt::CipherSpec) {
    for warning in engine.take_warnings(spec) {
        say!("parcrypt: warning: {warning}");
    }
}

/// The chunk cipher of the file formats on an engine (Cobblestone's AES-GCM; every key size
/// runs the same device kernels), for [`say_engine_warnings`].
const FILE_CHUNKS: parcrypt::CipherSpec = parcrypt::CipherSpec {
    algorithm: parcrypt::hazmat::Algorithm::Aes128,
    mode: parcrypt::hazmat::Mode::Gcm,
};

/// An engine for `backend` with what the user's environment asks for
/// ([`parcrypt::environment`]): the tune files `parcrypt tune` stores (in
/// `$PARCRYPT_TUNE_DIR`, else the configuration directory), the kernel cache, and the
/// tuning variables listed in docs/ENVIRONMENT.md. What it warns about running `spec` is
/// said on stderr ([`say_engine_warnings`]).
fn engine(
    backend: Backend,
    threads: Option<usize>,
    kernels: Option<KernelFamily>,
    spec: parcrypt::CipherSpec,
) -> Result<Engine, Failure> {
    let mut builder = parcrypt::environment::apply(Engine::builder().backend(backend))?;
    if let Some(threads) = threads {
        builder = builder.threads(threads);
    }
    if let Some(family) = kernels {
        builder = builder.kernels(family);
    }
    let engine = builder.build()?;
    say_engine_warnings(&engine, spec);
    Ok(engine)
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            use clap::error::ErrorKind;
            if matches!(
                error.kind(),
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
            ) {
                let _ = error.print();
                return ExitCode::SUCCESS;
            }
            if let Some(refused) = std::error::Error::source(&error)
                .and_then(|source| source.downcast_ref::<Refused>())
            {
                say!("parcrypt: error: {refused}");
                return ExitCode::FAILURE;
            }
            if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                let _ = error.print();
                return ExitCode::from(2);
            }
            // clap's message is several lines (usage, tips); scripts and people want one.
            let first = one_line(&error.to_string());
            match usage_hint(&error) {
                Some(hint) => say!("parcrypt: error: {first}; {hint} (see --help)"),
                None => say!("parcrypt: error: {first} (see --help)"),
            }
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Raw(command) => raw::run(command),
        Command::Encrypt(args) => encrypt::run_encrypt(args),
        Command::Decrypt(args) => decrypt::run(args),
        Command::Keygen(args) => age::keygen(args),
        Command::Devices => devices::run(),
        Command::Bench(args) => bench::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Completions(args) => docs::completions(args),
        Command::Manpage(args) => docs::manpage(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of stdout went away and SIGPIPE could not end the process (its parent
        // blocked the signal): end as the signal would have, quietly.
        Err(Failure(message)) if is_closed_pipe(&message) => {
            ExitCode::from(parcrypt::files::pipes::CLOSED_PIPE_STATUS)
        }
        Err(Failure(message)) => {
            say!("parcrypt: error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// See [`say!`].
/// The function behind `show!`: one line to stdout, a failure as one line for the user.
pub fn show(line: fmt::Arguments<'_>) -> Result<(), Failure> {
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{line}").map_err(|error| {
        Failure(format!(
            "cannot write output: {}",
            parcrypt::files::plain(&error)
        ))
    })
}

pub fn say(line: fmt::Arguments<'_>) {
    let mut stderr = io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
}

/// Whether a failure's message is a write to a closed pipe: the operating system's words
/// for `EPIPE` at its end (after "cannot write output: " or alone), with or without
/// " (os error N)". Failures are text by the time they reach `main`, so this reads the
/// text; the words are taken from the same `strerror` that wrote them.
fn is_closed_pipe(message: &str) -> bool {
    let message = match message.rfind(" (os error ") {
        Some(start) if message.ends_with(')') => &message[..start],
        _ => message,
    };
    let text = parcrypt::files::pipes::closed_pipe_text();
    message == text || message.ends_with(&format!(": {text}"))
}

#[cfg(test)]
mod tests {
    use super::{is_closed_pipe, nearest, one_line, with_suggestion};

    #[test]
    fn a_usage_error_is_one_line_with_what_it_lists() {
        let rendered = "error: the following required arguments were not provided:\n  \
                        --cipher <NAME>\n  --key <HEX>\n\nUsage: parcrypt raw encrypt\n";
        assert_eq!(
            one_line(rendered),
            "the following required arguments were not provided: --cipher <NAME>, --key <HEX>"
        );
        let rendered = "error: unexpected argument '--x' found\n\nUsage: parcrypt\n";
        assert_eq!(one_line(rendered), "unexpected argument '--x' found");
    }

    #[test]
    fn only_a_near_name_is_suggested() {
        let names = ["seq", "threads", "pool", "auto"];
        assert_eq!(nearest("thread", names), Some("threads"));
        assert_eq!(nearest("THREADS", names), Some("threads"));
        assert_eq!(nearest("gpu9", names), None);
        assert_eq!(
            with_suggestion("unknown 'tread'", "tread", names),
            "unknown 'tread'; did you mean 'threads'?"
        );
        assert_eq!(with_suggestion("unknown 'x'", "x", names), "unknown 'x'");
    }

    #[test]
    fn a_closed_pipe_is_recognised_in_every_wording_and_nothing_else_is() {
        let error = std::io::Error::from_raw_os_error(32);
        assert!(is_closed_pipe(&error.to_string()));
        assert!(is_closed_pipe(&format!("cannot write output: {error}")));
        let plain = parcrypt::files::plain(&error);
        assert!(is_closed_pipe(&format!("cannot write output: {plain}")));
        assert!(is_closed_pipe(&plain));
        assert!(!is_closed_pipe(
            "cannot write output: No space left on device"
        ));
        assert!(!is_closed_pipe(
            "cannot open input 'Broken pipe.txt': No such file"
        ));
        assert!(!is_closed_pipe("wrong passphrase or key"));
    }
}
