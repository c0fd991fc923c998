//! Files in, files out, so that nothing is lost and nothing is left behind.
//!
//! An output is planned first ([`OutputPlan::check`]: every refusal happens there, before
//! any key derivation or prompt) and opened later ([`OutputPlan::open`]). What opening does
//! depends on the destination:
//!
//! - **A regular file, or a name not yet taken**: on Linux the output is a file with no
//!   name (`O_TMPFILE`) in the destination's folder. [`OutputFile::commit`] trims it, syncs
//!   it to disk, and only then links it to the destination's name, then syncs the folder.
//!   A process ended in any way before that (SIGKILL, a crash, a power cut) leaves no file.
//!   An existing destination (only with `overwrite`) is replaced by linking the finished file
//!   to a fresh hidden name beside it and renaming that over the destination: rename is
//!   atomic, so the destination is wholly the old file or wholly the new one.
//! - Where the file system cannot make unnamed files, a named hidden temporary file
//!   (`.parcrypt-XXXXXX.tmp`) beside the destination is used instead, removed when the
//!   output is dropped and when SIGINT, SIGTERM or SIGHUP ends the process; only SIGKILL or
//!   a crash can leave it. [`OutputPlan::open_named`] (or
//!   [`FileOptions::named_temporary_file`]) takes this way everywhere, to test it; the
//!   command line does so when `PARCRYPT_NO_O_TMPFILE` is set.
//! - **A symbolic link** is followed to its final target, and that target is written as
//!   above: the link stays a link and points at the new file. A link whose target's folder
//!   does not exist is refused.
//! - **A FIFO, a device** (`/dev/null`) **or a descriptor** (`/dev/stdout`, `/dev/fd/N`) is
//!   written in place, as a stream, and never replaced, with or without `overwrite`.
//!
//! The input is never the output: a destination (or standard output, see
//! [`check_stdout`]) that is the input file, by device and inode, is refused.
//!
//! ```
//! use parcrypt_format::file::{decrypt_file, encrypt_file, FileOptions};
//! use parcrypt_format::{CpuChunks, Format, Secret, Setup};
//! use parcrypt_engine::{Backend, Engine};
//!
//! let folder = tempfile::tempdir()?;
//! let (plain, sealed, opened) = (
//!     folder.path().join("notes.txt"),
//!     folder.path().join("notes.txt.parcrypt"),
//!     folder.path().join("notes.again.txt"),
//! );
//! std::fs::write(&plain, b"meet me at the usual place")?;
//!
//! let engine = Engine::new(Backend::Pool, None)?;
//! let batcher = CpuChunks::new(&engine);
//! let key = [3u8; 16];
//! let options = FileOptions::default();
//! encrypt_file(&batcher, &Setup::default(), Secret::Key(&key), &plain, &sealed, &options)?;
//! decrypt_file(&batcher, Format::Parcrypt, Secret::Key(&key), b"", &sealed, &opened, &options)?;
//! assert_eq!(std::fs::read(&opened)?, std::fs::read(&plain)?);
//!
//! // A wrong key leaves no file behind.
//! let wrong = folder.path().join("wrong.txt");
//! let refused = decrypt_file(
//!     &batcher, Format::Parcrypt, Secret::Key(&[4u8; 16]), b"", &sealed, &wrong, &options);
//! assert!(refused.is_err() && !wrong.exists());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::{self, File, Metadata};
use std::io::{self, Seek};
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use parcrypt_sys::output::{self as sys, RemoveOnSignal};

use crate::chunks::ChunkBatcher;
use crate::error::FormatError;
use crate::header::KdfLimits;
use crate::message::{Format, Secret, Setup};
use crate::reader::Decryptor;
use crate::stream::StreamOptions;
use crate::writer::Encryptor;

/// How [`encrypt_file`] and [`decrypt_file`] treat the destination and report progress.
#[derive(Clone, Copy, Default)]
pub struct FileOptions<'a> {
    /// Overwrite a destination that exists (never the source itself).
    pub overwrite: bool,
    /// Batch size, progress and stage times of the streaming pipeline.
    pub stream: StreamOptions<'a>,
    /// The most key derivation [`decrypt_file`] does for a passphrase file's header
    /// (default [`KdfLimits::DEFAULT`]); a header asking for more is refused before any work.
    pub kdf_limits: KdfLimits,
    /// Write through a named hidden temporary file beside the destination even where the
    /// file system can make unnamed ones (`O_TMPFILE`), as [`OutputPlan::open_named`] does:
    /// for testing that way (default `false`).
    pub named_temporary_file: bool,
}

/// Whether `path` names a terminal (`/dev/tty`, `/dev/stdout` on a terminal, a pty): only
/// a character device is opened to ask, and only for writing, as the output would be.
/// Front ends refuse to write ciphertext there.
pub fn is_terminal(path: &Path) -> bool {
    use std::io::IsTerminal;
    use std::os::unix::fs::FileTypeExt;
    let is_device = fs::metadata(path).is_ok_and(|metadata| metadata.file_type().is_char_device());
    is_device
        && fs::OpenOptions::new()
            .write(true)
            .open(path)
            .is_ok_and(|file| file.is_terminal())
}

/// Opens an input file for reading, refusing a folder.
pub fn open_input(path: &Path) -> Result<File, FormatError> {
    let file = File::open(path).map_err(|error| FormatError::OpenInput {
        path: path.to_path_buf(),
        error,
    })?;
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(FormatError::InputIsFolder(path.to_path_buf()));
    }
    Ok(file)
}

/// The metadata of standard input, to compare an output with when the input is stdin.
pub fn stdin_metadata() -> Option<Metadata> {
    descriptor_metadata(io::stdin().as_fd())
}

/// The metadata of standard output, to compare with the input (see [`check_stdout`]).
pub fn stdout_metadata() -> Option<Metadata> {
    descriptor_metadata(io::stdout().as_fd())
}

fn descriptor_metadata(fd: std::os::fd::BorrowedFd<'_>) -> Option<Metadata> {
    let file = File::from(fd.try_clone_to_owned().ok()?);
    file.metadata().ok()
}

/// Refuses standard output as the destination when it is the input file (`parcrypt encrypt
/// f > f` or `>> f`, which would read its own output until the disk is full). `input`: the
/// input's metadata (of the file, or [`stdin_metadata`]).
pub fn check_stdout(input: Option<&Metadata>) -> Result<(), FormatError> {
    match (input, stdout_metadata()) {
        (Some(input), Some(stdout)) if same_file(input, &stdout) => Err(FormatError::StdoutIsInput),
        _ => Ok(()),
    }
}

/// Two regular files that are one (same device and inode). Devices and pipes may be shared
/// by input and output (`/dev/null` in and out) and are never "the same file".
fn same_file(first: &Metadata, second: &Metadata) -> bool {
    first.is_file()
        && second.is_file()
        && first.dev() == second.dev()
        && first.ino() == second.ino()
}

/// The most links followed from a destination to its target (as the kernel's limit).
const MAX_LINKS: usize = 40;

/// An output whose destination was checked, to be opened later: see the [module](self).
/// Making one refuses, before anything is written or derived:
/// a folder, the input file, an existing file without `replace`, a link whose target's
/// folder does not exist, a destination whose folder is missing or not writable.
#[derive(Debug)]
pub struct OutputPlan {
    /// The destination as given, for messages.
    shown: PathBuf,
    way: Way,
}

#[derive(Debug)]
enum Way {
    /// Written in place and never replaced: a FIFO, a device.
    InPlace(PathBuf),
    /// Standard output or standard error, by a `/dev/stdout`-like name.
    Descriptor(Standard),
    /// A regular file (existing or not), written beside and linked or renamed into place.
    Replace {
        target: PathBuf,
        folder: PathBuf,
        replace: bool,
    },
}

#[derive(Clone, Copy, Debug)]
enum Standard {
    Output,
    Error,
}

impl OutputPlan {
    /// Checks the destination `target`: see [`OutputPlan`] for what is refused. `input`: the
    /// input's metadata, if any, which the destination may not be. `replace`: an existing
    /// regular file may be replaced.
    pub fn check(
        target: &Path,
        input: Option<&Metadata>,
        replace: bool,
    ) -> Result<OutputPlan, FormatError> {
        let shown = target.to_path_buf();
        let mut path = target.to_path_buf();
        let mut links = 0;
        let existing = loop {
            match fs::symlink_metadata(&path) {
                Ok(metadata) if metadata.file_type().is_symlink() => {
                    if let Some(way) = descriptor_link(&path) {
                        let metadata = fs::metadata(&path).ok();
                        check_not_input(&shown, metadata.as_ref(), input)?;
                        return Ok(OutputPlan { shown, way });
                    }
                    links += 1;
                    let next = fs::read_link(&path)
                        .ok()
                        .filter(|_| links <= MAX_LINKS)
                        .ok_or_else(|| FormatError::OpenOutput {
                            path: shown.clone(),
                            error: io::Error::other("too many levels of symbolic links"),
                        })?;
                    path = folder_of(&path).join(next);
                }
                Ok(metadata) => break Some(metadata),
                Err(error) if error.kind() == io::ErrorKind::NotFound => break None,
                Err(error) => {
                    return Err(FormatError::OpenOutput { path: shown, error });
                }
            }
        };
        let folder = folder_of(&path);
        match existing {
            Some(metadata) if metadata.is_dir() => {
                return Err(FormatError::OutputIsFolder(shown));
            }
            Some(metadata) if metadata.is_file() => {
                check_not_input(&shown, Some(&metadata), input)?;
                if !replace {
                    return Err(FormatError::OutputExists(shown));
                }
            }
            Some(_) => {
                return Ok(OutputPlan {
                    shown,
                    way: Way::InPlace(path),
                });
            }
            None if !folder.is_dir() => {
                return Err(if links > 0 {
                    FormatError::DanglingLink {
                        link: shown,
                        target: path,
                    }
                } else {
                    FormatError::OutputFolderMissing {
                        path: shown,
                        folder,
                    }
                });
            }
            None => {}
        }
        // A regular file to replace, or a new one in a folder that exists.
        check_folder(&shown, &folder)?;
        Ok(OutputPlan {
            shown,
            way: Way::Replace {
                target: path,
                folder,
                replace,
            },
        })
    }

    /// Whether the destination is written in place (a FIFO, a device, a descriptor): no
    /// file is made or replaced, and [`OutputFile::commit`] only ends the writing.
    pub fn in_place(&self) -> bool {
        !matches!(self.way, Way::Replace { .. })
    }

    /// The file that will be written: the destination, or the final target of the link it
    /// is.
    pub fn target(&self) -> &Path {
        match &self.way {
            Way::InPlace(path) | Way::Replace { target: path, .. } => path,
            Way::Descriptor(_) => &self.shown,
        }
    }

    /// Opens the output: an unnamed file where the file system allows it, otherwise a named
    /// temporary file (see the [module](self)); a FIFO or a device is opened for writing.
    pub fn open(self) -> Result<OutputFile, FormatError> {
        let Way::Replace { folder, .. } = &self.way else {
            return self.open_in_place();
        };
        match sys::open_unnamed(folder) {
            Ok(Some(file)) => {
                let Way::Replace {
                    target,
                    folder,
                    replace,
                } = self.way
                else {
                    unreachable!("matched above")
                };
                Ok(OutputFile {
                    file,
                    shown: self.shown,
                    state: State::Unnamed {
                        target,
                        folder,
                        replace,
                    },
                })
            }
            Ok(None) => self.open_named(),
            Err(error) => Err(FormatError::CreateTemporary {
                folder: folder.clone(),
                error,
            }),
        }
    }

    /// Opens the output as `options` say: [`OutputPlan::open_named`] with
    /// [`FileOptions::named_temporary_file`], [`OutputPlan::open`] otherwise.
    fn open_as(self, options: &FileOptions<'_>) -> Result<OutputFile, FormatError> {
        if options.named_temporary_file {
            self.open_named()
        } else {
            self.open()
        }
    }

    /// Opens the output the portable way: a named hidden temporary file beside the
    /// destination, removed when the output is dropped uncommitted and on SIGINT, SIGTERM
    /// and SIGHUP. [`OutputPlan::open`] takes this way where unnamed files cannot be made.
    pub fn open_named(self) -> Result<OutputFile, FormatError> {
        let Way::Replace {
            target,
            folder,
            replace,
        } = self.way
        else {
            return self.open_in_place();
        };
        // The name is registered for removal on a signal before the file exists (a signal
        // in between unlinks a name not yet taken), so no moment leaves it behind; a name
        // already taken drops its registration and tempfile tries another.
        let temporary = tempfile::Builder::new()
            .prefix(".parcrypt-")
            .suffix(".tmp")
            .make_in(&folder, |path| {
                let guard = sys::remove_on_signal(path);
                let file = fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(path)?;
                Ok((file, guard))
            })
            .map_err(|error| FormatError::CreateTemporary {
                folder: folder.clone(),
                error,
            })?;
        let ((file, guard), path) = temporary.into_parts();
        Ok(OutputFile {
            file,
            shown: self.shown,
            state: State::Named {
                path,
                _guard: guard,
                target,
                folder,
                replace,
            },
        })
    }

    fn open_in_place(self) -> Result<OutputFile, FormatError> {
        let opened = match &self.way {
            Way::Descriptor(Standard::Output) => {
                io::stdout().as_fd().try_clone_to_owned().map(File::from)
            }
            Way::Descriptor(Standard::Error) => {
                io::stderr().as_fd().try_clone_to_owned().map(File::from)
            }
            Way::InPlace(path) | Way::Replace { target: path, .. } => {
                fs::OpenOptions::new().write(true).open(path)
            }
        };
        let file = opened.map_err(|error| FormatError::OpenOutput {
            path: self.shown.clone(),
            error,
        })?;
        Ok(OutputFile {
            file,
            shown: self.shown,
            state: State::InPlace,
        })
    }
}

/// `/dev/stdout`, `/dev/fd/1`, `/proc/self/fd/2` and the like: a link among a process's
/// descriptors. Standard output and error are written through the descriptors themselves
/// (so that `>>` appends); another descriptor is opened by its name, in place.
fn descriptor_link(link: &Path) -> Option<Way> {
    let folder = fs::canonicalize(folder_of(link)).ok()?;
    let parts: Vec<Component<'_>> = folder.components().collect();
    let is_descriptors = matches!(
        parts.as_slice(),
        [Component::RootDir, Component::Normal(proc), Component::Normal(_), Component::Normal(fd)]
            if *proc == "proc" && *fd == "fd"
    );
    if !is_descriptors {
        return None;
    }
    let own = folder == fs::canonicalize("/proc/self/fd").ok()?;
    Some(match link.file_name()?.to_str()? {
        "1" if own => Way::Descriptor(Standard::Output),
        "2" if own => Way::Descriptor(Standard::Error),
        _ => Way::InPlace(link.to_path_buf()),
    })
}

fn check_not_input(
    shown: &Path,
    output: Option<&Metadata>,
    input: Option<&Metadata>,
) -> Result<(), FormatError> {
    match (output, input) {
        (Some(output), Some(input)) if same_file(output, input) => {
            Err(FormatError::OutputIsInput(shown.to_path_buf()))
        }
        _ => Ok(()),
    }
}

fn check_folder(shown: &Path, folder: &Path) -> Result<(), FormatError> {
    if sys::folder_writable(folder) {
        Ok(())
    } else {
        Err(FormatError::OutputFolderNotWritable {
            path: shown.to_path_buf(),
            folder: folder.to_path_buf(),
        })
    }
}

/// The folder a path names an entry of (`.` for a bare name).
fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// An output being written (see the [module](self)): [`OutputFile::file`] to write,
/// [`OutputFile::commit`] to make it visible. Dropped without a commit, nothing of it
/// remains (a FIFO or a device keeps what was written to it).
pub struct OutputFile {
    file: File,
    shown: PathBuf,
    state: State,
}

enum State {
    InPlace,
    Unnamed {
        target: PathBuf,
        folder: PathBuf,
        replace: bool,
    },
    Named {
        // Dropped in this order: the file is removed, then its registration for signals.
        path: tempfile::TempPath,
        _guard: RemoveOnSignal,
        target: PathBuf,
        folder: PathBuf,
        replace: bool,
    },
}

impl OutputFile {
    /// Checks and opens an output for `target` at once ([`OutputPlan::check`], then
    /// [`OutputPlan::open`]). `input`: the input file, which is never the output.
    pub fn create(
        target: &Path,
        input: Option<&Path>,
        replace: bool,
    ) -> Result<OutputFile, FormatError> {
        let input = input.and_then(|input| fs::metadata(input).ok());
        OutputPlan::check(target, input.as_ref(), replace)?.open()
    }

    /// The file to write the output into.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Whether the output is written in place (a FIFO, a device, a descriptor).
    pub fn in_place(&self) -> bool {
        matches!(self.state, State::InPlace)
    }

    /// Reserves `bytes` of disk before writing, so that writing copies into allocated pages
    /// instead of allocating page by page (on tmpfs that is most of a write's cost); the
    /// commit trims the file to what was written. Best effort: a file system that cannot
    /// preallocate allocates as it goes. Nothing for an output written in place.
    pub fn reserve(&mut self, bytes: u64) {
        if !self.in_place() {
            parcrypt_sys::reserve_file_space(&self.file, bytes);
        }
    }

    /// Makes the output visible: trims the file to what was written (space reserved beyond
    /// it is released), syncs it to disk, gives it the destination's name (replacing an
    /// existing file in one rename, only when allowed) and syncs the folder. An output
    /// written in place is only closed.
    pub fn commit(self) -> Result<(), FormatError> {
        let OutputFile { file, shown, state } = self;
        let finish = |error| FormatError::FinishOutput {
            path: shown.clone(),
            error,
        };
        let persist = |error| FormatError::PersistOutput {
            path: shown.clone(),
            error,
        };
        if !matches!(state, State::InPlace) {
            let written = (&file).stream_position().map_err(finish)?;
            file.set_len(written).map_err(finish)?;
            file.sync_all().map_err(finish)?;
        }
        let folder = match state {
            State::InPlace => return Ok(()),
            State::Unnamed {
                target,
                folder,
                replace,
            } => {
                match sys::link_unnamed(&file, &target) {
                    Ok(()) => {}
                    Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                        if !replace {
                            return Err(FormatError::OutputExists(shown));
                        }
                        // A complete copy under a fresh hidden name, then one rename over
                        // the destination.
                        // Registered for removal on a signal before the link exists.
                        let hidden = tempfile::Builder::new()
                            .prefix(".parcrypt-")
                            .suffix(".tmp")
                            .make_in(&folder, |path| {
                                let guard = sys::remove_on_signal(path);
                                sys::link_unnamed(&file, path)?;
                                Ok(guard)
                            })
                            .map_err(persist)?;
                        let _guard = hidden
                            .persist(&target)
                            .map_err(|error| persist(error.error))?;
                    }
                    Err(error) => return Err(persist(error)),
                }
                folder
            }
            State::Named {
                path,
                _guard,
                target,
                folder,
                replace,
            } => {
                let persisted = if replace {
                    path.persist(&target)
                } else {
                    path.persist_noclobber(&target)
                };
                if let Err(error) = persisted {
                    if !replace && error.error.kind() == io::ErrorKind::AlreadyExists {
                        return Err(FormatError::OutputExists(shown));
                    }
                    return Err(persist(error.error));
                }
                folder
            }
        };
        sys::sync_folder(&folder).map_err(finish)
    }
}

impl Encryptor {
    /// Encrypts the file `source` into `destination` through the streaming pipeline;
    /// `destination` appears only once the whole message is on disk. Returns the plaintext
    /// bytes.
    pub fn encrypt_file(
        self,
        batcher: &dyn ChunkBatcher,
        source: &Path,
        destination: &Path,
        options: &FileOptions<'_>,
    ) -> Result<u64, FormatError> {
        let (input, plan) = plan_files(source, destination, options)?;
        self.encrypt_planned(batcher, input, plan, options)
    }

    fn encrypt_planned(
        self,
        batcher: &dyn ChunkBatcher,
        mut input: File,
        plan: OutputPlan,
        options: &FileOptions<'_>,
    ) -> Result<u64, FormatError> {
        let mut output = plan.open_as(options)?;
        let plaintext = self.encrypt_stream(batcher, &mut input, output.file(), &options.stream)?;
        output.commit()?;
        Ok(plaintext)
    }
}

/// Opens the input and checks the destination against it.
fn plan_files(
    source: &Path,
    destination: &Path,
    options: &FileOptions<'_>,
) -> Result<(File, OutputPlan), FormatError> {
    let input = open_input(source)?;
    let plan = OutputPlan::check(
        destination,
        input.metadata().ok().as_ref(),
        options.overwrite,
    )?;
    Ok((input, plan))
}

/// Encrypts the file `source` into `destination` under `secret`, as `parcrypt encrypt`
/// does; returns the plaintext bytes. The destination is checked before the key is
/// derived. See the [module](self) for an example.
pub fn encrypt_file(
    batcher: &dyn ChunkBatcher,
    setup: &Setup<'_>,
    secret: Secret<'_>,
    source: &Path,
    destination: &Path,
    options: &FileOptions<'_>,
) -> Result<u64, FormatError> {
    let (input, plan) = plan_files(source, destination, options)?;
    Encryptor::new(setup, secret)?.encrypt_planned(batcher, input, plan, options)
}

/// Decrypts the file `source` into `destination`, as `parcrypt decrypt` does; returns the
/// plaintext bytes. `destination` appears only once every chunk authenticated: a wrong
/// secret, a damaged or a truncated file leaves nothing behind.
pub fn decrypt_file(
    batcher: &dyn ChunkBatcher,
    format: Format,
    secret: Secret<'_>,
    context: &[u8],
    source: &Path,
    destination: &Path,
    options: &FileOptions<'_>,
) -> Result<u64, FormatError> {
    // The destination is checked before the key derivation, and opened after it.
    let (input, plan) = plan_files(source, destination, options)?;
    let unlocked = Decryptor::new(format, input)?
        .kdf_limits(options.kdf_limits)
        .unlock(secret, context)?;
    let mut output = plan.open_as(options)?;
    let plaintext = unlocked.decrypt_to(batcher, output.file(), &options.stream)?;
    output.commit()?;
    Ok(plaintext)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn names(folder: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(folder)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn write_and_commit(mut output: OutputFile, bytes: &[u8], folder: &Path, before: &[&str]) {
        output.reserve(1 << 20);
        output.file().write_all(bytes).unwrap();
        // Until the commit the folder holds what it held (an unnamed file has no name)
        // or that and one hidden temporary file.
        let during = names(folder);
        let hidden: Vec<_> = during
            .iter()
            .filter(|name| !before.contains(&name.as_str()))
            .collect();
        assert!(
            hidden.is_empty() || (hidden.len() == 1 && hidden[0].starts_with(".parcrypt-")),
            "{during:?}"
        );
        output.commit().unwrap();
    }

    #[test]
    fn the_named_way_is_taken_when_the_options_ask_for_it() {
        let folder = tempfile::tempdir().unwrap();
        for named in [false, true] {
            let target = folder.path().join(format!("out-{named}"));
            let options = FileOptions {
                named_temporary_file: named,
                ..FileOptions::default()
            };
            let before = names(folder.path());
            let mut output = OutputPlan::check(&target, None, false)
                .unwrap()
                .open_as(&options)
                .unwrap();
            output.file().write_all(b"complete").unwrap();
            let hidden: Vec<_> = names(folder.path())
                .into_iter()
                .filter(|name| !before.contains(name))
                .collect();
            if named {
                assert!(
                    hidden.len() == 1 && hidden[0].starts_with(".parcrypt-"),
                    "{hidden:?}"
                );
            } else if sys::open_unnamed(folder.path()).is_ok_and(|file| file.is_some()) {
                assert!(hidden.is_empty(), "an unnamed file has no name: {hidden:?}");
            }
            output.commit().unwrap();
            assert_eq!(fs::read(&target).unwrap(), b"complete");
        }
        assert_eq!(names(folder.path()), ["out-false", "out-true"]);
    }

    #[test]
    fn a_new_output_appears_only_at_the_commit() {
        let folder = tempfile::tempdir().unwrap();
        let target = folder.path().join("out");
        let plan = OutputPlan::check(&target, None, false).unwrap();
        assert!(!plan.in_place());
        let mut output = plan.open().unwrap();
        output.file().write_all(b"complete").unwrap();
        assert!(names(folder.path()).is_empty());
        output.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"complete");
        assert_eq!(names(folder.path()), ["out"]);
        // Dropped without a commit: nothing.
        let second = folder.path().join("second");
        let mut output = OutputFile::create(&second, None, false).unwrap();
        output.file().write_all(b"partial").unwrap();
        drop(output);
        assert_eq!(names(folder.path()), ["out"]);
    }

    #[test]
    fn a_replaced_output_is_wholly_old_until_the_commit_and_wholly_new_after() {
        for named in [false, true] {
            let folder = tempfile::tempdir().unwrap();
            let target = folder.path().join("out");
            fs::write(&target, b"old contents").unwrap();
            assert!(matches!(
                OutputPlan::check(&target, None, false),
                Err(FormatError::OutputExists(_))
            ));
            let plan = OutputPlan::check(&target, None, true).unwrap();
            let mut output = if named {
                plan.open_named().unwrap()
            } else {
                plan.open().unwrap()
            };
            output.reserve(1 << 20);
            output.file().write_all(b"new").unwrap();
            assert_eq!(fs::read(&target).unwrap(), b"old contents");
            output.commit().unwrap();
            // Trimmed to what was written, and nothing else left.
            assert_eq!(fs::read(&target).unwrap(), b"new");
            assert_eq!(names(folder.path()), ["out"], "named: {named}");
        }
    }

    #[test]
    fn the_named_fallback_is_removed_when_dropped_and_never_clobbers() {
        let folder = tempfile::tempdir().unwrap();
        let target = folder.path().join("out");
        let mut output = OutputPlan::check(&target, None, false)
            .unwrap()
            .open_named()
            .unwrap();
        output.file().write_all(b"partial").unwrap();
        let during = names(folder.path());
        assert_eq!(during.len(), 1);
        assert!(during[0].starts_with(".parcrypt-") && during[0].ends_with(".tmp"));
        drop(output);
        assert!(names(folder.path()).is_empty());
        // A file that appears at the name meanwhile is kept, and the output refused.
        for named in [false, true] {
            let plan = OutputPlan::check(&target, None, false).unwrap();
            let mut output = if named {
                plan.open_named().unwrap()
            } else {
                plan.open().unwrap()
            };
            output.file().write_all(b"late").unwrap();
            fs::write(&target, b"first").unwrap();
            assert!(matches!(output.commit(), Err(FormatError::OutputExists(_))));
            assert_eq!(fs::read(&target).unwrap(), b"first");
            assert_eq!(names(folder.path()), ["out"]);
            fs::remove_file(&target).unwrap();
        }
    }

    #[test]
    fn a_link_is_followed_and_stays_a_link() {
        let folder = tempfile::tempdir().unwrap();
        let target = folder.path().join("target");
        let link = folder.path().join("link");
        let chained = folder.path().join("chained");
        fs::write(&target, b"old").unwrap();
        std::os::unix::fs::symlink("target", &link).unwrap();
        std::os::unix::fs::symlink(&link, &chained).unwrap();
        let plan = OutputPlan::check(&chained, None, true).unwrap();
        assert_eq!(plan.target(), folder.path().join("target"));
        write_and_commit(
            plan.open().unwrap(),
            b"new",
            folder.path(),
            &["chained", "link", "target"],
        );
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(fs::symlink_metadata(&chained)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&target).unwrap(), b"new");
        // A dangling link whose target's folder exists makes the target.
        let dangling = folder.path().join("dangling");
        std::os::unix::fs::symlink("made", &dangling).unwrap();
        let plan = OutputPlan::check(&dangling, None, false).unwrap();
        write_and_commit(
            plan.open().unwrap(),
            b"made",
            folder.path(),
            &["chained", "dangling", "link", "target"],
        );
        assert_eq!(fs::read(folder.path().join("made")).unwrap(), b"made");
        // One whose target's folder is missing is refused.
        let nowhere = folder.path().join("nowhere");
        std::os::unix::fs::symlink("missing/file", &nowhere).unwrap();
        assert!(matches!(
            OutputPlan::check(&nowhere, None, true),
            Err(FormatError::DanglingLink { .. })
        ));
        // A loop is refused too.
        let loop_link = folder.path().join("loop");
        std::os::unix::fs::symlink("loop", &loop_link).unwrap();
        assert!(matches!(
            OutputPlan::check(&loop_link, None, true),
            Err(FormatError::OpenOutput { .. })
        ));
    }

    #[test]
    fn refusals_come_at_the_check() {
        let folder = tempfile::tempdir().unwrap();
        let input = folder.path().join("input");
        fs::write(&input, b"x").unwrap();
        let metadata = fs::metadata(&input).unwrap();
        let link = folder.path().join("link");
        std::os::unix::fs::symlink("input", &link).unwrap();
        for target in [&input, &link] {
            assert!(matches!(
                OutputPlan::check(target, Some(&metadata), true),
                Err(FormatError::OutputIsInput(_))
            ));
        }
        assert!(matches!(
            OutputPlan::check(folder.path(), None, true),
            Err(FormatError::OutputIsFolder(_))
        ));
        assert!(matches!(
            OutputPlan::check(&folder.path().join("no/such"), None, true),
            Err(FormatError::OutputFolderMissing { .. })
        ));
        assert!(names(folder.path()) == ["input", "link"]);
    }

    #[test]
    fn a_device_is_written_in_place() {
        let null = Path::new("/dev/null");
        let is_device = |path: &Path| {
            use std::os::unix::fs::FileTypeExt;
            fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_char_device())
        };
        if !is_device(null) {
            println!("SKIPPED: /dev/null is not a character device here");
            return;
        }
        for replace in [false, true] {
            let plan = OutputPlan::check(null, None, replace).unwrap();
            assert!(plan.in_place());
            let mut output = plan.open().unwrap();
            output.reserve(1 << 20);
            output.file().write_all(b"gone").unwrap();
            output.commit().unwrap();
            assert!(is_device(null));
        }
    }
}
