//! Why a file could not be encrypted or decrypted, in words for the person who ran it.

use std::io;
use std::path::PathBuf;

use crate::cobblestone::{CHUNK_BYTES, TAG_BYTES};

/// A result whose error is, unless said otherwise, a [`FormatError`] (as `io::Result` is for
/// `io::Error`).
pub type Result<T, E = FormatError> = std::result::Result<T, E>;

/// Every failure of this crate. Each message is one line that says what went wrong and,
/// where there is one, what to do next.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The input does not start with a parcrypt header.
    #[error("not a parcrypt file (it does not start with a parcrypt header; a bare Cobblestone message needs the cobblestone format and its key)")]
    NotParcrypt,
    /// The header names a format version newer than this build reads.
    #[error("this file was written by a newer parcrypt (format version {0}); this parcrypt reads versions 1 and 2")]
    UnsupportedVersion(u8),
    /// A header field holds a value no writer produces (which field, in words).
    #[error("damaged header: {0}")]
    DamagedHeader(&'static str),
    /// The input ends inside a header (which header, in words).
    #[error("truncated: the file ends inside its {0} header")]
    TruncatedHeader(&'static str),
    /// A key of a length no suite takes (the length given).
    #[error("the key must be 16 bytes (AES-128) or 32 bytes (AES-256), got {0} bytes")]
    KeyLength(usize),
    /// A key whose length does not match the message's suite.
    #[error("this message needs a {expected}-byte key ({suite}), got {got} bytes")]
    KeySuiteMismatch {
        /// The message's suite.
        suite: &'static str,
        /// The key length the suite takes.
        expected: usize,
        /// The key length given.
        got: usize,
    },
    /// The key commitment does not match: wrong key, passphrase or context.
    #[error("wrong key or passphrase (key commitment mismatch)")]
    WrongKey,
    /// A key was given for a message sealed under a passphrase.
    #[error("this file was encrypted with a passphrase: give the passphrase")]
    NeedsPassphrase,
    /// A passphrase was given for a message sealed under a key.
    #[error("this file was encrypted with a key: give the key")]
    NeedsKey,
    /// A key or passphrase was given for a file encrypted to public-key recipients.
    #[error("this file was encrypted to public-key recipients: give an identity (an age identity file, AGE-SECRET-KEY-...)")]
    NeedsIdentity,
    /// Recipients a file cannot be encrypted to (why, in words).
    #[error("{0}")]
    Recipients(String),
    /// No identity unwrapped the file key from any recipient stanza (the stanza types).
    #[error("no identity matches any recipient of this file (its stanzas: {0})")]
    NoMatchingIdentity(String),
    /// A recipient stanza addressed to one of the identities is malformed (why).
    #[error("damaged header: {0}")]
    DamagedStanza(String),
    /// The file key was unwrapped but the header's MAC does not match: the header changed.
    #[error("damaged header: its MAC does not match (the header was changed: a stanza swapped, dropped, added or altered)")]
    HeaderMac,
    /// The header of a recipient file opened (its MAC matched) but the message's key
    /// commitment does not match: a wrong context, or a message that was not written under
    /// this header.
    #[error("the message does not belong to this header or context: the header opened, but the key commitment does not match (a wrong --context, or a header moved onto another file's data)")]
    HeaderMismatch,
    /// An empty passphrase, which is refused.
    #[error("the passphrase is empty")]
    EmptyPassphrase,
    /// argon2id failed (its reason).
    #[error("passphrase key derivation (argon2id) failed: {0}")]
    Kdf(String),
    /// argon2id parameters outside the bounds this build accepts (which, in words).
    #[error("argon2id parameters out of range: {0}")]
    KdfLimits(String),
    /// A header asks for more argon2id work than the reader's budget allows
    /// ([`crate::KdfLimits`]); refused before any allocation or hashing.
    #[error("this file's passphrase key derivation asks for {}", .what.describe(*.asked, *.limit))]
    KdfBudget {
        /// Which cost is over.
        what: crate::header::KdfCost,
        /// What the header asks for (memory in KiB).
        asked: u32,
        /// What the budget allows (memory in KiB).
        limit: u32,
    },
    /// A chunk failed authentication; nothing from it on is released.
    #[error("damaged: chunk {index} (plaintext bytes {start}..{end}) failed authentication; the file was modified, truncated or extended", start = chunk_start(*index), end = chunk_start(*index).saturating_add(*bytes as u64))]
    DamagedChunk {
        /// The chunk's index from 0.
        index: u64,
        /// The plaintext bytes the chunk holds: a whole chunk's, less for the short final
        /// chunk, so that the range named ends where the file does.
        bytes: usize,
    },
    /// The message ends after whole chunks, without its final chunk.
    #[error("{}", truncated_after(*chunks))]
    TruncatedAfter {
        /// How many whole chunks were read.
        chunks: u64,
    },
    /// The message ends inside a chunk, before its tag.
    #[error("{}", truncated_chunk(*index, *bytes))]
    TruncatedChunk {
        /// The chunk's index from 0.
        index: u64,
        /// How many of its bytes were there.
        bytes: usize,
    },
    /// More chunks than Cobblestone's nonce space allows.
    #[error("message too long: Cobblestone allows at most 2^38 chunks (4 PiB)")]
    TooLong,
    /// A byte range that cannot be read (why, in words).
    #[error("{0}")]
    Range(String),
    /// Reading the input failed.
    #[error("cannot read input: {}", plain(.0))]
    Read(io::Error),
    /// Writing the output failed.
    #[error("cannot write output: {}", plain(.0))]
    Write(io::Error),
    /// The operating system gave no random bytes (its reason).
    #[error("cannot get random bytes from the operating system: {0}")]
    Random(String),
    /// The backend that seals or opens chunks failed (its message).
    #[error("{0}")]
    Backend(String),
    /// A secret could not be had (a key file, a passphrase, the terminal).
    #[error(transparent)]
    Secret(#[from] crate::secrets::SecretError),
    /// An input file that could not be opened.
    #[error("cannot open input '{}': {}", .path.display(), plain(.error))]
    OpenInput {
        /// The input.
        path: PathBuf,
        /// Why it could not be opened.
        error: io::Error,
    },
    /// An input that is a folder.
    #[error("input '{}' is a folder", .0.display())]
    InputIsFolder(PathBuf),
    /// An output that is a folder.
    #[error("output '{}' is a folder", .0.display())]
    OutputIsFolder(PathBuf),
    /// An output that is the input file itself.
    #[error("output '{}' is the input file; write to another file", .0.display())]
    OutputIsInput(PathBuf),
    /// An output that exists and may not be replaced.
    #[error("output '{}' already exists (allow replacing it, or choose another name)", .0.display())]
    OutputExists(PathBuf),
    /// Standard output is the input file (`> input` or `>> input`).
    #[error("standard output is the input file; write to another file")]
    StdoutIsInput,
    /// An output that is a symbolic link to a file whose folder does not exist.
    #[error("output '{}' is a link to '{}', whose folder does not exist", .link.display(), .target.display())]
    DanglingLink {
        /// The output, as given.
        link: PathBuf,
        /// Where its links lead.
        target: PathBuf,
    },
    /// An output whose folder does not exist.
    #[error("cannot write '{}': folder '{}' does not exist", .path.display(), .folder.display())]
    OutputFolderMissing {
        /// The output.
        path: PathBuf,
        /// Its folder.
        folder: PathBuf,
    },
    /// An output whose folder this process may not write in.
    #[error("cannot write '{}': no permission to create files in '{}'", .path.display(), .folder.display())]
    OutputFolderNotWritable {
        /// The output.
        path: PathBuf,
        /// Its folder.
        folder: PathBuf,
    },
    /// An output that could not be looked at or opened (a FIFO, a device, a link loop).
    #[error("cannot open output '{}': {}", .path.display(), plain(.error))]
    OpenOutput {
        /// The output.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// No temporary file could be made beside the output.
    #[error("cannot write in '{}': {}", .folder.display(), plain(.error))]
    CreateTemporary {
        /// The output's folder.
        folder: PathBuf,
        /// Why no file could be made there.
        error: io::Error,
    },
    /// The finished output could not be flushed to disk.
    #[error("cannot write '{}': {}", .path.display(), plain(.error))]
    FinishOutput {
        /// The output.
        path: PathBuf,
        /// Why it could not be flushed.
        error: io::Error,
    },
    /// The finished output could not be moved to its name.
    #[error("cannot create '{}': {}", .path.display(), plain(.error))]
    PersistOutput {
        /// The output.
        path: PathBuf,
        /// Why it could not be renamed into place.
        error: io::Error,
    },
}

impl From<FormatError> for io::Error {
    /// For the `Read` and `Write` adapters: the kind says what happened in I/O terms, and
    /// the [`FormatError`] itself travels inside (`get_ref`/`into_inner` and a downcast).
    fn from(error: FormatError) -> io::Error {
        let kind = match &error {
            FormatError::Read(inner) | FormatError::Write(inner) => inner.kind(),
            FormatError::TruncatedAfter { .. }
            | FormatError::TruncatedChunk { .. }
            | FormatError::TruncatedHeader(_) => io::ErrorKind::UnexpectedEof,
            _ => io::ErrorKind::InvalidData,
        };
        io::Error::new(kind, error)
    }
}

fn chunk_start(index: u64) -> u64 {
    index.saturating_mul(CHUNK_BYTES as u64)
}

fn truncated_after(chunks: u64) -> String {
    if chunks == 0 {
        "truncated after the header: a message has at least one chunk".to_string()
    } else {
        format!(
            "truncated after chunk {}: the short final chunk that ends every message is missing",
            chunks - 1
        )
    }
}

fn truncated_chunk(index: u64, bytes: usize) -> String {
    let place = if index == 0 {
        "after the header".to_string()
    } else {
        format!("after chunk {}", index - 1)
    };
    format!(
        "truncated {place}: chunk {index} has {bytes} bytes, fewer than its {TAG_BYTES}-byte tag"
    )
}

/// The operating system's error text without Rust's " (os error N)" suffix, for messages
/// read by people.
pub fn plain(error: &io::Error) -> String {
    parcrypt_engine::stream::plain(error)
}
