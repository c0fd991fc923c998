//! Sealing and opening a file in parts (`parcrypt_format::parts`) gives the bytes of the
//! single-machine encryptor, for every size around the chunk boundaries and every way of
//! cutting the file into parts, and opens them back; bad inputs are refused.

#[path = "support/messages.rs"]
mod messages;

use std::fs::{File, OpenOptions};
use std::path::Path;

use messages::CHEAP;
use parcrypt_engine::{Backend, Engine};
use parcrypt_format::cobblestone::CHUNK_BYTES;
use parcrypt_format::parts::{
    open_file, open_part, open_span, seal_file, seal_part, DecryptPlan, EncryptPlan, PartKeys,
};
use parcrypt_format::{
    ChunkBatcher, CpuChunks, Encryptor, Format, FormatError, KdfLimits, Salts, Secret, Setup,
    StreamOptions, Suite,
};

fn salts() -> Salts {
    Salts {
        cobblestone: [0x5a; 24],
        argon2: [0xa5; 16],
    }
}

fn plaintext(length: usize) -> Vec<u8> {
    (0..length).map(|i| (i * 131 + i / 977) as u8).collect()
}

fn single_machine(setup: &Setup<'_>, secret: Secret<'_>, plain: &[u8]) -> Vec<u8> {
    let engine = Engine::new(Backend::Seq, None).unwrap();
    let batcher = CpuChunks::new(&engine);
    let mut sealed = Vec::new();
    Encryptor::with_salts(setup, secret, salts())
        .unwrap()
        .encrypt_stream(
            &batcher,
            &mut &plain[..],
            &mut sealed,
            &StreamOptions::default(),
        )
        .unwrap();
    sealed
}

/// The decryption plan of the file `sealed` under `secret`, with no context.
fn decrypt_plan(
    batcher: &dyn ChunkBatcher,
    secret: Secret<'_>,
    sealed: &File,
) -> Result<DecryptPlan, FormatError> {
    DecryptPlan::new(
        batcher,
        Format::Parcrypt,
        secret,
        b"",
        &KdfLimits::DEFAULT,
        sealed,
    )
}

/// Seals `plain` in parts of `per_part` chunks, the parts in reverse order (as unordered
/// workers might), each with its own file handles and keys read back from bytes.
fn seal_in_parts(
    folder: &Path,
    setup: &Setup<'_>,
    secret: Secret<'_>,
    plain: &[u8],
    per_part: u64,
    batch_chunks: usize,
) -> Vec<u8> {
    let engine = Engine::new(Backend::Pool, Some(3)).unwrap();
    let batcher = CpuChunks::new(&engine);
    let source = folder.join("plain");
    let sealed = folder.join("sealed");
    std::fs::write(&source, plain).unwrap();
    let plan =
        EncryptPlan::with_salts(setup, secret, salts(), &File::open(&source).unwrap()).unwrap();
    plan.prepare_output(&File::create(&sealed).unwrap())
        .unwrap();
    let layout = plan.layout();
    let identity = *plan.source();
    let wire = plan.keys().to_bytes();
    let options = StreamOptions::with_batch_chunks(batch_chunks);
    let mut total = 0;
    for chunks in layout.parts(per_part).into_iter().rev() {
        let keys = PartKeys::from_bytes(&wire).unwrap();
        let output = OpenOptions::new().write(true).open(&sealed).unwrap();
        total += seal_part(
            &batcher,
            &keys,
            &layout,
            &identity,
            chunks,
            &File::open(&source).unwrap(),
            &output,
            &options,
        )
        .unwrap();
    }
    assert_eq!(total, plain.len() as u64);
    std::fs::read(&sealed).unwrap()
}

fn open_in_parts(
    folder: &Path,
    secret: Secret<'_>,
    sealed_bytes: &[u8],
    per_part: u64,
) -> Result<Vec<u8>, FormatError> {
    let engine = Engine::new(Backend::Pool, Some(2)).unwrap();
    let batcher = CpuChunks::new(&engine);
    let sealed = folder.join("to-open");
    let opened = folder.join("opened");
    std::fs::write(&sealed, sealed_bytes).unwrap();
    let plan = decrypt_plan(&batcher, secret, &File::open(&sealed).unwrap())?;
    plan.prepare_output(&File::create(&opened).unwrap())?;
    let keys = PartKeys::from_bytes(&plan.keys().to_bytes())?;
    for chunks in plan.layout().parts(per_part) {
        let output = OpenOptions::new().write(true).open(&opened).unwrap();
        open_part(
            &batcher,
            &keys,
            &plan.layout(),
            chunks,
            &File::open(&sealed).unwrap(),
            &output,
            &StreamOptions::with_batch_chunks(2),
        )?;
    }
    Ok(std::fs::read(&opened).unwrap())
}

#[test]
fn parts_equal_the_single_machine_bytes_for_every_size_and_cut() {
    let folder = tempfile::tempdir().unwrap();
    let key = [0x11u8; 16];
    let setup = Setup::default();
    let c = CHUNK_BYTES;
    for length in [
        0,
        1,
        15,
        c - 1,
        c,
        c + 1,
        2 * c,
        3 * c - 1,
        3 * c,
        5 * c + 7,
        8 * c,
        17 * c + 100,
    ] {
        let plain = plaintext(length);
        let expected = single_machine(&setup, Secret::Key(&key), &plain);
        for (per_part, batch) in [(1, 1), (2, 1), (3, 2), (4, 4), (100, 3)] {
            let ours = seal_in_parts(
                folder.path(),
                &setup,
                Secret::Key(&key),
                &plain,
                per_part,
                batch,
            );
            assert!(
                ours == expected,
                "length {length}, {per_part} chunks per part"
            );
        }
        let opened = open_in_parts(folder.path(), Secret::Key(&key), &expected, 2).unwrap();
        assert!(opened == plain, "opening length {length}");
    }
}

#[test]
fn passphrases_and_aes_256_are_stretched_once_and_match() {
    let folder = tempfile::tempdir().unwrap();
    let setup = Setup {
        argon2: CHEAP,
        ..Setup::default()
    };
    let plain = plaintext(6 * CHUNK_BYTES + 3);
    let expected = single_machine(&setup, Secret::Passphrase(b"hunter22"), &plain);
    let ours = seal_in_parts(
        folder.path(),
        &setup,
        Secret::Passphrase(b"hunter22"),
        &plain,
        2,
        1,
    );
    assert!(ours == expected);
    assert_eq!(
        open_in_parts(folder.path(), Secret::Passphrase(b"hunter22"), &ours, 3).unwrap(),
        plain
    );
    assert!(matches!(
        open_in_parts(folder.path(), Secret::Passphrase(b"hunter23"), &ours, 3),
        Err(FormatError::WrongKey)
    ));

    let setup = Setup {
        suite: Suite::Cobblestone256,
        ..Setup::default()
    };
    let key = [0x22u8; 32];
    let expected = single_machine(&setup, Secret::Key(&key), &plain);
    let ours = seal_in_parts(folder.path(), &setup, Secret::Key(&key), &plain, 3, 2);
    assert!(ours == expected);
}

#[test]
fn damage_and_changed_files_are_refused() {
    let folder = tempfile::tempdir().unwrap();
    let key = [0x33u8; 16];
    let plain = plaintext(4 * CHUNK_BYTES + 9);
    let sealed = single_machine(&Setup::default(), Secret::Key(&key), &plain);

    let mut damaged = sealed.clone();
    let at = damaged.len() - 20;
    damaged[at] ^= 1;
    assert!(matches!(
        open_in_parts(folder.path(), Secret::Key(&key), &damaged, 2),
        Err(FormatError::DamagedChunk { index: 4, .. })
    ));
    // Cut at a chunk boundary: no message has that length.
    let envelope = sealed.len() - (4 * (CHUNK_BYTES + 16) + 9 + 16);
    let cut = &sealed[..envelope + 2 * (CHUNK_BYTES + 16)];
    assert!(open_in_parts(folder.path(), Secret::Key(&key), cut, 2).is_err());

    // A plaintext that changed length since the plan.
    let engine = Engine::new(Backend::Seq, None).unwrap();
    let batcher = CpuChunks::new(&engine);
    let source = folder.path().join("changing");
    std::fs::write(&source, &plain).unwrap();
    let plan = EncryptPlan::new(
        &Setup::default(),
        Secret::Key(&key),
        &File::open(&source).unwrap(),
    )
    .unwrap();
    std::fs::write(&source, [&plain[..], b"+"].concat()).unwrap();
    let output_path = folder.path().join("out");
    let output = File::create(&output_path).unwrap();
    plan.prepare_output(&output).unwrap();
    let error = seal_part(
        &batcher,
        plan.keys(),
        &plan.layout(),
        plan.source(),
        0..5,
        &File::open(&source).unwrap(),
        &output,
        &StreamOptions::default(),
    )
    .unwrap_err();
    assert!(error.to_string().contains("changed"), "{error}");
    // Ranges outside the message.
    for (first, end) in [(0, 0), (3, 2), (0, 6)] {
        assert!(seal_part(
            &batcher,
            plan.keys(),
            &plan.layout(),
            plan.source(),
            first..end,
            &File::open(&source).unwrap(),
            &output,
            &StreamOptions::default(),
        )
        .is_err());
    }
    // Keys from bytes that are not keys.
    for bad in [&b""[..], b"PCK1", b"PCK1\x01short", b"PCK9\x01"] {
        assert!(PartKeys::from_bytes(bad).is_err());
    }
}

#[test]
fn spans_read_any_byte_range() {
    let folder = tempfile::tempdir().unwrap();
    let key = [0x44u8; 16];
    let plain = plaintext(7 * CHUNK_BYTES + 500);
    let sealed_path = folder.path().join("sealed");
    std::fs::write(
        &sealed_path,
        single_machine(&Setup::default(), Secret::Key(&key), &plain),
    )
    .unwrap();
    let file = File::open(&sealed_path).unwrap();
    let engine = Engine::new(Backend::Pool, Some(2)).unwrap();
    let batcher = CpuChunks::new(&engine);
    let plan = decrypt_plan(&batcher, Secret::Key(&key), &file).unwrap();
    let length = plain.len() as u64;
    for (start, end) in [
        (0, 0),
        (0, 1),
        (5, 40_000),
        (CHUNK_BYTES as u64, 2 * CHUNK_BYTES as u64),
        (length - 3, length),
        (length - 3, length + 100),
        (0, length),
    ] {
        let mut out = Vec::new();
        let written = open_span(
            &batcher,
            plan.keys(),
            &plan.layout(),
            start..end,
            &file,
            &mut out,
            &StreamOptions::default(),
        )
        .unwrap();
        let end = end.min(length) as usize;
        assert_eq!(written as usize, out.len());
        assert!(out == plain[start as usize..end], "{start}..{end}");
    }
}

#[test]
fn whole_files_from_a_plan_equal_the_single_machine_bytes_and_appear_whole() {
    let folder = tempfile::tempdir().unwrap();
    let engine = Engine::new(Backend::Pool, Some(2)).unwrap();
    let batcher = CpuChunks::new(&engine);
    let key = [0x55u8; 16];
    for length in [0, 1, CHUNK_BYTES, 3 * CHUNK_BYTES + 77] {
        let plain = plaintext(length);
        let expected = single_machine(&Setup::default(), Secret::Key(&key), &plain);
        let source = folder.path().join("plain");
        std::fs::write(&source, &plain).unwrap();
        let plan = EncryptPlan::with_salts(
            &Setup::default(),
            Secret::Key(&key),
            salts(),
            &File::open(&source).unwrap(),
        )
        .unwrap();
        let keys = PartKeys::from_bytes(&plan.keys().to_bytes()).unwrap();
        let sealed = folder.path().join("sealed");
        let options = StreamOptions::with_batch_chunks(2);
        let envelope = plan.envelope_bytes();
        let seal = |overwrite: bool| {
            seal_file(
                &batcher,
                &keys,
                &envelope,
                &plan.layout(),
                plan.source(),
                &source,
                &sealed,
                overwrite,
                &options,
            )
        };
        seal(true).unwrap();
        assert!(std::fs::read(&sealed).unwrap() == expected, "{length}");
        // An existing destination stays unless replacing is allowed.
        assert!(seal(false).is_err());

        let decrypt =
            decrypt_plan(&batcher, Secret::Key(&key), &File::open(&sealed).unwrap()).unwrap();
        let opened = folder.path().join("opened");
        open_file(
            &batcher,
            decrypt.keys(),
            &decrypt.layout(),
            &sealed,
            &opened,
            true,
            &options,
        )
        .unwrap();
        assert!(std::fs::read(&opened).unwrap() == plain);
    }
    // A damaged file leaves no output (the damage in a whole chunk: the plan checks only the
    // final one).
    let sealed = folder.path().join("sealed");
    let mut bytes = std::fs::read(&sealed).unwrap();
    let at = bytes.len() - 300;
    bytes[at] ^= 1;
    std::fs::write(&sealed, &bytes).unwrap();
    let plan = decrypt_plan(&batcher, Secret::Key(&key), &File::open(&sealed).unwrap()).unwrap();
    let never = folder.path().join("never");
    assert!(open_file(
        &batcher,
        plan.keys(),
        &plan.layout(),
        &sealed,
        &never,
        false,
        &StreamOptions::default()
    )
    .is_err());
    assert!(!never.exists());
}
