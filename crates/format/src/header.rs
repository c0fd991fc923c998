//! The parcrypt header: 40 bytes in front of a Cobblestone message that say which AEAD the
//! message uses and how its input key is obtained (given directly, or derived from a
//! passphrase with argon2id, whose parameters and salt it stores). The whole header is bound
//! into the Cobblestone context, so changing any byte of it fails the key commitment.
//! docs/FORMAT.md specifies it; the tests below pin the layout.
//!
//! ```text
//! offset size field
//!  0      8   magic "parcrypt"
//!  8      1   version, 1
//!  9      1   AEAD: 1 = AES-128-GCM (Cobblestone-128), 2 = AES-256-GCM (Cobblestone-256)
//! 10      1   key source: 1 = input key given directly, 2 = argon2id v1.3 of a passphrase
//! 11      1   reserved, 0
//! 12      4   argon2id memory in KiB, big-endian (0 for key source 1)
//! 16      4   argon2id passes (0 for key source 1)
//! 20      4   argon2id lanes (0 for key source 1)
//! 24     16   argon2id salt (zeros for key source 1)
//! ```

use zeroize::Zeroizing;

use crate::cobblestone::Suite;
use crate::error::FormatError;

/// The first bytes of every parcrypt file.
pub const MAGIC: &[u8; 8] = b"parcrypt";
/// The version of this 40-byte header (keys and passphrases). Version 2, a header with
/// public-key recipients, is [`crate::recipients`]; [`crate::Envelope`] reads both.
pub const VERSION: u8 = 1;
/// Bytes of the header.
pub const HEADER_BYTES: usize = 40;
/// Bytes of the argon2id salt.
pub const KDF_SALT_BYTES: usize = 16;

const SUITE_128: u8 = 1;
const SUITE_256: u8 = 2;
const SOURCE_KEY: u8 = 1;
const SOURCE_ARGON2ID: u8 = 2;

/// argon2id cost parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Argon2Params {
    /// Memory in KiB.
    pub memory_kib: u32,
    /// Passes over the memory (argon2's t).
    pub passes: u32,
    /// Lanes (argon2's p); lanes are computed in parallel where cores allow.
    pub lanes: u32,
}

impl Argon2Params {
    /// The second recommended option of RFC 9106 (section 4): 64 MiB, 3 passes, 4 lanes.
    /// About a tenth of a second on a current laptop core.
    pub const DEFAULT: Argon2Params = Argon2Params {
        memory_kib: 64 * 1024,
        passes: 3,
        lanes: 4,
    };
    /// The most memory a header may ask for: 4 GiB. A header is read before anything is
    /// authenticated, so these limits bound what a malicious file can make a reader spend.
    pub const MAX_MEMORY_KIB: u32 = 4 * 1024 * 1024;
    /// The most passes a header may ask for.
    pub const MAX_PASSES: u32 = 100;
    /// The most lanes a header may ask for.
    pub const MAX_LANES: u32 = 64;

    /// Checks the limits above and argon2's own (at least 8 KiB of memory per lane).
    pub fn check(&self) -> Result<(), FormatError> {
        let Argon2Params {
            memory_kib,
            passes,
            lanes,
        } = *self;
        if lanes == 0 || lanes > Self::MAX_LANES {
            return Err(FormatError::KdfLimits(format!(
                "{lanes} lanes (1 to {})",
                Self::MAX_LANES
            )));
        }
        if passes == 0 || passes > Self::MAX_PASSES {
            return Err(FormatError::KdfLimits(format!(
                "{passes} passes (1 to {})",
                Self::MAX_PASSES
            )));
        }
        if memory_kib < 8 * lanes || memory_kib > Self::MAX_MEMORY_KIB {
            return Err(FormatError::KdfLimits(format!(
                "{memory_kib} KiB of memory (8 KiB per lane, so {} KiB here, to {} KiB)",
                8 * lanes,
                Self::MAX_MEMORY_KIB
            )));
        }
        Ok(())
    }

    /// Derives an input key of `key_bytes` from `passphrase` (parcrypt's salts are
    /// [`KDF_SALT_BYTES`] long; argon2 takes 8 bytes or more).
    pub fn derive(
        &self,
        passphrase: &[u8],
        salt: &[u8],
        key_bytes: usize,
    ) -> Result<Zeroizing<Vec<u8>>, FormatError> {
        self.check()?;
        let params = argon2::Params::new(self.memory_kib, self.passes, self.lanes, Some(key_bytes))
            .map_err(|error| FormatError::Kdf(error.to_string()))?;
        let argon2 =
            argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        let mut key = Zeroizing::new(vec![0u8; key_bytes]);
        argon2
            .hash_password_into(passphrase, salt, &mut key)
            .map_err(|error| FormatError::Kdf(error.to_string()))?;
        Ok(key)
    }
}

/// The settings of OWASP's Password Storage Cheat Sheet for argon2id, which it deems
/// equally strong (memory in KiB, passes; one lane each): 46 MiB and 1 pass, 19 MiB and 2,
/// 12 MiB and 3, 9 MiB and 4, 7 MiB and 5. Parameters that reach none of them get a
/// warning ([`Argon2Params::weaknesses`]).
pub const OWASP_ARGON2ID_MINIMUMS: [(u32, u32); 5] = [
    (46 * 1024, 1),
    (19 * 1024, 2),
    (12 * 1024, 3),
    (9 * 1024, 4),
    (7 * 1024, 5),
];

impl Argon2Params {
    /// Why these parameters are weaker than recommended, for a warning when encrypting
    /// (empty when they are fine; they are never an error: [`Argon2Params::check`] says
    /// what argon2 can run). Parameters are weak when they reach none of the settings in
    /// [`OWASP_ARGON2ID_MINIMUMS`], OWASP's minimums for argon2id: at least as much memory
    /// as one of them with at least as many passes. RFC 9106 (section 4) recommends more
    /// still: 2 GiB and 1 pass, or 64 MiB and 3 passes (parcrypt's default); lanes only
    /// spread the work over cores, so they do not count.
    ///
    /// ```
    /// use parcrypt_format::Argon2Params;
    /// assert!(Argon2Params::DEFAULT.weaknesses().is_empty());
    /// let cheap = Argon2Params { memory_kib: 1024, passes: 3, lanes: 4 };
    /// assert_eq!(cheap.weaknesses().len(), 1);
    /// ```
    pub fn weaknesses(&self) -> Vec<Weakness> {
        let meets = |&(memory_kib, passes): &(u32, u32)| {
            self.memory_kib >= memory_kib && self.passes >= passes
        };
        if OWASP_ARGON2ID_MINIMUMS.iter().any(meets) {
            Vec::new()
        } else {
            vec![Weakness::CheapKdf(*self)]
        }
    }
}

/// Something about a new message that makes it weaker than recommended, or harder to open
/// than the reader expects: a warning to show when encrypting, never an error (the message
/// is still written). [`crate::Setup::warnings`] gathers them; each prints as one line.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Weakness {
    /// argon2id parameters below every OWASP minimum ([`Argon2Params::weaknesses`]).
    CheapKdf(Argon2Params),
    /// A passphrase shorter than [`crate::secrets::SHORT_PASSPHRASE_BYTES`] (its length).
    ShortPassphrase(usize),
    /// argon2id parameters above the default decryption budget: decrypting will need a
    /// raised [`KdfLimits`] (`--kdf-max-memory`, `--kdf-max-passes`, `--kdf-max-lanes`).
    AboveDecryptionBudget(Argon2Params),
}

impl std::fmt::Display for Weakness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Weakness::CheapKdf(params) => write!(
                f,
                "argon2id with {} KiB of memory and {} pass(es) is below OWASP's minimums \
                 (19 MiB with 2 passes, or 46 MiB with 1); a stolen file is cheap to guess \
                 passphrases against (the default is 64 MiB and 3 passes)",
                params.memory_kib, params.passes
            ),
            Weakness::ShortPassphrase(bytes) => write!(
                f,
                "the passphrase is only {bytes} bytes; use {} or more (a few random words)",
                crate::secrets::SHORT_PASSPHRASE_BYTES
            ),
            Weakness::AboveDecryptionBudget(params) => {
                let limits = KdfLimits::DEFAULT;
                let mut raise = Vec::new();
                if params.memory_kib > limits.max_memory_kib {
                    raise.push(format!(
                        "--kdf-max-memory {}",
                        params.memory_kib.div_ceil(1024)
                    ));
                }
                if params.passes > limits.max_passes {
                    raise.push(format!("--kdf-max-passes {}", params.passes));
                }
                if params.lanes > limits.max_lanes {
                    raise.push(format!("--kdf-max-lanes {}", params.lanes));
                }
                write!(
                    f,
                    "these argon2id costs exceed the default decryption budget; decrypting \
                     will need {}",
                    raise.join(" ")
                )
            }
        }
    }
}

/// The most argon2id work a reader agrees to do for a header it has not yet authenticated:
/// a header is read before anything in the file can be checked, so anyone who can hand
/// over a file could otherwise make its reader allocate gigabytes and hash for minutes
/// before "wrong passphrase". A header over the budget is refused before any allocation
/// or hashing ([`KdfLimits::check`], [`FormatError::KdfBudget`]).
///
/// The default, [`KdfLimits::DEFAULT`], is four times [`Argon2Params::DEFAULT`] in each
/// of memory, passes and lanes; raise it for files known to use more
/// ([`crate::Decryptor::kdf_limits`], `parcrypt decrypt --kdf-max-memory MIB`). The
/// format's own limits ([`Argon2Params::MAX_MEMORY_KIB`] and the others) stay the ceiling:
/// a budget above them allows no more than they do.
///
/// ```
/// use parcrypt_format::{Argon2Params, KdfLimits};
/// let big = Argon2Params { memory_kib: 1 << 20, ..Argon2Params::DEFAULT };
/// assert!(KdfLimits::DEFAULT.check(&big).is_err());
/// let raised = KdfLimits { max_memory_kib: 1 << 20, ..KdfLimits::DEFAULT };
/// assert!(raised.check(&big).is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KdfLimits {
    /// The most memory, in KiB.
    pub max_memory_kib: u32,
    /// The most passes.
    pub max_passes: u32,
    /// The most lanes.
    pub max_lanes: u32,
}

impl KdfLimits {
    /// Four times [`Argon2Params::DEFAULT`]: 256 MiB, 12 passes, 16 lanes.
    pub const DEFAULT: KdfLimits = KdfLimits {
        max_memory_kib: 4 * Argon2Params::DEFAULT.memory_kib,
        max_passes: 4 * Argon2Params::DEFAULT.passes,
        max_lanes: 4 * Argon2Params::DEFAULT.lanes,
    };
    /// The format's own limits: everything a valid header may ask for (up to 4 GiB and
    /// 100 passes; minutes of work). For files from a trusted source only.
    pub const FORMAT: KdfLimits = KdfLimits {
        max_memory_kib: Argon2Params::MAX_MEMORY_KIB,
        max_passes: Argon2Params::MAX_PASSES,
        max_lanes: Argon2Params::MAX_LANES,
    };

    /// Refuses `params` when they ask for more memory, passes or lanes than this budget
    /// allows, with [`FormatError::KdfBudget`] naming the option that raises it. Nothing is
    /// allocated or hashed.
    pub fn check(&self, params: &Argon2Params) -> Result<(), FormatError> {
        let over = |what: KdfCost, asked: u32, limit: u32| {
            if asked > limit {
                Err(FormatError::KdfBudget { what, asked, limit })
            } else {
                Ok(())
            }
        };
        over(KdfCost::MemoryKib, params.memory_kib, self.max_memory_kib)?;
        over(KdfCost::Passes, params.passes, self.max_passes)?;
        over(KdfCost::Lanes, params.lanes, self.max_lanes)
    }
}

impl Default for KdfLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Which argon2id cost went over a [`KdfLimits`] budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KdfCost {
    /// Memory, in KiB.
    MemoryKib,
    /// Passes over the memory.
    Passes,
    /// Lanes.
    Lanes,
}

impl KdfCost {
    /// `asked` and `limit` in words, with the command-line option that raises the limit to
    /// `asked`.
    pub(crate) fn describe(self, asked: u32, limit: u32) -> String {
        match self {
            KdfCost::MemoryKib => format!(
                "{} MiB of memory, more than the {} MiB budget; if you trust this file, allow it with --kdf-max-memory {}",
                asked.div_ceil(1024),
                limit / 1024,
                asked.div_ceil(1024)
            ),
            KdfCost::Passes => format!(
                "{asked} passes, more than the budget of {limit}; if you trust this file, allow it with --kdf-max-passes {asked}"
            ),
            KdfCost::Lanes => format!(
                "{asked} lanes, more than the budget of {limit}; if you trust this file, allow it with --kdf-max-lanes {asked}"
            ),
        }
    }
}

impl Default for Argon2Params {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// How the Cobblestone input key is obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// The user gives the input key itself.
    Key,
    /// argon2id of a passphrase with these parameters and salt.
    Argon2id {
        /// Memory, passes and lanes.
        params: Argon2Params,
        /// The salt, random per file.
        salt: [u8; KDF_SALT_BYTES],
    },
}

/// A parsed parcrypt header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParcryptHeader {
    /// The AEAD of the Cobblestone message that follows.
    pub suite: Suite,
    /// Whether a key or a passphrase opens it.
    pub key_source: KeySource,
}

impl ParcryptHeader {
    /// The header's 40 bytes as docs/FORMAT.md specifies them.
    pub fn to_bytes(&self) -> [u8; HEADER_BYTES] {
        let mut bytes = [0u8; HEADER_BYTES];
        bytes[..8].copy_from_slice(MAGIC);
        bytes[8] = VERSION;
        bytes[9] = match self.suite {
            Suite::Cobblestone128 => SUITE_128,
            Suite::Cobblestone256 => SUITE_256,
        };
        match self.key_source {
            KeySource::Key => bytes[10] = SOURCE_KEY,
            KeySource::Argon2id { params, salt } => {
                bytes[10] = SOURCE_ARGON2ID;
                bytes[12..16].copy_from_slice(&params.memory_kib.to_be_bytes());
                bytes[16..20].copy_from_slice(&params.passes.to_be_bytes());
                bytes[20..24].copy_from_slice(&params.lanes.to_be_bytes());
                bytes[24..40].copy_from_slice(&salt);
            }
        }
        bytes
    }

    /// Whether `bytes` (the start of a file, any length) begins like a parcrypt file.
    pub fn has_magic(bytes: &[u8]) -> bool {
        bytes.len() >= MAGIC.len() && &bytes[..MAGIC.len()] == MAGIC
    }

    /// Parses a version-1 header, strictly: unknown values and non-zero reserved or unused
    /// fields are refused, so that every valid header has exactly one encoding. Another
    /// version is [`FormatError::UnsupportedVersion`] here; [`crate::Envelope::parse`]
    /// reads version 2 ([`crate::recipients`]) as well.
    pub fn parse(bytes: &[u8]) -> Result<ParcryptHeader, FormatError> {
        if !Self::has_magic(bytes) {
            return Err(FormatError::NotParcrypt);
        }
        if bytes.len() <= 8 {
            return Err(FormatError::TruncatedHeader("parcrypt"));
        }
        if bytes[8] != VERSION {
            return Err(FormatError::UnsupportedVersion(bytes[8]));
        }
        if bytes.len() < HEADER_BYTES {
            return Err(FormatError::TruncatedHeader("parcrypt"));
        }
        let suite = match bytes[9] {
            SUITE_128 => Suite::Cobblestone128,
            SUITE_256 => Suite::Cobblestone256,
            _ => return Err(FormatError::DamagedHeader("unknown AEAD")),
        };
        if bytes[11] != 0 {
            return Err(FormatError::DamagedHeader("reserved byte is not zero"));
        }
        let word = |offset: usize| {
            u32::from_be_bytes([
                bytes[offset],
                bytes[offset + 1],
                bytes[offset + 2],
                bytes[offset + 3],
            ])
        };
        let key_source = match bytes[10] {
            SOURCE_KEY => {
                if bytes[12..HEADER_BYTES].iter().any(|&b| b != 0) {
                    return Err(FormatError::DamagedHeader(
                        "key-derivation fields are set for a file encrypted with a key",
                    ));
                }
                KeySource::Key
            }
            SOURCE_ARGON2ID => {
                let params = Argon2Params {
                    memory_kib: word(12),
                    passes: word(16),
                    lanes: word(20),
                };
                params.check()?;
                let mut salt = [0u8; KDF_SALT_BYTES];
                salt.copy_from_slice(&bytes[24..40]);
                KeySource::Argon2id { params, salt }
            }
            _ => return Err(FormatError::DamagedHeader("unknown key source")),
        };
        Ok(ParcryptHeader { suite, key_source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_as_documented() {
        let header = ParcryptHeader {
            suite: Suite::Cobblestone256,
            key_source: KeySource::Argon2id {
                params: Argon2Params {
                    memory_kib: 0x0001_0000,
                    passes: 3,
                    lanes: 4,
                },
                salt: [0xaa; 16],
            },
        };
        let bytes = header.to_bytes();
        assert_eq!(
            hex::encode(bytes),
            "7061726372797074\
             01 02 02 00 00010000 00000003 00000004 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                .replace(' ', "")
        );
        assert_eq!(ParcryptHeader::parse(&bytes).unwrap(), header);
        let keyed = ParcryptHeader {
            suite: Suite::Cobblestone128,
            key_source: KeySource::Key,
        };
        let bytes = keyed.to_bytes();
        assert_eq!(hex::encode(&bytes[..12]), "706172637279707401010100");
        assert!(bytes[12..].iter().all(|&b| b == 0));
        assert_eq!(ParcryptHeader::parse(&bytes).unwrap(), keyed);
    }

    #[test]
    fn bad_headers_are_refused_with_a_reason() {
        let good = ParcryptHeader {
            suite: Suite::Cobblestone128,
            key_source: KeySource::Argon2id {
                params: Argon2Params::DEFAULT,
                salt: [1; 16],
            },
        }
        .to_bytes();
        assert!(matches!(
            ParcryptHeader::parse(b"hello world, this is not it at all......"),
            Err(FormatError::NotParcrypt)
        ));
        assert!(matches!(
            ParcryptHeader::parse(b"parc"),
            Err(FormatError::NotParcrypt)
        ));
        assert!(matches!(
            ParcryptHeader::parse(&good[..8]),
            Err(FormatError::TruncatedHeader(_))
        ));
        assert!(matches!(
            ParcryptHeader::parse(&good[..39]),
            Err(FormatError::TruncatedHeader(_))
        ));
        let mut newer = good;
        newer[8] = 2;
        assert!(matches!(
            ParcryptHeader::parse(&newer[..9]),
            Err(FormatError::UnsupportedVersion(2))
        ));
        for (offset, value) in [(9usize, 3u8), (10, 0), (10, 3), (11, 1)] {
            let mut bad = good;
            bad[offset] = value;
            assert!(
                matches!(
                    ParcryptHeader::parse(&bad),
                    Err(FormatError::DamagedHeader(_))
                ),
                "{offset}"
            );
        }
        // Costs a malicious header could use to exhaust the reader.
        for (offset, value) in [(12usize, 0xffu8), (16, 0x10), (20, 0x10), (23, 0), (19, 0)] {
            let mut bad = good;
            bad[offset] = value;
            assert!(
                matches!(ParcryptHeader::parse(&bad), Err(FormatError::KdfLimits(_))),
                "{offset}"
            );
        }
        let mut keyed = ParcryptHeader {
            suite: Suite::Cobblestone128,
            key_source: KeySource::Key,
        }
        .to_bytes();
        keyed[30] = 1;
        assert!(matches!(
            ParcryptHeader::parse(&keyed),
            Err(FormatError::DamagedHeader(_))
        ));
    }

    #[test]
    fn argon2id_matches_the_reference_implementation() {
        // phc-winner-argon2 src/test.c, argon2id v1.3: t=2, m=2^16 KiB, p=1, "password",
        // "somesalt", 32-byte output.
        let params = Argon2Params {
            memory_kib: 1 << 16,
            passes: 2,
            lanes: 1,
        };
        let key = params.derive(b"password", b"somesalt", 32).unwrap();
        assert_eq!(
            hex::encode(&*key),
            "09316115d5cf24ed5a15a31a3ba326e5cf32edc24702987c02b6566f61913cf7"
        );
        let too_much = Argon2Params {
            memory_kib: Argon2Params::MAX_MEMORY_KIB + 1,
            ..params
        };
        assert!(matches!(
            too_much.derive(b"password", b"somesalt", 32),
            Err(FormatError::KdfLimits(_))
        ));
    }

    #[test]
    fn the_decryption_budget_is_four_times_the_defaults_and_names_its_option() {
        let limits = KdfLimits::default();
        assert_eq!(
            (limits.max_memory_kib, limits.max_passes, limits.max_lanes),
            (256 * 1024, 12, 16)
        );
        assert!(limits.check(&Argon2Params::DEFAULT).is_ok());
        let at_limit = Argon2Params {
            memory_kib: 256 * 1024,
            passes: 12,
            lanes: 16,
        };
        assert!(limits.check(&at_limit).is_ok());
        for (params, option) in [
            (
                Argon2Params {
                    memory_kib: 256 * 1024 + 1,
                    ..at_limit
                },
                "--kdf-max-memory 257",
            ),
            (
                Argon2Params {
                    passes: 13,
                    ..at_limit
                },
                "--kdf-max-passes 13",
            ),
            (
                Argon2Params {
                    lanes: 17,
                    ..at_limit
                },
                "--kdf-max-lanes 17",
            ),
        ] {
            let error = limits.check(&params).unwrap_err();
            assert!(matches!(error, FormatError::KdfBudget { .. }), "{error}");
            assert!(error.to_string().contains(option), "{error}");
            assert!(KdfLimits::FORMAT.check(&params).is_ok());
        }
        let hostile = Argon2Params {
            memory_kib: Argon2Params::MAX_MEMORY_KIB,
            passes: Argon2Params::MAX_PASSES,
            lanes: Argon2Params::MAX_LANES,
        };
        assert!(matches!(
            limits.check(&hostile),
            Err(FormatError::KdfBudget {
                what: KdfCost::MemoryKib,
                asked: 4194304,
                limit: 262144
            })
        ));
    }

    #[test]
    fn weak_kdf_costs_are_those_below_every_owasp_setting() {
        let params = |memory_mib: u32, passes: u32| Argon2Params {
            memory_kib: memory_mib * 1024,
            passes,
            lanes: 1,
        };
        for (memory_mib, passes) in [(64, 3), (46, 1), (19, 2), (12, 3), (9, 4), (7, 5), (7, 10)] {
            assert!(
                params(memory_mib, passes).weaknesses().is_empty(),
                "{memory_mib} MiB, {passes} passes"
            );
        }
        for (memory_mib, passes) in [(45, 1), (18, 2), (11, 3), (8, 4), (6, 100), (1, 3)] {
            assert_eq!(
                params(memory_mib, passes).weaknesses(),
                vec![Weakness::CheapKdf(params(memory_mib, passes))],
                "{memory_mib} MiB, {passes} passes"
            );
        }
        let text = Weakness::CheapKdf(params(1, 3)).to_string();
        assert!(
            text.contains("1024 KiB") && text.contains("OWASP"),
            "{text}"
        );
        assert!(!text.contains('\n'));
    }
}
