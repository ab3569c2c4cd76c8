//! The `sim` command line.

use clap::{Parser, Subcommand};
use sim::preset::Preset;
use sim::run::{self, RunOptions};
use std::path::PathBuf;
use std::process::ExitCode;
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
    /// Stop with an error past this many simulated cycles.
    #[arg(long, default_value_t = 1_000_000_000)]
    max_cycles: u64,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a scenario and print a summary (or `--json`).
    Run {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// SM clock for converting cycles to time (default: the preset's loaded clock).
        #[arg(long)]
        clock_mhz: Option<f64>,
        /// Print the report as one JSON object (see docs/cli.md).
        #[arg(long)]
        json: bool,
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
    /// Analytic models: GEMM resources and roofline, autotuner steps, attention, decode.
    Analyze(sim::analytic::cli::AnalyzeArgs),
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

fn options(a: &ScenarioArgs, clock_mhz: Option<f64>) -> RunOptions {
    RunOptions {
        sets: a.sets.clone(),
        gpu: a.gpu.clone(),
        seed: a.seed,
        clock_mhz,
        max_cycles: a.max_cycles,
    }
}

fn execute(cmd: Command) -> Result<(), String> {
    match cmd {
        Command::Run {
            scenario,
            clock_mhz,
            json,
        } => {
            let report = run::run_file(&scenario.file, &options(&scenario, clock_mhz))
                .map_err(|e| e.to_string())?;
            if json {
                println!("{}", report.to_json());
            } else {
                print!("{}", report.summary());
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
            println!(
                "{}: {} warp-instructions, {} cycles, {} events in {:.3} ms (best of {iters})",
                r.scenario,
                r.instructions,
                r.cycles,
                r.events,
                best * 1e3
            );
            println!(
                "  {:.2} M instructions/s, {:.2} M simulated cycles/s, {:.2} M events/s",
                r.instructions as f64 / best / 1e6,
                r.cycles as f64 / best / 1e6,
                r.events as f64 / best / 1e6
            );
            Ok(())
        }
        Command::Analyze(args) => sim::analytic::cli::run(&args).map(|text| print!("{text}")),
        Command::Presets => {
            for name in Preset::names() {
                let p = Preset::builtin(name).map_err(|e| e.to_string())?;
                println!("{name:<10} {}", p.description);
            }
            Ok(())
        }
    }
}
