//! The cases `cuda_vs_cpu.rs` and `opencl_vs_cpu.rs` share: the CPU reference, the random
//! keys, operations and lengths, and the loops that run them. Each API's test file opens its
//! device and passes a `check` closure that runs one case on it (through every way data
//! reaches that device) and compares it with the CPU through [`assert_same_as_cpu`].
//!
//! Included from both with `#[path = "support/cases.rs"] mod cases;`.

use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
use parcrypt_gpu::{
    CudaDevice, GpuError, GpuOperation, HipDevice, KernelCache, KeyMaterial, LaunchGeometry,
    OpenClDevice, OpenOptions, ProgramOrigin, TableCopies,
};
use parcrypt_modes::ctr::CounterRule;
use parcrypt_modes::ghash::GhashKey;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The lengths the task names: empty, one byte, around one block, a page plus five, a MiB
/// plus three. ECB and CBC take them rounded down to whole blocks.
pub const SIZES: [usize; 7] = [0, 1, 15, 16, 17, 4096 + 5, (1 << 20) + 3];

/// The slab size [`slab_edge_cases`] wants the device opened with: 4 KiB + 48 bytes cuts a
/// MiB into ~250 slabs rotating over the queues or streams, with slab edges that are not
/// powers of two.
pub const TEST_SLAB_BYTES: usize = 4096 + 48;

/// Options that open a device with [`TEST_SLAB_BYTES`] slabs.
pub fn small_slab_options() -> OpenOptions {
    OpenOptions {
        slab_bytes: TEST_SLAB_BYTES,
        ..OpenOptions::default()
    }
}

/// Tests that each need only the invoking file's `shared_device()`: `name => |device| ...;`
/// becomes a test that runs the closure on the device, or passes having said why there is
/// none (the opener prints the SKIPPED line).
#[allow(unused_macros)] // not every file that includes the cases has such tests
macro_rules! on_shared_device {
    ($($test:ident => $body:expr;)*) => {$(
        #[test]
        fn $test() {
            if let Some(device) = shared_device() {
                let body: fn(&Device) = $body;
                body(device);
            }
        }
    )*};
}

/// Opens the OpenCL test device (`PARCRYPT_OPENCL_DEVICE`, else the first) with `options`,
/// or says why the test is skipped. Under `CI`, which installs PoCL, a missing device fails.
#[allow(dead_code)] // each test file opens the API it tests
pub fn open_opencl(options: &OpenOptions) -> Option<OpenClDevice> {
    let reason = match OpenClDevice::list() {
        Ok(devices) if !devices.is_empty() => {
            let index = device_index("PARCRYPT_OPENCL_DEVICE");
            return Some(
                OpenClDevice::open_with(index, options)
                    .unwrap_or_else(|error| panic!("opening OpenCL device {index}: {error}")),
            );
        }
        Ok(_) => "the OpenCL platforms list no device".to_string(),
        Err(error) => error.to_string(),
    };
    if std::env::var_os("CI").is_some() {
        panic!("CI is set, so an OpenCL device (PoCL) must be present, but: {reason}");
    }
    println!("SKIPPED: no OpenCL device (install pocl-opencl-icd) [{reason}]");
    None
}

/// A GPU API the tests open devices of, and how its skips read.
struct Api {
    name: &'static str,
    /// What a skip says is missing.
    missing: &'static str,
    /// The environment variable that picks the test device ([`device_index`]).
    device_variable: &'static str,
}

const CUDA: Api = Api {
    name: "CUDA",
    missing: "CUDA GPU/driver",
    device_variable: "PARCRYPT_CUDA_DEVICE",
};

const HIP: Api = Api {
    name: "HIP",
    missing: "AMD GPU/HIP runtime",
    device_variable: "PARCRYPT_HIP_DEVICE",
};

/// Opens the CUDA test device (`PARCRYPT_CUDA_DEVICE`, else 0) with `options`, or says why
/// the test is skipped: no driver or no GPU (CI has none). Anything else fails, and so does
/// a missing GPU under `PARCRYPT_REQUIRE_GPU=1` (the GPU kit sets it).
#[allow(dead_code)]
pub fn open_cuda(options: &OpenOptions) -> Option<CudaDevice> {
    open_or_skip(&CUDA, |index| CudaDevice::open_with(index, options))
}

/// Opens the HIP test device (`PARCRYPT_HIP_DEVICE`, else 0) with `options`, or says why the
/// test is skipped: no runtime or no AMD GPU, unless `PARCRYPT_REQUIRE_GPU=1`. Anything else
/// fails.
#[allow(dead_code)]
pub fn open_hip(options: &OpenOptions) -> Option<HipDevice> {
    open_or_skip(&HIP, |index| HipDevice::open_with(index, options))
}

/// Opens the test device of `api` with `open`, or returns `None` after a SKIPPED line where
/// the error says that its driver or runtime, or a GPU, is missing here and none is required
/// ([`gpu_required`]). Any other error fails the test.
#[allow(dead_code)]
fn open_or_skip<D>(api: &Api, open: impl FnOnce(usize) -> Result<D, GpuError>) -> Option<D> {
    let index = device_index(api.device_variable);
    match open(index) {
        Ok(device) => Some(device),
        Err(
            error @ (GpuError::NoCudaDriver { .. }
            | GpuError::NoCudaDevice { .. }
            | GpuError::NoHipRuntime { .. }
            | GpuError::NoAmdGpu { .. }),
        ) if !gpu_required() => {
            println!("SKIPPED: no {} [{error}]", api.missing);
            None
        }
        Err(error) => panic!("opening {} device {index}: {error}", api.name),
    }
}

/// Whether a GPU must be present (`PARCRYPT_REQUIRE_GPU=1`, set by
/// scripts/gpu-verify.sh): a test that would skip for want of one fails instead.
#[allow(dead_code)]
pub fn gpu_required() -> bool {
    std::env::var("PARCRYPT_REQUIRE_GPU").as_deref() == Ok("1")
}

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

/// The CPU's GHASH of `data` under `key` from a zero state, a final partial block
/// zero-padded.
pub fn cpu_ghash(key: &GhashKey, data: &[u8]) -> u128 {
    let mut padded = data.to_vec();
    padded.resize(data.len().div_ceil(16) * 16, 0);
    let mut sum = 0u128;
    key.update(&mut sum, &padded);
    sum
}

/// The CPU result of `operation` over `data`.
pub fn on_cpu(algorithm: Algorithm, key: &[u8], operation: &GpuOperation, data: &[u8]) -> Vec<u8> {
    let cipher = new_cipher(algorithm, Implementation::Fast, key).unwrap();
    if let GpuOperation::CtrSegments {
        counters,
        segment_bytes,
        ..
    } = operation
    {
        assert_eq!(
            counters.len(),
            data.len().div_ceil(*segment_bytes) * algorithm.block_size(),
            "a test must give one counter block per segment"
        );
    }
    let mut result = data.to_vec();
    operation.apply_on_cpu(cipher.as_ref(), &mut result);
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

/// The shared cases' check through each of `paths`: `on_device(path, key, operation, data)`
/// runs a case on the device one way and gives its bytes, which must be the CPU's.
#[allow(dead_code)] // for the APIs with more than one way in
pub fn through_paths<'a, P: Copy + std::fmt::Debug + Sync>(
    paths: &'a [P],
    on_device: impl Fn(P, &KeyMaterial, &GpuOperation, &[u8]) -> Result<Vec<u8>, GpuError> + Sync + 'a,
) -> impl Fn(Algorithm, &[u8], &GpuOperation, &[u8]) + Sync + 'a {
    move |algorithm: Algorithm, key: &[u8], operation: &GpuOperation, data: &[u8]| {
        for &path in paths {
            assert_same_as_cpu(
                algorithm,
                key,
                operation,
                data,
                &format!(" via {path:?}"),
                |material, operation, data| on_device(path, material, operation, data),
            );
        }
    }
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
        GpuOperation::Ctr { .. } | GpuOperation::CtrSegments { .. } => size,
        _ => size / block_size * block_size,
    }
}

/// Segmented CTR over `length` bytes in segments of `segment_blocks` blocks, one random
/// counter block per segment. With `low_word`, each counter's last four bytes are set to
/// it, e.g. a few steps before 2^32, so that counters wrap inside their segments.
pub fn ctr_segments(
    rng: &mut StdRng,
    block_size: usize,
    length: usize,
    segment_blocks: usize,
    rule: CounterRule,
    low_word: Option<u32>,
) -> GpuOperation {
    let segment_bytes = segment_blocks * block_size;
    let segments = length.div_ceil(segment_bytes);
    let mut counters = random_bytes(rng, segments * block_size);
    if let Some(low_word) = low_word {
        for counter in counters.chunks_exact_mut(block_size) {
            counter[block_size - 4..].copy_from_slice(&low_word.to_be_bytes());
        }
    }
    GpuOperation::CtrSegments {
        counters,
        segment_bytes,
        rule,
    }
}

/// Segmented CTR over `length` bytes in KiB segments, counters 0, 1, 2... byte by byte,
/// under the low-32-bit rule: the operation the timed paths' checks run.
#[allow(dead_code)] // the APIs whose timed paths are checked this way use it
pub fn kib_segments(length: usize) -> GpuOperation {
    GpuOperation::CtrSegments {
        counters: (0..length.div_ceil(1024) * 16)
            .map(|index| index as u8)
            .collect(),
        segment_bytes: 1024,
        rule: CounterRule::Low32,
    }
}

/// The shared cases' `check`: runs one case (an algorithm, its key, an operation and the
/// data) on a device and compares the result with the CPU's.
pub trait Check: Fn(Algorithm, &[u8], &GpuOperation, &[u8]) {}

impl<F: Fn(Algorithm, &[u8], &GpuOperation, &[u8])> Check for F {}

/// Random cases run through one `check`: every key, counter and byte of data is drawn from
/// one generator, so that the seed fixes every case.
struct Runner<C> {
    rng: StdRng,
    check: C,
}

impl<C: Check> Runner<C> {
    fn new(seed: u64, check: C) -> Self {
        Runner {
            rng: StdRng::seed_from_u64(seed),
            check,
        }
    }

    /// `body` for each of `algorithms` with a random key of the length given.
    fn for_each_key(
        &mut self,
        algorithms: impl IntoIterator<Item = (Algorithm, usize)>,
        mut body: impl FnMut(&mut Self, Algorithm, &[u8]),
    ) {
        for (algorithm, key_length) in algorithms {
            let key = random_bytes(&mut self.rng, key_length);
            body(self, algorithm, &key);
        }
    }

    /// `operation` on `length` random bytes.
    fn one(&mut self, algorithm: Algorithm, key: &[u8], operation: &GpuOperation, length: usize) {
        let data = random_bytes(&mut self.rng, length);
        (self.check)(algorithm, key, operation, &data);
    }

    /// Each of `operations` on random data of each of `sizes`, whole blocks where the
    /// operation needs them ([`length_for`]).
    fn each(
        &mut self,
        algorithm: Algorithm,
        key: &[u8],
        operations: Vec<GpuOperation>,
        sizes: &[usize],
    ) {
        for operation in operations {
            for &size in sizes {
                let length = length_for(&operation, size, algorithm.block_size());
                self.one(algorithm, key, &operation, length);
            }
        }
    }

    /// Every operation of [`operations`] on random data of each of `sizes`.
    fn every_operation(&mut self, algorithm: Algorithm, key: &[u8], sizes: &[usize]) {
        let operations = operations(&mut self.rng, algorithm.block_size());
        self.each(algorithm, key, operations, sizes);
    }

    /// Segmented CTR ([`ctr_segments`]) on `length` random bytes.
    fn segments(
        &mut self,
        algorithm: Algorithm,
        key: &[u8],
        (length, segment_blocks): (usize, usize),
        rule: CounterRule,
        low_word: Option<u32>,
    ) {
        let block_size = algorithm.block_size();
        let operation = ctr_segments(
            &mut self.rng,
            block_size,
            length,
            segment_blocks,
            rule,
            low_word,
        );
        self.one(algorithm, key, &operation, length);
    }
}

/// `low` and `full`, one operation under each counter rule, on `length` zero bytes on the
/// CPU: the first block the same, the rest not, so that the cases of a rule tell it apart
/// from the other.
fn assert_rules_differ(
    algorithm: Algorithm,
    key: &[u8],
    (low, full): (&GpuOperation, &GpuOperation),
    length: usize,
) {
    let block_size = algorithm.block_size();
    let zeros = vec![0u8; length];
    let (low, full) = (
        on_cpu(algorithm, key, low, &zeros),
        on_cpu(algorithm, key, full, &zeros),
    );
    assert_eq!(low[..block_size], full[..block_size]);
    assert_ne!(low[block_size..], full[block_size..]);
}

/// Segmented CTR against the CPU: one segment (whole, short, a partial block only), many
/// segments (of one block, of a few, of a Cobblestone chunk), a last segment short by
/// whole blocks or ending in a partial block, data ending exactly on a segment boundary,
/// no data at all, and counters wrapping 2^32 (and the full width) inside a segment, under
/// both rules, for AES (the one GCM needs), RC6 and Blowfish.
pub fn ctr_segment_cases(check: impl Check) {
    let algorithms = [
        (Algorithm::Aes128, 16),
        (Algorithm::Aes256, 32),
        (Algorithm::Rc6_128, 16),
        (Algorithm::Blowfish, 16),
    ];
    Runner::new(0x5e65, check).for_each_key(algorithms, |runner, algorithm, key| {
        let bs = algorithm.block_size();
        // (data length, blocks per segment)
        let shapes = [
            (64 * bs, 64),                   // one whole segment
            (1000, 64),                      // one short segment, ending in a partial block
            (5, 64),                         // one partial block
            (100 * bs, 1),                   // one-block segments
            (100 * bs + 3, 1),               // ... and a last one that is a partial block
            (50 * 3 * bs, 3),                // many whole segments
            (9 * 4 * bs + 2 * bs, 4),        // the last segment short by whole blocks
            (9 * 4 * bs + 2 * bs + 3, 4),    // ... and ending in a partial block
            (7 * 5 * bs, 5),                 // exactly on a segment boundary
            (10 * 16384 + 1234, 16384 / bs), // Cobblestone chunks
            (0, 4),                          // nothing
        ];
        for rule in [CounterRule::Low32, CounterRule::Full] {
            for shape in shapes {
                runner.segments(algorithm, key, shape, rule, None);
            }
            // Every counter 3 blocks short of 2^32 in its low word: the wrap falls inside
            // each 16-block segment (Low32 keeps it in the low word, Full carries).
            let shape = (20 * 16 * bs + 7, 16);
            runner.segments(algorithm, key, shape, rule, Some(0xffff_fffd));
            // Counters one step short of the full width's wrap.
            let mut operation = ctr_segments(&mut runner.rng, bs, 6 * 8 * bs, 8, rule, None);
            if let GpuOperation::CtrSegments { counters, .. } = &mut operation {
                for counter in counters.chunks_exact_mut(bs) {
                    counter.fill(0xff);
                    counter[bs - 1] = 0xfe;
                }
            }
            runner.one(algorithm, key, &operation, 6 * 8 * bs);
        }

        // The wrap cases above tell the rules apart.
        let low = ctr_segments(&mut runner.rng, bs, 4 * bs, 4, CounterRule::Low32, Some(!0));
        let GpuOperation::CtrSegments { counters, .. } = &low else {
            unreachable!()
        };
        let full = GpuOperation::CtrSegments {
            counters: counters.clone(),
            segment_bytes: 4 * bs,
            rule: CounterRule::Full,
        };
        assert_rules_differ(algorithm, key, (&low, &full), 4 * bs);
    });
}

/// Segmented CTR on a device opened with [`TEST_SLAB_BYTES`] slabs: segments of one block,
/// three blocks, a KiB and exactly one slab, over data that crosses several slabs (slabs
/// are cut between segments, each uploads its own counters), with counters that wrap
/// 2^32 inside segments.
pub fn ctr_segment_slab_cases(check: impl Check) {
    let algorithms = [
        (Algorithm::Aes192, 24),
        (Algorithm::Rc6_256, 32),
        (Algorithm::Blowfish, 9),
    ];
    Runner::new(0x5e65_51ab, check).for_each_key(algorithms, |runner, algorithm, key| {
        let bs = algorithm.block_size();
        for segment_bytes in [bs, 3 * bs, 1024, TEST_SLAB_BYTES] {
            for length in [
                TEST_SLAB_BYTES - 1,
                TEST_SLAB_BYTES,
                2 * TEST_SLAB_BYTES,
                3 * TEST_SLAB_BYTES + 5,
                (1 << 16) + 3,
            ] {
                for (rule, low_word) in [
                    (CounterRule::Low32, None),
                    (CounterRule::Low32, Some(0xffff_fffe)),
                    (CounterRule::Full, Some(0xffff_ffff)),
                ] {
                    let shape = (length, segment_bytes / bs);
                    runner.segments(algorithm, key, shape, rule, low_word);
                }
            }
        }
    });
}

/// On a device with [`TEST_SLAB_BYTES`] slabs, segments longer than a slab are refused
/// with a reason, and one exactly a slab long is not.
pub fn segments_longer_than_a_slab_are_refused(
    process: impl Fn(&KeyMaterial, &GpuOperation, &mut [u8]) -> Result<(), GpuError>,
) {
    let key = KeyMaterial::new(Algorithm::Aes128, &[1; 16]).unwrap();
    let operation = |segment_bytes: usize| GpuOperation::CtrSegments {
        counters: vec![0; 16],
        segment_bytes,
        rule: CounterRule::Low32,
    };
    let error = process(&key, &operation(TEST_SLAB_BYTES + 16), &mut [0; 100]).unwrap_err();
    assert!(
        matches!(error, GpuError::InvalidInput(_)) && error.to_string().contains("slab"),
        "{error}"
    );
    process(&key, &operation(TEST_SLAB_BYTES), &mut [0; 100]).unwrap();
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
pub fn every_cipher_operation_and_size(seed: u64, check: impl Check) {
    Runner::new(seed, check).for_each_key(keyed_algorithms(), |runner, algorithm, key| {
        runner.every_operation(algorithm, key, &SIZES)
    });
}

/// CTR counters that wrap inside the data, at 2^32, 2^64 and the full width, under both
/// rules.
pub fn ctr_wrap_cases(check: impl Check) {
    let algorithms = [
        (Algorithm::Aes128, 16),
        (Algorithm::Aes256, 32),
        (Algorithm::Blowfish, 16),
        (Algorithm::Rc6_192, 24),
    ];
    Runner::new(0x00c0_ffee, check).for_each_key(algorithms, |runner, algorithm, key| {
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
                let operation = GpuOperation::Ctr { counter, rule };
                runner.one(algorithm, key, &operation, 4096 + 5);
            }
        }
        // The tail block's counter is past the wrap: only the partial block is after it.
        let operation = GpuOperation::Ctr {
            counter: counter_near(block_size, 32, 2, 0x5a),
            rule: CounterRule::Full,
        };
        runner.one(algorithm, key, &operation, block_size * 2 + 3);

        // The two rules must really differ across 2^32 with a non-zero upper part, or the
        // cases above would not tell them apart.
        let counter = counter_near(block_size, 32, 1, 0x5a);
        let full = GpuOperation::Ctr {
            counter: counter.clone(),
            rule: CounterRule::Full,
        };
        let low = GpuOperation::Ctr {
            counter,
            rule: CounterRule::Low32,
        };
        assert_rules_differ(algorithm, key, (&low, &full), 64);
    });
}

/// Lengths around the edges of [`TEST_SLAB_BYTES`] slabs and a MiB of them, every operation
/// plus a slab boundary close to a 2^32 counter wrap: for a device opened with that slab
/// size, so that counters and CBC blocks must chain across slabs.
pub fn slab_edge_cases(check: impl Check) {
    let algorithms = [
        (Algorithm::Aes192, 24),
        (Algorithm::Blowfish, 9),
        (Algorithm::Rc6_256, 32),
    ];
    Runner::new(0x51ab, check).for_each_key(algorithms, |runner, algorithm, key| {
        let block_size = algorithm.block_size();
        let mut cases = operations(&mut runner.rng, block_size);
        // A slab boundary close to a 2^32 counter wrap.
        cases.push(GpuOperation::Ctr {
            counter: counter_near(block_size, 32, 200, 0x11),
            rule: CounterRule::Full,
        });
        let sizes = [
            TEST_SLAB_BYTES - 1,
            TEST_SLAB_BYTES,
            TEST_SLAB_BYTES + 1,
            (1 << 20) + 3,
        ];
        runner.each(algorithm, key, cases, &sizes);
    });
}

/// Every keyed algorithm and operation on 64 KiB + 7 bytes, for a device opened with
/// `copies` table copies.
pub fn table_layout_cases(copies: TableCopies, check: impl Check) {
    let seed = u64::from(copies.blowfish);
    Runner::new(seed, check).for_each_key(keyed_algorithms(), |runner, algorithm, key| {
        runner.every_operation(algorithm, key, &[65536 + 7]);
        runner.segments(algorithm, key, (65536 + 7, 100), CounterRule::Low32, None);
    });
}

/// Sets launch shapes from one thread per group to more than any device allows, runs three
/// ciphers under each, and insists that a shape without threads is refused.
/// `widest_group`: the largest group size the device really takes.
pub fn launch_geometry_cases(
    widest_group: usize,
    set: impl Fn(LaunchGeometry) -> Result<(), GpuError>,
    get: impl Fn() -> LaunchGeometry,
    check: impl Check,
) {
    let mut runner = Runner::new(0x6e0, check);
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
        let algorithms = [
            (Algorithm::Aes128, 16),
            (Algorithm::Blowfish, 20),
            (Algorithm::Rc6_128, 16),
        ];
        runner.for_each_key(algorithms, |runner, algorithm, key| {
            runner.every_operation(algorithm, key, &[20000 + 3]);
            // Segmented CTR steps through segments with the grid's stride: strides below,
            // at and far above the segment length.
            for segment_blocks in [1, 3, 64, 1000] {
                let shape = (20000 + 3, segment_blocks);
                runner.segments(algorithm, key, shape, CounterRule::Low32, Some(0xffff_fff0));
            }
        });
    }
    let zero = LaunchGeometry {
        threads_per_group: 0,
        blocks_per_thread: 1,
    };
    assert!(matches!(set(zero), Err(GpuError::InvalidInput(_))));
}

/// Four threads running different ciphers on one device at once.
pub fn concurrent_cases(check: impl Check + Sync) {
    let check = &check;
    std::thread::scope(|scope| {
        for thread in 0..4u64 {
            scope.spawn(move || {
                let algorithm = [
                    Algorithm::Aes128,
                    Algorithm::Blowfish,
                    Algorithm::Rc6_128,
                    Algorithm::Aes256,
                ][thread as usize];
                let key_length = algorithm.key_lengths().1;
                Runner::new(100 + thread, check)
                    .for_each_key([(algorithm, key_length)], |runner, algorithm, key| {
                        runner.every_operation(algorithm, key, &[50000 + 1])
                    });
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
    // Segmented CTR: segments of whole blocks, one counter block per segment.
    for (counters, segment_bytes, length) in [
        (32, 24, 40), // half-block segments
        (16, 0, 0),   // no segment length
        (16, 32, 40), // two segments, one counter
        (48, 32, 40), // two segments, three counters
        (20, 32, 20), // a counter of 20 bytes
    ] {
        let operation = GpuOperation::CtrSegments {
            counters: vec![0; counters],
            segment_bytes,
            rule: CounterRule::Low32,
        };
        let result = process(&key, &operation, &mut vec![0; length]);
        assert!(
            matches!(result, Err(GpuError::InvalidInput(_))),
            "{counters}-byte counters, {segment_bytes}-byte segments, {length} bytes: \
             {result:?}"
        );
    }
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
        let expected = cpu_ghash(&key, data);
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

/// Lengths for [`GpuDevice::ghash_whole`](parcrypt_gpu::GpuDevice::ghash_whole): empty, a
/// tail only, one segment, exactly one work-group of 256 segments (1 MiB), a short last
/// group with a tail, and several groups.
pub const GHASH_WHOLE_SIZES: [usize; 8] = [
    0,
    1,
    15,
    4096,
    4096 + 5,
    1 << 20,
    (1 << 20) + 3 * 4096 + 7,
    (3 << 20) + 100,
];

/// `whole` (a device's GHASH of all of the data) against the CPU's GHASH, for random keys
/// and data of every length in `sizes`.
pub fn ghash_whole_cases(
    seed: u64,
    sizes: &[usize],
    whole: impl Fn(&[u8; 16], &[u8]) -> Result<u128, GpuError>,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    for &size in sizes {
        let mut hash_key = [0u8; 16];
        rng.fill_bytes(&mut hash_key);
        let data = random_bytes(&mut rng, size);
        let expected = cpu_ghash(&GhashKey::new(&hash_key), &data);
        let got = whole(&hash_key, &data)
            .unwrap_or_else(|error| panic!("GHASH of {size} bytes on the device: {error}"));
        assert_eq!(
            got,
            expected,
            "GHASH of {size} bytes, H = {}, seed {seed:#x}",
            hex::encode(hash_key)
        );
    }
}

/// Lengths for [`GpuDevice::process_gcm`](parcrypt_gpu::GpuDevice::process_gcm): empty,
/// around a block, around a 4 KiB segment, a MiB group with a short group and a tail, and
/// several MiB (several slabs on a device opened with [`gcm_slab_options`]).
pub const GCM_PASS_SIZES: [usize; 11] = [
    0,
    1,
    15,
    16,
    17,
    4095,
    4096,
    4096 + 5,
    100_003,
    (1 << 20) + 3 * 4096 + 7,
    (3 << 20) + 100,
];

/// Slabs of a MiB and three segments: a several-MiB GCM pass takes several slabs over the
/// queues, each with one whole work-group of sums and one short one.
pub fn gcm_slab_options() -> OpenOptions {
    OpenOptions {
        slab_bytes: (1 << 20) + 3 * 4096,
        ..OpenOptions::default()
    }
}

/// GCM's text pass on a device (`pass`, `process_gcm`) against the CPU's CTR and GHASH,
/// both ways, for AES and RC6 keys and every length in `sizes`, with a counter whose low 32
/// bits wrap inside the data. `uploaded` reads the device's count of bytes copied to it:
/// each pass must copy exactly its data once.
pub fn gcm_pass_cases(
    seed: u64,
    sizes: &[usize],
    pass: impl Fn(
        &KeyMaterial,
        &GpuOperation,
        &[u8; 16],
        parcrypt_gpu::ghash::GcmDirection,
        &mut [u8],
    ) -> Result<u128, GpuError>,
    uploaded: impl Fn() -> u64,
) {
    use parcrypt_gpu::ghash::GcmDirection;
    let mut rng = StdRng::seed_from_u64(seed);
    for algorithm in [Algorithm::Aes128, Algorithm::Aes256, Algorithm::Rc6_128] {
        for &size in sizes {
            let key = random_bytes(&mut rng, algorithm.key_lengths().0);
            let material = KeyMaterial::new(algorithm, &key).unwrap();
            let mut hash_key = [0u8; 16];
            rng.fill_bytes(&mut hash_key);
            let mut counter = random_bytes(&mut rng, 16);
            counter[12..].copy_from_slice(&(u32::MAX - 70).to_be_bytes());
            let operation = GpuOperation::Ctr {
                counter,
                rule: CounterRule::Low32,
            };
            let plaintext = random_bytes(&mut rng, size);
            let ciphertext = on_cpu(algorithm, &key, &operation, &plaintext);
            let expected = cpu_ghash(&GhashKey::new(&hash_key), &ciphertext);
            let what = format!("GCM pass, {algorithm}, {size} bytes, seed {seed:#x}");
            for (direction, input, output) in [
                (GcmDirection::Encrypt, &plaintext, &ciphertext),
                (GcmDirection::Decrypt, &ciphertext, &plaintext),
            ] {
                let mut data = input.clone();
                let before = uploaded();
                let sum = pass(&material, &operation, &hash_key, direction, &mut data)
                    .unwrap_or_else(|error| panic!("{what}, {direction:?}: {error}"));
                assert_eq!(
                    uploaded() - before,
                    size as u64,
                    "{what}, {direction:?}: uploads"
                );
                assert!(data == *output, "{what}, {direction:?}: text");
                assert_eq!(sum, expected, "{what}, {direction:?}: GHASH");
            }
        }
    }
}
