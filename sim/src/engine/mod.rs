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
pub(crate) mod state;
pub mod stats;

pub use error::{Fault, SimError};
pub use stats::{RunStats, UnitBusy, WarpResult};

use crate::gpu::cta_scheduler::{
    dispatch_order, l1_cache_bytes, max_active_clusters, occupancy, Occupancy,
};
use crate::gpu::preset::Preset;
use crate::memory::system::MemSys;
use crate::observe::sanitizer::{Finding, Sanitizer};
use crate::observe::trace::{Tracer, BUSY_UNITS, L2_PORT_UNIT};
use crate::sm::cluster::RemoteArrival;
use crate::sm::tma::TmaLoad;
use event::Event;
use isa::program::{slot, Kernel};
use names::Names;
use queue::EventQueue;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use state::{Cluster, Cta, Live, Partition, Slab, Sm, Warp, WarpGroup};
use stats::RoleTotals;

/// Control-flow steps a warp may take without issuing before the run is stopped
/// (a loop with no instructions and a huge trip count).
pub const MAX_CONTROL_STEPS: u32 = 1 << 20;

/// Main-loop iterations between progress reports.
const PROGRESS_EVERY: u64 = 1 << 16;

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
    /// Stop with `SimError::WallLimit` once the run has taken this long (checked every
    /// [`WALL_CHECK_EVERY`] main-loop iterations).
    pub max_wall: Option<std::time::Duration>,
}

/// Default of [`Config::livelock_cycles`].
pub const LIVELOCK_CYCLES: u64 = 10_000_000;

/// Main-loop iterations between wall-clock checks.
const WALL_CHECK_EVERY: u64 = 1 << 12;

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 0,
            clock_mhz: 1830.0,
            max_cycles: 1_000_000_000,
            check: true,
            livelock_cycles: LIVELOCK_CYCLES,
            max_wall: None,
        }
    }
}

pub struct Engine<'a> {
    pub(crate) k: &'a Kernel,
    pub(crate) p: &'a Preset,
    pub(crate) cfg: Config,
    pub(crate) now: u64,
    /// The cycle the kernel starts at: 0, or later in a sequence.
    pub(crate) start: u64,
    pub(crate) q: EventQueue<Event>,
    /// `Poll` events in `q`: when they are all that is left, nothing can complete a phase.
    pub(crate) polls_pending: usize,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) sms: Vec<Sm>,
    /// All SMs' partitions, SM-major.
    pub(crate) parts: Vec<Partition>,
    /// Bitset over `parts`: partitions with a warp to evaluate or an eligible warp.
    pub(crate) active: Vec<u64>,
    pub(crate) mem: MemSys,
    pub(crate) warps: Live<Warp>,
    pub(crate) wgs: Live<WarpGroup>,
    pub(crate) ctas: Live<Cta>,
    /// The results of retired warps: each role's totals, and the first
    /// [`stats::MAX_WARP_RESULTS`] warps' own (by id).
    pub(crate) role_totals: Vec<RoleTotals>,
    pub(crate) warp_results: Vec<Option<WarpResult>>,
    /// The last cycle the run made progress (see [`Config::livelock_cycles`]).
    pub(crate) last_progress: u64,
    pub(crate) next_block: u32,
    pub(crate) occ: Occupancy,
    pub(crate) names: Names,
    /// Addresses: tensors laid out one after another, 4 KiB aligned.
    pub(crate) tensor_base: Vec<u64>,
    /// Latest cycle any booked work ends (kernel end covers in-flight work).
    pub(crate) horizon: u64,
    pub(crate) mma_flops: u64,
    pub(crate) tma_loads: Slab<TmaLoad>,
    /// The clusters alive now (`crate::sm::cluster`), and remote mbarrier arrivals on their way.
    pub(crate) clusters: Live<Cluster>,
    /// The SMs of each GPC (`preset::Cluster::gpcs`), and the order in which the first wave
    /// takes the SMs (`cta_scheduler::dispatch_order`).
    pub(crate) gpcs: Vec<u32>,
    pub(crate) dispatch_order: Vec<usize>,
    pub(crate) remote_arrivals: Slab<RemoteArrival>,
    pub(crate) sanitizer: Option<Sanitizer>,
    pub(crate) tracer: Option<Tracer>,
    progress: Option<Progress>,
    /// Main-loop iterations and CTAs retired, for progress reports.
    iterations: u64,
    pub(crate) retired: u32,
    /// Trace sampling: the last sample's cycle, each SM's unit busy cycles done by then, and
    /// the bytes through the L2 slices and HBM channels by then (`Engine::sample`).
    pub(crate) sampled_at: u64,
    pub(crate) sample_prev: Vec<[f64; BUSY_UNITS.len()]>,
    pub(crate) sample_mem: (f64, f64),
    /// Global atomic counters, and where they live (after the tensors).
    pub(crate) counters: Vec<i64>,
    /// Per counter, the warps spinning in `WaitCounter` and the value each waits for.
    pub(crate) counter_waiters: Vec<Vec<(u32, i64)>>,
    pub(crate) counter_base: u64,
    /// Local memory (spilled registers) after the counters: one frame of `frame_stride` bytes
    /// per warp slot of the GPU (`crate::sm::local`).
    pub(crate) local_base: u64,
    pub(crate) frame_stride: u64,
    pub(crate) error: Option<SimError>,
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
        let nparts = (p.sm.count * p.sm.partitions) as usize;
        let parts = (0..nparts)
            .map(|_| Partition {
                slots: vec![None; p.sm.warps_per_partition as usize],
                ..Default::default()
            })
            .collect();
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
        Engine {
            k,
            p,
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            mem,
            now: start,
            start,
            q: EventQueue::default(),
            polls_pending: 0,
            sms: (0..p.sm.count).map(|_| Sm::new(p, l1_bytes)).collect(),
            active: vec![0; nparts.div_ceil(64)],
            parts,
            warps: Live::default(),
            wgs: Live::default(),
            ctas: Live::default(),
            role_totals: vec![RoleTotals::new(k.mbarriers.len()); k.roles.len()],
            warp_results: Vec::new(),
            last_progress: start,
            next_block: 0,
            occ,
            tensor_base,
            horizon: start,
            mma_flops: 0,
            tma_loads: Slab::default(),
            clusters: Live::default(),
            gpcs: p.cluster.gpcs(p.sm.count),
            dispatch_order: dispatch_order(
                &p.cluster.gpcs(p.sm.count),
                &p.cluster.dispatch_gpcs,
                p.sm.count as usize,
            ),
            remote_arrivals: Slab::default(),
            sanitizer: cfg.check.then(|| Sanitizer::new(names.clone())),
            names,
            tracer: None,
            progress: None,
            iterations: 0,
            retired: 0,
            sampled_at: start,
            sample_prev,
            sample_mem,
            counters: k.counters.iter().map(|(_, v)| *v).collect(),
            counter_waiters: vec![Vec::new(); k.counters.len()],
            counter_base: next,
            local_base: (next + k.counters.len() as u64 * 128).div_ceil(4096) * 4096,
            frame_stride: k
                .roles
                .iter()
                .map(|r| u64::from(r.spilled()) * crate::sm::local::VALUE_BYTES)
                .max()
                .unwrap_or(0),
            error: None,
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
            self.close_open_intervals();
        }
        self.sample(true);
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
        self.launch_ctas();
        loop {
            while let Some((_, ev)) = self.q.pop_due(self.now) {
                self.handle(ev);
            }
            for word in 0..self.active.len() {
                let mut bits = self.active[word];
                while bits != 0 {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let p = word * 64 + b;
                    self.tick(p);
                    let part = &self.parts[p];
                    if part.check | part.eligible == 0 {
                        self.active[word] &= !(1 << b);
                    }
                }
            }
            let active = self.active.iter().any(|&w| w != 0);
            if let Some(e) = self.error.take() {
                return Err(e);
            }
            self.sample(false);
            self.iterations += 1;
            if let Some(limit) = self.cfg.max_wall {
                if self.iterations.is_multiple_of(WALL_CHECK_EVERY) && started.elapsed() > limit {
                    return Err(SimError::WallLimit {
                        limit,
                        cycle: self.now,
                        retired: self.retired,
                        grid: self.k.grid,
                    });
                }
            }
            if self.iterations.is_multiple_of(PROGRESS_EVERY) {
                if let Some(p) = &self.progress {
                    (p.0)(self.now, self.retired, self.k.grid);
                }
            }
            if active {
                self.now += 1;
            } else if let Some(t) = self
                .q
                .peek_cycle()
                .filter(|_| self.q.len() > self.polls_pending)
            {
                // Events booked during this cycle's ticks take effect at the next cycle at the
                // earliest, so no partition ticks twice in one cycle.
                self.now = t.max(self.now + 1);
            } else {
                // No event, or only the polls of warps that nothing is left to release.
                break;
            }
            if self.now > self.cfg.max_cycles {
                return Err(SimError::CycleLimit {
                    limit: self.cfg.max_cycles,
                });
            }
            if self.now - self.last_progress > self.cfg.livelock_cycles {
                return Err(self.livelock());
            }
        }
        if self.warps.iter().any(|(_, w)| w.acct.exited().is_none())
            || self.next_block < self.k.grid
        {
            return Err(self.deadlock());
        }
        // The kernel ends when its booked work does (stores nobody waits for), which may be
        // past the limit although no event was.
        if self.horizon > self.cfg.max_cycles {
            return Err(SimError::CycleLimit {
                limit: self.cfg.max_cycles,
            });
        }
        Ok(())
    }

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
