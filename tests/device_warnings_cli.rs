//! Issue 31 finding 7, on the command line: naming a device whose table AES is not constant
//! time (PoCL, a CPU device, in CI) still runs AES there, with one warning on stderr that
//! says so; `auto` never warns (it never runs AES on such a device), nor does a cipher that
//! is not AES; `--reference`'s help says its table AES is not constant time either.
//!
//! Without OpenCL the device cases print SKIPPED and pass, unless `CI` is set.

use std::process::{Command, Output};

#[path = "support/process.rs"]
mod process;

const KEY: &str = "000102030405060708090a0b0c0d0e0f";
const IV: &str = "a0a1a2a3a4a5a6a7a8a9aaab";

/// `parcrypt raw encrypt` of `input` with `cipher` on `backend`, reading no tune file of
/// the user's.
fn raw_encrypt(cipher: &str, backend: &str, input: &[u8]) -> Output {
    let tune = tempfile::tempdir().unwrap();
    // GCM takes the 12-byte IV, RC6 a 16-byte block, Blowfish an 8-byte one.
    let iv = if cipher.ends_with("-gcm") {
        IV.to_string()
    } else if cipher.starts_with("bf-") {
        IV[..16].to_string()
    } else {
        format!("{IV}00000000")
    };
    process::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_parcrypt"))
            .args([
                "raw",
                "encrypt",
                "--cipher",
                cipher,
                "--key",
                KEY,
                "--iv",
                &iv,
                "--backend",
                backend,
                "-q",
            ])
            .env("PARCRYPT_TUNE_DIR", tune.path()),
        input,
    )
}

fn warnings(output: &Output) -> Vec<String> {
    process::stderr_lines(output, |line| line.contains("not constant time"))
}

#[test]
fn a_named_leaky_device_warns_once_and_auto_never_does() {
    let input: Vec<u8> = (0..100_000u32).map(|index| (index * 7) as u8).collect();
    let expected = raw_encrypt("aes-128-gcm", "seq", &input);
    assert!(expected.status.success());
    assert!(warnings(&expected).is_empty());

    let named = raw_encrypt("aes-128-gcm", "opencl", &input);
    if process::skipped_without_opencl(&named) {
        return;
    }
    process::assert_success(&named, "opencl");
    let stderr = String::from_utf8_lossy(&named.stderr);
    assert_eq!(
        named.stdout, expected.stdout,
        "the named device still runs AES"
    );
    let said = warnings(&named);
    // A GPU with a table copy per lane needs no warning; PoCL and smaller layouts do.
    let devices = Command::new(env!("CARGO_BIN_EXE_parcrypt"))
        .arg("devices")
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&devices.stdout);
    let first_is_cpu = listing
        .lines()
        .find(|line| line.contains("#0 "))
        .is_some_and(|line| line.contains(", CPU;"));
    if first_is_cpu || std::env::var_os("CI").is_some() {
        assert_eq!(said.len(), 1, "{stderr}");
        assert!(said[0].starts_with("parcrypt: warning: AES on opencl device"));
        assert!(said[0].contains("CPU device"), "{}", said[0]);
    }
    assert!(said.len() <= 1, "once per process: {stderr}");

    let auto = raw_encrypt("aes-128-gcm", "auto", &input);
    assert!(auto.status.success());
    assert_eq!(auto.stdout, expected.stdout);
    assert!(warnings(&auto).is_empty());

    for cipher in ["rc6-128-ctr", "bf-ctr"] {
        let input = &input[..4096];
        let other = raw_encrypt(cipher, "opencl", input);
        assert!(other.status.success());
        assert!(warnings(&other).is_empty(), "{cipher}");
        assert_eq!(other.stdout, raw_encrypt(cipher, "seq", input).stdout);
    }
}

#[test]
fn reference_help_says_table_aes_is_not_constant_time() {
    let output = Command::new(env!("CARGO_BIN_EXE_parcrypt"))
        .args(["raw", "encrypt", "--help"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    let reference = help
        .split("--reference")
        .nth(1)
        .expect("--reference in the help");
    let reference = reference.split("--force").next().unwrap();
    assert!(reference.contains("Not constant time"), "{reference}");
    assert!(help.contains("auto never runs AES on a device"), "{help}");
}
