//! hiprtc: the kernel source compiled for one AMD GPU target (`gfx90a`, ...), with no GPU
//! needed. That is what lets CI check every kernel for AMD GPUs it does not have.
//!
//! Shared tables are always static on HIP (no dynamic-shared variant): a work-group's LDS is
//! at most 64 KiB, so table copies are chosen to fit it ([`table_copies_for`]), which leaves
//! Blowfish 16 copies (64 KiB) where CUDA has 32.

use std::ffi::{c_char, CString};

use super::library::{self, Handle, Rtc};
use crate::kernel_source::{self, CipherFamily};
use crate::{ghash, DeviceKind, GpuError, TableCopies};

/// The most LDS (shared memory) one work-group may have on AMD GPUs.
pub const LDS_LIMIT_BYTES: u64 = 64 * 1024;

/// The table copies for a HIP device whose work-groups may have `local_memory_bytes` of
/// LDS: per table the largest power of two up to 32 that fits, never more than 64 KiB. That
/// gives 32 AES copies and 16 Blowfish copies on every AMD GPU with 64 KiB.
pub fn table_copies_for(local_memory_bytes: u64) -> TableCopies {
    TableCopies::for_device(DeviceKind::Gpu, local_memory_bytes.min(LDS_LIMIT_BYTES))
}

/// hiprtc's options for `target`: the target, the language standard vendor_cuda.h needs,
/// and the table-copy defines.
pub fn hiprtc_options(target: &str, table_copies: TableCopies) -> Vec<String> {
    let mut options = vec![
        format!("--offload-arch={target}"),
        "-std=c++17".to_string(),
        "-O3".to_string(),
    ];
    options.extend(
        table_copies
            .defines()
            .iter()
            .map(|(name, copies)| format!("-D{name}={copies}")),
    );
    options
}

/// hiprtc's version, e.g. (5, 2).
pub fn hiprtc_version() -> Result<(i32, i32), GpuError> {
    let rtc = library::rtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: hiprtc writes one int to each live local.
    rtc.check("hiprtcVersion", unsafe {
        (rtc.hiprtcVersion)(&mut major, &mut minor)
    })?;
    Ok((major, minor))
}

/// The GPU targets this hiprtc can compile for (from comgr), e.g. `gfx90a`, or `None` when
/// comgr cannot be loaded to say.
pub fn known_targets() -> Option<Vec<String>> {
    library::comgr().map(library::Comgr::targets)
}

/// Refuses a target the compiler does not know before hiprtc sees it: hiprtc 5.2 aborts the
/// process on one (comgr frees an invalid pointer). Where comgr cannot be asked, the
/// target goes through unchecked.
pub fn check_target(target: &str) -> Result<(), GpuError> {
    let base = library::base_target(target);
    if !base.starts_with("gfx") || base.len() < 6 {
        return Err(GpuError::InvalidInput(format!(
            "`{target}` is not an AMD GPU target: use gfxNNN, e.g. gfx90a"
        )));
    }
    match known_targets() {
        Some(known) if !known.is_empty() && !known.iter().any(|name| name == base) => {
            Err(GpuError::InvalidInput(format!(
                "this hiprtc cannot compile for {base}: its compiler knows {}; install a newer \
                 ROCm for this GPU",
                known.join(", ")
            )))
        }
        _ => Ok(()),
    }
}

/// A hiprtc program, destroyed when dropped.
struct Program {
    rtc: &'static Rtc,
    handle: Handle,
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the handle came from hiprtcCreateProgram and is destroyed only here.
        let _ = unsafe { (self.rtc.hiprtcDestroyProgram)(&mut self.handle) };
    }
}

impl Program {
    /// The compiler's log (warnings or errors); empty when it has none.
    fn log(&self) -> String {
        let mut size = 0usize;
        // SAFETY: the program is live; hiprtc writes one size_t.
        let status = unsafe { (self.rtc.hiprtcGetProgramLogSize)(self.handle, &mut size) };
        if status != 0 {
            return format!("(hiprtc gave no log: {})", self.rtc.describe(status));
        }
        let mut log = vec![0u8; size.max(1)];
        // SAFETY: the buffer holds the `size` bytes hiprtc just reported (at least one).
        let status =
            unsafe { (self.rtc.hiprtcGetProgramLog)(self.handle, log.as_mut_ptr().cast()) };
        if status != 0 {
            return format!("(hiprtc gave no log: {})", self.rtc.describe(status));
        }
        let end = log.iter().position(|&byte| byte == 0).unwrap_or(log.len());
        String::from_utf8_lossy(&log[..end]).into_owned()
    }

    fn code(&self) -> Result<Vec<u8>, GpuError> {
        let mut size = 0usize;
        // SAFETY: the program is live and compiled; hiprtc writes one size_t.
        self.rtc.check("hiprtcGetCodeSize", unsafe {
            (self.rtc.hiprtcGetCodeSize)(self.handle, &mut size)
        })?;
        if size == 0 {
            return Err(GpuError::Hip {
                call: "hiprtcGetCodeSize",
                code: "hiprtc produced no code object".into(),
            });
        }
        let mut code = vec![0u8; size];
        // SAFETY: the buffer holds the `size` bytes hiprtc just reported.
        self.rtc.check("hiprtcGetCode", unsafe {
            (self.rtc.hiprtcGetCode)(self.handle, code.as_mut_ptr().cast::<c_char>())
        })?;
        Ok(code)
    }
}

/// Whether `image` looks like a code object hiprtc makes (an ELF, or a clang offload bundle
/// around one): cached files are checked before the runtime sees them.
pub(crate) fn plausible_code_object(image: &[u8]) -> bool {
    image.starts_with(b"\x7fELF") || image.starts_with(b"__CLANG_OFFLOAD_BUNDLE__")
}

/// Compiles `source` for `target` with `options` and returns the code object; on failure the
/// error carries hiprtc's whole log.
pub(crate) fn compile_source(
    source: &str,
    target: &str,
    options: &[String],
) -> Result<Vec<u8>, GpuError> {
    check_target(target)?;
    let rtc = library::rtc()?;
    let source = CString::new(source)
        .map_err(|_| GpuError::InvalidInput("kernel source contains a NUL byte".into()))?;
    let name = CString::new("parcrypt.hip").expect("no NUL in a literal");
    let option_strings = options
        .iter()
        .map(|option| CString::new(option.as_str()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| GpuError::InvalidInput("a compiler option contains a NUL byte".into()))?;
    let option_pointers: Vec<*const c_char> = option_strings
        .iter()
        .map(|option| option.as_ptr())
        .collect();
    let mut handle: Handle = std::ptr::null_mut();
    // SAFETY: both strings are NUL-terminated and live for the call; no headers are passed
    // (count 0, null arrays); hiprtc writes one program handle.
    rtc.check("hiprtcCreateProgram", unsafe {
        (rtc.hiprtcCreateProgram)(
            &mut handle,
            source.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    })?;
    let program = Program { rtc, handle };
    let count = i32::try_from(option_pointers.len())
        .map_err(|_| GpuError::InvalidInput("too many compiler options".into()))?;
    // SAFETY: the program is live; `count` pointers to NUL-terminated options that outlive
    // the call (hiprtc copies them).
    let status =
        unsafe { (rtc.hiprtcCompileProgram)(program.handle, count, option_pointers.as_ptr()) };
    if status != 0 {
        return Err(GpuError::HiprtcCompile {
            target: target.to_string(),
            options: options.join(" "),
            result: rtc.describe(status),
            log: program.log(),
        });
    }
    program.code()
}

/// Compiles the kernels with `table_copies` for `target`.
pub fn compile_for(target: &str, table_copies: TableCopies) -> Result<Vec<u8>, GpuError> {
    table_copies.validate()?;
    compile_source(
        &kernel_source::hip_source(),
        target,
        &hiprtc_options(target, table_copies),
    )
}

/// The name of every kernel function a HIP device loads: each family's kernels, then GHASH.
pub fn kernel_names() -> Vec<&'static str> {
    CipherFamily::ALL
        .iter()
        .flat_map(|&family| kernel_source::family_kernels(family))
        .map(|kernel| kernel.name)
        .chain([ghash::KERNEL_NAME])
        .collect()
}

/// The kernels `image` lacks: each name must appear as a whole symbol name (followed by its
/// terminating NUL in the code object's string table), so `aes_ctr_segments` does not count
/// for `aes_ctr`.
pub fn missing_kernels(image: &[u8]) -> Vec<&'static str> {
    kernel_names()
        .into_iter()
        .filter(|name| {
            let mut symbol = name.as_bytes().to_vec();
            symbol.push(0);
            !image.windows(symbol.len()).any(|window| window == symbol)
        })
        .collect()
}

/// Compiles the kernels for `target` with the copies a 64 KiB HIP device uses, and checks
/// that the code object is one and holds every kernel; returns it. Needs only hiprtc.
pub fn compile_check(target: &str) -> Result<Vec<u8>, GpuError> {
    let table_copies = table_copies_for(LDS_LIMIT_BYTES);
    let image = compile_for(target, table_copies)?;
    if !plausible_code_object(&image) {
        return Err(GpuError::InvalidInput(format!(
            "hiprtc's {target} output is neither an ELF nor an offload bundle"
        )));
    }
    let missing = missing_kernels(&image);
    if !missing.is_empty() {
        return Err(GpuError::InvalidInput(format!(
            "the {target} code object ({table_copies}) lacks kernels {}",
            missing.join(", ")
        )));
    }
    Ok(image)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_fit_64_kib_of_lds() {
        let copies = table_copies_for(64 * 1024);
        // AES encryption's tables (Te0 and its rotation, 2 KiB a copy) fit a copy per lane;
        // decryption's (2.25 KiB a copy) fit 16, as do Blowfish's (4 KiB a copy).
        assert_eq!(copies.aes_encrypt, 32);
        assert_eq!(copies.aes_decrypt, 16);
        assert_eq!(copies.blowfish, 16);
        assert!(copies.largest_table_bytes() <= 64 * 1024);
        // A device that reports more LDS still gets what 64 KiB holds.
        assert_eq!(table_copies_for(160 * 1024), copies);
        assert_eq!(table_copies_for(32 * 1024).blowfish, 8);
    }

    #[test]
    fn options_name_the_target_and_every_define() {
        let options = hiprtc_options("gfx90a", table_copies_for(LDS_LIMIT_BYTES));
        assert_eq!(options[0], "--offload-arch=gfx90a");
        assert!(options.contains(&"-DBLOWFISH_TABLE_COPIES=16".to_string()));
        assert!(options.contains(&"-DAES_ENCRYPT_TABLE_COPIES=32".to_string()));
        assert!(options.contains(&"-DAES_DECRYPT_TABLE_COPIES=16".to_string()));
        assert!(!options.iter().any(|option| option.contains("DYNAMIC")));
    }

    #[test]
    fn every_kernel_is_named_once_and_found_whole() {
        let names = kernel_names();
        assert_eq!(names.len(), 3 * 5 + 1);
        let mut image = Vec::new();
        for name in &names {
            image.extend_from_slice(name.as_bytes());
            image.push(0);
        }
        assert!(missing_kernels(&image).is_empty());
        // `aes_ctr_segments` alone does not stand for `aes_ctr`.
        let partial: Vec<u8> = image
            .split(|&byte| byte == 0)
            .filter(|name| *name != b"aes_ctr")
            .flat_map(|name| name.iter().copied().chain([0]))
            .collect();
        assert_eq!(missing_kernels(&partial), ["aes_ctr"]);
    }

    #[test]
    fn targets_are_checked_before_hiprtc_sees_them() {
        for bad in ["sm_90", "gfx", "90a", ""] {
            assert!(check_target(bad).is_err(), "{bad}");
        }
        assert!(plausible_code_object(b"\x7fELF\x02\x01"));
        assert!(plausible_code_object(b"__CLANG_OFFLOAD_BUNDLE__\x02"));
        assert!(!plausible_code_object(b"not code"));
    }
}
