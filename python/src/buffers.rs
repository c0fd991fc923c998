//! Python buffers as Rust slices, without copying: anything with the buffer protocol
//! (bytes, bytearray, memoryview, mmap, C-contiguous numpy arrays of any dtype) and CPU
//! arrays that offer only DLPack (through `numpy.from_dlpack`, which copies nothing).
//!
//! A slice lives as long as the `PyUntypedBuffer` it came from, which holds the exporter's
//! buffer (a bytearray cannot be resized while one is held). As in every C extension that
//! releases the GIL, another Python thread that writes into the same buffer meanwhile
//! races with the engine; parcrypt never relies on the bytes staying put for memory safety.

use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString, PyType};
use zeroize::Zeroizing;

use crate::errors::Error;

/// DLPack's device types that live in host memory: `kDLCPU`, `kDLCUDAHost`, `kDLROCMHost`.
pub const HOST_DEVICE_TYPES: [i64; 3] = [1, 3, 11];
/// DLPack's names for the device types parcrypt may see.
pub fn device_name(device_type: i64) -> &'static str {
    match device_type {
        2 => "a CUDA device",
        13 => "CUDA managed memory",
        4 => "an OpenCL device",
        7 => "a Vulkan device",
        8 => "a Metal device",
        10 => "a ROCm device",
        14 => "a oneAPI device",
        _ => "a device that is not the CPU",
    }
}

/// A buffer the engine reads.
pub struct Input {
    buffer: PyUntypedBuffer,
    /// Whether the caller gave a numpy array (the result is one too).
    pub numpy: bool,
}

impl Input {
    /// `object`'s bytes: a buffer, or a CPU DLPack array.
    pub fn get(object: &Bound<'_, PyAny>) -> PyResult<Input> {
        let (buffer, numpy) = match buffer_of(object) {
            Ok(buffer) => (buffer, is_numpy(object)),
            Err(error) => match dlpack_host_array(object)? {
                Some(array) => (PyUntypedBuffer::get(&array)?, true),
                None if object.is_instance_of::<PyString>() => {
                    return Err(PyTypeError::new_err(
                        "data must be bytes-like (bytes, bytearray, memoryview, a numpy array), not str: encode it first",
                    ))
                }
                None => {
                    return Err(PyTypeError::new_err(format!(
                        "data must be bytes-like or an array with __dlpack__, not {} ({error})",
                        object.get_type().name()?
                    )))
                }
            },
        };
        if !buffer.is_c_contiguous() {
            return Err(PyValueError::new_err(
                "the buffer is not C-contiguous (copy it first, e.g. numpy.ascontiguousarray)",
            ));
        }
        Ok(Input { buffer, numpy })
    }

    /// Where the bytes start.
    pub fn address(&self) -> usize {
        self.buffer.buf_ptr() as usize
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        let length = self.buffer.len_bytes();
        if length == 0 {
            return &[];
        }
        // SAFETY: the exporter promises `len_bytes` readable bytes at `buf_ptr` (C-contiguous,
        // checked in `get`) for as long as the buffer is held, and `self` holds it for the
        // slice's lifetime. u8 has no alignment or validity requirement.
        unsafe { std::slice::from_raw_parts(self.buffer.buf_ptr().cast::<u8>(), length) }
    }
}

/// Key bytes from a bytes-like object, copied into memory wiped when dropped; `what` names
/// the argument (`key`). A `str` is refused with a `TypeError`, even one of hex digits:
/// decoding text that merely looks like hex would turn a typo or a passphrase given as
/// `key=` into a key without a word (issue 31 finding 7).
pub fn key_bytes(what: &str, value: &Bound<'_, PyAny>) -> PyResult<Zeroizing<Vec<u8>>> {
    if value.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be bytes-like (bytes, bytearray, memoryview), not str: for hex digits give bytes.fromhex(...)"
        )));
    }
    Ok(Zeroizing::new(Input::get(value)?.bytes().to_vec()))
}

/// A writable buffer the engine writes into: the caller's `out=`, or a new bytes object or
/// numpy array.
pub struct Output {
    // Held so that the exporter keeps the memory (dropped after the slices).
    _buffer: Option<PyUntypedBuffer>,
    address: *mut u8,
    length: usize,
}

impl Output {
    /// The caller's writable buffer.
    pub fn get(object: &Bound<'_, PyAny>) -> PyResult<Output> {
        let buffer = buffer_of(object).map_err(|error| {
            PyTypeError::new_err(format!(
                "out must be a writable buffer (bytearray, memoryview, numpy array, mmap): {error}"
            ))
        })?;
        if buffer.readonly() {
            return Err(PyTypeError::new_err(
                "out is read-only: give a writable buffer (bytearray, a writable numpy array)",
            ));
        }
        if !buffer.is_c_contiguous() {
            return Err(PyValueError::new_err("out is not C-contiguous"));
        }
        Ok(Output {
            address: buffer.buf_ptr().cast::<u8>(),
            length: buffer.len_bytes(),
            _buffer: Some(buffer),
        })
    }

    /// Where the bytes start.
    pub fn address(&self) -> usize {
        self.address as usize
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.length
    }

    /// The bytes, to write into.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        if self.length == 0 {
            return &mut [];
        }
        // SAFETY: `address` is `length` writable bytes: a writable C-contiguous buffer held
        // by `self.buffer` (checked in `get`), or a new bytes object or numpy array that no
        // other code has seen yet (see `new_bytes` and `new_array`; `self` keeps them alive
        // through the caller's reference). Its memory may be uninitialised, and the engine
        // writes every byte it later reads or hands back. `&mut self` makes this the only
        // slice of it.
        unsafe { std::slice::from_raw_parts_mut(self.address, self.length) }
    }
}

/// A new bytes object of `length` bytes whose content the caller writes, and its buffer.
pub fn new_bytes(py: Python<'_>, length: usize) -> PyResult<(Bound<'_, PyBytes>, Output)> {
    let size =
        isize::try_from(length).map_err(|_| PyValueError::new_err("the output is too large"))?;
    // SAFETY: a null source asks CPython for an uninitialised bytes object of `size` bytes,
    // returned as a new reference (or null with an exception set, which
    // `from_owned_ptr_or_err` turns into the error).
    let object = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), size),
        )?
    };
    let bytes = object.cast_into::<PyBytes>()?;
    // SAFETY: `bytes` is a bytes object; its content is `size` bytes, writable until the
    // object is shared (it is not: only this function has it).
    let address = unsafe { pyo3::ffi::PyBytes_AsString(bytes.as_ptr()) }.cast::<u8>();
    if address.is_null() {
        return Err(PyErr::fetch(py));
    }
    Ok((
        bytes,
        Output {
            _buffer: None,
            address,
            length,
        },
    ))
}

/// A new numpy uint8 array of `length` bytes (`numpy.empty`), and its buffer.
pub fn new_array(py: Python<'_>, length: usize) -> PyResult<(Bound<'_, PyAny>, Output)> {
    // Looked up once: importing numpy on every call (through the import machinery, though
    // it is loaded) cost more than making the array.
    static EMPTY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    static UINT8: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let empty = EMPTY.import(py, "numpy", "empty")?;
    let array = empty.call1((length, UINT8.import(py, "numpy", "uint8")?))?;
    let output = Output::get(&array)?;
    Ok((array, output))
}

/// `object`'s buffer. Some exporters (ctypes arrays) give no strides, which PyO3 wants:
/// a memoryview of them gives the same memory with strides.
fn buffer_of(object: &Bound<'_, PyAny>) -> PyResult<PyUntypedBuffer> {
    PyUntypedBuffer::get(object).or_else(|error| match PyMemoryView::from(object) {
        Ok(view) => PyUntypedBuffer::get(&view),
        Err(_) => Err(error),
    })
}

/// Whether `object` is a numpy array (the result then is one too).
fn is_numpy(object: &Bound<'_, PyAny>) -> bool {
    // The common inputs first, without making strings of the type's name.
    if object.is_instance_of::<PyBytes>()
        || object.is_instance_of::<PyByteArray>()
        || object.is_instance_of::<PyMemoryView>()
    {
        return false;
    }
    // numpy's array type, once an array has been seen (numpy is not imported for this).
    static NDARRAY: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let kind = object.get_type();
    if NDARRAY
        .get(object.py())
        .is_some_and(|ndarray| kind.is(ndarray))
    {
        return true;
    }
    let found = kind.name().is_ok_and(|name| name == "ndarray")
        && kind.module().is_ok_and(|module| module == "numpy");
    if found {
        // Another thread may have set it first: the same type.
        let _ = NDARRAY.set(object.py(), kind.unbind());
    }
    found
}

/// For an object without the buffer protocol but with `__dlpack__`: the same memory as a
/// numpy array when it is in host memory (`numpy.from_dlpack` copies nothing); an error
/// saying why when it is on a device; `None` for anything else.
fn dlpack_host_array<'py>(object: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    if !object.hasattr("__dlpack_device__")? {
        return Ok(None);
    }
    let (device_type, device_id): (i64, i64) =
        object.call_method0("__dlpack_device__")?.extract()?;
    if HOST_DEVICE_TYPES.contains(&device_type) {
        let numpy = object.py().import("numpy").map_err(|_| {
            Error::new_err("a DLPack array in host memory needs numpy to be read without copying; install numpy")
        })?;
        return Ok(Some(numpy.call_method1("from_dlpack", (object,))?));
    }
    Err(crate::gpu_arrays::unsupported(
        device_name(device_type),
        device_id,
    ))
}
