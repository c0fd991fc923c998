//! Many AES-GCM messages ("chunks") under one key, sealed and opened in batches on the
//! engine's GPU: what an encrypted file's chunked body needs (the `parcrypt-format` crate's
//! GPU batcher is a thin layer over this module).
//!
//! A *batch* is chunks laid out back to back, each its text followed by its 16-byte tag:
//! every chunk but the last has `chunk_bytes` of text, the last has at most that many (it
//! may be empty). Every chunk has its own 96-bit nonce and no additional data, so its tag
//! needs only the GHASH sum of its ciphertext. The device gives that sum as partial sums
//! of short segments, the host joins each chunk's partial sums and finishes its tag with
//! the key's [`GcmKey`]. Opening hashes every chunk and checks every tag *before* any chunk
//! is decrypted, so the device never produces plaintext that was not authenticated.
//!
//! CTR runs a whole batch in one device call ([`GpuOperation::CtrSegments`]): the chunk
//! texts are segments of `chunk_bytes`, each from its own nonce's first text counter. So a
//! batch costs two device calls (CTR, GHASH) whatever its number of chunks.

use std::sync::{Mutex, PoisonError};

use parcrypt_ciphers::{new_cipher, Algorithm, BlockCipher, Implementation};
use parcrypt_gpu::ghash::join_partials_by;
use parcrypt_gpu::{GpuDevice, GpuError, GpuOperation, KeyMaterial};
use parcrypt_modes::ctr::CounterRule;
use parcrypt_modes::gcm::{nonce_text_counter, GcmAccumulator, GcmKey, GcmMessage, NONCE_BYTES};
use parcrypt_modes::{CipherSpec, Direction, Mode};
use zeroize::Zeroizing;

use crate::{Engine, JobError};

/// Bytes of a chunk's tag, after its text in a batch.
pub const TAG_BYTES: usize = 16;

/// The longest GHASH segment the device sums on one thread. Shorter segments give the
/// device more threads; the host joins each chunk's sums. On an H100 the GHASH call over a
/// 4 MiB batch of 16 KiB chunks took 0.89 ms with 4 KiB segments against 2.29 ms with
/// 16 KiB ones (`cargo run --release -p parcrypt-gpu --example chunk_calls -- cuda`).
pub const HASH_SEGMENT_BYTES: usize = 4096;

/// The key of every chunk of a batch, in the forms a batch needs: the device's key
/// material, and on the host the cipher (for E_K(J0)) and the [`GcmKey`] (H for the
/// device, and the tags).
pub struct ChunkKey<'k> {
    material: KeyMaterial,
    cipher: Box<dyn BlockCipher>,
    gcm_key: &'k GcmKey,
}

impl<'k> ChunkKey<'k> {
    /// The chunk key for `key` of `algorithm` (a 128-bit block cipher), whose GCM key
    /// `gcm_key` the caller made once for all its messages.
    pub fn new(algorithm: Algorithm, key: &[u8], gcm_key: &'k GcmKey) -> Result<Self, JobError> {
        let material = KeyMaterial::new(algorithm, key).map_err(JobError::Gpu)?;
        let cipher = new_cipher(algorithm, Implementation::Fast, key)?;
        Ok(ChunkKey {
            material,
            cipher,
            gcm_key,
        })
    }
}

/// Seals and opens batches of GCM chunks on one GPU (see the [module](self)).
pub struct GpuGcmChunks<'e> {
    gpu: &'e dyn GpuDevice,
    /// The chunk texts of a batch, back to back: one buffer for every batch, so that a
    /// batch does not fault in fresh pages (a new 64 MiB buffer took 73 ms to fill on an
    /// H100's host); wiped when this is dropped.
    texts: Mutex<Zeroizing<Vec<u8>>>,
}

impl<'e> GpuGcmChunks<'e> {
    /// The batches of a GPU backend's engine; `None` when `engine` has no GPU of its own.
    pub fn new(engine: &'e Engine) -> Option<Self> {
        engine.gpu().map(Self::on)
    }

    /// Where `engine` runs a batch of `bytes` (texts and tags) of `algorithm`'s GCM chunks
    /// in `direction`: a GPU backend's device, or under `auto` a tuned GPU where its tune
    /// table says an AES-GCM job of that size finishes there first and the device's table
    /// AES cannot leak the key ([`Engine::gpu_for`]); `None` means the CPU.
    pub fn for_batch(
        engine: &'e Engine,
        algorithm: Algorithm,
        direction: Direction,
        bytes: usize,
    ) -> Option<Self> {
        let spec = CipherSpec {
            algorithm,
            mode: Mode::Gcm,
        };
        engine.gpu_for(spec, direction, bytes).map(Self::on)
    }

    fn on(gpu: &'e dyn GpuDevice) -> Self {
        GpuGcmChunks {
            gpu,
            texts: Mutex::new(Zeroizing::new(Vec::new())),
        }
    }

    /// The GPU API the batches run on (`opencl`, `cuda`, `hip`).
    pub fn api_name(&self) -> String {
        self.gpu.api().to_string()
    }

    /// Encrypts every chunk of `batch` in place and writes its tag; chunk `i` of the batch
    /// takes `nonces[i]`, and every chunk but the last has `chunk_bytes` of text. A batch
    /// that does not hold exactly `nonces.len()` chunks so laid out is refused untouched.
    pub fn seal(
        &self,
        key: &ChunkKey<'_>,
        nonces: &[[u8; NONCE_BYTES]],
        chunk_bytes: usize,
        batch: &mut [u8],
    ) -> Result<(), JobError> {
        check_layout(nonces.len(), chunk_bytes, batch.len())?;
        let count = nonces.len();
        let mut texts = self.texts.lock().unwrap_or_else(PoisonError::into_inner);
        gather_texts(batch, chunk_bytes, &mut texts);
        self.apply_ctr(key, nonces, chunk_bytes, &mut texts, count)?;
        scatter_texts(&texts, batch, chunk_bytes, count);
        let mut chunks = batch.chunks_mut(chunk_bytes + TAG_BYTES);
        let gcm_key = key.gcm_key;
        self.for_each_hashed_chunk(key, nonces, chunk_bytes, &texts, |_, message, sum| {
            if let Some(chunk) = chunks.next() {
                let tag_start = chunk.len() - TAG_BYTES;
                chunk[tag_start..].copy_from_slice(&gcm_key.tag(message, sum));
            }
        })
    }

    /// Authenticates every chunk of `batch` (laid out as [`GpuGcmChunks::seal`] says), then
    /// decrypts in place the chunks before the first one whose tag does not match. Returns
    /// `None` when every chunk opened, else the position in the batch of the first failed
    /// chunk: the chunks before it hold authenticated plaintext, and from it on the batch
    /// still holds the ciphertext (no unauthenticated plaintext is ever written).
    pub fn open(
        &self,
        key: &ChunkKey<'_>,
        nonces: &[[u8; NONCE_BYTES]],
        chunk_bytes: usize,
        batch: &mut [u8],
    ) -> Result<Option<usize>, JobError> {
        check_layout(nonces.len(), chunk_bytes, batch.len())?;
        let count = nonces.len();
        let mut failed = None;
        let mut texts = self.texts.lock().unwrap_or_else(PoisonError::into_inner);
        gather_texts(batch, chunk_bytes, &mut texts);
        let mut chunks = batch.chunks(chunk_bytes + TAG_BYTES);
        let gcm_key = key.gcm_key;
        self.for_each_hashed_chunk(
            key,
            nonces,
            chunk_bytes,
            &texts,
            |position, message, sum| {
                let received = chunks.next().map(|chunk| &chunk[chunk.len() - TAG_BYTES..]);
                // A constant-time comparison (`GcmKey::verify`).
                let verified =
                    received.is_some_and(|tag| gcm_key.verify(message, sum, tag).is_ok());
                if !verified && failed.is_none() {
                    failed = Some(position);
                }
            },
        )?;
        let authenticated = failed.unwrap_or(count);
        self.apply_ctr(key, nonces, chunk_bytes, &mut texts, authenticated)?;
        scatter_texts(&texts, batch, chunk_bytes, authenticated);
        Ok(failed)
    }

    /// CTR over the texts of chunks `0..count` (back to back in `texts`), each from its own
    /// nonce's first text counter, in one device call.
    fn apply_ctr(
        &self,
        key: &ChunkKey<'_>,
        nonces: &[[u8; NONCE_BYTES]],
        chunk_bytes: usize,
        texts: &mut [u8],
        count: usize,
    ) -> Result<(), JobError> {
        let length = (count * chunk_bytes).min(texts.len());
        let texts = &mut texts[..length];
        if texts.is_empty() {
            return Ok(());
        }
        let operation = batch_ctr(nonces, chunk_bytes, texts.len());
        self.gpu
            .process(&key.material, &operation, texts)
            .map_err(JobError::Gpu)
    }

    /// Runs `finish(position, message, sum)` for each chunk once the device has hashed the
    /// ciphertexts in `texts`: the chunk's message (its nonce's E_K(J0)) and its GHASH sum,
    /// from which the key makes or checks the tag.
    fn for_each_hashed_chunk<F>(
        &self,
        key: &ChunkKey<'_>,
        nonces: &[[u8; NONCE_BYTES]],
        chunk_bytes: usize,
        texts: &[u8],
        mut finish: F,
    ) -> Result<(), JobError>
    where
        F: FnMut(usize, &GcmMessage, &GcmAccumulator),
    {
        let segment = hash_segment_bytes(chunk_bytes);
        let gcm_key = key.gcm_key;
        let partials = self
            .gpu
            .ghash_segments(gcm_key.hash_subkey(), texts, segment)
            .map_err(JobError::Gpu)?;
        let per_chunk = chunk_bytes / segment;
        // H to the power of a segment's blocks, made once for the batch's chunks.
        let power = gcm_key.ghash().power((segment / 16) as u64);
        for (position, nonce) in nonces.iter().enumerate() {
            let start = (position * chunk_bytes).min(texts.len());
            let text_bytes = (texts.len() - start).min(chunk_bytes);
            // The chunk's segments (an empty final chunk has none: its sum is zero).
            let first = position * per_chunk;
            let segments = partials
                .get(first..first + text_bytes.div_ceil(segment))
                .ok_or_else(|| {
                    JobError::Gpu(GpuError::InvalidInput(
                        "the device returned too few GHASH sums".to_string(),
                    ))
                })?;
            let partial = join_partials_by(gcm_key.ghash(), &power, segments, segment, text_bytes);
            let message = gcm_key.message_with_nonce(key.cipher.as_ref(), nonce);
            let mut accumulator = GcmAccumulator::default();
            accumulator.append(gcm_key, partial, text_bytes as u64)?;
            finish(position, &message, &accumulator);
        }
        Ok(())
    }
}

/// The GHASH segment for chunks of `chunk_bytes`: [`HASH_SEGMENT_BYTES`] where it divides
/// a chunk, else the largest common divisor (a whole number of blocks, since both are).
fn hash_segment_bytes(chunk_bytes: usize) -> usize {
    let (mut a, mut b) = (chunk_bytes, HASH_SEGMENT_BYTES);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Refuses a batch that is not `count` chunks of `chunk_bytes` (the last one shorter or
/// empty), each followed by its tag, or chunks that are not whole blocks.
fn check_layout(count: usize, chunk_bytes: usize, batch_bytes: usize) -> Result<(), JobError> {
    let refuse = |reason: String| Err(JobError::Gpu(GpuError::InvalidInput(reason)));
    if chunk_bytes == 0 || !chunk_bytes.is_multiple_of(16) {
        return refuse(format!(
            "GCM chunks of {chunk_bytes} bytes: a chunk must be a positive number of 16-byte blocks"
        ));
    }
    if u64::try_from(chunk_bytes).map_or(true, |bytes| bytes > parcrypt_modes::gcm::MAX_TEXT_BYTES)
    {
        return refuse(format!(
            "GCM chunks of {chunk_bytes} bytes exceed GCM's limit"
        ));
    }
    let sealed = chunk_bytes + TAG_BYTES;
    let least = count.saturating_sub(1) * sealed + TAG_BYTES;
    let most = count * sealed;
    if count == 0 || batch_bytes < least || batch_bytes > most {
        return refuse(format!(
            "a batch of {batch_bytes} bytes is not {count} GCM chunks of {chunk_bytes} bytes with their tags"
        ));
    }
    Ok(())
}

/// The texts of a batch's chunks, back to back (tags left out), into `texts` (replacing
/// what it held): the layout in which one GHASH call gives each chunk its own segments.
fn gather_texts(batch: &[u8], chunk_bytes: usize, texts: &mut Zeroizing<Vec<u8>>) {
    if texts.capacity() < batch.len() {
        // Growing the vector would free its old buffer unwiped: replace it (the old one is
        // wiped as it drops).
        *texts = Zeroizing::new(Vec::with_capacity(batch.len()));
    }
    texts.clear();
    for chunk in batch.chunks(chunk_bytes + TAG_BYTES) {
        texts.extend_from_slice(&chunk[..chunk.len() - TAG_BYTES]);
    }
}

/// The CTR part of AES-GCM for the texts of consecutive chunks, `text_bytes` in all, as one
/// operation: segments of `chunk_bytes`, each from its chunk's first text counter (J0 + 1
/// under GCM's inc32); an empty final chunk has no segment.
fn batch_ctr(nonces: &[[u8; NONCE_BYTES]], chunk_bytes: usize, text_bytes: usize) -> GpuOperation {
    let segments = text_bytes.div_ceil(chunk_bytes);
    let mut counters = Vec::with_capacity(16 * segments);
    for nonce in nonces.iter().take(segments) {
        let mut counter = [0u8; 16];
        nonce_text_counter(nonce).write(&mut counter);
        counters.extend_from_slice(&counter);
    }
    GpuOperation::CtrSegments {
        counters,
        segment_bytes: chunk_bytes,
        rule: CounterRule::Low32,
    }
}

/// Copies the texts of chunks `0..count` back into their places in the batch.
fn scatter_texts(texts: &[u8], batch: &mut [u8], chunk_bytes: usize, count: usize) {
    for (chunk, text) in batch
        .chunks_mut(chunk_bytes + TAG_BYTES)
        .zip(texts.chunks(chunk_bytes))
        .take(count)
    {
        chunk[..text.len()].copy_from_slice(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parcrypt_modes::ctr::Counter;

    /// Text bytes per chunk in these tests: an encrypted file's chunk size.
    const CHUNK: usize = 16 << 10;

    #[test]
    fn a_batch_is_one_ctr_operation_of_chunk_segments() {
        let cipher = new_cipher(Algorithm::Aes128, Implementation::Fast, &[9u8; 16]).unwrap();
        let text_bytes = 3 * CHUNK + 100;
        let plaintext: Vec<u8> = (0..text_bytes).map(|i| (i * 7 + i / 5000) as u8).collect();
        let nonces: Vec<[u8; NONCE_BYTES]> = (0..4u8).map(|i| [i + 1; NONCE_BYTES]).collect();
        let GpuOperation::CtrSegments {
            counters,
            segment_bytes,
            rule,
        } = batch_ctr(&nonces, CHUNK, text_bytes)
        else {
            panic!("a batch is segmented CTR");
        };
        assert_eq!((segment_bytes, rule), (CHUNK, CounterRule::Low32));
        assert_eq!(counters.len(), 4 * 16, "one counter block per chunk");
        // Each segment, run as CTR from its counter, is that chunk's GCM ciphertext.
        for (position, piece) in plaintext.chunks(CHUNK).enumerate() {
            let counter = &counters[16 * position..16 * (position + 1)];
            let mut ours = piece.to_vec();
            parcrypt_modes::ctr::apply(cipher.as_ref(), Counter::new(counter, rule), &mut ours);
            let mut expected = piece.to_vec();
            parcrypt_modes::gcm::seal(cipher.as_ref(), &nonces[position], &[], &mut expected)
                .unwrap();
            assert!(ours == expected, "chunk {position}");
        }
        let GpuOperation::CtrSegments { counters, .. } = batch_ctr(&nonces, CHUNK, 0) else {
            unreachable!()
        };
        assert!(counters.is_empty());
    }

    #[test]
    fn a_batch_that_does_not_match_its_nonces_is_refused() {
        for (count, chunk, bytes) in [
            (0, CHUNK, 0),
            (1, CHUNK, 15),
            (1, CHUNK, CHUNK + TAG_BYTES + 1),
            (2, CHUNK, CHUNK + TAG_BYTES - 1),
            (3, CHUNK, CHUNK + TAG_BYTES + 20),
            (1, 0, TAG_BYTES),
            (1, 100, 100 + TAG_BYTES),
        ] {
            assert!(
                check_layout(count, chunk, bytes).is_err(),
                "{count} {chunk} {bytes}"
            );
        }
        for (count, chunk, bytes) in [
            (1, CHUNK, TAG_BYTES),
            (1, CHUNK, CHUNK + TAG_BYTES),
            (2, CHUNK, CHUNK + 2 * TAG_BYTES),
            (3, CHUNK, 3 * (CHUNK + TAG_BYTES)),
        ] {
            assert!(
                check_layout(count, chunk, bytes).is_ok(),
                "{count} {chunk} {bytes}"
            );
        }
        assert_eq!(hash_segment_bytes(CHUNK), HASH_SEGMENT_BYTES);
        assert_eq!(hash_segment_bytes(16000), 128);
        assert_eq!(hash_segment_bytes(16), 16);
    }
}
