//! [`Cipher`]: one cipher suite with its key and a fixed IV on an engine, for whole messages held
//! in memory (one call each) or for messages fed in pieces (a [`Crypter`]).

use std::sync::Arc;

use parcrypt_ciphers::Implementation;
use parcrypt_modes::{CipherSpec, Direction};
use zeroize::{Zeroize, Zeroizing};

use crate::crypter::{Crypter, JobError};
use crate::{Engine, KeyedCipher};

/// A cipher suite (such as `aes-128-gcm`), a key and one fixed IV, on an engine: a
/// [`KeyedCipher`] that remembers its IV, for a caller with one message (such as `parcrypt
/// raw`). Several messages under one key: use a [`KeyedCipher`], which takes an IV per
/// message; [`Cipher::keyed`] gives this one's.
///
/// Each call runs one whole message, as `parcrypt raw` does: ECB and CBC add PKCS#7
/// padding when encrypting and remove it when decrypting (unless [`Cipher::padding`] turns
/// it off); CTR treats the whole IV as one big-endian counter; GCM appends the 16-byte tag
/// when encrypting and, when decrypting, checks it and releases nothing unless it matches.
/// Every message starts from the same IV: a GCM or CTR IV must never encrypt two
/// messages under one key.
///
/// ```
/// use parcrypt_engine::{Backend, Cipher, Engine};
///
/// let engine = Engine::builder().backend(Backend::Pool).threads(2).build()?;
/// let key = [7u8; 16];
/// let iv = [1u8; 12];
/// let cipher = Cipher::new(engine, "aes-128-gcm".parse()?, &key, Some(&iv))?;
/// let sealed = cipher.encrypt(b"attack at dawn", None)?;
/// assert_eq!(sealed.len(), 14 + 16);
/// assert_eq!(cipher.decrypt(&sealed, None)?, b"attack at dawn");
///
/// let mut forged = sealed.clone();
/// forged[0] ^= 1;
/// assert!(cipher.decrypt(&forged, None).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Cipher {
    keyed: KeyedCipher,
    iv: Option<Vec<u8>>,
}

impl Cipher {
    /// A cipher for `suite` with `key` and `iv` (none for ECB; one block for CBC and CTR;
    /// 1 byte or more for GCM, 12 being the fast path) on `engine` (an [`Engine`], or an
    /// `Arc` of one to share its threads between ciphers). The key and IV are checked now.
    pub fn new(
        engine: impl Into<Arc<Engine>>,
        suite: CipherSpec,
        key: &[u8],
        iv: Option<&[u8]>,
    ) -> Result<Self, JobError> {
        let keyed = KeyedCipher::new(engine, suite, key)?;
        keyed.check_iv(iv)?;
        Ok(Cipher {
            keyed,
            iv: iv.map(<[u8]>::to_vec),
        })
    }

    /// Whether ECB and CBC messages carry PKCS#7 padding (default true). Without it their
    /// length must be a whole number of blocks. The stream modes ignore this.
    #[must_use]
    pub fn padding(mut self, padding: bool) -> Self {
        self.keyed = self.keyed.padding(padding);
        self
    }

    /// Which implementation of the block cipher runs on the CPU (default
    /// [`Implementation::Fast`]; the reference one mirrors the GPU kernels). The key
    /// schedule is built again for it.
    #[must_use]
    pub fn implementation(mut self, implementation: Implementation) -> Self {
        // The key was accepted once, so building it again cannot fail.
        if let Ok(keyed) = self.keyed.rebuilt(implementation) {
            self.keyed = keyed;
        }
        self
    }

    /// The cipher suite.
    pub fn suite(&self) -> CipherSpec {
        self.keyed.suite()
    }

    /// The engine the work runs on.
    pub fn engine(&self) -> &Engine {
        self.keyed.engine()
    }

    /// The keyed cipher underneath, to run more messages under this key with other IVs.
    pub fn keyed(&self) -> &KeyedCipher {
        &self.keyed
    }

    /// The fixed IV.
    pub fn iv(&self) -> Option<&[u8]> {
        self.iv.as_deref()
    }

    /// The most bytes a message of `input_length` bytes turns into: 16 more for GCM
    /// encryption, up to one block more for padded encryption, 16 fewer for GCM decryption.
    pub fn max_output_length(&self, direction: Direction, input_length: usize) -> usize {
        self.keyed.max_output_length(direction, input_length)
    }

    /// Encrypts one message, with `aad` as GCM's additional authenticated data.
    pub fn encrypt(&self, plaintext: &[u8], aad: Option<&[u8]>) -> Result<Vec<u8>, JobError> {
        self.keyed.encrypt(self.iv(), plaintext, aad)
    }

    /// Decrypts one message; for GCM the tag is checked first and nothing is returned
    /// unless it matches.
    pub fn decrypt(&self, ciphertext: &[u8], aad: Option<&[u8]>) -> Result<Vec<u8>, JobError> {
        self.keyed.decrypt(self.iv(), ciphertext, aad)
    }

    /// Encrypts `plaintext` into `output`, which must hold at least
    /// [`Cipher::max_output_length`] bytes, and returns the bytes written.
    pub fn encrypt_into(
        &self,
        plaintext: &[u8],
        output: &mut [u8],
        aad: Option<&[u8]>,
    ) -> Result<usize, JobError> {
        self.keyed.encrypt_into(self.iv(), plaintext, output, aad)
    }

    /// Decrypts `ciphertext` into `output`, which must hold at least
    /// [`Cipher::max_output_length`] bytes (the ciphertext's length for padded modes), and
    /// returns the bytes written. On any error `output` is wiped.
    pub fn decrypt_into(
        &self,
        ciphertext: &[u8],
        output: &mut [u8],
        aad: Option<&[u8]>,
    ) -> Result<usize, JobError> {
        self.keyed.decrypt_into(self.iv(), ciphertext, output, aad)
    }

    /// Encrypts the message in `buffer[..length]` in place, the rest of `buffer` being room
    /// for the padding or tag, and returns the ciphertext's length.
    ///
    /// ```
    /// use parcrypt_engine::{Backend, Cipher, Direction, Engine};
    ///
    /// let cipher = Cipher::new(Engine::new(Backend::Seq, None)?, "bf-cbc".parse()?, b"key!", Some(&[0u8; 8]))?;
    /// let mut buffer = b"ten bytes!".to_vec();
    /// buffer.resize(cipher.max_output_length(Direction::Encrypt, 10), 0);
    /// let length = cipher.encrypt_in_place(&mut buffer, 10, None)?;
    /// let length = cipher.decrypt_in_place(&mut buffer, length, None)?;
    /// assert_eq!(&buffer[..length], b"ten bytes!");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn encrypt_in_place(
        &self,
        buffer: &mut [u8],
        length: usize,
        aad: Option<&[u8]>,
    ) -> Result<usize, JobError> {
        self.keyed.encrypt_in_place(self.iv(), buffer, length, aad)
    }

    /// Decrypts the message in `buffer[..length]` in place and returns the plaintext's
    /// length. On any error (a GCM tag that does not match, bad padding) the buffer is wiped.
    pub fn decrypt_in_place(
        &self,
        buffer: &mut [u8],
        length: usize,
        aad: Option<&[u8]>,
    ) -> Result<usize, JobError> {
        self.keyed.decrypt_in_place(self.iv(), buffer, length, aad)
    }

    /// A [`Crypter`] that encrypts one message given in pieces: whole blocks to
    /// [`Crypter::update`], the rest to [`Crypter::finish`].
    ///
    /// ```
    /// use parcrypt_engine::{Backend, Cipher, Engine};
    ///
    /// let cipher = Cipher::new(Engine::new(Backend::Seq, None)?, "aes-128-ctr".parse()?, &[0u8; 16], Some(&[0u8; 16]))?;
    /// let message = b"thirty-two bytes, then some more".to_vec();
    /// let mut crypter = cipher.encryptor(None)?;
    /// let mut first = message[..16].to_vec();
    /// crypter.update(&mut first)?;
    /// let mut rest = message[16..].to_vec();
    /// crypter.finish(&mut rest)?;
    /// first.extend_from_slice(&rest);
    /// assert_eq!(first, cipher.encrypt(&message, None)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn encryptor(&self, aad: Option<&[u8]>) -> Result<Crypter<'_>, JobError> {
        self.keyed.encryptor(self.iv(), aad)
    }

    /// A [`Crypter`] that decrypts one message given in pieces. For GCM, output from
    /// [`Crypter::update`] is unauthenticated until [`Crypter::finish`] succeeds: hold it
    /// back until then.
    pub fn decryptor(&self, aad: Option<&[u8]>) -> Result<Crypter<'_>, JobError> {
        self.keyed.decryptor(self.iv(), aad)
    }
}

/// The bytes of a whole message of `length` bytes that go through `update` (whole blocks,
/// split over the engine), the rest going to `finish`.
fn body_length(crypter: &Crypter<'_>, length: usize) -> usize {
    let block_size = crypter.block_size();
    length.saturating_sub(crypter.holdback()) / block_size * block_size
}

/// Runs the whole message in `buffer[..length]` in place; the rest of `buffer` is room for
/// what the message grows by. Wipes the buffer on any error.
pub(crate) fn process_in_place(
    crypter: Crypter<'_>,
    buffer: &mut [u8],
    length: usize,
) -> Result<usize, JobError> {
    let needed = crypter.max_output_length(length).max(length);
    if buffer.len() < needed {
        return Err(JobError::OutputTooSmall {
            needed,
            got: buffer.len(),
        });
    }
    let body = body_length(&crypter, length);
    let tail = Zeroizing::new(buffer[body..length].to_vec());
    finish_message(crypter, None, buffer, body, tail)
}

/// Runs the whole message in `buffer`, which then holds the output; wiped on any error.
pub(crate) fn process_vec(crypter: Crypter<'_>, buffer: &mut Vec<u8>) -> Result<(), JobError> {
    let length = buffer.len();
    buffer.resize(crypter.max_output_length(length).max(length), 0);
    match process_in_place(crypter, buffer, length) {
        Ok(written) => {
            buffer.truncate(written);
            Ok(())
        }
        Err(error) => {
            buffer.clear();
            Err(error)
        }
    }
}

/// `buffer[..body]` through `update` (or, given a `source` of `body` bytes, the source into
/// `buffer[..body]` through `update_into`), then `tail` through `finish`, its output placed
/// after the body. Wipes `buffer` on any error, so that no unauthenticated plaintext is left
/// in it.
pub(crate) fn finish_message(
    mut crypter: Crypter<'_>,
    source: Option<&[u8]>,
    buffer: &mut [u8],
    body: usize,
    mut tail: Zeroizing<Vec<u8>>,
) -> Result<usize, JobError> {
    let body_outcome = match source {
        Some(source) => crypter.update_into(source, &mut buffer[..body]),
        None => crypter.update(&mut buffer[..body]),
    };
    let outcome = body_outcome.and_then(|()| crypter.finish(&mut tail));
    match outcome {
        Ok(()) => {
            buffer[body..body + tail.len()].copy_from_slice(&tail);
            Ok(body + tail.len())
        }
        Err(error) => {
            buffer.zeroize();
            Err(error)
        }
    }
}
