//! `parcrypt raw encrypt|decrypt`: one cipher and mode, explicit key and IV.

use std::fs::File;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use parcrypt::devices::KernelFamily;
use parcrypt::hazmat::open::{Authenticated, Destination, OpenOptions, Phase};
use parcrypt::hazmat::stream::{chunk_bytes_for, process_stream_with_progress};
use parcrypt::hazmat::{Cipher, Direction, Implementation, KeyedCipher, Mode};
use parcrypt::secrets::decode_hex;
use parcrypt::{Backend, CipherSpec};
use zeroize::Zeroize;

use super::files::{check_output, file_size, output_is_discardable, Output};
use super::progress::Progress;
use super::{named, Failure};

/// `--cipher`'s help: every name, read from the cipher registry.
fn cipher_help() -> String {
    format!("Cipher and mode: {}", CipherSpec::names_help())
}

const AFTER_HELP: &str = "\
Examples:
  parcrypt raw encrypt --cipher aes-128-cbc --key 000102030405060708090a0b0c0d0e0f \\
      --iv 0f0e0d0c0b0a09080706050403020100 notes.txt -o notes.cbc
  parcrypt raw decrypt --cipher aes-128-cbc --key 000102030405060708090a0b0c0d0e0f \\
      --iv 0f0e0d0c0b0a09080706050403020100 notes.cbc -o notes.txt --overwrite
  openssl enc -aes-128-cbc -K 000102030405060708090a0b0c0d0e0f \\
      -iv 0f0e0d0c0b0a09080706050403020100 -nosalt -in notes.txt | cmp - notes.cbc
Modes:
  ecb, cbc   PKCS#7 padding unless --no-pad. ECB leaks patterns: for experiments only.
  ctr        The whole IV is one big-endian counter that wraps (as OpenSSL does).
  gcm        Any IV of 1 byte or more (12 bytes is the fast path); output is the
             ciphertext followed by the 16-byte tag. Decryption reads the input
             twice: a first pass only checks the tag (nothing is decrypted or
             written), and only if it matches a second pass decrypts and writes.
             With -o FILE, a regular INPUT file is read twice in place; if it
             changes between the passes the run fails and FILE is not created.
             Otherwise (stdout, a pipe, stdin) the input is read to its end first
             and its ciphertext (never plaintext) kept in memory up to 64 MiB,
             beyond that in an unnamed temporary file in $TMPDIR (removed by the
             system even on SIGKILL; it needs room for the whole input), and the
             second pass decrypts that copy: a file changed meanwhile cannot put
             its plaintext on stdout.
Parallelism:
  ECB, CTR, GCM and CBC decryption are split over threads. CBC encryption chains
  every block on the previous one, so it runs on one thread whatever --backend says.
Keys:
  --key on the command line is visible to other users of this machine (ps); it is
  meant for testing and interoperability. The key is wiped from memory after use.
Compatibility:
  Output equals `openssl enc -<cipher> -K <key> -iv <iv> -nosalt` for every cipher
  and mode OpenSSL has (OpenSSL zero-pads Blowfish keys shorter than 16 bytes).";

#[derive(Subcommand)]
pub enum RawCommand {
    /// Encrypt INPUT (or stdin) to OUTPUT (or stdout)
    #[command(after_help = AFTER_HELP)]
    Encrypt(RawArgs),
    /// Decrypt INPUT (or stdin) to OUTPUT (or stdout)
    #[command(after_help = AFTER_HELP)]
    Decrypt(RawArgs),
}

#[derive(Args)]
pub struct RawArgs {
    #[arg(long, value_name = "NAME", help = cipher_help(), value_parser = named::<CipherSpec>(), hide_possible_values = true)]
    cipher: CipherSpec,
    /// Key in hex (for testing: visible in the process list)
    #[arg(long, value_name = "HEX")]
    key: String,
    /// IV in hex: one block for CBC and CTR, 12 bytes or more for GCM, none for ECB
    #[arg(long, value_name = "HEX")]
    iv: Option<String>,
    /// Take a GCM IV of 1 to 11 bytes (to read or match data made with one; such IVs are
    /// hashed into the counter and collide far sooner than 12-byte ones)
    #[arg(long)]
    allow_short_gcm_iv: bool,
    /// Additional authenticated data in hex (GCM only)
    #[arg(long, value_name = "HEX")]
    aad: Option<String>,
    /// No PKCS#7 padding for ECB/CBC: the input must be whole blocks
    #[arg(long)]
    no_pad: bool,
    /// Where to run: seq, threads, pool, opencl, cuda, hip or auto (auto never runs AES on a
    /// device whose table AES is not constant time; naming one warns)
    #[arg(long, value_name = "NAME", default_value = "auto", value_parser = named::<Backend>(), hide_possible_values = true)]
    backend: Backend,
    /// Threads for threads/pool/auto (default: all cores; at most 8 per core, and 64)
    #[arg(long, value_name = "N", value_parser = super::parse_threads)]
    threads: Option<usize>,
    /// The highest CPU kernel family to use: portable, aes-ni, vaes-256 or vaes-512
    /// (default: the best this CPU has; one it lacks is refused)
    #[arg(long, value_name = "FAMILY", value_parser = named::<KernelFamily>(), hide_possible_values = true)]
    kernels: Option<KernelFamily>,
    /// Use the portable table AES (the GPU kernels' CPU twin) instead of hardware AES. Not
    /// constant time: its table lookups leak the key through the CPU's caches to code that
    /// shares them. For testing only
    #[arg(long)]
    reference: bool,
    /// Replace OUTPUT if it exists, in one rename
    #[arg(long, short = 'f', visible_alias = "force")]
    overwrite: bool,
    /// No progress bar
    #[arg(short, long)]
    quiet: bool,
    /// Input file; missing or - means stdin
    #[arg(value_name = "INPUT")]
    input: Option<PathBuf>,
    /// Output file; missing or - means stdout (missing: refused when stdout is a terminal)
    #[arg(short = 'o', long = "output", value_name = "OUTPUT")]
    output: Option<PathBuf>,
}

pub fn run(command: RawCommand) -> Result<(), Failure> {
    let (direction, mut args) = match command {
        RawCommand::Encrypt(args) => (Direction::Encrypt, args),
        RawCommand::Decrypt(args) => (Direction::Decrypt, args),
    };
    let key = decode_hex("--key", &args.key);
    // The argument string is ours to wipe once parsed.
    args.key.zeroize();
    let key = key?;
    let spec = args.cipher;
    let iv = args
        .iv
        .as_deref()
        .map(|iv| decode_hex("--iv", iv))
        .transpose()?;
    let aad = args
        .aad
        .as_deref()
        .map(|aad| decode_hex("--aad", aad))
        .transpose()?;
    if spec.mode == Mode::Ecb {
        say!("parcrypt: warning: ECB encrypts equal blocks to equal blocks and leaks patterns; use it only for experiments");
    }
    // Every refusal of the output comes first (GCM decryption makes it only after its
    // first pass).
    check_output(
        args.output.as_deref(),
        args.input.as_deref(),
        args.overwrite,
    )?;
    let engine = super::engine(args.backend, args.threads, args.kernels, spec)?;
    let chunk_bytes = chunk_bytes_for(&engine);
    let keyed = KeyedCipher::new(engine, spec, &key)?.allow_short_gcm_iv(args.allow_short_gcm_iv);
    let cipher = Cipher::from_keyed(keyed, iv.as_deref().map(|iv| iv.as_slice()))?
        .padding(!args.no_pad)
        .implementation(if args.reference {
            Implementation::Reference
        } else {
            Implementation::Fast
        });
    let aad = aad.as_deref().map(|aad| aad.as_slice());
    // Only an explicit `-o -` sends binary to a terminal.
    if args.output.is_none() && std::io::stdout().is_terminal() {
        return Err(Failure(format!(
            "refusing to write {} bytes to the terminal: use -o FILE, a pipe, or -o - to insist",
            match direction {
                Direction::Encrypt => "encrypted",
                Direction::Decrypt => "decrypted",
            }
        )));
    }
    let input_path = args.input.as_deref().filter(|path| *path != Path::new("-"));
    // A file stays a `File`: GCM decryption reads a regular one twice in place.
    let mut input: Option<File> = input_path.map(parcrypt::files::open_input).transpose()?;
    let total = file_size(input_path);
    let output_for = || -> Result<Output, Failure> {
        let mut output = Output::create(
            args.output.as_deref(),
            args.input.as_deref(),
            args.overwrite,
        )?;
        if let Some(length) = total {
            // The output is about as long as the input (plus a tag or padding block).
            output.reserve(length + 32);
        }
        Ok(output)
    };
    if spec.mode == Mode::Gcm && direction == Direction::Decrypt {
        // Authenticate first, decrypt only after the tag matched: no byte is released (to a
        // file, a temporary file or stdout) before.
        let bars = [
            Progress::new(args.quiet, None, "reading"),
            Progress::new(args.quiet, total, "authenticating"),
            Progress::new(args.quiet, total, "decrypting"),
        ];
        let report = |phase: Phase, bytes: u64| {
            let index = match phase {
                Phase::Spooling => 0,
                Phase::Authenticating => 1,
                Phase::Decrypting => 2,
            };
            bars[..index].iter().for_each(Progress::finish);
            bars[index].update(bytes);
        };
        // Issue 31 finding 7: a file read twice in place only when the output is a file
        // of ours that a failure deletes; stdout or a FIFO get a copy's plaintext.
        let destination = if output_is_discardable(
            args.output.as_deref(),
            args.input.as_deref(),
            args.overwrite,
        )? {
            Destination::Discardable
        } else {
            Destination::Irrevocable
        };
        let options = OpenOptions {
            chunk_bytes,
            destination,
            progress: Some(&report),
            ..OpenOptions::default()
        };
        let authenticated = match input.as_mut() {
            Some(file) => Authenticated::file(&cipher, aad, file, &options)?,
            None => Authenticated::stream(&cipher, aad, &mut std::io::stdin(), &options)?,
        };
        // The output is made only now: nothing exists beside it before the tag matched,
        // whatever stops the run.
        let mut output = output_for()?;
        authenticated.decrypt(output.writer(), &options)?;
        bars[2].finish();
        return output.commit();
    }
    let crypter = match direction {
        Direction::Encrypt => cipher.encryptor(aad)?,
        Direction::Decrypt => cipher.decryptor(aad)?,
    };
    let mut output = output_for()?;
    let progress = Progress::new(
        args.quiet,
        total,
        match direction {
            Direction::Encrypt => "encrypting",
            Direction::Decrypt => "decrypting",
        },
    );
    let report = |bytes: u64| progress.update(bytes);
    let mut stdin = std::io::stdin();
    let reader: &mut (dyn Read + Send) = match input.as_mut() {
        Some(file) => file,
        None => &mut stdin,
    };
    process_stream_with_progress(crypter, reader, output.writer(), chunk_bytes, Some(&report))?;
    progress.finish();
    output.commit()
}
