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

use parcrypt::parts::{
    self, create_output, prepare_plain_output, prepare_sealed_output, DecryptPlan, EncryptPlan,
    Layout, PartKeys, SourceIdentity,
};
use parcrypt::{Backend, ChunkBatcher};
use parcrypt::{Encryptor, KdfLimits, Salts, StreamOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffers::Input;
use crate::errors;
use crate::files::{parse_format, Secrets};
use crate::runtime;

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

/// What every worker call on one message starts from: its chunk keys (as the plan's bytes),
/// the file's layout and the engine to run on.
struct Message {
    keys: PartKeys,
    layout: Layout,
    runtime: &'static runtime::Runtime,
}

impl Message {
    fn new(
        part_keys: &[u8],
        envelope_bytes: u64,
        plaintext_bytes: u64,
        backend: &str,
        threads: Option<usize>,
    ) -> PyResult<Self> {
        Ok(Message {
            keys: keys(part_keys)?,
            layout: Layout {
                envelope_bytes,
                plaintext_bytes,
            },
            runtime: runtime::runtime(backend, threads)?,
        })
    }

    fn batcher(&self) -> &dyn ChunkBatcher {
        self.runtime.batcher.as_ref()
    }
}

/// `src` opened for reading and `dst`, which must exist (prepared for the parts), for
/// writing.
fn part_files(src: &Path, dst: &Path) -> PyResult<(File, File)> {
    let input = File::open(src).map_err(io_error)?;
    let output = OpenOptions::new().write(true).open(dst).map_err(io_error)?;
    Ok((input, output))
}

/// Creates `path` (new, mode 0600), lets `prepare` fill it, and removes it again when that
/// fails, so that a failed preparation leaves nothing.
fn create_prepared(
    path: &Path,
    prepare: impl FnOnce(&File) -> Result<(), parcrypt::errors::FormatError>,
) -> Result<File, parcrypt::errors::FormatError> {
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
#[pyo3(signature = (src, *, key=None, passphrase=None, format="parcrypt", context=None, salts=None))]
#[allow(clippy::type_complexity)]
pub fn parts_plan_encrypt<'py>(
    py: Python<'py>,
    src: PathBuf,
    key: Option<&Bound<'py, PyAny>>,
    passphrase: Option<&Bound<'py, PyAny>>,
    format: &str,
    context: Option<&Bound<'py, PyAny>>,
    salts: Option<(Vec<u8>, Vec<u8>)>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, u64, SourceTuple)> {
    let secrets = Secrets::get(key, passphrase)?;
    let context = context.map(Input::get).transpose()?;
    let setup = secrets.setup(format, context.as_ref())?;
    // parcrypt.parts.plan_encrypt calls this: the warning points at its caller.
    secrets.warn(py, &setup, 2)?;
    let salts = salts.map(fixed_salts).transpose()?;
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
#[pyo3(signature = (path, *, key=None, passphrase=None, format="parcrypt", context=None))]
pub fn parts_plan_decrypt<'py>(
    py: Python<'py>,
    path: PathBuf,
    key: Option<&Bound<'py, PyAny>>,
    passphrase: Option<&Bound<'py, PyAny>>,
    format: &str,
    context: Option<&Bound<'py, PyAny>>,
) -> PyResult<(u64, u64, Bound<'py, PyBytes>)> {
    let secrets = Secrets::get(key, passphrase)?;
    let context = context.map(Input::get).transpose()?;
    let format = parse_format(format)?;
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

/// Seals chunks `first..end` of the plaintext file `src` into `dst` (made by
/// `parts_prepare_sealed`) at their offsets; returns the plaintext bytes sealed. `src` must
/// still be the file `source` identifies, unwritten since the plan (checked before and
/// after sealing).
#[pyfunction]
#[pyo3(signature = (part_keys, envelope_bytes, plaintext_bytes, source, first, end, src, dst, *, backend="auto", threads=None))]
#[allow(clippy::too_many_arguments)]
pub fn parts_seal(
    py: Python<'_>,
    part_keys: &[u8],
    envelope_bytes: u64,
    plaintext_bytes: u64,
    source: SourceTuple,
    first: u64,
    end: u64,
    src: PathBuf,
    dst: PathBuf,
    backend: &str,
    threads: Option<usize>,
) -> PyResult<u64> {
    let message = Message::new(part_keys, envelope_bytes, plaintext_bytes, backend, threads)?;
    let (input, output) = part_files(&src, &dst)?;
    py.detach(|| {
        parts::seal_part(
            message.batcher(),
            &message.keys,
            &message.layout,
            &source_identity(source),
            first..end,
            &input,
            &output,
            &StreamOptions::default(),
        )
    })
    .map_err(errors::format)
}

/// Opens chunks `first..end` of the encrypted file `src` and writes their plaintext into
/// `dst` (already `plaintext_bytes` long) at their offsets; every chunk authenticates before
/// any of its bytes is written. Returns the plaintext bytes written.
#[pyfunction]
#[pyo3(signature = (part_keys, envelope_bytes, plaintext_bytes, first, end, src, dst, *, backend="auto", threads=None))]
#[allow(clippy::too_many_arguments)]
pub fn parts_open(
    py: Python<'_>,
    part_keys: &[u8],
    envelope_bytes: u64,
    plaintext_bytes: u64,
    first: u64,
    end: u64,
    src: PathBuf,
    dst: PathBuf,
    backend: &str,
    threads: Option<usize>,
) -> PyResult<u64> {
    let message = Message::new(part_keys, envelope_bytes, plaintext_bytes, backend, threads)?;
    let (input, output) = part_files(&src, &dst)?;
    py.detach(|| {
        parts::open_part(
            message.batcher(),
            &message.keys,
            &message.layout,
            first..end,
            &input,
            &output,
            &StreamOptions::default(),
        )
    })
    .map_err(errors::format)
}

/// Decrypts plaintext bytes `start..end` (clamped to the message) of the encrypted file
/// `src` and returns them; only the chunks holding them are read, each authenticated, and
/// the final chunk too when the range reaches the message's end.
#[pyfunction]
#[pyo3(signature = (part_keys, envelope_bytes, plaintext_bytes, start, end, src, *, backend="auto", threads=None))]
#[allow(clippy::too_many_arguments)]
pub fn parts_read<'py>(
    py: Python<'py>,
    part_keys: &[u8],
    envelope_bytes: u64,
    plaintext_bytes: u64,
    start: u64,
    end: u64,
    src: PathBuf,
    backend: &str,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyBytes>> {
    let message = Message::new(part_keys, envelope_bytes, plaintext_bytes, backend, threads)?;
    let input = File::open(&src).map_err(io_error)?;
    let bytes = py
        .detach(|| {
            let mut out = Vec::new();
            parts::open_span(
                message.batcher(),
                &message.keys,
                &message.layout,
                start..end,
                &input,
                &mut out,
                &StreamOptions::default(),
            )
            .map(|_| out)
        })
        .map_err(errors::format)?;
    Ok(PyBytes::new(py, &bytes))
}

/// Encrypts `src` into `dst` on this machine, through the same streaming pipeline as
/// `parcrypt encrypt` (`Encryptor::encrypt_stream`), with fixed salts: the reference that
/// distributed encryption is compared with, byte for byte. A salt must never repeat under
/// a key: for tests and reproducible comparisons only. Returns the plaintext bytes.
#[pyfunction]
#[pyo3(signature = (src, dst, salts, *, key=None, passphrase=None, format="parcrypt", context=None, backend="auto", threads=None))]
#[allow(clippy::too_many_arguments)]
pub fn parts_encrypt_with_salts(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    salts: (Vec<u8>, Vec<u8>),
    key: Option<&Bound<'_, PyAny>>,
    passphrase: Option<&Bound<'_, PyAny>>,
    format: &str,
    context: Option<&Bound<'_, PyAny>>,
    backend: &str,
    threads: Option<usize>,
) -> PyResult<u64> {
    let secrets = Secrets::get(key, passphrase)?;
    let context = context.map(Input::get).transpose()?;
    let setup = secrets.setup(format, context.as_ref())?;
    let salts = fixed_salts(salts)?;
    let runtime = runtime::runtime(backend, threads)?;
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
            std::io::Write::flush(&mut output).map_err(parcrypt::errors::FormatError::Write)
        })?;
        Ok(done)
    })
    .map_err(errors::format)
}

/// Seals the whole plaintext file `src` into `dst` (one worker, one file) from a plan made
/// elsewhere; `dst` appears only once complete (a file with no name and mode 0600 until
/// then, so a killed worker leaves nothing). `src` must still be the file `source`
/// identifies, unwritten since the plan. Returns the plaintext bytes.
#[pyfunction]
#[pyo3(signature = (part_keys, envelope, plaintext_bytes, source, src, dst, *, overwrite=false, backend="auto", threads=None))]
#[allow(clippy::too_many_arguments)]
pub fn parts_seal_file(
    py: Python<'_>,
    part_keys: &[u8],
    envelope: Vec<u8>,
    plaintext_bytes: u64,
    source: SourceTuple,
    src: PathBuf,
    dst: PathBuf,
    overwrite: bool,
    backend: &str,
    threads: Option<usize>,
) -> PyResult<u64> {
    let envelope_bytes = envelope.len() as u64;
    let message = Message::new(part_keys, envelope_bytes, plaintext_bytes, backend, threads)?;
    py.detach(|| {
        parts::seal_file(
            message.batcher(),
            &message.keys,
            &envelope,
            &message.layout,
            &source_identity(source),
            &src,
            &dst,
            overwrite,
            &StreamOptions::default(),
        )
    })
    .map_err(errors::format)
}

/// Opens the whole encrypted file `src` into `dst` (one worker, one file) from a plan made
/// elsewhere; `dst` appears only once every chunk authenticated. Returns the plaintext
/// bytes.
#[pyfunction]
#[pyo3(signature = (part_keys, envelope_bytes, plaintext_bytes, src, dst, *, overwrite=false, backend="auto", threads=None))]
#[allow(clippy::too_many_arguments)]
pub fn parts_open_file(
    py: Python<'_>,
    part_keys: &[u8],
    envelope_bytes: u64,
    plaintext_bytes: u64,
    src: PathBuf,
    dst: PathBuf,
    overwrite: bool,
    backend: &str,
    threads: Option<usize>,
) -> PyResult<u64> {
    let message = Message::new(part_keys, envelope_bytes, plaintext_bytes, backend, threads)?;
    py.detach(|| {
        parts::open_file(
            message.batcher(),
            &message.keys,
            &message.layout,
            &src,
            &dst,
            overwrite,
            &StreamOptions::default(),
        )
    })
    .map_err(errors::format)
}
