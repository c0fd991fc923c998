//! Stitched AES-GCM on 512-bit VAES and VPCLMULQDQ: one loop runs the AES rounds of a batch
//! of [`BATCH_BLOCKS`] counter blocks and, between them, the carry-less multiplications of
//! GHASH over a batch of ciphertext, so the AES units and the multiplier work at the same
//! time and the data passes through the core once.
//!
//! A batch is eight zmm registers of four blocks: eight independent AES chains (enough to
//! cover the latency of `vaesenc`), and 32 GHASH products summed unreduced with H^32..H^1
//! and reduced once per batch (the aggregated reduction of `ghash::x86_vpclmul`, whose
//! helpers this module reuses). Encryption hashes the ciphertext of the batch two back
//! ([`ENCRYPT_HASH_LAG`]) while the current one is in the AES rounds (its own ciphertext does
//! not exist yet), and the last two after the loop; texts of at most [`SHORT_LAG_BATCHES`]
//! batches hash one back, so that fewer batches are hashed alone after the loop (AES-128-GCM
//! encryption of 1 KiB in L1 went from about 16.7 to 18 GB/s on Zen 5, 2 KiB +1-3 %, 4 KiB
//! within noise). Decryption knows its ciphertext up front and hashes the batch it is
//! decrypting.
//!
//! Counters come from `parcrypt_ciphers::aes::Vaes512Counters`, shared with the CTR kernel:
//! big-endian blocks made with one `vpaddd` per register while the last counter byte does
//! not carry within the batch (seven batches in eight), byte-reversed lanes and one
//! `vpshufb` per register otherwise; the caller guarantees the low 32-bit word does not wrap
//! within a call.
//!
//! Long texts apart (from `parcrypt_ciphers::aes::STREAM_FROM_BYTES` up, the output 64-byte
//! aligned: `GcmKey` runs the blocks before the boundary two-pass) are written with
//! streaming stores, as the CTR kernel writes them, and encryption then hashes its earlier
//! batches from a small ring on the stack. On the 2-core Zen 5 VM, AES-128-GCM encryption
//! from one 256 MiB buffer into another went from about 17 to 21.5 GB/s on one thread and
//! from 20 to 26 on two.
//!
//! What limits it on AMD Zen 4 (measured, this module's history): the loop runs at CTR's
//! rate with the carry-less multiplications taken out, and at about 0.6x of it with them,
//! whichever way they are arranged: schoolbook or Karatsuba, one or two vectors a round,
//! pinned between rounds or left to the compiler, 256- or 512-bit multiplies, prefetching.
//! The 512-bit `vpclmulqdq` shares the execution ports of `vaesenc` there, so GHASH adds to
//! the AES time rather than hiding under it.
//!
//! On Zen 5 (the 2-core VM) a 512-bit `vaesenc` issues twice a cycle (0.121 ns) and
//! `vpclmulqdq` once every two cycles (0.485 ns); they overlap only in part (32 of the one
//! take 3.84 ns, with 8 of the other beside them 4.77, in a probe outside the project). The
//! example `gcm512_bound` times the same work as a batch written plainly: AES alone about
//! 10 ns per 512 bytes, GHASH alone 12.5, both with a batch's 11 round keys and 8 power
//! vectors 16.4 (31 GB/s), both with one register standing for every key and power 15 (34
//! GB/s). This loop takes about 16.5 ns (31 GB/s for AES-128, in L1): the rate of the plain
//! loop. It took 17.5 with one vector's products a round, before the pairs added by
//! three-way XORs. Not the cause: the reduction's dependency from one batch to the next
//! (taking it out, output wrong, gained 2 %).

#![deny(unsafe_op_in_unsafe_fn)]

use core::arch::x86_64::*;

use parcrypt_ciphers::aes::{streams_output, Vaes512Counters};

use crate::ghash::x86_vpclmul::{
    add, add2, byte_reverse_lanes, load_powers, product, reduce, with_halves_sum, Power, Products,
};
use crate::ghash::{MESSAGE_POWERS, POWERS};

use super::stitched::{round_key_registers, MAX_ROUND_KEYS};
use super::{short, Text, NONCE_BYTES};

/// Blocks per batch: one GHASH reduction, eight zmm registers.
pub(super) const BATCH_BLOCKS: usize = POWERS;
/// Bytes per batch.
pub(super) const BATCH_BYTES: usize = 16 * BATCH_BLOCKS;
const VECTORS: usize = BATCH_BLOCKS / 4;
/// How many batches behind the AES encryption hashes the ciphertext: the batch two back
/// rather than the one just written, whose stores may still be on their way to L1 (about 6%
/// faster on Zen 5 than one back).
const ENCRYPT_HASH_LAG: usize = 2;
/// Texts of at most this many batches are hashed one batch behind instead of
/// [`ENCRYPT_HASH_LAG`].
const SHORT_LAG_BATCHES: usize = 8;
/// How far ahead of the batch in the rounds the kernel prefetches input and output when
/// they are apart. At 256 MiB on Zen 5 (one core, encryption) both prefetches ran 1.4-1.8x
/// faster than none (about 16-17 GB/s against 9.5-11); 1, 3 and 4 KiB measured within noise
/// of 2 KiB, the input alone about 0.9x of both.
const PREFETCH_APART_BYTES: usize = 2048;
/// How far ahead the kernel prefetches in place (and half as far, too). At 256 MiB on Zen 5
/// in place, separate runs (each process gets other physical pages) gave without prefetch
/// 12.5-22 GB/s (mostly 12.5), 8 KiB alone 16.6-24.6 (bimodal), 4 KiB alone 16-24, and 8
/// plus 4 KiB 23.2-27.0; AES-128-CTR in place runs about 25 there.
const PREFETCH_IN_PLACE_BYTES: usize = 8192;
/// The shortest text the kernel prefetches for: shorter ones are likely in the caches
/// already, where the prefetches only cost issue slots (AES-256-GCM at 1 and 4 MiB in cache
/// ran about 5% slower with them).
const PREFETCH_FROM_BYTES: usize = 8 << 20;

// Eight vectors name the operands of `keep_order`; AES-128's 9 middle rounds carry
// the products of the four pairs of vectors (rounds 1, 3, 5, 7) and the reduction (round 8).
const _: () = assert!(VECTORS == 8 && BATCH_BLOCKS.is_multiple_of(4));

/// Whether this CPU has every feature [`process`] enables.
pub(super) fn is_available() -> bool {
    is_x86_feature_detected!("aes")
        && is_x86_feature_detected!("vaes")
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("vpclmulqdq")
        && is_x86_feature_detected!("pclmulqdq")
        && is_x86_feature_detected!("avx2")
}

/// Encrypts (or with `DECRYPT` decrypts) `text` with AES-CTR from `counter`, reading its
/// input and writing its output in one pass (in place when they are the same), and
/// continues the running GHASH `state` over its ciphertext.
///
/// `round_keys` holds the `ROUNDS + 1` FIPS-197 encryption round keys; `powers` is the
/// table of `GhashKey::powers`. `text.len()` must be a multiple of [`BATCH_BYTES`], and the
/// low 32-bit word of `counter` must not wrap within `text` (both asserted or relied on by
/// the caller: a wrap would only give wrong output, never unsound memory access).
///
/// # Safety
/// The CPU must have every feature [`is_available`] checks, and `text` must keep the
/// contract of [`Text`].
#[target_feature(enable = "aes,vaes,avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
pub(super) unsafe fn process<const ROUNDS: usize, const DECRYPT: bool>(
    round_keys: &[[u8; 16]],
    powers: &[u128; POWERS],
    counter: &[u8; 16],
    state: &mut u128,
    text: Text,
) {
    // Long texts apart, with a 64-byte aligned output (the caller aligns it), are written
    // with streaming stores, as the CTR kernel does. Encryption then hashes its earlier
    // ciphertext from a ring on the stack instead of reading it back from the output, which
    // the streaming stores have sent past the caches. Two instances of the loop, so that the
    // one for shorter texts is the loop it was (AES-128-GCM in cache ran about 4 % slower
    // with the choice made inside it).
    // (A text of STREAM_FROM_BYTES whose output the caller had to align reaches here one
    // batch short: the blocks before the boundary and the partial batch at the end are not
    // the kernel's. It streams too, so that a job split into items of that length does.)
    let stream = streams_output(text.input(), text.output(), text.len() + BATCH_BYTES)
        && (text.output() as usize).is_multiple_of(64);
    // SAFETY: the caller's guarantees; the streaming instance's output is 64-byte aligned.
    unsafe {
        if stream {
            process_batches::<ROUNDS, DECRYPT, true>(round_keys, powers, counter, state, text);
        } else {
            process_batches::<ROUNDS, DECRYPT, false>(round_keys, powers, counter, state, text);
        }
    }
}

/// The loop of [`process`]; with `STREAM`, the output is 64-byte aligned and written with
/// streaming stores.
///
/// # Safety
/// As for [`process`].
#[target_feature(enable = "aes,vaes,avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
unsafe fn process_batches<const ROUNDS: usize, const DECRYPT: bool, const STREAM: bool>(
    round_keys: &[[u8; 16]],
    powers: &[u128; POWERS],
    counter: &[u8; 16],
    state: &mut u128,
    text: Text,
) {
    let keys = round_key_registers::<ROUNDS, __m512i>(round_keys, _mm512_setzero_si512(), |key| {
        _mm512_broadcast_i32x4(key)
    });
    // H^32..H^1, four a vector, with the sums of their halves for Karatsuba.
    let batch_powers: [Power; VECTORS] =
        core::array::from_fn(|vector| with_halves_sum(load_powers(&powers[vector * 4..])));
    let mut counters = Vaes512Counters::new(counter);

    // SAFETY: a `u128` is 16 readable bytes; `loadu` has no alignment requirement.
    let mut accumulator = unsafe { _mm_loadu_si128((state as *const u128).cast()) };

    let batches = text.batches(BATCH_BYTES);
    let apart = text.input() != text.output().cast_const();
    let prefetch = text.len() >= PREFETCH_FROM_BYTES;
    let mut ring = core::mem::MaybeUninit::<Ring>::uninit();
    let ring: *mut u8 = ring.as_mut_ptr().cast();
    // Everything is read at `input` and written at `output`, at offsets below `text.len()`:
    // encryption reads an earlier batch's ciphertext back from the output (from L1) instead
    // of keeping it in registers, which would only spill them to the stack every batch.
    let (input, output) = (text.input(), text.output());

    // One batch: the AES rounds of the batch at `$batch` and, with `$hash`, the GHASH of the
    // batch at `$hashed` (the same one when decrypting, an earlier one when encrypting): the
    // products of vectors 2k and 2k + 1 after AES round 2k + 1, added to the sums with one
    // three-way XOR per part, and the reduction after round VECTORS. (One vector a round,
    // each added with its own XORs, ran 6-7 % slower on Zen 5: fewer ALU operations leave
    // more room for the AES rounds.) A macro rather than a function so that it is always
    // inlined (out of line, every round key and power went through memory on each call),
    // and with every round written out, so the compiler emits no loop over the rounds.
    macro_rules! batch {
        ($index:expr, $hashed:expr, $hash:expr) => {{
            // SAFETY: `$index < batches`, so the batch lies within the text.
            let source: *const u8 = unsafe { input.add($index * BATCH_BYTES) };
            // SAFETY: as above.
            let target: *mut u8 = unsafe { output.add($index * BATCH_BYTES) };
            let mut hashed: *const u8 = $hashed;
            // Prefetch the lines ahead of the batch in the rounds (for reading: the write
            // hint compiles to the same `prefetcht0` without the `prfchw` feature). Out of
            // place: input and output PREFETCH_APART_BYTES ahead. In place: the buffer at two
            // distances, PREFETCH_IN_PLACE_BYTES and half of it. Prefetches never fault, and
            // `wrapping_add` keeps the address arithmetic defined past the end of the text.
            if prefetch {
                for vector in 0..VECTORS {
                    if apart {
                        let ahead = PREFETCH_APART_BYTES + 64 * vector;
                        _mm_prefetch::<_MM_HINT_T0>(source.wrapping_add(ahead).cast());
                        if !STREAM {
                            // (Streaming stores need no line of the output in the cache.)
                            _mm_prefetch::<_MM_HINT_T0>(
                                target.wrapping_add(ahead).cast_const().cast(),
                            );
                        }
                    } else {
                        let far = PREFETCH_IN_PLACE_BYTES + 64 * vector;
                        let near = PREFETCH_IN_PLACE_BYTES / 2 + 64 * vector;
                        _mm_prefetch::<_MM_HINT_T0>(source.wrapping_add(far).cast());
                        _mm_prefetch::<_MM_HINT_T0>(source.wrapping_add(near).cast());
                    }
                }
            }
            let mut blocks: [__m512i; VECTORS] = counters.next_batch::<VECTORS>();
            for block in &mut blocks {
                *block = _mm512_xor_si512(*block, keys[0]);
            }
            let mut sum = Products::zero();
            macro_rules! round {
                ($round:expr) => {
                    if $round < ROUNDS {
                        for block in &mut blocks {
                            *block = _mm512_aesenc_epi128(*block, keys[$round]);
                        }
                        if $hash {
                            if $round < VECTORS && $round % 2 == 1 {
                                let vector = $round - 1;
                                // SAFETY: `hashed` is a whole batch and `vector + 1 < VECTORS`.
                                let mut left = unsafe { load_reversed(hashed, vector) };
                                if vector == 0 {
                                    left =
                                        _mm512_xor_si512(left, _mm512_zextsi128_si512(accumulator));
                                }
                                // SAFETY: as above.
                                let next = unsafe { load_reversed(hashed, vector + 1) };
                                sum = add2(
                                    sum,
                                    product(left, batch_powers[vector]),
                                    product(next, batch_powers[vector + 1]),
                                );
                            } else if $round == VECTORS {
                                accumulator = reduce(sum);
                            }
                        }
                        keep_order(&mut blocks, sum.parts_mut(), &mut hashed);
                    }
                };
            }
            round!(1);
            round!(2);
            round!(3);
            round!(4);
            round!(5);
            round!(6);
            round!(7);
            round!(8);
            round!(9);
            round!(10);
            round!(11);
            round!(12);
            round!(13);
            for (vector, block) in blocks.iter().enumerate() {
                // SAFETY: vector `vector` of the batch is 64 bytes within it, read (after
                // every read of it for GHASH, when in place) and then written; no alignment
                // is needed.
                unsafe {
                    let data = _mm512_loadu_si512(source.add(64 * vector).cast());
                    // The last round ends with a key XOR: XORing the data into that key
                    // takes the data XOR off the end of the chain.
                    let result =
                        _mm512_aesenclast_epi128(*block, _mm512_xor_si512(keys[ROUNDS], data));
                    if STREAM {
                        // `target` is 64-byte aligned (the output is, and batches are whole
                        // multiples of 64 bytes); the ring slot of this batch is one of
                        // `Ring`'s 64-byte aligned batches.
                        _mm512_stream_si512(target.add(64 * vector).cast(), result);
                        if !DECRYPT {
                            let slot = ring.add(ring_slot($index) + 64 * vector);
                            _mm512_store_si512(slot.cast(), result);
                        }
                    } else {
                        _mm512_storeu_si512(target.add(64 * vector).cast(), result);
                    }
                }
            }
        }};
    }

    // How far behind encryption hashes: ENCRYPT_HASH_LAG, but one batch for short texts,
    // whose last `lag` batches are hashed after the loop without AES rounds to hide under
    // (a 1 KiB text is two batches: with a lag of two it would not stitch at all). Streaming
    // texts are long, so the ring's size holds.
    let lag = if STREAM || batches > SHORT_LAG_BATCHES {
        ENCRYPT_HASH_LAG
    } else {
        1
    };
    // Encryption's first batches have no ciphertext behind them to hash yet.
    let unhashed = if DECRYPT { 0 } else { batches.min(lag) };
    for index in 0..unhashed {
        batch!(index, input, false);
    }
    for index in unhashed..batches {
        let hashed = if DECRYPT {
            // SAFETY: `index < batches`: decryption hashes the input batch it decrypts.
            unsafe { input.add(index * BATCH_BYTES) }
        } else {
            // SAFETY: `lag <= index < batches`: that output batch lies within the text and
            // was written by an earlier batch (streaming, where `lag` is ENCRYPT_HASH_LAG,
            // its ring slot, which this batch does not overwrite: it writes slot `index`, not
            // `index - LAG`).
            unsafe { encrypted(STREAM, ring, output, index - lag) }
        };
        batch!(index, hashed, true);
    }

    // Encryption's last batches, not hashed in the loop, in order.
    if !DECRYPT {
        for index in batches.saturating_sub(lag)..batches {
            // SAFETY: `index < batches`: the output batch lies within the text, and it was
            // one of the last `lag`, so its ring slot (when streaming) still holds it.
            let last = unsafe { encrypted(STREAM, ring, output, index) };
            // SAFETY: `last` is a whole batch within the text.
            let first = unsafe { load_reversed(last, 0) };
            let first = _mm512_xor_si512(first, _mm512_zextsi128_si512(accumulator));
            let mut sum = product(first, batch_powers[0]);
            for (vector, power) in batch_powers.iter().enumerate().skip(1) {
                // SAFETY: as above, and `vector < VECTORS`.
                sum = add(sum, product(unsafe { load_reversed(last, vector) }, *power));
            }
            accumulator = reduce(sum);
        }
    }

    if STREAM {
        // Streaming stores are weakly ordered: make them visible before the caller (or
        // another thread it hands the output to) goes on.
        _mm_sfence();
    }
    // SAFETY: a `u128` is 16 writable bytes; `storeu` has no alignment requirement.
    unsafe { _mm_storeu_si128((state as *mut u128).cast(), accumulator) };
}

/// Encrypts (or with `DECRYPT` decrypts) a whole message under a 96-bit `nonce` from the
/// text's input to its output (in place when they are the same) and returns its tag: the
/// one call a message of any length takes, where the generic path makes E_K(J0), runs the
/// kernel, runs the last partial batch through CTR and GHASH calls of its own and hashes the
/// length block with another (AES-128-GCM `seal` of 1 KiB on the Zen 5 VM: about 111 ns
/// that way, of which 57 in the kernel).
///
/// - E_K(J0), the tag's mask, is one AES chain of its own (`short::tag_mask`), issued first
///   so that the core runs it beside the batches instead of after them.
/// - The whole batches go through [`process`], from counter J0 + 1, continuing the AAD's
///   GHASH state `aad_state`.
/// - The rest (under a batch) is [`last_batch`]: one batch of AES with masked loads and
///   stores, and one reduction over its blocks and the length block. With no rest, the
///   length block is one product (`short::length_tag`).
///
/// `powers` is `GhashKey::message_powers` (H^33 first). `aad_bytes` is the AAD's length.
///
/// # Safety
/// The CPU must have every feature [`is_available`] checks, `text` must keep the contract of
/// [`Text`] and be at most `MAX_TEXT_BYTES` long (so the counter's low word, 2 at the first
/// text block, never wraps), and `round_keys` must hold the `ROUNDS + 1` FIPS-197 round keys.
#[target_feature(enable = "aes,vaes,avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
pub(super) unsafe fn message<const ROUNDS: usize, const DECRYPT: bool>(
    round_keys: &[[u8; 16]],
    powers: &[u128; MESSAGE_POWERS],
    nonce: &[u8; NONCE_BYTES],
    aad_state: u128,
    aad_bytes: u64,
    text: Text,
) -> [u8; 16] {
    assert!(ROUNDS < MAX_ROUND_KEYS && round_keys.len() == ROUNDS + 1);
    // J0 = nonce || 0^31 || 1; text block i takes the counter J0 + 1 + i.
    let counter_block = |low_word: u32| {
        let mut block = super::nonce_pre_counter(nonce);
        block[NONCE_BYTES..].copy_from_slice(&low_word.to_be_bytes());
        block
    };
    let tag_mask = short::tag_mask(round_keys, nonce);
    let whole = text.len() / BATCH_BYTES * BATCH_BYTES;
    let (batches, rest) = text.split_at(whole);
    let mut state = aad_state;
    let table: &[u128; POWERS] = powers[1..=POWERS]
        .try_into()
        .expect("the extended table holds the table");
    if whole > 0 {
        // SAFETY: the caller's guarantees; `batches` is whole batches, within which the low
        // word (2 up to at most 2^32 - 1) does not wrap.
        unsafe {
            process::<ROUNDS, DECRYPT>(round_keys, table, &counter_block(2), &mut state, batches)
        };
    }
    let text_bytes = text.len() as u64;
    if rest.len() == 0 {
        return short::length_tag(table, state, aad_bytes, text_bytes, tag_mask);
    }
    // SAFETY: a `u128` is 16 readable bytes; `loadu` has no alignment requirement.
    let state = unsafe { _mm_loadu_si128((&state as *const u128).cast()) };
    // The low word past the last whole batch (at most 2^32 - 1 with a block left).
    let next = ((whole / 16) as u32).wrapping_add(2);
    let lengths = short::lengths(aad_bytes, text_bytes);
    // SAFETY: the caller's guarantees, and `rest` is under a batch.
    let hash = unsafe {
        last_batch::<ROUNDS, DECRYPT>(
            round_keys,
            powers,
            &counter_block(next),
            state,
            lengths,
            rest,
        )
    };
    short::tag_bytes(short::masked_tag(hash, tag_mask))
}

/// The end of [`message`]: encrypts (or decrypts) `rest`, the text past its whole batches
/// (1 byte to a batch less one), from `counter`, and returns the GHASH of `state` continued
/// over its zero-padded ciphertext and the length block `lengths` (as a GHASH element), in
/// one reduction.
///
/// The AES part is always a batch's eight registers whatever the length: the chain of rounds,
/// not their number, sets the time of so few. Loads and stores are masked to the text, so
/// nothing outside it is read or written, and the ciphertext GHASH sees is zero past the
/// text. With `n` blocks of text, block `j` is multiplied by H^(n + 1 - j) and the length
/// block by H^1, from the extended table (H^33 when `n` is 32); the table's zeros past H^1
/// meet only zero blocks.
///
/// # Safety
/// As for [`message`]; `rest` is shorter than a batch and its counter's low word does not
/// wrap within it.
#[inline]
#[target_feature(enable = "aes,vaes,avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
unsafe fn last_batch<const ROUNDS: usize, const DECRYPT: bool>(
    round_keys: &[[u8; 16]],
    powers: &[u128; MESSAGE_POWERS],
    counter: &[u8; 16],
    state: __m128i,
    lengths: __m128i,
    rest: Text,
) -> __m128i {
    let length = rest.len();
    debug_assert!((1..BATCH_BYTES).contains(&length));
    let key = |round: usize| {
        // SAFETY: a round key is 16 readable bytes; `loadu` has no alignment requirement.
        _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(round_keys[round].as_ptr().cast()) })
    };
    let mut blocks: [__m512i; VECTORS] = Vaes512Counters::new(counter).next_batch::<VECTORS>();
    let first = key(0);
    for block in &mut blocks {
        *block = _mm512_xor_si512(*block, first);
    }
    for round in 1..ROUNDS {
        let round_key = key(round);
        for block in &mut blocks {
            *block = _mm512_aesenc_epi128(*block, round_key);
        }
    }
    // The ciphertext, byte-reversed per block; a ninth vector for the length block when the
    // text fills all eight.
    let mut hashed = [_mm512_setzero_si512(); VECTORS + 1];
    let last = key(ROUNDS);
    for (vector, block) in blocks.iter().enumerate() {
        let within = length.saturating_sub(64 * vector);
        let mask: __mmask64 = if within >= 64 {
            u64::MAX
        } else {
            (1u64 << within) - 1
        };
        // `wrapping_add`: past the text the mask is empty and nothing is accessed.
        let source = rest.input().wrapping_add(64 * vector);
        let target = rest.output().wrapping_add(64 * vector);
        // SAFETY: masked loads and stores touch only the bytes their mask selects (the rest
        // can neither be accessed nor fault): here the ones within `rest`, readable at its
        // input and writable at its output. Each vector is read before it is written.
        let data = unsafe { _mm512_maskz_loadu_epi8(mask, source.cast()) };
        let result = _mm512_aesenclast_epi128(*block, _mm512_xor_si512(last, data));
        // SAFETY: as above.
        unsafe { _mm512_mask_storeu_epi8(target.cast(), mask, result) };
        let ciphertext = if DECRYPT {
            data
        } else {
            _mm512_maskz_mov_epi8(mask, result)
        };
        hashed[vector] = byte_reverse_lanes(ciphertext);
    }
    let text_blocks = length.div_ceil(16);
    // The length block after the text's last block, the state into the first block.
    let (vector, lane) = (text_blocks / 4, text_blocks % 4);
    hashed[vector] = _mm512_xor_si512(
        hashed[vector],
        _mm512_maskz_broadcast_i32x4(0xf << (4 * lane), lengths),
    );
    hashed[0] = _mm512_xor_si512(hashed[0], _mm512_zextsi128_si512(state));
    // Block j of the n + 1 takes H^(n + 1 - j): entry POWERS - n + j of the extended table.
    let offset = POWERS - text_blocks;
    let mut sum = Products::zero();
    for (index, data) in hashed.iter().enumerate().take(vector + 1) {
        let power = with_halves_sum(load_powers(&powers[offset + 4 * index..]));
        sum = add(sum, product(*data, power));
    }
    reduce(sum)
}

/// The last batches of ciphertext an encryption that streams its output hashes from: one
/// more than [`ENCRYPT_HASH_LAG`], so that a batch never overwrites the one it hashes.
#[repr(C, align(64))]
struct Ring([[u8; BATCH_BYTES]; ENCRYPT_HASH_LAG + 1]);

/// Where batch `index`'s ciphertext sits in the ring, in bytes from its start.
fn ring_slot(index: usize) -> usize {
    (index % (ENCRYPT_HASH_LAG + 1)) * BATCH_BYTES
}

/// The ciphertext of batch `index` for GHASH: in the ring when streaming, else in the
/// output.
///
/// # Safety
/// `index` is a batch within the text, already written; when streaming, one of the last
/// [`ENCRYPT_HASH_LAG`] + 1 written, so its ring slot still holds it.
unsafe fn encrypted(stream: bool, ring: *mut u8, output: *mut u8, index: usize) -> *const u8 {
    if stream {
        // SAFETY: a slot lies within the ring.
        unsafe { ring.add(ring_slot(index)) }.cast_const()
    } else {
        // SAFETY: the batch lies within the text (the caller).
        unsafe { output.add(index * BATCH_BYTES) }.cast_const()
    }
}

/// Vector `vector` (four blocks) of the batch at `batch`, byte-reversed per block for GHASH.
///
/// # Safety
/// `batch` must point to [`BATCH_BYTES`] readable bytes and `vector` be below [`VECTORS`].
#[inline]
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,avx2")]
unsafe fn load_reversed(batch: *const u8, vector: usize) -> __m512i {
    debug_assert!(vector < VECTORS);
    // SAFETY: the caller guarantees the 64 bytes are readable; no alignment is needed.
    byte_reverse_lanes(unsafe { _mm512_loadu_si512(batch.add(64 * vector).cast()) })
}

/// Makes the compiler issue a batch round by round: an empty `asm!` that takes and returns
/// the eight AES vectors, the three GHASH sums and the pointer GHASH loads from, placed after
/// each round, costs no instruction but makes round r+1 of any vector depend on round r of
/// all of them (the round-major order of the CTR kernels of `parcrypt-ciphers`), the
/// products placed in a round come before it (the sums pass through it) and the loads of
/// later rounds after it (the pointer does).
///
/// Left alone, LLVM emits each vector's whole round chain before the next one's and sinks
/// every carry-less multiplication of a batch below its AES rounds. On Zen 4 the pinned
/// order measured within 2% of the compiler's own (the multiplier shares the AES ports
/// there); it is kept so the interleaving the kernel intends is the one it gets.
#[inline]
#[target_feature(enable = "avx512f")]
// The pointer only passes through the empty template: nothing is read or written.
#[allow(clippy::pointers_in_nomem_asm_block)]
fn keep_order(blocks: &mut [__m512i; VECTORS], sums: [&mut __m512i; 3], hashed: &mut *const u8) {
    let [b0, b1, b2, b3, b4, b5, b6, b7] = blocks;
    let [low, middle, high] = sums;
    super::stitched::pin_registers!(
        zmm_reg: b0, b1, b2, b3, b4, b5, b6, b7, low, middle, high;
        reg: hashed
    );
}
