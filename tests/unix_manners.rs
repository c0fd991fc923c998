//! How `parcrypt` behaves towards the programs around it: when the reader of its output goes
//! away (`parcrypt ... | head -c 10`) it ends as `cat` does, by SIGPIPE with no message (or,
//! when its parent blocked SIGPIPE, with status 141 and no message); when stderr cannot be
//! written (`2>/dev/full`) a warning or an error is lost but never turns into a panic, and the
//! exit status is the one the run earned.

use std::fs::File;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

const KEY: &str = "000102030405060708090a0b0c0d0e0f";
const IV: &str = "0f0e0d0c0b0a09080706050403020100";
/// Well past a pipe's buffer (64 KiB on Linux), so the writer must still be writing when
/// the reader goes.
const INPUT_BYTES: usize = 4 << 20;

fn parcrypt() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_parcrypt"));
    command.env_remove("PARCRYPT_PASSPHRASE");
    command
}

fn data(length: usize) -> Vec<u8> {
    (0..length).map(|i| ((i * 131) ^ (i >> 9)) as u8).collect()
}

/// A folder with `input` (plaintext) and `input.pc` (`input` encrypted under [`KEY`]).
fn inputs() -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("input"), data(INPUT_BYTES)).unwrap();
    let status = parcrypt()
        .args(["encrypt", "--key", KEY, "-q", "-o"])
        .arg(folder.path().join("input.pc"))
        .arg(folder.path().join("input"))
        .status()
        .unwrap();
    assert!(status.success(), "{status}");
    folder
}

fn arguments(folder: &Path, command: &str) -> Vec<String> {
    let file = |name: &str| folder.join(name).to_string_lossy().into_owned();
    let args: Vec<String> = match command {
        "raw encrypt" => vec![
            "raw".into(),
            "encrypt".into(),
            "--cipher".into(),
            "aes-128-ctr".into(),
            "--key".into(),
            KEY.into(),
            "--iv".into(),
            IV.into(),
            file("input"),
        ],
        "encrypt" => vec![
            "encrypt".into(),
            "--key".into(),
            KEY.into(),
            "-q".into(),
            file("input"),
        ],
        "decrypt" => vec![
            "decrypt".into(),
            "--key".into(),
            KEY.into(),
            "-q".into(),
            file("input.pc"),
        ],
        _ => unreachable!("{command}"),
    };
    args
}

/// Runs `command`, reads 10 bytes of its stdout and closes the pipe, as `head -c 10` does;
/// returns how it ended and what it said on stderr.
fn close_after_ten_bytes(mut command: Command) -> (ExitStatus, String) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 10];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (child.wait().unwrap(), stderr)
}

/// For each of the three commands, how it ends and what it says on stderr when the reader
/// of its output closes the pipe after ten bytes ([`close_after_ten_bytes`]); with SIGPIPE
/// blocked in the command when `block_sigpipe` says so.
fn closed_pipe_ends(block_sigpipe: bool) -> Vec<(&'static str, ExitStatus, String)> {
    let folder = inputs();
    let mut ends = Vec::new();
    for command in ["raw encrypt", "encrypt", "decrypt"] {
        let mut parcrypt = parcrypt();
        parcrypt.args(arguments(folder.path(), command));
        if block_sigpipe {
            // SAFETY: between fork and exec only async-signal-safe calls are allowed;
            // sigemptyset, sigaddset and pthread_sigmask are, and they touch only the set on
            // this closure's stack.
            unsafe {
                parcrypt.pre_exec(|| {
                    let mut set: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut set);
                    libc::sigaddset(&mut set, libc::SIGPIPE);
                    if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let (status, stderr) = close_after_ten_bytes(parcrypt);
        ends.push((command, status, stderr));
    }
    ends
}

#[test]
fn a_closed_pipe_ends_the_process_quietly_as_sigpipe_ends_cat() {
    for (command, status, stderr) in closed_pipe_ends(false) {
        assert!(
            status.signal() == Some(libc::SIGPIPE) || status.code() == Some(141),
            "{command}: {status}, stderr: {stderr}"
        );
        assert_eq!(stderr, "", "{command}: {status}");
    }
}

#[test]
fn a_closed_pipe_with_sigpipe_blocked_ends_with_status_141_and_no_message() {
    // A parent may block SIGPIPE, and a blocked signal stays blocked across exec: the
    // write then fails with EPIPE, and that error must end the run as the signal would.
    for (command, status, stderr) in closed_pipe_ends(true) {
        assert_eq!(status.code(), Some(141), "{command}: {status}, {stderr}");
        assert_eq!(stderr, "", "{command}: {status}");
    }
}

/// Runs `command` with stderr writing into /dev/full (every write fails with ENOSPC).
fn with_full_stderr(command: &mut Command) -> ExitStatus {
    let full = File::options().write(true).open("/dev/full").unwrap();
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(full))
        .status()
        .unwrap()
}

#[test]
fn an_error_to_a_full_stderr_keeps_status_1_without_a_panic() {
    let folder = tempfile::tempdir().unwrap();
    let status = with_full_stderr(
        parcrypt()
            .args(["encrypt", "--key", KEY, "-o"])
            .arg(folder.path().join("out.pc"))
            .arg(folder.path().join("nonexistent")),
    );
    assert_eq!(status.code(), Some(1), "{status}");
    assert!(!folder.path().join("out.pc").exists());
    let status = with_full_stderr(
        parcrypt()
            .args(["raw", "decrypt", "--cipher", "aes-128-cbc", "--key", "00"])
            .arg(folder.path().join("nonexistent")),
    );
    assert_eq!(status.code(), Some(1), "{status}");
}

#[test]
fn a_usage_error_to_a_full_stderr_keeps_status_2_without_a_panic() {
    let status = with_full_stderr(parcrypt().args(["encrypt", "--no-such-option"]));
    assert_eq!(status.code(), Some(2), "{status}");
}

#[test]
fn a_warning_or_the_stats_to_a_full_stderr_leave_a_successful_run_successful() {
    let folder = tempfile::tempdir().unwrap();
    let input = data(100_000);
    std::fs::write(folder.path().join("input"), &input).unwrap();

    // The ECB warning is lost; the run succeeds and writes its output.
    let status = with_full_stderr(
        parcrypt()
            .args(["raw", "encrypt", "--cipher", "aes-128-ecb", "--key", KEY])
            .arg(folder.path().join("input"))
            .arg("-o")
            .arg(folder.path().join("ecb")),
    );
    assert_eq!(status.code(), Some(0), "{status}");
    let ecb = std::fs::read(folder.path().join("ecb")).unwrap();
    assert_eq!(ecb.len(), input.len() / 16 * 16 + 16);

    // The --stats line is lost; the run succeeds and its output decrypts.
    let status = with_full_stderr(
        parcrypt()
            .args(["encrypt", "--key", KEY, "--stats", "-o"])
            .arg(folder.path().join("input.pc"))
            .arg(folder.path().join("input")),
    );
    assert_eq!(status.code(), Some(0), "{status}");
    let output = parcrypt()
        .args(["decrypt", "--key", KEY, "-q"])
        .arg(folder.path().join("input.pc"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{:?}", output);
    assert!(output.stdout == input, "the round trip changed the data");
}

/// A report to a full stdout (`> /dev/full`) is one line on stderr and status 1, never a
/// panic (`println!` would panic; the reports go through `show!`, and clippy denies
/// `println!` in the binary).
#[test]
fn a_report_to_a_full_stdout_is_a_one_line_failure() {
    for command in [&["devices"][..], &["bench", "--quick", "--sizes", "4K"]] {
        let full = File::options().write(true).open("/dev/full").unwrap();
        let output = parcrypt()
            .args(command)
            .stdout(full)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{command:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{command:?}: {stderr}");
        assert!(
            stderr.starts_with("parcrypt: error: cannot write output: "),
            "{command:?}: {stderr}"
        );
    }
}
