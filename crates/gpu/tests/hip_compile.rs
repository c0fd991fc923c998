//! Every HIP kernel compiles with hiprtc for the AMD GPU targets parcrypt aims at, with no
//! GPU present: gfx90a (CDNA2, MI200), gfx942 (CDNA3, MI300) and gfx1100 (RDNA3, RX 7900;
//! the seed's RX 7600 is gfx1102). Needs only libamdhip64 / hiprtc (Debian 12:
//! `libamdhip64-5 libhiprtc-builtins5`), no AMD GPU or driver.
//!
//! Debian 12's hiprtc 5.2 (comgr 2.4, LLVM 15) knows gfx90a but neither gfx942 nor gfx1100
//! (its newest targets are gfx90c and gfx1036), and aborts the process when asked for a
//! target it does not know. So a target the installed hiprtc does not list is replaced by
//! the nearest one it knows, said on stdout: gfx942 by gfx90a (the CDNA generation before,
//! wave64, 64 KiB LDS), gfx1100 by gfx1030 (the RDNA generation before, wave32, 64 KiB LDS).
//! A newer ROCm compiles the real targets with the same test.
//!
//! Without hiprtc the tests print a SKIPPED line and pass, unless `CI` is set: CI installs
//! Debian's HIP packages, so a missing library there is a broken setup, not a reason to skip.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

#[path = "support/compiler.rs"]
mod compiler;

use parcrypt_gpu::hip::{
    check_hiprtc, check_target, compile_check, compile_for, hiprtc_version, kernel_names,
    known_targets, missing_kernels, table_copies_for, LDS_LIMIT_BYTES,
};
use parcrypt_gpu::{GpuError, TableCopies};

/// The targets parcrypt aims at, each with the nearest target Debian 12's hiprtc knows.
const TARGETS: [(&str, &str); 3] = [
    ("gfx90a", "gfx90a"),
    ("gfx942", "gfx90a"),
    ("gfx1100", "gfx1030"),
];

/// hiprtc runs one compile at a time here: the test threads would otherwise compile side by
/// side on a small CI machine, and comgr 2.4 is not known to be safe for that.
static COMPILER: Mutex<()> = Mutex::new(());

const SKIP_MESSAGE: &str = "SKIPPED: hiprtc not found (Debian 12: apt install libamdhip64-5 \
                            libhiprtc-builtins5)";

/// Whether hiprtc can be loaded; says why not, or fails under CI.
fn hiprtc_present() -> bool {
    compiler::present("hiprtc", check_hiprtc(), SKIP_MESSAGE, false)
}

/// The lock on hiprtc ([`COMPILER`]) once hiprtc is known to load; `None` after saying why
/// it does not.
fn hiprtc_locked() -> Option<MutexGuard<'static, ()>> {
    hiprtc_present().then(|| COMPILER.lock().unwrap_or_else(PoisonError::into_inner))
}

/// The target to compile for `wanted`: itself where this hiprtc knows it, else `nearest`.
fn target_for(wanted: &'static str, nearest: &'static str) -> &'static str {
    match check_target(wanted) {
        Ok(()) => wanted,
        Err(reason) => {
            println!("{wanted}: not known to this hiprtc, compiling {nearest} instead ({reason})");
            nearest
        }
    }
}

#[test]
fn every_kernel_compiles_for_cdna_and_rdna_targets() {
    let Some(_compiling) = hiprtc_locked() else {
        return;
    };
    let version = hiprtc_version().unwrap();
    let copies = table_copies_for(LDS_LIMIT_BYTES);
    println!(
        "hiprtcVersion {}.{}; {} kernels; {copies}",
        version.0,
        version.1,
        kernel_names().len()
    );
    let mut compiled: Vec<&str> = Vec::new();
    for (wanted, nearest) in TARGETS {
        let target = target_for(wanted, nearest);
        if compiled.contains(&target) {
            println!("{wanted}: compiled as {target} above");
            continue;
        }
        let started = Instant::now();
        let image = compile_check(target).unwrap_or_else(|error| panic!("{target}: {error}"));
        println!(
            "{wanted}: {target} compiled, {} kernels, {} bytes, {:.1} s",
            kernel_names().len() - missing_kernels(&image).len(),
            image.len(),
            started.elapsed().as_secs_f64()
        );
        assert!(missing_kernels(&image).is_empty());
        compiled.push(target);
    }
    // gfx90a is known to every hiprtc from 5.0 on, so it is always compiled as itself.
    assert!(compiled.contains(&"gfx90a"));
    assert!(
        compiled.len() >= 2,
        "a CDNA and an RDNA target: {compiled:?}"
    );
}

#[test]
fn smaller_layouts_compile_too() {
    let Some(_compiling) = hiprtc_locked() else {
        return;
    };
    // One copy of everything: the other side of every `% COPIES` in the kernels.
    let image = compile_for("gfx90a", TableCopies::uniform(1)).unwrap();
    assert!(missing_kernels(&image).is_empty());
}

#[test]
fn thirty_two_blowfish_copies_exceed_the_lds_and_hiprtc_says_so() {
    let Some(_compiling) = hiprtc_locked() else {
        return;
    };
    assert_eq!(table_copies_for(LDS_LIMIT_BYTES).blowfish, 16);
    let per_lane = TableCopies::uniform(TableCopies::PER_LANE);
    assert!(per_lane.largest_table_bytes() > LDS_LIMIT_BYTES);
    let error = compile_for("gfx90a", per_lane).unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, GpuError::HiprtcCompile { .. }), "{message}");
    assert!(message.contains("blowfish"), "{message}");
    assert!(message.contains("--offload-arch=gfx90a"), "{message}");
}

#[test]
fn an_unknown_target_is_refused_before_hiprtc_sees_it() {
    if !hiprtc_present() {
        return;
    }
    // hiprtc 5.2 would abort the whole process on this target.
    let error = compile_for("gfx9999", table_copies_for(LDS_LIMIT_BYTES)).unwrap_err();
    if known_targets().is_some_and(|known| !known.is_empty()) {
        assert!(matches!(error, GpuError::InvalidInput(_)), "{error}");
        assert!(error.to_string().contains("gfx90a"), "{error}");
    }
}
