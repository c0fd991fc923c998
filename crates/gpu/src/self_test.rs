//! Known-answer tests every device runs on its own kernels before it is used.
//!
//! A driver can miscompile a kernel, and a stale cached binary can load fine and compute
//! nonsense; either would silently corrupt data. So each kernel runs a published vector on
//! the device when it is opened. CTR and CBC are checked through the same vector: the CTR
//! keystream of counter P is E(P), and CBC decryption of (C, C) after a zero block is
//! (P, P xor C), which also exercises the read of the previous ciphertext block.
//!
//! Segmented CTR is checked against the CPU: the expected keystream is computed with the
//! CPU cipher (`parcrypt-ciphers`' fast implementation, not the kernels' table twin) through
//! `parcrypt-modes` CTR, segment by segment, over segments whose counters start at the
//! published plaintext, wrap inside a segment, and end in a short segment with a partial
//! block.

use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
use parcrypt_modes::ctr::CounterRule;

use crate::kernel_source::CipherFamily;
use crate::{GpuError, GpuOperation, KeyMaterial, ProgramOrigin};

#[derive(Clone, Copy)]
struct KnownAnswer {
    source: &'static str,
    algorithm: Algorithm,
    key: &'static str,
    plaintext: &'static str,
    ciphertext: &'static str,
}

/// The known answers of the cipher registry (`parcrypt_ciphers::registry::CIPHERS`): today
/// one vector per key size for AES (the round count is a kernel argument, so each count
/// gets checked), one for Blowfish and one for RC6.
fn known_answers() -> Vec<KnownAnswer> {
    parcrypt_ciphers::registry::variants()
        .filter_map(|variant| {
            variant.known_answer.as_ref().map(|vector| KnownAnswer {
                source: vector.source,
                algorithm: variant.algorithm,
                key: vector.key,
                plaintext: vector.plaintext,
                ciphertext: vector.ciphertext,
            })
        })
        .collect()
}

fn bytes(text: &str) -> Vec<u8> {
    hex::decode(text).expect("self-test vectors are valid hex")
}

/// Runs every kernel on its vector through `process` (the device's own entry point).
pub(crate) fn run(
    device: &str,
    mut process: impl FnMut(&KeyMaterial, &GpuOperation, &mut [u8]) -> Result<(), GpuError>,
) -> Result<(), GpuError> {
    for vector in &known_answers() {
        let key = KeyMaterial::new(vector.algorithm, &bytes(vector.key))?;
        let plaintext = bytes(vector.plaintext);
        let ciphertext = bytes(vector.ciphertext);
        let block_size = plaintext.len();
        let cbc_second: Vec<u8> = plaintext
            .iter()
            .zip(&ciphertext)
            .map(|(p, c)| p ^ c)
            .collect();

        let mut checks = vec![
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
        for rule in [CounterRule::Low32, CounterRule::Full] {
            checks.push(segments_check(vector, &plaintext, rule)?);
        }
        for (operation, input, expected) in checks {
            let mut data = input;
            process(&key, &operation, &mut data)?;
            if data != expected {
                return Err(GpuError::SelfTest {
                    device: device.to_string(),
                    kernel: operation.kernel_name(CipherFamily::of(vector.algorithm)),
                    vector: vector.source,
                    expected: hex::encode(&expected),
                    got: hex::encode(&data),
                });
            }
        }
    }
    Ok(())
}

/// Blocks per segment in the segmented CTR check.
const SEGMENT_BLOCKS: usize = 3;

/// A segmented CTR check for `vector`'s cipher: keystream (zero input) over three segments
/// of three blocks, the last one a block and 5 bytes. Segment 0 starts at the vector's
/// plaintext, so its first block is the published ciphertext; segment 1 starts two blocks
/// before the counter's lowest 32 bits wrap (under Low32 the wrap stays in those bits,
/// under Full it carries); segment 2 starts one before a full-width wrap. The expected
/// bytes come from the CPU.
fn segments_check(
    vector: &KnownAnswer,
    plaintext: &[u8],
    rule: CounterRule,
) -> Result<(GpuOperation, Vec<u8>, Vec<u8>), GpuError> {
    let block_size = plaintext.len();
    let segment_bytes = SEGMENT_BLOCKS * block_size;
    let mut near_low_wrap = vec![0x5a; block_size];
    near_low_wrap[block_size - 4..].copy_from_slice(&[0xff, 0xff, 0xff, 0xfe]);
    let mut near_full_wrap = vec![0xff; block_size];
    near_full_wrap[block_size - 1] = 0xfe;
    let counters = [plaintext.to_vec(), near_low_wrap, near_full_wrap].concat();
    let length = 2 * segment_bytes + block_size + 5;

    let cipher = new_cipher(vector.algorithm, Implementation::Fast, &bytes(vector.key))?;
    let operation = GpuOperation::CtrSegments {
        counters,
        segment_bytes,
        rule,
    };
    let mut expected = vec![0u8; length];
    operation.apply_on_cpu(cipher.as_ref(), &mut expected);
    Ok((operation, vec![0; length], expected))
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

    /// The self-test itself, run against the CPU implementation: it must pass there, and it
    /// must notice a wrong answer.
    fn on_cpu(key_bytes: &[u8], algorithm: Algorithm, operation: &GpuOperation, data: &mut [u8]) {
        let cipher = new_cipher(algorithm, Implementation::Fast, key_bytes).unwrap();
        operation.apply_on_cpu(cipher.as_ref(), data);
    }

    #[test]
    fn vectors_pass_on_the_cpu_and_a_wrong_result_is_reported() {
        let run_on_cpu = |corrupt: bool| {
            run("cpu", |key, operation, data| {
                let vector = known_answers()
                    .into_iter()
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

    #[test]
    fn segment_checks_are_valid_start_at_the_vector_and_name_their_kernel() {
        for vector in &known_answers() {
            let plaintext = bytes(vector.plaintext);
            for rule in [CounterRule::Low32, CounterRule::Full] {
                let (operation, input, expected) =
                    segments_check(vector, &plaintext, rule).unwrap();
                operation
                    .validate(vector.algorithm, input.len())
                    .unwrap_or_else(|error| panic!("{}: {error}", vector.source));
                // Segment 0 starts at the plaintext: its keystream opens with the
                // published ciphertext.
                assert_eq!(
                    hex::encode(&expected[..plaintext.len()]),
                    vector.ciphertext,
                    "{}",
                    vector.source
                );
                assert!(operation
                    .kernel_name(CipherFamily::of(vector.algorithm))
                    .ends_with("_ctr_segments"));
            }
        }
        // The two rules differ across the 2^32 wrap in segment 1, so each is checked.
        let vector = &known_answers()[0];
        let plaintext = bytes(vector.plaintext);
        let low = segments_check(vector, &plaintext, CounterRule::Low32).unwrap();
        let full = segments_check(vector, &plaintext, CounterRule::Full).unwrap();
        assert_ne!(low.2, full.2);

        // A wrong segmented result is reported under the segmented kernel's name.
        let error = run("cpu", |key, operation, data| {
            let vector = known_answers()
                .into_iter()
                .find(|vector| vector.algorithm == key.algorithm())
                .unwrap();
            on_cpu(&bytes(vector.key), vector.algorithm, operation, data);
            if matches!(operation, GpuOperation::CtrSegments { .. }) {
                let last = data.len() - 1;
                data[last] ^= 1;
            }
            Ok(())
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("aes_ctr_segments"), "{error}");
    }
}
