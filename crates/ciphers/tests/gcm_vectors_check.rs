//! Checks tests/vectors/aes_gcm_spec.txt against RustCrypto's `aes-gcm`, an implementation we
//! did not write, so that a mistyped byte in the data file is caught here and not blamed on our
//! GCM code later.
//!
//! `aes-gcm` takes the nonce length as a type parameter and derives J0 through GHASH for any
//! length other than 96 bits, so the 64-bit and 480-bit IV cases (5/6, 11/12, 17/18) are
//! checked too.

use std::collections::BTreeMap;

use aes_gcm::aead::consts::{U12, U60, U8};
use aes_gcm::aead::{Aead, Payload};
use aes_gcm::aes::{Aes128, Aes192, Aes256};
use aes_gcm::{AesGcm, KeyInit, Nonce};

// The crate's own reader of our vector format, shared with its unit tests; this check uses
// only part of it.
#[allow(dead_code)]
#[path = "../src/test_vectors.rs"]
mod test_vectors;

// `test_vectors` names the cipher trait through the crate root, as it does inside the crate.
use parcrypt_ciphers::BlockCipher;

use test_vectors::{records_in_file_order, Record};

/// Encrypts and decrypts one record with the GCM instance `Gcm` (block cipher and nonce size
/// fixed by the type).
fn check_record<Gcm: KeyInit + Aead>(section: &str, record: &Record) {
    let gcm = Gcm::new_from_slice(&record["key"]).expect("key length matches the cipher type");
    let nonce = Nonce::<Gcm::NonceSize>::try_from(&record["iv"][..])
        .expect("iv length matches the nonce type");
    let aad = &record["aad"][..];

    let sealed = gcm
        .encrypt(
            &nonce,
            Payload {
                msg: &record["plaintext"],
                aad,
            },
        )
        .unwrap_or_else(|error| panic!("[{section}] encrypt: {error:?}"));
    let (ciphertext, tag) = sealed.split_at(sealed.len() - 16);
    assert_eq!(
        hex::encode(ciphertext),
        hex::encode(&record["ciphertext"]),
        "[{section}] ciphertext"
    );
    assert_eq!(
        hex::encode(tag),
        hex::encode(&record["tag"]),
        "[{section}] tag"
    );

    let opened = gcm
        .decrypt(&nonce, Payload { msg: &sealed, aad })
        .unwrap_or_else(|error| panic!("[{section}] decrypt: {error:?}"));
    assert_eq!(opened, record["plaintext"], "[{section}] decrypt");

    // A wrong tag must be refused, or the check above proves nothing about the tag.
    let mut forged = sealed.clone();
    *forged.last_mut().expect("tag present") ^= 1;
    assert!(
        gcm.decrypt(&nonce, Payload { msg: &forged, aad }).is_err(),
        "[{section}] forged tag accepted"
    );
}

#[test]
fn gcm_spec_vectors_match_rustcrypto_aes_gcm() {
    let records = records_in_file_order("aes_gcm_spec.txt");
    assert_eq!(records.len(), 18, "test cases 1-18");
    let mut iv_lengths_seen = BTreeMap::new();
    for (case_number, record) in (1..).zip(&records) {
        let section = &record.section;
        let key_bits = record["key"].len() * 8;
        assert_eq!(
            section,
            &format!("aes{key_bits}-case{case_number}"),
            "sections in spec order"
        );
        for field in ["key", "iv", "plaintext", "aad", "ciphertext", "tag"] {
            assert!(
                record.field_names().any(|name| name == field),
                "[{section}] lacks {field}"
            );
        }
        assert_eq!(
            record.field_names().count(),
            6,
            "[{section}] has unexpected fields"
        );
        assert_eq!(record["tag"].len(), 16, "[{section}] tag length");

        let iv_length = record["iv"].len();
        *iv_lengths_seen.entry(iv_length).or_insert(0) += 1;
        match (key_bits, iv_length) {
            (128, 12) => check_record::<AesGcm<Aes128, U12>>(section, record),
            (128, 8) => check_record::<AesGcm<Aes128, U8>>(section, record),
            (128, 60) => check_record::<AesGcm<Aes128, U60>>(section, record),
            (192, 12) => check_record::<AesGcm<Aes192, U12>>(section, record),
            (192, 8) => check_record::<AesGcm<Aes192, U8>>(section, record),
            (192, 60) => check_record::<AesGcm<Aes192, U60>>(section, record),
            (256, 12) => check_record::<AesGcm<Aes256, U12>>(section, record),
            (256, 8) => check_record::<AesGcm<Aes256, U8>>(section, record),
            (256, 60) => check_record::<AesGcm<Aes256, U60>>(section, record),
            other => panic!("[{section}] unexpected (key bits, iv bytes) {other:?}"),
        }
    }
    // Four 96-bit cases, one 64-bit and one 480-bit per key size.
    assert_eq!(iv_lengths_seen, BTreeMap::from([(8, 3), (12, 12), (60, 3)]));
}
