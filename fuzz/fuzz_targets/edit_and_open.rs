//! A valid message edited as the input says, then decrypted by streaming and by random
//! access (see `parcrypt_format::fuzzing::edit_and_open` for the properties checked).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    parcrypt_format::fuzzing::edit_and_open(data);
});
