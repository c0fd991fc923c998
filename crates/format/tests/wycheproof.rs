//! Wycheproof's c2sp_chunked_encryption vectors (tests/vectors/wycheproof/, unchanged
//! copies of the upstream files; c2sp_chunked_encryption.md says how to apply them), run
//! through every interface: streaming decryption (several batch sizes and backends), random
//! access (whole message and final-chunk length check), the key derivation, and
//! encryption with the vector's salt injected.

use std::io::{Cursor, Read};
use std::path::PathBuf;

use parcrypt_engine::{Backend, Engine};
use parcrypt_format::cobblestone::SALT_BYTES;
use parcrypt_format::range::{decrypt_range, Bound, ByteRange};
use parcrypt_format::stream::{decrypt_chunks, encrypt_chunks};
use parcrypt_format::{
    CpuChunks, Envelope, Format, FormatError, Salts, Secret, Setup, StreamOptions, Suite,
};
use serde_json::Value;
use sha2::{Digest, Sha512};

struct Vector {
    id: u64,
    comment: String,
    key: Vec<u8>,
    context: Vec<u8>,
    ciphertext: Vec<u8>,
    aead_key: Option<Vec<u8>>,
    base_nonce: Option<Vec<u8>>,
    message_length: Option<u64>,
    message_sha512: Option<Vec<u8>>,
    valid: bool,
    flags: Vec<String>,
}

impl Vector {
    fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
    fn name(&self) -> String {
        format!("tcId {} ({})", self.id, self.comment)
    }
}

fn load(file: &str) -> (Suite, Vec<Vector>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors/wycheproof")
        .join(file);
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("vector file")).unwrap();
    let suite = match json["algorithm"].as_str().unwrap() {
        "Cobblestone-128" => Suite::Cobblestone128,
        "Cobblestone-256" => Suite::Cobblestone256,
        other => panic!("unknown algorithm {other}"),
    };
    let hex_field =
        |test: &Value, name: &str| test[name].as_str().map(|text| hex::decode(text).unwrap());
    let mut vectors = Vec::new();
    for group in json["testGroups"].as_array().unwrap() {
        assert_eq!(group["sha"], "SHA-512");
        assert_eq!(group["aead"].as_str().unwrap(), suite.aead_name());
        for test in group["tests"].as_array().unwrap() {
            // `ct` is zlib-compressed, then hex-encoded.
            let mut ciphertext = Vec::new();
            flate2::read::ZlibDecoder::new(&hex_field(test, "ct").unwrap()[..])
                .read_to_end(&mut ciphertext)
                .unwrap();
            vectors.push(Vector {
                id: test["tcId"].as_u64().unwrap(),
                comment: test["comment"].as_str().unwrap().to_string(),
                key: hex_field(test, "key").unwrap(),
                context: hex_field(test, "ctx").unwrap(),
                ciphertext,
                aead_key: hex_field(test, "aeadKey"),
                base_nonce: hex_field(test, "baseNonce"),
                message_length: test["msgLength"].as_u64(),
                message_sha512: hex_field(test, "msgSha512"),
                valid: test["result"] == "valid",
                flags: test["flags"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.as_str().unwrap().to_string())
                    .collect(),
            });
        }
    }
    assert!(
        vectors.len() >= 30,
        "{file}: only {} vectors",
        vectors.len()
    );
    (suite, vectors)
}

fn sha512(data: &[u8]) -> Vec<u8> {
    Sha512::digest(data).to_vec()
}

/// Streaming decryption: returns what was written and the result.
fn decrypt_streaming(
    suite: Suite,
    vector: &Vector,
    engine: &Engine,
    batch_chunks: usize,
) -> (Vec<u8>, Result<u64, FormatError>) {
    let batcher = CpuChunks::new(engine);
    let mut output = Vec::new();
    let mut reader = &vector.ciphertext[..];
    let result = Envelope::read(Format::Cobblestone, &mut reader)
        .and_then(|envelope| envelope.unlock_as(suite, Secret::Key(&vector.key), &vector.context))
        .and_then(|keys| {
            let options = StreamOptions::with_batch_chunks(batch_chunks);
            decrypt_chunks(&batcher, &keys, &mut reader, &mut output, &options)
        });
    (output, result)
}

fn decrypt_by_range(
    suite: Suite,
    vector: &Vector,
    range: ByteRange,
) -> (Vec<u8>, Result<u64, FormatError>) {
    let engine = Engine::new(Backend::Seq, None).unwrap();
    let batcher = CpuChunks::new(&engine);
    let mut output = Vec::new();
    let mut reader = Cursor::new(&vector.ciphertext[..]);
    let result = Envelope::read(Format::Cobblestone, &mut reader)
        .and_then(|envelope| {
            envelope
                .unlock_as(suite, Secret::Key(&vector.key), &vector.context)
                .map(|keys| (envelope, keys))
        })
        .and_then(|(envelope, keys)| {
            let options = StreamOptions::with_batch_chunks(3);
            decrypt_range(
                &batcher,
                &keys,
                &mut reader,
                envelope.len() as u64,
                range,
                &mut output,
                &options,
            )
        });
    (output, result)
}

fn check_file(file: &str) {
    let (suite, vectors) = load(file);
    let engines = [
        Engine::new(Backend::Seq, None).unwrap(),
        Engine::new(Backend::Pool, Some(3)).unwrap(),
    ];
    for vector in &vectors {
        let name = vector.name();
        if vector.has("InvalidKeySize") {
            assert!(
                matches!(suite.check_key(&vector.key), Err(FormatError::KeyLength(_))),
                "{name}"
            );
        }
        if vector.has("HeaderFailure") {
            let envelope = Envelope::read(Format::Cobblestone, &mut &vector.ciphertext[..]);
            let unlocked = envelope
                .and_then(|e| e.unlock_as(suite, Secret::Key(&vector.key), &vector.context));
            assert!(unlocked.is_err(), "{name}: the header was accepted");
        }

        // Streaming, with batch boundaries in different places.
        for engine in &engines {
            for batch_chunks in [1usize, 2, 3, 1024] {
                let (output, result) = decrypt_streaming(suite, vector, engine, batch_chunks);
                let context = format!(
                    "{name}, {} engine, batches of {batch_chunks}",
                    engine.backend()
                );
                if vector.valid {
                    let length = result.unwrap_or_else(|error| panic!("{context}: {error}"));
                    assert_eq!(Some(length), vector.message_length, "{context}");
                    assert_eq!(output.len() as u64, length, "{context}");
                    assert_eq!(Some(sha512(&output)), vector.message_sha512, "{context}");
                } else {
                    assert!(result.is_err(), "{context}: accepted");
                    // Streaming may release the valid prefix, and never more.
                    let allowed = if vector.has("PartialPlaintext") {
                        vector.message_length.unwrap()
                    } else {
                        0
                    };
                    assert!(
                        output.len() as u64 <= allowed,
                        "{context}: released {} bytes, allowed {allowed}",
                        output.len()
                    );
                    if output.len() as u64 == allowed && allowed > 0 {
                        assert_eq!(Some(sha512(&output)), vector.message_sha512, "{context}");
                    }
                }
            }
        }

        // Random access: the whole message, and the final chunk alone (length check).
        let whole = ByteRange {
            start: Bound::FromStart(0),
            end: None,
        };
        let (output, result) = decrypt_by_range(suite, vector, whole);
        if vector.valid {
            result.unwrap_or_else(|error| panic!("{name}, whole range: {error}"));
            assert_eq!(
                Some(sha512(&output)),
                vector.message_sha512,
                "{name}, whole range"
            );
        } else {
            assert!(result.is_err(), "{name}, whole range: accepted");
        }
        let length_only = ByteRange {
            start: Bound::FromEnd(0),
            end: None,
        };
        let (output, result) = decrypt_by_range(suite, vector, length_only);
        assert!(output.is_empty());
        if vector.valid || vector.has("ValidFinalChunk") {
            if vector.valid {
                result.unwrap_or_else(|error| panic!("{name}, final chunk: {error}"));
            }
        } else {
            assert!(result.is_err(), "{name}, final chunk: length authenticated");
        }

        // The derivation, against the vector's AEAD key and base nonce.
        if let (Some(aead_key), Some(base_nonce)) = (&vector.aead_key, &vector.base_nonce) {
            let envelope =
                Envelope::read(Format::Cobblestone, &mut &vector.ciphertext[..]).unwrap();
            let keys = envelope
                .unlock_as(suite, Secret::Key(&vector.key), &vector.context)
                .unwrap();
            assert_eq!(keys.key(), &aead_key[..], "{name}");
            assert_eq!(&keys.base_nonce()[..], &base_nonce[..], "{name}");
        }

        // Encryption with the salt injected reproduces a valid vector exactly.
        if vector.valid {
            let (message, _) = decrypt_streaming(suite, vector, &engines[0], 1024);
            let mut salt = [0u8; SALT_BYTES];
            salt.copy_from_slice(&vector.ciphertext[..SALT_BYTES]);
            let setup = Setup {
                format: Format::Cobblestone,
                suite,
                context: &vector.context,
                ..Setup::default()
            };
            for engine in &engines {
                let (envelope, keys) = Envelope::create_with_salts(
                    &setup,
                    Secret::Key(&vector.key),
                    Salts {
                        cobblestone: salt,
                        argon2: [0; 16],
                    },
                )
                .unwrap();
                let mut sealed = envelope.to_bytes();
                let batcher = CpuChunks::new(engine);
                let options = StreamOptions::with_batch_chunks(5);
                encrypt_chunks(&batcher, &keys, &mut &message[..], &mut sealed, &options).unwrap();
                assert!(
                    sealed == vector.ciphertext,
                    "{name}: re-encryption differs on {}",
                    engine.backend()
                );
            }
        }
    }
}

#[test]
fn cobblestone_128_vectors() {
    check_file("c2sp_chunked_encryption_aes_128_gcm_test.json");
}

#[test]
fn cobblestone_256_vectors() {
    check_file("c2sp_chunked_encryption_aes_256_gcm_test.json");
}
