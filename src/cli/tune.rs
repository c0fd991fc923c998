//! `parcrypt tune`: measure the best launch shapes and the CPU/GPU crossover of a GPU and
//! store them where the engine finds them. The measuring is `parcrypt::devices::tune`.

use std::cell::RefCell;
use std::path::PathBuf;

use clap::Args;
use parcrypt::devices::tune::{tune, TuneEvent, TuneOptions};
use parcrypt::devices::tuning::{tune_file, TunedShape};
use parcrypt::environment::tune_directory;
use parcrypt::hazmat::Algorithm;
use parcrypt::{Backend, Engine};

use super::{named, Failure, Refused};

#[derive(Args)]
#[command(after_help = "Examples:\n  \
    parcrypt tune --backend opencl                 measure device #0 and store its table\n  \
    parcrypt tune --backend cuda --algorithms aes-128,aes-256 --max-size 256M\n\n\
    The table is stored per device (name, driver and compute units hash \
    into the file name) in $PARCRYPT_TUNE_DIR, else $XDG_CONFIG_HOME/parcrypt/tune, else \
    ~/.config/parcrypt/tune. From then on `--backend opencl|cuda|hip` launch every kernel with \
    the shape measured best for its cipher, operation and size, and `--backend auto` sends a \
    job to the GPU when it is at least as large as the size from which the GPU finished such \
    jobs first. Tuning changes speed only: every shape gives the same bytes.")]
pub struct TuneArgs {
    /// The GPU backend to tune (its device #0, as the engine uses)
    #[arg(long, default_value = "opencl", value_parser = named::<Backend>(), hide_possible_values = true)]
    backend: Backend,
    /// Every warp multiple from 64 to 1024 threads per group, 1..64 blocks per thread,
    /// every cipher and operation, sizes in steps of 4 (default: a quicker sweep)
    #[arg(long)]
    full: bool,
    /// Ciphers, comma-separated (aes-128, aes-192, aes-256, bf, rc6-128, ...)
    #[arg(long, value_delimiter = ',', value_parser = algorithm)]
    algorithms: Vec<Algorithm>,
    /// The largest input size measured (suffixes K, M, G; default 1G on a GPU, 4M or 16M
    /// on an OpenCL CPU device)
    #[arg(long, value_parser = super::bench::parse_size)]
    max_size: Option<usize>,
    /// Timed runs per point, after a warm-up run
    #[arg(long)]
    runs: Option<usize>,
    /// Write the table here instead of the tune directory (the engine then does not use it)
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// A cipher name without a mode, as `--algorithms` takes them.
fn algorithm(name: &str) -> Result<Algorithm, Refused> {
    name.parse().map_err(|()| {
        Refused(super::with_suggestion(
            format_args!(
                "unknown cipher '{name}' ({})",
                Algorithm::ALL.map(Algorithm::name).join(", ")
            ),
            name,
            Algorithm::ALL.iter().map(|algorithm| algorithm.name()),
        ))
    })
}

pub fn run(args: TuneArgs) -> Result<(), Failure> {
    let backend = args.backend;
    if !backend.is_gpu() {
        return Err(Failure(format!(
            "tune measures a GPU backend (opencl, cuda or hip), not {backend}"
        )));
    }
    // Neither engine may follow an old table while the new one is measured: no tune file.
    let gpu_engine = Engine::new(backend, None)?;
    let cpu_engine = Engine::new(Backend::Auto, None)?;
    let device = gpu_engine.gpu().expect("a GPU backend has a device");
    let mut options = TuneOptions::standard(device.kind(), args.full, args.max_size);
    if !args.algorithms.is_empty() {
        options.crossover_jobs = TuneOptions::crossover_jobs(&args.algorithms, args.full);
        options.algorithms = args.algorithms.clone();
    }
    if let Some(runs) = args.runs {
        if runs == 0 {
            return Err(Failure("--runs must be at least 1".into()));
        }
        options.runs = runs;
    }
    let path = match &args.output {
        Some(path) => path.clone(),
        None => {
            let directory = tune_directory().ok_or_else(|| {
                Failure("no tune directory: set PARCRYPT_TUNE_DIR, XDG_CONFIG_HOME or HOME, or pass --output".into())
            })?;
            tune_file(&directory, device.api().name(), &device.identity())
        }
    };

    show!("tuning {}", device.description())?;
    show!(
        "  {} cipher(s) x {} operation(s) x {} sizes ({} B .. {}), {} x {} candidate shapes, \
         median of {} kernel runs (device timers, copies excluded)",
        options.algorithms.len(),
        options.operations.len(),
        options.sizes.len(),
        options.sizes.first().copied().unwrap_or(0),
        size_name(options.sizes.last().copied().unwrap_or(0)),
        options.threads_per_group.len(),
        options.blocks_per_thread.len(),
        options.runs,
    )?;
    show!(
        "  untuned shape: {} threads per group, {} blocks per thread",
        device.launch_geometry().threads_per_group,
        device.launch_geometry().blocks_per_thread
    )?;
    show!("")?;
    show!(
        "{:<8} {:<12} {:>9} {:>13} {:>12} {:>12} {:>15}  sweep winner against the noise",
        "cipher",
        "operation",
        "size",
        "best shape",
        "tuned",
        "untuned",
        "gain vs untuned"
    )?;
    // The sweep reports through callbacks: the first report stdout refuses is kept and
    // returned once the measurement is over.
    let refused: RefCell<Option<Failure>> = RefCell::new(None);
    let keep = |written: Result<(), Failure>| {
        if let Err(failure) = written {
            refused.borrow_mut().get_or_insert(failure);
        }
    };
    let report = |event: TuneEvent<'_>| match event {
        TuneEvent::Shape(shape) => keep(print_shape(shape)),
        TuneEvent::Crossover(crossover) => {
            let verdict = match crossover.gpu_from_bytes {
                Some(bytes) => format!("GPU from {}", size_name(bytes as usize)),
                None => "CPU at every size measured".to_string(),
            };
            let last = crossover.points.last();
            let rates = last
                .map(|point| {
                    format!(
                        " (at {}: CPU {:.2} GB/s, GPU {:.2} GB/s)",
                        size_name(point.bytes as usize),
                        point.bytes as f64 / point.cpu_seconds.max(1e-12) / 1e9,
                        point.bytes as f64 / point.gpu_seconds.max(1e-12) / 1e9
                    )
                })
                .unwrap_or_default();
            keep(show!(
                "crossover {:<14} {:<8} {verdict}{rates}",
                crossover.spec,
                crossover.direction
            ));
        }
    };
    let mut crossover_header_printed = false;
    let mut report_all = |event: TuneEvent<'_>| {
        if matches!(event, TuneEvent::Crossover(_)) && !crossover_header_printed {
            crossover_header_printed = true;
            keep(show!(
                "\nend to end, copies included, against the CPU (auto: one thread or the pool):"
            ));
        }
        report(event);
    };
    let table = tune(&gpu_engine, &cpu_engine, &options, &mut report_all)?;
    if let Some(failure) = refused.into_inner() {
        return Err(failure);
    }

    let decided: Vec<_> = table
        .shapes
        .iter()
        .filter_map(|shape| shape.decision)
        .collect();
    show!("")?;
    show!(
        "kept {} of {} sweep winners other than the untuned shape: a shape is kept only when \
         the time it saves exceeds the untuned shape's run-to-run spread (noise) in the same \
         confirmation rounds",
        decided.iter().filter(|decision| decision.kept).count(),
        decided.len()
    )?;
    show!("gain of the kept shapes over the untuned one (mean / peak over sizes):")?;
    for algorithm in &options.algorithms {
        let gains: Vec<f64> = table
            .shapes
            .iter()
            .filter(|shape| shape.algorithm == algorithm.name())
            .map(TunedShape::gain)
            .collect();
        if gains.is_empty() {
            continue;
        }
        let mean = gains.iter().sum::<f64>() / gains.len() as f64;
        let peak = gains.iter().copied().fold(0.0, f64::max);
        show!(
            "  {:<8} {:>5.1} % / {:>5.1} %",
            algorithm.name(),
            mean * 100.0,
            peak * 100.0
        )?;
    }
    table.save(&path)?;
    show!("")?;
    if args.output.is_some() {
        show!(
            "saved to {} (not the tune directory: the engine does not read it there)",
            path.display()
        )?;
    } else {
        show!(
            "saved to {}; --backend {backend} and --backend auto use it from now on",
            path.display()
        )?;
    }
    Ok(())
}

fn print_shape(shape: &TunedShape) -> Result<(), Failure> {
    let verdict = shape.decision.map_or_else(
        || "untuned shape fastest in the sweep".to_string(),
        |decision| decision.verdict(),
    );
    show!(
        "{:<8} {:<12} {:>9} {:>13} {:>12} {:>12} {:>14.1}%  {verdict}",
        shape.algorithm,
        shape.operation,
        size_name(shape.bytes as usize),
        format!("{} x {}", shape.threads_per_group, shape.blocks_per_thread),
        duration_name(shape.kernel_seconds),
        duration_name(shape.untuned_kernel_seconds),
        shape.gain() * 100.0
    )
}

fn size_name(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

fn duration_name(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.3} s")
    } else if seconds >= 1e-3 {
        format!("{:.3} ms", seconds * 1e3)
    } else {
        format!("{:.1} us", seconds * 1e6)
    }
}
