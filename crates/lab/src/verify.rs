//! Before any timing: every backend must give `seq`'s bytes. A fast wrong answer is not a
//! result. The engine-level check is the product bench's ([`parcrypt_bench::verify`]); the
//! lab adds the check of one GPU launch geometry on a device opened directly.

use parcrypt_engine::crypter::process_buffer;
use parcrypt_engine::{Backend, Engine};
use parcrypt_gpu::LaunchGeometry;
use parcrypt_modes::{CipherSpec, Direction};

use crate::gpu::{operation, DirectDevice};
use crate::throughput::{bench_key_iv, job, random_buffer};
use crate::BenchError;

pub use parcrypt_bench::verify::{backends_agree, AWKWARD_SIZES};

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
    let job = job(spec, direction, key, iv.as_deref());
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
