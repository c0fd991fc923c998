//! `KeyedCipher` on an OpenCL engine (PoCL in CI): the GPU's key material is built on the
//! first message that reaches the device and reused by the rest; every message, small or
//! large, gives the bytes `seq` gives, and a forged GCM tag releases nothing.
//!
//! Without OpenCL the test prints SKIPPED and passes, unless `CI` is set (CI installs PoCL).

#[path = "support/opencl.rs"]
#[allow(dead_code)] // this file needs only the OpenCL and seq engines
mod opencl;

use parcrypt_engine::{CipherSpec, Direction, Mode};

#[test]
fn one_key_many_messages_on_a_gpu_backend_match_seq() {
    let Some(engines) = opencl::OpenclAndSeq::new() else {
        return;
    };
    for name in ["aes-128-gcm", "aes-256-ctr", "bf-cbc", "rc6-128-gcm"] {
        let suite: CipherSpec = name.parse().unwrap();
        let key: Vec<u8> = (0..suite.algorithm.key_lengths().0 as u8).rev().collect();
        let (on_gpu, on_seq) = engines.keyed(suite, &key);
        for (index, size) in [0usize, 17, 4096, 100_003].into_iter().enumerate() {
            let iv = match suite.mode {
                Mode::Gcm => vec![index as u8; 12],
                _ => vec![index as u8; suite.algorithm.block_size()],
            };
            let plaintext: Vec<u8> = (0..size).map(|byte| (byte * 13) as u8).collect();
            let aad = (suite.mode == Mode::Gcm).then_some(&b"aad"[..]);
            let what = format!("{name}, {size} bytes");
            let sealed = on_seq.encrypt(Some(&iv), &plaintext, aad).unwrap();
            assert_eq!(
                on_gpu.encrypt(Some(&iv), &plaintext, aad).unwrap(),
                sealed,
                "{what}"
            );
            assert_eq!(
                on_gpu.decrypt(Some(&iv), &sealed, aad).unwrap(),
                plaintext,
                "{what}"
            );
            if suite.mode == Mode::Gcm && size > 0 {
                let mut forged = sealed.clone();
                forged[size / 2] ^= 4;
                let mut output =
                    vec![0xAAu8; on_gpu.max_output_length(Direction::Decrypt, forged.len())];
                assert!(on_gpu
                    .decrypt_into(Some(&iv), &forged, &mut output, aad)
                    .is_err());
                assert!(output.iter().all(|&byte| byte == 0), "{what}: wiped");
            }
        }
    }
}
