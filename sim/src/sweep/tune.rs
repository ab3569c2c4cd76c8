//! `sim tune gemm`: Triton's autotuner with the simulator as its benchmark. The analytic steps
//! are `analytic::tune`'s (the config space, `early_config_prune`, `perf_model`, `top_k`,
//! `pick_best`); this file measures the survivors by simulation: Triton's pipelined Hopper
//! matmul (`scenarios/gemm_pipelined.ron`) on wgmma presets, the cp.async + mma.sync kernel
//! (`scenarios/gemm_ampere.ron`) on the others.
//!
//! The jitter model, so that quantiles over repeats mean something: repeat `r` of a config runs
//! the simulator with seed `seed + r` (its memory-latency jitter), and its time is scaled by a
//! clock factor `1 + JITTER·(2u − 1)`, `u` uniform in [0, 1) drawn from a ChaCha8 generator
//! seeded with `seed` on the stream of the config (its five numbers packed), the r-th draw: the
//! SM clock of a real GPU wanders by about a percent between runs. Every number depends only on
//! the seed, the config and the repeat, never on the threads.

use super::cache::Cache;
use super::{parallel, simulate_point, Metrics, Options, SweepError};
use crate::analytic::cli::tune::{
    pick_notes, pick_sentence, prediction_json, prune_text, pruned_json, rank_text, record,
};
use crate::analytic::fmt::{grouped, percent, Table};
use crate::analytic::gemm::{Gemm, TileConfig};
use crate::analytic::gpu::GpuSpec;
use crate::analytic::tune::{self, Measured, MediansError, Pick, Prediction, Pruned, Space};
use crate::analytic::InputError;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use std::fmt::Write;
use std::path::Path;

/// Half-width of the clock factor's uniform spread.
pub const JITTER: f64 = 0.01;

/// The quantiles Triton's `do_bench` reports and `pick_best` reads.
pub const QUANTILES: [f64; 3] = [0.5, 0.2, 0.8];

/// The kernel that measures a config on `gpu`: (file, text).
pub fn scenario(gpu: &GpuSpec) -> (&'static str, &'static str) {
    if gpu.has_wgmma {
        (
            "scenarios/gemm_pipelined.ron",
            include_str!("../../../scenarios/gemm_pipelined.ron"),
        )
    } else {
        (
            "scenarios/gemm_ampere.ron",
            include_str!("../../../scenarios/gemm_ampere.ron"),
        )
    }
}

/// The analytic steps: the configs, what `early_config_prune` drops, the perf model's ranking
/// and how many of it `top_k` keeps.
#[derive(Clone, Debug)]
pub struct Plan {
    pub gpu: GpuSpec,
    pub gemm: Gemm,
    pub configs: Vec<TileConfig>,
    /// Where the configs come from, for the header.
    pub origin: String,
    pub pruned: Pruned,
    pub ranked: Vec<Prediction>,
    pub top_k: usize,
    /// `top_k` raised to the tie group.
    pub k: usize,
}

impl Plan {
    pub fn new(
        gpu: GpuSpec,
        gemm: Gemm,
        configs: Vec<TileConfig>,
        origin: String,
        top_k: usize,
    ) -> Plan {
        let pruned = tune::early_prune(&gpu, &gemm, &configs);
        let ranked = tune::rank(&gpu, &gemm, &pruned.kept);
        let k = tune::top_k(&ranked, top_k);
        Plan {
            gpu,
            gemm,
            configs,
            origin,
            pruned,
            ranked,
            top_k,
            k,
        }
    }

    /// The survivors the sweep measures, the perf model's best first.
    pub fn survivors(&self) -> &[Prediction] {
        &self.ranked[..self.k]
    }

    /// The header, the prune counts and the perf model's top k.
    pub fn text(&self) -> String {
        format!(
            "Tune GEMM {} on {}: {} configs ({})\n\n{}{}",
            self.gemm,
            self.gpu.name,
            self.configs.len(),
            self.origin,
            prune_text(&self.gpu, &self.pruned),
            rank_text(&self.ranked, self.top_k)
        )
    }
}

/// How the survivors are measured.
#[derive(Clone, Debug)]
pub struct TuneOptions {
    pub repeats: usize,
    pub seed: u64,
    pub max_cycles: u64,
    pub jobs: usize,
}

/// One survivor's measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct Simulated {
    pub prediction: Prediction,
    /// 1-based place in the perf model's ranking.
    pub model_rank: usize,
    /// The quantiles over the repeats, or the first repeat's error.
    pub result: Result<(Measured, Metrics), String>,
}

/// `sim tune`'s result: the plan and each survivor's measurement, in the perf model's order.
#[derive(Clone, Debug)]
pub struct Tuned {
    pub plan: Plan,
    pub scenario: &'static str,
    pub opts: TuneOptions,
    pub simulated: Vec<Simulated>,
}

/// The clock factor of `config`'s repeat `r` under `seed` (the module's jitter model).
pub fn clock_factor(seed: u64, config: &TileConfig, r: usize) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let stream = config.bm << 48 | config.bn << 32 | config.bk << 16 | config.warps << 8;
    rng.set_stream(stream | config.stages);
    let mut u = 0.0;
    for _ in 0..=r {
        u = rng.random::<f64>();
    }
    1.0 + JITTER * (2.0 * u - 1.0)
}

/// The `q` quantile of sorted `v`, linearly interpolated between neighbours (numpy's and
/// torch's default, which Triton's `do_bench` uses).
pub fn quantile(v: &[f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// Ranks from 1, ties given the mean of the places they share.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut out = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        for &o in &order[i..=j] {
            out[o] = (i + j) as f64 / 2.0 + 1.0;
        }
        i = j + 1;
    }
    out
}

/// Spearman's rank correlation (Pearson's on the tie-averaged ranks); none for fewer than two
/// values or when one side has a single rank.
pub fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    let mean = (n + 1.0) / 2.0;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        sab += (x - mean) * (y - mean);
        saa += (x - mean) * (x - mean);
        sbb += (y - mean) * (y - mean);
    }
    (saa > 0.0 && sbb > 0.0).then(|| sab / (saa * sbb).sqrt())
}

/// Milliseconds, or microseconds when every time is below one millisecond (small problems):
/// the unit's name and the factor from milliseconds.
fn time_unit(ms: impl Iterator<Item = f64>) -> (&'static str, f64) {
    if ms.fold(0.0, f64::max) < 1.0 {
        ("µs", 1e3)
    } else {
        ("ms", 1.0)
    }
}

/// The parameters of `gemm_pipelined.ron` / `gemm_ampere.ron` for a config and a problem.
fn sets(g: &Gemm, t: &TileConfig) -> Vec<(String, i64)> {
    [
        ("m", g.m),
        ("n", g.n),
        ("k", g.k),
        ("bm", t.bm),
        ("bn", t.bn),
        ("bk", t.bk),
        ("num_warps", t.warps),
        ("stages", t.stages),
    ]
    .map(|(k, v)| (k.to_string(), v as i64))
    .to_vec()
}

/// A config's quantiles over its repeats' outcomes (clock jitter applied), with the first
/// repeat's figures for its binding unit and top stall; the first error if one failed.
fn measure(
    config: &TileConfig,
    outcomes: &[super::Outcome],
    seed: u64,
) -> Result<(Measured, Metrics), String> {
    let mut times = Vec::with_capacity(outcomes.len());
    for (r, o) in outcomes.iter().enumerate() {
        let m = o.as_ref().map_err(|e| e.clone())?;
        times.push(m.time_us / 1e3 * clock_factor(seed, config, r));
    }
    let first = outcomes[0].clone()?;
    times.sort_by(f64::total_cmp);
    let [median_ms, p20_ms, p80_ms] = QUANTILES.map(|q| quantile(&times, q));
    let measured = Measured {
        config: *config,
        median_ms,
        p20_ms,
        p80_ms,
    };
    Ok((measured, first))
}

/// Measures the plan's survivors: every (config, repeat) one simulation, on `opts.jobs`
/// threads; `done` is called after each.
pub fn tune(
    plan: Plan,
    opts: TuneOptions,
    cache: Option<&Cache>,
    done: &(dyn Fn() + Sync),
) -> Result<Tuned, SweepError> {
    let (file, source) = scenario(&plan.gpu);
    let sweep_opts = Options {
        gpu: Some(plan.gpu.name.to_string()),
        seed: opts.seed,
        max_cycles: opts.max_cycles,
        check: true,
        jobs: opts.jobs,
    };
    let repeats = opts.repeats.max(1);
    let runs: Vec<(usize, usize)> = (0..plan.k)
        .flat_map(|c| (0..repeats).map(move |r| (c, r)))
        .collect();
    let survivors = plan.survivors();
    let outcomes = parallel(opts.jobs, &runs, |&(c, r)| {
        let t = &survivors[c].config;
        let seed = opts.seed.wrapping_add(r as u64);
        let o = simulate_point(file, source, sets(&plan.gemm, t), seed, &sweep_opts, cache);
        done();
        o
    })?;
    let simulated = survivors
        .iter()
        .enumerate()
        .map(|(c, p)| {
            let mine = &outcomes[c * repeats..(c + 1) * repeats];
            let result = measure(&p.config, mine, opts.seed);
            Simulated {
                prediction: p.clone(),
                model_rank: c + 1,
                result,
            }
        })
        .collect();
    Ok(Tuned {
        plan,
        scenario: file,
        opts,
        simulated,
    })
}

impl Tuned {
    /// The configs that ran, with their place in `simulated`.
    fn measured(&self) -> Vec<(usize, &Measured, &Metrics)> {
        self.simulated
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.result.as_ref().ok().map(|(m, x)| (i, m, x)))
            .collect()
    }

    /// `pick_best` over the configs that ran, and their table.
    pub fn pick(&self) -> Option<(Vec<Measured>, Pick)> {
        let table: Vec<Measured> = self.measured().iter().map(|(_, m, _)| **m).collect();
        let pick = tune::pick_best(&table)?;
        Some((table, pick))
    }

    /// The perf model's rank against the simulated one, over the configs that ran.
    pub fn spearman(&self) -> Option<f64> {
        let m = self.measured();
        let model: Vec<f64> = m
            .iter()
            .map(|(i, _, _)| self.simulated[*i].prediction.predicted_s)
            .collect();
        let sim: Vec<f64> = m.iter().map(|(_, x, _)| x.median_ms).collect();
        spearman(&model, &sim)
    }

    /// The plan, then the simulated table, the pick and why, and the two rankings compared.
    pub fn text(&self) -> String {
        let mut out = self.plan.text();
        let repeats = self.opts.repeats.max(1);
        let measured = self.measured();
        let (unit, scale) = time_unit(measured.iter().map(|(_, m, _)| m.median_ms));
        let _ = writeln!(
            out,
            "simulated: {} configs x {repeats} repeats with {} (repeat r: simulator seed {} + r, clock x (1 ± {}) from the seed), times in {unit}",
            self.simulated.len(),
            self.scenario,
            self.opts.seed,
            percent(JITTER, 0)
        );
        let sim_values: Vec<f64> = measured.iter().map(|(_, m, _)| m.median_ms).collect();
        let sim_rank = ranks(&sim_values);
        let pick = self.pick();
        let mut t = Table::new(&[
            "sim",
            "model",
            "BMxBNxBK",
            "warps",
            "stages",
            "median",
            "[p20, p80]",
            "smem B",
            "binding",
            "top stall / error",
            "",
        ])
        .right(&[0, 1, 3, 4, 5, 7]);
        for (i, s) in self.simulated.iter().enumerate() {
            let c = &s.prediction.config;
            let mut row = vec![
                String::new(),
                s.model_rank.to_string(),
                format!("{}x{}x{}", c.bm, c.bn, c.bk),
                c.warps.to_string(),
                c.stages.to_string(),
            ];
            match &s.result {
                Ok((m, x)) => {
                    let j = measured.iter().position(|(k, _, _)| *k == i).unwrap_or(0);
                    row[0] = format!("{}", sim_rank[j]);
                    row.extend([
                        format!("{:.3}", m.median_ms * scale),
                        format!("[{:.3}, {:.3}]", m.p20_ms * scale, m.p80_ms * scale),
                        grouped(c.smem_bytes()),
                        x.binding.clone().unwrap_or_default(),
                        x.top_stall.clone().unwrap_or_default(),
                        pick.as_ref()
                            .map(|(_, p)| pick_notes(p, j))
                            .unwrap_or_default(),
                    ]);
                }
                Err(e) => row.extend([
                    String::new(),
                    String::new(),
                    grouped(c.smem_bytes()),
                    String::new(),
                    format!("error: {}", e.lines().next().unwrap_or_default()),
                    String::new(),
                ]),
            }
            t.row(row);
        }
        out += &t.render();
        match &pick {
            Some((table, p)) => {
                let _ = writeln!(out, "  {}", pick_sentence(table, p));
            }
            None => out += "  pick: none, no config ran\n",
        }
        let _ = match self.spearman() {
            Some(rho) => writeln!(
                out,
                "  Spearman correlation of the perf model's and the simulated ranking: {rho:.2} over {} configs",
                measured.len()
            ),
            None => writeln!(
                out,
                "  Spearman correlation: undefined (fewer than two configs ran, or one side ranks them all equal)"
            ),
        };
        out += &self.bk_stages_text();
        out
    }

    /// Where the simulation orders configs that the perf model cannot: those differing only in
    /// BK or stages, which the model's waves and tiled bytes do not depend on.
    fn bk_stages_text(&self) -> String {
        let mut out = String::new();
        let measured = self.measured();
        let (unit, scale) = time_unit(measured.iter().map(|(_, m, _)| m.median_ms));
        let mut groups: Vec<(u64, u64, u64)> = Vec::new();
        for (_, m, _) in &measured {
            let g = (m.config.bm, m.config.bn, m.config.warps);
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        for g in groups {
            let members: Vec<&(usize, &Measured, &Metrics)> = measured
                .iter()
                .filter(|(_, m, _)| (m.config.bm, m.config.bn, m.config.warps) == g)
                .collect();
            if members.len() < 2 {
                continue;
            }
            let by = |f: fn(f64, f64) -> bool| {
                members.iter().copied().reduce(|a, b| {
                    if f(b.1.median_ms, a.1.median_ms) {
                        b
                    } else {
                        a
                    }
                })
            };
            let (Some(best), Some(worst)) = (by(|b, a| b < a), by(|b, a| b > a)) else {
                continue;
            };
            let tag = |c: &TileConfig| format!("BK {} stages {}", c.bk, c.stages);
            let stall = |x: &Metrics| {
                format!(
                    "{} binding, warps mostly in {}",
                    x.binding.as_deref().unwrap_or("no unit"),
                    x.top_stall.as_deref().unwrap_or("no stall")
                )
            };
            let _ = writeln!(
                out,
                "  {}x{} {}w: the perf model gives its {} BK/stages variants one time (it models neither); simulated, {} is fastest ({:.3} {unit}: {}), {} slowest ({:.3} {unit}, +{}: {})",
                g.0,
                g.1,
                g.2,
                members.len(),
                tag(&best.1.config),
                best.1.median_ms * scale,
                stall(best.2),
                tag(&worst.1.config),
                worst.1.median_ms * scale,
                percent(worst.1.median_ms / best.1.median_ms - 1.0, 1),
                stall(worst.2)
            );
        }
        out
    }
}

/// Why `sim tune` measured nothing.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Parse(#[from] MediansError),
    #[error("{0}: {1}")]
    Read(String, std::io::Error),
    #[error(transparent)]
    Sweep(#[from] SweepError),
}

fn read(path: &Path) -> Result<String, TuneError> {
    std::fs::read_to_string(path).map_err(|e| TuneError::Read(path.display().to_string(), e))
}

/// The configs `--configs` names, with their origin for the header: `triton` (Triton's matmul
/// space for the GPU) or a file of `BMxBNxBK warps stages` lines.
pub fn configs(gpu: &GpuSpec, spec: &str) -> Result<(Vec<TileConfig>, String), TuneError> {
    Ok(match spec {
        "triton" => {
            let space = Space::triton(gpu);
            (space.configs(), format!("Triton's: {space}"))
        }
        file => (
            tune::parse_configs(&read(Path::new(file))?, file)?,
            file.to_string(),
        ),
    })
}

/// The problems of `--shapes FILE`: one `M N K` per line.
pub fn read_shapes(path: &Path) -> Result<Vec<Gemm>, TuneError> {
    Ok(tune::parse_shapes(
        &read(path)?,
        &path.display().to_string(),
    )?)
}

/// `sim tune gemm`: each shape's plan (the analytic steps over `configs`), then its survivors
/// measured; `done` is called after each simulation.
pub fn tune_shapes(
    gpu: &GpuSpec,
    shapes: Vec<Gemm>,
    (configs, origin): (Vec<TileConfig>, String),
    top_k: usize,
    opts: &TuneOptions,
    cache: Option<&Cache>,
    done: &(dyn Fn() + Sync),
) -> Result<Vec<Tuned>, TuneError> {
    shapes
        .into_iter()
        .map(|g| {
            let plan = Plan::new(gpu.clone(), g, configs.clone(), origin.clone(), top_k);
            Ok(tune(plan, opts.clone(), cache, done)?)
        })
        .collect()
}

/// Simulations `tune_shapes` runs for `shapes` (a progress bar's length).
pub fn simulations(
    gpu: &GpuSpec,
    shapes: &[Gemm],
    configs: &[TileConfig],
    top_k: usize,
    opts: &TuneOptions,
) -> usize {
    shapes
        .iter()
        .map(|g| {
            let pruned = tune::early_prune(gpu, g, configs);
            tune::top_k(&tune::rank(gpu, g, &pruned.kept), top_k)
        })
        .sum::<usize>()
        * opts.repeats.max(1)
}

impl Tuned {
    /// The tune as one JSON value (`sim tune gemm --json`, the Python module's `tune`): the
    /// plan, one flat record per simulated config (its place in both rankings, its quantiles
    /// or error, whether `pick_best` chose it), the pick and the rankings' correlation.
    pub fn to_value(&self) -> Value {
        let measured = self.measured();
        let sim_values: Vec<f64> = measured.iter().map(|(_, m, _)| m.median_ms).collect();
        let sim_rank = ranks(&sim_values);
        let pick = self.pick();
        let rows: Vec<Value> = self
            .simulated
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let c = &s.prediction.config;
                let j = measured.iter().position(|(k, _, _)| *k == i);
                let (m, x, error) = match &s.result {
                    Ok((m, x)) => (Some(m), Some(x), None),
                    Err(e) => (None, None, Some(e)),
                };
                // The pick's indices are into the table of the configs that ran.
                let role = |of: fn(&Pick) -> usize| {
                    pick.as_ref().zip(j).is_some_and(|((_, p), j)| of(p) == j)
                };
                record(
                    c,
                    json!({
                        "model_rank": s.model_rank,
                        "sim_rank": j.map(|j| sim_rank[j]),
                        "predicted_ms": s.prediction.predicted_s * 1e3,
                        "median_ms": m.map(|m| m.median_ms),
                        "p20_ms": m.map(|m| m.p20_ms),
                        "p80_ms": m.map(|m| m.p80_ms),
                        "smem_bytes": c.smem_bytes(),
                        "cycles": x.map(|x| x.cycles),
                        "binding": x.and_then(|x| x.binding.clone()),
                        "top_stall": x.and_then(|x| x.top_stall.clone()),
                        "error": error,
                        "fastest": role(|p| p.fastest),
                        "picked": role(|p| p.chosen),
                    }),
                )
            })
            .collect();
        let g = &self.plan.gemm;
        json!({
            "gemm": {"m": g.m, "n": g.n, "k": g.k},
            "gpu": self.plan.gpu.name,
            "configs": self.plan.configs.len(),
            "origin": self.plan.origin,
            "early_prune": pruned_json(&self.plan.pruned),
            "perf_model": self.plan.ranked[..self.plan.k].iter().map(prediction_json).collect::<Vec<_>>(),
            "top_k": self.plan.top_k,
            "k": self.plan.k,
            "scenario": self.scenario,
            "repeats": self.opts.repeats.max(1),
            "seed": self.opts.seed,
            "simulated": rows,
            "pick": pick.as_ref().map(|(table, p)| record(&table[p.chosen].config, json!({
                "median_ms": table[p.chosen].median_ms,
                "p20_ms": table[p.chosen].p20_ms,
                "p80_ms": table[p.chosen].p80_ms,
                "why": pick_sentence(table, p),
            }))),
            "spearman": self.spearman(),
        })
    }
}

/// `--shapes`: one line per problem with its pick, for offline lookup.
pub fn shapes_text(tuned: &[Tuned]) -> String {
    let Some(first) = tuned.first() else {
        return String::new();
    };
    let out = format!(
        "Tune GEMM shapes on {}: {} shapes, {} configs ({}), top_k {}, {} repeats, seed {}; simulated with {}\n",
        first.plan.gpu.name,
        tuned.len(),
        first.plan.configs.len(),
        first.plan.origin,
        first.plan.top_k,
        first.opts.repeats.max(1),
        first.opts.seed,
        first.scenario
    );
    let (unit, scale) = time_unit(
        tuned
            .iter()
            .filter_map(|s| s.pick().map(|(t, p)| t[p.chosen].median_ms)),
    );
    let mut t = Table::new(&[
        "M",
        "N",
        "K",
        "pick",
        "median",
        "[p20, p80]",
        "smem B",
        "ran",
        "Spearman",
    ])
    .right(&[0, 1, 2, 4, 6, 7, 8]);
    for s in tuned {
        let g = &s.plan.gemm;
        let ran = s.measured().len();
        let mut row = vec![g.m.to_string(), g.n.to_string(), g.k.to_string()];
        match s.pick() {
            Some((table, p)) => {
                let c = &table[p.chosen];
                row.extend([
                    c.config.to_string(),
                    format!("{:.3} {unit}", c.median_ms * scale),
                    format!("[{:.3}, {:.3}]", c.p20_ms * scale, c.p80_ms * scale),
                    grouped(c.config.smem_bytes()),
                ]);
            }
            None => row.extend([
                "none ran".to_string(),
                String::new(),
                String::new(),
                String::new(),
            ]),
        }
        row.push(format!("{ran}/{}", s.simulated.len()));
        row.push(s.spearman().map_or("-".to_string(), |r| format!("{r:.2}")));
        t.row(row);
    }
    out + &t.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_neighbours() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(QUANTILES.map(|q| quantile(&v, q)), [3.0, 1.8, 4.2]);
        assert_eq!(quantile(&[7.0], 0.2), 7.0);
    }

    #[test]
    fn spearman_averages_tied_ranks() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0]), vec![2.5, 1.0, 2.5]);
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), Some(1.0));
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
        assert_eq!(spearman(&[1.0, 1.0], &[1.0, 2.0]), None);
    }

    #[test]
    fn the_clock_factor_depends_on_seed_config_and_repeat_only() {
        let t = TileConfig::new(128, 256, 64, 8, 3).unwrap();
        let u = TileConfig::new(128, 256, 64, 8, 4).unwrap();
        let f = clock_factor(0, &t, 2);
        assert_eq!(f, clock_factor(0, &t, 2));
        assert!((f - 1.0).abs() <= JITTER);
        assert_ne!(f, clock_factor(0, &t, 1));
        assert_ne!(f, clock_factor(1, &t, 2));
        assert_ne!(f, clock_factor(0, &u, 2));
    }
}
