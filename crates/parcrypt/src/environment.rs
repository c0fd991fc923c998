//! The environment variables parcrypt's front ends honour, read in one place.
//!
//! The library reads no environment variable: an [`Engine`](crate::Engine) does what its
//! [`EngineBuilder`] was told, a file is written as its [`FileOptions`](crate::FileOptions)
//! say, and a program that embeds parcrypt is never steered by its environment without
//! knowing it. The front ends (the `parcrypt` command, the Python package, the C library
//! and so Java) read the variables below where their users expect them, through this
//! module, and pass what they found on as options. A Rust program that wants the same does
//! the same:
//!
//! ```
//! let engine = parcrypt::environment::apply(parcrypt::Engine::builder())?.build()?;
//! # let _ = engine;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! | Variable | Sets | Default |
//! |---|---|---|
//! | `PARCRYPT_PASSPHRASE` | the passphrase, when no passphrase file is given ([`passphrase`]) | the terminal's prompt |
//! | `PARCRYPT_TUNE_DIR` | the tune files' folder ([`EngineBuilder::tune_directory`]) | `$XDG_CONFIG_HOME/parcrypt/tune`, else `~/.config/parcrypt/tune` |
//! | `XDG_CACHE_HOME`, `HOME` | the GPU kernel cache ([`EngineBuilder::kernel_cache_directory`]) | `$XDG_CACHE_HOME/parcrypt/kernels`, else `~/.cache/parcrypt/kernels` |
//! | `PARCRYPT_GCM_KERNEL` | the AES-GCM kernel by name: `vaes512`, `vaes256`, `aesni`, `two-pass` ([`EngineBuilder::gcm_kernel`]) | the fastest this CPU has |
//! | `PARCRYPT_NO_STITCHED` | non-empty: AES-GCM's two passes, no stitched kernel ([`EngineBuilder::stitched_gcm`]) | stitched |
//! | `PARCRYPT_NO_STREAM` | set: no streaming stores ([`EngineBuilder::streaming_stores`]) | streaming stores from 8 MiB |
//! | `PARCRYPT_POOL_SPIN_US` | microseconds an idle pool thread looks for work ([`EngineBuilder::pool_spin`]) | 200 |
//! | `PARCRYPT_NO_O_TMPFILE` | set: a named temporary file instead of an unnamed one ([`Settings::named_temporary_file`]) | unnamed where the file system allows |
//!
//! `docs/ENVIRONMENT.md` lists these with the variables only tests and scripts read.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use parcrypt_engine::EngineBuilder;
use parcrypt_format::secrets::{SecretBytes, SecretError, PASSPHRASE_VARIABLE};
use parcrypt_modes::gcm::GcmKernel;

/// `PARCRYPT_PASSPHRASE`: the passphrase, when no passphrase file is given.
pub const PASSPHRASE: &str = PASSPHRASE_VARIABLE;
/// `PARCRYPT_TUNE_DIR`: the folder of the tune files `parcrypt tune` writes.
pub const TUNE_DIR: &str = "PARCRYPT_TUNE_DIR";
/// `PARCRYPT_GCM_KERNEL`: the AES-GCM kernel by name, for comparisons.
pub const GCM_KERNEL: &str = "PARCRYPT_GCM_KERNEL";
/// `PARCRYPT_NO_STITCHED`: anything non-empty keeps AES-GCM's two passes.
pub const NO_STITCHED: &str = "PARCRYPT_NO_STITCHED";
/// `PARCRYPT_NO_STREAM`: set to anything, AES writes with ordinary stores.
pub const NO_STREAM: &str = "PARCRYPT_NO_STREAM";
/// `PARCRYPT_POOL_SPIN_US`: microseconds an idle pool thread looks for the next job.
pub const POOL_SPIN_US: &str = "PARCRYPT_POOL_SPIN_US";
/// `PARCRYPT_NO_O_TMPFILE`: set to anything, outputs go through named temporary files.
pub const NO_O_TMPFILE: &str = "PARCRYPT_NO_O_TMPFILE";

/// A variable whose value means nothing to parcrypt (the message names it and the value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvironmentError {
    variable: &'static str,
    value: String,
    expected: &'static str,
}

impl EnvironmentError {
    /// The variable that was refused.
    pub fn variable(&self) -> &'static str {
        self.variable
    }
}

impl fmt::Display for EnvironmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?} is not {}",
            self.variable, self.value, self.expected
        )
    }
}

impl std::error::Error for EnvironmentError {}

/// What the environment asks of an engine and of file outputs, read once
/// ([`Settings::from_env`]) and applied as options ([`Settings::apply`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settings {
    /// The tune files' folder (`PARCRYPT_TUNE_DIR`, else the configuration folder).
    pub tune_directory: Option<PathBuf>,
    /// The GPU kernel cache's folder (under `$XDG_CACHE_HOME` or `~/.cache`).
    pub kernel_cache_directory: Option<PathBuf>,
    /// The AES-GCM kernel asked for (`PARCRYPT_GCM_KERNEL`, or two-pass with
    /// `PARCRYPT_NO_STITCHED`).
    pub gcm_kernel: Option<GcmKernel>,
    /// `Some(false)` when `PARCRYPT_NO_STREAM` is set.
    pub streaming_stores: Option<bool>,
    /// `PARCRYPT_POOL_SPIN_US`, as a duration.
    pub pool_spin: Option<Duration>,
    /// Whether `PARCRYPT_NO_O_TMPFILE` is set: outputs go through named temporary files
    /// ([`crate::files::OutputPlan::open_named`]).
    pub named_temporary_file: bool,
}

impl Settings {
    /// Reads this process's environment.
    pub fn from_env() -> Result<Settings, EnvironmentError> {
        Settings::from_lookup(|name| std::env::var_os(name))
    }

    /// Reads the variables through `lookup` (a name to its value, `None` when unset): an
    /// environment other than the process's, as a test or a sandbox has it.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Settings, EnvironmentError> {
        let set = |name: &str| lookup(name).filter(|value| !value.is_empty());
        let gcm_kernel = if set(NO_STITCHED).is_some() {
            Some(GcmKernel::TwoPass)
        } else {
            match set(GCM_KERNEL) {
                None => None,
                Some(value) => {
                    let text = value.to_string_lossy();
                    Some(
                        GcmKernel::from_name(text.trim()).ok_or_else(|| EnvironmentError {
                            variable: GCM_KERNEL,
                            value: text.to_string(),
                            expected: "a GCM kernel (one of vaes512, vaes256, aesni, two-pass)",
                        })?,
                    )
                }
            }
        };
        let pool_spin = match set(POOL_SPIN_US) {
            None => None,
            Some(value) => {
                let text = value.to_string_lossy();
                let micros = text.trim().parse::<u64>().map_err(|_| EnvironmentError {
                    variable: POOL_SPIN_US,
                    value: text.to_string(),
                    expected: "a whole number of microseconds",
                })?;
                Some(Duration::from_micros(micros))
            }
        };
        Ok(Settings {
            tune_directory: parcrypt_gpu::tuning::tune_directory_from(&lookup),
            kernel_cache_directory: kernel_cache_directory_from(&set),
            gcm_kernel,
            // Set at all (even empty) turns them off, as the variables always did.
            streaming_stores: lookup(NO_STREAM).map(|_| false),
            pool_spin,
            named_temporary_file: lookup(NO_O_TMPFILE).is_some(),
        })
    }

    /// `builder` with these settings as its options; what is not set stays as it was.
    pub fn apply(&self, mut builder: EngineBuilder) -> EngineBuilder {
        if let Some(directory) = &self.tune_directory {
            builder = builder.tune_directory(directory);
        }
        if let Some(directory) = &self.kernel_cache_directory {
            builder = builder.kernel_cache_directory(directory);
        }
        if let Some(kernel) = self.gcm_kernel {
            builder = builder.gcm_kernel(kernel);
        }
        if let Some(allowed) = self.streaming_stores {
            builder = builder.streaming_stores(allowed);
        }
        if let Some(spin) = self.pool_spin {
            builder = builder.pool_spin(spin);
        }
        builder
    }
}

/// `builder` with the options this process's environment asks for
/// ([`Settings::from_env`], then [`Settings::apply`]): what a front end calls where it
/// builds its engine.
pub fn apply(builder: EngineBuilder) -> Result<EngineBuilder, EnvironmentError> {
    Ok(Settings::from_env()?.apply(builder))
}

/// Where tune files live: `$PARCRYPT_TUNE_DIR`, else `$XDG_CONFIG_HOME/parcrypt/tune`, else
/// `$HOME/.config/parcrypt/tune`; `None` when none of them is set.
pub fn tune_directory() -> Option<PathBuf> {
    parcrypt_gpu::tuning::tune_directory_from(|name| std::env::var_os(name))
}

/// Where compiled GPU kernels are kept: `$XDG_CACHE_HOME/parcrypt/kernels`, else
/// `$HOME/.cache/parcrypt/kernels`; `None` when neither variable is set.
pub fn kernel_cache_directory() -> Option<PathBuf> {
    kernel_cache_directory_from(&|name| std::env::var_os(name).filter(|value| !value.is_empty()))
}

fn kernel_cache_directory_from(set: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let base = set("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("parcrypt").join("kernels"))
}

/// `PARCRYPT_PASSPHRASE`'s value once [`take_passphrase_variable`] moved it out of the
/// environment: `None` before that, then `Some` of the value (`None` when the variable was
/// not set, or once [`passphrase`] has handed it out).
static MOVED_PASSPHRASE: Mutex<Option<Option<SecretBytes>>> = Mutex::new(None);

/// Moves `PARCRYPT_PASSPHRASE` out of the process environment into this process's memory
/// (wiped once read), so that no child process inherits it; returns whether it was set.
/// Later calls do nothing and return `false`.
///
/// Call it first in `main`, before any thread starts: removing a variable while another
/// thread reads the environment through C (`getenv` in libc, a GPU driver) is a data race
/// that Rust's own lock around `std::env` cannot prevent (hence `remove_var` is `unsafe`
/// from edition 2024 on). [`passphrase`] calls it too, for programs that did not; they must
/// make sure of the same.
///
/// The variable's original bytes stay where the kernel put them (the top of the main
/// thread's stack) until the process ends: safe Rust cannot wipe them. What this removes is
/// the copy children and `/proc/PID/environ` readers after this point would see.
pub fn take_passphrase_variable() -> bool {
    use std::os::unix::ffi::OsStringExt;
    let mut moved = MOVED_PASSPHRASE
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if moved.is_some() {
        return false;
    }
    let value = std::env::var_os(PASSPHRASE).map(|value| SecretBytes::new(value.into_vec()));
    if value.is_some() {
        std::env::remove_var(PASSPHRASE);
    }
    let was_set = value.is_some();
    *moved = Some(value);
    was_set
}

/// The passphrase in `PARCRYPT_PASSPHRASE`, or `None` when the variable is not set; an
/// empty one is refused. It is handed out once: the variable leaves the environment at the
/// first call (see [`take_passphrase_variable`], which a program calls earlier, before its
/// threads start), and later calls return `None`.
pub fn passphrase() -> Result<Option<SecretBytes>, SecretError> {
    take_passphrase_variable();
    let value = MOVED_PASSPHRASE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_mut()
        .and_then(Option::take);
    match value {
        Some(value) if value.is_empty() => Err(SecretError::EmptyPassphraseVariable),
        value => Ok(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(variables: &[(&str, &str)]) -> Result<Settings, EnvironmentError> {
        Settings::from_lookup(|name| {
            variables
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| OsString::from(value))
        })
    }

    #[test]
    fn nothing_set_asks_for_nothing() {
        assert_eq!(settings(&[]).unwrap(), Settings::default());
    }

    #[test]
    fn each_variable_sets_its_option() {
        let all = settings(&[
            ("PARCRYPT_TUNE_DIR", "/tunes"),
            ("XDG_CACHE_HOME", "/cache"),
            ("PARCRYPT_GCM_KERNEL", " aesni "),
            ("PARCRYPT_NO_STREAM", ""),
            ("PARCRYPT_POOL_SPIN_US", "0"),
            ("PARCRYPT_NO_O_TMPFILE", "1"),
        ])
        .unwrap();
        assert_eq!(all.tune_directory, Some(PathBuf::from("/tunes")));
        assert_eq!(
            all.kernel_cache_directory,
            Some(PathBuf::from("/cache/parcrypt/kernels"))
        );
        assert_eq!(all.gcm_kernel, Some(GcmKernel::AesNi));
        assert_eq!(all.streaming_stores, Some(false), "set, even empty");
        assert_eq!(all.pool_spin, Some(Duration::ZERO));
        assert!(all.named_temporary_file);
        // Without PARCRYPT_TUNE_DIR and XDG: the home folder's.
        let home = settings(&[("HOME", "/home/ada")]).unwrap();
        assert_eq!(
            home.tune_directory,
            Some(PathBuf::from("/home/ada/.config/parcrypt/tune"))
        );
        assert_eq!(
            home.kernel_cache_directory,
            Some(PathBuf::from("/home/ada/.cache/parcrypt/kernels"))
        );
    }

    #[test]
    fn no_stitched_wins_and_unknown_values_are_refused() {
        let both = settings(&[
            ("PARCRYPT_GCM_KERNEL", "vaes512"),
            ("PARCRYPT_NO_STITCHED", "1"),
        ])
        .unwrap();
        assert_eq!(both.gcm_kernel, Some(GcmKernel::TwoPass));
        assert_eq!(
            settings(&[("PARCRYPT_NO_STITCHED", "")])
                .unwrap()
                .gcm_kernel,
            None,
            "empty means unset"
        );
        let refused = settings(&[("PARCRYPT_GCM_KERNEL", "avx9000")]).unwrap_err();
        assert_eq!(refused.variable(), GCM_KERNEL);
        let message = refused.to_string();
        assert!(
            message.contains("avx9000") && message.contains("two-pass"),
            "{message}"
        );
        let refused = settings(&[("PARCRYPT_POOL_SPIN_US", "soon")]).unwrap_err();
        assert_eq!(refused.variable(), POOL_SPIN_US);
    }

    #[test]
    fn applied_settings_reach_the_engine() {
        let engine = settings(&[("PARCRYPT_POOL_SPIN_US", "5")])
            .unwrap()
            .apply(
                crate::Engine::builder()
                    .backend(crate::Backend::Pool)
                    .threads(2),
            )
            .build()
            .unwrap();
        assert_eq!(engine.threads(), 2);
    }
}
