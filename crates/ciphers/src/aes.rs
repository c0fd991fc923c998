//! AES-128/192/256 (FIPS-197).
//!
//! [`FastAes`] is the hardware path: our own kernels for CTR (VAES-512 or AES-NI), ECB
//! encryption and decryption (VAES-512), CBC encryption (AES-NI) and CBC decryption
//! (VAES-512), chosen at run time, and the RustCrypto `aes` crate wherever none fits the CPU;
//! [`ReferenceAes`] is our own table code, the CPU twin of the GPU kernels.

#[cfg(target_arch = "x86_64")]
mod cbc_aesni;
#[cfg(target_arch = "x86_64")]
mod cbc_vaes512;
#[cfg(target_arch = "x86_64")]
mod ctr_aesni;
#[cfg(target_arch = "x86_64")]
mod ctr_vaes512;
#[cfg(target_arch = "x86_64")]
mod ecb_vaes512;
mod fast;
mod reference;

pub use fast::FastAes;
pub use reference::ReferenceAes;
