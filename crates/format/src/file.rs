//! Files in, files out, so that nothing is lost: output goes to a temporary file beside
//! the destination and is renamed over it only when the whole job succeeded (after the
//! data reached the disk), so a failed, refused or interrupted run leaves no partial file,
//! and an existing file is replaced only when asked.
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

use std::fs::File;
use std::io::Seek;
use std::path::{Path, PathBuf};

use crate::chunks::ChunkBatcher;
use crate::error::FormatError;
use crate::message::{Format, Secret, Setup};
use crate::reader::Decryptor;
use crate::stream::StreamOptions;
use crate::writer::Encryptor;

/// How [`encrypt_file`] and [`decrypt_file`] treat the destination and report progress.
#[derive(Clone, Copy, Default)]
pub struct FileOptions<'a> {
    /// Replace a destination that exists (never the source itself).
    pub replace: bool,
    /// Batch size, progress and stage times of the streaming pipeline.
    pub stream: StreamOptions<'a>,
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

/// An output file being written: a temporary file in the destination's folder, renamed
/// over the destination by [`OutputFile::commit`]. Dropped without a commit, it is deleted.
pub struct OutputFile {
    temporary: tempfile::NamedTempFile,
    target: PathBuf,
    replace: bool,
}

impl OutputFile {
    /// Starts an output for `target`. An existing target is refused unless `replace`, and
    /// always when it is a folder or the file at `input`.
    pub fn create(
        target: &Path,
        input: Option<&Path>,
        replace: bool,
    ) -> Result<OutputFile, FormatError> {
        if let Ok(existing) = std::fs::metadata(target) {
            if existing.is_dir() {
                return Err(FormatError::OutputIsFolder(target.to_path_buf()));
            }
            if input.is_some_and(|input| same_file(input, target)) {
                return Err(FormatError::OutputIsInput(target.to_path_buf()));
            }
            if !replace {
                return Err(FormatError::OutputExists(target.to_path_buf()));
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
            .map_err(|error| FormatError::CreateTemporary {
                folder: folder.to_path_buf(),
                error,
            })?;
        Ok(OutputFile {
            temporary,
            target: target.to_path_buf(),
            replace,
        })
    }

    /// The temporary file, to write the output into.
    pub fn file(&mut self) -> &mut File {
        self.temporary.as_file_mut()
    }

    /// Reserves `bytes` of disk before writing, so that writing copies into allocated pages
    /// instead of allocating page by page (on tmpfs that is most of a write's cost); the
    /// commit trims the file to what was written. Best effort: a file system that cannot
    /// preallocate allocates as it goes.
    pub fn reserve(&mut self, bytes: u64) {
        parcrypt_sys::reserve_file_space(self.temporary.as_file(), bytes);
    }

    /// Makes the output visible: trims the file to what was written (space reserved
    /// beyond it is released), flushes it to disk, and renames it over the target.
    pub fn commit(self) -> Result<(), FormatError> {
        let finish = |error| FormatError::FinishOutput {
            path: self.target.clone(),
            error,
        };
        let mut file = self.temporary.as_file();
        let written = file.stream_position().map_err(finish)?;
        file.set_len(written).map_err(finish)?;
        file.sync_all().map_err(finish)?;
        let persisted = if self.replace {
            self.temporary.persist(&self.target).map(drop)
        } else {
            self.temporary.persist_noclobber(&self.target).map(drop)
        };
        persisted.map_err(|error| FormatError::PersistOutput {
            path: self.target,
            error: error.error,
        })
    }
}

fn same_file(first: &Path, second: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(first), std::fs::metadata(second)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
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
        let mut input = open_input(source)?;
        let mut output = OutputFile::create(destination, Some(source), options.replace)?;
        let plaintext = self.encrypt_stream(batcher, &mut input, output.file(), &options.stream)?;
        output.commit()?;
        Ok(plaintext)
    }
}

/// Encrypts the file `source` into `destination` under `secret`, as `parcrypt encrypt`
/// does; returns the plaintext bytes. See the [module](self) for an example.
pub fn encrypt_file(
    batcher: &dyn ChunkBatcher,
    setup: &Setup<'_>,
    secret: Secret<'_>,
    source: &Path,
    destination: &Path,
    options: &FileOptions<'_>,
) -> Result<u64, FormatError> {
    Encryptor::new(setup, secret)?.encrypt_file(batcher, source, destination, options)
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
    let unlocked = Decryptor::new(format, open_input(source)?)?.unlock(secret, context)?;
    let mut output = OutputFile::create(destination, Some(source), options.replace)?;
    let plaintext = unlocked.decrypt_to(batcher, output.file(), &options.stream)?;
    output.commit()?;
    Ok(plaintext)
}
