//! Bounded inputs, as a careless or hostile user meets them through `parcrypt`: endless or
//! huge secret files, absurd `--threads`, file headers that ask argon2id for gigabytes and
//! minutes, and the warnings encryption gives for cheap key derivation and short
//! passphrases. Memory bounds are proved by running the child under an address-space limit
//! (`prlimit --as`) far below what the unbounded work would take.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[path = "support/process.rs"]
mod process;

use process::{assert_refused_with, assert_success, names};

const KEY: &str = "000102030405060708090a0b0c0d0e0f";
const PASSPHRASE: &str = "correct horse battery staple";
/// A passphrase KDF cheap enough for tests (warned about when encrypting).
const CHEAP_KDF: [&str; 6] = ["--kdf-memory", "1", "--kdf-passes", "1", "--kdf-lanes", "1"];
/// The address space the children may use where memory must stay bounded: far below the
/// gigabytes an unbounded read or a hostile header would take.
const ADDRESS_SPACE: &str = "--as=1073741824";
/// The cap on key and passphrase files.
const CAP: usize = 64 * 1024;

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_parcrypt")
}

fn parcrypt(args: &[&str]) -> Output {
    let mut command = Command::new(binary());
    command.args(args).env_remove("PARCRYPT_PASSPHRASE");
    process::run_with_stdin(&mut command, b"")
}

/// `parcrypt args` under an address-space limit of [`ADDRESS_SPACE`].
fn parcrypt_bounded(args: &[&str]) -> Output {
    let mut command = Command::new("prlimit");
    command
        .arg(ADDRESS_SPACE)
        .arg("--")
        .arg(binary())
        .args(args)
        .env_remove("PARCRYPT_PASSPHRASE");
    process::run_with_stdin(&mut command, b"")
}

fn assert_refused(output: &Output, reason: &str) {
    assert_refused_with(output, reason, |_| false);
    assert_eq!(output.status.code(), Some(1));
}

fn warnings(output: &Output) -> Vec<String> {
    process::stderr_lines(output, |line| line.starts_with("parcrypt: warning: "))
}

/// `COMMAND OPTIONS --passphrase-file PASSPHRASE INPUT -o OUTPUT`.
fn with_passphrase<'a>(
    command: &'a str,
    options: &[&'a str],
    passphrase: &'a str,
    input: &'a str,
    output: &'a str,
) -> Vec<&'a str> {
    let mut args = vec![command];
    args.extend(options);
    args.extend(["--passphrase-file", passphrase, input, "-o", output]);
    args
}

struct Folder(tempfile::TempDir);

impl Folder {
    fn new() -> Folder {
        Folder(tempfile::tempdir().unwrap())
    }
    fn file(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
    fn write(&self, name: &str, contents: &[u8]) -> String {
        let path = self.file(name);
        std::fs::write(&path, contents).unwrap();
        text(&path)
    }
}

fn text(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

#[test]
fn endless_secret_files_are_refused_in_bounded_memory() {
    let folder = Folder::new();
    let input = folder.write("plain.bin", b"attack at dawn");
    let output = text(&folder.file("sealed.pc"));
    for option in ["--passphrase-file", "--key-file"] {
        let refused = parcrypt_bounded(&["encrypt", option, "/dev/zero", &input, "-o", &output]);
        assert_refused(&refused, "larger than 64 KiB");
        assert!(
            String::from_utf8_lossy(&refused.stderr).contains("/dev/zero"),
            "the file is named"
        );
        let refused = parcrypt_bounded(&["decrypt", option, "/dev/zero", &input, "-o", &output]);
        assert_refused_with(&refused, "", |_| false);
    }
    // A pipe whose writer never stops (`yes`), read as a FIFO through /dev/stdin.
    for option in ["--passphrase-file", "--key-file"] {
        let script = format!(
            "yes | prlimit {ADDRESS_SPACE} -- \"$0\" encrypt {option} /dev/stdin \"$1\" -o \"$2\""
        );
        let endless = Command::new("sh")
            .args(["-c", &script, binary(), &input, &output])
            .env_remove("PARCRYPT_PASSPHRASE")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_refused(&endless, "larger than 64 KiB");
    }
    assert_eq!(names(folder.0.path()), ["plain.bin"]);
}

#[test]
fn secret_files_are_capped_at_64_kib() {
    let folder = Folder::new();
    let plain = b"the cap is 64 KiB".repeat(1000);
    let input = folder.write("plain.bin", &plain);
    let sealed = text(&folder.file("sealed.pc"));
    let opened = text(&folder.file("opened.bin"));

    let oversized = folder.write("oversized", &vec![b'a'; CAP + 1]);
    for option in ["--passphrase-file", "--key-file"] {
        let refused = parcrypt(&["encrypt", option, &oversized, &input, "-o", &sealed]);
        assert_refused(&refused, "larger than 64 KiB");
    }

    // The longest passphrase that fits: 64 KiB less one byte, and its newline.
    let mut longest = vec![b'p'; CAP - 1];
    longest.push(b'\n');
    let passphrase = folder.write("longest", &longest);
    let args = with_passphrase("encrypt", &CHEAP_KDF, &passphrase, &input, &sealed);
    assert_success(&parcrypt(&args), "encrypt with a 64 KiB - 1 passphrase");
    let decrypted = parcrypt(&with_passphrase(
        "decrypt",
        &[],
        &passphrase,
        &sealed,
        &opened,
    ));
    assert_success(&decrypted, "decrypt with a 64 KiB - 1 passphrase");
    assert_eq!(std::fs::read(&opened).unwrap(), plain);
}

#[test]
fn absurd_thread_counts_are_refused_with_one_line() {
    let folder = Folder::new();
    let input = folder.write("plain.bin", b"attack at dawn");
    let sealed = text(&folder.file("sealed.pc"));
    assert_success(
        &parcrypt(&["encrypt", "--key", KEY, &input, "-o", &sealed]),
        "encrypt",
    );
    let output = text(&folder.file("out.bin"));
    for command in ["encrypt", "decrypt"] {
        let source = if command == "encrypt" {
            &input
        } else {
            &sealed
        };
        for (threads, reason) in [
            ("100000", "--threads 100000 is too many"),
            ("0", "--threads must be at least 1"),
            (
                "18446744073709551616",
                "--threads 18446744073709551616 is too many",
            ),
            ("many", "not a number of threads"),
        ] {
            for backend in ["threads", "pool", "auto", "seq"] {
                let refused = parcrypt(&[
                    command,
                    "--key",
                    KEY,
                    "--backend",
                    backend,
                    "--threads",
                    threads,
                    source,
                    "-o",
                    &output,
                ]);
                assert_refused(&refused, reason);
            }
        }
    }
    assert_eq!(names(folder.0.path()), ["plain.bin", "sealed.pc"]);
    // The cap leaves room: 64 threads are always allowed.
    let opened = parcrypt(&[
        "decrypt",
        "--key",
        KEY,
        "--backend",
        "pool",
        "--threads",
        "64",
        &sealed,
        "-o",
        &output,
    ]);
    assert_success(&opened, "decrypt on 64 threads");
    assert_eq!(std::fs::read(&output).unwrap(), b"attack at dawn");
}

/// A passphrase file with a cheap KDF whose header's argon2id fields (bytes 12..24: memory
/// in KiB, passes, lanes, big-endian; docs/FORMAT.md) are then rewritten. The header is
/// bound into the key derivation, so such a file can never decrypt; the point is how soon
/// and how cheaply the reader says no.
fn crafted(folder: &Folder, name: &str, memory_kib: u32, passes: u32, lanes: u32) -> String {
    let input = folder.write("plain.bin", b"attack at dawn");
    let passphrase = folder.write("passphrase", PASSPHRASE.as_bytes());
    let sealed = text(&folder.file("cheap.pc"));
    let options = [&CHEAP_KDF[..], &["--force"]].concat();
    let args = with_passphrase("encrypt", &options, &passphrase, &input, &sealed);
    assert_success(&parcrypt(&args), "encrypt");
    let mut file = std::fs::read(&sealed).unwrap();
    file[12..16].copy_from_slice(&memory_kib.to_be_bytes());
    file[16..20].copy_from_slice(&passes.to_be_bytes());
    file[20..24].copy_from_slice(&lanes.to_be_bytes());
    folder.write(name, &file)
}

#[test]
fn hostile_kdf_headers_are_refused_before_any_work() {
    let folder = Folder::new();
    let passphrase = folder.write("passphrase", PASSPHRASE.as_bytes());
    let output = text(&folder.file("opened.bin"));
    for (memory_kib, passes, lanes, option) in [
        (4 << 20, 1, 1, "--kdf-max-memory 4096"),
        (1024, 100, 1, "--kdf-max-passes 100"),
        (1024, 1, 64, "--kdf-max-lanes 64"),
        // Every cost at the format's limits: 4 GiB, 100 passes, 64 lanes.
        (4 << 20, 100, 64, "--kdf-max-memory 4096"),
    ] {
        let hostile = crafted(&folder, "hostile.pc", memory_kib, passes, lanes);
        // Under a 1 GiB address space: a 4 GiB allocation could not even be tried.
        let decrypt = |passphrase| with_passphrase("decrypt", &[], passphrase, &hostile, &output);
        let refused = parcrypt_bounded(&decrypt(&passphrase));
        assert_refused(&refused, option);
        assert_refused(&refused, "budget");
        // Refused before the passphrase is even looked for.
        let refused = parcrypt_bounded(&decrypt("/nonexistent/passphrase"));
        assert_refused(&refused, option);
        assert!(!folder.file("opened.bin").exists());
    }
}

#[test]
fn a_raised_budget_lets_key_derivation_run() {
    let folder = Folder::new();
    let passphrase = folder.write("passphrase", PASSPHRASE.as_bytes());
    let output = text(&folder.file("opened.bin"));
    // 300 MiB, one pass: over the default budget of 256 MiB.
    let moderate = crafted(&folder, "moderate.pc", 300 * 1024, 1, 1);
    let decrypt = |options| with_passphrase("decrypt", options, &passphrase, &moderate, &output);
    let refused = parcrypt(&decrypt(&[]));
    assert_refused(&refused, "--kdf-max-memory 300");
    // Allowed, argon2id runs (in 300 MiB, within the 1 GiB limit) and the rewritten header
    // then fails the key commitment, as every changed header byte does.
    let derived = parcrypt_bounded(&decrypt(&["--kdf-max-memory", "8192"]));
    assert_refused(&derived, "wrong key or passphrase");
    // Passes and lanes are raised the same way.
    let many = crafted(&folder, "many.pc", 64 * 20, 13, 20);
    let refused = parcrypt(&["decrypt", "--passphrase-file", &passphrase, &many]);
    assert_refused(&refused, "--kdf-max-passes 13");
    let refused = parcrypt(&[
        "decrypt",
        "--kdf-max-passes",
        "13",
        "--passphrase-file",
        &passphrase,
        &many,
    ]);
    assert_refused(&refused, "--kdf-max-lanes 20");
    let derived = parcrypt(&[
        "decrypt",
        "--kdf-max-passes",
        "13",
        "--kdf-max-lanes",
        "20",
        "--passphrase-file",
        &passphrase,
        &many,
    ]);
    assert_refused(&derived, "wrong key or passphrase");
    // The unchanged file decrypts under the default budget.
    let sealed = text(&folder.file("cheap.pc"));
    let opened = parcrypt(&["decrypt", "--passphrase-file", &passphrase, &sealed]);
    assert_success(&opened, "decrypt");
    assert_eq!(opened.stdout, b"attack at dawn");
}

#[test]
fn encryption_warns_about_cheap_kdfs_and_short_passphrases_only() {
    let folder = Folder::new();
    let input = folder.write("plain.bin", b"attack at dawn");
    let sealed = text(&folder.file("sealed.pc"));
    let good = folder.write("good", PASSPHRASE.as_bytes());
    let short = folder.write("short", b"abc\n");
    let encrypt = |passphrase: &str, extra: &[&str]| {
        let options = [extra, &["--force"]].concat();
        let output = parcrypt(&with_passphrase(
            "encrypt", &options, passphrase, &input, &sealed,
        ));
        assert_success(&output, "encrypt");
        warnings(&output)
    };

    // Defaults (64 MiB, 3 passes) and a long passphrase: not a word.
    let defaults = encrypt(&good, &[]);
    assert!(defaults.is_empty(), "{defaults:?}");
    let quiet = parcrypt(&["decrypt", "--passphrase-file", &good, &sealed]);
    assert_success(&quiet, "decrypt");
    assert!(quiet.stderr.is_empty());

    let cheap = encrypt(&good, &["--kdf-memory", "1"]);
    assert_eq!(cheap.len(), 1, "{cheap:?}");
    assert!(cheap[0].contains("1024 KiB") && cheap[0].contains("OWASP"));

    let one_pass = encrypt(&good, &["--kdf-memory", "19", "--kdf-passes", "1"]);
    assert_eq!(one_pass.len(), 1, "{one_pass:?}");

    let brief = encrypt(&short, &[]);
    assert_eq!(brief.len(), 1, "{brief:?}");
    assert!(brief[0].contains("only 3 bytes"), "{brief:?}");

    let both = encrypt(&short, &CHEAP_KDF);
    assert_eq!(both.len(), 2, "{both:?}");

    // Costs a reader's default budget refuses: said when writing, with the option.
    let costly = encrypt(&good, &["--kdf-memory", "300", "--kdf-passes", "1"]);
    assert_eq!(costly.len(), 1, "{costly:?}");
    assert!(costly[0].contains("--kdf-max-memory 300"), "{costly:?}");

    // Keys have no KDF and no passphrase: nothing to warn about.
    let keyed = parcrypt(&["encrypt", "--key", KEY, &input, "-o", &sealed, "--force"]);
    assert_success(&keyed, "encrypt with a key");
    assert!(keyed.stderr.is_empty());

    // An empty passphrase stays refused, and argon2 cannot run under 8 KiB per lane.
    let empty = folder.write("empty", b"\n");
    // (The output is new: an existing one would be refused first, before any secret.)
    let unsealed = text(&folder.file("never.pc"));
    let refused = parcrypt(&with_passphrase("encrypt", &[], &empty, &input, &unsealed));
    assert_refused(&refused, "is empty");
    let refused = parcrypt(&with_passphrase(
        "encrypt",
        &["--kdf-memory", "0"],
        &good,
        &input,
        &sealed,
    ));
    assert_refused(&refused, "memory");
}

#[test]
fn a_damaged_final_chunk_names_its_real_range() {
    let folder = Folder::new();
    let plain = vec![7u8; 40_000];
    let input = folder.write("plain.bin", &plain);
    let sealed = text(&folder.file("sealed.pc"));
    assert_success(
        &parcrypt(&["encrypt", "--key", KEY, &input, "-o", &sealed]),
        "encrypt",
    );
    let mut file = std::fs::read(&sealed).unwrap();
    let last = file.len() - 5;
    file[last] ^= 1;
    let damaged = folder.write("damaged.pc", &file);
    // Chunks 0 and 1 hold 32768 bytes; the final chunk 2 holds the last 7232.
    let refused = parcrypt(&["decrypt", "--key", KEY, &damaged]);
    assert_refused(&refused, "chunk 2 (plaintext bytes 32768..40000)");
    let refused = parcrypt(&["decrypt", "--key", KEY, "--range", "-10:", &damaged]);
    assert_refused(&refused, "chunk 2 (plaintext bytes 32768..40000)");
}
