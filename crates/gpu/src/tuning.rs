//! Launch shapes and the CPU/GPU crossover, measured per device by `parcrypt tune` and kept
//! in a small JSON file, so that the engine launches each kernel with the shape that ran it
//! fastest at that input size, and `auto` sends a job to the GPU only where the GPU was
//! measured to finish it first (the best block size per input size, recorded once and then
//! chosen automatically, for every cipher, operation and input size).
//!
//! The file is per device: its name hashes the device's identity line (name, platform,
//! driver, compute units), so a table measured on one GPU or driver is never applied to
//! another. A table only ever changes speed: every kernel walks its blocks in a grid-stride
//! loop, so any shape gives the same bytes.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use parcrypt_ciphers::Algorithm;
use parcrypt_modes::{CipherSpec, Direction};
use serde::{Deserialize, Serialize};

use crate::kernel_source::KernelOperation;
use crate::{GpuError, LaunchGeometry};

/// Bumped when the file's meaning changes; files of another format are ignored.
pub const TUNE_FORMAT: u32 = 1;

/// The best launch shape found for one kernel at one input size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TunedShape {
    /// `aes-128`, `bf`, `rc6-256`, ... ([`Algorithm::name`]).
    pub algorithm: String,
    /// [`operation_name`]: `ecb-encrypt`, `ecb-decrypt`, `ctr`, `cbc-decrypt`.
    pub operation: String,
    /// The input size the shape was measured at, in bytes.
    pub bytes: u64,
    /// Work-items per work-group (CUDA: threads per block) of the best shape.
    pub threads_per_group: usize,
    /// Blocks each work-item processes, on average, in the best shape.
    pub blocks_per_thread: usize,
    /// Median kernel time with this shape (device timers: copies excluded).
    pub kernel_seconds: f64,
    /// Median kernel time with the untuned default shape, in the same run.
    pub untuned_kernel_seconds: f64,
    /// Whether the sweep's winner was kept over the untuned shape, and why ([`decide_shape`]);
    /// absent in tables written before the noise rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<ShapeDecision>,
}

/// The verdict on a candidate launch shape against the untuned one, from their timings in
/// the same confirmation rounds ([`decide_shape`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShapeDecision {
    /// Time the candidate saves against the untuned shape, median against median: 0.25 =
    /// 25 % less time (negative: slower).
    pub gain: f64,
    /// The untuned shape's run-to-run noise: its slowest run minus its fastest over its
    /// median.
    pub noise: f64,
    /// Whether the candidate is kept: only when its gain is larger than the noise.
    pub kept: bool,
}

impl ShapeDecision {
    /// One line for people: `kept: +12.0 % > noise 3.0 %`, `not kept: +2.0 % within noise
    /// 5.0 %`, or `not kept: -4.0 % (slower)`.
    pub fn verdict(&self) -> String {
        let gain = self.gain * 100.0;
        let noise = self.noise * 100.0;
        if self.kept {
            format!("kept: {gain:+.1} % > noise {noise:.1} %")
        } else if self.gain <= 0.0 {
            format!("not kept: {gain:+.1} % (no faster)")
        } else {
            format!("not kept: {gain:+.1} % within noise {noise:.1} %")
        }
    }
}

/// Decides whether a candidate launch shape replaces the untuned one, given the kernel
/// times (seconds) of both from the same alternating confirmation rounds. The noise is the
/// spread of the untuned shape's own runs (slowest minus fastest, over their median): a
/// gain no larger than that could be a quiet moment rather than a better shape, so the
/// candidate is kept only when its gain (time saved, median against median) exceeds it.
/// No timings on either side: not kept.
pub fn decide_shape(untuned_seconds: &[f64], candidate_seconds: &[f64]) -> ShapeDecision {
    let (Some(untuned), Some(candidate)) =
        (median_of(untuned_seconds), median_of(candidate_seconds))
    else {
        return ShapeDecision {
            gain: 0.0,
            noise: 0.0,
            kept: false,
        };
    };
    let gain = if untuned > 0.0 {
        1.0 - candidate / untuned
    } else {
        0.0
    };
    let fastest = untuned_seconds
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let slowest = untuned_seconds
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let noise = if untuned > 0.0 {
        (slowest - fastest) / untuned
    } else {
        0.0
    };
    ShapeDecision {
        gain,
        noise,
        kept: gain > 0.0 && gain > noise,
    }
}

/// The median of `values` (the upper middle one for an even count), `None` when empty.
fn median_of(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied()
}

impl TunedShape {
    /// The shape as the launch code takes it.
    pub fn geometry(&self) -> LaunchGeometry {
        LaunchGeometry {
            threads_per_group: self.threads_per_group,
            blocks_per_thread: self.blocks_per_thread,
        }
    }

    /// How much faster the tuned shape ran than the untuned one: 0.25 = 25 % less time.
    pub fn gain(&self) -> f64 {
        if self.untuned_kernel_seconds > 0.0 {
            1.0 - self.kernel_seconds / self.untuned_kernel_seconds
        } else {
            0.0
        }
    }
}

/// One input size of a crossover measurement: the whole job, end to end, on the CPU
/// (`auto`'s own choice of one thread or the pool) and on the GPU (copies included).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CrossoverPoint {
    /// The job's input size, in bytes.
    pub bytes: u64,
    /// Time the whole job took on the CPU, in seconds.
    pub cpu_seconds: f64,
    /// Time the whole job took on the GPU, copies included, in seconds.
    pub gpu_seconds: f64,
}

/// Where the GPU starts to win for one cipher, mode and direction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Crossover {
    /// `aes-128-ctr`, ... ([`CipherSpec`]'s name).
    pub spec: String,
    /// `encrypt` or `decrypt`.
    pub direction: String,
    /// Measured sizes, ascending.
    pub points: Vec<CrossoverPoint>,
    /// The smallest measured size from which the GPU was faster at every larger measured
    /// size; `None` when the CPU won at the largest size measured.
    pub gpu_from_bytes: Option<u64>,
}

impl Crossover {
    /// Builds the record and derives [`Crossover::gpu_from_bytes`] from the points.
    pub fn new(spec: CipherSpec, direction: Direction, mut points: Vec<CrossoverPoint>) -> Self {
        points.sort_by_key(|point| point.bytes);
        let mut gpu_from_bytes = None;
        for point in points.iter().rev() {
            if point.gpu_seconds < point.cpu_seconds {
                gpu_from_bytes = Some(point.bytes);
            } else {
                break;
            }
        }
        Crossover {
            spec: spec.to_string(),
            direction: direction_name(direction).to_string(),
            points,
            gpu_from_bytes,
        }
    }
}

/// Everything `parcrypt tune` measured on one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneTable {
    /// The file format version ([`TUNE_FORMAT`] when written by this build).
    pub format: u32,
    /// `opencl` or `cuda`.
    pub api: String,
    /// The device's identity line ([`device_identity`]); the file applies to it alone.
    pub device: String,
    /// Seconds since the Unix epoch when the measurement ended.
    pub measured_at_unix: u64,
    /// The shape the device used before tuning (the baseline of every gain).
    pub untuned: LaunchShapeRecord,
    /// The best shape per cipher, operation and input size.
    pub shapes: Vec<TunedShape>,
    /// Where the GPU starts to win, per cipher, mode and direction.
    pub crossovers: Vec<Crossover>,
    /// Lookup index, rebuilt after loading.
    #[serde(skip)]
    index: HashMap<(String, String), Vec<(u64, LaunchGeometry)>>,
}

/// A launch shape as stored in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchShapeRecord {
    /// Work-items per work-group (CUDA: threads per block).
    pub threads_per_group: usize,
    /// Blocks each work-item processes, on average.
    pub blocks_per_thread: usize,
}

impl From<LaunchGeometry> for LaunchShapeRecord {
    fn from(geometry: LaunchGeometry) -> Self {
        LaunchShapeRecord {
            threads_per_group: geometry.threads_per_group,
            blocks_per_thread: geometry.blocks_per_thread,
        }
    }
}

/// The stable name of a kernel operation in tune files.
pub fn operation_name(operation: KernelOperation) -> &'static str {
    match operation {
        KernelOperation::EcbEncrypt => "ecb-encrypt",
        KernelOperation::EcbDecrypt => "ecb-decrypt",
        KernelOperation::Ctr => "ctr",
        KernelOperation::CbcDecrypt => "cbc-decrypt",
    }
}

/// The stable name of a direction in tune files: `encrypt` or `decrypt`.
pub fn direction_name(direction: Direction) -> &'static str {
    match direction {
        Direction::Encrypt => "encrypt",
        Direction::Decrypt => "decrypt",
    }
}

/// The line that identifies a device to its tune file: the API and the device as
/// `parcrypt devices` prints it (name, platform or compute capability, driver, units).
pub fn device_identity(api: &str, description: &str) -> String {
    format!("{api} {}", description.trim())
}

impl TuneTable {
    /// A table for the device identified by `device`, stamped with the current time and
    /// this build's format, with its lookup index built.
    pub fn new(
        api: &str,
        device: String,
        untuned: LaunchGeometry,
        shapes: Vec<TunedShape>,
        crossovers: Vec<Crossover>,
    ) -> Self {
        let measured_at_unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_secs())
            .unwrap_or(0);
        let mut table = TuneTable {
            format: TUNE_FORMAT,
            api: api.to_string(),
            device,
            measured_at_unix,
            untuned: untuned.into(),
            shapes,
            crossovers,
            index: HashMap::new(),
        };
        table.build_index();
        table
    }

    fn build_index(&mut self) {
        let mut index: HashMap<(String, String), Vec<(u64, LaunchGeometry)>> = HashMap::new();
        for shape in &self.shapes {
            if shape.threads_per_group == 0 || shape.blocks_per_thread == 0 {
                continue;
            }
            index
                .entry((shape.algorithm.clone(), shape.operation.clone()))
                .or_default()
                .push((shape.bytes.max(1), shape.geometry()));
        }
        for sizes in index.values_mut() {
            sizes.sort_by_key(|(bytes, _)| *bytes);
        }
        self.index = index;
    }

    /// The shape to launch `operation` of `algorithm` with over `bytes`: the one tuned at
    /// the measured size nearest to `bytes` on a log scale (the smaller on a tie); `None`
    /// when this cipher and operation were not tuned.
    pub fn geometry_for(
        &self,
        algorithm: Algorithm,
        operation: KernelOperation,
        bytes: usize,
    ) -> Option<LaunchGeometry> {
        // An operation that was not tuned borrows its sibling's shapes: CTR and ECB
        // encryption run the same rounds over the same table, and so do ECB and CBC
        // decryption.
        let sibling = match operation {
            KernelOperation::EcbEncrypt => KernelOperation::Ctr,
            KernelOperation::Ctr => KernelOperation::EcbEncrypt,
            KernelOperation::EcbDecrypt => KernelOperation::CbcDecrypt,
            KernelOperation::CbcDecrypt => KernelOperation::EcbDecrypt,
        };
        let key = |operation| {
            (
                algorithm.name().to_string(),
                operation_name(operation).to_string(),
            )
        };
        let sizes = self
            .index
            .get(&key(operation))
            .or_else(|| self.index.get(&key(sibling)))?;
        let target = (bytes.max(1) as f64).log2();
        sizes
            .iter()
            .min_by(|left, right| {
                let distance = |size: u64| ((size as f64).log2() - target).abs();
                distance(left.0).total_cmp(&distance(right.0))
            })
            .map(|(_, geometry)| *geometry)
    }

    /// The measured crossover for a job, if one was measured. CTR decryption is CTR
    /// encryption, so either direction's measurement serves both.
    pub fn crossover(&self, spec: CipherSpec, direction: Direction) -> Option<&Crossover> {
        let name = spec.to_string();
        let wanted = direction_name(direction);
        let matching = |crossover: &&Crossover| crossover.spec == name;
        self.crossovers
            .iter()
            .filter(matching)
            .find(|crossover| crossover.direction == wanted)
            .or_else(|| {
                (spec.mode == parcrypt_modes::Mode::Ctr)
                    .then(|| self.crossovers.iter().find(matching))
                    .flatten()
            })
    }

    /// Whether the GPU was measured to finish a job of `bytes` first.
    pub fn gpu_wins(&self, spec: CipherSpec, direction: Direction, bytes: usize) -> bool {
        self.crossover(spec, direction)
            .and_then(|crossover| crossover.gpu_from_bytes)
            .is_some_and(|from| bytes as u64 >= from)
    }

    /// Whether any job of this cipher, mode and direction would go to the GPU.
    pub fn gpu_ever_wins(&self, spec: CipherSpec, direction: Direction) -> bool {
        self.crossover(spec, direction)
            .is_some_and(|crossover| crossover.gpu_from_bytes.is_some())
    }

    /// Reads a table; `Ok(None)` when the file does not exist.
    pub fn load(path: &Path) -> Result<Option<Self>, GpuError> {
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => {
                return Err(GpuError::InvalidInput(format!(
                    "cannot read the tune file {}: {error}",
                    path.display()
                )))
            }
        };
        let mut table: TuneTable = serde_json::from_str(&text).map_err(|error| {
            GpuError::InvalidInput(format!(
                "the tune file {} is damaged ({error}); run `parcrypt tune` again",
                path.display()
            ))
        })?;
        if table.format != TUNE_FORMAT {
            return Err(GpuError::InvalidInput(format!(
                "the tune file {} has format {}, this parcrypt reads format {TUNE_FORMAT}; \
                 run `parcrypt tune` again",
                path.display(),
                table.format
            )));
        }
        table.build_index();
        Ok(Some(table))
    }

    /// Writes the table to `path` (a temporary file renamed into place, so a reader never
    /// sees half a table), creating the directory.
    pub fn save(&self, path: &Path) -> Result<(), GpuError> {
        let failed = |error: std::io::Error| {
            GpuError::InvalidInput(format!(
                "cannot write the tune file {}: {error}",
                path.display()
            ))
        };
        if let Some(directory) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            fs::create_dir_all(directory).map_err(failed)?;
        }
        let text = serde_json::to_string_pretty(self)
            .map_err(|error| GpuError::InvalidInput(format!("tune table: {error}")))?;
        let temporary = path.with_extension(format!("json.tmp{}", std::process::id()));
        let written = fs::File::create(&temporary).and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.write_all(b"\n")?;
            file.sync_all()
        });
        if let Err(error) = written.and_then(|()| fs::rename(&temporary, path)) {
            let _ = fs::remove_file(&temporary);
            return Err(failed(error));
        }
        Ok(())
    }
}

/// The shape a launch uses: the tune table's for this cipher, operation and size when it
/// has one, else the device's launch shape.
pub(crate) fn choose_geometry(
    geometry: LaunchGeometry,
    table: Option<&TuneTable>,
    algorithm: Algorithm,
    operation: KernelOperation,
    bytes: usize,
) -> LaunchGeometry {
    table
        .and_then(|table| table.geometry_for(algorithm, operation, bytes))
        .unwrap_or(geometry)
}

/// Where tune files live, given the environment's variables through `lookup` (a name to its
/// value, `None` when unset; this crate reads no environment itself, its front ends pass
/// theirs): `$PARCRYPT_TUNE_DIR`, else `$XDG_CONFIG_HOME/parcrypt/tune`, else
/// `$HOME/.config/parcrypt/tune`; `None` when none of them is set (empty counts as unset).
pub fn tune_directory_from(lookup: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let set = |name: &str| lookup(name).filter(|value| !value.is_empty());
    if let Some(directory) = set("PARCRYPT_TUNE_DIR") {
        return Some(PathBuf::from(directory));
    }
    let base = set("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(base.join("parcrypt").join("tune"))
}

/// The file for the device with this identity line, in `directory`.
pub fn tune_file(directory: &Path, api: &str, identity: &str) -> PathBuf {
    let hash = crate::program_cache::fnv1a_128(&["parcrypt-tune", identity]);
    directory.join(format!("{api}-{:016x}.json", hash as u64))
}

/// Whether `directory` holds any tune file of `api` (cheap: no device is touched).
pub fn any_tune_file(directory: &Path, api: &str) -> bool {
    let prefix = format!("{api}-");
    fs::read_dir(directory)
        .map(|entries| {
            entries.flatten().any(|entry| {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                name.starts_with(&prefix) && name.ends_with(".json")
            })
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(algorithm: &str, operation: &str, bytes: u64, threads: usize) -> TunedShape {
        TunedShape {
            algorithm: algorithm.into(),
            operation: operation.into(),
            bytes,
            threads_per_group: threads,
            blocks_per_thread: 2,
            kernel_seconds: 1.0,
            untuned_kernel_seconds: 2.0,
            decision: None,
        }
    }

    #[test]
    fn a_shape_is_kept_only_when_its_gain_exceeds_the_noise() {
        // Untuned 10 ms give or take 0.5 ms (noise 10 %); the candidate saves 30 %.
        let untuned = [0.0100, 0.0095, 0.0105, 0.0100, 0.0099];
        let decision = decide_shape(&untuned, &[0.0070, 0.0071, 0.0069]);
        assert!(decision.kept);
        assert!((decision.gain - 0.30).abs() < 1e-9);
        assert!((decision.noise - 0.10).abs() < 1e-9);
        assert_eq!(decision.verdict(), "kept: +30.0 % > noise 10.0 %");

        // Saves 5 %, less than the 10 % the untuned shape wanders by itself.
        let decision = decide_shape(&untuned, &[0.0095, 0.0094, 0.0096]);
        assert!(!decision.kept);
        assert_eq!(decision.verdict(), "not kept: +5.0 % within noise 10.0 %");

        // A noisy untuned shape: one slow outlier run (12x) is noise, not a 91.7 % gain.
        let wild = [0.012, 0.001, 0.0011, 0.0010, 0.0012];
        let decision = decide_shape(&wild, &[0.00095, 0.0010, 0.0009]);
        assert!(!decision.kept);
        assert!(decision.noise > 9.0);

        // Slower, or nothing measured: never kept.
        let decision = decide_shape(&untuned, &[0.011, 0.012, 0.011]);
        assert!(!decision.kept);
        assert_eq!(decision.verdict(), "not kept: -10.0 % (no faster)");
        assert!(!decide_shape(&[], &[0.001]).kept);
        assert!(!decide_shape(&untuned, &[]).kept);

        // Perfectly steady timings: any real gain is kept.
        let decision = decide_shape(&[0.002, 0.002, 0.002], &[0.0019, 0.0019, 0.0019]);
        assert!(decision.kept);
        assert_eq!(decision.noise, 0.0);
    }

    fn point(bytes: u64, cpu_seconds: f64, gpu_seconds: f64) -> CrossoverPoint {
        CrossoverPoint {
            bytes,
            cpu_seconds,
            gpu_seconds,
        }
    }

    fn table() -> TuneTable {
        let ctr: CipherSpec = "aes-128-ctr".parse().unwrap();
        TuneTable::new(
            "opencl",
            "opencl #0 test device".into(),
            LaunchGeometry {
                threads_per_group: 256,
                blocks_per_thread: 16,
            },
            vec![
                shape("aes-128", "ctr", 64, 64),
                shape("aes-128", "ctr", 4096, 128),
                shape("aes-128", "ctr", 1 << 20, 512),
                shape("aes-128", "ecb-decrypt", 64, 96),
            ],
            vec![Crossover::new(
                ctr,
                Direction::Encrypt,
                vec![
                    point(1 << 20, 1.0, 2.0),
                    point(1 << 10, 1.0, 9.0),
                    // A GPU win below a CPU win does not count: the crossover is where the
                    // GPU wins from then on.
                    point(1 << 14, 1.0, 0.5),
                    point(1 << 24, 2.0, 1.0),
                    point(1 << 26, 8.0, 1.0),
                ],
            )],
        )
    }

    #[test]
    fn the_nearest_tuned_size_on_a_log_scale_is_used() {
        let table = table();
        let geometry = |bytes| {
            table
                .geometry_for(Algorithm::Aes128, KernelOperation::Ctr, bytes)
                .map(|geometry| geometry.threads_per_group)
        };
        assert_eq!(geometry(0), Some(64));
        assert_eq!(geometry(100), Some(64));
        // 512 is 3 doublings from 64 and 3 from 4096: the smaller size wins the tie.
        assert_eq!(geometry(512), Some(64));
        assert_eq!(geometry(600), Some(128));
        assert_eq!(geometry(1 << 16), Some(128));
        assert_eq!(geometry(1 << 30), Some(512));
        assert_eq!(
            table.geometry_for(Algorithm::Aes128, KernelOperation::EcbDecrypt, 1 << 30),
            Some(LaunchGeometry {
                threads_per_group: 96,
                blocks_per_thread: 2
            })
        );
        assert_eq!(
            table.geometry_for(Algorithm::Aes256, KernelOperation::Ctr, 64),
            None
        );
        // Untuned operations borrow their sibling's shapes.
        assert_eq!(
            table.geometry_for(Algorithm::Aes128, KernelOperation::EcbEncrypt, 1 << 30),
            table.geometry_for(Algorithm::Aes128, KernelOperation::Ctr, 1 << 30)
        );
        assert_eq!(
            table.geometry_for(Algorithm::Aes128, KernelOperation::CbcDecrypt, 64),
            table.geometry_for(Algorithm::Aes128, KernelOperation::EcbDecrypt, 64)
        );
    }

    #[test]
    fn the_crossover_is_where_the_gpu_wins_from_then_on() {
        let table = table();
        let ctr: CipherSpec = "aes-128-ctr".parse().unwrap();
        let crossover = table.crossover(ctr, Direction::Encrypt).unwrap();
        assert_eq!(crossover.gpu_from_bytes, Some(1 << 24));
        assert!(crossover
            .points
            .windows(2)
            .all(|pair| pair[0].bytes < pair[1].bytes));
        assert!(!table.gpu_wins(ctr, Direction::Encrypt, 1 << 14));
        assert!(!table.gpu_wins(ctr, Direction::Encrypt, (1 << 24) - 1));
        assert!(table.gpu_wins(ctr, Direction::Encrypt, 1 << 24));
        assert!(table.gpu_wins(ctr, Direction::Encrypt, 1 << 34));
        assert!(table.gpu_ever_wins(ctr, Direction::Encrypt));
        // CTR decryption is CTR encryption.
        assert!(table.gpu_wins(ctr, Direction::Decrypt, 1 << 34));
        // Not measured: never the GPU.
        let ecb: CipherSpec = "aes-128-ecb".parse().unwrap();
        assert!(!table.gpu_wins(ecb, Direction::Encrypt, 1 << 34));
        let gcm: CipherSpec = "aes-128-gcm".parse().unwrap();
        assert!(!table.gpu_ever_wins(gcm, Direction::Encrypt));

        let never = Crossover::new(
            ctr,
            Direction::Encrypt,
            vec![point(1, 1.0, 0.5), point(2, 1.0, 1.0)],
        );
        assert_eq!(
            never.gpu_from_bytes, None,
            "a tie at the largest size is not a GPU win"
        );
        assert_eq!(
            Crossover::new(ctr, Direction::Encrypt, Vec::new()).gpu_from_bytes,
            None
        );
    }

    #[test]
    fn tables_survive_a_round_trip_through_their_file() {
        let directory = tempfile::tempdir().unwrap();
        let path = tune_file(directory.path(), "opencl", "opencl #0 test device");
        assert!(path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("opencl-"));
        assert!(!any_tune_file(directory.path(), "opencl"));
        assert_eq!(TuneTable::load(&path).unwrap(), None);
        let table = table();
        table.save(&path).unwrap();
        assert!(any_tune_file(directory.path(), "opencl"));
        assert!(!any_tune_file(directory.path(), "cuda"));
        let loaded = TuneTable::load(&path).unwrap().unwrap();
        assert_eq!(loaded, table);
        // The index is rebuilt on load, so lookups work on the loaded copy.
        assert_eq!(
            loaded.geometry_for(Algorithm::Aes128, KernelOperation::Ctr, 1 << 20),
            table.geometry_for(Algorithm::Aes128, KernelOperation::Ctr, 1 << 20)
        );
        // Another device gets another file.
        assert_ne!(
            path,
            tune_file(directory.path(), "opencl", "opencl #0 other device")
        );
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(directory.path()).unwrap().count(), 1);
    }

    #[test]
    fn damaged_or_foreign_files_are_refused_with_a_reason() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("opencl-0.json");
        fs::write(&path, "{ not json").unwrap();
        let error = TuneTable::load(&path).unwrap_err().to_string();
        assert!(
            error.contains("damaged") && error.contains("parcrypt tune"),
            "{error}"
        );
        let mut table = table();
        table.format = TUNE_FORMAT + 1;
        fs::write(&path, serde_json::to_string(&table).unwrap()).unwrap();
        let error = TuneTable::load(&path).unwrap_err().to_string();
        assert!(error.contains("format"), "{error}");
    }

    #[test]
    fn gains_compare_with_the_untuned_shape() {
        let mut tuned = shape("bf", "ctr", 64, 64);
        assert!((tuned.gain() - 0.5).abs() < 1e-12);
        tuned.untuned_kernel_seconds = 0.0;
        assert_eq!(tuned.gain(), 0.0);
    }
}
