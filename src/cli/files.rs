//! Opening inputs and outputs so that nothing is lost.
//!
//! The library's [`OutputPlan`] and [`OutputFile`] decide: output to a file is written
//! into an unnamed file in the target's folder and linked into place only when the whole
//! job succeeded, so a failed or interrupted run leaves no partial file; a FIFO or a device
//! is written in place, as stdout is. Nothing is ever held back here: the parcrypt format
//! releases only authenticated chunks, and raw GCM decryption authenticates before it writes.
//! Neither a file nor stdout may be the input file.

use std::fs::Metadata;
use std::io::{self, Read, Write};

use std::path::Path;

use parcrypt::errors::FormatError;
use parcrypt::files::{self as file, OutputFile, OutputPlan};

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

pub use parcrypt::files::plain;

/// The input's metadata: of the file, or of stdin for `None` or `-`.
fn input_metadata(input: Option<&Path>) -> Option<Metadata> {
    match input {
        Some(path) if path != Path::new("-") => std::fs::metadata(path).ok(),
        _ => file::stdin_metadata(),
    }
}

/// Checks where output goes before anything is asked or derived: a file target by the
/// library's [`OutputPlan::check`], stdout (`None` or `-`) for being the input file.
pub fn check_output(
    target: Option<&Path>,
    input: Option<&Path>,
    overwrite: bool,
) -> Result<(), Failure> {
    plan_output(target, input, overwrite).map(drop)
}

/// Whether output to `target` goes into a file of its own that a failed run deletes (an
/// unnamed or temporary file linked into place on success), not to stdout, a FIFO or a
/// device, which keep what they were given; refusals as [`check_output`] says.
pub fn output_is_discardable(
    target: Option<&Path>,
    input: Option<&Path>,
    overwrite: bool,
) -> Result<bool, Failure> {
    Ok(plan_output(target, input, overwrite)?.is_some_and(|plan| !plan.in_place()))
}

/// The plan for a file target, `None` for stdout; refusals as [`check_output`] says.
fn plan_output(
    target: Option<&Path>,
    input: Option<&Path>,
    overwrite: bool,
) -> Result<Option<OutputPlan>, Failure> {
    let input = input_metadata(input);
    let target = match target {
        Some(path) if path != Path::new("-") => path,
        _ => {
            file::check_stdout(input.as_ref())?;
            return Ok(None);
        }
    };
    match OutputPlan::check(target, input.as_ref(), overwrite) {
        Ok(plan) => Ok(Some(plan)),
        Err(FormatError::OutputExists(path)) => Err(exists(&path)),
        Err(error) => Err(error.into()),
    }
}

fn exists(path: &Path) -> Failure {
    Failure(format!(
        "output '{}' already exists (use --overwrite to replace it)",
        path.display()
    ))
}

pub enum Output {
    Stdout(io::Stdout),
    File(OutputFile),
}

impl Output {
    /// `target`: `None` or `-` means stdout. An existing target is replaced only with
    /// `overwrite`; the input file (`None` or `-`: stdin) is never the output, stdout included.
    pub fn create(
        target: Option<&Path>,
        input: Option<&Path>,
        overwrite: bool,
    ) -> Result<Output, Failure> {
        match plan_output(target, input, overwrite)? {
            None => Ok(Output::Stdout(io::stdout())),
            // PARCRYPT_NO_O_TMPFILE (docs/ENVIRONMENT.md) takes the named-file way, to test it.
            Some(plan) if parcrypt::environment::Settings::from_env()?.named_temporary_file => {
                Ok(Output::File(plan.open_named()?))
            }
            Some(plan) => Ok(Output::File(plan.open()?)),
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
            Output::Stdout(stdout) => stdout,
            Output::File(output) => output.file(),
        }
    }

    /// Makes the output visible: links the unnamed file into place (or renames the
    /// temporary over the target), or flushes stdout. Dropping an `Output` without
    /// committing deletes what it held.
    pub fn commit(self) -> Result<(), Failure> {
        match self {
            Output::Stdout(mut stdout) => stdout
                .flush()
                .map_err(|error| Failure(format!("cannot write output: {}", plain(&error)))),
            Output::File(output) => match output.commit() {
                Err(FormatError::OutputExists(path)) => Err(exists(&path)),
                other => Ok(other?),
            },
        }
    }
}
