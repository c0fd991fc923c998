//! Thin exporters over one run: a terminal table, JSON, CSV and Markdown. None of them
//! computes anything: figures come from the records, tables from [`crate::summary`].

pub mod csv;
pub mod json;
pub mod markdown;
pub mod table;

use std::io;
use std::path::{Path, PathBuf};

use crate::record::Report;
use crate::scenario;

/// The files of a finished run, next to its `results.jsonl`.
pub const JSON_FILE: &str = "results.json";
pub const JSON_LINES_FILE: &str = "results.jsonl";
pub const CSV_FILE: &str = "results.csv";
pub const MARKDOWN_FILE: &str = "results.md";
/// The report with plots that `--report` writes.
pub const REPORT_FILE: &str = "README.md";

/// Writes `results.json`, `results.csv` and `results.md` into `folder`.
pub fn write_results(folder: &Path, report: &Report) -> io::Result<Vec<PathBuf>> {
    let summaries = scenario::summarize(report);
    let files = [
        (JSON_FILE, json::render(report, &summaries)?),
        (CSV_FILE, csv::render(&report.records)?),
        (MARKDOWN_FILE, markdown::render(report, &summaries, &[])),
    ];
    let mut written = Vec::new();
    for (name, text) in files {
        let path = folder.join(name);
        std::fs::write(&path, text)?;
        written.push(path);
    }
    Ok(written)
}

/// Reads a run back: `results.json` when the run finished, else the lines it wrote.
pub fn read_results(folder: &Path) -> Result<Report, String> {
    let json = folder.join(JSON_FILE);
    if json.exists() {
        let text = std::fs::read_to_string(&json)
            .map_err(|error| format!("{}: {error}", json.display()))?;
        return serde_json::from_str(&text).map_err(|error| format!("{}: {error}", json.display()));
    }
    let lines = folder.join(JSON_LINES_FILE);
    let text = std::fs::read_to_string(&lines).map_err(|error| {
        format!(
            "{}: {error} (no {JSON_FILE} either: is this a `parcrypt-lab --output` folder?)",
            lines.display()
        )
    })?;
    Report::from_json_lines(&text).map_err(|error| format!("{}: {error}", lines.display()))
}

/// Writes `README.md` into `folder`: the run's tables and comparisons with every PNG plot
/// found there (from `scripts/plot_results.py`).
pub fn write_report(folder: &Path, report: &Report) -> io::Result<PathBuf> {
    let mut plots: Vec<String> = std::fs::read_dir(folder)?
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with(".png"))
        .collect();
    plots.sort();
    let summaries = scenario::summarize(report);
    let path = folder.join(REPORT_FILE);
    std::fs::write(&path, markdown::render(report, &summaries, &plots))?;
    Ok(path)
}
