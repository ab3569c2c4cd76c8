//! `sim diff`: two runs' reports (`sim run --json`) side by side, metric by metric, with the
//! change, as Nsight Compute's baseline view shows them. Stall reasons are Nsight Compute's
//! "warp cycles per issued instruction": a role's warp-cycles in the reason over its issued
//! instructions.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not JSON: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("{path}: not a `sim run --json` report (no numeric `{field}`)")]
    NotAReport { path: String, field: &'static str },
}

/// One metric of both runs.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    pub section: String,
    pub metric: String,
    pub unit: &'static str,
    pub baseline: f64,
    pub current: f64,
}

impl Row {
    pub fn delta(&self) -> f64 {
        self.current - self.baseline
    }
    /// current / baseline − 1, or None when the baseline is 0.
    pub fn relative(&self) -> Option<f64> {
        (self.baseline != 0.0).then(|| self.current / self.baseline - 1.0)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    pub baseline: String,
    pub current: String,
    /// `scenario on gpu` of each run, and the parameters whose values differ.
    pub baseline_run: String,
    pub current_run: String,
    pub params: Vec<(String, Value, Value)>,
    pub rows: Vec<Row>,
}

/// Reads a `sim run --json` report.
pub fn load(path: &Path) -> Result<Value, DiffError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| DiffError::Read {
        path: name.clone(),
        source,
    })?;
    let v: Value = serde_json::from_str(&text).map_err(|source| DiffError::Json {
        path: name.clone(),
        source,
    })?;
    for field in ["cycles", "instructions"] {
        if !v[field].is_number() {
            return Err(DiffError::NotAReport { path: name, field });
        }
    }
    Ok(v)
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn keys<'a>(a: &'a Value, b: &'a Value) -> BTreeSet<&'a str> {
    let names = |v: &'a Value| {
        v.as_object()
            .into_iter()
            .flat_map(|m| m.keys())
            .map(|k| k.as_str())
    };
    names(a).chain(names(b)).collect()
}

/// The metrics of both reports, in the summary's order: the run, memory, units, then each role.
pub fn compare(baseline: (&str, &Value), current: (&str, &Value)) -> Diff {
    let (a, b) = (baseline.1, current.1);
    let mut rows = Vec::new();
    let mut add = |section: &str, metric: &str, unit: &'static str, x: f64, y: f64| {
        rows.push(Row {
            section: section.to_string(),
            metric: metric.to_string(),
            unit,
            baseline: x,
            current: y,
        })
    };
    for (field, unit) in [
        ("cycles", "cycles"),
        ("time_us", "µs"),
        ("clock_mhz", "MHz"),
        ("tflops", "TFLOP/s"),
        ("instructions", "warp-inst"),
    ] {
        add("run", field, unit, num(&a[field]), num(&b[field]));
    }
    add(
        "memory",
        "l1 hit rate",
        "%",
        100.0 * num(&a["l1"]["hit_rate"]),
        100.0 * num(&b["l1"]["hit_rate"]),
    );
    add(
        "memory",
        "l2 hit rate",
        "%",
        100.0 * num(&a["l2"]["hit_rate"]),
        100.0 * num(&b["l2"]["hit_rate"]),
    );
    for (part, field, name, unit) in [
        ("l2", "bytes", "l2 bytes", "B"),
        ("l2", "bandwidth_gbs", "l2 GB/s", "GB/s"),
        ("dram", "read_bytes", "dram read bytes", "B"),
        ("dram", "write_bytes", "dram write bytes", "B"),
        ("dram", "bandwidth_gbs", "dram GB/s", "GB/s"),
    ] {
        add(
            "memory",
            name,
            unit,
            num(&a[part][field]),
            num(&b[part][field]),
        );
    }
    for unit in keys(&a["units"], &b["units"]) {
        add(
            "units busy",
            unit,
            "%",
            100.0 * num(&a["units"][unit]["busy"]),
            100.0 * num(&b["units"][unit]["busy"]),
        );
    }
    for role in keys(&a["roles"], &b["roles"]) {
        let (ra, rb) = (&a["roles"][role], &b["roles"][role]);
        add(
            role,
            "instructions",
            "warp-inst",
            num(&ra["instructions"]),
            num(&rb["instructions"]),
        );
        let per_inst =
            |r: &Value, reason: &str| num(&r["ncu"][reason]) / num(&r["instructions"]).max(1.0);
        for reason in keys(&ra["ncu"], &rb["ncu"]) {
            add(
                role,
                &format!("stall {reason}"),
                "cyc/inst",
                per_inst(ra, reason),
                per_inst(rb, reason),
            );
        }
    }
    let run = |v: &Value| {
        format!(
            "{} on {}",
            v["scenario"].as_str().unwrap_or("?"),
            v["gpu"].as_str().unwrap_or("?")
        )
    };
    let params = keys(&a["params"], &b["params"])
        .into_iter()
        .filter(|k| a["params"][k] != b["params"][k])
        .map(|k| {
            (
                k.to_string(),
                a["params"][k].clone(),
                b["params"][k].clone(),
            )
        })
        .collect();
    Diff {
        baseline: baseline.0.to_string(),
        current: current.0.to_string(),
        baseline_run: run(a),
        current_run: run(b),
        params,
        rows,
    }
}

/// A number as the summary writes it: grouped integers, else 3 significant decimals at most.
fn value(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        let s = crate::analytic::fmt::grouped(x.abs() as u64);
        if x < 0.0 {
            format!("-{s}")
        } else {
            s
        }
    } else if x.abs() >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}

/// Changes smaller than this fraction of the baseline are shown as unchanged: the last bits of
/// a rate recomputed from the same cycles.
const NOISE: f64 = 1e-4;

/// The table; with `all` false, the metrics that did not change are left out.
pub fn render(d: &Diff, all: bool) -> String {
    let mut out = format!(
        "baseline  {} ({})\ncurrent   {} ({})\n",
        d.baseline, d.baseline_run, d.current, d.current_run
    );
    for (k, x, y) in &d.params {
        out += &format!("  param {k}: {x} -> {y}\n");
    }
    let mut t = crate::analytic::fmt::Table::new(&[
        "section", "metric", "unit", "baseline", "current", "delta", "change",
    ])
    .right(&[3, 4, 5, 6]);
    let mut hidden = 0;
    for r in &d.rows {
        let same = r.delta() == 0.0 || r.relative().is_some_and(|c| c.abs() < NOISE);
        if !all && same {
            hidden += 1;
            continue;
        }
        let sign = if r.delta() > 0.0 { "+" } else { "" };
        t.row(vec![
            r.section.clone(),
            r.metric.clone(),
            r.unit.to_string(),
            value(r.baseline),
            value(r.current),
            format!("{sign}{}", value(r.delta())),
            r.relative()
                .map_or("-".to_string(), |c| format!("{:+.1}%", 100.0 * c)),
        ]);
    }
    out += &t.render();
    if hidden > 0 {
        out += &format!("({hidden} unchanged metrics not shown; --all shows them)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(cycles: u64, busy: f64, stall: u64) -> Value {
        json!({
            "scenario": "s", "gpu": "g", "params": {"stages": 2},
            "cycles": cycles, "instructions": 100, "time_us": 1.0, "clock_mhz": 1980.0,
            "tflops": 1.0,
            "l2": {"hit_rate": 0.5, "bytes": 1000, "bandwidth_gbs": 1.0},
            "dram": {"read_bytes": 10, "write_bytes": 0, "bandwidth_gbs": 1.0},
            "units": {"tensor": {"busy": busy}},
            "roles": {"consumer": {"instructions": 50, "ncu": {"barrier": stall}}}
        })
    }

    #[test]
    fn rows_hold_both_values_and_stalls_are_per_instruction() {
        let (a, mut b) = (report(1000, 0.5, 100), report(800, 0.625, 40));
        b["params"]["stages"] = json!(4);
        let d = compare(("a.json", &a), ("b.json", &b));
        let row = |m: &str| d.rows.iter().find(|r| r.metric == m).unwrap().clone();
        assert_eq!(row("cycles").delta(), -200.0);
        assert!((row("cycles").relative().unwrap() + 0.2).abs() < 1e-12);
        assert_eq!(row("dram write bytes").relative(), None);
        assert_eq!(
            (row("tensor").baseline, row("tensor").current),
            (50.0, 62.5)
        );
        // 100 and 40 warp-cycles over 50 instructions.
        assert_eq!(
            (row("stall barrier").baseline, row("stall barrier").current),
            (2.0, 0.8)
        );
        assert_eq!(d.params, vec![("stages".into(), json!(2), json!(4))]);
        let text = render(&d, false);
        assert!(text.contains("param stages: 2 -> 4"), "{text}");
        assert!(text.contains("-20.0%"), "{text}");
        assert!(text.contains("unchanged metrics not shown"), "{text}");
        assert!(!text.contains("l2 hit rate"), "{text}");
        assert!(render(&d, true).contains("l2 hit rate"));
        // A rate off in its last bits is not a change.
        b["tflops"] = json!(1.0 + 1e-9);
        let d = compare(("a.json", &a), ("b.json", &b));
        assert!(!render(&d, false).contains("tflops"));
    }

    #[test]
    fn a_file_that_is_not_a_report_is_named() {
        let dir = std::env::temp_dir().join(format!("sim-diff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.json");
        std::fs::write(&p, "{\"traceEvents\": []}").unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(
            e.ends_with("x.json: not a `sim run --json` report (no numeric `cycles`)"),
            "{e}"
        );
        std::fs::write(&p, "{").unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(
            e.contains("x.json: not JSON: EOF while parsing an object at line 1 column 1"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
