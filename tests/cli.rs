//! The command line as users and scripts meet it: round trips through files and pipes, and
//! bad input answered with one line on stderr, a non-zero exit and nothing left behind.

use std::path::Path;
use std::process::{Command, Output};

#[path = "support/process.rs"]
mod process;

const KEY: &str = "000102030405060708090a0b0c0d0e0f";
const IV: &str = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

fn parcrypt(args: &[&str], stdin: &[u8]) -> Output {
    process::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_parcrypt")).args(args),
        stdin,
    )
}

/// Asserts a refusal: nothing on stdout, and the one line on stderr (apart from warnings) that
/// [`process::assert_refused_with`] checks.
fn assert_refused(output: &Output, reason: &str) {
    assert!(
        output.stdout.is_empty(),
        "wrote {} bytes to stdout",
        output.stdout.len()
    );
    process::assert_refused_with(output, reason, |line| line.contains("warning:"));
}

fn run_raw_with_key(
    direction: &str,
    cipher: &str,
    key: &str,
    extra: &[&str],
    stdin: &[u8],
) -> Output {
    let mut args = vec!["raw", direction, "--cipher", cipher, "--key", key];
    args.extend(extra);
    parcrypt(&args, stdin)
}

fn run_raw(direction: &str, cipher: &str, extra: &[&str], stdin: &[u8]) -> Output {
    run_raw_with_key(direction, cipher, KEY, extra, stdin)
}

#[test]
fn round_trips_through_pipes_for_every_mode_and_backend() {
    let plaintext: Vec<u8> = (0..100_003u32).map(|i| (i * 7) as u8).collect();
    for cipher in [
        "aes-128-ecb",
        "aes-128-cbc",
        "aes-128-ctr",
        "aes-128-gcm",
        "bf-cbc",
        "rc6-128-ctr",
    ] {
        let iv = if cipher.starts_with("bf") {
            "0011223344556677"
        } else {
            IV
        };
        let mut options = vec!["--backend"];
        for backend in ["seq", "threads", "pool", "auto"] {
            options.truncate(1);
            options.push(backend);
            if !cipher.ends_with("ecb") {
                options.extend(["--iv", iv]);
            }
            let sealed = run_raw("encrypt", cipher, &options, &plaintext);
            process::assert_success(&sealed, cipher);
            assert_ne!(sealed.stdout, plaintext);
            let opened = run_raw("decrypt", cipher, &options, &sealed.stdout);
            process::assert_success(&opened, cipher);
            assert_eq!(opened.stdout, plaintext, "{cipher} on {backend}");
        }
    }
}

#[test]
fn every_kernel_family_gives_the_same_bytes_and_an_unknown_one_is_refused() {
    let plaintext: Vec<u8> = (0..70_001u32).map(|i| (i * 13) as u8).collect();
    for cipher in [
        "aes-128-gcm",
        "aes-128-ctr",
        "aes-128-cbc",
        "aes-128-ecb",
        "rc6-128-gcm",
    ] {
        let iv = if cipher.ends_with("gcm") {
            &IV[..24]
        } else {
            IV
        };
        let iv_options: &[&str] = if cipher.ends_with("ecb") {
            &[]
        } else {
            &["--iv", iv]
        };
        let expected = run_raw("encrypt", cipher, iv_options, &plaintext);
        process::assert_success(&expected, cipher);
        for family in parcrypt_ciphers::KernelFamily::supported() {
            let mut options = iv_options.to_vec();
            options.extend(["--kernels", family.name()]);
            let sealed = run_raw("encrypt", cipher, &options, &plaintext);
            process::assert_success(&sealed, cipher);
            assert_eq!(sealed.stdout, expected.stdout, "{cipher} under {family}");
            let opened = run_raw("decrypt", cipher, &options, &sealed.stdout);
            process::assert_success(&opened, cipher);
            assert_eq!(opened.stdout, plaintext, "{cipher} under {family}");
        }
    }
    let refused = run_raw(
        "encrypt",
        "aes-128-ctr",
        &["--iv", IV, "--kernels", "avx"],
        b"x",
    );
    assert_refused(&refused, "unknown kernel family 'avx'");
}

#[test]
fn round_trips_through_files_and_refuses_to_clobber() {
    let folder = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..(1u32 << 20) + 5)
        .map(|i| (i ^ (i >> 8)) as u8)
        .collect();
    let plain = process::file_in(folder.path(), "plain.bin", &data);
    let sealed = folder.path().join("sealed.bin");
    let opened = folder.path().join("opened.bin");
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let (plain_name, sealed_name, opened_name) = (path(&plain), path(&sealed), path(&opened));
    let key = "ab".repeat(32);
    // AES-256-GCM from one file to another, `extra` options between the IV and the files.
    let gcm = |direction, from: &str, to: &str, extra: &[&str]| {
        let mut options = vec!["--iv", "00112233445566778899aabb"];
        options.extend(extra);
        options.extend([from, "-o", to]);
        run_raw_with_key(direction, "aes-256-gcm", &key, &options, b"")
    };
    let encrypt = gcm("encrypt", &plain_name, &sealed_name, &[]);
    process::assert_success(&encrypt, "raw encrypt to a file");
    assert_eq!(
        std::fs::metadata(&sealed).unwrap().len(),
        data.len() as u64 + 16
    );
    let decrypt = gcm("decrypt", &sealed_name, &opened_name, &[]);
    process::assert_success(&decrypt, "raw decrypt to a file");
    assert_eq!(std::fs::read(&opened).unwrap(), data);

    // An existing output is kept unless --overwrite is given, and the refusal names it.
    let again = gcm("decrypt", &sealed_name, &opened_name, &[]);
    assert_refused(&again, "already exists (use --overwrite to replace it)");
    // The input is never the output, even with --overwrite.
    let same = run_raw(
        "encrypt",
        "aes-128-ctr",
        &["--iv", IV, "--overwrite", &plain_name, "-o", &plain_name],
        b"",
    );
    assert_refused(&same, "is the input file");
    assert_eq!(std::fs::read(&plain).unwrap(), data, "input was modified");
    // --overwrite replaces the output; --force and -f, its older names, still do.
    for flag in ["--overwrite", "--force", "-f"] {
        std::fs::write(&opened, b"old").unwrap();
        let replaced = gcm("decrypt", &sealed_name, &opened_name, &[flag]);
        process::assert_success(&replaced, flag);
        assert_eq!(
            std::fs::read(&opened).unwrap(),
            data,
            "{flag} kept the old file"
        );
    }
    let leftovers = process::names(folder.path());
    assert_eq!(
        leftovers.len(),
        3,
        "temporary files left behind: {leftovers:?}"
    );
}

#[test]
fn failed_gcm_decryption_releases_nothing_and_leaves_no_file() {
    let folder = tempfile::tempdir().unwrap();
    let plaintext = vec![0x61u8; 300_000];
    let sealed = run_raw(
        "encrypt",
        "aes-128-gcm",
        &["--iv", "cafebabefacedbaddecaf888"],
        &plaintext,
    );
    assert!(sealed.status.success());
    for flip in [0usize, 150_000, plaintext.len() + 15] {
        let mut tampered = sealed.stdout.clone();
        tampered[flip] ^= 0x01;
        let to_stdout = run_raw(
            "decrypt",
            "aes-128-gcm",
            &["--iv", "cafebabefacedbaddecaf888"],
            &tampered,
        );
        assert_refused(&to_stdout, "authentication failed");
        let target = folder.path().join("out.bin");
        let input = process::file_in(folder.path(), "in.bin", &tampered);
        let to_file = run_raw(
            "decrypt",
            "aes-128-gcm",
            &[
                "--iv",
                "cafebabefacedbaddecaf888",
                input.to_str().unwrap(),
                "-o",
                target.to_str().unwrap(),
            ],
            b"",
        );
        assert_refused(&to_file, "authentication failed");
        assert!(
            !target.exists(),
            "output file left after a failed decryption"
        );
        let names = process::names(folder.path());
        assert_eq!(names.len(), 1, "temporary files left behind: {names:?}");
    }
    // The wrong AAD fails the same way.
    let wrong_aad = run_raw(
        "decrypt",
        "aes-128-gcm",
        &["--iv", "cafebabefacedbaddecaf888", "--aad", "00"],
        &sealed.stdout,
    );
    assert_refused(&wrong_aad, "authentication failed");
}

/// The arguments of a `raw` command: `direction`, `cipher`, `key`, then `iv` when given and
/// `extra`.
fn raw_args<'a>(
    direction: &'a str,
    cipher: &'a str,
    key: &'a str,
    iv: Option<&'a str>,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec!["raw", direction, "--cipher", cipher, "--key", key];
    if let Some(iv) = iv {
        args.extend(["--iv", iv]);
    }
    args.extend(extra);
    args
}

#[test]
fn bad_input_gets_one_line_and_a_non_zero_exit() {
    let encrypt = |cipher, key, iv, extra| raw_args("encrypt", cipher, key, iv, extra);
    let decrypt = |cipher, key, iv, extra| raw_args("decrypt", cipher, key, iv, extra);
    let bad_hex = "zz0102030405060708090a0b0c0d0e0f";
    let no_output = ["-o", "/no/such/dir/out"];
    let cases: Vec<(Vec<&str>, &[u8], &str)> = vec![
        (
            encrypt("aes-128-ctr", "0011", Some(IV), &[]),
            b"x",
            "key of 16 bytes",
        ),
        (
            encrypt("aes-128-ctr", bad_hex, Some(IV), &[]),
            b"x",
            "not valid hex",
        ),
        (
            encrypt("aes-128-ctr", "0", Some(IV), &[]),
            b"x",
            "odd number",
        ),
        (
            encrypt("aes-128-cbc", KEY, Some("0011"), &[]),
            b"x",
            "IV of 16 bytes",
        ),
        (encrypt("aes-128-cbc", KEY, None, &[]), b"x", "needs an IV"),
        (
            encrypt("aes-128-ecb", KEY, Some(IV), &[]),
            b"x",
            "takes no IV",
        ),
        (
            encrypt("aes-128-gcm", KEY, Some(""), &[]),
            b"x",
            "IV of at least 1 byte",
        ),
        (
            encrypt("aes-512-ctr", KEY, Some(IV), &[]),
            b"x",
            "unknown cipher",
        ),
        (encrypt("bf-gcm", KEY, Some(IV), &[]), b"x", "128-bit block"),
        (
            encrypt("aes-128-ctr", KEY, Some(IV), &["--backend", "gpu9"]),
            b"x",
            "unknown backend",
        ),
        (
            encrypt("aes-128-ctr", KEY, Some(IV), &["--threads", "0"]),
            b"x",
            "at least 1",
        ),
        (
            decrypt("aes-128-cbc", KEY, Some(IV), &[]),
            &[7u8; 17],
            "not a whole number",
        ),
        (
            decrypt("aes-128-cbc", KEY, Some(IV), &[]),
            &[7u8; 32],
            "bad padding",
        ),
        (
            decrypt("aes-128-cbc", KEY, Some(IV), &[]),
            b"",
            "not a whole number",
        ),
        (
            encrypt("aes-128-ecb", KEY, None, &["--no-pad"]),
            &[1u8; 20],
            "not a whole number",
        ),
        (
            decrypt("aes-128-gcm", KEY, Some(IV), &[]),
            &[1u8; 15],
            "too short",
        ),
        (
            encrypt("aes-128-ctr", KEY, Some(IV), &["/no/such/file"]),
            b"",
            "cannot open input",
        ),
        (
            encrypt("aes-128-ctr", KEY, Some(IV), &["--aad", "00"]),
            b"",
            "only for GCM",
        ),
        (
            encrypt("aes-128-ctr", KEY, Some(IV), &["--bogus"]),
            b"",
            "unexpected argument",
        ),
        (
            vec!["raw", "encrypt", "--cipher", "aes-128-ctr"],
            b"",
            "required",
        ),
        (
            encrypt("aes-128-ctr", KEY, Some(IV), &no_output),
            b"",
            "cannot write",
        ),
    ];
    for (args, stdin, reason) in cases {
        let output = parcrypt(&args, stdin);
        assert_refused(&output, reason);
    }
}

#[test]
fn ecb_warns_and_devices_lists_every_backend() {
    let output = run_raw("encrypt", "aes-128-ecb", &[], b"0123456789abcdef");
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("warning: ECB"));
    let devices = parcrypt(&["devices"], b"");
    assert!(devices.status.success());
    let text = String::from_utf8_lossy(&devices.stdout);
    for backend in ["seq", "threads", "pool", "auto", "opencl", "cuda", "hip"] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(backend)),
            "{backend} missing:\n{text}"
        );
    }
    let kernels = format!(
        "CPU kernels: {} (",
        parcrypt_ciphers::KernelFamily::detected()
    );
    assert!(text.contains(&kernels), "{kernels} missing:\n{text}");
}

#[test]
fn without_an_amd_gpu_hip_says_why_in_one_line_and_refuses_work() {
    let devices = parcrypt(&["devices"], b"");
    let text = String::from_utf8_lossy(&devices.stdout);
    let hip: Vec<&str> = text
        .lines()
        .filter(|line| line.trim_start().starts_with("hip "))
        .collect();
    assert_eq!(hip.len(), 1, "{text}");
    if !hip[0].contains("unavailable") {
        return; // an AMD GPU is present: the device tests cover it
    }
    assert!(
        hip[0].contains("no AMD GPU present (")
            || hip[0].contains("not available here (no libamdhip64")
            || hip[0].contains("HIP is not in this build"),
        "{}",
        hip[0]
    );
    let output = run_raw("encrypt", "aes-128-ctr", &["--backend", "hip"], b"data");
    assert!(!output.status.success());
    assert_refused(&output, "hip backend unavailable: ");
}

#[test]
fn help_names_every_cipher_and_says_cbc_encryption_is_sequential() {
    let output = parcrypt(&["raw", "encrypt", "--help"], b"");
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("CBC encryption chains"), "{text}");
    for name in ["aes-128", "bf-ecb", "rc6-256", "-gcm"] {
        assert!(text.contains(name), "{name} missing from help");
    }
}

#[test]
fn tune_measures_stores_a_table_and_refuses_cpu_backends() {
    let refused = parcrypt(&["tune", "--backend", "pool"], b"");
    assert_refused(&refused, "GPU backend");
    let refused = parcrypt(&["tune", "--backend", "opencl", "--algorithms", "des"], b"");
    // Without OpenCL the backend is refused first; either way one line and a reason.
    assert!(!refused.status.success());
    assert_eq!(String::from_utf8_lossy(&refused.stderr).lines().count(), 1);

    let directory = tempfile::tempdir().unwrap();
    let table = directory.path().join("tune.json");
    let output = parcrypt(
        &[
            "tune",
            "--backend",
            "opencl",
            "--algorithms",
            "rc6-128",
            "--max-size",
            "4K",
            "--runs",
            "1",
            "--output",
            table.to_str().unwrap(),
        ],
        b"",
    );
    if process::skipped_without_opencl(&output) {
        return;
    }
    process::assert_success(&output, "opencl");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("rc6-128") && stdout.contains("crossover rc6-128-ctr"),
        "{stdout}"
    );
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&table).unwrap()).unwrap();
    // Sizes 64 B and 1 KiB, CTR and ECB decryption: four shapes; CTR and GCM both ways.
    assert_eq!(json["shapes"].as_array().unwrap().len(), 4, "{json}");
    assert_eq!(json["crossovers"].as_array().unwrap().len(), 3, "{json}");
    assert!(json["device"].as_str().unwrap().starts_with("opencl #0"));
}

/// Issue 31 finding 3: `raw` took a 1-byte GCM IV without a word. IVs under 12 bytes are
/// refused with the reason, both ways; `--allow-short-gcm-iv` keeps the old behaviour.
#[test]
fn short_gcm_ivs_need_allow_short_gcm_iv() {
    for iv in ["00", "cafebabefacedbad", "0011223344556677889900"] {
        let refused = run_raw("encrypt", "aes-128-gcm", &["--iv", iv], b"data");
        assert_refused(&refused, "GCM IV is refused");
        let allowed = ["--iv", iv, "--allow-short-gcm-iv"];
        let sealed = run_raw("encrypt", "aes-128-gcm", &allowed, b"data");
        process::assert_success(&sealed, "raw encrypt with a short GCM IV");
        assert_eq!(sealed.stdout.len(), 4 + 16);
        let refused = run_raw("decrypt", "aes-128-gcm", &["--iv", iv], &sealed.stdout);
        assert_refused(&refused, "GCM IV is refused");
        let opened = run_raw("decrypt", "aes-128-gcm", &allowed, &sealed.stdout);
        process::assert_success(&opened, "raw decrypt with a short GCM IV");
        assert_eq!(opened.stdout, b"data");
    }
}

/// A mistyped subcommand, option or value is answered in one line with the nearest name;
/// a word near nothing gets no guess.
#[test]
fn mistypes_are_answered_with_the_nearest_name() {
    fn raw<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec!["raw", "encrypt", "--key", KEY, "--iv", IV];
        args.extend(extra);
        args
    }
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec!["encrpyt", "notes.txt"],
            2,
            "unrecognized subcommand 'encrpyt'; did you mean 'encrypt' or 'decrypt'?",
        ),
        (vec!["devcies"], 2, "did you mean 'devices'?"),
        (
            vec!["encrypt", "--overwirte", "-o", "x.pc", "x"],
            2,
            "unexpected argument '--overwirte' found; did you mean '--overwrite'?",
        ),
        (
            raw(&["--cipher", "aes-128-gmc"]),
            1,
            "unknown cipher 'aes-128-gmc'",
        ),
        (raw(&["--cipher", "aes-128-gmc"]), 1, "did you mean 'aes-128-gcm'?"),
        (
            raw(&["--cipher", "aes-128-ctr", "--backend", "thread"]),
            1,
            "unknown backend 'thread' (choose seq, threads, pool, opencl, cuda, hip or auto); did you mean 'threads'?",
        ),
        (
            vec!["encrypt", "--cipher", "aes-265-gcm", "--key", KEY],
            1,
            "did you mean 'aes-256-gcm'?",
        ),
        (
            vec!["decrypt", "--format", "cobblestnoe", "--key", KEY],
            1,
            "did you mean 'cobblestone'?",
        ),
        (vec!["completions", "bsah"], 2, "did you mean 'bash'?"),
    ];
    for (args, status, reason) in cases {
        let output = parcrypt(&args, b"");
        assert_refused(&output, reason);
        assert_eq!(output.status.code(), Some(status), "{args:?}");
    }
    for far in [vec!["xyzzy"], raw(&["--cipher", "twofish-xts"])] {
        let output = parcrypt(&far, b"");
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("did you mean"), "{far:?}: {stderr}");
    }
}

/// `parcrypt --help` ends with the quick start, and every example in it parses.
#[test]
fn help_shows_the_quick_start() {
    let output = parcrypt(&["--help"], b"");
    process::assert_success(&output, "--help");
    let text = String::from_utf8_lossy(&output.stdout);
    let examples = text
        .split("Examples:")
        .nth(1)
        .unwrap_or_else(|| panic!("no Examples section: {text}"));
    for line in [
        "parcrypt encrypt notes.txt -o notes.txt.pc",
        "parcrypt decrypt notes.txt.pc -o notes.txt",
        "parcrypt encrypt --passphrase-file pass.txt notes.txt -o notes.txt.pc",
        "PARCRYPT_PASSPHRASE=",
        "--overwrite",
        "parcrypt completions bash",
    ] {
        assert!(examples.contains(line), "'{line}' missing from: {examples}");
    }
    for subcommand in [
        "encrypt",
        "decrypt",
        "raw encrypt",
        "raw decrypt",
        "completions",
    ] {
        let mut args: Vec<&str> = subcommand.split(' ').collect();
        args.push("--help");
        let output = parcrypt(&args, b"");
        process::assert_success(&output, subcommand);
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.contains("Examples:\n"), "{subcommand} --help: {text}");
    }
}

/// The quick start as a new user runs it, passphrase from a file and from the environment,
/// with the output replaced only when asked.
#[test]
fn the_quick_start_round_trips() {
    let folder = tempfile::tempdir().unwrap();
    let at = |name: &str| folder.path().join(name).to_str().unwrap().to_string();
    let (notes, sealed, opened, pass) = (
        at("notes.txt"),
        at("notes.txt.pc"),
        at("out.txt"),
        at("pass.txt"),
    );
    std::fs::write(&notes, b"meet at noon\n").unwrap();
    std::fs::write(&pass, b"correct horse battery staple\n").unwrap();
    let run = |args: &[&str], variable: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_parcrypt"));
        command.args(args).env_remove("PARCRYPT_PASSPHRASE");
        if let Some(value) = variable {
            command.env("PARCRYPT_PASSPHRASE", value);
        }
        process::run_with_stdin(&mut command, b"")
    };
    let low_cost = ["--kdf-memory", "8", "--kdf-passes", "1"];
    let mut encrypt = vec!["encrypt", "--passphrase-file", &pass, &notes, "-o", &sealed];
    encrypt.extend(low_cost);
    process::assert_success(&run(&encrypt, None), "encrypt");
    // The variable holds the same passphrase as the file, less its newline.
    let decrypt = ["decrypt", &sealed, "-o", &opened];
    process::assert_success(
        &run(&decrypt, Some("correct horse battery staple")),
        "decrypt, passphrase from the environment",
    );
    assert_eq!(std::fs::read(&opened).unwrap(), b"meet at noon\n");
    assert_refused(
        &run(&decrypt, Some("correct horse battery staple")),
        "already exists (use --overwrite to replace it)",
    );
    assert_refused(
        &run(
            &[&decrypt[..], &["--overwrite"]].concat(),
            Some("wrong horse"),
        ),
        "wrong key or passphrase",
    );
    assert_eq!(std::fs::read(&opened).unwrap(), b"meet at noon\n");
    let by_file = [
        "decrypt",
        "--passphrase-file",
        &pass,
        &sealed,
        "-o",
        &opened,
        "--overwrite",
    ];
    process::assert_success(&run(&by_file, None), "decrypt, passphrase from a file");
    assert_eq!(std::fs::read(&opened).unwrap(), b"meet at noon\n");
}
