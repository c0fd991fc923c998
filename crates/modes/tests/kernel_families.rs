//! Every kernel family this CPU has, forced as the ceiling of the key
//! (`Implementation::Limited`): ECB, CBC, CTR and GCM (both directions) of AES-128/192/256
//! against the reference AES (`Implementation::Reference`), and the same modes of RC6 against
//! its portable code, for every length 0..=1024 bytes (whole blocks for ECB and CBC) and the
//! lengths around each kernel's batch sizes, under random keys from a fixed seed. Also that
//! the key's choices (CTR, GCM kernel, GHASH) keep under the ceiling.
//!
//! A family this CPU lacks is reported as SKIPPED on stdout (libtest shows it) and not run.

// Tests say on stdout what this machine could not run; libtest shows it.
#![allow(clippy::disallowed_macros)]

use parcrypt_ciphers::{new_cipher, Algorithm, BlockCipher, Implementation, KernelFamily};
use parcrypt_modes::ctr::{self, Counter, CounterRule};
use parcrypt_modes::gcm::{self, GcmKey};
use parcrypt_modes::{cbc, ecb, Direction};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const ALGORITHMS: [Algorithm; 6] = [
    Algorithm::Aes128,
    Algorithm::Aes192,
    Algorithm::Aes256,
    Algorithm::Rc6_128,
    Algorithm::Rc6_192,
    Algorithm::Rc6_256,
];

/// The batch sizes of the kernels in bytes: AES-NI CTR and GCM (8 blocks), VAES-256 GCM (16),
/// VAES-512 GCM (32) and ECB/CTR (48 blocks a step), RC6's AVX-512 and AVX2 iterations, twice
/// the larger ones, and the modes' 4 KiB pieces.
const BATCH_BYTES: [usize; 8] = [128, 256, 512, 768, 1024, 1536, 2048, 4096];

/// The families this CPU has; the others are reported as skipped.
fn families() -> Vec<KernelFamily> {
    KernelFamily::ALL
        .into_iter()
        .filter(|family| {
            let supported = family.is_supported();
            if !supported {
                println!("SKIPPED: this CPU cannot run the {family} kernels");
            }
            supported
        })
        .collect()
}

/// Every length 0..=1024 and those within 17 bytes of each batch size.
fn lengths() -> Vec<usize> {
    let mut lengths: Vec<usize> = (0..=1024).collect();
    for batch in BATCH_BYTES {
        lengths.extend(batch - 17..=batch + 17);
    }
    lengths.sort_unstable();
    lengths.dedup();
    lengths
}

fn random_bytes(rng: &mut StdRng, length: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; length];
    rng.fill_bytes(&mut bytes);
    bytes
}

/// The key under `family`'s ceiling and the one to compare with: the reference AES, or RC6's
/// portable code.
fn ciphers(
    algorithm: Algorithm,
    family: KernelFamily,
    key: &[u8],
) -> (Box<dyn BlockCipher>, Box<dyn BlockCipher>) {
    let limited = new_cipher(algorithm, Implementation::Limited(family), key)
        .unwrap_or_else(|error| panic!("{algorithm} under {family}: {error}"));
    let reference = match algorithm {
        Algorithm::Aes128 | Algorithm::Aes192 | Algorithm::Aes256 => Implementation::Reference,
        _ => Implementation::Limited(KernelFamily::Portable),
    };
    let reference = new_cipher(algorithm, reference, key).expect("valid key");
    assert_eq!(limited.kernel_ceiling(), Some(family));
    (limited, reference)
}

/// Runs `check(limited, reference, data, rng)` for every family, algorithm and length.
fn for_every_case(
    seed: u64,
    mut check: impl FnMut(&dyn BlockCipher, &dyn BlockCipher, &[u8], &mut StdRng, &str),
) {
    let mut rng = StdRng::seed_from_u64(seed);
    let lengths = lengths();
    for family in families() {
        for algorithm in ALGORITHMS {
            let (length, _) = algorithm.key_lengths();
            let key = random_bytes(&mut rng, length);
            let (limited, reference) = ciphers(algorithm, family, &key);
            for &length in &lengths {
                let data = random_bytes(&mut rng, length);
                let case = format!("{algorithm} under {family}, {length} bytes");
                check(limited.as_ref(), reference.as_ref(), &data, &mut rng, &case);
            }
        }
    }
}

#[test]
fn ecb_matches_the_reference_under_every_family() {
    for_every_case(0xFA_0001, |limited, reference, data, _, case| {
        let whole = &data[..data.len() / 16 * 16];
        for direction in [Direction::Encrypt, Direction::Decrypt] {
            let mut ours = whole.to_vec();
            let mut theirs = whole.to_vec();
            ecb::apply(limited, direction, &mut ours);
            ecb::apply(reference, direction, &mut theirs);
            assert_eq!(ours, theirs, "{case}, {direction:?}");
        }
    });
}

#[test]
fn cbc_matches_the_reference_under_every_family() {
    for_every_case(0xFA_0002, |limited, reference, data, rng, case| {
        let whole = &data[..data.len() / 16 * 16];
        let iv = random_bytes(rng, 16);
        let (mut our_chain, mut their_chain) = (iv.clone(), iv.clone());
        let mut ours = whole.to_vec();
        let mut theirs = whole.to_vec();
        cbc::encrypt(limited, &mut our_chain, &mut ours);
        cbc::encrypt(reference, &mut their_chain, &mut theirs);
        assert_eq!(ours, theirs, "{case}, encryption");
        assert_eq!(our_chain, their_chain, "{case}, chain");
        cbc::decrypt(limited, &iv, &mut ours);
        cbc::decrypt(reference, &iv, &mut theirs);
        assert_eq!(ours, theirs, "{case}, decryption");
        assert_eq!(ours, whole, "{case}, round trip");
    });
}

#[test]
fn ctr_matches_the_reference_under_every_family() {
    for_every_case(0xFA_0003, |limited, reference, data, rng, case| {
        let mut start = random_bytes(rng, 16);
        // Now and then a low word that wraps inside the message.
        if data.len() % 7 == 0 {
            start[12..].copy_from_slice(&(u32::MAX - 3).to_be_bytes());
        }
        let counter = Counter::new(&start, CounterRule::Low32);
        let mut theirs = data.to_vec();
        ctr::apply(reference, counter, &mut theirs);
        let mut ours = data.to_vec();
        ctr::apply(limited, counter, &mut ours);
        assert_eq!(ours, theirs, "{case}, in place");
        let mut apart = vec![0u8; data.len()];
        ctr::apply_into(limited, counter, data, &mut apart);
        assert_eq!(apart, theirs, "{case}, apart");
    });
}

#[test]
fn gcm_matches_the_reference_under_every_family() {
    for_every_case(0xFA_0004, |limited, reference, data, rng, case| {
        let iv = random_bytes(rng, 12);
        let aad = random_bytes(rng, data.len() % 40);
        let our_key = GcmKey::new(limited).expect("a 128-bit cipher");
        let their_key = GcmKey::new(reference).expect("a 128-bit cipher");
        let mut ours = data.to_vec();
        let mut theirs = data.to_vec();
        let our_tag = our_key.seal(limited, &iv, &aad, &mut ours).expect("seal");
        let their_tag = their_key
            .seal(reference, &iv, &aad, &mut theirs)
            .expect("seal");
        assert_eq!(ours, theirs, "{case}, ciphertext");
        assert_eq!(our_tag, their_tag, "{case}, tag");
        our_key
            .open(limited, &iv, &aad, &mut ours, &their_tag)
            .unwrap_or_else(|error| panic!("{case}, open: {error}"));
        assert_eq!(ours, data, "{case}, round trip");
        if !data.is_empty() {
            let mut forged = theirs.clone();
            forged[0] ^= 1;
            assert_eq!(
                our_key.open(limited, &iv, &aad, &mut forged, &their_tag),
                Err(gcm::GcmError::TagMismatch),
                "{case}, forged"
            );
        }
    });
}

#[test]
fn gcm_keys_keep_under_the_cipher_ceiling() {
    for family in families() {
        let cipher = new_cipher(Algorithm::Aes128, Implementation::Limited(family), &[3; 16])
            .expect("a supported family");
        let mut key = GcmKey::new(cipher.as_ref()).expect("a 128-bit cipher");
        assert_eq!(key.kernel_ceiling(), Some(family));
        assert!(
            key.kernel().family() <= family,
            "{family}: {}",
            key.kernel()
        );
        assert!(key.ghash().implementation().family() <= family, "{family}");
        // Asking for a faster kernel than the ceiling falls back under it.
        let forced = key.set_kernel(gcm::GcmKernel::Vaes512);
        assert!(forced.family() <= family, "{family}: {forced}");
        assert_eq!(forced, key.kernel());
    }
    // With no ceiling, the choice is as it always was.
    let cipher = new_cipher(Algorithm::Aes128, Implementation::Fast, &[3; 16]).expect("valid");
    let key = GcmKey::new(cipher.as_ref()).expect("a 128-bit cipher");
    assert_eq!(key.kernel_ceiling(), None);
    assert_eq!(key.kernel(), gcm::default_kernel());
    assert_eq!(
        key.ghash().implementation(),
        parcrypt_modes::ghash::Implementation::fastest()
    );
}

#[test]
fn each_supported_family_runs_its_own_gcm_kernel() {
    let expected = [
        (KernelFamily::Portable, gcm::GcmKernel::TwoPass),
        (KernelFamily::AesNi, gcm::GcmKernel::AesNi),
        (KernelFamily::Vaes256, gcm::GcmKernel::Vaes256),
        (KernelFamily::Vaes512, gcm::GcmKernel::Vaes512),
    ];
    for (family, kernel) in expected {
        if !family.is_supported() {
            println!("SKIPPED: this CPU cannot run the {family} kernels");
            continue;
        }
        let cipher = new_cipher(Algorithm::Aes256, Implementation::Limited(family), &[5; 32])
            .expect("a supported family");
        let key = GcmKey::new(cipher.as_ref()).expect("a 128-bit cipher");
        // Unless the process asked for another kernel (no test here does).
        assert_eq!(key.kernel(), kernel, "{family}");
    }
}
