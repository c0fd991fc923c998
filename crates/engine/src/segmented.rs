//! [`SegmentedMessage`]: one whole message whose segments the caller runs on threads of its
//! own (the JVM library's `JavaThreads` and `ForkJoin` strategies do), each segment on the
//! calling thread with the one-thread kernel. Every rule of the mode stays here: the CTR
//! and GCM counter at a segment's offset, CBC's chain, GCM's partial GHASH sums joined in
//! order with powers of H, PKCS#7 padding and the tag. The caller only decides where the
//! segments begin and which thread runs each.
//!
//! GCM decryption releases no byte before its tag matched: its segments run in two rounds.
//! The first only hashes the ciphertext and writes nothing, [`SegmentedMessage::authenticate`]
//! checks the tag, and only then does a second round decrypt into the output.

use std::sync::Mutex;

use parcrypt_modes::ctr::{self, Counter, CounterRule};
use parcrypt_modes::gcm::{GcmAccumulator, GcmError, GcmMessage, MAX_TEXT_BYTES, TAG_BYTES};
use parcrypt_modes::{cbc, ecb, padding, CipherSpec, Direction, Mode};
use zeroize::{Zeroize, Zeroizing};

use crate::crypter::{check_iv_and_aad, check_message_length, JobError};
use crate::KeyedCipher;

/// How much of an ECB or CBC segment's input is copied to its output before the cipher runs
/// over it: the CTR mode's piece, small enough to stay in the L2 cache in between.
const COPY_PIECE_BYTES: usize = ctr::COPY_PIECE_BYTES;

/// One segment's input and output.
pub enum Segment<'a> {
    /// The segment's bytes, replaced by their output.
    InPlace(&'a mut [u8]),
    /// Input and output in separate memory of the same length.
    Separate {
        /// The segment's input.
        input: &'a [u8],
        /// Where its output goes.
        output: &'a mut [u8],
    },
}

impl Segment<'_> {
    fn len(&self) -> usize {
        match self {
            Segment::InPlace(data) => data.len(),
            Segment::Separate { input, .. } => input.len(),
        }
    }
}

/// A segment that ran: where it lies and, for GCM, the GHASH partial sum of its ciphertext.
struct Done {
    offset: usize,
    length: usize,
    partial: u128,
}

/// What a segment does now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Round {
    /// The mode over the segment, in the one round of every message but GCM decryption.
    Only,
    /// GCM decryption's first round: GHASH over the ciphertext, nothing written.
    Authenticate,
    /// GCM decryption's second round, once the tag matched: CTR into the output.
    Release,
    /// GCM decryption whose tag did not match: nothing runs any more.
    Refused,
}

/// The round in progress and the segments that ran in it.
struct Progress {
    round: Round,
    done: Vec<Done>,
}

/// One message under a [`KeyedCipher`], cut into segments by the caller. Made by
/// [`KeyedCipher::segmented`]; its segments ([`SegmentedMessage::segment`]) may run on any
/// threads in any order, and [`SegmentedMessage::finish`] then checks that they covered the
/// body exactly once and ends the message (padding, tag).
///
/// GCM decryption takes two rounds ([`SegmentedMessage::rounds`]): the segments run once,
/// writing nothing (their ciphertext is only hashed); [`SegmentedMessage::authenticate`]
/// checks the tag; the segments run again, decrypting into the output; then `finish`. A tag
/// that does not match leaves the output untouched and refuses every later segment. Every
/// other message takes one round: segments, then `finish` (`authenticate` in between does
/// nothing), so a caller can run each message as "a round, `authenticate`, a second round
/// when [`SegmentedMessage::rounds`] says 2, `finish`".
///
/// The body is the part of the input that segments cover: all of it for CTR and for ECB
/// and CBC decryption; the whole blocks for padded ECB and CBC encryption (the last
/// partial block goes to `finish`, padded); all but the 16-byte tag for GCM decryption.
/// CBC encryption is sequential: its body is one segment. CBC decryption chains each
/// segment on the ciphertext block before it, so it splits only when the output is
/// separate from the input.
///
/// ```
/// use parcrypt_engine::segmented::Segment;
/// use parcrypt_engine::{Backend, Direction, Engine, KeyedCipher};
///
/// let cipher = KeyedCipher::new(Engine::new(Backend::Seq, None)?, "aes-128-gcm".parse()?, &[5u8; 16])?;
/// let plaintext = vec![7u8; 1000];
/// let message = cipher.segmented(Direction::Encrypt, Some(&[1u8; 12]), None, plaintext.len())?;
/// let mut output = vec![0u8; message.max_output_length()];
/// let half = message.body_length() / 2 / 16 * 16;
/// let (first, second) = output[..message.body_length()].split_at_mut(half);
/// std::thread::scope(|scope| {
///     let message = &message;
///     let plaintext = &plaintext;
///     let a = scope.spawn(move || message.segment(0, None, Segment::Separate { input: &plaintext[..half], output: first }));
///     let b = scope.spawn(move || message.segment(half, None, Segment::Separate { input: &plaintext[half..], output: second }));
///     a.join().unwrap().and(b.join().unwrap())
/// })?;
/// let written = message.finish(&[], &mut output)?;
/// assert_eq!(output[..written], cipher.encrypt(Some(&[1u8; 12]), &plaintext, None)?[..]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SegmentedMessage {
    cipher: KeyedCipher,
    direction: Direction,
    iv: Zeroizing<Vec<u8>>,
    aad: Vec<u8>,
    gcm: Option<GcmMessage>,
    input_length: usize,
    body: usize,
    progress: Mutex<Progress>,
}

impl std::fmt::Debug for SegmentedMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentedMessage")
            .field("suite", &self.cipher.suite())
            .field("direction", &self.direction)
            .field("input_length", &self.input_length)
            .finish_non_exhaustive()
    }
}

fn segment_error(reason: String) -> JobError {
    JobError::Segment(reason)
}

impl KeyedCipher {
    /// Starts one message of `input_length` bytes under `iv` and `aad` whose segments the
    /// caller runs on threads of its own (see [`SegmentedMessage`]). The IV, AAD and length
    /// are checked now.
    pub fn segmented(
        &self,
        direction: Direction,
        iv: Option<&[u8]>,
        aad: Option<&[u8]>,
        input_length: usize,
    ) -> Result<SegmentedMessage, JobError> {
        let suite = self.suite();
        let iv = check_iv_and_aad(suite, iv, aad, self.allows_short_gcm_iv())?;
        let through_cipher = self.max_output_length(direction, input_length);
        check_message_length(suite, through_cipher.max(input_length) as u64)?;
        let block_size = suite.algorithm.block_size();
        let padding = self.pads() && suite.mode.pads();
        let whole = |length: usize| {
            if length.is_multiple_of(block_size) {
                Ok(length)
            } else {
                Err(JobError::PartialBlock {
                    length: length as u64,
                    block_size,
                })
            }
        };
        let body = match (suite.mode, direction) {
            (Mode::Ctr, _) => input_length,
            (Mode::Gcm, Direction::Encrypt) => input_length,
            (Mode::Gcm, Direction::Decrypt) => input_length
                .checked_sub(TAG_BYTES)
                .ok_or(JobError::MissingTag(input_length as u64))?,
            (_, Direction::Encrypt) if padding => input_length / block_size * block_size,
            (_, Direction::Decrypt) if padding && input_length == 0 => {
                return Err(JobError::PartialBlock {
                    length: 0,
                    block_size,
                })
            }
            _ => whole(input_length)?,
        };
        let gcm = match suite.mode {
            Mode::Gcm => {
                if body as u64 > MAX_TEXT_BYTES {
                    return Err(GcmError::TooLong.into());
                }
                let key = self.schedule().gcm()?;
                Some(key.message(self.schedule().cipher(), iv)?)
            }
            _ => None,
        };
        let round = match (suite.mode, direction) {
            (Mode::Gcm, Direction::Decrypt) => Round::Authenticate,
            _ => Round::Only,
        };
        Ok(SegmentedMessage {
            cipher: self.clone(),
            direction,
            iv: Zeroizing::new(iv.to_vec()),
            aad: aad.unwrap_or_default().to_vec(),
            gcm,
            input_length,
            body,
            progress: Mutex::new(Progress {
                round,
                done: Vec::new(),
            }),
        })
    }
}

impl SegmentedMessage {
    fn suite(&self) -> CipherSpec {
        self.cipher.suite()
    }

    /// The bytes of the input that segments cover, from offset 0.
    pub fn body_length(&self) -> usize {
        self.body
    }

    /// The cipher's block size.
    pub fn block_size(&self) -> usize {
        self.suite().algorithm.block_size()
    }

    /// Whether a segment at an offset other than 0 needs the ciphertext block before it
    /// (CBC decryption).
    pub fn chains(&self) -> bool {
        self.suite().mode == Mode::Cbc && self.direction == Direction::Decrypt
    }

    /// The input's length.
    pub fn input_length(&self) -> usize {
        self.input_length
    }

    /// How many times the segments cover the body: 2 for GCM decryption (a round that only
    /// authenticates, then [`SegmentedMessage::authenticate`], then a round that decrypts),
    /// 1 for every other message.
    pub fn rounds(&self) -> usize {
        match (self.suite().mode, self.direction) {
            (Mode::Gcm, Direction::Decrypt) => 2,
            _ => 1,
        }
    }

    fn progress(&self) -> std::sync::MutexGuard<'_, Progress> {
        // A segment that panicked left nothing half-done under the lock.
        self.progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The most bytes the output can take (what [`SegmentedMessage::finish`]'s output
    /// must hold).
    pub fn max_output_length(&self) -> usize {
        self.cipher
            .max_output_length(self.direction, self.input_length)
    }

    /// Where segments may begin and end: a multiple of the returned number of bytes (the
    /// block size), except the end of the body. `None` when the body must be one segment:
    /// CBC encryption always (each block chains on the one before), CBC decryption in place
    /// (a segment would overwrite the ciphertext block its neighbour chains on).
    pub fn alignment(&self, in_place: bool) -> Option<usize> {
        let suite = self.suite();
        match (suite.mode, self.direction) {
            (Mode::Cbc, Direction::Encrypt) => None,
            (Mode::Cbc, Direction::Decrypt) if in_place => None,
            _ => Some(suite.algorithm.block_size()),
        }
    }

    /// Runs the body's bytes `offset..offset + length` (the segment's length) on the calling
    /// thread. `previous` is the ciphertext block before the segment, which CBC decryption
    /// at an offset other than 0 needs (ignored otherwise). Segments may run at once on
    /// many threads; each part of the body must run exactly once. An empty segment is
    /// allowed anywhere in the body and does nothing.
    pub fn segment(
        &self,
        offset: usize,
        previous: Option<&[u8]>,
        data: Segment<'_>,
    ) -> Result<(), JobError> {
        let length = data.len();
        let suite = self.suite();
        let block_size = suite.algorithm.block_size();
        let round = self.progress().round;
        if round == Round::Refused {
            return Err(refused());
        }
        let end = offset
            .checked_add(length)
            .filter(|end| *end <= self.body)
            .ok_or_else(|| {
                segment_error(format!(
                    "segment {offset}+{length} ends past the body of {} bytes",
                    self.body
                ))
            })?;
        if length == 0 {
            // An empty segment runs nothing and covers nothing, wherever it lies.
            return Ok(());
        }
        let alignment = self.alignment(matches!(data, Segment::InPlace(_)));
        match alignment {
            None if offset != 0 || end != self.body => {
                return Err(segment_error(format!(
                    "{suite} {} cannot be split here: run the body as one segment",
                    direction_name(self.direction)
                )))
            }
            Some(align) if !offset.is_multiple_of(align) => {
                return Err(segment_error(format!(
                    "segment offset {offset} is not a multiple of {align}"
                )))
            }
            Some(align) if end != self.body && !length.is_multiple_of(align) => {
                return Err(segment_error(format!(
                    "segment length {length} is not a multiple of {align} and does not end the body"
                )))
            }
            _ => {}
        }
        let previous = match (suite.mode, self.direction) {
            (Mode::Cbc, _) if offset == 0 => Some(&self.iv[..]),
            (Mode::Cbc, Direction::Decrypt) => match previous {
                Some(block) if block.len() == block_size => Some(block),
                _ => {
                    return Err(segment_error(format!(
                        "CBC decryption at offset {offset} needs the {block_size}-byte ciphertext block before it"
                    )))
                }
            },
            _ => None,
        };
        let partial = match round {
            Round::Authenticate => self.hash(data)?,
            Round::Release => self.release(offset, data)?,
            _ => self.run(offset, previous, data)?,
        };
        let mut progress = self.progress();
        if progress.round != round {
            // `authenticate` ended the round while this segment ran: it counts in neither.
            return Err(segment_error(
                "a segment ran while its round ended: authenticate after every segment returned"
                    .to_string(),
            ));
        }
        progress.done.push(Done {
            offset,
            length,
            partial,
        });
        Ok(())
    }

    /// GCM decryption's first round over one segment: the GHASH partial sum of its
    /// ciphertext, read where it lies; nothing is written.
    fn hash(&self, data: Segment<'_>) -> Result<u128, JobError> {
        let ciphertext: &[u8] = match &data {
            Segment::InPlace(data) => data,
            Segment::Separate { input, .. } => input,
        };
        let (key, _) = self.gcm_parts()?;
        Ok(key.hash_range(ciphertext))
    }

    /// GCM decryption's second round over one segment, the tag matched: CTR from the
    /// text's counter at the segment's offset into the output.
    fn release(&self, offset: usize, data: Segment<'_>) -> Result<u128, JobError> {
        let keys = self.cipher.schedule();
        let cipher = keys.cipher();
        let (_, message) = self.gcm_parts()?;
        let counter = message.text_counter((offset / cipher.block_size()) as u64);
        match data {
            Segment::InPlace(data) => ctr::apply(cipher, counter, data),
            Segment::Separate { input, output } => ctr::apply_into(cipher, counter, input, output),
        }
        Ok(0)
    }

    /// Ends GCM decryption's first round: checks that its segments covered the body exactly
    /// once, then the received tag (`input_tail`, the input after the body). When it matches
    /// the second round begins: every segment runs again and decrypts into the output. When
    /// it does not, nothing was written and nothing will be: later segments and `finish`
    /// fail. For every other message (one round) it does nothing.
    pub fn authenticate(&self, input_tail: &[u8]) -> Result<(), JobError> {
        let mut progress = self.progress();
        match progress.round {
            Round::Only => return Ok(()),
            Round::Authenticate => {}
            Round::Release => {
                return Err(segment_error(
                    "the message is authenticated already: run the second round, then finish"
                        .to_string(),
                ))
            }
            Round::Refused => return Err(refused()),
        }
        self.check_tail(input_tail)?;
        let partials = covered(&mut progress.done, self.body)?;
        let (key, message) = self.gcm_parts()?;
        let mut accumulator = GcmAccumulator::new(key, &self.aad);
        for (partial, length) in partials {
            accumulator.append(key, partial, length as u64)?;
        }
        match key.verify(message, &accumulator, input_tail) {
            Ok(()) => {
                progress.round = Round::Release;
                progress.done.clear();
                Ok(())
            }
            Err(error) => {
                progress.round = Round::Refused;
                progress.done.clear();
                Err(error.into())
            }
        }
    }

    /// Checks that `input_tail` is the input after the body.
    fn check_tail(&self, input_tail: &[u8]) -> Result<(), JobError> {
        if input_tail.len() != self.input_length - self.body {
            return Err(segment_error(format!(
                "the input after the body is {} bytes, not {}",
                input_tail.len(),
                self.input_length - self.body
            )));
        }
        Ok(())
    }

    /// The mode over one segment; returns GCM's partial sum (0 for the other modes). When
    /// input and output are apart, CTR and GCM read the input and write the output in one
    /// pass; ECB and CBC copy a cache-sized piece at a time and work on it in place.
    fn run(
        &self,
        offset: usize,
        previous: Option<&[u8]>,
        data: Segment<'_>,
    ) -> Result<u128, JobError> {
        match data {
            Segment::InPlace(data) => self.run_piece(offset, previous, data),
            Segment::Separate { input, output } if !input.is_empty() => {
                let keys = self.cipher.schedule();
                let cipher = keys.cipher();
                let first_block = (offset / cipher.block_size()) as u64;
                match self.suite().mode {
                    Mode::Ctr => {
                        let counter = self.counter().advanced(first_block);
                        ctr::apply_into(cipher, counter, input, output);
                        Ok(0)
                    }
                    Mode::Gcm => {
                        let (key, message) = self.gcm_parts()?;
                        let direction = self.direction;
                        Ok(key.process_range_into(
                            message,
                            cipher,
                            direction,
                            first_block,
                            input,
                            output,
                        ))
                    }
                    Mode::Ecb | Mode::Cbc => self.run_copied(offset, previous, input, output),
                }
            }
            Segment::Separate { .. } => Ok(0),
        }
    }

    /// ECB or CBC from `input` into `output`: each cache-sized piece copied, then run in
    /// place, CBC's chain carried from piece to piece.
    fn run_copied(
        &self,
        offset: usize,
        previous: Option<&[u8]>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<u128, JobError> {
        let block_size = self.suite().algorithm.block_size();
        let mut chain = previous.map(<[u8]>::to_vec);
        let pieces = input
            .chunks(COPY_PIECE_BYTES)
            .zip(output.chunks_mut(COPY_PIECE_BYTES));
        for (index, (from, to)) in pieces.enumerate() {
            let start = index * COPY_PIECE_BYTES;
            to.copy_from_slice(from);
            self.run_piece(offset + start, chain.as_deref(), to)?;
            if let Some(chain) = chain.as_mut() {
                if self.direction == Direction::Decrypt {
                    chain.copy_from_slice(&from[from.len() - block_size..]);
                } else {
                    chain.copy_from_slice(&to[to.len() - block_size..]);
                }
            }
        }
        if let Some(mut chain) = chain {
            chain.zeroize();
        }
        Ok(0)
    }

    /// CTR's counter block at the start of the body.
    fn counter(&self) -> Counter {
        Counter::new(&self.iv, CounterRule::Full)
    }

    /// GCM's key and message.
    fn gcm_parts(&self) -> Result<(&parcrypt_modes::gcm::GcmKey, &GcmMessage), JobError> {
        let key = self.cipher.schedule().gcm()?;
        let message = self
            .gcm
            .as_ref()
            .ok_or(JobError::Gcm(GcmError::BlockSize))?;
        Ok((key, message))
    }

    /// The mode over bytes at body offset `offset`, in place.
    fn run_piece(
        &self,
        offset: usize,
        previous: Option<&[u8]>,
        data: &mut [u8],
    ) -> Result<u128, JobError> {
        let keys = self.cipher.schedule();
        let cipher = keys.cipher();
        let block_size = cipher.block_size();
        let first_block = (offset / block_size) as u64;
        if data.is_empty() {
            return Ok(0);
        }
        match self.suite().mode {
            Mode::Ecb => ecb::apply(cipher, self.direction, data),
            Mode::Ctr => ctr::apply(cipher, self.counter().advanced(first_block), data),
            Mode::Cbc => {
                let previous = previous.unwrap_or(&self.iv);
                match self.direction {
                    Direction::Encrypt => {
                        let mut chain = previous.to_vec();
                        cbc::encrypt(cipher, &mut chain, data);
                        chain.zeroize();
                    }
                    Direction::Decrypt => cbc::decrypt(cipher, previous, data),
                }
            }
            Mode::Gcm => {
                let (key, message) = self.gcm_parts()?;
                return Ok(key.process_range(message, cipher, self.direction, first_block, data));
            }
        }
        Ok(0)
    }

    /// Ends the message: checks that the segments covered the body exactly once, then
    /// pads and encrypts the input's tail (`input_tail`: the input after the body, fewer
    /// than one block; empty for the other modes) for padded encryption, appends GCM's tag
    /// (encryption; GCM decryption checked its tag in [`SegmentedMessage::authenticate`],
    /// before its second round), or checks and removes the padding (decryption). `output`
    /// is the whole message's output, its body already written by the segments, holding
    /// at least [`SegmentedMessage::max_output_length`] bytes. Returns the output's length.
    /// When it fails for a decryption the body in `output` is wiped: a failed padding
    /// leaves no plaintext behind (a failed GCM tag never let any be written).
    pub fn finish(&self, input_tail: &[u8], output: &mut [u8]) -> Result<usize, JobError> {
        let needed = self.max_output_length();
        if output.len() < needed {
            return Err(JobError::OutputTooSmall {
                needed,
                got: output.len(),
            });
        }
        self.check_tail(input_tail)?;
        let partials = {
            let mut progress = self.progress();
            match progress.round {
                Round::Only | Round::Release => {}
                Round::Authenticate => {
                    return Err(segment_error(
                        "GCM decryption authenticates first: run the segments, authenticate, run them again, then finish"
                            .to_string(),
                    ))
                }
                Round::Refused => return Err(refused()),
            }
            covered(&mut progress.done, self.body)?
        };
        let outcome = self.end(input_tail, output, &partials);
        if outcome.is_err() && self.direction == Direction::Decrypt {
            output[..self.body].zeroize();
        }
        outcome
    }

    fn end(
        &self,
        input_tail: &[u8],
        output: &mut [u8],
        partials: &[(u128, usize)],
    ) -> Result<usize, JobError> {
        let suite = self.suite();
        let keys = self.cipher.schedule();
        let cipher = keys.cipher();
        let block_size = cipher.block_size();
        let body = self.body;
        let padding = self.cipher.pads() && suite.mode.pads();
        match (suite.mode, self.direction) {
            (Mode::Gcm, direction) => {
                let key = keys.gcm()?;
                let message = self
                    .gcm
                    .as_ref()
                    .ok_or(JobError::Gcm(GcmError::BlockSize))?;
                if direction == Direction::Decrypt {
                    // `authenticate` checked the tag before the second round wrote a byte.
                    return Ok(body);
                }
                let mut accumulator = GcmAccumulator::new(key, &self.aad);
                for (partial, length) in partials {
                    accumulator.append(key, *partial, *length as u64)?;
                }
                output[body..body + TAG_BYTES].copy_from_slice(&key.tag(message, &accumulator));
                Ok(body + TAG_BYTES)
            }
            (mode, Direction::Encrypt) if padding => {
                let mut last = Zeroizing::new(input_tail.to_vec());
                padding::pad(&mut last, block_size);
                if mode == Mode::Cbc {
                    let mut chain = if body == 0 {
                        self.iv.to_vec()
                    } else {
                        output[body - block_size..body].to_vec()
                    };
                    cbc::encrypt(cipher, &mut chain, &mut last);
                    chain.zeroize();
                } else {
                    ecb::apply(cipher, Direction::Encrypt, &mut last);
                }
                output[body..body + block_size].copy_from_slice(&last);
                Ok(body + block_size)
            }
            (_, Direction::Decrypt) if padding => {
                let last = &output[body - block_size..body];
                let kept = padding::unpadded_length(last).ok_or(JobError::BadPadding(suite))?;
                Ok(body - block_size + kept)
            }
            _ => Ok(body),
        }
    }
}

/// The segments' GCM partial sums with their lengths, in body order, once they are known to
/// cover the body's `body` bytes exactly.
fn covered(done: &mut [Done], body: usize) -> Result<Vec<(u128, usize)>, JobError> {
    done.sort_by_key(|segment| segment.offset);
    let mut next = 0;
    for segment in done.iter().filter(|segment| segment.length != 0) {
        if segment.offset != next {
            return Err(segment_error(format!(
                "the segments do not cover the body exactly once (at byte {next})"
            )));
        }
        next += segment.length;
    }
    if next != body {
        return Err(segment_error(format!(
            "the segments cover {next} of the body's {body} bytes"
        )));
    }
    Ok(done
        .iter()
        .filter(|segment| segment.length != 0)
        .map(|segment| (segment.partial, segment.length))
        .collect())
}

/// The error of a GCM decryption whose tag did not match.
fn refused() -> JobError {
    segment_error(
        "the GCM tag did not match: this message releases nothing (start a new one)".to_string(),
    )
}

fn direction_name(direction: Direction) -> &'static str {
    match direction {
        Direction::Encrypt => "encryption",
        Direction::Decrypt => "decryption",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Backend, Engine};

    /// Every suite and direction, cut into segments of several sizes (in place and apart,
    /// run in reverse order), against the whole message on one thread.
    #[test]
    fn segments_match_the_whole_message() {
        let engine = std::sync::Arc::new(Engine::new(Backend::Seq, None).unwrap());
        let suites = [
            ("aes-128-ecb", 16),
            ("aes-192-cbc", 24),
            ("aes-256-ctr", 32),
            ("aes-128-gcm", 16),
            ("bf-cbc", 20),
            ("bf-ctr", 20),
            ("rc6-128-gcm", 16),
        ];
        for (suite, key_length) in suites {
            let suite: CipherSpec = suite.parse().unwrap();
            let key = vec![0x42u8; key_length];
            let cipher = KeyedCipher::new(engine.clone(), suite, &key).unwrap();
            let iv: Option<Vec<u8>> = match suite.mode {
                Mode::Ecb => None,
                Mode::Gcm => Some(vec![9u8; 12]),
                _ => Some(vec![9u8; suite.algorithm.block_size()]),
            };
            for length in [0usize, 1, 15, 16, 17, 100, 4096, 200_001] {
                let plaintext: Vec<u8> = (0..length).map(|i| (i * 7 + 3) as u8).collect();
                let expected = cipher
                    .encrypt(
                        iv.as_deref(),
                        &plaintext,
                        Some(&b"ad"[..]).filter(|_| suite.mode == Mode::Gcm),
                    )
                    .unwrap();
                for pieces in [1usize, 2, 3, 7] {
                    for in_place in [false, true] {
                        let aad = Some(&b"ad"[..]).filter(|_| suite.mode == Mode::Gcm);
                        let sealed = run_segmented(
                            &cipher,
                            Direction::Encrypt,
                            iv.as_deref(),
                            aad,
                            &plaintext,
                            pieces,
                            in_place,
                        );
                        assert_eq!(
                            sealed, expected,
                            "{suite} encrypt {length} in {pieces} in place {in_place}"
                        );
                        let opened = run_segmented(
                            &cipher,
                            Direction::Decrypt,
                            iv.as_deref(),
                            aad,
                            &sealed,
                            pieces,
                            in_place,
                        );
                        assert_eq!(
                            opened, plaintext,
                            "{suite} decrypt {length} in {pieces} in place {in_place}"
                        );
                    }
                }
            }
        }
    }

    fn run_segmented(
        cipher: &KeyedCipher,
        direction: Direction,
        iv: Option<&[u8]>,
        aad: Option<&[u8]>,
        input: &[u8],
        pieces: usize,
        in_place: bool,
    ) -> Vec<u8> {
        let message = cipher.segmented(direction, iv, aad, input.len()).unwrap();
        let body = message.body_length();
        let mut output = vec![0u8; message.max_output_length()];
        // Every message as a generic caller runs it: a round, `authenticate`, the second
        // round where there is one, `finish`.
        run_round(&message, input, &mut output, pieces, in_place);
        message.authenticate(&input[body..]).unwrap();
        if message.rounds() == 2 {
            run_round(&message, input, &mut output, pieces, in_place);
        }
        let written = message.finish(&input[body..], &mut output).unwrap();
        output.truncate(written);
        output
    }

    /// One round of `message`'s segments over `input` into `output`, `pieces` of them (in
    /// place: each segment's input copied to its output first), run in reverse order.
    fn run_round(
        message: &SegmentedMessage,
        input: &[u8],
        output: &mut [u8],
        pieces: usize,
        in_place: bool,
    ) {
        let body = message.body_length();
        let cuts: Vec<usize> = match message.alignment(in_place) {
            None => vec![0, body],
            Some(align) => {
                let mut cuts: Vec<usize> = (0..pieces)
                    .map(|k| body * k / pieces / align * align)
                    .collect();
                cuts.push(body);
                cuts
            }
        };
        for window in cuts.windows(2).rev() {
            let (start, end) = (window[0], window[1]);
            let block = message.block_size();
            let previous = (start >= block).then(|| &input[start - block..start]);
            if in_place {
                output[start..end].copy_from_slice(&input[start..end]);
                message
                    .segment(start, previous, Segment::InPlace(&mut output[start..end]))
                    .unwrap();
            } else {
                separate(message, previous, input, output, start..end).unwrap();
            }
        }
    }

    /// Runs `range` of `input` into the same bytes of `output`, as one segment.
    fn separate(
        message: &SegmentedMessage,
        previous: Option<&[u8]>,
        input: &[u8],
        output: &mut [u8],
        range: std::ops::Range<usize>,
    ) -> Result<(), JobError> {
        let data = Segment::Separate {
            input: &input[range.clone()],
            output: &mut output[range.clone()],
        };
        message.segment(range.start, previous, data)
    }

    /// Issue 31 finding 2 (the Java calls run through here): GCM decryption in segments
    /// writes no byte into the output before the tag matched. Segments that have all run
    /// leave the output as it was (on the one-round code they had written the plaintext
    /// there, and only `finish` wiped it); a forged message leaves it so for good and
    /// refuses every later call; a genuine one decrypts in the second round.
    #[test]
    fn gcm_decryption_writes_nothing_until_its_tag_matches() {
        let engine = std::sync::Arc::new(Engine::new(Backend::Seq, None).unwrap());
        for suite in ["aes-128-gcm", "rc6-128-gcm"] {
            let cipher =
                KeyedCipher::new(engine.clone(), suite.parse().unwrap(), &[6u8; 16]).unwrap();
            let iv = Some(&[8u8; 12][..]);
            for length in [0usize, 1, 15, 16, 17, 1000, (1 << 20) + 3] {
                let plaintext: Vec<u8> = (0..length).map(|i| (i * 13 + 1) as u8).collect();
                let sealed = cipher.encrypt(iv, &plaintext, Some(b"ad")).unwrap();
                let mut forged = sealed.clone();
                // A changed ciphertext byte where there is one, else a changed tag.
                forged[length / 2] ^= 0x40;
                for (input, genuine) in [(&sealed, true), (&forged, false)] {
                    for in_place in [false, true] {
                        let what =
                            format!("{suite} {length} genuine {genuine} in place {in_place}");
                        let message = cipher
                            .segmented(Direction::Decrypt, iv, Some(b"ad"), input.len())
                            .unwrap();
                        assert_eq!(message.rounds(), 2);
                        let body = message.body_length();
                        let mut output = vec![0xa5u8; message.max_output_length()];
                        if in_place {
                            output[..body].copy_from_slice(&input[..body]);
                        }
                        let before = output.clone();
                        run_round(&message, input, &mut output, 3, in_place);
                        assert!(output == before, "{what}: the first round wrote");
                        assert!(
                            matches!(
                                message.finish(&input[body..], &mut output),
                                Err(JobError::Segment(_))
                            ),
                            "{what}: finish before authenticate"
                        );
                        let checked = message.authenticate(&input[body..]);
                        if genuine {
                            checked.unwrap();
                            run_round(&message, input, &mut output, 2, in_place);
                            let written = message.finish(&input[body..], &mut output).unwrap();
                            assert_eq!(&output[..written], &plaintext[..], "{what}");
                            continue;
                        }
                        assert!(
                            matches!(checked, Err(JobError::Gcm(GcmError::TagMismatch))),
                            "{what}: {checked:?}"
                        );
                        let mut spare = input[..body].to_vec();
                        assert!(message
                            .segment(0, None, Segment::InPlace(&mut spare))
                            .is_err());
                        assert!(message.authenticate(&input[body..]).is_err());
                        assert!(message.finish(&input[body..], &mut output).is_err());
                        assert!(output == before, "{what}: a forged message left output");
                        assert!(
                            !shares_a_run(&output, &plaintext),
                            "{what}: plaintext in the output"
                        );
                    }
                }
            }
        }
    }

    /// Whether `output` holds any 16 bytes of `plaintext` in a row, anywhere.
    fn shares_a_run(output: &[u8], plaintext: &[u8]) -> bool {
        let runs: std::collections::HashSet<&[u8]> = output.windows(16).collect();
        plaintext.windows(16).any(|run| runs.contains(run))
    }

    /// The rounds' order: `finish` waits for the second round, `authenticate` runs once,
    /// the second round covers the body again, and a one-round message's `authenticate`
    /// does nothing.
    #[test]
    fn rounds_run_in_order() {
        let engine = std::sync::Arc::new(Engine::new(Backend::Seq, None).unwrap());
        let gcm =
            KeyedCipher::new(engine.clone(), "aes-128-gcm".parse().unwrap(), &[1u8; 16]).unwrap();
        let iv = Some(&[2u8; 12][..]);
        let sealed = gcm.encrypt(iv, &[3u8; 64], None).unwrap();
        let message = gcm
            .segmented(Direction::Decrypt, iv, None, sealed.len())
            .unwrap();
        let mut output = vec![0u8; 64];
        run_round(&message, &sealed, &mut output, 2, false);
        assert!(
            message.authenticate(&sealed[60..]).is_err(),
            "a tail of the wrong length"
        );
        message.authenticate(&sealed[64..]).unwrap();
        assert!(message.authenticate(&sealed[64..]).is_err(), "twice");
        assert!(
            matches!(
                message.finish(&sealed[64..], &mut output),
                Err(JobError::Segment(_))
            ),
            "finish before the second round"
        );
        run_round(&message, &sealed, &mut output, 4, false);
        assert_eq!(message.finish(&sealed[64..], &mut output).unwrap(), 64);
        assert_eq!(output, [3u8; 64]);

        let sealing = gcm.segmented(Direction::Encrypt, iv, None, 64).unwrap();
        assert_eq!(sealing.rounds(), 1);
        let ctr = KeyedCipher::new(engine, "aes-128-ctr".parse().unwrap(), &[1u8; 16]).unwrap();
        let message = ctr
            .segmented(Direction::Decrypt, Some(&[0u8; 16]), None, 32)
            .unwrap();
        assert_eq!(message.rounds(), 1);
        let input = [4u8; 32];
        let mut output = [0u8; 32];
        run_round(&message, &input, &mut output, 2, false);
        message.authenticate(&[]).unwrap();
        assert_eq!(message.finish(&[], &mut output).unwrap(), 32);
        assert_eq!(
            output.to_vec(),
            ctr.decrypt(Some(&[0u8; 16]), &input, None).unwrap()
        );
    }

    #[test]
    fn gaps_overlaps_and_bad_tags_are_refused() {
        let engine = Engine::new(Backend::Seq, None).unwrap();
        let cipher = KeyedCipher::new(engine, "aes-128-gcm".parse().unwrap(), &[1u8; 16]).unwrap();
        let iv = Some(&[2u8; 12][..]);
        let plaintext = vec![3u8; 64];
        let message = cipher.segmented(Direction::Encrypt, iv, None, 64).unwrap();
        let mut output = vec![0u8; 80];
        separate(&message, None, &plaintext, &mut output, 0..32).unwrap();
        assert!(matches!(
            message.finish(&[], &mut output),
            Err(JobError::Segment(_))
        ));
        separate(&message, None, &plaintext, &mut output, 16..64).unwrap();
        assert!(matches!(
            message.finish(&[], &mut output),
            Err(JobError::Segment(_))
        ));
        assert!(message
            .segment(8, None, Segment::InPlace(&mut output[8..24]))
            .is_err());
        assert!(message
            .segment(48, None, Segment::InPlace(&mut output[48..80]))
            .is_err());

        let mut sealed = cipher.encrypt(iv, &plaintext, None).unwrap();
        sealed[70] ^= 1;
        let message = cipher
            .segmented(Direction::Decrypt, iv, None, sealed.len())
            .unwrap();
        let mut opened = vec![0u8; 80];
        separate(&message, None, &sealed, &mut opened, 0..64).unwrap();
        assert!(matches!(
            message.authenticate(&sealed[64..]),
            Err(JobError::Gcm(GcmError::TagMismatch))
        ));
        assert!(message.finish(&sealed[64..], &mut opened).is_err());
        assert!(
            opened.iter().all(|byte| *byte == 0),
            "a failed tag leaves no plaintext"
        );

        let cbc = KeyedCipher::new(
            Engine::new(Backend::Seq, None).unwrap(),
            "aes-128-cbc".parse().unwrap(),
            &[1u8; 16],
        )
        .unwrap();
        let message = cbc
            .segmented(Direction::Encrypt, Some(&[0u8; 16]), None, 64)
            .unwrap();
        assert_eq!(message.alignment(false), None);
        let mut data = [0u8; 80];
        assert!(message
            .segment(16, None, Segment::InPlace(&mut data[16..64]))
            .is_err());
    }
}
