//! One row of the validation: where its measured value comes from, which twin runs it, and how
//! the simulated value follows from the twin's cycles.

use super::data::{Data, DataError};
use super::twins::{run_key, RunKey, Sample};

/// Where a row's measured value comes from.
#[derive(Clone, Debug)]
pub(super) enum Measured {
    /// The `value` of row (test, param).
    Value(&'static str, String),
    /// (value(hi) − value(lo)) / units: a per-step cost from two totals.
    Slope(&'static str, String, String, f64),
    /// value × factor: a whole-kernel rate corrected to its busiest SM's steady state.
    Scaled(&'static str, String, f64),
    /// value(test, param) − value(base, base_param): what a condition adds.
    Over(&'static str, &'static str, &'static str, &'static str),
    /// value(test, to) − value(test, from): the time between two clock stamps of one run.
    Between(&'static str, String, String),
    /// The `value` of row (test, param), measured at the SM clock that row (clock, param)
    /// holds in MHz: whole kernels whose clock NVML read for each configuration.
    AtClock(&'static str, String, &'static str),
}

/// How the simulated value comes from the twin's cycles. `key` runs at `lo` and at `hi`; the
/// difference of their cycles leaves out the start and the drain, which the CUDA kernels also
/// leave out (or amortize).
#[derive(Clone, Debug)]
pub(super) enum Metric {
    /// Δcycles / `per` − `minus`.
    Slope {
        key: &'static str,
        lo: i64,
        hi: i64,
        per: f64,
        minus: f64,
    },
    /// (Δcycles − Δcycles of the same twin with `base` sets) / `per`: what a condition adds to
    /// each step.
    SlopeOver {
        key: &'static str,
        lo: i64,
        hi: i64,
        per: f64,
        base: Vec<(String, i64)>,
    },
    /// `amount` / Δcycles.
    SlopeRate {
        key: &'static str,
        lo: i64,
        hi: i64,
        amount: f64,
    },
    /// cycles / `per` − `minus` of one run.
    Single { per: f64, minus: f64 },
    /// `amount` / cycles of one run.
    SingleRate { amount: f64 },
    /// Bytes DRAM read in one run over `asked`, the bytes the kernel's threads asked for.
    DramPerAsked { asked: f64 },
    /// Bytes the L2 slices moved in one run (reads that rode on another SM's read-out count
    /// once: Nsight Compute's `lts__t_bytes`) over `asked`.
    L2SlicePerAsked { asked: f64 },
    /// Δ(lifetime of the role `mma`'s warps) / `per` (that role's slope while others outlast
    /// it), less the same slope of the twin with `base` sets.
    MmaSlopeOver {
        key: &'static str,
        lo: i64,
        hi: i64,
        per: f64,
        base: Vec<(String, i64)>,
    },
    /// Δcycles / Δcycles of the same twin with `base` sets, rounded: a multiple of a base case.
    Degree {
        key: &'static str,
        lo: i64,
        hi: i64,
        base: Vec<(String, i64)>,
    },
    /// How long the warps of one of the twin's roles lived, on average, in one run: when that
    /// role's work ended, counted from the launch.
    Lifetime(TwinRole),
    /// How long the longest-lived warp of role `first` lived, over `per` (one warp's work in a
    /// role of idle others: a chase's cycles per hop).
    LongestPer { per: f64 },
}

/// The roles whose lifetimes a [`Sample`] keeps.
#[derive(Clone, Copy, Debug)]
pub(super) enum TwinRole {
    /// `mma`: the warpgroup measured beside others.
    Mma,
    /// `first`: the other warpgroup of a twin with two.
    First,
}

/// One row: its group, name and unit, the measured row it reads (of CSV `program`), and the
/// twin with its parameter overrides whose cycles the metric turns into the simulated value.
#[derive(Clone, Debug)]
pub(super) struct Spec {
    pub(super) group: &'static str,
    pub(super) name: String,
    pub(super) unit: &'static str,
    pub(super) program: &'static str,
    pub(super) measured: Measured,
    pub(super) twin: &'static str,
    pub(super) sets: Vec<(String, i64)>,
    pub(super) metric: Metric,
}

impl Metric {
    /// Cycles per iteration: the slope of `iters` between `lo` and `2·lo` iterations, less
    /// `minus` (the issue slot of an instruction that waits on the measured one).
    pub(super) fn per_iteration(lo: i64, minus: f64) -> Metric {
        Metric::Slope {
            key: "iters",
            lo,
            hi: 2 * lo,
            per: lo as f64,
            minus,
        }
    }

    /// What a condition adds to each step of `key`: the slope between 1000 and 2000 steps,
    /// less the same slope of the twin with `base` sets.
    pub(super) fn per_step_over(key: &'static str, base: Vec<(String, i64)>) -> Metric {
        Metric::SlopeOver {
            key,
            lo: 1000,
            hi: 2000,
            per: 1000.0,
            base,
        }
    }

    /// The simulated value from the samples of [`Spec::runs`], in that order.
    fn value(&self, s: &[Sample]) -> f64 {
        let cycles = |i: usize| s[i].cycles as f64;
        let delta = |hi: usize, lo: usize| cycles(hi) - cycles(lo);
        match self {
            Metric::Slope { per, minus, .. } => delta(1, 0) / per - minus,
            Metric::SlopeRate { amount, .. } => amount / delta(1, 0).max(1.0),
            Metric::Single { per, minus } => cycles(0) / per - minus,
            Metric::SingleRate { amount } => amount / cycles(0).max(1.0),
            Metric::Degree { .. } => (delta(1, 0) / delta(3, 2).max(1.0)).round(),
            Metric::SlopeOver { per, .. } => (delta(1, 0) - delta(3, 2)) / per,
            Metric::DramPerAsked { asked } => s[0].dram_read as f64 / asked,
            Metric::L2SlicePerAsked { asked } => s[0].l2_slice as f64 / asked,
            Metric::MmaSlopeOver { per, .. } => {
                let mma = |i: usize| s[i].mma_cycles as f64;
                (mma(1) - mma(0) - (mma(3) - mma(2))) / per
            }
            Metric::Lifetime(TwinRole::Mma) => s[0].mma_cycles as f64,
            Metric::Lifetime(TwinRole::First) => s[0].first_cycles as f64,
            Metric::LongestPer { per } => s[0].first_longest as f64 / per,
        }
    }
}

impl Spec {
    /// The measured value and the SM clock it was measured at, in MHz.
    pub(super) fn measured(&self, data: &Data) -> Result<(f64, f64), DataError> {
        match &self.measured {
            Measured::Value(test, param) => data.get(self.program, test, param),
            Measured::Slope(test, lo, hi, units) => {
                let (a, mhz) = data.get(self.program, test, lo)?;
                let (b, _) = data.get(self.program, test, hi)?;
                Ok(((b - a) / units, mhz))
            }
            Measured::Scaled(test, param, factor) => {
                let (a, mhz) = data.get(self.program, test, param)?;
                Ok((a * factor, mhz))
            }
            Measured::Over(test, param, base, base_param) => {
                let (a, mhz) = data.get(self.program, test, param)?;
                let (b, _) = data.get(self.program, base, base_param)?;
                Ok((a - b, mhz))
            }
            Measured::Between(test, from, to) => {
                let (a, mhz) = data.get(self.program, test, to)?;
                let (b, _) = data.get(self.program, test, from)?;
                Ok((a - b, mhz))
            }
            Measured::AtClock(test, param, clock) => Ok((
                data.value(self.program, test, param)?,
                data.value(self.program, clock, param)?,
            )),
        }
    }

    /// The runs the metric needs, at the measured clock `mhz`.
    pub(super) fn runs(&self, mhz: f64) -> Vec<RunKey> {
        let k = |extra| run_key(self.twin, &self.sets, extra, mhz);
        match &self.metric {
            Metric::Slope { key, lo, hi, .. } | Metric::SlopeRate { key, lo, hi, .. } => {
                vec![k(Some((key, *lo))), k(Some((key, *hi)))]
            }
            Metric::Single { .. }
            | Metric::SingleRate { .. }
            | Metric::DramPerAsked { .. }
            | Metric::L2SlicePerAsked { .. }
            | Metric::Lifetime(_)
            | Metric::LongestPer { .. } => vec![k(None)],
            Metric::Degree { key, lo, hi, base }
            | Metric::SlopeOver {
                key, lo, hi, base, ..
            }
            | Metric::MmaSlopeOver {
                key, lo, hi, base, ..
            } => vec![
                k(Some((key, *lo))),
                k(Some((key, *hi))),
                run_key(self.twin, base, Some((key, *lo)), mhz),
                run_key(self.twin, base, Some((key, *hi)), mhz),
            ],
        }
    }

    /// The simulated value, from each run's sample.
    pub(super) fn simulated(&self, mhz: f64, sample: impl Fn(&RunKey) -> Sample) -> f64 {
        let s: Vec<Sample> = self.runs(mhz).iter().map(sample).collect();
        self.metric.value(&s)
    }
}
