//! Argument parsing and dispatch.

mod bench;
mod decrypt;
mod devices;
mod encrypt;
mod files;
mod progress;
mod raw;
mod tune;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
