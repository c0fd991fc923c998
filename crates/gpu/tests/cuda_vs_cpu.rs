//! The CUDA path against the CPU path: every cipher, key size, operation and awkward length
//! must give the bytes `parcrypt-modes` gives over `parcrypt-ciphers`, through each way data
//! reaches the GPU: ordinary host memory (staged), pinned host memory, and buffers already
//! on the device (processed in place).
//!
//! Runs on CUDA device 0 (or `PARCRYPT_CUDA_DEVICE=N`). Without a CUDA driver or GPU the
//! tests print a SKIPPED line and pass, in CI too: CI has no GPU; under
//! `PARCRYPT_REQUIRE_GPU=1` (the GPU kit) they fail instead. Anything else that stops a
//! device from opening (NVRTC missing on a GPU machine, a self-test failure) fails.
//! The tests every API runs are `device_tests!` (`support/device_tests.rs`) over the shared
//! cases (`support/cases.rs`); this file says how CUDA runs them, and adds its own.

#[macro_use]
#[path = "support/cases.rs"]
mod cases;
#[macro_use]
#[path = "support/device_tests.rs"]
mod device_tests;

use parcrypt_ciphers::Algorithm;
use parcrypt_gpu::cuda::KernelVariant;
use parcrypt_gpu::{
    CudaDevice, CudaDeviceInfo, GpuDevice, GpuError, GpuOperation, KeyMaterial, OpenOptions,
    TableCopies,
};
use parcrypt_modes::ctr::CounterRule;

use cases::on_cpu;

const EVERY_CASE_SEED: u64 = 0x6375_6461;
const WIDEST_GROUP: usize = 1024;

fn table_layouts() -> Vec<TableCopies> {
    vec![
        // Per lane: Blowfish's 128 KiB need dynamic shared memory and the opt-in attribute.
        TableCopies::uniform(32),
        // Everything static.
        TableCopies::uniform(8),
        TableCopies {
            aes_encrypt: 16,
            aes_decrypt: 8,
            blowfish: 2,
        },
        TableCopies::uniform(1),
    ]
}

/// How the data reaches the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// `process` on ordinary memory, staged through pinned buffers.
    Host,
    /// `process_pinned` on a range that starts a few bytes into a pinned buffer.
    Pinned,
    /// `process_device_buffer` on data already on the GPU, in place.
    DeviceBuffer,
}

const PATHS: [Path; 3] = [Path::Host, Path::Pinned, Path::DeviceBuffer];

fn on_device(
    device: &CudaDevice,
    path: Path,
    key: &KeyMaterial,
    operation: &GpuOperation,
    data: &[u8],
) -> Result<Vec<u8>, GpuError> {
    match path {
        Path::Host => {
            let mut result = data.to_vec();
            device.process(key, operation, &mut result)?;
            Ok(result)
        }
        Path::Pinned => {
            // An odd start: the DMA engines take any host alignment.
            let offset = 5;
            let mut pinned = device.alloc_pinned(offset + data.len() + 3)?;
            let range = offset..offset + data.len();
            pinned.as_mut_slice().unwrap()[range.clone()].copy_from_slice(data);
            device.process_pinned(key, operation, &mut pinned, range.clone())?;
            let bytes = pinned.as_slice().unwrap();
            assert!(
                bytes[..offset].iter().all(|&byte| byte == 0),
                "wrote before the range"
            );
            assert!(
                bytes[range.end..].iter().all(|&byte| byte == 0),
                "wrote after the range"
            );
            Ok(bytes[range].to_vec())
        }
        Path::DeviceBuffer => {
            if data.is_empty() {
                // CUDA has no zero-byte allocation; the call returns at once for empty data.
                return Ok(Vec::new());
            }
            let stream = device.stream();
            let mut buffer = stream.clone_htod(data).unwrap();
            device.process_device_buffer(key, operation, &mut buffer)?;
            Ok(stream.clone_dtoh(&buffer).unwrap())
        }
    }
}

/// The shared cases' check for `device`: every case through each of `paths`.
fn through<'a>(
    device: &'a CudaDevice,
    paths: &'a [Path],
) -> impl Fn(Algorithm, &[u8], &GpuOperation, &[u8]) + Sync + 'a {
    cases::through_paths(paths, move |path, key, operation, data| {
        on_device(device, path, key, operation, data)
    })
}

fn check_every_path(
    device: &Device,
) -> impl Fn(Algorithm, &[u8], &GpuOperation, &[u8]) + Sync + '_ {
    through(device, &PATHS)
}

/// Table layouts and launch shapes change only the kernels: the host and device paths
/// cover them.
fn check_layout_paths(
    device: &Device,
) -> impl Fn(Algorithm, &[u8], &GpuOperation, &[u8]) + Sync + '_ {
    through(device, &[Path::Host, Path::DeviceBuffer])
}

/// The device-buffer path takes the same segments as the host paths.
fn more_segment_slab_checks(device: &Device) {
    let key = KeyMaterial::new(Algorithm::Aes128, &[1; 16]).unwrap();
    let too_long = GpuOperation::CtrSegments {
        counters: vec![0; 16],
        segment_bytes: cases::TEST_SLAB_BYTES + 16,
        rule: CounterRule::Low32,
    };
    let mut buffer = device.stream().alloc_zeros::<u8>(100).unwrap();
    assert!(matches!(
        device.process_device_buffer(&key, &too_long, &mut buffer),
        Err(GpuError::InvalidInput(_))
    ));
}

/// The layout decides the compiled variant (static or dynamic shared memory).
fn more_layout_checks(device: &Device, copies: TableCopies) {
    assert_eq!(
        device.kernel_variant(),
        KernelVariant::for_table_copies(copies)
    );
}

device_tests!(CudaDevice, cases::open_cuda, "PARCRYPT_CUDA_DEVICE");

#[test]
fn bad_pinned_ranges_and_misaligned_device_views_are_refused_with_a_reason() {
    let Some(device) = shared_device() else {
        return;
    };
    let key = KeyMaterial::new(Algorithm::Aes128, &[1; 16]).unwrap();

    let mut pinned = device.alloc_pinned(64).unwrap();
    assert!(matches!(
        device.process_pinned(&key, &GpuOperation::EcbEncrypt, &mut pinned, 48..80),
        Err(GpuError::InvalidInput(_))
    ));

    let mut buffer = device.stream().alloc_zeros::<u8>(64).unwrap();
    let mut misaligned = buffer.slice_mut(3..35);
    let counter = GpuOperation::Ctr {
        counter: vec![0; 16],
        rule: CounterRule::Full,
    };
    let error = device
        .process_device_view(&key, &counter, &mut misaligned)
        .unwrap_err();
    assert!(error.to_string().contains("16-byte boundary"), "{error}");
    // An aligned view of part of a buffer is fine and leaves the rest alone.
    let mut aligned = buffer.slice_mut(16..48);
    device
        .process_device_view(&key, &counter, &mut aligned)
        .unwrap();
    let bytes = device.stream().clone_dtoh(&buffer).unwrap();
    assert!(bytes[..16].iter().all(|&byte| byte == 0));
    assert!(bytes[48..].iter().all(|&byte| byte == 0));
    assert_eq!(
        bytes[16..48],
        on_cpu(Algorithm::Aes128, &[1; 16], &counter, &[0; 32])[..]
    );
}

#[test]
fn timed_device_calls_report_gpu_time() {
    let Some(device) = shared_device() else {
        return;
    };
    let key = KeyMaterial::new(Algorithm::Aes128, &[7; 16]).unwrap();
    let operation = GpuOperation::Ctr {
        counter: vec![0; 16],
        rule: CounterRule::Full,
    };
    let mut buffer = device.stream().alloc_zeros::<u8>(16 << 20).unwrap();
    let elapsed = device
        .process_device_buffer_timed(&key, &operation, &mut buffer)
        .unwrap();
    assert!(
        elapsed.as_nanos() > 0 && elapsed.as_secs() < 10,
        "{elapsed:?}"
    );
    let bytes = device.stream().clone_dtoh(&buffer).unwrap();
    assert_eq!(
        bytes,
        on_cpu(Algorithm::Aes128, &[7; 16], &operation, &vec![0; 16 << 20])
    );
}

/// What `device_list_describes_the_device` checks beyond what every API lists.
fn more_device_list_checks(device: &Device, info: &CudaDeviceInfo) {
    assert!(info.multiprocessors >= 1 && info.shared_memory_per_block_bytes >= 48 * 1024);
    let as_trait: &dyn GpuDevice = device;
    assert_eq!(as_trait.api().to_string(), "cuda");
    assert!(as_trait.description().contains(device.architecture()));
    // A GPU whose architecture NVRTC knows gets machine code, not PTX.
    let (major, minor) = info.compute_capability;
    if major == 9 && minor == 0 {
        assert_eq!(device.architecture(), "sm_90");
        assert_eq!(device.table_copies(), TableCopies::uniform(32));
    }
}
