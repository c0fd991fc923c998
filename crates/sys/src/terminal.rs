//! Asking on the controlling terminal (`/dev/tty`, so that stdin and stdout stay free for
//! data) with echo off, the way `readpassphrase(3)` does:
//! - echo is turned off *before* the prompt shows, and input typed ahead of the prompt
//!   (which the terminal has already shown) is discarded, so what is typed after the
//!   prompt is never displayed;
//! - the terminal keeps its line editing (backspace, Ctrl-U) and its signals: Ctrl-C,
//!   a hang-up or a kill while asking restore the terminal's settings in the signal
//!   handler and then end the process as the signal would have, so an interrupted prompt
//!   never leaves the user's shell without echo.

use std::cell::UnsafeCell;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard};

use zeroize::Zeroizing;

/// The longest line a terminal in canonical mode hands over (Linux: 4095 bytes and
/// the newline); more is dropped by the terminal itself.
const LINE_BYTES: usize = 4096;

/// The signals that end a process by default and that a person can send while asked:
/// each restores the terminal first.
const SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP];

/// The settings to restore, for the signal handler: written while no handler is
/// installed, read only by the handler while [`QUIET_TERMINAL`] names a descriptor.
struct SavedSettings(UnsafeCell<MaybeUninit<libc::termios>>);
// SAFETY: written only under ASKING before QUIET_TERMINAL publishes it (SeqCst), and
// read only through that publication; see `Quiet::new`.
unsafe impl Sync for SavedSettings {}
static SAVED: SavedSettings = SavedSettings(UnsafeCell::new(MaybeUninit::uninit()));
/// The terminal whose echo is off, or -1.
static QUIET_TERMINAL: AtomicI32 = AtomicI32::new(-1);
/// One question at a time in the process (the statics above hold one terminal).
static ASKING: Mutex<()> = Mutex::new(());

/// The controlling terminal, opened for one or more questions.
pub struct Terminal {
    tty: File,
}

impl Terminal {
    /// The controlling terminal; fails when the process has none.
    pub fn open() -> io::Result<Terminal> {
        let tty = OpenOptions::new().read(true).write(true).open("/dev/tty")?;
        Ok(Terminal { tty })
    }

    /// Shows `prompt`, reads one line with echo off and returns it without its line
    /// ending; `None` when input ended (Ctrl-D) before anything was typed.
    pub fn ask(&mut self, prompt: &str) -> io::Result<Option<Zeroizing<Vec<u8>>>> {
        let quiet = Quiet::new(&self.tty)?;
        (&self.tty).write_all(prompt.as_bytes())?;
        let mut line = Zeroizing::new(vec![0u8; LINE_BYTES]);
        let mut length = 0;
        let ended_line = loop {
            if length == line.len() {
                break false;
            }
            match (&self.tty).read(&mut line[length..]) {
                // Ctrl-D at the start of a line.
                Ok(0) => break false,
                Ok(read) => {
                    length += read;
                    if line[length - 1] == b'\n' {
                        break true;
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            }
        };
        drop(quiet);
        if !ended_line {
            // The terminal echoed no newline: end the prompt's line for what follows.
            (&self.tty).write_all(b"\n")?;
        }
        let mut answer = &line[..length];
        while let [rest @ .., b'\n' | b'\r'] = answer {
            answer = rest;
        }
        if answer.is_empty() && !ended_line {
            return Ok(None);
        }
        Ok(Some(Zeroizing::new(answer.to_vec())))
    }
}

/// Echo off on a terminal until dropped, with signal handlers that restore it.
struct Quiet<'t> {
    tty: &'t File,
    saved: libc::termios,
    replaced: Vec<(libc::c_int, libc::sigaction)>,
    _asking: MutexGuard<'static, ()>,
}

impl<'t> Quiet<'t> {
    fn new(tty: &'t File) -> io::Result<Quiet<'t>> {
        let asking = ASKING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let fd = tty.as_raw_fd();
        let mut settings = MaybeUninit::<libc::termios>::uninit();
        // SAFETY: `fd` is open for the life of `tty`; tcgetattr fills the struct or fails.
        if unsafe { libc::tcgetattr(fd, settings.as_mut_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: tcgetattr succeeded, so the struct is initialised.
        let saved = unsafe { settings.assume_init() };
        // SAFETY: no handler of ours is installed (they are removed before ASKING is
        // released), so nothing reads SAVED while it is written.
        unsafe { (*SAVED.0.get()).write(saved) };
        QUIET_TERMINAL.store(fd, Ordering::SeqCst);
        let mut quiet = Quiet {
            tty,
            saved,
            replaced: Vec::new(),
            _asking: asking,
        };
        for signal in SIGNALS {
            // SAFETY: sigaction reads and writes only the two structs given; an
            // all-zero sigaction is a valid value (empty mask, no flags).
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction == libc::SIG_IGN
                {
                    // A signal the process ignores (nohup, a background job) stays
                    // ignored: it must not become fatal while asking.
                    continue;
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction =
                    restore_and_raise as extern "C" fn(libc::c_int) as libc::sighandler_t;
                action.sa_flags = libc::SA_RESETHAND;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(signal, &action, std::ptr::null_mut()) == 0 {
                    quiet.replaced.push((signal, old));
                }
            }
        }
        let mut silent = saved;
        silent.c_lflag &= !(libc::ECHO | libc::ECHOE | libc::ECHOK);
        // Enter still moves to the next line, without showing what was typed.
        silent.c_lflag |= libc::ECHONL | libc::ICANON;
        // SAFETY: as for tcgetattr. TCSAFLUSH drops input typed before the prompt,
        // which the terminal has already displayed.
        if unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &silent) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(quiet)
    }
}

impl Drop for Quiet<'_> {
    fn drop(&mut self) {
        // SAFETY: the descriptor is open for the life of `self.tty`; tcsetattr only
        // reads the struct.
        unsafe { libc::tcsetattr(self.tty.as_raw_fd(), libc::TCSANOW, &self.saved) };
        QUIET_TERMINAL.store(-1, Ordering::SeqCst);
        for (signal, old) in self.replaced.drain(..) {
            // SAFETY: puts back the action read in `Quiet::new`.
            unsafe { libc::sigaction(signal, &old, std::ptr::null_mut()) };
        }
    }
}

/// The handler while echo is off: restore the terminal, then let the signal do what it
/// does by default (SA_RESETHAND has reinstated that action; the signal is blocked in
/// its own handler, so the raised one is delivered as the handler returns).
extern "C" fn restore_and_raise(signal: libc::c_int) {
    let fd = QUIET_TERMINAL.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: tcsetattr, write and raise are async-signal-safe. SAVED was written
        // before QUIET_TERMINAL named `fd`, and is not written again before
        // QUIET_TERMINAL is -1 and this handler is removed.
        unsafe {
            libc::tcsetattr(fd, libc::TCSANOW, (*SAVED.0.get()).as_ptr());
            libc::write(fd, b"\n".as_ptr().cast(), 1);
        }
    }
    // SAFETY: raise is async-signal-safe.
    unsafe { libc::raise(signal) };
}
