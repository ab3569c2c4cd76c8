//! `sim report TRACE -o page.html`: one self-contained HTML page (no network, no external
//! scripts) with the run's summary, a timeline of warp states per SM drawn on a canvas, a
//! stacked stall breakdown per role and the unit counter tracks as hand-written SVG, and a
//! legend. Long timelines are summarized into a fixed number of time buckets per row (each
//! bucket coloured by its dominant state), and whole-GPU traces into one row per SM and role, so
//! the page stays small and responsive whatever the trace's size.

use crate::observe::trace::{BUSY_UNITS as UNITS, EVENT_TID_BASE, GPU_PID};
use crate::observe::trace_read::{self, ReadError, TraceEvent};
use crate::observe::warp_state::State;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// Time buckets per timeline row.
const BUCKETS: usize = 800;
/// Above this many warps, rows are (SM, role) aggregates.
const MAX_WARP_ROWS: usize = 192;

struct Timeline {
    end: u64,
    /// Row of each traced warp (by trace thread id).
    row_of: BTreeMap<u32, usize>,
    labels: Vec<String>,
    /// Per row, per bucket, warp-cycles per state.
    cells: Vec<Vec<[f32; State::COUNT]>>,
}

impl Timeline {
    fn add(&mut self, row: usize, start: u64, end: u64, shares: &[(State, f64)]) {
        let width = self.end.max(1) as f64 / BUCKETS as f64;
        let first = ((start as f64 / width) as usize).min(BUCKETS - 1);
        let last = (((end.max(start + 1) - 1) as f64 / width) as usize).min(BUCKETS - 1);
        for b in first..=last {
            let lo = (b as f64 * width).max(start as f64);
            let hi = ((b + 1) as f64 * width).min(end as f64);
            if hi > lo {
                for &(s, share) in shares {
                    self.cells[row][b][s as usize] += ((hi - lo) * share) as f32;
                }
            }
        }
    }

    /// Each row as one character per bucket: the dominant state's index in base 36, or `.`.
    fn encoded(&self) -> Vec<String> {
        self.cells
            .iter()
            .map(|row| {
                row.iter()
                    .map(|c| {
                        let (i, v) = c.iter().enumerate().fold((0, 0.0f32), |m, (i, &v)| {
                            if v > m.1 {
                                (i, v)
                            } else {
                                m
                            }
                        });
                        if v > 0.0 {
                            std::char::from_digit(i as u32, 36).unwrap_or('.')
                        } else {
                            '.'
                        }
                    })
                    .collect()
            })
            .collect()
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The state shares of a warp's slice: its `args.states` breakdown when merged, else all its
/// state (its `cat`).
fn shares(e: &TraceEvent) -> Vec<(State, f64)> {
    let dur = e.dur.unwrap_or(0).max(1) as f64;
    match e.args.get("states").and_then(Value::as_object) {
        Some(m) => m
            .iter()
            .filter_map(|(k, v)| Some((State::from_name(k)?, v.as_f64()? / dur)))
            .collect(),
        None => State::from_name(&e.cat)
            .map(|s| vec![(s, 1.0)])
            .unwrap_or_default(),
    }
}

/// Builds the page for the trace at `path`.
pub fn build(path: &Path) -> Result<String, ReadError> {
    // Pass 1: the summary (at the end of the file) gives the time range and the warps.
    let other = trace_read::read(path, |_| {})?;
    let report = &other["report"];
    let end = other["cycles"].as_u64().unwrap_or(1).max(1);
    // Only the warps the trace holds slices for (a whole-GPU trace may hold a few SMs).
    let sms = other["filter"]["sms"]
        .as_array()
        .and_then(|r| Some(r.first()?.as_u64()?..r.get(1)?.as_u64()?));
    let warps: Vec<&Value> = other["warps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|w| {
            sms.as_ref()
                .is_none_or(|r| r.contains(&w["sm"].as_u64().unwrap_or(0)))
        })
        .collect();
    let mut tl = Timeline {
        end,
        row_of: BTreeMap::new(),
        labels: Vec::new(),
        cells: Vec::new(),
    };
    let per_warp = warps.len() <= MAX_WARP_ROWS;
    let mut groups: BTreeMap<(u64, String), usize> = BTreeMap::new();
    for w in &warps {
        let tid = w["tid"].as_u64().unwrap_or(0) as u32;
        let sm = w["sm"].as_u64().unwrap_or(0);
        let role = w["role"].as_str().unwrap_or("?").to_string();
        let row = if per_warp {
            tl.labels.push(format!(
                "SM {sm} · {} · CTA {}",
                w["name"].as_str().unwrap_or("?"),
                w["cta"]
            ));
            tl.labels.len() - 1
        } else {
            let next = groups.len();
            *groups.entry((sm, role.clone())).or_insert_with(|| {
                tl.labels.push(format!("SM {sm} · {role} (all warps)"));
                next
            })
        };
        tl.row_of.insert(tid, row);
    }
    tl.cells = vec![vec![[0.0; State::COUNT]; BUCKETS]; tl.labels.len()];

    // Pass 2: slices into timeline buckets, counters into series.
    let mut busy: BTreeMap<u64, (f64, [f64; UNITS.len()])> = BTreeMap::new();
    let mut bandwidth: Vec<(u64, f64, f64)> = Vec::new();
    let mut events: BTreeMap<String, u64> = BTreeMap::new();
    trace_read::read(path, |e| match e.ph.as_str() {
        "X" if e.tid >= EVENT_TID_BASE => *events.entry(e.name).or_default() += 1,
        "X" => {
            if let Some(&row) = tl.row_of.get(&e.tid) {
                let sh = shares(&e);
                tl.add(row, e.ts, e.ts + e.dur.unwrap_or(0), &sh);
            }
        }
        "C" if e.pid == GPU_PID => bandwidth.push((
            e.ts,
            e.args["l2_bytes_per_cycle"].as_f64().unwrap_or(0.0),
            e.args["dram_bytes_per_cycle"].as_f64().unwrap_or(0.0),
        )),
        "C" => {
            let slot = busy.entry(e.ts).or_insert((0.0, [0.0; UNITS.len()]));
            slot.0 += 1.0;
            for (i, k) in UNITS.iter().enumerate() {
                slot.1[i] += e.args[*k].as_f64().unwrap_or(0.0);
            }
        }
        _ => {}
    })?;

    let mut html = String::new();
    let title = format!(
        "{} on {}",
        report["scenario"].as_str().unwrap_or("?"),
        report["gpu"].as_str().unwrap_or("?")
    );
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n<style>{}</style></head>\n<body>\n<h1>{}</h1>\n",
        esc(&title),
        CSS,
        esc(&title)
    );
    html.push_str(&summary(report, &other, &events));
    html.push_str(&legend());
    let _ = write!(
        html,
        "<h2>Timeline</h2><p class=\"note\">{} rows, {BUCKETS} time buckets over {} cycles; each bucket shows its dominant state.</p>\n<canvas id=\"timeline\" width=\"1200\" height=\"{}\"></canvas>\n",
        tl.labels.len(),
        end,
        (tl.labels.len() * 9 + 20).max(40)
    );
    html.push_str(&stall_bars(report, &other));
    html.push_str(&counter_chart(&busy, &bandwidth, end));
    let data = json!({
        "colors": State::ALL.iter().map(|s| s.color()).collect::<Vec<_>>(),
        "names": State::ALL.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "labels": tl.labels,
        "rows": tl.encoded(),
        "end": end,
    });
    let _ = write!(
        html,
        "<script>\nconst DATA = {};\n{}</script>\n</body></html>\n",
        data.to_string().replace("</", "<\\/"),
        SCRIPT
    );
    Ok(html)
}

fn summary(report: &Value, other: &Value, instants: &BTreeMap<String, u64>) -> String {
    let mut rows: Vec<(String, String)> = vec![
        (
            "simulated".into(),
            format!(
                "{} cycles = {:.2} µs at {} MHz",
                report["cycles"],
                report["time_us"].as_f64().unwrap_or(0.0),
                report["clock_mhz"]
            ),
        ),
        (
            "GPU".into(),
            format!(
                "{} CTAs on {} of {} SMs, {} per SM, {} wave(s)",
                report["ctas"],
                report["sms"],
                report["sms_total"],
                report["ctas_per_sm"],
                report["waves"]
            ),
        ),
        (
            "tensor".into(),
            format!("{:.1} TFLOP/s", report["tflops"].as_f64().unwrap_or(0.0)),
        ),
    ];
    if let Some(a) = report["analytic"].as_object() {
        rows.push((
            "analytic".into(),
            format!(
                "{} cycles, bound by {}; simulated / analytic = {:.3}",
                a["cycles"],
                a["bound"].as_str().unwrap_or("?"),
                a["ratio"].as_f64().unwrap_or(0.0)
            ),
        ));
    }
    rows.push((
        "memory".into(),
        format!(
            "L2 hit {:.1}%, DRAM {} B ({:.0} GB/s)",
            100.0 * report["l2"]["hit_rate"].as_f64().unwrap_or(0.0),
            report["dram"]["bytes"],
            report["dram"]["bandwidth_gbs"].as_f64().unwrap_or(0.0)
        ),
    ));
    if let Some(units) = report["units"].as_object() {
        let u: Vec<String> = units
            .iter()
            .map(|(k, v)| format!("{k} {:.1}%", 100.0 * v["busy"].as_f64().unwrap_or(0.0)))
            .collect();
        rows.push(("units busy".into(), u.join(", ")));
    }
    if !instants.is_empty() {
        let e: Vec<String> = instants.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        rows.push(("events".into(), e.join(", ")));
    }
    rows.push((
        "trace".into(),
        format!(
            "level {}, seed {}, sim {}",
            other["level"].as_str().unwrap_or("?"),
            other["seed"],
            other["version"].as_str().unwrap_or("?")
        ),
    ));
    if let Some(err) = other["error"].as_str() {
        rows.push(("run stopped".into(), err.to_string()));
    }
    let mut o = String::from("<table class=\"summary\">\n");
    for (k, v) in rows {
        let _ = writeln!(o, "<tr><th>{}</th><td>{}</td></tr>", esc(&k), esc(&v));
    }
    o.push_str("</table>\n");
    o
}

fn legend() -> String {
    let mut o = String::from("<div class=\"legend\">");
    for s in State::ALL {
        let _ = write!(
            o,
            "<span><i style=\"background:{}\"></i>{} <small>[{}]</small></span>",
            s.color(),
            s.name(),
            s.ncu()
        );
    }
    o.push_str("</div>\n");
    o
}

/// A stacked horizontal bar of state shares per role (SVG).
fn stall_bars(report: &Value, other: &Value) -> String {
    let roles: Vec<&str> = other["role_order"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let (w, h, label) = (720.0, 26.0, 110.0);
    let mut o = format!(
        "<h2>Stall breakdown per role</h2>\n<svg id=\"stalls\" width=\"{}\" height=\"{}\" role=\"img\">\n",
        label + w + 10.0,
        roles.len() as f64 * (h + 8.0) + 10.0
    );
    for (i, role) in roles.iter().enumerate() {
        let r = &report["roles"][*role];
        let total = r["lifetime"].as_f64().unwrap_or(0.0).max(1.0);
        let y = 5.0 + i as f64 * (h + 8.0);
        let _ = writeln!(
            o,
            "<text x=\"0\" y=\"{:.1}\">{}</text>",
            y + h * 0.7,
            esc(role)
        );
        let mut x = label;
        for s in State::ALL {
            let c = r["states"][s.name()].as_f64().unwrap_or(0.0);
            if c <= 0.0 {
                continue;
            }
            let bw = w * c / total;
            let _ = writeln!(
                o,
                "<rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{bw:.2}\" height=\"{h}\" fill=\"{}\"><title>{} {:.1}% [{}]</title></rect>",
                s.color(),
                s.name(),
                100.0 * c / total,
                s.ncu()
            );
            x += bw;
        }
    }
    o.push_str("</svg>\n");
    o
}

/// Unit busy fractions averaged over SMs, and GPU bandwidths, over time (SVG).
fn counter_chart(
    busy: &BTreeMap<u64, (f64, [f64; UNITS.len()])>,
    bw: &[(u64, f64, f64)],
    end: u64,
) -> String {
    let (w, h) = (1000.0, 160.0);
    let x = |t: u64| 40.0 + w * t as f64 / end.max(1) as f64;
    let mut o = format!(
        "<h2>Units over time</h2>\n<svg id=\"counters\" width=\"{}\" height=\"{}\" role=\"img\">\n<rect x=\"40\" y=\"10\" width=\"{w}\" height=\"{h}\" fill=\"none\" stroke=\"#999\"/>\n<text x=\"0\" y=\"16\">100%</text><text x=\"0\" y=\"{}\">0%</text>\n",
        w + 60.0,
        h + 60.0,
        h + 10.0
    );
    // Unit colours, kept apart from the state palette of the timeline and legend.
    let colors = [
        "#000000", "#3f51b5", "#9c27b0", "#ff7043", "#607d8b", "#827717",
    ];
    for (k, name) in UNITS.iter().enumerate() {
        let pts: Vec<String> = busy
            .iter()
            .map(|(&t, (n, v))| format!("{:.1},{:.1}", x(t), 10.0 + h * (1.0 - v[k] / n.max(1.0))))
            .collect();
        if pts.len() > 1 {
            let _ = writeln!(
                o,
                "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"><title>{name}</title></polyline>",
                colors[k],
                pts.join(" ")
            );
        }
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" fill=\"{}\">{name}</text>",
            40.0 + k as f64 * 90.0,
            h + 30.0,
            colors[k]
        );
    }
    let peak = bw.iter().map(|b| b.1.max(b.2)).fold(0.0, f64::max);
    if peak > 0.0 {
        for (i, (name, color)) in [("L2 B/cycle", "#9e9d24"), ("DRAM B/cycle", "#c62828")]
            .iter()
            .enumerate()
        {
            let pts: Vec<String> = bw
                .iter()
                .map(|b| {
                    let v = if i == 0 { b.1 } else { b.2 };
                    format!("{:.1},{:.1}", x(b.0), 10.0 + h * (1.0 - v / peak))
                })
                .collect();
            let _ = writeln!(
                o,
                "<polyline fill=\"none\" stroke=\"{color}\" stroke-dasharray=\"4 2\" points=\"{}\"><title>{name} (peak {peak:.0})</title></polyline>",
                pts.join(" ")
            );
            let _ = writeln!(
                o,
                "<text x=\"{}\" y=\"{}\" fill=\"{color}\">{name} (100% = {peak:.0})</text>",
                40.0 + (5 + 2 * i) as f64 * 90.0,
                h + 30.0
            );
        }
    }
    o.push_str("</svg>\n");
    o
}

const CSS: &str = "body{font:14px system-ui,sans-serif;margin:20px;color:#222}\
table.summary th{text-align:left;padding-right:16px;vertical-align:top}\
.legend span{display:inline-block;margin:2px 12px 2px 0}\
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}\
.note{color:#666}canvas{border:1px solid #ccc;display:block}svg text{font-size:12px}";

/// Draws the timeline rows; marks the page rendered (or the error) for headless checks.
const SCRIPT: &str = r#"window.onerror = function (m) { document.body.setAttribute('data-error', String(m)); };
(function () {
  const c = document.getElementById('timeline');
  const g = c.getContext('2d');
  const label = 220, rowH = 9, n = DATA.rows.length ? DATA.rows[0].length : 0;
  const cw = (c.width - label) / Math.max(n, 1);
  g.font = '9px sans-serif';
  DATA.rows.forEach(function (row, r) {
    const y = 10 + r * rowH;
    g.fillStyle = '#333';
    g.fillText(DATA.labels[r], 2, y + 7);
    for (let b = 0; b < row.length; b++) {
      const ch = row[b];
      if (ch === '.') continue;
      g.fillStyle = DATA.colors[parseInt(ch, 36)];
      g.fillRect(label + b * cw, y, Math.ceil(cw), rowH - 1);
    }
  });
  document.body.setAttribute('data-rendered', 'ok');
})();
"#;
