//! The raw GCM fuzz properties (`parcrypt_engine::fuzzing`, also run by cargo-fuzz from
//! `fuzz/` as `raw_gcm_open`) on stable Rust: the kept corpus, then random inputs for a
//! bounded time. PARCRYPT_FUZZ_SECONDS sets the time per property (default 3);
//! PARCRYPT_TEST_SEED replays a run.

use std::time::Instant;

use parcrypt_engine::fuzzing::{raw_gcm_flip, raw_gcm_open};
use rand::rngs::StdRng;
use rand::{Rng, RngExt};
use random::seeded_rng;

#[path = "../../format/tests/support/fuzz.rs"]
mod fuzz;
#[path = "../../format/tests/support/random.rs"]
mod random;

use fuzz::budget;

/// The kept inputs of the `raw_gcm_open` target: its seed files at least.
fn corpus() -> Vec<Vec<u8>> {
    fuzz::corpus("raw_gcm_open", 4)
}

fn random_input(rng: &mut StdRng) -> Vec<u8> {
    // Mostly short (the interesting lengths are around blocks and the tag), sometimes long.
    let length = if rng.random_range(0..8) == 0 {
        rng.random_range(0..5000)
    } else {
        rng.random_range(0..200)
    };
    let mut input = vec![0u8; length];
    rng.fill_bytes(&mut input);
    input
}

#[test]
fn the_corpus_holds_both_properties() {
    let corpus = corpus();
    assert!(corpus.len() >= 4, "the corpus has its seed files");
    let mut opened = 0;
    for input in &corpus {
        opened += usize::from(raw_gcm_open(input));
        raw_gcm_flip(input);
    }
    // The seeds hold genuine messages (made with pyca/cryptography) beside forged ones.
    assert!(opened >= 4, "{opened} of the corpus opened");
}

#[test]
fn random_inputs_hold_both_properties() {
    let mut rng = seeded_rng("random_inputs_hold_both_properties");
    let started = Instant::now();
    let mut runs = 0u64;
    while runs < 50 || started.elapsed() < budget() {
        let input = random_input(&mut rng);
        let _ = raw_gcm_open(&input);
        raw_gcm_flip(&input);
        runs += 1;
    }
    println!("{runs} random inputs");
}
