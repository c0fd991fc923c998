//! Files encrypted to public-key recipients (version-2 headers): round trips at chunk
//! boundaries for X25519 and hybrid recipients and several recipients per file, through
//! every reading path (stream, reader, seekable, ranges, plans, files); and the misuse: a
//! wrong identity, stanzas swapped from another file, dropped, duplicated, reordered or
//! added, the MAC or any header byte changed, a payload moved under another header,
//! truncation. Old files keep opening (the other tests of this crate).

use std::io::{Cursor, Read, Seek, SeekFrom, Write};
use std::path::Path;

use parcrypt_age::{HybridIdentity, Identity, Recipient, Stanza, X25519Identity};
use parcrypt_engine::{Backend, Engine};
use parcrypt_format::cobblestone::{CHUNK_BYTES, PREFIX_BYTES};
use parcrypt_format::file::{decrypt_file, encrypt_file, FileOptions};
use parcrypt_format::parts::DecryptPlan;
use parcrypt_format::recipients::{FileKey, RecipientHeader, MAC_BYTES};
use parcrypt_format::{
    ByteRange, CpuChunks, Decryptor, Encryptor, Envelope, Format, FormatError, KdfLimits, Secret,
    Setup, StreamOptions, Suite,
};

fn engine() -> Engine {
    Engine::new(Backend::Pool, Some(2)).unwrap()
}

fn data(length: usize) -> Vec<u8> {
    (0..length).map(|i| (i * 13 + i / 509) as u8).collect()
}

fn small_batches() -> StreamOptions<'static> {
    StreamOptions {
        batch_chunks: 2,
        ..StreamOptions::default()
    }
}

struct Keys {
    x1: Identity,
    x2: Identity,
    pq1: Identity,
    pq2: Identity,
}

impl Keys {
    fn new() -> Keys {
        Keys {
            x1: X25519Identity::generate().into(),
            x2: X25519Identity::generate().into(),
            pq1: HybridIdentity::generate().into(),
            pq2: HybridIdentity::generate().into(),
        }
    }
}

fn public(identity: &Identity) -> Recipient {
    identity.to_public().unwrap()
}

fn seal(
    batcher: &CpuChunks<'_>,
    setup: &Setup<'_>,
    recipients: &[Recipient],
    plain: &[u8],
) -> Vec<u8> {
    let mut sealed = Vec::new();
    Encryptor::new(setup, Secret::Recipients(recipients))
        .unwrap()
        .encrypt_stream(batcher, &mut &plain[..], &mut sealed, &small_batches())
        .unwrap();
    sealed
}

fn open(
    batcher: &CpuChunks<'_>,
    sealed: &[u8],
    identities: &[Identity],
    context: &[u8],
) -> Result<Vec<u8>, FormatError> {
    let mut plain = Vec::new();
    Decryptor::new(Format::Parcrypt, sealed)?
        .unlock(Secret::Identities(identities), context)?
        .decrypt_to(batcher, &mut plain, &small_batches())?;
    Ok(plain)
}

#[test]
fn round_trips_at_chunk_boundaries_for_every_recipient_kind() {
    let engine = engine();
    let batcher = CpuChunks::new(&engine);
    let keys = Keys::new();
    let cases: Vec<(Vec<Recipient>, Vec<&Identity>)> = vec![
        (vec![public(&keys.x1)], vec![&keys.x1]),
        (vec![public(&keys.pq1)], vec![&keys.pq1]),
        (
            vec![public(&keys.x1), public(&keys.x2)],
            vec![&keys.x1, &keys.x2],
        ),
        (
            vec![public(&keys.pq1), public(&keys.pq2)],
            vec![&keys.pq1, &keys.pq2],
        ),
    ];
    for length in [
        0,
        1,
        CHUNK_BYTES - 1,
        CHUNK_BYTES,
        CHUNK_BYTES + 1,
        5 * CHUNK_BYTES + 77,
    ] {
        let plain = data(length);
        for (n, (recipients, identities)) in cases.iter().enumerate() {
            let suite = Suite::ALL[n % 2];
            let setup = Setup {
                suite,
                context: b"round trip",
                ..Setup::default()
            };
            let sealed = seal(&batcher, &setup, recipients, &plain);
            let envelope = Envelope::parse(Format::Parcrypt, &sealed).unwrap().0;
            assert_eq!(envelope.suite(), Some(suite));
            let header = envelope.recipient_header().unwrap();
            assert_eq!(header.recipients(), recipients.len());
            // The size: header, salt and commitment, then Cobblestone's chunks.
            let chunks = length / CHUNK_BYTES + 1;
            assert_eq!(sealed.len(), envelope.len() + length + 16 * chunks);
            for identity in identities {
                let one = std::slice::from_ref(*identity);
                assert_eq!(open(&batcher, &sealed, one, b"round trip").unwrap(), plain);
                // The reader releasing authenticated chunks.
                let mut read = Vec::new();
                Decryptor::new(Format::Parcrypt, &sealed[..])
                    .unwrap()
                    .unlock(Secret::Identities(one), b"round trip")
                    .unwrap()
                    .reader(&batcher)
                    .read_to_end(&mut read)
                    .unwrap();
                assert_eq!(read, plain);
            }
            // Identities of other files first, then one of this file's.
            let mut mixed: Vec<Identity> = vec![keys.x2.clone(), keys.pq2.clone()];
            mixed.push(identities[0].clone());
            assert_eq!(
                open(&batcher, &sealed, &mixed, b"round trip").unwrap(),
                plain
            );
        }
    }
}

#[test]
fn the_writer_the_seekable_reader_ranges_and_plans_work_on_recipient_files() {
    let engine = engine();
    let batcher = CpuChunks::new(&engine);
    let keys = Keys::new();
    let recipients = [public(&keys.x1), public(&keys.x2)];
    let plain = data(7 * CHUNK_BYTES + 300);
    let mut writer = Encryptor::new(&Setup::default(), Secret::Recipients(&recipients))
        .unwrap()
        .wrap_output(&batcher, Vec::new())
        .unwrap();
    for piece in plain.chunks(10_000) {
        writer.write_all(piece).unwrap();
    }
    let sealed = writer.finish().unwrap();
    let ids = [keys.x2.clone()];
    let mut reader = Decryptor::new(Format::Parcrypt, Cursor::new(&sealed))
        .unwrap()
        .unlock(Secret::Identities(&ids), b"")
        .unwrap()
        .seekable(&batcher)
        .unwrap();
    assert_eq!(reader.seek(SeekFrom::End(0)).unwrap(), plain.len() as u64);
    reader
        .seek(SeekFrom::Start(3 * CHUNK_BYTES as u64 - 5))
        .unwrap();
    let mut piece = vec![0u8; 1024];
    reader.read_exact(&mut piece).unwrap();
    assert_eq!(piece, plain[3 * CHUNK_BYTES - 5..3 * CHUNK_BYTES + 1019]);
    for range in ["100:20000", "-1000:", ":", "50000:50001"] {
        let range: ByteRange = range.parse().unwrap();
        let mut out = Vec::new();
        Decryptor::new(Format::Parcrypt, Cursor::new(&sealed))
            .unwrap()
            .unlock(Secret::Identities(&ids), b"")
            .unwrap()
            .decrypt_range_to(&batcher, range, &mut out, &small_batches())
            .unwrap();
        let (start, end) = range.resolve(plain.len() as u64);
        assert_eq!(out, plain[start as usize..end as usize], "{range}");
    }
    // A plan reads the envelope's length only once the header's MAC and the final chunk
    // authenticated.
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("sealed");
    std::fs::write(&path, &sealed).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let plan = DecryptPlan::new(
        &batcher,
        Format::Parcrypt,
        Secret::Identities(&ids),
        b"",
        &KdfLimits::DEFAULT,
        &file,
    )
    .unwrap();
    let envelope = Envelope::parse(Format::Parcrypt, &sealed).unwrap().0;
    assert_eq!(plan.layout().envelope_bytes, envelope.len() as u64);
    assert_eq!(plan.layout().plaintext_bytes, plain.len() as u64);
    let wrong = [keys.pq1.clone()];
    assert!(matches!(
        DecryptPlan::new(
            &batcher,
            Format::Parcrypt,
            Secret::Identities(&wrong),
            b"",
            &KdfLimits::DEFAULT,
            &file,
        ),
        Err(FormatError::NoMatchingIdentity(_))
    ));
}

#[test]
fn files_appear_only_for_the_right_identity() {
    let engine = engine();
    let batcher = CpuChunks::new(&engine);
    let keys = Keys::new();
    let folder = tempfile::tempdir().unwrap();
    let path = |name: &str| folder.path().join(name);
    let plain = data(3 * CHUNK_BYTES + 9);
    std::fs::write(path("plain"), &plain).unwrap();
    let recipients = [public(&keys.pq1), public(&keys.pq2)];
    let options = FileOptions::default();
    encrypt_file(
        &batcher,
        &Setup::default(),
        Secret::Recipients(&recipients),
        &path("plain"),
        &path("sealed"),
        &options,
    )
    .unwrap();
    let decrypt = |identities: &[Identity], to: &Path| {
        decrypt_file(
            &batcher,
            Format::Parcrypt,
            Secret::Identities(identities),
            b"",
            &path("sealed"),
            to,
            &options,
        )
    };
    let error = decrypt(&[keys.x1.clone(), keys.x2.clone()], &path("wrong")).unwrap_err();
    assert!(
        matches!(error, FormatError::NoMatchingIdentity(_)),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "no identity matches any recipient of this file (its stanzas: mlkem768x25519)"
    );
    assert!(!path("wrong").exists());
    let error = decrypt_file(
        &batcher,
        Format::Parcrypt,
        Secret::Passphrase(b"a passphrase"),
        b"",
        &path("sealed"),
        &path("wrong"),
        &options,
    )
    .unwrap_err();
    assert!(matches!(error, FormatError::NeedsIdentity), "{error}");
    assert!(!path("wrong").exists());
    // A damaged chunk: no file either.
    let mut damaged = std::fs::read(path("sealed")).unwrap();
    let last = damaged.len() - 20;
    damaged[last] ^= 4;
    std::fs::write(path("damaged"), &damaged).unwrap();
    let error = decrypt_file(
        &batcher,
        Format::Parcrypt,
        Secret::Identities(std::slice::from_ref(&keys.pq2)),
        b"",
        &path("damaged"),
        &path("wrong"),
        &options,
    )
    .unwrap_err();
    assert!(
        matches!(error, FormatError::DamagedChunk { index: 3, .. }),
        "{error}"
    );
    assert!(!path("wrong").exists());
    assert_eq!(
        decrypt(std::slice::from_ref(&keys.pq2), &path("opened")).unwrap(),
        plain.len() as u64
    );
    assert_eq!(std::fs::read(path("opened")).unwrap(), plain);
    // Refusals when encrypting: no file.
    for (secret, setup) in [
        (Secret::Recipients(&[]), Setup::default()),
        (
            Secret::Recipients(&[public(&keys.x1), public(&keys.pq1)]),
            Setup::default(),
        ),
        (
            Secret::Recipients(&recipients),
            Setup {
                format: Format::Cobblestone,
                ..Setup::default()
            },
        ),
        (
            Secret::Identities(std::slice::from_ref(&keys.x1)),
            Setup::default(),
        ),
    ] {
        let error = encrypt_file(
            &batcher,
            &setup,
            secret,
            &path("plain"),
            &path("refused"),
            &options,
        )
        .unwrap_err();
        assert!(matches!(error, FormatError::Recipients(_)), "{error}");
        assert!(!error.to_string().contains('\n'));
        assert!(!path("refused").exists());
    }
}

/// A file's header, its stanzas, and what follows the header.
struct Parts {
    header: RecipientHeader,
    rest: Vec<u8>,
}

fn parts(sealed: &[u8]) -> Parts {
    let (header, length) = RecipientHeader::parse(sealed).unwrap();
    Parts {
        header,
        rest: sealed[length..].to_vec(),
    }
}

/// A file with `stanzas` in its header but the MAC of `mac_of`'s header, over `rest`.
fn forged(suite: Suite, stanzas: Vec<Stanza>, mac_of: &RecipientHeader, rest: &[u8]) -> Vec<u8> {
    let header = RecipientHeader::seal(suite, stanzas, &FileKey::from_bytes([0; 16])).unwrap();
    let mut bytes = header.as_bytes().to_vec();
    let at = bytes.len() - MAC_BYTES;
    bytes[at..].copy_from_slice(mac_of.mac());
    bytes.extend_from_slice(rest);
    bytes
}

#[test]
fn stanzas_cannot_be_swapped_dropped_duplicated_reordered_or_added() {
    let engine = engine();
    let batcher = CpuChunks::new(&engine);
    let keys = Keys::new();
    let plain = data(CHUNK_BYTES + 10);
    let recipients = [public(&keys.x1), public(&keys.x2)];
    let setup = Setup::default();
    let first = seal(&batcher, &setup, &recipients, &plain);
    let second = seal(&batcher, &setup, &recipients, &plain);
    let a = parts(&first);
    let b = parts(&second);
    let s = a.header.stanzas().to_vec();
    let t = b.header.stanzas().to_vec();
    let stranger = X25519Identity::generate();
    let added = parcrypt_format::recipients::wrap(
        &[Recipient::from(stranger.to_public())],
        &FileKey::generate(),
    )
    .unwrap();
    let suite = a.header.suite();
    // One stanza per recipient: s[0] for x1, s[1] for x2.
    assert_eq!((s.len(), t.len()), (2, 2));
    let cases: Vec<(&str, Vec<Stanza>)> = vec![
        (
            "x2's stanza from another file",
            vec![s[0].clone(), t[1].clone()],
        ),
        (
            "x1's stanza from another file",
            vec![t[0].clone(), s[1].clone()],
        ),
        ("x2 dropped", vec![s[0].clone()]),
        (
            "x1 duplicated",
            vec![s[0].clone(), s[0].clone(), s[1].clone()],
        ),
        (
            "x2 duplicated",
            vec![s[0].clone(), s[1].clone(), s[1].clone()],
        ),
        ("reordered", vec![s[1].clone(), s[0].clone()]),
        ("a stranger added", [s.clone(), added].concat()),
        (
            "another file's stanza added",
            vec![s[0].clone(), s[1].clone(), t[0].clone()],
        ),
    ];
    for (what, stanzas) in cases {
        let file = forged(suite, stanzas, &a.header, &a.rest);
        for identity in [&keys.x1, &keys.x2] {
            let error = open(&batcher, &file, std::slice::from_ref(identity), b"").unwrap_err();
            // Whoever still finds their stanzas unwraps a file key, and the MAC refuses the
            // header; only the recipient that was dropped finds nothing.
            if what == "x2 dropped" && std::ptr::eq(identity, &keys.x2) {
                assert!(
                    matches!(error, FormatError::NoMatchingIdentity(_)),
                    "{what}: {error}"
                );
            } else {
                assert!(matches!(error, FormatError::HeaderMac), "{what}: {error}");
            }
        }
    }
    // The whole header of the second file over the first file's message, and the other way
    // round: the header opens, the message does not belong to it.
    let mut moved = b.header.as_bytes().to_vec();
    moved.extend_from_slice(&a.rest);
    assert!(matches!(
        open(&batcher, &moved, std::slice::from_ref(&keys.x1), b""),
        Err(FormatError::HeaderMismatch)
    ));
    // Only the chunks moved (the first file's header, salt and commitment): they fail.
    let envelope = a.header.len() + PREFIX_BYTES;
    let mut chunks_moved = first[..envelope].to_vec();
    chunks_moved.extend_from_slice(&second[envelope..]);
    assert!(matches!(
        open(&batcher, &chunks_moved, std::slice::from_ref(&keys.x1), b""),
        Err(FormatError::DamagedChunk { index: 0, .. })
    ));
    // The MAC changed, and every byte of the header changed in turn.
    let mut mac_changed = first.clone();
    mac_changed[a.header.len() - 1] ^= 1;
    assert!(matches!(
        open(&batcher, &mac_changed, std::slice::from_ref(&keys.x1), b""),
        Err(FormatError::HeaderMac)
    ));
    for position in 0..envelope {
        let mut changed = first.clone();
        changed[position] ^= 0x20;
        let result = open(&batcher, &changed, std::slice::from_ref(&keys.x2), b"");
        assert!(
            result.is_err(),
            "a change of byte {position} went unnoticed"
        );
        let error = result.unwrap_err().to_string();
        assert!(!error.contains('\n'), "{error}");
    }
}

#[test]
fn every_truncation_is_refused() {
    let engine = engine();
    let batcher = CpuChunks::new(&engine);
    let keys = Keys::new();
    let plain = data(2 * CHUNK_BYTES);
    let sealed = seal(&batcher, &Setup::default(), &[public(&keys.x1)], &plain);
    let ids = [keys.x1.clone()];
    let envelope = Envelope::parse(Format::Parcrypt, &sealed).unwrap().0.len();
    let mut cuts: Vec<usize> = (0..envelope + 40).collect();
    cuts.extend([
        envelope + CHUNK_BYTES + 16,
        envelope + 2 * (CHUNK_BYTES + 16),
        envelope + 2 * (CHUNK_BYTES + 16) + 15,
        sealed.len() - 1,
    ]);
    for cut in cuts {
        let result = open(&batcher, &sealed[..cut], &ids, b"");
        assert!(result.is_err(), "cut at {cut} accepted");
    }
    // Seekable: the final chunk authenticates before any length is trusted. A file cut
    // inside chunk 1 looks like one whose final chunk is short; it fails at its index.
    let cut = &sealed[..envelope + CHUNK_BYTES + 16 + 20];
    let mut reader = Decryptor::new(Format::Parcrypt, Cursor::new(cut))
        .unwrap()
        .unlock(Secret::Identities(&ids), b"")
        .unwrap()
        .seekable(&batcher)
        .unwrap();
    assert!(reader.seek(SeekFrom::End(0)).is_err());
}
