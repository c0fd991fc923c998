//! `Cipher` against the job API it is built on: every suite, every way in (new buffer,
//! caller's buffer, in place, in pieces) gives the same bytes as `process_buffer` on `seq`,
//! on every CPU backend; GCM releases nothing when the tag does not match.

use parcrypt_engine::{Backend, Cipher, CipherSpec, Direction, Engine, JobError};
use std::sync::Arc;

#[path = "../../../tests/support/engine.rs"]
mod engine;
#[path = "support/pieces.rs"]
mod pieces;

use engine::Message;
use pieces::in_two_pieces;

fn key_and_iv(suite: CipherSpec) -> (Vec<u8>, Option<Vec<u8>>) {
    let key = (0..suite.algorithm.key_lengths().0 as u8).collect();
    let iv = match suite.mode {
        parcrypt_engine::Mode::Ecb => None,
        parcrypt_engine::Mode::Gcm => Some(vec![3u8; 12]),
        _ => Some(vec![5u8; suite.algorithm.block_size()]),
    };
    (key, iv)
}

fn expected(suite: CipherSpec, direction: Direction, input: &[u8], aad: Option<&[u8]>) -> Vec<u8> {
    let (key, iv) = key_and_iv(suite);
    let message = Message {
        aad,
        ..Message::of(suite, &key, iv.as_deref())
    };
    let seq = Engine::new(Backend::Seq, None).unwrap();
    message.run(&seq, direction, input).unwrap()
}

#[test]
fn every_way_in_gives_the_job_apis_bytes_on_every_cpu_backend() {
    let lengths = [0usize, 1, 15, 16, 17, 1000, (300 << 10) + 3];
    for backend in Backend::CPU {
        let engine = Arc::new(Engine::new(backend, Some(3)).unwrap());
        for suite in CipherSpec::all() {
            let (key, iv) = key_and_iv(suite);
            // A cipher's IV encrypts one message: each way in gets a cipher of its own.
            let fresh = || Cipher::new(Arc::clone(&engine), suite, &key, iv.as_deref()).unwrap();
            let aad = (suite.mode == parcrypt_engine::Mode::Gcm).then_some(&b"aad"[..]);
            for length in lengths {
                let plaintext: Vec<u8> = (0..length).map(|index| (index * 7) as u8).collect();
                let sealed = expected(suite, Direction::Encrypt, &plaintext, aad);
                let what = format!("{suite} on {backend}, {length} bytes");
                let cipher = fresh();
                assert_eq!(cipher.encrypt(&plaintext, aad).unwrap(), sealed, "{what}");
                assert_eq!(cipher.decrypt(&sealed, aad).unwrap(), plaintext, "{what}");

                let cipher = fresh();
                let mut output = vec![0u8; cipher.max_output_length(Direction::Encrypt, length)];
                let written = cipher.encrypt_into(&plaintext, &mut output, aad).unwrap();
                assert_eq!(&output[..written], &sealed[..], "{what}: into");
                let mut output = vec![
                    0u8;
                    cipher
                        .max_output_length(Direction::Decrypt, sealed.len())
                        .max(sealed.len())
                ];
                let written = cipher.decrypt_into(&sealed, &mut output, aad).unwrap();
                assert_eq!(&output[..written], &plaintext[..], "{what}: into");

                let cipher = fresh();
                let mut buffer = plaintext.clone();
                buffer.resize(cipher.max_output_length(Direction::Encrypt, length), 0);
                let written = cipher.encrypt_in_place(&mut buffer, length, aad).unwrap();
                assert_eq!(&buffer[..written], &sealed[..], "{what}: in place");
                let written = cipher.decrypt_in_place(&mut buffer, written, aad).unwrap();
                assert_eq!(&buffer[..written], &plaintext[..], "{what}: in place");

                // In pieces: whole blocks first, the rest at the end.
                let block = suite.algorithm.block_size();
                let cipher = fresh();
                let split = length / 2 / block * block;
                let pieces = in_two_pieces(cipher.encryptor(aad).unwrap(), &plaintext, split, None);
                assert_eq!(pieces, sealed, "{what}: in pieces");
            }
        }
    }
}

#[test]
fn gcm_releases_nothing_on_a_bad_tag_and_small_buffers_are_refused() {
    let suite: CipherSpec = "aes-256-gcm".parse().unwrap();
    let (key, iv) = key_and_iv(suite);
    let cipher = Cipher::new(
        Engine::new(Backend::Pool, Some(2)).unwrap(),
        suite,
        &key,
        iv.as_deref(),
    )
    .unwrap();
    let plaintext = vec![9u8; 100_000];
    let mut sealed = cipher.encrypt(&plaintext, None).unwrap();
    let last = sealed.len() - 1;
    sealed[last] ^= 1;
    assert!(matches!(
        cipher.decrypt(&sealed, None),
        Err(JobError::Gcm(_))
    ));
    let mut output = vec![0u8; sealed.len()];
    assert!(cipher.decrypt_into(&sealed, &mut output, None).is_err());
    assert!(
        output.iter().all(|&byte| byte == 0),
        "plaintext left in the caller's buffer"
    );
    let mut buffer = sealed.clone();
    let length = buffer.len();
    assert!(cipher.decrypt_in_place(&mut buffer, length, None).is_err());
    assert!(
        buffer.iter().all(|&byte| byte == 0),
        "plaintext left in place"
    );
    // Another AAD than the one sealed with fails the same way.
    sealed[last] ^= 1;
    assert!(cipher.decrypt(&sealed, Some(b"other")).is_err());

    let mut small = vec![0u8; plaintext.len()];
    assert!(matches!(
        cipher.encrypt_into(&plaintext, &mut small, None),
        Err(JobError::OutputTooSmall { needed, got }) if needed == plaintext.len() + 16 && got == plaintext.len()
    ));
}

#[test]
fn keys_and_ivs_are_checked_when_the_cipher_is_made() {
    let engine = Arc::new(Engine::new(Backend::Seq, None).unwrap());
    let ctr: CipherSpec = "aes-128-ctr".parse().unwrap();
    assert!(Cipher::new(Arc::clone(&engine), ctr, &[0u8; 15], Some(&[0u8; 16])).is_err());
    assert!(matches!(
        Cipher::new(Arc::clone(&engine), ctr, &[0u8; 16], None),
        Err(JobError::IvMissing(_))
    ));
    let ecb: CipherSpec = "aes-128-ecb".parse().unwrap();
    let unpadded = Cipher::new(engine, ecb, &[0u8; 16], None)
        .unwrap()
        .padding(false);
    assert!(matches!(
        unpadded.encrypt(&[0u8; 17], None),
        Err(JobError::PartialBlock { .. })
    ));
    assert_eq!(unpadded.encrypt(&[0u8; 32], None).unwrap().len(), 32);
}
