//! The version-2 parcrypt header: public-key recipients (age's X25519 `age1...` and
//! post-quantum hybrid `age1pq1...` keys) in front of the same Cobblestone message.
//!
//! A random 128-bit file key is made for each file, as age makes one. Every recipient wraps
//! it in one stanza ([`parcrypt_age::Recipient::wrap`]), which an identity unwraps
//! ([`parcrypt_age::Identity::unwrap`]). The file key is 128 bits, as age's; the AEAD key
//! derived from it is 256 bits for Cobblestone-256; the file key bounds the security at 128
//! bits. The header ends with an HMAC-SHA-256 over everything before it, under a key derived from
//! the file key with HKDF, checked in constant time; the whole header (MAC included) is
//! then the start of the Cobblestone context, and the Cobblestone input key is derived from
//! the file key with HKDF. So no stanza can be swapped, dropped, duplicated or added, no
//! header byte changed, and no header moved onto another message, without the file failing
//! to open. docs/FORMAT.md specifies the bytes; tests/vectors/parcrypt_v2.txt has
//! known answers.
//!
//! ```text
//! offset  size  field
//!  0       8    magic "parcrypt"
//!  8       1    version, 2
//!  9       1    AEAD: 1 = AES-128-GCM (Cobblestone-128), 2 = AES-256-GCM (Cobblestone-256)
//! 10       1    key source: 3 = recipient stanzas
//! 11       1    reserved, 0
//! 12       4    header length H, big-endian: every byte from offset 0 through the MAC
//! 16       2    recipients R (1 to 1024), big-endian
//! 18            R stanzas: stanza r wraps the file key for recipient r
//! H-32    32    MAC = HMAC-SHA-256(HKDF-SHA-256(file key, "parcrypt v2 header MAC"),
//!                                  bytes 0 to H-32)
//!
//! stanza: type length t (1 byte, 1 to 64), type (t bytes),
//!         argument count a (1 byte, 0 to 16), a times: length l (2 bytes, 1 to 8192),
//!         argument (l bytes); body length b (2 bytes), body (b bytes).
//!         Types and arguments are printable ASCII without spaces (0x21 to 0x7e), as in age.
//! ```
//!
//! Nothing in a header is trusted before its MAC is checked: the header length is bounded
//! ([`MAX_HEADER_BYTES`]) before it is read, the input is buffered only as it arrives, and
//! every count and length inside is checked against what is left before it is used.

use hkdf::Hkdf;
use hmac::{Hmac, KeyInit, Mac};
use parcrypt_age::{Identity, Recipient, Stanza};
use sha2::Sha256;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::cobblestone::Suite;
use crate::error::FormatError;
use crate::header::MAGIC;

/// The version byte of a header with recipients.
pub const VERSION: u8 = 2;
/// The key-source byte of a header with recipients.
pub const SOURCE_RECIPIENTS: u8 = 3;
/// Bytes before the first stanza.
pub const FIXED_BYTES: usize = 18;
/// Bytes of the MAC that ends the header.
pub const MAC_BYTES: usize = 32;
/// Bytes of the file key: 16, age's file key.
pub const FILE_KEY_BYTES: usize = 16;
/// The most recipients a header may have (each has one stanza).
pub const MAX_RECIPIENTS: usize = 1024;
/// The largest header, in bytes (what a reader agrees to buffer before the MAC is checked).
pub const MAX_HEADER_BYTES: usize = 4 << 20;
/// The longest stanza type, in bytes.
pub const MAX_TYPE_BYTES: usize = 64;
/// The most arguments a stanza may have.
pub const MAX_ARGUMENTS: usize = 16;
/// The longest stanza argument, in bytes.
pub const MAX_ARGUMENT_BYTES: usize = 8192;
/// The largest stanza body, in bytes (its length is two bytes).
pub const MAX_BODY_BYTES: usize = u16::MAX as usize;
/// The shortest header: one stanza of one type byte, no arguments and an empty body.
pub const MIN_HEADER_BYTES: usize = FIXED_BYTES + 5 + MAC_BYTES;

/// The HKDF info of the header's MAC key.
pub const MAC_LABEL: &[u8] = b"parcrypt v2 header MAC";
/// The HKDF info of the Cobblestone input key.
pub const PAYLOAD_LABEL: &[u8] = b"parcrypt v2 payload key";

const SUITE_128: u8 = 1;
const SUITE_256: u8 = 2;

/// A file's 128-bit key: age's own file key type (wiped when dropped, compared in constant
/// time, never printed), which each recipient's stanza wraps.
pub use parcrypt_age::FileKey;

/// `HKDF-SHA-256(ikm = file key, salt = empty, info = label)`, `out.len()` bytes.
fn expand(file_key: &FileKey, label: &[u8], out: &mut [u8]) {
    Hkdf::<Sha256>::new(Some(&[]), file_key.as_bytes())
        .expand(label, out)
        .expect("at most 32 bytes from HKDF-SHA-256");
}

/// The key of the header's MAC: `HKDF-SHA-256(file key, salt = "", info =`
/// [`MAC_LABEL`]`)`, 32 bytes.
pub fn mac_key(file_key: &FileKey) -> Zeroizing<[u8; 32]> {
    let mut key = Zeroizing::new([0u8; 32]);
    expand(file_key, MAC_LABEL, key.as_mut());
    key
}

/// The Cobblestone input key of `suite`: `HKDF-SHA-256(file key, salt = "", info =`
/// [`PAYLOAD_LABEL`]`)`, 16 or 32 bytes. Cobblestone's own derivation makes the chunk key,
/// base nonce and commitment from it.
pub fn input_key(file_key: &FileKey, suite: Suite) -> Zeroizing<Vec<u8>> {
    let mut key = Zeroizing::new(vec![0u8; suite.key_bytes()]);
    expand(file_key, PAYLOAD_LABEL, &mut key);
    key
}

/// Refuses recipients that cannot share a parcrypt file: none, more than
/// [`MAX_RECIPIENTS`], a passphrase (parcrypt's passphrase files use argon2id, version 1),
/// and post-quantum recipients mixed with others (which would void their protection), as
/// age refuses them.
pub fn check_recipients(recipients: &[Recipient]) -> Result<(), FormatError> {
    if recipients.len() > MAX_RECIPIENTS {
        return Err(FormatError::Recipients(format!(
            "{} recipients: a file has at most {MAX_RECIPIENTS}",
            recipients.len()
        )));
    }
    if recipients.iter().any(|r| matches!(r, Recipient::Scrypt(_))) {
        return Err(FormatError::Recipients(
            "a passphrase is not a recipient of a parcrypt file: encrypt with the passphrase itself (Secret::Passphrase, argon2id)".into(),
        ));
    }
    Recipient::check_combination(recipients)
        .map_err(|error| FormatError::Recipients(error.to_string()))
}

/// Wraps `file_key` for each of `recipients`: one stanza each, in order, as age wraps its
/// file key.
pub fn wrap(recipients: &[Recipient], file_key: &FileKey) -> Result<Vec<Stanza>, FormatError> {
    check_recipients(recipients)?;
    recipients
        .iter()
        .map(|recipient| {
            recipient
                .wrap(file_key)
                .map_err(|error| FormatError::Recipients(error.to_string()))
        })
        .collect()
}

fn printable(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.iter().all(|c| (0x21..=0x7e).contains(c))
}

fn hmac(key: &[u8; 32], bytes: &[u8]) -> [u8; MAC_BYTES] {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(bytes);
    mac.finalize().into_bytes().into()
}

/// A parsed (or newly sealed) version-2 header: the suite, the stanzas in order, and the
/// header's bytes, MAC included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecipientHeader {
    suite: Suite,
    stanzas: Vec<Stanza>,
    bytes: Vec<u8>,
}

impl RecipientHeader {
    /// Encodes a header for `suite` with `stanzas` (one per recipient, as [`wrap`] makes
    /// them) and seals it with the MAC under `file_key`. Refuses stanzas the format cannot
    /// carry (none, more than [`MAX_RECIPIENTS`], a type or an
    /// argument that is empty, too long or not printable, too many arguments, a body over
    /// [`MAX_BODY_BYTES`], a header over [`MAX_HEADER_BYTES`]).
    pub fn seal(
        suite: Suite,
        stanzas: Vec<Stanza>,
        file_key: &FileKey,
    ) -> Result<RecipientHeader, FormatError> {
        let refuse = |why: &str| FormatError::Recipients(format!("cannot write the header: {why}"));
        if stanzas.is_empty() || stanzas.len() > MAX_RECIPIENTS {
            return Err(refuse("one stanza per recipient, 1 to 1024 recipients"));
        }
        let mut bytes = Vec::with_capacity(256);
        bytes.extend_from_slice(MAGIC);
        bytes.push(VERSION);
        bytes.push(match suite {
            Suite::Cobblestone128 => SUITE_128,
            Suite::Cobblestone256 => SUITE_256,
        });
        bytes.push(SOURCE_RECIPIENTS);
        bytes.push(0);
        bytes.extend_from_slice(&[0; 4]); // the length, below
        bytes.extend_from_slice(&(stanzas.len() as u16).to_be_bytes());
        for stanza in &stanzas {
            let kind = stanza.kind.as_bytes();
            if !printable(kind) || kind.len() > MAX_TYPE_BYTES {
                return Err(refuse(
                    "a stanza type is empty, longer than 64 bytes or not printable",
                ));
            }
            bytes.push(kind.len() as u8);
            bytes.extend_from_slice(kind);
            if stanza.args.len() > MAX_ARGUMENTS {
                return Err(refuse("a stanza has more than 16 arguments"));
            }
            bytes.push(stanza.args.len() as u8);
            for arg in &stanza.args {
                let arg = arg.as_bytes();
                if !printable(arg) || arg.len() > MAX_ARGUMENT_BYTES {
                    return Err(refuse(
                        "a stanza argument is empty, longer than 8192 bytes or not printable",
                    ));
                }
                bytes.extend_from_slice(&(arg.len() as u16).to_be_bytes());
                bytes.extend_from_slice(arg);
            }
            if stanza.body.len() > MAX_BODY_BYTES {
                return Err(refuse("a stanza body is longer than 65535 bytes"));
            }
            bytes.extend_from_slice(&(stanza.body.len() as u16).to_be_bytes());
            bytes.extend_from_slice(&stanza.body);
            if bytes.len() + MAC_BYTES > MAX_HEADER_BYTES {
                return Err(refuse("the header would be longer than 4 MiB"));
            }
        }
        let length = (bytes.len() + MAC_BYTES) as u32;
        bytes[12..16].copy_from_slice(&length.to_be_bytes());
        let mac = hmac(&mac_key(file_key), &bytes);
        bytes.extend_from_slice(&mac);
        Ok(RecipientHeader {
            suite,
            stanzas,
            bytes,
        })
    }

    /// The header length that the first 16 bytes of a version-2 header declare, checked
    /// against [`MIN_HEADER_BYTES`] and [`MAX_HEADER_BYTES`] before anything is buffered
    /// for it. `start` begins with the magic and version 2.
    pub fn declared_length(start: &[u8]) -> Result<usize, FormatError> {
        if start.len() < 16 {
            return Err(FormatError::TruncatedHeader("parcrypt"));
        }
        let length = u32::from_be_bytes([start[12], start[13], start[14], start[15]]) as usize;
        if !(MIN_HEADER_BYTES..=MAX_HEADER_BYTES).contains(&length) {
            return Err(FormatError::DamagedHeader(
                "the header length is outside 55 bytes to 4 MiB",
            ));
        }
        Ok(length)
    }

    /// Parses the version-2 header at the start of `bytes` (which may go on past it) and
    /// returns it with its length. Strict: every field is checked and every byte accounted
    /// for, so a header has exactly one encoding. The MAC is checked only when a file key
    /// is known ([`RecipientHeader::unwrap`]).
    pub fn parse(bytes: &[u8]) -> Result<(RecipientHeader, usize), FormatError> {
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(FormatError::NotParcrypt);
        }
        if bytes.len() <= 8 {
            return Err(FormatError::TruncatedHeader("parcrypt"));
        }
        if bytes[8] != VERSION {
            return Err(FormatError::UnsupportedVersion(bytes[8]));
        }
        let length = Self::declared_length(bytes)?;
        if bytes.len() < length {
            return Err(FormatError::TruncatedHeader("parcrypt"));
        }
        let header = &bytes[..length];
        let suite = match header[9] {
            SUITE_128 => Suite::Cobblestone128,
            SUITE_256 => Suite::Cobblestone256,
            _ => return Err(FormatError::DamagedHeader("unknown AEAD")),
        };
        if header[10] != SOURCE_RECIPIENTS {
            return Err(FormatError::DamagedHeader(
                "unknown key source for a version-2 header",
            ));
        }
        if header[11] != 0 {
            return Err(FormatError::DamagedHeader("reserved byte is not zero"));
        }
        let recipients = u16::from_be_bytes([header[16], header[17]]) as usize;
        if recipients == 0 || recipients > MAX_RECIPIENTS {
            return Err(FormatError::DamagedHeader(
                "the recipient count is outside 1 to 1024",
            ));
        }
        let mut cursor = Cursor {
            bytes: &header[..length - MAC_BYTES],
            at: FIXED_BYTES,
        };
        // Stanzas are pushed as they parse: the count is not trusted for an allocation.
        let mut stanzas = Vec::new();
        for _ in 0..recipients {
            stanzas.push(cursor.stanza()?);
        }
        if cursor.at != cursor.bytes.len() {
            return Err(FormatError::DamagedHeader(
                "the stanzas do not end where the header length says",
            ));
        }
        for stanza in &stanzas {
            if stanza.kind == "scrypt" {
                return Err(FormatError::DamagedHeader(
                    "a passphrase (scrypt) stanza, which parcrypt files do not use",
                ));
            }
        }
        Ok((
            RecipientHeader {
                suite,
                stanzas,
                bytes: header.to_vec(),
            },
            length,
        ))
    }

    /// The AEAD of the message that follows.
    pub fn suite(&self) -> Suite {
        self.suite
    }

    /// The stanzas, one per recipient, in order.
    pub fn stanzas(&self) -> &[Stanza] {
        &self.stanzas
    }

    /// How many recipients the file has.
    pub fn recipients(&self) -> usize {
        self.stanzas.len()
    }

    /// The header's bytes, MAC included: what the file holds, and the start of the
    /// Cobblestone context.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Bytes of the header.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The MAC stored at the header's end.
    pub fn mac(&self) -> &[u8] {
        &self.bytes[self.bytes.len() - MAC_BYTES..]
    }

    /// Checks the header's MAC under `file_key`, in constant time.
    pub fn verify(&self, file_key: &FileKey) -> Result<(), FormatError> {
        let covered = &self.bytes[..self.bytes.len() - MAC_BYTES];
        let expected = hmac(&mac_key(file_key), covered);
        if bool::from(expected.as_slice().ct_eq(self.mac())) {
            Ok(())
        } else {
            Err(FormatError::HeaderMac)
        }
    }

    /// Unwraps the file key with the first of `identities` that opens a recipient's stanza
    /// (the recipients tried in order) and checks the header's MAC with it. A
    /// malformed stanza of an identity's type is an error, as a MAC that does not match;
    /// when no identity opens any stanza, [`FormatError::NoMatchingIdentity`] names the
    /// stanza types.
    pub fn unwrap(&self, identities: &[Identity]) -> Result<FileKey, FormatError> {
        if identities.is_empty() {
            return Err(FormatError::NeedsIdentity);
        }
        let stanza_error = |error: parcrypt_age::Error| match error {
            parcrypt_age::Error::Header(why) => FormatError::DamagedStanza(why),
            other => FormatError::DamagedStanza(other.to_string()),
        };
        for identity in identities {
            for stanza in &self.stanzas {
                let Some(key) = identity
                    .unwrap(std::slice::from_ref(stanza))
                    .map_err(stanza_error)?
                else {
                    continue;
                };
                self.verify(&key)?;
                return Ok(key);
            }
        }
        let mut kinds: Vec<&str> = self.stanzas.iter().map(|s| s.kind.as_str()).collect();
        kinds.dedup();
        Err(FormatError::NoMatchingIdentity(kinds.join(", ")))
    }
}

/// Reads the stanza area, every length checked against what is left.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], FormatError> {
        if self.bytes.len() - self.at < count {
            return Err(FormatError::DamagedHeader(
                "a stanza runs past the header's end",
            ));
        }
        let piece = &self.bytes[self.at..self.at + count];
        self.at += count;
        Ok(piece)
    }

    fn byte(&mut self) -> Result<usize, FormatError> {
        Ok(self.take(1)?[0] as usize)
    }

    fn word(&mut self) -> Result<usize, FormatError> {
        let piece = self.take(2)?;
        Ok(u16::from_be_bytes([piece[0], piece[1]]) as usize)
    }

    fn text(&mut self, count: usize, what: &'static str) -> Result<String, FormatError> {
        let piece = self.take(count)?;
        if !printable(piece) {
            return Err(FormatError::DamagedHeader(what));
        }
        Ok(String::from_utf8(piece.to_vec()).expect("printable ASCII"))
    }

    fn stanza(&mut self) -> Result<Stanza, FormatError> {
        let kind_length = self.byte()?;
        if kind_length == 0 || kind_length > MAX_TYPE_BYTES {
            return Err(FormatError::DamagedHeader(
                "a stanza type is empty or longer than 64 bytes",
            ));
        }
        let kind = self.text(kind_length, "a stanza type is not printable ASCII")?;
        let count = self.byte()?;
        if count > MAX_ARGUMENTS {
            return Err(FormatError::DamagedHeader(
                "a stanza has more than 16 arguments",
            ));
        }
        let mut args = Vec::with_capacity(count);
        for _ in 0..count {
            let length = self.word()?;
            if length == 0 || length > MAX_ARGUMENT_BYTES {
                return Err(FormatError::DamagedHeader(
                    "a stanza argument is empty or longer than 8192 bytes",
                ));
            }
            args.push(self.text(length, "a stanza argument is not printable ASCII")?);
        }
        let body_length = self.word()?;
        let body = self.take(body_length)?.to_vec();
        Ok(Stanza { kind, args, body })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parcrypt_age::{HybridIdentity, X25519Identity};

    fn x25519() -> (Identity, Recipient) {
        let identity = X25519Identity::generate();
        let recipient = Recipient::from(identity.to_public());
        (Identity::from(identity), recipient)
    }

    #[test]
    fn a_sealed_header_parses_back_and_unwraps_for_each_recipient() {
        let (alice, alice_public) = x25519();
        let (bob, bob_public) = x25519();
        let file_key = FileKey::generate();
        let stanzas = wrap(&[alice_public, bob_public], &file_key).unwrap();
        assert_eq!(stanzas.len(), 2);
        let header = RecipientHeader::seal(Suite::Cobblestone256, stanzas, &file_key).unwrap();
        let mut bytes = header.as_bytes().to_vec();
        assert_eq!(&bytes[..12], b"parcrypt\x02\x02\x03\x00");
        assert_eq!(
            u32::from_be_bytes(bytes[12..16].try_into().unwrap()) as usize,
            bytes.len()
        );
        assert_eq!(&bytes[16..18], &[0, 2]);
        bytes.extend_from_slice(b"what follows");
        let (parsed, length) = RecipientHeader::parse(&bytes).unwrap();
        assert_eq!(length, header.len());
        assert_eq!(parsed, header);
        assert_eq!(parsed.recipients(), 2);
        for identity in [&alice, &bob] {
            assert_eq!(
                parsed.unwrap(std::slice::from_ref(identity)).unwrap(),
                file_key
            );
        }
        let (carol, _) = x25519();
        assert!(matches!(
            parsed.unwrap(std::slice::from_ref(&carol)),
            Err(FormatError::NoMatchingIdentity(kinds)) if kinds == "X25519"
        ));
        // Tried in order: a foreign identity first does no harm.
        assert_eq!(parsed.unwrap(&[carol, bob]).unwrap(), file_key);
    }

    #[test]
    fn hybrid_recipients_and_refused_combinations() {
        let identity = HybridIdentity::generate();
        let recipient = Recipient::from(identity.to_public());
        let file_key = FileKey::generate();
        let stanzas = wrap(std::slice::from_ref(&recipient), &file_key).unwrap();
        assert_eq!(stanzas[0].kind, "mlkem768x25519");
        let header = RecipientHeader::seal(Suite::Cobblestone128, stanzas, &file_key).unwrap();
        let (parsed, _) = RecipientHeader::parse(header.as_bytes()).unwrap();
        assert_eq!(
            parsed.unwrap(&[Identity::from(identity)]).unwrap(),
            file_key
        );
        let (_, classic) = x25519();
        for refused in [
            vec![],
            vec![recipient, classic],
            vec![Recipient::from(parcrypt_age::ScryptRecipient::new(
                parcrypt_age::Passphrase::new(b"pass".to_vec()),
            ))],
        ] {
            let error = wrap(&refused, &file_key).unwrap_err();
            assert!(matches!(error, FormatError::Recipients(_)), "{error}");
            assert!(!error.to_string().contains('\n'));
        }
    }

    #[test]
    fn every_byte_of_a_header_is_checked() {
        let (identity, recipient) = x25519();
        let file_key = FileKey::generate();
        let header = RecipientHeader::seal(
            Suite::Cobblestone128,
            wrap(&[recipient], &file_key).unwrap(),
            &file_key,
        )
        .unwrap();
        let bytes = header.as_bytes();
        for position in 0..bytes.len() {
            for bit in [0x01u8, 0x80] {
                let mut changed = bytes.to_vec();
                changed[position] ^= bit;
                let refused = match RecipientHeader::parse(&changed) {
                    Err(_) => true,
                    Ok((changed, _)) => changed.unwrap(std::slice::from_ref(&identity)).is_err(),
                };
                assert!(refused, "bit {bit:#x} of byte {position} went unnoticed");
            }
        }
        for cut in 0..bytes.len() {
            assert!(RecipientHeader::parse(&bytes[..cut]).is_err(), "{cut}");
        }
    }

    #[test]
    fn hostile_lengths_are_refused_before_anything_is_buffered() {
        let mut start = b"parcrypt\x02\x01\x03\x00".to_vec();
        for (length, ok) in [
            (0u32, false),
            (MIN_HEADER_BYTES as u32 - 1, false),
            (MIN_HEADER_BYTES as u32, true),
            (MAX_HEADER_BYTES as u32, true),
            (MAX_HEADER_BYTES as u32 + 1, false),
            (u32::MAX, false),
        ] {
            start.truncate(12);
            start.extend_from_slice(&length.to_be_bytes());
            assert_eq!(
                RecipientHeader::declared_length(&start).is_ok(),
                ok,
                "{length}"
            );
        }
        // A count of recipients far past the bytes there: refused, nothing allocated for it.
        let mut header = b"parcrypt\x02\x01\x03\x00".to_vec();
        header.extend_from_slice(&(MIN_HEADER_BYTES as u32).to_be_bytes());
        header.extend_from_slice(&1024u16.to_be_bytes());
        header.resize(MIN_HEADER_BYTES, 1);
        assert!(matches!(
            RecipientHeader::parse(&header),
            Err(FormatError::DamagedHeader(_))
        ));
        header[16..18].copy_from_slice(&1025u16.to_be_bytes());
        assert!(matches!(
            RecipientHeader::parse(&header),
            Err(FormatError::DamagedHeader(_))
        ));
    }

    #[test]
    fn one_stanza_per_recipient_and_the_count_must_match() {
        let (identity, recipient) = x25519();
        let file_key = FileKey::generate();
        let stanzas = wrap(std::slice::from_ref(&recipient), &file_key).unwrap();
        assert_eq!(stanzas.len(), 1);
        let header = RecipientHeader::seal(Suite::Cobblestone256, stanzas, &file_key).unwrap();
        // 18 fixed bytes, an 87-byte X25519 stanza, the 32-byte MAC.
        assert_eq!(header.len(), 50 + 87);
        assert_eq!(header.recipients(), 1);
        assert_eq!(
            header.unwrap(std::slice::from_ref(&identity)).unwrap(),
            file_key
        );
        // A count of 2 over one stanza, or of 0: refused while parsing.
        for count in [0u16, 2] {
            let mut bytes = header.as_bytes().to_vec();
            bytes[16..18].copy_from_slice(&count.to_be_bytes());
            assert!(
                matches!(
                    RecipientHeader::parse(&bytes),
                    Err(FormatError::DamagedHeader(_))
                ),
                "{count}"
            );
        }
        // A passphrase stanza is never part of a version-2 header.
        let scrypt = Stanza {
            kind: "scrypt".into(),
            args: vec!["c2FsdA".into(), "10".into()],
            body: vec![0; 32],
        };
        let sealed = RecipientHeader::seal(Suite::Cobblestone128, vec![scrypt], &file_key).unwrap();
        assert!(matches!(
            RecipientHeader::parse(sealed.as_bytes()),
            Err(FormatError::DamagedHeader(_))
        ));
    }

    #[test]
    fn stanzas_that_cannot_be_written_are_refused() {
        let file_key = FileKey::from_bytes([7; 16]);
        let stanza = |kind: &str, args: Vec<String>, body: usize| Stanza {
            kind: kind.into(),
            args,
            body: vec![0; body],
        };
        for stanzas in [
            vec![],
            vec![stanza("a", vec![], 0); MAX_RECIPIENTS + 1],
            vec![stanza("a b", vec![], 0)],
            vec![stanza("", vec![], 0)],
            vec![stanza("a", vec!["".into()], 0)],
            vec![stanza("a", vec!["a b".into()], 0)],
            vec![stanza("a", vec!["x".repeat(MAX_ARGUMENT_BYTES + 1)], 0)],
            vec![stanza("a", vec!["x".into(); MAX_ARGUMENTS + 1], 0)],
            vec![stanza("a", vec![], 65536)],
            vec![stanza("a", vec![], 0), stanza(&"x".repeat(65), vec![], 0)],
        ] {
            assert!(matches!(
                RecipientHeader::seal(Suite::Cobblestone128, stanzas, &file_key),
                Err(FormatError::Recipients(_))
            ));
        }
        // The smallest header there is parses back; unknown types are carried.
        let smallest = RecipientHeader::seal(
            Suite::Cobblestone128,
            vec![stanza("a", vec![], 0)],
            &file_key,
        )
        .unwrap();
        assert_eq!(smallest.len(), MIN_HEADER_BYTES);
        assert_eq!(
            RecipientHeader::parse(smallest.as_bytes()).unwrap().0,
            smallest
        );
        assert!(smallest.verify(&file_key).is_ok());
        assert!(matches!(
            smallest.verify(&FileKey::from_bytes([8; 16])),
            Err(FormatError::HeaderMac)
        ));
    }
}
