//! `EngineBuilder::kernels`: an engine built under each kernel family this CPU has gives
//! every key that family as its ceiling (GCM's key included), and every suite's messages
//! match the reference implementation's, on one thread and split over threads; a family this
//! CPU lacks is refused when the engine is built.
//!
//! A family this CPU lacks is reported as SKIPPED on stdout (libtest shows it).

// Tests say on stdout what this machine could not run; libtest shows it.
#![allow(clippy::disallowed_macros)]

use parcrypt_ciphers::{Implementation, KernelFamily};
use parcrypt_engine::{Backend, Engine, EngineError, KeyedCipher};
use parcrypt_modes::{CipherSpec, Mode};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Lengths short and long: inline messages, and ones the `threads` backend splits.
const LENGTHS: [usize; 9] = [0, 1, 15, 16, 17, 255, 1000, 4096 + 7, 300_000];

fn random_bytes(rng: &mut StdRng, length: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; length];
    rng.fill_bytes(&mut bytes);
    bytes
}

#[test]
fn every_suite_matches_the_reference_under_every_family() {
    let mut rng = StdRng::seed_from_u64(0xFA_E001);
    for family in KernelFamily::ALL {
        if !family.is_supported() {
            println!("SKIPPED: this CPU cannot run the {family} kernels");
            continue;
        }
        for backend in [Backend::Seq, Backend::Threads] {
            let engine = Engine::builder()
                .backend(backend)
                .threads(2)
                .kernels(family)
                .build()
                .expect("a supported family");
            assert_eq!(engine.kernels(), Some(family));
            for suite in CipherSpec::all() {
                let (length, _) = suite.algorithm.key_lengths();
                let key = random_bytes(&mut rng, length);
                let keyed = KeyedCipher::new(&engine, suite, &key).expect("valid key");
                assert_eq!(keyed.implementation(), Implementation::Fast);
                if suite.mode == Mode::Gcm {
                    let gcm = keyed.gcm_key().expect("a GCM key");
                    assert_eq!(gcm.kernel_ceiling(), Some(family), "{suite}");
                    assert!(gcm.kernel().family() <= family, "{suite} under {family}");
                }
                let reference = KeyedCipher::with_implementation(
                    &engine,
                    suite,
                    &key,
                    Implementation::Reference,
                )
                .expect("valid key");
                for length in LENGTHS {
                    let iv = match suite.mode {
                        Mode::Ecb => None,
                        Mode::Gcm => Some(random_bytes(&mut rng, 12)),
                        _ => Some(random_bytes(&mut rng, suite.algorithm.block_size())),
                    };
                    let aad = (suite.mode == Mode::Gcm).then(|| random_bytes(&mut rng, 20));
                    let plaintext = random_bytes(&mut rng, length);
                    let case = format!("{suite} under {family} on {backend}, {length} bytes");
                    let ours = keyed
                        .encrypt(iv.as_deref(), &plaintext, aad.as_deref())
                        .unwrap_or_else(|error| panic!("{case}: {error}"));
                    let theirs = reference
                        .encrypt(iv.as_deref(), &plaintext, aad.as_deref())
                        .unwrap_or_else(|error| panic!("{case}: {error}"));
                    assert_eq!(ours, theirs, "{case}");
                    let back = keyed
                        .decrypt(iv.as_deref(), &ours, aad.as_deref())
                        .unwrap_or_else(|error| panic!("{case}: {error}"));
                    assert_eq!(back, plaintext, "{case}");
                }
            }
        }
    }
}

#[test]
fn no_family_means_no_ceiling() {
    let engine = Engine::builder().backend(Backend::Seq).build().unwrap();
    assert_eq!(engine.kernels(), None);
    let keyed = KeyedCipher::new(&engine, "aes-128-gcm".parse().unwrap(), &[1; 16]).unwrap();
    assert_eq!(keyed.gcm_key().unwrap().kernel_ceiling(), None);
}

#[test]
fn a_family_this_cpu_lacks_is_refused_at_build() {
    let Some(family) = KernelFamily::ALL
        .into_iter()
        .find(|family| !family.is_supported())
    else {
        println!(
            "SKIPPED: this CPU has every kernel family, so none is refused here \
             (parcrypt-ciphers' kernels tests check the refusal on simulated CPUs)"
        );
        return;
    };
    let Err(error) = Engine::builder()
        .backend(Backend::Seq)
        .kernels(family)
        .build()
    else {
        panic!("the engine was built under {family}, which this CPU lacks");
    };
    assert!(
        matches!(error, EngineError::UnsupportedKernels(_)),
        "{error}"
    );
    let message = error.to_string();
    assert!(message.contains(family.name()), "{message}");
    assert!(message.contains("lacks"), "{message}");
}
