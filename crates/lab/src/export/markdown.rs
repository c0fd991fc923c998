//! `results.md` and the report `README.md`: the machine, every seed next to ours, then each
//! scenario's tables, notes and plots.

use crate::record::Report;
use crate::summary::{is_figure_column, Summary, Table};

/// The whole run as Markdown; `plots` are PNG file names in the same folder, placed under
/// the scenario their name starts with (`s2-speedup.png`), the rest at the end.
pub fn render(report: &Report, summaries: &[Summary], plots: &[String]) -> String {
    let run = &report.run;
    let mut text = format!("# parcrypt-lab run on {}\n\n", run.host);
    text += &format!(
        "- parcrypt {}{}, run started {} (UTC), level `{}`: `{}`\n",
        run.parcrypt_version,
        run.revision
            .as_deref()
            .map(|revision| format!(" ({revision})"))
            .unwrap_or_default(),
        utc_date(run.started_unix),
        run.level,
        run.command
    );
    let clock = run
        .clock_hz
        .map(|hz| format!("; clock {:.2} GHz measured", hz / 1e9))
        .unwrap_or_default();
    text += &format!(
        "- CPU: {}, {} hardware threads{clock}; {}\n",
        run.cpu, run.threads, run.cpu_features
    );
    text += &format!(
        "- memory {:.1} GiB; {}\n",
        run.memory_bytes as f64 / (1u64 << 30) as f64,
        run.os
    );
    text += &format!(
        "- OpenSSL: {}\n",
        run.openssl
            .as_deref()
            .unwrap_or("not found (no OpenSSL rows)")
    );
    for gpu in &run.gpus {
        text += &format!("- GPU backend: {}\n", crate::summary::backend_line(gpu));
    }
    text += "\nTimes are per job (median of the timed runs unless a table says mean); MB/s are 10^6 bytes per second; \
             GPU figures are end to end (host memory in and out, device synchronised) unless marked kernel.\n";

    let comparisons: Vec<_> = summaries
        .iter()
        .flat_map(|summary| &summary.comparisons)
        .collect();
    if !comparisons.is_empty() {
        text += "\n## The seeds' figures next to ours\n\n";
        let mut table = Table::new(
            "",
            &["scenario", "what", "seed (published)", "parcrypt here"],
        );
        for comparison in comparisons {
            table.row(vec![
                comparison.scenario.clone(),
                comparison.what.clone(),
                comparison.seed.clone(),
                comparison.ours.clone(),
            ]);
        }
        text += &render_table(&table);
    }

    for summary in summaries {
        text += &format!("\n## {}\n", summary.title);
        for table in &summary.tables {
            text += &format!("\n### {}\n\n", table.title.replace('~', "\\~"));
            text += &render_table(table);
            for note in &table.notes {
                text += &format!("\n{note}\n");
            }
        }
        if !summary.notes.is_empty() {
            text += "\nNotes:\n\n";
            for note in &summary.notes {
                text += &format!("- {note}\n");
            }
        }
        let prefix = format!("{}-", summary.scenario);
        for plot in plots.iter().filter(|plot| plot.starts_with(&prefix)) {
            text += &format!("\n![{plot}]({plot})\n");
        }
    }
    let placed = |plot: &&String| {
        summaries
            .iter()
            .any(|summary| plot.starts_with(&format!("{}-", summary.scenario)))
    };
    let others: Vec<&String> = plots.iter().filter(|plot| !placed(plot)).collect();
    if !others.is_empty() {
        text += "\n## Other plots\n";
        for plot in others {
            text += &format!("\n![{plot}]({plot})\n");
        }
    }
    text
}

/// A GitHub-flavoured table: figures right-aligned, text left-aligned.
fn render_table(table: &Table) -> String {
    // `~` marks figures within the noise; unescaped, two in a cell would strike it through.
    let escape = |cell: &String| cell.replace('|', "\\|").replace('~', "\\~");
    let mut text = format!(
        "| {} |\n",
        table
            .columns
            .iter()
            .map(escape)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let rule: Vec<&str> = (0..table.columns.len())
        .map(|column| {
            if column > 0 && is_figure_column(table, column) {
                "--:"
            } else {
                ":--"
            }
        })
        .collect();
    text += &format!("|{}|\n", rule.join("|"));
    for row in &table.rows {
        text += &format!(
            "| {} |\n",
            row.iter().map(escape).collect::<Vec<_>>().join(" | ")
        );
    }
    text
}

/// `YYYY-MM-DD HH:MM` of a Unix time (UTC), without a date library.
fn utc_date(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let seconds = unix % 86_400;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        seconds / 3600,
        seconds % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates_are_civil() {
        assert_eq!(super::utc_date(0), "1970-01-01 00:00");
        assert_eq!(super::utc_date(951_782_400 + 3_660), "2000-02-29 01:01");
        assert_eq!(super::utc_date(1_767_225_600), "2026-01-01 00:00");
    }
}
