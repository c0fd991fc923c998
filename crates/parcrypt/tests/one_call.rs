//! The one-call file API (`parcrypt::encrypt_file`, `decrypt_file`, `FileOptions`): what a
//! program gets from the obvious call, and what it is refused.

#[path = "../../../tests/support/process.rs"]
mod process;

use std::path::PathBuf;

use parcrypt::{Argon2Params, Backend, Engine, Error, FileOptions, Secret, Suite};
use process::names;
use tempfile::TempDir;

const KEY: [u8; 16] = [0x11; 16];

/// Argon2id made cheap: these tests check the file handling, not the key derivation's cost.
fn cheap() -> FileOptions {
    FileOptions::new().argon2(Argon2Params {
        memory_kib: 256,
        passes: 1,
        lanes: 1,
    })
}

/// A new folder holding a plaintext of a few chunks and a partial one (`plain`, whose
/// bytes are `text`), and the paths a test seals it to and opens it back to.
struct Files {
    folder: TempDir,
    plain: PathBuf,
    text: Vec<u8>,
    sealed: PathBuf,
    opened: PathBuf,
}

fn files() -> Files {
    let folder = tempfile::tempdir().unwrap();
    let text: Vec<u8> = (0..100_003u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let plain = folder.path().join("plain.bin");
    std::fs::write(&plain, &text).unwrap();
    Files {
        sealed: folder.path().join("plain.bin.pc"),
        opened: folder.path().join("opened.bin"),
        folder,
        plain,
        text,
    }
}

/// [`files`], with `plain` sealed under [`KEY`] by the default options.
fn sealed_files() -> Files {
    let files = files();
    parcrypt::encrypt_file(&files.plain, &files.sealed, Secret::Key(&KEY)).unwrap();
    files
}

#[test]
fn a_key_round_trips_with_the_default_options() {
    let files = files();

    let written = parcrypt::encrypt_file(&files.plain, &files.sealed, Secret::Key(&KEY)).unwrap();
    assert_eq!(written, files.text.len() as u64);
    let ciphertext = std::fs::read(&files.sealed).unwrap();
    assert!(ciphertext.len() > files.text.len());
    assert!(!ciphertext
        .windows(64)
        .any(|window| window == &files.text[..64]));

    let read = parcrypt::decrypt_file(&files.sealed, &files.opened, Secret::Key(&KEY)).unwrap();
    assert_eq!(read, files.text.len() as u64);
    assert_eq!(std::fs::read(&files.opened).unwrap(), files.text);
}

#[test]
fn a_passphrase_and_a_context_round_trip_through_options() {
    let files = files();
    let passphrase = Secret::Passphrase(b"correct horse battery staple");
    let options = cheap().context(b"project x");

    options
        .encrypt_file(&files.plain, &files.sealed, passphrase)
        .unwrap();
    // Another context derives other keys: refused as a wrong secret, nothing written.
    let other = cheap().context(b"project y");
    let refused = other
        .decrypt_file(&files.sealed, &files.opened, passphrase)
        .unwrap_err();
    assert!(refused.is_authentication_failure(), "{refused}");
    assert!(!files.opened.exists());

    options
        .decrypt_file(&files.sealed, &files.opened, passphrase)
        .unwrap();
    assert_eq!(std::fs::read(&files.opened).unwrap(), files.text);
}

#[test]
fn a_wrong_key_is_refused_and_leaves_no_file() {
    let files = sealed_files();
    let before = names(files.folder.path());

    let error =
        parcrypt::decrypt_file(&files.sealed, &files.opened, Secret::Key(&[0x12; 16])).unwrap_err();
    assert!(matches!(error, Error::File(_)), "{error:?}");
    assert!(error.is_authentication_failure(), "{error}");
    assert_eq!(names(files.folder.path()), before);

    // A passphrase for a key file is refused too, and says which secret the file needs.
    let error = parcrypt::decrypt_file(&files.sealed, &files.opened, Secret::Passphrase(b"guess"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("key"), "{error}");
    assert_eq!(names(files.folder.path()), before);
}

#[test]
fn an_existing_destination_is_refused_unless_overwrite() {
    let files = files();
    std::fs::write(&files.sealed, b"keep me").unwrap();

    let error = parcrypt::encrypt_file(&files.plain, &files.sealed, Secret::Key(&KEY)).unwrap_err();
    assert!(error.to_string().contains("exists"), "{error}");
    assert_eq!(std::fs::read(&files.sealed).unwrap(), b"keep me");

    let overwrite = FileOptions::new().overwrite(true);
    assert!(overwrite.overwrites());
    overwrite
        .encrypt_file(&files.plain, &files.sealed, Secret::Key(&KEY))
        .unwrap();
    assert_ne!(std::fs::read(&files.sealed).unwrap(), b"keep me");

    // Decryption refuses an existing destination the same way.
    std::fs::write(&files.opened, b"keep me too").unwrap();
    assert!(parcrypt::decrypt_file(&files.sealed, &files.opened, Secret::Key(&KEY)).is_err());
    assert_eq!(std::fs::read(&files.opened).unwrap(), b"keep me too");
    overwrite
        .decrypt_file(&files.sealed, &files.opened, Secret::Key(&KEY))
        .unwrap();
    assert_eq!(std::fs::read(&files.opened).unwrap(), files.text);

    // Overwriting never means writing over the source.
    let error = overwrite
        .encrypt_file(&files.plain, &files.plain, Secret::Key(&KEY))
        .unwrap_err();
    assert!(matches!(error, Error::File(_)), "{error:?}");
    assert_eq!(std::fs::read(&files.plain).unwrap(), files.text);
}

#[test]
#[allow(deprecated)]
fn the_old_replace_name_still_overwrites() {
    assert!(FileOptions::new().replace(true).overwrites());
    assert!(!FileOptions::new().overwrites());
    let shown = format!("{:?}", FileOptions::new().replace(true));
    assert!(shown.contains("overwrite: true"), "{shown}");
}

#[test]
fn a_tampered_file_is_refused_and_leaves_no_file() {
    let files = sealed_files();
    let original = std::fs::read(&files.sealed).unwrap();

    // One bit in the middle of a chunk, the last byte (the final tag), and a truncation.
    let middle = original.len() / 2;
    let mut flipped = original.clone();
    flipped[middle] ^= 0x01;
    let mut last = original.clone();
    *last.last_mut().unwrap() ^= 0x80;
    let truncated = original[..original.len() - 100].to_vec();
    for damaged in [flipped, last, truncated] {
        std::fs::write(&files.sealed, &damaged).unwrap();
        let before = names(files.folder.path());
        let error =
            parcrypt::decrypt_file(&files.sealed, &files.opened, Secret::Key(&KEY)).unwrap_err();
        assert!(error.is_authentication_failure(), "{error}");
        assert_eq!(names(files.folder.path()), before);
    }
}

#[test]
fn an_engine_is_cheap_to_clone_and_every_clone_works() {
    fn shared<T: Clone + Send + Sync + 'static>() {}
    shared::<Engine>();

    let Files {
        folder,
        plain,
        text,
        ..
    } = files();
    let engine = Engine::builder()
        .backend(Backend::Pool)
        .threads(2)
        .build()
        .unwrap();
    let clones: Vec<Engine> = (0..4).map(|_| engine.clone()).collect();
    drop(engine);
    std::thread::scope(|scope| {
        for (index, engine) in clones.into_iter().enumerate() {
            let (plain, text) = (&plain, &text);
            let folder = folder.path();
            scope.spawn(move || {
                assert_eq!((engine.backend(), engine.threads()), (Backend::Pool, 2));
                let options = FileOptions::new()
                    .engine(&engine)
                    .suite(Suite::Cobblestone256);
                let sealed = folder.join(format!("sealed-{index}"));
                let opened = folder.join(format!("opened-{index}"));
                let key = [index as u8; 32];
                options
                    .encrypt_file(plain, &sealed, Secret::Key(&key))
                    .unwrap();
                options
                    .decrypt_file(&sealed, &opened, Secret::Key(&key))
                    .unwrap();
                assert_eq!(&std::fs::read(&opened).unwrap(), text);
            });
        }
    });
}

#[test]
fn a_key_of_the_wrong_length_for_the_suite_is_refused_before_writing() {
    let files = files();
    let before = names(files.folder.path());
    let error = FileOptions::new()
        .suite(Suite::Cobblestone256)
        .encrypt_file(&files.plain, &files.sealed, Secret::Key(&KEY))
        .unwrap_err();
    assert!(matches!(error, Error::File(_)), "{error:?}");
    assert!(!error.is_authentication_failure());
    assert_eq!(names(files.folder.path()), before);
}
