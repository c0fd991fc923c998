//! Ending quietly when the reader of a pipe goes away, as `cat` does.
//!
//! Rust starts every program with `SIGPIPE` ignored, so a write to a pipe whose reader has
//! gone (`parcrypt decrypt f | head -c 10`) returns an `EPIPE` error instead, which a
//! program then reports as "Broken pipe" and exit status 1. Shells and scripts expect the
//! other behaviour: no message, and the status of death by `SIGPIPE` (141 in the shell's
//! numbering, 128 + 13). [`die_on_closed_pipe`] restores that.
//!
//! Why the signal rather than catching the error: a write to a closed pipe then stops the
//! process at that write, whichever thread makes it and whichever writer it goes through
//! (a buffered stdout, a progress bar, a worker thread), so no work goes on into a pipe
//! nobody reads and no error path can miss it. It loses nothing that cleanup would have
//! saved: writes to files never raise `SIGPIPE`, so an output file is never cut short by it,
//! and output to a pipe is streamed with nothing beside it to remove. (The one write to a
//! pipe that can come while an output file is unfinished is a message on a stderr whose
//! reader has gone: an unfinished output that is an unnamed `O_TMPFILE` file vanishes with
//! the process, one with a temporary name is left as a `SIGKILL` would leave it.)
//!
//! A parent can still block `SIGPIPE` (a blocked signal stays blocked across `exec`, and a
//! default disposition does not unblock it); writes then fail with `EPIPE` as before. For that
//! case [`is_closed_pipe`] recognises the error, so that the program can end with
//! [`CLOSED_PIPE_STATUS`] and no message all the same.

use std::io;

/// The exit status a program ends with when its output pipe closed and it could not die
/// by `SIGPIPE`: 128 + `SIGPIPE` (13), what a shell reports for a process killed by it.
pub const CLOSED_PIPE_STATUS: u8 = 141;

/// Gives `SIGPIPE` its default action (end the process, silently) for the rest of the
/// process's life, undoing the `SIG_IGN` that Rust's runtime installs before `main`. Call it
/// first thing in `main`, before any thread starts.
///
/// Returns the operating system's error if the disposition could not be changed (then writes
/// to a closed pipe keep failing with `EPIPE`, which [`is_closed_pipe`] recognises).
pub fn die_on_closed_pipe() -> io::Result<()> {
    // SAFETY: signal(2) with SIG_DFL installs no handler of ours, so no code of ours ever
    // runs in signal context; it reads and writes no memory of the program.
    let previous = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    if previous == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `error` is the error of a write to a pipe (or socket) whose reader has gone.
pub fn is_closed_pipe(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::BrokenPipe
}

/// The operating system's own text for a closed pipe (`strerror(EPIPE)`, "Broken pipe"),
/// the words an [`io::Error`] of that kind shows: for recognising the failure in a message
/// that has already been turned into text.
pub fn closed_pipe_text() -> String {
    let text = io::Error::from_raw_os_error(libc::EPIPE).to_string();
    // io::Error shows an OS error as "TEXT (os error N)".
    match text.find(" (os error ") {
        Some(end) => text[..end].to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closed_pipe_error_is_recognised_by_kind_and_by_text() {
        let error = io::Error::from_raw_os_error(libc::EPIPE);
        assert!(is_closed_pipe(&error));
        assert!(!is_closed_pipe(&io::Error::from_raw_os_error(libc::ENOSPC)));
        let text = closed_pipe_text();
        assert!(!text.is_empty());
        assert!(error.to_string().starts_with(&text), "{error} / {text}");
        assert!(!text.contains("os error"));
    }

    #[test]
    fn the_status_is_the_shells_number_for_death_by_sigpipe() {
        assert_eq!(i32::from(CLOSED_PIPE_STATUS), 128 + libc::SIGPIPE);
    }
}
