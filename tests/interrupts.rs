//! `parcrypt encrypt|decrypt` ended by SIGINT, SIGTERM, SIGHUP or SIGKILL at several points:
//! nothing is left in the destination's folder, an existing destination replaced with
//! `--force` is wholly the old file or wholly the new one, and while decryption runs the
//! file it writes (read through /proc/PID/fd) has no name and holds nothing but
//! authenticated plaintext. Linux only (it reads /proc).
#![cfg(target_os = "linux")]

use std::fs;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[path = "support/process.rs"]
mod process;

use process::names;

const KEY: &str = "000102030405060708090a0b0c0d0e0f";
const CHEAP_KDF: [&str; 6] = ["--kdf-memory", "8", "--kdf-passes", "1", "--kdf-lanes", "1"];
const CHUNK: usize = 16384;
const SEALED_CHUNK: usize = CHUNK + 16;
/// The message: long enough that the pipeline writes batches (4 MiB each) before its input
/// ends.
const MESSAGE_BYTES: usize = 40 << 20;
/// What is fed before the test looks at the output and signals.
const FIRST_PART: usize = 16 << 20;

const SIGNALS: [(&str, i32); 4] = [
    ("INT", libc::SIGINT),
    ("TERM", libc::SIGTERM),
    ("HUP", libc::SIGHUP),
    ("KILL", libc::SIGKILL),
];

/// A folder in RAM where there is one (big files are cheap there).
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(folder) = tempfile::tempdir_in(shm) {
            return folder;
        }
    }
    tempfile::tempdir().unwrap()
}

/// The message: seeded random bytes, the same in every run.
fn message() -> Vec<u8> {
    let mut bytes = vec![0u8; MESSAGE_BYTES];
    StdRng::seed_from_u64(0x9e37_79b9_7f4a_7c15).fill_bytes(&mut bytes);
    bytes
}

#[derive(Clone, Copy, Debug)]
enum Secret {
    Key,
    Passphrase,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Job {
    Encrypt,
    Decrypt,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Point {
    /// At once, before the process got far (perhaps before the output exists).
    Start,
    /// Once part of the output is written and the rest of the input not yet given.
    Midway,
}

/// The arguments for `job` under `secret`, reading stdin and writing `output`.
fn arguments(job: Job, secret: Secret, passphrase: &Path, output: &Path) -> Vec<String> {
    let mut args: Vec<String> = vec![
        match job {
            Job::Encrypt => "encrypt",
            Job::Decrypt => "decrypt",
        }
        .into(),
        "-q".into(),
        "--backend".into(),
        "seq".into(),
        "-o".into(),
        output.display().to_string(),
    ];
    match secret {
        Secret::Key => args.extend(["--key".into(), KEY.into()]),
        Secret::Passphrase => {
            args.extend(["--passphrase-file".into(), passphrase.display().to_string()]);
            if job == Job::Encrypt {
                args.extend(CHEAP_KDF.map(String::from));
            }
        }
    }
    args
}

fn parcrypt() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_parcrypt"));
    command.env_remove("PARCRYPT_PASSPHRASE");
    command
}

/// Encrypts `plain` under `secret` in one run, for the decryption cases.
fn sealed(plain: &[u8], secret: Secret, passphrase: &Path) -> Vec<u8> {
    let mut command = parcrypt();
    command.args(["encrypt", "-q"]);
    match secret {
        Secret::Key => command.args(["--key", KEY]),
        Secret::Passphrase => command
            .arg("--passphrase-file")
            .arg(passphrase)
            .args(CHEAP_KDF),
    };
    let output = process::run_with_stdin(&mut command, plain);
    assert!(output.status.success(), "{output:?}");
    output.stdout
}

/// A running job fed through a pipe: the first part at once, the rest on `resume`.
struct Running {
    child: Child,
    resume: Option<mpsc::Sender<()>>,
    feeder: Option<thread::JoinHandle<()>>,
}

impl Running {
    fn start(args: &[String], input: Vec<u8>, first: usize, env: &[(&str, &str)]) -> Running {
        let mut command = parcrypt();
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("run parcrypt");
        let mut pipe = child.stdin.take().unwrap();
        let (resume, resumed) = mpsc::channel::<()>();
        let feeder = thread::spawn(move || {
            // The process may be gone before it read everything: not this thread's concern.
            if pipe.write_all(&input[..first]).is_ok() && resumed.recv().is_ok() {
                let _ = pipe.write_all(&input[first..]);
            }
        });
        Running {
            child,
            resume: Some(resume),
            feeder: Some(feeder),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} failed");
    }

    /// Gives the rest of the input and waits for the end.
    fn finish(mut self) -> std::process::Output {
        if let Some(resume) = self.resume.take() {
            let _ = resume.send(());
        }
        self.wait()
    }

    fn wait(&mut self) -> std::process::Output {
        let status = self.child.wait().unwrap();
        drop(self.resume.take());
        if let Some(feeder) = self.feeder.take() {
            feeder.join().unwrap();
        }
        let mut stderr = Vec::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            pipe.read_to_end(&mut stderr).unwrap();
        }
        std::process::Output {
            status,
            stdout: Vec::new(),
            stderr,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        drop(self.resume.take());
    }
}

/// A file the process holds open in `folder` with data written: its descriptor's path in
/// /proc, what the descriptor's link names, and the write position.
struct Held {
    proc_path: PathBuf,
    link: String,
    position: u64,
}

fn held_output(pid: u32, folder: &Path) -> Option<Held> {
    let folder = fs::canonicalize(folder).unwrap().display().to_string();
    for entry in fs::read_dir(format!("/proc/{pid}/fd")).ok()? {
        let entry = entry.ok()?;
        let Ok(link) = fs::read_link(entry.path()) else {
            continue;
        };
        let link = link.display().to_string();
        if !link.starts_with(&format!("{folder}/")) {
            continue;
        }
        let fd = entry.file_name().to_string_lossy().into_owned();
        let info = fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).ok()?;
        let position = info
            .lines()
            .find_map(|line| line.strip_prefix("pos:"))
            .and_then(|pos| pos.trim().parse().ok())?;
        return Some(Held {
            proc_path: entry.path(),
            link,
            position,
        });
    }
    None
}

/// Waits until the process has written part of its output into a file in `folder`.
fn wait_for_output(running: &mut Running, folder: &Path) -> Held {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(held) = held_output(running.pid(), folder) {
            if held.position > 0 {
                return held;
            }
        }
        if let Ok(Some(status)) = running.child.try_wait() {
            panic!("the job ended before writing: {status:?}");
        }
        assert!(
            Instant::now() < deadline,
            "no output written in {folder:?} after two minutes"
        );
        thread::sleep(Duration::from_millis(5));
    }
}

/// The bytes of plaintext whose chunks had all their ciphertext in the first `fed` bytes.
fn authenticated_bytes(fed: usize, envelope: usize) -> usize {
    (fed.saturating_sub(envelope) / SEALED_CHUNK) * CHUNK
}

#[derive(Debug)]
struct Case {
    job: Job,
    secret: Secret,
    signal: (&'static str, i32),
    point: Point,
    /// Replace an existing destination (`--force`).
    replace: bool,
    /// Take the named-temporary fallback (PARCRYPT_NO_O_TMPFILE).
    named: bool,
}

fn run_case(case: &Case, plain: &[u8], sealed_by: &dyn Fn(Secret) -> Vec<u8>, envelope: usize) {
    let folder = scratch();
    // The passphrase file lives apart: read by the job while it starts, it would otherwise
    // be an open file in `folder` with a position past 0, taken for the output.
    let secrets = scratch();
    let passphrase = secrets.path().join("passphrase");
    fs::write(&passphrase, "correct horse\n").unwrap();
    let destination = folder.path().join("destination");
    let old = b"the old destination, kept whole".to_vec();
    let mut args = arguments(case.job, case.secret, &passphrase, &destination);
    if case.replace {
        fs::write(&destination, &old).unwrap();
        args.push("--force".into());
    }
    let before = names(folder.path());
    let input = match case.job {
        Job::Encrypt => plain.to_vec(),
        Job::Decrypt => sealed_by(case.secret),
    };
    let env: &[(&str, &str)] = if case.named {
        &[("PARCRYPT_NO_O_TMPFILE", "1")]
    } else {
        &[]
    };
    let mut running = Running::start(&args, input, FIRST_PART, env);
    if case.point == Point::Midway {
        let held = wait_for_output(&mut running, folder.path());
        if case.named {
            let name = Path::new(&held.link).file_name().unwrap().to_string_lossy();
            assert!(
                name.starts_with(".parcrypt-") && name.ends_with(".tmp"),
                "{case:?}: {}",
                held.link
            );
        } else {
            // The unnamed file: its link says "(deleted)" and the folder shows no new name.
            assert!(held.link.ends_with(" (deleted)"), "{case:?}: {}", held.link);
            assert_eq!(names(folder.path()), before, "{case:?}");
        }
        if case.job == Job::Decrypt {
            let mut written = vec![0u8; held.position as usize];
            fs::File::open(&held.proc_path)
                .unwrap()
                .read_exact(&mut written)
                .unwrap();
            assert!(
                written.len() <= authenticated_bytes(FIRST_PART, envelope),
                "{case:?}: {} bytes written from {FIRST_PART} bytes of ciphertext",
                written.len()
            );
            assert!(
                written == plain[..written.len()],
                "{case:?}: not the plaintext"
            );
        }
    }
    running.signal(case.signal.0);
    let output = running.wait();
    assert_eq!(
        output.status.signal(),
        Some(case.signal.1),
        "{case:?}: {output:?}"
    );
    assert_eq!(names(folder.path()), before, "{case:?}: files left behind");
    if case.replace {
        assert!(
            fs::read(&destination).unwrap() == old,
            "{case:?}: destination changed"
        );
    }
}

fn all_cases(named: bool) {
    let plain = message();
    let secrets_folder = scratch();
    let passphrase = secrets_folder.path().join("passphrase");
    fs::write(&passphrase, "correct horse\n").unwrap();
    let by_key = sealed(&plain, Secret::Key, &passphrase);
    let by_passphrase = sealed(&plain, Secret::Passphrase, &passphrase);
    let envelope = sealed(b"", Secret::Key, &passphrase).len() - 16;
    let sealed_by = |secret: Secret| match secret {
        Secret::Key => by_key.clone(),
        Secret::Passphrase => by_passphrase.clone(),
    };
    for job in [Job::Encrypt, Job::Decrypt] {
        for secret in [Secret::Key, Secret::Passphrase] {
            for signal in SIGNALS {
                // SIGKILL cannot be caught: only the unnamed file survives it unseen.
                if named && signal.1 == libc::SIGKILL {
                    continue;
                }
                for point in [Point::Start, Point::Midway] {
                    for replace in [false, true] {
                        let case = Case {
                            job,
                            secret,
                            signal,
                            point,
                            replace,
                            named,
                        };
                        run_case(&case, &plain, &sealed_by, envelope);
                    }
                }
            }
        }
    }
}

#[test]
fn every_signal_at_every_point_leaves_nothing_and_the_old_destination_whole() {
    all_cases(false);
}

#[test]
fn the_named_fallback_is_removed_on_sigint_sigterm_and_sighup() {
    all_cases(true);
}

#[test]
fn a_finished_replacement_is_wholly_new() {
    let plain = message();
    let folder = scratch();
    let passphrase = folder.path().join("passphrase");
    fs::write(&passphrase, "correct horse\n").unwrap();
    let sealed_message = sealed(&plain, Secret::Key, &passphrase);
    for named in [false, true] {
        let destination = folder.path().join("destination");
        fs::write(&destination, b"old").unwrap();
        let before = names(folder.path());
        let mut args = arguments(Job::Decrypt, Secret::Key, &passphrase, &destination);
        args.push("--force".into());
        let env: &[(&str, &str)] = if named {
            &[("PARCRYPT_NO_O_TMPFILE", "1")]
        } else {
            &[]
        };
        let output = Running::start(&args, sealed_message.clone(), FIRST_PART, env).finish();
        assert!(output.status.success(), "{output:?}");
        assert!(fs::read(&destination).unwrap() == plain);
        assert_eq!(names(folder.path()), before);
    }
}
