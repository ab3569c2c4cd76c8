//! The twin scenarios (`scenarios/calibration/`), compiled in, and their runs: each distinct
//! (twin, parameters, clock) simulates once, on as many threads as the machine offers.

use super::ValidateError;
use crate::run::{self, RunError, RunOptions};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The twin scenarios: (name, RON text).
const TWINS: &[(&str, &str)] = &[
    (
        "pipes",
        include_str!("../../../scenarios/calibration/pipes.ron"),
    ),
    (
        "bank_conflicts",
        include_str!("../../../scenarios/bank_conflicts.ron"),
    ),
    (
        "coalescing",
        include_str!("../../../scenarios/coalescing.ron"),
    ),
    (
        "divergence",
        include_str!("../../../scenarios/divergence.ron"),
    ),
    (
        "smem",
        include_str!("../../../scenarios/calibration/smem.ron"),
    ),
    (
        "wgmma",
        include_str!("../../../scenarios/calibration/wgmma.ron"),
    ),
    (
        "barriers",
        include_str!("../../../scenarios/calibration/barriers.ron"),
    ),
    (
        "gmem",
        include_str!("../../../scenarios/calibration/gmem.ron"),
    ),
    (
        "inflight",
        include_str!("../../../scenarios/calibration/inflight.ron"),
    ),
    (
        "loaded",
        include_str!("../../../scenarios/calibration/loaded.ron"),
    ),
    (
        "sector",
        include_str!("../../../scenarios/calibration/sector.ron"),
    ),
    (
        "tma",
        include_str!("../../../scenarios/calibration/tma.ron"),
    ),
    (
        "smem_port",
        include_str!("../../../scenarios/calibration/smem_port.ron"),
    ),
    (
        "softmax",
        include_str!("../../../scenarios/calibration/softmax.ron"),
    ),
    (
        "attention",
        include_str!("../../../scenarios/calibration/attention.ron"),
    ),
    ("gemm_ws", include_str!("../../../scenarios/gemm_ws.ron")),
    (
        "mbar_cost",
        include_str!("../../../scenarios/calibration/mbar_cost.ron"),
    ),
    (
        "fa3_pingpong",
        include_str!("../../../scenarios/fa3_pingpong.ron"),
    ),
    (
        "wgmma_arb",
        include_str!("../../../scenarios/calibration/wgmma_arb.ron"),
    ),
    (
        "spill",
        include_str!("../../../scenarios/calibration/spill.ron"),
    ),
    (
        "gemm_pipelined",
        include_str!("../../../scenarios/gemm_pipelined.ron"),
    ),
];

/// Why a twin could not run.
#[derive(Debug, thiserror::Error)]
pub enum TwinError {
    #[error("no twin scenario `{0}`")]
    Unknown(&'static str),
    #[error(transparent)]
    Run(#[from] RunError),
}

/// One simulation: twin, parameter overrides (sorted), SM clock in kHz (an integer key).
pub(super) type RunKey = (&'static str, Vec<(String, i64)>, u64);

/// The run of `twin` with `sets` and the `extra` override, at `mhz`.
pub(super) fn run_key(
    twin: &'static str,
    sets: &[(String, i64)],
    extra: Option<(&str, i64)>,
    mhz: f64,
) -> RunKey {
    let mut m: BTreeMap<String, i64> = sets.iter().cloned().collect();
    if let Some((k, v)) = extra {
        m.insert(k.to_string(), v);
    }
    (twin, m.into_iter().collect(), (mhz * 1000.0).round() as u64)
}

/// What one run gives: its cycles, the bytes DRAM read, and how long the warps of the twin's
/// roles `mma` and `first` lived on average (0 without one): the time of a warpgroup that runs
/// beside others.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Sample {
    pub(super) cycles: u64,
    pub(super) dram_read: u64,
    pub(super) mma_cycles: u64,
    pub(super) first_cycles: u64,
    /// The longest-lived warp of role `first`.
    pub(super) first_longest: u64,
}

/// One run.
fn simulate(gpu: &str, key: &RunKey) -> Result<Sample, TwinError> {
    let (twin, sets, khz) = key;
    let text = TWINS
        .iter()
        .find(|(n, _)| n == twin)
        .map(|(_, t)| *t)
        .ok_or(TwinError::Unknown(twin))?;
    let opts = RunOptions {
        sets: sets.clone(),
        gpu: Some(gpu.to_string()),
        clock_mhz: Some(*khz as f64 / 1000.0),
        ..RunOptions::default()
    };
    let file = format!("scenarios/calibration/{twin}.ron");
    let (kernel, preset) = run::load_source(&file, text, &opts)?;
    let report = run::simulate(&file, &kernel, &preset, &opts)?;
    let lifetime = |role: &str| {
        report
            .roles
            .get(role)
            .map_or(0, |r| r.lifetime / u64::from(r.warps.max(1)))
    };
    Ok(Sample {
        cycles: report.cycles,
        dram_read: report.dram.read_bytes,
        mma_cycles: lifetime("mma"),
        first_cycles: lifetime("first"),
        first_longest: report.roles.get("first").map_or(0, |r| r.longest),
    })
}

/// Simulates every run, on as many threads as the machine offers (each run is independent and
/// deterministic, so the results do not depend on the threads).
pub(super) fn run_all(
    gpu: &str,
    keys: Vec<RunKey>,
) -> Result<BTreeMap<RunKey, Sample>, ValidateError> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(keys.len().max(1));
    let next = Mutex::new(0usize);
    let results: Mutex<BTreeMap<RunKey, Result<Sample, TwinError>>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = {
                    let mut n = next.lock().unwrap_or_else(|p| p.into_inner());
                    let i = *n;
                    *n += 1;
                    i
                };
                let Some(key) = keys.get(i) else { break };
                let r = simulate(gpu, key);
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key.clone(), r);
            });
        }
    });
    let mut out = BTreeMap::new();
    for (k, r) in results.into_inner().unwrap_or_else(|p| p.into_inner()) {
        let sample = r.map_err(|source| {
            let sets: Vec<String> = k.1.iter().map(|(a, b)| format!("{a}={b}")).collect();
            ValidateError::Twin {
                twin: k.0,
                sets: sets.join(" "),
                source: Box::new(source),
            }
        })?;
        out.insert(k, sample);
    }
    Ok(out)
}
