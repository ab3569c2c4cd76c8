//! `hopper_sim._native`: the simulator's library behind one Python function,
//! `call(command, request) -> (ok, text)`. The request is a JSON object of the command's
//! options; on success `text` is the command's JSON output, else the simulator's error message,
//! which `hopper_sim` (python/hopper_sim/__init__.py) raises as `SimError`. Commands: `init`,
//! `run`, `sweep`, `tune`, `analyze`, `presets`; they run with the GIL released.
//!
//! The module is declared with pyo3's FFI types rather than its `#[pymodule]` macros: see the
//! comment on pyo3 in python/Cargo.toml.

use clap::Parser;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde::Deserialize;
use sim::analytic::cli::AnalyzeArgs;
use sim::analytic::gemm::Gemm;
use sim::analytic::gpu::GpuSpec;
use sim::gpu::preset::Preset;
use sim::observe::trace::{Filter, Level, DEFAULT_TRACE_MAX_MB};
use sim::run::{self, RunOptions, TraceOptions};
use sim::sweep::cache::{self, Cache};
use sim::sweep::tune::{self, TuneOptions};
use sim::sweep::{self, Axis, Options, Shard};
use std::path::{Path, PathBuf};

static mut METHODS: [ffi::PyMethodDef; 2] = [
    ffi::PyMethodDef {
        ml_name: c"call".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer { PyCFunction: call },
        ml_flags: ffi::METH_VARARGS,
        ml_doc: c"call(command, request_json) -> (ok, text): one of the simulator's commands."
            .as_ptr(),
    },
    ffi::PyMethodDef::zeroed(),
];

static mut MODULE_DEF: ffi::PyModuleDef = ffi::PyModuleDef {
    m_base: ffi::PyModuleDef_HEAD_INIT,
    m_name: c"hopper_sim._native".as_ptr(),
    m_doc: c"The sim library's commands, for hopper_sim.".as_ptr(),
    m_size: 0,
    m_methods: (&raw mut METHODS).cast(),
    m_slots: std::ptr::null_mut(),
    m_traverse: None,
    m_clear: None,
    m_free: None,
};

/// The module's entry point, which Python's import calls.
///
/// # Safety
/// Called by the interpreter, with the GIL held, once per import.
#[allow(non_snake_case)]
#[no_mangle]
pub unsafe extern "C" fn PyInit__native() -> *mut ffi::PyObject {
    // SAFETY: MODULE_DEF is a static the interpreter keeps a pointer to; nothing else uses it.
    unsafe { ffi::PyModuleDef_Init(&raw mut MODULE_DEF) }
}

/// `call(command, request)`: parses the two strings, runs the command without the GIL and
/// returns `(True, output)` or `(False, message)`.
unsafe extern "C" fn call(
    _module: *mut ffi::PyObject,
    args: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    Python::attach(|py| {
        // SAFETY: `args` is the argument tuple the interpreter passes to a METH_VARARGS
        // function, borrowed for the call.
        let args = unsafe { Bound::from_borrowed_ptr(py, args) };
        let result = args
            .cast_into::<PyTuple>()
            .map_err(PyErr::from)
            .and_then(|t| t.extract::<(String, String)>())
            .and_then(|(command, request)| {
                let outcome = py.detach(|| guarded(&command, &request));
                let (ok, text) = match outcome {
                    Ok(text) => (true, text),
                    Err(message) => (false, message),
                };
                Ok((ok, text).into_pyobject(py)?.into_any())
            });
        match result {
            Ok(value) => value.into_ptr(),
            Err(e) => {
                e.restore(py);
                std::ptr::null_mut()
            }
        }
    })
}

/// [`dispatch`], a panic turned into an error message instead of unwinding into Python.
fn guarded(command: &str, request: &str) -> Result<String, String> {
    std::panic::catch_unwind(|| dispatch(command, request)).unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(format!("internal error: the simulator panicked: {what}"))
    })
}

fn dispatch(command: &str, request: &str) -> Result<String, String> {
    let parse = |r: &str| -> Result<serde_json::Value, String> {
        serde_json::from_str(r).map_err(|e| format!("bad request: {e}"))
    };
    let value = parse(request)?;
    macro_rules! req {
        ($t:ty) => {
            serde_json::from_value::<$t>(value).map_err(|e| format!("bad request: {e}"))?
        };
    }
    match command {
        "init" => init(req!(Init)),
        "run" => run(req!(RunRequest)),
        "sweep" => sweep(req!(SweepRequest)),
        "tune" => tune(req!(TuneRequest)),
        "analyze" => analyze(req!(AnalyzeRequest)),
        "presets" => presets(),
        other => Err(format!("unknown command `{other}`")),
    }
}

#[derive(Deserialize)]
struct Init {
    /// The module's own file, which keys the sweep cache (`cache::set_build_file`).
    build_file: String,
}

fn init(r: Init) -> Result<String, String> {
    cache::set_build_file(Path::new(&r.build_file));
    Ok(format!("\"{}\"", env!("CARGO_PKG_VERSION")))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunRequest {
    scenario: PathBuf,
    #[serde(default)]
    sets: Vec<(String, i64)>,
    #[serde(default)]
    gpu: Option<String>,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    clock_mhz: Option<f64>,
    /// Default: `sim run`'s.
    #[serde(default)]
    max_cycles: Option<u64>,
    #[serde(default)]
    livelock_cycles: Option<u64>,
    /// Seconds.
    #[serde(default)]
    max_wall: Option<f64>,
    #[serde(default = "yes")]
    check: bool,
    /// Write a trace there (`sim run --trace`); none by default.
    #[serde(default)]
    trace: Option<PathBuf>,
}

fn yes() -> bool {
    true
}

/// `sim run`'s and `sim sweep`'s `--max-cycles` default.
const MAX_CYCLES: u64 = 1_000_000_000;

/// `sim run --json` (`{"warnings": [...], "result": <the report>}`).
fn run(r: RunRequest) -> Result<String, String> {
    let opts = RunOptions {
        sets: r.sets,
        gpu: r.gpu,
        seed: r.seed,
        clock_mhz: r.clock_mhz,
        max_cycles: r.max_cycles.unwrap_or(MAX_CYCLES),
        livelock_cycles: r.livelock_cycles.unwrap_or(sim::engine::LIVELOCK_CYCLES),
        max_wall: r
            .max_wall
            .map(std::time::Duration::try_from_secs_f64)
            .transpose()
            .map_err(|e| format!("max_wall: {e}"))?,
        check: r.check,
        trace: r.trace.map(|path| TraceOptions {
            path: Some(path),
            filter: Filter {
                level: Level::Warps,
                sms: None,
                window: None,
            },
            max_bytes: DEFAULT_TRACE_MAX_MB << 20,
        }),
        progress: None,
        threads: 1,
    };
    let traced = opts.trace.is_some();
    let ran = run::run_scenario(&r.scenario, &opts).map_err(|e| e.to_string())?;
    let mut warnings = ran.warnings();
    if traced && matches!(ran, run::Ran::Sequence(_)) {
        warnings.push("a sequence of kernels writes no trace yet".to_string());
    }
    let warnings = serde_json::to_string(&warnings).expect("strings serialize");
    Ok(format!(
        "{{\"warnings\": {warnings}, \"result\": {}}}",
        ran.to_json()
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepRequest {
    scenario: PathBuf,
    /// `KEY=VALUES` as `--set` takes them.
    #[serde(default)]
    axes: Vec<String>,
    #[serde(default)]
    gpu: Option<String>,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    max_cycles: Option<u64>,
    #[serde(default = "yes")]
    check: bool,
    /// Default: one thread per core.
    #[serde(default)]
    jobs: Option<usize>,
    /// `I/N`.
    #[serde(default)]
    shard: Option<String>,
    /// The cache folder (`default` for `sim sweep`'s), or none.
    #[serde(default)]
    cache: Option<PathBuf>,
}

fn jobs(asked: Option<usize>) -> usize {
    asked.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `--cache DIR`: the folder (`default` for the CLI's), or none.
fn cache_at(dir: Option<PathBuf>) -> Option<Cache> {
    dir.map(|d| {
        if d == Path::new("default") {
            Cache::new(&cache::default_dir())
        } else {
            Cache::new(&d)
        }
    })
}

/// `sim sweep --json`.
fn sweep(r: SweepRequest) -> Result<String, String> {
    let axes = r
        .axes
        .iter()
        .map(|a| Axis::parse(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let shard = r.shard.as_deref().map(Shard::parse).transpose()?;
    let (shown, source) = sweep::read_scenario(&r.scenario).map_err(|e| e.to_string())?;
    let opts = Options {
        gpu: r.gpu,
        seed: r.seed,
        max_cycles: r.max_cycles.unwrap_or(MAX_CYCLES),
        check: r.check,
        jobs: jobs(r.jobs),
    };
    let cache = cache_at(r.cache);
    let s = sweep::run(&shown, &source, axes, shard, &opts, cache.as_ref(), &|| {})
        .map_err(|e| e.to_string())?;
    Ok(s.to_json())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TuneRequest {
    gpu: String,
    shapes: Vec<(u64, u64, u64)>,
    /// `triton`, a file of configs, or (with `configs_text`) where the configs came from.
    configs: String,
    /// `BMxBNxBK warps stages` lines given directly.
    #[serde(default)]
    configs_text: Option<String>,
    top_k: usize,
    repeats: usize,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    max_cycles: Option<u64>,
    #[serde(default)]
    jobs: Option<usize>,
    #[serde(default)]
    cache: Option<PathBuf>,
}

/// `sim tune gemm --json`, always an array (a value per shape).
fn tune(r: TuneRequest) -> Result<String, String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let gpu = GpuSpec::by_name(&r.gpu).map_err(|x| e(&x))?;
    let configs = match &r.configs_text {
        Some(text) => (
            sim::analytic::tune::parse_configs(text, &r.configs).map_err(|x| e(&x))?,
            r.configs.clone(),
        ),
        None => tune::configs(&gpu, &r.configs).map_err(|x| e(&x))?,
    };
    let shapes = r
        .shapes
        .iter()
        .map(|&(m, n, k)| Gemm::new(m, n, k))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|x| e(&x))?;
    let opts = TuneOptions {
        repeats: r.repeats,
        seed: r.seed,
        max_cycles: r.max_cycles.unwrap_or(MAX_CYCLES),
        jobs: jobs(r.jobs),
    };
    let cache = cache_at(r.cache);
    let tuned = tune::tune_shapes(
        &gpu,
        shapes,
        configs,
        r.top_k,
        &opts,
        cache.as_ref(),
        &|| {},
    )
    .map_err(|x| e(&x))?;
    let values: Vec<_> = tuned.iter().map(tune::Tuned::to_value).collect();
    Ok(serde_json::to_string(&values).expect("a JSON value serializes"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnalyzeRequest {
    /// `sim analyze`'s arguments after `analyze`: the model, then its options.
    args: Vec<String>,
}

/// `sim analyze`'s arguments.
#[derive(Parser)]
#[command(name = "sim analyze")]
struct Analyze {
    #[command(flatten)]
    args: AnalyzeArgs,
}

/// `sim analyze ... --json`.
fn analyze(r: AnalyzeRequest) -> Result<String, String> {
    let parsed = Analyze::try_parse_from(std::iter::once("analyze".to_string()).chain(r.args))
        .map_err(|e| e.to_string().trim_end().to_string())?;
    let value = sim::analytic::cli::run_json(&parsed.args).map_err(|e| e.to_string())?;
    Ok(serde_json::to_string(&value).expect("a JSON value serializes"))
}

/// `sim presets`: each built-in GPU preset's name and description.
fn presets() -> Result<String, String> {
    let list = Preset::names()
        .iter()
        .map(|name| {
            let p = Preset::builtin(name).map_err(|e| e.to_string())?;
            Ok(serde_json::json!({"name": name, "description": p.description}))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(serde_json::to_string(&list).expect("a JSON value serializes"))
}
