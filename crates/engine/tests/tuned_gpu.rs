//! Tuning on a real OpenCL device (PoCL in CI): the sweep measures and installs a table,
//! tuned shapes are the ones launched and change no byte, and `auto` sends exactly the jobs
//! the table gives the GPU there, with the same output as `seq`.
//!
//! Without OpenCL the tests print SKIPPED and pass, unless `CI` is set (CI installs PoCL).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[path = "support/opencl.rs"]
mod opencl;

use opencl::{aes_128_ctr_shape, geometry, open_first_device};
use parcrypt_ciphers::{Algorithm, Implementation};
use parcrypt_engine::crypter::{process_buffer, JobSpec};
use parcrypt_engine::tune::{tune, TuneEvent, TuneOptions};
use parcrypt_engine::{Backend, Engine};
use parcrypt_gpu::kernel_source::KernelOperation;
use parcrypt_gpu::tuning::{Crossover, CrossoverPoint};
use parcrypt_gpu::{
    GpuApi, GpuDevice, GpuError, GpuOperation, KeyMaterial, LaunchGeometry, OpenClDevice, TuneTable,
};
use parcrypt_modes::{CipherSpec, Direction};

/// A device that counts the data calls that reach it.
struct Counting {
    inner: OpenClDevice,
    calls: Arc<AtomicUsize>,
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
    let job = JobSpec {
        spec,
        direction,
        key: &key,
        iv: iv.as_deref(),
        allow_short_gcm_iv: false,
        aad: None,
        padding: false,
        implementation: Implementation::Fast,
    };
    process_buffer(engine, &job, input.to_vec()).expect("job runs")
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
    };
    // Made up on purpose: the GPU "wins" CTR from 1 MiB; GCM was measured and never wins.
    let table = TuneTable::new(
        "opencl",
        identity,
        geometry(64, 64),
        Vec::new(),
        vec![
            Crossover::new(
                spec("aes-128-ctr"),
                Direction::Encrypt,
                vec![point(1 << 16, 1.0, 2.0), point(1 << 20, 2.0, 1.0)],
            ),
            Crossover::new(
                spec("aes-128-gcm"),
                Direction::Encrypt,
                vec![point(1 << 20, 1.0, 2.0)],
            ),
        ],
    );
    let auto = Engine::auto_with_gpu(Some(2), Box::new(counting), table).unwrap();
    let seq = Engine::new(Backend::Seq, None).unwrap();

    let small = data(64 << 10);
    assert_eq!(
        run(&auto, "aes-128-ctr", Direction::Encrypt, &small),
        run(&seq, "aes-128-ctr", Direction::Encrypt, &small)
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
            run(&auto, "aes-128-ctr", direction, &large),
            run(&seq, "aes-128-ctr", direction, &large)
        );
        assert!(
            calls.load(Ordering::SeqCst) > before,
            "2 MiB of CTR ({direction:?}) goes to the GPU"
        );
    }

    let before = calls.load(Ordering::SeqCst);
    assert_eq!(
        run(&auto, "aes-128-gcm", Direction::Encrypt, &large),
        run(&seq, "aes-128-gcm", Direction::Encrypt, &large)
    );
    assert_eq!(
        run(&auto, "aes-256-ctr", Direction::Encrypt, &large),
        run(&seq, "aes-256-ctr", Direction::Encrypt, &large)
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        before,
        "GCM never won and AES-256 was not measured: CPU"
    );
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
