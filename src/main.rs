//! The `parcrypt` command line. All logic lives in the library crates under `crates/`;
//! this binary parses arguments, opens files safely and reports errors in one line.

#![forbid(unsafe_code)]

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
