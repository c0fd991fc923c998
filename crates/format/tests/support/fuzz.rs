//! The stable-Rust runs of the fuzz properties: how long each may run and the inputs
//! cargo-fuzz kept. Shared by this crate's fuzz tests and the engine's (they include this
//! file with `#[path]`).

use std::path::PathBuf;
use std::time::Duration;

/// The time per property: PARCRYPT_FUZZ_SECONDS, 3 seconds unless it says otherwise.
pub fn budget() -> Duration {
    let seconds = std::env::var("PARCRYPT_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    Duration::from_secs_f64(seconds)
}

/// The inputs cargo-fuzz found interesting and kept for `target` (fuzz/corpus/TARGET), so
/// the stable suite replays them; at least `at_least` of them, since a corpus that went
/// missing would make the replay pass without replaying anything.
pub fn corpus(target: &str, at_least: usize) -> Vec<Vec<u8>> {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let inputs: Vec<Vec<u8>> = std::fs::read_dir(&folder)
        .unwrap_or_else(|error| panic!("the kept corpus {}: {error}", folder.display()))
        .filter_map(|entry| std::fs::read(entry.ok()?.path()).ok())
        .collect();
    assert!(
        inputs.len() >= at_least,
        "the kept corpus {} holds {} inputs, fewer than {at_least}",
        folder.display(),
        inputs.len()
    );
    inputs
}
