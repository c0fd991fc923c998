//! parcrypt's own speed check: what `parcrypt bench` runs, in the spirit of `openssl speed`
//! and `cryptsetup benchmark`.
//!
//! A run ([`speed`]) takes ciphers, sizes and backends; it first checks that every backend
//! gives `seq`'s bytes ([`verify`]), then times each cipher, direction, size and backend in
//! memory, end to end (one job is key setup plus one pass over the buffer; GPU jobs copy to
//! the device and back). Every figure is a median of repeated runs after a warm-up
//! ([`stats`]); buffers are written before timing so that page faults are not measured.
//! [`report`] turns a run into a terminal table or JSON.
//!
//! Comparisons with other programs (OpenSSL, other libraries, the seed experiments) are the
//! lab's (`parcrypt-lab`, not installed), which builds on the same timing code.
#![forbid(unsafe_code)]

pub mod machine;
pub mod report;
pub mod speed;
pub mod stats;
pub mod throughput;
pub mod verify;

/// The names a bench plan is written in, for front ends that reach this crate through the
/// facade alone.
pub use parcrypt_engine::{available_threads, Backend};
pub use parcrypt_modes::{CipherSpec, Direction};
pub use speed::{Bench, Figure, Plan, Run};

/// Why a run could not go on. Each message is one line written for people.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Job(#[from] parcrypt_engine::JobError),
    #[error("{0}")]
    Engine(#[from] parcrypt_engine::EngineError),
    #[error("check failed: {0}")]
    Mismatch(String),
    #[error("{0}")]
    Usage(String),
}
