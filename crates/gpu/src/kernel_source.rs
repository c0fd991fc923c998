//! The kernel source text and the compile-time choices (`-D` defines) made for a device.
//!
//! `kernels/parcrypt.cl` is written once; the vendor header in front of it maps its
//! qualifiers and built-ins to OpenCL C or CUDA. A `#line` directive after the header keeps
//! compiler messages pointing at lines of `parcrypt.cl`.

use std::fmt;

use parcrypt_modes::{Direction, Mode};

use crate::DeviceKind;

/// The kernels, without a vendor header.
pub const KERNEL_SOURCE: &str = include_str!("../kernels/parcrypt.cl");
/// Maps the kernels' names to OpenCL C 1.2.
pub const VENDOR_OPENCL: &str = include_str!("../kernels/vendor_opencl.h");
/// Maps the kernels' names to CUDA C++ as NVRTC compiles it.
pub const VENDOR_CUDA: &str = include_str!("../kernels/vendor_cuda.h");
/// What HIP adds in front of [`VENDOR_CUDA`]: HIP spells the kernels' names as CUDA does.
pub const VENDOR_HIP: &str = include_str!("../kernels/vendor_hip.h");

/// The full text the OpenCL compiler is given.
pub fn opencl_source() -> String {
    with_header(VENDOR_OPENCL)
}

/// The full text NVRTC is given.
pub fn cuda_source() -> String {
    with_header(VENDOR_CUDA)
}

/// The full text hiprtc is given: the HIP header, then the CUDA header, then the kernels.
pub fn hip_source() -> String {
    with_header(&format!("{VENDOR_HIP}\n{VENDOR_CUDA}"))
}

fn with_header(header: &str) -> String {
    format!("{header}\n#line 1 \"parcrypt.cl\"\n{KERNEL_SOURCE}")
}

/// Which kernels serve a cipher: the family of its entry in the cipher registry
/// (`parcrypt_ciphers::registry::CIPHERS`), which also names its kernels.
pub use parcrypt_ciphers::registry::CipherFamily;

/// What a kernel does to its blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelOperation {
    /// Encrypt every block on its own (ECB).
    EcbEncrypt,
    /// Decrypt every block on its own (ECB).
    EcbDecrypt,
    /// XOR the encrypted counter blocks into the data (CTR, encryption and decryption).
    Ctr,
    /// Decrypt every block and XOR the ciphertext block before it (CBC decryption).
    CbcDecrypt,
}

impl KernelOperation {
    /// Every operation, in a stable order.
    pub const ALL: [KernelOperation; 4] = [
        KernelOperation::EcbEncrypt,
        KernelOperation::EcbDecrypt,
        KernelOperation::Ctr,
        KernelOperation::CbcDecrypt,
    ];

    /// Whether the kernel runs the cipher backwards (and so, for AES, wants the equivalent
    /// inverse cipher's round keys).
    pub fn decrypts(self) -> bool {
        matches!(
            self,
            KernelOperation::EcbDecrypt | KernelOperation::CbcDecrypt
        )
    }

    /// The kernel that runs `mode` in `direction` on a device: CTR for CTR and GCM (which
    /// only ever encrypt counter blocks), the ECB kernels for ECB, CBC decryption's for CBC
    /// decryption. `None` for CBC encryption, which no device runs (each block needs the
    /// one before it).
    pub fn for_mode(mode: Mode, direction: Direction) -> Option<KernelOperation> {
        match (mode, direction) {
            (Mode::Ctr | Mode::Gcm, _) => Some(KernelOperation::Ctr),
            (Mode::Ecb, Direction::Encrypt) => Some(KernelOperation::EcbEncrypt),
            (Mode::Ecb, Direction::Decrypt) => Some(KernelOperation::EcbDecrypt),
            (Mode::Cbc, Direction::Decrypt) => Some(KernelOperation::CbcDecrypt),
            (Mode::Cbc, Direction::Encrypt) => None,
        }
    }
}

/// The name of the kernel function for a cipher family and operation, e.g. `aes_ctr`, as
/// the family's entry in the cipher registry gives it.
pub fn kernel_name(family: CipherFamily, operation: KernelOperation) -> &'static str {
    let kernels = &family.descriptor().gpu;
    match operation {
        KernelOperation::EcbEncrypt => kernels.ecb_encrypt,
        KernelOperation::EcbDecrypt => kernels.ecb_decrypt,
        KernelOperation::Ctr => kernels.ctr,
        KernelOperation::CbcDecrypt => kernels.cbc_decrypt,
    }
}

/// The segmented CTR kernel of a family (`aes_ctr_segments`, ...): CTR over consecutive
/// segments, each from its own counter block. It is a variant of the family's
/// [`KernelOperation::Ctr`] kernel, with the same tables and the same rounds per block, so it
/// goes by that operation wherever one is named (shared-memory sizes, tuned launch shapes).
pub fn ctr_segments_kernel_name(family: CipherFamily) -> &'static str {
    family.descriptor().gpu.ctr_segments
}

/// One kernel function of a cipher family, as the hosts load it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FamilyKernel {
    /// The operation it goes by (segmented CTR goes by [`KernelOperation::Ctr`]).
    pub operation: KernelOperation,
    /// The segmented CTR kernel ([`ctr_segments_kernel_name`]).
    pub segmented: bool,
    pub name: &'static str,
}

/// Every kernel function of `family`: one per operation, then segmented CTR.
pub(crate) fn family_kernels(family: CipherFamily) -> Vec<FamilyKernel> {
    KernelOperation::ALL
        .iter()
        .map(|&operation| FamilyKernel {
            operation,
            segmented: false,
            name: kernel_name(family, operation),
        })
        .chain([FamilyKernel {
            operation: KernelOperation::Ctr,
            segmented: true,
            name: ctr_segments_kernel_name(family),
        }])
        .collect()
}

/// Bytes of local memory one table copy takes: Te0 and its rotation Te1; Td0, Td1 and the
/// packed inverse S-box; the four Blowfish S-boxes.
const AES_ENCRYPT_BYTES_PER_COPY: u64 = 2 * 256 * 4;
const AES_DECRYPT_BYTES_PER_COPY: u64 = (2 * 256 + 64) * 4;
const BLOWFISH_BYTES_PER_COPY: u64 = 1024 * 4;

/// How many interleaved copies of each table the kernels keep in local memory.
///
/// 32 copies give every lane of a 32-wide warp its own bank, which closes the bank-conflict
/// timing channel (see the top of `parcrypt.cl`); fewer copies are used only when 32 do not
/// fit. Each count is a power of two from 1 to 32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TableCopies {
    /// Copies of the AES encryption tables (Te0 and its rotation Te1, 2 KiB each).
    pub aes_encrypt: u32,
    /// Copies of the AES decryption tables (Td0, its rotation Td1 and the packed inverse
    /// S-box, 2.25 KiB each).
    pub aes_decrypt: u32,
    /// Copies of the four Blowfish S-boxes (4 KiB each).
    pub blowfish: u32,
}

impl TableCopies {
    /// One copy per lane of a warp: the constant-time layout.
    pub const PER_LANE: u32 = 32;
    /// Every count the kernels accept, for compile checks.
    pub const VALID_COUNTS: [u32; 6] = [1, 2, 4, 8, 16, 32];

    /// The same count for every table.
    pub fn uniform(copies: u32) -> Self {
        TableCopies {
            aes_encrypt: copies,
            aes_decrypt: copies,
            blowfish: copies,
        }
    }

    /// The counts for a device. GPUs get the largest power of two up to 32 that fits its
    /// local memory, per table. CPU devices get one copy: their local memory is ordinary
    /// cached memory with no banks, so copies would only cost cache space and copying time
    /// (and the cache channel they leave open is the same either way).
    pub fn for_device(kind: DeviceKind, local_memory_bytes: u64) -> Self {
        if kind == DeviceKind::Cpu {
            return TableCopies::uniform(1);
        }
        let fitting = |bytes_per_copy: u64| {
            let mut copies = Self::PER_LANE;
            while copies > 1 && u64::from(copies) * bytes_per_copy > local_memory_bytes {
                copies /= 2;
            }
            copies
        };
        TableCopies {
            aes_encrypt: fitting(AES_ENCRYPT_BYTES_PER_COPY),
            aes_decrypt: fitting(AES_DECRYPT_BYTES_PER_COPY),
            blowfish: fitting(BLOWFISH_BYTES_PER_COPY),
        }
    }

    /// Checks that every count is one the kernels accept.
    pub fn validate(self) -> Result<(), crate::GpuError> {
        for (name, copies) in self.defines() {
            if !Self::VALID_COUNTS.contains(&copies) {
                return Err(crate::GpuError::InvalidInput(format!(
                    "{name} = {copies}: table copies must be 1, 2, 4, 8, 16 or 32"
                )));
            }
        }
        Ok(())
    }

    /// Bytes of local memory the largest table of any kernel takes with these counts (AES
    /// decryption's Td0 and inverse S-box, or Blowfish's S-boxes).
    pub fn largest_table_bytes(self) -> u64 {
        (u64::from(self.aes_encrypt) * AES_ENCRYPT_BYTES_PER_COPY)
            .max(u64::from(self.aes_decrypt) * AES_DECRYPT_BYTES_PER_COPY)
            .max(u64::from(self.blowfish) * BLOWFISH_BYTES_PER_COPY)
    }

    /// Copies of the AES tables a kernel of `operation` reads: the decryption tables' for
    /// ECB and CBC decryption, the encryption tables' otherwise.
    pub fn aes_copies(self, operation: KernelOperation) -> u32 {
        if operation.decrypts() {
            self.aes_decrypt
        } else {
            self.aes_encrypt
        }
    }

    /// Whether every table has a copy per lane, i.e. the bank-conflict channel is closed.
    pub fn per_lane(self) -> bool {
        self.defines()
            .iter()
            .all(|&(_, copies)| copies == Self::PER_LANE)
    }

    /// The `-D` defines the kernels read, as (name, value).
    pub fn defines(self) -> [(&'static str, u32); 3] {
        [
            ("AES_ENCRYPT_TABLE_COPIES", self.aes_encrypt),
            ("AES_DECRYPT_TABLE_COPIES", self.aes_decrypt),
            ("BLOWFISH_TABLE_COPIES", self.blowfish),
        ]
    }

    /// The compiler options for these counts, e.g. `-D AES_ENCRYPT_TABLE_COPIES=32 ...`
    /// (the same spelling works for the OpenCL compiler and NVRTC).
    pub fn compiler_options(self) -> String {
        self.defines()
            .iter()
            .map(|(name, copies)| format!("-D {name}={copies}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl fmt::Display for TableCopies {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "table copies: AES encrypt {}, AES decrypt {}, Blowfish {}",
            self.aes_encrypt, self.aes_decrypt, self.blowfish
        )
    }
}

/// Why table AES on a device may leak its key through timing (see "WHAT IS AND IS NOT
/// CONSTANT TIME" at the top of `parcrypt.cl`). [`aes_timing_leak`] decides; `auto` never
/// sends AES to a device with a leak, and naming such a device's backend warns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AesTimingLeak {
    /// The device is not a GPU: its local memory is ordinary cached memory (a CPU OpenCL
    /// device such as PoCL) or of a kind whose banks and caches we do not know, so table
    /// lookups leak through its caches as CPU T-table AES does.
    NotAGpu(DeviceKind),
    /// A GPU that keeps this many copies (fewer than 32) of a table the job reads: lanes
    /// of one warp share copies, and which of them conflict in a bank depends on the key.
    SharedTableCopies(u32),
    /// The device does not say which table layout its kernels were compiled with.
    UnknownLayout,
}

impl fmt::Display for AesTimingLeak {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AesTimingLeak::NotAGpu(DeviceKind::Cpu) => formatter
                .write_str("it is a CPU device, whose table lookups leak through the data cache"),
            AesTimingLeak::NotAGpu(kind) => write!(
                formatter,
                "it is an OpenCL device of kind '{kind}', whose table lookups may leak \
                 through its caches"
            ),
            AesTimingLeak::SharedTableCopies(copies) => write!(
                formatter,
                "its kernels keep {copies} copies of the AES tables (32 close the \
                 shared-memory bank-conflict channel), so lanes share copies and their \
                 conflicts depend on the key"
            ),
            AesTimingLeak::UnknownLayout => {
                formatter.write_str("its AES table layout is not known to be constant time")
            }
        }
    }
}

/// The rule for table AES: `None` when AES `operation` on a device of `kind` whose kernels
/// keep `copies` is free of the timing channels a table layout can close (a GPU with a
/// copy per lane of every table the operation reads), else why not. RC6 reads no tables,
/// and Blowfish's S-boxes are key-dependent tables on every path (the CPU's too), so the
/// rule is for AES alone: there the CPU path (AES-NI, VAES) is constant time and a leaking
/// device would be a step down.
pub fn aes_timing_leak(
    kind: DeviceKind,
    copies: TableCopies,
    operation: KernelOperation,
) -> Option<AesTimingLeak> {
    if kind != DeviceKind::Gpu {
        return Some(AesTimingLeak::NotAGpu(kind));
    }
    let copies = copies.aes_copies(operation);
    (copies < TableCopies::PER_LANE).then_some(AesTimingLeak::SharedTableCopies(copies))
}

/// The AES table buffer the kernels copy into local memory, laid out as `parcrypt.cl`'s
/// `AES_SOURCE_*` say: Te0, Td0, then the inverse S-box packed four entries per word
/// (entry `4k + j` in byte `j` of word `k`). Built from the CPU reference's tables, which are
/// computed from the S-box's definition.
pub fn aes_table_words() -> Vec<u32> {
    use parcrypt_ciphers::aes::ReferenceAes;
    let mut words = Vec::with_capacity(256 + 256 + 64);
    words.extend_from_slice(ReferenceAes::encryption_table());
    words.extend_from_slice(ReferenceAes::decryption_table());
    words.extend(
        ReferenceAes::inverse_sbox()
            .chunks_exact(4)
            .map(|entries| u32::from_le_bytes([entries[0], entries[1], entries[2], entries[3]])),
    );
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_name_is_defined_in_the_source() {
        for family in CipherFamily::ALL {
            for operation in KernelOperation::ALL {
                let name = kernel_name(family, operation);
                assert!(
                    KERNEL_SOURCE.contains(&format!("KERNEL void {name}(")),
                    "{name} missing from parcrypt.cl"
                );
            }
            let loaded = family_kernels(family);
            assert_eq!(loaded.len(), KernelOperation::ALL.len() + 1);
            for kernel in loaded {
                assert!(
                    KERNEL_SOURCE.contains(&format!("KERNEL void {}(", kernel.name)),
                    "{} missing from parcrypt.cl",
                    kernel.name
                );
                assert_eq!(kernel.segmented, kernel.name.ends_with("_ctr_segments"));
            }
        }
    }

    /// Every kernel the cipher registry names is defined in `parcrypt.cl` (read from disk as
    /// text), and every cipher kernel defined there is one the registry names.
    #[test]
    fn the_registry_names_exactly_the_cipher_kernels_of_the_source() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/parcrypt.cl");
        let source = std::fs::read_to_string(path).expect("kernels/parcrypt.cl is readable");
        let defined: Vec<&str> = source
            .split("KERNEL void ")
            .skip(1)
            .filter_map(|rest| rest.split_once('(').map(|(name, _)| name.trim()))
            .collect();
        let mut listed = Vec::new();
        for cipher in &parcrypt_ciphers::registry::CIPHERS {
            for name in cipher.gpu.names() {
                assert!(
                    defined.contains(&name),
                    "{}: kernel {name} missing from parcrypt.cl",
                    cipher.title
                );
                listed.push(name);
            }
        }
        for name in defined {
            let cipher_kernel = parcrypt_ciphers::registry::CIPHERS
                .iter()
                .any(|cipher| name.starts_with(&format!("{}_", cipher.gpu.stem)));
            assert!(
                !cipher_kernel || listed.contains(&name),
                "parcrypt.cl defines {name}, which no registry entry lists"
            );
        }
    }

    #[test]
    fn source_uses_no_platform_built_ins_directly() {
        // The vendor headers exist so that the kernels name nothing of either platform.
        let code: String = KERNEL_SOURCE
            .lines()
            .filter(|line| {
                let trimmed = line.trim_start();
                !(trimmed.starts_with("/*") || trimmed.starts_with('*'))
            })
            .collect::<Vec<_>>()
            .join("\n");
        for built_in in [
            "get_global_id",
            "get_local_id",
            "get_local_size",
            "barrier(",
            "__kernel",
            "__global",
            "__local",
            "__constant",
            "__shared__",
            "__syncthreads",
            "threadIdx",
            "blockIdx",
            "uint4",
            "uint2",
            "(uint)",
            "rotate(",
            "__funnelshift",
        ] {
            assert!(
                !code.contains(built_in),
                "parcrypt.cl uses {built_in} directly"
            );
        }
    }

    #[test]
    fn copies_follow_local_memory() {
        assert_eq!(
            TableCopies::for_device(DeviceKind::Cpu, 1 << 20),
            TableCopies::uniform(1)
        );
        // NVIDIA through OpenCL: 48 KiB. AES keeps two tables per copy (Te0 and its
        // rotation, 2 KiB; 2.25 KiB to decrypt), so 32 copies need 64 and 72 KiB.
        assert_eq!(
            TableCopies::for_device(DeviceKind::Gpu, 48 * 1024),
            TableCopies {
                aes_encrypt: 16,
                aes_decrypt: 16,
                blowfish: 8
            }
        );
        assert_eq!(
            TableCopies::for_device(DeviceKind::Gpu, 32 * 1024),
            TableCopies {
                aes_encrypt: 16,
                aes_decrypt: 8,
                blowfish: 8
            }
        );
        // Hopper's 227 KiB: every table per lane.
        assert_eq!(
            TableCopies::for_device(DeviceKind::Gpu, 227 * 1024),
            TableCopies::uniform(32)
        );
        assert_eq!(
            TableCopies::for_device(DeviceKind::Gpu, 160 * 1024),
            TableCopies::uniform(32)
        );
        assert_eq!(
            TableCopies::for_device(DeviceKind::Gpu, 100),
            TableCopies::uniform(1)
        );
        assert!(TableCopies::uniform(32).per_lane());
        assert_eq!(TableCopies::uniform(32).largest_table_bytes(), 128 * 1024);
        // What AMD's 64 KiB of LDS holds (the HIP adapter's choice).
        let amd = TableCopies {
            aes_encrypt: 32,
            aes_decrypt: 16,
            blowfish: 16,
        };
        assert_eq!(amd.largest_table_bytes(), 64 * 1024);
        assert_eq!(TableCopies::for_device(DeviceKind::Gpu, 64 * 1024), amd);
        assert!(TableCopies::uniform(3).validate().is_err());
        assert_eq!(
            TableCopies::uniform(8).compiler_options(),
            "-D AES_ENCRYPT_TABLE_COPIES=8 -D AES_DECRYPT_TABLE_COPIES=8 -D BLOWFISH_TABLE_COPIES=8"
        );
    }

    /// Issue 31 finding 7: the rule `auto` follows for AES. Only a GPU with a copy per lane
    /// of every table the job reads is free of the layout's timing channels; a CPU device
    /// never is, however many copies it were given.
    #[test]
    fn table_aes_is_trusted_only_on_a_gpu_with_a_copy_per_lane() {
        use KernelOperation::{CbcDecrypt, Ctr, EcbDecrypt, EcbEncrypt};
        for operation in KernelOperation::ALL {
            assert_eq!(
                aes_timing_leak(DeviceKind::Gpu, TableCopies::uniform(32), operation),
                None
            );
            for copies in [1, 2, 4, 8, 16] {
                assert_eq!(
                    aes_timing_leak(DeviceKind::Gpu, TableCopies::uniform(copies), operation),
                    Some(AesTimingLeak::SharedTableCopies(copies)),
                    "{copies} copies, {operation:?}"
                );
            }
            for kind in [DeviceKind::Cpu, DeviceKind::Accelerator, DeviceKind::Other] {
                for copies in [1, 32] {
                    assert_eq!(
                        aes_timing_leak(kind, TableCopies::uniform(copies), operation),
                        Some(AesTimingLeak::NotAGpu(kind))
                    );
                }
            }
        }
        // AMD's 64 KiB of LDS: 32 copies of the encryption tables, 16 of the decryption
        // tables. CTR (and so GCM) and ECB encryption read only the former.
        let amd = TableCopies::for_device(DeviceKind::Gpu, 64 * 1024);
        for operation in [Ctr, EcbEncrypt] {
            assert_eq!(aes_timing_leak(DeviceKind::Gpu, amd, operation), None);
        }
        for operation in [EcbDecrypt, CbcDecrypt] {
            assert_eq!(
                aes_timing_leak(DeviceKind::Gpu, amd, operation),
                Some(AesTimingLeak::SharedTableCopies(16))
            );
        }
        // What the host picks for an NVIDIA GPU through OpenCL (48 KiB) and for PoCL.
        let nvidia_opencl = TableCopies::for_device(DeviceKind::Gpu, 48 * 1024);
        assert!(aes_timing_leak(DeviceKind::Gpu, nvidia_opencl, Ctr).is_some());
        let pocl = TableCopies::for_device(DeviceKind::Cpu, 1 << 20);
        assert!(aes_timing_leak(DeviceKind::Cpu, pocl, Ctr)
            .unwrap()
            .to_string()
            .contains("CPU device"));
        assert_eq!(
            KernelOperation::for_mode(Mode::Gcm, Direction::Decrypt),
            Some(Ctr)
        );
        assert_eq!(
            KernelOperation::for_mode(Mode::Cbc, Direction::Decrypt),
            Some(CbcDecrypt)
        );
        assert_eq!(
            KernelOperation::for_mode(Mode::Cbc, Direction::Encrypt),
            None
        );
    }

    #[test]
    fn aes_table_words_match_the_reference() {
        let words = aes_table_words();
        assert_eq!(words.len(), 576);
        assert_eq!(words[0], 0xc66363a5, "Te0[0]");
        assert_eq!(words[256], 0x51f4a750, "Td0[0]");
        // Inverse S-box: InvS[0] = 0x52, InvS[1] = 0x09, InvS[2] = 0x6a, InvS[3] = 0xd5.
        assert_eq!(words[512], 0xd56a0952);
    }

    #[test]
    fn sources_start_with_their_header_and_keep_line_numbers() {
        let opencl = opencl_source();
        assert!(opencl.starts_with(VENDOR_OPENCL));
        assert!(opencl.contains("#line 1 \"parcrypt.cl\"\n/* parcrypt kernels"));
        assert!(cuda_source().starts_with(VENDOR_CUDA));
        let hip = hip_source();
        assert!(hip.starts_with(VENDOR_HIP));
        assert!(hip.contains(VENDOR_CUDA));
        assert!(hip.ends_with(KERNEL_SOURCE));
    }
}
