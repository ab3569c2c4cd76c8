//! `sim analyze gemm`: the GEMM resource model (FLOPs and bytes, resources per CTA,
//! occupancy, waves, roofline), or with `--tune` the autotuner's steps ([`super::tune`]).

use super::occupancy::{limits_text, occupancy_json, waves_json, waves_row, waves_table};
use super::{hit_rate, tune, AnalyzeError};
use crate::analytic::fmt::{grouped, percent, time, Table};
use crate::analytic::gemm::{check, Gemm, TileConfig};
use crate::analytic::gpu::GpuSpec;
use crate::analytic::occupancy::waves;
use crate::analytic::roofline::{roofline, Bound};
use clap::Args;
use serde_json::{json, Value};
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub(super) struct GemmArgs {
    /// GPU: any preset `sim presets` lists.
    #[arg(long, default_value = "h100-sxm")]
    gpu: String,
    /// Rows of A and C.
    m: u64,
    /// Columns of B and C.
    n: u64,
    /// The reduction dimension.
    k: u64,
    /// Tile `BMxBNxBK`.
    #[arg(long, default_value = "128x128x64")]
    tile: String,
    /// Warps per CTA.
    #[arg(long, default_value_t = 4)]
    warps: u64,
    /// Pipeline stages of A and B tiles in shared memory.
    #[arg(long, default_value_t = 3)]
    stages: u64,
    /// L2 hit rate of the A/B reads, in [0, 1): an assumption or a simulator's measured rate.
    #[arg(long, allow_negative_numbers = true)]
    l2_hit: Option<f64>,
    /// Run the autotuner's analytic steps over the 192-config space instead.
    #[arg(long, conflicts_with_all = ["tile", "warps", "stages", "l2_hit"])]
    tune: bool,
    /// Configs the perf model keeps (raised to the size of its tie group).
    #[arg(long, default_value_t = 8, requires = "tune")]
    top_k: usize,
    /// Measured medians for pick_best, one `BMxBNxBK warps stages median p20 p80` (ms) per
    /// line; default: the example table.
    #[arg(long, requires = "tune")]
    medians: Option<PathBuf>,
}

pub(super) fn run(a: &GemmArgs) -> Result<String, AnalyzeError> {
    let gpu = GpuSpec::by_name(&a.gpu)?;
    let g = Gemm::new(a.m, a.n, a.k)?;
    if a.tune {
        return tune::run(&gpu, &g, a.top_k, a.medians.as_deref());
    }
    let (t, hit) = tile(a)?;
    Ok(gemm_text(&gpu, &g, &t, hit))
}

/// As [`run`], the figures as one JSON object (`--json`).
pub(super) fn run_json(a: &GemmArgs) -> Result<Value, AnalyzeError> {
    let gpu = GpuSpec::by_name(&a.gpu)?;
    let g = Gemm::new(a.m, a.n, a.k)?;
    if a.tune {
        return tune::run_json(&gpu, &g, a.top_k, a.medians.as_deref());
    }
    let (t, hit) = tile(a)?;
    Ok(gemm_json(&gpu, &g, &t, hit))
}

/// The tile config and the L2 hit rate the arguments give.
fn tile(a: &GemmArgs) -> Result<(TileConfig, Option<f64>), AnalyzeError> {
    let (bm, bn, bk) = TileConfig::parse_tile(&a.tile)?;
    let t = TileConfig::new(bm, bn, bk, a.warps, a.stages)?;
    let hit = a.l2_hit.map(hit_rate).transpose()?;
    Ok((t, hit))
}

/// The roofline cases `gemm_text` tabulates: (name, DRAM bytes).
fn roofline_cases(g: &Gemm, t: &TileConfig, hit: Option<f64>) -> Vec<(String, f64)> {
    let mut cases = vec![
        (
            "minimum bytes (all re-reads hit L2)".to_string(),
            g.min_bytes() as f64,
        ),
        ("tiled, no L2".to_string(), g.tiled_bytes(t) as f64),
    ];
    if let Some(h) = hit {
        cases.push((
            format!("tiled, L2 hit {}", percent(h, 0)),
            g.l2_dram_bytes(t, h),
        ));
    }
    cases
}

fn gemm_json(gpu: &GpuSpec, g: &Gemm, t: &TileConfig, hit: Option<f64>) -> Value {
    let flops = g.flops() as f64;
    let (occupancy, waves_rows, not_launchable) = match check(gpu, t) {
        Err(why) => (Value::Null, Vec::new(), Some(why.to_string())),
        Ok(occ) => {
            let rows = [(occ.ctas, false), (occ.ctas + 1, true)]
                .into_iter()
                .map(|(ctas, hypothetical)| {
                    let mut w = waves_json(&waves(gpu, g.tiles(t), ctas), ctas);
                    w["hypothetical"] = json!(hypothetical);
                    w
                })
                .collect();
            (occupancy_json(&occ), rows, None)
        }
    };
    let rooflines: Vec<Value> = roofline_cases(g, t, hit)
        .into_iter()
        .map(|(case, bytes)| {
            let r = roofline(gpu, flops, bytes);
            json!({
                "case": case,
                "dram_bytes": bytes,
                "t_compute_s": r.t_compute,
                "t_memory_s": r.t_memory,
                "bound": r.bound.to_string(),
            })
        })
        .collect();
    json!({
        "model": "gemm",
        "gpu": gpu.name,
        "m": g.m,
        "n": g.n,
        "k": g.k,
        "tile": {"bm": t.bm, "bn": t.bn, "bk": t.bk, "warps": t.warps, "stages": t.stages},
        "l2_hit": hit,
        "flops": g.flops(),
        "min_bytes": g.min_bytes(),
        "tiled_bytes": g.tiled_bytes(t),
        "a_reads": g.tile_cols(t),
        "b_reads": g.tile_rows(t),
        "intensity_min": flops / g.min_bytes() as f64,
        "intensity_tiled": flops / g.tiled_bytes(t) as f64,
        "machine_balance": gpu.balance(),
        "smem_bytes": t.smem_bytes(),
        "smem_per_cta_max": gpu.smem_per_cta,
        "regs_per_thread": t.regs_per_thread(),
        "max_regs_per_thread": gpu.max_regs_per_thread,
        "not_launchable": not_launchable,
        "occupancy": occupancy,
        "waves": waves_rows,
        "launch_s": gpu.launch_s,
        "roofline": rooflines,
        "compute_bound_hit": g.compute_bound_hit(gpu, t),
    })
}

fn gemm_text(gpu: &GpuSpec, g: &Gemm, t: &TileConfig, hit: Option<f64>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "GEMM {g}, 16-bit operands, on {}; tile {}x{}x{}, {} warps, {} stages\n",
        gpu.name, t.bm, t.bn, t.bk, t.warps, t.stages
    );
    let flops = g.flops() as f64;
    let mut fb = Table::default().right(&[1]);
    fb.row(vec!["FLOPs".into(), grouped(g.flops())]);
    fb.row(vec![
        "minimum bytes".into(),
        grouped(g.min_bytes()),
        "each matrix once".into(),
    ]);
    fb.row(vec![
        "tiled bytes, no L2".into(),
        grouped(g.tiled_bytes(t)),
        format!(
            "A read {}x, B read {}x, C written once",
            g.tile_cols(t),
            g.tile_rows(t)
        ),
    ]);
    fb.row(vec![
        "tiled / minimum".into(),
        format!("{:.1}x", g.tiled_bytes(t) as f64 / g.min_bytes() as f64),
    ]);
    fb.row(vec![
        "intensity, minimum bytes".into(),
        format!("{:.0}", flops / g.min_bytes() as f64),
        "FLOP/B".into(),
    ]);
    fb.row(vec![
        "intensity, tiled bytes".into(),
        format!("{:.0}", flops / g.tiled_bytes(t) as f64),
        "FLOP/B".into(),
    ]);
    fb.row(vec![
        "machine balance".into(),
        format!("{:.0}", gpu.balance()),
        "FLOP/B".into(),
    ]);
    let _ = writeln!(out, "FLOPs and bytes\n{}", fb.render());

    let mut res = Table::default().right(&[1]);
    res.row(vec![
        "shared memory".into(),
        format!("{} B", grouped(t.smem_bytes())),
        format!("max {} B per CTA", grouped(gpu.smem_per_cta)),
    ]);
    res.row(vec![
        "registers per thread".into(),
        t.regs_per_thread().to_string(),
        format!(
            "{}·{}/{} + 40 (estimate); max {}",
            t.bm,
            t.bn,
            t.threads(),
            gpu.max_regs_per_thread
        ),
    ]);
    let _ = writeln!(out, "Resources per CTA\n{}", res.render());

    match check(gpu, t) {
        Err(why) => {
            let _ = writeln!(out, "Not launchable: {why}\n");
        }
        Ok(occ) => {
            let _ = writeln!(out, "Occupancy\n{}", limits_text(&occ));
            let mut wt = waves_table();
            for (ctas, label) in [
                (occ.ctas, occ.ctas.to_string()),
                (occ.ctas + 1, format!("{} (if it fit)", occ.ctas + 1)),
            ] {
                wt.row(waves_row(label, &waves(gpu, g.tiles(t), ctas)));
            }
            let _ = writeln!(out, "Waves ({} SMs)\n{}", gpu.sms, wt.render());
        }
    }

    let mut rt =
        Table::new(&["case", "DRAM bytes", "t_compute", "t_memory", "bound"]).right(&[1, 2, 3]);
    let mut case = |name: String, bytes: f64| {
        let r = roofline(gpu, flops, bytes);
        rt.row(vec![
            name,
            grouped(bytes.round() as u64),
            time(r.t_compute),
            time(r.t_memory),
            r.bound.to_string(),
        ]);
        r.bound
    };
    let bounds: Vec<Bound> = roofline_cases(g, t, hit)
        .into_iter()
        .map(|(name, bytes)| case(name, bytes))
        .collect();
    let (ideal, no_l2) = (bounds[0], bounds[1]);
    let _ = write!(
        out,
        "Roofline (launch {})\n{}",
        time(gpu.launch_s),
        rt.render()
    );
    if no_l2 == Bound::Memory && ideal == Bound::Compute {
        let _ = writeln!(
            out,
            "  \"memory\" without L2 is the model's illusion: re-reads of A and B mostly hit L2"
        );
    }
    let _ = match g.compute_bound_hit(gpu, t) {
        _ if no_l2 == Bound::Launch => Ok(()),
        Some(h) if h > 0.0 => writeln!(
            out,
            "  compute-bound once L2 serves {} of the A/B reads",
            percent(h, 0)
        ),
        Some(_) => writeln!(out, "  compute-bound even with no L2"),
        None => writeln!(out, "  memory-bound even at the minimum bytes"),
    };
    out
}
