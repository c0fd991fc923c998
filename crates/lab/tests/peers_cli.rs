//! `parcrypt-lab --peers`: peers whose toolchain is missing are one short line each, and a
//! cheap peer that is present (pyca/cryptography, or OpenSSL's EVP through cc) runs and shows
//! its rows beside parcrypt's. No speed is asserted; aws-lc-rs is never built here.

use std::path::Path;
use std::process::Command;

#[path = "../../../tests/support/process.rs"]
mod process;

/// `parcrypt-lab --peers...` at one tiny size, one thread, one run, its builds in `cache`.
fn lab_peers(
    peers: &str,
    path: Option<&Path>,
    cache: &Path,
    output: &Path,
) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_parcrypt-lab"));
    command
        .args([
            peers,
            "--quick",
            "--ciphers",
            "aes-128-gcm",
            "--sizes",
            "64",
            "--threads",
            "1",
            "--repeat",
            "1",
            "--no-openssl",
            "--output",
        ])
        .arg(output)
        .env("PARCRYPT_PEERS_CACHE", cache)
        .env_remove("JAVA_HOME");
    if let Some(path) = path {
        command.env("PATH", path);
    }
    command.output().expect("parcrypt-lab runs")
}

#[test]
fn a_missing_toolchain_is_one_short_line_and_parcrypt_still_runs() {
    let empty = tempfile::tempdir().expect("temp dir");
    let output = lab_peers(
        "--peers",
        Some(empty.path()),
        &empty.path().join("cache"),
        &empty.path().join("out"),
    );
    process::assert_success(&output, "parcrypt-lab --peers with an empty PATH");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for peer in ["aws-lc-rs", "rustcrypto", "evp", "pyca", "go", "java"] {
        let prefix = format!("{peer}: not on this machine (");
        let lines: Vec<&str> = stdout
            .lines()
            .filter(|line| line.starts_with(&prefix))
            .collect();
        // Once before the run, and once among the table's notes.
        assert!(!lines.is_empty(), "no line for {peer} in:\n{stdout}");
        for line in lines {
            assert!(
                line.len() < 80 && line.ends_with(')'),
                "not one short line: {line}"
            );
        }
    }
    let row = stdout
        .lines()
        .find(|line| line.starts_with("parcrypt ") && !line.contains(" x "))
        .unwrap_or_else(|| panic!("no parcrypt row in:\n{stdout}"));
    assert!(row.split_whitespace().nth(2).is_some(), "{row}");
    assert!(!empty.path().join("cache").join("evp").exists());
}

#[test]
fn a_cheap_peer_runs_beside_parcrypt() {
    let folder = tempfile::tempdir().expect("temp dir");
    let out = folder.path().join("out");
    let output = lab_peers("--peers=pyca,evp", None, &folder.path().join("cache"), &out);
    process::assert_success(&output, "parcrypt-lab --peers=pyca,evp");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let ran: Vec<&str> = ["pyca", "evp"]
        .into_iter()
        .filter(|peer| !stdout.contains(&format!("{peer}: not on this machine")))
        .collect();
    if ran.is_empty() {
        println!("SKIPPED: neither pyca/cryptography nor cc with OpenSSL headers here");
        return;
    }
    assert!(!stdout.contains("failed at"), "a peer failed:\n{stdout}");
    for table in [
        "peers: aes-128-gcm encrypt, MB/s",
        "peers: aes-128-gcm decrypt, MB/s",
    ] {
        assert!(stdout.contains(table), "no table '{table}' in:\n{stdout}");
    }
    for peer in &ran {
        let rows = stdout
            .lines()
            .filter(|line| line.starts_with(&format!("{peer} ")))
            .count();
        assert_eq!(rows, 2, "{peer}: one row per direction in:\n{stdout}");
    }
    let ratios = stdout
        .lines()
        .filter(|line| line.starts_with("parcrypt x fastest peer"))
        .count();
    assert_eq!(ratios, 2, "{stdout}");
    // The copy floor: a row and parcrypt's share of it in each table.
    for start in ["copy ", "parcrypt x copy "] {
        let rows = stdout
            .lines()
            .filter(|line| line.starts_with(start))
            .count();
        assert_eq!(rows, 2, "'{start}' rows in:\n{stdout}");
    }
    // The figures are in results.json too, with the library that gave them.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).expect("results"))
            .expect("json");
    let records = json["records"].as_array().expect("records");
    for peer in ran.iter().copied().chain(["parcrypt"]) {
        let found: Vec<_> = records
            .iter()
            .filter(|record| record["scenario"] == "peers" && record["backend"] == peer)
            .collect();
        assert_eq!(found.len(), 2, "{peer} in results.json");
        assert!(found
            .iter()
            .all(|record| record["mb_per_s"].as_f64() > Some(0.0)));
        assert!(found.iter().all(|record| record["variant"].is_string()));
    }
}

/// `--kernels aes-ni` over OpenSSL's EVP (cc and OpenSSL's headers are here in CI): the run
/// names the family, parcrypt's and evp's rows are marked masked, and results.json says how
/// (the OPENSSL_ia32cap the harness was started with). No speed is asserted.
#[test]
fn kernels_masks_parcrypt_and_the_peer_alike() {
    let folder = tempfile::tempdir().expect("temp dir");
    let out = folder.path().join("out");
    let mut command = Command::new(env!("CARGO_BIN_EXE_parcrypt-lab"));
    command
        .args([
            "--peers=evp",
            "--kernels",
            "aes-ni",
            "--quick",
            "--ciphers",
            "aes-128-ctr",
            "--sizes",
            "1K",
            "--threads",
            "1",
            "--repeat",
            "1",
            "--no-openssl",
            "--output",
        ])
        .arg(&out)
        .env("PARCRYPT_PEERS_CACHE", folder.path().join("cache"));
    let output = command.output().expect("parcrypt-lab runs");
    process::assert_success(&output, "parcrypt-lab --peers=evp --kernels aes-ni");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("kernels: aes-ni"), "{stdout}");
    if stdout.contains("evp: not on this machine") {
        println!("SKIPPED: no cc with OpenSSL headers here");
        return;
    }
    assert!(!stdout.contains("failed at"), "a peer failed:\n{stdout}");
    for start in ["parcrypt [masked] ", "evp [masked] "] {
        let rows = stdout
            .lines()
            .filter(|line| line.starts_with(start))
            .count();
        assert_eq!(rows, 2, "'{start}' rows in:\n{stdout}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).expect("results"))
            .expect("json");
    let notes: Vec<&str> = json["records"]
        .as_array()
        .expect("records")
        .iter()
        .filter(|record| record["backend"] == "evp")
        .filter_map(|record| record["note"].as_str())
        .collect();
    assert_eq!(
        notes,
        ["masked to aes-ni (OPENSSL_ia32cap=~0x0:~0x5e42d0230000)"; 2]
    );
}

#[test]
fn an_unknown_kernel_family_is_one_line() {
    let output = Command::new(env!("CARGO_BIN_EXE_parcrypt-lab"))
        .args(["--peers", "--kernels", "avx9"])
        .output()
        .expect("parcrypt-lab runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown kernel family 'avx9'"), "{stderr}");
}
