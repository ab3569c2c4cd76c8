//! The discrete-event engine: one clock, one event queue, one SM (for now) with its partitions,
//! warps, CTAs and units. Components do not reach into each other: units are booked through the
//! engine, and completions come back as events.
//!
//! Each cycle: due events are handled (they wake warps or free units), then every *active*
//! partition (one with a warp to evaluate or an eligible warp) evaluates its candidate warps and
//! issues at most one instruction. When no partition is active the clock jumps to the next event,
//! so cost grows with instructions and events, not with elapsed cycles.

use crate::cta_scheduler::{occupancy, Occupancy};
use crate::mbarrier::MBarrier;
use crate::memory::Memory;
use crate::named_barrier::NamedBarrier;
use crate::preset::{Preset, SchedulerPolicy};
use crate::queue::EventQueue;
use crate::regfile::RegPool;
use crate::server::Server;
use crate::tensor_core::{Hgmma, TensorPipe};
use crate::warp_state::{Accounting, State};
use crate::{gmem, smem};
use isa::expr::Code;
use isa::program::{slot, BarRef, Inst, Kernel, Op, Pipe, SlotRef, WARPS_PER_WARPGROUP, WARP_SIZE};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// Control-flow steps a warp may take without issuing before the run is stopped
/// (a loop with no instructions and a huge trip count).
const MAX_CONTROL_STEPS: u32 = 1 << 20;
/// Largest per-thread count of one compute instruction (keeps the count in a u32).
const MAX_MACRO_COUNT: i64 = 1 << 30;

#[derive(Clone, Debug)]
pub struct Config {
    pub seed: u64,
    /// Stop with an error when simulated time passes this many cycles.
    pub max_cycles: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 0,
            max_cycles: 1_000_000_000,
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
    #[error("deadlock at cycle {cycle}: no event is pending and {} warps cannot proceed:\n{}", blocked.len(), blocked.join("\n"))]
    Deadlock { cycle: u64, blocked: Vec<String> },
    #[error("the run passed the cycle limit ({limit} cycles; raise it with --max-cycles)")]
    CycleLimit { limit: u64 },
}

#[derive(Clone, Copy, Debug)]
enum Event {
    /// A timed stall is over, or a blocked warp was released: evaluate it again.
    Wake(u32),
    /// The running HGMMA left the tensor pipe.
    TensorDone,
    /// An HGMMA's results are visible to `wgmma.wait_group` of its warpgroup.
    HgmmaComplete(u32),
    /// A chunk of a TMA load arrived at the SM: write it into shared memory. The last chunk
    /// carries the box's bytes to complete on the mbarrier.
    TmaChunk {
        cta: u32,
        bar: u32,
        bytes: u64,
        complete: Option<u64>,
    },
    /// TMA bytes are in shared memory: complete-tx on the mbarrier.
    TxComplete { cta: u32, bar: u32, bytes: u64 },
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
    cta: u32,
    role: u16,
    /// Engine-wide warpgroup index.
    wg: u32,
    partition: u8,
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
    /// HGMMAs this warp has issued.
    hgmma_issued: u64,
    /// Committed wgmma groups not yet known complete: HGMMA count that closes each.
    wgmma_groups: VecDeque<u64>,
    /// Completion cycle of uncommitted TMA stores, and of committed bulk async-groups.
    store_pending: u64,
    store_groups: VecDeque<u64>,
    regs: u32,
    /// Set at issue by a blocking instruction (bar.sync) and cleared by whoever releases it.
    hold: Option<State>,
    issued: u64,
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
    mbars: Vec<MBarrier>,
    /// Per mbarrier: warps waiting and the parity each waits for.
    mbar_waiters: Vec<Vec<(u32, u32)>>,
    named: Vec<NamedBarrier>,
    pool: RegPool,
    reg_waiters: Vec<u32>,
    live_warps: u32,
}

#[derive(Default)]
struct Partition {
    slots: Vec<Option<u32>>,
    /// Slots whose warp must be evaluated at the next tick.
    check: u32,
    /// Slots whose warp could issue at the last evaluation.
    eligible: u32,
    last: Option<usize>,
    pipes: [Server; 3],
    issued: u64,
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
    /// Cycles with at least one TMA load in flight.
    pub tma: u64,
    /// Cycles the temporary memory path was transferring.
    pub memory: u64,
    /// Issue slots used, summed over partitions.
    pub issue: u64,
}

/// Per-warp results, in launch order.
#[derive(Clone, Debug)]
pub struct WarpResult {
    pub cta: u32,
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
    pub warps: Vec<WarpResult>,
    pub units: UnitBusy,
    pub partitions: u32,
    pub flops: u64,
    pub instructions: u64,
    pub events: u64,
    pub memory_bytes: u64,
    pub occupancy: Occupancy,
}

pub struct Engine<'a> {
    k: &'a Kernel,
    p: &'a Preset,
    cfg: Config,
    now: u64,
    q: EventQueue<Event>,
    rng: ChaCha8Rng,
    parts: Vec<Partition>,
    port: Server,
    tensor: TensorPipe,
    tma_issue: Server,
    tma_covered_until: u64,
    tma_busy: u64,
    memory: Memory,
    warps: Vec<Warp>,
    wgs: Vec<WarpGroup>,
    ctas: Vec<Cta>,
    next_block: u32,
    resident: u32,
    occ: Occupancy,
    /// Addresses: tensors laid out one after another, 4 KiB aligned.
    tensor_base: Vec<u64>,
    /// Latest cycle any booked work ends (kernel end covers in-flight work).
    horizon: u64,
    error: Option<SimError>,
}

fn pipe_index(p: Pipe) -> usize {
    match p {
        Pipe::Alu => 0,
        Pipe::Fma => 1,
        Pipe::Mufu => 2,
    }
}

impl<'a> Engine<'a> {
    pub fn new(k: &'a Kernel, p: &'a Preset, cfg: Config) -> Self {
        let parts = (0..p.sm.partitions)
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
            cfg,
            now: 0,
            q: EventQueue::default(),
            parts,
            port: Server::default(),
            tensor: TensorPipe::default(),
            tma_issue: Server::default(),
            tma_covered_until: 0,
            tma_busy: 0,
            memory: Memory::new(&p.memory),
            warps: Vec::new(),
            wgs: Vec::new(),
            ctas: Vec::new(),
            next_block: 0,
            resident: 0,
            occ: occupancy(k, p),
            tensor_base,
            horizon: 0,
            error: None,
        }
    }

    /// Runs the kernel to completion.
    pub fn run(mut self) -> Result<RunStats, SimError> {
        if self.occ.ctas == 0 {
            // Static validation keeps per-CTA needs within the preset's SM, so this is a bug guard.
            return Err(SimError::Deadlock {
                cycle: 0,
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
            let mut active = false;
            for p in 0..self.parts.len() {
                let part = &self.parts[p];
                if part.check | part.eligible != 0 {
                    self.tick(p);
                    let part = &self.parts[p];
                    active |= part.check | part.eligible != 0;
                }
            }
            if let Some(e) = self.error.take() {
                return Err(e);
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
        Ok(self.finish())
    }

    fn finish(self) -> RunStats {
        // The last cycle anything happened, or later if booked work was still running.
        let end = self.now.max(self.horizon);
        let p = self.p;
        let pipe_busy = |i: usize| self.parts.iter().map(|pt| pt.pipes[i].busy()).sum::<u64>();
        let units = UnitBusy {
            tensor: self.tensor.busy(),
            smem: self.port.busy(),
            alu: pipe_busy(0),
            fma: pipe_busy(1),
            mufu: pipe_busy(2),
            tma: self.tma_busy,
            memory: self.memory.busy(),
            issue: self.parts.iter().map(|pt| pt.issued).sum(),
        };
        let warps = self
            .warps
            .iter()
            .map(|w| {
                let role = &self.k.roles[w.role as usize];
                WarpResult {
                    cta: self.ctas[w.cta as usize].block,
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
            warps,
            units,
            partitions: p.sm.partitions,
            flops: self.tensor.flops(),
            instructions: self.parts.iter().map(|pt| pt.issued).sum(),
            events: self.q.pushed(),
            memory_bytes: self.memory.bytes(),
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

    fn launch_ctas(&mut self) {
        while self.next_block < self.k.grid && self.resident < self.occ.ctas {
            let block = self.next_block;
            self.next_block += 1;
            self.resident += 1;
            self.launch_cta(block);
        }
    }

    fn launch_cta(&mut self, block: u32) {
        let k = self.k;
        let cta_idx = self.ctas.len() as u32;
        let mut mbars = Vec::new();
        for m in &k.mbarriers {
            for _ in 0..m.count {
                mbars.push(MBarrier::new(m.arrivals));
            }
        }
        self.ctas.push(Cta {
            block,
            mbar_waiters: vec![Vec::new(); mbars.len()],
            mbars,
            named: vec![NamedBarrier::default(); self.p.barriers.named as usize],
            // The pool starts empty: every warp holds its launch allocation.
            pool: RegPool::new(self.p.regs.alloc_unit),
            reg_waiters: Vec::new(),
            live_warps: k.warps_per_cta(),
        });
        let mut warp_in_cta = 0u32;
        for (r, role) in k.roles.iter().enumerate() {
            for wg in 0..role.warpgroups {
                let wg_idx = self.wgs.len() as u32;
                let mut members = [0u32; WARPS_PER_WARPGROUP as usize];
                for (w, member) in members.iter_mut().enumerate() {
                    let partition = (warp_in_cta % self.p.sm.partitions) as usize;
                    let part = &mut self.parts[partition];
                    let Some(slot_idx) = part.slots.iter().position(Option::is_none) else {
                        unreachable!("occupancy admits only CTAs whose warps fit the partitions")
                    };
                    let id = self.warps.len() as u32;
                    part.slots[slot_idx] = Some(id);
                    part.check |= 1 << slot_idx;
                    let mut env = vec![0i64; role.slots as usize];
                    env[slot::WARP as usize] = w as i64;
                    env[slot::WG as usize] = wg as i64;
                    env[slot::WARP_ID as usize] = warp_in_cta as i64;
                    env[slot::CTA as usize] = block as i64;
                    self.warps.push(Warp {
                        cta: cta_idx,
                        role: r as u16,
                        wg: wg_idx,
                        partition: partition as u8,
                        slot: slot_idx as u8,
                        pc: 0,
                        env,
                        acct: Accounting::new(self.now, State::NotSelected),
                        progress: 0,
                        reg_ready: 0,
                        reg_kind: State::Wait,
                        hgmma_issued: 0,
                        wgmma_groups: VecDeque::new(),
                        store_pending: 0,
                        store_groups: VecDeque::new(),
                        regs: k.regs_per_thread,
                        hold: None,
                        issued: 0,
                    });
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
        let warp = &mut self.warps[w as usize];
        warp.acct.exit(self.now);
        let (p, s, cta) = (
            warp.partition as usize,
            warp.slot as usize,
            warp.cta as usize,
        );
        self.parts[p].slots[s] = None;
        self.parts[p].eligible &= !(1 << s);
        self.parts[p].check &= !(1 << s);
        self.ctas[cta].live_warps -= 1;
        if self.ctas[cta].live_warps == 0 {
            self.resident -= 1;
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
                    self.parts[warp.partition as usize].check |= 1 << warp.slot;
                }
            }
            Event::TensorDone => {
                if let Some(h) = self.tensor.finish() {
                    let t = self.now + self.p.tensor.extra_latency;
                    self.q.push(t, Event::HgmmaComplete(h.warpgroup));
                }
                self.start_tensor();
            }
            Event::HgmmaComplete(wg) => {
                let g = &mut self.wgs[wg as usize];
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
            Event::TmaChunk {
                cta,
                bar,
                bytes,
                complete,
            } => {
                let cycles = bytes.div_ceil(self.p.smem.bytes_per_cycle());
                let (_, end) = self.port.book(self.now, cycles);
                self.book_horizon(end);
                if let Some(total) = complete {
                    self.q.push(
                        end,
                        Event::TxComplete {
                            cta,
                            bar,
                            bytes: total,
                        },
                    );
                }
            }
            Event::TxComplete { cta, bar, bytes } => {
                if self.ctas[cta as usize].mbars[bar as usize].complete_tx(bytes) {
                    self.phase_completed(cta, bar);
                }
            }
        }
    }

    fn start_tensor(&mut self) {
        let bpc = self.p.smem.bytes_per_cycle();
        if let Some(end) =
            self.tensor
                .start_next(self.now, self.p.tensor.flops_per_cycle, &mut self.port, bpc)
        {
            self.book_horizon(end);
            self.q.push(end, Event::TensorDone);
        }
    }

    fn phase_completed(&mut self, cta: u32, bar: u32) {
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
            warp.acct.set(self.now, s);
        }
    }

    fn fail(&mut self, w: u32, message: String) {
        if self.error.is_some() {
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
        let info = &self.k.mbarriers[b.array as usize];
        let i = self.eval(w, &b.index)?;
        if i < 0 || i >= info.count as i64 {
            return Err(format!(
                "mbarrier index {i} is out of range: `{}` has {} elements",
                info.name, info.count
            ));
        }
        Ok(info.first + i as u32)
    }

    fn slot_base(&self, w: u32, s: &SlotRef) -> Result<u64, String> {
        let b = &self.k.buffers[s.buf as usize];
        let i = self.eval(w, &s.slot)?;
        if i < 0 || i >= b.slots as i64 {
            return Err(format!(
                "slot {i} of `{}` is out of range: it has {} slots",
                b.name, b.slots
            ));
        }
        // Every CTA's shared memory starts 128-byte aligned, so bank mapping needs no CTA base.
        Ok(b.base + i as u64 * b.slot_bytes)
    }

    /// The 32 lanes' addresses of a per-lane expression.
    fn lane_addrs(
        &mut self,
        w: u32,
        addr: &Code,
        base: u64,
        limit: u64,
        what: &str,
    ) -> Result<Vec<u64>, String> {
        let mut out = Vec::with_capacity(WARP_SIZE as usize);
        for lane in 0..WARP_SIZE as i64 {
            self.warps[w as usize].env[slot::LANE as usize] = lane;
            let a = self.eval(w, addr)?;
            if a < 0 || a as u64 >= limit {
                return Err(format!(
                    "lane {lane} addresses byte {a}, outside {what} ({limit} bytes)"
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
            Inst::Compute { pipe, count } => {
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
                    self.wgs[wg].waiters.push((w, target));
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
                    cta.mbar_waiters[b as usize].push((w, parity));
                    Outcome::Blocked(State::MbarrierWait)
                }
            }
            Inst::TmaLoad { .. } | Inst::TmaStore { .. } => {
                let free = self.tma_issue.next_free();
                if free > now {
                    Outcome::StallUntil(State::MioThrottle, free)
                } else {
                    Outcome::Ready
                }
            }
            Inst::TmaStoreWait { n } => {
                let n = self.eval(w, n)?.max(0) as usize;
                let warp = &mut self.warps[w as usize];
                while warp.store_groups.front().is_some_and(|&t| t <= now) {
                    warp.store_groups.pop_front();
                }
                // All but the `n` most recently committed groups must be complete.
                let older = warp.store_groups.len().saturating_sub(n);
                match warp.store_groups.iter().take(older).max() {
                    Some(&t) => Outcome::StallUntil(State::BulkWait, t),
                    None => Outcome::Ready,
                }
            }
            Inst::SetMaxNReg { inc: true, regs } => {
                let cta = &mut self.ctas[warp.cta as usize];
                if cta.pool.can_resize(warp.regs, *regs) {
                    Outcome::Ready
                } else {
                    cta.reg_waiters.push(w);
                    Outcome::Blocked(State::Setmaxnreg)
                }
            }
            Inst::Shared { store, .. } => {
                let backlog_ok = self.port.next_free() <= now + self.p.smem.queue_cycles;
                match scoreboard {
                    Some(stall) if *store => stall,
                    _ if !backlog_ok => Outcome::StallUntil(
                        State::MioThrottle,
                        self.port.next_free() - self.p.smem.queue_cycles,
                    ),
                    _ => Outcome::Ready,
                }
            }
            Inst::Global { store: true, .. } => scoreboard.unwrap_or(Outcome::Ready),
            Inst::Global { store: false, .. }
            | Inst::TmaStoreCommit
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
            Inst::Compute { pipe, count } => {
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
                let pp = match pipe {
                    Pipe::Alu => &self.p.pipes.alu,
                    Pipe::Fma => &self.p.pipes.fma,
                    Pipe::Mufu => &self.p.pipes.mufu,
                };
                let warp = &mut self.warps[w as usize];
                let (start, end) = self.parts[warp.partition as usize].pipes[pipe_index(*pipe)]
                    .book(now, pp.cycles_per_warp_instr());
                self.horizon = self.horizon.max(end);
                let ready = start + pp.latency;
                if ready >= warp.reg_ready {
                    warp.reg_ready = ready;
                    warp.reg_kind = if *pipe == Pipe::Mufu {
                        State::ShortScoreboard
                    } else {
                        State::Wait
                    };
                }
                warp.progress -= 1;
                advance = warp.progress == 0;
            }
            Inst::Wgmma { n, ksteps, a, .. } => {
                let warp = &mut self.warps[w as usize];
                if warp.progress == 0 {
                    warp.progress = *ksteps;
                }
                warp.progress -= 1;
                advance = warp.progress == 0;
                warp.hgmma_issued += 1;
                let wg = warp.wg as usize;
                let ready = self.wgs[wg]
                    .warps
                    .iter()
                    .map(|&m| self.warps[m as usize].hgmma_issued)
                    .min()
                    .unwrap_or(0);
                // The HGMMA starts once all four warps of the warpgroup have issued it.
                while self.wgs[wg].submitted < ready {
                    self.wgs[wg].submitted += 1;
                    self.tensor.submit(Hgmma {
                        warpgroup: wg as u32,
                        n: *n,
                        a_smem: a.is_some(),
                    });
                }
                if self.tensor.is_idle() {
                    self.start_tensor();
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
                let cta = self.warps[w as usize].cta as usize;
                self.ctas[cta].mbars[b as usize].expect_tx(bytes);
                self.arrive(w, b, 1)?;
            }
            Inst::ExpectTx { bar, bytes } => {
                let b = self.bar_index(w, bar)?;
                let bytes = self.tx_bytes(w, bytes)?;
                let cta = self.warps[w as usize].cta as usize;
                self.ctas[cta].mbars[b as usize].expect_tx(bytes);
            }
            Inst::TmaLoad {
                dst, bar, bytes, ..
            } => {
                self.slot_base(w, dst)?;
                let b = self.bar_index(w, bar)?;
                let cta = self.warps[w as usize].cta;
                let (start, _) = self.tma_issue.book(now, self.p.tma.issue_cycles);
                let chunk = self.p.tma.chunk_bytes;
                let chunks = bytes.div_ceil(chunk);
                let mut last = start;
                for i in 0..chunks {
                    let size = chunk.min(bytes - i * chunk);
                    let arrive =
                        self.memory
                            .request(start, size, self.p.tma.extra_latency, &mut self.rng);
                    last = last.max(arrive);
                    let complete = (i + 1 == chunks).then_some(*bytes);
                    self.q.push(
                        arrive,
                        Event::TmaChunk {
                            cta,
                            bar: b,
                            bytes: size,
                            complete,
                        },
                    );
                }
                self.book_horizon(last);
                // Cycles with at least one load in flight (loads are issued in time order).
                self.tma_busy += last.saturating_sub(now.max(self.tma_covered_until));
                self.tma_covered_until = self.tma_covered_until.max(last);
            }
            Inst::TmaStore { src, bytes, .. } => {
                self.slot_base(w, src)?;
                let (start, _) = self.tma_issue.book(now, self.p.tma.issue_cycles);
                let (_, read_end) = self
                    .port
                    .book(start, bytes.div_ceil(self.p.smem.bytes_per_cycle()));
                let done =
                    self.memory
                        .request(read_end, *bytes, self.p.tma.extra_latency, &mut self.rng);
                self.book_horizon(done);
                let warp = &mut self.warps[w as usize];
                warp.store_pending = warp.store_pending.max(done);
            }
            Inst::TmaStoreCommit => {
                let warp = &mut self.warps[w as usize];
                let t = std::mem::take(&mut warp.store_pending);
                warp.store_groups.push_back(t);
            }
            Inst::TmaStoreWait { .. } => {}
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
                warp.regs = *regs;
                let cta = warp.cta as usize;
                let granted = self.ctas[cta].pool.resize(from, *regs);
                debug_assert!(granted, "evaluate checked the pool");
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
                let addrs = self.lane_addrs(w, addr, base, limit, "the slot")?;
                let wf =
                    smem::wavefronts(&addrs, *width, self.p.smem.banks, self.p.smem.bank_bytes);
                let (_, end) = self.port.book(now, wf as u64);
                self.book_horizon(end);
                if !*store {
                    let warp = &mut self.warps[w as usize];
                    warp.reg_ready = warp.reg_ready.max(end + self.p.smem.latency);
                    warp.reg_kind = State::ShortScoreboard;
                }
            }
            Inst::Global {
                store,
                tensor,
                addr,
                width,
            } => {
                let t = &self.k.tensors[*tensor as usize];
                let base = self.tensor_base[*tensor as usize];
                let addrs = self.lane_addrs(w, addr, base, t.bytes, "the tensor")?;
                let sectors = gmem::sectors(&addrs, *width, self.p.memory.sector_bytes);
                let bytes = sectors as u64 * self.p.memory.sector_bytes;
                let done = self.memory.request(now, bytes, 0, &mut self.rng);
                self.book_horizon(done);
                if !*store {
                    let warp = &mut self.warps[w as usize];
                    warp.reg_ready = warp.reg_ready.max(done);
                    warp.reg_kind = State::LongScoreboard;
                }
            }
        }
        if advance {
            self.warps[w as usize].pc += 1;
        }
        Ok(())
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
        let completed = self.ctas[cta as usize].mbars[bar as usize]
            .arrive(count)
            .map_err(|e| format!("mbarrier {}: {e}", self.mbar_name(bar)))?;
        if completed {
            self.phase_completed(cta, bar);
        }
        Ok(())
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
        match released {
            Some(waiters) => {
                let t = self.now + self.p.barriers.named_latency;
                for waiter in waiters {
                    self.warps[waiter as usize].hold = None;
                    self.wake_at(waiter, t);
                }
            }
            None if wait => self.warps[w as usize].hold = Some(State::NamedBarrier),
            None => {}
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
            let path = role.paths.get(w.pc as usize).cloned().unwrap_or_default();
            let why = match w.acct.state() {
                State::MbarrierWait => cta
                    .mbar_waiters
                    .iter()
                    .enumerate()
                    .flat_map(|(b, ws)| ws.iter().filter(|&&(x, _)| x == id).map(move |&(_, p)| (b, p)))
                    .map(|(b, parity)| {
                        let m = &cta.mbars[b];
                        format!(
                            "waits on mbarrier {} for the phase of parity {parity}; it is in phase {} with {} arrivals and {} tx bytes missing",
                            self.mbar_name(b as u32),
                            m.phase(),
                            m.pending_arrivals(),
                            m.pending_tx()
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
        if self.next_block < self.k.grid {
            blocked.push(format!(
                "  {} CTAs never launched",
                self.k.grid - self.next_block
            ));
        }
        SimError::Deadlock {
            cycle: self.now,
            blocked,
        }
    }
}
