//! Every stitched AES-GCM kernel this CPU has (VAES-512, VAES-256, AES-NI), each forced on
//! with the others off, against the two-pass path on the same machine and against the
//! RustCrypto `aes-gcm` crate: every length 0..=1024 bytes, lengths around each kernel's
//! batch size, AES-128/192/256, both directions, ranges that start at arbitrary blocks (as
//! the engine's threads call them) and counters whose low word wraps inside a range, each
//! in place and from one buffer into another.
//!
//! A kernel the CPU lacks is reported as SKIPPED on stdout (libtest shows it) and not run.

// Tests say on stderr what this machine could not run; libtest shows it.
#![allow(clippy::disallowed_macros)]

use aes_gcm::aead::{AeadInOut, KeyInit};
use parcrypt_ciphers::{new_cipher, Algorithm, BlockCipher, Implementation};
use parcrypt_modes::gcm::{GcmAccumulator, GcmKernel, GcmKey, GcmMessage};
use parcrypt_modes::Direction;
use rand::rngs::StdRng;
use rand::{Rng, RngExt, SeedableRng};

const ALGORITHMS: [Algorithm; 3] = [Algorithm::Aes128, Algorithm::Aes192, Algorithm::Aes256];

/// Whether this CPU has `kernel`; when it has not, says that what needs it is skipped.
fn available_or_skipped(kernel: GcmKernel) -> bool {
    let available = kernel.is_available();
    if !available {
        println!("SKIPPED: the {kernel} GCM kernel is not available on this CPU");
    }
    available
}

/// The stitched kernels this CPU has; the others are reported as skipped.
fn stitched_kernels() -> Vec<GcmKernel> {
    GcmKernel::ALL
        .into_iter()
        .filter(|&kernel| kernel != GcmKernel::TwoPass && available_or_skipped(kernel))
        .collect()
}

/// Blocks per batch of each stitched kernel (the lengths around them are checked).
fn batch_blocks(kernel: GcmKernel) -> usize {
    match kernel {
        GcmKernel::Vaes512 => 32,
        GcmKernel::Vaes256 => 16,
        GcmKernel::AesNi => 8,
        GcmKernel::TwoPass => 256,
    }
}

/// A key forced onto one stitched kernel and one onto the two-pass path.
struct Keys {
    key: Vec<u8>,
    cipher: Box<dyn BlockCipher>,
    stitched: GcmKey,
    two_pass: GcmKey,
}

fn keys(algorithm: Algorithm, kernel: GcmKernel, rng: &mut StdRng) -> Keys {
    let (length, _) = algorithm.key_lengths();
    let mut key = vec![0u8; length];
    rng.fill_bytes(&mut key);
    let cipher = new_cipher(algorithm, Implementation::Fast, &key).expect("valid key");
    let mut stitched = GcmKey::new(cipher.as_ref()).expect("AES is a 128-bit cipher");
    let mut two_pass = stitched.clone();
    assert_eq!(stitched.set_kernel(kernel), kernel, "{kernel} is available");
    assert_eq!(two_pass.set_kernel(GcmKernel::TwoPass), GcmKernel::TwoPass);
    Keys {
        key,
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

/// A case of the VAES-512 streaming tests: keys of `algorithm`, a random text of
/// `STREAM_FROM_BYTES + extra` bytes (long enough to stream) and a random nonce.
fn long_case(algorithm: Algorithm, extra: usize, rng: &mut StdRng) -> (Keys, Vec<u8>, [u8; 12]) {
    let keys = keys(algorithm, GcmKernel::Vaes512, rng);
    let text = random_bytes(rng, parcrypt_ciphers::aes::STREAM_FROM_BYTES + extra);
    (keys, text, rng.random())
}

/// `process_range` with both keys on the same input, in place and (`process_range_into`)
/// into a separate buffer; asserts equal output and partial sums from all four and returns
/// the output.
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
    for (name, key) in [("stitched", &keys.stitched), ("two-pass", &keys.two_pass)] {
        // Poisoned, so a byte the one-pass form fails to write shows.
        let mut output = vec![0xA5u8; input.len()];
        let sum =
            key.process_range_into(message, cipher, direction, first_block, input, &mut output);
        assert!(
            output == two_pass,
            "{context}: {direction:?} {name} output into a separate buffer differs"
        );
        assert_eq!(
            sum, two_pass_sum,
            "{context}: {direction:?} {name} GHASH into a separate buffer differs"
        );
    }
    stitched
}

/// Every length 0..=1024 bytes and lengths around 1..5 batches and long runs of batches,
/// in both directions, for each kernel.
#[test]
fn stitched_equals_two_pass_for_every_length() {
    let mut rng = StdRng::seed_from_u64(0x5717C4ED);
    for kernel in stitched_kernels() {
        let batch = batch_blocks(kernel);
        let lengths: Vec<usize> = (0..=1024)
            .chain(
                [1, 2, 3, 4, 5, 31, 64]
                    .iter()
                    .flat_map(|batches| {
                        let bytes = batches * batch * 16;
                        [
                            bytes - 17,
                            bytes - 16,
                            bytes - 1,
                            bytes,
                            bytes + 1,
                            bytes + 16,
                        ]
                    })
                    .chain([16_000, 16 * 1000 + 7]),
            )
            .collect();
        for algorithm in ALGORITHMS {
            let keys = keys(algorithm, kernel, &mut rng);
            let cipher = keys.cipher.as_ref();
            for &length in &lengths {
                let nonce: [u8; 12] = rng.random();
                let message = keys.stitched.message_with_nonce(cipher, &nonce);
                let plaintext = random_bytes(&mut rng, length);
                let context = format!("{kernel} {algorithm}, {length} bytes");
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
}

/// Texts long enough for the VAES-512 kernel's streaming stores, out of place, with the
/// output at every 16-byte offset from a 64-byte boundary (the aligned head runs two-pass)
/// and at an odd one (no streaming), some with the counter's low word wrapping inside: the
/// same output and GHASH as the two-pass path, nothing written around the output, the input
/// untouched; in both directions and for AES-128 and AES-256.
#[test]
fn streaming_outputs_match_the_two_pass_path() {
    if !available_or_skipped(GcmKernel::Vaes512) {
        return;
    }
    let mut rng = StdRng::seed_from_u64(0x5743A);
    for (case, (algorithm, extra, offset, wrap_at)) in [
        (Algorithm::Aes128, 512 * 3, 0, None),
        (Algorithm::Aes256, 512 * 2 + 16, 16, None),
        (Algorithm::Aes128, 4096 + 5, 32, Some(1000u32)),
        (Algorithm::Aes256, 512 + 48, 48, Some(70_000)),
        (Algorithm::Aes128, 777, 8, None),
        (Algorithm::Aes128, 511, 16, Some(3)),
        (Algorithm::Aes256, 0, 48, None),
    ]
    .into_iter()
    .enumerate()
    {
        let (keys, input, nonce) = long_case(algorithm, extra, &mut rng);
        let (cipher, length) = (keys.cipher.as_ref(), input.len());
        let message = keys.stitched.message_with_nonce(cipher, &nonce);
        let first_block = match wrap_at {
            Some(blocks_before) => first_block_with_low_word(0u32.wrapping_sub(blocks_before)),
            None => 0,
        };
        for direction in [Direction::Encrypt, Direction::Decrypt] {
            let context = format!("case {case}: {algorithm} {direction:?}, {length} bytes");
            let mut expected = input.clone();
            let expected_sum = keys.two_pass.process_range(
                &message,
                cipher,
                direction,
                first_block,
                &mut expected,
            );
            let (output, sum) = write_guarded(length, offset, &context, |output| {
                keys.stitched.process_range_into(
                    &message,
                    cipher,
                    direction,
                    first_block,
                    &input,
                    output,
                )
            });
            assert!(output == expected, "{context}: output");
            assert_eq!(sum, expected_sum, "{context}: GHASH");
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
/// 32-bit wrap (at random places and just before, at and after a batch boundary): both
/// paths agree per range, and the partial sums joined in order give the same tag as the
/// whole message and, for whole messages, as the `aes-gcm` crate. For each kernel.
#[test]
fn ranges_at_any_block_add_up_to_the_whole() {
    let mut rng = StdRng::seed_from_u64(0x0FF5E7);
    for (kernel, algorithm) in stitched_kernels()
        .into_iter()
        .flat_map(|kernel| ALGORITHMS.map(|algorithm| (kernel, algorithm)))
    {
        let keys = keys(algorithm, kernel, &mut rng);
        let cipher = keys.cipher.as_ref();
        let batch = batch_blocks(kernel) as u32;
        for case in 0..30 {
            let length = rng.random_range(0..=40_000usize);
            let plaintext = random_bytes(&mut rng, length);
            let nonce: [u8; 12] = rng.random();
            let message = keys.stitched.message_with_nonce(cipher, &nonce);
            let blocks = length.div_ceil(16);
            // A third of the cases start at block 0, a third near the wrap of the low
            // counter word at random, a third so the wrap falls at or next to the end of a
            // whole batch.
            let start = match case % 3 {
                0 => 0,
                1 => {
                    let before_wrap = rng.random_range(0..=blocks as u32 + 40);
                    first_block_with_low_word(0u32.wrapping_sub(before_wrap))
                }
                _ => {
                    let before_wrap = batch * rng.random_range(0..4) + rng.random_range(0..3);
                    first_block_with_low_word(0u32.wrapping_sub(before_wrap).wrapping_sub(1))
                }
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
                let context =
                    format!("{kernel} {algorithm}, {length} bytes from block {start}, {range:?}");
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
            let tag = keys.stitched.tag(&message, &joined);
            assert_eq!(
                tag,
                keys.stitched.tag(&message, &whole_accumulator),
                "{kernel} {algorithm}, {length} bytes, cuts {cuts:?}"
            );
            if start == 0 && algorithm != Algorithm::Aes192 {
                let mut theirs = plaintext.clone();
                let their_tag = aes_gcm_crate_seal(&keys.key, &nonce, &[], &mut theirs);
                assert!(theirs == whole, "{kernel} {algorithm}, {length} bytes");
                assert_eq!(tag, their_tag, "{kernel} {algorithm}, {length} bytes");
            }
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

/// Whole messages through `seal` with each kernel match the `aes-gcm` crate, and `open`
/// takes them back.
#[test]
fn stitched_seal_matches_aes_gcm_crate() {
    let mut rng = StdRng::seed_from_u64(0xAE5_6C3);
    let kernels = stitched_kernels();
    let lengths = [
        0,
        1,
        127,
        128,
        129,
        255,
        256,
        257,
        511,
        512,
        513,
        4096,
        16 * 1024 + 3,
    ];
    for (kernel, length) in kernels
        .iter()
        .flat_map(|kernel| lengths.into_iter().chain([100_000]).map(|l| (*kernel, l)))
    {
        for key_length in [16, 32] {
            let key = random_bytes(&mut rng, key_length);
            let algorithm = if key_length == 16 {
                Algorithm::Aes128
            } else {
                Algorithm::Aes256
            };
            let cipher = new_cipher(algorithm, Implementation::Fast, &key).expect("valid key");
            let mut gcm = GcmKey::new(cipher.as_ref()).expect("128-bit cipher");
            assert_eq!(gcm.set_kernel(kernel), kernel);
            let nonce: [u8; 12] = rng.random();
            let aad = random_bytes(&mut rng, length % 37);
            let plaintext = random_bytes(&mut rng, length);

            let mut ours = plaintext.clone();
            let tag = gcm
                .seal(cipher.as_ref(), &nonce, &aad, &mut ours)
                .expect("short message");
            let mut theirs = plaintext.clone();
            let their_tag = aes_gcm_crate_seal(&key, &nonce, &aad, &mut theirs);
            assert!(
                ours == theirs,
                "{kernel} {algorithm}, {length} bytes: ciphertext"
            );
            assert_eq!(tag, their_tag, "{kernel} {algorithm}, {length} bytes: tag");
            gcm.open(cipher.as_ref(), &nonce, &aad, &mut ours, &tag)
                .expect("authentic");
            assert!(ours == plaintext, "{algorithm}, {length} bytes: open");
        }
    }
}

/// One whole message through `crypt_message` in place and from one buffer into another
/// (with guard bytes around the output, which must stay as they were), in `direction`;
/// returns the output and the tag, after checking that both forms agree.
fn crypt_both_ways(
    gcm: &GcmKey,
    cipher: &dyn BlockCipher,
    direction: Direction,
    (nonce, aad): (&[u8], &[u8]),
    input: &[u8],
    offset: usize,
    context: &str,
) -> (Vec<u8>, [u8; 16]) {
    let mut in_place = input.to_vec();
    let tag = gcm
        .crypt_message(cipher, direction, nonce, aad, None, &mut in_place)
        .expect("a message GCM allows");
    let (into, into_tag) = write_guarded(
        input.len(),
        offset,
        &format!("{context}: {direction:?}"),
        |output| {
            gcm.crypt_message(cipher, direction, nonce, aad, Some(input), output)
                .expect("a message GCM allows")
        },
    );
    assert!(
        into == in_place,
        "{context}: {direction:?} into a buffer differs from in place"
    );
    assert_eq!(into_tag, tag, "{context}: {direction:?} tag into a buffer");
    (in_place, tag)
}

/// Seals `plaintext` with [`crypt_both_ways`], insists on the long path's ciphertext and tag,
/// opens the result the same way and insists on the plaintext and the same tag; returns the
/// ciphertext and the tag.
fn seal_and_open(
    gcm: &GcmKey,
    cipher: &dyn BlockCipher,
    (nonce, aad): (&[u8], &[u8]),
    plaintext: &[u8],
    offset: usize,
    context: &str,
) -> (Vec<u8>, [u8; 16]) {
    let (ciphertext, tag) = crypt_both_ways(
        gcm,
        cipher,
        Direction::Encrypt,
        (nonce, aad),
        plaintext,
        offset,
        context,
    );
    let mut long = plaintext.to_vec();
    let long_tag = long_path_seal(cipher, nonce, aad, &mut long);
    assert!(ciphertext == long, "{context}: ciphertext");
    assert_eq!(tag, long_tag, "{context}: tag");
    let (opened, open_tag) = crypt_both_ways(
        gcm,
        cipher,
        Direction::Decrypt,
        (nonce, aad),
        &ciphertext,
        offset,
        context,
    );
    assert!(opened == plaintext, "{context}: decryption");
    assert_eq!(open_tag, tag, "{context}: decryption's tag");
    (ciphertext, tag)
}

/// Runs `write` on `length` bytes that start `offset` bytes past a 64-byte boundary (0: an
/// aligned output, which may stream) inside a larger buffer poisoned with 0xA5, asserts that
/// nothing around them was written, and returns those bytes and what `write` returned.
fn write_guarded<T>(
    length: usize,
    offset: usize,
    context: &str,
    write: impl FnOnce(&mut [u8]) -> T,
) -> (Vec<u8>, T) {
    const GUARD: usize = 128;
    assert!(offset < 64);
    let mut buffer = vec![0xA5u8; length + 2 * GUARD + 64];
    let start = GUARD + (64 - buffer.as_ptr() as usize % 64) % 64 + offset;
    let result = write(&mut buffer[start..start + length]);
    assert!(
        buffer[..start]
            .iter()
            .chain(&buffer[start + length..])
            .all(|&byte| byte == 0xA5),
        "{context}: bytes written around the output"
    );
    (buffer[start..start + length].to_vec(), result)
}

/// Whole messages through `crypt_message` (one kernel call on VAES-512 under a 96-bit nonce)
/// equal the range path spelled out (message, AAD, one range, tag) and, for AES-128 and
/// AES-256, the `aes-gcm` crate: every length 0..=1100 and lengths around every batch
/// boundary up to 5 batches (the last partial batch takes 1..=32 blocks, so H^33 and a ninth
/// vector for the length block are used), with AAD of several lengths, in place and into
/// a buffer at several offsets; decryption gives the plaintext back with the same tag, and
/// `check_tag` refuses a changed one; `open` takes the message back and refuses a changed
/// tag or ciphertext, leaving the data as it was. On every stitched kernel and the two-pass
/// path.
#[test]
fn whole_messages_match_the_range_path_and_the_aes_gcm_crate() {
    let mut rng = StdRng::seed_from_u64(0x3E55A6E);
    let mut kernels = stitched_kernels();
    kernels.push(GcmKernel::TwoPass);
    let mut lengths: Vec<usize> = (0..=1100).collect();
    for batches in 2..=5usize {
        for delta in [-17isize, -16, -15, -1, 0, 1, 15, 16, 17] {
            lengths.push((512 * batches).checked_add_signed(delta).expect("positive"));
        }
        lengths.extend(512 * batches + 481..512 * batches + 512);
    }
    lengths.extend([16 * 1024, 16 * 1024 + 497, 100_003]);
    for kernel in kernels {
        for algorithm in ALGORITHMS {
            let keys = keys(algorithm, kernel, &mut rng);
            let gcm = if kernel == GcmKernel::TwoPass {
                &keys.two_pass
            } else {
                &keys.stitched
            };
            let cipher = keys.cipher.as_ref();
            for &length in &lengths {
                let nonce: [u8; 12] = rng.random();
                let aad = random_bytes(&mut rng, [0, 1, 16, 33][length % 4]);
                let plaintext = random_bytes(&mut rng, length);
                let offset = [0, 1, 16, 61][length % 4];
                let context = format!("{kernel} {algorithm}, {length} bytes, AAD {}", aad.len());

                let (ciphertext, tag) =
                    seal_and_open(gcm, cipher, (&nonce, &aad), &plaintext, offset, &context);
                if algorithm != Algorithm::Aes192 && length % 7 == 0 {
                    let mut theirs = plaintext.clone();
                    let their_tag = aes_gcm_crate_seal(&keys.key, &nonce, &aad, &mut theirs);
                    assert!(theirs == ciphertext, "{context}: ciphertext (aes-gcm)");
                    assert_eq!(tag, their_tag, "{context}: tag (aes-gcm)");
                }

                parcrypt_modes::gcm::check_tag(tag, &tag).expect("the same tag");
                let mut forged = tag;
                forged[length % 16] ^= 1 << (length % 8);
                assert!(
                    parcrypt_modes::gcm::check_tag(tag, &forged).is_err(),
                    "{context}: a changed tag passes"
                );

                // `open` checks first: the right tag gives the plaintext, a changed tag or
                // ciphertext is refused with the data left as it was.
                let mut data = ciphertext.clone();
                gcm.open(cipher, &nonce, &aad, &mut data, &tag)
                    .expect("authentic");
                assert!(data == plaintext, "{context}: open");
                let refused = |text: &[u8], tag: &[u8; 16], what: &str| {
                    let mut data = text.to_vec();
                    assert!(
                        gcm.open(cipher, &nonce, &aad, &mut data, tag).is_err(),
                        "{context}: open took a changed {what}"
                    );
                    assert!(data == text, "{context}: a refused open changed the data");
                };
                refused(&ciphertext, &forged, "tag");
                if length > 0 {
                    let mut changed = ciphertext.clone();
                    changed[length / 2] ^= 0x80;
                    refused(&changed, &tag, "ciphertext");
                }
            }
        }
    }
}

/// The VAES-512 whole-message call on texts long enough to stream: with a 64-byte aligned
/// output it streams, with another it takes the general path; both equal the range path,
/// and nothing around the output is written.
#[test]
fn long_whole_messages_match_the_range_path() {
    if !available_or_skipped(GcmKernel::Vaes512) {
        return;
    }
    let mut rng = StdRng::seed_from_u64(0x10A6);
    for (algorithm, extra, offset) in [
        (Algorithm::Aes128, 0, 0),
        (Algorithm::Aes256, 497, 0),
        (Algorithm::Aes128, 1000, 16),
    ] {
        let (keys, plaintext, nonce) = long_case(algorithm, extra, &mut rng);
        let (cipher, length) = (keys.cipher.as_ref(), plaintext.len());
        let context = format!("{algorithm}, {length} bytes, output offset {offset}");
        seal_and_open(
            &keys.stitched,
            cipher,
            (&nonce, b"header"),
            &plaintext,
            offset,
            &context,
        );
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

/// `set_kernel` keeps an available kernel, falls back to the next available one otherwise,
/// and `available` lists exactly the kernels `is_available` admits, ending with two-pass.
#[test]
fn kernel_selection_falls_back_in_order() {
    let available = GcmKernel::available();
    assert_eq!(available.last(), Some(&GcmKernel::TwoPass));
    assert_eq!(GcmKernel::fastest(), available[0]);
    let cipher = new_cipher(Algorithm::Aes128, Implementation::Fast, &[7; 16]).expect("key");
    let mut key = GcmKey::new(cipher.as_ref()).expect("128-bit cipher");
    for (index, kernel) in GcmKernel::ALL.into_iter().enumerate() {
        assert_eq!(available.contains(&kernel), kernel.is_available());
        let expected = GcmKernel::ALL[index..]
            .iter()
            .copied()
            .find(|kernel| kernel.is_available())
            .expect("two-pass is always available");
        assert_eq!(key.set_kernel(kernel), expected, "{kernel}");
        assert_eq!(key.kernel(), expected);
        assert_eq!(GcmKernel::from_name(kernel.name()), Some(kernel));
    }
    assert_eq!(GcmKernel::from_name("avx9000"), None);
}

/// The long path for a whole message, spelled out with the range API (message, AAD, one
/// range, tag), which `seal` and `open` skip for short texts under a 96-bit nonce.
fn long_path_seal(cipher: &dyn BlockCipher, iv: &[u8], aad: &[u8], data: &mut [u8]) -> [u8; 16] {
    let gcm = GcmKey::new(cipher).expect("128-bit cipher");
    let message = gcm.message(cipher, iv).expect("valid IV");
    let mut accumulator = GcmAccumulator::new(&gcm, aad);
    let partial = gcm.process_range(&message, cipher, Direction::Encrypt, 0, data);
    accumulator
        .append(&gcm, partial, data.len() as u64)
        .expect("short message");
    gcm.tag(&message, &accumulator)
}

/// Whole messages up to and past `SHORT_TEXT_BYTES` (the short paths: the AES-NI kernel of
/// `gcm/short.rs`, and one cipher call and one GHASH call otherwise) agree with the long path
/// for AES-128/192/256 and RC6, with AAD of every shape and IVs of
/// 96 bits and other lengths, and with the `aes-gcm` crate for AES; `open` takes them back,
/// and refuses a changed tag, ciphertext or AAD with the data left as it was.
#[test]
fn short_messages_agree_with_the_long_path_and_refuse_forgeries() {
    use parcrypt_modes::gcm::SHORT_TEXT_BYTES;
    let mut rng = StdRng::seed_from_u64(0x5407);
    // AES takes the AES-NI short kernel under any stitched kernel and the generic short path
    // under the two-pass one; RC6 always the generic one.
    let cases = [
        (Algorithm::Aes128, GcmKernel::fastest()),
        (Algorithm::Aes192, GcmKernel::fastest()),
        (Algorithm::Aes256, GcmKernel::fastest()),
        (Algorithm::Aes128, GcmKernel::TwoPass),
        (Algorithm::Aes256, GcmKernel::TwoPass),
        (Algorithm::Rc6_128, GcmKernel::fastest()),
    ];
    for (algorithm, kernel) in cases {
        let key_length = match algorithm {
            Algorithm::Aes192 => 24,
            Algorithm::Aes256 => 32,
            _ => 16,
        };
        let key = random_bytes(&mut rng, key_length);
        let cipher = new_cipher(algorithm, Implementation::Fast, &key).expect("valid key");
        let cipher = cipher.as_ref();
        let mut gcm = GcmKey::new(cipher).expect("128-bit cipher");
        gcm.set_kernel(kernel);
        for length in 0..=SHORT_TEXT_BYTES + 17 {
            for (aad_length, iv_length) in [(0, 12), (1, 12), (16, 12), (length % 41, 12), (5, 8)] {
                let iv = random_bytes(&mut rng, iv_length);
                let aad = random_bytes(&mut rng, aad_length);
                let plaintext = random_bytes(&mut rng, length);
                let context = format!(
                    "{algorithm} ({kernel}), {length} bytes, AAD {aad_length}, IV {iv_length}"
                );

                let mut ours = plaintext.clone();
                let tag = gcm
                    .seal(cipher, &iv, &aad, &mut ours)
                    .expect("short message");
                let mut long = plaintext.clone();
                let long_tag = long_path_seal(cipher, &iv, &aad, &mut long);
                assert!(ours == long, "{context}: ciphertext");
                assert_eq!(tag, long_tag, "{context}: tag");
                if matches!(algorithm, Algorithm::Aes128 | Algorithm::Aes256) && iv_length == 12 {
                    let nonce: [u8; 12] = iv.as_slice().try_into().expect("12 bytes");
                    let mut theirs = plaintext.clone();
                    let their_tag = aes_gcm_crate_seal(&key, &nonce, &aad, &mut theirs);
                    assert!(ours == theirs, "{context}: ciphertext against aes-gcm");
                    assert_eq!(tag, their_tag, "{context}: tag against aes-gcm");
                }

                // A changed tag, ciphertext byte or AAD byte is refused, the data untouched.
                let mut forgeries = Vec::new();
                let mut forged_tag = tag;
                forged_tag[rng.random_range(0..16)] ^= 1 << rng.random_range(0..8);
                forgeries.push((ours.clone(), aad.clone(), forged_tag, "tag"));
                if length > 0 {
                    let mut text = ours.clone();
                    text[rng.random_range(0..length)] ^= 0x80;
                    forgeries.push((text, aad.clone(), tag, "ciphertext"));
                }
                if aad_length > 0 {
                    let mut changed = aad.clone();
                    changed[rng.random_range(0..aad_length)] ^= 0x01;
                    forgeries.push((ours.clone(), changed, tag, "AAD"));
                }
                for (text, aad, tag, what) in forgeries {
                    let mut data = text.clone();
                    assert!(
                        gcm.open(cipher, &iv, &aad, &mut data, &tag).is_err(),
                        "{context}: changed {what} accepted"
                    );
                    assert!(data == text, "{context}: changed {what}: data altered");
                }
                let mut opened = ours.clone();
                gcm.open(cipher, &iv, &aad, &mut opened, &tag)
                    .expect("authentic");
                assert!(opened == plaintext, "{context}: open");
            }
        }
    }
}
