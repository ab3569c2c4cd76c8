//! The subcommands, one file each. Each parses its arguments, calls the library and prints
//! what it returns: no figure is computed here.

mod analyze;
mod bench;
mod check;
mod diff;
mod explore;
mod presets;
mod report;
mod run;
mod scenario;
mod stalls;
mod sweep;
mod tune;
mod validate;

use clap::{Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "sim",
    version,
    about = "Cycle-level simulator of NVIDIA Hopper-class SMs"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Simulate a scenario and print a summary (or `--json`).
    Run(run::Args),
    /// Measure the simulator's speed on a scenario (simulated instructions per wall second).
    Bench(bench::Args),
    /// List the built-in GPU presets.
    Presets,
    /// Static validation and a hazard-checked simulation (no trace): hazards, deadlocks.
    Check(check::Args),
    /// Where the warps' cycles went, per role or warp, from a trace.
    Stalls(stalls::Args),
    /// Two runs' reports (`sim run --json`) side by side, with the change of every metric.
    Diff(diff::Args),
    /// One self-contained HTML page (timeline, stall charts, counters) from a trace.
    Report(report::Args),
    /// Analytic models: GEMM resources and roofline, autotuner steps, attention, decode,
    /// occupancy, waves, wgmma feed.
    Analyze(sim::analytic::cli::AnalyzeArgs),
    /// One self-contained HTML page of the analytic models' widgets (occupancy, wgmma feed,
    /// attention intensity against L2 hit rate, wave quantization), for every preset.
    Explore(explore::Args),
    /// Measured microbenchmarks (calibration/data) against their simulated twins, per group.
    Validate(sim::validate::ValidateArgs),
    /// A scenario over a product of parameter values, in parallel: a row per point, shards.
    Sweep(sweep::Args),
    /// Triton's autotuner steps with the survivors measured by simulation.
    Tune(tune::Args),
}

/// Runs a subcommand; its exit status on success (only `sim check` has one besides 0).
pub fn execute(command: Command) -> anyhow::Result<ExitCode> {
    let done = match command {
        Command::Check(a) => return check::run(&a),
        Command::Run(a) => run::run(&a),
        Command::Bench(a) => bench::run(&a),
        Command::Presets => presets::run(),
        Command::Stalls(a) => stalls::run(&a),
        Command::Diff(a) => diff::run(&a),
        Command::Report(a) => report::run(&a),
        Command::Analyze(a) => analyze::run(&a),
        Command::Explore(a) => explore::run(&a),
        Command::Validate(a) => validate::run(&a),
        Command::Sweep(a) => sweep::run(&a),
        Command::Tune(a) => tune::run(&a),
    };
    done.map(|()| ExitCode::SUCCESS)
}

/// Writes to stdout, dropping escape codes where colours are not wanted; a closed pipe
/// (`sim stalls … | head`) ends output quietly.
fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = anstream::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
