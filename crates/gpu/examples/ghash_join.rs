//! The host's share of GPU GCM for 1 GiB of ciphertext: joining GHASH partial sums one per
//! 4 KiB segment (`ghash_segments`), per segment with `append_partial` (a power of H made by
//! square-and-multiply for every segment) or with `join_partials` (H^256 made once, one
//! multiplication per segment), against joining one sum per 1 MiB work-group
//! (`ghash_groups`, as `GpuDevice::ghash_whole` does: H^65536 made once). CPU only; medians
//! of 7.
//!
//! Last, the whole host share of `GpuDevice::process_gcm` for the same data: the per-slab
//! join of its sums as the host runs it (`ghash::join_group_sums` over 64 MiB slabs, the
//! power made once) plus the tail it hashes itself (the worst case, 4095 bytes), set against
//! the GPU time of the data at `GBPS` GB/s (default 400, the AES-128-CTR target): the issue
//! asks for less than 1 %.
//!
//! `cargo run --release -p parcrypt-gpu --example ghash_join -- [GIB] [GBPS]`
// An example reports to the person running it.
#![allow(clippy::disallowed_macros)]

#[path = "support/common.rs"]
mod common;

use std::time::{Duration, Instant};

use parcrypt_gpu::ghash::{append_tail, join_group_sums, join_partials};
use parcrypt_gpu::DEFAULT_SLAB_BYTES;
use parcrypt_modes::ghash::GhashKey;

use common::median;

const SEGMENT_BYTES: usize = 4096;

/// Command-line argument `position` as a `T`, or `default` where it is missing or not one.
fn argument<T: std::str::FromStr>(position: usize, default: T) -> T {
    std::env::args()
        .nth(position)
        .and_then(|text| text.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let gibibytes: usize = argument(1, 1);
    let gigabytes_per_second: f64 = argument(2, 400.0);
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
    // process_gcm's layout: 64 MiB slabs of 64 sums each, as (high, low) u64 pairs, and a
    // 4095-byte tail.
    const GROUP: usize = 256;
    let slab_sums = DEFAULT_SLAB_BYTES / SEGMENT_BYTES / GROUP;
    let sum_bytes: Vec<u8> = group_sums
        .iter()
        .flat_map(|&sum| {
            let mut pair = [0u8; 16];
            pair[..8].copy_from_slice(&((sum >> 64) as u64).to_le_bytes());
            pair[8..].copy_from_slice(&(sum as u64).to_le_bytes());
            pair
        })
        .collect();
    let tail = vec![0x5au8; SEGMENT_BYTES - 1];
    let mut host_share = Vec::new();
    for _ in 0..7 {
        let started = Instant::now();
        let full_group = key.power((GROUP * SEGMENT_BYTES / 16) as u64);
        let mut state = 0u128;
        for slab in sum_bytes.chunks(16 * slab_sums) {
            let segments = slab.len() / 16 * GROUP;
            state = join_group_sums(&key, &full_group, state, slab, segments, GROUP);
        }
        state = append_tail(&key, state, &tail);
        std::hint::black_box(state);
        host_share.push(started.elapsed());
    }
    let host_share = median(host_share);
    let gpu_seconds = total as f64 / (gigabytes_per_second * 1e9);
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
    println!(
        "process_gcm's host share ({} slab joins and a {}-byte tail): {:.2?}, {:.3} % of \
         {:.2?} of GPU time at {gigabytes_per_second} GB/s",
        total.div_ceil(DEFAULT_SLAB_BYTES),
        tail.len(),
        host_share,
        100.0 * host_share.as_secs_f64() / gpu_seconds,
        Duration::from_secs_f64(gpu_seconds)
    );
}
