//! Portable, constant-time GHASH arithmetic.
//!
//! No table lookups and no branches depend on the data or the key: the carry-less products are
//! built from ordinary integer multiplications of operands whose set bits are spaced far enough
//! apart that carries can never reach a bit that is kept (the "ctmul" technique of BearSSL).
//! Integer multiplication takes constant time on the CPUs this targets (x86-64, AArch64).

/// Bits of a 64-bit word are split into this many interleaved classes (bit `i` belongs to class
/// `i % CLASSES`). A class holds at most 13 bits, so a column of a class-by-class product sums
/// at most 13 ones: that fits in the 5 bits up to the next bit of the same class, so no carry
/// ever lands on a bit that is kept. Four classes would allow 16 ones per column, and a sum of
/// 16 would carry into the next kept bit of a full 128-bit product.
const CLASSES: usize = 5;

const fn class_masks_128() -> [u128; CLASSES] {
    let mut masks = [0u128; CLASSES];
    let mut bit = 0;
    while bit < 128 {
        masks[bit % CLASSES] |= 1 << bit;
        bit += 1;
    }
    masks
}

const MASKS_128: [u128; CLASSES] = class_masks_128();
// A bit's class is its index modulo `CLASSES`, so the classes of a 64-bit word are the low
// halves of the 128-bit ones (the literal has one entry per class: it stops compiling if
// `CLASSES` changes).
const MASKS_64: [u64; CLASSES] = [
    MASKS_128[0] as u64,
    MASKS_128[1] as u64,
    MASKS_128[2] as u64,
    MASKS_128[3] as u64,
    MASKS_128[4] as u64,
];

/// Carry-less product of two 64-bit polynomials (bit `i` is the coefficient of `y^i`).
#[inline]
pub(crate) fn clmul64(left: u64, right: u64) -> u128 {
    let left_classes = MASKS_64.map(|mask| u128::from(left & mask));
    let right_classes = MASKS_64.map(|mask| u128::from(right & mask));
    let mut product = 0u128;
    for (result_class, result_mask) in MASKS_128.iter().enumerate() {
        let mut sum = 0u128;
        for (left_class, left_part) in left_classes.iter().enumerate() {
            // Class a times class b only has nonzero columns in class (a + b) % CLASSES.
            let right_class = (result_class + CLASSES - left_class) % CLASSES;
            sum ^= left_part * right_classes[right_class];
        }
        product |= sum & result_mask;
    }
    product
}

/// Carry-less product of two 128-bit polynomials as (high, low) halves, by Karatsuba: three
/// 64-bit products instead of four.
#[inline]
pub(crate) fn clmul128(left: u128, right: u128) -> (u128, u128) {
    let (left_high, left_low) = ((left >> 64) as u64, left as u64);
    let (right_high, right_low) = ((right >> 64) as u64, right as u64);
    let low = clmul64(left_low, right_low);
    let high = clmul64(left_high, right_high);
    let middle = clmul64(left_low ^ left_high, right_low ^ right_high) ^ low ^ high;
    (high ^ (middle >> 64), low ^ (middle << 64))
}

/// `y^63 + y^62 + y^57`: the terms of the reflected polynomial
/// `y^128 + y^127 + y^126 + y^121 + 1` above `y^64`, divided by `y^64`. The vector code
/// multiplies by it; [`clmul_fold_constant`] spells it out as shifts.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) const FOLD_CONSTANT: u64 = 0xc200_0000_0000_0000;

/// Carry-less product of a 64-bit word with [`FOLD_CONSTANT`], which has only three terms.
#[inline]
fn clmul_fold_constant(word: u64) -> u128 {
    let word = u128::from(word);
    (word << 63) ^ (word << 62) ^ (word << 57)
}

/// Montgomery reduction: `product * y^-128` modulo the reflected polynomial, for a 256-bit
/// `product` given as (high, low). Adding `word * Q` to cancel the lowest 64-bit word needs no
/// inverse because `Q = 1 (mod y^64)`; doing that twice clears the low half, which is then
/// dropped by the division.
#[inline]
pub(crate) fn reduce(high: u128, low: u128) -> u128 {
    let word_0 = low as u64;
    let mut word_1 = (low >> 64) as u64;
    let mut word_2 = high as u64;
    let mut word_3 = (high >> 64) as u64;

    let fold = clmul_fold_constant(word_0);
    word_1 ^= fold as u64;
    word_2 ^= (fold >> 64) as u64 ^ word_0;

    let fold = clmul_fold_constant(word_1);
    word_2 ^= fold as u64;
    word_3 ^= (fold >> 64) as u64 ^ word_1;

    (u128::from(word_3) << 64) | u128::from(word_2)
}

/// `left * right`, where `right` was prepared with [`super::prepare`].
#[inline]
pub(crate) fn mul_prepared(left: u128, right_prepared: u128) -> u128 {
    let (high, low) = clmul128(left, right_prepared);
    reduce(high, low)
}

/// The running GHASH over whole blocks: one multiplication per block.
pub(crate) fn update(h_prepared: u128, state: &mut u128, blocks: &[u8]) {
    let mut accumulator = *state;
    for block in blocks.chunks_exact(16) {
        let block: [u8; 16] = block.try_into().expect("chunks_exact yields 16 bytes");
        accumulator = mul_prepared(accumulator ^ u128::from_be_bytes(block), h_prepared);
    }
    *state = accumulator;
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Shift-and-add carry-less multiplication: slow, obviously correct.
    fn clmul64_reference(left: u64, right: u64) -> u128 {
        (0..64)
            .filter(|bit| (right >> bit) & 1 == 1)
            .fold(0, |product, bit| product ^ (u128::from(left) << bit))
    }

    #[test]
    fn clmul64_matches_shift_and_add() {
        let mut rng = StdRng::seed_from_u64(0x5eed_c1a5);
        let edge_cases = [0, 1, u64::MAX, 1 << 63, 0x8000_0000_0000_0001, MASKS_64[0]];
        for left in edge_cases {
            for right in edge_cases {
                assert_eq!(clmul64(left, right), clmul64_reference(left, right));
            }
        }
        for _ in 0..10_000 {
            let (left, right) = (rng.next_u64(), rng.next_u64());
            assert_eq!(
                clmul64(left, right),
                clmul64_reference(left, right),
                "{left:x} {right:x}"
            );
        }
    }

    #[test]
    fn fold_constant_shifts_match_the_constant() {
        for word in [1, u64::MAX, 0x0123_4567_89ab_cdef] {
            assert_eq!(
                clmul_fold_constant(word),
                clmul64_reference(word, FOLD_CONSTANT)
            );
        }
    }

    #[test]
    fn all_ones_columns_do_not_carry_into_kept_bits() {
        // The worst case for carries: every class fully set on both sides.
        for operand in MASKS_64 {
            assert_eq!(
                clmul64(operand, operand),
                clmul64_reference(operand, operand)
            );
            assert_eq!(
                clmul64(u64::MAX, operand),
                clmul64_reference(u64::MAX, operand)
            );
        }
    }
}
