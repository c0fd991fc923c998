//! [`KeyedCipher`]: a cipher suite and key on an engine, set up once and reused for every
//! message under that key, each message bringing its own IV.

use std::sync::{Arc, OnceLock};

use parcrypt_ciphers::{new_cipher, BlockCipher, Implementation, KernelFamily};
use parcrypt_modes::ctr::{self, Counter, CounterRule};
use parcrypt_modes::gcm::{
    check_tag, GcmError, GcmKey, MAX_TEXT_BYTES, SHORT_TEXT_BYTES, TAG_BYTES,
};
use parcrypt_modes::{cbc, ecb, padding, CipherSpec, Direction, Mode};
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::cipher::{finish_message, process_in_place};
use crate::crypter::{
    check_iv_and_aad, check_message_length, max_output_length, Crypter, JobError, Keys, MessageSpec,
};
use crate::{CostModel, Engine};
use open_first::{open_first, Text};

mod open_first;
#[cfg(test)]
mod tests;

/// Messages of at most this many bytes run on the calling thread whatever the backend (on
/// `threads` too): handing them to other threads costs more than splitting them saves.
/// Larger ones run there too whenever the engine would not split them anyway.
pub const INLINE_MESSAGE_BYTES: usize = 4096;

/// Everything that depends on the key alone, built once per key: the block cipher's key
/// schedule, GCM's hash key with its powers of H, and (on first need) the GPU's form of the
/// key. Every part wipes itself when dropped.
pub(crate) struct KeySchedule {
    suite: CipherSpec,
    implementation: Implementation,
    cipher: Box<dyn BlockCipher>,
    gcm: Option<GcmKey>,
    /// The key itself, kept to build the GPU's key material on first need.
    key: Zeroizing<Vec<u8>>,
    gpu: OnceLock<parcrypt_gpu::KeyMaterial>,
}

impl KeySchedule {
    /// Checks `key` for `suite` and expands it, its kernels at most `ceiling` (the engine's
    /// [`Engine::kernels`]).
    pub(crate) fn new(
        suite: CipherSpec,
        implementation: Implementation,
        ceiling: Option<KernelFamily>,
        key: &[u8],
    ) -> Result<Self, JobError> {
        let cipher = new_cipher(suite.algorithm, implementation.with_ceiling(ceiling), key)?;
        let gcm = match suite.mode {
            Mode::Gcm => Some(GcmKey::new(cipher.as_ref())?),
            _ => None,
        };
        Ok(KeySchedule {
            suite,
            implementation,
            cipher,
            gcm,
            key: Zeroizing::new(key.to_vec()),
            gpu: OnceLock::new(),
        })
    }

    pub(crate) fn suite(&self) -> CipherSpec {
        self.suite
    }

    pub(crate) fn cipher(&self) -> &dyn BlockCipher {
        self.cipher.as_ref()
    }

    /// GCM's hash key (present whenever the suite is GCM).
    pub(crate) fn gcm(&self) -> Result<&GcmKey, JobError> {
        self.gcm.as_ref().ok_or(JobError::Gcm(GcmError::BlockSize))
    }

    /// The key in the form the GPU kernels take, built on first call and kept.
    pub(crate) fn gpu_material(&self) -> Result<&parcrypt_gpu::KeyMaterial, JobError> {
        if let Some(material) = self.gpu.get() {
            return Ok(material);
        }
        let material = parcrypt_gpu::KeyMaterial::new(self.suite.algorithm, &self.key)?;
        // Two threads may both build it; one copy is kept and the other wiped on drop.
        Ok(self.gpu.get_or_init(|| material))
    }
}

// Each field wipes itself on drop: the key bytes (`Zeroizing`), the block ciphers' schedules
// (`ZeroizeOnDrop`), GCM's H and powers (`GcmKey`'s drop) and the GPU's key material.
impl ZeroizeOnDrop for KeySchedule {}

/// A cipher suite (such as `aes-128-gcm`) and a key on an engine, set up once: the key
/// schedule and GCM's powers of H are built by [`KeyedCipher::new`] and shared by every
/// message, every [`Crypter`] and every clone (a clone costs two reference counts). Each
/// message brings its own IV (GCM nonce), so one object serves a whole session or file,
/// from as many threads at once as the caller likes. The key material is wiped when the
/// last clone is dropped.
///
/// A message runs as `parcrypt raw` runs one: ECB and CBC add PKCS#7 padding when
/// encrypting and remove it when decrypting (unless [`KeyedCipher::padding`] turns it off);
/// CTR treats the whole IV as one big-endian counter; GCM appends the 16-byte tag when
/// encrypting and, when decrypting, returns nothing but an error unless the tag matches.
/// Decrypting into memory the caller passes ([`KeyedCipher::decrypt_into`],
/// [`KeyedCipher::decrypt_in_place`]), GCM checks the tag before it writes a byte of
/// plaintext there, so no one watching that memory sees a forged message's plaintext.
/// A GCM or CTR IV must never encrypt two messages under one key.
///
/// Small messages (up to [`INLINE_MESSAGE_BYTES`], or larger ones the engine would not
/// split) take a short path on the calling thread: no hand-off to the pool, no cost-model
/// query (for `auto`, larger messages read the model the engine measured on first use), no
/// allocation beyond the output that [`KeyedCipher::encrypt`] returns (none at all
/// for the `_into` and `_in_place` forms).
///
/// ```
/// use parcrypt_engine::{Backend, Engine, KeyedCipher};
///
/// let engine = Engine::builder().backend(Backend::Auto).build()?;
/// let cipher = KeyedCipher::new(engine, "aes-256-gcm".parse()?, &[7u8; 32])?;
/// let mut sealed = Vec::new();
/// for (counter, message) in [&b"first"[..], b"second", b"third"].into_iter().enumerate() {
///     let mut nonce = [0u8; 12];
///     nonce[4..].copy_from_slice(&(counter as u64).to_be_bytes());
///     sealed.push((nonce, cipher.encrypt(Some(&nonce), message, Some(b"header"))?));
/// }
/// // Clones share the key schedule and may run on other threads.
/// let other = cipher.clone();
/// let opened = std::thread::spawn(move || {
///     sealed
///         .iter()
///         .map(|(nonce, bytes)| other.decrypt(Some(nonce), bytes, Some(b"header")))
///         .collect::<Result<Vec<_>, _>>()
/// })
/// .join()
/// .expect("no panic")?;
/// assert_eq!(opened[1], b"second");
///
/// // A wrong nonce, AAD or modified byte fails the tag and releases nothing.
/// let bad = cipher.decrypt(Some(&[0u8; 12]), &cipher.encrypt(Some(&[1u8; 12]), b"x", None)?, None);
/// assert!(bad.is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct KeyedCipher {
    engine: Arc<Engine>,
    keys: Arc<KeySchedule>,
    padding: bool,
    /// Whether GCM IVs of 1 to 11 bytes are taken (see [`KeyedCipher::allow_short_gcm_iv`]).
    allow_short_gcm_iv: bool,
    /// Whether the engine may send encryption, decryption to a GPU.
    gpu: [bool; 2],
}

impl ZeroizeOnDrop for KeyedCipher {}

impl std::fmt::Debug for KeyedCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedCipher")
            .field("suite", &self.keys.suite)
            .field("backend", &self.engine.backend())
            .finish_non_exhaustive()
    }
}

/// The public one-message calls of [`KeyedCipher`], each one of `process` (into a new
/// `Vec`), `process_into` (into the caller's buffer), `in_place`, `crypter` (a message in
/// pieces) or `run_on_device` (in CUDA device memory) with its direction fixed (and for `process_into`, who may see the output before
/// the call returns): one signature per kind, written once, so the variants cannot drift
/// apart.
macro_rules! one_message_calls {
    ($($(#[$doc:meta])* fn $name:ident($($input:ident)?) -> $kind:ident: $direction:ident $(, $seen:ident)?;)*) => {
        $(one_message_calls!(@ $kind $(#[$doc])* $name ($($input)?) $direction $($seen)?);)*
    };
    (@ Vec $(#[$doc:meta])* $name:ident ($input:ident) $direction:ident) => {
        $(#[$doc])*
        pub fn $name(
            &self,
            iv: Option<&[u8]>,
            $input: &[u8],
            aad: Option<&[u8]>,
        ) -> Result<Vec<u8>, JobError> {
            self.process(Direction::$direction, iv, $input, aad)
        }
    };
    (@ Into $(#[$doc:meta])* $name:ident ($input:ident) $direction:ident $seen:ident) => {
        $(#[$doc])*
        pub fn $name(
            &self,
            iv: Option<&[u8]>,
            $input: &[u8],
            output: &mut [u8],
            aad: Option<&[u8]>,
        ) -> Result<usize, JobError> {
            self.process_into(Direction::$direction, iv, $input, output, aad, Output::$seen)
        }
    };
    (@ InPlace $(#[$doc:meta])* $name:ident () $direction:ident) => {
        $(#[$doc])*
        pub fn $name(
            &self,
            iv: Option<&[u8]>,
            buffer: &mut [u8],
            length: usize,
            aad: Option<&[u8]>,
        ) -> Result<usize, JobError> {
            self.in_place(Direction::$direction, iv, buffer, length, aad, Output::Caller)
        }
    };
    (@ Crypter $(#[$doc:meta])* $name:ident () $direction:ident) => {
        $(#[$doc])*
        pub fn $name(
            &self,
            iv: Option<&[u8]>,
            aad: Option<&[u8]>,
        ) -> Result<Crypter<'_>, JobError> {
            self.crypter(Direction::$direction, iv, aad)
        }
    };
    (@ OnDevice $(#[$doc:meta])* $name:ident () $direction:ident) => {
        $(#[$doc])*
        pub fn $name(
            &self,
            device: &CudaDevice,
            iv: Option<&[u8]>,
            input: &ForeignDeviceMemory<'_>,
            output: &ForeignDeviceMemory<'_>,
            aad: Option<&[u8]>,
        ) -> Result<usize, JobError> {
            self.run_on_device(device, Direction::$direction, iv, input, output, aad)
        }
    };
}
// For `device`'s calls on device memory.
pub(crate) use one_message_calls;

fn slot(direction: Direction) -> usize {
    usize::from(direction == Direction::Decrypt)
}

impl KeyedCipher {
    /// A keyed cipher for `suite` with `key` on `engine` (an [`Engine`], or an `Arc` of one
    /// to share its threads), on the fast CPU implementation. The key is checked and
    /// expanded now, once.
    pub fn new(
        engine: impl Into<Arc<Engine>>,
        suite: CipherSpec,
        key: &[u8],
    ) -> Result<Self, JobError> {
        Self::with_implementation(engine, suite, key, Implementation::Fast)
    }

    /// [`KeyedCipher::new`] on a chosen CPU implementation of the block cipher (the
    /// reference one mirrors the GPU kernels).
    pub fn with_implementation(
        engine: impl Into<Arc<Engine>>,
        suite: CipherSpec,
        key: &[u8],
        implementation: Implementation,
    ) -> Result<Self, JobError> {
        let engine = engine.into();
        let keys = Arc::new(KeySchedule::new(
            suite,
            implementation,
            engine.kernels(),
            key,
        )?);
        Ok(Self::on(engine, keys))
    }

    fn on(engine: Arc<Engine>, keys: Arc<KeySchedule>) -> Self {
        let suite = keys.suite;
        let directions = [Direction::Encrypt, Direction::Decrypt];
        KeyedCipher {
            gpu: directions.map(|direction| engine.may_use_gpu(suite, direction)),
            engine,
            keys,
            padding: true,
            allow_short_gcm_iv: false,
        }
    }

    /// The same key on another CPU implementation (the schedule is built again).
    pub(crate) fn rebuilt(&self, implementation: Implementation) -> Result<Self, JobError> {
        if implementation == self.keys.implementation {
            return Ok(self.clone());
        }
        let keys = KeySchedule::new(
            self.keys.suite,
            implementation,
            self.engine.kernels(),
            &self.keys.key,
        )?;
        Ok(KeyedCipher {
            padding: self.padding,
            allow_short_gcm_iv: self.allow_short_gcm_iv,
            ..Self::on(Arc::clone(&self.engine), Arc::new(keys))
        })
    }

    /// Whether ECB and CBC messages carry PKCS#7 padding (default true). Without it their
    /// length must be a whole number of blocks. The stream modes ignore this.
    #[must_use]
    pub fn padding(mut self, padding: bool) -> Self {
        self.padding = padding;
        self
    }

    /// Whether GCM takes IVs of 1 to 11 bytes (default false: they are refused). Short IVs
    /// are hashed into the counter and collide far sooner than 12-byte ones; allow them only
    /// to read or write data that another program made with them (test vectors, old files).
    #[must_use]
    pub fn allow_short_gcm_iv(mut self, allow: bool) -> Self {
        self.allow_short_gcm_iv = allow;
        self
    }

    /// Whether GCM takes IVs of 1 to 11 bytes.
    pub fn allows_short_gcm_iv(&self) -> bool {
        self.allow_short_gcm_iv
    }

    /// Checks that `iv` suits the suite (none for ECB; one block for CBC and CTR; 12 bytes
    /// or more for GCM, or 1 or more with [`KeyedCipher::allow_short_gcm_iv`]) without
    /// running a message: for callers that take an IV now and use it later.
    pub fn check_iv(&self, iv: Option<&[u8]>) -> Result<(), JobError> {
        check_iv_and_aad(self.keys.suite, iv, None, self.allow_short_gcm_iv).map(|_| ())
    }

    /// The cipher suite.
    pub fn suite(&self) -> CipherSpec {
        self.keys.suite
    }

    /// The CPU implementation of the block cipher.
    pub fn implementation(&self) -> Implementation {
        self.keys.implementation
    }

    /// The engine the work runs on.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// GCM's key (H and its powers), for callers that drive [`GcmKey`] themselves; `None`
    /// for the other modes.
    pub fn gcm_key(&self) -> Option<&GcmKey> {
        self.keys.gcm.as_ref()
    }

    pub(crate) fn schedule(&self) -> &KeySchedule {
        &self.keys
    }

    /// Whether ECB and CBC messages carry PKCS#7 padding.
    pub(crate) fn pads(&self) -> bool {
        self.padding
    }

    /// The most bytes a message of `input_length` bytes turns into: 16 more for GCM
    /// encryption, up to one block more for padded encryption, 16 fewer for GCM decryption.
    pub fn max_output_length(&self, direction: Direction, input_length: usize) -> usize {
        max_output_length(self.keys.suite, direction, self.padding, input_length)
    }

    one_message_calls! {
        /// Encrypts one message under `iv` (none for ECB; one block for CBC and CTR; 1 byte or
        /// more for GCM, 12 being the fast path), with `aad` as GCM's additional authenticated
        /// data, into a new buffer.
        fn encrypt(plaintext) -> Vec: Encrypt;

        /// Decrypts one message into a new buffer; for GCM nothing is returned unless the tag
        /// matches (the plaintext is wiped before the error is returned). The buffer is this
        /// call's own until it returns, so GCM decrypts it in one pass, the tag checked at the
        /// end: the fastest form when the caller has no buffer of its own.
        fn decrypt(ciphertext) -> Vec: Decrypt;

        /// Encrypts `plaintext` into `output`, which must hold at least
        /// [`KeyedCipher::max_output_length`] bytes, and returns the bytes written.
        fn encrypt_into(plaintext) -> Into: Encrypt, Caller;

        /// Decrypts `ciphertext` into `output`, which must hold at least
        /// [`KeyedCipher::max_output_length`] bytes (the ciphertext's length for padded
        /// modes), and returns the bytes written. On any error the whole of `output` is zeroed.
        ///
        /// GCM authenticates first: the ciphertext is hashed and the tag checked before any
        /// plaintext is written, so another thread or a file mapping watching `output` never
        /// sees a byte of a forged message (two passes over the ciphertext, each split over the
        /// engine; [`KeyedCipher::decrypt`] into a buffer of its own takes one).
        fn decrypt_into(ciphertext) -> Into: Decrypt, Caller;

        /// [`KeyedCipher::decrypt_into`] for an `output` that nobody else can see before this
        /// call returns: memory the caller has just allocated and shared with no other thread,
        /// process or file mapping (the Python binding's new `bytes`, a fresh `Vec`). GCM then
        /// runs in one fused pass that writes plaintext into `output` before the tag is checked,
        /// and zeroes `output` when it does not match, so the caller must drop the output on any
        /// error. Into memory others may see, use [`KeyedCipher::decrypt_into`], which checks
        /// first. The benchmark times both, to show what checking first costs.
        fn decrypt_into_unshared(ciphertext) -> Into: Decrypt, Private;

        /// Encrypts the message in `buffer[..length]` in place, the rest of `buffer` being room
        /// for the padding or tag, and returns the ciphertext's length.
        ///
        /// ```
        /// use parcrypt_engine::{Backend, Direction, Engine, KeyedCipher};
        ///
        /// let cipher = KeyedCipher::new(Engine::new(Backend::Seq, None)?, "aes-128-gcm".parse()?, &[9u8; 16])?;
        /// let mut buffer = [0u8; 64];
        /// buffer[..5].copy_from_slice(b"hello");
        /// let sealed = cipher.encrypt_in_place(Some(&[3u8; 12]), &mut buffer, 5, None)?;
        /// assert_eq!(sealed, 5 + 16);
        /// let opened = cipher.decrypt_in_place(Some(&[3u8; 12]), &mut buffer, sealed, None)?;
        /// assert_eq!(&buffer[..opened], b"hello");
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fn encrypt_in_place() -> InPlace: Encrypt;

        /// Decrypts the message in `buffer[..length]` in place and returns the plaintext's
        /// length. On any error (a GCM tag that does not match, bad padding) the whole buffer is
        /// zeroed. GCM authenticates first, as [`KeyedCipher::decrypt_into`] does: until the tag
        /// matched, the buffer holds nothing but the ciphertext.
        fn decrypt_in_place() -> InPlace: Decrypt;

        /// A [`Crypter`] that encrypts one message under `iv` given in pieces: whole blocks to
        /// [`Crypter::update`], the rest to [`Crypter::finish`]. It borrows this object's key
        /// schedule: nothing is rebuilt.
        fn encryptor() -> Crypter: Encrypt;

        /// A [`Crypter`] that decrypts one message under `iv` given in pieces. For GCM, output
        /// from [`Crypter::update`] is unauthenticated until [`Crypter::finish`] succeeds: hold
        /// it back until then.
        fn decryptor() -> Crypter: Decrypt;
    }

    fn crypter(
        &self,
        direction: Direction,
        iv: Option<&[u8]>,
        aad: Option<&[u8]>,
    ) -> Result<Crypter<'_>, JobError> {
        let message = MessageSpec {
            direction,
            iv,
            aad,
            padding: self.padding,
            allow_short_gcm_iv: self.allow_short_gcm_iv,
        };
        Crypter::with_keys(
            &self.engine,
            Keys::Shared(&self.keys),
            &message,
            self.cost_model(direction),
        )
    }

    /// `auto`'s cost model for this suite (measured by the engine on first use, then
    /// remembered there); asked only for messages too large for the short path.
    fn cost_model(&self, direction: Direction) -> Option<CostModel> {
        self.engine.cost_model(self.keys.suite, direction)
    }

    /// Whether a whole message of `length` bytes runs on the calling thread: no GPU takes
    /// it and the engine would not split it (or it is small enough that no split pays).
    fn inline(&self, direction: Direction, length: usize) -> bool {
        let suite = self.keys.suite;
        if self.gpu[slot(direction)] && self.engine.gpu_for(suite, direction, length).is_some() {
            return false;
        }
        length <= INLINE_MESSAGE_BYTES
            || !suite.mode.parallel(direction)
            || self.engine.items(
                length,
                suite.algorithm.block_size(),
                self.cost_model(direction),
            ) == 1
    }

    fn process(
        &self,
        direction: Direction,
        iv: Option<&[u8]>,
        input: &[u8],
        aad: Option<&[u8]>,
    ) -> Result<Vec<u8>, JobError> {
        let length = input.len();
        let mut buffer = Vec::with_capacity(self.max_output_length(direction, length).max(length));
        buffer.extend_from_slice(input);
        buffer.resize(buffer.capacity(), 0);
        let written = self.in_place(direction, iv, &mut buffer, length, aad, Output::Private)?;
        buffer.truncate(written);
        Ok(buffer)
    }

    fn process_into(
        &self,
        direction: Direction,
        iv: Option<&[u8]>,
        input: &[u8],
        output: &mut [u8],
        aad: Option<&[u8]>,
        seen: Output,
    ) -> Result<usize, JobError> {
        let length = input.len();
        let needed = self.max_output_length(direction, length);
        if output.len() < needed {
            return Err(JobError::OutputTooSmall {
                needed,
                got: output.len(),
            });
        }
        let suite = self.keys.suite;
        let checked_iv = check_iv_and_aad(suite, iv, aad, self.allow_short_gcm_iv)?;
        check_message_length(suite, needed.max(length) as u64)?;
        // GCM decryption's output is 16 bytes shorter than its input: the tag stays behind.
        let (text, tag) = match (suite.mode, direction) {
            (Mode::Gcm, Direction::Decrypt) if length < TAG_BYTES => {
                return Err(JobError::MissingTag(length as u64))
            }
            (Mode::Gcm, Direction::Decrypt) => input.split_at(length - TAG_BYTES),
            _ => (input, &[][..]),
        };
        let checks_first = seen.checks_first(direction);
        if self.inline(direction, text.len()) {
            if suite.mode == Mode::Ctr {
                // As in `in_place`: nothing after the checks can fail.
                let output = &mut output[..text.len()];
                ctr::apply_into_from_iv(self.keys.cipher(), checked_iv, text, output);
                return Ok(text.len());
            }
            let message = Inline {
                direction,
                padding: self.padding,
                iv: checked_iv,
                aad: aad.unwrap_or_default(),
                tag,
                checks_first,
            };
            return wipe_on_error(output, |output| message.run_from(&self.keys, text, output));
        }
        if suite.mode == Mode::Gcm && checks_first {
            let aad = aad.unwrap_or_default();
            return wipe_on_error(output, |output| {
                let into = Text::Into(text, &mut output[..text.len()]);
                open_first(self, checked_iv, aad, into, tag).map(|()| text.len())
            });
        }
        let crypter = self.crypter(direction, iv, aad)?;
        let body =
            length.saturating_sub(crypter.holdback()) / crypter.block_size() * crypter.block_size();
        let tail = Zeroizing::new(input[body..].to_vec());
        finish_message(crypter, Some(&input[..body]), output, body, tail)
    }

    fn in_place(
        &self,
        direction: Direction,
        iv: Option<&[u8]>,
        buffer: &mut [u8],
        length: usize,
        aad: Option<&[u8]>,
        seen: Output,
    ) -> Result<usize, JobError> {
        let suite = self.keys.suite;
        let needed = self.max_output_length(direction, length).max(length);
        if buffer.len() < needed {
            return Err(JobError::OutputTooSmall {
                needed,
                got: buffer.len(),
            });
        }
        let checked_iv = check_iv_and_aad(suite, iv, aad, self.allow_short_gcm_iv)?;
        check_message_length(suite, needed as u64)?;
        let gcm_decrypt = suite.mode == Mode::Gcm && direction == Direction::Decrypt;
        if gcm_decrypt && length < TAG_BYTES {
            return Err(JobError::MissingTag(length as u64));
        }
        let text = if gcm_decrypt {
            length - TAG_BYTES
        } else {
            length
        };
        let inline = self.inline(direction, text);
        let mut tag = [0u8; TAG_BYTES];
        if gcm_decrypt {
            tag.copy_from_slice(&buffer[text..length]);
        }
        let checks_first = seen.checks_first(direction);
        if !inline && gcm_decrypt && checks_first {
            let aad = aad.unwrap_or_default();
            return wipe_on_error(buffer, |buffer| {
                let in_place = Text::InPlace(&mut buffer[..text]);
                open_first(self, checked_iv, aad, in_place, &tag).map(|()| text)
            });
        }
        if !inline {
            return process_in_place(self.crypter(direction, iv, aad)?, buffer, length);
        }
        if suite.mode == Mode::Ctr {
            // Nothing after the checks above can fail, so there is no wipe to arrange: a
            // short message's fixed cost, 16-byte AES-128-CTR messages 33.7 -> 24.5 ns on
            // the VAES-512 Xeon VM (the closure and the large `Result` it moves cost 9 ns).
            ctr::apply_from_iv(self.keys.cipher(), checked_iv, &mut buffer[..text]);
            return Ok(text);
        }
        let message = Inline {
            direction,
            padding: self.padding,
            iv: checked_iv,
            aad: aad.unwrap_or_default(),
            tag: if gcm_decrypt { &tag } else { &[] },
            checks_first,
        };
        wipe_on_error(buffer, |buffer| message.run(&self.keys, buffer, text))
    }
}

/// Who can see a whole message's output while it is being decrypted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Output {
    /// Memory the caller passed, which others may be reading during the call: no GCM
    /// plaintext reaches it before the tag matched (`open_first`).
    Caller,
    /// A buffer this call allocated and hands out only on success: GCM decrypts it in one
    /// pass and checks the tag at the end.
    Private,
}

impl Output {
    /// Whether a GCM message in `direction` must have its tag checked before any plaintext
    /// is written to this output.
    fn checks_first(self, direction: Direction) -> bool {
        self == Output::Caller && direction == Direction::Decrypt
    }
}

/// Runs `work` on `buffer` and wipes the buffer if it fails, so that no partial or
/// unauthenticated output is left in it.
fn wipe_on_error(
    buffer: &mut [u8],
    work: impl FnOnce(&mut [u8]) -> Result<usize, JobError>,
) -> Result<usize, JobError> {
    let outcome = work(buffer);
    if outcome.is_err() {
        #[cfg(test)]
        tests::before_wipe(buffer);
        buffer.zeroize();
    }
    outcome
}

/// One whole message on the calling thread, its IV and AAD already checked.
struct Inline<'a> {
    direction: Direction,
    padding: bool,
    iv: &'a [u8],
    aad: &'a [u8],
    /// The received tag, for GCM decryption (the text then excludes it).
    tag: &'a [u8],
    /// Whether GCM decryption checks the tag before it writes any plaintext (output the
    /// caller can see) or decrypts in one pass and checks after (a private buffer).
    checks_first: bool,
}

impl Inline<'_> {
    /// [`Inline::run`] with the input in `source` and the output in `buffer`. GCM reads the
    /// source and writes the buffer in one pass, CTR copies and processes a cache-sized piece
    /// at a time (`ctr::apply_into`), and the other modes copy it all first.
    fn run_from(
        &self,
        keys: &KeySchedule,
        source: &[u8],
        buffer: &mut [u8],
    ) -> Result<usize, JobError> {
        let length = source.len();
        match keys.suite.mode {
            Mode::Gcm => self.run_gcm(keys, Some(source), buffer, length),
            Mode::Ctr => {
                let counter = Counter::new(self.iv, CounterRule::Full);
                ctr::apply_into(keys.cipher(), counter, source, &mut buffer[..length]);
                Ok(length)
            }
            _ => {
                buffer[..length].copy_from_slice(source);
                self.run(keys, buffer, length)
            }
        }
    }

    /// Runs the message in `buffer[..length]` in place (the rest of `buffer` is room for
    /// padding or a tag) and returns the output's length.
    fn run(&self, keys: &KeySchedule, buffer: &mut [u8], length: usize) -> Result<usize, JobError> {
        let suite = keys.suite;
        let cipher = keys.cipher();
        let block_size = cipher.block_size();
        let padding = self.padding && suite.mode.pads();
        match (suite.mode, self.direction) {
            (Mode::Ctr, _) => {
                ctr::apply(
                    cipher,
                    Counter::new(self.iv, CounterRule::Full),
                    &mut buffer[..length],
                );
                Ok(length)
            }
            (Mode::Gcm, _) => self.run_gcm(keys, None, buffer, length),
            (mode, direction) => {
                let partial = || JobError::PartialBlock {
                    length: length as u64,
                    block_size,
                };
                let total = match direction {
                    Direction::Encrypt if padding => {
                        let count = block_size - length % block_size;
                        buffer[length..length + count].fill(count as u8);
                        length + count
                    }
                    _ if !length.is_multiple_of(block_size) => return Err(partial()),
                    Direction::Decrypt if padding && length == 0 => return Err(partial()),
                    _ => length,
                };
                if total == 0 {
                    return Ok(0);
                }
                let data = &mut buffer[..total];
                match (mode, direction) {
                    (Mode::Cbc, Direction::Encrypt) => {
                        let mut chain = [0u8; 16];
                        chain[..block_size].copy_from_slice(self.iv);
                        cbc::encrypt(cipher, &mut chain[..block_size], data);
                        chain.zeroize();
                    }
                    (Mode::Cbc, Direction::Decrypt) => cbc::decrypt(cipher, self.iv, data),
                    _ => ecb::apply(cipher, direction, data),
                }
                if direction == Direction::Encrypt || !padding {
                    return Ok(total);
                }
                let last = &data[total - block_size..];
                let kept = padding::unpadded_length(last).ok_or(JobError::BadPadding(suite))?;
                Ok(total - block_size + kept)
            }
        }
    }

    /// GCM over `buffer[..length]`, read from `source` when there is one or else in place:
    /// encryption in one pass, the tag appended; decryption in one pass, the tag checked
    /// after, or with `checks_first` the tag checked before anything is decrypted.
    fn run_gcm(
        &self,
        keys: &KeySchedule,
        source: Option<&[u8]>,
        buffer: &mut [u8],
        length: usize,
    ) -> Result<usize, JobError> {
        let key = keys.gcm()?;
        let cipher = keys.cipher();
        if length as u64 > MAX_TEXT_BYTES {
            return Err(GcmError::TooLong.into());
        }
        if length <= SHORT_TEXT_BYTES {
            // Short texts: GcmKey's whole-message calls take one cipher call and one GHASH
            // call for the lot (and decryption checks the tag before decrypting).
            let text = &mut buffer[..length];
            if let Some(source) = source {
                text.copy_from_slice(&source[..length]);
            }
            return match self.direction {
                Direction::Encrypt => {
                    let tag = key.seal(cipher, self.iv, self.aad, text)?;
                    buffer[length..length + TAG_BYTES].copy_from_slice(&tag);
                    Ok(length + TAG_BYTES)
                }
                Direction::Decrypt => {
                    key.open(cipher, self.iv, self.aad, text, self.tag)?;
                    Ok(length)
                }
            };
        }
        let source = source.map(|source| &source[..length]);
        if self.direction == Direction::Decrypt && self.checks_first {
            // Output the caller can see: the tag checked over the ciphertext, then CTR.
            let output = &mut buffer[..length];
            match source {
                Some(source) => {
                    key.open_into(cipher, self.iv, self.aad, source, output, self.tag)?
                }
                None => key.open(cipher, self.iv, self.aad, output, self.tag)?,
            }
            return Ok(length);
        }
        // Longer ones: one whole-message call (decryption's output, private to the call, is
        // wiped by the caller, `wipe_on_error`, when the tag does not match).
        let tag = key.crypt_message(
            cipher,
            self.direction,
            self.iv,
            self.aad,
            source,
            &mut buffer[..length],
        )?;
        match self.direction {
            Direction::Encrypt => {
                buffer[length..length + TAG_BYTES].copy_from_slice(&tag);
                Ok(length + TAG_BYTES)
            }
            Direction::Decrypt => {
                check_tag(tag, self.tag)?;
                Ok(length)
            }
        }
    }
}
