//! `sim analyze gemm|attention|decode|occupancy|waves|wgmma`: the analytic models' tables, as plain text, for any
//! GPU spec, one file per subcommand. Every input error comes back as an [`AnalyzeError`] for
//! the binary to print; nothing here runs the engine.

pub(crate) mod attention;
mod decode;
mod gemm;
pub(crate) mod occupancy;
pub(crate) mod tune;
pub(crate) mod wgmma;

use super::error::InputError;
use super::tune::MediansError;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    #[command(subcommand)]
    model: Model,
    /// Print the model's figures as one JSON object instead of tables (docs/analytic.md).
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
enum Model {
    /// GEMM FLOPs and bytes, occupancy, waves and roofline; with `--tune`, the
    /// autotuner's prune, perf-model ranking and pick_best (Triton's autotuner steps).
    Gemm(gemm::GemmArgs),
    /// Hopper attention forward: wgmma feed, consumer registers, K/V intensity and L2, softmax.
    Attention(attention::AttentionArgs),
    /// Split-KV decode time for a range of split counts.
    Decode(decode::DecodeArgs),
    /// CTAs per SM of one block under each of the four limits, and the binding one.
    Occupancy(occupancy::OccupancyArgs),
    /// How a grid's tiles fill the GPU in waves of SMs x CTAs per SM.
    Waves(occupancy::WavesArgs),
    /// wgmma's math against its operand feed for a range of N (Hopper).
    Wgmma(wgmma::WgmmaArgs),
}

/// Why `sim analyze` printed nothing.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Medians(#[from] MediansError),
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} has no wgmma; the {1} model is for Hopper (h100-sxm, h200-sxm)")]
    NoWgmma(&'static str, &'static str),
    #[error("--l2-hit {0} must be in [0, 1)")]
    HitRate(f64),
    #[error("--{name} {value} must be a multiple of {step} in {min}..={max}")]
    NotAStep {
        name: &'static str,
        value: u64,
        step: u64,
        min: u64,
        max: u64,
    },
    #[error("--sm-gbps {0} must be a positive number")]
    SmBandwidth(f64),
    #[error("--cluster {0}: {1} runs clusters of 1 to {2} CTA(s), all on one GPC")]
    ClusterSize(u64, &'static str, u64),
    #[error("--tiles {0} is not a whole number of clusters of {1} (a grid is whole clusters)")]
    ClusterTiles(u64, u64),
    #[error(transparent)]
    Preset(#[from] crate::gpu::preset::PresetError),
}

/// The text `sim analyze` prints.
pub fn run(args: &AnalyzeArgs) -> Result<String, AnalyzeError> {
    match &args.model {
        Model::Gemm(a) => gemm::run(a),
        Model::Attention(a) => attention::run(a),
        Model::Decode(a) => decode::run(a),
        Model::Occupancy(a) => occupancy::run(a),
        Model::Waves(a) => occupancy::run_waves(a),
        Model::Wgmma(a) => wgmma::run(a),
    }
}

/// The figures `sim analyze --json` prints: the same model and inputs as [`run`], as one
/// JSON object with a `model` field (`gemm`, `gemm_tune`, `attention`, `decode`, `occupancy`,
/// `waves`, `wgmma`).
pub fn run_json(args: &AnalyzeArgs) -> Result<serde_json::Value, AnalyzeError> {
    match &args.model {
        Model::Gemm(a) => gemm::run_json(a),
        Model::Attention(a) => attention::run_json(a),
        Model::Decode(a) => decode::run_json(a),
        Model::Occupancy(a) => occupancy::run_json(a),
        Model::Waves(a) => occupancy::run_waves_json(a),
        Model::Wgmma(a) => wgmma::run_json(a),
    }
}

/// `sim analyze`'s output for `args`: the tables, or with `--json` the JSON object.
pub fn output(args: &AnalyzeArgs) -> Result<String, AnalyzeError> {
    if args.json {
        let value = run_json(args)?;
        Ok(serde_json::to_string_pretty(&value).expect("a JSON value serializes") + "\n")
    } else {
        run(args)
    }
}

/// An `--l2-hit` rate: a fraction in [0, 1).
fn hit_rate(h: f64) -> Result<f64, AnalyzeError> {
    if (0.0..1.0).contains(&h) {
        Ok(h)
    } else {
        Err(AnalyzeError::HitRate(h))
    }
}

/// `value` must be a multiple of `step` in `min..=max`: the wgmma shapes.
fn check_step(
    name: &'static str,
    value: u64,
    step: u64,
    min: u64,
    max: u64,
) -> Result<(), AnalyzeError> {
    if value < min || value > max || !value.is_multiple_of(step) {
        return Err(AnalyzeError::NotAStep {
            name,
            value,
            step,
            min,
            max,
        });
    }
    Ok(())
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

    /// `sim analyze` on `line`, which the argument parser accepts.
    fn analyze(line: &str) -> Result<String, AnalyzeError> {
        let cli = Cli::try_parse_from(std::iter::once("analyze").chain(line.split_whitespace()))
            .unwrap_or_else(|e| panic!("{line}: {e}"));
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
        for (line, error) in [
            (
                "gemm --gpu b200 64 64 64",
                "unknown GPU `b200`; known: h100-sxm, h200-sxm, a100-sxm, rtx3070",
            ),
            (
                "gemm 64 64 64 --l2-hit 1.5",
                "--l2-hit 1.5 must be in [0, 1)",
            ),
            ("attention --l2-hit -0.5", "--l2-hit -0.5 must be in [0, 1)"),
            (
                "attention --gpu rtx3070",
                "rtx3070 has no wgmma; the attention model is for Hopper (h100-sxm, h200-sxm)",
            ),
            (
                "attention --bm 96",
                "--bm 96 must be a multiple of 64 in 64..=256",
            ),
            ("decode --splits 0", "splits = 0 must be in 1..=128"),
            (
                "occupancy --threads 2048",
                "threads = 2048 must be in 1..=1024",
            ),
            (
                "occupancy --gpu a100-sxm --smem 200000",
                "shared memory = 200000 must be at most 166912",
            ),
            ("waves --tiles 0", "tiles = 0 must be in 1..=1073741824"),
            (
                "waves --tiles 9 --gpu rtx3070 --ctas-per-sm 17",
                "ctas-per-sm = 17 must be in 1..=16",
            ),
            (
                "wgmma --n 64,100",
                "--n 100 must be a multiple of 8 in 8..=256",
            ),
            (
                "wgmma --gpu rtx3070",
                "rtx3070 has no wgmma; the wgmma model is for Hopper (h100-sxm, h200-sxm)",
            ),
            (
                "decode --sm-gbps -3",
                "--sm-gbps -3 must be a positive number",
            ),
        ] {
            assert_eq!(analyze(line).unwrap_err().to_string(), error, "{line}");
        }
        assert!(analyze("gemm 64 64 64 --tune --medians /nonexistent/m.txt")
            .unwrap_err()
            .to_string()
            .starts_with("/nonexistent/m.txt: "));
    }

    #[test]
    fn occupancy_names_the_binding_limit_and_the_resident_warps() {
        let out = analyze("occupancy --gpu h100-sxm --threads 256 --regs 64 --smem 49152").unwrap();
        assert_eq!(
            out,
            "Occupancy on h100-sxm: 256 threads (8 warps), 64 registers per thread (2,048 a warp allocated), 49,152 B of shared memory\n\n\
             \x20 limit    CTAs/SM\n  blocks        32\n  regs           4\n  smem           4\n  threads        8\n\
             \x20 -> 4 CTAs/SM, limiter regs\n  32 of 64 warps resident: 50% occupancy\n"
        );
        // No shared memory: no limit from it. 1024 threads of 255 registers: no CTA fits.
        let out = analyze("occupancy --gpu rtx3070 --threads 1024 --regs 255").unwrap();
        assert!(out.contains("  smem           -\n"), "{out}");
        assert!(
            out.contains("-> 0 CTAs/SM, limiter regs\n  0 of 48 warps resident: 0% occupancy"),
            "{out}"
        );
    }

    #[test]
    fn waves_and_wgmma_print_one_row_each() {
        let out = analyze("waves --gpu h100-sxm --tiles 133").unwrap();
        assert!(
            out.ends_with("  1          133       132      2         1%       50.4%\n"),
            "{out}"
        );
        let out = analyze("wgmma --gpu h200-sxm --n 8").unwrap();
        assert!(out.contains("  8      4.0     18.0      2.0      0.22      2.00      22%\n  SS keeps the tensor cores fed for N >= 64\n"), "{out}");
    }

    #[test]
    fn decode_marks_the_best_split_count() {
        let out = analyze("decode --gpu h200-sxm --splits 1,8").unwrap();
        assert!(out.contains("fastest: 8 splits, 29.6 µs"), "{out}");
    }
}
