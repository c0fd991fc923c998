//! Argon2id made cheap for the format's tests, which check the file handling, not the key
//! derivation's cost; real files use [`Argon2Params::DEFAULT`].

use parcrypt_format::Argon2Params;

/// 64 KiB, one pass, one lane.
pub const CHEAP: Argon2Params = Argon2Params {
    memory_kib: 64,
    passes: 1,
    lanes: 1,
};
