//! OpenSSL as the reference measured in the same run: `openssl speed -evp` for data in
//! memory, `openssl enc` for files.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use parcrypt_modes::{CipherSpec, Direction};

use crate::throughput::bench_key_iv;

/// The largest buffer `openssl speed` is asked to time: it allocates several of them.
pub const MAX_SPEED_BYTES: usize = 64 << 20;

/// OpenSSL's name for a parcrypt cipher, when OpenSSL has it, and whether it needs the
/// legacy provider (Blowfish).
pub fn evp_name(spec: &str) -> Option<(String, bool)> {
    if spec.starts_with("rc6") {
        return None;
    }
    Some((spec.to_string(), spec.starts_with("bf-")))
}

/// `openssl version`, or `None` without OpenSSL.
pub fn version() -> Option<String> {
    let output = Command::new("openssl")
        .arg("version")
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// What to ask `openssl speed` for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpeedQuery<'a> {
    pub spec: &'a str,
    pub direction: Direction,
    /// Bytes per EVP call (`-bytes`): the job size.
    pub bytes: usize,
    /// `-seconds`: OpenSSL's own timing loop runs this long.
    pub seconds: u32,
    /// `-multi`: independent processes, each with its own buffer.
    pub processes: usize,
    /// `--kernels`: `OPENSSL_ia32cap` hides the features above this family.
    pub kernels: Option<parcrypt_ciphers::KernelFamily>,
}

/// Bytes per second from `openssl speed -evp NAME -bytes N -seconds S -mr [-multi P]
/// [-decrypt]`, or `None` when OpenSSL is missing, does not know the cipher, or fails.
pub fn speed_of(query: &SpeedQuery<'_>) -> Option<f64> {
    let (name, legacy) = evp_name(query.spec)?;
    let mut command = Command::new("openssl");
    command.arg("speed");
    if legacy {
        command.args(["-provider", "legacy", "-provider", "default"]);
    }
    command.args([
        "-evp",
        &name,
        "-bytes",
        &query.bytes.to_string(),
        "-seconds",
        &query.seconds.max(1).to_string(),
        "-mr",
    ]);
    if query.processes > 1 {
        command.args(["-multi", &query.processes.to_string()]);
    }
    if query.direction == Direction::Decrypt {
        command.arg("-decrypt");
    }
    if let Some(mask) = query.kernels.and_then(crate::masks::openssl_ia32cap) {
        command.env("OPENSSL_ia32cap", mask);
    }
    let output = command.stderr(Stdio::null()).output().ok()?;
    if !output.status.success() {
        return None;
    }
    parse_speed(&String::from_utf8_lossy(&output.stdout)).filter(|rate| *rate > 0.0)
}

/// Reads the `+F:index:NAME:bytes_per_second` line of `openssl speed -mr` (the summed line
/// comes last under `-multi`).
pub fn parse_speed(text: &str) -> Option<f64> {
    text.lines()
        .rfind(|line| line.starts_with("+F:"))
        .and_then(|line| line.rsplit(':').next())
        .and_then(|value| value.trim().parse().ok())
}

/// Wall time of one `openssl enc` pass over a file (`-nosalt`, the benchmark's key and IV),
/// or `None` without OpenSSL or when it fails (GCM: `enc` has no AEAD modes).
pub fn enc_file(
    spec: CipherSpec,
    direction: Direction,
    from: &Path,
    to: &Path,
) -> Option<Duration> {
    let (name, legacy) = evp_name(&spec.to_string())?;
    let (key, iv) = bench_key_iv(spec);
    let mut command = Command::new("openssl");
    command.args([
        "enc",
        &format!("-{name}"),
        "-K",
        &hex::encode(key),
        "-nosalt",
    ]);
    if legacy {
        command.args(["-provider", "legacy", "-provider", "default"]);
    }
    if let Some(iv) = &iv {
        command.args(["-iv", &hex::encode(iv)]);
    }
    if direction == Direction::Decrypt {
        command.arg("-d");
    }
    command
        .arg("-in")
        .arg(from)
        .arg("-out")
        .arg(to)
        .stderr(Stdio::null());
    let start = Instant::now();
    let status = command.status().ok()?;
    status.success().then(|| start.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_last_summary_line() {
        let text = "+DT:AES-128-CTR:1:16384\n+R:796075:AES-128-CTR:0.99\n+H:16384\n\
                    Got: +F:25:AES-128-CTR:12946980864.00 from 0\n+F:25:AES-128-CTR:25938460672.00\n";
        assert_eq!(parse_speed(text), Some(25938460672.0));
        assert_eq!(parse_speed("nothing here"), None);
    }

    #[test]
    fn rc6_has_no_openssl_twin() {
        assert_eq!(evp_name("rc6-128-ctr"), None);
        assert_eq!(evp_name("bf-cbc"), Some(("bf-cbc".into(), true)));
    }
}
