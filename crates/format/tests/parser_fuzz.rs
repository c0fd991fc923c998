//! The fuzz properties (`parcrypt_format::fuzzing`, also run by cargo-fuzz from `fuzz/`) on
//! stable Rust: random bytes, the kept fuzz corpus, and mutations of valid envelopes, for a
//! bounded time. PARCRYPT_FUZZ_SECONDS sets the time per property (default 3);
//! PARCRYPT_TEST_SEED replays a run.
// Tests print what they ran and skipped to stderr, where libtest captures it.
#![allow(clippy::disallowed_macros)]

use std::time::Instant;

use parcrypt_age::{HybridIdentity, Recipient, X25519Identity};
use parcrypt_format::fuzzing;
use parcrypt_format::{Argon2Params, Envelope, Format, Secret, Setup, Suite};
use rand::rngs::StdRng;
use rand::{Rng, RngExt};

#[path = "support/fuzz.rs"]
mod fuzz;
#[path = "support/random.rs"]
mod random;

use fuzz::{budget, corpus};
use random::seeded_rng;

/// Starting points that get past the first checks: valid envelopes of every kind.
fn seeds() -> Vec<Vec<u8>> {
    let cheap = Argon2Params {
        memory_kib: 8,
        passes: 1,
        lanes: 1,
    };
    let mut seeds = Vec::new();
    for suite in Suite::ALL {
        for format in [Format::Parcrypt, Format::Cobblestone] {
            let setup = Setup {
                format,
                suite,
                argon2: cheap,
                ..Setup::default()
            };
            let key = vec![3u8; suite.key_bytes()];
            seeds.push(
                Envelope::create(&setup, Secret::Key(&key))
                    .unwrap()
                    .0
                    .to_bytes(),
            );
        }
        let setup = Setup {
            suite,
            argon2: cheap,
            ..Setup::default()
        };
        seeds.push(
            Envelope::create(&setup, Secret::Passphrase(b"pass"))
                .unwrap()
                .0
                .to_bytes(),
        );
        // Version-2 headers, to recipients other than the properties' identity.
        let x25519 = Recipient::from(X25519Identity::generate().to_public());
        let hybrid = Recipient::from(HybridIdentity::generate().to_public());
        for recipients in [
            vec![x25519.clone()],
            vec![x25519.clone(), x25519],
            vec![hybrid],
        ] {
            seeds.push(
                Envelope::create(&setup, Secret::Recipients(&recipients))
                    .unwrap()
                    .0
                    .to_bytes(),
            );
        }
    }
    seeds
}

fn mutate(rng: &mut StdRng, input: &mut Vec<u8>) {
    for _ in 0..rng.random_range(1..=4) {
        match rng.random_range(0..4) {
            0 if !input.is_empty() => {
                let position = rng.random_range(0..input.len());
                input[position] ^= 1 << rng.random_range(0..8);
            }
            1 if !input.is_empty() => {
                let position = rng.random_range(0..input.len());
                input[position] = [0, 1, 2, 0x7f, 0x80, 0xff][rng.random_range(0..6)];
            }
            2 => input.truncate(rng.random_range(0..=input.len())),
            _ => {
                let mut tail = vec![0u8; rng.random_range(0..=70)];
                rng.fill_bytes(&mut tail);
                input.extend_from_slice(&tail);
            }
        }
    }
}

#[test]
fn parsing_arbitrary_and_mutated_input_never_panics_or_accepts_forgeries() {
    let mut rng = seeded_rng("parse");
    for input in corpus("parse", 1) {
        fuzzing::parse(&input);
    }
    let seeds = seeds();
    let started = Instant::now();
    let mut runs = 0u64;
    while started.elapsed() < budget() {
        let mut input = if rng.random_range(0..3) == 0 {
            let mut bytes = vec![0u8; rng.random_range(0..=200)];
            rng.fill_bytes(&mut bytes);
            bytes
        } else {
            seeds[rng.random_range(0..seeds.len())].clone()
        };
        mutate(&mut rng, &mut input);
        if rng.random_range(0..4) == 0 {
            // Room for chunks: whole, cut and padded ones.
            let mut chunks = vec![0u8; rng.random_range(0..40_000)];
            rng.fill_bytes(&mut chunks);
            input.extend_from_slice(&chunks);
        }
        fuzzing::parse(&input);
        runs += 1;
    }
    eprintln!("parse: {runs} inputs");
    assert!(runs > 100);
}

#[test]
fn edited_messages_are_refused_and_releases_are_genuine() {
    let mut rng = seeded_rng("edit_and_open");
    for input in corpus("edit_and_open", 1) {
        fuzzing::edit_and_open(&input);
    }
    let started = Instant::now();
    let mut runs = 0u64;
    while started.elapsed() < budget() {
        let mut input = vec![0u8; rng.random_range(0..=48)];
        rng.fill_bytes(&mut input);
        fuzzing::edit_and_open(&input);
        runs += 1;
    }
    eprintln!("edit_and_open: {runs} inputs");
    assert!(runs > 100);
}
