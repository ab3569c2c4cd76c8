//! The twin scenarios (most in `scenarios/calibration/`, a few shipped scenarios), compiled in,
//! and their runs: each distinct (twin, parameters, clock) simulates once, on as many threads as
//! the machine offers.

use super::ValidateError;
use crate::run::{self, RunError, RunOptions};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// A twin: its name, its file (relative to the repository) and the file's text, compiled in,
/// and the preset it always runs on where it twins a measurement of the L2 or HBM of one chip
/// (whose memory system differs between presets); the others run on the validated preset.
macro_rules! twin {
    ($name:literal, $file:literal) => {
        (
            $name,
            $file,
            include_str!(concat!("../../../", $file)),
            None,
        )
    };
    ($name:literal, $file:literal, gpu: $gpu:literal) => {
        (
            $name,
            $file,
            include_str!(concat!("../../../", $file)),
            Some($gpu),
        )
    };
}

/// The twin scenarios: (name, file, RON text, pinned preset).
const TWINS: &[(&str, &str, &str, Option<&str>)] = &[
    twin!("pipes", "scenarios/calibration/pipes.ron"),
    twin!("bank_conflicts", "scenarios/bank_conflicts.ron"),
    twin!("coalescing", "scenarios/coalescing.ron"),
    twin!("divergence", "scenarios/divergence.ron"),
    twin!("smem", "scenarios/calibration/smem.ron"),
    twin!("wgmma", "scenarios/calibration/wgmma.ron"),
    twin!("barriers", "scenarios/calibration/barriers.ron"),
    twin!("gmem", "scenarios/calibration/gmem.ron"),
    twin!("l1", "scenarios/calibration/l1.ron"),
    twin!("inflight", "scenarios/calibration/inflight.ron"),
    twin!("loaded", "scenarios/calibration/loaded.ron"),
    twin!("sector", "scenarios/calibration/sector.ron"),
    twin!("tma", "scenarios/calibration/tma.ron"),
    twin!("smem_port", "scenarios/calibration/smem_port.ron"),
    twin!("softmax", "scenarios/calibration/softmax.ron"),
    twin!("attention", "scenarios/calibration/attention.ron"),
    twin!("gemm_ws", "scenarios/gemm_ws.ron"),
    twin!("mbar_cost", "scenarios/calibration/mbar_cost.ron"),
    twin!("fa3_pingpong", "scenarios/fa3_pingpong.ron"),
    twin!("wgmma_arb", "scenarios/calibration/wgmma_arb.ron"),
    twin!("spill", "scenarios/calibration/spill.ron"),
    twin!("gemm_pipelined", "scenarios/gemm_pipelined.ron"),
    twin!("cluster", "scenarios/calibration/cluster.ron"),
    twin!("sched", "scenarios/calibration/sched.ron"),
    // An H100's L2 (calibration/data/h100-l2_share.csv).
    twin!("l2_share", "scenarios/calibration/l2_share.ron", gpu: "h100-sxm"),
    // An H100's L2 and HBM (h100-cluster2.csv's mcast rows, h100-cluster_mcast_ncu.csv).
    twin!("cluster_h100", "scenarios/calibration/cluster.ron", gpu: "h100-sxm"),
    // CUTLASS's GEMMs on an H100 (h100-cutlass_gemm.csv).
    twin!("gemm_h100", "scenarios/gemm.ron", gpu: "h100-sxm"),
    twin!("gemm_pingpong_h100", "scenarios/gemm_pingpong.ron", gpu: "h100-sxm"),
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
    /// Bytes through the L2 slices (`lts__t_bytes`).
    pub(super) l2_slice: u64,
    pub(super) mma_cycles: u64,
    pub(super) first_cycles: u64,
    /// The longest-lived warp of role `first`.
    pub(super) first_longest: u64,
}

/// One run.
fn simulate(gpu: &str, key: &RunKey) -> Result<Sample, TwinError> {
    let (twin, sets, khz) = key;
    let (_, file, text, pinned) = TWINS
        .iter()
        .find(|(n, ..)| n == twin)
        .ok_or(TwinError::Unknown(twin))?;
    let opts = RunOptions {
        sets: sets.clone(),
        gpu: Some(pinned.unwrap_or(gpu).to_string()),
        clock_mhz: Some(*khz as f64 / 1000.0),
        ..RunOptions::default()
    };
    let (kernel, preset) = run::load_source(file, text, &opts)?;
    let report = run::simulate(file, &kernel, &preset, &opts)?;
    let lifetime = |role: &str| {
        report
            .roles
            .get(role)
            .map_or(0, |r| r.lifetime / u64::from(r.warps.max(1)))
    };
    Ok(Sample {
        cycles: report.cycles,
        dram_read: report.dram.read_bytes,
        l2_slice: report.l2.bytes - report.l2.shared_bytes,
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
