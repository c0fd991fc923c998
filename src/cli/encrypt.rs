//! `parcrypt encrypt|decrypt`: files people can trust. A thin layer over `parcrypt-format`:
//! it parses the arguments, asks the library for the secret, the envelope and the streaming
//! run, and shows progress. Decryption is in `decrypt.rs`; where output goes, in `files.rs`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use parcrypt::devices::KernelFamily;
use parcrypt::errors::FormatError;
use parcrypt::files::StageTimes;
use parcrypt::secrets;
use parcrypt::SecretBytes;
use parcrypt::StreamOptions;
use parcrypt::{
    batcher_for, Argon2Params, ChunkBatcher, Encryptor, Format, KdfLimits, Secret, Setup, Suite,
};
use parcrypt::{Backend, Engine};
use zeroize::Zeroize;

use super::age::{AgeDecryptArgs, AgeEncryptArgs};
use super::files::{check_output, file_size, open_input, Output};
use super::progress::{print_stats, Progress};
use super::Failure;

const ENCRYPT_EXAMPLES: &str = "\
Examples:
  parcrypt encrypt notes.txt -o notes.txt.pc           asks for a passphrase, twice
  parcrypt encrypt --passphrase-file pass.txt notes.txt -o notes.txt.pc
  PARCRYPT_PASSPHRASE=\"$SECRET\" parcrypt encrypt notes.txt -o notes.txt.pc
  tar c photos | parcrypt encrypt --passphrase-file pass.txt -o photos.tar.pc
  parcrypt encrypt --key-file key.bin --format cobblestone data -o data.cs
  parcrypt encrypt -r age1... -r age1pq1... data -o data.pc     to public keys (parcrypt keygen)
  parcrypt encrypt -R recipients.txt --cipher aes-256-gcm data -o data.pc
  parcrypt encrypt --format age -r age1... -r age1... data -o data.age
  parcrypt encrypt --format age -R recipients.txt -a data -o data.age.txt
  parcrypt encrypt --format age -p --passphrase-file pass.txt data -o data.age";

const DECRYPT_EXAMPLES: &str = "\
Examples:
  parcrypt decrypt notes.txt.pc -o notes.txt           asks for the passphrase
  parcrypt decrypt --passphrase-file pass.txt notes.txt.pc -o notes.txt --overwrite
  parcrypt decrypt --passphrase-file pass.txt photos.tar.pc | tar x
  parcrypt decrypt --range 1M:2M --passphrase-file pass.txt big.pc -o part
  parcrypt decrypt --key-file key.bin --format cobblestone data.cs -o data
  parcrypt decrypt -i key.txt data.pc -o data         a file encrypted to recipients
  parcrypt decrypt -i key.txt data.age -o data        an age file, recognised by its header";

const AFTER_HELP: &str = "\
Secrets (one of):
  --passphrase-file PATH   the file's content, less one trailing newline
  PARCRYPT_PASSPHRASE      the variable's value (taken out of the environment at start, so
                           no child inherits it; warned about when stderr is a terminal)
  (neither)                asked on the terminal (twice when encrypting)
  --key HEX                16 or 32 bytes in hex; visible in the process list, for testing
  --key-file PATH          16 or 32 bytes, raw or in hex
  -r, -R / -i              public-key recipients (age1..., age1pq1...) to encrypt to, and
                           identity files (parcrypt keygen, age-keygen) to decrypt with
Formats:
  parcrypt     (default) a 40-byte header (AEAD, argon2id parameters and salt), then a
               Cobblestone message whose context binds the header; with -r/-R a header
               of recipient stanzas and a MAC instead. docs/FORMAT.md.
  cobblestone  a bare Cobblestone message (c2sp.org/chunked-encryption) under --key or
               --key-file: 16 bytes for Cobblestone-128, 32 for Cobblestone-256.
               Other Cobblestone implementations read and write the same bytes.
  age          an age v1 file (age-encryption.org/v1) to recipients (-r, -R: X25519
               age1..., post-quantum age1pq1...) or a passphrase (-p, scrypt), ASCII-
               armored with -a. age 1.3 reads it; decrypt recognises age files by their
               first line and opens them with -i IDENTITY_FILE. docs/AGE.md.
Safety:
  OUTPUT is checked before any prompt or key derivation: a folder, the input file itself
  (stdout included: `> INPUT` and `>> INPUT` are refused), an existing file without
  --overwrite, a link whose target's folder is missing, or a folder that is missing or not
  writable is refused at once. The output is written into a file with no name (O_TMPFILE)
  in OUTPUT's folder, synced to disk, and only then linked to OUTPUT and the folder synced:
  an interrupt, SIGKILL or a crash leaves no file. With --overwrite an existing OUTPUT
  is replaced in one rename: it is wholly the old file or wholly the new one. Where the file
  system has no O_TMPFILE, a hidden .parcrypt-*.tmp file is used, removed on SIGINT,
  SIGTERM and SIGHUP (SIGKILL or a crash may leave it). A symlink OUTPUT keeps pointing at
  its target, which is replaced. A FIFO, a device (/dev/null) or /dev/stdout is written in
  place, never replaced. Decrypting to stdout, a FIFO or a device streams authenticated
  16 KiB chunks only, and ends with an error and a non-zero exit if a later chunk fails.";

#[derive(Args)]
pub struct CommonArgs {
    /// Key in hex, 16 or 32 bytes (for testing: visible in the process list)
    #[arg(long, value_name = "HEX", group = "secret")]
    pub(super) key: Option<String>,
    /// File holding the key: 16 or 32 bytes, raw or in hex
    #[arg(long, value_name = "PATH", group = "secret")]
    pub(super) key_file: Option<PathBuf>,
    /// File holding the passphrase (less one trailing newline)
    #[arg(long, value_name = "PATH", group = "secret")]
    pub(super) passphrase_file: Option<PathBuf>,
    /// parcrypt (header, then Cobblestone), cobblestone (bare, needs a key) or age
    #[arg(long, value_name = "NAME", default_value = "parcrypt", value_parser = super::named::<FileFormat>(), hide_possible_values = true)]
    pub(super) format: FileFormat,
    /// Context in hex, bound into the key derivation; decryption must give the same
    #[arg(long, value_name = "HEX")]
    pub(super) context: Option<String>,
    /// Where to run: seq, threads, pool, opencl, cuda, hip or auto
    #[arg(long, value_name = "NAME", default_value = "auto", value_parser = super::named::<Backend>(), hide_possible_values = true)]
    pub(super) backend: Backend,
    /// Threads for threads/pool/auto (default: all cores; at most 8 per core, and 64)
    #[arg(long, value_name = "N", value_parser = super::parse_threads)]
    pub(super) threads: Option<usize>,
    /// The highest CPU kernel family to use: portable, aes-ni, vaes-256 or vaes-512
    /// (default: the best this CPU has; one it lacks is refused)
    #[arg(long, value_name = "FAMILY", value_parser = super::named::<KernelFamily>(), hide_possible_values = true)]
    pub(super) kernels: Option<KernelFamily>,
    /// Replace OUTPUT if it exists, in one rename
    #[arg(long, short = 'f', visible_alias = "force")]
    pub(super) overwrite: bool,
    /// No progress bar
    #[arg(short, long)]
    pub(super) quiet: bool,
    /// At the end, say on stderr where the time went: reading, the cipher on the backend,
    /// writing (each stage's busy time; they overlap, and the largest bounds the run)
    #[arg(long)]
    pub(super) stats: bool,
    /// Input file; missing or - means stdin
    #[arg(value_name = "INPUT")]
    pub(super) input: Option<PathBuf>,
    /// Output file; missing or - means stdout
    #[arg(short = 'o', long = "output", value_name = "OUTPUT")]
    pub(super) output: Option<PathBuf>,
}

impl CommonArgs {
    /// The engine a file job runs on: the backend, threads and kernel family asked for.
    pub(super) fn file_engine(&self) -> Result<parcrypt::Engine, Failure> {
        super::engine(self.backend, self.threads, self.kernels, super::FILE_CHUNKS)
    }
}

#[derive(Args)]
#[command(after_help = format!("{ENCRYPT_EXAMPLES}\n{AFTER_HELP}"))]
pub struct EncryptArgs {
    #[command(flatten)]
    pub(super) common: CommonArgs,
    #[command(flatten)]
    pub(super) age: AgeEncryptArgs,
    /// aes-128-gcm (Cobblestone-128, the default) or aes-256-gcm (Cobblestone-256); a key's length decides for keys
    #[arg(long, value_name = "NAME", value_parser = parse_cipher)]
    cipher: Option<Suite>,
    /// argon2id memory for a passphrase, in MiB [default: 64]
    #[arg(long, value_name = "MIB")]
    kdf_memory: Option<u32>,
    /// argon2id passes over the memory [default: 3]
    #[arg(long, value_name = "N")]
    kdf_passes: Option<u32>,
    /// argon2id lanes, computed in parallel [default: 4]
    #[arg(long, value_name = "N")]
    kdf_lanes: Option<u32>,
}

const DECRYPT_AFTER_HELP: &str = "\
Key-derivation budget:
  A file's header says how much argon2id work its passphrase takes, and it is read before
  anything can be authenticated. parcrypt refuses, before any work, a header asking for
  more than 256 MiB, 12 passes or 16 lanes (four times the defaults); raise the budget
  with --kdf-max-memory, --kdf-max-passes or --kdf-max-lanes for files you trust.";

#[derive(Args)]
#[command(after_help = format!("{DECRYPT_EXAMPLES}\n{AFTER_HELP}\n{DECRYPT_AFTER_HELP}"))]
pub struct DecryptArgs {
    #[command(flatten)]
    pub(super) common: CommonArgs,
    #[command(flatten)]
    pub(super) age: AgeDecryptArgs,
    /// Decrypt only plaintext bytes START:END (end excluded; -N counts from the end; K/M/G
    /// suffixes). Needs a seekable INPUT file. A range relative to the end authenticates
    /// the final chunk first.
    #[arg(long, value_name = "START:END", allow_hyphen_values = true)]
    pub(super) range: Option<String>,
    /// Most argon2id memory a passphrase file's header may ask for, in MiB [default: 256]
    #[arg(long, value_name = "MIB")]
    pub(super) kdf_max_memory: Option<u32>,
    /// Most argon2id passes a header may ask for [default: 12]
    #[arg(long, value_name = "N")]
    pub(super) kdf_max_passes: Option<u32>,
    /// Most argon2id lanes a header may ask for [default: 16]
    #[arg(long, value_name = "N")]
    pub(super) kdf_max_lanes: Option<u32>,
}

impl DecryptArgs {
    /// The argon2id budget from `--kdf-max-*`, the defaults for what is not given. A budget
    /// above the format's own limits allows no more than they do.
    pub(super) fn kdf_limits(&self) -> KdfLimits {
        let defaults = KdfLimits::DEFAULT;
        KdfLimits {
            max_memory_kib: self
                .kdf_max_memory
                .map_or(defaults.max_memory_kib, |mebibytes| {
                    mebibytes.saturating_mul(1024)
                }),
            max_passes: self.kdf_max_passes.unwrap_or(defaults.max_passes),
            max_lanes: self.kdf_max_lanes.unwrap_or(defaults.max_lanes),
        }
    }
}

pub fn run_encrypt(mut args: EncryptArgs) -> Result<(), Failure> {
    let format = match args.common.format {
        FileFormat::Age => return super::age::encrypt(&args),
        FileFormat::Parcrypt if args.age.passphrase || args.age.armor => {
            return Err(Failure(
                "-p and -a are options of --format age (parcrypt's own format asks for a passphrase when no -r, -R or key is given, and has no armor)".into(),
            ))
        }
        FileFormat::Cobblestone if args.age.any() => {
            return Err(Failure(
                "a bare Cobblestone message takes a key only: -r, -R, -p and -a are for the parcrypt format (recipients) or --format age".into(),
            ))
        }
        FileFormat::Parcrypt => Format::Parcrypt,
        FileFormat::Cobblestone => Format::Cobblestone,
    };
    // -r and -R: a parcrypt file to public-key recipients (a version-2 header).
    let recipients = if args.age.has_recipients() {
        let common = &args.common;
        if common.key.is_some() || common.key_file.is_some() || common.passphrase_file.is_some() {
            return Err(Failure(
                "-r and -R encrypt to recipients: drop --key, --key-file and --passphrase-file"
                    .into(),
            ));
        }
        Some(super::age::recipients(&args.age)?)
    } else {
        None
    };
    let common = &mut args.common;
    let context = secrets::decode_hex("--context", common.context.as_deref().unwrap_or(""))?;
    let key = take_key(common)?;
    let suite = match (args.cipher, &key) {
        (None, None) => Suite::Cobblestone128,
        (None, Some(key)) => Suite::for_key_length(key.len())?,
        (Some(suite), Some(key)) if key.len() != suite.key_bytes() => {
            return Err(Failure(format!(
                "--cipher {} needs a {}-byte key, the key has {} bytes",
                cipher_name(suite),
                suite.key_bytes(),
                key.len()
            )))
        }
        (Some(suite), _) => suite,
    };
    if format == Format::Cobblestone && key.is_none() {
        return Err(Failure("--format cobblestone needs --key or --key-file (a bare Cobblestone message has no room for passphrase parameters)".into()));
    }
    let defaults = Argon2Params::DEFAULT;
    let argon2 = Argon2Params {
        memory_kib: match args.kdf_memory {
            Some(mebibytes) => mebibytes
                .checked_mul(1024)
                .ok_or_else(|| Failure(format!("--kdf-memory {mebibytes} MiB is too large")))?,
            None => defaults.memory_kib,
        },
        passes: args.kdf_passes.unwrap_or(defaults.passes),
        lanes: args.kdf_lanes.unwrap_or(defaults.lanes),
    };
    if key.is_none() && recipients.is_none() {
        argon2.check()?;
    }
    let engine = common.file_engine()?;
    let input_size = file_size(common.input.as_deref());
    let to_terminal = match common.output.as_deref() {
        Some(path) if path != Path::new("-") => parcrypt::files::is_terminal(path),
        _ => std::io::stdout().is_terminal(),
    };
    if to_terminal {
        return Err(Failure(
            "refusing to write encrypted bytes to the terminal: use -o FILE or a pipe".into(),
        ));
    }
    // Every refusal of the destination comes before the prompt and the key derivation.
    check_output(
        common.output.as_deref(),
        common.input.as_deref(),
        common.overwrite,
    )?;
    let mut input = open_input(common.input.as_deref())?;
    // The secret comes before the output file is made, so that a prompt abandoned with
    // Ctrl-C leaves no temporary file behind.
    let passphrase = match (&key, &recipients) {
        (None, None) => Some(read_passphrase(common.passphrase_file.as_deref(), true)?),
        _ => None,
    };
    let setup = Setup {
        format,
        suite,
        context: &context,
        argon2,
    };
    let secret = match &recipients {
        Some(recipients) => Secret::Recipients(recipients),
        None => secret_of(&key, &passphrase)?,
    };
    for warning in setup.warnings(secret) {
        say!("parcrypt: warning: {warning}");
    }
    let encryptor = Encryptor::new(&setup, secret)?;
    drop(passphrase);
    drop(key);
    run_to_output(
        common,
        &engine,
        input_size,
        ["encrypting", "encrypted"],
        |batcher, writer, options| {
            encryptor.encrypt_stream(batcher, input.as_mut(), writer, options)
        },
    )
}

/// The passphrase, as [`secrets::read_passphrase`] finds it (`--passphrase-file`, then
/// `PARCRYPT_PASSPHRASE`, then the prompt). One from the variable is warned about when a
/// person is watching (stderr is a terminal): anything that can read this user's process
/// environments could read it while it was set. Scripts (stderr not a terminal) are not
/// told on every run what they chose on purpose.
pub(super) fn read_passphrase(file: Option<&Path>, confirm: bool) -> Result<SecretBytes, Failure> {
    let from_environment = parcrypt::environment::passphrase()?;
    let (passphrase, source) = secrets::read_passphrase(file, from_environment, confirm)?;
    if source == secrets::PassphraseSource::Environment && std::io::stderr().is_terminal() {
        say!(
            "parcrypt: warning: the passphrase came from {}, which other processes of this user (and root) can read while it is set; --passphrase-file or the prompt keep it out of the environment",
            secrets::PASSPHRASE_VARIABLE
        );
    }
    Ok(passphrase)
}

/// What a command runs in the streaming pipeline: given the batcher, the output and the
/// options, it returns the plaintext bytes.
pub(super) trait StreamRun:
    FnOnce(&dyn ChunkBatcher, &mut (dyn Write + Send), &StreamOptions<'_>) -> Result<u64, FormatError>
{
}

impl<Run> StreamRun for Run where
    Run: FnOnce(
        &dyn ChunkBatcher,
        &mut (dyn Write + Send),
        &StreamOptions<'_>,
    ) -> Result<u64, FormatError>
{
}

/// The streaming run of both commands: makes the output (only now, so that a refusal
/// before leaves nothing behind), shows progress towards `total` plaintext bytes, commits
/// the output and prints `--stats`. `words`: what is going on, and what was done.
pub(super) fn run_to_output(
    common: &CommonArgs,
    engine: &Engine,
    total: Option<u64>,
    words: [&'static str; 2],
    run: impl StreamRun,
) -> Result<(), Failure> {
    let mut output = Output::create(
        common.output.as_deref(),
        common.input.as_deref(),
        common.overwrite,
    )?;
    let progress = Progress::new(common.quiet, total, words[0]);
    let report = |bytes: u64| progress.update(bytes);
    let stages = StageTimes::default();
    let options = StreamOptions {
        progress: Some(&report),
        stages: common.stats.then_some(&stages),
        ..StreamOptions::default()
    };
    let started = Instant::now();
    let batcher = batcher_for(engine);
    let plaintext = run(batcher.as_ref(), output.writer(), &options)?;
    progress.finish();
    output.commit()?;
    if common.stats {
        print_stats(words[1], plaintext, started, &batcher.name(), &stages);
    }
    Ok(())
}

pub(super) fn secret_of<'a>(
    key: &'a Option<SecretBytes>,
    passphrase: &'a Option<SecretBytes>,
) -> Result<Secret<'a>, Failure> {
    match (key, passphrase) {
        (Some(key), _) => Ok(Secret::Key(key)),
        (None, Some(passphrase)) => Ok(Secret::Passphrase(passphrase)),
        (None, None) => Err(Failure("no key or passphrase".into())),
    }
}

/// `--format`: the formats of `parcrypt-format`, and age.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    /// A parcrypt header, then a Cobblestone message.
    Parcrypt,
    /// A bare Cobblestone message.
    Cobblestone,
    /// An age v1 file.
    Age,
}

impl std::str::FromStr for FileFormat {
    type Err = String;
    fn from_str(name: &str) -> Result<Self, String> {
        match name.to_ascii_lowercase().as_str() {
            "parcrypt" => Ok(FileFormat::Parcrypt),
            "cobblestone" => Ok(FileFormat::Cobblestone),
            "age" => Ok(FileFormat::Age),
            _ => Err(format!(
                "unknown format '{name}' (choose parcrypt, cobblestone or age)"
            )),
        }
    }
}

impl super::Named for FileFormat {
    fn names() -> Vec<String> {
        vec!["parcrypt".into(), "cobblestone".into(), "age".into()]
    }
}

/// `--cipher`: the suites by their AEAD names (or their Cobblestone names).
fn parse_cipher(name: &str) -> Result<Suite, super::Refused> {
    match name.to_ascii_lowercase().as_str() {
        "aes-128-gcm" | "cobblestone-128" => Ok(Suite::Cobblestone128),
        "aes-256-gcm" | "cobblestone-256" => Ok(Suite::Cobblestone256),
        _ => Err(super::Refused(super::with_suggestion(
            format_args!(
                "unknown --cipher '{name}' for encrypt (choose aes-128-gcm or aes-256-gcm)"
            ),
            name,
            ["aes-128-gcm", "aes-256-gcm"],
        ))),
    }
}

fn cipher_name(suite: Suite) -> &'static str {
    match suite {
        Suite::Cobblestone128 => "aes-128-gcm",
        Suite::Cobblestone256 => "aes-256-gcm",
    }
}

/// The key from `--key` (whose argument string is wiped) or `--key-file`, checked for length.
pub(super) fn take_key(common: &mut CommonArgs) -> Result<Option<SecretBytes>, Failure> {
    let key = if let Some(mut text) = common.key.take() {
        let key = secrets::decode_hex("--key", &text);
        text.zeroize();
        key?
    } else if let Some(path) = &common.key_file {
        secrets::read_key_file(path)?
    } else {
        return Ok(None);
    };
    Ok(Some(secrets::checked_key(key)?))
}
