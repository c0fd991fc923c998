//! CUDA's own ways in, beyond the shared host's `process`: pinned host memory copied with
//! no staging, and data already in device memory, processed in place with no host round
//! trip (ECB and CTR in place in launches of at most [`MAX_SLAB_BYTES`]; CBC decryption
//! from a scratch copy of each chunk's ciphertext; a final partial CTR block through a
//! one-block buffer).

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::sys::{CUdeviceptr, CUevent_flags};
use cudarc::driver::{
    CudaEvent, CudaSlice, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut, DeviceSlice,
};
use parcrypt_modes::ctr::Counter;

use super::adapter::{alloc_pinned_zeroed, launch_on, Cuda, CudaKernel, Extra, Keys};
use super::devices::CudaResultExt;
use super::{DeviceBuffer, PinnedBuffer};
use crate::host::arguments::{cipher_arguments, LoadedKernel};
use crate::host::{Api, GpuHost, Launch, Staging, State, MAX_SLAB_BYTES};
use crate::kernel_source::{CipherFamily, KernelOperation};
use crate::operation::{ModeArguments, SlabChain};
use crate::{tuning, GpuError, GpuOperation, KeyMaterial, LaunchGeometry};

/// What every launch of a device-buffer call passes besides its data: the key, its
/// buffers and the launch shape.
struct DeviceLaunch<'a> {
    key: &'a KeyMaterial,
    keys: &'a Keys,
    geometry: LaunchGeometry,
}

impl DeviceLaunch<'_> {
    /// Launches `kernel` over `blocks` blocks from `input` to `output` on `stream`, with
    /// the counter buffer segmented CTR reads.
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        stream: &CudaStream,
        kernel: &LoadedKernel<CudaKernel>,
        input: CUdeviceptr,
        output: CUdeviceptr,
        blocks: usize,
        mode: ModeArguments,
        counters: Option<CUdeviceptr>,
    ) -> Result<(), GpuError> {
        let arguments =
            cipher_arguments(kernel.segmented, self.key, blocks, mode, counters.is_some())?;
        let launch = Launch {
            kernel: &kernel.kernel,
            keys: self.keys,
            arguments: &arguments,
            shape: kernel.shape(self.geometry, blocks),
            timed: false,
        };
        // SAFETY: the arguments are the kernel's own list for `blocks` blocks. The callers
        // pass addresses inside the caller's device buffer (its whole blocks), the scratch
        // or tail buffers, and the counter blocks uploaded for these segments, all live
        // allocations of this context borrowed until the streams are synchronised. In
        // place (input == output) only for ECB and CTR, whose threads read block i before
        // writing it and read no block another thread writes (the kernels' data pointers are
        // not `__restrict__`, so aliasing them is allowed); CBC, whose threads read their
        // neighbour's block, reads from the scratch copy.
        unsafe { launch_on(stream, &launch, (input, output, counters)) }
    }
}

impl GpuHost<Cuda> {
    /// Page-locked host memory of `bytes` bytes, zeroed, for [`CudaDevice::process_pinned`](super::CudaDevice::process_pinned):
    /// the copies from and to it need no staging, so the pipeline runs at the bus's speed.
    pub fn alloc_pinned(&self, bytes: usize) -> Result<PinnedBuffer, GpuError> {
        if bytes == 0 {
            return Err(GpuError::InvalidInput(
                "a pinned buffer needs at least one byte".into(),
            ));
        }
        alloc_pinned_zeroed(&self.adapter.context, bytes)
    }

    /// A copy of `data` in this device's memory, allocated on [`CudaDevice::stream`](super::CudaDevice::stream) and
    /// complete when this returns, for [`CudaDevice::process_device_buffer`](super::CudaDevice::process_device_buffer).
    pub fn copy_to_device(&self, data: &[u8]) -> Result<DeviceBuffer, GpuError> {
        let stream = &self.adapter.streams[0];
        let buffer = stream.clone_htod(data).or_cuda("cuMemcpyHtoDAsync")?;
        stream.synchronize().or_cuda("cuStreamSynchronize")?;
        Ok(buffer)
    }

    /// As [`CudaDevice::process`](super::CudaDevice::process), over `data[range]`, copying directly between the pinned
    /// buffer and the device.
    pub fn process_pinned(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        data: &mut PinnedBuffer,
        range: Range<usize>,
    ) -> Result<(), GpuError> {
        let length = data.len();
        // Waits for whatever cudarc itself queued on the buffer.
        let bytes = data.as_mut_slice().or_cuda("cuEventSynchronize")?;
        let Some(bytes) = bytes.get_mut(range.clone()) else {
            return Err(GpuError::InvalidInput(format!(
                "range {range:?} is outside the {length}-byte pinned buffer"
            )));
        };
        self.run_host(key, operation, bytes, Staging::Direct, None)
    }

    /// Runs `operation` in place over a buffer already in this device's memory: no host
    /// copies of the data. Work queued on the buffer's own stream (and, through cudarc's
    /// event tracking, work recorded on the buffer) comes first; the call returns when the
    /// result is in the buffer and the key is wiped.
    pub fn process_device_buffer(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        buffer: &mut CudaSlice<u8>,
    ) -> Result<(), GpuError> {
        self.run_device(key, operation, &mut buffer.as_view_mut(), None)
    }

    /// As [`CudaDevice::process_device_buffer`](super::CudaDevice::process_device_buffer), over part of a buffer. The view must start
    /// on a 16-byte boundary (8 for Blowfish), as the kernels load whole blocks.
    pub fn process_device_view(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        buffer: &mut CudaViewMut<'_, u8>,
    ) -> Result<(), GpuError> {
        self.run_device(key, operation, buffer, None)
    }

    /// As [`CudaDevice::process_device_buffer`](super::CudaDevice::process_device_buffer), and returns the time the GPU spent on the
    /// data (kernels, plus the copies CBC and a partial CTR block need), measured with CUDA
    /// events on the stream: the key upload and the host's own overhead are not in it.
    pub fn process_device_buffer_timed(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        buffer: &mut CudaSlice<u8>,
    ) -> Result<Duration, GpuError> {
        // CU_EVENT_DEFAULT: cudarc's default events do not record time.
        let new_event = || {
            self.adapter
                .context
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .or_cuda("cuEventCreate")
        };
        let events = (new_event()?, new_event()?);
        self.run_device(key, operation, &mut buffer.as_view_mut(), Some(&events))?;
        if buffer.is_empty() {
            return Ok(Duration::ZERO);
        }
        let milliseconds = events
            .0
            .elapsed_ms(&events.1)
            .or_cuda("cuEventElapsedTime")?;
        Ok(Duration::from_secs_f64(
            f64::from(milliseconds.max(0.0)) / 1e3,
        ))
    }

    fn run_device(
        &self,
        key: &KeyMaterial,
        operation: &GpuOperation,
        buffer: &mut CudaViewMut<'_, u8>,
        timing: Option<&(CudaEvent, CudaEvent)>,
    ) -> Result<(), GpuError> {
        let algorithm = key.algorithm();
        operation.validate(algorithm, buffer.len())?;
        if buffer.is_empty() {
            return Ok(());
        }
        let buffer_stream = Arc::clone(DeviceSlice::stream(buffer));
        if buffer_stream.context() != &self.adapter.context {
            return Err(GpuError::InvalidInput(format!(
                "the device buffer belongs to another CUDA context (device {}), not to {}",
                buffer_stream.context().ordinal(),
                self.name()
            )));
        }
        let stream = &self.adapter.streams[0];
        let mut state = self.lock_state();
        // Work the caller queued on the buffer's stream must finish before ours starts.
        let ordered = if buffer_stream.as_ref() == stream.as_ref() {
            Ok(())
        } else {
            stream.join(&buffer_stream).or_cuda("cuStreamWaitEvent")
        };
        let decrypting = operation.kernel_operation().decrypts();
        let uploaded =
            ordered.and_then(|()| self.adapter.upload_key(&mut state.keys, key, decrypting));
        let ran = uploaded
            .and_then(|()| self.run_device_launches(&mut state, key, operation, buffer, timing));
        // GpuHost memory only: a failed wait cannot leave host memory being written.
        let waited = self.adapter.wait(false);
        let wiped = self.adapter.wipe_key(&mut state.keys, key);
        ran.and(waited).and(wiped)
    }

    /// The device-buffer path: ECB and CTR run in place in launches of at most
    /// [`MAX_SLAB_BYTES`]; CBC decryption reads each chunk's ciphertext from a scratch copy;
    /// a final partial CTR block goes through a one-block buffer.
    fn run_device_launches(
        &self,
        state: &mut State<Cuda>,
        key: &KeyMaterial,
        operation: &GpuOperation,
        buffer: &mut CudaViewMut<'_, u8>,
        timing: Option<&(CudaEvent, CudaEvent)>,
    ) -> Result<(), GpuError> {
        let stream = &self.adapter.streams[0];
        let block_size = key.algorithm().block_size();
        let family = CipherFamily::of(key.algorithm());
        // Segments no longer than the host paths' slabs, so that every path takes the same
        // operations.
        operation.slab_bytes(self.slab_bytes)?;
        let length = buffer.len();
        let geometry = tuning::choose_geometry(
            state.geometry,
            state.tuning.as_deref(),
            key.algorithm(),
            operation.kernel_operation(),
            length,
        );
        let whole_bytes = length / block_size * block_size;
        {
            let (pointer, _record) = buffer.device_ptr(stream);
            if pointer % block_size as CUdeviceptr != 0 {
                return Err(GpuError::InvalidInput(format!(
                    "the device buffer starts at {pointer:#x}, not on a {block_size}-byte \
                     boundary; the kernels load whole blocks"
                )));
            }
        }
        let State {
            kernels,
            keys,
            extra: Extra {
                cbc_scratch,
                tail_block,
            },
            ..
        } = state;
        let kernel = kernels.find(family, operation.kernel_operation(), operation.segmented());
        let arguments = DeviceLaunch {
            key,
            keys,
            geometry,
        };

        if let GpuOperation::CbcDecrypt { previous } = operation {
            let chunk_bytes = self.slab_bytes.min(whole_bytes);
            let previous_blocks =
                chunk_previous_blocks(stream, buffer, previous, chunk_bytes, block_size)?;
            if let Some((start, _)) = timing {
                start.record(stream).or_cuda("cuEventRecord")?;
            }
            if cbc_scratch.as_ref().map_or(0, CudaSlice::len) < chunk_bytes {
                *cbc_scratch = None;
                *cbc_scratch = Some(stream.alloc_zeros(chunk_bytes).or_cuda("cuMemAlloc")?);
            }
            let scratch = cbc_scratch.as_mut().expect("allocated above");
            for (chunk, previous_block) in previous_blocks.chunks_exact(block_size).enumerate() {
                let start = chunk * chunk_bytes;
                let chunk_length = chunk_bytes.min(whole_bytes - start);
                let range = start..start + chunk_length;
                stream
                    .memcpy_dtod(
                        &buffer.slice(range.clone()),
                        &mut scratch.slice_mut(..chunk_length),
                    )
                    .or_cuda("cuMemcpyDtoDAsync")?;
                let mode = mode_arguments_at(operation, block_size, 0, previous_block);
                let (input_pointer, _input_record) = scratch.device_ptr(stream);
                let mut chunk_view = buffer.slice_mut(range);
                let (output_pointer, _output_record) = chunk_view.device_ptr_mut(stream);
                arguments.launch(
                    stream,
                    kernel,
                    input_pointer,
                    output_pointer,
                    chunk_length / block_size,
                    mode,
                    None,
                )?;
            }
        } else {
            if let Some((start, _)) = timing {
                start.record(stream).or_cuda("cuEventRecord")?;
            }
            // Segmented CTR: launches of whole segments, with every counter block uploaded
            // once (the data is on the device already; its counters are smaller than it).
            let chunk_bytes = operation.slab_bytes(MAX_SLAB_BYTES / 16 * 16)?;
            let device_counters = match operation {
                GpuOperation::CtrSegments { counters, .. } => Some(
                    stream
                        .clone_htod(counters.as_slice())
                        .or_cuda("cuMemcpyHtoDAsync")?,
                ),
                _ => None,
            };
            let mut start = 0;
            while start < whole_bytes {
                let chunk_length = chunk_bytes.min(whole_bytes - start);
                let segments = operation.segment_arguments(block_size, start, chunk_length);
                let mode = segments.unwrap_or_else(|| {
                    mode_arguments_at(operation, block_size, (start / block_size) as u64, &[])
                });
                let counter_view = match (mode, device_counters.as_ref()) {
                    (ModeArguments::Segments { first, count, .. }, Some(counters)) => {
                        Some(counters.slice(first * block_size..(first + count) * block_size))
                    }
                    _ => None,
                };
                let counter_record = counter_view.as_ref().map(|view| view.device_ptr(stream));
                let mut chunk_view = buffer.slice_mut(start..start + chunk_length);
                let (pointer, _record) = chunk_view.device_ptr_mut(stream);
                // In place: input and output are the same memory. The ECB and CTR kernels
                // read block i only in the thread that then writes block i, and read it
                // before writing it, so no thread ever reads a block another has written;
                // the data pointers are not `__restrict__`, so the aliasing is allowed.
                // CBC, whose threads read their neighbour's block, does not run in place.
                arguments.launch(
                    stream,
                    kernel,
                    pointer,
                    pointer,
                    chunk_length / block_size,
                    mode,
                    counter_record.as_ref().map(|(pointer, _)| *pointer),
                )?;
                start += chunk_length;
            }
            if whole_bytes < length {
                // Only CTR gets here (the others need whole blocks): the last partial block
                // is processed as a whole block in a buffer of its own, then its front is
                // copied back.
                let tail = whole_bytes..length;
                stream
                    .memcpy_dtod(
                        &buffer.slice(tail.clone()),
                        &mut tail_block.slice_mut(..tail.len()),
                    )
                    .or_cuda("cuMemcpyDtoDAsync")?;
                // Segmented CTR runs its last block as one-block CTR from that block's own
                // counter.
                let (mode, tail_kernel) =
                    match operation.segment_block_as_ctr(block_size, whole_bytes) {
                        Some(single) => (
                            mode_arguments_at(&single, block_size, 0, &[]),
                            kernels.find(family, KernelOperation::Ctr, false),
                        ),
                        None => (
                            mode_arguments_at(
                                operation,
                                block_size,
                                (whole_bytes / block_size) as u64,
                                &[],
                            ),
                            kernel,
                        ),
                    };
                {
                    let (pointer, _record) = tail_block.device_ptr_mut(stream);
                    arguments.launch(stream, tail_kernel, pointer, pointer, 1, mode, None)?;
                }
                stream
                    .memcpy_dtod(&tail_block.slice(..tail.len()), &mut buffer.slice_mut(tail))
                    .or_cuda("cuMemcpyDtoDAsync")?;
                // The block held data and a whole keystream block: leave neither behind.
                stream.memset_zeros(tail_block).or_cuda("cuMemsetD8Async")?;
            }
        }
        if let Some((_, end)) = timing {
            end.record(stream).or_cuda("cuEventRecord")?;
        }
        Ok(())
    }
}

/// The ciphertext block before each CBC chunk of `chunk_bytes`, one block per chunk: the
/// caller's `previous` for the first, the buffer's own blocks for the rest. They are read
/// before any chunk is decrypted over its ciphertext, gathered on the device so that one
/// small download brings them all.
fn chunk_previous_blocks(
    stream: &Arc<CudaStream>,
    buffer: &CudaViewMut<'_, u8>,
    previous: &[u8],
    chunk_bytes: usize,
    block_size: usize,
) -> Result<Vec<u8>, GpuError> {
    let whole_bytes = buffer.len() / block_size * block_size;
    let chunks = whole_bytes.div_ceil(chunk_bytes);
    let mut blocks = vec![0u8; chunks * block_size];
    blocks[..block_size].copy_from_slice(previous);
    if chunks > 1 {
        let mut gathered = stream
            .alloc_zeros::<u8>((chunks - 1) * block_size)
            .or_cuda("cuMemAlloc")?;
        for chunk in 1..chunks {
            let end = chunk * chunk_bytes;
            stream
                .memcpy_dtod(
                    &buffer.slice(end - block_size..end),
                    &mut gathered.slice_mut((chunk - 1) * block_size..chunk * block_size),
                )
                .or_cuda("cuMemcpyDtoDAsync")?;
        }
        stream
            .memcpy_dtoh(&gathered, &mut blocks[block_size..])
            .or_cuda("cuMemcpyDtoHAsync")?;
        // A pageable destination makes the download synchronous; waiting says so plainly.
        stream.synchronize().or_cuda("cuStreamSynchronize")?;
    }
    Ok(blocks)
}

/// The mode arguments of a launch whose first block lies `first_block` blocks into the
/// range `operation` describes; `previous` is the ciphertext block before it (CBC only).
fn mode_arguments_at(
    operation: &GpuOperation,
    block_size: usize,
    first_block: u64,
    previous: &[u8],
) -> ModeArguments {
    let shifted = match operation {
        GpuOperation::Ctr { counter, rule } => {
            let mut block = vec![0u8; block_size];
            Counter::new(counter, *rule)
                .advanced(first_block)
                .write(&mut block);
            GpuOperation::Ctr {
                counter: block,
                rule: *rule,
            }
        }
        GpuOperation::CbcDecrypt { .. } => GpuOperation::CbcDecrypt {
            previous: previous.to_vec(),
        },
        other => other.clone(),
    };
    // The first step of a chain is the launch's own arguments; the slab it is shown is only
    // read for the step after (its length for CTR, its last block for CBC).
    SlabChain::new(&shifted).next(&[0u8; 16][..block_size], block_size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use parcrypt_modes::ctr::CounterRule;

    #[test]
    fn launch_arguments_continue_the_chain() {
        // A launch 3 blocks in gets the counter the slab chain gives the slab after 3 blocks.
        let mut start = [0xffu8; 16];
        start[0] = 0x12;
        let operation = GpuOperation::Ctr {
            counter: start.to_vec(),
            rule: CounterRule::Full,
        };
        let mut chain = SlabChain::new(&operation);
        chain.next(&[0; 48], 16);
        assert_eq!(
            mode_arguments_at(&operation, 16, 3, &[]),
            chain.next(&[0; 16], 16)
        );
        let cbc = GpuOperation::CbcDecrypt {
            previous: vec![0; 8],
        };
        assert_eq!(
            mode_arguments_at(&cbc, 8, 0, &[1, 0, 0, 0, 2, 0, 0, 0]),
            ModeArguments::Previous {
                words: [1, 2, 0, 0]
            }
        );
        assert_eq!(
            mode_arguments_at(&GpuOperation::EcbEncrypt, 16, 7, &[]),
            ModeArguments::None
        );
    }
}
