//! The environment variables that pick a GCM kernel for keys made afterwards:
//! `PARCRYPT_GCM_KERNEL` (a kernel the CPU lacks falls back, an unknown name is refused) and
//! `PARCRYPT_NO_STITCHED` (the two-pass path, whatever the other says). One test, so nothing
//! else in this process reads the environment while it changes.

use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
use parcrypt_modes::gcm::{GcmError, GcmKernel, GcmKey, KERNEL_VARIABLE, NO_STITCHED_VARIABLE};

#[test]
fn environment_picks_the_kernel() {
    let cipher = new_cipher(Algorithm::Aes256, Implementation::Fast, &[3; 32]).expect("key");
    let kernel_of_new_key = || GcmKey::new(cipher.as_ref()).map(|key| key.kernel());

    std::env::remove_var(NO_STITCHED_VARIABLE);
    std::env::remove_var(KERNEL_VARIABLE);
    assert_eq!(kernel_of_new_key(), Ok(GcmKernel::fastest()));
    std::env::set_var(KERNEL_VARIABLE, "");
    assert_eq!(kernel_of_new_key(), Ok(GcmKernel::fastest()));

    for kernel in GcmKernel::ALL {
        std::env::set_var(KERNEL_VARIABLE, kernel.name());
        assert_eq!(kernel_of_new_key(), Ok(kernel.or_fallback()), "{kernel}");
    }

    std::env::set_var(KERNEL_VARIABLE, "avx9000");
    let refused = kernel_of_new_key();
    assert!(
        matches!(&refused, Err(GcmError::UnknownKernel(reason)) if reason.contains("avx9000") && !reason.contains('\n')),
        "{refused:?}"
    );

    std::env::set_var(KERNEL_VARIABLE, "vaes512");
    std::env::set_var(NO_STITCHED_VARIABLE, "1");
    assert_eq!(kernel_of_new_key(), Ok(GcmKernel::TwoPass));
    std::env::remove_var(NO_STITCHED_VARIABLE);
    std::env::remove_var(KERNEL_VARIABLE);
}
