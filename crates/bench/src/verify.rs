//! Before any timing: every backend must give `seq`'s bytes. A fast wrong answer is not a
//! result.

use parcrypt_engine::crypter::{process_buffer, JobSpec};
use parcrypt_engine::{Backend, Engine};
use parcrypt_modes::{CipherSpec, Direction};

use crate::throughput::{bench_key_iv, job, touched_buffer};
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
                    padding: true,
                    ..job(spec, direction, key, iv.as_deref())
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
