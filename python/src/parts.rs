//! One file in many parts (the format crate's `parts` module), for `parcrypt.parts` and
//! `parcrypt.dask`: a coordinator plans a file once (a passphrase is stretched there), and
//! workers in other processes seal or open chunk ranges in place at their offsets.
//!
//! Everything crosses process boundaries as plain Python values: the layout as two
//! integers, the message's chunk keys as a `bytes` object (`PartKeys::to_bytes`: the AEAD
//! key, base nonce and commitment of this one message, never the passphrase or input key).
//! Those bytes are secret: Python cannot wipe a `bytes` object, so a copy lives until the
//! garbage collector frees it, in every process it was sent to. A plan to seal also carries
//! its source's identity as six integers (`SourceIdentity`: device, inode, size,
//! modification and change times in ns, boot id), which every seal checks.
//!
//! As in the library, a decryption plan authenticates the message's length (the final
//! chunk) before reporting it, and the files these functions create are new (exclusive)
//! and of mode 0600.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use parcrypt::errors::FormatError;
use parcrypt::parts::{
    self, create_output, prepare_plain_output, prepare_sealed_output, DecryptPlan, EncryptPlan,
    Layout, PartKeys, SourceIdentity,
};
use parcrypt::{Backend, ChunkBatcher};
use parcrypt::{Encryptor, Envelope, KdfLimits, Salts, StreamOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::buffers::Input;
use crate::errors;
use crate::files::{parse_format, reads_as_age};
use crate::keys::Direction;
use crate::options::Options;
use crate::runtime::{self, Runtime};

fn keys(part_keys: &[u8]) -> PyResult<PartKeys> {
    PartKeys::from_bytes(part_keys).map_err(|error| PyValueError::new_err(error.to_string()))
}

fn io_error(error: std::io::Error) -> PyErr {
    errors::format(parcrypt::errors::FormatError::Read(error))
}

/// A source identity as Python holds it: `(device, inode, size, mtime_ns, ctime_ns,
/// machine)`.
pub type SourceTuple = (u64, u64, u64, i64, i64, u128);

fn source_tuple(source: &SourceIdentity) -> SourceTuple {
    (
        source.device,
        source.inode,
        source.size,
        source.modified_ns,
        source.changed_ns,
        source.machine,
    )
}

fn source_identity(tuple: SourceTuple) -> SourceIdentity {
    let (device, inode, size, modified_ns, changed_ns, machine) = tuple;
    SourceIdentity {
        device,
        inode,
        size,
        modified_ns,
        changed_ns,
        machine,
    }
}

/// Salts given from Python as `(cobblestone, argon2)`, checked for their lengths.
fn fixed_salts((cobblestone, argon2): (Vec<u8>, Vec<u8>)) -> PyResult<Salts> {
    Ok(Salts {
        cobblestone: cobblestone
            .try_into()
            .map_err(|_| PyValueError::new_err("the Cobblestone salt is 24 bytes"))?,
        argon2: argon2
            .try_into()
            .map_err(|_| PyValueError::new_err("the argon2id salt is 16 bytes"))?,
    })
}

/// Creates `path` (new, mode 0600), lets `prepare` fill it, and removes it again when that
/// fails, so that a failed preparation leaves nothing.
fn create_prepared(
    path: &Path,
    prepare: impl FnOnce(&File) -> Result<(), FormatError>,
) -> Result<File, FormatError> {
    let output = create_output(path)?;
    if let Err(error) = prepare(&output) {
        drop(output);
        let _ = std::fs::remove_file(path);
        return Err(error);
    }
    Ok(output)
}

/// Plans the encryption of the plaintext file `src`: returns `(envelope, part_keys,
/// plaintext_bytes, source)`, the bytes before chunk 0, the message's chunk keys, the file's
/// size and its identity, which every seal checks (the file must not change during the
/// job). `salts` (Cobblestone's 24 bytes, argon2id's 16) fixes the salts for reproducible
/// comparisons only: a salt must never repeat under a key.
#[pyfunction]
#[pyo3(signature = (src, **options))]
#[allow(clippy::type_complexity)]
pub fn parts_plan_encrypt<'py>(
    py: Python<'py>,
    src: PathBuf,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, u64, SourceTuple)> {
    const ACCEPTED: &[&str] = &[
        "key",
        "passphrase",
        "recipients",
        "identities",
        "format",
        "context",
        "salts",
    ];
    let options = Options::take("parts_plan_encrypt", ACCEPTED, options)?;
    let (secrets, context) = options.secrets(py, Direction::Encrypt, 2)?;
    let setup = secrets.setup(&options.format, context.as_ref())?;
    // parcrypt.parts.plan_encrypt calls this: the warning points at its caller.
    secrets.warn(py, &setup, 2)?;
    let salts = options.salts.map(fixed_salts).transpose()?;
    let input = File::open(&src).map_err(io_error)?;
    let plan = py
        .detach(|| match salts {
            Some(salts) => EncryptPlan::with_salts(&setup, secrets.secret(), salts, &input),
            None => EncryptPlan::new(&setup, secrets.secret(), &input),
        })
        .map_err(errors::format)?;
    Ok((
        PyBytes::new(py, &plan.envelope_bytes()),
        PyBytes::new(py, &plan.keys().to_bytes()),
        plan.layout().plaintext_bytes,
        source_tuple(plan.source()),
    ))
}

/// Reads and unlocks the envelope of the encrypted file `path` (a passphrase is stretched
/// here, within the default argon2id budget), measures it and authenticates the length
/// (its final chunk, opened on one CPU thread): returns `(envelope_bytes, plaintext_bytes,
/// part_keys)`. A cut or extended file is refused here.
#[pyfunction]
#[pyo3(signature = (path, **options))]
pub fn parts_plan_decrypt<'py>(
    py: Python<'py>,
    path: PathBuf,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<(u64, u64, Bound<'py, PyBytes>)> {
    const ACCEPTED: &[&str] = &[
        "key",
        "passphrase",
        "recipients",
        "identities",
        "format",
        "context",
    ];
    let options = Options::take("parts_plan_decrypt", ACCEPTED, options)?;
    if reads_as_age(&options.format, &path) {
        return Err(PyValueError::new_err(
            "this is an age file: it is not planned in parts (decrypt it with parcrypt.decrypt_file or parcrypt.open)",
        ));
    }
    // parcrypt.parts.plan_decrypt calls this: a warning points at its caller.
    let (secrets, context) = options.secrets(py, Direction::Decrypt, 2)?;
    let format = parse_format(&options.format)?;
    let input = File::open(&path).map_err(io_error)?;
    // One chunk to open: the sequential CPU path, never a GPU started for it.
    let runtime = runtime::runtime_for(Backend::Seq, None)?;
    let plan = py
        .detach(|| {
            DecryptPlan::new(
                runtime.batcher.as_ref(),
                format,
                secrets.secret(),
                context.as_ref().map_or(&[][..], Input::bytes),
                &KdfLimits::DEFAULT,
                &input,
            )
        })
        .map_err(errors::format)?;
    let layout = plan.layout();
    Ok((
        layout.envelope_bytes,
        layout.plaintext_bytes,
        PyBytes::new(py, &plan.keys().to_bytes()),
    ))
}

/// How many bytes from the start of an encrypted object its plan reads (its envelope: a
/// header with recipients may be up to 4 MiB), told from `head`, the object's first bytes:
/// the library's envelope reader is run over `head` followed by zeros and the bytes it took
/// are counted. A plan of an object read only partly (`parcrypt._store`) must have at least
/// this many of its first bytes.
#[pyfunction]
#[pyo3(signature = (head, format="parcrypt"))]
pub fn parts_envelope_reach(head: &[u8], format: &str) -> PyResult<u64> {
    /// Counts the bytes read through it.
    struct Counting<R> {
        inner: R,
        taken: u64,
    }
    impl<R: std::io::Read> std::io::Read for Counting<R> {
        fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
            let got = self.inner.read(buffer)?;
            self.taken += got as u64;
            Ok(got)
        }
    }
    let format = parse_format(format)?;
    let mut reader = Counting {
        inner: std::io::Read::chain(head, std::io::repeat(0)),
        taken: 0,
    };
    // Whether the bytes parse does not matter here (the plan checks them): only how many
    // the reader asked for.
    let _ = Envelope::read(format, &mut reader);
    Ok(reader.taken)
}

/// The chunk ranges `(first, end)` of `chunks_per_part` chunks that cover a message of
/// `plaintext_bytes`, and the size of its encrypted file: `(ranges, sealed_file_bytes)`.
#[pyfunction]
pub fn parts_layout(
    envelope_bytes: u64,
    plaintext_bytes: u64,
    chunks_per_part: u64,
) -> PyResult<(Vec<(u64, u64)>, u64)> {
    let layout = Layout {
        envelope_bytes,
        plaintext_bytes,
    };
    let total = layout.sealed_file_bytes().map_err(errors::format)?;
    let ranges = layout
        .parts(chunks_per_part)
        .into_iter()
        .map(|range| (range.start, range.end))
        .collect();
    Ok((ranges, total))
}

/// Creates `path` (a new file, mode 0600: an existing one is refused), writes `envelope` at
/// its start and gives it the encrypted file's final length.
#[pyfunction]
pub fn parts_prepare_sealed(
    py: Python<'_>,
    path: PathBuf,
    envelope: Vec<u8>,
    plaintext_bytes: u64,
) -> PyResult<()> {
    let layout = Layout {
        envelope_bytes: envelope.len() as u64,
        plaintext_bytes,
    };
    py.detach(|| {
        create_prepared(&path, |output| {
            prepare_sealed_output(output, &envelope, &layout)
        })
        .map(drop)
    })
    .map_err(errors::format)
}

/// Creates `path` (a new file, mode 0600: an existing one is refused) with the plaintext's
/// length, for the parts to be opened into.
#[pyfunction]
pub fn parts_prepare_plain(py: Python<'_>, path: PathBuf, plaintext_bytes: u64) -> PyResult<()> {
    py.detach(|| {
        create_prepared(&path, |output| {
            // The envelope does not matter to the plaintext's side.
            let layout = Layout {
                envelope_bytes: 0,
                plaintext_bytes,
            };
            prepare_plain_output(output, &layout)
        })
        .map(drop)
    })
    .map_err(errors::format)
}

/// One message's chunks between two files, for the worker calls of `parcrypt.parts`: the
/// message's chunk keys (as the plan's bytes), the file's layout and the engine to run on,
/// the file read (`src`) and the file written (`dst`; none for a read).
#[pyclass(module = "parcrypt", frozen)]
pub struct PartJob {
    keys: PartKeys,
    layout: Layout,
    runtime: &'static Runtime,
    src: PathBuf,
    dst: Option<PathBuf>,
}

impl PartJob {
    /// Runs `work` with the GIL released, on the job's engine, keys and layout.
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce(&dyn ChunkBatcher, &PartKeys, &Layout, &StreamOptions) -> Result<T, FormatError>
            + Send,
    ) -> PyResult<T> {
        let batcher = self.runtime.batcher.as_ref();
        py.detach(|| work(batcher, &self.keys, &self.layout, &StreamOptions::default()))
            .map_err(errors::format)
    }

    fn dst(&self) -> PyResult<&Path> {
        self.dst
            .as_deref()
            .ok_or_else(|| PyValueError::new_err("this part job writes no file"))
    }

    /// `src` opened for reading and `dst`, which must exist (prepared for the parts), for
    /// writing.
    fn part_files(&self) -> PyResult<(File, File)> {
        let input = File::open(&self.src).map_err(io_error)?;
        let output = OpenOptions::new()
            .write(true)
            .open(self.dst()?)
            .map_err(io_error)?;
        Ok((input, output))
    }
}

#[pymethods]
impl PartJob {
    /// `PartJob(part_keys, envelope_bytes, plaintext_bytes, src, dst=None, *,
    /// backend="auto", threads=None)`.
    #[new]
    #[pyo3(signature = (part_keys, envelope_bytes, plaintext_bytes, src, dst=None, *, backend="auto", threads=None))]
    fn new(
        part_keys: &[u8],
        envelope_bytes: u64,
        plaintext_bytes: u64,
        src: PathBuf,
        dst: Option<PathBuf>,
        backend: &str,
        threads: Option<usize>,
    ) -> PyResult<Self> {
        Ok(PartJob {
            keys: keys(part_keys)?,
            layout: Layout {
                envelope_bytes,
                plaintext_bytes,
            },
            runtime: runtime::runtime(backend, threads)?,
            src,
            dst,
        })
    }

    /// Seals chunks `first..end` of the plaintext file `src` into `dst` (made by
    /// `parts_prepare_sealed`) at their offsets; returns the plaintext bytes sealed. `src`
    /// must still be the file `source` identifies, unwritten since the plan (checked before
    /// and after sealing).
    fn seal(&self, py: Python<'_>, source: SourceTuple, first: u64, end: u64) -> PyResult<u64> {
        let (input, output) = self.part_files()?;
        let source = source_identity(source);
        self.run(py, |batcher, keys, layout, options| {
            let chunks = first..end;
            parts::seal_part(
                batcher, keys, layout, &source, chunks, &input, &output, options,
            )
        })
    }

    /// Opens chunks `first..end` of the encrypted file `src` and writes their plaintext into
    /// `dst` (already `plaintext_bytes` long) at their offsets; every chunk authenticates
    /// before any of its bytes is written. Returns the plaintext bytes written.
    fn open(&self, py: Python<'_>, first: u64, end: u64) -> PyResult<u64> {
        let (input, output) = self.part_files()?;
        self.run(py, |batcher, keys, layout, options| {
            parts::open_part(batcher, keys, layout, first..end, &input, &output, options)
        })
    }

    /// Decrypts plaintext bytes `start..end` (clamped to the message) of the encrypted file
    /// `src` and returns them; only the chunks holding them are read, each authenticated,
    /// and the final chunk too when the range reaches the message's end.
    fn read<'py>(&self, py: Python<'py>, start: u64, end: u64) -> PyResult<Bound<'py, PyBytes>> {
        let input = File::open(&self.src).map_err(io_error)?;
        let bytes = self.run(py, |batcher, keys, layout, options| {
            let mut out = Vec::new();
            parts::open_span(batcher, keys, layout, start..end, &input, &mut out, options)
                .map(|_| out)
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Seals the whole plaintext file `src` into `dst` (one worker, one file), `envelope`
    /// first; `dst` appears only once complete (a file with no name and mode 0600 until
    /// then, so a killed worker leaves nothing). `src` must still be the file `source`
    /// identifies, unwritten since the plan. Returns the plaintext bytes.
    #[pyo3(signature = (envelope, source, overwrite=false))]
    fn seal_file(
        &self,
        py: Python<'_>,
        envelope: Vec<u8>,
        source: SourceTuple,
        overwrite: bool,
    ) -> PyResult<u64> {
        let (source, src, dst) = (source_identity(source), &self.src, self.dst()?);
        self.run(py, |batcher, keys, layout, options| {
            parts::seal_file(
                batcher, keys, &envelope, layout, &source, src, dst, overwrite, options,
            )
        })
    }

    /// Opens the whole encrypted file `src` into `dst` (one worker, one file); `dst` appears
    /// only once every chunk authenticated. Returns the plaintext bytes.
    #[pyo3(signature = (overwrite=false))]
    fn open_file(&self, py: Python<'_>, overwrite: bool) -> PyResult<u64> {
        let (src, dst) = (&self.src, self.dst()?);
        self.run(py, |batcher, keys, layout, options| {
            parts::open_file(batcher, keys, layout, src, dst, overwrite, options)
        })
    }
}

/// Encrypts `src` into `dst` on this machine, through the same streaming pipeline as
/// `parcrypt encrypt` (`Encryptor::encrypt_stream`), with fixed salts: the reference that
/// distributed encryption is compared with, byte for byte. A salt must never repeat under
/// a key: for tests and reproducible comparisons only. Returns the plaintext bytes.
#[pyfunction]
#[pyo3(signature = (src, dst, salts, **options))]
pub fn parts_encrypt_with_salts(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    salts: (Vec<u8>, Vec<u8>),
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<u64> {
    const ACCEPTED: &[&str] = &[
        "key",
        "passphrase",
        "recipients",
        "identities",
        "format",
        "context",
        "backend",
        "threads",
    ];
    let options = Options::take("parts_encrypt_with_salts", ACCEPTED, options)?;
    let (secrets, context) = options.secrets(py, Direction::Encrypt, 2)?;
    let setup = secrets.setup(&options.format, context.as_ref())?;
    let salts = fixed_salts(salts)?;
    let runtime = options.runtime()?;
    let mut input = File::open(&src).map_err(io_error)?;
    py.detach(|| {
        let mut done = 0;
        create_prepared(&dst, |output| {
            let mut output = std::io::BufWriter::new(output);
            done = Encryptor::with_salts(&setup, secrets.secret(), salts)?.encrypt_stream(
                runtime.batcher.as_ref(),
                &mut input,
                &mut output,
                &StreamOptions::default(),
            )?;
            std::io::Write::flush(&mut output).map_err(FormatError::Write)
        })?;
        Ok(done)
    })
    .map_err(errors::format)
}
