//! The engine builder's tuning options do what they say, and nothing comes from the
//! environment: the kernel cache is written only where the builder names a folder (not
//! under `$XDG_CACHE_HOME` or `$HOME`), and the GCM kernel and streaming stores, which are
//! process-wide, follow the builder. One test in its own binary: it sets process-wide state.

#[path = "support/opencl.rs"]
#[allow(dead_code)] // only the device check is needed here
mod opencl;

use std::time::Duration;

use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
use parcrypt_engine::{Backend, Engine};
use parcrypt_modes::gcm::{GcmKernel, GcmKey};

/// Files under `folder`, at any depth.
fn files_under(folder: &std::path::Path) -> usize {
    std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| {
                    let path = entry.path();
                    if path.is_dir() {
                        files_under(&path)
                    } else {
                        1
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

fn new_key_kernel() -> GcmKernel {
    let cipher = new_cipher(Algorithm::Aes128, Implementation::Fast, &[1u8; 16]).unwrap();
    GcmKey::new(cipher.as_ref()).unwrap().kernel()
}

#[test]
fn options_reach_the_engine_and_the_environment_does_not() {
    // The process-wide knobs follow the builder, and only when it sets them.
    assert_eq!(new_key_kernel(), GcmKernel::fastest());
    assert!(parcrypt_ciphers::aes::streaming_stores());
    std::env::set_var("PARCRYPT_GCM_KERNEL", "two-pass");
    std::env::set_var("PARCRYPT_NO_STREAM", "1");
    let plain = Engine::builder().backend(Backend::Seq).build().unwrap();
    assert_eq!(
        new_key_kernel(),
        GcmKernel::fastest(),
        "the variable is not read"
    );
    assert!(
        parcrypt_ciphers::aes::streaming_stores(),
        "the variable is not read"
    );
    drop(plain);
    let _two_pass = Engine::builder()
        .backend(Backend::Seq)
        .stitched_gcm(false)
        .streaming_stores(false)
        .build()
        .unwrap();
    assert_eq!(new_key_kernel(), GcmKernel::TwoPass);
    assert!(!parcrypt_ciphers::aes::streaming_stores());
    let _back = Engine::builder()
        .backend(Backend::Seq)
        .gcm_kernel(GcmKernel::fastest())
        .streaming_stores(true)
        .build()
        .unwrap();
    assert_eq!(new_key_kernel(), GcmKernel::fastest());
    assert!(parcrypt_ciphers::aes::streaming_stores());

    // A pool whose threads park at once still runs every job.
    let pool = Engine::builder()
        .backend(Backend::Pool)
        .threads(3)
        .pool_spin(Duration::ZERO)
        .build()
        .unwrap();
    let mut data = vec![0u8; 1 << 20];
    let lengths = pool.plan(data.len(), 16, None);
    let ranges = pool.run(&mut data, &lengths, |_, offset, range| {
        range.fill(1);
        (offset, range.len())
    });
    assert_eq!(
        ranges.iter().map(|(_, length)| length).sum::<usize>(),
        1 << 20
    );
    assert!(data.iter().all(|&byte| byte == 1));

    // The kernel cache: only in the folder the builder names.
    if opencl::first_device_name().is_none() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    std::env::set_var("HOME", home.path());
    std::env::set_var("XDG_CACHE_HOME", home.path().join("cache"));
    let untold = Engine::builder().backend(Backend::Opencl).build().unwrap();
    drop(untold);
    // (The OpenCL driver may keep caches of its own there: only parcrypt's folders count.)
    let ours = [
        home.path().join("cache").join("parcrypt"),
        home.path().join(".cache").join("parcrypt"),
    ];
    assert!(
        ours.iter().all(|folder| !folder.exists()),
        "nothing written without a cache folder"
    );
    let cache = tempfile::tempdir().unwrap();
    let cached = Engine::builder()
        .backend(Backend::Opencl)
        .kernel_cache_directory(cache.path())
        .build()
        .unwrap();
    drop(cached);
    assert!(
        files_under(cache.path()) > 0,
        "the compiled kernels are kept"
    );
    assert!(ours.iter().all(|folder| !folder.exists()));
}
