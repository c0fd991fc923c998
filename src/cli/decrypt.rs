//! `parcrypt decrypt`: the envelope is read first (it says whether a key, a passphrase or
//! an identity is needed), the secret checked against its commitment (and a recipient
//! header's MAC), and only then is the output made;
//! the plaintext streams through the library's pipeline, whole or as a `--range`.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use parcrypt::errors::FormatError;
use parcrypt::hazmat::chunks::{CHUNK_BYTES, SEALED_CHUNK_BYTES};
use parcrypt::secrets;
use parcrypt::Engine;
use parcrypt::SecretBytes;
use parcrypt::StreamOptions;
use parcrypt::{ByteRange, ChunkBatcher, Decryptor, Format, KdfLimits, Secret, UnlockedDecryptor};

use super::encrypt::{run_to_output, secret_of, take_key, DecryptArgs, FileFormat};
use super::files::{check_output, file_size, open_input, plain};
use super::Failure;

pub fn run(mut args: DecryptArgs) -> Result<(), Failure> {
    let common = &mut args.common;
    let context = secrets::decode_hex("--context", common.context.as_deref().unwrap_or(""))?;
    let key = take_key(common)?;
    if common.format == FileFormat::Cobblestone && key.is_none() {
        return Err(Failure(
            "--format cobblestone needs --key or --key-file".into(),
        ));
    }
    let range: Option<ByteRange> = args.range.as_deref().map(str::parse).transpose()?;
    // Every refusal of the destination comes before the prompt and the key derivation.
    check_output(
        common.output.as_deref(),
        common.input.as_deref(),
        common.overwrite,
    )?;
    // An age file (by --format age or its first line) goes to the age decryption.
    let (prefix, input) = match (range, args.common.input.as_deref()) {
        (Some(_), Some(path)) if path != Path::new("-") => {
            let file = File::open(path).map_err(|error| {
                Failure(format!(
                    "cannot open input '{}': {}",
                    path.display(),
                    plain(&error)
                ))
            })?;
            (read_prefix(&mut (&file))?, None)
        }
        (_, path) => {
            let mut input = open_input(path)?;
            (read_prefix(&mut input)?, Some(input))
        }
    };
    if args.common.format == FileFormat::Age || parcrypt::age::is_age(&prefix) {
        if key.is_some() {
            return Err(Failure(
                "this is an age file: give -i IDENTITY_FILE (or a passphrase), not --key/--key-file"
                    .into(),
            ));
        }
        let input = input.unwrap_or_else(|| Box::new(io::empty()));
        return super::age::decrypt(&args, prefix, input, range);
    }
    let common = &args.common;
    let engine = common.file_engine()?;
    let decryption = Decryption {
        args: &args,
        engine,
        key,
        context,
    };
    // Random access needs to seek: a file, not a pipe.
    match (range, args.common.input.as_deref()) {
        (None, _) => {
            let input = io::Cursor::new(prefix).chain(input.expect("opened above"));
            decryption.run(input, true, UnlockedDecryptor::decrypt_to)
        }
        (Some(range), Some(path)) if path != Path::new("-") => decryption.run(
            open_seekable(path)?,
            false,
            |unlocked, batcher, writer, options| {
                unlocked.decrypt_range_to(batcher, range, writer, options)
            },
        ),
        (Some(_), _) => Err(Failure(
            "--range needs an INPUT file that can seek, not stdin".into(),
        )),
    }
}

/// A decryption whose destination has been checked and whose engine is built: what is left
/// is to unlock the input and decrypt it.
struct Decryption<'a> {
    args: &'a DecryptArgs,
    engine: Engine,
    key: Option<SecretBytes>,
    context: SecretBytes,
}

impl Decryption<'_> {
    /// Unlocks `input` ([`unlock`]), then decrypts it with `decrypt`: the output is made only
    /// now, so a wrong key or passphrase, or a foreign file, leaves nothing behind.
    /// `estimate`: whether the progress bar may assume the whole input is decrypted.
    fn run<R: Read>(
        self,
        input: R,
        estimate: bool,
        decrypt: impl FnOnce(
            UnlockedDecryptor<R>,
            &dyn ChunkBatcher,
            &mut (dyn Write + Send),
            &StreamOptions<'_>,
        ) -> Result<u64, FormatError>,
    ) -> Result<(), Failure> {
        let common = &self.args.common;
        let limits = self.args.kdf_limits();
        let (unlocked, envelope_bytes) = unlock(self.args, input, self.key, &self.context, limits)?;
        let plaintext_estimate = file_size(common.input.as_deref()).map(|size| {
            let sealed = size.saturating_sub(envelope_bytes as u64);
            sealed / SEALED_CHUNK_BYTES as u64 * CHUNK_BYTES as u64
                + sealed % SEALED_CHUNK_BYTES as u64
        });
        let total = plaintext_estimate.filter(|_| estimate);
        run_to_output(
            common,
            &self.engine,
            total,
            ["decrypting", "decrypted"],
            |batcher, writer, options| decrypt(unlocked, batcher, writer, options),
        )
    }
}

/// Reads the envelope, gets the secret it needs (a key, a passphrase, or `-i` identities)
/// and checks it; returns the unlocked message and the envelope's length.
fn unlock<R: Read>(
    args: &DecryptArgs,
    input: R,
    key: Option<SecretBytes>,
    context: &[u8],
    limits: KdfLimits,
) -> Result<(UnlockedDecryptor<R>, usize), Failure> {
    let common = &args.common;
    let format = match common.format {
        FileFormat::Cobblestone => Format::Cobblestone,
        _ => Format::Parcrypt,
    };
    let decryptor = match Decryptor::new(format, input) {
        Err(FormatError::NotParcrypt) => {
            return Err(Failure(
                "not a parcrypt file (no parcrypt header; for a bare Cobblestone message use --format cobblestone with --key)".into(),
            ))
        }
        other => other?,
    }
    .kdf_limits(limits);
    let envelope_bytes = decryptor.envelope().len();
    if decryptor.envelope().needs_identity() {
        if key.is_some() {
            return Err(Failure(
                "this file was encrypted to recipients: give -i IDENTITY_FILE, not --key/--key-file"
                    .into(),
            ));
        }
        if args.age.identities.is_empty() {
            return Err(Failure(
                "this file was encrypted to recipients: give -i IDENTITY_FILE".into(),
            ));
        }
        let identities = super::age::identities(&args.age)?;
        let unlocked = decryptor.unlock(Secret::Identities(&identities), context)?;
        return Ok((unlocked, envelope_bytes));
    }
    if !args.age.identities.is_empty() {
        let kind = if decryptor.envelope().needs_passphrase() {
            "a passphrase"
        } else {
            "a key"
        };
        return Err(Failure(format!(
            "-i is for files encrypted to recipients, and this one was encrypted with {kind}"
        )));
    }
    // A header over the budget is refused before the passphrase is asked for.
    decryptor.check_kdf()?;
    let passphrase = match (decryptor.envelope().needs_passphrase(), &key) {
        (true, Some(_)) => {
            return Err(Failure(
                "this file was encrypted with a passphrase, not a key: drop --key/--key-file"
                    .into(),
            ))
        }
        (true, None) => Some(super::encrypt::read_passphrase(
            common.passphrase_file.as_deref(),
            false,
        )?),
        (false, None) => {
            return Err(Failure(
                "this file was encrypted with a key: give --key or --key-file".into(),
            ))
        }
        (false, Some(_)) => None,
    };
    let unlocked = decryptor.unlock(secret_of(&key, &passphrase)?, context)?;
    Ok((unlocked, envelope_bytes))
}

/// The first bytes of the input, to recognise an age file (`parcrypt::age::read_prefix`).
fn read_prefix(input: &mut dyn Read) -> Result<Vec<u8>, Failure> {
    parcrypt::age::read_prefix(input)
        .map_err(|error| Failure(format!("cannot read input: {}", plain(&error))))
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
