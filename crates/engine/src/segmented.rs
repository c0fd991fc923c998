//! [`SegmentedMessage`]: one whole message whose segments the caller runs on threads of its
//! own (the JVM library's `JavaThreads` and `ForkJoin` strategies do), each segment on the
//! calling thread with the one-thread kernel. Every rule of the mode stays here: the CTR
//! and GCM counter at a segment's offset, CBC's chain, GCM's partial GHASH sums joined in
//! order with powers of H, PKCS#7 padding and the tag. The caller only decides where the
//! segments begin and which thread runs each.

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

/// One message under a [`KeyedCipher`], cut into segments by the caller. Made by
/// [`KeyedCipher::segmented`]; its segments ([`SegmentedMessage::segment`]) may run on any
/// threads in any order, and [`SegmentedMessage::finish`] then checks that they covered the
/// body exactly once and ends the message (padding, tag).
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
    done: Mutex<Vec<Done>>,
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
        Ok(SegmentedMessage {
            cipher: self.clone(),
            direction,
            iv: Zeroizing::new(iv.to_vec()),
            aad: aad.unwrap_or_default().to_vec(),
            gcm,
            input_length,
            body,
            done: Mutex::new(Vec::new()),
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
        let partial = self.run(offset, previous, data)?;
        let mut done = self
            .done
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        done.push(Done {
            offset,
            length,
            partial,
        });
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
    /// (encryption) or checks it (decryption: `input_tail` is the received tag), or checks
    /// and removes the padding (decryption). `output` is the whole message's output, its
    /// body already written by the segments, holding at least
    /// [`SegmentedMessage::max_output_length`] bytes. Returns the output's length. On a
    /// failed tag or padding the body in `output` is wiped: nothing unauthenticated stays.
    pub fn finish(&self, input_tail: &[u8], output: &mut [u8]) -> Result<usize, JobError> {
        let needed = self.max_output_length();
        if output.len() < needed {
            return Err(JobError::OutputTooSmall {
                needed,
                got: output.len(),
            });
        }
        if input_tail.len() != self.input_length - self.body {
            return Err(segment_error(format!(
                "the input after the body is {} bytes, not {}",
                input_tail.len(),
                self.input_length - self.body
            )));
        }
        let partials = self.covered()?;
        let outcome = self.end(input_tail, output, &partials);
        if outcome.is_err() && self.direction == Direction::Decrypt {
            output[..self.body].zeroize();
        }
        outcome
    }

    /// The segments' GCM partial sums with their lengths, in body order, once they are
    /// known to cover the body exactly.
    fn covered(&self) -> Result<Vec<(u128, usize)>, JobError> {
        let mut done = self
            .done
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
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
        if next != self.body {
            return Err(segment_error(format!(
                "the segments cover {next} of the body's {} bytes",
                self.body
            )));
        }
        Ok(done
            .iter()
            .filter(|segment| segment.length != 0)
            .map(|segment| (segment.partial, segment.length))
            .collect())
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
                let mut accumulator = GcmAccumulator::new(key, &self.aad);
                for (partial, length) in partials {
                    accumulator.append(key, *partial, *length as u64)?;
                }
                match direction {
                    Direction::Encrypt => {
                        output[body..body + TAG_BYTES]
                            .copy_from_slice(&key.tag(message, &accumulator));
                    }
                    Direction::Decrypt => key.verify(message, &accumulator, input_tail)?,
                }
                Ok(match direction {
                    Direction::Encrypt => body + TAG_BYTES,
                    Direction::Decrypt => body,
                })
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
            let block = cipher.suite().algorithm.block_size();
            let previous = (start >= block).then(|| &input[start - block..start]);
            if in_place {
                output[start..end].copy_from_slice(&input[start..end]);
                message
                    .segment(start, previous, Segment::InPlace(&mut output[start..end]))
                    .unwrap();
            } else {
                message
                    .segment(
                        start,
                        previous,
                        Segment::Separate {
                            input: &input[start..end],
                            output: &mut output[start..end],
                        },
                    )
                    .unwrap();
            }
        }
        let written = message.finish(&input[body..], &mut output).unwrap();
        output.truncate(written);
        output
    }

    #[test]
    fn gaps_overlaps_and_bad_tags_are_refused() {
        let engine = Engine::new(Backend::Seq, None).unwrap();
        let cipher = KeyedCipher::new(engine, "aes-128-gcm".parse().unwrap(), &[1u8; 16]).unwrap();
        let iv = Some(&[2u8; 12][..]);
        let plaintext = vec![3u8; 64];
        let message = cipher.segmented(Direction::Encrypt, iv, None, 64).unwrap();
        let mut output = vec![0u8; 80];
        message
            .segment(
                0,
                None,
                Segment::Separate {
                    input: &plaintext[..32],
                    output: &mut output[..32],
                },
            )
            .unwrap();
        assert!(matches!(
            message.finish(&[], &mut output),
            Err(JobError::Segment(_))
        ));
        message
            .segment(
                16,
                None,
                Segment::Separate {
                    input: &plaintext[16..64],
                    output: &mut output[16..64],
                },
            )
            .unwrap();
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
        message
            .segment(
                0,
                None,
                Segment::Separate {
                    input: &sealed[..64],
                    output: &mut opened[..64],
                },
            )
            .unwrap();
        assert!(matches!(
            message.finish(&sealed[64..], &mut opened),
            Err(JobError::Gcm(GcmError::TagMismatch))
        ));
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
