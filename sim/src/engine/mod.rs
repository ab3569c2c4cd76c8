//! The discrete-event engine: one clock, one event queue, every SM of the GPU with its partitions,
//! warps, CTAs and units, and the memory system below them. Components do not reach into each other: units are booked through the
//! engine, and completions come back as events.
//!
//! Each cycle: due events are handled (they wake warps or free units), then every *active*
//! partition (one with a warp to evaluate or an eligible warp) evaluates its candidate warps and
//! issues at most one instruction. When no partition is active the clock jumps to the next event,
//! so cost grows with instructions and events, not with elapsed cycles.

pub mod queue;
pub mod server;

use crate::engine::queue::EventQueue;
use crate::engine::server::Server;
use crate::gpu::cta_scheduler::{occupancy, Occupancy};
use crate::gpu::preset::{Preset, SchedulerPolicy};
use crate::memory::system::{MemStats, MemSys};
use crate::observe::trace::{self, Tracer, WarpInfo};
use crate::observe::warp_state::{Accounting, State};
use crate::sm::async_groups::AsyncGroups;
use crate::sm::mbarrier::MBarrier;
use crate::sm::named_barrier::NamedBarrier;
use crate::sm::regfile::RegPool;
use crate::sm::tensor_core::{Hgmma, TensorPipe, NO_SLOT};
use crate::{memory::coalesce, sm::smem, sm::tma};
use isa::expr::Code;
use isa::program::{slot, BarRef, Inst, Kernel, Op, Pipe, SlotRef, WARPS_PER_WARPGROUP, WARP_SIZE};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use std::collections::VecDeque;

/// Control-flow steps a warp may take without issuing before the run is stopped
/// (a loop with no instructions and a huge trip count).
pub const MAX_CONTROL_STEPS: u32 = 1 << 20;
/// Prefix of an instruction error that is a sanitizer finding (reported as `SimError::Hazard`).
const HAZARD_MARK: &str = "\u{0}hazard:";

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

/// Largest per-thread count of one compute instruction (keeps the count in a u32).
pub const MAX_MACRO_COUNT: i64 = 1 << 30;

#[derive(Clone, Debug)]
pub struct Config {
    pub seed: u64,
    /// SM clock: converts HBM bandwidth (bytes per second) into bytes per SM cycle.
    pub clock_mhz: f64,
    /// Stop with an error when simulated time passes this many cycles.
    pub max_cycles: u64,
    /// Run the sanitizer's hazard checks (`SimError::Hazard`).
    pub check: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 0,
            clock_mhz: 1830.0,
            max_cycles: 1_000_000_000,
            check: true,
        }
    }
}

/// Why a run stopped without finishing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("cycle {cycle}: CTA {cta}, warp {warp}: {message}\n  = in {path}")]
    Runtime {
        cycle: u64,
        cta: u32,
        warp: String,
        path: String,
        message: String,
    },
    #[error("deadlock at cycle {cycle}: no event is pending and {warps} warps cannot proceed:\n{}", blocked.join("\n"))]
    Deadlock {
        cycle: u64,
        warps: usize,
        blocked: Vec<String>,
    },
    #[error("hazard at cycle {cycle}, SM {sm}, CTA {cta}, warp {warp}: {message}\n  = in {path}")]
    Hazard {
        cycle: u64,
        sm: u32,
        cta: u32,
        warp: String,
        path: String,
        message: String,
    },
    #[error("the run passed the cycle limit ({limit} cycles; raise it with --max-cycles)")]
    CycleLimit { limit: u64 },
}

/// A piece of a TMA load on its way into shared memory.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    sm: u32,
    cta: u32,
    bar: u32,
    bytes: u64,
    /// On the last chunk: what the box completes.
    complete: Option<TmaDone>,
}

/// What the last chunk of a TMA load completes: its box's bytes, the slot it fills
/// (engine-wide), and the warp and instruction that issued it (for diagnostics).
#[derive(Clone, Copy, Debug)]
struct TmaDone {
    bytes: u64,
    slot: u32,
    warp: u32,
    pc: u32,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    /// A timed stall is over, or a blocked warp was released: evaluate it again.
    Wake(u32),
    /// A named barrier completed: the warp may go on (its `hold` is cleared).
    Release(u32),
    /// The running HGMMA left this SM's tensor pipe.
    TensorDone(u32),
    /// An HGMMA's results are visible to `wgmma.wait_group` of its warpgroup.
    HgmmaComplete(Hgmma),
    /// A chunk of a TMA load is back from L2: move it from L2 through the SM's port.
    TmaChunk(Chunk),
    /// A TMA chunk passed the SM's port: write it into shared memory. Booking the shared-memory
    /// port at this event, not earlier, keeps that port's bookings in time order.
    TmaWrite(Chunk),
    /// TMA bytes are in shared memory: complete-tx on the mbarrier; the slot is filled.
    TxComplete { cta: u32, bar: u32, done: TmaDone },
}

/// What a warp's next instruction can do now.
enum Outcome {
    Ready,
    /// Cannot issue before `until` (scoreboard, busy pipe): stall in `State` until then.
    StallUntil(State, u64),
    /// Waits for another agent to release it (it registered itself as a waiter).
    Blocked(State),
    Exit,
}

struct Warp {
    sm: u32,
    cta: u32,
    role: u16,
    /// Engine-wide warpgroup index.
    wg: u32,
    /// Engine-wide partition index (SM × partitions + partition).
    partition: u32,
    slot: u8,
    pc: u32,
    env: Vec<i64>,
    acct: Accounting,
    /// Warp-instructions left in the current macro instruction (compute, wgmma); 0 = none.
    progress: u32,
    /// Registers written by earlier instructions are ready at this cycle; `reg_kind` is the
    /// stall state while waiting for them.
    reg_ready: u64,
    reg_kind: State,
    /// HGMMAs this warp has issued, and per accumulator label the count that closes the last
    /// one writing it (its accumulators are in flight until the warpgroup completes that many).
    hgmma_issued: u64,
    acc_last: Vec<u64>,
    /// Committed wgmma groups not yet known complete: HGMMA count that closes each.
    wgmma_groups: VecDeque<u64>,
    /// TMA stores' bulk async-groups and cp.async groups.
    stores: AsyncGroups,
    copies: AsyncGroups,
    /// The warp cannot proceed before this cycle (an atomic's result feeds its control flow).
    sync_until: u64,
    /// Per counter, how many `AtomicAdd`s this warp has executed.
    atomics: Vec<u32>,
    regs: u32,
    /// The instruction of the current state interval (for the trace).
    state_pc: u32,
    /// The mbarrier array of the current or last mbarrier wait, and the cycles spent waiting on
    /// each array (the sub-reasons of `mbarrier_wait`).
    waiting_on: u16,
    mbar_wait: Vec<u64>,
    /// Set at issue by a blocking instruction (bar.sync) and cleared by whoever releases it;
    /// `hold_pc` is that instruction.
    hold: Option<State>,
    hold_pc: u32,
    issued: u64,
}

impl Warp {
    /// A result this warp's later instructions read is ready at `ready`; while waiting for
    /// it the warp is in `kind` (the latest-arriving result names the stall).
    fn scoreboard(&mut self, ready: u64, kind: State) {
        if ready >= self.reg_ready {
            self.reg_ready = ready;
            self.reg_kind = kind;
        }
    }
}

struct WarpGroup {
    warps: [u32; WARPS_PER_WARPGROUP as usize],
    submitted: u64,

    completed: u64,
    /// Warps blocked in wait_group and the completed-HGMMA count each needs.
    waiters: Vec<(u32, u64)>,
}

struct Cta {
    block: u32,
    sm: u32,
    mbars: Vec<MBarrier>,
    /// Per mbarrier: warps waiting and the parity each waits for.
    mbar_waiters: Vec<Vec<(u32, u32)>>,
    named: Vec<NamedBarrier>,
    pool: RegPool,
    reg_waiters: Vec<u32>,
    live_warps: u32,
    /// Per counter, the values the CTA's atomics fetched and when each was back.
    atomics: Vec<Vec<(i64, u64)>>,
}

/// One SM's shared units and its CTA slots.
#[derive(Default)]
struct Sm {
    port: Server,
    tensor: TensorPipe,
    tma_issue: Server,
    tma_covered_until: u64,
    tma_busy: u64,
    resident: u32,
    launched: u32,
}

#[derive(Default)]
struct Partition {
    slots: Vec<Option<u32>>,
    /// Slots whose warp must be evaluated at the next tick.
    check: u32,
    /// Slots whose warp could issue at the last evaluation.
    eligible: u32,
    last: Option<usize>,
    /// ALU, FMA, MUFU and the tensor core as used by mma.sync.
    pipes: [Server; 4],
    issued: u64,
}

/// What the sanitizer tracks per shared-memory slot.
#[derive(Clone, Copy, Debug, Default)]
struct SlotState {
    /// TMA loads into the slot not yet complete.
    loads: u32,
    /// Submitted HGMMAs reading the slot not yet complete.
    readers: u32,
}

/// Per-unit busy cycles of the SM.
#[derive(Clone, Debug, Default)]
pub struct UnitBusy {
    pub tensor: u64,
    pub smem: u64,
    /// Summed over partitions (capacity = partitions × cycles).
    pub fma: u64,
    pub alu: u64,
    pub mufu: u64,
    /// Partition tensor cores running mma.sync, summed over partitions.
    pub mma: u64,
    /// Cycles with at least one TMA load in flight.
    pub tma: u64,
    /// Cycles the SMs' ports to L2 were transferring.
    pub l2_port: u64,
    /// Issue slots used, summed over partitions.
    pub issue: u64,
}

/// Per-warp results, in launch order.
#[derive(Clone, Debug)]
pub struct WarpResult {
    pub cta: u32,
    pub sm: u32,
    /// `mbarrier_wait` cycles by mbarrier array, in declaration order.
    pub mbarrier_waits: Vec<u64>,
    pub role: String,
    /// `consumer1.w2`: role, warpgroup index in the role, warp index in the warpgroup.
    pub name: String,
    pub cycles: [u64; State::COUNT],
    pub lifetime: u64,
    pub issued: u64,
}

/// The result of a completed run.
#[derive(Clone, Debug)]
pub struct RunStats {
    pub cycles: u64,
    /// SMs that ran at least one CTA; unit busy cycles are summed over them.
    pub sms_used: u32,
    /// CTAs each SM ran, by SM.
    pub ctas_per_sm_run: Vec<u32>,
    pub warps: Vec<WarpResult>,
    pub units: UnitBusy,
    pub partitions: u32,
    pub flops: u64,
    pub instructions: u64,
    pub events: u64,
    pub mem: MemStats,
    pub occupancy: Occupancy,
}

pub struct Engine<'a> {
    k: &'a Kernel,
    p: &'a Preset,
    cfg: Config,
    now: u64,
    q: EventQueue<Event>,
    rng: ChaCha8Rng,
    sms: Vec<Sm>,
    /// All SMs' partitions, SM-major.
    parts: Vec<Partition>,
    /// Bitset over `parts`: partitions with a warp to evaluate or an eligible warp.
    active: Vec<u64>,
    mem: MemSys,
    warps: Vec<Warp>,
    wgs: Vec<WarpGroup>,
    ctas: Vec<Cta>,
    next_block: u32,
    occ: Occupancy,
    /// Shared-memory slots of every launched CTA (for the sanitizer), and each buffer's first
    /// slot within a CTA's.
    slots: Vec<SlotState>,
    slot_first: Vec<u32>,
    /// Addresses: tensors laid out one after another, 4 KiB aligned.
    tensor_base: Vec<u64>,
    /// Latest cycle any booked work ends (kernel end covers in-flight work).
    horizon: u64,
    mma_flops: u64,
    tracer: Option<Tracer>,
    progress: Option<Progress>,
    /// Main-loop iterations and CTAs retired, for progress reports.
    iterations: u64,
    retired: u32,
    /// Trace sampling: the last sample's cycle, each SM's cumulative unit busy cycles then, and
    /// the memory system's cumulative L2 and DRAM bytes then.
    sampled_at: u64,
    sample_prev: Vec<[u64; 5]>,
    sample_mem: (u64, u64),
    /// Global atomic counters, and where they live (after the tensors).
    counters: Vec<i64>,
    counter_base: u64,
    error: Option<SimError>,
}

fn pipe_index(p: Pipe) -> usize {
    match p {
        Pipe::Alu => 0,
        Pipe::Fma => 1,
        Pipe::Mufu => 2,
        Pipe::Mma => 3,
    }
}

/// FLOPs of one mma.sync m16n8k16.
const MMA_FLOPS: u64 = 2 * 16 * 8 * 16;

impl<'a> Engine<'a> {
    pub fn new(k: &'a Kernel, p: &'a Preset, cfg: Config) -> Self {
        let nparts = (p.sm.count * p.sm.partitions) as usize;
        let parts = (0..nparts)
            .map(|_| Partition {
                slots: vec![None; p.sm.warps_per_partition as usize],
                ..Default::default()
            })
            .collect();
        let mut tensor_base = Vec::new();
        let mut next = 0u64;
        for t in &k.tensors {
            tensor_base.push(next);
            next = (next + t.bytes).div_ceil(4096) * 4096;
        }
        Engine {
            k,
            p,
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            mem: MemSys::new(p, cfg.clock_mhz),
            cfg,
            now: 0,
            q: EventQueue::default(),
            sms: (0..p.sm.count).map(|_| Sm::default()).collect(),
            active: vec![0; nparts.div_ceil(64)],
            parts,
            warps: Vec::new(),
            wgs: Vec::new(),
            ctas: Vec::new(),
            next_block: 0,
            occ: occupancy(k, p),
            tensor_base,
            horizon: 0,
            mma_flops: 0,
            slots: Vec::new(),
            slot_first: k
                .buffers
                .iter()
                .scan(0u32, |acc, b| {
                    let first = *acc;
                    *acc += b.slots;
                    Some(first)
                })
                .collect(),
            tracer: None,
            progress: None,
            iterations: 0,
            retired: 0,
            sampled_at: 0,
            sample_prev: vec![[0; 5]; p.sm.count as usize],
            sample_mem: (0, 0),
            counters: k.counters.iter().map(|(_, v)| *v).collect(),
            counter_base: next,
            error: None,
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
    pub fn run_traced(mut self) -> (Result<(), SimError>, RunStats, Option<Tracer>) {
        let result = self.simulate();
        if result.is_err() {
            self.close_open_intervals();
        }
        self.sample(true);
        let tracer = self.tracer.take();
        (result, self.finish(), tracer)
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
            if self.iterations.is_multiple_of(PROGRESS_EVERY) {
                if let Some(p) = &self.progress {
                    (p.0)(self.now, self.retired, self.k.grid);
                }
            }
            if active {
                self.now += 1;
            } else if let Some(t) = self.q.peek_cycle() {
                // Events booked during this cycle's ticks take effect at the next cycle at the
                // earliest, so no partition ticks twice in one cycle.
                self.now = t.max(self.now + 1);
            } else {
                break;
            }
            if self.now > self.cfg.max_cycles {
                return Err(SimError::CycleLimit {
                    limit: self.cfg.max_cycles,
                });
            }
        }
        if self.warps.iter().any(|w| w.acct.exited().is_none()) || self.next_block < self.k.grid {
            return Err(self.deadlock());
        }
        Ok(())
    }

    /// Writes unit busy fractions per SM and GPU-wide bandwidths for each elapsed sample window
    /// (`last`: also the partial window at the end).
    fn sample(&mut self, last: bool) {
        let Some(t) = &self.tracer else {
            return;
        };
        let every = t.level().sample_every();
        let at = if last {
            self.now.max(self.horizon)
        } else {
            self.now / every * every
        };
        if at <= self.sampled_at || (!last && self.now < self.sampled_at + every) {
            return;
        }
        let span = (at - self.sampled_at) as f64;
        let parts = self.p.sm.partitions as usize;
        let mut rows = Vec::new();
        for (i, sm) in self.sms.iter().enumerate() {
            let pp = &self.parts[i * parts..(i + 1) * parts];
            let now = [
                sm.tensor.busy(),
                sm.port.busy(),
                pp.iter().map(|p| p.pipes[2].busy()).sum::<u64>() / parts as u64,
                sm.tma_busy,
                self.mem.port_busy(i as u32),
            ];
            let before = std::mem::replace(&mut self.sample_prev[i], now);
            if sm.launched > 0 {
                let f = |k: usize| ((now[k] - before[k]) as f64 / span).min(1.0);
                rows.push((
                    i as u32,
                    json!({ "tensor": f(0), "smem": f(1), "mufu": f(2), "tma": f(3), "l2_port": f(4) }),
                ));
            }
        }
        let (l2, dram) = (self.mem.l2_bytes(), self.mem.dram_bytes());
        let gpu = json!({
            "l2_bytes_per_cycle": (l2 - self.sample_mem.0) as f64 / span,
            "dram_bytes_per_cycle": (dram - self.sample_mem.1) as f64 / span,
        });
        self.sample_mem = (l2, dram);
        let start = self.sampled_at;
        self.sampled_at = at;
        let Some(t) = &mut self.tracer else {
            return;
        };
        for (sm, series) in rows {
            t.counters(sm, "busy", start, series);
        }
        t.counters(trace::GPU_PID, "bandwidth", start, gpu);
    }

    /// Reports every live warp's current state interval up to now to the tracer (the run
    /// stopped).
    fn close_open_intervals(&mut self) {
        for w in 0..self.warps.len() as u32 {
            let warp = &self.warps[w as usize];
            if warp.acct.exited().is_none() {
                let (state, since) = (warp.acct.state(), warp.acct.since());
                self.close_interval(w, state, since);
            }
        }
    }

    /// A state interval of warp `w` closed: charges mbarrier waits to their barrier and reports
    /// the interval to the tracer.
    fn close_interval(&mut self, w: u32, state: State, since: u64) {
        let warp = &mut self.warps[w as usize];
        if state == State::MbarrierWait {
            warp.mbar_wait[warp.waiting_on as usize] += self.now - since;
        }
        if let Some(t) = &mut self.tracer {
            let role = &self.k.roles[warp.role as usize];
            let path = role
                .paths
                .get(warp.state_pc as usize)
                .map_or("exit", |p| p.as_str());
            if state == State::MbarrierWait {
                let bar = &self.k.mbarriers[warp.waiting_on as usize].name;
                t.interval(w, state, since, self.now, &format!("{path} on {bar}"));
            } else {
                t.interval(w, state, since, self.now, path);
            }
        }
    }

    fn finish(self) -> RunStats {
        // The last cycle anything happened, or later if booked work was still running.
        let end = self.now.max(self.horizon);
        let p = self.p;
        let pipe_busy = |i: usize| self.parts.iter().map(|pt| pt.pipes[i].busy()).sum::<u64>();
        let mem = self.mem.stats();
        let units = UnitBusy {
            tensor: self.sms.iter().map(|sm| sm.tensor.busy()).sum(),
            smem: self.sms.iter().map(|sm| sm.port.busy()).sum(),
            alu: pipe_busy(0),
            fma: pipe_busy(1),
            mufu: pipe_busy(2),
            mma: pipe_busy(3),
            tma: self.sms.iter().map(|sm| sm.tma_busy).sum(),
            l2_port: mem.port_busy_total,
            issue: self.parts.iter().map(|pt| pt.issued).sum(),
        };
        let warps = self
            .warps
            .iter()
            .map(|w| {
                let role = &self.k.roles[w.role as usize];
                WarpResult {
                    cta: self.ctas[w.cta as usize].block,
                    sm: w.sm,
                    mbarrier_waits: w.mbar_wait.clone(),
                    role: role.name.clone(),
                    name: self.warp_name(w),
                    cycles: w.acct.cycles_at(end),
                    lifetime: w.acct.lifetime_at(end),
                    issued: w.issued,
                }
            })
            .collect();
        RunStats {
            cycles: end,
            sms_used: self.sms.iter().filter(|sm| sm.launched > 0).count() as u32,
            ctas_per_sm_run: self.sms.iter().map(|sm| sm.launched).collect(),
            warps,
            units,
            partitions: p.sm.partitions,
            flops: self.sms.iter().map(|sm| sm.tensor.flops()).sum::<u64>() + self.mma_flops,
            instructions: self.parts.iter().map(|pt| pt.issued).sum(),
            events: self.q.pushed(),
            mem,
            occupancy: self.occ,
        }
    }

    fn warp_name(&self, w: &Warp) -> String {
        let role = &self.k.roles[w.role as usize];
        format!(
            "{}{}.w{}",
            role.name,
            w.env[slot::WG as usize],
            w.env[slot::WARP as usize]
        )
    }

    fn book_horizon(&mut self, t: u64) {
        self.horizon = self.horizon.max(t);
    }

    // ---------------------------------------------------------------- CTAs

    /// Dispatches CTAs in block-id order, each to the SM with room that holds the fewest
    /// (lowest id on a tie): the first wave spreads over all SMs, later CTAs refill as CTAs retire.
    fn launch_ctas(&mut self) {
        while self.next_block < self.k.grid {
            let Some(sm) = (0..self.sms.len())
                .filter(|&i| self.sms[i].resident < self.occ.ctas)
                .min_by_key(|&i| self.sms[i].resident)
            else {
                return;
            };
            let block = self.next_block;
            self.next_block += 1;
            self.sms[sm].resident += 1;
            self.sms[sm].launched += 1;
            self.launch_cta(sm as u32, block);
        }
    }

    fn launch_cta(&mut self, sm: u32, block: u32) {
        let k = self.k;
        let cta_idx = self.ctas.len() as u32;
        let per_cta: u32 = k.buffers.iter().map(|b| b.slots).sum();
        self.slots
            .extend(std::iter::repeat_n(SlotState::default(), per_cta as usize));
        let mut mbars = Vec::new();
        for m in &k.mbarriers {
            for _ in 0..m.count {
                mbars.push(MBarrier::new(m.arrivals));
            }
        }
        self.ctas.push(Cta {
            block,
            sm,
            mbar_waiters: vec![Vec::new(); mbars.len()],
            mbars,
            named: vec![NamedBarrier::default(); self.p.barriers.named as usize],
            // The pool starts empty: every warp holds its launch allocation.
            pool: RegPool::new(self.p.regs.alloc_unit),
            reg_waiters: Vec::new(),
            live_warps: k.warps_per_cta(),
            atomics: vec![Vec::new(); k.counters.len()],
        });
        let mut warp_in_cta = 0u32;
        for (r, role) in k.roles.iter().enumerate() {
            for wg in 0..role.warpgroups {
                let wg_idx = self.wgs.len() as u32;
                let mut members = [0u32; WARPS_PER_WARPGROUP as usize];
                for (w, member) in members.iter_mut().enumerate() {
                    let partition =
                        (sm * self.p.sm.partitions + warp_in_cta % self.p.sm.partitions) as usize;
                    let part = &mut self.parts[partition];
                    let Some(slot_idx) = part.slots.iter().position(Option::is_none) else {
                        unreachable!("occupancy admits only CTAs whose warps fit the partitions")
                    };
                    let id = self.warps.len() as u32;
                    part.slots[slot_idx] = Some(id);
                    part.check |= 1 << slot_idx;
                    self.active[partition / 64] |= 1 << (partition % 64);
                    let mut env = vec![0i64; role.slots as usize];
                    env[slot::WARP as usize] = w as i64;
                    env[slot::WG as usize] = wg as i64;
                    env[slot::WARP_ID as usize] = warp_in_cta as i64;
                    env[slot::CTA as usize] = block as i64;
                    env[slot::NUM_CTAS as usize] = k.grid as i64;
                    self.warps.push(Warp {
                        sm,
                        cta: cta_idx,
                        role: r as u16,
                        wg: wg_idx,
                        partition: partition as u32,
                        slot: slot_idx as u8,
                        pc: 0,
                        env,
                        acct: Accounting::new(self.now, State::NotSelected),
                        progress: 0,
                        reg_ready: 0,
                        reg_kind: State::Wait,
                        hgmma_issued: 0,
                        acc_last: vec![0; k.accs.len()],
                        wgmma_groups: VecDeque::new(),
                        stores: AsyncGroups::default(),
                        copies: AsyncGroups::default(),
                        sync_until: 0,
                        atomics: vec![0; k.counters.len()],
                        regs: k.regs_per_thread,
                        hold: None,
                        hold_pc: 0,
                        state_pc: 0,
                        waiting_on: 0,
                        mbar_wait: vec![0; k.mbarriers.len()],
                        issued: 0,
                    });
                    if let Some(t) = &mut self.tracer {
                        let name = format!("{}{wg}.w{w}", role.name);
                        t.warp(
                            id,
                            WarpInfo {
                                sm,
                                name,
                                cta: block,
                            },
                        );
                    }
                    *member = id;
                    warp_in_cta += 1;
                }
                self.wgs.push(WarpGroup {
                    warps: members,
                    submitted: 0,

                    completed: 0,
                    waiters: Vec::new(),
                });
            }
        }
    }

    fn retire_warp(&mut self, w: u32) {
        let (old, since) = self.warps[w as usize].acct.exit(self.now);
        self.close_interval(w, old, since);
        let warp = &self.warps[w as usize];
        let (p, s, cta) = (
            warp.partition as usize,
            warp.slot as usize,
            warp.cta as usize,
        );
        let warp_sm = warp.sm as usize;
        self.parts[p].slots[s] = None;
        self.parts[p].eligible &= !(1 << s);
        self.parts[p].check &= !(1 << s);
        self.ctas[cta].live_warps -= 1;
        if self.ctas[cta].live_warps == 0 {
            self.sms[warp_sm].resident -= 1;
            self.retired += 1;
            self.launch_ctas();
        }
    }

    // ---------------------------------------------------------------- events

    fn wake_at(&mut self, w: u32, t: u64) {
        self.q.push(t, Event::Wake(w));
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::Wake(w) => {
                let warp = &self.warps[w as usize];
                if warp.acct.exited().is_none() {
                    let p = warp.partition as usize;
                    self.parts[p].check |= 1 << warp.slot;
                    self.active[p / 64] |= 1 << (p % 64);
                }
            }
            Event::Release(w) => {
                self.warps[w as usize].hold = None;
                self.handle(Event::Wake(w));
            }
            Event::TensorDone(sm) => {
                if let Some(h) = self.sms[sm as usize].tensor.finish() {
                    let t = self.now + self.p.tensor.extra_latency;
                    self.q.push(t, Event::HgmmaComplete(h));
                }
                self.start_tensor(sm);
            }
            Event::HgmmaComplete(h) => {
                for s in h.reads.into_iter().filter(|&s| s != NO_SLOT) {
                    self.slots[s as usize].readers -= 1;
                }
                let g = &mut self.wgs[h.warpgroup as usize];
                g.completed += 1;
                let done = g.completed;
                let mut released = Vec::new();
                g.waiters.retain(|&(w, target)| {
                    let ok = done >= target;
                    if ok {
                        released.push(w);
                    }
                    !ok
                });
                for w in released {
                    self.wake_at(w, self.now);
                }
            }
            Event::TmaChunk(c) => {
                let arrived = self.mem.port(c.sm, self.now, c.bytes);
                self.q.push(arrived, Event::TmaWrite(c));
            }
            Event::TmaWrite(Chunk {
                sm,
                cta,
                bar,
                bytes,
                complete,
            }) => {
                let cycles = bytes.div_ceil(self.p.smem.bytes_per_cycle());
                let (_, end) = self.sms[sm as usize].port.book(self.now, cycles);
                self.book_horizon(end);
                if let Some(done) = complete {
                    self.q.push(end, Event::TxComplete { cta, bar, done });
                }
            }
            Event::TxComplete { cta, bar, done } => {
                let (bytes, slot) = (done.bytes, done.slot);
                self.slots[slot as usize].loads -= 1;
                if self.tracer.is_some() {
                    let args = json!({
                        "cta": self.ctas[cta as usize].block,
                        "mbarrier": self.mbar_name(bar),
                        "bytes": bytes,
                    });
                    let sm = self.cta_sm(cta);
                    if let Some(tr) = &mut self.tracer {
                        tr.instant(sm, self.now, "TMA complete", args);
                    }
                }
                if self.ctas[cta as usize].mbars[bar as usize].complete_tx(bytes) {
                    self.phase_completed(cta, bar);
                } else if let Some(message) = self.excess_tx(cta, bar) {
                    self.hazard_at((done.warp, done.pc), cta, message);
                }
            }
        }
    }

    fn start_tensor(&mut self, sm: u32) {
        let bpc = self.p.smem.bytes_per_cycle();
        let unit = &mut self.sms[sm as usize];
        if let Some(end) =
            unit.tensor
                .start_next(self.now, self.p.tensor.flops_per_cycle, &mut unit.port, bpc)
        {
            self.book_horizon(end);
            self.q.push(end, Event::TensorDone(sm));
        }
    }

    fn phase_completed(&mut self, cta: u32, bar: u32) {
        if self.tracer.is_some() {
            let c = &self.ctas[cta as usize];
            let args = json!({
                "cta": c.block,
                "mbarrier": self.mbar_name(bar),
                "completed_phase": c.mbars[bar as usize].phase() - 1,
            });
            let sm = self.cta_sm(cta);
            if let Some(tr) = &mut self.tracer {
                tr.instant(sm, self.now, "mbarrier phase", args);
            }
        }
        let t = self.now + self.p.barriers.mbarrier_latency;
        let c = &mut self.ctas[cta as usize];
        let m = &c.mbars[bar as usize];
        let mut released = Vec::new();
        c.mbar_waiters[bar as usize].retain(|&(w, parity)| {
            let ok = m.passes(parity);
            if ok {
                released.push(w);
            }
            !ok
        });
        for w in released {
            self.wake_at(w, t);
        }
    }

    // ---------------------------------------------------------------- scheduling

    fn tick(&mut self, p: usize) {
        let cand = self.parts[p].check | self.parts[p].eligible;
        self.parts[p].check = 0;
        let mut bits = cand;
        while bits != 0 {
            let s = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let Some(w) = self.parts[p].slots[s] else {
                continue;
            };
            let outcome = match self.evaluate(w) {
                Ok(o) => o,
                Err(msg) => {
                    self.fail(w, msg);
                    return;
                }
            };
            let bit = 1u32 << s;
            match outcome {
                Outcome::Ready => {
                    self.parts[p].eligible |= bit;
                    self.set_state(w, State::NotSelected);
                }
                Outcome::StallUntil(state, until) => {
                    self.parts[p].eligible &= !bit;
                    self.set_state(w, state);
                    self.wake_at(w, until);
                }
                Outcome::Blocked(state) => {
                    self.parts[p].eligible &= !bit;
                    self.set_state(w, state);
                }
                Outcome::Exit => self.retire_warp(w),
            }
        }
        let Some(s) = self.pick(p) else {
            return;
        };
        let Some(w) = self.parts[p].slots[s] else {
            return;
        };
        let part = &mut self.parts[p];
        part.eligible &= !(1 << s);
        part.check |= 1 << s;
        part.last = Some(s);
        part.issued += 1;
        self.set_state(w, State::Selected);
        self.warps[w as usize].issued += 1;
        if let Err(msg) = self.issue(w) {
            self.fail(w, msg);
        }
    }

    /// The scheduler's choice among eligible slots (see `SchedulerPolicy`).
    fn pick(&self, p: usize) -> Option<usize> {
        let part = &self.parts[p];
        if part.eligible == 0 {
            return None;
        }
        let slots = part.slots.len();
        match self.p.sm.scheduler {
            SchedulerPolicy::Gto => {
                if let Some(last) = part.last {
                    if part.eligible & (1 << last) != 0 {
                        return Some(last);
                    }
                }
                // Oldest: warp ids grow with launch order.
                (0..slots)
                    .filter(|s| part.eligible & (1 << s) != 0)
                    .min_by_key(|&s| part.slots[s])
            }
            SchedulerPolicy::Lrr => {
                let start = part.last.map_or(0, |l| l + 1);
                (0..slots)
                    .map(|i| (start + i) % slots)
                    .find(|s| part.eligible & (1 << s) != 0)
            }
        }
    }

    fn set_state(&mut self, w: u32, s: State) {
        let warp = &mut self.warps[w as usize];
        if warp.acct.state() != s {
            let (old, since) = warp.acct.set(self.now, s);
            self.close_interval(w, old, since);
            let warp = &mut self.warps[w as usize];
            // A warp held at a named barrier has moved past the bar.sync that holds it.
            warp.state_pc = if warp.hold.is_some() {
                warp.hold_pc
            } else {
                warp.pc
            };
        }
    }

    fn fail(&mut self, w: u32, message: String) {
        if self.error.is_some() {
            return;
        }
        if let Some(m) = message.strip_prefix(HAZARD_MARK) {
            let (cta, pc) = (self.warps[w as usize].cta, self.warps[w as usize].pc);
            self.hazard_at((w, pc), cta, m.to_string());
            return;
        }
        let warp = &self.warps[w as usize];
        let role = &self.k.roles[warp.role as usize];
        let path = role
            .paths
            .get(warp.pc as usize)
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

    // ---------------------------------------------------------------- instruction semantics

    fn eval(&self, w: u32, code: &Code) -> Result<i64, String> {
        code.eval(&self.warps[w as usize].env)
            .map_err(|e| format!("expression cannot be evaluated: {e}"))
    }

    fn bar_index(&self, w: u32, b: &BarRef) -> Result<u32, String> {
        self.k.mbarriers[b.array as usize]
            .flat(self.eval(w, &b.index)?)
            .map_err(|e| e.to_string())
    }

    fn slot_base(&self, w: u32, s: &SlotRef) -> Result<u64, String> {
        // Every CTA's shared memory starts 128-byte aligned, so bank mapping needs no CTA base.
        self.k.buffers[s.buf as usize]
            .slot_offset(self.eval(w, &s.slot)?)
            .map_err(|e| e.to_string())
    }

    /// The 32 lanes' addresses of a per-lane expression; each lane's `width` bytes must lie
    /// inside `limit` bytes from `base`.
    fn lane_addrs(
        &mut self,
        w: u32,
        addr: &Code,
        base: u64,
        limit: u64,
        width: u32,
        what: &str,
    ) -> Result<Vec<u64>, String> {
        let mut out = Vec::with_capacity(WARP_SIZE as usize);
        for lane in 0..WARP_SIZE as i64 {
            self.warps[w as usize].env[slot::LANE as usize] = lane;
            let a = self.eval(w, addr)?;
            if a < 0 || a as u64 + width as u64 > limit {
                return Err(format!(
                    "lane {lane} accesses bytes {a}..{}, outside {what} ({limit} bytes)",
                    a + width as i64
                ));
            }
            out.push(base + a as u64);
        }
        self.warps[w as usize].env[slot::LANE as usize] = 0;
        Ok(out)
    }

    /// Runs free control flow up to the next issuing instruction and says whether it can issue.
    fn evaluate(&mut self, w: u32) -> Result<Outcome, String> {
        if let Some(s) = self.warps[w as usize].hold {
            return Ok(Outcome::Blocked(s));
        }
        let sync = self.warps[w as usize].sync_until;
        if sync > self.now {
            return Ok(Outcome::StallUntil(State::LongScoreboard, sync));
        }
        let code = &self.k.roles[self.warps[w as usize].role as usize].code;
        let mut steps = 0u32;
        loop {
            let pc = self.warps[w as usize].pc as usize;
            let Some(op) = code.get(pc) else {
                return Ok(Outcome::Exit);
            };
            steps += 1;
            if steps > MAX_CONTROL_STEPS {
                return Err(format!(
                    "{MAX_CONTROL_STEPS} control-flow steps without an instruction (an empty loop with a huge trip count?)"
                ));
            }
            let warp = &mut self.warps[w as usize];
            match op {
                Op::LoopStart {
                    var,
                    count_slot,
                    count,
                    exit,
                } => {
                    let n = count
                        .eval(&warp.env)
                        .map_err(|e| format!("loop count: {e}"))?;
                    if n > isa::compile::MAX_TRIPS {
                        return Err(format!(
                            "loop trip count {n} exceeds the limit {}",
                            isa::compile::MAX_TRIPS
                        ));
                    }
                    warp.env[*var as usize] = 0;
                    warp.env[*count_slot as usize] = n;
                    warp.pc = if n > 0 { pc as u32 + 1 } else { *exit };
                }
                Op::LoopEnd {
                    var,
                    count_slot,
                    body,
                } => {
                    warp.env[*var as usize] += 1;
                    warp.pc = if warp.env[*var as usize] < warp.env[*count_slot as usize] {
                        *body
                    } else {
                        pc as u32 + 1
                    };
                }
                Op::BranchIfZero { cond, target } => {
                    let c = cond
                        .eval(&warp.env)
                        .map_err(|e| format!("condition: {e}"))?;
                    warp.pc = if c == 0 { *target } else { pc as u32 + 1 };
                }
                Op::Jump { target } => warp.pc = *target,
                Op::Set { slot, value } => {
                    warp.env[*slot as usize] =
                        value.eval(&warp.env).map_err(|e| format!("let: {e}"))?;
                    warp.pc += 1;
                }
                Op::Issue(inst) => match self.can_issue(w, inst)? {
                    Some(outcome) => return Ok(outcome),
                    // An instruction with nothing to do (a zero count): skip it.
                    None => self.warps[w as usize].pc += 1,
                },
            }
        }
    }

    /// Whether `inst` can issue now; `None` when it has no work and is skipped.
    fn can_issue(&mut self, w: u32, inst: &Inst) -> Result<Option<Outcome>, String> {
        let now = self.now;
        let warp = &self.warps[w as usize];
        let scoreboard =
            (warp.reg_ready > now).then_some(Outcome::StallUntil(warp.reg_kind, warp.reg_ready));
        let starting = warp.progress == 0;
        let outcome = match inst {
            Inst::Compute { pipe, count, .. } => {
                if starting && self.eval(w, count)? <= 0 {
                    return Ok(None);
                }
                let pipe_free =
                    self.parts[warp.partition as usize].pipes[pipe_index(*pipe)].next_free();
                match scoreboard {
                    Some(stall) if starting => stall,
                    _ if pipe_free > now => Outcome::StallUntil(State::MathPipeThrottle, pipe_free),
                    _ => Outcome::Ready,
                }
            }
            Inst::Wgmma { .. } | Inst::WgmmaFence => match scoreboard {
                Some(stall) if starting => stall,
                _ => Outcome::Ready,
            },
            Inst::WgmmaWait { n } => {
                let n = self.eval(w, n)?.max(0) as usize;
                let done = self.wgs[warp.wg as usize].completed;
                let warp = &mut self.warps[w as usize];
                while warp.wgmma_groups.front().is_some_and(|&end| end <= done) {
                    warp.wgmma_groups.pop_front();
                }
                let pending = warp.wgmma_groups.len();
                if pending <= n {
                    Outcome::Ready
                } else {
                    let target = warp.wgmma_groups[pending - n - 1];
                    let wg = warp.wg as usize;
                    let list = &mut self.wgs[wg].waiters;
                    if !list.contains(&(w, target)) {
                        list.push((w, target));
                    }
                    Outcome::Blocked(State::WgmmaWait)
                }
            }
            Inst::Wait { bar, parity } => {
                let b = self.bar_index(w, bar)?;
                let parity = self.eval(w, parity)? as u32;
                let cta = &mut self.ctas[warp.cta as usize];
                if cta.mbars[b as usize].passes(parity) {
                    Outcome::Ready
                } else {
                    let list = &mut cta.mbar_waiters[b as usize];
                    if !list.contains(&(w, parity)) {
                        list.push((w, parity));
                    }
                    self.warps[w as usize].waiting_on = bar.array;
                    Outcome::Blocked(State::MbarrierWait)
                }
            }
            Inst::TmaLoad { .. } | Inst::TmaStore { .. } => {
                let free = self.sms[warp.sm as usize].tma_issue.next_free();
                if free > now {
                    Outcome::StallUntil(State::MioThrottle, free)
                } else {
                    Outcome::Ready
                }
            }
            Inst::TmaStoreWait { n } | Inst::CpAsyncWait { n } => {
                let n = self.eval(w, n)?.max(0) as usize;
                let warp = &mut self.warps[w as usize];
                let groups = match inst {
                    Inst::TmaStoreWait { .. } => &mut warp.stores,
                    _ => &mut warp.copies,
                };
                match groups.wait_until(now, n) {
                    Some(t) => Outcome::StallUntil(State::BulkWait, t),
                    None => Outcome::Ready,
                }
            }
            Inst::SetMaxNReg { inc: true, regs } => {
                let cta = &mut self.ctas[warp.cta as usize];
                if cta.pool.can_resize(warp.regs, *regs) {
                    Outcome::Ready
                } else {
                    if !cta.reg_waiters.contains(&w) {
                        cta.reg_waiters.push(w);
                    }
                    Outcome::Blocked(State::Setmaxnreg)
                }
            }
            Inst::Shared { store, .. } => {
                let port_free = self.sms[warp.sm as usize].port.next_free();
                let backlog_ok = port_free <= now + self.p.smem.queue_cycles;
                match scoreboard {
                    Some(stall) if *store => stall,
                    _ if !backlog_ok => Outcome::StallUntil(
                        State::MioThrottle,
                        port_free - self.p.smem.queue_cycles,
                    ),
                    _ => Outcome::Ready,
                }
            }
            Inst::Global { store: true, .. } => scoreboard.unwrap_or(Outcome::Ready),
            Inst::Global { store: false, .. }
            | Inst::TmaStoreCommit
            | Inst::CpAsyncCommit
            | Inst::CpAsync { .. }
            | Inst::AtomicAdd { .. }
            | Inst::Arrive { .. }
            | Inst::ArriveExpectTx { .. }
            | Inst::ExpectTx { .. }
            | Inst::WgmmaCommit
            | Inst::BarSync { .. }
            | Inst::BarArrive { .. }
            | Inst::SetMaxNReg { inc: false, .. } => Outcome::Ready,
        };
        Ok(Some(outcome))
    }

    /// Executes the instruction at the warp's pc (already known to be issuable).
    fn issue(&mut self, w: u32) -> Result<(), String> {
        let now = self.now;
        let role = &self.k.roles[self.warps[w as usize].role as usize];
        let Op::Issue(inst) = &role.code[self.warps[w as usize].pc as usize] else {
            unreachable!("evaluate stops only at issuing ops")
        };
        let mut advance = true;
        match inst {
            Inst::Compute { pipe, count, acc } => {
                if let Some(acc) = acc.filter(|_| self.cfg.check) {
                    let warp = &self.warps[w as usize];
                    let done = self.wgs[warp.wg as usize].completed;
                    if warp.acc_last[acc as usize] > done {
                        return Err(self.hazard_msg(format!(
                            "{} reads accumulators `{}` before the wgmma writing them has completed ({} wgmma instruction(s) of the warpgroup pending; no wgmma.wait_group covers them)",
                            pipe.name(),
                            self.k.accs[acc as usize],
                            warp.hgmma_issued - done
                        )));
                    }
                }
                if self.warps[w as usize].progress == 0 {
                    let n = self.eval(w, count)?;
                    if n > MAX_MACRO_COUNT {
                        return Err(format!(
                            "{} count {n} exceeds {MAX_MACRO_COUNT} warp-instructions per instruction",
                            pipe.name()
                        ));
                    }
                    self.warps[w as usize].progress = n as u32;
                }
                let (cycles, latency, kind) = match pipe {
                    Pipe::Alu => (
                        self.p.pipes.alu.cycles_per_warp_instr(),
                        self.p.pipes.alu.latency,
                        State::Wait,
                    ),
                    Pipe::Fma => (
                        self.p.pipes.fma.cycles_per_warp_instr(),
                        self.p.pipes.fma.latency,
                        State::Wait,
                    ),
                    Pipe::Mufu => (
                        self.p.pipes.mufu.cycles_per_warp_instr(),
                        self.p.pipes.mufu.latency,
                        State::ShortScoreboard,
                    ),
                    Pipe::Mma => (
                        self.p.tensor.mma_cycles,
                        self.p.tensor.mma_latency,
                        State::Wait,
                    ),
                };
                if *pipe == Pipe::Mma {
                    self.mma_flops += MMA_FLOPS;
                }
                let warp = &mut self.warps[w as usize];
                let (start, end) =
                    self.parts[warp.partition as usize].pipes[pipe_index(*pipe)].book(now, cycles);
                self.horizon = self.horizon.max(end);
                warp.scoreboard(start + latency, kind);
                warp.progress -= 1;
                advance = warp.progress == 0;
            }
            Inst::Wgmma {
                n,
                ksteps,
                a,
                b,
                acc,
            } => {
                let reads = [
                    match a {
                        Some(a) => self.slot_index(w, a)?,
                        None => NO_SLOT,
                    },
                    self.slot_index(w, b)?,
                ];
                if self.cfg.check {
                    let operands = [(a.as_ref(), reads[0]), (Some(b), reads[1])];
                    for (r, s) in operands {
                        if let Some(r) = r.filter(|_| self.slots[s as usize].loads > 0) {
                            return Err(self.hazard_msg(format!(
                                "wgmma reads {} while a TMA load into it is still in flight (read before the data arrived: the wait on its full barrier passed for another phase?)",
                                self.slot_name(r.buf, s)
                            )));
                        }
                    }
                }
                let warp = &mut self.warps[w as usize];
                if warp.progress == 0 {
                    warp.progress = *ksteps;
                }
                warp.progress -= 1;
                advance = warp.progress == 0;
                warp.hgmma_issued += 1;
                warp.acc_last[*acc as usize] = warp.hgmma_issued;
                let (wg, sm) = (warp.wg as usize, warp.sm);
                let ready = self.wgs[wg]
                    .warps
                    .iter()
                    .map(|&m| self.warps[m as usize].hgmma_issued)
                    .min()
                    .unwrap_or(0);
                // The HGMMA starts once all four warps of the warpgroup have issued it.
                while self.wgs[wg].submitted < ready {
                    self.wgs[wg].submitted += 1;
                    for s in reads.into_iter().filter(|&s| s != NO_SLOT) {
                        self.slots[s as usize].readers += 1;
                    }
                    self.sms[sm as usize].tensor.submit(Hgmma {
                        warpgroup: wg as u32,
                        n: *n,
                        a_smem: a.is_some(),
                        reads,
                    });
                }
                if self.sms[sm as usize].tensor.is_idle() {
                    self.start_tensor(sm);
                }
            }
            Inst::WgmmaFence | Inst::WgmmaWait { .. } | Inst::Wait { .. } => {}
            Inst::WgmmaCommit => {
                let warp = &mut self.warps[w as usize];
                warp.wgmma_groups.push_back(warp.hgmma_issued);
            }
            Inst::Arrive { bar, count } => {
                let b = self.bar_index(w, bar)?;
                self.arrive(w, b, *count)?;
            }
            Inst::ArriveExpectTx { bar, bytes } => {
                let b = self.bar_index(w, bar)?;
                let bytes = self.tx_bytes(w, bytes)?;
                let cta = self.warps[w as usize].cta;
                if self.ctas[cta as usize].mbars[b as usize].expect_tx(bytes) {
                    self.phase_completed(cta, b);
                }
                self.arrive(w, b, 1)?;
            }
            Inst::ExpectTx { bar, bytes } => {
                let b = self.bar_index(w, bar)?;
                let bytes = self.tx_bytes(w, bytes)?;
                let cta = self.warps[w as usize].cta;
                if self.ctas[cta as usize].mbars[b as usize].expect_tx(bytes) {
                    self.phase_completed(cta, b);
                }
            }
            Inst::TmaLoad {
                tensor,
                coords,
                dst,
                bar,
                bytes,
            } => {
                self.slot_base(w, dst)?;
                let b = self.bar_index(w, bar)?;
                let spans = self.tma_spans(w, *tensor, coords, dst.buf)?;
                let (sm, cta) = (self.warps[w as usize].sm, self.warps[w as usize].cta);
                let slot = self.slot_index(w, dst)?;
                let readers = self.slots[slot as usize].readers;
                if self.cfg.check && readers > 0 {
                    return Err(self.hazard_msg(format!(
                        "TMA load overwrites {} while {readers} wgmma instruction(s) still read it (write-after-read: the slot was released before the wgmma.wait_group that covers its readers)",
                        self.slot_name(dst.buf, slot)
                    )));
                }
                self.slots[slot as usize].loads += 1;
                let (start, _) = self.sms[sm as usize]
                    .tma_issue
                    .book(now, self.p.tma.issue_cycles);
                let at = start + self.p.tma.extra_latency;
                // Group the box's spans into chunks that stream back independently.
                let mut chunks: Vec<(u64, u64)> = Vec::new();
                let (mut ready, mut size) = (at, 0u64);
                for (addr, len) in spans {
                    let mut off = 0;
                    while off < len {
                        let piece = (len - off).min(self.p.tma.chunk_bytes - size);
                        ready = ready.max(self.mem.read(sm, at, addr + off, piece, &mut self.rng));
                        size += piece;
                        off += piece;
                        if size == self.p.tma.chunk_bytes {
                            chunks.push((ready, size));
                            (ready, size) = (at, 0);
                        }
                    }
                }
                if size > 0 {
                    chunks.push((ready, size));
                }
                let last = chunks.iter().map(|c| c.0).max().unwrap_or(at);
                match chunks.len() {
                    // Entirely outside the tensor: zero fill, no traffic.
                    0 => self.q.push(
                        at,
                        Event::TxComplete {
                            cta,
                            bar: b,
                            done: TmaDone {
                                bytes: *bytes,
                                slot,
                                warp: w,
                                pc: self.warps[w as usize].pc,
                            },
                        },
                    ),
                    n => {
                        for (i, (t, size)) in chunks.into_iter().enumerate() {
                            let complete = (i + 1 == n).then_some(TmaDone {
                                bytes: *bytes,
                                slot,
                                warp: w,
                                pc: self.warps[w as usize].pc,
                            });
                            let ev = Event::TmaChunk(Chunk {
                                sm,
                                cta,
                                bar: b,
                                bytes: size,
                                complete,
                            });
                            // The last chunk completes the box, so it must arrive last.
                            self.q.push(if i + 1 == n { last } else { t }, ev);
                        }
                    }
                }
                self.book_horizon(last);
                // Cycles with at least one load in flight (loads are issued in time order).
                let unit = &mut self.sms[sm as usize];
                unit.tma_busy += last.saturating_sub(now.max(unit.tma_covered_until));
                unit.tma_covered_until = unit.tma_covered_until.max(last);
            }
            Inst::TmaStore {
                tensor,
                coords,
                src,
                bytes,
            } => {
                self.slot_base(w, src)?;
                let spans = self.tma_spans(w, *tensor, coords, src.buf)?;
                let sm = self.warps[w as usize].sm;
                let unit = &mut self.sms[sm as usize];
                let (start, _) = unit.tma_issue.book(now, self.p.tma.issue_cycles);
                let (_, read_end) = unit
                    .port
                    .book(start, bytes.div_ceil(self.p.smem.bytes_per_cycle()));
                let traffic: u64 = spans.iter().map(|s| s.1).sum();
                let sent = self.mem.port(sm, read_end, traffic);
                let mut done = sent;
                for (addr, len) in spans {
                    done = done.max(self.mem.write(sm, sent, addr, len, &mut self.rng));
                }
                self.book_horizon(done);
                self.warps[w as usize].stores.add(done);
            }
            Inst::TmaStoreCommit => self.warps[w as usize].stores.commit(),
            Inst::CpAsyncCommit => self.warps[w as usize].copies.commit(),
            Inst::TmaStoreWait { .. } | Inst::CpAsyncWait { .. } => {}
            Inst::CpAsync {
                tensor,
                src,
                dst,
                addr,
                width,
            } => {
                let sectors = self.tensor_sectors(w, *tensor, src, *width)?;
                let slot = self.slot_base(w, dst)?;
                let limit = self.k.buffers[dst.buf as usize].slot_bytes;
                let to = self.lane_addrs(w, addr, slot, limit, *width, "the slot")?;
                let sector = self.p.memory.sector_bytes;
                let sm = self.warps[w as usize].sm;
                let mut back = self.mem.port(sm, now, sectors.len() as u64 * sector);
                for (a, n) in coalesce::line_requests(&sectors, sector, self.p.memory.l2.line_bytes)
                {
                    back = back.max(self.mem.read(sm, now, a, n, &mut self.rng));
                }
                // The shared-memory write is booked at issue (keeping the port in time order);
                // the copy completes when both the data and the write are through.
                let wf = smem::wavefronts(&to, *width, self.p.smem.banks, self.p.smem.bank_bytes);
                let (_, written) = self.sms[sm as usize].port.book(now, wf as u64);
                let done = back.max(written);
                self.book_horizon(done);
                self.warps[w as usize].copies.add(done);
            }
            Inst::AtomicAdd { counter, add, slot } => {
                let c = *counter as usize;
                let add = self.eval(w, add)?;
                let (sm, cta) = (
                    self.warps[w as usize].sm,
                    self.warps[w as usize].cta as usize,
                );
                let k = self.warps[w as usize].atomics[c] as usize;
                self.warps[w as usize].atomics[c] += 1;
                let (value, ready) = match self.ctas[cta].atomics[c].get(k) {
                    Some(&r) => r,
                    None => {
                        // One L2 round trip on the counter's line.
                        let addr = self.counter_base + c as u64 * 128;
                        let ready = self.mem.write(sm, now, addr, 4, &mut self.rng);
                        let old = self.counters[c];
                        self.counters[c] = old
                            .checked_add(add)
                            .ok_or_else(|| "atomic counter overflow".to_string())?;
                        self.ctas[cta].atomics[c].push((old, ready));
                        (old, ready)
                    }
                };
                let warp = &mut self.warps[w as usize];
                warp.env[*slot as usize] = value;
                warp.sync_until = warp.sync_until.max(ready);
            }
            Inst::BarSync { id, threads } => {
                let id = self.named_id(w, id)?;
                self.bar_arrive(w, id, *threads, true)?;
            }
            Inst::BarArrive { id, threads } => {
                let id = self.named_id(w, id)?;
                self.bar_arrive(w, id, *threads, false)?;
            }
            Inst::SetMaxNReg { inc, regs } => {
                let warp = &mut self.warps[w as usize];
                let from = warp.regs;
                if *inc && from > *regs || !*inc && from < *regs {
                    return Err(format!(
                        "setmaxnreg.{} {regs} with {from} registers per thread (.inc needs current <= target, .dec current >= target)",
                        if *inc { "inc" } else { "dec" }
                    ));
                }
                let cta = warp.cta as usize;
                if !self.ctas[cta].pool.resize(from, *regs) {
                    return Err(format!(
                        "setmaxnreg.inc {regs}: the CTA's register pool cannot supply it"
                    ));
                }
                self.warps[w as usize].regs = *regs;
                if !*inc {
                    // Freed registers may satisfy warps blocked in setmaxnreg.inc.
                    for waiter in std::mem::take(&mut self.ctas[cta].reg_waiters) {
                        self.wake_at(waiter, now);
                    }
                }
            }
            Inst::Shared {
                store,
                slot: s,
                addr,
                width,
            } => {
                let base = self.slot_base(w, s)?;
                let limit = self.k.buffers[s.buf as usize].slot_bytes;
                let addrs = self.lane_addrs(w, addr, base, limit, *width, "the slot")?;
                let wf =
                    smem::wavefronts(&addrs, *width, self.p.smem.banks, self.p.smem.bank_bytes);
                let sm = self.warps[w as usize].sm as usize;
                let (_, end) = self.sms[sm].port.book(now, wf as u64);
                self.book_horizon(end);
                if !*store {
                    let ready = end + self.p.smem.latency;
                    self.warps[w as usize].scoreboard(ready, State::ShortScoreboard);
                }
            }
            Inst::Global {
                store,
                tensor,
                addr,
                width,
            } => {
                let sector = self.p.memory.sector_bytes;
                let sectors = self.tensor_sectors(w, *tensor, addr, *width)?;
                let bytes = sectors.len() as u64 * sector;
                let requests =
                    coalesce::line_requests(&sectors, sector, self.p.memory.l2.line_bytes);
                let sm = self.warps[w as usize].sm;
                // The port is booked at issue so its bookings stay in time order.
                let sent = self.mem.port(sm, now, bytes);
                let mut done = if *store { sent } else { now };
                for (a, n) in requests {
                    let t = if *store {
                        self.mem.write(sm, sent, a, n, &mut self.rng)
                    } else {
                        self.mem.read(sm, now, a, n, &mut self.rng)
                    };
                    done = done.max(t);
                }
                let done = if *store { done } else { done.max(sent) };
                self.book_horizon(done);
                if !*store {
                    self.warps[w as usize].scoreboard(done, State::LongScoreboard);
                }
            }
        }
        if advance {
            self.warps[w as usize].pc += 1;
        }
        Ok(())
    }

    /// The 32-byte sectors (indices) a warp's per-lane access of `width` bytes at byte offsets
    /// `addr` of `tensor` touches.
    fn tensor_sectors(
        &mut self,
        w: u32,
        tensor: u16,
        addr: &Code,
        width: u32,
    ) -> Result<Vec<u64>, String> {
        let t = &self.k.tensors[tensor as usize];
        let base = self.tensor_base[tensor as usize];
        let addrs = self.lane_addrs(w, addr, base, t.bytes, width, "the tensor")?;
        Ok(coalesce::sectors(&addrs, width, self.p.memory.sector_bytes))
    }

    /// The global-memory spans (absolute addresses) of the TMA box of buffer `buf` at `coords`.
    fn tma_spans(
        &self,
        w: u32,
        tensor: u16,
        coords: &[Code],
        buf: u16,
    ) -> Result<Vec<(u64, u64)>, String> {
        let t = &self.k.tensors[tensor as usize];
        let c = coords
            .iter()
            .map(|c| self.eval(w, c))
            .collect::<Result<Vec<i64>, String>>()?;
        let base = self.tensor_base[tensor as usize];
        let boxdims = &self.k.buffers[buf as usize].shape;
        Ok(tma::box_spans(&t.shape, t.dtype.bytes(), &c, boxdims)
            .into_iter()
            .map(|(off, len)| (base + off, len))
            .collect())
    }

    /// The engine-wide index of a slot reference's slot.
    fn slot_index(&self, w: u32, s: &SlotRef) -> Result<u32, String> {
        let i = self.eval(w, &s.slot)?;
        self.k.buffers[s.buf as usize]
            .slot_offset(i)
            .map_err(|e| e.to_string())?;
        let per_cta: u32 = self.k.buffers.iter().map(|b| b.slots).sum();
        let cta = self.warps[w as usize].cta;
        Ok(cta * per_cta + self.slot_first[s.buf as usize] + i as u32)
    }

    /// `sB[2]` for an engine-wide slot index of buffer `buf`.
    fn slot_name(&self, buf: u16, slot: u32) -> String {
        let per_cta: u32 = self.k.buffers.iter().map(|b| b.slots).sum();
        let i = slot % per_cta.max(1) - self.slot_first[buf as usize];
        format!("{}[{i}]", self.k.buffers[buf as usize].name)
    }

    /// A sanitizer finding for the issuing warp: `issue` turns it into a hazard error.
    fn hazard_msg(&self, message: String) -> String {
        format!("{HAZARD_MARK}{message}")
    }

    /// A sanitizer finding about warp `w`'s instruction at `pc`.
    fn hazard_at(&mut self, (w, pc): (u32, u32), cta: u32, message: String) {
        if self.error.is_some() {
            return;
        }
        let c = &self.ctas[cta as usize];
        let wr = &self.warps[w as usize];
        let role = &self.k.roles[wr.role as usize];
        let (warp, path) = (
            self.warp_name(wr),
            role.paths.get(pc as usize).cloned().unwrap_or_default(),
        );
        self.error = Some(SimError::Hazard {
            cycle: self.now,
            sm: c.sm,
            cta: c.block,
            warp,
            path,
            message,
        });
    }

    fn tx_bytes(&self, w: u32, bytes: &Code) -> Result<u64, String> {
        let b = self.eval(w, bytes)?;
        if !(0..1 << 20).contains(&b) {
            return Err(format!("transaction byte count {b} is outside 0..2^20"));
        }
        Ok(b as u64)
    }

    fn arrive(&mut self, w: u32, bar: u32, count: u32) -> Result<(), String> {
        let cta = self.warps[w as usize].cta;
        let m = &mut self.ctas[cta as usize].mbars[bar as usize];
        let completed = m
            .arrive(count)
            .map_err(|e| format!("mbarrier {}: {e}", self.mbar_name(bar)))?;
        if completed {
            self.phase_completed(cta, bar);
        } else if let Some(extra) = self.excess_tx(cta, bar) {
            return Err(self.hazard_msg(extra));
        }
        Ok(())
    }

    /// With every arrival of the phase in (so every expect-tx), bytes beyond the expected count
    /// mean the phase can never complete.
    fn excess_tx(&self, cta: u32, bar: u32) -> Option<String> {
        let m = &self.ctas[cta as usize].mbars[bar as usize];
        (self.cfg.check && m.pending_arrivals() == 0 && m.pending_tx() < 0).then(|| {
            format!(
                "mbarrier {} received {} transaction bytes beyond its expect-tx count (its phase can never complete)",
                self.mbar_name(bar),
                -m.pending_tx()
            )
        })
    }

    /// The SM a CTA (engine-wide index) runs on.
    fn cta_sm(&self, cta: u32) -> u32 {
        self.ctas[cta as usize].sm
    }

    fn mbar_name(&self, flat: u32) -> String {
        let m = self
            .k
            .mbarriers
            .iter()
            .rev()
            .find(|m| m.first <= flat)
            .expect("flat index comes from a declared mbarrier");
        format!("{}[{}]", m.name, flat - m.first)
    }

    fn named_id(&self, w: u32, id: &Code) -> Result<usize, String> {
        let v = self.eval(w, id)?;
        if v < 0 || v >= self.p.barriers.named as i64 {
            return Err(format!(
                "named barrier id {v} is out of range 0..{}",
                self.p.barriers.named
            ));
        }
        Ok(v as usize)
    }

    fn bar_arrive(&mut self, w: u32, id: usize, threads: u32, wait: bool) -> Result<(), String> {
        let cta = self.warps[w as usize].cta as usize;
        let released = self.ctas[cta].named[id]
            .arrive(threads, wait.then_some(w))
            .map_err(|e| format!("named barrier {id}: {e}"))?;
        if wait {
            let warp = &mut self.warps[w as usize];
            warp.hold = Some(State::NamedBarrier);
            warp.hold_pc = warp.pc;
        }
        if let Some(mut waiters) = released {
            // Every waiting participant, the last arriver too, resumes after the latency.
            if wait {
                waiters.push(w);
            }
            let t = self.now + self.p.barriers.named_latency;
            if self.tracer.is_some() {
                let args = json!({ "cta": self.ctas[cta].block, "id": id, "threads": threads });
                let sm = self.warps[w as usize].sm;
                if let Some(tr) = &mut self.tracer {
                    tr.instant(sm, self.now, "named barrier", args);
                }
            }
            for waiter in waiters {
                self.q.push(t, Event::Release(waiter));
            }
        }
        Ok(())
    }

    // ---------------------------------------------------------------- deadlock

    fn deadlock(&self) -> SimError {
        let mut blocked = Vec::new();
        for (id, w) in self.warps.iter().enumerate() {
            if w.acct.exited().is_some() {
                continue;
            }
            let id = id as u32;
            let role = &self.k.roles[w.role as usize];
            let cta = &self.ctas[w.cta as usize];
            let pc = if w.hold.is_some() { w.hold_pc } else { w.pc };
            let path = role.paths.get(pc as usize).cloned().unwrap_or_default();
            let why = match w.acct.state() {
                State::MbarrierWait => cta
                    .mbar_waiters
                    .iter()
                    .enumerate()
                    .flat_map(|(b, ws)| ws.iter().filter(|&&(x, _)| x == id).map(move |&(_, p)| (b, p)))
                    .map(|(b, parity)| {
                        let m = &cta.mbars[b];
                        let tx = match m.pending_tx() {
                            t if t < 0 => format!("{} tx bytes more than expected", -t),
                            t => format!("{t} tx bytes missing"),
                        };
                        format!(
                            "waits on mbarrier {} for the phase of parity {parity}; it is in phase {} with {} arrivals and {tx}",
                            self.mbar_name(b as u32),
                            m.phase(),
                            m.pending_arrivals(),
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
                State::NamedBarrier => cta
                    .named
                    .iter()
                    .enumerate()
                    .find(|(_, b)| b.waiters().contains(&id))
                    .map(|(i, b)| {
                        format!(
                            "waits at named barrier {i}: {} of {} threads arrived",
                            b.arrived(),
                            b.expected()
                        )
                    })
                    .unwrap_or_default(),
                State::WgmmaWait => format!(
                    "waits for wgmma groups ({} pending)",
                    w.wgmma_groups.len()
                ),
                State::Setmaxnreg => format!(
                    "waits in setmaxnreg.inc for registers ({} free in the CTA pool)",
                    cta.pool.free()
                ),
                s => format!("in state {}", s.name()),
            };
            blocked.push(format!(
                "  CTA {} warp {} at {path}: {why}",
                cta.block,
                self.warp_name(w)
            ));
        }
        let warps = blocked.len();
        if self.next_block < self.k.grid {
            blocked.push(format!(
                "  {} CTAs never launched",
                self.k.grid - self.next_block
            ));
        }
        SimError::Deadlock {
            cycle: self.now,
            warps,
            blocked,
        }
    }
}
