//! Destinations that are not plain new files: a FIFO and a device are written in place and
//! stay what they are, a symbolic link stays a link and its target is replaced, a dangling
//! link, an existing file or the input itself (stdout included) is refused before any
//! prompt or key derivation and before anything is written. Linux only.
#![cfg(target_os = "linux")]

use std::fs::{self, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;

#[path = "support/process.rs"]
mod process;

use process::{assert_refused_with, file_in, names};

const KEY: &str = "000102030405060708090a0b0c0d0e0f";
const MESSAGE: &[u8] = b"the message, whole, to the reader of the FIFO\n";

/// The binary, in a session of its own when `setsid` is there (so no terminal can be asked),
/// with no passphrase in the environment and stdin empty.
fn parcrypt() -> Command {
    let binary = env!("CARGO_BIN_EXE_parcrypt");
    let mut command = if Path::new("/usr/bin/setsid").exists() {
        let mut command = Command::new("/usr/bin/setsid");
        command.arg(binary);
        command
    } else {
        Command::new(binary)
    };
    command.env_remove("PARCRYPT_PASSPHRASE");
    command.stdin(Stdio::null());
    command
}

fn run(args: &[&str]) -> Output {
    parcrypt().args(args).output().expect("run parcrypt")
}

fn path(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `args`, with `--force` after them when `force` says so.
fn forced(mut args: Vec<&str>, force: bool) -> Vec<&str> {
    if force {
        args.push("--force");
    }
    args
}

/// `decrypt -q --key KEY SEALED -o TO`, forced when `force` says so.
fn decrypt_to<'a>(sealed: &'a str, to: &'a str, force: bool) -> Vec<&'a str> {
    forced(vec!["decrypt", "-q", "--key", KEY, sealed, "-o", to], force)
}

/// Makes `name` in `folder` a symbolic link to `target`; returns its path.
fn link_in(folder: &Path, name: &str, target: &str) -> PathBuf {
    let link = folder.join(name);
    std::os::unix::fs::symlink(target, &link).unwrap();
    link
}

fn sealed_file(folder: &Path) -> PathBuf {
    let plain = file_in(folder, "plain", MESSAGE);
    let sealed = folder.join("sealed");
    let output = run(&[
        "encrypt",
        "-q",
        "--key",
        KEY,
        path(&plain),
        "-o",
        path(&sealed),
    ]);
    assert!(output.status.success(), "{output:?}");
    sealed
}

fn mkfifo(at: &Path) {
    let status = Command::new("mkfifo").arg(at).status().unwrap();
    assert!(status.success());
}

fn is_fifo(at: &Path) -> bool {
    fs::symlink_metadata(at).is_ok_and(|m| m.file_type().is_fifo())
}

#[test]
fn a_fifo_is_written_in_place_with_or_without_force() {
    let folder = tempfile::tempdir().unwrap();
    let sealed = sealed_file(folder.path());
    let fifo = folder.path().join("fifo");
    mkfifo(&fifo);
    for force in [false, true] {
        let reader = {
            let fifo = fifo.clone();
            thread::spawn(move || {
                let mut read = Vec::new();
                fs::File::open(&fifo)
                    .unwrap()
                    .read_to_end(&mut read)
                    .unwrap();
                read
            })
        };
        let output = run(&decrypt_to(path(&sealed), path(&fifo), force));
        assert!(output.status.success(), "{output:?}");
        assert_eq!(reader.join().unwrap(), MESSAGE);
        assert!(is_fifo(&fifo), "the FIFO was replaced");
    }
    assert_eq!(names(folder.path()), ["fifo", "plain", "sealed"]);
}

#[test]
fn dev_null_takes_output_without_force_and_stays_a_device() {
    let null = Path::new("/dev/null");
    let is_device = || fs::symlink_metadata(null).is_ok_and(|m| m.file_type().is_char_device());
    if !is_device() {
        println!("SKIPPED: /dev/null is not a character device here");
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let sealed = sealed_file(folder.path());
    for force in [false, true] {
        let output = run(&decrypt_to(path(&sealed), "/dev/null", force));
        assert!(output.status.success(), "{output:?}");
        assert!(is_device(), "/dev/null was replaced");
    }
}

#[test]
fn dev_stdout_is_standard_output() {
    let folder = tempfile::tempdir().unwrap();
    let sealed = sealed_file(folder.path());
    let output = parcrypt()
        .args(decrypt_to(path(&sealed), "/dev/stdout", false))
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(output.stdout, MESSAGE);
    // Into a file opened for appending by the caller: appended, as `>>` would.
    let appended = file_in(folder.path(), "appended", b"before\n");
    let stdout = OpenOptions::new().append(true).open(&appended).unwrap();
    let output = parcrypt()
        .args(decrypt_to(path(&sealed), "/dev/stdout", false))
        .stdout(stdout)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        fs::read(&appended).unwrap(),
        [b"before\n", MESSAGE].concat()
    );
}

#[test]
fn a_link_stays_a_link_and_its_target_is_replaced() {
    let folder = tempfile::tempdir().unwrap();
    let sealed = sealed_file(folder.path());
    let target = file_in(folder.path(), "target", b"old");
    let link = link_in(folder.path(), "link", "target");
    let output = run(&decrypt_to(path(&sealed), path(&link), false));
    assert_refused_with(&output, "already exists", |_| false);
    assert_eq!(fs::read(&target).unwrap(), b"old");
    let output = run(&decrypt_to(path(&sealed), path(&link), true));
    assert!(output.status.success(), "{output:?}");
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(&target).unwrap(), MESSAGE);
    assert_eq!(names(folder.path()), ["link", "plain", "sealed", "target"]);
}

#[test]
fn a_dangling_link_into_a_missing_folder_is_refused_before_a_prompt() {
    let folder = tempfile::tempdir().unwrap();
    let plain = file_in(folder.path(), "plain", MESSAGE);
    let link = link_in(folder.path(), "link", "missing/file");
    // No secret given: a run that got as far as asking would fail for want of a terminal.
    for force in [false, true] {
        let output = run(&forced(
            vec!["encrypt", path(&plain), "-o", path(&link)],
            force,
        ));
        assert_refused_with(&output, "whose folder does not exist", |_| false);
    }
    assert_eq!(names(folder.path()), ["link", "plain"]);
}

#[test]
fn an_existing_destination_is_refused_before_the_key_derivation_and_the_prompt() {
    let folder = tempfile::tempdir().unwrap();
    let plain = file_in(folder.path(), "plain", MESSAGE);
    let passphrase = file_in(folder.path(), "passphrase", "correct horse\n");
    let existing = file_in(folder.path(), "existing", b"keep me");
    let output = run(&[
        "encrypt",
        "--passphrase-file",
        path(&passphrase),
        "--kdf-memory",
        "1024",
        path(&plain),
        "-o",
        path(&existing),
    ]);
    assert_refused_with(&output, "already exists", |_| false);
    // Without any secret: the destination is what is refused, not the missing passphrase.
    let output = run(&["encrypt", path(&plain), "-o", path(&existing)]);
    assert_refused_with(&output, "already exists", |_| false);
    // Decryption of a passphrase file too, before the header's key derivation.
    let sealed = folder.path().join("sealed");
    let made = run(&[
        "encrypt",
        "-q",
        "--passphrase-file",
        path(&passphrase),
        "--kdf-memory",
        "8",
        "--kdf-passes",
        "1",
        path(&plain),
        "-o",
        path(&sealed),
    ]);
    assert!(made.status.success(), "{made:?}");
    let output = run(&["decrypt", path(&sealed), "-o", path(&existing)]);
    assert_refused_with(&output, "already exists", |_| false);
    // A missing folder and a folder as the destination, the same way.
    let output = run(&[
        "encrypt",
        path(&plain),
        "-o",
        path(&folder.path().join("no/file")),
    ]);
    assert_refused_with(&output, "does not exist", |_| false);
    let output = run(&["decrypt", path(&sealed), "-o", path(folder.path())]);
    assert_refused_with(&output, "is a folder", |_| false);
    assert_eq!(fs::read(&existing).unwrap(), b"keep me");
    assert_eq!(
        names(folder.path()),
        ["existing", "passphrase", "plain", "sealed"]
    );
}

#[test]
fn a_folder_without_write_permission_is_refused_before_the_prompt() {
    use std::os::unix::fs::PermissionsExt;
    let folder = tempfile::tempdir().unwrap();
    let plain = file_in(folder.path(), "plain", MESSAGE);
    let locked = folder.path().join("locked");
    fs::create_dir(&locked).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o500)).unwrap();
    if fs::write(locked.join("probe"), b"").is_ok() {
        println!("SKIPPED: folder permissions do not bind this user (root)");
        return;
    }
    let output = run(&["encrypt", path(&plain), "-o", path(&locked.join("out"))]);
    assert_refused_with(&output, "no permission", |_| false);
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o700)).unwrap();
}

#[test]
fn standard_output_onto_the_input_is_refused_and_the_input_unchanged() {
    let folder = tempfile::tempdir().unwrap();
    let input = file_in(folder.path(), "input", MESSAGE);
    let sealed = sealed_file(folder.path());
    let sealed_bytes = fs::read(&sealed).unwrap();
    // `encrypt f >> f`, `encrypt f > f` (the shell has opened it, here without truncating
    // it), and `encrypt < f >> f`.
    let appending = || OpenOptions::new().append(true).open(&input).unwrap();
    let writing = || OpenOptions::new().write(true).open(&input).unwrap();
    for (stdout, from_stdin) in [
        (appending(), false),
        (writing(), false),
        (appending(), true),
    ] {
        let mut command = parcrypt();
        command.args(["encrypt", "--key", KEY]).stdout(stdout);
        if from_stdin {
            command.stdin(fs::File::open(&input).unwrap());
        } else {
            command.arg(path(&input));
        }
        let output = command.output().unwrap();
        assert_refused_with(&output, "standard output is the input", |_| false);
        assert_eq!(fs::read(&input).unwrap(), MESSAGE);
    }
    // `decrypt sealed >> sealed`, and `-o /dev/stdout` the same way.
    for named in [false, true] {
        let stdout = OpenOptions::new().append(true).open(&sealed).unwrap();
        let mut command = parcrypt();
        command
            .args(["decrypt", "--key", KEY, path(&sealed)])
            .stdout(stdout);
        if named {
            command.args(["-o", "/dev/stdout"]);
        }
        let output = command.output().unwrap();
        assert!(!output.status.success(), "{output:?}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("is the input"),
            "{output:?}"
        );
        assert_eq!(fs::read(&sealed).unwrap(), sealed_bytes);
    }
}

#[test]
fn the_input_as_the_output_is_refused_through_a_link_too() {
    let folder = tempfile::tempdir().unwrap();
    let input = file_in(folder.path(), "input", MESSAGE);
    let link = link_in(folder.path(), "link", "input");
    for target in [&input, &link] {
        let output = run(&[
            "encrypt",
            "--key",
            KEY,
            "--force",
            path(&input),
            "-o",
            path(target),
        ]);
        assert_refused_with(&output, "is the input file", |_| false);
    }
    assert_eq!(fs::read(&input).unwrap(), MESSAGE);
    assert_eq!(names(folder.path()), ["input", "link"]);
}

/// `encrypt` writes no ciphertext onto a terminal, however the terminal is named: plain
/// stdout, `-o -`, `-o /dev/stdout` and `-o /dev/tty` are all refused before anything is
/// written, while `-o /dev/stdout` into a pipe works.
#[test]
fn encrypt_refuses_a_terminal_by_any_name() {
    // `script` gives the command a pseudo-terminal for stdin, stdout and /dev/tty.
    if Command::new("script").arg("--version").output().is_err() {
        println!("SKIPPED: no `script` to fake a terminal with");
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let input = file_in(folder.path(), "input", b"hello terminal");
    let binary = env!("CARGO_BIN_EXE_parcrypt");
    for output in ["", "-o -", "-o /dev/stdout", "-o /dev/tty"] {
        let line = format!("{binary} encrypt --key {KEY} {} {output}", input.display());
        let refused = Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&refused.stdout);
        assert!(!refused.status.success(), "{output}: {text}");
        assert!(
            text.contains("refusing to write encrypted bytes to the terminal"),
            "{output}: {text}"
        );
    }
    let piped = run(&["encrypt", "--key", KEY, path(&input), "-o", "/dev/stdout"]);
    assert!(piped.status.success());
    assert!(piped.stdout.starts_with(b"parcrypt"));
}
