//! `parcrypt bench`, the installed speed check: a table of MB/s per backend after every
//! backend was checked against seq, or the same figures as JSON; the lab's old flags still
//! reach `parcrypt-lab` with one line saying so. (No speed is asserted: the figures are
//! whatever the machine gives.)

use std::process::{Command, Output};

#[path = "support/process.rs"]
mod process;

/// A small, fast run: one cipher, one size, seq and pool on two threads, three runs.
const SMALL: [&str; 9] = [
    "bench",
    "--ciphers",
    "aes-128-ctr,aes-128-cbc",
    "--sizes",
    "4K",
    "--backends",
    "seq,pool",
    "--threads=2",
    "--repeat=3",
];

fn parcrypt(arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_parcrypt"))
        .args(arguments)
        .output()
        .expect("parcrypt runs")
}

#[test]
fn the_table_has_a_column_per_backend_and_says_what_the_figures_are() {
    let output = parcrypt(&SMALL);
    process::assert_success(&output, "parcrypt bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let heading = stdout
        .lines()
        .find(|line| line.starts_with("cipher "))
        .unwrap_or_else(|| panic!("no table heading in:\n{stdout}"));
    let columns: Vec<&str> = heading.split("  ").map(str::trim).collect();
    for column in ["cipher", "dir", "size", "seq", "pool x2", "fastest"] {
        assert!(columns.contains(&column), "no {column} column: {heading}");
    }
    // CTR is timed one way, CBC both ways: three rows, each with a figure per backend.
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("aes-128-"))
        .collect();
    assert_eq!(rows.len(), 3, "rows in:\n{stdout}");
    for row in &rows {
        let cells: Vec<&str> = row.split_whitespace().collect();
        // cipher, dir, size (two words), seq, pool x2, and the fastest backend's label.
        let seq: f64 = cells[4].parse().unwrap_or_else(|_| panic!("{row}"));
        let pool: f64 = cells[5].parse().unwrap_or_else(|_| panic!("{row}"));
        assert!(seq > 0.0 && pool > 0.0, "{row}");
        assert!(row.ends_with("seq") || row.ends_with("pool x2"), "{row}");
    }
    assert!(stdout.contains("median of 3 timed runs"), "{stdout}");
    assert!(
        stdout.contains("every backend gave seq's bytes"),
        "{stdout}"
    );
    // The product's bench runs no other program: no OpenSSL, no scenarios.
    assert!(!stdout.contains("OpenSSL:"), "{stdout}");
    assert!(!stdout.contains("== "), "{stdout}");
}

#[test]
fn json_carries_every_figure_with_its_spread() {
    let mut arguments = SMALL.to_vec();
    arguments.push("--json");
    let output = parcrypt(&arguments);
    process::assert_success(&output, "parcrypt bench --json");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("{error}: {}", String::from_utf8_lossy(&output.stdout)));
    assert_eq!(json["threads"], 2);
    assert!(json["checked"].as_u64() > Some(0));
    let figures = json["figures"].as_array().expect("figures");
    // (ctr encrypt, cbc encrypt, cbc decrypt) x (seq, pool)
    assert_eq!(figures.len(), 6, "{json}");
    for figure in figures {
        assert_eq!(figure["bytes"], 4096, "{figure}");
        assert_eq!(figure["runs"], 3, "{figure}");
        let (min, median, max) = (
            figure["min_s"].as_f64().unwrap(),
            figure["median_s"].as_f64().unwrap(),
            figure["max_s"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= median && median <= max, "{figure}");
        assert!(figure["mb_per_s"].as_f64() > Some(0.0), "{figure}");
    }
    let backends: Vec<&str> = figures
        .iter()
        .map(|figure| figure["backend"].as_str().unwrap())
        .collect();
    assert!(backends.contains(&"seq") && backends.contains(&"pool"));
}

#[test]
fn an_absent_gpu_backend_is_one_short_line() {
    let output = parcrypt(&[
        "bench",
        "--quick",
        "--ciphers",
        "aes-128-ctr",
        "--sizes",
        "4K",
        "--repeat=1",
        "--threads=2",
    ]);
    process::assert_success(&output, "parcrypt bench --quick");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for line in stdout
        .lines()
        .filter(|line| line.starts_with("GPU backend:"))
    {
        assert!(!line.contains("backend unavailable:"), "long line: {line}");
        if line.contains("not available here") {
            assert!(line.len() < 120, "unavailable line too long: {line}");
        }
    }
    assert!(!stdout.contains("could not load"), "{stdout}");
}

#[test]
fn a_lab_flag_says_where_it_went_and_runs_the_lab() {
    // A copy of parcrypt in a folder of its own, with a stand-in lab that shows its
    // arguments: the old command line must reach it unchanged.
    let folder = tempfile::tempdir().expect("temp dir");
    let copy = folder.path().join("parcrypt");
    std::fs::copy(env!("CARGO_BIN_EXE_parcrypt"), &copy).expect("copy parcrypt");

    let output = Command::new(&copy)
        .args(["bench", "--scenario", "s0", "--quick"])
        .output()
        .expect("parcrypt runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].contains("parcrypt-lab --scenario s0 --quick"),
        "{stderr}"
    );
    assert!(
        lines[1].starts_with("parcrypt: error: parcrypt-lab is not in ")
            && lines[1].contains("cargo build --release -p parcrypt-lab"),
        "{stderr}"
    );

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let lab = folder.path().join("parcrypt-lab");
        std::fs::write(&lab, "#!/bin/sh\necho \"lab ran with: $*\"\nexit 3\n").expect("lab");
        std::fs::set_permissions(&lab, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        for (arguments, expected) in [
            (
                &["bench", "--peers=pyca,evp", "--sizes", "64"][..],
                "lab ran with: --peers=pyca,evp --sizes 64",
            ),
            (
                &["bench", "--report", "out"][..],
                "lab ran with: --report out",
            ),
            (
                &["bench", "--quick", "--no-openssl"][..],
                "lab ran with: --quick --no-openssl",
            ),
        ] {
            let output = Command::new(&copy)
                .args(arguments)
                .output()
                .expect("parcrypt runs");
            // The lab's exit status is the command's.
            assert_eq!(output.status.code(), Some(3), "{arguments:?}");
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert_eq!(stdout.trim(), expected);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains("moved to the benchmark lab"), "{stderr}");
        }
    }
}

#[test]
fn json_and_a_lab_flag_together_are_a_usage_error() {
    let output = parcrypt(&["bench", "--json", "--scenario", "s0"]);
    assert_eq!(output.status.code(), Some(2));
}
