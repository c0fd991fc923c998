//! Properties checked on arbitrary input, shared by the cargo-fuzz targets (`fuzz/`) and by
//! a stable test that runs them on random and mutated input for a bounded time
//! (`tests/parser_fuzz.rs`). Each function panics when a property fails, which is how a
//! fuzzer learns of it; on well-behaved code none of them panics for any input.

use std::io::Cursor;

use parcrypt_engine::fuzzing::Choices;
use parcrypt_engine::{Backend, Engine};

use crate::cobblestone::{MessageKeys, Suite, CHUNK_BYTES, SALT_BYTES};
use crate::header::{ParcryptHeader, HEADER_BYTES};
use crate::message::{Envelope, Format, Salts, Secret, Setup};
use crate::range::{decrypt_range, Bound, ByteRange};
use crate::stream::{decrypt_chunks, encrypt_chunks, StreamOptions};
use crate::{CpuChunks, FormatError};

const KEY: [u8; 16] = [0x11; 16];
/// The identity the properties try on recipient headers (age's specification example).
pub const IDENTITY: &str =
    "AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX";

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

/// Arbitrary bytes as a parcrypt header, an envelope in both formats (both header
/// versions), and a chunk area. Nothing may panic, a parsed header must re-encode to the
/// same bytes, neither the properties' key nor [`IDENTITY`] may unlock it, and chunks
/// that were never sealed under the key must not decrypt.
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
            // Nor was any recipient header made for this identity: whatever its stanzas,
            // the file key it unwraps (if any) fails the MAC or the commitment.
            let identity: parcrypt_age::Identity = IDENTITY.parse().expect("a valid identity");
            assert!(envelope
                .unlock(Secret::Identities(&[identity]), b"")
                .is_err());
        }
    }
    // The chunk parser on its own: keys derived from the input's salt (bypassing the
    // commitment, which random input never passes), the rest as the chunk area.
    if data.len() < SALT_BYTES + 1 {
        return;
    }
    let mut choices = Choices::new(&data[..1]);
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
    let mut choices = Choices::new(chunks);
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

/// A genuine message for a property to damage or cut, its shape picked from fuzz input: the
/// format, a plaintext of up to `most_chunks` chunks (byte `i` is `byte_at(i)`) and the
/// batch size, sealed under [`KEY`] with the Cobblestone salt made of `salt_byte`.
struct Sealed {
    format: Format,
    plaintext: Vec<u8>,
    options: StreamOptions<'static>,
    keys: MessageKeys,
    envelope_bytes: usize,
    /// The envelope followed by the chunks.
    original: Vec<u8>,
}

impl Sealed {
    fn new(
        choices: &mut Choices<'_>,
        batcher: &CpuChunks<'_>,
        most_chunks: usize,
        salt_byte: u8,
        byte_at: impl Fn(usize) -> u8,
    ) -> Self {
        let format = if choices.byte() & 1 == 0 {
            Format::Parcrypt
        } else {
            Format::Cobblestone
        };
        let length = choices.number(most_chunks * CHUNK_BYTES);
        let plaintext: Vec<u8> = (0..length).map(byte_at).collect();
        let setup = Setup {
            format,
            ..Setup::default()
        };
        let salts = Salts {
            cobblestone: [salt_byte; SALT_BYTES],
            argon2: [0; 16],
        };
        let options = StreamOptions::with_batch_chunks(1 + choices.number(3));
        let (envelope, keys) =
            Envelope::create_with_salts(&setup, Secret::Key(&KEY), salts).expect("a new message");
        let mut original = envelope.to_bytes();
        encrypt_chunks(batcher, &keys, &mut &plaintext[..], &mut original, &options)
            .expect("encryption");
        Self {
            format,
            plaintext,
            options,
            keys,
            envelope_bytes: envelope.len(),
            original,
        }
    }
}

/// A valid message built from the input, then changed by edits the input describes
/// (flipped bits, cuts, insertions, chunks moved), then decrypted by streaming and by
/// random access. An unchanged file must decrypt to the plaintext; a changed one must be
/// refused, and whatever was released must be genuine plaintext at its true offset.
pub fn edit_and_open(data: &[u8]) {
    let mut choices = Choices::new(data);
    let engine = Engine::new(Backend::Seq, None).expect("the seq engine");
    let batcher = CpuChunks::new(&engine);
    let message = Sealed::new(&mut choices, &batcher, 6, 0x33, |i| {
        (i as u8) ^ 0x5a ^ (i / CHUNK_BYTES) as u8
    });
    let (format, options) = (message.format, &message.options);
    let (plaintext, original) = (&message.plaintext[..], &message.original[..]);
    let length = plaintext.len();

    let mut file = original.to_vec();
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
        options,
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
                options,
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

/// A file that holds `head` at its start and `tail` at its end and zeros between, `size`
/// bytes long however large (the end of a huge or cut message without its middle).
struct SparseFile<'a> {
    head: &'a [u8],
    tail: &'a [u8],
    size: u64,
    position: u64,
}

impl SparseFile<'_> {
    fn byte(&self, offset: u64) -> u8 {
        let tail_start = self.size - self.tail.len() as u64;
        if offset >= tail_start {
            self.tail[(offset - tail_start) as usize]
        } else {
            self.head.get(offset as usize).copied().unwrap_or(0)
        }
    }
}

impl std::io::Read for SparseFile<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let count = (buffer.len() as u64).min(self.size.saturating_sub(self.position)) as usize;
        for (index, byte) in buffer[..count].iter_mut().enumerate() {
            *byte = self.byte(self.position + index as u64);
        }
        self.position += count as u64;
        Ok(count)
    }
}

impl std::io::Seek for SparseFile<'_> {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let position = match to {
            std::io::SeekFrom::Start(offset) => Some(offset),
            std::io::SeekFrom::End(offset) => self.size.checked_add_signed(offset),
            std::io::SeekFrom::Current(offset) => self.position.checked_add_signed(offset),
        };
        self.position = position.ok_or_else(|| std::io::Error::other("seek before the start"))?;
        Ok(self.position)
    }
}

/// The parts planner ([`crate::parts::DecryptPlan`]) on hostile ends: a valid message of a
/// length the input picks, then a file made of a prefix of it (the envelope and some whole
/// chunks, or any cut), a size the input picks (the true one, one near a chunk boundary
/// from the cut, or any up to 2^64) and a final piece at that end (the genuine final chunk,
/// a genuine whole chunk or part of one, junk, or nothing), zeros between. The planner must
/// never panic, and may report a length only when the final chunk authenticated: the true
/// length, the genuine final chunk at the file's true end. A range read to the length the
/// size claims releases nothing unless the file is the genuine message. The layout's
/// arithmetic on arbitrary integers never panics either.
pub fn parts_plan(data: &[u8]) {
    use crate::cobblestone::{Geometry, SEALED_CHUNK_BYTES};
    use crate::parts::{DecryptPlan, Layout};

    let mut choices = Choices::new(data);
    let engine = Engine::new(Backend::Seq, None).expect("the seq engine");
    let batcher = CpuChunks::new(&engine);
    let message = Sealed::new(&mut choices, &batcher, 5, 0x44, |i| (i as u8) ^ 0xa7);
    let (plaintext, original) = (&message.plaintext[..], &message.original[..]);
    let envelope_bytes = message.envelope_bytes;
    let length = plaintext.len();
    let whole_chunks = length / CHUNK_BYTES;
    let final_chunk = &original[envelope_bytes + whole_chunks * SEALED_CHUNK_BYTES..];

    // The prefix kept: the envelope and `k` whole chunks, or any cut.
    let kept = if choices.byte() & 1 == 0 {
        envelope_bytes + choices.number(whole_chunks + 1) * SEALED_CHUNK_BYTES
    } else {
        choices.number(original.len() + 1)
    };
    let head = &original[..kept];
    let size = match choices.byte() % 4 {
        0 => original.len() as u64,
        1 => (kept + choices.number(2 * SEALED_CHUNK_BYTES + 1)) as u64,
        2 => u64::from_le_bytes(std::array::from_fn(|_| choices.byte())),
        _ => {
            // Near a chunk boundary, up to past the nonce space.
            let chunk = (choices.number(1 << 16) as u64) << (choices.byte() % 24);
            let past = choices.number(SEALED_CHUNK_BYTES + 2) as u64;
            (envelope_bytes as u64)
                .saturating_add(chunk.saturating_mul(SEALED_CHUNK_BYTES as u64))
                .saturating_add(past)
        }
    };
    let junk: Vec<u8> = (0..choices.number(64)).map(|_| choices.byte()).collect();
    let tail: &[u8] = match choices.byte() % 4 {
        0 => final_chunk,
        1 if whole_chunks > 0 => {
            let chunk = choices.number(whole_chunks);
            let start = envelope_bytes + chunk * SEALED_CHUNK_BYTES;
            let bytes = 1 + choices.number(SEALED_CHUNK_BYTES);
            &original[start..start + bytes]
        }
        2 => &junk,
        _ => &[],
    };
    let tail = &tail[tail
        .len()
        .saturating_sub(usize::try_from(size).unwrap_or(usize::MAX))..];
    let mut file = SparseFile {
        head,
        tail,
        size,
        position: 0,
    };
    let same_bytes = |range: std::ops::Range<u64>| {
        range
            .clone()
            .all(|offset| file.byte(offset) == original[offset as usize])
    };
    let true_size = size == original.len() as u64;
    let genuine_end = true_size && same_bytes(size - final_chunk.len() as u64..size);
    let genuine = true_size && same_bytes(0..size);

    let planned = DecryptPlan::read(
        &batcher,
        message.format,
        Secret::Key(&KEY),
        b"",
        &crate::KdfLimits::DEFAULT,
        &mut file,
    );
    if let Ok(plan) = &planned {
        assert!(
            genuine_end,
            "a length was reported for a file whose final chunk is not the message's"
        );
        assert_eq!(
            plan.layout(),
            Layout {
                envelope_bytes: envelope_bytes as u64,
                plaintext_bytes: length as u64,
            }
        );
    }
    if genuine {
        planned.expect("the genuine message plans");
    }

    // A range read to the end the size claims, through the planner's range reader.
    let claimed = size
        .checked_sub(envelope_bytes as u64)
        .and_then(|sealed| Geometry::for_sealed(sealed).ok());
    if let Some(claimed) = claimed.filter(|geometry| geometry.chunks <= 64) {
        let mut output = Vec::new();
        let result = decrypt_range(
            &batcher,
            &message.keys,
            &mut file,
            envelope_bytes as u64,
            ByteRange {
                start: Bound::FromStart(0),
                end: Some(Bound::FromStart(claimed.plaintext_bytes)),
            },
            &mut output,
            &message.options,
        );
        if genuine {
            assert!(result.is_ok() && output == plaintext);
        } else if !genuine_end {
            assert!(result.is_err(), "a range to a forged end was read");
            assert!(output.is_empty(), "a range to a forged end released bytes");
        }
    }

    // The layout's arithmetic on arbitrary integers.
    let layout = Layout {
        envelope_bytes: u64::from_le_bytes(std::array::from_fn(|_| choices.byte())),
        plaintext_bytes: u64::from_le_bytes(std::array::from_fn(|_| choices.byte())),
    };
    let chunks = layout.chunks();
    let _ = layout.sealed_file_bytes();
    let first = u64::from_le_bytes(std::array::from_fn(|_| choices.byte()));
    let end = u64::from_le_bytes(std::array::from_fn(|_| choices.byte()));
    let _ = layout.sealed_span(&(first..end));
    let span = layout.plaintext_span(&(first..end));
    assert!(span.start <= layout.plaintext_bytes && span.end <= layout.plaintext_bytes);
    if let Ok(chunks) = chunks {
        let per_part = 1 + choices.number(1 << 20) as u64;
        if chunks.div_ceil(per_part) <= 4096 {
            let parts = layout.parts(per_part);
            assert_eq!(parts.first().map(|part| part.start), Some(0));
            assert_eq!(parts.last().map(|part| part.end), Some(chunks));
        }
    }
}
