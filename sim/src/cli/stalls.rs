//! `sim stalls`: the warp-state breakdown of a trace, as bars, CSV or JSON.

use super::emit;
use anstream::{AutoStream, ColorChoice};
use sim::observe::stalls;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Trace file written by `sim run`.
    trace: PathBuf,
    /// One row per warp instead of per role.
    #[arg(long)]
    per_warp: bool,
    /// Comma-separated rows: row,state,ncu,warp_cycles,fraction.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// The same numbers as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let s = stalls::load(&a.trace, a.per_warp)?;
    if a.csv {
        emit(&stalls::csv(&s))
    } else if a.json {
        emit(&(serde_json::to_string_pretty(&s)? + "\n"))
    } else {
        let color = AutoStream::choice(&std::io::stdout()) != ColorChoice::Never;
        emit(&stalls::render(&s, color))
    }
}
