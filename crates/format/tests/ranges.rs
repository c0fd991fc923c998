//! Random access over many chunks on every backend: a range goes through the same
//! read / open / write pipeline as streaming, so it must give the same bytes on one thread,
//! on all cores and on a GPU, whatever the batch size, and release only what authenticated,
//! batch by batch.

use std::io::{self, Cursor, IoSlice, Write};

use parcrypt_engine::{Backend, Engine};
use parcrypt_format::cobblestone::{CHUNK_BYTES, SEALED_CHUNK_BYTES};
use parcrypt_format::stream::encrypt_chunks;
use parcrypt_format::{
    batcher_for, ByteRange, CpuChunks, Decryptor, Envelope, Format, FormatError, Salts, Secret,
    Setup, StreamOptions,
};

#[path = "../../../tests/support/engine.rs"]
mod engine;

const KEY: [u8; 16] = [0x5c; 16];
const MIB: usize = 1 << 20;

/// Every backend `all_engines` gives (the CPU ones on three threads, OpenCL, which CI
/// must have, and CUDA where there is a GPU), and pool on all cores too.
fn engines() -> Vec<Engine> {
    let mut engines = engine::all_engines();
    engines.push(Engine::new(Backend::Pool, None).unwrap());
    engines
}

fn plaintext(length: usize) -> Vec<u8> {
    (0..length)
        .map(|i| {
            (i as u32).wrapping_mul(2_246_822_519).rotate_left(11) as u8 ^ (i / CHUNK_BYTES) as u8
        })
        .collect()
}

/// A bare Cobblestone message of `message` and its chunk area's offset.
fn seal(message: &[u8]) -> (Vec<u8>, usize) {
    let setup = Setup {
        format: Format::Cobblestone,
        ..Setup::default()
    };
    let salts = Salts {
        cobblestone: [3; 24],
        argon2: [0; 16],
    };
    let (envelope, keys) = Envelope::create_with_salts(&setup, Secret::Key(&KEY), salts).unwrap();
    let mut sealed = envelope.to_bytes();
    let engine = Engine::new(Backend::Pool, None).unwrap();
    encrypt_chunks(
        &CpuChunks::new(&engine),
        &keys,
        &mut &message[..],
        &mut sealed,
        &StreamOptions::default(),
    )
    .unwrap();
    (sealed, envelope.len())
}

/// Counts the calls that reach it, so tests can see output arrive in pieces.
#[derive(Default)]
struct Recorder {
    bytes: Vec<u8>,
    calls: usize,
}

impl Write for Recorder {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        self.calls += 1;
        self.bytes.extend_from_slice(buffer);
        Ok(buffer.len())
    }
    fn write_vectored(&mut self, buffers: &[IoSlice<'_>]) -> io::Result<usize> {
        self.calls += 1;
        buffers
            .iter()
            .for_each(|buffer| self.bytes.extend_from_slice(buffer));
        Ok(buffers.iter().map(|buffer| buffer.len()).sum())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn read_range(
    engine: &Engine,
    sealed: &[u8],
    text: &str,
    batch_chunks: usize,
) -> (Recorder, Result<u64, FormatError>) {
    let range: ByteRange = text.parse().unwrap();
    let unlocked = Decryptor::new(Format::Cobblestone, Cursor::new(sealed))
        .unwrap()
        .unlock(Secret::Key(&KEY), b"")
        .unwrap();
    let batcher = batcher_for(engine);
    let mut output = Recorder::default();
    let options = StreamOptions::with_batch_chunks(batch_chunks);
    let result = unlocked.decrypt_range_to(batcher.as_ref(), range, &mut output, &options);
    (output, result)
}

#[test]
fn ranges_over_many_chunks_give_the_same_bytes_on_every_backend_and_batch_size() {
    // 5 MiB and a short final chunk: 321 chunks.
    let message = plaintext(5 * MIB + 1234);
    let length = message.len();
    let (sealed, _) = seal(&message);
    let c = CHUNK_BYTES;
    let mut ranges: Vec<String> = [
        ":",
        "0:",
        ":-0",
        "-0:",
        "0:0",
        "-1:",
        ":-1",
        "-100000:",
        "-3M:-1M",
        "99999999:",
        "1M:1M",
        "5:4",
    ]
    .iter()
    .map(|text| text.to_string())
    .collect();
    ranges.push(format!("0:{length}"));
    ranges.push(format!("{length}:"));
    ranges.push(format!("{}:{}", length - 1, length + 10));
    for (start, end) in [
        (0, c),
        (c - 1, c + 1),
        (c, 2 * c),
        (7 * c + 5, 9 * c - 5),
        (100, MIB),
        (MIB - 7, 4 * MIB + 9),
        (3, length - 3),
        (255 * c, 257 * c + 1),
        (320 * c - 1, length),
    ] {
        ranges.push(format!("{start}:{end}"));
    }
    for engine in engines() {
        let name = format!(
            "{} on {} threads",
            engine.backend().name(),
            engine.threads()
        );
        let batches: &[usize] = if engine.backend().is_gpu() {
            &[0, 64]
        } else {
            &[0, 1, 7, 256]
        };
        for &batch in batches {
            for text in &ranges {
                let (start, end) = text.parse::<ByteRange>().unwrap().resolve(length as u64);
                let (output, result) = read_range(&engine, &sealed, text, batch);
                let written = result.unwrap_or_else(|error| {
                    panic!("{name}, batches of {batch}, range {text}: {error}")
                });
                assert_eq!(
                    written as usize,
                    output.bytes.len(),
                    "{name}, batches of {batch}, range {text}"
                );
                assert!(
                    output.bytes == message[start as usize..end as usize],
                    "{name}, batches of {batch}, range {text}: wrong bytes"
                );
            }
        }
    }
}

#[test]
fn a_damaged_chunk_releases_the_batches_before_it_and_nothing_after() {
    let message = plaintext(5 * MIB + 1234);
    let length = message.len();
    let (sealed, offset) = seal(&message);
    let mut damaged = sealed.clone();
    damaged[offset + 250 * SEALED_CHUNK_BYTES + 99] ^= 0x10;
    for engine in engines() {
        let name = engine.backend().name();
        for (text, start) in [
            (format!("0:{length}"), 0),
            (format!("1000:{}", 300 * CHUNK_BYTES), 1000),
        ] {
            let (output, result) = read_range(&engine, &damaged, &text, 8);
            assert!(
                matches!(result, Err(FormatError::DamagedChunk { index: 250, .. })),
                "{name} {text}: {result:?}"
            );
            // Written batch by batch as each authenticated: everything before the chunk,
            // nothing of it or after it.
            assert!(
                output.bytes == message[start..250 * CHUNK_BYTES],
                "{name} {text}: released {} bytes",
                output.bytes.len()
            );
            assert!(
                output.calls > 1,
                "{name} {text}: the range was not written in batches"
            );
        }
        // The damage is outside this range: it decrypts.
        let (output, result) = read_range(&engine, &damaged, "0:3M", 8);
        assert_eq!(result.unwrap(), 3 * MIB as u64);
        assert!(output.bytes == message[..3 * MIB]);
        // Relative to the end: the final chunk is authenticated before anything is released.
        let mut bad_end = sealed.clone();
        let last = bad_end.len() - 3;
        bad_end[last] ^= 1;
        for text in ["-10:", ":", ":-1", "0:99999999"] {
            let (output, result) = read_range(&engine, &bad_end, text, 8);
            assert!(
                matches!(result, Err(FormatError::DamagedChunk { index: 320, .. })),
                "{name} {text}: {result:?}"
            );
            assert!(
                output.bytes.is_empty(),
                "{name} {text}: released before the end was authenticated"
            );
        }
    }
}

#[test]
fn a_file_cut_shorter_than_its_range_is_refused() {
    let message = plaintext(40 * CHUNK_BYTES + 5);
    let (sealed, offset) = seal(&message);
    let engine = Engine::new(Backend::Pool, Some(3)).unwrap();
    // Whole chunks missing at the end: the geometry no longer has a final chunk.
    let cut = &sealed[..offset + 20 * SEALED_CHUNK_BYTES];
    let (output, result) = read_range(&engine, cut, "0:100", 4);
    assert!(
        matches!(result, Err(FormatError::TruncatedAfter { chunks: 20 })),
        "{result:?}"
    );
    assert!(output.bytes.is_empty());
}
