//! What the AES speed examples share: the timed loop over one buffer and OpenSSL's figure for
//! the same cipher, so that every example measures the same way.

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use parcrypt_ciphers::KernelFamily;

/// Timed runs per figure, after one warm-up run.
pub const RUNS: usize = 9;
/// The least time one run lasts.
pub const RUN_TIME: Duration = Duration::from_millis(200);
/// The buffer size `openssl speed` is asked to use, and the examples' small buffer.
pub const OPENSSL_BLOCK: usize = 16 * 1024;

/// Bytes per second over the timed runs.
pub struct Rate {
    /// The median run.
    pub median: f64,
    /// The fastest run: on a shared machine the one least disturbed by other work.
    pub best: f64,
}

/// Rate of `work` over a pre-touched buffer of `size` bytes, from [`RUNS`] runs of at least
/// [`RUN_TIME`] each after one warm-up run.
pub fn measure(size: usize, mut work: impl FnMut(&mut [u8])) -> Rate {
    let mut buffer = vec![0x17u8; size];
    // Clock reads between calls cost as much as a few hundred bytes of AES: read it once per
    // batch of at least 1 MiB.
    let calls_per_check = (1usize << 20).div_ceil(size);
    let mut one_run = || {
        let start = Instant::now();
        let mut bytes = 0usize;
        while start.elapsed() < RUN_TIME {
            for _ in 0..calls_per_check {
                work(black_box(&mut buffer));
            }
            bytes += size * calls_per_check;
        }
        bytes as f64 / start.elapsed().as_secs_f64()
    };
    one_run();
    let mut rates: Vec<f64> = (0..RUNS).map(|_| one_run()).collect();
    rates.sort_by(f64::total_cmp);
    Rate {
        median: rates[RUNS / 2],
        best: rates[RUNS - 1],
    }
}

/// OpenSSL's figure for `cipher` (decrypting if `decrypt`) over [`OPENSSL_BLOCK`]-byte
/// buffers, from the last `+F:` line of its machine-readable output
/// (`+F:index:name:bytes-per-second`); `None` where `openssl` cannot be run.
pub fn openssl_bytes_per_second(cipher: &str, decrypt: bool) -> Option<f64> {
    let bytes = OPENSSL_BLOCK.to_string();
    let mut command = Command::new("openssl");
    command.args([
        "speed", "-evp", cipher, "-bytes", &bytes, "-seconds", "1", "-mr",
    ]);
    if decrypt {
        command.arg("-decrypt");
    }
    let output = command.output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().rev().find(|line| line.starts_with("+F:"))?;
    line.rsplit(':').next()?.trim().parse().ok()
}

/// The family named by `--kernels FAMILY`, if any.
pub fn kernel_ceiling() -> Option<KernelFamily> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    match arguments.as_slice() {
        [] => None,
        [flag, family] if flag == "--kernels" => {
            let family: KernelFamily = family.parse().expect("a kernel family");
            Some(family.check().expect("a family this CPU has"))
        }
        other => panic!("usage: [--kernels FAMILY], not {other:?}"),
    }
}
