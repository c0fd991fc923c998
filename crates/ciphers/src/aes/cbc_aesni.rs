//! Fused AES-CBC on 128-bit AES-NI: encryption with the chain in a register, decryption
//! ([`cbc_decrypt`]) eight blocks at a time; the round keys are loaded once per call.
//!
//! CBC encryption cannot overlap blocks, so its speed is the latency of one block's rounds.
//! That chain is cut to the AES instructions alone: block i+1 enters its first round as
//! `C_i ^ P_(i+1) ^ K_0`, and since `C_i = AESENCLAST(S_i, K_last)` ends with a key XOR, the
//! same value is `AESENCLAST(S_i, K_last ^ K_0 ^ P_(i+1))`. The second operand is ready long
//! before `S_i`, so the next block starts straight from the previous one's last round, with
//! no XOR in between; `C_i` itself is a second, independent `AESENCLAST` that only feeds the
//! store. A block then costs `rounds` AES latencies instead of `rounds` plus one XOR: about
//! 3% for AES-128 as measured with `examples/aes_ecb_cbc_speed.rs`.

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use super::ctr_aesni::load_round_keys;
use super::ecb_aesni::{all_but_last_round, load_group, store_group, STEP_BYTES};
use super::fast::MAX_ROUND_KEYS;

/// Encrypts the whole blocks of `data` in CBC mode with the first `ROUNDS + 1` FIPS-197
/// round keys, starting from and updating `chain`; the contract is
/// [`crate::BlockCipher::cbc_encrypt`]'s.
///
/// # Safety
/// The CPU must support AES-NI.
#[target_feature(enable = "aes")]
pub(super) unsafe fn cbc_encrypt<const ROUNDS: usize>(
    round_keys: &[[u8; 16]; MAX_ROUND_KEYS],
    chain: &mut [u8; 16],
    data: &mut [[u8; 16]],
) {
    let Some((first, _)) = data.split_first() else {
        return;
    };
    let keys = load_round_keys::<ROUNDS>(round_keys);
    let last_and_first = _mm_xor_si128(keys[ROUNDS], keys[0]);

    // The state entering round 1 of the current block.
    let mut state = _mm_xor_si128(_mm_xor_si128(load(chain), load(first)), keys[0]);
    let mut ciphertext = state;
    for index in 0..data.len() {
        for key in &keys[1..ROUNDS] {
            state = _mm_aesenc_si128(state, *key);
        }
        ciphertext = _mm_aesenclast_si128(state, keys[ROUNDS]);
        if let Some(next) = data.get(index + 1) {
            state = _mm_aesenclast_si128(state, _mm_xor_si128(last_and_first, load(next)));
        }
        // SAFETY: `data[index]` is a 16-byte array, written whole; `storeu` has no alignment
        // requirement.
        unsafe { _mm_storeu_si128(data[index].as_mut_ptr().cast(), ciphertext) };
    }
    // SAFETY: `chain` is a 16-byte array, written whole; no alignment needed.
    unsafe { _mm_storeu_si128(chain.as_mut_ptr().cast(), ciphertext) };
}

/// Decrypts the whole blocks of `data` in CBC mode, in place, with `previous` as the
/// ciphertext block before them; the contract is [`crate::BlockCipher::cbc_decrypt`]'s.
/// `round_keys` are the FIPS-197 encryption round keys, of which the first `ROUNDS + 1` are
/// used.
///
/// Unlike encryption, decryption has no chain through the cipher, so it runs
/// eight blocks in flight as [`super::ecb_aesni`] does. Each step loads all
/// of its ciphertext before storing anything, so in-place decryption needs no copy; the
/// previous ciphertext block stays in a register from step to step, and the chaining XOR is
/// folded into the last round's key (`aesdeclast` ends with a key XOR, so `D(C) ^ X` is
/// `aesdeclast(state, K ^ X)`), as in [`super::cbc_vaes512`], which also derives the inverse
/// keys in registers the same way (9 to 13 `aesimc` per call).
///
/// # Safety
/// The CPU must support AES-NI. `data.len()` should be a multiple of 16 (a partial final
/// block is left untouched).
#[target_feature(enable = "aes")]
pub(super) unsafe fn cbc_decrypt<const ROUNDS: usize>(
    round_keys: &[[u8; 16]; MAX_ROUND_KEYS],
    previous: &[u8; 16],
    data: &mut [u8],
) {
    if data.len() < 16 {
        return;
    }
    // The equivalent inverse cipher's keys: the encryption keys in reverse order,
    // InvMixColumns applied to all but the first and last.
    let mut keys = [_mm_setzero_si128(); MAX_ROUND_KEYS];
    keys[0] = load(&round_keys[ROUNDS]);
    for (register, key) in keys[1..ROUNDS]
        .iter_mut()
        .zip(round_keys[1..ROUNDS].iter().rev())
    {
        *register = _mm_aesimc_si128(load(key));
    }
    keys[ROUNDS] = load(&round_keys[0]);

    // The ciphertext block before the current group.
    let mut below = load(previous);
    // The one to seven blocks after the last whole step go through a zero-padded step on
    // the stack, so that one loop body, inlined and with every length constant, serves both
    // (as a function called twice, LLVM kept it out of line, its blocks in memory, at half
    // the speed).
    let (steps, rest) = data.as_chunks_mut::<STEP_BYTES>();
    let mut tail = [0u8; STEP_BYTES];
    tail[..rest.len()].copy_from_slice(rest);
    let tail_step = (rest.len() >= 16).then_some(&mut tail);
    for step in steps.iter_mut().chain(tail_step) {
        // Every ciphertext block is in a register before anything is stored.
        let ciphertext = load_group(step);
        let mut blocks = ciphertext;
        all_but_last_round::<ROUNDS, true>(&keys, &mut blocks);
        for (block, current) in blocks.iter_mut().zip(ciphertext) {
            *block = _mm_aesdeclast_si128(*block, _mm_xor_si128(keys[ROUNDS], below));
            below = current;
        }
        store_group(step, &blocks);
    }
    rest.copy_from_slice(&tail[..rest.len()]);
    // The tail held plaintext: wipe the copy.
    zeroize::Zeroize::zeroize(&mut tail);
}

#[inline]
#[target_feature(enable = "sse2")]
fn load(bytes: &[u8; 16]) -> __m128i {
    // SAFETY: `bytes` is a 16-byte array, read whole; `loadu` has no alignment requirement.
    unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
}

#[cfg(test)]
// Tests say on stderr what this machine could not run; libtest shows it.
#[allow(clippy::disallowed_macros)]
mod tests {
    use rand::Rng;

    use crate::aes::fast::{CbcPath, FastAes};
    use crate::aes::kernel_tests::{
        generic_cbc_encrypt, path_tests, random_kernel_cases, sp800_38a,
    };
    use crate::test_vectors::{assert_same_bytes, random_pieces};

    /// Runs `path` over `input` split into the calls `pieces` describes (byte lengths, whole
    /// blocks, summing to the input's length) and compares data and chain with the generic
    /// path. Returns `false` when this CPU lacks `path`.
    fn check_case(
        path: CbcPath,
        cipher: &FastAes,
        iv: &[u8; 16],
        input: &[u8],
        pieces: &[usize],
    ) -> bool {
        let mut fused = input.to_vec();
        let mut fused_chain = *iv;
        let mut offset = 0;
        for &piece in pieces {
            let range = offset..offset + piece;
            if !cipher.cbc_encrypt_with(path, &mut fused_chain, &mut fused[range]) {
                assert_eq!(
                    fused, input,
                    "{path:?}: a refused call must not touch the data"
                );
                assert_eq!(
                    &fused_chain, iv,
                    "{path:?}: a refused call must not touch the chain"
                );
                return false;
            }
            offset += piece;
        }
        assert_eq!(offset, input.len());
        let mut expected = input.to_vec();
        let mut expected_chain = *iv;
        generic_cbc_encrypt(cipher, &mut expected_chain, &mut expected);
        assert_same_bytes(
            &fused,
            &expected,
            format_args!("{path:?}, pieces {pieces:?}"),
        );
        assert_eq!(
            fused_chain, expected_chain,
            "{path:?}: chain after {pieces:?}"
        );
        true
    }

    /// Random keys of all three sizes, every whole-block length up to 1600 bytes and a few
    /// large ones in one call, then the same data split into several calls of random sizes
    /// (empty calls included), so that the chain is carried from call to call.
    fn agrees_with_generic_cbc(path: CbcPath) {
        random_kernel_cases(
            format_args!("{path:?} kernel"),
            0xCBC0_0128,
            16,
            [64 * 1024, 1024 * 1024 + 16],
            |cipher, input, rng| {
                let mut iv = [0u8; 16];
                rng.fill_bytes(&mut iv);
                if !check_case(path, cipher, &iv, input, &[input.len()]) {
                    return false;
                }
                let pieces = random_pieces(rng, input.len(), 40);
                assert!(check_case(path, cipher, &iv, input, &pieces));
                true
            },
        );
    }

    /// SP 800-38A F.2.1, F.2.3, F.2.5 (CBC-AES128/192/256.Encrypt), in one call and one
    /// block per call.
    fn matches_sp800_38a(path: CbcPath) {
        for example in sp800_38a("cbc") {
            let (section, cipher) = (&example.section, &example.cipher);
            let ciphertext = &example.ciphertext;

            let mut data = example.plaintext.clone();
            let mut chain = example.iv;
            if !cipher.cbc_encrypt_with(path, &mut chain, &mut data) {
                eprintln!("{path:?} kernel not available on this CPU; skipped");
                return;
            }
            assert_eq!(&data, ciphertext, "{path:?} [{section}]");
            assert_eq!(
                chain,
                ciphertext[ciphertext.len() - 16..],
                "{path:?} [{section}] chain"
            );

            let mut data = example.plaintext.clone();
            let mut chain = example.iv;
            for block in data.chunks_exact_mut(16) {
                assert!(cipher.cbc_encrypt_with(path, &mut chain, block));
            }
            assert_eq!(&data, ciphertext, "{path:?} [{section}] block by block");
        }
    }

    path_tests! {
        aesni_agrees_with_generic_cbc: agrees_with_generic_cbc(CbcPath::AesNi),
        aesni_matches_sp800_38a: matches_sp800_38a(CbcPath::AesNi),
    }
}
