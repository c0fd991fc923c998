//! S4: AES-128 at 1000 KB, the CPU's threads (the seed's OpenMP) against the GPU with the
//! data copied or zero-copy (mapped host memory the kernel reads and writes, as the seed's
//! embedded GPU used it), and on CUDA pinned or already resident, in time and in energy
//! (RAPL for the CPU packages, NVML for NVIDIA GPUs, when readable).

use std::time::Duration;

use parcrypt_engine::Backend;
use parcrypt_modes::{CipherSpec, Direction};

use crate::energy::Scope;
use crate::gpu::{time_cuda, time_host_transfer, DirectDevice, HostTransfer, Residence};
use crate::lab::Lab;
use crate::record::{BenchRecord, Report, Timing};
use crate::scenario::{checked_engines, every_engine, find, select};
use crate::seeds;
use crate::stats::{Probe, Repetition, Sampled};
use crate::summary::{backend_label, mbps, ms, or_dash, times, Summary, Table};
use crate::throughput::random_buffer;
use crate::BenchError;

pub const NAME: &str = "s4";
const CIPHER: &str = "aes-128-ecb";
/// The seed's 1000 KB.
pub const BYTES: usize = 1000 * 1024;

/// The `variant` of the rows the zero-copy comparison reads.
pub const DIRECT_COPY: &str = "copy, device called directly";
pub const ZERO_COPY_STAGED: &str = "zero-copy: copied into mapped memory and back";
pub const ZERO_COPY_MAPPED: &str = "zero-copy: data in mapped memory";
pub const ZERO_COPY_KERNEL: &str = "zero-copy: data in mapped memory, kernel only";

pub fn run(lab: &mut Lab) -> Result<(), BenchError> {
    let spec: CipherSpec = CIPHER.parse().expect("a valid cipher name");
    let level = lab.level();
    let threads = lab.threads();
    let (cpu, gpus) = checked_engines(lab, &[Backend::Seq, Backend::Pool], threads, &[spec])?;
    for reason in lab.energy_unavailable() {
        lab.note(NAME, format!("{reason}: no joules in this table"))?;
    }
    // Long enough for the energy counters (RAPL ticks every millisecond or so, NVML slower).
    let repetition = Repetition::adaptive(
        5,
        100_000,
        Duration::from_millis(level.pick(300, 1000, 2000)),
    );
    let mut data = random_buffer(BYTES, 4);
    lab.openssl_speed(NAME, spec, Direction::Encrypt, BYTES, 1)?;
    lab.push_engines(
        NAME,
        spec,
        Direction::Encrypt,
        &every_engine(&cpu, &[]),
        &mut data,
        repetition,
        Some(Scope::Cpu),
    )?;
    for gpu in &gpus {
        let mut record = lab.measure_engine(
            NAME,
            spec,
            Direction::Encrypt,
            &gpu.engine,
            &mut data,
            repetition,
            Some(Scope::CpuAndGpu),
        )?;
        record.variant = Some("copy".into());
        lab.push(record)?;
        let device = match gpu.direct() {
            Ok(device) => device,
            Err(error) => {
                lab.note(
                    NAME,
                    format!("{}: zero-copy not measured: {error}", gpu.backend),
                )?;
                continue;
            }
        };
        if !device.maps_host_memory() {
            lab.note(
                NAME,
                format!(
                    "{}: zero-copy not measured: its adapter maps no host memory",
                    gpu.backend
                ),
            )?;
            continue;
        }
        measure_zero_copy(lab, device, spec, repetition)?;
        if let Some(cuda) = device.cuda() {
            for (residence, transfer, variant, timing) in [
                (
                    Residence::Pinned,
                    "pinned",
                    "copy from pinned memory",
                    Timing::EndToEnd,
                ),
                (
                    Residence::Device,
                    "device",
                    "no copy (data resident)",
                    Timing::EndToEnd,
                ),
                (
                    Residence::DeviceKernel,
                    "device",
                    "no copy, kernel only",
                    Timing::KernelOnly,
                ),
            ] {
                push_gpu_figure(
                    lab,
                    ("cuda", cuda.name()),
                    Way {
                        transfer,
                        variant,
                        timing,
                    },
                    repetition,
                    |repetition, probe| {
                        time_cuda(
                            cuda,
                            spec,
                            Direction::Encrypt,
                            BYTES,
                            residence,
                            repetition,
                            probe,
                        )
                    },
                )?;
            }
        }
    }
    Ok(())
}

/// The device called directly with the key prepared once: copying through device buffers
/// against zero-copy, both through mapped memory with the host's copies in and out and
/// with the data living in mapped memory, the last also kernel only.
fn measure_zero_copy(
    lab: &mut Lab,
    device: &DirectDevice,
    spec: CipherSpec,
    repetition: Repetition,
) -> Result<(), BenchError> {
    let backend = device.backend();
    let unified = device.host_unified_memory();
    let query = match device {
        DirectDevice::OpenCl(_) => "CL_DEVICE_HOST_UNIFIED_MEMORY",
        DirectDevice::Cuda(_) => "CU_DEVICE_ATTRIBUTE_INTEGRATED",
        DirectDevice::Hip(_) => "hipDeviceAttributeIntegrated",
    };
    lab.note(
        NAME,
        format!(
            "{backend}: {} says it {} the host's memory ({query}): zero-copy {}",
            device.name(),
            if unified { "shares" } else { "does not share" },
            if unified {
                "can save the copies outright"
            } else {
                "saves no transfer there, the kernel reads and writes host memory over the bus"
            }
        ),
    )?;
    for (transfer, label, variant, timing) in [
        (
            HostTransfer::Copy,
            "pageable",
            DIRECT_COPY,
            Timing::EndToEnd,
        ),
        (
            HostTransfer::ZeroCopyStaged,
            "zero_copy",
            ZERO_COPY_STAGED,
            Timing::EndToEnd,
        ),
        (
            HostTransfer::ZeroCopyMapped,
            "zero_copy",
            ZERO_COPY_MAPPED,
            Timing::EndToEnd,
        ),
        (
            HostTransfer::ZeroCopyMappedKernel,
            "zero_copy",
            ZERO_COPY_KERNEL,
            Timing::KernelOnly,
        ),
    ] {
        lab.progress(&format!(
            "{NAME}: {spec} encrypt 1000 KB on {backend}, {variant}"
        ));
        push_gpu_figure(
            lab,
            (backend.name(), device.name()),
            Way {
                transfer: label,
                variant,
                timing,
            },
            repetition,
            |repetition, probe| {
                time_host_transfer(
                    device,
                    spec,
                    Direction::Encrypt,
                    BYTES,
                    transfer,
                    repetition,
                    probe,
                )
            },
        )?;
    }
    Ok(())
}

/// How a GPU figure moved its data, as its record labels it.
struct Way<'a> {
    transfer: &'a str,
    variant: &'a str,
    timing: Timing,
}

/// Times `measure` with the energy of the CPU and the GPU and records it as this scenario's
/// encryption on `device` (its backend's name and its own), labelled by `way`.
fn push_gpu_figure(
    lab: &mut Lab,
    (backend, device): (&str, String),
    way: Way,
    repetition: Repetition,
    measure: impl FnOnce(Repetition, &mut dyn Probe) -> Result<Sampled, BenchError>,
) -> Result<(), BenchError> {
    let mut record = BenchRecord::new(
        NAME,
        CIPHER,
        "encrypt",
        backend,
        lab.threads(),
        BYTES as u64,
        way.timing,
    );
    let repetition = lab.repetition(repetition);
    let sampled = lab.with_energy(Scope::CpuAndGpu, &mut record, |probe| {
        measure(repetition, probe)
    })?;
    let mut record = record.with_figures(&sampled);
    record.transfer = Some(way.transfer.into());
    record.variant = Some(way.variant.into());
    record.device = Some(device);
    lab.push(record)
}

pub fn summarize(report: &Report) -> Summary {
    let mut summary = Summary::new(report, NAME, "S4: AES-128 at 1000 KB, CPU threads against the GPU, copy against no copy, time and energy");
    let records = select(report, NAME, |_| true);
    let pool = find(report, NAME, |r| r.backend == "pool");
    let mut table = Table::new(
        "AES-128-ECB encryption of 1000 KB (1,024,000 bytes)",
        &[
            "backend",
            "data",
            "ms",
            "MB/s",
            "joules",
            "time vs pool",
            "energy vs pool",
        ],
    );
    for record in &records {
        let data = match (record.backend.as_str(), record.transfer.as_deref()) {
            ("openssl", _) => "host memory (openssl speed)".to_string(),
            (_, Some(_)) => record.variant.clone().unwrap_or_else(|| "copy".into()),
            _ => "host memory".to_string(),
        };
        let energy_ratio = record
            .energy_j
            .zip(pool.and_then(|p| p.energy_j))
            .map(|(ours, pool)| times(ours / pool));
        table.row(vec![
            backend_label(record),
            data,
            ms(record.median_s),
            mbps(record.mb_per_s),
            or_dash(record.energy_j.map(|joules| format!("{joules:.4}"))),
            or_dash(pool.map(|pool| times(record.median_s / pool.median_s))),
            or_dash(energy_ratio),
        ]);
    }
    table.note("ratios below 1x mean less time or energy than pool (the seed's OpenMP)");
    summary.tables.push(table);

    let gpu_copy = records
        .iter()
        .copied()
        .filter(|r| {
            (r.backend == "opencl" || r.backend == "cuda") && r.variant.as_deref() == Some("copy")
        })
        .collect::<Vec<_>>();
    let fraction = |value: f64| {
        if value > 0.0 && value < 1.0 {
            format!("1/{:.1} of", 1.0 / value)
        } else {
            times(value)
        }
    };
    let time_line: Vec<String> = gpu_copy
        .iter()
        .filter_map(|gpu| {
            pool.map(|pool| {
                format!(
                    "{} takes {} pool's time",
                    gpu.backend,
                    fraction(gpu.median_s / pool.median_s)
                )
            })
        })
        .collect();
    let no_gpu = "no GPU backend here (see the run's GPU lines)".to_string();
    summary.compare(
        "GPU response time against OpenMP at 1000 KB",
        format!(
            "about 1/{:.0} ({})",
            1.0 / seeds::s4::TIME_FRACTION,
            seeds::s4::MACHINE
        ),
        if time_line.is_empty() {
            no_gpu.clone()
        } else {
            time_line.join("; ")
        },
    );
    let energy_line: Vec<String> = gpu_copy
        .iter()
        .filter_map(|gpu| {
            gpu.energy_j
                .zip(pool.and_then(|p| p.energy_j))
                .map(|(g, p)| format!("{} uses {} pool's energy", gpu.backend, fraction(g / p)))
        })
        .collect();
    let meters_missing: Vec<String> = report
        .notes_of(NAME)
        .filter(|note| note.text.contains("energy meter unavailable"))
        .map(|note| note.text.clone())
        .collect();
    summary.compare(
        "GPU energy against OpenMP at 1000 KB",
        format!("about 1/{:.0}", 1.0 / seeds::s4::ENERGY_FRACTION),
        if !energy_line.is_empty() {
            energy_line.join("; ")
        } else if !meters_missing.is_empty() {
            format!(
                "not measured: {}",
                meters_missing
                    .join("; ")
                    .replace(": no joules in this table", "")
            )
        } else if gpu_copy.is_empty() {
            no_gpu.clone()
        } else {
            "not measured".into()
        },
    );
    summary.compare(
        "zero-copy against copying",
        seeds::s4::ZERO_COPY_GAIN,
        zero_copy_line(&records).unwrap_or_else(|| {
            if gpu_copy.is_empty() {
                no_gpu
            } else {
                "zero-copy not available on this backend (see notes)".into()
            }
        }),
    );
    summary
}

/// Ours, per GPU backend with zero-copy rows: the performance gain of each zero-copy way
/// over copying (the device called directly in both), as the seed states its gain.
fn zero_copy_line(records: &[&BenchRecord]) -> Option<String> {
    let variant = |backend: &str, name: &str| {
        records
            .iter()
            .copied()
            .find(|r| r.backend == backend && r.variant.as_deref() == Some(name))
    };
    // Performance is the inverse of time: +100 % is half the time.
    let gain = |copy: &BenchRecord, other: &BenchRecord| {
        let value = ((copy.median_s / other.median_s - 1.0) * 100.0).round();
        match value {
            v if v > 0.0 => format!("+{v:.0} %"),
            v if v < 0.0 => format!("{v:.0} %"),
            _ => "0 %".to_string(),
        }
    };
    let mut lines = Vec::new();
    for backend in ["opencl", "cuda"] {
        let (Some(copy), Some(mapped)) = (
            variant(backend, DIRECT_COPY),
            variant(backend, ZERO_COPY_MAPPED),
        ) else {
            continue;
        };
        let mut line = format!(
            "{backend}: data in mapped memory {} ({} ms against {} ms copying)",
            gain(copy, mapped),
            ms(mapped.median_s),
            ms(copy.median_s)
        );
        if let Some(staged) = variant(backend, ZERO_COPY_STAGED) {
            line.push_str(&format!(
                ", copied through mapped memory {}",
                gain(copy, staged)
            ));
        }
        if let Some(kernel) = variant(backend, ZERO_COPY_KERNEL) {
            line.push_str(&format!(", kernel alone {} ms", ms(kernel.median_s)));
        }
        lines.push(line);
    }
    (!lines.is_empty()).then(|| lines.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{RunInfo, Timing};

    fn row(backend: &str, variant: &str, median_s: f64) -> BenchRecord {
        let mut record = BenchRecord::new(
            NAME,
            CIPHER,
            "encrypt",
            backend,
            2,
            BYTES as u64,
            Timing::EndToEnd,
        );
        record.median_s = median_s;
        record.transfer = Some("zero_copy".into());
        record.variant = Some(variant.into());
        record
    }

    #[test]
    fn zero_copy_gains_are_stated_as_the_seed_states_them() {
        let mut report = Report::new(RunInfo {
            parcrypt_version: "0.1.0".into(),
            revision: None,
            started_unix: 0,
            command: "parcrypt bench --scenario s4".into(),
            level: "quick".into(),
            scenarios: vec![NAME.into()],
            host: "test".into(),
            cpu: "test".into(),
            cpu_features: String::new(),
            clock_hz: None,
            threads: 2,
            memory_bytes: 0,
            os: "Linux".into(),
            openssl: None,
            gpus: Vec::new(),
        });
        report.records = vec![
            row("opencl", "copy", 3e-3),
            row("opencl", DIRECT_COPY, 2e-3),
            row("opencl", ZERO_COPY_STAGED, 2.5e-3),
            row("opencl", ZERO_COPY_MAPPED, 1e-3),
            row("opencl", ZERO_COPY_KERNEL, 0.5e-3),
        ];
        let summary = summarize(&report);
        let line = summary
            .comparisons
            .iter()
            .find(|c| c.what == "zero-copy against copying")
            .unwrap();
        assert_eq!(line.seed, seeds::s4::ZERO_COPY_GAIN);
        assert_eq!(
            line.ours,
            "opencl: data in mapped memory +100 % (1.00 ms against 2.00 ms copying), copied \
             through mapped memory -20 %, kernel alone 0.500 ms"
        );
        assert!(zero_copy_line(&[]).is_none());
    }
}
