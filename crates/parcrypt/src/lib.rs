//! parcrypt: block-cipher encryption at the speed of the hardware.
//!
//! This is the crate a program depends on. It re-exports the layers underneath, each a crate
//! of its own:
//!
//! - [`ciphers`]: AES-128/192/256, Blowfish and RC6 with a batch API;
//! - [`modes`]: ECB, CBC, CTR and GCM over that API, split into parallel ranges;
//! - [`gpu`]: the GPU layer (one kernel source; OpenCL and CUDA behind the cargo features
//!   `opencl` and `cuda`);
//! - [`engine`]: runs a job on a backend (`seq`, `threads`, `pool`, a GPU, or `auto`);
//! - [`format`](mod@format): authenticated, chunked, seekable files (Cobblestone inside a small header)
//!   and the secrets they are opened with.
//!
//! Messages in memory: [`Aead`] seals each under a fresh random nonce from the operating
//! system and returns `nonce || ciphertext || tag`, which any AES-GCM library opens.
//!
//! ```
//! use parcrypt::engine::{Backend, Engine};
//! use parcrypt::Aead;
//!
//! let suite = "aes-256-gcm".parse()?;
//! let key = Aead::generate_key(suite)?;
//! let aead = Aead::new(Engine::new(Backend::Auto, None)?, suite, &key)?;
//! let sealed = aead.seal(b"attack at dawn", Some(b"header"))?;
//! assert_eq!(aead.open(&sealed, Some(b"header"))?, b"attack at dawn");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A protocol that manages its own nonces uses [`engine::KeyedCipher`], which takes one per
//! message; [`engine::Cipher`] holds the IV of a single message and refuses a second.
//!
//! Files, in a few lines (`examples/file_encryption.rs` and `examples/seek.rs` show more):
//!
//! ```
//! use std::io::{Read, Write};
//! use parcrypt::engine::{Backend, Engine};
//! use parcrypt::format::{batcher_for, Decryptor, Encryptor, Format, Secret, Setup};
//!
//! let engine = Engine::new(Backend::Pool, None)?;
//! let batcher = batcher_for(&engine);
//! let key = [7u8; 16];
//! let mut writer = Encryptor::new(&Setup::default(), Secret::Key(&key))?
//!     .wrap_output(batcher.as_ref(), Vec::new())?;
//! writer.write_all(b"sealed in 16 KiB chunks, each authenticated")?;
//! let sealed = writer.finish()?;
//!
//! let mut plain = Vec::new();
//! Decryptor::new(Format::Parcrypt, &sealed[..])?
//!     .unlock(Secret::Key(&key), b"")?
//!     .reader(batcher.as_ref())
//!     .read_to_end(&mut plain)?;
//! assert_eq!(plain, b"sealed in 16 KiB chunks, each authenticated");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub use parcrypt_engine::Aead;

pub use parcrypt_ciphers as ciphers;
pub use parcrypt_engine as engine;
pub use parcrypt_format as format;
pub use parcrypt_gpu as gpu;
pub use parcrypt_modes as modes;

/// The speed check behind `parcrypt bench`: this machine's backends timed after each gave
/// `seq`'s bytes.
pub use parcrypt_bench as bench;
