//! One file, many workers: sealing and opening ranges of a message's chunks in place, at
//! their fixed offsets, so that separate processes (or machines sharing a file system) can
//! each do a part of one file and together write the bytes one machine would write.
//!
//! Every Cobblestone chunk is an independent AES-GCM message, and chunk `k` of a message
//! whose envelope is `E` bytes long starts at `E + k * (16 KiB + 16)` in the file and holds
//! plaintext bytes `k * 16 KiB ..`. So:
//!
//! 1. A coordinator plans the file once ([`EncryptPlan`]: the envelope, the keys, the final
//!    size; or [`DecryptPlan`], which reads and unlocks an existing file's envelope). A
//!    passphrase is stretched (argon2id) here, once per file.
//! 2. It makes the output ([`EncryptPlan::prepare_output`]: the envelope at offset 0 and
//!    the file's final length; [`DecryptPlan::prepare_output`]: the plaintext's length),
//!    under a temporary name.
//! 3. Workers each get the [`Layout`] (two integers), a chunk range from
//!    [`Layout::parts`], and the [`PartKeys`] as bytes ([`PartKeys::to_bytes`]), and call
//!    [`seal_part`] or [`open_part`], which read and write at their parts' offsets only,
//!    through the same three-stage pipeline and batcher as streaming (all cores, or a GPU),
//!    in bounded memory (three batches). Sealed chunks are written with `FileExt::write_at`;
//!    the plaintext side goes through its handle's cursor (one `readv`/`writev` per batch
//!    rather than a call per chunk), so each concurrent call needs handles of its own.
//! 4. When every part succeeded, the coordinator renames the output into place.
//!
//! What a worker receives is [`PartKeys`]: this message's AEAD key and base nonce (and its
//! commitment, which is public), never the passphrase or the input key. They open and
//! forge this one message only, not other files sealed under the same key or passphrase;
//! send them over an encrypted channel all the same.
//!
//! ```
//! use std::fs::OpenOptions;
//! use parcrypt_format::parts::{open_part, seal_part, DecryptPlan, EncryptPlan, PartKeys};
//! use parcrypt_format::{CpuChunks, Format, KdfLimits, Secret, Setup};
//! use parcrypt_engine::{Backend, Engine};
//!
//! let folder = tempfile::tempdir()?;
//! let (plain, sealed, opened) =
//!     (folder.path().join("p"), folder.path().join("s"), folder.path().join("o"));
//! std::fs::write(&plain, vec![7u8; 100_000])?;
//! let engine = Engine::new(Backend::Pool, None)?;
//! let batcher = CpuChunks::new(&engine);
//! let key = [1u8; 16];
//!
//! // The coordinator.
//! let plan = EncryptPlan::new(&Setup::default(), Secret::Key(&key), 100_000)?;
//! plan.prepare_output(&std::fs::File::create(&sealed)?)?;
//! let (layout, wire) = (plan.layout(), plan.keys().to_bytes());
//! // Each worker (here, in turn), two chunks at a time.
//! for chunks in layout.parts(2) {
//!     let keys = PartKeys::from_bytes(&wire)?;
//!     let output = OpenOptions::new().write(true).open(&sealed)?;
//!     seal_part(&batcher, &keys, &layout, chunks, &std::fs::File::open(&plain)?, &output, &Default::default())?;
//! }
//! let plan = DecryptPlan::new(
//!     Format::Parcrypt, Secret::Key(&key), b"", &KdfLimits::DEFAULT, &std::fs::File::open(&sealed)?)?;
//! plan.prepare_output(&std::fs::File::create(&opened)?)?;
//! for chunks in plan.layout().parts(3) {
//!     let output = OpenOptions::new().write(true).open(&opened)?;
//!     open_part(&batcher, plan.keys(), &plan.layout(), chunks, &std::fs::File::open(&sealed)?, &output, &Default::default())?;
//! }
//! assert_eq!(std::fs::read(&opened)?, vec![7u8; 100_000]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

use zeroize::Zeroizing;

use crate::chunks::{batch_chunks, ChunkBatcher};
use crate::cobblestone::{
    Geometry, MessageKeys, Suite, CHUNK_BYTES, COMMITMENT_BYTES, NONCE_BYTES, SEALED_CHUNK_BYTES,
    TAG_BYTES,
};
use crate::error::FormatError;
use crate::file::{open_input, OutputPlan};
use crate::header::KdfLimits;
use crate::message::{Envelope, Format, Salts, Secret, Setup};
use crate::range::{Bound, ByteRange};
use crate::stream::{
    decrypt_chunks, encrypt_chunks, run_pipeline, Emit, Fill, Step, StreamOptions,
};

/// The first bytes of [`PartKeys::to_bytes`]: what the bytes are, and their version.
const WIRE_MAGIC: &[u8; 4] = b"PCK1";

/// Where everything of one message lies: enough for a worker to find its chunks, in
/// either file. Four integers, cheap to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bytes before chunk 0 (the parcrypt header, the salt and the commitment).
    pub envelope_bytes: u64,
    /// Plaintext bytes of the message.
    pub plaintext_bytes: u64,
}

impl Layout {
    /// The message's geometry (chunks, the final short one included).
    pub fn geometry(&self) -> Result<Geometry, FormatError> {
        Geometry::for_plaintext(self.plaintext_bytes)
    }

    /// Chunks of the message, the final (short, maybe empty) one included: at least 1.
    pub fn chunks(&self) -> Result<u64, FormatError> {
        Ok(self.geometry()?.chunks)
    }

    /// Bytes of the whole encrypted file.
    pub fn sealed_file_bytes(&self) -> Result<u64, FormatError> {
        Ok(self.envelope_bytes + self.geometry()?.sealed_bytes())
    }

    /// The chunk ranges of `chunks_per_part` chunks (at least 1) that cover the message, in
    /// order; the last may be shorter. An empty message has one part, its empty chunk.
    pub fn parts(&self, chunks_per_part: u64) -> Vec<Range<u64>> {
        let chunks = self.chunks().unwrap_or(1);
        let step = chunks_per_part.max(1);
        (0..chunks.div_ceil(step))
            .map(|part| part * step..((part + 1) * step).min(chunks))
            .collect()
    }

    /// Plaintext bytes of chunks `chunks` (clamped to the message).
    pub fn plaintext_span(&self, chunks: &Range<u64>) -> Range<u64> {
        let place = |chunk: u64| {
            chunk
                .saturating_mul(CHUNK_BYTES as u64)
                .min(self.plaintext_bytes)
        };
        place(chunks.start)..place(chunks.end)
    }

    /// Where chunks `chunks` lie in the encrypted file (clamped to the message).
    pub fn sealed_span(&self, chunks: &Range<u64>) -> Result<Range<u64>, FormatError> {
        let sealed = self.geometry()?.sealed_bytes();
        let place = |chunk: u64| {
            self.envelope_bytes + Geometry::sealed_offset(chunk.min(MAX_INDEX)).min(sealed)
        };
        Ok(place(chunks.start)..place(chunks.end))
    }

    /// Refuses a chunk range that is empty or reaches past the message.
    fn check(&self, chunks: &Range<u64>) -> Result<u64, FormatError> {
        let total = self.chunks()?;
        if chunks.start >= chunks.end || chunks.end > total {
            return Err(FormatError::Range(format!(
                "chunks {}..{} are not a part of this message of {total} chunks",
                chunks.start, chunks.end
            )));
        }
        Ok(total)
    }
}

/// A cap that keeps offset arithmetic within `u64` for any index (real ones are far below).
const MAX_INDEX: u64 = crate::cobblestone::MAX_CHUNKS;

/// One message's chunk keys, as workers need them: the AEAD key, the base nonce and the
/// (public) commitment, derived from the input key, salt and context. They seal and open
/// this message only; neither the passphrase nor the input key can be recovered from
/// them. Wiped on drop.
pub struct PartKeys {
    keys: MessageKeys,
}

impl PartKeys {
    /// Wraps a message's keys.
    pub fn new(keys: MessageKeys) -> PartKeys {
        PartKeys { keys }
    }

    /// The keys, for a [`ChunkBatcher`].
    pub fn message_keys(&self) -> &MessageKeys {
        &self.keys
    }

    /// The keys as bytes to send to a worker: `PCK1`, the suite (1: AES-128, 2: AES-256),
    /// the AEAD key, the base nonce, the commitment (65 or 81 bytes). Secret: wiped on drop
    /// here, but a copy sent elsewhere is the receiver's to protect.
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let mut bytes = Zeroizing::new(Vec::with_capacity(
            WIRE_MAGIC.len() + 1 + 32 + NONCE_BYTES + COMMITMENT_BYTES,
        ));
        bytes.extend_from_slice(WIRE_MAGIC);
        bytes.push(match self.keys.suite() {
            Suite::Cobblestone128 => 1,
            Suite::Cobblestone256 => 2,
        });
        bytes.extend_from_slice(self.keys.key());
        bytes.extend_from_slice(self.keys.base_nonce());
        bytes.extend_from_slice(self.keys.commitment());
        bytes
    }

    /// Reads what [`PartKeys::to_bytes`] wrote.
    pub fn from_bytes(bytes: &[u8]) -> Result<PartKeys, FormatError> {
        let refuse = || FormatError::Kdf("these are not parcrypt part keys (PCK1)".into());
        let rest = bytes.strip_prefix(WIRE_MAGIC).ok_or_else(refuse)?;
        let (&suite, rest) = rest.split_first().ok_or_else(refuse)?;
        let suite = match suite {
            1 => Suite::Cobblestone128,
            2 => Suite::Cobblestone256,
            _ => return Err(refuse()),
        };
        let key_bytes = suite.key_bytes();
        if rest.len() != key_bytes + NONCE_BYTES + COMMITMENT_BYTES {
            return Err(refuse());
        }
        let (key, rest) = rest.split_at(key_bytes);
        let (nonce, commitment) = rest.split_at(NONCE_BYTES);
        let nonce: Zeroizing<[u8; NONCE_BYTES]> =
            Zeroizing::new(nonce.try_into().map_err(|_| refuse())?);
        let commitment: [u8; COMMITMENT_BYTES] = commitment.try_into().map_err(|_| refuse())?;
        Ok(PartKeys {
            keys: MessageKeys::from_parts(suite, key, &nonce, &commitment)?,
        })
    }
}

/// A new message to be sealed in parts: its envelope, its keys and its layout.
pub struct EncryptPlan {
    envelope: Envelope,
    keys: PartKeys,
    layout: Layout,
}

impl EncryptPlan {
    /// Plans a message of `plaintext_bytes` under `secret` with fresh random salts (a
    /// passphrase is stretched here, once).
    pub fn new(
        setup: &Setup<'_>,
        secret: Secret<'_>,
        plaintext_bytes: u64,
    ) -> Result<EncryptPlan, FormatError> {
        Self::with_salts(setup, secret, Salts::random()?, plaintext_bytes)
    }

    /// [`EncryptPlan::new`] with given salts, so that the result can be compared with
    /// [`crate::Encryptor::with_salts`] byte for byte. A salt must never repeat under one
    /// key: for tests and reproducible comparisons only.
    pub fn with_salts(
        setup: &Setup<'_>,
        secret: Secret<'_>,
        salts: Salts,
        plaintext_bytes: u64,
    ) -> Result<EncryptPlan, FormatError> {
        Geometry::for_plaintext(plaintext_bytes)?;
        let (envelope, keys) = Envelope::create_with_salts(setup, secret, salts)?;
        let layout = Layout {
            envelope_bytes: envelope.len() as u64,
            plaintext_bytes,
        };
        Ok(EncryptPlan {
            envelope,
            keys: PartKeys::new(keys),
            layout,
        })
    }

    /// The bytes before chunk 0.
    pub fn envelope_bytes(&self) -> Vec<u8> {
        self.envelope.to_bytes()
    }

    /// Where everything lies.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The keys workers seal with.
    pub fn keys(&self) -> &PartKeys {
        &self.keys
    }

    /// Writes the envelope at the start of `output` and gives it its final length (the
    /// chunk area reads as zeros until the parts are sealed into it).
    pub fn prepare_output(&self, output: &File) -> Result<(), FormatError> {
        prepare_sealed_output(output, &self.envelope_bytes(), &self.layout)
    }
}

/// [`EncryptPlan::prepare_output`] from the plan's parts, for a coordinator that kept only
/// the envelope's bytes and the layout: writes `envelope` at offset 0 of `output` and gives
/// the file its final length.
pub fn prepare_sealed_output(
    output: &File,
    envelope: &[u8],
    layout: &Layout,
) -> Result<(), FormatError> {
    if envelope.len() as u64 != layout.envelope_bytes {
        return Err(FormatError::Range(format!(
            "an envelope of {} bytes for a layout of {}",
            envelope.len(),
            layout.envelope_bytes
        )));
    }
    output.set_len(0).map_err(FormatError::Write)?;
    output
        .write_all_at(envelope, 0)
        .map_err(FormatError::Write)?;
    output
        .set_len(layout.sealed_file_bytes()?)
        .map_err(FormatError::Write)
}

/// An existing message to be opened in parts: its layout and keys, the envelope unlocked
/// (the commitment checked) once.
pub struct DecryptPlan {
    keys: PartKeys,
    layout: Layout,
}

impl DecryptPlan {
    /// Reads the envelope of `input`, unlocks it with `secret` and `context` (a passphrase
    /// within `limits`), and measures the message from the file's length. A file whose
    /// length no message has is refused here (truncation at a chunk boundary included).
    pub fn new(
        format: Format,
        secret: Secret<'_>,
        context: &[u8],
        limits: &KdfLimits,
        input: &File,
    ) -> Result<DecryptPlan, FormatError> {
        let total = input.metadata().map_err(FormatError::Read)?.len();
        let mut reader = PositionalReader {
            file: input,
            offset: 0,
            end: total,
        };
        let envelope = Envelope::read(format, &mut reader)?;
        let keys = envelope.unlock_within(secret, context, limits)?;
        let envelope_bytes = envelope.len() as u64;
        let sealed = total
            .checked_sub(envelope_bytes)
            .ok_or(FormatError::TruncatedHeader("Cobblestone"))?;
        let geometry = Geometry::for_sealed(sealed)?;
        Ok(DecryptPlan {
            keys: PartKeys::new(keys),
            layout: Layout {
                envelope_bytes,
                plaintext_bytes: geometry.plaintext_bytes,
            },
        })
    }

    /// Where everything lies.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The keys workers open with.
    pub fn keys(&self) -> &PartKeys {
        &self.keys
    }

    /// Gives `output` the plaintext's length.
    pub fn prepare_output(&self, output: &File) -> Result<(), FormatError> {
        output.set_len(0).map_err(FormatError::Write)?;
        output
            .set_len(self.layout.plaintext_bytes)
            .map_err(FormatError::Write)
    }
}

/// Reads `file` from `offset` to `end` with `read_at`, leaving the file's cursor alone.
struct PositionalReader<'f> {
    file: &'f File,
    offset: u64,
    end: u64,
}

impl Read for PositionalReader<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let left = self.end.saturating_sub(self.offset);
        let wanted = (buffer.len() as u64).min(left) as usize;
        if wanted == 0 {
            return Ok(0);
        }
        let read = self.file.read_at(&mut buffer[..wanted], self.offset)?;
        self.offset += read as u64;
        Ok(read)
    }
}

/// Writes into `file` from `offset` on with `write_at`.
struct PositionalWriter<'f> {
    file: &'f File,
    offset: u64,
}

impl Write for PositionalWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = self.file.write_at(bytes, self.offset)?;
        self.offset += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Seals chunks `chunks` of the message laid out as `layout`: reads their plaintext from
/// `plaintext` at `chunks.start * 16 KiB`, seals them on `batcher` (the message's final
/// chunk, when the range holds it, as the short final chunk), and writes them into
/// `sealed` at their offsets (`write_at`). Returns the plaintext bytes sealed. Moves the
/// cursor of `plaintext`: give each concurrent call handles of its own.
///
/// Memory stays at three batches (`options.batch_chunks`, or the batcher's preferred size)
/// however long the range.
/// The plaintext file must still be `layout.plaintext_bytes` long: a file that changed
/// size is refused ([`FormatError::Read`]) rather than sealed into a broken message.
pub fn seal_part(
    batcher: &dyn ChunkBatcher,
    keys: &PartKeys,
    layout: &Layout,
    chunks: Range<u64>,
    plaintext: &File,
    sealed: &File,
    options: &StreamOptions<'_>,
) -> Result<u64, FormatError> {
    let total = layout.check(&chunks)?;
    let size = plaintext.metadata().map_err(FormatError::Read)?.len();
    if size != layout.plaintext_bytes {
        return Err(changed(format!(
            "the plaintext is {size} bytes, not the {} planned",
            layout.plaintext_bytes
        )));
    }
    let holds_final = chunks.end == total;
    let text = layout.plaintext_span(&chunks);
    let expected = text.end - text.start;
    // Through the handle's cursor: vectored reads (`readv`) fill a batch's chunk slots in
    // one call, where `read_at` would take one call per 16 KiB chunk.
    let mut handle = plaintext;
    handle
        .seek(SeekFrom::Start(text.start))
        .map_err(FormatError::Read)?;
    let mut reader = handle.take(expected);
    // Sealed batches are written whole, so positional writes cost nothing more.
    let mut writer = PositionalWriter {
        file: sealed,
        offset: layout.sealed_span(&chunks)?.start,
    };
    let batch = options
        .batch_chunks(batcher)
        .min((chunks.end - chunks.start) as usize);
    let keys = keys.message_keys();
    let mut next_chunk = chunks.start;
    let mut done = 0u64;
    run_pipeline(
        &mut reader,
        &mut writer,
        batch * SEALED_CHUNK_BYTES,
        Fill::Slots { chunks: batch },
        options.stages,
        |buffer| {
            let full = buffer.filled / CHUNK_BYTES;
            let tail = buffer.filled % CHUNK_BYTES;
            let sealed = if buffer.ended && holds_final {
                full * SEALED_CHUNK_BYTES + tail + TAG_BYTES
            } else if tail == 0 {
                full * SEALED_CHUNK_BYTES
            } else {
                return Err(changed(
                    "the plaintext ended inside a chunk that is not the message's last".into(),
                ));
            };
            let batch_bytes = &mut buffer.bytes[..sealed];
            let count = batch_chunks(next_chunk, batch_bytes)?;
            if count > 0 {
                batcher.seal_batch(keys, next_chunk, batch_bytes)?;
            }
            next_chunk += count;
            done += buffer.filled as u64;
            options.report(done);
            if buffer.ended && (done != expected || next_chunk != chunks.end) {
                return Err(changed(format!(
                    "read {done} plaintext bytes for chunks {}..{}, expected {expected}",
                    chunks.start, chunks.end
                )));
            }
            Ok(Step {
                emit: Emit::Prefix(sealed),
                outcome: buffer.ended.then_some(Ok(())),
            })
        },
    )?;
    Ok(done)
}

/// The plaintext file changed while (or since) it was planned.
fn changed(why: String) -> FormatError {
    FormatError::Read(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("{why}: the input changed while it was encrypted"),
    ))
}

/// Opens chunks `chunks` of the message in `sealed` laid out as `layout`, and writes their
/// plaintext into `plaintext` at `chunks.start * 16 KiB`. Every chunk authenticates before
/// any of its bytes is written (the pipeline of [`crate::range::decrypt_range`]); on a
/// damaged chunk the call fails, and the caller discards the output. Returns the plaintext
/// bytes written. Memory stays at three batches. Moves the cursors of both handles: give
/// each concurrent call handles of its own.
pub fn open_part(
    batcher: &dyn ChunkBatcher,
    keys: &PartKeys,
    layout: &Layout,
    chunks: Range<u64>,
    sealed: &File,
    plaintext: &File,
    options: &StreamOptions<'_>,
) -> Result<u64, FormatError> {
    layout.check(&chunks)?;
    let text = layout.plaintext_span(&chunks);
    // Through the handle's cursor: vectored writes (`writev`) put a batch's chunk texts out in
    // one call, where `write_at` would take one call per chunk.
    let mut writer = plaintext;
    writer
        .seek(SeekFrom::Start(text.start))
        .map_err(FormatError::Write)?;
    let written = open_span(
        batcher,
        keys,
        layout,
        text.clone(),
        sealed,
        &mut writer,
        options,
    )?;
    if written != text.end - text.start {
        return Err(changed(format!(
            "wrote {written} of {} plaintext bytes",
            text.end - text.start
        )));
    }
    Ok(written)
}

/// Decrypts plaintext bytes `text` (a range of offsets, clamped to the message) of the
/// message in `sealed` into `writer`, reading only the chunks that hold them; every chunk
/// authenticates before any of its bytes is written. Returns the bytes written. The
/// random-access read a worker does for one piece of a larger range. Moves the cursor of
/// `sealed`.
pub fn open_span(
    batcher: &dyn ChunkBatcher,
    keys: &PartKeys,
    layout: &Layout,
    text: Range<u64>,
    sealed: &File,
    writer: &mut (dyn Write + Send),
    options: &StreamOptions<'_>,
) -> Result<u64, FormatError> {
    let total = layout.sealed_file_bytes()?;
    let size = sealed.metadata().map_err(FormatError::Read)?.len();
    if size != total {
        return Err(FormatError::Read(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("the encrypted file is {size} bytes, not the {total} planned: it changed"),
        )));
    }
    let mut reader = sealed;
    let range = ByteRange {
        start: Bound::FromStart(text.start),
        end: Some(Bound::FromStart(text.end.min(layout.plaintext_bytes))),
    };
    crate::range::decrypt_range(
        batcher,
        keys.message_keys(),
        &mut reader,
        layout.envelope_bytes,
        range,
        writer,
        options,
    )
}

/// One whole file by one worker, from a plan made elsewhere: seals `source` into
/// `destination` (the envelope, then every chunk, through the streaming pipeline), the
/// bytes [`crate::Encryptor::encrypt_file`] writes with the same keys. The destination
/// appears only once complete, as with [`crate::file::encrypt_file`]: written as a file
/// with no name and linked at the end, so that even a killed process leaves nothing; an
/// existing destination is replaced only with `replace`. Returns the plaintext bytes.
#[allow(clippy::too_many_arguments)]
pub fn seal_file(
    batcher: &dyn ChunkBatcher,
    keys: &PartKeys,
    envelope: &[u8],
    layout: &Layout,
    source: &Path,
    destination: &Path,
    replace: bool,
    options: &StreamOptions<'_>,
) -> Result<u64, FormatError> {
    let input = open_input(source)?;
    let metadata = input.metadata().map_err(FormatError::Read)?;
    if metadata.len() != layout.plaintext_bytes || envelope.len() as u64 != layout.envelope_bytes {
        return Err(changed(format!(
            "the plaintext is {} bytes, not the {} planned",
            metadata.len(),
            layout.plaintext_bytes
        )));
    }
    let mut output = OutputPlan::check(destination, Some(&metadata), replace)?.open()?;
    output.reserve(layout.sealed_file_bytes()?);
    output
        .file()
        .write_all(envelope)
        .map_err(FormatError::Write)?;
    let mut reader = input.take(layout.plaintext_bytes);
    let done = encrypt_chunks(
        batcher,
        keys.message_keys(),
        &mut reader,
        output.file(),
        options,
    )?;
    if done != layout.plaintext_bytes {
        return Err(changed(format!(
            "read {done} plaintext bytes, expected {}",
            layout.plaintext_bytes
        )));
    }
    output.commit()?;
    Ok(done)
}

/// One whole encrypted file by one worker, from a [`DecryptPlan`] made elsewhere: opens
/// every chunk of `source` into `destination`, which appears only once every chunk
/// authenticated (as with [`crate::file::decrypt_file`]). Returns the plaintext bytes.
#[allow(clippy::too_many_arguments)]
pub fn open_file(
    batcher: &dyn ChunkBatcher,
    keys: &PartKeys,
    layout: &Layout,
    source: &Path,
    destination: &Path,
    replace: bool,
    options: &StreamOptions<'_>,
) -> Result<u64, FormatError> {
    let mut input = open_input(source)?;
    let metadata = input.metadata().map_err(FormatError::Read)?;
    let total = layout.sealed_file_bytes()?;
    if metadata.len() != total {
        return Err(FormatError::Read(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "the encrypted file is {} bytes, not the {total} planned: it changed",
                metadata.len()
            ),
        )));
    }
    let mut output = OutputPlan::check(destination, Some(&metadata), replace)?.open()?;
    output.reserve(layout.plaintext_bytes);
    input
        .seek(SeekFrom::Start(layout.envelope_bytes))
        .map_err(FormatError::Read)?;
    let done = decrypt_chunks(
        batcher,
        keys.message_keys(),
        &mut input,
        output.file(),
        options,
    )?;
    output.commit()?;
    Ok(done)
}
