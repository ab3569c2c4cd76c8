//! The discrete-event engine: one clock, one event queue, every SM of the GPU with its
//! partitions, warps, CTAs and units, and the memory system below them.
//!
//! Each cycle: due events are handled (they wake warps or free units), then every *active*
//! partition (one with a warp to evaluate or an eligible warp) evaluates its candidate warps and
//! issues at most one instruction. When no partition is active the clock jumps to the next event,
//! so cost grows with instructions and events, not with elapsed cycles.
//!
//! This folder holds the loop and what every instruction shares: the queue ([`queue`]), the
//! next-free servers units are booked on ([`server`]), the agents' state ([`state`]), the events
//! ([`event`]), scheduling and the issue dispatch ([`schedule`]), operand evaluation
//! ([`operands`]), CTA launch and retirement ([`launch`]), observers' hook points ([`hooks`]),
//! results ([`stats`]), errors ([`error`]) and the deadlock report ([`deadlock`]). Each
//! instruction family's semantics and timing live beside the unit it drives, in `crate::sm`.

pub(crate) mod crossing;
mod deadlock;
pub mod error;
pub(crate) mod event;
pub mod hooks;
mod launch;
pub mod names;
mod operands;
pub mod queue;
pub(crate) mod schedule;
pub mod server;
pub(crate) mod shard;
pub(crate) mod state;
pub mod stats;

pub use error::{Fault, SimError};
pub use stats::{RunStats, UnitBusy, WarpResult};

use crate::gpu::cta_scheduler::{l1_cache_bytes, max_active_clusters, occupancy, Occupancy};
use crate::gpu::preset::Preset;
use crate::memory::system::MemSys;
use crate::observe::sanitizer::Finding;
use crate::observe::trace::{Tracer, BUSY_UNITS, L2_PORT_UNIT};
use crossing::MemReq;
use isa::program::{slot, Kernel};
use launch::CtaSched;
use names::Names;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
pub(crate) use shard::Shard;
use state::Warp;

/// Control-flow steps a warp may take without issuing before the run is stopped
/// (a loop with no instructions and a huge trip count).
pub const MAX_CONTROL_STEPS: u32 = 1 << 20;

/// Windows between progress reports.
const PROGRESS_EVERY: u64 = 1 << 8;

/// A progress callback: (cycle, CTAs retired, CTAs in the grid).
#[derive(Clone)]
pub struct Progress(pub std::sync::Arc<dyn Fn(u64, u32, u32) + Send + Sync>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress(..)")
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    pub seed: u64,
    /// SM clock: converts HBM bandwidth (bytes per second) into bytes per SM cycle.
    pub clock_mhz: f64,
    /// Stop with an error when simulated time passes this many cycles.
    pub max_cycles: u64,
    /// Attach the sanitizer (`observe::sanitizer`), whose findings stop the run with
    /// `SimError::Hazard`.
    pub check: bool,
    /// Stop with `SimError::Livelock` after this many cycles without progress: no warp exited
    /// and no CTA launched, no instruction wrote memory, arrived on a barrier or moved
    /// registers (stores, TMA, cp.async, a non-zero atomic, arrivals, expect-tx, `bar`,
    /// `setmaxnreg`), no TMA load landed and no HGMMA completed. Math, loads, zero atomics and
    /// failing polls change nothing another warp could see.
    pub livelock_cycles: u64,
    /// Stop with `SimError::WallLimit` once the run has taken this long (checked at every
    /// window's end).
    pub max_wall: Option<std::time::Duration>,
    /// Threads that work through the shards' windows (1: the calling thread alone). The
    /// answers, the trace included, are the same for any count.
    pub threads: usize,
}

/// Default of [`Config::livelock_cycles`].
pub const LIVELOCK_CYCLES: u64 = 10_000_000;

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 0,
            clock_mhz: 1830.0,
            max_cycles: 1_000_000_000,
            check: true,
            livelock_cycles: LIVELOCK_CYCLES,
            max_wall: None,
            threads: 1,
        }
    }
}

/// The engine: the GPU's SMs in shards ([`Shard`]), the memory system below them, and the CTA
/// scheduler. Time advances in windows: every shard works through a window on its own (in
/// parallel with `Config::threads` above one), while the memory system answers the requests
/// of the window before ([`crossing`]); CTA slots freed and CTAs launched cross between
/// windows. What each shard does in a window depends only on its own state and on what crossed
/// before the window, in a fixed order, so the answers do not depend on the threads.
pub struct Engine<'a> {
    k: &'a Kernel,
    p: &'a Preset,
    cfg: Config,
    /// The cycle the kernel starts at: 0, or later in a sequence.
    start: u64,
    shards: Vec<Shard<'a>>,
    mem: MemSys,
    /// The memory latency jitter, drawn as the requests are answered (in the order one clock
    /// makes them).
    rng: ChaCha8Rng,
    /// The CTA scheduler, when the shards share it (else the one shard has it), and the slots
    /// the shards' CTAs left, free from the cycle given, in (cycle, SM) order.
    sched: Option<CtaSched>,
    freed: Vec<(u64, u32)>,
    /// Cycles a window spans (`window`).
    window: u64,
    occ: Occupancy,
    gpcs: Vec<u32>,
    tracer: Option<Tracer>,
    progress: Option<Progress>,
    /// Trace sampling: the last sample's cycle, each SM's unit busy cycles done by then, and
    /// the bytes through the L2 slices and HBM channels by then (`Engine::sample`).
    sampled_at: u64,
    sample_prev: Vec<[f64; BUSY_UNITS.len()]>,
    sample_mem: (f64, f64),
    /// The cycle the run stopped at, when a shard's error stopped it.
    stopped_at: Option<u64>,
}

/// What a kernel of a sequence takes over from the kernels before it: the memory system as they
/// left it (the L2's lines and their timing: one clock for the whole sequence), the cycle it
/// starts at, and where the sequence's tensors live.
pub struct Carry {
    pub mem: MemSys,
    pub start: u64,
    /// The address of each of the kernel's tensors (in its declaration order), and the first
    /// address after all of the sequence's tensors.
    pub tensor_base: Vec<u64>,
    pub end_of_tensors: u64,
}

impl Carry {
    /// A sequence's start: a fresh memory system holding every `warm` tensor, and the tensors
    /// of all `kernels` laid out one after another (4 KiB aligned), one array per name.
    pub fn first(kernels: &[Kernel], p: &Preset, cfg: &Config) -> (Self, Vec<Vec<u64>>) {
        let mut names: Vec<(&str, u64)> = Vec::new();
        let mut next = 0u64;
        let bases = kernels
            .iter()
            .map(|k| {
                k.tensors
                    .iter()
                    .map(|t| match names.iter().find(|(n, _)| *n == t.name) {
                        Some(&(_, base)) => base,
                        None => {
                            let base = next;
                            names.push((&t.name, base));
                            next = (next + t.bytes).div_ceil(4096) * 4096;
                            base
                        }
                    })
                    .collect::<Vec<u64>>()
            })
            .collect::<Vec<_>>();
        let mut mem = MemSys::new(p, cfg.clock_mhz);
        for (k, b) in kernels.iter().zip(&bases) {
            for (t, &base) in k.tensors.iter().zip(b) {
                if t.warm {
                    mem.preload(base, t.bytes);
                }
            }
        }
        let carry = Carry {
            mem,
            start: 0,
            tensor_base: bases[0].clone(),
            end_of_tensors: next,
        };
        (carry, bases)
    }
}

impl<'a> Engine<'a> {
    pub fn new(k: &'a Kernel, p: &'a Preset, cfg: Config) -> Self {
        let (carry, _) = Carry::first(std::slice::from_ref(k), p, &cfg);
        Engine::continuing(k, p, cfg, carry)
    }

    /// The kernel `k` of a sequence, starting at `carry.start` on the memory system the kernels
    /// before it left.
    pub fn continuing(k: &'a Kernel, p: &'a Preset, cfg: Config, carry: Carry) -> Self {
        let Carry {
            mut mem,
            start,
            tensor_base,
            end_of_tensors: next,
        } = carry;
        mem.begin_kernel();
        let names = Names::new(k);
        let sample_prev = (0..p.sm.count)
            .map(|i| {
                let mut units = [0.0; BUSY_UNITS.len()];
                units[L2_PORT_UNIT] = mem.port_busy_by(i, start);
                units
            })
            .collect();
        let sample_mem = (mem.l2_bytes_by(start), mem.dram_bytes_by(start));
        let occ = occupancy(k, p);
        let l1_bytes = l1_cache_bytes(k, p, &occ);
        let window = window(k, p);
        let gpcs = p.cluster.gpcs(p.sm.count);
        let counter_base = next;
        let local_base = (next + k.counters.len() as u64 * 128).div_ceil(4096) * 4096;
        let mut ports = mem.take_ports().into_iter();
        let shards: Vec<Shard> = shard_sms(k, p, &gpcs, window)
            .into_iter()
            .map(|sms| {
                let own = ports.by_ref().take(sms.len()).collect();
                Shard::new(
                    k,
                    p,
                    cfg.clone(),
                    sms,
                    own,
                    l1_bytes,
                    start,
                    names.clone(),
                    tensor_base.clone(),
                    (counter_base, local_base),
                )
            })
            .collect();
        let mut sched = Some(CtaSched::new(k, p, occ.ctas));
        let mut shards = shards;
        if shards.len() == 1 {
            shards[0].sched = sched.take();
        }
        Engine {
            k,
            p,
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            mem,
            start,
            shards,
            sched,
            freed: Vec::new(),
            window,
            occ,
            gpcs,
            tracer: None,
            progress: None,
            sampled_at: start,
            sample_prev,
            sample_mem,
            stopped_at: None,
            cfg,
        }
    }

    /// Calls `progress(cycle, CTAs retired, CTAs in the grid)` every so often during the run.
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Attaches a trace writer; the engine reports warp states, events and unit samples to it.
    pub fn with_tracer(mut self, tracer: Tracer) -> Self {
        self.tracer = Some(tracer);
        self
    }

    /// Runs the kernel to completion.
    pub fn run(self) -> Result<RunStats, SimError> {
        let (result, stats, _) = self.run_traced();
        result.map(|()| stats)
    }

    /// Runs the kernel and hands back the trace writer, also when the run fails (the trace
    /// then ends at the failure, every live warp's last state interval included).
    /// The statistics cover the run up to where it stopped, also when it failed.
    pub fn run_traced(self) -> (Result<(), SimError>, RunStats, Option<Tracer>) {
        let (result, stats, tracer, _) = self.run_carried();
        (result, stats, tracer)
    }

    /// As [`Engine::run_traced`], handing back the memory system for the next kernel of a
    /// sequence.
    pub fn run_carried(mut self) -> (Result<(), SimError>, RunStats, Option<Tracer>, MemSys) {
        let result = self.simulate();
        if result.is_err() {
            for s in &mut self.shards {
                s.tracer = self.tracer.take();
                s.close_open_intervals();
                self.tracer = s.tracer.take();
            }
        }
        self.sample(true, u64::MAX);
        let tracer = self.tracer.take();
        let stopped = result.is_err();
        let (stats, mem) = self.finish(stopped);
        (result, stats, tracer, mem)
    }

    fn simulate(&mut self) -> Result<(), SimError> {
        if self.occ.ctas == 0 {
            // Static validation keeps per-CTA needs within the preset's SM, so this is a bug guard.
            return Err(SimError::Deadlock {
                cycle: 0,
                warps: 0,
                blocked: vec![format!(
                    "no CTA fits on an SM (limit: {})",
                    self.occ.limiter()
                )],
            });
        }
        let size = self.k.cluster;
        if size > 1 && max_active_clusters(&self.gpcs, self.occ.ctas, size) == 0 {
            let largest = self.gpcs.iter().max().copied().unwrap_or(0);
            return Err(SimError::ClusterPlacement {
                size,
                slots: largest * self.occ.ctas,
                sms: largest,
                per_sm: self.occ.ctas,
            });
        }
        let started = std::time::Instant::now();
        // The first wave: placed by the engine's scheduler, or by the one shard's.
        if let Some(sched) = &mut self.sched {
            for l in sched.launch() {
                let i = shard_of(&self.shards, l.sm);
                self.shards[i].push_launch(self.start, l);
            }
        }
        for sh in &mut self.shards {
            sh.tracer = self.tracer.take();
            sh.launch_placed();
            self.tracer = sh.tracer.take();
        }
        let (mut from, mut windows) = (self.start, 0u64);
        let mut before = self.start;
        let mut answering: Option<Vec<Vec<MemReq>>> = None;
        loop {
            let end = from + self.window;
            if let Some((requests, answers)) = self.step(from, end, answering.take()) {
                for ((sh, mut r), a) in self.shards.iter_mut().zip(requests).zip(answers) {
                    sh.answers = Some(a);
                    r.clear();
                    sh.spare.reqs = r;
                }
            }
            answering = Some(self.shards.iter_mut().map(Shard::close_window).collect());
            // The first error by cycle (then by shard) stops the run.
            if let Some(i) = (0..self.shards.len())
                .filter(|&i| self.shards[i].error.is_some())
                .min_by_key(|&i| self.shards[i].now)
            {
                self.stopped_at = Some(self.shards[i].now);
                return Err(self.shards[i].error.take().expect("filtered"));
            }
            for sh in &mut self.shards {
                self.freed.append(&mut sh.freed);
            }
            self.freed.sort_unstable();
            // The requests of this window and the one before are not delivered yet.
            self.sample(false, before);
            before = from;
            windows += 1;
            if let Some(limit) = self.cfg.max_wall {
                if started.elapsed() > limit {
                    return Err(SimError::WallLimit {
                        limit,
                        cycle: end,
                        retired: self.retired(),
                        grid: self.k.grid,
                    });
                }
            }
            if windows.is_multiple_of(PROGRESS_EVERY) {
                if let Some(p) = &self.progress {
                    (p.0)(end, self.retired(), self.k.grid);
                }
            }
            if let Some(at) = self.livelock_at() {
                self.stopped_at = Some(at);
                return Err(self.livelock());
            }
            // Answers on their way keep the windows consecutive: each is due no earlier than
            // the window after the next. Otherwise the next window starts at the next work.
            let answers_due = self
                .shards
                .iter()
                .any(|sh| sh.waiting.iter().any(|c| !c.is_empty()));
            let launch_at = self
                .sched
                .as_ref()
                .filter(|s| s.waiting())
                .and_then(|_| self.freed.first().map(|&(t, _)| t));
            let busy = !self.shards.iter().all(Shard::idle) || launch_at.is_some();
            if !busy && !answers_due {
                break;
            }
            from = if answers_due {
                end
            } else {
                self.shards
                    .iter()
                    .filter_map(Shard::next_work)
                    .chain(launch_at)
                    .min()
                    .map_or(end, |t| t.max(end))
            };
            self.launch_freed(from + self.window);
        }
        if self
            .shards
            .iter()
            .any(|sh| sh.warps.iter().any(|(_, w)| w.acct.exited().is_none()))
            || self.next_block() < self.k.grid
        {
            return Err(self.deadlock());
        }
        // The kernel ends when its booked work does (stores nobody waits for), which may be
        // past the limit although no event was.
        if self.horizon() > self.cfg.max_cycles {
            return Err(SimError::CycleLimit {
                limit: self.cfg.max_cycles,
            });
        }
        Ok(())
    }

    /// Every shard works through cycles `from..end` while the memory system answers
    /// `requests` (the window before's, by shard); returns them with their answers, by shard.
    /// With a trace the shards take turns, in order (the trace is one stream); with more than
    /// one thread they run in parallel, beside the memory system.
    #[allow(clippy::type_complexity)]
    fn step(
        &mut self,
        from: u64,
        end: u64,
        requests: Option<Vec<Vec<MemReq>>>,
    ) -> Option<(Vec<Vec<MemReq>>, Vec<Vec<u64>>)> {
        let mut out: Vec<Vec<u64>> = match requests {
            Some(_) => self
                .shards
                .iter_mut()
                .map(|s| std::mem::take(&mut s.spare.answers))
                .collect(),
            None => Vec::new(),
        };
        let (mem, rng) = (&mut self.mem, &mut self.rng);
        let answer = move || {
            let requests = requests?;
            crossing::resolve(mem, rng, &requests, &mut out);
            Some((requests, out))
        };
        let shards = &mut self.shards;
        if self.tracer.is_some() || self.cfg.threads <= 1 || shards.len() == 1 {
            let answers = answer();
            for sh in shards.iter_mut() {
                sh.tracer = self.tracer.take();
                sh.run_window(from, end);
                self.tracer = sh.tracer.take();
            }
            return answers;
        }
        let run = |sh: &mut Shard| sh.run_window(from, end);
        let pool = pool(self.cfg.threads);
        pool.install(|| {
            let (answers, ()) = rayon::join(answer, || {
                use rayon::prelude::*;
                shards.par_iter_mut().for_each(run);
            });
            answers
        })
    }

    /// Frees the CTA slots the shards left that are free before cycle `until`, in order, and
    /// starts the CTAs the engine's scheduler places in them at those cycles.
    fn launch_freed(&mut self, until: u64) {
        let Some(sched) = &mut self.sched else {
            return;
        };
        let due = self.freed.partition_point(|&(t, _)| t < until);
        for (t, sm) in self.freed.drain(..due) {
            sched.free(sm);
            for l in sched.launch() {
                let i = shard_of(&self.shards, l.sm);
                self.shards[i].push_launch(t, l);
            }
        }
    }

    /// The first cycle a shard went on to without progress on the GPU for longer than the
    /// limit: a livelock, unless another shard made progress in the window (then it may have
    /// been before that cycle: the next window tells).
    fn livelock_at(&mut self) -> Option<u64> {
        let limit = self.cfg.livelock_cycles;
        let progress: Vec<u64> = self.shards.iter().map(|s| s.last_progress).collect();
        let found = (0..self.shards.len())
            .filter_map(|i| Some((self.shards[i].livelock_at?, i)))
            .filter(|&(at, i)| {
                progress
                    .iter()
                    .enumerate()
                    .all(|(j, &p)| j == i || at - p > limit)
            })
            .min()
            .map(|(at, _)| at);
        let gpu = progress.iter().copied().max().unwrap_or(self.start);
        for s in &mut self.shards {
            s.livelock_at = None;
            s.gpu_progress = gpu;
        }
        found
    }

    fn retired(&self) -> u32 {
        self.shards.iter().map(|s| s.retired).sum()
    }

    fn next_block(&self) -> u32 {
        match &self.sched {
            Some(s) => s.next_block,
            None => self.shards[0].sched.as_ref().map_or(0, |s| s.next_block),
        }
    }

    /// The latest of the shards' `cycle` (the run's start without shards).
    fn latest(&self, cycle: impl Fn(&Shard) -> u64) -> u64 {
        self.shards.iter().map(cycle).max().unwrap_or(self.start)
    }

    /// The last cycle in which anything happened.
    fn last_cycle(&self) -> u64 {
        self.latest(|s| s.last)
    }

    fn last_progress(&self) -> u64 {
        self.latest(|s| s.last_progress)
    }

    fn horizon(&self) -> u64 {
        self.latest(|s| s.horizon)
    }
}

/// A pool of `threads` threads for the shards' windows: built once per thread count and kept,
/// so a run of thousands of windows does not start threads for each.
fn pool(threads: usize) -> std::sync::Arc<rayon::ThreadPool> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    pools
        .entry(threads)
        .or_insert_with(|| {
            Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("a thread pool starts"),
            )
        })
        .clone()
}

/// Cycles of a window: half the shortest L2 round trip, so that a window's requests, answered
/// during the next window, are due no earlier than the window after (a quarter with atomic
/// counters: spinning warps see an atomic's value halfway through its round trip). At least
/// one cycle: a memory system that answers sooner (a preset overridden to no L2 latency) gets
/// its answers at the next window's start instead.
pub(crate) fn window(k: &Kernel, p: &Preset) -> u64 {
    let round_trip = p.memory.l2.near_latency.min(p.memory.l2.far_latency);
    let parts = if k.counters.is_empty() { 2 } else { 4 };
    (round_trip / parts).max(1)
}

/// The SMs of each shard: a GPC each (a cluster stays in its GPC, so DSMEM, remote arrivals
/// and multicast never leave a shard). One shard for all SMs when the GPU has one GPC, when the
/// kernel has atomic counters (every SM reads and writes them at issue), or when a freed CTA
/// slot takes its next CTA sooner than a window (`sm.cta_launch_gap`): the shard's own
/// scheduler then places CTAs at once.
fn shard_sms(k: &Kernel, p: &Preset, gpcs: &[u32], window: u64) -> Vec<std::ops::Range<usize>> {
    let all = 0..p.sm.count as usize;
    if gpcs.len() < 2 || !k.counters.is_empty() || p.sm.cta_launch_gap < window {
        return vec![all];
    }
    let mut start = 0;
    gpcs.iter()
        .map(|&n| {
            let sms = start..start + n as usize;
            start = sms.end;
            sms
        })
        .collect()
}

/// The shard that holds SM `sm`.
fn shard_of(shards: &[Shard], sm: u32) -> usize {
    shards
        .iter()
        .position(|s| s.sms.range().contains(&(sm as usize)))
        .expect("every SM is in a shard")
}

impl Shard<'_> {
    pub(crate) fn warp_name(&self, w: &Warp) -> String {
        let role = &self.k.roles[w.role as usize];
        format!(
            "{}{}.w{}",
            role.name,
            w.env[slot::WG as usize],
            w.env[slot::WARP as usize]
        )
    }

    pub(crate) fn book_horizon(&mut self, t: u64) {
        self.horizon = self.horizon.max(t);
    }

    /// Stops the run with warp `w`'s fault at its current instruction (the first fault wins).
    pub(crate) fn fail(&mut self, w: u32, fault: Fault) {
        let (cta, pc) = (self.warps[w as usize].cta, self.warps[w as usize].pc);
        self.fail_at((w, pc), cta, fault);
    }

    /// Stops the run with the fault of warp `w`'s instruction at `pc`; a sanitizer finding
    /// names CTA `cta` (where the mbarrier or slot is).
    pub(crate) fn fail_at(&mut self, (w, pc): (u32, u32), cta: u32, fault: Fault) {
        if self.error.is_some() {
            return;
        }
        let message = match fault {
            Fault::Hazard(finding) => return self.hazard_at((w, pc), cta, finding),
            other => other.to_string(),
        };
        let warp = &self.warps[w as usize];
        let role = &self.k.roles[warp.role as usize];
        let path = role
            .paths
            .get(pc as usize)
            .cloned()
            .unwrap_or_else(|| format!("role `{}`: end of program", role.name));
        self.error = Some(SimError::Runtime {
            cycle: self.now,
            cta: self.ctas[warp.cta as usize].block,
            warp: self.warp_name(warp),
            path,
            message,
        });
    }

    /// Stops the run with a sanitizer finding about warp `w`'s instruction at `pc` in CTA `cta`,
    /// or about the earlier instruction the finding blames.
    pub(crate) fn hazard_at(&mut self, at: (u32, u32), cta: u32, finding: Finding) {
        if self.error.is_some() {
            return;
        }
        let (w, pc) = finding.culprit().unwrap_or(at);
        let c = &self.ctas[cta as usize];
        let wr = &self.warps[w as usize];
        let role = &self.k.roles[wr.role as usize];
        self.error = Some(SimError::Hazard {
            cycle: self.now,
            sm: c.sm,
            cta: c.block,
            warp: self.warp_name(wr),
            path: role.paths.get(pc as usize).cloned().unwrap_or_default(),
            message: finding.to_string(),
        });
    }
}
