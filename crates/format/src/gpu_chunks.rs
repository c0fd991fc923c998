//! The GPU backend of [`ChunkBatcher`]: CTR and GHASH of a batch's chunks run on the
//! engine's device, the per-chunk tags are finished on the host.
//!
//! Every chunk is an AES-GCM message with its own nonce and no AAD, so its tag needs only
//! the GHASH sum of its ciphertext, which the device gives as one partial sum per 16 KiB
//! chunk (the chunk size is the GHASH segment size); the host finishes each tag with the
//! message's `GcmKey`. Opening hashes every chunk and checks every tag *before* any chunk
//! is decrypted, so the device never produces unauthenticated plaintext.
//!
//! CTR runs a whole batch in one device call ([`GpuOperation::CtrSegments`]): the chunk
//! texts are segments of 16 KiB, each from its own nonce's first text counter. So a batch
//! costs two device calls (CTR, GHASH) whatever its number of chunks.

use parcrypt_ciphers::{new_cipher, BlockCipher, Implementation};
use parcrypt_engine::Engine;
use parcrypt_gpu::ghash::join_partials_by;
use parcrypt_gpu::{GpuDevice, GpuError, GpuOperation, KeyMaterial};
use parcrypt_modes::ctr::CounterRule;
use parcrypt_modes::gcm::{nonce_text_counter, GcmAccumulator, GcmKey, GcmMessage};
use parcrypt_modes::{CipherSpec, Direction, Mode};
use std::sync::{Mutex, PoisonError};
use zeroize::Zeroizing;

use crate::chunks::{batch_chunks, damaged_from, ChunkBatcher, CpuChunks};
use crate::cobblestone::{MessageKeys, CHUNK_BYTES, SEALED_CHUNK_BYTES, TAG_BYTES};
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

/// `auto` with a tuned GPU (`parcrypt tune`): chunks are AES-GCM messages, so a batch goes to
/// the GPU when the table says an AES-GCM job of the batch's size finishes there first, and
/// to the CPU pool otherwise. Both give the same bytes.
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
        let spec = CipherSpec {
            algorithm: keys.suite().algorithm(),
            mode: Mode::Gcm,
        };
        self.engine
            .gpu_for(spec, direction, bytes)
            .map(GpuChunks::on)
    }

    /// `gpu` when the tune table chose it ([`AutoChunks::gpu_for`]), the CPU pool otherwise.
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

/// Seals and opens batches on the engine's GPU (`opencl`, `cuda`).
pub struct GpuChunks<'e> {
    gpu: &'e dyn GpuDevice,
    /// The chunk texts of a batch, back to back: one buffer for every batch, so that a
    /// batch does not fault in fresh pages (a new 64 MiB buffer took 73 ms to fill on an
    /// H100's host); wiped when the batcher is dropped.
    texts: Mutex<Zeroizing<Vec<u8>>>,
}

impl<'e> GpuChunks<'e> {
    /// `None` when the engine has no GPU.
    pub fn new(engine: &'e Engine) -> Option<Self> {
        engine.gpu().map(GpuChunks::on)
    }

    fn on(gpu: &'e dyn GpuDevice) -> Self {
        GpuChunks {
            gpu,
            texts: Mutex::new(Zeroizing::new(Vec::new())),
        }
    }
}

/// The GHASH segment the device sums: a quarter of a chunk. The kernel hashes each segment
/// on one thread, so quarters give the device four times the threads; the host joins each
/// chunk's four sums. On an H100 the GHASH call over a 4 MiB batch took 0.89 ms with 4 KiB
/// segments against 2.29 ms with 16 KiB ones (`cargo run --release -p parcrypt-gpu
/// --example chunk_calls -- cuda`).
const HASH_SEGMENT_BYTES: usize = 4096;
const _: () = assert!(CHUNK_BYTES.is_multiple_of(HASH_SEGMENT_BYTES));

/// One message's key in the forms a batch needs: the device's key material, and on the
/// host the cipher (for E_K(J0)) and the message's GCM key (H for the device, and the tags).
struct BatchKey<'k> {
    material: KeyMaterial,
    cipher: Box<dyn BlockCipher>,
    gcm_key: &'k GcmKey,
}

impl<'k> BatchKey<'k> {
    fn new(keys: &'k MessageKeys) -> Result<Self, FormatError> {
        let algorithm = keys.suite().algorithm();
        let material = KeyMaterial::new(algorithm, keys.key()).map_err(device_error)?;
        let cipher = new_cipher(algorithm, Implementation::Fast, keys.key())
            .map_err(|error| FormatError::Backend(error.to_string()))?;
        Ok(BatchKey {
            material,
            cipher,
            gcm_key: keys.gcm_key(),
        })
    }
}

fn device_error(error: GpuError) -> FormatError {
    FormatError::Backend(error.to_string())
}

/// The texts of a batch's chunks, back to back (tags left out), into `texts` (replacing
/// what it held): the layout in which one GHASH call gives each chunk its own segments.
fn gather_texts(batch: &[u8], texts: &mut Zeroizing<Vec<u8>>) {
    if texts.capacity() < batch.len() {
        // Growing the vector would free its old buffer unwiped: replace it (the old one is
        // wiped as it drops).
        *texts = Zeroizing::new(Vec::with_capacity(batch.len()));
    }
    texts.clear();
    for chunk in batch.chunks(SEALED_CHUNK_BYTES) {
        texts.extend_from_slice(&chunk[..chunk.len() - TAG_BYTES]);
    }
}

impl GpuChunks<'_> {
    /// CTR over the texts of chunks `0..count` of the batch (back to back in `texts`), each
    /// from its own nonce's first text counter, in one device call.
    fn apply_ctr(
        &self,
        keys: &MessageKeys,
        key: &BatchKey,
        first_chunk: u64,
        texts: &mut [u8],
        count: usize,
    ) -> Result<()> {
        let length = (count * CHUNK_BYTES).min(texts.len());
        let texts = &mut texts[..length];
        if texts.is_empty() {
            return Ok(());
        }
        let operation = batch_ctr(keys, first_chunk, texts.len())?;
        self.gpu
            .process(&key.material, &operation, texts)
            .map_err(device_error)
    }

    /// Runs `finish(position, key, message, accumulator)` for each chunk once the device has
    /// hashed its ciphertext in `texts`; stops at the first error.
    fn for_each_hashed_chunk<F>(
        &self,
        keys: &MessageKeys,
        key: &BatchKey,
        first_chunk: u64,
        texts: &[u8],
        count: usize,
        mut finish: F,
    ) -> Result<()>
    where
        F: FnMut(usize, &GcmKey, &GcmMessage, &GcmAccumulator) -> Result<()>,
    {
        let partials = self
            .gpu
            .ghash_segments(key.gcm_key.hash_subkey(), texts, HASH_SEGMENT_BYTES)
            .map_err(device_error)?;
        let per_chunk = CHUNK_BYTES / HASH_SEGMENT_BYTES;
        // H to the power of a quarter's blocks, made once for the batch's chunks.
        let quarter = key.gcm_key.ghash().power((HASH_SEGMENT_BYTES / 16) as u64);
        for position in 0..count {
            let start = (position * CHUNK_BYTES).min(texts.len());
            let text_bytes = (texts.len() - start).min(CHUNK_BYTES);
            // The chunk's segments (an empty final chunk has none: its sum is zero).
            let first = position * per_chunk;
            let segments = partials
                .get(first..first + text_bytes.div_ceil(HASH_SEGMENT_BYTES))
                .ok_or_else(|| {
                    FormatError::Backend("the device returned too few GHASH sums".to_string())
                })?;
            let partial = join_partials_by(
                key.gcm_key.ghash(),
                &quarter,
                segments,
                HASH_SEGMENT_BYTES,
                text_bytes,
            );
            let nonce = keys.nonce(first_chunk + position as u64)?;
            let message = key.gcm_key.message_with_nonce(key.cipher.as_ref(), &nonce);
            let mut accumulator = GcmAccumulator::default();
            accumulator
                .append(key.gcm_key, partial, text_bytes as u64)
                .map_err(|_| FormatError::TooLong)?;
            finish(position, key.gcm_key, &message, &accumulator)?;
        }
        Ok(())
    }
}

/// The CTR part of AES-GCM for the texts of consecutive chunks from `first_chunk`,
/// `text_bytes` in all, as one operation: 16 KiB segments, each from its chunk's first text
/// counter (J0 + 1 under GCM's inc32); an empty final chunk has no segment.
fn batch_ctr(
    keys: &MessageKeys,
    first_chunk: u64,
    text_bytes: usize,
) -> Result<GpuOperation, FormatError> {
    let segments = text_bytes.div_ceil(CHUNK_BYTES);
    let mut counters = Vec::with_capacity(16 * segments);
    for index in (first_chunk..).take(segments) {
        let mut counter = [0u8; 16];
        nonce_text_counter(&keys.nonce(index)?).write(&mut counter);
        counters.extend_from_slice(&counter);
    }
    Ok(GpuOperation::CtrSegments {
        counters,
        segment_bytes: CHUNK_BYTES,
        rule: CounterRule::Low32,
    })
}

/// Copies the texts of chunks `0..count` back into their places in the batch.
fn scatter_texts(texts: &[u8], batch: &mut [u8], count: usize) {
    for (chunk, text) in batch
        .chunks_mut(SEALED_CHUNK_BYTES)
        .zip(texts.chunks(CHUNK_BYTES))
        .take(count)
    {
        chunk[..text.len()].copy_from_slice(text);
    }
}

impl ChunkBatcher for GpuChunks<'_> {
    fn name(&self) -> String {
        self.gpu.api().to_string()
    }

    fn seal_batch(&self, keys: &MessageKeys, first_chunk: u64, batch: &mut [u8]) -> Result<()> {
        let count = batch_chunks(first_chunk, batch)? as usize;
        let key = BatchKey::new(keys)?;
        let mut texts = self.texts.lock().unwrap_or_else(PoisonError::into_inner);
        gather_texts(batch, &mut texts);
        self.apply_ctr(keys, &key, first_chunk, &mut texts, count)?;
        scatter_texts(&texts, batch, count);
        let mut chunks = batch.chunks_mut(SEALED_CHUNK_BYTES);
        self.for_each_hashed_chunk(
            keys,
            &key,
            first_chunk,
            &texts,
            count,
            |_, gcm_key, message, accumulator| {
                if let Some(chunk) = chunks.next() {
                    let tag_start = chunk.len() - TAG_BYTES;
                    chunk[tag_start..].copy_from_slice(&gcm_key.tag(message, accumulator));
                }
                Ok(())
            },
        )
    }

    fn open_batch(&self, keys: &MessageKeys, first_chunk: u64, batch: &mut [u8]) -> Result<()> {
        // Every tag is checked before anything is decrypted.
        let mut failed = None;
        let count = batch_chunks(first_chunk, batch)? as usize;
        let key = BatchKey::new(keys)?;
        let mut texts = self.texts.lock().unwrap_or_else(PoisonError::into_inner);
        gather_texts(batch, &mut texts);
        let mut chunks = batch.chunks(SEALED_CHUNK_BYTES);
        self.for_each_hashed_chunk(
            keys,
            &key,
            first_chunk,
            &texts,
            count,
            |position, gcm_key, message, accumulator| {
                let received = chunks.next().map(|chunk| &chunk[chunk.len() - TAG_BYTES..]);
                let verified =
                    received.is_some_and(|tag| gcm_key.verify(message, accumulator, tag).is_ok());
                if !verified && failed.is_none() {
                    failed = Some(position);
                }
                Ok(())
            },
        )?;
        let authenticated = failed.unwrap_or(count);
        self.apply_ctr(keys, &key, first_chunk, &mut texts, authenticated)?;
        scatter_texts(&texts, batch, authenticated);
        match failed {
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
    use crate::chunks::tests::layout;
    use crate::cobblestone::Suite;
    use parcrypt_engine::Backend;
    use parcrypt_modes::ctr::Counter;

    /// The machine's GPU engines (OpenCL on PoCL in CI), saying which are missing.
    fn gpu_engines() -> Vec<Engine> {
        Backend::GPU
            .iter()
            .filter_map(|&backend| match Engine::new(backend, Some(2)) {
                Ok(engine) => Some(engine),
                Err(error) => {
                    println!("SKIPPED {}: {error}", backend.name());
                    None
                }
            })
            .collect()
    }

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
                for text_bytes in [
                    0,
                    1,
                    17,
                    CHUNK_BYTES,
                    CHUNK_BYTES + 1,
                    5 * CHUNK_BYTES + 1234,
                    2 * CHUNK_BYTES + HASH_SEGMENT_BYTES + 5,
                    3 * CHUNK_BYTES + 3 * HASH_SEGMENT_BYTES,
                ] {
                    let context = format!("{} {suite} {text_bytes} bytes", engine.backend().name());
                    let (plaintext, batch) = layout(text_bytes);
                    let mut expected = batch.clone();
                    cpu.seal_batch(&keys, 3, &mut expected).unwrap();
                    let mut sealed = batch.clone();
                    gpu.seal_batch(&keys, 3, &mut sealed).unwrap();
                    assert!(sealed == expected, "{context}: sealed batches differ");

                    let mut opened = sealed.clone();
                    gpu.open_batch(&keys, 3, &mut opened).unwrap();
                    let mut reopened = batch.clone();
                    for (chunk, piece) in reopened
                        .chunks_mut(SEALED_CHUNK_BYTES)
                        .zip(plaintext.chunks(CHUNK_BYTES))
                    {
                        chunk[..piece.len()].copy_from_slice(piece);
                    }
                    let texts_only = |bytes: &[u8]| {
                        let mut texts = Zeroizing::new(Vec::new());
                        gather_texts(bytes, &mut texts);
                        texts.to_vec()
                    };
                    assert_eq!(texts_only(&opened), plaintext, "{context}: opened text");
                    assert_eq!(texts_only(&reopened), plaintext);
                }
            }
        }
    }

    #[test]
    fn a_batch_is_one_ctr_operation_of_chunk_segments() {
        let keys = MessageKeys::derive(Suite::Cobblestone128, &[9u8; 16], &[1; 24], b"").unwrap();
        let cipher = new_cipher(
            Suite::Cobblestone128.algorithm(),
            Implementation::Fast,
            keys.key(),
        )
        .unwrap();
        let text_bytes = 3 * CHUNK_BYTES + 100;
        let GpuOperation::CtrSegments {
            counters,
            segment_bytes,
            rule,
        } = batch_ctr(&keys, 7, text_bytes).unwrap()
        else {
            panic!("a batch is segmented CTR");
        };
        assert_eq!((segment_bytes, rule), (CHUNK_BYTES, CounterRule::Low32));
        assert_eq!(counters.len(), 4 * 16, "one counter block per chunk");
        // Each segment, run as CTR from its counter, is that chunk's GCM ciphertext.
        let plaintext: Vec<u8> = (0..text_bytes).map(|i| (i * 13) as u8).collect();
        for (position, piece) in plaintext.chunks(CHUNK_BYTES).enumerate() {
            let counter = &counters[16 * position..16 * (position + 1)];
            let mut ours = piece.to_vec();
            parcrypt_modes::ctr::apply(cipher.as_ref(), Counter::new(counter, rule), &mut ours);
            let mut expected = piece.to_vec();
            let nonce = keys.nonce(7 + position as u64).unwrap();
            parcrypt_modes::gcm::seal(cipher.as_ref(), &nonce, &[], &mut expected).unwrap();
            assert!(ours == expected, "chunk {position}");
        }
        let GpuOperation::CtrSegments { counters, .. } = batch_ctr(&keys, 0, 0).unwrap() else {
            unreachable!()
        };
        assert!(counters.is_empty());
    }

    #[test]
    fn a_damaged_chunk_releases_nothing_from_it_on() {
        for engine in gpu_engines() {
            let gpu = GpuChunks::new(&engine).unwrap();
            let keys =
                MessageKeys::derive(Suite::Cobblestone128, &[9u8; 16], &[1; 24], b"").unwrap();
            let (plaintext, mut batch) = layout(6 * CHUNK_BYTES + 100);
            gpu.seal_batch(&keys, 0, &mut batch).unwrap();
            let mut damaged = batch.clone();
            damaged[2 * SEALED_CHUNK_BYTES + 5] ^= 1;
            damaged[4 * SEALED_CHUNK_BYTES + CHUNK_BYTES] ^= 1; // a tag byte
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

    #[test]
    fn auto_sends_a_batch_where_the_tune_table_says_to_a_trusted_device_and_seals_the_same() {
        use parcrypt_gpu::tuning::{Crossover, CrossoverPoint};
        let Ok(device) = parcrypt_gpu::OpenClDevice::open(0) else {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI installs PoCL, so OpenCL must work"
            );
            println!("SKIPPED: no OpenCL device");
            return;
        };
        let identity = GpuDevice::identity(&device);
        // Issue 31 finding 7: whatever the table says, `auto` sends AES only to a device whose
        // table lookups cannot leak the key through timing (PoCL, a CPU device, never).
        let trusted = device
            .aes_timing_leak(parcrypt_gpu::kernel_source::KernelOperation::Ctr)
            .is_none();
        let gcm: CipherSpec = "aes-128-gcm".parse().unwrap();
        let point = |bytes, cpu_seconds, gpu_seconds| CrossoverPoint {
            bytes,
            cpu_seconds,
            gpu_seconds,
        };
        // Made up: the GPU "wins" AES-128-GCM encryption from 64 KiB; decryption never.
        let table = parcrypt_gpu::TuneTable::new(
            "opencl",
            identity,
            GpuDevice::launch_geometry(&device),
            Vec::new(),
            vec![
                Crossover::new(
                    gcm,
                    Direction::Encrypt,
                    vec![point(1 << 10, 1.0, 2.0), point(64 << 10, 2.0, 1.0)],
                ),
                Crossover::new(gcm, Direction::Decrypt, vec![point(64 << 10, 1.0, 2.0)]),
            ],
        );
        let engine = Engine::auto_with_gpu(Some(2), Box::new(device), table).unwrap();
        let batcher = batcher_for(&engine);
        assert_eq!(batcher.name(), "auto");
        let auto = AutoChunks {
            engine: &engine,
            cpu: CpuChunks::new(&engine),
        };
        let seq = Engine::new(Backend::Seq, None).unwrap();
        let cpu = CpuChunks::new(&seq);
        for suite in Suite::ALL {
            let keys =
                MessageKeys::derive(suite, &vec![4u8; suite.key_bytes()], &[2; 24], b"").unwrap();
            for text_bytes in [100, 8 * CHUNK_BYTES + 9] {
                let (plaintext, batch) = layout(text_bytes);
                let to_gpu = auto
                    .gpu_for(&keys, Direction::Encrypt, batch.len())
                    .is_some();
                let expected_gpu =
                    trusted && suite == Suite::Cobblestone128 && batch.len() >= 64 << 10;
                assert_eq!(to_gpu, expected_gpu, "{suite} {text_bytes} bytes");
                assert!(auto
                    .gpu_for(&keys, Direction::Decrypt, batch.len())
                    .is_none());
                let mut expected = batch.clone();
                cpu.seal_batch(&keys, 5, &mut expected).unwrap();
                let mut sealed = batch.clone();
                batcher.seal_batch(&keys, 5, &mut sealed).unwrap();
                assert!(
                    sealed == expected,
                    "{suite} {text_bytes} bytes: sealed batches differ"
                );
                batcher.open_batch(&keys, 5, &mut sealed).unwrap();
                let texts: Vec<u8> = sealed
                    .chunks(SEALED_CHUNK_BYTES)
                    .flat_map(|chunk| chunk[..chunk.len() - TAG_BYTES].to_vec())
                    .collect();
                assert!(
                    texts == plaintext,
                    "{suite} {text_bytes} bytes: opened batch differs"
                );
            }
        }
    }
}
