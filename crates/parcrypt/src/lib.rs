//! parcrypt encrypts files and messages with AES-GCM (and, for old protocols, AES, Blowfish
//! and RC6 in ECB, CBC and CTR) as fast as the machine allows: on one thread, on every core,
//! or on a GPU.
//!
//! Files are written in parcrypt's own format: a small header, then the data in 16 KiB
//! chunks, each authenticated on its own, so that a file is read from any offset and a
//! damaged, truncated or reordered file is refused before any of it is released. A file is
//! locked with a key, with a passphrase (stretched with argon2id), or to public-key
//! recipients (age's `age1...` and post-quantum `age1pq1...` keys), which anyone can
//! encrypt to while only their identities decrypt.
//!
//! # Encrypting a file
//!
//! ```
//! use parcrypt::Secret;
//!
//! # let folder = tempfile::tempdir()?;
//! # let report = folder.path().join("report.txt");
//! # let sealed = folder.path().join("report.txt.pc");
//! # let opened = folder.path().join("report.opened.txt");
//! # std::fs::write(&report, "quarterly figures")?;
//! let passphrase = b"correct horse battery staple";
//! parcrypt::encrypt_file(&report, &sealed, Secret::Passphrase(passphrase))?;
//! parcrypt::decrypt_file(&sealed, &opened, Secret::Passphrase(passphrase))?;
//! # assert_eq!(std::fs::read(&opened)?, b"quarterly figures");
//! # Ok::<(), parcrypt::Error>(())
//! ```
//!
//! To public-key recipients, and back with an identity (`parcrypt keygen` makes identity
//! files in age-keygen's layout; [`age::read_identity_file`] reads them):
//!
//! ```
//! use parcrypt::{Identity, Recipient, Secret};
//!
//! # let folder = tempfile::tempdir()?;
//! # let report = folder.path().join("report.txt");
//! # let sealed = folder.path().join("report.txt.pc");
//! # let opened = folder.path().join("report.opened.txt");
//! # std::fs::write(&report, "quarterly figures")?;
//! let identity = parcrypt::age::X25519Identity::generate();
//! let recipient: Recipient = identity.to_public().to_string().parse()?; // "age1..."
//! parcrypt::encrypt_file(&report, &sealed, Secret::Recipients(&[recipient]))?;
//! parcrypt::decrypt_file(&sealed, &opened, Secret::Identities(&[Identity::from(identity)]))?;
//! # assert_eq!(std::fs::read(&opened)?, b"quarterly figures");
//! # Ok::<(), parcrypt::Error>(())
//! ```
//!
//! The destination appears only once it is complete and, when decrypting, authenticated.
//! An existing destination is refused; [`FileOptions`] changes that and the rest (the
//! engine, the suite, argon2id's cost, a context string).
//!
//! # Encrypting a message in memory
//!
//! [`Aead`] seals each message under a fresh random nonce and returns
//! `nonce || ciphertext || tag`, which any AES-GCM library opens:
//!
//! ```
//! use parcrypt::{Aead, Engine};
//!
//! let suite = "aes-256-gcm".parse()?;
//! let key = Aead::generate_key(suite)?;
//! let engine = Engine::builder().build()?;
//! let aead = Aead::new(&engine, suite, &key)?;
//! let sealed = aead.seal(b"attack at dawn", Some(b"header"))?;
//! assert_eq!(aead.open(&sealed, Some(b"header"))?, b"attack at dawn");
//! # Ok::<(), parcrypt::Error>(())
//! ```
//!
//! # Which API do I want?
//!
//! - A file on disk: [`encrypt_file`] and [`decrypt_file`], or [`FileOptions`] for more.
//! - Data that flows (a socket, a pipe, a buffer built piece by piece): [`Encryptor`] gives
//!   a writer ([`EncryptingWriter`]); [`Decryptor`] gives a reader ([`DecryptingReader`]),
//!   or a [`SeekableReader`] that reads any range of a file and authenticates only the
//!   chunks under it.
//! - Messages in memory, AES-GCM on the wire: [`Aead`].
//! - Where the work runs: an [`Engine`], built with [`Engine::builder`] (backend, threads,
//!   GPU device, tune file). Cloning an engine is cheap; every clone shares its threads.
//! - GPUs and CPU features of this machine, tuning: [`devices`].
//! - A file split into parts for a cluster: [`parts`].
//! - Reading keys and passphrases from files, hex or a terminal: [`secrets`].
//! - age v1 files (X25519, post-quantum hybrid and passphrase recipients, ASCII armor), read
//!   and written with the payload sealed and opened in parallel: [`age`].
//! - Raw modes with your own IVs and nonces (ECB, CBC, CTR, GCM; AES, Blowfish, RC6), for
//!   interoperating with an existing protocol: [`hazmat`]. Easy to misuse: a nonce used
//!   twice under one key gives GCM's authentication away.
//!
//! Every call's error converts into the one [`Error`] type.
//!
//! # Cargo features
//!
//! `opencl`, `cuda` and `hip` (all on by default) build the GPU backends; each GPU API is
//! opened at run time, so a machine without it gets an error naming it, not a link failure.
//! `default-features = false` builds a CPU-only library.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod error;
mod one_call;

pub mod age;
pub mod devices;
pub mod environment;
pub mod files;
pub mod hazmat;
pub mod parts;
pub mod secrets;

/// The speed check behind `parcrypt bench`: this machine's backends timed after each gave
/// `seq`'s bytes.
pub use parcrypt_bench as bench;

/// The detailed errors that [`Error`] wraps, for a program that tells them apart.
pub mod errors {
    pub use crate::error::{
        AgeError, EngineError, FormatError, GcmError, GpuError, JobError, SecretError, SpecError,
    };
}

pub use error::{Error, Result};
pub use one_call::{decrypt_file, encrypt_file, FileOptions};

pub use parcrypt_engine::{
    Aead, Backend, CipherSpec, Engine, EngineBuilder, EngineWarning, NONCE_BYTES, SEAL_OVERHEAD,
};
pub use parcrypt_format::{
    batcher_for, Argon2Params, ByteRange, ChunkBatcher, DecryptingReader, Decryptor,
    EncryptingWriter, Encryptor, Envelope, Format, KdfCost, KdfLimits, RecipientHeader, Salts,
    SeekableReader, Setup, StreamOptions, Suite, UnlockedDecryptor, Weakness,
};
pub use secrets::{Secret, SecretBytes};

/// Whom a file is encrypted to (`age1...`, `age1pq1...`; [`Secret::Recipients`]), and what
/// decrypts it (`AGE-SECRET-KEY-1...`, `AGE-SECRET-KEY-PQ-1...`; [`Secret::Identities`]):
/// age's keys, for parcrypt's own files and for age files ([`age`]).
pub use parcrypt_age::{Identity, Recipient};
