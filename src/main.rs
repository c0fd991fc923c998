//! The `parcrypt` command line. All logic lives in the library crates under `crates/`;
//! this binary parses arguments, opens files safely and reports errors in one line.

#![forbid(unsafe_code)]
// Reports go through `show!` (src/cli.rs): `println!` panics when stdout cannot be written.
#![deny(clippy::print_stdout)]

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    // First, before any thread: a closed output pipe ends the process quietly, as it ends
    // `cat` (status 141 in a shell). If that fails, cli::main still ends with 141 when the
    // closed pipe comes back as an error.
    let _ = parcrypt_sys::pipes::die_on_closed_pipe();
    cli::main()
}
