//! A `--quick` run of real scenarios on the CPU backends (what CI runs): the files appear,
//! the JSON has every field of every record, and the figures are plausible (positive,
//! sizes growing). No speed is asserted.

use std::collections::BTreeSet;

use parcrypt_engine::Backend;
use parcrypt_lab::export::{self, JSON_FILE, JSON_LINES_FILE};
use parcrypt_lab::lab::{Lab, LabOptions, Level};
use parcrypt_lab::record::Report;
use parcrypt_lab::scenario;
use serde_json::Value;

/// Every field a record must carry, null or not (the plots and the report read them).
const FIELDS: [&str; 29] = [
    "scenario",
    "cipher",
    "algorithm",
    "key_bits",
    "mode",
    "direction",
    "backend",
    "threads",
    "bytes",
    "timing",
    "transfer",
    "threads_per_group",
    "blocks_per_thread",
    "device",
    "variant",
    "warmup",
    "runs",
    "jobs_per_run",
    "median_s",
    "mean_s",
    "min_s",
    "max_s",
    "stddev_s",
    "mb_per_s",
    "speedup_vs_seq",
    "ratio_vs_openssl",
    "energy_j",
    "energy_meter",
    "note",
];

fn quick_lab(output: &std::path::Path, scenarios: &[&str]) -> Lab {
    let mut options = LabOptions::new(Level::Quick);
    options.threads = 2;
    options.backends = Some(vec![Backend::Seq, Backend::Pool]);
    options.openssl = false;
    options.ciphers = Some(vec![
        "aes-128-ctr".parse().unwrap(),
        "aes-128-cbc".parse().unwrap(),
    ]);
    options.sizes = Some(vec![4 << 10, 64 << 10]);
    options.file_bytes = Some(100_000);
    options.runs = Some(3);
    options.scratch = output.to_path_buf();
    let names: Vec<String> = scenarios.iter().map(|name| name.to_string()).collect();
    Lab::new(options, "test", &names, Some(output)).unwrap()
}

#[test]
fn a_quick_run_writes_complete_plausible_results() {
    let folder = tempfile::tempdir().unwrap();
    let mut lab = quick_lab(folder.path(), &["sweep", "s2"]);
    scenario::run(&mut lab, "sweep").unwrap();
    scenario::run(&mut lab, "s2").unwrap();
    let report = lab.finish();
    let written = export::write_results(folder.path(), &report).unwrap();
    assert_eq!(written.len(), 3);
    for name in [JSON_FILE, JSON_LINES_FILE, "results.csv", "results.md"] {
        assert!(folder.path().join(name).is_file(), "{name} missing");
    }

    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.path().join(JSON_FILE)).unwrap())
            .unwrap();
    let records = json["records"].as_array().unwrap();
    assert!(records.len() > 20, "{} records", records.len());
    for record in records {
        let keys: BTreeSet<&str> = record
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, FIELDS.into_iter().collect(), "fields of {record}");
        for positive in ["median_s", "mean_s", "min_s", "max_s", "mb_per_s"] {
            assert!(
                record[positive].as_f64().unwrap() > 0.0,
                "{positive} of {record}"
            );
        }
        for count in ["bytes", "runs", "jobs_per_run", "threads"] {
            assert!(record[count].as_u64().unwrap() > 0, "{count} of {record}");
        }
        assert!(
            record["min_s"].as_f64() <= record["median_s"].as_f64()
                && record["median_s"].as_f64() <= record["max_s"].as_f64(),
            "{record}"
        );
        let speedup = &record["speedup_vs_seq"];
        assert!(
            speedup.is_null() || speedup.as_f64().unwrap() > 0.0,
            "{record}"
        );
    }
    // Sizes grow within each series, as the scenarios sweep them.
    for scenario in ["sweep", "s2"] {
        for backend in ["seq", "pool"] {
            let sizes: Vec<u64> = records
                .iter()
                .filter(|r| {
                    r["scenario"] == scenario
                        && r["backend"] == backend
                        && r["timing"] == "end_to_end"
                        && r["direction"] == "encrypt"
                        && r["cipher"] != "memory"
                })
                .filter(|r| scenario == "s2" || r["cipher"] == "aes-128-ctr")
                .map(|r| r["bytes"].as_u64().unwrap())
                .collect();
            assert!(sizes.len() >= 2, "{scenario} {backend}: {sizes:?}");
            assert!(
                sizes.windows(2).all(|pair| pair[0] < pair[1]),
                "{scenario} {backend}: {sizes:?}"
            );
        }
    }
    assert!(
        records
            .iter()
            .any(|r| r["scenario"] == "sweep" && r["timing"] == "file"),
        "the sweep's file table"
    );
    assert!(
        records.iter().any(|r| r["cipher"] == "memory"),
        "the memory ceiling"
    );

    // The lines written as the run went hold the same run: an interrupted run keeps them.
    let lines = std::fs::read_to_string(folder.path().join(JSON_LINES_FILE)).unwrap();
    assert_eq!(Report::from_json_lines(&lines).unwrap(), report);
    let cut = &lines[..lines.len() - 40];
    let partial = Report::from_json_lines(cut).unwrap();
    assert_eq!(
        partial.records.len() + partial.notes.len(),
        report.records.len() + report.notes.len() - 1
    );

    // `--report` redraws from the folder alone.
    let readme =
        export::write_report(folder.path(), &export::read_results(folder.path()).unwrap()).unwrap();
    let text = std::fs::read_to_string(readme).unwrap();
    assert!(text.contains("## S2: AES-128 ECB"), "{text}");
    assert!(
        text.contains("| CPU, one thread, encrypt | 62-68 MB/s"),
        "{text}"
    );
}
