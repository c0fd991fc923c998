//! The OpenCL backend, on the `opencl3` crate with libOpenCL loaded at run time: the
//! shared host ([`crate::GpuHost`]) over the OpenCL adapter (`opencl/adapter.rs`).
//!
//! A device is opened once: its kernels are compiled (or loaded from the binary cache),
//! self-tested, and given reusable buffers. [`OpenClDevice::process`] then copies host data
//! in, runs a kernel and copies the result back, slab by slab over two queues, so that on a
//! device with separate copy engines the copies of one slab overlap the kernel of the other.
//!
//! Zero-copy: a [`MappedBuffer`] ([`OpenClDevice::mapped_buffer`]) is host-visible memory
//! that the kernels read and write in place of device buffers, as on GPUs that share the
//! host's memory ([`OpenClDevice::host_unified_memory`]);
//! [`OpenClDevice::process_zero_copy`] copies ordinary data through one.

mod adapter;
mod devices;
mod program;
mod zero_copy;

use std::path::PathBuf;

use opencl3::context::Context;
use opencl3::device::Device as ClDevice;
use opencl3::kernel::Kernel;
use opencl3::program::Program;

use crate::error::ApiResultExt;
use crate::host::arguments::{KernelLimits, KernelTable};
use crate::host::{self, slab_size, validate_geometry, Devices, GpuHost, State, TimesHostLaunches};
use crate::host::{KEY_TABLE_WORDS, ROUND_KEY_WORDS};
use crate::kernel_source;
use crate::{
    program_cache, self_test, DeviceInfo, GpuError, KernelCache, LaunchGeometry, OpenOptions,
    ProgramOrigin, TableCopies,
};
use adapter::{create_queue, word_buffer, write_words, Keys, OpenCl};

pub use crate::options::DEFAULT_SLAB_BYTES;

/// An opened, self-tested OpenCL device: the shared host over the OpenCL adapter.
///
/// `process` may be called from several threads; calls on one device run one at a time.
pub type OpenClDevice = GpuHost<OpenCl>;

/// Host-visible memory an [`OpenClDevice`] processes in place; see
/// [`OpenClDevice::mapped_buffer`].
pub type MappedBuffer<'device> = host::zero_copy::MappedBuffer<'device, OpenCl>;

impl Devices for OpenCl {
    type Info = DeviceInfo;

    /// Every device of every platform.
    fn list() -> Result<Vec<DeviceInfo>, GpuError> {
        Ok(devices::find_all()?
            .into_iter()
            .map(|found| found.info)
            .collect())
    }

    fn open_with(index: usize, options: &OpenOptions) -> Result<OpenClDevice, GpuError> {
        let device = find(index)?;
        let info = &device.info;
        if !info.little_endian {
            return Err(GpuError::BigEndianDevice {
                device: info.name.clone(),
            });
        }
        let table_copies = options
            .table_copies
            .unwrap_or_else(|| TableCopies::for_device(info.kind, info.local_memory_bytes));
        table_copies.validate()?;
        let geometry = options
            .geometry
            .unwrap_or_else(|| LaunchGeometry::default_for(info.kind));
        validate_geometry(geometry)?;

        let source = kernel_source::opencl_source();
        let build_options = build_options(table_copies);
        let cache_entry = cache_entry(&options.kernel_cache, &device, &build_options, &source);

        let context = Context::from_device(&ClDevice::new(device.id)).or_api("clCreateContext")?;
        let program_source = program::ProgramSource {
            device_id: device.id,
            device_name: &info.name,
            source: &source,
            options: &build_options,
            cache_entry: cache_entry.as_deref(),
        };
        let (program, origin) = program::load_or_compile(&context, &program_source)?;
        let slab_bytes = slab_size(options.slab_bytes, info.max_allocation_bytes);
        let assemble = |context, program, origin| {
            OpenClDevice::assemble(
                &device,
                context,
                program,
                origin,
                table_copies,
                geometry,
                slab_bytes,
            )
        };
        let opened = assemble(context, program, origin)?;
        self_test::accept_or_rebuild(opened, origin, OpenClDevice::self_test, || {
            let context =
                Context::from_device(&ClDevice::new(device.id)).or_api("clCreateContext")?;
            let program = program::compile_and_store(&context, &program_source)?;
            assemble(context, program, ProgramOrigin::Compiled)
        })
    }

    fn info(&self) -> &DeviceInfo {
        &self.info
    }
}

impl GpuHost<OpenCl> {
    /// Compiles the kernels for device `index` with `table_copies`, creating every kernel,
    /// without the cache or a self-test: the check that each `-D` variant builds.
    pub fn compile_check(index: usize, table_copies: TableCopies) -> Result<(), GpuError> {
        table_copies.validate()?;
        let device = find(index)?;
        let context = Context::from_device(&ClDevice::new(device.id)).or_api("clCreateContext")?;
        let program = program::compile(
            &context,
            device.id,
            &device.info.name,
            &kernel_source::opencl_source(),
            &build_options(table_copies),
        )?;
        KernelTable::load(|name, _| {
            Ok((
                Kernel::create(&program, name).or_api("clCreateKernel")?,
                KernelLimits::groups_of(1),
            ))
        })?;
        Ok(())
    }

    /// Creates queues, kernels and buffers around a built program.
    fn assemble(
        device: &devices::FoundDevice,
        context: Context,
        program: Program,
        origin: ProgramOrigin,
        table_copies: TableCopies,
        geometry: LaunchGeometry,
        slab_bytes: usize,
    ) -> Result<Self, GpuError> {
        let queues = [
            create_queue(&context, device.id)?,
            create_queue(&context, device.id)?,
        ];
        let kernels = KernelTable::load(|name, _| {
            let kernel = Kernel::create(&program, name).or_api("clCreateKernel")?;
            let max_group_size = kernel
                .get_work_group_size(device.id)
                .or_api("clGetKernelWorkGroupInfo")?;
            Ok((kernel, KernelLimits::groups_of(max_group_size)))
        })?;
        let mut aes_tables = word_buffer(&context, 576)?;
        write_words(
            &queues[0],
            &mut aes_tables,
            &kernel_source::aes_table_words(),
        )?;
        let keys = Keys {
            round_keys: word_buffer(&context, ROUND_KEY_WORDS)?,
            key_tables: word_buffer(&context, KEY_TABLE_WORDS)?,
            aes_tables,
        };
        let state = State::new(geometry, kernels, keys, ());
        let device_handle = ClDevice::new(device.id);
        let adapter = OpenCl {
            info: device.info.clone(),
            queues,
            host_unified_memory: zero_copy::reports_unified_memory(&device_handle),
            device: device_handle,
            _program: program,
            context,
        };
        let host = GpuHost::new(adapter, state, slab_bytes, origin, table_copies);
        Ok(host)
    }

    fn self_test(&self) -> Result<(), GpuError> {
        self_test::run(&self.adapter.info.name, |key, operation, data| {
            self.process(key, operation, data)
        })
    }
}

/// OpenCL times every launch with its profiling events: [`OpenClDevice::process_timed`].
impl TimesHostLaunches for OpenCl {}

/// Device `index` of every platform's devices.
fn find(index: usize) -> Result<devices::FoundDevice, GpuError> {
    let found = devices::find_all()?;
    let count = found.len();
    found
        .into_iter()
        .nth(index)
        .ok_or(GpuError::NoDevice { index, count })
}

/// The cache file for this device, driver, options and source; `None` when caching is off
/// or there is no cache directory.
fn cache_entry(
    cache: &KernelCache,
    device: &devices::FoundDevice,
    build_options: &str,
    source: &str,
) -> Option<PathBuf> {
    let directory = program_cache::directory(cache)?;
    let info = &device.info;
    Some(program_cache::entry_path(
        &directory,
        &[
            &info.platform,
            &device.platform_version,
            &info.name,
            &info.version,
            &info.driver_version,
            build_options,
            source,
        ],
    ))
}

fn build_options(table_copies: TableCopies) -> String {
    format!("-cl-std=CL1.2 {}", table_copies.compiler_options())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The first device, or `None` after saying why (a failure under CI, which has PoCL).
    pub(crate) fn first_device() -> Option<devices::FoundDevice> {
        let first = devices::find_all().map_err(|error| error.to_string());
        let first = first.and_then(|found| {
            let none = "none found; install pocl-opencl-icd";
            found.into_iter().next().ok_or_else(|| none.to_string())
        });
        let in_ci = crate::test_support::in_ci().then_some("CI installs PoCL");
        crate::test_support::found_or_skip(first, "OpenCL device", in_ci)
    }

    #[test]
    fn a_build_failure_carries_the_whole_log() {
        let Some(device) = first_device() else { return };
        let context = Context::from_device(&ClDevice::new(device.id)).unwrap();
        // 12 copies get past no host check here, so the kernels' own #error must stop them.
        let options = "-D BLOWFISH_TABLE_COPIES=12";
        let Err(error) = program::compile(
            &context,
            device.id,
            &device.info.name,
            &kernel_source::opencl_source(),
            options,
        ) else {
            panic!("12 table copies must not compile");
        };
        let message = error.to_string();
        assert!(matches!(error, GpuError::Build { .. }), "{message}");
        assert!(message.contains(options), "{message}");
        assert!(
            message.contains("BLOWFISH_TABLE_COPIES must be 1, 2, 4, 8, 16 or 32"),
            "{message}"
        );
        // The #line directive makes the compiler name the kernel file, not the header.
        assert!(message.contains("parcrypt.cl"), "{message}");
    }

    #[test]
    fn a_cached_binary_that_fails_the_self_test_is_replaced() {
        let Some(device) = first_device() else { return };
        let copies = TableCopies::for_device(device.info.kind, device.info.local_memory_bytes);
        let options = build_options(copies);
        let source = kernel_source::opencl_source();
        // A binary of subtly wrong kernels stored under the name of the real ones.
        program_cache::stale::assert_wrong_binary_replaced::<OpenCl>(
            &source,
            copies,
            |cache| cache_entry(cache, &device, &options, &source),
            |wrong_source, path| {
                let context = Context::from_device(&ClDevice::new(device.id)).unwrap();
                let program_source = program::ProgramSource {
                    device_id: device.id,
                    device_name: "test",
                    source: wrong_source,
                    options: &options,
                    cache_entry: Some(path),
                };
                program::compile_and_store(&context, &program_source).unwrap();
                std::fs::read(path).unwrap()
            },
        );
    }
}
