//! Readers and writers that misbehave on purpose, for the stream tests: shared by the
//! engine's and the format's (`#[path]`), so it uses only `std`.

#![allow(dead_code)] // each includer uses what it needs

use std::io::{self, Read, Write};

/// Reads `data` at most `step` bytes at a time, to exercise refilling.
pub struct Trickle<'a> {
    pub data: &'a [u8],
    pub step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let count = self.step.min(buffer.len()).min(self.data.len());
        buffer[..count].copy_from_slice(&self.data[..count]);
        self.data = &self.data[count..];
        Ok(count)
    }
}

/// A writer whose every write fails as a closed pipe ("pipe closed").
pub struct Broken;

impl Write for Broken {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::new(io::ErrorKind::BrokenPipe, "pipe closed"))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A reader whose every read fails ("disk on fire").
pub struct Failing;

impl Read for Failing {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Err(io::Error::other("disk on fire"))
    }
}
