//! `--kernels FAMILY` for the peers: each peer's process is started with its own way of
//! hiding the CPU features above a [`KernelFamily`], so that a table measured on a machine
//! with every family compares parcrypt's kernels of that family with the peers' code for the
//! same instructions.
//!
//! - OpenSSL (the `evp` harness, pyca/cryptography's bundled copy) and AWS-LC (aws-lc-rs)
//!   read `OPENSSL_ia32cap` when they start: a first 64-bit word for CPUID leaf 1 (EDX in
//!   bits 0-31, ECX in 32-63), then after `:` a second for leaf 7 (EBX in bits 0-31, ECX in
//!   32-63); a leading `~` clears the bits given and keeps the others. ([`openssl_ia32cap`])
//! - Go reads `GODEBUG=cpu.NAME=off,...` for the names its `internal/cpu` offers on amd64
//!   (`aes`, `pclmulqdq`, `vpclmulqdq`, `avx512f`, `avx512bw`, ...); Go's AES has no VAES
//!   code to hide. ([`godebug`])
//! - Java: HotSpot flags: `-XX:UseAVX=2` drops AVX-512 and with it HotSpot's VAES and
//!   VPCLMULQDQ; the portable family also turns the AES and GHASH intrinsics off.
//!   ([`jvm_flags`])
//! - RustCrypto picks its code at run time (`cpufeatures`) with no switch to turn a feature
//!   off: it runs unmasked and its rows say so.

use parcrypt_ciphers::KernelFamily;

use crate::peers::Peer;

/// CPUID leaf 1, ECX: AES-NI.
pub const LEAF1_ECX_AES: u32 = 1 << 25;
/// CPUID leaf 1, ECX: PCLMULQDQ.
pub const LEAF1_ECX_PCLMULQDQ: u32 = 1 << 1;

/// CPUID leaf 7, EBX: the AVX-512 foundation and the extensions listed there (F, DQ, IFMA,
/// CD, BW, VL).
pub const LEAF7_EBX_AVX512: u32 =
    (1 << 16) | (1 << 17) | (1 << 21) | (1 << 28) | (1 << 30) | (1 << 31);
/// CPUID leaf 7, ECX: the AVX-512 extensions listed there (VBMI, VBMI2, VNNI, BITALG,
/// VPOPCNTDQ).
pub const LEAF7_ECX_AVX512: u32 = (1 << 1) | (1 << 6) | (1 << 11) | (1 << 12) | (1 << 14);
/// CPUID leaf 7, ECX: VAES and VPCLMULQDQ.
pub const LEAF7_ECX_VAES: u32 = (1 << 9) | (1 << 10);

/// The bits of `OPENSSL_ia32cap`'s two words (leaf 1: EDX low, ECX high; leaf 7: EBX low,
/// ECX high) that `family` must not use.
pub fn ia32cap_cleared(family: KernelFamily) -> (u64, u64) {
    let high = |ecx: u32| u64::from(ecx) << 32;
    let avx512 = u64::from(LEAF7_EBX_AVX512) | high(LEAF7_ECX_AVX512);
    let vaes = high(LEAF7_ECX_VAES);
    match family {
        KernelFamily::Portable => (high(LEAF1_ECX_AES | LEAF1_ECX_PCLMULQDQ), avx512 | vaes),
        KernelFamily::AesNi => (0, avx512 | vaes),
        KernelFamily::Vaes256 => (0, avx512),
        KernelFamily::Vaes512 => (0, 0),
    }
}

/// `OPENSSL_ia32cap` for `family`, or `None` where nothing is to be cleared (the variable
/// is then left unset: an empty or plain value would set the capabilities, not clear some).
pub fn openssl_ia32cap(family: KernelFamily) -> Option<String> {
    match ia32cap_cleared(family) {
        (0, 0) => None,
        (leaf1, leaf7) => Some(format!("~{leaf1:#x}:~{leaf7:#x}")),
    }
}

/// Go's `internal/cpu` options (amd64) that `family` turns off, in `GODEBUG`'s form, or
/// `None` where none is.
pub fn godebug(family: KernelFamily) -> Option<String> {
    const AVX512: [&str; 5] = ["avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"];
    let off: Vec<&str> = match family {
        KernelFamily::Portable => ["aes", "pclmulqdq", "vpclmulqdq"]
            .into_iter()
            .chain(AVX512)
            .collect(),
        KernelFamily::AesNi => std::iter::once("vpclmulqdq").chain(AVX512).collect(),
        KernelFamily::Vaes256 => AVX512.to_vec(),
        KernelFamily::Vaes512 => Vec::new(),
    };
    if off.is_empty() {
        return None;
    }
    let options: Vec<String> = off.iter().map(|name| format!("cpu.{name}=off")).collect();
    Some(options.join(","))
}

/// `ours` after the caller's own `GODEBUG` settings, if any: Go takes the last setting of
/// each name, so the family's `cpu.*=off` win and the caller's other settings stay.
fn after_godebug(theirs: Option<&str>, ours: String) -> String {
    match theirs {
        Some(theirs) if !theirs.is_empty() => format!("{theirs},{ours}"),
        _ => ours,
    }
}

/// HotSpot flags that hold the JVM's code to `family`.
pub fn jvm_flags(family: KernelFamily) -> Vec<&'static str> {
    match family {
        KernelFamily::Portable => vec![
            "-XX:UseAVX=2",
            "-XX:-UseAES",
            "-XX:-UseAESIntrinsics",
            "-XX:-UseAESCTRIntrinsics",
            "-XX:-UseGHASHIntrinsics",
        ],
        // HotSpot uses VAES and VPCLMULQDQ only with AVX-512 (UseAVX=3).
        KernelFamily::AesNi | KernelFamily::Vaes256 => vec!["-XX:UseAVX=2"],
        KernelFamily::Vaes512 => Vec::new(),
    }
}

/// How one peer's process is started under a kernel family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerMask {
    pub family: KernelFamily,
    /// Environment variables to set.
    pub env: Vec<(&'static str, String)>,
    /// Flags before the JVM's other arguments.
    pub jvm_flags: Vec<&'static str>,
    /// Whether the peer has a way to be held to the family at all (RustCrypto has none).
    pub masked: bool,
}

impl PeerMask {
    /// The mask of `peer` under `family`.
    pub fn new(peer: Peer, family: KernelFamily) -> PeerMask {
        let mut mask = PeerMask {
            family,
            env: Vec::new(),
            jvm_flags: Vec::new(),
            masked: true,
        };
        match peer {
            Peer::AwsLcRs | Peer::Evp | Peer::Pyca => {
                if let Some(value) = openssl_ia32cap(family) {
                    mask.env.push(("OPENSSL_ia32cap", value));
                }
            }
            Peer::Go => {
                if let Some(value) = godebug(family) {
                    // Kept after what the caller's own GODEBUG says (Go takes the last
                    // setting of each name).
                    let theirs = std::env::var("GODEBUG").ok();
                    mask.env
                        .push(("GODEBUG", after_godebug(theirs.as_deref(), value)));
                }
            }
            Peer::Java => mask.jvm_flags = jvm_flags(family),
            Peer::RustCrypto => mask.masked = false,
        }
        mask
    }

    /// What the row's record says: `masked to aes-ni (OPENSSL_ia32cap=...)`, `not masked
    /// (...)`.
    pub fn describe(&self) -> String {
        if own_family(self.family) {
            return own_family_note(self.family);
        }
        if !self.masked {
            return format!(
                "not masked: no switch to hold it to {} (cpufeatures picks at run time)",
                self.family
            );
        }
        let mut how: Vec<String> = self
            .env
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        how.extend(self.jvm_flags.iter().map(ToString::to_string));
        if how.is_empty() {
            how.push("nothing above it to hide".into());
        }
        format!("masked to {} ({})", self.family, how.join(" "))
    }
}

/// The record note of parcrypt's own rows under `family`.
pub fn parcrypt_note(family: KernelFamily) -> String {
    if own_family(family) {
        return own_family_note(family);
    }
    format!("masked to {family} (EngineBuilder::kernels)")
}

/// Whether `family` is at or above what this CPU has: then nothing is hidden from anyone,
/// and no row is marked.
fn own_family(family: KernelFamily) -> bool {
    family >= KernelFamily::detected()
}

/// The record note of every row under the CPU's own family.
fn own_family_note(family: KernelFamily) -> String {
    format!("at {family}, this CPU's own family: nothing hidden")
}

/// The label a table gives a row whose record carries `note`: `[masked]`, `[not masked]`, or
/// nothing for a run without `--kernels`.
pub fn row_mark(note: Option<&str>) -> Option<&'static str> {
    let note = note?;
    if note.starts_with("masked to ") {
        Some("[masked]")
    } else if note.starts_with("not masked") {
        Some("[not masked]")
    } else {
        None
    }
}

#[cfg(test)]
// Tests say on stderr what this machine could not run; libtest shows it.
#[allow(clippy::disallowed_macros)]
mod tests {
    use super::*;

    #[test]
    fn openssl_masks_clear_each_familys_bits() {
        assert_eq!(
            openssl_ia32cap(KernelFamily::Portable).as_deref(),
            Some("~0x200000200000000:~0x5e42d0230000")
        );
        assert_eq!(
            openssl_ia32cap(KernelFamily::AesNi).as_deref(),
            Some("~0x0:~0x5e42d0230000")
        );
        assert_eq!(
            openssl_ia32cap(KernelFamily::Vaes256).as_deref(),
            Some("~0x0:~0x5842d0230000")
        );
        assert_eq!(openssl_ia32cap(KernelFamily::Vaes512), None);
        // VAES is leaf 7 ECX bit 9 (bit 41 of the second word), AVX512F EBX bit 16.
        let (_, aes_ni) = ia32cap_cleared(KernelFamily::AesNi);
        assert_ne!(aes_ni & (1 << 41), 0);
        assert_ne!(aes_ni & (1 << 42), 0);
        assert_ne!(aes_ni & (1 << 16), 0);
        let (_, vaes256) = ia32cap_cleared(KernelFamily::Vaes256);
        assert_eq!(vaes256 & (3 << 41), 0, "VAES-256 keeps VAES and VPCLMULQDQ");
        // AES-NI is leaf 1 ECX bit 25, bit 57 of the first word; PCLMULQDQ bit 33.
        let (portable, _) = ia32cap_cleared(KernelFamily::Portable);
        assert_eq!(portable, (1 << 57) | (1 << 33));
    }

    #[test]
    fn go_and_java_masks() {
        assert_eq!(
            godebug(KernelFamily::AesNi).as_deref(),
            Some(
                "cpu.vpclmulqdq=off,cpu.avx512f=off,cpu.avx512cd=off,cpu.avx512bw=off,\
                 cpu.avx512dq=off,cpu.avx512vl=off"
            )
        );
        assert!(godebug(KernelFamily::Portable)
            .expect("portable")
            .starts_with("cpu.aes=off,cpu.pclmulqdq=off,"));
        assert!(!godebug(KernelFamily::Vaes256)
            .expect("vaes-256")
            .contains("vpclmulqdq"));
        assert_eq!(godebug(KernelFamily::Vaes512), None);
        assert_eq!(jvm_flags(KernelFamily::AesNi), ["-XX:UseAVX=2"]);
        assert!(jvm_flags(KernelFamily::Portable).contains(&"-XX:-UseAESIntrinsics"));
        assert!(jvm_flags(KernelFamily::Vaes512).is_empty());
    }

    #[test]
    fn each_peer_gets_its_own_mask_and_rustcrypto_none() {
        // Under the CPU's own family nothing is hidden, and no row is marked.
        for peer in [Peer::Evp, Peer::RustCrypto, Peer::Go] {
            let note = PeerMask::new(peer, KernelFamily::Vaes512).describe();
            assert_eq!(note, "at vaes-512, this CPU's own family: nothing hidden");
            assert_eq!(row_mark(Some(&note)), None);
        }
        assert_eq!(row_mark(None), None);
        let family = KernelFamily::AesNi;
        if KernelFamily::detected() <= family {
            eprintln!("masks: this CPU has no family above aes-ni; the masked cases skipped");
            return;
        }
        for peer in [Peer::AwsLcRs, Peer::Evp, Peer::Pyca] {
            let mask = PeerMask::new(peer, family);
            assert_eq!(
                mask.env,
                [("OPENSSL_ia32cap", "~0x0:~0x5e42d0230000".to_string())]
            );
            assert!(mask.masked);
            assert_eq!(
                mask.describe(),
                "masked to aes-ni (OPENSSL_ia32cap=~0x0:~0x5e42d0230000)"
            );
            assert_eq!(row_mark(Some(&mask.describe())), Some("[masked]"));
        }
        assert_eq!(PeerMask::new(Peer::Go, family).env[0].0, "GODEBUG");
        let java = PeerMask::new(Peer::Java, family);
        assert_eq!((java.env.len(), java.jvm_flags.len()), (0, 1));
        let rust = PeerMask::new(Peer::RustCrypto, family);
        assert!(!rust.masked && rust.env.is_empty());
        assert_eq!(row_mark(Some(&rust.describe())), Some("[not masked]"));
    }

    #[test]
    fn the_go_mask_keeps_the_callers_godebug() {
        let ours = "cpu.avx512f=off".to_string();
        assert_eq!(after_godebug(None, ours.clone()), ours);
        assert_eq!(after_godebug(Some(""), ours.clone()), ours);
        assert_eq!(
            after_godebug(Some("madvdontneed=1,cpu.aes=on"), ours),
            "madvdontneed=1,cpu.aes=on,cpu.avx512f=off"
        );
    }
}
