//! Energy meters: RAPL for the CPU package(s), NVML for NVIDIA GPUs.
//!
//! Both are counters of joules since some point; a figure's energy is the difference over
//! its timed runs divided by the jobs in them. A meter that cannot be read is not an error:
//! the figure goes without energy and the report says why ([`EnergyMeters::unavailable`]).

use std::path::{Path, PathBuf};

use crate::stats::Probe;

/// The sysfs folder of the powercap framework (Intel RAPL; AMD's RAPL appears under the same
/// `intel-rapl:N` names where the kernel and permissions allow).
pub const POWERCAP: &str = "/sys/class/powercap";

/// A counter of joules.
trait Meter {
    fn name(&self) -> String;
    /// Joules since the counter's origin, wraps included as far as the meter knows.
    fn joules(&mut self) -> Result<f64, String>;
}

/// One RAPL package zone (`intel-rapl:N`).
struct RaplZone {
    name: String,
    counter: PathBuf,
    /// The counter wraps to 0 after this many microjoules.
    range_microjoules: u64,
    last: Option<u64>,
    wrapped: u64,
}

impl Meter for RaplZone {
    fn name(&self) -> String {
        format!("rapl:{}", self.name)
    }

    fn joules(&mut self) -> Result<f64, String> {
        let microjoules = read_number(&self.counter)?;
        if let Some(last) = self.last {
            if microjoules < last {
                self.wrapped += self.range_microjoules;
            }
        }
        self.last = Some(microjoules);
        Ok((self.wrapped + microjoules) as f64 / 1e6)
    }
}

fn read_number(path: &Path) -> Result<u64, String> {
    let text =
        std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
    text.trim()
        .parse()
        .map_err(|_| format!("{}: not a number: {:?}", path.display(), text.trim()))
}

/// The RAPL package zones under `root` (normally [`POWERCAP`]), or why there are none.
fn rapl_zones(root: &Path) -> Result<Vec<RaplZone>, String> {
    let entries = std::fs::read_dir(root).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => format!(
            "{} does not exist (no RAPL exposed by this kernel or VM)",
            root.display()
        ),
        _ => format!("{}: {error}", root.display()),
    })?;
    let mut zones = Vec::new();
    let mut refused = None;
    let mut folders: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            // Package zones only (`intel-rapl:0`), not their subzones (`intel-rapl:0:1`),
            // which the package already counts.
            let name = path
                .file_name()
                .and_then(|name| name.to_str())
                .unwrap_or("");
            name.strip_prefix("intel-rapl:")
                .is_some_and(|rest| !rest.contains(':'))
        })
        .collect();
    folders.sort();
    for folder in folders {
        let counter = folder.join("energy_uj");
        match read_number(&counter) {
            Ok(first) => {
                let name = std::fs::read_to_string(folder.join("name"))
                    .map(|n| n.trim().to_string())
                    .unwrap_or_else(|_| "package".into());
                let range_microjoules =
                    read_number(&folder.join("max_energy_range_uj")).unwrap_or(u64::MAX);
                zones.push(RaplZone {
                    name,
                    counter,
                    range_microjoules,
                    last: Some(first),
                    wrapped: 0,
                });
            }
            Err(error) => refused = Some(error),
        }
    }
    if zones.is_empty() {
        return Err(match refused {
            Some(error) => format!("{error} (reading RAPL needs root on kernels since 5.10)"),
            None => format!("no intel-rapl package zone under {}", root.display()),
        });
    }
    Ok(zones)
}

/// One NVIDIA GPU through NVML (loaded at run time).
struct NvmlGpu {
    nvml: nvml_wrapper::Nvml,
    index: u32,
}

impl Meter for NvmlGpu {
    fn name(&self) -> String {
        format!("nvml:gpu{}", self.index)
    }

    fn joules(&mut self) -> Result<f64, String> {
        let device = self
            .nvml
            .device_by_index(self.index)
            .map_err(|error| error.to_string())?;
        let millijoules = device
            .total_energy_consumption()
            .map_err(|error| error.to_string())?;
        Ok(millijoules as f64 / 1e3)
    }
}

fn nvml_gpu(index: u32) -> Result<NvmlGpu, String> {
    let nvml = nvml_wrapper::Nvml::init().map_err(|error| format!("NVML: {error}"))?;
    let device = nvml
        .device_by_index(index)
        .map_err(|error| format!("NVML device {index}: {error}"))?;
    device
        .total_energy_consumption()
        .map_err(|error| format!("NVML device {index} energy counter: {error}"))?;
    Ok(NvmlGpu { nvml, index })
}

/// Which meters a measurement reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The CPU packages (RAPL).
    Cpu,
    /// The CPU packages and the GPU (a GPU job also keeps the host busy).
    CpuAndGpu,
}

/// The meters this machine offers, and why the others are missing.
pub struct EnergyMeters {
    cpu: Vec<Box<dyn Meter>>,
    gpu: Vec<Box<dyn Meter>>,
    unavailable: Vec<String>,
}

impl EnergyMeters {
    /// Looks for RAPL and, when `nvidia_gpu` is given, for NVML on that GPU index.
    pub fn probe(nvidia_gpu: Option<u32>) -> Self {
        Self::probe_at(Path::new(POWERCAP), nvidia_gpu)
    }

    fn probe_at(powercap: &Path, nvidia_gpu: Option<u32>) -> Self {
        let mut meters = EnergyMeters {
            cpu: Vec::new(),
            gpu: Vec::new(),
            unavailable: Vec::new(),
        };
        match rapl_zones(powercap) {
            Ok(zones) => meters.cpu.extend(
                zones
                    .into_iter()
                    .map(|zone| Box::new(zone) as Box<dyn Meter>),
            ),
            Err(reason) => meters
                .unavailable
                .push(format!("CPU energy meter unavailable: RAPL: {reason}")),
        }
        if let Some(index) = nvidia_gpu {
            match nvml_gpu(index) {
                Ok(gpu) => meters.gpu.push(Box::new(gpu)),
                Err(reason) => meters
                    .unavailable
                    .push(format!("GPU energy meter unavailable: {reason}")),
            }
        }
        meters
    }

    /// One line per meter that could not be opened.
    pub fn unavailable(&self) -> &[String] {
        &self.unavailable
    }

    /// A probe over the meters in `scope`, to pass to a measurement; `None` when none of them
    /// exists.
    pub fn reading(&mut self, scope: Scope) -> Option<EnergyReading<'_>> {
        let mut meters: Vec<&mut Box<dyn Meter>> = self.cpu.iter_mut().collect();
        if scope == Scope::CpuAndGpu {
            meters.extend(self.gpu.iter_mut());
        }
        if meters.is_empty() {
            return None;
        }
        Some(EnergyReading {
            meters,
            start: Vec::new(),
            joules: None,
            failure: None,
        })
    }
}

/// Energy over one measurement's timed runs.
pub struct EnergyReading<'a> {
    meters: Vec<&'a mut Box<dyn Meter>>,
    start: Vec<f64>,
    joules: Option<f64>,
    failure: Option<String>,
}

impl EnergyReading<'_> {
    /// The meters read, joined: `rapl:package-0+nvml:gpu0`.
    pub fn meter_names(&self) -> String {
        self.meters
            .iter()
            .map(|meter| meter.name())
            .collect::<Vec<_>>()
            .join("+")
    }

    /// Joules over the timed runs (all meters summed), or why there is no figure.
    pub fn joules(&self) -> Result<f64, String> {
        match (&self.failure, self.joules) {
            (Some(failure), _) => Err(failure.clone()),
            (None, Some(joules)) => Ok(joules),
            (None, None) => Err("the meter was not read".into()),
        }
    }

    fn read_all(&mut self) -> Result<Vec<f64>, String> {
        self.meters.iter_mut().map(|meter| meter.joules()).collect()
    }
}

impl Probe for EnergyReading<'_> {
    fn start(&mut self) {
        match self.read_all() {
            Ok(values) => self.start = values,
            Err(error) => self.failure = Some(error),
        }
    }

    fn stop(&mut self) {
        if self.failure.is_some() {
            return;
        }
        match self.read_all() {
            Ok(values) => {
                let joules = values
                    .iter()
                    .zip(&self.start)
                    .map(|(end, start)| end - start)
                    .sum::<f64>();
                self.joules = Some(joules.max(0.0));
            }
            Err(error) => self.failure = Some(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_powercap_folder_is_reported_not_fatal() {
        let folder = tempfile::tempdir().unwrap();
        let meters = EnergyMeters::probe_at(&folder.path().join("absent"), None);
        assert_eq!(meters.unavailable().len(), 1);
        assert!(
            meters.unavailable()[0].starts_with("CPU energy meter unavailable: RAPL:"),
            "{:?}",
            meters.unavailable()
        );
    }

    #[test]
    fn rapl_packages_are_summed_and_wraps_counted() {
        let root = tempfile::tempdir().unwrap();
        for (zone, value) in [
            ("intel-rapl:0", "1000000"),
            ("intel-rapl:1", "5000000"),
            ("intel-rapl:0:0", "77"),
        ] {
            let folder = root.path().join(zone);
            std::fs::create_dir(&folder).unwrap();
            std::fs::write(folder.join("energy_uj"), value).unwrap();
            std::fs::write(folder.join("name"), format!("package-{}\n", &zone[11..])).unwrap();
            std::fs::write(folder.join("max_energy_range_uj"), "10000000").unwrap();
        }
        let mut meters = EnergyMeters::probe_at(root.path(), None);
        assert!(meters.unavailable().is_empty());
        let mut reading = meters.reading(Scope::Cpu).unwrap();
        assert_eq!(reading.meter_names(), "rapl:package-0+rapl:package-1");
        reading.start();
        // Package 0 gains 2 J; package 1 wraps at 10 J and ends at 1 J: 6 J.
        std::fs::write(root.path().join("intel-rapl:0/energy_uj"), "3000000").unwrap();
        std::fs::write(root.path().join("intel-rapl:1/energy_uj"), "1000000").unwrap();
        reading.stop();
        assert!((reading.joules().unwrap() - 8.0).abs() < 1e-9);
    }

    #[test]
    fn an_unreadable_counter_says_so() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("intel-rapl:0")).unwrap();
        let meters = EnergyMeters::probe_at(root.path(), None);
        assert!(
            meters.unavailable()[0].contains("energy_uj"),
            "{:?}",
            meters.unavailable()
        );
    }
}
