//! `sim sweep`: one scenario simulated at every point of a cartesian product of parameter
//! values, in parallel, each point's figures or error as one row; shards of a sweep and their
//! merge; the rows as a table, CSV or JSON. [`cache`] keeps points already simulated, [`plot`]
//! draws a metric against one parameter, [`tune`] is `sim tune` on top of the sweep.

pub mod cache;
pub mod plot;
pub mod tune;

use crate::analytic::fmt::{grouped, Table};
use crate::observe::diagnosis::diagnose;
use crate::observe::report::Report;
use crate::run::{self, RunOptions};
use crate::sequence::{self, SequenceReport};
use cache::Cache;
use rayon::prelude::*;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Most points one sweep may have: a product past this is a typing error, not a plan.
pub const MAX_POINTS: usize = 1 << 20;

/// One swept parameter and its values, in the order given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Axis {
    pub name: String,
    pub values: Vec<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AxisError {
    #[error("`{0}` is not KEY=VALUES (a value, a list `a,b,c` or an inclusive range `a..b`)")]
    Form(String),
    #[error("the value of `{key}` must be an integer or true/false, not `{text}`")]
    Value { key: String, text: String },
    #[error("the range `{key}={lo}..{hi}` is empty: a..b needs a <= b")]
    Empty { key: String, lo: i64, hi: i64 },
    #[error("`{0}` is swept twice")]
    Twice(String),
    #[error("the sweep has more than {MAX_POINTS} points")]
    TooMany,
}

/// A parameter value as `--set` takes it: an integer (`_` allowed between digits) or
/// `true`/`false` (1/0).
pub fn parse_value(text: &str) -> Option<i64> {
    match text.trim() {
        "true" => Some(1),
        "false" => Some(0),
        t => t.replace('_', "").parse().ok(),
    }
}

impl Axis {
    /// `KEY=V`, `KEY=a,b,c` or `KEY=a..b` (both ends included).
    pub fn parse(s: &str) -> Result<Axis, AxisError> {
        let (key, spec) = s
            .split_once('=')
            .ok_or_else(|| AxisError::Form(s.to_string()))?;
        let key = key.trim().to_string();
        let value = |text: &str| {
            parse_value(text).ok_or_else(|| AxisError::Value {
                key: key.clone(),
                text: text.trim().to_string(),
            })
        };
        let values = match spec.split_once("..") {
            Some((lo, hi)) => {
                let (lo, hi) = (value(lo)?, value(hi)?);
                if lo > hi {
                    return Err(AxisError::Empty { key, lo, hi });
                }
                if hi.abs_diff(lo) >= MAX_POINTS as u64 {
                    return Err(AxisError::TooMany);
                }
                (lo..=hi).collect()
            }
            None => spec.split(',').map(value).collect::<Result<_, _>>()?,
        };
        Ok(Axis { name: key, values })
    }
}

/// Every point of the product of `axes`, the first axis outermost (as nested loops in the
/// order the axes were given): each point's values in axis order.
pub fn product(axes: &[Axis]) -> Result<Vec<Vec<i64>>, AxisError> {
    for (i, a) in axes.iter().enumerate() {
        if axes[..i].iter().any(|b| b.name == a.name) {
            return Err(AxisError::Twice(a.name.clone()));
        }
    }
    let count = axes.iter().try_fold(1usize, |n, a| {
        n.checked_mul(a.values.len())
            .filter(|&n| n <= MAX_POINTS)
            .ok_or(AxisError::TooMany)
    })?;
    let mut points = Vec::with_capacity(count);
    for i in 0..count {
        // Mixed radix, the last axis the fastest digit.
        let mut rest = i;
        let mut point = vec![0; axes.len()];
        for (slot, a) in point.iter_mut().zip(axes).rev() {
            *slot = a.values[rest % a.values.len()];
            rest /= a.values.len();
        }
        points.push(point);
    }
    Ok(points)
}

/// Every `count`-th point starting at `index`: one machine's share of a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// `I/N` with I in 0..N.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("`{s}` is not I/N with 0 <= I < N");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    pub fn holds(&self, point: usize) -> bool {
        point % self.count == self.index
    }
}

/// What a point's run gives: its figures as the report states them, and where it binds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub cycles: u64,
    #[serde(deserialize_with = "exact")]
    pub time_us: f64,
    /// Tensor TFLOP/s at the report's clock (0 for a kernel without tensor work).
    #[serde(deserialize_with = "exact")]
    pub tflops: f64,
    /// DRAM bandwidth over the run.
    #[serde(deserialize_with = "exact")]
    pub dram_gbs: f64,
    /// The busiest unit that can bind (the report page's diagnosis); none if none was busy.
    pub binding: Option<String>,
    /// The state, `selected` aside, in which the warps spent most cycles, all roles together.
    pub top_stall: Option<String>,
}

/// Reads a float from its JSON text with Rust's exact parser, so that a row read back from a
/// shard or the cache is bit for bit the row that was written (serde_json's default float
/// parser may be one unit in the last place off).
fn exact<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
    raw.get().parse().map_err(serde::de::Error::custom)
}

impl Metrics {
    pub fn of(report: &Report) -> Metrics {
        let value = serde_json::json!({ "report": report });
        let binding = diagnose(&value).and_then(|d| d.binding.map(|b| b.unit.to_string()));
        Metrics {
            cycles: report.cycles,
            time_us: report.time_us,
            tflops: report.tflops,
            dram_gbs: report.dram.bandwidth_gbs,
            binding,
            top_stall: top_stall([report]),
        }
    }

    /// A sequence's figures: its cycles and time (launch gaps included), the rates over that
    /// time, the binding unit of its longest kernel, and the top state of all its warps.
    pub fn of_sequence(s: &SequenceReport) -> Metrics {
        let reports = || s.kernels.iter().map(|k| &k.report);
        let longest = reports().max_by_key(|r| r.cycles);
        let per_us = |x: f64| if s.time_us > 0.0 { x / s.time_us } else { 0.0 };
        Metrics {
            cycles: s.cycles,
            time_us: s.time_us,
            tflops: per_us(reports().map(|r| r.tflops * r.time_us).sum()),
            dram_gbs: per_us(reports().map(|r| r.dram.bandwidth_gbs * r.time_us).sum()),
            binding: longest.and_then(|r| Metrics::of(r).binding),
            top_stall: top_stall(reports()),
        }
    }
}

/// The state, `selected` aside, in which the warps of `reports` spent most cycles.
fn top_stall<'a>(reports: impl IntoIterator<Item = &'a Report>) -> Option<String> {
    let mut states: BTreeMap<&str, u64> = BTreeMap::new();
    for role in reports.into_iter().flat_map(|r| r.roles.values()) {
        for (state, cycles) in &role.states {
            *states.entry(state).or_default() += cycles;
        }
    }
    // The first of the largest wins a tie (states by name), so the choice is stable.
    states
        .into_iter()
        .filter(|&(s, c)| s != "selected" && c > 0)
        .fold(None::<(&str, u64)>, |best, (s, c)| match best {
            Some((_, b)) if b >= c => best,
            _ => Some((s, c)),
        })
        .map(|(s, _)| s.to_string())
}

/// A point's result: its figures, or the error that stopped it (validation, a shared-memory
/// layout over the limit, a deadlock, the cycle limit…), as the CLI would print it.
pub type Outcome = Result<Metrics, String>;

/// One point of the sweep: its index in the product, its values in axis order, and exactly
/// one of `metrics` and `error`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub point: usize,
    pub values: Vec<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Row {
    pub fn new(point: usize, values: Vec<i64>, outcome: Outcome) -> Row {
        let (metrics, error) = match outcome {
            Ok(m) => (Some(m), None),
            Err(e) => (None, Some(e)),
        };
        Row {
            point,
            values,
            metrics,
            error,
        }
    }

    pub fn outcome(&self) -> Result<&Metrics, &str> {
        match (&self.metrics, &self.error) {
            (Some(m), _) => Ok(m),
            (None, e) => Err(e.as_deref().unwrap_or("no result")),
        }
    }
}

/// How every point runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Runs on this GPU preset instead of the scenario's.
    pub gpu: Option<String>,
    pub seed: u64,
    pub max_cycles: u64,
    /// The sanitizer's hazard checks.
    pub check: bool,
    /// Threads the points run on (the output does not depend on them).
    pub jobs: usize,
}

impl Options {
    fn run_options(&self, sets: Vec<(String, i64)>, seed: u64) -> RunOptions {
        RunOptions {
            sets,
            gpu: self.gpu.clone(),
            seed,
            max_cycles: self.max_cycles,
            check: self.check,
            ..RunOptions::default()
        }
    }
}

/// A sweep's result, or one shard of it: what `--json` prints and `--merge` reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// The scenario file as named on the command line.
    pub scenario: String,
    pub gpu: Option<String>,
    pub seed: u64,
    pub max_cycles: u64,
    pub check: bool,
    pub axes: Vec<Axis>,
    /// Points of the whole product.
    pub points: usize,
    /// Set on a shard's output; a merge of all shards has none, as an unsharded run.
    pub shard: Option<Shard>,
    /// In product order.
    pub rows: Vec<Row>,
}

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error(transparent)]
    Axis(#[from] AxisError),
    #[error("--jobs: {0}")]
    Threads(String),
    #[error("{0}: not a sweep's --json output: {1}")]
    NotASweep(String, serde_json::Error),
    #[error("{0}: another sweep than {1}'s (scenario, GPU, seed, options or axes differ)")]
    Mismatch(String, String),
    #[error("point {0} is in more than one shard")]
    Repeated(usize),
    #[error("the shards hold {0} of the sweep's {1} points; missing: point {2}")]
    Missing(usize, usize, usize),
    #[error("--merge needs at least one file")]
    NothingToMerge,
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("{0}")]
    Scenario(isa::Diagnostic),
}

/// Reads a scenario file to sweep: its name as given (which rows and errors cite) and its text.
pub fn read_scenario(path: &std::path::Path) -> Result<(String, String), SweepError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| SweepError::Io(shown.clone(), e))?;
    let source = isa::decode(&shown, &bytes).map_err(SweepError::Scenario)?;
    Ok((shown, source.to_string()))
}

/// Simulates one point: compiles the scenario with its parameters, then takes the cached
/// result or simulates its kernel, or its kernels as a sequence (`then`, `launches`). Any failure is the row's error.
pub fn simulate_point(
    file: &str,
    source: &str,
    sets: Vec<(String, i64)>,
    seed: u64,
    opts: &Options,
    cache: Option<&Cache>,
) -> Outcome {
    let run_opts = opts.run_options(sets, seed);
    let (kernels, preset, launch) =
        run::load_sequence_source(file, source, &run_opts).map_err(|e| e.to_string())?;
    let key = cache.map(|_| cache::key(&preset.name, source, &run_opts));
    if let (Some(c), Some(k)) = (cache, &key) {
        if let Some(hit) = c.get(k) {
            return hit;
        }
    }
    let outcome = match &kernels[..] {
        [kernel] => run::simulate(file, kernel, &preset, &run_opts).map(|r| Metrics::of(&r)),
        _ => sequence::simulate(file, &kernels, &preset, launch, &run_opts)
            .map(|s| Metrics::of_sequence(&s)),
    }
    .map_err(|e| e.to_string());
    if let (Some(c), Some(k)) = (cache, &key) {
        // The cache only saves time: a point it cannot keep is simulated again next time.
        if let Err(e) = c.put(k, &outcome) {
            tracing::warn!(error = %e, "sweep cache not written");
        }
    }
    outcome
}

/// Runs `f` on `jobs` threads over `items`, results in `items` order whatever the threads.
pub fn parallel<T: Sync, R: Send>(
    jobs: usize,
    items: &[T],
    f: impl Fn(&T) -> R + Sync + Send,
) -> Result<Vec<R>, SweepError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .map_err(|e| SweepError::Threads(e.to_string()))?;
    Ok(pool.install(|| items.par_iter().map(f).collect()))
}

/// Simulates the points of `axes`' product (those of `shard`) on `opts.jobs` threads; `done`
/// is called after each point (a progress bar).
pub fn run(
    file: &str,
    source: &str,
    axes: Vec<Axis>,
    shard: Option<Shard>,
    opts: &Options,
    cache: Option<&Cache>,
    done: &(dyn Fn() + Sync),
) -> Result<Sweep, SweepError> {
    let all = product(&axes)?;
    let points = all.len();
    let mine: Vec<(usize, Vec<i64>)> = all
        .into_iter()
        .enumerate()
        .filter(|(i, _)| shard.is_none_or(|s| s.holds(*i)))
        .collect();
    let rows = parallel(opts.jobs, &mine, |(i, values)| {
        let sets = axes
            .iter()
            .map(|a| a.name.clone())
            .zip(values.iter().copied())
            .collect();
        let row = Row::new(
            *i,
            values.clone(),
            simulate_point(file, source, sets, opts.seed, opts, cache),
        );
        done();
        row
    })?;
    Ok(Sweep {
        scenario: file.to_string(),
        gpu: opts.gpu.clone(),
        seed: opts.seed,
        max_cycles: opts.max_cycles,
        check: opts.check,
        axes,
        points,
        shard,
        rows,
    })
}

impl Sweep {
    /// Points to simulate in a sweep of `axes`, in `shard` if given.
    pub fn count(axes: &[Axis], shard: Option<Shard>) -> Result<usize, AxisError> {
        let n = product(axes)?.len();
        Ok(shard.map_or(n, |s| (s.index..n).step_by(s.count).count()))
    }

    /// Reads a sweep's `--json` output; `origin` names it in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<Sweep, SweepError> {
        serde_json::from_str(text).map_err(|e| SweepError::NotASweep(origin.to_string(), e))
    }

    /// The shards of one sweep as one: exactly what the sweep run whole gives. `parts` are
    /// (origin, sweep); every point must be in exactly one.
    pub fn merge(parts: Vec<(String, Sweep)>) -> Result<Sweep, SweepError> {
        let mut parts = parts.into_iter();
        let (first_name, first) = parts.next().ok_or(SweepError::NothingToMerge)?;
        let same = |s: &Sweep| {
            (
                &s.scenario,
                &s.gpu,
                s.seed,
                s.max_cycles,
                s.check,
                &s.axes,
                s.points,
            ) == (
                &first.scenario,
                &first.gpu,
                first.seed,
                first.max_cycles,
                first.check,
                &first.axes,
                first.points,
            )
        };
        let mut rows: BTreeMap<usize, Row> = BTreeMap::new();
        let mut add = |rs: Vec<Row>| {
            rs.into_iter()
                .try_for_each(|r| match rows.insert(r.point, r) {
                    Some(old) => Err(SweepError::Repeated(old.point)),
                    None => Ok(()),
                })
        };
        let merged = Sweep {
            shard: None,
            rows: Vec::new(),
            ..first.clone()
        };
        add(first.rows)?;
        for (name, part) in parts {
            if !same(&part) {
                return Err(SweepError::Mismatch(name, first_name));
            }
            add(part.rows)?;
        }
        if let Some(missing) = (0..merged.points).find(|i| !rows.contains_key(i)) {
            return Err(SweepError::Missing(rows.len(), merged.points, missing));
        }
        Ok(Sweep {
            rows: rows.into_values().collect(),
            ..merged
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a sweep serializes") + "\n"
    }

    /// One CSV row per point: its index, its values, the figures or the error.
    pub fn to_csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut header = vec!["point".to_string()];
        header.extend(self.axes.iter().map(|a| a.name.clone()));
        header.extend(
            [
                "cycles",
                "time_us",
                "tflops",
                "dram_gbs",
                "binding",
                "top_stall",
                "error",
            ]
            .map(String::from),
        );
        // Writing to memory cannot fail.
        let _ = w.write_record(&header);
        for r in &self.rows {
            let mut cells = vec![r.point.to_string()];
            cells.extend(r.values.iter().map(|v| v.to_string()));
            match r.outcome() {
                Ok(m) => cells.extend([
                    m.cycles.to_string(),
                    m.time_us.to_string(),
                    m.tflops.to_string(),
                    m.dram_gbs.to_string(),
                    m.binding.clone().unwrap_or_default(),
                    m.top_stall.clone().unwrap_or_default(),
                    String::new(),
                ]),
                Err(e) => {
                    cells.extend(std::iter::repeat_n(String::new(), 6));
                    cells.push(e.to_string());
                }
            }
            let _ = w.write_record(&cells);
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }

    /// The terminal table: a header line, then one row per point; an error shows its first
    /// line.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let failed = self.rows.iter().filter(|r| r.error.is_some()).count();
        let axes: Vec<String> = self
            .axes
            .iter()
            .map(|a| {
                let vs: Vec<String> = a.values.iter().map(|v| v.to_string()).collect();
                format!("{} in {{{}}}", a.name, vs.join(", "))
            })
            .collect();
        let _ = writeln!(
            out,
            "sweep of {} on {}, seed {}: {} of {} points{}, {} failed{}",
            self.scenario,
            self.gpu.as_deref().unwrap_or("the scenario's GPU"),
            self.seed,
            self.rows.len(),
            self.points,
            self.shard
                .map(|s| format!(" (shard {}/{})", s.index, s.count))
                .unwrap_or_default(),
            failed,
            if axes.is_empty() {
                String::new()
            } else {
                format!("; {}", axes.join(", "))
            }
        );
        let mut header = vec!["point"];
        header.extend(self.axes.iter().map(|a| a.name.as_str()));
        let n = header.len();
        header.extend(["cycles", "time µs", "rate", "binding", "top stall / error"]);
        let right: Vec<usize> = (0..n + 3).collect();
        let mut t = Table::new(&header).right(&right);
        for r in &self.rows {
            let mut cells = vec![r.point.to_string()];
            cells.extend(r.values.iter().map(|v| v.to_string()));
            match r.outcome() {
                Ok(m) => cells.extend([
                    grouped(m.cycles),
                    format!("{:.2}", m.time_us),
                    if m.tflops > 0.0 {
                        format!("{:.1} TFLOP/s", m.tflops)
                    } else {
                        format!("{:.0} GB/s", m.dram_gbs)
                    },
                    m.binding.clone().unwrap_or_default(),
                    m.top_stall.clone().unwrap_or_default(),
                ]),
                Err(e) => {
                    cells.extend(std::iter::repeat_n(String::new(), 4));
                    cells.push(format!("error: {}", e.lines().next().unwrap_or_default()));
                }
            }
            t.row(cells);
        }
        out + &t.render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(s: &str) -> Axis {
        Axis::parse(s).unwrap()
    }

    #[test]
    fn axes_take_values_lists_and_inclusive_ranges() {
        assert_eq!(axis("stages=1..3").values, vec![1, 2, 3]);
        assert_eq!(axis("bn=128,256").values, vec![128, 256]);
        assert_eq!(axis("big=1_000").values, vec![1000]);
        assert_eq!(axis("on=true,false").values, vec![1, 0]);
        for (s, e) in [
            (
                "stages",
                "`stages` is not KEY=VALUES (a value, a list `a,b,c` or an inclusive range `a..b`)",
            ),
            ("s=3..1", "the range `s=3..1` is empty: a..b needs a <= b"),
            (
                "s=1,x",
                "the value of `s` must be an integer or true/false, not `x`",
            ),
        ] {
            assert_eq!(Axis::parse(s).unwrap_err().to_string(), e);
        }
    }

    #[test]
    fn the_product_runs_the_last_axis_fastest() {
        let p = product(&[axis("a=1..2"), axis("b=5,6,7")]).unwrap();
        assert_eq!(p.len(), 6);
        assert_eq!(p[0], vec![1, 5]);
        assert_eq!(p[1], vec![1, 6]);
        assert_eq!(p[3], vec![2, 5]);
        assert_eq!(product(&[]).unwrap(), vec![Vec::<i64>::new()]);
        assert_eq!(
            product(&[axis("a=1"), axis("a=2")]).unwrap_err(),
            AxisError::Twice("a".into())
        );
        assert_eq!(
            product(&[axis("a=0..2000"), axis("b=0..2000")]).unwrap_err(),
            AxisError::TooMany
        );
    }

    #[test]
    fn shards_split_the_points_round_robin() {
        let s = Shard::parse("1/3").unwrap();
        let mine: Vec<usize> = (0..7).filter(|&i| s.holds(i)).collect();
        assert_eq!(mine, vec![1, 4]);
        assert_eq!(Sweep::count(&[axis("a=0..6")], Some(s)).unwrap(), 2);
        assert!(Shard::parse("3/3").is_err());
        assert!(Shard::parse("1").is_err());
    }

    #[test]
    fn floats_read_back_bit_for_bit() {
        let m = Metrics {
            cycles: 1,
            time_us: 193.87216494845362,
            tflops: 0.1 + 0.2,
            dram_gbs: 1e-300 * 3.0,
            binding: None,
            top_stall: None,
        };
        let back: Metrics = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }
}
