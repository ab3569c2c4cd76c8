//! The clock rows: the preset's sustained SM clock at each measured load's tensor load against
//! the clock measured under it (`calibration/data/h200-clocks.csv`). No twin runs: the load
//! follows from the measured rate, `load_rate / (SMs × tensor FLOP per cycle × load_clock)`.

use super::data::{Data, DataError};
use super::report::Row;
use crate::gpu::preset::Preset;

/// (group, load) of each row, in table order.
const LOADS: &[(&str, &str)] = &[
    ("clock", "matmul2048"),
    ("clock", "matmul4096"),
    ("clock", "matmul8192"),
    ("clock_data", "matmul8192_zeros"),
];

/// The rows of the selected groups (all when `groups` is empty).
pub(super) fn rows(p: &Preset, data: &Data, groups: &[String]) -> Result<Vec<Row>, DataError> {
    let mut rows = Vec::new();
    for (group, name) in LOADS {
        if !(groups.is_empty() || groups.iter().any(|g| g == group)) {
            continue;
        }
        let measured = data.value("clocks", "load_clock", name)?;
        let tflops = data.value("clocks", "load_rate", name)?;
        let peak_per_mhz = p.sm.count as f64 * p.tensor.flops_per_cycle as f64 * 1e6;
        let load = tflops * 1e12 / (peak_per_mhz * measured);
        let simulated = p.clock.sustained_mhz(load);
        rows.push(Row {
            group: group.to_string(),
            name: format!("{name} at load {load:.3}"),
            unit: "MHz".to_string(),
            measured,
            simulated,
            error: simulated / measured - 1.0,
        });
    }
    Ok(rows)
}
