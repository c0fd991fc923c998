#![allow(clippy::disallowed_macros)]
use parcrypt_engine::{Backend, CipherSpec, Engine, KeyedCipher};
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let suite: CipherSpec = args
        .get(1)
        .map(|s| s.as_str())
        .unwrap_or("aes-256-gcm")
        .parse()
        .unwrap();
    let bytes: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(1024);
    let dec = args.get(3).map(|s| s == "dec").unwrap_or(false);
    let secs: f64 = args.get(4).map(|s| s.parse().unwrap()).unwrap_or(3.0);
    let engine = Engine::builder().backend(Backend::Seq).build().unwrap();
    let key: Vec<u8> = (0..suite.algorithm.key_lengths().1 as u8).collect();
    let cipher = KeyedCipher::new(engine, suite, &key).unwrap();
    let mut buf = vec![7u8; bytes + 16];
    let mut iv = [0x5au8; 12];
    let sealed = {
        let mut b = vec![7u8; bytes + 16];
        cipher
            .encrypt_in_place(Some(&iv), &mut b, bytes, None)
            .unwrap();
        b
    };
    let mut out = vec![0u8; bytes + 16];
    let start = Instant::now();
    let mut n = 0u64;
    let mut best = f64::MAX;
    while start.elapsed().as_secs_f64() < secs {
        let t = Instant::now();
        for i in 0..10000u64 {
            if dec {
                cipher
                    .decrypt_into(Some(&iv), &sealed, &mut out, None)
                    .unwrap();
            } else {
                iv[4..12].copy_from_slice(&i.to_be_bytes());
                cipher
                    .encrypt_in_place(Some(&iv), &mut buf, bytes, None)
                    .unwrap();
            }
        }
        let ns = t.elapsed().as_nanos() as f64 / 10000.0;
        best = best.min(ns);
        n += 1;
    }
    std::hint::black_box(&buf);
    println!(
        "{suite} {bytes} {} best {best:.1} ns/msg ({n} rounds)",
        if dec { "dec" } else { "enc" }
    );
}
