//! The instruction families the CPU kernels are written for, and the ceiling a key's
//! kernel choice may be held under.
//!
//! Every fast path (AES's CTR, ECB and CBC kernels, RC6's batch code, GCM's stitched kernels
//! and GHASH in `parcrypt-modes`) belongs to one [`KernelFamily`]. A key made with
//! [`crate::Implementation::Limited`] picks, once, the fastest kernel of each operation whose
//! family is at most the ceiling and whose features this CPU has; a key made with
//! [`crate::Implementation::Fast`] has no ceiling and picks as it always did. So each family's
//! kernels can be run, tested and measured on a machine that has them all.

use std::fmt;
use std::str::FromStr;

/// Every x86-64 feature a kernel may enable, in the order the families add them: AES-NI's
/// four, then VAES-256's three, then VAES-512's two. Each family's features are a prefix.
static X86_FEATURES: [&str; 9] = [
    "aes",
    "pclmulqdq",
    "ssse3",
    "sse4.1",
    "avx2",
    "vaes",
    "vpclmulqdq",
    "avx512f",
    "avx512bw",
];

/// A family of CPU instructions the kernels are written for, in order: each family's CPU
/// has the instructions of the ones before it.
///
/// On aarch64 the families are [`KernelFamily::Portable`] and `KernelFamily::Armv8` (the
/// ARMv8 Cryptography Extensions); the x86-64 ones exist there as values but are not in
/// [`KernelFamily::ALL`] and are never supported. On other architectures only
/// [`KernelFamily::Portable`] is supported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KernelFamily {
    /// No AES or carry-less multiply instructions: our portable code. AES is then the
    /// reference (T-table) code, whose table look-ups are not constant-time: for
    /// measurement and tests, not for secrets on a machine shared with an attacker.
    Portable,
    /// AES-NI and PCLMULQDQ on 128-bit registers (with SSSE3 and SSE4.1; RC6 also uses
    /// AVX2 where present).
    AesNi,
    /// VAES and VPCLMULQDQ on 256-bit registers (AVX2), no AVX-512.
    Vaes256,
    /// VAES and VPCLMULQDQ on 512-bit registers (AVX-512F and AVX-512BW).
    Vaes512,
    /// The ARMv8 Cryptography Extensions: AES and PMULL on 128-bit NEON registers (aarch64
    /// only).
    #[cfg(target_arch = "aarch64")]
    Armv8,
}

impl KernelFamily {
    /// Every family of this architecture, lowest first.
    #[cfg(not(target_arch = "aarch64"))]
    pub const ALL: [KernelFamily; 4] = [
        KernelFamily::Portable,
        KernelFamily::AesNi,
        KernelFamily::Vaes256,
        KernelFamily::Vaes512,
    ];

    /// Every family of this architecture, lowest first.
    #[cfg(target_arch = "aarch64")]
    pub const ALL: [KernelFamily; 2] = [KernelFamily::Portable, KernelFamily::Armv8];

    /// The name the front ends take and print: `portable`, `aes-ni`, `vaes-256`, `vaes-512`
    /// (and `armv8` on aarch64).
    pub fn name(self) -> &'static str {
        match self {
            KernelFamily::Portable => "portable",
            KernelFamily::AesNi => "aes-ni",
            KernelFamily::Vaes256 => "vaes-256",
            KernelFamily::Vaes512 => "vaes-512",
            #[cfg(target_arch = "aarch64")]
            KernelFamily::Armv8 => "armv8",
        }
    }

    /// The CPU features (as `is_x86_feature_detected!` or, for `armv8`,
    /// `is_aarch64_feature_detected!` names them) every kernel of this family may enable,
    /// those of the families below it included.
    pub fn features(self) -> &'static [&'static str] {
        match self {
            KernelFamily::Portable => &[],
            // "aes" is FEAT_AES with FEAT_PMULL in Rust's aarch64 feature names.
            #[cfg(target_arch = "aarch64")]
            KernelFamily::Armv8 => &["aes"],
            KernelFamily::AesNi => &X86_FEATURES[..4],
            KernelFamily::Vaes256 => &X86_FEATURES[..7],
            KernelFamily::Vaes512 => &X86_FEATURES,
        }
    }

    /// The features of [`KernelFamily::features`] this CPU lacks (all of them off x86-64).
    pub fn missing_features(self) -> Vec<&'static str> {
        self.missing_on(cpu_has)
    }

    /// The features of this family a CPU with the features `has` says yes to lacks.
    fn missing_on(self, has: impl Fn(&str) -> bool) -> Vec<&'static str> {
        self.features()
            .iter()
            .copied()
            .filter(|feature| !has(feature))
            .collect()
    }

    /// Whether this CPU can run every kernel of this family.
    pub fn is_supported(self) -> bool {
        self.missing_features().is_empty()
    }

    /// The highest family this CPU supports (at least [`KernelFamily::Portable`]).
    pub fn detected() -> KernelFamily {
        Self::ALL
            .into_iter()
            .rev()
            .find(|family| family.is_supported())
            .unwrap_or(KernelFamily::Portable)
    }

    /// The families this CPU supports, lowest first.
    pub fn supported() -> Vec<KernelFamily> {
        Self::ALL
            .into_iter()
            .filter(|family| family.is_supported())
            .collect()
    }

    /// `Ok(self)` where this CPU supports the family, else why not, naming the features it
    /// lacks.
    pub fn check(self) -> Result<KernelFamily, UnsupportedKernels> {
        self.check_on(cpu_has)
    }

    /// [`KernelFamily::check`] on a CPU with the features `has` says yes to.
    fn check_on(self, has: impl Fn(&str) -> bool) -> Result<KernelFamily, UnsupportedKernels> {
        let missing = self.missing_on(&has);
        if missing.is_empty() {
            return Ok(self);
        }
        let detected = Self::ALL
            .into_iter()
            .rev()
            .find(|family| family.missing_on(&has).is_empty())
            .unwrap_or(KernelFamily::Portable);
        Err(UnsupportedKernels {
            asked: self,
            missing,
            detected,
        })
    }

    /// Whether a kernel of family `self` may run under `ceiling` (`None`: no ceiling).
    /// The CPU's features are checked separately, by each kernel.
    pub fn within(self, ceiling: Option<KernelFamily>) -> bool {
        ceiling.is_none_or(|ceiling| self <= ceiling)
    }
}

/// Whether this CPU has the feature `name` (an `is_x86_feature_detected!` name among those
/// [`KernelFamily::features`] lists).
fn cpu_has(name: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match name {
            "aes" => std::arch::is_x86_feature_detected!("aes"),
            "pclmulqdq" => std::arch::is_x86_feature_detected!("pclmulqdq"),
            "ssse3" => std::arch::is_x86_feature_detected!("ssse3"),
            "sse4.1" => std::arch::is_x86_feature_detected!("sse4.1"),
            "avx2" => std::arch::is_x86_feature_detected!("avx2"),
            "vaes" => std::arch::is_x86_feature_detected!("vaes"),
            "vpclmulqdq" => std::arch::is_x86_feature_detected!("vpclmulqdq"),
            "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
            "avx512bw" => std::arch::is_x86_feature_detected!("avx512bw"),
            other => unreachable!("no kernel family lists the feature {other}"),
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        // The x86-64 families' features are never present here.
        name == "aes" && std::arch::is_aarch64_feature_detected!("aes")
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = name;
        false
    }
}

impl fmt::Display for KernelFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that names no [`KernelFamily`] of this architecture.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(
    not(target_arch = "aarch64"),
    error("unknown kernel family '{0}' (choose portable, aes-ni, vaes-256 or vaes-512)")
)]
#[cfg_attr(
    target_arch = "aarch64",
    error("unknown kernel family '{0}' (choose portable or armv8)")
)]
pub struct UnknownKernelFamily(pub String);

impl FromStr for KernelFamily {
    type Err = UnknownKernelFamily;
    fn from_str(s: &str) -> Result<Self, UnknownKernelFamily> {
        Self::ALL
            .into_iter()
            .find(|family| family.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownKernelFamily(s.to_string()))
    }
}

/// A kernel family this CPU cannot run was asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this CPU cannot run the {asked} kernels: it lacks {} (the best it has is {detected})",
    missing.join(", ")
)]
pub struct UnsupportedKernels {
    /// The family asked for.
    pub asked: KernelFamily,
    /// The features it needs that this CPU lacks.
    pub missing: Vec<&'static str>,
    /// The highest family this CPU supports.
    pub detected: KernelFamily,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print_back() {
        for family in KernelFamily::ALL {
            assert_eq!(family.name().parse::<KernelFamily>(), Ok(family));
            assert_eq!(family.to_string(), family.name());
        }
        #[cfg(not(target_arch = "aarch64"))]
        assert_eq!(
            "avx9".parse::<KernelFamily>().unwrap_err().to_string(),
            "unknown kernel family 'avx9' (choose portable, aes-ni, vaes-256 or vaes-512)"
        );
        #[cfg(target_arch = "aarch64")]
        assert_eq!(
            "aes-ni".parse::<KernelFamily>().unwrap_err().to_string(),
            "unknown kernel family 'aes-ni' (choose portable or armv8)"
        );
    }

    #[test]
    fn families_are_ordered_and_nested() {
        for pair in KernelFamily::ALL.windows(2) {
            assert!(pair[0] < pair[1]);
            for feature in pair[0].features() {
                assert!(pair[1].features().contains(feature), "{feature}");
            }
        }
    }

    #[test]
    fn detected_is_the_highest_supported() {
        let detected = KernelFamily::detected();
        assert_eq!(KernelFamily::supported().last(), Some(&detected));
        for family in KernelFamily::ALL {
            assert_eq!(family.is_supported(), family <= detected, "{family}");
            assert_eq!(family.check().is_ok(), family <= detected, "{family}");
        }
    }

    #[test]
    #[cfg(not(target_arch = "aarch64"))]
    fn a_family_above_the_cpu_is_refused_naming_what_it_lacks() {
        // A Zen 3-like CPU: VAES on 256-bit registers, no AVX-512.
        let zen3 = |feature: &str| !feature.starts_with("avx512");
        assert_eq!(
            KernelFamily::Vaes256.check_on(zen3),
            Ok(KernelFamily::Vaes256)
        );
        let error = KernelFamily::Vaes512.check_on(zen3).unwrap_err();
        assert_eq!(error.missing, ["avx512f", "avx512bw"]);
        assert_eq!(error.detected, KernelFamily::Vaes256);
        assert_eq!(
            error.to_string(),
            "this CPU cannot run the vaes-512 kernels: it lacks avx512f, avx512bw \
             (the best it has is vaes-256)"
        );
        // A CPU with no AES instructions at all.
        let error = KernelFamily::AesNi.check_on(|_| false).unwrap_err();
        assert_eq!(error.detected, KernelFamily::Portable);
    }

    #[test]
    #[cfg(target_arch = "aarch64")]
    fn a_family_above_the_cpu_is_refused_naming_what_it_lacks() {
        let all = |_: &str| true;
        assert_eq!(KernelFamily::Armv8.check_on(all), Ok(KernelFamily::Armv8));
        // A CPU without the Cryptography Extensions.
        let error = KernelFamily::Armv8.check_on(|_| false).unwrap_err();
        assert_eq!(error.missing, ["aes"]);
        assert_eq!(error.detected, KernelFamily::Portable);
        assert_eq!(
            error.to_string(),
            "this CPU cannot run the armv8 kernels: it lacks aes (the best it has is portable)"
        );
    }

    #[test]
    // Tests say on stdout what this machine could not run; libtest shows it.
    #[allow(clippy::disallowed_macros)]
    fn an_unsupported_family_names_what_is_missing() {
        let Some(above) = KernelFamily::ALL
            .into_iter()
            .find(|family| !family.is_supported())
        else {
            println!("SKIPPED: this CPU supports every kernel family (see the simulated CPUs)");
            return;
        };
        let error = above.check().unwrap_err();
        assert!(!error.missing.is_empty());
        let message = error.to_string();
        assert!(message.contains(above.name()), "{message}");
        assert!(message.contains(error.missing[0]), "{message}");
    }

    #[test]
    // Tests say on stdout what this machine could not run; libtest shows it.
    #[allow(clippy::disallowed_macros)]
    fn new_cipher_takes_the_supported_families_and_refuses_the_others() {
        if KernelFamily::ALL.last() == Some(&KernelFamily::detected()) {
            println!(
                "SKIPPED: the refusal by new_cipher (this CPU has every family; \
                 a_family_above_the_cpu_is_refused_naming_what_it_lacks checks the refusal \
                 on simulated CPUs)"
            );
        }
        use crate::{new_cipher, Algorithm, Implementation, KeyError};
        for family in KernelFamily::ALL {
            for algorithm in Algorithm::ALL {
                let key = vec![9u8; algorithm.key_lengths().0];
                let made = new_cipher(algorithm, Implementation::Limited(family), &key);
                if family.is_supported() {
                    let cipher = made.unwrap_or_else(|error| panic!("{family}: {error}"));
                    let expected = (algorithm != Algorithm::Blowfish).then_some(family);
                    assert_eq!(cipher.kernel_ceiling(), expected, "{algorithm} {family}");
                } else {
                    assert!(
                        matches!(made, Err(KeyError::UnsupportedKernels(_))),
                        "{algorithm} {family}"
                    );
                }
            }
        }
    }

    #[test]
    fn within_respects_the_ceiling() {
        assert!(KernelFamily::Vaes512.within(None));
        assert!(KernelFamily::AesNi.within(Some(KernelFamily::AesNi)));
        assert!(!KernelFamily::Vaes256.within(Some(KernelFamily::AesNi)));
        assert!(KernelFamily::Portable.within(Some(KernelFamily::Portable)));
    }
}
