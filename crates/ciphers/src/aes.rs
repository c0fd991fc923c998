//! AES-128/192/256 (FIPS-197).
//!
//! [`FastAes`] is the hardware path: our own kernels for CTR (VAES-512 or AES-NI; ARMv8 on
//! aarch64), ECB
//! encryption and decryption and CBC decryption (VAES-512, VAES-256 or AES-NI) and CBC
//! encryption (AES-NI), chosen at run time, and the RustCrypto `aes` crate wherever none fits the CPU;
//! [`ReferenceAes`] is our own table code, the CPU twin of the GPU kernels.

/// Evaluates `$body` with `$rounds` (10, 12 or 14) as the constant `$constant`, so that a
/// kernel is instantiated once per key size: its round loops then unroll completely and every
/// round key is a register operand.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
macro_rules! with_rounds {
    ($rounds:expr, $constant:ident => $body:expr) => {
        match $rounds {
            10 => {
                const $constant: usize = 10;
                $body
            }
            12 => {
                const $constant: usize = 12;
                $body
            }
            14 => {
                const $constant: usize = 14;
                $body
            }
            other => unreachable!("AES has 10, 12 or 14 rounds, not {other}"),
        }
    };
}

/// An empty `asm!` that takes and returns every named register, so that round r+1 of any of
/// them depends on round r of all of them: see `ecb_vaes512::keep_round_order` for why.
#[cfg(target_arch = "x86_64")]
macro_rules! pin_round_order {
    ($class:ident: $($block:ident),+) => {
        // SAFETY: the template is a comment: it executes nothing and leaves every register
        // as it was.
        unsafe {
            core::arch::asm!(
                concat!("/*", $(" {", stringify!($block), "}",)+ " */"),
                $($block = inout($class) *$block,)+
                options(pure, nomem, nostack, preserves_flags),
            );
        }
    };
}

/// Expands `encrypt_xor::<ROUNDS>(keys, blocks, input)` for the register type `$vector`
/// and the intrinsics at its width, with `$features` enabled: AES of the counter blocks in
/// `blocks` XORed with `input`, the data XOR folded into the last round's key XOR (which
/// takes it off the end of the chain). The tails of the CTR kernels at every width.
#[cfg(target_arch = "x86_64")]
macro_rules! encrypt_xor {
    (
        features: $features:literal,
        vector: $vector:ty,
        xor: $xor:ident,
        aes_round: $aes_round:ident,
        aes_last_round: $aes_last_round:ident $(,)?
    ) => {
        /// AES of the counter blocks in `blocks`, XORed with `input`.
        #[inline]
        #[target_feature(enable = $features)]
        fn encrypt_xor<const ROUNDS: usize>(
            keys: &[$vector; MAX_ROUND_KEYS],
            blocks: $vector,
            input: $vector,
        ) -> $vector {
            let mut state = $xor(blocks, keys[0]);
            for key in &keys[1..ROUNDS] {
                state = $aes_round(state, *key);
            }
            $aes_last_round(state, $xor(keys[ROUNDS], input))
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod cbc_aesni;
#[cfg(target_arch = "x86_64")]
mod cbc_vaes512;
#[cfg(target_arch = "x86_64")]
mod ctr_aesni;
#[cfg(target_arch = "aarch64")]
mod ctr_armv8;
#[cfg(target_arch = "x86_64")]
mod ctr_vaes256;
#[cfg(target_arch = "x86_64")]
mod ctr_vaes512;
#[cfg(target_arch = "x86_64")]
mod ecb_aesni;
#[cfg(target_arch = "x86_64")]
mod ecb_vaes256;
#[cfg(target_arch = "x86_64")]
mod ecb_vaes512;
mod fast;
#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod kernel_tests;
mod reference;

#[cfg(target_arch = "x86_64")]
pub use ctr_vaes512::{streams_output, Vaes512Counters, STREAM_FROM_BYTES};

/// The length from which out-of-place kernel calls write with streaming stores on x86-64.
/// This architecture has no streaming-store kernels (every output is written the ordinary
/// way); the constant is kept, with the same value, so that code and tests sizing "long"
/// texts by it build everywhere.
#[cfg(not(target_arch = "x86_64"))]
pub const STREAM_FROM_BYTES: usize = 8 << 20;

/// Whether long out-of-place AES kernel calls may write with streaming stores (on by
/// default; see `STREAM_FROM_BYTES` on x86-64).
///
/// Process-wide rather than an engine's option: the kernels also run where there is no
/// engine (a raw cipher, a GCM key made by a mode or a file), so the setting lives here and
/// `EngineBuilder::streaming_stores` in `parcrypt-engine` sets it. Nothing in this crate
/// reads the environment; the front ends map `PARCRYPT_NO_STREAM` onto that builder option.
static STREAMING_STORES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Allows (`true`, the default) or forbids streaming stores in long out-of-place AES kernel
/// calls for the whole process (for comparisons; the output is the same either way).
pub fn set_streaming_stores(allowed: bool) {
    STREAMING_STORES.store(allowed, std::sync::atomic::Ordering::Relaxed);
}

/// Whether long out-of-place AES kernel calls may write with streaming stores
/// ([`set_streaming_stores`]).
pub fn streaming_stores() -> bool {
    STREAMING_STORES.load(std::sync::atomic::Ordering::Relaxed)
}
pub use fast::FastAes;
pub use reference::ReferenceAes;
