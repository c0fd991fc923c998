//! `parcrypt bench`: encrypt and decrypt generated data on every backend of this machine,
//! check that every backend agrees with `seq`, and print the speed tables next to OpenSSL
//! measured in the same run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use clap::Args;
use parcrypt_bench::openssl;
use parcrypt_bench::stats::{measure, SystemClock};
use parcrypt_bench::throughput::{bench_key_iv, file_pass, in_memory_batched, memcpy, touched_buffer};
use parcrypt_ciphers::Implementation;
use parcrypt_engine::crypter::{process_buffer, JobSpec};
use parcrypt_engine::{available_threads, Backend, Engine};
use parcrypt_modes::{CipherSpec, Direction, Mode};

use super::Failure;

#[derive(Args)]
pub struct BenchArgs {
    /// Ciphers to measure, comma-separated
    #[arg(long, value_delimiter = ',', default_value = "aes-128-ctr,aes-256-ctr,aes-128-gcm,aes-128-ecb,aes-128-cbc,bf-ctr,rc6-128-ctr")]
    ciphers: Vec<String>,
    /// Backends to measure, comma-separated (default: seq, threads, pool and every GPU
    /// backend that this machine has)
    #[arg(long, value_delimiter = ',')]
    backends: Vec<String>,
    /// Bytes per in-memory job (suffixes K, M, G); the default fits in the L3 cache, so the
    /// table shows the cores' speed rather than the memory's (the memcpy row tells which)
    #[arg(long, default_value = "4M", value_parser = parse_size)]
    size: usize,
    /// Size of the generated file for the end-to-end table (0 skips it)
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    file_size: usize,
    /// Timed runs per figure (the median is reported)
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    /// Threads for threads/pool (default: all cores)
    #[arg(long)]
    threads: Option<usize>,
    /// Small sizes and few runs: finishes in seconds
    #[arg(long)]
    quick: bool,
    /// Do not run OpenSSL for comparison
    #[arg(long)]
    no_openssl: bool,
}

fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let (number, multiplier) = match text.chars().last() {
        Some('K' | 'k') => (&text[..text.len() - 1], 1 << 10),
        Some('M' | 'm') => (&text[..text.len() - 1], 1 << 20),
        Some('G' | 'g') => (&text[..text.len() - 1], 1 << 30),
        _ => (text, 1),
    };
    number
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or_else(|| format!("'{text}' is not a size (e.g. 4096, 64K, 16M, 1G)"))
}

fn gbps(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 / seconds / 1e9
}

pub fn run(mut args: BenchArgs) -> Result<(), Failure> {
    if args.quick {
        args.size = args.size.min(4 << 20);
        args.file_size = args.file_size.min(32 << 20);
        args.repeat = args.repeat.min(3);
    }
    let specs: Vec<CipherSpec> =
        args.ciphers.iter().map(|name| name.parse()).collect::<Result<_, _>>()?;
    let threads = args.threads.unwrap_or_else(available_threads);
    println!("parcrypt bench: {} threads; {}", threads, parcrypt_ciphers::cpu_features());
    let engines: Vec<Engine> = if args.backends.is_empty() {
        let mut engines = Vec::new();
        for backend in [Backend::Seq, Backend::Threads, Backend::Pool].into_iter().chain(Backend::GPU) {
            match Engine::new(backend, Some(threads)) {
                Ok(engine) => engines.push(engine),
                Err(error) => println!("skipping {backend}: {error}"),
            }
        }
        engines
    } else {
        let backends: Vec<Backend> = args.backends.iter().map(|name| name.parse()).collect::<Result<_, _>>()?;
        backends.iter().map(|&backend| Engine::new(backend, Some(threads))).collect::<Result<_, _>>()?
    };
    for engine in &engines {
        if let Some(gpu) = engine.gpu() {
            println!("{}: {}", engine.backend(), gpu.description());
        }
    }

    verify_backends(&specs, &engines)?;
    memory_table(&args, &specs, &engines, threads)?;
    auto_table(&args, threads)?;
    if args.file_size > 0 {
        file_table(&args, &engines)?;
    }
    Ok(())
}

/// Before any timing: every backend must give `seq`'s bytes on awkward sizes.
fn verify_backends(specs: &[CipherSpec], engines: &[Engine]) -> Result<(), Failure> {
    let reference = Engine::new(Backend::Seq, None)?;
    let sizes = [0usize, 1, 15, 16, 17, 4096 + 5, (1 << 20) + 3];
    let mut checked = 0;
    for &spec in specs {
        let (key, iv) = bench_key_iv(spec);
        for direction in [Direction::Encrypt, Direction::Decrypt] {
            for &size in &sizes {
                let mut job = JobSpec {
                    spec,
                    direction,
                    key,
                    iv: iv.as_deref(),
                    aad: None,
                    padding: true,
                    implementation: Implementation::Fast,
                };
                let input = if direction == Direction::Encrypt {
                    touched_buffer(size)
                } else {
                    // Decrypt what seq encrypted, so padding and tags are valid.
                    job.direction = Direction::Encrypt;
                    let sealed = process_buffer(&reference, &job, touched_buffer(size))?;
                    job.direction = Direction::Decrypt;
                    sealed
                };
                let expected = process_buffer(&reference, &job, input.clone())?;
                for engine in engines {
                    let got = process_buffer(engine, &job, input.clone())?;
                    if got != expected {
                        return Err(Failure(format!(
                            "{} {spec} {:?} of {size} bytes differs from seq",
                            engine.backend(),
                            direction
                        )));
                    }
                    checked += 1;
                }
            }
        }
    }
    println!("checked: {checked} runs of every backend equal seq (sizes 0, 1, 15, 16, 17, 4 KiB+5, 1 MiB+3)\n");
    Ok(())
}

fn memory_table(args: &BenchArgs, specs: &[CipherSpec], engines: &[Engine], threads: usize) -> Result<(), Failure> {
    // Enough jobs per timed sample for about 64 MiB of work (16 MiB when quick).
    let work: usize = if args.quick { 16 << 20 } else { 64 << 20 };
    let jobs = (work / args.size.max(1)).max(1);
    println!(
        "In memory, {} per job, {jobs} jobs per sample, median of {} (GB/s; OpenSSL: `openssl speed -evp`, 16 KiB blocks, 1 process and {threads})",
        human_size(args.size),
        args.repeat
    );
    let mut header = format!("{:<14} {:<4}", "cipher", "dir");
    for engine in engines {
        header += &format!(" {:>9}", engine.backend().name());
    }
    header += &format!(" {:>9} {:>9} {:>8} {:>8}", "openssl", "openssl*N", "seq/ossl", "scaling");
    println!("{header}");
    for &spec in specs {
        let directions: &[Direction] = if spec.mode == Mode::Ctr {
            &[Direction::Encrypt]
        } else {
            &[Direction::Encrypt, Direction::Decrypt]
        };
        let (openssl_one, openssl_all) = if args.no_openssl || spec.mode == Mode::Cbc {
            (None, None)
        } else {
            let name = spec.to_string();
            (openssl::speed(&name, 16384, 1, 1), openssl::speed(&name, 16384, 1, threads))
        };
        for &direction in directions {
            let mut line = format!("{:<14} {:<4}", spec.to_string(), if direction == Direction::Encrypt { "enc" } else { "dec" });
            let mut seq_rate = None;
            let mut pool_rate = None;
            for engine in engines {
                let stats = in_memory_batched(spec, direction, engine, args.size, jobs, 1, args.repeat)?;
                let rate = stats.rate((args.size * jobs) as u64) / 1e9;
                match engine.backend() {
                    Backend::Seq => seq_rate = Some(rate),
                    Backend::Pool => pool_rate = Some(rate),
                    _ => {}
                }
                line += &format!(" {rate:>9.2}");
            }
            let show = |value: Option<f64>| value.map_or("-".to_string(), |v| format!("{:.2}", v / 1e9));
            line += &format!(" {:>9} {:>9}", show(openssl_one), show(openssl_all));
            let ratio = match (seq_rate, openssl_one) {
                (Some(ours), Some(theirs)) if direction == Direction::Encrypt => format!("{:.2}x", ours * 1e9 / theirs),
                _ => "-".into(),
            };
            let scaling = match (seq_rate, pool_rate) {
                (Some(one), Some(all)) if spec.mode.parallel(direction) => {
                    format!("{:.0}%", 100.0 * all / (one * threads as f64))
                }
                _ => "-".into(),
            };
            line += &format!(" {ratio:>8} {scaling:>8}");
            println!("{line}");
        }
    }
    let mut line = format!("{:<14} {:<4}", "memcpy", "-");
    for engine in engines {
        let rate = memcpy(engine, args.size, jobs, 1, args.repeat).rate((args.size * jobs) as u64) / 1e9;
        line += &format!(" {rate:>9.2}");
    }
    println!("{line}");
    println!("(scaling: pool over seq x {threads} threads; CBC encryption is sequential by nature;");
    println!(" memcpy: the same buffer size copied on each backend, the memory ceiling of an in-place pass)\n");
    Ok(())
}

/// Sizes from 1 KiB up: how `auto` compares with the best fixed backend at each size.
fn auto_table(args: &BenchArgs, threads: usize) -> Result<(), Failure> {
    let sizes: &[usize] = if args.quick {
        &[1 << 10, 64 << 10, 1 << 20, 8 << 20]
    } else {
        &[1 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 64 << 20]
    };
    let backends = [Backend::Seq, Backend::Threads, Backend::Pool, Backend::Auto];
    let engines: Vec<Engine> = backends.iter().map(|&b| Engine::new(b, Some(threads))).collect::<Result<_, _>>()?;
    println!("auto against fixed backends by input size (GB/s, median of {}, key setup included)", args.repeat);
    println!("{:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11}", "cipher", "size", "seq", "threads", "pool", "auto", "auto/best");
    for spec in ["aes-128-gcm", "aes-128-ctr"] {
        let spec: CipherSpec = spec.parse()?;
        for &size in sizes {
            // Enough jobs per sample for about 32 MiB of work.
            let jobs = ((32usize << 20) / size).max(1);
            let mut rates = Vec::new();
            for engine in &engines {
                let stats = in_memory_batched(spec, Direction::Encrypt, engine, size, jobs, 1, args.repeat)?;
                rates.push(stats.rate((size * jobs) as u64) / 1e9);
            }
            let best = rates[..3].iter().cloned().fold(0.0, f64::max);
            println!(
                "{:<14} {:>9} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>10.0}%",
                spec.to_string(),
                human_size(size),
                rates[0],
                rates[1],
                rates[2],
                rates[3],
                100.0 * rates[3] / best
            );
        }
    }
    println!();
    Ok(())
}

fn human_size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// A folder for the generated file: memory-backed when the machine has one.
fn scratch_folder() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

fn file_table(args: &BenchArgs, engines: &[Engine]) -> Result<(), Failure> {
    let folder = tempfile::Builder::new().prefix("parcrypt-bench-").tempdir_in(scratch_folder())?;
    let plain = folder.path().join("plain.bin");
    let sealed = folder.path().join("sealed.bin");
    let opened = folder.path().join("opened.bin");
    std::fs::write(&plain, touched_buffer(args.file_size))?;
    println!(
        "End to end, a {} MiB file in {} (read, encrypt, write; GB/s of input, median of {})",
        args.file_size >> 20,
        scratch_folder().display(),
        args.repeat
    );
    println!("{:<14} {:<9} {:>9} {:>9}  check", "cipher", "backend", "encrypt", "decrypt");
    let size = args.file_size as u64;
    for spec in ["aes-128-ctr", "aes-128-gcm", "aes-128-cbc"] {
        let spec: CipherSpec = spec.parse()?;
        let mut reference_digest = None;
        for engine in engines {
            let mut failure = None;
            let mut time = |direction: Direction, from: &Path, to: &Path| {
                measure(&mut SystemClock::default(), 1, args.repeat, || {
                    if let Err(error) = file_pass(spec, direction, engine, from, to) {
                        failure.get_or_insert(error.to_string());
                    }
                })
            };
            let encrypt = time(Direction::Encrypt, &plain, &sealed);
            let decrypt = time(Direction::Decrypt, &sealed, &opened);
            if let Some(error) = failure {
                return Err(Failure(error));
            }
            let round_trip = std::fs::read(&opened)? == std::fs::read(&plain)?;
            let sealed_bytes = std::fs::read(&sealed)?;
            let same = reference_digest.get_or_insert_with(|| sealed_bytes.clone()) == &sealed_bytes;
            if !round_trip || !same {
                return Err(Failure(format!("{} {spec}: file round trip or agreement with the first backend failed", engine.backend())));
            }
            println!(
                "{:<14} {:<9} {:>9.2} {:>9.2}  round trip ok, equal to {}",
                spec.to_string(),
                engine.backend().name(),
                size as f64 / encrypt.median.as_secs_f64() / 1e9,
                size as f64 / decrypt.median.as_secs_f64() / 1e9,
                engines[0].backend().name()
            );
        }
        if !args.no_openssl && spec.mode != Mode::Gcm {
            if let Some((encrypt, decrypt)) = openssl_enc_times(spec, &plain, &sealed, &opened, args.repeat) {
                println!(
                    "{:<14} {:<9} {:>9.2} {:>9.2}  openssl enc, same file",
                    spec.to_string(),
                    "openssl",
                    gbps(size, encrypt),
                    gbps(size, decrypt)
                );
            }
        }
    }
    Ok(())
}

/// Median seconds of `openssl enc` encrypting and decrypting the file, or `None` without
/// OpenSSL.
fn openssl_enc_times(spec: CipherSpec, plain: &Path, sealed: &Path, opened: &Path, repeat: usize) -> Option<(f64, f64)> {
    let (key, iv) = bench_key_iv(spec);
    let run = |decrypt: bool, from: &Path, to: &Path| -> Option<f64> {
        let mut command = Command::new("openssl");
        command.args(["enc", &format!("-{spec}"), "-K", &hex::encode(key), "-nosalt"]);
        if let Some(iv) = &iv {
            command.args(["-iv", &hex::encode(iv)]);
        }
        if decrypt {
            command.arg("-d");
        }
        command.arg("-in").arg(from).arg("-out").arg(to);
        let start = Instant::now();
        let status = command.status().ok()?;
        status.success().then(|| start.elapsed().as_secs_f64())
    };
    let median = |mut samples: Vec<f64>| {
        samples.sort_by(f64::total_cmp);
        samples[samples.len() / 2]
    };
    run(false, plain, sealed)?;
    let encrypt: Option<Vec<f64>> = (0..repeat.max(1)).map(|_| run(false, plain, sealed)).collect();
    let decrypt: Option<Vec<f64>> = (0..repeat.max(1)).map(|_| run(true, sealed, opened)).collect();
    Some((median(encrypt?), median(decrypt?)))
}
