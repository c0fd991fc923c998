//! `parcrypt-lab`'s sweep as a newcomer reads it: one short line per backend that is not there,
//! ratio columns that name what they are against, and the noise mark explained where used.
//! (Nothing here asserts a speed: the figures are whatever the machine gives.)

use std::process::Command;

#[test]
fn the_sweep_table_says_what_each_ratio_is_against() {
    let output = Command::new(env!("CARGO_BIN_EXE_parcrypt-lab"))
        .args([
            "--scenario",
            "sweep",
            "--quick",
            "--ciphers",
            "aes-128-ctr",
            "--sizes",
            "4K",
            "--file-size",
            "0",
            "--repeat",
            "3",
            "--no-openssl",
        ])
        .output()
        .expect("parcrypt-lab runs");
    assert!(
        output.status.success(),
        "parcrypt-lab --quick sweep: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);

    // Every GPU backend is one line, and one that is not here says so in a few words.
    let gpu_lines: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("GPU backend:"))
        .collect();
    for line in &gpu_lines {
        assert!(
            !line.contains("backend unavailable:"),
            "long unavailable line: {line}"
        );
        if line.contains("not available here") {
            assert!(line.len() < 120, "unavailable line too long: {line}");
        }
    }
    assert!(
        !stdout.contains("could not load"),
        "the loader's whole story is in the output:\n{stdout}"
    );

    // The table's heading names the reference of each ratio column.
    let heading = stdout
        .lines()
        .find(|line| line.starts_with("cipher ") && line.contains("seq"))
        .unwrap_or_else(|| panic!("no sweep table heading in:\n{stdout}"));
    assert!(heading.contains("best x openssl"), "{heading}");
    assert!(heading.contains("scaling vs seq x"), "{heading}");
    assert!(!heading.contains("best / openssl"), "{heading}");
    assert!(stdout.contains("MB/s (median; ~ within the noise of seq)"));

    // A `~` in the table comes with its legend.
    let table_rows: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("aes-128-ctr"))
        .collect();
    assert!(!table_rows.is_empty(), "no rows in:\n{stdout}");
    if table_rows.iter().any(|row| row.contains('~')) {
        assert!(
            stdout.contains("~ before a figure: its timed runs"),
            "a ~ without its legend:\n{stdout}"
        );
    }
}
