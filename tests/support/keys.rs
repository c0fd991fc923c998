//! What the command-line tests of public-key recipients share (tests/age_cli.rs,
//! tests/recipients_cli.rs): running the binary, `keygen`, and the refusal check. Include it
//! beside `support/process.rs` (as `mod process;`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::process::assert_success;

/// The binary, with no passphrase from the environment and nothing on stdin.
pub fn parcrypt() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_parcrypt"));
    command.env_remove("PARCRYPT_PASSPHRASE");
    command.stdin(Stdio::null());
    command
}

/// Runs the binary in `folder` with `args`.
pub fn run(folder: &Path, args: &[&str]) -> Output {
    parcrypt()
        .current_dir(folder)
        .args(args)
        .output()
        .expect("run parcrypt")
}

/// Asserts a refusal: exit status 1, one line on stderr containing `reason`, and no file
/// named `target` in `folder`.
pub fn assert_refused(output: &Output, reason: &str, folder: &Path, target: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("parcrypt: error: "), "{stderr}");
    assert!(stderr.contains(reason), "{stderr} lacks {reason}");
    assert!(!folder.join(target).exists(), "{target} was left behind");
}

/// `parcrypt keygen -o name` (with `--pq` for the hybrid) in `folder`; returns the recipient
/// it prints.
pub fn keygen(folder: &Path, name: &str, pq: bool) -> String {
    let mut args = vec!["keygen", "-o", name];
    if pq {
        args.push("--pq");
    }
    let output = run(folder, &args);
    assert_success(&output, "keygen");
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// `len` bytes of a fixed pattern.
pub fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 253) as u8).collect()
}

/// A temporary folder (kept while the guard lives) and its path.
pub fn folder() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    (dir, path)
}
