//! `sim sweep`: a scenario over a product of parameter values, a row per point; shards and
//! their merge; a chart of one metric.

use super::emit;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sim::observe::atomic;
use sim::sweep::cache::{self, Cache};
use sim::sweep::plot::{self, Metric};
use sim::sweep::{self, Axis, Options, Shard, Sweep};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Scenario file (RON).
    #[arg(required_unless_present = "merge")]
    file: Option<PathBuf>,
    /// A swept parameter: one value, a list (`--set bn=128,256`) or an inclusive range
    /// (`--set stages=1..6`); the points are the product, the first `--set` outermost.
    #[arg(long = "set", value_name = "KEY=VALUES", value_parser = parse_axis)]
    sets: Vec<Axis>,
    /// Run on this GPU preset instead of the scenario's (see `sim presets`).
    #[arg(long)]
    gpu: Option<String>,
    /// Seed of every point's random generator (memory latency jitter).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// A point stops with an error past this many simulated cycles (at most 2^38).
    #[arg(long, default_value_t = 1_000_000_000, value_parser = clap::value_parser!(u64).range(1..=1 << 38))]
    max_cycles: u64,
    /// Skip the sanitizer's hazard checks.
    #[arg(long)]
    no_check: bool,
    /// Threads the points run on (default: one per core); the output is the same for any.
    #[arg(short, long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Print the sweep as one JSON object (what --merge reads).
    #[arg(long)]
    json: bool,
    /// Print one CSV row per point.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// Also write an SVG line chart of --metric against --x, a line per combination of the
    /// other parameters.
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// The chart's x axis: a swept parameter (default: the only one).
    #[arg(long, value_name = "PARAM", requires = "plot")]
    x: Option<String>,
    /// The chart's y axis.
    #[arg(long, value_enum, default_value = "cycles")]
    metric: Metric,
    /// Run every N-th point starting at I (0 <= I < N); rows keep their point indices.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    shard: Option<Shard>,
    /// Merge shards' `--json` outputs into exactly the output of the whole sweep.
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with_all = ["file", "sets", "gpu", "shard", "no_cache"])]
    merge: Vec<PathBuf>,
    /// Write the table, `--json` or `--csv` to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Simulate every point, neither reading nor writing the result cache (docs/tune.md).
    #[arg(long)]
    no_cache: bool,
}

fn parse_axis(s: &str) -> Result<Axis, String> {
    Axis::parse(s).map_err(|e| e.to_string())
}

/// The threads `--jobs` asks for, else one per core.
pub(super) fn jobs(asked: Option<u64>) -> usize {
    asked.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    )
}

/// The result cache unless `--no-cache`.
pub(super) fn cache(no_cache: bool) -> Option<Cache> {
    (!no_cache).then(|| Cache::new(&cache::default_dir()))
}

/// A bar of `len` points on standard error, only when it is a terminal.
pub(super) fn points_bar(len: usize) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let style =
        ProgressStyle::with_template("{bar:30} {pos}/{len} points [{elapsed}, ~{eta} left]")
            .ok()?;
    Some(
        ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr())
            .with_style(style),
    )
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let result = match &a.file {
        None => {
            let mut parts = Vec::new();
            for p in &a.merge {
                let shown = p.display().to_string();
                let text =
                    std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
                parts.push((shown.clone(), Sweep::from_json(&text, &shown)?));
            }
            Sweep::merge(parts)?
        }
        Some(file) => {
            let (shown, source) = sweep::read_scenario(file)?;
            if a.plot.is_some() {
                plot::x_axis(&a.sets, a.x.as_deref())?;
            }
            let opts = Options {
                gpu: a.gpu.clone(),
                seed: a.seed,
                max_cycles: a.max_cycles,
                check: !a.no_check,
                jobs: jobs(a.jobs),
            };
            let bar = points_bar(Sweep::count(&a.sets, a.shard)?);
            let done = || {
                if let Some(b) = &bar {
                    b.inc(1);
                }
            };
            let cache = cache(a.no_cache);
            let s = sweep::run(
                &shown,
                &source,
                a.sets.clone(),
                a.shard,
                &opts,
                cache.as_ref(),
                &done,
            )?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            s
        }
    };
    if let Some(path) = &a.plot {
        let svg = plot::line_chart(&result, a.x.as_deref(), a.metric)?;
        atomic::write(path, svg.as_bytes())
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    }
    let text = if a.json {
        result.to_json()
    } else if a.csv {
        result.to_csv()
    } else {
        result.to_text()
    };
    match &a.output {
        Some(path) => atomic::write(path, text.as_bytes())
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display())),
        None => emit(&text),
    }
}
