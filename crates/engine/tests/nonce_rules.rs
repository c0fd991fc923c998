//! The rules that keep a nonce from being reused by accident (issue 31 finding 3): a
//! `Cipher`'s IV encrypts one message, GCM IVs shorter than 12 bytes need an explicit opt-in,
//! and Blowfish stops at its birthday bound.

use std::sync::{Arc, Barrier};

use parcrypt_engine::crypter::{process_buffer, JobSpec};
use parcrypt_engine::{
    Backend, Cipher, CipherSpec, Direction, Engine, Implementation, JobError, KeyedCipher, Mode,
};

fn seq() -> Arc<Engine> {
    Arc::new(Engine::new(Backend::Seq, None).unwrap())
}

fn key_and_iv(suite: CipherSpec) -> (Vec<u8>, Option<Vec<u8>>) {
    let key = vec![0x42; suite.algorithm.key_lengths().0];
    let iv = match suite.mode {
        Mode::Ecb => None,
        Mode::Gcm => Some(vec![7u8; 12]),
        _ => Some(vec![7u8; suite.algorithm.block_size()]),
    };
    (key, iv)
}

/// Issue 31 finding 3: a cipher made with an IV encrypted every message under it (two CTR or
/// GCM messages then XOR to the XOR of their plaintexts). Now the second encryption, in any
/// form, is refused, also through a clone, while decryption goes on.
#[test]
fn a_cipher_iv_encrypts_one_message_only() {
    let engine = seq();
    for suite in CipherSpec::all() {
        let (key, iv) = key_and_iv(suite);
        let cipher = Cipher::new(Arc::clone(&engine), suite, &key, iv.as_deref()).unwrap();
        let clone = cipher.clone();
        let plaintext = b"sixteen bytes!!!";
        let sealed = cipher.encrypt(plaintext, None).unwrap();
        if suite.mode == Mode::Ecb {
            // No IV, nothing to reuse.
            assert_eq!(cipher.encrypt(plaintext, None).unwrap(), sealed);
            continue;
        }
        assert!(cipher.iv_spent() && clone.iv_spent(), "{suite}");
        let spent = |outcome: Result<usize, JobError>| matches!(outcome, Err(JobError::IvSpent(_)));
        assert!(matches!(
            cipher.encrypt(b"another message!", None),
            Err(JobError::IvSpent(_))
        ));
        let mut output = vec![0u8; 64];
        assert!(
            spent(clone.encrypt_into(plaintext, &mut output, None)),
            "{suite}"
        );
        let mut buffer = [0u8; 64];
        assert!(
            spent(clone.encrypt_in_place(&mut buffer, 16, None)),
            "{suite}"
        );
        assert!(matches!(clone.encryptor(None), Err(JobError::IvSpent(_))));
        // The reason says what to do instead.
        let reason = cipher.encrypt(plaintext, None).unwrap_err().to_string();
        assert!(
            reason.contains("IV of its own") && reason.contains("AEAD"),
            "{reason}"
        );
        // Decryption may use the IV again and again.
        for _ in 0..3 {
            assert_eq!(clone.decrypt(&sealed, None).unwrap(), plaintext);
        }
        // Per-message IVs through the keyed cipher are the way to encrypt more.
        let other_iv = vec![9u8; iv.as_ref().unwrap().len()];
        let other = cipher
            .keyed()
            .encrypt(Some(&other_iv), plaintext, None)
            .unwrap();
        assert_ne!(other, sealed, "{suite}");
    }
}

/// Issue 31 finding 3: making an encryptor counts as the one encryption.
#[test]
fn an_encryptor_spends_the_iv() {
    let suite: CipherSpec = "aes-128-ctr".parse().unwrap();
    let (key, iv) = key_and_iv(suite);
    let cipher = Cipher::new(seq(), suite, &key, iv.as_deref()).unwrap();
    let mut crypter = cipher.encryptor(None).unwrap();
    let mut block = [1u8; 16];
    crypter.update(&mut block).unwrap();
    assert!(matches!(
        cipher.encrypt(&[1u8; 16], None),
        Err(JobError::IvSpent(_))
    ));
    assert!(cipher.decryptor(None).is_ok());
}

/// A refusal found before anything is encrypted leaves the IV for the message.
#[test]
fn refusals_before_encrypting_leave_the_iv_unspent() {
    let engine = seq();
    let gcm: CipherSpec = "aes-256-gcm".parse().unwrap();
    let (key, iv) = key_and_iv(gcm);
    let cipher = Cipher::new(Arc::clone(&engine), gcm, &key, iv.as_deref()).unwrap();
    let mut small = [0u8; 20];
    assert!(matches!(
        cipher.encrypt_into(b"eight!!!", &mut small, None),
        Err(JobError::OutputTooSmall {
            needed: 24,
            got: 20
        })
    ));
    assert!(!cipher.iv_spent());
    assert!(cipher.encrypt(b"eight!!!", None).is_ok());

    let cbc: CipherSpec = "bf-cbc".parse().unwrap();
    let (key, iv) = key_and_iv(cbc);
    let cipher = Cipher::new(engine, cbc, &key, iv.as_deref())
        .unwrap()
        .padding(false);
    assert!(matches!(
        cipher.encrypt(&[0u8; 9], None),
        Err(JobError::PartialBlock { .. })
    ));
    assert!(matches!(
        cipher.encrypt(&[0u8; 8], Some(b"aad")),
        Err(JobError::AadNotUsed)
    ));
    assert!(!cipher.iv_spent());
    assert_eq!(cipher.encrypt(&[0u8; 8], None).unwrap().len(), 8);
}

/// Issue 31 finding 3: of many threads encrypting under one IV at once (clones of one
/// cipher), exactly one gets to.
#[test]
fn threads_racing_for_the_iv_let_exactly_one_encrypt() {
    let suite: CipherSpec = "aes-128-gcm".parse().unwrap();
    let (key, iv) = key_and_iv(suite);
    let engine = seq();
    for _ in 0..50 {
        let cipher = Cipher::new(Arc::clone(&engine), suite, &key, iv.as_deref()).unwrap();
        let threads = 8;
        let barrier = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|index| {
                let cipher = cipher.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    cipher.encrypt(&[index as u8; 100], None)
                })
            })
            .collect();
        let outcomes: Vec<_> = handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect();
        let encrypted = outcomes.iter().filter(|outcome| outcome.is_ok()).count();
        let refused = outcomes
            .iter()
            .filter(|outcome| matches!(outcome, Err(JobError::IvSpent(_))))
            .count();
        assert_eq!((encrypted, refused), (1, threads - 1));
    }
}

/// Issue 31 finding 3: a 1-byte GCM IV was accepted. IVs of 1 to 11 bytes are now refused
/// on every way in, unless the caller asks for them by name.
#[test]
fn short_gcm_ivs_need_an_explicit_opt_in() {
    let engine = seq();
    let suite: CipherSpec = "aes-128-gcm".parse().unwrap();
    let key = [3u8; 16];
    let keyed = KeyedCipher::new(Arc::clone(&engine), suite, &key).unwrap();
    for length in [1usize, 8, 11] {
        let iv = vec![1u8; length];
        let refused = Cipher::new(Arc::clone(&engine), suite, &key, Some(&iv));
        assert!(
            matches!(refused, Err(JobError::ShortGcmIv { got, .. }) if got == length),
            "{length}"
        );
        assert!(matches!(
            keyed.encrypt(Some(&iv), b"x", None),
            Err(JobError::ShortGcmIv { .. })
        ));
        assert!(keyed.check_iv(Some(&iv)).is_err());
        let reason = keyed
            .encrypt(Some(&iv), b"x", None)
            .unwrap_err()
            .to_string();
        assert!(reason.contains("allow_short_gcm_iv"), "{reason}");
        let job = |allow_short_gcm_iv| JobSpec {
            spec: suite,
            direction: Direction::Encrypt,
            key: &key,
            iv: Some(&iv),
            allow_short_gcm_iv,
            aad: None,
            padding: true,
            implementation: Implementation::Fast,
        };
        assert!(matches!(
            process_buffer(&engine, &job(false), b"x".to_vec()),
            Err(JobError::ShortGcmIv { .. })
        ));
        // Asked for, the short IV works and agrees between the ways in.
        let allowed = keyed.clone().allow_short_gcm_iv(true);
        let sealed = allowed.encrypt(Some(&iv), b"x", None).unwrap();
        assert_eq!(
            process_buffer(&engine, &job(true), b"x".to_vec()).unwrap(),
            sealed
        );
        let cipher = Cipher::from_keyed(allowed.clone(), Some(&iv)).unwrap();
        assert_eq!(cipher.decrypt(&sealed, None).unwrap(), b"x");
        // The choice survives a change of implementation.
        let reference = cipher.implementation(Implementation::Reference);
        assert_eq!(reference.decrypt(&sealed, None).unwrap(), b"x");
    }
    for length in [12usize, 13, 16, 60] {
        assert!(keyed.encrypt(Some(&vec![1u8; length]), b"x", None).is_ok());
    }
}

const GIB: usize = 1 << 30;

/// Blowfish's 64-bit blocks collide after about 2^32 of them: a message longer than that
/// under one key and IV is refused before it starts, with the reason.
#[test]
fn blowfish_stops_at_the_birthday_bound() {
    let engine = seq();
    for name in ["bf-ctr", "bf-cbc", "bf-ecb"] {
        let suite: CipherSpec = name.parse().unwrap();
        let (key, iv) = key_and_iv(suite);
        let cipher = Cipher::new(Arc::clone(&engine), suite, &key, iv.as_deref()).unwrap();
        let refused = cipher.iv_for_encryption(32 * GIB + 1, usize::MAX, None);
        assert!(
            matches!(refused, Err(JobError::BirthdayBound { .. })),
            "{name}: {refused:?}"
        );
        assert!(refused.unwrap_err().to_string().contains("birthday bound"));
        assert!(!cipher.iv_spent());
        // A padded message of exactly 32 GiB grows by a block and is one too many.
        let padded = cipher.iv_for_encryption(32 * GIB, usize::MAX, None);
        assert_eq!(
            padded.is_err(),
            suite.mode.pads(),
            "{name}: 32 GiB padded is over"
        );
        // Messages whose segments the caller runs are checked by their length.
        let segmented =
            cipher
                .keyed()
                .segmented(Direction::Encrypt, iv.as_deref(), None, 32 * GIB + 8);
        assert!(
            matches!(segmented, Err(JobError::BirthdayBound { .. })),
            "{name}"
        );
    }
    // Ciphers with 128-bit blocks have no such limit here.
    let aes: CipherSpec = "aes-128-ctr".parse().unwrap();
    let (key, iv) = key_and_iv(aes);
    let cipher = Cipher::new(engine, aes, &key, iv.as_deref()).unwrap();
    assert!(cipher.iv_for_encryption(64 * GIB, usize::MAX, None).is_ok());
}
