//! The OpenCL path against the CPU path: every cipher, key size, operation and awkward
//! length must give the bytes `parcrypt-modes` gives over `parcrypt-ciphers`.
//!
//! Runs on whatever OpenCL device is first (or `PARCRYPT_OPENCL_DEVICE=N`); in CI that is
//! PoCL on the CPU. Without OpenCL the tests print a SKIPPED line and pass, unless `CI` is
//! set: CI installs PoCL, so a missing device there is a broken setup, not a reason to skip.
//! The tests every API runs are `device_tests!` (`support/device_tests.rs`) over the shared
//! cases (`support/cases.rs`); this file says how OpenCL runs them, and adds its own.

#[macro_use]
#[path = "support/cases.rs"]
mod cases;
#[macro_use]
#[path = "support/device_tests.rs"]
mod device_tests;

use parcrypt_ciphers::Algorithm;
use parcrypt_gpu::{DeviceInfo, GpuError, GpuOperation, OpenClDevice, OpenOptions, TableCopies};

const EVERY_CASE_SEED: u64 = 0x6770_7531;
const WIDEST_GROUP: usize = 256;
/// PoCL is a CPU device and gets one copy by default; these are the layouts GPUs get.
fn table_layouts() -> Vec<TableCopies> {
    vec![
        TableCopies::uniform(32),
        TableCopies {
            aes_encrypt: 16,
            aes_decrypt: 8,
            blowfish: 2,
        },
    ]
}

// OpenCL has one way in, `process`.
process_is_the_only_path!();

/// Timed calls take the same path as untimed ones, segments included.
fn more_segment_slab_checks(device: &Device) {
    let key = parcrypt_gpu::KeyMaterial::new(Algorithm::Aes128, &[3u8; 16]).unwrap();
    let data: Vec<u8> = (0..5 * cases::TEST_SLAB_BYTES + 100)
        .map(|index| (index * 31 % 251) as u8)
        .collect();
    let operation = cases::kib_segments(data.len());
    let mut timed = data.clone();
    let (kernel, _) = device.process_timed(&key, &operation, &mut timed).unwrap();
    assert!(kernel > std::time::Duration::ZERO);
    assert!(timed == cases::on_cpu(Algorithm::Aes128, &[3u8; 16], &operation, &data));
}

/// OpenCL compiles one program whatever the layout: nothing more to check.
fn more_layout_checks(_device: &Device, _copies: TableCopies) {}

device_tests!(OpenClDevice, cases::open_opencl, "PARCRYPT_OPENCL_DEVICE");

#[test]
fn kernel_source_compiles_with_every_table_copy_define() {
    if shared_device().is_none() {
        return;
    }
    for copies in TableCopies::VALID_COUNTS {
        OpenClDevice::compile_check(device_index(), TableCopies::uniform(copies))
            .unwrap_or_else(|error| panic!("table copies {copies}: {error}"));
    }
    // An invalid count is refused before the compiler sees it, and the kernels' own #error
    // catches one that gets past the host.
    assert!(matches!(
        OpenClDevice::compile_check(device_index(), TableCopies::uniform(12)),
        Err(GpuError::InvalidInput(_))
    ));
}

/// What `device_list_describes_the_device` checks beyond what every API lists.
fn more_device_list_checks(_device: &Device, info: &DeviceInfo) {
    assert!(info.compute_units >= 1 && info.local_memory_bytes > 0);
}

#[test]
fn timed_calls_give_the_same_bytes_and_a_kernel_time_within_the_wall_time() {
    // Small slabs, so that several kernels on both queues are summed.
    let options = OpenOptions {
        slab_bytes: cases::TEST_SLAB_BYTES,
        ..OpenOptions::default()
    };
    let Some(device) = cases::open_opencl(&options) else {
        return;
    };
    let key = parcrypt_gpu::KeyMaterial::new(Algorithm::Aes128, &[3u8; 16]).unwrap();
    let data: Vec<u8> = (0..5 * cases::TEST_SLAB_BYTES + 48)
        .map(|index| (index * 31 % 251) as u8)
        .collect();
    let operations = [
        GpuOperation::EcbEncrypt,
        GpuOperation::CbcDecrypt {
            previous: vec![9; 16],
        },
        GpuOperation::Ctr {
            counter: vec![0xff; 16],
            rule: parcrypt_modes::ctr::CounterRule::Full,
        },
    ];
    for operation in &operations {
        let mut plain = data.clone();
        device.process(&key, operation, &mut plain).unwrap();
        let mut timed = data.clone();
        let (kernel, end_to_end) = device.process_timed(&key, operation, &mut timed).unwrap();
        assert!(
            plain == timed,
            "{operation:?}: timed call changed the bytes"
        );
        assert!(
            kernel > std::time::Duration::ZERO,
            "{operation:?}: {kernel:?}"
        );
        assert!(
            kernel <= end_to_end,
            "{operation:?}: kernel {kernel:?} > end to end {end_to_end:?}"
        );
    }
    let mut empty = [];
    assert_eq!(
        device
            .process_timed(&key, &GpuOperation::EcbEncrypt, &mut empty)
            .unwrap(),
        (std::time::Duration::ZERO, std::time::Duration::ZERO)
    );
}
