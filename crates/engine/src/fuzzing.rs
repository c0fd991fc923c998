//! Properties checked on arbitrary input, shared by the cargo-fuzz target `raw_gcm_open`
//! (`fuzz/`) and by a stable test that runs them on random input and the kept corpus
//! (`crates/engine/tests/raw_gcm_fuzz.rs`). Each function panics when a property fails,
//! which is how a fuzzer learns of it; on well-behaved code none of them panics.

use std::sync::{Arc, OnceLock};

use parcrypt_modes::CipherSpec;

use crate::crypter::JobError;
use crate::open::{Authenticated, Destination, OpenOptions};
use crate::stream::StreamError;
use crate::{Backend, Cipher, Engine, KeyedCipher};

/// Reads fuzz input as a stream of small choices; shared with `parcrypt_format`'s fuzz
/// properties. Once the input runs out, every choice is zero.
pub struct Choices<'a> {
    bytes: &'a [u8],
}

impl<'a> Choices<'a> {
    /// Choices read from the front of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    /// The next byte.
    pub fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&first, rest)) => {
                self.bytes = rest;
                first
            }
            None => 0,
        }
    }

    /// Up to `length` bytes (fewer when the input runs out).
    pub fn take(&mut self, length: usize) -> &'a [u8] {
        let (taken, rest) = self.bytes.split_at(length.min(self.bytes.len()));
        self.bytes = rest;
        taken
    }

    /// A number below `below` from the next four bytes (0 when `below` is 0).
    pub fn number(&mut self, below: usize) -> usize {
        let value =
            u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()]) as usize;
        if below == 0 {
            0
        } else {
            value % below
        }
    }
}

/// One engine on one thread and one on a pool of two, made once per process.
fn engines() -> &'static [Arc<Engine>; 2] {
    static ENGINES: OnceLock<[Arc<Engine>; 2]> = OnceLock::new();
    ENGINES.get_or_init(|| {
        [
            Arc::new(Engine::new(Backend::Seq, None).expect("a seq engine")),
            Arc::new(Engine::new(Backend::Pool, Some(2)).expect("a pool engine")),
        ]
    })
}

const SUITES: [&str; 6] = [
    "aes-128-gcm",
    "aes-192-gcm",
    "aes-256-gcm",
    "rc6-128-gcm",
    "rc6-192-gcm",
    "rc6-256-gcm",
];

/// A GCM message picked from fuzz input.
struct Message {
    spec: CipherSpec,
    key: Vec<u8>,
    iv: Vec<u8>,
    aad: Option<Vec<u8>>,
    options: (usize, usize),
    pool: bool,
}

fn message(choices: &mut Choices<'_>) -> Message {
    let shape = choices.byte();
    let spec: CipherSpec = SUITES[usize::from(shape & 0x7f) % SUITES.len()]
        .parse()
        .expect("a GCM suite");
    let key_bytes = spec.algorithm.key_lengths().0;
    let mut key = choices.take(key_bytes).to_vec();
    key.resize(key_bytes, 0);
    // Mostly the 12-byte fast path, sometimes any length from 1 to 32.
    let iv_bytes = match choices.byte() {
        byte if byte < 160 => 12,
        byte => usize::from(byte % 32) + 1,
    };
    let mut iv = choices.take(iv_bytes).to_vec();
    iv.resize(iv_bytes, 0);
    let aad_bytes = usize::from(choices.byte() % 40);
    let aad = (aad_bytes > 0).then(|| choices.take(aad_bytes).to_vec());
    // Small chunks and memory limits, so that short inputs cross chunk boundaries and reach
    // the spool file.
    let chunk_bytes = 16 * (usize::from(choices.byte() % 16) + 1);
    let memory_limit = usize::from(choices.byte()) * 2;
    Message {
        spec,
        key,
        iv,
        aad,
        options: (chunk_bytes, memory_limit),
        pool: shape & 0x80 != 0,
    }
}

impl Message {
    fn cipher(&self) -> Cipher {
        let engine = Arc::clone(&engines()[usize::from(self.pool)]);
        // Raw GCM takes short IVs when asked (`--allow-short-gcm-iv`); the fuzzer asks.
        let keyed = KeyedCipher::new(engine, self.spec, &self.key).expect("a valid key");
        Cipher::from_keyed(keyed.allow_short_gcm_iv(true), Some(&self.iv)).expect("a valid IV")
    }

    fn options(&self) -> OpenOptions<'static> {
        OpenOptions {
            chunk_bytes: self.options.0,
            memory_limit: self.options.1,
            // The seekable input is then read twice in place; the stream is copied.
            destination: Destination::Discardable,
            progress: None,
        }
    }
}

/// The outcome of decrypting `sealed` through the authenticate-first path, from a
/// seekable input and from a stream: the plaintext, or `None` after an authentication
/// failure (checked to have released nothing).
fn open_both_ways(
    cipher: &Cipher,
    aad: Option<&[u8]>,
    sealed: &[u8],
    options: &OpenOptions<'_>,
) -> Option<Vec<u8>> {
    let mut outcomes = Vec::new();
    for seekable in [true, false] {
        let mut cursor = std::io::Cursor::new(sealed);
        let first = if seekable {
            Authenticated::seekable(cipher, aad, &mut cursor, options)
        } else {
            Authenticated::stream(cipher, aad, &mut &sealed[..], options)
        };
        let mut released = Vec::new();
        let outcome = first.and_then(|first| first.decrypt(&mut released, options));
        match outcome {
            Ok(written) => {
                assert_eq!(written as usize, released.len());
                outcomes.push(Some(released));
            }
            Err(error) => {
                assert!(
                    matches!(
                        error,
                        StreamError::Job(JobError::Gcm(_) | JobError::MissingTag(_))
                    ),
                    "not an authentication error: {error}"
                );
                assert!(
                    released.is_empty(),
                    "released {} bytes before failing",
                    released.len()
                );
                outcomes.push(None);
            }
        }
    }
    assert_eq!(
        outcomes[0], outcomes[1],
        "seekable and streamed inputs disagree"
    );
    outcomes.pop().expect("two outcomes")
}

/// Arbitrary bytes as key, IV, AAD and ciphertext with tag: decryption through
/// [`Authenticated`] either fails with an authentication error and releases nothing, or
/// succeeds with what the one-shot [`Cipher::decrypt`] on one thread gives. Returns whether
/// the message opened.
pub fn raw_gcm_open(data: &[u8]) -> bool {
    let mut choices = Choices::new(data);
    let message = message(&mut choices);
    let sealed = choices.bytes;
    let cipher = message.cipher();
    let aad = message.aad.as_deref();
    let opened = open_both_ways(&cipher, aad, sealed, &message.options());
    let reference = KeyedCipher::new(Arc::clone(&engines()[0]), message.spec, &message.key)
        .expect("a valid key")
        .allow_short_gcm_iv(true)
        .decrypt(Some(&message.iv), sealed, aad)
        .ok();
    assert_eq!(
        opened, reference,
        "two-pass and one-shot decryption disagree"
    );
    opened.is_some()
}

/// A valid message sealed from the input (key, IV, AAD, plaintext picked from it) opens to
/// its plaintext, and with any one bit flipped (chosen by the input) never opens.
pub fn raw_gcm_flip(data: &[u8]) {
    let mut choices = Choices::new(data);
    let message = message(&mut choices);
    let flip = u32::from_le_bytes([
        choices.byte(),
        choices.byte(),
        choices.byte(),
        choices.byte(),
    ]);
    let plaintext = choices.bytes;
    let cipher = message.cipher();
    let aad = message.aad.as_deref();
    let sealed = cipher.encrypt(plaintext, aad).expect("sealing");
    let options = message.options();
    assert_eq!(
        open_both_ways(&cipher, aad, &sealed, &options).as_deref(),
        Some(plaintext),
        "a genuine message did not open"
    );
    let bit = flip as usize % (sealed.len() * 8);
    let mut forged = sealed;
    forged[bit / 8] ^= 1 << (bit % 8);
    assert_eq!(
        open_both_ways(&cipher, aad, &forged, &options),
        None,
        "a message with bit {bit} flipped opened"
    );
}
