//! `parcrypt encrypt|decrypt` as users and scripts meet it: round trips through files and
//! pipes with passphrases and keys, interoperable bare Cobblestone messages, random access,
//! and every refusal answered with one line, a non-zero exit, and no plaintext from a bad
//! chunk and no file left behind.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha512};

#[path = "support/engine.rs"]
mod engine;
#[path = "support/process.rs"]
mod process;

use process::names;

const KEY: &str = "000102030405060708090a0b0c0d0e0f";
/// A passphrase KDF cheap enough for tests (real files default to 64 MiB, 3 passes).
const CHEAP_KDF: [&str; 6] = ["--kdf-memory", "1", "--kdf-passes", "1", "--kdf-lanes", "1"];
const CHUNK: usize = 16384;
const SEALED_CHUNK: usize = CHUNK + 16;

fn parcrypt_with_env(args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_parcrypt"));
    command.args(args).env_remove("PARCRYPT_PASSPHRASE");
    for (name, value) in env {
        command.env(name, value);
    }
    process::run_with_stdin(&mut command, stdin)
}

fn parcrypt(args: &[&str], stdin: &[u8]) -> Output {
    parcrypt_with_env(args, stdin, &[])
}

fn assert_success(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Tests use a cheap KDF, which encryption warns about (tests/limits_cli.rs checks the
    // warnings); nothing else may be said.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr
            .lines()
            .all(|line| line.starts_with("parcrypt: warning: ")),
        "{what}: stderr not quiet: {stderr}"
    );
}

/// A refusal: non-zero exit, one line on stderr that mentions `reason`, no panic. Returns
/// stdout, which callers check separately (decryption to stdout may have streamed
/// authenticated chunks).
fn assert_refused(output: &Output, reason: &str) -> Vec<u8> {
    process::assert_refused_with(output, reason, |_| false);
    output.stdout.clone()
}

fn data(length: usize) -> Vec<u8> {
    (0..length).map(|i| ((i * 131) ^ (i >> 9)) as u8).collect()
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

struct Folder {
    folder: tempfile::TempDir,
}

impl Folder {
    fn new() -> Folder {
        Folder {
            folder: tempfile::tempdir().unwrap(),
        }
    }
    fn file(&self, name: &str) -> PathBuf {
        self.folder.path().join(name)
    }
    fn write(&self, name: &str, contents: &[u8]) -> String {
        let file = self.file(name);
        std::fs::write(&file, contents).unwrap();
        path(&file)
    }
}

#[test]
fn passphrase_round_trips_through_files_at_chunk_boundaries_across_backends() {
    let folder = Folder::new();
    let passphrase = folder.write("pass.txt", b"correct horse battery staple\n");
    for (length, encrypt_backend, decrypt_backend) in [
        (0usize, "seq", "pool"),
        (1, "pool", "seq"),
        (CHUNK - 1, "threads", "auto"),
        (CHUNK, "auto", "threads"),
        (CHUNK + 1, "pool", "pool"),
        (5 * CHUNK + 77, "seq", "threads"),
    ] {
        let plain = data(length);
        let input = folder.write("plain.bin", &plain);
        let sealed = path(&folder.file("sealed.pc"));
        let opened = path(&folder.file("opened.bin"));
        let mut args = vec![
            "encrypt",
            "--passphrase-file",
            &passphrase,
            "--backend",
            encrypt_backend,
            &input,
            "-o",
            &sealed,
        ];
        args.extend(CHEAP_KDF);
        assert_success(&parcrypt(&args, b""), "encrypt");
        let file = std::fs::read(&sealed).unwrap();
        assert_eq!(&file[..9], b"parcrypt\x01");
        assert_eq!(
            file.len(),
            40 + 56 + length + (length / CHUNK + 1) * 16,
            "{length}"
        );
        let decrypt = parcrypt(
            &[
                "decrypt",
                "--passphrase-file",
                &passphrase,
                "--backend",
                decrypt_backend,
                &sealed,
                "-o",
                &opened,
            ],
            b"",
        );
        assert_success(&decrypt, "decrypt");
        assert!(
            std::fs::read(&opened).unwrap() == plain,
            "{length} bytes: round trip differs"
        );
        std::fs::remove_file(&sealed).unwrap();
        std::fs::remove_file(&opened).unwrap();
    }
    assert_eq!(names(folder.folder.path()), ["pass.txt", "plain.bin"]);
}

#[test]
fn the_passphrase_variable_and_pipes_work_and_the_default_kdf_is_stored() {
    let plain = data(3 * CHUNK + 5);
    let env = [("PARCRYPT_PASSPHRASE", "s3cret")];
    let sealed = parcrypt_with_env(&["encrypt", "--cipher", "aes-256-gcm"], &plain, &env);
    assert_success(&sealed, "encrypt");
    let header = &sealed.stdout[..40];
    assert_eq!(header[9], 2, "AES-256-GCM");
    assert_eq!(header[10], 2, "argon2id");
    assert_eq!(
        &header[12..24],
        &[0, 1, 0, 0, 0, 0, 0, 3, 0, 0, 0, 4],
        "64 MiB, 3 passes, 4 lanes"
    );
    let opened = parcrypt_with_env(&["decrypt", "-", "-o", "-"], &sealed.stdout, &env);
    assert_success(&opened, "decrypt");
    assert!(opened.stdout == plain);
    let wrong = parcrypt_with_env(
        &["decrypt"],
        &sealed.stdout,
        &[("PARCRYPT_PASSPHRASE", "s3creT")],
    );
    assert!(assert_refused(&wrong, "wrong key or passphrase (key commitment mismatch)").is_empty());
}

#[test]
fn keys_from_the_command_line_and_files_in_both_formats() {
    let folder = Folder::new();
    let plain = data(2 * CHUNK + 100);
    let raw_key: Vec<u8> = (0..32u8).collect();
    let raw_file = folder.write("raw.key", &raw_key);
    let hex_file = folder.write(
        "hex.key",
        format!("  {}\n", hex::encode(&raw_key)).as_bytes(),
    );
    let key_hex = hex::encode(&raw_key);
    for format in ["parcrypt", "cobblestone"] {
        let sealed = parcrypt(
            &[
                "encrypt",
                "--format",
                format,
                "--key",
                &key_hex,
                "--context",
                "c0ffee",
            ],
            &plain,
        );
        assert_success(&sealed, "encrypt");
        let header = if format == "parcrypt" { 40 } else { 0 };
        assert_eq!(sealed.stdout.len(), header + 56 + plain.len() + 3 * 16);
        for key_args in [
            ["--key-file", raw_file.as_str()],
            ["--key-file", hex_file.as_str()],
            ["--key", key_hex.as_str()],
        ] {
            let opened = parcrypt(
                &[
                    "decrypt",
                    "--format",
                    format,
                    key_args[0],
                    key_args[1],
                    "--context",
                    "c0ffee",
                ],
                &sealed.stdout,
            );
            assert_success(&opened, "decrypt");
            assert!(opened.stdout == plain, "{format} {key_args:?}");
        }
        let wrong_context = parcrypt(
            &[
                "decrypt",
                "--format",
                format,
                "--key",
                &key_hex,
                "--context",
                "c0ffef",
            ],
            &sealed.stdout,
        );
        assert!(assert_refused(&wrong_context, "key commitment mismatch").is_empty());
        let wrong_key = parcrypt(
            &[
                "decrypt",
                "--format",
                format,
                "--key",
                &"11".repeat(32),
                "--context",
                "c0ffee",
            ],
            &sealed.stdout,
        );
        assert!(assert_refused(&wrong_key, "wrong key or passphrase").is_empty());
    }
    // The two formats are told apart.
    let bare = parcrypt(
        &["encrypt", "--format", "cobblestone", "--key", KEY],
        &plain,
    );
    assert_refused(
        &parcrypt(&["decrypt", "--key", KEY], &bare.stdout),
        "not a parcrypt file",
    );
    let keyed = parcrypt(&["encrypt", "--key", KEY], &plain);
    assert_refused(
        &parcrypt(&["decrypt", "--passphrase-file", &raw_file], &keyed.stdout),
        "encrypted with a key",
    );
    assert_refused(
        &parcrypt(&["decrypt"], &keyed.stdout),
        "encrypted with a key",
    );
    let locked = parcrypt_with_env(
        &["encrypt", "--kdf-memory", "1", "--kdf-passes", "1"],
        &plain,
        &[("PARCRYPT_PASSPHRASE", "pw")],
    );
    assert_refused(
        &parcrypt(&["decrypt", "--key", KEY], &locked.stdout),
        "encrypted with a passphrase",
    );
}

/// Wycheproof's vectors are made by another implementation (filippo.io/cobblestone):
/// decrypting them through the command line shows that bare Cobblestone interoperates.
#[test]
fn bare_cobblestone_interoperates_with_the_wycheproof_vectors() {
    let folder = Folder::new();
    for (file, key_bytes) in [
        ("c2sp_chunked_encryption_aes_128_gcm_test.json", 16),
        ("c2sp_chunked_encryption_aes_256_gcm_test.json", 32),
    ] {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/vectors/wycheproof")
                .join(file),
        )
        .unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut checked = 0;
        for test in json["testGroups"][0]["tests"].as_array().unwrap() {
            let key = test["key"].as_str().unwrap();
            if key.len() != 2 * key_bytes
                || test["flags"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f == "InvalidKeySize")
            {
                continue;
            }
            let mut ciphertext = Vec::new();
            flate2::read::ZlibDecoder::new(&hex::decode(test["ct"].as_str().unwrap()).unwrap()[..])
                .read_to_end(&mut ciphertext)
                .unwrap();
            let input = folder.write("vector.bin", &ciphertext);
            let context = test["ctx"].as_str().unwrap();
            let mut args = vec!["decrypt", "--format", "cobblestone", "--key", key, &input];
            if !context.is_empty() {
                args.extend(["--context", context]);
            }
            let output = parcrypt(&args, b"");
            let id = test["tcId"].as_u64().unwrap();
            if test["result"] == "valid" {
                assert_success(&output, &format!("tcId {id}"));
                assert_eq!(
                    hex::encode(Sha512::digest(&output.stdout)),
                    test["msgSha512"].as_str().unwrap(),
                    "tcId {id}"
                );
                // And our encryption of the same message decrypts back with the same key.
                let mut args = vec!["encrypt", "--format", "cobblestone", "--key", key];
                if !context.is_empty() {
                    args.extend(["--context", context]);
                }
                let sealed = parcrypt(&args, &output.stdout);
                assert_success(&sealed, "re-encrypt");
                assert_eq!(
                    sealed.stdout.len(),
                    ciphertext.len(),
                    "tcId {id}: a different length"
                );
            } else {
                let released = assert_refused(&output, "");
                let allowed = test["msgLength"].as_u64().unwrap_or(0) as usize;
                assert!(
                    released.len() <= allowed,
                    "tcId {id}: released {} bytes",
                    released.len()
                );
            }
            checked += 1;
        }
        assert!(checked >= 30, "{file}: only {checked} vectors");
    }
}

#[test]
fn damage_is_named_and_nothing_is_left_behind() {
    let folder = Folder::new();
    let plain = data(4 * CHUNK + 1000);
    let sealed = parcrypt(&["encrypt", "--key", KEY], &plain).stdout;
    let body = 40 + 56;
    let target = folder.file("out.bin");
    let cases: Vec<(Vec<u8>, &str, usize)> = vec![
        // (file, the reason given, plaintext bytes that may reach stdout)
        (
            {
                let mut s = sealed.clone();
                s[body + 2 * SEALED_CHUNK + 10] ^= 1;
                s
            },
            "chunk 2 ",
            2 * CHUNK,
        ),
        (
            {
                let mut s = sealed.clone();
                s[body + SEALED_CHUNK - 1] ^= 1;
                s
            },
            "chunk 0 ",
            0,
        ),
        (
            {
                let mut s = sealed.clone();
                let n = s.len();
                s[n - 1] ^= 0x80;
                s
            },
            "chunk 4 ",
            4 * CHUNK,
        ),
        (
            {
                let mut s = sealed.clone();
                s[50] ^= 1;
                s
            },
            "key commitment mismatch",
            0,
        ),
        (
            {
                let mut s = sealed.clone();
                s[12] ^= 1;
                s
            },
            "damaged header",
            0,
        ),
        (
            sealed[..body + 3 * SEALED_CHUNK].to_vec(),
            "truncated after chunk 2",
            3 * CHUNK,
        ),
        (
            sealed[..body + 3 * SEALED_CHUNK + 7].to_vec(),
            "truncated after chunk 2",
            3 * CHUNK,
        ),
        (sealed[..body].to_vec(), "truncated after the header", 0),
        (sealed[..60].to_vec(), "truncated", 0),
        (
            [sealed.clone(), vec![0u8; 3]].concat(),
            "chunk 4 ",
            4 * CHUNK,
        ),
        (
            {
                let mut s = sealed[..body].to_vec();
                s.extend_from_slice(&sealed[body + SEALED_CHUNK..body + 2 * SEALED_CHUNK]);
                s.extend_from_slice(&sealed[body..body + SEALED_CHUNK]);
                s.extend_from_slice(&sealed[body + 2 * SEALED_CHUNK..]);
                s
            },
            "chunk 0 ",
            0,
        ),
        (
            b"hello, I am a text file".to_vec(),
            "not a parcrypt file",
            0,
        ),
        (Vec::new(), "not a parcrypt file", 0),
    ];
    for (file, reason, allowed) in cases {
        let input = folder.write("in.pc", &file);
        let to_file = parcrypt(
            &["decrypt", "--key", KEY, &input, "-o", &path(&target)],
            b"",
        );
        assert!(assert_refused(&to_file, reason).is_empty(), "{reason}");
        assert!(
            !target.exists(),
            "{reason}: output file left after a failed decryption"
        );
        assert_eq!(
            names(folder.folder.path()),
            ["in.pc"],
            "{reason}: temporary files left behind"
        );
        // To stdout: authenticated chunks may stream out, never a byte of a bad chunk.
        let to_stdout = parcrypt(&["decrypt", "--key", KEY, "-q"], &file);
        let released = assert_refused(&to_stdout, reason);
        assert!(
            released.len() <= allowed,
            "{reason}: released {} bytes, allowed {allowed}",
            released.len()
        );
        assert!(released == plain[..released.len()], "{reason}");
    }
}

#[test]
fn outputs_are_never_clobbered_and_the_input_is_never_the_output() {
    let folder = Folder::new();
    let plain = data(50_000);
    let input = folder.write("plain.bin", &plain);
    let existing = folder.write("existing.pc", b"keep me");
    let refused = parcrypt(&["encrypt", "--key", KEY, &input, "-o", &existing], b"");
    assert_refused(&refused, "already exists (use --overwrite");
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep me");
    assert_refused(
        &parcrypt(
            &["encrypt", "--key", KEY, "--force", &input, "-o", &input],
            b"",
        ),
        "is the input file",
    );
    assert_eq!(std::fs::read(&input).unwrap(), plain);
    assert_success(
        &parcrypt(
            &["encrypt", "--key", KEY, "--force", &input, "-o", &existing],
            b"",
        ),
        "forced",
    );
    let opened = parcrypt(&["decrypt", "--key", KEY, &existing], b"");
    assert_success(&opened, "decrypt");
    assert!(opened.stdout == plain);
    // A failed decryption with --force keeps the old file.
    let damaged = {
        let mut s = std::fs::read(&existing).unwrap();
        s[200] ^= 1;
        s
    };
    let damaged = folder.write("damaged.pc", &damaged);
    let keep = folder.write("keep.bin", b"old contents");
    assert_refused(
        &parcrypt(
            &["decrypt", "--key", KEY, "--force", &damaged, "-o", &keep],
            b"",
        ),
        "chunk 0 ",
    );
    assert_eq!(std::fs::read(&keep).unwrap(), b"old contents");
    assert_eq!(
        names(folder.folder.path()),
        ["damaged.pc", "existing.pc", "keep.bin", "plain.bin"]
    );
}

#[test]
fn ranges_decrypt_only_what_was_asked() {
    let folder = Folder::new();
    let plain = data(7 * CHUNK + 321);
    let sealed = parcrypt(&["encrypt", "--key", KEY], &plain).stdout;
    let input = folder.write("in.pc", &sealed);
    let length = plain.len();
    for (range, start, end) in [
        ("0:100", 0, 100),
        ("16380:16390", 16380, 16390),
        ("-500:", length - 500, length),
        (":-1", 0, length - 1),
        ("40000:", 40000, length),
        ("1K:2K", 1024, 2048),
        ("100:50", 100, 100),
        ("0:999999999", 0, length),
    ] {
        let output = parcrypt(&["decrypt", "--key", KEY, "--range", range, &input], b"");
        assert_success(&output, range);
        assert!(output.stdout == plain[start..end], "{range}");
    }
    // The end is authenticated before a range relative to it is served.
    let mut damaged = sealed.clone();
    let last = damaged.len() - 5;
    damaged[last] ^= 1;
    let input = folder.write("damaged.pc", &damaged);
    assert!(assert_refused(
        &parcrypt(&["decrypt", "--key", KEY, "--range", "-10:", &input], b""),
        "chunk 7 "
    )
    .is_empty());
    let middle = parcrypt(
        &["decrypt", "--key", KEY, "--range", "20000:30000", &input],
        b"",
    );
    assert_success(&middle, "middle of a file with a damaged end");
    assert!(middle.stdout == plain[20000..30000]);
    assert_refused(
        &parcrypt(&["decrypt", "--key", KEY, "--range", "0:10"], &sealed),
        "needs an input file",
    );
    assert_refused(
        &parcrypt(&["decrypt", "--key", KEY, "--range", "ten:20", &input], b""),
        "bad range",
    );
}

#[test]
fn ranges_over_many_chunks_are_the_same_on_every_backend() {
    let folder = Folder::new();
    let plain = data(5 * 1024 * 1024 + 777);
    let sealed = parcrypt(&["encrypt", "--key", KEY, "-q"], &plain);
    assert_success(&sealed, "encrypt");
    let input = folder.write("big.pc", &sealed.stdout);
    let length = plain.len();
    let mib = 1024 * 1024;
    let mut ranges: Vec<(String, usize, usize)> = vec![
        (":".into(), 0, length),
        (format!("0:{length}"), 0, length),
        ("0:0".into(), 0, 0),
        (format!("{length}:"), length, length),
        ("-1:".into(), length - 1, length),
        ("-3M:-1M".into(), length - 3 * mib, length - mib),
        (":-100000".into(), 0, length - 100_000),
        ("99999999:".into(), length, length),
    ];
    for (start, end) in [
        (CHUNK - 1, CHUNK + 1),
        (7 * CHUNK + 5, 90 * CHUNK - 5),
        (mib - 7, 4 * mib + 9),
        (1, length - 1),
    ] {
        ranges.push((format!("{start}:{end}"), start, end));
    }
    // The backends this machine has (OpenCL is required in CI), each with its default
    // threads: pool spreads a range's chunks over every core.
    let backends: Vec<&str> = engine::all_engines()
        .iter()
        .map(|engine| engine.backend().name())
        .collect();
    // Decrypts `range` of the input on `backend`, `extra` options after the input.
    let decrypt_range = |backend: &str, range: &str, extra: &[&str]| {
        let mut args = vec![
            "decrypt",
            "--key",
            KEY,
            "-q",
            "--backend",
            backend,
            "--range",
            range,
            &input,
        ];
        args.extend(extra);
        parcrypt(&args, b"")
    };
    for backend in &backends {
        for (range, start, end) in &ranges {
            let output = decrypt_range(backend, range, &[]);
            assert_success(&output, &format!("--backend {backend} --range {range}"));
            assert!(
                output.stdout == plain[*start..*end],
                "--backend {backend} --range {range}: wrong bytes"
            );
        }
        // To a file, as the whole message.
        let target = folder.file("range.bin");
        let to_file = decrypt_range(backend, "1:", &["-o", &path(&target)]);
        assert_success(&to_file, backend);
        assert!(
            std::fs::read(&target).unwrap() == plain[1..],
            "--backend {backend}: the file differs"
        );
        std::fs::remove_file(&target).unwrap();
    }
    assert!(backends.contains(&"seq") && backends.contains(&"pool"));
}

#[test]
fn bad_arguments_get_one_line_and_a_non_zero_exit() {
    let folder = Folder::new();
    let empty = folder.write("empty.txt", b"\n");
    let short_key = folder.write("short.key", b"0123");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["encrypt", "--format", "cobblestone"], "needs --key"),
        (vec!["decrypt", "--format", "cobblestone"], "needs --key"),
        (
            vec!["encrypt", "--format", "zip", "--key", KEY],
            "unknown format",
        ),
        (
            vec!["encrypt", "--key", "0011"],
            "16 bytes (aes-128) or 32 bytes",
        ),
        (vec!["encrypt", "--key", "zz"], "not valid hex"),
        (
            vec!["encrypt", "--key", KEY, "--context", "abc"],
            "odd number",
        ),
        (
            vec!["encrypt", "--key", KEY, "--cipher", "aes-256-gcm"],
            "needs a 32-byte key",
        ),
        (
            vec!["encrypt", "--key", KEY, "--cipher", "rc6-128-gcm"],
            "unknown --cipher",
        ),
        (vec!["encrypt", "--key", KEY, "--backend", "cuda"], "cuda"),
        (
            vec!["encrypt", "--key", KEY, "--threads", "0"],
            "at least 1",
        ),
        (vec!["encrypt", "--passphrase-file", &empty], "is empty"),
        (
            vec!["encrypt", "--passphrase-file", "/nonexistent/pass"],
            "cannot read passphrase file",
        ),
        (
            vec!["encrypt", "--key-file", &short_key],
            "must hold 16 or 32 bytes",
        ),
        (
            vec!["encrypt", "--passphrase-file", &empty, "--kdf-memory", "0"],
            "argon2id parameters out of range",
        ),
        (
            vec![
                "encrypt",
                "--passphrase-file",
                &empty,
                "--kdf-passes",
                "1000",
            ],
            "argon2id parameters out of range",
        ),
        (
            vec!["encrypt", "--key", KEY, "--passphrase-file", &empty],
            "cannot be used with",
        ),
        (
            vec!["encrypt", "--key", KEY, "/nonexistent/input"],
            "cannot open input",
        ),
    ];
    for (args, reason) in cases {
        let output = parcrypt(&args, b"data");
        assert!(assert_refused(&output, reason).is_empty(), "{args:?}");
    }
    // Without any secret and no terminal to ask on, encryption refuses (skipped when this
    // test runs on a terminal, where it would wait for the prompt).
    if std::fs::File::open("/dev/tty").is_err() {
        assert_refused(&parcrypt(&["encrypt"], b"data"), "no passphrase");
    }
}

#[test]
fn stats_say_where_the_time_went_in_one_line_and_change_no_byte() {
    const KEY: &str = "000102030405060708090a0b0c0d0e0f";
    let cobblestone_with_stats = |direction| {
        [
            direction,
            "--format",
            "cobblestone",
            "--key",
            KEY,
            "--stats",
        ]
    };
    let message = data(3 * 16384 + 77);
    let sealed = parcrypt(&cobblestone_with_stats("encrypt"), &message);
    assert!(
        sealed.status.success(),
        "{}",
        String::from_utf8_lossy(&sealed.stderr)
    );
    let stderr = String::from_utf8_lossy(&sealed.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    for part in [
        &format!("encrypted {} bytes", message.len()),
        "busy: read",
        "write",
        "GB/s",
    ] {
        assert!(stderr.contains(part), "'{part}' not in: {stderr}");
    }
    // The same message without --stats opens to the same plaintext; stats add nothing to stdout.
    let opened = parcrypt(&cobblestone_with_stats("decrypt"), &sealed.stdout);
    assert!(opened.status.success());
    assert!(opened.stdout == message);
    assert!(String::from_utf8_lossy(&opened.stderr)
        .contains(&format!("decrypted {} bytes", message.len())));
    let quiet = parcrypt(
        &["decrypt", "--format", "cobblestone", "--key", KEY],
        &sealed.stdout,
    );
    assert_success(&quiet, "decrypt without --stats");
    // A failed run reports the failure, not statistics.
    let mut damaged = sealed.stdout.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    let refused = parcrypt(&cobblestone_with_stats("decrypt"), &damaged);
    assert_refused(&refused, "chunk");
}
