//! S4: AES-128 at 1000 KB, the CPU's threads (the seed's OpenMP) against the GPU with the
//! data copied, pinned, or already resident (the bound zero-copy could reach), in time and
//! in energy (RAPL for the CPU packages, NVML for NVIDIA GPUs, when readable).

use std::time::Duration;

use parcrypt_engine::Backend;
use parcrypt_modes::{CipherSpec, Direction};

use crate::energy::Scope;
use crate::gpu::{time_cuda, Residence};
use crate::lab::Lab;
use crate::record::{BenchRecord, Report, Timing};
use crate::scenario::{engines, find, select};
use crate::seeds;
use crate::stats::Repetition;
use crate::summary::{backend_label, mbps, ms, or_dash, times, Summary, Table};
use crate::throughput::random_buffer;
use crate::verify::backends_agree;
use crate::BenchError;

pub const NAME: &str = "s4";
const CIPHER: &str = "aes-128-ecb";
/// The seed's 1000 KB.
pub const BYTES: usize = 1000 * 1024;

pub fn run(lab: &mut Lab) -> Result<(), BenchError> {
    let spec: CipherSpec = CIPHER.parse().expect("a valid cipher name");
    let level = lab.level();
    let threads = lab.threads();
    let cpu = engines(&lab.cpu_backends(&[Backend::Seq, Backend::Pool]), threads)?;
    let gpus = lab.gpus();
    let all: Vec<_> = cpu
        .iter()
        .chain(gpus.iter().map(|gpu| &gpu.engine))
        .collect();
    backends_agree(&[spec], &all)?;
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
    for engine in &cpu {
        let record = lab.measure_engine(
            NAME,
            spec,
            Direction::Encrypt,
            engine,
            &mut data,
            repetition,
            Some(Scope::Cpu),
        )?;
        lab.push(record)?;
    }
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
        match gpu.direct().ok().and_then(|device| device.cuda()) {
            Some(cuda) => {
                for (residence, transfer, variant, timing) in [
                    (Residence::Pinned, "pinned", "copy from pinned memory", Timing::EndToEnd),
                    (Residence::Device, "device", "no copy (data resident): the bound for zero-copy", Timing::EndToEnd),
                    (Residence::DeviceKernel, "device", "no copy, kernel only", Timing::KernelOnly),
                ] {
                    let mut record = BenchRecord::new(NAME, CIPHER, "encrypt", "cuda", threads, BYTES as u64, timing);
                    let repetition = lab.repetition(repetition);
                    let sampled = lab.with_energy(Scope::CpuAndGpu, &mut record, |probe| time_cuda(cuda, spec, Direction::Encrypt, BYTES, residence, repetition, probe))?;
                    let mut record = record.with_figures(&sampled);
                    record.transfer = Some(transfer.into());
                    record.variant = Some(variant.into());
                    record.device = Some(cuda.name());
                    lab.push(record)?;
                }
                lab.note(NAME, "cuda: zero-copy (mapped host memory) is not available in the CUDA host yet; the resident-data rows bound what it could gain")?;
            }
            None => lab.note(NAME, format!("{}: zero-copy not available on this backend (the OpenCL host copies through device buffers; mapped host buffers are not implemented yet)", gpu.backend))?,
        }
    }
    Ok(())
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
    let resident = records.iter().copied().find(|r| {
        r.backend == "cuda"
            && r.variant
                .as_deref()
                .is_some_and(|v| v.starts_with("no copy (data resident)"))
    });
    let copy = gpu_copy.iter().copied().find(|r| r.backend == "cuda");
    summary.compare(
        "zero-copy against copying",
        seeds::s4::ZERO_COPY_GAIN,
        match (resident, copy) {
            (Some(resident), Some(copy)) => format!("zero-copy not implemented; data already on the GPU is {} faster than copying it (the bound)", times(copy.median_s / resident.median_s)),
            _ if gpu_copy.is_empty() => no_gpu,
            _ => "zero-copy not available on this backend (see notes)".into(),
        },
    );
    summary
}
