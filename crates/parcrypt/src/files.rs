//! The pieces parcrypt's own front ends build their file commands from: destination checks,
//! output files that appear only when complete, the streaming pipeline with progress and
//! stage times, and the handling of a closed pipe.
//!
//! A program that encrypts files calls [`crate::encrypt_file`] or [`crate::FileOptions`];
//! these are for a front end that needs to report progress or check paths itself.

/// How [`encrypt_file_with`] and [`decrypt_file_with`] treat the destination and report
/// progress.
pub use parcrypt_format::file::FileOptions as PipelineOptions;
pub use parcrypt_format::file::{
    check_stdout, is_terminal, open_input, stdin_metadata, stdout_metadata, OutputFile, OutputPlan,
};
/// The file calls of the streaming pipeline, with a chunk batcher and [`PipelineOptions`].
pub use parcrypt_format::file::{
    decrypt_file as decrypt_file_with, encrypt_file as encrypt_file_with,
};
pub use parcrypt_format::stream::StageTimes;
pub use parcrypt_format::{decrypt, encrypt};

/// The operating system's error text without Rust's " (os error N)" suffix, for messages
/// read by people.
pub use parcrypt_format::error::plain;

/// A closed pipe (`parcrypt ... | head`) ends a command quietly, as it does for `cat`.
pub mod pipes {
    pub use parcrypt_sys::pipes::*;
}
