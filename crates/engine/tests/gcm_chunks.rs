//! Batches of GCM chunks on a GPU (`parcrypt_engine::chunks`): every chunk equals the CPU's
//! GCM of it, a damaged chunk releases no plaintext from it on, and `auto` sends a batch to
//! a tuned device only where its table says so and the device's table AES cannot leak.
//!
//! Without a GPU the tests print SKIPPED and pass, unless `CI` is set for the OpenCL ones
//! (CI installs PoCL).

#[path = "support/gcm_batch.rs"]
mod gcm_batch;
#[path = "support/opencl.rs"]
#[allow(dead_code)] // only the device is needed here
mod opencl;

use gcm_batch::{gpu_engines, texts_of};
use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
use parcrypt_engine::chunks::{ChunkKey, GpuGcmChunks, HASH_SEGMENT_BYTES, TAG_BYTES};
use parcrypt_engine::Engine;
use parcrypt_gpu::tuning::{Crossover, CrossoverPoint};
use parcrypt_gpu::GpuDevice;
use parcrypt_modes::gcm::{GcmKey, NONCE_BYTES};
use parcrypt_modes::{CipherSpec, Direction};

/// Text bytes per chunk: an encrypted file's chunk size.
const CHUNK: usize = 16 << 10;

fn key_of(algorithm: Algorithm, byte: u8) -> Vec<u8> {
    vec![byte; algorithm.key_lengths().0.max(16)]
}

/// A batch in its layout of `text_bytes` in chunks of `chunk`
/// ([`gcm_batch::layout`]), its plaintext, and one nonce per chunk.
fn layout(text_bytes: usize, chunk: usize) -> (Vec<u8>, Vec<u8>, Vec<[u8; NONCE_BYTES]>) {
    let (plaintext, batch) = gcm_batch::layout(text_bytes, chunk);
    let count = text_bytes.div_ceil(chunk).max(1);
    let nonces = (0..count as u32)
        .map(|index| {
            let mut nonce = [3u8; NONCE_BYTES];
            nonce[8..].copy_from_slice(&(index * 5 + 1).to_be_bytes());
            nonce
        })
        .collect();
    (plaintext, batch, nonces)
}

/// Each chunk sealed on its own by the CPU's GCM: what a batch must equal.
fn sealed_on_cpu(
    algorithm: Algorithm,
    key: &[u8],
    nonces: &[[u8; NONCE_BYTES]],
    chunk: usize,
    batch: &[u8],
) -> Vec<u8> {
    let cipher = new_cipher(algorithm, Implementation::Fast, key).unwrap();
    let mut sealed = batch.to_vec();
    for (piece, nonce) in sealed.chunks_mut(chunk + TAG_BYTES).zip(nonces) {
        let (text, tag) = piece.split_at_mut(piece.len() - TAG_BYTES);
        let made = parcrypt_modes::gcm::seal(cipher.as_ref(), nonce, &[], text).unwrap();
        tag.copy_from_slice(&made);
    }
    sealed
}

fn gcm_key(algorithm: Algorithm, key: &[u8]) -> GcmKey {
    let cipher = new_cipher(algorithm, Implementation::Fast, key).unwrap();
    GcmKey::new(cipher.as_ref()).unwrap()
}

#[test]
fn gpu_batches_are_gcm_per_chunk_and_open_back() {
    for engine in gpu_engines() {
        let gpu = GpuGcmChunks::new(&engine).expect("a GPU engine has a device");
        for algorithm in [Algorithm::Aes128, Algorithm::Aes256, Algorithm::Rc6_128] {
            let key = key_of(algorithm, 9);
            let gcm = gcm_key(algorithm, &key);
            let chunk_key = ChunkKey::new(algorithm, &key, &gcm).unwrap();
            for (chunk, text_bytes) in [
                (CHUNK, 0),
                (CHUNK, 1),
                (CHUNK, 17),
                (CHUNK, CHUNK),
                (CHUNK, CHUNK + 1),
                (CHUNK, 5 * CHUNK + 1234),
                (CHUNK, 2 * CHUNK + HASH_SEGMENT_BYTES + 5),
                (CHUNK, 3 * CHUNK + 3 * HASH_SEGMENT_BYTES),
                // A chunk size the GHASH segment does not divide: shorter segments.
                (16_000, 3 * 16_000 + 77),
            ] {
                let context = format!("{} {algorithm} {chunk}/{text_bytes}", engine.backend());
                let (plaintext, batch, nonces) = layout(text_bytes, chunk);
                let expected = sealed_on_cpu(algorithm, &key, &nonces, chunk, &batch);
                let mut sealed = batch.clone();
                gpu.seal(&chunk_key, &nonces, chunk, &mut sealed).unwrap();
                assert!(sealed == expected, "{context}: sealed batches differ");

                let mut opened = sealed.clone();
                let failed = gpu.open(&chunk_key, &nonces, chunk, &mut opened).unwrap();
                assert_eq!(failed, None, "{context}");
                assert!(
                    texts_of(&opened, chunk) == plaintext,
                    "{context}: opened text"
                );
            }
        }
    }
}

#[test]
fn a_damaged_chunk_releases_nothing_from_it_on() {
    for engine in gpu_engines() {
        let gpu = GpuGcmChunks::new(&engine).unwrap();
        let key = [9u8; 16];
        let gcm = gcm_key(Algorithm::Aes128, &key);
        let chunk_key = ChunkKey::new(Algorithm::Aes128, &key, &gcm).unwrap();
        let (plaintext, mut batch, nonces) = layout(6 * CHUNK + 100, CHUNK);
        gpu.seal(&chunk_key, &nonces, CHUNK, &mut batch).unwrap();
        let sealed = CHUNK + TAG_BYTES;
        let mut expected = batch.clone();
        expected[2 * sealed + 5] ^= 1;
        expected[4 * sealed + CHUNK] ^= 1; // a tag byte
        let mut damaged = expected.clone();
        let failed = gpu.open(&chunk_key, &nonces, CHUNK, &mut damaged).unwrap();
        assert_eq!(failed, Some(2));
        assert_eq!(&damaged[..CHUNK], &plaintext[..CHUNK]);
        assert_eq!(
            &damaged[sealed..sealed + CHUNK],
            &plaintext[CHUNK..2 * CHUNK]
        );
        // From the failed chunk on: the ciphertext as it came, never plaintext.
        assert!(damaged[2 * sealed..] == expected[2 * sealed..]);
        // The same batch under other nonces fails at its first chunk and decrypts nothing.
        let mut misplaced = batch.clone();
        let shifted: Vec<_> = nonces.iter().skip(1).chain(&nonces[..1]).copied().collect();
        let failed = gpu
            .open(&chunk_key, &shifted, CHUNK, &mut misplaced)
            .unwrap();
        assert_eq!(failed, Some(0));
        assert!(misplaced == batch, "nothing decrypted");
    }
}

#[test]
fn auto_sends_a_batch_where_the_tune_table_says_to_a_trusted_device() {
    let Some(device) = opencl::open_first_device() else {
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
    assert!(
        GpuGcmChunks::new(&engine).is_none(),
        "auto has no GPU of its own"
    );
    for algorithm in [Algorithm::Aes128, Algorithm::Aes256] {
        let key = key_of(algorithm, 4);
        let gcm = gcm_key(algorithm, &key);
        let chunk_key = ChunkKey::new(algorithm, &key, &gcm).unwrap();
        for text_bytes in [100, 8 * CHUNK + 9] {
            let (plaintext, batch, nonces) = layout(text_bytes, CHUNK);
            let chosen =
                GpuGcmChunks::for_batch(&engine, algorithm, Direction::Encrypt, batch.len());
            let expected_gpu = trusted && algorithm == Algorithm::Aes128 && batch.len() >= 64 << 10;
            assert_eq!(
                chosen.is_some(),
                expected_gpu,
                "{algorithm} {text_bytes} bytes"
            );
            assert!(
                GpuGcmChunks::for_batch(&engine, algorithm, Direction::Decrypt, batch.len())
                    .is_none()
            );
            if let Some(gpu) = chosen {
                let mut sealed = batch.clone();
                gpu.seal(&chunk_key, &nonces, CHUNK, &mut sealed).unwrap();
                let expected = sealed_on_cpu(algorithm, &key, &nonces, CHUNK, &batch);
                assert!(sealed == expected, "{algorithm} {text_bytes} bytes");
                assert_eq!(
                    gpu.open(&chunk_key, &nonces, CHUNK, &mut sealed).unwrap(),
                    None
                );
                assert!(texts_of(&sealed, CHUNK) == plaintext);
            }
        }
    }
}
