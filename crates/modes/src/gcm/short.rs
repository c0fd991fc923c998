//! Whole short AES-GCM messages (at most [`SHORT_TEXT_BYTES`] of text under a 96-bit nonce)
//! in one call on 128-bit registers with AES-NI and PCLMULQDQ.
//!
//! A short message is bound by latency, not throughput: one AES chain of 10-14 rounds, then
//! one GHASH reduction. So the call always encrypts eight counter blocks (J0 and the seven a
//! text of [`SHORT_TEXT_BYTES`] can need) side by side, which costs the latency of one; masks
//! the key stream past the text to zero, so the ciphertext blocks GHASH sees are zero-padded
//! without a branch; and multiplies the AAD's GHASH state, the text blocks and the length
//! block by H^(n+1)..H^1 with a single reduction (the arithmetic of `ghash::x86_pclmul`). The
//! text passes through a zero-padded block buffer on the stack, wiped before returning.
//! Decryption hashes the ciphertext first and decrypts only when the tag matches.

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use zeroize::Zeroize;

use crate::ghash::x86_pclmul::{add, product, reduce, with_halves_sum, Products};
use crate::ghash::POWERS;

use super::{NONCE_BYTES, SHORT_TEXT_BYTES};

/// Text blocks a short message has at most.
const TEXT_BLOCKS: usize = SHORT_TEXT_BYTES / 16;
/// Counter blocks encrypted per call: J0 and the text's.
const COUNTER_BLOCKS: usize = TEXT_BLOCKS + 1;
/// The most round keys AES has (AES-256).
const MAX_ROUND_KEYS: usize = 15;

// Eight xmm chains of AES; the text blocks and the length block fit the table of powers.
const _: () = assert!(COUNTER_BLOCKS == 8 && TEXT_BLOCKS < POWERS);

/// What a short message is made of besides its text. Made only by [`Short::new`], on a CPU
/// with every feature the calls enable and with AES's round keys, so its `seal` and `open`
/// are safe.
pub(super) struct Short<'a> {
    /// The FIPS-197 encryption round keys (11, 13 or 15 of them).
    round_keys: &'a [[u8; 16]],
    /// The table of `GhashKey::powers`.
    powers: &'a [u128; POWERS],
    nonce: &'a [u8; NONCE_BYTES],
    /// GHASH of the zero-padded AAD from a zero state (zero when there is none).
    aad_state: u128,
    aad_bytes: u64,
}

impl<'a> Short<'a> {
    /// The message, or `None` where this CPU lacks AES-NI, PCLMULQDQ, SSSE3 or SSE4.1 or the
    /// round keys are not AES's.
    #[inline(always)]
    pub(super) fn new(
        round_keys: &'a [[u8; 16]],
        powers: &'a [u128; POWERS],
        nonce: &'a [u8; NONCE_BYTES],
        aad_state: u128,
        aad_bytes: u64,
    ) -> Option<Self> {
        let aes = matches!(round_keys.len(), 11 | 13 | 15);
        (aes && super::aesni::is_available()).then_some(Short {
            round_keys,
            powers,
            nonce,
            aad_state,
            aad_bytes,
        })
    }

    /// Encrypts `data` (at most [`SHORT_TEXT_BYTES`]) in place and returns the tag.
    pub(super) fn seal(&self, data: &mut [u8]) -> [u8; 16] {
        // SAFETY: `new` checked the CPU's features; the round keys' count picks ROUNDS.
        unsafe {
            match self.round_keys.len() {
                11 => seal::<10>(self, data),
                13 => seal::<12>(self, data),
                _ => seal::<14>(self, data),
            }
        }
    }

    /// Checks `received` and only if it matches decrypts `data` (see [`open`]); returns
    /// whether it matched.
    pub(super) fn open(&self, data: &mut [u8], received: &[u8; 16]) -> bool {
        // SAFETY: as in `seal`.
        unsafe {
            match self.round_keys.len() {
                11 => open::<10>(self, data, received),
                13 => open::<12>(self, data, received),
                _ => open::<14>(self, data, received),
            }
        }
    }
}

impl Drop for Short<'_> {
    fn drop(&mut self) {
        self.aad_state.zeroize();
    }
}

/// Encrypts `data` (at most [`SHORT_TEXT_BYTES`]) in place and returns the tag.
///
/// # Safety
/// The CPU must have AES-NI, PCLMULQDQ, SSSE3 and SSE4.1.
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn seal<const ROUNDS: usize>(message: &Short<'_>, data: &mut [u8]) -> [u8; 16] {
    let mut text = TextBlocks::new(data);
    let (tag_mask, stream) = key_stream::<ROUNDS>(message.round_keys, message.nonce);
    let mut ciphertext = [_mm_setzero_si128(); TEXT_BLOCKS];
    for (index, block) in ciphertext.iter_mut().enumerate() {
        *block = _mm_and_si128(
            _mm_xor_si128(text.block(index), stream[index]),
            text.mask(index),
        );
        text.set_block(index, *block);
    }
    text.write_back(data);
    tag_bytes(tag(message, &ciphertext, data.len(), tag_mask))
}

/// Checks `received` against the tag of the ciphertext `data` (at most
/// [`SHORT_TEXT_BYTES`]), in constant time, and only if it matches decrypts `data` in place;
/// returns whether it matched (`data` is untouched otherwise).
///
/// # Safety
/// The CPU must have AES-NI, PCLMULQDQ, SSSE3 and SSE4.1.
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn open<const ROUNDS: usize>(
    message: &Short<'_>,
    data: &mut [u8],
    received: &[u8; 16],
) -> bool {
    let mut text = TextBlocks::new(data);
    let (tag_mask, stream) = key_stream::<ROUNDS>(message.round_keys, message.nonce);
    let ciphertext: [__m128i; TEXT_BLOCKS] = core::array::from_fn(|index| text.block(index));
    let expected = tag(message, &ciphertext, data.len(), tag_mask);
    // SAFETY: `received` is 16 readable bytes; `loadu` has no alignment requirement.
    let difference = _mm_xor_si128(expected, unsafe {
        _mm_loadu_si128(received.as_ptr().cast())
    });
    // One `ptest` over all 16 bytes: no early exit on the first differing byte.
    if _mm_testz_si128(difference, difference) == 0 {
        return false;
    }
    for (index, block) in ciphertext.iter().enumerate() {
        text.set_block(
            index,
            _mm_and_si128(_mm_xor_si128(*block, stream[index]), text.mask(index)),
        );
    }
    text.write_back(data);
    true
}

/// E_K(J0) and the key stream of the seven text blocks after it, from eight AES chains
/// run side by side.
#[inline]
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
fn key_stream<const ROUNDS: usize>(
    round_keys: &[[u8; 16]],
    nonce: &[u8; NONCE_BYTES],
) -> (__m128i, [__m128i; TEXT_BLOCKS]) {
    assert!(ROUNDS < MAX_ROUND_KEYS && round_keys.len() == ROUNDS + 1);
    let mut j0 = [0u8; 16];
    j0[..NONCE_BYTES].copy_from_slice(nonce);
    // SAFETY: `j0` is 16 readable bytes; `loadu` has no alignment requirement.
    let j0 = unsafe { _mm_loadu_si128(j0.as_ptr().cast()) };
    // Counter i is nonce || 0^24 || (1 + i): only the last byte differs (i < 8).
    let step = _mm_set_epi8(1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    let first = load_key(&round_keys[0]);
    let mut blocks = [_mm_setzero_si128(); COUNTER_BLOCKS];
    let mut counter = j0;
    for block in &mut blocks {
        counter = _mm_add_epi8(counter, step);
        *block = _mm_xor_si128(counter, first);
    }
    for key in &round_keys[1..ROUNDS] {
        let key = load_key(key);
        for block in &mut blocks {
            *block = _mm_aesenc_si128(*block, key);
        }
    }
    let last = load_key(&round_keys[ROUNDS]);
    for block in &mut blocks {
        *block = _mm_aesenclast_si128(*block, last);
    }
    let [tag_mask, stream @ ..] = blocks;
    (tag_mask, stream)
}

/// E_K(J0) for a 96-bit `nonce` (J0 = nonce || 0^31 || 1): the mask of a message's tag,
/// as one AES chain of its own. The empty `asm!` after it (an instruction-free barrier the
/// compiler may not move) keeps the chain where the caller puts it, before the message's
/// batches, so that the core runs it beside them rather than after them, where its latency
/// (10-14 rounds) would add to the message's.
///
/// # Safety
/// The CPU must have AES-NI, PCLMULQDQ, SSSE3 and SSE4.1 (as for [`Short`]); `round_keys`
/// holds AES's 11, 13 or 15 round keys.
#[inline]
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
pub(super) fn tag_mask(round_keys: &[[u8; 16]], nonce: &[u8; NONCE_BYTES]) -> __m128i {
    let j0 = super::nonce_pre_counter(nonce);
    let (first, rest) = round_keys.split_first().expect("AES has round keys");
    let (last, middle) = rest.split_last().expect("AES has round keys");
    // SAFETY: `j0` is 16 readable bytes; `loadu` has no alignment requirement.
    let mut block = _mm_xor_si128(
        unsafe { _mm_loadu_si128(j0.as_ptr().cast()) },
        load_key(first),
    );
    for key in middle {
        block = _mm_aesenc_si128(block, load_key(key));
    }
    block = _mm_aesenclast_si128(block, load_key(last));
    // SAFETY: the template is a comment: it executes nothing and leaves the register as it
    // was.
    unsafe {
        core::arch::asm!(
            "/* {block} */",
            block = inout(xmm_reg) block,
            options(nomem, nostack, preserves_flags)
        );
    }
    block
}

/// A message's tag from the GHASH `state` over its AAD and text and its `tag_mask`: (state
/// + lengths) * H, byte-swapped, masked. `powers` is the table of `GhashKey::powers`.
///
/// # Safety
/// As for [`tag_mask`].
#[inline]
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
pub(super) fn length_tag(
    powers: &[u128; POWERS],
    state: u128,
    aad_bytes: u64,
    text_bytes: u64,
    tag_mask: __m128i,
) -> [u8; 16] {
    // SAFETY: a `u128` is 16 readable bytes; `loadu` has no alignment requirement.
    let load = |element: &u128| unsafe { _mm_loadu_si128((element as *const u128).cast()) };
    let h = with_halves_sum(load(&powers[POWERS - 1]));
    let hashed = reduce(product(
        _mm_xor_si128(load(&state), lengths(aad_bytes, text_bytes)),
        h,
    ));
    tag_bytes(masked_tag(hashed, tag_mask))
}

/// GCM's length block as a GHASH element: AAD bits in the high half, text bits in the low.
#[inline]
#[target_feature(enable = "sse2")]
pub(super) fn lengths(aad_bytes: u64, text_bytes: u64) -> __m128i {
    _mm_set_epi64x(
        aad_bytes.wrapping_mul(8) as i64,
        text_bytes.wrapping_mul(8) as i64,
    )
}

/// The tag: the finished GHASH element byte-swapped (to the order of the tag's bytes) and
/// XORed with E_K(J0).
#[inline]
#[target_feature(enable = "ssse3")]
pub(super) fn masked_tag(hashed: __m128i, tag_mask: __m128i) -> __m128i {
    let reverse = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    _mm_xor_si128(_mm_shuffle_epi8(hashed, reverse), tag_mask)
}

/// A tag's 16 bytes, in the order they are stored.
#[inline]
#[target_feature(enable = "sse2")]
pub(super) fn tag_bytes(tag: __m128i) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    // SAFETY: `bytes` is 16 writable bytes; `storeu` has no alignment requirement.
    unsafe { _mm_storeu_si128(bytes.as_mut_ptr().cast(), tag) };
    bytes
}

/// A round key in a register.
#[inline]
fn load_key(key: &[u8; 16]) -> __m128i {
    // SAFETY: a round key is 16 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm_loadu_si128(key.as_ptr().cast()) }
}

/// The tag of a short message: GHASH over the AAD state, the zero-padded `ciphertext` blocks
/// of a text of `length` bytes and the length block, one product per block and one
/// reduction, masked with E_K(J0). Byte order as stored.
#[inline]
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
fn tag(
    message: &Short<'_>,
    ciphertext: &[__m128i; TEXT_BLOCKS],
    length: usize,
    tag_mask: __m128i,
) -> __m128i {
    let reverse = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let blocks = length.div_ceil(16);
    // The length block as a GHASH element: AAD bits in the high half, text bits in the low.
    let lengths = lengths(message.aad_bytes, length as u64);
    // SAFETY: a `u128` is 16 readable bytes; `loadu` has no alignment requirement.
    let mut first = unsafe { _mm_loadu_si128((&message.aad_state as *const u128).cast()) };
    // Block k of the n + 1 (text, then lengths) is multiplied by H^(n + 1 - k).
    let powers = &message.powers[POWERS - (blocks + 1)..];
    let element = |index: usize| {
        if index < blocks {
            _mm_shuffle_epi8(ciphertext[index], reverse)
        } else {
            lengths
        }
    };
    let power = |index: usize| {
        // SAFETY: as above.
        unsafe { _mm_loadu_si128((&powers[index] as *const u128).cast()) }
    };
    first = _mm_xor_si128(first, element(0));
    let mut sum: Products = product(first, with_halves_sum(power(0)));
    for index in 1..=blocks {
        let power = power(index);
        sum = add(sum, product(element(index), with_halves_sum(power)));
    }
    masked_tag(reduce(sum), tag_mask)
}

/// The text in zero-padded blocks on the stack, wiped on drop.
struct TextBlocks {
    bytes: [u8; SHORT_TEXT_BYTES],
    length: usize,
}

impl TextBlocks {
    fn new(data: &[u8]) -> Self {
        assert!(data.len() <= SHORT_TEXT_BYTES, "a short text");
        let mut bytes = [0u8; SHORT_TEXT_BYTES];
        bytes[..data.len()].copy_from_slice(data);
        TextBlocks {
            bytes,
            length: data.len(),
        }
    }

    /// Block `index` (zero past the text).
    #[inline]
    fn block(&self, index: usize) -> __m128i {
        let block: &[u8; 16] = self.bytes[16 * index..16 * index + 16]
            .try_into()
            .expect("16 bytes");
        // SAFETY: `block` is 16 readable bytes; `loadu` has no alignment requirement.
        unsafe { _mm_loadu_si128(block.as_ptr().cast()) }
    }

    #[inline]
    fn set_block(&mut self, index: usize, value: __m128i) {
        let block = &mut self.bytes[16 * index..16 * index + 16];
        // SAFETY: `block` is 16 writable bytes; `storeu` has no alignment requirement.
        unsafe { _mm_storeu_si128(block.as_mut_ptr().cast(), value) };
    }

    /// All ones over the bytes of block `index` within the text, zero past it.
    #[inline]
    fn mask(&self, index: usize) -> __m128i {
        const ONES_THEN_ZEROS: [u8; 32] = {
            let mut bytes = [0u8; 32];
            let mut index = 0;
            while index < 16 {
                bytes[index] = 0xff;
                index += 1;
            }
            bytes
        };
        let within = self.length.saturating_sub(16 * index).min(16);
        let window = &ONES_THEN_ZEROS[16 - within..32 - within];
        // SAFETY: `window` is 16 readable bytes; `loadu` has no alignment requirement.
        unsafe { _mm_loadu_si128(window.as_ptr().cast()) }
    }

    fn write_back(&self, data: &mut [u8]) {
        data.copy_from_slice(&self.bytes[..self.length]);
    }
}

impl Drop for TextBlocks {
    fn drop(&mut self) {
        // One 16-byte volatile store per block the text reached, rather than one per byte.
        for block in self.bytes[..self.length.div_ceil(16) * 16].chunks_exact_mut(16) {
            // SAFETY: `block` is 16 writable bytes, and `[u8; 16]` has alignment 1.
            unsafe { core::ptr::write_volatile(block.as_mut_ptr().cast::<[u8; 16]>(), [0; 16]) };
        }
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    }
}
