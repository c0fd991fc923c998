//! One file, many workers: sealing and opening ranges of a message's chunks in place, at
//! their fixed offsets, so that separate processes (or machines sharing a file system) can
//! each do a part of one file and together write the bytes one machine would write.
//!
//! Every Cobblestone chunk is an independent AES-GCM message, and chunk `k` of a message
//! whose envelope is `E` bytes long starts at `E + k * (16 KiB + 16)` in the file and holds
//! plaintext bytes `k * 16 KiB ..`. So:
//!
//! 1. A coordinator plans the file once ([`EncryptPlan`]: the envelope, the keys, the final
//!    size and the source's [`SourceIdentity`]; or [`DecryptPlan`], which reads and unlocks
//!    an existing file's envelope and authenticates its length). A passphrase is stretched
//!    (argon2id), or a file key unwrapped with an identity, here, once per file.
//! 2. It makes the output ([`create_output`], then [`EncryptPlan::prepare_output`]: the
//!    envelope at offset 0 and the file's final length; [`DecryptPlan::prepare_output`]:
//!    the plaintext's length), under a temporary name.
//! 3. Workers each get the [`Layout`] (two integers), a chunk range from
//!    [`Layout::parts`], the [`PartKeys`] as bytes ([`PartKeys::to_bytes`]) and, to seal,
//!    the [`SourceIdentity`] (six integers), and call [`seal_part`] or [`open_part`], which
//!    read and write at their parts' offsets only, through the same three-stage pipeline
//!    and batcher as streaming (all cores, or a GPU), in bounded memory (three batches).
//!    Sealed chunks are written with `FileExt::write_at`; the plaintext side goes through
//!    its handle's cursor (one `readv`/`writev` per batch rather than a call per chunk), so
//!    each concurrent call needs handles of its own.
//! 4. When every part succeeded, the coordinator renames the output into place.
//!
//! What a worker receives is [`PartKeys`]: this message's AEAD key and base nonce (and its
//! commitment, which is public), never the passphrase or the input key. They open and
//! forge this one message only, not other files sealed under the same key or passphrase;
//! send them over an encrypted channel all the same.
//!
//! Safe by construction, as the single-machine paths are:
//!
//! - **No silent truncation.** A file's size only claims a length until the final chunk (the
//!   short one) authenticates at its index: [`DecryptPlan::new`] opens it before it reports
//!   a length, and a part or span that reaches the message's end ([`open_part`],
//!   [`open_span`]) opens it again, so a file cut at a chunk boundary (with or without junk
//!   after the cut), extended, or missing its empty final chunk is refused with nothing of
//!   the missing end taken for the message's end.
//! - **Private outputs.** [`create_output`] makes a job's files exclusively (never an
//!   existing file or a link in its place) with mode 0600 whatever the umask, as
//!   [`crate::file`]'s outputs are.
//! - **The input must not change during a job.** A plan fixes the message's keys and
//!   nonces, so sealing other bytes under it (a task retried after the file changed) would
//!   encrypt two plaintexts under one (key, nonce). [`EncryptPlan`] records the source's
//!   [`SourceIdentity`] (device, inode, size, modification and status-change times in
//!   nanoseconds), and [`seal_part`] and [`seal_file`] refuse, before and after sealing, a
//!   source that is no longer that file or was written since. Detection rests on the file
//!   system's timestamps: a writer that restores both times (only the kernel sets the
//!   status-change time) or writes within one timestamp tick of the plan is not seen.
//!
//! ```
//! use std::fs::OpenOptions;
//! use parcrypt_format::parts::{
//!     create_output, open_part, seal_part, DecryptPlan, EncryptPlan, PartKeys,
//! };
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
//! let plan = EncryptPlan::new(&Setup::default(), Secret::Key(&key), &std::fs::File::open(&plain)?)?;
//! plan.prepare_output(&create_output(&sealed)?)?;
//! let (layout, source, wire) = (plan.layout(), *plan.source(), plan.keys().to_bytes());
//! // Each worker (here, in turn), two chunks at a time.
//! for chunks in layout.parts(2) {
//!     let keys = PartKeys::from_bytes(&wire)?;
//!     let output = OpenOptions::new().write(true).open(&sealed)?;
//!     let input = std::fs::File::open(&plain)?;
//!     seal_part(&batcher, &keys, &layout, &source, chunks, &input, &output, &Default::default())?;
//! }
//! let plan = DecryptPlan::new(
//!     &batcher, Format::Parcrypt, Secret::Key(&key), b"", &KdfLimits::DEFAULT,
//!     &std::fs::File::open(&sealed)?)?;
//! plan.prepare_output(&create_output(&opened)?)?;
//! for chunks in plan.layout().parts(3) {
//!     let output = OpenOptions::new().write(true).open(&opened)?;
//!     open_part(&batcher, plan.keys(), &plan.layout(), chunks, &std::fs::File::open(&sealed)?, &output, &Default::default())?;
//! }
//! assert_eq!(std::fs::read(&opened)?, vec![7u8; 100_000]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::{self, File, Metadata, OpenOptions, Permissions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::OnceLock;

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
use crate::range::{authenticate_length, Bound, ByteRange};
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

    /// Bytes of the whole encrypted file (refused when no file can be that long).
    pub fn sealed_file_bytes(&self) -> Result<u64, FormatError> {
        self.envelope_bytes
            .checked_add(self.geometry()?.sealed_bytes())
            .ok_or(FormatError::TooLong)
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
        // Below the file's length, which `sealed_file_bytes` checked for overflow.
        self.sealed_file_bytes()?;
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

/// Which file a plaintext source was when it was planned, and whether it was written since:
/// its device and inode, its size, and its modification and status-change times in
/// nanoseconds. [`seal_part`] and [`seal_file`] refuse, before and after sealing, a source
/// whose identity differs from the plan's (see the [module](self) for why and for what it
/// cannot see). Six integers, cheap to send with the plan.
///
/// A worker on another machine sees a shared file system under a device number of its
/// own, so the device is compared only where `machine` (the boot id of the machine that
/// took the identity, 0 where the system has none) is the same; inode, size and times are
/// the file system's and are always compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceIdentity {
    /// `st_dev`.
    pub device: u64,
    /// `st_ino`.
    pub inode: u64,
    /// Bytes of the file: the plaintext bytes of the message.
    pub size: u64,
    /// `st_mtime` in nanoseconds since the epoch.
    pub modified_ns: i64,
    /// `st_ctime` in nanoseconds since the epoch.
    pub changed_ns: i64,
    /// The boot id of the machine that took the identity (Linux's
    /// `/proc/sys/kernel/random/boot_id` as a 128-bit number), or 0.
    pub machine: u128,
}

impl SourceIdentity {
    /// The identity of the open file `source` (a regular file: a part is read at its
    /// offset).
    pub fn of(source: &File) -> Result<SourceIdentity, FormatError> {
        let metadata = source.metadata().map_err(FormatError::Read)?;
        Self::from_metadata(&metadata)
    }

    fn from_metadata(metadata: &Metadata) -> Result<SourceIdentity, FormatError> {
        if !metadata.is_file() {
            return Err(FormatError::Read(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the plaintext of a job in parts must be a regular file (it is read at offsets)",
            )));
        }
        let file = parcrypt_sys::FileIdentity::of(metadata);
        Ok(SourceIdentity {
            device: file.device,
            inode: file.inode,
            size: file.size,
            modified_ns: file.modified_ns,
            changed_ns: file.changed_ns,
            machine: machine_id(),
        })
    }

    /// Refuses `source` unless it is still the planned file, unwritten since; `when` says
    /// at which moment of the job it was found changed ("before sealing").
    pub fn check(&self, source: &File, when: &str) -> Result<(), FormatError> {
        let now = Self::of(source)?;
        let same_device = self.machine != now.machine || self.device == now.device;
        let why = if !same_device || self.inode != now.inode {
            "it is no longer the file that was planned".to_string()
        } else if self.size != now.size {
            format!("it is {} bytes, not the {} planned", now.size, self.size)
        } else if self.modified_ns != now.modified_ns || self.changed_ns != now.changed_ns {
            "it was written since it was planned (its modification or change time moved)"
                .to_string()
        } else {
            return Ok(());
        };
        Err(changed(format!("the plaintext changed {when}: {why}")))
    }
}

/// This boot's id (read once), so that identities taken on other machines are told apart;
/// 0 where the system has none.
fn machine_id() -> u128 {
    static MACHINE: OnceLock<u128> = OnceLock::new();
    *MACHINE.get_or_init(|| {
        fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .and_then(|text| u128::from_str_radix(&text.trim().replace('-', ""), 16).ok())
            .unwrap_or(0)
    })
}

/// Creates `path` for one of a job's outputs (the temporary file the parts are written
/// into): exclusively, so that neither an existing file nor a link put in its place is
/// ever opened, and readable and writable by its owner only (mode 0600 whatever the umask),
/// as [`crate::file`]'s outputs are. Renaming or linking it into place keeps the mode.
pub fn create_output(path: &Path) -> Result<File, FormatError> {
    let refuse = |error: io::Error| {
        if error.kind() == io::ErrorKind::AlreadyExists {
            FormatError::OutputExists(path.to_path_buf())
        } else {
            FormatError::OpenOutput {
                path: path.to_path_buf(),
                error,
            }
        }
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(refuse)?;
    // open(2) masks the mode with the umask; the mode is set whole on the open file.
    if let Err(error) = file.set_permissions(Permissions::from_mode(0o600)) {
        drop(file);
        let _ = fs::remove_file(path);
        return Err(refuse(error));
    }
    Ok(file)
}

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

/// A new message to be sealed in parts: its envelope, its keys, its layout and the
/// identity of its source.
pub struct EncryptPlan {
    envelope: Envelope,
    keys: PartKeys,
    layout: Layout,
    source: SourceIdentity,
}

impl EncryptPlan {
    /// Plans the message of the plaintext file `source` (its size, and its identity, which
    /// the workers check) under `secret` with fresh random salts (a passphrase is stretched
    /// here, once). The file must not change until the job is done.
    pub fn new(
        setup: &Setup<'_>,
        secret: Secret<'_>,
        source: &File,
    ) -> Result<EncryptPlan, FormatError> {
        Self::with_salts(setup, secret, Salts::random()?, source)
    }

    /// [`EncryptPlan::new`] with given salts, so that the result can be compared with
    /// [`crate::Encryptor::with_salts`] byte for byte. A salt must never repeat under one
    /// key: for tests and reproducible comparisons only.
    pub fn with_salts(
        setup: &Setup<'_>,
        secret: Secret<'_>,
        salts: Salts,
        source: &File,
    ) -> Result<EncryptPlan, FormatError> {
        let source = SourceIdentity::of(source)?;
        Geometry::for_plaintext(source.size)?;
        let (envelope, keys) = Envelope::create_with_salts(setup, secret, salts)?;
        let layout = Layout {
            envelope_bytes: envelope.len() as u64,
            plaintext_bytes: source.size,
        };
        layout.sealed_file_bytes()?;
        Ok(EncryptPlan {
            envelope,
            keys: PartKeys::new(keys),
            layout,
            source,
        })
    }

    /// The identity of the source as planned, for [`seal_part`] and [`seal_file`].
    pub fn source(&self) -> &SourceIdentity {
        &self.source
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
/// (the commitment checked) and the length authenticated once.
pub struct DecryptPlan {
    keys: PartKeys,
    layout: Layout,
}

impl DecryptPlan {
    /// Reads the envelope of `input`, unlocks it with `secret` and `context` (a passphrase
    /// within `limits`), measures the message from the file's length and authenticates
    /// that length: the final chunk must be the short one and open at its index (on
    /// `batcher`), so a file cut at a chunk boundary, with or without junk after the cut,
    /// extended, or missing its empty final chunk is refused here, before any length is
    /// reported. Leaves the file's cursor alone.
    pub fn new(
        batcher: &dyn ChunkBatcher,
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
        Self::read(batcher, format, secret, context, limits, &mut reader)
    }

    /// [`DecryptPlan::new`] over any seekable input (the message is the whole of it).
    pub(crate) fn read<R: Read + Seek>(
        batcher: &dyn ChunkBatcher,
        format: Format,
        secret: Secret<'_>,
        context: &[u8],
        limits: &KdfLimits,
        input: &mut R,
    ) -> Result<DecryptPlan, FormatError> {
        let total = input.seek(SeekFrom::End(0)).map_err(FormatError::Read)?;
        input.seek(SeekFrom::Start(0)).map_err(FormatError::Read)?;
        let envelope = Envelope::read(format, input)?;
        let keys = envelope.unlock_within(secret, context, limits)?;
        let envelope_bytes = envelope.len() as u64;
        let sealed = total
            .checked_sub(envelope_bytes)
            .ok_or(FormatError::TruncatedHeader("Cobblestone"))?;
        let geometry = Geometry::for_sealed(sealed)?;
        authenticate_length(batcher, &keys, input, envelope_bytes, &geometry)?;
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
        prepare_plain_output(output, &self.layout)
    }
}

/// [`DecryptPlan::prepare_output`] from the layout alone, for a coordinator that kept only
/// the layout: gives `output` the plaintext's length (it reads as zeros until the parts are
/// opened into it).
pub fn prepare_plain_output(output: &File, layout: &Layout) -> Result<(), FormatError> {
    output.set_len(0).map_err(FormatError::Write)?;
    output
        .set_len(layout.plaintext_bytes)
        .map_err(FormatError::Write)
}

/// Reads `file` from `offset` to `end` with `read_at`, leaving the file's cursor alone.
struct PositionalReader<'f> {
    file: &'f File,
    offset: u64,
    end: u64,
}

impl Seek for PositionalReader<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let position = match to {
            SeekFrom::Start(offset) => Some(offset),
            SeekFrom::End(offset) => self.end.checked_add_signed(offset),
            SeekFrom::Current(offset) => self.offset.checked_add_signed(offset),
        };
        self.offset = position.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a seek before the file's start",
            )
        })?;
        Ok(self.offset)
    }
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
///
/// The plaintext file must still be the one planned, unwritten since (`source`, from
/// [`EncryptPlan::source`]): checked before sealing, and again after, since the keys and
/// nonces of a plan must never seal other bytes. A changed file is refused
/// ([`FormatError::Read`], "the input changed"); one found changed after sealing leaves
/// chunks in `sealed` that the coordinator must discard with the rest of the output.
#[allow(clippy::too_many_arguments)]
pub fn seal_part(
    batcher: &dyn ChunkBatcher,
    keys: &PartKeys,
    layout: &Layout,
    source: &SourceIdentity,
    chunks: Range<u64>,
    plaintext: &File,
    sealed: &File,
    options: &StreamOptions<'_>,
) -> Result<u64, FormatError> {
    let total = layout.check(&chunks)?;
    check_planned(layout, source)?;
    source.check(plaintext, "before sealing")?;
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
    source.check(plaintext, "while it was sealed")?;
    Ok(done)
}

/// Refuses a source identity that is not the layout's (a plan's pieces mixed up).
fn check_planned(layout: &Layout, source: &SourceIdentity) -> Result<(), FormatError> {
    if source.size == layout.plaintext_bytes {
        return Ok(());
    }
    Err(FormatError::Range(format!(
        "a source of {} bytes for a layout of {} plaintext bytes: not one plan's",
        source.size, layout.plaintext_bytes
    )))
}

/// The plaintext file changed while (or since) it was planned.
fn changed(why: String) -> FormatError {
    FormatError::Read(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!(
            "{why}: the input changed while it was encrypted (it must not change during a job)"
        ),
    ))
}

/// Opens chunks `chunks` of the message in `sealed` laid out as `layout`, and writes their
/// plaintext into `plaintext` at `chunks.start * 16 KiB`. Every chunk authenticates before
/// any of its bytes is written (the pipeline of [`crate::range::decrypt_range`]), and a
/// range that holds the message's final chunk opens it first, so that a file whose end was
/// cut or replaced fails here even when the final chunk claims no plaintext; on a damaged
/// chunk the call fails, and the caller discards the output. Returns the plaintext
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
/// authenticates before any of its bytes is written, and a span that reaches the
/// message's end first authenticates the final chunk (the length). Returns the bytes
/// written. The random-access read a worker does for one piece of a larger range. Moves
/// the cursor of `sealed`.
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
/// with no name (mode 0600) and linked at the end, so that even a killed process leaves
/// nothing; an existing destination is replaced only with `replace`. `identity` is the
/// plan's ([`EncryptPlan::source`]): a source that changed since is refused, before and
/// after sealing, and then nothing is written. Returns the plaintext bytes.
#[allow(clippy::too_many_arguments)]
pub fn seal_file(
    batcher: &dyn ChunkBatcher,
    keys: &PartKeys,
    envelope: &[u8],
    layout: &Layout,
    identity: &SourceIdentity,
    source: &Path,
    destination: &Path,
    replace: bool,
    options: &StreamOptions<'_>,
) -> Result<u64, FormatError> {
    if envelope.len() as u64 != layout.envelope_bytes {
        return Err(FormatError::Range(format!(
            "an envelope of {} bytes for a layout of {}",
            envelope.len(),
            layout.envelope_bytes
        )));
    }
    check_planned(layout, identity)?;
    let input = open_input(source)?;
    identity.check(&input, "before sealing")?;
    let metadata = input.metadata().map_err(FormatError::Read)?;
    let mut output = OutputPlan::check(destination, Some(&metadata), replace)?.open()?;
    output.reserve(layout.sealed_file_bytes()?);
    output
        .file()
        .write_all(envelope)
        .map_err(FormatError::Write)?;
    let mut reader = (&input).take(layout.plaintext_bytes);
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
    identity.check(&input, "while it was sealed")?;
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
