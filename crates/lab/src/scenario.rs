//! The lab's experiments: the sweep over ciphers, backends, threads and sizes, and the five
//! seed experiments S0-S4 (docs: seeds.md), each measured the seed's way and honestly.
//!
//! Every scenario has `run`, which measures and records, and `summarize`, which builds its
//! tables and its comparisons with the seed from the records alone.

pub mod s0;
pub mod s1;
pub mod s2;
pub mod s3;
pub mod s4;
pub mod sweep;

use std::path::Path;
use std::sync::Arc;

use parcrypt_engine::{Backend, Engine};
use parcrypt_modes::{CipherSpec, Direction, Mode};

use crate::lab::{direction_name, GpuBackend, Lab};
use crate::openssl;
use crate::record::{BenchRecord, Report, Timing};
use crate::stats::{measure_repeated, Repetition, SystemClock};
use crate::summary::Summary;
use crate::throughput::{file_pass, random_buffer};
use crate::BenchError;

pub use parcrypt_bench::speed::{directions, whole_blocks};

/// Every scenario, in the order `all` runs them.
pub const NAMES: [&str; 6] = ["sweep", "s0", "s1", "s2", "s3", "s4"];

/// What each scenario measures, one line each, for `--help` and the scenario list. The
/// names s0..s4 are the seeds' (seeds.md), which users and documents cite.
pub const DESCRIPTIONS: [(&str, &str); 6] = [
    (
        "sweep",
        "MB/s of every cipher, direction, backend, thread count and size; memory ceiling, files, OpenSSL",
    ),
    (
        "s0",
        "time to encrypt 17.9 MB with AES-128 on seq, threads, pool and GPU, mean of 10 (seed S0)",
    ),
    (
        "s1",
        "GPU over CPU speedup of Blowfish and RC6 ECB as random inputs grow (seed S1)",
    ),
    (
        "s2",
        "AES-128 ECB MB/s from 1 KiB to 1 GiB, end to end, and where the GPU overtakes (seed S2)",
    ),
    (
        "s3",
        "gain of the best GPU threads-per-group over the default, AES-128/192/256 (seed S3)",
    ),
    (
        "s4",
        "time and energy of AES-128 on 1000 KB with copies against zero-copy (seed S4)",
    ),
];

/// Expands `all` and checks the names.
pub fn parse_names(names: &[String]) -> Result<Vec<String>, BenchError> {
    let mut chosen: Vec<String> = Vec::new();
    for name in names {
        let name = name.trim().to_ascii_lowercase();
        let expanded: Vec<String> = if name == "all" {
            NAMES.iter().map(|name| name.to_string()).collect()
        } else if NAMES.contains(&name.as_str()) {
            vec![name]
        } else {
            return Err(BenchError::Usage(format!(
                "unknown scenario '{name}' (choose {} or all)",
                NAMES.join(", ")
            )));
        };
        for name in expanded {
            if !chosen.contains(&name) {
                chosen.push(name);
            }
        }
    }
    Ok(chosen)
}

/// Runs one scenario.
pub fn run(lab: &mut Lab, name: &str) -> Result<(), BenchError> {
    match name {
        "sweep" => sweep::run(lab),
        "s0" => s0::run(lab),
        "s1" => s1::run(lab),
        "s2" => s2::run(lab),
        "s3" => s3::run(lab),
        "s4" => s4::run(lab),
        other => Err(BenchError::Usage(format!("unknown scenario '{other}'"))),
    }
}

/// The summary of one scenario, when the report has anything of it.
pub fn summarize_one(report: &Report, name: &str) -> Option<Summary> {
    if report.scenario(name).next().is_none() && report.notes_of(name).next().is_none() {
        return None;
    }
    Some(match name {
        "sweep" => sweep::summarize(report),
        "s0" => s0::summarize(report),
        "s1" => s1::summarize(report),
        "s2" => s2::summarize(report),
        "s3" => s3::summarize(report),
        "s4" => s4::summarize(report),
        _ => return None,
    })
}

/// The summaries of every scenario in the report, in [`NAMES`] order, then the peers'
/// (`parcrypt-lab --peers`) when the report has them.
pub fn summarize(report: &Report) -> Vec<Summary> {
    NAMES
        .iter()
        .filter_map(|name| summarize_one(report, name))
        .chain(crate::peers::summarize(report))
        .collect()
}

/// The engines a seed scenario measures: the CPU backends it names that the run allows,
/// each with `threads` threads (seq has one), and every GPU backend that opened; all checked
/// to give `seq`'s bytes on `specs` before anything is timed.
pub fn checked_engines(
    lab: &Lab,
    cpu_backends: &[Backend],
    threads: usize,
    specs: &[CipherSpec],
) -> Result<(Vec<Engine>, Vec<Arc<GpuBackend>>), BenchError> {
    let cpu = lab
        .cpu_backends(cpu_backends)
        .into_iter()
        .map(|backend| lab.options().engine(backend, threads))
        .collect::<Result<Vec<_>, _>>()?;
    let gpus = lab.gpus();
    crate::verify::backends_agree(specs, &every_engine(&cpu, &gpus))?;
    Ok((cpu, gpus))
}

/// The CPU engines, then the GPU backends' engines.
pub fn every_engine<'a>(cpu: &'a [Engine], gpus: &'a [Arc<GpuBackend>]) -> Vec<&'a Engine> {
    cpu.iter()
        .chain(gpus.iter().map(|gpu| &gpu.engine))
        .collect()
}

/// End to end through files: `bytes` of random data written to a file, then for each engine
/// the streaming path encrypts it to a second file and decrypts that to a third (padding on),
/// then `openssl enc` does the same when it has the cipher. Every engine's ciphertext must
/// equal the first engine's and decrypt to the input.
pub fn time_files(
    lab: &mut Lab,
    scenario: &str,
    spec: CipherSpec,
    engines: &[&Engine],
    bytes: usize,
    repetition: Repetition,
) -> Result<(), BenchError> {
    let folder = tempfile::Builder::new()
        .prefix("parcrypt-bench-")
        .tempdir_in(&lab.options().scratch)?;
    let plain = folder.path().join("plain.bin");
    let sealed = folder.path().join("sealed.bin");
    let opened = folder.path().join("opened.bin");
    std::fs::write(&plain, random_buffer(bytes, 0xf11e))?;
    let repetition = lab.repetition(repetition);
    let mut reference: Option<Vec<u8>> = None;
    for engine in engines {
        for (direction, from, to) in [
            (Direction::Encrypt, &plain, &sealed),
            (Direction::Decrypt, &sealed, &opened),
        ] {
            lab.progress(&format!(
                "{scenario}: {spec} {} file of {} on {}",
                direction_name(direction),
                crate::summary::size(bytes as u64),
                engine.backend()
            ));
            let sampled =
                measure_repeated(&mut SystemClock::default(), repetition, &mut (), || {
                    file_pass(spec, direction, engine, from, to)
                        .map(|_| None)
                        .map_err(BenchError::from)
                })?;
            let mut record = BenchRecord::new(
                scenario,
                &spec.to_string(),
                direction_name(direction),
                engine.backend().name(),
                engine.threads(),
                bytes as u64,
                Timing::File,
            )
            .with_figures(&sampled);
            record.device = engine
                .gpu()
                .map(|gpu| crate::gpu::device_name(&gpu.description()));
            record.note = Some(format!(
                "file in {}: read, {}, write",
                lab.options().scratch.display(),
                direction_name(direction)
            ));
            lab.push(record)?;
        }
        let sealed_bytes = std::fs::read(&sealed)?;
        let round_trip = std::fs::read(&opened)? == std::fs::read(&plain)?;
        let same = reference.get_or_insert_with(|| sealed_bytes.clone()) == &sealed_bytes;
        if !round_trip || !same {
            return Err(BenchError::Mismatch(format!(
                "{} {spec}: file round trip or agreement with {} failed",
                engine.backend(),
                engines[0].backend()
            )));
        }
    }
    if lab.openssl() && spec.mode != Mode::Gcm {
        time_openssl_files(
            lab,
            scenario,
            spec,
            bytes,
            repetition,
            [&plain, &sealed, &opened],
            reference.as_deref(),
        )?;
    }
    Ok(())
}

/// `openssl enc` over the same file, as a `file` row; notes whether its ciphertext equals
/// ours.
fn time_openssl_files(
    lab: &mut Lab,
    scenario: &str,
    spec: CipherSpec,
    bytes: usize,
    repetition: Repetition,
    [plain, sealed, opened]: [&Path; 3],
    ours: Option<&[u8]>,
) -> Result<(), BenchError> {
    for (direction, from, to) in [
        (Direction::Encrypt, plain, sealed),
        (Direction::Decrypt, sealed, opened),
    ] {
        lab.progress(&format!(
            "{scenario}: openssl enc {spec} {} file",
            direction_name(direction)
        ));
        let Some(_) = openssl::enc_file(spec, direction, from, to) else {
            lab.note(
                scenario,
                format!("openssl enc -{spec} failed: no end-to-end OpenSSL row for it"),
            )?;
            return Ok(());
        };
        let sampled = measure_repeated(&mut SystemClock::default(), repetition, &mut (), || {
            openssl::enc_file(spec, direction, from, to)
                .map(|_| None)
                .ok_or_else(|| BenchError::Unsupported("openssl enc failed".into()))
        })?;
        let mut record = BenchRecord::new(
            scenario,
            &spec.to_string(),
            direction_name(direction),
            "openssl",
            1,
            bytes as u64,
            Timing::File,
        )
        .with_figures(&sampled);
        let equal = direction == Direction::Encrypt
            && ours.is_some_and(|ours| std::fs::read(sealed).is_ok_and(|theirs| theirs == ours));
        record.note = Some(format!(
            "openssl enc -{spec} -nosalt{}",
            if direction == Direction::Encrypt {
                if equal {
                    ", ciphertext identical to parcrypt's"
                } else {
                    ", ciphertext differs from parcrypt's (key length or padding)"
                }
            } else {
                " -d"
            }
        ));
        lab.push(record)?;
    }
    Ok(())
}

/// The records of `scenario` matching `filter`, in run order.
pub fn select<'a>(
    report: &'a Report,
    scenario: &'a str,
    filter: impl Fn(&BenchRecord) -> bool + 'a,
) -> Vec<&'a BenchRecord> {
    report
        .scenario(scenario)
        .filter(|record| filter(record))
        .collect()
}

/// The last record of `scenario` matching `filter`.
pub fn find<'a>(
    report: &'a Report,
    scenario: &'a str,
    filter: impl Fn(&BenchRecord) -> bool,
) -> Option<&'a BenchRecord> {
    report
        .scenario(scenario)
        .filter(|record| filter(record))
        .last()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_expands_and_unknown_names_are_refused() {
        assert_eq!(parse_names(&["all".into()]).unwrap(), NAMES.to_vec());
        assert_eq!(
            parse_names(&["s2".into(), "S2".into(), "s0".into()]).unwrap(),
            vec!["s2", "s0"]
        );
        assert!(parse_names(&["s9".into()]).is_err());
    }
}
