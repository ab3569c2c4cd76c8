//! Helpers shared by the end-to-end tests: the repository's paths, its scenarios and fixtures,
//! run options, the `sim` binary, scratch files.
//!
//! Both test targets compile it: `all` (every module uses a subset) and `docs`, which needs only
//! `root`; what `docs` leaves unused would warn there, hence the `allow` below. It covers only
//! this module, not the tests.
#![allow(dead_code)]

use sim::run::RunOptions;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root (the tests' package is `sim/`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `scenarios/NAME.ron`.
pub fn scenario(name: &str) -> PathBuf {
    root().join("scenarios").join(format!("{name}.ron"))
}

/// `tests/fixtures/NAME.ron`.
pub fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures").join(format!("{name}.ron"))
}

/// Every `scenarios/*.ron` of one kernel, sorted (`sim::run::load` and `run_file` take them).
pub fn scenario_files() -> Vec<PathBuf> {
    shipped(false)
}

/// Every `scenarios/*.ron` that is a sequence of kernels (`then`), sorted.
pub fn sequence_files() -> Vec<PathBuf> {
    shipped(true)
}

fn shipped(sequences: bool) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .filter(|p| {
            let source = std::fs::read_to_string(p).unwrap();
            let s = isa::parse(&p.display().to_string(), &source).unwrap();
            s.then.is_empty() != sequences
        })
        .collect();
    files.sort();
    files
}

/// `--set` options that make `fa3_pingpong` one CTA (one head, one query block of 128 rows,
/// 4224 keys): the pipeline picture.
pub const FA3_ONE_CTA: &[&str] = &[
    "--set",
    "heads=1",
    "--set",
    "seqlen_q=128",
    "--set",
    "seqlen=4224",
];

/// Run options with these `--set KEY=VALUE` pairs and the defaults otherwise.
pub fn sets(pairs: &[(&str, i64)]) -> RunOptions {
    RunOptions {
        sets: pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ..RunOptions::default()
    }
}

/// `sim ARGS`, run from the repository root, not yet started.
pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sim"));
    c.args(args).current_dir(root());
    c
}

/// Runs `sim ARGS` from the repository root.
pub fn sim(args: &[&str]) -> Output {
    command(args).output().expect("the sim binary runs")
}

/// Runs `sim ARGS`, which must succeed.
pub fn sim_ok(args: &[&str]) -> Output {
    let out = sim(args);
    assert!(
        out.status.success(),
        "sim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The standard output of `sim ARGS`, which must succeed.
pub fn stdout_of(args: &[&str]) -> String {
    String::from_utf8(sim_ok(args).stdout).unwrap()
}

/// This test process's scratch folder, `$TMPDIR/sim-TARGET-PID` (created).
fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "sim-{}-{}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A path named `name` in the scratch folder.
pub fn scratch(name: &str) -> PathBuf {
    scratch_dir().join(name)
}

/// Writes `text` to `name` in the scratch folder and returns its path.
pub fn temp_scenario(name: &str, text: &str) -> PathBuf {
    let path = scratch(name);
    std::fs::write(&path, text).unwrap();
    path
}
