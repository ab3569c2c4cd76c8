//! `sim tune gemm`: Triton's autotuner steps, the survivors measured by simulation
//! (`sim::sweep::tune`).

use super::emit;
use super::sweep::{cache, jobs, points_bar};
use sim::analytic::gemm::Gemm;
use sim::analytic::gpu::GpuSpec;
use sim::sweep::tune::{self, TuneOptions, Tuned};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    kernel: Kernel,
}

#[derive(clap::Subcommand)]
enum Kernel {
    /// A GEMM: Triton's configs, early_config_prune, perf_model and top_k, then the survivors
    /// simulated with repeats and pick_best's overlap rule.
    Gemm(GemmArgs),
}

#[derive(clap::Args)]
struct GemmArgs {
    /// GPU: any preset `sim presets` lists.
    #[arg(long, default_value = "h100-sxm")]
    gpu: String,
    /// Rows of A and C.
    #[arg(required_unless_present = "shapes")]
    m: Option<u64>,
    /// Columns of B and C.
    #[arg(required_unless_present = "shapes")]
    n: Option<u64>,
    /// The reduction dimension.
    #[arg(required_unless_present = "shapes")]
    k: Option<u64>,
    /// `triton` (Triton's matmul space for the GPU: 216 configs on Hopper, the classic 192-config space
    /// elsewhere) or a file of `BMxBNxBK warps stages` lines.
    #[arg(long, default_value = "triton")]
    configs: String,
    /// Configs the perf model keeps (raised to the size of its tie group).
    #[arg(long, default_value_t = 8)]
    top_k: usize,
    /// Simulations per config; the median and [p20, p80] are over them (docs/tune.md).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=1000))]
    repeats: u64,
    /// Seed of the repeats' simulator seeds and clock jitter.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Threads the simulations run on (default: one per core); the output is the same for any.
    #[arg(short, long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// A simulation stops with an error past this many cycles (at most 2^38).
    #[arg(long, default_value_t = 1_000_000_000, value_parser = clap::value_parser!(u64).range(1..=1 << 38))]
    max_cycles: u64,
    /// Simulate everything, neither reading nor writing the result cache.
    #[arg(long)]
    no_cache: bool,
    /// Tune every `M N K` line of FILE and print the shape → config table.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["m", "n", "k"])]
    shapes: Option<PathBuf>,
    /// Print the tune as one JSON object (with --shapes, an array of them; docs/tune.md).
    #[arg(long)]
    json: bool,
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let Kernel::Gemm(a) = &a.kernel;
    let gpu = GpuSpec::by_name(&a.gpu)?;
    let configs = tune::configs(&gpu, &a.configs)?;
    let shapes = match (&a.shapes, a.m, a.n, a.k) {
        (Some(path), ..) => tune::read_shapes(path)?,
        (None, Some(m), Some(n), Some(k)) => vec![Gemm::new(m, n, k)?],
        // clap requires M, N and K without --shapes.
        _ => anyhow::bail!("give M N K or --shapes FILE"),
    };
    let opts = TuneOptions {
        repeats: a.repeats as usize,
        seed: a.seed,
        max_cycles: a.max_cycles,
        jobs: jobs(a.jobs),
    };
    let cache = cache(a.no_cache);
    let bar = points_bar(tune::simulations(&gpu, &shapes, &configs.0, a.top_k, &opts));
    let done = || {
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    let tuned = tune::tune_shapes(&gpu, shapes, configs, a.top_k, &opts, cache.as_ref(), &done)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if a.json {
        let values: Vec<_> = tuned.iter().map(Tuned::to_value).collect();
        let value = match &values[..] {
            [one] if a.shapes.is_none() => one.clone(),
            _ => serde_json::Value::Array(values),
        };
        return emit(&(serde_json::to_string_pretty(&value)? + "\n"));
    }
    emit(&match &tuned[..] {
        [one] if a.shapes.is_none() => one.text(),
        all => tune::shapes_text(all),
    })
}
