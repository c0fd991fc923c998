//! Writes the CUBIN and ptxas's resource log of the kernels, as the CUDA host compiles them
//! for a GPU with Hopper's shared memory (the per-lane variant: 32 table copies), for each
//! architecture named on the command line. scripts/kernel-report.py runs this and reads the
//! files with cuobjdump; it needs NVRTC, no GPU.
//!
//! ```text
//! cargo run -p parcrypt-gpu --example kernel_cubin -- OUT_DIR sm_90 [sm_100 ...]
//! ```
//! For each architecture: `OUT_DIR/ARCH.cubin`, `OUT_DIR/ARCH.log` (ptxas -v) and
//! `OUT_DIR/ARCH.options` (the NVRTC options, one a line); and once `OUT_DIR/kernels.tsv`:
//! every kernel the host loads, its family and the dynamic shared memory a launch asks for
//! (ptxas cannot see that). An architecture this NVRTC cannot compile for is reported on
//! stderr and skipped; the exit status is 1 when none compiled.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use parcrypt_gpu::cuda::{compile_for_report, nvrtc_version, KernelVariant};
use parcrypt_gpu::kernel_source::{
    ctr_segments_kernel_name, kernel_name, CipherFamily, KernelOperation,
};
use parcrypt_gpu::{DeviceKind, TableCopies};

/// One line on stderr; a failing stderr is ignored rather than a panic.
macro_rules! complain {
    ($($argument:tt)*) => {
        drop(writeln!(std::io::stderr(), $($argument)*))
    };
}

/// The shared memory per block an H100 or H200 grants (227 KiB with the opt-in), which is
/// what `TableCopies::for_device` sees there.
const HOPPER_SHARED_BYTES: u64 = 227 * 1024;

fn main() -> ExitCode {
    let mut arguments = std::env::args().skip(1);
    let Some(directory) = arguments.next().map(PathBuf::from) else {
        complain!("usage: kernel_cubin OUT_DIR ARCH [ARCH ...]   (e.g. sm_90 sm_100)");
        return ExitCode::from(2);
    };
    let architectures: Vec<String> = arguments.collect();
    if architectures.is_empty() {
        complain!("kernel_cubin: name at least one architecture, e.g. sm_90");
        return ExitCode::from(2);
    }
    if let Err(error) = std::fs::create_dir_all(&directory) {
        complain!(
            "kernel_cubin: cannot create {}: {error}",
            directory.display()
        );
        return ExitCode::FAILURE;
    }
    match nvrtc_version() {
        Ok((major, minor)) => println!("NVRTC {major}.{minor}"),
        Err(error) => {
            complain!("kernel_cubin: {error}");
            return ExitCode::FAILURE;
        }
    }
    let copies = TableCopies::for_device(DeviceKind::Gpu, HOPPER_SHARED_BYTES);
    let variant = KernelVariant::for_table_copies(copies);
    println!("variant: {variant:?}");
    let mut kernels = String::from("kernel\tfamily\tdynamic_shared_bytes\n");
    for family in CipherFamily::ALL {
        for operation in KernelOperation::ALL {
            let shared = variant.launch_shared_bytes(family, operation);
            let name = kernel_name(family, operation);
            kernels.push_str(&format!("{name}\t{family:?}\t{shared}\n"));
        }
        // Segmented CTR runs with the tables of the family's CTR kernel.
        let shared = variant.launch_shared_bytes(family, KernelOperation::Ctr);
        let name = ctr_segments_kernel_name(family);
        kernels.push_str(&format!("{name}\t{family:?}\t{shared}\n"));
    }
    for name in [
        parcrypt_gpu::ghash::KERNEL_NAME,
        parcrypt_gpu::ghash::GROUPS_KERNEL_NAME,
    ] {
        kernels.push_str(&format!("{name}\tGhash\t0\n"));
    }
    let kernels_path = directory.join("kernels.tsv");
    if let Err(error) = std::fs::write(&kernels_path, kernels) {
        complain!(
            "kernel_cubin: cannot write {}: {error}",
            kernels_path.display()
        );
        return ExitCode::FAILURE;
    }
    let mut compiled = 0;
    for architecture in &architectures {
        let report = match compile_for_report(architecture, variant) {
            Ok(report) => report,
            Err(error) => {
                complain!("kernel_cubin: {architecture}: {error}");
                continue;
            }
        };
        let write = |extension: &str, bytes: &[u8]| {
            let path = directory.join(format!("{architecture}.{extension}"));
            std::fs::write(&path, bytes).map_err(|error| format!("{}: {error}", path.display()))
        };
        let options = report.options.join("\n") + "\n";
        let written = write("cubin", &report.cubin)
            .and_then(|()| write("log", report.log.as_bytes()))
            .and_then(|()| write("options", options.as_bytes()));
        match written {
            Ok(()) => {
                println!("{architecture}: {} bytes of CUBIN", report.cubin.len());
                compiled += 1;
            }
            Err(error) => {
                complain!("kernel_cubin: cannot write {error}");
            }
        }
    }
    if compiled == 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
