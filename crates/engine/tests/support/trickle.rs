//! A reader that hands out at most `step` bytes per call, to exercise refilling: shared by
//! the engine's stream tests and the format's (`#[path]`), so it uses only `std`.

use std::io::{self, Read};

/// Reads `data` at most `step` bytes at a time.
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
