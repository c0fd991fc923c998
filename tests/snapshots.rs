//! The command line's help and its one-line errors, pinned as reviewed text: each case in
//! tests/cmd/*.toml runs the binary and compares its stdout, stderr and exit status with the
//! files beside it. A changed message fails here until its snapshot is updated on purpose:
//!
//!     TRYCMD=overwrite cargo test --test snapshots
//!
//! then review the diff of tests/cmd/ like any other change.

#[test]
fn help_and_errors_match_their_snapshots() {
    trycmd::TestCases::new()
        // Output as a script sees it: no colours, whatever the caller's terminal asks for.
        .env("NO_COLOR", "1")
        .env("CLICOLOR_FORCE", "0")
        .register_bin(
            "parcrypt",
            std::path::Path::new(env!("CARGO_BIN_EXE_parcrypt")),
        )
        .case("tests/cmd/*.toml");
}
