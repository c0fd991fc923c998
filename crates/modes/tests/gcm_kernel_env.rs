//! The environment variables that pick a GCM kernel for a process's keys:
//! `PARCRYPT_GCM_KERNEL` (a kernel the CPU lacks falls back, an unknown name is refused) and
//! `PARCRYPT_NO_STITCHED` (the two-pass path, whatever the other says). `GcmKey::new` reads
//! them once per process, so each case runs this test binary again as a child process with
//! the variables set, and the child's one test reports the kernel of its keys.

use std::process::Command;

use parcrypt_ciphers::{new_cipher, Algorithm, Implementation};
use parcrypt_modes::gcm::{GcmError, GcmKernel, GcmKey, KERNEL_VARIABLE, NO_STITCHED_VARIABLE};

/// The child's test, run only by [`environment_picks_the_kernel`].
const CHILD_TEST: &str = "report_the_kernel_of_new_keys";

/// What a child process with `variables` set (and the other one removed) reports: the
/// kernel of its first key, or the error.
fn kernel_in_child(variables: &[(&str, &str)]) -> Result<GcmKernel, GcmError> {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args([
            "--exact",
            CHILD_TEST,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env_remove(KERNEL_VARIABLE)
        .env_remove(NO_STITCHED_VARIABLE);
    for (name, value) in variables {
        command.env(name, value);
    }
    let output = command.output().expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{variables:?}: child failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|line| Some(line.split_once("child: ")?.1))
        .unwrap_or_else(|| panic!("{variables:?}: no report in {stdout}"));
    if let Some(reason) = line.strip_prefix("error ") {
        return Err(GcmError::UnknownKernel(reason.to_string()));
    }
    let name = line.strip_prefix("kernel ").expect("kernel or error");
    Ok(GcmKernel::from_name(name).unwrap_or_else(|| panic!("unknown kernel {name}")))
}

#[test]
fn environment_picks_the_kernel() {
    assert_eq!(kernel_in_child(&[]), Ok(GcmKernel::fastest()));
    assert_eq!(
        kernel_in_child(&[(KERNEL_VARIABLE, "")]),
        Ok(GcmKernel::fastest())
    );
    for kernel in GcmKernel::ALL {
        assert_eq!(
            kernel_in_child(&[(KERNEL_VARIABLE, kernel.name())]),
            Ok(kernel.or_fallback()),
            "{kernel}"
        );
    }
    let refused = kernel_in_child(&[(KERNEL_VARIABLE, "avx9000")]);
    assert!(
        matches!(&refused, Err(GcmError::UnknownKernel(reason)) if reason.contains("avx9000") && !reason.contains('\n')),
        "{refused:?}"
    );
    assert_eq!(
        kernel_in_child(&[(KERNEL_VARIABLE, "vaes512"), (NO_STITCHED_VARIABLE, "1")]),
        Ok(GcmKernel::TwoPass)
    );
}

/// In a child of [`environment_picks_the_kernel`]: prints `child: kernel NAME` or
/// `child: error REASON` for a new key, after checking that keys made after the variables
/// change in this process keep the first reading (and that `from_environment` sees the
/// change).
#[test]
#[ignore = "run in a child process by environment_picks_the_kernel"]
fn report_the_kernel_of_new_keys() {
    let cipher = new_cipher(Algorithm::Aes256, Implementation::Fast, &[3; 32]).expect("key");
    let kernel_of_new_key = || GcmKey::new(cipher.as_ref()).map(|key| key.kernel());
    let first = kernel_of_new_key();
    let asked = GcmKernel::from_environment();

    std::env::set_var(KERNEL_VARIABLE, "not-a-kernel");
    std::env::remove_var(NO_STITCHED_VARIABLE);
    assert_eq!(kernel_of_new_key(), first, "read once per process");
    assert!(GcmKernel::from_environment().is_err(), "read afresh");
    assert_eq!(first.is_err(), asked.is_err(), "{first:?} from {asked:?}");

    match first {
        Ok(kernel) => println!("child: kernel {}", kernel.name()),
        Err(GcmError::UnknownKernel(reason)) => println!("child: error {reason}"),
        Err(other) => panic!("unexpected error {other}"),
    }
}
