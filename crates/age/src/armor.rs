//! ASCII armor: strict PEM (RFC 7468 section 3) with the label `AGE ENCRYPTED FILE`, padded
//! base64 in 64-column lines. Reading accepts LF and CRLF line ends and up to 1 KiB of
//! whitespace before and after the block, and nothing else: no headers, no short line before
//! the last, no non-canonical base64, no data after the end line.

use std::io::{self, BufRead, Read, Write};

use base64ct::{Base64, Encoding};

/// The first line of an armored file.
pub const BEGIN: &str = "-----BEGIN AGE ENCRYPTED FILE-----";
/// The last line of an armored file.
pub const END: &str = "-----END AGE ENCRYPTED FILE-----";
const COLUMNS: usize = 64;
const BYTES_PER_LINE: usize = COLUMNS / 4 * 3;
const MAX_WHITESPACE: usize = 1024;

/// Armors what is written to it; [`ArmorWriter::finish`] writes the last line and the end.
pub struct ArmorWriter<W: Write> {
    inner: W,
    pending: Vec<u8>,
    line: [u8; COLUMNS + 1],
}

impl<W: Write> ArmorWriter<W> {
    /// Writes the begin line to `inner`.
    pub fn new(mut inner: W) -> io::Result<ArmorWriter<W>> {
        inner.write_all(BEGIN.as_bytes())?;
        inner.write_all(b"\n")?;
        Ok(ArmorWriter {
            inner,
            pending: Vec::with_capacity(BYTES_PER_LINE * 1024),
            line: [0; COLUMNS + 1],
        })
    }

    fn write_lines(&mut self, all: bool) -> io::Result<()> {
        let whole = if all {
            self.pending.len()
        } else {
            self.pending.len() / BYTES_PER_LINE * BYTES_PER_LINE
        };
        let mut text = Vec::with_capacity(whole / BYTES_PER_LINE * (COLUMNS + 1) + COLUMNS + 1);
        for piece in self.pending[..whole].chunks(BYTES_PER_LINE) {
            let encoded = Base64::encode(piece, &mut self.line).map_err(io::Error::other)?;
            text.extend_from_slice(encoded.as_bytes());
            text.push(b'\n');
        }
        self.inner.write_all(&text)?;
        self.pending.drain(..whole);
        Ok(())
    }

    /// Writes the last line and the end line; returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.write_lines(true)?;
        self.inner.write_all(END.as_bytes())?;
        self.inner.write_all(b"\n")?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for ArmorWriter<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(data);
        if self.pending.len() >= BYTES_PER_LINE * 1024 {
            self.write_lines(false)?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn armor_error(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, ArmorError(message.into()))
}

/// The error inside the [`io::Error`] an [`ArmorReader`] returns for malformed armor.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ArmorError(pub String);

/// Reads the binary file out of its armor, checking the armor strictly as it goes.
pub struct ArmorReader<R: BufRead> {
    inner: R,
    started: bool,
    done: bool,
    decoded: Vec<u8>,
    position: usize,
    line: Vec<u8>,
    failed: Option<String>,
}

impl<R: BufRead> ArmorReader<R> {
    /// Reads armor from `inner`.
    pub fn new(inner: R) -> ArmorReader<R> {
        ArmorReader {
            inner,
            started: false,
            done: false,
            decoded: Vec::with_capacity(BYTES_PER_LINE),
            position: 0,
            line: Vec::with_capacity(COLUMNS + 2),
            failed: None,
        }
    }

    /// Reads one line into `self.line` without its LF or CRLF; false at the end of input.
    /// Lines longer than `max` are refused before they are buffered.
    fn next_line(&mut self, max: usize) -> io::Result<bool> {
        self.line.clear();
        let mut any = false;
        loop {
            let available = self.inner.fill_buf()?;
            if available.is_empty() {
                return Ok(any);
            }
            any = true;
            let (take, done) = match available.iter().position(|&c| c == b'\n') {
                Some(end) => (end + 1, true),
                None => (available.len(), false),
            };
            if self.line.len() + take > max + 2 {
                return Err(armor_error("a line is too long"));
            }
            self.line.extend_from_slice(&available[..take]);
            self.inner.consume(take);
            if done {
                break;
            }
        }
        if self.line.last() == Some(&b'\n') {
            self.line.pop();
        }
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        Ok(true)
    }

    fn drain_trailing(&mut self) -> io::Result<()> {
        let mut rest = Vec::new();
        (&mut self.inner)
            .take(MAX_WHITESPACE as u64 + 1)
            .read_to_end(&mut rest)?;
        if !rest.iter().all(u8::is_ascii_whitespace) {
            return Err(armor_error("data after the end line"));
        }
        if rest.len() > MAX_WHITESPACE {
            return Err(armor_error("too much whitespace after the end line"));
        }
        self.done = true;
        Ok(())
    }

    fn refill(&mut self) -> io::Result<()> {
        let mut whitespace = 0;
        while !self.started {
            if !self.next_line(MAX_WHITESPACE + COLUMNS)? {
                return Err(armor_error("no begin line"));
            }
            if self.line.iter().all(u8::is_ascii_whitespace) {
                whitespace += self.line.len() + 1;
                if whitespace > MAX_WHITESPACE {
                    return Err(armor_error("too much whitespace before the begin line"));
                }
                continue;
            }
            if self.line != BEGIN.as_bytes() {
                return Err(armor_error("the first line is not the begin line"));
            }
            self.started = true;
        }
        if !self.next_line(COLUMNS)? {
            return Err(armor_error("no end line"));
        }
        if self.line == END.as_bytes() {
            return self.drain_trailing();
        }
        if self.line.is_empty() {
            return Err(armor_error("an empty line"));
        }
        if self.line.len() > COLUMNS {
            return Err(armor_error("a line is longer than 64 columns"));
        }
        let text = std::str::from_utf8(&self.line).map_err(|_| armor_error("not base64"))?;
        self.decoded.clear();
        self.position = 0;
        self.decoded = Base64::decode_vec(text).map_err(|_| armor_error("not canonical base64"))?;
        self.position = 0;
        if self.decoded.len() < BYTES_PER_LINE {
            if !self.next_line(COLUMNS)? || self.line != END.as_bytes() {
                return Err(armor_error("a short line is not followed by the end line"));
            }
            self.drain_trailing()?;
        }
        Ok(())
    }
}

impl<R: BufRead> Read for ArmorReader<R> {
    /// Fills as much of `buf` as the armor has, line after line. An armor error is reported
    /// after the bytes decoded before it, and again on every later call.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut written = 0;
        while written < buf.len() {
            if self.position == self.decoded.len() {
                if self.done || self.failed.is_some() {
                    break;
                }
                if let Err(error) = self.refill() {
                    let is_armor = error
                        .get_ref()
                        .is_some_and(|inner| inner.downcast_ref::<ArmorError>().is_some());
                    if !is_armor {
                        return Err(error);
                    }
                    self.failed = Some(error.to_string());
                    self.decoded.clear();
                    self.position = 0;
                }
                continue;
            }
            let n = (buf.len() - written).min(self.decoded.len() - self.position);
            buf[written..written + n]
                .copy_from_slice(&self.decoded[self.position..self.position + n]);
            self.position += n;
            written += n;
        }
        if written == 0 && !buf.is_empty() {
            if let Some(message) = &self.failed {
                return Err(armor_error(message.clone()));
            }
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn armor(data: &[u8]) -> Vec<u8> {
        let mut writer = ArmorWriter::new(Vec::new()).unwrap();
        writer.write_all(data).unwrap();
        writer.finish().unwrap()
    }

    fn dearmor(text: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        ArmorReader::new(text).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn round_trip() {
        for len in [0, 1, 47, 48, 49, 96, 1000, 48 * 1024 + 3] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let text = armor(&data);
            assert!(text.split(|&c| c == b'\n').all(|line| line.len() <= 64));
            assert_eq!(dearmor(&text).unwrap(), data);
            let crlf = String::from_utf8(text.clone())
                .unwrap()
                .replace('\n', "\r\n");
            assert_eq!(dearmor(crlf.as_bytes()).unwrap(), data);
            let mut garbage = text.clone();
            garbage.extend_from_slice(b"x");
            assert!(dearmor(&garbage).is_err());
        }
    }
}
