//! `sim analyze attention`: the Hopper attention-forward models (wgmma operand feed, consumer
//! registers, K/V intensity against the machine balance, softmax on MUFU).

use super::{hit_rate, AnalyzeError};
use crate::analytic::attention::{
    consumer_regs, effective_intensity, kv_intensity, required_hit, softmax_cost, WARPGROUP_THREADS,
};
use crate::analytic::fmt::{grouped, percent, Table};
use crate::analytic::gpu::GpuSpec;
use crate::analytic::wgmma::{feed, min_fed_n, WGMMA_M};
use clap::Args;
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
}

pub(super) fn run(a: &AttentionArgs) -> Result<String, AnalyzeError> {
    let gpu = GpuSpec::by_name(&a.gpu)?;
    if !gpu.has_wgmma {
        return Err(AnalyzeError::NoWgmma(gpu.name));
    }
    check_step("hd", a.hd, 8, 8, 256)?;
    check_step("bm", a.bm, WGMMA_M, WGMMA_M, 4 * WGMMA_M)?;
    check_step("bn", a.bn, 8, 8, 256)?;
    let hit = a.l2_hit.map(hit_rate).transpose()?;
    Ok(attention_text(&gpu, a.hd, a.bm, a.bn, hit))
}

/// `value` must be a multiple of `step` in `min..=max`: the wgmma shapes.
fn check_step(
    name: &'static str,
    value: u64,
    step: u64,
    min: u64,
    max: u64,
) -> Result<(), AnalyzeError> {
    if value < min || value > max || !value.is_multiple_of(step) {
        return Err(AnalyzeError::NotAStep {
            name,
            value,
            step,
            min,
            max,
        });
    }
    Ok(())
}

fn attention_text(gpu: &GpuSpec, hd: u64, bm: u64, bn: u64, hit: Option<f64>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Attention forward on {}: hd {hd}, bm {bm} (consumer warpgroups: {}), bn {bn}\n",
        gpu.name,
        bm / WGMMA_M
    );

    let mut ns = vec![32, 64, 128, 256, bn];
    ns.sort_unstable();
    ns.dedup();
    let mut ft = Table::new(&[
        "N", "compute", "SS feed", "RS feed", "SS ratio", "RS ratio", "SS util",
    ])
    .right(&[0, 1, 2, 3, 4, 5, 6]);
    for n in ns {
        let f = feed(gpu, n);
        ft.row(vec![
            n.to_string(),
            format!("{:.1}", f.compute_clk),
            format!("{:.1}", f.a_clk + f.b_clk),
            format!("{:.1}", f.b_clk),
            format!("{:.2}", f.ss_ratio()),
            format!("{:.2}", f.rs_ratio()),
            percent(f.ss_utilization(), 0),
        ]);
    }
    let fed = min_fed_n(gpu).map_or("no N".to_string(), |n| format!("N >= {}", n.ceil()));
    let _ = writeln!(
        out,
        "wgmma m64nNk16 feed (cycles of one SM per wgmma)\n{}  SS keeps the tensor cores fed for {fed}\n",
        ft.render()
    );

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

    let m = kv_intensity(bm, bn, hd);
    let mut it = Table::default().right(&[1]);
    it.row(vec![
        "intensity (FLOPs per K/V byte = bm)".into(),
        format!("{m:.0}"),
        "FLOP/B".into(),
    ]);
    it.row(vec![
        "machine balance".into(),
        format!("{:.0}", gpu.balance()),
        format!(
            "FLOP/B ({:.1} TFLOP/s / {:.2} TB/s)",
            gpu.peak_flops / 1e12,
            gpu.dram_bytes_per_s / 1e12
        ),
    ]);
    it.row(vec![
        "all K/V from HBM".into(),
        format!("{:.1}x", gpu.balance() / m),
        "short of the balance".into(),
    ]);
    it.row(vec![
        "L2 hit needed".into(),
        percent(required_hit(gpu, m), 0),
        "1 - intensity / balance".into(),
    ]);
    if let Some(h) = hit {
        let e = effective_intensity(m, h);
        let bound = if e >= gpu.balance() {
            "compute"
        } else {
            "memory"
        };
        it.row(vec![
            format!("at L2 hit {}", percent(h, 0)),
            format!("{e:.0}"),
            format!("FLOP/B: {bound}-bound"),
        ]);
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
