//! S1: Blowfish and RC6 ECB encryption of growing random inputs, one CPU thread against the
//! GPU with copies counted (the seed counted device allocation too: here device buffers are
//! allocated on first use and kept, so the warm-up run pays for them), all cores and OpenSSL
//! beside them; the speedup curve.

use std::time::Duration;

use parcrypt_engine::tune::geometric;
use parcrypt_engine::Backend;
use parcrypt_modes::{CipherSpec, Direction};

use crate::lab::{Lab, Level};
use crate::record::Report;
use crate::scenario::s2::crossover;
use crate::scenario::{checked_engines, every_engine, select};
use crate::seeds;
use crate::stats::Repetition;
use crate::summary::{backend_label, mbps, or_dash, size, sizes_and_labels, times, Summary, Table};
use crate::throughput::random_buffer;
use crate::BenchError;

pub const NAME: &str = "s1";
const CIPHERS: [&str; 2] = ["bf-ecb", "rc6-128-ecb"];
const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

pub fn sizes(level: Level) -> Vec<usize> {
    level.pick(
        vec![64 * KIB, MIB, 4 * MIB],
        vec![64 * KIB, MIB, 16 * MIB, 64 * MIB],
        geometric(16 * KIB, 256 * MIB, 4),
    )
}

pub fn run(lab: &mut Lab) -> Result<(), BenchError> {
    let level = lab.level();
    let specs: Vec<CipherSpec> = CIPHERS
        .iter()
        .map(|name| name.parse().expect("a valid cipher name"))
        .collect();
    let (cpu, gpus) = checked_engines(lab, &[Backend::Seq, Backend::Pool], lab.threads(), &specs)?;
    let all = every_engine(&cpu, &gpus);
    lab.note(NAME, "RC6 has no OpenSSL twin; the Blowfish key is 32 bytes (256 bits) and OpenSSL's bf-ecb row uses the legacy provider")?;
    let repetition = Repetition::adaptive(
        3,
        level.pick(5, 10, 10),
        Duration::from_millis(level.pick(100, 250, 400)),
    );
    let sizes = sizes(level);
    for &spec in &specs {
        for &bytes in &sizes {
            let mut data = random_buffer(bytes, bytes as u64 ^ 0xb10f);
            if level != Level::Quick || bytes == *sizes.last().unwrap_or(&0) {
                lab.openssl_speed(NAME, spec, Direction::Encrypt, bytes, 1)?;
            }
            lab.push_engines(
                NAME,
                spec,
                Direction::Encrypt,
                &all,
                &mut data,
                repetition,
                None,
            )?;
            for gpu in &gpus {
                lab.push_cuda_kernel(
                    NAME,
                    &spec.to_string(),
                    gpu,
                    spec,
                    Direction::Encrypt,
                    bytes,
                    lab.threads(),
                    repetition,
                )?;
            }
        }
    }
    Ok(())
}

/// A cipher's best GPU speedup over one thread, and where.
struct Best {
    speedup: f64,
    label: String,
    bytes: u64,
}

pub fn summarize(report: &Report) -> Summary {
    let mut summary = Summary::new(
        report,
        NAME,
        "S1: Blowfish and RC6 ECB on growing random inputs, CPU against GPU",
    );
    let mut best: Vec<(String, Option<Best>)> = Vec::new();
    let mut seq_rates: Vec<(String, f64)> = Vec::new();
    for cipher in CIPHERS {
        let records = select(report, NAME, |record| record.cipher == cipher);
        if records.is_empty() {
            continue;
        }
        let (sizes, labels, gpu_labels) = sizes_and_labels(&records);
        let mut columns: Vec<String> = vec!["size".into()];
        columns.extend(labels.iter().map(|label| format!("{label} MB/s")));
        columns.extend(
            labels
                .iter()
                .filter(|label| *label != "seq" && *label != "openssl")
                .map(|label| format!("{label} / seq")),
        );
        let column_refs: Vec<&str> = columns.iter().map(String::as_str).collect();
        let mut table = Table::new(
            format!("{cipher} encryption, MB/s and speedup over one thread"),
            &column_refs,
        );
        let figure = |label: &str, bytes: u64| {
            records
                .iter()
                .copied()
                .find(|r| backend_label(r) == label && r.bytes == bytes)
        };
        let mut cipher_best: Option<Best> = None;
        for &bytes in &sizes {
            let seq = figure("seq", bytes);
            let mut row = vec![size(bytes)];
            row.extend(
                labels
                    .iter()
                    .map(|label| or_dash(figure(label, bytes).map(|r| mbps(r.mb_per_s)))),
            );
            for label in labels
                .iter()
                .filter(|label| *label != "seq" && *label != "openssl")
            {
                let speedup = figure(label, bytes)
                    .zip(seq)
                    .map(|(r, s)| s.median_s / r.median_s);
                if let Some(speedup) = speedup.filter(|_| gpu_labels.contains(label)) {
                    if cipher_best
                        .as_ref()
                        .is_none_or(|best| speedup > best.speedup)
                    {
                        cipher_best = Some(Best {
                            speedup,
                            label: label.clone(),
                            bytes,
                        });
                    }
                }
                row.push(or_dash(speedup.map(times)));
            }
            if let Some(seq) = seq {
                seq_rates.push((cipher.to_string(), seq.mb_per_s));
            }
            table.row(row);
        }
        for label in &gpu_labels {
            table.note(match crossover(&records, label, "seq") {
                Some(bytes) => format!("{label} beats seq from {}", size(bytes)),
                None => format!(
                    "{label} never beats seq up to {}",
                    size(*sizes.last().unwrap_or(&0))
                ),
            });
        }
        summary.tables.push(table);
        best.push((cipher.to_string(), cipher_best));
    }

    for (cipher, seed) in [
        ("bf-ecb", seeds::s1::BLOWFISH_BEST_SPEEDUP),
        ("rc6-128-ecb", seeds::s1::RC6_BEST_SPEEDUP),
    ] {
        let ours = match best.iter().find(|(name, _)| name == cipher) {
            Some((_, Some(best))) => format!(
                "{} {} at {}",
                best.label,
                times(best.speedup),
                size(best.bytes)
            ),
            Some((_, None)) => "no GPU backend here (see the run's GPU lines)".to_string(),
            None => "not measured".to_string(),
        };
        summary.compare(
            format!("{cipher}: best GPU speedup over one thread"),
            format!("up to {seed:.0}x ({})", seeds::s1::MACHINE),
            ours,
        );
    }
    let crossovers: Vec<String> = summary
        .tables
        .iter()
        .flat_map(|table| {
            table
                .notes
                .iter()
                .map(move |note| format!("{}: {note}", table.title.split(' ').next().unwrap_or("")))
        })
        .collect();
    if !crossovers.is_empty() {
        summary.compare(
            "where the CPU wins",
            "small files (PCIe copies and launch cost)",
            crossovers.join("; "),
        );
    }
    let mean_rate = |cipher: &str| {
        let rates: Vec<f64> = seq_rates
            .iter()
            .filter(|(name, _)| name == cipher)
            .map(|(_, rate)| *rate)
            .collect();
        (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / rates.len() as f64)
    };
    if let (Some(blowfish), Some(rc6)) = (mean_rate("bf-ecb"), mean_rate("rc6-128-ecb")) {
        summary.compare(
            "RC6 against Blowfish, one thread",
            "RC6 faster than Blowfish on CPU and GPU",
            format!(
                "RC6 {} MB/s, Blowfish {} MB/s (mean over sizes): RC6 {}",
                mbps(rc6),
                mbps(blowfish),
                if rc6 > blowfish { "faster" } else { "slower" }
            ),
        );
    }
    summary
}
