//! Per-message cost of small messages under one key: parcrypt's per-call set-up (the job
//! API, which builds the key schedule and GCM's powers of H for every message, as `Cipher`
//! did before `KeyedCipher`), a `KeyedCipher` (set up once), and OpenSSL's EVP on a reused
//! context, interleaved in one run.
//!
//! `cargo run --release -p parcrypt-engine --example per_message -- [backend] [rounds]`
//! (backend: seq, threads, pool or auto, default auto with every core; rounds default 9).
//! Each figure is the median over the rounds of one batch's nanoseconds per message; in each
//! round every contender runs one batch, in an order that rotates from round to round. The
//! last columns give the fastest round of the keyed cipher and of `evp iv` and their ratio:
//! on a busy machine the least disturbed figures. `PER_MESSAGE_ONLY=1,3` runs only the
//! contenders named by their column index (from 0), to see whether they disturb each other.
//! Encryption takes a new IV per message; decryption opens one prepared message again and
//! again (its tag must match).
//!
//! OpenSSL runs twice: `evp iv` sets the key once and gives `EVP_EncryptInit_ex` only the
//! IV per message (the fair counterpart of a keyed object); `evp key+iv` gives it the key
//! too, as code that keeps one context but not the key schedule does.
#![allow(clippy::disallowed_macros)]

use std::hint::black_box;
use std::time::Instant;

use openssl::cipher::{Cipher as EvpCipher, CipherRef};
use openssl::cipher_ctx::CipherCtx;
use parcrypt_engine::crypter::{process_buffer, JobSpec};
use parcrypt_engine::{Backend, CipherSpec, Direction, Engine, Implementation, KeyedCipher, Mode};

const SIZES: [usize; 3] = [16, 1024, 16 * 1024];
const SUITES: [&str; 3] = ["aes-128-gcm", "aes-256-gcm", "aes-128-ctr"];
const CONTENDERS: [&str; 5] = [
    "before (per call)",
    "keyed into",
    "keyed vec",
    "evp iv",
    "evp key+iv",
];

fn evp_cipher(suite: &str) -> &'static CipherRef {
    match suite {
        "aes-128-gcm" => EvpCipher::aes_128_gcm(),
        "aes-256-gcm" => EvpCipher::aes_256_gcm(),
        _ => EvpCipher::aes_128_ctr(),
    }
}

/// One message through OpenSSL on a reused context: encryption writes ciphertext and tag
/// into `output`; decryption reads the tag from the end of `input`.
fn evp_message(
    context: &mut CipherCtx,
    direction: Direction,
    key: Option<&[u8]>,
    iv: &[u8],
    input: &[u8],
    output: &mut [u8],
    gcm: bool,
) -> usize {
    match direction {
        Direction::Encrypt => {
            context.encrypt_init(None, key, Some(iv)).unwrap();
            let mut written = context.cipher_update(input, Some(output)).unwrap();
            written += context.cipher_final(&mut output[written..]).unwrap();
            if gcm {
                context
                    .tag(&mut output[written..written + 16])
                    .expect("tag");
                written += 16;
            }
            written
        }
        Direction::Decrypt => {
            context.decrypt_init(None, key, Some(iv)).unwrap();
            let (text, tag) = input.split_at(input.len() - if gcm { 16 } else { 0 });
            let mut written = context.cipher_update(text, Some(output)).unwrap();
            if gcm {
                context.set_tag(tag).unwrap();
            }
            written += context
                .cipher_final(&mut output[written..])
                .expect("the tag matches");
            written
        }
    }
}

/// The job API's description of one message: what `Cipher` set up afresh on every call
/// before it kept a `KeyedCipher`.
fn job<'a>(suite: CipherSpec, direction: Direction, key: &'a [u8], iv: &'a [u8]) -> JobSpec<'a> {
    JobSpec {
        spec: suite,
        direction,
        key,
        iv: Some(iv),
        allow_short_gcm_iv: false,
        aad: None,
        padding: true,
        implementation: Implementation::Fast,
    }
}

/// `loop SUITE BYTES MESSAGES`: only the keyed cipher's encryption, for a profiler
/// (`perf record`, `valgrind --tool=callgrind`) to see where a message's time goes.
fn keyed_loop(arguments: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    let [suite, size, messages] = &arguments[..] else {
        return Err("usage: per_message loop SUITE BYTES MESSAGES".into());
    };
    let suite: CipherSpec = suite.parse()?;
    let (size, messages): (usize, u64) = (size.parse()?, messages.parse()?);
    let key = vec![1u8; suite.algorithm.key_lengths().0];
    let keyed = KeyedCipher::new(Engine::new(Backend::Auto, None)?, suite, &key)?;
    let plaintext = vec![0u8; size];
    let mut output = vec![0u8; size + 32];
    let mut iv = vec![0u8; if suite.mode == Mode::Gcm { 12 } else { 16 }];
    let start = Instant::now();
    for message in 0..messages {
        iv[..8].copy_from_slice(&message.to_le_bytes());
        black_box(keyed.encrypt_into(Some(&iv), black_box(&plaintext), &mut output, None)?);
    }
    let nanoseconds = start.elapsed().as_nanos() as f64 / messages.max(1) as f64;
    println!("{nanoseconds:.0} ns per message");
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut arguments = std::env::args().skip(1);
    if std::env::args().nth(1).as_deref() == Some("loop") {
        return keyed_loop(arguments.skip(1).collect());
    }
    let backend: Backend = arguments.next().as_deref().unwrap_or("auto").parse()?;
    let rounds: usize = arguments.next().map_or(Ok(9), |text| text.parse())?;
    let engine = std::sync::Arc::new(Engine::new(backend, None)?);
    println!(
        "ns per message, median of {rounds} interleaved rounds; parcrypt on {backend} x{}",
        engine.threads()
    );
    println!(
        "{:<12} {:<4} {:>6} {:>18} {:>11} {:>10} {:>9} {:>11} {:>14} {:>10} {:>11} {:>8}",
        "suite",
        "dir",
        "bytes",
        CONTENDERS[0],
        CONTENDERS[1],
        CONTENDERS[2],
        CONTENDERS[3],
        CONTENDERS[4],
        "keyed/evp iv",
        "min keyed",
        "min evp iv",
        "(ratio)"
    );
    for name in SUITES {
        let suite: CipherSpec = name.parse()?;
        let gcm = suite.mode == Mode::Gcm;
        let key: Vec<u8> = (0..suite.algorithm.key_lengths().0 as u8).collect();
        let iv_length = if gcm { 12 } else { 16 };
        let keyed = KeyedCipher::new(std::sync::Arc::clone(&engine), suite, &key)?;
        let mut context = CipherCtx::new()?;
        for direction in [Direction::Encrypt, Direction::Decrypt] {
            match direction {
                Direction::Encrypt => {
                    context.encrypt_init(Some(evp_cipher(name)), Some(&key), None)?
                }
                Direction::Decrypt => {
                    context.decrypt_init(Some(evp_cipher(name)), Some(&key), None)?
                }
            }
            for size in SIZES {
                let plaintext: Vec<u8> = (0..size).map(|index| (index * 31 + 7) as u8).collect();
                let fixed_iv = vec![9u8; iv_length];
                let sealed = keyed.encrypt(Some(&fixed_iv), &plaintext, None)?;
                let input = match direction {
                    Direction::Encrypt => &plaintext,
                    Direction::Decrypt => &sealed,
                };
                let expected = match direction {
                    Direction::Encrypt => &sealed,
                    Direction::Decrypt => &plaintext,
                };
                let mut output = vec![0u8; size + 32];
                // Every contender must give the same bytes before any is timed.
                let written = evp_message(
                    &mut context,
                    direction,
                    None,
                    &fixed_iv,
                    input,
                    &mut output,
                    gcm,
                );
                assert_eq!(&output[..written], &expected[..], "OpenSSL disagrees");
                assert_eq!(
                    &process_buffer(
                        &engine,
                        &job(suite, direction, &key, &fixed_iv),
                        input.clone()
                    )?,
                    expected
                );

                let batch = (4_000_000 / (size + 256)).clamp(200, 20_000);
                let mut times = vec![Vec::with_capacity(rounds); CONTENDERS.len()];
                for round in 0..rounds {
                    for turn in 0..CONTENDERS.len() {
                        let contender = (turn + round) % CONTENDERS.len();
                        if std::env::var("PER_MESSAGE_ONLY")
                            .is_ok_and(|only| !only.split(",").any(|c| c == contender.to_string()))
                        {
                            times[contender].push(1.0);
                            continue;
                        }
                        let mut iv = fixed_iv.clone();
                        let start = Instant::now();
                        for message in 0..batch {
                            if direction == Direction::Encrypt {
                                iv[..8].copy_from_slice(&(message as u64).to_le_bytes());
                            }
                            let input = black_box(&input[..]);
                            match contender {
                                0 => {
                                    black_box(process_buffer(
                                        &engine,
                                        &job(suite, direction, &key, &iv),
                                        input.to_vec(),
                                    )?);
                                }
                                1 => {
                                    let written = match direction {
                                        Direction::Encrypt => keyed.encrypt_into(
                                            Some(&iv),
                                            input,
                                            &mut output,
                                            None,
                                        )?,
                                        Direction::Decrypt => keyed.decrypt_into(
                                            Some(&iv),
                                            input,
                                            &mut output,
                                            None,
                                        )?,
                                    };
                                    black_box(&output[..written]);
                                }
                                2 => {
                                    black_box(match direction {
                                        Direction::Encrypt => {
                                            keyed.encrypt(Some(&iv), input, None)?
                                        }
                                        Direction::Decrypt => {
                                            keyed.decrypt(Some(&iv), input, None)?
                                        }
                                    });
                                }
                                3 | 4 => {
                                    let key = (contender == 4).then_some(&key[..]);
                                    let written = evp_message(
                                        &mut context,
                                        direction,
                                        key,
                                        &iv,
                                        input,
                                        &mut output,
                                        gcm,
                                    );
                                    black_box(&output[..written]);
                                }
                                _ => unreachable!(),
                            }
                        }
                        let nanoseconds = start.elapsed().as_nanos() as f64 / batch as f64;
                        times[contender].push(nanoseconds);
                    }
                }
                let medians: Vec<f64> = times.iter_mut().map(|t| median(t)).collect();
                // The fastest round of each: the least disturbed by other work on the machine.
                let minimums: Vec<f64> = times.iter().map(|t| t[0]).collect();
                println!(
                    "{:<12} {:<4} {:>6} {:>18.0} {:>11.0} {:>10.0} {:>9.0} {:>11.0} {:>13.2}x {:>10.0} {:>11.0} {:>7.2}x",
                    name,
                    match direction {
                        Direction::Encrypt => "enc",
                        Direction::Decrypt => "dec",
                    },
                    size,
                    medians[0],
                    medians[1],
                    medians[2],
                    medians[3],
                    medians[4],
                    medians[1] / medians[3],
                    minimums[1],
                    minimums[3],
                    minimums[1] / minimums[3],
                );
            }
        }
    }
    Ok(())
}
