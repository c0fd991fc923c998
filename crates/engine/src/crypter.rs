//! One message through one cipher and mode, on an engine, in as many calls as the caller
//! likes: [`Crypter::update`] takes whole blocks, [`Crypter::finish`] the rest. The GPU
//! backends' share of each mode is here too, beside the CPU's.

use parcrypt_ciphers::{Implementation, KeyError};
use parcrypt_modes::ctr::{Counter, CounterRule};
use parcrypt_modes::gcm::{GcmAccumulator, GcmError, GcmKey, GcmMessage, TAG_BYTES};
use parcrypt_modes::{cbc, ctr, ecb, padding, CipherSpec, Direction, Mode};
use zeroize::Zeroize;

use crate::keyed::KeySchedule;
use crate::{CostModel, Engine};

/// Why a job could not be set up or finished. Each message is one line written for people.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The key does not suit the algorithm.
    #[error("bad key: {0}")]
    Key(#[from] KeyError),
    /// The IV is not the one length the mode takes.
    #[error("{spec} needs an IV of {expected} bytes (--iv), got {got}")]
    IvLength {
        /// The cipher and mode.
        spec: CipherSpec,
        /// The length it takes.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// CBC, CTR and GCM need an IV and none was given.
    #[error("{0} needs an IV (--iv)")]
    IvMissing(CipherSpec),
    /// ECB was given an IV.
    #[error("{0} takes no IV")]
    IvNotUsed(CipherSpec),
    /// Additional authenticated data was given to a mode that authenticates nothing.
    #[error("--aad is only for GCM")]
    AadNotUsed,
    /// Unpadded ECB or CBC input that is not whole blocks.
    #[error("input is {length} bytes, not a whole number of {block_size}-byte blocks (use padding, or a stream mode such as CTR)")]
    PartialBlock {
        /// The input's length.
        length: u64,
        /// The cipher's block size.
        block_size: usize,
    },
    /// The padding of a decrypted message is not PKCS#7.
    #[error("bad padding: wrong key or IV, or the data is not {0} ciphertext")]
    BadPadding(CipherSpec),
    /// GCM input shorter than its tag.
    #[error("input is {0} bytes, too short to hold a 16-byte GCM tag")]
    MissingTag(u64),
    /// GCM refused the IV or the tag did not match.
    #[error("{0}")]
    Gcm(#[from] GcmError),
    /// The GPU failed.
    #[error("GPU: {0}")]
    Gpu(#[from] parcrypt_gpu::GpuError),
    /// A caller's output buffer is shorter than the message's output can be.
    #[error("the output buffer holds {got} bytes; this message needs {needed}")]
    OutputTooSmall {
        /// The bytes the output may take.
        needed: usize,
        /// The bytes the buffer holds.
        got: usize,
    },
    /// A caller that runs a message's segments itself
    /// ([`crate::segmented::SegmentedMessage`]) cut or covered the body wrongly.
    #[error("{0}")]
    Segment(String),
    /// A [`crate::Cipher`] made with an IV was asked to encrypt a second message under it.
    #[error("{0}: this cipher's IV has encrypted a message already and may not encrypt another (a reused IV reveals the plaintexts); give each message an IV of its own, or use the AEAD call, which draws a fresh nonce for each")]
    IvSpent(CipherSpec),
    /// A GCM IV shorter than 12 bytes, which the caller did not opt into.
    #[error("{spec}: a {got}-byte GCM IV is refused (short IVs make nonce collisions likely and are hashed into the counter); use 12 bytes, or allow short GCM IVs explicitly (allow_short_gcm_iv, --allow-short-gcm-iv) to read old data")]
    ShortGcmIv {
        /// The cipher and mode.
        spec: CipherSpec,
        /// The IV's length.
        got: usize,
    },
    /// A 64-bit block cipher asked to run more than [`MAX_BLOCKS_64`] blocks in one message.
    #[error("{spec}: a message of {length} bytes is more than 2^32 64-bit blocks (32 GiB) under one key and IV, past the birthday bound where blocks collide and leak plaintext; split it into messages of at most 32 GiB, each under its own IV, or use AES")]
    BirthdayBound {
        /// The cipher and mode.
        spec: CipherSpec,
        /// The bytes the message runs through the cipher.
        length: u64,
    },
    /// The AEAD call was given a suite other than AES-GCM.
    #[error("{0} is not an AES-GCM suite: the AEAD call seals with aes-128-gcm, aes-192-gcm or aes-256-gcm")]
    AeadSuite(CipherSpec),
    /// The AEAD call has sealed as many messages under one key as random nonces allow.
    #[error("this key has sealed 2^32 messages under random 96-bit nonces, the limit of NIST SP 800-38D (beyond it a repeated nonce is too likely): make a new key")]
    NonceBudget,
    /// A sealed message shorter than its nonce and tag.
    #[error(
        "input is {0} bytes, too short for a sealed message (a 12-byte nonce and a 16-byte tag)"
    )]
    ShortSealed(u64),
    /// The operating system's random source failed.
    #[error("the operating system's random source failed: {0}")]
    Random(String),
}

/// The most blocks a cipher with 64-bit blocks (Blowfish) runs in one message under one key
/// and IV: 2^32 blocks (32 GiB), the birthday bound, past which two blocks of the chain or
/// keystream collide with a probability that leaks plaintext (the Sweet32 attacks).
pub const MAX_BLOCKS_64: u64 = parcrypt_ciphers::registry::MAX_BLOCKS_64;

/// The shortest GCM IV taken without an explicit opt-in: 12 bytes, the length GCM uses
/// directly as its counter's prefix (NIST SP 800-38D recommends it).
pub const MIN_GCM_IV_BYTES: usize = 12;

/// Checks that a message running `length` bytes through `spec`'s block cipher stays within
/// the limit its entry in the cipher registry sets (`max_blocks_per_message`: the birthday
/// bound of a 64-bit block cipher, [`MAX_BLOCKS_64`]); ciphers without one pass.
pub(crate) fn check_message_length(spec: CipherSpec, length: u64) -> Result<(), JobError> {
    let descriptor = spec.algorithm.descriptor();
    if let Some(max_blocks) = descriptor.max_blocks_per_message {
        if length.div_ceil(descriptor.block_size as u64) > max_blocks {
            return Err(JobError::BirthdayBound { spec, length });
        }
    }
    Ok(())
}

/// What a job needs besides the engine.
pub struct JobSpec<'a> {
    /// The cipher and mode.
    pub spec: CipherSpec,
    /// Encrypt or decrypt.
    pub direction: Direction,
    /// The key (its length picks nothing: it must suit `spec`'s algorithm).
    pub key: &'a [u8],
    /// The IV: none for ECB, one block for CBC and CTR, 12 bytes or more for GCM.
    pub iv: Option<&'a [u8]>,
    /// Whether a GCM IV of 1 to 11 bytes is taken (old data, test vectors); refused when
    /// false.
    pub allow_short_gcm_iv: bool,
    /// GCM's additional authenticated data.
    pub aad: Option<&'a [u8]>,
    /// PKCS#7 for ECB and CBC; ignored by the stream modes.
    pub padding: bool,
    /// Which CPU implementation of the block cipher runs.
    pub implementation: Implementation,
}

enum ModeState {
    Ecb,
    Cbc {
        chain: Vec<u8>,
    },
    Ctr {
        next: Counter,
    },
    Gcm {
        message: GcmMessage,
        accumulator: GcmAccumulator,
    },
}

/// The key schedule a crypter runs with: its own, built for one message by
/// [`Crypter::new`], or a [`crate::KeyedCipher`]'s, built once and borrowed.
pub(crate) enum Keys<'e> {
    Own(Box<KeySchedule>),
    Shared(&'e KeySchedule),
}

impl Keys<'_> {
    fn get(&self) -> &KeySchedule {
        match self {
            Keys::Own(keys) => keys,
            Keys::Shared(keys) => keys,
        }
    }
}

/// One message through one cipher and mode on an engine, fed in as many pieces as the
/// caller likes. [`crate::KeyedCipher::encryptor`] and [`crate::KeyedCipher::decryptor`]
/// make one that borrows the keyed cipher's key schedule (nothing is rebuilt per message);
/// [`Crypter::new`] builds its own.
pub struct Crypter<'e> {
    engine: &'e Engine,
    keys: Keys<'e>,
    spec: CipherSpec,
    direction: Direction,
    padding: bool,
    state: ModeState,
    /// Bytes given to `update` so far.
    processed: u64,
    /// How fast one thread runs this job, when the engine's `auto` wants to know.
    cost_model: Option<CostModel>,
    /// Whether the engine may send this job's pieces to a GPU (whose key material the key
    /// schedule then holds).
    gpu: bool,
}

impl<'e> Crypter<'e> {
    /// Sets up `job` on `engine`: checks the key and IV, builds the key schedule (and GCM's
    /// powers of H) for this one message, and asks `auto` for its cost model. Many messages
    /// under one key: a [`crate::KeyedCipher`] builds those once.
    pub fn new(engine: &'e Engine, job: &JobSpec<'_>) -> Result<Self, JobError> {
        Self::with_cost_model(engine, job, engine.cost_model(job.spec, job.direction))
    }

    /// [`Crypter::new`] that runs on the CPU only, with a cost model given rather than asked
    /// of the engine: what the calibration that makes the engine's models times.
    pub(crate) fn on_cpu_with_cost_model(
        engine: &'e Engine,
        job: &JobSpec<'_>,
        cost_model: CostModel,
    ) -> Result<Self, JobError> {
        let mut crypter = Self::with_cost_model(engine, job, Some(cost_model))?;
        crypter.gpu = false;
        Ok(crypter)
    }

    fn with_cost_model(
        engine: &'e Engine,
        job: &JobSpec<'_>,
        cost_model: Option<CostModel>,
    ) -> Result<Self, JobError> {
        let keys = KeySchedule::new(job.spec, job.implementation, engine.kernels(), job.key)?;
        let message = MessageSpec {
            direction: job.direction,
            iv: job.iv,
            aad: job.aad,
            padding: job.padding,
            allow_short_gcm_iv: job.allow_short_gcm_iv,
        };
        Self::with_keys(engine, Keys::Own(Box::new(keys)), &message, cost_model)
    }

    /// A crypter for one message under `keys`, which are already built.
    pub(crate) fn with_keys(
        engine: &'e Engine,
        keys: Keys<'e>,
        message: &MessageSpec<'_>,
        cost_model: Option<CostModel>,
    ) -> Result<Self, JobError> {
        let schedule = keys.get();
        let spec = schedule.suite();
        let iv = check_iv_and_aad(spec, message.iv, message.aad, message.allow_short_gcm_iv)?;
        let state = match spec.mode {
            Mode::Ecb => ModeState::Ecb,
            Mode::Cbc => ModeState::Cbc { chain: iv.to_vec() },
            Mode::Ctr => ModeState::Ctr {
                next: Counter::new(iv, CounterRule::Full),
            },
            Mode::Gcm => {
                let key = schedule.gcm()?;
                ModeState::Gcm {
                    message: key.message(schedule.cipher(), iv)?,
                    accumulator: GcmAccumulator::new(key, message.aad.unwrap_or_default()),
                }
            }
        };
        let gpu = engine.may_use_gpu(spec, message.direction);
        if gpu {
            // Built once per key, on the first message that may need it.
            schedule.gpu_material()?;
        }
        Ok(Crypter {
            engine,
            keys,
            spec,
            direction: message.direction,
            padding: message.padding && spec.mode.pads(),
            state,
            processed: 0,
            cost_model,
            gpu,
        })
    }

    /// The cipher and mode.
    pub fn spec(&self) -> CipherSpec {
        self.spec
    }

    /// Encrypting or decrypting.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// The most bytes a whole message of `input_length` bytes turns into.
    pub fn max_output_length(&self, input_length: usize) -> usize {
        max_output_length(self.spec, self.direction, self.padding, input_length)
    }

    /// How many bytes at the end of the input [`Crypter::finish`] must see: the padded last
    /// block when removing padding, the tag when decrypting GCM. A streaming caller keeps
    /// this many bytes back until it knows the input has ended.
    pub fn holdback(&self) -> usize {
        match (self.spec.mode, self.direction) {
            (Mode::Gcm, Direction::Decrypt) => TAG_BYTES,
            (_, Direction::Decrypt) if self.padding => self.spec.algorithm.block_size(),
            _ => 0,
        }
    }

    /// The alignment every `update` length must have.
    pub fn block_size(&self) -> usize {
        self.spec.algorithm.block_size()
    }

    /// Encrypts or decrypts `data` in place; its length must be a whole number of blocks.
    pub fn update(&mut self, data: &mut [u8]) -> Result<(), JobError> {
        let block_size = self.block_size();
        if !data.len().is_multiple_of(block_size) {
            return Err(JobError::PartialBlock {
                length: data.len() as u64,
                block_size,
            });
        }
        self.count(data.len())?;
        self.process(data)?;
        Ok(())
    }

    /// Counts `length` more bytes into the message, refusing first what would take a 64-bit
    /// block cipher past its birthday bound.
    fn count(&mut self, length: usize) -> Result<(), JobError> {
        let total = self.processed + length as u64;
        check_message_length(self.spec, total)?;
        self.processed = total;
        Ok(())
    }

    /// [`Crypter::update`] from `input` into the front of `output`, which must be at least as
    /// long: whole blocks. On the CPU, CTR and GCM read the input and write the output in
    /// one pass (GCM with no copy at all, CTR a cache-sized piece at a time), so a large
    /// message out of place passes through memory once; the other modes, and GPU backends,
    /// copy it first and then work in place.
    pub fn update_into(&mut self, input: &[u8], output: &mut [u8]) -> Result<(), JobError> {
        let length = input.len();
        let Some(output) = output.get_mut(..length) else {
            return Err(JobError::OutputTooSmall {
                needed: length,
                got: output.len(),
            });
        };
        let block_size = self.block_size();
        if !length.is_multiple_of(block_size) {
            return Err(JobError::PartialBlock {
                length: length as u64,
                block_size,
            });
        }
        let one_pass = matches!(self.state, ModeState::Ctr { .. } | ModeState::Gcm { .. })
            && !(self.gpu
                && self
                    .engine
                    .gpu_for(self.spec, self.direction, length)
                    .is_some());
        self.count(length)?;
        if one_pass {
            self.process_region(Region::Into(input, output))?;
        } else {
            output.copy_from_slice(input);
            self.process(output)?;
        }
        Ok(())
    }

    /// Processes the last piece of the input (any length) and ends the message.
    ///
    /// `data` holds the final input bytes and is replaced by the final output bytes:
    /// encryption appends the padding or the GCM tag; decryption removes the padding or
    /// checks and removes the tag. On a GCM tag mismatch `data` is wiped and an error is
    /// returned: output already handed out by `update` must then be discarded by the caller
    /// (the command line writes it to a temporary file that it deletes).
    pub fn finish(mut self, data: &mut Vec<u8>) -> Result<(), JobError> {
        let block_size = self.block_size();
        let total = self.processed + data.len() as u64;
        // The padding adds at most one block; counted here, before any of it runs.
        let padding = if self.padding && self.direction == Direction::Encrypt {
            block_size as u64
        } else {
            0
        };
        check_message_length(self.spec, total + padding)?;
        match (self.spec.mode, self.direction) {
            (Mode::Gcm, direction) => {
                // Decryption takes the tag off before the ciphertext goes through the cipher.
                let received_tag = match direction {
                    Direction::Encrypt => None,
                    Direction::Decrypt if data.len() < TAG_BYTES => {
                        return Err(JobError::MissingTag(total))
                    }
                    Direction::Decrypt => Some(data.split_off(data.len() - TAG_BYTES)),
                };
                self.process(data)?;
                if let ModeState::Gcm {
                    message,
                    accumulator,
                } = &self.state
                {
                    let key = self.keys.get().gcm()?;
                    match received_tag {
                        None => data.extend_from_slice(&key.tag(message, accumulator)),
                        Some(tag) => {
                            if let Err(error) = key.verify(message, accumulator, &tag) {
                                data.zeroize();
                                data.clear();
                                return Err(error.into());
                            }
                        }
                    }
                }
            }
            (Mode::Ctr, _) => self.process(data)?,
            (_, Direction::Encrypt) if self.padding => {
                padding::pad(data, block_size);
                self.process(data)?;
            }
            (_, Direction::Decrypt) if self.padding => {
                if total == 0 || !data.len().is_multiple_of(block_size) {
                    return Err(JobError::PartialBlock {
                        length: total,
                        block_size,
                    });
                }
                self.process(data)?;
                let last = &data[data.len() - block_size..];
                let kept = padding::unpadded_length(last).ok_or(JobError::BadPadding(self.spec))?;
                data.truncate(data.len() - block_size + kept);
            }
            _ => {
                if !data.len().is_multiple_of(block_size) {
                    return Err(JobError::PartialBlock {
                        length: total,
                        block_size,
                    });
                }
                self.process(data)?;
            }
        }
        Ok(())
    }

    /// Runs the mode over `data`, which is whole blocks except possibly at the end of a
    /// stream mode's message.
    fn process(&mut self, data: &mut [u8]) -> Result<(), JobError> {
        if self.gpu {
            if let Some(gpu) = self.engine.gpu_for(self.spec, self.direction, data.len()) {
                return self.process_on_gpu(gpu, data);
            }
        }
        let keys = self.keys.get();
        let cipher = keys.cipher();
        let block_size = cipher.block_size();
        let engine = self.engine;
        let direction = self.direction;
        let model = self.cost_model;
        match &mut self.state {
            ModeState::Ecb => {
                let lengths = engine.plan(data.len(), block_size, model);
                engine.run(data, &lengths, |_, _, range| {
                    ecb::apply(cipher, direction, range)
                });
            }
            ModeState::Cbc { chain } => match direction {
                Direction::Encrypt => cbc::encrypt(cipher, chain, data),
                Direction::Decrypt => {
                    if data.is_empty() {
                        return Ok(());
                    }
                    let lengths = engine.plan(data.len(), block_size, model);
                    // Each range chains on the ciphertext block before it: copy those out
                    // before any range is decrypted in place.
                    let mut previous = Vec::with_capacity(lengths.len() * block_size);
                    previous.extend_from_slice(chain);
                    let mut offset = 0;
                    for length in &lengths[..lengths.len() - 1] {
                        offset += length;
                        previous.extend_from_slice(&data[offset - block_size..offset]);
                    }
                    chain.copy_from_slice(&data[data.len() - block_size..]);
                    engine.run(data, &lengths, |index, _, range| {
                        let before = &previous[index * block_size..(index + 1) * block_size];
                        cbc::decrypt(cipher, before, range)
                    });
                }
            },
            ModeState::Ctr { .. } | ModeState::Gcm { .. } => {
                return self.process_region(Region::InPlace(data))
            }
        }
        Ok(())
    }

    /// CTR and GCM on the CPU over `region`, in place or from one buffer into another,
    /// split over the engine.
    fn process_region(&mut self, region: Region<'_>) -> Result<(), JobError> {
        let keys = self.keys.get();
        let cipher = keys.cipher();
        let block_size = cipher.block_size();
        let engine = self.engine;
        let direction = self.direction;
        let length = region.len();
        let lengths = engine.plan(length, block_size, self.cost_model);
        match &mut self.state {
            ModeState::Ctr { next } => {
                let start = *next;
                region.run(engine, &lengths, |offset, range| {
                    let counter = start.advanced((offset / block_size) as u64);
                    match range {
                        Region::InPlace(data) => ctr::apply(cipher, counter, data),
                        Region::Into(input, output) => {
                            ctr::apply_into(cipher, counter, input, output)
                        }
                    }
                });
                *next = start.advanced((length / block_size) as u64);
            }
            ModeState::Gcm {
                message,
                accumulator,
            } => {
                let key = keys.gcm()?;
                let first_block = accumulator.text_bytes() / 16;
                let message: &GcmMessage = message;
                let partials = region.run(engine, &lengths, |offset, range| {
                    let first_block = first_block + (offset / 16) as u64;
                    match range {
                        Region::InPlace(data) => {
                            key.process_range(message, cipher, direction, first_block, data)
                        }
                        Region::Into(input, output) => key.process_range_into(
                            message,
                            cipher,
                            direction,
                            first_block,
                            input,
                            output,
                        ),
                    }
                });
                for (partial, length) in partials.into_iter().zip(&lengths) {
                    accumulator.append(key, partial, *length as u64)?;
                }
            }
            _ => unreachable!("only CTR and GCM run by region"),
        }
        Ok(())
    }
}

/// The bytes a CTR or GCM call runs over: one buffer in place, or an input read into an
/// output of the same length.
enum Region<'a> {
    InPlace(&'a mut [u8]),
    Into(&'a [u8], &'a mut [u8]),
}

impl Region<'_> {
    fn len(&self) -> usize {
        match self {
            Region::InPlace(data) => data.len(),
            Region::Into(input, _) => input.len(),
        }
    }

    /// `work(offset, range)` over consecutive ranges of the given lengths on `engine`
    /// ([`Engine::run`] or [`Engine::run_into`]), the results in range order.
    fn run<R: Send>(
        self,
        engine: &Engine,
        lengths: &[usize],
        work: impl Fn(usize, Region<'_>) -> R + Sync,
    ) -> Vec<R> {
        match self {
            Region::InPlace(data) => engine.run(data, lengths, |_, offset, range| {
                work(offset, Region::InPlace(range))
            }),
            Region::Into(input, output) => {
                engine.run_into(input, output, lengths, |_, offset, from, to| {
                    work(offset, Region::Into(from, to))
                })
            }
        }
    }
}

impl Crypter<'_> {
    /// The GPU backends' share of [`Crypter::process`]: the device runs every block-parallel
    /// part, GCM's GHASH included (partial sums per segment, joined here with powers of H);
    /// CBC encryption (sequential) runs on the CPU, and so does GHASH on a device that has
    /// no GHASH kernel.
    fn process_on_gpu(
        &mut self,
        gpu: &dyn parcrypt_gpu::GpuDevice,
        data: &mut [u8],
    ) -> Result<(), JobError> {
        use parcrypt_gpu::GpuOperation;
        let keys = self.keys.get();
        let key = keys.gpu_material()?;
        let cipher = keys.cipher();
        let block_size = cipher.block_size();
        let engine = self.engine;
        let direction = self.direction;
        if data.is_empty() {
            return Ok(());
        }
        match &mut self.state {
            ModeState::Ecb => {
                let operation = match direction {
                    Direction::Encrypt => GpuOperation::EcbEncrypt,
                    Direction::Decrypt => GpuOperation::EcbDecrypt,
                };
                gpu.process(key, &operation, data)?;
            }
            ModeState::Cbc { chain } => match direction {
                Direction::Encrypt => cbc::encrypt(cipher, chain, data),
                Direction::Decrypt => {
                    let last = data[data.len() - block_size..].to_vec();
                    gpu.process(
                        key,
                        &GpuOperation::CbcDecrypt {
                            previous: chain.clone(),
                        },
                        data,
                    )?;
                    *chain = last;
                }
            },
            ModeState::Ctr { next } => {
                let mut counter = vec![0u8; block_size];
                next.write(&mut counter);
                gpu.process(
                    key,
                    &GpuOperation::Ctr {
                        counter,
                        rule: CounterRule::Full,
                    },
                    data,
                )?;
                *next = next.advanced(data.len().div_ceil(block_size) as u64);
            }
            ModeState::Gcm {
                message,
                accumulator,
            } => {
                let gcm_key = keys.gcm()?;
                let mut counter = vec![0u8; 16];
                message
                    .text_counter(accumulator.text_bytes() / 16)
                    .write(&mut counter);
                let operation = GpuOperation::Ctr {
                    counter,
                    rule: CounterRule::Low32,
                };
                let gcm_direction = match direction {
                    Direction::Encrypt => parcrypt_gpu::ghash::GcmDirection::Encrypt,
                    Direction::Decrypt => parcrypt_gpu::ghash::GcmDirection::Decrypt,
                };
                // CTR and GHASH on the same device-resident slabs: the data crosses the bus
                // once each way and only 16-byte sums come back beside the text.
                let partial = match gpu.process_gcm(
                    key,
                    &operation,
                    gcm_key.hash_subkey(),
                    gcm_direction,
                    data,
                ) {
                    Ok(partial) => partial,
                    // A device without the fused pass: the text and the hash apart. GHASH
                    // covers the ciphertext: after encrypting, before decrypting.
                    Err(parcrypt_gpu::GpuError::Unsupported { .. }) => {
                        if direction == Direction::Encrypt {
                            gpu.process(key, &operation, data)?;
                            ghash_whole(gpu, engine, gcm_key, data)?
                        } else {
                            let partial = ghash_whole(gpu, engine, gcm_key, data)?;
                            gpu.process(key, &operation, data)?;
                            partial
                        }
                    }
                    Err(error) => return Err(error.into()),
                };
                accumulator.append(gcm_key, partial, data.len() as u64)?;
            }
        }
        Ok(())
    }
}

/// The GHASH of `data` from a zero state (one range for the accumulator): on the device,
/// which joins its segments per work-group and leaves the host one sum per MiB, or on the
/// CPU pool when the device has no GHASH kernel.
pub(crate) fn ghash_whole(
    gpu: &dyn parcrypt_gpu::GpuDevice,
    engine: &Engine,
    key: &GcmKey,
    data: &[u8],
) -> Result<u128, JobError> {
    match gpu.ghash_whole(key.hash_subkey(), data) {
        Ok(partial) => Ok(partial),
        Err(parcrypt_gpu::GpuError::Unsupported { .. }) => {
            let lengths = engine.plan(data.len(), 16, None);
            Ok(ghash_on_engine(engine, key, data, &lengths))
        }
        Err(error) => Err(error.into()),
    }
}

/// The GHASH partial sum of `data` (from a zero state, a final partial block zero-padded):
/// the ranges `lengths` (whole blocks but the last) hashed on the engine's threads, reading
/// only, and joined in order. The CPU's hash-only pass over a ciphertext.
pub(crate) fn ghash_on_engine(
    engine: &Engine,
    key: &GcmKey,
    data: &[u8],
    lengths: &[usize],
) -> u128 {
    engine
        .run_read(data, lengths, |_, _, range| key.hash_range(range))
        .into_iter()
        .zip(lengths)
        .fold(0u128, |sum, (partial, length)| {
            key.ghash().append_partial(sum, partial, *length as u64)
        })
}

/// What one message adds to a key: its direction, IV, AAD and padding.
pub(crate) struct MessageSpec<'a> {
    pub(crate) direction: Direction,
    pub(crate) iv: Option<&'a [u8]>,
    pub(crate) aad: Option<&'a [u8]>,
    pub(crate) padding: bool,
    pub(crate) allow_short_gcm_iv: bool,
}

/// Checks that `iv` and `aad` suit `spec` and returns the IV (empty for ECB). A GCM IV of 1
/// to 11 bytes passes only when `allow_short_gcm_iv` says the caller asked for it.
pub(crate) fn check_iv_and_aad<'a>(
    spec: CipherSpec,
    iv: Option<&'a [u8]>,
    aad: Option<&[u8]>,
    allow_short_gcm_iv: bool,
) -> Result<&'a [u8], JobError> {
    if aad.is_some() && spec.mode != Mode::Gcm {
        return Err(JobError::AadNotUsed);
    }
    let iv = match (spec.mode, iv) {
        (Mode::Ecb, Some(_)) => return Err(JobError::IvNotUsed(spec)),
        (Mode::Ecb, None) => &[][..],
        (_, None) => return Err(JobError::IvMissing(spec)),
        (_, Some(iv)) => iv,
    };
    if let Some(expected) = spec.iv_length() {
        if iv.len() != expected {
            return Err(JobError::IvLength {
                spec,
                expected,
                got: iv.len(),
            });
        }
    }
    if spec.mode == Mode::Gcm && iv.is_empty() {
        return Err(GcmError::EmptyIv.into());
    }
    if spec.mode == Mode::Gcm && iv.len() < MIN_GCM_IV_BYTES && !allow_short_gcm_iv {
        return Err(JobError::ShortGcmIv {
            spec,
            got: iv.len(),
        });
    }
    Ok(iv)
}

/// Runs a whole message held in memory: convenience for tests, benchmarks and libraries
/// that hold a [`JobSpec`] (others use [`crate::Cipher`]).
pub fn process_buffer(
    engine: &Engine,
    job: &JobSpec<'_>,
    mut data: Vec<u8>,
) -> Result<Vec<u8>, JobError> {
    crate::cipher::process_vec(Crypter::new(engine, job)?, &mut data)?;
    Ok(data)
}

/// The most bytes a whole message of `input_length` bytes turns into: 16 more for GCM
/// encryption, up to one block more for padded encryption, 16 fewer for GCM decryption.
pub(crate) fn max_output_length(
    spec: CipherSpec,
    direction: Direction,
    padding: bool,
    input_length: usize,
) -> usize {
    let block_size = spec.algorithm.block_size();
    match (spec.mode, direction) {
        (Mode::Gcm, Direction::Encrypt) => input_length + TAG_BYTES,
        (Mode::Gcm, Direction::Decrypt) => input_length.saturating_sub(TAG_BYTES),
        (mode, Direction::Encrypt) if padding && mode.pads() => {
            (input_length / block_size + 1) * block_size
        }
        _ => input_length,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Backend;

    /// A streaming Blowfish message is refused as its count passes 2^32 blocks, before the
    /// piece that would cross is encrypted; the count starts near the bound rather than
    /// after 32 GiB of work.
    #[test]
    fn a_streaming_blowfish_message_stops_at_the_birthday_bound() {
        let engine = Engine::new(Backend::Seq, None).unwrap();
        for (name, direction) in [
            ("bf-ctr", Direction::Encrypt),
            ("bf-cbc", Direction::Decrypt),
        ] {
            let job = JobSpec {
                spec: name.parse().unwrap(),
                direction,
                key: b"sixteen byte key",
                iv: Some(&[0u8; 8]),
                allow_short_gcm_iv: false,
                aad: None,
                padding: false,
                implementation: Implementation::Fast,
            };
            let mut crypter = Crypter::new(&engine, &job).unwrap();
            crypter.processed = MAX_BLOCKS_64 * 8 - 16;
            let mut last = [7u8; 16];
            crypter.update(&mut last).unwrap();
            let mut over = [7u8; 8];
            let refused = crypter.update(&mut over);
            assert!(
                matches!(refused, Err(JobError::BirthdayBound { .. })),
                "{name}: {refused:?}"
            );
            assert_eq!(
                over, [7u8; 8],
                "{name}: the refused piece was not encrypted"
            );
            let refused = crypter.update_into(&[7u8; 8], &mut over);
            assert!(matches!(refused, Err(JobError::BirthdayBound { .. })));
            let mut tail = vec![7u8; 8];
            assert!(matches!(
                crypter.finish(&mut tail),
                Err(JobError::BirthdayBound { .. })
            ));
        }
    }

    #[test]
    fn the_bound_is_exactly_two_to_the_32_blocks() {
        let bf: CipherSpec = "bf-ctr".parse().unwrap();
        assert!(check_message_length(bf, MAX_BLOCKS_64 * 8).is_ok());
        assert!(check_message_length(bf, MAX_BLOCKS_64 * 8 + 1).is_err());
        let aes: CipherSpec = "aes-128-ctr".parse().unwrap();
        assert!(check_message_length(aes, u64::MAX).is_ok());
    }
}
