//! `encrypt_file` and `decrypt_file`: one call per file, with [`FileOptions`] for the rest.

use std::path::Path;
use std::sync::Mutex;

use parcrypt_engine::{Backend, Engine};
use parcrypt_format::{
    batcher_for, file, Argon2Params, ChunkBatcher, Format, FormatError, KdfLimits, Secret, Setup,
    Suite,
};

use crate::error::Result;

/// Encrypts the file `source` into a new parcrypt file `destination` under `secret`, with
/// the default [`FileOptions`]: Cobblestone-128 (AES-128-GCM in authenticated 16 KiB
/// chunks), argon2id's default cost for a passphrase, every core of the machine, and an
/// existing `destination` refused. Returns the plaintext bytes.
///
/// `destination` appears only once the whole file is written: a failure leaves nothing
/// behind. A 16-byte key suits the default suite; a passphrase of any length works (a short
/// one is weak); [`Secret::Recipients`] encrypts to public keys (`age1...`, `age1pq1...`),
/// each of which can decrypt alone ([`Secret::Identities`]).
///
/// ```
/// use parcrypt::Secret;
///
/// let folder = tempfile::tempdir()?;
/// let (plain, sealed) = (folder.path().join("notes.txt"), folder.path().join("notes.pc"));
/// std::fs::write(&plain, "meet at noon")?;
/// let key = [7u8; 16]; // a real key comes from a random source or a key file
/// parcrypt::encrypt_file(&plain, &sealed, Secret::Key(&key))?;
/// assert_ne!(std::fs::read(&sealed)?, b"meet at noon");
/// # Ok::<(), parcrypt::Error>(())
/// ```
pub fn encrypt_file(
    source: impl AsRef<Path>,
    destination: impl AsRef<Path>,
    secret: Secret<'_>,
) -> Result<u64> {
    FileOptions::new().encrypt_file(source, destination, secret)
}

/// Decrypts the parcrypt file `source` into a new file `destination` with the default
/// [`FileOptions`]: every core, the default limit on a passphrase's key derivation, and an
/// existing `destination` refused. Returns the plaintext bytes.
///
/// `destination` appears only once every chunk has been authenticated: a wrong key,
/// passphrase or identity, a damaged, truncated or extended file is refused and leaves
/// nothing behind. A file encrypted to recipients takes [`Secret::Identities`], tried in
/// order.
///
/// ```
/// use parcrypt::Secret;
///
/// let folder = tempfile::tempdir()?;
/// let plain = folder.path().join("notes.txt");
/// let sealed = folder.path().join("notes.pc");
/// let opened = folder.path().join("notes.opened.txt");
/// std::fs::write(&plain, "meet at noon")?;
/// let key = [7u8; 16];
/// parcrypt::encrypt_file(&plain, &sealed, Secret::Key(&key))?;
/// parcrypt::decrypt_file(&sealed, &opened, Secret::Key(&key))?;
/// assert_eq!(std::fs::read(&opened)?, b"meet at noon");
///
/// // Another key is refused, and no file is left behind.
/// let refused = parcrypt::decrypt_file(&sealed, folder.path().join("x"), Secret::Key(&[8; 16]));
/// assert!(refused.unwrap_err().is_authentication_failure());
/// assert!(!folder.path().join("x").exists());
/// # Ok::<(), parcrypt::Error>(())
/// ```
pub fn decrypt_file(
    source: impl AsRef<Path>,
    destination: impl AsRef<Path>,
    secret: Secret<'_>,
) -> Result<u64> {
    FileOptions::new().decrypt_file(source, destination, secret)
}

/// How [`encrypt_file`] and [`decrypt_file`] work, for a call that needs more than the
/// defaults: set what differs, then call [`FileOptions::encrypt_file`] or
/// [`FileOptions::decrypt_file`].
///
/// ```
/// use parcrypt::{Engine, FileOptions, Secret, Suite};
///
/// let folder = tempfile::tempdir()?;
/// let (plain, sealed) = (folder.path().join("a.txt"), folder.path().join("a.pc"));
/// std::fs::write(&plain, "first")?;
/// std::fs::write(&sealed, "an older file")?;
///
/// let engine = Engine::builder().threads(2).build()?;
/// let options = FileOptions::new()
///     .engine(&engine)
///     .suite(Suite::Cobblestone256)
///     .context(b"backup 2026-11")
///     .overwrite(true);
/// options.encrypt_file(&plain, &sealed, Secret::Key(&[9u8; 32]))?;
/// # Ok::<(), parcrypt::Error>(())
/// ```
#[derive(Clone)]
pub struct FileOptions {
    engine: Option<Engine>,
    overwrite: bool,
    suite: Suite,
    argon2: Argon2Params,
    kdf_limits: KdfLimits,
    context: Vec<u8>,
    format: Format,
}

impl Default for FileOptions {
    fn default() -> Self {
        FileOptions {
            engine: None,
            overwrite: false,
            suite: Suite::Cobblestone128,
            argon2: Argon2Params::DEFAULT,
            kdf_limits: KdfLimits::DEFAULT,
            context: Vec::new(),
            format: Format::Parcrypt,
        }
    }
}

impl std::fmt::Debug for FileOptions {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("FileOptions")
            .field("engine", &self.engine.as_ref().map(Engine::backend))
            .field("overwrite", &self.overwrite)
            .field("suite", &self.suite)
            .field("argon2", &self.argon2)
            .field("kdf_limits", &self.kdf_limits)
            .field("context", &self.context)
            .field("format", &self.format)
            .finish()
    }
}

impl FileOptions {
    /// The defaults: a shared engine on every core, Cobblestone-128, argon2id's default
    /// cost, the default key-derivation limit, no context, the parcrypt format, and an
    /// existing destination refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// The engine that seals and opens the chunks (default: one engine shared by every
    /// call that names none, on every core, started on first use). The options keep a clone,
    /// which shares the engine's threads and device.
    pub fn engine(mut self, engine: &Engine) -> Self {
        self.engine = Some(engine.clone());
        self
    }

    /// Whether an existing destination is replaced (default `false`: refused). The source
    /// itself is never replaced.
    pub fn overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }

    /// The old name of [`FileOptions::overwrite`].
    #[deprecated(note = "renamed to `overwrite`, the option's name in every front end")]
    pub fn replace(self, replace: bool) -> Self {
        self.overwrite(replace)
    }

    /// The AEAD of a new file (default [`Suite::Cobblestone128`]); a key must have its
    /// length (16 or 32 bytes). Decryption reads the suite from the file.
    pub fn suite(mut self, suite: Suite) -> Self {
        self.suite = suite;
        self
    }

    /// The argon2id cost of a new passphrase file (default [`Argon2Params::DEFAULT`]).
    pub fn argon2(mut self, argon2: Argon2Params) -> Self {
        self.argon2 = argon2;
        self
    }

    /// The most key derivation decryption does for a passphrase file (default
    /// [`KdfLimits::DEFAULT`]): a header asking for more is refused before any work.
    pub fn kdf_limits(mut self, limits: KdfLimits) -> Self {
        self.kdf_limits = limits;
        self
    }

    /// Application data bound into the key derivation (default none): decryption must be
    /// given the same bytes.
    pub fn context(mut self, context: &[u8]) -> Self {
        self.context = context.to_vec();
        self
    }

    /// The file layout (default [`Format::Parcrypt`], a header then the chunks); a bare
    /// Cobblestone message has no header and takes a key only.
    pub fn format(mut self, format: Format) -> Self {
        self.format = format;
        self
    }

    /// Whether an existing destination is replaced.
    pub fn overwrites(&self) -> bool {
        self.overwrite
    }

    /// Encrypts `source` into `destination` with these options; see [`encrypt_file`].
    pub fn encrypt_file(
        &self,
        source: impl AsRef<Path>,
        destination: impl AsRef<Path>,
        secret: Secret<'_>,
    ) -> Result<u64> {
        let setup = Setup {
            format: self.format,
            suite: self.suite,
            context: &self.context,
            argon2: self.argon2,
        };
        self.on_batcher(|batcher, options| {
            file::encrypt_file(
                batcher,
                &setup,
                secret,
                source.as_ref(),
                destination.as_ref(),
                options,
            )
        })
    }

    /// Decrypts `source` into `destination` with these options; see [`decrypt_file`].
    pub fn decrypt_file(
        &self,
        source: impl AsRef<Path>,
        destination: impl AsRef<Path>,
        secret: Secret<'_>,
    ) -> Result<u64> {
        self.on_batcher(|batcher, options| {
            file::decrypt_file(
                batcher,
                self.format,
                secret,
                &self.context,
                source.as_ref(),
                destination.as_ref(),
                options,
            )
        })
    }

    /// Runs `call` on the batcher of this call's engine, with these options' file options.
    fn on_batcher(
        &self,
        call: impl FnOnce(&dyn ChunkBatcher, &file::FileOptions<'_>) -> Result<u64, FormatError>,
    ) -> Result<u64> {
        let engine = self.engine_for_call()?;
        let batcher = batcher_for(&engine);
        Ok(call(batcher.as_ref(), &self.pipeline())?)
    }

    fn pipeline(&self) -> file::FileOptions<'static> {
        file::FileOptions {
            overwrite: self.overwrite,
            kdf_limits: self.kdf_limits,
            ..file::FileOptions::default()
        }
    }

    fn engine_for_call(&self) -> Result<Engine> {
        match &self.engine {
            Some(engine) => Ok(engine.clone()),
            None => shared_engine(),
        }
    }
}

/// The engine of calls that name none: `auto` on every core (no tune file, so it stays on
/// the CPU), started by the first such call and kept for the rest of the process.
fn shared_engine() -> Result<Engine> {
    static SHARED: Mutex<Option<Engine>> = Mutex::new(None);
    // A panic while building leaves `None` behind, which the next call rebuilds.
    let mut shared = SHARED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(engine) = shared.as_ref() {
        return Ok(engine.clone());
    }
    let engine = Engine::builder().backend(Backend::Auto).build()?;
    *shared = Some(engine.clone());
    Ok(engine)
}
