//! Arrays on a CUDA device (DLPack objects on `kDLCUDA` or `kDLCUDAManaged`: CuPy arrays,
//! PyTorch tensors), encrypted where they lie through the engine's
//! [`KeyedCipher::encrypt_on_device`]: no byte goes to the host but a GCM tag.
//!
//! The array is imported with `dlpark` (DLPack's `__dlpack__`, with this device's stream as
//! `stream=` so that the producer orders its pending work before parcrypt's), checked
//! (C-contiguous, whole bytes per element), and lent to the engine as
//! [`ForeignDeviceMemory`]. The result goes back on the same device: into the caller's
//! device array with `out=` (in place when it is the same array), or into a new device
//! buffer, a [`DeviceArray`], that `cupy.from_dlpack` and `torch.from_dlpack` take without
//! copying and that frees its memory when the last of them lets go.

use std::ffi::c_void;
use std::sync::Arc;

use dlpark::ffi::{DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned};
use dlpark::metadata::Fixed;
use dlpark::python::{DlpackExporter, DlpackStream, ExportRequest, ImportRequest, StreamArg};
use dlpark::{DlpackFlags, ManagedTensorBase};
use parcrypt::devices::cuda_device_with_cache;
use parcrypt::devices::{CudaDevice, DeviceAllocation, ForeignDeviceMemory};
use parcrypt::hazmat::{Direction, KeyedCipher};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyMemoryView};

use crate::buffers::device_name;
use crate::cipher::IvSource;
use crate::errors::{self, Error};

/// DLPack's CUDA device types parcrypt encrypts on: `kDLCUDA` and `kDLCUDAManaged`.
const CUDA_DEVICE_TYPES: [i64; 2] = [2, 13];

/// Why an array on `device` (`id`) cannot be encrypted here: no CUDA device on this machine,
/// or the CUDA backend is unavailable, or (with a device) opening it failed (`opening`).
pub fn unsupported(device: &str, id: i64) -> PyErr {
    unsupported_because(device, id, None)
}

fn unsupported_because(device: &str, id: i64, opening: Option<String>) -> PyErr {
    let cuda = parcrypt::devices::CudaDevice::list();
    let reason = match (&cuda, opening) {
        (Ok(devices), Some(opening)) if !devices.is_empty() => {
            format!("the device could not be opened: {opening}")
        }
        (Ok(devices), None) if !devices.is_empty() => {
            "parcrypt encrypts arrays on CUDA devices only: copy the array to the host (e.g. .get() or .cpu()) first".to_string()
        }
        (Ok(_), _) => "this machine has no CUDA device".to_string(),
        (Err(error), _) => format!("the CUDA backend is unavailable here: {error}"),
    };
    Error::new_err(format!(
        "the array is on {device} #{id}, and parcrypt cannot encrypt it there: {reason}"
    ))
}

/// `Some(device ordinal)` when `object` is a DLPack array in CUDA device (or managed)
/// memory, which [`run`] encrypts; `None` for anything else.
pub fn cuda_array(object: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    // bytes, bytearray and memoryview are host memory, known without asking: probing them
    // for `__dlpack_device__` would have Python format an AttributeError on every call.
    // Every other object with `__dlpack_device__` is asked, buffer protocol or not: a CuPy
    // array has the buffer protocol's slot too (seen on CuPy 14; it refuses when used).
    if object.is_instance_of::<PyBytes>()
        || object.is_instance_of::<PyByteArray>()
        || object.is_instance_of::<PyMemoryView>()
        || !object.hasattr(pyo3::intern!(object.py(), "__dlpack_device__"))?
    {
        return Ok(None);
    }
    let (device_type, device_id): (i64, i64) = object
        .call_method0(pyo3::intern!(object.py(), "__dlpack_device__"))?
        .extract()?;
    Ok(CUDA_DEVICE_TYPES
        .contains(&device_type)
        .then_some(device_id))
}

/// The device's stream, passed as `__dlpack__(stream=...)`.
struct ConsumerStream(usize);

// SAFETY: the handle is stream 0 of an open `CudaDevice` of the array's device (the device
// is kept open for the whole process by the engine's cache), a live stream for the
// duration of the `__dlpack__` call, passed as CUDA's integer stream convention.
unsafe impl DlpackStream for ConsumerStream {
    fn as_python_arg(&self, _py: Python<'_>, _device: DLDevice) -> PyResult<StreamArg> {
        Ok(dlpark::python::consumer::stream::cuda(
            self.0 as *mut c_void,
        ))
    }
}

/// A device array imported through DLPack, held until parcrypt is done with its memory
/// (dropping it calls the producer's deleter).
struct Imported {
    tensor: dlpark::python::ImportedDlpack,
    address: u64,
    length: usize,
    device: usize,
}

impl Imported {
    fn get(object: &Bound<'_, PyAny>, device: &CudaDevice, what: &str) -> PyResult<Imported> {
        let stream = ConsumerStream(device.stream_handle());
        let request = ImportRequest::new(object.as_borrowed())?;
        let tensor = match request.import(Some(&stream), None) {
            Ok(tensor) => tensor,
            // Producers that predate `max_version`: ask with the stream alone.
            Err(error) if error.is_instance_of::<PyTypeError>(object.py()) => {
                let arguments = PyDict::new(object.py());
                arguments.set_item("stream", device.stream_handle())?;
                let capsule = object.call_method("__dlpack__", (), Some(&arguments))?;
                ImportRequest::new(capsule.as_borrowed())?.import(None, None)?
            }
            Err(error) => return Err(error),
        };
        let (address, length, tensor_device) = {
            let view = tensor
                .validate()
                .map_err(|error| PyValueError::new_err(format!("{what}: {error}")))?;
            let device_type = i64::from(view.device().device_type.0);
            if !CUDA_DEVICE_TYPES.contains(&device_type) {
                return Err(PyValueError::new_err(format!(
                    "{what} is on {} after import, not on a CUDA device",
                    device_name(device_type)
                )));
            }
            let dtype = view.dtype();
            if (u32::from(dtype.bits) * u32::from(dtype.lanes)) % 8 != 0 {
                return Err(PyValueError::new_err(format!(
                    "{what} has elements of {} bits: parcrypt takes whole bytes",
                    u32::from(dtype.bits) * u32::from(dtype.lanes)
                )));
            }
            let compact = view
                .is_compact()
                .map_err(|error| PyValueError::new_err(format!("{what}: {error}")))?;
            if !compact {
                return Err(PyValueError::new_err(format!(
                    "{what} is not C-contiguous (copy it first, e.g. cupy.ascontiguousarray or .contiguous())"
                )));
            }
            let address = (view.data_ptr() as u64)
                .checked_add(view.byte_offset())
                .ok_or_else(|| PyValueError::new_err(format!("{what}: bad byte_offset")))?;
            (address, view.num_bytes(), view.device().device_id)
        };
        Ok(Imported {
            tensor,
            address,
            length,
            device: usize::try_from(tensor_device).unwrap_or(usize::MAX),
        })
    }

    fn read_only(&self) -> bool {
        self.tensor.flags().contains(DlpackFlags::READ_ONLY)
    }

    /// The memory, lent to the engine while `self` is borrowed.
    fn memory(&self) -> ForeignDeviceMemory<'_> {
        // SAFETY: the producer handed out these `length` bytes at `address` on CUDA device
        // `device` (validated: compact, whole bytes) through DLPack, which keeps them alive
        // until `self.tensor` is dropped (its deleter runs then), and `self` is borrowed for
        // as long as the description lives. The producer ordered its pending work before
        // the device's stream (`__dlpack__(stream=...)`), so no producer stream is named.
        // The caller's Python code cannot touch the array while parcrypt works (the call
        // has not returned); other Python threads or CUDA streams writing the same array
        // at the same time race with parcrypt as they would with any library call on it.
        unsafe { ForeignDeviceMemory::new(self.address, self.length, self.device, None) }
    }
}

/// Encrypts or decrypts a message in the CUDA array `data` (on device `ordinal`) with
/// `keyed` and `iv`, on the device: into `out` (a device array on the same device; the
/// same array for in place), returning the bytes written, or into a new [`DeviceArray`].
#[allow(clippy::too_many_arguments)]
pub fn run<'py>(
    py: Python<'py>,
    keyed: &KeyedCipher,
    iv: &IvSource<'_>,
    direction: Direction,
    data: &Bound<'py, PyAny>,
    ordinal: i64,
    aad: Option<&[u8]>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let name = device_name(2);
    let index = usize::try_from(ordinal)
        .map_err(|_| PyValueError::new_err(format!("bad CUDA device number {ordinal}")))?;
    // The user's kernel cache (docs/ENVIRONMENT.md), as the engines' GPUs use it.
    let cache = parcrypt::environment::kernel_cache_directory();
    let device = cuda_device_with_cache(index, cache.as_deref())
        .map_err(|error| unsupported_because(name, ordinal, Some(error.to_string())))?;
    let input = Imported::get(data, &device, "data")?;
    let length = input.length;
    let needed = keyed.max_output_length(direction, length);
    let run = |output: &ForeignDeviceMemory<'_>| -> PyResult<usize> {
        let memory = input.memory();
        let work = || {
            let iv = iv.resolve(direction, length, output.len(), aad)?;
            match direction {
                Direction::Encrypt => keyed.encrypt_on_device(&device, iv, &memory, output, aad),
                Direction::Decrypt => keyed.decrypt_on_device(&device, iv, &memory, output, aad),
            }
        };
        py.detach(work).map_err(errors::job)
    };
    if let Some(out) = out {
        if cuda_array(out)? != Some(ordinal) {
            return Err(PyTypeError::new_err(format!(
                "out must be a writable array on the same CUDA device as data (#{ordinal})"
            )));
        }
        let output = Imported::get(out, &device, "out")?;
        if output.read_only() {
            return Err(PyTypeError::new_err("out is read-only"));
        }
        let written = run(&output.memory())?;
        return Ok(written.into_pyobject(py)?.into_any());
    }
    let mut allocation = device.alloc_device(needed).map_err(|error| {
        Error::new_err(format!("allocating {needed} bytes on the device: {error}"))
    })?;
    let written = run(&allocation.as_foreign())?;
    Ok(Bound::new(
        py,
        DeviceArray {
            memory: Arc::new(allocation),
            length: written,
        },
    )?
    .into_any())
}

/// Bytes on a CUDA device that parcrypt wrote (a result of `encrypt` or `decrypt` on a
/// device array): a one-dimensional uint8 array for `cupy.from_dlpack` or
/// `torch.from_dlpack`, which take it without copying. The memory is freed when this object
/// and every array made from it are gone.
#[pyclass(module = "parcrypt", name = "DeviceArray", frozen)]
pub struct DeviceArray {
    memory: Arc<DeviceAllocation>,
    length: usize,
}

#[pymethods]
impl DeviceArray {
    /// DLPack's export: a capsule of this memory (uint8, one dimension, on this device).
    /// The data is complete before this returns, so `stream` needs no wait.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(u32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let request = ExportRequest::parse(stream, max_version, dl_device, copy)?;
        dlpark::python::export_dlpack(self, py, request)
    }

    /// DLPack's device: `(2, ordinal)` (kDLCUDA).
    fn __dlpack_device__(&self) -> (i32, i32) {
        (2, self.memory.device() as i32)
    }

    /// The number of bytes.
    fn __len__(&self) -> usize {
        self.length
    }

    /// The number of bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.length
    }

    fn __repr__(&self) -> String {
        format!(
            "parcrypt.DeviceArray({} bytes on CUDA device #{})",
            self.length,
            self.memory.device()
        )
    }
}

impl DeviceArray {
    fn export<M: ManagedTensorBase>(&self) -> PyResult<dlpark::Managed<M>> {
        let shape = [i64::try_from(self.length).unwrap_or(i64::MAX)];
        let mut initialized = Fixed::new(shape, [1i64])
            .initialize_as::<M>(Box::new(Arc::clone(&self.memory)))
            .map_err(|error| Error::new_err(format!("DLPack export: {error}")))?;
        initialized
            .set_data(self.memory.address() as *mut c_void)
            .set_device(self.device())
            .set_dtype(DLDataType::of::<u8>());
        // SAFETY: the data pointer is the allocation's first byte (null when empty, with a
        // zero shape), which the context (an Arc of the allocation, dropped only by the
        // deleter) keeps alive for the tensor's whole life; shape and strides are stored in
        // the managed allocation itself; uint8, one dimension, compact strides [1]; no
        // flags: the memory is writable and shared with this object, not a private copy.
        Ok(unsafe { initialized.finish() })
    }
}

impl DlpackExporter for DeviceArray {
    fn device(&self) -> DLDevice {
        DLDevice {
            device_type: DLDeviceType::CUDA,
            device_id: self.memory.device() as i32,
        }
    }

    fn flags(&self) -> DlpackFlags {
        DlpackFlags::empty()
    }

    fn prepare_export(&self, _py: Python<'_>, _request: &ExportRequest<'_>) -> PyResult<()> {
        // The bytes were complete (the stream synchronised) before this object existed.
        Ok(())
    }

    fn export_legacy(&self, _py: Python<'_>) -> PyResult<dlpark::Managed<DLManagedTensor>> {
        self.export()
    }

    fn export_versioned(
        &self,
        _py: Python<'_>,
    ) -> PyResult<dlpark::Managed<DLManagedTensorVersioned>> {
        self.export()
    }
}
