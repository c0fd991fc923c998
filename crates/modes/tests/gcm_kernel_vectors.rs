//! The official AES-GCM vectors (the GCM specification's test cases 1-18 and Wycheproof's
//! `aes_gcm_test.json`, from tests/vectors/ at the top of the workspace) once per GCM kernel
//! this CPU has, each forced with the others off: encryption through
//! `GcmKey::process_range` must give the vector's ciphertext and tag, and decryption through
//! it the plaintext with the tag accepted (or, for an invalid vector, refused).
//!
//! These go through the kernel API rather than the CLI because the CLI's `open` hashes
//! before it decrypts with CTR alone, so only `process_range` really runs each kernel in
//! both directions. A kernel runs only on whole batches (8, 16 or 32 blocks), so most of
//! these short vectors reach only its tail handling; each kernel reports how many vectors
//! were long enough to enter it, and at least one must be.

// Tests say on stdout what this machine could not run; libtest shows it.
#![allow(clippy::disallowed_macros)]

use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
use parcrypt_modes::gcm::{check_tag, GcmAccumulator, GcmKernel, GcmKey};
use parcrypt_modes::Direction;
use serde_json::Value;

#[path = "../../../tests/support/vectors.rs"]
mod vectors;

/// One GCM vector.
struct Vector {
    name: String,
    key: Vec<u8>,
    iv: Vec<u8>,
    aad: Vec<u8>,
    plaintext: Vec<u8>,
    ciphertext: Vec<u8>,
    tag: Vec<u8>,
    valid: bool,
}

/// The specification's cases from `aes_gcm_spec.txt` (`[section]` then `name = hex` lines).
fn specification_vectors() -> Vec<Vector> {
    vectors::load("aes_gcm_spec.txt")
        .iter()
        .map(|record| Vector {
            name: record.section.clone(),
            key: record.get("key").to_vec(),
            iv: record.get("iv").to_vec(),
            aad: record.get("aad").to_vec(),
            plaintext: record.get("plaintext").to_vec(),
            ciphertext: record.get("ciphertext").to_vec(),
            tag: record.get("tag").to_vec(),
            valid: true,
        })
        .collect()
}

/// Wycheproof's AES-GCM tests with 128-bit tags and AES key sizes.
fn wycheproof_vectors() -> Vec<Vector> {
    let text = std::fs::read_to_string(vectors::path("wycheproof/aes_gcm_test.json"))
        .expect("wycheproof vectors");
    let suite: Value = serde_json::from_str(&text).expect("JSON");
    let field = |test: &Value, name: &str| {
        hex::decode(test[name].as_str().expect("hex field")).expect("hex")
    };
    let mut vectors = Vec::new();
    for group in suite["testGroups"].as_array().expect("groups") {
        if group["tagSize"].as_u64() != Some(128) {
            continue;
        }
        for test in group["tests"].as_array().expect("tests") {
            let key = field(test, "key");
            if ![16, 24, 32].contains(&key.len()) {
                continue;
            }
            vectors.push(Vector {
                name: format!("wycheproof tcId {}", test["tcId"]),
                key,
                iv: field(test, "iv"),
                aad: field(test, "aad"),
                plaintext: field(test, "msg"),
                ciphertext: field(test, "ct"),
                tag: field(test, "tag"),
                valid: test["result"] == "valid",
            });
        }
    }
    vectors
}

fn algorithm(key: &[u8]) -> Algorithm {
    match key.len() {
        16 => Algorithm::Aes128,
        24 => Algorithm::Aes192,
        _ => Algorithm::Aes256,
    }
}

/// Checks `vector` with `kernel` forced; returns whether it is valid.
fn check(vector: &Vector, kernel: GcmKernel) -> bool {
    let context = format!("{} on {kernel}", vector.name);
    let cipher =
        new_cipher(algorithm(&vector.key), Implementation::Fast, &vector.key).expect("key");
    let cipher = cipher.as_ref();
    let mut key = GcmKey::new(cipher).expect("128-bit cipher");
    assert_eq!(key.set_kernel(kernel), kernel, "{context}: available");
    let Ok(message) = key.message(cipher, &vector.iv) else {
        assert!(!vector.valid, "{context}: IV refused");
        return false;
    };

    // The range path over the whole text in place, and the GHASH over the AAD and it.
    let range = |direction: Direction, input: &[u8]| {
        let mut data = input.to_vec();
        let sum = key.process_range(&message, cipher, direction, 0, &mut data);
        let mut accumulator = GcmAccumulator::new(&key, &vector.aad);
        accumulator
            .append(&key, sum, data.len() as u64)
            .expect("short message");
        (data, accumulator)
    };

    let (sealed, accumulator) = range(Direction::Encrypt, &vector.plaintext);
    let tag = key.tag(&message, &accumulator);
    if vector.valid {
        assert!(sealed == vector.ciphertext, "{context}: ciphertext");
        assert_eq!(tag.as_slice(), vector.tag, "{context}: tag");
    } else {
        assert!(
            sealed != vector.ciphertext || tag.as_slice() != vector.tag,
            "{context}: an invalid vector's ciphertext and tag were produced"
        );
    }

    let (opened, accumulator) = range(Direction::Decrypt, &vector.ciphertext);
    let verdict = key.verify(&message, &accumulator, &vector.tag);
    if vector.valid {
        assert_eq!(verdict, Ok(()), "{context}: tag refused");
        assert!(opened == vector.plaintext, "{context}: plaintext");
    } else {
        assert!(verdict.is_err(), "{context}: invalid vector accepted");
    }

    // The whole-message call (one kernel call on VAES-512 under a 96-bit nonce) agrees with
    // the range path both ways.
    let whole = |direction: Direction, input: &[u8]| {
        let mut data = input.to_vec();
        let tag = key
            .crypt_message(cipher, direction, &vector.iv, &vector.aad, None, &mut data)
            .expect("an IV the range path took");
        (data, tag)
    };
    let (whole_sealed, whole_tag) = whole(Direction::Encrypt, &vector.plaintext);
    assert!(
        whole_sealed == sealed,
        "{context}: whole-message ciphertext"
    );
    assert_eq!(whole_tag, tag, "{context}: whole-message tag");
    let (whole_opened, whole_tag) = whole(Direction::Decrypt, &vector.ciphertext);
    assert!(whole_opened == opened, "{context}: whole-message plaintext");
    assert_eq!(
        check_tag(whole_tag, &vector.tag),
        verdict,
        "{context}: whole-message verdict"
    );
    vector.valid
}

/// Blocks per batch of each kernel (a vector enters the kernel from this many blocks on).
fn batch_blocks(kernel: GcmKernel) -> usize {
    match kernel {
        GcmKernel::Vaes512 => 32,
        GcmKernel::Vaes256 => 16,
        GcmKernel::AesNi => 8,
        GcmKernel::TwoPass => 1,
    }
}

fn kernels() -> Vec<GcmKernel> {
    for kernel in GcmKernel::ALL {
        if !kernel.is_available() {
            println!("SKIPPED: the {kernel} GCM kernel is not available on this CPU");
        }
    }
    GcmKernel::available()
}

#[test]
fn specification_cases_on_every_kernel() {
    let vectors = specification_vectors();
    assert_eq!(vectors.len(), 18, "every case of the file must run");
    for kernel in kernels() {
        for vector in &vectors {
            assert!(check(vector, kernel));
        }
    }
}

#[test]
fn wycheproof_on_every_kernel() {
    let vectors = wycheproof_vectors();
    for kernel in kernels() {
        let (mut valid, mut invalid) = (0, 0);
        for vector in &vectors {
            if check(vector, kernel) {
                valid += 1;
            } else {
                invalid += 1;
            }
        }
        assert_eq!(
            (valid, invalid),
            (229, 87),
            "every test of the file must run"
        );
        let entered = vectors
            .iter()
            .filter(|vector| vector.plaintext.len() >= 16 * batch_blocks(kernel))
            .count();
        assert!(entered > 0, "no vector is long enough to reach {kernel}");
        println!("wycheproof aes-gcm on {kernel}: {valid} valid, {invalid} invalid refused, {entered} long enough to enter the kernel");
    }
}
