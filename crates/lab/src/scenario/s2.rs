//! S2: AES-128 ECB from 1 KiB to 1 GiB (the seed's seven sizes), encryption and
//! decryption, one thread against the GPU end to end (copies counted, device synchronised),
//! with all cores and OpenSSL beside them; MB/s, speedup, and the size where the GPU starts
//! to win.

use std::time::Duration;

use parcrypt_engine::Backend;
use parcrypt_modes::{CipherSpec, Direction};

use crate::gpu::time_opencl_kernel;
use crate::lab::{direction_name, Lab, Level};
use crate::record::{BenchRecord, Report, Timing};
use crate::scenario::{checked_engines, every_engine, select};
use crate::seeds;
use crate::stats::Repetition;
use crate::summary::{
    backend_label, distinct, mbps, ms, or_dash, size, sizes_and_labels, times, Summary, Table,
};
use crate::throughput::random_buffer;
use crate::BenchError;

pub const NAME: &str = "s2";
const CIPHER: &str = "aes-128-ecb";
const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// The seed's sizes (1 KB .. 1 GB, here in binary units so that every size is whole
/// blocks).
const SEED_SIZES: [usize; 7] = [
    KIB,
    100 * KIB,
    MIB,
    10 * MIB,
    100 * MIB,
    500 * MIB,
    1024 * MIB,
];

/// The seed's sizes; shorter levels stop earlier.
pub fn sizes(level: Level) -> Vec<usize> {
    SEED_SIZES[..level.pick(4, 5, 7)].to_vec()
}

/// The seed's index for one of our sizes.
fn seed_index(bytes: u64) -> Option<usize> {
    SEED_SIZES.iter().position(|&size| size as u64 == bytes)
}

pub fn run(lab: &mut Lab) -> Result<(), BenchError> {
    let spec: CipherSpec = CIPHER.parse().expect("a valid cipher name");
    let level = lab.level();
    let (cpu, gpus) = checked_engines(lab, &[Backend::Seq, Backend::Pool], lab.threads(), &[spec])?;
    let all = every_engine(&cpu, &gpus);
    // The seed ran on HIP: say in one line why it is not measured here.
    if !gpus.iter().any(|gpu| gpu.backend == Backend::Hip) {
        if let Some(reason) = lab
            .gpu_failures()
            .iter()
            .find(|line| line.starts_with("hip "))
        {
            let line = crate::summary::backend_line(reason);
            lab.note(NAME, format!("{line}: the seed's HIP GPU is not measured"))?;
        }
    }
    if gpus.iter().any(|gpu| gpu.backend == Backend::Opencl) {
        lab.note(NAME, "opencl: kernel-only figures from OpenCL profiling events (data passes through host memory, copies excluded; on a CPU device such as PoCL these are CPU times)")?;
    }
    let repetition = Repetition::adaptive(
        3,
        level.pick(5, 10, 10),
        Duration::from_millis(level.pick(100, 300, 500)),
    );
    for bytes in sizes(level) {
        let mut data = random_buffer(bytes, bytes as u64);
        for direction in [Direction::Encrypt, Direction::Decrypt] {
            if level != Level::Quick || bytes == MIB {
                lab.openssl_speed(NAME, spec, direction, bytes, 1)?;
            }
            lab.push_engines(NAME, spec, direction, &all, &mut data, repetition, None)?;
            for gpu in &gpus {
                if let Some(opencl) = gpu.direct().ok().and_then(|device| device.opencl()) {
                    let sampled = time_opencl_kernel(
                        opencl,
                        spec,
                        direction,
                        &mut data,
                        lab.repetition(repetition),
                        &mut (),
                    )?;
                    let mut record = BenchRecord::new(
                        NAME,
                        CIPHER,
                        direction_name(direction),
                        "opencl",
                        lab.threads(),
                        bytes as u64,
                        Timing::KernelOnly,
                    )
                    .with_figures(&sampled);
                    record.transfer = Some("pageable".into());
                    record.device = Some(opencl.name());
                    lab.push(record)?;
                }
                lab.push_cuda_kernel(
                    NAME,
                    CIPHER,
                    gpu,
                    spec,
                    direction,
                    bytes,
                    lab.threads(),
                    repetition,
                )?;
            }
        }
    }
    Ok(())
}

/// The smallest size from which `label` is faster than `baseline` at every larger size
/// measured, or `None` when it never is.
pub fn crossover(records: &[&BenchRecord], label: &str, baseline: &str) -> Option<u64> {
    let mut sizes: Vec<u64> = distinct(records, |record| record.bytes);
    sizes.sort_unstable();
    let time = |label: &str, bytes: u64| {
        records
            .iter()
            .find(|record| backend_label(record) == label && record.bytes == bytes)
            .map(|record| record.median_s)
    };
    let mut from = None;
    for &bytes in sizes.iter().rev() {
        match (time(label, bytes), time(baseline, bytes)) {
            (Some(ours), Some(theirs)) if ours < theirs => from = Some(bytes),
            (Some(_), Some(_)) => break,
            _ => {}
        }
    }
    from
}

pub fn summarize(report: &Report) -> Summary {
    let mut summary = Summary::new(
        report,
        NAME,
        "S2: AES-128 ECB from 1 KiB to 1 GiB, one thread against the GPU, end to end",
    );
    for direction in ["encrypt", "decrypt"] {
        let records = select(report, NAME, |record| record.direction == direction);
        if records.is_empty() {
            continue;
        }
        let (sizes, labels, gpu_labels) = sizes_and_labels(&records);
        let cpu_labels: Vec<String> = labels
            .iter()
            .filter(|label| !gpu_labels.contains(label) && *label != "seq")
            .cloned()
            .collect();
        let mut columns = vec!["size".to_string(), "seq ms".into(), "seq MB/s".into()];
        for label in &cpu_labels {
            columns.push(format!("{label} MB/s"));
        }
        for label in &gpu_labels {
            columns.extend([
                format!("{label} ms"),
                format!("{label} MB/s"),
                format!("{label} / seq"),
            ]);
        }
        if direction == "encrypt" {
            columns.extend(["seed GPU MB/s".into(), "seed GPU / CPU".into()]);
        }
        let column_refs: Vec<&str> = columns.iter().map(String::as_str).collect();
        let title = format!("AES-128-ECB {direction}ion: time per job (median) and MB/s");
        let mut table = Table::new(title, &column_refs);
        let figure = |label: &str, bytes: u64| {
            records
                .iter()
                .copied()
                .find(|record| backend_label(record) == label && record.bytes == bytes)
        };
        for &bytes in &sizes {
            let seq = figure("seq", bytes);
            let mut row = vec![
                size(bytes),
                or_dash(seq.map(|r| ms(r.median_s))),
                or_dash(seq.map(|r| mbps(r.mb_per_s))),
            ];
            for label in &cpu_labels {
                row.push(or_dash(figure(label, bytes).map(|r| mbps(r.mb_per_s))));
            }
            for label in &gpu_labels {
                let gpu = figure(label, bytes);
                row.push(or_dash(gpu.map(|r| ms(r.median_s))));
                row.push(or_dash(gpu.map(|r| mbps(r.mb_per_s))));
                row.push(or_dash(
                    gpu.zip(seq).map(|(g, s)| times(s.median_s / g.median_s)),
                ));
            }
            if direction == "encrypt" {
                let index = seed_index(bytes);
                row.push(or_dash(
                    index.map(|i| seeds::s2::ENCRYPT_GPU_MBPS[i].to_string()),
                ));
                row.push(or_dash(
                    index.map(|i| seeds::s2::ENCRYPT_SPEEDUP[i].to_string()),
                ));
            }
            table.row(row);
        }
        for label in &gpu_labels {
            let against = |baseline: &str| match crossover(&records, label, baseline) {
                Some(bytes) => format!("{label} beats {baseline} from {} on", size(bytes)),
                None => format!(
                    "{label} never beats {baseline} up to {}",
                    size(*sizes.last().unwrap_or(&0))
                ),
            };
            let pool = cpu_labels
                .iter()
                .find(|label| label.starts_with("pool"))
                .cloned();
            table.note(format!(
                "{}{}",
                against("seq"),
                pool.map(|pool| format!("; {}", against(&pool)))
                    .unwrap_or_default()
            ));
        }
        table.note("openssl: `openssl speed -evp` at the same size, its key set up once; ours set the key up in every job");
        summary.tables.push(table);

        // The seed's headline figures for this direction.
        let seq_rates: Vec<f64> = records
            .iter()
            .filter(|r| r.backend == "seq")
            .map(|r| r.mb_per_s)
            .collect();
        let largest = sizes.last().copied().unwrap_or(0);
        let seq_line = if seq_rates.is_empty() {
            "not measured".to_string()
        } else {
            let low = seq_rates.iter().cloned().fold(f64::INFINITY, f64::min);
            let high = seq_rates.iter().cloned().fold(0.0, f64::max);
            let openssl = figure("openssl", MIB as u64)
                .map(|r| format!("; OpenSSL {} MB/s at 1 MiB", mbps(r.mb_per_s)))
                .unwrap_or_default();
            format!(
                "seq {}-{} MB/s from 1 KiB to {}{openssl}",
                mbps(low),
                mbps(high),
                size(largest)
            )
        };
        let (seed_cpu, seed_gpu, seed_speedup) = if direction == "encrypt" {
            (
                format!(
                    "{:.0}-{:.0} MB/s (serial C++, {})",
                    seeds::s2::ENCRYPT_CPU_MBPS.0,
                    seeds::s2::ENCRYPT_CPU_MBPS.1,
                    seeds::s2::MACHINE
                ),
                "2,580 MB/s at 1 GB".to_string(),
                "39.7x at 1 GB".to_string(),
            )
        } else {
            (
                format!(
                    "{:.0}-{:.0} MB/s (serial C++)",
                    seeds::s2::DECRYPT_CPU_MBPS.0,
                    seeds::s2::DECRYPT_CPU_MBPS.1
                ),
                format!("{:.0} MB/s at 1 GB", seeds::s2::DECRYPT_GPU_MBPS_1GB),
                format!(
                    "{:.0}-{:.0}x at 1 GB",
                    seeds::s2::DECRYPT_BEST_SPEEDUP.0,
                    seeds::s2::DECRYPT_BEST_SPEEDUP.1
                ),
            )
        };
        summary.compare(format!("CPU, one thread, {direction}"), seed_cpu, seq_line);
        let gpu_at_largest: Vec<String> = gpu_labels
            .iter()
            .filter_map(|label| {
                figure(label, largest).map(|r| format!("{label} {} MB/s", mbps(r.mb_per_s)))
            })
            .collect();
        // Every GPU figure is quoted at the largest size, or says why there is none.
        let no_gpu = "no GPU backend here (see the run's GPU lines)";
        let at_largest = |parts: Vec<String>| {
            if parts.is_empty() {
                no_gpu.to_string()
            } else {
                format!("{} at {}", parts.join(", "), size(largest))
            }
        };
        summary.compare(
            format!("GPU MB/s at the largest size, {direction}"),
            seed_gpu,
            at_largest(gpu_at_largest),
        );
        let speedups: Vec<String> = gpu_labels
            .iter()
            .filter_map(|label| {
                figure(label, largest)
                    .zip(figure("seq", largest))
                    .map(|(g, s)| format!("{label} {}", times(s.median_s / g.median_s)))
            })
            .collect();
        summary.compare(
            format!("GPU over one CPU thread, {direction}"),
            seed_speedup,
            at_largest(speedups),
        );
        if direction == "encrypt" {
            let crossovers: Vec<String> = gpu_labels
                .iter()
                .map(|label| match crossover(&records, label, "seq") {
                    Some(bytes) => format!("{label}: from {}", size(bytes)),
                    None => format!("{label}: never up to {}", size(largest)),
                })
                .collect();
            summary.compare(
                "crossover: the GPU starts to win",
                seeds::s2::CROSSOVER,
                if crossovers.is_empty() {
                    no_gpu.to_string()
                } else {
                    crossovers.join("; ")
                },
            );
        }
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(backend: &str, bytes: u64, seconds: f64) -> BenchRecord {
        let mut record =
            BenchRecord::new(NAME, CIPHER, "encrypt", backend, 1, bytes, Timing::EndToEnd);
        record.median_s = seconds;
        record
    }

    #[test]
    fn crossover_is_where_the_gpu_wins_from_then_on() {
        let records = [
            record("seq", 1, 1.0),
            record("opencl", 1, 2.0),
            record("seq", 2, 1.0),
            record("opencl", 2, 0.5), // wins once, loses again at 3
            record("seq", 3, 1.0),
            record("opencl", 3, 1.5),
            record("seq", 4, 1.0),
            record("opencl", 4, 0.9),
            record("seq", 5, 1.0),
            record("opencl", 5, 0.2),
        ];
        let references: Vec<&BenchRecord> = records.iter().collect();
        assert_eq!(crossover(&references, "opencl", "seq"), Some(4));
        assert_eq!(crossover(&references, "seq", "opencl"), None);
    }
}
