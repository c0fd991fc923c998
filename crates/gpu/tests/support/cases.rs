//! The cases `cuda_vs_cpu.rs` and `opencl_vs_cpu.rs` share: the CPU reference, the random
//! keys, operations and lengths, and the loops that run them. Each API's test file opens its
//! device and passes a `check` closure that runs one case on it (through every way data
//! reaches that device) and compares it with the CPU through [`assert_same_as_cpu`].
//!
//! Included from both with `#[path = "support/cases.rs"] mod cases;`.

use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
use parcrypt_gpu::{
    GpuError, GpuOperation, KernelCache, KeyMaterial, LaunchGeometry, OpenOptions, ProgramOrigin,
    TableCopies,
};
use parcrypt_modes::ctr::{Counter, CounterRule};
use parcrypt_modes::{cbc, ctr, ecb, Direction};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The lengths the task names: empty, one byte, around one block, a page plus five, a MiB
/// plus three. ECB and CBC take them rounded down to whole blocks.
pub const SIZES: [usize; 7] = [0, 1, 15, 16, 17, 4096 + 5, (1 << 20) + 3];

/// The slab size [`slab_edge_cases`] wants the device opened with: 4 KiB + 48 bytes cuts a
/// MiB into ~250 slabs rotating over the queues or streams, with slab edges that are not
/// powers of two.
pub const TEST_SLAB_BYTES: usize = 4096 + 48;

/// The device number in the environment variable `variable`, or 0.
pub fn device_index(variable: &str) -> usize {
    std::env::var(variable)
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0)
}

pub fn random_bytes(rng: &mut StdRng, length: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; length];
    rng.fill_bytes(&mut bytes);
    bytes
}

/// The CPU result of `operation` over `data`.
pub fn on_cpu(algorithm: Algorithm, key: &[u8], operation: &GpuOperation, data: &[u8]) -> Vec<u8> {
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

/// Runs `operation` on the device with `on_device` and on the CPU, and insists on the same
/// bytes. `via` ends the description of the case in a failure (" via Pinned", or "").
pub fn assert_same_as_cpu(
    algorithm: Algorithm,
    key: &[u8],
    operation: &GpuOperation,
    data: &[u8],
    via: &str,
    on_device: impl FnOnce(&KeyMaterial, &GpuOperation, &[u8]) -> Result<Vec<u8>, GpuError>,
) {
    let expected = on_cpu(algorithm, key, operation, data);
    let material = KeyMaterial::new(algorithm, key).unwrap();
    let result = on_device(&material, operation, data).unwrap_or_else(|error| {
        panic!(
            "{algorithm} {operation:?} on {} bytes{via}: {error}",
            data.len()
        )
    });
    if let Some(first) = result
        .iter()
        .zip(&expected)
        .position(|(got, want)| got != want)
    {
        panic!(
            "{algorithm} with {}-byte key, {operation:?}, {} bytes{via}: first difference at \
             byte {first} (block {})",
            key.len(),
            data.len(),
            first / algorithm.block_size()
        );
    }
    assert_eq!(result.len(), expected.len());
}

/// Every algorithm with the key lengths worth covering: the fixed ones, and Blowfish at its
/// shortest, a common and its longest length.
pub fn keyed_algorithms() -> Vec<(Algorithm, usize)> {
    Algorithm::ALL
        .into_iter()
        .flat_map(|algorithm| match algorithm {
            Algorithm::Blowfish => vec![(algorithm, 4), (algorithm, 16), (algorithm, 56)],
            _ => vec![(algorithm, algorithm.key_lengths().0)],
        })
        .collect()
}

/// Every operation with random chaining values.
pub fn operations(rng: &mut StdRng, block_size: usize) -> Vec<GpuOperation> {
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
pub fn length_for(operation: &GpuOperation, size: usize, block_size: usize) -> usize {
    match operation {
        GpuOperation::Ctr { .. } => size,
        _ => size / block_size * block_size,
    }
}

/// Counter blocks `before_wrap` blocks short of where a rule's arithmetic wraps.
pub fn counter_near(block_size: usize, wrap_bits: u32, before_wrap: u8, filler: u8) -> Vec<u8> {
    let mut counter = vec![filler; block_size];
    let low_bytes = (wrap_bits / 8) as usize;
    let start = block_size - low_bytes;
    counter[start..].fill(0xff);
    counter[block_size - 1] = 0xff - (before_wrap - 1);
    counter
}

/// Every keyed algorithm and operation over every one of [`SIZES`], random data from `seed`.
pub fn every_cipher_operation_and_size(
    seed: u64,
    check: impl Fn(Algorithm, &[u8], &GpuOperation, &[u8]),
) {
    let mut rng = StdRng::seed_from_u64(seed);
    for (algorithm, key_length) in keyed_algorithms() {
        let key = random_bytes(&mut rng, key_length);
        let block_size = algorithm.block_size();
        for operation in operations(&mut rng, block_size) {
            for size in SIZES {
                let data = random_bytes(&mut rng, length_for(&operation, size, block_size));
                check(algorithm, &key, &operation, &data);
            }
        }
    }
}

/// CTR counters that wrap inside the data, at 2^32, 2^64 and the full width, under both
/// rules.
pub fn ctr_wrap_cases(check: impl Fn(Algorithm, &[u8], &GpuOperation, &[u8])) {
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
                // it, which CUDA's device path runs through its one-block tail buffer.
                let counter = counter_near(block_size, wrap_bits, 5, 0x5a);
                let data = random_bytes(&mut rng, 4096 + 5);
                let operation = GpuOperation::Ctr { counter, rule };
                check(algorithm, &key, &operation, &data);
            }
        }
        // The tail block's counter is past the wrap: only the partial block is after it.
        let operation = GpuOperation::Ctr {
            counter: counter_near(block_size, 32, 2, 0x5a),
            rule: CounterRule::Full,
        };
        let data = random_bytes(&mut rng, block_size * 2 + 3);
        check(algorithm, &key, &operation, &data);

        // The two rules must really differ across 2^32 with a non-zero upper part, or the
        // cases above would not tell them apart.
        let counter = counter_near(block_size, 32, 1, 0x5a);
        let full = on_cpu(
            algorithm,
            &key,
            &GpuOperation::Ctr {
                counter: counter.clone(),
                rule: CounterRule::Full,
            },
            &[0; 64],
        );
        let low = on_cpu(
            algorithm,
            &key,
            &GpuOperation::Ctr {
                counter,
                rule: CounterRule::Low32,
            },
            &[0; 64],
        );
        assert_eq!(full[..block_size], low[..block_size]);
        assert_ne!(full[block_size..], low[block_size..]);
    }
}

/// Lengths around the edges of [`TEST_SLAB_BYTES`] slabs and a MiB of them, every operation
/// plus a slab boundary close to a 2^32 counter wrap: for a device opened with that slab
/// size, so that counters and CBC blocks must chain across slabs.
pub fn slab_edge_cases(check: impl Fn(Algorithm, &[u8], &GpuOperation, &[u8])) {
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
            for size in [
                TEST_SLAB_BYTES - 1,
                TEST_SLAB_BYTES,
                TEST_SLAB_BYTES + 1,
                (1 << 20) + 3,
            ] {
                let data = random_bytes(&mut rng, length_for(&operation, size, block_size));
                check(algorithm, &key, &operation, &data);
            }
        }
    }
}

/// Every keyed algorithm and operation on 64 KiB + 7 bytes, for a device opened with
/// `copies` table copies.
pub fn table_layout_cases(
    copies: TableCopies,
    check: impl Fn(Algorithm, &[u8], &GpuOperation, &[u8]),
) {
    let mut rng = StdRng::seed_from_u64(u64::from(copies.blowfish));
    for (algorithm, key_length) in keyed_algorithms() {
        let key = random_bytes(&mut rng, key_length);
        let block_size = algorithm.block_size();
        for operation in operations(&mut rng, block_size) {
            let data = random_bytes(&mut rng, length_for(&operation, 65536 + 7, block_size));
            check(algorithm, &key, &operation, &data);
        }
    }
}

/// Sets launch shapes from one thread per group to more than any device allows, runs three
/// ciphers under each, and insists that a shape without threads is refused.
/// `widest_group`: the largest group size the device really takes.
pub fn launch_geometry_cases(
    widest_group: usize,
    set: impl Fn(LaunchGeometry) -> Result<(), GpuError>,
    get: impl Fn() -> LaunchGeometry,
    check: impl Fn(Algorithm, &[u8], &GpuOperation, &[u8]),
) {
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
            threads_per_group: widest_group,
            blocks_per_thread: 1,
        },
        // More than any device allows per group: clamped per kernel.
        LaunchGeometry {
            threads_per_group: 1 << 20,
            blocks_per_thread: 2,
        },
    ] {
        set(geometry).unwrap();
        assert_eq!(get(), geometry);
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
                check(algorithm, &key, &operation, &data);
            }
        }
    }
    let zero = LaunchGeometry {
        threads_per_group: 0,
        blocks_per_thread: 1,
    };
    assert!(matches!(set(zero), Err(GpuError::InvalidInput(_))));
}

/// Four threads running different ciphers on one device at once.
pub fn concurrent_cases(check: impl Fn(Algorithm, &[u8], &GpuOperation, &[u8]) + Sync) {
    let check = &check;
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
                    check(algorithm, &key, &operation, &data);
                }
            });
        }
    });
}

/// Opens a device three times over one cache directory: compiled, then from the cache, then
/// (after the cached binary is damaged) compiled again, and still right.
pub fn kernel_cache_cases<D>(
    open: impl Fn(&OpenOptions) -> Option<D>,
    origin: impl Fn(&D) -> ProgramOrigin,
    check: impl Fn(&D, Algorithm, &[u8], &GpuOperation, &[u8]),
) {
    let directory = tempfile::tempdir().unwrap();
    let options = OpenOptions {
        kernel_cache: KernelCache::Directory(directory.path().to_path_buf()),
        ..OpenOptions::default()
    };
    let first = open(&options).unwrap();
    assert_eq!(origin(&first), ProgramOrigin::Compiled);
    drop(first);
    let second = open(&options).unwrap();
    assert_eq!(origin(&second), ProgramOrigin::Cache);
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
    assert_eq!(origin(&third), ProgramOrigin::Compiled);
    let mut rng = StdRng::seed_from_u64(3);
    let key = random_bytes(&mut rng, 16);
    let data = random_bytes(&mut rng, 1000);
    let operation = GpuOperation::Ctr {
        counter: vec![0; 16],
        rule: CounterRule::Full,
    };
    check(&third, Algorithm::Aes128, &key, &operation, &data);
}

/// ECB on a partial block and a counter of the wrong size are refused, the first with a
/// message that names the block size.
pub fn bad_length_cases(
    process: impl Fn(&KeyMaterial, &GpuOperation, &mut [u8]) -> Result<(), GpuError>,
) {
    let key = KeyMaterial::new(Algorithm::Aes128, &[1; 16]).unwrap();
    let error = process(&key, &GpuOperation::EcbEncrypt, &mut [0; 17]).unwrap_err();
    assert!(
        error.to_string().contains("whole 16-byte blocks"),
        "{error}"
    );
    let short_counter = GpuOperation::Ctr {
        counter: vec![0; 8],
        rule: CounterRule::Full,
    };
    assert!(matches!(
        process(&key, &short_counter, &mut [0; 4]),
        Err(GpuError::InvalidInput(_))
    ));
}

/// GHASH segment sizes: one block, three blocks, a page, a Cobblestone chunk, a MiB.
pub const GHASH_SEGMENT_SIZES: [usize; 5] = [16, 48, 4096, 16 << 10, 1 << 20];

/// GHASH partial sums from the device (`segments(hash_key, data, segment_bytes)`), joined
/// on the host, against the CPU's GHASH of the zero-padded data; random H and data of every
/// size in [`SIZES`], plus the edge keys and data (H = 0, all ones, one bit).
pub fn ghash_cases(
    seed: u64,
    segment_sizes: &[usize],
    segments: impl Fn(&[u8; 16], &[u8], usize) -> Result<Vec<u128>, GpuError>,
) {
    use parcrypt_gpu::ghash::join_partials;
    use parcrypt_modes::ghash::GhashKey;

    let mut rng = StdRng::seed_from_u64(seed);
    let mut cases: Vec<([u8; 16], Vec<u8>)> = SIZES
        .iter()
        .map(|&size| {
            let mut hash_key = [0u8; 16];
            rng.fill_bytes(&mut hash_key);
            (hash_key, random_bytes(&mut rng, size))
        })
        .collect();
    let mut one_bit = [0u8; 16];
    one_bit[0] = 0x80;
    cases.push(([0u8; 16], random_bytes(&mut rng, 100)));
    cases.push(([0xff; 16], vec![0xff; 4096 + 5]));
    cases.push((one_bit, random_bytes(&mut rng, 4096 + 5)));

    for (hash_key, data) in &cases {
        let key = GhashKey::new(hash_key);
        let mut padded = data.clone();
        padded.resize(data.len().div_ceil(16) * 16, 0);
        let mut expected = 0u128;
        key.update(&mut expected, &padded);
        for &segment_bytes in segment_sizes {
            let partials = segments(hash_key, data, segment_bytes).unwrap_or_else(|error| {
                panic!(
                    "GHASH of {} bytes in {segment_bytes}-byte segments: {error}",
                    data.len()
                )
            });
            assert_eq!(
                partials.len(),
                data.len().div_ceil(segment_bytes),
                "one partial sum per segment ({} bytes, {segment_bytes}-byte segments)",
                data.len()
            );
            let joined = join_partials(&key, &partials, segment_bytes, data.len());
            assert_eq!(
                joined,
                expected,
                "GHASH of {} bytes in {segment_bytes}-byte segments, H = {}",
                data.len(),
                hex::encode(hash_key)
            );
        }
    }
}
