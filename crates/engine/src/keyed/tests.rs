//! Whole-message GCM decryption into memory the caller can see: what the output holds when
//! the tag fails (issue 31 finding 2), and that authenticating first decrypts what one pass
//! decrypts.

use std::cell::RefCell;

use parcrypt_modes::gcm::{GcmError, SHORT_TEXT_BYTES};

use super::*;
use crate::Backend;

thread_local! {
    /// What the last failed message's output held just before `wipe_on_error` zeroed it.
    static LEFT_BEFORE_WIPE: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// Called by `wipe_on_error` (tests only) before it zeroes a failed message's output.
pub(super) fn before_wipe(buffer: &[u8]) {
    LEFT_BEFORE_WIPE.with(|left| *left.borrow_mut() = Some(buffer.to_vec()));
}

fn take_left_before_wipe() -> Option<Vec<u8>> {
    LEFT_BEFORE_WIPE.with(|left| left.borrow_mut().take())
}

const SENTINEL: u8 = 0xEE;
const ROOM: usize = 48;

/// The CPU backends on two threads, and OpenCL where this machine has a device (PoCL runs
/// on the CPU): the device then hashes first and decrypts second.
fn backends() -> Vec<Backend> {
    let mut backends = vec![Backend::Seq, Backend::Threads, Backend::Pool];
    match Engine::new(Backend::Opencl, Some(2)) {
        Ok(_) => backends.push(Backend::Opencl),
        Err(error) => println!("SKIPPED on OpenCL: {error}"),
    }
    backends
}

fn keyed(backend: Backend, suite: &str) -> KeyedCipher {
    let engine = Engine::new(backend, Some(2)).expect("engine");
    let suite: CipherSpec = suite.parse().expect("suite");
    let key: Vec<u8> = (0..suite.algorithm.key_lengths().0 as u8).collect();
    KeyedCipher::new(engine, suite, &key).expect("key")
}

/// Bytes no GCM key stream or ciphertext repeats by chance.
fn plaintext(length: usize) -> Vec<u8> {
    (0..length)
        .map(|index| (index as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0] ^ index as u8)
        .collect()
}

/// Whether any whole 16-byte block of `plaintext` sits at its place in `seen`, apart from
/// the block at `skip` (a forged byte changes that one).
fn holds_plaintext(seen: &[u8], plaintext: &[u8], skip: usize) -> bool {
    seen.chunks_exact(16)
        .zip(plaintext.chunks_exact(16))
        .enumerate()
        .any(|(block, (seen, plain))| block != skip / 16 && seen == plain)
}

const NONCE: [u8; 12] = [0x42; 12];
const AAD: &[u8] = b"header";

/// Issue 31 finding 2: a forged GCM message decrypted into the caller's memory
/// (`decrypt_into`, `decrypt_in_place`), on one thread, split over two or on an OpenCL
/// device, leaves no
/// plaintext there at any point: just before the failed call's wipe, an output is exactly
/// as the caller left it and an in-place buffer still holds the ciphertext. The one-pass
/// decryption these calls ran before (kept for the benchmark) fails the same check, which
/// shows the check sees plaintext where it lands (on the calling thread; split over threads,
/// tests/gcm_release.rs watches it from another thread).
#[test]
fn a_forged_message_leaves_no_plaintext_in_the_callers_memory() {
    let mut split_cases = 0;
    for backend in backends() {
        for suite in ["aes-128-gcm", "aes-256-gcm", "rc6-128-gcm"] {
            let cipher = keyed(backend, suite);
            for length in [
                SHORT_TEXT_BYTES + 1,
                4096,
                4096 + 19,
                200_000,
                (1 << 20) + 5,
            ] {
                if !cipher.inline(Direction::Decrypt, length) {
                    split_cases += 1;
                }
                let plain = plaintext(length);
                let sealed = cipher
                    .encrypt(Some(&NONCE), &plain, Some(AAD))
                    .expect("seals");
                // A changed tag byte, then a changed ciphertext byte in the middle.
                for forged_at in [length + 3, length / 2] {
                    let what = format!("{backend} {suite} {length} forged at {forged_at}");
                    let mut forged = sealed.clone();
                    forged[forged_at] ^= 0x10;

                    let mut output = vec![SENTINEL; length + ROOM];
                    let error = cipher
                        .decrypt_into(Some(&NONCE), &forged, &mut output, Some(AAD))
                        .expect_err(&what);
                    assert!(
                        matches!(error, JobError::Gcm(GcmError::TagMismatch)),
                        "{what}: {error}"
                    );
                    let left = take_left_before_wipe().expect("the failed call wiped");
                    assert!(left.iter().all(|&byte| byte == SENTINEL), "{what}: into");
                    assert!(output.iter().all(|&byte| byte == 0), "{what}: zeroed");

                    let mut buffer = forged.clone();
                    buffer.resize(forged.len() + ROOM, SENTINEL);
                    cipher
                        .decrypt_in_place(Some(&NONCE), &mut buffer, forged.len(), Some(AAD))
                        .expect_err(&what);
                    let left = take_left_before_wipe().expect("the failed call wiped");
                    assert_eq!(left[..forged.len()], forged[..], "{what}: in place");
                    assert!(buffer.iter().all(|&byte| byte == 0), "{what}: zeroed");

                    // The one-pass control: plaintext lands before the tag is checked. (Split
                    // over threads it runs through the `Crypter`, whose wipe this hook does
                    // not see: tests/gcm_release.rs watches that one from another thread.)
                    if !cipher.inline(Direction::Decrypt, length) {
                        continue;
                    }
                    let mut output = vec![SENTINEL; length + ROOM];
                    cipher
                        .decrypt_into_unshared(Some(&NONCE), &forged, &mut output, Some(AAD))
                        .expect_err(&what);
                    let left = take_left_before_wipe().expect("the failed call wiped");
                    assert!(
                        holds_plaintext(&left, &plain, forged_at),
                        "{what}: the control saw no plaintext"
                    );
                }
            }
        }
    }
    assert!(
        split_cases >= 6,
        "messages split over threads: {split_cases}"
    );
}

/// Authenticating first decrypts what the one-pass decryption does, in place and into,
/// for every length class (empty, short, a partial last block, split over threads), with
/// and without AAD, under a 96-bit nonce and a 16-byte IV (hashed into J0), on every CPU
/// backend (and OpenCL where there is a device).
#[test]
fn authenticated_first_decrypts_what_one_pass_decrypts() {
    let reference = keyed(Backend::Seq, "aes-128-gcm");
    for backend in backends() {
        for suite in ["aes-128-gcm", "aes-192-gcm", "rc6-256-gcm"] {
            let cipher = keyed(backend, suite);
            let sealer = if suite == "aes-128-gcm" {
                &reference
            } else {
                &cipher
            };
            for length in [
                0,
                1,
                15,
                16,
                112,
                113,
                4095,
                4096,
                4097,
                65_543,
                (1 << 20) + 5,
            ] {
                for (aad, iv) in [(None, &NONCE[..]), (Some(AAD), &[9u8; 16][..])] {
                    let what = format!("{backend} {suite} {length} {aad:?} {}", iv.len());
                    let plain = plaintext(length);
                    let sealed = sealer.encrypt(Some(iv), &plain, aad).expect("seals");

                    let mut output = vec![SENTINEL; length + ROOM];
                    let written = cipher
                        .decrypt_into(Some(iv), &sealed, &mut output, aad)
                        .expect(&what);
                    assert_eq!(output[..written], plain[..], "{what}: into");
                    assert!(output[written..].iter().all(|&byte| byte == SENTINEL));

                    let mut buffer = sealed.clone();
                    let opened = cipher
                        .decrypt_in_place(Some(iv), &mut buffer, sealed.len(), aad)
                        .expect(&what);
                    assert_eq!(buffer[..opened], plain[..], "{what}: in place");

                    let opened = cipher.decrypt(Some(iv), &sealed, aad).expect(&what);
                    assert_eq!(opened, plain, "{what}: new buffer");
                    let mut output = vec![0u8; length];
                    cipher
                        .decrypt_into_unshared(Some(iv), &sealed, &mut output, aad)
                        .expect(&what);
                    assert_eq!(output, plain, "{what}: one pass");
                }
            }
        }
    }
}
