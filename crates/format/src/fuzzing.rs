//! Properties checked on arbitrary input, shared by the cargo-fuzz targets (`fuzz/`) and by
//! a stable test that runs them on random and mutated input for a bounded time
//! (`tests/parser_fuzz.rs`). Each function panics when a property fails, which is how a
//! fuzzer learns of it; on well-behaved code none of them panics for any input.

use std::io::Cursor;

use parcrypt_engine::{Backend, Engine};

use crate::cobblestone::{MessageKeys, Suite, CHUNK_BYTES, SALT_BYTES};
use crate::header::{ParcryptHeader, HEADER_BYTES};
use crate::message::{Envelope, Format, Salts, Secret, Setup};
use crate::range::{decrypt_range, Bound, ByteRange};
use crate::stream::{decrypt_chunks, encrypt_chunks, StreamOptions};
use crate::{CpuChunks, FormatError};

const KEY: [u8; 16] = [0x11; 16];

/// Reads fuzz input as a stream of small choices.
struct Choices<'a> {
    bytes: &'a [u8],
}

impl Choices<'_> {
    fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&first, rest)) => {
                self.bytes = rest;
                first
            }
            None => 0,
        }
    }
    fn number(&mut self, below: usize) -> usize {
        let value =
            u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()]) as usize;
        if below == 0 {
            0
        } else {
            value % below
        }
    }
}

/// A range picked from fuzz input: any mix of absolute and end-relative bounds.
fn range_from(choices: &mut Choices<'_>, scale: usize) -> ByteRange {
    let bound = |choices: &mut Choices<'_>| {
        let offset = choices.number(scale + 2) as u64;
        if choices.byte() & 1 == 0 {
            Bound::FromStart(offset)
        } else {
            Bound::FromEnd(offset)
        }
    };
    let start = bound(choices);
    let end = if choices.byte().is_multiple_of(3) {
        None
    } else {
        Some(bound(choices))
    };
    ByteRange { start, end }
}

/// Arbitrary bytes as a parcrypt header, an envelope in both formats, and a chunk area.
/// Nothing may panic, a parsed header must re-encode to the same bytes, and chunks that
/// were never sealed under the key must not decrypt.
pub fn parse(data: &[u8]) {
    if let Ok(header) = ParcryptHeader::parse(data) {
        assert_eq!(
            &header.to_bytes()[..],
            &data[..HEADER_BYTES],
            "a header has one encoding"
        );
    }
    for format in [Format::Parcrypt, Format::Cobblestone] {
        if let Ok((envelope, length)) = Envelope::parse(format, data) {
            assert_eq!(envelope.to_bytes(), &data[..length]);
            // The commitment was not made for this key: refused before any chunk (and a
            // passphrase header is refused for a key without running argon2id).
            assert!(envelope.unlock(Secret::Key(&KEY), b"").is_err());
        }
    }
    // The chunk parser on its own: keys derived from the input's salt (bypassing the
    // commitment, which random input never passes), the rest as the chunk area.
    if data.len() < SALT_BYTES + 1 {
        return;
    }
    let mut choices = Choices { bytes: &data[..1] };
    let batch_chunks = 1 + choices.number(4);
    let mut salt = [0u8; SALT_BYTES];
    salt.copy_from_slice(&data[1..1 + SALT_BYTES]);
    let keys = MessageKeys::derive(Suite::Cobblestone128, &KEY, &salt, b"").expect("a 16-byte key");
    let chunks = &data[1 + SALT_BYTES..];
    let engine = Engine::new(Backend::Seq, None).expect("the seq engine");
    let batcher = CpuChunks::new(&engine);
    let options = StreamOptions::with_batch_chunks(batch_chunks);
    let mut output = Vec::new();
    let result = decrypt_chunks(&batcher, &keys, &mut &chunks[..], &mut output, &options);
    assert!(
        result.is_err() && output.is_empty(),
        "forged chunks were accepted"
    );
    let mut choices = Choices { bytes: chunks };
    let range = range_from(&mut choices, chunks.len());
    let mut output = Vec::new();
    let result = decrypt_range(
        &batcher,
        &keys,
        &mut Cursor::new(chunks),
        0,
        range,
        &mut output,
        &options,
    );
    assert!(output.is_empty(), "forged chunks were released");
    if let Ok(written) = result {
        // Only an empty range that needs no chunk at all may succeed.
        assert_eq!(written, 0);
    }
}

/// A valid message built from the input, then changed by edits the input describes
/// (flipped bits, cuts, insertions, chunks moved), then decrypted by streaming and by
/// random access. An unchanged file must decrypt to the plaintext; a changed one must be
/// refused, and whatever was released must be genuine plaintext at its true offset.
pub fn edit_and_open(data: &[u8]) {
    let mut choices = Choices { bytes: data };
    let format = if choices.byte() & 1 == 0 {
        Format::Parcrypt
    } else {
        Format::Cobblestone
    };
    let length = choices.number(6 * CHUNK_BYTES);
    let plaintext: Vec<u8> = (0..length)
        .map(|i| (i as u8) ^ 0x5a ^ (i / CHUNK_BYTES) as u8)
        .collect();
    let setup = Setup {
        format,
        ..Setup::default()
    };
    let salts = Salts {
        cobblestone: [0x33; SALT_BYTES],
        argon2: [0; 16],
    };
    let engine = Engine::new(Backend::Seq, None).expect("the seq engine");
    let batcher = CpuChunks::new(&engine);
    let options = StreamOptions::with_batch_chunks(1 + choices.number(3));
    let (envelope, keys) =
        Envelope::create_with_salts(&setup, Secret::Key(&KEY), salts).expect("a new message");
    let mut original = envelope.to_bytes();
    encrypt_chunks(
        &batcher,
        &keys,
        &mut &plaintext[..],
        &mut original,
        &options,
    )
    .expect("encryption");

    let mut file = original.clone();
    for _ in 0..choices.number(4) {
        match choices.byte() % 6 {
            0 if !file.is_empty() => {
                let position = choices.number(file.len());
                file[position] ^= 1 << (choices.byte() % 8);
            }
            1 => file.truncate(choices.number(file.len() + 1)),
            2 => {
                let position = choices.number(file.len() + 1);
                let count = 1 + choices.number(40);
                let byte = choices.byte();
                file.splice(position..position, std::iter::repeat_n(byte, count));
            }
            3 if !file.is_empty() => {
                // Copy a span (a chunk, say) over another place.
                let from = choices.number(file.len());
                let span = (1 + choices.number(20_000)).min(file.len() - from);
                let to = choices.number(file.len());
                let piece = file[from..from + span].to_vec();
                let end = (to + span).min(file.len());
                file.splice(to..end, piece);
            }
            4 if !file.is_empty() => {
                let from = choices.number(file.len());
                let span = (1 + choices.number(20_000)).min(file.len() - from);
                file.drain(from..from + span);
            }
            _ => file.extend_from_slice(
                &original[original.len().saturating_sub(1 + choices.number(200))..],
            ),
        }
    }
    let unchanged = file == original;

    let mut output = Vec::new();
    let result = crate::decrypt(
        &batcher,
        format,
        Secret::Key(&KEY),
        b"",
        &mut &file[..],
        &mut output,
        &options,
    );
    if unchanged {
        assert_eq!(result.expect("an unchanged file decrypts"), length as u64);
        assert!(output == plaintext);
    } else {
        assert!(result.is_err(), "a changed file was accepted");
        assert!(
            output.len() % CHUNK_BYTES == 0 && output == plaintext[..output.len()],
            "a released chunk is not genuine"
        );
    }

    let range = range_from(&mut choices, length);
    let mut reader = Cursor::new(&file[..]);
    let mut output = Vec::new();
    let result = Envelope::read(format, &mut reader)
        .and_then(|envelope| {
            envelope
                .unlock(Secret::Key(&KEY), b"")
                .map(|keys| (envelope, keys))
        })
        .and_then(|(envelope, keys)| {
            let offset = envelope.len() as u64;
            decrypt_range(
                &batcher,
                &keys,
                &mut reader,
                offset,
                range,
                &mut output,
                &options,
            )
        });
    match result {
        Ok(written) => {
            let (start, end) = range.resolve(length as u64);
            assert_eq!(written as usize, output.len());
            assert!(
                output == plaintext[start as usize..end as usize],
                "range {range} of a {length}-byte message is wrong"
            );
        }
        Err(error) => {
            assert!(
                !unchanged,
                "range {range} of an unchanged file failed: {error}"
            );
            assert!(!matches!(error, FormatError::Range(_)), "{error}");
        }
    }
}
