//! Single-core throughput of our Blowfish and RC6 against RustCrypto's `blowfish` and `rc6`.
//!
//! `cargo run --release -p parcrypt-ciphers --example bf_rc6_speed`
//!
//! Each cipher encrypts the same pre-touched 16 MiB buffer in place: one warm-up pass, then
//! several timed passes, of which the median is printed (the median shrugs off a pass that
//! was preempted).

use std::hint::black_box;
use std::time::Instant;

use cipher::consts::{U16, U20};
use cipher::{BlockCipherEncrypt, KeyInit};
use parcrypt_ciphers::{blowfish::Blowfish, rc6::Rc6, BlockCipher};

const BUFFER_BYTES: usize = 16 << 20;
const TIMED_PASSES: usize = 9;

/// Times `encrypt` over `buffer` and returns the median rate in GB/s (10^9 bytes per second).
fn median_gigabytes_per_second(buffer: &mut [u8], mut encrypt: impl FnMut(&mut [u8])) -> f64 {
    encrypt(buffer);
    let mut rates: Vec<f64> = (0..TIMED_PASSES)
        .map(|_| {
            let start = Instant::now();
            encrypt(black_box(&mut *buffer));
            black_box(&*buffer);
            buffer.len() as f64 / start.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[TIMED_PASSES / 2]
}

/// Encrypts with a RustCrypto cipher through its own multi-block entry point.
fn rustcrypto_encrypt<C: BlockCipherEncrypt>(cipher: &C, data: &mut [u8]) {
    let (blocks, rest) = cipher::Block::<C>::slice_as_chunks_mut(data);
    assert!(rest.is_empty(), "buffer is a whole number of blocks");
    cipher.encrypt_blocks(blocks);
}

fn main() {
    // Written byte by byte so every page is faulted in before any timing starts.
    let mut buffer: Vec<u8> = (0..BUFFER_BYTES)
        .map(|index| (index * 131 + 7) as u8)
        .collect();
    let key: [u8; 16] = core::array::from_fn(|index| (index * 17 + 1) as u8);

    let ours_blowfish = Blowfish::new(&key);
    let ours_rc6 = Rc6::new(&key);
    let theirs_blowfish: blowfish::Blowfish =
        blowfish::Blowfish::new_from_slice(&key).expect("16-byte key");
    let theirs_rc6 = rc6::RC6::<u32, U20, U16>::new_from_slice(&key).expect("16-byte key");

    // The modes hand the ciphers `preferred_batch` blocks per call, not 16 MiB at once.
    let in_batches = |cipher: &dyn BlockCipher, data: &mut [u8]| {
        for batch in data.chunks_mut(cipher.preferred_batch() * cipher.block_size()) {
            cipher.encrypt_blocks(batch);
        }
    };

    println!("16 MiB in place, one core, median of {TIMED_PASSES} passes after one warm-up");
    let results = [
        (
            "parcrypt Blowfish",
            median_gigabytes_per_second(&mut buffer, |data| ours_blowfish.encrypt_blocks(data)),
        ),
        (
            "parcrypt Blowfish, batches",
            median_gigabytes_per_second(&mut buffer, |data| in_batches(&ours_blowfish, data)),
        ),
        (
            "RustCrypto blowfish 0.10",
            median_gigabytes_per_second(&mut buffer, |data| {
                rustcrypto_encrypt(&theirs_blowfish, data)
            }),
        ),
        (
            "parcrypt RC6-128",
            median_gigabytes_per_second(&mut buffer, |data| ours_rc6.encrypt_blocks(data)),
        ),
        (
            "parcrypt RC6-128, batches",
            median_gigabytes_per_second(&mut buffer, |data| in_batches(&ours_rc6, data)),
        ),
        (
            "RustCrypto rc6 0.1 (128)",
            median_gigabytes_per_second(&mut buffer, |data| rustcrypto_encrypt(&theirs_rc6, data)),
        ),
    ];
    for (name, rate) in results {
        println!("{name:<27} {rate:>7.3} GB/s");
    }
}
