//! GHASH (NIST SP 800-38D sections 6.3 and 6.4).
//!
//! Field elements are 16-byte blocks in the spec's bit order (the first byte holds x^0..x^7,
//! most significant bit first), represented here as `u128` read big-endian from the block, so
//! the GHASH output block is `state.to_be_bytes()`.
//!
//! # How the arithmetic works
//!
//! Read as an integer, an element puts x^k at bit 127 - k: the bit order is reflected. The
//! carry-less product of two such integers is the 255-bit product with x^k at bit 254 - k, so
//! all implementations work in the reflected picture instead of reversing bits: with `y` for
//! the integer's bit weight (`y = x^-1`), the field is GF(2)\[y\] / (y^128 + y^127 + y^126 +
//! y^121 + 1), and a carry-less product followed by a Montgomery reduction (multiplication by
//! y^-128, see `soft::reduce`) yields A * B * x. Keys are stored multiplied by x^-1
//! (`prepare`: a one-bit left shift of the integer) to cancel that extra x. On x86 the
//! blocks are loaded byte-swapped, which gives exactly this integer in a vector register.
//!
//! # Implementations
//!
//! - [`Implementation::Soft`]: portable and constant time, one multiplication per block.
//! - [`Implementation::Pclmul`]: x86-64 PCLMULQDQ, 16 blocks per reduction.
//! - [`Implementation::Vpclmul`]: x86-64 AVX-512 VPCLMULQDQ, 32 blocks (4 per register) per
//!   reduction.
//! - `Implementation::Pmull` (aarch64 only): ARMv8 PMULL, 16 blocks per reduction.
//!
//! Both x86 paths sum the unreduced products of a group of blocks with H^n..H^1 and reduce
//! once per group (aggregated reduction), and use Karatsuba (three carry-less multiplications
//! per block instead of four): on the Zen 5 this was tuned on, the carry-less multiplier's
//! throughput is the limit once a group is long enough to hide the latency of the reduction
//! that links one group to the next. Measured there (64 KiB, one core): VPCLMULQDQ with 16
//! blocks per group 27 GB/s, 32 blocks 44 GB/s, 64 blocks 45 GB/s.
//!
//! The fastest one the CPU supports is picked when a key is made.

use std::fmt;

use parcrypt_ciphers::KernelFamily;
use zeroize::Zeroize;

pub(crate) mod soft;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86_pclmul;

/// A power of H in a register with, in both halves of each 128-bit lane, the sum of its
/// halves: the second operand of the Karatsuba middle product.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[derive(Clone, Copy)]
pub(crate) struct Power<V> {
    pub(crate) value: V,
    pub(crate) halves_sum: V,
}

/// Expands the carry-less GHASH arithmetic of `x86_pclmul` for registers of type `$vector`,
/// each 128-bit lane on its own, with `$features` enabled: `Products` (unreduced sums of
/// products, per lane `high * y^128 + middle * y^64 + low`), `halves_sum`,
/// `with_halves_sum`, `product` (Karatsuba), `add`, and `$reduce`, the reduction of each
/// lane (the caller adds the lanes where a register has more than one). The widths differ
/// only in the intrinsics named here; every GHASH and stitched GCM kernel on x86-64 uses it,
/// and the ARMv8 PMULL one with NEON stand-ins.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
macro_rules! karatsuba_lanes {
    (
        vector: $vector:ty,
        features: $features:literal,
        xor: $xor:ident,
        clmul: $clmul:ident,
        shuffle_epi32: $shuffle:ident,
        fold_constant: $constant:expr,
        reduce: $reduce:ident $(,)?
    ) => {
        /// Unreduced sums of products, per 128-bit lane: `high * y^128 + middle * y^64 + low`.
        #[derive(Clone, Copy)]
        pub(crate) struct Products {
            low: $vector,
            middle: $vector,
            high: $vector,
        }

        /// Each lane with its halves swapped and added: the Karatsuba middle operand.
        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn halves_sum(value: $vector) -> $vector {
            $xor(value, $shuffle::<0x4e>(value))
        }

        /// `value` as the right operand of [`product`].
        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn with_halves_sum(value: $vector) -> crate::ghash::Power<$vector> {
            crate::ghash::Power {
                value,
                halves_sum: halves_sum(value),
            }
        }

        /// Karatsuba: three carry-less multiplications per lane instead of four. `middle`
        /// holds (left_low + left_high)(right_low + right_high) only; the reduction removes
        /// `low + high` from it once per sum rather than per product.
        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn product(left: $vector, right: crate::ghash::Power<$vector>) -> Products {
            let left_halves_sum = halves_sum(left);
            Products {
                low: $clmul::<0x00>(left, right.value),
                middle: $clmul::<0x00>(left_halves_sum, right.halves_sum),
                high: $clmul::<0x11>(left, right.value),
            }
        }

        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn add(sum: Products, term: Products) -> Products {
            Products {
                low: $xor(sum.low, term.low),
                middle: $xor(sum.middle, term.middle),
                high: $xor(sum.high, term.high),
            }
        }

        /// Montgomery reduction as in `ghash::soft::reduce`, in each lane, folding the
        /// lowest 64-bit word into the words above it twice. `middle` is folded into
        /// directly rather than first being split over `low` and `high`: after the first
        /// fold, everything left sits at `y^64` and above.
        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn $reduce(products: Products) -> $vector {
            let constant = $constant;
            let fold = $clmul::<0x00>(products.low, constant);
            // Swapping the halves moves the lowest word up by y^128, where `word * Q` puts it.
            let middle = $xor(
                $xor(products.middle, $xor(products.low, products.high)),
                $xor($shuffle::<0x4e>(products.low), fold),
            );
            let fold = $clmul::<0x00>(middle, constant);
            $xor($xor(products.high, $shuffle::<0x4e>(middle)), fold)
        }
    };
}
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) use karatsuba_lanes;

/// Expands, over the items of a `karatsuba_lanes!` expansion at 128 bits and the module's
/// `load_block` (a block, byte-reversed into its integer), `load_element` and `to_element`,
/// the GHASH entry points of a one-block-a-register module: `mul_prepared`, `fill_powers`
/// and `update` (aggregated reduction over `$group` blocks, the accumulator joining the
/// first). `x86_pclmul` and `armv8_pmull` differ only in those three loads and `$xor`.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
macro_rules! aggregated_update {
    (vector: $vector:ty, features: $features:literal, xor: $xor:ident, group: $group:expr $(,)?) => {
        /// Blocks hashed per reduction.
        const BLOCKS_PER_GROUP: usize = $group;
        const _: () = assert!(BLOCKS_PER_GROUP <= super::POWERS);

        /// `left * right` for a `right` made by `super::prepare`.
        #[inline]
        #[target_feature(enable = $features)]
        pub(super) fn mul_prepared(left: u128, right_prepared: u128) -> u128 {
            let right = with_halves_sum(load_element(&right_prepared));
            to_element(reduce(product(load_element(&left), right)))
        }

        /// The table of powers of H (see `super::fill_powers_with`), with the
        /// multiplications inlined so that the independent chains overlap in the carry-less
        /// multiplier.
        #[target_feature(enable = $features)]
        pub(super) fn fill_powers(h: u128, powers: &mut [u128; super::POWERS]) {
            super::fill_powers_with(h, powers, |left, right| mul_prepared(left, right));
        }

        /// Hashes `group` (whole blocks, one per entry of `powers`) into `accumulator` with
        /// a single reduction: block `i` is multiplied by `powers[i]`, the accumulator joins
        /// the first block.
        #[inline]
        #[target_feature(enable = $features)]
        fn hash_group(accumulator: $vector, group: &[u8], powers: &[u128]) -> $vector {
            debug_assert_eq!(group.len(), 16 * powers.len());
            let (first, rest) = group.split_at(16);
            let first = $xor(load_block(first), accumulator);
            let mut sum = product(first, with_halves_sum(load_element(&powers[0])));
            for (block, power) in rest.chunks_exact(16).zip(&powers[1..]) {
                let power = with_halves_sum(load_element(power));
                sum = add(sum, product(load_block(block), power));
            }
            reduce(sum)
        }

        /// The running GHASH over `blocks` (whole blocks), continuing from `state`.
        #[target_feature(enable = $features)]
        pub(super) fn update(powers: &[u128; super::POWERS], state: &mut u128, blocks: &[u8]) {
            let mut accumulator = load_element(state);
            let mut groups = blocks.chunks_exact(16 * BLOCKS_PER_GROUP);
            for group in &mut groups {
                let powers = &powers[super::POWERS - BLOCKS_PER_GROUP..];
                accumulator = hash_group(accumulator, group, powers);
            }
            let rest = groups.remainder();
            if !rest.is_empty() {
                let powers = &powers[super::POWERS - rest.len() / 16..];
                accumulator = hash_group(accumulator, rest, powers);
            }
            *state = to_element(accumulator);
        }
    };
}
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) use aggregated_update;
#[cfg(target_arch = "aarch64")]
pub(crate) mod armv8_pmull;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86_vpclmul;

/// How many powers of H a key keeps: the most blocks any implementation hashes per reduction.
/// The vector modules check at compile time that their group sizes fit.
pub(crate) const POWERS: usize = 32;

/// Entries of a key's extended table ([`GhashKey::message_powers`]): H^(POWERS + 1), the
/// `POWERS` of the table, then three zeros, so that four consecutive entries can be read
/// from anywhere in the first `POWERS + 1`. GCM's whole-message kernel hashes its last
/// blocks with the length block in one reduction: up to `POWERS` blocks and the length block,
/// the state joining the first.
pub(crate) const MESSAGE_POWERS: usize = POWERS + 4;

/// `element * x^-1`: the form in which the right operand of every multiplication is kept (see
/// the module documentation), and the form GHASH kernels on a device take H in. Shifting out
/// x^0 needs x^-1 = x^127 + x^6 + x + 1, which is the constant; the mask keeps the choice
/// free of branches.
pub fn prepare(element: u128) -> u128 {
    const X_INVERSE: u128 = 0xc200_0000_0000_0000_0000_0000_0000_0001;
    let carry_mask = 0u128.wrapping_sub(element >> 127);
    (element << 1) ^ (X_INVERSE & carry_mask)
}

/// Independent chains of multiplications [`fill_powers_with`] runs side by side.
const POWER_CHAINS: usize = 8;
const _: () = assert!(POWERS >= POWER_CHAINS && POWERS.is_multiple_of(POWER_CHAINS));

/// Fills `powers` with `prepare(H^(POWERS - i))` at index `i` (the layout of
/// [`GhashKey`]'s table), multiplying with `mul` (`left * right` for a prepared `right`).
///
/// One chain H^(k+1) = H^k * H would make 31 multiplications wait each on the one before:
/// their latency, not the multiplier's throughput, would bound the time. Instead H^2, then
/// H^3 and H^4, then H^5..H^8 (each H^(k-4) * H^4), then the rest in [`POWER_CHAINS`]
/// independent chains H^k = H^(k-8) * H^8: seven multiplications deep, eight at a time.
/// The field's multiplication is associative and commutative, so every entry is the same
/// element the single chain makes, bit for bit.
#[inline(always)]
fn fill_powers_with(h: u128, powers: &mut [u128; POWERS], mul: impl Fn(u128, u128) -> u128) {
    // `plain[i]`: the latest power of chain `i`, not prepared (the left operand).
    let mut plain = [0u128; POWER_CHAINS];
    plain[0] = h;
    powers[POWERS - 1] = prepare(h);
    plain[1] = mul(h, powers[POWERS - 1]);
    powers[POWERS - 2] = prepare(plain[1]);
    plain[2] = mul(plain[1], powers[POWERS - 1]);
    plain[3] = mul(plain[1], powers[POWERS - 2]);
    powers[POWERS - 3] = prepare(plain[2]);
    powers[POWERS - 4] = prepare(plain[3]);
    for index in 4..POWER_CHAINS {
        plain[index] = mul(plain[index - 4], powers[POWERS - 4]);
        powers[POWERS - 1 - index] = prepare(plain[index]);
    }
    let mut step = powers[POWERS - POWER_CHAINS];
    for base in (POWER_CHAINS..POWERS).step_by(POWER_CHAINS) {
        for (chain, power) in plain.iter_mut().enumerate() {
            *power = mul(*power, step);
            powers[POWERS - 1 - (base + chain)] = prepare(*power);
        }
    }
    plain.zeroize();
    step.zeroize();
}

/// The code that does the multiplications.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Implementation {
    /// Portable, constant-time integer code.
    Soft,
    /// x86-64 PCLMULQDQ on 128-bit registers.
    Pclmul,
    /// x86-64 AVX-512 with VPCLMULQDQ on 512-bit registers.
    Vpclmul,
    /// aarch64 ARMv8 PMULL (the Cryptography Extensions) on 128-bit registers.
    #[cfg(target_arch = "aarch64")]
    Pmull,
}

impl Implementation {
    /// Every implementation, slowest first.
    #[cfg(not(target_arch = "aarch64"))]
    pub const ALL: &'static [Implementation] = &[
        Implementation::Soft,
        Implementation::Pclmul,
        Implementation::Vpclmul,
    ];

    /// Every implementation, slowest first.
    #[cfg(target_arch = "aarch64")]
    pub const ALL: &'static [Implementation] = &[
        Implementation::Soft,
        Implementation::Pclmul,
        Implementation::Vpclmul,
        Implementation::Pmull,
    ];

    /// Whether this CPU can run it.
    pub fn is_available(self) -> bool {
        match self {
            Implementation::Soft => true,
            #[cfg(target_arch = "x86_64")]
            Implementation::Pclmul => x86_pclmul::is_available(),
            #[cfg(target_arch = "x86_64")]
            Implementation::Vpclmul => x86_vpclmul::is_available(),
            #[cfg(target_arch = "aarch64")]
            Implementation::Pmull => armv8_pmull::is_available(),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The fastest implementation this CPU can run.
    pub fn fastest() -> Self {
        Self::fastest_within(None)
    }

    /// The fastest implementation this CPU can run whose [`Implementation::family`] is at
    /// most `ceiling` (`None`: any).
    pub fn fastest_within(ceiling: Option<KernelFamily>) -> Self {
        Self::ALL
            .iter()
            .copied()
            .rev()
            .find(|implementation| {
                implementation.family().within(ceiling) && implementation.is_available()
            })
            .unwrap_or(Self::Soft)
    }

    /// The instruction family the implementation belongs to.
    pub fn family(self) -> KernelFamily {
        match self {
            Implementation::Soft => KernelFamily::Portable,
            Implementation::Pclmul => KernelFamily::AesNi,
            Implementation::Vpclmul => KernelFamily::Vaes512,
            #[cfg(target_arch = "aarch64")]
            Implementation::Pmull => KernelFamily::Armv8,
        }
    }

    /// Short lower-case name, for reports.
    pub fn name(self) -> &'static str {
        match self {
            Implementation::Soft => "soft",
            Implementation::Pclmul => "pclmul",
            Implementation::Vpclmul => "vpclmul",
            #[cfg(target_arch = "aarch64")]
            Implementation::Pmull => "pmull",
        }
    }
}

impl fmt::Display for Implementation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A key's powers of H on the heap, at a cache-line boundary so that the 512-bit loads of
/// the vector paths never straddle two lines (decryption of 1 KiB was 5-8% slower with a
/// table only 16-byte aligned). The block is a plain 16-byte-aligned one with room to
/// start the table on the boundary inside it: a block aligned by the allocator costs
/// about as much as the copies it spares (glibc's memalign). The table has H^(POWERS + 1)
/// just before it and zeros after it: the [`MESSAGE_POWERS`] of GCM's whole messages.
struct PowerTable {
    storage: Box<[u128; MESSAGE_POWERS + PowerTable::SLACK]>,
    /// Where H^(POWERS + 1) is in `storage`: the table of `POWERS` starts one entry later.
    start: usize,
}

impl PowerTable {
    /// The most entries before a 64-byte boundary in a block of 16-byte-aligned `u128`s.
    const SLACK: usize = 3;

    /// A table of zeros.
    fn new() -> Self {
        let storage = Box::new([0u128; MESSAGE_POWERS + Self::SLACK]);
        // Where `u128` is less aligned, no boundary may be reachable (`usize::MAX`): the
        // table then starts where it can, unaligned but whole.
        let start = storage[1..].as_ptr().align_offset(64).min(Self::SLACK);
        PowerTable { storage, start }
    }

    fn extended(&self) -> &[u128; MESSAGE_POWERS] {
        self.storage[self.start..]
            .first_chunk()
            .expect("the storage holds the table after any start")
    }

    fn extended_mut(&mut self) -> &mut [u128; MESSAGE_POWERS] {
        self.storage[self.start..]
            .first_chunk_mut()
            .expect("the storage holds the table after any start")
    }

    fn get(&self) -> &[u128; POWERS] {
        self.extended()[1..]
            .first_chunk()
            .expect("the extended table holds the table")
    }

    fn get_mut(&mut self) -> &mut [u128; POWERS] {
        self.extended_mut()[1..]
            .first_chunk_mut()
            .expect("the extended table holds the table")
    }
}

impl Clone for PowerTable {
    fn clone(&self) -> Self {
        // The copy's block has its own boundary.
        let mut copy = PowerTable::new();
        copy.extended_mut().copy_from_slice(self.extended());
        copy
    }
}

impl Drop for PowerTable {
    fn drop(&mut self) {
        self.storage.zeroize();
    }
}

/// H and its first powers, precomputed once per key; wiped on drop.
#[derive(Clone)]
pub struct GhashKey {
    h: u128,
    /// `powers[i]` is `prepare(H^(POWERS - i))`: the power that block `i` of a group of
    /// `POWERS` blocks is multiplied by, so a group of any `n <= POWERS` blocks uses the
    /// last `n` entries. On the heap: a key is moved several times on its way into the
    /// structures that keep it (each move of an inline table was a 512-byte copy, and left
    /// a copy of the powers behind in a stack slot that nothing wipes).
    powers: PowerTable,
    implementation: Implementation,
}

impl GhashKey {
    /// `h` is E_K(0^128).
    pub fn new(h: &[u8; 16]) -> Self {
        Self::with_implementation(h, Implementation::fastest())
            .expect("the fastest implementation is available")
    }

    /// [`GhashKey::new`] with the fastest implementation of at most family `ceiling`
    /// (`None`: any).
    pub fn new_within(h: &[u8; 16], ceiling: Option<KernelFamily>) -> Self {
        Self::with_implementation(h, Implementation::fastest_within(ceiling))
            .expect("the fastest implementation is available")
    }

    /// A key that uses the given implementation, or `None` if this CPU cannot run it. Meant
    /// for tests and measurements; [`GhashKey::new`] picks the fastest.
    pub fn with_implementation(h: &[u8; 16], implementation: Implementation) -> Option<Self> {
        if !implementation.is_available() {
            return None;
        }
        let mut key = GhashKey {
            h: u128::from_be_bytes(*h),
            powers: PowerTable::new(),
            implementation,
        };
        match implementation {
            #[cfg(target_arch = "x86_64")]
            Implementation::Pclmul | Implementation::Vpclmul => {
                // SAFETY: `is_available` (checked above) confirmed PCLMULQDQ and SSSE3, the
                // features `x86_pclmul::fill_powers` enables.
                unsafe { x86_pclmul::fill_powers(key.h, key.powers.get_mut()) }
            }
            #[cfg(target_arch = "aarch64")]
            Implementation::Pmull => {
                // SAFETY: `is_available` (checked above) confirmed PMULL, whose Rust feature
                // `aes` (with NEON, always present on aarch64) `armv8_pmull::fill_powers`
                // enables.
                unsafe { armv8_pmull::fill_powers(key.h, key.powers.get_mut()) }
            }
            _ => fill_powers_with(key.h, key.powers.get_mut(), soft::mul_prepared),
        }
        // H^(POWERS + 1) = H * H^POWERS, the first entry of the extended table.
        let mut power = key.mul_prepared(key.h, key.powers.get()[0]);
        key.powers.extended_mut()[0] = prepare(power);
        power.zeroize();
        Some(key)
    }

    /// The implementation this key runs.
    pub fn implementation(&self) -> Implementation {
        self.implementation
    }

    /// The powers of H as the vector paths keep them: entry `i` is `prepare(H^(POWERS - i))`
    /// (for GCM's stitched kernel, which hashes [`POWERS`] blocks per reduction).
    #[cfg(any(test, target_arch = "x86_64"))]
    pub(crate) fn powers(&self) -> &[u128; POWERS] {
        self.powers.get()
    }

    /// The extended table (see [`MESSAGE_POWERS`]): entry `i` is `prepare(H^(POWERS + 1 -
    /// i))` up to `H^1` at `POWERS`, then zeros; it starts one entry before
    /// [`GhashKey::powers`].
    #[cfg(any(test, target_arch = "x86_64"))]
    pub(crate) fn message_powers(&self) -> &[u128; MESSAGE_POWERS] {
        self.powers.extended()
    }

    /// state = (state XOR X_1) * H, then the same for each further block X_i of `blocks`
    /// (`blocks.len()` a multiple of 16): the running GHASH of the spec.
    pub fn update(&self, state: &mut u128, blocks: &[u8]) {
        assert!(
            blocks.len().is_multiple_of(16),
            "GHASH input of {} bytes is not whole blocks",
            blocks.len()
        );
        if let Ok(block) = <&[u8; 16]>::try_from(blocks) {
            // One block (GCM's length block, a short AAD): one multiplication by H, without
            // the set-up of the wide paths.
            let prepared_h = self.powers.get()[POWERS - 1];
            *state = self.mul_prepared(*state ^ u128::from_be_bytes(*block), prepared_h);
            return;
        }
        match self.implementation {
            #[cfg(target_arch = "x86_64")]
            Implementation::Vpclmul => {
                // SAFETY: keys only get this implementation after `is_available` confirmed
                // every CPU feature that `x86_vpclmul::update` enables.
                unsafe { x86_vpclmul::update(self.powers.get(), state, blocks) }
            }
            #[cfg(target_arch = "x86_64")]
            Implementation::Pclmul => {
                // SAFETY: keys only get this implementation after `is_available` confirmed
                // every CPU feature that `x86_pclmul::update` enables.
                unsafe { x86_pclmul::update(self.powers.get(), state, blocks) }
            }
            #[cfg(target_arch = "aarch64")]
            Implementation::Pmull => {
                // SAFETY: keys only get this implementation after `is_available` confirmed
                // PMULL, the feature (with NEON) that `armv8_pmull::update` enables.
                unsafe { armv8_pmull::update(self.powers.get(), state, blocks) }
            }
            _ => soft::update(self.powers.get()[POWERS - 1], state, blocks),
        }
    }

    /// Returns x * H^n (n = 0 returns x): used to join partial sums of consecutive ranges.
    pub fn mul_h_pow(&self, x: u128, n: u64) -> u128 {
        if n == 0 {
            return x;
        }
        if n <= POWERS as u64 {
            return self.mul_prepared(x, self.powers.get()[POWERS - n as usize]);
        }
        // Square-and-multiply over the bits of n, lowest first. n is a block count, not a
        // secret, so branching on its bits leaks nothing.
        let mut result = x;
        let mut power = self.h;
        let mut power_prepared = self.powers.get()[POWERS - 1];
        let mut remaining = n;
        loop {
            if remaining & 1 == 1 {
                result = self.mul_prepared(result, power_prepared);
            }
            remaining >>= 1;
            if remaining == 0 {
                break;
            }
            power = self.mul_prepared(power, power_prepared);
            power_prepared = prepare(power);
        }
        power.zeroize();
        power_prepared.zeroize();
        result
    }

    /// H^n, prepared once for joining many ranges of `n` blocks each with
    /// [`GhashKey::append_partial_by`]: one multiplication per range instead of the
    /// square-and-multiply [`GhashKey::mul_h_pow`] makes for an `n` above its table.
    pub fn power(&self, n: u64) -> HashKeyPower {
        // The field's one is the block with only its first bit set.
        let mut power = self.mul_h_pow(1u128 << 127, n);
        let prepared = prepare(power);
        power.zeroize();
        HashKeyPower { prepared }
    }

    /// `state * H^n + partial` for the `n` that `power` was made for: the next range of `n`
    /// blocks joined, as [`GhashKey::append_partial`] joins it.
    pub fn append_partial_by(&self, state: u128, partial: u128, power: &HashKeyPower) -> u128 {
        self.mul_prepared(state, power.prepared) ^ partial
    }

    /// The running sum of consecutive ranges joined with the next range's partial sum (its
    /// GHASH from a zero state over `bytes` bytes, a final partial block zero-padded):
    /// `state * H^(blocks of the range) + partial`.
    pub fn append_partial(&self, state: u128, partial: u128, bytes: u64) -> u128 {
        self.mul_h_pow(state, bytes.div_ceil(16)) ^ partial
    }

    /// `left * right` for a `right` made by [`prepare`].
    fn mul_prepared(&self, left: u128, right_prepared: u128) -> u128 {
        match self.implementation {
            #[cfg(target_arch = "x86_64")]
            Implementation::Pclmul | Implementation::Vpclmul => {
                // SAFETY: both implementations are only chosen after `is_available` confirmed
                // PCLMULQDQ and SSSE3, the features `x86_pclmul::mul_prepared` enables.
                unsafe { x86_pclmul::mul_prepared(left, right_prepared) }
            }
            #[cfg(target_arch = "aarch64")]
            Implementation::Pmull => {
                // SAFETY: only chosen after `is_available` confirmed PMULL, the feature (with
                // NEON) that `armv8_pmull::mul_prepared` enables.
                unsafe { armv8_pmull::mul_prepared(left, right_prepared) }
            }
            _ => soft::mul_prepared(left, right_prepared),
        }
    }
}

/// A power of the hash key H, prepared ([`GhashKey::power`]); wiped on drop.
pub struct HashKeyPower {
    prepared: u128,
}

impl Drop for HashKeyPower {
    fn drop(&mut self) {
        self.prepared.zeroize();
    }
}

impl fmt::Debug for HashKeyPower {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashKeyPower").finish_non_exhaustive()
    }
}

impl Drop for GhashKey {
    fn drop(&mut self) {
        // The powers wipe themselves (`PowerTable`'s drop).
        self.h.zeroize();
    }
}

impl fmt::Debug for GhashKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GhashKey")
            .field("implementation", &self.implementation)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
// Tests say on stderr what this machine could not run; libtest shows it.
#[allow(clippy::disallowed_macros)]
mod tests {
    use super::*;
    use ::ghash::universal_hash::UniversalHash;
    use rand::rngs::StdRng;
    use rand::{Rng, RngExt, SeedableRng};

    const VECTORS: &str = include_str!("../../../tests/vectors/ghash.txt");

    /// A record of the vector file: its section and its `name = value` fields.
    type Record = (String, Vec<(String, Vec<u8>)>);

    fn parse_vectors(text: &str) -> Vec<Record> {
        let mut records: Vec<Record> = Vec::new();
        let mut section = String::new();
        let mut fields = Vec::new();
        for line in text.lines().chain([""]) {
            let line = line.trim();
            if line.starts_with('#') {
                continue;
            }
            if line.is_empty() {
                if !fields.is_empty() {
                    records.push((section.clone(), std::mem::take(&mut fields)));
                }
            } else if let Some(name) = line
                .strip_prefix('[')
                .and_then(|rest| rest.strip_suffix(']'))
            {
                section = name.to_string();
            } else {
                let (name, value) = line.split_once('=').expect("`name = hex` line");
                let value = hex::decode(value.trim()).expect("hex value");
                fields.push((name.trim().to_string(), value));
            }
        }
        records
    }

    fn field<'a>(fields: &'a [(String, Vec<u8>)], name: &str) -> &'a [u8] {
        &fields
            .iter()
            .find(|(field, _)| field == name)
            .unwrap_or_else(|| panic!("no field {name}"))
            .1
    }

    fn zero_padded(bytes: &[u8]) -> Vec<u8> {
        let mut padded = bytes.to_vec();
        padded.resize(bytes.len().div_ceil(16) * 16, 0);
        padded
    }

    fn available_implementations() -> Vec<Implementation> {
        let available: Vec<_> = Implementation::ALL
            .iter()
            .copied()
            .filter(|implementation| implementation.is_available())
            .collect();
        for &implementation in Implementation::ALL {
            if !available.contains(&implementation) {
                eprintln!("GHASH implementation {implementation} not available here: not tested");
            }
        }
        available
    }

    /// Where the CPU has a carry-less multiplier, keys take it: PMULL under qemu's `-cpu
    /// max` (or Arm hardware), VPCLMULQDQ or PCLMULQDQ on x86-64.
    #[test]
    fn keys_take_the_cpus_multiplier() {
        let fastest = Implementation::fastest();
        #[cfg(target_arch = "aarch64")]
        if std::arch::is_aarch64_feature_detected!("pmull") {
            assert_eq!(fastest, Implementation::Pmull);
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("pclmulqdq") {
            assert_ne!(fastest, Implementation::Soft);
        }
        assert_eq!(GhashKey::new(&[1; 16]).implementation(), fastest);
    }

    fn key(h: &[u8; 16], implementation: Implementation) -> GhashKey {
        GhashKey::with_implementation(h, implementation).expect("implementation available")
    }

    /// A seeded generator whose seed is printed on failure, so a failing case can be rerun.
    fn seeded_rng() -> (StdRng, u64) {
        let seed: u64 = rand::random();
        (StdRng::seed_from_u64(seed), seed)
    }

    fn ghash_one_pass(key: &GhashKey, data: &[u8]) -> u128 {
        let mut state = 0;
        key.update(&mut state, data);
        state
    }

    /// A random key, up to 300 random blocks (and how many), and their GHASH in one pass.
    fn random_message(
        rng: &mut StdRng,
        implementation: Implementation,
    ) -> (GhashKey, usize, Vec<u8>, u128) {
        let key = key(&rng.random(), implementation);
        let blocks = rng.random_range(0..=300usize);
        let mut data = vec![0u8; blocks * 16];
        rng.fill_bytes(&mut data);
        let expected = ghash_one_pass(&key, &data);
        (key, blocks, data, expected)
    }

    #[test]
    fn gcm_specification_vectors() {
        let records = parse_vectors(VECTORS);
        assert_eq!(records.len(), 6, "test cases 1-6");
        for implementation in available_implementations() {
            for (name, fields) in &records {
                let h: [u8; 16] = field(fields, "h").try_into().unwrap();
                let (aad, ciphertext) = (field(fields, "a"), field(fields, "c"));
                let lengths = field(fields, "lengths");
                let mut expected_lengths = ((aad.len() as u64) * 8).to_be_bytes().to_vec();
                expected_lengths.extend_from_slice(&((ciphertext.len() as u64) * 8).to_be_bytes());
                assert_eq!(lengths, expected_lengths, "{name}: length block");

                let key = key(&h, implementation);
                let mut state = 0;
                key.update(&mut state, &zero_padded(aad));
                key.update(&mut state, &zero_padded(ciphertext));
                key.update(&mut state, lengths);
                assert_eq!(
                    state.to_be_bytes(),
                    field(fields, "ghash"),
                    "{name} with {implementation}"
                );
            }
        }
    }

    #[test]
    fn powers_match_repeated_multiplication() {
        let (mut rng, seed) = seeded_rng();
        let edges = [0u128, 1, 1 << 127, u128::MAX, 0xc2 << 120, (1 << 127) | 1];
        let elements: Vec<u128> = edges
            .into_iter()
            .chain((0..50).map(|_| rng.random()))
            .collect();
        for implementation in available_implementations() {
            for &h in &elements {
                let key = key(&h.to_be_bytes(), implementation);
                // H^n by n - 1 multiplications in one chain, each one block hashed with H.
                let mut power = h;
                for n in 1..=POWERS {
                    assert_eq!(
                        key.powers()[POWERS - n],
                        prepare(power),
                        "{implementation}, H^{n}, h {h:x}, seed {seed}"
                    );
                    soft::update(prepare(h), &mut power, &[0; 16]);
                }
                // The extended table: H^33, the same 32 powers, then zeros.
                let extended = key.message_powers();
                assert_eq!(
                    extended[0],
                    prepare(power),
                    "{implementation}, H^33, h {h:x}"
                );
                assert_eq!(&extended[1..=POWERS], key.powers(), "{implementation}");
                assert!(extended[POWERS + 1..].iter().all(|&entry| entry == 0));
            }
        }
    }

    #[test]
    fn powers_start_on_a_cache_line_and_survive_clones() {
        let (mut rng, seed) = seeded_rng();
        for implementation in available_implementations() {
            // Many keys, so that the allocator hands out blocks at every offset.
            let keys: Vec<_> = (0..64)
                .map(|_| key(&rng.random(), implementation))
                .collect();
            for original in &keys {
                let copy = original.clone();
                drop(original.clone());
                for key in [original, &copy] {
                    if cfg!(target_arch = "x86_64") {
                        assert_eq!(key.powers().as_ptr() as usize % 64, 0, "{implementation}");
                    }
                }
                assert_eq!(
                    copy.message_powers(),
                    original.message_powers(),
                    "{implementation}, seed {seed}"
                );
                let x: u128 = rng.random();
                assert_eq!(copy.mul_h_pow(x, 32), original.mul_h_pow(x, 32));
            }
        }
    }

    #[test]
    fn matches_rustcrypto_ghash_on_random_inputs() {
        let (mut rng, seed) = seeded_rng();
        for implementation in available_implementations() {
            // Every short length (each tail shape), then random lengths up to 300 blocks.
            let lengths: Vec<usize> = (0..=40)
                .chain((0..100).map(|_| rng.random_range(0..=300)))
                .collect();
            for blocks in lengths {
                let h: [u8; 16] = rng.random();
                let mut data = vec![0u8; blocks * 16];
                rng.fill_bytes(&mut data);

                let mut reference = ::ghash::GHash::new(&h.into());
                reference.update_padded(&data);
                let expected = reference.finalize();

                let actual = ghash_one_pass(&key(&h, implementation), &data);
                assert_eq!(
                    actual.to_be_bytes().as_slice(),
                    expected.as_slice(),
                    "{implementation}, {blocks} blocks, seed {seed}"
                );
            }
        }
    }

    #[test]
    fn implementations_agree_on_edge_values() {
        let available = available_implementations();
        let elements = [0u128, 1, 1 << 127, u128::MAX, 0xc2 << 120, (1 << 127) | 1];
        for h in elements {
            let keys: Vec<_> = available
                .iter()
                .map(|&implementation| key(&h.to_be_bytes(), implementation))
                .collect();
            for x in elements {
                let data: Vec<u8> = (0..37)
                    .flat_map(|index| (x.rotate_left(index)).to_be_bytes())
                    .collect();
                let results: Vec<_> = keys.iter().map(|key| ghash_one_pass(key, &data)).collect();
                assert!(
                    results.windows(2).all(|pair| pair[0] == pair[1]),
                    "h {h:x} x {x:x}: {results:x?}"
                );
                let powers: Vec<_> = keys.iter().map(|key| key.mul_h_pow(x, 1_000_003)).collect();
                assert!(
                    powers.windows(2).all(|pair| pair[0] == pair[1]),
                    "h {h:x} x {x:x}: {powers:x?}"
                );
            }
        }
    }

    /// A message from [`random_message`], with what a failure message names.
    struct RandomMessage {
        key: GhashKey,
        blocks: usize,
        data: Vec<u8>,
        expected: u128,
        /// The implementation and the generator's seed.
        context: String,
    }

    /// Runs `check` on 50 random messages per available implementation, with the generator
    /// they came from (to draw more from).
    fn for_random_messages(mut check: impl FnMut(&mut StdRng, RandomMessage)) {
        let (mut rng, seed) = seeded_rng();
        for implementation in available_implementations() {
            for _ in 0..50 {
                let (key, blocks, data, expected) = random_message(&mut rng, implementation);
                let context = format!("{implementation}, seed {seed}");
                let message = RandomMessage {
                    key,
                    blocks,
                    data,
                    expected,
                    context,
                };
                check(&mut rng, message);
            }
        }
    }

    #[test]
    fn updates_in_pieces_continue_the_state() {
        for_random_messages(|rng, message| {
            let mut state = 0;
            let mut rest = message.data.as_slice();
            while !rest.is_empty() {
                let piece = rng.random_range(0..=rest.len() / 16) * 16;
                let (head, tail) = rest.split_at(piece);
                message.key.update(&mut state, head);
                rest = tail;
            }
            assert_eq!(
                state, message.expected,
                "{}, {} blocks",
                message.context, message.blocks
            );
        });
    }

    #[test]
    fn partial_sums_join_with_powers_of_h() {
        for_random_messages(|rng, message| {
            let blocks = message.blocks;
            let mut cuts: Vec<usize> = (0..rng.random_range(0..6))
                .map(|_| rng.random_range(0..=blocks))
                .collect();
            cuts.extend([0, blocks]);
            cuts.sort_unstable();
            let mut joined = 0;
            for range in cuts.windows(2) {
                let partial =
                    ghash_one_pass(&message.key, &message.data[range[0] * 16..range[1] * 16]);
                joined = message.key.mul_h_pow(joined, (range[1] - range[0]) as u64) ^ partial;
            }
            assert_eq!(
                joined, message.expected,
                "{}, cuts {cuts:?}",
                message.context
            );
        });
    }

    #[test]
    fn mul_h_pow_matches_repeated_multiplication() {
        let (mut rng, seed) = seeded_rng();
        for implementation in available_implementations() {
            let key = key(&rng.random(), implementation);
            let x: u128 = rng.random();
            assert_eq!(key.mul_h_pow(x, 0), x);
            // Hashing a zero block multiplies the state by H.
            let mut repeated = x;
            for n in 1..=100u64 {
                key.update(&mut repeated, &[0; 16]);
                assert_eq!(
                    key.mul_h_pow(x, n),
                    repeated,
                    "{implementation}, n = {n}, seed {seed}"
                );
            }
        }
    }

    #[test]
    fn a_prepared_power_joins_as_mul_h_pow_does() {
        let (mut rng, seed) = seeded_rng();
        for implementation in available_implementations() {
            let key = key(&rng.random(), implementation);
            for n in [1u64, 7, 32, 33, 256, 4096, 1 << 20] {
                let power = key.power(n);
                let (state, partial): (u128, u128) = (rng.random(), rng.random());
                assert_eq!(
                    key.append_partial_by(state, partial, &power),
                    key.append_partial(state, partial, 16 * n),
                    "{implementation}, n = {n}, seed {seed}"
                );
            }
        }
    }

    #[test]
    fn mul_h_pow_with_large_exponents() {
        let (mut rng, seed) = seeded_rng();
        let available = available_implementations();
        for _ in 0..20 {
            let h: [u8; 16] = rng.random();
            let x: u128 = rng.random();
            let keys: Vec<_> = available
                .iter()
                .map(|&implementation| key(&h, implementation))
                .collect();

            // H^(2^40) by forty squarings, each a one-block hash: state H, block 0, key H^(2^i).
            let mut power = u128::from_be_bytes(h);
            for _ in 0..40 {
                let square_key = key(&power.to_be_bytes(), Implementation::Soft);
                square_key.update(&mut power, &[0; 16]);
            }
            let x_key = key(&x.to_be_bytes(), Implementation::Soft);
            let mut expected = power;
            x_key.update(&mut expected, &[0; 16]);

            let (first, second) = (rng.next_u64() >> 2, rng.next_u64() >> 2);
            for key in &keys {
                let name = key.implementation();
                assert_eq!(key.mul_h_pow(x, 1 << 40), expected, "{name}, seed {seed}");
                assert_eq!(
                    key.mul_h_pow(key.mul_h_pow(x, first), second),
                    key.mul_h_pow(x, first + second),
                    "{name}, {first} + {second}, seed {seed}"
                );
                assert_eq!(
                    key.mul_h_pow(x, u64::MAX),
                    keys[0].mul_h_pow(x, u64::MAX),
                    "{name}, seed {seed}"
                );
            }
        }
    }

    #[test]
    #[should_panic(expected = "not whole blocks")]
    fn partial_blocks_are_refused() {
        let key = GhashKey::new(&[7; 16]);
        key.update(&mut 0, &[0; 17]);
    }
}
