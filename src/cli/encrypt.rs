//! `parcrypt encrypt|decrypt`: files people can trust. A thin layer over `parcrypt-format`:
//! it finds the key or passphrase, opens files so that nothing is lost, and shows progress.

use std::fs::File;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use parcrypt_engine::{Backend, Engine};
use parcrypt_format::cobblestone::{CHUNK_BYTES, SEALED_CHUNK_BYTES};
use parcrypt_format::range::decrypt_range;
use parcrypt_format::stream::{decrypt_chunks, encrypt_chunks, StageTimes, StreamOptions};
use parcrypt_format::{
    batcher_for, Argon2Params, ByteRange, Envelope, Format, FormatError, Secret, Setup, Suite,
};
use zeroize::{Zeroize, Zeroizing};

use super::files::{open_input, plain, Output};
use super::Failure;

/// The variable a passphrase may come from (argv never carries one).
const PASSPHRASE_VARIABLE: &str = "PARCRYPT_PASSPHRASE";

const AFTER_HELP: &str = "\
Secrets (one of):
  --passphrase-file PATH   the file's content, less one trailing newline
  PARCRYPT_PASSPHRASE      the variable's value
  (neither)                asked on the terminal (twice when encrypting)
  --key HEX                16 or 32 bytes in hex; visible in the process list, for testing
  --key-file PATH          16 or 32 bytes, raw or in hex
Formats:
  parcrypt     (default) a 40-byte header (AEAD, argon2id parameters and salt), then a
               Cobblestone message whose context binds the header. docs/FORMAT.md.
  cobblestone  a bare Cobblestone message (c2sp.org/chunked-encryption) under --key or
               --key-file: 16 bytes for Cobblestone-128, 32 for Cobblestone-256.
               Other Cobblestone implementations read and write the same bytes.
Safety:
  Output to a file goes to a temporary file beside it and is renamed only after the whole
  message authenticated; an existing file is replaced only with --force. Decrypting to
  stdout streams authenticated 16 KiB chunks only, and ends with an error and a non-zero
  exit if a later chunk fails.";

#[derive(Args)]
pub struct CommonArgs {
    /// Key in hex, 16 or 32 bytes (for testing: visible in the process list)
    #[arg(long, value_name = "HEX", group = "secret")]
    key: Option<String>,
    /// File holding the key: 16 or 32 bytes, raw or in hex
    #[arg(long, value_name = "PATH", group = "secret")]
    key_file: Option<PathBuf>,
    /// File holding the passphrase (less one trailing newline)
    #[arg(long, value_name = "PATH", group = "secret")]
    passphrase_file: Option<PathBuf>,
    /// parcrypt (header, then Cobblestone) or cobblestone (bare, needs a key)
    #[arg(long, value_name = "NAME", default_value = "parcrypt")]
    format: String,
    /// Context in hex, bound into the key derivation; decryption must give the same
    #[arg(long, value_name = "HEX")]
    context: Option<String>,
    /// Where to run: seq, threads, pool, opencl, cuda or auto
    #[arg(long, value_name = "NAME", default_value = "auto")]
    backend: String,
    /// Threads for threads/pool/auto (default: all cores)
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Replace OUTPUT if it exists
    #[arg(long)]
    force: bool,
    /// No progress bar
    #[arg(short, long)]
    quiet: bool,
    /// At the end, say on stderr where the time went: reading, the cipher on the backend,
    /// writing (each stage's busy time; they overlap, and the largest bounds the run)
    #[arg(long)]
    stats: bool,
    /// Input file; missing or - means stdin
    #[arg(value_name = "INPUT")]
    input: Option<PathBuf>,
    /// Output file; missing or - means stdout
    #[arg(short = 'o', long = "output", value_name = "OUTPUT")]
    output: Option<PathBuf>,
}

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct EncryptArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// aes-128-gcm (Cobblestone-128, the default) or aes-256-gcm (Cobblestone-256); a key's length decides for keys
    #[arg(long, value_name = "NAME")]
    cipher: Option<String>,
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

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct DecryptArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Decrypt only plaintext bytes START:END (end excluded; -N counts from the end; K/M/G
    /// suffixes). Needs a seekable INPUT file. A range relative to the end authenticates
    /// the final chunk first.
    #[arg(long, value_name = "START:END", allow_hyphen_values = true)]
    range: Option<String>,
}

pub fn run_encrypt(mut args: EncryptArgs) -> Result<(), Failure> {
    let common = &mut args.common;
    let format: Format = common.format.parse()?;
    let context = parse_hex("--context", common.context.as_deref().unwrap_or(""))?;
    let key = take_key(common)?;
    let suite = match (&args.cipher, &key) {
        (None, None) => Suite::Cobblestone128,
        (None, Some(key)) => Suite::for_key_length(key.len())?,
        (Some(name), key) => {
            let suite = parse_cipher(name)?;
            if let Some(key) = key {
                if key.len() != suite.key_bytes() {
                    return Err(Failure(format!(
                        "--cipher {name} needs a {}-byte key, the key has {} bytes",
                        suite.key_bytes(),
                        key.len()
                    )));
                }
            }
            suite
        }
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
    if key.is_none() {
        argon2.check()?;
    }
    let engine = new_engine(common)?;
    let input_size = file_size(common.input.as_deref());
    let to_stdout = common
        .output
        .as_deref()
        .is_none_or(|path| path == Path::new("-"));
    if to_stdout && std::io::stdout().is_terminal() {
        return Err(Failure(
            "refusing to write encrypted bytes to the terminal: use -o FILE or a pipe".into(),
        ));
    }
    let mut input = open_input(common.input.as_deref())?;
    // The secret comes before the output file is made, so that a prompt abandoned with
    // Ctrl-C leaves no temporary file behind.
    let passphrase = match key {
        Some(_) => None,
        None => Some(read_passphrase(common.passphrase_file.as_deref(), true)?),
    };
    let secret = secret_of(&key, &passphrase)?;
    let setup = Setup {
        format,
        suite,
        context: &context,
        argon2,
    };
    let (envelope, keys) = Envelope::create(&setup, secret)?;
    drop(passphrase);
    drop(key);
    let mut output = Output::create(
        common.output.as_deref(),
        common.input.as_deref(),
        common.force,
        false,
    )?;
    let progress = Progress::new(common.quiet, input_size, "encrypting");
    let report = |bytes: u64| progress.update(bytes);
    let stages = StageTimes::default();
    let options = StreamOptions {
        progress: Some(&report),
        stages: common.stats.then_some(&stages),
        ..StreamOptions::default()
    };
    let started = Instant::now();
    let writer = output.writer();
    writer
        .write_all(&envelope.to_bytes())
        .map_err(FormatError::Write)?;
    let batcher = batcher_for(&engine);
    let plaintext = encrypt_chunks(batcher.as_ref(), &keys, input.as_mut(), writer, &options)?;
    progress.finish();
    output.commit()?;
    if common.stats {
        print_stats("encrypted", plaintext, started, &batcher.name(), &stages);
    }
    Ok(())
}

/// The `--stats` line: the rate of the whole streaming run (the key derivation before it
/// excluded, the final rename included) and each stage's busy time.
fn print_stats(what: &str, bytes: u64, started: Instant, backend: &str, stages: &StageTimes) {
    let wall = started.elapsed().as_secs_f64();
    eprintln!(
        "parcrypt: {what} {bytes} bytes in {wall:.3} s ({:.2} GB/s); busy: read {:.3} s, \
         {backend} {:.3} s, write {:.3} s (the stages overlap: the largest bounds the run)",
        bytes as f64 / wall.max(1e-9) / 1e9,
        stages.read().as_secs_f64(),
        stages.process().as_secs_f64(),
        stages.write().as_secs_f64(),
    );
}

pub fn run_decrypt(mut args: DecryptArgs) -> Result<(), Failure> {
    let common = &mut args.common;
    let format: Format = common.format.parse()?;
    let context = parse_hex("--context", common.context.as_deref().unwrap_or(""))?;
    let key = take_key(common)?;
    if format == Format::Cobblestone && key.is_none() {
        return Err(Failure(
            "--format cobblestone needs --key or --key-file".into(),
        ));
    }
    let range: Option<ByteRange> = args.range.as_deref().map(str::parse).transpose()?;
    let engine = new_engine(common)?;
    let input_size = file_size(common.input.as_deref());
    // Random access needs to seek: a file, not a pipe.
    let mut input = match (&range, common.input.as_deref()) {
        (None, path) => Input::Stream(open_input(path)?),
        (Some(_), Some(path)) if path != Path::new("-") => Input::Seekable(open_seekable(path)?),
        (Some(_), _) => {
            return Err(Failure(
                "--range needs an INPUT file that can seek, not stdin".into(),
            ))
        }
    };

    let envelope = match Envelope::read(format, input.reader()) {
        Err(FormatError::NotParcrypt) => {
            return Err(Failure(
                "not a parcrypt file (no parcrypt header; for a bare Cobblestone message use --format cobblestone with --key)".into(),
            ))
        }
        other => other?,
    };
    let passphrase = match (envelope.needs_passphrase(), &key) {
        (true, Some(_)) => {
            return Err(Failure(
                "this file was encrypted with a passphrase, not a key: drop --key/--key-file"
                    .into(),
            ))
        }
        (true, None) => Some(read_passphrase(common.passphrase_file.as_deref(), false)?),
        (false, None) => {
            return Err(Failure(
                "this file was encrypted with a key: give --key or --key-file".into(),
            ))
        }
        (false, Some(_)) => None,
    };
    let secret = secret_of(&key, &passphrase)?;
    let keys = envelope.unlock(secret, &context)?;
    drop(passphrase);
    drop(key);
    // Made only now: a wrong key or passphrase, or a foreign file, leaves nothing behind.
    let mut output = Output::create(
        common.output.as_deref(),
        common.input.as_deref(),
        common.force,
        false,
    )?;

    let batcher = batcher_for(&engine);
    let plaintext_estimate = input_size.map(|size| {
        let sealed = size.saturating_sub(envelope.len() as u64);
        sealed / SEALED_CHUNK_BYTES as u64 * CHUNK_BYTES as u64 + sealed % SEALED_CHUNK_BYTES as u64
    });
    let progress = Progress::new(
        common.quiet,
        if range.is_some() {
            None
        } else {
            plaintext_estimate
        },
        "decrypting",
    );
    let report = |bytes: u64| progress.update(bytes);
    let stages = StageTimes::default();
    let options = StreamOptions {
        progress: Some(&report),
        stages: common.stats.then_some(&stages),
        ..StreamOptions::default()
    };
    let started = Instant::now();
    let plaintext = match (range, &mut input) {
        (Some(range), Input::Seekable(file)) => decrypt_range(
            batcher.as_ref(),
            &keys,
            file,
            envelope.len() as u64,
            range,
            output.writer(),
            &options,
        )?,
        (_, input) => decrypt_chunks(
            batcher.as_ref(),
            &keys,
            input.reader(),
            output.writer(),
            &options,
        )?,
    };
    progress.finish();
    output.commit()?;
    if common.stats {
        print_stats("decrypted", plaintext, started, &batcher.name(), &stages);
    }
    Ok(())
}

enum Input {
    Stream(Box<dyn std::io::Read + Send>),
    Seekable(File),
}

impl Input {
    fn reader(&mut self) -> &mut (dyn std::io::Read + Send) {
        match self {
            Input::Stream(reader) => reader.as_mut(),
            Input::Seekable(file) => file,
        }
    }
}

fn secret_of<'a>(
    key: &'a Option<Zeroizing<Vec<u8>>>,
    passphrase: &'a Option<Zeroizing<Vec<u8>>>,
) -> Result<Secret<'a>, Failure> {
    match (key, passphrase) {
        (Some(key), _) => Ok(Secret::Key(key)),
        (None, Some(passphrase)) => Ok(Secret::Passphrase(passphrase)),
        (None, None) => Err(Failure("no key or passphrase".into())),
    }
}

fn open_seekable(path: &Path) -> Result<File, Failure> {
    let file = File::open(path).map_err(|error| {
        Failure(format!(
            "cannot open input '{}': {}",
            path.display(),
            plain(&error)
        ))
    })?;
    match file.metadata() {
        Ok(metadata) if metadata.is_file() => Ok(file),
        _ => Err(Failure(format!(
            "--range needs a regular INPUT file; '{}' is not one",
            path.display()
        ))),
    }
}

fn new_engine(common: &CommonArgs) -> Result<Engine, Failure> {
    let backend: Backend = common.backend.parse()?;
    super::engine(backend, common.threads)
}

/// The size of a regular input file, for the progress bar.
fn file_size(input: Option<&Path>) -> Option<u64> {
    let path = input.filter(|path| *path != Path::new("-"))?;
    std::fs::metadata(path)
        .ok()
        .filter(|metadata| metadata.is_file())
        .map(|metadata| metadata.len())
}

fn parse_cipher(name: &str) -> Result<Suite, Failure> {
    match name.to_ascii_lowercase().as_str() {
        "aes-128-gcm" | "cobblestone-128" => Ok(Suite::Cobblestone128),
        "aes-256-gcm" | "cobblestone-256" => Ok(Suite::Cobblestone256),
        _ => Err(Failure(format!(
            "unknown --cipher '{name}' for encrypt (choose aes-128-gcm or aes-256-gcm)"
        ))),
    }
}

fn parse_hex(what: &str, text: &str) -> Result<Zeroizing<Vec<u8>>, Failure> {
    let bytes = hex::decode(text.trim()).map_err(|error| {
        let reason = match error {
            hex::FromHexError::OddLength => "an odd number of hex digits".to_string(),
            hex::FromHexError::InvalidHexCharacter { c, index } => {
                format!("'{c}' at position {index} is not a hex digit")
            }
            other => other.to_string(),
        };
        Failure(format!("{what} is not valid hex: {reason}"))
    })?;
    Ok(Zeroizing::new(bytes))
}

/// The key from `--key` (whose argument string is wiped) or `--key-file`, checked for length.
fn take_key(common: &mut CommonArgs) -> Result<Option<Zeroizing<Vec<u8>>>, Failure> {
    let key = if let Some(mut text) = common.key.take() {
        let key = parse_hex("--key", &text);
        text.zeroize();
        key?
    } else if let Some(path) = &common.key_file {
        read_key_file(path)?
    } else {
        return Ok(None);
    };
    if key.len() != 16 && key.len() != 32 {
        return Err(Failure(format!(
            "the key must be 16 bytes (AES-128) or 32 bytes (AES-256), got {} bytes",
            key.len()
        )));
    }
    Ok(Some(key))
}

/// A key file holds the key in hex (32 or 64 digits, surrounding whitespace ignored) or as
/// 16 or 32 raw bytes. Hex wins when both readings fit (a raw 32-byte key made only of hex
/// digits: about one chance in 10^34 for a random key).
fn read_key_file(path: &Path) -> Result<Zeroizing<Vec<u8>>, Failure> {
    let contents = Zeroizing::new(std::fs::read(path).map_err(|error| {
        Failure(format!(
            "cannot read key file '{}': {}",
            path.display(),
            plain(&error)
        ))
    })?);
    let trimmed = contents.trim_ascii();
    if (trimmed.len() == 32 || trimmed.len() == 64) && trimmed.iter().all(u8::is_ascii_hexdigit) {
        let mut key = Zeroizing::new(vec![0u8; trimmed.len() / 2]);
        hex::decode_to_slice(trimmed, &mut key)
            .map_err(|error| Failure(format!("key file '{}': {error}", path.display())))?;
        return Ok(key);
    }
    if contents.len() == 16 || contents.len() == 32 {
        return Ok(Zeroizing::new(contents.to_vec()));
    }
    Err(Failure(format!(
        "key file '{}' must hold 16 or 32 bytes, raw or in hex; it has {} bytes",
        path.display(),
        contents.len()
    )))
}

/// The passphrase from `--passphrase-file`, then PARCRYPT_PASSPHRASE, then the terminal
/// (asked twice when `confirm`).
fn read_passphrase(file: Option<&Path>, confirm: bool) -> Result<Zeroizing<Vec<u8>>, Failure> {
    if let Some(path) = file {
        let mut contents = Zeroizing::new(std::fs::read(path).map_err(|error| {
            Failure(format!(
                "cannot read passphrase file '{}': {}",
                path.display(),
                plain(&error)
            ))
        })?);
        // One trailing newline is how editors and `echo` end a file, not part of the secret.
        if contents.last() == Some(&b'\n') {
            contents.pop();
            if contents.last() == Some(&b'\r') {
                contents.pop();
            }
        }
        if contents.is_empty() {
            return Err(Failure(format!(
                "passphrase file '{}' is empty",
                path.display()
            )));
        }
        return Ok(contents);
    }
    if let Some(value) = std::env::var_os(PASSPHRASE_VARIABLE) {
        use std::os::unix::ffi::OsStringExt;
        let value = Zeroizing::new(value.into_vec());
        if value.is_empty() {
            return Err(Failure(format!("{PASSPHRASE_VARIABLE} is set but empty")));
        }
        return Ok(value);
    }
    let no_terminal = |error: std::io::Error| {
        Failure(format!(
            "no passphrase: use --passphrase-file or {PASSPHRASE_VARIABLE}, or run on a terminal to be asked ({})",
            plain(&error)
        ))
    };
    let mut terminal = terminal::Terminal::open().map_err(no_terminal)?;
    let first = ask(&mut terminal, "parcrypt: passphrase: ")?;
    if first.is_empty() {
        return Err(Failure("the passphrase is empty".into()));
    }
    if confirm {
        let second = ask(&mut terminal, "parcrypt: passphrase again: ")?;
        if !bool::from(subtle::ConstantTimeEq::ct_eq(
            first.as_slice(),
            second.as_slice(),
        )) {
            return Err(Failure(
                "the two passphrases differ; nothing was written".into(),
            ));
        }
    }
    Ok(first)
}

/// One answer from the terminal; end of input (Ctrl-D) is a refusal, not an empty passphrase.
fn ask(terminal: &mut terminal::Terminal, prompt: &str) -> Result<Zeroizing<Vec<u8>>, Failure> {
    match terminal.ask(prompt) {
        Ok(Some(answer)) => Ok(answer),
        Ok(None) => Err(Failure(
            "no passphrase was typed (end of input at the prompt)".into(),
        )),
        Err(error) => Err(Failure(format!(
            "cannot read the passphrase from the terminal: {}",
            plain(&error)
        ))),
    }
}

/// Asking on the controlling terminal (`/dev/tty`, so that stdin and stdout stay free for
/// data) with echo off, the way `readpassphrase(3)` does:
/// - echo is turned off *before* the prompt shows, and input typed ahead of the prompt
///   (which the terminal has already shown) is discarded, so what is typed after the
///   prompt is never displayed;
/// - the terminal keeps its line editing (backspace, Ctrl-U) and its signals: Ctrl-C,
///   a hang-up or a kill while asking restore the terminal's settings in the signal
///   handler and then end the process as the signal would have, so an interrupted prompt
///   never leaves the user's shell without echo.
mod terminal {
    use std::cell::UnsafeCell;
    use std::fs::{File, OpenOptions};
    use std::io::{self, Read, Write};
    use std::mem::MaybeUninit;
    use std::os::fd::AsRawFd;
    use std::sync::atomic::{AtomicI32, Ordering};
    use std::sync::{Mutex, MutexGuard};

    use zeroize::Zeroizing;

    /// The longest line a terminal in canonical mode hands over (Linux: 4095 bytes and
    /// the newline); more is dropped by the terminal itself.
    const LINE_BYTES: usize = 4096;

    /// The signals that end a process by default and that a person can send while asked:
    /// each restores the terminal first.
    const SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP];

    /// The settings to restore, for the signal handler: written while no handler is
    /// installed, read only by the handler while [`QUIET_TERMINAL`] names a descriptor.
    struct SavedSettings(UnsafeCell<MaybeUninit<libc::termios>>);
    // SAFETY: written only under ASKING before QUIET_TERMINAL publishes it (SeqCst), and
    // read only through that publication; see `Quiet::new`.
    unsafe impl Sync for SavedSettings {}
    static SAVED: SavedSettings = SavedSettings(UnsafeCell::new(MaybeUninit::uninit()));
    /// The terminal whose echo is off, or -1.
    static QUIET_TERMINAL: AtomicI32 = AtomicI32::new(-1);
    /// One question at a time in the process (the statics above hold one terminal).
    static ASKING: Mutex<()> = Mutex::new(());

    pub struct Terminal {
        tty: File,
    }

    impl Terminal {
        /// The controlling terminal; fails when the process has none.
        pub fn open() -> io::Result<Terminal> {
            let tty = OpenOptions::new().read(true).write(true).open("/dev/tty")?;
            Ok(Terminal { tty })
        }

        /// Shows `prompt`, reads one line with echo off and returns it without its line
        /// ending; `None` when input ended (Ctrl-D) before anything was typed.
        pub fn ask(&mut self, prompt: &str) -> io::Result<Option<Zeroizing<Vec<u8>>>> {
            let quiet = Quiet::new(&self.tty)?;
            (&self.tty).write_all(prompt.as_bytes())?;
            let mut line = Zeroizing::new(vec![0u8; LINE_BYTES]);
            let mut length = 0;
            let ended_line = loop {
                if length == line.len() {
                    break false;
                }
                match (&self.tty).read(&mut line[length..]) {
                    // Ctrl-D at the start of a line.
                    Ok(0) => break false,
                    Ok(read) => {
                        length += read;
                        if line[length - 1] == b'\n' {
                            break true;
                        }
                    }
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                    Err(error) => return Err(error),
                }
            };
            drop(quiet);
            if !ended_line {
                // The terminal echoed no newline: end the prompt's line for what follows.
                (&self.tty).write_all(b"\n")?;
            }
            let mut answer = &line[..length];
            while let [rest @ .., b'\n' | b'\r'] = answer {
                answer = rest;
            }
            if answer.is_empty() && !ended_line {
                return Ok(None);
            }
            Ok(Some(Zeroizing::new(answer.to_vec())))
        }
    }

    /// Echo off on a terminal until dropped, with signal handlers that restore it.
    struct Quiet<'t> {
        tty: &'t File,
        saved: libc::termios,
        replaced: Vec<(libc::c_int, libc::sigaction)>,
        _asking: MutexGuard<'static, ()>,
    }

    impl<'t> Quiet<'t> {
        fn new(tty: &'t File) -> io::Result<Quiet<'t>> {
            let asking = ASKING
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let fd = tty.as_raw_fd();
            let mut settings = MaybeUninit::<libc::termios>::uninit();
            // SAFETY: `fd` is open for the life of `tty`; tcgetattr fills the struct or fails.
            if unsafe { libc::tcgetattr(fd, settings.as_mut_ptr()) } != 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: tcgetattr succeeded, so the struct is initialised.
            let saved = unsafe { settings.assume_init() };
            // SAFETY: no handler of ours is installed (they are removed before ASKING is
            // released), so nothing reads SAVED while it is written.
            unsafe { (*SAVED.0.get()).write(saved) };
            QUIET_TERMINAL.store(fd, Ordering::SeqCst);
            let mut quiet = Quiet {
                tty,
                saved,
                replaced: Vec::new(),
                _asking: asking,
            };
            for signal in SIGNALS {
                // SAFETY: sigaction reads and writes only the two structs given; an
                // all-zero sigaction is a valid value (empty mask, no flags).
                unsafe {
                    let mut old: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                        || old.sa_sigaction == libc::SIG_IGN
                    {
                        // A signal the process ignores (nohup, a background job) stays
                        // ignored: it must not become fatal while asking.
                        continue;
                    }
                    let mut action: libc::sigaction = std::mem::zeroed();
                    action.sa_sigaction =
                        restore_and_raise as extern "C" fn(libc::c_int) as libc::sighandler_t;
                    action.sa_flags = libc::SA_RESETHAND;
                    libc::sigemptyset(&mut action.sa_mask);
                    if libc::sigaction(signal, &action, std::ptr::null_mut()) == 0 {
                        quiet.replaced.push((signal, old));
                    }
                }
            }
            let mut silent = saved;
            silent.c_lflag &= !(libc::ECHO | libc::ECHOE | libc::ECHOK);
            // Enter still moves to the next line, without showing what was typed.
            silent.c_lflag |= libc::ECHONL | libc::ICANON;
            // SAFETY: as for tcgetattr. TCSAFLUSH drops input typed before the prompt,
            // which the terminal has already displayed.
            if unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &silent) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(quiet)
        }
    }

    impl Drop for Quiet<'_> {
        fn drop(&mut self) {
            // SAFETY: the descriptor is open for the life of `self.tty`; tcsetattr only
            // reads the struct.
            unsafe { libc::tcsetattr(self.tty.as_raw_fd(), libc::TCSANOW, &self.saved) };
            QUIET_TERMINAL.store(-1, Ordering::SeqCst);
            for (signal, old) in self.replaced.drain(..) {
                // SAFETY: puts back the action read in `Quiet::new`.
                unsafe { libc::sigaction(signal, &old, std::ptr::null_mut()) };
            }
        }
    }

    /// The handler while echo is off: restore the terminal, then let the signal do what it
    /// does by default (SA_RESETHAND has reinstated that action; the signal is blocked in
    /// its own handler, so the raised one is delivered as the handler returns).
    extern "C" fn restore_and_raise(signal: libc::c_int) {
        let fd = QUIET_TERMINAL.load(Ordering::SeqCst);
        if fd >= 0 {
            // SAFETY: tcsetattr, write and raise are async-signal-safe. SAVED was written
            // before QUIET_TERMINAL named `fd`, and is not written again before
            // QUIET_TERMINAL is -1 and this handler is removed.
            unsafe {
                libc::tcsetattr(fd, libc::TCSANOW, (*SAVED.0.get()).as_ptr());
                libc::write(fd, b"\n".as_ptr().cast(), 1);
            }
        }
        // SAFETY: raise is async-signal-safe.
        unsafe { libc::raise(signal) };
    }
}

/// A progress bar on stderr, only when stderr is a terminal, only without --quiet, and only
/// once the work has run for half a second (quick jobs print nothing).
struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    shown: AtomicBool,
}

impl Progress {
    const DELAY: Duration = Duration::from_millis(500);

    fn new(quiet: bool, total: Option<u64>, what: &'static str) -> Progress {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let template = if total.is_some() {
                "{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}"
            } else {
                "{msg} {bytes} {binary_bytes_per_sec} {elapsed}"
            };
            let style = ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden())
                .with_style(style)
                .with_message(what)
        });
        Progress {
            bar,
            started: Instant::now(),
            shown: AtomicBool::new(false),
        }
    }

    fn update(&self, bytes: u64) {
        let Some(bar) = &self.bar else { return };
        bar.set_position(bytes);
        if !self.shown.load(Ordering::Relaxed) && self.started.elapsed() >= Self::DELAY {
            self.shown.store(true, Ordering::Relaxed);
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // An error is about to be printed: leave its line clean.
        self.finish();
    }
}
