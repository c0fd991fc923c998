//! Recipients (who a file is encrypted to) and identities (what decrypts it), in age's
//! textual forms: X25519 (`age1...` / `AGE-SECRET-KEY-1...`), the ML-KEM-768 + X25519 hybrid
//! (`age1pq1...` / `AGE-SECRET-KEY-PQ-1...`) and scrypt passphrases.
//!
//! A [`Recipient`] wraps a [`FileKey`] into a [`Stanza`]; an [`Identity`] unwraps it from the
//! stanzas of a header. Neither knows about the age header around them, so another format
//! (parcrypt's own, later) can carry the same stanzas. Secret keys are wiped when dropped,
//! compared in constant time, and their `Debug` output is redacted.

use std::fmt;
use std::str::FromStr;

use chacha20poly1305::aead::AeadInOut;
use chacha20poly1305::{ChaCha20Poly1305, KeyInit};
use hkdf::Hkdf;
use ml_kem::EncapsulationKey768;
use sha2::Sha256;
use subtle::ConstantTimeEq;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::{Zeroize, Zeroizing};

use crate::bech32;
use crate::error::{Error, Result};
use crate::header::{b64_decode, b64_encode, Stanza};
use crate::hpke;

const X25519_LABEL: &[u8] = b"age-encryption.org/v1/X25519";
const SCRYPT_LABEL: &[u8] = b"age-encryption.org/v1/scrypt";
const HYBRID_LABEL: &[u8] = b"age-encryption.org/mlkem768x25519";
const WRAPPED_KEY: usize = 32;

/// The default scrypt work factor for encryption (2^18, as age).
pub const DEFAULT_SCRYPT_WORK_FACTOR: u8 = 18;
/// The default largest scrypt work factor accepted when decrypting (2^22, as age).
pub const DEFAULT_MAX_SCRYPT_WORK_FACTOR: u8 = 22;

fn random<const N: usize>() -> Zeroizing<[u8; N]> {
    let mut bytes = Zeroizing::new([0u8; N]);
    getrandom::fill(bytes.as_mut()).expect("the operating system's random generator");
    bytes
}

/// A file's 128-bit symmetric key, wiped when dropped.
#[derive(Clone)]
pub struct FileKey(Zeroizing<[u8; 16]>);

impl FileKey {
    /// A new random file key.
    pub fn generate() -> FileKey {
        FileKey(random())
    }

    /// A file key from its bytes.
    pub fn from_bytes(bytes: [u8; 16]) -> FileKey {
        FileKey(Zeroizing::new(bytes))
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl fmt::Debug for FileKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FileKey(..)")
    }
}

impl PartialEq for FileKey {
    fn eq(&self, other: &FileKey) -> bool {
        self.0.as_slice().ct_eq(other.0.as_slice()).into()
    }
}

fn aead_seal(key: &[u8; 32], plaintext: &[u8]) -> Vec<u8> {
    let aead = ChaCha20Poly1305::new(&(*key).into());
    let mut body = plaintext.to_vec();
    let tag = aead
        .encrypt_inout_detached(&[0u8; 12].into(), b"", body.as_mut_slice().into())
        .expect("a short message");
    body.extend_from_slice(&tag);
    body
}

/// Opens a wrapped file key; `None` when it does not authenticate. The body's length was
/// checked by the caller.
fn aead_open(key: &[u8; 32], body: &[u8]) -> Option<FileKey> {
    let aead = ChaCha20Poly1305::new(&(*key).into());
    let (ciphertext, tag) = body.split_at(16);
    let mut plaintext = Zeroizing::new([0u8; 16]);
    plaintext.copy_from_slice(ciphertext);
    let tag = chacha20poly1305::Tag::try_from(tag).ok()?;
    aead.decrypt_inout_detached(
        &[0u8; 12].into(),
        b"",
        plaintext.as_mut_slice().into(),
        &tag,
    )
    .ok()?;
    Some(FileKey(plaintext))
}

fn decode_key(text: &str, hrp: &str, what: &str) -> Result<Vec<u8>> {
    let (found, data) =
        bech32::decode(text).map_err(|why| Error::Key(format!("malformed {what}: {why}")))?;
    if found != hrp {
        return Err(Error::Key(format!("malformed {what}: wrong type")));
    }
    Ok(data)
}

fn hkdf32(ikm: &[u8], salt: &[u8], info: &[u8]) -> Zeroizing<[u8; 32]> {
    let mut out = Zeroizing::new([0u8; 32]);
    Hkdf::<Sha256>::new(Some(salt), ikm)
        .expand(info, out.as_mut())
        .expect("32 bytes is a valid HKDF-SHA-256 length");
    out
}

/// One argument that must be canonical base64 of exactly `len` bytes, else a header failure.
fn stanza_bytes(stanza: &Stanza, arity: usize, len: usize) -> Result<Vec<u8>> {
    if stanza.args.len() != arity {
        return Err(Error::Header(format!(
            "{} stanza with {} arguments instead of {arity}",
            stanza.kind,
            stanza.args.len()
        )));
    }
    let bytes = b64_decode(stanza.args[0].as_bytes())
        .filter(|bytes| bytes.len() == len)
        .ok_or_else(|| {
            Error::Header(format!(
                "{} stanza whose argument is not {len} bytes of canonical base64",
                stanza.kind
            ))
        })?;
    if stanza.body.len() != WRAPPED_KEY {
        return Err(Error::Header(format!(
            "{} stanza whose body is not {WRAPPED_KEY} bytes",
            stanza.kind
        )));
    }
    Ok(bytes)
}

// --- X25519 ---------------------------------------------------------------------------

/// An X25519 recipient, `age1...`.
#[derive(Clone, PartialEq, Eq)]
pub struct X25519Recipient([u8; 32]);

impl X25519Recipient {
    fn wrap(&self, file_key: &FileKey) -> Stanza {
        let ephemeral = StaticSecret::from(*random::<32>());
        let share = PublicKey::from(&ephemeral);
        let shared = ephemeral.diffie_hellman(&PublicKey::from(self.0));
        let mut salt = [0u8; 64];
        salt[..32].copy_from_slice(share.as_bytes());
        salt[32..].copy_from_slice(&self.0);
        let key = hkdf32(shared.as_bytes(), &salt, X25519_LABEL);
        Stanza {
            kind: "X25519".into(),
            args: vec![b64_encode(share.as_bytes())],
            body: aead_seal(&key, file_key.as_bytes()),
        }
    }
}

impl FromStr for X25519Recipient {
    type Err = Error;
    fn from_str(text: &str) -> Result<X25519Recipient> {
        let data = decode_key(text, "age", "X25519 recipient")?;
        let key = <[u8; 32]>::try_from(data)
            .map_err(|_| Error::Key("malformed X25519 recipient: not 32 bytes".into()))?;
        Ok(X25519Recipient(key))
    }
}

impl fmt::Display for X25519Recipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&bech32::encode("age", &self.0))
    }
}

impl fmt::Debug for X25519Recipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "X25519Recipient({self})")
    }
}

/// An X25519 identity, `AGE-SECRET-KEY-1...`.
#[derive(Clone)]
pub struct X25519Identity {
    secret: StaticSecret,
    public: [u8; 32],
}

impl X25519Identity {
    /// A new random identity.
    pub fn generate() -> X25519Identity {
        X25519Identity::from_secret(*random::<32>())
    }

    fn from_secret(mut secret: [u8; 32]) -> X25519Identity {
        let secret_key = StaticSecret::from(secret);
        secret.zeroize();
        let public = PublicKey::from(&secret_key).to_bytes();
        X25519Identity {
            secret: secret_key,
            public,
        }
    }

    /// The recipient that encrypts to this identity.
    pub fn to_public(&self) -> X25519Recipient {
        X25519Recipient(self.public)
    }

    /// The identity's textual form, `AGE-SECRET-KEY-1...` (a secret: never log it).
    pub fn to_secret_string(&self) -> Zeroizing<String> {
        Zeroizing::new(
            bech32::encode("age-secret-key-", self.secret.as_bytes()).to_ascii_uppercase(),
        )
    }

    fn unwrap_one(&self, stanza: &Stanza) -> Result<Option<FileKey>> {
        if stanza.kind != "X25519" {
            return Ok(None);
        }
        let share = stanza_bytes(stanza, 1, 32)?;
        let share: [u8; 32] = share.try_into().expect("32 bytes");
        let shared = self.secret.diffie_hellman(&PublicKey::from(share));
        if !shared.was_contributory() {
            return Err(Error::Header(
                "X25519 stanza whose share gives an all-zero shared secret".into(),
            ));
        }
        let mut salt = [0u8; 64];
        salt[..32].copy_from_slice(&share);
        salt[32..].copy_from_slice(&self.public);
        let key = hkdf32(shared.as_bytes(), &salt, X25519_LABEL);
        Ok(aead_open(&key, &stanza.body))
    }
}

impl FromStr for X25519Identity {
    type Err = Error;
    fn from_str(text: &str) -> Result<X25519Identity> {
        let data = Zeroizing::new(decode_key(text, "AGE-SECRET-KEY-", "X25519 identity")?);
        let secret = <[u8; 32]>::try_from(data.as_slice())
            .map_err(|_| Error::Key("malformed X25519 identity: not 32 bytes".into()))?;
        Ok(X25519Identity::from_secret(secret))
    }
}

impl PartialEq for X25519Identity {
    fn eq(&self, other: &X25519Identity) -> bool {
        self.secret.as_bytes().ct_eq(other.secret.as_bytes()).into()
    }
}

impl fmt::Debug for X25519Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "X25519Identity(for {})", self.to_public())
    }
}

// --- ML-KEM-768 + X25519 --------------------------------------------------------------

/// A hybrid post-quantum recipient (ML-KEM-768 + X25519, age 1.3), `age1pq1...`.
#[derive(Clone)]
pub struct HybridRecipient {
    key: Box<EncapsulationKey768>,
    bytes: Box<[u8; hpke::PUBLIC_KEY]>,
}

impl HybridRecipient {
    fn wrap(&self, file_key: &FileKey) -> Result<Stanza> {
        let (enc, body) = hpke::seal(&self.key, &self.bytes, HYBRID_LABEL, file_key.as_bytes())
            .ok_or_else(|| {
                Error::Key("hybrid recipient whose X25519 point has a small order".into())
            })?;
        Ok(Stanza {
            kind: "mlkem768x25519".into(),
            args: vec![b64_encode(&enc)],
            body,
        })
    }
}

impl PartialEq for HybridRecipient {
    fn eq(&self, other: &HybridRecipient) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for HybridRecipient {}

impl FromStr for HybridRecipient {
    type Err = Error;
    fn from_str(text: &str) -> Result<HybridRecipient> {
        let data = decode_key(text, "age1pq", "hybrid recipient")?;
        let key = hpke::check_public_key(&data).ok_or_else(|| {
            Error::Key("malformed hybrid recipient: not an ML-KEM-768 + X25519 public key".into())
        })?;
        let bytes = Box::new(<[u8; hpke::PUBLIC_KEY]>::try_from(data.as_slice()).expect("checked"));
        Ok(HybridRecipient { key, bytes })
    }
}

impl fmt::Display for HybridRecipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&bech32::encode("age1pq", self.bytes.as_slice()))
    }
}

impl fmt::Debug for HybridRecipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.to_string();
        write!(f, "HybridRecipient({}...)", &text[..20])
    }
}

/// A hybrid post-quantum identity (ML-KEM-768 + X25519, age 1.3), `AGE-SECRET-KEY-PQ-1...`:
/// a 32-byte seed, expanded as X-Wing does.
pub struct HybridIdentity {
    seed: Zeroizing<[u8; 32]>,
    key: Box<hpke::PrivateKey>,
}

impl HybridIdentity {
    /// A new random identity.
    pub fn generate() -> HybridIdentity {
        HybridIdentity::from_seed(random())
    }

    fn from_seed(seed: Zeroizing<[u8; 32]>) -> HybridIdentity {
        let key = Box::new(hpke::expand(&seed));
        HybridIdentity { seed, key }
    }

    /// The recipient that encrypts to this identity.
    pub fn to_public(&self) -> HybridRecipient {
        let key = hpke::check_public_key(&self.key.public).expect("a key this identity made");
        HybridRecipient {
            key,
            bytes: Box::new(self.key.public),
        }
    }

    /// The identity's textual form, `AGE-SECRET-KEY-PQ-1...` (a secret: never log it).
    pub fn to_secret_string(&self) -> Zeroizing<String> {
        Zeroizing::new(
            bech32::encode("age-secret-key-pq-", self.seed.as_ref()).to_ascii_uppercase(),
        )
    }

    fn unwrap_one(&self, stanza: &Stanza) -> Result<Option<FileKey>> {
        if stanza.kind != "mlkem768x25519" {
            return Ok(None);
        }
        let enc = stanza_bytes(stanza, 1, hpke::ENC)?;
        match hpke::open(&self.key, &enc, HYBRID_LABEL, &stanza.body) {
            hpke::Opened::Plaintext(plaintext) => {
                let key: [u8; 16] = plaintext.as_slice().try_into().expect("32-byte body");
                Ok(Some(FileKey::from_bytes(key)))
            }
            hpke::Opened::NotOurs => Ok(None),
            hpke::Opened::LowOrder => Err(Error::Header(
                "mlkem768x25519 stanza whose X25519 share gives an all-zero shared secret".into(),
            )),
        }
    }
}

impl Clone for HybridIdentity {
    fn clone(&self) -> HybridIdentity {
        HybridIdentity::from_seed(self.seed.clone())
    }
}

impl FromStr for HybridIdentity {
    type Err = Error;
    fn from_str(text: &str) -> Result<HybridIdentity> {
        let data = Zeroizing::new(decode_key(text, "AGE-SECRET-KEY-PQ-", "hybrid identity")?);
        let seed = <[u8; 32]>::try_from(data.as_slice())
            .map_err(|_| Error::Key("malformed hybrid identity: not 32 bytes".into()))?;
        Ok(HybridIdentity::from_seed(Zeroizing::new(seed)))
    }
}

impl PartialEq for HybridIdentity {
    fn eq(&self, other: &HybridIdentity) -> bool {
        self.seed.as_slice().ct_eq(other.seed.as_slice()).into()
    }
}

impl fmt::Debug for HybridIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HybridIdentity(..)")
    }
}

// --- scrypt ---------------------------------------------------------------------------

/// A passphrase, wiped when dropped.
#[derive(Clone)]
pub struct Passphrase(Zeroizing<Vec<u8>>);

impl Passphrase {
    /// Takes the passphrase's bytes.
    pub fn new(bytes: Vec<u8>) -> Passphrase {
        Passphrase(Zeroizing::new(bytes))
    }
}

impl fmt::Debug for Passphrase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Passphrase(..)")
    }
}

fn scrypt_key(passphrase: &Passphrase, salt: &[u8], log_n: u8) -> Result<Zeroizing<[u8; 32]>> {
    let mut full_salt = Vec::with_capacity(SCRYPT_LABEL.len() + salt.len());
    full_salt.extend_from_slice(SCRYPT_LABEL);
    full_salt.extend_from_slice(salt);
    let params = scrypt::Params::new(log_n, 8, 1)
        .map_err(|_| Error::Key(format!("scrypt work factor 2^{log_n} is not usable")))?;
    let mut key = Zeroizing::new([0u8; 32]);
    scrypt::scrypt(&passphrase.0, &full_salt, &params, key.as_mut())
        .expect("32 bytes is a valid scrypt length");
    Ok(key)
}

/// A passphrase recipient: the file key wrapped under scrypt of the passphrase. It must be
/// a file's only recipient.
#[derive(Clone, Debug)]
pub struct ScryptRecipient {
    passphrase: Passphrase,
    work_factor: u8,
}

impl ScryptRecipient {
    /// A recipient with the default work factor, 2^18.
    pub fn new(passphrase: Passphrase) -> ScryptRecipient {
        ScryptRecipient {
            passphrase,
            work_factor: DEFAULT_SCRYPT_WORK_FACTOR,
        }
    }

    /// Sets the base-2 logarithm of scrypt's N (1 to 30).
    pub fn work_factor(mut self, log_n: u8) -> Result<ScryptRecipient> {
        if !(1..=30).contains(&log_n) {
            return Err(Error::Key(format!(
                "scrypt work factor {log_n} is outside 1 to 30"
            )));
        }
        self.work_factor = log_n;
        Ok(self)
    }

    fn wrap(&self, file_key: &FileKey) -> Result<Stanza> {
        let salt = random::<16>();
        let key = scrypt_key(&self.passphrase, salt.as_ref(), self.work_factor)?;
        Ok(Stanza {
            kind: "scrypt".into(),
            args: vec![b64_encode(salt.as_ref()), self.work_factor.to_string()],
            body: aead_seal(&key, file_key.as_bytes()),
        })
    }
}

/// A passphrase identity, with the largest scrypt work factor it accepts (2^22 unless
/// raised: a hostile file cannot make it spend more).
#[derive(Clone, Debug)]
pub struct ScryptIdentity {
    passphrase: Passphrase,
    max_work_factor: u8,
}

impl ScryptIdentity {
    /// An identity accepting work factors up to 2^22.
    pub fn new(passphrase: Passphrase) -> ScryptIdentity {
        ScryptIdentity {
            passphrase,
            max_work_factor: DEFAULT_MAX_SCRYPT_WORK_FACTOR,
        }
    }

    /// Sets the largest base-2 logarithm of scrypt's N accepted (at most 30).
    pub fn max_work_factor(mut self, log_n: u8) -> ScryptIdentity {
        self.max_work_factor = log_n.min(30);
        self
    }

    fn unwrap_one(&self, stanza: &Stanza) -> Result<Option<FileKey>> {
        if stanza.kind != "scrypt" {
            return Ok(None);
        }
        let salt = stanza_bytes(stanza, 2, 16)?;
        let factor = stanza.args[1].as_bytes();
        let canonical =
            !factor.is_empty() && factor[0] != b'0' && factor.iter().all(u8::is_ascii_digit);
        let log_n: u32 = stanza.args[1]
            .parse()
            .ok()
            .filter(|_| canonical)
            .ok_or_else(|| Error::Header("scrypt stanza with a malformed work factor".into()))?;
        if log_n > u32::from(self.max_work_factor) {
            return Err(Error::WorkFactor {
                got: log_n,
                max: self.max_work_factor,
            });
        }
        let key = scrypt_key(&self.passphrase, &salt, log_n as u8)?;
        Ok(aead_open(&key, &stanza.body))
    }
}

// --- the enums ------------------------------------------------------------------------

/// Anyone a file can be encrypted to.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Recipient {
    /// `age1...`
    X25519(X25519Recipient),
    /// `age1pq1...`
    Hybrid(HybridRecipient),
    /// A passphrase.
    Scrypt(ScryptRecipient),
}

impl Recipient {
    /// Wraps `file_key` for this recipient: one stanza.
    pub fn wrap(&self, file_key: &FileKey) -> Result<Stanza> {
        match self {
            Recipient::X25519(r) => Ok(r.wrap(file_key)),
            Recipient::Hybrid(r) => r.wrap(file_key),
            Recipient::Scrypt(r) => r.wrap(file_key),
        }
    }

    /// Checks that recipients may share a file, as age requires: a passphrase is alone, and
    /// post-quantum recipients are not mixed with others (which would void their protection).
    pub fn check_combination(recipients: &[Recipient]) -> Result<()> {
        if recipients.is_empty() {
            return Err(Error::Recipients("no recipients given".into()));
        }
        let scrypt = recipients.iter().any(|r| matches!(r, Recipient::Scrypt(_)));
        if scrypt && recipients.len() > 1 {
            return Err(Error::Recipients(
                "a passphrase must be a file's only recipient".into(),
            ));
        }
        let hybrid = recipients
            .iter()
            .filter(|r| matches!(r, Recipient::Hybrid(_)))
            .count();
        if hybrid > 0 && hybrid < recipients.len() {
            return Err(Error::Recipients(
                "post-quantum (age1pq1) recipients cannot be mixed with other recipients".into(),
            ));
        }
        Ok(())
    }
}

impl FromStr for Recipient {
    type Err = Error;
    /// Parses `age1pq1...` or `age1...`.
    fn from_str(text: &str) -> Result<Recipient> {
        if text.starts_with("age1pq1") {
            Ok(Recipient::Hybrid(text.parse()?))
        } else if text.starts_with("age1") {
            Ok(Recipient::X25519(text.parse()?))
        } else {
            Err(Error::Key(
                "not an age recipient (age1... or age1pq1...; ssh keys and plugins are not supported)"
                    .into(),
            ))
        }
    }
}

impl fmt::Display for Recipient {
    /// The textual form; a passphrase prints as `(passphrase)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Recipient::X25519(r) => r.fmt(f),
            Recipient::Hybrid(r) => r.fmt(f),
            Recipient::Scrypt(_) => f.write_str("(passphrase)"),
        }
    }
}

impl From<X25519Recipient> for Recipient {
    fn from(r: X25519Recipient) -> Recipient {
        Recipient::X25519(r)
    }
}

impl From<HybridRecipient> for Recipient {
    fn from(r: HybridRecipient) -> Recipient {
        Recipient::Hybrid(r)
    }
}

impl From<ScryptRecipient> for Recipient {
    fn from(r: ScryptRecipient) -> Recipient {
        Recipient::Scrypt(r)
    }
}

/// Anything that can decrypt a file.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Identity {
    /// `AGE-SECRET-KEY-1...`
    X25519(X25519Identity),
    /// `AGE-SECRET-KEY-PQ-1...`
    Hybrid(HybridIdentity),
    /// A passphrase.
    Scrypt(ScryptIdentity),
}

impl Identity {
    /// Unwraps the file key from the first of `stanzas` addressed to this identity:
    /// `Ok(None)` when none is, an error when one of its type is malformed.
    pub fn unwrap(&self, stanzas: &[Stanza]) -> Result<Option<FileKey>> {
        for stanza in stanzas {
            let found = match self {
                Identity::X25519(i) => i.unwrap_one(stanza)?,
                Identity::Hybrid(i) => i.unwrap_one(stanza)?,
                Identity::Scrypt(i) => i.unwrap_one(stanza)?,
            };
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// The recipient of this identity (none for a passphrase).
    pub fn to_public(&self) -> Option<Recipient> {
        match self {
            Identity::X25519(i) => Some(Recipient::X25519(i.to_public())),
            Identity::Hybrid(i) => Some(Recipient::Hybrid(i.to_public())),
            Identity::Scrypt(_) => None,
        }
    }

    /// The textual form (a secret: never log it); none for a passphrase.
    pub fn to_secret_string(&self) -> Option<Zeroizing<String>> {
        match self {
            Identity::X25519(i) => Some(i.to_secret_string()),
            Identity::Hybrid(i) => Some(i.to_secret_string()),
            Identity::Scrypt(_) => None,
        }
    }
}

impl FromStr for Identity {
    type Err = Error;
    /// Parses `AGE-SECRET-KEY-PQ-1...` or `AGE-SECRET-KEY-1...`.
    fn from_str(text: &str) -> Result<Identity> {
        if text.starts_with("AGE-SECRET-KEY-PQ-1") {
            Ok(Identity::Hybrid(text.parse()?))
        } else if text.starts_with("AGE-SECRET-KEY-1") {
            Ok(Identity::X25519(text.parse()?))
        } else {
            Err(Error::Key(
                "not an age identity (AGE-SECRET-KEY-1... or AGE-SECRET-KEY-PQ-1...; ssh keys and plugins are not supported)"
                    .into(),
            ))
        }
    }
}

impl From<X25519Identity> for Identity {
    fn from(i: X25519Identity) -> Identity {
        Identity::X25519(i)
    }
}

impl From<HybridIdentity> for Identity {
    fn from(i: HybridIdentity) -> Identity {
        Identity::Hybrid(i)
    }
}

impl From<ScryptIdentity> for Identity {
    fn from(i: ScryptIdentity) -> Identity {
        Identity::Scrypt(i)
    }
}

/// The largest identity or recipients file read, in bytes (as age).
pub const MAX_KEY_FILE_BYTES: usize = 16 << 20;

fn at_line(n: usize, error: Error) -> Error {
    match error {
        Error::Key(message) => Error::Key(format!("line {n}: {message}")),
        other => other,
    }
}

fn key_lines(text: &[u8], what: &str) -> Result<Vec<(usize, String)>> {
    if text.len() > MAX_KEY_FILE_BYTES {
        return Err(Error::Key(format!("{what} file is over 16 MiB")));
    }
    let text = std::str::from_utf8(text)
        .map_err(|_| Error::Key(format!("{what} file is not valid UTF-8")))?;
    Ok(text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
        .map(|(n, line)| (n + 1, line.to_string()))
        .collect())
}

/// Parses an identity file as age-keygen writes it: one identity a line, `#` comments and
/// empty lines ignored. Errors name the line, never its content.
pub fn parse_identities(text: &[u8]) -> Result<Vec<Identity>> {
    let lines = key_lines(text, "identity")?;
    let mut identities = Vec::new();
    for (n, mut line) in lines {
        let parsed = line.parse::<Identity>();
        line.zeroize();
        identities.push(parsed.map_err(|error| at_line(n, error))?);
    }
    if identities.is_empty() {
        return Err(Error::Key(
            "no identities found in the identity file".into(),
        ));
    }
    Ok(identities)
}

/// Parses a recipients file: one recipient a line, `#` comments and empty lines ignored.
pub fn parse_recipients(text: &[u8]) -> Result<Vec<Recipient>> {
    let mut recipients = Vec::new();
    for (n, line) in key_lines(text, "recipients")? {
        recipients.push(
            line.parse::<Recipient>()
                .map_err(|error| at_line(n, error))?,
        );
    }
    if recipients.is_empty() {
        return Err(Error::Key(
            "no recipients found in the recipients file".into(),
        ));
    }
    Ok(recipients)
}

/// A new identity file in age-keygen's layout: `# created:` (UTC, RFC 3339), `# public key:`
/// and the secret key, each on a line. Returns the file's text and the recipient.
pub fn generate_identity_file(post_quantum: bool) -> (Zeroizing<String>, Recipient) {
    let identity = if post_quantum {
        Identity::Hybrid(HybridIdentity::generate())
    } else {
        Identity::X25519(X25519Identity::generate())
    };
    let recipient = identity.to_public().expect("not a passphrase");
    let secret = identity.to_secret_string().expect("not a passphrase");
    let mut text = Zeroizing::new(String::with_capacity(secret.len() + 2200));
    text.push_str(&format!("# created: {}\n", rfc3339_now()));
    text.push_str(&format!("# public key: {recipient}\n"));
    text.push_str(&secret);
    text.push('\n');
    (text, recipient)
}

/// The current time as `YYYY-MM-DDTHH:MM:SSZ`.
fn rfc3339_now() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rest) = (seconds / 86400, seconds % 86400);
    // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_x25519_identity() {
        let identity: X25519Identity =
            "AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX"
                .parse()
                .unwrap();
        assert_eq!(
            identity.to_public().to_string(),
            "age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujwj"
        );
        assert_eq!(
            identity.to_secret_string().as_str(),
            "AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX"
        );
    }

    #[test]
    fn spec_hybrid_identity() {
        let identity: HybridIdentity =
            "AGE-SECRET-KEY-PQ-1XX76JRALNLXDMEW0CRK45QMCCH4X06SE84UN3VPM33W6HWDX0H3SK3ZQFR"
                .parse()
                .unwrap();
        let public = identity.to_public().to_string();
        assert!(public.starts_with("age1pq1x34nzsvr0rxjsgdn8zgyhfe8j7ceq5r9rdelkjuh3y235jzxshfg87pzf5zrqtzdxz95paef6caq5aapdmwjjqpjfdyxnzr2zampc3uxy0dg4z2n2gm9su72p0pc"), "{public}");
        assert!(public.ends_with("q3pxanve4cn62gqj3pjy5lqj9c6kyj4v2z8alktn8zh99970x79gjkv7522hv9kfz35zsnxhsx8wwtmu9cy3ftzjgwcp4sshn3llnylnpdsyz5jm72vefv4x5vfwytrefxg4wq3mv42wcrvkj742479zrxzpvp2p3e9fed9f0739vcu80r7ma28qfhnvlv4gfzel9q654dj3zmuvvz893azhxdvs9fxd0r7jzchzcfcs5mkyyjxhw0n2z6dvp9yn9qfdp29h0azxqyjw6v7fhyuzj7zel0uq6j9rd7wgrpz7mf5dnj43jwsgvrc8qcnhy7tu6dkdujuxzkp9xj43xe8h92ktre2a3u3s8mm5mrp9nr9pwkgtz4mdlq9hgn4fps4k57ff6wddn2fy23t47sm20r8km8sd2pcyyafnet8f0dajsrlyjeah4n3mssr6aseevuuskdvq5lzguyvpgwpta742c6698vgutzqgny8usfg0w2he7kq5vyxjd0f9hqg8xk26y9e4th0gezq92q4cpp5p2y9hf5f2cje5l0c3sa3a2qxmm38pxxvhxh99yzmfz0zk7r2s64nnwjhkfgfr3gf8xnmppcgmaykvh5sh6g7vk9790rf8ws0axmr2t7z8aae5fq2029uvcn2ghgt4fu4wgwdc0k0cz52qkvwmuzj8p8k5jgf3xzk5zmrkavjekjrpeq408xz3zxazwkc6tyfmhayrkfpjhwtz5mp8j8guqe43k2q6m2kte03vrw27y3wmqyu5etmt9dnkwcnnpmu9gz9dekfhdevf42ucshphnrk38ra6hx8w5f8q5ru0xdhrjxmwqf6cused7zc5xvq43r0zscjglpwlptpwydhqw64xz7ptjdyeyzpq2zkxtmzg29gzjpvzva4d3l0cenn9xs297wf4y4ukwrunf57xj6pm7nvrkwvtrt8hwcmgv8x7ajw7258ugf9wvkmk4052ekg87tw5vnx8nq2swyzv77v8yqlwsenvamr0zssknwts8rrhfuwj7ykysnq9jxy0uv3kuyt22djszjdtvpz6d0s0kwh8ryynddzud92emeyvvyqktd0jtj7rvvg5gch25v8smlvny3kvn5gagyz475ze2y6q466xqmz2n3hs77lddeqyta2nch5k2u5yacuk9ywnwfdzvyejnucz724hj77hrrmakm7pr3kxsrxq22ejexlud9fy2kdqmkg5yncz7jm5wv2qjk5w5kvcpqsry2yqffh2la52dxfjkjq5rzhjzeyn6dupn0qwtyv7s4lwg3xdarsdlwe2y3tujy480y7z39q259fzx6jhd2j0f5hagqpcpees7hzc2yrk5cy788uk3s7qvp5cpepx24gvws3m2g433exgwppnkjscec8qu4y9z9r7vccexjcjaen42245lmgmxmuavg9alej92322gvvyy2t6267v09ch64y0m53jff0vjj96s0ypk60hr3jw4myd6m5hpn3xjstx7tl2szhpr5qe8jj08ydjc4wy2rch2fhuy3pdfjax5awe9j99ly5hkntzz9fe5zatgjvzdd0kgtxs25njnajyf6ssekp7gelxquusn4pt25czh3scj68kq79wdn5tgm6yvm9nzavrg043x3msnygf8dweknw5jmqd0uvny6ttsn09508k0c55zfnegrm9efhxpfqdkmhh6gjtqmwze9pyyzk3tlhl53k2ykx3qheyty7saeq0d3fzv49zc0k"), "{public}");
        let parsed: HybridRecipient = public.parse().unwrap();
        assert_eq!(parsed, identity.to_public());
    }

    #[test]
    fn wrap_unwrap_every_type() {
        let key = FileKey::generate();
        let x = X25519Identity::generate();
        let pq = HybridIdentity::generate();
        let pass = Passphrase::new(b"hunter2".to_vec());
        let cases: Vec<(Recipient, Identity)> = vec![
            (x.to_public().into(), x.clone().into()),
            (pq.to_public().into(), pq.clone().into()),
            (
                ScryptRecipient::new(pass.clone())
                    .work_factor(4)
                    .unwrap()
                    .into(),
                ScryptIdentity::new(pass).into(),
            ),
        ];
        for (recipient, identity) in &cases {
            let stanza = recipient.wrap(&key).unwrap();
            assert_eq!(
                identity.unwrap(std::slice::from_ref(&stanza)).unwrap(),
                Some(key.clone())
            );
            let other = X25519Identity::generate();
            assert_eq!(Identity::from(other).unwrap(&[stanza]).unwrap(), None);
        }
    }

    #[test]
    fn identity_file_layout() {
        for pq in [false, true] {
            let (text, recipient) = generate_identity_file(pq);
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 3);
            assert!(lines[0].starts_with("# created: 20") && lines[0].ends_with('Z'));
            assert_eq!(lines[1], format!("# public key: {recipient}"));
            let identities = parse_identities(text.as_bytes()).unwrap();
            assert_eq!(identities.len(), 1);
            assert_eq!(
                identities[0].to_public().unwrap().to_string(),
                recipient.to_string()
            );
        }
    }

    #[test]
    fn malformed_keys_are_one_line_errors() {
        let cases = [
            "age1",
            "age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujwq",
            "AGE1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujwj",
            "age1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq",
            "age1pq1qqqq",
            "ssh-ed25519 AAAA",
            "",
        ];
        for case in cases {
            let error = case.parse::<Recipient>().unwrap_err();
            let text = error.to_string();
            assert!(
                !text.contains('\n') && matches!(error, Error::Key(_)),
                "{case}: {text}"
            );
        }
        let secret = "AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEY";
        let error = parse_identities(format!("# c\n{secret}\n").as_bytes()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid key: line 2: malformed X25519 identity: invalid checksum"
        );
        assert!(parse_identities(b"# only a comment\n").is_err());
    }
}
