//! The GPU backend of [`ChunkBatcher`]: a file's chunks are AES-GCM messages under one key,
//! sealed and opened in batches by the engine ([`parcrypt_engine::chunks`]), which runs CTR
//! and GHASH on its device and finishes the tags on the host; this module gives it each
//! chunk's nonce and turns its outcome into the format's errors. Opening checks every tag
//! before any chunk is decrypted, so the device never produces unauthenticated plaintext.

use parcrypt_engine::chunks::{ChunkKey, GpuGcmChunks};
use parcrypt_engine::{Engine, JobError};
use parcrypt_modes::gcm::NONCE_BYTES;
use parcrypt_modes::Direction;

use crate::chunks::{batch_chunks, damaged_from, ChunkBatcher, CpuChunks};
use crate::cobblestone::{MessageKeys, CHUNK_BYTES};
use crate::error::{FormatError, Result};

/// The batcher for `engine`: its GPU when it has one; under `auto` with a tuned GPU, each
/// batch where the tune table says it finishes first; its CPU threads otherwise.
pub fn batcher_for(engine: &Engine) -> Box<dyn ChunkBatcher + '_> {
    if let Some(gpu) = GpuChunks::new(engine) {
        return Box::new(gpu);
    }
    if engine.auto_tuning().is_some() {
        return Box::new(AutoChunks {
            engine,
            cpu: CpuChunks::new(engine),
        });
    }
    Box::new(CpuChunks::new(engine))
}

/// `auto` with a tuned GPU (`parcrypt tune`): a batch goes to the GPU when the engine says
/// an AES-GCM job of the batch's size finishes there first
/// ([`GpuGcmChunks::for_batch`]), and to the CPU pool otherwise. Both give the same bytes.
struct AutoChunks<'e> {
    engine: &'e Engine,
    cpu: CpuChunks<'e>,
}

impl AutoChunks<'_> {
    fn gpu_for(
        &self,
        keys: &MessageKeys,
        direction: Direction,
        bytes: usize,
    ) -> Option<GpuChunks<'_>> {
        GpuGcmChunks::for_batch(self.engine, keys.suite().algorithm(), direction, bytes)
            .map(|batches| GpuChunks { batches })
    }

    /// `gpu` when the engine chose it ([`AutoChunks::gpu_for`]), the CPU pool otherwise.
    fn or_cpu<'s>(&'s self, gpu: &'s Option<GpuChunks<'_>>) -> &'s dyn ChunkBatcher {
        match gpu {
            Some(gpu) => gpu,
            None => &self.cpu,
        }
    }
}

impl ChunkBatcher for AutoChunks<'_> {
    fn name(&self) -> String {
        "auto".to_string()
    }

    fn preferred_batch_chunks(&self) -> usize {
        self.cpu.preferred_batch_chunks()
    }

    fn seal_batch(&self, keys: &MessageKeys, first_chunk: u64, batch: &mut [u8]) -> Result<()> {
        let gpu = self.gpu_for(keys, Direction::Encrypt, batch.len());
        self.or_cpu(&gpu).seal_batch(keys, first_chunk, batch)
    }

    fn open_batch(&self, keys: &MessageKeys, first_chunk: u64, batch: &mut [u8]) -> Result<()> {
        let gpu = self.gpu_for(keys, Direction::Decrypt, batch.len());
        self.or_cpu(&gpu).open_batch(keys, first_chunk, batch)
    }
}

/// Seals and opens batches on the engine's GPU (`opencl`, `cuda`, `hip`).
pub struct GpuChunks<'e> {
    batches: GpuGcmChunks<'e>,
}

impl<'e> GpuChunks<'e> {
    /// `None` when the engine has no GPU.
    pub fn new(engine: &'e Engine) -> Option<Self> {
        GpuGcmChunks::new(engine).map(|batches| GpuChunks { batches })
    }
}

/// The nonces of the `count` chunks from `first_chunk`, and the key of `keys`'s message in
/// the form a batch needs.
fn batch_inputs(
    keys: &MessageKeys,
    first_chunk: u64,
    count: u64,
) -> Result<(Vec<[u8; NONCE_BYTES]>, ChunkKey<'_>)> {
    let nonces = (first_chunk..first_chunk + count)
        .map(|index| keys.nonce(index))
        .collect::<Result<Vec<_>>>()?;
    let key = ChunkKey::new(keys.suite().algorithm(), keys.key(), keys.gcm_key())
        .map_err(backend_error)?;
    Ok((nonces, key))
}

fn backend_error(error: JobError) -> FormatError {
    FormatError::Backend(error.to_string())
}

impl ChunkBatcher for GpuChunks<'_> {
    fn name(&self) -> String {
        self.batches.api_name()
    }

    fn seal_batch(&self, keys: &MessageKeys, first_chunk: u64, batch: &mut [u8]) -> Result<()> {
        let count = batch_chunks(first_chunk, batch)?;
        let (nonces, key) = batch_inputs(keys, first_chunk, count)?;
        self.batches
            .seal(&key, &nonces, CHUNK_BYTES, batch)
            .map_err(backend_error)
    }

    fn open_batch(&self, keys: &MessageKeys, first_chunk: u64, batch: &mut [u8]) -> Result<()> {
        let count = batch_chunks(first_chunk, batch)?;
        let (nonces, key) = batch_inputs(keys, first_chunk, count)?;
        // Every tag is checked before anything is decrypted; from a failed chunk on the
        // batch is still ciphertext, which `damaged_from` wipes as every backend does.
        match self
            .batches
            .open(&key, &nonces, CHUNK_BYTES, batch)
            .map_err(backend_error)?
        {
            None => Ok(()),
            Some(position) => Err(damaged_from(
                batch,
                first_chunk,
                first_chunk + position as u64,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cobblestone::{Suite, SEALED_CHUNK_BYTES};
    use crate::gcm_batch::{gpu_engines, layout, texts_of};
    use parcrypt_engine::Backend;

    #[test]
    fn gpu_batches_equal_the_cpu_batches_and_open_back() {
        let cpu_engine = Engine::new(Backend::Seq, None).unwrap();
        let cpu = CpuChunks::new(&cpu_engine);
        for engine in gpu_engines() {
            let gpu = GpuChunks::new(&engine).expect("a GPU engine has a device");
            for suite in Suite::ALL {
                let keys =
                    MessageKeys::derive(suite, &vec![9u8; suite.key_bytes()], &[1; 24], b"ctx")
                        .unwrap();
                for text_bytes in [0, 17, CHUNK_BYTES, 5 * CHUNK_BYTES + 1234] {
                    let context = format!("{} {suite} {text_bytes} bytes", engine.backend().name());
                    let (plaintext, batch) = layout(text_bytes, CHUNK_BYTES);
                    let mut expected = batch.clone();
                    cpu.seal_batch(&keys, 3, &mut expected).unwrap();
                    let mut sealed = batch.clone();
                    gpu.seal_batch(&keys, 3, &mut sealed).unwrap();
                    assert!(sealed == expected, "{context}: sealed batches differ");
                    gpu.open_batch(&keys, 3, &mut sealed).unwrap();
                    let texts = texts_of(&sealed, CHUNK_BYTES);
                    assert!(texts == plaintext, "{context}: opened text");
                }
            }
        }
    }

    #[test]
    fn a_damaged_chunk_is_named_and_wiped_from_it_on() {
        for engine in gpu_engines() {
            let gpu = GpuChunks::new(&engine).unwrap();
            let keys =
                MessageKeys::derive(Suite::Cobblestone128, &[9u8; 16], &[1; 24], b"").unwrap();
            let (plaintext, mut batch) = layout(6 * CHUNK_BYTES + 100, CHUNK_BYTES);
            gpu.seal_batch(&keys, 0, &mut batch).unwrap();
            let mut damaged = batch.clone();
            damaged[2 * SEALED_CHUNK_BYTES + 5] ^= 1;
            let error = gpu.open_batch(&keys, 0, &mut damaged).unwrap_err();
            assert!(
                matches!(error, FormatError::DamagedChunk { index: 2, .. }),
                "{error}"
            );
            assert!(damaged[2 * SEALED_CHUNK_BYTES..]
                .iter()
                .all(|&byte| byte == 0));
            assert_eq!(&damaged[..CHUNK_BYTES], &plaintext[..CHUNK_BYTES]);
            // The same batch at another position fails at its first chunk.
            let mut misplaced = batch.clone();
            let error = gpu.open_batch(&keys, 1, &mut misplaced).unwrap_err();
            assert!(
                matches!(error, FormatError::DamagedChunk { index: 1, .. }),
                "{error}"
            );
            assert!(misplaced.iter().all(|&byte| byte == 0));
        }
    }

    #[test]
    fn files_are_byte_identical_to_the_cpu_backend() {
        use crate::message::{Envelope, Format, Salts, Secret, Setup};
        use crate::stream::{decrypt_chunks, encrypt_chunks, StreamOptions};
        let cpu_engine = Engine::new(Backend::Pool, Some(2)).unwrap();
        let key = [5u8; 32];
        let salts = Salts {
            cobblestone: [7; crate::cobblestone::SALT_BYTES],
            argon2: [8; crate::header::KDF_SALT_BYTES],
        };
        let message: Vec<u8> = (0..3 * CHUNK_BYTES + 77).map(|i| (i % 251) as u8).collect();
        let setup = Setup {
            format: Format::Cobblestone,
            suite: Suite::Cobblestone256,
            ..Setup::default()
        };
        let seal = |batcher: &dyn ChunkBatcher| {
            let (envelope, keys) =
                Envelope::create_with_salts(&setup, Secret::Key(&key), salts).unwrap();
            let mut sealed = envelope.to_bytes();
            // Batches of two chunks: a batch boundary falls inside the message.
            let options = StreamOptions::with_batch_chunks(2);
            encrypt_chunks(batcher, &keys, &mut &message[..], &mut sealed, &options).unwrap();
            sealed
        };
        let expected = seal(&CpuChunks::new(&cpu_engine));
        for engine in gpu_engines() {
            let batcher = batcher_for(&engine);
            assert_eq!(batcher.name(), engine.backend().name());
            let sealed = seal(batcher.as_ref());
            assert!(
                sealed == expected,
                "{}: files differ",
                engine.backend().name()
            );
            let mut reader = &sealed[..];
            let envelope = Envelope::read(Format::Cobblestone, &mut reader).unwrap();
            let keys = envelope.unlock(Secret::Key(&key), b"").unwrap();
            let mut opened = Vec::new();
            decrypt_chunks(
                batcher.as_ref(),
                &keys,
                &mut reader,
                &mut opened,
                &StreamOptions::default(),
            )
            .unwrap();
            assert!(opened == message);
        }
    }
}
