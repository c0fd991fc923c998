//! Keeps a run's records and writes each as one JSON line the moment it is measured, so an
//! interrupted run keeps what it measured.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::export::JSON_LINES_FILE;
use crate::record::{BenchRecord, Line, Note, Report, RunInfo};

pub struct Recorder {
    report: Report,
    lines: Option<BufWriter<File>>,
}

impl Recorder {
    /// Starts a run; with a `folder`, creates it and starts `results.jsonl` there.
    pub fn new(run: RunInfo, folder: Option<&Path>) -> io::Result<Self> {
        let lines = match folder {
            Some(folder) => {
                std::fs::create_dir_all(folder)?;
                Some(BufWriter::new(File::create(folder.join(JSON_LINES_FILE))?))
            }
            None => None,
        };
        let mut recorder = Recorder {
            report: Report::new(run.clone()),
            lines,
        };
        recorder.write(&Line::Run(run))?;
        Ok(recorder)
    }

    fn write(&mut self, line: &Line) -> io::Result<()> {
        if let Some(lines) = &mut self.lines {
            serde_json::to_writer(&mut *lines, line)?;
            lines.write_all(b"\n")?;
            lines.flush()?;
        }
        Ok(())
    }

    /// Writes a measured figure and keeps it.
    pub fn record(&mut self, record: BenchRecord) -> io::Result<()> {
        self.keep(Line::Record(record))
    }

    /// Writes a note and keeps it.
    pub fn note(&mut self, note: Note) -> io::Result<()> {
        self.keep(Line::Note(note))
    }

    /// Writes `line` first, so that the file holds all the report does even if the run
    /// stops right after.
    fn keep(&mut self, line: Line) -> io::Result<()> {
        self.write(&line)?;
        match line {
            Line::Record(record) => self.report.records.push(record),
            Line::Note(note) => self.report.notes.push(note),
            Line::Run(_) => {}
        }
        Ok(())
    }

    pub fn report(&self) -> &Report {
        &self.report
    }

    pub fn into_report(self) -> Report {
        self.report
    }
}
