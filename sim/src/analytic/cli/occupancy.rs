//! `sim analyze occupancy` and `sim analyze waves`: the four limits of one block and the binding
//! one, and how a grid's tiles fill the GPU in waves. `sim analyze gemm` prints the same tables
//! for its tile config, and `sim explore` shows the same cells.

use super::AnalyzeError;
use crate::analytic::error::in_range;
use crate::analytic::fmt::{grouped, percent, Table};
use crate::analytic::gpu::GpuSpec;
use crate::analytic::occupancy::{occupancy, waves, Block, Occupancy, Waves};
use clap::Args;
use serde_json::{json, Value};
use std::fmt::Write;

#[derive(Args, Debug)]
pub(super) struct OccupancyArgs {
    /// GPU: any preset `sim presets` lists.
    #[arg(long, default_value = "h100-sxm")]
    gpu: String,
    /// Threads per block (CTA).
    #[arg(long, default_value_t = 256)]
    threads: u64,
    /// Registers per thread.
    #[arg(long, default_value_t = 32)]
    regs: u64,
    /// Shared memory per block, bytes.
    #[arg(long, default_value_t = 0)]
    smem: u64,
}

#[derive(Args, Debug)]
pub(super) struct WavesArgs {
    /// GPU: any preset `sim presets` lists.
    #[arg(long, default_value = "h100-sxm")]
    gpu: String,
    /// Tiles (CTAs) of the grid.
    #[arg(long)]
    tiles: u64,
    /// CTAs each SM holds at once (the occupancy).
    #[arg(long, default_value_t = 1)]
    ctas_per_sm: u64,
}

/// Most tiles `sim analyze waves` takes: slot counts stay exact.
const MAX_TILES: u64 = 1 << 30;

pub(super) fn run(a: &OccupancyArgs) -> Result<String, AnalyzeError> {
    let gpu = GpuSpec::by_name(&a.gpu)?;
    let b = Block::new(&gpu, a.threads, a.regs, a.smem)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Occupancy on {}: {} threads ({} warps), {} registers per thread ({} a warp allocated), {} B of shared memory\n",
        gpu.name,
        b.threads,
        b.warps(),
        b.regs_per_thread,
        grouped(b.regs_per_warp(&gpu)),
        grouped(b.smem)
    );
    let o = occupancy(&gpu, &b);
    out.push_str(&limits_text(&o));
    let warps = o.ctas * b.warps();
    let _ = writeln!(
        out,
        "  {warps} of {} warps resident: {} occupancy",
        gpu.threads_per_sm / 32,
        resident_share(&gpu, warps)
    );
    Ok(out)
}

/// As [`run`], as one JSON object (`--json`).
pub(super) fn run_json(a: &OccupancyArgs) -> Result<Value, AnalyzeError> {
    let gpu = GpuSpec::by_name(&a.gpu)?;
    let b = Block::new(&gpu, a.threads, a.regs, a.smem)?;
    let o = occupancy(&gpu, &b);
    Ok(json!({
        "model": "occupancy",
        "gpu": gpu.name,
        "threads": b.threads,
        "warps": b.warps(),
        "regs_per_thread": b.regs_per_thread,
        "regs_per_warp": b.regs_per_warp(&gpu),
        "smem": b.smem,
        "occupancy": occupancy_json(&o),
        "resident_warps": o.ctas * b.warps(),
        "warps_per_sm": gpu.threads_per_sm / 32,
    }))
}

/// The limits, the CTAs per SM and the limiter as one JSON object.
pub(super) fn occupancy_json(o: &Occupancy) -> Value {
    let limits: serde_json::Map<String, Value> = o
        .limits()
        .into_iter()
        .map(|(name, v)| (name.to_string(), json!(v)))
        .collect();
    json!({"limits": limits, "ctas_per_sm": o.ctas, "limiter": o.limiter})
}

/// The GPU, tiles and CTAs per SM the arguments give, checked.
fn waves_inputs(a: &WavesArgs) -> Result<(GpuSpec, u64, u64), AnalyzeError> {
    let gpu = GpuSpec::by_name(&a.gpu)?;
    let tiles = in_range("tiles", a.tiles, MAX_TILES)?;
    let ctas = in_range("ctas-per-sm", a.ctas_per_sm, gpu.ctas_per_sm)?;
    Ok((gpu, tiles, ctas))
}

pub(super) fn run_waves(a: &WavesArgs) -> Result<String, AnalyzeError> {
    let (gpu, tiles, ctas) = waves_inputs(a)?;
    let mut t = waves_table();
    t.row(waves_row(ctas.to_string(), &waves(&gpu, tiles, ctas)));
    Ok(format!(
        "Waves on {}: {tiles} tiles, {} SMs x {ctas} CTA{}/SM\n\n{}",
        gpu.name,
        gpu.sms,
        if ctas == 1 { "" } else { "s" },
        t.render()
    ))
}

/// As [`run_waves`], as one JSON object (`--json`).
pub(super) fn run_waves_json(a: &WavesArgs) -> Result<Value, AnalyzeError> {
    let (gpu, tiles, ctas) = waves_inputs(a)?;
    let mut v = waves_json(&waves(&gpu, tiles, ctas), ctas);
    v["model"] = json!("waves");
    v["gpu"] = json!(gpu.name);
    v["sms"] = json!(gpu.sms);
    Ok(v)
}

/// One wave count as a JSON object.
pub(super) fn waves_json(w: &Waves, ctas_per_sm: u64) -> Value {
    json!({
        "ctas_per_sm": ctas_per_sm,
        "tiles": w.tiles,
        "per_wave": w.per_wave,
        "waves": w.waves,
        "last_fill": w.last_fill,
        "efficiency": w.efficiency,
    })
}

/// The limit a value gives, `-` where the resource is not used.
pub(crate) fn limit_cell(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// The limits, then the binding one.
pub(super) fn limits_text(o: &Occupancy) -> String {
    let mut lim = Table::new(&["limit", "CTAs/SM"]).right(&[1]);
    for (name, v) in o.limits() {
        lim.row(vec![name.into(), limit_cell(v)]);
    }
    format!(
        "{}  -> {}, limiter {}\n",
        lim.render(),
        ctas_cell(o.ctas),
        o.limiter
    )
}

/// `1 CTA/SM`, `4 CTAs/SM`.
pub(crate) fn ctas_cell(ctas: u64) -> String {
    format!("{ctas} CTA{}/SM", if ctas == 1 { "" } else { "s" })
}

/// Resident warps as a share of the SM's warp slots.
pub(crate) fn resident_share(gpu: &GpuSpec, warps: u64) -> String {
    percent(warps as f64 / (gpu.threads_per_sm / 32) as f64, 0)
}

pub(super) fn waves_table() -> Table {
    Table::new(&[
        "CTAs/SM",
        "tiles",
        "per wave",
        "waves",
        "last wave",
        "efficiency",
    ])
    .right(&[1, 2, 3, 4, 5])
}

/// A row of [`waves_table`] under `label`.
pub(super) fn waves_row(label: String, w: &Waves) -> Vec<String> {
    let mut row = vec![label, w.tiles.to_string(), w.per_wave.to_string()];
    row.extend(waves_cells(w));
    row
}

/// Waves, the last wave's fill and the efficiency, as printed.
pub(crate) fn waves_cells(w: &Waves) -> [String; 3] {
    [
        w.waves.to_string(),
        percent(w.last_fill, 0),
        percent(w.efficiency, 1),
    ]
}
