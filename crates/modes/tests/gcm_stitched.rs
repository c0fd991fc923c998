//! The stitched AES-GCM kernel against the two-pass path on the same machine, and against
//! the RustCrypto `aes-gcm` crate: every length 0..=1024 bytes, lengths around batch
//! boundaries, AES-128/192/256, both directions, ranges that start at arbitrary blocks
//! (as the engine's threads call them) and counters whose low word wraps inside a range.
//!
//! Where the CPU lacks VAES-512 or VPCLMULQDQ the stitched key falls back and the
//! comparisons still run (both sides two-pass); a line on stderr says so.

// Tests say on stderr what this machine could not run; libtest shows it.
#![allow(clippy::disallowed_macros)]

use aes_gcm::aead::{AeadInOut, KeyInit};
use parcrypt_ciphers::{new_cipher, Algorithm, BlockCipher, Implementation};
use parcrypt_modes::gcm::{GcmAccumulator, GcmKey, GcmMessage};
use parcrypt_modes::Direction;
use rand::rngs::StdRng;
use rand::{Rng, RngExt, SeedableRng};

const ALGORITHMS: [Algorithm; 3] = [Algorithm::Aes128, Algorithm::Aes192, Algorithm::Aes256];

/// A key with the stitched kernel on (where the CPU has it) and one with it off.
struct Keys {
    cipher: Box<dyn BlockCipher>,
    stitched: GcmKey,
    two_pass: GcmKey,
}

fn keys(algorithm: Algorithm, rng: &mut StdRng) -> Keys {
    let (length, _) = algorithm.key_lengths();
    let mut key = vec![0u8; length];
    rng.fill_bytes(&mut key);
    let cipher = new_cipher(algorithm, Implementation::Fast, &key).expect("valid key");
    let mut stitched = GcmKey::new(cipher.as_ref()).expect("AES is a 128-bit cipher");
    let mut two_pass = stitched.clone();
    if !stitched.set_stitched(true) {
        println!("SKIPPED: stitched AES-GCM not available on this CPU: both sides run two-pass");
    }
    assert!(!two_pass.set_stitched(false));
    Keys {
        cipher,
        stitched,
        two_pass,
    }
}

fn random_bytes(rng: &mut StdRng, length: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; length];
    rng.fill_bytes(&mut bytes);
    bytes
}

/// `process_range` with both keys on the same input; asserts equal output and partial sums
/// and returns the output.
fn both_paths_agree(
    keys: &Keys,
    message: &GcmMessage,
    direction: Direction,
    first_block: u64,
    input: &[u8],
    context: &str,
) -> Vec<u8> {
    let cipher = keys.cipher.as_ref();
    let mut stitched = input.to_vec();
    let stitched_sum =
        keys.stitched
            .process_range(message, cipher, direction, first_block, &mut stitched);
    let mut two_pass = input.to_vec();
    let two_pass_sum =
        keys.two_pass
            .process_range(message, cipher, direction, first_block, &mut two_pass);
    assert!(
        stitched == two_pass,
        "{context}: {direction:?} output differs"
    );
    assert_eq!(
        stitched_sum, two_pass_sum,
        "{context}: {direction:?} GHASH differs"
    );
    stitched
}

/// Every length 0..=1024 bytes and lengths around 32-block batches, in both directions.
#[test]
fn stitched_equals_two_pass_for_every_length() {
    let mut rng = StdRng::seed_from_u64(0x5717C4ED);
    let around_batches = [31, 32, 33, 63, 64, 65, 255, 256, 257, 511, 512, 513, 1000];
    let lengths: Vec<usize> = (0..=1024)
        .chain(
            around_batches
                .iter()
                .flat_map(|blocks| [blocks * 16 - 1, blocks * 16, blocks * 16 + 7]),
        )
        .collect();
    for algorithm in ALGORITHMS {
        let keys = keys(algorithm, &mut rng);
        let cipher = keys.cipher.as_ref();
        for &length in &lengths {
            let nonce: [u8; 12] = rng.random();
            let message = keys.stitched.message_with_nonce(cipher, &nonce);
            let plaintext = random_bytes(&mut rng, length);
            let context = format!("{algorithm}, {length} bytes");
            let ciphertext =
                both_paths_agree(&keys, &message, Direction::Encrypt, 0, &plaintext, &context);
            let decrypted = both_paths_agree(
                &keys,
                &message,
                Direction::Decrypt,
                0,
                &ciphertext,
                &context,
            );
            assert!(decrypted == plaintext, "{context}: round trip");
        }
    }
}

/// The text counter of block `first_block` of a message made so that block's low counter
/// word is `low`: for ranges across the wrap of GCM's 32-bit counter.
fn first_block_with_low_word(low: u32) -> u64 {
    // A 96-bit nonce gives J0 with low word 1, and the first text block counter 2.
    u64::from(low.wrapping_sub(2))
}

/// Ranges that start at arbitrary blocks (the engine's threads) and cross the counter's
/// 32-bit wrap: both paths agree per range, and the partial sums joined in order give the
/// same tag as the whole message and as the `aes-gcm` crate.
#[test]
fn ranges_at_any_block_add_up_to_the_whole() {
    let mut rng = StdRng::seed_from_u64(0x0FF5E7);
    for algorithm in ALGORITHMS {
        let keys = keys(algorithm, &mut rng);
        let cipher = keys.cipher.as_ref();
        for case in 0..24 {
            let length = rng.random_range(0..=40_000usize);
            let plaintext = random_bytes(&mut rng, length);
            let nonce: [u8; 12] = rng.random();
            let message = keys.stitched.message_with_nonce(cipher, &nonce);
            let blocks = length.div_ceil(16);
            // Half the cases start near the wrap of the low counter word.
            let start = if case % 2 == 0 {
                0
            } else {
                let before_wrap = rng.random_range(0..=blocks as u32 + 40);
                first_block_with_low_word(0u32.wrapping_sub(before_wrap))
            };

            let mut whole = plaintext.clone();
            let whole_sum = keys.stitched.process_range(
                &message,
                cipher,
                Direction::Encrypt,
                start,
                &mut whole,
            );

            let mut cuts: Vec<usize> = (0..rng.random_range(0..6))
                .map(|_| rng.random_range(0..=length / 16) * 16)
                .collect();
            cuts.extend([0, length]);
            cuts.sort_unstable();
            let mut joined = GcmAccumulator::default();
            let mut pieces = Vec::with_capacity(length);
            for range in cuts.windows(2) {
                let context = format!("{algorithm}, {length} bytes from block {start}, {range:?}");
                let output = both_paths_agree(
                    &keys,
                    &message,
                    Direction::Encrypt,
                    start + (range[0] / 16) as u64,
                    &plaintext[range[0]..range[1]],
                    &context,
                );
                let mut again = output.clone();
                let sum = keys.stitched.process_range(
                    &message,
                    cipher,
                    Direction::Decrypt,
                    start + (range[0] / 16) as u64,
                    &mut again,
                );
                assert!(again == plaintext[range[0]..range[1]], "{context}: decrypt");
                joined
                    .append(&keys.stitched, sum, (range[1] - range[0]) as u64)
                    .expect("short message");
                pieces.extend_from_slice(&output);
            }
            assert!(
                pieces == whole,
                "{algorithm}, {length} bytes, cuts {cuts:?}"
            );
            let mut whole_accumulator = GcmAccumulator::default();
            whole_accumulator
                .append(&keys.stitched, whole_sum, length as u64)
                .expect("short message");
            assert_eq!(
                keys.stitched.tag(&message, &joined),
                keys.stitched.tag(&message, &whole_accumulator),
                "{algorithm}, {length} bytes, cuts {cuts:?}"
            );
        }
    }
}

fn aes_gcm_crate_seal(key: &[u8], nonce: &[u8; 12], aad: &[u8], data: &mut [u8]) -> [u8; 16] {
    let tag = match key.len() {
        16 => aes_gcm::Aes128Gcm::new_from_slice(key)
            .expect("16-byte key")
            .encrypt_inout_detached(nonce.into(), aad, data.into()),
        32 => aes_gcm::Aes256Gcm::new_from_slice(key)
            .expect("32-byte key")
            .encrypt_inout_detached(nonce.into(), aad, data.into()),
        _ => unreachable!("AES-192 is not in the crate's aliases"),
    };
    tag.expect("short message").into()
}

/// Whole messages through `seal` with the stitched key match the `aes-gcm` crate, and
/// `open` takes them back.
#[test]
fn stitched_seal_matches_aes_gcm_crate() {
    let mut rng = StdRng::seed_from_u64(0xAE5_6C3);
    for length in [0, 1, 511, 512, 513, 4096, 16 * 1024 + 3, 100_000] {
        for key_length in [16, 32] {
            let key = random_bytes(&mut rng, key_length);
            let algorithm = if key_length == 16 {
                Algorithm::Aes128
            } else {
                Algorithm::Aes256
            };
            let cipher = new_cipher(algorithm, Implementation::Fast, &key).expect("valid key");
            let gcm = GcmKey::new(cipher.as_ref()).expect("128-bit cipher");
            let nonce: [u8; 12] = rng.random();
            let aad = random_bytes(&mut rng, length % 37);
            let plaintext = random_bytes(&mut rng, length);

            let mut ours = plaintext.clone();
            let tag = gcm
                .seal(cipher.as_ref(), &nonce, &aad, &mut ours)
                .expect("short message");
            let mut theirs = plaintext.clone();
            let their_tag = aes_gcm_crate_seal(&key, &nonce, &aad, &mut theirs);
            assert!(ours == theirs, "{algorithm}, {length} bytes: ciphertext");
            assert_eq!(tag, their_tag, "{algorithm}, {length} bytes: tag");
            gcm.open(cipher.as_ref(), &nonce, &aad, &mut ours, &tag)
                .expect("authentic");
            assert!(ours == plaintext, "{algorithm}, {length} bytes: open");
        }
    }
}

/// The reference AES (no round-key schedule offered) keeps the two-pass path and agrees.
#[test]
fn reference_aes_takes_the_two_pass_path_and_agrees() {
    let mut rng = StdRng::seed_from_u64(0x2EF);
    let key = random_bytes(&mut rng, 16);
    let fast = new_cipher(Algorithm::Aes128, Implementation::Fast, &key).expect("valid key");
    let reference =
        new_cipher(Algorithm::Aes128, Implementation::Reference, &key).expect("valid key");
    assert!(reference.aes_round_keys().is_none());
    let gcm = GcmKey::new(fast.as_ref()).expect("128-bit cipher");
    let nonce: [u8; 12] = rng.random();
    let plaintext = random_bytes(&mut rng, 5000);
    let mut by_fast = plaintext.clone();
    let mut by_reference = plaintext.clone();
    let tag = gcm.seal(fast.as_ref(), &nonce, &[], &mut by_fast);
    let reference_tag = gcm.seal(reference.as_ref(), &nonce, &[], &mut by_reference);
    assert_eq!(tag, reference_tag);
    assert!(by_fast == by_reference);
}
