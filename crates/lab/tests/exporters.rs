//! The exporters pinned by snapshots: a fixed run renders to exactly the text in
//! `tests/snapshots/`. After an intended change, regenerate with
//! `UPDATE_SNAPSHOTS=1 cargo test -p parcrypt-lab --test exporters` and review the diff.

use std::path::PathBuf;

use parcrypt_lab::export::{csv, json, markdown, table};
use parcrypt_lab::lab::derive_ratios;
use parcrypt_lab::record::{BenchRecord, Note, Report, RunInfo, Timing};
use parcrypt_lab::scenario;

fn run_info() -> RunInfo {
    RunInfo {
        parcrypt_version: "0.1.0".into(),
        revision: Some("abc1234".into()),
        started_unix: 1_767_225_600,
        command: "parcrypt bench --scenario s2,s3,s4 --output out".into(),
        level: "full".into(),
        scenarios: vec!["s2".into(), "s3".into(), "s4".into()],
        host: "test-host".into(),
        cpu: "Example CPU".into(),
        cpu_features: "hardware AES".into(),
        clock_hz: Some(4.0e9),
        threads: 2,
        memory_bytes: 8 << 30,
        os: "Linux".into(),
        openssl: Some("OpenSSL 3.0.0".into()),
        gpus: vec![
            "opencl: #0 Example OpenCL device".into(),
            "cuda backend unavailable: no CUDA driver".into(),
        ],
    }
}

/// A record with a round median; the other figures follow from it.
fn figure(
    scenario: &str,
    cipher: &str,
    direction: &str,
    backend: &str,
    threads: usize,
    bytes: u64,
    median_s: f64,
) -> BenchRecord {
    let mut record = BenchRecord::new(
        scenario,
        cipher,
        direction,
        backend,
        threads,
        bytes,
        Timing::EndToEnd,
    );
    record.warmup = 1;
    record.runs = 5;
    record.jobs_per_run = 1;
    record.median_s = median_s;
    record.mean_s = median_s * 1.01;
    record.min_s = median_s * 0.98;
    record.max_s = median_s * 1.05;
    record.stddev_s = median_s * 0.02;
    record.mb_per_s = bytes as f64 / median_s / 1e6;
    record
}

fn fixed_report() -> Report {
    let mut report = Report::new(run_info());
    let push = |report: &mut Report, record: BenchRecord| {
        let mut record = record;
        derive_ratios(&report.records, &mut record);
        report.records.push(record);
    };
    for (bytes, seq, pool, gpu) in [
        (1024u64, 1e-6, 2e-6, 1e-4),
        (1 << 20, 1e-3, 0.55e-3, 2e-3),
        (10 << 20, 1e-2, 0.52e-2, 0.5e-2),
    ] {
        for direction in ["encrypt", "decrypt"] {
            if bytes == 1 << 20 {
                push(
                    &mut report,
                    figure(
                        "s2",
                        "aes-128-ecb",
                        direction,
                        "openssl",
                        1,
                        bytes,
                        seq * 2.0,
                    ),
                );
            }
            push(
                &mut report,
                figure("s2", "aes-128-ecb", direction, "seq", 1, bytes, seq),
            );
            push(
                &mut report,
                figure("s2", "aes-128-ecb", direction, "pool", 2, bytes, pool),
            );
            let mut opencl = figure("s2", "aes-128-ecb", direction, "opencl", 2, bytes, gpu);
            opencl.transfer = Some("pageable".into());
            opencl.device = Some("Example OpenCL device".into());
            push(&mut report, opencl);
        }
    }
    for (bytes, sweep_best, untuned, tuned) in
        [(64u64, 1e-5, 1.2e-5, 1.1e-5), (16 << 10, 1e-4, 1e-4, 1e-4)]
    {
        for (shape, median, variant) in [
            (64, untuned, "sweep"),
            (128, sweep_best, "sweep"),
            (64, untuned, "confirm-untuned"),
            (
                if tuned < untuned { 128 } else { 64 },
                tuned,
                "confirm-tuned",
            ),
        ] {
            let mut record = figure("s3", "aes-128-ecb", "encrypt", "opencl", 1, bytes, median);
            record.threads_per_group = Some(shape);
            record.blocks_per_thread = Some(64);
            record.variant = Some(variant.into());
            push(&mut report, record);
        }
    }
    push(
        &mut report,
        figure("s4", "aes-128-ecb", "encrypt", "seq", 1, 1_024_000, 2e-5),
    );
    let mut pool = figure("s4", "aes-128-ecb", "encrypt", "pool", 2, 1_024_000, 1.2e-5);
    pool.energy_j = Some(0.0009);
    pool.energy_meter = Some("rapl:package-0".into());
    push(&mut report, pool);
    let mut gpu = figure(
        "s4",
        "aes-128-ecb",
        "encrypt",
        "opencl",
        2,
        1_024_000,
        2.5e-3,
    );
    gpu.transfer = Some("pageable".into());
    gpu.variant = Some("copy".into());
    gpu.energy_j = Some(0.05);
    gpu.energy_meter = Some("rapl:package-0".into());
    push(&mut report, gpu);
    report.notes.push(Note {
        scenario: "s4".into(),
        text: "opencl: zero-copy not available on this backend".into(),
    });
    report.notes.push(Note {
        scenario: "s3".into(),
        text: "gain = 1 - t_best / t_default".into(),
    });
    report
}

fn check(name: &str, text: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!("{}: {error} (UPDATE_SNAPSHOTS=1 writes it)", path.display())
    });
    if expected != text {
        let line = expected
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .map_or(expected.lines().count().min(text.lines().count()), |i| i);
        panic!(
            "{name} differs from its snapshot at line {}:\n  expected: {:?}\n  got:      {:?}\n(UPDATE_SNAPSHOTS=1 rewrites it after an intended change)",
            line + 1,
            expected.lines().nth(line),
            text.lines().nth(line)
        );
    }
}

#[test]
fn terminal_tables() {
    let report = fixed_report();
    let text: String = scenario::summarize(&report)
        .iter()
        .map(table::render)
        .collect::<Vec<_>>()
        .join("\n");
    check("tables.txt", &text);
}

#[test]
fn json() {
    let report = fixed_report();
    let text = json::render(&report, &scenario::summarize(&report)).unwrap();
    check("results.json", &text);
    // What the plots and `--report` read back is the same run.
    let back: Report = serde_json::from_str(&text).unwrap();
    assert_eq!(back, report);
}

#[test]
fn csv() {
    let report = fixed_report();
    check("results.csv", &csv::render(&report.records).unwrap());
    let header = csv::render(&[]).unwrap();
    assert!(
        header.starts_with("scenario,cipher,algorithm,key_bits,"),
        "{header}"
    );
    assert_eq!(header.lines().count(), 1);
}

#[test]
fn markdown() {
    let report = fixed_report();
    let plots = vec![
        "s2-throughput.png".to_string(),
        "s3-heatmap.png".to_string(),
        "overview.png".to_string(),
    ];
    check(
        "report.md",
        &markdown::render(&report, &scenario::summarize(&report), &plots),
    );
}

#[test]
fn ratios_come_from_earlier_figures_of_the_same_work() {
    let report = fixed_report();
    let pool = report
        .records
        .iter()
        .find(|r| {
            r.scenario == "s2"
                && r.backend == "pool"
                && r.bytes == 1 << 20
                && r.direction == "encrypt"
        })
        .unwrap();
    assert!((pool.speedup_vs_seq.unwrap() - 1e-3 / 0.55e-3).abs() < 1e-9);
    // OpenSSL ran one process; pool has two threads: no like-for-like ratio.
    assert_eq!(pool.ratio_vs_openssl, None);
    let seq = report
        .records
        .iter()
        .find(|r| r.scenario == "s2" && r.backend == "seq" && r.bytes == 1 << 20)
        .unwrap();
    assert_eq!(seq.speedup_vs_seq, Some(1.0));
    assert!((seq.ratio_vs_openssl.unwrap() - 2.0).abs() < 1e-9);
}
