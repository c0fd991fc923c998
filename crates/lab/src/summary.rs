//! What a report shows of a run: tables and comparisons with the seeds, derived from the
//! records alone (so `--report` can redraw them from `results.json`), in a form every
//! exporter renders the same way.

use serde::{Deserialize, Serialize};

use crate::record::{BenchRecord, Report};

pub use parcrypt_bench::report::{backend_line, mbps, size};

/// A table: a title, column headings, rows of cells, and notes under it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub notes: Vec<String>,
}

impl Table {
    pub fn new(title: impl Into<String>, columns: &[&str]) -> Self {
        Table {
            title: title.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(
            cells.len(),
            self.columns.len(),
            "row width of table '{}'",
            self.title
        );
        self.rows.push(cells);
    }

    pub fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }
}

/// A seed's published figure next to ours.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comparison {
    pub scenario: String,
    /// What is compared, in a few words.
    pub what: String,
    /// The seed's figure with its machine.
    pub seed: String,
    /// Ours, on this machine, with the backend that gave it.
    pub ours: String,
}

/// One scenario's part of a report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub scenario: String,
    pub title: String,
    pub tables: Vec<Table>,
    pub comparisons: Vec<Comparison>,
    /// The run's notes for this scenario (missing meters, skipped backends).
    pub notes: Vec<String>,
}

impl Summary {
    pub fn new(report: &Report, scenario: &str, title: &str) -> Self {
        Summary {
            scenario: scenario.into(),
            title: title.into(),
            tables: Vec::new(),
            comparisons: Vec::new(),
            notes: report
                .notes_of(scenario)
                .map(|note| note.text.clone())
                .collect(),
        }
    }

    pub fn compare(
        &mut self,
        what: impl Into<String>,
        seed: impl Into<String>,
        ours: impl Into<String>,
    ) {
        self.comparisons.push(Comparison {
            scenario: self.scenario.clone(),
            what: what.into(),
            seed: seed.into(),
            ours: ours.into(),
        });
    }
}

/// Milliseconds: whole above 100, else three significant digits.
pub fn ms(seconds: f64) -> String {
    let value = seconds * 1e3;
    match value {
        v if v >= 100.0 => format!("{v:.0}"),
        v if v >= 10.0 => format!("{v:.1}"),
        v if v >= 1.0 => format!("{v:.2}"),
        v if v > 0.0 => {
            let decimals = (2.0 - v.log10().floor()) as usize;
            format!("{v:.decimals$}")
        }
        v => format!("{v}"),
    }
}

/// A ratio as `12.3x`.
pub fn times(ratio: f64) -> String {
    match ratio {
        r if r >= 100.0 => format!("{r:.0}x"),
        r if r >= 10.0 => format!("{r:.1}x"),
        r if r >= 0.01 => format!("{r:.2}x"),
        r => format!("{r:.4}x"),
    }
}

/// A percentage with one decimal (never `-0.0`).
pub fn percent(fraction: f64) -> String {
    let value = (fraction * 1000.0).round() / 10.0;
    format!("{:.1} %", if value == 0.0 { 0.0 } else { value })
}

/// `enc`, `dec`, `copy`: directions in narrow columns.
pub fn short_direction(direction: &str) -> &str {
    match direction {
        "encrypt" => "enc",
        "decrypt" => "dec",
        other => other,
    }
}

/// Whether every cell of a column is a figure (or `-`): such columns are right-aligned.
pub fn is_figure_column(table: &Table, column: usize) -> bool {
    table.rows.iter().all(|row| {
        let cell = row[column].trim();
        cell == "-"
            || cell
                .trim_start_matches(['-', '+', '~'])
                .starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The mark put before a figure whose difference from its reference is within the noise.
pub const NOISE_MARK: &str = "~";

/// Whether `figure` and `reference` cannot be told apart by their own timed runs: their
/// ranges of run times (fastest to slowest run) overlap, so the difference between their
/// medians is smaller than the run-to-run noise. A figure measured by another program
/// (OpenSSL) has no spread: its one time must then fall inside the other's range.
pub fn within_noise(figure: &BenchRecord, reference: &BenchRecord) -> bool {
    let range = |record: &BenchRecord| {
        let low = if record.min_s > 0.0 {
            record.min_s
        } else {
            record.median_s
        };
        let high = record.max_s.max(low).max(record.median_s);
        (low.min(record.median_s), high)
    };
    let (low, high) = range(figure);
    let (reference_low, reference_high) = range(reference);
    low <= reference_high && reference_low <= high
}

/// The run-to-run noise of a figure: the spread of its timed runs (slowest minus fastest)
/// over its median, 0 when it has a single run or no spread.
pub fn noise(record: &BenchRecord) -> f64 {
    if record.median_s > 0.0 && record.max_s > record.min_s {
        (record.max_s - record.min_s) / record.median_s
    } else {
        0.0
    }
}

/// `text` with [`NOISE_MARK`] before it when `within` says the figure is inside the noise.
pub fn marked(text: String, within: bool) -> String {
    if within {
        format!("{NOISE_MARK}{text}")
    } else {
        text
    }
}

/// `-` for a missing figure.
pub fn or_dash(value: Option<String>) -> String {
    value.unwrap_or_else(|| "-".into())
}

/// How a backend is named in tables: `pool x2`, `opencl`, `cuda (kernel)`.
pub fn backend_label(record: &BenchRecord) -> String {
    use crate::record::Timing;
    let mut label = record.backend.clone();
    if matches!(record.backend.as_str(), "threads" | "pool" | "auto")
        || (record.backend == "openssl" && record.threads > 1)
    {
        label = format!("{label} x{}", record.threads);
    }
    if record.timing == Timing::KernelOnly {
        label += " (kernel)";
    } else if let Some(transfer) = &record.transfer {
        if transfer != "pageable" {
            label = format!("{label} ({transfer})");
        }
    }
    label
}

/// The sizes of `records`, smallest first, and their backend labels in order of first
/// appearance, with the GPU backends' labels apart.
pub fn sizes_and_labels(records: &[&BenchRecord]) -> (Vec<u64>, Vec<String>, Vec<String>) {
    let mut sizes = distinct(records, |record| record.bytes);
    sizes.sort_unstable();
    let labels = distinct(records, backend_label);
    let gpu_labels = labels
        .iter()
        .filter(|label| label.starts_with("opencl") || label.starts_with("cuda"))
        .cloned()
        .collect();
    (sizes, labels, gpu_labels)
}

/// The distinct values of `key` over `records`, in first-seen order.
pub fn distinct<T: PartialEq + Clone>(
    records: &[&BenchRecord],
    key: impl Fn(&BenchRecord) -> T,
) -> Vec<T> {
    let mut values = Vec::new();
    for record in records {
        let value = key(record);
        if !values.contains(&value) {
            values.push(value);
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(size(64), "64 B");
        assert_eq!(size(100 << 10), "100 KiB");
        assert_eq!(size(1 << 30), "1 GiB");
        assert_eq!(size(17_899_984), "17.9 MB");
        assert_eq!(ms(2.5009), "2501");
        assert_eq!(ms(0.0000089), "0.00890");
        assert_eq!(ms(0.000000097), "0.0000970");
        assert_eq!(ms(0.000458), "0.458");
        assert_eq!(ms(0.0123), "12.3");
        assert_eq!(mbps(2580.4), "2580");
        assert_eq!(mbps(0.1), "0.10");
        assert_eq!(times(39.71), "39.7x");
        assert_eq!(times(0.004), "0.0040x");
        assert_eq!(percent(0.455), "45.5 %");
        assert_eq!(percent(-0.0001), "0.0 %");
    }

    fn timed(backend: &str, min_s: f64, median_s: f64, max_s: f64) -> BenchRecord {
        let mut record = BenchRecord::new(
            "sweep",
            "aes-128-ctr",
            "encrypt",
            backend,
            2,
            1 << 20,
            crate::record::Timing::EndToEnd,
        );
        record.min_s = min_s;
        record.median_s = median_s;
        record.max_s = max_s;
        record
    }

    #[test]
    fn figures_whose_runs_overlap_are_within_the_noise() {
        let pool = timed("pool", 1.00, 1.10, 1.30);
        // auto's median is faster, but its slowest run is slower than pool's fastest.
        let auto = timed("auto", 0.95, 1.02, 1.05);
        assert!(within_noise(&auto, &pool));
        assert!(within_noise(&pool, &auto));
        // Every run of threads is faster than every run of pool: a real difference.
        let threads = timed("threads", 0.50, 0.55, 0.60);
        assert!(!within_noise(&threads, &pool));
        // OpenSSL reports one time: inside our range, or not.
        let openssl = timed("openssl", 1.2, 1.2, 1.2);
        assert!(within_noise(&openssl, &pool));
        assert!(!within_noise(&openssl, &threads));
        assert!((noise(&pool) - 0.3 / 1.1).abs() < 1e-12);
        assert_eq!(noise(&openssl), 0.0);
        assert_eq!(marked("7535".into(), true), "~7535");
        assert_eq!(marked("7535".into(), false), "7535");
    }

    #[test]
    fn an_unavailable_backend_is_one_short_line() {
        let long = "cuda backend unavailable: no CUDA driver: could not load libcuda.so, \
                    libcuda.so.13 (or 10 other spellings). Install the NVIDIA driver";
        assert_eq!(
            backend_line(long),
            "cuda: not available here (no CUDA driver)"
        );
        let opened = "opencl: #0 pthread-skylake (Portable Computing Language, CPU)";
        assert_eq!(backend_line(opened), opened);
        assert_eq!(
            backend_line("opencl backend unavailable: no OpenCL platform: libOpenCL loaded"),
            "opencl: not available here (no OpenCL platform)"
        );
    }
}
