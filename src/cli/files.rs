//! Opening inputs and outputs so that nothing is lost.
//!
//! Output to a file goes to a temporary file in the target's folder and is renamed over the
//! target only when the whole job succeeded, so a failed or interrupted run leaves no
//! partial file. Output to stdout can be held in an unnamed temporary file until the job
//! has authenticated (GCM decryption), so no unauthenticated plaintext reaches a pipe.

use std::fs::File;
use std::io::{self, Read, Seek, Write};

use std::path::{Path, PathBuf};

use super::Failure;

/// `None` or `-` means standard input.
pub fn open_input(path: Option<&Path>) -> Result<Box<dyn Read + Send>, Failure> {
    match path {
        None => Ok(Box::new(io::stdin())),
        Some(path) if path == Path::new("-") => Ok(Box::new(io::stdin())),
        Some(path) => {
            let file = File::open(path).map_err(|error| {
                Failure(format!(
                    "cannot open input '{}': {}",
                    path.display(),
                    plain(&error)
                ))
            })?;
            if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
                return Err(Failure(format!("input '{}' is a folder", path.display())));
            }
            Ok(Box::new(file))
        }
    }
}

/// The OS error text without Rust's " (os error N)" suffix.
pub fn plain(error: &io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}

pub enum Output {
    Stdout {
        held: Option<File>,
        stdout: io::Stdout,
    },
    File {
        temporary: tempfile::NamedTempFile,
        target: PathBuf,
        replace: bool,
    },
}

impl Output {
    /// `target`: `None` or `-` means stdout. `hold` keeps stdout output back until
    /// [`Output::commit`]. An existing target is replaced only with `replace`; the input
    /// file is never the output.
    pub fn create(
        target: Option<&Path>,
        input: Option<&Path>,
        replace: bool,
        hold: bool,
    ) -> Result<Output, Failure> {
        let target = match target {
            Some(path) if path != Path::new("-") => path,
            _ => {
                let held = if hold {
                    Some(tempfile::tempfile().map_err(|error| {
                        Failure(format!(
                            "cannot create a temporary file to hold output: {}",
                            plain(&error)
                        ))
                    })?)
                } else {
                    None
                };
                return Ok(Output::Stdout {
                    held,
                    stdout: io::stdout(),
                });
            }
        };
        if let Ok(existing) = std::fs::metadata(target) {
            if existing.is_dir() {
                return Err(Failure(format!(
                    "output '{}' is a folder",
                    target.display()
                )));
            }
            if let Some(input) = input.filter(|p| *p != Path::new("-")) {
                if same_file(input, target) {
                    return Err(Failure(format!(
                        "output '{}' is the input file; write to another file",
                        target.display()
                    )));
                }
            }
            if !replace {
                return Err(Failure(format!(
                    "output '{}' already exists (use --force to replace it)",
                    target.display()
                )));
            }
        }
        let folder = match target.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let temporary = tempfile::Builder::new()
            .prefix(".parcrypt-")
            .suffix(".tmp")
            .tempfile_in(folder)
            .map_err(|error| {
                Failure(format!(
                    "cannot write in '{}': {}",
                    folder.display(),
                    plain(&error)
                ))
            })?;
        Ok(Output::File {
            temporary,
            target: target.to_path_buf(),
            replace,
        })
    }

    /// Reserves `bytes` of disk for a file output before writing, so that the writer stage
    /// copies into allocated pages instead of allocating page by page (on tmpfs that is most
    /// of a write's cost). [`Output::commit`] trims the file to what was written. Best
    /// effort: a file system that cannot preallocate just allocates as it goes.
    pub fn reserve(&mut self, bytes: u64) {
        if let Output::File { temporary, .. } = self {
            use std::os::unix::io::AsRawFd;
            let Ok(length) = libc::off_t::try_from(bytes) else {
                return;
            };
            // SAFETY: the descriptor belongs to `temporary`, which is open for writing and
            // outlives the call; fallocate reads no memory of ours.
            unsafe { libc::fallocate(temporary.as_file().as_raw_fd(), 0, 0, length) };
        }
    }

    pub fn writer(&mut self) -> &mut (dyn Write + Send) {
        match self {
            Output::Stdout {
                held: Some(file), ..
            } => file,
            Output::Stdout { held: None, stdout } => stdout,
            Output::File { temporary, .. } => temporary.as_file_mut(),
        }
    }

    /// Makes the output visible: renames the temporary file over the target, or copies the
    /// held output to stdout. Dropping an `Output` without committing deletes what it held.
    pub fn commit(self) -> Result<(), Failure> {
        match self {
            Output::Stdout {
                held: None,
                mut stdout,
            } => stdout
                .flush()
                .map_err(|error| Failure(format!("cannot write output: {}", plain(&error)))),
            Output::Stdout {
                held: Some(mut file),
                ..
            } => {
                file.rewind().map_err(|error| {
                    Failure(format!("cannot read held output: {}", plain(&error)))
                })?;
                let mut stdout = io::stdout().lock();
                io::copy(&mut file, &mut stdout)
                    .and_then(|_| stdout.flush())
                    .map_err(|error| Failure(format!("cannot write output: {}", plain(&error))))
            }
            Output::File {
                temporary,
                target,
                replace,
            } => {
                // Drop whatever `reserve` allocated beyond the written output.
                let written = temporary.as_file().stream_position().map_err(|error| {
                    Failure(format!(
                        "cannot write '{}': {}",
                        target.display(),
                        plain(&error)
                    ))
                })?;
                temporary.as_file().set_len(written).map_err(|error| {
                    Failure(format!(
                        "cannot write '{}': {}",
                        target.display(),
                        plain(&error)
                    ))
                })?;
                temporary.as_file().sync_all().map_err(|error| {
                    Failure(format!(
                        "cannot write '{}': {}",
                        target.display(),
                        plain(&error)
                    ))
                })?;
                let persisted = if replace {
                    temporary.persist(&target).map(drop)
                } else {
                    temporary.persist_noclobber(&target).map(drop)
                };
                persisted.map_err(|error| {
                    Failure(format!(
                        "cannot create '{}': {}",
                        target.display(),
                        plain(&error.error)
                    ))
                })
            }
        }
    }
}

fn same_file(first: &Path, second: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(first), std::fs::metadata(second)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}
