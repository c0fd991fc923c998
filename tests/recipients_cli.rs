//! `parcrypt encrypt -r/-R` in parcrypt's own format (a version-2 header: recipient stanzas,
//! a MAC, then Cobblestone AES-GCM) and `decrypt -i`: round trips at chunk boundaries for
//! X25519 and hybrid recipients and several recipients per file, `--range` and every CPU
//! `--backend`, pipes; and the refusals: each one line, exit status 1, no output left
//! behind (a wrong identity, a missing one, a key for a recipient file, a damaged header,
//! MAC or chunk, a header moved onto another file, a wrong context, truncation).
#![cfg(unix)]

use std::fs;

#[path = "support/keys.rs"]
mod keys;
#[path = "support/process.rs"]
mod process;

use keys::{assert_refused, data, folder, keygen, parcrypt, run};
use process::{assert_success, file_in, names};

/// The header's length, as its bytes 12..16 say.
fn header_len(file: &[u8]) -> usize {
    u32::from_be_bytes(file[12..16].try_into().unwrap()) as usize
}

const CHUNK: usize = 16384;

#[test]
fn round_trips_for_x25519_hybrid_and_several_recipients() {
    let (_dir, folder) = folder();
    let x1 = keygen(&folder, "x1.txt", false);
    let x2 = keygen(&folder, "x2.txt", false);
    let pq1 = keygen(&folder, "pq1.txt", true);
    let pq2 = keygen(&folder, "pq2.txt", true);
    file_in(&folder, "pq.recipients", format!("# two\n{pq1}\n\n{pq2}\n"));
    for len in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 5 * CHUNK + 77] {
        file_in(&folder, "plain", data(len));
        let cases: [(&[&str], &[&[&str]]); 4] = [
            (&["-r", &x1], &[&["-i", "x1.txt"]]),
            (
                &["-r", &pq1, "--cipher", "aes-256-gcm"],
                &[&["-i", "pq1.txt"]],
            ),
            (
                &["-r", &x1, "-r", &x2, "--context", "0a0b"],
                &[&["-i", "x1.txt"], &["-i", "pq1.txt", "-i", "x2.txt"]],
            ),
            (
                &["-R", "pq.recipients"],
                &[&["-i", "pq1.txt"], &["-i", "pq2.txt"]],
            ),
        ];
        for (encrypt, decrypts) in cases {
            let mut args = vec!["encrypt", "plain", "-o", "sealed", "--overwrite"];
            args.extend_from_slice(encrypt);
            assert_success(&run(&folder, &args), &args.join(" "));
            let sealed = fs::read(folder.join("sealed")).unwrap();
            // parcrypt's format, version 2: a header, then Cobblestone (salt, commitment,
            // chunks of 16 KiB and a tag each).
            assert_eq!(&sealed[..9], b"parcrypt\x02");
            assert_eq!(sealed[10], 3);
            let expected_suite = if encrypt.contains(&"aes-256-gcm") {
                2
            } else {
                1
            };
            assert_eq!(sealed[9], expected_suite);
            assert_eq!(
                sealed.len(),
                header_len(&sealed) + 56 + len + 16 * (len / CHUNK + 1)
            );
            // One stanza per recipient: 87 bytes for X25519, 1,546 for the hybrid (the
            // recipients file holds two hybrid keys).
            let (count, stanza) = if encrypt.contains(&"-R") {
                (2, 1546)
            } else if encrypt.contains(&pq1.as_str()) {
                (1, 1546)
            } else {
                (encrypt.iter().filter(|a| **a == "-r").count(), 87)
            };
            assert_eq!(u16::from_be_bytes([sealed[16], sealed[17]]), count as u16);
            assert_eq!(header_len(&sealed), 50 + stanza * count, "{encrypt:?}");
            for decrypt in decrypts {
                let mut args = vec!["decrypt", "sealed", "-o", "opened", "--overwrite"];
                args.extend_from_slice(decrypt);
                if encrypt.contains(&"--context") {
                    args.extend_from_slice(&["--context", "0a0b"]);
                }
                assert_success(&run(&folder, &args), &args.join(" "));
                assert_eq!(
                    fs::read(folder.join("opened")).unwrap(),
                    data(len),
                    "{len} {encrypt:?} {decrypt:?}"
                );
            }
        }
    }
    // Through pipes, both ways.
    let plain = data(3 * CHUNK + 5);
    let output = process::run_with_stdin(
        parcrypt().current_dir(&folder).args(["encrypt", "-r", &x2]),
        &plain,
    );
    assert_success(&output, "encrypt from stdin");
    let output = process::run_with_stdin(
        parcrypt()
            .current_dir(&folder)
            .args(["decrypt", "-i", "x2.txt"]),
        &output.stdout,
    );
    assert_success(&output, "decrypt from stdin");
    assert_eq!(output.stdout, plain);
}

#[test]
fn ranges_and_backends_work_on_recipient_files() {
    let (_dir, folder) = folder();
    let x1 = keygen(&folder, "x1.txt", false);
    let plain = data(40 * CHUNK + 1000);
    file_in(&folder, "plain", &plain);
    for backend in ["seq", "threads", "pool", "auto"] {
        assert_success(
            &run(
                &folder,
                &[
                    "encrypt",
                    "--backend",
                    backend,
                    "-r",
                    &x1,
                    "plain",
                    "-o",
                    "sealed",
                    "--overwrite",
                ],
            ),
            backend,
        );
        for (range, start, end) in [
            ("100000:200001", 100_000, 200_001),
            ("-1000:", plain.len() - 1000, plain.len()),
            (":5", 0, 5),
        ] {
            assert_success(
                &run(
                    &folder,
                    &[
                        "decrypt",
                        "--backend",
                        backend,
                        "-i",
                        "x1.txt",
                        "--range",
                        range,
                        "sealed",
                        "-o",
                        "part",
                        "--overwrite",
                    ],
                ),
                range,
            );
            assert_eq!(
                fs::read(folder.join("part")).unwrap(),
                plain[start..end],
                "{backend} {range}"
            );
        }
        assert_success(
            &run(
                &folder,
                &[
                    "decrypt",
                    "--backend",
                    backend,
                    "-i",
                    "x1.txt",
                    "sealed",
                    "-o",
                    "opened",
                    "--overwrite",
                ],
            ),
            backend,
        );
        assert_eq!(fs::read(folder.join("opened")).unwrap(), plain);
    }
}

#[test]
fn refusals_are_one_line_and_leave_nothing() {
    let (_dir, folder) = folder();
    let x1 = keygen(&folder, "x1.txt", false);
    let _x2 = keygen(&folder, "x2.txt", false);
    let pq = keygen(&folder, "pq.txt", true);
    file_in(&folder, "plain", data(3 * CHUNK + 100));
    file_in(&folder, "pass.txt", "correct horse\n");
    for (name, args) in [
        (
            "sealed",
            vec!["encrypt", "-r", &x1, "plain", "-o", "sealed"],
        ),
        ("other", vec!["encrypt", "-r", &x1, "plain", "-o", "other"]),
        (
            "context",
            vec![
                "encrypt",
                "-r",
                &x1,
                "--context",
                "01",
                "plain",
                "-o",
                "context",
            ],
        ),
        (
            "locked",
            vec![
                "encrypt",
                "--passphrase-file",
                "pass.txt",
                "--kdf-memory",
                "8",
                "plain",
                "-o",
                "locked",
            ],
        ),
    ] {
        assert_success(&run(&folder, &args), name);
    }
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["decrypt", "-i", "x2.txt", "sealed", "-o", "out"],
            "no identity matches any recipient of this file (its stanzas: X25519)",
        ),
        (
            vec![
                "decrypt", "-i", "pq.txt", "-i", "x2.txt", "sealed", "-o", "out",
            ],
            "no identity matches",
        ),
        (
            vec!["decrypt", "sealed", "-o", "out"],
            "encrypted to recipients: give -i IDENTITY_FILE",
        ),
        (
            vec![
                "decrypt",
                "--passphrase-file",
                "pass.txt",
                "sealed",
                "-o",
                "out",
            ],
            "give -i IDENTITY_FILE",
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
            "not --key/--key-file",
        ),
        (
            vec!["decrypt", "-i", "x1.txt", "context", "-o", "out"],
            "a wrong --context",
        ),
        (
            vec![
                "decrypt",
                "-i",
                "x1.txt",
                "--context",
                "02",
                "context",
                "-o",
                "out",
            ],
            "a wrong --context",
        ),
        (
            vec![
                "decrypt",
                "-i",
                "x1.txt",
                "--passphrase-file",
                "pass.txt",
                "locked",
                "-o",
                "out",
            ],
            "-i is for files encrypted to recipients, and this one was encrypted with a passphrase",
        ),
        (
            vec!["decrypt", "-i", "missing.txt", "sealed", "-o", "out"],
            "cannot open identity file",
        ),
        (
            vec!["encrypt", "-r", &x1, "-r", &pq, "plain", "-o", "out"],
            "cannot be mixed",
        ),
        (
            vec!["encrypt", "-r", "age1notakey", "plain", "-o", "out"],
            "-r: invalid key",
        ),
        (
            vec![
                "encrypt",
                "-r",
                &x1,
                "--key",
                "000102030405060708090a0b0c0d0e0f",
                "plain",
                "-o",
                "out",
            ],
            "drop --key, --key-file and --passphrase-file",
        ),
        (
            vec![
                "encrypt",
                "-r",
                &x1,
                "--passphrase-file",
                "pass.txt",
                "plain",
                "-o",
                "out",
            ],
            "drop --key, --key-file and --passphrase-file",
        ),
        (
            vec!["encrypt", "-r", &x1, "-p", "plain", "-o", "out"],
            "-p and -a are options of --format age",
        ),
        (
            vec![
                "encrypt",
                "--format",
                "cobblestone",
                "--key",
                "000102030405060708090a0b0c0d0e0f",
                "-r",
                &x1,
                "plain",
                "-o",
                "out",
            ],
            "a bare Cobblestone message takes a key only",
        ),
        (
            vec!["encrypt", "-R", "missing.txt", "plain", "-o", "out"],
            "-R missing.txt",
        ),
    ];
    for (args, reason) in cases {
        let output = run(&folder, &args);
        assert_refused(&output, reason, &folder, "out");
    }

    // Damage: a stanza, the MAC, any header byte, the salt or commitment, a chunk;
    // truncation; a header moved onto another file's message.
    let sealed = fs::read(folder.join("sealed")).unwrap();
    let other = fs::read(folder.join("other")).unwrap();
    let header = header_len(&sealed);
    // One X25519 recipient: a header of 50 + 87 bytes.
    assert_eq!(header, 137);
    let flipped = |at: usize| {
        let mut bytes = sealed.clone();
        bytes[at] ^= 1;
        bytes
    };
    let damaged: Vec<(&str, Vec<u8>, &str)> = vec![
        ("version", flipped(8), "newer parcrypt"),
        ("count", flipped(17), "damaged header"),
        // Another type is carried, as age carries unknown stanzas, and opens for nobody.
        (
            "stanza type",
            flipped(20),
            "no identity matches any recipient of this file (its stanzas: X35519)",
        ),
        (
            "stanza type not printable",
            {
                let mut bytes = sealed.clone();
                bytes[20] ^= 0x80;
                bytes
            },
            "damaged header",
        ),
        ("stanza share", flipped(30), ""),
        ("stanza's body", flipped(80), "no identity matches"),
        ("stanza's tag", flipped(header - 33), "no identity matches"),
        ("mac", flipped(header - 1), "its MAC does not match"),
        (
            "salt",
            flipped(header + 3),
            "does not belong to this header",
        ),
        (
            "commitment",
            flipped(header + 30),
            "does not belong to this header",
        ),
        ("chunk", flipped(header + 56 + CHUNK + 100), "chunk 1"),
        ("truncated", sealed[..sealed.len() - 10].to_vec(), ""),
        (
            "cut at a chunk",
            sealed[..header + 56 + 3 * (CHUNK + 16)].to_vec(),
            "truncated",
        ),
        (
            "cut in the header",
            sealed[..header - 5].to_vec(),
            "truncated",
        ),
        ("trailing", [sealed.as_slice(), b"x"].concat(), ""),
        (
            "moved",
            [&sealed[..header], &other[header_len(&other)..]].concat(),
            "does not belong to this header",
        ),
        (
            "stanzas of another file",
            [&other[..header - 32], &sealed[header - 32..]].concat(),
            "its MAC does not match",
        ),
    ];
    for (what, bytes, reason) in damaged {
        file_in(&folder, "damaged", bytes);
        let output = run(
            &folder,
            &["decrypt", "-i", "x1.txt", "damaged", "-o", "out"],
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{what}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{what}: {stderr}");
        assert!(stderr.contains(reason), "{what}: {stderr}");
        assert!(!folder.join("out").exists(), "{what}: output left behind");
    }
    // Nothing else was left: no temporary files.
    let mut left = names(&folder);
    left.retain(|name| !name.starts_with('.'));
    assert_eq!(
        left,
        [
            "context", "damaged", "locked", "other", "pass.txt", "plain", "pq.txt", "sealed",
            "x1.txt", "x2.txt"
        ]
    );
    let hidden: Vec<String> = names(&folder)
        .into_iter()
        .filter(|name| name.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
}
