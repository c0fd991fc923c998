//! What precedes the chunks: the optional parcrypt header, the salt and the commitment.
//!
//! Decryption reads this [`Envelope`] first, learns from it whether a key or a passphrase is
//! needed (so a front end asks for the right one), then [`Envelope::unlock`]s it, which
//! checks the key commitment before a single chunk is touched.

use std::io::Read;

use parcrypt_engine::stream::pipeline::read_full;
use zeroize::Zeroizing;

use crate::cobblestone::{MessageKeys, Suite, COMMITMENT_BYTES, PREFIX_BYTES, SALT_BYTES};
use crate::error::FormatError;
use crate::header::{
    Argon2Params, KdfLimits, KeySource, ParcryptHeader, Weakness, HEADER_BYTES, KDF_SALT_BYTES,
};

/// How a file is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// A parcrypt header, then a Cobblestone message whose context binds the header.
    #[default]
    Parcrypt,
    /// A bare Cobblestone message (salt, commitment, chunks), as other implementations
    /// write and read it.
    Cobblestone,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(name: &str) -> Result<Self, String> {
        match name.to_ascii_lowercase().as_str() {
            "parcrypt" => Ok(Format::Parcrypt),
            "cobblestone" => Ok(Format::Cobblestone),
            _ => Err(format!(
                "unknown format '{name}' (choose parcrypt or cobblestone)"
            )),
        }
    }
}

/// What the input key is made from.
#[derive(Clone, Copy)]
pub enum Secret<'a> {
    /// The input key itself: 16 or 32 uniformly random bytes.
    Key(&'a [u8]),
    /// A passphrase, stretched with argon2id (parcrypt format only).
    Passphrase(&'a [u8]),
}

/// The bytes before chunk 0, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    header: Option<ParcryptHeader>,
    salt: [u8; SALT_BYTES],
    commitment: [u8; COMMITMENT_BYTES],
}

/// How to set up a new message.
#[derive(Clone, Copy, Debug)]
pub struct Setup<'a> {
    /// A parcrypt header before the message, or a bare Cobblestone message.
    pub format: Format,
    /// The AEAD (a key's length must match it).
    pub suite: Suite,
    /// Application data bound into the key derivation; decryption must give the same.
    pub context: &'a [u8],
    /// Cost of the passphrase KDF (ignored for keys).
    pub argon2: Argon2Params,
}

impl Default for Setup<'_> {
    fn default() -> Self {
        Setup {
            format: Format::Parcrypt,
            suite: Suite::Cobblestone128,
            context: b"",
            argon2: Argon2Params::DEFAULT,
        }
    }
}

impl Setup<'_> {
    /// What makes a message set up this way under `secret` weaker than recommended, or
    /// harder to open than a reader expects, for warnings when encrypting (empty for a key,
    /// and for a passphrase of 8 bytes or more under the default costs): argon2id costs
    /// below OWASP's minimums ([`Argon2Params::weaknesses`]), a short passphrase
    /// ([`crate::secrets::passphrase_weakness`]), costs above the default decryption
    /// budget ([`KdfLimits::DEFAULT`]). None of them stops encryption.
    ///
    /// ```
    /// use parcrypt_format::{Argon2Params, Secret, Setup};
    /// let setup = Setup::default();
    /// assert!(setup.warnings(Secret::Passphrase(b"correct horse battery")).is_empty());
    /// assert_eq!(setup.warnings(Secret::Passphrase(b"abc")).len(), 1);
    /// let cheap = Setup { argon2: Argon2Params { memory_kib: 64, passes: 1, lanes: 1 }, ..setup };
    /// assert_eq!(cheap.warnings(Secret::Passphrase(b"abc")).len(), 2);
    /// assert!(cheap.warnings(Secret::Key(&[0; 16])).is_empty());
    /// ```
    pub fn warnings(&self, secret: Secret<'_>) -> Vec<Weakness> {
        let Secret::Passphrase(passphrase) = secret else {
            return Vec::new();
        };
        let mut warnings = self.argon2.weaknesses();
        warnings.extend(crate::secrets::passphrase_weakness(passphrase));
        if KdfLimits::DEFAULT.check(&self.argon2).is_err() {
            warnings.push(Weakness::AboveDecryptionBudget(self.argon2));
        }
        warnings
    }
}

/// Salts for a new message. Random unless a test or a vector needs them fixed.
#[derive(Clone, Copy, Debug)]
pub struct Salts {
    /// Cobblestone's key-derivation salt.
    pub cobblestone: [u8; SALT_BYTES],
    /// argon2id's salt (used only under a passphrase).
    pub argon2: [u8; KDF_SALT_BYTES],
}

impl Salts {
    /// Fresh salts from the operating system's generator.
    pub fn random() -> Result<Salts, FormatError> {
        let mut salts = Salts {
            cobblestone: [0; SALT_BYTES],
            argon2: [0; KDF_SALT_BYTES],
        };
        getrandom::fill(&mut salts.cobblestone)
            .map_err(|error| FormatError::Random(error.to_string()))?;
        getrandom::fill(&mut salts.argon2)
            .map_err(|error| FormatError::Random(error.to_string()))?;
        Ok(salts)
    }
}

impl Envelope {
    /// Sets up a new message with random salts: returns its envelope (to be written before
    /// the chunks) and the keys to seal the chunks with.
    pub fn create(
        setup: &Setup<'_>,
        secret: Secret<'_>,
    ) -> Result<(Envelope, MessageKeys), FormatError> {
        Self::create_with_salts(setup, secret, Salts::random()?)
    }

    /// [`Envelope::create`] with given salts. A salt must never repeat under one key: this
    /// exists for known-answer tests (Wycheproof's vectors) and reproducible comparisons.
    pub fn create_with_salts(
        setup: &Setup<'_>,
        secret: Secret<'_>,
        salts: Salts,
    ) -> Result<(Envelope, MessageKeys), FormatError> {
        let header = match (setup.format, secret) {
            (Format::Cobblestone, Secret::Passphrase(_)) => {
                return Err(FormatError::Kdf(
                    "a bare Cobblestone message has no room for passphrase parameters: use a key, or the parcrypt format".into(),
                ))
            }
            (Format::Cobblestone, Secret::Key(_)) => None,
            (Format::Parcrypt, Secret::Key(_)) => Some(ParcryptHeader { suite: setup.suite, key_source: KeySource::Key }),
            (Format::Parcrypt, Secret::Passphrase(passphrase)) => {
                if passphrase.is_empty() {
                    return Err(FormatError::EmptyPassphrase);
                }
                setup.argon2.check()?;
                Some(ParcryptHeader {
                    suite: setup.suite,
                    key_source: KeySource::Argon2id { params: setup.argon2, salt: salts.argon2 },
                })
            }
        };
        let mut envelope = Envelope {
            header,
            salt: salts.cobblestone,
            commitment: [0; COMMITMENT_BYTES],
        };
        let keys = envelope.derive(setup.suite, secret, setup.context)?;
        envelope.commitment = *keys.commitment();
        Ok((envelope, keys))
    }

    /// Reads an envelope from the start of a file. With [`Format::Parcrypt`], input that
    /// does not start with the parcrypt magic is [`FormatError::NotParcrypt`].
    pub fn read(format: Format, reader: &mut dyn Read) -> Result<Envelope, FormatError> {
        let header_bytes = if format == Format::Parcrypt {
            HEADER_BYTES
        } else {
            0
        };
        let mut bytes = [0u8; HEADER_BYTES + PREFIX_BYTES];
        let wanted = header_bytes + PREFIX_BYTES;
        let got = read_up_to(reader, &mut bytes[..wanted])?;
        Self::parse(format, &bytes[..got]).map(|(envelope, _)| envelope)
    }

    /// Parses an envelope from the start of `bytes` and returns it with its length.
    pub fn parse(format: Format, bytes: &[u8]) -> Result<(Envelope, usize), FormatError> {
        let (header, rest) = match format {
            Format::Parcrypt => {
                let header = ParcryptHeader::parse(bytes)?;
                (Some(header), &bytes[HEADER_BYTES..])
            }
            Format::Cobblestone => (None, bytes),
        };
        if rest.len() < PREFIX_BYTES {
            return Err(FormatError::TruncatedHeader("Cobblestone"));
        }
        let mut salt = [0u8; SALT_BYTES];
        salt.copy_from_slice(&rest[..SALT_BYTES]);
        let mut commitment = [0u8; COMMITMENT_BYTES];
        commitment.copy_from_slice(&rest[SALT_BYTES..PREFIX_BYTES]);
        let envelope = Envelope {
            header,
            salt,
            commitment,
        };
        let length = envelope.len();
        Ok((envelope, length))
    }

    /// The envelope as written in a file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.len());
        if let Some(header) = &self.header {
            bytes.extend_from_slice(&header.to_bytes());
        }
        bytes.extend_from_slice(&self.salt);
        bytes.extend_from_slice(&self.commitment);
        bytes
    }

    /// Bytes before chunk 0.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        PREFIX_BYTES
            + if self.header.is_some() {
                HEADER_BYTES
            } else {
                0
            }
    }

    /// The parcrypt header, or `None` for a bare Cobblestone message.
    pub fn header(&self) -> Option<&ParcryptHeader> {
        self.header.as_ref()
    }

    /// Whether unlocking takes a passphrase (rather than a key).
    pub fn needs_passphrase(&self) -> bool {
        matches!(
            self.header,
            Some(ParcryptHeader {
                key_source: KeySource::Argon2id { .. },
                ..
            })
        )
    }

    /// The argon2id parameters of a passphrase-sealed message (`None` under a key).
    pub fn argon2(&self) -> Option<Argon2Params> {
        match self.header {
            Some(ParcryptHeader {
                key_source: KeySource::Argon2id { params, .. },
                ..
            }) => Some(params),
            _ => None,
        }
    }

    /// Refuses a header whose argon2id costs exceed `limits` ([`FormatError::KdfBudget`]);
    /// a message under a key always passes. Cheap: a front end calls it before asking for
    /// a passphrase, so that a hostile file is refused before anyone types anything.
    pub fn check_kdf(&self, limits: &KdfLimits) -> Result<(), FormatError> {
        match self.argon2() {
            Some(params) => limits.check(&params),
            None => Ok(()),
        }
    }

    /// Derives the message keys from `secret` and `context` and checks the commitment.
    /// A bare Cobblestone message takes its suite from the key's length. A passphrase is
    /// stretched only within the default budget, [`KdfLimits::DEFAULT`]; use
    /// [`Envelope::unlock_within`] to allow more.
    pub fn unlock(&self, secret: Secret<'_>, context: &[u8]) -> Result<MessageKeys, FormatError> {
        self.unlock_within(secret, context, &KdfLimits::DEFAULT)
    }

    /// [`Envelope::unlock`] under a given argon2id budget: a header over `limits` is
    /// refused ([`FormatError::KdfBudget`]) before any key derivation.
    pub fn unlock_within(
        &self,
        secret: Secret<'_>,
        context: &[u8],
        limits: &KdfLimits,
    ) -> Result<MessageKeys, FormatError> {
        self.unlock_checked(None, secret, context, limits)
    }

    /// [`Envelope::unlock`] for a bare Cobblestone message of a known suite (a key of the
    /// other suite's length is refused rather than tried). A passphrase-sealed header is
    /// held to [`KdfLimits::DEFAULT`], as by [`Envelope::unlock`].
    pub fn unlock_as(
        &self,
        suite: Suite,
        secret: Secret<'_>,
        context: &[u8],
    ) -> Result<MessageKeys, FormatError> {
        self.unlock_checked(Some(suite), secret, context, &KdfLimits::DEFAULT)
    }

    /// Unlocks within `limits`, as `suite` when one is given, else as the header's suite or
    /// (a bare message) the suite of the key's length.
    fn unlock_checked(
        &self,
        suite: Option<Suite>,
        secret: Secret<'_>,
        context: &[u8],
        limits: &KdfLimits,
    ) -> Result<MessageKeys, FormatError> {
        self.check_kdf(limits)?;
        let suite = match (suite, &self.header, secret) {
            (Some(suite), _, _) => suite,
            (None, Some(header), _) => header.suite,
            (None, None, Secret::Key(key)) => Suite::for_key_length(key.len())?,
            (None, None, Secret::Passphrase(_)) => return Err(FormatError::NeedsKey),
        };
        if let Some(header) = &self.header {
            if header.suite != suite {
                return Err(FormatError::KeySuiteMismatch {
                    suite: header.suite.name(),
                    expected: header.suite.key_bytes(),
                    got: suite.key_bytes(),
                });
            }
        }
        let keys = self.derive(suite, secret, context)?;
        keys.check_commitment(&self.commitment)?;
        Ok(keys)
    }

    fn derive(
        &self,
        suite: Suite,
        secret: Secret<'_>,
        context: &[u8],
    ) -> Result<MessageKeys, FormatError> {
        let input_key: Zeroizing<Vec<u8>> = match (&self.header, secret) {
            (None, Secret::Key(key))
            | (
                Some(ParcryptHeader {
                    key_source: KeySource::Key,
                    ..
                }),
                Secret::Key(key),
            ) => {
                suite.check_key(key)?;
                Zeroizing::new(key.to_vec())
            }
            (
                Some(ParcryptHeader {
                    key_source: KeySource::Argon2id { params, salt },
                    ..
                }),
                Secret::Passphrase(passphrase),
            ) => params.derive(passphrase, salt, suite.key_bytes())?,
            (
                Some(ParcryptHeader {
                    key_source: KeySource::Key,
                    ..
                }),
                Secret::Passphrase(_),
            )
            | (None, Secret::Passphrase(_)) => return Err(FormatError::NeedsKey),
            (
                Some(ParcryptHeader {
                    key_source: KeySource::Argon2id { .. },
                    ..
                }),
                Secret::Key(_),
            ) => return Err(FormatError::NeedsPassphrase),
        };
        // The header is bound into the context, so no byte of it can change unnoticed.
        let mut full_context = Vec::with_capacity(HEADER_BYTES + context.len());
        if let Some(header) = &self.header {
            full_context.extend_from_slice(&header.to_bytes());
        }
        full_context.extend_from_slice(context);
        MessageKeys::derive(suite, &input_key, &self.salt, &full_context)
    }
}

/// Reads until `buffer` is full or the input ends; returns the bytes read.
pub(crate) fn read_up_to(reader: &mut dyn Read, buffer: &mut [u8]) -> Result<usize, FormatError> {
    read_full(reader, buffer).map_err(FormatError::Read)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHEAP: Argon2Params = Argon2Params {
        memory_kib: 64,
        passes: 1,
        lanes: 1,
    };

    /// The default setup, with argon2id made cheap.
    fn cheap_setup() -> Setup<'static> {
        Setup {
            argon2: CHEAP,
            ..Setup::default()
        }
    }

    #[test]
    fn envelopes_round_trip_and_check_the_secret() {
        let key = [5u8; 16];
        for format in [Format::Parcrypt, Format::Cobblestone] {
            let setup = Setup {
                format,
                argon2: CHEAP,
                context: b"ctx",
                ..Setup::default()
            };
            let (envelope, keys) = Envelope::create(&setup, Secret::Key(&key)).unwrap();
            let bytes = envelope.to_bytes();
            assert_eq!(bytes.len(), envelope.len());
            let read = Envelope::read(format, &mut &bytes[..]).unwrap();
            assert_eq!(read, envelope);
            assert_eq!(
                read.unlock(Secret::Key(&key), b"ctx").unwrap().key(),
                keys.key()
            );
            assert!(matches!(
                read.unlock(Secret::Key(&[6u8; 16]), b"ctx"),
                Err(FormatError::WrongKey)
            ));
            assert!(matches!(
                read.unlock(Secret::Key(&key), b"ctY"),
                Err(FormatError::WrongKey)
            ));
            assert!(matches!(
                read.unlock(Secret::Key(&[5u8; 32]), b"ctx"),
                Err(FormatError::KeySuiteMismatch { .. } | FormatError::WrongKey)
            ));
            assert!(!read.needs_passphrase());
        }
        let setup = cheap_setup();
        let (envelope, _) = Envelope::create(&setup, Secret::Passphrase(b"correct horse")).unwrap();
        assert!(envelope.needs_passphrase());
        assert!(envelope
            .unlock(Secret::Passphrase(b"correct horse"), b"")
            .is_ok());
        assert!(matches!(
            envelope.unlock(Secret::Passphrase(b"correct horsE"), b""),
            Err(FormatError::WrongKey)
        ));
        assert!(matches!(
            envelope.unlock(Secret::Key(&key), b""),
            Err(FormatError::NeedsPassphrase)
        ));
        assert!(matches!(
            Envelope::create(&setup, Secret::Passphrase(b"")),
            Err(FormatError::EmptyPassphrase)
        ));
        let bare = Setup {
            format: Format::Cobblestone,
            ..setup
        };
        assert!(Envelope::create(&bare, Secret::Passphrase(b"x")).is_err());
    }

    #[test]
    fn every_header_byte_is_bound_to_the_key() {
        let (envelope, _) = Envelope::create(&cheap_setup(), Secret::Passphrase(b"pass")).unwrap();
        let bytes = envelope.to_bytes();
        for position in 0..bytes.len() {
            for bit in [0x01u8, 0x80] {
                let mut changed = bytes.clone();
                changed[position] ^= bit;
                let refused = match Envelope::parse(Format::Parcrypt, &changed) {
                    Err(_) => true,
                    Ok((changed, _)) => changed.unlock(Secret::Passphrase(b"pass"), b"").is_err(),
                };
                assert!(
                    refused,
                    "flipping bit {bit:#x} of byte {position} went unnoticed"
                );
            }
        }
    }

    #[test]
    fn short_or_foreign_input_is_named() {
        assert!(matches!(
            Envelope::read(Format::Parcrypt, &mut &b"PK\x03\x04 a zip file"[..]),
            Err(FormatError::NotParcrypt)
        ));
        assert!(matches!(
            Envelope::read(Format::Parcrypt, &mut &b""[..]),
            Err(FormatError::NotParcrypt)
        ));
        assert!(matches!(
            Envelope::read(Format::Cobblestone, &mut &[0u8; 55][..]),
            Err(FormatError::TruncatedHeader(_))
        ));
        let (envelope, _) = Envelope::create(&cheap_setup(), Secret::Key(&[1; 16])).unwrap();
        let bytes = envelope.to_bytes();
        assert!(matches!(
            Envelope::read(Format::Parcrypt, &mut &bytes[..60]),
            Err(FormatError::TruncatedHeader(_))
        ));
    }

    #[test]
    fn a_header_over_the_budget_is_refused_before_any_work() {
        let setup = cheap_setup();
        let (envelope, _) = Envelope::create(&setup, Secret::Passphrase(b"pass")).unwrap();
        let mut bytes = envelope.to_bytes();
        // 4 GiB, the format's limit: refused at once, nothing allocated (this test would
        // otherwise need 4 GiB and minutes).
        bytes[12..16].copy_from_slice(&Argon2Params::MAX_MEMORY_KIB.to_be_bytes());
        let (hostile, _) = Envelope::parse(Format::Parcrypt, &bytes).unwrap();
        for result in [
            hostile.unlock(Secret::Passphrase(b"pass"), b""),
            hostile.unlock_as(setup.suite, Secret::Passphrase(b"pass"), b""),
            hostile.unlock_within(Secret::Passphrase(b"pass"), b"", &KdfLimits::DEFAULT),
        ] {
            let error = result.err().unwrap();
            assert!(
                matches!(error, FormatError::KdfBudget { .. })
                    && error.to_string().contains("--kdf-max-memory 4096"),
                "{error}"
            );
        }
        assert!(hostile.check_kdf(&KdfLimits::DEFAULT).is_err());
        assert!(hostile.check_kdf(&KdfLimits::FORMAT).is_ok());
        assert_eq!(
            hostile.argon2().map(|params| params.memory_kib),
            Some(Argon2Params::MAX_MEMORY_KIB)
        );

        // Within a raised budget the work is done: the changed header then fails the
        // commitment, as every changed header byte does.
        let mut moderate = envelope.to_bytes();
        moderate[20..24].copy_from_slice(&20u32.to_be_bytes());
        moderate[12..16].copy_from_slice(&(20u32 * 8).to_be_bytes());
        let (moderate, _) = Envelope::parse(Format::Parcrypt, &moderate).unwrap();
        assert!(matches!(
            moderate.unlock(Secret::Passphrase(b"pass"), b""),
            Err(FormatError::KdfBudget {
                what: crate::header::KdfCost::Lanes,
                ..
            })
        ));
        let raised = KdfLimits {
            max_lanes: 20,
            ..KdfLimits::DEFAULT
        };
        assert!(matches!(
            moderate.unlock_within(Secret::Passphrase(b"pass"), b"", &raised),
            Err(FormatError::WrongKey)
        ));
        // Files under a key, and the unchanged file, pass any budget.
        assert!(envelope
            .unlock_within(Secret::Passphrase(b"pass"), b"", &raised)
            .is_ok());
        let (keyed, _) = Envelope::create(&setup, Secret::Key(&[3; 16])).unwrap();
        let none = KdfLimits {
            max_memory_kib: 0,
            max_passes: 0,
            max_lanes: 0,
        };
        assert!(keyed
            .unlock_within(Secret::Key(&[3; 16]), b"", &none)
            .is_ok());
    }

    #[test]
    fn warnings_name_cheap_costs_short_passphrases_and_costly_files() {
        let defaults = Setup::default();
        assert!(defaults
            .warnings(Secret::Passphrase(b"12345678"))
            .is_empty());
        assert_eq!(
            defaults.warnings(Secret::Passphrase(b"1234567")),
            vec![Weakness::ShortPassphrase(7)]
        );
        let costly = Setup {
            argon2: Argon2Params {
                memory_kib: 1 << 20,
                passes: 1,
                lanes: 4,
            },
            ..defaults
        };
        let warnings = costly.warnings(Secret::Passphrase(b"long enough"));
        assert_eq!(
            warnings,
            vec![Weakness::AboveDecryptionBudget(costly.argon2)]
        );
        assert!(warnings[0].to_string().contains("--kdf-max-memory 1024"));
        assert!(costly.warnings(Secret::Key(&[0; 16])).is_empty());
    }
}
