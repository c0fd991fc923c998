//! Compiled kernel binaries kept on disk, one file per device and source.
//!
//! Compiling the kernels takes about a second on PoCL and can take several on GPU drivers;
//! the binary the driver hands back is stored under a name that hashes everything it depends
//! on (source text, compiler options, platform, device and driver versions), so a changed
//! source, option or driver simply misses. Every failure here — no cache directory, an
//! unreadable or truncated file, a driver that rejects the binary — falls back to compiling
//! from source: the cache can make loading faster, never make it fail. A binary that loads
//! but computes wrong results is caught by the self-test, which then recompiles.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::KernelCache;

/// Bumped when the cache file's meaning changes, so that old files are never read.
const CACHE_FORMAT: &str = "parcrypt-kernel-cache-1";

/// The directory `cache` names; `None` when caching is off.
pub(crate) fn directory(cache: &KernelCache) -> Option<PathBuf> {
    match cache {
        KernelCache::Directory(directory) => Some(directory.clone()),
        KernelCache::Disabled => None,
    }
}

/// 128-bit FNV-1a: no cryptographic strength is needed (a wrong hit is caught by the
/// self-test), only a stable, dependency-free name.
pub(crate) fn fnv1a_128(parts: &[&str]) -> u128 {
    const OFFSET_BASIS: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    let mut hash = OFFSET_BASIS;
    for part in parts {
        // A separator that cannot occur in text keeps ("ab", "c") and ("a", "bc") apart.
        for &byte in part.as_bytes().iter().chain(&[0xff]) {
            hash ^= u128::from(byte);
            hash = hash.wrapping_mul(PRIME);
        }
    }
    hash
}

/// The cache file for a program identified by `identity` (device, driver, options, source).
pub(crate) fn entry_path(directory: &Path, identity: &[&str]) -> PathBuf {
    let mut parts = vec![CACHE_FORMAT];
    parts.extend_from_slice(identity);
    directory.join(format!("{:032x}.bin", fnv1a_128(&parts)))
}

/// The cache file of a module compiled at run time (CUDA, HIP): `device` names the API, the
/// device, its driver or runtime and the compiler, everything the binary depends on besides
/// the compiler `options` and the `source`. `None` when caching is off, and then `device` is
/// not asked.
#[cfg_attr(not(any(feature = "cuda", feature = "hip")), allow(dead_code))]
pub(crate) fn module_entry<E>(
    cache: &KernelCache,
    device: impl FnOnce() -> Result<[String; 5], E>,
    options: &[String],
    source: &str,
) -> Result<Option<PathBuf>, E> {
    let Some(directory) = directory(cache) else {
        return Ok(None);
    };
    let device = device()?;
    let options = options.join(" ");
    let mut identity: Vec<&str> = device.iter().map(String::as_str).collect();
    identity.extend([options.as_str(), source]);
    Ok(Some(entry_path(&directory, &identity)))
}

/// The stored binary, or `None` when there is none or it cannot be read.
pub(crate) fn load(path: &Path) -> Option<Vec<u8>> {
    fs::read(path).ok().filter(|bytes| !bytes.is_empty())
}

/// Stores `binary` at `path`, creating the directory. Written to a temporary name and
/// renamed, so that a concurrent reader sees the whole file or none; failures are ignored,
/// since the next run just compiles again.
pub(crate) fn store(path: &Path, binary: &[u8]) {
    let Some(directory) = path.parent() else {
        return;
    };
    if fs::create_dir_all(directory).is_err() {
        return;
    }
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    let written = fs::File::create(&temporary)
        .and_then(|mut file| file.write_all(binary).and_then(|()| file.sync_all()));
    if written.is_err() || fs::rename(&temporary, path).is_err() {
        let _ = fs::remove_file(&temporary);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_depend_on_every_part() {
        let directory = Path::new("/cache");
        let base = entry_path(directory, &["device", "driver", "options", "source"]);
        assert_eq!(
            base,
            entry_path(directory, &["device", "driver", "options", "source"])
        );
        // Any changed input, and a shifted boundary between two, names another file.
        for changed in [
            ["device", "driver", "options", "source!"],
            ["device", "driver2", "options", "source"],
            ["devic", "edriver", "options", "source"],
        ] {
            assert_ne!(base, entry_path(directory, &changed), "{changed:?}");
        }
        assert!(base.to_string_lossy().ends_with(".bin"));
    }

    #[test]
    fn store_then_load_round_trips_and_missing_files_are_none() {
        let directory = tempfile::tempdir().unwrap();
        let path = entry_path(&directory.path().join("nested"), &["x"]);
        assert_eq!(load(&path), None);
        store(&path, b"binary bytes");
        assert_eq!(load(&path).as_deref(), Some(&b"binary bytes"[..]));
        // Nothing left over from the temporary file.
        assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
    }
}

/// What the OpenCL, CUDA and HIP hosts' tests of a stale cache entry share.
#[cfg(test)]
pub(crate) mod stale {
    use std::path::{Path, PathBuf};

    use crate::host::{Devices, GpuHost};
    use crate::{GpuError, KernelCache, OpenOptions, ProgramOrigin, TableCopies};

    /// `source` made subtly wrong (one round-key word swapped): kernels that build and
    /// load, but get every AES encryption wrong.
    pub(crate) fn wrong_source(source: &str) -> String {
        let wrong = source.replacen("state.x ^ keys[0]", "state.x ^ keys[1]", 1);
        assert_ne!(wrong, source);
        wrong
    }

    /// The stale-cache test every backend runs, in a fresh cache: the binary `compile`
    /// makes of `source` made wrong ([`wrong_source`]) is stored at the cache file `entry`
    /// names for the real `source` (`compile` is given that path too, for APIs whose
    /// compiler writes there itself); then, as [`assert_replaced_on_open`] says, device 0
    /// of API `A` must open compiled from source with `copies`, the stale binary replaced.
    pub(crate) fn assert_wrong_binary_replaced<A: Devices>(
        source: &str,
        copies: TableCopies,
        entry: impl FnOnce(&KernelCache) -> Option<PathBuf>,
        compile: impl FnOnce(&str, &Path) -> Vec<u8>,
    ) {
        let directory = tempfile::tempdir().unwrap();
        let cache = KernelCache::Directory(directory.path().to_path_buf());
        let path = entry(&cache).expect("a cache directory gives a cache file");
        let stale = compile(&wrong_source(source), &path);
        super::store(&path, &stale);
        assert_replaced_on_open(&path, &stale, copies, cache, |options| {
            GpuHost::<A>::open_with(0, options).map(|opened| opened.program_origin())
        });
    }

    /// Opens a device with `copies` over `cache` through `open` (which gives the opened
    /// device's program origin), with the binary `stale` stored at `path` in that cache
    /// under the real kernels' name: the self-test must catch it, and the device must come
    /// up compiled from source, with the stale binary replaced.
    fn assert_replaced_on_open(
        path: &Path,
        stale: &[u8],
        copies: TableCopies,
        cache: KernelCache,
        open: impl FnOnce(&OpenOptions) -> Result<ProgramOrigin, GpuError>,
    ) {
        let origin = open(&OpenOptions {
            table_copies: Some(copies),
            kernel_cache: cache,
            ..OpenOptions::default()
        })
        .unwrap();
        assert_eq!(origin, ProgramOrigin::Compiled);
        assert_ne!(
            std::fs::read(path).unwrap(),
            stale,
            "the stale binary was replaced"
        );
    }
}
