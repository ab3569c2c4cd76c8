//! `sim analyze gemm|attention|decode`: the analytic models' tables, as plain text, for any
//! GPU spec. Every input error comes back as `Err(message)` for the binary to print.

use super::attention::{
    consumer_regs, effective_intensity, kv_intensity, required_hit, softmax_cost, WARPGROUP_THREADS,
};
use super::decode::{self, Decode};
use super::fmt::{grouped, percent, time, Table};
use super::gemm::{check, waves, Gemm, TileConfig};
use super::gpu::GpuSpec;
use super::roofline::{roofline, Bound};
use super::tune::{self, Measured, SEED_MEDIANS};
use super::wgmma::{feed, min_fed_n, WGMMA_M};
use clap::{Args, Subcommand};
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    #[command(subcommand)]
    model: Model,
}

#[derive(Subcommand, Debug)]
enum Model {
    /// GEMM FLOPs and bytes, occupancy, waves and roofline (seed K1); with `--tune`, the
    /// autotuner's prune, perf-model ranking and pick_best (seed T3).
    Gemm(GemmArgs),
    /// Hopper attention forward: wgmma feed, consumer registers, K/V intensity and L2, softmax.
    Attention(AttentionArgs),
    /// Split-KV decode time for a range of split counts.
    Decode(DecodeArgs),
}

#[derive(Args, Debug)]
struct GemmArgs {
    /// GPU: rtx3070, h100-sxm or h200-sxm.
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
    /// line; default: the seed's table.
    #[arg(long, requires = "tune")]
    medians: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct AttentionArgs {
    /// GPU: h100-sxm or h200-sxm (wgmma is Hopper-only).
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

#[derive(Args, Debug)]
struct DecodeArgs {
    /// GPU: rtx3070, h100-sxm or h200-sxm.
    #[arg(long, default_value = "h100-sxm")]
    gpu: String,
    /// Sequences decoded together, one new token each.
    #[arg(long, default_value_t = 1)]
    batch: u64,
    /// Query heads (a multiple of the K/V heads: GQA groups share a CTA).
    #[arg(long, default_value_t = 64)]
    q_heads: u64,
    #[arg(long, default_value_t = 8)]
    kv_heads: u64,
    /// Tokens in the K/V cache.
    #[arg(long, default_value_t = 32768)]
    seqlen: u64,
    /// Head dimension.
    #[arg(long, default_value_t = 128)]
    hd: u64,
    /// Split counts to compare, e.g. `1,4,16` (default: powers of two until the GPU is full).
    #[arg(long, value_delimiter = ',')]
    splits: Vec<u64>,
    /// Override the GPU's per-SM memory bandwidth, in GB/s (it is unmeasured).
    #[arg(long, allow_negative_numbers = true)]
    sm_gbps: Option<f64>,
}

/// The text `sim analyze` prints.
pub fn run(args: &AnalyzeArgs) -> Result<String, String> {
    match &args.model {
        Model::Gemm(a) => {
            let gpu = GpuSpec::by_name(&a.gpu)?;
            let g = Gemm::new(a.m, a.n, a.k)?;
            if a.tune {
                let medians = match &a.medians {
                    Some(path) => {
                        let text = std::fs::read_to_string(path)
                            .map_err(|e| format!("{}: {e}", path.display()))?;
                        tune::parse_medians(&text, &path.display().to_string())?
                    }
                    None => SEED_MEDIANS.to_vec(),
                };
                let source = a.medians.as_ref().map_or_else(
                    || "the seed's table (4096 x 4096 x 4096 on rtx3070)".to_string(),
                    |p| p.display().to_string(),
                );
                Ok(tune_text(&gpu, &g, a.top_k, &medians, &source))
            } else {
                let (bm, bn, bk) = TileConfig::parse_tile(&a.tile)?;
                let t = TileConfig::new(bm, bn, bk, a.warps, a.stages)?;
                let hit = a.l2_hit.map(hit_rate).transpose()?;
                Ok(gemm_text(&gpu, &g, &t, hit))
            }
        }
        Model::Attention(a) => {
            let gpu = GpuSpec::by_name(&a.gpu)?;
            if !gpu.has_wgmma {
                return Err(format!(
                    "{} has no wgmma; the attention model is for Hopper (h100-sxm, h200-sxm)",
                    gpu.name
                ));
            }
            check_step("hd", a.hd, 8, 8, 256)?;
            check_step("bm", a.bm, WGMMA_M, WGMMA_M, 4 * WGMMA_M)?;
            check_step("bn", a.bn, 8, 8, 256)?;
            let hit = a.l2_hit.map(hit_rate).transpose()?;
            Ok(attention_text(&gpu, a.hd, a.bm, a.bn, hit))
        }
        Model::Decode(a) => {
            let mut gpu = GpuSpec::by_name(&a.gpu)?;
            if let Some(gbps) = a.sm_gbps {
                if !(gbps.is_finite() && gbps > 0.0) {
                    return Err(format!("--sm-gbps {gbps} must be a positive number"));
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
            Ok(decode_text(&gpu, &d, &splits))
        }
    }
}

fn hit_rate(h: f64) -> Result<f64, String> {
    if (0.0..1.0).contains(&h) {
        Ok(h)
    } else {
        Err(format!("--l2-hit {h} must be in [0, 1)"))
    }
}

fn check_step(name: &str, v: u64, step: u64, min: u64, max: u64) -> Result<(), String> {
    if v < min || v > max || !v.is_multiple_of(step) {
        return Err(format!(
            "--{name} {v} must be a multiple of {step} in {min}..={max}"
        ));
    }
    Ok(())
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
            let mut lim = Table::new(&["limit", "CTAs/SM"]).right(&[1]);
            for (name, v) in occ.limits() {
                lim.row(vec![name.into(), v.to_string()]);
            }
            let _ = writeln!(
                out,
                "Occupancy\n{}  -> {} CTA{}/SM, limiter {}\n",
                lim.render(),
                occ.ctas,
                if occ.ctas == 1 { "" } else { "s" },
                occ.limiter
            );
            let mut wt = Table::new(&[
                "CTAs/SM",
                "tiles",
                "per wave",
                "waves",
                "last wave",
                "efficiency",
            ])
            .right(&[1, 2, 3, 4, 5]);
            for (ctas, label) in [
                (occ.ctas, occ.ctas.to_string()),
                (occ.ctas + 1, format!("{} (if it fit)", occ.ctas + 1)),
            ] {
                let w = waves(gpu, g, t, ctas);
                wt.row(vec![
                    label,
                    w.tiles.to_string(),
                    w.per_wave.to_string(),
                    w.waves.to_string(),
                    percent(w.last_fill, 0),
                    percent(w.efficiency, 1),
                ]);
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
    let ideal = case(
        "minimum bytes (all re-reads hit L2)".into(),
        g.min_bytes() as f64,
    );
    let no_l2 = case("tiled, no L2".into(), g.tiled_bytes(t) as f64);
    if let Some(h) = hit {
        case(
            format!("tiled, L2 hit {}", percent(h, 0)),
            g.l2_dram_bytes(t, h),
        );
    }
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

fn tune_text(gpu: &GpuSpec, g: &Gemm, top_k: usize, medians: &[Measured], source: &str) -> String {
    let mut out = String::new();
    let space = tune::space();
    let _ = writeln!(
        out,
        "Autotune GEMM {g} on {}: {} configs (BM, BN in {:?}, BK in {:?}, warps {:?}, stages {:?})\n",
        gpu.name,
        space.len(),
        tune::BLOCK_MN,
        tune::BLOCK_K,
        tune::WARPS,
        tune::STAGES
    );
    let pruned = tune::early_prune(gpu, g, &space);
    let mut pt = Table::new(&["reason", "pruned", "first example"]).right(&[1]);
    for (reason, label) in [
        (
            "smem",
            format!("shared memory > {} B per CTA", grouped(gpu.smem_per_cta)),
        ),
        (
            "regs",
            format!("registers > {} per thread", gpu.max_regs_per_thread),
        ),
        ("fit", "no CTA fits on an SM".to_string()),
        (
            "padding",
            format!(
                "padding > {} of the tile grid",
                percent(tune::MAX_PADDING, 0)
            ),
        ),
    ] {
        let example = pruned
            .pruned
            .iter()
            .find(|(_, p)| p.reason() == reason)
            .map_or(String::new(), |(t, p)| format!("{t}: {p}"));
        pt.row(vec![label, pruned.count(reason).to_string(), example]);
    }
    let _ = writeln!(
        out,
        "early_prune: {} kept, {} pruned\n{}",
        pruned.kept.len(),
        pruned.pruned.len(),
        pt.render()
    );

    let ranked = tune::rank(gpu, g, &pruned.kept);
    let ties = tune::tie_group(&ranked);
    let k = tune::top_k(&ranked, top_k);
    let mut rk = Table::new(&[
        "rank",
        "config",
        "CTAs/SM",
        "waves",
        "compute",
        "memory",
        "predicted",
        "",
    ])
    .right(&[0, 2, 3, 4, 5, 6]);
    for (i, p) in ranked.iter().take(k).enumerate() {
        rk.row(vec![
            (i + 1).to_string(),
            p.config.to_string(),
            p.ctas_per_sm.to_string(),
            p.waves.to_string(),
            ms(p.compute_s),
            ms(p.memory_s),
            ms(p.predicted_s),
            if i < ties { "tie" } else { "" }.to_string(),
        ]);
    }
    let raised = if k > top_k.min(ranked.len()) {
        format!(", top_k {top_k} raised to the tie group")
    } else {
        String::new()
    };
    let _ = match ranked.first() {
        None => writeln!(out, "perf_model: no config left to rank\n"),
        Some(best) => writeln!(
            out,
            "perf_model: top {k} of {} ({ties} tie at {}{raised})\n{}",
            ranked.len(),
            ms(best.predicted_s),
            rk.render()
        ),
    };

    let _ = writeln!(out, "pick_best on {source}, times in ms");
    let Some(pick) = tune::pick_best(medians) else {
        return out;
    };
    let mut mt = Table::new(&["config", "median", "p20", "p80", "smem B", ""]).right(&[1, 2, 3, 4]);
    for (i, m) in medians.iter().enumerate() {
        let mut notes = Vec::new();
        if i == pick.fastest {
            notes.push("fastest");
        } else if pick.overlapping.contains(&i) {
            notes.push("overlaps");
        }
        if i == pick.chosen {
            notes.push("picked");
        }
        mt.row(vec![
            m.config.to_string(),
            format!("{:.3}", m.median_ms),
            format!("{:.3}", m.p20_ms),
            format!("{:.3}", m.p80_ms),
            grouped(m.config.smem_bytes()),
            notes.join(", "),
        ]);
    }
    let (f, c) = (&medians[pick.fastest], &medians[pick.chosen]);
    let _ = if pick.chosen == pick.fastest {
        writeln!(
            out,
            "{}  pick: {}, the fastest; no config inside its [p20, p80] band uses less shared memory",
            mt.render(),
            c.config
        )
    } else {
        writeln!(
            out,
            "{}  pick: {}, {} slower than the fastest, inside its [p20, p80] band, {} of its shared memory",
            mt.render(),
            c.config,
            percent(c.median_ms / f.median_ms - 1.0, 1),
            percent(
                c.config.smem_bytes() as f64 / f.config.smem_bytes() as f64,
                0
            )
        )
    };
    out
}

fn ms(s: f64) -> String {
    format!("{:.3} ms", s * 1e3)
}

fn us(s: f64) -> String {
    format!("{:.1} µs", s * 1e6)
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

fn decode_text(gpu: &GpuSpec, d: &Decode, splits: &[u64]) -> String {
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
    let rows: Vec<decode::Split> = splits.iter().map(|&s| decode::split(gpu, d, s)).collect();
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
            "  fastest: {} split{}, {} (launch {} per kernel)",
            b.splits,
            if b.splits == 1 { "" } else { "s" },
            us(b.total),
            us(gpu.launch_s)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: AnalyzeArgs,
    }

    fn analyze(line: &str) -> Result<String, String> {
        let cli = Cli::try_parse_from(std::iter::once("analyze").chain(line.split_whitespace()))
            .map_err(|e| e.to_string())?;
        run(&cli.args)
    }

    #[test]
    fn gemm_prints_each_section() {
        let out = analyze("gemm --gpu h100-sxm 1024 1024 1024").unwrap();
        for section in [
            "FLOPs and bytes",
            "Occupancy",
            "Waves (132 SMs)",
            "Roofline",
        ] {
            assert!(out.contains(section), "{section} in\n{out}");
        }
    }

    #[test]
    fn an_illegal_tile_is_reported_not_refused() {
        let out = analyze("gemm --gpu rtx3070 4096 4096 4096 --tile 128x256x64").unwrap();
        assert!(out.contains("Not launchable: shared memory 147,456 B > 101,376 B per CTA"));
        assert!(!out.contains("Waves"));
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert_eq!(
            analyze("gemm --gpu b200 64 64 64").unwrap_err(),
            "unknown GPU `b200`; known: rtx3070, h100-sxm, h200-sxm"
        );
        assert_eq!(
            analyze("gemm 64 64 64 --l2-hit 1.5").unwrap_err(),
            "--l2-hit 1.5 must be in [0, 1)"
        );
        assert_eq!(
            analyze("attention --l2-hit -0.5").unwrap_err(),
            "--l2-hit -0.5 must be in [0, 1)"
        );
        assert_eq!(
            analyze("attention --gpu rtx3070").unwrap_err(),
            "rtx3070 has no wgmma; the attention model is for Hopper (h100-sxm, h200-sxm)"
        );
        assert_eq!(
            analyze("attention --bm 96").unwrap_err(),
            "--bm 96 must be a multiple of 64 in 64..=256"
        );
        assert_eq!(
            analyze("decode --splits 0").unwrap_err(),
            "splits = 0 must be in 1..=128"
        );
        assert_eq!(
            analyze("decode --sm-gbps -3").unwrap_err(),
            "--sm-gbps -3 must be a positive number"
        );
        assert!(analyze("gemm 64 64 64 --tune --medians /nonexistent/m.txt")
            .unwrap_err()
            .starts_with("/nonexistent/m.txt: "));
    }

    #[test]
    fn decode_marks_the_best_split_count() {
        let out = analyze("decode --gpu h200-sxm --splits 1,8").unwrap();
        assert!(out.contains("fastest: 8 splits, 38.1 µs"), "{out}");
    }
}
