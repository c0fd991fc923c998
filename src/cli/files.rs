//! Opening inputs and outputs so that nothing is lost.
//!
//! Output to a file goes to a temporary file in the target's folder and is renamed over the
//! target only when the whole job succeeded, so a failed or interrupted run leaves no
//! partial file. Output to stdout can be held in an unnamed temporary file until the job
//! has authenticated (GCM decryption), so no unauthenticated plaintext reaches a pipe.

use std::fs::File;
use std::io::{self, Read, Seek, Write};

use std::path::Path;

use parcrypt_format::file::{self, OutputFile};
use parcrypt_format::FormatError;

use super::Failure;

/// `None` or `-` means standard input.
pub fn open_input(path: Option<&Path>) -> Result<Box<dyn Read + Send>, Failure> {
    match path {
        Some(path) if path != Path::new("-") => Ok(Box::new(file::open_input(path)?)),
        _ => Ok(Box::new(io::stdin())),
    }
}

/// The size of a regular input file (`-` is stdin), for progress bars and output buffers.
pub fn file_size(input: Option<&Path>) -> Option<u64> {
    let path = input.filter(|path| *path != Path::new("-"))?;
    std::fs::metadata(path)
        .ok()
        .filter(|metadata| metadata.is_file())
        .map(|metadata| metadata.len())
}

pub use parcrypt_format::error::plain;

pub enum Output {
    Stdout {
        held: Option<File>,
        stdout: io::Stdout,
    },
    File(OutputFile),
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
        let input = input.filter(|path| *path != Path::new("-"));
        match OutputFile::create(target, input, replace) {
            Ok(output) => Ok(Output::File(output)),
            Err(FormatError::OutputExists(path)) => Err(Failure(format!(
                "output '{}' already exists (use --force to replace it)",
                path.display()
            ))),
            Err(error) => Err(error.into()),
        }
    }

    /// Reserves `bytes` of disk for a file output before writing, so that the writer stage
    /// copies into allocated pages instead of allocating page by page (on tmpfs that is most
    /// of a write's cost). [`Output::commit`] trims the file to what was written. Best
    /// effort: a file system that cannot preallocate just allocates as it goes.
    pub fn reserve(&mut self, bytes: u64) {
        if let Output::File(output) = self {
            output.reserve(bytes);
        }
    }

    pub fn writer(&mut self) -> &mut (dyn Write + Send) {
        match self {
            Output::Stdout {
                held: Some(file), ..
            } => file,
            Output::Stdout { held: None, stdout } => stdout,
            Output::File(output) => output.file(),
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
            Output::File(output) => Ok(output.commit()?),
        }
    }
}
