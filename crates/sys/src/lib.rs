//! The few operating-system calls parcrypt makes itself, each behind a safe function, so
//! that the format, the bench, the facade and the command line can forbid unsafe code.
//!
//! - [`terminal`]: a question on the controlling terminal with echo off, restored on every
//!   way out (signals included);
//! - [`pipes`]: a closed output pipe ends the process quietly, as it ends `cat`;
//! - [`reserve_file_space`]: preallocating an output file's blocks before it is written;
//! - [`FileIdentity`]: telling whether a file changed between two reads;
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

/// What tells one state of a file from another without reading it: its device and inode
/// (which file), its size, and its modification and status-change times in nanoseconds since
/// the epoch (whether it was written since). A job that reads a file more than once takes it
/// first and compares it later, to refuse a file that changed in between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileIdentity {
    /// `st_dev`.
    pub device: u64,
    /// `st_ino`.
    pub inode: u64,
    /// Bytes of the file.
    pub size: u64,
    /// `st_mtime` in nanoseconds since the epoch (saturating).
    pub modified_ns: i64,
    /// `st_ctime` in nanoseconds since the epoch (saturating).
    pub changed_ns: i64,
}

impl FileIdentity {
    /// The identity in `metadata`.
    pub fn of(metadata: &std::fs::Metadata) -> FileIdentity {
        use std::os::unix::fs::MetadataExt;
        let nanoseconds =
            |seconds: i64, nanos: i64| seconds.saturating_mul(1_000_000_000).saturating_add(nanos);
        FileIdentity {
            device: metadata.dev(),
            inode: metadata.ino(),
            size: metadata.len(),
            modified_ns: nanoseconds(metadata.mtime(), metadata.mtime_nsec()),
            changed_ns: nanoseconds(metadata.ctime(), metadata.ctime_nsec()),
        }
    }
}
