//! Round trips at the chunk boundaries for every recipient type, armored and not, through
//! the streaming and random-access readers; and misuse, each a one-line error, never a
//! panic and never plaintext.

use std::io::{Cursor, Read, Seek, SeekFrom, Write};

use parcrypt_age::stream::{CHUNK_BYTES, SEALED_CHUNK_BYTES};
use parcrypt_age::{
    decrypt_to_vec, encrypt, encrypt_to_vec, Decryptor, Error, HybridIdentity, Identity,
    Passphrase, Recipient, ScryptIdentity, ScryptRecipient, SeekableReader, X25519Identity,
};

const SIZES: [usize; 6] = [
    0,
    1,
    CHUNK_BYTES - 1,
    CHUNK_BYTES,
    CHUNK_BYTES + 1,
    (1 << 20) + 17,
];

fn plaintext(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i % 251) as u8 ^ (i >> 16) as u8)
        .collect()
}

fn pairs() -> Vec<(&'static str, Vec<Recipient>, Vec<Identity>)> {
    let x1 = X25519Identity::generate();
    let x2 = X25519Identity::generate();
    let pq1 = HybridIdentity::generate();
    let pq2 = HybridIdentity::generate();
    let pass = Passphrase::new(b"correct horse battery staple".to_vec());
    vec![
        (
            "x25519",
            vec![x1.to_public().into()],
            vec![x1.clone().into()],
        ),
        (
            "two x25519, second opens",
            vec![x1.to_public().into(), x2.to_public().into()],
            vec![x2.into()],
        ),
        (
            "hybrid",
            vec![pq1.to_public().into()],
            vec![pq1.clone().into()],
        ),
        (
            "two hybrid, first opens",
            vec![pq1.to_public().into(), pq2.to_public().into()],
            vec![pq1.into()],
        ),
        (
            "scrypt",
            vec![ScryptRecipient::new(pass.clone())
                .work_factor(10)
                .unwrap()
                .into()],
            vec![ScryptIdentity::new(pass).into()],
        ),
    ]
}

#[test]
fn round_trips_at_chunk_boundaries() {
    for (name, recipients, identities) in pairs() {
        for len in SIZES {
            let data = plaintext(len);
            for armor in [false, true] {
                let file = encrypt_to_vec(&recipients, armor, &data).unwrap();
                let chunks = len.div_ceil(CHUNK_BYTES).max(1);
                if !armor {
                    let header = Decryptor::new(file.as_slice()).unwrap().header().len();
                    assert_eq!(file.len(), header + 16 + len + 16 * chunks, "{name} {len}");
                }
                assert_eq!(
                    decrypt_to_vec(&file, &identities).unwrap(),
                    data,
                    "{name} {len} {armor}"
                );
                // The streaming reader, in small reads.
                let mut reader = Decryptor::new(file.as_slice())
                    .unwrap()
                    .decrypt(&identities)
                    .unwrap();
                let mut out = Vec::new();
                let mut buf = [0u8; 7777];
                loop {
                    let n = reader.read(&mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    out.extend_from_slice(&buf[..n]);
                }
                assert_eq!(out, data);
            }
        }
    }
}

#[test]
fn writes_in_odd_pieces_match() {
    let identity = X25519Identity::generate();
    let data = plaintext(5 * (1 << 20) + 3);
    let mut writer = encrypt(&[identity.to_public().into()], false, Vec::new()).unwrap();
    for piece in data.chunks(65_537) {
        writer.write_all(piece).unwrap();
    }
    let file = writer.finish().unwrap();
    assert_eq!(decrypt_to_vec(&file, &[identity.into()]).unwrap(), data);
}

#[test]
fn seeking_reads_only_what_is_asked() {
    let identity = X25519Identity::generate();
    let data = plaintext(3 * CHUNK_BYTES + 100);
    let file = encrypt_to_vec(&[identity.to_public().into()], false, &data).unwrap();
    let ids = [Identity::from(identity)];
    let mut reader = SeekableReader::new(Cursor::new(&file), &ids).unwrap();
    assert_eq!(reader.plaintext_len(), data.len() as u64);
    for (from, len) in [
        (0, 10),
        (CHUNK_BYTES - 3, 6),
        (2 * CHUNK_BYTES + 5, CHUNK_BYTES + 95),
        (data.len() - 1, 1),
    ] {
        reader.seek(SeekFrom::Start(from as u64)).unwrap();
        let mut buf = vec![0u8; len];
        reader.read_exact(&mut buf).unwrap();
        assert_eq!(buf, data[from..from + len]);
    }
    reader.seek(SeekFrom::End(-4)).unwrap();
    let mut tail = Vec::new();
    reader.read_to_end(&mut tail).unwrap();
    assert_eq!(tail, data[data.len() - 4..]);
    // A tampered chunk in the middle fails only when read.
    let mut tampered = file.clone();
    let header = file.len() - 16 - data.len() - 4 * 16;
    tampered[header + 16 + SEALED_CHUNK_BYTES + 5] ^= 1;
    let mut reader = SeekableReader::new(Cursor::new(&tampered), &ids).unwrap();
    let mut first = vec![0u8; 100];
    reader.read_exact(&mut first).unwrap();
    assert_eq!(first, data[..100]);
    reader
        .seek(SeekFrom::Start(CHUNK_BYTES as u64 + 1))
        .unwrap();
    let error = reader.read(&mut first).unwrap_err();
    assert!(
        error.to_string().contains("chunk 1 does not authenticate"),
        "{error}"
    );
    // A tampered final chunk fails at once: the length is not trusted.
    let mut tampered = file.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    assert!(matches!(
        SeekableReader::new(Cursor::new(&tampered), &ids),
        Err(Error::Payload(_))
    ));
    // Armored files are not seekable.
    let armored = encrypt_to_vec(&[ids[0].to_public().unwrap()], true, &data).unwrap();
    assert!(matches!(
        SeekableReader::new(Cursor::new(&armored), &ids),
        Err(Error::Armor(_))
    ));
}

/// Decrypts whole and expects an error: one line, and what kind.
fn refuse(file: &[u8], ids: &[Identity]) -> Error {
    let error = decrypt_to_vec(file, ids).unwrap_err();
    let message = error.to_string();
    assert!(
        !message.is_empty() && !message.contains('\n'),
        "{message:?}"
    );
    error
}

#[test]
fn misuse_gives_one_line_errors() {
    let identity = X25519Identity::generate();
    let ids = [Identity::from(identity.clone())];
    let data = plaintext(2 * CHUNK_BYTES + 10);
    let file = encrypt_to_vec(&[identity.to_public().into()], false, &data).unwrap();
    let header_len = Decryptor::new(file.as_slice()).unwrap().header().len();

    // Wrong identity, of each kind.
    let other: Identity = X25519Identity::generate().into();
    assert!(matches!(refuse(&file, &[other]), Error::NoMatch(_)));
    let pq: Identity = HybridIdentity::generate().into();
    assert!(matches!(refuse(&file, &[pq]), Error::NoMatch(_)));
    assert!(matches!(refuse(&file, &[]), Error::Key(_)));

    // A tampered stanza body, share, MAC, version.
    let text = String::from_utf8_lossy(&file[..header_len]).into_owned();
    let lines: Vec<&str> = text.split('\n').collect();
    let mut body = file.clone();
    let body_at = lines[0].len() + lines[1].len() + 2;
    body[body_at] = if body[body_at] == b'A' { b'B' } else { b'A' };
    assert!(matches!(
        refuse(&body, &ids),
        Error::NoMatch(_) | Error::Header(_)
    ));
    let mut share = file.clone();
    let share_at = lines[0].len() + 1 + 10;
    share[share_at] = if share[share_at] == b'A' { b'B' } else { b'A' };
    assert!(matches!(
        refuse(&share, &ids),
        Error::NoMatch(_) | Error::Header(_)
    ));
    let mut mac = file.clone();
    let mac_at = header_len - 5;
    mac[mac_at] = if mac[mac_at] == b'A' { b'B' } else { b'A' };
    assert!(matches!(
        refuse(&mac, &ids),
        Error::HeaderMac | Error::Header(_)
    ));
    let mut version = file.clone();
    version[19] = b'x';
    assert!(refuse(&version, &ids).is_header_failure());

    // Payload: a flipped bit, truncation anywhere, trailing data.
    let mut flipped = file.clone();
    flipped[header_len + 16 + 100] ^= 0x80;
    assert!(matches!(refuse(&flipped, &ids), Error::Payload(_)));
    for cut in [1, 15, 16, 17, 200, SEALED_CHUNK_BYTES] {
        let truncated = &file[..file.len() - cut];
        assert!(
            matches!(refuse(truncated, &ids), Error::Payload(_)),
            "cut {cut}"
        );
    }
    let no_payload = &file[..header_len + 16];
    assert!(matches!(refuse(no_payload, &ids), Error::Payload(_)));
    let short_nonce = &file[..header_len + 7];
    assert!(refuse(short_nonce, &ids).is_header_failure());
    for extra in [1, 16, 100] {
        let mut trailing = file.clone();
        trailing.extend(std::iter::repeat_n(0u8, extra));
        assert!(
            matches!(refuse(&trailing, &ids), Error::Payload(_)),
            "extra {extra}"
        );
    }

    // Huge header lines and endless headers are refused without buffering them.
    let mut huge = b"age-encryption.org/v1\n-> X25519 ".to_vec();
    huge.extend(std::iter::repeat_n(b'A', 50 << 20));
    assert!(refuse(&huge, &ids).is_header_failure());
    let mut endless = b"age-encryption.org/v1\n".to_vec();
    while endless.len() < 6 << 20 {
        endless.extend_from_slice(b"-> x y\nAAAA\n");
    }
    assert!(refuse(&endless, &ids).is_header_failure());
    assert!(refuse(b"", &ids).is_header_failure());
    assert!(refuse(b"not an age file at all", &ids).is_header_failure());

    // Armor damage.
    let armored = encrypt_to_vec(&[identity.to_public().into()], true, &data).unwrap();
    let mut damaged = armored.clone();
    damaged.truncate(damaged.len() - 10);
    assert!(matches!(refuse(&damaged, &ids), Error::Armor(_)));
    let mut garbage = armored.clone();
    garbage.extend_from_slice(b"garbage\n");
    assert!(matches!(refuse(&garbage, &ids), Error::Armor(_)));

    // Recipient combinations age refuses.
    let pass = Passphrase::new(b"p".to_vec());
    let scrypt: Recipient = ScryptRecipient::new(pass.clone()).into();
    let x: Recipient = identity.to_public().into();
    let hybrid: Recipient = HybridIdentity::generate().to_public().into();
    for recipients in [vec![scrypt.clone(), x.clone()], vec![hybrid, x], vec![]] {
        let error = encrypt_to_vec(&recipients, false, b"x").unwrap_err();
        assert!(matches!(error, Error::Recipients(_)), "{error}");
    }

    // A hostile scrypt work factor is refused before any work, and can be allowed.
    let slow = encrypt_to_vec(
        &[ScryptRecipient::new(pass.clone())
            .work_factor(12)
            .unwrap()
            .into()],
        false,
        b"x",
    )
    .unwrap();
    let strict: Identity = ScryptIdentity::new(pass.clone()).max_work_factor(11).into();
    assert!(matches!(
        refuse(&slow, &[strict]),
        Error::WorkFactor { got: 12, max: 11 }
    ));
    let relaxed: Identity = ScryptIdentity::new(pass).max_work_factor(12).into();
    assert_eq!(decrypt_to_vec(&slow, &[relaxed]).unwrap(), b"x");
}

/// Every truncation and thousands of single-byte changes of small files (binary and armored,
/// X25519 and hybrid): always an error of one line, never a panic, never plaintext.
#[test]
fn every_truncation_and_byte_change_is_refused() {
    let x = X25519Identity::generate();
    let pq = HybridIdentity::generate();
    let data = plaintext(CHUNK_BYTES + 100);
    let cases: [(Recipient, Identity); 2] = [
        (x.to_public().into(), x.into()),
        (pq.to_public().into(), pq.into()),
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (recipient, identity) in cases {
        let ids = [identity];
        for armor in [false, true] {
            let file = encrypt_to_vec(std::slice::from_ref(&recipient), armor, &data).unwrap();
            let header = Decryptor::new(file.as_slice()).unwrap().header().len();
            // Every truncation through the header and the nonce, then a sample of the rest.
            let cuts = (0..file.len())
                .filter(|&n| n <= header + 40 || n % 997 == 0 || n + 40 >= file.len());
            for n in cuts {
                // The armor's last line may lack its newline.
                if armor && n + 1 == file.len() {
                    assert!(decrypt_to_vec(&file[..n], &ids).is_ok_and(|plain| plain == data));
                    continue;
                }
                match decrypt_to_vec(&file[..n], &ids) {
                    Ok(_) => panic!("cut to {n} of {} bytes, accepted", file.len()),
                    Err(error) => {
                        let message = error.to_string();
                        assert!(!message.contains('\n'), "{message:?}");
                        assert!(!matches!(error, Error::NoMatch(_)), "cut {n}: {message}");
                    }
                }
            }
            for _ in 0..800 {
                let mut damaged = file.clone();
                let at = (next() % damaged.len() as u64) as usize;
                let value = (next() % 255 + 1) as u8;
                damaged[at] ^= value;
                match decrypt_to_vec(&damaged, &ids) {
                    // Armor may hide a change in the whitespace it allows at the end.
                    Ok(plain) => assert!(
                        armor && plain == data && at + 1 == file.len(),
                        "byte {at} of {} changed, accepted",
                        file.len()
                    ),
                    Err(error) => {
                        let message = error.to_string();
                        assert!(!message.contains('\n'), "{message:?}");
                    }
                }
            }
        }
    }
}

/// A `Read + Seek` that counts the bytes read through it.
struct Counting<R> {
    inner: R,
    read: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

impl<R: Seek> Seek for Counting<R> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(to)
    }
}

#[test]
fn a_seek_reads_only_the_chunks_under_it() {
    let identity = X25519Identity::generate();
    let data = plaintext(40 * CHUNK_BYTES + 123);
    let file = encrypt_to_vec(&[identity.to_public().into()], false, &data).unwrap();
    let read = std::rc::Rc::new(std::cell::Cell::new(0));
    let input = Counting {
        inner: Cursor::new(&file),
        read: read.clone(),
    };
    let mut reader = SeekableReader::new(input, &[identity.into()]).unwrap();
    // The header (read through a buffer of up to 16 KiB), the nonce and the final chunk.
    let opened = read.get();
    assert!(
        opened <= 16 * 1024 + 16 + 123 + 16,
        "{opened} bytes to open"
    );
    // 1 KiB at 30.5 chunks: one chunk is read.
    let from = 30 * CHUNK_BYTES + CHUNK_BYTES / 2;
    reader.seek(SeekFrom::Start(from as u64)).unwrap();
    let mut buf = vec![0u8; 1024];
    reader.read_exact(&mut buf).unwrap();
    assert_eq!(buf, data[from..from + 1024]);
    assert_eq!(read.get() - opened, SEALED_CHUNK_BYTES as u64);
}

/// A reader that hands out at most `piece` bytes a call.
struct Pieces<'a> {
    data: &'a [u8],
    piece: usize,
}

impl Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.piece).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

const BATCH: usize = 64 * CHUNK_BYTES;

#[test]
fn copy_from_matches_writes_at_batch_boundaries() {
    let identity = X25519Identity::generate();
    let recipients = [Recipient::from(identity.to_public())];
    let ids = [Identity::from(identity)];
    for len in [0, 1, BATCH - 1, BATCH, BATCH + 1, 2 * BATCH, 3 * BATCH + 5] {
        let data = plaintext(len);
        let chunks = len.div_ceil(CHUNK_BYTES).max(1);
        for piece in [1 << 30, 100_003] {
            let mut writer = encrypt(&recipients, false, Vec::new()).unwrap();
            let mut input = Pieces { data: &data, piece };
            assert_eq!(writer.copy_from(&mut input).unwrap(), len as u64);
            // Nothing more: the input is at its end.
            assert_eq!(writer.copy_from(&mut input).unwrap(), 0);
            let file = writer.finish().unwrap();
            let header = Decryptor::new(file.as_slice()).unwrap().header().len();
            assert_eq!(file.len(), header + 16 + len + 16 * chunks, "{len} {piece}");
            assert_eq!(decrypt_to_vec(&file, &ids).unwrap(), data, "{len} {piece}");
        }
        // Writes, then a copy, then writes: one plaintext.
        let cut = len / 3;
        let mut writer = encrypt(&recipients, false, Vec::new()).unwrap();
        writer.write_all(&data[..cut]).unwrap();
        let mut input = Pieces {
            data: &data[cut..len - len / 4],
            piece: 65_537,
        };
        writer.copy_from(&mut input).unwrap();
        writer.write_all(&data[len - len / 4..]).unwrap();
        let file = writer.finish().unwrap();
        assert_eq!(decrypt_to_vec(&file, &ids).unwrap(), data, "{len} mixed");
    }
}

/// The plaintext `decrypt_to` writes before its error, and the error.
fn released_by_decrypt_to(file: &[u8], ids: &[Identity]) -> (Vec<u8>, Option<String>) {
    let reader = Decryptor::new(file).unwrap().decrypt(ids).unwrap();
    let mut out = Vec::new();
    let error = reader.decrypt_to(&mut out).err().map(|e| e.to_string());
    (out, error)
}

/// The plaintext the streaming reader releases before its error, and the error.
fn released_by_reads(file: &[u8], ids: &[Identity]) -> (Vec<u8>, Option<String>) {
    let mut reader = Decryptor::new(file).unwrap().decrypt(ids).unwrap();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 300_000];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return (out, None),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(error) => return (out, Some(error.to_string())),
        }
    }
}

#[test]
fn decrypt_to_releases_exactly_the_chunks_before_a_failure_across_batches() {
    let identity = X25519Identity::generate();
    let len = 3 * BATCH + 5;
    let data = plaintext(len);
    let file = encrypt_to_vec(&[identity.to_public().into()], false, &data).unwrap();
    let ids = [Identity::from(identity)];
    let payload = Decryptor::new(file.as_slice()).unwrap().header().len() + 16;
    assert_eq!(released_by_decrypt_to(&file, &ids), (data.clone(), None));
    // A damaged chunk in each batch, and in the final chunk: the chunks before it, then the
    // error; the streaming reader releases the same.
    for chunk in [0, 63, 64, 100, 128, 191, 192] {
        let mut damaged = file.clone();
        damaged[payload + chunk * SEALED_CHUNK_BYTES + 7] ^= 0x40;
        let (out, error) = released_by_decrypt_to(&damaged, &ids);
        assert_eq!(out.len(), chunk * CHUNK_BYTES, "chunk {chunk}");
        assert_eq!(out, data[..chunk * CHUNK_BYTES]);
        assert!(
            error.as_deref().unwrap().contains("does not authenticate"),
            "{error:?}"
        );
        assert_eq!(released_by_reads(&damaged, &ids), (out, error));
    }
    // Cut after whole batches or chunks: every full chunk is released, then "no final chunk".
    for chunks in [64, 128, 130, 192] {
        let cut = &file[..payload + chunks * SEALED_CHUNK_BYTES];
        let (out, error) = released_by_decrypt_to(cut, &ids);
        assert_eq!(out, data[..chunks * CHUNK_BYTES], "{chunks} chunks");
        assert!(
            error.as_deref().unwrap().contains("without a final chunk"),
            "{error:?}"
        );
        assert_eq!(released_by_reads(cut, &ids), (out, error));
    }
    // Reads first, then decrypt_to: one plaintext.
    let mut reader = Decryptor::new(file.as_slice())
        .unwrap()
        .decrypt(&ids)
        .unwrap();
    let mut start = vec![0u8; 1000];
    reader.read_exact(&mut start).unwrap();
    let mut rest = Vec::new();
    assert_eq!(reader.decrypt_to(&mut rest).unwrap(), (len - 1000) as u64);
    start.extend_from_slice(&rest);
    assert_eq!(start, data);
}
