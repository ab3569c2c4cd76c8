//! `sim analyze gemm|attention|decode`: the analytic models' tables, as plain text, for any
//! GPU spec, one file per subcommand. Every input error comes back as an [`AnalyzeError`] for
//! the binary to print; nothing here runs the engine.

mod attention;
mod decode;
mod gemm;
pub(crate) mod tune;

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
    /// GEMM FLOPs and bytes, occupancy, waves and roofline (seed K1); with `--tune`, the
    /// autotuner's prune, perf-model ranking and pick_best (seed T3).
    Gemm(gemm::GemmArgs),
    /// Hopper attention forward: wgmma feed, consumer registers, K/V intensity and L2, softmax.
    Attention(attention::AttentionArgs),
    /// Split-KV decode time for a range of split counts.
    Decode(decode::DecodeArgs),
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
    #[error("{0} has no wgmma; the attention model is for Hopper (h100-sxm, h200-sxm)")]
    NoWgmma(&'static str),
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
}

/// The text `sim analyze` prints.
pub fn run(args: &AnalyzeArgs) -> Result<String, AnalyzeError> {
    match &args.model {
        Model::Gemm(a) => gemm::run(a),
        Model::Attention(a) => attention::run(a),
        Model::Decode(a) => decode::run(a),
    }
}

/// The figures `sim analyze --json` prints: the same model and inputs as [`run`], as one
/// JSON object with a `model` field (`gemm`, `gemm_tune`, `attention`, `decode`).
pub fn run_json(args: &AnalyzeArgs) -> Result<serde_json::Value, AnalyzeError> {
    match &args.model {
        Model::Gemm(a) => gemm::run_json(a),
        Model::Attention(a) => attention::run_json(a),
        Model::Decode(a) => decode::run_json(a),
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
    fn decode_marks_the_best_split_count() {
        let out = analyze("decode --gpu h200-sxm --splits 1,8").unwrap();
        assert!(out.contains("fastest: 8 splits, 29.6 µs"), "{out}");
    }
}
