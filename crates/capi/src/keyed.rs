//! Every call this crate makes to the engine's cipher, in one place: a
//! [`KeyedCipher`] keyed once (key schedule and, for GCM, the GHASH key), with the IV given
//! at creation (an engine [`Cipher`], which encrypts one message under it) or per call.

use std::sync::Arc;

use parcrypt::hazmat::segmented::SegmentedMessage;
use parcrypt::hazmat::{Cipher, Direction, KeyedCipher};
use parcrypt::{CipherSpec, Engine};

use crate::error::{Failure, ParcryptStatus};

/// A cipher suite and key on an engine, with the IV given when it was made (if any).
pub(crate) struct Keyed {
    cipher: KeyedCipher,
    /// The IV given at creation, used by calls that bring none: it encrypts one message.
    creation: Option<Cipher>,
}

/// What a cipher's setup says beyond its suite and key.
#[derive(Clone, Copy)]
pub(crate) struct Setup {
    /// PKCS#7 for ECB and CBC.
    pub(crate) padding: bool,
    /// GCM IVs of 1 to 11 bytes are taken.
    pub(crate) allow_short_gcm_iv: bool,
}

/// Where a message comes from and goes to.
pub(crate) enum Buffers<'a> {
    /// Input and output in separate memory.
    Separate {
        input: &'a [u8],
        output: &'a mut [u8],
    },
    /// The message in `buffer[..length]`, the output written over it.
    InPlace { buffer: &'a mut [u8], length: usize },
}

impl Buffers<'_> {
    fn input_length(&self) -> usize {
        match self {
            Buffers::Separate { input, .. } => input.len(),
            Buffers::InPlace { length, .. } => *length,
        }
    }

    fn output_capacity(&self) -> usize {
        match self {
            Buffers::Separate { output, .. } => output.len(),
            Buffers::InPlace { buffer, .. } => buffer.len(),
        }
    }
}

impl Keyed {
    /// Checks the key (and the IV, when given) now.
    pub(crate) fn new(
        engine: Arc<Engine>,
        suite: CipherSpec,
        key: &[u8],
        iv: Option<&[u8]>,
        setup: Setup,
    ) -> Result<Keyed, Failure> {
        crate::error::warn_engine(&engine, suite);
        let cipher = KeyedCipher::new(engine, suite, key)?
            .padding(setup.padding)
            .allow_short_gcm_iv(setup.allow_short_gcm_iv);
        // An IV of the wrong length (or one given to ECB) fails now, with the engine's
        // reason, rather than at the first message.
        let creation = match iv {
            Some(iv) => Some(Cipher::from_keyed(cipher.clone(), Some(iv))?),
            None => None,
        };
        Ok(Keyed { cipher, creation })
    }

    /// The most bytes a message of `input_length` bytes turns into.
    pub(crate) fn max_output_length(&self, direction: Direction, input_length: usize) -> usize {
        self.cipher.max_output_length(direction, input_length)
    }

    /// Starts a message whose segments the caller runs on its own threads, under `iv` or
    /// else the creation IV (whose one encryption this then is).
    pub(crate) fn segmented(
        &self,
        direction: Direction,
        iv: Option<&[u8]>,
        aad: Option<&[u8]>,
        input_length: usize,
    ) -> Result<SegmentedMessage, Failure> {
        let iv = match (iv, &self.creation, direction) {
            (Some(iv), _, _) => Some(iv),
            (None, Some(creation), Direction::Encrypt) => {
                // The segments write into the caller's memory, which is the caller's to
                // size: only the message's own checks come before the IV is spent.
                creation.iv_for_encryption(input_length, usize::MAX, aad)?
            }
            (None, Some(creation), Direction::Decrypt) => creation.iv(),
            (None, None, _) => None,
        };
        Ok(self.cipher.segmented(direction, iv, aad, input_length)?)
    }

    /// Runs one whole message under the creation IV, or under `iv` when given; returns the
    /// output's length. On failure an output may hold nothing of the message: decryption
    /// wipes it (no unauthenticated plaintext is released).
    pub(crate) fn process(
        &self,
        direction: Direction,
        iv: Option<&[u8]>,
        aad: Option<&[u8]>,
        buffers: Buffers<'_>,
    ) -> Result<usize, Failure> {
        let needed = self.max_output_length(direction, buffers.input_length());
        if buffers.output_capacity() < needed {
            return Err(Failure::new(
                ParcryptStatus::OutputTooSmall,
                format!(
                    "the output buffer holds {} bytes; this message needs {needed}",
                    buffers.output_capacity()
                ),
            )
            .needing(needed));
        }
        // Without an IV of its own the call takes the creation IV, which encrypts one
        // message; with neither, a mode that needs one fails with the engine's own reason.
        if let (None, Some(creation)) = (iv, &self.creation) {
            let written = match (direction, buffers) {
                (Direction::Encrypt, Buffers::Separate { input, output }) => {
                    creation.encrypt_into(input, output, aad)?
                }
                (Direction::Decrypt, Buffers::Separate { input, output }) => {
                    creation.decrypt_into(input, output, aad)?
                }
                (Direction::Encrypt, Buffers::InPlace { buffer, length }) => {
                    creation.encrypt_in_place(buffer, length, aad)?
                }
                (Direction::Decrypt, Buffers::InPlace { buffer, length }) => {
                    creation.decrypt_in_place(buffer, length, aad)?
                }
            };
            return Ok(written);
        }
        let cipher = &self.cipher;
        let written = match (direction, buffers) {
            (Direction::Encrypt, Buffers::Separate { input, output }) => {
                cipher.encrypt_into(iv, input, output, aad)?
            }
            (Direction::Decrypt, Buffers::Separate { input, output }) => {
                cipher.decrypt_into(iv, input, output, aad)?
            }
            (Direction::Encrypt, Buffers::InPlace { buffer, length }) => {
                cipher.encrypt_in_place(iv, buffer, length, aad)?
            }
            (Direction::Decrypt, Buffers::InPlace { buffer, length }) => {
                cipher.decrypt_in_place(iv, buffer, length, aad)?
            }
        };
        Ok(written)
    }
}
