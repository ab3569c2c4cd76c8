//! `sim run`: simulate a scenario, print the summary or the `--json` report, write a trace.

use super::emit;
use super::scenario::ScenarioArgs;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sim::engine::Progress;
use sim::observe::trace::{Filter, Level, DEFAULT_TRACE_MAX_MB};
use sim::observe::{atomic, diff};
use sim::run::{self, TraceOptions};
use std::io::{IsTerminal, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// SM clock (default: the preset's loaded clock). Converts cycles to time, and HBM's
    /// bandwidth to bytes per SM cycle: a memory-bound run takes more cycles at a faster clock.
    #[arg(long)]
    clock_mhz: Option<f64>,
    /// Print the report as one JSON object (see docs/cli.md).
    #[arg(long)]
    json: bool,
    /// Print the report as one CSV table, a row per number (see docs/cli.md).
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// After the summary, this run against an earlier one's `--json` report (as `sim diff`).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["json", "csv"])]
    baseline: Option<PathBuf>,
    /// Write the summary, `--json` or `--csv` to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    trace: TraceArgs,
}

#[derive(clap::Args)]
struct TraceArgs {
    /// Trace file (default: traces/<scenario>.trace.json).
    #[arg(long, value_name = "PATH", conflicts_with = "no_trace")]
    trace: Option<PathBuf>,
    /// Write no trace.
    #[arg(long)]
    no_trace: bool,
    /// Trace only SMs START..END (END exclusive).
    #[arg(long, value_name = "START..END", value_parser = parse_range)]
    trace_sms: Option<Range<u64>>,
    /// Trace only cycles START..END.
    #[arg(long, value_name = "START..END", value_parser = parse_range)]
    trace_window: Option<Range<u64>>,
    /// Detail: counters only, warp states (merged), or every state interval.
    #[arg(long, value_enum, default_value = "warps")]
    trace_level: Level,
    /// Stop writing trace events past this many MiB of JSON (1 to 2^20).
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_TRACE_MAX_MB, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    trace_max_mb: u64,
}

impl TraceArgs {
    fn options(&self) -> Option<TraceOptions> {
        let sm = |x: u64| x.min(u32::MAX as u64) as u32;
        (!self.no_trace).then(|| TraceOptions {
            path: self.trace.clone(),
            filter: Filter {
                level: self.trace_level,
                sms: self.trace_sms.clone().map(|r| sm(r.start)..sm(r.end)),
                window: self.trace_window.clone(),
            },
            max_bytes: self.trace_max_mb << 20,
        })
    }
}

fn parse_range(s: &str) -> Result<Range<u64>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}` is not START..END"))?;
    let num = |x: &str| {
        x.trim()
            .replace('_', "")
            .parse::<u64>()
            .map_err(|_| format!("`{x}` in `{s}` is not a non-negative integer"))
    };
    let (a, b) = (num(a)?, num(b)?);
    if a >= b {
        return Err(format!("`{s}` is empty: START must be below END"));
    }
    Ok(a..b)
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    // An output over an input, or a baseline that cannot be read, fails before the run.
    if let Some(out) = &a.output {
        let inputs = [
            (Some(&a.scenario.file), "the scenario file itself"),
            (a.baseline.as_ref(), "the baseline being read"),
            (a.trace.trace.as_ref(), "the trace this run writes"),
        ];
        for (input, what) in inputs {
            if input.is_some_and(|i| i == out || run::same_file(i, out)) {
                anyhow::bail!(
                    "{}: -o names {what}, which the output would replace",
                    out.display()
                );
            }
        }
    }
    let baseline = a.baseline.as_ref().map(|p| diff::load(p)).transpose()?;
    let mut opts = a.scenario.options(a.clock_mhz);
    opts.trace = a.trace.options();
    let bar = progress_bar();
    opts.progress = bar.clone().map(|b| {
        let start = Instant::now();
        Progress(Arc::new(move |cycle, done, grid| {
            // Runs under a second never show a bar.
            if start.elapsed().as_secs_f64() > 1.0 {
                b.set_length(grid as u64);
                b.set_position(done as u64);
                b.set_message(format!("cycle {cycle}"));
            }
        }))
    });
    let result = run::run_scenario(&a.scenario.file, &opts);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let ran = result?;
    for w in ran.warnings() {
        eprintln!("warning: {}: {w}", a.scenario.file.display());
    }
    let report = match &ran {
        run::Ran::Kernel(report) => report,
        run::Ran::Sequence(_) => {
            if a.baseline.is_some() {
                anyhow::bail!(
                    "{}: --baseline takes a single kernel; this scenario is a sequence",
                    a.scenario.file.display()
                );
            }
            if opts.trace.is_some() {
                eprintln!(
                    "note: {}: a sequence of kernels writes no trace yet",
                    a.scenario.file.display()
                );
            }
            return output(a, &render(a, &ran)?);
        }
    };
    if let (Some(out), Some(t)) = (&a.output, &report.trace) {
        // The default trace's name is known only now; the trace is written, the output not.
        if run::same_file(out, Path::new(&t.path)) {
            anyhow::bail!(
                "{}: -o names the trace this run wrote, which the output would replace",
                out.display()
            );
        }
    }
    let mut out = render(a, &ran)?;
    if let (Some(path), Some(base)) = (&a.baseline, &baseline) {
        let name = a.scenario.file.display().to_string();
        let current = serde_json::to_value(report)?;
        let d = diff::compare((&path.display().to_string(), base), (&name, &current));
        out += &format!("\ncompared with {}:\n", path.display());
        out += &diff::render(&d, false);
    }
    output(a, &out)
}

/// The run as `--json`, `--csv` or the summary.
fn render(a: &Args, ran: &run::Ran) -> anyhow::Result<String> {
    Ok(if a.json {
        ran.to_json() + "\n"
    } else if a.csv {
        ran.to_csv()?
    } else {
        ran.summary()
    })
}

/// `text` to `-o FILE`, whole or not at all, or else to standard output.
fn output(a: &Args, text: &str) -> anyhow::Result<()> {
    let Some(path) = &a.output else {
        return emit(text);
    };
    let name = path.display();
    atomic::write(path, text.as_bytes()).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    // The output is written; a closed standard error only loses this note.
    let _ = writeln!(std::io::stderr(), "wrote {name}");
    Ok(())
}

/// A progress bar on stderr, only when stderr is a terminal.
fn progress_bar() -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let style =
        ProgressStyle::with_template("{spinner} {pos}/{len} CTAs done, {msg} [{elapsed}]").ok()?;
    Some(ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(style))
}
