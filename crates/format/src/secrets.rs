//! Where keys and passphrases come from: hex text, key files, passphrase files, the
//! `PARCRYPT_PASSPHRASE` environment variable and the terminal.
//!
//! Every secret comes back as a [`SecretBytes`], wiped when dropped, and every refusal is a
//! [`SecretError`] phrased for the person who gave the secret. The command line and every
//! binding find secrets here, so a key file or a passphrase means the same everywhere.
//!
//! ```
//! use parcrypt_format::secrets;
//!
//! let key = secrets::key_from_hex("000102030405060708090a0b0c0d0e0f")?;
//! assert_eq!(key.len(), 16);
//!
//! let folder = tempfile::tempdir()?;
//! let path = folder.path().join("passphrase");
//! std::fs::write(&path, "correct horse\n")?;
//! // One trailing newline is how editors end a file, not part of the secret.
//! assert_eq!(secrets::read_passphrase_file(&path)?.as_slice(), b"correct horse");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use parcrypt_sys::terminal;

use std::io::{self, Read};

use parcrypt_engine::stream::pipeline::read_full;
use std::path::{Path, PathBuf};

use zeroize::Zeroizing;

use crate::error::plain;

/// Secret bytes (a key or a passphrase), wiped when dropped.
pub type SecretBytes = Zeroizing<Vec<u8>>;

/// The most bytes a key file or a passphrase file may hold: 64 KiB. A key is 16 or 32
/// bytes and a passphrase a line or a few, so a larger file is a mistake (`/dev/zero`, a
/// log, a pipe that never ends); it is refused after reading at most one byte past this,
/// so memory stays bounded whatever the path names.
pub const MAX_SECRET_FILE_BYTES: usize = 64 * 1024;

/// Passphrases shorter than this many bytes get a warning when encrypting
/// ([`passphrase_weakness`]): eight is the least NIST SP 800-63B has long asked of a
/// memorized secret. (An empty passphrase is refused outright.)
pub const SHORT_PASSPHRASE_BYTES: usize = 8;

/// The environment variable a passphrase may come from (a command line never carries one:
/// the process list would show it). Only its name lives here: the front ends read it (the
/// facade's `environment::passphrase`) and pass the value to [`read_passphrase`].
pub const PASSPHRASE_VARIABLE: &str = "PARCRYPT_PASSPHRASE";

/// Why a secret could not be had. Each message is one line for the person who gave it.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// Text that should be hex is not; `what` names where it came from (`--key`).
    #[error("{what} is not valid hex: {reason}")]
    NotHex {
        /// Where the text came from, as the person knows it.
        what: String,
        /// What is wrong with the text.
        reason: String,
    },
    /// A key of a length no suite takes.
    #[error("the key must be 16 bytes (AES-128) or 32 bytes (AES-256), got {0} bytes")]
    KeyLength(usize),
    /// A key file that could not be read.
    #[error("cannot read key file '{}': {}", .path.display(), plain(.error))]
    ReadKeyFile {
        /// The key file.
        path: PathBuf,
        /// What the operating system said.
        error: io::Error,
    },
    /// A key file longer than [`MAX_SECRET_FILE_BYTES`].
    #[error("key file '{}' is larger than {} KiB (a key file holds 16 or 32 bytes, raw or in hex)", .0.display(), MAX_SECRET_FILE_BYTES / 1024)]
    KeyFileTooLarge(PathBuf),
    /// A key file that holds neither 16 or 32 raw bytes nor their hex.
    #[error("key file '{}' must hold 16 or 32 bytes, raw or in hex; it has {bytes} bytes", .path.display())]
    KeyFileLength {
        /// The key file.
        path: PathBuf,
        /// Its length.
        bytes: usize,
    },
    /// A passphrase file that could not be read.
    #[error("cannot read passphrase file '{}': {}", .path.display(), plain(.error))]
    ReadPassphraseFile {
        /// The passphrase file.
        path: PathBuf,
        /// What the operating system said.
        error: io::Error,
    },
    /// A passphrase file longer than [`MAX_SECRET_FILE_BYTES`].
    #[error("passphrase file '{}' is larger than {} KiB, the most a passphrase file may hold", .0.display(), MAX_SECRET_FILE_BYTES / 1024)]
    PassphraseFileTooLarge(PathBuf),
    /// A passphrase file with nothing in it but (at most) a newline.
    #[error("passphrase file '{}' is empty", .0.display())]
    EmptyPassphraseFile(PathBuf),
    /// [`PASSPHRASE_VARIABLE`] is set to nothing.
    #[error("{PASSPHRASE_VARIABLE} is set but empty")]
    EmptyPassphraseVariable,
    /// No file, no variable, and no terminal to ask on.
    #[error("no passphrase: use --passphrase-file or {PASSPHRASE_VARIABLE}, or run on a terminal to be asked ({})", plain(.0))]
    NoTerminal(io::Error),
    /// Enter pressed on an empty line at the prompt.
    #[error("the passphrase is empty")]
    EmptyPassphrase,
    /// The confirmation differs from the first answer.
    #[error("the two passphrases differ; nothing was written")]
    PassphrasesDiffer,
    /// End of input (Ctrl-D) at the prompt: a refusal, not an empty passphrase.
    #[error("no passphrase was typed (end of input at the prompt)")]
    NothingTyped,
    /// The terminal failed while asking.
    #[error("cannot read the passphrase from the terminal: {}", plain(.0))]
    Terminal(io::Error),
}

/// Decodes hex (surrounding whitespace ignored) into secret bytes; `what` names the text
/// in the error (`--key`, `--context`).
pub fn decode_hex(what: &str, text: &str) -> Result<SecretBytes, SecretError> {
    let bytes = hex::decode(text.trim()).map_err(|error| {
        let reason = match error {
            hex::FromHexError::OddLength => "an odd number of hex digits".to_string(),
            hex::FromHexError::InvalidHexCharacter { c, index } => {
                format!("'{c}' at position {index} is not a hex digit")
            }
            other => other.to_string(),
        };
        SecretError::NotHex {
            what: what.to_string(),
            reason,
        }
    })?;
    Ok(Zeroizing::new(bytes))
}

/// Refuses a key that is neither 16 bytes (Cobblestone-128) nor 32 (Cobblestone-256).
pub fn checked_key(key: SecretBytes) -> Result<SecretBytes, SecretError> {
    match key.len() {
        16 | 32 => Ok(key),
        other => Err(SecretError::KeyLength(other)),
    }
}

/// A 16- or 32-byte key from its hex.
pub fn key_from_hex(text: &str) -> Result<SecretBytes, SecretError> {
    decode_hex("the key", text).and_then(checked_key)
}

/// A key file holds the key in hex (32 or 64 digits, surrounding whitespace ignored) or as
/// 16 or 32 raw bytes. Hex wins when both readings fit (a raw 32-byte key made only of hex
/// digits: about one chance in 10^34 for a random key).
pub fn read_key_file(path: &Path) -> Result<SecretBytes, SecretError> {
    let contents = read_capped(path, SecretError::KeyFileTooLarge, |path, error| {
        SecretError::ReadKeyFile { path, error }
    })?;
    let trimmed = contents.trim_ascii();
    if (trimmed.len() == 32 || trimmed.len() == 64) && trimmed.iter().all(u8::is_ascii_hexdigit) {
        let mut key = Zeroizing::new(vec![0u8; trimmed.len() / 2]);
        // Every byte was checked to be a hex digit and the length is even: this cannot fail.
        if hex::decode_to_slice(trimmed, &mut key).is_ok() {
            return Ok(key);
        }
    }
    if contents.len() == 16 || contents.len() == 32 {
        return Ok(Zeroizing::new(contents.to_vec()));
    }
    Err(SecretError::KeyFileLength {
        path: path.to_path_buf(),
        bytes: contents.len(),
    })
}

/// A passphrase file's content, less one trailing newline (`\n` or `\r\n`): that is how
/// editors and `echo` end a file, not part of the secret.
pub fn read_passphrase_file(path: &Path) -> Result<SecretBytes, SecretError> {
    let mut contents = read_capped(path, SecretError::PassphraseFileTooLarge, |path, error| {
        SecretError::ReadPassphraseFile { path, error }
    })?;
    if contents.last() == Some(&b'\n') {
        contents.pop();
        if contents.last() == Some(&b'\r') {
            contents.pop();
        }
    }
    if contents.is_empty() {
        return Err(SecretError::EmptyPassphraseFile(path.to_path_buf()));
    }
    Ok(contents)
}

/// Reads the file at `path` whole when it holds at most [`MAX_SECRET_FILE_BYTES`]; a larger
/// file is refused with `too_large`, a failed read with `unreadable`. It reads at most one
/// byte past the cap into one buffer allocated up front (never grown, so no copy of the
/// secret is left in freed memory), and wipes that buffer when the file is refused.
fn read_capped(
    path: &Path,
    too_large: fn(PathBuf) -> SecretError,
    unreadable: fn(PathBuf, io::Error) -> SecretError,
) -> Result<SecretBytes, SecretError> {
    let mut buffer = Zeroizing::new(vec![0u8; MAX_SECRET_FILE_BYTES + 1]);
    let filled = std::fs::File::open(path)
        .and_then(|file| {
            read_full(
                &mut file.take(MAX_SECRET_FILE_BYTES as u64 + 1),
                &mut buffer,
            )
        })
        .map_err(|error| unreadable(path.to_path_buf(), error))?;
    if filled > MAX_SECRET_FILE_BYTES {
        return Err(too_large(path.to_path_buf()));
    }
    // Shrinking within the allocation moves nothing; the bytes past `filled` are zeros.
    buffer.truncate(filled);
    Ok(buffer)
}

/// A warning for a passphrase shorter than [`SHORT_PASSPHRASE_BYTES`] (not an error: the
/// message is still written), or `None`.
pub fn passphrase_weakness(passphrase: &[u8]) -> Option<crate::header::Weakness> {
    (passphrase.len() < SHORT_PASSPHRASE_BYTES)
        .then_some(crate::header::Weakness::ShortPassphrase(passphrase.len()))
}

/// Asks for the passphrase on the controlling terminal with echo off (twice when
/// `confirm`, the answers compared in constant time). Ctrl-C or a hang-up while asking
/// restores the terminal before the process ends.
pub fn prompt_passphrase(confirm: bool) -> Result<SecretBytes, SecretError> {
    let mut terminal = terminal::Terminal::open().map_err(SecretError::NoTerminal)?;
    let first = ask(&mut terminal, "parcrypt: passphrase: ")?;
    if first.is_empty() {
        return Err(SecretError::EmptyPassphrase);
    }
    if confirm {
        let second = ask(&mut terminal, "parcrypt: passphrase again: ")?;
        if !bool::from(subtle::ConstantTimeEq::ct_eq(
            first.as_slice(),
            second.as_slice(),
        )) {
            return Err(SecretError::PassphrasesDiffer);
        }
    }
    Ok(first)
}

/// Where [`read_passphrase`] found the passphrase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassphraseSource {
    /// The passphrase file given.
    File,
    /// [`PASSPHRASE_VARIABLE`]: readable by whoever can read the process's environment
    /// (its user, root, a crash dump), so a front end warns when a person is watching.
    Environment,
    /// Typed at the terminal's prompt.
    Terminal,
}

/// The passphrase from `file` when given, then `from_environment` (the value of
/// [`PASSPHRASE_VARIABLE`], which the front ends read: this crate reads no environment
/// variable), then from the terminal (asked twice when `confirm`, as when encrypting), and
/// where it came from.
pub fn read_passphrase(
    file: Option<&Path>,
    from_environment: Option<SecretBytes>,
    confirm: bool,
) -> Result<(SecretBytes, PassphraseSource), SecretError> {
    if let Some(path) = file {
        return Ok((read_passphrase_file(path)?, PassphraseSource::File));
    }
    if let Some(passphrase) = from_environment {
        if passphrase.is_empty() {
            return Err(SecretError::EmptyPassphraseVariable);
        }
        return Ok((passphrase, PassphraseSource::Environment));
    }
    Ok((prompt_passphrase(confirm)?, PassphraseSource::Terminal))
}

/// One answer from the terminal; end of input (Ctrl-D) is a refusal, not an empty passphrase.
fn ask(terminal: &mut terminal::Terminal, prompt: &str) -> Result<SecretBytes, SecretError> {
    match terminal.ask(prompt) {
        Ok(Some(answer)) => Ok(answer),
        Ok(None) => Err(SecretError::NothingTyped),
        Err(error) => Err(SecretError::Terminal(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_take_raw_bytes_or_hex() {
        let folder = tempfile::tempdir().unwrap();
        let write = |name: &str, contents: &[u8]| {
            let path = folder.path().join(name);
            std::fs::write(&path, contents).unwrap();
            path
        };
        let raw = write("raw", &[7u8; 32]);
        assert_eq!(read_key_file(&raw).unwrap().as_slice(), &[7u8; 32]);
        let hex_file = write("hex", b"  000102030405060708090a0b0c0d0e0f\n");
        assert_eq!(read_key_file(&hex_file).unwrap().len(), 16);
        let short = write("short", b"0123");
        assert!(matches!(
            read_key_file(&short),
            Err(SecretError::KeyFileLength { bytes: 4, .. })
        ));
        assert!(matches!(
            read_key_file(Path::new("/nonexistent/key")),
            Err(SecretError::ReadKeyFile { .. })
        ));
    }

    #[test]
    fn hex_keys_are_checked_for_digits_and_length() {
        assert!(matches!(
            key_from_hex("0011"),
            Err(SecretError::KeyLength(2))
        ));
        let error = decode_hex("--key", "zz").unwrap_err().to_string();
        assert_eq!(
            error,
            "--key is not valid hex: 'z' at position 0 is not a hex digit"
        );
        assert!(decode_hex("--context", "abc")
            .unwrap_err()
            .to_string()
            .contains("odd number"));
    }

    #[test]
    fn passphrase_files_lose_one_line_ending_only() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("pass");
        for (contents, expected) in [
            (&b"secret\r\n"[..], &b"secret"[..]),
            (b"secret\n\n", b"secret\n"),
            (b" secret ", b" secret "),
        ] {
            std::fs::write(&path, contents).unwrap();
            assert_eq!(read_passphrase_file(&path).unwrap().as_slice(), expected);
        }
        std::fs::write(&path, b"\n").unwrap();
        assert!(matches!(
            read_passphrase_file(&path),
            Err(SecretError::EmptyPassphraseFile(_))
        ));
    }

    #[test]
    fn secret_files_are_read_up_to_the_cap_only() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("big");
        let mut largest = vec![b'x'; MAX_SECRET_FILE_BYTES];
        std::fs::write(&path, &largest).unwrap();
        assert_eq!(
            read_passphrase_file(&path).unwrap().len(),
            MAX_SECRET_FILE_BYTES
        );
        largest.push(b'\n');
        std::fs::write(&path, &largest).unwrap();
        let error = read_passphrase_file(&path).unwrap_err();
        assert!(matches!(error, SecretError::PassphraseFileTooLarge(_)));
        assert!(error.to_string().contains("64 KiB"), "{error}");
        let error = read_key_file(&path).unwrap_err();
        assert!(matches!(error, SecretError::KeyFileTooLarge(_)));
        assert!(error.to_string().contains("64 KiB"), "{error}");
        // An endless file is refused after 64 KiB + 1 bytes.
        let zero = Path::new("/dev/zero");
        assert!(matches!(
            read_passphrase_file(zero),
            Err(SecretError::PassphraseFileTooLarge(_))
        ));
        assert!(matches!(
            read_key_file(zero),
            Err(SecretError::KeyFileTooLarge(_))
        ));
    }

    #[test]
    fn short_passphrases_are_warned_about() {
        assert_eq!(
            passphrase_weakness(b"seven!!"),
            Some(crate::header::Weakness::ShortPassphrase(7))
        );
        assert_eq!(passphrase_weakness(b"eight!!!"), None);
    }
}
