//! OpenSSL as the reference measured in the same run.

use std::process::Command;

/// OpenSSL's name for a parcrypt cipher, when OpenSSL has it, and whether it needs the
/// legacy provider (Blowfish).
pub fn evp_name(spec: &str) -> Option<(String, bool)> {
    if spec.starts_with("rc6") {
        return None;
    }
    Some((spec.to_string(), spec.starts_with("bf-")))
}

/// Bytes per second from `openssl speed -evp NAME -bytes N -seconds S -mr [-multi P]`,
/// or `None` when OpenSSL is missing or does not know the cipher.
pub fn speed(spec: &str, bytes: usize, seconds: u32, processes: usize) -> Option<f64> {
    let (name, legacy) = evp_name(spec)?;
    let mut command = Command::new("openssl");
    command.arg("speed");
    if legacy {
        command.args(["-provider", "legacy", "-provider", "default"]);
    }
    command.args(["-evp", &name, "-bytes", &bytes.to_string(), "-seconds", &seconds.to_string(), "-mr"]);
    if processes > 1 {
        command.args(["-multi", &processes.to_string()]);
    }
    let output = command.output().ok()?;
    if !output.status.success() {
        return None;
    }
    parse_speed(&String::from_utf8_lossy(&output.stdout))
}

/// Reads the `+F:index:NAME:bytes_per_second` line of `openssl speed -mr` (the summed line
/// comes last under `-multi`).
pub fn parse_speed(text: &str) -> Option<f64> {
    text.lines().rfind(|line| line.starts_with("+F:"))
        .and_then(|line| line.rsplit(':').next())
        .and_then(|value| value.trim().parse().ok())
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
