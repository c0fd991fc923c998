//! The engine: splits a job into work items and runs them on a backend.
//!
//! - [`Aead`] is the call to reach for first: AES-GCM that draws a fresh random nonce for
//!   every message and returns `nonce || ciphertext || tag` ([`Aead::seal`], [`Aead::open`]).
//! - [`Engine`] is a [`Backend`] with its threads and, for a GPU backend, its device; build
//!   one with [`Engine::builder`]. An engine follows tune tables only when its caller passes
//!   a tune directory or file ([`EngineBuilder::tune_directory`],
//!   [`EngineBuilder::tune_file`]); it reads no configuration of its own.
//! - [`KeyedCipher`] is a cipher suite and key on an engine, set up once (key schedule,
//!   GCM's powers of H) and reused for every message under that key, each with its own IV:
//!   whole messages in one call, into a new buffer, a caller's buffer or in place; cheap to
//!   clone and share between threads; small messages stay on the calling thread.
//! - [`Cipher`] is a [`KeyedCipher`] with the IV of one message: a second encryption under
//!   it is refused.
//! - [`Crypter`] runs one message fed in pieces ([`KeyedCipher::encryptor`] borrows the
//!   key's schedule); [`stream::process_stream`] drives one from
//!   a reader to a writer in bounded memory; [`open::Authenticated`] decrypts GCM in two
//!   passes (authenticate, then decrypt) so that no byte is released before the tag matched.
//! - `auto` chooses per job between one thread and the pool by a [`CostModel`] measured on
//!   this machine, and sends a tuned GPU the jobs its tune table says it finishes first.
//! - [`KeyedCipher::encrypt_on_device`] and [`KeyedCipher::decrypt_on_device`] run a message
//!   that already lives in CUDA device memory someone else owns (a CuPy array, a PyTorch
//!   tensor) where it lies, on the device [`cuda_device`] opens once per process.
//! - [`tune`] measures a GPU's best launch shapes and its CPU/GPU crossover.
//!
//! ```
//! use parcrypt_engine::{Aead, Backend, Engine};
//!
//! // Messages sealed under random nonces: nothing to manage, nothing to reuse by accident.
//! let aead = Aead::new(Engine::new(Backend::Auto, None)?, "aes-128-gcm".parse()?, &[9u8; 16])?;
//! let sealed = aead.seal(b"nonce || ciphertext || tag", None)?;
//! assert_eq!(aead.open(&sealed, None)?, b"nonce || ciphertext || tag");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A protocol that brings its own IVs keys a [`KeyedCipher`] once and gives one per message:
//!
//! ```
//! use parcrypt_engine::{Backend, Engine, KeyedCipher};
//!
//! let engine = Engine::builder().backend(Backend::Pool).build()?;
//! let cipher = KeyedCipher::new(engine, "aes-256-ctr".parse()?, &[1u8; 32])?;
//! let ciphertext = cipher.encrypt(Some(&[2u8; 16]), &[0u8; 1 << 20], None)?;
//! assert_eq!(cipher.decrypt(Some(&[2u8; 16]), &ciphertext, None)?, vec![0u8; 1 << 20]);
//! // Many small messages under the one key, each with its own IV.
//! for counter in 0u64..1000 {
//!     let mut iv = [0u8; 16];
//!     iv[..8].copy_from_slice(&counter.to_be_bytes());
//!     assert_eq!(cipher.encrypt(Some(&iv), b"sixteen bytes!!!", None)?.len(), 16);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
// No unsafe code but the pool team's one lifetime erasure (see the team module).
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod aead;
mod backend;
mod builder;
pub mod chunks;
mod cipher;
mod cost;
pub mod crypter;
mod device;
#[doc(hidden)]
pub mod fuzzing;
mod gpu;
mod keyed;
pub mod open;
pub mod segmented;
pub mod stream;
#[allow(unsafe_code)]
mod team;
#[cfg(test)]
#[path = "../tests/support/io.rs"]
mod test_io;
pub mod tune;

pub use aead::{Aead, MAX_SEALED_MESSAGES, NONCE_BYTES, SEAL_OVERHEAD};
pub use backend::{
    available_threads, check_threads, max_threads, Backend, Engine, EngineError, MIN_MAX_THREADS,
    THREADS_PER_CORE,
};
pub use builder::EngineBuilder;
pub use cipher::Cipher;
pub use cost::{CostModel, AUTO_PARALLEL_THRESHOLD};
pub use crypter::{Crypter, JobError, MAX_BLOCKS_64, MIN_GCM_IV_BYTES};
pub use device::{cuda_device, cuda_device_with_cache, DEVICE_GHASH_SEGMENT_BYTES};
pub use gpu::{tune_table_in, EngineWarning};
pub use keyed::{KeyedCipher, INLINE_MESSAGE_BYTES};
pub use parcrypt_ciphers::Implementation;
pub use parcrypt_modes::{CipherSpec, Direction, Mode};
/// How long an idle pool thread looks for the next job by default
/// ([`EngineBuilder::pool_spin`]).
pub use team::DEFAULT_SPIN as DEFAULT_POOL_SPIN;
