//! `parcrypt keygen`, `encrypt --format age` and `decrypt -i`: identity files made 0600 and
//! never replaced, round trips for every recipient type, armored and not, several recipients,
//! a recipients file, a passphrase, `--range`, and the refusals: each one line, a non-zero
//! exit, and no output file left behind.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::PermissionsExt;

#[path = "support/keys.rs"]
mod keys;
#[path = "support/process.rs"]
mod process;

use keys::{assert_refused, data, folder, keygen, parcrypt, run};
use process::{assert_success, file_in};

#[test]
fn keygen_writes_a_private_identity_file_once() {
    let (_dir, folder) = folder();
    for (name, pq, prefix) in [("x.txt", false, "age1"), ("pq.txt", true, "age1pq1")] {
        let recipient = keygen(&folder, name, pq);
        assert!(recipient.starts_with(prefix), "{recipient}");
        let path = folder.join(name);
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("# created: "));
        assert_eq!(lines[1], format!("# public key: {recipient}"));
        let secret = if pq {
            "AGE-SECRET-KEY-PQ-1"
        } else {
            "AGE-SECRET-KEY-1"
        };
        assert!(lines[2].starts_with(secret));
        // Never replaced.
        let again = run(&folder, &["keygen", "-o", name]);
        assert_eq!(again.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }
    // To stdout: the file, and the recipient on stderr when stdout is not a terminal.
    let output = run(&folder, &["keygen"]);
    assert_success(&output, "keygen to stdout");
    let text = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    let public = text
        .lines()
        .nth(1)
        .unwrap()
        .strip_prefix("# public key: ")
        .unwrap();
    assert_eq!(stderr.trim(), format!("Public key: {public}"));
}

#[test]
fn round_trips_for_every_recipient_type() {
    let (_dir, folder) = folder();
    let x1 = keygen(&folder, "x1.txt", false);
    let x2 = keygen(&folder, "x2.txt", false);
    let pq = keygen(&folder, "pq.txt", true);
    file_in(&folder, "recipients.txt", format!("# two\n{x1}\n\n{x2}\n"));
    file_in(&folder, "pass.txt", "correct horse\n");
    for len in [0, 1, 65_535, 65_536, 65_537, 1 << 20] {
        file_in(&folder, "plain", data(len));
        let cases: [(&[&str], &[&str]); 5] = [
            (&["-r", &x1], &["-i", "x1.txt"]),
            (&["-r", &x1, "-r", &x2], &["-i", "pq.txt", "-i", "x2.txt"]),
            (&["-R", "recipients.txt", "-a"], &["-i", "x2.txt"]),
            (&["-r", &pq, "-a"], &["-i", "pq.txt"]),
            (
                &["-p", "--passphrase-file", "pass.txt"],
                &["--passphrase-file", "pass.txt"],
            ),
        ];
        for (encrypt, decrypt) in cases {
            // scrypt at its default work factor takes a while: two sizes are enough.
            if encrypt[0] == "-p" && ![1, 65_537].contains(&len) {
                continue;
            }
            let mut args = vec![
                "encrypt",
                "--format",
                "age",
                "plain",
                "-o",
                "sealed",
                "--overwrite",
            ];
            args.extend_from_slice(encrypt);
            assert_success(&run(&folder, &args), &args.join(" "));
            let sealed = fs::read(folder.join("sealed")).unwrap();
            let armored = encrypt.contains(&"-a");
            let start: &[u8] = if armored {
                b"-----BEGIN AGE ENCRYPTED FILE-----\n"
            } else {
                b"age-encryption.org/v1\n"
            };
            assert!(sealed.starts_with(start));
            let mut args = vec!["decrypt", "sealed", "-o", "opened", "--overwrite"];
            args.extend_from_slice(decrypt);
            assert_success(&run(&folder, &args), &args.join(" "));
            assert_eq!(
                fs::read(folder.join("opened")).unwrap(),
                data(len),
                "{len} {encrypt:?}"
            );
        }
    }
    // --range reads a part of a binary age file.
    file_in(&folder, "plain", data(300_000));
    assert_success(
        &run(
            &folder,
            &[
                "encrypt", "--format", "age", "-r", &x1, "plain", "-o", "big.age",
            ],
        ),
        "encrypt",
    );
    assert_success(
        &run(
            &folder,
            &[
                "decrypt",
                "-i",
                "x1.txt",
                "--range",
                "100000:200001",
                "big.age",
                "-o",
                "part",
            ],
        ),
        "range",
    );
    assert_eq!(
        fs::read(folder.join("part")).unwrap(),
        data(300_000)[100_000..200_001]
    );
    // Through pipes.
    let output = parcrypt()
        .current_dir(&folder)
        .args(["decrypt", "-i", "x1.txt"])
        .stdin(fs::File::open(folder.join("big.age")).unwrap())
        .output()
        .unwrap();
    assert_success(&output, "decrypt from stdin");
    assert_eq!(output.stdout, data(300_000));
}

#[test]
fn refusals_are_one_line_and_leave_nothing() {
    let (_dir, folder) = folder();
    let x1 = keygen(&folder, "x1.txt", false);
    let _x2 = keygen(&folder, "x2.txt", false);
    let pq = keygen(&folder, "pq.txt", true);
    file_in(&folder, "plain", data(200_000));
    file_in(&folder, "pass.txt", "pw\n");
    file_in(&folder, "notkey.txt", "hello\n");
    fs::set_permissions(folder.join("notkey.txt"), fs::Permissions::from_mode(0o600)).unwrap();
    assert_success(
        &run(
            &folder,
            &[
                "encrypt", "--format", "age", "-r", &x1, "plain", "-o", "sealed",
            ],
        ),
        "encrypt",
    );
    let sealed = fs::read(folder.join("sealed")).unwrap();

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["decrypt", "-i", "x2.txt", "sealed", "-o", "out"],
            "no identity matches",
        ),
        (
            vec!["decrypt", "sealed", "-o", "out"],
            "give -i IDENTITY_FILE",
        ),
        (
            vec!["decrypt", "-i", "missing.txt", "sealed", "-o", "out"],
            "cannot open identity file",
        ),
        (
            vec!["decrypt", "-i", "notkey.txt", "sealed", "-o", "out"],
            "-i notkey.txt: invalid key: line 1: not an age identity",
        ),
        (
            vec![
                "decrypt",
                "--key",
                "000102030405060708090a0b0c0d0e0f",
                "sealed",
                "-o",
                "out",
            ],
            "this is an age file",
        ),
        (
            vec!["encrypt", "--format", "age", "plain", "-o", "out"],
            "needs recipients",
        ),
        (
            vec![
                "encrypt",
                "--format",
                "age",
                "-r",
                "age1notakey",
                "plain",
                "-o",
                "out",
            ],
            "-r: invalid key",
        ),
        (
            vec![
                "encrypt", "--format", "age", "-r", &x1, "-r", &pq, "plain", "-o", "out",
            ],
            "cannot be mixed",
        ),
        (
            vec![
                "encrypt",
                "--format",
                "age",
                "-r",
                &x1,
                "-p",
                "--passphrase-file",
                "pass.txt",
                "plain",
                "-o",
                "out",
            ],
            "only recipient",
        ),
        (
            vec!["encrypt", "-r", &x1, "-a", "plain", "-o", "out"],
            "options of --format age",
        ),
        (
            vec![
                "encrypt",
                "--format",
                "age",
                "-R",
                "missing.txt",
                "plain",
                "-o",
                "out",
            ],
            "-R missing.txt",
        ),
        (
            vec![
                "encrypt", "--format", "age", "-r", &x1, "plain", "-o", "sealed",
            ],
            "already exists",
        ),
    ];
    for (args, reason) in cases {
        let output = run(&folder, &args);
        let target = if args.contains(&"sealed") && args[0] == "encrypt" {
            "nothing"
        } else {
            "out"
        };
        assert_refused(&output, reason, &folder, target);
    }

    // Damage anywhere: the header, a stanza, the MAC, the payload, the length.
    let header_end = sealed.windows(4).position(|w| w == b"--- ").unwrap();
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("stanza", {
            let mut d = sealed.clone();
            d[30] ^= 1;
            d
        }),
        ("mac", {
            let mut d = sealed.clone();
            d[header_end + 10] ^= 1;
            d
        }),
        ("payload", {
            let mut d = sealed.clone();
            d[header_end + 200] ^= 1;
            d
        }),
        ("truncated", sealed[..sealed.len() - 100].to_vec()),
        ("trailing", [sealed.as_slice(), b"x"].concat()),
    ];
    for (what, bytes) in damaged {
        file_in(&folder, "damaged", bytes);
        let output = run(
            &folder,
            &["decrypt", "-i", "x1.txt", "damaged", "-o", "out"],
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{what}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{what}: {stderr}");
        assert!(!folder.join("out").exists(), "{what}: output left behind");
    }

    // An identity file others can read is used, with a warning.
    fs::set_permissions(folder.join("x1.txt"), fs::Permissions::from_mode(0o644)).unwrap();
    let output = run(&folder, &["decrypt", "-i", "x1.txt", "sealed", "-o", "out"]);
    assert_success(&output, "decrypt");
    assert!(String::from_utf8_lossy(&output.stderr).contains("can be read by other users"));
}

#[test]
fn threads_and_backends_choose_where_the_payload_runs() {
    let (_dir, folder) = folder();
    let recipient = keygen(&folder, "x.txt", false);
    let plain = data(3 << 20 | 5);
    file_in(&folder, "plain", &plain);
    // One thread (seq, --threads 1) and two make the same plaintext come back.
    for (encrypt, decrypt) in [
        (["--backend", "seq"], ["--threads", "2"]),
        (["--threads", "1"], ["--backend", "seq"]),
        (["--threads", "2"], ["--backend", "pool"]),
    ] {
        let mut args = vec!["encrypt", "--format", "age", "-r", &recipient, "plain"];
        args.extend_from_slice(&encrypt);
        args.extend_from_slice(&["-o", "sealed", "--overwrite"]);
        assert_success(&run(&folder, &args), &args.join(" "));
        let mut args = vec![
            "decrypt",
            "-i",
            "x.txt",
            "sealed",
            "-o",
            "opened",
            "--overwrite",
        ];
        args.extend_from_slice(&decrypt);
        assert_success(&run(&folder, &args), &args.join(" "));
        assert_eq!(fs::read(folder.join("opened")).unwrap(), plain);
    }
    // A GPU backend is refused for age files, before anything is written.
    let output = run(
        &folder,
        &[
            "encrypt",
            "--format",
            "age",
            "-r",
            &recipient,
            "--backend",
            "opencl",
            "plain",
            "-o",
            "gpu.age",
        ],
    );
    assert_refused(&output, "on the CPU", &folder, "gpu.age");
    let output = run(
        &folder,
        &[
            "decrypt",
            "-i",
            "x.txt",
            "--backend",
            "cuda",
            "sealed",
            "-o",
            "gpu.out",
        ],
    );
    assert_refused(&output, "on the CPU", &folder, "gpu.out");
}
