//! The `sim` command line.

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sim::engine::Progress;
use sim::gpu::preset::Preset;
use sim::observe::trace::{Filter, Level};
use sim::run::{self, RunOptions, TraceOptions};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "sim",
    version,
    about = "Cycle-level simulator of NVIDIA Hopper-class SMs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct ScenarioArgs {
    /// Scenario file (RON).
    file: PathBuf,
    /// Override a scenario parameter: `--set stages=4` (integers, or true/false).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    sets: Vec<(String, i64)>,
    /// Run on this GPU preset instead of the scenario's (see `sim presets`).
    #[arg(long)]
    gpu: Option<String>,
    /// Seed of the run's random generator (memory latency jitter).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Stop with an error past this many simulated cycles (at most 2^38).
    #[arg(long, default_value_t = 1_000_000_000, value_parser = clap::value_parser!(u64).range(1..=1 << 38))]
    max_cycles: u64,
    /// Skip the sanitizer's hazard checks.
    #[arg(long)]
    no_check: bool,
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
    trace_sms: Option<std::ops::Range<u64>>,
    /// Trace only cycles START..END.
    #[arg(long, value_name = "START..END", value_parser = parse_range)]
    trace_window: Option<std::ops::Range<u64>>,
    /// Detail: counters only, warp states (merged), or every state interval.
    #[arg(long, value_enum, default_value = "warps")]
    trace_level: Level,
}

impl TraceArgs {
    fn options(&self) -> Option<TraceOptions> {
        (!self.no_trace).then(|| TraceOptions {
            path: self.trace.clone(),
            filter: Filter {
                level: self.trace_level,
                sms: self.trace_sms.clone().map(|r| {
                    r.start.min(u32::MAX as u64) as u32..r.end.min(u32::MAX as u64) as u32
                }),
                window: self.trace_window.clone(),
            },
        })
    }
}

fn parse_range(s: &str) -> Result<std::ops::Range<u64>, String> {
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

#[derive(Subcommand)]
enum Command {
    /// Simulate a scenario and print a summary (or `--json`).
    Run {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// SM clock (default: the preset's loaded clock). Converts cycles to time, and HBM's
        /// bandwidth to bytes per SM cycle: a memory-bound run takes more cycles at a faster clock.
        #[arg(long)]
        clock_mhz: Option<f64>,
        /// Print the report as one JSON object (see docs/cli.md).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        trace: TraceArgs,
    },
    /// Measure the simulator's speed on a scenario (simulated instructions per wall second).
    Bench {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// Timed repetitions (after one warm-up run).
        #[arg(long, default_value_t = 5)]
        iters: u32,
    },
    /// List the built-in GPU presets.
    Presets,
    /// Static validation and a hazard-checked simulation (no trace): hazards, deadlocks.
    Check {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// Simulate at most this many cycles.
        #[arg(long, default_value_t = 20_000_000)]
        check_cycles: u64,
    },
    /// Where the warps' cycles went, per role or warp, from a trace.
    Stalls {
        /// Trace file written by `sim run`.
        trace: PathBuf,
        /// One row per warp instead of per role.
        #[arg(long)]
        per_warp: bool,
        /// Comma-separated rows: row,state,ncu,warp_cycles,fraction.
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// The same numbers as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// One self-contained HTML page (timeline, stall charts, counters) from a trace.
    Report {
        /// Trace file written by `sim run`.
        trace: PathBuf,
        /// Where to write the page.
        #[arg(short, long, default_value = "report.html")]
        output: PathBuf,
    },
    /// Analytic models: GEMM resources and roofline, autotuner steps, attention, decode.
    Analyze(sim::analytic::cli::AnalyzeArgs),
    /// Measured microbenchmarks (calibration/data) against their simulated twins, per group.
    Validate(sim::validate::ValidateArgs),
}

fn parse_set(s: &str) -> Result<(String, i64), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not KEY=VALUE"))?;
    let v = v.trim();
    let value = match v {
        "true" => 1,
        "false" => 0,
        _ => v.replace('_', "").parse::<i64>().map_err(|_| {
            format!("the value of `{k}` must be an integer or true/false, not `{v}`")
        })?,
    };
    Ok((k.trim().to_string(), value))
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match execute(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// A progress bar on stderr, only when stderr is a terminal.
fn progress_bar() -> Option<(ProgressBar, Instant)> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let style =
        ProgressStyle::with_template("{spinner} {pos}/{len} CTAs done, {msg} [{elapsed}]").ok()?;
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(style);
    Some((bar, Instant::now()))
}

fn options(a: &ScenarioArgs, clock_mhz: Option<f64>) -> RunOptions {
    RunOptions {
        sets: a.sets.clone(),
        gpu: a.gpu.clone(),
        seed: a.seed,
        clock_mhz,
        max_cycles: a.max_cycles,
        check: !a.no_check,
        trace: None,
        progress: None,
    }
}

fn execute(cmd: Command) -> Result<(), String> {
    match cmd {
        Command::Run {
            scenario,
            clock_mhz,
            json,
            trace,
        } => {
            let mut opts = options(&scenario, clock_mhz);
            opts.trace = trace.options();
            let bar = progress_bar();
            opts.progress = bar.as_ref().map(|(b, start)| {
                let (b, start) = (b.clone(), *start);
                Progress(Arc::new(move |cycle, done, grid| {
                    // Runs under a second never show a bar.
                    if start.elapsed().as_secs_f64() > 1.0 {
                        b.set_length(grid as u64);
                        b.set_position(done as u64);
                        b.set_message(format!("cycle {cycle}"));
                    }
                }))
            });
            let result = run::run_file(&scenario.file, &opts);
            if let Some((b, _)) = bar {
                b.finish_and_clear();
            }
            let report = result.map_err(|e| e.to_string())?;
            if json {
                emit(&(report.to_json() + "\n"))?;
            } else {
                emit(&report.summary())?;
            }
            Ok(())
        }
        Command::Bench { scenario, iters } => {
            let opts = options(&scenario, None);
            let (kernel, preset) = run::load(&scenario.file, &opts).map_err(|e| e.to_string())?;
            let file = scenario.file.display().to_string();
            let once = || run::simulate(&file, &kernel, &preset, &opts).map_err(|e| e.to_string());
            once()?;
            let mut best = f64::INFINITY;
            let mut report = None;
            for _ in 0..iters.max(1) {
                let t = Instant::now();
                let r = once()?;
                best = best.min(t.elapsed().as_secs_f64());
                report = Some(r);
            }
            let r = report.expect("at least one iteration");
            emit(
                &(format!(
                    "{}: {} warp-instructions, {} cycles, {} events in {:.3} ms (best of {iters})",
                    r.scenario,
                    r.instructions,
                    r.cycles,
                    r.events,
                    best * 1e3
                ) + "\n"),
            )?;
            emit(
                &(format!(
                    "  {:.2} M instructions/s, {:.2} M simulated cycles/s, {:.2} M events/s",
                    r.instructions as f64 / best / 1e6,
                    r.cycles as f64 / best / 1e6,
                    r.events as f64 / best / 1e6
                ) + "\n"),
            )?;
            Ok(())
        }
        Command::Analyze(args) => emit(&sim::analytic::cli::run(&args).map_err(|e| e.to_string())?),
        Command::Validate(args) => sim::validate::run_cli(&args).map_err(|e| e.to_string()),
        Command::Stalls {
            trace,
            per_warp,
            csv,
            json,
        } => {
            let s = sim::observe::stalls::load(&trace, per_warp)?;
            if csv {
                emit(&sim::observe::stalls::csv(&s))?;
            } else if json {
                let json = serde_json::to_string_pretty(&s).map_err(|e| e.to_string())?;
                emit(&(json + "\n"))?;
            } else {
                let color =
                    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
                emit(&sim::observe::stalls::render(&s, color))?;
            }
            Ok(())
        }
        Command::Report { trace, output } => {
            let page = sim::observe::report_html::build(&trace)?;
            std::fs::write(&output, page).map_err(|e| format!("{}: {e}", output.display()))?;
            eprintln!("wrote {}", output.display());
            Ok(())
        }
        Command::Check {
            scenario,
            check_cycles,
        } => {
            if scenario.no_check {
                return Err("`sim check` always runs the hazard checks: drop --no-check".into());
            }
            let mut opts = options(&scenario, None);
            opts.max_cycles = opts.max_cycles.min(check_cycles);
            let file = scenario.file.display();
            match run::run_file(&scenario.file, &opts) {
                Ok(r) => {
                    emit(&(format!(
                        "{file}: valid; simulated to completion in {} cycles with no hazard and no deadlock",
                        r.cycles
                    ) + "\n"))?;
                    Ok(())
                }
                Err(run::RunError::Sim { error, .. })
                    if matches!(*error, sim::engine::SimError::CycleLimit { .. }) =>
                {
                    emit(&(format!(
                        "{file}: valid; no hazard and no deadlock in the first {} cycles (stopped there)",
                        opts.max_cycles
                    ) + "\n"))?;
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            }
        }
        Command::Presets => {
            for name in Preset::names() {
                let p = Preset::builtin(name).map_err(|e| e.to_string())?;
                emit(&(format!("{name:<10} {}", p.description) + "\n"))?;
            }
            Ok(())
        }
    }
}

/// Writes to stdout; a closed pipe (`sim stalls … | head`) ends output quietly.
fn emit(text: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.to_string()),
        _ => Ok(()),
    }
}
