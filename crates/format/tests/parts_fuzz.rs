//! The parts planner's fuzz property (`parcrypt_format::fuzzing::parts_plan`, also run by
//! cargo-fuzz from `fuzz/` as `parts_plan`) on stable Rust: the kept corpus, then random
//! input for a bounded time (PARCRYPT_FUZZ_SECONDS, default 3; PARCRYPT_TEST_SEED replays a
//! run). Issue 31 finding 1: a planner that reported a length for a cut file (the final
//! chunk not authenticated) fails the corpus's seeds of a cut plus a fake final chunk.
// Tests print what they ran to stderr, where libtest captures it.
#![allow(clippy::disallowed_macros)]

use std::time::Instant;

use parcrypt_format::fuzzing;
use rand::{Rng, RngExt};

#[path = "support/fuzz.rs"]
mod fuzz;
#[path = "support/random.rs"]
mod random;

use fuzz::budget;

#[test]
fn hostile_ends_never_plan_and_never_panic() {
    let inputs = fuzz::corpus("parts_plan", 8);
    for input in &inputs {
        fuzzing::parts_plan(input);
    }
    let mut rng = random::seeded_rng("parts_plan");
    let started = Instant::now();
    let mut runs = 0u64;
    while started.elapsed() < budget() {
        // A kept input with a few bytes changed, or random bytes.
        let mut input = if rng.random_range(0..2) == 0 {
            inputs[rng.random_range(0..inputs.len())].clone()
        } else {
            let mut bytes = vec![0u8; rng.random_range(0..=120)];
            rng.fill_bytes(&mut bytes);
            bytes
        };
        for _ in 0..rng.random_range(0..4) {
            if !input.is_empty() {
                let position = rng.random_range(0..input.len());
                input[position] = rng.random();
            }
        }
        fuzzing::parts_plan(&input);
        runs += 1;
    }
    eprintln!(
        "parts_plan: {} kept inputs, {runs} random ones",
        inputs.len()
    );
    assert!(runs > 20);
}
