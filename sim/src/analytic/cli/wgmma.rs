//! `sim analyze wgmma`: one wgmma's math against its operand reads for a range of N, with A
//! from shared memory (SS) or registers (RS), and the N from which SS keeps the tensor cores
//! fed. `sim analyze attention` prints the same table, and `sim explore` the same cells.

use super::{check_step, AnalyzeError};
use crate::analytic::fmt::{percent, Table};
use crate::analytic::gpu::GpuSpec;
use crate::analytic::wgmma::{feed, min_fed_n};
use clap::Args;
use serde_json::{json, Value};

#[derive(Args, Debug)]
pub(super) struct WgmmaArgs {
    /// GPU: a preset with wgmma, h100-sxm or h200-sxm.
    #[arg(long, default_value = "h100-sxm")]
    gpu: String,
    /// The wgmma's N, each a multiple of 8 in 8..=256.
    #[arg(long, value_delimiter = ',', default_values_t = [32, 64, 128, 256])]
    n: Vec<u64>,
}

/// The GPU the arguments name, with every N checked.
fn inputs(a: &WgmmaArgs) -> Result<GpuSpec, AnalyzeError> {
    let gpu = GpuSpec::by_name(&a.gpu)?;
    if !gpu.has_wgmma {
        return Err(AnalyzeError::NoWgmma(gpu.name, "wgmma"));
    }
    for &n in &a.n {
        check_step("n", n, 8, 8, 256)?;
    }
    Ok(gpu)
}

pub(super) fn run(a: &WgmmaArgs) -> Result<String, AnalyzeError> {
    let gpu = inputs(a)?;
    Ok(format!(
        "wgmma on {}: {} tensor FLOP and {} shared-memory bytes per cycle per SM\n\n{}",
        gpu.name,
        gpu.tensor_flops_per_clk,
        gpu.smem_bytes_per_clk,
        feed_text(&gpu, &a.n)
    ))
}

/// As [`run`], as one JSON object (`--json`).
pub(super) fn run_json(a: &WgmmaArgs) -> Result<Value, AnalyzeError> {
    let gpu = inputs(a)?;
    Ok(json!({
        "model": "wgmma",
        "gpu": gpu.name,
        "tensor_flops_per_clk": gpu.tensor_flops_per_clk,
        "smem_bytes_per_clk": gpu.smem_bytes_per_clk,
        "feed": feed_json(&gpu, &a.n),
        "min_fed_n": min_fed_n(&gpu),
    }))
}

/// The feed table's rows for each of `ns` as JSON objects.
pub(super) fn feed_json(gpu: &GpuSpec, ns: &[u64]) -> Vec<Value> {
    ns.iter()
        .map(|&n| {
            let f = feed(gpu, n);
            json!({
                "n": n,
                "compute_clk": f.compute_clk,
                "ss_feed_clk": f.a_clk + f.b_clk,
                "rs_feed_clk": f.b_clk,
                "ss_ratio": f.ss_ratio(),
                "rs_ratio": f.rs_ratio(),
                "ss_utilization": f.ss_utilization(),
            })
        })
        .collect()
}

/// The feed table for each of `ns`, then the break-even N.
pub(super) fn feed_text(gpu: &GpuSpec, ns: &[u64]) -> String {
    let mut ft = Table::new(&[
        "N", "compute", "SS feed", "RS feed", "SS ratio", "RS ratio", "SS util",
    ])
    .right(&[0, 1, 2, 3, 4, 5, 6]);
    for &n in ns {
        let mut row = vec![n.to_string()];
        row.extend(feed_cells(gpu, n));
        ft.row(row);
    }
    format!(
        "wgmma m64nNk16 feed (cycles of one SM per wgmma)\n{}  SS keeps the tensor cores fed for {}\n",
        ft.render(),
        fed_n(gpu)
    )
}

/// One N's cells after N: compute, SS and RS feed cycles, their ratios, SS utilization.
pub(crate) fn feed_cells(gpu: &GpuSpec, n: u64) -> [String; 6] {
    let f = feed(gpu, n);
    [
        format!("{:.1}", f.compute_clk),
        format!("{:.1}", f.a_clk + f.b_clk),
        format!("{:.1}", f.b_clk),
        format!("{:.2}", f.ss_ratio()),
        format!("{:.2}", f.rs_ratio()),
        percent(f.ss_utilization(), 0),
    ]
}

/// `N >= 64`: where SS compute time reaches its feed time.
pub(crate) fn fed_n(gpu: &GpuSpec) -> String {
    min_fed_n(gpu).map_or("no N".to_string(), |n| format!("N >= {}", n.ceil()))
}
