//! The HIP path against the CPU path: every cipher, key size, operation and awkward length
//! (random keys and data from a fixed seed) must give the bytes `parcrypt-modes` gives over
//! `parcrypt-ciphers`, i.e. what the `seq` backend gives.
//!
//! Runs on HIP device 0 (or `PARCRYPT_HIP_DEVICE=N`). Without libamdhip64 or an AMD GPU the
//! tests print a SKIPPED line and pass (CI has no AMD GPU), unless `PARCRYPT_REQUIRE_GPU=1`
//! (set where a GPU is known to be present), which makes a missing device a failure. Anything
//! else that stops a device from opening (hiprtc missing on a GPU machine, a self-test
//! failure) fails. The tests every API runs are `device_tests!` (`support/device_tests.rs`)
//! over the shared cases (`support/cases.rs`); this file says how HIP runs them.
//!
//! These tests have not run on an AMD GPU: none was available where they were written.

#[macro_use]
#[path = "support/cases.rs"]
mod cases;
#[macro_use]
#[path = "support/device_tests.rs"]
mod device_tests;

use parcrypt_ciphers::Algorithm;
use parcrypt_gpu::{
    GpuDevice, GpuError, GpuOperation, HipDevice, HipDeviceInfo, OpenOptions, TableCopies,
};

const EVERY_CASE_SEED: u64 = 0x6869_7021;
const WIDEST_GROUP: usize = 1024;

/// What 64 KiB of LDS holds (the default), and smaller layouts.
fn table_layouts() -> Vec<TableCopies> {
    vec![
        TableCopies {
            aes_encrypt: 32,
            aes_decrypt: 32,
            blowfish: 16,
        },
        TableCopies {
            aes_encrypt: 16,
            aes_decrypt: 8,
            blowfish: 2,
        },
        TableCopies::uniform(1),
    ]
}

// HIP has one way in, `process`.
process_is_the_only_path!();

/// Kernel times of segmented CTR come from the same path as untimed calls.
fn more_segment_slab_checks(device: &Device) {
    let key = parcrypt_gpu::KeyMaterial::new(Algorithm::Aes128, &[3u8; 16]).unwrap();
    let mut data = vec![7u8; 5 * cases::TEST_SLAB_BYTES + 100];
    let operation = cases::kib_segments(data.len());
    let times = device.kernel_times(&key, &operation, &mut data, 2).unwrap();
    assert_eq!(times.len(), 2);
    assert!(times.iter().all(|time| *time > std::time::Duration::ZERO));
}

/// One program per layout: the copies asked for are the copies compiled.
fn more_layout_checks(device: &Device, copies: TableCopies) {
    assert!(device.description().contains(&copies.to_string()));
}

fn more_device_list_checks(device: &Device, info: &HipDeviceInfo) {
    assert!(info.compute_units >= 1 && info.shared_memory_per_block_bytes > 0);
    assert!(info.target().starts_with("gfx"), "{info}");
    assert_eq!(device.architecture(), info.target());
}

device_tests!(HipDevice, cases::open_hip, "PARCRYPT_HIP_DEVICE");

#[test]
fn blowfish_copies_fit_the_lds_by_default() {
    let Some(device) = shared_device() else {
        return;
    };
    let copies = device.table_copies();
    assert_eq!(copies.aes_encrypt, 32);
    assert!(copies.largest_table_bytes() <= parcrypt_gpu::hip::LDS_LIMIT_BYTES);
    // 32 Blowfish copies (128 KiB) are refused before hiprtc sees them.
    let options = OpenOptions {
        table_copies: Some(TableCopies::uniform(32)),
        ..OpenOptions::default()
    };
    assert!(matches!(
        HipDevice::open_with(device.info().index, &options),
        Err(GpuError::InvalidInput(_))
    ));
}
