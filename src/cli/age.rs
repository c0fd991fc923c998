//! age v1 files on the command line: `parcrypt keygen`, `encrypt --format age` and the age
//! side of `decrypt`. The library (`parcrypt::age`) does the work; this file turns the
//! arguments into recipients and identities and reports one-line errors.

use std::io::{self, IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use parcrypt::age::{
    self, Decryptor, Identity, Passphrase, Recipient, ScryptIdentity, ScryptRecipient,
    SeekableReader,
};
use parcrypt::ByteRange;

use super::encrypt::{read_passphrase, CommonArgs, DecryptArgs, EncryptArgs};
use super::files::{check_output, file_size, Output};
use super::Failure;

const KEYGEN_EXAMPLES: &str = "\
Examples:
  parcrypt keygen -o key.txt                  writes the identity (0600), prints its recipient
  parcrypt keygen --pq -o key-pq.txt          a post-quantum (ML-KEM-768 + X25519) identity
  parcrypt encrypt -r \"$(parcrypt keygen -o key.txt)\" notes.txt -o notes.txt.pc
  parcrypt decrypt -i key.txt notes.txt.pc -o notes.txt
  parcrypt encrypt --format age -r age1... notes.txt -o notes.txt.age   an age file
The file is in age-keygen's layout (# created, # public key, the secret key): age and
age-keygen 1.3 read it, and parcrypt reads theirs.";

#[derive(Args)]
#[command(after_help = KEYGEN_EXAMPLES)]
pub struct KeygenArgs {
    /// Write the identity to FILE (created with mode 0600; an existing file is refused) and
    /// print the recipient on stdout. Without it the identity file goes to stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// A post-quantum hybrid identity (ML-KEM-768 + X25519, age1pq1... recipients)
    #[arg(long)]
    pq: bool,
}

/// `parcrypt keygen`.
pub fn keygen(args: KeygenArgs) -> Result<(), Failure> {
    match args
        .output
        .as_deref()
        .filter(|path| *path != Path::new("-"))
    {
        Some(path) => {
            let recipient = age::write_identity_file(path, args.pq)
                .map_err(|error| Failure(error.to_string()))?;
            show!("{recipient}")
        }
        None => {
            let (text, recipient) = age::generate_identity_file(args.pq);
            let mut stdout = io::stdout().lock();
            stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                .map_err(|error| {
                    Failure(format!(
                        "cannot write output: {}",
                        parcrypt::files::plain(&error)
                    ))
                })?;
            if !io::stdout().is_terminal() {
                say!("Public key: {recipient}");
            }
            Ok(())
        }
    }
}

/// The age options of `encrypt`.
#[derive(Args)]
pub struct AgeEncryptArgs {
    /// Encrypt to RECIPIENT (age1... or age1pq1...), in parcrypt's format or with --format
    /// age; repeatable
    #[arg(short = 'r', long = "recipient", value_name = "RECIPIENT")]
    pub(super) recipients: Vec<String>,
    /// Encrypt to every recipient in FILE (one a line, # comments); repeatable
    #[arg(short = 'R', long = "recipients-file", value_name = "FILE")]
    pub(super) recipients_files: Vec<PathBuf>,
    /// age: encrypt to a passphrase (scrypt), from --passphrase-file, PARCRYPT_PASSPHRASE or
    /// the prompt
    #[arg(short = 'p', long = "passphrase")]
    pub(super) passphrase: bool,
    /// age: ASCII armor (PEM) around the file
    #[arg(short = 'a', long = "armor")]
    pub(super) armor: bool,
}

impl AgeEncryptArgs {
    /// Whether `-r` or `-R` was given.
    pub(super) fn has_recipients(&self) -> bool {
        !self.recipients.is_empty() || !self.recipients_files.is_empty()
    }

    pub(super) fn any(&self) -> bool {
        !self.recipients.is_empty()
            || !self.recipients_files.is_empty()
            || self.passphrase
            || self.armor
    }
}

/// The age options of `decrypt`.
#[derive(Args)]
pub struct AgeDecryptArgs {
    /// An identity file (age-keygen's layout) for a file encrypted to recipients, parcrypt's
    /// or age's; repeatable, tried in order
    #[arg(short = 'i', long = "identity", value_name = "FILE")]
    pub(super) identities: Vec<PathBuf>,
    /// age: the largest scrypt work factor (log2 N) a passphrase file may ask for [default: 22]
    #[arg(long, value_name = "LOG2N", value_parser = clap::value_parser!(u8).range(1..=30))]
    pub(super) scrypt_max_work_factor: Option<u8>,
}

/// The recipients of `-r` and `-R`, in order (none when neither is given).
pub(super) fn recipients(age_args: &AgeEncryptArgs) -> Result<Vec<Recipient>, Failure> {
    let mut recipients = Vec::new();
    for text in &age_args.recipients {
        recipients.push(
            text.parse::<Recipient>()
                .map_err(|error| Failure(format!("-r: {error}")))?,
        );
    }
    for path in &age_args.recipients_files {
        let found = age::read_recipients_file(path)
            .map_err(|error| Failure(format!("-R {}: {error}", path.display())))?;
        recipients.extend(found);
    }
    Ok(recipients)
}

/// Runs an age job on the threads `common` asks for: one for `--backend seq`, N for
/// `--threads N`, else every core. A GPU backend is refused: age's ChaCha20-Poly1305 payload
/// is sealed and opened on the CPU.
fn on_threads(
    common: &CommonArgs,
    work: impl FnOnce() -> Result<(), Failure> + Send,
) -> Result<(), Failure> {
    let threads = age::threads_for(common.backend, common.threads)
        .map_err(|error| Failure(error.to_string()))?;
    age::on_threads(threads, work).map_err(|error| Failure(error.to_string()))?
}

/// `parcrypt encrypt --format age`.
pub fn encrypt(args: &EncryptArgs) -> Result<(), Failure> {
    on_threads(&args.common, || encrypt_here(args))
}

fn encrypt_here(args: &EncryptArgs) -> Result<(), Failure> {
    let common = &args.common;
    let age_args = &args.age;
    if common.key.is_some() || common.key_file.is_some() {
        return Err(Failure(
            "--format age takes recipients (-r, -R) or a passphrase (-p), not --key/--key-file"
                .into(),
        ));
    }
    if common.context.is_some() {
        return Err(Failure("--context is not part of the age format".into()));
    }
    let mut recipients = recipients(age_args)?;
    if age_args.passphrase && !recipients.is_empty() {
        return Err(Failure(
            "a passphrase (-p) must be an age file's only recipient: drop -r/-R or -p".into(),
        ));
    }
    if !age_args.passphrase && recipients.is_empty() {
        return Err(Failure(
            "--format age needs recipients (-r RECIPIENT, -R FILE) or a passphrase (-p)".into(),
        ));
    }
    if !recipients.is_empty() {
        Recipient::check_combination(&recipients).map_err(|error| Failure(error.to_string()))?;
    }
    let to_terminal = match common.output.as_deref() {
        Some(path) if path != Path::new("-") => parcrypt::files::is_terminal(path),
        _ => io::stdout().is_terminal(),
    };
    if to_terminal && !age_args.armor {
        return Err(Failure(
            "refusing to write encrypted bytes to the terminal: use -o FILE, a pipe or -a".into(),
        ));
    }
    check_output(
        common.output.as_deref(),
        common.input.as_deref(),
        common.overwrite,
    )?;
    let mut input = super::files::open_input(common.input.as_deref())?;
    if age_args.passphrase {
        let passphrase = read_passphrase(common.passphrase_file.as_deref(), true)?;
        recipients.push(Recipient::from(ScryptRecipient::new(Passphrase::new(
            passphrase.to_vec(),
        ))));
    }
    let mut output = Output::create(
        common.output.as_deref(),
        common.input.as_deref(),
        common.overwrite,
    )?;
    if let Some(size) = file_size(common.input.as_deref()) {
        // The payload, a tag per 64 KiB chunk and room for the header (armor: 4/3 of it).
        let sealed = size + size / 4096 + 4096;
        output.reserve(if age_args.armor {
            sealed / 3 * 4 + sealed / 48
        } else {
            sealed
        });
    }
    let mut writer = age::encrypt(&recipients, age_args.armor, output.writer())
        .map_err(|error| Failure(error.to_string()))?;
    // Whole batches read straight into the writer's buffer, the next read while one is
    // sealed (`io::copy` would feed it 8 KiB at a time and never read ahead).
    writer
        .copy_from(&mut input)
        .map_err(|error| Failure(plain_io(&error)))?;
    writer
        .finish()
        .map_err(|error| Failure(error.to_string()))?;
    output.commit()
}

/// An I/O error's message, an age error inside it as its own one line.
fn plain_io(error: &io::Error) -> String {
    match error.get_ref() {
        Some(inner) => inner.to_string(),
        None => parcrypt::files::plain(error),
    }
}

/// Reads `-i` files, warning about one that others can read (as ssh does).
pub(super) fn identities(args: &AgeDecryptArgs) -> Result<Vec<Identity>, Failure> {
    let mut identities = Vec::new();
    for path in &args.identities {
        if let Some(warning) = age::identity_file_warning(path) {
            say!("parcrypt: warning: {warning}");
        }
        let found = age::read_identity_file(path)
            .map_err(|error| Failure(format!("-i {}: {error}", path.display())))?;
        identities.extend(found);
    }
    Ok(identities)
}

/// The identities for a header: the passphrase for an scrypt file, else the `-i` files.
fn identities_for(args: &DecryptArgs, is_passphrase: bool) -> Result<Vec<Identity>, Failure> {
    if is_passphrase {
        let passphrase = read_passphrase(args.common.passphrase_file.as_deref(), false)?;
        let mut identity = ScryptIdentity::new(Passphrase::new(passphrase.to_vec()));
        if let Some(max) = args.age.scrypt_max_work_factor {
            identity = identity.max_work_factor(max);
        }
        return Ok(vec![identity.into()]);
    }
    let identities = identities(&args.age)?;
    if identities.is_empty() {
        return Err(Failure(
            "this age file is encrypted to recipients: give -i IDENTITY_FILE".into(),
        ));
    }
    Ok(identities)
}

/// `parcrypt decrypt` of an age file read from `input` (its first bytes already read into
/// `prefix`). The file key is unwrapped and the header's MAC checked before the output is
/// made; the output is a file that appears only if every chunk authenticated (stdout, a
/// FIFO or a device gets authenticated batches of 1-4 MiB, then the error).
pub fn decrypt(
    args: &DecryptArgs,
    prefix: Vec<u8>,
    input: Box<dyn Read + Send>,
    range: Option<ByteRange>,
) -> Result<(), Failure> {
    on_threads(&args.common, || decrypt_here(args, prefix, input, range))
}

fn decrypt_here(
    args: &DecryptArgs,
    prefix: Vec<u8>,
    input: Box<dyn Read + Send>,
    range: Option<ByteRange>,
) -> Result<(), Failure> {
    let common = &args.common;
    if common.key.is_some() || common.key_file.is_some() {
        return Err(Failure(
            "this is an age file: give -i IDENTITY_FILE (or a passphrase), not --key/--key-file"
                .into(),
        ));
    }
    if let Some(range) = range {
        let path = common.input.as_deref().expect("a range has a file");
        return decrypt_range(args, path, range);
    }
    let decryptor = Decryptor::new(io::Cursor::new(prefix).chain(input))
        .map_err(|error| Failure(error.to_string()))?;
    let identities = identities_for(args, decryptor.is_passphrase())?;
    let reader = decryptor
        .decrypt(&identities)
        .map_err(|error| Failure(error.to_string()))?;
    drop(identities);
    let mut output = Output::create(
        common.output.as_deref(),
        common.input.as_deref(),
        common.overwrite,
    )?;
    if let Some(size) = file_size(common.input.as_deref()) {
        output.reserve(size);
    }
    reader
        .decrypt_to(output.writer())
        .map_err(|error| Failure(error.to_string()))?;
    output.commit()
}

/// `--range` of a binary age file: only the chunks under the range are read and opened,
/// after the final chunk authenticated.
fn decrypt_range(args: &DecryptArgs, path: &Path, range: ByteRange) -> Result<(), Failure> {
    let common = &args.common;
    let file = std::fs::File::open(path).map_err(|error| {
        Failure(format!(
            "cannot open input '{}': {}",
            path.display(),
            parcrypt::files::plain(&error)
        ))
    })?;
    let is_passphrase = {
        let decryptor = Decryptor::new(&file).map_err(|error| Failure(error.to_string()))?;
        if decryptor.is_armored() {
            return Err(Failure(
                "--range needs a binary age file: an armored one must be decrypted whole".into(),
            ));
        }
        decryptor.is_passphrase()
    };
    let identities = identities_for(args, is_passphrase)?;
    let mut reader =
        SeekableReader::new(file, &identities).map_err(|error| Failure(error.to_string()))?;
    drop(identities);
    let (start, end) = range.resolve(reader.plaintext_len());
    let mut output = Output::create(
        common.output.as_deref(),
        common.input.as_deref(),
        common.overwrite,
    )?;
    reader
        .seek(SeekFrom::Start(start))
        .map_err(|error| Failure(plain_io(&error)))?;
    io::copy(
        &mut (&mut reader).take(end.saturating_sub(start)),
        output.writer(),
    )
    .map_err(|error| Failure(plain_io(&error)))?;
    output.commit()
}
