//! `sim presets`: the built-in GPU presets, one line each.

use super::emit;
use sim::gpu::preset::Preset;

pub fn run() -> anyhow::Result<()> {
    for name in Preset::names() {
        let p = Preset::builtin(name)?;
        emit(&format!("{name:<10} {}\n", p.description))?;
    }
    Ok(())
}
