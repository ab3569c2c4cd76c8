//! What `sim report`'s interactive views draw, read from a trace's events one at a time: each
//! traced warp's slices as the rows of a per-SM timeline, one mainloop iteration of each
//! warpgroup from its wgmma groups, and each SM's unit counters. [`Views::data`] is the JSON
//! the page's script (`report.js`) draws from.

use crate::observe::trace::{self, BUSY_UNITS, EVENT_TID_BASE, GPU_PID};
use crate::observe::trace_read::TraceEvent;
use crate::observe::warp_state::State;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Most warp slices a page holds; past it, short slices are merged ([`coarsen`]) so that the
/// page stays a few MB whatever the trace's size.
pub const MAX_SLICES: usize = 200_000;

/// One slice of a warp: [start, end), its name (a string index) and its cycles per state
/// index, in state order.
#[derive(Clone, Debug, PartialEq)]
struct Slice {
    start: u64,
    end: u64,
    name: u32,
    states: Vec<(u8, u64)>,
}

struct Warp {
    sm: u32,
    name: String,
    cta: u32,
    slices: Vec<Slice>,
}

/// A wgmma group: its first commit, its completion, the committing warp's thread and the
/// commit's path (a string index).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Group {
    commit: u64,
    done: u64,
    tid: u32,
    path: u32,
}

/// Strings the page's data refers to by index, in order of first use.
#[derive(Default)]
struct Strings {
    list: Vec<String>,
    index: HashMap<String, u32>,
}

impl Strings {
    fn of(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// Collects the views from the trace's events ([`Collector::add`]), then builds them
/// ([`Collector::finish`]).
#[derive(Default)]
pub struct Collector {
    /// By thread id.
    warps: BTreeMap<u32, Warp>,
    strings: Strings,
    slices: usize,
    /// Slices shorter than this many cycles have been merged (0: none).
    quantum: u64,
    /// Async wgmma slices begun, by id: their SM, warpgroup and group.
    open: HashMap<u64, (u32, u64, Group)>,
    /// Per SM, the wgmma groups by their warpgroup's engine-wide index.
    groups: BTreeMap<u32, BTreeMap<u64, Vec<Group>>>,
    /// Per SM, its `busy` samples: start cycle and each unit's busy fraction.
    busy: BTreeMap<u32, Vec<(u64, [f64; BUSY_UNITS.len()])>>,
    /// GPU-wide samples: start cycle, L2 and DRAM bytes per cycle.
    bandwidth: Vec<(u64, f64, f64)>,
}

impl Collector {
    pub fn add(&mut self, e: TraceEvent) {
        match (e.ph.as_str(), e.cat.as_str()) {
            ("M", _) if e.name == "thread_name" && e.tid < EVENT_TID_BASE => {
                if let Some((name, cta)) = e.args["name"].as_str().and_then(trace::parse_warp_label)
                {
                    let warp = Warp {
                        sm: trace::pid_sm(e.pid),
                        name: name.to_string(),
                        cta,
                        slices: Vec::new(),
                    };
                    self.warps.insert(e.tid, warp);
                }
            }
            ("X", _) => {
                let Some(w) = self.warps.get_mut(&e.tid) else {
                    return;
                };
                let end = e.ts + e.dur.unwrap_or(0);
                let name = match e.args["instruction"].as_str() {
                    // The instruction, then where it is in the program.
                    Some(path) => self.strings.of(&format!("{}\n{path}", e.name)),
                    None => self
                        .strings
                        .of(&format!("{} (short intervals merged)", e.name)),
                };
                let states = match e.args["states"].as_object() {
                    Some(m) => {
                        let mut v: Vec<(u8, u64)> = m
                            .iter()
                            .filter_map(|(k, c)| Some((State::from_name(k)? as u8, c.as_u64()?)))
                            .collect();
                        v.sort_unstable();
                        v
                    }
                    None => State::from_name(&e.cat)
                        .map(|s| vec![(s as u8, end - e.ts)])
                        .unwrap_or_default(),
                };
                w.slices.push(Slice {
                    start: e.ts,
                    end,
                    name,
                    states,
                });
                self.slices += 1;
                if self.slices > MAX_SLICES {
                    self.shrink();
                }
            }
            ("b", "wgmma") => {
                let group = Group {
                    commit: e.ts,
                    done: e.ts,
                    tid: e.args["tid"].as_u64().unwrap_or(0) as u32,
                    path: self.strings.of(e.args["commit"].as_str().unwrap_or("")),
                };
                let wg = e.args["warpgroup"].as_u64().unwrap_or(0);
                if let Some(id) = e.id {
                    self.open.insert(id, (trace::pid_sm(e.pid), wg, group));
                }
            }
            ("e", "wgmma") => {
                if let Some((sm, wg, mut g)) = e.id.and_then(|id| self.open.remove(&id)) {
                    g.done = e.ts;
                    self.groups
                        .entry(sm)
                        .or_default()
                        .entry(wg)
                        .or_default()
                        .push(g);
                }
            }
            ("C", _) if e.pid == GPU_PID => self.bandwidth.push((
                e.ts,
                e.args["l2_bytes_per_cycle"].as_f64().unwrap_or(0.0),
                e.args["dram_bytes_per_cycle"].as_f64().unwrap_or(0.0),
            )),
            ("C", _) => {
                let v = BUSY_UNITS.map(|u| e.args[u].as_f64().unwrap_or(0.0));
                self.busy
                    .entry(trace::pid_sm(e.pid))
                    .or_default()
                    .push((e.ts, v));
            }
            _ => {}
        }
    }

    /// Merges short slices until the slices are 3/4 of the limit (the rest leaves room for
    /// those still to come): at the current shortest kept first, which may do for the slices
    /// read since the last merge, then doubling it.
    fn shrink(&mut self) {
        loop {
            self.merge();
            if self.slices <= MAX_SLICES / 4 * 3 {
                return;
            }
            self.quantum = (self.quantum * 2).max(2);
        }
    }

    /// Merges every warp's runs of slices shorter than the quantum, if any.
    fn merge(&mut self) {
        if self.quantum == 0 {
            return;
        }
        self.slices = 0;
        for w in self.warps.values_mut() {
            w.slices = coarsen(
                std::mem::take(&mut w.slices),
                self.quantum,
                &mut self.strings,
            );
            self.slices += w.slices.len();
        }
    }

    /// The views, with `other` (the trace's `otherData`) for the run's end, waves and peaks.
    pub fn finish(mut self, other: &Value) -> Views {
        // Slices read after the last merge, merged as the earlier ones were.
        self.merge();
        let report = &other["report"];
        let int = |v: &Value| v.as_u64().unwrap_or(0);
        let waves = int(&report["waves"]);
        // CTAs launch in order, a wave filling every CTA slot of the GPU.
        let last_wave = (waves > 1)
            .then(|| (waves - 1) * int(&report["sms_total"]) * int(&report["ctas_per_sm"]).max(1));
        let mut sms: BTreeSet<u32> = self.busy.keys().copied().collect();
        sms.extend(
            self.warps
                .values()
                .filter(|w| !w.slices.is_empty())
                .map(|w| w.sm),
        );
        let mut summaries = Vec::new();
        let mut data = Vec::new();
        for sm in sms {
            let (rows, row_of) = self.rows(sm);
            let ctas: BTreeSet<u32> = self
                .warps
                .values()
                .filter(|w| w.sm == sm)
                .map(|w| w.cta)
                .collect();
            let summary = SmSummary {
                sm,
                last_wave: last_wave.is_some_and(|f| ctas.iter().any(|&c| u64::from(c) >= f)),
                ctas: ctas.into_iter().collect(),
            };
            let busy = self.busy.get(&sm).map(|b| {
                let mut v = serde_json::Map::new();
                v.insert("t".into(), json!(b.iter().map(|s| s.0).collect::<Vec<_>>()));
                for (i, u) in BUSY_UNITS.iter().enumerate() {
                    let series: Vec<f64> = b.iter().map(|s| round4(s.1[i])).collect();
                    v.insert(u.to_string(), json!(series));
                }
                Value::Object(v)
            });
            let iteration = self.iteration(sm, &row_of);
            data.push(json!({
                "sm": sm,
                "rows": rows,
                "busy": busy,
                "iteration": iteration,
            }));
            summaries.push(summary);
        }
        let peak = &report["peak"];
        let data = json!({
            "end": int(&other["cycles"]).max(1),
            "strings": self.strings.list,
            "sms": data,
            "units": BUSY_UNITS,
            "gpu": {
                "t": self.bandwidth.iter().map(|b| b.0).collect::<Vec<_>>(),
                "l2": self.bandwidth.iter().map(|b| round4(b.1)).collect::<Vec<_>>(),
                "dram": self.bandwidth.iter().map(|b| round4(b.2)).collect::<Vec<_>>(),
                "l2_peak": peak["l2_bytes_per_cycle"],
                "dram_peak": peak["dram_bytes_per_cycle"],
            },
        });
        Views {
            sms: summaries,
            last_wave,
            slices: self.slices,
            quantum: self.quantum,
            data,
        }
    }

    /// SM `sm`'s timeline rows and the row of each of its warps (by thread id). A row holds a
    /// warp name's slices (`consumer0.w1`): the warps of successive CTAs follow each other on
    /// it; a CTA running beside another gets rows of its own.
    fn rows(&mut self, sm: u32) -> (Vec<Value>, HashMap<u32, usize>) {
        // (name, lane) → the warps on the row and where its last one ends.
        let mut lanes: BTreeMap<(usize, u32), (Vec<u32>, u64)> = BTreeMap::new();
        let mut rank: HashMap<&str, usize> = HashMap::new();
        for (&tid, w) in &self.warps {
            let (Some(first), Some(last)) = (w.slices.first(), w.slices.last()) else {
                continue;
            };
            if w.sm != sm {
                continue;
            }
            let next = rank.len();
            let r = *rank.entry(&w.name).or_insert(next);
            let lane = (0..)
                .find(|&l| {
                    lanes
                        .get(&(r, l))
                        .is_none_or(|(_, end)| *end <= first.start)
                })
                .unwrap_or(0);
            let row = lanes.entry((r, lane)).or_default();
            row.0.push(tid);
            row.1 = last.end;
        }
        let mut row_of = HashMap::new();
        let mut rows = Vec::new();
        for (i, ((_, lane), (tids, _))) in lanes.into_iter().enumerate() {
            let name = &self.warps[&tids[0]].name;
            let label = match lane {
                0 => name.clone(),
                l => format!("{name} #{}", l + 1),
            };
            let mut warps = Vec::new();
            let mut flat: Vec<i64> = Vec::new();
            let (mut n, mut at) = (0usize, 0u64);
            for tid in tids {
                row_of.insert(tid, i);
                let w = &self.warps[&tid];
                warps.push(json!([
                    self.strings.of(&trace::warp_label(&w.name, w.cta)),
                    n
                ]));
                for s in &w.slices {
                    // Gap since the row's last slice, duration, name, then the one state or
                    // the negated number of (state, cycles) pairs that follow.
                    flat.extend([
                        (s.start - at) as i64,
                        (s.end - s.start) as i64,
                        s.name.into(),
                    ]);
                    match s.states[..] {
                        [(one, _)] => flat.push(one.into()),
                        ref many => {
                            flat.push(-(many.len() as i64));
                            flat.extend(many.iter().flat_map(|&(st, c)| [st.into(), c as i64]));
                        }
                    }
                    at = s.end;
                    n += 1;
                }
            }
            rows.push(json!({ "label": label, "warps": warps, "s": flat }));
        }
        (rows, row_of)
    }

    /// One mainloop iteration of each warpgroup of SM `sm`'s CTA with the most wgmma groups
    /// (the lowest such CTA), the same iteration of each, on one axis.
    fn iteration(&self, sm: u32, row_of: &HashMap<u32, usize>) -> Value {
        let Some(groups) = self.groups.get(&sm) else {
            return Value::Null;
        };
        let cta_of = |g: &[Group]| {
            g.first()
                .and_then(|g| self.warps.get(&g.tid))
                .map(|w| w.cta)
        };
        let mut per_cta: BTreeMap<u32, usize> = BTreeMap::new();
        for g in groups.values() {
            if let Some(c) = cta_of(g) {
                *per_cta.entry(c).or_default() += g.len();
            }
        }
        let Some(cta) = per_cta
            .iter()
            .max_by_key(|&(c, n)| (n, std::cmp::Reverse(c)))
            .map(|(&c, _)| c)
        else {
            return Value::Null;
        };
        let mine: Vec<&Vec<Group>> = groups.values().filter(|g| cta_of(g) == Some(cta)).collect();
        let found: Vec<(&Vec<Group>, Vec<Iteration>)> = mine
            .into_iter()
            .filter_map(|g| {
                let paths: Vec<&str> = g
                    .iter()
                    .map(|x| self.strings.list[x.path as usize].as_str())
                    .collect();
                let its = iterations(g, &paths);
                (!its.is_empty()).then_some((g, its))
            })
            .collect();
        let Some((_, reference)) = found.first() else {
            return Value::Null;
        };
        let k = steady(reference);
        let chosen: Vec<(&Vec<Group>, &Vec<Iteration>, usize)> = found
            .iter()
            .map(|(g, its)| (*g, its, k.min(its.len() - 1)))
            .collect();
        let from = chosen.iter().map(|(_, its, i)| its[*i].start).min();
        let to = chosen.iter().map(|(_, its, i)| its[*i].end).max();
        let (Some(from), Some(to)) = (from, to) else {
            return Value::Null;
        };
        let wgs: Vec<Value> = chosen
            .into_iter()
            .map(|(g, its, i)| {
                let w = &self.warps[&g[0].tid];
                let label = w
                    .name
                    .split_once(".w")
                    .map_or(w.name.as_str(), |(wg, _)| wg);
                // Warp 0's row, for the warpgroup's states.
                let warp0 = format!("{label}.w0");
                let row = self
                    .warps
                    .iter()
                    .find(|(_, x)| x.sm == sm && x.cta == w.cta && x.name == warp0)
                    .and_then(|(tid, _)| row_of.get(tid));
                // Each group's place in its iteration (1, 2, …; 0 outside the loop).
                let mut nth = vec![0; g.len()];
                for it in its.iter() {
                    for (p, &j) in it.members.iter().enumerate() {
                        nth[j] = p + 1;
                    }
                }
                let gemms: Vec<Value> = (0..g.len())
                    .filter(|&j| g[j].done > from && g[j].commit < to)
                    .map(|j| {
                        // On the pipe once the warpgroup's group before it is done.
                        let runs = g[j].commit.max(if j > 0 { g[j - 1].done } else { 0 });
                        json!([runs, g[j].done, nth[j], g[j].commit, g[j].path, j + 1])
                    })
                    .collect();
                json!({
                    "label": trace::warp_label(label, w.cta),
                    "row": row,
                    "iteration": [its[i].start, its[i].end],
                    "index": i + 1,
                    "count": its.len(),
                    "groups": g.len(),
                    "gemms": gemms,
                })
            })
            .collect();
        json!({ "from": from, "to": to, "wgs": wgs })
    }
}

/// Rounded to 4 decimals: the page needs no more, and stays smaller.
fn round4(v: f64) -> f64 {
    (v * 1e4).round() / 1e4
}

/// What [`Collector::finish`] found.
pub struct Views {
    /// The SMs with slices or counters, in order.
    pub sms: Vec<SmSummary>,
    /// The first CTA of the last wave, when there are several waves.
    pub last_wave: Option<u64>,
    pub slices: usize,
    /// Slices shorter than this were merged for the page (0: none were).
    pub quantum: u64,
    pub data: Value,
}

pub struct SmSummary {
    pub sm: u32,
    pub ctas: Vec<u32>,
    /// Whether one of its CTAs ran in the last wave.
    pub last_wave: bool,
}

/// Merges runs of a warp's slices shorter than `quantum` cycles into slices of at least that
/// long (as the tracer merges intervals into slices), adding up their states.
fn coarsen(slices: Vec<Slice>, quantum: u64, strings: &mut Strings) -> Vec<Slice> {
    let merged = strings.of("slices merged for the page");
    let mut out: Vec<Slice> = Vec::with_capacity(slices.len() / 2);
    let mut pending: Option<Slice> = None;
    for s in slices {
        if let Some(p) = pending
            .as_mut()
            .filter(|p| p.end == s.start && s.end - s.start < quantum)
        {
            p.end = s.end;
            if p.name != s.name {
                p.name = merged;
            }
            for (st, c) in s.states {
                match p.states.binary_search_by_key(&st, |x| x.0) {
                    Ok(i) => p.states[i].1 += c,
                    Err(i) => p.states.insert(i, (st, c)),
                }
            }
        } else {
            out.extend(pending.take());
            pending = Some(s);
        }
        if pending.as_ref().is_some_and(|p| p.end - p.start >= quantum) {
            out.extend(pending.take());
        }
    }
    out.extend(pending);
    out
}

/// One loop iteration of a warpgroup: from the commit of its first wgmma group to that of the
/// next iteration's (the last: to its last group's completion), and its groups' indices.
#[derive(Clone, Debug, PartialEq)]
struct Iteration {
    start: u64,
    end: u64,
    first: usize,
    members: Vec<usize>,
}

/// The iterations of the loop holding most of the warpgroup's groups (`paths`: each group's
/// commit). Within one iteration the commits come in program order, so a commit at or before
/// the previous one's place in the loop's body starts the next iteration.
fn iterations(groups: &[Group], paths: &[&str]) -> Vec<Iteration> {
    let places: Vec<Option<(&str, Vec<u32>)>> = paths.iter().map(|p| loop_place(p)).collect();
    let mut count: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (i, p) in places.iter().enumerate() {
        if let Some((l, _)) = p {
            count.entry(l).or_insert((0, i)).0 += 1;
        }
    }
    // Most groups; the earliest loop on a tie.
    let Some(main) = count
        .iter()
        .max_by_key(|(_, &(n, first))| (n, std::cmp::Reverse(first)))
        .map(|(&l, _)| l)
    else {
        return Vec::new();
    };
    let mut its: Vec<Iteration> = Vec::new();
    let mut last: Option<&[u32]> = None;
    for (j, p) in places.iter().enumerate() {
        let Some((_, at)) = p.as_ref().filter(|(l, _)| *l == main) else {
            continue;
        };
        if last.is_none_or(|l| at.as_slice() <= l) {
            if let Some(prev) = its.last_mut() {
                prev.end = groups[j].commit;
            }
            its.push(Iteration {
                start: groups[j].commit,
                end: groups[j].done,
                first: j,
                members: Vec::new(),
            });
        }
        let it = its.last_mut().expect("pushed above");
        it.members.push(j);
        last = Some(at);
    }
    if let Some(it) = its.last_mut() {
        it.end = it
            .members
            .iter()
            .map(|&j| groups[j].done)
            .max()
            .unwrap_or(it.end);
    }
    its
}

/// The innermost loop of a path (the path up to `loop(v)`) and the place in its body:
/// `… loop(i).body[6] if.then[2] wgmma.commit_group` → `(…loop(i), [6, 2])`.
fn loop_place(path: &str) -> Option<(&str, Vec<u32>)> {
    let at = path.rfind("loop(")?;
    let close = at + path[at..].find(')')?;
    let rest = &path[close + 1..];
    let place = rest
        .split('[')
        .skip(1)
        .filter_map(|s| s.split(']').next()?.parse().ok())
        .collect();
    Some((&path[..=close], place))
}

/// A steady-state iteration: the one nearest the middle among those lasting at most 5/4 of the
/// median (so not one that spans an epilogue, or the last).
fn steady(its: &[Iteration]) -> usize {
    let mut d: Vec<u64> = its.iter().map(|i| i.end - i.start).collect();
    d.sort_unstable();
    let median = d[d.len() / 2];
    let mid = its.len() / 2;
    (0..its.len())
        .filter(|&i| 4 * (its[i].end - its[i].start) <= 5 * median)
        .min_by_key(|&i| (i.abs_diff(mid), i))
        .unwrap_or(mid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(start: u64, end: u64, name: u32, states: &[(u8, u64)]) -> Slice {
        Slice {
            start,
            end,
            name,
            states: states.to_vec(),
        }
    }

    #[test]
    fn places_in_the_innermost_loop() {
        let p =
            "role `consumer`: program[3] if.then[15] loop(i).body[6] if.then[2] wgmma.commit_group";
        assert_eq!(
            loop_place(p),
            Some((
                "role `consumer`: program[3] if.then[15] loop(i)",
                vec![6, 2]
            ))
        );
        let nested = "role `c`: program[1] loop(t).body[2] loop(kb).body[4] wgmma.commit_group";
        assert_eq!(loop_place(nested).unwrap().1, vec![4]);
        assert_eq!(loop_place("role `c`: program[2] wgmma.commit_group"), None);
    }

    /// FA3's consumer: a prologue group, two groups an iteration (S = Q Kᵀ, then O += P V),
    /// an epilogue group.
    #[test]
    fn iterations_start_where_the_loop_body_wraps() {
        let l = "role `consumer`: program[3] if.then[15] loop(i)";
        let (s, pv) = (
            format!("{l}.body[5] wgmma.commit_group"),
            format!("{l}.body[8] wgmma.commit_group"),
        );
        let mut paths =
            vec!["role `consumer`: program[3] if.then[4] wgmma.commit_group".to_string()];
        for _ in 0..3 {
            paths.extend([s.clone(), pv.clone()]);
        }
        paths.push("role `consumer`: program[3] if.then[18] wgmma.commit_group".into());
        let groups: Vec<Group> = (0..paths.len() as u64)
            .map(|i| Group {
                commit: 100 * i,
                done: 100 * i + 80,
                tid: 1,
                path: 0,
            })
            .collect();
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let its = iterations(&groups, &refs);
        assert_eq!(its.len(), 3);
        assert_eq!(
            its[0],
            Iteration {
                start: 100,
                end: 300,
                first: 1,
                members: vec![1, 2]
            }
        );
        assert_eq!(
            (its[2].start, its[2].end),
            (500, 680),
            "the last ends with its last group"
        );
        // A branch taken on alternate iterations still starts each one.
        let alt = [
            format!("{l}.body[5] if.then[0] wgmma.commit_group"),
            format!("{l}.body[5] if.else[0] wgmma.commit_group"),
        ];
        let refs: Vec<&str> = (0..4).map(|i| alt[i % 2].as_str()).collect();
        assert_eq!(iterations(&groups[..4], &refs).len(), 4);
    }

    #[test]
    fn the_steady_iteration_is_the_middle_one_of_typical_length() {
        let its: Vec<Iteration> = [100, 100, 100, 400, 100, 100]
            .iter()
            .scan(0, |at, &d| {
                *at += d;
                Some(Iteration {
                    start: *at - d,
                    end: *at,
                    first: 0,
                    members: vec![],
                })
            })
            .collect();
        // The middle (index 3) spans an epilogue: its neighbour below is taken.
        assert_eq!(steady(&its), 2);
        assert_eq!(steady(&its[..1]), 0);
    }

    #[test]
    fn coarsening_merges_short_runs_and_keeps_long_slices() {
        let mut strings = Strings::default();
        let (a, b) = (strings.of("a"), strings.of("b"));
        let slices = vec![
            slice(0, 40, a, &[(0, 40)]),
            slice(40, 100, a, &[(1, 60)]),
            slice(100, 400, b, &[(2, 300)]),
            slice(400, 450, b, &[(0, 20), (3, 30)]),
        ];
        let out = coarsen(slices, 128, &mut strings);
        assert_eq!(
            out,
            vec![
                slice(0, 100, a, &[(0, 40), (1, 60)]),
                slice(100, 400, b, &[(2, 300)]),
                slice(400, 450, b, &[(0, 20), (3, 30)]),
            ]
        );
        let mixed = coarsen(out.clone(), 1024, &mut strings);
        assert_eq!(
            mixed,
            vec![slice(
                0,
                450,
                strings.of("slices merged for the page"),
                &[(0, 60), (1, 60), (2, 300), (3, 30)]
            )]
        );
        let total: u64 = mixed.iter().flat_map(|s| &s.states).map(|x| x.1).sum();
        assert_eq!(total, 450, "every cycle kept");
    }
}
