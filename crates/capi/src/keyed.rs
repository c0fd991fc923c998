//! Every call this crate makes to the engine's cipher, in one place: a
//! [`KeyedCipher`] keyed once (key schedule and, for GCM, the GHASH key), with the IV given
//! at creation or per call.

use std::sync::Arc;

use parcrypt_engine::segmented::SegmentedMessage;
use parcrypt_engine::{CipherSpec, Direction, Engine, KeyedCipher};

use crate::error::{Failure, ParcryptStatus};

/// A cipher suite and key on an engine, with the IV given when it was made (if any).
pub(crate) struct Keyed {
    cipher: KeyedCipher,
    /// The IV given at creation, used by calls that bring none.
    creation_iv: Option<Vec<u8>>,
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
        let cipher = KeyedCipher::new(engine, suite, key)?.padding(padding);
        if iv.is_some() {
            // An IV of the wrong length (or one given to ECB) fails now, with the engine's
            // reason, rather than at the first message.
            cipher.check_iv(iv)?;
        }
        Ok(Keyed {
            cipher,
            creation_iv: iv.map(<[u8]>::to_vec),
        })
    }

    /// The most bytes a message of `input_length` bytes turns into.
    pub(crate) fn max_output_length(&self, direction: Direction, input_length: usize) -> usize {
        self.cipher.max_output_length(direction, input_length)
    }

    /// Starts a message whose segments the caller runs on its own threads, under `iv` or
    /// else the creation IV.
    pub(crate) fn segmented(
        &self,
        direction: Direction,
        iv: Option<&[u8]>,
        aad: Option<&[u8]>,
        input_length: usize,
    ) -> Result<SegmentedMessage, Failure> {
        let iv = iv.or(self.creation_iv.as_deref());
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
        // Without an IV of its own the call takes the creation IV; with neither, a mode that
        // needs one fails with the engine's own reason.
        let iv = iv.or(self.creation_iv.as_deref());
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
