//! `parcrypt tune`: measures, on one GPU, the launch shape that runs each kernel fastest at
//! each input size, then where the GPU starts to beat the CPU, and returns it all as a
//! [`TuneTable`] for the engine to use (a launch-shape sweep per input size, automated and
//! stored per device).
//!
//! Phase 1 (shapes): for every cipher, kernel operation and size, every candidate shape
//! (threads per group x blocks per thread, plus the device's untuned default) is timed by
//! the device's own timers, kernels only, median of several runs after a warm-up run.
//! Shapes that give the same launch (same group size and group count) are timed once. The
//! winner is then confirmed against the untuned shape in three alternating rounds, and kept
//! only if the time it saves (median against median) exceeds the untuned shape's own
//! run-to-run spread in those rounds ([`parcrypt_gpu::tuning::decide_shape`]).
//!
//! Phase 2 (crossover): with the tuned shapes installed, whole jobs are timed end to end,
//! copies included, on the GPU engine and on the CPU (`auto` without a GPU: one thread or
//! the pool, whichever it picks), at growing sizes. The crossover is the smallest size from
//! which the GPU won at every larger size measured.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parcrypt_ciphers::Algorithm;
use parcrypt_gpu::kernel_source::KernelOperation;
use parcrypt_gpu::tuning::{decide_shape, operation_name, Crossover, CrossoverPoint, TunedShape};
use parcrypt_gpu::{DeviceKind, GpuDevice, GpuOperation, KeyMaterial, LaunchGeometry, TuneTable};
use parcrypt_modes::ctr::CounterRule;
use parcrypt_modes::{CipherSpec, Direction, Mode};

use crate::cost::TimedJob;
use crate::crypter::{Crypter, JobError};
use crate::Engine;

/// Alternating rounds that confirm a sweep's winner against the untuned shape.
const CONFIRMATION_ROUNDS: usize = 3;

/// What to measure. [`TuneOptions::standard`] chooses per kind of device.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneOptions {
    /// The ciphers whose kernels are swept.
    pub algorithms: Vec<Algorithm>,
    /// The kernel operations swept for each cipher.
    pub operations: Vec<KernelOperation>,
    /// Input sizes in bytes (multiples of 16) for the shape sweep.
    pub sizes: Vec<usize>,
    /// Candidate threads per work group (CUDA block).
    pub threads_per_group: Vec<usize>,
    /// Candidate cipher blocks per device thread.
    pub blocks_per_thread: Vec<usize>,
    /// Timed runs per point, after one warm-up run.
    pub runs: usize,
    /// A point whose first run takes longer than this is timed fewer times.
    pub point_budget: Duration,
    /// Jobs whose CPU/GPU crossover is measured.
    pub crossover_jobs: Vec<(CipherSpec, Direction)>,
    /// The sizes crossovers are measured at.
    pub crossover_sizes: Vec<usize>,
}

/// Sizes from `first` up to `last` inclusive, each `step` times the one before: the size
/// ladders that tuning and the benchmarks sweep.
pub fn geometric(first: usize, last: usize, step: usize) -> Vec<usize> {
    std::iter::successors(Some(first), |size| size.checked_mul(step))
        .take_while(|size| *size <= last)
        .collect()
}

impl TuneOptions {
    /// The standard sweep for a device: `full` takes every warp multiple from 64 to 1024
    /// threads per group and every size from 64 B to 1 GiB in steps of 4 (on a GPU); the
    /// quick sweep takes fewer shapes and steps of 16. On an OpenCL CPU device (PoCL), where
    /// a GiB takes seconds per run, sizes stop at 16 MiB (4 MiB quick) unless `max_bytes`
    /// says otherwise.
    pub fn standard(kind: DeviceKind, full: bool, max_bytes: Option<usize>) -> Self {
        let on_gpu = kind != DeviceKind::Cpu;
        let largest = max_bytes.unwrap_or(match (on_gpu, full) {
            (true, _) => 1 << 30,
            (false, true) => 16 << 20,
            (false, false) => 4 << 20,
        });
        let step = if full { 4 } else { 16 };
        let algorithms = if full {
            Algorithm::ALL.to_vec()
        } else {
            vec![
                Algorithm::Aes128,
                Algorithm::Aes256,
                Algorithm::Blowfish,
                Algorithm::Rc6_128,
            ]
        };
        let operations = if full {
            KernelOperation::ALL.to_vec()
        } else {
            vec![KernelOperation::Ctr, KernelOperation::EcbDecrypt]
        };
        let threads_per_group = if full {
            (2..=32).map(|warps| warps * 32).collect()
        } else {
            vec![64, 128, 256, 512, 1024]
        };
        let blocks_per_thread = if full {
            vec![1, 2, 4, 8, 16, 32, 64]
        } else {
            vec![1, 2, 4, 16]
        };
        let crossover_jobs = Self::crossover_jobs(&algorithms, full);
        TuneOptions {
            algorithms,
            operations,
            sizes: geometric(64, largest, step),
            threads_per_group,
            blocks_per_thread,
            runs: if full { 5 } else { 3 },
            point_budget: Duration::from_millis(if full { 500 } else { 200 }),
            crossover_jobs,
            crossover_sizes: geometric(1024, largest.max(1024), step),
        }
    }
}

impl TuneOptions {
    /// The jobs whose crossover is measured for `algorithms`: CTR and (for 16-byte blocks)
    /// GCM both ways; with `full` also ECB both ways and CBC decryption.
    pub fn crossover_jobs(algorithms: &[Algorithm], full: bool) -> Vec<(CipherSpec, Direction)> {
        let mut jobs = Vec::new();
        for &algorithm in algorithms {
            let spec = |mode| CipherSpec { algorithm, mode };
            jobs.push((spec(Mode::Ctr), Direction::Encrypt));
            if full {
                jobs.push((spec(Mode::Ecb), Direction::Encrypt));
                jobs.push((spec(Mode::Ecb), Direction::Decrypt));
                jobs.push((spec(Mode::Cbc), Direction::Decrypt));
            }
            if algorithm.block_size() == 16 {
                jobs.push((spec(Mode::Gcm), Direction::Encrypt));
                jobs.push((spec(Mode::Gcm), Direction::Decrypt));
            }
        }
        jobs
    }
}

/// What [`tune`] reports as it goes.
pub enum TuneEvent<'a> {
    /// One cipher, operation and size swept: the best shape.
    Shape(&'a TunedShape),
    /// One job's crossover measured.
    Crossover(&'a Crossover),
}

/// Runs both phases on `gpu_engine`'s device, comparing with `cpu_engine` (which should be
/// a CPU `auto` engine that never uses a GPU), and returns the table; the device is left
/// with the table installed. Nothing is saved here.
pub fn tune(
    gpu_engine: &Engine,
    cpu_engine: &Engine,
    options: &TuneOptions,
    report: &mut dyn FnMut(TuneEvent<'_>),
) -> Result<TuneTable, JobError> {
    let device = gpu_engine.gpu().ok_or_else(|| {
        JobError::Gpu(parcrypt_gpu::GpuError::InvalidInput(
            "tuning needs a GPU backend (opencl, cuda or hip)".into(),
        ))
    })?;
    let untuned = device.launch_geometry();
    let largest = options.sizes.iter().copied().max().unwrap_or(0);
    let mut scratch = pseudo_random_bytes(largest);

    let mut shapes = Vec::new();
    let swept = (|| {
        for &algorithm in &options.algorithms {
            let key = KeyMaterial::new(algorithm, &pseudo_random_bytes(algorithm.key_lengths().0))?;
            for &operation in &options.operations {
                let gpu_operation = gpu_operation(operation, algorithm);
                for &bytes in &options.sizes {
                    let shape = sweep_point(
                        device,
                        &key,
                        algorithm,
                        operation,
                        &gpu_operation,
                        &mut scratch[..bytes],
                        untuned,
                        options,
                    )?;
                    report(TuneEvent::Shape(&shape));
                    shapes.push(shape);
                }
            }
        }
        Ok::<(), JobError>(())
    })();
    // The sweep changed the device's shape; put it back whatever happened.
    let restored = device.set_launch_geometry(untuned);
    swept?;
    restored?;

    let mut table = TuneTable::new(
        device.api().name(),
        device.identity(),
        untuned,
        shapes,
        Vec::new(),
    );
    device.set_tuning(Some(Arc::new(table.clone())));

    let crossover_largest = options.crossover_sizes.iter().copied().max().unwrap_or(0);
    let mut job_scratch = pseudo_random_bytes(crossover_largest);
    for &(spec, direction) in &options.crossover_jobs {
        let mut points = Vec::with_capacity(options.crossover_sizes.len());
        for &bytes in &options.crossover_sizes {
            let data = &mut job_scratch
                [..bytes / spec.algorithm.block_size() * spec.algorithm.block_size()];
            let cpu_seconds = time_job(cpu_engine, spec, direction, data, options)?;
            let gpu_seconds = time_job(gpu_engine, spec, direction, data, options)?;
            points.push(CrossoverPoint {
                bytes: data.len() as u64,
                cpu_seconds,
                gpu_seconds,
            });
        }
        let crossover = Crossover::new(spec, direction, points);
        report(TuneEvent::Crossover(&crossover));
        table.crossovers.push(crossover);
    }
    device.set_tuning(Some(Arc::new(table.clone())));
    Ok(table)
}

/// The device operation a kernel operation is timed with (all-zero counter or chain).
fn gpu_operation(operation: KernelOperation, algorithm: Algorithm) -> GpuOperation {
    let block = vec![0u8; algorithm.block_size()];
    match operation {
        KernelOperation::EcbEncrypt => GpuOperation::EcbEncrypt,
        KernelOperation::EcbDecrypt => GpuOperation::EcbDecrypt,
        KernelOperation::Ctr => GpuOperation::Ctr {
            counter: block,
            rule: CounterRule::Full,
        },
        KernelOperation::CbcDecrypt => GpuOperation::CbcDecrypt { previous: block },
    }
}

/// The launch a shape makes over `blocks` blocks, as (threads per group, groups): shapes
/// that make the same launch need timing once.
fn launch_of(geometry: LaunchGeometry, blocks: usize) -> (usize, usize) {
    let threads = blocks.div_ceil(geometry.blocks_per_thread).max(1);
    (
        geometry.threads_per_group,
        threads.div_ceil(geometry.threads_per_group),
    )
}

#[allow(clippy::too_many_arguments)]
fn sweep_point(
    device: &dyn GpuDevice,
    key: &KeyMaterial,
    algorithm: Algorithm,
    operation: KernelOperation,
    gpu_operation: &GpuOperation,
    data: &mut [u8],
    untuned: LaunchGeometry,
    options: &TuneOptions,
) -> Result<TunedShape, JobError> {
    let blocks = data.len() / algorithm.block_size();
    let mut candidates = vec![untuned];
    for &threads_per_group in &options.threads_per_group {
        for &blocks_per_thread in &options.blocks_per_thread {
            candidates.push(LaunchGeometry {
                threads_per_group,
                blocks_per_thread,
            });
        }
    }
    let mut seen = std::collections::HashSet::new();
    candidates.retain(|geometry| seen.insert(launch_of(*geometry, blocks)));

    let mut timed = Vec::with_capacity(candidates.len());
    for geometry in candidates {
        device.set_launch_geometry(geometry)?;
        let first = device.kernel_times(key, gpu_operation, data, 1)?[0];
        let runs = if first > options.point_budget {
            1
        } else {
            options.runs.max(1)
        };
        let times = device.kernel_times(key, gpu_operation, data, runs)?;
        timed.push((geometry, median(times)));
    }
    let (candidate, _) = timed
        .iter()
        .copied()
        .min_by(|left, right| left.1.cmp(&right.1))
        .expect("the untuned shape is always a candidate");
    // The sweep's minimum is biased towards whichever shape met a quiet moment: confirm it
    // against the untuned shape in alternating rounds, every run kept, and keep the winner
    // only when it saves more time than the untuned shape's own runs spread over
    // (`decide_shape`).
    let mut untuned_times = Vec::with_capacity(CONFIRMATION_ROUNDS * options.runs.max(1));
    let mut candidate_times = Vec::with_capacity(CONFIRMATION_ROUNDS * options.runs.max(1));
    for _ in 0..CONFIRMATION_ROUNDS {
        for (geometry, times) in [
            (untuned, &mut untuned_times),
            (candidate, &mut candidate_times),
        ] {
            device.set_launch_geometry(geometry)?;
            times.extend(
                device
                    .kernel_times(key, gpu_operation, data, options.runs.max(1))?
                    .into_iter()
                    .map(|time| time.as_secs_f64()),
            );
        }
    }
    let decision = decide_shape(&untuned_times, &candidate_times);
    let untuned_time = median_seconds(&untuned_times);
    let (best, best_time) = if decision.kept && candidate != untuned {
        (candidate, median_seconds(&candidate_times))
    } else {
        (untuned, untuned_time)
    };
    Ok(TunedShape {
        algorithm: algorithm.name().to_string(),
        operation: operation_name(operation).to_string(),
        bytes: data.len() as u64,
        threads_per_group: best.threads_per_group,
        blocks_per_thread: best.blocks_per_thread,
        kernel_seconds: best_time,
        untuned_kernel_seconds: untuned_time,
        decision: (candidate != untuned).then_some(decision),
    })
}

/// The median of seconds (upper middle for an even count; 0 when empty).
fn median_seconds(seconds: &[f64]) -> f64 {
    let mut sorted = seconds.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// Median seconds of a whole job on `engine` (a fresh crypter per run, so key setup is
/// in it, as it is in what a user waits for), after one warm-up run.
fn time_job(
    engine: &Engine,
    spec: CipherSpec,
    direction: Direction,
    data: &mut [u8],
    options: &TuneOptions,
) -> Result<f64, JobError> {
    let timed = TimedJob::new(
        spec,
        direction,
        pseudo_random_bytes(spec.algorithm.key_lengths().0),
    );
    let job = timed.spec();
    let mut run = || -> Result<Duration, JobError> {
        let mut crypter = Crypter::new(engine, &job)?;
        let started = Instant::now();
        crypter.update(data)?;
        Ok(started.elapsed())
    };
    let first = run()?;
    let runs = if first > options.point_budget {
        1
    } else {
        options.runs.max(1)
    };
    let times = (0..runs).map(|_| run()).collect::<Result<Vec<_>, _>>()?;
    Ok(median(times).as_secs_f64())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

/// Bytes that are not all zero (xorshift), so that no path could shortcut on them.
fn pseudo_random_bytes(length: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..length)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_sweeps_cover_what_the_issue_names() {
        let full = TuneOptions::standard(DeviceKind::Gpu, true, None);
        assert_eq!(full.threads_per_group.first(), Some(&64));
        assert_eq!(full.threads_per_group.last(), Some(&1024));
        assert!(full
            .threads_per_group
            .iter()
            .all(|threads| threads % 32 == 0));
        assert_eq!(full.threads_per_group.len(), 31);
        for blocks in [1, 2, 4] {
            assert!(full.blocks_per_thread.contains(&blocks));
        }
        assert_eq!(full.sizes.first(), Some(&64));
        assert_eq!(full.sizes.last(), Some(&(1 << 30)));
        assert_eq!(full.algorithms, Algorithm::ALL.to_vec());
        assert!(full
            .crossover_jobs
            .iter()
            .all(|(spec, _)| spec.mode != Mode::Gcm || spec.algorithm.block_size() == 16));
        let quick_cpu = TuneOptions::standard(DeviceKind::Cpu, false, None);
        assert_eq!(quick_cpu.sizes.last(), Some(&(4 << 20)));
        assert_eq!(
            TuneOptions::standard(DeviceKind::Cpu, false, Some(4096)).sizes,
            vec![64, 1024]
        );
    }

    #[test]
    fn shapes_that_launch_the_same_grid_are_recognised() {
        let shape = |threads_per_group, blocks_per_thread| LaunchGeometry {
            threads_per_group,
            blocks_per_thread,
        };
        // Four blocks: one thread, one group, whatever the blocks per thread from 4 up.
        assert_eq!(launch_of(shape(64, 4), 4), launch_of(shape(64, 16), 4));
        assert_ne!(launch_of(shape(64, 4), 4), launch_of(shape(128, 4), 4));
        assert_eq!(launch_of(shape(256, 1), 1 << 20), (256, 4096));
        assert_eq!(launch_of(shape(256, 4), 1 << 20), (256, 1024));
    }

    #[test]
    fn medians_and_sizes() {
        let ms = Duration::from_millis;
        assert_eq!(median(vec![ms(5), ms(1), ms(3)]), ms(3));
        assert_eq!(median(Vec::new()), Duration::ZERO);
        assert_eq!(geometric(64, 4096, 4), vec![64, 256, 1024, 4096]);
        assert_eq!(geometric(64, 63, 4), Vec::<usize>::new());
        let bytes = pseudo_random_bytes(64);
        assert!(bytes.iter().any(|&byte| byte != bytes[0]));
    }
}
