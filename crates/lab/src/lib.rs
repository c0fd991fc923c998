//! The parcrypt benchmark lab (`parcrypt-lab`; not installed with parcrypt, which keeps
//! only its own speed check, `parcrypt bench`, in the `parcrypt-bench` crate this lab builds
//! on).
//!
//! Rules every figure here follows: buffers are touched before timing (a fresh zeroed page
//! costs a fault on first write), every measurement is checked against `seq` first, warmed
//! up, repeated and reported as a median with its spread; GPU figures are end to end (host
//! memory in and out, device synchronised) unless marked kernel-only; OpenSSL is measured
//! in the same run so that figures are also ratios against what users run today.
//!
//! The pieces: [`stats`] (timing, with a clock that tests replace), [`throughput`] and
//! [`gpu`] (what is timed), [`lab::Lab`] (what a run may use, and the recorder every figure
//! goes through), [`scenario`] (the sweep and the five seed experiments, each with the
//! tables and comparisons it derives from its records), [`record`] (the one result record)
//! and [`export`] (terminal table, JSON, CSV, Markdown over it).
#![forbid(unsafe_code)]

pub mod energy;
pub mod export;
pub mod gpu;
pub mod lab;
pub mod masks;
pub mod openssl;
pub mod peers;
pub mod record;
pub mod recorder;
pub mod scenario;
pub mod seeds;
pub mod summary;
pub mod verify;

/// Timing, what is timed and the machine's description are the product bench's: the lab
/// measures parcrypt the same way `parcrypt bench` does.
pub use parcrypt_bench::{machine, stats, throughput};

pub use lab::{Lab, LabOptions, Level};
pub use record::{BenchRecord, Report, Timing};
pub use stats::Stats;

/// Why a benchmark could not run. Each message is one line written for people.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Bench(#[from] parcrypt_bench::BenchError),
    #[error("{0}")]
    Job(#[from] parcrypt_engine::JobError),
    #[error("GPU: {0}")]
    Gpu(#[from] parcrypt_gpu::GpuError),
    #[error("{0}")]
    Engine(#[from] parcrypt_engine::EngineError),
    #[error("{0}")]
    Stream(#[from] parcrypt_engine::stream::StreamError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("check failed: {0}")]
    Mismatch(String),
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    Usage(String),
}
