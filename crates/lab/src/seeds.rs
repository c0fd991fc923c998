//! The seed systems' published figures (docs: seeds.md), printed next to ours.

/// S0 (Monterrey 2018): one 17.9 MB PDF, AES-128, mean of 10 runs; Core i5-8250U (4C/8T)
/// and GeForce MX150.
pub mod s0 {
    pub const MACHINE: &str = "Core i5-8250U + GeForce MX150";
    pub const INPUT_BYTES: u64 = 17_900_000;
    /// Technology, encryption ms, decryption ms.
    pub const ROWS: [(&str, f64, f64); 6] = [
        ("C sequential", 2500.9, 3089.5),
        ("OpenMP parallel for", 826.3, 1004.2),
        ("Java sequential", 504.6, 704.0),
        ("Java Threads (static split)", 210.6, 212.6),
        ("Java ForkJoin (work stealing)", 203.8, 219.3),
        ("CUDA (timed an asynchronous launch only)", 0.0089, 0.0099),
    ];
}

/// S1 (UNESP): Blowfish and RC6 ECB on CUDA; Core i7-870 and GeForce GTX 465.
pub mod s1 {
    pub const MACHINE: &str = "Core i7-870 + GeForce GTX 465";
    pub const BLOWFISH_BEST_SPEEDUP: f64 = 24.0;
    pub const RC6_BEST_SPEEDUP: f64 = 17.0;
}

/// S2 (UFN 2025-26): AES-128 ECB, serial C++ against HIP, end to end; Ryzen 5 5600G and
/// Radeon RX 7600.
pub mod s2 {
    pub const MACHINE: &str = "Ryzen 5 5600G + Radeon RX 7600";
    /// The seven input sizes the seed's script generates.
    pub const SIZES: [&str; 7] = [
        "1 KB", "100 KB", "1 MB", "10 MB", "100 MB", "500 MB", "1 GB",
    ];
    /// GPU over CPU, encryption, at each of `SIZES`, as printed.
    pub const ENCRYPT_SPEEDUP: [&str; 7] = [
        "0.00x", "0.14x", "1.15x", "10.9x", "32.1x", "36.4x", "39.7x",
    ];
    /// GPU MB/s for encryption where published (1 KB, 1 MB, 100 MB, 1 GB), as printed.
    pub const ENCRYPT_GPU_MBPS: [&str; 7] = ["0.10", "-", "75", "-", "2,134", "-", "2,580"];
    pub const ENCRYPT_CPU_MBPS: (f64, f64) = (62.0, 68.0);
    pub const DECRYPT_CPU_MBPS: (f64, f64) = (48.0, 50.0);
    pub const DECRYPT_GPU_MBPS_1GB: f64 = 2540.0;
    pub const DECRYPT_BEST_SPEEDUP: (f64, f64) = (51.0, 52.0);
    pub const CROSSOVER: &str = "about 1 MB";
}

/// S3 (Hunan 2014): threads-per-block tuning of AES-128/192/256 on CUDA.
pub mod s3 {
    /// (GPU, [(mean %, peak %) for AES-128, AES-192, AES-256]).
    pub const GAINS: [(&str, [(f64, f64); 3]); 2] = [
        ("GeForce G210", [(5.3, 10.0), (14.6, 42.5), (12.5, 44.2)]),
        (
            "GeForce GTX 460",
            [(12.5, 45.5), (15.4, 47.9), (15.8, 47.2)],
        ),
    ];

    /// The seed's figures for one key size (128, 192 or 256 bits), as one line.
    pub fn gains_line(key_bits: u32) -> String {
        let column = match key_bits {
            128 => 0,
            192 => 1,
            _ => 2,
        };
        GAINS
            .iter()
            .map(|(gpu, gains)| format!("{gpu} {:.1} / {:.1} %", gains[column].0, gains[column].1))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// S4 (Incheon 2016): AES-128 with OpenCL on an ARM Mali GPU against OpenMP.
pub mod s4 {
    pub const MACHINE: &str = "ARM Mali GPU (OpenCL) vs OpenMP on its CPU";
    pub const INPUT: &str = "1000 KB";
    pub const TIME_FRACTION: f64 = 1.0 / 150.0;
    pub const ENERGY_FRACTION: f64 = 1.0 / 290.0;
    pub const ZERO_COPY_GAIN: &str = "up to +100 % performance, growing with input size";
}

#[cfg(test)]
mod tests {
    #[test]
    fn s3_lines_pick_the_key_size_column() {
        assert_eq!(
            super::s3::gains_line(192),
            "GeForce G210 14.6 / 42.5 %; GeForce GTX 460 15.4 / 47.9 %"
        );
    }
}
