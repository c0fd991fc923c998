//! RC6-32/20/b (Rivest, Robshaw, Sidney, Yin 1998): 128-bit blocks of four little-endian
//! 32-bit words, 20 rounds, keys of 16, 24 or 32 bytes (the key schedule handles any
//! b in 0..=255, as the paper defines it).
//!
//! A round is a chain of a multiply, two rotations and an addition per half, so one block at
//! a time leaves the core mostly waiting. The portable path runs `LANES` blocks side by
//! side; on x86-64 the batch path uses AVX-512 (16 blocks per vector, native variable rotate)
//! or AVX2 (8 blocks per vector), chosen once at construction by run-time detection.

/// Generates the rounds of RC6 on `G` lanes of `$word` from the lane-wise operations in
/// scope (`add`, `sub`, `xor`, `rotate_left`, `rotate_right`, `quadratic` and `splat`, which
/// puts a round-key word in every lane), each function with `$attribute`s: `round` and its
/// inverse, `whiten` (the key additions before and after the rounds) and `cipher_words`, the
/// whole cipher on the words A, B, C, D. The portable code (a lane is a `u32`) and every SIMD
/// backend (a lane is one word of each block of a vector) expand it.
macro_rules! rounds {
    (word: $word:ty, attributes: [$(#[$attribute:meta])*] $(,)?) => {
        /// One encryption round on `G` lanes (with `DECRYPT`, its inverse, after the word
        /// rotation has been undone), before the rotation (A, B, C, D) = (B, C, D, A):
        /// callers rotate by passing the arrays in a different order each round.
        $(#[$attribute])*
        fn round<const G: usize, const DECRYPT: bool>(
            a: &mut [$word; G],
            b: &[$word; G],
            c: &mut [$word; G],
            d: &[$word; G],
            round_keys: &[u32],
        ) {
            let key_a = splat(round_keys[0]);
            let key_c = splat(round_keys[1]);
            for index in 0..G {
                let t = quadratic(b[index]);
                let u = quadratic(d[index]);
                if DECRYPT {
                    c[index] = xor(rotate_right(sub(c[index], key_c), t), u);
                    a[index] = xor(rotate_right(sub(a[index], key_a), u), t);
                } else {
                    a[index] = add(rotate_left(xor(a[index], t), u), key_a);
                    c[index] = add(rotate_left(xor(c[index], u), t), key_c);
                }
            }
        }

        /// Adds (with `DECRYPT`, subtracts) `key_x` to every lane of `x` and `key_y` to every
        /// lane of `y`.
        $(#[$attribute])*
        fn whiten<const G: usize, const DECRYPT: bool>(
            x: &mut [$word; G],
            y: &mut [$word; G],
            key_x: u32,
            key_y: u32,
        ) {
            let (key_x, key_y) = (splat(key_x), splat(key_y));
            for index in 0..G {
                if DECRYPT {
                    x[index] = sub(x[index], key_x);
                    y[index] = sub(y[index], key_y);
                } else {
                    x[index] = add(x[index], key_x);
                    y[index] = add(y[index], key_y);
                }
            }
        }

        /// Encrypts (with `DECRYPT`, decrypts) the words A, B, C, D of `G` lanes. Four rounds
        /// per iteration bring the word rotation back to the start, so the rotation costs
        /// nothing: each round just names the arrays in its own order.
        $(#[$attribute])*
        fn cipher_words<const G: usize, const DECRYPT: bool>(
            round_keys: &RoundKeys,
            [mut a, mut b, mut c, mut d]: [[$word; G]; 4],
        ) -> [[$word; G]; 4] {
            let rounds = round_keys[2..2 + 2 * ROUNDS].chunks_exact(8);
            let [last_a, last_c] = [round_keys[2 * ROUNDS + 2], round_keys[2 * ROUNDS + 3]];
            if DECRYPT {
                whiten::<G, true>(&mut c, &mut a, last_c, last_a);
                for keys in rounds.rev() {
                    round::<G, true>(&mut d, &a, &mut b, &c, &keys[6..8]);
                    round::<G, true>(&mut c, &d, &mut a, &b, &keys[4..6]);
                    round::<G, true>(&mut b, &c, &mut d, &a, &keys[2..4]);
                    round::<G, true>(&mut a, &b, &mut c, &d, &keys[0..2]);
                }
                whiten::<G, true>(&mut d, &mut b, round_keys[1], round_keys[0]);
            } else {
                whiten::<G, false>(&mut b, &mut d, round_keys[0], round_keys[1]);
                for keys in rounds {
                    round::<G, false>(&mut a, &b, &mut c, &d, &keys[0..2]);
                    round::<G, false>(&mut b, &c, &mut d, &a, &keys[2..4]);
                    round::<G, false>(&mut c, &d, &mut a, &b, &keys[4..6]);
                    round::<G, false>(&mut d, &a, &mut b, &c, &keys[6..8]);
                }
                whiten::<G, false>(&mut a, &mut c, last_a, last_c);
            }
            [a, b, c, d]
        }
    };
}

/// Generates a SIMD backend's `cipher_blocks` (encryption, or with `DECRYPT` decryption)
/// from the primitives of the module it is invoked in: `rotate_left`, `rotate_right` (unless
/// named among `$operation`s) and `quadratic`, all `#[target_feature(enable = $feature)]`.
/// `splat`, every lane-wise `$operation` (at least `add`, `sub` and `xor`) and the loads and
/// stores of whole groups are generated here from the named intrinsics, and the rounds by
/// [`rounds`], so that every ISA's code reads the same.
///
/// A vector holds one word (A, B, C or D) of `$blocks_per_vector` blocks; `$in_flight`
/// vectors of each word go through the rounds together so that the multiply latency of one
/// is hidden behind the others.
#[cfg(target_arch = "x86_64")]
macro_rules! simd_backend {
    (
        feature: $feature:literal,
        vector: $vector:ty,
        blocks_per_vector: $blocks_per_vector:literal,
        in_flight: $in_flight:literal,
        splat: $splat:path,
        operations: { $($operation:ident => $intrinsic:path),+ $(,)? },
        unpack: [$low_32:path, $high_32:path, $low_64:path, $high_64:path $(,)?],
        load: $load:path,
        store: $store:path $(,)?
    ) => {
        use super::{RoundKeys, BLOCK_SIZE, ROUNDS};

        // A group's blocks are exactly the four vectors `load_group` reads.
        const _: () = assert!(size_of::<Group>() == 4 * size_of::<$vector>());

        /// Transposes the 4x4 word matrix in each 128-bit lane: four vectors of whole blocks
        /// become the A, B, C and D words of those blocks, and back again (the transpose is
        /// its own inverse). Lane order ends up permuted, which is harmless because every
        /// lane goes through the same rounds and the store applies the same transpose.
        #[target_feature(enable = $feature)]
        #[inline]
        fn transpose([row0, row1, row2, row3]: [$vector; 4]) -> [$vector; 4] {
            let low01 = $low_32(row0, row1);
            let high01 = $high_32(row0, row1);
            let low23 = $low_32(row2, row3);
            let high23 = $high_32(row2, row3);
            [
                $low_64(low01, low23),
                $high_64(low01, low23),
                $low_64(high01, high23),
                $high_64(high01, high23),
            ]
        }

        #[target_feature(enable = $feature)]
        #[inline]
        fn load_group(group: &Group) -> [$vector; 4] {
            let pointer = group.as_ptr().cast::<$vector>();
            // SAFETY: `group` is borrowed for this call and is exactly the four vectors read
            // here (asserted above), all initialised; `loadu` has no alignment requirement.
            let rows = unsafe {
                [
                    $load(pointer.cast()),
                    $load(pointer.add(1).cast()),
                    $load(pointer.add(2).cast()),
                    $load(pointer.add(3).cast()),
                ]
            };
            transpose(rows)
        }

        #[target_feature(enable = $feature)]
        #[inline]
        fn store_group(group: &mut Group, words: [$vector; 4]) {
            let [row0, row1, row2, row3] = transpose(words);
            let pointer = group.as_mut_ptr().cast::<$vector>();
            // SAFETY: `group` is borrowed mutably and exclusively for this call and is
            // exactly the four vectors written here (asserted above); `storeu` has no
            // alignment requirement.
            unsafe {
                $store(pointer.cast(), row0);
                $store(pointer.add(1).cast(), row1);
                $store(pointer.add(2).cast(), row2);
                $store(pointer.add(3).cast(), row3);
            }
        }

        /// Every lane set to `value`.
        #[target_feature(enable = $feature)]
        #[inline]
        fn splat(value: u32) -> $vector {
            $splat(value as i32)
        }

        $(
            #[target_feature(enable = $feature)]
            #[inline]
            fn $operation(x: $vector, y: $vector) -> $vector {
                $intrinsic(x, y)
            }
        )+

        /// The blocks whose words fill one vector each.
        type Group = [[u8; BLOCK_SIZE]; $blocks_per_vector];

        /// Blocks per iteration of the main loop: batches of a multiple of this run at full
        /// speed.
        pub(super) const BLOCKS_PER_ITERATION: usize = $blocks_per_vector * $in_flight;

        /// Encrypts (with `DECRYPT`, decrypts) every whole group of `blocks` and returns the
        /// blocks that do not fill a vector, for the portable code.
        #[target_feature(enable = $feature)]
        pub(super) fn cipher_blocks<'a, const DECRYPT: bool>(
            round_keys: &RoundKeys,
            blocks: &'a mut [[u8; BLOCK_SIZE]],
        ) -> &'a mut [[u8; BLOCK_SIZE]] {
            let (groups, rest) = blocks.as_chunks_mut::<$blocks_per_vector>();
            let (batches, groups) = groups.as_chunks_mut::<$in_flight>();
            for batch in batches {
                cipher_groups::<_, DECRYPT>(round_keys, batch);
            }
            // Short batches (a mode's 64 blocks) end here: keep the groups left over in
            // flight together too, four, two, then one at a time.
            let (fours, groups) = groups.as_chunks_mut::<4>();
            for four in fours {
                cipher_groups::<_, DECRYPT>(round_keys, four);
            }
            let (twos, groups) = groups.as_chunks_mut::<2>();
            for two in twos {
                cipher_groups::<_, DECRYPT>(round_keys, two);
            }
            for group in groups {
                cipher_groups::<_, DECRYPT>(round_keys, core::array::from_mut(group));
            }
            rest
        }

        /// The vector twin of the portable `cipher_group`: encrypts (or with `DECRYPT`
        /// decrypts) `G` groups.
        #[target_feature(enable = $feature)]
        fn cipher_groups<const G: usize, const DECRYPT: bool>(
            round_keys: &RoundKeys,
            groups: &mut [Group; G],
        ) {
            let words = cipher_words::<G, DECRYPT>(round_keys, load_words(groups));
            store_words(groups, &words);
        }

        type Words<const G: usize> = [[$vector; G]; 4];

        #[target_feature(enable = $feature)]
        #[inline]
        fn load_words<const G: usize>(groups: &[Group; G]) -> Words<G> {
            let zero = splat(0);
            let mut words = [[zero; G]; 4];
            for (index, group) in groups.iter().enumerate() {
                let [a, b, c, d] = load_group(group);
                words[0][index] = a;
                words[1][index] = b;
                words[2][index] = c;
                words[3][index] = d;
            }
            words
        }

        #[target_feature(enable = $feature)]
        #[inline]
        fn store_words<const G: usize>(groups: &mut [Group; G], words: &Words<G>) {
            for (index, group) in groups.iter_mut().enumerate() {
                store_group(
                    group,
                    [
                        words[0][index],
                        words[1][index],
                        words[2][index],
                        words[3][index],
                    ],
                );
            }
        }

        rounds!(
            word: $vector,
            attributes: [#[target_feature(enable = $feature)] #[inline]]
        );
    };
}

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::{BlockCipher, KernelFamily};

/// Bytes per block.
const BLOCK_SIZE: usize = 16;

/// Number of rounds, r.
const ROUNDS: usize = 20;

/// Round-key words, 2r + 4.
const ROUND_KEY_WORDS: usize = 2 * ROUNDS + 4;

/// The expanded key S[0..2r+4].
type RoundKeys = [u32; ROUND_KEY_WORDS];

/// The magic constants P32 = Odd((e - 2) 2^32) and Q32 = Odd((phi - 1) 2^32).
const P32: u32 = 0xB7E1_5163;
const Q32: u32 = 0x9E37_79B9;

/// Blocks in flight per iteration of the portable loop. Four blocks' sixteen words nearly
/// fill the general-purpose registers; on a Zen 5 core 2, 4 and 8 lanes ran at 0.83, 0.99
/// and 0.96 GB/s.
const LANES: usize = 4;

/// RC6-32/20/b.
///
/// The round keys live on the heap so that moving an `Rc6` never leaves a copy of them
/// behind; they are wiped when the value is dropped.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct Rc6 {
    round_keys: Box<RoundKeys>,
    #[zeroize(skip)]
    backend: Backend,
    /// What `backend` was chosen under, for [`BlockCipher::kernel_ceiling`].
    #[zeroize(skip)]
    ceiling: Option<KernelFamily>,
}

/// Which batch code runs, fixed at construction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Portable,
    /// Only constructed after `is_x86_feature_detected!("avx2")` said yes.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// Only constructed after `is_x86_feature_detected!("avx512f")` said yes.
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Backend {
    /// The fastest backend this CPU supports.
    #[cfg(test)]
    fn detect() -> Self {
        Self::detect_within(None)
    }

    /// The fastest backend this CPU supports whose [`KernelFamily`] is at most `ceiling`
    /// (`None`: any). AVX2 counts as [`KernelFamily::AesNi`] (the families from AES-NI up
    /// may use it), AVX-512 as [`KernelFamily::Vaes512`].
    fn detect_within(ceiling: Option<KernelFamily>) -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if KernelFamily::Vaes512.within(ceiling)
                && std::arch::is_x86_feature_detected!("avx512f")
            {
                return Backend::Avx512;
            }
            if KernelFamily::AesNi.within(ceiling) && std::arch::is_x86_feature_detected!("avx2") {
                return Backend::Avx2;
            }
        }
        let _ = ceiling;
        Backend::Portable
    }

    /// Every backend this CPU supports, so that tests can compare them all.
    #[cfg(test)]
    fn supported() -> Vec<Self> {
        #[allow(unused_mut)]
        let mut backends = vec![Backend::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                backends.push(Backend::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                backends.push(Backend::Avx512);
            }
        }
        backends
    }
}

impl Rc6 {
    /// Expands `key` into the round keys.
    ///
    /// The caller ([`crate::new_cipher`]) has checked that the key is 16, 24 or 32 bytes; the
    /// key schedule follows the paper for any length and does not panic on others.
    pub fn new(key: &[u8]) -> Self {
        Self::with_ceiling(key, None)
    }

    /// [`Rc6::new`] with batch code of at most family `ceiling` (`None`: the fastest this
    /// CPU has).
    pub fn with_ceiling(key: &[u8], ceiling: Option<KernelFamily>) -> Self {
        let mut cipher = Self::with_backend(key, Backend::detect_within(ceiling));
        cipher.ceiling = ceiling;
        cipher
    }

    /// The expanded key S[0..2r+4], for code that runs the rounds elsewhere (the GPU
    /// kernels). Callers that copy it should wipe their copy.
    pub fn round_keys(&self) -> &[u32; ROUND_KEY_WORDS] {
        &self.round_keys
    }

    /// Encrypts (with `DECRYPT`, decrypts) `blocks` with the backend, the blocks that do
    /// not fill its vectors with the portable code.
    fn cipher_blocks<const DECRYPT: bool>(&self, blocks: &mut [u8]) {
        let blocks = whole_blocks(blocks);
        let rest = match self.backend {
            Backend::Portable => blocks,
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Backend::Avx512` is only chosen after `is_x86_feature_detected!`
            // confirmed AVX-512F on this CPU (see `Backend::detect` and `Backend::supported`).
            Backend::Avx512 => unsafe {
                avx512::cipher_blocks::<DECRYPT>(&self.round_keys, blocks)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Backend::Avx2` is only chosen after `is_x86_feature_detected!`
            // confirmed AVX2 on this CPU.
            Backend::Avx2 => unsafe { avx2::cipher_blocks::<DECRYPT>(&self.round_keys, blocks) },
        };
        cipher_portable::<DECRYPT>(&self.round_keys, rest);
    }

    fn with_backend(key: &[u8], backend: Backend) -> Self {
        Rc6 {
            round_keys: key_schedule(key),
            backend,
            ceiling: None,
        }
    }
}

/// The RC6 key schedule: load the key into c little-endian words L (zero-padded, c >= 1),
/// fill S from P32 in steps of Q32, then mix L into S over 3 max(c, 2r + 4) steps.
fn key_schedule(key: &[u8]) -> Box<RoundKeys> {
    let word_count = key.len().div_ceil(4).max(1);
    let mut key_words = Zeroizing::new(vec![0u32; word_count]);
    for (index, &byte) in key.iter().enumerate() {
        key_words[index / 4] |= u32::from(byte) << (8 * (index % 4));
    }

    // Boxed before keying so that the keyed state is only ever written on the heap.
    let mut round_keys = Box::new([0u32; ROUND_KEY_WORDS]);
    round_keys[0] = P32;
    for index in 1..ROUND_KEY_WORDS {
        round_keys[index] = round_keys[index - 1].wrapping_add(Q32);
    }

    let mut a = 0u32;
    let mut b = 0u32;
    let mut sum = 0u32;
    let mut i = 0;
    let mut j = 0;
    for _ in 0..3 * word_count.max(ROUND_KEY_WORDS) {
        a = round_keys[i].wrapping_add(a).wrapping_add(b).rotate_left(3);
        round_keys[i] = a;
        sum = a.wrapping_add(b);
        b = key_words[j].wrapping_add(sum).rotate_left(sum);
        key_words[j] = b;
        i = (i + 1) % ROUND_KEY_WORDS;
        j = (j + 1) % word_count;
    }
    // `key_words` wipes itself on drop; these hold the last key-dependent values.
    a.zeroize();
    b.zeroize();
    sum.zeroize();
    round_keys
}

/// RC6's quadratic function f(x) = x(2x + 1) mod 2^32, rotated left by lg w = 5.
#[inline(always)]
fn quadratic(x: u32) -> u32 {
    x.wrapping_mul(x.wrapping_mul(2).wrapping_add(1))
        .rotate_left(5)
}

/// The portable lane-wise operations of [`rounds`], a lane being one `u32` word of a block:
/// `name => method` defines `name(x, y)` as `x.method(y)`.
macro_rules! portable_operations {
    ($($name:ident => $method:path),+ $(,)?) => {
        $(
            #[inline(always)]
            fn $name(x: u32, y: u32) -> u32 {
                $method(x, y)
            }
        )+
    };
}

portable_operations! {
    add => u32::wrapping_add,
    sub => u32::wrapping_sub,
    xor => core::ops::BitXor::bitxor,
    rotate_left => u32::rotate_left,
    rotate_right => u32::rotate_right,
}

/// A round-key word in the one lane of a portable word.
#[inline(always)]
fn splat(word: u32) -> u32 {
    word
}

rounds!(word: u32, attributes: [#[inline(always)]]);

/// The four words A, B, C, D of `N` blocks.
type Words<const N: usize> = [[u32; N]; 4];

#[inline(always)]
fn load<const N: usize>(group: &[[u8; BLOCK_SIZE]; N]) -> Words<N> {
    let mut words = [[0u32; N]; 4];
    for (lane, block) in group.iter().enumerate() {
        let (quads, _) = block.as_chunks::<4>();
        for (word, quad) in words.iter_mut().zip(quads) {
            word[lane] = u32::from_le_bytes(*quad);
        }
    }
    words
}

#[inline(always)]
fn store<const N: usize>(group: &mut [[u8; BLOCK_SIZE]; N], words: &Words<N>) {
    for (lane, block) in group.iter_mut().enumerate() {
        let (quads, _) = block.as_chunks_mut::<4>();
        for (word, quad) in words.iter().zip(quads) {
            *quad = word[lane].to_le_bytes();
        }
    }
}

/// Encrypts (with `DECRYPT`, decrypts) `N` blocks in place with the portable code.
#[inline(always)]
fn cipher_group<const N: usize, const DECRYPT: bool>(
    round_keys: &RoundKeys,
    group: &mut [[u8; BLOCK_SIZE]; N],
) {
    let words = cipher_words::<N, DECRYPT>(round_keys, load(group));
    store(group, &words);
}

/// Splits `data` into blocks; a partial block is a bug in the caller.
fn whole_blocks(data: &mut [u8]) -> &mut [[u8; BLOCK_SIZE]] {
    let length = data.len();
    let (blocks, partial) = data.as_chunks_mut::<BLOCK_SIZE>();
    assert!(
        partial.is_empty(),
        "RC6 input of {length} bytes is not a whole number of {BLOCK_SIZE}-byte blocks"
    );
    blocks
}

/// Encrypts (with `DECRYPT`, decrypts) `blocks` with the portable code.
fn cipher_portable<const DECRYPT: bool>(round_keys: &RoundKeys, blocks: &mut [[u8; BLOCK_SIZE]]) {
    let (groups, tail) = blocks.as_chunks_mut::<LANES>();
    for group in groups {
        cipher_group::<LANES, DECRYPT>(round_keys, group);
    }
    for block in tail {
        cipher_group::<1, DECRYPT>(round_keys, core::array::from_mut(block));
    }
}

impl BlockCipher for Rc6 {
    fn block_size(&self) -> usize {
        BLOCK_SIZE
    }

    /// A whole number of the backend's main-loop iterations, at least the usual 64 blocks.
    fn preferred_batch(&self) -> usize {
        let iteration = match self.backend {
            Backend::Portable => LANES,
            #[cfg(target_arch = "x86_64")]
            Backend::Avx2 => avx2::BLOCKS_PER_ITERATION,
            #[cfg(target_arch = "x86_64")]
            Backend::Avx512 => avx512::BLOCKS_PER_ITERATION,
        };
        64usize.div_ceil(iteration) * iteration
    }

    fn encrypt_blocks(&self, blocks: &mut [u8]) {
        self.cipher_blocks::<false>(blocks);
    }

    fn kernel_ceiling(&self) -> Option<KernelFamily> {
        self.ceiling
    }

    fn decrypt_blocks(&self, blocks: &mut [u8]) {
        self.cipher_blocks::<true>(blocks);
    }

    /// CBC encryption is one block after another; doing the chain here keeps each block a
    /// direct call of the portable rounds instead of a trip through the batch API.
    fn cbc_encrypt(&self, chain: &mut [u8], data: &mut [u8]) -> bool {
        crate::cbc_encrypt_one_by_one(chain, whole_blocks(data), |block| {
            cipher_group::<1, false>(&self.round_keys, core::array::from_mut(block));
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
    use cipher::consts::{U16, U20, U24, U32};
    use cipher::{BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};
    use rand::RngExt;

    /// Block counts that exercise the portable tail alone, whole portable groups, whole and
    /// partial AVX2 and AVX-512 groups, and every tail after them.
    const BLOCK_COUNTS: [usize; 23] = [
        0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 223, 300, 511, 1000,
    ];

    #[test]
    fn vector_file_has_every_published_vector() {
        let vectors = block_vectors("rc6.txt");
        for (section, key_length) in [("rc6-128", 16), ("rc6-192", 24), ("rc6-256", 32)] {
            let in_section: Vec<_> = vectors.iter().filter(|v| v.section == section).collect();
            assert_eq!(in_section.len(), 2, "{section}");
            for vector in in_section {
                assert_eq!(vector.key.len(), key_length, "{vector:?}");
                assert_eq!(vector.plaintext.len(), BLOCK_SIZE, "{vector:?}");
                assert_eq!(vector.ciphertext.len(), BLOCK_SIZE, "{vector:?}");
            }
        }
        assert_eq!(vectors.len(), 6);
    }

    #[test]
    fn published_vectors_encrypt_and_decrypt_on_every_backend() {
        for backend in Backend::supported() {
            for vector in block_vectors("rc6.txt") {
                let cipher = Rc6::with_backend(&vector.key, backend);
                let mut block = vector.plaintext.clone();
                cipher.encrypt_blocks(&mut block);
                assert_eq!(
                    block, vector.ciphertext,
                    "{backend:?} encrypting {vector:?}"
                );
                cipher.decrypt_blocks(&mut block);
                assert_eq!(block, vector.plaintext, "{backend:?} decrypting {vector:?}");

                // The same vector in every lane of the widest group and in the tails.
                let copies = 64 + 16 + 8 + 4 + 3;
                let mut batch = vector.plaintext.repeat(copies);
                cipher.encrypt_blocks(&mut batch);
                assert_eq!(
                    batch,
                    vector.ciphertext.repeat(copies),
                    "{backend:?} {vector:?}"
                );
                cipher.decrypt_blocks(&mut batch);
                assert_eq!(
                    batch,
                    vector.plaintext.repeat(copies),
                    "{backend:?} {vector:?}"
                );
            }
        }
    }

    #[test]
    fn preferred_batch_is_whole_iterations_of_at_least_64_blocks() {
        for backend in Backend::supported() {
            let batch = Rc6::with_backend(&[1; 16], backend).preferred_batch();
            let iteration = match backend {
                Backend::Portable => LANES,
                #[cfg(target_arch = "x86_64")]
                Backend::Avx2 => 64,
                #[cfg(target_arch = "x86_64")]
                Backend::Avx512 => 96,
            };
            assert!(
                batch >= 64 && batch.is_multiple_of(iteration),
                "{backend:?}: {batch}"
            );
        }
    }

    #[test]
    fn detected_backend_is_the_widest_supported() {
        assert_eq!(Some(&Backend::detect()), Backend::supported().last());
    }

    #[test]
    fn batch_agrees_with_single_blocks_on_every_backend() {
        let key = random_bytes(16);
        for backend in Backend::supported() {
            let cipher = Rc6::with_backend(&key, backend);
            assert_batch_agrees_with_single_blocks(
                &cipher,
                &BLOCK_COUNTS,
                format_args!("{backend:?}"),
            );
        }
    }

    /// Encrypts and decrypts `data` with a RustCrypto RC6 cipher.
    fn rustcrypto_encrypt<C: BlockCipherEncrypt>(cipher: &C, data: &mut [u8]) {
        let (blocks, rest) = cipher::Block::<C>::slice_as_chunks_mut(data);
        assert!(rest.is_empty());
        cipher.encrypt_blocks(blocks);
    }

    fn rustcrypto_decrypt<C: BlockCipherDecrypt>(cipher: &C, data: &mut [u8]) {
        let (blocks, rest) = cipher::Block::<C>::slice_as_chunks_mut(data);
        assert!(rest.is_empty());
        cipher.decrypt_blocks(blocks);
    }

    fn compare_with<C: BlockCipherEncrypt + BlockCipherDecrypt + KeyInit>(key_length: usize) {
        for _ in 0..8 {
            let key = random_bytes(key_length);
            let theirs = C::new_from_slice(&key).expect("key length matches the type");
            for backend in Backend::supported() {
                let ours = Rc6::with_backend(&key, backend);
                for count in BLOCK_COUNTS {
                    let plaintext = random_bytes(count * BLOCK_SIZE);
                    let mut our_ciphertext = plaintext.clone();
                    ours.encrypt_blocks(&mut our_ciphertext);
                    let mut their_ciphertext = plaintext.clone();
                    rustcrypto_encrypt(&theirs, &mut their_ciphertext);
                    assert_eq!(
                        our_ciphertext, their_ciphertext,
                        "{backend:?}, key {key:02x?}, {count} blocks"
                    );

                    let mut decrypted = our_ciphertext.clone();
                    ours.decrypt_blocks(&mut decrypted);
                    assert_eq!(decrypted, plaintext, "{backend:?}, {count} blocks");
                    rustcrypto_decrypt(&theirs, &mut our_ciphertext);
                    assert_eq!(our_ciphertext, plaintext, "{backend:?}, {count} blocks");
                }
            }
        }
    }

    #[test]
    fn matches_rustcrypto_rc6_128() {
        compare_with::<rc6::RC6<u32, U20, U16>>(16);
    }

    #[test]
    fn matches_rustcrypto_rc6_192() {
        compare_with::<rc6::RC6<u32, U20, U24>>(24);
    }

    #[test]
    fn matches_rustcrypto_rc6_256() {
        compare_with::<rc6::RC6<u32, U20, U32>>(32);
    }

    /// Key lengths outside 16/24/32 against RustCrypto, which instantiates any b by type.
    #[test]
    fn key_schedule_matches_rustcrypto_for_other_lengths() {
        use cipher::consts::{U1, U255, U4, U5, U7};
        fn check<C: BlockCipherEncrypt + KeyInit>(key_length: usize) {
            let key = random_bytes(key_length);
            let theirs = C::new_from_slice(&key).expect("key length matches the type");
            let ours = Rc6::with_backend(&key, Backend::Portable);
            let plaintext = random_bytes(4 * BLOCK_SIZE);
            let mut our_ciphertext = plaintext.clone();
            ours.encrypt_blocks(&mut our_ciphertext);
            let mut their_ciphertext = plaintext;
            rustcrypto_encrypt(&theirs, &mut their_ciphertext);
            assert_eq!(
                our_ciphertext, their_ciphertext,
                "key of {key_length} bytes"
            );
        }
        check::<rc6::RC6<u32, U20, U1>>(1);
        check::<rc6::RC6<u32, U20, U5>>(5);
        check::<rc6::RC6<u32, U20, U7>>(7);
        check::<rc6::RC6<u32, U20, U255>>(255);

        // The paper sets c = 1 and L[0] = 0 for an empty key, which is the schedule of four
        // zero bytes; RustCrypto indexes an empty L, so compare against that key instead.
        let ours = Rc6::with_backend(&[], Backend::Portable);
        let theirs = rc6::RC6::<u32, U20, U4>::new_from_slice(&[0; 4]).expect("4-byte key");
        let plaintext = random_bytes(4 * BLOCK_SIZE);
        let mut our_ciphertext = plaintext.clone();
        ours.encrypt_blocks(&mut our_ciphertext);
        let mut their_ciphertext = plaintext;
        rustcrypto_encrypt(&theirs, &mut their_ciphertext);
        assert_eq!(our_ciphertext, their_ciphertext, "empty key");
    }

    #[test]
    fn round_trips_random_data() {
        assert_round_trips_random_data(Rc6::new, || [16, 24, 32][rand::rng().random_range(0..3)]);
    }

    /// Single-core encryption rate of every backend; run with
    /// `cargo test --release -p parcrypt-ciphers backend_throughput -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing, not a correctness check"]
    fn backend_throughput() {
        let mut buffer = random_bytes(8 << 20);
        for backend in Backend::supported() {
            let cipher = Rc6::with_backend(&random_bytes(16), backend);
            let batch_bytes = cipher.preferred_batch() * BLOCK_SIZE;
            for (label, chunk_bytes) in [("one call", buffer.len()), ("batches", batch_bytes)] {
                cipher.encrypt_blocks(&mut buffer);
                let mut rates: Vec<f64> = (0..7)
                    .map(|_| {
                        let start = std::time::Instant::now();
                        for chunk in buffer.chunks_mut(chunk_bytes) {
                            cipher.encrypt_blocks(std::hint::black_box(chunk));
                        }
                        buffer.len() as f64 / start.elapsed().as_secs_f64() / 1e9
                    })
                    .collect();
                rates.sort_by(f64::total_cmp);
                println!("{backend:?} {label}: {:.3} GB/s", rates[3]);
            }
        }
    }

    #[test]
    #[should_panic(expected = "not a whole number")]
    fn partial_block_panics() {
        Rc6::new(&[7u8; 16]).encrypt_blocks(&mut [0u8; 20]);
    }

    #[test]
    fn round_keys_are_wiped_by_zeroize() {
        let mut cipher = Rc6::new(&random_bytes(16));
        assert!(cipher.round_keys.iter().any(|&word| word != 0));
        cipher.zeroize();
        assert!(cipher.round_keys.iter().all(|&word| word == 0));
    }
}
