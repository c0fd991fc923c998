//! Fused AES-CBC encryption on 128-bit AES-NI: the chain stays in a register and the round
//! keys are loaded once per call.
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
    use crate::test_vectors::{assert_same_bytes, random_cases, random_pieces, single_record};
    use crate::BlockCipher;

    /// CBC built from the `aes` crate's single-block encryption, independently of the kernel.
    fn generic_cbc_encrypt(cipher: &FastAes, chain: &mut [u8; 16], data: &mut [u8]) {
        for block in data.chunks_exact_mut(16) {
            for (byte, chain_byte) in block.iter_mut().zip(chain.iter()) {
                *byte ^= chain_byte;
            }
            cipher.crate_encrypt_blocks(block);
            chain.copy_from_slice(block);
        }
    }

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
        let large = [64 * 1024, 1024 * 1024 + 16];
        let lengths = (0..=1600).step_by(16).chain(large);
        let all_ran = random_cases(
            0xCBC0_0128,
            &[16, 24, 32],
            lengths,
            FastAes::new,
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
        if !all_ran {
            eprintln!("{path:?} kernel not available on this CPU; skipped");
        }
    }

    /// SP 800-38A F.2.1, F.2.3, F.2.5 (CBC-AES128/192/256.Encrypt), in one call and one
    /// block per call.
    fn matches_sp800_38a(path: CbcPath) {
        for section in ["cbc-aes128", "cbc-aes192", "cbc-aes256"] {
            let record = single_record("aes_sp800_38a.txt", section);
            let field = |name: &str| record[name].clone();
            let cipher = FastAes::new(&field("key"));
            let iv: [u8; 16] = field("iv").try_into().expect("16-byte iv");
            let plaintext = field("plaintext");
            let ciphertext = field("ciphertext");

            let mut data = plaintext.clone();
            let mut chain = iv;
            if !cipher.cbc_encrypt_with(path, &mut chain, &mut data) {
                eprintln!("{path:?} kernel not available on this CPU; skipped");
                return;
            }
            assert_eq!(data, ciphertext, "{path:?} [{section}]");
            assert_eq!(
                chain,
                ciphertext[ciphertext.len() - 16..],
                "{path:?} [{section}] chain"
            );

            let mut data = plaintext.clone();
            let mut chain = iv;
            for block in data.chunks_exact_mut(16) {
                assert!(cipher.cbc_encrypt_with(path, &mut chain, block));
            }
            assert_eq!(data, ciphertext, "{path:?} [{section}] block by block");
        }
    }

    #[test]
    fn aesni_agrees_with_generic_cbc() {
        agrees_with_generic_cbc(CbcPath::AesNi);
    }

    #[test]
    fn aesni_matches_sp800_38a() {
        matches_sp800_38a(CbcPath::AesNi);
    }

    #[test]
    fn block_cipher_trait_uses_the_fused_path_where_available() {
        let cipher = FastAes::new(&[9u8; 32]);
        let mut data = [0x33u8; 160];
        let mut chain = [0x44u8; 16];
        let fused = cipher.cbc_encrypt(&mut chain, &mut data);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(fused, std::arch::is_x86_feature_detected!("aes"));
        if fused {
            let mut expected = [0x33u8; 160];
            let mut expected_chain = [0x44u8; 16];
            generic_cbc_encrypt(&cipher, &mut expected_chain, &mut expected);
            assert_eq!(data, expected);
            assert_eq!(chain, expected_chain);
        }
    }
}
