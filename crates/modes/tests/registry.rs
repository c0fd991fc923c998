//! Walks the cipher registry (`parcrypt_ciphers::registry::CIPHERS`) through the modes:
//! every cipher name with every mode its entry lists parses and prints back, the modes it
//! leaves out are refused, and each listed mode round-trips on the calling thread, with the
//! ciphertext of our fast implementation equal to that of the reference one where a cipher
//! has two (AES).

use parcrypt_ciphers::registry::{self, CIPHERS};
use parcrypt_ciphers::{new_cipher, Algorithm, BlockCipher, Implementation};
use parcrypt_modes::ctr::{self, Counter, CounterRule};
use parcrypt_modes::gcm::GcmKey;
use parcrypt_modes::{cbc, ecb, CipherSpec, Direction, Mode, SpecError};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Encrypts `plaintext` with `spec` on one thread and returns the ciphertext (with GCM's
/// tag at the end).
fn encrypt(spec: CipherSpec, cipher: &dyn BlockCipher, iv: &[u8], plaintext: &[u8]) -> Vec<u8> {
    let mut data = plaintext.to_vec();
    match spec.mode {
        Mode::Ecb => ecb::apply(cipher, Direction::Encrypt, &mut data),
        Mode::Cbc => cbc::encrypt(cipher, &mut iv.to_vec(), &mut data),
        Mode::Ctr => ctr::apply(cipher, Counter::new(iv, CounterRule::Full), &mut data),
        Mode::Gcm => {
            let key = GcmKey::new(cipher).expect("a 128-bit block cipher");
            let tag = key.seal(cipher, iv, b"registry", &mut data).unwrap();
            data.extend_from_slice(&tag);
        }
    }
    data
}

/// Decrypts what [`encrypt`] made, checking GCM's tag.
fn decrypt(spec: CipherSpec, cipher: &dyn BlockCipher, iv: &[u8], ciphertext: &[u8]) -> Vec<u8> {
    let mut data = ciphertext.to_vec();
    match spec.mode {
        Mode::Ecb => ecb::apply(cipher, Direction::Decrypt, &mut data),
        Mode::Cbc => cbc::decrypt(cipher, iv, &mut data),
        Mode::Ctr => ctr::apply(cipher, Counter::new(iv, CounterRule::Full), &mut data),
        Mode::Gcm => {
            let key = GcmKey::new(cipher).expect("a 128-bit block cipher");
            let tag = data.split_off(data.len() - 16);
            key.open(cipher, iv, b"registry", &mut data, &tag)
                .expect("the tag of our own ciphertext matches");
        }
    }
    data
}

#[test]
fn every_name_with_every_listed_mode_parses_and_prints_back() {
    let mut listed = Vec::new();
    for cipher in &CIPHERS {
        for variant in cipher.variants {
            for mode in Mode::ALL {
                let name = format!("{}-{}", variant.name, mode);
                let parsed = name.parse::<CipherSpec>();
                if cipher.supports_mode(mode.name()) {
                    let spec = parsed.unwrap_or_else(|error| panic!("{name}: {error}"));
                    assert_eq!(spec.algorithm, variant.algorithm);
                    assert_eq!(spec.mode, mode);
                    assert_eq!(spec.to_string(), name);
                    assert_eq!(
                        name.to_ascii_uppercase().parse::<CipherSpec>(),
                        Ok(spec),
                        "names are case-insensitive"
                    );
                    listed.push(spec);
                } else {
                    assert!(parsed.is_err(), "{name} accepted");
                }
            }
        }
    }
    assert_eq!(listed, CipherSpec::all());
    // The message for the one combination left out today is kept.
    assert_eq!(
        "bf-gcm".parse::<CipherSpec>(),
        Err(SpecError::GcmNeeds128BitBlock("bf-gcm".into()))
    );
    assert_eq!(
        "bf-gcm".parse::<CipherSpec>().unwrap_err().to_string(),
        "bf-gcm is not available: GCM needs a 128-bit block cipher (AES or RC6)"
    );
    assert_eq!(CipherSpec::names_help(), registry::cipher_names_help());
}

#[test]
fn every_listed_mode_round_trips_and_implementations_agree() {
    let mut rng = StdRng::seed_from_u64(32);
    for spec in CipherSpec::all() {
        let algorithm: Algorithm = spec.algorithm;
        let block = algorithm.block_size();
        let (low, high) = algorithm.key_lengths();
        let lengths: Vec<usize> = match spec.mode {
            Mode::Ecb | Mode::Cbc => vec![0, block, 5 * block, 67 * block],
            Mode::Ctr | Mode::Gcm => vec![0, 1, block + 3, 1000, 4099],
        };
        for key_length in [low, (low + high) / 2, high] {
            let mut key = vec![0u8; key_length];
            rng.fill_bytes(&mut key);
            let iv_length = spec.iv_length().unwrap_or(12);
            let mut iv = vec![0u8; iv_length];
            rng.fill_bytes(&mut iv);
            let fast = new_cipher(algorithm, Implementation::Fast, &key).unwrap();
            let reference = new_cipher(algorithm, Implementation::Reference, &key).unwrap();
            for &length in &lengths {
                let mut plaintext = vec![0u8; length];
                rng.fill_bytes(&mut plaintext);
                let context = format!("{spec}, {key_length}-byte key, {length} bytes");
                let ciphertext = encrypt(spec, fast.as_ref(), &iv, &plaintext);
                assert_eq!(
                    ciphertext,
                    encrypt(spec, reference.as_ref(), &iv, &plaintext),
                    "{context}: fast and reference differ"
                );
                if length > 0 {
                    assert_ne!(ciphertext[..length], plaintext[..], "{context}");
                }
                assert_eq!(
                    decrypt(spec, fast.as_ref(), &iv, &ciphertext),
                    plaintext,
                    "{context}: fast"
                );
                assert_eq!(
                    decrypt(spec, reference.as_ref(), &iv, &ciphertext),
                    plaintext,
                    "{context}: reference"
                );
            }
        }
    }
}
