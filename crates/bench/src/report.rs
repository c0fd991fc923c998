//! A finished run as people read it (a table) and as programs read it (JSON).

use std::fmt::Write;

use crate::speed::{direction_name, Figure, Run};

/// Sizes as people read them: binary units when exact, decimal MB otherwise.
pub fn size(bytes: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    match bytes {
        b if b >= GIB && b % GIB == 0 => format!("{} GiB", b / GIB),
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= KIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        b if b >= 1_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        b => format!("{b} B"),
    }
}

/// A size as people write it: a number of bytes with an optional binary suffix (4096, 64K,
/// 16M, 1G); the error is a sentence for the command line.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let (number, multiplier) = match text.chars().last() {
        Some('K' | 'k') => (&text[..text.len() - 1], 1 << 10),
        Some('M' | 'm') => (&text[..text.len() - 1], 1 << 20),
        Some('G' | 'g') => (&text[..text.len() - 1], 1 << 30),
        _ => (text, 1),
    };
    number
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or_else(|| format!("'{text}' is not a size (e.g. 4096, 64K, 16M, 1G)"))
}

/// MB/s (10^6 bytes per second) with as many digits as mean something.
pub fn mbps(value: f64) -> String {
    match value {
        v if v >= 1000.0 => format!("{v:.0}"),
        v if v >= 10.0 => format!("{v:.1}"),
        v => format!("{v:.2}"),
    }
}

/// A line about one GPU backend, short: an unavailable backend's error becomes
/// `cuda: not available here (no CUDA driver)` (the first clause of its reason), any other
/// line stays as it is.
pub fn backend_line(line: &str) -> String {
    const UNAVAILABLE: &str = " backend unavailable: ";
    let Some(at) = line.find(UNAVAILABLE) else {
        return line.to_string();
    };
    let name = &line[..at];
    let reason = &line[at + UNAVAILABLE.len()..];
    let first = reason
        .split([':', '.', ';', '('])
        .next()
        .unwrap_or(reason)
        .trim();
    let first: String = if first.chars().count() > 60 {
        first.chars().take(57).collect::<String>() + "..."
    } else {
        first.to_string()
    };
    if first.is_empty() {
        format!("{name}: not available here")
    } else {
        format!("{name}: not available here ({first})")
    }
}

/// The run as a table: one row per cipher, direction and size, one MB/s column per backend
/// (median), the fastest backend last, and what the figures are under it.
pub fn table(run: &Run) -> String {
    let mut labels: Vec<String> = Vec::new();
    for figure in &run.figures {
        let label = figure.label();
        if !labels.contains(&label) {
            labels.push(label);
        }
    }
    let mut header: Vec<String> = vec!["cipher".into(), "dir".into(), "size".into()];
    header.extend(labels.iter().cloned());
    header.push("fastest".into());

    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut groups: Vec<&Figure> = Vec::new();
    for figure in &run.figures {
        let same = |other: &&Figure| {
            other.cipher == figure.cipher
                && other.direction == figure.direction
                && other.bytes == figure.bytes
        };
        if groups.iter().any(same) {
            continue;
        }
        groups.push(figure);
        let of_row: Vec<&Figure> = run.figures.iter().filter(|other| same(other)).collect();
        let mut row = vec![
            figure.cipher.to_string(),
            direction_name(figure.direction)[..3].to_string(),
            size(figure.bytes as u64),
        ];
        for label in &labels {
            row.push(
                of_row
                    .iter()
                    .find(|other| &other.label() == label)
                    .map_or_else(|| "-".into(), |other| mbps(other.mb_per_s())),
            );
        }
        let fastest = of_row
            .iter()
            .max_by(|a, b| a.mb_per_s().total_cmp(&b.mb_per_s()))
            .map_or_else(|| "-".into(), |figure| figure.label());
        row.push(fastest);
        rows.push(row);
    }

    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            rows.iter()
                .map(|row| row[column].chars().count())
                .chain([header[column].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    // Text columns (cipher, direction, size, fastest) left-aligned, figures right-aligned.
    let figure_column = |column: usize| column >= 3 && column + 1 < header.len();
    let line = |cells: &[String]| -> String {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(column, cell)| {
                let width = widths[column];
                if figure_column(column) {
                    format!("{cell:>width$}")
                } else {
                    format!("{cell:<width$}")
                }
            })
            .collect();
        padded.join("  ").trim_end().to_string() + "\n"
    };
    let mut text = line(&header);
    for row in &rows {
        text += &line(row);
    }
    let (fewest, most) = run
        .figures
        .iter()
        .map(|figure| figure.stats.runs)
        .fold((usize::MAX, 0), |(low, high), runs| {
            (low.min(runs), high.max(runs))
        });
    let runs = if fewest >= most {
        format!("{most}")
    } else {
        format!("{fewest} to {most}")
    };
    let _ = write!(
        text,
        "\nMB/s (10^6 bytes per second) in memory, end to end (GPU figures include the copies to\n\
         the device and back), median of {runs} timed runs after a warm-up.\n\
         Before timing, every backend gave seq's bytes: {} checks.\n",
        run.checked
    );
    text
}

/// Text as a JSON string, quotes included.
fn json_string(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for character in text.chars() {
        match character {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(quoted, "\\u{:04x}", u32::from(c));
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// A number as JSON: finite values as they are, anything else as `null`.
fn json_number(value: f64) -> String {
    if value.is_finite() {
        format!("{value}")
    } else {
        "null".into()
    }
}

fn json_strings(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| json_string(item)).collect();
    format!("[{}]", quoted.join(", "))
}

/// The run as one JSON object: the machine, the backends, and one object per figure with
/// its median, fastest and slowest time per job in seconds, its runs and MB/s.
pub fn json(run: &Run) -> String {
    let mut text = String::from("{\n");
    let fields = [
        ("parcrypt_version", json_string(env!("CARGO_PKG_VERSION"))),
        ("cpu", json_string(&run.cpu)),
        ("cpu_features", json_string(&run.cpu_features)),
        ("kernels", json_string(run.kernels.name())),
        ("threads", run.threads.to_string()),
        ("gpus", json_strings(&run.gpus)),
        ("unavailable", json_strings(&run.unavailable)),
        ("checked", run.checked.to_string()),
    ];
    for (name, value) in fields {
        let _ = writeln!(text, "  \"{name}\": {value},");
    }
    text += "  \"figures\": [";
    for (index, figure) in run.figures.iter().enumerate() {
        text += if index == 0 { "\n" } else { ",\n" };
        let _ = write!(
            text,
            "    {{\"cipher\": {}, \"direction\": {}, \"backend\": {}, \"threads\": {}, \
             \"bytes\": {}, \"runs\": {}, \"median_s\": {}, \"min_s\": {}, \"max_s\": {}, \
             \"mb_per_s\": {}}}",
            json_string(&figure.cipher.to_string()),
            json_string(direction_name(figure.direction)),
            json_string(figure.backend.name()),
            figure.threads,
            figure.bytes,
            figure.stats.runs,
            json_number(figure.stats.median.as_secs_f64()),
            json_number(figure.stats.min.as_secs_f64()),
            json_number(figure.stats.max.as_secs_f64()),
            json_number(figure.mb_per_s()),
        );
    }
    text += if run.figures.is_empty() {
        "]\n}\n"
    } else {
        "\n  ]\n}\n"
    };
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(64 << 10), "64 KiB");
        assert_eq!(size(16 << 20), "16 MiB");
        assert_eq!(size(1 << 30), "1 GiB");
        assert_eq!(size(17_900_000), "17.9 MB");
        assert_eq!(size(15), "15 B");
    }

    #[test]
    fn sizes_parse_with_binary_suffixes_and_refuse_the_rest() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size(" 64K "), Ok(64 << 10));
        assert_eq!(parse_size("16m"), Ok(16 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("").is_err());
        let error = parse_size("99999999999999999999G").unwrap_err();
        assert!(error.contains("is not a size"), "{error}");
    }

    #[test]
    fn an_unavailable_backend_is_one_short_line() {
        assert_eq!(
            backend_line("cuda backend unavailable: no CUDA driver: libcuda.so not found"),
            "cuda: not available here (no CUDA driver)"
        );
        assert_eq!(backend_line("cuda: NVIDIA H100"), "cuda: NVIDIA H100");
    }

    #[test]
    fn json_strings_escape_what_json_requires() {
        assert_eq!(json_string("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
        assert_eq!(json_number(f64::NAN), "null");
        assert_eq!(json_number(2.5), "2.5");
    }
}
