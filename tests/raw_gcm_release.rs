//! `parcrypt raw decrypt --cipher *-gcm` releases no byte before the tag matched: refusals
//! (a forged tag, a wrong key, wrong AAD) from a file and from a pipe leave no output, write
//! nothing to stdout and nothing to $TMPDIR; round trips agree with RustCrypto's AES-GCM at
//! block and chunk edges; runs interrupted by SIGINT, SIGTERM and SIGKILL leave nothing in the
//! destination folder or in a private $TMPDIR, and no file the process holds (read through
//! /proc/PID/fd while it runs) contains plaintext before the tag matched. Also `raw`'s
//! manners: a terminal is refused without `-o -`, and `-q` is accepted.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[path = "support/process.rs"]
mod process;

use process::{assert_success, names};

const KEY: &str = "000102030405060708090a0b0c0d0e0f";
const IV: &str = "a0a1a2a3a4a5a6a7a8a9aaab";
/// Recognisable plaintext: found in a file means plaintext was written there.
const MARKER: &[u8] = b"<<PARCRYPT-PLAINTEXT-MARKER-0123456789>>";

/// A folder of its own under /dev/shm (or the system's temporary folder), removed on drop.
struct Folder(PathBuf);

impl Folder {
    fn new(what: &str) -> Folder {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let path = base.join(format!(
            "parcrypt-rawgcm-{what}-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).unwrap();
        Folder(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn command(args: &[&str], tmpdir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_parcrypt"));
    command.args(args).env("TMPDIR", tmpdir);
    command
}

fn parcrypt(args: &[&str], stdin: &[u8], tmpdir: &Path) -> Output {
    process::run_with_stdin(&mut command(args, tmpdir), stdin)
}

fn marked_plaintext(length: usize) -> Vec<u8> {
    MARKER.iter().copied().cycle().take(length).collect()
}

fn contains_marker(bytes: &[u8]) -> bool {
    bytes.windows(MARKER.len()).any(|window| window == MARKER)
}

/// AES-128-GCM by RustCrypto: ciphertext then tag, as `parcrypt raw encrypt` writes it.
fn seal(key: &[u8], iv: &[u8], aad: &[u8], plaintext: &[u8]) -> Vec<u8> {
    use aes_gcm::aead::{AeadInOut, KeyInit};
    let mut sealed = plaintext.to_vec();
    let tag = aes_gcm::Aes128Gcm::new_from_slice(key)
        .unwrap()
        .encrypt_inout_detached(iv.try_into().unwrap(), aad, sealed.as_mut_slice().into())
        .unwrap();
    sealed.extend_from_slice(&tag);
    sealed
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// `raw DIRECTION --cipher aes-128-gcm --key KEY --iv IV`.
fn raw_gcm<'a>(direction: &'a str, key: &'a str) -> Vec<&'a str> {
    vec![
        "raw",
        direction,
        "--cipher",
        "aes-128-gcm",
        "--key",
        key,
        "--iv",
        IV,
    ]
}

/// `raw decrypt` with the test key, then `extra`.
fn decrypt_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    [raw_gcm("decrypt", KEY).as_slice(), extra].concat()
}

#[test]
fn round_trips_equal_rustcrypto_from_files_and_pipes() {
    let folder = Folder::new("roundtrip");
    let tmpdir = Folder::new("roundtrip-tmp");
    let (key, iv) = (hex(KEY), hex(IV));
    // 70 MiB goes past the 64 MiB held in memory: a piped one is spooled to a file.
    for length in [0usize, 1, 15, 16, 17, 4 << 20, (12 << 20) + 5, 70 << 20] {
        let plaintext: Vec<u8> = (0..length).map(|i| (i * 31 + (i >> 11)) as u8).collect();
        let expected = seal(&key, &iv, b"", &plaintext);
        let encrypted = parcrypt(&raw_gcm("encrypt", KEY), &plaintext, tmpdir.path());
        assert_success(&encrypted, "raw encrypt");
        assert!(
            encrypted.stdout == expected,
            "raw encrypt of {length} bytes"
        );

        let sealed = folder.path().join("sealed");
        std::fs::write(&sealed, &expected).unwrap();
        let out = folder.path().join("plain");
        let args = decrypt_args(&[sealed.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert_success(&parcrypt(&args, b"", tmpdir.path()), "decrypt a file");
        assert!(
            std::fs::read(&out).unwrap() == plaintext,
            "file, {length} bytes"
        );
        std::fs::remove_file(&out).unwrap();

        let piped = parcrypt(&decrypt_args(&[]), &expected, tmpdir.path());
        assert_success(&piped, "decrypt a pipe");
        assert!(piped.stdout == plaintext, "pipe, {length} bytes");
        assert!(
            names(tmpdir.path()).is_empty(),
            "{:?}",
            names(tmpdir.path())
        );
    }
}

#[test]
fn forgeries_release_nothing_from_files_or_pipes() {
    let folder = Folder::new("forged");
    let tmpdir = Folder::new("forged-tmp");
    let (key, iv) = (hex(KEY), hex(IV));
    for length in [0usize, 17, 100_000, 70 << 20] {
        let plaintext = marked_plaintext(length);
        let sealed = seal(&key, &iv, b"aad", &plaintext);
        let mut forged_tag = sealed.clone();
        *forged_tag.last_mut().unwrap() ^= 1;
        let mut forged_text = sealed.clone();
        forged_text[length / 2] ^= 0x80;
        let input = folder.path().join("input");
        let cases: [(&str, &[u8], &str, &str); 4] = [
            ("forged tag", &forged_tag, KEY, "616164"),
            ("forged text", &forged_text, KEY, "616164"),
            (
                "wrong key",
                &sealed,
                "000102030405060708090a0b0c0d0e0e",
                "616164",
            ),
            ("wrong aad", &sealed, KEY, "616165"),
        ];
        for (what, bytes, key, aad) in cases {
            std::fs::write(&input, bytes).unwrap();
            let out = folder.path().join("out");
            let base = [raw_gcm("decrypt", key).as_slice(), &["--aad", aad]].concat();
            let runs: [(Vec<&str>, &[u8]); 4] = [
                (
                    vec![input.to_str().unwrap(), "-o", out.to_str().unwrap()],
                    b"",
                ),
                (vec![input.to_str().unwrap()], b""),
                (vec!["-o", out.to_str().unwrap()], bytes),
                (vec![], bytes),
            ];
            for (extra, stdin) in runs {
                let mut args = base.to_vec();
                args.extend(&extra);
                let output = parcrypt(&args, stdin, tmpdir.path());
                process::assert_refused_with(&output, "authentication failed", |_| false);
                assert!(output.stdout.is_empty(), "{what} {extra:?}: stdout written");
                assert_eq!(names(folder.path()), ["input"], "{what} {extra:?}");
                assert!(names(tmpdir.path()).is_empty(), "{what} {extra:?}");
            }
        }
    }
}

/// The regular files `pid` holds open (through /proc/PID/fd), but `skip`, that contain the
/// marker, with where they are.
fn held_files_with_plaintext(pid: u32, skip: &[&Path]) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        if skip.iter().any(|path| target == *path) {
            continue;
        }
        let Ok(mut file) = std::fs::File::open(entry.path()) else {
            continue;
        };
        if !file.metadata().map(|m| m.is_file()).unwrap_or(false) {
            continue;
        }
        let mut bytes = Vec::new();
        if file.read_to_end(&mut bytes).is_ok() && contains_marker(&bytes) {
            found.push(target.display().to_string());
        }
    }
    found
}

/// The position of the file `pid` holds open at `path` (from /proc/PID/fdinfo), if any.
fn position_in(pid: u32, path: &Path) -> Option<u64> {
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.flatten() {
        if std::fs::read_link(entry.path()).ok().as_deref() == Some(path) {
            let info = std::fs::read_to_string(format!(
                "/proc/{pid}/fdinfo/{}",
                entry.file_name().to_string_lossy()
            ))
            .ok()?;
            let line = info.lines().find(|line| line.starts_with("pos:"))?;
            return line[4..].trim().parse().ok();
        }
    }
    None
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args(["-s", name, &child.id().to_string()])
        .status()
        .expect("run kill");
    // The child may have ended on its own already.
    let _ = status;
}

/// Collects a child's stdout on a thread.
fn drain(child: &mut Child) -> std::thread::JoinHandle<Vec<u8>> {
    let mut stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    })
}

/// Starts `raw decrypt` with `extra` arguments, to `out` when there is one (else to stdout,
/// collected on a thread), with stderr thrown away.
fn start_decryption(
    extra: &[&str],
    out: Option<&Path>,
    stdin: Stdio,
    tmpdir: &Path,
) -> (Child, std::thread::JoinHandle<Vec<u8>>) {
    let mut args = decrypt_args(extra);
    if let Some(out) = out {
        args.extend(["-o", out.to_str().unwrap()]);
    }
    let mut child = command(&args, tmpdir)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = drain(&mut child);
    (child, stdout)
}

/// Starts `raw decrypt --backend seq -q SEALED` with its stdout to `stdout`, stderr piped
/// and a new $TMPDIR of its own, returned with it.
fn start_seq_decryption(sealed: &Path, stdout: Stdio) -> (Child, Folder) {
    let tmpdir = Folder::new("tmp");
    let args = decrypt_args(&["--backend", "seq", "-q", sealed.to_str().unwrap()]);
    let child = command(&args, tmpdir.path())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (child, tmpdir)
}

/// What an interrupted run must leave: a failure, nothing on stdout, nothing in the
/// destination folder or in $TMPDIR.
fn assert_left_nothing(
    status: std::process::ExitStatus,
    stdout: std::thread::JoinHandle<Vec<u8>>,
    destination: &Folder,
    tmpdir: &Folder,
    what: &str,
) {
    assert!(!status.success(), "{what}");
    assert!(stdout.join().unwrap().is_empty(), "{what}: stdout");
    assert!(names(destination.path()).is_empty(), "{what}");
    assert!(names(tmpdir.path()).is_empty(), "{what}");
}

/// The big inputs of the interrupt tests: plaintext with the marker, sealed by `raw
/// encrypt`, and a copy with its tag forged. On /dev/shm; removed with the folder.
struct BigInputs {
    _folder: Folder,
    sealed: PathBuf,
    forged: PathBuf,
}

fn big_inputs(megabytes: usize) -> BigInputs {
    let folder = Folder::new("big");
    let plain = folder.path().join("plain");
    std::fs::write(&plain, marked_plaintext(megabytes << 20)).unwrap();
    let sealed = folder.path().join("sealed");
    let output = Command::new(env!("CARGO_BIN_EXE_parcrypt"))
        .args(raw_gcm("encrypt", KEY))
        .args(["--backend", "pool", "-q"])
        .arg(&plain)
        .arg("-o")
        .arg(&sealed)
        .output()
        .unwrap();
    assert_success(&output, "sealing the big input");
    std::fs::remove_file(&plain).unwrap();
    let forged = folder.path().join("forged");
    let mut bytes = std::fs::read(&sealed).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(&forged, bytes).unwrap();
    BigInputs {
        _folder: folder,
        sealed,
        forged,
    }
}

/// A file input with a forged tag, interrupted at several points of its first pass by each
/// signal: nothing in the destination folder or $TMPDIR, nothing on stdout, and no held file
/// with plaintext at the moment of the signal.
#[test]
fn interrupted_file_decryption_leaves_nothing() {
    let inputs = big_inputs(192);
    let length = std::fs::metadata(&inputs.forged).unwrap().len();
    let mut reached = 0;
    for name in ["INT", "TERM", "KILL"] {
        for fraction in [0.0, 0.3, 0.7] {
            for to_file in [true, false] {
                let destination = Folder::new("dest");
                let tmpdir = Folder::new("tmp");
                let out = destination.path().join("out");
                let (mut child, stdout) = start_decryption(
                    &["--backend", "seq", "-q", inputs.forged.to_str().unwrap()],
                    to_file.then_some(out.as_path()),
                    Stdio::null(),
                    tmpdir.path(),
                );
                let threshold = (length as f64 * fraction) as u64;
                loop {
                    if child.try_wait().unwrap().is_some() {
                        break;
                    }
                    match position_in(child.id(), &inputs.forged) {
                        Some(position) if position >= threshold => {
                            let held = held_files_with_plaintext(child.id(), &[&inputs.forged]);
                            assert!(held.is_empty(), "plaintext held in {held:?}");
                            signal(&child, name);
                            reached += 1;
                            break;
                        }
                        _ => std::thread::sleep(Duration::from_millis(1)),
                    }
                }
                let status = child.wait().unwrap();
                let what = format!("SIG{name} at {fraction}");
                assert_left_nothing(status, stdout, &destination, &tmpdir, &what);
            }
        }
    }
    // Most runs are caught in their first pass (a busy machine may let some finish first).
    println!("{reached} of 18 runs signalled while running");
    assert!(reached > 0, "no run was signalled while it ran");
}

/// A genuine message fed slowly through a pipe, interrupted while it is still arriving
/// (held in memory, then spooled past 64 MiB): the spool holds ciphertext only, and nothing
/// is left anywhere.
#[test]
fn interrupted_pipe_decryption_leaves_nothing() {
    let inputs = big_inputs(80);
    let sealed = std::fs::read(&inputs.sealed).unwrap();
    for name in ["INT", "TERM", "KILL"] {
        for fed in [0usize, 1 << 20, 70 << 20] {
            for to_file in [true, false] {
                let destination = Folder::new("dest");
                let tmpdir = Folder::new("tmp");
                let out = destination.path().join("out");
                let (mut child, stdout) = start_decryption(
                    &["-q"],
                    to_file.then_some(out.as_path()),
                    Stdio::piped(),
                    tmpdir.path(),
                );
                let mut stdin = child.stdin.take().unwrap();
                stdin.write_all(&sealed[..fed]).unwrap();
                let held = held_files_with_plaintext(child.id(), &[]);
                assert!(held.is_empty(), "plaintext held in {held:?}");
                signal(&child, name);
                let status = child.wait().unwrap();
                drop(stdin);
                let what = format!("SIG{name} after {fed} bytes");
                assert_left_nothing(status, stdout, &destination, &tmpdir, &what);
            }
        }
    }
}

/// While a genuine message is decrypted from a file to stdout, no file the process holds
/// but its input ever contains plaintext (a pipe or /dev/null receives it, nothing is held).
#[test]
fn no_held_file_has_plaintext_before_the_tag_matched() {
    let inputs = big_inputs(128);
    let (mut child, tmpdir) = start_seq_decryption(&inputs.sealed, Stdio::null());
    let mut scans = 0;
    while child.try_wait().unwrap().is_none() {
        let held = held_files_with_plaintext(child.id(), &[&inputs.sealed]);
        assert!(held.is_empty(), "plaintext held in {held:?}");
        scans += 1;
    }
    let output = child.wait_with_output().unwrap();
    assert_success(&output, "decrypting the big input");
    assert!(names(tmpdir.path()).is_empty());
    println!("{scans} scans of the held files");
}

/// Signals during the second pass (after the tag matched): no file left beside the
/// destination (the output is an unnamed file until it is linked into place).
#[test]
fn interrupted_second_pass_leaves_nothing() {
    let inputs = big_inputs(192);
    for name in ["INT", "TERM", "KILL"] {
        let destination = Folder::new("dest");
        let tmpdir = Folder::new("tmp");
        let out = destination.path().join("out");
        let args = decrypt_args(&[
            "--backend",
            "seq",
            "-q",
            inputs.sealed.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        let mut child = command(&args, tmpdir.path())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The output temporary appears (or, with O_TMPFILE, the input is read a second time).
        let mut last = 0;
        while child.try_wait().unwrap().is_none() {
            let position = position_in(child.id(), &inputs.sealed).unwrap_or(0);
            if !names(destination.path()).is_empty() || position < last {
                signal(&child, name);
                break;
            }
            last = position;
            std::thread::sleep(Duration::from_millis(1));
        }
        let status = child.wait().unwrap();
        assert!(!status.success() || names(destination.path()) == ["out"]);
        if !status.success() {
            assert!(names(destination.path()).is_empty(), "SIG{name}");
        }
        assert!(names(tmpdir.path()).is_empty(), "SIG{name}");
    }
}

/// Issue 31 finding 7: a file rewritten once its first pass has read it, decrypted to a
/// pipe. Before, the second pass read the file again and put the changed file's plaintext
/// on stdout before its tag check failed; now the second pass decrypts the copy the first
/// pass authenticated, so stdout only ever holds the authenticated plaintext.
#[test]
fn a_file_changed_after_the_first_pass_puts_none_of_its_plaintext_on_a_pipe() {
    let megabytes = 48;
    let inputs = big_inputs(megabytes);
    let expected = marked_plaintext(megabytes << 20);
    let length = std::fs::metadata(&inputs.sealed).unwrap().len();
    let (mut child, tmpdir) = start_seq_decryption(&inputs.sealed, Stdio::piped());
    let stdout = drain(&mut child);
    // The first pass is over when the input was read to its end (and, as it was, read again
    // from its start by a second pass in place).
    let mut last = 0;
    let mut at_end = 0;
    while child.try_wait().unwrap().is_none() {
        let position = position_in(child.id(), &inputs.sealed).unwrap_or(last);
        if position < last || (position == length && at_end > 2) {
            break;
        }
        at_end += usize::from(position == length);
        last = position;
        std::thread::sleep(Duration::from_millis(1));
    }
    let offset = length - 1000;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&inputs.sealed)
        .unwrap();
    let mut byte = [0u8];
    use std::io::Seek;
    file.seek(std::io::SeekFrom::Start(offset)).unwrap();
    file.read_exact(&mut byte).unwrap();
    file.seek(std::io::SeekFrom::Start(offset)).unwrap();
    file.write_all(&[byte[0] ^ 0x80]).unwrap();
    drop(file);
    let status = child.wait().unwrap();
    let released = stdout.join().unwrap();
    assert!(
        released.len() <= expected.len() && released == expected[..released.len()],
        "plaintext of the changed file reached the pipe"
    );
    assert!(status.success(), "the authenticated copy decrypts");
    assert_eq!(released.len(), expected.len());
    assert!(names(tmpdir.path()).is_empty());
}

#[test]
fn raw_refuses_a_terminal_without_dash_o_dash() {
    // `script` gives the command a pseudo-terminal for stdin and stdout.
    if Command::new("script").arg("--version").output().is_err() {
        println!("SKIPPED: no `script` to fake a terminal with");
        return;
    }
    let folder = Folder::new("tty");
    let input = folder.path().join("input");
    std::fs::write(&input, b"hello terminal").unwrap();
    let binary = env!("CARGO_BIN_EXE_parcrypt");
    let run = |extra: &str| {
        let line = format!(
            "{binary} raw encrypt --cipher aes-128-ctr --key {KEY} --iv {KEY} {} {extra}",
            input.display()
        );
        Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let refused = run("");
    let text = String::from_utf8_lossy(&refused.stdout);
    assert!(!refused.status.success(), "{text}");
    assert!(
        text.contains("refusing to write encrypted bytes to the terminal"),
        "{text}"
    );
    let insisted = run("-o -");
    assert!(
        insisted.status.success(),
        "{}",
        String::from_utf8_lossy(&insisted.stdout)
    );
}

#[test]
fn raw_takes_quiet() {
    let tmpdir = Folder::new("quiet");
    for (flag, direction) in [("-q", "encrypt"), ("--quiet", "decrypt")] {
        let output = parcrypt(
            &[
                "raw",
                direction,
                "--cipher",
                "aes-128-ctr",
                "--key",
                KEY,
                "--iv",
                KEY,
                flag,
            ],
            b"some bytes",
            tmpdir.path(),
        );
        assert_success(&output, flag);
        assert_eq!(output.stdout.len(), 10);
        assert!(output.stderr.is_empty());
    }
}
