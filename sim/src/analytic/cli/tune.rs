//! `sim analyze gemm --tune`: the autotuner's `early_prune`, `perf_model` ranking and
//! `pick_best` on measured medians (seed T3).

use super::AnalyzeError;
use crate::analytic::fmt::{grouped, percent, Table};
use crate::analytic::gemm::Gemm;
use crate::analytic::gpu::GpuSpec;
use crate::analytic::tune::{self, Measured, Pick, Prediction, SEED_MEDIANS};
use std::fmt::Write;
use std::path::Path;

/// The tables for `g` on `gpu`, with pick_best on the medians in `medians` (default: the seed's).
pub(super) fn run(
    gpu: &GpuSpec,
    g: &Gemm,
    top_k: usize,
    medians: Option<&Path>,
) -> Result<String, AnalyzeError> {
    let (table, source) = match medians {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| AnalyzeError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            let shown = path.display().to_string();
            (tune::parse_medians(&text, &shown)?, shown)
        }
        None => (
            SEED_MEDIANS.to_vec(),
            "the seed's table (4096 x 4096 x 4096 on rtx3070)".to_string(),
        ),
    };
    Ok(tune_text(gpu, g, top_k, &table, &source))
}

fn tune_text(gpu: &GpuSpec, g: &Gemm, top_k: usize, medians: &[Measured], source: &str) -> String {
    let space = tune::space();
    let mut out = format!(
        "Autotune GEMM {g} on {}: {} configs ({})\n\n",
        gpu.name,
        space.len(),
        tune::Space::SEED,
    );
    let pruned = tune::early_prune(gpu, g, &space);
    out += &prune_text(gpu, &pruned);
    let ranked = tune::rank(gpu, g, &pruned.kept);
    out += &rank_text(&ranked, top_k);

    let _ = writeln!(out, "pick_best on {source}, times in ms");
    let Some(pick) = tune::pick_best(medians) else {
        return out;
    };
    let mut mt = Table::new(&["config", "median", "p20", "p80", "smem B", ""]).right(&[1, 2, 3, 4]);
    for (i, m) in medians.iter().enumerate() {
        mt.row(vec![
            m.config.to_string(),
            format!("{:.3}", m.median_ms),
            format!("{:.3}", m.p20_ms),
            format!("{:.3}", m.p80_ms),
            grouped(m.config.smem_bytes()),
            pick_notes(&pick, i),
        ]);
    }
    let _ = writeln!(out, "{}  {}", mt.render(), pick_sentence(medians, &pick));
    out
}

/// `early_prune`'s counts per reason, with the first config each dropped.
pub(crate) fn prune_text(gpu: &GpuSpec, pruned: &tune::Pruned) -> String {
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
    format!(
        "early_prune: {} kept, {} pruned\n{}\n",
        pruned.kept.len(),
        pruned.pruned.len(),
        pt.render()
    )
}

/// The perf model's `top_k` (raised to its tie group), fastest first.
pub(crate) fn rank_text(ranked: &[Prediction], top_k: usize) -> String {
    let ties = tune::tie_group(ranked);
    let k = tune::top_k(ranked, top_k);
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
    match ranked.first() {
        None => "perf_model: no config left to rank\n\n".to_string(),
        Some(best) => format!(
            "perf_model: top {k} of {} ({ties} tie at {}{raised})\n{}\n",
            ranked.len(),
            ms(best.predicted_s),
            rk.render()
        ),
    }
}

/// Row `i`'s part in the pick: `fastest`, `overlaps`, `picked`.
pub(crate) fn pick_notes(pick: &Pick, i: usize) -> String {
    let mut notes = Vec::new();
    if i == pick.fastest {
        notes.push("fastest");
    } else if pick.overlapping.contains(&i) {
        notes.push("overlaps");
    }
    if i == pick.chosen {
        notes.push("picked");
    }
    notes.join(", ")
}

/// The pick and why: the fastest, or a config inside its band with less shared memory.
pub(crate) fn pick_sentence(medians: &[Measured], pick: &Pick) -> String {
    let (f, c) = (&medians[pick.fastest], &medians[pick.chosen]);
    if pick.chosen == pick.fastest {
        format!(
            "pick: {}, the fastest; no config inside its [p20, p80] band uses less shared memory",
            c.config
        )
    } else {
        format!(
            "pick: {}, {} slower than the fastest, inside its [p20, p80] band, {} of its shared memory",
            c.config,
            percent(c.median_ms / f.median_ms - 1.0, 1),
            percent(
                c.config.smem_bytes() as f64 / f.config.smem_bytes() as f64,
                0
            )
        )
    }
}

fn ms(s: f64) -> String {
    format!("{:.3} ms", s * 1e3)
}
