//! Traces, `sim stalls` and `sim report` over the binary.

mod common;

use common::{scratch, sim_ok};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// Runs a scenario with a trace at `level`; returns (run JSON, trace JSON).
fn traced(scenario: &str, level: &str, extra: &[&str]) -> (Value, Value, PathBuf) {
    let path = scratch(&format!("{scenario}-{level}.json"));
    let p = path.to_str().unwrap();
    let file = format!("scenarios/{scenario}.ron");
    let mut args = vec![
        "run",
        file.as_str(),
        "--json",
        "--trace",
        p,
        "--trace-level",
        level,
    ];
    args.extend_from_slice(extra);
    let out = sim_ok(&args);
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let trace: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    (run, trace, path)
}

/// Checks the trace's structure and that its slices account for every warp-cycle the run
/// reported: per warp, slices are ordered, do not overlap, tile the lifetime; per role, the
/// state totals equal `sim run`'s.
fn check_schema(run: &Value, trace: &Value) {
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let other = &trace["otherData"];
    assert_eq!(other["time_unit"], "1 ts unit = 1 SM cycle");
    assert_eq!(other["report"]["cycles"], run["cycles"]);
    for key in ["scenario", "seed", "version", "level"] {
        assert!(!other[key].is_null(), "otherData.{key}");
    }
    let mut slices: BTreeMap<u64, Vec<(u64, u64, &Value)>> = BTreeMap::new();
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        assert!(
            e["name"].is_string() && e["pid"].is_u64() && e["tid"].is_u64(),
            "{e}"
        );
        match ph {
            "X" => {
                let (ts, dur) = (e["ts"].as_u64().unwrap(), e["dur"].as_u64().unwrap());
                assert!(dur > 0, "{e}");
                slices
                    .entry(e["tid"].as_u64().unwrap())
                    .or_default()
                    .push((ts, dur, e));
            }
            "C" | "i" => assert!(e["ts"].is_u64() && e["args"].is_object(), "{e}"),
            "M" => assert!(e["args"].is_object()),
            other => panic!("unexpected phase {other}"),
        }
    }
    let warps = other["warps"].as_array().unwrap();
    let mut per_role: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for w in warps {
        let id = w["id"].as_u64().unwrap();
        let list = slices.get_mut(&id).expect("every warp has slices");
        list.sort_by_key(|s| s.0);
        for pair in list.windows(2) {
            assert_eq!(
                pair[0].0 + pair[0].1,
                pair[1].0,
                "warp {id}: slices must tile time"
            );
        }
        let total: u64 = list.iter().map(|s| s.1).sum();
        assert_eq!(total, w["lifetime"].as_u64().unwrap(), "warp {id}");
        let role = per_role
            .entry(w["role"].as_str().unwrap().to_string())
            .or_default();
        for (_, dur, e) in list.iter() {
            match e["args"]["states"].as_object() {
                Some(m) => {
                    let sum: u64 = m.values().map(|v| v.as_u64().unwrap()).sum();
                    assert_eq!(sum, *dur, "merged slice breakdown sums to its duration");
                    for (k, v) in m {
                        *role.entry(k.clone()).or_default() += v.as_u64().unwrap();
                    }
                }
                None => {
                    *role
                        .entry(e["name"].as_str().unwrap().to_string())
                        .or_default() += dur
                }
            }
        }
    }
    for (role, states) in &per_role {
        for (state, cycles) in states {
            assert_eq!(
                run["roles"][role]["states"][state].as_u64().unwrap(),
                *cycles,
                "{role}.{state}"
            );
        }
    }
}

#[test]
fn traces_account_for_every_warp_cycle() {
    for level in ["warps", "instructions"] {
        let (run, trace, _) = traced("fa3_pingpong", level, &[]);
        check_schema(&run, &trace);
        let names: Vec<&str> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "i")
            .filter_map(|e| e["name"].as_str())
            .collect();
        for kind in ["mbarrier phase", "TMA complete", "named barrier"] {
            assert!(names.contains(&kind), "{level}: no {kind} events");
        }
        assert!(run["trace"]["events"].as_u64().unwrap() > 100);
    }
}

#[test]
fn same_seed_writes_the_same_trace() {
    let (_, _, a) = traced("gemm_ws", "warps", &["--seed", "3"]);
    let bytes_a = std::fs::read(&a).unwrap();
    let (_, _, b) = traced("gemm_ws", "warps", &["--seed", "3"]);
    assert_eq!(bytes_a, std::fs::read(&b).unwrap());
}

#[test]
fn filters_restrict_the_trace() {
    let (_, trace, _) = traced(
        "gemm",
        "warps",
        &["--trace-sms", "0..2", "--trace-window", "1000..5000"],
    );
    for e in trace["traceEvents"].as_array().unwrap() {
        match e["ph"].as_str().unwrap() {
            "X" => {
                assert!(e["pid"].as_u64().unwrap() < 2, "{e}");
                let ts = e["ts"].as_u64().unwrap();
                assert!(ts >= 1000 && ts + e["dur"].as_u64().unwrap() <= 5000, "{e}");
            }
            "C" if e["pid"].as_u64().unwrap() < 100_000 => assert!(e["pid"].as_u64().unwrap() < 2),
            _ => {}
        }
    }
    assert_eq!(
        trace["otherData"]["filter"]["sms"],
        serde_json::json!([0, 2])
    );
}

#[test]
fn stalls_name_the_full_barrier_for_a_one_stage_ring() {
    let top = |stages: &str| {
        let (_, _, path) = traced("gemm_ws", "summary", &["--set", stages]);
        let out = sim_ok(&["stalls", path.to_str().unwrap()]);
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            !text.contains('\x1b'),
            "no colours when stdout is not a terminal"
        );
        let consumer = text.split("consumer").nth(1).unwrap().to_string();
        let line = consumer
            .lines()
            .find(|l| l.contains("top stall"))
            .unwrap()
            .to_string();
        (text, line)
    };
    let (_, one) = top("stages=1");
    assert!(
        one.contains("top stall: mbarrier_wait [long_scoreboard], waiting on full 100%"),
        "{one}"
    );
    let (text, four) = top("stages=4");
    assert!(four.contains("top stall: wgmma_wait [barrier]"), "{four}");
    assert!(text.contains("units busy:"));
    let (_, _, path) = traced("gemm_ws", "summary", &[]);
    let csv =
        String::from_utf8(sim_ok(&["stalls", path.to_str().unwrap(), "--csv"]).stdout).unwrap();
    assert!(csv.starts_with("row,state,ncu,warp_cycles,fraction\n"));
    assert!(csv.contains("consumer,wgmma_wait,barrier,"));
    let json = sim_ok(&["stalls", path.to_str().unwrap(), "--json", "--per-warp"]).stdout;
    let v: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 12);
}

#[test]
fn a_long_whole_gpu_run_at_summary_level_stays_small() {
    let (run, _, path) = traced("gemm", "summary", &["--set", "k=16384"]);
    assert!(run["cycles"].as_u64().unwrap() >= 1_000_000);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 50 << 20, "{size} bytes");
}

/// The report renders in a real browser without script errors (Debian's chromium, which the
/// README's test command installs).
#[test]
fn the_report_renders_in_a_browser() {
    let (_, _, trace) = traced("fa3_pingpong", "warps", &[]);
    let page = scratch("fa3.html");
    sim_ok(&[
        "report",
        trace.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "self-contained"
    );
    let profile = scratch("chromium-profile");
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
            &format!("--user-data-dir={}", profile.display()),
            "--dump-dom",
            &format!("file://{}", page.display()),
        ])
        .output()
        .expect("chromium is installed (the README's test command installs it)");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("data-rendered=\"ok\""),
        "the page's script ran:\n{}",
        &dom[..dom.len().min(500)]
    );
    assert!(!dom.contains("data-error=\""), "script error in the page");
    for id in ["timeline", "stalls", "counters"] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "no #{id}");
    }
    assert!(dom.matches("<rect").count() > 5, "stall bars drawn");
}
