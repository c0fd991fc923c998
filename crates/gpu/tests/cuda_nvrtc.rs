//! The CUDA kernels compile under NVRTC, in every variant the CUDA host compiles, for the
//! H200's architecture: as an sm_90 CUBIN (what the host loads) and as compute_90 PTX (the
//! fallback for GPUs NVRTC does not know). Needs only libnvrtc, no GPU or driver.
//!
//! Without NVRTC the test prints a SKIPPED line and passes, unless `CI` is set: CI installs
//! NVRTC from pip, so a missing library there is a broken setup, not a reason to skip.

#[path = "support/compiler.rs"]
mod compiler;

use parcrypt_gpu::cuda::{
    check_nvrtc, compile_check, compile_for_report, compile_variant, nvrtc_version, KernelVariant,
};
use parcrypt_gpu::kernel_source::{kernel_name, CipherFamily, KernelOperation};
use parcrypt_gpu::{GpuError, TableCopies};

const SKIP_MESSAGE: &str =
    "SKIPPED: NVRTC not found (pip install nvidia-cuda-nvrtc==13.0.88 and put its lib \
                            folder on LD_LIBRARY_PATH)";

/// Whether NVRTC can be loaded; says why not, or fails under CI or on a GPU machine.
fn nvrtc_present() -> bool {
    compiler::present("NVRTC", check_nvrtc(), SKIP_MESSAGE, true)
}

fn every_kernel_name() -> Vec<&'static str> {
    CipherFamily::ALL
        .iter()
        .flat_map(|&family| {
            KernelOperation::ALL
                .iter()
                .map(move |&operation| kernel_name(family, operation))
        })
        .chain([
            parcrypt_gpu::ghash::KERNEL_NAME,
            parcrypt_gpu::ghash::GROUPS_KERNEL_NAME,
        ])
        .collect()
}

/// Tests that need NVRTC: `fn name() { ... }` becomes a test that runs its body where
/// NVRTC loads, and otherwise passes having said why not ([`nvrtc_present`]).
macro_rules! nvrtc_tests {
    ($(fn $test:ident() $body:block)*) => {$(
        #[test]
        fn $test() {
            if nvrtc_present() $body
        }
    )*};
}

nvrtc_tests! {
    fn every_variant_compiles_to_an_sm_90_cubin() {
        println!("NVRTC {:?}", nvrtc_version().unwrap());
        let cubin = compile_check("sm_90").unwrap_or_else(|error| panic!("{error}"));
        assert!(cubin.starts_with(b"\x7fELF"), "a CUBIN is an ELF file");
        for name in every_kernel_name() {
            assert!(
                cubin
                    .windows(name.len())
                    .any(|window| window == name.as_bytes()),
                "{name} missing from the CUBIN"
            );
        }
    }

    fn every_variant_compiles_to_compute_90_ptx() {
        let ptx = compile_check("compute_90").unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(
            ptx.last(),
            Some(&0),
            "PTX is handed to the driver as a C string"
        );
        let text = String::from_utf8_lossy(&ptx[..ptx.len() - 1]);
        assert!(
            text.contains(".target sm_90"),
            "{}",
            &text[..text.len().min(400)]
        );
        for name in every_kernel_name() {
            // extern "C": unmangled entry points, which is what the host looks up.
            assert!(
                text.contains(&format!(".entry {name}(")),
                "{name} is not an unmangled entry point"
            );
        }
        // The per-lane variant declares its tables as dynamic shared memory, which Blowfish's
        // 128 KiB needs; a static declaration of that size would not load.
        assert!(
            text.contains(".extern .shared"),
            "no dynamic shared memory in the per-lane PTX"
        );
    }

    fn static_tables_fit_the_static_limit_and_bad_input_is_refused() {
        // Eight copies: Blowfish's 32 KiB fit a static declaration, and ptxas (which the CUBIN
        // goes through) would refuse one over 48 KiB.
        let eight = KernelVariant::for_table_copies(TableCopies::uniform(8));
        assert!(!eight.dynamic_shared);
        let cubin = compile_variant("sm_90", eight).unwrap();
        assert!(cubin.starts_with(b"\x7fELF"));

        assert!(matches!(
            compile_check("gfx90a"),
            Err(GpuError::InvalidInput(_))
        ));
        assert!(matches!(
            compile_variant(
                "sm_90",
                KernelVariant::for_table_copies(TableCopies::uniform(12))
            ),
            Err(GpuError::InvalidInput(_))
        ));
    }

    fn the_report_build_gives_a_cubin_and_a_resource_line_per_kernel() {
        let variant = KernelVariant::for_table_copies(TableCopies::uniform(TableCopies::PER_LANE));
        let report = compile_for_report("sm_90", variant).unwrap_or_else(|error| panic!("{error}"));
        assert!(report.cubin.starts_with(b"\x7fELF"));
        assert_eq!(
            report.options[..report.options.len() - 1],
            variant.nvrtc_options("sm_90")[..],
            "the host's options, then ptxas -v"
        );
        for name in every_kernel_name() {
            assert!(
                report
                    .log
                    .contains(&format!("Function properties for {name}\n")),
                "no ptxas resource lines for {name}:\n{}",
                report.log
            );
        }
        assert!(matches!(
            compile_for_report("compute_90", variant),
            Err(GpuError::InvalidInput(_))
        ));
    }
}
