//! The raw GCM fuzz properties (`parcrypt_engine::fuzzing`, also run by cargo-fuzz from
//! `fuzz/` as `raw_gcm_open`) on stable Rust: the kept corpus, then random inputs for a
//! bounded time. PARCRYPT_FUZZ_SECONDS sets the time per property (default 3);
//! PARCRYPT_TEST_SEED replays a run.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use parcrypt_engine::fuzzing::{raw_gcm_flip, raw_gcm_open};
use rand::rngs::StdRng;
use rand::{Rng, RngExt};
use random::seeded_rng;

fn budget() -> Duration {
    let seconds = std::env::var("PARCRYPT_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    Duration::from_secs_f64(seconds)
}

#[path = "../../format/tests/support/random.rs"]
mod random;

/// The kept inputs of the `raw_gcm_open` target.
fn corpus() -> Vec<Vec<u8>> {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/raw_gcm_open");
    let entries = std::fs::read_dir(&folder).expect("the raw_gcm_open corpus is kept");
    entries
        .filter_map(|entry| std::fs::read(entry.ok()?.path()).ok())
        .collect()
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
