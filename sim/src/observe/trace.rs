//! Trace output in Chrome Trace Event JSON, which ui.perfetto.dev and chrome://tracing open as
//! they are. One process per SM (plus one for GPU-wide counters); in it one thread per warp and
//! two event threads, `TMA` and `barriers`. Warp states are duration slices named by their
//! instruction (or, when merged, by the loop they ran in) with their state as `cat`; TMA
//! completions, mbarrier phase flips and named-barrier releases are one-cycle slices on the
//! event threads; flow arrows link a TMA load's issue to its completion, a phase flip to each
//! warp it wakes, and a `wgmma.commit_group` to the `wait_group` it releases; async slices show
//! each TMA box and each wgmma group in flight; unit busy fractions and bandwidths are counter
//! tracks sampled every few thousand cycles.
//!
//! Time: the format's `ts` and `dur` are microseconds, and viewers ignore `displayTimeUnit`,
//! so one cycle is written as one nanosecond (`ts = cycles / 1000`, [`Micros`]): time axes then
//! read in cycles. Process and thread ids start at 1 ([`sm_pid`], [`warp_tid`]).
//!
//! The writer streams: events go to disk as the engine reports them, and memory stays bounded
//! by the number of warps and of loads and groups in flight. At the `warps` level, runs of short
//! intervals are merged into slices of at least [`MIN_SLICE`] cycles, with the exact cycles of
//! every state in `args`; each warp's slices still tile its lifetime exactly. The
//! `instructions` level writes every interval as its own slice.

use crate::observe::warp_state::State;
use flate2::write::GzEncoder;
use flate2::Compression;
use isa::program::WARP_SIZE;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Default of the trace's size limit ([`Tracer::create`]), in MiB of uncompressed JSON: about
/// the most ui.perfetto.dev and `sim report` still open.
pub const DEFAULT_TRACE_MAX_MB: u64 = 1024;

/// Shortest merged slice at the `warps` level, in cycles.
pub const MIN_SLICE: u64 = 64;
/// What a finished trace holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    pub events: u64,
    /// The cycle of the first event the size limit left out, if it was reached.
    pub truncated_at: Option<u64>,
}

/// Counts the bytes written through it.
struct Counted<'a, W>(&'a mut W, &'a mut u64);

impl<W: Write> Write for Counted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.0.write(buf)?;
        *self.1 += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// The process id of GPU-wide counter tracks.
pub const GPU_PID: u32 = 100_000;
/// Thread ids of the SMs' event threads start here, above any warp's.
pub const EVENT_TID_BASE: u32 = 1 << 30;

/// The per-SM unit busy fractions in each `busy` counter sample, in this order.
pub const BUSY_UNITS: [&str; 7] = [
    "tensor",
    "smem",
    "mufu",
    "tma",
    "l2_port",
    "tma_fill",
    "tma_store",
];

/// Where `l2_port` is in [`BUSY_UNITS`].
pub const L2_PORT_UNIT: usize = 4;

/// The process id of SM `sm`'s tracks (pid 0 is not a process to the viewers).
pub fn sm_pid(sm: u32) -> u32 {
    sm + 1
}

/// The thread id of the warp with engine-wide index `id` (tid 0 is not a thread to them either).
pub fn warp_tid(id: u32) -> u32 {
    id + 1
}

/// The SM whose tracks are process `pid` ([`sm_pid`]'s inverse; not for [`GPU_PID`]).
pub fn pid_sm(pid: u32) -> u32 {
    pid.saturating_sub(1)
}

/// A warp's thread name: `consumer1.w2 (CTA 17)`.
pub fn warp_label(name: &str, cta: u32) -> String {
    format!("{name} (CTA {cta})")
}

/// The warp name and CTA of a thread named by [`warp_label`].
pub fn parse_warp_label(label: &str) -> Option<(&str, u32)> {
    let (name, cta) = label.rsplit_once(" (CTA ")?;
    Some((name, cta.strip_suffix(')')?.parse().ok()?))
}

/// An SM's event threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// TMA completions and the boxes in flight.
    Tma = 0,
    /// mbarrier phase flips and named-barrier releases.
    Barriers = 1,
}

/// The thread id of SM `sm`'s event thread `lane`.
pub fn event_tid(sm: u32, lane: Lane) -> u32 {
    EVENT_TID_BASE + 2 * sm + lane as u32
}

/// The cycle count of a trace timestamp written as [`Micros`].
pub fn cycles_of(us: f64) -> u64 {
    (us * 1000.0).round() as u64
}

/// A cycle count written as a Trace Event Format time in microseconds, one cycle being one
/// nanosecond. The shortest decimal that reads back as `cycles / 1000.0` is `cycles / 1000`
/// exactly (at most three decimals), and [`cycles_of`] recovers the cycles.
#[derive(Clone, Copy, Debug)]
struct Micros(u64);

impl Serialize for Micros {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0 as f64 / 1000.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Counter tracks only.
    Summary,
    /// Warp-state slices (short intervals merged), barrier and TMA events, flows.
    Warps,
    /// Every state interval as its own slice.
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
    /// Whether SM `sm`'s slices and events at cycle `at` are traced.
    fn shows(&self, sm: u32, at: u64) -> bool {
        self.level != Level::Summary && self.sm(sm) && self.clip(at, at + 1).is_some()
    }
}

/// One Chrome trace event.
#[derive(Serialize)]
struct Event<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    cat: &'a str,
    ph: &'a str,
    ts: Micros,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<Micros>,
    pid: u32,
    /// None for process-wide events (counters, process metadata): viewers would otherwise
    /// make a thread of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u32>,
    /// Pairs flow and async events.
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    /// `e`: a flow's end binds to the slice enclosing it, not to the next one.
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'a str>,
    #[serde(skip_serializing_if = "Value::is_null")]
    args: Value,
}

impl<'a> Event<'a> {
    fn new(name: &'a str, cat: &'a str, ph: &'a str, at: u64, pid: u32) -> Self {
        Event {
            name,
            cat,
            ph,
            ts: Micros(at),
            dur: None,
            pid,
            tid: None,
            id: None,
            bp: None,
            args: Value::Null,
        }
    }
}

/// One end of a flow arrow, kept until the slice it binds to has been written (a viewer binds
/// a flow event to a slice it has already read).
#[derive(Clone, Copy, Debug)]
struct FlowEnd {
    name: &'static str,
    cat: &'static str,
    /// `s` (start) or `f` (end).
    ph: &'static str,
    id: u64,
    at: u64,
    pid: u32,
    tid: u32,
}

/// A flow whose end is a warp's wake: written once the warp's interval holding the wake is
/// reported (a run that stops first never draws it).
#[derive(Clone, Copy, Debug)]
struct Wake {
    name: &'static str,
    cat: &'static str,
    /// Where the arrow starts: (pid, tid, cycle); a warp's thread when `from_warp` is set.
    from: (u32, u32, u64),
    from_warp: Option<u32>,
    at: u64,
}

/// A warp's merged-but-not-written slice.
#[derive(Clone, Debug, Default)]
struct Pending {
    start: u64,
    end: u64,
    cycles: [u64; State::COUNT],
    intervals: u32,
    /// The fewest active lanes of its intervals.
    min_lanes: u32,
    /// The loop (or `program`) its first interval ran in: the slice's name.
    phase: String,
}

/// Identity of a traced warp.
#[derive(Clone, Debug, Default)]
pub struct WarpInfo {
    pub sm: u32,
    pub name: String,
    pub cta: u32,
}

/// Per traced warp: its slice being merged, how far its slices are written, the flow ends
/// waiting for a slice, the wakes to draw, and its committed wgmma groups (HGMMA count, cycle).
#[derive(Clone, Debug, Default)]
struct WarpTrack {
    info: WarpInfo,
    pending: Option<Pending>,
    written_until: u64,
    deferred: Vec<FlowEnd>,
    wakes: Vec<Wake>,
    commits: VecDeque<(u64, u64)>,
}

/// An open wgmma group: the HGMMA count that closes it, the cycle of its first commit, its SM,
/// and the warp and `wgmma.commit_group` (its path) of that commit.
#[derive(Clone, Debug)]
struct OpenGroup {
    closed_by: u64,
    at: u64,
    sm: u32,
    /// The committing warp.
    warp: u32,
    commit: String,
}

/// A warpgroup's wgmma groups: HGMMAs completed, the last group opened, and the open ones.
#[derive(Clone, Debug, Default)]
struct Groups {
    completed: u64,
    last: u64,
    open: VecDeque<OpenGroup>,
}

/// Where the events go: the temporary file, gzip-compressed when the trace's name ends in `.gz`.
enum Sink {
    Plain(BufWriter<File>),
    Gzip(GzEncoder<BufWriter<File>>),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Plain(w) => w.write(buf),
            Sink::Gzip(w) => w.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            Sink::Gzip(w) => w.flush(),
        }
    }
}

impl Sink {
    /// Writes out what is buffered (and the gzip trailer) and closes the file.
    fn close(self) -> io::Result<()> {
        let buffered = match self {
            Sink::Plain(w) => w,
            Sink::Gzip(w) => w.finish()?,
        };
        buffered.into_inner().map_err(|e| e.into_error())?;
        Ok(())
    }
}

pub struct Tracer {
    out: Sink,
    /// The trace's file, and the temporary file beside it that receives the events until
    /// [`Tracer::finish`] renames it over the trace: a reader never sees a partial trace, and
    /// concurrent runs writing the same trace never interleave (the last to finish wins).
    path: PathBuf,
    temporary: PathBuf,
    filter: Filter,
    first: bool,
    warps: Vec<WarpTrack>,
    named_sms: Vec<bool>,
    /// TMA loads in flight per engine-wide slot: (issuing warp, issue cycle), in issue order.
    tma: BTreeMap<u32, VecDeque<(u32, u64)>>,
    groups: BTreeMap<u32, Groups>,
    next_id: u64,
    events: u64,
    /// Bytes of events written, the limit, and the cycle of the first event left out past it.
    bytes: u64,
    max_bytes: u64,
    truncated_at: Option<u64>,
    error: Option<io::Error>,
}

impl Tracer {
    /// A tracer writing the trace at `path` (gzip-compressed when it ends in `.gz`); missing
    /// directories are created. Once its events reach `max_bytes` of JSON (before compression)
    /// it writes no more of them, only the summary at the end (a spinning kernel's trace would
    /// otherwise fill the disk).
    pub fn create(path: &Path, filter: Filter, max_bytes: u64) -> io::Result<Tracer> {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(dir) = dir {
            std::fs::create_dir_all(dir)?;
        }
        let temporary = super::atomic::temporary_beside(path);
        let file = BufWriter::new(File::create(&temporary)?);
        let mut out = if path.extension().is_some_and(|e| e == "gz") {
            Sink::Gzip(GzEncoder::new(file, Compression::default()))
        } else {
            Sink::Plain(file)
        };
        if let Err(e) = out.write_all(b"{\"traceEvents\":[\n") {
            let _ = std::fs::remove_file(&temporary);
            return Err(e);
        }
        Ok(Tracer {
            out,
            path: path.to_path_buf(),
            temporary,
            filter,
            first: true,
            warps: Vec::new(),
            named_sms: Vec::new(),
            tma: BTreeMap::new(),
            groups: BTreeMap::new(),
            next_id: 0,
            events: 0,
            bytes: 0,
            max_bytes,
            truncated_at: None,
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
        if self.error.is_some() || self.truncated_at.is_some() {
            return;
        }
        if self.bytes >= self.max_bytes {
            self.truncated_at = Some(e.ts.0);
            return;
        }
        let sep: &[u8] = if self.first { b"" } else { b",\n" };
        self.first = false;
        let mut out = Counted(&mut self.out, &mut self.bytes);
        let r = out
            .write_all(sep)
            .and_then(|()| serde_json::to_writer(&mut out, e).map_err(io::Error::from));
        if let Err(err) = r {
            self.error = Some(err);
        }
        self.events += 1;
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn name_sm(&mut self, sm: u32) {
        let i = sm as usize;
        if self.named_sms.len() <= i {
            self.named_sms.resize(i + 1, false);
        }
        if !self.named_sms[i] {
            self.named_sms[i] = true;
            let pid = sm_pid(sm);
            self.meta(
                "process_name",
                pid,
                None,
                json!({ "name": format!("SM {sm}") }),
            );
            self.meta(
                "process_sort_index",
                pid,
                None,
                json!({ "sort_index": pid }),
            );
            for (lane, name) in [(Lane::Tma, "TMA"), (Lane::Barriers, "barriers")] {
                let tid = Some(event_tid(sm, lane));
                self.meta("thread_name", pid, tid, json!({ "name": name }));
                // Above the warps.
                let index = lane as i64 - 2;
                self.meta(
                    "thread_sort_index",
                    pid,
                    tid,
                    json!({ "sort_index": index }),
                );
            }
        }
    }

    fn meta(&mut self, name: &str, pid: u32, tid: Option<u32>, args: Value) {
        self.write(&Event {
            tid,
            args,
            ..Event::new(name, "", "M", 0, pid)
        });
    }

    fn track(&mut self, id: u32) -> &mut WarpTrack {
        let i = id as usize;
        if self.warps.len() <= i {
            self.warps.resize(i + 1, WarpTrack::default());
        }
        &mut self.warps[i]
    }

    /// A warp was launched; `id` is its engine-wide index.
    pub fn warp(&mut self, id: u32, info: WarpInfo) {
        if self.filter.level != Level::Summary && self.filter.sm(info.sm) {
            self.name_sm(info.sm);
            let (pid, tid) = (sm_pid(info.sm), Some(warp_tid(id)));
            let label = warp_label(&info.name, info.cta);
            self.meta("thread_name", pid, tid, json!({ "name": label }));
            self.meta("thread_sort_index", pid, tid, json!({ "sort_index": id }));
        }
        self.track(id).info = info;
    }

    /// Warp `id` spent [start, end) in `state` with `lanes` of its lanes active; `what` is its
    /// instruction's path. A slice names its active lanes only when some are masked off (a
    /// lane-dependent `If` or `Loop`), so traces of warps that never diverge are unchanged.
    pub fn interval(
        &mut self,
        id: u32,
        state: State,
        (start, end): (u64, u64),
        lanes: u32,
        what: &str,
    ) {
        self.draw_wakes(id, start, end);
        let sm = self.warps[id as usize].info.sm;
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
            let mut args =
                json!({ "state": state.name(), "ncu": state.ncu(), "instruction": what });
            if lanes < WARP_SIZE {
                args["active_lanes"] = lanes.into();
            }
            self.slice(id, instruction(what), state.name(), start, end, args);
            return;
        }
        let p = self.warps[id as usize]
            .pending
            .get_or_insert_with(|| Pending {
                start,
                phase: phase(what).to_string(),
                min_lanes: WARP_SIZE,
                ..Pending::default()
            });
        p.end = end;
        p.min_lanes = p.min_lanes.min(lanes);
        p.cycles[state as usize] += end - start;
        p.intervals += 1;
        if p.end - p.start >= MIN_SLICE {
            self.flush(id);
        }
    }

    /// Draws the flows of warp `id`'s wakes that fall in its interval [start, end).
    fn draw_wakes(&mut self, id: u32, start: u64, end: u64) {
        let Some(t) = self.warps.get_mut(id as usize) else {
            return;
        };
        if t.wakes.iter().all(|w| w.at >= end) {
            return;
        }
        let (due, later): (Vec<Wake>, Vec<Wake>) = t.wakes.drain(..).partition(|w| w.at < end);
        t.wakes = later;
        let sm = t.info.sm;
        for w in due {
            if w.at >= start && self.filter.shows(sm, w.at) && self.filter.shows(sm, w.from.2) {
                let to = (sm_pid(sm), warp_tid(id), w.at);
                self.flow(w.name, w.cat, (w.from, w.from_warp), (to, Some(id)));
            }
        }
    }

    /// Writes a flow arrow from `from` to `to` ((pid, tid, cycle), and the warp whose thread it
    /// is, if any: such an end waits for that warp's slice).
    fn flow(
        &mut self,
        name: &'static str,
        cat: &'static str,
        from: ((u32, u32, u64), Option<u32>),
        to: ((u32, u32, u64), Option<u32>),
    ) {
        let id = self.id();
        for (ph, ((pid, tid, at), warp)) in [("s", from), ("f", to)] {
            let end = FlowEnd {
                name,
                cat,
                ph,
                id,
                at,
                pid,
                tid,
            };
            match warp {
                Some(w) if at >= self.warps[w as usize].written_until => {
                    self.warps[w as usize].deferred.push(end)
                }
                _ => self.write_flow_end(&end),
            }
        }
    }

    fn write_flow_end(&mut self, f: &FlowEnd) {
        self.write(&Event {
            tid: Some(f.tid),
            id: Some(f.id),
            bp: (f.ph == "f").then_some("e"),
            ..Event::new(f.name, f.cat, f.ph, f.at, f.pid)
        });
    }

    /// Writes warp `id`'s pending merged slice.
    fn flush(&mut self, id: u32) {
        let Some(p) = self.warps[id as usize].pending.take() else {
            return;
        };
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
        let mut args = json!({ "merged": p.intervals, "states": states });
        if p.min_lanes < WARP_SIZE {
            args["min_active_lanes"] = p.min_lanes.into();
        }
        self.slice(id, &p.phase, dominant.name(), p.start, p.end, args);
    }

    /// Writes a slice of warp `id`, then the flow ends that bind to it.
    fn slice(&mut self, id: u32, name: &str, cat: &str, start: u64, end: u64, args: Value) {
        let sm = self.warps[id as usize].info.sm;
        self.write(&Event {
            dur: Some(Micros(end - start)),
            tid: Some(warp_tid(id)),
            args,
            ..Event::new(name, cat, "X", start, sm_pid(sm))
        });
        let t = &mut self.warps[id as usize];
        t.written_until = end;
        if t.deferred.is_empty() {
            return;
        }
        let (now, later): (Vec<FlowEnd>, Vec<FlowEnd>) =
            t.deferred.drain(..).partition(|f| f.at < end);
        t.deferred = later;
        for f in now {
            self.write_flow_end(&f);
        }
    }

    /// A notable cycle on SM `sm` (an mbarrier phase flip, a TMA completion, a named-barrier
    /// release): a one-cycle slice on its event thread `lane`, so that flows can bind to it.
    /// Returns whether it was written.
    pub fn sm_event(&mut self, sm: u32, lane: Lane, at: u64, name: &str, args: Value) -> bool {
        if !self.filter.shows(sm, at) {
            return false;
        }
        self.name_sm(sm);
        let cat = match (lane, name) {
            (Lane::Tma, _) => "tma",
            (Lane::Barriers, "named barrier") => "named_barrier",
            (Lane::Barriers, _) => "mbarrier",
        };
        self.write(&Event {
            dur: Some(Micros(1)),
            tid: Some(event_tid(sm, lane)),
            args,
            ..Event::new(name, cat, "X", at, sm_pid(sm))
        });
        true
    }

    /// Warp `warp` issued a TMA load into `slot` at `at`.
    pub fn tma_issued(&mut self, warp: u32, slot: u32, at: u64) {
        self.tma.entry(slot).or_default().push_back((warp, at));
    }

    /// The oldest TMA load into `slot` landed at `at` on SM `sm`: its `TMA complete` slice, its
    /// box as an async slice from issue to landing, and a flow from the issuing warp.
    pub fn tma_landed(&mut self, sm: u32, slot: u32, at: u64, box_name: &str, args: Value) {
        let issued = self.tma.get_mut(&slot).and_then(VecDeque::pop_front);
        if self.tma.get(&slot).is_some_and(VecDeque::is_empty) {
            self.tma.remove(&slot);
        }
        if !self.sm_event(sm, Lane::Tma, at, "TMA complete", args.clone()) {
            return;
        }
        let Some((warp, from)) = issued.filter(|&(_, from)| self.filter.shows(sm, from)) else {
            return;
        };
        let (pid, tid) = (sm_pid(sm), event_tid(sm, Lane::Tma));
        self.span("tma", box_name, (pid, tid), from..at, args);
        let start = ((pid, warp_tid(warp), from), Some(warp));
        self.flow("TMA load", "tma", start, ((pid, tid, at), None));
    }

    /// An async slice [start, end) on (pid, tid): `b` and `e` with one id.
    fn span(&mut self, cat: &str, name: &str, track: (u32, u32), span: Range<u64>, args: Value) {
        let ((pid, tid), (start, end)) = (track, (span.start, span.end));
        let id = Some(self.id());
        let tid = Some(tid);
        self.write(&Event {
            tid,
            id,
            args,
            ..Event::new(name, cat, "b", start, pid)
        });
        self.write(&Event {
            tid,
            id,
            ..Event::new(name, cat, "e", end, pid)
        });
    }

    /// Mbarrier phase flip at `flip` on SM `sm` wakes warp `warp` at `at`: a flow from the
    /// flip's slice to the warp's.
    pub fn waiter_released(&mut self, sm: u32, warp: u32, flip: u64, at: u64) {
        let from = (sm_pid(sm), event_tid(sm, Lane::Barriers), flip);
        self.track(warp).wakes.push(Wake {
            name: "mbarrier wake",
            cat: "mbarrier",
            from,
            from_warp: None,
            at,
        });
    }

    /// Warp `warp` of `warpgroup` committed a wgmma group that its `group`-th HGMMA closes, at
    /// the instruction `commit` (its path).
    pub fn wgmma_committed(
        &mut self,
        warp: u32,
        warpgroup: u32,
        group: u64,
        at: u64,
        commit: &str,
    ) {
        self.track(warp).commits.push_back((group, at));
        let sm = self.warps[warp as usize].info.sm;
        let g = self.groups.entry(warpgroup).or_default();
        if group > g.last.max(g.completed) {
            g.last = group;
            g.open.push_back(OpenGroup {
                closed_by: group,
                at,
                sm,
                warp,
                commit: commit.to_string(),
            });
        }
    }

    /// Warp `warp`'s `wait_group` is released at `at` by the completion of its group closed by
    /// HGMMA `group`: a flow from the commit.
    pub fn wgmma_released(&mut self, warp: u32, group: u64, at: u64) {
        let t = self.track(warp);
        let mut commit = None;
        while t.commits.front().is_some_and(|&(g, _)| g <= group) {
            commit = t
                .commits
                .pop_front()
                .filter(|&(g, _)| g == group)
                .or(commit);
        }
        let Some((_, from)) = commit else {
            return;
        };
        let pid = sm_pid(t.info.sm);
        t.wakes.push(Wake {
            name: "wgmma group",
            cat: "wgmma",
            from: (pid, warp_tid(warp), from),
            from_warp: Some(warp),
            at,
        });
    }

    /// One HGMMA of `warpgroup` completed at `at`: the wgmma groups it closes end their async
    /// slices.
    pub fn hgmma_completed(&mut self, warpgroup: u32, at: u64) {
        let g = self.groups.entry(warpgroup).or_default();
        g.completed += 1;
        let done = g.completed;
        let mut closed = Vec::new();
        while g.open.front().is_some_and(|o| o.closed_by <= done) {
            closed.extend(g.open.pop_front());
        }
        for o in closed {
            if self.filter.shows(o.sm, o.at) && self.filter.shows(o.sm, at) {
                let tid = event_tid(o.sm, Lane::Barriers);
                // Which warps' group it is, and the commit that tells a loop's iterations apart
                // (`sim report`'s mainloop view).
                let args = json!({
                    "warpgroup": warpgroup,
                    "tid": warp_tid(o.warp),
                    "commit": o.commit,
                });
                self.span("wgmma", "wgmma group", (sm_pid(o.sm), tid), o.at..at, args);
            }
        }
    }

    /// Counter samples: `series` values at cycle `at` for SM `sm`, or GPU-wide when `None`.
    pub fn counters(&mut self, sm: Option<u32>, name: &str, at: u64, series: Value) {
        if sm.is_some_and(|s| !self.filter.sm(s)) || self.filter.clip(at, at + 1).is_none() {
            return;
        }
        if let Some(s) = sm {
            self.name_sm(s);
        }
        self.write(&Event {
            args: series,
            ..Event::new(name, "", "C", at, sm.map_or(GPU_PID, sm_pid))
        });
    }

    /// Ends the trace: flushes merged slices, writes `otherData` and puts the file in place.
    /// Returns what it holds. On an error the temporary file is removed and the trace at the
    /// path, if any, is left as it was.
    pub fn finish(self, other: Value) -> io::Result<Written> {
        let temporary = self.temporary.clone();
        let r = self.write_end(other);
        if r.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        r
    }

    fn write_end(mut self, mut other: Value) -> io::Result<Written> {
        for id in 0..self.warps.len() as u32 {
            self.flush(id);
            // Ends past the warp's last slice (none are expected): still written, so that every
            // flow keeps both its ends.
            for f in std::mem::take(&mut self.warps[id as usize].deferred) {
                self.write_flow_end(&f);
            }
        }
        self.meta(
            "process_name",
            GPU_PID,
            None,
            json!({ "name": "GPU (L2, HBM)" }),
        );
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let Some(at) = self.truncated_at {
            other["truncated"] = json!({ "at_cycle": at, "max_bytes": self.max_bytes });
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
        self.out.close()?;
        std::fs::rename(&self.temporary, &self.path)?;
        Ok(Written {
            events: self.events,
            truncated_at: self.truncated_at,
        })
    }
}

/// The instruction of a path (`role `c`: program[3] loop(i).body[16] fma` → `fma`), with an
/// mbarrier wait's `on <array>`.
fn instruction(path: &str) -> &str {
    let body = path.rsplit_once(": ").map_or(path, |(_, b)| b);
    match body.split_once(" on ") {
        Some((p, _)) => {
            let start = p.rfind(' ').map_or(0, |i| i + 1);
            &body[start..]
        }
        None => body.rsplit(' ').next().unwrap_or(body),
    }
}

/// The innermost loop of a path (`loop(i)`), or `program` outside any loop.
fn phase(path: &str) -> &str {
    path.rsplit(' ')
        .find(|t| t.starts_with("loop("))
        .and_then(|t| t.find(')').map(|end| &t[..=end]))
        .unwrap_or("program")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_named_by_instruction_or_loop() {
        let path = "role `consumer`: program[3] if.then[17] loop(i).body[16] fma";
        assert_eq!(instruction(path), "fma");
        assert_eq!(phase(path), "loop(i)");
        let wait = "role `p`: program[1] loop(j).body[0] mbarrier.wait on full";
        assert_eq!(instruction(wait), "mbarrier.wait on full");
        assert_eq!(phase("role `p`: program[0] setmaxnreg"), "program");
        assert_eq!(instruction("exit"), "exit");
        assert_eq!(phase("exit"), "program");
    }

    #[test]
    fn warp_labels_read_back() {
        let label = warp_label("consumer1.w2", 17);
        assert_eq!(label, "consumer1.w2 (CTA 17)");
        assert_eq!(parse_warp_label(&label), Some(("consumer1.w2", 17)));
        assert_eq!(parse_warp_label("TMA"), None);
        assert_eq!(pid_sm(sm_pid(5)), 5);
    }

    #[test]
    fn cycles_are_written_as_nanoseconds_and_read_back_exactly() {
        for c in [
            0u64,
            1,
            7,
            999,
            1000,
            1001,
            79_309,
            123_456_789,
            4_000_000_007,
        ] {
            let text = serde_json::to_string(&Micros(c)).unwrap();
            let back: f64 = text.parse().unwrap();
            assert_eq!(cycles_of(back), c, "{text}");
            // The decimal is cycles / 1000 itself.
            let (int, frac) = text.split_once('.').unwrap();
            assert!(frac.len() <= 3, "{text}");
            let scaled = format!("{frac:0<3}");
            assert_eq!(
                int.parse::<u64>().unwrap() * 1000 + scaled.parse::<u64>().unwrap(),
                c
            );
        }
    }
}
