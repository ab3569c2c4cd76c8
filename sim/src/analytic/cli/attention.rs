//! `sim analyze attention`: the Hopper attention-forward models (wgmma operand feed, consumer
//! registers, K/V intensity against the machine balance, softmax on MUFU).

use super::wgmma::{feed_json, feed_text};
use super::{check_step, hit_rate, AnalyzeError};
use crate::analytic::attention::{
    consumer_regs, effective_intensity, kv_intensity, required_hit, softmax_cost, Plan, Problem,
    WARPGROUP_THREADS,
};
use crate::analytic::fmt::{grouped, percent, Table};
use crate::analytic::gpu::GpuSpec;
use crate::analytic::wgmma::{min_fed_n, WGMMA_M};
use clap::Args;
use serde_json::{json, Value};
use std::fmt::Write;

#[derive(Args, Debug)]
pub(super) struct AttentionArgs {
    /// GPU: a preset with wgmma, h100-sxm or h200-sxm (the model is Hopper-only).
    #[arg(long, default_value = "h100-sxm")]
    gpu: String,
    /// Head dimension.
    #[arg(long, default_value_t = 128)]
    hd: u64,
    /// Q rows per CTA (64 per consumer warpgroup).
    #[arg(long, default_value_t = 64)]
    bm: u64,
    /// K/V rows per step (the N of the S = Q·Kᵀ wgmma).
    #[arg(long, default_value_t = 256)]
    bn: u64,
    /// L2 hit rate of the K/V reads, in [0, 1).
    #[arg(long, allow_negative_numbers = true)]
    l2_hit: Option<f64>,
    /// The problem, as scenarios/fa3_pingpong.ron and fa2_forward.ron take it: sequences.
    #[arg(long, default_value_t = 1)]
    batch: u64,
    /// Heads per sequence.
    #[arg(long, default_value_t = 2)]
    heads: u64,
    /// Query rows and keys per sequence (`--seqlen-q`, `--seqlen-k` set one of them).
    #[arg(long, default_value_t = 8448)]
    seqlen: u64,
    #[arg(long)]
    seqlen_q: Option<u64>,
    #[arg(long)]
    seqlen_k: Option<u64>,
    /// Causal masking: query i sees the keys up to i + seqlen_k - seqlen_q.
    #[arg(long)]
    causal: bool,
}

pub(super) fn run(a: &AttentionArgs) -> Result<String, AnalyzeError> {
    let (gpu, hit, problem) = inputs(a)?;
    let mut out = attention_text(&gpu, a.hd, a.bm, a.bn, hit);
    out.push_str(&problem_text(&gpu, &problem, a.bm, a.bn, hit));
    Ok(out)
}

/// The GPU, the L2 hit rate and the problem the arguments give, checked.
fn inputs(a: &AttentionArgs) -> Result<(GpuSpec, Option<f64>, Problem), AnalyzeError> {
    let gpu = GpuSpec::by_name(&a.gpu)?;
    if !gpu.has_wgmma {
        return Err(AnalyzeError::NoWgmma(gpu.name, "attention"));
    }
    check_step("hd", a.hd, 8, 8, 256)?;
    check_step("bm", a.bm, WGMMA_M, WGMMA_M, 4 * WGMMA_M)?;
    check_step("bn", a.bn, 8, 8, 256)?;
    let hit = a.l2_hit.map(hit_rate).transpose()?;
    let problem = Problem::new(
        a.batch,
        a.heads,
        a.seqlen_q.unwrap_or(a.seqlen),
        a.seqlen_k.unwrap_or(a.seqlen),
        a.hd,
        a.causal,
    )?;
    Ok((gpu, hit, problem))
}

/// The N values of the feed table: the usual ones and `bn`.
fn feed_ns(bn: u64) -> Vec<u64> {
    let mut ns = vec![32, 64, 128, 256, bn];
    ns.sort_unstable();
    ns.dedup();
    ns
}

/// As [`run`], the figures as one JSON object (`--json`).
pub(super) fn run_json(a: &AttentionArgs) -> Result<Value, AnalyzeError> {
    let (gpu, hit, p) = inputs(a)?;
    let (hd, bm, bn) = (a.hd, a.bm, a.bn);
    let r = consumer_regs(bn, hd);
    let m = kv_intensity(bm, bn, hd);
    let s = softmax_cost(&gpu, bm, bn, hd);
    let plan = Plan::new(&gpu, &p, bm, bn);
    let clk = gpu.clock_hz();
    let hbm_clk = hit.map(|h| plan.hbm_clk(&gpu, h));
    Ok(json!({
        "model": "attention",
        "gpu": gpu.name,
        "hd": hd,
        "bm": bm,
        "bn": bn,
        "consumer_warpgroups": bm / WGMMA_M,
        "l2_hit": hit,
        "feed": feed_json(&gpu, &feed_ns(bn)),
        "min_fed_n": min_fed_n(&gpu),
        "consumer_regs": {
            "s": r.s,
            "o": r.o,
            "total": r.total(),
            "max": gpu.max_regs_per_thread,
        },
        "kv_intensity": m,
        "machine_balance": gpu.balance(),
        "hbm_shortfall": gpu.balance() / m,
        "required_hit": required_hit(&gpu, m),
        "effective_intensity": hit.map(|h| effective_intensity(m, h)),
        "softmax": {
            "tensor_clk": s.tensor_clk,
            "exps": s.exps,
            "mufu_clk": s.mufu_clk,
            "mufu_per_tensor": s.ratio(),
        },
        "problem": {
            "batch": p.batch,
            "heads": p.heads,
            "seqlen_q": p.seqlen_q,
            "seqlen_k": p.seqlen_k,
            "hd": p.hd,
            "causal": p.causal,
            "flops": p.flops(),
            "tiles": plan.tiles,
            "kv_steps": plan.steps,
            "max_kv_steps": plan.max_steps,
            "flops_computed": plan.flops,
            "tensor_clk": plan.tensor_clk,
            "tensor_us": plan.tensor_clk / clk * 1e6,
            "clock_mhz": clk / 1e6,
            "kv_bytes": plan.kv_bytes,
            "qo_bytes": plan.qo_bytes,
            "required_hit": plan.required_hit(&gpu),
            "hbm_clk": hbm_clk,
            "bound": hbm_clk.map(|h| if h > plan.tensor_clk { "hbm" } else { "tensor" }),
        },
    }))
}

/// The problem's FLOPs, tiles and the time its tensor cores and HBM need at least.
fn problem_text(gpu: &GpuSpec, p: &Problem, bm: u64, bn: u64, hit: Option<f64>) -> String {
    let plan = Plan::new(gpu, p, bm, bn);
    let clk = gpu.clock_hz();
    let us = |cycles: f64| format!("{:.1} µs", cycles / clk * 1e6);
    let mut t = Table::default().right(&[1]);
    t.row(vec![
        "FLOPs".into(),
        grouped(p.flops()),
        if p.causal {
            "the causal lower triangle".into()
        } else {
            "4 · seqlen_q · seqlen_k · hd a head".into()
        },
    ]);
    t.row(vec![
        format!("tiles of {bm} rows"),
        grouped(plan.tiles),
        format!(
            "{} KV blocks of {bn} (at most {} a tile); {} FLOPs computed",
            grouped(plan.steps),
            plan.max_steps,
            grouped(plan.flops)
        ),
    ]);
    t.row(vec![
        "tensor bound".into(),
        grouped(plan.tensor_clk.round() as u64),
        format!(
            "cycles = {} at {:.0} MHz, {:.0} TFLOP/s ({})",
            us(plan.tensor_clk),
            clk / 1e6,
            p.flops() as f64 / (plan.tensor_clk / clk) / 1e12,
            if p.causal {
                "blocks spread evenly over the SMs"
            } else {
                "whole waves of tiles"
            }
        ),
    ]);
    t.row(vec![
        "K/V read by the tiles".into(),
        grouped(plan.kv_bytes),
        format!("B; Q and O {} B", grouped(plan.qo_bytes)),
    ]);
    t.row(vec![
        "K/V hit rate needed".into(),
        percent(plan.required_hit(gpu), 0),
        "in L2, for the HBM to keep up with the tensor cores".into(),
    ]);
    if let Some(h) = hit {
        let hbm = plan.hbm_clk(gpu, h);
        let binds = if hbm > plan.tensor_clk {
            "HBM-bound"
        } else {
            "tensor-bound"
        };
        t.row(vec![
            format!("HBM at L2 hit {}", percent(h, 0)),
            grouped(hbm.round() as u64),
            format!("cycles = {}: {binds}", us(hbm)),
        ]);
    }
    let shape = if p.seqlen_q == p.seqlen_k {
        format!("seqlen {}", p.seqlen_q)
    } else {
        format!("seqlen_q {}, seqlen_k {}", p.seqlen_q, p.seqlen_k)
    };
    format!(
        "\nProblem: batch {} x heads {}, {shape}, hd {}{}\n{}",
        p.batch,
        p.heads,
        p.hd,
        if p.causal { ", causal" } else { "" },
        t.render()
    )
}

fn attention_text(gpu: &GpuSpec, hd: u64, bm: u64, bn: u64, hit: Option<f64>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Attention forward on {}: hd {hd}, bm {bm} (consumer warpgroups: {}), bn {bn}\n",
        gpu.name,
        bm / WGMMA_M
    );

    let _ = writeln!(out, "{}", feed_text(gpu, &feed_ns(bn)));

    let r = consumer_regs(bn, hd);
    let mut rt = Table::default().right(&[1]);
    rt.row(vec![format!("S = [64, {bn}]"), r.s.to_string()]);
    rt.row(vec![format!("O = [64, {hd}]"), r.o.to_string()]);
    rt.row(vec![
        "total".into(),
        r.total().to_string(),
        format!(
            "of {}, before P, softmax statistics and addresses",
            gpu.max_regs_per_thread
        ),
    ]);
    let _ = writeln!(
        out,
        "Registers per consumer thread (fp32 over {WARPGROUP_THREADS} threads)\n{}",
        rt.render()
    );

    let mut it = Table::default().right(&[1]);
    for row in intensity_rows(gpu, kv_intensity(bm, bn, hd), hit) {
        it.row(row.to_vec());
    }
    let _ = writeln!(out, "K/V intensity and L2\n{}", it.render());

    let s = softmax_cost(gpu, bm, bn, hd);
    let mut st = Table::default().right(&[1]);
    st.row(vec![
        "tensor (Q·Kᵀ and P·V)".into(),
        format!("{:.0}", s.tensor_clk),
        "cycles".into(),
    ]);
    st.row(vec![
        "exp on MUFU".into(),
        format!("{:.0}", s.mufu_clk),
        format!(
            "cycles ({} exps at {}/cycle)",
            grouped(s.exps),
            gpu.mufu_per_clk
        ),
    ]);
    st.row(vec!["MUFU / tensor".into(), percent(s.ratio(), 0)]);
    let _ = write!(out, "Softmax per K/V step (one SM)\n{}", st.render());
    out
}

/// The K/V intensity `m` (FLOPs per K/V byte) against the machine balance: label, value and
/// note of each row, the last one at L2 hit `hit` if given.
pub(crate) fn intensity_rows(gpu: &GpuSpec, m: f64, hit: Option<f64>) -> Vec<[String; 3]> {
    let mut rows = vec![
        [
            "intensity (FLOPs per K/V byte = bm)".into(),
            format!("{m:.0}"),
            "FLOP/B".into(),
        ],
        [
            "machine balance".into(),
            format!("{:.0}", gpu.balance()),
            format!(
                "FLOP/B ({:.1} TFLOP/s / {:.2} TB/s)",
                gpu.peak_flops / 1e12,
                gpu.dram_bytes_per_s / 1e12
            ),
        ],
        [
            "all K/V from HBM".into(),
            format!("{:.1}x", gpu.balance() / m),
            "short of the balance".into(),
        ],
        [
            "L2 hit needed".into(),
            percent(required_hit(gpu, m), 0),
            "1 - intensity / balance".into(),
        ],
    ];
    if let Some(h) = hit {
        let e = effective_intensity(m, h);
        let bound = if e >= gpu.balance() {
            "compute"
        } else {
            "memory"
        };
        rows.push([
            format!("at L2 hit {}", percent(h, 0)),
            format!("{e:.0}"),
            format!("FLOP/B: {bound}-bound"),
        ]);
    }
    rows
}
