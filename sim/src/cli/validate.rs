//! `sim validate`: measured microbenchmarks against their simulated twins, in `sim::validate`.

use sim::validate::ValidateArgs;

pub fn run(a: &ValidateArgs) -> anyhow::Result<()> {
    sim::validate::run_cli(a).map_err(anyhow::Error::msg)
}
