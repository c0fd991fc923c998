//! Known-answer tests every device runs on its own kernels before it is used.
//!
//! A driver can miscompile a kernel, and a stale cached binary can load fine and compute
//! nonsense; either would silently corrupt data. So each kernel runs a published vector on
//! the device when it is opened. CTR and CBC are checked through the same vector: the CTR
//! keystream of counter P is E(P), and CBC decryption of (C, C) after a zero block is
//! (P, P xor C), which also exercises the read of the previous ciphertext block.

use parcrypt_ciphers::Algorithm;
use parcrypt_modes::ctr::CounterRule;

use crate::kernel_source::{kernel_name, CipherFamily};
use crate::{GpuError, GpuOperation, KeyMaterial, ProgramOrigin};

struct KnownAnswer {
    source: &'static str,
    algorithm: Algorithm,
    key: &'static str,
    plaintext: &'static str,
    ciphertext: &'static str,
}

/// One vector per key size for AES (the round count is a kernel argument, so each count
/// gets checked), one for Blowfish and one for RC6.
const KNOWN_ANSWERS: [KnownAnswer; 5] = [
    KnownAnswer {
        source: "FIPS-197 C.1 (AES-128)",
        algorithm: Algorithm::Aes128,
        key: "000102030405060708090a0b0c0d0e0f",
        plaintext: "00112233445566778899aabbccddeeff",
        ciphertext: "69c4e0d86a7b0430d8cdb78070b4c55a",
    },
    KnownAnswer {
        source: "FIPS-197 C.2 (AES-192)",
        algorithm: Algorithm::Aes192,
        key: "000102030405060708090a0b0c0d0e0f1011121314151617",
        plaintext: "00112233445566778899aabbccddeeff",
        ciphertext: "dda97ca4864cdfe06eaf70a0ec0d7191",
    },
    KnownAnswer {
        source: "FIPS-197 C.3 (AES-256)",
        algorithm: Algorithm::Aes256,
        key: "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        plaintext: "00112233445566778899aabbccddeeff",
        ciphertext: "8ea2b7ca516745bfeafc49904b496089",
    },
    KnownAnswer {
        source: "Schneier/Young Blowfish ECB (key fedcba9876543210)",
        algorithm: Algorithm::Blowfish,
        key: "fedcba9876543210",
        plaintext: "0123456789abcdef",
        ciphertext: "0aceab0fc6a0a28d",
    },
    KnownAnswer {
        source: "RC6 paper, zero key and block (RC6-32/20/16)",
        algorithm: Algorithm::Rc6_128,
        key: "00000000000000000000000000000000",
        plaintext: "00000000000000000000000000000000",
        ciphertext: "8fc3a53656b1f778c129df4e9848a41e",
    },
];

fn bytes(text: &str) -> Vec<u8> {
    hex::decode(text).expect("self-test vectors are valid hex")
}

/// Runs every kernel on its vector through `process` (the device's own entry point).
pub(crate) fn run(
    device: &str,
    mut process: impl FnMut(&KeyMaterial, &GpuOperation, &mut [u8]) -> Result<(), GpuError>,
) -> Result<(), GpuError> {
    for vector in &KNOWN_ANSWERS {
        let key = KeyMaterial::new(vector.algorithm, &bytes(vector.key))?;
        let plaintext = bytes(vector.plaintext);
        let ciphertext = bytes(vector.ciphertext);
        let block_size = plaintext.len();
        let cbc_second: Vec<u8> = plaintext
            .iter()
            .zip(&ciphertext)
            .map(|(p, c)| p ^ c)
            .collect();

        let checks = [
            (
                GpuOperation::EcbEncrypt,
                plaintext.repeat(2),
                ciphertext.repeat(2),
            ),
            (
                GpuOperation::EcbDecrypt,
                ciphertext.repeat(2),
                plaintext.repeat(2),
            ),
            (
                GpuOperation::Ctr {
                    counter: plaintext.clone(),
                    rule: CounterRule::Full,
                },
                vec![0; block_size],
                ciphertext.clone(),
            ),
            (
                GpuOperation::CbcDecrypt {
                    previous: vec![0; block_size],
                },
                ciphertext.repeat(2),
                [plaintext.clone(), cbc_second].concat(),
            ),
        ];
        for (operation, input, expected) in checks {
            let mut data = input;
            process(&key, &operation, &mut data)?;
            if data != expected {
                return Err(GpuError::SelfTest {
                    device: device.to_string(),
                    kernel: kernel_name(
                        CipherFamily::of(vector.algorithm),
                        operation.kernel_operation(),
                    ),
                    vector: vector.source,
                    expected: hex::encode(&expected),
                    got: hex::encode(&data),
                });
            }
        }
    }
    Ok(())
}

/// Self-tests a freshly opened device with `self_test` and hands it over if it passes. A
/// cached program that loads but computes wrong results (a stale or damaged file the driver
/// accepted) gets one more chance: the device is dropped, `rebuild` opens it again from
/// source (storing the new binary), and that one must pass.
pub(crate) fn accept_or_rebuild<D>(
    opened: D,
    origin: ProgramOrigin,
    self_test: impl Fn(&D) -> Result<(), GpuError>,
    rebuild: impl FnOnce() -> Result<D, GpuError>,
) -> Result<D, GpuError> {
    match self_test(&opened) {
        Ok(()) => Ok(opened),
        Err(GpuError::SelfTest { .. }) if origin == ProgramOrigin::Cache => {
            drop(opened);
            let rebuilt = rebuild()?;
            self_test(&rebuilt)?;
            Ok(rebuilt)
        }
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parcrypt_ciphers::{new_cipher, Implementation};
    use parcrypt_modes::{cbc, ctr, ecb, Direction};

    /// The self-test itself, run against the CPU implementation: it must pass there, and it
    /// must notice a wrong answer.
    fn on_cpu(key_bytes: &[u8], algorithm: Algorithm, operation: &GpuOperation, data: &mut [u8]) {
        let cipher = new_cipher(algorithm, Implementation::Fast, key_bytes).unwrap();
        match operation {
            GpuOperation::EcbEncrypt => ecb::apply(cipher.as_ref(), Direction::Encrypt, data),
            GpuOperation::EcbDecrypt => ecb::apply(cipher.as_ref(), Direction::Decrypt, data),
            GpuOperation::Ctr { counter, rule } => {
                ctr::apply(cipher.as_ref(), ctr::Counter::new(counter, *rule), data)
            }
            GpuOperation::CbcDecrypt { previous } => cbc::decrypt(cipher.as_ref(), previous, data),
        }
    }

    #[test]
    fn vectors_pass_on_the_cpu_and_a_wrong_result_is_reported() {
        let run_on_cpu = |corrupt: bool| {
            run("cpu", |key, operation, data| {
                let vector = KNOWN_ANSWERS
                    .iter()
                    .find(|vector| vector.algorithm == key.algorithm())
                    .unwrap();
                on_cpu(&bytes(vector.key), vector.algorithm, operation, data);
                if corrupt && matches!(operation, GpuOperation::CbcDecrypt { .. }) {
                    data[0] ^= 1;
                }
                Ok(())
            })
        };
        run_on_cpu(false).unwrap();
        let error = run_on_cpu(true).unwrap_err().to_string();
        assert!(
            error.contains("aes_cbc_decrypt") && error.contains("FIPS-197 C.1"),
            "{error}"
        );
    }
}
