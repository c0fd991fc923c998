//! The one error type of the crate: every variant prints as one line, and none carries key
//! material (a malformed key is described, never quoted).

use std::io;

/// What went wrong reading or writing an age file, or parsing a key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The header does not parse (or a stanza addressed to a given identity is malformed).
    #[error("malformed age header: {0}")]
    Header(String),
    /// The ASCII armor around the file is not strict PEM as the age specification requires.
    #[error("invalid ASCII armor: {0}")]
    Armor(String),
    /// No identity unwrapped the file key from any recipient stanza.
    #[error("no identity matches any recipient of this age file (stanzas: {0})")]
    NoMatch(String),
    /// A file key was unwrapped but the header's MAC does not match: the header was altered.
    #[error("the age header's MAC does not match: the header was altered")]
    HeaderMac,
    /// The payload does not authenticate all the way to its end.
    #[error("age payload failure: {0}")]
    Payload(String),
    /// A recipient, identity or passphrase that cannot be used.
    #[error("invalid key: {0}")]
    Key(String),
    /// Recipients that cannot be combined in one file (scrypt alone, post-quantum alone).
    #[error("{0}")]
    Recipients(String),
    /// An scrypt stanza asks for more work than the identity allows.
    #[error(
        "scrypt work factor 2^{got} is above the limit 2^{max}: raise the limit to open this file"
    )]
    WorkFactor {
        /// The base-2 logarithm the stanza asks for.
        got: u32,
        /// The largest one allowed.
        max: u8,
    },
    /// Reading the input or writing the output failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl Error {
    /// Whether the error is a header failure in the sense of the C2SP CCTV test kit: the
    /// header (or a stanza for one of the identities, or the nonce after it) is malformed.
    pub fn is_header_failure(&self) -> bool {
        matches!(self, Error::Header(_) | Error::WorkFactor { .. })
    }
}

impl From<Error> for io::Error {
    fn from(error: Error) -> io::Error {
        match error {
            Error::Io(error) => error,
            other => io::Error::new(io::ErrorKind::InvalidData, other),
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
