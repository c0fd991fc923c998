//! Raw block-cipher modes with caller-chosen IVs and nonces: for interoperating with an
//! existing protocol or file format, and for measuring.
//!
//! These calls are easy to misuse. ECB leaks patterns, CBC and CTR do not authenticate, and
//! a GCM nonce used twice under one key lets an attacker forge messages. Prefer
//! [`crate::Aead`] for messages and [`crate::encrypt_file`] for files, which choose nonces
//! themselves.
//!
//! - [`Cipher`]: one message under one key and IV (the IV is used once: a second message
//!   is refused).
//! - [`KeyedCipher`]: one key, an IV per call, for a protocol that manages its nonces.
//! - [`segmented`]: one GCM message processed in segments across threads or machines.
//! - [`open`]: GCM decryption that authenticates before releasing any plaintext.
//! - [`stream`]: a raw mode over a reader and a writer.
//! - [`chunks`]: the chunk-level cipher of parcrypt files.
//!
//! ```
//! use parcrypt::hazmat::{Cipher, KeyedCipher};
//! use parcrypt::Engine;
//!
//! let engine = Engine::builder().build()?;
//!
//! // One CBC message under one key and IV.
//! let cbc = Cipher::new(&engine, "aes-128-cbc".parse()?, &[1u8; 16], Some(&[2u8; 16]))?;
//! let ciphertext = cbc.encrypt(b"padded to whole blocks", None)?;
//! assert_eq!(ciphertext.len(), 32);
//! assert_eq!(cbc.decrypt(&ciphertext, None)?, b"padded to whole blocks");
//!
//! // CTR with the caller's IV on every call.
//! let ctr = KeyedCipher::new(&engine, "aes-128-ctr".parse()?, &[1u8; 16])?;
//! let iv = [3u8; 16];
//! let ciphertext = ctr.encrypt(Some(&iv), b"raw counter mode", None)?;
//! assert_eq!(ctr.decrypt(Some(&iv), &ciphertext, None)?, b"raw counter mode");
//! # Ok::<(), parcrypt::Error>(())
//! ```

pub use parcrypt_ciphers::{Algorithm, Implementation};
pub use parcrypt_engine::{
    Cipher, CostModel, KeyedCipher, AUTO_PARALLEL_THRESHOLD, DEVICE_GHASH_SEGMENT_BYTES,
    INLINE_MESSAGE_BYTES, MAX_BLOCKS_64, MAX_SEALED_MESSAGES, MIN_GCM_IV_BYTES,
};
pub use parcrypt_modes::{Direction, Mode};

/// One GCM message cut into segments that are processed apart and joined.
pub mod segmented {
    pub use parcrypt_engine::segmented::*;
}

/// GCM decryption that authenticates the whole message before any plaintext is released.
pub mod open {
    pub use parcrypt_engine::open::*;
}

/// A raw mode run over a reader and a writer in large pieces.
pub mod stream {
    pub use parcrypt_engine::stream::*;
}

/// The chunk cipher of parcrypt and Cobblestone files: sizes, derived keys, batchers.
pub mod chunks {
    pub use parcrypt_format::cobblestone::*;
    pub use parcrypt_format::{ChunkBatcher, CpuChunks, GpuChunks};
}
