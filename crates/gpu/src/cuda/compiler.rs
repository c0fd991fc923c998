//! NVRTC: the kernel source compiled for one GPU architecture, with no GPU needed.
//!
//! libnvrtc is opened at run time (cudarc's `dynamic-loading`), so this module works on any
//! machine that has the library, GPU or not; that is what lets CI check that every variant of
//! the kernels compiles. cudarc's own `compile_ptx` only returns PTX and panics if NVRTC will
//! not hand over its log, so the few NVRTC calls are made here directly.

use std::ffi::{c_char, CString};

use cudarc::nvrtc::result as nvrtc;
use cudarc::nvrtc::sys;

use crate::kernel_source::{self, kernel_name, CipherFamily, KernelOperation};
use crate::{GpuError, TableCopies};

/// The largest static `__shared__` declaration a CUDA kernel may make; anything larger must
/// be dynamic shared memory with the opt-in attribute raised (see `vendor_cuda.h`).
pub const STATIC_SHARED_LIMIT_BYTES: u32 = 48 * 1024;

/// Words each kernel family keeps per table copy in shared memory, as `parcrypt.cl`'s
/// `AES_ENCRYPT_SHARED_WORDS`, `AES_DECRYPT_SHARED_WORDS` and `BLOWFISH_SHARED_WORDS`
/// define them: Te0 and its rotation Te1; Td0, Td1 and the packed inverse S-box; the four
/// Blowfish S-boxes.
const AES_ENCRYPT_WORDS_PER_COPY: u32 = 2 * 256;
const AES_DECRYPT_WORDS_PER_COPY: u32 = 2 * 256 + 64;
const BLOWFISH_WORDS_PER_COPY: u32 = 1024;

/// One compile-time configuration of the kernels: the table copies and whether shared
/// tables are declared dynamic (sized at launch) rather than static.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelVariant {
    /// How many copies of each table the kernels keep in shared memory.
    pub table_copies: TableCopies,
    /// Whether the shared tables are sized at launch (dynamic shared memory) rather than
    /// declared with a fixed size in the source.
    pub dynamic_shared: bool,
}

impl KernelVariant {
    /// The variant the host compiles for `table_copies`: static shared memory when every
    /// kernel fits the 48 KiB static limit, else dynamic for all of them (the switch is one
    /// define for the whole source).
    pub fn for_table_copies(table_copies: TableCopies) -> Self {
        let static_variant = KernelVariant {
            table_copies,
            dynamic_shared: false,
        };
        let largest = CipherFamily::ALL
            .iter()
            .flat_map(|&family| {
                KernelOperation::ALL
                    .iter()
                    .map(move |&operation| static_variant.table_bytes(family, operation))
            })
            .max()
            .unwrap_or(0);
        KernelVariant {
            table_copies,
            dynamic_shared: largest > STATIC_SHARED_LIMIT_BYTES,
        }
    }

    /// Shared-memory bytes the kernel's tables take, static or dynamic.
    pub fn table_bytes(self, family: CipherFamily, operation: KernelOperation) -> u32 {
        let copies = self.table_copies;
        let words = match family {
            CipherFamily::Aes if operation.decrypts() => {
                AES_DECRYPT_WORDS_PER_COPY * copies.aes_decrypt
            }
            CipherFamily::Aes => AES_ENCRYPT_WORDS_PER_COPY * copies.aes_encrypt,
            CipherFamily::Blowfish => BLOWFISH_WORDS_PER_COPY * copies.blowfish,
            CipherFamily::Rc6 => 0,
        };
        words * 4
    }

    /// The dynamic shared memory a launch of the kernel must ask for: its table bytes in a
    /// dynamic variant, nothing in a static one.
    pub fn launch_shared_bytes(self, family: CipherFamily, operation: KernelOperation) -> u32 {
        if self.dynamic_shared {
            self.table_bytes(family, operation)
        } else {
            0
        }
    }

    /// NVRTC options for `architecture`, e.g. `sm_90` or `compute_90`.
    pub fn nvrtc_options(self, architecture: &str) -> Vec<String> {
        let mut options = vec![
            format!("--gpu-architecture={architecture}"),
            // vendor_cuda.h uses alignas; nothing needs a later standard.
            "--std=c++17".to_string(),
        ];
        // NVRTC takes one definition per option string; the `-D NAME=VALUE` spelling of
        // TableCopies::compiler_options is for the OpenCL compiler's single option string.
        options.extend(
            self.table_copies
                .defines()
                .iter()
                .map(|(name, copies)| format!("--define-macro={name}={copies}")),
        );
        if self.dynamic_shared {
            options.push("--define-macro=PARCRYPT_CUDA_DYNAMIC_SHARED".to_string());
        }
        options
    }
}

/// What NVRTC hands back for an architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ImageKind {
    /// `sm_XY`: machine code for exactly that GPU, loaded by the driver as is.
    Cubin,
    /// `compute_XY`: PTX, which the driver compiles on load (and which an older driver may
    /// refuse if NVRTC is newer than it).
    Ptx,
}

impl ImageKind {
    pub(crate) fn of(architecture: &str) -> Result<Self, GpuError> {
        let (kind, number) = if let Some(number) = architecture.strip_prefix("sm_") {
            (ImageKind::Cubin, number)
        } else if let Some(number) = architecture.strip_prefix("compute_") {
            (ImageKind::Ptx, number)
        } else {
            (ImageKind::Ptx, "")
        };
        // Digits, optionally followed by NVIDIA's `a` / `f` feature-set suffix (sm_90a).
        let digits = number.trim_end_matches(['a', 'f']);
        if digits.len() < 2 || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(GpuError::InvalidInput(format!(
                "`{architecture}` is not a GPU architecture: use sm_XY for a CUBIN (e.g. sm_90) \
                 or compute_XY for PTX (e.g. compute_90)"
            )));
        }
        Ok(kind)
    }

    /// Whether `image` looks like a whole image of this kind: cached files are checked
    /// before the driver sees them.
    pub(crate) fn plausible(self, image: &[u8]) -> bool {
        match self {
            ImageKind::Cubin => image.starts_with(b"\x7fELF"),
            // The driver reads PTX as a C string.
            ImageKind::Ptx => image.ends_with(&[0]) && image.windows(8).any(|w| w == b".version"),
        }
    }
}

/// Finds libnvrtc. Must come before any other NVRTC call: cudarc panics on first use of a
/// library it cannot open.
pub fn check_nvrtc() -> Result<(), GpuError> {
    // SAFETY: only tries to open the library under each candidate name; no symbol is used.
    if unsafe { sys::is_culib_present() } {
        Ok(())
    } else {
        Err(GpuError::NoNvrtc {
            looked_for: super::devices::library_names("nvrtc"),
        })
    }
}

/// NVRTC's version, e.g. (13, 0).
pub fn nvrtc_version() -> Result<(i32, i32), GpuError> {
    check_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both pointers are to live locals that NVRTC writes one int to.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|error| nvrtc_error("nvrtcVersion", error))?;
    Ok((major, minor))
}

/// The real architectures (e.g. 90 for sm_90) this NVRTC can produce CUBINs for.
pub(crate) fn supported_architectures() -> Result<Vec<i32>, GpuError> {
    check_nvrtc()?;
    let mut count = 0;
    // SAFETY: NVRTC writes one int.
    unsafe { sys::nvrtcGetNumSupportedArchs(&mut count) }
        .result()
        .map_err(|error| nvrtc_error("nvrtcGetNumSupportedArchs", error))?;
    let mut architectures = vec![0; usize::try_from(count).unwrap_or(0)];
    if !architectures.is_empty() {
        // SAFETY: the buffer holds the `count` ints NVRTC just said it will write.
        unsafe { sys::nvrtcGetSupportedArchs(architectures.as_mut_ptr()) }
            .result()
            .map_err(|error| nvrtc_error("nvrtcGetSupportedArchs", error))?;
    }
    Ok(architectures)
}

/// The architecture to compile for a GPU of compute capability `major.minor`: its own
/// `sm_XY` CUBIN when NVRTC knows it (no PTX-version question with the driver), else PTX
/// for the newest architecture NVRTC has that the GPU can run, for the driver to finish.
pub(crate) fn architecture_for(major: u32, minor: u32) -> Result<String, GpuError> {
    let wanted = (major * 10 + minor) as i32;
    let supported = supported_architectures()?;
    if supported.contains(&wanted) {
        return Ok(format!("sm_{wanted}"));
    }
    // PTX of a lower architecture runs on a higher one of the same or a later major.
    match supported
        .iter()
        .copied()
        .filter(|&arch| arch <= wanted)
        .max()
    {
        Some(arch) => Ok(format!("compute_{arch}")),
        None => Err(GpuError::InvalidInput(format!(
            "this NVRTC cannot compile for compute capability {major}.{minor} (it supports \
             {supported:?}); install the NVRTC that matches the driver"
        ))),
    }
}

fn nvrtc_error(call: &'static str, error: nvrtc::NvrtcError) -> GpuError {
    GpuError::Cuda {
        call,
        code: format!("{:?}", error.0),
    }
}

/// An NVRTC program, destroyed when dropped.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the handle came from nvrtcCreateProgram and is destroyed only here.
        let _ = unsafe { nvrtc::destroy_program(self.0) };
    }
}

impl Program {
    /// The compiler's log as text (warnings or errors); empty when it has none.
    fn log(&self) -> String {
        // SAFETY: the program is live until `self` drops.
        match unsafe { nvrtc::get_program_log(self.0) } {
            Ok(characters) => {
                let bytes: Vec<u8> = characters
                    .iter()
                    .map(|&character| character as u8)
                    .take_while(|&byte| byte != 0)
                    .collect();
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Err(error) => format!("(NVRTC gave no log: {:?})", error.0),
        }
    }

    fn cubin(&self) -> Result<Vec<u8>, GpuError> {
        let mut size = 0usize;
        // SAFETY: the program is live and compiled; NVRTC writes one size_t.
        unsafe { sys::nvrtcGetCUBINSize(self.0, &mut size) }
            .result()
            .map_err(|error| nvrtc_error("nvrtcGetCUBINSize", error))?;
        if size == 0 {
            return Err(GpuError::Cuda {
                call: "nvrtcGetCUBINSize",
                code: "NVRTC produced no CUBIN (was a compute_XY architecture given?)".into(),
            });
        }
        let mut image = vec![0u8; size];
        // SAFETY: the buffer holds the `size` bytes NVRTC just reported.
        unsafe { sys::nvrtcGetCUBIN(self.0, image.as_mut_ptr().cast::<c_char>()) }
            .result()
            .map_err(|error| nvrtc_error("nvrtcGetCUBIN", error))?;
        Ok(image)
    }

    fn ptx(&self) -> Result<Vec<u8>, GpuError> {
        // SAFETY: the program is live and compiled.
        let characters =
            unsafe { nvrtc::get_ptx(self.0) }.map_err(|error| nvrtc_error("nvrtcGetPTX", error))?;
        // Kept with its terminating NUL: the driver loads PTX as a C string.
        Ok(characters
            .iter()
            .map(|&character| character as u8)
            .collect())
    }
}

/// Compiles `source` with `options` (which must name the architecture) and returns the CUBIN
/// or PTX image; on failure the error carries NVRTC's whole log.
pub(crate) fn compile_source(
    source: &str,
    architecture: &str,
    options: &[String],
) -> Result<Vec<u8>, GpuError> {
    let kind = ImageKind::of(architecture)?;
    let program = compiled_program(source, architecture, options)?;
    match kind {
        ImageKind::Cubin => program.cubin(),
        ImageKind::Ptx => program.ptx(),
    }
}

/// Runs NVRTC over `source`; the program, compiled, is kept for its image and log.
fn compiled_program(
    source: &str,
    architecture: &str,
    options: &[String],
) -> Result<Program, GpuError> {
    check_nvrtc()?;
    let source = CString::new(source)
        .map_err(|_| GpuError::InvalidInput("kernel source contains a NUL byte".into()))?;
    let name = CString::new("parcrypt.cu").expect("no NUL in a literal");
    let program = Program(
        nvrtc::create_program(&source, Some(&name))
            .map_err(|error| nvrtc_error("nvrtcCreateProgram", error))?,
    );
    // SAFETY: the program is live; the options are plain strings NVRTC copies.
    if let Err(error) = unsafe { nvrtc::compile_program(program.0, options) } {
        return Err(GpuError::NvrtcCompile {
            arch: architecture.to_string(),
            options: options.join(" "),
            result: format!("{:?}", error.0),
            log: program.log(),
        });
    }
    Ok(program)
}

/// Compiles the kernels in `variant` for `architecture`.
pub fn compile_variant(architecture: &str, variant: KernelVariant) -> Result<Vec<u8>, GpuError> {
    variant.table_copies.validate()?;
    compile_source(
        &kernel_source::cuda_source(),
        architecture,
        &variant.nvrtc_options(architecture),
    )
}

/// What the static kernel report reads: a CUBIN and the assembler's resource log.
#[derive(Clone, Debug)]
pub struct CompiledReport {
    /// The sm_XY CUBIN, the same machine code the host would load for that architecture.
    pub cubin: Vec<u8>,
    /// NVRTC's log with ptxas's `-v` lines: registers, shared memory, spills per kernel.
    pub log: String,
    /// The options NVRTC was given: the host's own plus `--ptxas-options=-v`.
    pub options: Vec<String>,
}

/// Compiles `variant` for the real architecture `architecture` (e.g. `sm_90`) exactly as the
/// host does, plus ptxas's verbose flag, which only adds the resource lines to the log and
/// leaves the machine code unchanged. scripts/kernel-report.py reads the result through the
/// `kernel_cubin` example, so the report and the host share one source of options.
pub fn compile_for_report(
    architecture: &str,
    variant: KernelVariant,
) -> Result<CompiledReport, GpuError> {
    variant.table_copies.validate()?;
    if ImageKind::of(architecture)? != ImageKind::Cubin {
        return Err(GpuError::InvalidInput(format!(
            "the kernel report needs machine code: use sm_XY, not `{architecture}`"
        )));
    }
    let mut options = variant.nvrtc_options(architecture);
    options.push("--ptxas-options=-v".to_string());
    let program = compiled_program(&kernel_source::cuda_source(), architecture, &options)?;
    Ok(CompiledReport {
        cubin: program.cubin()?,
        log: program.log(),
        options,
    })
}

/// Every variant a CUDA host may compile: each valid table-copy count, with static shared
/// memory wherever it fits and dynamic shared memory always (so both sides of the
/// `PARCRYPT_CUDA_DYNAMIC_SHARED` switch are compiled for every kernel that has tables).
pub fn host_variants() -> Vec<KernelVariant> {
    let mut variants = Vec::new();
    for copies in TableCopies::VALID_COUNTS {
        let natural = KernelVariant::for_table_copies(TableCopies::uniform(copies));
        variants.push(natural);
        if !natural.dynamic_shared {
            variants.push(KernelVariant {
                dynamic_shared: true,
                ..natural
            });
        }
    }
    variants
}

/// Compiles every variant in [`host_variants`] for `architecture` (`sm_90` gives CUBINs,
/// `compute_90` PTX), checks that each image names every kernel, and returns the image of
/// the per-lane variant (32 copies, dynamic shared memory) that a GPU with enough shared
/// memory, such as the H200, runs. Needs only NVRTC, no GPU or driver.
pub fn compile_check(architecture: &str) -> Result<Vec<u8>, GpuError> {
    let per_lane = KernelVariant::for_table_copies(TableCopies::uniform(TableCopies::PER_LANE));
    let mut per_lane_image = None;
    for variant in host_variants() {
        let image = compile_variant(architecture, variant)?;
        for family in CipherFamily::ALL {
            for operation in KernelOperation::ALL {
                let name = kernel_name(family, operation);
                if !image
                    .windows(name.len())
                    .any(|window| window == name.as_bytes())
                {
                    return Err(GpuError::InvalidInput(format!(
                        "the {architecture} image of {variant:?} lacks kernel {name}"
                    )));
                }
            }
        }
        if variant == per_lane {
            per_lane_image = Some(image);
        }
    }
    Ok(per_lane_image.expect("host_variants includes the per-lane variant"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_bytes_follow_the_kernel_macros() {
        let per_lane = KernelVariant::for_table_copies(TableCopies::uniform(32));
        assert!(per_lane.dynamic_shared, "Blowfish needs 128 KiB");
        let bytes = |family, operation| per_lane.launch_shared_bytes(family, operation);
        assert_eq!(bytes(CipherFamily::Aes, KernelOperation::Ctr), 64 * 1024);
        assert_eq!(
            bytes(CipherFamily::Aes, KernelOperation::CbcDecrypt),
            72 * 1024
        );
        assert_eq!(
            bytes(CipherFamily::Blowfish, KernelOperation::EcbEncrypt),
            128 * 1024
        );
        assert_eq!(bytes(CipherFamily::Rc6, KernelOperation::Ctr), 0);

        let eight = KernelVariant::for_table_copies(TableCopies::uniform(8));
        assert!(
            !eight.dynamic_shared,
            "32 KiB of Blowfish tables fit statically"
        );
        assert_eq!(
            eight.launch_shared_bytes(CipherFamily::Blowfish, KernelOperation::Ctr),
            0
        );
        // What for_device gives a 48 KiB device must compile statically.
        let small = TableCopies::for_device(crate::DeviceKind::Gpu, 48 * 1024);
        assert!(!KernelVariant::for_table_copies(small).dynamic_shared);
    }

    #[test]
    fn options_name_the_architecture_and_every_define() {
        let options =
            KernelVariant::for_table_copies(TableCopies::uniform(32)).nvrtc_options("sm_90");
        assert_eq!(options[0], "--gpu-architecture=sm_90");
        assert!(options.contains(&"--define-macro=BLOWFISH_TABLE_COPIES=32".to_string()));
        assert!(options.contains(&"--define-macro=PARCRYPT_CUDA_DYNAMIC_SHARED".to_string()));
        let static_options =
            KernelVariant::for_table_copies(TableCopies::uniform(4)).nvrtc_options("compute_90");
        assert!(!static_options
            .iter()
            .any(|option| option.contains("DYNAMIC")));
    }

    #[test]
    fn architectures_are_checked() {
        assert_eq!(ImageKind::of("sm_90").unwrap(), ImageKind::Cubin);
        assert_eq!(ImageKind::of("sm_90a").unwrap(), ImageKind::Cubin);
        assert_eq!(ImageKind::of("compute_120").unwrap(), ImageKind::Ptx);
        for bad in ["sm_", "sm90", "gfx90a", "compute_x0", ""] {
            assert!(ImageKind::of(bad).is_err(), "{bad}");
        }
        assert!(ImageKind::Cubin.plausible(b"\x7fELF\x02\x01"));
        assert!(!ImageKind::Cubin.plausible(b"not a program binary"));
        assert!(ImageKind::Ptx.plausible(b"//\n.version 9.0\n.target sm_90\0"));
        assert!(!ImageKind::Ptx.plausible(b".version 9.0"));
    }

    #[test]
    fn variants_cover_both_sides_of_the_dynamic_switch() {
        let variants = host_variants();
        for copies in TableCopies::VALID_COUNTS {
            assert!(variants.iter().any(|variant| variant.table_copies
                == TableCopies::uniform(copies)
                && variant.dynamic_shared));
        }
        assert!(variants.iter().any(|variant| !variant.dynamic_shared));
    }

    /// NVRTC itself, when it can be loaded (the integration test `cuda_nvrtc` insists on it
    /// under CI).
    fn nvrtc_or_skip() -> bool {
        crate::test_support::gpu_or_skip(check_nvrtc(), "NVRTC").is_some()
    }

    #[test]
    fn a_compile_failure_carries_the_whole_log() {
        if !nvrtc_or_skip() {
            return;
        }
        // 12 copies get past no NVRTC check, so the kernels' own #error must stop them.
        let mut options: Vec<String> = KernelVariant::for_table_copies(TableCopies::uniform(8))
            .nvrtc_options("compute_90")
            .into_iter()
            .filter(|option| !option.contains("BLOWFISH_TABLE_COPIES"))
            .collect();
        options.push("--define-macro=BLOWFISH_TABLE_COPIES=12".to_string());
        let error =
            compile_source(&kernel_source::cuda_source(), "compute_90", &options).unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, GpuError::NvrtcCompile { .. }), "{message}");
        assert!(
            message.contains("BLOWFISH_TABLE_COPIES must be 1, 2, 4, 8, 16 or 32"),
            "{message}"
        );
        // The #line directive makes NVRTC name the kernel file, not the header.
        assert!(message.contains("parcrypt.cl"), "{message}");
        assert!(
            message.contains("--gpu-architecture=compute_90"),
            "{message}"
        );
    }

    #[test]
    fn supported_architectures_pick_a_cubin_for_hopper() {
        if !nvrtc_or_skip() {
            return;
        }
        assert_eq!(architecture_for(9, 0).unwrap(), "sm_90");
        // A made-up future GPU gets PTX of the newest architecture NVRTC knows.
        assert!(architecture_for(99, 0).unwrap().starts_with("compute_"));
        assert!(architecture_for(1, 0).is_err());
        let (major, _) = nvrtc_version().unwrap();
        assert!(major >= 11);
    }
}
