//! Block ciphers behind one batch interface.
//!
//! Every cipher here encrypts and decrypts *many blocks per call*: the modes above hand
//! over whole runs of blocks, so each implementation can keep several blocks in flight
//! (VAES lanes for AES, interleaved rounds for Blowfish and RC6).
//!
//! Two implementations exist for AES: [`Implementation::Fast`] uses the hardware: our own
//! fused VAES-512 / AES-NI kernels where they exist (CTR, and more, see `aes.rs`) and the
//! RustCrypto `aes` crate (AES-NI / VAES, picked at run time) for the rest;
//! [`Implementation::Reference`] is our own T-table code written the way the GPU kernels
//! are, so that the kernels have a CPU twin to be compared with. Blowfish and RC6 are our
//! own code on both paths (portable, AVX2 and AVX-512 for RC6). [`memory`] holds the
//! passes with no cipher that the kernels' rates are measured against.
//!
//! Every fast path belongs to a [`KernelFamily`] (portable, AES-NI, VAES-256, VAES-512);
//! [`Implementation::Limited`] holds a key's choices to at most one family, so that each
//! family can be tested and measured on a machine that has them all ([`kernels`]).
//!
//! What each cipher is (names, block and key sizes, modes, GPU kernels, timing, limits)
//! is written once, in [`registry::CIPHERS`]; [`Algorithm`]'s methods read it.

#![warn(missing_docs)]

pub mod aes;
pub mod blowfish;
pub mod clock;
pub mod kernels;
pub mod memory;
pub mod rc6;
pub mod registry;
#[cfg(test)]
mod test_vectors;

use std::fmt;
use std::str::FromStr;

pub use kernels::KernelFamily;

/// A keyed block cipher that processes many blocks per call, in place.
///
/// `blocks.len()` must be a multiple of [`BlockCipher::block_size`]; implementations panic
/// otherwise, because a caller passing a partial block is a bug in the mode above, not bad
/// user input (modes validate lengths before calling down).
pub trait BlockCipher: Send + Sync {
    /// Block size in bytes: 16 for AES and RC6, 8 for Blowfish.
    fn block_size(&self) -> usize;
    /// Encrypts every block of `blocks` in place.
    fn encrypt_blocks(&self, blocks: &mut [u8]);
    /// Decrypts every block of `blocks` in place.
    fn decrypt_blocks(&self, blocks: &mut [u8]);
    /// How many blocks the implementation likes to have in flight per call; modes size their
    /// scratch buffers as a multiple of this.
    fn preferred_batch(&self) -> usize {
        64
    }
    /// Fused CTR for 16-byte blocks: XORs E(c), E(c+1), ... into `data` (any length; a final
    /// partial block uses the front of its keystream block), where `c` is `counter` and only
    /// its last 32-bit big-endian word is incremented. The caller guarantees that word does
    /// not wrap within `data`, so the full-width and `inc32` rules agree.
    ///
    /// Returns `false`, touching nothing, when the implementation has no fused path; the
    /// mode then builds counter blocks itself and calls [`BlockCipher::encrypt_blocks`].
    fn ctr32_xor(&self, _counter: &[u8; 16], _data: &mut [u8]) -> bool {
        false
    }
    /// [`BlockCipher::ctr32_xor`] out of place: writes `input` XOR the keystream into
    /// `output` (the same length) in one pass, so a message is read and written once
    /// without a copy first.
    ///
    /// Returns `false`, touching nothing, when the implementation has no fused path.
    ///
    /// # Panics
    /// If the lengths differ (implementations with a fused path check).
    fn ctr32_xor_into(&self, _counter: &[u8; 16], _input: &[u8], _output: &mut [u8]) -> bool {
        false
    }
    /// Fused CBC encryption: for each block of `data` (whole blocks), XOR `chain`, encrypt
    /// in place and make the result the new `chain`. CBC encryption is sequential, so the
    /// gain is keeping the chain in a register instead of one call per block.
    ///
    /// Returns `false`, touching nothing, when the implementation has no fused path.
    fn cbc_encrypt(&self, _chain: &mut [u8], _data: &mut [u8]) -> bool {
        false
    }
    /// Fused CBC decryption of whole blocks in place: block `i` becomes
    /// `D(C_i) XOR C_{i-1}`, with `previous` as `C_{-1}` (the IV, or the ciphertext block
    /// before this range). The gain is XORing with the previous ciphertext in registers
    /// instead of saving a copy of the batch.
    ///
    /// Returns `false`, touching nothing, when the implementation has no fused path.
    fn cbc_decrypt(&self, _previous: &[u8], _data: &mut [u8]) -> bool {
        false
    }
    /// The AES encryption key schedule, for modes that run their own AES kernels (GCM's
    /// stitched path, which interleaves the AES rounds with GHASH): the `rounds + 1` round
    /// keys of FIPS-197 section 5.2 (11, 13 or 15), each in the byte order the AES
    /// instructions take (the order FIPS-197 writes the words in).
    ///
    /// `None` (the default) for ciphers that are not AES or do not keep this schedule; the
    /// mode then uses the other methods. The keys are secret: callers must not copy them
    /// anywhere they do not wipe.
    fn aes_round_keys(&self) -> Option<&[[u8; 16]]> {
        None
    }
    /// The highest [`KernelFamily`] this key's kernels may come from, where it was made
    /// with one ([`Implementation::Limited`]); `None` (the default): no ceiling, the fastest
    /// this CPU has. Modes that pick their own kernels for the key (GCM, GHASH) keep under it.
    fn kernel_ceiling(&self) -> Option<KernelFamily> {
        None
    }
}

/// The cipher algorithms parcrypt knows, with their key size where it is fixed.
///
/// Each variant has its entry in [`registry::CIPHERS`], which every method here reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// AES with a 16-byte (128-bit) key.
    Aes128,
    /// AES with a 24-byte (192-bit) key.
    Aes192,
    /// AES with a 32-byte (256-bit) key.
    Aes256,
    /// Blowfish with a key of 4 to 56 bytes.
    Blowfish,
    /// RC6 (20 rounds, 128-bit blocks) with a 16-byte (128-bit) key.
    Rc6_128,
    /// RC6 (20 rounds, 128-bit blocks) with a 24-byte (192-bit) key.
    Rc6_192,
    /// RC6 (20 rounds, 128-bit blocks) with a 32-byte (256-bit) key.
    Rc6_256,
}

/// Which implementation of a cipher to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Implementation {
    /// The fastest code on this machine (hardware AES where present).
    #[default]
    Fast,
    /// Our own portable code, structured like the GPU kernels.
    Reference,
    /// [`Implementation::Fast`] with kernels of at most this family: every kernel choice
    /// the key makes (and GCM's over it) keeps under it, for tests and measurements of each
    /// family on a machine that has them all. [`new_cipher`] refuses a family this CPU lacks.
    Limited(KernelFamily),
}

impl Implementation {
    /// `self` held under `ceiling` as well: [`Implementation::Fast`] becomes
    /// [`Implementation::Limited`], a limited one keeps the lower of the two ceilings, and
    /// [`Implementation::Reference`] (which has no kernels) stays as it is. `None` changes
    /// nothing.
    pub fn with_ceiling(self, ceiling: Option<KernelFamily>) -> Implementation {
        match (self, ceiling) {
            (_, None) | (Implementation::Reference, _) => self,
            (Implementation::Fast, Some(ceiling)) => Implementation::Limited(ceiling),
            (Implementation::Limited(own), Some(ceiling)) => {
                Implementation::Limited(own.min(ceiling))
            }
        }
    }

    /// The kernel ceiling of keys made with this implementation (`None`: no ceiling).
    pub fn ceiling(self) -> Option<KernelFamily> {
        match self {
            Implementation::Limited(ceiling) => Some(ceiling),
            Implementation::Fast | Implementation::Reference => None,
        }
    }
}

/// Why a cipher could not be created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The key's length is not one the algorithm accepts.
    #[error("{algorithm} needs a key of {expected}, got {got} bytes")]
    WrongLength {
        /// The algorithm the key was meant for.
        algorithm: Algorithm,
        /// The accepted length in words, for the message ("16 bytes", "4 to 56 bytes").
        expected: String,
        /// The length of the key that was given, in bytes.
        got: usize,
    },
    /// [`Implementation::Limited`] named a kernel family this CPU cannot run.
    #[error(transparent)]
    UnsupportedKernels(#[from] kernels::UnsupportedKernels),
}

impl Algorithm {
    /// Every algorithm, in the stable order used by help texts, name lookup and tests (the
    /// order of [`registry::CIPHERS`] and its variants).
    pub const ALL: [Algorithm; 7] = [
        Algorithm::Aes128,
        Algorithm::Aes192,
        Algorithm::Aes256,
        Algorithm::Blowfish,
        Algorithm::Rc6_128,
        Algorithm::Rc6_192,
        Algorithm::Rc6_256,
    ];

    /// The registry entry of the cipher this algorithm belongs to.
    pub fn descriptor(self) -> &'static registry::CipherDescriptor {
        registry::CIPHERS
            .iter()
            .find(|cipher| cipher.variants.iter().any(|v| v.algorithm == self))
            .expect("every Algorithm has an entry in registry::CIPHERS")
    }

    /// The registry entry of this key size.
    pub fn variant(self) -> &'static registry::Variant {
        registry::variants()
            .find(|variant| variant.algorithm == self)
            .expect("every Algorithm has an entry in registry::CIPHERS")
    }

    /// Block size in bytes.
    pub fn block_size(self) -> usize {
        self.descriptor().block_size
    }

    /// The accepted key lengths in bytes, inclusive.
    pub fn key_lengths(self) -> (usize, usize) {
        self.variant().key_lengths
    }

    /// The name used on the command line, without the mode.
    pub fn name(self) -> &'static str {
        self.variant().name
    }

    /// Checks `key` against this algorithm's accepted lengths.
    pub fn check_key(self, key: &[u8]) -> Result<(), KeyError> {
        let variant = self.variant();
        let (low, high) = variant.key_lengths;
        if key.len() < low || key.len() > high {
            return Err(KeyError::WrongLength {
                algorithm: self,
                expected: variant.key_length_text(),
                got: key.len(),
            });
        }
        Ok(())
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        registry::find(s).map(|variant| variant.algorithm).ok_or(())
    }
}

/// Creates a keyed cipher. With [`Implementation::Limited`], a family this CPU cannot run is
/// refused ([`KeyError::UnsupportedKernels`]). The key bytes are copied into the key schedule; the schedule is
/// wiped when the returned value is dropped. The caller should wipe its own copy of `key`.
pub fn new_cipher(
    algorithm: Algorithm,
    implementation: Implementation,
    key: &[u8],
) -> Result<Box<dyn BlockCipher>, KeyError> {
    algorithm.check_key(key)?;
    if let Implementation::Limited(ceiling) = implementation {
        ceiling.check()?;
    }
    Ok((algorithm.descriptor().new)(implementation, key))
}

/// CBC encryption of `blocks` one after another through `encrypt_block`, starting from and
/// updating `chain`: for ciphers whose single-block rounds are a direct call, which beats a
/// trip through the batch API per block. Inlined, so that `encrypt_block` is too.
#[inline(always)]
fn cbc_encrypt_one_by_one<const BLOCK_SIZE: usize>(
    chain: &mut [u8],
    blocks: &mut [[u8; BLOCK_SIZE]],
    mut encrypt_block: impl FnMut(&mut [u8; BLOCK_SIZE]),
) {
    let mut previous: [u8; BLOCK_SIZE] = chain
        .try_into()
        .unwrap_or_else(|_| panic!("a {BLOCK_SIZE}-byte chain block"));
    for block in blocks {
        for (byte, chained) in block.iter_mut().zip(&previous) {
            *byte ^= chained;
        }
        encrypt_block(block);
        previous = *block;
    }
    chain.copy_from_slice(&previous);
}

/// A one-line summary of the CPU features the fast paths use, for `parcrypt devices` and
/// benchmark reports.
pub fn cpu_features() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        let flags = [
            ("AES-NI", std::arch::is_x86_feature_detected!("aes")),
            ("VAES", std::arch::is_x86_feature_detected!("vaes")),
            (
                "PCLMULQDQ",
                std::arch::is_x86_feature_detected!("pclmulqdq"),
            ),
            (
                "VPCLMULQDQ",
                std::arch::is_x86_feature_detected!("vpclmulqdq"),
            ),
            ("AVX2", std::arch::is_x86_feature_detected!("avx2")),
            ("AVX-512F", std::arch::is_x86_feature_detected!("avx512f")),
        ];
        let present: Vec<&str> = flags
            .iter()
            .filter(|(_, on)| *on)
            .map(|(name, _)| *name)
            .collect();
        let aes = if ::aes::hardware_accelerated() {
            "hardware AES"
        } else {
            "software AES"
        };
        format!(
            "{aes}; features: {}",
            if present.is_empty() {
                "none".into()
            } else {
                present.join(" ")
            }
        )
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let aes = if ::aes::hardware_accelerated() {
            "hardware AES"
        } else {
            "software AES"
        };
        aes.to_string()
    }
}
