//! Blowfish (Schneier 1993): 64-bit blocks, 16 rounds, key-dependent S-boxes.
//!
//! Words are read big-endian from each 8-byte block, as in the reference code, OpenSSL and
//! Eric Young's test vectors.
//!
//! One block is a chain of 16 rounds, each waiting on four table loads, so a lone block leaves
//! most of the core idle. The batch path therefore runs `LANES` independent blocks through
//! the rounds side by side; their loads and additions interleave and the out-of-order core
//! overlaps them.

mod pi_tables;

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::BlockCipher;

/// Bytes per block.
const BLOCK_SIZE: usize = 8;

/// Blocks in flight per iteration of the batch loop. On a Zen 5 core 8 lanes ran at 0.82 GB/s
/// against 0.73 for 4 and 0.66 for 16 (more lanes spill the 15 usable registers); 6 was as
/// fast in one long call but leaves a single-block tail in every 64-block batch of the modes.
const LANES: usize = 8;

/// Blowfish keyed with 4 to 56 bytes.
///
/// The P-array and S-boxes live on the heap so that moving a `Blowfish` never leaves a copy
/// of them behind; they are wiped when the value is dropped.
pub struct Blowfish {
    schedule: Box<KeySchedule>,
}

/// The key-dependent state: 18 round keys and four 256-entry S-boxes.
#[derive(Zeroize, ZeroizeOnDrop)]
struct KeySchedule {
    p: [u32; 18],
    s: [[u32; 256]; 4],
}

impl Blowfish {
    /// Expands `key` into the P-array and S-boxes.
    ///
    /// The caller ([`crate::new_cipher`]) has checked that the key is 4 to 56 bytes long, the
    /// range Blowfish is specified for. Other lengths do not panic: bytes past the 72nd cannot
    /// reach the P-array and an empty key leaves it at pi's digits.
    pub fn new(key: &[u8]) -> Self {
        Blowfish {
            schedule: key_schedule(key),
        }
    }

    /// The keyed P-array (18 round keys), for code that runs the rounds elsewhere (the GPU
    /// kernels). Callers that copy it should wipe their copy.
    pub fn p_array(&self) -> &[u32; 18] {
        &self.schedule.p
    }

    /// The four keyed S-boxes, for the same callers as [`Blowfish::p_array`].
    pub fn sboxes(&self) -> &[[u32; 256]; 4] {
        &self.schedule.s
    }
}

/// Schneier's key schedule: XOR the key cyclically into P, then replace P and the S-boxes,
/// two words at a time, by encryptions of the running block, starting from the zero block.
fn key_schedule(key: &[u8]) -> Box<KeySchedule> {
    // Boxed before keying so that the keyed state is only ever written on the heap.
    let mut schedule = Box::new(KeySchedule {
        p: pi_tables::INITIAL_P,
        s: pi_tables::INITIAL_S,
    });
    if !key.is_empty() {
        let mut key_bytes = key.iter().cycle();
        for word in schedule.p.iter_mut() {
            let mut key_word = 0u32;
            for _ in 0..4 {
                key_word = (key_word << 8) | u32::from(*key_bytes.next().unwrap_or(&0));
            }
            *word ^= key_word;
            key_word.zeroize();
        }
    }

    let mut left = [0u32; 1];
    let mut right = [0u32; 1];
    for index in (0..18).step_by(2) {
        // encrypt_lanes hands the output halves back swapped; swapping the arrays restores
        // the block so that it is both the stored pair and the next input.
        schedule.encrypt_lanes(&mut left, &mut right);
        core::mem::swap(&mut left, &mut right);
        schedule.p[index] = left[0];
        schedule.p[index + 1] = right[0];
    }
    for sbox in 0..4 {
        for index in (0..256).step_by(2) {
            schedule.encrypt_lanes(&mut left, &mut right);
            core::mem::swap(&mut left, &mut right);
            schedule.s[sbox][index] = left[0];
            schedule.s[sbox][index + 1] = right[0];
        }
    }
    // The last block is the final S-box pair, but the intermediate values are key material
    // too.
    left.zeroize();
    right.zeroize();
    schedule
}

impl KeySchedule {
    /// Blowfish's round function: `((S0[a] + S1[b]) ^ S2[c]) + S3[d]` over the bytes of `x`,
    /// most significant first.
    #[inline(always)]
    fn round_function(&self, x: u32) -> u32 {
        let a = self.s[0][(x >> 24) as usize];
        let b = self.s[1][(x >> 16) as u8 as usize];
        let c = self.s[2][(x >> 8) as u8 as usize];
        let d = self.s[3][x as u8 as usize];
        (a.wrapping_add(b) ^ c).wrapping_add(d)
    }

    /// Encrypts `N` blocks given as their left and right words; on return `left` holds the
    /// output's right word and `right` its left word, so callers store them swapped.
    ///
    /// The 16 rounds are written as 8 double rounds that XOR the next round key into the
    /// half being updated, which removes the swap of halves after every round.
    #[inline(always)]
    fn encrypt_lanes<const N: usize>(&self, left: &mut [u32; N], right: &mut [u32; N]) {
        for word in left.iter_mut() {
            *word ^= self.p[0];
        }
        for round in (1..16).step_by(2) {
            for (word, &other) in right.iter_mut().zip(left.iter()) {
                *word ^= self.round_function(other) ^ self.p[round];
            }
            for (word, &other) in left.iter_mut().zip(right.iter()) {
                *word ^= self.round_function(other) ^ self.p[round + 1];
            }
        }
        for word in right.iter_mut() {
            *word ^= self.p[17];
        }
    }

    /// The inverse of [`KeySchedule::encrypt_lanes`]: the same rounds with P reversed.
    #[inline(always)]
    fn decrypt_lanes<const N: usize>(&self, left: &mut [u32; N], right: &mut [u32; N]) {
        for word in left.iter_mut() {
            *word ^= self.p[17];
        }
        for round in (2..=16).rev().step_by(2) {
            for (word, &other) in right.iter_mut().zip(left.iter()) {
                *word ^= self.round_function(other) ^ self.p[round];
            }
            for (word, &other) in left.iter_mut().zip(right.iter()) {
                *word ^= self.round_function(other) ^ self.p[round - 1];
            }
        }
        for word in right.iter_mut() {
            *word ^= self.p[0];
        }
    }

    /// Loads `N` blocks, runs `rounds` over them and stores them back with the halves
    /// swapped, as the last round of Blowfish leaves them.
    #[inline(always)]
    fn process_group<const N: usize>(
        &self,
        group: &mut [[u8; BLOCK_SIZE]; N],
        rounds: impl Fn(&Self, &mut [u32; N], &mut [u32; N]),
    ) {
        let mut left = [0u32; N];
        let mut right = [0u32; N];
        for (lane, block) in group.iter().enumerate() {
            let [b0, b1, b2, b3, b4, b5, b6, b7] = *block;
            left[lane] = u32::from_be_bytes([b0, b1, b2, b3]);
            right[lane] = u32::from_be_bytes([b4, b5, b6, b7]);
        }
        rounds(self, &mut left, &mut right);
        for (lane, block) in group.iter_mut().enumerate() {
            block[..4].copy_from_slice(&right[lane].to_be_bytes());
            block[4..].copy_from_slice(&left[lane].to_be_bytes());
        }
    }

    /// Runs `N`-lane groups over the whole batch, then single blocks over the rest.
    #[inline(always)]
    fn process_blocks(
        &self,
        data: &mut [u8],
        group_rounds: impl Fn(&Self, &mut [u32; LANES], &mut [u32; LANES]),
        single_rounds: impl Fn(&Self, &mut [u32; 1], &mut [u32; 1]),
    ) {
        let (blocks, partial) = data.as_chunks_mut::<BLOCK_SIZE>();
        assert!(
            partial.is_empty(),
            "Blowfish input of {} bytes is not a whole number of {BLOCK_SIZE}-byte blocks",
            data.len()
        );
        let (groups, tail) = blocks.as_chunks_mut::<LANES>();
        for group in groups {
            self.process_group(group, &group_rounds);
        }
        for block in tail {
            self.process_group(core::array::from_mut(block), &single_rounds);
        }
    }
}

impl BlockCipher for Blowfish {
    fn block_size(&self) -> usize {
        BLOCK_SIZE
    }

    fn encrypt_blocks(&self, blocks: &mut [u8]) {
        self.schedule.process_blocks(
            blocks,
            KeySchedule::encrypt_lanes::<LANES>,
            KeySchedule::encrypt_lanes::<1>,
        );
    }

    fn decrypt_blocks(&self, blocks: &mut [u8]) {
        self.schedule.process_blocks(
            blocks,
            KeySchedule::decrypt_lanes::<LANES>,
            KeySchedule::decrypt_lanes::<1>,
        );
    }

    /// CBC encryption is one block after another; doing the chain here keeps each block a
    /// direct call of the single-lane rounds instead of a trip through the batch API.
    fn cbc_encrypt(&self, chain: &mut [u8], data: &mut [u8]) -> bool {
        let (blocks, partial) = data.as_chunks_mut::<BLOCK_SIZE>();
        assert!(
            partial.is_empty(),
            "Blowfish CBC input is not a whole number of blocks"
        );
        crate::cbc_encrypt_one_by_one(chain, blocks, |block| {
            self.schedule.process_group(
                core::array::from_mut(block),
                KeySchedule::encrypt_lanes::<1>,
            );
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::{
        assert_batch_agrees_with_single_blocks, assert_round_trips_random_data, block_vectors,
        random_bytes,
    };
    use cipher::{BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};
    use rand::RngExt;

    /// Block counts that exercise the tail alone, whole groups, and groups plus every tail
    /// length.
    const BLOCK_COUNTS: [usize; 11] = [0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 100];

    #[test]
    fn vector_file_has_every_published_vector() {
        let vectors = block_vectors("blowfish.txt");
        let count = |name: &str| {
            vectors
                .iter()
                .filter(|vector| vector.section == name)
                .count()
        };
        assert_eq!(count("ecb-variable-key"), 34);
        assert_eq!(count("set-key"), 24);
        assert_eq!(vectors.len(), 58);
        for vector in &vectors {
            assert_eq!(vector.plaintext.len(), BLOCK_SIZE, "{vector:?}");
            assert_eq!(vector.ciphertext.len(), BLOCK_SIZE, "{vector:?}");
        }
    }

    #[test]
    fn published_vectors_encrypt_and_decrypt() {
        let mut checked = 0;
        for vector in block_vectors("blowfish.txt") {
            // Keys under 4 bytes are outside Blowfish's range; only the key schedule runs them.
            let cipher = Blowfish {
                schedule: key_schedule(&vector.key),
            };
            let mut block = vector.plaintext.clone();
            cipher.encrypt_blocks(&mut block);
            assert_eq!(block, vector.ciphertext, "encrypting {vector:?}");
            cipher.decrypt_blocks(&mut block);
            assert_eq!(block, vector.plaintext, "decrypting {vector:?}");

            // The same vector in every lane of a full group and in the tail.
            let mut batch = vector.plaintext.repeat(LANES + 3);
            cipher.encrypt_blocks(&mut batch);
            assert_eq!(
                batch,
                vector.ciphertext.repeat(LANES + 3),
                "batch {vector:?}"
            );
            cipher.decrypt_blocks(&mut batch);
            assert_eq!(
                batch,
                vector.plaintext.repeat(LANES + 3),
                "batch {vector:?}"
            );
            checked += 1;
        }
        assert_eq!(checked, 58);
    }

    #[test]
    fn public_constructor_matches_vectors_in_accepted_range() {
        for vector in block_vectors("blowfish.txt")
            .iter()
            .filter(|vector| vector.key.len() >= 4)
        {
            let cipher = Blowfish::new(&vector.key);
            let mut block = vector.plaintext.clone();
            cipher.encrypt_blocks(&mut block);
            assert_eq!(block, vector.ciphertext, "{vector:?}");
        }
    }

    #[test]
    fn batch_agrees_with_single_blocks() {
        let cipher = Blowfish::new(&random_bytes(16));
        assert_batch_agrees_with_single_blocks(&cipher, &BLOCK_COUNTS, "Blowfish");
    }

    #[test]
    fn matches_rustcrypto_blowfish() {
        for key_length in 4..=56 {
            for _ in 0..4 {
                let key = random_bytes(key_length);
                let ours = Blowfish::new(&key);
                let theirs: blowfish::Blowfish =
                    blowfish::Blowfish::new_from_slice(&key).expect("key length 4..=56");
                for count in BLOCK_COUNTS {
                    let plaintext = random_bytes(count * BLOCK_SIZE);

                    let mut our_ciphertext = plaintext.clone();
                    ours.encrypt_blocks(&mut our_ciphertext);
                    let mut their_ciphertext = plaintext.clone();
                    let (blocks, rest) = cipher::Block::<blowfish::Blowfish>::slice_as_chunks_mut(
                        &mut their_ciphertext,
                    );
                    assert!(rest.is_empty());
                    theirs.encrypt_blocks(blocks);
                    assert_eq!(
                        our_ciphertext, their_ciphertext,
                        "key {key:02x?}, {count} blocks"
                    );

                    let mut decrypted = our_ciphertext.clone();
                    ours.decrypt_blocks(&mut decrypted);
                    assert_eq!(decrypted, plaintext);
                    let (blocks, _) = cipher::Block::<blowfish::Blowfish>::slice_as_chunks_mut(
                        &mut our_ciphertext,
                    );
                    theirs.decrypt_blocks(blocks);
                    assert_eq!(our_ciphertext, plaintext);
                }
            }
        }
    }

    #[test]
    fn round_trips_random_data() {
        assert_round_trips_random_data(Blowfish::new, || rand::rng().random_range(4..=56));
    }

    #[test]
    fn different_keys_give_different_ciphertexts() {
        let plaintext = random_bytes(8 * BLOCK_SIZE);
        let key = random_bytes(16);
        let mut other_key = key.clone();
        other_key[15] ^= 1;
        let mut first = plaintext.clone();
        Blowfish::new(&key).encrypt_blocks(&mut first);
        let mut second = plaintext.clone();
        Blowfish::new(&other_key).encrypt_blocks(&mut second);
        assert_ne!(first, second);
    }

    #[test]
    #[should_panic(expected = "not a whole number")]
    fn partial_block_panics() {
        Blowfish::new(b"some key").encrypt_blocks(&mut [0u8; 12]);
    }

    #[test]
    fn schedule_is_wiped_by_zeroize() {
        let mut schedule = key_schedule(b"wipe me please");
        assert_ne!(schedule.p, [0; 18]);
        schedule.zeroize();
        assert_eq!(schedule.p, [0; 18]);
        assert!(schedule.s.iter().flatten().all(|&word| word == 0));
    }

    /// Fixed-point arithmetic on big-endian base-2^32 limbs: limb 0 is the integer part,
    /// the rest the fraction. Just enough to compute pi with Machin's formula.
    mod fixed_point {
        pub fn divide(number: &mut [u32], divisor: u32) {
            let mut remainder = 0u64;
            for limb in number.iter_mut() {
                let current = (remainder << 32) | u64::from(*limb);
                *limb = (current / u64::from(divisor)) as u32;
                remainder = current % u64::from(divisor);
            }
        }

        pub fn multiply(number: &mut [u32], factor: u32) {
            let mut carry = 0u64;
            for limb in number.iter_mut().rev() {
                let current = u64::from(*limb) * u64::from(factor) + carry;
                *limb = current as u32;
                carry = current >> 32;
            }
        }

        pub fn add(number: &mut [u32], other: &[u32]) {
            let mut carry = 0u64;
            for (limb, addend) in number.iter_mut().zip(other).rev() {
                let sum = u64::from(*limb) + u64::from(*addend) + carry;
                *limb = sum as u32;
                carry = sum >> 32;
            }
        }

        pub fn subtract(number: &mut [u32], other: &[u32]) {
            let mut borrow = 0i64;
            for (limb, subtrahend) in number.iter_mut().zip(other).rev() {
                let difference = i64::from(*limb) - i64::from(*subtrahend) - borrow;
                *limb = difference as u32;
                borrow = i64::from(difference < 0);
            }
        }

        /// arctan(1/m) = sum over k of (-1)^k / ((2k+1) m^(2k+1)).
        pub fn arctan_of_inverse(m: u32, limbs: usize) -> Vec<u32> {
            let mut power = vec![0u32; limbs];
            power[0] = 1;
            divide(&mut power, m);
            let mut sum = power.clone();
            let mut term = vec![0u32; limbs];
            for k in 1u32.. {
                divide(&mut power, m * m);
                if power.iter().all(|&limb| limb == 0) {
                    break;
                }
                term.copy_from_slice(&power);
                divide(&mut term, 2 * k + 1);
                if k % 2 == 1 {
                    subtract(&mut sum, &term);
                } else {
                    add(&mut sum, &term);
                }
            }
            sum
        }
    }

    /// Recomputes the tables independently of the generator that wrote them:
    /// pi = 16 arctan(1/5) - 4 arctan(1/239).
    #[test]
    fn initial_tables_are_pi() {
        let words = 18 + 4 * 256;
        // Guard limbs absorb the rounding of some 7000 truncated divisions.
        let limbs = 1 + words + 3;
        let mut pi = fixed_point::arctan_of_inverse(5, limbs);
        fixed_point::multiply(&mut pi, 16);
        let mut correction = fixed_point::arctan_of_inverse(239, limbs);
        fixed_point::multiply(&mut correction, 4);
        fixed_point::subtract(&mut pi, &correction);

        assert_eq!(pi[0], 3);
        let tables: Vec<u32> = pi_tables::INITIAL_P
            .iter()
            .chain(pi_tables::INITIAL_S.iter().flatten())
            .copied()
            .collect();
        assert_eq!(tables.len(), words);
        for (index, (table, computed)) in tables.iter().zip(&pi[1..=words]).enumerate() {
            assert_eq!(table, computed, "word {index} of pi's fraction");
        }
    }
}
