//! Seeded randomness for tests, shared by this crate's tests and the workspace's
//! (tests/differential.rs includes this file too).

use rand::rngs::StdRng;
use rand::SeedableRng;

/// A seeded generator: the seed is printed so that a failure can be replayed with
/// PARCRYPT_TEST_SEED=<seed>.
#[allow(clippy::disallowed_macros)] // libtest captures a test's stderr
pub fn seeded_rng(test: &str) -> StdRng {
    let seed = std::env::var("PARCRYPT_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    eprintln!("{test}: PARCRYPT_TEST_SEED={seed}");
    StdRng::seed_from_u64(seed)
}
