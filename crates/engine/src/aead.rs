//! [`Aead`]: AES-GCM with a fresh random nonce for every message, the call to reach for first.
//!
//! [`Aead::seal`] draws a 96-bit nonce from the operating system and returns
//! `nonce || ciphertext || tag`; [`Aead::open`] takes that back and returns the plaintext
//! only when the tag matches. Nothing about nonces is left to the caller, so none can be
//! reused by accident. A protocol that manages its own nonces (a counter, a nonce sent
//! apart) uses a [`KeyedCipher`] instead.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parcrypt_ciphers::Algorithm;
use parcrypt_modes::gcm::TAG_BYTES;
use parcrypt_modes::{CipherSpec, Mode};
use zeroize::Zeroizing;

use crate::crypter::JobError;
use crate::{Engine, KeyedCipher};

/// The bytes of the random nonce at the front of a sealed message.
pub const NONCE_BYTES: usize = 12;

/// The bytes a sealed message adds to its plaintext: the nonce and the tag (28).
pub const SEAL_OVERHEAD: usize = NONCE_BYTES + TAG_BYTES;

/// The most messages one key seals under random 96-bit nonces: 2^32, the limit NIST SP
/// 800-38D (section 8.3) sets so that two nonces collide with a probability below 2^-32.
pub const MAX_SEALED_MESSAGES: u64 = 1 << 32;

/// AES-GCM (`aes-128-gcm`, `aes-192-gcm` or `aes-256-gcm`) under one key on an engine,
/// every message sealed under a fresh random 96-bit nonce from the operating system.
///
/// A sealed message is `nonce (12 bytes) || ciphertext || tag (16 bytes)`, the layout any
/// AES-GCM library opens given the first 12 bytes as the nonce. The key is expanded once
/// and shared by clones, which may seal and open on many threads at once. Each key object
/// (with its clones) counts its seals and refuses the 2^32nd and later
/// ([`JobError::NonceBudget`]): past that many random nonces a repeat becomes too likely. The
/// count lives in memory: a program that makes a new `Aead` for a key it used before must
/// keep its own count.
///
/// ```
/// use parcrypt_engine::{Aead, Backend, Engine};
///
/// let key = Aead::generate_key("aes-256-gcm".parse()?)?;
/// let aead = Aead::new(Engine::new(Backend::Auto, None)?, "aes-256-gcm".parse()?, &key)?;
/// let sealed = aead.seal(b"attack at dawn", Some(b"header"))?;
/// assert_eq!(sealed.len(), 12 + 14 + 16);
/// assert_eq!(aead.open(&sealed, Some(b"header"))?, b"attack at dawn");
///
/// // Every seal draws a new nonce: the same message never looks the same twice.
/// assert_ne!(aead.seal(b"attack at dawn", None)?, aead.seal(b"attack at dawn", None)?);
/// // A changed byte, a wrong AAD or a cut message opens to nothing but an error.
/// let mut forged = sealed.clone();
/// forged[20] ^= 1;
/// assert!(aead.open(&forged, Some(b"header")).is_err());
/// assert!(aead.open(&sealed, None).is_err());
/// assert!(aead.open(&sealed[..27], Some(b"header")).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Aead {
    keyed: KeyedCipher,
    /// Messages sealed under this key by this object and its clones.
    sealed: Arc<AtomicU64>,
}

impl Aead {
    /// An AEAD for `suite` (AES-GCM) with `key` (16, 24 or 32 bytes, as the suite says) on
    /// `engine`; the key is checked and expanded now.
    pub fn new(
        engine: impl Into<Arc<Engine>>,
        suite: CipherSpec,
        key: &[u8],
    ) -> Result<Self, JobError> {
        check_suite(suite)?;
        Self::from_keyed(KeyedCipher::new(engine, suite, key)?)
    }

    /// An AEAD over a keyed cipher already made (it must be AES-GCM). Its seal count starts
    /// at zero.
    pub fn from_keyed(keyed: KeyedCipher) -> Result<Self, JobError> {
        check_suite(keyed.suite())?;
        Ok(Aead {
            keyed,
            sealed: Arc::new(AtomicU64::new(0)),
        })
    }

    /// A new random key for `suite` (AES-GCM) from the operating system, wiped when dropped.
    pub fn generate_key(suite: CipherSpec) -> Result<Zeroizing<Vec<u8>>, JobError> {
        check_suite(suite)?;
        let mut key = Zeroizing::new(vec![0u8; suite.algorithm.key_lengths().0]);
        fill_random(&mut key)?;
        Ok(key)
    }

    /// The suite.
    pub fn suite(&self) -> CipherSpec {
        self.keyed.suite()
    }

    /// The keyed cipher underneath.
    pub fn keyed(&self) -> &KeyedCipher {
        &self.keyed
    }

    /// How many messages this key object (with its clones) has sealed.
    pub fn sealed_messages(&self) -> u64 {
        self.sealed.load(Ordering::Acquire)
    }

    /// The length of `plaintext_length` bytes sealed: 28 more.
    pub fn sealed_length(plaintext_length: usize) -> usize {
        plaintext_length + SEAL_OVERHEAD
    }

    /// The length of the plaintext in a sealed message of `sealed_length` bytes (`None`
    /// when it is too short to be one).
    pub fn opened_length(sealed_length: usize) -> Option<usize> {
        sealed_length.checked_sub(SEAL_OVERHEAD)
    }

    /// Seals `plaintext` with `aad` as additional authenticated data: a fresh random nonce,
    /// then the ciphertext and the tag.
    pub fn seal(&self, plaintext: &[u8], aad: Option<&[u8]>) -> Result<Vec<u8>, JobError> {
        let mut sealed = vec![0u8; Self::sealed_length(plaintext.len())];
        self.seal_into(plaintext, &mut sealed, aad)?;
        Ok(sealed)
    }

    /// Seals `plaintext` into `output`, which must hold at least [`Aead::sealed_length`]
    /// bytes (and may not overlap it), and returns the bytes written.
    pub fn seal_into(
        &self,
        plaintext: &[u8],
        output: &mut [u8],
        aad: Option<&[u8]>,
    ) -> Result<usize, JobError> {
        let needed = Self::sealed_length(plaintext.len());
        if output.len() < needed {
            return Err(JobError::OutputTooSmall {
                needed,
                got: output.len(),
            });
        }
        self.count_seal()?;
        let (nonce, rest) = output.split_at_mut(NONCE_BYTES);
        fill_random(nonce)?;
        let written = self.keyed.encrypt_into(Some(nonce), plaintext, rest, aad)?;
        Ok(NONCE_BYTES + written)
    }

    /// Opens a sealed message (`nonce || ciphertext || tag`) made with `aad`, returning the
    /// plaintext only if the tag matches; a message shorter than 28 bytes, a changed byte or
    /// another AAD is an error and releases nothing.
    pub fn open(&self, sealed: &[u8], aad: Option<&[u8]>) -> Result<Vec<u8>, JobError> {
        let (nonce, body) = split_sealed(sealed)?;
        self.keyed.decrypt(Some(nonce), body, aad)
    }

    /// [`Aead::open`] into `output`, which must hold at least [`Aead::opened_length`] bytes
    /// (and may not overlap `sealed`); returns the bytes written. On any error `output`
    /// holds no plaintext.
    pub fn open_into(
        &self,
        sealed: &[u8],
        output: &mut [u8],
        aad: Option<&[u8]>,
    ) -> Result<usize, JobError> {
        let (nonce, body) = split_sealed(sealed)?;
        self.keyed.decrypt_into(Some(nonce), body, output, aad)
    }

    /// Counts one seal, refusing it when the key has sealed [`MAX_SEALED_MESSAGES`].
    fn count_seal(&self) -> Result<(), JobError> {
        self.sealed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| {
                (count < MAX_SEALED_MESSAGES).then_some(count + 1)
            })
            .map(|_| ())
            .map_err(|_| JobError::NonceBudget)
    }

    /// Sets the seal count, to test the limit without sealing 2^32 messages.
    #[doc(hidden)]
    pub fn set_sealed_messages_for_tests(&self, count: u64) {
        self.sealed.store(count, Ordering::Release);
    }
}

/// Refuses every suite but AES-GCM.
fn check_suite(suite: CipherSpec) -> Result<(), JobError> {
    let aes = matches!(
        suite.algorithm,
        Algorithm::Aes128 | Algorithm::Aes192 | Algorithm::Aes256
    );
    if aes && suite.mode == Mode::Gcm {
        Ok(())
    } else {
        Err(JobError::AeadSuite(suite))
    }
}

/// The nonce and the rest (ciphertext and tag) of a sealed message.
fn split_sealed(sealed: &[u8]) -> Result<(&[u8], &[u8]), JobError> {
    if sealed.len() < SEAL_OVERHEAD {
        return Err(JobError::ShortSealed(sealed.len() as u64));
    }
    Ok(sealed.split_at(NONCE_BYTES))
}

/// Fills `bytes` from the operating system's random source.
fn fill_random(bytes: &mut [u8]) -> Result<(), JobError> {
    getrandom::fill(bytes).map_err(|error| JobError::Random(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Backend;

    fn aead(suite: &str, backend: Backend) -> Aead {
        let suite: CipherSpec = suite.parse().expect("suite");
        let key = Aead::generate_key(suite).expect("key");
        Aead::new(Engine::new(backend, Some(2)).expect("engine"), suite, &key).expect("aead")
    }

    #[test]
    fn round_trips_every_size_on_every_cpu_backend() {
        for backend in [Backend::Seq, Backend::Threads, Backend::Pool] {
            for suite in ["aes-128-gcm", "aes-192-gcm", "aes-256-gcm"] {
                let aead = aead(suite, backend);
                for size in [0, 1, 15, 16, 17, 1000, (1 << 20) + 3] {
                    let plaintext: Vec<u8> = (0..size).map(|i| (i * 7 + 3) as u8).collect();
                    let sealed = aead.seal(&plaintext, Some(b"aad")).expect("seal");
                    assert_eq!(sealed.len(), size + SEAL_OVERHEAD);
                    let opened = aead.open(&sealed, Some(b"aad")).expect("open");
                    assert_eq!(opened, plaintext, "{suite} {size} on {backend}");
                    let mut output = vec![0xa5u8; size];
                    let written = aead
                        .open_into(&sealed, &mut output, Some(b"aad"))
                        .expect("open_into");
                    assert_eq!((written, &output), (size, &plaintext));
                }
            }
        }
    }

    #[test]
    fn matches_gcm_under_the_nonce_it_carries() {
        let aead = aead("aes-128-gcm", Backend::Seq);
        let sealed = aead.seal(b"the nonce rides in front", None).expect("seal");
        let (nonce, body) = sealed.split_at(NONCE_BYTES);
        let opened = aead.keyed().decrypt(Some(nonce), body, None).expect("GCM");
        assert_eq!(opened, b"the nonce rides in front");
    }

    #[test]
    fn two_seals_of_one_message_differ() {
        let aead = aead("aes-256-gcm", Backend::Seq);
        let first = aead.seal(b"same words", None).expect("seal");
        let second = aead.seal(b"same words", None).expect("seal");
        assert_ne!(first[..NONCE_BYTES], second[..NONCE_BYTES]);
        assert_ne!(first[NONCE_BYTES..], second[NONCE_BYTES..]);
        assert_eq!(aead.sealed_messages(), 2);
    }

    #[test]
    fn refuses_forgeries_truncation_and_wrong_aad() {
        let aead = aead("aes-128-gcm", Backend::Seq);
        let sealed = aead
            .seal(b"sixteen bytes!!!", Some(b"header"))
            .expect("seal");
        for index in [0, 11, 12, 27, sealed.len() - 1] {
            let mut forged = sealed.clone();
            forged[index] ^= 0x80;
            let refused = aead.open(&forged, Some(b"header"));
            assert!(
                matches!(refused, Err(JobError::Gcm(_))),
                "byte {index}: {refused:?}"
            );
        }
        assert!(matches!(
            aead.open(&sealed, Some(b"other")),
            Err(JobError::Gcm(_))
        ));
        assert!(matches!(aead.open(&sealed, None), Err(JobError::Gcm(_))));
        for length in 0..SEAL_OVERHEAD {
            let refused = aead.open(&sealed[..length], Some(b"header"));
            assert!(matches!(refused, Err(JobError::ShortSealed(_))), "{length}");
        }
        // Cut to 28 bytes or more: the tag no longer matches.
        for length in SEAL_OVERHEAD..sealed.len() {
            assert!(aead.open(&sealed[..length], Some(b"header")).is_err());
        }
        let mut output = vec![0u8; 16];
        let mut forged = sealed.clone();
        forged[13] ^= 1;
        assert!(aead
            .open_into(&forged, &mut output, Some(b"header"))
            .is_err());
        assert!(!output.windows(4).any(|window| window == b"teen"));
    }

    #[test]
    fn refuses_suites_other_than_aes_gcm() {
        let engine = Arc::new(Engine::new(Backend::Seq, None).expect("engine"));
        for suite in ["aes-128-ctr", "rc6-128-gcm", "bf-cbc", "aes-256-ecb"] {
            let suite: CipherSpec = suite.parse().expect("suite");
            let refused = Aead::new(engine.clone(), suite, &[0u8; 16]);
            assert!(matches!(refused, Err(JobError::AeadSuite(_))), "{suite}");
            assert!(Aead::generate_key(suite).is_err());
        }
    }

    #[test]
    fn refuses_seals_past_the_random_nonce_limit() {
        let aead = aead("aes-128-gcm", Backend::Seq);
        aead.set_sealed_messages_for_tests(MAX_SEALED_MESSAGES - 1);
        let clone = aead.clone();
        assert!(clone.seal(b"the last one", None).is_ok());
        let refused = aead.seal(b"one too many", None);
        assert!(matches!(refused, Err(JobError::NonceBudget)), "{refused:?}");
        assert!(refused.unwrap_err().to_string().contains("2^32"));
        assert_eq!(aead.sealed_messages(), MAX_SEALED_MESSAGES);
    }

    #[test]
    fn seal_into_says_what_it_needs() {
        let aead = aead("aes-128-gcm", Backend::Seq);
        let mut small = [0u8; 30];
        let refused = aead.seal_into(b"three", &mut small, None);
        assert!(matches!(
            refused,
            Err(JobError::OutputTooSmall {
                needed: 33,
                got: 30
            })
        ));
        // A refused call counts no seal.
        assert_eq!(aead.sealed_messages(), 0);
    }
}
