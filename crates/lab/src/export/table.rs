//! The terminal table: columns padded to their widest cell, figures right-aligned and text
//! left-aligned.

use crate::summary::{is_figure_column, Summary, Table};

/// One scenario as text: its tables, the seeds next to ours, and its notes.
pub fn render(summary: &Summary) -> String {
    let mut text = format!("== {} ==\n", summary.title);
    for table in &summary.tables {
        text.push('\n');
        text += &render_table(table);
    }
    if !summary.comparisons.is_empty() {
        let mut comparisons = Table::new(
            "The seed's figures next to ours",
            &["what", "seed", "parcrypt here"],
        );
        for comparison in &summary.comparisons {
            comparisons.row(vec![
                comparison.what.clone(),
                comparison.seed.clone(),
                comparison.ours.clone(),
            ]);
        }
        text.push('\n');
        text += &render_table(&comparisons);
    }
    if !summary.notes.is_empty() {
        text.push('\n');
        for note in &summary.notes {
            text += &format!("note: {note}\n");
        }
    }
    text
}

/// One table with its title and notes.
pub fn render_table(table: &Table) -> String {
    let widths: Vec<usize> = (0..table.columns.len())
        .map(|column| {
            table
                .rows
                .iter()
                .map(|row| row[column].chars().count())
                .chain([table.columns[column].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let right: Vec<bool> = (0..table.columns.len())
        .map(|column| column > 0 && is_figure_column(table, column))
        .collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(column, (cell, &width))| {
                if right[column] {
                    format!("{cell:>width$}")
                } else {
                    format!("{cell:<width$}")
                }
            })
            .collect();
        padded.join("  ").trim_end().to_string() + "\n"
    };
    let mut text = format!("{}\n", table.title);
    text += &line(&table.columns);
    text += &line(
        &widths
            .iter()
            .map(|&width| "-".repeat(width))
            .collect::<Vec<_>>(),
    );
    for row in &table.rows {
        text += &line(row);
    }
    for note in &table.notes {
        text += &format!("  {note}\n");
    }
    text
}
