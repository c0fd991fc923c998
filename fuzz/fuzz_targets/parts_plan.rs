//! The parts planner on hostile lengths and final chunks (see
//! `parcrypt_format::fuzzing::parts_plan` for the properties checked): it never panics, and
//! never reports a length for a file whose final chunk does not authenticate.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    parcrypt_format::fuzzing::parts_plan(data);
});
