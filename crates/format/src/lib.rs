//! Encrypted files people can trust: Cobblestone chunked AES-GCM
//! (c2sp.org/chunked-encryption), with a small parcrypt header in front for passphrases.
//!
//! - [`cobblestone`]: the key derivation (HKDF-Expand-SHA-512 to key, base nonce and key
//!   commitment), chunk geometry and nonces, exactly as the specification says.
//! - [`header`]: the 40-byte parcrypt header (AEAD, key source, argon2id parameters), bound
//!   into the Cobblestone context. docs/FORMAT.md specifies the bytes.
//! - [`message`]: the [`Envelope`] before chunk 0; reading it tells whether a key or a
//!   passphrase is needed, unlocking it checks the commitment before any chunk is touched.
//! - [`chunks`]: the [`ChunkBatcher`] trait, one call that seals or opens a batch of chunks
//!   (the CPU backend spreads them over cores; a GPU backend runs one kernel), and
//!   [`CpuChunks`]; [`gpu_chunks`]: the GPU backend, [`GpuChunks`].
//! - [`stream`]: bounded-memory streaming in both directions; decryption writes only
//!   authenticated chunks.
//! - [`range`]: random-access decryption of a byte range.
//!
//! The command line (`parcrypt encrypt|decrypt`) is a thin layer over this crate.

pub mod chunks;
pub mod cobblestone;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod gpu_chunks;
pub mod header;
pub mod message;
pub mod range;
pub mod stream;

use std::io::{Read, Write};

pub use chunks::{ChunkBatcher, CpuChunks};
pub use cobblestone::{MessageKeys, Suite};
pub use error::FormatError;
pub use gpu_chunks::{batcher_for, GpuChunks};
pub use header::{Argon2Params, KeySource, ParcryptHeader};
pub use message::{Envelope, Format, Salts, Secret, Setup};
pub use range::ByteRange;
pub use stream::StreamOptions;

/// Encrypts `reader` into a whole message (envelope and chunks) on `writer`; returns the
/// plaintext bytes.
pub fn encrypt(
    batcher: &dyn ChunkBatcher,
    setup: &Setup<'_>,
    secret: Secret<'_>,
    reader: &mut (dyn Read + Send),
    writer: &mut (dyn Write + Send),
    options: &StreamOptions<'_>,
) -> Result<u64, FormatError> {
    let (envelope, keys) = Envelope::create(setup, secret)?;
    writer
        .write_all(&envelope.to_bytes())
        .map_err(FormatError::Write)?;
    stream::encrypt_chunks(batcher, &keys, reader, writer, options)
}

/// Decrypts a whole message from `reader` to `writer`; returns the plaintext bytes. Only
/// authenticated chunks are written; on error the caller discards what was written.
pub fn decrypt(
    batcher: &dyn ChunkBatcher,
    format: Format,
    secret: Secret<'_>,
    context: &[u8],
    reader: &mut (dyn Read + Send),
    writer: &mut (dyn Write + Send),
    options: &StreamOptions<'_>,
) -> Result<u64, FormatError> {
    let envelope = Envelope::read(format, reader)?;
    let keys = envelope.unlock(secret, context)?;
    stream::decrypt_chunks(batcher, &keys, reader, writer, options)
}
