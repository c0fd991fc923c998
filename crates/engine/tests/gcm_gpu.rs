//! GCM on an OpenCL engine (PoCL in CI), where CTR and GHASH run on the same device-resident
//! slabs (`GpuDevice::process_gcm`): every length, both directions, with and without AAD,
//! gives the bytes `seq` gives, and a changed tag, ciphertext or AAD releases nothing.
//!
//! Without OpenCL the test prints SKIPPED and passes, unless `CI` is set (CI installs PoCL).

#[path = "support/gcm_batch.rs"]
mod gcm_batch;
#[path = "support/opencl.rs"]
#[allow(dead_code)] // this file needs only the OpenCL and seq engines
mod opencl;

use parcrypt_engine::{CipherSpec, Direction};

/// Around a block, around a 4 KiB GHASH segment, a MiB work-group of segments with a
/// short one and a tail, and several MiB.
fn sizes() -> impl Iterator<Item = usize> {
    gcm_batch::EDGE_LENGTHS.into_iter().chain([
        100_003,
        (1 << 20) + 3 * 4096 + 7,
        (3 << 20) + 5,
        (5 << 20) + 4096,
    ])
}

#[test]
fn gcm_on_the_device_matches_seq_and_refuses_forgeries() {
    let Some(engines) = opencl::OpenclAndSeq::new() else {
        return;
    };
    for name in ["aes-128-gcm", "aes-256-gcm", "rc6-128-gcm"] {
        let suite: CipherSpec = name.parse().unwrap();
        let key: Vec<u8> = (0..suite.algorithm.key_lengths().0 as u8)
            .map(|byte| byte.wrapping_mul(29))
            .collect();
        let (on_gpu, on_seq) = engines.keyed(suite, &key);
        for (index, size) in sizes().enumerate() {
            // Large sizes only for AES-128: the rest is the same code on PoCL.
            if size > 200_000 && name != "aes-128-gcm" {
                continue;
            }
            let iv = vec![index as u8 ^ 0x5a; 12];
            let plaintext: Vec<u8> = (0..size).map(|byte| (byte * 7 + 3) as u8).collect();
            let aad_bytes: Vec<u8> = (0..index * 5).map(|byte| byte as u8).collect();
            for aad in [None, Some(&aad_bytes[..])] {
                let what = format!("{name}, {size} bytes, AAD {:?}", aad.map(<[u8]>::len));
                let sealed = on_seq.encrypt(Some(&iv), &plaintext, aad).unwrap();
                assert!(
                    on_gpu.encrypt(Some(&iv), &plaintext, aad).unwrap() == sealed,
                    "{what}: encryption"
                );
                assert!(
                    on_gpu.decrypt(Some(&iv), &sealed, aad).unwrap() == plaintext,
                    "{what}: decryption"
                );
                // A changed tag byte, text byte (where there is text) or AAD is refused and
                // the output wiped.
                let mut forgeries = vec![(sealed.clone(), aad.map(<[u8]>::to_vec))];
                forgeries[0].0[size] ^= 0x80;
                if size > 0 {
                    let mut text = sealed.clone();
                    text[size - 1] ^= 1;
                    forgeries.push((text, aad.map(<[u8]>::to_vec)));
                }
                forgeries.push((sealed.clone(), Some(b"other".to_vec())));
                for (forged, forged_aad) in forgeries {
                    let mut output =
                        vec![0xAAu8; on_gpu.max_output_length(Direction::Decrypt, forged.len())];
                    assert!(
                        on_gpu
                            .decrypt_into(Some(&iv), &forged, &mut output, forged_aad.as_deref())
                            .is_err(),
                        "{what}: forgery accepted"
                    );
                    assert!(output.iter().all(|&byte| byte == 0), "{what}: wiped");
                }
            }
        }
    }
}
