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
    let _ = parcrypt::files::pipes::die_on_closed_pipe();
    // Also before any thread (the engine's pool, a GPU driver's): PARCRYPT_PASSPHRASE moves
    // out of the environment into memory wiped once read, so that nothing this process
    // starts inherits it. Removing a variable races with getenv in other threads (C code
    // that Rust's environment lock does not cover); here there are none yet.
    parcrypt::environment::take_passphrase_variable();
    cli::main()
}
