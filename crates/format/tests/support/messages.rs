//! What the format's tests share: Argon2id made cheap (they check the file handling, not
//! the key derivation's cost; real files use [`Argon2Params::DEFAULT`]), and whole messages
//! through [`encrypt`] and [`decrypt`] under a key with the default setup.

#![allow(dead_code)] // each includer uses what it needs

use parcrypt_engine::Direction;
use parcrypt_format::{
    decrypt, encrypt, Argon2Params, ChunkBatcher, Format, Secret, Setup, StreamOptions,
};

/// The key of [`whole_message`].
pub const KEY: [u8; 16] = [0x42; 16];

/// 64 KiB, one pass, one lane.
pub const CHEAP: Argon2Params = Argon2Params {
    memory_kib: 64,
    passes: 1,
    lanes: 1,
};

/// `input` through [`encrypt`] (the default setup, fresh salts) or [`decrypt`] (a parcrypt
/// file without a context) under [`KEY`].
pub fn whole_message(
    direction: Direction,
    batcher: &dyn ChunkBatcher,
    input: &[u8],
    options: &StreamOptions<'_>,
) -> Vec<u8> {
    let mut output = Vec::new();
    let (reader, secret) = (&mut &input[..], Secret::Key(&KEY));
    match direction {
        Direction::Encrypt => encrypt(
            batcher,
            &Setup::default(),
            secret,
            reader,
            &mut output,
            options,
        ),
        Direction::Decrypt => decrypt(
            batcher,
            Format::Parcrypt,
            secret,
            b"",
            reader,
            &mut output,
            options,
        ),
    }
    .unwrap();
    output
}
