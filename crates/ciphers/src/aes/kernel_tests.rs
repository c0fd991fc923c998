//! What the AES kernels' unit tests share: references written independently of the
//! kernels (CTR and CBC built from the `aes` crate's single-block functions), the
//! SP 800-38A examples, and the `#[test]` functions that run one shared check on one kernel
//! path. A kernel for another instruction family adds its path and a [`path_tests!`] line.

use rand::rngs::StdRng;
use rand::Rng;

use crate::aes::fast::{CtrPath, FastAes};
use crate::test_vectors::{assert_same_bytes, random_cases, single_record};
use crate::BlockCipher;

/// `#[test]` functions that each run one shared check on one kernel path:
/// `name: check(path)` becomes `#[test] fn name() { check(path) }`.
macro_rules! path_tests {
    ($($name:ident: $check:ident($path:expr)),+ $(,)?) => {
        $(
            #[test]
            fn $name() {
                $check($path);
            }
        )+
    };
}
pub(super) use path_tests;

/// Runs `check` ([`random_cases`]) under a random key of each AES size on random inputs of
/// every `step`-th length up to 1600 bytes (past two VAES-512 main-loop steps of 768 bytes,
/// so that each step count meets every tail) and of the `large` lengths; says on stderr that
/// `kernel` was skipped when `check` reports it not available on this CPU.
// Tests say on stderr what this machine could not run; libtest shows it.
#[allow(clippy::disallowed_macros)]
pub(super) fn random_kernel_cases(
    kernel: impl std::fmt::Display,
    seed: u64,
    step: usize,
    large: [usize; 2],
    check: impl FnMut(&FastAes, &[u8], &mut StdRng) -> bool,
) {
    let lengths = (0..=1600).step_by(step).chain(large);
    if !random_cases(seed, &[16, 24, 32], lengths, FastAes::new, check) {
        eprintln!("{kernel} not available on this CPU; skipped");
    }
}

/// The unfused CTR path, written independently of the kernels: counter blocks built one by
/// one with the `inc32` rule, encrypted by the `aes` crate, XORed in.
pub(super) fn generic_ctr32_xor(cipher: &FastAes, counter: &[u8; 16], data: &mut [u8]) {
    let mut keystream = Vec::with_capacity(data.len().next_multiple_of(16));
    let start = u128::from_be_bytes(*counter);
    for index in 0..data.len().div_ceil(16) {
        let low = (start as u32).wrapping_add(index as u32);
        let block = (start & !0xFFFF_FFFF) | u128::from(low);
        keystream.extend_from_slice(&block.to_be_bytes());
    }
    cipher.crate_encrypt_blocks(&mut keystream);
    for (byte, key_byte) in data.iter_mut().zip(&keystream) {
        *byte ^= key_byte;
    }
}

/// CBC encryption built from the `aes` crate's single-block encryption, independently of
/// the kernel.
pub(super) fn generic_cbc_encrypt(cipher: &FastAes, chain: &mut [u8; 16], data: &mut [u8]) {
    for block in data.chunks_exact_mut(16) {
        for (byte, chain_byte) in block.iter_mut().zip(chain.iter()) {
            *byte ^= chain_byte;
        }
        cipher.crate_encrypt_blocks(block);
        chain.copy_from_slice(block);
    }
}

/// CBC decryption built from the `aes` crate's single-block decryption, independently of
/// the kernel.
pub(super) fn generic_cbc_decrypt(cipher: &FastAes, previous: &[u8; 16], data: &mut [u8]) {
    let mut chain = *previous;
    for block in data.chunks_exact_mut(16) {
        let ciphertext: [u8; 16] = block.try_into().expect("16-byte block");
        cipher.crate_decrypt_blocks(block);
        for (byte, chain_byte) in block.iter_mut().zip(chain) {
            *byte ^= chain_byte;
        }
        chain = ciphertext;
    }
}

/// One SP 800-38A example (appendix F) for one key size.
pub(super) struct ModeExample {
    /// `{mode}-aes128`, `-aes192` or `-aes256`.
    pub(super) section: String,
    pub(super) cipher: FastAes,
    /// The IV (CBC) or the initial counter block (CTR); zero for ECB, which has none.
    pub(super) iv: [u8; 16],
    pub(super) plaintext: Vec<u8>,
    pub(super) ciphertext: Vec<u8>,
}

/// The SP 800-38A examples of `mode` (`ecb`, `cbc` or `ctr`) for AES-128, -192 and -256, in
/// that order.
pub(super) fn sp800_38a(mode: &str) -> Vec<ModeExample> {
    ["aes128", "aes192", "aes256"]
        .into_iter()
        .map(|size| {
            let section = format!("{mode}-{size}");
            let record = single_record("aes_sp800_38a.txt", &section);
            let iv = if record.field_names().any(|name| name == "iv") {
                record["iv"].clone().try_into().expect("16-byte iv")
            } else {
                [0u8; 16]
            };
            ModeExample {
                cipher: FastAes::new(&record["key"]),
                iv,
                plaintext: record["plaintext"].clone(),
                ciphertext: record["ciphertext"].clone(),
                section,
            }
        })
        .collect()
}

/// The `BlockCipher` entry points take a fused kernel exactly where this CPU has its
/// features, and then give the bytes of the independent references.
#[test]
fn block_cipher_trait_uses_the_fused_kernels_where_available() {
    // On aarch64 only CTR has a kernel (ARMv8) so far.
    #[cfg(target_arch = "x86_64")]
    let (ctr_kernel, cbc_kernel) = {
        let aesni = std::arch::is_x86_feature_detected!("aes");
        (aesni, aesni)
    };
    #[cfg(target_arch = "aarch64")]
    let (ctr_kernel, cbc_kernel) = (std::arch::is_aarch64_feature_detected!("aes"), false);

    // CTR, in place and out of place.
    let cipher = FastAes::new(&[7u8; 16]);
    let mut data = [0u8; 100];
    let fused = cipher.ctr32_xor(&[0u8; 16], &mut data);
    assert_eq!(fused, ctr_kernel, "CTR");
    let input: Vec<u8> = (0..100u8).collect();
    let mut output = [0u8; 100];
    assert_eq!(
        cipher.ctr32_xor_into(&[0u8; 16], &input, &mut output),
        fused,
        "the in-place and out-of-place paths differ in availability"
    );
    if fused {
        let mut expected = [0u8; 100];
        generic_ctr32_xor(&cipher, &[0u8; 16], &mut expected);
        assert_eq!(data, expected);
        let mut expected_into = input.clone();
        generic_ctr32_xor(&cipher, &[0u8; 16], &mut expected_into);
        assert_eq!(output.as_slice(), expected_into.as_slice());
    }

    // CBC encryption.
    let cipher = FastAes::new(&[9u8; 32]);
    let mut data = [0x33u8; 160];
    let mut chain = [0x44u8; 16];
    let fused = cipher.cbc_encrypt(&mut chain, &mut data);
    assert_eq!(fused, cbc_kernel, "CBC encryption");
    if fused {
        let mut expected = [0x33u8; 160];
        let mut expected_chain = [0x44u8; 16];
        generic_cbc_encrypt(&cipher, &mut expected_chain, &mut expected);
        assert_eq!(data, expected);
        assert_eq!(chain, expected_chain);
    }

    // CBC decryption.
    let cipher = FastAes::new(&[7u8; 16]);
    let mut data = [0x5Au8; 160];
    let fused = cipher.cbc_decrypt(&[0x11; 16], &mut data);
    assert_eq!(fused, cbc_kernel, "CBC decryption");
    let mut expected = [0x5Au8; 160];
    if fused {
        generic_cbc_decrypt(&cipher, &[0x11; 16], &mut expected);
    }
    // A refused call must not touch the data.
    assert_eq!(data, expected, "CBC decryption, fused: {fused}");
}

// The checks every fused CTR kernel runs with its own path.

/// Runs `path` on one case and compares it with the generic path. Returns `false` when
/// this CPU lacks `path`.
fn check_case(path: CtrPath, cipher: &FastAes, counter: &[u8; 16], input: &[u8]) -> bool {
    let mut fused = input.to_vec();
    if !cipher.ctr32_xor_with(path, counter, &mut fused) {
        assert_eq!(
            fused, input,
            "{path:?}: a refused call must not touch the data"
        );
        return false;
    }
    let mut expected = input.to_vec();
    generic_ctr32_xor(cipher, counter, &mut expected);
    assert_same_bytes(
        &fused,
        &expected,
        format_args!("{path:?}, counter {}", hex::encode(counter)),
    );

    // Out of place, into a poisoned buffer with guard bytes past its end: the same
    // bytes, the input untouched, nothing written past the output.
    const GUARD: usize = 80;
    let mut output = vec![0xA5u8; input.len() + GUARD];
    let source = input.to_vec();
    assert!(cipher.ctr32_xor_into_with(path, counter, &source, &mut output[..input.len()]));
    assert_same_bytes(
        &output[..input.len()],
        &expected,
        format_args!("{path:?} into, counter {}", hex::encode(counter)),
    );
    assert_eq!(source, input, "{path:?} into: the input was changed");
    assert!(
        output[input.len()..].iter().all(|&byte| byte == 0xA5),
        "{path:?} into: bytes written past the output"
    );
    true
}

/// Random keys of all three sizes, random counters (some with the low word as close to
/// wrapping as the length allows), every length 0..=1600 (past two VAES main-loop steps
/// of 768 bytes, so that each step count meets every tail) and a few large ones.
pub(super) fn agrees_with_generic_ctr(path: CtrPath) {
    random_kernel_cases(
        format_args!("{path:?} kernel"),
        0xC7A0_0512,
        1,
        [64 * 1024 + 5, 1024 * 1024 + 3],
        |cipher, input, rng| {
            let mut counter = [0u8; 16];
            rng.fill_bytes(&mut counter);
            let blocks = input.len().div_ceil(16) as u64;
            if input.len() % 3 == 0 {
                // The last block uses 0xFFFFFFFF exactly.
                let low = ((1u64 << 32) - blocks.max(1)) as u32;
                counter[12..].copy_from_slice(&low.to_be_bytes());
            } else {
                let low = u32::from_be_bytes(counter[12..].try_into().expect("4 bytes"));
                let room = u64::from(u32::MAX - low) + 1;
                if room < blocks {
                    counter[12..].copy_from_slice(&0u32.to_be_bytes());
                }
            }
            check_case(path, cipher, &counter, input)
        },
    );
}

/// SP 800-38A F.5.1, F.5.3, F.5.5 (CTR-AES128/192/256.Encrypt), whole and as every
/// prefix, so that partial blocks meet known answers too.
// Tests say on stderr what this machine could not run; libtest shows it.
#[allow(clippy::disallowed_macros)]
pub(super) fn matches_sp800_38a(path: CtrPath) {
    let mut checked = 0;
    for example in sp800_38a("ctr") {
        let (section, cipher) = (&example.section, &example.cipher);
        let (plaintext, ciphertext) = (&example.plaintext, &example.ciphertext);
        for length in 0..=plaintext.len() {
            let mut data = plaintext[..length].to_vec();
            if !cipher.ctr32_xor_with(path, &example.iv, &mut data) {
                eprintln!("{path:?} kernel not available on this CPU; skipped");
                return;
            }
            assert_eq!(
                data,
                ciphertext[..length],
                "{path:?} [{section}] {length} bytes"
            );
            // CTR is its own inverse.
            assert!(cipher.ctr32_xor_with(path, &example.iv, &mut data));
            assert_eq!(data, plaintext[..length], "{path:?} [{section}] decrypt");
        }
        checked += 1;
    }
    assert_eq!(checked, 3);
}
