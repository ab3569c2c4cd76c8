//! `sim check`: validate a scenario and simulate it with the hazard checks, up to a cycle cap.
//! A run that finishes without a hazard or deadlock passes; one stopped at the cap proves
//! nothing about the rest and is inconclusive, with its own exit status.

use super::emit;
use super::scenario::ScenarioArgs;
use sim::engine::SimError;
use sim::run::{self, RunError};
use std::process::ExitCode;

/// The exit status of a check stopped at its cycle budget (docs/cli.md).
pub const INCONCLUSIVE: u8 = 3;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Simulate at most this many cycles (1 to 2^38).
    #[arg(long, default_value_t = 20_000_000, value_parser = clap::value_parser!(u64).range(1..=1 << 38))]
    check_cycles: u64,
}

pub fn run(a: &Args) -> anyhow::Result<ExitCode> {
    if a.scenario.no_check {
        anyhow::bail!("`sim check` always runs the hazard checks: drop --no-check");
    }
    let mut opts = a.scenario.options(None);
    opts.max_cycles = opts.max_cycles.min(a.check_cycles);
    let file = a.scenario.file.display();
    // A sequence's kernels are checked one after another, as `sim run` runs them.
    let cycles = run::run_scenario(&a.scenario.file, &opts).map(|r| r.cycles());
    match cycles {
        Ok(cycles) => {
            emit(&format!(
                "{file}: valid; simulated to completion in {cycles} cycles with no hazard and no deadlock\n"
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        Err(RunError::Sim { error, .. }) if matches!(*error, SimError::CycleLimit { .. }) => {
            emit(&format!(
                "{file}: inconclusive; no hazard and no deadlock in the first {} cycles, but the run had not finished (raise --check-cycles or --max-cycles)\n",
                opts.max_cycles
            ))?;
            Ok(ExitCode::from(INCONCLUSIVE))
        }
        Err(RunError::Sim { error, .. }) if matches!(*error, SimError::WallLimit { .. }) => {
            emit(&format!(
                "{file}: inconclusive; no hazard and no deadlock before the wall-clock limit, but the run had not finished ({error})\n"
            ))?;
            Ok(ExitCode::from(INCONCLUSIVE))
        }
        Err(e) => Err(e.into()),
    }
}
