//! `sim validate`: every calibration microbenchmark measured on a real GPU
//! (`calibration/data/`) next to its twin scenario (`scenarios/calibration/`) simulated on a
//! preset, with the error of each row and the mean absolute error of each group
//! (`docs/validation.md`). The stored measurements and the twins are compiled in, so it runs
//! anywhere, without a GPU; `--data DIR` compares a new run of `calibration/run.sh` instead.
//!
//! [`data`] reads the measurements, [`groups`] says how each group is judged, [`benchmarks`]
//! lists the rows (each a [`spec::Spec`]), [`twins`] simulates them, [`clock`] adds the SM
//! clock rows (the preset's clock table, no twin), and [`report`] holds the result and prints
//! its tables.

mod benchmarks;
mod clock;
mod data;
mod groups;
mod report;
mod spec;
mod twins;

pub use data::{Data, DataError};
pub use groups::Bound;
pub use report::{GroupResult, Row, Validation};
pub use twins::TwinError;

use crate::gpu::preset::{Preset, PresetError};
use clap::Args;
use groups::{is_exact, GROUPS};
use std::collections::BTreeSet;
use std::path::PathBuf;
use twins::{run_all, RunKey};

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// GPU preset to simulate (the stored data were measured on an H200 SXM).
    #[arg(long, default_value = "h200-sxm")]
    pub gpu: String,
    /// Print one JSON object instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Read `<program>.csv` (as `calibration/run.sh` writes them to $OUT) from this folder
    /// instead of the stored `calibration/data/h200-<program>.csv`; missing files fall back to
    /// the stored ones, but a missing folder, or one holding none of them, is an error.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Only these groups (repeatable; default all).
    #[arg(long = "group", value_name = "NAME")]
    pub groups: Vec<String>,
}

/// Why `sim validate` failed.
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    #[error("{file}: {source}")]
    Parse { file: String, source: DataError },
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--data {}: no such folder", .0.display())]
    NoDataDir(PathBuf),
    #[error("--data {}: none of the measurement files is there (expected some of: {expected})", dir.display())]
    NoData { dir: PathBuf, expected: String },
    #[error(transparent)]
    Data(#[from] DataError),
    #[error("unknown group `{name}` (groups: {known})")]
    UnknownGroup { name: String, known: String },
    /// Twin `twin` with the overrides `sets` (`k=v`, space-separated) did not run.
    #[error("twin {twin} ({sets}): {source}")]
    Twin {
        twin: &'static str,
        sets: String,
        source: Box<TwinError>,
    },
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Preset(#[from] PresetError),
    /// One line per bounded group over its bound.
    #[error("{} group(s) over their bound: {}", .0.len(), .0.join("; "))]
    OverBound(Vec<String>),
}

/// Runs the twins of the selected groups (all when `groups` is empty) on `gpu` against `data`.
pub fn validate(gpu: &str, data: &Data, groups: &[String]) -> Result<Validation, ValidateError> {
    for g in groups {
        if !GROUPS.iter().any(|x| x.name == g) {
            let names: Vec<&str> = GROUPS.iter().map(|x| x.name).collect();
            return Err(ValidateError::UnknownGroup {
                name: g.clone(),
                known: names.join(", "),
            });
        }
    }
    let specs: Vec<_> = benchmarks::specs()
        .into_iter()
        .filter(|s| groups.is_empty() || groups.iter().any(|g| g == s.group))
        .collect();
    // Measured values and the clock each twin runs at.
    let measured = specs
        .iter()
        .map(|s| s.measured(data))
        .collect::<Result<Vec<_>, _>>()?;
    let all: BTreeSet<RunKey> = specs
        .iter()
        .zip(&measured)
        .flat_map(|(s, (_, mhz))| s.runs(*mhz))
        .collect();
    let samples = run_all(gpu, all.into_iter().collect())?;
    let c = |k: &RunKey| samples.get(k).copied().unwrap_or_default();
    let mut rows = Vec::with_capacity(specs.len());
    for (s, (meas, mhz)) in specs.iter().zip(&measured) {
        let sim = s.simulated(*mhz, c);
        let error = if is_exact(s.group) {
            sim - meas
        } else if *meas != 0.0 {
            sim / meas - 1.0
        } else {
            f64::INFINITY
        };
        rows.push(Row {
            group: s.group.to_string(),
            name: s.name.clone(),
            unit: s.unit.to_string(),
            measured: *meas,
            simulated: sim,
            error,
        });
    }
    rows.extend(clock::rows(&Preset::builtin(gpu)?, data, groups)?);
    let groups = GROUPS
        .iter()
        .filter_map(|g| GroupResult::of(g, &rows))
        .collect();
    Ok(Validation {
        gpu: gpu.to_string(),
        rows,
        groups,
    })
}

/// `sim validate`: the tables (or JSON) to print, and an error when a bounded group is over
/// its bound. The caller prints, so that a closed standard output is its to handle.
pub fn run_cli(args: &ValidateArgs) -> Result<(String, Result<(), ValidateError>), ValidateError> {
    let data = match &args.data {
        Some(dir) => Data::with_dir(dir)?,
        None => Data::stored()?,
    };
    let v = validate(&args.gpu, &data, &args.groups)?;
    let text = if args.json {
        serde_json::to_string_pretty(&v)? + "\n"
    } else {
        v.table()
    };
    let failures = v.failures();
    let verdict = if failures.is_empty() {
        Ok(())
    } else {
        Err(ValidateError::OverBound(failures))
    };
    Ok((text, verdict))
}
