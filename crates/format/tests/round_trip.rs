//! Whole messages through the library: round trips at the sizes where chunking changes,
//! every backend giving identical files, streaming through awkward readers, random access,
//! and every kind of damage refused with nothing from a bad chunk released.
// Tests print what they ran and skipped to stderr, where libtest captures it.
#![allow(clippy::disallowed_macros)]

#[path = "support/messages.rs"]
mod messages;
#[path = "../../engine/tests/support/io.rs"]
mod test_io;

use std::io::{self, Cursor, Read, Write};

use messages::{whole_message, CHEAP};
use parcrypt_engine::{Backend, Direction, Engine};
use parcrypt_format::cobblestone::{CHUNK_BYTES, SEALED_CHUNK_BYTES, TAG_BYTES};
use parcrypt_format::stream::{decrypt_chunks, encrypt_chunks};
use parcrypt_format::{
    decrypt, encrypt, ByteRange, CpuChunks, Decryptor, Envelope, Format, FormatError, Salts,
    Secret, Setup, StreamOptions, Suite,
};
use test_io::{Broken, Failing, Trickle};

const KEY_128: [u8; 16] = messages::KEY;
const KEY_256: [u8; 32] = [0x24; 32];
const SALTS: Salts = Salts {
    cobblestone: [7; 24],
    argon2: [9; 16],
};

fn plaintext(length: usize) -> Vec<u8> {
    (0..length)
        .map(|i| (i as u32).wrapping_mul(2654435761).rotate_left(7) as u8)
        .collect()
}

fn seal(
    engine: &Engine,
    setup: &Setup<'_>,
    secret: Secret<'_>,
    message: &[u8],
    batch_chunks: usize,
) -> Vec<u8> {
    let (envelope, keys) = Envelope::create_with_salts(setup, secret, SALTS).unwrap();
    let mut sealed = envelope.to_bytes();
    let options = StreamOptions::with_batch_chunks(batch_chunks);
    let written = encrypt_chunks(
        &CpuChunks::new(engine),
        &keys,
        &mut Trickle {
            data: message,
            step: 5000,
        },
        &mut sealed,
        &options,
    )
    .unwrap();
    assert_eq!(written, message.len() as u64);
    sealed
}

fn open(
    engine: &Engine,
    format: Format,
    secret: Secret<'_>,
    context: &[u8],
    sealed: &[u8],
    batch_chunks: usize,
) -> (Vec<u8>, Result<u64, FormatError>) {
    let mut output = Vec::new();
    let options = StreamOptions::with_batch_chunks(batch_chunks);
    let result = decrypt(
        &CpuChunks::new(engine),
        format,
        secret,
        context,
        &mut Trickle {
            data: sealed,
            step: 7777,
        },
        &mut output,
        &options,
    );
    (output, result)
}

fn engines() -> Vec<Engine> {
    Backend::CPU
        .iter()
        .map(|&backend| Engine::new(backend, Some(3)).unwrap())
        .collect()
}

#[test]
fn round_trips_at_chunk_boundaries_on_every_backend_with_identical_files() {
    let engines = engines();
    let sizes = [
        0usize,
        1,
        15,
        16,
        CHUNK_BYTES - 1,
        CHUNK_BYTES,
        CHUNK_BYTES + 1,
        2 * CHUNK_BYTES,
        5 * CHUNK_BYTES + 7,
        9 * CHUNK_BYTES,
    ];
    let (key_128, key_256) = (Secret::Key(&KEY_128), Secret::Key(&KEY_256));
    let cases: [(Format, Suite, Secret<'_>); 5] = [
        (Format::Parcrypt, Suite::Cobblestone128, key_128),
        (Format::Parcrypt, Suite::Cobblestone256, key_256),
        (Format::Cobblestone, Suite::Cobblestone128, key_128),
        (Format::Cobblestone, Suite::Cobblestone256, key_256),
        (
            Format::Parcrypt,
            Suite::Cobblestone256,
            Secret::Passphrase(b"correct horse battery staple"),
        ),
    ];
    for (format, suite, secret) in cases {
        let setup = Setup {
            format,
            suite,
            context: b"round trip",
            argon2: CHEAP,
        };
        for length in sizes {
            let message = plaintext(length);
            let mut files = Vec::new();
            for engine in &engines {
                for batch_chunks in [1usize, 2, 4, 1024] {
                    let sealed = seal(engine, &setup, secret, &message, batch_chunks);
                    let (output, result) =
                        open(engine, format, secret, b"round trip", &sealed, batch_chunks);
                    let context = format!(
                        "{format:?} {suite} {length} bytes, {} batches of {batch_chunks}",
                        engine.backend()
                    );
                    assert_eq!(
                        result.unwrap_or_else(|e| panic!("{context}: {e}")),
                        length as u64,
                        "{context}"
                    );
                    assert!(output == message, "{context}: round trip differs");
                    files.push(sealed);
                }
            }
            assert!(
                files.windows(2).all(|pair| pair[0] == pair[1]),
                "{format:?} {suite} {length}: backends disagree"
            );
            let header = if format == Format::Parcrypt { 40 } else { 0 };
            let expected = header + 56 + length + (length / CHUNK_BYTES + 1) * TAG_BYTES;
            assert_eq!(files[0].len(), expected, "{format:?} {length}: overhead");
        }
    }
}

#[test]
fn random_salts_make_every_file_different() {
    let engine = Engine::new(Backend::Seq, None).unwrap();
    let batcher = CpuChunks::new(&engine);
    let setup = Setup {
        argon2: CHEAP,
        ..Setup::default()
    };
    let mut files = Vec::new();
    for _ in 0..2 {
        let mut sealed = Vec::new();
        encrypt(
            &batcher,
            &setup,
            Secret::Key(&KEY_128),
            &mut &b"same message"[..],
            &mut sealed,
            &StreamOptions::default(),
        )
        .unwrap();
        files.push(sealed);
    }
    assert_ne!(files[0], files[1]);
}

/// A message of 4 full chunks and a short final one, sealed with a key.
fn damaged_fixture() -> (Vec<u8>, Vec<u8>, usize) {
    let engine = Engine::new(Backend::Seq, None).unwrap();
    let message = plaintext(4 * CHUNK_BYTES + 1000);
    let setup = Setup {
        format: Format::Parcrypt,
        context: b"ctx",
        ..Setup::default()
    };
    let sealed = seal(&engine, &setup, Secret::Key(&KEY_128), &message, 2);
    (message, sealed, 40 + 56)
}

/// Decrypts with the fixture's key on every batch size; asserts refusal and that the output
/// holds exactly the chunks before `first_bad` (those authenticated), and returns the error.
fn assert_refused(sealed: &[u8], message: &[u8], first_bad: u64, what: &str) -> FormatError {
    let engine = Engine::new(Backend::Pool, Some(3)).unwrap();
    let mut last_error = None;
    for batch_chunks in [1usize, 2, 3, 1024] {
        let (output, result) = open(
            &engine,
            Format::Parcrypt,
            Secret::Key(&KEY_128),
            b"ctx",
            sealed,
            batch_chunks,
        );
        let error = match result {
            Ok(_) => panic!("{what}: accepted (batches of {batch_chunks})"),
            Err(error) => error,
        };
        let released = (first_bad as usize * CHUNK_BYTES).min(message.len());
        assert!(
            output.len() <= released,
            "{what}: released {} bytes, only {released} authenticated",
            output.len()
        );
        assert_eq!(&output[..], &message[..output.len()], "{what}");
        if batch_chunks == 1 {
            assert_eq!(
                output.len(),
                released,
                "{what}: authenticated chunks were held back"
            );
        }
        last_error = Some(error);
    }
    last_error.unwrap()
}

#[test]
fn a_flipped_bit_anywhere_is_refused_and_named() {
    let (message, sealed, body) = damaged_fixture();
    // The parcrypt header, the salt, the commitment: refused before any chunk.
    for position in 0..body {
        let mut damaged = sealed.clone();
        damaged[position] ^= 0x10;
        let error = assert_refused(&damaged, &message, 0, &format!("header byte {position}"));
        assert!(
            matches!(
                error,
                FormatError::WrongKey
                    | FormatError::NotParcrypt
                    | FormatError::DamagedHeader(_)
                    | FormatError::UnsupportedVersion(_)
                    | FormatError::KdfLimits(_)
            ),
            "header byte {position}: {error}"
        );
    }
    // Chunk bodies and tags: the damaged chunk is named.
    let chunks = (sealed.len() - body).div_ceil(SEALED_CHUNK_BYTES);
    for chunk in 0..chunks {
        let start = body + chunk * SEALED_CHUNK_BYTES;
        let end = (start + SEALED_CHUNK_BYTES).min(sealed.len());
        for position in [
            start,
            start + 1000,
            end - TAG_BYTES - 1,
            end - TAG_BYTES,
            end - 1,
        ] {
            let mut damaged = sealed.clone();
            damaged[position] ^= 0x01;
            let error = assert_refused(
                &damaged,
                &message,
                chunk as u64,
                &format!("chunk {chunk} byte {position}"),
            );
            assert!(
                matches!(error, FormatError::DamagedChunk { index, .. } if index == chunk as u64),
                "{error}"
            );
            assert!(
                error.to_string().contains(&format!("chunk {chunk} ")),
                "{error}"
            );
        }
    }
}

#[test]
fn truncation_reordering_duplication_and_trailing_data_are_refused() {
    let (message, sealed, body) = damaged_fixture();
    let chunk = |index: usize| {
        &sealed[body + index * SEALED_CHUNK_BYTES
            ..(body + (index + 1) * SEALED_CHUNK_BYTES).min(sealed.len())]
    };

    // Cut at every chunk boundary: the final short chunk is missing.
    for kept in 0..5usize {
        let cut = &sealed[..body + kept * SEALED_CHUNK_BYTES];
        let error = assert_refused(
            cut,
            &message,
            kept as u64,
            &format!("cut after {kept} chunks"),
        );
        assert!(
            matches!(error, FormatError::TruncatedAfter { chunks } if chunks == kept as u64),
            "{error}"
        );
        let text = error.to_string();
        assert!(text.contains("truncated"), "{text}");
        if kept > 0 {
            assert!(
                text.contains(&format!("after chunk {}", kept - 1)),
                "{text}"
            );
        }
    }
    // Cut inside a chunk, inside a tag, and leaving less than a tag.
    for cut in [
        body + 5,
        body + 15,
        body + SEALED_CHUNK_BYTES + 100,
        body + 2 * SEALED_CHUNK_BYTES - 3,
        sealed.len() - 1,
        sealed.len() - 17,
    ] {
        let bad_chunk = ((cut - body) / SEALED_CHUNK_BYTES) as u64;
        let error = assert_refused(
            &sealed[..cut],
            &message,
            bad_chunk,
            &format!("cut at {cut}"),
        );
        assert!(
            matches!(
                error,
                FormatError::DamagedChunk { .. } | FormatError::TruncatedChunk { .. }
            ),
            "cut at {cut}: {error}"
        );
    }
    // Chunks swapped, duplicated, dropped.
    let mut swapped = sealed[..body].to_vec();
    for index in [1, 0, 2, 3, 4] {
        swapped.extend_from_slice(chunk(index));
    }
    assert!(matches!(
        assert_refused(&swapped, &message, 0, "swapped"),
        FormatError::DamagedChunk { index: 0, .. }
    ));
    let mut duplicated = sealed[..body].to_vec();
    for index in [0, 1, 1, 2, 3, 4] {
        duplicated.extend_from_slice(chunk(index));
    }
    assert!(matches!(
        assert_refused(&duplicated, &message, 2, "duplicated"),
        FormatError::DamagedChunk { index: 2, .. }
    ));
    let mut dropped = sealed[..body].to_vec();
    for index in [0, 1, 3, 4] {
        dropped.extend_from_slice(chunk(index));
    }
    assert!(matches!(
        assert_refused(&dropped, &message, 2, "dropped"),
        FormatError::DamagedChunk { index: 2, .. }
    ));
    // Trailing data: a byte, a tag's worth, a whole chunk, and a valid chunk of the message.
    for extra in [
        vec![0u8],
        vec![0u8; 16],
        vec![0u8; SEALED_CHUNK_BYTES],
        chunk(0).to_vec(),
    ] {
        let mut extended = sealed.clone();
        extended.extend_from_slice(&extra);
        assert_refused(
            &extended,
            &message,
            4,
            &format!("{} trailing bytes", extra.len()),
        );
    }
}

#[test]
fn wrong_keys_contexts_and_passphrases_are_refused_before_any_chunk() {
    let engine = Engine::new(Backend::Seq, None).unwrap();
    let message = plaintext(3 * CHUNK_BYTES);
    let keyed = seal(
        &engine,
        &Setup {
            context: b"ctx",
            ..Setup::default()
        },
        Secret::Key(&KEY_128),
        &message,
        1024,
    );
    let cases: [(Secret<'_>, &[u8]); 3] = [
        (Secret::Key(&[0x43; 16]), b"ctx"),
        (Secret::Key(&KEY_128), b"ctx2"),
        (Secret::Key(&KEY_128), b""),
    ];
    for (secret, context) in cases {
        let (output, result) = open(&engine, Format::Parcrypt, secret, context, &keyed, 1024);
        assert!(output.is_empty());
        let error = result.unwrap_err();
        assert!(matches!(error, FormatError::WrongKey));
        assert_eq!(
            error.to_string(),
            "wrong key or passphrase (key commitment mismatch)"
        );
    }
    let locked = seal(
        &engine,
        &Setup {
            argon2: CHEAP,
            ..Setup::default()
        },
        Secret::Passphrase(b"hunter2"),
        &message,
        1024,
    );
    // A bare message read as a parcrypt file, and the other way round.
    let bare = seal(
        &engine,
        &Setup {
            format: Format::Cobblestone,
            ..Setup::default()
        },
        Secret::Key(&KEY_128),
        &message,
        1024,
    );
    let (parcrypt, cobblestone) = (Format::Parcrypt, Format::Cobblestone);
    /// How a message is opened (format, secret, context, message), and the name of the
    /// error variant that refuses it.
    type Refusal<'a> = (Format, Secret<'a>, &'a [u8], &'a [u8], &'a str);
    let cases: [Refusal<'_>; 6] = [
        (
            parcrypt,
            Secret::Key(&KEY_256),
            b"ctx",
            &keyed,
            "KeySuiteMismatch",
        ),
        (
            parcrypt,
            Secret::Passphrase(b"x"),
            b"ctx",
            &keyed,
            "NeedsKey",
        ),
        (
            parcrypt,
            Secret::Passphrase(b"hunter3"),
            b"",
            &locked,
            "WrongKey",
        ),
        (
            parcrypt,
            Secret::Key(&KEY_128),
            b"",
            &locked,
            "NeedsPassphrase",
        ),
        (parcrypt, Secret::Key(&KEY_128), b"", &bare, "NotParcrypt"),
        (
            cobblestone,
            Secret::Key(&KEY_128),
            b"ctx",
            &keyed,
            "WrongKey",
        ),
    ];
    for (format, secret, context, sealed, expected) in cases {
        let (output, result) = open(&engine, format, secret, context, sealed, 1024);
        assert!(output.is_empty(), "{expected}");
        let error = format!("{:?}", result.unwrap_err());
        let variant = error.split(|c: char| !c.is_alphanumeric()).next();
        assert_eq!(variant, Some(expected), "{error}");
    }
    assert!(FormatError::NotParcrypt
        .to_string()
        .starts_with("not a parcrypt file"));
}

#[test]
fn ranges_match_slices_and_check_the_end_when_relative_to_it() {
    let engine = Engine::new(Backend::Pool, Some(3)).unwrap();
    let batcher = CpuChunks::new(&engine);
    let message = plaintext(6 * CHUNK_BYTES + 333);
    let setup = Setup {
        format: Format::Cobblestone,
        ..Setup::default()
    };
    let sealed = seal(&engine, &setup, Secret::Key(&KEY_128), &message, 1024);
    let read_range = |sealed: &[u8], text: &str| -> Result<Vec<u8>, FormatError> {
        let range: ByteRange = text.parse().unwrap();
        let unlocked = Decryptor::new(Format::Cobblestone, Cursor::new(sealed))
            .unwrap()
            .unlock(Secret::Key(&KEY_128), b"")
            .unwrap();
        let mut output = Vec::new();
        let options = StreamOptions::with_batch_chunks(2);
        let written = unlocked.decrypt_range_to(&batcher, range, &mut output, &options)?;
        assert_eq!(written as usize, output.len());
        Ok(output)
    };
    let length = message.len() as u64;
    let mut texts: Vec<String> = vec![
        ":".into(),
        "0:0".into(),
        "-1:".into(),
        ":-1".into(),
        "-20000:-100".into(),
        "99999999:".into(),
    ];
    for start in [0u64, 1, 16383, 16384, 16385, 50_000, length - 1, length] {
        for span in [0u64, 1, 100, 16384, 40_000, 1 << 20] {
            texts.push(format!("{start}:{}", start + span));
        }
    }
    for text in &texts {
        let range: ByteRange = text.parse().unwrap();
        let (start, end) = range.resolve(length);
        let output = read_range(&sealed, text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(output == message[start as usize..end as usize], "{text}");
    }
    // Damage the final chunk: ranges relative to the end (or past it) fail, an absolute
    // range in earlier chunks does not need the end and still decrypts.
    let mut damaged = sealed.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    for text in [":", "-10:", "0:", "5:-5", "0:99999999"] {
        assert!(
            matches!(
                read_range(&damaged, text),
                Err(FormatError::DamagedChunk { index: 6, .. })
            ),
            "{text}"
        );
    }
    assert_eq!(
        read_range(&damaged, "100:20000").unwrap(),
        &message[100..20000]
    );
    // A damaged chunk inside the range is named; a file cut short is refused.
    let mut middle = sealed.clone();
    middle[56 + 2 * SEALED_CHUNK_BYTES + 5] ^= 1;
    assert!(matches!(
        read_range(&middle, "0:100000"),
        Err(FormatError::DamagedChunk { index: 2, .. })
    ));
    assert!(read_range(&middle, "0:32768").is_ok());
    assert!(matches!(
        read_range(&sealed[..56 + 6 * SEALED_CHUNK_BYTES], "0:10"),
        Err(FormatError::TruncatedAfter { chunks: 6 })
    ));
}

#[test]
fn failing_writers_and_readers_are_reported() {
    let engine = Engine::new(Backend::Seq, None).unwrap();
    let batcher = CpuChunks::new(&engine);
    let (_, keys) = Envelope::create(&Setup::default(), Secret::Key(&KEY_128)).unwrap();
    let message = plaintext(100_000);
    let options = StreamOptions::with_batch_chunks(1);
    let error =
        encrypt_chunks(&batcher, &keys, &mut &message[..], &mut Broken, &options).unwrap_err();
    assert!(
        matches!(error, FormatError::Write(_)) && error.to_string().contains("pipe closed"),
        "{error}"
    );
    let error =
        encrypt_chunks(&batcher, &keys, &mut Failing, &mut Vec::new(), &options).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("cannot read input: disk on fire"),
        "{error}"
    );
    let error =
        decrypt_chunks(&batcher, &keys, &mut Failing, &mut Vec::new(), &options).unwrap_err();
    assert!(matches!(error, FormatError::Read(_)), "{error}");
}

#[test]
fn progress_reports_every_batch_up_to_the_total() {
    let engine = Engine::new(Backend::Seq, None).unwrap();
    let batcher = CpuChunks::new(&engine);
    let message = plaintext(10 * CHUNK_BYTES + 5);
    let reports = std::sync::Mutex::new(Vec::new());
    let progress = |bytes: u64| reports.lock().unwrap().push(bytes);
    let options = StreamOptions {
        batch_chunks: 4,
        progress: Some(&progress),
        ..StreamOptions::default()
    };
    let sealed = whole_message(Direction::Encrypt, &batcher, &message, &options);
    let seen = std::mem::take(&mut *reports.lock().unwrap());
    assert_eq!(seen, vec![4 * 16384, 8 * 16384, message.len() as u64]);
    whole_message(Direction::Decrypt, &batcher, &sealed, &options);
    assert_eq!(*reports.lock().unwrap(), seen);
}

/// More than 4 GiB generated on the fly, encrypted into a pipe and decrypted from it on
/// another thread, compared with the regenerated input: nothing is stored. Run it with
/// `cargo test --release -p parcrypt-format --test round_trip -- --ignored`.
#[test]
#[ignore = "4.5 GiB through both directions: run in release with --ignored"]
fn more_than_4_gib_round_trips_through_a_pipe() {
    const LENGTH: u64 = (4 << 30) + (512 << 20) + 12345;

    /// A cheap deterministic stream: each 8-byte word is a function of its offset.
    struct Generated {
        offset: u64,
        end: u64,
    }
    fn byte_at(offset: u64) -> u8 {
        let word = (offset / 8).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (word >> ((offset % 8) * 8)) as u8
    }
    impl Read for Generated {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            let count = (buffer.len() as u64).min(self.end - self.offset) as usize;
            for (index, byte) in buffer[..count].iter_mut().enumerate() {
                *byte = byte_at(self.offset + index as u64);
            }
            self.offset += count as u64;
            Ok(count)
        }
    }
    struct Checker {
        offset: u64,
    }
    impl Write for Checker {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            for (index, &byte) in data.iter().enumerate() {
                if byte != byte_at(self.offset + index as u64) {
                    return Err(io::Error::other(format!(
                        "mismatch at byte {}",
                        self.offset + index as u64
                    )));
                }
            }
            self.offset += data.len() as u64;
            Ok(data.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    let started = std::time::Instant::now();
    let engine = Engine::new(Backend::Pool, None).unwrap();
    let (pipe_reader, pipe_writer) = io::pipe().unwrap();
    let (decrypted, sealed_bytes) = std::thread::scope(|scope| {
        let engine = &engine;
        let encryptor = scope.spawn(move || {
            let mut pipe_writer = io::BufWriter::with_capacity(1 << 20, pipe_writer);
            let batcher = CpuChunks::new(engine);
            let written = encrypt(
                &batcher,
                &Setup::default(),
                Secret::Key(&KEY_128),
                &mut Generated {
                    offset: 0,
                    end: LENGTH,
                },
                &mut pipe_writer,
                &StreamOptions::default(),
            );
            drop(pipe_writer);
            written
        });
        let mut pipe_reader = io::BufReader::with_capacity(1 << 20, pipe_reader);
        let mut checker = Checker { offset: 0 };
        let batcher = CpuChunks::new(engine);
        let decrypted = decrypt(
            &batcher,
            Format::Parcrypt,
            Secret::Key(&KEY_128),
            b"",
            &mut pipe_reader,
            &mut checker,
            &StreamOptions::default(),
        );
        (
            decrypted.map(|n| (n, checker.offset)),
            encryptor.join().unwrap(),
        )
    });
    assert_eq!(sealed_bytes.unwrap(), LENGTH);
    assert_eq!(decrypted.unwrap(), (LENGTH, LENGTH));
    eprintln!(
        "4.5 GiB round trip through a pipe: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
