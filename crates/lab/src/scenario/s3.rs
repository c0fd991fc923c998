//! S3: AES-128/192/256 ECB encryption on each GPU device, work-items per group swept over
//! 64, 96, .., 384 (and 512, 768, 1024) for inputs from 64 B to 16 MiB; the best shape per
//! (key size, input size), and what it gains over the untuned default.
//!
//! Picking the fastest of many noisy figures flatters it (the winner's curse), so the gain
//! is not read off the sweep: the best shape and the default are measured again, in
//! alternating rounds, and the gain comes from the median round of each.

use std::time::Duration;

use parcrypt_engine::tune::geometric;
use parcrypt_gpu::LaunchGeometry;
use parcrypt_modes::{CipherSpec, Direction};

use crate::gpu::{time_cuda, time_host, time_opencl_kernel, DirectDevice, Residence};
use crate::lab::{Lab, Level};
use crate::record::{BenchRecord, Report, Timing};
use crate::scenario::select;
use crate::seeds;
use crate::stats::{Repetition, Sampled};
use crate::summary::{
    distinct, marked, mbps, or_dash, percent, size, within_noise, Summary, Table,
};
use crate::throughput::random_buffer;
use crate::verify::geometry_agrees;
use crate::BenchError;

pub const NAME: &str = "s3";
const CIPHERS: [&str; 3] = ["aes-128-ecb", "aes-192-ecb", "aes-256-ecb"];
/// Rounds of the confirmation (default, best, default, best, ...).
const CONFIRM_ROUNDS: usize = 3;
const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

pub fn sizes(level: Level) -> Vec<usize> {
    level.pick(
        vec![64, 16 * KIB, MIB],
        vec![64, KIB, 16 * KIB, 256 * KIB, 4 * MIB],
        geometric(64, 16 * MIB, 4),
    )
}

/// Work-items per group: the seed's 64..384 in warps of 32, then larger shapes.
pub fn shapes(level: Level) -> Vec<usize> {
    match level {
        Level::Quick => vec![64, 128, 256, 384],
        _ => (64..=384).step_by(32).chain([512, 768, 1024]).collect(),
    }
}

pub fn run(lab: &mut Lab) -> Result<(), BenchError> {
    let level = lab.level();
    let gpus = lab.gpus();
    if gpus.is_empty() {
        let reasons = lab
            .gpu_failures()
            .iter()
            .map(|line| crate::summary::backend_line(line))
            .collect::<Vec<_>>()
            .join("; ");
        lab.note(NAME, format!("no GPU backend, nothing to tune: {reasons}"))?;
        return Ok(());
    }
    lab.note(NAME, "gain = time saved by the best shape against the default shape (1 - t_best / t_default), from the median of three alternating confirmation rounds after the sweep; mean and peak over input sizes")?;
    let repetition = Repetition::adaptive(
        3,
        level.pick(5, 10, 15),
        Duration::from_millis(level.pick(40, 80, 150)),
    );
    for gpu in &gpus {
        let device = match gpu.direct() {
            Ok(device) => device,
            Err(reason) => {
                lab.note(
                    NAME,
                    format!(
                        "{}: could not open the device directly: {reason}",
                        gpu.backend
                    ),
                )?;
                continue;
            }
        };
        let untuned = device.untuned_geometry();
        let mut shapes = shapes(level);
        if !shapes.contains(&untuned.threads_per_group) {
            shapes.push(untuned.threads_per_group);
            shapes.sort_unstable();
        }
        let timing = Timing::KernelOnly;
        lab.note(
            NAME,
            format!(
                "{}: default shape {} work-items per group, {} blocks per work-item (kept while sweeping); figures are {}",
                gpu.backend,
                untuned.threads_per_group,
                untuned.blocks_per_thread,
                if device.cuda().is_some() { "kernel-only (CUDA events)" } else { "kernel-only (OpenCL profiling events, copies excluded; on a CPU device such as PoCL these are CPU times)" }
            ),
        )?;
        for cipher in CIPHERS {
            let spec: CipherSpec = cipher.parse().expect("a valid cipher name");
            for &threads_per_group in &shapes {
                geometry_agrees(
                    device,
                    spec,
                    Direction::Encrypt,
                    LaunchGeometry {
                        threads_per_group,
                        ..untuned
                    },
                )?;
            }
            for bytes in sizes(level) {
                let mut data = random_buffer(bytes, bytes as u64);
                let mut measured: Vec<(usize, f64)> = Vec::new();
                for &threads_per_group in &shapes {
                    let geometry = LaunchGeometry {
                        threads_per_group,
                        ..untuned
                    };
                    lab.progress(&format!(
                        "{NAME}: {cipher} {} on {} with {threads_per_group} per group",
                        size(bytes as u64),
                        gpu.backend
                    ));
                    let record = measure(
                        lab, device, spec, &mut data, geometry, timing, repetition, "sweep",
                    )?;
                    measured.push((threads_per_group, record.median_s));
                    lab.push(record)?;
                }
                let best = measured
                    .iter()
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .map_or(untuned.threads_per_group, |(shape, _)| *shape);
                // Confirmation: the default and the best measured afresh, alternately, so
                // that a burst of noise does not fall on one of them only.
                let tuned = LaunchGeometry {
                    threads_per_group: best,
                    ..untuned
                };
                for _ in 0..CONFIRM_ROUNDS {
                    for (geometry, variant) in
                        [(untuned, "confirm-untuned"), (tuned, "confirm-tuned")]
                    {
                        let record = measure(
                            lab, device, spec, &mut data, geometry, timing, repetition, variant,
                        )?;
                        lab.push(record)?;
                    }
                }
            }
        }
        device.set_launch_geometry(untuned)?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn measure(
    lab: &mut Lab,
    device: &DirectDevice,
    spec: CipherSpec,
    data: &mut [u8],
    geometry: LaunchGeometry,
    timing: Timing,
    repetition: Repetition,
    variant: &str,
) -> Result<BenchRecord, BenchError> {
    device.set_launch_geometry(geometry)?;
    let repetition = lab.repetition(repetition);
    let sampled: Sampled = match device.cuda() {
        Some(cuda) if timing == Timing::KernelOnly => time_cuda(
            cuda,
            spec,
            Direction::Encrypt,
            data.len(),
            Residence::DeviceKernel,
            repetition,
            &mut (),
        )?,
        None if timing == Timing::KernelOnly => match device.opencl() {
            Some(opencl) => {
                time_opencl_kernel(opencl, spec, Direction::Encrypt, data, repetition, &mut ())?
            }
            None => time_host(device, spec, Direction::Encrypt, data, repetition)?,
        },
        _ => time_host(device, spec, Direction::Encrypt, data, repetition)?,
    };
    let mut record = BenchRecord::new(
        NAME,
        &spec.to_string(),
        "encrypt",
        device.backend().name(),
        1,
        data.len() as u64,
        timing,
    )
    .with_figures(&sampled);
    record.threads_per_group = Some(geometry.threads_per_group);
    record.blocks_per_thread = Some(geometry.blocks_per_thread);
    record.device = Some(device.name());
    record.transfer = Some(
        if timing == Timing::KernelOnly && device.cuda().is_some() {
            "device"
        } else {
            "pageable"
        }
        .into(),
    );
    record.variant = Some(variant.into());
    Ok(record)
}

/// Per (backend, cipher, size): the best shape, its MB/s and the default's, and the gain,
/// from the confirmation records.
struct Tuned {
    bytes: u64,
    best_shape: usize,
    default_shape: usize,
    best_mbps: f64,
    default_mbps: f64,
    gain: f64,
    /// The two shapes' confirmation runs overlap: the gain is within the noise.
    noisy: bool,
}

fn tuned(records: &[&BenchRecord]) -> Vec<Tuned> {
    let mut sizes = distinct(records, |record| record.bytes);
    sizes.sort_unstable();
    sizes
        .into_iter()
        .filter_map(|bytes| {
            // The median over the confirmation rounds of each shape.
            let confirmed = |variant: &str| {
                let mut rounds: Vec<&BenchRecord> = records
                    .iter()
                    .copied()
                    .filter(|r| r.bytes == bytes && r.variant.as_deref() == Some(variant))
                    .collect();
                rounds.sort_by(|a, b| a.median_s.total_cmp(&b.median_s));
                rounds.get(rounds.len() / 2).copied()
            };
            let (tuned, untuned) = (confirmed("confirm-tuned")?, confirmed("confirm-untuned")?);
            Some(Tuned {
                bytes,
                best_shape: tuned.threads_per_group.unwrap_or(0),
                default_shape: untuned.threads_per_group.unwrap_or(0),
                best_mbps: tuned.mb_per_s,
                default_mbps: untuned.mb_per_s,
                gain: if tuned.threads_per_group == untuned.threads_per_group {
                    0.0
                } else {
                    1.0 - tuned.median_s / untuned.median_s
                },
                noisy: tuned.threads_per_group != untuned.threads_per_group
                    && within_noise(tuned, untuned),
            })
        })
        .collect()
}

pub fn summarize(report: &Report) -> Summary {
    let mut summary = Summary::new(report, NAME, "S3: AES-128/192/256 work-items per group, best shape per input size, and the gain of tuning");
    let records = select(report, NAME, |_| true);
    for backend in distinct(&records, |record| record.backend.clone()) {
        let mut gains_table = Table::new(
            format!("{backend}: gain of the tuned shape over the default, per key size"),
            &[
                "cipher",
                "mean gain vs default",
                "peak gain vs default",
                "peak at",
                "seed (mean / peak)",
            ],
        );
        for cipher in CIPHERS {
            let of_cipher: Vec<&BenchRecord> = records
                .iter()
                .copied()
                .filter(|r| r.backend == backend && r.cipher == cipher)
                .collect();
            let rows = tuned(&of_cipher);
            if rows.is_empty() {
                continue;
            }
            let mut table = Table::new(
                format!(
                    "{backend} {cipher}: best work-items per group by input size ({})",
                    of_cipher[0].timing.label()
                ),
                &[
                    "size",
                    "best shape",
                    "best MB/s",
                    "default shape",
                    "default MB/s",
                    "gain vs default",
                ],
            );
            for row in &rows {
                table.row(vec![
                    size(row.bytes),
                    row.best_shape.to_string(),
                    mbps(row.best_mbps),
                    row.default_shape.to_string(),
                    mbps(row.default_mbps),
                    marked(percent(row.gain), row.noisy),
                ]);
            }
            if rows.iter().any(|row| row.noisy) {
                table.note("~ before a gain: the best shape's timed runs overlap the default shape's (fastest to slowest), so the gain is within the run-to-run noise");
            }
            summary.tables.push(table);
            let mean = rows.iter().map(|row| row.gain).sum::<f64>() / rows.len() as f64;
            let peak = rows.iter().max_by(|a, b| a.gain.total_cmp(&b.gain));
            let key_bits = of_cipher[0].key_bits;
            gains_table.row(vec![
                cipher.into(),
                percent(mean),
                or_dash(peak.map(|row| percent(row.gain))),
                or_dash(peak.map(|row| size(row.bytes))),
                seeds::s3::gains_line(key_bits),
            ]);
            summary.compare(
                format!("AES-{key_bits}: gain of tuning, mean / peak"),
                seeds::s3::gains_line(key_bits),
                format!(
                    "{backend}: {} / {}",
                    percent(mean),
                    or_dash(peak.map(|row| format!(
                        "{} at {}",
                        percent(row.gain),
                        size(row.bytes)
                    )))
                ),
            );
        }
        summary.tables.insert(0, gains_table);
    }
    if records.is_empty() {
        for cipher_bits in [128, 192, 256] {
            summary.compare(
                format!("AES-{cipher_bits}: gain of tuning, mean / peak"),
                seeds::s3::gains_line(cipher_bits),
                "no GPU backend here (see the run's GPU lines)",
            );
        }
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_shapes_are_warps_from_64_to_384() {
        let shapes = shapes(Level::Full);
        assert_eq!(
            &shapes[..11],
            &[64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384]
        );
        assert_eq!(&shapes[11..], &[512, 768, 1024]);
    }

    #[test]
    fn gains_come_from_the_confirmation_and_are_zero_when_the_default_wins() {
        let make = |bytes: u64, shape: usize, seconds: f64, variant: &str| {
            let mut record = BenchRecord::new(
                NAME,
                "aes-128-ecb",
                "encrypt",
                "opencl",
                1,
                bytes,
                Timing::EndToEnd,
            );
            record.threads_per_group = Some(shape);
            record.median_s = seconds;
            record.variant = Some(variant.into());
            record
        };
        let records = [
            make(64, 128, 0.5, "sweep"),
            make(64, 64, 1.0, "confirm-untuned"),
            make(64, 128, 0.6, "confirm-tuned"),
            make(128, 64, 1.0, "confirm-untuned"),
            make(128, 64, 0.9, "confirm-tuned"),
            // Three rounds at 256 B: the median round of each shape counts, not a burst.
            make(256, 64, 1.0, "confirm-untuned"),
            make(256, 128, 0.5, "confirm-tuned"),
            make(256, 64, 9.0, "confirm-untuned"),
            make(256, 128, 9.0, "confirm-tuned"),
            make(256, 64, 1.2, "confirm-untuned"),
            make(256, 128, 0.6, "confirm-tuned"),
        ];
        let references: Vec<&BenchRecord> = records.iter().collect();
        let rows = tuned(&references);
        assert_eq!(rows.len(), 3);
        assert!((rows[2].gain - 0.5).abs() < 1e-12, "{}", rows[2].gain);
        assert!((rows[0].gain - 0.4).abs() < 1e-12);
        assert_eq!(rows[0].best_shape, 128);
        assert_eq!(rows[1].gain, 0.0);
    }
}
