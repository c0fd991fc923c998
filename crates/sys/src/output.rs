//! The operating-system calls behind output files that appear whole or not at all.
//!
//! - [`open_unnamed`]: on Linux, a file with no name in a folder (`O_TMPFILE`); it vanishes
//!   with the process whatever ends it (SIGKILL, a crash, a power cut), and
//!   [`link_unnamed`] gives it a name once it is complete.
//! - [`remove_on_signal`]: for file systems without `O_TMPFILE`, a named temporary file is
//!   removed when SIGINT, SIGTERM or SIGHUP ends the process (SIGKILL cannot be caught).
//! - [`sync_folder`] and [`folder_writable`]: making a new name durable, and checking early
//!   that one can be made.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Once;

/// Opens a new file with no name in `folder`, for writing, readable and writable by its
/// owner only. `Ok(None)` when the platform or the folder's file system cannot make one
/// (then a named temporary file is the way); other failures (no such folder, no
/// permission) are errors.
pub fn open_unnamed(folder: &Path) -> io::Result<Option<File>> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_TMPFILE)
            .mode(0o600)
            .open(folder);
        match opened {
            Ok(file) => Ok(Some(file)),
            // What open(2) answers where the kernel or the file system lacks O_TMPFILE.
            Err(error)
                if matches!(
                    error.raw_os_error(),
                    Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
                ) =>
            {
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = folder;
        Ok(None)
    }
}

/// Gives the unnamed `file` (from [`open_unnamed`]) the name `path`, in the folder it was
/// made in. Never replaces: an existing `path` is an error of kind
/// [`io::ErrorKind::AlreadyExists`].
pub fn link_unnamed(file: &File, path: &Path) -> io::Result<()> {
    let target = c_path(path)?;
    #[cfg(target_os = "linux")]
    {
        let source = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: both strings are NUL-terminated and outlive the call; linkat reads them
        // and nothing else of ours.
        let linked = unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                source.as_ptr(),
                libc::AT_FDCWD,
                target.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        };
        if linked == 0 {
            return Ok(());
        }
        let first = io::Error::last_os_error();
        if first.kind() == io::ErrorKind::AlreadyExists {
            return Err(first);
        }
        // Without /proc, AT_EMPTY_PATH names the descriptor itself (it needs
        // CAP_DAC_READ_SEARCH); when that fails too, the first reason is the one to tell.
        // SAFETY: as above; the empty string is NUL-terminated and the descriptor is open
        // for the life of `file`.
        let linked = unsafe {
            libc::linkat(
                file.as_raw_fd(),
                c"".as_ptr(),
                libc::AT_FDCWD,
                target.as_ptr(),
                libc::AT_EMPTY_PATH,
            )
        };
        if linked == 0 {
            Ok(())
        } else {
            Err(first)
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, target);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// Flushes `folder`'s entries to disk, so that a name made or changed in it survives a
/// crash. A file system that cannot sync a folder (EINVAL, ENOTSUP: some network and FUSE
/// file systems) is no error: there is nothing more to do.
pub fn sync_folder(folder: &Path) -> io::Result<()> {
    match File::open(folder)?.sync_all() {
        Err(error) if matches!(error.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP)) => {
            Ok(())
        }
        other => other,
    }
}

/// Whether this process may make files in `folder` (write and search permission, checked
/// with the effective ids, and a file system mounted read-write).
pub fn folder_writable(folder: &Path) -> bool {
    let Ok(folder) = c_path(folder) else {
        return false;
    };
    // SAFETY: the string is NUL-terminated and outlives the call.
    unsafe {
        libc::faccessat(
            libc::AT_FDCWD,
            folder.as_ptr(),
            libc::W_OK | libc::X_OK,
            libc::AT_EACCESS,
        ) == 0
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// The signals that end a process by default and that a person or a system sends to stop
/// a job: each removes the registered files first.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
/// How many files can be registered at once; more are simply not removed on a signal.
const SLOTS: usize = 64;

/// The registered paths (leaked C strings, or null), read by the signal handler.
static PATHS: [AtomicPtr<libc::c_char>; SLOTS] = [const { AtomicPtr::new(ptr::null_mut()) }; SLOTS];
/// Set by the handler before it reads [`PATHS`]: from then on no string may be freed.
static HANDLING: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();

/// The actions the handler replaced, to hand the signal on to.
struct Previous(std::cell::UnsafeCell<[Option<libc::sigaction>; SIGNALS.len()]>);
// SAFETY: written only inside INSTALL's call_once, before the handler that reads it is
// installed; never written again.
unsafe impl Sync for Previous {}
static PREVIOUS: Previous = Previous(std::cell::UnsafeCell::new([None; SIGNALS.len()]));

/// A file that SIGINT, SIGTERM or SIGHUP removes before ending the process, until this is
/// dropped. See [`remove_on_signal`].
#[must_use = "the file is removed on a signal only while this lives"]
pub struct RemoveOnSignal {
    slot: Option<usize>,
}

/// Registers `path` to be removed if SIGINT, SIGTERM or SIGHUP ends the process, until the
/// returned guard is dropped (drop it after removing or renaming the file).
///
/// The first call installs a handler for the three signals (a signal the process ignores,
/// as under `nohup`, stays ignored). The handler unlinks every registered path, then ends
/// the process as the signal would have (a shell sees status 128+N), or hands the signal to
/// the handler it replaced. Best effort: with more than 64 files registered at once, the
/// others are not removed.
pub fn remove_on_signal(path: &Path) -> RemoveOnSignal {
    INSTALL.call_once(install);
    let Ok(path) = c_path(path) else {
        return RemoveOnSignal { slot: None };
    };
    let raw = path.into_raw();
    for (index, slot) in PATHS.iter().enumerate() {
        if slot
            .compare_exchange(ptr::null_mut(), raw, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return RemoveOnSignal { slot: Some(index) };
        }
    }
    // SAFETY: `raw` came from `into_raw` above and was published nowhere.
    drop(unsafe { CString::from_raw(raw) });
    RemoveOnSignal { slot: None }
}

impl Drop for RemoveOnSignal {
    fn drop(&mut self) {
        let Some(index) = self.slot else {
            return;
        };
        let raw = PATHS[index].swap(ptr::null_mut(), Ordering::SeqCst);
        // A handler that started before the swap may be reading the string: then the
        // process is ending anyway, and the string is left alone.
        if !raw.is_null() && !HANDLING.load(Ordering::SeqCst) {
            // SAFETY: `raw` came from `into_raw` in `remove_on_signal`; the swap took it
            // out of PATHS, and no handler read it (HANDLING is set before any read).
            drop(unsafe { CString::from_raw(raw) });
        }
    }
}

fn install() {
    for (index, signal) in SIGNALS.into_iter().enumerate() {
        // SAFETY: sigaction reads and writes only the structs given; an all-zero sigaction
        // is a valid value. PREVIOUS is written before the handler that reads it exists.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, ptr::null(), &mut old) != 0
                || old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            (*PREVIOUS.0.get())[index] = Some(old);
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction =
                remove_and_raise as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, ptr::null_mut());
        }
    }
}

/// The handler: unlink what is registered, then let the signal do what it did before
/// (SA_RESETHAND has reinstated the default action; a replaced handler is put back). The
/// signal is blocked in its own handler, so the raised one arrives as this returns.
extern "C" fn remove_and_raise(signal: libc::c_int) {
    HANDLING.store(true, Ordering::SeqCst);
    for slot in &PATHS {
        let raw = slot.load(Ordering::SeqCst);
        if !raw.is_null() {
            // SAFETY: unlink is async-signal-safe; the string stays allocated once
            // HANDLING is set (see RemoveOnSignal's drop).
            unsafe { libc::unlink(raw) };
        }
    }
    if let Some(index) = SIGNALS.iter().position(|&known| known == signal) {
        // SAFETY: PREVIOUS was written before this handler was installed and is read-only
        // since; sigaction and raise are async-signal-safe.
        unsafe {
            if let Some(old) = &(*PREVIOUS.0.get())[index] {
                if old.sa_sigaction != libc::SIG_DFL {
                    libc::sigaction(signal, old, ptr::null_mut());
                }
            }
        }
    }
    // SAFETY: raise is async-signal-safe.
    unsafe { libc::raise(signal) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn an_unnamed_file_gets_its_name_only_when_linked() {
        let folder = std::env::temp_dir().join(format!("parcrypt-sys-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let Some(mut file) = open_unnamed(&folder).unwrap() else {
            println!("SKIPPED: no O_TMPFILE in the temporary folder's file system");
            return;
        };
        file.write_all(b"whole").unwrap();
        assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
        let name = folder.join("named");
        link_unnamed(&file, &name).unwrap();
        assert_eq!(std::fs::read(&name).unwrap(), b"whole");
        let again = link_unnamed(&file, &name).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        sync_folder(&folder).unwrap();
        assert!(folder_writable(&folder));
        assert!(!folder_writable(&folder.join("missing")));
        std::fs::remove_dir_all(&folder).unwrap();
    }

    #[test]
    fn registrations_come_and_go() {
        let guards: Vec<_> = (0..3)
            .map(|index| remove_on_signal(Path::new(&format!("/nonexistent/{index}"))))
            .collect();
        assert!(guards.iter().all(|guard| guard.slot.is_some()));
        let slots: Vec<_> = guards.iter().map(|guard| guard.slot.unwrap()).collect();
        drop(guards);
        for slot in slots {
            assert!(PATHS[slot].load(Ordering::SeqCst).is_null());
        }
    }
}
