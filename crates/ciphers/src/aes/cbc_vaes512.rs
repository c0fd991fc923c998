//! Fused AES-CBC decryption on 512-bit VAES: 48 blocks in flight, the chaining XOR done in
//! registers.
//!
//! Unlike encryption, CBC decryption has no chain through the cipher: `P_i = D(C_i) ^
//! C_(i-1)` needs only ciphertext, so it runs as fast as ECB decryption if the XOR operand
//! does not cost a pass over memory. Without a kernel, the mode saves a copy of each batch
//! before decrypting it in place, then XORs the copy back in: about 40% of the ECB rate.
//! Here each step loads all of its ciphertext before storing anything, so in-place
//! decryption needs no copy, and the operand for a vector of four blocks is the same
//! vector moved up by one block, the block below coming from the top lane of the vector
//! before (one `valignq`). The XOR itself is folded into the last round key, as in the CTR
//! kernel: `vaesdeclast` ends with a key XOR, so `D(C) ^ X` is `vaesdeclast(state, K ^ X)`.
//!
//! The rounds are those of [`super::ecb_vaes512`] (the equivalent inverse cipher), with the
//! same step of 12 vectors and the same masked tails. The kernel takes the encryption round
//! keys and derives the inverse ones in registers, 9 to 13 `aesimc` per call: cheaper than
//! storing a second schedule per key (built and wiped per message whether used or not), and
//! it leaves no second copy of key material to wipe.

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use super::ecb_vaes512::{
    keep_round_order, load_step, masked_load, masked_store, store_step, SHORT_TAIL_VECTORS,
    STEP_BYTES, VECTORS_PER_STEP, VECTOR_BYTES,
};
use super::fast::MAX_ROUND_KEYS;

/// Decrypts the whole blocks of `data` in CBC mode, in place, with `previous` as the
/// ciphertext block before them; the contract is [`crate::BlockCipher::cbc_decrypt`]'s.
/// `round_keys` are the FIPS-197 encryption round keys, of which the first `ROUNDS + 1` are
/// used.
///
/// # Safety
/// The CPU must support AES-NI, VAES, AVX-512F and AVX-512BW. `data.len()` should be a
/// multiple of 16 (a partial final block would come out as garbage, only its own bytes
/// written).
#[target_feature(enable = "aes,vaes,avx512f,avx512bw")]
pub(super) unsafe fn cbc_decrypt<const ROUNDS: usize>(
    round_keys: &[[u8; 16]; MAX_ROUND_KEYS],
    previous: &[u8; 16],
    data: &mut [u8],
) {
    // The equivalent inverse cipher's keys, as `super::ecb_vaes512::inverse_round_keys`
    // builds them: the encryption keys in reverse order, InvMixColumns applied to all but
    // the first and last (`vaesdec` applies InvMixColumns before its key XOR, not after).
    let load = |key: &[u8; 16]| {
        // SAFETY: `key` is a 16-byte array; `loadu` has no alignment requirement.
        unsafe { _mm_loadu_si128(key.as_ptr().cast()) }
    };
    let mut keys = [_mm512_setzero_si512(); MAX_ROUND_KEYS];
    keys[0] = _mm512_broadcast_i32x4(load(&round_keys[ROUNDS]));
    for (wide, key) in keys[1..ROUNDS]
        .iter_mut()
        .zip(round_keys[1..ROUNDS].iter().rev())
    {
        *wide = _mm512_broadcast_i32x4(_mm_aesimc_si128(load(key)));
    }
    keys[ROUNDS] = _mm512_broadcast_i32x4(load(&round_keys[0]));

    // The ciphertext vector before the current one: only its top lane (the block just
    // before) is ever used.
    // SAFETY: `previous` is a 16-byte array; `loadu` has no alignment requirement.
    let mut below = _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(previous.as_ptr().cast()) });

    let (steps, rest) = data.as_chunks_mut::<STEP_BYTES>();
    for step in steps {
        // All of the step's ciphertext is in registers before anything is stored, so
        // in-place decryption needs no copy.
        let ciphertext = load_step(step);
        let mut blocks = ciphertext;
        decrypt_rounds::<ROUNDS, VECTORS_PER_STEP>(&keys, &mut blocks);
        let plaintext = finish::<ROUNDS, VECTORS_PER_STEP>(&keys, &blocks, &ciphertext, &mut below);
        store_step(step, &plaintext);
    }

    if rest.len() > SHORT_TAIL_VECTORS * VECTOR_BYTES {
        masked_group::<ROUNDS, VECTORS_PER_STEP>(&keys, below, rest);
    } else if !rest.is_empty() {
        masked_group::<ROUNDS, SHORT_TAIL_VECTORS>(&keys, below, rest);
    }
}

/// Decrypts one group of `WIDTH` vectors over `bytes` (at most `WIDTH * 64` of them).
#[inline]
#[target_feature(enable = "aes,vaes,avx512f,avx512bw")]
fn masked_group<const ROUNDS: usize, const WIDTH: usize>(
    keys: &[__m512i; MAX_ROUND_KEYS],
    mut below: __m512i,
    bytes: &mut [u8],
) {
    let ciphertext = masked_load::<WIDTH>(bytes);
    let mut blocks = ciphertext;
    decrypt_rounds::<ROUNDS, WIDTH>(keys, &mut blocks);
    let plaintext = finish::<ROUNDS, WIDTH>(keys, &blocks, &ciphertext, &mut below);
    masked_store(bytes, &plaintext);
}

/// The initial key XOR and every round but the last on `WIDTH` independent vectors, round
/// by round across the vectors.
#[inline]
#[target_feature(enable = "aes,vaes,avx512f,avx512bw")]
fn decrypt_rounds<const ROUNDS: usize, const WIDTH: usize>(
    keys: &[__m512i; MAX_ROUND_KEYS],
    blocks: &mut [__m512i; WIDTH],
) {
    for block in blocks.iter_mut() {
        *block = _mm512_xor_si512(*block, keys[0]);
    }
    for key in &keys[1..ROUNDS] {
        for block in blocks.iter_mut() {
            *block = _mm512_aesdec_epi128(*block, *key);
        }
        keep_round_order(blocks);
    }
}

/// The last round, with the chaining XOR folded into its key: each vector's operand is its
/// own ciphertext moved up one block, the block below taken from the top lane of `below`,
/// which is left holding the group's last ciphertext vector for the next group.
#[inline]
#[target_feature(enable = "aes,vaes,avx512f,avx512bw")]
fn finish<const ROUNDS: usize, const WIDTH: usize>(
    keys: &[__m512i; MAX_ROUND_KEYS],
    blocks: &[__m512i; WIDTH],
    ciphertext: &[__m512i; WIDTH],
    below: &mut __m512i,
) -> [__m512i; WIDTH] {
    let mut plaintext = [_mm512_setzero_si512(); WIDTH];
    for ((output, block), current) in plaintext.iter_mut().zip(blocks).zip(ciphertext) {
        // Quadwords 6..8 of `below` then 0..6 of `current`: the block before each of
        // `current`'s four.
        let chained = _mm512_alignr_epi64::<6>(*current, *below);
        *below = *current;
        *output = _mm512_aesdeclast_epi128(*block, _mm512_xor_si512(keys[ROUNDS], chained));
    }
    plaintext
}

#[cfg(test)]
// Tests say on stderr what this machine could not run; libtest shows it.
#[allow(clippy::disallowed_macros)]
pub(super) mod tests {
    use rand::{Rng, RngExt};

    use crate::aes::fast::{EcbPath, FastAes};
    use crate::aes::kernel_tests::{
        generic_cbc_decrypt, path_tests, random_kernel_cases, sp800_38a,
    };
    use crate::test_vectors::{assert_same_bytes, random_pieces};
    use crate::BlockCipher;

    /// Decrypts `input` in the calls `pieces` describes (byte lengths, whole blocks, summing
    /// to the input's length), each given the ciphertext block before it, starting `shift`
    /// bytes into a buffer so that the data is not aligned the same way every time; compares
    /// with the generic path. Returns `false` when this CPU lacks the CBC decryption kernel
    /// beside ECB path `path`.
    fn check_case(
        path: EcbPath,
        cipher: &FastAes,
        iv: &[u8; 16],
        input: &[u8],
        pieces: &[usize],
        shift: usize,
    ) -> bool {
        let mut buffer = vec![0u8; shift + input.len()];
        buffer[shift..].copy_from_slice(input);
        let fused = &mut buffer[shift..];
        let mut offset = 0;
        for &piece in pieces {
            let previous = if offset == 0 {
                *iv
            } else {
                input[offset - 16..offset].try_into().expect("16 bytes")
            };
            if !cipher.cbc_decrypt_with(path, &previous, &mut fused[offset..offset + piece]) {
                assert_eq!(
                    fused, input,
                    "{path:?}: a refused call must not touch the data"
                );
                return false;
            }
            offset += piece;
        }
        assert_eq!(offset, input.len());
        let mut expected = input.to_vec();
        generic_cbc_decrypt(cipher, iv, &mut expected);
        assert_same_bytes(
            fused,
            &expected,
            format_args!("{path:?}, pieces {pieces:?}, shift {shift}"),
        );
        true
    }

    /// Random keys of all three sizes, every whole-block length up to 1600 bytes (past two
    /// main-loop steps, so that each step count meets both tail widths and every tail
    /// length) and two large ones, in one call and then split into calls of random sizes
    /// (empty ones included), so that every position within a step starts a call.
    pub(in crate::aes) fn agrees_with_generic_cbc(path: EcbPath) {
        random_kernel_cases(
            format_args!("{path:?} CBC decryption"),
            0xCBC0_D512,
            16,
            [64 * 1024 + 16, 1024 * 1024 + 48],
            |cipher, input, rng| {
                let mut iv = [0u8; 16];
                rng.fill_bytes(&mut iv);
                let shift = rng.random_range(0..64);
                if !check_case(path, cipher, &iv, input, &[input.len()], shift) {
                    return false;
                }
                let longest = if input.len() > 4096 { 400 } else { 60 };
                let pieces = random_pieces(rng, input.len(), longest);
                assert!(check_case(path, cipher, &iv, input, &pieces, shift));
                true
            },
        );
    }

    /// SP 800-38A F.2.2, F.2.4, F.2.6 (CBC-AES128/192/256.Decrypt), in one call and one
    /// block per call.
    pub(in crate::aes) fn matches_sp800_38a(path: EcbPath) {
        for example in sp800_38a("cbc") {
            let (section, cipher) = (&example.section, &example.cipher);
            let plaintext = &example.plaintext;

            let mut data = example.ciphertext.clone();
            if !cipher.cbc_decrypt_with(path, &example.iv, &mut data) {
                eprintln!("{path:?} CBC decryption not available on this CPU; skipped");
                return;
            }
            assert_eq!(&data, plaintext, "{path:?} [{section}]");

            let mut data = example.ciphertext.clone();
            let mut previous = example.iv.to_vec();
            for block in data.chunks_exact_mut(16) {
                let saved = block.to_vec();
                assert!(cipher.cbc_decrypt_with(path, &previous, block));
                previous = saved;
            }
            assert_eq!(&data, plaintext, "{path:?} [{section}] block by block");
        }
    }

    path_tests! {
        vaes512_agrees_with_generic_cbc: agrees_with_generic_cbc(EcbPath::Vaes512),
        vaes512_matches_sp800_38a: matches_sp800_38a(EcbPath::Vaes512),
        aesni_agrees_with_generic_cbc: agrees_with_generic_cbc(EcbPath::AesNi),
        aesni_matches_sp800_38a: matches_sp800_38a(EcbPath::AesNi),
    }

    /// The detected path, through the `BlockCipher` entry point: the plaintext where a
    /// kernel runs, the data untouched where none does.
    #[test]
    fn block_cipher_trait_matches_sp800_38a() {
        for example in sp800_38a("cbc") {
            let mut data = example.ciphertext.clone();
            let expected = if example.cipher.cbc_decrypt(&example.iv, &mut data) {
                &example.plaintext
            } else {
                &example.ciphertext
            };
            assert_eq!(&data, expected, "[{}]", example.section);
        }
    }
}
