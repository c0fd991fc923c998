//! Zero-copy (mapped host memory) against the CPU path: on OpenCL and on CUDA, a
//! `MappedBuffer` processed in place and `process_zero_copy` over ordinary memory must give
//! the bytes `parcrypt-modes` gives over `parcrypt-ciphers`, for every cipher, key size,
//! operation and awkward length. The tests are written once (`zero_copy_tests!`) and run
//! per API, in the modules `opencl` and `cuda`.
//!
//! OpenCL runs on the first device (or `PARCRYPT_OPENCL_DEVICE=N`): PoCL in CI, where a
//! missing device fails the tests (`CI` set); elsewhere they print a SKIPPED line and pass.
//! CUDA runs on device 0 (or `PARCRYPT_CUDA_DEVICE=N`) and is skipped with a SKIPPED line
//! where there is no driver or GPU, in CI too.

#[macro_use]
#[path = "support/cases.rs"]
#[allow(dead_code)]
mod cases;

use parcrypt_ciphers::Algorithm;
use parcrypt_gpu::{GpuError, GpuOperation, KeyMaterial, OpenOptions};
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

/// The zero-copy tests of one API: `zero_copy_tests!(module, Device, open)` expands to a
/// module of them over devices of type `Device` that `open(options)` gives.
macro_rules! zero_copy_tests {
    ($module:ident, $device:ty, $open:path) => {
        mod $module {
            use std::sync::OnceLock;
            use std::time::Duration;

            use super::*;

            type Device = $device;

            fn shared_device() -> Option<&'static Device> {
                static DEVICE: OnceLock<Option<Device>> = OnceLock::new();
                DEVICE
                    .get_or_init(|| $open(&OpenOptions::default()))
                    .as_ref()
            }

            /// A mapped buffer holding `data`, processed in place; its bytes afterwards.
            fn through_mapped_buffer(
                device: &Device,
                key: &KeyMaterial,
                operation: &GpuOperation,
                data: &[u8],
            ) -> Result<Vec<u8>, GpuError> {
                let mut buffer = device.mapped_buffer(data.len())?;
                buffer.as_mut_slice().copy_from_slice(data);
                buffer.process(key, operation)?;
                Ok(buffer.as_slice().to_vec())
            }

            /// The shared cases' check for `device`: every case through each of `paths`.
            fn through<'a>(
                device: &'a Device,
                paths: &'a [Path],
            ) -> impl Fn(Algorithm, &[u8], &GpuOperation, &[u8]) + Sync + 'a {
                cases::through_paths(paths, move |path, key, operation, data| match path {
                    Path::Mapped => through_mapped_buffer(device, key, operation, data),
                    Path::Staged => {
                        let mut result = data.to_vec();
                        device.process_zero_copy(key, operation, &mut result)?;
                        Ok(result)
                    }
                })
            }

            #[test]
            fn every_cipher_operation_and_size_matches_the_cpu() {
                let Some(device) = shared_device() else {
                    return;
                };
                println!(
                    "{}: host unified memory {}",
                    device.name(),
                    device.host_unified_memory()
                );
                cases::every_cipher_operation_and_size(0x7a65_726f, through(device, &PATHS));
            }

            on_shared_device! {
                ctr_counters_wrap_like_the_cpu =>
                    |device| cases::ctr_wrap_cases(through(device, &PATHS));
                concurrent_zero_copy_calls_do_not_mix =>
                    |device| cases::concurrent_cases(through(device, &PATHS));
            }

            #[test]
            fn staged_slabs_chain_counters_and_cbc_blocks() {
                let Some(device) = $open(&cases::small_slab_options()) else {
                    return;
                };
                // The mapped buffer is one launch whatever the slab size; the staged path
                // goes slab by slab through one mapped buffer.
                cases::slab_edge_cases(through(&device, &PATHS));
            }

            #[test]
            fn bad_lengths_are_refused() {
                let Some(device) = shared_device() else {
                    return;
                };
                cases::bad_length_cases(|key, operation, data| {
                    device.process_zero_copy(key, operation, data)
                });
                cases::bad_length_cases(|key, operation, data| {
                    let mut buffer = device.mapped_buffer(data.len())?;
                    buffer.process(key, operation)
                });
                assert!(matches!(
                    device.mapped_buffer(device.max_mapped_bytes() + 1),
                    Err(GpuError::InvalidInput(_))
                ));
            }

            /// One buffer processed again and again: ECB there and back, CTR twice (its own
            /// inverse), at the full length and after shrinking and growing it within its
            /// capacity.
            #[test]
            fn mapped_buffers_are_reused_and_resized() {
                let Some(device) = shared_device() else {
                    return;
                };
                let mut buffer = device.mapped_buffer(4096 + 5).unwrap();
                let key_bytes = [0x42u8; 16];
                let key = KeyMaterial::new(Algorithm::Aes128, &key_bytes).unwrap();
                assert_eq!(buffer.capacity(), 4096 + 16);
                let original: Vec<u8> = (0..4096 + 5)
                    .map(|index| (index * 13 % 256) as u8)
                    .collect();
                buffer.as_mut_slice().copy_from_slice(&original);
                let ctr = GpuOperation::Ctr {
                    counter: vec![0xfe; 16],
                    rule: CounterRule::Full,
                };
                buffer.process(&key, &ctr).unwrap();
                assert_eq!(
                    buffer.as_mut_slice(),
                    &cases::on_cpu(Algorithm::Aes128, &key_bytes, &ctr, &original)[..]
                );
                buffer.process(&key, &ctr).unwrap();
                assert_eq!(
                    buffer.as_mut_slice(),
                    &original[..],
                    "CTR twice is the identity"
                );

                // Shrunk within the capacity, the buffer processes only its new length.
                for length in [4096, 16] {
                    buffer.set_len(length).unwrap();
                    let ecb = GpuOperation::EcbEncrypt;
                    buffer.process(&key, &ecb).unwrap();
                    let expected =
                        cases::on_cpu(Algorithm::Aes128, &key_bytes, &ecb, &original[..length]);
                    assert_eq!(buffer.as_mut_slice(), &expected[..]);
                    buffer.process(&key, &GpuOperation::EcbDecrypt).unwrap();
                    assert_eq!(buffer.as_mut_slice(), &original[..length]);
                }
                assert!(buffer.set_len(4096 + 17).is_err());
                buffer.set_len(4096 + 16).unwrap();
                assert_eq!(buffer.as_mut_slice().len(), 4096 + 16);
            }

            /// A timed call changes the bytes as an untimed one does, and reports a kernel
            /// time that is positive and within the call's wall time; an empty buffer's
            /// times are zero.
            #[test]
            fn timed_mapped_calls_give_the_same_bytes_and_a_kernel_time_within_the_wall_time() {
                let Some(device) = shared_device() else {
                    return;
                };
                let mut buffer = device.mapped_buffer(64 << 10).unwrap();
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
                    let data: Vec<u8> = (0..buffer.as_mut_slice().len())
                        .map(|index| (index * 31 % 251) as u8)
                        .collect();
                    buffer.as_mut_slice().copy_from_slice(&data);
                    let (kernel, end_to_end) = buffer.process_timed(&key, &operation).unwrap();
                    assert_eq!(
                        buffer.as_mut_slice(),
                        &cases::on_cpu(Algorithm::Aes128, &key_bytes, &operation, &data)[..],
                        "{operation:?}"
                    );
                    assert!(kernel > Duration::ZERO, "{operation:?}: {kernel:?}");
                    assert!(
                        kernel <= end_to_end,
                        "{operation:?}: kernel {kernel:?} > end to end {end_to_end:?}"
                    );
                }
                let mut empty = device.mapped_buffer(0).unwrap();
                let key = KeyMaterial::new(Algorithm::Aes128, &[1; 16]).unwrap();
                assert_eq!(
                    empty
                        .process_timed(&key, &GpuOperation::EcbEncrypt)
                        .unwrap(),
                    (Duration::ZERO, Duration::ZERO)
                );
            }
        }
    };
}

zero_copy_tests!(opencl, parcrypt_gpu::OpenClDevice, cases::open_opencl);
zero_copy_tests!(cuda, parcrypt_gpu::CudaDevice, cases::open_cuda);
