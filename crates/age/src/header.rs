//! The textual header: version line, recipient stanzas, MAC. Parsing is strict (canonical
//! unpadded base64, 64-column body lines ending with a short line, printable arguments) and
//! bounded: no line, stanza body, stanza count or header is read past its limit, so a hostile
//! header cannot make the reader allocate more than [`MAX_HEADER_BYTES`].

use std::io::BufRead;

use base64ct::{Base64Unpadded, Encoding};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::error::{Error, Result};
use crate::keys::FileKey;

/// The version line of an age v1 file.
pub const VERSION_LINE: &[u8] = b"age-encryption.org/v1\n";
/// The longest header line read, in bytes (a hybrid stanza's argument line is 1,516).
pub const MAX_LINE_BYTES: usize = 8192;
/// The most recipient stanzas a header may have.
pub const MAX_STANZAS: usize = 1024;
/// The largest stanza body, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The largest header, in bytes.
pub const MAX_HEADER_BYTES: usize = 4 * 1024 * 1024;

const COLUMNS: usize = 64;
const BYTES_PER_LINE: usize = COLUMNS / 4 * 3;

/// One recipient stanza: a type, its arguments and a body, as the header carries them.
/// Recipients make them ([`crate::Recipient::wrap`]) and identities read them
/// ([`crate::Identity::unwrap`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stanza {
    /// The first argument: `X25519`, `mlkem768x25519`, `scrypt`, or another type.
    pub kind: String,
    /// The arguments after the type.
    pub args: Vec<String>,
    /// The body, decoded.
    pub body: Vec<u8>,
}

/// Canonical unpadded base64 (RFC 4648 without `=`), as the header uses it.
pub(crate) fn b64_decode(text: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(text).ok()?;
    if text.bytes().any(|c| c == b'\n' || c == b'\r' || c == b'=') {
        return None;
    }
    Base64Unpadded::decode_vec(text).ok()
}

pub(crate) fn b64_encode(bytes: &[u8]) -> String {
    Base64Unpadded::encode_string(bytes)
}

fn valid_argument(arg: &[u8]) -> bool {
    !arg.is_empty() && arg.iter().all(|c| (33..=126).contains(c))
}

impl Stanza {
    /// Makes a stanza, checking that the type and arguments are printable, space-free and
    /// not empty.
    pub fn new(kind: &str, args: Vec<String>, body: Vec<u8>) -> Result<Stanza> {
        if !valid_argument(kind.as_bytes()) || !args.iter().all(|a| valid_argument(a.as_bytes())) {
            return Err(Error::Header("invalid stanza argument".into()));
        }
        Ok(Stanza {
            kind: kind.to_string(),
            args,
            body,
        })
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"-> ");
        out.extend_from_slice(self.kind.as_bytes());
        for arg in &self.args {
            out.push(b' ');
            out.extend_from_slice(arg.as_bytes());
        }
        out.push(b'\n');
        let text = b64_encode(&self.body);
        let mut lines = text.as_bytes().chunks(COLUMNS);
        for line in lines.by_ref() {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
        if text.len().is_multiple_of(COLUMNS) {
            // The body ends with a short line, here an empty one.
            out.push(b'\n');
        }
    }
}

/// A parsed header: its stanzas, its MAC, and its bytes (for the MAC and for the offset of
/// the payload).
#[derive(Clone, Debug)]
pub struct Header {
    stanzas: Vec<Stanza>,
    mac: [u8; 32],
    /// Every byte of the header, the MAC line included.
    bytes: Vec<u8>,
    /// How many of `bytes` the MAC covers (through `---`).
    mac_input: usize,
}

fn header_key(file_key: &FileKey) -> Hmac<Sha256> {
    let hkdf = hkdf::Hkdf::<Sha256>::new(Some(&[]), file_key.as_bytes());
    let mut key = zeroize::Zeroizing::new([0u8; 32]);
    hkdf.expand(b"header", key.as_mut())
        .expect("32 bytes is a valid HKDF-SHA-256 length");
    <Hmac<Sha256> as KeyInit>::new_from_slice(key.as_ref()).expect("HMAC takes any key length")
}

impl Header {
    /// The recipient stanzas, in order.
    pub fn stanzas(&self) -> &[Stanza] {
        &self.stanzas
    }

    /// The header's length in bytes (the payload's nonce follows).
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Never true: a header has at least a version line, a stanza and a MAC.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The header's bytes as they were read or written.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Writes a header for `stanzas` under the MAC keyed by `file_key`.
    pub(crate) fn seal(stanzas: Vec<Stanza>, file_key: &FileKey) -> Header {
        let mut bytes = VERSION_LINE.to_vec();
        for stanza in &stanzas {
            stanza.write(&mut bytes);
        }
        bytes.extend_from_slice(b"---");
        let mac_input = bytes.len();
        let mut hmac = header_key(file_key);
        hmac.update(&bytes);
        let mac: [u8; 32] = hmac.finalize().into_bytes().into();
        bytes.push(b' ');
        bytes.extend_from_slice(b64_encode(&mac).as_bytes());
        bytes.push(b'\n');
        Header {
            stanzas,
            mac,
            bytes,
            mac_input,
        }
    }

    /// Checks the MAC under `file_key`, in constant time.
    pub(crate) fn verify(&self, file_key: &FileKey) -> Result<()> {
        let mut hmac = header_key(file_key);
        hmac.update(&self.bytes[..self.mac_input]);
        let mac = hmac.finalize().into_bytes();
        if bool::from(mac.as_slice().ct_eq(&self.mac)) {
            Ok(())
        } else {
            Err(Error::HeaderMac)
        }
    }

    /// Reads a header from `input`, leaving `input` at the first byte after it.
    pub fn parse(input: &mut impl BufRead) -> Result<Header> {
        let mut bytes = Vec::new();
        let mut line = Vec::new();
        if !read_line(input, &mut line, &mut bytes)? {
            if line.is_empty() {
                return Err(Error::Header("the file is empty".into()));
            }
            return Err(Error::Header("no version line".into()));
        }
        if line != VERSION_LINE {
            if line.starts_with(b"age-encryption.org/") {
                return Err(Error::Header("unsupported age version (only v1 is)".into()));
            }
            return Err(Error::Header(
                "not an age file (no age-encryption.org/v1 line)".into(),
            ));
        }
        let mut stanzas = Vec::new();
        loop {
            if !read_line(input, &mut line, &mut bytes)? {
                return Err(Error::Header("the header ends before its MAC line".into()));
            }
            if line.starts_with(b"---") {
                let mac_input = bytes.len() - line.len() + 3;
                let mac = parse_mac_line(&line)?;
                if stanzas.is_empty() {
                    return Err(Error::Header("no recipient stanza".into()));
                }
                return Ok(Header {
                    stanzas,
                    mac,
                    bytes,
                    mac_input,
                });
            }
            if stanzas.len() == MAX_STANZAS {
                return Err(Error::Header(format!("more than {MAX_STANZAS} stanzas")));
            }
            stanzas.push(parse_stanza(input, &line, &mut bytes)?);
        }
    }
}

fn parse_mac_line(line: &[u8]) -> Result<[u8; 32]> {
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    let mut parts = text.split(|&c| c == b' ');
    let malformed = || Error::Header("malformed MAC line".into());
    if parts.next() != Some(b"---".as_slice()) {
        return Err(malformed());
    }
    let mac = parts.next().ok_or_else(malformed)?;
    if parts.next().is_some() {
        return Err(malformed());
    }
    b64_decode(mac)
        .and_then(|mac| <[u8; 32]>::try_from(mac).ok())
        .ok_or_else(malformed)
}

fn parse_stanza(input: &mut impl BufRead, first: &[u8], bytes: &mut Vec<u8>) -> Result<Stanza> {
    let text = first.strip_suffix(b"\n").unwrap_or(first);
    let mut parts = text.split(|&c| c == b' ');
    if parts.next() != Some(b"->".as_slice()) {
        return Err(Error::Header("a stanza does not start with '-> '".into()));
    }
    let args: Vec<&[u8]> = parts.collect();
    if args.is_empty() || !args.iter().all(|a| valid_argument(a)) {
        return Err(Error::Header("malformed stanza argument line".into()));
    }
    let args: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let mut body = Vec::new();
    let mut line = Vec::new();
    loop {
        if !read_line(input, &mut line, bytes)? {
            return Err(Error::Header(
                "a stanza body ends without its final line".into(),
            ));
        }
        let text = &line[..line.len() - 1];
        if text.len() > COLUMNS {
            return Err(Error::Header(
                "a stanza body line is longer than 64 columns".into(),
            ));
        }
        let decoded = b64_decode(text).ok_or_else(|| {
            Error::Header(
                "a stanza body is not canonical unpadded base64, or has no final short line".into(),
            )
        })?;
        if body.len() + decoded.len() > MAX_BODY_BYTES {
            return Err(Error::Header(format!(
                "a stanza body is over {MAX_BODY_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&decoded);
        if decoded.len() < BYTES_PER_LINE {
            break;
        }
    }
    let mut args = args.into_iter();
    let kind = args.next().expect("checked not empty");
    Ok(Stanza {
        kind,
        args: args.collect(),
        body,
    })
}

/// Reads one line (through `\n`) into `line`, appending it to `bytes` too; false at the end
/// of the input (with what came before it in `line`). Refuses lines over
/// [`MAX_LINE_BYTES`] and headers over [`MAX_HEADER_BYTES`] before buffering them.
fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>, bytes: &mut Vec<u8>) -> Result<bool> {
    line.clear();
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(Error::Io(error)),
        };
        if available.is_empty() {
            bytes.extend_from_slice(line);
            return Ok(false);
        }
        let (take, done) = match available.iter().position(|&c| c == b'\n') {
            Some(end) => (end + 1, true),
            None => (available.len(), false),
        };
        if line.len() + take > MAX_LINE_BYTES {
            return Err(Error::Header(format!(
                "a header line is longer than {MAX_LINE_BYTES} bytes"
            )));
        }
        if bytes.len() + line.len() + take > MAX_HEADER_BYTES {
            return Err(Error::Header(format!(
                "the header is longer than {MAX_HEADER_BYTES} bytes"
            )));
        }
        line.extend_from_slice(&available[..take]);
        input.consume(take);
        if done {
            bytes.extend_from_slice(line);
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_parse() {
        let key = FileKey::from_bytes([7; 16]);
        for len in [0, 1, 47, 48, 49, 96, 200] {
            let stanza = Stanza::new("test", vec!["a".into(), "b".into()], vec![9; len]).unwrap();
            let header = Header::seal(vec![stanza.clone()], &key);
            let mut input = header.as_bytes();
            let parsed = Header::parse(&mut input).unwrap();
            assert!(input.is_empty());
            assert_eq!(parsed.stanzas(), &[stanza]);
            assert_eq!(parsed.as_bytes(), header.as_bytes());
            parsed.verify(&key).unwrap();
            assert!(matches!(
                parsed.verify(&FileKey::from_bytes([8; 16])),
                Err(Error::HeaderMac)
            ));
        }
    }

    #[test]
    fn bounds() {
        let mut long = b"age-encryption.org/v1\n-> ".to_vec();
        long.extend(std::iter::repeat_n(b'a', 1 << 20));
        let error = Header::parse(&mut long.as_slice()).unwrap_err();
        assert!(error.to_string().contains("longer than 8192"), "{error}");
        let mut many = b"age-encryption.org/v1\n".to_vec();
        for _ in 0..=MAX_STANZAS {
            many.extend_from_slice(b"-> x\n\n");
        }
        let error = Header::parse(&mut many.as_slice()).unwrap_err();
        assert!(
            error.to_string().contains("more than 1024 stanzas"),
            "{error}"
        );
        let mut big = b"age-encryption.org/v1\n-> x\n".to_vec();
        for _ in 0..(MAX_BODY_BYTES / 48 + 1) {
            big.extend_from_slice(&[b'A'; 64]);
            big.push(b'\n');
        }
        let error = Header::parse(&mut big.as_slice()).unwrap_err();
        assert!(error.to_string().contains("over 65536 bytes"), "{error}");
    }
}
