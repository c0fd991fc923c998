//! AES-128/192/256 (FIPS-197).
//!
//! [`FastAes`] is the hardware path (RustCrypto `aes`: AES-NI, VAES-256 or VAES-512, chosen
//! at run time); [`ReferenceAes`] is our own table code, the CPU twin of the GPU kernels.

#[cfg(target_arch = "x86_64")]
mod ctr_aesni;
#[cfg(target_arch = "x86_64")]
mod ctr_vaes512;
mod fast;
mod reference;

pub use fast::FastAes;
pub use reference::ReferenceAes;
