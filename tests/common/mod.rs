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

/// The DOM of the page at `page` after its script ran in a real browser (Debian's chromium,
/// which the README's test command installs), in a 1280×800 window; checks the page is
/// self-contained and its script ran without error (it marks `data-rendered="ok"` or
/// `data-error` on its body). `driver` runs after the page's script: it drives the page with
/// synthetic events and leaves what it saw in `out`, returned as JSON.
pub fn driven_page(page: &Path, name: &str, driver: &str) -> (String, serde_json::Value) {
    let html = std::fs::read_to_string(page).unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "self-contained"
    );
    let driven = scratch(&format!("{name}-driven.html"));
    let at = html.rfind("</body>").expect("the page ends its body");
    let script = format!(
        "<script>(function () {{ const out = {{}};\n{driver}\nconst pre = document.createElement('pre'); pre.id = 'driven'; pre.textContent = JSON.stringify(out); document.body.appendChild(pre); }})();</script>\n"
    );
    std::fs::write(&driven, format!("{}{script}{}", &html[..at], &html[at..])).unwrap();
    let profile = scratch(&format!("chromium-profile-{name}"));
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,800",
            &format!("--user-data-dir={}", profile.display()),
            "--dump-dom",
            &format!("file://{}", driven.display()),
        ])
        .output()
        .expect("chromium is installed (the README's test command installs it)");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        dom.contains("data-rendered=\"ok\""),
        "the page's script ran:\n{}",
        &dom[..dom.len().min(500)]
    );
    assert!(!dom.contains("data-error=\""), "script error in the page");
    let text = dom
        .split("<pre id=\"driven\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .expect("the driver ran to its end")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let seen = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (dom, seen)
}
