//! `results.json`: the run, every record, the notes, and the seed comparisons.

use serde::Serialize;

use crate::record::{BenchRecord, Note, Report, RunInfo};
use crate::summary::{Comparison, Summary};

#[derive(Serialize)]
struct Document<'a> {
    run: &'a RunInfo,
    records: &'a [BenchRecord],
    notes: &'a [Note],
    /// Derived from the records, for readers that want the headline figures only.
    comparisons: Vec<&'a Comparison>,
}

/// Pretty-printed JSON, one field per line, ending in a newline.
pub fn render(report: &Report, summaries: &[Summary]) -> std::io::Result<String> {
    let document = Document {
        run: &report.run,
        records: &report.records,
        notes: &report.notes,
        comparisons: summaries
            .iter()
            .flat_map(|summary| &summary.comparisons)
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&document)?;
    text.push('\n');
    Ok(text)
}
