//! `sim bench`: the simulator's own speed on a scenario, best of a few timed runs.

use super::emit;
use super::scenario::ScenarioArgs;
use sim::run;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Timed repetitions (after one warm-up run).
    #[arg(long, default_value_t = 5)]
    iters: u32,
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let opts = a.scenario.options(None);
    let (kernel, preset) = run::load(&a.scenario.file, &opts)?;
    let file = a.scenario.file.display().to_string();
    let once = || run::simulate(&file, &kernel, &preset, &opts);
    once()?;
    let mut best = f64::INFINITY;
    let mut report = None;
    for _ in 0..a.iters.max(1) {
        let t = Instant::now();
        let r = once()?;
        best = best.min(t.elapsed().as_secs_f64());
        report = Some(r);
    }
    let r = report.expect("at least one iteration");
    let per_s = |n: u64| n as f64 / best / 1e6;
    emit(&format!(
        "{}: {} warp-instructions, {} cycles, {} events in {:.3} ms (best of {})\n  \
         {:.2} M instructions/s, {:.2} M simulated cycles/s, {:.2} M events/s\n",
        r.scenario,
        r.instructions,
        r.cycles,
        r.events,
        best * 1e3,
        a.iters,
        per_s(r.instructions),
        per_s(r.cycles),
        per_s(r.events)
    ))
}
