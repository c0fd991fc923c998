//! `parcrypt.Cipher`: one suite and key on a shared engine (keyed once: the key schedule and
//! GCM's powers of H), with an IV given once or with each message, for whole messages in
//! memory, with the same bytes as `parcrypt raw`.

use parcrypt::errors::JobError;
use parcrypt::hazmat::{Cipher as OneMessage, Direction, KeyedCipher};
use parcrypt::secrets::decode_hex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;
use zeroize::Zeroizing;

use crate::buffers::{new_array, new_bytes, Input, Output};
use crate::runtime::{keyed_repr, run_message, suite, Keying};
use crate::{errors, gpu_arrays};

/// A cipher suite (such as `"aes-128-gcm"`) and a key on an engine, keyed once, with an
/// IV given here, with each message (`iv=`), or both (the message's wins).
///
/// `encrypt` and `decrypt` each run one whole message, as `parcrypt raw` does: ECB and CBC
/// add PKCS#7 padding (unless `padding=False`), CTR counts on the whole IV as one
/// big-endian number, GCM appends the 16-byte tag and checks it before releasing anything.
/// The IV given here encrypts one message: a second `encrypt` without `iv=` raises
/// `parcrypt.Error` (decryption may use it again). For many messages, use `parcrypt.Aead`,
/// which draws a fresh nonce for each, or give each message its own `iv=` (the key schedule
/// and GCM's powers of H are made once, here). GCM IVs shorter than 12 bytes need
/// `allow_short_gcm_iv=True`.
#[pyclass(module = "parcrypt", name = "Cipher", frozen)]
pub struct Cipher {
    keyed: KeyedCipher,
    /// The IV given at creation, for messages that bring none: it encrypts one message.
    creation: Option<OneMessage>,
    /// The suite's name, such as `aes-128-gcm`.
    #[pyo3(get)]
    name: String,
    /// The backend asked for (its name in lower case).
    #[pyo3(get)]
    backend: &'static str,
}

/// Where a message's IV comes from: the call's `iv=`, or the cipher's creation IV, which is
/// spent by the one encryption it may run.
pub(crate) enum IvSource<'a> {
    Given(Option<&'a [u8]>),
    Creation(&'a OneMessage),
}

impl IvSource<'_> {
    /// The IV for a message of `length` bytes into `capacity` bytes, spending a creation IV
    /// when encrypting (after the checks that refuse before anything runs).
    pub(crate) fn resolve(
        &self,
        direction: Direction,
        length: usize,
        capacity: usize,
        aad: Option<&[u8]>,
    ) -> Result<Option<&[u8]>, JobError> {
        match (self, direction) {
            (IvSource::Given(iv), _) => Ok(*iv),
            (IvSource::Creation(cipher), Direction::Encrypt) => {
                cipher.iv_for_encryption(length, capacity, aad)
            }
            (IvSource::Creation(cipher), Direction::Decrypt) => Ok(cipher.iv()),
        }
    }
}

/// A message's own IV: a caller's buffer, read where it is, or hex digits decoded.
enum MessageIv {
    Buffer(Input),
    Decoded(Zeroizing<Vec<u8>>),
}

impl MessageIv {
    fn get(value: &Bound<'_, PyAny>) -> PyResult<MessageIv> {
        if value.is_instance_of::<PyString>() {
            return secret_bytes("iv", value).map(MessageIv::Decoded);
        }
        Input::get(value).map(MessageIv::Buffer)
    }

    fn bytes(&self) -> &[u8] {
        match self {
            MessageIv::Buffer(input) => input.bytes(),
            MessageIv::Decoded(bytes) => bytes,
        }
    }
}

/// IV bytes: a bytes-like object, or a string of hex digits as the CLI takes them (a key
/// must be bytes-like: `buffers::key_bytes`).
fn secret_bytes(what: &str, value: &Bound<'_, PyAny>) -> PyResult<Zeroizing<Vec<u8>>> {
    if let Ok(text) = value.cast::<PyString>() {
        let decoded = decode_hex(what, text.to_str()?)
            .map_err(|error| PyValueError::new_err(error.to_string()))?;
        return Ok(Zeroizing::new(decoded.to_vec()));
    }
    let input = Input::get(value)?;
    Ok(Zeroizing::new(input.bytes().to_vec()))
}

#[pymethods]
impl Cipher {
    /// `Cipher(name, key, iv=None, *, backend="auto", threads=None, padding=True,
    /// allow_short_gcm_iv=False)`.
    #[new]
    #[pyo3(signature = (
        name, key, iv=None, *, backend="auto", threads=None, padding=true,
        allow_short_gcm_iv=false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &str,
        key: &Bound<'_, PyAny>,
        iv: Option<&Bound<'_, PyAny>>,
        backend: &str,
        threads: Option<usize>,
        padding: bool,
        allow_short_gcm_iv: bool,
    ) -> PyResult<Self> {
        let keying = Keying::new(py, suite(name)?, key, backend, threads)?;
        let iv = iv.map(|iv| secret_bytes("iv", iv)).transpose()?;
        let keyed = KeyedCipher::new(keying.engine, keying.spec, &keying.key)
            .map_err(errors::job)?
            .padding(padding)
            .allow_short_gcm_iv(allow_short_gcm_iv);
        let creation = iv
            .map(|iv| OneMessage::from_keyed(keyed.clone(), Some(&iv)))
            .transpose()
            .map_err(errors::job)?;
        Ok(Cipher {
            keyed,
            creation,
            name: keying.spec.to_string(),
            backend: keying.backend.name(),
        })
    }

    /// Encrypts one message, under `iv` when given (else the `Cipher`'s, which encrypts one
    /// message only). See the package documentation for `data`, `aad` and `out`.
    #[pyo3(signature = (data, aad=None, *, iv=None, out=None))]
    fn encrypt<'py>(
        &self,
        data: &Bound<'py, PyAny>,
        aad: Option<&Bound<'py, PyAny>>,
        iv: Option<&Bound<'py, PyAny>>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.run(Direction::Encrypt, data, aad, iv, out)
    }

    /// Decrypts one message, under `iv` when given (else the `Cipher`'s); for GCM nothing
    /// is returned unless the tag matches, no plaintext is written into `out` before the tag
    /// matched (another thread or a mapping watching it never sees any), and a mismatch
    /// raises `parcrypt.InvalidTag` with `out` zeroed.
    #[pyo3(signature = (data, aad=None, *, iv=None, out=None))]
    fn decrypt<'py>(
        &self,
        data: &Bound<'py, PyAny>,
        aad: Option<&Bound<'py, PyAny>>,
        iv: Option<&Bound<'py, PyAny>>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.run(Direction::Decrypt, data, aad, iv, out)
    }

    /// The most bytes a message of `length` bytes turns into when encrypted (`decrypt`:
    /// decrypted): the size `out` needs.
    #[pyo3(signature = (length, decrypt=false))]
    fn output_length(&self, length: usize, decrypt: bool) -> PyResult<usize> {
        let direction = if decrypt {
            Direction::Decrypt
        } else {
            Direction::Encrypt
        };
        // No buffer is larger than isize::MAX bytes; the sum below stays in range.
        if isize::try_from(length).is_err() {
            return Err(PyValueError::new_err(format!(
                "{length} bytes is larger than any buffer"
            )));
        }
        Ok(self.keyed.max_output_length(direction, length))
    }

    fn __repr__(&self) -> String {
        keyed_repr("Cipher", &self.name, self.backend)
    }
}

impl Cipher {
    fn run<'py>(
        &self,
        direction: Direction,
        data: &Bound<'py, PyAny>,
        aad: Option<&Bound<'py, PyAny>>,
        iv: Option<&Bound<'py, PyAny>>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = data.py();
        let aad_input = aad.map(Input::get).transpose()?;
        let aad = aad_input.as_ref().map(Input::bytes);
        let message_iv = iv.map(MessageIv::get).transpose()?;
        let iv = match (&message_iv, &self.creation) {
            (Some(iv), _) => IvSource::Given(Some(iv.bytes())),
            (None, Some(creation)) => IvSource::Creation(creation),
            (None, None) => IvSource::Given(None),
        };
        if let Some(device) = gpu_arrays::cuda_array(data)? {
            return gpu_arrays::run(py, &self.keyed, &iv, direction, data, device, aad, out);
        }
        let input = Input::get(data)?;
        let length = input.bytes().len();
        let needed = self.keyed.max_output_length(direction, length);
        if let Some(out) = out {
            let mut output = Output::get(out)?;
            let same = output.address() == input.address() && length > 0;
            if !same && overlaps(&input, &output) {
                return Err(PyValueError::new_err(
                    "out overlaps data at another address: give the same buffer (in place) or a separate one",
                ));
            }
            let job = if same {
                Job::InPlace {
                    buffer: output.bytes_mut(),
                    length,
                }
            } else {
                Job::Into {
                    input: input.bytes(),
                    output: output.bytes_mut(),
                }
            };
            let written = self.execute(py, direction, job, &iv, aad)?;
            return Ok(written.into_pyobject(py)?.into_any());
        }
        let (result, mut output) = if input.numpy {
            new_array(py, needed)?
        } else {
            let (bytes, output) = new_bytes(py, needed)?;
            (bytes.into_any(), output)
        };
        // The new object is nobody else's until it is returned: GCM may decrypt into it in
        // one pass (it is dropped, zeroed, when the tag does not match).
        let written = self.execute(
            py,
            direction,
            Job::Unshared {
                input: input.bytes(),
                output: output.bytes_mut(),
            },
            &iv,
            aad,
        )?;
        if written == output.len() {
            Ok(result)
        } else if input.numpy {
            // A view of the first `written` bytes: no copy.
            result.get_item(pyo3::types::PySlice::new(py, 0, written as isize, 1))
        } else {
            // Only padded decryption ends short of the buffer: its length is known only once
            // the last block is decrypted.
            let (shorter, mut copy) = new_bytes(py, written)?;
            copy.bytes_mut()
                .copy_from_slice(&output.bytes_mut()[..written]);
            Ok(shorter.into_any())
        }
    }

    /// The one place that calls the engine's `KeyedCipher` for a message.
    fn execute(
        &self,
        py: Python<'_>,
        direction: Direction,
        job: Job<'_>,
        iv: &IvSource<'_>,
        aad: Option<&[u8]>,
    ) -> PyResult<usize> {
        let (size, capacity) = match &job {
            Job::Into { input, output } | Job::Unshared { input, output } => {
                (input.len(), output.len())
            }
            Job::InPlace { length, buffer } => (*length, buffer.len()),
        };
        let work = move || -> Result<usize, JobError> {
            let iv = iv.resolve(direction, size, capacity, aad)?;
            match (job, direction) {
                (
                    Job::Into { input, output } | Job::Unshared { input, output },
                    Direction::Encrypt,
                ) => self.keyed.encrypt_into(iv, input, output, aad),
                (Job::Unshared { input, output }, Direction::Decrypt) => {
                    self.keyed.decrypt_into_unshared(iv, input, output, aad)
                }
                (Job::Into { input, output }, Direction::Decrypt) => {
                    self.keyed.decrypt_into(iv, input, output, aad)
                }
                (Job::InPlace { buffer, length }, Direction::Encrypt) => {
                    self.keyed.encrypt_in_place(iv, buffer, length, aad)
                }
                (Job::InPlace { buffer, length }, Direction::Decrypt) => {
                    self.keyed.decrypt_in_place(iv, buffer, length, aad)
                }
            }
        };
        run_message(py, size, work).map_err(errors::job)
    }
}

/// What the engine runs: `input` into a separate `output` (the caller's, or one this call
/// made that nobody else sees before it returns), or a buffer in place.
enum Job<'a> {
    Into {
        input: &'a [u8],
        output: &'a mut [u8],
    },
    Unshared {
        input: &'a [u8],
        output: &'a mut [u8],
    },
    InPlace {
        buffer: &'a mut [u8],
        length: usize,
    },
}

/// Whether `output` shares any byte with `input`.
fn overlaps(input: &Input, output: &Output) -> bool {
    let length = input.bytes().len();
    let (a, b) = (input.address(), output.address());
    length > 0 && output.len() > 0 && a < b + output.len() && b < a + length
}
