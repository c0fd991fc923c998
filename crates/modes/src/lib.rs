//! Modes of operation over the batch cipher API.
pub mod ghash;
