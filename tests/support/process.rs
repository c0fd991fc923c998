//! Running the `parcrypt` binary from tests: shared by the CLI test files.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Runs `command` with `stdin` fed from a thread (the program may write before it reads
/// everything) and its stdout and stderr captured.
pub fn run_with_stdin(command: &mut Command, stdin: &[u8]) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run parcrypt");
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // The program may exit before reading: a broken pipe here is not the test's concern.
        let _ = pipe.write_all(&input);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

/// Writes `contents` to the file `name` in `folder`; returns its path.
pub fn file_in(folder: &Path, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let file = folder.join(name);
    std::fs::write(&file, contents).unwrap();
    file
}

/// The names of the files in `folder`, sorted (to catch temporary files left behind).
pub fn names(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The lines of `output`'s stderr that `keep` keeps.
pub fn stderr_lines(output: &Output, keep: impl Fn(&str) -> bool) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|line| keep(line))
        .map(str::to_string)
        .collect()
}

/// Asserts a success, showing stderr when it was not one.
pub fn assert_success(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Asserts a refusal: non-zero exit, no panic, and one line on stderr, apart from the lines
/// `ignored` accepts, that starts with `parcrypt: error: ` and mentions `reason` (in any case).
pub fn assert_refused_with(output: &Output, reason: &str, ignored: impl Fn(&str) -> bool) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "succeeded, stderr: {stderr}");
    assert_ne!(output.status.code(), Some(101), "panicked: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|line| !ignored(line)).collect();
    assert_eq!(lines.len(), 1, "expected one line, got: {stderr}");
    assert!(lines[0].starts_with("parcrypt: error: "), "{stderr}");
    assert!(
        lines[0].to_lowercase().contains(&reason.to_lowercase()),
        "'{reason}' not in: {stderr}"
    );
    assert!(
        !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
        "{stderr}"
    );
}

/// Whether `output` is a run that failed for want of an OpenCL device, outside CI (where
/// the device is required): then it says `SKIPPED` with what the program said, and the
/// test returns.
pub fn skipped_without_opencl(output: &Output) -> bool {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let skip = !output.status.success()
        && std::env::var_os("CI").is_none()
        && stderr.contains("opencl backend unavailable");
    if skip {
        println!("SKIPPED: no OpenCL device [{stderr}]");
    }
    skip
}
