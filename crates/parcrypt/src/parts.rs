//! A parcrypt file split into byte ranges ("parts") that separate workers seal or open on
//! their own, for a cluster or a job scheduler: a plan made once with the secret, parts
//! processed anywhere with the derived keys only, and a result that is byte for byte the
//! file one machine would have written.

pub use parcrypt_format::parts::*;
