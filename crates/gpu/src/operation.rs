//! What a device is asked to do to a buffer, and the per-launch arguments that follow from
//! it. Nothing here is specific to OpenCL, so that the CUDA host can share it.

use parcrypt_ciphers::Algorithm;
use parcrypt_modes::ctr::{Counter, CounterRule};

use crate::kernel_source::KernelOperation;
use crate::GpuError;

/// One operation over a range of a message, as the modes crate defines it.
///
/// Only the modes that parallelise over blocks run on a GPU: ECB, CTR and CBC decryption
/// (CBC encryption chains each block on the previous output). GCM will be CTR plus GHASH.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuOperation {
    EcbEncrypt,
    EcbDecrypt,
    /// CBC decryption of a range of whole blocks; `previous` is the ciphertext block just
    /// before the range (the IV for the first range).
    CbcDecrypt {
        previous: Vec<u8>,
    },
    /// CTR over any length (a final partial block uses the front of its keystream block);
    /// `counter` is the block-sized counter of the range's first block, big-endian, and
    /// `rule` says which of its bits count.
    Ctr {
        counter: Vec<u8>,
        rule: CounterRule,
    },
}

impl GpuOperation {
    pub(crate) fn kernel_operation(&self) -> KernelOperation {
        match self {
            GpuOperation::EcbEncrypt => KernelOperation::EcbEncrypt,
            GpuOperation::EcbDecrypt => KernelOperation::EcbDecrypt,
            GpuOperation::CbcDecrypt { .. } => KernelOperation::CbcDecrypt,
            GpuOperation::Ctr { .. } => KernelOperation::Ctr,
        }
    }

    /// Checks lengths before anything reaches a device: the kernels trust them.
    pub(crate) fn validate(
        &self,
        algorithm: Algorithm,
        data_length: usize,
    ) -> Result<(), GpuError> {
        let block_size = algorithm.block_size();
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
    Ctr { counter: Counter, rule: CounterRule },
    Cbc { previous: Vec<u8> },
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
        };
        SlabChain { state }
    }

    /// The arguments for the slab `slab` (still holding its input), then steps past it.
    /// For CBC this must run before the slab's output overwrites its ciphertext.
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
