//! `results.csv`: one row per record, the record's fields as columns in their order.

use crate::record::{BenchRecord, Timing};

pub fn render(records: &[BenchRecord]) -> std::io::Result<String> {
    let mut writer = ::csv::Writer::from_writer(Vec::new());
    for record in records {
        writer.serialize(record)?;
    }
    let bytes = writer.into_inner().map_err(|error| error.into_error())?;
    let text = String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8");
    if records.is_empty() {
        // serde writes the header with the first record; an empty run still gets one.
        let placeholder = BenchRecord::new("", "", "", "", 0, 0, Timing::EndToEnd);
        let full = render(&[placeholder])?;
        return Ok(full.lines().next().unwrap_or_default().to_string() + "\n");
    }
    Ok(text)
}
