//! AES block encryption and decryption (ECB) on 512-bit VAES: four blocks per zmm register,
//! [`VECTORS_PER_STEP`] registers in flight, every round key broadcast once per call.
//!
//! The structure is the CTR kernel's ([`super::ctr_vaes512`]) with the data as the input of
//! the rounds instead of counters. Decryption uses the equivalent inverse cipher (FIPS-197
//! section 5.3.5), which is what `vaesdec` computes: the encryption round keys in reverse
//! order, the middle ones passed through InvMixColumns ([`inverse_round_keys`]).

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use super::ctr_aesni::load_round_keys;
use super::fast::{RoundKeys, MAX_ROUND_KEYS};

/// Bytes in one zmm register: four AES blocks.
pub(super) const VECTOR_BYTES: usize = 64;

/// zmm registers in flight per main-loop step (48 blocks), shared by the VAES-512 kernels:
/// 8 independent chains cover the `vaesenc` latency at two per cycle on Zen 5, 12 leave
/// headroom for the loads and stores (measured with `examples/aes_ctr_speed.rs`, 8 reach
/// about 95% of the port limit, 12 about 98%, and 16 no more), and 12 plus 15 broadcast
/// round keys still fit the 32 zmm registers.
pub(super) const VECTORS_PER_STEP: usize = 12;

/// Bytes in one main-loop step.
pub(super) const STEP_BYTES: usize = VECTORS_PER_STEP * VECTOR_BYTES;

/// Width of the group that finishes a short tail (up to this many vectors): four chains are
/// only half the port rate, but they finish a one-block call in about one block's latency
/// instead of spending a full step's worth of AES instructions on masked-off lanes.
pub(super) const SHORT_TAIL_VECTORS: usize = 4;

/// Encrypts every 16-byte block of `data` in place with the first `ROUNDS + 1` FIPS-197
/// round keys, or with `DECRYPT` decrypts it with keys from [`inverse_round_keys`].
///
/// # Safety
/// The CPU must support AES-NI, VAES, AVX-512F and AVX-512BW. `data.len()` should be a
/// multiple of 16 (a partial final block would be processed as if zero-padded, and only its
/// own bytes written back).
#[target_feature(enable = "aes,vaes,avx512f,avx512bw")]
pub(super) unsafe fn ecb<const ROUNDS: usize, const DECRYPT: bool>(
    round_keys: &[[u8; 16]; MAX_ROUND_KEYS],
    data: &mut [u8],
) {
    let keys = broadcast_round_keys::<ROUNDS>(round_keys);

    let (steps, rest) = data.as_chunks_mut::<STEP_BYTES>();
    for step in steps {
        let mut blocks = load_step(step);
        cipher_group::<ROUNDS, DECRYPT, VECTORS_PER_STEP>(&keys, &mut blocks);
        store_step(step, &blocks);
    }

    if rest.len() > SHORT_TAIL_VECTORS * VECTOR_BYTES {
        masked_group::<ROUNDS, DECRYPT, VECTORS_PER_STEP>(&keys, rest);
    } else if !rest.is_empty() {
        masked_group::<ROUNDS, DECRYPT, SHORT_TAIL_VECTORS>(&keys, rest);
    }
}

/// The round keys of the equivalent inverse cipher: encryption key `rounds - i` for
/// decryption round `i`, with InvMixColumns applied to all but the first and last, because
/// `aesdec` applies InvMixColumns before its key XOR rather than after.
///
/// # Safety
/// The CPU must support AES-NI.
#[target_feature(enable = "aes")]
pub(super) unsafe fn inverse_round_keys(round_keys: &RoundKeys) -> RoundKeys {
    let rounds = round_keys.rounds;
    let mut inverse = RoundKeys {
        keys: [[0u8; 16]; MAX_ROUND_KEYS],
        rounds,
    };
    inverse.keys[0] = round_keys.keys[rounds];
    inverse.keys[rounds] = round_keys.keys[0];
    for (target, source) in inverse.keys[1..rounds]
        .iter_mut()
        .zip(round_keys.keys[1..rounds].iter().rev())
    {
        // SAFETY: `source` and `target` are 16-byte arrays, read and written whole;
        // `loadu`/`storeu` have no alignment requirement.
        unsafe {
            let key = _mm_loadu_si128(source.as_ptr().cast());
            _mm_storeu_si128(target.as_mut_ptr().cast(), _mm_aesimc_si128(key));
        }
    }
    inverse
}

/// Runs one group of `WIDTH` vectors over `bytes` (at most `WIDTH * 64` of them).
#[inline]
#[target_feature(enable = "aes,vaes,avx512f,avx512bw")]
fn masked_group<const ROUNDS: usize, const DECRYPT: bool, const WIDTH: usize>(
    keys: &[__m512i; MAX_ROUND_KEYS],
    bytes: &mut [u8],
) {
    let mut blocks = masked_load::<WIDTH>(bytes);
    cipher_group::<ROUNDS, DECRYPT, WIDTH>(keys, &mut blocks);
    masked_store(bytes, &blocks);
}

/// Round keys 0..=`ROUNDS`, each broadcast to the four lanes of a zmm register (the rest
/// zero), loaded once per call so that they stay in registers.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn broadcast_round_keys<const ROUNDS: usize>(
    round_keys: &[[u8; 16]; MAX_ROUND_KEYS],
) -> [__m512i; MAX_ROUND_KEYS] {
    let narrow = load_round_keys::<ROUNDS>(round_keys);
    let mut keys = [_mm512_setzero_si512(); MAX_ROUND_KEYS];
    for (wide, key) in keys.iter_mut().zip(narrow).take(ROUNDS + 1) {
        *wide = _mm512_broadcast_i32x4(key);
    }
    keys
}

/// The vectors of one main-loop step.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn load_step(step: &[u8; STEP_BYTES]) -> [__m512i; VECTORS_PER_STEP] {
    let (vectors, _) = step.as_chunks::<VECTOR_BYTES>();
    let mut blocks = [_mm512_setzero_si512(); VECTORS_PER_STEP];
    for (block, bytes) in blocks.iter_mut().zip(vectors) {
        // SAFETY: `bytes` is a 64-byte array, read whole; no alignment needed.
        *block = unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) };
    }
    blocks
}

/// Writes `blocks` over one main-loop step.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn store_step(step: &mut [u8; STEP_BYTES], blocks: &[__m512i; VECTORS_PER_STEP]) {
    let (vectors, _) = step.as_chunks_mut::<VECTOR_BYTES>();
    for (block, bytes) in blocks.iter().zip(vectors) {
        // SAFETY: `bytes` is a 64-byte array, written whole; no alignment needed.
        unsafe { _mm512_storeu_si512(bytes.as_mut_ptr().cast(), *block) };
    }
}

/// Where vector `index` of a masked group over `length` bytes starts, and the mask of its
/// bytes that lie inside them.
#[inline(always)]
fn masked_piece(index: usize, length: usize) -> (usize, __mmask64) {
    let start = (index * VECTOR_BYTES).min(length);
    (start, byte_mask((length - start).min(VECTOR_BYTES)))
}

/// Loads `bytes` (at most `WIDTH * 64` of them) into `WIDTH` vectors, zero past the end,
/// through byte-masked loads, which neither touch nor fault on the bytes they mask off.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn masked_load<const WIDTH: usize>(bytes: &[u8]) -> [__m512i; WIDTH] {
    debug_assert!(bytes.len() <= WIDTH * VECTOR_BYTES);
    let mut blocks = [_mm512_setzero_si512(); WIDTH];
    for (index, block) in blocks.iter_mut().enumerate() {
        let (start, mask) = masked_piece(index, bytes.len());
        // SAFETY: `start <= bytes.len()`, so the pointer is inside `bytes` or one past its
        // end, and `mask` selects only bytes below `bytes.len()`; masked-off bytes are not
        // accessed.
        *block = unsafe { _mm512_maskz_loadu_epi8(mask, bytes.as_ptr().add(start).cast()) };
    }
    blocks
}

/// Stores the front of `blocks` over `bytes`, the inverse of [`masked_load`].
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn masked_store<const WIDTH: usize>(bytes: &mut [u8], blocks: &[__m512i; WIDTH]) {
    for (index, block) in blocks.iter().enumerate() {
        let (start, mask) = masked_piece(index, bytes.len());
        // SAFETY: as for `masked_load`.
        unsafe { _mm512_mask_storeu_epi8(bytes.as_mut_ptr().add(start).cast(), mask, *block) };
    }
}

/// The low `length` bits set, for `length` in 0..=64.
#[inline(always)]
fn byte_mask(length: usize) -> __mmask64 {
    if length >= VECTOR_BYTES {
        u64::MAX
    } else {
        (1u64 << length) - 1
    }
}

/// All rounds of AES encryption (or, with `DECRYPT`, of the equivalent inverse cipher) on
/// `WIDTH` independent vectors, round by round across the vectors.
#[inline]
#[target_feature(enable = "aes,vaes,avx512f,avx512bw")]
fn cipher_group<const ROUNDS: usize, const DECRYPT: bool, const WIDTH: usize>(
    keys: &[__m512i; MAX_ROUND_KEYS],
    blocks: &mut [__m512i; WIDTH],
) {
    for block in blocks.iter_mut() {
        *block = _mm512_xor_si512(*block, keys[0]);
    }
    for key in &keys[1..ROUNDS] {
        for block in blocks.iter_mut() {
            *block = if DECRYPT {
                _mm512_aesdec_epi128(*block, *key)
            } else {
                _mm512_aesenc_epi128(*block, *key)
            };
        }
        keep_round_order(blocks);
    }
    for block in blocks.iter_mut() {
        *block = if DECRYPT {
            _mm512_aesdeclast_epi128(*block, keys[ROUNDS])
        } else {
            _mm512_aesenclast_epi128(*block, keys[ROUNDS])
        };
    }
}

// `keep_round_order` names each vector of a group as an `asm!` operand.
const _: () = assert!(VECTORS_PER_STEP == 12 && SHORT_TAIL_VECTORS == 4);

/// Makes the compiler issue a group (of 4 or 12 vectors, in every VAES-512 kernel) round by
/// round across all of its vectors.
///
/// Left alone, LLVM sometimes (AES-256 in particular) emits each vector's whole round chain
/// before the next one's, to save registers. The out-of-order window then holds only a few
/// chains at once and throughput falls to about 60%. An empty `asm!` that takes and returns
/// every vector makes round r+1 of any vector depend on round r of all of them, which pins
/// the round-major order and costs no instruction.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn keep_round_order(blocks: &mut [__m512i]) {
    match blocks {
        [b0, b1, b2, b3] => pin_round_order!(zmm_reg: b0, b1, b2, b3),
        [b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11] => {
            pin_round_order!(zmm_reg: b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11)
        }
        other => unreachable!("no round-order barrier for {} vectors", other.len()),
    }
}

#[cfg(test)]
// Tests say on stderr what this machine could not run; libtest shows it.
#[allow(clippy::disallowed_macros)]
pub(super) mod tests {
    use crate::aes::fast::{EcbPath, FastAes};
    use crate::aes::kernel_tests::{path_tests, random_kernel_cases, sp800_38a};
    use crate::test_vectors::assert_same_bytes;
    use crate::BlockCipher;

    /// Runs `path` both ways on `input` and compares with the `aes` crate's block
    /// functions. Returns `false` when this CPU lacks `path`.
    fn check_case(path: EcbPath, cipher: &FastAes, input: &[u8]) -> bool {
        let mut encrypted = input.to_vec();
        if !cipher.ecb_encrypt_with(path, &mut encrypted) {
            assert_eq!(
                encrypted, input,
                "{path:?}: a refused call must not touch the data"
            );
            return false;
        }
        let mut expected = input.to_vec();
        cipher.crate_encrypt_blocks(&mut expected);
        assert_same(path, "encrypt", &encrypted, &expected);

        let mut decrypted = input.to_vec();
        assert!(cipher.ecb_decrypt_with(path, &mut decrypted));
        let mut expected = input.to_vec();
        cipher.crate_decrypt_blocks(&mut expected);
        assert_same(path, "decrypt", &decrypted, &expected);

        assert!(cipher.ecb_decrypt_with(path, &mut encrypted));
        assert_same(path, "round trip", &encrypted, input);
        true
    }

    fn assert_same(path: EcbPath, what: &str, actual: &[u8], expected: &[u8]) {
        assert_same_bytes(actual, expected, format_args!("{path:?} {what}"));
    }

    /// Random keys of all three sizes, every whole-block length up to 1600 bytes (past two
    /// main-loop steps of 768 bytes, so that each step count meets both tail widths and
    /// every tail length) and a few large ones.
    pub(in crate::aes) fn agrees_with_crate(path: EcbPath) {
        random_kernel_cases(
            format_args!("{path:?} kernel"),
            0xECB0_0512,
            16,
            [64 * 1024 + 16, 1024 * 1024 + 48],
            |cipher, input, _| check_case(path, cipher, input),
        );
    }

    /// SP 800-38A F.1.1, F.1.3, F.1.5 (ECB-AES128/192/256), both directions (F.1.2, F.1.4
    /// and F.1.6 are the same data decrypted), whole and block by block.
    pub(in crate::aes) fn matches_sp800_38a(path: EcbPath) {
        for example in sp800_38a("ecb") {
            let (section, cipher) = (&example.section, &example.cipher);
            let (plaintext, ciphertext) = (&example.plaintext, &example.ciphertext);
            let mut data = plaintext.clone();
            if !cipher.ecb_encrypt_with(path, &mut data) {
                eprintln!("{path:?} kernel not available on this CPU; skipped");
                return;
            }
            assert_eq!(&data, ciphertext, "{path:?} [{section}] encrypt");
            assert!(cipher.ecb_decrypt_with(path, &mut data));
            assert_eq!(&data, plaintext, "{path:?} [{section}] decrypt");
            for (plain, cipher_block) in plaintext.chunks_exact(16).zip(ciphertext.chunks_exact(16))
            {
                let mut block = plain.to_vec();
                assert!(cipher.ecb_encrypt_with(path, &mut block));
                assert_eq!(block, cipher_block, "{path:?} [{section}] one block");
                assert!(cipher.ecb_decrypt_with(path, &mut block));
                assert_eq!(block, plain, "{path:?} [{section}] one block back");
            }
        }
    }

    path_tests! {
        vaes512_agrees_with_crate: agrees_with_crate(EcbPath::Vaes512),
        vaes512_matches_sp800_38a: matches_sp800_38a(EcbPath::Vaes512),
        // The fallback path through the same checks, so that the hooks themselves are tested.
        crate_path_matches_sp800_38a: matches_sp800_38a(EcbPath::Crate),
    }

    #[test]
    fn block_cipher_trait_matches_vectors_whichever_path_is_detected() {
        for example in sp800_38a("ecb") {
            let (section, cipher) = (&example.section, &example.cipher);
            let mut data = example.plaintext.clone();
            cipher.encrypt_blocks(&mut data);
            assert_eq!(data, example.ciphertext, "[{section}]");
            cipher.decrypt_blocks(&mut data);
            assert_eq!(data, example.plaintext, "[{section}]");
        }
    }
}
