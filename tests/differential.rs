//! Differential tests: every backend against `seq`, and parcrypt against independent
//! implementations (OpenSSL's command line, pyca/cryptography, RustCrypto's block ciphers
//! driven by modes written out here) on random keys, IVs and awkward sizes.
// Tests print what they ran and skipped to stderr, where libtest captures it.
#![allow(clippy::disallowed_macros)]

#[path = "support/engine.rs"]
mod engine;
#[path = "../crates/format/tests/support/random.rs"]
mod random;

use std::io::Write;
use std::process::{Command, Stdio};

use cipher::{BlockCipherEncrypt, KeyInit};
use engine::{all_engines, Message};
use parcrypt_ciphers::Implementation;
use parcrypt_engine::{Backend, Engine};
use parcrypt_modes::{CipherSpec, Mode};
use rand::rngs::StdRng;
use rand::{Rng, RngExt};
use random::seeded_rng;

const SIZES: [usize; 7] = [0, 1, 15, 16, 17, 4096 + 5, (1 << 20) + 3];

fn random_bytes(rng: &mut StdRng, length: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; length];
    rng.fill_bytes(&mut bytes);
    bytes
}

/// A random key of a length the cipher takes (Blowfish: anywhere in 4..=56).
fn random_key(rng: &mut StdRng, spec: CipherSpec) -> Vec<u8> {
    let (low, high) = spec.algorithm.key_lengths();
    let length = rng.random_range(low..=high);
    random_bytes(rng, length)
}

fn random_iv(rng: &mut StdRng, spec: CipherSpec) -> Option<Vec<u8>> {
    match spec.mode {
        Mode::Ecb => None,
        // Mostly the 96-bit fast path, sometimes any other length the standard allows.
        Mode::Gcm if rng.random_bool(0.5) => Some(random_bytes(rng, 12)),
        Mode::Gcm => {
            let length = rng.random_range(1..=80);
            Some(random_bytes(rng, length))
        }
        _ => Some(random_bytes(rng, spec.algorithm.block_size())),
    }
}

#[test]
fn every_backend_equals_seq_for_every_cipher_mode_and_size() {
    let mut rng = seeded_rng("every_backend_equals_seq");
    let seq = Engine::new(Backend::Seq, None).unwrap();
    let engines = all_engines();
    for spec in CipherSpec::all() {
        let mut sizes = SIZES.to_vec();
        sizes.push(rng.random_range(18..200_000));
        for size in sizes {
            let key = random_key(&mut rng, spec);
            let iv = random_iv(&mut rng, spec);
            let aad_length = rng.random_range(0..40);
            let aad = random_bytes(&mut rng, aad_length);
            let plaintext = random_bytes(&mut rng, size);
            let mut message = Message::new(&spec.to_string(), &key, iv.as_deref());
            if spec.mode == Mode::Gcm {
                message.aad = Some(&aad);
                // The random GCM IVs include 1 to 11 bytes, which need asking for.
                message.allow_short_gcm_iv = true;
            }
            // Padding off needs whole blocks; keep it on except for a whole-block size.
            message.padding = !(spec.mode.pads()
                && size % spec.algorithm.block_size() == 0
                && size > 0
                && rng.random_bool(0.5));
            let expected = message.encrypt(&seq, &plaintext).unwrap();
            for engine in &engines {
                let label = format!("{spec} size {size} on {}", engine.backend());
                assert_eq!(
                    message.encrypt(engine, &plaintext).unwrap(),
                    expected,
                    "{label}: encrypt"
                );
                assert_eq!(
                    message.decrypt(engine, &expected).unwrap(),
                    plaintext,
                    "{label}: decrypt"
                );
            }
            if spec.algorithm.block_size() == 16 && spec.algorithm.name().starts_with("aes") {
                message.implementation = Implementation::Reference;
                assert_eq!(
                    message.encrypt(&seq, &plaintext).unwrap(),
                    expected,
                    "{spec} reference AES, size {size}"
                );
            }
        }
    }
}

/// Runs `openssl enc` on `input`; `None` when OpenSSL is not installed (allowed only
/// outside CI, where the test then says it skipped).
fn openssl_enc(
    spec: &str,
    key: &[u8],
    iv: Option<&[u8]>,
    decrypt: bool,
    input: &[u8],
) -> Option<Vec<u8>> {
    let mut command = Command::new("openssl");
    command.arg("enc");
    if spec.starts_with("bf-") {
        command.args(["-provider", "legacy", "-provider", "default"]);
    }
    command.args([&format!("-{spec}"), "-K", &hex::encode(key), "-nosalt"]);
    if let Some(iv) = iv {
        command.args(["-iv", &hex::encode(iv)]);
    }
    if decrypt {
        command.arg("-d");
    }
    let child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(_) if std::env::var_os("CI").is_none() => return None,
        Err(error) => panic!("openssl is required in CI: {error}"),
    };
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        output.status.success(),
        "openssl enc -{spec} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(output.stdout)
}

#[test]
fn matches_openssl_enc_for_aes_and_blowfish() {
    let mut rng = seeded_rng("matches_openssl_enc");
    let engine = Engine::new(Backend::Pool, Some(3)).unwrap();
    let names = [
        "aes-128-ecb",
        "aes-192-ecb",
        "aes-256-ecb",
        "aes-128-cbc",
        "aes-192-cbc",
        "aes-256-cbc",
        "aes-128-ctr",
        "aes-192-ctr",
        "aes-256-ctr",
        "bf-ecb",
        "bf-cbc",
    ];
    for name in names {
        let spec: CipherSpec = name.parse().unwrap();
        for size in SIZES {
            // `openssl enc` runs Blowfish with its default 16-byte key length (it zero-pads
            // shorter hex keys and ignores longer ones): compare with 16-byte keys. Other
            // lengths are checked against RustCrypto below.
            let key = if spec.algorithm.block_size() == 8 {
                random_bytes(&mut rng, 16)
            } else {
                random_key(&mut rng, spec)
            };
            let iv = random_iv(&mut rng, spec);
            let plaintext = random_bytes(&mut rng, size);
            let message = Message::new(name, &key, iv.as_deref());
            let ours = message.encrypt(&engine, &plaintext).unwrap();
            let Some(theirs) = openssl_enc(name, &key, iv.as_deref(), false, &plaintext) else {
                eprintln!("SKIPPED: openssl is not installed");
                return;
            };
            assert_eq!(ours, theirs, "{name} size {size}");
            assert_eq!(
                openssl_enc(name, &key, iv.as_deref(), true, &ours).unwrap(),
                plaintext
            );
        }
    }
}

#[test]
fn ctr_counter_wraps_like_openssl() {
    let engine = Engine::new(Backend::Pool, Some(3)).unwrap();
    let key = [0x42u8; 16];
    // Starting points just below 2^128 (all ones) and below 2^64 in the low half.
    let mut below_2_64 = [0u8; 16];
    below_2_64[8..].copy_from_slice(&[0xFF; 8]);
    below_2_64[15] = 0xFD;
    let mut below_2_32 = [0x17u8; 16];
    below_2_32[12..].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFE]);
    let mut all_ones = [0xFFu8; 16];
    all_ones[15] = 0xFE;
    for iv in [all_ones, below_2_64, below_2_32] {
        let plaintext: Vec<u8> = (0..4096 * 3 + 7).map(|i| i as u8).collect();
        let message = Message::new("aes-128-ctr", &key, Some(&iv));
        let ours = message.encrypt(&engine, &plaintext).unwrap();
        let Some(theirs) = openssl_enc("aes-128-ctr", &key, Some(&iv), false, &plaintext) else {
            eprintln!("SKIPPED: openssl is not installed");
            return;
        };
        assert_eq!(ours, theirs, "iv {}", hex::encode(iv));
    }
}

/// One block encrypted in place by an independent implementation.
type BlockFunction = Box<dyn Fn(&mut [u8])>;

/// One block of RustCrypto's `Cipher` under `key`, as a [`BlockFunction`].
fn block_function<Cipher: BlockCipherEncrypt + KeyInit + 'static>(key: &[u8]) -> BlockFunction {
    let cipher = Cipher::new_from_slice(key).unwrap();
    Box::new(move |block: &mut [u8]| cipher.encrypt_block(block.try_into().unwrap()))
}

/// Reference modes written out over any single-block function, to check ours against
/// RustCrypto's block ciphers.
fn reference_mode(
    mode: Mode,
    block_size: usize,
    iv: &[u8],
    data: &[u8],
    encrypt_block: &dyn Fn(&mut [u8]),
) -> Vec<u8> {
    let mut out = data.to_vec();
    match mode {
        Mode::Ecb => out.chunks_exact_mut(block_size).for_each(encrypt_block),
        Mode::Cbc => {
            let mut chain = iv.to_vec();
            for block in out.chunks_exact_mut(block_size) {
                block.iter_mut().zip(&chain).for_each(|(b, c)| *b ^= c);
                encrypt_block(block);
                chain.copy_from_slice(block);
            }
        }
        Mode::Ctr => {
            let mut counter = iv.to_vec();
            for piece in out.chunks_mut(block_size) {
                let mut keystream = counter.clone();
                encrypt_block(&mut keystream);
                piece.iter_mut().zip(&keystream).for_each(|(b, k)| *b ^= k);
                for byte in counter.iter_mut().rev() {
                    *byte = byte.wrapping_add(1);
                    if *byte != 0 {
                        break;
                    }
                }
            }
        }
        Mode::Gcm => unreachable!("GCM is checked against aes-gcm and pyca"),
    }
    out
}

#[test]
fn blowfish_and_rc6_modes_match_rustcrypto_block_ciphers() {
    let mut rng = seeded_rng("blowfish_and_rc6_modes");
    let engine = Engine::new(Backend::Pool, Some(3)).unwrap();
    for spec in CipherSpec::all()
        .into_iter()
        .filter(|s| s.mode != Mode::Gcm && !s.algorithm.name().starts_with("aes"))
    {
        for size in [0usize, 16, 48, 4096, (1 << 20) + 16] {
            let block_size = spec.algorithm.block_size();
            let key = random_key(&mut rng, spec);
            let iv = random_iv(&mut rng, spec);
            let plaintext = random_bytes(&mut rng, size);
            let mut message = Message::new(&spec.to_string(), &key, iv.as_deref());
            message.padding = false;
            let ours = message.encrypt(&engine, &plaintext).unwrap();
            type Rc6<KeySize> = rc6::RC6<u32, cipher::consts::U20, KeySize>;
            let encrypt_block = match spec.algorithm.name() {
                "bf" => block_function::<blowfish::Blowfish>(&key),
                "rc6-128" => block_function::<Rc6<cipher::consts::U16>>(&key),
                "rc6-192" => block_function::<Rc6<cipher::consts::U24>>(&key),
                _ => block_function::<Rc6<cipher::consts::U32>>(&key),
            };
            let theirs = reference_mode(
                spec.mode,
                block_size,
                iv.as_deref().unwrap_or_default(),
                &plaintext,
                &*encrypt_block,
            );
            assert_eq!(ours, theirs, "{spec} size {size}");
        }
    }
}

/// Seals `data` in place with RustCrypto's `Aead` under a 96-bit IV; returns the tag.
fn seal_detached<Aead: aes_gcm::aead::AeadInOut + aes_gcm::aead::KeyInit>(
    key: &[u8],
    iv: &[u8],
    aad: &[u8],
    data: &mut [u8],
) -> Vec<u8> {
    Aead::new_from_slice(key)
        .unwrap()
        .encrypt_inout_detached(iv.try_into().unwrap(), aad, data.into())
        .unwrap()
        .to_vec()
}

#[test]
fn aes_gcm_matches_rustcrypto_aes_gcm() {
    let mut rng = seeded_rng("aes_gcm_matches_rustcrypto");
    let engine = Engine::new(Backend::Pool, Some(3)).unwrap();
    for size in SIZES {
        for key_length in [16usize, 32] {
            let key = random_bytes(&mut rng, key_length);
            let iv = random_bytes(&mut rng, 12);
            let aad_length = rng.random_range(0..100);
            let aad = random_bytes(&mut rng, aad_length);
            let plaintext = random_bytes(&mut rng, size);
            let name = format!("aes-{}-gcm", key_length * 8);
            let mut message = Message::new(&name, &key, Some(&iv));
            message.aad = Some(&aad);
            let ours = message.encrypt(&engine, &plaintext).unwrap();
            let mut theirs = plaintext.clone();
            let tag = if key_length == 16 {
                seal_detached::<aes_gcm::Aes128Gcm>(&key, &iv, &aad, &mut theirs)
            } else {
                seal_detached::<aes_gcm::Aes256Gcm>(&key, &iv, &aad, &mut theirs)
            };
            theirs.extend_from_slice(&tag);
            assert_eq!(ours, theirs, "{name} size {size}");
        }
    }
}

/// pyca/cryptography (OpenSSL underneath) for GCM with IV lengths other than 96 bits.
#[test]
fn aes_gcm_matches_pyca_cryptography_on_any_iv_length() {
    const SCRIPT: &str = r#"
import sys
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
for line in sys.stdin:
    key, iv, aad, data = (bytes.fromhex(f) for f in line.strip().split(","))
    encryptor = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
    encryptor.authenticate_additional_data(aad)
    sealed = encryptor.update(data) + encryptor.finalize()
    print((sealed + encryptor.tag).hex())
"#;
    let probe = Command::new("python3")
        .args(["-c", "import cryptography"])
        .output();
    if !matches!(&probe, Ok(output) if output.status.success()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 with cryptography is required in CI"
        );
        eprintln!("SKIPPED: python3 with the cryptography package is not installed");
        return;
    }
    let mut rng = seeded_rng("aes_gcm_matches_pyca");
    let engine = Engine::new(Backend::Pool, Some(3)).unwrap();
    let mut cases = Vec::new();
    let mut expected = Vec::new();
    for size in SIZES.iter().copied().chain([70_000]) {
        for key_length in [16usize, 24, 32] {
            // pyca accepts GCM IVs of 8 to 128 bytes.
            let iv_length = rng.random_range(8..=128);
            let (key, iv) = (
                random_bytes(&mut rng, key_length),
                random_bytes(&mut rng, iv_length),
            );
            let aad_length = rng.random_range(0..50);
            let aad = random_bytes(&mut rng, aad_length);
            let plaintext = random_bytes(&mut rng, size);
            let mut message = Message::new(&format!("aes-{}-gcm", key_length * 8), &key, Some(&iv));
            message.aad = Some(&aad);
            // IVs of 8 to 11 bytes need asking for.
            message.allow_short_gcm_iv = true;
            expected.push(message.encrypt(&engine, &plaintext).unwrap());
            cases.push(format!(
                "{},{},{},{}",
                hex::encode(&key),
                hex::encode(&iv),
                hex::encode(&aad),
                hex::encode(&plaintext)
            ));
        }
    }
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = cases.join("\n") + "\n";
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(output.status.success());
    let lines: Vec<&str> = std::str::from_utf8(&output.stdout)
        .unwrap()
        .lines()
        .collect();
    assert_eq!(lines.len(), expected.len());
    for (line, ours) in lines.iter().zip(&expected) {
        assert_eq!(*line, hex::encode(ours));
    }
}
