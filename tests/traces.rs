//! Traces, `sim stalls` and `sim report` over the binary.

use crate::common;

use common::{scratch, sim_ok, FA3_ONE_CTA};
use flate2::read::GzDecoder;
use serde_json::Value;
use sim::analytic::fmt::grouped;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

/// Runs a scenario with a trace at `level`; returns (run JSON, trace JSON, its path).
fn traced(scenario: &str, level: &str, extra: &[&str]) -> (Value, Value, PathBuf) {
    traced_to(scenario, level, extra, &format!("{scenario}-{level}.json"))
}

/// As [`traced`], to the scratch file `name` (gzip-compressed when it ends in `.gz`).
fn traced_to(scenario: &str, level: &str, extra: &[&str], name: &str) -> (Value, Value, PathBuf) {
    let path = scratch(name);
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
    let mut bytes = Vec::new();
    let raw = std::fs::read(&path).unwrap();
    if name.ends_with(".gz") {
        GzDecoder::new(&raw[..]).read_to_end(&mut bytes).unwrap();
    } else {
        bytes = raw;
    }
    let trace: Value = serde_json::from_slice(&bytes).unwrap();
    (run, trace, path)
}

/// An event's `ts` (or `dur`) in cycles: the trace writes one cycle as one nanosecond, so the
/// microseconds in the file times 1000 are a whole number of cycles.
fn cycles(e: &Value, key: &str) -> u64 {
    let us = e[key].as_f64().unwrap_or_else(|| panic!("{key} of {e}"));
    let c = (us * 1000.0).round();
    assert!(
        (us * 1000.0 - c).abs() < 1e-6,
        "{key} {us} is not cycles / 1000: {e}"
    );
    c as u64
}

/// A slice's start and duration in cycles, and the slice.
type Slice<'a> = (u64, u64, &'a Value);

/// Checks the trace's structure and that its slices account for every warp-cycle the run
/// reported: per warp, slices are ordered, do not overlap, tile the lifetime; per role, the
/// state totals equal `sim run`'s. Flows pair up and bind to slices; async slices pair up.
fn check_schema(run: &Value, trace: &Value) {
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let other = &trace["otherData"];
    assert_eq!(
        other["time_unit"],
        "ts and dur in µs, 1 ns = 1 SM cycle (ts = cycles / 1000)"
    );
    assert_eq!(other["report"]["cycles"], run["cycles"]);
    assert_eq!(other["params"], run["params"]);
    assert_eq!(other["preset"], run["gpu"]);
    assert_eq!(other["seed"], run["seed"]);
    assert_eq!(other["version"], env!("CARGO_PKG_VERSION"));
    for key in ["scenario", "file", "sets", "level"] {
        assert!(!other[key].is_null(), "otherData.{key}");
    }
    // Slices per (pid, tid), flow and async ends per id.
    let mut slices: BTreeMap<(u64, u64), Vec<Slice>> = BTreeMap::new();
    let mut flows: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    let mut spans: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        assert!(e["name"].is_string(), "{e}");
        assert!(e["pid"].as_u64().unwrap() >= 1, "pid from 1: {e}");
        match ph {
            // Counters and process metadata are process-wide: no thread, not even tid 0.
            "C" => assert!(e["tid"].is_null() && e["args"].is_object(), "{e}"),
            "M" => assert!(e["args"].is_object()),
            _ => assert!(e["tid"].as_u64().unwrap() >= 1, "tid from 1: {e}"),
        }
        let at = cycles(e, "ts");
        match ph {
            "X" => {
                let dur = cycles(e, "dur");
                assert!(dur > 0, "{e}");
                assert!(e["cat"].is_string(), "slices have a category: {e}");
                let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
                slices.entry(key).or_default().push((at, dur, e));
            }
            "s" | "f" => flows.entry(e["id"].as_u64().unwrap()).or_default().push(e),
            "b" | "e" => spans.entry(e["id"].as_u64().unwrap()).or_default().push(e),
            "C" | "M" => {}
            other => panic!("unexpected phase {other}"),
        }
    }
    for list in slices.values_mut() {
        list.sort_by_key(|s| s.0);
    }
    let within = |e: &Value| {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let at = cycles(e, "ts");
        slices
            .get(&key)
            .is_some_and(|l| l.iter().any(|&(ts, dur, _)| ts <= at && at < ts + dur))
    };
    for (id, ends) in &flows {
        // A start can come after its end in the file: viewers sort by time.
        let mut ends = ends.clone();
        ends.sort_by_key(|e| e["ph"] == "f");
        let phases: Vec<&str> = ends.iter().map(|e| e["ph"].as_str().unwrap()).collect();
        assert_eq!(phases, ["s", "f"], "flow {id}: one start and one end");
        let (s, f) = (ends[0], ends[1]);
        assert_eq!(
            (&s["cat"], &s["name"]),
            (&f["cat"], &f["name"]),
            "flow {id}"
        );
        assert!(cycles(s, "ts") <= cycles(f, "ts"), "flow {id} goes forward");
        assert_eq!(
            f["bp"], "e",
            "flow {id} binds to the slice enclosing its end"
        );
        for e in &ends {
            assert!(within(e), "flow {id}: no slice on its thread encloses {e}");
        }
    }
    for (id, ends) in &spans {
        let phases: Vec<&str> = ends.iter().map(|e| e["ph"].as_str().unwrap()).collect();
        assert_eq!(phases, ["b", "e"], "async slice {id}");
        assert!(cycles(ends[0], "ts") <= cycles(ends[1], "ts"));
        assert_eq!(ends[0]["cat"], ends[1]["cat"]);
    }
    let warps = other["warps"].as_array().unwrap();
    let mut per_role: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for w in warps {
        let id = w["id"].as_u64().unwrap();
        assert_eq!(w["tid"].as_u64().unwrap(), id + 1);
        assert_eq!(w["pid"].as_u64().unwrap(), w["sm"].as_u64().unwrap() + 1);
        let key = (w["pid"].as_u64().unwrap(), w["tid"].as_u64().unwrap());
        let list = slices.get(&key).expect("every warp has slices");
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
                    assert_eq!(e["cat"], e["args"]["state"], "{e}");
                    *role
                        .entry(e["cat"].as_str().unwrap().to_string())
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

/// The (ph, cat) pairs of a trace's events, with the names of the event threads' slices.
fn kinds(trace: &Value) -> (Vec<(String, String)>, Vec<String>) {
    let mut kinds = Vec::new();
    let mut names = Vec::new();
    for e in trace["traceEvents"].as_array().unwrap() {
        let (ph, cat) = (e["ph"].as_str().unwrap(), e["cat"].as_str().unwrap_or(""));
        kinds.push((ph.to_string(), cat.to_string()));
        if ph == "X" && e["tid"].as_u64().unwrap() >= 1 << 30 {
            names.push(e["name"].as_str().unwrap().to_string());
        }
    }
    (kinds, names)
}

#[test]
fn traces_account_for_every_warp_cycle() {
    for level in ["warps", "instructions"] {
        let (run, trace, _) = traced("fa3_pingpong", level, FA3_ONE_CTA);
        check_schema(&run, &trace);
        let (kinds, names) = kinds(&trace);
        for kind in ["mbarrier phase", "TMA complete", "named barrier"] {
            assert!(names.iter().any(|n| n == kind), "{level}: no {kind} slices");
        }
        for (ph, cat) in [
            ("s", "tma"),
            ("s", "mbarrier"),
            ("s", "wgmma"),
            ("b", "tma"),
            ("b", "wgmma"),
        ] {
            let has = kinds.iter().any(|(p, c)| p == ph && c == cat);
            assert!(has, "{level}: no {ph} events of {cat}");
        }
        assert!(run["trace"]["events"].as_u64().unwrap() > 100);
    }
}

#[test]
fn slices_are_named_by_instruction_and_time_reads_in_cycles() {
    let (run, trace, _) = traced("gemm_ws", "instructions", &[]);
    let events = trace["traceEvents"].as_array().unwrap();
    let warp_slices: Vec<&Value> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"].as_u64().unwrap() < 1 << 30)
        .collect();
    let named = |name: &str, cat: &str| {
        warp_slices
            .iter()
            .any(|e| e["name"] == name && e["cat"] == cat)
    };
    assert!(named("mbarrier.wait on full", "mbarrier_wait"));
    assert!(named("wgmma.wait_group", "wgmma_wait"));
    assert!(named("tma_load", "selected"));
    // The last warp slice ends by the run's last cycle, written as cycles / 1000 µs.
    let end = warp_slices
        .iter()
        .map(|e| cycles(e, "ts") + cycles(e, "dur"))
        .max()
        .unwrap();
    let total = run["cycles"].as_u64().unwrap();
    assert!(end <= total && end > total / 2, "{end} of {total}");
    let text = std::fs::read_to_string(scratch("gemm_ws-instructions.json")).unwrap();
    let last = format!("\"ts\":{}.", end / 1000);
    assert!(text.contains(&last), "no ts in µs near {last}");
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
        let pid = e["pid"].as_u64().unwrap();
        match e["ph"].as_str().unwrap() {
            "X" => {
                assert!((1..=2).contains(&pid), "SMs 0 and 1 are pids 1 and 2: {e}");
                let ts = cycles(e, "ts");
                assert!(ts >= 1000 && ts + cycles(e, "dur") <= 5000, "{e}");
            }
            "s" | "f" | "b" | "e" => {
                assert!((1..=2).contains(&pid), "{e}");
                assert!((1000..5000).contains(&cycles(e, "ts")), "{e}");
            }
            "C" if pid < 100_000 => assert!((1..=2).contains(&pid)),
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

/// Writes the report of `trace` and returns the page's DOM after its script and `driver` ran
/// in a real browser ([`common::driven_page`]).
fn rendered_report(trace: &std::path::Path, name: &str, driver: &str) -> (String, Value) {
    let page = scratch(&format!("{name}.html"));
    sim_ok(&[
        "report",
        trace.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    common::driven_page(&page, name, driver)
}

/// The drivers' helpers: the timeline's range, the pixel of a cycle and of a row, synthetic
/// mouse events, a drag and a hover (the tooltip's text, null when hidden).
const DRIVER: &str = r#"
const c = document.getElementById('timeline'), tip = document.getElementById('tip');
const range = () => [Number(c.dataset.from), Number(c.dataset.to)];
const left = () => c.getBoundingClientRect().left + Number(c.dataset.plotLeft);
const width = Number(c.dataset.plotWidth);
// Whole pixels, as a pointer gives them.
const xOf = (t) => { const [a, b] = range(); return Math.round(left() + (t - a) / (b - a) * width); };
const cycleAt = (x) => { const [a, b] = range(); return a + (x - left()) / width * (b - a); };
const yOf = (row) => c.getBoundingClientRect().top + Number(c.dataset.axis) + (row + 0.5) * Number(c.dataset.rowHeight);
const mouse = (target, type, x, y) => target.dispatchEvent(new MouseEvent(type, { clientX: x, clientY: y, bubbles: true, cancelable: true }));
const drag = (x0, y0, x1) => { mouse(c, 'mousedown', x0, y0); mouse(window, 'mousemove', x1, y0); mouse(window, 'mouseup', x1, y0); };
const hover = (x, y) => { mouse(c, 'mousemove', x, y); return tip.hidden ? null : tip.textContent; };
"#;

/// The first instruction slice on `warp`'s thread (its thread name) that lasts at least `min`
/// cycles and starts in the middle third of the run: (start, duration, the slice).
fn slice_of<'a>(trace: &'a Value, warp: &str, min: u64) -> (u64, u64, &'a Value) {
    let events = trace["traceEvents"].as_array().unwrap();
    let tid = &events
        .iter()
        .find(|e| e["name"] == "thread_name" && e["args"]["name"] == warp)
        .unwrap_or_else(|| panic!("no thread {warp}"))["tid"];
    let end = trace["otherData"]["cycles"].as_u64().unwrap();
    events
        .iter()
        .filter(|e| e["ph"] == "X" && &e["tid"] == tid && e["args"]["instruction"].is_string())
        .map(|e| (cycles(e, "ts"), cycles(e, "dur"), e))
        .find(|&(ts, dur, _)| dur >= min && ts > end / 3 && ts < 2 * end / 3)
        .unwrap_or_else(|| panic!("no slice of {warp} of {min} cycles"))
}

/// The tooltip the timeline shows for an instruction slice of `warp`.
fn slice_tip(warp: &str, (ts, dur, e): (u64, u64, &Value)) -> String {
    format!(
        "{warp}\n{}\n{}\nstate {} [{}]\nstart {} · {} cycles",
        e["name"].as_str().unwrap(),
        e["args"]["instruction"].as_str().unwrap(),
        e["cat"].as_str().unwrap(),
        e["args"]["ncu"].as_str().unwrap(),
        grouped(ts),
        grouped(dur)
    )
}

/// FA3's report in a browser: the views are there; the timeline zooms (wheel, buttons, a range
/// dragged along its axis), pans (a drag on the rows) and names the slice under the pointer;
/// the units' small charts follow its range and average to the run's busy fractions; the
/// mainloop view shows the middle of the 23 iterations of each consumer warpgroup, the second
/// about half an iteration behind the first (ping-pong), with a GEMM's numbers on hover.
#[test]
fn the_report_zooms_pans_and_hovers_in_a_browser() {
    let (run, trace, path) = traced("fa3_pingpong", "warps", FA3_ONE_CTA);
    let target = slice_of(&trace, "consumer0.w0 (CTA 0)", 64);
    let mid = target.0 + target.1 / 2;
    // producer0.w0 to w3, then consumer0.w0.
    let row = 4;
    let driver = format!(
        r#"{DRIVER}
out.initial = range();
const x = xOf({mid}), y = yOf({row});
for (let i = 0; i < 10; i++) c.dispatchEvent(new WheelEvent('wheel', {{ deltaY: -100, clientX: x, clientY: y, bubbles: true, cancelable: true }}));
const anchor = cycleAt(x);
out.wheel = range();
out.anchor = cycleAt(x) - anchor;
out.tip = hover(xOf({mid}), y);
out.outside = hover(left() - 50, y);
out.before = range();
drag(xOf({mid}), y, xOf({mid}) + 99);
out.pan = range();
document.getElementById('zoom-reset').click();
out.reset = range();
drag(left() + 99, c.getBoundingClientRect().top + 5, left() + 198);
out.select = range();
document.getElementById('zoom-out').click();
out.zoomOut = range();
const units = () => [...document.querySelectorAll('svg.unit')].map((s) => ({{ unit: s.dataset.unit, from: Number(s.dataset.from), to: Number(s.dataset.to), mean: Number(s.dataset.mean) }}));
out.units = units();
document.getElementById('zoom-in').click();
out.zoomIn = range();
document.getElementById('pan-right').click();
out.panRight = range();
c.dispatchEvent(new MouseEvent('dblclick', {{ bubbles: true }}));
out.unitsWhole = units();
out.wgs = [...document.querySelectorAll('#iteration g.wg')].map((g) => ({{ wg: g.dataset.wg, index: Number(g.dataset.index), count: Number(g.dataset.count), from: Number(g.dataset.from), to: Number(g.dataset.to), gemms: [...g.querySelectorAll('rect.gemm')].map((r) => Number(r.dataset.gemm)) }}));
const gemm = document.querySelector('#iteration rect.gemm[data-gemm="1"]'), box = gemm.getBoundingClientRect();
mouse(gemm, 'mousemove', box.left + box.width / 2, box.top + 4);
out.gemmTip = tip.textContent;
const chart = document.getElementById('iteration-chart');
out.chart = [Number(chart.dataset.from), Number(chart.dataset.to)];
document.getElementById('iteration-show').click();
out.shown = range();
"#
    );
    let (dom, seen) = rendered_report(&path, "fa3", &driver);
    for id in [
        "diagnosis",
        "sol",
        "roofline",
        "timeline",
        "iteration",
        "stalls",
        "counters",
    ] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "no #{id}");
    }
    // Ping-pong's two consumer warpgroups get their own bars under their role's.
    for row in ["consumer", "consumer0", "consumer1", "producer"] {
        assert!(
            dom.contains(&format!("data-row=\"{row}\"")),
            "no stall bar for {row}"
        );
    }
    assert!(dom.contains("The trace holds SM 0, the one SM the run used."));
    let r = |k: &str| -> (f64, f64) {
        let v = &seen[k];
        (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
    };
    let end = run["cycles"].as_f64().unwrap();
    assert_eq!(r("initial"), (0.0, end));
    // Ten wheel steps of 100 zoom in by e^-0.2 each, about the pointer's cycle.
    let (a, b) = r("wheel");
    let span = end * (-2.0f64).exp();
    assert!((b - a - span).abs() <= 2.0, "span {} against {span}", b - a);
    let anchor = seen["anchor"].as_f64().unwrap();
    assert!(
        anchor.abs() < 1.0,
        "the pointer's cycle moved {anchor} cycles"
    );
    assert_eq!(
        seen["tip"].as_str(),
        Some(slice_tip("consumer0.w0 (CTA 0)", target).as_str())
    );
    assert!(seen["outside"].is_null(), "no tooltip off the rows");
    // Dragging the rows 99 px of 990 to the right shows a tenth of the range earlier.
    let shift = r("before").0 - r("pan").0;
    assert!((shift - span / 10.0).abs() <= 2.0, "panned {shift}");
    assert_eq!(r("reset"), (0.0, end));
    // Pixels 99 to 198 along the axis: the run's second tenth; then out and in around its
    // middle, and a quarter of the range to the right.
    let near =
        |(a, b): (f64, f64), (x, y): (f64, f64)| (a - x).abs() <= 1.0 && (b - y).abs() <= 1.0;
    assert!(
        near(r("select"), (end / 10.0, end / 5.0)),
        "{:?}",
        r("select")
    );
    assert!(
        near(r("zoomOut"), (end / 20.0, end / 4.0)),
        "{:?}",
        r("zoomOut")
    );
    assert!(
        near(r("zoomIn"), (end / 10.0, end / 5.0)),
        "{:?}",
        r("zoomIn")
    );
    let quarter = end / 40.0;
    assert!(near(
        r("panRight"),
        (end / 10.0 + quarter, end / 5.0 + quarter)
    ));
    // The unit charts share the timeline's range; over the whole run they average to the
    // report's busy fractions.
    let units = seen["units"].as_array().unwrap();
    assert_eq!(units.len(), 9, "7 SM units, L2 and DRAM");
    for u in units {
        assert_eq!(u["from"].as_f64().unwrap(), r("zoomOut").0, "{u}");
        assert_eq!(u["to"].as_f64().unwrap(), r("zoomOut").1, "{u}");
    }
    for u in seen["unitsWhole"].as_array().unwrap() {
        let name = u["unit"].as_str().unwrap();
        if let Some(busy) = run["units"][name]["busy"].as_f64() {
            let mean = u["mean"].as_f64().unwrap();
            assert!((mean - busy).abs() < 0.002, "{name}: {mean} against {busy}");
        }
    }
    // One iteration of each consumer warpgroup: FA3's loop runs cdiv(4224, 176) - 1 = 23
    // times, the middle one shown; two GEMMs each (S = Q Kᵀ, then O += P V); the second
    // warpgroup about half an iteration behind the first.
    let wgs = seen["wgs"].as_array().unwrap();
    let names: Vec<&str> = wgs.iter().map(|w| w["wg"].as_str().unwrap()).collect();
    assert_eq!(names, ["consumer0 (CTA 0)", "consumer1 (CTA 0)"]);
    for w in wgs {
        assert_eq!(
            (w["index"].as_u64(), w["count"].as_u64()),
            (Some(12), Some(23))
        );
        let gemms = w["gemms"].as_array().unwrap();
        assert!(
            gemms.contains(&1.into()) && gemms.contains(&2.into()),
            "{w}"
        );
    }
    let at = |w: usize, k: &str| wgs[w][k].as_f64().unwrap();
    let lag = (at(1, "from") - at(0, "from")) / (at(0, "to") - at(0, "from"));
    assert!(
        (0.3..0.7).contains(&lag),
        "consumer1 starts {lag} of an iteration later"
    );
    let gemm = seen["gemmTip"].as_str().unwrap();
    assert!(
        gemm.starts_with("consumer0 (CTA 0): GEMM 1 of iteration (wgmma group ")
            && gemm.contains("\ncommitted at cycle ")
            && gemm.contains(": role `consumer`: program[3] loop(i).body[10] if.then[10] loop(jj).body[7] wgmma.commit_group\nruns "),
        "{gemm}"
    );
    assert_eq!(r("chart"), (at(0, "from"), at(1, "to")));
    assert_eq!(r("shown"), r("chart"));
}

/// A whole-GPU report in a browser: the page says which SMs the trace holds and which of them
/// ran the last wave, chooses the first of those, and its chooser switches the timeline, the
/// mainloop view and the unit charts to another SM, with that SM's warps, CTAs and counters.
#[test]
fn the_reports_sm_chooser_switches_the_views_in_a_browser() {
    // 4 waves of 132 CTAs, the last 116: SMs 112–115 run one of it, 116–119 do not (the order
    // in which the third wave's CTAs finish).
    let (run, trace, path) = traced(
        "gemm",
        "warps",
        &["--set", "k=256", "--trace-sms", "112..120"],
    );
    let other = &trace["otherData"];
    let int = |v: &Value| v.as_u64().unwrap();
    let slots = int(&run["sms_total"]) * int(&run["ctas_per_sm"]);
    let last_wave = (int(&run["waves"]) - 1) * slots;
    let mut ctas: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for w in other["warps"].as_array().unwrap() {
        let (sm, cta) = (int(&w["sm"]), int(&w["cta"]));
        if (112..120).contains(&sm) && !ctas.get(&sm).is_some_and(|c| c.contains(&cta)) {
            ctas.entry(sm).or_default().push(cta);
        }
    }
    let ran_last = |sm: u64| ctas[&sm].iter().any(|&c| c >= last_wave);
    assert_eq!(
        (112..120).filter(|&sm| ran_last(sm)).collect::<Vec<_>>(),
        [112, 113, 114, 115]
    );
    let cta = *ctas[&117].last().unwrap();
    let warp = format!("consumer0.w0 (CTA {cta})");
    let target = slice_of(&trace, &warp, 1000);
    // The mean of SM 117's tensor samples over the run, each until the next.
    let samples: Vec<(u64, f64)> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "C" && e["pid"] == 118)
        .map(|e| (cycles(e, "ts"), e["args"]["tensor"].as_f64().unwrap()))
        .collect();
    let end = int(&run["cycles"]);
    let tensor: f64 = samples
        .iter()
        .enumerate()
        .map(|(i, &(t, v))| v * (samples.get(i + 1).map_or(end.max(t), |s| s.0) - t) as f64)
        .sum::<f64>()
        / end as f64;
    let driver = format!(
        r#"{DRIVER}
const sm = document.getElementById('sm');
out.options = [...sm.options].map((o) => [Number(o.dataset.sm), o.dataset.lastWave === 'true', o.textContent]);
out.first = [sm.options[sm.selectedIndex].dataset.sm, c.dataset.sm, c.dataset.rows];
sm.value = [...sm.options].findIndex((o) => o.dataset.sm === '117');
sm.dispatchEvent(new Event('change'));
out.chosen = [c.dataset.sm, c.dataset.rows];
out.tip = hover(xOf({mid}), yOf(4));
out.wg = document.querySelector('#iteration g.wg').dataset.wg;
const tensor = document.querySelector('svg.unit[data-unit="tensor"]');
out.tensor = [Number(tensor.dataset.mean), tensor.textContent];
"#,
        mid = target.0 + target.1 / 2
    );
    let (dom, seen) = rendered_report(&path, "gemm-sms", &driver);
    assert!(
        dom.contains("The trace holds SMs 112–119 of the 132 the run used"),
        "names the SMs"
    );
    assert!(dom.contains(&format!(
        "The last wave starts at CTA {last_wave}: SMs 112–115 ran a CTA of it."
    )));
    let options = seen["options"].as_array().unwrap();
    assert_eq!(options.len(), 8);
    for (o, sm) in options.iter().zip(112..) {
        let list: Vec<String> = ctas[&sm].iter().map(|c| c.to_string()).collect();
        let text = format!(
            "SM {sm} · CTAs {}{}",
            list.join(", "),
            if ran_last(sm) { " · last wave" } else { "" }
        );
        assert_eq!(o, &serde_json::json!([sm, ran_last(sm), text]));
    }
    // 12 warps a CTA, one CTA at a time: 12 rows.
    assert_eq!(seen["first"], serde_json::json!(["112", "112", "12"]));
    assert_eq!(seen["chosen"], serde_json::json!(["117", "12"]));
    assert_eq!(
        seen["tip"].as_str(),
        Some(slice_tip(&warp, target).as_str())
    );
    // Every CTA of SM 117 commits as many groups: its first.
    assert_eq!(seen["wg"], format!("consumer0 (CTA {})", ctas[&117][0]));
    let mean = seen["tensor"][0].as_f64().unwrap();
    assert!((mean - tensor).abs() < 1e-3, "{mean} against {tensor}");
    assert!(seen["tensor"][1]
        .as_str()
        .unwrap()
        .starts_with("tensor SM 117"));
}

/// The first thing the report shows for gemm_ws is its diagnosis, with the run's own numbers:
/// the tensor pipe binding at its busy fraction, the ratio to the analytic bound, each role's
/// top stall and where it waits, every unit's speed of light, and the roofline's points at
/// their intensities; the verdict and both charts fit a 1280×800 window.
#[test]
fn the_report_opens_on_the_diagnosis_in_a_browser() {
    let (run, _, trace) = traced("gemm_ws", "warps", &[]);
    let (dom, _) = rendered_report(&trace, "gemm_ws", "");
    let has = |needle: &str| assert!(dom.contains(needle), "no `{needle}` in the page");
    let at = |id: &str| dom.find(&format!("id=\"{id}\"")).unwrap_or(usize::MAX);
    assert!(
        at("diagnosis") < at("timeline"),
        "the diagnosis comes first"
    );
    let bottom: u64 = dom
        .split("data-panels-bottom=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|s| s.parse().ok())
        .expect("the page measured its panels");
    assert!(bottom <= 800, "the charts end {bottom} px down the page");

    let num = |v: &Value| v.as_f64().unwrap();
    let busy = |unit: &str| num(&run["units"][unit]["busy"]);
    let tensor = busy("tensor");
    assert!(
        run["units"]
            .as_object()
            .unwrap()
            .values()
            .all(|u| num(&u["busy"]) <= tensor),
        "the scenario's busiest unit is its tensor pipe"
    );
    has(&format!(
        "id=\"diagnosis\" data-binding=\"tensor\" data-busy=\"{tensor:.4}\" data-ratio=\"{:.3}\" data-latency-bound=\"false\"",
        num(&run["analytic"]["ratio"])
    ));
    let share = |role: &str, state: &str| {
        let r = &run["roles"][role];
        100.0 * num(&r["states"][state]) / num(&r["lifetime"])
    };
    has(&format!(
        "<p class=\"verdict\">tensor pipe {:.1}% busy — binding; {:.3}× the analytic bound ({} cycles, tensor); producer warps wait {:.1}% in mbarrier_wait on empty",
        100.0 * tensor,
        num(&run["analytic"]["ratio"]),
        grouped(run["analytic"]["cycles"].as_u64().unwrap()),
        share("producer", "mbarrier_wait")
    ));
    has(&format!(
        "consumer warps wait {:.1}% in wgmma_wait (HGMMA issue",
        share("consumer", "wgmma_wait")
    ));
    has(&format!(
        "{} cycles simulated: {:.3}× the scenario's analytic bound",
        grouped(run["cycles"].as_u64().unwrap()),
        num(&run["analytic"]["ratio"])
    ));
    has("Tail efficiency 100.0%");
    for (unit, u) in run["units"].as_object().unwrap() {
        has(&format!(
            "data-unit=\"{unit}\" data-busy=\"{:.4}\"",
            num(&u["busy"])
        ));
    }

    // One SM: its tensor peak at the run's clock, and the points at FLOP / bytes moved.
    let flops = num(&run["flops"]);
    let clock = num(&run["clock_mhz"]);
    let peak = num(&run["peak"]["tensor_flops_per_cycle"]) * clock / 1e6;
    let achieved = flops / num(&run["cycles"]) * clock / 1e6;
    has(&format!(
        "id=\"roofline\" width=\"560\" height=\"358\" role=\"img\" data-peak-tflops=\"{peak:.3}\" data-achieved-tflops=\"{achieved:.3}\""
    ));
    assert!(achieved / peak > 0.95, "gemm_ws runs near the tensor peak");
    let dram = num(&run["dram"]["bytes"]) - num(&run["dram"]["flushed_bytes"]);
    let smem = busy("smem") * num(&run["cycles"]) * num(&run["peak"]["smem_bytes_per_cycle"]);
    for (level, bytes) in [
        ("shared memory", smem),
        ("L2", num(&run["l2"]["bytes"])),
        ("DRAM", dram),
    ] {
        has(&format!(
            "class=\"point\" data-level=\"{level}\" data-intensity=\"{:.3}\" data-tflops=\"{achieved:.3}\"",
            flops / bytes
        ));
    }
    has("compute-bound at every level");
}

/// Every counter sample of every shipped scenario stays within what its unit can do: busy
/// fractions in [0, 1], L2 bytes per cycle within the L2 slices' bandwidth, DRAM bytes per
/// cycle within HBM's at the clock the run converted it at. Work is counted in the cycles it
/// covers, not when it was booked (a load books L2 and HBM hundreds of cycles ahead).
#[test]
fn counters_stay_within_physical_limits() {
    let mut peak_l2 = 0.0f64;
    for file in common::scenario_files() {
        let name = file.file_stem().unwrap().to_str().unwrap().to_string();
        // FA2 on the whole GPU takes half a minute with a trace: 4 of its CTAs.
        let small: &[&str] = match name.as_str() {
            "fa2_forward" => &["--set", "heads=1", "--set", "seqlen=512"],
            "naive_vs_tiled_gemm" => &["--set", "n=128"],
            _ => &[],
        };
        let (run, trace, _) = traced(&name, "summary", small);
        let preset = sim::gpu::preset::Preset::builtin(run["gpu"].as_str().unwrap()).unwrap();
        let m = &preset.memory;
        let l2 = m.l2.bytes_per_cycle;
        let clock = run["reference_clock_mhz"].as_f64().unwrap();
        let dram = m.hbm.bandwidth_gbs * 1e9 * m.hbm.efficiency / (clock * 1e6);
        // Links keep time in 2^-24 cycles per byte, rounded: a rate up to a few ppm high.
        let tolerance = 1.0 + 1e-4;
        let mut busy_samples = 0;
        for e in trace["traceEvents"].as_array().unwrap() {
            if e["ph"] != "C" {
                continue;
            }
            for (series, v) in e["args"].as_object().unwrap() {
                let v = v.as_f64().unwrap();
                assert!(v >= 0.0, "{name}: {series} {v} at {}", e["ts"]);
                let limit = match series.as_str() {
                    "l2_bytes_per_cycle" => {
                        peak_l2 = peak_l2.max(v);
                        l2 * tolerance
                    }
                    "dram_bytes_per_cycle" => dram * tolerance,
                    _ => {
                        busy_samples += 1;
                        1.0 + 1e-9
                    }
                };
                assert!(v <= limit, "{name}: {series} {v} > {limit} at {}", e["ts"]);
            }
        }
        assert!(busy_samples > 0, "{name}: no busy samples");
    }
    assert!(peak_l2 > 0.0, "some scenario moves data through L2");
}

/// `--trace PATH.gz` writes gzip, which `sim stalls` and `sim report` read as they read JSON.
#[test]
fn gzip_traces_read_like_plain_ones() {
    let (run, trace, gz) = traced_to("fa3_pingpong", "warps", FA3_ONE_CTA, "fa3.json.gz");
    check_schema(&run, &trace);
    let raw = std::fs::read(&gz).unwrap();
    assert_eq!(raw[..2], [0x1f, 0x8b], "a gzip stream");
    let (_, _, plain) = traced_to("fa3_pingpong", "warps", FA3_ONE_CTA, "fa3-plain.json");
    assert!(raw.len() * 5 < std::fs::metadata(&plain).unwrap().len() as usize);
    let stalls = |p: &PathBuf| sim_ok(&["stalls", p.to_str().unwrap(), "--json"]).stdout;
    assert_eq!(stalls(&gz), stalls(&plain));
    let page = scratch("fa3-gz.html");
    sim_ok(&["report", gz.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .contains("mbarrier phase"));
}

/// Runs writing the same trace at once leave one whole trace and no temporary file: each
/// writes beside it and renames its file over it when done.
#[test]
fn concurrent_runs_never_interleave_a_trace() {
    let dir = scratch("concurrent");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("same.json");
    let p = path.to_str().unwrap();
    let children: Vec<_> = (0..4)
        .map(|seed| {
            let seed = seed.to_string();
            common::command(&[
                "run",
                "scenarios/gemm_ws.ron",
                "--trace",
                p,
                "--seed",
                &seed,
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let trace: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert!(trace["otherData"]["seed"].as_u64().unwrap() < 4);
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["same.json"], "temporary files left behind");
}

/// The default trace name carries the options that change the run.
#[test]
fn the_default_trace_name_reflects_the_parameters() {
    let out = sim_ok(&[
        "run",
        "scenarios/wgmma_stream.ron",
        "--set",
        "n=32",
        "--seed",
        "2",
        "--json",
    ]);
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let path = "traces/wgmma_stream-n=32-seed=2.trace.json";
    assert_eq!(run["trace"]["path"], path);
    let file = common::root().join(path);
    let trace: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    assert_eq!(trace["otherData"]["sets"], serde_json::json!(["n=32"]));
    assert_eq!(trace["otherData"]["params"]["n"], 32);
}
