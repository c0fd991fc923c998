//! The cipher registry: one table that says what each cipher is.
//!
//! Every fact the rest of parcrypt needs about a cipher lives in its [`CipherDescriptor`]
//! in [`CIPHERS`]: the names as typed (`aes-128`, `bf`, ...), block and key sizes, the
//! modes it runs in, the GPU kernels that run it, how it fares against timing attacks, its
//! limits and the standard it follows. Name parsing ([`Algorithm`]'s `FromStr` and
//! `parcrypt-modes`' `CipherSpec`), key checks, [`crate::new_cipher`], the GPU host's kernel
//! names, key material and self test, the engine's message-length check and the help texts
//! of the command line all read this table, so adding a cipher is its implementation, its
//! [`Algorithm`] variants and one entry here (plus its kernels in `parcrypt.cl` when it
//! runs on a GPU). CONTRIBUTING.md at the repository root walks through the steps.

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::aes::{FastAes, ReferenceAes};
use crate::blowfish::Blowfish;
use crate::rc6::Rc6;
use crate::{Algorithm, BlockCipher, Implementation, KernelFamily};

/// A cipher and all its key sizes: one entry of [`CIPHERS`].
#[derive(Debug)]
pub struct CipherDescriptor {
    /// The family, which also names the GPU kernels' cipher.
    pub family: CipherFamily,
    /// The cipher's name in prose ("AES", "Blowfish", "RC6").
    pub title: &'static str,
    /// One variant per key size (or key range), in [`Algorithm::ALL`] order.
    pub variants: &'static [Variant],
    /// Block size in bytes.
    pub block_size: usize,
    /// The modes the cipher runs in, by the name `parcrypt-modes` gives them (`ecb`, `cbc`,
    /// `ctr`, `gcm`); GCM needs a 16-byte block.
    pub modes: &'static [&'static str],
    /// The GPU kernels that run it (every cipher has them: the GPU backends take every
    /// suite the CPU does).
    pub gpu: GpuKernels,
    /// Whether its code runs in time independent of the key and data.
    pub timing: Timing,
    /// The most blocks one message may run under one key and IV, where the block size
    /// makes the birthday bound reachable; `None` where it is out of reach.
    pub max_blocks_per_message: Option<u64>,
    /// The specification the implementation and its test vectors follow.
    pub standard: &'static str,
    /// Makes the keyed cipher; the key's length has been checked against the variant.
    pub new: fn(Implementation, &[u8]) -> Box<dyn BlockCipher>,
    /// Expands a key (length checked) into the words the GPU kernels take.
    pub kernel_key: fn(&[u8]) -> KernelKey,
}

/// One key size of a cipher: an [`Algorithm`] and its name.
#[derive(Debug)]
pub struct Variant {
    /// The algorithm this variant is.
    pub algorithm: Algorithm,
    /// The name as typed on the command line and in the bindings, without the mode.
    pub name: &'static str,
    /// The shortest and longest key accepted, in bytes.
    pub key_lengths: (usize, usize),
    /// A published known answer, which the GPU self test runs on every kernel.
    pub known_answer: Option<KnownAnswer>,
}

/// A published single-block vector, in hex.
#[derive(Debug)]
pub struct KnownAnswer {
    /// Where the vector comes from.
    pub source: &'static str,
    /// The key.
    pub key: &'static str,
    /// One plaintext block.
    pub plaintext: &'static str,
    /// Its ciphertext under `key`.
    pub ciphertext: &'static str,
}

/// The cipher families: the GPU host and kernels are written per family (AES's kernels
/// take the round count, so they serve every AES key size).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CipherFamily {
    /// AES with any key size.
    Aes,
    /// Blowfish.
    Blowfish,
    /// RC6 with any key size.
    Rc6,
}

/// The names of a family's GPU kernel functions in `parcrypt.cl`: `{stem}_ecb_encrypt`,
/// `{stem}_ecb_decrypt`, `{stem}_ctr`, `{stem}_cbc_decrypt` and `{stem}_ctr_segments`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuKernels {
    /// The stem every kernel name starts with.
    pub stem: &'static str,
    /// ECB encryption.
    pub ecb_encrypt: &'static str,
    /// ECB decryption.
    pub ecb_decrypt: &'static str,
    /// CTR (and so GCM's keystream).
    pub ctr: &'static str,
    /// CBC decryption.
    pub cbc_decrypt: &'static str,
    /// CTR over segments, each from its own counter block.
    pub ctr_segments: &'static str,
    /// What the kernels take after the round keys, in order.
    pub key_arguments: &'static [KernelKeyArgument],
}

/// Key-dependent arguments a family's kernels take after their round keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelKeyArgument {
    /// The number of rounds, as a 32-bit word ([`KernelKey::rounds`]).
    Rounds,
    /// The fixed AES lookup tables.
    AesTables,
    /// The key-dependent tables ([`KernelKey::key_tables`]).
    KeyTables,
}

/// The kernel names of a family, written out from its stem.
macro_rules! gpu_kernels {
    ($stem:literal, $arguments:expr) => {
        GpuKernels {
            stem: $stem,
            ecb_encrypt: concat!($stem, "_ecb_encrypt"),
            ecb_decrypt: concat!($stem, "_ecb_decrypt"),
            ctr: concat!($stem, "_ctr"),
            cbc_decrypt: concat!($stem, "_cbc_decrypt"),
            ctr_segments: concat!($stem, "_ctr_segments"),
            key_arguments: $arguments,
        }
    };
}

/// Whether a cipher's code runs in time independent of its key and data, on the CPU and
/// on a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// The CPU implementations.
    pub cpu: ConstantTime,
    /// The GPU kernels.
    pub gpu: ConstantTime,
}

/// How far one implementation is constant time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConstantTime {
    /// Yes, with the condition it holds under.
    Yes(&'static str),
    /// Only under the condition given; the engine keeps to it where it picks the path.
    Conditional(&'static str),
    /// No, with the reason.
    No(&'static str),
}

/// A key expanded for the GPU kernels, with the CPU crate's own key schedules so that the
/// kernels and their CPU twins cannot disagree on a round key. Every word is wiped on drop.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct KernelKey {
    /// AES: the FIPS-197 schedule, 4 (rounds + 1) big-endian words. Blowfish: the P-array
    /// (18 words). RC6: S[0..44].
    pub encryption_round_keys: Vec<u32>,
    /// AES only: the equivalent inverse cipher's schedule; empty where the kernels read the
    /// encryption words backwards instead.
    pub decryption_round_keys: Vec<u32>,
    /// Blowfish only: the four keyed S-boxes, S-box `b` entry `e` at word `256 b + e`.
    pub key_tables: Vec<u32>,
    /// The number of rounds.
    pub rounds: u32,
}

/// The most blocks of a 64-bit block cipher one message runs under one key and IV: 2^32
/// blocks (32 GiB), the birthday bound, past which two blocks of the chain or keystream
/// collide with a probability that leaks plaintext (the Sweet32 attacks).
pub const MAX_BLOCKS_64: u64 = 1 << 32;

/// Every cipher parcrypt knows, in the order of [`Algorithm::ALL`] and [`CipherFamily::ALL`].
pub static CIPHERS: [CipherDescriptor; 3] = [
    CipherDescriptor {
        family: CipherFamily::Aes,
        title: "AES",
        variants: &[
            Variant {
                algorithm: Algorithm::Aes128,
                name: "aes-128",
                key_lengths: (16, 16),
                known_answer: Some(KnownAnswer {
                    source: "FIPS-197 C.1 (AES-128)",
                    key: "000102030405060708090a0b0c0d0e0f",
                    plaintext: "00112233445566778899aabbccddeeff",
                    ciphertext: "69c4e0d86a7b0430d8cdb78070b4c55a",
                }),
            },
            Variant {
                algorithm: Algorithm::Aes192,
                name: "aes-192",
                key_lengths: (24, 24),
                known_answer: Some(KnownAnswer {
                    source: "FIPS-197 C.2 (AES-192)",
                    key: "000102030405060708090a0b0c0d0e0f1011121314151617",
                    plaintext: "00112233445566778899aabbccddeeff",
                    ciphertext: "dda97ca4864cdfe06eaf70a0ec0d7191",
                }),
            },
            Variant {
                algorithm: Algorithm::Aes256,
                name: "aes-256",
                key_lengths: (32, 32),
                known_answer: Some(KnownAnswer {
                    source: "FIPS-197 C.3 (AES-256)",
                    key: "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
                    plaintext: "00112233445566778899aabbccddeeff",
                    ciphertext: "8ea2b7ca516745bfeafc49904b496089",
                }),
            },
        ],
        block_size: 16,
        modes: &["ecb", "cbc", "ctr", "gcm"],
        gpu: gpu_kernels!(
            "aes",
            &[KernelKeyArgument::Rounds, KernelKeyArgument::AesTables]
        ),
        timing: Timing {
            cpu: ConstantTime::Conditional(
                "the fast implementation is (AES-NI or VAES, else the `aes` crate's \
                 bitsliced software AES, and a key expansion without tables); the \
                 reference implementation (`--reference`) indexes T-tables by secret bytes",
            ),
            gpu: ConstantTime::Conditional(
                "table lookups in local memory: only on a GPU whose kernels keep a copy of \
                 each table per lane (32 copies), never on a CPU OpenCL device",
            ),
        },
        max_blocks_per_message: None,
        standard: "FIPS-197",
        new: new_aes,
        kernel_key: aes_kernel_key,
    },
    CipherDescriptor {
        family: CipherFamily::Blowfish,
        title: "Blowfish",
        variants: &[Variant {
            algorithm: Algorithm::Blowfish,
            name: "bf",
            key_lengths: (4, 56),
            known_answer: Some(KnownAnswer {
                source: "Schneier/Young Blowfish ECB (key fedcba9876543210)",
                key: "fedcba9876543210",
                plaintext: "0123456789abcdef",
                ciphertext: "0aceab0fc6a0a28d",
            }),
        }],
        block_size: 8,
        modes: &["ecb", "cbc", "ctr"],
        gpu: gpu_kernels!("blowfish", &[KernelKeyArgument::KeyTables]),
        timing: Timing {
            cpu: ConstantTime::No("its S-boxes are key-dependent tables indexed by data"),
            gpu: ConstantTime::No("its S-boxes are key-dependent tables indexed by data"),
        },
        max_blocks_per_message: Some(MAX_BLOCKS_64),
        standard: "Schneier, Fast Software Encryption 1993",
        new: new_blowfish,
        kernel_key: blowfish_kernel_key,
    },
    CipherDescriptor {
        family: CipherFamily::Rc6,
        title: "RC6",
        variants: &[
            Variant {
                algorithm: Algorithm::Rc6_128,
                name: "rc6-128",
                key_lengths: (16, 16),
                known_answer: Some(KnownAnswer {
                    source: "RC6 paper, zero key and block (RC6-32/20/16)",
                    key: "00000000000000000000000000000000",
                    plaintext: "00000000000000000000000000000000",
                    ciphertext: "8fc3a53656b1f778c129df4e9848a41e",
                }),
            },
            Variant {
                algorithm: Algorithm::Rc6_192,
                name: "rc6-192",
                key_lengths: (24, 24),
                known_answer: None,
            },
            Variant {
                algorithm: Algorithm::Rc6_256,
                name: "rc6-256",
                key_lengths: (32, 32),
                known_answer: None,
            },
        ],
        block_size: 16,
        modes: &["ecb", "cbc", "ctr", "gcm"],
        gpu: gpu_kernels!("rc6", &[]),
        timing: Timing {
            cpu: ConstantTime::Yes(
                "no tables; its data-dependent rotations are rotate or variable-shift \
                 instructions, whose time does not depend on the count",
            ),
            gpu: ConstantTime::Yes(
                "no tables; its data-dependent rotations are funnel shifts or rotates",
            ),
        },
        max_blocks_per_message: None,
        standard: "Rivest, Robshaw, Sidney and Yin, The RC6 Block Cipher (AES submission, 1998)",
        new: new_rc6,
        kernel_key: rc6_kernel_key,
    },
];

fn new_aes(implementation: Implementation, key: &[u8]) -> Box<dyn BlockCipher> {
    match implementation {
        Implementation::Fast => Box::new(FastAes::new(key)),
        Implementation::Reference => Box::new(ReferenceAes::new(key)),
        Implementation::Limited(KernelFamily::Portable) => {
            Box::new(PortableAes(ReferenceAes::new(key)))
        }
        Implementation::Limited(ceiling) => Box::new(FastAes::with_ceiling(key, Some(ceiling))),
    }
}

/// AES under a [`KernelFamily::Portable`] ceiling: the reference code (no AES instructions),
/// reporting its ceiling so that GCM's GHASH keeps to portable code too.
struct PortableAes(ReferenceAes);

impl BlockCipher for PortableAes {
    fn block_size(&self) -> usize {
        self.0.block_size()
    }

    fn encrypt_blocks(&self, blocks: &mut [u8]) {
        self.0.encrypt_blocks(blocks);
    }

    fn decrypt_blocks(&self, blocks: &mut [u8]) {
        self.0.decrypt_blocks(blocks);
    }

    fn kernel_ceiling(&self) -> Option<KernelFamily> {
        Some(KernelFamily::Portable)
    }
}

fn new_blowfish(_: Implementation, key: &[u8]) -> Box<dyn BlockCipher> {
    // Blowfish's code is the same portable code under every ceiling.
    Box::new(Blowfish::new(key))
}

fn new_rc6(implementation: Implementation, key: &[u8]) -> Box<dyn BlockCipher> {
    Box::new(Rc6::with_ceiling(key, implementation.ceiling()))
}

// The schedules below wipe themselves when dropped; the copies are made with exact
// capacity so that no reallocation leaves words behind.

fn aes_kernel_key(key: &[u8]) -> KernelKey {
    let cipher = ReferenceAes::new(key);
    KernelKey {
        encryption_round_keys: cipher.encryption_round_keys().to_vec(),
        decryption_round_keys: cipher.decryption_round_keys().to_vec(),
        key_tables: Vec::new(),
        rounds: cipher.rounds() as u32,
    }
}

fn blowfish_kernel_key(key: &[u8]) -> KernelKey {
    let cipher = Blowfish::new(key);
    let mut key_tables = Vec::with_capacity(4 * 256);
    for sbox in cipher.sboxes() {
        key_tables.extend_from_slice(sbox);
    }
    KernelKey {
        encryption_round_keys: cipher.p_array().to_vec(),
        decryption_round_keys: Vec::new(),
        key_tables,
        rounds: 16,
    }
}

fn rc6_kernel_key(key: &[u8]) -> KernelKey {
    let cipher = Rc6::new(key);
    KernelKey {
        encryption_round_keys: cipher.round_keys().to_vec(),
        decryption_round_keys: Vec::new(),
        key_tables: Vec::new(),
        rounds: 20,
    }
}

impl CipherFamily {
    /// Every family, in the order of [`CIPHERS`].
    pub const ALL: [CipherFamily; 3] =
        [CipherFamily::Aes, CipherFamily::Blowfish, CipherFamily::Rc6];

    /// The family of `algorithm`.
    pub fn of(algorithm: Algorithm) -> Self {
        algorithm.descriptor().family
    }

    /// The family's entry in [`CIPHERS`].
    pub fn descriptor(self) -> &'static CipherDescriptor {
        &CIPHERS[self as usize]
    }
}

impl CipherDescriptor {
    /// Whether the cipher runs in the mode named `mode` (`ecb`, `cbc`, `ctr`, `gcm`).
    pub fn supports_mode(&self, mode: &str) -> bool {
        self.modes.contains(&mode)
    }

    /// The variant of `algorithm`, if it belongs to this cipher.
    pub fn variant(&self, algorithm: Algorithm) -> Option<&'static Variant> {
        // `self` is an entry of the static table; look it up there for the 'static borrow.
        CIPHERS[self.family as usize]
            .variants
            .iter()
            .find(|variant| variant.algorithm == algorithm)
    }
}

impl GpuKernels {
    /// The kernel names in the order ECB encryption, ECB decryption, CTR, CBC decryption,
    /// segmented CTR.
    pub fn names(&self) -> [&'static str; 5] {
        [
            self.ecb_encrypt,
            self.ecb_decrypt,
            self.ctr,
            self.cbc_decrypt,
            self.ctr_segments,
        ]
    }
}

impl Variant {
    /// The accepted key length in words, for messages: "16 bytes", "4 to 56 bytes".
    pub fn key_length_text(&self) -> String {
        match self.key_lengths {
            (low, high) if low == high => format!("{low} bytes"),
            (low, high) => format!("{low} to {high} bytes"),
        }
    }
}

/// Every variant of every cipher, in [`Algorithm::ALL`] order.
pub fn variants() -> impl Iterator<Item = &'static Variant> {
    CIPHERS.iter().flat_map(|cipher| cipher.variants.iter())
}

/// The variant called `name` (exact, lower case), if any.
pub fn find(name: &str) -> Option<&'static Variant> {
    variants().find(|variant| variant.name == name)
}

/// The cipher names with their modes in one line, for help texts:
/// `aes-128|aes-192|aes-256 + -ecb|-cbc|-ctr|-gcm; bf-ecb|bf-cbc|bf-ctr (key 4..56 bytes); ...`.
/// A cipher with one key size per name lists its names and modes; one whose names take a
/// range of key lengths lists every full name with the range.
pub fn cipher_names_help() -> String {
    CIPHERS
        .iter()
        .map(|cipher| {
            let fixed = cipher
                .variants
                .iter()
                .all(|variant| variant.key_lengths.0 == variant.key_lengths.1);
            if fixed {
                let names: Vec<&str> = cipher.variants.iter().map(|v| v.name).collect();
                let modes: Vec<String> = cipher.modes.iter().map(|m| format!("-{m}")).collect();
                format!("{} + {}", names.join("|"), modes.join("|"))
            } else {
                cipher
                    .variants
                    .iter()
                    .map(|variant| {
                        let names: Vec<String> = cipher
                            .modes
                            .iter()
                            .map(|mode| format!("{}-{mode}", variant.name))
                            .collect();
                        let (low, high) = variant.key_lengths;
                        format!("{} (key {low}..{high} bytes)", names.join("|"))
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{new_cipher, KeyError};

    #[test]
    fn the_table_matches_the_enums() {
        let listed: Vec<Algorithm> = variants().map(|variant| variant.algorithm).collect();
        assert_eq!(listed, Algorithm::ALL.to_vec());
        for (index, cipher) in CIPHERS.iter().enumerate() {
            assert_eq!(cipher.family as usize, index, "{}", cipher.title);
            assert_eq!(CipherFamily::ALL[index], cipher.family);
            assert!(!cipher.variants.is_empty(), "{}", cipher.title);
            for variant in cipher.variants {
                assert_eq!(CipherFamily::of(variant.algorithm), cipher.family);
                assert!(std::ptr::eq(variant.algorithm.variant(), variant));
            }
        }
    }

    #[test]
    fn every_name_parses_and_prints_back() {
        let mut names = std::collections::HashSet::new();
        for variant in variants() {
            assert!(names.insert(variant.name), "{} twice", variant.name);
            assert_eq!(variant.name.parse::<Algorithm>(), Ok(variant.algorithm));
            assert_eq!(variant.algorithm.to_string(), variant.name);
            assert_eq!(
                find(variant.name).map(|v| v.algorithm),
                Some(variant.algorithm)
            );
            assert!(
                !variant.name.contains(char::is_uppercase),
                "{}",
                variant.name
            );
        }
        for bad in ["", "aes", "aes-512", "blowfish-", "AES-128x", "des"] {
            assert_eq!(bad.parse::<Algorithm>(), Err(()), "{bad}");
        }
    }

    #[test]
    fn listed_key_sizes_are_taken_and_others_refused() {
        for variant in variants() {
            let algorithm = variant.algorithm;
            let (low, high) = variant.key_lengths;
            assert!(low >= 1 && low <= high, "{algorithm}");
            for length in 0..=high + 8 {
                let key = vec![0x5a; length];
                let outcome = new_cipher(algorithm, Implementation::Fast, &key).map(|_| ());
                if (low..=high).contains(&length) {
                    assert_eq!(outcome, Ok(()), "{algorithm} with {length} bytes");
                    let kernel_key = (algorithm.descriptor().kernel_key)(&key);
                    assert!(!kernel_key.encryption_round_keys.is_empty());
                } else {
                    assert_eq!(
                        outcome,
                        Err(KeyError::WrongLength {
                            algorithm,
                            expected: variant.key_length_text(),
                            got: length,
                        }),
                        "{algorithm} with {length} bytes"
                    );
                }
            }
        }
        assert_eq!(
            new_cipher(Algorithm::Blowfish, Implementation::Fast, &[0; 3])
                .map(|_| ())
                .unwrap_err()
                .to_string(),
            "bf needs a key of 4 to 56 bytes, got 3 bytes"
        );
    }

    #[test]
    fn known_answers_hold_on_every_implementation() {
        for variant in variants() {
            let Some(vector) = &variant.known_answer else {
                continue;
            };
            let key = hex::decode(vector.key).unwrap();
            let plaintext = hex::decode(vector.plaintext).unwrap();
            let ciphertext = hex::decode(vector.ciphertext).unwrap();
            assert_eq!(
                plaintext.len(),
                variant.algorithm.block_size(),
                "{}",
                vector.source
            );
            for implementation in [Implementation::Fast, Implementation::Reference] {
                let cipher = new_cipher(variant.algorithm, implementation, &key).unwrap();
                assert_eq!(cipher.block_size(), variant.algorithm.block_size());
                let mut block = plaintext.clone();
                cipher.encrypt_blocks(&mut block);
                assert_eq!(block, ciphertext, "{} {implementation:?}", vector.source);
                cipher.decrypt_blocks(&mut block);
                assert_eq!(block, plaintext, "{} {implementation:?}", vector.source);
            }
        }
    }

    #[test]
    fn descriptors_are_consistent() {
        for cipher in &CIPHERS {
            assert!(matches!(cipher.block_size, 8 | 16), "{}", cipher.title);
            for mode in cipher.modes {
                assert!(
                    ["ecb", "cbc", "ctr", "gcm"].contains(mode),
                    "{}: unknown mode {mode}",
                    cipher.title
                );
            }
            // GCM's GHASH works on 128-bit blocks.
            assert!(!cipher.supports_mode("gcm") || cipher.block_size == 16);
            // A 64-bit block reaches its birthday bound in 32 GiB: such a cipher must say so.
            assert_eq!(
                cipher.max_blocks_per_message.is_some(),
                cipher.block_size == 8,
                "{}",
                cipher.title
            );
            for name in cipher.gpu.names() {
                assert!(name.starts_with(cipher.gpu.stem), "{name}");
            }
            assert!(!cipher.standard.is_empty());
        }
    }

    #[test]
    fn help_line_lists_every_name() {
        assert_eq!(
            cipher_names_help(),
            "aes-128|aes-192|aes-256 + -ecb|-cbc|-ctr|-gcm; \
             bf-ecb|bf-cbc|bf-ctr (key 4..56 bytes); rc6-128|rc6-192|rc6-256 + -ecb|-cbc|-ctr|-gcm"
        );
    }
}
