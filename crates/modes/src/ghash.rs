//! GHASH (SP 800-38D section 6.4): placeholder, being written.
//!
//! Field elements are 16-byte blocks in the spec's bit order (the first byte holds x^0..x^7,
//! most significant bit first), represented here as `u128` read big-endian from the block.

/// H and its first powers, precomputed once per key.
pub struct GhashKey;

impl GhashKey {
    /// `h` is E_K(0^128).
    pub fn new(_h: &[u8; 16]) -> Self { todo!() }
    /// state = (state XOR X_1) * H, then the same for each further block X_i of `blocks`
    /// (`blocks.len()` a multiple of 16): the running GHASH of the spec.
    pub fn update(&self, _state: &mut u128, _blocks: &[u8]) { todo!() }
    /// Returns x * H^n (n = 0 returns x): used to join partial sums of consecutive ranges.
    pub fn mul_h_pow(&self, _x: u128, _n: u64) -> u128 { todo!() }
}
