//! [`Cipher`]: one cipher suite with its key and an IV for one message on an engine, whole
//! in memory (one call) or fed in pieces (a [`Crypter`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parcrypt_ciphers::Implementation;
use parcrypt_modes::{CipherSpec, Direction, Mode};
use zeroize::{Zeroize, Zeroizing};

use crate::crypter::{check_message_length, Crypter, JobError};
use crate::{Engine, KeyedCipher};

/// A cipher suite (such as `aes-128-ctr`), a key and the IV of one message, on an engine: a
/// [`KeyedCipher`] that remembers its IV, for a caller with one message to encrypt (such as
/// `parcrypt raw`). To seal many messages, use [`crate::Aead`], which draws a fresh random
/// nonce for each; for a protocol that manages its own IVs, a [`KeyedCipher`], which takes
/// one per message ([`Cipher::keyed`] gives this one's).
///
/// The IV encrypts one message only: a second encryption (a whole message or an
/// [`Cipher::encryptor`]) fails with [`JobError::IvSpent`], because two messages under one
/// CTR or GCM IV give away the XOR of their plaintexts (and, for GCM, the authentication
/// key). Clones share the rule: of two threads encrypting at once, exactly one runs.
/// Decryption may use the IV any number of times. An encryption refused for a reason that
/// is checked before it starts (an output buffer too small, AAD for a mode without it, an
/// unpadded partial block, a message too long) leaves the IV unspent.
///
/// Each call runs one whole message, as `parcrypt raw` does: ECB and CBC add PKCS#7
/// padding when encrypting and remove it when decrypting (unless [`Cipher::padding`] turns
/// it off); CTR treats the whole IV as one big-endian counter; GCM appends the 16-byte tag
/// when encrypting and, when decrypting, checks it and releases nothing unless it matches.
///
/// ```
/// use parcrypt_engine::{Backend, Cipher, Engine, JobError};
///
/// let engine = Engine::builder().backend(Backend::Pool).threads(2).build()?;
/// let key = [7u8; 16];
/// let iv = [1u8; 12];
/// let cipher = Cipher::new(engine, "aes-128-gcm".parse()?, &key, Some(&iv))?;
/// let sealed = cipher.encrypt(b"attack at dawn", None)?;
/// assert_eq!(sealed.len(), 14 + 16);
/// assert_eq!(cipher.decrypt(&sealed, None)?, b"attack at dawn");
///
/// // The IV has encrypted its one message.
/// assert!(matches!(cipher.encrypt(b"retreat", None), Err(JobError::IvSpent(_))));
///
/// let mut forged = sealed.clone();
/// forged[0] ^= 1;
/// assert!(cipher.decrypt(&forged, None).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Cipher {
    keyed: KeyedCipher,
    iv: Option<OneMessageIv>,
}

/// An IV and whether it has encrypted its message, shared by a cipher's clones.
#[derive(Clone, Debug)]
struct OneMessageIv {
    bytes: Vec<u8>,
    spent: Arc<AtomicBool>,
}

/// The calls of [`Cipher`] into the caller's buffer and in place: each is the keyed
/// cipher's call of the same name under the IV, with `aad` last. An encryption `spends` the
/// IV first ([`Cipher::iv_for_encryption`], given the input's length and the output's
/// room); a decryption reads it.
macro_rules! under_the_iv {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) $(spends ($length:expr, $room:expr))?;)*) => {$(
        $(#[$doc])*
        pub fn $name(&self, $($arg: $ty,)* aad: Option<&[u8]>) -> Result<usize, JobError> {
            let iv = under_the_iv!(@iv self, aad $(, $length, $room)?);
            self.keyed.$name(iv, $($arg,)* aad)
        }
    )*};
    (@iv $cipher:ident, $aad:ident) => {
        $cipher.iv()
    };
    (@iv $cipher:ident, $aad:ident, $length:expr, $room:expr) => {
        $cipher.iv_for_encryption($length, $room, $aad)?
    };
}

impl Cipher {
    /// A cipher for `suite` with `key` and `iv` (none for ECB; one block for CBC and CTR;
    /// 12 bytes or more for GCM) on `engine` (an [`Engine`], or an `Arc` of one to share its
    /// threads between ciphers). The key and IV are checked now. A shorter GCM IV (to read
    /// data made with one): [`Cipher::from_keyed`] with
    /// [`KeyedCipher::allow_short_gcm_iv`].
    pub fn new(
        engine: impl Into<Arc<Engine>>,
        suite: CipherSpec,
        key: &[u8],
        iv: Option<&[u8]>,
    ) -> Result<Self, JobError> {
        Self::from_keyed(KeyedCipher::new(engine, suite, key)?, iv)
    }

    /// A cipher over a keyed cipher already made (with its padding and short-IV settings),
    /// with `iv` for its one message; the IV is checked now.
    ///
    /// ```
    /// use parcrypt_engine::{Backend, Cipher, Engine, KeyedCipher};
    ///
    /// // An 8-byte GCM IV, as in the GCM specification's test case 5: refused unless asked for.
    /// let engine = std::sync::Arc::new(Engine::new(Backend::Seq, None)?);
    /// let keyed = KeyedCipher::new(engine.clone(), "aes-128-gcm".parse()?, &[0u8; 16])?;
    /// assert!(Cipher::from_keyed(keyed.clone(), Some(&[0u8; 8])).is_err());
    /// let cipher = Cipher::from_keyed(keyed.allow_short_gcm_iv(true), Some(&[0u8; 8]))?;
    /// assert_eq!(cipher.encrypt(b"", None)?.len(), 16);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_keyed(keyed: KeyedCipher, iv: Option<&[u8]>) -> Result<Self, JobError> {
        keyed.check_iv(iv)?;
        Ok(Cipher {
            keyed,
            iv: iv.map(|iv| OneMessageIv {
                bytes: iv.to_vec(),
                spent: Arc::new(AtomicBool::new(false)),
            }),
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

    /// The keyed cipher underneath, to run more messages under this key with IVs of their
    /// own.
    pub fn keyed(&self) -> &KeyedCipher {
        &self.keyed
    }

    /// The IV given at creation (decryption may use it any number of times).
    pub fn iv(&self) -> Option<&[u8]> {
        self.iv.as_ref().map(|iv| iv.bytes.as_slice())
    }

    /// Whether the IV has encrypted its message (false without an IV).
    pub fn iv_spent(&self) -> bool {
        self.iv
            .as_ref()
            .is_some_and(|iv| iv.spent.load(Ordering::Acquire))
    }

    /// The IV for the one encryption it may run, spending it: first checks what would
    /// refuse an encryption of `length` bytes into `output_capacity` bytes with `aad` before
    /// it starts (so that such a refusal leaves the IV unspent), then marks the IV spent,
    /// or fails with [`JobError::IvSpent`] if it was. For front ends that run the message
    /// themselves (segments, device memory); the encryption calls here use it. `None` for
    /// a cipher without an IV (ECB, or one used only with per-message IVs).
    pub fn iv_for_encryption(
        &self,
        length: usize,
        output_capacity: usize,
        aad: Option<&[u8]>,
    ) -> Result<Option<&[u8]>, JobError> {
        let keyed = &self.keyed;
        let suite = keyed.suite();
        let needed = keyed.max_output_length(Direction::Encrypt, length);
        if output_capacity < needed {
            return Err(JobError::OutputTooSmall {
                needed,
                got: output_capacity,
            });
        }
        if aad.is_some() && suite.mode != Mode::Gcm {
            return Err(JobError::AadNotUsed);
        }
        let block_size = suite.algorithm.block_size();
        let pads = keyed.pads() && suite.mode.pads();
        if suite.mode.pads() && !pads && !length.is_multiple_of(block_size) {
            return Err(JobError::PartialBlock {
                length: length as u64,
                block_size,
            });
        }
        check_message_length(suite, needed.max(length) as u64)?;
        let Some(iv) = &self.iv else {
            return Ok(None);
        };
        // One atomic swap: of any number of callers, exactly one sees `false`.
        if iv.spent.swap(true, Ordering::AcqRel) {
            return Err(JobError::IvSpent(suite));
        }
        Ok(Some(&iv.bytes))
    }

    /// The most bytes a message of `input_length` bytes turns into: 16 more for GCM
    /// encryption, up to one block more for padded encryption, 16 fewer for GCM decryption.
    pub fn max_output_length(&self, direction: Direction, input_length: usize) -> usize {
        self.keyed.max_output_length(direction, input_length)
    }

    /// Encrypts the message under the IV (its one encryption), with `aad` as GCM's
    /// additional authenticated data.
    pub fn encrypt(&self, plaintext: &[u8], aad: Option<&[u8]>) -> Result<Vec<u8>, JobError> {
        let length = plaintext.len();
        let capacity = self.max_output_length(Direction::Encrypt, length);
        let iv = self.iv_for_encryption(length, capacity, aad)?;
        self.keyed.encrypt(iv, plaintext, aad)
    }

    /// Decrypts one message; for GCM the tag is checked first and nothing is returned
    /// unless it matches.
    pub fn decrypt(&self, ciphertext: &[u8], aad: Option<&[u8]>) -> Result<Vec<u8>, JobError> {
        self.keyed.decrypt(self.iv(), ciphertext, aad)
    }

    under_the_iv! {
        /// Encrypts `plaintext` (the IV's one message) into `output`, which must hold at least
        /// [`Cipher::max_output_length`] bytes, and returns the bytes written.
        fn encrypt_into(plaintext: &[u8], output: &mut [u8]) spends (plaintext.len(), output.len());

        /// Decrypts `ciphertext` into `output`, which must hold at least
        /// [`Cipher::max_output_length`] bytes (the ciphertext's length for padded modes), and
        /// returns the bytes written. On any error `output` is wiped.
        fn decrypt_into(ciphertext: &[u8], output: &mut [u8]);

        /// Encrypts the message in `buffer[..length]` (the IV's one message) in place, the
        /// rest of `buffer` being room for the padding or tag, and returns the ciphertext's
        /// length.
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
        // An encryption's output is never shorter than its input: the capacity covers both.
        fn encrypt_in_place(buffer: &mut [u8], length: usize) spends (length, buffer.len());

        /// Decrypts the message in `buffer[..length]` in place and returns the plaintext's
        /// length. On any error (a GCM tag that does not match, bad padding) the buffer is wiped.
        fn decrypt_in_place(buffer: &mut [u8], length: usize);
    }

    /// A [`Crypter`] that encrypts the IV's one message given in pieces: whole blocks to
    /// [`Crypter::update`], the rest to [`Crypter::finish`]. Making it spends the IV.
    ///
    /// ```
    /// use parcrypt_engine::{Backend, Cipher, Engine};
    ///
    /// let engine = std::sync::Arc::new(Engine::new(Backend::Seq, None)?);
    /// let (key, iv) = ([0u8; 16], [0u8; 16]);
    /// let message = b"thirty-two bytes, then some more".to_vec();
    /// let cipher = Cipher::new(engine.clone(), "aes-128-ctr".parse()?, &key, Some(&iv))?;
    /// let mut crypter = cipher.encryptor(None)?;
    /// let mut first = message[..16].to_vec();
    /// crypter.update(&mut first)?;
    /// let mut rest = message[16..].to_vec();
    /// crypter.finish(&mut rest)?;
    /// first.extend_from_slice(&rest);
    /// // The same message in one call, by a cipher with the same key and IV.
    /// let whole = Cipher::new(engine, "aes-128-ctr".parse()?, &key, Some(&iv))?;
    /// assert_eq!(first, whole.encrypt(&message, None)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn encryptor(&self, aad: Option<&[u8]>) -> Result<Crypter<'_>, JobError> {
        // Making the crypter checks the IV and AAD; only then is the IV spent.
        let crypter = self.keyed.encryptor(self.iv(), aad)?;
        self.iv_for_encryption(0, usize::MAX, aad)?;
        Ok(crypter)
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
