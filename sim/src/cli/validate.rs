//! `sim validate`: measured microbenchmarks against their simulated twins, in `sim::validate`.

use super::emit;
use sim::validate::ValidateArgs;

pub fn run(a: &ValidateArgs) -> anyhow::Result<()> {
    let (text, verdict) = sim::validate::run_cli(a).map_err(anyhow::Error::msg)?;
    emit(&text)?;
    verdict.map_err(anyhow::Error::msg)
}
