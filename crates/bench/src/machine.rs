//! What the report says about the machine, read from /proc and /etc where they exist.

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The host name.
pub fn host() -> String {
    read("/proc/sys/kernel/hostname")
        .or_else(|| read("/etc/hostname"))
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|| "unknown host".into())
}

/// The CPU's model name.
pub fn cpu_model() -> String {
    read("/proc/cpuinfo")
        .and_then(|text| {
            text.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, name)| name.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Installed memory in bytes (0 when unknown).
pub fn memory_bytes() -> u64 {
    read("/proc/meminfo")
        .and_then(|text| {
            let line = text
                .lines()
                .find(|line| line.starts_with("MemTotal:"))?
                .to_string();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kibibytes| kibibytes * 1024)
}

/// The operating system and kernel.
pub fn os() -> String {
    let name = read("/etc/os-release").and_then(|text| {
        text.lines().find_map(|line| {
            line.strip_prefix("PRETTY_NAME=")
                .map(|value| value.trim_matches('"').to_string())
        })
    });
    let kernel = read("/proc/sys/kernel/osrelease").map(|release| release.trim().to_string());
    match (name, kernel) {
        (Some(name), Some(kernel)) => format!("{name}, kernel {kernel}"),
        (Some(name), None) => name,
        (None, Some(kernel)) => format!("{} {kernel}", std::env::consts::OS),
        (None, None) => std::env::consts::OS.to_string(),
    }
}
