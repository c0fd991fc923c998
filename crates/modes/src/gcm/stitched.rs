//! What the stitched AES-GCM kernels share: the round-key registers of all three, and the
//! loop of the two that keep no ring and stream nothing (`aesni` on 128-bit registers,
//! `vaes256` on 256-bit ones), written once as [`stitched_loop`] over the register width.
//!
//! A kernel module that expands [`stitched_loop`] supplies, as items of its own, the register
//! type `Vector`, `VECTORS` (registers per batch, eight: one AES chain each), `BATCH_BYTES`,
//! `Products` with `product`, `add` and `reduce` (the Karatsuba products of a register,
//! their unreduced sums, and the reduction of a sum to one 128-bit element: the arithmetic
//! `ghash::karatsuba_lanes` expands at the module's width), and these `#[inline]` functions with the kernel's target features:
//! - `widen_key(__m128i) -> Vector`: a round key in every lane;
//! - `batch_powers(&[u128; POWERS]) -> [Power<Vector>; VECTORS]`: H^n..H^1 for a batch;
//! - `byte_reverse() -> Vector`: the `pshufb` mask that byte-reverses each block;
//! - `first_counters(&[u8; 16], Vector) -> Vector`: the counter blocks of the first
//!   register, byte-reversed;
//! - `with_state(Vector, __m128i) -> Vector`: the running GHASH state added to the first
//!   block of a register;
//! - `next_counter_block(&mut Vector, Vector, Vector) -> Vector` (the counters back in
//!   byte order XORed with the first round key, the counters advanced past them),
//!   `aes_round(Vector, Vector) -> Vector`, `unsafe last_round(Vector, Vector, *const u8,
//!   *mut u8)` (the last round, XORed with the register's text at the first pointer and
//!   stored at the second) and `unsafe load_reversed(*const u8, usize, Vector) -> Vector`,
//!   which [`register_operations`] expands;
//! - `keep_round_order(&mut [Vector; VECTORS])`, which [`keep_round_order`] expands.
//!
//! The macro's own code is then the same instructions at each width; the helpers are where
//! the widths differ (one register is one block or two).

use core::arch::x86_64::{__m128i, _mm_loadu_si128};

pub(super) use crate::ghash::Power;

/// The most round keys AES has (AES-256).
pub(super) const MAX_ROUND_KEYS: usize = 15;

/// How many batches behind the AES encryption hashes the ciphertext (see `vaes512`).
pub(super) const ENCRYPT_HASH_LAG: usize = 2;

/// The `ROUNDS + 1` round keys of `round_keys`, each put in a register by `widen`; the rest
/// of the array is `zero`.
///
/// # Panics
/// If `round_keys` does not hold `ROUNDS + 1` keys or `ROUNDS` is more than AES has.
#[inline(always)]
pub(super) fn round_key_registers<const ROUNDS: usize, V: Copy>(
    round_keys: &[[u8; 16]],
    zero: V,
    widen: impl Fn(__m128i) -> V,
) -> [V; MAX_ROUND_KEYS] {
    assert!(ROUNDS < MAX_ROUND_KEYS && round_keys.len() == ROUNDS + 1);
    let mut keys = [zero; MAX_ROUND_KEYS];
    for (key, bytes) in keys.iter_mut().zip(round_keys) {
        // SAFETY: `bytes` is a 16-byte array; `loadu` has no alignment requirement, and
        // SSE2 is part of x86-64.
        *key = widen(unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) });
    }
    keys
}

/// Expands `process` (the kernel's entry point, with the contract of `vaes512::process`) and
/// its `run_batch` for the register width of the calling module, with `$features` enabled;
/// see the module documentation for the items that module supplies.
macro_rules! stitched_loop {
    ($features:literal) => {
        /// Encrypts (or with `DECRYPT` decrypts) `text` with AES-CTR from `counter` in one
        /// pass (in place or into a separate output) and continues the running GHASH `state`
        /// over its ciphertext: the contract of `vaes512::process`, with batches of
        /// [`BATCH_BYTES`].
        ///
        /// # Safety
        /// The CPU must have every feature [`is_available`] checks, and `text` must keep the
        /// contract of [`Text`].
        #[target_feature(enable = $features)]
        pub(super) unsafe fn process<const ROUNDS: usize, const DECRYPT: bool>(
            round_keys: &[[u8; 16]],
            powers: &[u128; POWERS],
            counter: &[u8; 16],
            state: &mut u128,
            text: Text,
        ) {
            let keys = super::stitched::round_key_registers::<ROUNDS, Vector>(
                round_keys,
                widen_key(_mm_setzero_si128()),
                |key| widen_key(key),
            );
            let batch_powers = batch_powers(powers);
            let reverse = byte_reverse();
            let mut counters = first_counters(counter, reverse);

            // SAFETY: a `u128` is 16 readable bytes; `loadu` has no alignment requirement.
            let mut accumulator = unsafe { _mm_loadu_si128((state as *const u128).cast()) };

            let batches = text.batches(BATCH_BYTES);
            // Everything is read at `input` and written at `output`, at offsets below
            // `text.len()`.
            let (input, output) = (text.input(), text.output());
            for index in 0..batches {
                // SAFETY: `index < batches`, so the batch lies within the text.
                let source = unsafe { input.add(index * BATCH_BYTES) };
                // SAFETY: as above.
                let target = unsafe { output.add(index * BATCH_BYTES) };
                let hashed = if DECRYPT || index < ENCRYPT_HASH_LAG {
                    source
                } else {
                    // SAFETY: `index >= ENCRYPT_HASH_LAG`: that output batch lies within the
                    // text and was written by an earlier batch.
                    unsafe { target.sub(ENCRYPT_HASH_LAG * BATCH_BYTES) }.cast_const()
                };
                let run = if DECRYPT || index >= ENCRYPT_HASH_LAG {
                    run_batch::<ROUNDS, true>
                } else {
                    run_batch::<ROUNDS, false>
                };
                // SAFETY: `source`, `target` and `hashed` are whole batches within the text,
                // which keeps the contract of `Text`; the caller of `process` guarantees the
                // CPU features.
                unsafe {
                    run(
                        &keys,
                        &batch_powers,
                        &mut counters,
                        reverse,
                        (source, target),
                        hashed,
                        &mut accumulator,
                    )
                };
            }

            if !DECRYPT {
                for index in batches.saturating_sub(ENCRYPT_HASH_LAG)..batches {
                    // SAFETY: `index < batches`: the output batch lies within the text.
                    let last = unsafe { output.add(index * BATCH_BYTES) }.cast_const();
                    // SAFETY: `last` is a whole batch within the text.
                    let first = with_state(unsafe { load_reversed(last, 0, reverse) }, accumulator);
                    let mut sum = product(first, batch_powers[0]);
                    for (vector, power) in batch_powers.iter().enumerate().skip(1) {
                        // SAFETY: as above, `vector < VECTORS`.
                        let data = unsafe { load_reversed(last, vector, reverse) };
                        sum = add(sum, product(data, *power));
                    }
                    accumulator = reduce(sum);
                }
            }

            // SAFETY: a `u128` is 16 writable bytes; `storeu` has no alignment requirement.
            unsafe { _mm_storeu_si128((state as *mut u128).cast(), accumulator) };
        }

        /// One batch: AES-CTR over the batch read at `source` and written at `target` (the
        /// same address when in place) and, with `HASH`, GHASH of the batch at `hashed`
        /// folded into `accumulator`, the products of one register per AES round.
        ///
        /// # Safety
        /// `source`, `target` and `hashed` must each point to [`BATCH_BYTES`] bytes
        /// (`target` writable, and either `source` itself or disjoint from it), and the CPU
        /// must have the features of [`process`].
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn run_batch<const ROUNDS: usize, const HASH: bool>(
            keys: &[Vector; super::stitched::MAX_ROUND_KEYS],
            powers: &[Power<Vector>; VECTORS],
            counters: &mut Vector,
            reverse: Vector,
            (source, target): (*const u8, *mut u8),
            hashed: *const u8,
            accumulator: &mut __m128i,
        ) {
            let mut blocks = [keys[0]; VECTORS];
            for block in &mut blocks {
                *block = next_counter_block(counters, reverse, keys[0]);
            }
            let mut sum = if HASH {
                // SAFETY: `hashed` is a whole batch (the caller's guarantee).
                let first = unsafe { load_reversed(hashed, 0, reverse) };
                Some(product(with_state(first, *accumulator), powers[0]))
            } else {
                None
            };
            for (round, key) in keys[1..VECTORS].iter().enumerate() {
                for block in &mut blocks {
                    *block = aes_round(*block, *key);
                }
                keep_round_order(&mut blocks);
                if let Some(partial) = &mut sum {
                    // SAFETY: `hashed` is a whole batch and `round + 1 < VECTORS`.
                    let data = unsafe { load_reversed(hashed, round + 1, reverse) };
                    *partial = add(*partial, product(data, powers[round + 1]));
                }
            }
            if let Some(sum) = sum {
                *accumulator = reduce(sum);
            }
            for key in &keys[VECTORS..ROUNDS] {
                for block in &mut blocks {
                    *block = aes_round(*block, *key);
                }
                keep_round_order(&mut blocks);
            }
            let register_bytes = BATCH_BYTES / VECTORS;
            for (index, block) in blocks.iter().enumerate() {
                // SAFETY: register `index` of the batch lies within it at both pointers,
                // read (after every read of it for GHASH, when in place) and then written.
                unsafe {
                    last_round(
                        *block,
                        keys[ROUNDS],
                        source.add(register_bytes * index),
                        target.add(register_bytes * index),
                    )
                };
            }
        }
    };
}

pub(super) use stitched_loop;

/// Expands `keep_round_order`, which pins the round-major order of the AES rounds across a
/// batch's eight registers of class `$class` (see `vaes512::keep_order`): an empty `asm!`
/// that takes and returns them, costing no instruction.
macro_rules! keep_round_order {
    ($class:ident, $features:literal) => {
        #[inline]
        #[target_feature(enable = $features)]
        fn keep_round_order(blocks: &mut [Vector; VECTORS]) {
            let [b0, b1, b2, b3, b4, b5, b6, b7] = blocks;
            super::stitched::pin_registers!($class: b0, b1, b2, b3, b4, b5, b6, b7);
        }
    };
}

pub(super) use keep_round_order;

/// An empty `asm!` that takes and returns every named place (each a `&mut` to a value that
/// fits a register of the class it is listed under), so that everything computed into them
/// before it comes before everything computed from them after it: an ordering barrier that
/// costs no instruction.
macro_rules! pin_registers {
    ($($class:ident: $($place:ident),+);+ $(;)?) => {
        // SAFETY: the template is a comment: it executes nothing and leaves every register
        // as it was.
        unsafe {
            core::arch::asm!(
                concat!("/*", $($(" {", stringify!($place), "}",)+)+ " */"),
                $($($place = inout($class) *$place,)+)+
                options(pure, nomem, nostack, preserves_flags),
            );
        }
    };
}

pub(super) use pin_registers;

/// Expands `next_counter_block`, `aes_round`, `last_round` and `load_reversed` for a
/// register type `Vector` from the intrinsics that load, store, XOR, shuffle, add 32-bit
/// words and run AES rounds at its width, all with `$features` enabled; `$counter_step`
/// adds the register's block count to the low word of each of its byte-reversed counters.
macro_rules! register_operations {
    (
        features: $features:literal,
        load: $load:ident,
        store: $store:ident,
        xor: $xor:ident,
        shuffle: $shuffle:ident,
        add_epi32: $add:ident,
        counter_step: $counter_step:expr,
        aes_round: $aes_round:ident,
        aes_last_round: $aes_last_round:ident $(,)?
    ) => {
        /// The counters of `counters` back in block order, XORed with the first round key;
        /// `counters` steps past them.
        #[inline]
        #[target_feature(enable = $features)]
        fn next_counter_block(counters: &mut Vector, reverse: Vector, first_key: Vector) -> Vector {
            let block = $xor($shuffle(*counters, reverse), first_key);
            *counters = $add(*counters, $counter_step);
            block
        }

        /// One AES round of each block of `block`.
        #[inline]
        #[target_feature(enable = $features)]
        fn aes_round(block: Vector, key: Vector) -> Vector {
            $aes_round(block, key)
        }

        /// The last AES round of `block`, XORed with the register's bytes at `source` and
        /// stored at `target`.
        ///
        /// # Safety
        /// `source` must point to a register's bytes, readable, and `target` to as many,
        /// writable.
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn last_round(block: Vector, last_key: Vector, source: *const u8, target: *mut u8) {
            // SAFETY: the caller's guarantee; `loadu`/`storeu` need no alignment.
            unsafe {
                let data = $load(source.cast());
                $store(target.cast(), $aes_last_round(block, $xor(last_key, data)));
            }
        }

        /// Register `vector` of the batch at `batch`, byte-reversed per block for GHASH.
        ///
        /// # Safety
        /// `batch` must point to [`BATCH_BYTES`] readable bytes and `vector` be below
        /// `VECTORS`.
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn load_reversed(batch: *const u8, vector: usize, reverse: Vector) -> Vector {
            debug_assert!(vector < VECTORS);
            let register_bytes = core::mem::size_of::<Vector>();
            // SAFETY: the caller guarantees the bytes are readable; no alignment is needed.
            let data = unsafe { $load(batch.add(register_bytes * vector).cast()) };
            $shuffle(data, reverse)
        }
    };
}

pub(super) use register_operations;
