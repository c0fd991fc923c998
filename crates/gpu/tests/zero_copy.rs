//! Zero-copy (mapped host memory) against the CPU path: on OpenCL and on CUDA, a
//! `MappedBuffer` processed in place and `process_zero_copy` over ordinary memory must give
//! the bytes `parcrypt-modes` gives over `parcrypt-ciphers`, for every cipher, key size,
//! operation and awkward length.
//!
//! OpenCL runs on the first device (or `PARCRYPT_OPENCL_DEVICE=N`): PoCL in CI, where a
//! missing device fails the tests (`CI` set); elsewhere they print a SKIPPED line and pass.
//! CUDA runs on device 0 (or `PARCRYPT_CUDA_DEVICE=N`) and is skipped with a SKIPPED line
//! where there is no driver or GPU, in CI too.

#[path = "support/cases.rs"]
#[allow(dead_code)]
mod cases;

use std::sync::OnceLock;
use std::time::Duration;

use parcrypt_ciphers::Algorithm;
use parcrypt_gpu::{CudaDevice, GpuError, GpuOperation, KeyMaterial, OpenClDevice, OpenOptions};
use parcrypt_modes::ctr::CounterRule;

/// The two ways data reaches a device without device buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// The caller's data copied into a `MappedBuffer`, processed there, read back out.
    Mapped,
    /// `process_zero_copy` on ordinary memory.
    Staged,
}

const PATHS: [Path; 2] = [Path::Mapped, Path::Staged];

/// What the tests need of either API's device.
trait ZeroCopyDevice: Sync {
    fn process_zero_copy(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
    ) -> Result<(), GpuError>;
    /// A mapped buffer holding `data`, processed in place; its bytes afterwards.
    fn through_mapped_buffer(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &[u8],
    ) -> Result<Vec<u8>, GpuError>;
}

impl ZeroCopyDevice for OpenClDevice {
    fn process_zero_copy(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
    ) -> Result<(), GpuError> {
        OpenClDevice::process_zero_copy(self, key, operation, data)
    }

    fn through_mapped_buffer(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &[u8],
    ) -> Result<Vec<u8>, GpuError> {
        let mut buffer = self.mapped_buffer(data.len())?;
        buffer.as_mut_slice().copy_from_slice(data);
        buffer.process(key, operation)?;
        Ok(buffer.as_slice().to_vec())
    }
}

impl ZeroCopyDevice for CudaDevice {
    fn process_zero_copy(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
    ) -> Result<(), GpuError> {
        CudaDevice::process_zero_copy(self, key, operation, data)
    }

    fn through_mapped_buffer(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &[u8],
    ) -> Result<Vec<u8>, GpuError> {
        let mut buffer = self.mapped_buffer(data.len())?;
        buffer.as_mut_slice().copy_from_slice(data);
        buffer.process(key, operation)?;
        Ok(buffer.as_slice().to_vec())
    }
}

/// The shared cases' check for `device`: every case through each of `paths`.
fn through<'a, D: ZeroCopyDevice>(
    device: &'a D,
    paths: &'a [Path],
) -> impl Fn(Algorithm, &[u8], &GpuOperation, &[u8]) + Sync + 'a {
    move |algorithm: Algorithm, key: &[u8], operation: &GpuOperation, data: &[u8]| {
        for &path in paths {
            cases::assert_same_as_cpu(
                algorithm,
                key,
                operation,
                data,
                &format!(" via {path:?}"),
                |material, operation, data| match path {
                    Path::Mapped => device.through_mapped_buffer(material, operation, data),
                    Path::Staged => {
                        let mut result = data.to_vec();
                        device.process_zero_copy(material, operation, &mut result)?;
                        Ok(result)
                    }
                },
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// OpenCL

fn shared_opencl() -> Option<&'static OpenClDevice> {
    static DEVICE: OnceLock<Option<OpenClDevice>> = OnceLock::new();
    DEVICE
        .get_or_init(|| cases::open_opencl(&OpenOptions::default()))
        .as_ref()
}

#[test]
fn opencl_every_cipher_operation_and_size_matches_the_cpu() {
    let Some(device) = shared_opencl() else {
        return;
    };
    println!(
        "{}: host unified memory {}",
        device.name(),
        device.host_unified_memory()
    );
    cases::every_cipher_operation_and_size(0x7a65_726f, through(device, &PATHS));
}

#[test]
fn opencl_ctr_counters_wrap_like_the_cpu() {
    let Some(device) = shared_opencl() else {
        return;
    };
    cases::ctr_wrap_cases(through(device, &PATHS));
}

#[test]
fn opencl_staged_slabs_chain_counters_and_cbc_blocks() {
    let options = OpenOptions {
        slab_bytes: cases::TEST_SLAB_BYTES,
        ..OpenOptions::default()
    };
    let Some(device) = cases::open_opencl(&options) else {
        return;
    };
    // The mapped buffer is one launch whatever the slab size; the staged path goes slab by
    // slab through one mapped buffer.
    cases::slab_edge_cases(through(&device, &PATHS));
}

#[test]
fn opencl_concurrent_zero_copy_calls_do_not_mix() {
    let Some(device) = shared_opencl() else {
        return;
    };
    cases::concurrent_cases(through(device, &PATHS));
}

#[test]
fn opencl_bad_lengths_are_refused() {
    let Some(device) = shared_opencl() else {
        return;
    };
    cases::bad_length_cases(|key, operation, data| device.process_zero_copy(key, operation, data));
    cases::bad_length_cases(|key, operation, data| {
        let mut buffer = device.mapped_buffer(data.len())?;
        buffer.process(key, operation)
    });
    assert!(matches!(
        device.mapped_buffer(device.max_mapped_bytes() + 1),
        Err(GpuError::InvalidInput(_))
    ));
}

#[test]
fn opencl_mapped_buffers_are_reused_and_resized() {
    let Some(device) = shared_opencl() else {
        return;
    };
    check_reuse(
        device.mapped_buffer(4096 + 5).unwrap(),
        |buffer, key, op| buffer.process(key, op),
    );
}

#[test]
fn opencl_timed_mapped_calls_give_the_same_bytes_and_a_kernel_time_within_the_wall_time() {
    let Some(device) = shared_opencl() else {
        return;
    };
    let mut buffer = device.mapped_buffer(64 << 10).unwrap();
    check_timed(
        &mut buffer,
        |buffer| buffer.as_mut_slice(),
        |buffer, key, operation| buffer.process_timed(key, operation),
    );
    let mut empty = device.mapped_buffer(0).unwrap();
    let key = KeyMaterial::new(Algorithm::Aes128, &[1; 16]).unwrap();
    assert_eq!(
        empty
            .process_timed(&key, &GpuOperation::EcbEncrypt)
            .unwrap(),
        (Duration::ZERO, Duration::ZERO)
    );
}

// ---------------------------------------------------------------------------------------
// CUDA

fn shared_cuda() -> Option<&'static CudaDevice> {
    static DEVICE: OnceLock<Option<CudaDevice>> = OnceLock::new();
    DEVICE
        .get_or_init(|| cases::open_cuda(&OpenOptions::default()))
        .as_ref()
}

#[test]
fn cuda_every_cipher_operation_and_size_matches_the_cpu() {
    let Some(device) = shared_cuda() else {
        return;
    };
    println!(
        "{}: host unified memory {}",
        device.name(),
        device.host_unified_memory()
    );
    cases::every_cipher_operation_and_size(0x7a65_726f, through(device, &PATHS));
}

#[test]
fn cuda_ctr_counters_wrap_like_the_cpu() {
    let Some(device) = shared_cuda() else {
        return;
    };
    cases::ctr_wrap_cases(through(device, &PATHS));
}

#[test]
fn cuda_staged_slabs_chain_counters_and_cbc_blocks() {
    let options = OpenOptions {
        slab_bytes: cases::TEST_SLAB_BYTES,
        ..OpenOptions::default()
    };
    let Some(device) = cases::open_cuda(&options) else {
        return;
    };
    cases::slab_edge_cases(through(&device, &PATHS));
}

#[test]
fn cuda_concurrent_zero_copy_calls_do_not_mix() {
    let Some(device) = shared_cuda() else {
        return;
    };
    cases::concurrent_cases(through(device, &PATHS));
}

#[test]
fn cuda_bad_lengths_are_refused() {
    let Some(device) = shared_cuda() else {
        return;
    };
    cases::bad_length_cases(|key, operation, data| device.process_zero_copy(key, operation, data));
    cases::bad_length_cases(|key, operation, data| {
        let mut buffer = device.mapped_buffer(data.len())?;
        buffer.process(key, operation)
    });
    assert!(matches!(
        device.mapped_buffer(device.max_mapped_bytes() + 1),
        Err(GpuError::InvalidInput(_))
    ));
}

#[test]
fn cuda_mapped_buffers_are_reused_and_resized() {
    let Some(device) = shared_cuda() else {
        return;
    };
    check_reuse(
        device.mapped_buffer(4096 + 5).unwrap(),
        |buffer, key, op| buffer.process(key, op),
    );
}

#[test]
fn cuda_timed_mapped_calls_give_the_same_bytes_and_a_kernel_time_within_the_wall_time() {
    let Some(device) = shared_cuda() else {
        return;
    };
    let mut buffer = device.mapped_buffer(64 << 10).unwrap();
    check_timed(
        &mut buffer,
        |buffer| buffer.as_mut_slice(),
        |buffer, key, operation| buffer.process_timed(key, operation),
    );
}

// ---------------------------------------------------------------------------------------
// Shared checks on one mapped buffer of either API

/// The buffer's slices, for [`check_reuse`].
trait Slices {
    fn bytes(&mut self) -> &mut [u8];
    fn resize(&mut self, len: usize) -> Result<(), GpuError>;
    fn capacity(&self) -> usize;
}

impl Slices for parcrypt_gpu::opencl::MappedBuffer<'_> {
    fn bytes(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
    fn resize(&mut self, len: usize) -> Result<(), GpuError> {
        self.set_len(len)
    }
    fn capacity(&self) -> usize {
        parcrypt_gpu::opencl::MappedBuffer::capacity(self)
    }
}

impl Slices for parcrypt_gpu::cuda::MappedBuffer<'_> {
    fn bytes(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
    fn resize(&mut self, len: usize) -> Result<(), GpuError> {
        self.set_len(len)
    }
    fn capacity(&self) -> usize {
        parcrypt_gpu::cuda::MappedBuffer::capacity(self)
    }
}

/// One buffer processed again and again: ECB there and back, CTR twice (its own inverse),
/// at the full length and after shrinking and growing it within its capacity.
fn check_reuse<B: Slices>(
    mut buffer: B,
    process: impl Fn(&mut B, &KeyMaterial, &GpuOperation) -> Result<(), GpuError>,
) {
    let key_bytes = [0x42u8; 16];
    let key = KeyMaterial::new(Algorithm::Aes128, &key_bytes).unwrap();
    assert_eq!(buffer.capacity(), 4096 + 16);
    let original: Vec<u8> = (0..4096 + 5)
        .map(|index| (index * 13 % 256) as u8)
        .collect();
    buffer.bytes().copy_from_slice(&original);
    let ctr = GpuOperation::Ctr {
        counter: vec![0xfe; 16],
        rule: CounterRule::Full,
    };
    process(&mut buffer, &key, &ctr).unwrap();
    assert_eq!(
        buffer.bytes(),
        &cases::on_cpu(Algorithm::Aes128, &key_bytes, &ctr, &original)[..]
    );
    process(&mut buffer, &key, &ctr).unwrap();
    assert_eq!(buffer.bytes(), &original[..], "CTR twice is the identity");

    buffer.resize(4096).unwrap();
    process(&mut buffer, &key, &GpuOperation::EcbEncrypt).unwrap();
    assert_eq!(
        buffer.bytes(),
        &cases::on_cpu(
            Algorithm::Aes128,
            &key_bytes,
            &GpuOperation::EcbEncrypt,
            &original[..4096]
        )[..]
    );
    process(&mut buffer, &key, &GpuOperation::EcbDecrypt).unwrap();
    assert_eq!(buffer.bytes(), &original[..4096]);

    buffer.resize(16).unwrap();
    process(&mut buffer, &key, &GpuOperation::EcbEncrypt).unwrap();
    assert_eq!(
        buffer.bytes(),
        &cases::on_cpu(
            Algorithm::Aes128,
            &key_bytes,
            &GpuOperation::EcbEncrypt,
            &original[..16]
        )[..]
    );
    assert!(buffer.resize(4096 + 17).is_err());
    buffer.resize(4096 + 16).unwrap();
    assert_eq!(buffer.bytes().len(), 4096 + 16);
}

/// A timed call changes the bytes as an untimed one does, and reports a kernel time that
/// is positive and within the call's wall time.
fn check_timed<B>(
    buffer: &mut B,
    bytes: impl Fn(&mut B) -> &mut [u8],
    timed: impl Fn(&mut B, &KeyMaterial, &GpuOperation) -> Result<(Duration, Duration), GpuError>,
) {
    let key_bytes = [3u8; 16];
    let key = KeyMaterial::new(Algorithm::Aes128, &key_bytes).unwrap();
    for operation in [
        GpuOperation::EcbEncrypt,
        GpuOperation::CbcDecrypt {
            previous: vec![9; 16],
        },
        GpuOperation::Ctr {
            counter: vec![0xff; 16],
            rule: CounterRule::Full,
        },
    ] {
        let data: Vec<u8> = (0..bytes(buffer).len())
            .map(|index| (index * 31 % 251) as u8)
            .collect();
        bytes(buffer).copy_from_slice(&data);
        let (kernel, end_to_end) = timed(buffer, &key, &operation).unwrap();
        assert_eq!(
            bytes(buffer),
            &cases::on_cpu(Algorithm::Aes128, &key_bytes, &operation, &data)[..],
            "{operation:?}"
        );
        assert!(kernel > Duration::ZERO, "{operation:?}: {kernel:?}");
        assert!(
            kernel <= end_to_end,
            "{operation:?}: kernel {kernel:?} > end to end {end_to_end:?}"
        );
    }
}
