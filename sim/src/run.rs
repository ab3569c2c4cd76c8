//! From a scenario file to a report: read, validate against the preset, compile, simulate, and
//! bound the kernel's time from its resource demand (`analytic::bound`).

use crate::analytic::bound;
use crate::engine::{Carry, Config, Engine, Progress, SimError};
use crate::gpu::cta_scheduler::occupancy;
use crate::gpu::preset::{Preset, PresetError, MAX_CLOCK_MHZ};
use crate::memory::system::MemSys;
use crate::observe::report::{Report, TraceReport};
use crate::observe::trace::{self, Filter, Level, Tracer, Written};
use crate::observe::warp_state::State;
use isa::program::{Kernel, WARP_SIZE};
use isa::Diagnostic;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct RunOptions {
    /// `--set key=value` parameter overrides, in order.
    pub sets: Vec<(String, i64)>,
    /// Runs on this GPU preset instead of the scenario's.
    pub gpu: Option<String>,
    pub seed: u64,
    /// The SM clock for everything: HBM bytes per cycle in the simulation, and cycles to time
    /// in the report (in place of the preset's max and sustained clocks).
    pub clock_mhz: Option<f64>,
    pub max_cycles: u64,
    /// Cycles without progress before the run stops as a livelock (`Config::livelock_cycles`).
    pub livelock_cycles: u64,
    /// Wall-clock time the simulation may take.
    pub max_wall: Option<std::time::Duration>,
    /// Run the sanitizer's hazard checks (`--no-check` turns them off).
    pub check: bool,
    /// Write a trace (`sim run` does by default; the library does not).
    pub trace: Option<TraceOptions>,
    /// Called now and then with (cycle, CTAs retired, CTAs in the grid).
    pub progress: Option<Progress>,
    /// Threads that simulate the run (`Config::threads`; the answers do not depend on it).
    pub threads: usize,
}

/// SMs whose warps a whole-GPU run traces by default.
pub const DEFAULT_TRACE_SMS: u32 = 8;

/// Where a trace goes and what it holds.
#[derive(Clone, Debug)]
pub struct TraceOptions {
    /// The file (gzip-compressed when it ends in `.gz`); `None` = [`default_trace_path`].
    pub path: Option<PathBuf>,
    pub filter: Filter,
    /// The trace stops taking events past this many bytes ([`Tracer::create`]).
    pub max_bytes: u64,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            sets: Vec::new(),
            gpu: None,
            seed: 0,
            clock_mhz: None,
            max_cycles: Config::default().max_cycles,
            livelock_cycles: Config::default().livelock_cycles,
            max_wall: None,
            check: true,
            trace: None,
            progress: None,
            threads: 1,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("{0}")]
    Scenario(Diagnostic),
    #[error("{0}: {1}")]
    Preset(String, PresetError),
    #[error("{file}: {error}{}", trace.as_ref().map(|t| format!("\n  = {t}")).unwrap_or_default())]
    Sim {
        file: String,
        error: Box<SimError>,
        /// Where the trace up to the failure is, or why it could not be written.
        trace: Option<String>,
    },
    #[error("{0}: --trace names the scenario file itself, which the trace would replace")]
    TraceIsInput(String),
    #[error("{file}: impossible configuration: no CTA fits on an SM of {gpu}: {why}")]
    NoFit {
        file: String,
        gpu: String,
        why: String,
    },
    #[error(
        "{0}: the scenario is a sequence of {1} kernels (`then` or `launches`): `sim run` runs \
         it; this command takes one kernel"
    )]
    Sequence(String, usize),
    #[error("--clock-mhz must be a positive number of MHz, not {0}")]
    Clock(f64),
    #[error("--clock-mhz {0} is beyond the fastest clock modeled, {MAX_CLOCK_MHZ} MHz")]
    ClockTooHigh(f64),
}

/// Reads and compiles a scenario file against its GPU preset.
pub fn load(path: &Path, opts: &RunOptions) -> Result<(Kernel, Preset), RunError> {
    read(path, |file, source| load_source(file, source, opts))
}

/// As [`load`], for every kernel of the scenario ([`load_sequence_source`]).
pub fn load_sequence(
    path: &Path,
    opts: &RunOptions,
) -> Result<(Vec<Kernel>, Preset, isa::scenario::Launch), RunError> {
    read(path, |file, source| {
        load_sequence_source(file, source, opts)
    })
}

/// Reads a scenario file and hands its name and text to `load`.
fn read<T>(
    path: &Path,
    load: impl FnOnce(&str, &str) -> Result<T, RunError>,
) -> Result<T, RunError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| RunError::Io(file.clone(), e))?;
    let source = isa::decode(&file, &bytes).map_err(RunError::Scenario)?;
    load(&file, source)
}

/// As [`load`], from text already read; `file` names it in diagnostics. A sequence of kernels
/// is an error here ([`load_sequence_source`] takes it).
pub fn load_source(
    file: &str,
    source: &str,
    opts: &RunOptions,
) -> Result<(Kernel, Preset), RunError> {
    let (mut kernels, preset, _) = load_sequence_source(file, source, opts)?;
    if kernels.len() > 1 {
        return Err(RunError::Sequence(file.to_string(), kernels.len()));
    }
    Ok((kernels.remove(0), preset))
}

/// Reads, compiles and checks every kernel of a scenario, in launch order (one, unless it has
/// `then`), and how they are launched.
pub fn load_sequence_source(
    file: &str,
    source: &str,
    opts: &RunOptions,
) -> Result<(Vec<Kernel>, Preset, isa::scenario::Launch), RunError> {
    let scenario = isa::parse(file, source).map_err(RunError::Scenario)?;
    let gpu = opts.gpu.as_deref().unwrap_or(&scenario.gpu);
    let preset = Preset::with_overrides(gpu, &scenario.gpu_overrides)
        .map_err(|e| RunError::Preset(file.to_string(), e))?;
    let kernels = isa::compile_sequence(&scenario, &opts.sets, &preset.limits(), file, source)
        .map_err(RunError::Scenario)?;
    for kernel in &kernels {
        if let Some(why) = no_fit(kernel, &preset) {
            return Err(RunError::NoFit {
                file: file.to_string(),
                gpu: preset.name.clone(),
                why,
            });
        }
        tracing::debug!(
            scenario = %kernel.name,
            kernel = %kernel.kernel_name,
            ctas = kernel.grid,
            warps_per_cta = kernel.warps_per_cta(),
            smem_bytes = kernel.smem_bytes,
            "compiled"
        );
    }
    Ok((kernels, preset, scenario.launch))
}

/// Why not even one CTA of `kernel` fits on an SM of `preset`, if so. Validation checks the
/// CTA against the per-CTA limits; overrides can still set a per-SM limit below them.
fn no_fit(kernel: &Kernel, preset: &Preset) -> Option<String> {
    let occ = occupancy(kernel, preset);
    if occ.ctas > 0 {
        return None;
    }
    let reasons: Vec<String> = occ
        .limits
        .iter()
        .filter(|(_, n)| *n == 0)
        .map(|(limit, _)| short_of(limit, kernel, preset))
        .collect();
    Some(reasons.join("; "))
}

/// What the SM's `limit` (an [`occupancy`] limit's name) offers below one CTA's need.
fn short_of(limit: &str, kernel: &Kernel, preset: &Preset) -> String {
    let warps = kernel.warps_per_cta();
    let (sm, regs) = (&preset.sm, &preset.regs);
    match limit {
        "threads" => format!(
            "sm.max_threads = {} is below its {} threads",
            sm.max_threads,
            warps * WARP_SIZE
        ),
        "warps" => format!(
            "sm.warps_per_partition = {} is below its {} warps per partition \
             ({warps} warps over {} partitions)",
            sm.warps_per_partition,
            warps.div_ceil(sm.partitions),
            sm.partitions
        ),
        "regs" => format!(
            "regs.per_sm = {} is below the {} registers its {warps} warps take at launch",
            regs.per_sm,
            (kernel.regs_per_thread * WARP_SIZE).div_ceil(regs.alloc_unit)
                * regs.alloc_unit
                * warps
        ),
        "smem" => format!(
            "smem.per_sm = {} is below its {} bytes of shared memory",
            preset.smem.per_sm, kernel.smem_bytes
        ),
        other => format!("the `{other}` limit allows none"),
    }
}

/// Simulates a compiled kernel and builds its report, without the generic bound ([`run_file`]
/// adds it; `sim bench` times the engine alone) and without a trace.
pub fn simulate(
    file: &str,
    kernel: &Kernel,
    preset: &Preset,
    opts: &RunOptions,
) -> Result<Report, RunError> {
    let (result, _) = simulate_traced(file, kernel, preset, opts, None)?;
    result.map_err(|(e, _)| e)
}

pub(crate) fn config(preset: &Preset, opts: &RunOptions) -> Result<Config, RunError> {
    let clock = match opts.clock_mhz {
        Some(c) if !(c > 0.0 && c.is_finite()) => return Err(RunError::Clock(c)),
        Some(c) if c > MAX_CLOCK_MHZ => return Err(RunError::ClockTooHigh(c)),
        c => c,
    };
    Ok(Config {
        seed: opts.seed,
        // The clock is known only after the run (it follows the tensor load), so HBM's bytes
        // per cycle are those at the max clock, where the runs that HBM limits are.
        clock_mhz: clock.unwrap_or(preset.clock.max_mhz),
        max_cycles: opts.max_cycles,
        check: opts.check,
        livelock_cycles: opts.livelock_cycles,
        max_wall: opts.max_wall,
        threads: opts.threads,
    })
}

/// A run's report, or its error with the report of the run up to the failure.
pub(crate) type Outcome = Result<Report, (RunError, Report)>;

/// A trace writer, the warps' totals for its summary and how many warps they leave out.
pub(crate) type Traced = (Tracer, Vec<Value>, u64);

/// The memory system a kernel of a sequence leaves, and the cycle it ended at.
pub(crate) type Handed = (MemSys, u64);

/// Simulates with an optional trace writer, which comes back (also after a failed run) for
/// [`finish_trace`]; the outer error is a setup error, the inner one the run's.
fn simulate_traced(
    file: &str,
    kernel: &Kernel,
    preset: &Preset,
    opts: &RunOptions,
    tracer: Option<Tracer>,
) -> Result<(Outcome, Option<Traced>), RunError> {
    let cfg = config(preset, opts)?;
    let (carry, _) = Carry::first(std::slice::from_ref(kernel), preset, &cfg);
    let (outcome, traced, _) = simulate_carried(file, kernel, preset, opts, tracer, carry)?;
    Ok((outcome, traced))
}

/// As [`simulate_traced`], for a kernel of a sequence: it starts on what `carry` holds, and the
/// memory system comes back with the cycle the kernel ended at, for the next.
pub(crate) fn simulate_carried(
    file: &str,
    kernel: &Kernel,
    preset: &Preset,
    opts: &RunOptions,
    tracer: Option<Tracer>,
    carry: Carry,
) -> Result<(Outcome, Option<Traced>, Handed), RunError> {
    let cfg = config(preset, opts)?;
    let reference_mhz = cfg.clock_mhz;
    let start = carry.start;
    let mut engine = Engine::continuing(kernel, preset, cfg, carry);
    if let Some(t) = tracer {
        engine = engine.with_tracer(t);
    }
    if let Some(p) = &opts.progress {
        engine = engine.with_progress(p.clone());
    }
    let (result, stats, tracer, mem) = engine.run_carried();
    let end = start + stats.cycles;
    let mut warps = Vec::new();
    // The report covers the run up to where it stopped; a failed run's goes to its trace only.
    let report = {
        tracing::debug!(
            cycles = stats.cycles,
            instructions = stats.instructions,
            events = stats.events,
            "simulated"
        );
        // Only a trace holds the warps' own totals.
        let listed = if tracer.is_some() {
            &stats.warps[..]
        } else {
            &[]
        };
        for (id, w) in listed.iter().enumerate() {
            let states: serde_json::Map<String, Value> = State::ALL
                .iter()
                .map(|s| (s.name().to_string(), json!(w.cycles[*s as usize])))
                .collect();
            let mbarriers: serde_json::Map<String, Value> = kernel
                .mbarriers
                .iter()
                .zip(&w.mbarrier_waits)
                .filter(|(_, &c)| c > 0)
                .map(|(m, &c)| (m.name.clone(), json!(c)))
                .collect();
            let wgmma: serde_json::Map<String, Value> = w
                .wgmma_waits()
                .into_iter()
                .filter(|&(_, c)| c > 0)
                .map(|(place, c)| (place.to_string(), json!(c)))
                .collect();
            warps.push(json!({
                "id": id, "pid": trace::sm_pid(w.sm), "tid": trace::warp_tid(id as u32), "name": w.name, "role": w.role, "cta": w.cta, "sm": w.sm,
                "lifetime": w.lifetime, "states": states, "mbarrier_waits": mbarriers,
                "wgmma_waits": wgmma,
            }));
        }
        Report::new(
            kernel,
            preset,
            &stats,
            opts.seed,
            opts.clock_mhz,
            reference_mhz,
        )
    };
    let outcome = match result {
        Ok(()) => Ok(report),
        Err(error) => Err((
            RunError::Sim {
                file: file.to_string(),
                error: Box::new(error),
                trace: None,
            },
            report,
        )),
    };
    Ok((
        outcome,
        tracer.map(|t| (t, warps, stats.warps_omitted)),
        (mem, end),
    ))
}

/// Ends a trace with its `otherData`: the run's report (or the error that stopped it) and each
/// warp's state totals. Returns what the trace holds.
fn finish_trace(
    file: &str,
    tracer: Tracer,
    (warps, omitted): (Vec<Value>, u64),
    kernel: &Kernel,
    report: &Report,
    error: Option<&RunError>,
    opts: &RunOptions,
) -> std::io::Result<Written> {
    let level = tracer.level();
    let filter = tracer.filter().clone();
    let mut other = json!({
        "time_unit": "ts and dur in µs, 1 ns = 1 SM cycle (ts = cycles / 1000)",
        "version": env!("CARGO_PKG_VERSION"),
        "scenario": kernel.name,
        "file": file,
        "params": kernel.params,
        "sets": opts.sets.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
        "preset": report.gpu,
        "seed": opts.seed,
        "level": level,
        "filter": {
            "sms": filter.sms.map(|r| [r.start, r.end]),
            "window": filter.window.map(|r| [r.start, r.end]),
        },
        "cycles": report.cycles,
        "role_order": kernel.roles.iter().map(|r| r.name.clone()).collect::<Vec<_>>(),
        "report": report,
        "error": error.map(|e| e.to_string()),
        "warps": warps,
    });
    if omitted > 0 {
        // Past `MAX_WARP_RESULTS` the run keeps role totals only (`report.roles`).
        other["warps_omitted"] = json!(omitted);
    }
    tracer.finish(other)
}

/// `traces/<scenario>.trace.json`, with the options that change the run in the name
/// (`traces/gemm_ws-stages=1-seed=3.trace.json`: `--set` pairs in order, `gpu=` and `seed=`
/// when given), so that runs of one scenario with different parameters keep their own traces.
pub fn default_trace_path(kernel: &Kernel, opts: &RunOptions) -> PathBuf {
    let mut name = kernel.name.clone();
    let mut tag = |s: String| {
        name.push('-');
        name.push_str(&s);
    };
    for (k, v) in &opts.sets {
        tag(format!("{k}={v}"));
    }
    if let Some(gpu) = &opts.gpu {
        tag(format!("gpu={gpu}"));
    }
    if opts.seed != 0 {
        tag(format!("seed={}", opts.seed));
    }
    PathBuf::from(format!("traces/{}.trace.json", file_name(&name)))
}

/// Loads, validates and simulates a scenario file, and bounds it (`analytic::bound`) at the
/// clock the simulation converted HBM bandwidth at. A kernel the walk cannot bound still gets its report, with the reason.
pub fn run_file(path: &Path, opts: &RunOptions) -> Result<Report, RunError> {
    let file = path.display().to_string();
    let (kernel, preset) = load(path, opts)?;
    let trace_path = opts.trace.as_ref().map(|t| {
        t.path
            .clone()
            .unwrap_or_else(|| default_trace_path(&kernel, opts))
    });
    if trace_path.as_deref().is_some_and(|t| same_file(t, path)) {
        return Err(RunError::TraceIsInput(file));
    }
    // Whole-GPU runs trace the first few SMs' warps unless told otherwise: every SM's would
    // make a file too large to open (ui.perfetto.dev holds a few hundred thousand events).
    let spread = kernel.grid.min(preset.sm.count);
    let mut filter = opts.trace.as_ref().map(|t| t.filter.clone());
    let mut limited = None;
    if let Some(f) = filter.as_mut() {
        if f.sms.is_none() && f.level != Level::Summary && spread > DEFAULT_TRACE_SMS {
            f.sms = Some(0..DEFAULT_TRACE_SMS);
            limited = Some(format!(
                "warps of SMs 0..{DEFAULT_TRACE_SMS} of {spread} (--trace-sms 0..{spread} for all)"
            ));
        }
    }
    let tracer = match (&filter, &trace_path) {
        (Some(f), Some(p)) => Some(
            Tracer::create(
                p,
                f.clone(),
                opts.trace.as_ref().map_or(u64::MAX, |t| t.max_bytes),
            )
            .map_err(|e| RunError::Io(p.display().to_string(), e))?,
        ),
        _ => None,
    };
    let (result, traced) = simulate_traced(&file, &kernel, &preset, opts, tracer)?;
    let result = result.map(|report| {
        let generic = bound::bound(&kernel, &preset, report.reference_clock_mhz);
        if let Err(e) = &generic {
            tracing::debug!(error = %e, "no generic bound");
        }
        report.with_bound(&kernel, generic)
    });
    let (Some((tracer, warps, omitted)), Some(p)) = (traced, trace_path) else {
        return result.map_err(|(e, _)| e);
    };
    let shown = p.display().to_string();
    let (report, error) = match &result {
        Ok(r) => (r, None),
        Err((e, r)) => (r, Some(e)),
    };
    let events = finish_trace(
        &file,
        tracer,
        (warps, omitted),
        &kernel,
        report,
        error,
        opts,
    );
    match (result, events) {
        (Ok(mut report), Ok(written)) => {
            report.trace = Some(TraceReport {
                path: shown,
                events: written.events,
                limited,
                truncated_at: written.truncated_at,
                max_bytes: opts.trace.as_ref().map_or(0, |t| t.max_bytes),
            });
            Ok(report)
        }
        (Ok(_), Err(e)) => Err(RunError::Io(shown, e)),
        // The run's own diagnosis comes first; a trace that could not be written is a note.
        (Err((RunError::Sim { file, error, .. }, _)), events) => Err(RunError::Sim {
            file,
            error,
            trace: Some(match events {
                Ok(_) => format!("the trace up to that point is in {shown}"),
                Err(e) => format!("the trace could not be written to {shown}: {e}"),
            }),
        }),
        (Err((e, _)), _) => Err(e),
    }
}

/// What `sim run` simulates from a scenario file: one kernel, or a sequence of kernels
/// (`then`) run one after another.
#[derive(Clone, Debug)]
pub enum Ran {
    Kernel(Box<Report>),
    /// A sequence writes no trace yet: its run ignores [`RunOptions::trace`].
    Sequence(crate::sequence::SequenceReport),
}

impl Ran {
    /// `sim run --json`'s object (without the final newline).
    pub fn to_json(&self) -> String {
        match self {
            Ran::Kernel(r) => r.to_json(),
            Ran::Sequence(s) => s.to_json(),
        }
    }

    /// `sim run --csv`'s table.
    pub fn to_csv(&self) -> Result<String, csv::Error> {
        match self {
            Ran::Kernel(r) => r.to_csv(),
            Ran::Sequence(s) => s.to_csv(),
        }
    }

    /// The readable summary.
    pub fn summary(&self) -> String {
        match self {
            Ran::Kernel(r) => r.summary(),
            Ran::Sequence(s) => s.summary(),
        }
    }

    /// What `sim run` warns of (register spills), one line each.
    pub fn warnings(&self) -> Vec<String> {
        match self {
            Ran::Kernel(r) => r.warnings(),
            Ran::Sequence(s) => s.warnings(),
        }
    }

    /// The simulated cycles: the kernel's, or the sequence's from its first start to its end.
    pub fn cycles(&self) -> u64 {
        match self {
            Ran::Kernel(r) => r.cycles,
            Ran::Sequence(s) => s.cycles,
        }
    }
}

/// Simulates a scenario file as `sim run` does: [`run_file`] for one kernel, or
/// [`crate::sequence::run_file`] (without a trace) for a sequence.
pub fn run_scenario(path: &Path, opts: &RunOptions) -> Result<Ran, RunError> {
    match run_file(path, opts) {
        Err(RunError::Sequence(..)) => {
            let opts = RunOptions {
                trace: None,
                ..opts.clone()
            };
            crate::sequence::run_file(path, &opts).map(Ran::Sequence)
        }
        r => r.map(|r| Ran::Kernel(Box::new(r))),
    }
}

/// A scenario name as a file name: characters other than ASCII letters, digits, `-`, `_`, `=` and
/// `.` (not first: no hidden file) become `_`, so a name such as `../x` cannot leave `traces/`.
fn file_name(name: &str) -> String {
    name.chars()
        .enumerate()
        .map(|(i, c)| {
            if c.is_ascii_alphanumeric() || "-_=".contains(c) || (c == '.' && i > 0) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Whether `a` names the existing file `b` (through links or another spelling of the path).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
