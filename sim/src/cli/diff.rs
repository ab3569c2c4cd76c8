//! `sim diff`: two `sim run --json` reports side by side.

use super::emit;
use sim::observe::diff;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The baseline run's report (`sim run … --json > base.json`).
    baseline: PathBuf,
    /// The run to compare with it.
    current: PathBuf,
    /// Also list the metrics that did not change.
    #[arg(long)]
    all: bool,
    /// The same rows as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let base = diff::load(&a.baseline)?;
    let cur = diff::load(&a.current)?;
    let d = diff::compare(
        (&a.baseline.display().to_string(), &base),
        (&a.current.display().to_string(), &cur),
    );
    if a.json {
        emit(&(serde_json::to_string_pretty(&d)? + "\n"))
    } else {
        emit(&diff::render(&d, a.all))
    }
}
