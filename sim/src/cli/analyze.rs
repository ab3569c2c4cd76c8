//! `sim analyze`: the analytic models' own command line, in `sim::analytic::cli`.

use super::emit;
use sim::analytic::cli::AnalyzeArgs;

pub fn run(a: &AnalyzeArgs) -> anyhow::Result<()> {
    emit(&sim::analytic::cli::output(a).map_err(anyhow::Error::msg)?)
}
