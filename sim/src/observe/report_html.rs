//! `sim report TRACE -o page.html`: one self-contained HTML page (no network, no external
//! scripts) that opens on the run's diagnosis (the verdict, each unit's speed of light, the
//! roofline; `observe::diagnosis`), then the run's summary, the SMs the trace holds with a
//! chooser, and for the SM chosen a zoomable timeline of its warps' states (a canvas), one
//! mainloop iteration of each warpgroup aligned on one axis, then the stall breakdown per role
//! and warpgroup, and the units over time as small multiples. `observe::timeline` reads what the
//! interactive views draw; `report.js` draws them.

use crate::analytic::fmt::grouped;
use crate::observe::diagnosis::{self, Diagnosis, Roofline};
use crate::observe::stalls::{self as stall_rows, Row};
use crate::observe::timeline::{Collector, Views, MAX_SLICES};
use crate::observe::trace::EVENT_TID_BASE;
use crate::observe::trace_read::{self, ReadError};
use crate::observe::warp_state::State;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// Text made safe inside SVG or HTML markup and attribute values.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Builds the page for the trace at `path`.
pub fn build(path: &Path) -> Result<String, ReadError> {
    // One pass: the views' slices, groups and counters, the instants per name, and the summary
    // at the end of the file.
    let mut collector = Collector::default();
    let mut events: BTreeMap<String, u64> = BTreeMap::new();
    let other = trace_read::read(path, |e| {
        if e.ph == "X" && e.tid >= EVENT_TID_BASE {
            *events.entry(e.name).or_default() += 1;
        } else {
            collector.add(e);
        }
    })?;
    let views = collector.finish(&other);
    let report = &other["report"];
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
    if let Some(d) = diagnosis::diagnose(&other) {
        html.push_str(&diagnosis_panel(&d));
    }
    html.push_str(&summary(report, &other, &events));
    html.push_str(&legend());
    html.push_str(&sm_chooser(&views, report));
    html.push_str(&timeline_section(&views));
    html.push_str(&stall_bars(&other));
    html.push_str("<h2>Units over time</h2>\n<p class=\"note\">One chart per unit of the SM chosen, its busy fraction (0 to 100%) per counter sample, then L2 and DRAM GPU-wide in bytes per cycle against the preset's peak; over the timeline's cycles, so zooming or panning it moves them. Hover for a sample's value.</p>\n<div id=\"counters\"></div>\n<div id=\"tip\" class=\"tip\" hidden></div>\n");
    let mut data = views.data;
    data["colors"] = json!(State::ALL.iter().map(|s| s.color()).collect::<Vec<_>>());
    data["names"] = json!(State::ALL.iter().map(|s| s.name()).collect::<Vec<_>>());
    data["ncu"] = json!(State::ALL.iter().map(|s| s.ncu()).collect::<Vec<_>>());
    let _ = write!(
        html,
        "<script>\nconst DATA = {};\n{}</script>\n</body></html>\n",
        data.to_string().replace("</", "<\\/"),
        SCRIPT
    );
    Ok(html)
}

/// `0–7, 12`: runs of consecutive numbers.
fn ranges(v: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(match j - i {
            0 => v[i].to_string(),
            _ => format!("{}–{}", v[i], v[j]),
        });
        i = j + 1;
    }
    out.join(", ")
}

/// Which SMs the trace holds, which of them ran the last wave, and the chooser of the SM the
/// views show (by default the first SM that ran the last wave, else the first).
fn sm_chooser(views: &Views, report: &Value) -> String {
    let sms: Vec<u32> = views.sms.iter().map(|s| s.sm).collect();
    let used = report["sms"].as_u64().unwrap_or(0);
    let mut note = match sms.len() {
        0 => "The trace holds no SM's slices or counters.".to_string(),
        1 if used == 1 => format!("The trace holds SM {}, the one SM the run used.", sms[0]),
        n => format!(
            "The trace holds SM{} {} of the {used} the run used (<code>sim run --trace-sms</code> chooses them).",
            if n == 1 { "" } else { "s" },
            ranges(&sms)
        ),
    };
    if let Some(first) = views.last_wave {
        let last: Vec<u32> = views
            .sms
            .iter()
            .filter(|s| s.last_wave)
            .map(|s| s.sm)
            .collect();
        let _ = write!(
            note,
            " The last wave starts at CTA {}: {}.",
            grouped(first),
            match last.len() {
                0 => "none of these SMs ran it".to_string(),
                n if n == sms.len() => "every one of these SMs ran a CTA of it".to_string(),
                _ => format!("SMs {} ran a CTA of it", ranges(&last)),
            }
        );
    }
    let chosen = views.sms.iter().position(|s| s.last_wave).unwrap_or(0);
    let mut o = format!("<h2>SMs</h2>\n<p class=\"note\" id=\"sms-note\">{note}</p>\n<p><label>SM shown <select id=\"sm\">");
    for (i, s) in views.sms.iter().enumerate() {
        // Enough CTAs to tell the SMs apart; the count says how many more.
        let shown: Vec<String> = s.ctas.iter().take(6).map(|c| c.to_string()).collect();
        let more = s.ctas.len().saturating_sub(shown.len());
        let _ = write!(
            o,
            "<option value=\"{i}\" data-sm=\"{}\" data-last-wave=\"{}\"{}>SM {} · CTA{} {}{}{}</option>",
            s.sm,
            s.last_wave,
            if i == chosen { " selected" } else { "" },
            s.sm,
            if s.ctas.len() == 1 { "" } else { "s" },
            shown.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() },
            if s.last_wave { " · last wave" } else { "" }
        );
    }
    o.push_str("</select></label></p>\n");
    o
}

/// The timeline's canvas and controls, and the mainloop iteration's place.
fn timeline_section(views: &Views) -> String {
    let merged = if views.quantum > 0 {
        format!(
            " To keep the page under {} slices, runs of slices shorter than {} cycles are merged ({} slices remain).",
            grouped(MAX_SLICES as u64),
            grouped(views.quantum),
            grouped(views.slices as u64)
        )
    } else {
        String::new()
    };
    format!(
        "<h2>Timeline</h2>\n<p class=\"note\">The traced warps of the SM shown, a row per warp (a CTA after it on the SM takes the row over), each pixel in the state that holds most of its cycles.{merged} Wheel or + and − to zoom, drag the rows to pan, drag along the axis (or Shift+drag) to zoom into a range, double-click for the whole run; hover for a slice's warp, instruction or states, start and duration.</p>\n<p class=\"controls\"><button id=\"zoom-in\">+</button><button id=\"zoom-out\">−</button><button id=\"pan-left\">←</button><button id=\"pan-right\">→</button><button id=\"zoom-reset\">whole run</button> <span id=\"range\"></span></p>\n<canvas id=\"timeline\" width=\"1200\" height=\"40\"></canvas>\n<h2>One mainloop iteration per warpgroup</h2>\n<p class=\"note\">The warpgroups of the SM's CTA with the most wgmma groups, each in the same iteration of the loop that commits most of its groups: the one nearest the middle of the run among those of typical length (at most 5/4 of the median), from its first group's commit to the next iteration's. A bar per wgmma group (GEMM 1, 2, … in the iteration's order) from when the tensor pipe can start it (its commit, or the warpgroup's group before it done) to its completion; under it warp 0's states. Ping-pong shows as one warpgroup's math beside the other's GEMMs, as in the FlashAttention-3 paper's figure. Hover for the numbers.</p>\n<div id=\"iteration\"></div>\n"
    )
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
    // L1 only where loads went through it (the report has it then).
    let l1 = report["l1"]["hit_rate"]
        .as_f64()
        .map_or(String::new(), |h| format!("L1 hit {:.1}%, ", 100.0 * h));
    rows.push((
        "memory".into(),
        format!(
            "{l1}L2 hit {:.1}%, DRAM {} B ({:.0} GB/s)",
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

/// The first screen: the verdict, each unit's speed of light, the roofline and the findings.
fn diagnosis_panel(d: &Diagnosis) -> String {
    let binding = d.binding.as_ref();
    let mut o = format!(
        "<section id=\"diagnosis\" data-binding=\"{}\" data-busy=\"{:.4}\" data-ratio=\"{}\" data-latency-bound=\"{}\">\n<h2>Diagnosis</h2>\n<p class=\"verdict\">{}</p>\n<div class=\"panels\">\n",
        binding.map_or("none", |b| b.unit),
        binding.map_or(0.0, |b| b.busy),
        d.analytic
            .as_ref()
            .map_or("none".to_string(), |a| format!("{:.3}", a.ratio)),
        d.latency_bound(),
        esc(&d.verdict())
    );
    o.push_str(&sol_chart(d));
    match &d.roofline {
        Some(rf) => o.push_str(&roofline_chart(rf)),
        None => o.push_str(
            "<figure><figcaption>No roofline: no tensor FLOPs (or no peaks in the report).</figcaption></figure>\n",
        ),
    }
    o.push_str("</div>\n<table class=\"findings\">\n");
    for (topic, text) in d.findings() {
        let _ = writeln!(
            o,
            "<tr><th>{}</th><td>{}</td></tr>",
            esc(&topic),
            esc(&text)
        );
    }
    o.push_str("</table>\n</section>\n");
    o
}

/// Each unit's busy fraction as a bar, busiest first; the binding unit stands out and a
/// dashed line marks the latency-bound threshold (SVG).
fn sol_chart(d: &Diagnosis) -> String {
    let mut units: Vec<&diagnosis::Sol> = d.sol.iter().collect();
    units.sort_by(|a, b| b.busy.total_cmp(&a.busy));
    let (label, bar, row) = (150.0, 240.0, 18.0);
    let height = 24.0 + units.len() as f64 * row;
    let mut o = format!(
        "<figure><figcaption>Speed of light: busy fraction of each unit's peak</figcaption>\n<svg id=\"sol\" width=\"{}\" height=\"{height}\" role=\"img\">\n",
        label + bar + 60.0
    );
    let x = |f: f64| label + bar * f.clamp(0.0, 1.0);
    for (f, t) in [
        (0.0, "0%"),
        (diagnosis::LATENCY_BOUND, "60%"),
        (1.0, "100%"),
    ] {
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"12\" text-anchor=\"middle\" class=\"axis\">{t}</text>",
            x(f)
        );
    }
    let _ = writeln!(
        o,
        "<line x1=\"{0:.1}\" y1=\"16\" x2=\"{0:.1}\" y2=\"{1:.1}\" stroke=\"#999\" stroke-dasharray=\"3 3\"><title>below {2:.0}% of peak no unit binds (Nsight Compute's latency-bound threshold)</title></line>",
        x(diagnosis::LATENCY_BOUND),
        height,
        100.0 * diagnosis::LATENCY_BOUND
    );
    for (i, u) in units.iter().enumerate() {
        let y = 20.0 + i as f64 * row;
        let is_binding = d.binding.as_ref().is_some_and(|b| b.unit == u.unit);
        let color = match (is_binding, u.throughput) {
            (true, _) => "#d84315",
            (_, false) => "#bdbdbd",
            _ => "#5c6bc0",
        };
        let note = match (is_binding, u.throughput, u.gpu_wide) {
            (true, _, _) => " — binding",
            (_, false, _) => " — an occupancy (cycles with a load in flight), never binding",
            (_, _, true) => " — of the GPU's capacity",
            _ => " — averaged over the SMs used",
        };
        let _ = writeln!(
            o,
            "<g class=\"sol-row\" data-unit=\"{}\" data-busy=\"{:.4}\"><title>{} {:.1}%{note}</title><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\"{}>{}</text><rect x=\"{label}\" y=\"{:.1}\" width=\"{bar}\" height=\"12\" fill=\"#eee\"/><rect x=\"{label}\" y=\"{:.1}\" width=\"{:.1}\" height=\"12\" fill=\"{color}\"/><text x=\"{:.1}\" y=\"{:.1}\">{:.1}%</text></g>",
            u.unit,
            u.busy,
            esc(u.label),
            100.0 * u.busy,
            label - 6.0,
            y + 10.0,
            if is_binding { " font-weight=\"bold\"" } else { "" },
            esc(u.label),
            y,
            y,
            x(u.busy) - label,
            label + bar + 6.0,
            y + 10.0,
            100.0 * u.busy
        );
    }
    o.push_str("</svg>\n<p class=\"note\">SM units averaged over the SMs that ran CTAs; L2 and DRAM over the GPU's capacity. Hover a bar for its scope.</p></figure>\n");
    o
}

/// 10^`e` as an axis label: `0.01`, `0.1`, `1`, `10`, `1k`, `10k`.
fn decade(e: i32) -> String {
    match e {
        ..0 => format!("{:.*}", e.unsigned_abs() as usize, 10f64.powi(e)),
        0..3 => 10u64.pow(e as u32).to_string(),
        _ => format!("{}k", 10u64.pow(e as u32 - 3)),
    }
}

/// Log-log roofline of the SMs the run used: the tensor peak, each memory level's bandwidth
/// roof and the kernel's point at that level (SVG). Colours as in the units-over-time chart.
fn roofline_chart(rf: &Roofline) -> String {
    let (left, right, top, bottom) = (56.0, 470.0, 16.0, 270.0);
    let color = |name: &str| match name {
        "shared memory" => "#6a1b9a",
        "L2" => "#9e9d24",
        _ => "#c62828",
    };
    if rf.levels.is_empty() {
        return "<figure><figcaption>No roofline: the run moved no bytes through shared memory, L2 or DRAM.</figcaption></figure>\n".to_string();
    }
    let peak = rf.tflops(rf.peak);
    let achieved = rf.tflops(rf.achieved());
    let mut xs: Vec<f64> = Vec::new();
    for l in &rf.levels {
        xs.push(rf.intensity(l));
        xs.push(rf.peak / l.roof);
    }
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(0.0, f64::max);
    // Whole decades around the points and the ridges; the peak a little below the top.
    let (e0, e1) = (
        (lo / 3.0).log10().floor() as i32,
        (hi * 3.0).log10().ceil() as i32,
    );
    let (x0, x1) = (10f64.powi(e0), 10f64.powi(e1));
    let ey = (achieved.min(peak) / 30.0).log10().floor() as i32;
    let (y0, y1) = (10f64.powi(ey), peak * 3.0);
    let px = |v: f64| left + (right - left) * (v / x0).log10() / (x1 / x0).log10();
    let py = |v: f64| bottom - (bottom - top) * (v / y0).log10() / (y1 / y0).log10();
    let legend_y = bottom + 40.0;
    let mut o = format!(
        "<figure><figcaption>Roofline of the {} SM{} used, at {} MHz</figcaption>\n<svg id=\"roofline\" width=\"{}\" height=\"{}\" role=\"img\" data-peak-tflops=\"{peak:.3}\" data-achieved-tflops=\"{achieved:.3}\">\n<rect x=\"{left}\" y=\"{top}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n",
        rf.sms,
        if rf.sms == 1 { "" } else { "s" },
        rf.clock_mhz,
        right + 90.0,
        legend_y + 16.0 * rf.levels.len() as f64,
        right - left,
        bottom - top
    );
    for e in e0..=e1 {
        let _ = writeln!(
            o,
            "<line x1=\"{0:.1}\" y1=\"{top}\" x2=\"{0:.1}\" y2=\"{bottom}\" stroke=\"#eee\"/><text x=\"{0:.1}\" y=\"{1}\" text-anchor=\"middle\" class=\"axis\">{2}</text>",
            px(10f64.powi(e)),
            bottom + 14.0,
            decade(e)
        );
    }
    for e in (ey..).take_while(|&e| 10f64.powi(e) <= y1) {
        let y = py(10f64.powi(e));
        let _ = writeln!(
            o,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{right}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text x=\"{0}\" y=\"{1:.1}\" text-anchor=\"end\" class=\"axis\">{2}</text>",
            left - 4.0,
            y + 4.0,
            decade(e)
        );
    }
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"axis\">arithmetic intensity (FLOP per byte moved at the level)</text><text x=\"4\" y=\"11\" class=\"axis\">TFLOP/s</text>",
        (left + right) / 2.0,
        bottom + 28.0
    );
    // The compute roof from the leftmost ridge on, then each level's bandwidth up to its ridge.
    let first_ridge = rf
        .levels
        .iter()
        .map(|l| rf.peak / l.roof)
        .fold(x1, f64::min)
        .max(x0);
    let _ = writeln!(
        o,
        "<line x1=\"{:.1}\" y1=\"{1:.1}\" x2=\"{right}\" y2=\"{1:.1}\" stroke=\"#000\" stroke-width=\"2\"><title>tensor peak {peak:.1} TFLOP/s ({2} FLOP/cycle)</title></line><text x=\"{3}\" y=\"{4:.1}\" text-anchor=\"end\">tensor peak {peak:.1} TFLOP/s</text>",
        px(first_ridge),
        py(peak),
        rf.peak,
        right - 4.0,
        py(peak) - 9.0
    );
    for (i, l) in rf.levels.iter().enumerate() {
        let bw = rf.tflops(l.roof);
        let (ridge, start) = (rf.peak / l.roof, (y0 / bw).max(x0));
        let c = color(l.name);
        if ridge > start {
            let _ = writeln!(
                o,
                "<line class=\"roof\" data-level=\"{}\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{c}\" stroke-width=\"2\"{}><title>{} roof {:.0} GB/s ({:.1} B/cycle)</title></line>",
                l.name,
                px(start),
                py(start * bw),
                px(ridge),
                py(peak),
                if l.name == "L2" {
                    " stroke-dasharray=\"6 4\""
                } else {
                    ""
                },
                l.name,
                rf.gbs(l.roof),
                l.roof
            );
        }
        let (intensity, allowed) = (rf.intensity(l), rf.tflops(rf.attainable(l)));
        // L2 and DRAM often share a point and a roof (the SMs' intake caps both): L2 is a
        // ring around DRAM's dot, its roof dashed over DRAM's.
        let mark = |x: f64, y: f64| {
            match l.name {
            "L2" => format!("cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"7\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\""),
            _ => format!("cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4.5\" fill=\"{c}\""),
        }
        };
        let _ = writeln!(
            o,
            "<circle class=\"point\" data-level=\"{}\" data-intensity=\"{intensity:.3}\" data-tflops=\"{achieved:.3}\" {}><title>{}: {intensity:.1} FLOP/B, {achieved:.2} TFLOP/s; the roofs allow {allowed:.2} there ({:.1}%)</title></circle>",
            l.name,
            mark(px(intensity), py(achieved)),
            l.name,
            100.0 * achieved / allowed
        );
        let _ = writeln!(
            o,
            "<circle {}/><text x=\"{}\" y=\"{:.1}\">{}: {intensity:.1} FLOP/B of {:.1} MB; roof {:.0} GB/s ({:.0} B/cycle)</text>",
            mark(left + 4.0, legend_y + 16.0 * i as f64 - 4.0),
            left + 16.0,
            legend_y + 16.0 * i as f64,
            l.name,
            l.bytes / 1e6,
            rf.gbs(l.roof),
            l.roof
        );
    }
    let _ = write!(
        o,
        "</svg>\n<p class=\"note\">Tensor FLOP only. Roofs of the SMs used: the tensor peak and the shared-memory port per SM; L2 and DRAM at the preset's GPU-wide rates, capped at what the SMs take in from L2 ({:.0} B/cycle per SM: its port and its TMA fill path). Shared-memory bytes are the port's busy cycles × its width.</p></figure>\n",
        rf.sm_intake
    );
    o
}

/// Text colour readable on a `#rrggbb` fill.
fn ink(fill: &str) -> &'static str {
    let v = u32::from_str_radix(fill.trim_start_matches('#'), 16).unwrap_or(0);
    let (r, g, b) = ((v >> 16) & 255, (v >> 8) & 255, v & 255);
    if 299 * r + 587 * g + 114 * b > 150_000 {
        "#000"
    } else {
        "#fff"
    }
}

/// Stacked bars of state shares per role, and per warpgroup for roles with more than one,
/// each segment with its percentage when it fits and the ranked states under the bar (SVG).
fn stall_bars(other: &Value) -> String {
    let groups = stall_rows::warpgroup_rows(other);
    let mut rows: Vec<(Row, bool)> = Vec::new();
    for role in stall_rows::role_rows(other) {
        // Warpgroup `consumer1` of role `consumer`: the role's name and an index.
        let mine: Vec<&Row> = groups
            .iter()
            .filter(|g| {
                g.name
                    .strip_prefix(role.name.as_str())
                    .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
            })
            .collect();
        let split = mine.len() > 1;
        rows.push((role, false));
        if split {
            rows.extend(mine.into_iter().map(|g| (g.clone(), true)));
        }
    }
    let (w, h, label, gap) = (720.0, 22.0, 150.0, 26.0);
    let mut o = format!(
        "<h2>Stall breakdown per role and warpgroup</h2>\n<svg id=\"stalls\" width=\"{}\" height=\"{}\" role=\"img\">\n",
        // Room for the ranked states' line under the bars.
        label + w + 230.0,
        rows.len() as f64 * (h + gap) + 10.0
    );
    for (i, (r, group)) in rows.iter().enumerate() {
        let total = r.cycles.max(1) as f64;
        let y = 5.0 + i as f64 * (h + gap);
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{:.1}\"{}>{} · {} warp{}</text>",
            if *group { 14.0 } else { 0.0 },
            y + h * 0.7,
            if *group { "" } else { " font-weight=\"bold\"" },
            esc(&r.name),
            r.warps,
            if r.warps == 1 { "" } else { "s" }
        );
        let mut x = label;
        let ranked = r.ranked();
        for s in State::ALL {
            let c = r.states.get(s.name()).copied().unwrap_or(0) as f64;
            if c <= 0.0 {
                continue;
            }
            let (bw, share) = (w * c / total, 100.0 * c / total);
            let _ = writeln!(
                o,
                "<rect class=\"stall\" data-row=\"{}\" data-state=\"{}\" data-share=\"{share:.2}\" x=\"{x:.2}\" y=\"{y:.1}\" width=\"{bw:.2}\" height=\"{h}\" fill=\"{}\"><title>{} {share:.1}% [{}]</title></rect>",
                esc(&r.name),
                s.name(),
                s.color(),
                s.name(),
                s.ncu()
            );
            // A percentage fits in about 40 px at 11 px.
            if bw >= 40.0 {
                let _ = writeln!(
                    o,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\" fill=\"{}\" pointer-events=\"none\">{share:.1}%</text>",
                    x + bw / 2.0,
                    y + h * 0.68,
                    ink(s.color())
                );
            }
            x += bw;
        }
        let listed: Vec<String> = ranked
            .iter()
            .take(6)
            .map(|(s, c)| format!("{} {:.1}%", s.name(), 100.0 * *c as f64 / total))
            .collect();
        let _ = writeln!(
            o,
            "<text x=\"{label}\" y=\"{:.1}\" font-size=\"11\" fill=\"#555\">{}</text>",
            y + h + 13.0,
            esc(&listed.join(" · "))
        );
    }
    o.push_str("</svg>\n");
    o
}

const CSS: &str = "body{font:14px sans-serif;margin:20px;color:#222}\
table.summary th{text-align:left;padding-right:16px;vertical-align:top}\
.legend span{display:inline-block;margin:2px 12px 2px 0}\
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}\
.note{color:#666}canvas{border:1px solid #ccc;display:block}svg text{font-size:12px}\
svg text.axis{fill:#666;font-size:11px}.verdict{font-size:16px;font-weight:600;max-width:1100px}\
.panels{display:flex;flex-wrap:wrap;gap:24px}figure{margin:0}figcaption{font-weight:600;margin-bottom:4px}\
.panels .note{max-width:480px;font-size:12px}table.findings{max-width:1100px;margin-top:8px}\
table.findings th{text-align:left;padding-right:16px;vertical-align:top;white-space:nowrap}\
.controls button{min-width:32px;margin-right:4px}#timeline{cursor:grab}svg.unit{display:block}\
.tip{position:fixed;z-index:10;background:#fff;border:1px solid #999;padding:4px 6px;font-size:12px;\
white-space:pre-line;max-width:640px;pointer-events:none;box-shadow:1px 1px 4px rgba(0,0,0,.2)}";

/// Draws the interactive views; marks the page rendered (or the error) and where the
/// diagnosis' charts end, for headless checks.
const SCRIPT: &str = include_str!("report.js");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_name_whole_decades() {
        let labels: Vec<String> = (-2..=5).map(decade).collect();
        assert_eq!(
            labels,
            ["0.01", "0.1", "1", "10", "100", "1k", "10k", "100k"]
        );
    }
}
