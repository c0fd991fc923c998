//! Every call this crate makes to the engine's [`Cipher`], in one place, so that a change of
//! that API (a keyed, reusable cipher taking its IV per message) changes only this module.
//!
//! Today a `Cipher` holds one IV; a call with its own IV builds a `Cipher` for that call,
//! which costs a key schedule (and, for GCM, the GHASH key) per call.

use std::sync::Arc;

use parcrypt_engine::{Cipher, CipherSpec, Direction, Engine, Mode};
use zeroize::Zeroizing;

use crate::error::{Failure, ParcryptStatus};

/// A cipher suite and key on an engine, with the IV given when it was made (if any).
pub(crate) struct Keyed {
    engine: Arc<Engine>,
    suite: CipherSpec,
    key: Zeroizing<Vec<u8>>,
    padding: bool,
    /// Runs messages under the IV given at creation; without one (and for a mode that
    /// needs one) it holds a placeholder IV, used only for output lengths and never for a
    /// message.
    cipher: Cipher,
    creation_iv: bool,
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
        padding: bool,
    ) -> Result<Keyed, Failure> {
        let creation_iv = iv.is_some() || suite.mode == Mode::Ecb;
        let placeholder = [0u8; 16];
        let iv = match (iv, suite.mode) {
            (Some(iv), _) => Some(iv),
            (None, Mode::Ecb) => None,
            (None, Mode::Gcm) => Some(&placeholder[..12]),
            (None, _) => Some(&placeholder[..suite.algorithm.block_size()]),
        };
        let cipher = Cipher::new(engine.clone(), suite, key, iv)?.padding(padding);
        Ok(Keyed {
            engine,
            suite,
            key: Zeroizing::new(key.to_vec()),
            padding,
            cipher,
            creation_iv,
        })
    }

    /// The most bytes a message of `input_length` bytes turns into.
    pub(crate) fn max_output_length(&self, direction: Direction, input_length: usize) -> usize {
        self.cipher.max_output_length(direction, input_length)
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
        let per_call;
        let cipher = match iv {
            Some(iv) => {
                per_call = Cipher::new(self.engine.clone(), self.suite, &self.key, Some(iv))?
                    .padding(self.padding);
                &per_call
            }
            None if self.creation_iv => &self.cipher,
            // Fails with the engine's own reason (this mode needs an IV).
            None => {
                per_call = Cipher::new(self.engine.clone(), self.suite, &self.key, None)?
                    .padding(self.padding);
                &per_call
            }
        };
        let written = match (direction, buffers) {
            (Direction::Encrypt, Buffers::Separate { input, output }) => {
                cipher.encrypt_into(input, output, aad)?
            }
            (Direction::Decrypt, Buffers::Separate { input, output }) => {
                cipher.decrypt_into(input, output, aad)?
            }
            (Direction::Encrypt, Buffers::InPlace { buffer, length }) => {
                cipher.encrypt_in_place(buffer, length, aad)?
            }
            (Direction::Decrypt, Buffers::InPlace { buffer, length }) => {
                cipher.decrypt_in_place(buffer, length, aad)?
            }
        };
        Ok(written)
    }
}
