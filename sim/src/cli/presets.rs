//! `sim presets`: the built-in GPU presets, one line each.

use super::emit;
use comfy_table::{presets, ColumnConstraint, Table, Width};
use sim::gpu::preset::Preset;

pub fn run() -> anyhow::Result<()> {
    let mut table = Table::new();
    table.load_style(presets::NOTHING);
    for name in Preset::names() {
        table.add_row([name.to_string(), Preset::builtin(name)?.description]);
    }
    // Names padded to at least 10 characters, then one space.
    if let Some(names) = table.column_mut(0) {
        names.set_padding((0, 1));
        names.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(11)));
    }
    if let Some(descriptions) = table.column_mut(1) {
        descriptions.set_padding((0, 0));
    }
    emit(&(table.trim_fmt() + "\n"))
}
