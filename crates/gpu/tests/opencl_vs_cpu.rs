//! The OpenCL path against the CPU path: every cipher, key size, operation and awkward
//! length must give the bytes `parcrypt-modes` gives over `parcrypt-ciphers`.
//!
//! Runs on whatever OpenCL device is first (or `PARCRYPT_OPENCL_DEVICE=N`); in CI that is
//! PoCL on the CPU. Without OpenCL the tests print a SKIPPED line and pass, unless `CI` is
//! set: CI installs PoCL, so a missing device there is a broken setup, not a reason to skip.
//! The cases themselves are shared with the CUDA tests (`support/cases.rs`).

#[path = "support/cases.rs"]
mod cases;

use std::sync::OnceLock;

use parcrypt_ciphers::Algorithm;
use parcrypt_gpu::{GpuError, GpuOperation, OpenClDevice, OpenOptions, TableCopies};

fn device_index() -> usize {
    cases::device_index("PARCRYPT_OPENCL_DEVICE")
}

/// One device with default options, shared by the tests that do not need their own.
fn shared_device() -> Option<&'static OpenClDevice> {
    static DEVICE: OnceLock<Option<OpenClDevice>> = OnceLock::new();
    DEVICE
        .get_or_init(|| cases::open_opencl(&OpenOptions::default()))
        .as_ref()
}

/// Runs `operation` on the device and on the CPU and insists on the same bytes.
fn assert_same(
    device: &OpenClDevice,
    algorithm: Algorithm,
    key: &[u8],
    operation: &GpuOperation,
    data: &[u8],
) {
    cases::assert_same_as_cpu(
        algorithm,
        key,
        operation,
        data,
        "",
        |material, operation, data| {
            let mut result = data.to_vec();
            device.process(material, operation, &mut result)?;
            Ok(result)
        },
    );
}

/// The shared cases' check for `device`.
fn on(device: &OpenClDevice) -> impl Fn(Algorithm, &[u8], &GpuOperation, &[u8]) + Sync + '_ {
    move |algorithm: Algorithm, key: &[u8], operation: &GpuOperation, data: &[u8]| {
        assert_same(device, algorithm, key, operation, data)
    }
}

#[test]
fn every_cipher_operation_and_size_matches_the_cpu() {
    let Some(device) = shared_device() else {
        return;
    };
    cases::every_cipher_operation_and_size(0x6770_7531, on(device));
}

#[test]
fn ctr_counters_wrap_like_the_cpu() {
    let Some(device) = shared_device() else {
        return;
    };
    cases::ctr_wrap_cases(on(device));
}

#[test]
fn slabs_chain_counters_and_cbc_blocks_across_both_queues() {
    // Slabs alternate between the two queues.
    let options = OpenOptions {
        slab_bytes: cases::TEST_SLAB_BYTES,
        ..OpenOptions::default()
    };
    let Some(device) = cases::open_opencl(&options) else {
        return;
    };
    assert_eq!(device.slab_bytes(), cases::TEST_SLAB_BYTES);
    cases::slab_edge_cases(on(&device));
}

#[test]
fn ctr_segments_match_the_cpu() {
    let Some(device) = shared_device() else {
        return;
    };
    cases::ctr_segment_cases(on(device));
}

#[test]
fn ctr_segment_slabs_are_cut_between_segments() {
    let options = OpenOptions {
        slab_bytes: cases::TEST_SLAB_BYTES,
        ..OpenOptions::default()
    };
    let Some(device) = cases::open_opencl(&options) else {
        return;
    };
    cases::ctr_segment_slab_cases(on(&device));
    cases::segments_longer_than_a_slab_are_refused(|key, operation, data| {
        device.process(key, operation, data)
    });
    // Timed calls take the same path.
    let key = parcrypt_gpu::KeyMaterial::new(Algorithm::Aes128, &[3u8; 16]).unwrap();
    let data: Vec<u8> = (0..5 * cases::TEST_SLAB_BYTES + 100)
        .map(|index| (index * 31 % 251) as u8)
        .collect();
    let operation = GpuOperation::CtrSegments {
        counters: (0..data.len().div_ceil(1024) * 16)
            .map(|index| index as u8)
            .collect(),
        segment_bytes: 1024,
        rule: parcrypt_modes::ctr::CounterRule::Low32,
    };
    let mut timed = data.clone();
    let (kernel, _) = device.process_timed(&key, &operation, &mut timed).unwrap();
    assert!(kernel > std::time::Duration::ZERO);
    assert!(timed == cases::on_cpu(Algorithm::Aes128, &[3u8; 16], &operation, &data));
}

#[test]
fn per_lane_and_reduced_table_layouts_match_the_cpu() {
    // PoCL is a CPU device and gets one copy by default; these are the layouts GPUs get.
    for copies in [
        TableCopies::uniform(32),
        TableCopies {
            aes_encrypt: 16,
            aes_decrypt: 8,
            blowfish: 2,
        },
    ] {
        let options = OpenOptions {
            table_copies: Some(copies),
            ..OpenOptions::default()
        };
        let Some(device) = cases::open_opencl(&options) else {
            return;
        };
        assert_eq!(device.table_copies(), copies);
        cases::table_layout_cases(copies, on(&device));
    }
}

#[test]
fn launch_geometry_does_not_change_results() {
    let Some(device) = cases::open_opencl(&OpenOptions::default()) else {
        return;
    };
    cases::launch_geometry_cases(
        256,
        |geometry| device.set_launch_geometry(geometry),
        || device.launch_geometry(),
        on(&device),
    );
}

#[test]
fn concurrent_calls_on_one_device_do_not_mix() {
    let Some(device) = shared_device() else {
        return;
    };
    cases::concurrent_cases(on(device));
}

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

#[test]
fn compiled_kernels_are_cached_and_a_damaged_cache_is_recompiled() {
    if shared_device().is_none() {
        return;
    }
    cases::kernel_cache_cases(
        cases::open_opencl,
        OpenClDevice::program_origin,
        assert_same,
    );
}

#[test]
fn bad_lengths_are_refused_with_a_reason() {
    let Some(device) = shared_device() else {
        return;
    };
    cases::bad_length_cases(|key, operation, data| device.process(key, operation, data));
}

#[test]
fn device_list_describes_the_device() {
    let Some(device) = shared_device() else {
        return;
    };
    let devices = OpenClDevice::list().unwrap();
    let info = &devices[device_index()];
    assert_eq!(info, device.info());
    assert_eq!(device.name(), info.name.trim());
    assert!(info.compute_units >= 1 && info.local_memory_bytes > 0);
    assert!(info.to_string().starts_with(&format!("#{} ", info.index)));
}

#[test]
fn ghash_partial_sums_join_to_the_cpu_ghash() {
    let Some(device) = shared_device() else {
        return;
    };
    cases::ghash_cases(
        0x6768_6173,
        &cases::GHASH_SEGMENT_SIZES,
        |hash_key, data, segment_bytes| device.ghash_segments(hash_key, data, segment_bytes),
    );
}

#[test]
fn ghash_slabs_of_whole_segments_alternate_queues() {
    let options = OpenOptions {
        slab_bytes: cases::TEST_SLAB_BYTES,
        ..OpenOptions::default()
    };
    let Some(device) = cases::open_opencl(&options) else {
        return;
    };
    // 4144-byte slabs: 4096 bytes of 1024- or 4096-byte segments, 4128 of 48-byte ones.
    cases::ghash_cases(
        0x736c_6162,
        &[16, 48, 1024, 4096],
        |hash_key, data, segment_bytes| device.ghash_segments(hash_key, data, segment_bytes),
    );
    for bad in [0, 24, cases::TEST_SLAB_BYTES + 16] {
        assert!(
            matches!(
                device.ghash_segments(&[1; 16], &[0; 64], bad),
                Err(GpuError::InvalidInput(_))
            ),
            "{bad}-byte segments must be refused"
        );
    }
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
