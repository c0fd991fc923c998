//! Before any timing: every backend must give `seq`'s bytes. A fast wrong answer is not a
//! result.

use parcrypt_ciphers::Implementation;
use parcrypt_engine::crypter::{process_buffer, JobSpec};
use parcrypt_engine::{Backend, Engine};
use parcrypt_gpu::LaunchGeometry;
use parcrypt_modes::{CipherSpec, Direction};

use crate::gpu::{operation, DirectDevice};
use crate::throughput::{bench_key_iv, random_buffer, touched_buffer};
use crate::BenchError;

/// Sizes that catch off-by-one splits: empty, partial blocks, a block and a bit, several
/// work items plus a tail.
pub const AWKWARD_SIZES: [usize; 7] = [0, 1, 15, 16, 17, 4096 + 5, (1 << 20) + 3];

/// Checks every engine against `seq` on [`AWKWARD_SIZES`], both directions, with padding;
/// returns the number of comparisons.
pub fn backends_agree(specs: &[CipherSpec], engines: &[&Engine]) -> Result<usize, BenchError> {
    let reference = Engine::new(Backend::Seq, None)?;
    let mut checked = 0;
    for &spec in specs {
        let (key, iv) = bench_key_iv(spec);
        for direction in [Direction::Encrypt, Direction::Decrypt] {
            for &size in &AWKWARD_SIZES {
                let mut job = JobSpec {
                    spec,
                    direction,
                    key,
                    iv: iv.as_deref(),
                    allow_short_gcm_iv: false,
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
                        return Err(BenchError::Mismatch(format!(
                            "{} {spec} {direction:?} of {size} bytes differs from seq",
                            engine.backend()
                        )));
                    }
                    checked += 1;
                }
            }
        }
    }
    Ok(checked)
}

/// Checks that `device` under `geometry` gives `seq`'s bytes for `spec` (a few blocks and a
/// few hundred, so that both under- and over-full groups run). Leaves the geometry set.
pub fn geometry_agrees(
    device: &DirectDevice,
    spec: CipherSpec,
    direction: Direction,
    geometry: LaunchGeometry,
) -> Result<(), BenchError> {
    let reference = Engine::new(Backend::Seq, None)?;
    let (key, iv) = bench_key_iv(spec);
    let job = JobSpec {
        spec,
        direction,
        key,
        iv: iv.as_deref(),
        allow_short_gcm_iv: false,
        aad: None,
        padding: false,
        implementation: Implementation::Fast,
    };
    let Some(operation) = operation(spec, direction) else {
        return Err(BenchError::Unsupported(format!(
            "{spec} {direction:?} does not run on the GPU alone"
        )));
    };
    let material = parcrypt_gpu::KeyMaterial::new(spec.algorithm, key)?;
    device.set_launch_geometry(geometry)?;
    for blocks in [3usize, 333, 4099] {
        let input = random_buffer(blocks * spec.algorithm.block_size(), blocks as u64);
        let expected = process_buffer(&reference, &job, input.clone())?;
        let mut got = input;
        device.gpu().process(&material, &operation, &mut got)?;
        if got != expected {
            return Err(BenchError::Mismatch(format!(
                "{} {spec} with {} threads per group differs from seq on {blocks} blocks",
                device.backend(),
                geometry.threads_per_group
            )));
        }
    }
    Ok(())
}
