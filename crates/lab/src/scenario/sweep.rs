//! The sweep: ciphers x directions x backends x thread counts x sizes in memory, the memory
//! ceiling, OpenSSL in the same run, kernel-only GPU figures where the GPU runs the mode
//! alone, and a file table end to end with `openssl enc`.

use std::time::Duration;

use parcrypt_engine::{Backend, Engine};
use parcrypt_modes::CipherSpec;

use crate::gpu::operation;
use crate::lab::{Lab, Level};
use crate::record::{BenchRecord, Report, Timing};
use crate::scenario::{directions, select, time_files, whole_blocks};
use crate::stats::Repetition;
use crate::summary::{
    backend_label, distinct, marked, mbps, or_dash, percent, short_direction, size, times,
    within_noise, Summary, Table, NOISE_MARK,
};
use crate::throughput::{random_buffer, MEMORY_PASS};
use crate::verify::backends_agree;
use crate::BenchError;

pub const NAME: &str = "sweep";
const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// The default ciphers of a level.
pub fn ciphers(level: Level) -> Vec<CipherSpec> {
    let names: Vec<String> = match level {
        Level::Quick => ["aes-128-ctr", "aes-128-gcm", "aes-128-cbc"]
            .map(String::from)
            .to_vec(),
        Level::Short => [
            "aes-128-ctr",
            "aes-256-ctr",
            "aes-128-gcm",
            "aes-128-ecb",
            "aes-128-cbc",
            "bf-ctr",
            "rc6-128-ctr",
        ]
        .map(String::from)
        .to_vec(),
        Level::Full => CipherSpec::all()
            .iter()
            .map(|spec| spec.to_string())
            .collect(),
    };
    names
        .iter()
        .map(|name| name.parse().expect("a valid cipher name"))
        .collect()
}

pub fn sizes(level: Level) -> Vec<usize> {
    level.pick(
        vec![64 * KIB, 4 * MIB],
        vec![16 * KIB, MIB, 16 * MIB],
        vec![4 * KIB, 64 * KIB, MIB, 16 * MIB, 64 * MIB],
    )
}

/// 1, 2, 4, .. up to `threads`, and `threads` itself.
pub fn thread_counts(level: Level, threads: usize) -> Vec<usize> {
    if level == Level::Quick {
        return vec![threads];
    }
    let mut counts: Vec<usize> = std::iter::successors(Some(1usize), |n| n.checked_mul(2))
        .take_while(|&n| n < threads)
        .collect();
    counts.push(threads);
    counts
}

pub fn run(lab: &mut Lab) -> Result<(), BenchError> {
    let level = lab.level();
    let threads = lab.threads();
    let specs = lab
        .options()
        .ciphers
        .clone()
        .unwrap_or_else(|| ciphers(level));
    let sizes = lab.options().sizes.clone().unwrap_or_else(|| sizes(level));
    let file_bytes = lab
        .options()
        .file_bytes
        .unwrap_or(level.pick(16 * MIB, 64 * MIB, 256 * MIB));

    // seq first: every other figure is also a ratio to it.
    let mut engines: Vec<Engine> = Vec::new();
    for backend in lab.cpu_backends(&[Backend::Seq, Backend::Threads, Backend::Pool, Backend::Auto])
    {
        let counts = match backend {
            Backend::Seq | Backend::Auto => vec![threads],
            _ => thread_counts(level, threads),
        };
        for count in counts {
            engines.push(lab.options().engine(backend, count)?);
        }
    }
    let gpus = lab.gpus();
    let all: Vec<&Engine> = engines
        .iter()
        .chain(gpus.iter().map(|gpu| &gpu.engine))
        .collect();
    let checked = backends_agree(&specs, &all)?;
    lab.note(NAME, format!("checked before timing: {checked} runs of every backend equal seq (sizes 0, 1, 15, 16, 17, 4 KiB+5, 1 MiB+3; both directions)"))?;
    let repetition = Repetition::adaptive(
        3,
        level.pick(5, 10, 15),
        Duration::from_millis(level.pick(60, 150, 300)),
    );
    let largest = sizes.iter().copied().max().unwrap_or(0);
    for &spec in &specs {
        for &direction in directions(spec) {
            for &bytes in &sizes {
                let bytes = whole_blocks(spec, bytes);
                let mut data = random_buffer(bytes, bytes as u64);
                if level != Level::Quick || bytes == largest {
                    lab.openssl_speed(NAME, spec, direction, bytes, 1)?;
                }
                // OpenSSL's processes are independent streams: for CBC encryption, which is
                // sequential per stream, that would compare different work.
                if threads > 1 && bytes == largest && spec.mode.parallel(direction) {
                    lab.openssl_speed(NAME, spec, direction, bytes, threads)?;
                }
                lab.push_engines(NAME, spec, direction, &all, &mut data, repetition, None)?;
                for gpu in &gpus {
                    if operation(spec, direction).is_none() {
                        continue;
                    }
                    lab.push_cuda_kernel(
                        NAME,
                        &spec.to_string(),
                        gpu,
                        spec,
                        direction,
                        bytes,
                        threads,
                        repetition,
                    )?;
                }
            }
        }
    }
    // The memory ceiling: an in-place pass with no cipher work, on one thread and on all.
    for &bytes in &sizes {
        for engine in engines.iter().filter(|engine| {
            engine.backend() == Backend::Seq
                || (engine.backend() == Backend::Pool && engine.threads() == threads)
        }) {
            lab.progress(&format!(
                "{NAME}: memory pass {} on {}",
                size(bytes as u64),
                engine.backend()
            ));
            lab.push_memory_pass(NAME, engine, bytes, repetition)?;
        }
    }
    if file_bytes > 0 {
        let file_engines: Vec<&Engine> = all
            .iter()
            .copied()
            .filter(|engine| engine.threads() == threads || engine.backend() == Backend::Seq)
            .collect();
        let file_specs: Vec<CipherSpec> = level
            .pick(
                vec!["aes-128-ctr"],
                vec!["aes-128-ctr", "aes-128-gcm", "aes-128-cbc"],
                vec!["aes-128-ctr", "aes-128-gcm", "aes-128-cbc", "aes-256-ctr"],
            )
            .iter()
            .map(|name| name.parse().expect("a valid cipher name"))
            .collect();
        let file_repetition =
            Repetition::adaptive(3, 5, Duration::from_millis(level.pick(100, 300, 600)));
        for spec in file_specs {
            time_files(lab, NAME, spec, &file_engines, file_bytes, file_repetition)?;
        }
    }
    Ok(())
}

pub fn summarize(report: &Report) -> Summary {
    let mut summary = Summary::new(
        report,
        NAME,
        "Sweep: every backend in memory and through files, with OpenSSL and the memory ceiling",
    );
    let memory = select(report, NAME, |record| record.timing != Timing::File);
    if !memory.is_empty() {
        let labels = distinct(&memory, backend_label);
        let threads = report.run.threads;
        let mut columns: Vec<String> = vec!["cipher".into(), "dir".into(), "size".into()];
        columns.extend(labels.iter().cloned());
        columns.extend([
            "best x openssl".into(),
            format!("scaling vs seq x{threads}"),
        ]);
        let column_refs: Vec<&str> = columns.iter().map(String::as_str).collect();
        let mut table = Table::new(
            "In memory, end to end, MB/s (median; ~ within the noise of seq)",
            &column_refs,
        );
        let mut groups = distinct(&memory, |r| {
            (r.cipher.clone(), r.direction.clone(), r.bytes)
        });
        // Memory ceiling rows last.
        groups.sort_by_key(|(cipher, _, _)| cipher == MEMORY_PASS);
        let mut any_noise = false;
        let mut threads_collapse: Option<(String, u64)> = None;
        for (cipher, direction, bytes) in groups {
            let of_group: Vec<&BenchRecord> = memory
                .iter()
                .copied()
                .filter(|r| r.cipher == cipher && r.direction == direction && r.bytes == bytes)
                .collect();
            let figure = |label: &str| of_group.iter().copied().find(|r| backend_label(r) == label);
            let seq = figure("seq");
            let mut row = vec![
                cipher.clone(),
                short_direction(&direction).to_string(),
                size(bytes),
            ];
            for label in &labels {
                row.push(or_dash(figure(label).map(|record| {
                    let within =
                        record.backend != "seq" && seq.is_some_and(|seq| within_noise(record, seq));
                    any_noise |= within;
                    marked(mbps(record.mb_per_s), within)
                })));
            }
            if let (Some(seq), Some(team)) = (seq, figure(&format!("threads x{threads}"))) {
                if threads > 1
                    && team.mb_per_s < seq.mb_per_s
                    && !within_noise(team, seq)
                    && threads_collapse.is_none()
                {
                    threads_collapse = Some((cipher.clone(), bytes));
                }
            }
            row.push(or_dash(best_against_openssl(&of_group, &mut any_noise)));
            let parallel = cipher == MEMORY_PASS
                || cipher.parse::<CipherSpec>().is_ok_and(|spec| {
                    spec.mode.parallel(if direction == "encrypt" {
                        parcrypt_modes::Direction::Encrypt
                    } else {
                        parcrypt_modes::Direction::Decrypt
                    })
                });
            let scaling = figure(&format!("pool x{threads}"))
                .zip(seq)
                .filter(|_| parallel && threads > 1)
                .map(|(pool, seq)| percent(pool.mb_per_s / (seq.mb_per_s * threads as f64)));
            row.push(or_dash(scaling));
            table.row(row);
        }
        if any_noise {
            table.note(NOISE_LEGEND);
        }
        table.note(format!("scaling vs seq x{threads}: pool x{threads} over {threads} times seq (100 % is linear); CBC encryption is sequential by nature; openssl xN: `openssl speed -multi N`"));
        table.note("memory: the same size passed over in place with no cipher work (each byte XORed), the ceiling no in-place cipher pass can beat; best x openssl: our fastest CPU backend over OpenSSL with as many processes as it has threads");
        if let Some((cipher, bytes)) = threads_collapse {
            table.note(format!(
                "threads x{threads} falls below seq (first at {cipher} {}): it cuts every job into {threads} pieces and hands each to a woken pool thread, then waits for all; at small sizes that hand-off costs as much as the work, while pool runs jobs under 128 KiB on the calling thread and auto splits only where its measured hand-off cost promises a tenth off",
                size(bytes)
            ));
        }
        summary.tables.push(table);

        // The design's CPU targets, from the same run.
        if let Some(ctr) = memory
            .iter()
            .copied()
            .filter(|r| {
                r.cipher == "aes-128-ctr" && r.backend == "seq" && r.ratio_vs_openssl.is_some()
            })
            .max_by_key(|r| r.bytes)
        {
            summary.compare(
                "design target: AES-128-CTR per core >= 2x OpenSSL",
                "(no seed did this)",
                format!(
                    "{} at {}",
                    times(ctr.ratio_vs_openssl.unwrap_or(0.0)),
                    size(ctr.bytes)
                ),
            );
        }
        if let Some(gcm) = memory
            .iter()
            .copied()
            .filter(|r| {
                r.cipher == "aes-128-gcm"
                    && r.direction == "encrypt"
                    && r.backend == "seq"
                    && r.ratio_vs_openssl.is_some()
            })
            .max_by_key(|r| r.bytes)
        {
            summary.compare(
                "design target: AES-128-GCM per core >= 1.5x OpenSSL",
                "(no seed did this)",
                format!(
                    "{} at {}",
                    times(gcm.ratio_vs_openssl.unwrap_or(0.0)),
                    size(gcm.bytes)
                ),
            );
        }
    }

    let files = select(report, NAME, |record| record.timing == Timing::File);
    if let Some(first) = files.first() {
        let mut table = Table::new(
            format!(
                "Through files of {} (read, process, write), MB/s of input",
                size(first.bytes)
            ),
            &[
                "cipher",
                "backend",
                "encrypt MB/s",
                "decrypt MB/s",
                "enc vs openssl enc",
            ],
        );
        for (cipher, label) in distinct(&files, |r| (r.cipher.clone(), backend_label(r))) {
            let figure = |direction: &str| {
                files.iter().copied().find(|r| {
                    r.cipher == cipher && backend_label(r) == label && r.direction == direction
                })
            };
            let encrypt = figure("encrypt");
            table.row(vec![
                cipher.clone(),
                label.clone(),
                or_dash(encrypt.map(|r| mbps(r.mb_per_s))),
                or_dash(figure("decrypt").map(|r| mbps(r.mb_per_s))),
                or_dash(encrypt.and_then(|r| {
                    let openssl = files.iter().find(|o| {
                        o.cipher == cipher && o.backend == "openssl" && o.direction == "encrypt"
                    })?;
                    (r.backend != "openssl").then(|| times(openssl.median_s / r.median_s))
                })),
            ]);
        }
        table.note("every backend's ciphertext equals the first backend's and decrypts to the input; GCM has no `openssl enc` row (enc has no AEAD modes)");
        summary.tables.push(table);
    }
    summary
}

/// The legend of [`NOISE_MARK`] under a table that uses it.
pub const NOISE_LEGEND: &str = "~ before a figure: its timed runs (fastest to slowest) overlap those of its reference (MB/s: seq in the same row; best x openssl: OpenSSL's), so the difference is within the run-to-run noise and is no win or loss; `a ~b`: b is within the noise of the best, a";

/// The `best x openssl` cell of a row: our fastest CPU figure over OpenSSL's with as many
/// processes, with the backend that gave it, marked when it is within the noise of
/// OpenSSL's, and followed by every other CPU backend within the noise of it (no winner
/// among those). `None` when OpenSSL has no figure for the row.
pub fn best_against_openssl(of_group: &[&BenchRecord], any_noise: &mut bool) -> Option<String> {
    let cpu = |r: &&BenchRecord| matches!(r.backend.as_str(), "seq" | "threads" | "pool" | "auto");
    let best = of_group
        .iter()
        .copied()
        .filter(|r| cpu(r) && r.ratio_vs_openssl.is_some())
        .max_by(|a, b| a.mb_per_s.total_cmp(&b.mb_per_s))?;
    let ratio = best.ratio_vs_openssl?;
    let openssl = of_group
        .iter()
        .copied()
        .find(|r| r.backend == "openssl" && r.threads == best.threads);
    let tied_with_openssl = openssl.is_some_and(|openssl| within_noise(best, openssl));
    let ties: Vec<String> = of_group
        .iter()
        .copied()
        .filter(|r| cpu(r) && !std::ptr::eq(*r, best) && within_noise(r, best))
        .map(|r| format!(" {NOISE_MARK}{}", backend_label(r)))
        .collect();
    *any_noise |= tied_with_openssl || !ties.is_empty();
    Some(format!(
        "{} ({}{})",
        marked(times(ratio), tied_with_openssl),
        backend_label(best),
        ties.concat()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_counts_double_up_to_the_machine() {
        assert_eq!(thread_counts(Level::Short, 1), vec![1]);
        assert_eq!(thread_counts(Level::Short, 2), vec![1, 2]);
        assert_eq!(thread_counts(Level::Short, 6), vec![1, 2, 4, 6]);
        assert_eq!(thread_counts(Level::Quick, 6), vec![6]);
    }

    fn figure(backend: &str, threads: usize, times: (f64, f64, f64)) -> BenchRecord {
        let mut record = BenchRecord::new(
            NAME,
            "aes-128-gcm",
            "encrypt",
            backend,
            threads,
            4 << 20,
            Timing::EndToEnd,
        );
        (record.min_s, record.median_s, record.max_s) = times;
        record.mb_per_s = record.bytes as f64 / record.median_s / 1e6;
        record
    }

    #[test]
    fn the_best_names_the_backends_it_does_not_beat_beyond_the_noise() {
        let openssl = figure("openssl", 2, (1.0, 1.0, 1.0));
        let mut auto = figure("auto", 2, (0.70, 0.75, 0.82));
        auto.ratio_vs_openssl = Some(1.0 / 0.75);
        let mut pool = figure("pool", 2, (0.80, 0.85, 0.90));
        pool.ratio_vs_openssl = Some(1.0 / 0.85);
        let mut seq = figure("seq", 1, (1.4, 1.5, 1.6));
        seq.ratio_vs_openssl = Some(1.0 / 1.5);
        let mut noise = false;
        let cell = best_against_openssl(&[&openssl, &seq, &pool, &auto], &mut noise);
        assert_eq!(cell.as_deref(), Some("1.33x (auto x2 ~pool x2)"));
        assert!(noise);

        // Apart from each other and from OpenSSL: no mark.
        let mut fast = figure("pool", 2, (0.40, 0.45, 0.50));
        fast.ratio_vs_openssl = Some(1.0 / 0.45);
        let mut noise = false;
        let cell = best_against_openssl(&[&openssl, &seq, &fast], &mut noise);
        assert_eq!(cell.as_deref(), Some("2.22x (pool x2)"));
        assert!(!noise);

        // Within the noise of OpenSSL itself.
        let mut close = figure("pool", 2, (0.95, 0.98, 1.05));
        close.ratio_vs_openssl = Some(1.0 / 0.98);
        let cell = best_against_openssl(&[&openssl, &close], &mut noise);
        assert_eq!(cell.as_deref(), Some("~1.02x (pool x2)"));
        assert!(noise);
        // No OpenSSL figure for the row: no ratio.
        let alone = figure("pool", 2, (0.95, 0.98, 1.05));
        assert_eq!(best_against_openssl(&[&alone], &mut noise), None);
    }
}
