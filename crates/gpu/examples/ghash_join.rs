//! The host's share of GPU GCM for 1 GiB of ciphertext: joining GHASH partial sums one per
//! 4 KiB segment (`ghash_segments`), per segment with `append_partial` (a power of H made by
//! square-and-multiply for every segment) or with `join_partials` (H^256 made once, one
//! multiplication per segment), against joining one sum per 1 MiB work-group
//! (`ghash_groups`, as `GpuDevice::ghash_whole` does: H^65536 made once). CPU only; medians
//! of 7.
//!
//! `cargo run --release -p parcrypt-gpu --example ghash_join -- [GIB]`
// An example reports to the person running it.
#![allow(clippy::disallowed_macros)]

use std::time::{Duration, Instant};

use parcrypt_gpu::ghash::join_partials;
use parcrypt_modes::ghash::GhashKey;

const SEGMENT_BYTES: usize = 4096;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let gibibytes: usize = std::env::args()
        .nth(1)
        .and_then(|text| text.parse().ok())
        .unwrap_or(1);
    let total = gibibytes << 30;
    let key = GhashKey::new(&[0x42; 16]);
    let partials: Vec<u128> = (0..total / SEGMENT_BYTES)
        .map(|index| (index as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835))
        .collect();
    let group_sums = &partials[..total / (256 * SEGMENT_BYTES)];
    let mut per_segment = Vec::new();
    let mut joined = Vec::new();
    let mut per_group = Vec::new();
    let (mut first, mut second) = (0, 0);
    for _ in 0..7 {
        let started = Instant::now();
        let mut state = 0u128;
        for &partial in &partials {
            state = key.append_partial(state, partial, SEGMENT_BYTES as u64);
        }
        per_segment.push(started.elapsed());
        first = std::hint::black_box(state);
        let started = Instant::now();
        second = std::hint::black_box(join_partials(&key, &partials, SEGMENT_BYTES, total));
        joined.push(started.elapsed());
        let started = Instant::now();
        let power = key.power(256 * SEGMENT_BYTES as u64 / 16);
        let mut state = 0u128;
        for &partial in group_sums {
            state = key.append_partial_by(state, partial, &power);
        }
        std::hint::black_box(state);
        per_group.push(started.elapsed());
    }
    assert_eq!(first, second, "both joins give the same GHASH");
    println!(
        "{} partial sums ({gibibytes} GiB in {SEGMENT_BYTES}-byte segments), {}: per segment \
         with append_partial {:.2?}, join_partials {:.2?}; {} work-group sums: {:.2?}",
        partials.len(),
        key.implementation(),
        median(per_segment),
        median(joined),
        group_sums.len(),
        median(per_group)
    );
}
