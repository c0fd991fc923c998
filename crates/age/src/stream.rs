//! The payload: STREAM over ChaCha20-Poly1305, 64 KiB chunks, nonce = 11-byte big-endian
//! chunk counter || final flag. Chunks are independent given their index, so a batch of
//! them is sealed or opened in parallel on rayon's threads (every core).

use chacha20poly1305::aead::inout::InOutBuf;
use chacha20poly1305::aead::AeadInOut;
use chacha20poly1305::{ChaCha20Poly1305, KeyInit};
use hkdf::Hkdf;
use rayon::prelude::*;
use sha2::Sha256;
use zeroize::{Zeroize, Zeroizing};

use crate::keys::FileKey;

/// Plaintext bytes in a chunk (all but the final one hold exactly this many).
pub const CHUNK_BYTES: usize = 64 * 1024;
/// The Poly1305 tag after each chunk.
pub const TAG_BYTES: usize = 16;
/// A sealed full chunk.
pub const SEALED_CHUNK_BYTES: usize = CHUNK_BYTES + TAG_BYTES;
/// The random nonce at the start of the payload.
pub const NONCE_BYTES: usize = 16;
/// The most chunks sealed or opened in one parallel batch (4 MiB of plaintext); fewer on
/// fewer threads (see `Batch` in lib.rs).
pub(crate) const BATCH_CHUNKS: usize = 64;

/// The payload key, derived from the file key and the payload's nonce.
pub(crate) struct PayloadKey(ChaCha20Poly1305);

impl PayloadKey {
    pub(crate) fn new(file_key: &FileKey, nonce: &[u8; NONCE_BYTES]) -> PayloadKey {
        let mut key = Zeroizing::new([0u8; 32]);
        Hkdf::<Sha256>::new(Some(nonce), file_key.as_bytes())
            .expand(b"payload", key.as_mut())
            .expect("32 bytes is a valid HKDF-SHA-256 length");
        PayloadKey(ChaCha20Poly1305::new(&(*key).into()))
    }
}

fn chunk_nonce(index: u64, last: bool) -> chacha20poly1305::Nonce {
    let mut nonce = [0u8; 12];
    nonce[3..11].copy_from_slice(&index.to_be_bytes());
    nonce[11] = u8::from(last);
    nonce.into()
}

/// The sealed length of a batch of `plain_len` bytes of plaintext (one chunk at least).
pub(crate) fn sealed_len(plain_len: usize) -> usize {
    plain_len + plain_len.div_ceil(CHUNK_BYTES).max(1) * TAG_BYTES
}

/// Seals `plain` as chunks `first`, `first + 1`, ... into the start of `out` (at least
/// [`sealed_len`] bytes) and returns their length. With `final_batch`, the last chunk
/// (possibly short, or empty when `plain` is) carries the final flag; otherwise `plain` must
/// be whole chunks. Each chunk is encrypted from `plain` straight into `out` (no copy first)
/// and its tag written after it.
pub(crate) fn seal_into(
    key: &PayloadKey,
    first: u64,
    plain: &[u8],
    final_batch: bool,
    out: &mut [u8],
) -> usize {
    let chunks = plain.len().div_ceil(CHUNK_BYTES).max(1);
    debug_assert!(final_batch || plain.len().is_multiple_of(CHUNK_BYTES));
    let len = sealed_len(plain.len());
    let out = &mut out[..len];
    let seal_one = |(i, (sealed, plain)): (usize, (&mut [u8], &[u8]))| {
        let last = final_batch && i + 1 == chunks;
        let (body, tag) = sealed.split_at_mut(plain.len());
        let nonce = chunk_nonce(first + i as u64, last);
        let computed = key
            .0
            .encrypt_inout_detached(
                &nonce,
                b"",
                InOutBuf::new(plain, body).expect("a chunk and its body have one length"),
            )
            .expect("a chunk is far below ChaCha20-Poly1305's limit");
        tag.copy_from_slice(&computed);
    };
    if plain.is_empty() {
        seal_one((0, (out, &[])));
    } else {
        out.par_chunks_mut(SEALED_CHUNK_BYTES)
            .zip(plain.par_chunks(CHUNK_BYTES))
            .enumerate()
            .for_each(seal_one);
    }
    len
}

/// [`seal_into`] appending to a `Vec`.
#[cfg(test)]
pub(crate) fn seal(
    key: &PayloadKey,
    first: u64,
    plain: &[u8],
    final_batch: bool,
    out: &mut Vec<u8>,
) {
    let start = out.len();
    out.resize(start + sealed_len(plain.len()), 0);
    seal_into(key, first, plain, final_batch, &mut out[start..]);
}

/// Why a batch did not open: the chunks before `good` opened (their plaintext is in the
/// output), the rest did not.
pub(crate) struct OpenFailure {
    pub(crate) good: usize,
    /// The plaintext bytes of the chunks before `good`.
    pub(crate) released: usize,
    pub(crate) reason: String,
}

/// How a chunk authenticated.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Opened {
    NotFinal,
    Final,
    Failed,
}

/// Opens `sealed` as chunks `first`, `first + 1`, ... into `out` (replacing its content).
/// See [`open_into`].
pub(crate) fn open(
    key: &PayloadKey,
    first: u64,
    sealed: &[u8],
    at_end: bool,
    strict: bool,
    out: &mut Vec<u8>,
) -> Result<(), OpenFailure> {
    // The plaintext is shorter than the sealed bytes.
    out.clear();
    out.resize(sealed.len(), 0);
    match open_into(key, first, sealed, at_end, strict, out) {
        Ok(len) => {
            out.truncate(len);
            Ok(())
        }
        Err(failure) => {
            out.truncate(failure.released);
            Err(failure)
        }
    }
}

/// Opens `sealed` as chunks `first`, `first + 1`, ... into the start of `out` (at least as
/// long as the plaintext) and returns the plaintext's length; on a failure, the chunks before
/// the failing one are in `out` (`released` bytes), and nothing after them that this call
/// wrote. Each chunk's tag is checked over its ciphertext first, then the chunk is decrypted
/// from `sealed` straight into `out` (no copy first; nothing is written for a chunk that does
/// not authenticate).
///
/// `at_end`: the last piece of `sealed` is the last of the payload (it may be short; it may
/// be empty only when it is the payload's only chunk); otherwise `sealed` is whole chunks
/// with more after them.
///
/// `strict`: each chunk's final flag is the one its position implies (random access, where
/// the length is known). Otherwise a full chunk is tried both ways, as age's streaming reader
/// does, so that what is released before an error is exactly what age releases: a full chunk
/// marked final with data after it is released, then "data after the final chunk"; a payload
/// whose last full chunk is not marked final is released, then "no final chunk".
pub(crate) fn open_into(
    key: &PayloadKey,
    first: u64,
    sealed: &[u8],
    at_end: bool,
    strict: bool,
    out: &mut [u8],
) -> Result<usize, OpenFailure> {
    if sealed.is_empty() {
        return Err(OpenFailure {
            good: 0,
            released: 0,
            reason: if first == 0 {
                "no chunks after the nonce: the file is truncated".into()
            } else {
                "the payload ends without a final chunk: the file is truncated".into()
            },
        });
    }
    let chunks = sealed.len().div_ceil(SEALED_CHUNK_BYTES);
    let last_len = sealed.len() - (chunks - 1) * SEALED_CHUNK_BYTES;
    let last_index = first + chunks as u64 - 1;
    // A last piece that cannot be a final chunk fails after the chunks before it opened.
    let tail_problem = if at_end && last_len < TAG_BYTES {
        Some(format!(
            "chunk {last_index} is shorter than its tag: the file is truncated"
        ))
    } else if at_end && last_len == TAG_BYTES && last_index != 0 {
        Some("an empty final chunk after other chunks".to_string())
    } else {
        None
    };
    let (chunks, sealed) = if tail_problem.is_some() {
        (chunks - 1, &sealed[..(chunks - 1) * SEALED_CHUNK_BYTES])
    } else {
        (chunks, sealed)
    };
    let at_end = at_end && tail_problem.is_none();
    let plain_len = sealed.len() - chunks * TAG_BYTES;
    let out = &mut out[..plain_len];
    let open_one = |i: usize, plain: &mut [u8], sealed: &[u8]| -> Opened {
        let is_last = at_end && i + 1 == chunks;
        let (body, tag) = sealed.split_at(sealed.len() - TAG_BYTES);
        let tag = chacha20poly1305::Tag::try_from(tag).expect("16 bytes");
        let full = body.len() == CHUNK_BYTES;
        let tries: &[bool] = match (strict || !full, is_last) {
            (true, last) => {
                if last {
                    &[true]
                } else {
                    &[false]
                }
            }
            (false, true) => &[true, false],
            (false, false) => &[false, true],
        };
        for &last in tries {
            let nonce = chunk_nonce(first + i as u64, last);
            let buffer =
                InOutBuf::new(body, &mut *plain).expect("a chunk and its body have one length");
            // The tag is checked before anything is decrypted into `plain`.
            if key
                .0
                .decrypt_inout_detached(&nonce, b"", buffer, &tag)
                .is_ok()
            {
                return if last {
                    Opened::Final
                } else {
                    Opened::NotFinal
                };
            }
        }
        Opened::Failed
    };
    let results: Vec<Opened> = if chunks == 0 {
        Vec::new()
    } else if plain_len == 0 {
        vec![open_one(0, &mut [], sealed)]
    } else {
        out.par_chunks_mut(CHUNK_BYTES)
            .zip(sealed.par_chunks(SEALED_CHUNK_BYTES))
            .enumerate()
            .map(|(i, (plain, sealed))| open_one(i, plain, sealed))
            .collect()
    };
    for (i, result) in results.iter().enumerate() {
        let index = first + i as u64;
        let is_last = at_end && i + 1 == chunks;
        let failure = match (result, is_last) {
            (Opened::Failed, true) => Some((i, format!("the final chunk ({index}) does not authenticate: the file was altered or truncated"))),
            (Opened::Failed, false) => Some((i, format!("chunk {index} does not authenticate: the file was altered or truncated"))),
            (Opened::Final, false) => Some((i + 1, format!("data after the final chunk ({index})"))),
            (Opened::NotFinal, true) => Some((i + 1, "the payload ends without a final chunk: the file is truncated".into())),
            _ => None,
        };
        if let Some((good, reason)) = failure {
            let released = (good * CHUNK_BYTES).min(plain_len);
            // What opened after the failing chunk is not released: wiped.
            out[released..].zeroize();
            return Err(OpenFailure {
                good,
                released,
                reason,
            });
        }
    }
    match tail_problem {
        Some(reason) => Err(OpenFailure {
            good: chunks,
            released: plain_len,
            reason,
        }),
        None => Ok(plain_len),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_open_batches() {
        let key = PayloadKey::new(&FileKey::from_bytes([1; 16]), &[2; 16]);
        for len in [
            0,
            1,
            CHUNK_BYTES - 1,
            CHUNK_BYTES,
            CHUNK_BYTES + 1,
            3 * CHUNK_BYTES + 5,
        ] {
            // An empty final chunk is only valid as a payload's only chunk.
            let first = if len == 0 { 0 } else { 5 };
            let plain: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut sealed = Vec::new();
            seal(&key, first, &plain, true, &mut sealed);
            let chunks = len.div_ceil(CHUNK_BYTES).max(1);
            assert_eq!(sealed.len(), len + chunks * TAG_BYTES);
            let mut out = Vec::new();
            let opened = open(&key, first, &sealed, true, true, &mut out);
            assert!(
                opened.is_ok(),
                "{len}: {}",
                opened.err().map(|f| f.reason).unwrap_or_default()
            );
            assert_eq!(out, plain);
            // Wrong index, or not final: nothing authenticates.
            assert!(open(&key, first + 1, &sealed, true, false, &mut out).is_err());
            assert!(open(&key, first, &sealed, false, true, &mut out).is_err());
        }
    }
}
