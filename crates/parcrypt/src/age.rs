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
    on_threads, parse_identities, parse_recipients, stream, unwrap_file_key, Decryptor, Encryptor,
    FileKey, Header, HybridIdentity, HybridRecipient, Identity, Passphrase, Recipient,
    ScryptIdentity, ScryptRecipient, SeekableReader, Stanza, StreamReader, Threads, X25519Identity,
    X25519Recipient, DEFAULT_MAX_SCRYPT_WORK_FACTOR, DEFAULT_SCRYPT_WORK_FACTOR,
    MAX_KEY_FILE_BYTES,
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

/// The first bytes of `input` that tell whether it is an age file ([`is_age`]): any leading
/// whitespace and then 64 bytes, at most 1,100 in all (fewer at its end). The caller keeps
/// them: from a pipe they cannot be read again.
pub fn read_prefix(input: &mut dyn Read) -> io::Result<Vec<u8>> {
    let mut prefix = Vec::with_capacity(128);
    let mut piece = [0u8; 64];
    loop {
        let start = prefix
            .iter()
            .position(|c: &u8| !c.is_ascii_whitespace())
            .unwrap_or(prefix.len());
        if prefix.len() - start >= piece.len() || prefix.len() > 1100 {
            return Ok(prefix);
        }
        match input.read(&mut piece) {
            Ok(0) => return Ok(prefix),
            Ok(n) => prefix.extend_from_slice(&piece[..n]),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
}

/// Whether the file at `path` is an age file, binary or armored, by its first bytes
/// ([`read_prefix`]). Only a regular file is looked at (a pipe's bytes would be consumed);
/// anything else, and a path that cannot be opened, is `false`, left to the reader that
/// follows to report in its own words.
pub fn is_age_file(path: &Path) -> io::Result<bool> {
    let Ok(mut file) = std::fs::File::open(path) else {
        return Ok(false);
    };
    if !file.metadata().is_ok_and(|metadata| metadata.is_file()) {
        return Ok(false);
    }
    Ok(is_age(&read_prefix(&mut file)?))
}

/// The threads an age job runs on (give them to [`on_threads`]) for a front end's backend
/// and thread count (`--backend B --threads N`, or an engine's): one for `seq`, `threads`
/// for the other CPU backends (`None`: every core). A GPU backend is refused: age's
/// ChaCha20-Poly1305 payload is sealed and opened on the CPU.
pub fn threads_for(
    backend: crate::Backend,
    threads: Option<usize>,
) -> crate::Result<Option<usize>> {
    if backend.is_gpu() {
        return Err(crate::Error::Engine(crate::errors::EngineError::Gpu {
            backend,
            reason: "age files are sealed and opened on the CPU (ChaCha20-Poly1305): use seq, \
                     threads, pool or auto"
                .into(),
        }));
    }
    Ok(match backend {
        crate::Backend::Seq => Some(1),
        _ => threads,
    })
}

/// Makes a new identity (X25519, or with `post_quantum` the ML-KEM-768 + X25519 hybrid)
/// and writes it to `path` in age-keygen's layout (`# created`, `# public key`, the secret
/// key), created with mode 0600; an existing file is refused (a key is never replaced),
/// and a file that could not be written whole is removed. Returns its recipient, the
/// public key to give to whoever encrypts.
pub fn write_identity_file(path: &Path, post_quantum: bool) -> crate::Result<Recipient> {
    use std::io::Write;
    let (text, recipient) = generate_identity_file(post_quantum);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(|error| {
        let why = if error.kind() == io::ErrorKind::AlreadyExists {
            "it already exists (a key is never replaced)".to_string()
        } else {
            crate::files::plain(&error)
        };
        io::Error::new(
            error.kind(),
            format!("cannot create '{}': {why}", path.display()),
        )
    })?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all());
    if let Err(error) = written {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(io::Error::new(
            error.kind(),
            format!(
                "cannot write '{}': {}",
                path.display(),
                crate::files::plain(&error)
            ),
        )
        .into());
    }
    Ok(recipient)
}

/// The warning an identity file deserves, as ssh gives for a private key: `Some` when
/// users other than its owner can read or write it (any group or other permission bit).
/// Front ends print it and go on.
pub fn identity_file_warning(path: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode();
        (mode & 0o077 != 0).then(|| {
            format!(
                "identity file '{}' can be read by other users (chmod 600 it)",
                path.display()
            )
        })
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Reads an identity file (age-keygen's layout; at most [`MAX_KEY_FILE_BYTES`]). The
/// file's bytes are wiped once parsed.
pub fn read_identity_file(path: &Path) -> crate::Result<Vec<Identity>> {
    let text = read_key_file(path, "identity")?;
    Ok(parse_identities(&text)?)
}

/// The text of an identity file, for a front end that hands it on as text (the C ABI's
/// `PARCRYPT_FILE_IDENTITIES`): read as [`read_identity_file`] reads it, and refused unless
/// every identity in it parses. Wiped when dropped.
pub fn read_identity_file_text(path: &Path) -> crate::Result<zeroize::Zeroizing<Vec<u8>>> {
    let text = read_key_file(path, "identity")?;
    parse_identities(&text)?;
    Ok(text)
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
    fn age_files_are_told_by_their_first_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let identity = X25519Identity::generate();
        let recipients = [Recipient::from(identity.to_public())];
        for armor in [false, true] {
            let path = dir.path().join(format!("file-{armor}.age"));
            std::fs::write(&path, encrypt_to_vec(&recipients, armor, b"data").unwrap()).unwrap();
            assert!(is_age_file(&path).unwrap());
        }
        // Armor after blank lines is found; 1,100 bytes of whitespace and then armor is not
        // looked for (the most a reader reads to tell).
        let armored = encrypt_to_vec(&recipients, true, b"data").unwrap();
        let mut spaced = b"\n\n  \n".to_vec();
        spaced.extend_from_slice(&armored);
        assert!(is_age(&read_prefix(&mut spaced.as_slice()).unwrap()));
        let mut far = vec![b' '; 1200];
        far.extend_from_slice(&armored);
        let prefix = read_prefix(&mut far.as_slice()).unwrap();
        assert!(prefix.len() <= 1164 && !is_age(&prefix));
        // Not age: a parcrypt file, an empty file, a folder, a missing path.
        let other = dir.path().join("other");
        std::fs::write(&other, b"parcrypt\x01\x01").unwrap();
        assert!(!is_age_file(&other).unwrap());
        std::fs::write(&other, b"").unwrap();
        assert!(!is_age_file(&other).unwrap());
        assert!(!is_age_file(dir.path()).unwrap());
        assert!(!is_age_file(&dir.path().join("missing")).unwrap());
    }

    #[test]
    fn age_jobs_run_on_the_cpu_threads_asked_for() {
        use crate::Backend;
        assert_eq!(threads_for(Backend::Seq, Some(4)).unwrap(), Some(1));
        assert_eq!(threads_for(Backend::Pool, Some(3)).unwrap(), Some(3));
        assert_eq!(threads_for(Backend::Auto, None).unwrap(), None);
        for gpu in [Backend::Cuda, Backend::Opencl, Backend::Hip] {
            let error = threads_for(gpu, None).unwrap_err();
            assert!(error.to_string().contains("on the CPU"), "{error}");
        }
    }

    #[test]
    fn identity_files_are_private_and_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        for post_quantum in [false, true] {
            let path = dir.path().join(format!("key-{post_quantum}.txt"));
            let recipient = write_identity_file(&path, post_quantum).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.contains(&format!("# public key: {recipient}\n")));
            let identities = read_identity_file(&path).unwrap();
            assert_eq!(*read_identity_file_text(&path).unwrap(), text.as_bytes());
            assert_eq!(identities.len(), 1);
            assert_eq!(
                identities[0].to_public().unwrap().to_string(),
                recipient.to_string()
            );
            assert_eq!(identity_file_warning(&path), None);
            // A second keygen to the same path is refused and leaves the key alone.
            let error = write_identity_file(&path, post_quantum).unwrap_err();
            assert!(error.to_string().contains("already exists"), "{error}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&path).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o600);
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
                let warning = identity_file_warning(&path).unwrap();
                assert!(warning.contains("chmod 600"), "{warning}");
            }
        }
        // A directory that does not exist: an error naming the path, nothing made.
        let missing = dir.path().join("no/such/dir/key.txt");
        let error = write_identity_file(&missing, false).unwrap_err();
        assert!(error.to_string().contains("cannot create"), "{error}");
    }

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
