//! The slab buffers of one stream, and the key's buffers, as the CUDA and HIP adapters keep
//! them: the same fields and the same growth rules, over each API's device and pinned host
//! buffer types.

use super::{grown_capacity, Outcome, Staging};

/// A buffer that knows its length in bytes.
pub trait SlotBuffer {
    /// Its length in bytes.
    fn byte_len(&self) -> usize;
}

/// A stream's slab buffers, grown on demand and kept for later calls: `Device` is the API's
/// device buffer, `Pinned` its page-locked host buffer.
pub struct StreamSlot<Device, Pinned> {
    /// The stream this slot's slabs run on.
    pub(crate) stream: usize,
    /// How the slab now in the slot is copied (set by [`StreamSlot::reserve`]).
    pub(crate) staging: Staging,
    pub(crate) input: Option<Device>,
    pub(crate) output: Option<Device>,
    /// Pinned host memory ordinary (pageable) data is staged through.
    pub(crate) staged: Option<Pinned>,
    /// The side buffer: segmented CTR's counter blocks, or GCM's GHASH sums.
    pub(crate) counters: Option<Device>,
}

impl<Device: SlotBuffer, Pinned: SlotBuffer> StreamSlot<Device, Pinned> {
    /// A slot of stream `stream` with no buffers yet.
    pub(crate) fn new(stream: usize) -> Self {
        Self {
            stream,
            staging: Staging::Direct,
            input: None,
            output: None,
            staged: None,
            counters: None,
        }
    }

    /// Makes room for a slab of `bytes` copied as `staging`: input and output buffers that
    /// hold it, from `device`, and when staged a pinned buffer as large, from `pinned`, each
    /// grown as [`grown_capacity`] says up to `limit`. Buffers too small are dropped before
    /// their successors are allocated, so that the device can reuse their memory (the
    /// frees are ordered after the work already queued on the stream).
    pub(crate) fn reserve(
        &mut self,
        bytes: usize,
        limit: usize,
        staging: Staging,
        mut device: impl FnMut(usize) -> Outcome<Device>,
        pinned: impl FnOnce(usize) -> Outcome<Pinned>,
    ) -> Outcome {
        self.staging = staging;
        let device_capacity = self.input.as_ref().map_or(0, SlotBuffer::byte_len);
        if device_capacity < bytes || self.output.is_none() {
            let capacity = grown_capacity(bytes, limit);
            self.input = None;
            self.output = None;
            self.input = Some(device(capacity)?);
            self.output = Some(device(capacity)?);
        }
        let staged_capacity = self.staged.as_ref().map_or(0, SlotBuffer::byte_len);
        if staging == Staging::Staged && staged_capacity < bytes {
            self.staged = None;
            self.staged = Some(pinned(grown_capacity(bytes, limit))?);
        }
        Ok(())
    }

    /// Makes the side buffer hold at least `bytes`, from `device` (a power of two, so that
    /// growing sums do not reallocate every call).
    pub(crate) fn reserve_sums(
        &mut self,
        bytes: usize,
        device: impl FnOnce(usize) -> Outcome<Device>,
    ) -> Outcome {
        if self.counters.as_ref().map_or(0, SlotBuffer::byte_len) < bytes {
            self.counters = None;
            self.counters = Some(device(bytes.next_power_of_two())?);
        }
        Ok(())
    }
}

/// The device's key buffers, the fixed AES tables, and what uploading the key needs:
/// `Words` is the API's device buffer of words, `Pinned` its page-locked host buffer and
/// `Event` its event.
pub struct StreamKeys<Words, Pinned, Event> {
    pub(crate) round_keys: Words,
    pub(crate) key_tables: Words,
    pub(crate) aes_tables: Words,
    /// Pinned, so that key words go straight from here to the device and never through a
    /// driver staging buffer this crate cannot wipe.
    pub(crate) key_staging: Pinned,
    /// Recorded on stream 0 after the key upload; the other streams wait for it.
    pub(crate) key_ready: Event,
}
