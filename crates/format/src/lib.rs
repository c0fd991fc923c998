//! Encrypted files people can trust: Cobblestone chunked AES-GCM
//! (c2sp.org/chunked-encryption), with a small parcrypt header in front for passphrases,
//! or one with public-key recipients (age's `age1...` and `age1pq1...` keys).
//!
//! - [`cobblestone`]: the key derivation (HKDF-Expand-SHA-512 to key, base nonce and key
//!   commitment), chunk geometry and nonces, exactly as the specification says.
//! - [`header`]: the 40-byte parcrypt header (AEAD, key source, argon2id parameters), bound
//!   into the Cobblestone context. docs/FORMAT.md specifies the bytes.
//! - [`recipients`]: the version-2 header: a random 128-bit file key wrapped for each
//!   recipient in one stanza, a MAC over the header under a key derived from the file key, the
//!   whole header bound into the Cobblestone context.
//! - [`message`]: the [`Envelope`] before chunk 0; reading it tells whether a key, a
//!   passphrase or an identity is needed ([`Secret`]), unlocking it checks the commitment
//!   (and a recipient header's MAC) before any chunk is touched.
//! - [`chunks`]: the [`ChunkBatcher`] trait, one call that seals or opens a batch of chunks
//!   (the CPU backend spreads them over cores; a GPU backend runs one kernel), and
//!   [`CpuChunks`]; [`gpu_chunks`]: the GPU backend, [`GpuChunks`].
//! - [`stream`]: bounded-memory streaming in both directions; decryption writes only
//!   authenticated chunks.
//! - [`range`]: random-access decryption of a byte range.
//! - [`parts`]: sealing and opening ranges of one file's chunks in place, at their
//!   offsets, so that many processes or machines can share one file's work.
//!
//! The file API over those parts, what a program calls:
//! - [`Encryptor`] ([`writer`]): a new message under a key, a passphrase or to recipients; wraps any
//!   [`Write`] ([`EncryptingWriter`], finished by `finish()`) or streams from a reader;
//! - [`Decryptor`] ([`reader`]): reads the envelope, unlocks it, and yields the plaintext
//!   as a [`Read`] releasing only authenticated chunks ([`DecryptingReader`]), or over a
//!   seekable input as a `Read + Seek` ([`SeekableReader`], [`seekable`]);
//! - [`file`](mod@file): [`encrypt_file`] and [`decrypt_file`], which write beside the destination and
//!   rename only on success;
//! - [`secrets`]: keys from hex and key files, passphrases from files, the environment and
//!   the terminal, all wiped after use.
//!
//! The command line (`parcrypt encrypt|decrypt`) is a thin layer over this crate.
//!
//! ```
//! use std::io::{Read, Write};
//! use parcrypt_format::{CpuChunks, Decryptor, Encryptor, Format, Secret, Setup};
//! use parcrypt_engine::{Backend, Engine};
//!
//! let engine = Engine::new(Backend::Pool, None)?;
//! let batcher = CpuChunks::new(&engine);
//! let passphrase = b"correct horse battery staple";
//! // A cheap argon2id for the example; the default costs 64 MiB and three passes.
//! let setup = Setup {
//!     argon2: parcrypt_format::Argon2Params { memory_kib: 64, passes: 1, lanes: 1 },
//!     ..Setup::default()
//! };
//! let mut writer = Encryptor::new(&setup, Secret::Passphrase(passphrase))?
//!     .wrap_output(&batcher, Vec::new())?;
//! writer.write_all(&[42u8; 100_000])?;
//! let sealed = writer.finish()?;
//!
//! let decryptor = Decryptor::new(Format::Parcrypt, &sealed[..])?;
//! assert!(decryptor.envelope().needs_passphrase());
//! let mut plain = Vec::new();
//! decryptor
//!     .unlock(Secret::Passphrase(passphrase), b"")?
//!     .reader(&batcher)
//!     .read_to_end(&mut plain)?;
//! assert_eq!(plain, vec![42u8; 100_000]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod chunks;
pub mod cobblestone;
pub mod error;
pub mod file;
#[doc(hidden)]
pub mod fuzzing;
#[cfg(test)]
#[path = "../../engine/tests/support/gcm_batch.rs"]
mod gcm_batch;
pub mod gpu_chunks;
pub mod header;
pub mod message;
pub mod parts;
pub mod range;
pub mod reader;
pub mod recipients;
pub mod secrets;
pub mod seekable;
pub mod stream;
pub mod writer;

use std::io::{Read, Write};

pub use chunks::{ChunkBatcher, CpuChunks};
pub use cobblestone::{MessageKeys, Suite};
pub use error::FormatError;
pub use file::{decrypt_file, encrypt_file, FileOptions};
pub use gpu_chunks::{batcher_for, GpuChunks};
pub use header::{Argon2Params, KdfCost, KdfLimits, KeySource, ParcryptHeader, Weakness};
pub use message::{Envelope, Format, Salts, Secret, Setup};
pub use range::ByteRange;
pub use reader::{DecryptingReader, Decryptor, UnlockedDecryptor};
pub use recipients::RecipientHeader;
pub use secrets::{SecretBytes, SecretError};
pub use seekable::SeekableReader;
pub use stream::StreamOptions;
pub use writer::{EncryptingWriter, Encryptor};

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
    Encryptor::new(setup, secret)?.encrypt_stream(batcher, reader, writer, options)
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
    Decryptor::new(format, reader)?
        .unlock(secret, context)?
        .decrypt_to(batcher, writer, options)
}
