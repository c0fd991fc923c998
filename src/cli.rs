//! Argument parsing into typed values, and dispatch. Each subcommand's file parses its
//! arguments, calls the library and reports; none holds logic of its own.

mod bench;
mod decrypt;
mod devices;
mod encrypt;
mod files;
mod progress;
mod raw;
mod tune;

use std::fmt;
use std::process::ExitCode;
use std::str::FromStr;

use clap::{Parser, Subcommand};
use parcrypt_engine::{Backend, Engine};

#[derive(Parser)]
#[command(
    name = "parcrypt",
    version,
    about = "Block-cipher encryption at the speed of the hardware",
    long_about = "parcrypt runs AES-128/192/256, Blowfish and RC6 in ECB, CBC, CTR and GCM on one \
                  thread (seq), on every core (threads, pool) and on GPUs (opencl, cuda), with output \
                  that is bit-for-bit the same on every backend and matches OpenSSL."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// One cipher and mode with an explicit key and IV, byte-compatible with `openssl enc -nosalt`
    #[command(subcommand)]
    Raw(raw::RawCommand),
    /// Encrypt a file: Cobblestone chunks (AES-GCM) under a passphrase or a key
    Encrypt(encrypt::EncryptArgs),
    /// Decrypt a file made by `parcrypt encrypt`, or a bare Cobblestone message
    Decrypt(encrypt::DecryptArgs),
    /// List backends and devices, and why any is unavailable
    Devices,
    /// Encrypt and decrypt generated data on every backend and print the speed table
    Bench(bench::BenchArgs),
    /// Measure a GPU's best launch shapes and CPU/GPU crossover, and store them for the engine
    Tune(tune::TuneArgs),
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

/// The clap value parser of a type that parses from text (a backend, a cipher suite).
fn typed<T>() -> impl clap::builder::TypedValueParser<Value = T>
where
    T: FromStr + Clone + Send + Sync + 'static,
    T::Err: fmt::Display,
{
    |text: &str| {
        text.parse::<T>()
            .map_err(|error| Refused(error.to_string()))
    }
}

/// An engine for `backend` that follows the user's tune files (in `$PARCRYPT_TUNE_DIR`, else
/// the configuration directory), as `parcrypt tune` stores them.
fn engine(backend: Backend, threads: Option<usize>) -> Result<Engine, Failure> {
    let mut builder = Engine::builder().backend(backend);
    if let Some(threads) = threads {
        builder = builder.threads(threads);
    }
    if let Some(directory) = parcrypt_gpu::tuning::tune_directory() {
        builder = builder.tune_directory(directory);
    }
    Ok(builder.build()?)
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
                eprintln!("parcrypt: error: {refused}");
                return ExitCode::FAILURE;
            }
            if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                let _ = error.print();
                return ExitCode::from(2);
            }
            // clap's message is several lines (usage, tips); scripts and people want one.
            let rendered = error.to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("parcrypt: error: {first} (see --help)");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Raw(command) => raw::run(command),
        Command::Encrypt(args) => encrypt::run_encrypt(args),
        Command::Decrypt(args) => decrypt::run(args),
        Command::Devices => devices::run(),
        Command::Bench(args) => bench::run(args),
        Command::Tune(args) => tune::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(message)) => {
            eprintln!("parcrypt: error: {message}");
            ExitCode::FAILURE
        }
    }
}
