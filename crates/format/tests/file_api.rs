//! The file API against the whole-message functions: round trips at chunk boundaries,
//! random access, damage, truncation, a writer never finished, and files left behind.

#[path = "support/messages.rs"]
mod messages;

use std::io::{Cursor, Read, Seek, SeekFrom, Write};
use std::path::Path;

use messages::{whole_message, CHEAP, KEY};
use parcrypt_engine::{Backend, Direction, Engine};
use parcrypt_format::cobblestone::{CHUNK_BYTES, SEALED_CHUNK_BYTES};
use parcrypt_format::file::{encrypt_file, FileOptions};
use parcrypt_format::{
    CpuChunks, Decryptor, Encryptor, Format, FormatError, Salts, Secret, SeekableReader, Setup,
    StreamOptions,
};
use rand::{RngExt, SeedableRng};

const ENVELOPE: usize = 40 + 56;

fn engine() -> Engine {
    Engine::new(Backend::Pool, Some(2)).unwrap()
}

fn data(length: usize) -> Vec<u8> {
    (0..length).map(|i| (i * 7 + i / 251) as u8).collect()
}

fn fixed_salts() -> Salts {
    Salts {
        cobblestone: [1; 24],
        argon2: [2; 16],
    }
}

/// Small batches, so that a few chunks already span several of them.
fn small_batches() -> StreamOptions<'static> {
    StreamOptions {
        batch_chunks: 2,
        ..StreamOptions::default()
    }
}

/// The message for `plain` as the whole-message function writes it.
fn sealed_by_encrypt(batcher: &CpuChunks<'_>, plain: &[u8]) -> Vec<u8> {
    let mut sealed = Vec::new();
    let encryptor = Encryptor::with_salts(&Setup::default(), Secret::Key(&KEY), fixed_salts());
    encryptor
        .unwrap()
        .encrypt_stream(batcher, &mut &plain[..], &mut sealed, &small_batches())
        .unwrap();
    sealed
}

/// A plaintext of `length` bytes and its message as [`sealed_by_encrypt`] writes it.
fn plain_and_sealed(batcher: &CpuChunks<'_>, length: usize) -> (Vec<u8>, Vec<u8>) {
    let plain = data(length);
    let sealed = sealed_by_encrypt(batcher, &plain);
    (plain, sealed)
}

/// Writes `plain` through the `Write` adapter in pieces of `piece` bytes.
fn sealed_by_writer(batcher: &CpuChunks<'_>, plain: &[u8], piece: usize) -> Vec<u8> {
    let encryptor =
        Encryptor::with_salts(&Setup::default(), Secret::Key(&KEY), fixed_salts()).unwrap();
    let mut writer = encryptor.wrap_output(batcher, Vec::new()).unwrap();
    for part in plain.chunks(piece.max(1)) {
        writer.write_all(part).unwrap();
    }
    writer.finish().unwrap()
}

fn read_all(batcher: &CpuChunks<'_>, sealed: &[u8]) -> (Vec<u8>, Option<std::io::Error>) {
    let decryptor = Decryptor::new(Format::Parcrypt, sealed).unwrap();
    let mut reader = decryptor
        .unlock(Secret::Key(&KEY), b"")
        .unwrap()
        .reader(batcher);
    let mut plain = Vec::new();
    let mut piece = [0u8; 5000];
    loop {
        match reader.read(&mut piece) {
            Ok(0) => return (plain, None),
            Ok(read) => plain.extend_from_slice(&piece[..read]),
            Err(error) => return (plain, Some(error)),
        }
    }
}

/// `sealed` (a parcrypt message under [`KEY`]) unlocked, as a seekable reader on `batcher`.
fn seekable<'b>(
    batcher: &'b CpuChunks<'_>,
    sealed: &'b [u8],
) -> Result<SeekableReader<'b, Cursor<&'b [u8]>>, FormatError> {
    Decryptor::new(Format::Parcrypt, Cursor::new(sealed))
        .unwrap()
        .unlock(Secret::Key(&KEY), b"")
        .unwrap()
        .seekable(batcher)
}

#[test]
fn the_writer_and_reader_round_trip_at_chunk_boundaries_and_match_encrypt() {
    let engine = engine();
    let batcher = CpuChunks::new(&engine);
    for length in [
        0,
        1,
        CHUNK_BYTES - 1,
        CHUNK_BYTES,
        CHUNK_BYTES + 1,
        5 * CHUNK_BYTES + 123,
    ] {
        let plain = data(length);
        let expected = sealed_by_encrypt(&batcher, &plain);
        // The library's own whole-message function gives the same bytes.
        let setup = Setup::default();
        let (envelope, _) =
            parcrypt_format::Envelope::create_with_salts(&setup, Secret::Key(&KEY), fixed_salts())
                .unwrap();
        assert_eq!(&expected[..envelope.len()], &envelope.to_bytes()[..]);
        for piece in [1000, CHUNK_BYTES, 3 * CHUNK_BYTES + 5] {
            let sealed = sealed_by_writer(&batcher, &plain, piece);
            assert!(sealed == expected, "length {length}, pieces of {piece}");
        }
        let (opened, error) = read_all(&batcher, &expected);
        assert!(error.is_none(), "length {length}: {error:?}");
        assert!(opened == plain, "length {length}");
        let whole = whole_message(
            Direction::Decrypt,
            &batcher,
            &expected,
            &StreamOptions::default(),
        );
        assert!(whole == plain);
    }
}

#[test]
fn random_encryptions_differ_but_open_the_same() {
    let engine = engine();
    let batcher = CpuChunks::new(&engine);
    let plain = data(40_000);
    let first = whole_message(
        Direction::Encrypt,
        &batcher,
        &plain,
        &StreamOptions::default(),
    );
    let encryptor = Encryptor::new(&Setup::default(), Secret::Key(&KEY)).unwrap();
    let mut writer = encryptor.wrap_output(&batcher, Vec::new()).unwrap();
    writer.write_all(&plain).unwrap();
    let second = writer.finish().unwrap();
    assert_ne!(first, second);
    assert!(read_all(&batcher, &first).0 == plain);
    assert!(read_all(&batcher, &second).0 == plain);
}

#[test]
fn a_tampered_chunk_is_an_error_and_none_of_its_bytes_are_read() {
    let engine = engine();
    let batcher = CpuChunks::new(&engine);
    let (plain, mut sealed) = plain_and_sealed(&batcher, 6 * CHUNK_BYTES + 100);
    // Damage chunk 3.
    sealed[ENVELOPE + 3 * SEALED_CHUNK_BYTES + 10] ^= 1;
    let (opened, error) = read_all(&batcher, &sealed);
    let error = error.expect("a damaged chunk must fail");
    let inner = error
        .get_ref()
        .and_then(|e| e.downcast_ref::<FormatError>());
    assert!(matches!(
        inner,
        Some(FormatError::DamagedChunk { index: 3, .. })
    ));
    assert!(opened.len() <= 3 * CHUNK_BYTES);
    assert!(opened == plain[..opened.len()]);

    // The seekable reader refuses the chunk, and still reads the others.
    let mut reader = seekable(&batcher, &sealed).unwrap();
    let mut piece = vec![0u8; 100];
    reader
        .seek(SeekFrom::Start(3 * CHUNK_BYTES as u64 + 50))
        .unwrap();
    assert!(reader.read(&mut piece).is_err());
    reader
        .seek(SeekFrom::Start(5 * CHUNK_BYTES as u64))
        .unwrap();
    reader.read_exact(&mut piece).unwrap();
    assert!(piece == plain[5 * CHUNK_BYTES..5 * CHUNK_BYTES + 100]);
}

#[test]
fn a_truncated_message_is_an_error_after_its_authenticated_chunks() {
    let engine = engine();
    let batcher = CpuChunks::new(&engine);
    let (plain, sealed) = plain_and_sealed(&batcher, 4 * CHUNK_BYTES + 500);
    for cut in [
        ENVELOPE + 2 * SEALED_CHUNK_BYTES,
        ENVELOPE + 2 * SEALED_CHUNK_BYTES + 8,
        ENVELOPE + 4 * SEALED_CHUNK_BYTES,
        sealed.len() - 1,
    ] {
        let (opened, error) = read_all(&batcher, &sealed[..cut]);
        assert!(error.is_some(), "cut at {cut} went unnoticed");
        assert!(opened == plain[..opened.len()]);
        // A cut file has no trustworthy length: seeking from the end fails.
        if let Ok(mut reader) = seekable(&batcher, &sealed[..cut]) {
            assert!(reader.seek(SeekFrom::End(0)).is_err(), "cut at {cut}");
        }
    }
}

#[test]
fn a_writer_never_finished_leaves_no_valid_message() {
    let engine = engine();
    let batcher = CpuChunks::new(&engine);
    for length in [0, 100, 3 * CHUNK_BYTES, 40 * CHUNK_BYTES + 7] {
        let mut sink = Vec::new();
        {
            let encryptor = Encryptor::new(&Setup::default(), Secret::Key(&KEY)).unwrap();
            let mut writer = encryptor.wrap_output(&batcher, &mut sink).unwrap();
            writer.write_all(&data(length)).unwrap();
            writer.flush().unwrap();
        }
        let (_, error) = read_all(&batcher, &sink);
        assert!(
            error.is_some(),
            "length {length}: an unfinished message opened"
        );
    }
}

#[test]
fn the_seekable_reader_matches_the_plaintext_anywhere() {
    let engine = engine();
    let batcher = CpuChunks::new(&engine);
    let (plain, sealed) = plain_and_sealed(&batcher, 9 * CHUNK_BYTES + 4321);
    let mut reader = seekable(&batcher, &sealed).unwrap();
    let length = plain.len() as u64;
    assert_eq!(reader.plaintext_len().unwrap(), length);
    let mut random = rand::rngs::StdRng::seed_from_u64(12);
    for _ in 0..200 {
        let start = random.random_range(0..length + 100);
        let wanted = random.random_range(0..3 * CHUNK_BYTES);
        let from = if random.random_bool(0.5) {
            reader.seek(SeekFrom::Start(start)).unwrap()
        } else {
            let back = length as i64 - start as i64;
            reader.seek(SeekFrom::End(-back)).unwrap()
        };
        assert_eq!(from, start);
        let mut got = Vec::new();
        (&mut reader)
            .take(wanted as u64)
            .read_to_end(&mut got)
            .unwrap();
        let begin = (start as usize).min(plain.len());
        let end = (start as usize + wanted).min(plain.len());
        assert!(got == plain[begin..end], "{start} + {wanted}");
        assert_eq!(reader.stream_position().unwrap(), start + got.len() as u64);
    }
    reader.rewind().unwrap();
    let mut everything = Vec::new();
    reader.read_to_end(&mut everything).unwrap();
    assert!(everything == plain);
    assert!(reader
        .seek(SeekFrom::Current(-(length as i64) - 1))
        .is_err());
}

#[test]
fn encrypt_file_leaves_no_file_when_it_fails() {
    let engine = engine();
    let batcher = CpuChunks::new(&engine);
    let folder = tempfile::tempdir().unwrap();
    let source = folder.path().join("plain");
    std::fs::write(&source, data(50_000)).unwrap();
    let options = FileOptions::default();
    let listing = || {
        let mut names: Vec<_> = std::fs::read_dir(folder.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    // A missing source, a bare Cobblestone message under a passphrase, the source itself
    // as the destination, an existing destination: each refused, nothing new left behind.
    let before = listing();
    let destination = folder.path().join("sealed");
    let missing = folder.path().join("missing");
    let setup = Setup::default();
    // Under the key, with the default setup.
    let seal = |source: &Path, destination: &Path, options: &FileOptions<'_>| {
        encrypt_file(
            &batcher,
            &setup,
            Secret::Key(&KEY),
            source,
            destination,
            options,
        )
    };
    assert!(seal(&missing, &destination, &options).is_err());
    let bare = Setup {
        format: Format::Cobblestone,
        ..Setup::default()
    };
    let passphrase = Secret::Passphrase(b"x");
    assert!(encrypt_file(&batcher, &bare, passphrase, &source, &destination, &options).is_err());
    let replace = FileOptions {
        overwrite: true,
        ..FileOptions::default()
    };
    assert!(matches!(
        seal(&source, &source, &replace),
        Err(FormatError::OutputIsInput(_))
    ));
    assert_eq!(listing(), before);
    // A folder is no source.
    let folder_source = folder.path().join("a folder");
    std::fs::create_dir(&folder_source).unwrap();
    let before = listing();
    assert!(seal(&folder_source, &destination, &options).is_err());
    assert_eq!(listing(), before);
    seal(&source, &destination, &options).unwrap();
    assert!(matches!(
        seal(&source, &destination, &options),
        Err(FormatError::OutputExists(_))
    ));
}

/// `decrypt_file` keeps the decryption budget for key derivation: a header asking for more
/// argon2id memory than [`KdfLimits::DEFAULT`] is refused before any work and leaves nothing,
/// and the same file goes on to key derivation once the caller raises the budget.
#[test]
fn decrypt_file_refuses_costly_headers_unless_the_budget_is_raised() {
    use parcrypt_format::file::decrypt_file;
    use parcrypt_format::KdfLimits;
    let folder = tempfile::tempdir().unwrap();
    let (source, sealed, opened) = (
        folder.path().join("plain"),
        folder.path().join("sealed"),
        folder.path().join("opened"),
    );
    std::fs::write(&source, data(1000)).unwrap();
    let engine = engine();
    let batcher = CpuChunks::new(&engine);
    let setup = Setup {
        argon2: CHEAP,
        ..Setup::default()
    };
    let passphrase = Secret::Passphrase(b"correct horse");
    let options = FileOptions::default();
    encrypt_file(&batcher, &setup, passphrase, &source, &sealed, &options).unwrap();
    // 300 MiB: over the default budget (256 MiB), within the format's limits.
    let mut bytes = std::fs::read(&sealed).unwrap();
    bytes[12..16].copy_from_slice(&(300u32 * 1024).to_be_bytes());
    std::fs::write(&sealed, &bytes).unwrap();
    let open = |options: &FileOptions<'_>| {
        decrypt_file(
            &batcher,
            Format::Parcrypt,
            passphrase,
            b"",
            &sealed,
            &opened,
            options,
        )
    };
    let refused = open(&options).unwrap_err();
    assert!(
        matches!(refused, FormatError::KdfBudget { asked, .. } if asked == 300 * 1024),
        "{refused}"
    );
    assert!(!opened.exists());
    let raised = FileOptions {
        kdf_limits: KdfLimits {
            max_memory_kib: 512 * 1024,
            ..KdfLimits::DEFAULT
        },
        ..FileOptions::default()
    };
    // The header is bound into the key derivation, so the edited file derives other keys:
    // refused as a wrong secret, after the work the raised budget allowed.
    let error = open(&raised).unwrap_err();
    assert!(!matches!(error, FormatError::KdfBudget { .. }), "{error}");
    assert!(!opened.exists());
}
