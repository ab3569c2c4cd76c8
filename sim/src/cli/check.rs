//! `sim check`: validate a scenario and simulate it with the hazard checks, up to a cycle cap;
//! reaching the cap without a hazard or deadlock passes.

use super::emit;
use super::scenario::ScenarioArgs;
use sim::engine::SimError;
use sim::run::{self, RunError};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Simulate at most this many cycles.
    #[arg(long, default_value_t = 20_000_000)]
    check_cycles: u64,
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    if a.scenario.no_check {
        anyhow::bail!("`sim check` always runs the hazard checks: drop --no-check");
    }
    let mut opts = a.scenario.options(None);
    opts.max_cycles = opts.max_cycles.min(a.check_cycles);
    let file = a.scenario.file.display();
    match run::run_file(&a.scenario.file, &opts) {
        Ok(r) => emit(&format!(
            "{file}: valid; simulated to completion in {} cycles with no hazard and no deadlock\n",
            r.cycles
        )),
        Err(RunError::Sim { error, .. }) if matches!(*error, SimError::CycleLimit { .. }) => {
            emit(&format!(
                "{file}: valid; no hazard and no deadlock in the first {} cycles (stopped there)\n",
                opts.max_cycles
            ))
        }
        Err(e) => Err(e.into()),
    }
}
