//! `sim stalls TRACE`: where the warps' cycles went, in the terminal. Per role (or per warp) a
//! stacked bar of warp states and the states ranked with their Nsight Compute names, then each
//! unit's busy fraction. Uses only the trace's summary (`otherData`): the events are parsed
//! and skipped, never held in memory. `--csv` and `--json` give the same numbers to scripts.

use crate::observe::trace_read::{self, ReadError};
use crate::observe::warp_state::State;
use anstyle::{RgbColor, Style};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

const BAR: usize = 60;

/// One row: a role or a warp, its warp-cycles per state.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub name: String,
    pub warps: u64,
    pub cycles: u64,
    pub states: BTreeMap<String, u64>,
    /// `mbarrier_wait` cycles by the mbarrier waited on.
    pub mbarrier_waits: BTreeMap<String, u64>,
    /// `wgmma_wait` cycles at a `Wgmma`'s issue (`issue`) and in `wait_group`.
    pub wgmma_waits: BTreeMap<String, u64>,
}

impl Row {
    /// States by descending share (ties by name).
    pub fn ranked(&self) -> Vec<(State, u64)> {
        let mut v: Vec<(State, u64)> = State::ALL
            .iter()
            .map(|&s| (s, *self.states.get(s.name()).unwrap_or(&0)))
            .filter(|&(_, c)| c > 0)
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.name().cmp(b.0.name())));
        v
    }

    /// The state holding most cycles apart from issuing (`selected`).
    pub fn top_stall(&self) -> Option<State> {
        self.ranked()
            .into_iter()
            .find(|(s, _)| *s != State::Selected)
            .map(|(s, _)| s)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StallsError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{0}: the trace's summary has no warps")]
    NoWarps(String),
}

#[derive(Debug, Serialize)]
pub struct Stalls {
    pub scenario: String,
    pub gpu: String,
    pub rows: Vec<Row>,
    pub units: BTreeMap<String, f64>,
}

/// A JSON object of warp-cycle counts.
pub(crate) fn states_of(v: &Value) -> BTreeMap<String, u64> {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, c)| c.as_u64().map(|c| (k.clone(), c)))
                .collect()
        })
        .unwrap_or_default()
}

/// One warp's row from a trace summary's `warps` entry.
fn warp_row(w: &Value) -> Row {
    Row {
        name: format!("{} (CTA {}, SM {})", text(&w["name"]), w["cta"], w["sm"]),
        warps: 1,
        cycles: w["lifetime"].as_u64().unwrap_or(0),
        states: states_of(&w["states"]),
        mbarrier_waits: states_of(&w["mbarrier_waits"]),
        wgmma_waits: states_of(&w["wgmma_waits"]),
    }
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or("?").to_string()
}

/// A row per role of a trace's summary (`otherData`), in the kernel's order.
pub fn role_rows(other: &Value) -> Vec<Row> {
    let order = other["role_order"].as_array().into_iter().flatten();
    order
        .map(|role| {
            let r = &other["report"]["roles"][text(role)];
            Row {
                name: text(role),
                warps: r["warps"].as_u64().unwrap_or(0),
                cycles: r["lifetime"].as_u64().unwrap_or(0),
                states: states_of(&r["states"]),
                mbarrier_waits: states_of(&r["mbarrier_waits"]),
                wgmma_waits: states_of(&r["wgmma_waits"]),
            }
        })
        .collect()
}

/// A row per warpgroup of a trace's summary, summed over CTAs (`consumer1` holds every
/// `consumer1.wN`), in the order the warps come.
pub fn warpgroup_rows(other: &Value) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for w in other["warps"].as_array().into_iter().flatten() {
        let name = text(&w["name"]);
        let group = name.rsplit_once(".w").map_or(name.as_str(), |(g, _)| g);
        let one = warp_row(w);
        let row = match rows.iter().position(|r| r.name == group) {
            Some(i) => &mut rows[i],
            None => {
                rows.push(Row {
                    name: group.to_string(),
                    warps: 0,
                    cycles: 0,
                    states: BTreeMap::new(),
                    mbarrier_waits: BTreeMap::new(),
                    wgmma_waits: BTreeMap::new(),
                });
                rows.last_mut().expect("just pushed")
            }
        };
        row.warps += 1;
        row.cycles += one.cycles;
        for (into, from) in [
            (&mut row.states, one.states),
            (&mut row.mbarrier_waits, one.mbarrier_waits),
            (&mut row.wgmma_waits, one.wgmma_waits),
        ] {
            for (k, c) in from {
                *into.entry(k).or_default() += c;
            }
        }
    }
    rows
}

/// Reads the stall summary of a trace, per role or per warp.
pub fn load(path: &Path, per_warp: bool) -> Result<Stalls, StallsError> {
    let other = trace_read::read(path, |_| {})?;
    let report = &other["report"];
    let rows: Vec<Row> = if per_warp {
        other["warps"]
            .as_array()
            .into_iter()
            .flatten()
            .map(warp_row)
            .collect()
    } else {
        role_rows(&other)
    };
    if rows.is_empty() {
        return Err(StallsError::NoWarps(path.display().to_string()));
    }
    let units = report["units"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, u)| u["busy"].as_f64().map(|b| (k.clone(), b)))
                .collect()
        })
        .unwrap_or_default();
    Ok(Stalls {
        scenario: text(&report["scenario"]),
        gpu: text(&report["gpu"]),
        rows,
        units,
    })
}

/// A background of the state's colour (`#rrggbb`).
fn background(hex: &str) -> Style {
    let v = u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap_or(0);
    let rgb = RgbColor((v >> 16) as u8, (v >> 8) as u8, v as u8);
    Style::new().bg_color(Some(rgb.into()))
}

/// The readable view; `color` uses 24-bit ANSI colours, else one symbol per state.
pub fn render(s: &Stalls, color: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} on {}: warp states (% of warp-cycles; Nsight Compute name in brackets)",
        s.scenario, s.gpu
    );
    let width = s
        .rows
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(4)
        .min(40);
    for r in &s.rows {
        let total = r.cycles.max(1) as f64;
        let mut bar = String::new();
        let mut used = 0usize;
        for (state, c) in r.ranked() {
            let n = ((c as f64 / total) * BAR as f64).round() as usize;
            let n = n.min(BAR - used);
            if n == 0 {
                continue;
            }
            used += n;
            if color {
                let style = background(state.color());
                let _ = write!(bar, "{style}{}{style:#}", " ".repeat(n));
            } else {
                bar.extend(std::iter::repeat_n(state.symbol(), n));
            }
        }
        bar.push_str(&" ".repeat(BAR - used));
        let plural = if r.warps == 1 { "" } else { "s" };
        let _ = writeln!(o, "  {:<width$} |{bar}| {} warp{plural}", r.name, r.warps);
        let ranked: Vec<String> = r
            .ranked()
            .into_iter()
            .map(|(st, c)| {
                let pct = 100.0 * c as f64 / total;
                if st.ncu() == st.name() {
                    format!("{} {pct:.1}%", st.name())
                } else {
                    format!("{} {pct:.1}% [{}]", st.name(), st.ncu())
                }
            })
            .collect();
        let _ = writeln!(o, "  {:<width$}  {}", "", ranked.join(", "));
        if let Some(top) = r.top_stall() {
            let mut line = format!("top stall: {} [{}]", top.name(), top.ncu());
            let (why, places) = match top {
                State::MbarrierWait => ("waiting on", &r.mbarrier_waits),
                State::WgmmaWait => ("at", &r.wgmma_waits),
                _ => ("", &BTreeMap::new()),
            };
            if !places.is_empty() {
                let _ = write!(line, ", {why} {}", shares(places));
            }
            let _ = writeln!(o, "  {:<width$}  {line}", "");
        }
    }
    if !color {
        let legend: Vec<String> = State::ALL
            .iter()
            .map(|s| format!("{} {}", s.symbol(), s.name()))
            .collect();
        let _ = writeln!(o, "legend: {}", legend.join(", "));
    }
    let units: Vec<String> = s
        .units
        .iter()
        .map(|(u, b)| format!("{u} {:.1}%", 100.0 * b))
        .collect();
    let _ = writeln!(o, "units busy: {}", units.join(", "));
    o
}

/// `role,state,ncu,warp_cycles,fraction` rows.
pub fn csv(s: &Stalls) -> String {
    let mut o = String::from("row,state,ncu,warp_cycles,fraction\n");
    for r in &s.rows {
        for st in State::ALL {
            let c = *r.states.get(st.name()).unwrap_or(&0);
            let f = c as f64 / r.cycles.max(1) as f64;
            let name = if r.name.contains(',') {
                format!("\"{}\"", r.name)
            } else {
                r.name.clone()
            };
            let _ = writeln!(o, "{name},{},{},{c},{f:.6}", st.name(), st.ncu());
        }
    }
    o
}

/// Each sub-reason's share of the total, largest first (ties by name).
pub fn ranked_shares(by: &BTreeMap<String, u64>) -> Vec<(&str, f64)> {
    let total = by.values().sum::<u64>().max(1) as f64;
    let mut ranked: Vec<(&String, &u64)> = by.iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    ranked
        .into_iter()
        .map(|(m, &c)| (m.as_str(), c as f64 / total))
        .collect()
}

/// `full 75%, empty 25%`: each sub-reason's share, largest first (ties by name).
fn shares(by: &BTreeMap<String, u64>) -> String {
    ranked_shares(by)
        .iter()
        .map(|(m, f)| format!("{m} {:.0}%", 100.0 * f))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Row {
        let mut states = BTreeMap::new();
        states.insert("selected".to_string(), 30);
        states.insert("mbarrier_wait".to_string(), 60);
        states.insert("wait".to_string(), 10);
        let mut mbarrier_waits = BTreeMap::new();
        mbarrier_waits.insert("full".to_string(), 45);
        mbarrier_waits.insert("empty".to_string(), 15);
        Row {
            name: "consumer".into(),
            warps: 8,
            cycles: 100,
            states,
            mbarrier_waits,
            wgmma_waits: BTreeMap::new(),
        }
    }

    #[test]
    fn bars_are_proportional_and_the_top_stall_is_not_issuing() {
        let r = row();
        assert_eq!(r.top_stall(), Some(State::MbarrierWait));
        let s = Stalls {
            scenario: "x".into(),
            gpu: "h100-sxm".into(),
            rows: vec![r],
            units: BTreeMap::new(),
        };
        let text = render(&s, false);
        let bar_line = text.lines().nth(1).unwrap();
        assert!(bar_line.contains(&"B".repeat(36)), "{bar_line}");
        assert!(bar_line.contains(&"#".repeat(18)), "{bar_line}");
        assert!(text.contains("mbarrier_wait 60.0% [long_scoreboard], selected 30.0%, wait 10.0%"));
        assert!(text.contains(
            "top stall: mbarrier_wait [long_scoreboard], waiting on full 75%, empty 25%"
        ));
        assert!(!text.contains('\x1b'));
        assert!(render(&s, true).contains("\x1b[48;2;229;57;53m"));
        let c = csv(&s);
        assert!(c.contains("consumer,mbarrier_wait,long_scoreboard,60,0.600000"));
    }

    #[test]
    fn a_wgmma_wait_top_stall_says_where_it_waited() {
        let mut r = row();
        r.states.insert("wgmma_wait".to_string(), 80);
        r.wgmma_waits.insert("wait_group".to_string(), 20);
        r.wgmma_waits.insert("issue".to_string(), 60);
        assert_eq!(r.top_stall(), Some(State::WgmmaWait));
        let s = Stalls {
            scenario: "x".into(),
            gpu: "h100-sxm".into(),
            rows: vec![r],
            units: BTreeMap::new(),
        };
        assert!(render(&s, false)
            .contains("top stall: wgmma_wait [barrier], at issue 75%, wait_group 25%"));
    }
}
