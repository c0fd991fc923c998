//! Encrypts and decrypts a buffer in memory with AES-128-GCM on one thread (`seq`) and on the
//! work-stealing pool (`pool`), through the facade crate only, and checks that both give the
//! same bytes. Exits non-zero on any mismatch.
//!
//! Run with `cargo run -p parcrypt --example raw_buffers`.

use parcrypt::hazmat::Cipher;
use parcrypt::{Backend, CipherSpec, Engine};

/// Any failure ends the program with the error and a non-zero exit status.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let suite: CipherSpec = "aes-128-gcm".parse()?;
    // A fixed key and nonce only because this is a demonstration: a real program draws the
    // key from a secret source and never encrypts two messages under one nonce.
    let key = [0x42u8; 16];
    let nonce = [0x24u8; 12];
    let aad = b"header the tag also covers";
    let message: Vec<u8> = (0..(4 << 20) + 7)
        .map(|index| (index % 251) as u8)
        .collect();

    let mut sealed = Vec::new();
    for backend in [Backend::Seq, Backend::Pool] {
        let engine = Engine::builder().backend(backend).build()?;
        let cipher = Cipher::new(engine, suite, &key, Some(&nonce))?;
        let ciphertext = cipher.encrypt(&message, Some(aad))?;
        if cipher.decrypt(&ciphertext, Some(aad))? != message {
            return Err(format!("{backend}: decryption did not give the message back").into());
        }
        println!(
            "{:<5} {} bytes sealed into {}",
            backend.name(),
            message.len(),
            ciphertext.len()
        );
        sealed.push(ciphertext);
    }
    if sealed[0] != sealed[1] {
        return Err("seq and pool disagree".into());
    }
    println!("seq and pool agree");
    Ok(())
}
