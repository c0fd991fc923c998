//! Device memory that another library owns: a CuPy array, a PyTorch tensor, anything that
//! hands out a raw CUDA device address (through DLPack, `__cuda_array_interface__` or a C
//! API). [`ForeignDeviceMemory`] is only a description (address, length, device, and the
//! stream the owner last wrote it on); making one is the `unsafe` step, in which the caller
//! promises that the memory is there and is theirs to lend. Everything a
//! [`CudaDevice`](crate::CudaDevice) then does with it
//! ([`CudaDevice::process_foreign`](crate::CudaDevice::process_foreign),
//! [`CudaDevice::ghash_foreign`](crate::CudaDevice::ghash_foreign), ...) is safe to call.

use std::marker::PhantomData;
use std::ops::Range;

use crate::GpuError;

/// The accessors of a range of device memory held as the fields `address`, `length` and
/// `device`: the same for [`ForeignDeviceMemory`] and for the CUDA backend's
/// `DeviceAllocation`. `$address_doc` documents `address`.
macro_rules! device_range_accessors {
    ($address_doc:literal) => {
        #[doc = $address_doc]
        pub fn address(&self) -> u64 {
            self.address
        }

        /// Its length in bytes.
        pub fn len(&self) -> usize {
            self.length
        }

        /// Whether it holds no bytes.
        pub fn is_empty(&self) -> bool {
            self.length == 0
        }

        /// The CUDA device ordinal it lives on.
        pub fn device(&self) -> usize {
            self.device
        }
    };
}
#[cfg_attr(not(feature = "cuda"), allow(unused_imports))]
pub(crate) use device_range_accessors;

/// A range of CUDA device memory owned by someone else, lent for the lifetime `'a`.
///
/// Nothing is copied to the host and nothing is freed: the owner keeps the memory. The
/// description is `Copy`, so that one region may be passed as both input and output (in
/// place); two descriptions that overlap without being the same range are refused by every
/// call that takes two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForeignDeviceMemory<'a> {
    address: u64,
    length: usize,
    device: usize,
    producer_stream: Option<usize>,
    _lent: PhantomData<&'a mut [u8]>,
}

impl<'a> ForeignDeviceMemory<'a> {
    /// Describes `length` bytes of device memory at `address` on CUDA device `device` (the
    /// driver's ordinal), last written on the CUDA stream `producer_stream` (a `CUstream`
    /// handle as an integer; `None` when the owner already ordered its work before the
    /// caller's, e.g. by DLPack's `__dlpack__(stream=...)`). Calls that take the memory make
    /// their own work wait for that stream's work queued so far.
    ///
    /// # Safety
    /// For all of `'a`:
    /// - `address .. address + length` must be live device memory (or managed memory) of
    ///   device `device`, allocated in or accessible from that device's primary context, and
    ///   must not be freed or reused by its owner;
    /// - nobody else may read or write it while a call that takes it runs (a call returns
    ///   only after its device work is complete), except work ordered before the call on
    ///   `producer_stream`;
    /// - `producer_stream`, when given, must be a live stream of that context (or one of
    ///   CUDA's special handles, such as `1` for the legacy default stream).
    ///
    /// An empty range (`length == 0`) is never dereferenced; its address may be anything.
    /// Calls also check what the driver can tell (the device the address is on, and that the
    /// range lies inside one allocation), but they cannot check ownership.
    pub unsafe fn new(
        address: u64,
        length: usize,
        device: usize,
        producer_stream: Option<usize>,
    ) -> Self {
        ForeignDeviceMemory {
            address,
            length,
            device,
            producer_stream,
            _lent: PhantomData,
        }
    }

    device_range_accessors!("The device address of the first byte.");

    /// The stream the owner last wrote it on, if the caller named one.
    pub fn producer_stream(&self) -> Option<usize> {
        self.producer_stream
    }

    /// The bytes `range` of this memory (same device and producer stream), or an error when
    /// the range does not lie inside it. Safe: part of memory lent for `'a` is lent for `'a`.
    pub fn range(&self, range: Range<usize>) -> Result<ForeignDeviceMemory<'a>, GpuError> {
        if range.start > range.end || range.end > self.length {
            return Err(GpuError::InvalidInput(format!(
                "bytes {range:?} lie outside the {}-byte device memory",
                self.length
            )));
        }
        Ok(ForeignDeviceMemory {
            address: self.address + range.start as u64,
            length: range.end - range.start,
            ..*self
        })
    }

    /// Whether `self` and `other` are the same range (an in-place call).
    pub fn same_as(&self, other: &ForeignDeviceMemory<'_>) -> bool {
        self.device == other.device && self.address == other.address
    }

    /// Whether any byte of `self` is also a byte of `other`.
    pub fn overlaps(&self, other: &ForeignDeviceMemory<'_>) -> bool {
        if self.is_empty() || other.is_empty() || self.device != other.device {
            return false;
        }
        let end = |memory: &ForeignDeviceMemory<'_>| memory.address + memory.length as u64;
        self.address < end(other) && other.address < end(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_overlaps_are_checked() {
        // SAFETY: the descriptions are only compared and cut here, never used for memory.
        let memory = unsafe { ForeignDeviceMemory::new(0x1000, 64, 0, Some(7)) };
        let front = memory.range(0..16).unwrap();
        let back = memory.range(48..64).unwrap();
        assert_eq!((back.address(), back.len()), (0x1030, 16));
        assert_eq!(back.producer_stream(), Some(7));
        assert!(memory.range(60..70).is_err());
        assert!(front.overlaps(&memory) && !front.overlaps(&back));
        assert!(front.same_as(&memory) && !back.same_as(&memory));
        assert!(!memory.range(0..0).unwrap().overlaps(&memory));
        // SAFETY: as above.
        let elsewhere = unsafe { ForeignDeviceMemory::new(0x1000, 64, 1, None) };
        assert!(!elsewhere.overlaps(&memory));
    }
}
