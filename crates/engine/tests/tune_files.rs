//! Engines follow the tune file of their own device in the tune directory their caller
//! names, and read none unless asked (even with PARCRYPT_TUNE_DIR set: only the command line
//! reads it). One test in its own binary, because it sets a process-wide environment
//! variable.

#[path = "support/opencl.rs"]
mod opencl;

use opencl::{aes_128_ctr_shape, first_device_name, geometry};
use parcrypt_engine::{Backend, Engine};
use parcrypt_gpu::tuning::{tune_file, Crossover, CrossoverPoint};
use parcrypt_gpu::TuneTable;
use parcrypt_modes::{CipherSpec, Direction};

#[test]
fn engines_read_the_tune_file_of_their_own_device_only() {
    let Some(name) = first_device_name() else {
        return;
    };
    let identity = parcrypt_gpu::tuning::device_identity("opencl", &name);
    let directory = tempfile::tempdir().unwrap();
    std::env::set_var("PARCRYPT_TUNE_DIR", directory.path());
    // RC6, not AES: `auto` never sends AES to a CPU OpenCL device such as PoCL (below).
    let ctr: CipherSpec = "rc6-128-ctr".parse().unwrap();
    let gcm: CipherSpec = "aes-128-gcm".parse().unwrap();
    let tuned = |backend: Backend, threads: usize| {
        Engine::builder()
            .backend(backend)
            .threads(threads)
            .tune_directory(directory.path())
            .build()
            .unwrap()
    };

    // No file: auto is CPU only, the GPU backend untuned.
    let auto = tuned(Backend::Auto, 2);
    assert!(auto.auto_tuning().is_none());
    assert!(auto.gpu_for(ctr, Direction::Encrypt, 1 << 30).is_none());

    let shape = aes_128_ctr_shape(1 << 20, geometry(96, 2), 1.0, 2.0);
    let crossover = Crossover::new(
        ctr,
        Direction::Encrypt,
        vec![
            CrossoverPoint {
                bytes: 1 << 10,
                cpu_seconds: 1.0,
                gpu_seconds: 5.0,
            },
            CrossoverPoint {
                bytes: 1 << 24,
                cpu_seconds: 2.0,
                gpu_seconds: 1.0,
            },
        ],
    );
    // Made up: the GPU "wins" AES-128-GCM from 1 KiB.
    let aes_crossover = Crossover::new(
        gcm,
        Direction::Encrypt,
        vec![CrossoverPoint {
            bytes: 1 << 10,
            cpu_seconds: 2.0,
            gpu_seconds: 1.0,
        }],
    );
    let untuned = geometry(64, 64);
    // A file for another device, under this device's name, is not used.
    let foreign = TuneTable::new(
        "opencl",
        "opencl #0 some other device".into(),
        untuned,
        vec![shape.clone()],
        vec![crossover.clone()],
    );
    foreign
        .save(&tune_file(directory.path(), "opencl", &identity))
        .unwrap();
    assert!(tuned(Backend::Auto, 2).auto_tuning().is_none());
    let opencl = tuned(Backend::Opencl, 1);
    assert!(opencl.gpu().unwrap().tuning().is_none());
    drop(opencl);

    // This device's own file: the GPU backend launches with it, auto follows its crossover.
    let table = TuneTable::new(
        "opencl",
        identity.clone(),
        untuned,
        vec![shape],
        vec![crossover, aes_crossover],
    );
    table
        .save(&tune_file(directory.path(), "opencl", &identity))
        .unwrap();
    let opencl = tuned(Backend::Opencl, 1);
    assert_eq!(opencl.gpu().unwrap().tuning().as_deref(), Some(&table));
    drop(opencl);
    let auto = tuned(Backend::Auto, 2);
    let (backend, followed) = auto.auto_tuning().expect("auto reads the table");
    // The same table named as one file is followed the same way.
    let named = Engine::builder()
        .backend(Backend::Auto)
        .threads(2)
        .tune_file(tune_file(directory.path(), "opencl", &identity))
        .build()
        .unwrap();
    assert_eq!(named.auto_tuning(), Some((Backend::Opencl, &table)));
    // Without a directory or file from the caller, nothing is read.
    assert!(Engine::new(Backend::Auto, Some(2))
        .unwrap()
        .auto_tuning()
        .is_none());
    assert!(Engine::new(Backend::Opencl, None)
        .unwrap()
        .gpu()
        .unwrap()
        .tuning()
        .is_none());
    assert_eq!((backend, followed), (Backend::Opencl, &table));
    assert!(
        auto.gpu_for(ctr, Direction::Encrypt, 1 << 20).is_none(),
        "below the crossover"
    );
    let gpu = auto
        .gpu_for(ctr, Direction::Encrypt, 1 << 24)
        .expect("at the crossover: the GPU, opened now");
    assert_eq!(gpu.identity(), identity);
    assert_eq!(gpu.tuning().as_deref(), Some(&table));
    assert!(auto
        .gpu_for("rc6-128-ecb".parse().unwrap(), Direction::Encrypt, 1 << 30)
        .is_none());
    // Issue 31 finding 7: the table says the device wins AES-128-GCM, but where its table
    // AES may leak the key (PoCL, a CPU device, always does) `auto` keeps AES on the CPU.
    let leak = gpu.aes_timing_leak(parcrypt_gpu::kernel_source::KernelOperation::Ctr);
    println!("AES on {}: {leak:?}", gpu.description());
    assert_eq!(
        auto.gpu_for(gcm, Direction::Encrypt, 1 << 24).is_some(),
        leak.is_none()
    );
    assert!(
        auto.warnings(gcm).is_empty(),
        "auto never warns: it never chose"
    );

    // A damaged file means untuned, not an error.
    std::fs::write(tune_file(directory.path(), "opencl", &identity), "{").unwrap();
    assert!(tuned(Backend::Auto, 2).auto_tuning().is_none());
    assert!(tuned(Backend::Opencl, 1).gpu().unwrap().tuning().is_none());
}
