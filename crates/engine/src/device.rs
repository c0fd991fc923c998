//! Messages that already live in CUDA device memory someone else owns (a CuPy array, a
//! PyTorch tensor), run where they lie: the cipher kernels on the device, GCM's GHASH on the
//! device too, and only the 16-byte tag (and GHASH's partial sums) crossing to the host.
//!
//! The bytes are those of the CPU path for the same suite, key, IV and AAD: GCM encryption
//! writes the ciphertext followed by the 16-byte tag into the output's memory (so the output
//! holds 16 bytes more than the input), and GCM decryption checks the tag over the
//! ciphertext before anything is decrypted, so on a mismatch the output is left untouched.
//! ECB and CBC run without padding only (turn it off with [`KeyedCipher::padding`]), and
//! CBC encryption, whose every block waits for the one before, does not run on a device.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use parcrypt_gpu::{CudaDevice, ForeignDeviceMemory, GpuError, GpuOperation};
use parcrypt_modes::ctr::CounterRule;
use parcrypt_modes::gcm::{GcmAccumulator, GcmError, MAX_TEXT_BYTES, TAG_BYTES};
use parcrypt_modes::{Direction, Mode};

use crate::crypter::check_iv_and_aad;
use crate::keyed::one_message_calls;
use crate::{Backend, EngineError, JobError, KeyedCipher};

/// GHASH segment size over device memory: 4 KiB per device thread at most (a GiB gives
/// 262,144 threads, joined on the device in 1024 work-groups), as the engine's host path
/// uses; `ghash_foreign` takes shorter segments where the data would leave SMs idle.
pub const DEVICE_GHASH_SEGMENT_BYTES: usize = 4096;

/// CUDA device `ordinal`, opened (kernels compiled, self-tested) on the first call and
/// shared by every later call in the process; or why it cannot be opened. Nothing is kept
/// on disk: [`cuda_device_with_cache`] names a kernel cache.
pub fn cuda_device(ordinal: usize) -> Result<Arc<CudaDevice>, EngineError> {
    cuda_device_with_cache(ordinal, None)
}

/// [`cuda_device`], keeping the compiled kernels in `kernel_cache_directory` (when given)
/// if this call is the one that opens the device, so that a later process loads them
/// instead of compiling (the front ends pass the user's cache folder).
pub fn cuda_device_with_cache(
    ordinal: usize,
    kernel_cache_directory: Option<&std::path::Path>,
) -> Result<Arc<CudaDevice>, EngineError> {
    static DEVICES: OnceLock<Mutex<HashMap<usize, Arc<CudaDevice>>>> = OnceLock::new();
    let devices = DEVICES.get_or_init(|| Mutex::new(HashMap::new()));
    // Opening under the lock: two threads asking at once open the device once.
    let mut devices = devices.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(device) = devices.get(&ordinal) {
        return Ok(Arc::clone(device));
    }
    let options = parcrypt_gpu::OpenOptions {
        kernel_cache: kernel_cache_directory.map_or(parcrypt_gpu::KernelCache::Disabled, |path| {
            parcrypt_gpu::KernelCache::Directory(path.to_path_buf())
        }),
        ..parcrypt_gpu::OpenOptions::default()
    };
    let device = CudaDevice::open_with(ordinal, &options).map_err(|error| EngineError::Gpu {
        backend: Backend::Cuda,
        reason: error.to_string(),
    })?;
    let device = Arc::new(device);
    devices.insert(ordinal, Arc::clone(&device));
    Ok(device)
}

fn refused(reason: String) -> JobError {
    JobError::Gpu(GpuError::InvalidInput(reason))
}

impl KeyedCipher {
    one_message_calls! {
        /// Encrypts one message held in device memory of `device`, from `input` into `output`
        /// (the same memory for in place, when `output` starts where `input` does), and
        /// returns the bytes written: the input's length, plus 16 for GCM, whose tag follows
        /// the ciphertext in `output`. `output` must hold at least that many bytes. Returns
        /// when the result is on the device.
        fn encrypt_on_device() -> OnDevice: Encrypt;

        /// Decrypts one message held in device memory of `device`, from `input` into
        /// `output` (the same memory for in place), and returns the bytes written: the
        /// input's length, 16 fewer for GCM. For GCM the tag (the input's last 16 bytes) is
        /// checked on the ciphertext first: on a mismatch this returns the tag error and
        /// `output` is untouched.
        fn decrypt_on_device() -> OnDevice: Decrypt;
    }

    fn run_on_device(
        &self,
        device: &CudaDevice,
        direction: Direction,
        iv: Option<&[u8]>,
        input: &ForeignDeviceMemory<'_>,
        output: &ForeignDeviceMemory<'_>,
        aad: Option<&[u8]>,
    ) -> Result<usize, JobError> {
        let suite = self.suite();
        let iv = check_iv_and_aad(suite, iv, aad, self.allows_short_gcm_iv())?;
        let length = input.len();
        let block_size = suite.algorithm.block_size();
        if matches!(suite.mode, Mode::Ecb | Mode::Cbc) {
            if self.pads() {
                return Err(refused(format!(
                    "{suite} on device memory runs without padding only: turn padding off \
                     and give whole {block_size}-byte blocks"
                )));
            }
            if !length.is_multiple_of(block_size) {
                return Err(JobError::PartialBlock {
                    length: length as u64,
                    block_size,
                });
            }
        }
        if suite.mode == Mode::Cbc && direction == Direction::Encrypt {
            return Err(refused(format!(
                "{suite} encryption cannot run on a device (each block needs the one before \
                 it): encrypt on the CPU, or decrypt here"
            )));
        }
        let needed = self.max_output_length(direction, length);
        if suite.mode == Mode::Gcm && direction == Direction::Decrypt && length < TAG_BYTES {
            return Err(JobError::MissingTag(length as u64));
        }
        if output.len() < needed {
            return Err(JobError::OutputTooSmall {
                needed,
                got: output.len(),
            });
        }
        if !input.same_as(output) && input.overlaps(&output.range(0..needed)?) {
            return Err(refused(
                "the output overlaps the input at another address: give the same memory (in \
                 place) or a separate range"
                    .into(),
            ));
        }
        let keys = self.schedule();
        let material = keys.gpu_material()?;
        let operation = match suite.mode {
            Mode::Ecb if direction == Direction::Encrypt => GpuOperation::EcbEncrypt,
            Mode::Ecb => GpuOperation::EcbDecrypt,
            Mode::Cbc => GpuOperation::CbcDecrypt {
                previous: iv.to_vec(),
            },
            Mode::Ctr => GpuOperation::Ctr {
                counter: iv.to_vec(),
                rule: CounterRule::Full,
            },
            Mode::Gcm => {
                return self.gcm_on_device(device, direction, iv, input, output, aad);
            }
        };
        device.process_foreign(material, &operation, input, &output.range(0..length)?)?;
        Ok(length)
    }

    /// GCM: CTR from J0 + 1 and GHASH, both on the device; the tag on the host.
    fn gcm_on_device(
        &self,
        device: &CudaDevice,
        direction: Direction,
        iv: &[u8],
        input: &ForeignDeviceMemory<'_>,
        output: &ForeignDeviceMemory<'_>,
        aad: Option<&[u8]>,
    ) -> Result<usize, JobError> {
        let keys = self.schedule();
        let gcm = keys.gcm()?;
        let material = keys.gpu_material()?;
        let text_length = match direction {
            Direction::Encrypt => input.len(),
            Direction::Decrypt => input.len() - TAG_BYTES,
        };
        if text_length as u64 > MAX_TEXT_BYTES {
            return Err(GcmError::TooLong.into());
        }
        let message = gcm.message(keys.cipher(), iv)?;
        let mut accumulator = GcmAccumulator::new(gcm, aad.unwrap_or_default());
        let mut counter = vec![0u8; 16];
        message.text_counter(0).write(&mut counter);
        let operation = GpuOperation::Ctr {
            counter,
            rule: CounterRule::Low32,
        };
        let text_in = input.range(0..text_length)?;
        let text_out = output.range(0..text_length)?;
        // GHASH covers the ciphertext: the output after encrypting, the input before
        // decrypting (so that a forged message is never decrypted).
        let hashed = match direction {
            Direction::Encrypt => {
                device.process_foreign(material, &operation, &text_in, &text_out)?;
                text_out
            }
            Direction::Decrypt => text_in,
        };
        let partials =
            device.ghash_foreign(gcm.hash_subkey(), &hashed, DEVICE_GHASH_SEGMENT_BYTES)?;
        for (partial, bytes) in partials {
            accumulator.append(gcm, partial, bytes as u64)?;
        }
        match direction {
            Direction::Encrypt => {
                let tag = gcm.tag(&message, &accumulator);
                let tag_memory = output.range(text_length..text_length + TAG_BYTES)?;
                device.write_foreign(&tag_memory, &tag)?;
                Ok(text_length + TAG_BYTES)
            }
            Direction::Decrypt => {
                let mut received = [0u8; TAG_BYTES];
                device.read_foreign(&input.range(text_length..input.len())?, &mut received)?;
                gcm.verify(&message, &accumulator, &received)?;
                device.process_foreign(material, &operation, &text_in, &text_out)?;
                Ok(text_length)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opening_a_missing_device_says_why_and_never_panics() {
        match cuda_device(0) {
            Ok(device) => assert!(Arc::ptr_eq(&device, &cuda_device(0).unwrap())),
            Err(error) => assert!(matches!(
                error,
                EngineError::Gpu {
                    backend: Backend::Cuda,
                    ..
                }
            )),
        }
    }
}
