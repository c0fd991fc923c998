//! Seeks to the middle of an encrypted file and reads 1 KiB through `Read + Seek`: only the
//! chunks under that kibibyte (and the final chunk, which proves the length) are read and
//! authenticated.
//!
//! `cargo run -p parcrypt --example seek`

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use parcrypt::{batcher_for, Backend, Decryptor, Engine, FileOptions, Format, Secret, Suite};

/// Any failure ends the program with the error and a non-zero exit status.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let engine = Engine::new(Backend::Pool, None)?;
    let batcher = batcher_for(&engine);
    let key = [0x5au8; 32];

    let folder = tempfile::tempdir()?;
    let plain_path = folder.path().join("large.bin");
    let sealed_path = folder.path().join("large.bin.parcrypt");
    let text: Vec<u8> = (0..16u64 << 20).map(|i| (i * 31 + i / 977) as u8).collect();
    std::fs::write(&plain_path, &text)?;
    FileOptions::new()
        .engine(&engine)
        .suite(Suite::Cobblestone256)
        .encrypt_file(&plain_path, &sealed_path, Secret::Key(&key))?;

    let mut reader = Decryptor::new(Format::Parcrypt, File::open(&sealed_path)?)?
        .unlock(Secret::Key(&key), b"")?
        .seekable(batcher.as_ref())?;
    let length = reader.seek(SeekFrom::End(0))?;
    let middle = reader.seek(SeekFrom::Start(length / 2))?;
    let mut kibibyte = [0u8; 1024];
    reader.read_exact(&mut kibibyte)?;
    let start = middle as usize;
    if kibibyte[..] != text[start..start + 1024] {
        return Err(format!("the kibibyte at {middle} differs from the original").into());
    }
    println!("read 1 KiB at {middle} of {length} plaintext bytes: it matches");
    Ok(())
}
