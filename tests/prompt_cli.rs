//! The passphrase prompt as a person meets it: `parcrypt encrypt|decrypt` run on a real
//! pseudo-terminal (the terminal is the child's controlling terminal, as in a shell), the
//! passphrase typed after the prompt shows, and everything the terminal displays captured.
//! Typed secrets must never be displayed, a refusal is one line with nothing left behind,
//! and an interrupted prompt must give the terminal back with echo on.
// Tests print what they ran and skipped to stderr, where libtest captures it.
#![allow(clippy::disallowed_macros)]

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[path = "support/process.rs"]
mod process;

use process::names;

/// A passphrase KDF cheap enough for tests.
const CHEAP_KDF: [&str; 6] = ["--kdf-memory", "1", "--kdf-passes", "1", "--kdf-lanes", "1"];
const FIRST_PROMPT: &str = "parcrypt: passphrase: ";
const SECOND_PROMPT: &str = "parcrypt: passphrase again: ";
/// Generous: a loaded CI machine may start the binary slowly.
const PATIENCE: Duration = Duration::from_secs(60);

/// A child process whose stdin, stdout and stderr are the slave side of a new
/// pseudo-terminal, which is also its controlling terminal (so `/dev/tty` is that terminal).
struct OnTerminal {
    child: Child,
    master: File,
    shown: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
    /// The terminal's local modes before the child started.
    initial_modes: libc::tcflag_t,
}

/// Opens a pseudo-terminal pair, both ends close-on-exec. `None` when the system has none.
fn open_terminal() -> Option<(File, File)> {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors into the integers we pass; the name, termios
    // and window size arguments may be null (defaults).
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if opened != 0 {
        eprintln!(
            "SKIPPED: cannot open a pseudo-terminal: {}",
            std::io::Error::last_os_error()
        );
        return None;
    }
    for fd in [master, slave] {
        // SAFETY: `fd` was just opened by openpty and is owned by nobody else yet. Other
        // tests spawn processes concurrently: without FD_CLOEXEC they would inherit the
        // terminal and keep it open after our child exits.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: both descriptors are open and from here on owned only by these files.
    Some(unsafe {
        (
            File::from(OwnedFd::from_raw_fd(master)),
            File::from(OwnedFd::from_raw_fd(slave)),
        )
    })
}

impl OnTerminal {
    /// Starts parcrypt with `args` on a new terminal; `stdin` is a pipe holding these bytes
    /// when given (the terminal otherwise). `None` (after saying so) when no
    /// pseudo-terminal can be opened.
    fn start(args: &[&str], folder: &Path, stdin: Option<&[u8]>) -> Option<OnTerminal> {
        Self::start_with_passphrase_variable(args, folder, stdin, None)
    }

    /// [`OnTerminal::start`] with PARCRYPT_PASSPHRASE set to `variable` (else unset).
    fn start_with_passphrase_variable(
        args: &[&str],
        folder: &Path,
        stdin: Option<&[u8]>,
        variable: Option<&str>,
    ) -> Option<OnTerminal> {
        let (master, slave) = open_terminal()?;
        let initial_modes = local_modes(&master);
        let mut command = Command::new(env!("CARGO_BIN_EXE_parcrypt"));
        command.args(args).current_dir(folder);
        match variable {
            Some(value) => command.env("PARCRYPT_PASSPHRASE", value),
            None => command.env_remove("PARCRYPT_PASSPHRASE"),
        };
        command
            .stdout(slave.try_clone().unwrap())
            .stderr(slave.try_clone().unwrap());
        match stdin {
            Some(_) => command.stdin(Stdio::piped()),
            None => command.stdin(slave.try_clone().unwrap()),
        };
        // SAFETY: runs in the child between fork and exec and calls only setsid and ioctl,
        // which are async-signal-safe. stderr (fd 2) is the slave by then: a new session
        // takes it as its controlling terminal, as a login shell's children have theirs.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(2, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().expect("start parcrypt");
        drop(slave);
        if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let bytes = bytes.to_vec();
            std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            });
        }
        let shown = Arc::new(Mutex::new(Vec::new()));
        let mut from_terminal = master.try_clone().unwrap();
        let sink = Arc::clone(&shown);
        let reader = std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // Ends with EIO once no process holds the slave side any more.
            while let Ok(read @ 1..) = from_terminal.read(&mut buffer) {
                sink.lock().unwrap().extend_from_slice(&buffer[..read]);
            }
        });
        Some(OnTerminal {
            child,
            master,
            shown,
            reader: Some(reader),
            initial_modes,
        })
    }

    fn shown(&self) -> String {
        String::from_utf8_lossy(&self.shown.lock().unwrap()).into_owned()
    }

    /// Waits until the terminal has displayed `text` `times` times in all.
    fn wait_for(&mut self, text: &str, times: usize) {
        let deadline = Instant::now() + PATIENCE;
        while self.shown().matches(text).count() < times {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "parcrypt ended ({status}) before showing {text:?}; the terminal shows {:?}",
                    self.shown()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no {text:?} after {PATIENCE:?}; the terminal shows {:?}",
                self.shown()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Types `keys` on the terminal's keyboard.
    fn type_keys(&mut self, keys: &[u8]) {
        self.master.write_all(keys).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits for the child to end, killing it and failing the test after [`PATIENCE`].
    fn wait_for_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!(
                    "parcrypt still running after {PATIENCE:?}; the terminal shows {:?}",
                    self.shown()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits for the child to end; returns how it ended and everything the terminal showed.
    fn finish(mut self) -> (ExitStatus, String) {
        let status = self.wait_for_exit();
        // The reader sees EIO once the child is gone; give it a moment to drain.
        let reader = self.reader.take().unwrap();
        let drained = Instant::now() + Duration::from_secs(5);
        while !reader.is_finished() && Instant::now() < drained {
            std::thread::sleep(Duration::from_millis(5));
        }
        (status, self.shown())
    }

    fn local_modes(&self) -> libc::tcflag_t {
        local_modes(&self.master)
    }
}

/// A terminal's local modes (ECHO, ICANON, ...), read through the master side, which on
/// Linux reports the slave's settings.
fn local_modes(master: &File) -> libc::tcflag_t {
    use std::os::fd::AsRawFd;
    let mut settings = std::mem::MaybeUninit::<libc::termios>::uninit();
    // SAFETY: the descriptor is open for the life of `master`; tcgetattr fills the struct.
    let status = unsafe { libc::tcgetattr(master.as_raw_fd(), settings.as_mut_ptr()) };
    assert_eq!(status, 0);
    // SAFETY: tcgetattr succeeded, so the struct is initialised.
    unsafe { settings.assume_init() }.c_lflag
}

fn data(length: usize) -> Vec<u8> {
    (0..length).map(|i| ((i * 131) ^ (i >> 9)) as u8).collect()
}

/// The arguments that encrypt `plain.bin` to `sealed.pc` with the cheap KDF, asking for the
/// passphrase.
fn encrypt_plain_args() -> Vec<&'static str> {
    let mut args = vec!["encrypt", "-q", "plain.bin", "-o", "sealed.pc"];
    args.extend(CHEAP_KDF);
    args
}

/// Asserts that the terminal never showed `typed` (a part of a typed passphrase).
fn assert_not_echoed(shown: &str, typed: &str) {
    assert!(
        !shown.contains(typed),
        "the passphrase was echoed: {shown:?}"
    );
}

/// Asserts that `folder` holds only `file`.
fn assert_only_left(folder: &Path, file: &str) {
    assert_eq!(names(folder), [file], "a file was left behind");
}

/// Asserts a refusal for `reason` on the terminal that showed nothing of `typed` and left
/// only `file` in `folder`.
fn assert_refused_cleanly(
    (status, shown): (ExitStatus, String),
    reason: &str,
    typed: &str,
    folder: &Path,
    file: &str,
) {
    assert_refused_on_terminal(status, &shown, reason);
    assert_not_echoed(&shown, typed);
    assert_only_left(folder, file);
}

/// What the terminal showed after the last prompt, as lines without the terminal's `\r`.
fn lines_after_prompts(shown: &str) -> Vec<String> {
    let after = match (shown.rfind(FIRST_PROMPT), shown.rfind(SECOND_PROMPT)) {
        (Some(first), Some(second)) if second > first => &shown[second + SECOND_PROMPT.len()..],
        (Some(first), _) => &shown[first + FIRST_PROMPT.len()..],
        (None, Some(second)) => &shown[second + SECOND_PROMPT.len()..],
        (None, None) => shown,
    };
    after
        .split('\n')
        .map(|line| line.trim_end_matches('\r').to_string())
        .filter(|line| !line.is_empty())
        // The tests' cheap KDF is warned about (tests/limits_cli.rs checks the warnings).
        .filter(|line| !line.starts_with("parcrypt: warning: "))
        .collect()
}

/// Decrypts `sealed` with the passphrase in PARCRYPT_PASSPHRASE (no terminal involved).
fn decrypt_with_variable(sealed: &Path, passphrase: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_parcrypt"))
        .args(["decrypt", "-q", sealed.to_str().unwrap()])
        .env("PARCRYPT_PASSPHRASE", passphrase)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn assert_refused_on_terminal(status: ExitStatus, shown: &str, reason: &str) {
    assert!(!status.success(), "succeeded; the terminal shows {shown:?}");
    assert_ne!(status.code(), Some(101), "panicked: {shown:?}");
    let lines = lines_after_prompts(shown);
    assert_eq!(
        lines.len(),
        1,
        "expected one line after the prompt, the terminal shows {shown:?}"
    );
    assert!(
        lines[0].starts_with("parcrypt: error: ") && lines[0].contains(reason),
        "'{reason}' not in {:?}",
        lines[0]
    );
}

#[test]
fn encryption_asks_twice_without_echo_and_the_file_opens_with_the_same_passphrase() {
    let folder = tempfile::tempdir().unwrap();
    let plain = data(3 * 16384 + 77);
    std::fs::write(folder.path().join("plain.bin"), &plain).unwrap();
    let passphrase = "Tr0ub4dor&3 correct horse";
    let args = encrypt_plain_args();
    let Some(mut terminal) = OnTerminal::start(&args, folder.path(), None) else {
        return;
    };
    terminal.wait_for(FIRST_PROMPT, 1);
    terminal.type_keys(format!("{passphrase}\n").as_bytes());
    terminal.wait_for(SECOND_PROMPT, 1);
    terminal.type_keys(format!("{passphrase}\r").as_bytes());
    let (status, shown) = terminal.finish();
    assert!(status.success(), "encrypt failed: {shown:?}");
    assert!(
        !shown.contains("Tr0ub4dor") && !shown.contains("horse"),
        "the passphrase was echoed: {shown:?}"
    );
    assert_eq!(shown.matches(FIRST_PROMPT).count(), 1, "{shown:?}");
    assert!(
        lines_after_prompts(&shown).is_empty(),
        "unexpected output: {shown:?}"
    );
    assert_eq!(names(folder.path()), ["plain.bin", "sealed.pc"]);

    let sealed = folder.path().join("sealed.pc");
    let opened = decrypt_with_variable(&sealed, passphrase);
    assert!(
        opened.status.success(),
        "{}",
        String::from_utf8_lossy(&opened.stderr)
    );
    assert!(
        opened.stdout == plain,
        "the prompt's passphrase is not the one the file was sealed with"
    );
    let wrong = decrypt_with_variable(&sealed, "Tr0ub4dor&3 correct horsE");
    assert!(!wrong.status.success() && wrong.stdout.is_empty());
}

#[test]
fn the_plaintext_may_come_from_a_pipe_while_the_prompt_uses_the_terminal() {
    let folder = tempfile::tempdir().unwrap();
    let plain = data(40_000);
    let mut args = vec!["encrypt", "-q", "-o", "sealed.pc"];
    args.extend(CHEAP_KDF);
    let Some(mut terminal) = OnTerminal::start(&args, folder.path(), Some(&plain)) else {
        return;
    };
    for round in 1..=2 {
        terminal.wait_for(
            if round == 1 {
                FIRST_PROMPT
            } else {
                SECOND_PROMPT
            },
            1,
        );
        terminal.type_keys(b"piped-plaintext-pass\n");
    }
    let (status, shown) = terminal.finish();
    assert!(status.success(), "encrypt failed: {shown:?}");
    assert_not_echoed(&shown, "piped-plaintext");
    let opened = decrypt_with_variable(&folder.path().join("sealed.pc"), "piped-plaintext-pass");
    assert!(opened.status.success() && opened.stdout == plain);
}

#[test]
fn a_second_entry_that_differs_is_refused_and_nothing_is_written() {
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("plain.bin"), data(1000)).unwrap();
    let args = encrypt_plain_args();
    let Some(mut terminal) = OnTerminal::start(&args, folder.path(), None) else {
        return;
    };
    terminal.wait_for(FIRST_PROMPT, 1);
    terminal.type_keys(b"first-attempt\n");
    terminal.wait_for(SECOND_PROMPT, 1);
    terminal.type_keys(b"first-attempT\n");
    assert_refused_cleanly(
        terminal.finish(),
        "the two passphrases differ",
        "first-attemp",
        folder.path(),
        "plain.bin",
    );
}

#[test]
fn decryption_asks_once_and_a_wrong_passphrase_leaves_nothing() {
    let folder = tempfile::tempdir().unwrap();
    let plain = data(2 * 16384 + 5);
    let sealed = Command::new(env!("CARGO_BIN_EXE_parcrypt"))
        .args(["encrypt", "-q"])
        .args(CHEAP_KDF)
        .env("PARCRYPT_PASSPHRASE", "the right one")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(&plain)?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(sealed.status.success());
    std::fs::write(folder.path().join("sealed.pc"), &sealed.stdout).unwrap();

    // Decrypts sealed.pc to opened.bin, typing `keys` at the prompt; `None` without a terminal.
    let decrypt_typing = |keys: &[u8]| {
        let mut terminal = OnTerminal::start(
            &["decrypt", "-q", "sealed.pc", "-o", "opened.bin"],
            folder.path(),
            None,
        )?;
        terminal.wait_for(FIRST_PROMPT, 1);
        terminal.type_keys(keys);
        Some(terminal.finish())
    };
    let Some((status, shown)) = decrypt_typing(b"the right one\n") else {
        return;
    };
    assert!(status.success(), "decrypt failed: {shown:?}");
    assert!(
        !shown.contains(SECOND_PROMPT),
        "decryption asked twice: {shown:?}"
    );
    assert_not_echoed(&shown, "right");
    assert!(std::fs::read(folder.path().join("opened.bin")).unwrap() == plain);
    std::fs::remove_file(folder.path().join("opened.bin")).unwrap();

    let Some(ended) = decrypt_typing(b"the wrong one\n") else {
        return;
    };
    assert_refused_cleanly(
        ended,
        "wrong key or passphrase",
        "wrong one",
        folder.path(),
        "sealed.pc",
    );
}

#[test]
fn an_empty_entry_and_end_of_input_are_refused_in_one_line() {
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("plain.bin"), data(10)).unwrap();
    let args = encrypt_plain_args();
    for (keys, reason) in [
        (&b"\n"[..], "the passphrase is empty"),
        (&b"\x04"[..], "no passphrase was typed"),
    ] {
        let Some(mut terminal) = OnTerminal::start(&args, folder.path(), None) else {
            return;
        };
        terminal.wait_for(FIRST_PROMPT, 1);
        terminal.type_keys(keys);
        let (status, shown) = terminal.finish();
        assert_refused_on_terminal(status, &shown, reason);
        assert!(terminal_gave_back(&shown));
        assert_only_left(folder.path(), "plain.bin");
    }
}

/// The terminal was left on a fresh line (the prompt's line ended).
fn terminal_gave_back(shown: &str) -> bool {
    shown.trim_end_matches(['\r', '\n']).len() < shown.len()
}

#[test]
fn interrupting_the_prompt_gives_the_terminal_back_with_echo_on() {
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("plain.bin"), data(10)).unwrap();
    let args = encrypt_plain_args();
    // (typed before the signal, at which prompt, the signal): Ctrl-C as the terminal sends
    // it (the line discipline turns it into SIGINT), and a kill from elsewhere.
    let cases = [
        (&b"half-typed"[..], 1, None),
        (&b"both-same\n"[..], 2, None),
        (&b"killed-while"[..], 1, Some(libc::SIGTERM)),
    ];
    for (typed_before, on_prompt, killed_by) in cases {
        let Some(mut terminal) = OnTerminal::start(&args, folder.path(), None) else {
            return;
        };
        let before = terminal.initial_modes;
        assert!(
            before & libc::ECHO != 0 && before & libc::ICANON != 0,
            "a new terminal echoes"
        );
        terminal.wait_for(FIRST_PROMPT, 1);
        terminal.type_keys(typed_before);
        if on_prompt == 2 {
            terminal.wait_for(SECOND_PROMPT, 1);
        }
        match killed_by {
            None => terminal.type_keys(b"\x03"),
            Some(signal) => {
                // SAFETY: kill only sends a signal to our own child, which has not been
                // waited for, so its pid cannot have been reused.
                let status = unsafe { libc::kill(terminal.child.id() as libc::pid_t, signal) };
                assert_eq!(status, 0);
            }
        }
        let modes_after = {
            let (status, shown) = terminal_finish_keep(&mut terminal);
            assert_eq!(
                status.signal(),
                Some(killed_by.unwrap_or(libc::SIGINT)),
                "not ended by the signal: {status}, {shown:?}"
            );
            assert!(
                !["half-typed", "both-same", "killed-while"]
                    .iter()
                    .any(|typed| shown.contains(typed)),
                "echoed: {shown:?}"
            );
            terminal.local_modes()
        };
        assert!(
            modes_after & libc::ECHO != 0,
            "echo left off after {killed_by:?} at prompt {on_prompt}"
        );
        assert!(
            modes_after & libc::ICANON != 0,
            "line editing left off after {killed_by:?} at prompt {on_prompt}"
        );
        assert_eq!(
            modes_after, before,
            "terminal modes changed by an interrupted prompt"
        );
        assert_only_left(folder.path(), "plain.bin");
    }
}

/// Like [`OnTerminal::finish`] but keeps the terminal open for inspection.
fn terminal_finish_keep(terminal: &mut OnTerminal) -> (ExitStatus, String) {
    let status = terminal.wait_for_exit();
    std::thread::sleep(Duration::from_millis(50));
    (status, terminal.shown())
}

/// Issue 31 finding 7: a passphrase from PARCRYPT_PASSPHRASE is warned about when a person
/// watches stderr (a terminal), and not when a script reads it (a pipe).
#[test]
fn the_passphrase_variable_is_warned_about_on_a_terminal_only() {
    let folder = tempfile::tempdir().unwrap();
    let plain = data(1000);
    std::fs::write(folder.path().join("plain.bin"), &plain).unwrap();
    let variable = "set in the environment";
    let Some(terminal) = OnTerminal::start_with_passphrase_variable(
        &encrypt_plain_args(),
        folder.path(),
        None,
        Some(variable),
    ) else {
        return;
    };
    let (status, shown) = terminal.finish();
    assert!(status.success(), "encrypt failed: {shown:?}");
    assert!(!shown.contains(FIRST_PROMPT), "asked anyway: {shown:?}");
    assert!(
        shown.contains("parcrypt: warning: the passphrase came from PARCRYPT_PASSPHRASE"),
        "no warning on the terminal: {shown:?}"
    );
    assert_not_echoed(&shown, variable);

    let opened = decrypt_with_variable(&folder.path().join("sealed.pc"), variable);
    let stderr = String::from_utf8_lossy(&opened.stderr);
    assert!(opened.status.success(), "{stderr}");
    assert!(
        opened.stdout == plain,
        "not the passphrase it was sealed with"
    );
    assert!(
        !stderr.contains("PARCRYPT_PASSPHRASE"),
        "warned on a pipe: {stderr}"
    );
}
