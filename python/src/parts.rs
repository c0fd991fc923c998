//! One file in many parts (the format crate's `parts` module), for `parcrypt.parts` and
//! `parcrypt.dask`: a coordinator plans a file once (a passphrase is stretched there), and
//! workers in other processes seal or open chunk ranges in place at their offsets.
//!
//! Everything crosses process boundaries as plain Python values: the layout as two
//! integers, the message's chunk keys as a `bytes` object (`PartKeys::to_bytes`: the AEAD
//! key, base nonce and commitment of this one message, never the passphrase or input key).
//! Those bytes are secret: Python cannot wipe a `bytes` object, so a copy lives until the
//! garbage collector frees it, in every process it was sent to.

use std::fs::{File, OpenOptions};
use std::path::PathBuf;

use parcrypt::format::parts::{
    self, prepare_sealed_output, DecryptPlan, EncryptPlan, Layout, PartKeys,
};
use parcrypt::format::{Encryptor, KdfLimits, Salts, Setup, StreamOptions};
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
    errors::format(parcrypt::format::FormatError::Read(error))
}

/// Plans a new file of `plaintext_bytes`: returns `(envelope, part_keys)`, the bytes before
/// chunk 0 and the message's chunk keys. `salts` (Cobblestone's 24 bytes, argon2id's 16)
/// fixes the salts for reproducible comparisons only: a salt must never repeat under a key.
#[pyfunction]
#[pyo3(signature = (plaintext_bytes, *, key=None, passphrase=None, format="parcrypt", context=None, salts=None))]
pub fn parts_plan_encrypt<'py>(
    py: Python<'py>,
    plaintext_bytes: u64,
    key: Option<&Bound<'py, PyAny>>,
    passphrase: Option<&Bound<'py, PyAny>>,
    format: &str,
    context: Option<&Bound<'py, PyAny>>,
    salts: Option<(Vec<u8>, Vec<u8>)>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let secrets = Secrets::get(key, passphrase)?;
    let context = context.map(Input::get).transpose()?;
    let setup = Setup {
        format: parse_format(format)?,
        suite: secrets.suite()?,
        context: context.as_ref().map_or(&[][..], Input::bytes),
        ..Setup::default()
    };
    let salts = match salts {
        None => None,
        Some((cobblestone, argon2)) => Some(Salts {
            cobblestone: cobblestone
                .try_into()
                .map_err(|_| PyValueError::new_err("the Cobblestone salt is 24 bytes"))?,
            argon2: argon2
                .try_into()
                .map_err(|_| PyValueError::new_err("the argon2id salt is 16 bytes"))?,
        }),
    };
    let plan = py
        .detach(|| match salts {
            Some(salts) => {
                EncryptPlan::with_salts(&setup, secrets.secret(), salts, plaintext_bytes)
            }
            None => EncryptPlan::new(&setup, secrets.secret(), plaintext_bytes),
        })
        .map_err(errors::format)?;
    Ok((
        PyBytes::new(py, &plan.envelope_bytes()),
        PyBytes::new(py, &plan.keys().to_bytes()),
    ))
}

/// Reads and unlocks the envelope of the encrypted file `path` (a passphrase is stretched
/// here, within the default argon2id budget) and measures it: returns
/// `(envelope_bytes, plaintext_bytes, part_keys)`.
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
    let plan = py
        .detach(|| {
            DecryptPlan::new(
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

/// Creates (or empties) `path`, writes `envelope` at its start and gives it the encrypted
/// file's final length.
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
        let output = File::create(&path).map_err(parcrypt::format::FormatError::Write)?;
        prepare_sealed_output(&output, &envelope, &layout)
    })
    .map_err(errors::format)
}

/// Seals chunks `first..end` of the plaintext file `src` into `dst` (made by
/// `parts_prepare_sealed`) at their offsets; returns the plaintext bytes sealed.
#[pyfunction]
#[pyo3(signature = (part_keys, envelope_bytes, plaintext_bytes, first, end, src, dst, *, backend="auto", threads=None))]
#[allow(clippy::too_many_arguments)]
pub fn parts_seal(
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
    let keys = keys(part_keys)?;
    let runtime = runtime::runtime(backend, threads)?;
    let layout = Layout {
        envelope_bytes,
        plaintext_bytes,
    };
    let input = File::open(&src).map_err(io_error)?;
    let output = OpenOptions::new()
        .write(true)
        .open(&dst)
        .map_err(io_error)?;
    py.detach(|| {
        parts::seal_part(
            runtime.batcher.as_ref(),
            &keys,
            &layout,
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
    let keys = keys(part_keys)?;
    let runtime = runtime::runtime(backend, threads)?;
    let layout = Layout {
        envelope_bytes,
        plaintext_bytes,
    };
    let input = File::open(&src).map_err(io_error)?;
    let output = OpenOptions::new()
        .write(true)
        .open(&dst)
        .map_err(io_error)?;
    py.detach(|| {
        parts::open_part(
            runtime.batcher.as_ref(),
            &keys,
            &layout,
            first..end,
            &input,
            &output,
            &StreamOptions::default(),
        )
    })
    .map_err(errors::format)
}

/// Decrypts plaintext bytes `start..end` (clamped to the message) of the encrypted file
/// `src` and returns them; only the chunks holding them are read, each authenticated.
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
    let keys = keys(part_keys)?;
    let runtime = runtime::runtime(backend, threads)?;
    let layout = Layout {
        envelope_bytes,
        plaintext_bytes,
    };
    let input = File::open(&src).map_err(io_error)?;
    let bytes = py
        .detach(|| {
            let mut out = Vec::new();
            parts::open_span(
                runtime.batcher.as_ref(),
                &keys,
                &layout,
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
    let setup = Setup {
        format: parse_format(format)?,
        suite: secrets.suite()?,
        context: context.as_ref().map_or(&[][..], Input::bytes),
        ..Setup::default()
    };
    let salts = Salts {
        cobblestone: salts
            .0
            .try_into()
            .map_err(|_| PyValueError::new_err("the Cobblestone salt is 24 bytes"))?,
        argon2: salts
            .1
            .try_into()
            .map_err(|_| PyValueError::new_err("the argon2id salt is 16 bytes"))?,
    };
    let runtime = runtime::runtime(backend, threads)?;
    let mut input = File::open(&src).map_err(io_error)?;
    let mut output = std::io::BufWriter::new(
        File::create(&dst)
            .map_err(parcrypt::format::FormatError::Write)
            .map_err(errors::format)?,
    );
    py.detach(|| {
        let done = Encryptor::with_salts(&setup, secrets.secret(), salts)?.encrypt_stream(
            runtime.batcher.as_ref(),
            &mut input,
            &mut output,
            &StreamOptions::default(),
        )?;
        std::io::Write::flush(&mut output).map_err(parcrypt::format::FormatError::Write)?;
        Ok(done)
    })
    .map_err(errors::format)
}

/// Seals the whole plaintext file `src` into `dst` (one worker, one file) from a plan made
/// elsewhere; `dst` appears only once complete (a file with no name until then, so a killed
/// worker leaves nothing). Returns the plaintext bytes.
#[pyfunction]
#[pyo3(signature = (part_keys, envelope, plaintext_bytes, src, dst, *, overwrite=false, backend="auto", threads=None))]
#[allow(clippy::too_many_arguments)]
pub fn parts_seal_file(
    py: Python<'_>,
    part_keys: &[u8],
    envelope: Vec<u8>,
    plaintext_bytes: u64,
    src: PathBuf,
    dst: PathBuf,
    overwrite: bool,
    backend: &str,
    threads: Option<usize>,
) -> PyResult<u64> {
    let keys = keys(part_keys)?;
    let runtime = runtime::runtime(backend, threads)?;
    let layout = Layout {
        envelope_bytes: envelope.len() as u64,
        plaintext_bytes,
    };
    py.detach(|| {
        parts::seal_file(
            runtime.batcher.as_ref(),
            &keys,
            &envelope,
            &layout,
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
    let keys = keys(part_keys)?;
    let runtime = runtime::runtime(backend, threads)?;
    let layout = Layout {
        envelope_bytes,
        plaintext_bytes,
    };
    py.detach(|| {
        parts::open_file(
            runtime.batcher.as_ref(),
            &keys,
            &layout,
            &src,
            &dst,
            overwrite,
            &StreamOptions::default(),
        )
    })
    .map_err(errors::format)
}
