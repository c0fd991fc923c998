//! The CUDA path against the CPU path: every cipher, key size, operation and awkward length
//! must give the bytes `parcrypt-modes` gives over `parcrypt-ciphers`, through each way data
//! reaches the GPU: ordinary host memory (staged), pinned host memory, and buffers already
//! on the device (processed in place).
//!
//! Runs on CUDA device 0 (or `PARCRYPT_CUDA_DEVICE=N`). Without a CUDA driver or GPU the
//! tests print a SKIPPED line and pass, in CI too: CI has no GPU. Anything else that stops a
//! device from opening (NVRTC missing on a GPU machine, a self-test failure) fails.

use std::sync::OnceLock;

use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
use parcrypt_gpu::cuda::KernelVariant;
use parcrypt_gpu::{
    CudaDevice, GpuDevice, GpuError, GpuOperation, KernelCache, KeyMaterial, LaunchGeometry,
    OpenOptions, ProgramOrigin, TableCopies,
};
use parcrypt_modes::ctr::{Counter, CounterRule};
use parcrypt_modes::{cbc, ctr, ecb, Direction};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The lengths the task names: empty, one byte, around one block, a page plus five, a MiB
/// plus three. ECB and CBC take them rounded down to whole blocks.
const SIZES: [usize; 7] = [0, 1, 15, 16, 17, 4096 + 5, (1 << 20) + 3];

fn device_index() -> usize {
    std::env::var("PARCRYPT_CUDA_DEVICE")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0)
}

/// Opens the test device with `options`, or says why the test is skipped.
fn open(options: &OpenOptions) -> Option<CudaDevice> {
    match CudaDevice::open_with(device_index(), options) {
        Ok(device) => Some(device),
        Err(error @ (GpuError::NoCudaDriver { .. } | GpuError::NoCudaDevice { .. })) => {
            println!("SKIPPED: no CUDA GPU/driver [{error}]");
            None
        }
        Err(error) => panic!("opening CUDA device {}: {error}", device_index()),
    }
}

/// One device with default options, shared by the tests that do not need their own.
fn shared_device() -> Option<&'static CudaDevice> {
    static DEVICE: OnceLock<Option<CudaDevice>> = OnceLock::new();
    DEVICE
        .get_or_init(|| open(&OpenOptions::default()))
        .as_ref()
}

fn random_bytes(rng: &mut StdRng, length: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; length];
    rng.fill_bytes(&mut bytes);
    bytes
}

/// The CPU result of `operation` over `data`.
fn on_cpu(algorithm: Algorithm, key: &[u8], operation: &GpuOperation, data: &[u8]) -> Vec<u8> {
    let cipher = new_cipher(algorithm, Implementation::Fast, key).unwrap();
    let mut result = data.to_vec();
    match operation {
        GpuOperation::EcbEncrypt => ecb::apply(cipher.as_ref(), Direction::Encrypt, &mut result),
        GpuOperation::EcbDecrypt => ecb::apply(cipher.as_ref(), Direction::Decrypt, &mut result),
        GpuOperation::CbcDecrypt { previous } => {
            cbc::decrypt(cipher.as_ref(), previous, &mut result)
        }
        GpuOperation::Ctr { counter, rule } => {
            ctr::apply(cipher.as_ref(), Counter::new(counter, *rule), &mut result)
        }
    }
    result
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

/// Runs `operation` on the device through `path` and on the CPU, and insists on the same
/// bytes.
fn assert_same(
    device: &CudaDevice,
    path: Path,
    algorithm: Algorithm,
    key: &[u8],
    operation: &GpuOperation,
    data: &[u8],
) {
    let expected = on_cpu(algorithm, key, operation, data);
    let material = KeyMaterial::new(algorithm, key).unwrap();
    let result = on_device(device, path, &material, operation, data).unwrap_or_else(|error| {
        panic!(
            "{algorithm} {operation:?} on {} bytes via {path:?}: {error}",
            data.len()
        )
    });
    if let Some(first) = result
        .iter()
        .zip(&expected)
        .position(|(got, want)| got != want)
    {
        panic!(
            "{algorithm} with {}-byte key, {operation:?}, {} bytes via {path:?}: first \
             difference at byte {first} (block {})",
            key.len(),
            data.len(),
            first / algorithm.block_size()
        );
    }
    assert_eq!(result.len(), expected.len());
}

/// Every algorithm with the key lengths worth covering: the fixed ones, and Blowfish at its
/// shortest, a common and its longest length.
fn keyed_algorithms() -> Vec<(Algorithm, usize)> {
    Algorithm::ALL
        .into_iter()
        .flat_map(|algorithm| match algorithm {
            Algorithm::Blowfish => vec![(algorithm, 4), (algorithm, 16), (algorithm, 56)],
            _ => vec![(algorithm, algorithm.key_lengths().0)],
        })
        .collect()
}

/// Every operation with random chaining values.
fn operations(rng: &mut StdRng, block_size: usize) -> Vec<GpuOperation> {
    vec![
        GpuOperation::EcbEncrypt,
        GpuOperation::EcbDecrypt,
        GpuOperation::CbcDecrypt {
            previous: random_bytes(rng, block_size),
        },
        GpuOperation::Ctr {
            counter: random_bytes(rng, block_size),
            rule: CounterRule::Full,
        },
        GpuOperation::Ctr {
            counter: random_bytes(rng, block_size),
            rule: CounterRule::Low32,
        },
    ]
}

/// The length an operation is run on: CTR takes any, the others whole blocks.
fn length_for(operation: &GpuOperation, size: usize, block_size: usize) -> usize {
    match operation {
        GpuOperation::Ctr { .. } => size,
        _ => size / block_size * block_size,
    }
}

#[test]
fn every_cipher_operation_size_and_path_matches_the_cpu() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = StdRng::seed_from_u64(0x6375_6461);
    for (algorithm, key_length) in keyed_algorithms() {
        let key = random_bytes(&mut rng, key_length);
        let block_size = algorithm.block_size();
        for operation in operations(&mut rng, block_size) {
            for size in SIZES {
                let data = random_bytes(&mut rng, length_for(&operation, size, block_size));
                for path in PATHS {
                    assert_same(device, path, algorithm, &key, &operation, &data);
                }
            }
        }
    }
}

/// Counter blocks `before_wrap` blocks short of where a rule's arithmetic wraps.
fn counter_near(block_size: usize, wrap_bits: u32, before_wrap: u8, filler: u8) -> Vec<u8> {
    let mut counter = vec![filler; block_size];
    let low_bytes = (wrap_bits / 8) as usize;
    let start = block_size - low_bytes;
    counter[start..].fill(0xff);
    counter[block_size - 1] = 0xff - (before_wrap - 1);
    counter
}

#[test]
fn ctr_counters_wrap_like_the_cpu() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = StdRng::seed_from_u64(0x00c0_ffee);
    for (algorithm, key_length) in [
        (Algorithm::Aes128, 16),
        (Algorithm::Aes256, 32),
        (Algorithm::Blowfish, 16),
        (Algorithm::Rc6_192, 24),
    ] {
        let key = random_bytes(&mut rng, key_length);
        let block_size = algorithm.block_size();
        // 2^32 and the full width for both sizes, 2^64 inside a 16-byte counter too.
        let mut wraps = vec![32, 8 * block_size as u32];
        if block_size == 16 {
            wraps.push(64);
        }
        for wrap_bits in wraps {
            for rule in [CounterRule::Full, CounterRule::Low32] {
                // The wrap falls inside the data, and (with 4101 bytes) a partial block ends
                // it, which the device path runs through its one-block tail buffer.
                let counter = counter_near(block_size, wrap_bits, 5, 0x5a);
                let data = random_bytes(&mut rng, 4096 + 5);
                let operation = GpuOperation::Ctr { counter, rule };
                for path in PATHS {
                    assert_same(device, path, algorithm, &key, &operation, &data);
                }
            }
        }
        // The tail block's counter is past the wrap: only the partial block is after it.
        let operation = GpuOperation::Ctr {
            counter: counter_near(block_size, 32, 2, 0x5a),
            rule: CounterRule::Full,
        };
        let data = random_bytes(&mut rng, block_size * 2 + 3);
        for path in PATHS {
            assert_same(device, path, algorithm, &key, &operation, &data);
        }
    }
}

#[test]
fn slabs_chain_counters_and_cbc_blocks_across_every_stream() {
    // A slab of 4 KiB + 48 bytes cuts a MiB into ~250 slabs rotating over the streams, with
    // slab edges that are not powers of two; on the device path CBC decryption runs in
    // chunks of the same size, each needing the ciphertext block before it.
    let options = OpenOptions {
        slab_bytes: 4096 + 48,
        ..OpenOptions::default()
    };
    let Some(device) = open(&options) else { return };
    assert_eq!(device.slab_bytes(), 4096 + 48);
    let mut rng = StdRng::seed_from_u64(0x51ab);
    for (algorithm, key_length) in [
        (Algorithm::Aes192, 24),
        (Algorithm::Blowfish, 9),
        (Algorithm::Rc6_256, 32),
    ] {
        let key = random_bytes(&mut rng, key_length);
        let block_size = algorithm.block_size();
        let mut cases = operations(&mut rng, block_size);
        // A slab boundary close to a 2^32 counter wrap.
        cases.push(GpuOperation::Ctr {
            counter: counter_near(block_size, 32, 200, 0x11),
            rule: CounterRule::Full,
        });
        for operation in cases {
            for size in [4096 + 48 - 1, 4096 + 48, 4096 + 49, (1 << 20) + 3] {
                let data = random_bytes(&mut rng, length_for(&operation, size, block_size));
                for path in PATHS {
                    assert_same(&device, path, algorithm, &key, &operation, &data);
                }
            }
        }
    }
}

#[test]
fn per_lane_static_and_reduced_table_layouts_match_the_cpu() {
    for copies in [
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
    ] {
        let options = OpenOptions {
            table_copies: Some(copies),
            ..OpenOptions::default()
        };
        let Some(device) = open(&options) else { return };
        assert_eq!(device.table_copies(), copies);
        assert_eq!(
            device.kernel_variant(),
            KernelVariant::for_table_copies(copies)
        );
        let mut rng = StdRng::seed_from_u64(u64::from(copies.blowfish));
        for (algorithm, key_length) in keyed_algorithms() {
            let key = random_bytes(&mut rng, key_length);
            let block_size = algorithm.block_size();
            for operation in operations(&mut rng, block_size) {
                let data = random_bytes(&mut rng, length_for(&operation, 65536 + 7, block_size));
                for path in [Path::Host, Path::DeviceBuffer] {
                    assert_same(&device, path, algorithm, &key, &operation, &data);
                }
            }
        }
    }
}

#[test]
fn launch_geometry_does_not_change_results() {
    let Some(device) = open(&OpenOptions::default()) else {
        return;
    };
    let mut rng = StdRng::seed_from_u64(0x6e0);
    for geometry in [
        LaunchGeometry {
            threads_per_group: 1,
            blocks_per_thread: 1,
        },
        LaunchGeometry {
            threads_per_group: 7,
            blocks_per_thread: 3,
        },
        LaunchGeometry {
            threads_per_group: 32,
            blocks_per_thread: 1000,
        },
        LaunchGeometry {
            threads_per_group: 1024,
            blocks_per_thread: 1,
        },
        // More than any GPU allows per block: clamped per kernel.
        LaunchGeometry {
            threads_per_group: 1 << 20,
            blocks_per_thread: 2,
        },
    ] {
        device.set_launch_geometry(geometry).unwrap();
        assert_eq!(device.launch_geometry(), geometry);
        for (algorithm, key_length) in [
            (Algorithm::Aes128, 16),
            (Algorithm::Blowfish, 20),
            (Algorithm::Rc6_128, 16),
        ] {
            let key = random_bytes(&mut rng, key_length);
            for operation in operations(&mut rng, algorithm.block_size()) {
                let data = random_bytes(
                    &mut rng,
                    length_for(&operation, 20000 + 3, algorithm.block_size()),
                );
                for path in [Path::Host, Path::DeviceBuffer] {
                    assert_same(&device, path, algorithm, &key, &operation, &data);
                }
            }
        }
    }
    let zero = LaunchGeometry {
        threads_per_group: 0,
        blocks_per_thread: 1,
    };
    assert!(matches!(
        device.set_launch_geometry(zero),
        Err(GpuError::InvalidInput(_))
    ));
}

#[test]
fn concurrent_calls_on_one_device_do_not_mix() {
    let Some(device) = shared_device() else {
        return;
    };
    std::thread::scope(|scope| {
        for thread in 0..4u64 {
            scope.spawn(move || {
                let mut rng = StdRng::seed_from_u64(100 + thread);
                let algorithm = [
                    Algorithm::Aes128,
                    Algorithm::Blowfish,
                    Algorithm::Rc6_128,
                    Algorithm::Aes256,
                ][thread as usize];
                let key = random_bytes(&mut rng, algorithm.key_lengths().1);
                for operation in operations(&mut rng, algorithm.block_size()) {
                    let data = random_bytes(
                        &mut rng,
                        length_for(&operation, 50000 + 1, algorithm.block_size()),
                    );
                    for path in PATHS {
                        assert_same(device, path, algorithm, &key, &operation, &data);
                    }
                }
            });
        }
    });
}

#[test]
fn compiled_kernels_are_cached_and_a_damaged_cache_is_recompiled() {
    if shared_device().is_none() {
        return;
    }
    let directory = tempfile::tempdir().unwrap();
    let options = OpenOptions {
        kernel_cache: KernelCache::Directory(directory.path().to_path_buf()),
        ..OpenOptions::default()
    };
    let first = open(&options).unwrap();
    assert_eq!(first.program_origin(), ProgramOrigin::Compiled);
    drop(first);
    let second = open(&options).unwrap();
    assert_eq!(second.program_origin(), ProgramOrigin::Cache);
    drop(second);

    let entries: Vec<_> = std::fs::read_dir(directory.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(
        entries.len(),
        1,
        "one binary per device and source: {entries:?}"
    );
    std::fs::write(&entries[0], b"not a program binary").unwrap();
    let third = open(&options).unwrap();
    assert_eq!(third.program_origin(), ProgramOrigin::Compiled);
    let mut rng = StdRng::seed_from_u64(3);
    let key = random_bytes(&mut rng, 16);
    let data = random_bytes(&mut rng, 1000);
    let operation = GpuOperation::Ctr {
        counter: vec![0; 16],
        rule: CounterRule::Full,
    };
    assert_same(
        &third,
        Path::Host,
        Algorithm::Aes128,
        &key,
        &operation,
        &data,
    );
}

#[test]
fn bad_lengths_and_misaligned_device_views_are_refused_with_a_reason() {
    let Some(device) = shared_device() else {
        return;
    };
    let key = KeyMaterial::new(Algorithm::Aes128, &[1; 16]).unwrap();
    let error = device
        .process(&key, &GpuOperation::EcbEncrypt, &mut [0; 17])
        .unwrap_err();
    assert!(
        error.to_string().contains("whole 16-byte blocks"),
        "{error}"
    );
    let short_counter = GpuOperation::Ctr {
        counter: vec![0; 8],
        rule: CounterRule::Full,
    };
    assert!(matches!(
        device.process(&key, &short_counter, &mut [0; 4]),
        Err(GpuError::InvalidInput(_))
    ));

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

#[test]
fn device_list_describes_the_device() {
    let Some(device) = shared_device() else {
        return;
    };
    let devices = CudaDevice::list().unwrap();
    let info = &devices[device_index()];
    assert_eq!(info, device.info());
    assert_eq!(device.name(), info.name.trim());
    assert!(info.multiprocessors >= 1 && info.shared_memory_per_block_bytes >= 48 * 1024);
    assert!(info.to_string().starts_with(&format!("#{} ", info.index)));
    let as_trait: &dyn GpuDevice = device;
    assert_eq!(as_trait.api(), "cuda");
    assert!(as_trait.description().contains(device.architecture()));
    // A GPU whose architecture NVRTC knows gets machine code, not PTX.
    let (major, minor) = info.compute_capability;
    if major == 9 && minor == 0 {
        assert_eq!(device.architecture(), "sm_90");
        assert_eq!(device.table_copies(), TableCopies::uniform(32));
    }
}
