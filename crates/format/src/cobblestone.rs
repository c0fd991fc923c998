//! Cobblestone, c2sp.org/chunked-encryption (v1): the key derivation, the chunk geometry and
//! the per-chunk nonces.
//!
//! ```text
//! key || base nonce || commitment = HKDF-Expand-SHA-512(prk = input key,
//!     info = "c2sp.org/chunked-encryption@v1+" || aead || 0x00 || salt || context)
//! message = salt (24) || commitment (32) || chunk 0 || chunk 1 || ... || final chunk
//! chunk k = AES-GCM(key, nonce = base nonce XOR k (big-endian, 96 bits), aad = "", text)
//! ```
//!
//! Every chunk holds 16 KiB of plaintext except the final one, which is always shorter (and
//! may be empty): its shortness is what marks the end of the message, so a message cut at a
//! chunk boundary is detected as truncated.

use hmac::{Hmac, KeyInit, Mac};
use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
use parcrypt_modes::gcm::GcmKey;
use sha2::Sha512;
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, Zeroizing};

use crate::error::FormatError;

/// Plaintext bytes in every chunk but the final one.
pub const CHUNK_BYTES: usize = 16 * 1024;
/// The AES-GCM tag that follows each chunk's ciphertext.
pub const TAG_BYTES: usize = 16;
/// A full chunk as stored: ciphertext then tag.
pub const SEALED_CHUNK_BYTES: usize = CHUNK_BYTES + TAG_BYTES;
/// The random salt that starts every message.
pub const SALT_BYTES: usize = 24;
/// The key commitment that follows the salt.
pub const COMMITMENT_BYTES: usize = 32;
/// Salt and commitment: what precedes chunk 0 in a Cobblestone message.
pub const PREFIX_BYTES: usize = SALT_BYTES + COMMITMENT_BYTES;
/// The AES-GCM nonce.
pub const NONCE_BYTES: usize = 12;
/// Chunk indices must stay below this (the spec's 38-bit counter, 4 PiB of plaintext).
pub const MAX_CHUNKS: u64 = 1 << 38;

/// The HKDF-Expand info prefix of the specification.
const INFO_PREFIX: &[u8] = b"c2sp.org/chunked-encryption@v1+";

/// The two standard instantiations: SHA-512 for HKDF-Expand and AES-GCM for the chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Suite {
    /// AES-128-GCM, the default.
    #[default]
    Cobblestone128,
    /// AES-256-GCM.
    Cobblestone256,
}

impl Suite {
    /// Every suite, in the order of their identifiers.
    pub const ALL: [Suite; 2] = [Suite::Cobblestone128, Suite::Cobblestone256];

    /// The suite whose AEAD takes a key of this length.
    pub fn for_key_length(length: usize) -> Result<Suite, FormatError> {
        match length {
            16 => Ok(Suite::Cobblestone128),
            32 => Ok(Suite::Cobblestone256),
            other => Err(FormatError::KeyLength(other)),
        }
    }

    /// The AEAD's name in the IANA registry, as it enters the key derivation.
    pub fn aead_name(self) -> &'static str {
        match self {
            Suite::Cobblestone128 => "AEAD_AES_128_GCM",
            Suite::Cobblestone256 => "AEAD_AES_256_GCM",
        }
    }

    /// The suite's name in the Cobblestone specification.
    pub fn name(self) -> &'static str {
        match self {
            Suite::Cobblestone128 => "Cobblestone-128",
            Suite::Cobblestone256 => "Cobblestone-256",
        }
    }

    /// Input key, AEAD key: the same length.
    pub fn key_bytes(self) -> usize {
        match self {
            Suite::Cobblestone128 => 16,
            Suite::Cobblestone256 => 32,
        }
    }

    /// The block cipher under the suite's AEAD.
    pub fn algorithm(self) -> Algorithm {
        match self {
            Suite::Cobblestone128 => Algorithm::Aes128,
            Suite::Cobblestone256 => Algorithm::Aes256,
        }
    }

    /// Refuses an input key of the wrong length for this suite.
    pub fn check_key(self, key: &[u8]) -> Result<(), FormatError> {
        if key.len() == self.key_bytes() {
            Ok(())
        } else if key.len() == 16 || key.len() == 32 {
            Err(FormatError::KeySuiteMismatch {
                suite: self.name(),
                expected: self.key_bytes(),
                got: key.len(),
            })
        } else {
            Err(FormatError::KeyLength(key.len()))
        }
    }
}

impl std::fmt::Display for Suite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What one message is encrypted under: the AEAD key and base nonce derived from the input
/// key, salt and context, and the commitment that proves the input key was right. Wiped on
/// drop.
pub struct MessageKeys {
    suite: Suite,
    key: Zeroizing<Vec<u8>>,
    /// The chunks' GCM key (H and its powers): every chunk is a GCM message under the same
    /// key, so it is made once per message here rather than per chunk or batch.
    gcm_key: GcmKey,
    base_nonce: [u8; NONCE_BYTES],
    commitment: [u8; COMMITMENT_BYTES],
}

impl MessageKeys {
    /// Derives the message keys. `input_key` must be uniformly random (a random key or the
    /// output of a KDF) and as long as the suite's AEAD key.
    pub fn derive(
        suite: Suite,
        input_key: &[u8],
        salt: &[u8; SALT_BYTES],
        context: &[u8],
    ) -> Result<Self, FormatError> {
        suite.check_key(input_key)?;
        let key_bytes = suite.key_bytes();
        let mut okm = Zeroizing::new(vec![0u8; key_bytes + NONCE_BYTES + COMMITMENT_BYTES]);
        hkdf_expand_sha512(
            input_key,
            &[
                INFO_PREFIX,
                suite.aead_name().as_bytes(),
                &[0x00],
                salt,
                context,
            ],
            &mut okm,
        );
        let mut base_nonce = [0u8; NONCE_BYTES];
        base_nonce.copy_from_slice(&okm[key_bytes..key_bytes + NONCE_BYTES]);
        let mut commitment = [0u8; COMMITMENT_BYTES];
        commitment.copy_from_slice(&okm[key_bytes + NONCE_BYTES..]);
        let keys = Self::from_parts(suite, &okm[..key_bytes], &base_nonce, &commitment);
        base_nonce.zeroize();
        keys
    }

    /// The keys of a message from what [`MessageKeys::derive`] derived: the AEAD key, the
    /// base nonce and the commitment (for [`crate::parts::PartKeys`], which carries them to
    /// other processes without the input key).
    pub(crate) fn from_parts(
        suite: Suite,
        aead_key: &[u8],
        base_nonce: &[u8; NONCE_BYTES],
        commitment: &[u8; COMMITMENT_BYTES],
    ) -> Result<Self, FormatError> {
        suite.check_key(aead_key)?;
        let key = Zeroizing::new(aead_key.to_vec());
        let base_nonce = *base_nonce;
        let commitment = *commitment;
        let cipher = new_cipher(suite.algorithm(), Implementation::Fast, &key)
            .map_err(|error| FormatError::Backend(error.to_string()))?;
        let gcm_key = GcmKey::new(cipher.as_ref())
            .map_err(|error| FormatError::Backend(error.to_string()))?;
        Ok(MessageKeys {
            suite,
            key,
            gcm_key,
            base_nonce,
            commitment,
        })
    }

    /// The suite these keys are for.
    pub fn suite(&self) -> Suite {
        self.suite
    }

    /// The AEAD key (for backends that key their own cipher, such as a GPU).
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The chunks' GCM key, made once from [`MessageKeys::key`].
    pub fn gcm_key(&self) -> &GcmKey {
        &self.gcm_key
    }

    /// The nonce chunk counters are XORed into.
    pub fn base_nonce(&self) -> &[u8; NONCE_BYTES] {
        &self.base_nonce
    }

    /// The key commitment stored before chunk 0 and checked before any chunk is opened.
    pub fn commitment(&self) -> &[u8; COMMITMENT_BYTES] {
        &self.commitment
    }

    /// Compares a message's commitment with the derived one in constant time.
    pub fn check_commitment(&self, received: &[u8]) -> Result<(), FormatError> {
        if bool::from(self.commitment.as_slice().ct_eq(received)) {
            Ok(())
        } else {
            Err(FormatError::WrongKey)
        }
    }

    /// The nonce of chunk `index`: the base nonce XOR the index as a 96-bit big-endian
    /// integer. Indices at or past [`MAX_CHUNKS`] are refused.
    pub fn nonce(&self, index: u64) -> Result<[u8; NONCE_BYTES], FormatError> {
        if index >= MAX_CHUNKS {
            return Err(FormatError::TooLong);
        }
        let mut nonce = self.base_nonce;
        for (byte, counter) in nonce[NONCE_BYTES - 8..].iter_mut().zip(index.to_be_bytes()) {
            *byte ^= counter;
        }
        Ok(nonce)
    }
}

impl Drop for MessageKeys {
    fn drop(&mut self) {
        self.base_nonce.zeroize();
        self.commitment.zeroize();
    }
}

/// HKDF-Expand (RFC 5869 section 2.3) with HMAC-SHA-512, `info` given in pieces:
/// `T(i) = HMAC(prk, T(i-1) || info || i)`. Written out because Cobblestone expands straight
/// from the input key, which is shorter than the 64 bytes that the `hkdf` crate's
/// `from_prk` insists on; RFC 5869 asks for "at least HashLen" only for keys that come out
/// of HKDF-Extract, and the spec (and NIST SP 800-108) allow any uniformly random key.
fn hkdf_expand_sha512(prk: &[u8], info: &[&[u8]], out: &mut [u8]) {
    const HASH_BYTES: usize = 64;
    debug_assert!(out.len() <= 255 * HASH_BYTES);
    let mut previous = Zeroizing::new([0u8; HASH_BYTES]);
    for (index, piece) in out.chunks_mut(HASH_BYTES).enumerate() {
        let mut mac = <Hmac<Sha512> as KeyInit>::new_from_slice(prk)
            .expect("HMAC accepts keys of any length");
        if index > 0 {
            mac.update(previous.as_slice());
        }
        for part in info {
            mac.update(part);
        }
        mac.update(&[index as u8 + 1]);
        let mut block = mac.finalize().into_bytes();
        piece.copy_from_slice(&block[..piece.len()]);
        previous.copy_from_slice(&block);
        block.zeroize();
    }
}

/// How a message's chunks are laid out, computed from the length of its chunk area (what
/// follows the salt and commitment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Chunks, the final short one included.
    pub chunks: u64,
    /// Plaintext bytes.
    pub plaintext_bytes: u64,
}

impl Geometry {
    /// The geometry of a message of `plaintext_bytes`.
    pub fn for_plaintext(plaintext_bytes: u64) -> Result<Geometry, FormatError> {
        let chunks = plaintext_bytes / CHUNK_BYTES as u64 + 1;
        if chunks > MAX_CHUNKS {
            return Err(FormatError::TooLong);
        }
        Ok(Geometry {
            chunks,
            plaintext_bytes,
        })
    }

    /// The geometry that a chunk area of `sealed_bytes` must have, or why no message has
    /// that length (it does not end with a short final chunk of at least a tag).
    pub fn for_sealed(sealed_bytes: u64) -> Result<Geometry, FormatError> {
        let full = sealed_bytes / SEALED_CHUNK_BYTES as u64;
        let tail = (sealed_bytes % SEALED_CHUNK_BYTES as u64) as usize;
        if full >= MAX_CHUNKS {
            return Err(FormatError::TooLong);
        }
        match tail {
            0 => Err(FormatError::TruncatedAfter { chunks: full }),
            bytes if bytes < TAG_BYTES => Err(FormatError::TruncatedChunk { index: full, bytes }),
            _ => Ok(Geometry {
                chunks: full + 1,
                plaintext_bytes: full * CHUNK_BYTES as u64 + (tail - TAG_BYTES) as u64,
            }),
        }
    }

    /// Bytes of the chunk area.
    pub fn sealed_bytes(&self) -> u64 {
        self.plaintext_bytes + self.chunks * TAG_BYTES as u64
    }

    /// Where chunk `index` starts in the chunk area.
    pub fn sealed_offset(index: u64) -> u64 {
        index * SEALED_CHUNK_BYTES as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_follows_the_spec_examples() {
        // Empty: one empty chunk. 1 KiB: one chunk. 16 KiB: a full chunk and an empty one.
        for (plaintext, chunks) in [
            (0u64, 1u64),
            (1024, 1),
            (16384, 2),
            (20480, 2),
            (16383, 1),
            (16385, 2),
        ] {
            let geometry = Geometry::for_plaintext(plaintext).unwrap();
            assert_eq!(geometry.chunks, chunks, "{plaintext}");
            assert_eq!(
                Geometry::for_sealed(geometry.sealed_bytes()).unwrap(),
                geometry
            );
        }
        assert!(matches!(
            Geometry::for_sealed(0),
            Err(FormatError::TruncatedAfter { chunks: 0 })
        ));
        assert!(matches!(
            Geometry::for_sealed(15),
            Err(FormatError::TruncatedChunk {
                index: 0,
                bytes: 15
            })
        ));
        assert!(matches!(
            Geometry::for_sealed(16400),
            Err(FormatError::TruncatedAfter { chunks: 1 })
        ));
        assert!(matches!(
            Geometry::for_sealed(16401),
            Err(FormatError::TruncatedChunk { index: 1, bytes: 1 })
        ));
        assert_eq!(
            Geometry::for_sealed(16416).unwrap(),
            Geometry {
                chunks: 2,
                plaintext_bytes: 16384
            }
        );
        assert!(matches!(
            Geometry::for_plaintext(MAX_CHUNKS * CHUNK_BYTES as u64),
            Err(FormatError::TooLong)
        ));
        assert!(Geometry::for_plaintext(MAX_CHUNKS * CHUNK_BYTES as u64 - 1).is_ok());
        assert!(matches!(
            Geometry::for_sealed(u64::MAX),
            Err(FormatError::TooLong)
        ));
    }

    #[test]
    fn nonces_xor_the_big_endian_index_and_stop_at_the_limit() {
        let keys = MessageKeys::derive(Suite::Cobblestone128, &[1; 16], &[2; 24], b"").unwrap();
        let base = *keys.base_nonce();
        let nonce = keys.nonce(0x12_3456_789a).unwrap();
        assert_eq!(nonce[..7], base[..7]);
        assert_eq!(nonce[7] ^ base[7], 0x12);
        assert_eq!(nonce[11] ^ base[11], 0x9a);
        assert!(keys.nonce(MAX_CHUNKS - 1).is_ok());
        assert!(matches!(keys.nonce(MAX_CHUNKS), Err(FormatError::TooLong)));
    }

    #[test]
    fn keys_of_the_wrong_length_are_refused() {
        assert!(matches!(
            MessageKeys::derive(Suite::Cobblestone128, &[0; 32], &[0; 24], b""),
            Err(FormatError::KeySuiteMismatch { .. })
        ));
        assert!(matches!(
            MessageKeys::derive(Suite::Cobblestone256, &[0; 24], &[0; 24], b""),
            Err(FormatError::KeyLength(24))
        ));
        assert!(matches!(
            Suite::for_key_length(0),
            Err(FormatError::KeyLength(0))
        ));
    }
}
