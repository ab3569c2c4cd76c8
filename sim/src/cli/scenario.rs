//! The options that pick and tune a scenario, shared by `run`, `check` and `bench`.

use sim::run::RunOptions;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ScenarioArgs {
    /// Scenario file (RON).
    pub file: PathBuf,
    /// Override a scenario parameter: `--set stages=4` (integers, or true/false).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    pub sets: Vec<(String, i64)>,
    /// Run on this GPU preset instead of the scenario's (see `sim presets`).
    #[arg(long)]
    pub gpu: Option<String>,
    /// Seed of the run's random generator (memory latency jitter).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Stop with an error past this many simulated cycles (at most 2^38).
    #[arg(long, default_value_t = 1_000_000_000, value_parser = clap::value_parser!(u64).range(1..=1 << 38))]
    pub max_cycles: u64,
    /// Stop as a livelock after this many cycles without progress (1 to 2^38; docs/cli.md).
    #[arg(long, default_value_t = sim::engine::LIVELOCK_CYCLES, value_parser = clap::value_parser!(u64).range(1..=1 << 38))]
    pub livelock_cycles: u64,
    /// Stop with an error once the simulation has run this many seconds of wall time.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub max_wall: Option<std::time::Duration>,
    /// Skip the sanitizer's hazard checks.
    #[arg(long)]
    pub no_check: bool,
    /// Threads that simulate the run (default: one per core); the output does not depend on
    /// them.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub threads: Option<u64>,
}

impl ScenarioArgs {
    /// The run's options, with no trace and no progress callback.
    pub fn options(&self, clock_mhz: Option<f64>) -> RunOptions {
        RunOptions {
            sets: self.sets.clone(),
            gpu: self.gpu.clone(),
            seed: self.seed,
            clock_mhz,
            max_cycles: self.max_cycles,
            livelock_cycles: self.livelock_cycles,
            max_wall: self.max_wall,
            check: !self.no_check,
            trace: None,
            progress: None,
            threads: super::sweep::jobs(self.threads),
        }
    }
}

fn parse_seconds(s: &str) -> Result<std::time::Duration, String> {
    s.parse::<f64>()
        .ok()
        .and_then(|v| (v > 0.0).then(|| std::time::Duration::try_from_secs_f64(v).ok())?)
        .ok_or_else(|| format!("`{s}` is not a positive number of seconds"))
}

fn parse_set(s: &str) -> Result<(String, i64), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not KEY=VALUE"))?;
    let value = sim::sweep::parse_value(v).ok_or_else(|| {
        format!(
            "the value of `{k}` must be an integer or true/false, not `{}`",
            v.trim()
        )
    })?;
    Ok((k.trim().to_string(), value))
}
