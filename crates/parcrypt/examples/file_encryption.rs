//! Encrypts and decrypts a file and a buffer through the public API of the `parcrypt`
//! crate only, and checks that what comes back is what went in.
//!
//! `cargo run -p parcrypt --example file_encryption`

use std::io::{Read, Write};

use parcrypt::secrets::key_from_hex;
use parcrypt::{batcher_for, Argon2Params, Decryptor, Encryptor, Engine, FileOptions, Format};
use parcrypt::{Secret, Setup};

/// Any failure ends the program with the error and a non-zero exit status.
fn main() -> Result<(), parcrypt::Error> {
    let key = key_from_hex("000102030405060708090a0b0c0d0e0f")?;

    // A file, in one call each way: written beside the destination, renamed only once the
    // message is whole (and, decrypting, authenticated).
    let folder = tempfile::tempdir()?;
    let plain_path = folder.path().join("report.txt");
    let sealed_path = folder.path().join("report.txt.parcrypt");
    let opened_path = folder.path().join("report.opened.txt");
    let text: Vec<u8> = (0..1_000_000u32).flat_map(|i| i.to_le_bytes()).collect();
    std::fs::write(&plain_path, &text)?;
    parcrypt::encrypt_file(&plain_path, &sealed_path, Secret::Key(&key))?;
    parcrypt::decrypt_file(&sealed_path, &opened_path, Secret::Key(&key))?;
    if std::fs::read(&opened_path)? != text {
        return Err(failure("the decrypted file differs from the original"));
    }
    println!(
        "file: {} bytes -> {} bytes sealed -> {} bytes opened",
        text.len(),
        std::fs::metadata(&sealed_path)?.len(),
        std::fs::metadata(&opened_path)?.len()
    );
    // Again over the existing file, on an engine of our own: `overwrite` replaces it.
    let engine = Engine::builder().threads(2).build()?;
    let options = FileOptions::new().engine(&engine).overwrite(true);
    options.encrypt_file(&plain_path, &sealed_path, Secret::Key(&key))?;

    // A buffer, under a passphrase (argon2id made cheap for the example), written piece by
    // piece through `Write` and read back through `Read`.
    let passphrase = b"correct horse battery staple";
    let setup = Setup {
        argon2: Argon2Params {
            memory_kib: 1024,
            passes: 1,
            lanes: 1,
        },
        ..Setup::default()
    };
    let batcher = batcher_for(&engine);
    let mut writer = Encryptor::new(&setup, Secret::Passphrase(passphrase))?
        .wrap_output(batcher.as_ref(), Vec::new())?;
    for line in text.chunks(1000) {
        writer.write_all(line)?;
    }
    let sealed = writer.finish()?;
    let decryptor = Decryptor::new(Format::Parcrypt, &sealed[..])?;
    if !decryptor.envelope().needs_passphrase() {
        return Err(failure("the envelope should ask for a passphrase"));
    }
    let mut opened = Vec::new();
    decryptor
        .unlock(Secret::Passphrase(passphrase), b"")?
        .reader(batcher.as_ref())
        .read_to_end(&mut opened)?;
    if opened != text {
        return Err(failure("the decrypted buffer differs from the original"));
    }
    println!(
        "buffer: {} bytes -> {} bytes sealed -> opened",
        text.len(),
        sealed.len()
    );
    Ok(())
}

/// A check of this example that failed, as an error.
fn failure(what: &str) -> parcrypt::Error {
    std::io::Error::other(what).into()
}
