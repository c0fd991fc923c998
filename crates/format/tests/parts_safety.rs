//! A job in parts is as safe as the single-machine paths (issue 31): a cut, extended or
//! damaged end is refused by the plan and by every worker (finding 1), the job's outputs are
//! private (finding 4), and a source that changed since its plan is never sealed (finding 5).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use parcrypt_engine::{Backend, Engine};
use parcrypt_format::cobblestone::{MessageKeys, CHUNK_BYTES, SEALED_CHUNK_BYTES};
use parcrypt_format::parts::{
    create_output, open_file, open_part, open_span, prepare_plain_output, seal_file, seal_part,
    DecryptPlan, EncryptPlan, Layout, PartKeys,
};
use parcrypt_format::range::{Bound, ByteRange};
use parcrypt_format::{
    ChunkBatcher, CpuChunks, Decryptor, Encryptor, Format, FormatError, KdfLimits, Secret, Setup,
    StreamOptions,
};

const KEY: [u8; 16] = [0x2b; 16];

fn seal(plain: &[u8]) -> Vec<u8> {
    let engine = Engine::new(Backend::Seq, None).unwrap();
    let mut sealed = Vec::new();
    Encryptor::new(&Setup::default(), Secret::Key(&KEY))
        .unwrap()
        .encrypt_stream(
            &CpuChunks::new(&engine),
            &mut &plain[..],
            &mut sealed,
            &StreamOptions::default(),
        )
        .unwrap();
    sealed
}

/// Every way to take a message's end away or add to it: cut after `k` whole chunks (every
/// `k`, none included) followed by 0 to 16 junk bytes; 1 to 16 junk bytes after the end; a
/// whole chunk appended; the final chunk removed (for a message of whole chunks, its empty
/// final chunk). Each with a name for failure messages.
fn ends(sealed: &[u8], envelope: usize) -> Vec<(String, Vec<u8>)> {
    let full = (sealed.len() - envelope) / SEALED_CHUNK_BYTES;
    let mut files = Vec::new();
    for k in 0..=full {
        for junk in 0..=16 {
            let mut file = sealed[..envelope + k * SEALED_CHUNK_BYTES].to_vec();
            file.extend(std::iter::repeat_n(0xa5, junk));
            files.push((format!("cut after {k} chunks, {junk} junk bytes"), file));
        }
    }
    for junk in 1..=16 {
        let mut file = sealed.to_vec();
        file.extend(std::iter::repeat_n(0x5a, junk));
        files.push((format!("{junk} junk bytes appended"), file));
    }
    let mut file = sealed.to_vec();
    file.extend_from_slice(
        &sealed[envelope..envelope + SEALED_CHUNK_BYTES.min(full * SEALED_CHUNK_BYTES)],
    );
    files.push(("a chunk appended".into(), file));
    files.push((
        "the final chunk removed".into(),
        sealed[..envelope + full * SEALED_CHUNK_BYTES].to_vec(),
    ));
    files.retain(|(_, file)| file != sealed);
    files
}

fn plan(batcher: &dyn ChunkBatcher, path: &Path) -> Result<DecryptPlan, FormatError> {
    DecryptPlan::new(
        batcher,
        Format::Parcrypt,
        Secret::Key(&KEY),
        b"",
        &KdfLimits::DEFAULT,
        &File::open(path).unwrap(),
    )
}

/// The whole file `source` sealed by one `seal_file` call from `plan` into a new
/// `destination`, with the default options.
fn seal_whole(
    batcher: &dyn ChunkBatcher,
    plan: &EncryptPlan,
    source: &Path,
    destination: &Path,
) -> Result<u64, FormatError> {
    seal_file(
        batcher,
        plan.keys(),
        &plan.envelope_bytes(),
        &plan.layout(),
        plan.source(),
        source,
        destination,
        false,
        &StreamOptions::default(),
    )
}

/// Issue 31 finding 1: `DecryptPlan::new` took the length from the file's size alone, and
/// `open_part`/`open_span` trusted it, so a file cut at a chunk boundary plus 16 junk bytes
/// (a fake empty final chunk) opened short with no error. Now the plan refuses every cut,
/// extended or shortened end; and a worker given the length such a file claims (a layout
/// made without the plan) refuses it too, at the part or span that reaches the end, as does
/// a whole-file worker, which leaves no output.
#[test]
fn a_cut_or_extended_end_is_refused_by_the_plan_and_every_worker() {
    let folder = tempfile::tempdir().unwrap();
    let engine = Engine::new(Backend::Pool, Some(2)).unwrap();
    let batcher = CpuChunks::new(&engine);
    let mut refused = 0;
    for length in [3 * CHUNK_BYTES + 100, 3 * CHUNK_BYTES, 1] {
        let plain: Vec<u8> = (0..length).map(|i| (i % 251) as u8).collect();
        let sealed = seal(&plain);
        let envelope = sealed.len()
            - (length / CHUNK_BYTES * SEALED_CHUNK_BYTES)
            - (length % CHUNK_BYTES + 16);
        // The genuine file plans; its keys are what a worker holds.
        let genuine = folder.path().join("genuine");
        std::fs::write(&genuine, &sealed).unwrap();
        let genuine_plan = plan(&batcher, &genuine).unwrap();
        assert_eq!(genuine_plan.layout().plaintext_bytes, length as u64);
        let keys = PartKeys::from_bytes(&genuine_plan.keys().to_bytes()).unwrap();
        for (name, file) in ends(&sealed, envelope) {
            let path = folder.path().join("changed");
            std::fs::write(&path, &file).unwrap();
            let error = match plan(&batcher, &path) {
                Ok(plan) => panic!(
                    "{name} (message of {length}): planned as {} bytes",
                    plan.layout().plaintext_bytes
                ),
                Err(error) => error,
            };
            let text = error.to_string();
            assert!(
                text.contains("damaged") || text.contains("truncated"),
                "{name}: {text}"
            );
            // A worker given the layout that the file's size claims.
            let Some(claimed) = (file.len() as u64)
                .checked_sub(envelope as u64)
                .and_then(|sealed| parcrypt_format::cobblestone::Geometry::for_sealed(sealed).ok())
            else {
                continue; // no message has this size: every reader refuses it outright
            };
            let layout = Layout {
                envelope_bytes: envelope as u64,
                plaintext_bytes: claimed.plaintext_bytes,
            };
            let opened = folder.path().join("opened");
            let _ = std::fs::remove_file(&opened);
            prepare_plain_output(&create_output(&opened).unwrap(), &layout).unwrap();
            for per_part in [1, 2, 64] {
                let mut every_part_opened = true;
                for chunks in layout.parts(per_part) {
                    let output = OpenOptions::new().write(true).open(&opened).unwrap();
                    let result = open_part(
                        &batcher,
                        &keys,
                        &layout,
                        chunks,
                        &File::open(&path).unwrap(),
                        &output,
                        &StreamOptions::with_batch_chunks(2),
                    );
                    every_part_opened &= result.is_ok();
                }
                assert!(!every_part_opened, "{name}: every part opened");
            }
            let mut out = Vec::new();
            assert!(
                open_span(
                    &batcher,
                    &keys,
                    &layout,
                    0..layout.plaintext_bytes,
                    &File::open(&path).unwrap(),
                    &mut out,
                    &StreamOptions::default(),
                )
                .is_err(),
                "{name}: the span to the claimed end opened"
            );
            let never = folder.path().join("never");
            assert!(open_file(
                &batcher,
                &keys,
                &layout,
                &path,
                &never,
                false,
                &StreamOptions::default()
            )
            .is_err());
            assert!(!never.exists(), "{name}: open_file left an output");
            refused += 1;
        }
    }
    assert!(refused > 50, "only {refused} cut files reached the workers");
}

/// Issue 31 finding 1, the range reader under the parts: a range that ends exactly at the
/// length a cut file claims (`0:LENGTH`, not counted from the end) released the whole
/// shortened message; it must authenticate the final chunk as `0:` does.
#[test]
fn a_range_ending_at_the_end_authenticates_the_length() {
    let engine = Engine::new(Backend::Seq, None).unwrap();
    let batcher = CpuChunks::new(&engine);
    let plain = vec![9u8; 2 * CHUNK_BYTES + 7];
    let sealed = seal(&plain);
    let envelope = sealed.len() - (2 * SEALED_CHUNK_BYTES + 7 + 16);
    let mut cut = sealed[..envelope + SEALED_CHUNK_BYTES].to_vec();
    cut.extend_from_slice(&[0u8; 16]);
    for end in [
        Some(Bound::FromStart(CHUNK_BYTES as u64)),
        Some(Bound::FromStart(CHUNK_BYTES as u64 + 5)),
        None,
    ] {
        let range = ByteRange {
            start: Bound::FromStart(0),
            end,
        };
        let mut out = Vec::new();
        let result = Decryptor::new(Format::Parcrypt, std::io::Cursor::new(&cut))
            .unwrap()
            .unlock(Secret::Key(&KEY), b"")
            .unwrap()
            .decrypt_range_to(&batcher, range, &mut out, &StreamOptions::default());
        assert!(
            matches!(result, Err(FormatError::DamagedChunk { index: 1, .. })),
            "{range}: {result:?}"
        );
        assert!(out.is_empty(), "{range}: released {} bytes", out.len());
    }
}

/// Issue 31 finding 4: a job's outputs (`create_output`, and what `seal_file` makes) are
/// new files of mode 0600 (the Python and Dask paths had 0644 under umask 022); an existing
/// file or a link in the output's place is refused, never opened.
#[test]
fn outputs_are_new_and_private() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("out");
    let mut file = create_output(&path).unwrap();
    file.write_all(b"x").unwrap();
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&path), 0o600);
    assert!(matches!(
        create_output(&path),
        Err(FormatError::OutputExists(_))
    ));
    let link = folder.path().join("link");
    std::os::unix::fs::symlink(folder.path().join("elsewhere"), &link).unwrap();
    assert!(create_output(&link).is_err());
    assert!(!folder.path().join("elsewhere").exists());

    let engine = Engine::new(Backend::Seq, None).unwrap();
    let batcher = CpuChunks::new(&engine);
    let source = folder.path().join("plain");
    std::fs::write(&source, vec![1u8; 40_000]).unwrap();
    let plan = EncryptPlan::new(
        &Setup::default(),
        Secret::Key(&KEY),
        &File::open(&source).unwrap(),
    )
    .unwrap();
    let sealed = folder.path().join("sealed");
    seal_whole(&batcher, &plan, &source, &sealed).unwrap();
    assert_eq!(mode(&sealed), 0o600);
}

/// Writes other bytes of the same length into `path` and moves its modification time.
fn rewrite_same_size(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    for byte in &mut bytes {
        *byte ^= 0xff;
    }
    let mut file = OpenOptions::new().write(true).open(path).unwrap();
    file.write_all(&bytes).unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(7))
        .unwrap();
}

/// A batcher that rewrites the source as its first batch is sealed: a file changed while a
/// part was being sealed.
struct RewritesSource<'b> {
    inner: CpuChunks<'b>,
    source: std::path::PathBuf,
    done: std::sync::atomic::AtomicBool,
}

impl ChunkBatcher for RewritesSource<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn seal_batch(
        &self,
        keys: &MessageKeys,
        first_chunk: u64,
        batch: &mut [u8],
    ) -> Result<(), FormatError> {
        if !self.done.swap(true, std::sync::atomic::Ordering::SeqCst) {
            rewrite_same_size(&self.source);
        }
        self.inner.seal_batch(keys, first_chunk, batch)
    }
    fn open_batch(
        &self,
        keys: &MessageKeys,
        first_chunk: u64,
        batch: &mut [u8],
    ) -> Result<(), FormatError> {
        self.inner.open_batch(keys, first_chunk, batch)
    }
}

/// Issue 31 finding 5: `seal_part` checked only the source's size, so a source rewritten
/// with other bytes of the same length after the plan (a retried task) was sealed under the
/// plan's keys and nonces: (key, nonce) reuse. Now the plan records the source's identity
/// and `seal_part` and `seal_file` refuse a changed source before sealing, and after
/// sealing when it changed meanwhile; a file put in the source's place is refused too.
#[test]
fn a_source_changed_since_the_plan_is_never_sealed() {
    let folder = tempfile::tempdir().unwrap();
    let engine = Engine::new(Backend::Seq, None).unwrap();
    let batcher = CpuChunks::new(&engine);
    let source = folder.path().join("plain");
    let plain: Vec<u8> = (0..3 * CHUNK_BYTES + 11).map(|i| i as u8).collect();
    let sealed = folder.path().join("sealed");
    let seal_all = |batcher: &dyn ChunkBatcher, plan: &EncryptPlan| {
        let _ = std::fs::remove_file(&sealed);
        let output = create_output(&sealed).unwrap();
        plan.prepare_output(&output).unwrap();
        seal_part(
            batcher,
            plan.keys(),
            &plan.layout(),
            plan.source(),
            0..plan.layout().chunks().unwrap(),
            &File::open(&source).unwrap(),
            &output,
            &StreamOptions::with_batch_chunks(1),
        )
    };
    let plan_now = || {
        EncryptPlan::new(
            &Setup::default(),
            Secret::Key(&KEY),
            &File::open(&source).unwrap(),
        )
        .unwrap()
    };

    // Unchanged: sealed, and the result opens.
    std::fs::write(&source, &plain).unwrap();
    let plan = plan_now();
    seal_all(&batcher, &plan).unwrap();

    // Same size, other bytes, a later modification time: refused before sealing.
    rewrite_same_size(&source);
    let error = seal_all(&batcher, &plan).unwrap_err();
    assert!(
        error.to_string().contains("before sealing") && error.to_string().contains("changed"),
        "{error}"
    );
    let destination = folder.path().join("whole");
    assert!(seal_whole(&batcher, &plan, &source, &destination).is_err());
    assert!(!destination.exists());

    // Another file put in its place (same bytes, a new inode): refused.
    std::fs::write(&source, &plain).unwrap();
    let plan = plan_now();
    let other = folder.path().join("other");
    std::fs::write(&other, &plain).unwrap();
    std::fs::rename(&other, &source).unwrap();
    assert!(seal_all(&batcher, &plan).is_err());

    // Changed while it was sealed: refused after sealing, by both calls.
    let plan = plan_now();
    let rewriting = RewritesSource {
        inner: CpuChunks::new(&engine),
        source: source.clone(),
        done: false.into(),
    };
    let error = seal_all(&rewriting, &plan).unwrap_err();
    assert!(error.to_string().contains("while it was sealed"), "{error}");
    let plan = plan_now();
    rewriting
        .done
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let error = seal_whole(&rewriting, &plan, &source, &destination).unwrap_err();
    assert!(error.to_string().contains("while it was sealed"), "{error}");
    assert!(!destination.exists());

    // A source identity from another plan of another size is refused as a mix-up.
    let plan = plan_now();
    let mut wrong = *plan.source();
    wrong.size += 1;
    let output = OpenOptions::new().write(true).open(&sealed).unwrap();
    assert!(matches!(
        seal_part(
            &batcher,
            plan.keys(),
            &plan.layout(),
            &wrong,
            0..1,
            &File::open(&source).unwrap(),
            &output,
            &StreamOptions::default(),
        ),
        Err(FormatError::Range(_))
    ));
}
