//! Trace output in Chrome Trace Event JSON, which ui.perfetto.dev and chrome://tracing open as
//! they are. One process per SM (plus one for GPU-wide counters), one thread per warp; warp
//! states are duration slices, mbarrier phase flips, TMA completions and named-barrier releases
//! are instant events, and unit busy fractions are counter tracks sampled every few thousand
//! cycles. One trace time unit is one SM cycle (said in `otherData`).
//!
//! The writer streams: events go to disk as the engine reports them, and memory stays bounded
//! by the number of warps (one pending merged slice each). At the `warps` level, runs of short
//! intervals are merged into slices of at least [`MIN_SLICE`] cycles, named by their dominant
//! state, with the exact cycles of every state in `args`; each warp's slices still tile its
//! lifetime exactly. The `instructions` level writes every interval with its instruction.

use crate::observe::warp_state::State;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Shortest merged slice at the `warps` level, in cycles.
pub const MIN_SLICE: u64 = 64;
/// The process id of GPU-wide counter tracks.
pub const GPU_PID: u32 = 100_000;

/// The per-SM unit busy fractions in each `busy` counter sample, in this order.
pub const BUSY_UNITS: [&str; 6] = ["tensor", "smem", "mufu", "tma", "l2_port", "tma_fill"];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Counter tracks only.
    Summary,
    /// Warp-state slices (short intervals merged) and barrier/TMA events.
    Warps,
    /// Every state interval, each with the instruction it belongs to.
    Instructions,
}

impl Level {
    /// Cycles between counter samples.
    pub fn sample_every(self) -> u64 {
        match self {
            Level::Summary => 4096,
            Level::Warps | Level::Instructions => 1024,
        }
    }
}

/// What to trace.
#[derive(Clone, Debug)]
pub struct Filter {
    pub level: Level,
    pub sms: Option<Range<u32>>,
    pub window: Option<Range<u64>>,
}

impl Filter {
    fn sm(&self, sm: u32) -> bool {
        self.sms.as_ref().is_none_or(|r| r.contains(&sm))
    }
    /// The part of [start, end) inside the window, if any.
    fn clip(&self, start: u64, end: u64) -> Option<(u64, u64)> {
        let (lo, hi) = match &self.window {
            Some(w) => (start.max(w.start), end.min(w.end)),
            None => (start, end),
        };
        (lo < hi).then_some((lo, hi))
    }
}

/// One Chrome trace event.
#[derive(Serialize)]
struct Event<'a> {
    name: &'a str,
    ph: &'a str,
    ts: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<u64>,
    pid: u32,
    tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'a str>,
    #[serde(skip_serializing_if = "Value::is_null")]
    args: Value,
}

/// A warp's merged-but-not-written slice.
#[derive(Clone, Debug, Default)]
struct Pending {
    start: u64,
    end: u64,
    cycles: [u64; State::COUNT],
    intervals: u32,
}

/// Identity of a traced warp.
#[derive(Clone, Debug)]
pub struct WarpInfo {
    pub sm: u32,
    pub name: String,
    pub cta: u32,
}

pub struct Tracer {
    out: BufWriter<File>,
    /// The trace is written to `tmp` beside `path` and renamed onto it when complete, so a
    /// failed write or a concurrent run never leaves a mixed or partial file under `path`.
    path: PathBuf,
    tmp: PathBuf,
    renamed: bool,
    filter: Filter,
    first: bool,
    pending: Vec<Option<Pending>>,
    warps: Vec<WarpInfo>,
    named_sms: Vec<bool>,
    events: u64,
    error: Option<io::Error>,
}

impl Tracer {
    pub fn create(path: &Path, filter: Filter) -> io::Result<Tracer> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        // Unique per process and per tracer: concurrent runs, and tests in one process.
        static SERIAL: AtomicU64 = AtomicU64::new(0);
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(format!(
            ".{}.{}.tmp",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let tmp = path.with_file_name(name);
        let mut out = BufWriter::new(File::create(&tmp)?);
        out.write_all(b"{\"traceEvents\":[\n")?;
        Ok(Tracer {
            out,
            path: path.to_path_buf(),
            tmp,
            renamed: false,
            filter,
            first: true,
            pending: Vec::new(),
            warps: Vec::new(),
            named_sms: Vec::new(),
            events: 0,
            error: None,
        })
    }

    pub fn level(&self) -> Level {
        self.filter.level
    }

    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    fn write(&mut self, e: &Event) {
        if self.error.is_some() {
            return;
        }
        let sep: &[u8] = if self.first { b"" } else { b",\n" };
        self.first = false;
        let r = self
            .out
            .write_all(sep)
            .and_then(|()| serde_json::to_writer(&mut self.out, e).map_err(io::Error::from));
        if let Err(err) = r {
            self.error = Some(err);
        }
        self.events += 1;
    }

    fn name_sm(&mut self, sm: u32) {
        let i = sm as usize;
        if self.named_sms.len() <= i {
            self.named_sms.resize(i + 1, false);
        }
        if !self.named_sms[i] {
            self.named_sms[i] = true;
            self.meta("process_name", sm, 0, json!({ "name": format!("SM {sm}") }));
            self.meta("process_sort_index", sm, 0, json!({ "sort_index": sm }));
        }
    }

    fn meta(&mut self, name: &str, pid: u32, tid: u32, args: Value) {
        self.write(&Event {
            name,
            ph: "M",
            ts: 0,
            dur: None,
            pid,
            tid,
            s: None,
            args,
        });
    }

    /// A warp was launched; `id` is its engine-wide index (its thread id in the trace).
    pub fn warp(&mut self, id: u32, info: WarpInfo) {
        let i = id as usize;
        if self.warps.len() <= i {
            self.warps.resize(
                i + 1,
                WarpInfo {
                    sm: 0,
                    name: String::new(),
                    cta: 0,
                },
            );
            self.pending.resize(i + 1, None);
        }
        if self.filter.level != Level::Summary && self.filter.sm(info.sm) {
            self.name_sm(info.sm);
            let label = format!("{} (CTA {})", info.name, info.cta);
            self.meta("thread_name", info.sm, id, json!({ "name": label }));
            self.meta(
                "thread_sort_index",
                info.sm,
                id,
                json!({ "sort_index": id }),
            );
        }
        self.warps[i] = info;
    }

    /// Warp `id` spent [start, end) in `state`; `what` names its instruction.
    pub fn interval(&mut self, id: u32, state: State, start: u64, end: u64, what: &str) {
        let sm = self.warps[id as usize].sm;
        if self.filter.level == Level::Summary || !self.filter.sm(sm) {
            return;
        }
        let Some((start, end)) = self.filter.clip(start, end) else {
            return;
        };
        // Every interval is its own slice at the instructions level; at the warps level only
        // long ones are (after the pending merged slice), short ones merge.
        if self.filter.level == Level::Instructions || end - start >= MIN_SLICE {
            self.flush(id);
            let args = json!({ "instruction": what, "ncu": state.ncu() });
            self.slice(id, sm, state.name(), start, end, args);
            return;
        }
        let p = self.pending[id as usize].get_or_insert(Pending {
            start,
            ..Pending::default()
        });
        p.end = end;
        p.cycles[state as usize] += end - start;
        p.intervals += 1;
        if p.end - p.start >= MIN_SLICE {
            self.flush(id);
        }
    }

    /// Writes warp `id`'s pending merged slice.
    fn flush(&mut self, id: u32) {
        let Some(p) = self.pending[id as usize].take() else {
            return;
        };
        let sm = self.warps[id as usize].sm;
        let (dominant, _) = State::ALL
            .iter()
            .map(|&s| (s, p.cycles[s as usize]))
            .max_by_key(|&(s, c)| (c, std::cmp::Reverse(s)))
            .unwrap_or((State::Selected, 0));
        let states: BTreeMap<&str, u64> = State::ALL
            .iter()
            .filter(|&&s| p.cycles[s as usize] > 0)
            .map(|&s| (s.name(), p.cycles[s as usize]))
            .collect();
        self.slice(
            id,
            sm,
            dominant.name(),
            p.start,
            p.end,
            json!({ "merged": p.intervals, "states": states }),
        );
    }

    fn slice(&mut self, id: u32, sm: u32, name: &str, start: u64, end: u64, args: Value) {
        self.write(&Event {
            name,
            ph: "X",
            ts: start,
            dur: Some(end - start),
            pid: sm,
            tid: id,
            s: None,
            args,
        });
    }

    /// A notable moment on an SM (an mbarrier phase flip, a TMA completion, a named-barrier
    /// release), drawn as an instant on the SM's track.
    pub fn instant(&mut self, sm: u32, at: u64, name: &str, args: Value) {
        if self.filter.level == Level::Summary
            || !self.filter.sm(sm)
            || self.filter.clip(at, at + 1).is_none()
        {
            return;
        }
        self.name_sm(sm);
        self.write(&Event {
            name,
            ph: "i",
            ts: at,
            dur: None,
            pid: sm,
            tid: 0,
            s: Some("p"),
            args,
        });
    }

    /// Counter samples: `series` values at cycle `at` for SM `sm` (or [`GPU_PID`]).
    pub fn counters(&mut self, pid: u32, name: &str, at: u64, series: Value) {
        let traced = if pid == GPU_PID {
            true
        } else {
            self.filter.sm(pid)
        };
        if !traced || self.filter.clip(at, at + 1).is_none() {
            return;
        }
        if pid != GPU_PID {
            self.name_sm(pid);
        }
        self.write(&Event {
            name,
            ph: "C",
            ts: at,
            dur: None,
            pid,
            tid: 0,
            s: None,
            args: series,
        });
    }

    /// Ends the trace: flushes merged slices and writes `otherData`. Returns the number of
    /// events written.
    pub fn finish(mut self, other: Value) -> io::Result<u64> {
        for id in 0..self.pending.len() as u32 {
            self.flush(id);
        }
        self.meta(
            "process_name",
            GPU_PID,
            0,
            json!({ "name": "GPU (L2, HBM)" }),
        );
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let tail = json!({ "displayTimeUnit": "ns", "otherData": other });
        let Value::Object(tail) = tail else {
            unreachable!("json! of an object literal is an object")
        };
        self.out.write_all(b"\n]")?;
        for (k, v) in tail {
            write!(self.out, ",\n{}:", serde_json::to_string(&k)?)?;
            serde_json::to_writer(&mut self.out, &v)?;
        }
        self.out.write_all(b"}\n")?;
        self.out.flush()?;
        std::fs::rename(&self.tmp, &self.path)?;
        self.renamed = true;
        Ok(self.events)
    }
}

impl Drop for Tracer {
    /// An unfinished or failed trace leaves no file behind.
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
