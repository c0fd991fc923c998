//! What the cipher modules' unit tests share: the reader of our text vector format (see
//! `tests/vectors/README.md`: `# comment` lines, `[section]` headers, and records of
//! `name = hex` lines separated by blank lines), and random test data.

use std::collections::BTreeMap;
use std::ops::Index;

use rand::rngs::StdRng;
use rand::{Rng, RngExt, SeedableRng};

use crate::BlockCipher;

/// One record of a vector file: its section and its fields, decoded from hex.
#[derive(Debug)]
pub(crate) struct Record {
    pub(crate) section: String,
    fields: BTreeMap<String, Vec<u8>>,
}

impl Record {
    pub(crate) fn field_names(&self) -> impl Iterator<Item = &str> {
        self.fields.keys().map(String::as_str)
    }
}

impl Index<&str> for Record {
    type Output = Vec<u8>;

    /// Field `name`; panics naming the section when the record has no such field.
    fn index(&self, name: &str) -> &Vec<u8> {
        self.fields
            .get(name)
            .unwrap_or_else(|| panic!("a record of [{}] has no {name}", self.section))
    }
}

/// `tests/vectors/{name}` by section: every `[section]` of the file (sorted by name, those
/// without records too) with its records in file order.
///
/// Panics, naming the file and line, on a line that is not `name = hex`, on bad hex, on a
/// field given twice in one record and on a record before any section.
pub(crate) fn read(name: &str) -> BTreeMap<String, Vec<Record>> {
    let (headers, records) = read_file(name);
    let mut sections: BTreeMap<String, Vec<Record>> = headers
        .into_iter()
        .map(|header| (header, Vec::new()))
        .collect();
    for record in records {
        sections
            .get_mut(&record.section)
            .expect("every record's section has a header")
            .push(record);
    }
    sections
}

/// Every record of `tests/vectors/{name}` in file order across sections, for checks that the
/// file keeps the order of its source; panics as [`read`] does.
pub(crate) fn records_in_file_order(name: &str) -> Vec<Record> {
    read_file(name).1
}

/// The `[section]` headers of `tests/vectors/{name}` and its records, both in file order.
fn read_file(name: &str) -> (Vec<String>, Vec<Record>) {
    let path = format!("{}/../../tests/vectors/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    let mut headers: Vec<String> = Vec::new();
    let mut records: Vec<Record> = Vec::new();
    let mut record_open = false;
    for (line_number, raw_line) in text.lines().enumerate() {
        let line = raw_line.trim();
        if line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            record_open = false;
        } else if let Some(header) = line
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
        {
            headers.push(header.to_string());
            record_open = false;
        } else {
            let (field, value) = line
                .split_once('=')
                .unwrap_or_else(|| panic!("{name}:{}: not `name = hex`", line_number + 1));
            let section = headers.last().unwrap_or_else(|| {
                panic!("{name}:{}: record before any [section]", line_number + 1)
            });
            if !record_open {
                records.push(Record {
                    section: section.clone(),
                    fields: BTreeMap::new(),
                });
                record_open = true;
            }
            let bytes = hex::decode(value.trim())
                .unwrap_or_else(|error| panic!("{name}:{}: {error}", line_number + 1));
            let previous = records
                .last_mut()
                .expect("record pushed")
                .fields
                .insert(field.trim().to_string(), bytes);
            assert!(
                previous.is_none(),
                "{name}:{}: field repeated",
                line_number + 1
            );
        }
    }
    (headers, records)
}

/// The one record of `[section]` in `tests/vectors/{name}`.
pub(crate) fn single_record(name: &str, section: &str) -> Record {
    let mut records = read(name)
        .remove(section)
        .unwrap_or_else(|| panic!("{name} has no [{section}]"));
    assert_eq!(records.len(), 1, "{name} [{section}]: one record");
    records.pop().expect("one record")
}

/// A block cipher's known answer: a record of exactly `key`, `plaintext` and `ciphertext`.
#[derive(Debug)]
pub(crate) struct BlockVector {
    pub(crate) section: String,
    pub(crate) key: Vec<u8>,
    pub(crate) plaintext: Vec<u8>,
    pub(crate) ciphertext: Vec<u8>,
}

/// Every record of `tests/vectors/{name}` as a [`BlockVector`], section by section; panics on
/// a record with any other field or without one of the three.
pub(crate) fn block_vectors(name: &str) -> Vec<BlockVector> {
    read(name)
        .into_values()
        .flatten()
        .map(|record| {
            for field in record.field_names() {
                assert!(
                    matches!(field, "key" | "plaintext" | "ciphertext"),
                    "{name} [{}]: unknown field {field}",
                    record.section
                );
            }
            BlockVector {
                key: record["key"].clone(),
                plaintext: record["plaintext"].clone(),
                ciphertext: record["ciphertext"].clone(),
                section: record.section,
            }
        })
        .collect()
}

/// `length` random bytes from the thread's generator.
pub(crate) fn random_bytes(length: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; length];
    rand::rng().fill_bytes(&mut bytes);
    bytes
}

/// Encrypts and decrypts random data (0 to 299 blocks) under 32 random keys, each
/// `key_length()` bytes long, and insists on getting the data back.
pub(crate) fn assert_round_trips_random_data<C: BlockCipher>(
    new: impl Fn(&[u8]) -> C,
    key_length: impl Fn() -> usize,
) {
    for _ in 0..32 {
        let cipher = new(&random_bytes(key_length()));
        let count = rand::rng().random_range(0..300);
        let plaintext = random_bytes(count * cipher.block_size());
        let mut data = plaintext.clone();
        cipher.encrypt_blocks(&mut data);
        cipher.decrypt_blocks(&mut data);
        assert_eq!(data, plaintext);
    }
}

/// Runs `check` on a cipher under a random key of each of `key_lengths` and, for each, a
/// random input of every length in `lengths`, all drawn from a generator seeded with `seed`
/// (which `check` may draw more from). Stops at the first `false` from `check` (a kernel's
/// "not on this CPU") and returns whether every case ran.
// Used by the kernels' tests (x86-64 and aarch64).
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn random_cases<C>(
    seed: u64,
    key_lengths: &[usize],
    lengths: impl Iterator<Item = usize> + Clone,
    new: impl Fn(&[u8]) -> C,
    mut check: impl FnMut(&C, &[u8], &mut StdRng) -> bool,
) -> bool {
    let mut rng = StdRng::seed_from_u64(seed);
    for &key_length in key_lengths {
        let mut key = vec![0u8; key_length];
        rng.fill_bytes(&mut key);
        let cipher = new(&key);
        for length in lengths.clone() {
            let mut input = vec![0u8; length];
            rng.fill_bytes(&mut input);
            if !check(&cipher, &input, &mut rng) {
                return false;
            }
        }
    }
    true
}

/// Runs `check` on `per_length` random keys of each of `key_lengths` bytes, all drawn from a
/// generator seeded with `seed` (which `check` may draw more from).
pub(crate) fn for_random_keys(
    seed: u64,
    key_lengths: &[usize],
    per_length: usize,
    mut check: impl FnMut(&[u8], &mut StdRng),
) {
    let mut rng = StdRng::seed_from_u64(seed);
    for &key_length in key_lengths {
        for _ in 0..per_length {
            let mut key = vec![0u8; key_length];
            rng.fill_bytes(&mut key);
            check(&key, &mut rng);
        }
    }
}

/// `bytes` (whole 16-byte blocks) cut into random pieces of at most `longest` blocks, empty
/// pieces included: the byte lengths of successive calls over the same data.
// Used by the x86-64 kernels' tests.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn random_pieces(rng: &mut StdRng, bytes: usize, longest: usize) -> Vec<usize> {
    let mut pieces = Vec::new();
    let mut left = bytes / 16;
    while left > 0 {
        let blocks = rng.random_range(0..=left.min(longest));
        pieces.push(16 * blocks);
        left -= blocks;
    }
    pieces
}

/// Encrypts random data of each of `block_counts` blocks in one call and one block per call,
/// insisting on the same result and on a change, then decrypts both back the same two ways;
/// `context` names the cipher in failure messages.
pub(crate) fn assert_batch_agrees_with_single_blocks(
    cipher: &dyn BlockCipher,
    block_counts: &[usize],
    context: impl std::fmt::Display,
) {
    let block_size = cipher.block_size();
    for &count in block_counts {
        let plaintext = random_bytes(count * block_size);

        let mut batch = plaintext.clone();
        cipher.encrypt_blocks(&mut batch);
        let mut single = plaintext.clone();
        for block in single.chunks_exact_mut(block_size) {
            cipher.encrypt_blocks(block);
        }
        assert_eq!(batch, single, "{context} encrypting {count} blocks");
        if count > 0 {
            assert_ne!(batch, plaintext, "{context}: {count} blocks unchanged");
        }

        for block in single.chunks_exact_mut(block_size) {
            cipher.decrypt_blocks(block);
        }
        assert_eq!(
            single, plaintext,
            "{context} decrypting {count} single blocks"
        );
        cipher.decrypt_blocks(&mut batch);
        assert_eq!(batch, plaintext, "{context} decrypting {count} blocks");
    }
}

/// Panics, naming `context`, the length and the first byte that differs, when `actual` is
/// not `expected`: `assert_eq!` would print both buffers, megabytes for the large cases.
// Used by the kernels' tests (x86-64 and aarch64).
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn assert_same_bytes(actual: &[u8], expected: &[u8], context: impl std::fmt::Display) {
    if actual != expected {
        let first = actual
            .iter()
            .zip(expected)
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "{context}: {} bytes: first difference at byte {first}",
            expected.len()
        );
    }
}

mod tests {
    use super::*;

    #[test]
    fn sections_records_and_fields_are_read() {
        let sections = read("aes_fips197.txt");
        assert_eq!(
            sections.keys().collect::<Vec<_>>(),
            ["aes128", "aes192", "aes256"]
        );
        let record = single_record("aes_fips197.txt", "aes128");
        assert_eq!(record.section, "aes128");
        assert_eq!(
            record.field_names().collect::<Vec<_>>(),
            ["ciphertext", "key", "plaintext"]
        );
        assert_eq!(
            record["key"],
            hex::decode("000102030405060708090a0b0c0d0e0f").unwrap()
        );
        let vectors = block_vectors("aes_fips197.txt");
        assert_eq!(vectors.len(), 3);
        assert_eq!(vectors[0].key, record["key"]);
    }

    #[test]
    fn records_in_file_order_keep_the_file_order() {
        let records = records_in_file_order("aes_gcm_spec.txt");
        let sections: Vec<&str> = records
            .iter()
            .map(|record| record.section.as_str())
            .collect();
        assert_eq!(sections.first(), Some(&"aes128-case1"));
        assert_eq!(sections.last(), Some(&"aes256-case18"));
        assert_eq!(
            records.len(),
            read("aes_gcm_spec.txt").values().flatten().count()
        );
    }
}
