//! One harness of `parcrypt-lab --peers` (protocol: peers/README.md), for two libraries:
//!
//! ```text
//! parcrypt-peer-rust aws-lc-rs|rustcrypto CIPHER DIRECTION BYTES THREADS RUNS MIN_SECONDS
//! ```

use std::sync::{Arc, Barrier};
use std::time::Instant;

use aes_gcm::aead::inout::InOutBuf;
use aes_gcm::aead::{AeadInOut, KeyInit};
use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, AES_256_GCM};
use aws_lc_rs::cipher::{
    DecryptingKey, DecryptionContext, EncryptingKey, EncryptionContext, UnboundCipherKey, AES_128,
    AES_256,
};
use aws_lc_rs::iv::FixedLength;
use ctr::cipher::{InnerIvInit, StreamCipher};

const TAG: usize = 16;

#[derive(Clone, Copy, PartialEq)]
enum Library {
    AwsLc,
    RustCrypto,
}

#[derive(Clone, Copy)]
struct Job {
    gcm: bool,
    key_bytes: usize,
}

/// A library's keyed object for one cipher: built once, then shared by reference (each
/// thread clones what the library needs per thread before timing).
#[derive(Clone)]
enum Keyed {
    AwsGcm(Arc<LessSafeKey>),
    AwsCtr(Arc<EncryptingKey>, Arc<DecryptingKey>),
    RcGcm128(Box<aes_gcm::Aes128Gcm>),
    RcGcm256(Box<aes_gcm::Aes256Gcm>),
    RcCtr128(Box<aes::Aes128>),
    RcCtr256(Box<aes::Aes256>),
}

fn fail(message: &str) -> ! {
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("error: {message}\n").as_bytes(),
    );
    std::process::exit(1);
}

fn refused<E, T>(_: E) -> T {
    fail("the library refused the key")
}

fn keyed(library: Library, job: &Job, key: &[u8]) -> Keyed {
    match (library, job.gcm, job.key_bytes) {
        (Library::AwsLc, true, n) => {
            let algorithm = if n == 16 { &AES_128_GCM } else { &AES_256_GCM };
            Keyed::AwsGcm(Arc::new(LessSafeKey::new(
                UnboundKey::new(algorithm, key).unwrap_or_else(refused),
            )))
        }
        (Library::AwsLc, false, n) => {
            let algorithm = if n == 16 { &AES_128 } else { &AES_256 };
            let unbound = || UnboundCipherKey::new(algorithm, key).unwrap_or_else(refused);
            Keyed::AwsCtr(
                Arc::new(EncryptingKey::ctr(unbound()).unwrap_or_else(refused)),
                Arc::new(DecryptingKey::ctr(unbound()).unwrap_or_else(refused)),
            )
        }
        (Library::RustCrypto, true, 16) => Keyed::RcGcm128(Box::new(
            aes_gcm::Aes128Gcm::new_from_slice(key).unwrap_or_else(refused),
        )),
        (Library::RustCrypto, true, _) => Keyed::RcGcm256(Box::new(
            aes_gcm::Aes256Gcm::new_from_slice(key).unwrap_or_else(refused),
        )),
        (Library::RustCrypto, false, 16) => Keyed::RcCtr128(Box::new(
            aes::Aes128::new_from_slice(key).unwrap_or_else(refused),
        )),
        (Library::RustCrypto, false, _) => Keyed::RcCtr256(Box::new(
            aes::Aes256::new_from_slice(key).unwrap_or_else(refused),
        )),
    }
}

/// One message: `input` (plaintext, or ciphertext then tag for GCM decryption) into
/// `output` under `iv` (12 bytes for GCM, 16 for CTR). Returns false when a GCM tag does
/// not verify.
fn message(keyed: &Keyed, encrypt: bool, iv: &[u8], input: &[u8], output: &mut [u8]) -> bool {
    let n = output.len() - if keyed_is_gcm(keyed) { TAG } else { 0 };
    match keyed {
        Keyed::AwsGcm(key) => {
            let nonce = Nonce::try_assume_unique_for_key(iv).unwrap_or_else(|_| fail("nonce"));
            if encrypt {
                // aws-lc-rs seals in place only: the output buffer is the message.
                let (body, tag) = output.split_at_mut(n);
                match key.seal_in_place_separate_tag(nonce, Aad::empty(), body) {
                    Ok(sealed) => tag.copy_from_slice(sealed.as_ref()),
                    Err(_) => return false,
                }
                true
            } else {
                key.open_separate_gather(
                    nonce,
                    Aad::empty(),
                    &input[..n],
                    &input[n..],
                    &mut output[..n],
                )
                .is_ok()
            }
        }
        Keyed::AwsCtr(encrypting, decrypting) => {
            // In place on the output buffer: the only form aws-lc-rs's cipher API has.
            let iv: [u8; 16] = iv.try_into().unwrap_or_else(|_| fail("iv"));
            if encrypt {
                encrypting
                    .less_safe_encrypt(output, EncryptionContext::Iv128(FixedLength::from(iv)))
                    .is_ok()
            } else {
                decrypting
                    .decrypt(output, DecryptionContext::Iv128(FixedLength::from(iv)))
                    .is_ok()
            }
        }
        Keyed::RcGcm128(cipher) => rc_gcm(cipher.as_ref(), encrypt, iv, input, output, n),
        Keyed::RcGcm256(cipher) => rc_gcm(cipher.as_ref(), encrypt, iv, input, output, n),
        Keyed::RcCtr128(aes) => rc_ctr(aes.as_ref(), iv, input, output, n),
        Keyed::RcCtr256(aes) => rc_ctr(aes.as_ref(), iv, input, output, n),
    }
}

fn keyed_is_gcm(keyed: &Keyed) -> bool {
    matches!(
        keyed,
        Keyed::AwsGcm(_) | Keyed::RcGcm128(_) | Keyed::RcGcm256(_)
    )
}

fn rc_gcm<C>(
    cipher: &C,
    encrypt: bool,
    iv: &[u8],
    input: &[u8],
    output: &mut [u8],
    n: usize,
) -> bool
where
    C: AeadInOut<TagSize = aes_gcm::aead::consts::U16>,
    C: aes_gcm::aead::AeadCore<NonceSize = aes_gcm::aead::consts::U12>,
{
    let nonce = aes_gcm::Nonce::try_from(iv).unwrap_or_else(|_| fail("nonce"));
    let (body, tag_out) = output.split_at_mut(n);
    let Ok(buffer) = InOutBuf::new(&input[..n], body) else {
        return false;
    };
    if encrypt {
        match cipher.encrypt_inout_detached(&nonce, &[], buffer) {
            Ok(tag) => {
                tag_out.copy_from_slice(&tag);
                true
            }
            Err(_) => false,
        }
    } else {
        let tag = aes_gcm::Tag::try_from(&input[n..]).unwrap_or_else(|_| fail("tag"));
        cipher
            .decrypt_inout_detached(&nonce, &[], buffer, &tag)
            .is_ok()
    }
}

/// RustCrypto's CTR (a 128-bit big-endian counter) over the block cipher `aes`: `n` bytes
/// of `input` into `output`, the same both ways.
fn rc_ctr<C>(aes: &C, iv: &[u8], input: &[u8], output: &mut [u8], n: usize) -> bool
where
    C: ctr::cipher::BlockCipherEncrypt<BlockSize = ctr::cipher::consts::U16> + Clone,
{
    let core = ctr::CtrCore::<C, ctr::flavors::Ctr128BE>::inner_iv_slice_init(aes.clone(), iv)
        .unwrap_or_else(|_| fail("iv"));
    let mut ctr = ctr::Ctr128BE::<C>::from_core(core);
    ctr.apply_keystream_b2b(&input[..n], &mut output[..n]);
    true
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap_or_else(|_| fail("hex")))
        .collect()
}

/// The known answer for the cipher: NIST GCM test cases 2 and 14 (zero key, zero IV, one
/// zero block), SP 800-38A F.5.1 and F.5.5 (CTR, first block).
fn known_answer(library: Library, job: &Job) -> bool {
    let (key, iv, plain, expected) = match (job.gcm, job.key_bytes) {
        (true, 16) => (
            "00".repeat(16),
            "00".repeat(12),
            "00".repeat(16),
            "0388dace60b6a392f328c2b971b2fe78ab6e47d42cec13bdf53a67b21257bddf".to_string(),
        ),
        (true, _) => (
            "00".repeat(32),
            "00".repeat(12),
            "00".repeat(16),
            "cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919".to_string(),
        ),
        (false, 16) => (
            "2b7e151628aed2a6abf7158809cf4f3c".into(),
            "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff".into(),
            "6bc1bee22e409f96e93d7e117393172a".into(),
            "874d6191b620e3261bef6864990db6ce".into(),
        ),
        (false, _) => (
            "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4".into(),
            "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff".into(),
            "6bc1bee22e409f96e93d7e117393172a".into(),
            "601ec313775789a5b7a7f504bbf3d228".into(),
        ),
    };
    let (key, iv, plain, expected) = (unhex(&key), unhex(&iv), unhex(&plain), unhex(&expected));
    let keyed = keyed(library, job, &key);
    let mut out = vec![0u8; expected.len()];
    if matches!(keyed, Keyed::AwsGcm(_) | Keyed::AwsCtr(..)) {
        out[..plain.len()].copy_from_slice(&plain);
    }
    if !message(&keyed, true, &iv, &plain, &mut out) || out != expected {
        return false;
    }
    // And back: decryption (with the tag checked for GCM) gives the plaintext.
    let mut back = vec![0u8; plain.len() + if job.gcm { TAG } else { 0 }];
    if matches!(keyed, Keyed::AwsCtr(..)) {
        back.copy_from_slice(&expected);
    }
    message(&keyed, false, &iv, &expected, &mut back) && back[..plain.len()] == plain[..]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 7 {
        fail("usage: parcrypt-peer-rust aws-lc-rs|rustcrypto CIPHER DIRECTION BYTES THREADS RUNS MIN_SECONDS");
    }
    let library = match args[0].as_str() {
        "aws-lc-rs" => Library::AwsLc,
        "rustcrypto" => Library::RustCrypto,
        other => fail(&format!("unknown library {other}")),
    };
    let (gcm, key_bytes) = match args[1].as_str() {
        "aes-128-gcm" => (true, 16),
        "aes-256-gcm" => (true, 32),
        "aes-128-ctr" => (false, 16),
        "aes-256-ctr" => (false, 32),
        other => fail(&format!("unknown cipher {other}")),
    };
    let encrypt = match args[2].as_str() {
        "encrypt" => true,
        "decrypt" => false,
        other => fail(&format!("unknown direction {other}")),
    };
    let number = |text: &str| {
        text.parse::<usize>()
            .unwrap_or_else(|_| fail(&format!("not a number: {text}")))
    };
    let (bytes, threads, runs) = (
        number(&args[3]),
        number(&args[4]).max(1),
        number(&args[5]).max(1),
    );
    let min_seconds: f64 = args[6].parse().unwrap_or_else(|_| fail("MIN_SECONDS"));
    let job = Job { gcm, key_bytes };
    if !known_answer(library, &job) {
        let _ =
            std::io::Write::write_all(&mut std::io::stderr(), b"error: known-answer test failed\n");
        std::process::exit(2);
    }

    let key: Vec<u8> = (0..key_bytes as u8).collect();
    let keyed = keyed(library, &job, &key);
    let tag = if gcm { TAG } else { 0 };
    let fixed_iv = vec![0x5au8; if gcm { 12 } else { 16 }];
    // Each thread's buffers, written before any timing: the input (plaintext, or a valid
    // ciphertext and tag made now for GCM decryption) and the output.
    let mut buffers: Vec<(Vec<u8>, Vec<u8>)> = (0..threads)
        .map(|_| {
            let plain: Vec<u8> = (0..bytes).map(|i| (i as u8).wrapping_mul(31)).collect();
            let mut input = plain.clone();
            input.resize(bytes + tag, 0);
            if gcm && !encrypt {
                let mut sealed = plain.clone();
                sealed.resize(bytes + tag, 0);
                if !message(&keyed, true, &fixed_iv, &plain, &mut sealed) {
                    fail("could not make the ciphertext");
                }
                input = sealed;
            }
            // 4 KiB of room after each buffer (as every harness leaves): adjacent threads'
            // buffers could share a cache line or prefetched pair otherwise.
            (spaced(input), spaced(vec![0x11u8; bytes + tag]))
        })
        .collect();

    // One run: every thread does `count` messages, all starting together.
    let run = |buffers: &mut Vec<(Vec<u8>, Vec<u8>)>, count: u64| -> f64 {
        let barrier = Barrier::new(threads + 1);
        std::thread::scope(|scope| {
            let handles: Vec<_> = buffers
                .iter_mut()
                .enumerate()
                .map(|(thread, (input, output))| {
                    let (keyed, barrier, fixed_iv) = (keyed.clone(), &barrier, &fixed_iv);
                    scope.spawn(move || {
                        let mut iv = fixed_iv.clone();
                        barrier.wait();
                        for index in 0..count {
                            if encrypt || !gcm {
                                // A fresh IV per message: the thread, then the message number.
                                iv[0] = thread as u8;
                                iv[4..12].copy_from_slice(&index.to_be_bytes());
                            }
                            if !message(&keyed, encrypt, &iv, input, output) {
                                fail("a tag did not verify");
                            }
                        }
                        std::hint::black_box(&output);
                    })
                })
                .collect();
            barrier.wait();
            let start = Instant::now();
            for handle in handles {
                handle.join().unwrap_or_else(|_| fail("a thread panicked"));
            }
            start.elapsed().as_secs_f64()
        })
    };
    // Warm-up, which also finds how many messages last the minimum time.
    let mut count = 1u64;
    while run(&mut buffers, count) < min_seconds {
        count *= 2;
    }
    let seconds: Vec<String> = (0..runs)
        .map(|_| format!("{:.9}", run(&mut buffers, count)))
        .collect();
    let name = if library == Library::AwsLc {
        "aws-lc-rs"
    } else {
        "rustcrypto"
    };
    let version = if library == Library::AwsLc {
        "aws-lc-rs 1.19"
    } else {
        "aes-gcm 0.11, ctr 0.10, aes 0.9"
    };
    println!(
        "{{\"peer\":\"{name}\",\"library\":\"{version}\",\"cipher\":\"{}\",\"direction\":\"{}\",\"bytes\":{bytes},\"threads\":{threads},\"messages\":{count},\"seconds\":[{}]}}",
        args[1], args[2], seconds.join(",")
    );
}

/// `bytes` moved into an allocation with 4 KiB of unused room after it.
fn spaced(bytes: Vec<u8>) -> Vec<u8> {
    let mut spaced = Vec::with_capacity(bytes.len() + 4096);
    spaced.extend_from_slice(&bytes);
    spaced
}
