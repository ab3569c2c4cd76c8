//! `sim analyze decode`: split-KV decode time for a range of split counts.

use super::AnalyzeError;
use crate::analytic::decode::{self, Decode, Launch};
use crate::analytic::fmt::{grouped, Table};
use crate::analytic::gpu::GpuSpec;
use clap::Args;
use serde_json::{json, Value};
use std::fmt::Write;

#[derive(Args, Debug)]
pub(super) struct DecodeArgs {
    /// GPU: any preset `sim presets` lists.
    #[arg(long, default_value = "h100-sxm")]
    gpu: String,
    /// Sequences decoded together, one new token each.
    #[arg(long, default_value_t = 1)]
    batch: u64,
    /// Query heads (a multiple of the K/V heads: GQA groups share a CTA); `--hq` as the
    /// scenario (scenarios/split_kv_decode.ron) names it.
    #[arg(long, visible_alias = "hq", default_value_t = 32)]
    q_heads: u64,
    #[arg(long, visible_alias = "hkv", default_value_t = 8)]
    kv_heads: u64,
    /// Tokens in the K/V cache.
    #[arg(long, visible_alias = "seqlen-k", default_value_t = 32768)]
    seqlen: u64,
    /// Head dimension.
    #[arg(long, default_value_t = 128)]
    hd: u64,
    /// Split counts to compare, e.g. `1,4,16` (default: powers of two until the GPU is full).
    #[arg(long, value_delimiter = ',')]
    splits: Vec<u64>,
    /// How the two kernels are launched: `graph` (as the scenario) or `eager` from the host.
    #[arg(long, value_enum, default_value = "graph")]
    launch: LaunchArg,
    /// Override the GPU's per-SM memory bandwidth, in GB/s (measured on the H200 only).
    #[arg(long, allow_negative_numbers = true)]
    sm_gbps: Option<f64>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum LaunchArg {
    Graph,
    Eager,
}

impl From<LaunchArg> for Launch {
    fn from(l: LaunchArg) -> Launch {
        match l {
            LaunchArg::Graph => Launch::Graph,
            LaunchArg::Eager => Launch::Eager,
        }
    }
}

fn us(s: f64) -> String {
    format!("{:.1} µs", s * 1e6)
}

pub(super) fn run(a: &DecodeArgs) -> Result<String, AnalyzeError> {
    let (gpu, d, splits) = inputs(a)?;
    Ok(decode_text(&gpu, &d, &splits, a.launch.into()))
}

/// As [`run`], the figures as one JSON object (`--json`).
pub(super) fn run_json(a: &DecodeArgs) -> Result<Value, AnalyzeError> {
    let (gpu, d, splits) = inputs(a)?;
    let launch: Launch = a.launch.into();
    let rows: Vec<decode::Split> = splits
        .iter()
        .map(|&s| decode::split(&gpu, &d, s, launch))
        .collect();
    let best = decode::best(&rows).map(|b| b.splits);
    let rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "splits": r.splits,
                "ctas": r.ctas,
                "active_sms": r.active_sms,
                "bytes_per_s": r.bytes_per_s,
                "t_kv_s": r.t_kv,
                "t_combine_s": r.t_combine,
                "total_s": r.total,
                "fastest": Some(r.splits) == best,
            })
        })
        .collect();
    Ok(json!({
        "model": "decode",
        "gpu": gpu.name,
        "batch": d.batch,
        "q_heads": d.q_heads,
        "kv_heads": d.kv_heads,
        "seqlen": d.seqlen,
        "hd": d.hd,
        "launch": match launch {
            Launch::Graph => "graph",
            Launch::Eager => "eager",
        },
        "launch_gap_s": launch.gap_s(&gpu),
        "kv_bytes": d.kv_bytes(),
        "dram_bytes_per_s": gpu.dram_bytes_per_s,
        "sm_bytes_per_s": gpu.sm_bytes_per_s,
        "splits": rows,
        "fastest": best,
    }))
}

/// The GPU (with `--sm-gbps`), the problem and the split counts the arguments give, checked.
fn inputs(a: &DecodeArgs) -> Result<(GpuSpec, Decode, Vec<u64>), AnalyzeError> {
    let mut gpu = GpuSpec::by_name(&a.gpu)?;
    if let Some(gbps) = a.sm_gbps {
        if !(gbps.is_finite() && gbps > 0.0) {
            return Err(AnalyzeError::SmBandwidth(gbps));
        }
        gpu.sm_bytes_per_s = gbps * 1e9;
    }
    let d = Decode::new(a.batch, a.q_heads, a.kv_heads, a.seqlen, a.hd)?;
    let splits = if a.splits.is_empty() {
        decode::default_splits(&gpu, &d)
    } else {
        a.splits.clone()
    };
    for &s in &splits {
        decode::check_splits(&d, s)?;
    }
    Ok((gpu, d, splits))
}

fn decode_text(gpu: &GpuSpec, d: &Decode, splits: &[u64], launch: Launch) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Split-KV decode on {}: batch {}, {} query / {} KV heads, seqlen {}, hd {}",
        gpu.name, d.batch, d.q_heads, d.kv_heads, d.seqlen, d.hd
    );
    let _ = writeln!(
        out,
        "  K/V {} B; HBM {:.2} TB/s; one SM pulls {:.0} GB/s\n",
        grouped(d.kv_bytes()),
        gpu.dram_bytes_per_s / 1e12,
        gpu.sm_bytes_per_s / 1e9
    );
    let rows: Vec<decode::Split> = splits
        .iter()
        .map(|&s| decode::split(gpu, d, s, launch))
        .collect();
    let mut t = Table::new(&[
        "splits",
        "CTAs",
        "active SMs",
        "bandwidth",
        "K/V time",
        "combine",
        "total",
    ])
    .right(&[0, 1, 2, 3, 4, 5, 6]);
    for r in &rows {
        t.row(vec![
            r.splits.to_string(),
            r.ctas.to_string(),
            r.active_sms.to_string(),
            format!("{:.2} TB/s", r.bytes_per_s / 1e12),
            us(r.t_kv),
            if r.splits == 1 {
                "-".to_string()
            } else {
                us(r.t_combine)
            },
            us(r.total),
        ]);
    }
    let _ = write!(out, "{}", t.render());
    if let Some(b) = decode::best(&rows) {
        let _ = writeln!(
            out,
            "  fastest: {} split{}, {} ({} {} per kernel)",
            b.splits,
            if b.splits == 1 { "" } else { "s" },
            us(b.total),
            match launch {
                Launch::Graph => "CUDA graph: a gap of",
                Launch::Eager => "eager: a launch of",
            },
            us(launch.gap_s(gpu))
        );
    }
    out
}
