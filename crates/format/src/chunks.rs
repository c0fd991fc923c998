//! Sealing and opening batches of chunks: the one call a backend implements.
//!
//! A *batch* is a run of consecutive chunks of one message laid out exactly as in the file:
//! each full chunk is 16 KiB of text followed by its 16-byte tag, and the batch may end with
//! the message's short final chunk (its text, then its tag). Chunks are independent AES-GCM
//! messages, so a backend is free to process them in any order and in parallel: the CPU
//! backend here spreads whole chunks over the engine's threads, and a GPU backend can run one
//! kernel that does CTR and GHASH for every chunk of the batch at once.

use std::borrow::Cow;

use parcrypt_ciphers::{new_cipher, BlockCipher, Implementation};
use parcrypt_engine::Engine;
use parcrypt_modes::gcm::GcmKey;
use zeroize::Zeroize;

use crate::cobblestone::{MessageKeys, NONCE_BYTES, SEALED_CHUNK_BYTES, TAG_BYTES};
use crate::error::{FormatError, Result};

/// Chunks per batch by default: 4 MiB of plaintext. Backends say what suits them best
/// ([`ChunkBatcher::preferred_batch_chunks`]).
pub const DEFAULT_BATCH_CHUNKS: usize = 256;

/// Seals and opens batches of chunks (see the module documentation for the layout).
pub trait ChunkBatcher: Send + Sync {
    /// A short name for reports (`seq`, `pool`, `cuda`, ...).
    fn name(&self) -> String;

    /// Encrypts every chunk of `batch` in place and writes its tag; the first chunk of the
    /// batch is chunk `first_chunk` of the message.
    fn seal_batch(&self, keys: &MessageKeys, first_chunk: u64, batch: &mut [u8]) -> Result<()>;

    /// How many chunks a batch should hold to keep this backend busy: the streaming
    /// pipeline reads and writes batches of this size.
    fn preferred_batch_chunks(&self) -> usize {
        DEFAULT_BATCH_CHUNKS
    }

    /// Authenticates and decrypts every chunk of `batch` in place. On failure returns the
    /// lowest failed chunk as [`FormatError::DamagedChunk`]; the chunks before it hold
    /// authenticated plaintext, and every byte from the failed chunk on is zeroed, so no
    /// unauthenticated plaintext outlives the call.
    fn open_batch(&self, keys: &MessageKeys, first_chunk: u64, batch: &mut [u8]) -> Result<()>;
}

/// Checks that a batch is whole chunks with at most one short chunk at its end, and returns
/// how many chunks it holds.
pub fn batch_chunks(first_chunk: u64, batch: &[u8]) -> Result<u64, FormatError> {
    let full = (batch.len() / SEALED_CHUNK_BYTES) as u64;
    let tail = batch.len() % SEALED_CHUNK_BYTES;
    if tail != 0 && tail < TAG_BYTES {
        return Err(FormatError::TruncatedChunk {
            index: first_chunk + full,
            bytes: tail,
        });
    }
    let chunks = full + u64::from(tail != 0);
    if chunks > 0
        && first_chunk
            .checked_add(chunks - 1)
            .is_none_or(|last| last >= crate::cobblestone::MAX_CHUNKS)
    {
        return Err(FormatError::TooLong);
    }
    Ok(chunks)
}

/// Zeroes `batch` (whose first chunk is chunk `first_chunk` of the message) from chunk
/// `index` on and names that chunk as damaged: what every backend's `open_batch` does on a
/// failed tag, so that no unauthenticated plaintext outlives the call.
pub fn damaged_from(batch: &mut [u8], first_chunk: u64, index: u64) -> FormatError {
    let from = ((index - first_chunk) as usize)
        .saturating_mul(SEALED_CHUNK_BYTES)
        .min(batch.len());
    // A whole chunk, or the short final chunk that ends the batch.
    let sealed = (batch.len() - from).min(SEALED_CHUNK_BYTES);
    batch[from..].zeroize();
    FormatError::DamagedChunk {
        index,
        bytes: sealed.saturating_sub(TAG_BYTES),
    }
}

/// One message's AES-GCM state for many chunks on the CPU: the key schedule, and the
/// message's [`GcmKey`] (H and its powers, made once per message by [`MessageKeys`]) shared
/// by every chunk, since all chunks use the same key and differ only in the nonce. Per chunk
/// only J0 and E_K(J0) are computed. Output equals SP 800-38D GCM with a 96-bit IV and no
/// AAD; the tests check that against `parcrypt_modes::gcm`.
pub struct ChunkCipher<'k> {
    cipher: Box<dyn BlockCipher>,
    /// The message's GCM key, or where `implementation` limits the kernels
    /// ([`Implementation::Limited`]) one made under that ceiling from `cipher`.
    key: Cow<'k, GcmKey>,
}

impl<'k> ChunkCipher<'k> {
    /// The chunk cipher of `keys`'s message, running `implementation` of its block cipher.
    pub fn new(keys: &'k MessageKeys, implementation: Implementation) -> Result<Self, FormatError> {
        let cipher = new_cipher(keys.suite().algorithm(), implementation, keys.key())
            .map_err(|error| FormatError::Backend(error.to_string()))?;
        let key = match cipher.kernel_ceiling() {
            None => Cow::Borrowed(keys.gcm_key()),
            // The message's key chose its GCM kernel and GHASH with no ceiling.
            Some(_) => Cow::Owned(
                GcmKey::new(cipher.as_ref())
                    .map_err(|error| FormatError::Backend(error.to_string()))?,
            ),
        };
        Ok(ChunkCipher { cipher, key })
    }

    /// Encrypts `text` with `nonce` and returns the tag.
    pub fn seal(&self, nonce: &[u8; NONCE_BYTES], text: &mut [u8]) -> [u8; TAG_BYTES] {
        self.key
            .seal(self.cipher.as_ref(), nonce, &[], text)
            .expect("a 96-bit nonce and a chunk are within GCM's limits")
    }

    /// Checks `tag` over the ciphertext `text` first and decrypts only if it matches, so
    /// unauthenticated plaintext never exists; a mismatch leaves `text` untouched.
    pub fn open(&self, nonce: &[u8; NONCE_BYTES], text: &mut [u8], tag: &[u8]) -> bool {
        self.key
            .open(self.cipher.as_ref(), nonce, &[], text, tag)
            .is_ok()
    }
}

/// The CPU backend: whole chunks spread over the engine's threads (`seq`, `threads`,
/// `pool`, `auto`).
pub struct CpuChunks<'e> {
    engine: &'e Engine,
    implementation: Implementation,
}

impl<'e> CpuChunks<'e> {
    /// Chunks sealed and opened on `engine`'s CPU backend (its threads split each batch).
    pub fn new(engine: &'e Engine) -> Self {
        CpuChunks {
            engine,
            implementation: Implementation::Fast,
        }
    }

    /// Uses the portable table AES (the GPU kernels' CPU twin) instead of hardware AES.
    pub fn with_implementation(engine: &'e Engine, implementation: Implementation) -> Self {
        CpuChunks {
            engine,
            implementation,
        }
    }

    /// Runs `work(cipher, nonce, text, tag)` over every chunk of `batch` on the engine and
    /// returns the lowest chunk index it reported as failed.
    fn for_each_chunk<F>(
        &self,
        keys: &MessageKeys,
        first_chunk: u64,
        batch: &mut [u8],
        work: F,
    ) -> Result<Option<u64>, FormatError>
    where
        F: Fn(&ChunkCipher, &[u8; NONCE_BYTES], &mut [u8], &mut [u8]) -> bool + Sync,
    {
        batch_chunks(first_chunk, batch)?;
        let implementation = self.implementation.with_ceiling(self.engine.kernels());
        let cipher = ChunkCipher::new(keys, implementation)?;
        let lengths = self.engine.plan(batch.len(), SEALED_CHUNK_BYTES, None);
        let failures = self.engine.run(batch, &lengths, |_, offset, range| {
            let first = first_chunk + (offset / SEALED_CHUNK_BYTES) as u64;
            let mut failed = None;
            for (index, chunk) in (first..).zip(range.chunks_mut(SEALED_CHUNK_BYTES)) {
                // `batch_chunks` checked every index against the limit.
                let done = keys.nonce(index).is_ok_and(|nonce| {
                    let (text, tag) = chunk.split_at_mut(chunk.len() - TAG_BYTES);
                    work(&cipher, &nonce, text, tag)
                });
                if !done && failed.is_none() {
                    failed = Some(index);
                }
            }
            failed
        });
        Ok(failures.into_iter().flatten().min())
    }
}

impl ChunkBatcher for CpuChunks<'_> {
    fn name(&self) -> String {
        self.engine.backend().name().to_string()
    }

    /// 32 chunks (512 KiB) per thread, so that every thread has several work items to
    /// steal, and at least 4 MiB: on few cores, three batches of 4 MiB stay in the L3
    /// cache between the reader, the cipher and the writer (measured on 2 cores: 4 MiB
    /// batches ran the in-memory pipeline at twice the speed of 16 MiB ones).
    fn preferred_batch_chunks(&self) -> usize {
        (self.engine.threads() * 32).clamp(DEFAULT_BATCH_CHUNKS, 4096)
    }

    fn seal_batch(&self, keys: &MessageKeys, first_chunk: u64, batch: &mut [u8]) -> Result<()> {
        self.for_each_chunk(keys, first_chunk, batch, |cipher, nonce, text, tag| {
            tag.copy_from_slice(&cipher.seal(nonce, text));
            true
        })?;
        Ok(())
    }

    fn open_batch(&self, keys: &MessageKeys, first_chunk: u64, batch: &mut [u8]) -> Result<()> {
        let failed =
            self.for_each_chunk(keys, first_chunk, batch, |cipher, nonce, text, tag| {
                cipher.open(nonce, text, tag)
            })?;
        match failed {
            None => Ok(()),
            // Chunks after the failed one may have been opened by other threads.
            Some(index) => Err(damaged_from(batch, first_chunk, index)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cobblestone::{Suite, CHUNK_BYTES};
    use crate::gcm_batch::{layout, EDGE_LENGTHS};
    use parcrypt_engine::Backend;

    #[test]
    fn chunk_cipher_is_gcm_with_a_shared_ghash_key() {
        for suite in Suite::ALL {
            let keys = MessageKeys::derive(suite, &vec![7u8; suite.key_bytes()], &[3; 24], b"ctx")
                .unwrap();
            let cipher = ChunkCipher::new(&keys, Implementation::Fast).unwrap();
            let reference =
                new_cipher(suite.algorithm(), Implementation::Fast, keys.key()).unwrap();
            for length in EDGE_LENGTHS
                .into_iter()
                .chain([CHUNK_BYTES - 1, CHUNK_BYTES])
            {
                let nonce = keys.nonce(length as u64).unwrap();
                let plaintext: Vec<u8> = (0..length).map(|i| (i * 31 + 5) as u8).collect();
                let mut ours = plaintext.clone();
                let tag = cipher.seal(&nonce, &mut ours);
                let mut expected = plaintext.clone();
                let expected_tag =
                    parcrypt_modes::gcm::seal(reference.as_ref(), &nonce, &[], &mut expected)
                        .unwrap();
                assert_eq!((&ours, tag), (&expected, expected_tag), "{suite} {length}");
                assert!(cipher.open(&nonce, &mut ours, &tag));
                assert_eq!(ours, plaintext);
                let mut bad_tag = tag;
                bad_tag[length % 16] ^= 1;
                let mut sealed = expected.clone();
                assert!(!cipher.open(&nonce, &mut sealed, &bad_tag));
                assert_eq!(
                    sealed, expected,
                    "a failed open must leave the ciphertext alone"
                );
            }
        }
    }

    #[test]
    fn an_engine_under_each_kernel_family_seals_the_same_batch() {
        use parcrypt_ciphers::KernelFamily;
        let keys = MessageKeys::derive(Suite::Cobblestone256, &[4u8; 32], &[2; 24], b"").unwrap();
        let (_, layout) = layout(9 * CHUNK_BYTES + 77, CHUNK_BYTES);
        let unlimited = Engine::new(Backend::Threads, Some(2)).unwrap();
        let mut expected = layout.clone();
        CpuChunks::new(&unlimited)
            .seal_batch(&keys, 0, &mut expected)
            .unwrap();
        for family in KernelFamily::supported() {
            let engine = Engine::builder()
                .backend(Backend::Threads)
                .threads(2)
                .kernels(family)
                .build()
                .unwrap();
            let batcher = CpuChunks::new(&engine);
            let cipher = ChunkCipher::new(&keys, Implementation::Limited(family)).unwrap();
            assert_eq!(cipher.key.kernel_ceiling(), Some(family));
            assert!(cipher.key.kernel().family() <= family, "{family}");
            let mut batch = layout.clone();
            batcher.seal_batch(&keys, 0, &mut batch).unwrap();
            assert_eq!(batch, expected, "{family}");
            batcher.open_batch(&keys, 0, &mut batch).unwrap();
        }
    }

    #[test]
    fn every_backend_seals_a_batch_the_same_and_a_bad_chunk_is_named() {
        let keys = MessageKeys::derive(Suite::Cobblestone128, &[9u8; 16], &[1; 24], b"").unwrap();
        let (plaintext, layout) = layout(37 * CHUNK_BYTES + 1234, CHUNK_BYTES);
        let mut results = Vec::new();
        for backend in Backend::CPU {
            let engine = Engine::new(backend, Some(3)).unwrap();
            let batcher = CpuChunks::new(&engine);
            let mut batch = layout.clone();
            batcher.seal_batch(&keys, 5, &mut batch).unwrap();
            results.push(batch);
        }
        assert!(results.windows(2).all(|pair| pair[0] == pair[1]));

        let engine = Engine::new(Backend::Pool, Some(3)).unwrap();
        let batcher = CpuChunks::new(&engine);
        let mut opened = results[0].clone();
        batcher.open_batch(&keys, 5, &mut opened).unwrap();
        for (position, piece) in plaintext.chunks(CHUNK_BYTES).enumerate() {
            let start = position * SEALED_CHUNK_BYTES;
            assert_eq!(&opened[start..start + piece.len()], piece);
        }
        let mut damaged = results[0].clone();
        damaged[20 * SEALED_CHUNK_BYTES + 3] ^= 0x40;
        damaged[30 * SEALED_CHUNK_BYTES + 3] ^= 0x40;
        let error = batcher.open_batch(&keys, 5, &mut damaged).unwrap_err();
        assert!(
            matches!(
                error,
                FormatError::DamagedChunk {
                    index: 25,
                    bytes: CHUNK_BYTES
                }
            ),
            "{error}"
        );
        // A damaged short final chunk names its range up to the end of the plaintext,
        // not a whole chunk's past it.
        let mut final_damaged = results[0].clone();
        final_damaged[37 * SEALED_CHUNK_BYTES + 3] ^= 0x40;
        let error = batcher
            .open_batch(&keys, 5, &mut final_damaged)
            .unwrap_err();
        assert!(
            matches!(
                error,
                FormatError::DamagedChunk {
                    index: 42,
                    bytes: 1234
                }
            ),
            "{error}"
        );
        let (start, end) = (42 * CHUNK_BYTES, 42 * CHUNK_BYTES + 1234);
        assert!(
            error
                .to_string()
                .contains(&format!("plaintext bytes {start}..{end})")),
            "{error}"
        );
        assert!(damaged[20 * SEALED_CHUNK_BYTES..].iter().all(|&b| b == 0));
        assert_eq!(&damaged[..CHUNK_BYTES], &plaintext[..CHUNK_BYTES]);
        // The same batch at another position fails at its first chunk.
        let mut misplaced = results[0].clone();
        assert!(matches!(
            batcher.open_batch(&keys, 6, &mut misplaced),
            Err(FormatError::DamagedChunk { index: 6, .. })
        ));
        // A tail shorter than a tag is refused, not a panic.
        let mut short = vec![0u8; SEALED_CHUNK_BYTES + 5];
        assert!(matches!(
            batcher.open_batch(&keys, 0, &mut short),
            Err(FormatError::TruncatedChunk { index: 1, bytes: 5 })
        ));
    }
}
