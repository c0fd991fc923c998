//! The benchmark lab's measuring instruments.
//!
//! Rules every figure here follows: buffers are touched before timing (a fresh zeroed page
//! costs a fault on first write), every measurement is warmed up, repeated and reported as a
//! median with its spread, and OpenSSL is measured in the same run so that figures are
//! ratios against what users run today.

pub mod openssl;
pub mod stats;
pub mod throughput;

pub use stats::Stats;
