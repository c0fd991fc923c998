//! The few operating-system calls parcrypt makes itself, each behind a safe function, so
//! that the format, the bench, the facade and the command line can forbid unsafe code.
//!
//! - [`terminal`]: a question on the controlling terminal with echo off, restored on every
//!   way out (signals included);
//! - [`pipes`]: a closed output pipe ends the process quietly, as it ends `cat`;
//! - [`reserve_file_space`]: preallocating an output file's blocks before it is written;
//! - [`output`]: files with no name until complete (`O_TMPFILE`), named temporary files
//!   removed on SIGINT, SIGTERM and SIGHUP, and syncing a folder.
#![warn(missing_docs)]

pub mod output;
pub mod pipes;
pub mod terminal;

use std::fs::File;
use std::os::fd::AsRawFd;

/// Reserves `bytes` of disk for `file` (open for writing) before it is written, so that
/// writing copies into allocated pages instead of allocating page by page (on tmpfs that is
/// most of a write's cost). Best effort: a file system that cannot preallocate allocates as
/// it goes, and nothing is reported.
pub fn reserve_file_space(file: &File, bytes: u64) {
    let Ok(length) = libc::off_t::try_from(bytes) else {
        return;
    };
    // SAFETY: the descriptor belongs to `file`, which is open and outlives the call;
    // fallocate reads no memory of ours.
    unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, length) };
}
