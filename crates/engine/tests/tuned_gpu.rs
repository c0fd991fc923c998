//! Tuning on a real OpenCL device (PoCL in CI): the sweep measures and installs a table,
//! tuned shapes are the ones launched and change no byte, and `auto` sends exactly the jobs
//! the table gives the GPU there, with the same output as `seq`.
//!
//! Without OpenCL the tests print SKIPPED and pass, unless `CI` is set (CI installs PoCL).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[path = "../../../tests/support/engine.rs"]
mod engine;
#[path = "support/opencl.rs"]
mod opencl;

use engine::Message;
use opencl::{aes_128_ctr_shape, geometry, open_first_device};
use parcrypt_ciphers::{Algorithm, Implementation};
use parcrypt_engine::tune::{tune, TuneEvent, TuneOptions};
use parcrypt_engine::{Backend, Engine, EngineWarning};
use parcrypt_gpu::kernel_source::KernelOperation;
use parcrypt_gpu::tuning::{Crossover, CrossoverPoint};
use parcrypt_gpu::{
    AesTimingLeak, DeviceKind, GpuApi, GpuDevice, GpuError, GpuOperation, KeyMaterial,
    LaunchGeometry, OpenClDevice, TableCopies, TuneTable,
};
use parcrypt_modes::{CipherSpec, Direction};

/// A device that counts the data calls that reach it; with `claims`, it says it is a
/// device of that kind whose kernels keep those table copies (the kernels stay the real
/// device's, so every byte is still right).
struct Counting {
    inner: OpenClDevice,
    calls: Arc<AtomicUsize>,
    claims: Option<(DeviceKind, TableCopies)>,
}

impl GpuDevice for Counting {
    fn api(&self) -> GpuApi {
        self.inner.api()
    }
    fn description(&self) -> String {
        GpuDevice::description(&self.inner)
    }
    fn identity(&self) -> String {
        self.inner.identity()
    }
    fn kind(&self) -> DeviceKind {
        match self.claims {
            Some((kind, _)) => kind,
            None => GpuDevice::kind(&self.inner),
        }
    }
    fn table_copies(&self) -> Option<TableCopies> {
        match self.claims {
            Some((_, copies)) => Some(copies),
            None => GpuDevice::table_copies(&self.inner),
        }
    }
    fn launch_geometry(&self) -> LaunchGeometry {
        GpuDevice::launch_geometry(&self.inner)
    }
    fn set_launch_geometry(&self, geometry: LaunchGeometry) -> Result<(), GpuError> {
        GpuDevice::set_launch_geometry(&self.inner, geometry)
    }
    fn set_tuning(&self, table: Option<Arc<TuneTable>>) {
        GpuDevice::set_tuning(&self.inner, table)
    }
    fn tuning(&self) -> Option<Arc<TuneTable>> {
        GpuDevice::tuning(&self.inner)
    }
    fn kernel_times(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
        runs: usize,
    ) -> Result<Vec<Duration>, GpuError> {
        self.inner.kernel_times(key, operation, data, runs)
    }
    fn process(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut [u8],
    ) -> Result<(), GpuError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        GpuDevice::process(&self.inner, key, operation, data)
    }
    fn ghash_segments(
        &self,
        hash_key: &[u8; 16],
        data: &[u8],
        segment_bytes: usize,
    ) -> Result<Vec<u128>, GpuError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        GpuDevice::ghash_segments(&self.inner, hash_key, data, segment_bytes)
    }
}

fn spec(name: &str) -> CipherSpec {
    name.parse().unwrap()
}

fn data(length: usize) -> Vec<u8> {
    (0..length)
        .map(|index| (index * 131 + index / 251) as u8)
        .collect()
}

fn run(engine: &Engine, name: &str, direction: Direction, input: &[u8]) -> Vec<u8> {
    let spec = spec(name);
    let key: Vec<u8> = (0..spec.algorithm.key_lengths().0 as u8).collect();
    let iv = match spec.mode {
        parcrypt_modes::Mode::Ecb => None,
        parcrypt_modes::Mode::Gcm => Some(vec![7u8; 12]),
        _ => Some(vec![9u8; spec.algorithm.block_size()]),
    };
    let message = Message {
        padding: false,
        ..Message::of(spec, &key, iv.as_deref())
    };
    message.run(engine, direction, input).expect("job runs")
}

fn point(bytes: u64, cpu_seconds: f64, gpu_seconds: f64) -> CrossoverPoint {
    CrossoverPoint {
        bytes,
        cpu_seconds,
        gpu_seconds,
    }
}

#[test]
fn auto_sends_the_gpu_exactly_the_jobs_the_table_gives_it() {
    let Some(device) = open_first_device() else {
        return;
    };
    let identity = device.identity();
    let calls = Arc::new(AtomicUsize::new(0));
    let counting = Counting {
        inner: device,
        calls: Arc::clone(&calls),
        claims: None,
    };
    // Made up on purpose: the GPU "wins" CTR from 1 MiB; GCM was measured and never wins.
    // RC6: `auto` never sends AES to a CPU device such as PoCL (see the test below).
    let table = TuneTable::new(
        "opencl",
        identity,
        geometry(64, 64),
        Vec::new(),
        vec![
            Crossover::new(
                spec("rc6-128-ctr"),
                Direction::Encrypt,
                vec![point(1 << 16, 1.0, 2.0), point(1 << 20, 2.0, 1.0)],
            ),
            Crossover::new(
                spec("rc6-128-gcm"),
                Direction::Encrypt,
                vec![point(1 << 20, 1.0, 2.0)],
            ),
        ],
    );
    let auto = Engine::auto_with_gpu(Some(2), Box::new(counting), table).unwrap();
    let seq = Engine::new(Backend::Seq, None).unwrap();

    let small = data(64 << 10);
    assert_eq!(
        run(&auto, "rc6-128-ctr", Direction::Encrypt, &small),
        run(&seq, "rc6-128-ctr", Direction::Encrypt, &small)
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "64 KiB is below the crossover: CPU"
    );

    let large = data((2 << 20) + 5);
    for direction in [Direction::Encrypt, Direction::Decrypt] {
        let before = calls.load(Ordering::SeqCst);
        assert_eq!(
            run(&auto, "rc6-128-ctr", direction, &large),
            run(&seq, "rc6-128-ctr", direction, &large)
        );
        assert!(
            calls.load(Ordering::SeqCst) > before,
            "2 MiB of CTR ({direction:?}) goes to the GPU"
        );
    }

    let before = calls.load(Ordering::SeqCst);
    assert_eq!(
        run(&auto, "rc6-128-gcm", Direction::Encrypt, &large),
        run(&seq, "rc6-128-gcm", Direction::Encrypt, &large)
    );
    assert_eq!(
        run(&auto, "rc6-256-ctr", Direction::Encrypt, &large),
        run(&seq, "rc6-256-ctr", Direction::Encrypt, &large)
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        before,
        "GCM never won and RC6-256 was not measured: CPU"
    );
}

/// Issue 31 finding 7: `auto` sends AES only to a GPU whose kernels keep a copy of every
/// table per lane, however much faster the tune table says another device is. The device is
/// PoCL (a CPU device) as it is, then claiming to be a GPU with 16 copies (a 48 KiB OpenCL
/// GPU) and with 32; only the last gets AES, while RC6 goes to all three.
#[test]
fn auto_sends_aes_only_to_a_gpu_with_a_table_copy_per_lane() {
    if open_first_device().is_none() {
        return;
    }
    let seq = Engine::new(Backend::Seq, None).unwrap();
    let large = data((2 << 20) + 5);
    let wins = |name: &str, direction| {
        Crossover::new(
            spec(name),
            direction,
            vec![point(1 << 16, 1.0, 2.0), point(1 << 20, 2.0, 1.0)],
        )
    };
    let claims = [
        None,
        Some((DeviceKind::Gpu, TableCopies::uniform(16))),
        Some((DeviceKind::Gpu, TableCopies::uniform(32))),
    ];
    for claim in claims {
        let device = open_first_device().unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let counting = Counting {
            inner: device,
            calls: Arc::clone(&calls),
            claims: claim,
        };
        let leak = counting.aes_timing_leak(KernelOperation::Ctr);
        let expected_leak = match claim {
            None => match counting.kind() {
                DeviceKind::Gpu => leak,
                kind => Some(AesTimingLeak::NotAGpu(kind)),
            },
            Some((_, copies)) if copies.aes_encrypt == 32 => None,
            Some(_) => Some(AesTimingLeak::SharedTableCopies(16)),
        };
        assert_eq!(leak, expected_leak, "{claim:?}");
        let table = TuneTable::new(
            "opencl",
            counting.identity(),
            geometry(64, 64),
            Vec::new(),
            vec![
                wins("aes-128-gcm", Direction::Encrypt),
                wins("aes-128-gcm", Direction::Decrypt),
                wins("aes-256-ctr", Direction::Encrypt),
                wins("rc6-128-ctr", Direction::Encrypt),
            ],
        );
        let auto = Engine::auto_with_gpu(Some(2), Box::new(counting), table).unwrap();
        for (name, direction) in [
            ("aes-128-gcm", Direction::Encrypt),
            ("aes-128-gcm", Direction::Decrypt),
            ("aes-256-ctr", Direction::Encrypt),
        ] {
            let before = calls.load(Ordering::SeqCst);
            let input = match direction {
                Direction::Encrypt => large.clone(),
                Direction::Decrypt => run(&seq, name, Direction::Encrypt, &large),
            };
            assert_eq!(
                run(&auto, name, direction, &input),
                run(&seq, name, direction, &input)
            );
            let used = calls.load(Ordering::SeqCst) > before;
            assert_eq!(
                used,
                leak.is_none(),
                "{name} {direction:?} on {claim:?}: the device is used exactly when its \
                 table AES is constant time"
            );
            assert_eq!(
                auto.gpu_for(spec(name), direction, large.len()).is_some(),
                leak.is_none()
            );
        }
        assert!(auto.warnings(spec("aes-128-gcm")).is_empty());
        let before = calls.load(Ordering::SeqCst);
        run(&auto, "rc6-128-ctr", Direction::Encrypt, &large);
        assert!(
            calls.load(Ordering::SeqCst) > before,
            "RC6 keeps going where the table says, on {claim:?}"
        );
    }
}

/// Issue 31 finding 7: a GPU backend named by the caller still runs AES on a device whose
/// table AES may leak (PoCL), and the engine says so, once per process; RC6 and Blowfish
/// get no warning. (The only test of this binary that takes warnings.)
#[test]
fn a_named_leaky_device_runs_aes_and_warns_once() {
    let Some(device) = open_first_device() else {
        return;
    };
    let leak = device.aes_timing_leak(KernelOperation::Ctr);
    drop(device);
    let engine = Engine::new(Backend::Opencl, Some(2)).unwrap();
    let gcm = spec("aes-128-gcm");
    let seq = Engine::new(Backend::Seq, None).unwrap();
    let input = data(70_000);
    assert_eq!(
        run(&engine, "aes-128-gcm", Direction::Encrypt, &input),
        run(&seq, "aes-128-gcm", Direction::Encrypt, &input),
        "named, the device still runs AES"
    );
    let warnings = engine.warnings(gcm);
    match leak {
        None => assert!(warnings.is_empty(), "{warnings:?}"),
        Some(leak) => {
            assert_eq!(warnings.len(), 1);
            let EngineWarning::TableAes {
                backend,
                leak: said,
                ..
            } = &warnings[0]
            else {
                panic!("{warnings:?}")
            };
            assert_eq!((*backend, *said), (Backend::Opencl, leak));
            let line = warnings[0].to_string();
            assert!(
                line.contains("not constant time") && !line.contains('\n'),
                "{line}"
            );
            assert_eq!(engine.take_warnings(gcm), warnings, "the first time");
            assert!(engine.take_warnings(gcm).is_empty(), "once per process");
            let again = Engine::new(Backend::Opencl, Some(1)).unwrap();
            assert!(again.take_warnings(spec("aes-256-ctr")).is_empty());
            assert_eq!(again.warnings(gcm), warnings, "still there when asked");
        }
    }
    for name in ["rc6-128-gcm", "bf-ctr", "bf-ecb", "rc6-256-cbc"] {
        assert!(engine.warnings(spec(name)).is_empty(), "{name}");
    }
    // CPU backends never warn.
    assert!(seq.warnings(gcm).is_empty());
}

#[test]
fn tuned_shapes_are_launched_and_change_no_byte() {
    let Some(device) = open_first_device() else {
        return;
    };
    let untuned = GpuDevice::launch_geometry(&device);
    let odd = geometry(96, 3);
    let shape = |bytes: u64, geometry: LaunchGeometry| aes_128_ctr_shape(bytes, geometry, 1.0, 1.0);
    let tiny = geometry(32, 1);
    let table = TuneTable::new(
        "opencl",
        device.identity(),
        untuned,
        vec![shape(64, tiny), shape(1 << 20, odd)],
        Vec::new(),
    );
    let ctr = GpuOperation::Ctr {
        counter: vec![0xff; 16],
        rule: parcrypt_modes::ctr::CounterRule::Full,
    };
    GpuDevice::set_tuning(&device, Some(Arc::new(table)));
    assert_eq!(device.geometry_for(Algorithm::Aes128, &ctr, 100), tiny);
    assert_eq!(device.geometry_for(Algorithm::Aes128, &ctr, 3 << 20), odd);
    // ECB encryption borrows CTR's shapes; other ciphers keep the untuned shape.
    assert_eq!(
        device.geometry_for(Algorithm::Aes128, &GpuOperation::EcbEncrypt, 3 << 20),
        odd
    );
    assert_eq!(
        device.geometry_for(Algorithm::Rc6_128, &ctr, 3 << 20),
        untuned
    );

    let key_bytes: Vec<u8> = (100..116).collect();
    let key = KeyMaterial::new(Algorithm::Aes128, &key_bytes).unwrap();
    for length in [0usize, 1, 15, 16, 17, 4096 + 5, (3 << 20) + 7] {
        let mut on_device = data(length);
        device.process(&key, &ctr, &mut on_device).unwrap();
        let mut expected = data(length);
        let cipher =
            parcrypt_ciphers::new_cipher(Algorithm::Aes128, Implementation::Fast, &key_bytes)
                .unwrap();
        parcrypt_modes::ctr::apply(
            cipher.as_ref(),
            parcrypt_modes::ctr::Counter::new(&[0xff; 16], parcrypt_modes::ctr::CounterRule::Full),
            &mut expected,
        );
        assert_eq!(on_device, expected, "{length} bytes under the tuned shapes");
    }

    // An explicit shape drops the table.
    GpuDevice::set_launch_geometry(&device, odd).unwrap();
    assert!(GpuDevice::tuning(&device).is_none());
    assert_eq!(device.geometry_for(Algorithm::Aes128, &ctr, 100), odd);
}

#[test]
fn a_small_sweep_measures_installs_and_keeps_output_identical() {
    if open_first_device().is_none() {
        return;
    }
    let gpu_engine = Engine::new(Backend::Opencl, None).unwrap();
    let cpu_engine = Engine::new(Backend::Auto, None).unwrap();
    let device = gpu_engine.gpu().unwrap();
    let untuned = device.launch_geometry();
    let options = TuneOptions {
        algorithms: vec![Algorithm::Aes128, Algorithm::Blowfish],
        operations: vec![KernelOperation::Ctr, KernelOperation::EcbDecrypt],
        sizes: vec![64, 64 << 10],
        threads_per_group: vec![32, 128],
        blocks_per_thread: vec![1, 4],
        runs: 2,
        point_budget: Duration::from_millis(200),
        crossover_jobs: vec![
            (spec("aes-128-ctr"), Direction::Encrypt),
            (spec("bf-ecb"), Direction::Decrypt),
        ],
        crossover_sizes: vec![1024, 256 << 10],
    };
    let mut shapes_seen = 0;
    let mut crossovers_seen = 0;
    let table = tune(
        &gpu_engine,
        &cpu_engine,
        &options,
        &mut |event| match event {
            TuneEvent::Shape(_) => shapes_seen += 1,
            TuneEvent::Crossover(_) => crossovers_seen += 1,
        },
    )
    .unwrap();
    assert_eq!((shapes_seen, crossovers_seen), (8, 2));
    assert_eq!(table.shapes.len(), 8);
    assert_eq!(table.device, device.identity());
    for shape in &table.shapes {
        assert!(
            shape.kernel_seconds > 0.0 && shape.untuned_kernel_seconds > 0.0,
            "{shape:?}"
        );
        assert!(
            shape.kernel_seconds <= shape.untuned_kernel_seconds,
            "the untuned shape is a candidate: {shape:?}"
        );
        let candidate = options.threads_per_group.contains(&shape.threads_per_group)
            && options.blocks_per_thread.contains(&shape.blocks_per_thread);
        assert!(
            candidate || shape.geometry() == untuned,
            "{shape:?} was never a candidate"
        );
    }
    for crossover in &table.crossovers {
        assert_eq!(crossover.points.len(), 2);
        assert!(crossover
            .points
            .iter()
            .all(|point| point.cpu_seconds > 0.0 && point.gpu_seconds > 0.0));
    }
    // The sweep restores the device's own shape and installs the table.
    assert_eq!(device.launch_geometry(), untuned);
    assert_eq!(device.tuning().as_deref(), Some(&table));

    let seq = Engine::new(Backend::Seq, None).unwrap();
    for (name, direction) in [
        ("aes-128-ctr", Direction::Encrypt),
        ("bf-ecb", Direction::Decrypt),
        ("aes-128-gcm", Direction::Encrypt),
    ] {
        let input = data(if name == "bf-ecb" {
            70 << 10
        } else {
            (70 << 10) + 3
        });
        assert_eq!(
            run(&gpu_engine, name, direction, &input),
            run(&seq, name, direction, &input),
            "{name}"
        );
    }
}
