//! The HIP libraries, opened at run time: a small table of the functions this crate calls,
//! each looked up by name once, so that building needs no ROCm and a machine without it only
//! gets [`GpuError::NoHipRuntime`].
//!
//! - The runtime, libamdhip64 (`.so`, `.so.6`, `.so.5`, `.so.7`).
//! - hiprtc: inside libamdhip64 up to ROCm 5, its own libhiprtc from ROCm 6 on; looked up in
//!   the runtime first, then in libhiprtc.
//! - comgr (libamd_comgr), for the list of GPU targets the compiler knows: hiprtc 5.2 aborts
//!   the process when asked for a target it does not know (comgr frees an invalid pointer),
//!   so a target is checked against that list before hiprtc sees it.
//!
//! The signatures follow ROCm's `hip_runtime_api.h` and `hiprtc.h` (C ABI; handles are
//! opaque pointers, `hipError_t` and `hiprtcResult` are C enums, i.e. `int`).

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::OnceLock;

use libloading::Library;

use crate::GpuError;

/// `hipError_t`: 0 is success.
pub(crate) type HipStatus = c_int;
/// `hiprtcResult`: 0 is success.
pub(crate) type RtcStatus = c_int;
/// `hipStream_t`, `hipEvent_t`, `hipModule_t`, `hipFunction_t`, `hiprtcProgram`.
pub(crate) type Handle = *mut c_void;

/// The runtime's file names, newest ABI first after the unversioned development link.
pub(crate) const RUNTIME_NAMES: [&str; 4] = [
    "libamdhip64.so",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
    "libamdhip64.so.7",
];
/// hiprtc's own library (ROCm 6 and later).
const RTC_NAMES: [&str; 4] = [
    "libhiprtc.so",
    "libhiprtc.so.6",
    "libhiprtc.so.7",
    "libhiprtc.so.5",
];
/// The code-object manager hiprtc compiles through.
const COMGR_NAMES: [&str; 3] = ["libamd_comgr.so", "libamd_comgr.so.2", "libamd_comgr.so.3"];

/// Opens the first library of `names` that loads; the error names every file tried and the
/// loader's reason for the last one.
fn open_first(names: &[&'static str]) -> Result<(Library, &'static str), (String, String)> {
    let mut reason = String::new();
    for &name in names {
        // SAFETY: loading a shared library runs its initialisers; these are the HIP, hiprtc
        // and comgr libraries of a ROCm installation, whose initialisers only set up their
        // own state (no GPU is touched until hipInit).
        match unsafe { Library::new(name) } {
            Ok(library) => return Ok((library, name)),
            Err(error) => reason = error.to_string(),
        }
    }
    Err((names.join(", "), reason))
}

/// Declares a table of C functions looked up by their own names.
macro_rules! function_table {
    ($(#[$meta:meta])* $table:ident { $($name:ident: fn($($argument:ty),*) -> $result:ty;)* }) => {
        $(#[$meta])*
        #[allow(non_snake_case)]
        pub(crate) struct $table {
            $(pub(crate) $name: unsafe extern "C" fn($($argument),*) -> $result,)*
        }

        impl $table {
            /// Looks every function up in `libraries`, in order; fails on the first name none
            /// of them has.
            fn load(libraries: &[&Library]) -> Result<Self, String> {
                Ok($table {
                    $($name: {
                        let symbol = concat!(stringify!($name), "\0").as_bytes();
                        let mut found = None;
                        for library in libraries {
                            // SAFETY: the symbol is a C function of the HIP API whose
                            // signature is the field's (from ROCm's headers); the pointer is
                            // used only while the library stays loaded (it lives in a static
                            // next to this table, never unloaded).
                            if let Ok(function) = unsafe {
                                library.get::<unsafe extern "C" fn($($argument),*) -> $result>(symbol)
                            } {
                                found = Some(*function);
                                break;
                            }
                        }
                        found.ok_or_else(|| format!("{} not found", stringify!($name)))?
                    },)*
                })
            }
        }
    };
}

function_table! {
    /// The runtime calls: devices, memory, streams, events, modules and launches.
    Runtime {
        hipInit: fn(c_uint) -> HipStatus;
        hipGetDeviceCount: fn(*mut c_int) -> HipStatus;
        hipSetDevice: fn(c_int) -> HipStatus;
        hipDeviceGetAttribute: fn(*mut c_int, c_int, c_int) -> HipStatus;
        hipDeviceGetName: fn(*mut c_char, c_int, c_int) -> HipStatus;
        hipDeviceTotalMem: fn(*mut usize, c_int) -> HipStatus;
        hipRuntimeGetVersion: fn(*mut c_int) -> HipStatus;
        hipGetErrorName: fn(HipStatus) -> *const c_char;
        hipMalloc: fn(*mut *mut c_void, usize) -> HipStatus;
        hipFree: fn(*mut c_void) -> HipStatus;
        hipHostMalloc: fn(*mut *mut c_void, usize, c_uint) -> HipStatus;
        hipHostFree: fn(*mut c_void) -> HipStatus;
        hipMemcpyHtoDAsync: fn(*mut c_void, *mut c_void, usize, Handle) -> HipStatus;
        hipMemcpyDtoHAsync: fn(*mut c_void, *mut c_void, usize, Handle) -> HipStatus;
        hipMemsetAsync: fn(*mut c_void, c_int, usize, Handle) -> HipStatus;
        hipStreamCreateWithFlags: fn(*mut Handle, c_uint) -> HipStatus;
        hipStreamDestroy: fn(Handle) -> HipStatus;
        hipStreamSynchronize: fn(Handle) -> HipStatus;
        hipStreamWaitEvent: fn(Handle, Handle, c_uint) -> HipStatus;
        hipDeviceSynchronize: fn() -> HipStatus;
        hipEventCreateWithFlags: fn(*mut Handle, c_uint) -> HipStatus;
        hipEventRecord: fn(Handle, Handle) -> HipStatus;
        hipEventDestroy: fn(Handle) -> HipStatus;
        hipEventElapsedTime: fn(*mut f32, Handle, Handle) -> HipStatus;
        hipModuleLoadData: fn(*mut Handle, *const c_void) -> HipStatus;
        hipModuleUnload: fn(Handle) -> HipStatus;
        hipModuleGetFunction: fn(*mut Handle, Handle, *const c_char) -> HipStatus;
        hipFuncGetAttribute: fn(*mut c_int, c_int, Handle) -> HipStatus;
        hipModuleLaunchKernel: fn(
            Handle, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Handle,
            *mut *mut c_void, *mut *mut c_void
        ) -> HipStatus;
    }
}

function_table! {
    /// hiprtc: compiles source text to a code object for one GPU target.
    Rtc {
        hiprtcVersion: fn(*mut c_int, *mut c_int) -> RtcStatus;
        hiprtcGetErrorString: fn(RtcStatus) -> *const c_char;
        hiprtcCreateProgram: fn(
            *mut Handle, *const c_char, *const c_char, c_int, *const *const c_char,
            *const *const c_char
        ) -> RtcStatus;
        hiprtcCompileProgram: fn(Handle, c_int, *const *const c_char) -> RtcStatus;
        hiprtcDestroyProgram: fn(*mut Handle) -> RtcStatus;
        hiprtcGetProgramLogSize: fn(Handle, *mut usize) -> RtcStatus;
        hiprtcGetProgramLog: fn(Handle, *mut c_char) -> RtcStatus;
        hiprtcGetCodeSize: fn(Handle, *mut usize) -> RtcStatus;
        hiprtcGetCode: fn(Handle, *mut c_char) -> RtcStatus;
    }
}

function_table! {
    /// comgr's list of the GPU targets (ISAs) it can compile for.
    Comgr {
        amd_comgr_get_isa_count: fn(*mut usize) -> c_int;
        amd_comgr_get_isa_name: fn(usize, *mut *const c_char) -> c_int;
    }
}

/// The runtime's table and the file it came from; the library is kept loaded for the
/// process's lifetime (the table's pointers point into it).
pub(crate) struct Loaded<T> {
    pub(crate) table: T,
    pub(crate) file: &'static str,
    pub(crate) library: Library,
}

/// Why a library could not be used: the files tried and the reason.
#[derive(Clone, Debug)]
struct Failure {
    looked_for: String,
    reason: String,
}

static RUNTIME: OnceLock<Result<Loaded<Runtime>, Failure>> = OnceLock::new();
static RTC: OnceLock<Result<Loaded<Rtc>, Failure>> = OnceLock::new();
static COMGR: OnceLock<Result<Loaded<Comgr>, Failure>> = OnceLock::new();

/// Opens the first of `names` and looks `T` up in it (after `first`, where given).
fn load_table<T>(
    names: &[&'static str],
    first: Option<&Library>,
    lookup: fn(&[&Library]) -> Result<T, String>,
) -> Result<Loaded<T>, Failure> {
    let (library, file) =
        open_first(names).map_err(|(looked_for, reason)| Failure { looked_for, reason })?;
    let libraries: Vec<&Library> = first.into_iter().chain([&library]).collect();
    let table = lookup(&libraries).map_err(|reason| Failure {
        looked_for: file.to_string(),
        reason,
    })?;
    Ok(Loaded {
        table,
        file,
        library,
    })
}

/// The HIP runtime, or why it cannot be loaded.
pub(crate) fn runtime() -> Result<&'static Runtime, GpuError> {
    RUNTIME
        .get_or_init(|| load_table(&RUNTIME_NAMES, None, Runtime::load))
        .as_ref()
        .map(|loaded| &loaded.table)
        .map_err(|failure| GpuError::NoHipRuntime {
            looked_for: failure.looked_for.clone(),
            reason: failure.reason.clone(),
        })
}

/// The file the runtime was loaded from (for messages), once [`runtime`] succeeded.
pub(crate) fn runtime_file() -> Option<&'static str> {
    RUNTIME.get()?.as_ref().ok().map(|loaded| loaded.file)
}

/// hiprtc: from the runtime library where it holds hiprtc (ROCm 5), else libhiprtc.
pub(crate) fn rtc() -> Result<&'static Rtc, GpuError> {
    RTC.get_or_init(|| {
        let in_runtime = open_first(&RUNTIME_NAMES).ok().and_then(|(library, file)| {
            Rtc::load(&[&library]).ok().map(|table| Loaded {
                table,
                file,
                library,
            })
        });
        match in_runtime {
            Some(loaded) => Ok(loaded),
            None => load_table(&RTC_NAMES, None, Rtc::load),
        }
    })
    .as_ref()
    .map(|loaded| &loaded.table)
    .map_err(|failure| GpuError::NoHiprtc {
        looked_for: format!(
            "hiprtc in {} or {}",
            RUNTIME_NAMES.join(", "),
            failure.looked_for
        ),
        reason: failure.reason.clone(),
    })
}

/// `hipGetDeviceProperties` (ROCm 5) or `hipGetDevicePropertiesR0600` (ROCm 6, whose header
/// renames it): writes a `hipDeviceProp_t` of its version's layout.
pub(crate) type PropertiesFunction = unsafe extern "C" fn(*mut c_void, c_int) -> HipStatus;

/// The runtime's device-properties function, where it exports one under either name.
pub(crate) fn device_properties() -> Option<PropertiesFunction> {
    let loaded = RUNTIME.get()?.as_ref().ok()?;
    [
        &b"hipGetDevicePropertiesR0600\0"[..],
        &b"hipGetDeviceProperties\0"[..],
    ]
    .into_iter()
    .find_map(|symbol| {
        // SAFETY: both names are the runtime's C function taking (hipDeviceProp_t *, int);
        // the pointer is used only while the library stays loaded (for the process).
        unsafe { loaded.library.get::<PropertiesFunction>(symbol) }
            .ok()
            .map(|function| *function)
    })
}

/// comgr, where it can be loaded.
pub(crate) fn comgr() -> Option<&'static Comgr> {
    COMGR
        .get_or_init(|| load_table(&COMGR_NAMES, None, Comgr::load))
        .as_ref()
        .ok()
        .map(|loaded| &loaded.table)
}

/// A C string the library owns, copied; empty for a null pointer.
///
/// # Safety
/// `text` is null or points to a NUL-terminated string that stays valid during the call.
pub(crate) unsafe fn owned_text(text: *const c_char) -> String {
    if text.is_null() {
        return String::new();
    }
    // SAFETY: non-null and NUL-terminated (the caller's guarantee).
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

impl Runtime {
    /// "hipErrorNoDevice (100)".
    pub(crate) fn describe(&self, status: HipStatus) -> String {
        // SAFETY: hipGetErrorName takes any value and returns a static string (or null).
        let name = unsafe { owned_text((self.hipGetErrorName)(status)) };
        if name.is_empty() {
            format!("error {status}")
        } else {
            format!("{name} ({status})")
        }
    }

    /// `Ok` for success, else [`GpuError::Hip`] naming the call.
    pub(crate) fn check(&self, call: &'static str, status: HipStatus) -> Result<(), GpuError> {
        checked(call, status, |status| self.describe(status))
    }
}

impl Rtc {
    /// "HIPRTC_ERROR_COMPILATION (6)".
    pub(crate) fn describe(&self, status: RtcStatus) -> String {
        // SAFETY: hiprtcGetErrorString takes any value and returns a static string.
        let name = unsafe { owned_text((self.hiprtcGetErrorString)(status)) };
        format!("{name} ({status})")
    }

    /// `Ok` for success, else [`GpuError::Hip`] naming the call.
    pub(crate) fn check(&self, call: &'static str, status: RtcStatus) -> Result<(), GpuError> {
        checked(call, status, |status| self.describe(status))
    }
}

/// `Ok` for status 0 (success in both the runtime and hiprtc), else [`GpuError::Hip`] naming
/// the call and the status as `describe` spells it.
fn checked(
    call: &'static str,
    status: c_int,
    describe: impl FnOnce(c_int) -> String,
) -> Result<(), GpuError> {
    match status {
        0 => Ok(()),
        _ => Err(GpuError::Hip {
            call,
            code: describe(status),
        }),
    }
}

impl Comgr {
    /// Every target comgr knows, as `gfxNNN` (the `amdgcn-amd-amdhsa--` prefix and any
    /// `:feature` suffix removed); empty when it will not say.
    pub(crate) fn targets(&self) -> Vec<String> {
        let mut count = 0usize;
        // SAFETY: comgr writes one size_t to a live local.
        if unsafe { (self.amd_comgr_get_isa_count)(&mut count) } != 0 {
            return Vec::new();
        }
        (0..count)
            .filter_map(|index| {
                let mut name: *const c_char = std::ptr::null();
                // SAFETY: `index` is below the count comgr gave; it writes one pointer to a
                // static string it owns.
                let status = unsafe { (self.amd_comgr_get_isa_name)(index, &mut name) };
                // SAFETY: null or a NUL-terminated static string (just written by comgr).
                (status == 0).then(|| base_target(&unsafe { owned_text(name) }).to_string())
            })
            .filter(|target| target.starts_with("gfx"))
            .collect()
    }
}

/// `gfx90a` from `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-` or `gfx90a:xnack-`.
pub(crate) fn base_target(name: &str) -> &str {
    let name = name.rsplit("--").next().unwrap_or(name);
    name.split(':').next().unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_lose_their_triple_and_features() {
        assert_eq!(
            base_target("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
            "gfx90a"
        );
        assert_eq!(base_target("gfx1100"), "gfx1100");
        assert_eq!(base_target("gfx942:sramecc+"), "gfx942");
    }

    #[test]
    fn a_missing_runtime_names_every_file_tried() {
        match runtime() {
            Ok(runtime) => {
                let mut version = 0;
                // SAFETY: writes one int to a live local.
                let status = unsafe { (runtime.hipRuntimeGetVersion)(&mut version) };
                assert_eq!(status, 0, "{}", runtime.describe(status));
                assert!(version > 0);
                assert!(runtime_file().is_some_and(|file| file.starts_with("libamdhip64")));
            }
            Err(error) => {
                let text = error.to_string();
                assert!(text.contains("libamdhip64.so.5"), "{text}");
                assert!(text.starts_with("no libamdhip64"), "{text}");
            }
        }
    }
}
