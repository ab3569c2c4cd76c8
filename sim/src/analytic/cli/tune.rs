//! `sim analyze gemm --tune`: the autotuner's `early_prune`, `perf_model` ranking and
//! `pick_best` on measured medians (Triton's autotuner steps).

use super::AnalyzeError;
use crate::analytic::fmt::{grouped, percent, Table};
use crate::analytic::gemm::{Gemm, TileConfig};
use crate::analytic::gpu::GpuSpec;
use crate::analytic::tune::{self, Measured, Pick, Prediction, SEED_MEDIANS};
use serde_json::{json, Value};
use std::fmt::Write;
use std::path::Path;

/// The tables for `g` on `gpu`, with pick_best on the medians in `medians` (default: the example table).
pub(super) fn run(
    gpu: &GpuSpec,
    g: &Gemm,
    top_k: usize,
    medians: Option<&Path>,
) -> Result<String, AnalyzeError> {
    let (table, source) = medians_table(medians)?;
    Ok(tune_text(gpu, g, top_k, &table, &source))
}

/// As [`run`], the figures as one JSON object (`--json`).
pub(super) fn run_json(
    gpu: &GpuSpec,
    g: &Gemm,
    top_k: usize,
    medians: Option<&Path>,
) -> Result<Value, AnalyzeError> {
    let (table, source) = medians_table(medians)?;
    let space = tune::space();
    let pruned = tune::early_prune(gpu, g, &space);
    let ranked = tune::rank(gpu, g, &pruned.kept);
    let (ties, k) = (tune::tie_group(&ranked), tune::top_k(&ranked, top_k));
    let perf_model: Vec<Value> = ranked
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, p)| {
            let mut row = prediction_json(p);
            row["rank"] = json!(i + 1);
            row["tie"] = json!(i < ties);
            row
        })
        .collect();
    let pick = tune::pick_best(&table);
    let rows: Vec<Value> = table
        .iter()
        .enumerate()
        .map(|(i, m)| {
            record(
                &m.config,
                json!({
                    "median_ms": m.median_ms,
                    "p20_ms": m.p20_ms,
                    "p80_ms": m.p80_ms,
                    "smem_bytes": m.config.smem_bytes(),
                    "fastest": pick.as_ref().is_some_and(|p| p.fastest == i),
                    "overlaps": pick
                        .as_ref()
                        .is_some_and(|p| p.fastest != i && p.overlapping.contains(&i)),
                    "picked": pick.as_ref().is_some_and(|p| p.chosen == i),
                }),
            )
        })
        .collect();
    Ok(json!({
        "model": "gemm_tune",
        "gpu": gpu.name,
        "m": g.m,
        "n": g.n,
        "k": g.k,
        "configs": space.len(),
        "space": tune::Space::SEED.to_string(),
        "early_prune": pruned_json(&pruned),
        "top_k": top_k,
        "perf_model": perf_model,
        "medians_source": source,
        "medians": rows,
        "pick": pick.as_ref().map(|p| json!({
            "config": config_json(&table[p.chosen].config),
            "why": pick_sentence(&table, p),
        })),
    }))
}

/// The measured medians pick_best reads, and where they come from.
fn medians_table(medians: Option<&Path>) -> Result<(Vec<Measured>, String), AnalyzeError> {
    Ok(match medians {
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
            "the example table (4096 x 4096 x 4096 on rtx3070)".to_string(),
        ),
    })
}

pub(crate) fn config_json(c: &TileConfig) -> Value {
    json!({"bm": c.bm, "bn": c.bn, "bk": c.bk, "warps": c.warps, "stages": c.stages})
}

/// A config's columns, then `more`'s: one flat record.
pub(crate) fn record(c: &TileConfig, more: Value) -> Value {
    let mut row = config_json(c);
    if let (Some(row), Value::Object(more)) = (row.as_object_mut(), more) {
        row.extend(more);
    }
    row
}

/// The perf model's prediction of a config, as a flat record.
pub(crate) fn prediction_json(p: &Prediction) -> Value {
    record(
        &p.config,
        json!({
            "ctas_per_sm": p.ctas_per_sm,
            "waves": p.waves,
            "compute_s": p.compute_s,
            "memory_s": p.memory_s,
            "predicted_s": p.predicted_s,
        }),
    )
}

/// `early_prune`'s counts, per reason and in all.
pub(crate) fn pruned_json(pruned: &tune::Pruned) -> Value {
    let reasons = ["smem", "regs", "fit", "padding"].map(|r| (r, pruned.count(r)));
    json!({
        "kept": pruned.kept.len(),
        "pruned": pruned.pruned.len(),
        "by_reason": reasons.into_iter().collect::<std::collections::BTreeMap<_, _>>(),
    })
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
