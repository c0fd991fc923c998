//! The kernels' parameter lists, written once: which arguments a launch passes, in which
//! order and of which type, as roles ([`Argument`]) that an adapter turns into its API's
//! values (an OpenCL `cl_mem`, a CUDA device pointer). The order and types follow the
//! kernel signatures in `kernels/parcrypt.cl`, which every API compiles.

use parcrypt_ciphers::registry::KernelKeyArgument;

use super::{launch_shape, Shape};
use crate::kernel_source::{self, CipherFamily, KernelOperation};
use crate::operation::ModeArguments;
use crate::{ghash, GpuError, KeyMaterial, LaunchGeometry};

/// One kernel argument, by role: buffers are named, values carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Argument {
    /// The data the kernel reads (a `const` pointer).
    Input,
    /// Where the kernel writes (may be the input's memory only where the caller says so).
    Output,
    /// Segmented CTR: the counter block of every segment of the launch.
    Counters,
    /// GCM on device-resident slabs: where `ghash_groups` writes its 16-byte sums. It is
    /// the slot's side buffer, the one [`Argument::Counters`] names (a GCM call's CTR is
    /// never segmented, so one launch never names both).
    Sums,
    /// The key's round keys.
    RoundKeys,
    /// The key-dependent tables (Blowfish's S-boxes).
    KeyTables,
    /// The fixed AES tables.
    AesTables,
    /// A `u32` by value.
    U32(u32),
    /// A `u64` by value.
    U64(u64),
    /// A `u32x4` by value (a 16-byte counter or previous block).
    Words4([u32; 4]),
    /// A `u32x2` by value (an 8-byte block).
    Words2([u32; 2]),
}

/// The most arguments a kernel takes (AES segmented CTR, `ghash_groups`: 9).
pub(crate) const MOST_ARGUMENTS: usize = 10;

/// A launch's arguments in order, kept on the stack: a launch allocates nothing.
#[derive(Clone, Copy, Debug)]
pub struct ArgumentList {
    items: [Argument; MOST_ARGUMENTS],
    length: usize,
}

impl ArgumentList {
    fn new() -> Self {
        ArgumentList {
            items: [Argument::U32(0); MOST_ARGUMENTS],
            length: 0,
        }
    }

    fn push(&mut self, argument: Argument) {
        self.items[self.length] = argument;
        self.length += 1;
    }

    /// The arguments in the kernel's parameter order.
    pub fn as_slice(&self) -> &[Argument] {
        &self.items[..self.length]
    }

    /// Whether the launch reads a counter buffer (segmented CTR).
    pub fn reads_counters(&self) -> bool {
        self.as_slice().contains(&Argument::Counters)
    }

    /// Whether the launch names the slot's side buffer: segmented CTR's counter blocks
    /// ([`Argument::Counters`]) or GCM's GHASH sums ([`Argument::Sums`]).
    pub fn uses_side_buffer(&self) -> bool {
        self.as_slice()
            .iter()
            .any(|argument| matches!(argument, Argument::Counters | Argument::Sums))
    }

    /// The slot buffers a launch with these arguments runs over: its `input` and `output`
    /// (which reserving a slot leaves allocated), and its `side` buffer where the arguments
    /// name it.
    #[cfg_attr(not(any(feature = "opencl", feature = "hip")), allow(dead_code))]
    pub(crate) fn slot_buffers<'a, B>(
        &self,
        input: &'a Option<B>,
        output: &'a Option<B>,
        side: &'a Option<B>,
    ) -> (&'a B, &'a B, Option<&'a B>) {
        let (Some(input), Some(output)) = (input, output) else {
            unreachable!("reserve leaves both buffers allocated");
        };
        let side = side.as_ref().filter(|_| self.uses_side_buffer());
        (input, output, side)
    }
}

/// The buffers a launch's arguments may name, as an API addresses them (a device address).
#[derive(Clone, Copy, Debug)]
pub struct LaunchBuffers<P> {
    pub input: P,
    pub output: P,
    /// The side buffer: segmented CTR's counter blocks or GCM's GHASH sums, where the
    /// caller has one.
    pub counters: Option<P>,
    pub round_keys: P,
    pub key_tables: P,
    pub aes_tables: P,
}

/// One argument as an API passes it by value: a buffer's address or the value itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgumentValue<P> {
    Pointer(P),
    U32(u32),
    U64(u64),
    Words4([u32; 4]),
    Words2([u32; 2]),
}

impl ArgumentList {
    /// The arguments' values in order, buffers replaced by their addresses in `buffers`; on
    /// the stack, with how many there are. Fails when the list reads a counter buffer the
    /// caller has none of.
    pub fn values<P: Copy>(
        &self,
        buffers: &LaunchBuffers<P>,
    ) -> Result<([ArgumentValue<P>; MOST_ARGUMENTS], usize), GpuError> {
        let mut values = [ArgumentValue::U32(0); MOST_ARGUMENTS];
        for (value, argument) in values.iter_mut().zip(self.as_slice()) {
            *value = match *argument {
                Argument::Input => ArgumentValue::Pointer(buffers.input),
                Argument::Output => ArgumentValue::Pointer(buffers.output),
                Argument::Counters | Argument::Sums => {
                    ArgumentValue::Pointer(buffers.counters.ok_or_else(|| {
                        GpuError::InvalidInput(
                            "segmented CTR and GCM's sums need the slot's side buffer".into(),
                        )
                    })?)
                }
                Argument::RoundKeys => ArgumentValue::Pointer(buffers.round_keys),
                Argument::KeyTables => ArgumentValue::Pointer(buffers.key_tables),
                Argument::AesTables => ArgumentValue::Pointer(buffers.aes_tables),
                Argument::U32(value) => ArgumentValue::U32(value),
                Argument::U64(value) => ArgumentValue::U64(value),
                Argument::Words4(words) => ArgumentValue::Words4(words),
                Argument::Words2(words) => ArgumentValue::Words2(words),
            };
        }
        Ok((values, self.length))
    }
}

/// What the device allows a kernel's launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KernelLimits {
    /// The largest group (which depends on the kernel's registers and local memory).
    pub max_group_size: usize,
    /// Set when only one group of the kernel fits on a compute unit at a time (Blowfish's
    /// 128 KiB of per-lane tables): the number of compute units. Launches then use a
    /// persistent grid (see [`LoadedKernel::shape`]).
    pub resident_groups: Option<usize>,
}

impl KernelLimits {
    /// Limits with no persistent grid.
    pub(crate) fn groups_of(max_group_size: usize) -> Self {
        KernelLimits {
            max_group_size,
            resident_groups: None,
        }
    }
}

/// The most threads a persistent group asks for.
const PERSISTENT_GROUP_THREADS: usize = 1024;

/// One compiled kernel, what it runs, and the largest group the device allows for it
/// (which depends on the kernel's registers and local memory).
pub(crate) struct LoadedKernel<K> {
    pub family: CipherFamily,
    pub operation: KernelOperation,
    /// The segmented variant of the CTR kernel ([`kernel_source::ctr_segments_kernel_name`]).
    pub segmented: bool,
    pub kernel: K,
    pub max_group_size: usize,
    /// See [`KernelLimits::resident_groups`].
    pub resident_groups: Option<usize>,
}

impl<K> LoadedKernel<K> {
    /// The launch shape for `blocks` blocks under `geometry`. A kernel of which one group
    /// fills a compute unit instead runs one group per compute unit, as wide as it may be
    /// (up to 1024 threads), each looping over its share of the blocks: every group copies
    /// (and wipes) its tables once per launch rather than once per few thousand blocks, and
    /// the compute unit is never left idle while a group copies.
    pub(crate) fn shape(&self, geometry: LaunchGeometry, blocks: usize) -> Shape {
        match self.resident_groups {
            None => launch_shape(geometry, blocks, self.max_group_size),
            Some(resident) => {
                let wide = LaunchGeometry {
                    threads_per_group: PERSISTENT_GROUP_THREADS,
                    ..geometry
                };
                let shape = launch_shape(wide, blocks, self.max_group_size);
                Shape {
                    groups: shape.groups.min(resident.max(1)),
                    ..shape
                }
            }
        }
    }
}

/// Every cipher kernel of the program, and the GHASH kernel, which belongs to no family.
pub(crate) struct KernelTable<K> {
    ciphers: Vec<LoadedKernel<K>>,
    pub ghash: K,
    pub ghash_max_group_size: usize,
    /// `ghash_groups`: GHASH joined per work-group on the device
    /// ([`ghash_group_arguments`]).
    pub ghash_groups: K,
    pub ghash_groups_max_group_size: usize,
}

impl<K> KernelTable<K> {
    /// Loads every kernel by name with `load`, which returns the kernel and the largest
    /// group it may be launched with.
    pub(crate) fn load(
        mut load: impl FnMut(
            &'static str,
            Option<(CipherFamily, KernelOperation)>,
        ) -> Result<(K, KernelLimits), GpuError>,
    ) -> Result<Self, GpuError> {
        let mut ciphers = Vec::new();
        for family in CipherFamily::ALL {
            for function in kernel_source::family_kernels(family) {
                let (kernel, limits) = load(function.name, Some((family, function.operation)))?;
                ciphers.push(LoadedKernel {
                    family,
                    operation: function.operation,
                    segmented: function.segmented,
                    kernel,
                    max_group_size: limits.max_group_size.max(1),
                    resident_groups: limits.resident_groups,
                });
            }
        }
        let (ghash, ghash_limits) = load(ghash::KERNEL_NAME, None)?;
        let (ghash_groups, groups_limits) = load(ghash::GROUPS_KERNEL_NAME, None)?;
        Ok(KernelTable {
            ciphers,
            ghash,
            ghash_max_group_size: ghash_limits.max_group_size.max(1),
            ghash_groups,
            ghash_groups_max_group_size: groups_limits.max_group_size.max(1),
        })
    }

    /// The kernel of `family` for `operation`, segmented CTR or not.
    pub(crate) fn find(
        &self,
        family: CipherFamily,
        operation: KernelOperation,
        segmented: bool,
    ) -> &LoadedKernel<K> {
        self.ciphers
            .iter()
            .find(|loaded| {
                loaded.family == family
                    && loaded.operation == operation
                    && loaded.segmented == segmented
            })
            .expect("a kernel exists for every family and operation")
    }
}

/// The arguments of a cipher kernel's launch over `blocks` blocks under `key`, with the
/// mode's arguments of its first block. Segment arguments go with a segmented kernel and
/// only with one; `counters_available` says whether the caller has a counter buffer to
/// give (the mapped paths have none).
pub(crate) fn cipher_arguments(
    segmented: bool,
    key: &KeyMaterial,
    blocks: usize,
    mode: ModeArguments,
    counters_available: bool,
) -> Result<ArgumentList, GpuError> {
    if segmented != matches!(mode, ModeArguments::Segments { .. }) {
        return Err(GpuError::InvalidInput(
            "segment arguments go with a segmented CTR kernel and only with one".into(),
        ));
    }
    let block_count = u32::try_from(blocks)
        .map_err(|_| GpuError::InvalidInput(format!("{blocks} blocks do not fit one launch")))?;
    let block_words = |words: [u32; 4]| match key.algorithm().block_size() {
        16 => Argument::Words4(words),
        _ => Argument::Words2([words[0], words[1]]),
    };
    let mut arguments = ArgumentList::new();
    arguments.push(Argument::Input);
    arguments.push(Argument::Output);
    arguments.push(Argument::U32(block_count));
    arguments.push(Argument::RoundKeys);
    // The key-dependent arguments the family's kernels take, as its registry entry lists.
    for argument in key.algorithm().descriptor().gpu.key_arguments {
        arguments.push(match argument {
            KernelKeyArgument::Rounds => Argument::U32(key.rounds()),
            KernelKeyArgument::AesTables => Argument::AesTables,
            KernelKeyArgument::KeyTables => Argument::KeyTables,
        });
    }
    match mode {
        ModeArguments::None => {}
        ModeArguments::Counter { words, rule } => {
            arguments.push(block_words(words));
            arguments.push(Argument::U32(rule));
        }
        ModeArguments::Previous { words } => arguments.push(block_words(words)),
        ModeArguments::Segments {
            blocks_per_segment,
            rule,
            ..
        } => {
            if !counters_available {
                return Err(GpuError::InvalidInput(
                    "segmented CTR runs through the copying paths only (process, and on \
                     CUDA process_pinned and the device-buffer calls), not through mapped \
                     memory"
                        .into(),
                ));
            }
            arguments.push(Argument::Counters);
            arguments.push(Argument::U32(blocks_per_segment));
            arguments.push(Argument::U32(rule));
        }
    }
    Ok(arguments)
}

/// The arguments of the GHASH kernel over `blocks` blocks in segments of
/// `blocks_per_segment`, under the prepared hash key's (high, low) words.
pub(crate) fn ghash_arguments(
    blocks: usize,
    blocks_per_segment: u32,
    (key_high, key_low): (u64, u64),
) -> Result<ArgumentList, GpuError> {
    let block_count = u32::try_from(blocks)
        .map_err(|_| GpuError::InvalidInput(format!("{blocks} blocks do not fit one launch")))?;
    let mut arguments = ArgumentList::new();
    for argument in [
        Argument::Input,
        Argument::Output,
        Argument::U32(block_count),
        Argument::U32(blocks_per_segment),
        Argument::U64(key_high),
        Argument::U64(key_low),
    ] {
        arguments.push(argument);
    }
    Ok(arguments)
}

/// The arguments of `ghash_groups` over `blocks` blocks (whole segments of
/// `blocks_per_segment`) read from `source` ([`Argument::Input`] or [`Argument::Output`]:
/// the slot's buffer holding the ciphertext) into `sums` ([`Argument::Output`] for a call of
/// its own, [`Argument::Sums`] beside a cipher launch), its first sum at index `first_sum`,
/// with the keys for the work-group size it is launched with.
pub(crate) fn ghash_group_arguments(
    source: Argument,
    sums: Argument,
    blocks: usize,
    blocks_per_segment: u32,
    keys: ghash::GroupKeys,
    first_sum: usize,
) -> Result<ArgumentList, GpuError> {
    let block_count = u32::try_from(blocks)
        .map_err(|_| GpuError::InvalidInput(format!("{blocks} blocks do not fit one launch")))?;
    let first_sum = u32::try_from(first_sum)
        .map_err(|_| GpuError::InvalidInput(format!("sum index {first_sum} too large")))?;
    let mut arguments = ArgumentList::new();
    for argument in [
        source,
        sums,
        Argument::U32(block_count),
        Argument::U32(blocks_per_segment),
        Argument::U64(keys.key.0),
        Argument::U64(keys.key.1),
        Argument::U32(first_sum),
        Argument::U64(keys.stride.0),
        Argument::U64(keys.stride.1),
    ] {
        arguments.push(argument);
    }
    Ok(arguments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use parcrypt_ciphers::Algorithm;

    #[test]
    fn group_sums_name_the_side_buffer() {
        let arguments = ghash_group_arguments(
            Argument::Output,
            Argument::Sums,
            512,
            256,
            ghash::GroupKeys {
                key: (1, 2),
                stride: (4, 5),
            },
            3,
        )
        .unwrap();
        assert!(arguments.uses_side_buffer());
        assert!(!arguments.reads_counters());
        assert_eq!(arguments.as_slice()[6], Argument::U32(3));
        assert_eq!(
            arguments.as_slice()[7..],
            [Argument::U64(4), Argument::U64(5)]
        );
    }

    #[test]
    fn aes_ctr_passes_rounds_tables_counter_and_rule_in_order() {
        let key = KeyMaterial::new(Algorithm::Aes128, &[0; 16]).unwrap();
        let mode = ModeArguments::Counter {
            words: [1, 2, 3, 4],
            rule: 7,
        };
        let arguments = cipher_arguments(false, &key, 5, mode, true).unwrap();
        assert_eq!(
            arguments.as_slice(),
            [
                Argument::Input,
                Argument::Output,
                Argument::U32(5),
                Argument::RoundKeys,
                Argument::U32(10),
                Argument::AesTables,
                Argument::Words4([1, 2, 3, 4]),
                Argument::U32(7),
            ]
        );
    }

    #[test]
    fn blowfish_blocks_are_two_words() {
        let key = KeyMaterial::new(Algorithm::Blowfish, &[1; 16]).unwrap();
        let mode = ModeArguments::Previous {
            words: [9, 8, 0, 0],
        };
        let arguments = cipher_arguments(false, &key, 1, mode, true).unwrap();
        assert_eq!(
            &arguments.as_slice()[3..],
            [
                Argument::RoundKeys,
                Argument::KeyTables,
                Argument::Words2([9, 8])
            ]
        );
    }

    /// An RC6 key and the arguments of one 4-block segment under counter rule `rule`.
    fn rc6_segment(rule: u32) -> (KeyMaterial, ModeArguments) {
        let key = KeyMaterial::new(Algorithm::Rc6_128, &[0; 16]).unwrap();
        let segments = ModeArguments::Segments {
            first: 0,
            count: 1,
            blocks_per_segment: 4,
            rule,
        };
        (key, segments)
    }

    #[test]
    fn segment_arguments_need_the_segmented_kernel_and_a_counter_buffer() {
        let (key, segments) = rc6_segment(0);
        assert!(cipher_arguments(false, &key, 4, segments, true).is_err());
        assert!(cipher_arguments(true, &key, 4, ModeArguments::None, true).is_err());
        assert!(cipher_arguments(true, &key, 4, segments, false).is_err());
        let arguments = cipher_arguments(true, &key, 4, segments, true).unwrap();
        assert!(arguments.reads_counters());
    }

    #[test]
    fn values_put_each_buffer_where_its_role_is() {
        let (key, segments) = rc6_segment(2);
        let arguments = cipher_arguments(true, &key, 4, segments, true).unwrap();
        let mut buffers = LaunchBuffers {
            input: 1u64,
            output: 2,
            counters: Some(3),
            round_keys: 4,
            key_tables: 5,
            aes_tables: 6,
        };
        let (values, count) = arguments.values(&buffers).unwrap();
        assert_eq!(
            values[..count],
            [
                ArgumentValue::Pointer(1),
                ArgumentValue::Pointer(2),
                ArgumentValue::U32(4),
                ArgumentValue::Pointer(4),
                ArgumentValue::Pointer(3),
                ArgumentValue::U32(4),
                ArgumentValue::U32(2),
            ]
        );
        buffers.counters = None;
        assert!(arguments.values(&buffers).is_err());
    }
}

#[cfg(test)]
mod persistent_grid_tests {
    use super::*;

    fn kernel(max_group_size: usize, resident_groups: Option<usize>) -> LoadedKernel<()> {
        LoadedKernel {
            family: CipherFamily::Blowfish,
            operation: KernelOperation::Ctr,
            segmented: false,
            kernel: (),
            max_group_size,
            resident_groups,
        }
    }

    #[test]
    fn a_kernel_that_fills_a_compute_unit_runs_one_wide_group_per_unit() {
        let geometry = LaunchGeometry {
            threads_per_group: 256,
            blocks_per_thread: 16,
        };
        let shape = |kernel: &LoadedKernel<()>, blocks| {
            let shape = kernel.shape(geometry, blocks);
            (shape.group_size, shape.groups)
        };
        // The geometry's shape where groups share a compute unit.
        assert_eq!(shape(&kernel(1024, None), 1 << 24), (256, 4096));
        // One group per unit: 1024 threads, never more groups than units.
        let persistent = kernel(1024, Some(132));
        assert_eq!(shape(&persistent, 1 << 24), (1024, 132));
        assert_eq!(shape(&persistent, 1 << 16), (1024, 4));
        assert_eq!(shape(&persistent, 1), (1024, 1));
        // The kernel's own limit still holds.
        assert_eq!(shape(&kernel(512, Some(132)), 1 << 24), (512, 132));
    }
}
