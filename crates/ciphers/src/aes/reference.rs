//! Table-based AES (FIPS-197): the CPU twin of the GPU kernels.
//!
//! **Not constant time.** Every round looks tables up at indices that depend on the key and
//! the data. On a CPU those lookups go through the data cache, and which cache lines were
//! touched can be measured by other code on the same machine (cache-timing attacks such as
//! Bernstein 2005 and Osvik–Shamir–Tromer 2006 recover AES keys this way). That is why this
//! path is the *reference*, chosen only on request ([`crate::Implementation::Reference`]);
//! the default, [`super::FastAes`], uses the AES instructions of the processor, which have no
//! data-dependent memory accesses.
//!
//! The code is laid out the way the OpenCL C / CUDA kernels are, so that a kernel can be
//! checked against it line by line:
//!
//! * state and round keys are big-endian 32-bit column words (byte 0 of a column in the top
//!   eight bits), as in the classic `rijndael-alg-fst.c` layout the kernels follow;
//! * each full round is sixteen 32-bit lookups into four tables `Te0..Te3` (decryption:
//!   `Td0..Td3`), each table a byte rotation of the previous one, XORed with the round key;
//! * the final round, which has no MixColumns, looks bytes up in the S-box instead;
//! * the key schedule is expanded once, on the host, into a flat array of `u32` round keys
//!   (`4 * (rounds + 1)` words), which is what a kernel receives as its key argument;
//! * decryption is the *equivalent inverse cipher* (FIPS-197 section 5.3.5): the same round
//!   structure as encryption, with the round keys in reverse order and InvMixColumns applied
//!   to the inner ones, so that a kernel needs no separate InvMixColumns step.
//!
//! The tables are computed at compile time from the definition of the S-box (multiplicative
//! inverse in GF(2^8) followed by the affine map), not pasted in, so that a typo in a table
//! cannot exist.

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::BlockCipher;

const BLOCK_SIZE: usize = 16;

/// Round keys for AES-256, the largest schedule: 4 words for each of 14 rounds + 1.
const MAX_ROUND_KEY_WORDS: usize = 4 * (14 + 1);

// ---------------------------------------------------------------------------------------------
// GF(2^8) arithmetic and table construction, all evaluated at compile time.
// ---------------------------------------------------------------------------------------------

/// Multiplication by x in GF(2^8) modulo the AES polynomial x^8 + x^4 + x^3 + x + 1.
const fn xtime(value: u8) -> u8 {
    let reduction = if value & 0x80 != 0 { 0x1b } else { 0 };
    (value << 1) ^ reduction
}

const fn gf_multiply(mut left: u8, mut right: u8) -> u8 {
    let mut product = 0;
    while right != 0 {
        if right & 1 != 0 {
            product ^= left;
        }
        left = xtime(left);
        right >>= 1;
    }
    product
}

/// The multiplicative inverse, as value^254 (the group of non-zero elements has order 255).
/// Zero has no inverse; raising it to a power gives zero, which is what FIPS-197 maps it to.
const fn gf_inverse(value: u8) -> u8 {
    let mut result = 1;
    let mut base = value;
    let mut exponent = 254u32;
    while exponent != 0 {
        if exponent & 1 != 0 {
            result = gf_multiply(result, base);
        }
        base = gf_multiply(base, base);
        exponent >>= 1;
    }
    result
}

/// The S-box's affine map over GF(2), FIPS-197 equation (5.2) in its rotation form.
const fn affine_map(value: u8) -> u8 {
    value
        ^ value.rotate_left(1)
        ^ value.rotate_left(2)
        ^ value.rotate_left(3)
        ^ value.rotate_left(4)
        ^ 0x63
}

const fn build_sbox() -> [u8; 256] {
    let mut sbox = [0u8; 256];
    let mut index = 0;
    while index < 256 {
        sbox[index] = affine_map(gf_inverse(index as u8));
        index += 1;
    }
    sbox
}

const fn build_inverse_sbox(sbox: &[u8; 256]) -> [u8; 256] {
    let mut inverse = [0u8; 256];
    let mut index = 0;
    while index < 256 {
        inverse[sbox[index] as usize] = index as u8;
        index += 1;
    }
    inverse
}

const fn column_word(byte0: u8, byte1: u8, byte2: u8, byte3: u8) -> u32 {
    ((byte0 as u32) << 24) | ((byte1 as u32) << 16) | ((byte2 as u32) << 8) | byte3 as u32
}

/// `Te0[x]` is MixColumns applied to the column (S[x], 0, 0, 0): (2·s, s, s, 3·s).
/// `Te1..Te3` are that word rotated right by 8, 16 and 24 bits, for input rows 1..3, so that a
/// full round is four lookups and four XORs per output column.
const fn build_encryption_tables(sbox: &[u8; 256]) -> [[u32; 256]; 4] {
    build_tables(sbox, [2, 1, 1, 3])
}

/// `Td0[x]` is InvMixColumns applied to the column (S⁻¹[x], 0, 0, 0): (14·s, 9·s, 13·s, 11·s);
/// `Td1..Td3` are its byte rotations, as for encryption.
const fn build_decryption_tables(inverse_sbox: &[u8; 256]) -> [[u32; 256]; 4] {
    build_tables(inverse_sbox, [14, 9, 13, 11])
}

/// Table 0 maps x to the column (c0·s, c1·s, c2·s, c3·s) for s = `sbox[x]` and `column` =
/// (c0, c1, c2, c3), the first column of (Inv)MixColumns; tables 1..3 are that word rotated
/// right by 8, 16 and 24 bits.
const fn build_tables(sbox: &[u8; 256], column: [u8; 4]) -> [[u32; 256]; 4] {
    let mut tables = [[0u32; 256]; 4];
    let mut index = 0;
    while index < 256 {
        let substituted = sbox[index];
        let word = column_word(
            gf_multiply(substituted, column[0]),
            gf_multiply(substituted, column[1]),
            gf_multiply(substituted, column[2]),
            gf_multiply(substituted, column[3]),
        );
        tables[0][index] = word;
        tables[1][index] = word.rotate_right(8);
        tables[2][index] = word.rotate_right(16);
        tables[3][index] = word.rotate_right(24);
        index += 1;
    }
    tables
}

// `static`, not `const`: a `const` array indexed at run time may be copied to the stack at each
// use; a `static` is one copy in read-only memory, like the kernels' `__constant` tables.
static SBOX: [u8; 256] = build_sbox();
static INVERSE_SBOX: [u8; 256] = build_inverse_sbox(&build_sbox());
static ENCRYPTION_TABLES: [[u32; 256]; 4] = build_encryption_tables(&build_sbox());
static DECRYPTION_TABLES: [[u32; 256]; 4] =
    build_decryption_tables(&build_inverse_sbox(&build_sbox()));

/// Byte `row` (0 = most significant) of a column word, as a table index.
#[inline(always)]
fn byte_of(word: u32, row: u32) -> usize {
    (word >> (24 - 8 * row)) as u8 as usize
}

fn substitute_word(word: u32) -> u32 {
    column_word(
        SBOX[byte_of(word, 0)],
        SBOX[byte_of(word, 1)],
        SBOX[byte_of(word, 2)],
        SBOX[byte_of(word, 3)],
    )
}

/// InvMixColumns of one round-key word, through the decryption tables: `Td0[S[b]]` is
/// InvMixColumns of the column (b, 0, 0, 0), and InvMixColumns is linear, so the four lookups
/// XORed together transform the whole column.
fn inverse_mix_column(word: u32) -> u32 {
    DECRYPTION_TABLES[0][SBOX[byte_of(word, 0)] as usize]
        ^ DECRYPTION_TABLES[1][SBOX[byte_of(word, 1)] as usize]
        ^ DECRYPTION_TABLES[2][SBOX[byte_of(word, 2)] as usize]
        ^ DECRYPTION_TABLES[3][SBOX[byte_of(word, 3)] as usize]
}

// ---------------------------------------------------------------------------------------------
// The cipher.
// ---------------------------------------------------------------------------------------------

/// AES-128/192/256 with 32-bit T-tables. Both key schedules are wiped when it is dropped.
///
/// Not constant time: see the module documentation. Use [`super::FastAes`] unless comparing
/// against the GPU kernels.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct ReferenceAes {
    /// 10, 12 or 14.
    rounds: usize,
    /// FIPS-197 key expansion `w[0..4 * (rounds + 1)]`; the rest of the array stays zero.
    encryption_round_keys: [u32; MAX_ROUND_KEY_WORDS],
    /// The equivalent inverse cipher's schedule: `encryption_round_keys` in reverse round
    /// order, InvMixColumns applied to every round key but the first and last.
    decryption_round_keys: [u32; MAX_ROUND_KEY_WORDS],
}

impl ReferenceAes {
    /// `key` must be 16, 24 or 32 bytes long (checked by [`crate::new_cipher`]).
    pub fn new(key: &[u8]) -> Self {
        let rounds = match key.len() {
            16 => 10,
            24 => 12,
            32 => 14,
            other => panic!("AES key of {other} bytes reached ReferenceAes::new"),
        };
        // Expanded in place, so that no copy of the schedule is left behind in a moved-from
        // stack slot that the drop-time wipe cannot reach.
        let mut cipher = ReferenceAes {
            rounds,
            encryption_round_keys: [0; MAX_ROUND_KEY_WORDS],
            decryption_round_keys: [0; MAX_ROUND_KEY_WORDS],
        };
        cipher.expand_encryption_key(key);
        cipher.derive_decryption_key();
        cipher
    }

    /// The number of rounds: 10, 12 or 14 for 128-, 192- and 256-bit keys.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// The encryption round keys as the kernels take them: `4 * (rounds + 1)` big-endian
    /// column words, round 0 first.
    pub fn encryption_round_keys(&self) -> &[u32] {
        &self.encryption_round_keys[..4 * (self.rounds + 1)]
    }

    /// The equivalent inverse cipher's round keys, in the order decryption uses them.
    pub fn decryption_round_keys(&self) -> &[u32] {
        &self.decryption_round_keys[..4 * (self.rounds + 1)]
    }

    /// The S-box, for code that builds its own tables from it (the GPU kernels' host side).
    pub fn sbox() -> &'static [u8; 256] {
        &SBOX
    }

    /// The inverse S-box, which the decryption kernels' last round looks bytes up in.
    pub fn inverse_sbox() -> &'static [u8; 256] {
        &INVERSE_SBOX
    }

    /// `Te0`; `Te1..Te3` are its words rotated right by 8, 16 and 24 bits, so a kernel that
    /// keeps one table in fast memory derives the other three with a rotation.
    pub fn encryption_table() -> &'static [u32; 256] {
        &ENCRYPTION_TABLES[0]
    }

    /// `Td0`; `Td1..Td3` are its rotations, as for [`ReferenceAes::encryption_table`].
    pub fn decryption_table() -> &'static [u32; 256] {
        &DECRYPTION_TABLES[0]
    }

    /// FIPS-197 section 5.2, KeyExpansion.
    fn expand_encryption_key(&mut self, key: &[u8]) {
        let key_words = key.len() / 4;
        let total_words = 4 * (self.rounds + 1);
        let schedule = &mut self.encryption_round_keys;
        for (word, bytes) in schedule.iter_mut().zip(key.chunks_exact(4)) {
            *word = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        let mut round_constant = 1u8;
        for index in key_words..total_words {
            let mut temporary = schedule[index - 1];
            if index % key_words == 0 {
                temporary =
                    substitute_word(temporary.rotate_left(8)) ^ ((round_constant as u32) << 24);
                round_constant = xtime(round_constant);
            } else if key_words > 6 && index % key_words == 4 {
                // AES-256 only: an extra SubWord half way through each 8-word stretch.
                temporary = substitute_word(temporary);
            }
            schedule[index] = schedule[index - key_words] ^ temporary;
        }
    }

    /// FIPS-197 section 5.3.5, the equivalent inverse cipher's key schedule.
    fn derive_decryption_key(&mut self) {
        let rounds = self.rounds;
        for round in 0..=rounds {
            for column in 0..4 {
                let word = self.encryption_round_keys[4 * (rounds - round) + column];
                self.decryption_round_keys[4 * round + column] = if round == 0 || round == rounds {
                    word
                } else {
                    inverse_mix_column(word)
                };
            }
        }
    }

    fn encrypt_block(&self, block: &mut [u8; BLOCK_SIZE]) {
        table_rounds::<false>(
            &self.encryption_round_keys,
            self.rounds,
            &ENCRYPTION_TABLES,
            &SBOX,
            block,
        );
    }

    fn decrypt_block(&self, block: &mut [u8; BLOCK_SIZE]) {
        table_rounds::<true>(
            &self.decryption_round_keys,
            self.rounds,
            &DECRYPTION_TABLES,
            &INVERSE_SBOX,
            block,
        );
    }
}

/// Every round of the cipher (`INVERSE`: of the equivalent inverse cipher) on one block, with
/// the matching tables and S-box. Both directions have the same structure and differ only in
/// where a row comes from: ShiftRows moves row r left by r, so output column c takes row r
/// from input column c + r; InvShiftRows moves it right, so from column c - r. Inlined with
/// `INVERSE` constant so that every column index is a constant, as in the kernels.
#[inline(always)]
fn table_rounds<const INVERSE: bool>(
    keys: &[u32; MAX_ROUND_KEY_WORDS],
    rounds: usize,
    tables: &[[u32; 256]; 4],
    sbox: &[u8; 256],
    block: &mut [u8; BLOCK_SIZE],
) {
    let source_column = |column: usize, row: usize| {
        if INVERSE {
            (column + 4 - row) % 4
        } else {
            (column + row) % 4
        }
    };
    let mut state = load_state(block);
    for (column, word) in state.iter_mut().enumerate() {
        *word ^= keys[column];
    }
    for round in 1..rounds {
        let key = &keys[4 * round..4 * round + 4];
        // SubBytes and MixColumns are folded into the tables, the row shift into the choice
        // of inputs.
        state = core::array::from_fn(|column| {
            tables[0][byte_of(state[source_column(column, 0)], 0)]
                ^ tables[1][byte_of(state[source_column(column, 1)], 1)]
                ^ tables[2][byte_of(state[source_column(column, 2)], 2)]
                ^ tables[3][byte_of(state[source_column(column, 3)], 3)]
                ^ key[column]
        });
    }
    // The last round has no MixColumns: bytes through the S-box alone.
    let key = &keys[4 * rounds..4 * rounds + 4];
    state = core::array::from_fn(|column| {
        column_word(
            sbox[byte_of(state[source_column(column, 0)], 0)],
            sbox[byte_of(state[source_column(column, 1)], 1)],
            sbox[byte_of(state[source_column(column, 2)], 2)],
            sbox[byte_of(state[source_column(column, 3)], 3)],
        ) ^ key[column]
    });
    store_state(block, state);
}

fn load_state(block: &[u8; BLOCK_SIZE]) -> [u32; 4] {
    let mut state = [0u32; 4];
    for (word, bytes) in state.iter_mut().zip(block.as_chunks::<4>().0) {
        *word = u32::from_be_bytes(*bytes);
    }
    state
}

fn store_state(block: &mut [u8; BLOCK_SIZE], state: [u32; 4]) {
    for (bytes, word) in block.as_chunks_mut::<4>().0.iter_mut().zip(state) {
        *bytes = word.to_be_bytes();
    }
}

/// Splits `bytes` into whole AES blocks; a partial block is a bug in the caller (see
/// [`BlockCipher`]).
fn as_blocks(bytes: &mut [u8]) -> &mut [[u8; BLOCK_SIZE]] {
    let (blocks, rest) = bytes.as_chunks_mut::<BLOCK_SIZE>();
    assert!(rest.is_empty(), "AES input is not a whole number of blocks");
    blocks
}

impl BlockCipher for ReferenceAes {
    fn block_size(&self) -> usize {
        BLOCK_SIZE
    }

    fn encrypt_blocks(&self, blocks: &mut [u8]) {
        for block in as_blocks(blocks) {
            self.encrypt_block(block);
        }
    }

    fn decrypt_blocks(&self, blocks: &mut [u8]) {
        for block in as_blocks(blocks) {
            self.decrypt_block(block);
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, RngExt, SeedableRng};

    use super::*;
    use crate::aes::FastAes;
    use crate::test_vectors;

    fn hex(text: &str) -> Vec<u8> {
        hex::decode(text).expect("test hex")
    }

    fn both_implementations(key: &[u8]) -> [(&'static str, Box<dyn BlockCipher>); 2] {
        [
            ("reference", Box::new(ReferenceAes::new(key))),
            ("fast", Box::new(FastAes::new(key))),
        ]
    }

    fn xor_into(target: &mut [u8], source: &[u8]) {
        for (left, right) in target.iter_mut().zip(source) {
            *left ^= right;
        }
    }

    #[test]
    fn sbox_matches_known_entries() {
        // FIPS-197 figure 7 and 14; SubBytes(0x53) = 0xed is the worked example of 5.1.1.
        assert_eq!(SBOX[0x00], 0x63);
        assert_eq!(SBOX[0x01], 0x7c);
        assert_eq!(SBOX[0x53], 0xed);
        assert_eq!(SBOX[0xff], 0x16);
        assert_eq!(INVERSE_SBOX[0x00], 0x52);
        assert_eq!(INVERSE_SBOX[0xed], 0x53);
        for value in 0..=255u8 {
            assert_eq!(INVERSE_SBOX[SBOX[value as usize] as usize], value);
        }
        // First entries of the well-known published T-tables.
        assert_eq!(ENCRYPTION_TABLES[0][0], 0xc66363a5);
        assert_eq!(ENCRYPTION_TABLES[1][0], 0xa5c66363);
        assert_eq!(DECRYPTION_TABLES[0][0], 0x51f4a750);
        assert_eq!(DECRYPTION_TABLES[3][0], 0xf4a75051);
    }

    #[test]
    fn key_expansion_matches_fips197_appendix_a() {
        let cases = [
            // A.1: w[4], then w[40..44] (the last round key).
            (
                "2b7e151628aed2a6abf7158809cf4f3c",
                4,
                0xa0fafe17,
                [0xd014f9a8, 0xc9ee2589, 0xe13f0cc8, 0xb6630ca6],
            ),
            // A.2: w[6], then w[48..52].
            (
                "8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b",
                6,
                0xfe0c91f7,
                [0xe98ba06f, 0x448c773c, 0x8ecc7204, 0x01002202],
            ),
            // A.3: w[8], then w[56..60].
            (
                "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
                8,
                0x9ba35411,
                [0xfe4890d1, 0xe6188d0b, 0x046df344, 0x706c631e],
            ),
        ];
        for (key, first_derived_index, first_derived_word, last_round_key) in cases {
            let cipher = ReferenceAes::new(&hex(key));
            let schedule = cipher.encryption_round_keys();
            assert_eq!(schedule.len(), 4 * (cipher.rounds() + 1));
            assert_eq!(
                schedule[first_derived_index], first_derived_word,
                "key {key}"
            );
            assert_eq!(
                &schedule[schedule.len() - 4..],
                &last_round_key,
                "key {key}"
            );
            // The equivalent inverse cipher starts with the last round key, untransformed.
            assert_eq!(&cipher.decryption_round_keys()[..4], &last_round_key);
            assert_eq!(
                &cipher.decryption_round_keys()[schedule.len() - 4..],
                &schedule[..4]
            );
        }
    }

    #[test]
    fn fips197_appendix_c_encrypt_and_decrypt() {
        let plaintext = hex("00112233445566778899aabbccddeeff");
        let cases = [
            (
                "000102030405060708090a0b0c0d0e0f",
                "69c4e0d86a7b0430d8cdb78070b4c55a",
            ),
            (
                "000102030405060708090a0b0c0d0e0f1011121314151617",
                "dda97ca4864cdfe06eaf70a0ec0d7191",
            ),
            (
                "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
                "8ea2b7ca516745bfeafc49904b496089",
            ),
        ];
        for (key, ciphertext) in cases {
            let cipher = ReferenceAes::new(&hex(key));
            let mut block = plaintext.clone();
            cipher.encrypt_blocks(&mut block);
            assert_eq!(hex::encode(&block), ciphertext, "encrypt, key {key}");
            cipher.decrypt_blocks(&mut block);
            assert_eq!(block, plaintext, "decrypt, key {key}");
        }
    }

    #[test]
    fn fips197_vector_file() {
        let sections = test_vectors::read("aes_fips197.txt");
        assert_eq!(
            sections.keys().collect::<Vec<_>>(),
            ["aes128", "aes192", "aes256"]
        );
        for (section, records) in &sections {
            assert_eq!(records.len(), 1, "[{section}]");
            for record in records {
                for (name, cipher) in both_implementations(&record["key"]) {
                    let mut data = record["plaintext"].clone();
                    cipher.encrypt_blocks(&mut data);
                    assert_eq!(data, record["ciphertext"], "[{section}] {name} encrypt");
                    cipher.decrypt_blocks(&mut data);
                    assert_eq!(data, record["plaintext"], "[{section}] {name} decrypt");
                }
            }
        }
    }

    #[test]
    fn sp800_38a_vector_file_ecb_cbc_ctr() {
        let sections = test_vectors::read("aes_sp800_38a.txt");
        let expected_sections = [
            "cbc-aes128",
            "cbc-aes192",
            "cbc-aes256",
            "ctr-aes128",
            "ctr-aes192",
            "ctr-aes256",
            "ecb-aes128",
            "ecb-aes192",
            "ecb-aes256",
        ];
        assert_eq!(sections.keys().collect::<Vec<_>>(), expected_sections);
        for (section, records) in &sections {
            assert_eq!(records.len(), 1, "[{section}]");
            let record = &records[0];
            let plaintext = &record["plaintext"];
            let ciphertext = &record["ciphertext"];
            assert_eq!(plaintext.len(), 4 * BLOCK_SIZE, "[{section}] four blocks");
            assert_eq!(ciphertext.len(), plaintext.len(), "[{section}]");
            for (name, cipher) in both_implementations(&record["key"]) {
                let mut data = plaintext.clone();
                match &section[..3] {
                    "ecb" => {
                        cipher.encrypt_blocks(&mut data);
                        assert_eq!(&data, ciphertext, "[{section}] {name} encrypt");
                        cipher.decrypt_blocks(&mut data);
                    }
                    "cbc" => {
                        let mut chaining = record["iv"].clone();
                        for block in data.chunks_exact_mut(BLOCK_SIZE) {
                            xor_into(block, &chaining);
                            cipher.encrypt_blocks(block);
                            chaining.copy_from_slice(block);
                        }
                        assert_eq!(&data, ciphertext, "[{section}] {name} encrypt");
                        let mut chaining = record["iv"].clone();
                        for block in data.chunks_exact_mut(BLOCK_SIZE) {
                            let next_chaining = block.to_vec();
                            cipher.decrypt_blocks(block);
                            xor_into(block, &chaining);
                            chaining = next_chaining;
                        }
                    }
                    "ctr" => {
                        let initial_counter = u128::from_be_bytes(
                            record["iv"].clone().try_into().expect("16-byte iv"),
                        );
                        let mut keystream: Vec<u8> = (0..4u128)
                            .flat_map(|offset| initial_counter.wrapping_add(offset).to_be_bytes())
                            .collect();
                        cipher.encrypt_blocks(&mut keystream);
                        xor_into(&mut data, &keystream);
                        assert_eq!(&data, ciphertext, "[{section}] {name} encrypt");
                        xor_into(&mut data, &keystream);
                    }
                    other => panic!("unexpected mode {other}"),
                }
                assert_eq!(&data, plaintext, "[{section}] {name} decrypt");
            }
        }
    }

    #[test]
    fn agrees_with_hardware_aes_on_random_keys_and_data() {
        test_vectors::for_random_keys(0x05ee_dae5, &[16, 24, 32], 20, |key, rng| {
            let key_length = key.len();
            let block_count = rng.random_range(0..=100usize);
            let mut plaintext = vec![0u8; block_count * BLOCK_SIZE];
            rng.fill_bytes(&mut plaintext);

            let reference = ReferenceAes::new(key);
            let fast = FastAes::new(key);
            let mut by_reference = plaintext.clone();
            let mut by_fast = plaintext.clone();
            reference.encrypt_blocks(&mut by_reference);
            fast.encrypt_blocks(&mut by_fast);
            assert_eq!(by_reference, by_fast, "encrypt, {key_length}-byte key");

            // Decrypt each other's output, so that neither direction is only checked
            // against itself.
            reference.decrypt_blocks(&mut by_fast);
            fast.decrypt_blocks(&mut by_reference);
            assert_eq!(
                by_fast, plaintext,
                "reference decrypt, {key_length}-byte key"
            );
            assert_eq!(
                by_reference, plaintext,
                "fast decrypt, {key_length}-byte key"
            );
        });
    }

    #[test]
    fn decrypt_inverts_encrypt() {
        let mut rng = StdRng::seed_from_u64(7);
        for key_length in [16, 24, 32] {
            let mut key = vec![0u8; key_length];
            rng.fill_bytes(&mut key);
            let cipher = ReferenceAes::new(&key);
            let mut plaintext = vec![0u8; 257 * BLOCK_SIZE];
            rng.fill_bytes(&mut plaintext);
            let mut data = plaintext.clone();
            cipher.encrypt_blocks(&mut data);
            assert_ne!(data, plaintext);
            cipher.decrypt_blocks(&mut data);
            assert_eq!(data, plaintext, "{key_length}-byte key");
        }
    }

    #[test]
    fn empty_input_is_accepted() {
        let cipher = ReferenceAes::new(&[0u8; 16]);
        cipher.encrypt_blocks(&mut []);
        cipher.decrypt_blocks(&mut []);
    }

    #[test]
    #[should_panic(expected = "whole number of blocks")]
    fn partial_block_panics() {
        ReferenceAes::new(&[0u8; 16]).encrypt_blocks(&mut [0u8; 17]);
    }

    #[test]
    #[should_panic(expected = "AES key of 20 bytes")]
    fn wrong_key_length_panics() {
        ReferenceAes::new(&[0u8; 20]);
    }
}
