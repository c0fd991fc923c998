//! A real run on the CPU backends: every backend is checked, every figure is there once, the
//! table and the JSON say the same. No speed is asserted.

use parcrypt_bench::{report, Backend, Bench, Direction, Plan};

fn small_plan() -> Plan {
    let mut plan = Plan::quick(2).with_runs(3);
    plan.ciphers = vec!["aes-128-gcm".parse().unwrap(), "bf-ctr".parse().unwrap()];
    plan.sizes = vec![1000, 64 << 10];
    plan.backends = Some(vec![Backend::Seq, Backend::Pool, Backend::Threads]);
    plan
}

#[test]
fn a_run_has_one_checked_figure_per_cipher_direction_size_and_backend() {
    let bench = Bench::open(small_plan()).expect("the CPU backends open");
    // Backends named: no GPU is tried, so none is reported missing.
    assert!(bench.unavailable().is_empty());
    let mut heard = Vec::new();
    let run = bench
        .run(&mut |text: &str| heard.push(text.to_string()))
        .expect("the run");
    assert!(heard[0].contains("checking"), "{heard:?}");
    // GCM both ways and CTR one way, two sizes, three backends.
    assert_eq!(run.figures.len(), 3 * 2 * 3);
    // 2 ciphers x 2 directions x 7 awkward sizes x 3 engines.
    assert_eq!(run.checked, 2 * 2 * 7 * 3);
    for figure in &run.figures {
        assert_eq!(figure.stats.runs, 3);
        assert!(figure.mb_per_s() > 0.0);
        // Sizes are whole blocks: 1000 bytes is 992 for AES, 1000 for Blowfish.
        assert_eq!(figure.bytes % figure.cipher.algorithm.block_size(), 0);
        assert!(figure.bytes == 992 || figure.bytes == 1000 || figure.bytes == 64 << 10);
    }
    let blowfish_decrypt = run
        .figures
        .iter()
        .filter(|figure| figure.cipher.to_string() == "bf-ctr")
        .any(|figure| figure.direction == Direction::Decrypt);
    assert!(!blowfish_decrypt, "CTR decryption is the same pass");

    let table = report::table(&run);
    let rows = table
        .lines()
        .filter(|line| line.starts_with("aes-128-gcm") || line.starts_with("bf-ctr"))
        .count();
    assert_eq!(rows, 6, "{table}");
    assert!(table.contains("threads x2"), "{table}");

    let json: serde_json::Value = serde_json::from_str(&report::json(&run)).expect("valid JSON");
    assert_eq!(json["kernels"], run.kernels.name());
    assert_eq!(run.kernels, parcrypt_ciphers::KernelFamily::detected());
    let figures = json["figures"].as_array().expect("figures");
    assert_eq!(figures.len(), run.figures.len());
    for (figure, record) in run.figures.iter().zip(figures) {
        assert_eq!(record["cipher"], figure.cipher.to_string());
        assert_eq!(record["backend"], figure.backend.name());
        assert_eq!(record["bytes"], figure.bytes);
        assert_eq!(record["runs"], 3);
        assert!((record["mb_per_s"].as_f64().unwrap() - figure.mb_per_s()).abs() < 1e-6);
    }
}

#[test]
fn a_plan_under_a_kernel_family_says_so_and_gives_the_same_bytes() {
    use parcrypt_ciphers::KernelFamily;
    for family in KernelFamily::supported() {
        let mut plan = small_plan().with_runs(1);
        plan.sizes = vec![1000];
        plan.builder = plan.builder.kernels(family);
        let bench = Bench::open(plan).expect("a supported family");
        assert_eq!(bench.kernels(), family);
        let run = bench.run(&mut |_: &str| {}).expect("the run");
        assert_eq!(run.kernels, family);
        let json: serde_json::Value =
            serde_json::from_str(&report::json(&run)).expect("valid JSON");
        assert_eq!(json["kernels"], family.name());
    }
}

#[test]
fn a_named_gpu_backend_that_cannot_open_is_an_error() {
    let mut plan = small_plan();
    plan.backends = Some(vec![Backend::Seq, Backend::Hip]);
    // On a machine with a HIP device this opens; elsewhere it must say why, not skip it.
    match Bench::open(plan) {
        Ok(bench) => assert!(bench.gpus().iter().any(|line| line.starts_with("hip: "))),
        Err(error) => assert!(error.to_string().contains("hip"), "{error}"),
    }
}
