//! The C2SP CCTV age test kit (tests/cctv/testdata, see tests/cctv/README.md): every vector
//! is decrypted with its identities and passphrases, and the outcome must be the one it
//! expects: success with the payload's SHA-256, or a header, HMAC, payload or armor failure,
//! or no match. For payload failures the plaintext released before the error (by
//! `StreamReader`) must hash to the vector's payload hash, and the whole-file API must
//! release nothing. Successful binary vectors are read again through `SeekableReader`.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use parcrypt_age::{
    decrypt_to_vec, Decryptor, Error, Identity, Passphrase, ScryptIdentity, SeekableReader,
};
use sha2::{Digest, Sha256};

struct Vector {
    expect: String,
    payload: Option<String>,
    identities: Vec<Identity>,
    armored: bool,
    body: Vec<u8>,
}

fn load(path: &Path) -> Result<Vector, String> {
    let data = std::fs::read(path).unwrap();
    let split = data
        .windows(2)
        .position(|w| w == b"\n\n")
        .expect("a blank line after the vector's header");
    let text = std::str::from_utf8(&data[..split]).unwrap();
    let mut body = data[split + 2..].to_vec();
    let mut vector = Vector {
        expect: String::new(),
        payload: None,
        identities: Vec::new(),
        armored: false,
        body: Vec::new(),
    };
    let mut compressed = false;
    for line in text.lines() {
        let (key, value) = line.split_once(": ").expect("key: value");
        match key {
            "expect" => vector.expect = value.to_string(),
            "payload" => vector.payload = Some(value.to_string()),
            "identity" => vector
                .identities
                .push(value.parse().map_err(|e| format!("{e}"))?),
            "passphrase" => {
                vector
                    .identities
                    .push(Identity::from(ScryptIdentity::new(Passphrase::new(
                        value.as_bytes().to_vec(),
                    ))))
            }
            "armored" => vector.armored = value == "yes",
            "compressed" => {
                assert_eq!(value, "zlib");
                compressed = true;
            }
            "file key" | "comment" => {}
            other => return Err(format!("unknown key {other:?}")),
        }
    }
    if compressed {
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(body.as_slice())
            .read_to_end(&mut out)
            .unwrap();
        body = out;
    }
    vector.body = body;
    Ok(vector)
}

fn kind(error: &Error) -> &'static str {
    match error {
        e if e.is_header_failure() => "header failure",
        Error::Armor(_) => "armor failure",
        Error::NoMatch(_) => "no match",
        Error::HeaderMac => "HMAC failure",
        Error::Payload(_) => "payload failure",
        _ => "other",
    }
}

/// Decrypts through the streaming reader: the plaintext released, and the error if any.
fn stream(vector: &Vector) -> (Vec<u8>, Option<Error>) {
    let reader = match Decryptor::with_armor(vector.body.as_slice(), Some(vector.armored)) {
        Ok(decryptor) => decryptor,
        Err(error) => return (Vec::new(), Some(error)),
    };
    assert_eq!(reader.is_armored(), vector.armored);
    let mut reader = match reader.decrypt(&vector.identities) {
        Ok(reader) => reader,
        Err(error) => return (Vec::new(), Some(error)),
    };
    let mut released = Vec::new();
    let mut buf = vec![0u8; 10_000];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return (released, None),
            Ok(n) => released.extend_from_slice(&buf[..n]),
            Err(error) => {
                let inner = error.into_inner().expect("an age error");
                return (
                    released,
                    Some(*inner.downcast::<Error>().expect("an age error")),
                );
            }
        }
    }
}

fn hex_sha256(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

fn check(name: &str, vector: &Vector) -> Result<(), String> {
    let (released, error) = stream(vector);
    let got = error.as_ref().map_or("success", kind);
    if got != vector.expect {
        return Err(format!(
            "{name}: expected {}, got {got} ({})",
            vector.expect,
            error.map(|e| e.to_string()).unwrap_or_default()
        ));
    }
    if let Some(error) = &error {
        let message = error.to_string();
        if message.contains('\n') || message.is_empty() {
            return Err(format!("{name}: not a one-line error: {message:?}"));
        }
    }
    if let Some(payload) = &vector.payload {
        if hex_sha256(&released) != *payload {
            return Err(format!("{name}: the released plaintext's hash differs"));
        }
    } else if !released.is_empty() {
        return Err(format!("{name}: plaintext released without a payload hash"));
    }
    // Recognising the armor: as told, except where nothing shows it (garbage before it).
    let shows_armor = {
        let text = &vector.body;
        let first = text
            .iter()
            .position(|c| !c.is_ascii_whitespace())
            .unwrap_or(text.len());
        text[first..].starts_with(b"-----")
    };
    if shows_armor == vector.armored {
        let auto = Decryptor::new(vector.body.as_slice());
        if let (Ok(auto), None) = (&auto, &error) {
            if auto.is_armored() != vector.armored {
                return Err(format!("{name}: armor not recognised"));
            }
        }
    }
    // The whole-file API (armor recognised): all or nothing.
    match (decrypt_to_vec(&vector.body, &vector.identities), &error) {
        (Ok(plaintext), None) if plaintext == released => {}
        (Err(whole), Some(error))
            if kind(&whole) == kind(error) || shows_armor != vector.armored => {}
        (other, _) => {
            return Err(format!(
                "{name}: decrypt_to_vec disagrees: {:?}",
                other.map(|p| p.len())
            ))
        }
    }
    // Random access for successful binary vectors: the length, the whole, and a tail.
    if error.is_none() && !vector.armored {
        let mut reader =
            SeekableReader::new(std::io::Cursor::new(&vector.body), &vector.identities)
                .map_err(|e| format!("{name}: seekable: {e}"))?;
        if reader.plaintext_len() != released.len() as u64 {
            return Err(format!("{name}: seekable length differs"));
        }
        let mut all = Vec::new();
        reader.read_to_end(&mut all).unwrap();
        let tail_from = released.len().saturating_sub(70_000);
        reader.seek(SeekFrom::Start(tail_from as u64)).unwrap();
        let mut tail = Vec::new();
        reader.read_to_end(&mut tail).unwrap();
        if all != released || tail != released[tail_from..] {
            return Err(format!("{name}: seekable plaintext differs"));
        }
    }
    Ok(())
}

#[test]
fn cctv_age_test_kit() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cctv/testdata");
    let mut names: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len(), 143, "the kit has 143 vectors");
    let mut passed: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    for name in &names {
        let vector = match load(&folder.join(name)) {
            Ok(vector) => vector,
            Err(why) => {
                skipped.push(format!("{name}: {why}"));
                continue;
            }
        };
        match check(name, &vector) {
            Ok(()) => *passed.entry(vector.expect.clone()).or_default() += 1,
            Err(failure) => failures.push(failure),
        }
    }
    let total: usize = passed.values().sum();
    println!(
        "CCTV age: {total} passed {passed:?}, {} skipped, {} failed",
        skipped.len(),
        failures.len()
    );
    for line in &skipped {
        println!("SKIPPED {line}");
    }
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        skipped.is_empty(),
        "every vector's recipient type is supported: {skipped:?}"
    );
    assert_eq!(total, names.len());
}
