//! A sequence of kernels in one stream (a scenario's `kernel` and then each of `then`). Each
//! kernel runs on the memory system the ones before it left, on one clock: the lines they left
//! in L2 are hits, their dirty lines are written back when evicted. Kernel i + 1 starts the
//! preset's launch gap after kernel i ends, and an eager launch no sooner than the host's
//! launch interval after kernel i started (`launch` in the GPU preset, measured with
//! `calibration/launch.cu`).

use crate::analytic::bound;
use crate::engine::Carry;
use crate::gpu::preset::Preset;
use crate::observe::report::Report;
use crate::run::{self, RunError, RunOptions};
use isa::program::Kernel;
use isa::scenario::Launch;
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;

/// A sequence's run: each kernel's own report, and where it sat in the sequence's time.
#[derive(Clone, Debug, Serialize)]
pub struct SequenceReport {
    pub scenario: String,
    pub gpu: String,
    pub launch: &'static str,
    /// From the first kernel's start to the last one's end, at the reference clock.
    pub cycles: u64,
    /// The kernels' times at their clocks plus the gaps between them.
    pub time_us: f64,
    /// Tensor busy cycles summed over the SMs and kernels / (the GPU's SMs × `cycles`): the
    /// kernels' `tensor_load` over the whole sequence, idle SMs and launch gaps included.
    pub tensor_load: f64,
    pub kernels: Vec<SequenceKernel>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SequenceKernel {
    pub name: String,
    /// The cycle the kernel started at, and the cycles it waited after the one before ended.
    pub start: u64,
    pub gap: u64,
    pub report: Report,
}

/// The launch kind's name in reports.
fn launch_name(l: Launch) -> &'static str {
    match l {
        Launch::Eager => "eager",
        Launch::Graph => "graph",
    }
}

/// Simulates `kernels` one after another; the first error stops the sequence.
pub fn simulate(
    file: &str,
    kernels: &[Kernel],
    preset: &Preset,
    launch: Launch,
    opts: &RunOptions,
) -> Result<SequenceReport, RunError> {
    let cfg = run::config(preset, opts)?;
    let mhz = cfg.clock_mhz;
    let cycles = |ns: f64| (ns * mhz / 1000.0).round() as u64;
    let (mut carry, bases) = Carry::first(kernels, preset, &cfg);
    // Every kernel's counters and local memory go after all of the sequence's tensors.
    let end_of_tensors = carry.end_of_tensors;
    let mut done: Vec<SequenceKernel> = Vec::new();
    let (mut time_us, mut end) = (0.0, 0);
    for (i, (kernel, base)) in kernels.iter().zip(bases).enumerate() {
        let start = match done.last() {
            None => 0,
            Some(prev) => {
                let sms = prev.report.sms.max(kernel.grid.min(preset.sm.count));
                let gap = preset.launch.gap_ns(launch, sms, preset.sm.count);
                let host = match launch {
                    Launch::Eager => prev.start + cycles(preset.launch.eager_interval_ns as f64),
                    Launch::Graph => 0,
                };
                (end + cycles(gap)).max(host)
            }
        };
        carry.start = start;
        carry.tensor_base = base;
        // A kernel's failure names the kernel: the file is where the scenario is, the kernel
        // which of its kernels stopped.
        let place = format!(
            "{file}: kernel `{}` ({}/{})",
            kernel.kernel_name,
            i + 1,
            kernels.len()
        );
        let (outcome, _, (mem, kernel_end)) =
            run::simulate_carried(&place, kernel, preset, opts, None, carry)?;
        let report = outcome.map_err(|(e, _)| e)?;
        let generic = bound::bound(kernel, preset, report.reference_clock_mhz);
        let report = report.with_bound(kernel, generic);
        let gap = start - end;
        time_us += report.time_us + gap as f64 / mhz;
        end = kernel_end;
        carry = Carry {
            mem,
            start: end,
            tensor_base: Vec::new(),
            end_of_tensors,
        };
        done.push(SequenceKernel {
            name: kernel.kernel_name.clone(),
            start,
            gap,
            report,
        });
    }
    let busy: f64 = done
        .iter()
        .map(|k| k.report.tensor_load * k.report.cycles as f64)
        .sum();
    Ok(SequenceReport {
        scenario: kernels[0].name.clone(),
        gpu: preset.name.clone(),
        launch: launch_name(launch),
        cycles: end,
        time_us,
        tensor_load: busy / end.max(1) as f64,
        kernels: done,
    })
}

/// Loads and simulates a scenario file that holds a sequence.
pub fn run_file(path: &Path, opts: &RunOptions) -> Result<SequenceReport, RunError> {
    let (kernels, preset, launch) = run::load_sequence(path, opts)?;
    simulate(&path.display().to_string(), &kernels, &preset, launch, opts)
}

impl SequenceReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serializes")
    }

    /// Each kernel's summary under its name and place, then the sequence's totals.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let n = self.kernels.len();
        for (i, k) in self.kernels.iter().enumerate() {
            let _ = writeln!(
                out,
                "kernel {}/{n} `{}`: cycles {}..{} ({} after the one before)",
                i + 1,
                k.name,
                k.start,
                k.start + k.report.cycles,
                k.gap
            );
            out += &k.report.summary();
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "sequence    {n} kernels on {}, {} launches: {} cycles, {:.2} µs, gaps {} cycles, \
             GPU-wide tensor load {:.1}%",
            self.gpu,
            self.launch,
            self.cycles,
            self.time_us,
            self.kernels.iter().map(|k| k.gap).sum::<u64>(),
            100.0 * self.tensor_load
        );
        out
    }

    pub fn warnings(&self) -> Vec<String> {
        self.kernels
            .iter()
            .flat_map(|k| {
                k.report
                    .warnings()
                    .into_iter()
                    .map(|w| format!("`{}`: {w}", k.name))
            })
            .collect()
    }
}
