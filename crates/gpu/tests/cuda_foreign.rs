//! Device memory owned by someone else ([`ForeignDeviceMemory`]): the cipher operations in
//! place, into a second range and into a misaligned range; GHASH over it; the tag-sized
//! reads and writes; ordering after a producer's stream; and the refusals (overlap, other
//! device, a range past its allocation). "Someone else" is cudarc here: the memory is
//! allocated with cudarc on the device's context and described by its raw address, as a
//! CuPy or PyTorch array is through DLPack.
//!
//! Runs on CUDA device 0 (or `PARCRYPT_CUDA_DEVICE=N`). Without a CUDA driver or GPU the
//! tests print a SKIPPED line and pass, unless `PARCRYPT_REQUIRE_GPU=1` (set by the GPU
//! kit's tests stage), which makes a missing device a failure.

#[path = "support/cases.rs"]
#[allow(dead_code, unused_macros)]
mod cases;

use std::sync::OnceLock;

use parcrypt_ciphers::Algorithm;
use parcrypt_gpu::cuda::cudarc::driver::{CudaSlice, DevicePtr};
use parcrypt_gpu::{
    CudaDevice, ForeignDeviceMemory, GpuError, GpuOperation, KeyMaterial, OpenOptions,
};
use parcrypt_modes::ctr::CounterRule;
use parcrypt_modes::ghash::GhashKey;
use rand::rngs::StdRng;
use rand::SeedableRng;

use cases::{cpu_ghash, on_cpu, random_bytes, SIZES};

fn device() -> Option<&'static CudaDevice> {
    static DEVICE: OnceLock<Option<CudaDevice>> = OnceLock::new();
    DEVICE
        .get_or_init(|| cases::open_cuda(&OpenOptions::default()))
        .as_ref()
}

/// `data` in device memory allocated with cudarc (the "other library"), `front` zero bytes
/// before it so that it can start misaligned, and 16 spare bytes after it.
struct Foreign {
    slice: CudaSlice<u8>,
    address: u64,
    front: usize,
    length: usize,
}

impl Foreign {
    fn new(device: &CudaDevice, data: &[u8], front: usize) -> Foreign {
        let mut bytes = vec![0u8; front + data.len() + 16];
        bytes[front..front + data.len()].copy_from_slice(data);
        let stream = device.stream();
        let slice = stream.clone_htod(&bytes).unwrap();
        stream.synchronize().unwrap();
        let address = {
            let (pointer, _record) = slice.device_ptr(stream);
            pointer
        };
        Foreign {
            slice,
            address,
            front,
            length: data.len(),
        }
    }

    /// The data's range, lent while `self` is borrowed.
    fn memory(&self, device: &CudaDevice) -> ForeignDeviceMemory<'_> {
        self.memory_of(device, self.length)
    }

    fn memory_of(&self, device: &CudaDevice, length: usize) -> ForeignDeviceMemory<'_> {
        // SAFETY: the bytes `front .. front + length` lie inside `self.slice` (a live cudarc
        // allocation of this device's context, kept by the borrow of `self`), for lengths up
        // to the data plus its 16 spare bytes; nothing else uses the slice meanwhile. All
        // work on it is on the device's own stream.
        unsafe {
            ForeignDeviceMemory::new(
                self.address + self.front as u64,
                length,
                device.ordinal(),
                None,
            )
        }
    }

    fn read(&self, device: &CudaDevice) -> Vec<u8> {
        let stream = device.stream();
        let bytes = stream.clone_dtoh(&self.slice).unwrap();
        stream.synchronize().unwrap();
        bytes[self.front..self.front + self.length].to_vec()
    }
}

fn operations(algorithm: Algorithm, rng: &mut StdRng) -> Vec<GpuOperation> {
    let block = algorithm.block_size();
    vec![
        GpuOperation::EcbEncrypt,
        GpuOperation::EcbDecrypt,
        GpuOperation::CbcDecrypt {
            previous: random_bytes(rng, block),
        },
        GpuOperation::Ctr {
            counter: random_bytes(rng, block),
            rule: CounterRule::Full,
        },
        GpuOperation::Ctr {
            counter: vec![0xff; block],
            rule: CounterRule::Low32,
        },
    ]
}

const ALGORITHMS: [(Algorithm, usize); 5] = [
    (Algorithm::Aes128, 16),
    (Algorithm::Aes192, 24),
    (Algorithm::Aes256, 32),
    (Algorithm::Blowfish, 21),
    (Algorithm::Rc6_128, 16),
];

#[test]
fn every_operation_in_place_into_another_range_and_misaligned() {
    let Some(device) = device() else { return };
    let mut rng = StdRng::seed_from_u64(0x666f_7265);
    for (algorithm, key_length) in ALGORITHMS {
        let key_bytes = random_bytes(&mut rng, key_length);
        let key = KeyMaterial::new(algorithm, &key_bytes).unwrap();
        let block = algorithm.block_size();
        for operation in operations(algorithm, &mut rng) {
            let ctr = matches!(operation, GpuOperation::Ctr { .. });
            for size in SIZES {
                let size = if ctr { size } else { size / block * block };
                let data = random_bytes(&mut rng, size);
                let expected = on_cpu(algorithm, &key_bytes, &operation, &data);
                let what = format!("{algorithm:?} {operation:?} {size}");

                let in_place = Foreign::new(device, &data, 0);
                let memory = in_place.memory(device);
                device
                    .process_foreign(&key, &operation, &memory, &memory)
                    .unwrap();
                assert_eq!(in_place.read(device), expected, "in place: {what}");

                for front in [0, 3] {
                    let input = Foreign::new(device, &data, 0);
                    let output = Foreign::new(device, &vec![0x5a; size], front);
                    device
                        .process_foreign(
                            &key,
                            &operation,
                            &input.memory(device),
                            &output.memory(device),
                        )
                        .unwrap();
                    assert_eq!(output.read(device), expected, "into +{front}: {what}");
                    assert_eq!(input.read(device), data, "input kept: {what}");
                }
            }
        }
    }
}

#[test]
fn ghash_over_device_memory_matches_the_cpu() {
    let Some(device) = device() else { return };
    let mut rng = StdRng::seed_from_u64(0x6768);
    let hash_key: [u8; 16] = random_bytes(&mut rng, 16).try_into().unwrap();
    let ghash = GhashKey::new(&hash_key);
    for size in SIZES.into_iter().chain([
        4096,
        3 * 4096 + 16,
        257 * 4096 + 33,
        (3 << 20) + 5 * 4096 + 16,
    ]) {
        let data = random_bytes(&mut rng, size);
        let expected = cpu_ghash(&ghash, &data);
        for front in [0, 5] {
            let foreign = Foreign::new(device, &data, front);
            let partials = device
                .ghash_foreign(&hash_key, &foreign.memory(device), 4096)
                .unwrap_or_else(|error| panic!("GHASH of {size} bytes at +{front}: {error}"));
            // Whole segments (of 1-4 KiB) come back joined per work-group (at most 256
            // segments each), a final short segment as a range of its own.
            assert!(partials.len() <= size.div_ceil(1024), "{size} +{front}");
            assert!(
                partials.len() >= size.div_ceil(256 * 4096),
                "{size} +{front}"
            );
            assert_eq!(partials.iter().map(|(_, bytes)| bytes).sum::<usize>(), size);
            for (_, bytes) in &partials[..partials.len().saturating_sub(1)] {
                assert!(
                    bytes.is_multiple_of(16),
                    "{size} +{front}: a range of {bytes}"
                );
            }
            let joined = partials.iter().fold(0u128, |state, &(partial, bytes)| {
                ghash.append_partial(state, partial, bytes as u64)
            });
            assert_eq!(joined, expected, "GHASH of {size} bytes at +{front}");
        }
    }
}

#[test]
fn tags_are_written_and_read_and_allocations_lent() {
    let Some(device) = device() else { return };
    let foreign = Foreign::new(device, &[0u8; 48], 0);
    let tag: Vec<u8> = (0..16).collect();
    let memory = foreign.memory(device);
    device
        .write_foreign(&memory.range(32..48).unwrap(), &tag)
        .unwrap();
    let mut back = [0u8; 16];
    device
        .read_foreign(&memory.range(32..48).unwrap(), &mut back)
        .unwrap();
    assert_eq!(back.to_vec(), tag);
    assert_eq!(&foreign.read(device)[32..], &tag[..]);

    let mut allocation = device.alloc_device(1000).unwrap();
    assert_eq!(
        (allocation.len(), allocation.device()),
        (1000, device.ordinal())
    );
    let key = KeyMaterial::new(Algorithm::Aes128, &[9; 16]).unwrap();
    let operation = GpuOperation::Ctr {
        counter: vec![1; 16],
        rule: CounterRule::Full,
    };
    let lent = allocation.as_foreign();
    device
        .process_foreign(&key, &operation, &lent, &lent)
        .unwrap();
    let mut keystream = vec![0u8; 1000];
    device.read_foreign(&lent, &mut keystream).unwrap();
    assert_eq!(
        keystream,
        on_cpu(Algorithm::Aes128, &[9; 16], &operation, &[0; 1000])
    );
    assert!(device.alloc_device(0).unwrap().is_empty());
}

#[test]
fn work_waits_for_the_producer_stream() {
    let Some(device) = device() else { return };
    let producer = device.context().new_stream().unwrap();
    let size = 8 << 20;
    let mut slice = producer.clone_htod(&vec![0xffu8; size]).unwrap();
    producer.synchronize().unwrap();
    // Queued on the producer's stream, not waited for here: the call must wait for it.
    producer.memset_zeros(&mut slice).unwrap();
    let address = {
        let (pointer, _record) = slice.device_ptr(&producer);
        pointer
    };
    // SAFETY: the range is `slice` (live, this context); the producer stream is live; only
    // the call below touches the memory until the stream is synchronised after it.
    let memory = unsafe {
        ForeignDeviceMemory::new(
            address,
            size,
            device.ordinal(),
            Some(producer.cu_stream() as usize),
        )
    };
    let key = KeyMaterial::new(Algorithm::Aes256, &[3; 32]).unwrap();
    let operation = GpuOperation::Ctr {
        counter: vec![0; 16],
        rule: CounterRule::Full,
    };
    device
        .process_foreign(&key, &operation, &memory, &memory)
        .unwrap();
    producer.synchronize().unwrap();
    let result = producer.clone_dtoh(&slice).unwrap();
    producer.synchronize().unwrap();
    assert_eq!(
        result,
        on_cpu(Algorithm::Aes256, &[3; 32], &operation, &vec![0; size])
    );
}

#[test]
fn bad_ranges_are_refused_before_any_work() {
    let Some(device) = device() else { return };
    let key = KeyMaterial::new(Algorithm::Aes128, &[1; 16]).unwrap();
    let operation = GpuOperation::Ctr {
        counter: vec![0; 16],
        rule: CounterRule::Full,
    };
    let foreign = Foreign::new(device, &[7u8; 64], 0);
    let memory = foreign.memory(device);
    let shifted = memory.range(16..64).unwrap();
    let front = memory.range(0..48).unwrap();
    let overlap = device.process_foreign(&key, &operation, &front, &shifted);
    assert!(
        matches!(overlap, Err(GpuError::InvalidInput(_))),
        "{overlap:?}"
    );
    let unequal = device.process_foreign(&key, &operation, &front, &memory);
    assert!(
        matches!(unequal, Err(GpuError::InvalidInput(_))),
        "{unequal:?}"
    );

    // SAFETY: deliberately describes more than the allocation holds (64 + 16 bytes); the
    // call must refuse it from the driver's allocation range before touching memory.
    let too_long =
        unsafe { ForeignDeviceMemory::new(foreign.address, 1 << 20, device.ordinal(), None) };
    let refused = device.process_foreign(&key, &operation, &too_long, &too_long);
    assert!(
        matches!(&refused, Err(GpuError::InvalidInput(reason)) if reason.contains("past the end")),
        "{refused:?}"
    );
    // SAFETY: as above: another device's number, refused before any access.
    let elsewhere =
        unsafe { ForeignDeviceMemory::new(foreign.address, 64, device.ordinal() + 1, None) };
    let refused = device.process_foreign(&key, &operation, &elsewhere, &elsewhere);
    assert!(
        matches!(refused, Err(GpuError::InvalidInput(_))),
        "{refused:?}"
    );
    // Nothing was written.
    assert_eq!(foreign.read(device), vec![7u8; 64]);
}
