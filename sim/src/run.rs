//! From a scenario file to a report: read, validate against the preset, compile, simulate.

use crate::engine::{Config, Engine, SimError};
use crate::preset::{Preset, PresetError};
use crate::report::Report;
use isa::program::Kernel;
use isa::Diagnostic;
use std::path::Path;

#[derive(Clone, Debug)]
pub struct RunOptions {
    /// `--set key=value` parameter overrides, in order.
    pub sets: Vec<(String, i64)>,
    /// Runs on this GPU preset instead of the scenario's.
    pub gpu: Option<String>,
    pub seed: u64,
    /// Overrides the preset's loaded clock for converting cycles to time.
    pub clock_mhz: Option<f64>,
    pub max_cycles: u64,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            sets: Vec::new(),
            gpu: None,
            seed: 0,
            clock_mhz: None,
            max_cycles: Config::default().max_cycles,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("{0}")]
    Scenario(Diagnostic),
    #[error("{0}: {1}")]
    Preset(String, PresetError),
    #[error("{file}: {error}")]
    Sim { file: String, error: SimError },
    #[error("--clock-mhz must be a positive number of MHz, not {0}")]
    Clock(f64),
}

/// Reads and compiles a scenario file against its GPU preset.
pub fn load(path: &Path, opts: &RunOptions) -> Result<(Kernel, Preset), RunError> {
    let file = path.display().to_string();
    let source = std::fs::read_to_string(path).map_err(|e| RunError::Io(file.clone(), e))?;
    load_source(&file, &source, opts)
}

/// As [`load`], from text already read; `file` names it in diagnostics.
pub fn load_source(
    file: &str,
    source: &str,
    opts: &RunOptions,
) -> Result<(Kernel, Preset), RunError> {
    let scenario = isa::parse(file, source).map_err(RunError::Scenario)?;
    let gpu = opts.gpu.as_deref().unwrap_or(&scenario.gpu);
    let preset = Preset::with_overrides(gpu, &scenario.gpu_overrides)
        .map_err(|e| RunError::Preset(file.to_string(), e))?;
    let kernel = isa::compile(&scenario, &opts.sets, &preset.limits(), file, source)
        .map_err(RunError::Scenario)?;
    tracing::debug!(
        scenario = %kernel.name,
        ctas = kernel.grid,
        warps_per_cta = kernel.warps_per_cta(),
        smem_bytes = kernel.smem_bytes,
        "compiled"
    );
    Ok((kernel, preset))
}

/// Simulates a compiled kernel and builds its report.
pub fn simulate(
    file: &str,
    kernel: &Kernel,
    preset: &Preset,
    opts: &RunOptions,
) -> Result<Report, RunError> {
    let clock = match opts.clock_mhz {
        Some(c) if !(c > 0.0 && c.is_finite()) => return Err(RunError::Clock(c)),
        c => c,
    };
    let cfg = Config {
        seed: opts.seed,
        clock_mhz: clock.unwrap_or(preset.clock.loaded_mhz),
        max_cycles: opts.max_cycles,
    };
    let stats = Engine::new(kernel, preset, cfg)
        .run()
        .map_err(|error| RunError::Sim {
            file: file.to_string(),
            error,
        })?;
    tracing::debug!(
        cycles = stats.cycles,
        instructions = stats.instructions,
        events = stats.events,
        "simulated"
    );
    Ok(Report::new(kernel, preset, &stats, opts.seed, clock))
}

/// Loads, validates and simulates a scenario file.
pub fn run_file(path: &Path, opts: &RunOptions) -> Result<Report, RunError> {
    let (kernel, preset) = load(path, opts)?;
    simulate(&path.display().to_string(), &kernel, &preset, opts)
}
