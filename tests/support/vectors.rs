//! Reads the test-vector files under tests/vectors/ (format described in their README):
//! `# comment` lines, `[section]` headers, records of `name = hex` lines separated by blank
//! lines. Included with `#[path]` by the workspace's tests and by crates' tests that read
//! the same files.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One record: its section and its fields, hex-decoded.
#[derive(Debug, Clone)]
pub struct Record {
    pub section: String,
    pub fields: BTreeMap<String, Vec<u8>>,
}

impl Record {
    pub fn get(&self, name: &str) -> &[u8] {
        self.fields
            .get(name)
            .unwrap_or_else(|| panic!("record in [{}] has no field '{name}'", self.section))
    }
}

/// The vector file `name` under the workspace's tests/vectors/, found from the package
/// that includes this file (the workspace root itself or a crate below it).
pub fn path(name: &str) -> PathBuf {
    let package = Path::new(env!("CARGO_MANIFEST_DIR"));
    let folder = package
        .ancestors()
        .map(|folder| folder.join("tests/vectors"))
        .find(|folder| folder.is_dir())
        .unwrap_or_else(|| panic!("no tests/vectors above {}", package.display()));
    folder.join(name)
}

/// All records of a vector file, in order.
pub fn load(name: &str) -> Vec<Record> {
    let text = std::fs::read_to_string(path(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut records = Vec::new();
    let mut section = String::new();
    let mut fields = BTreeMap::new();
    let mut flush = |section: &str, fields: &mut BTreeMap<String, Vec<u8>>| {
        if !fields.is_empty() {
            records.push(Record {
                section: section.to_string(),
                fields: std::mem::take(fields),
            });
        }
    };
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            flush(&section, &mut fields);
        } else if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            flush(&section, &mut fields);
            section = name.to_string();
        } else {
            let (name, value) = line
                .split_once('=')
                .unwrap_or_else(|| panic!("{name}: bad line '{line}'"));
            let value = hex::decode(value.trim())
                .unwrap_or_else(|e| panic!("{name}: bad hex in '{line}': {e}"));
            fields.insert(name.trim().to_string(), value);
        }
    }
    flush(&section, &mut fields);
    assert!(!records.is_empty(), "{name} holds no records");
    records
}
