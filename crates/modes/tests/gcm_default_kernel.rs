//! `set_default_kernel`: the process-wide choice of the GCM kernel that new keys run (what
//! `EngineBuilder::gcm_kernel` sets; the front ends map `PARCRYPT_GCM_KERNEL` and
//! `PARCRYPT_NO_STITCHED` onto it). The setting is the process's, so this file holds one
//! test: its own test binary is the only process that changes it.

use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
use parcrypt_modes::gcm::{default_kernel, set_default_kernel, GcmKernel, GcmKey};

fn new_key() -> GcmKey {
    let cipher = new_cipher(Algorithm::Aes128, Implementation::Fast, &[7u8; 16]).unwrap();
    GcmKey::new(cipher.as_ref()).unwrap()
}

#[test]
fn new_keys_run_the_kernel_asked_for_and_old_keys_keep_theirs() {
    assert_eq!(default_kernel(), GcmKernel::fastest(), "nothing asked yet");
    assert_eq!(new_key().kernel(), GcmKernel::fastest());
    let before = new_key();
    for kernel in GcmKernel::ALL {
        set_default_kernel(Some(kernel));
        // A kernel this CPU lacks falls back to the next available one.
        assert_eq!(default_kernel(), kernel.or_fallback(), "{kernel}");
        assert_eq!(new_key().kernel(), kernel.or_fallback(), "{kernel}");
    }
    set_default_kernel(Some(GcmKernel::TwoPass));
    assert_eq!(new_key().kernel(), GcmKernel::TwoPass, "always available");
    assert_eq!(
        before.kernel(),
        GcmKernel::fastest(),
        "made before: unchanged"
    );
    set_default_kernel(None);
    assert_eq!(
        new_key().kernel(),
        GcmKernel::fastest(),
        "back to the fastest"
    );
    // The kernel is a speed choice: every one gives the same bytes.
    let cipher = new_cipher(Algorithm::Aes128, Implementation::Fast, &[7u8; 16]).unwrap();
    let mut expected = vec![0x5au8; 5000];
    let expected_tag = new_key()
        .seal(cipher.as_ref(), &[1; 12], b"aad", &mut expected)
        .unwrap();
    set_default_kernel(Some(GcmKernel::TwoPass));
    let mut two_pass = vec![0x5au8; 5000];
    let tag = new_key()
        .seal(cipher.as_ref(), &[1; 12], b"aad", &mut two_pass)
        .unwrap();
    assert_eq!((two_pass, tag), (expected, expected_tag));
    set_default_kernel(None);
}
