//! Arbitrary bytes as a parcrypt header, as envelopes of both formats, and as a chunk area
//! (see `parcrypt_format::fuzzing::parse` for the properties checked).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    parcrypt_format::fuzzing::parse(data);
});
