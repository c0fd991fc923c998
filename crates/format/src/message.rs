//! What precedes the chunks: the optional parcrypt header, the salt and the commitment.
//!
//! Decryption reads this [`Envelope`] first, learns from it whether a key, a passphrase or
//! an identity is needed (so a front end asks for the right one), then
//! [`Envelope::unlock`]s it, which checks the key commitment (and, for a file encrypted to
//! recipients, the header's MAC) before a single chunk is touched.

use std::io::Read;

use parcrypt_age::{Identity, Recipient};
use parcrypt_engine::stream::pipeline::read_full;
use zeroize::Zeroizing;

use crate::cobblestone::{MessageKeys, Suite, COMMITMENT_BYTES, PREFIX_BYTES, SALT_BYTES};
use crate::error::FormatError;
use crate::header::{
    Argon2Params, KdfLimits, KeySource, ParcryptHeader, Weakness, HEADER_BYTES, KDF_SALT_BYTES,
    MAGIC,
};
use crate::recipients::{self, FileKey, RecipientHeader};

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

/// What the input key is made from: a key or a passphrase (either way, for both
/// directions), or public-key recipients to encrypt to and the identities that decrypt.
///
/// ```
/// use std::io::{Read, Write};
/// use parcrypt_age::{Identity, Recipient, X25519Identity};
/// use parcrypt_format::{CpuChunks, Decryptor, Encryptor, Format, Secret, Setup};
/// use parcrypt_engine::{Backend, Engine};
///
/// let engine = Engine::new(Backend::Seq, None)?;
/// let batcher = CpuChunks::new(&engine);
/// let identity = X25519Identity::generate();
/// let recipients = [Recipient::from(identity.to_public())]; // "age1..." parses too
///
/// let mut writer = Encryptor::new(&Setup::default(), Secret::Recipients(&recipients))?
///     .wrap_output(&batcher, Vec::new())?;
/// writer.write_all(b"for your eyes only")?;
/// let sealed = writer.finish()?;
///
/// let decryptor = Decryptor::new(Format::Parcrypt, &sealed[..])?;
/// assert!(decryptor.envelope().needs_identity());
/// let mut plain = Vec::new();
/// decryptor
///     .unlock(Secret::Identities(&[Identity::from(identity)]), b"")?
///     .reader(&batcher)
///     .read_to_end(&mut plain)?;
/// assert_eq!(plain, b"for your eyes only");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy)]
pub enum Secret<'a> {
    /// The input key itself: 16 or 32 uniformly random bytes.
    Key(&'a [u8]),
    /// A passphrase, stretched with argon2id (parcrypt format only).
    Passphrase(&'a [u8]),
    /// Encryption to public-key recipients (`age1...` X25519, `age1pq1...` post-quantum
    /// hybrid; parcrypt format only): a random file key wrapped for each, in a version-2
    /// header ([`crate::recipients`]). At most 1,024; post-quantum recipients are not
    /// mixed with others, and a passphrase recipient is refused (use [`Secret::Passphrase`]).
    Recipients(&'a [Recipient]),
    /// Decryption of a file encrypted to recipients, with the first of these identities
    /// that unwraps its file key.
    Identities(&'a [Identity]),
}

/// The bytes before chunk 0, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    head: Head,
    salt: [u8; SALT_BYTES],
    commitment: [u8; COMMITMENT_BYTES],
}

/// What comes before the Cobblestone message.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Head {
    /// Nothing: a bare Cobblestone message.
    Bare,
    /// The 40-byte version-1 header (a key or a passphrase).
    Fixed(ParcryptHeader),
    /// The version-2 header (recipients).
    Recipients(Box<RecipientHeader>),
}

impl Head {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Head::Bare => Vec::new(),
            Head::Fixed(header) => header.to_bytes().to_vec(),
            Head::Recipients(header) => header.as_bytes().to_vec(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Head::Bare => 0,
            Head::Fixed(_) => HEADER_BYTES,
            Head::Recipients(header) => header.len(),
        }
    }
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
    /// Sets up a new message with random salts (and, for recipients, a random file key):
    /// returns its envelope (to be written before the chunks) and the keys to seal the
    /// chunks with.
    pub fn create(
        setup: &Setup<'_>,
        secret: Secret<'_>,
    ) -> Result<(Envelope, MessageKeys), FormatError> {
        Self::create_with_salts(setup, secret, Salts::random()?)
    }

    /// [`Envelope::create`] with given salts. A salt must never repeat under one key: this
    /// exists for known-answer tests (Wycheproof's vectors) and reproducible comparisons.
    /// A file to recipients still gets a random file key (and its stanzas random shares):
    /// [`Envelope::for_recipient_header`] builds one from given parts.
    pub fn create_with_salts(
        setup: &Setup<'_>,
        secret: Secret<'_>,
        salts: Salts,
    ) -> Result<(Envelope, MessageKeys), FormatError> {
        let head = match (setup.format, secret) {
            (Format::Cobblestone, Secret::Passphrase(_)) => {
                return Err(FormatError::Kdf(
                    "a bare Cobblestone message has no room for passphrase parameters: use a key, or the parcrypt format".into(),
                ))
            }
            (Format::Cobblestone, Secret::Recipients(_)) => {
                return Err(FormatError::Recipients(
                    "a bare Cobblestone message has no room for recipients: use the parcrypt format".into(),
                ))
            }
            (_, Secret::Identities(_)) => {
                return Err(FormatError::Recipients(
                    "identities decrypt; to encrypt, give their recipients (Identity::to_public)".into(),
                ))
            }
            (Format::Parcrypt, Secret::Recipients(recipients)) => {
                let file_key = {
                    // The system's generator, its failure an error (age's own
                    // `FileKey::generate` would panic).
                    let mut bytes = Zeroizing::new([0u8; 16]);
                    getrandom::fill(bytes.as_mut())
                        .map_err(|error| FormatError::Random(error.to_string()))?;
                    FileKey::from_bytes(*bytes)
                };
                let stanzas = recipients::wrap(recipients, &file_key)?;
                let header = RecipientHeader::seal(setup.suite, stanzas, &file_key)?;
                return Self::for_recipient_header(header, &file_key, salts.cobblestone, setup.context);
            }
            (Format::Cobblestone, Secret::Key(_)) => Head::Bare,
            (Format::Parcrypt, Secret::Key(_)) => Head::Fixed(ParcryptHeader { suite: setup.suite, key_source: KeySource::Key }),
            (Format::Parcrypt, Secret::Passphrase(passphrase)) => {
                if passphrase.is_empty() {
                    return Err(FormatError::EmptyPassphrase);
                }
                setup.argon2.check()?;
                Head::Fixed(ParcryptHeader {
                    suite: setup.suite,
                    key_source: KeySource::Argon2id { params: setup.argon2, salt: salts.argon2 },
                })
            }
        };
        let mut envelope = Envelope {
            head,
            salt: salts.cobblestone,
            commitment: [0; COMMITMENT_BYTES],
        };
        let input_key = envelope.input_key(setup.suite, secret)?;
        let keys = envelope.derive(setup.suite, &input_key, setup.context)?;
        envelope.commitment = *keys.commitment();
        Ok((envelope, keys))
    }

    /// The envelope of a message to recipients whose header is `header`, sealed under
    /// `file_key`, with the Cobblestone salt `salt`: the keys derived as for any such file
    /// ([`recipients::input_key`], then Cobblestone with the header's bytes and `context` as
    /// the context). For known-answer tests (tests/vectors/parcrypt_v2.txt); a file key and
    /// a salt must never be used twice.
    pub fn for_recipient_header(
        header: RecipientHeader,
        file_key: &FileKey,
        salt: [u8; SALT_BYTES],
        context: &[u8],
    ) -> Result<(Envelope, MessageKeys), FormatError> {
        header.verify(file_key)?;
        let suite = header.suite();
        let mut envelope = Envelope {
            head: Head::Recipients(Box::new(header)),
            salt,
            commitment: [0; COMMITMENT_BYTES],
        };
        let keys = envelope.derive(suite, &recipients::input_key(file_key, suite), context)?;
        envelope.commitment = *keys.commitment();
        Ok((envelope, keys))
    }

    /// Reads an envelope from the start of a file, and not a byte further. With
    /// [`Format::Parcrypt`], input that does not start with the parcrypt magic is
    /// [`FormatError::NotParcrypt`]. A version-2 header's length is checked against
    /// [`recipients::MAX_HEADER_BYTES`] before it is read, and its bytes are buffered only
    /// as they arrive.
    pub fn read(format: Format, reader: &mut dyn Read) -> Result<Envelope, FormatError> {
        let mut bytes = Vec::with_capacity(HEADER_BYTES + PREFIX_BYTES);
        if format == Format::Parcrypt {
            let mut start = [0u8; 16];
            let got = read_up_to(reader, &mut start)?;
            bytes.extend_from_slice(&start[..got]);
            let header_bytes = if got > MAGIC.len()
                && &start[..MAGIC.len()] == MAGIC
                && start[8] == recipients::VERSION
            {
                RecipientHeader::declared_length(&start[..got])?
            } else {
                HEADER_BYTES.max(got)
            };
            read_more(reader, &mut bytes, header_bytes - got)?;
        }
        read_more(reader, &mut bytes, PREFIX_BYTES)?;
        Self::parse(format, &bytes).map(|(envelope, _)| envelope)
    }

    /// Parses an envelope from the start of `bytes` and returns it with its length.
    pub fn parse(format: Format, bytes: &[u8]) -> Result<(Envelope, usize), FormatError> {
        let (head, rest) = match format {
            Format::Parcrypt => {
                if bytes.len() > MAGIC.len()
                    && &bytes[..MAGIC.len()] == MAGIC
                    && bytes[8] == recipients::VERSION
                {
                    let (header, length) = RecipientHeader::parse(bytes)?;
                    (Head::Recipients(Box::new(header)), &bytes[length..])
                } else {
                    let header = ParcryptHeader::parse(bytes)?;
                    (Head::Fixed(header), &bytes[HEADER_BYTES..])
                }
            }
            Format::Cobblestone => (Head::Bare, bytes),
        };
        if rest.len() < PREFIX_BYTES {
            return Err(FormatError::TruncatedHeader("Cobblestone"));
        }
        let mut salt = [0u8; SALT_BYTES];
        salt.copy_from_slice(&rest[..SALT_BYTES]);
        let mut commitment = [0u8; COMMITMENT_BYTES];
        commitment.copy_from_slice(&rest[SALT_BYTES..PREFIX_BYTES]);
        let envelope = Envelope {
            head,
            salt,
            commitment,
        };
        let length = envelope.len();
        Ok((envelope, length))
    }

    /// The envelope as written in a file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.len());
        bytes.extend_from_slice(&self.head.bytes());
        bytes.extend_from_slice(&self.salt);
        bytes.extend_from_slice(&self.commitment);
        bytes
    }

    /// Bytes before chunk 0. For a file to recipients the header says its own length: it
    /// is trusted only once the envelope is unlocked (the header's MAC checked).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        PREFIX_BYTES + self.head.len()
    }

    /// The version-1 parcrypt header (a key or a passphrase); `None` for a bare Cobblestone
    /// message and for a file to recipients ([`Envelope::recipient_header`]).
    pub fn header(&self) -> Option<&ParcryptHeader> {
        match &self.head {
            Head::Fixed(header) => Some(header),
            _ => None,
        }
    }

    /// The version-2 header of a file encrypted to recipients, or `None`.
    pub fn recipient_header(&self) -> Option<&RecipientHeader> {
        match &self.head {
            Head::Recipients(header) => Some(header),
            _ => None,
        }
    }

    /// The suite the header names (`None` for a bare Cobblestone message, whose key's
    /// length says it).
    pub fn suite(&self) -> Option<Suite> {
        match &self.head {
            Head::Bare => None,
            Head::Fixed(header) => Some(header.suite),
            Head::Recipients(header) => Some(header.suite()),
        }
    }

    /// Whether unlocking takes a passphrase (rather than a key or identities).
    pub fn needs_passphrase(&self) -> bool {
        matches!(
            self.head,
            Head::Fixed(ParcryptHeader {
                key_source: KeySource::Argon2id { .. },
                ..
            })
        )
    }

    /// Whether unlocking takes identities ([`Secret::Identities`]): the file was encrypted
    /// to public-key recipients.
    pub fn needs_identity(&self) -> bool {
        matches!(self.head, Head::Recipients(_))
    }

    /// The argon2id parameters of a passphrase-sealed message (`None` otherwise).
    pub fn argon2(&self) -> Option<Argon2Params> {
        match self.head {
            Head::Fixed(ParcryptHeader {
                key_source: KeySource::Argon2id { params, .. },
                ..
            }) => Some(params),
            _ => None,
        }
    }

    /// Refuses a header whose argon2id costs exceed `limits` ([`FormatError::KdfBudget`]);
    /// a message under a key or to recipients always passes. Cheap: a front end calls it
    /// before asking for a passphrase, so that a hostile file is refused before anyone
    /// types anything.
    pub fn check_kdf(&self, limits: &KdfLimits) -> Result<(), FormatError> {
        match self.argon2() {
            Some(params) => limits.check(&params),
            None => Ok(()),
        }
    }

    /// Derives the message keys from `secret` and `context` and checks the commitment.
    /// A bare Cobblestone message takes its suite from the key's length. A passphrase is
    /// stretched only within the default budget, [`KdfLimits::DEFAULT`]; use
    /// [`Envelope::unlock_within`] to allow more. A file to recipients takes
    /// [`Secret::Identities`]: the file key is unwrapped and the header's MAC checked
    /// first.
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
        let suite = match (suite, self.suite(), secret) {
            (Some(suite), _, _) => suite,
            (None, Some(suite), _) => suite,
            (None, None, Secret::Key(key)) => Suite::for_key_length(key.len())?,
            (None, None, _) => return Err(FormatError::NeedsKey),
        };
        if let Some(header_suite) = self.suite() {
            if header_suite != suite {
                return Err(FormatError::KeySuiteMismatch {
                    suite: header_suite.name(),
                    expected: header_suite.key_bytes(),
                    got: suite.key_bytes(),
                });
            }
        }
        let input_key = self.input_key(suite, secret)?;
        let keys = self.derive(suite, &input_key, context)?;
        match keys.check_commitment(&self.commitment) {
            // The header's MAC matched under the file key: the key is right, and what does
            // not match is the context or the message after the header.
            Err(FormatError::WrongKey) if self.needs_identity() => Err(FormatError::HeaderMismatch),
            Err(error) => Err(error),
            Ok(()) => Ok(keys),
        }
    }

    /// The Cobblestone input key from `secret`: the key itself, argon2id of the passphrase,
    /// or (recipients) the file key unwrapped by an identity, the header's MAC checked.
    fn input_key(
        &self,
        suite: Suite,
        secret: Secret<'_>,
    ) -> Result<Zeroizing<Vec<u8>>, FormatError> {
        let header = match &self.head {
            Head::Recipients(header) => {
                return match secret {
                    Secret::Identities(identities) => {
                        Ok(recipients::input_key(&header.unwrap(identities)?, suite))
                    }
                    _ => Err(FormatError::NeedsIdentity),
                }
            }
            Head::Fixed(header) => Some(header),
            Head::Bare => None,
        };
        match (header.map(|h| h.key_source), secret) {
            (None | Some(KeySource::Key), Secret::Key(key)) => {
                suite.check_key(key)?;
                Ok(Zeroizing::new(key.to_vec()))
            }
            (Some(KeySource::Argon2id { params, salt }), Secret::Passphrase(passphrase)) => {
                params.derive(passphrase, &salt, suite.key_bytes())
            }
            (Some(KeySource::Argon2id { .. }), _) => Err(FormatError::NeedsPassphrase),
            (None | Some(KeySource::Key), _) => Err(FormatError::NeedsKey),
        }
    }

    /// The message keys from the input key: the header is bound into the context, so no
    /// byte of it can change unnoticed.
    fn derive(
        &self,
        suite: Suite,
        input_key: &[u8],
        context: &[u8],
    ) -> Result<MessageKeys, FormatError> {
        let mut full_context = Vec::with_capacity(self.head.len() + context.len());
        full_context.extend_from_slice(&self.head.bytes());
        full_context.extend_from_slice(context);
        MessageKeys::derive(suite, input_key, &self.salt, &full_context)
    }
}

/// Reads `count` more bytes onto `bytes`, growing it only as they arrive (a length read
/// from an unauthenticated header is not trusted for an allocation); a short input is a
/// truncated header.
fn read_more(reader: &mut dyn Read, bytes: &mut Vec<u8>, count: usize) -> Result<(), FormatError> {
    reader
        .take(count as u64)
        .read_to_end(bytes)
        .map_err(FormatError::Read)?;
    Ok(())
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

    fn x25519() -> (Identity, Recipient) {
        let identity = parcrypt_age::X25519Identity::generate();
        let recipient = Recipient::from(identity.to_public());
        (Identity::from(identity), recipient)
    }

    #[test]
    fn recipient_envelopes_round_trip_and_take_only_identities() {
        let (alice, alice_public) = x25519();
        let (bob, bob_public) = x25519();
        let recipients = [alice_public, bob_public];
        for suite in Suite::ALL {
            let setup = Setup {
                suite,
                context: b"ctx",
                ..cheap_setup()
            };
            let (envelope, keys) =
                Envelope::create(&setup, Secret::Recipients(&recipients)).unwrap();
            assert!(envelope.needs_identity() && !envelope.needs_passphrase());
            assert_eq!(envelope.suite(), Some(suite));
            assert!(envelope.header().is_none());
            assert_eq!(envelope.recipient_header().unwrap().recipients(), 2);
            let mut bytes = envelope.to_bytes();
            assert_eq!(bytes.len(), envelope.len());
            assert_eq!(bytes[8], 2);
            // Read from a stream, the envelope ends where it says: the chunks stay unread.
            bytes.extend_from_slice(b"chunks");
            let mut input = &bytes[..];
            let read = Envelope::read(Format::Parcrypt, &mut input).unwrap();
            assert_eq!(input, b"chunks");
            assert_eq!(read, envelope);
            for identity in [&alice, &bob] {
                let unlocked = read
                    .unlock(Secret::Identities(std::slice::from_ref(identity)), b"ctx")
                    .unwrap();
                assert_eq!(unlocked.key(), keys.key());
            }
            let (carol, carol_public) = x25519();
            for (secret, expected) in [
                (Secret::Key(&[5u8; 16]), "NeedsIdentity"),
                (Secret::Passphrase(b"pass"), "NeedsIdentity"),
                (
                    Secret::Recipients(std::slice::from_ref(&carol_public)),
                    "NeedsIdentity",
                ),
                (Secret::Identities(&[]), "NeedsIdentity"),
                (
                    Secret::Identities(std::slice::from_ref(&carol)),
                    "NoMatchingIdentity",
                ),
            ] {
                let error = read.unlock(secret, b"ctx").err().unwrap();
                assert!(format!("{error:?}").starts_with(expected), "{error:?}");
            }
            // The right identity, the wrong context: the header opens, the message does not.
            assert!(matches!(
                read.unlock(Secret::Identities(std::slice::from_ref(&alice)), b"ctX"),
                Err(FormatError::HeaderMismatch)
            ));
        }
        // Identities on files under a key or a passphrase, and identities to encrypt.
        let (keyed, _) = Envelope::create(&cheap_setup(), Secret::Key(&[1; 16])).unwrap();
        assert!(matches!(
            keyed.unlock(Secret::Identities(std::slice::from_ref(&alice)), b""),
            Err(FormatError::NeedsKey)
        ));
        let (locked, _) = Envelope::create(&cheap_setup(), Secret::Passphrase(b"pass")).unwrap();
        assert!(matches!(
            locked.unlock(Secret::Identities(std::slice::from_ref(&alice)), b""),
            Err(FormatError::NeedsPassphrase)
        ));
        assert!(matches!(
            Envelope::create(
                &cheap_setup(),
                Secret::Identities(std::slice::from_ref(&alice))
            ),
            Err(FormatError::Recipients(_))
        ));
        let bare = Setup {
            format: Format::Cobblestone,
            ..cheap_setup()
        };
        assert!(matches!(
            Envelope::create(&bare, Secret::Recipients(&recipients)),
            Err(FormatError::Recipients(_))
        ));
    }

    #[test]
    fn a_recipient_header_is_bound_to_its_message() {
        let (alice, alice_public) = x25519();
        let identities = [alice];
        let recipients = [alice_public];
        let (first, _) = Envelope::create(&cheap_setup(), Secret::Recipients(&recipients)).unwrap();
        let (second, _) =
            Envelope::create(&cheap_setup(), Secret::Recipients(&recipients)).unwrap();
        let first = first.to_bytes();
        let second = second.to_bytes();
        // Every bit of the envelope (header, salt, commitment) is checked.
        for position in 0..first.len() {
            for bit in [0x01u8, 0x80] {
                let mut changed = first.clone();
                changed[position] ^= bit;
                let refused = match Envelope::parse(Format::Parcrypt, &changed) {
                    Err(_) => true,
                    Ok((changed, _)) => changed
                        .unlock(Secret::Identities(&identities), b"")
                        .is_err(),
                };
                assert!(refused, "bit {bit:#x} of byte {position} went unnoticed");
            }
        }
        // The first file's header on the second file's salt and commitment (its message).
        let header = first.len() - PREFIX_BYTES;
        let mut moved = first[..header].to_vec();
        moved.extend_from_slice(&second[second.len() - PREFIX_BYTES..]);
        let (moved, _) = Envelope::parse(Format::Parcrypt, &moved).unwrap();
        assert!(matches!(
            moved.unlock(Secret::Identities(&identities), b""),
            Err(FormatError::HeaderMismatch)
        ));
        // The stanza of the second header in place of the first's: the MAC fails.
        let stanzas = |bytes: &[u8]| bytes[18..bytes.len() - PREFIX_BYTES - 32].to_vec();
        let mut swapped = first[..18].to_vec();
        swapped.extend_from_slice(&stanzas(&second));
        swapped.extend_from_slice(&first[header - 32..]);
        let (swapped, _) = Envelope::parse(Format::Parcrypt, &swapped).unwrap();
        assert!(matches!(
            swapped.unlock(Secret::Identities(&identities), b""),
            Err(FormatError::HeaderMac)
        ));
    }

    #[test]
    fn versions_and_hostile_lengths_are_refused_in_bounded_reads() {
        let (envelope, _) = Envelope::create(&cheap_setup(), Secret::Key(&[1; 16])).unwrap();
        let mut bytes = envelope.to_bytes();
        bytes[8] = 3;
        assert!(matches!(
            Envelope::read(Format::Parcrypt, &mut &bytes[..]),
            Err(FormatError::UnsupportedVersion(3))
        ));
        // A version-2 header claiming 4 MiB over a short input: refused as truncated once
        // the input ends (the buffer grows only with what arrives).
        let mut claim = b"parcrypt\x02\x01\x03\x00".to_vec();
        claim.extend_from_slice(&(recipients::MAX_HEADER_BYTES as u32).to_be_bytes());
        claim.extend_from_slice(&[0, 1]);
        claim.extend_from_slice(&[0x41; 100]);
        assert!(matches!(
            Envelope::read(Format::Parcrypt, &mut &claim[..]),
            Err(FormatError::TruncatedHeader(_))
        ));
        claim[12..16].copy_from_slice(&(recipients::MAX_HEADER_BYTES as u32 + 1).to_be_bytes());
        assert!(matches!(
            Envelope::read(Format::Parcrypt, &mut &claim[..]),
            Err(FormatError::DamagedHeader(_))
        ));
        for cut in 0..12 {
            assert!(Envelope::read(Format::Parcrypt, &mut &claim[..cut]).is_err());
        }
    }
}
