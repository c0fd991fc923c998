//! S0: AES-128 over a 17.9 MB input, encryption and decryption, the seed's technologies
//! side by side: one thread (C / Java sequential), a static equal split over threads
//! (OpenMP `parallel for`, Java Threads), work stealing (Java ForkJoin), and the GPU, timed
//! end to end (the seed timed only an asynchronous launch). Mean of 10 runs, as the seed.

use parcrypt_engine::Backend;
use parcrypt_modes::{CipherSpec, Direction};

use crate::lab::{Lab, Level};
use crate::record::{BenchRecord, Report, Timing};
use crate::scenario::{checked_engines, every_engine, find, select, time_files, whole_blocks};
use crate::seeds;
use crate::stats::Repetition;
use crate::summary::{backend_label, distinct, mbps, ms, or_dash, size, times, Summary, Table};
use crate::throughput::{random_buffer, MEMORY_PASS};
use crate::BenchError;

pub const NAME: &str = "s0";
const CIPHER: &str = "aes-128-ecb";

pub fn run(lab: &mut Lab) -> Result<(), BenchError> {
    let spec: CipherSpec = CIPHER.parse().expect("a valid cipher name");
    let level = lab.level();
    let threads = lab.threads();
    let (cpu, gpus) = checked_engines(
        lab,
        &[Backend::Seq, Backend::Threads, Backend::Pool],
        threads,
        &[spec],
    )?;
    let all = every_engine(&cpu, &gpus);
    let runs = level.pick(3, 10, 10);
    let repetition = Repetition::exactly(runs);
    // The seed's 17.9 MB PDF, as whole 16-byte blocks in memory (the file rows pad it).
    let bytes = whole_blocks(spec, seeds::s0::INPUT_BYTES as usize);
    let mut data = random_buffer(bytes, 17);
    for direction in [Direction::Encrypt, Direction::Decrypt] {
        lab.openssl_speed(NAME, spec, direction, bytes, 1)?;
        if threads > 1 && level != Level::Quick {
            lab.openssl_speed(NAME, spec, direction, bytes, threads)?;
        }
        lab.push_engines(NAME, spec, direction, &all, &mut data, repetition, None)?;
        for gpu in &gpus {
            lab.push_cuda_kernel(
                NAME, CIPHER, gpu, spec, direction, bytes, threads, repetition,
            )?;
        }
    }
    // The memory ceiling at this size: no cipher pass beats an in-place pass that does no
    // cipher work, whatever the cores.
    for engine in cpu
        .iter()
        .filter(|engine| engine.backend() != Backend::Threads)
    {
        lab.push_memory_pass(NAME, engine, bytes, repetition)?;
    }
    // The seed encrypted a file: the same size through files, with OpenSSL's `enc`.
    time_files(
        lab,
        NAME,
        spec,
        &all,
        seeds::s0::INPUT_BYTES as usize,
        repetition,
    )?;
    Ok(())
}

/// The seed's technology each of our backends stands for.
fn counterpart(record: &BenchRecord) -> &'static str {
    match (record.backend.as_str(), record.timing) {
        ("seq", _) => "C / Java sequential",
        ("threads", _) => "OpenMP parallel for, Java Threads",
        ("pool", _) => "Java ForkJoin",
        ("openssl", _) => "(what users run today)",
        ("cuda", Timing::KernelOnly) => "CUDA, kernel only",
        (_, _) => "CUDA, end to end",
    }
}

pub fn summarize(report: &Report) -> Summary {
    let mut summary = Summary::new(
        report,
        NAME,
        "S0: AES-128 over a 17.9 MB input, seq vs threads vs pool vs GPU, mean times as the seed",
    );
    let mut seed = Table::new(
        format!(
            "Seed S0 as published ({}), ms, mean of 10",
            seeds::s0::MACHINE
        ),
        &[
            "technology",
            "encrypt ms",
            "decrypt ms",
            "enc x C seq",
            "dec x C seq",
        ],
    );
    let (base_encrypt, base_decrypt) = (seeds::s0::ROWS[0].1, seeds::s0::ROWS[0].2);
    for (technology, encrypt, decrypt) in seeds::s0::ROWS {
        seed.row(vec![
            technology.into(),
            ms(encrypt / 1e3),
            ms(decrypt / 1e3),
            times(base_encrypt / encrypt),
            times(base_decrypt / decrypt),
        ]);
    }
    seed.note("speedups over C sequential; the CUDA row timed a launch, not the work (281,000x is not a measurement)");
    summary.tables.push(seed);

    for timing in [Timing::EndToEnd, Timing::File] {
        // In-memory figures and the GPU's kernel-only ones share a table.
        let records = select(report, NAME, |record| {
            record.cipher != MEMORY_PASS
                && (record.timing == Timing::File) == (timing == Timing::File)
        });
        if records.is_empty() {
            continue;
        }
        let bytes = records[0].bytes;
        let title = match timing {
            Timing::File => format!(
                "parcrypt here, through files of {} (read, process, write), ms",
                size(bytes)
            ),
            _ => format!(
                "parcrypt here, {} in memory, ms (mean of {})",
                size(bytes),
                records.iter().map(|r| r.runs).max().unwrap_or(0)
            ),
        };
        let mut table = Table::new(
            title,
            &[
                "backend",
                "stands for",
                "encrypt ms",
                "decrypt ms",
                "encrypt MB/s",
                "enc x seq",
                "dec x seq",
                "enc x OpenSSL",
            ],
        );
        let labels = distinct(&records, backend_label);
        let mean = |label: &str, direction: &str| {
            records
                .iter()
                .copied()
                .find(|r| backend_label(r) == label && r.direction == direction)
        };
        let seq_encrypt = mean("seq", "encrypt").map(|r| r.mean_s);
        let seq_decrypt = mean("seq", "decrypt").map(|r| r.mean_s);
        let openssl_encrypt = |threads: usize| {
            records
                .iter()
                .copied()
                .find(|r| {
                    r.backend == "openssl" && r.direction == "encrypt" && r.threads == threads
                })
                .map(|r| r.mean_s)
        };
        for label in labels {
            let encrypt = mean(&label, "encrypt");
            let decrypt = mean(&label, "decrypt");
            let Some(any) = encrypt.or(decrypt) else {
                continue;
            };
            let threads = any.threads;
            let against_openssl = if any.backend == "openssl" || any.timing == Timing::KernelOnly {
                None
            } else {
                openssl_encrypt(threads)
                    .zip(encrypt)
                    .map(|(o, e)| times(o / e.mean_s))
            };
            table.row(vec![
                label.clone(),
                counterpart(any).into(),
                or_dash(encrypt.map(|r| ms(r.mean_s))),
                or_dash(decrypt.map(|r| ms(r.mean_s))),
                or_dash(encrypt.map(|r| mbps(r.bytes as f64 / r.mean_s / 1e6))),
                or_dash(encrypt.zip(seq_encrypt).map(|(r, s)| times(s / r.mean_s))),
                or_dash(decrypt.zip(seq_decrypt).map(|(r, s)| times(s / r.mean_s))),
                or_dash(against_openssl),
            ]);
        }
        table.note("x seq: speedup over our seq (mean times, as the seed); x OpenSSL: OpenSSL's time over ours with as many processes as threads");
        let ceilings: Vec<String> = select(report, NAME, |r| r.cipher == MEMORY_PASS)
            .iter()
            .map(|r| format!("{} {} MB/s", backend_label(r), mbps(r.mb_per_s)))
            .collect();
        if timing == Timing::EndToEnd && !ceilings.is_empty() {
            table.note(format!(
                "memory ceiling at this size (an in-place pass with no cipher work, median): {}; no cipher pass beats it, however many cores",
                ceilings.join(", ")
            ));
        }
        summary.tables.push(table);
    }

    // Headline comparisons.
    let encrypt = |backend: &str| {
        find(report, NAME, |r| {
            r.backend == backend && r.direction == "encrypt" && r.timing == Timing::EndToEnd
        })
    };
    let seq = encrypt("seq");
    if let Some(seq) = seq {
        let openssl = encrypt("openssl")
            .filter(|r| r.threads == 1)
            .map(|r| format!("; OpenSSL {} ms", ms(r.mean_s)))
            .unwrap_or_default();
        summary.compare(
            "one thread, encrypt 17.9 MB",
            "C 2500.9 ms (7.2 MB/s); Java 504.6 ms",
            format!(
                "seq {} ms ({} MB/s){openssl}",
                ms(seq.mean_s),
                mbps(seq.bytes as f64 / seq.mean_s / 1e6)
            ),
        );
    }
    if let Some(pool) = encrypt("pool") {
        let speedup = seq
            .map(|s| {
                format!(
                    ", {} over seq on {} threads",
                    times(s.mean_s / pool.mean_s),
                    pool.threads
                )
            })
            .unwrap_or_default();
        summary.compare(
            "fastest CPU technology, encrypt",
            "Java ForkJoin 203.8 ms (12.3x over C seq, 2.5x over Java seq, 4C/8T)",
            format!(
                "pool {} ms{speedup}; {} less time than ForkJoin",
                ms(pool.mean_s),
                times(0.2038 / pool.mean_s)
            ),
        );
    }
    if let Some(threads) = encrypt("threads") {
        let speedup = seq
            .map(|s| format!(" ({} over seq)", times(s.mean_s / threads.mean_s)))
            .unwrap_or_default();
        summary.compare(
            "static split, encrypt",
            "OpenMP 826.3 ms (3.0x over C seq); Java Threads 210.6 ms",
            format!("threads {} ms{speedup}", ms(threads.mean_s)),
        );
    }
    let gpu: Vec<String> = select(report, NAME, |r| {
        (r.backend == "opencl" || r.backend == "cuda")
            && r.direction == "encrypt"
            && r.timing != Timing::File
    })
    .iter()
    .map(|r| format!("{} {} ms", backend_label(r), ms(r.mean_s)))
    .collect();
    summary.compare(
        "GPU, encrypt",
        "CUDA 0.0089 ms (an asynchronous launch only: not the work)",
        if gpu.is_empty() {
            "no GPU backend here (see the run's GPU lines)".to_string()
        } else {
            format!("{} (end to end unless marked kernel)", gpu.join("; "))
        },
    );
    summary
}
