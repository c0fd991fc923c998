//! Keys and passphrases: reading them from files, hex or a terminal, checking them, and
//! the [`Secret`] a file is locked with (a key, a passphrase, or recipients to encrypt to
//! and identities to decrypt with; [`crate::age`] reads identity and recipients files).
//!
//! Every secret read here comes back as [`SecretBytes`], wiped from memory when dropped.
//!
//! ```
//! use parcrypt::secrets::key_from_hex;
//! let key = key_from_hex("000102030405060708090a0b0c0d0e0f")?;
//! assert_eq!(key.len(), 16);
//! assert!(key_from_hex("0001").is_err());
//! # Ok::<(), parcrypt::Error>(())
//! ```

pub use parcrypt_format::secrets::*;
pub use parcrypt_format::Secret;
