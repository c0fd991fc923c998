//! `KeyedCipher`: one key set up once, a new IV per message. It must give the bytes of the
//! per-call job API (`process_buffer` on `seq`) and of RustCrypto for every suite, IV and
//! size, on every CPU backend, from clones on several threads at once; refuse bad IVs and
//! AAD; and release nothing when a GCM tag does not match.
// Tests print their seed to stderr, where libtest captures it.
#![allow(clippy::disallowed_macros)]

#[path = "../../../tests/support/engine.rs"]
mod engine;
#[path = "support/pieces.rs"]
mod pieces;
#[path = "../../format/tests/support/random.rs"]
mod random;

use std::sync::Arc;

use aes_gcm::aead::{AeadInOut, KeyInit};
use ctr::cipher::{KeyIvInit, StreamCipher};
use engine::Message;
use parcrypt_engine::{
    Backend, Cipher, CipherSpec, Direction, Engine, Implementation, JobError, KeyedCipher, Mode,
    INLINE_MESSAGE_BYTES,
};
use pieces::in_two_pieces;
use rand::rngs::StdRng;
use rand::{Rng, RngExt};
use random::seeded_rng;

/// Sizes on both sides of a block, of the inline limit, and one the pool splits.
const SIZES: [usize; 9] = [
    0,
    1,
    15,
    16,
    17,
    1000,
    INLINE_MESSAGE_BYTES,
    INLINE_MESSAGE_BYTES + 17,
    (200 << 10) + 3,
];

fn random_bytes(rng: &mut StdRng, length: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; length];
    rng.fill_bytes(&mut bytes);
    bytes
}

fn random_key(rng: &mut StdRng, suite: CipherSpec) -> Vec<u8> {
    let (low, high) = suite.algorithm.key_lengths();
    let length = rng.random_range(low..=high);
    random_bytes(rng, length)
}

fn random_iv(rng: &mut StdRng, suite: CipherSpec) -> Option<Vec<u8>> {
    match suite.mode {
        Mode::Ecb => None,
        Mode::Gcm if rng.random_bool(0.6) => Some(random_bytes(rng, 12)),
        Mode::Gcm => {
            let length = rng.random_range(1..=40);
            Some(random_bytes(rng, length))
        }
        _ => Some(random_bytes(rng, suite.algorithm.block_size())),
    }
}

/// What the per-call job API gives on `seq`: the path `Cipher` took before it was keyed.
fn per_call(
    suite: CipherSpec,
    direction: Direction,
    key: &[u8],
    iv: Option<&[u8]>,
    aad: Option<&[u8]>,
    input: &[u8],
) -> Vec<u8> {
    let message = Message {
        aad,
        // `random_iv` draws GCM IVs of 1 to 40 bytes: short ones asked for (issue 31 finding 3).
        allow_short_gcm_iv: true,
        ..Message::of(suite, key, iv)
    };
    let seq = Engine::new(Backend::Seq, None).unwrap();
    message.run(&seq, direction, input).unwrap()
}

/// RustCrypto's answer where it has the suite: AES-GCM with a 96-bit nonce and AES-CTR.
fn rustcrypto(
    suite: CipherSpec,
    key: &[u8],
    iv: &[u8],
    aad: &[u8],
    plaintext: &[u8],
) -> Option<Vec<u8>> {
    let mut data = plaintext.to_vec();
    match (suite.to_string().as_str(), iv.len()) {
        ("aes-128-gcm", 12) | ("aes-256-gcm", 12) => {
            let tag = if key.len() == 16 {
                aes_gcm::Aes128Gcm::new_from_slice(key)
                    .unwrap()
                    .encrypt_inout_detached(iv.try_into().unwrap(), aad, data.as_mut_slice().into())
                    .unwrap()
                    .to_vec()
            } else {
                aes_gcm::Aes256Gcm::new_from_slice(key)
                    .unwrap()
                    .encrypt_inout_detached(iv.try_into().unwrap(), aad, data.as_mut_slice().into())
                    .unwrap()
                    .to_vec()
            };
            data.extend_from_slice(&tag);
        }
        ("aes-128-ctr", _) => ctr::Ctr128BE::<aes::Aes128>::new_from_slices(key, iv)
            .unwrap()
            .apply_keystream(&mut data),
        ("aes-192-ctr", _) => ctr::Ctr128BE::<aes::Aes192>::new_from_slices(key, iv)
            .unwrap()
            .apply_keystream(&mut data),
        ("aes-256-ctr", _) => ctr::Ctr128BE::<aes::Aes256>::new_from_slices(key, iv)
            .unwrap()
            .apply_keystream(&mut data),
        _ => return None,
    }
    Some(data)
}

#[test]
fn every_form_matches_the_per_call_path_and_rustcrypto_on_every_cpu_backend() {
    let mut rng = seeded_rng("keyed_matches");
    let mut checked_against_rustcrypto = 0;
    for backend in Backend::CPU {
        let engine = Arc::new(Engine::new(backend, Some(3)).unwrap());
        for suite in CipherSpec::all() {
            let key = random_key(&mut rng, suite);
            let keyed = KeyedCipher::new(Arc::clone(&engine), suite, &key)
                .unwrap()
                .allow_short_gcm_iv(true);
            for size in SIZES {
                // A new IV for each message on the one object.
                let iv = random_iv(&mut rng, suite);
                let iv = iv.as_deref();
                let aad_bytes = random_bytes(&mut rng, size % 37);
                let aad = (suite.mode == Mode::Gcm).then_some(&aad_bytes[..]);
                let plaintext = random_bytes(&mut rng, size);
                let what = format!("{suite} on {backend}, {size} bytes, IV {iv:?}");

                let sealed = per_call(suite, Direction::Encrypt, &key, iv, aad, &plaintext);
                if let Some(theirs) =
                    rustcrypto(suite, &key, iv.unwrap_or_default(), &aad_bytes, &plaintext)
                {
                    assert_eq!(
                        sealed, theirs,
                        "{what}: the per-call path against RustCrypto"
                    );
                    checked_against_rustcrypto += 1;
                }
                assert_eq!(
                    keyed.encrypt(iv, &plaintext, aad).unwrap(),
                    sealed,
                    "{what}"
                );
                assert_eq!(
                    keyed.decrypt(iv, &sealed, aad).unwrap(),
                    plaintext,
                    "{what}"
                );

                let mut output = vec![0u8; keyed.max_output_length(Direction::Encrypt, size)];
                let written = keyed
                    .encrypt_into(iv, &plaintext, &mut output, aad)
                    .unwrap();
                assert_eq!(&output[..written], &sealed[..], "{what}: encrypt_into");
                let mut output =
                    vec![0u8; keyed.max_output_length(Direction::Decrypt, sealed.len())];
                let written = keyed.decrypt_into(iv, &sealed, &mut output, aad).unwrap();
                assert_eq!(&output[..written], &plaintext[..], "{what}: decrypt_into");

                let mut buffer = plaintext.clone();
                buffer.resize(keyed.max_output_length(Direction::Encrypt, size), 0);
                let length = keyed.encrypt_in_place(iv, &mut buffer, size, aad).unwrap();
                assert_eq!(&buffer[..length], &sealed[..], "{what}: encrypt_in_place");
                let length = keyed
                    .decrypt_in_place(iv, &mut buffer, length, aad)
                    .unwrap();
                assert_eq!(
                    &buffer[..length],
                    &plaintext[..],
                    "{what}: decrypt_in_place"
                );

                // In pieces, through a crypter that borrows the same key schedule.
                let block = suite.algorithm.block_size();
                let body = size / 2 / block * block;
                let encryptor = || keyed.encryptor(iv, aad).unwrap();
                let first = in_two_pieces(encryptor(), &plaintext, body, None);
                assert_eq!(first, sealed, "{what}: encryptor");

                // The same from one buffer into another (one pass for CTR and GCM), the
                // output poisoned so a byte left unwritten shows.
                let first = in_two_pieces(encryptor(), &plaintext, body, Some(0xA5));
                assert_eq!(first, sealed, "{what}: encryptor, update_into");
                let decryptor = keyed.decryptor(iv, aad).unwrap();
                let cut = body.min(sealed.len().saturating_sub(16)) / block * block;
                let opened = in_two_pieces(decryptor, &sealed, cut, Some(0x5A));
                assert_eq!(opened, plaintext, "{what}: decryptor, update_into");
            }
        }
    }
    assert!(checked_against_rustcrypto > 0);
}

/// A message's IV, plaintext and ciphertext.
type Sealed = (Option<Vec<u8>>, Vec<u8>, Vec<u8>);

#[test]
fn one_object_and_its_clones_serve_many_messages_from_several_threads_at_once() {
    let mut rng = seeded_rng("keyed_threads");
    let engine = Arc::new(Engine::new(Backend::Pool, Some(2)).unwrap());
    for name in ["aes-128-gcm", "aes-256-ctr", "rc6-128-gcm", "bf-cbc"] {
        let suite: CipherSpec = name.parse().unwrap();
        let key = random_key(&mut rng, suite);
        let keyed = KeyedCipher::new(Arc::clone(&engine), suite, &key)
            .unwrap()
            .allow_short_gcm_iv(true);
        // Messages with their own IVs and the bytes the per-call path gives for each.
        let messages: Vec<Sealed> = (0..24)
            .map(|index| {
                let iv = random_iv(&mut rng, suite);
                let plaintext = random_bytes(&mut rng, [0, 1, 17, 300, 5000, 70_000][index % 6]);
                let sealed = per_call(
                    suite,
                    Direction::Encrypt,
                    &key,
                    iv.as_deref(),
                    None,
                    &plaintext,
                );
                (iv, plaintext, sealed)
            })
            .collect();
        std::thread::scope(|scope| {
            for thread in 0..4 {
                // Two threads share the object itself, two run clones of it.
                let clone = keyed.clone();
                let keyed = &keyed;
                let messages = &messages;
                scope.spawn(move || {
                    let cipher = if thread % 2 == 0 { keyed } else { &clone };
                    for round in 0..3 {
                        for (index, (iv, plaintext, sealed)) in messages.iter().enumerate() {
                            if (index + round + thread) % 2 == 0 {
                                continue;
                            }
                            let iv = iv.as_deref();
                            assert_eq!(&cipher.encrypt(iv, plaintext, None).unwrap(), sealed);
                            assert_eq!(&cipher.decrypt(iv, sealed, None).unwrap(), plaintext);
                        }
                    }
                });
            }
        });
        // The object outlives its clones and still works.
        let (iv, plaintext, sealed) = &messages[3];
        assert_eq!(
            &keyed.encrypt(iv.as_deref(), plaintext, None).unwrap(),
            sealed
        );
    }
}

#[test]
fn the_fixed_iv_cipher_is_a_keyed_cipher_with_its_iv() {
    let engine = Arc::new(Engine::new(Backend::Auto, Some(2)).unwrap());
    for suite in CipherSpec::all() {
        let key: Vec<u8> = (0..suite.algorithm.key_lengths().0 as u8).collect();
        let iv = match suite.mode {
            Mode::Ecb => None,
            Mode::Gcm => Some(vec![4u8; 12]),
            _ => Some(vec![4u8; suite.algorithm.block_size()]),
        };
        let cipher = Cipher::new(Arc::clone(&engine), suite, &key, iv.as_deref()).unwrap();
        let plaintext = vec![0x5Au8; 777];
        let sealed = cipher.encrypt(&plaintext, None).unwrap();
        assert_eq!(
            cipher
                .keyed()
                .encrypt(iv.as_deref(), &plaintext, None)
                .unwrap(),
            sealed
        );
        assert_eq!(cipher.iv(), iv.as_deref());
        // The reference implementation gives the same bytes.
        let reference = cipher.clone().implementation(Implementation::Reference);
        assert_eq!(
            reference.keyed().implementation(),
            Implementation::Reference
        );
        // A clone shares the IV, which has encrypted its one message (issue 31 finding 3):
        // the same bytes come from the keyed cipher under that IV.
        assert_eq!(
            reference
                .keyed()
                .encrypt(iv.as_deref(), &plaintext, None)
                .unwrap(),
            sealed,
            "{suite}"
        );
    }
}

#[test]
fn update_into_refuses_a_short_output_and_partial_blocks() {
    let engine = Arc::new(Engine::new(Backend::Pool, Some(2)).unwrap());
    for name in ["aes-128-ctr", "aes-128-gcm", "aes-128-cbc"] {
        let suite: CipherSpec = name.parse().unwrap();
        let keyed = KeyedCipher::new(Arc::clone(&engine), suite, &[1u8; 16]).unwrap();
        let iv = vec![3u8; if suite.mode == Mode::Gcm { 12 } else { 16 }];
        let mut crypter = keyed.encryptor(Some(&iv), None).unwrap();
        let input = [7u8; 64];
        let mut short = [0u8; 48];
        assert!(
            matches!(
                crypter.update_into(&input, &mut short),
                Err(JobError::OutputTooSmall {
                    needed: 64,
                    got: 48
                })
            ),
            "{name}"
        );
        let mut output = [0u8; 64];
        assert!(
            matches!(
                crypter.update_into(&input[..20], &mut output),
                Err(JobError::PartialBlock { length: 20, .. })
            ),
            "{name}"
        );
        // A longer output is fine: the front of it is written.
        let mut long = [0u8; 80];
        crypter.update_into(&input, &mut long).unwrap();
        assert_eq!(
            long[64..],
            [0u8; 16],
            "{name}: nothing past the input's length"
        );
        assert_ne!(long[..64], input[..], "{name}");
    }
}

#[test]
fn bad_ivs_and_aad_are_refused_with_a_reason() {
    let engine = Arc::new(Engine::new(Backend::Seq, None).unwrap());
    let keyed = |name: &str| {
        let suite: CipherSpec = name.parse().unwrap();
        KeyedCipher::new(Arc::clone(&engine), suite, &[1u8; 16]).unwrap()
    };
    let ctr = keyed("aes-128-ctr");
    assert!(matches!(
        ctr.encrypt(Some(&[0u8; 15]), b"data", None),
        Err(JobError::IvLength {
            expected: 16,
            got: 15,
            ..
        })
    ));
    assert!(matches!(
        ctr.encrypt(None, b"data", None),
        Err(JobError::IvMissing(_))
    ));
    assert!(matches!(
        ctr.encrypt(Some(&[0u8; 16]), b"data", Some(b"aad")),
        Err(JobError::AadNotUsed)
    ));
    let ecb = keyed("aes-128-ecb");
    assert!(matches!(
        ecb.encrypt(Some(&[0u8; 16]), b"data", None),
        Err(JobError::IvNotUsed(_))
    ));
    let gcm = keyed("aes-128-gcm");
    let error = gcm.encrypt(Some(&[]), b"data", None).unwrap_err();
    assert!(error.to_string().contains("at least 1 byte"), "{error}");
    assert!(matches!(
        gcm.decrypt(Some(&[0u8; 12]), &[0u8; 15], None),
        Err(JobError::MissingTag(15))
    ));
    let mut small = [0u8; 4];
    assert!(matches!(
        gcm.encrypt_into(Some(&[0u8; 12]), b"data", &mut small, None),
        Err(JobError::OutputTooSmall { needed: 20, got: 4 })
    ));
    assert!(KeyedCipher::new(
        Arc::clone(&engine),
        "aes-256-gcm".parse().unwrap(),
        &[0u8; 16]
    )
    .is_err());
    // Refused messages leave the caller's plaintext alone.
    let mut buffer = *b"plaintext and room for the tag..";
    assert!(gcm.encrypt_in_place(None, &mut buffer, 9, None).is_err());
    assert_eq!(&buffer, b"plaintext and room for the tag..");
}

#[test]
fn a_tag_that_does_not_match_releases_nothing_in_any_form() {
    let nonce = [8u8; 12];
    for backend in [Backend::Seq, Backend::Pool] {
        let engine = Arc::new(Engine::new(backend, Some(2)).unwrap());
        for name in ["aes-128-gcm", "aes-256-gcm", "rc6-256-gcm"] {
            let suite: CipherSpec = name.parse().unwrap();
            let keyed = KeyedCipher::new(
                Arc::clone(&engine),
                suite,
                &[3u8; 32][..suite.algorithm.key_lengths().0],
            )
            .unwrap();
            for size in [0usize, 1, 16, 1000, 300 << 10] {
                let plaintext = vec![0x77u8; size];
                let sealed = keyed
                    .encrypt(Some(&nonce), &plaintext, Some(b"aad"))
                    .unwrap();
                let mut forgeries = Vec::new();
                let mut flipped = sealed.clone();
                flipped[sealed.len() / 2] ^= 0x10;
                forgeries.push((flipped, &nonce[..], &b"aad"[..]));
                forgeries.push((sealed.clone(), &[9u8; 12][..], &b"aad"[..]));
                forgeries.push((sealed.clone(), &nonce[..], &b"bad"[..]));
                for (bytes, iv, aad) in forgeries {
                    let what = format!("{name} on {backend}, {size} bytes");
                    assert!(
                        matches!(
                            keyed.decrypt(Some(iv), &bytes, Some(aad)),
                            Err(JobError::Gcm(_))
                        ),
                        "{what}"
                    );
                    let mut output = vec![0xEEu8; bytes.len()];
                    assert!(keyed
                        .decrypt_into(Some(iv), &bytes, &mut output, Some(aad))
                        .is_err());
                    assert!(output.iter().all(|&byte| byte == 0), "{what}: into wiped");
                    let mut buffer = bytes.clone();
                    assert!(keyed
                        .decrypt_in_place(Some(iv), &mut buffer, bytes.len(), Some(aad))
                        .is_err());
                    assert!(
                        buffer.iter().all(|&byte| byte == 0),
                        "{what}: in place wiped"
                    );
                }
            }
        }
    }
}

#[test]
fn key_material_wipes_itself_when_the_last_clone_is_dropped() {
    // A compile-time check: the keyed cipher (and so the key schedule behind it) is
    // `ZeroizeOnDrop`, which each of its parts is.
    fn wipes_itself<T: zeroize::ZeroizeOnDrop>() {}
    wipes_itself::<KeyedCipher>();
}

#[test]
fn unpadded_block_modes_take_whole_blocks_only() {
    let engine = Arc::new(Engine::new(Backend::Seq, None).unwrap());
    for name in ["aes-128-ecb", "aes-128-cbc", "bf-ecb", "bf-cbc"] {
        let suite: CipherSpec = name.parse().unwrap();
        let block = suite.algorithm.block_size();
        let key = vec![6u8; suite.algorithm.key_lengths().0];
        let iv = (suite.mode == Mode::Cbc).then(|| vec![2u8; block]);
        let keyed = KeyedCipher::new(Arc::clone(&engine), suite, &key)
            .unwrap()
            .padding(false);
        for blocks in [0usize, 1, 3] {
            let plaintext = vec![0x33u8; blocks * block];
            let unpadded = Message {
                padding: false,
                ..Message::of(suite, &key, iv.as_deref())
            };
            let expected = unpadded.encrypt(&engine, &plaintext).unwrap();
            let sealed = keyed.encrypt(iv.as_deref(), &plaintext, None).unwrap();
            assert_eq!(sealed, expected, "{name}, {blocks} blocks");
            assert_eq!(
                keyed.decrypt(iv.as_deref(), &sealed, None).unwrap(),
                plaintext
            );
        }
        assert!(matches!(
            keyed.encrypt(iv.as_deref(), &[0u8; 5], None),
            Err(JobError::PartialBlock { length: 5, .. })
        ));
    }
}
