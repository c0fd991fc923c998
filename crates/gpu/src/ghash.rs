//! GHASH on a device: what the OpenCL and CUDA hosts share around the `ghash_segments`
//! kernel of `parcrypt.cl`.
//!
//! The device returns one partial sum per segment of `segment_bytes` (from a zero state, a
//! final partial block zero-padded); joining them in order with powers of H is O(segments)
//! work on the host: `GhashKey::append_partial` per segment, which [`join_partials`] runs
//! over a call's segments and `GcmAccumulator::append` over a GCM message's ranges.

use parcrypt_modes::ghash::{prepare, GhashKey, HashKeyPower};
use zeroize::Zeroize;

use crate::host::MAX_SLAB_BYTES;
use crate::GpuError;

/// The kernel's function name in `parcrypt.cl`.
pub const KERNEL_NAME: &str = "ghash_segments";

/// The kernel that also joins each work-group's segments on the device (`ghash_groups`).
pub const GROUPS_KERNEL_NAME: &str = "ghash_groups";

/// Segments per work-group at most in `ghash_groups` (`GHASH_GROUP_SEGMENTS`).
pub(crate) const GROUP_SEGMENTS: usize = 256;

/// The segment size [`crate::GpuDevice::ghash_whole`] hashes per device thread: 256 blocks,
/// so a GiB is 262,144 threads, and with 256 segments per work-group the host joins one
/// sum per MiB.
pub const WHOLE_SEGMENT_BYTES: usize = 4096;

const BLOCK_BYTES: usize = 16;

/// Which way a GCM text pass goes ([`crate::GpuDevice::process_gcm`]): GHASH covers the
/// ciphertext, which is the output when encrypting and the input when decrypting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcmDirection {
    /// Plaintext in, ciphertext out: hashed after CTR.
    Encrypt,
    /// Ciphertext in: hashed as uploaded.
    Decrypt,
}

/// The hash key as the kernel takes it, (high, low) words of `H * x^-1`: the form
/// `parcrypt_modes::ghash` keeps the right operand of every multiplication in, so that the
/// Montgomery reduction's extra factor x cancels.
pub(crate) fn prepared_key_words(hash_key: &[u8; 16]) -> (u64, u64) {
    let prepared = prepare(u128::from_be_bytes(*hash_key));
    ((prepared >> 64) as u64, prepared as u64)
}

/// The keys `ghash_groups` takes for work-groups of `group` threads: the prepared key
/// ([`prepared_key_words`]) and H^group prepared the same way, the stride of each thread's
/// Horner rule over the blocks it takes (every `group`-th block of the work-group's run).
#[derive(Clone, Copy, Debug)]
pub(crate) struct GroupKeys {
    pub key: (u64, u64),
    pub stride: (u64, u64),
}

impl GroupKeys {
    pub(crate) fn new(hash_key: &[u8; 16], group: usize) -> Self {
        // The field's one is the block with only its first bit set.
        let mut power = GhashKey::new(hash_key).mul_h_pow(1u128 << 127, group as u64);
        let stride = prepare(power);
        power.zeroize();
        GroupKeys {
            key: prepared_key_words(hash_key),
            stride: ((stride >> 64) as u64, stride as u64),
        }
    }
}

/// How a call's data is cut: launches (slabs) of whole segments, segments of whole blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SegmentPlan {
    pub segment_bytes: usize,
    /// Bytes per launch: a whole number of segments.
    pub slab_bytes: usize,
}

impl SegmentPlan {
    /// Checks `segment_bytes` (whole blocks, at least one, at most one slab) and sizes the
    /// launches to as many whole segments as fit `slab_limit` bytes.
    pub(crate) fn new(segment_bytes: usize, slab_limit: usize) -> Result<Self, GpuError> {
        let slab_limit = slab_limit.min(MAX_SLAB_BYTES);
        if segment_bytes == 0
            || !segment_bytes.is_multiple_of(BLOCK_BYTES)
            || segment_bytes > slab_limit
        {
            return Err(GpuError::InvalidInput(format!(
                "GHASH segments must be whole 16-byte blocks, at least one and at most \
                 {slab_limit} bytes (this device's slab), got {segment_bytes}"
            )));
        }
        Ok(SegmentPlan {
            segment_bytes,
            slab_bytes: slab_limit / segment_bytes * segment_bytes,
        })
    }

    pub(crate) fn blocks_per_segment(self) -> u32 {
        (self.segment_bytes / BLOCK_BYTES) as u32
    }
}

/// Segments in `bytes` of data (a final short segment counts).
pub(crate) fn segment_count(bytes: usize, segment_bytes: usize) -> usize {
    bytes.div_ceil(segment_bytes)
}

/// A partial sum from the kernel's (high, low) words.
pub(crate) fn partial_from_words(high: u64, low: u64) -> u128 {
    (u128::from(high) << 64) | u128::from(low)
}

/// The GHASH of `total_bytes` of data from a zero state, from the partial sums of its
/// consecutive segments of `segment_bytes` (the last may be shorter): each running sum is
/// carried past the next segment by H^(its blocks) and the segment's sum added. H to the
/// power of a whole segment's blocks is computed once per call, so each segment costs one
/// multiplication.
pub fn join_partials(
    key: &GhashKey,
    partials: &[u128],
    segment_bytes: usize,
    total_bytes: usize,
) -> u128 {
    let whole = key.power(segment_bytes.div_ceil(BLOCK_BYTES) as u64);
    join_partials_by(key, &whole, partials, segment_bytes, total_bytes)
}

/// [`join_partials`] with H to the power of a whole segment's blocks (`whole`,
/// `key.power(segment_bytes / 16)`) made by the caller, for callers that join many ranges of
/// the same segment size.
pub fn join_partials_by(
    key: &GhashKey,
    whole: &HashKeyPower,
    partials: &[u128],
    segment_bytes: usize,
    total_bytes: usize,
) -> u128 {
    let mut state = 0u128;
    let mut remaining = total_bytes;
    for &partial in partials {
        let bytes = remaining.min(segment_bytes);
        state = if bytes == segment_bytes {
            key.append_partial_by(state, partial, whole)
        } else {
            key.append_partial(state, partial, bytes as u64)
        };
        remaining -= bytes;
    }
    state
}

/// The host's join of `ghash_groups` sums: the sums of one launch's `segments` whole
/// segments of [`WHOLE_SEGMENT_BYTES`] (as the kernel writes them, (high, low) little-endian
/// u64 pairs), `group` segments per sum (the last sum may cover fewer), appended to `sum`;
/// `full_group` is H to the power of a whole group's blocks, made once per call.
pub fn join_group_sums(
    key: &GhashKey,
    full_group: &HashKeyPower,
    mut sum: u128,
    sums: &[u8],
    segments: usize,
    group: usize,
) -> u128 {
    for (index, pair) in sums[..16 * segments.div_ceil(group)]
        .chunks_exact(16)
        .enumerate()
    {
        let high = u64::from_le_bytes(pair[..8].try_into().expect("8 bytes"));
        let low = u64::from_le_bytes(pair[8..].try_into().expect("8 bytes"));
        let partial = partial_from_words(high, low);
        let present = (segments - index * group).min(group);
        sum = if present == group {
            key.append_partial_by(sum, partial, full_group)
        } else {
            key.append_partial(sum, partial, (present * WHOLE_SEGMENT_BYTES) as u64)
        };
    }
    sum
}

/// `sum` carried past `tail` (shorter than a segment, hashed here; a final partial block
/// zero-padded) with the tail's own sum added.
pub fn append_tail(key: &GhashKey, sum: u128, tail: &[u8]) -> u128 {
    if tail.is_empty() {
        return sum;
    }
    let mut padded = [0u8; WHOLE_SEGMENT_BYTES];
    padded[..tail.len()].copy_from_slice(tail);
    let mut partial = 0u128;
    key.update(&mut partial, &padded[..tail.len().div_ceil(16) * 16]);
    key.append_partial(sum, partial, tail.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_take_whole_segments_per_launch() {
        let plan = SegmentPlan::new(4096, 10_000).unwrap();
        assert_eq!(plan.slab_bytes, 8192);
        assert_eq!(plan.blocks_per_segment(), 256);
        assert!(SegmentPlan::new(0, 1 << 20).is_err());
        assert!(SegmentPlan::new(24, 1 << 20).is_err());
        assert!(SegmentPlan::new(2 << 20, 1 << 20).is_err());
        assert_eq!(segment_count(0, 16), 0);
        assert_eq!(segment_count(17, 16), 2);
    }

    #[test]
    fn the_prepared_key_is_h_times_x_inverse() {
        // A one-bit shift, plus x^-1's constant when a bit falls off the top.
        let mut h = [0u8; 16];
        h[0] = 0x40;
        assert_eq!(prepared_key_words(&h), (0x8000_0000_0000_0000, 0));
        h[0] = 0x80;
        assert_eq!(prepared_key_words(&h), (0xc200_0000_0000_0000, 1));
    }
}
