//! The facade's file API with public-key recipients: `Secret::Recipients` to encrypt,
//! `Secret::Identities` to decrypt, through the one-call functions, `FileOptions`, the
//! streaming writer and reader, and the seekable reader; what a wrong identity gets.

use std::io::{Cursor, Read, Seek, SeekFrom, Write};

use parcrypt::age::{HybridIdentity, X25519Identity};
use parcrypt::{
    batcher_for, Backend, Decryptor, Encryptor, Engine, Error, FileOptions, Format, Identity,
    Recipient, Secret, Setup, Suite,
};

fn text() -> Vec<u8> {
    (0..200_001u32).map(|i| (i * 11 + i / 257) as u8).collect()
}

#[test]
fn files_to_recipients_open_with_any_of_their_identities() {
    let folder = tempfile::tempdir().unwrap();
    let path = |name: &str| folder.path().join(name);
    std::fs::write(path("plain"), text()).unwrap();
    let x = X25519Identity::generate();
    let y = X25519Identity::generate();
    // Recipients as people share them: their text.
    let recipients: Vec<Recipient> = [x.to_public().to_string(), y.to_public().to_string()]
        .iter()
        .map(|text| text.parse().unwrap())
        .collect();
    parcrypt::encrypt_file(
        path("plain"),
        path("sealed"),
        Secret::Recipients(&recipients),
    )
    .unwrap();
    for (n, identity) in [Identity::from(x), Identity::from(y)]
        .into_iter()
        .enumerate()
    {
        let opened = path(&format!("opened{n}"));
        parcrypt::decrypt_file(path("sealed"), &opened, Secret::Identities(&[identity])).unwrap();
        assert_eq!(std::fs::read(&opened).unwrap(), text());
    }
    // Another identity: refused as an authentication failure, and no file.
    let stranger = [Identity::from(X25519Identity::generate())];
    let error =
        parcrypt::decrypt_file(path("sealed"), path("wrong"), Secret::Identities(&stranger))
            .unwrap_err();
    assert!(error.is_authentication_failure(), "{error}");
    assert!(matches!(error, Error::File(_)));
    assert!(!path("wrong").exists());
    // A passphrase for a recipient file, recipients to decrypt: refused, no file.
    for secret in [
        Secret::Passphrase(b"correct horse"),
        Secret::Recipients(&recipients),
    ] {
        assert!(parcrypt::decrypt_file(path("sealed"), path("wrong"), secret).is_err());
        assert!(!path("wrong").exists());
    }

    // FileOptions: the suite and context apply; post-quantum recipients.
    let pq = HybridIdentity::generate();
    let engine = Engine::builder()
        .backend(Backend::Threads)
        .threads(2)
        .build()
        .unwrap();
    let options = FileOptions::new()
        .engine(&engine)
        .suite(Suite::Cobblestone256)
        .context(b"backups");
    options
        .encrypt_file(
            path("plain"),
            path("pq"),
            Secret::Recipients(&[Recipient::from(pq.to_public())]),
        )
        .unwrap();
    let sealed = std::fs::read(path("pq")).unwrap();
    assert_eq!(&sealed[..11], b"parcrypt\x02\x02\x03");
    let ids = [Identity::from(pq)];
    options
        .decrypt_file(path("pq"), path("pq.opened"), Secret::Identities(&ids))
        .unwrap();
    assert_eq!(std::fs::read(path("pq.opened")).unwrap(), text());
    let error = FileOptions::new()
        .decrypt_file(path("pq"), path("no context"), Secret::Identities(&ids))
        .unwrap_err();
    assert!(error.to_string().contains("context"), "{error}");
    assert!(!path("no context").exists());
}

#[test]
fn writers_readers_and_the_seekable_reader_take_recipients_and_identities() {
    let engine = Engine::builder().backend(Backend::Pool).build().unwrap();
    let batcher = batcher_for(&engine);
    let identity = X25519Identity::generate();
    let recipients = [Recipient::from(identity.to_public())];
    let ids = [Identity::from(identity)];
    let plain = text();
    let mut writer = Encryptor::new(&Setup::default(), Secret::Recipients(&recipients))
        .unwrap()
        .wrap_output(batcher.as_ref(), Vec::new())
        .unwrap();
    writer.write_all(&plain).unwrap();
    let sealed = writer.finish().unwrap();

    let decryptor = Decryptor::new(Format::Parcrypt, &sealed[..]).unwrap();
    assert!(decryptor.envelope().needs_identity());
    let mut read = Vec::new();
    decryptor
        .unlock(Secret::Identities(&ids), b"")
        .unwrap()
        .reader(batcher.as_ref())
        .read_to_end(&mut read)
        .unwrap();
    assert_eq!(read, plain);

    let mut seekable = Decryptor::new(Format::Parcrypt, Cursor::new(&sealed))
        .unwrap()
        .unlock(Secret::Identities(&ids), b"")
        .unwrap()
        .seekable(batcher.as_ref())
        .unwrap();
    seekable.seek(SeekFrom::Start(150_000)).unwrap();
    let mut piece = [0u8; 1000];
    seekable.read_exact(&mut piece).unwrap();
    assert_eq!(piece[..], plain[150_000..151_000]);
    assert_eq!(seekable.seek(SeekFrom::End(0)).unwrap(), plain.len() as u64);
}
