//! age v1 files ([age-encryption.org/v1](https://c2sp.org/age)): public-key recipients
//! people can share, read and written at parcrypt's speed. The code is the
//! `parcrypt-age` crate; this module is its API plus whole-file calls whose destination
//! appears only when complete.
//!
//! ```
//! use parcrypt::age::{self, Identity, Recipient, X25519Identity};
//!
//! let identity = X25519Identity::generate();
//! let recipient: Recipient = identity.to_public().to_string().parse()?; // "age1..."
//! let file = age::encrypt_to_vec(&[recipient], false, b"attack at dawn")?;
//! let plaintext = age::decrypt_to_vec(&file, &[Identity::from(identity)])?;
//! assert_eq!(plaintext, b"attack at dawn");
//! # Ok::<(), parcrypt::Error>(())
//! ```
//!
//! [`Recipient`] wraps a file key into a [`Stanza`] and [`Identity`] unwraps it; they know
//! nothing of the age header around the stanzas.

use std::io::{self, Read};
use std::path::Path;

pub use parcrypt_age::{
    armor, decrypt_to_vec, encrypt, encrypt_to_vec, generate_identity_file, header, is_age,
    parse_identities, parse_recipients, stream, unwrap_file_key, Decryptor, Encryptor, FileKey,
    Header, HybridIdentity, HybridRecipient, Identity, Passphrase, Recipient, ScryptIdentity,
    ScryptRecipient, SeekableReader, Stanza, StreamReader, X25519Identity, X25519Recipient,
    DEFAULT_MAX_SCRYPT_WORK_FACTOR, DEFAULT_SCRYPT_WORK_FACTOR, MAX_KEY_FILE_BYTES,
};

use crate::files::{open_input, OutputFile};

/// Encrypts the file `source` to `recipients` into `destination` (ASCII-armored with
/// `armor`), which appears only once complete; an existing destination is replaced only
/// with `overwrite`. Returns the plaintext's length.
pub fn encrypt_file(
    source: &Path,
    destination: &Path,
    recipients: &[Recipient],
    armor: bool,
    overwrite: bool,
) -> crate::Result<u64> {
    Recipient::check_combination(recipients)?;
    let mut input = open_input(source)?;
    let mut output = OutputFile::create(destination, Some(source), overwrite)?;
    let mut writer = encrypt(recipients, armor, output.file())?;
    // Read straight into the writer's batches, the next one read while one is sealed.
    let bytes = writer.copy_from(&mut input)?;
    writer.finish()?;
    output.commit()?;
    Ok(bytes)
}

/// Decrypts the age file `source` (binary or armored) with the first of `identities` that
/// opens it into `destination`, which appears only when every chunk authenticated; a wrong
/// identity is found before the destination is made. Returns the plaintext's length.
pub fn decrypt_file(
    source: &Path,
    destination: &Path,
    identities: &[Identity],
    overwrite: bool,
) -> crate::Result<u64> {
    let input = open_input(source)?;
    let reader = Decryptor::new(input)?.decrypt(identities)?;
    let mut output = OutputFile::create(destination, Some(source), overwrite)?;
    let bytes = reader.decrypt_to(output.file())?;
    output.commit()?;
    Ok(bytes)
}

/// Reads an identity file (age-keygen's layout; at most [`MAX_KEY_FILE_BYTES`]). The
/// file's bytes are wiped once parsed.
pub fn read_identity_file(path: &Path) -> crate::Result<Vec<Identity>> {
    let text = read_key_file(path, "identity")?;
    Ok(parse_identities(&text)?)
}

/// Reads a recipients file (one `age1...` or `age1pq1...` a line, `#` comments).
pub fn read_recipients_file(path: &Path) -> crate::Result<Vec<Recipient>> {
    let text = read_key_file(path, "recipients")?;
    Ok(parse_recipients(&text)?)
}

fn read_key_file(path: &Path, what: &str) -> crate::Result<zeroize::Zeroizing<Vec<u8>>> {
    let file = std::fs::File::open(path).map_err(|error| {
        io::Error::new(
            error.kind(),
            format!(
                "cannot open {what} file '{}': {}",
                path.display(),
                crate::files::plain(&error)
            ),
        )
    })?;
    let mut text = zeroize::Zeroizing::new(Vec::new());
    file.take(MAX_KEY_FILE_BYTES as u64 + 1)
        .read_to_end(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::AgeError;

    #[test]
    fn files_appear_only_when_complete_and_authenticated() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        let sealed = dir.path().join("plain.age");
        let opened = dir.path().join("opened");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&plain, &data).unwrap();
        let identity = X25519Identity::generate();
        let recipients = [Recipient::from(identity.to_public())];
        assert_eq!(
            encrypt_file(&plain, &sealed, &recipients, false, false).unwrap(),
            data.len() as u64
        );
        // An existing destination is refused without overwrite.
        assert!(encrypt_file(&plain, &sealed, &recipients, false, false).is_err());
        // A wrong identity is found before the destination is made.
        let wrong = [Identity::from(X25519Identity::generate())];
        let error = decrypt_file(&sealed, &opened, &wrong, false).unwrap_err();
        assert!(error.is_authentication_failure(), "{error}");
        assert!(!opened.exists());
        // A damaged chunk: an error, and no destination.
        let mut damaged = std::fs::read(&sealed).unwrap();
        let middle = damaged.len() / 2;
        damaged[middle] ^= 1;
        let damaged_path = dir.path().join("damaged.age");
        std::fs::write(&damaged_path, &damaged).unwrap();
        let ids = [Identity::from(identity)];
        let error = decrypt_file(&damaged_path, &opened, &ids, false).unwrap_err();
        assert!(
            matches!(error, crate::Error::Age(AgeError::Payload(_))),
            "{error}"
        );
        assert!(!opened.exists());
        assert_eq!(
            decrypt_file(&sealed, &opened, &ids, false).unwrap(),
            data.len() as u64
        );
        assert_eq!(std::fs::read(&opened).unwrap(), data);
    }
}
