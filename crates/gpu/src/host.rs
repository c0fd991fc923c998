//! Host-side logic the OpenCL and CUDA hosts share, none of it tied to an API: how large
//! slabs and slab buffers are, which launch shapes are allowed and how one maps onto a
//! launch, and how many key words the device's key buffers hold.

use crate::{GpuError, LaunchGeometry};

/// The largest slab or launch: keeps every block index of a launch well inside the kernels'
/// 32-bit counters (2^27 blocks of 8 bytes).
pub(crate) const MAX_SLAB_BYTES: usize = 1 << 30;

/// Round-key words the key buffer holds: AES-256's 60 is the most any cipher needs.
pub(crate) const ROUND_KEY_WORDS: usize = 64;
/// Key-dependent table words: Blowfish's four S-boxes.
pub(crate) const KEY_TABLE_WORDS: usize = 1024;

/// The slab size actually used: whole 16-byte blocks (so every cipher's blocks and CBC
/// chaining line up at slab edges), at least one block, at most [`MAX_SLAB_BYTES`] and
/// within the device's largest buffer, `max_allocation_bytes`.
pub(crate) fn slab_size(requested: usize, max_allocation_bytes: u64) -> usize {
    let device_limit = usize::try_from(max_allocation_bytes).unwrap_or(usize::MAX);
    let bytes = requested.min(device_limit).min(MAX_SLAB_BYTES);
    (bytes / 16 * 16).max(16)
}

/// The size to allocate for a slab buffer that must hold `bytes`: small inputs get small
/// buffers, rounded up to a power of two so that growing inputs do not reallocate every
/// call; nothing grows past `limit` (the slab size) unless `bytes` itself does.
pub(crate) fn grown_capacity(bytes: usize, limit: usize) -> usize {
    bytes.next_power_of_two().min(limit).max(bytes)
}

/// Refuses launch shapes without threads or without blocks per thread.
pub(crate) fn validate_geometry(geometry: LaunchGeometry) -> Result<(), GpuError> {
    if geometry.threads_per_group == 0 || geometry.blocks_per_thread == 0 {
        return Err(GpuError::InvalidInput(format!(
            "launch geometry needs at least one thread per group and one block per thread, \
             got {geometry:?}"
        )));
    }
    Ok(())
}

/// The shape of a launch over `blocks` blocks of a kernel that allows at most
/// `max_group_size` threads per group: `(threads per group, groups)`, with at least one
/// thread per group and one group, and the grid sized to `blocks / blocks_per_thread`
/// threads rounded up to whole groups.
pub(crate) fn launch_shape(
    geometry: LaunchGeometry,
    blocks: usize,
    max_group_size: usize,
) -> (usize, usize) {
    let group_size = geometry.threads_per_group.min(max_group_size).max(1);
    let threads = blocks.div_ceil(geometry.blocks_per_thread);
    (group_size, threads.div_ceil(group_size).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_SLAB_BYTES;

    #[test]
    fn slabs_are_whole_blocks_within_limits() {
        assert_eq!(slab_size(DEFAULT_SLAB_BYTES, 2 << 30), DEFAULT_SLAB_BYTES);
        assert_eq!(slab_size(1000, 2 << 30), 992);
        assert_eq!(slab_size(3, 2 << 30), 16);
        assert_eq!(slab_size(DEFAULT_SLAB_BYTES, 1 << 20), 1 << 20);
        assert_eq!(slab_size(usize::MAX, u64::MAX), MAX_SLAB_BYTES);
        // No device limit (CUDA): only the blocks and MAX_SLAB_BYTES.
        assert_eq!(slab_size(64 << 20, u64::MAX), 64 << 20);
        assert_eq!(slab_size(1000, u64::MAX), 992);
        assert_eq!(slab_size(3, u64::MAX), 16);
    }

    #[test]
    fn slab_buffers_grow_by_powers_of_two_up_to_the_slab() {
        assert_eq!(grown_capacity(1000, 4096), 1024);
        assert_eq!(grown_capacity(5000, 4096), 5000);
        assert_eq!(grown_capacity(4096, 4096), 4096);
    }

    #[test]
    fn zero_geometry_is_refused() {
        let bad = LaunchGeometry {
            threads_per_group: 0,
            blocks_per_thread: 4,
        };
        assert!(validate_geometry(bad).is_err());
        let bad = LaunchGeometry {
            threads_per_group: 4,
            blocks_per_thread: 0,
        };
        assert!(validate_geometry(bad).is_err());
    }

    #[test]
    fn launches_cover_every_block_in_whole_groups() {
        let geometry = LaunchGeometry {
            threads_per_group: 256,
            blocks_per_thread: 16,
        };
        // 1000 blocks: 63 threads, one group of 256.
        assert_eq!(launch_shape(geometry, 1000, 1024), (256, 1));
        // Clamped to what the kernel allows: 63 threads in groups of 32.
        assert_eq!(launch_shape(geometry, 1000, 32), (32, 2));
        assert_eq!(launch_shape(geometry, 1 << 20, 1024), (256, 256));
        // Nothing to do still launches one group (never the case on the hosts' paths).
        assert_eq!(launch_shape(geometry, 0, 1024), (256, 1));
    }
}
