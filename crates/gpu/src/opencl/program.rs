//! Building the kernel program for one device, through the on-disk binary cache.

use std::path::Path;

use opencl3::context::Context;
use opencl3::error_codes::CL_BUILD_PROGRAM_FAILURE;
use opencl3::program::Program;
use opencl3::types::cl_device_id;

use crate::error::ApiResultExt;
use crate::program_cache;
use crate::{GpuError, ProgramOrigin};

/// Compiles `source` for `device_id`, keeping the whole build log when the compiler refuses.
pub(crate) fn compile(
    context: &Context,
    device_id: cl_device_id,
    device_name: &str,
    source: &str,
    options: &str,
) -> Result<Program, GpuError> {
    let mut program =
        Program::create_from_source(context, source).or_api("clCreateProgramWithSource")?;
    match program.build(&[device_id], options) {
        Ok(()) => Ok(program),
        Err(error) => {
            let log = program
                .get_build_log(device_id)
                .unwrap_or_else(|log_error| format!("(the driver gave no build log: {log_error})"));
            if error.0 == CL_BUILD_PROGRAM_FAILURE || !log.trim().is_empty() {
                Err(GpuError::Build {
                    device: device_name.to_string(),
                    options: options.to_string(),
                    log,
                })
            } else {
                Err(GpuError::api("clBuildProgram", error))
            }
        }
    }
}

/// Loads a cached binary; `None` on any failure, so that the caller compiles instead.
fn from_binary(
    context: &Context,
    device_id: cl_device_id,
    binary: &[u8],
    options: &str,
) -> Option<Program> {
    // SAFETY: `device_id` is the one device `context` was created for.
    let mut program =
        unsafe { Program::create_from_binary(context, &[device_id], &[binary]) }.ok()?;
    program.build(&[device_id], options).ok()?;
    Some(program)
}

/// What a device's program is built from, and where its binary is cached.
#[derive(Clone, Copy)]
pub(crate) struct ProgramSource<'a> {
    pub device_id: cl_device_id,
    pub device_name: &'a str,
    pub source: &'a str,
    pub options: &'a str,
    pub cache_entry: Option<&'a Path>,
}

/// The program from the cache file at `cache_entry` if there is a usable one, else compiled
/// from source and stored there for next time.
pub(crate) fn load_or_compile(
    context: &Context,
    program_source: &ProgramSource<'_>,
) -> Result<(Program, ProgramOrigin), GpuError> {
    let ProgramSource {
        device_id,
        options,
        cache_entry,
        ..
    } = *program_source;
    if let Some(path) = cache_entry {
        if let Some(program) = program_cache::load(path)
            .and_then(|binary| from_binary(context, device_id, &binary, options))
        {
            return Ok((program, ProgramOrigin::Cache));
        }
    }
    let program = compile_and_store(context, program_source)?;
    Ok((program, ProgramOrigin::Compiled))
}

/// Compiles from source and stores the binary at `cache_entry` (replacing what is there).
pub(crate) fn compile_and_store(
    context: &Context,
    program_source: &ProgramSource<'_>,
) -> Result<Program, GpuError> {
    let ProgramSource {
        device_id,
        device_name,
        source,
        options,
        cache_entry,
    } = *program_source;
    let program = compile(context, device_id, device_name, source, options)?;
    if let Some(path) = cache_entry {
        if let Some(binary) = program
            .get_binaries()
            .ok()
            .and_then(|binaries| binaries.into_iter().next())
        {
            program_cache::store(path, &binary);
        }
    }
    Ok(program)
}
