//! Arbitrary bytes as a raw GCM message (key, IV, AAD, ciphertext and tag) through the
//! authenticate-first decryption, and a sealed message with one bit flipped (see
//! `parcrypt_engine::fuzzing` for the properties checked).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = parcrypt_engine::fuzzing::raw_gcm_open(data);
    parcrypt_engine::fuzzing::raw_gcm_flip(data);
});
