//! What a device is asked to do to a buffer, and the per-launch arguments that follow from
//! it. Nothing here is specific to OpenCL, so that the CUDA host can share it.

use parcrypt_ciphers::{Algorithm, BlockCipher};
use parcrypt_modes::ctr::{self, Counter, CounterRule};
use parcrypt_modes::{cbc, ecb, Direction};

use crate::kernel_source::{self, CipherFamily, KernelOperation};
use crate::GpuError;

/// One operation over a range of a message, as the modes crate defines it.
///
/// Only the modes that parallelise over blocks run on a GPU: ECB, CTR and CBC decryption
/// (CBC encryption chains each block on the previous output). GCM is CTR plus GHASH
/// ([`crate::GpuDevice::ghash_segments`]); many short GCM messages (the chunks of a
/// Cobblestone file) take [`GpuOperation::CtrSegments`] for their CTR parts in one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuOperation {
    /// ECB encryption of a range of whole blocks.
    EcbEncrypt,
    /// ECB decryption of a range of whole blocks.
    EcbDecrypt,
    /// CBC decryption of a range of whole blocks; `previous` is the ciphertext block just
    /// before the range (the IV for the first range).
    CbcDecrypt {
        /// The ciphertext block before the range, one block long.
        previous: Vec<u8>,
    },
    /// CTR over any length (a final partial block uses the front of its keystream block);
    /// `counter` is the block-sized counter of the range's first block, big-endian, and
    /// `rule` says which of its bits count.
    Ctr {
        /// The counter block of the range's first block, big-endian, one block long.
        counter: Vec<u8>,
        /// Which bits of the counter are incremented.
        rule: CounterRule,
    },
    /// CTR over consecutive segments of `segment_bytes` (a multiple of the block size; the
    /// last segment may be shorter and end in a partial block), each an independent CTR
    /// stream: segment `s` starts from counter block `s` of `counters`, which holds one
    /// block-sized counter per segment of the data, big-endian, back to back (so exactly
    /// `data.len().div_ceil(segment_bytes)` of them). `rule` applies inside every segment.
    ///
    /// One device call for what would otherwise be one [`GpuOperation::Ctr`] call per
    /// segment. A segment may not be longer than the device's slab
    /// ([`crate::OpenClDevice::slab_bytes`]), since slabs are cut between segments.
    CtrSegments {
        /// One starting counter block per segment, big-endian, back to back.
        counters: Vec<u8>,
        /// Length of every segment but the last, in bytes.
        segment_bytes: usize,
        /// Which bits of each counter are incremented.
        rule: CounterRule,
    },
}

impl GpuOperation {
    /// The kernel operation: segmented CTR counts as CTR (its kernel has CTR's tables and
    /// rounds; see [`kernel_source::ctr_segments_kernel_name`]), and [`Self::segmented`]
    /// tells the two kernels apart.
    pub(crate) fn kernel_operation(&self) -> KernelOperation {
        match self {
            GpuOperation::EcbEncrypt => KernelOperation::EcbEncrypt,
            GpuOperation::EcbDecrypt => KernelOperation::EcbDecrypt,
            GpuOperation::CbcDecrypt { .. } => KernelOperation::CbcDecrypt,
            GpuOperation::Ctr { .. } | GpuOperation::CtrSegments { .. } => KernelOperation::Ctr,
        }
    }

    /// Whether this runs the segmented CTR kernel.
    pub(crate) fn segmented(&self) -> bool {
        matches!(self, GpuOperation::CtrSegments { .. })
    }

    /// The name of the kernel function that runs this operation for `family`.
    pub(crate) fn kernel_name(&self, family: CipherFamily) -> &'static str {
        if self.segmented() {
            kernel_source::ctr_segments_kernel_name(family)
        } else {
            kernel_source::kernel_name(family, self.kernel_operation())
        }
    }

    /// This operation done on the CPU with `cipher` through the modes crate: the reference
    /// a device's result is held to, by the self-test and by the cross-backend tests (so
    /// both hold devices to one definition). Lengths as [`Self::validate`] accepts them.
    #[doc(hidden)]
    pub fn apply_on_cpu(&self, cipher: &dyn BlockCipher, data: &mut [u8]) {
        match self {
            GpuOperation::EcbEncrypt => ecb::apply(cipher, Direction::Encrypt, data),
            GpuOperation::EcbDecrypt => ecb::apply(cipher, Direction::Decrypt, data),
            GpuOperation::CbcDecrypt { previous } => cbc::decrypt(cipher, previous, data),
            GpuOperation::Ctr { counter, rule } => {
                ctr::apply(cipher, Counter::new(counter, *rule), data)
            }
            GpuOperation::CtrSegments {
                counters,
                segment_bytes,
                rule,
            } => {
                // Each segment is its own CTR stream from its own counter block.
                let segments = data.chunks_mut(*segment_bytes);
                for (segment, counter) in segments.zip(counters.chunks_exact(cipher.block_size())) {
                    ctr::apply(cipher, Counter::new(counter, *rule), segment);
                }
            }
        }
    }

    /// Checks lengths before anything reaches a device: the kernels trust them.
    pub(crate) fn validate(
        &self,
        algorithm: Algorithm,
        data_length: usize,
    ) -> Result<(), GpuError> {
        let block_size = algorithm.block_size();
        if let GpuOperation::CtrSegments {
            counters,
            segment_bytes,
            ..
        } = self
        {
            return validate_segments(algorithm, data_length, counters, *segment_bytes);
        }
        let whole_blocks_needed = !matches!(self, GpuOperation::Ctr { .. });
        if whole_blocks_needed && !data_length.is_multiple_of(block_size) {
            return Err(GpuError::InvalidInput(format!(
                "{algorithm} ECB/CBC on the GPU needs whole {block_size}-byte blocks, got \
                 {data_length} bytes (pad first)"
            )));
        }
        let (what, block) = match self {
            GpuOperation::CbcDecrypt { previous } => ("CBC previous block", previous),
            GpuOperation::Ctr { counter, .. } => ("CTR counter block", counter),
            _ => return Ok(()),
        };
        if block.len() != block_size {
            return Err(GpuError::InvalidInput(format!(
                "{what} for {algorithm} must be {block_size} bytes, got {}",
                block.len()
            )));
        }
        Ok(())
    }

    /// The most bytes one slab may hold for this operation on a device whose slabs hold
    /// `device_slab_bytes` (whole 16-byte blocks): that, except that segmented CTR cuts
    /// slabs between segments, so it takes the whole segments that fit and refuses
    /// segments longer than a slab.
    pub(crate) fn slab_bytes(&self, device_slab_bytes: usize) -> Result<usize, GpuError> {
        match self {
            GpuOperation::CtrSegments { segment_bytes, .. } => {
                if *segment_bytes > device_slab_bytes {
                    return Err(GpuError::InvalidInput(format!(
                        "CTR segments of {segment_bytes} bytes are longer than this device's {device_slab_bytes}-byte slab (open it with larger slabs, or run each segment as its own CTR call)"
                    )));
                }
                Ok(device_slab_bytes / segment_bytes * segment_bytes)
            }
            _ => Ok(device_slab_bytes),
        }
    }

    /// Segmented CTR: the arguments of a launch over `length` bytes from byte `start` of
    /// the data, which must be a segment boundary. `None` for every other operation.
    // Only the CUDA host processes data already on the device, in launches of its own.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn segment_arguments(
        &self,
        block_size: usize,
        start: usize,
        length: usize,
    ) -> Option<ModeArguments> {
        let GpuOperation::CtrSegments {
            segment_bytes,
            rule,
            ..
        } = self
        else {
            return None;
        };
        debug_assert!(start.is_multiple_of(*segment_bytes));
        Some(ModeArguments::Segments {
            first: start / segment_bytes,
            count: length.div_ceil(*segment_bytes),
            blocks_per_segment: (segment_bytes / block_size) as u32,
            rule: rule_flag(*rule),
        })
    }

    /// Segmented CTR: the block at byte `offset` of the data (a block boundary) as a
    /// one-range [`GpuOperation::Ctr`] from its own counter, for running it alone (a final
    /// partial block). `None` for every other operation.
    // Only the CUDA host processes data already on the device, in launches of its own.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn segment_block_as_ctr(&self, block_size: usize, offset: usize) -> Option<Self> {
        let GpuOperation::CtrSegments {
            counters,
            segment_bytes,
            rule,
        } = self
        else {
            return None;
        };
        let segment = offset / segment_bytes;
        let start = &counters[segment * block_size..(segment + 1) * block_size];
        let mut counter = vec![0u8; block_size];
        Counter::new(start, *rule)
            .advanced(((offset % segment_bytes) / block_size) as u64)
            .write(&mut counter);
        Some(GpuOperation::Ctr {
            counter,
            rule: *rule,
        })
    }

    /// Segmented CTR: the counter blocks of segments `first..first + count`, as bytes.
    /// Empty for every other operation.
    pub(crate) fn segment_counters(&self, block_size: usize, first: usize, count: usize) -> &[u8] {
        match self {
            GpuOperation::CtrSegments { counters, .. } => {
                &counters[first * block_size..(first + count) * block_size]
            }
            _ => &[],
        }
    }
}

/// [`GpuOperation::validate`] for segmented CTR: segments of whole blocks, one counter
/// block per segment of the data.
fn validate_segments(
    algorithm: Algorithm,
    data_length: usize,
    counters: &[u8],
    segment_bytes: usize,
) -> Result<(), GpuError> {
    let block_size = algorithm.block_size();
    if segment_bytes == 0 || !segment_bytes.is_multiple_of(block_size) {
        return Err(GpuError::InvalidInput(format!(
            "CTR segments for {algorithm} must be whole {block_size}-byte blocks, at least one, got {segment_bytes} bytes"
        )));
    }
    let segments = data_length.div_ceil(segment_bytes);
    if counters.len() != segments * block_size {
        return Err(GpuError::InvalidInput(format!(
            "{data_length} bytes in {segment_bytes}-byte segments need {segments} counter blocks of {block_size} bytes ({} bytes), got {} bytes",
            segments * block_size,
            counters.len()
        )));
    }
    if u32::try_from(segment_bytes / block_size).is_err() {
        return Err(GpuError::InvalidInput(format!(
            "CTR segments of {segment_bytes} bytes are too long for one launch"
        )));
    }
    Ok(())
}

/// The mode's own kernel arguments for one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ModeArguments {
    /// ECB: nothing more.
    None,
    /// CTR: the counter of the launch's first block as big-endian words, most significant
    /// first (an 8-byte counter uses the first two), and the rule flag of `parcrypt.cl`.
    Counter { words: [u32; 4], rule: u32 },
    /// CBC decryption: the ciphertext block before the launch's first block, as the words
    /// the device loads from memory (little-endian; the host checks the device is).
    Previous { words: [u32; 4] },
    /// Segmented CTR: the launch covers segments `first..first + count` of the operation
    /// (whose counter blocks the host uploads, see [`GpuOperation::segment_counters`]),
    /// `blocks_per_segment` blocks each but the last, under the rule flag.
    Segments {
        first: usize,
        count: usize,
        blocks_per_segment: u32,
        rule: u32,
    },
}

/// `COUNTER_RULE_FULL` / `COUNTER_RULE_LOW32` in `parcrypt.cl`.
fn rule_flag(rule: CounterRule) -> u32 {
    match rule {
        CounterRule::Full => 0,
        CounterRule::Low32 => 1,
    }
}

/// Walks a message slab by slab, producing each slab's mode arguments: the counter advanced
/// by the blocks before it, or the ciphertext block before it.
pub(crate) struct SlabChain {
    state: ChainState,
}

enum ChainState {
    Ecb,
    Ctr {
        counter: Counter,
        rule: CounterRule,
    },
    Cbc {
        previous: Vec<u8>,
    },
    Segments {
        next: usize,
        segment_bytes: usize,
        rule: CounterRule,
    },
}

impl SlabChain {
    pub(crate) fn new(operation: &GpuOperation) -> Self {
        let state = match operation {
            GpuOperation::EcbEncrypt | GpuOperation::EcbDecrypt => ChainState::Ecb,
            GpuOperation::Ctr { counter, rule } => ChainState::Ctr {
                counter: Counter::new(counter, *rule),
                rule: *rule,
            },
            GpuOperation::CbcDecrypt { previous } => ChainState::Cbc {
                previous: previous.clone(),
            },
            GpuOperation::CtrSegments {
                segment_bytes,
                rule,
                ..
            } => ChainState::Segments {
                next: 0,
                segment_bytes: *segment_bytes,
                rule: *rule,
            },
        };
        SlabChain { state }
    }

    /// The arguments for the slab `slab` (still holding its input), then steps past it.
    /// For CBC this must run before the slab's output overwrites its ciphertext. Segmented
    /// CTR needs every slab but the last to be whole segments
    /// ([`GpuOperation::slab_bytes`]).
    pub(crate) fn next(&mut self, slab: &[u8], block_size: usize) -> ModeArguments {
        match &mut self.state {
            ChainState::Ecb => ModeArguments::None,
            ChainState::Ctr { counter, rule } => {
                let mut block = [0u8; 16];
                let block = &mut block[..counter.block_size()];
                counter.write(block);
                let mut words = [0u32; 4];
                for (word, bytes) in words.iter_mut().zip(block.chunks_exact(4)) {
                    *word = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                }
                *counter = counter.advanced(slab.len().div_ceil(block_size) as u64);
                ModeArguments::Counter {
                    words,
                    rule: rule_flag(*rule),
                }
            }
            ChainState::Cbc { previous } => {
                let mut words = [0u32; 4];
                for (word, bytes) in words.iter_mut().zip(previous.chunks_exact(4)) {
                    *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                }
                previous.copy_from_slice(&slab[slab.len() - block_size..]);
                ModeArguments::Previous { words }
            }
            ChainState::Segments {
                next,
                segment_bytes,
                rule,
            } => {
                let first = *next;
                let count = slab.len().div_ceil(*segment_bytes);
                *next += count;
                ModeArguments::Segments {
                    first,
                    count,
                    blocks_per_segment: (*segment_bytes / block_size) as u32,
                    rule: rule_flag(*rule),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_checked() {
        let ctr = GpuOperation::Ctr {
            counter: vec![0; 16],
            rule: CounterRule::Full,
        };
        assert!(ctr.validate(Algorithm::Aes128, 17).is_ok());
        assert!(
            ctr.validate(Algorithm::Blowfish, 8).is_err(),
            "16-byte counter for Blowfish"
        );
        assert!(GpuOperation::EcbEncrypt
            .validate(Algorithm::Rc6_128, 17)
            .is_err());
        assert!(GpuOperation::EcbDecrypt
            .validate(Algorithm::Blowfish, 24)
            .is_ok());
        let cbc = GpuOperation::CbcDecrypt {
            previous: vec![0; 8],
        };
        assert!(cbc.validate(Algorithm::Blowfish, 16).is_ok());
        assert!(cbc.validate(Algorithm::Aes256, 16).is_err());
    }

    #[test]
    fn counters_advance_by_whole_slabs_and_wrap_by_rule() {
        let mut start = [0xffu8; 16];
        start[0] = 0x12;
        let mut chain = SlabChain::new(&GpuOperation::Ctr {
            counter: start.to_vec(),
            rule: CounterRule::Full,
        });
        assert_eq!(
            chain.next(&[0; 33], 16),
            ModeArguments::Counter {
                words: [0x12ff_ffff, !0, !0, !0],
                rule: 0
            }
        );
        // 33 bytes are three blocks, and the full-width add carries into the first word.
        assert_eq!(
            chain.next(&[0; 16], 16),
            ModeArguments::Counter {
                words: [0x1300_0000, 0, 0, 2],
                rule: 0
            }
        );

        let mut chain = SlabChain::new(&GpuOperation::Ctr {
            counter: vec![0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff],
            rule: CounterRule::Low32,
        });
        chain.next(&[0; 8], 8);
        assert_eq!(
            chain.next(&[0; 8], 8),
            ModeArguments::Counter {
                words: [1, 0, 0, 0],
                rule: 1
            }
        );
    }

    #[test]
    fn segment_lengths_and_counters_are_checked() {
        let segments = |counters: usize, segment_bytes| GpuOperation::CtrSegments {
            counters: vec![0; counters],
            segment_bytes,
            rule: CounterRule::Low32,
        };
        // 100 bytes in 32-byte segments: four segments, the last 4 bytes long.
        assert!(segments(64, 32).validate(Algorithm::Aes128, 100).is_ok());
        assert!(segments(48, 32).validate(Algorithm::Aes128, 100).is_err());
        assert!(segments(80, 32).validate(Algorithm::Aes128, 100).is_err());
        assert!(segments(0, 32).validate(Algorithm::Aes128, 0).is_ok());
        assert!(segments(16, 32).validate(Algorithm::Aes128, 0).is_err());
        // Whole blocks of the cipher: 8 is one Blowfish block but half an AES block.
        assert!(segments(13 * 8, 8)
            .validate(Algorithm::Blowfish, 100)
            .is_ok());
        assert!(segments(13 * 16, 8)
            .validate(Algorithm::Aes128, 100)
            .is_err());
        assert!(segments(0, 0).validate(Algorithm::Aes128, 0).is_err());
        let error = segments(16, 24)
            .validate(Algorithm::Rc6_128, 10)
            .unwrap_err()
            .to_string();
        assert!(error.contains("whole 16-byte blocks"), "{error}");

        // Slabs hold whole segments; a segment longer than a slab is refused.
        assert_eq!(segments(0, 48).slab_bytes(4144).unwrap(), 4128);
        assert_eq!(segments(0, 4144).slab_bytes(4144).unwrap(), 4144);
        assert!(segments(0, 4160).slab_bytes(4144).is_err());
        assert_eq!(GpuOperation::EcbEncrypt.slab_bytes(4144).unwrap(), 4144);
    }

    #[test]
    fn segment_slabs_name_their_segments_and_counters() {
        let counters: Vec<u8> = (0..7 * 16).map(|byte| byte as u8).collect();
        let operation = GpuOperation::CtrSegments {
            counters,
            segment_bytes: 48,
            rule: CounterRule::Low32,
        };
        let mut chain = SlabChain::new(&operation);
        assert_eq!(
            chain.next(&[0; 96], 16),
            ModeArguments::Segments {
                first: 0,
                count: 2,
                blocks_per_segment: 3,
                rule: 1
            }
        );
        // The last slab: four segments, the last one partial.
        assert_eq!(
            chain.next(&[0; 150], 16),
            ModeArguments::Segments {
                first: 2,
                count: 4,
                blocks_per_segment: 3,
                rule: 1
            }
        );
        assert_eq!(
            operation.segment_arguments(16, 96, 150),
            Some(ModeArguments::Segments {
                first: 2,
                count: 4,
                blocks_per_segment: 3,
                rule: 1
            })
        );
        assert_eq!(GpuOperation::EcbEncrypt.segment_arguments(16, 0, 16), None);
        // Byte 112 is block 1 of segment 2, whose counter block is bytes 32..48: 32..=47,
        // plus one in the last word.
        let Some(GpuOperation::Ctr { counter, rule }) = operation.segment_block_as_ctr(16, 112)
        else {
            panic!("segmented CTR gives a CTR block");
        };
        assert_eq!(rule, CounterRule::Low32);
        let mut expected: Vec<u8> = (32..48).collect();
        expected[15] += 1;
        assert_eq!(counter, expected);
        let slab_counters = operation.segment_counters(16, 2, 4);
        assert_eq!(slab_counters.len(), 64);
        assert_eq!(slab_counters[0], 32);
        assert!(GpuOperation::EcbEncrypt
            .segment_counters(16, 0, 0)
            .is_empty());
    }

    #[test]
    fn cbc_hands_on_the_last_ciphertext_block() {
        let mut chain = SlabChain::new(&GpuOperation::CbcDecrypt {
            previous: vec![1, 0, 0, 0, 2, 0, 0, 0],
        });
        let slab: Vec<u8> = (0..16).collect();
        assert_eq!(
            chain.next(&slab, 8),
            ModeArguments::Previous {
                words: [1, 2, 0, 0]
            }
        );
        assert_eq!(
            chain.next(&[0; 8], 8),
            ModeArguments::Previous {
                words: [
                    u32::from_le_bytes([8, 9, 10, 11]),
                    u32::from_le_bytes([12, 13, 14, 15]),
                    0,
                    0
                ]
            }
        );
    }
}
