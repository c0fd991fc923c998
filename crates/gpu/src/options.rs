//! Choices made when a device is opened, the same for every GPU API.

use std::path::PathBuf;

use crate::{LaunchGeometry, TableCopies};

/// Host data is moved through the device in slabs of at most this many bytes, so that the
/// device memory a call needs is bounded (four slab buffers) whatever the input size.
pub const DEFAULT_SLAB_BYTES: usize = 64 << 20;

/// Where compiled kernel binaries are kept between runs.
///
/// The library keeps none unless told where (it reads no environment variable and writes
/// nowhere it was not asked to); the front ends pass the user's cache folder
/// (`$XDG_CACHE_HOME/parcrypt/kernels` or `~/.cache/parcrypt/kernels`, see the facade's
/// `environment` module).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum KernelCache {
    /// The given folder.
    Directory(PathBuf),
    /// Always compile from source (the default).
    #[default]
    Disabled,
}

/// Choices made when a device is opened; the defaults suit normal use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    /// Table copies in local memory; `None` chooses from the device
    /// ([`TableCopies::for_device`]).
    pub table_copies: Option<TableCopies>,
    /// Launch shape; `None` uses [`LaunchGeometry::default_for`] the device's kind.
    pub geometry: Option<LaunchGeometry>,
    /// Bytes per slab (rounded down to whole 16-byte blocks, kept below the device's largest
    /// buffer).
    pub slab_bytes: usize,
    /// Where compiled kernels are kept between runs.
    pub kernel_cache: KernelCache,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            table_copies: None,
            geometry: None,
            slab_bytes: DEFAULT_SLAB_BYTES,
            kernel_cache: KernelCache::Disabled,
        }
    }
}

/// Where a device's compiled kernels came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProgramOrigin {
    /// Compiled from source in this process.
    Compiled,
    /// Loaded from the binary cache on disk.
    Cache,
}
