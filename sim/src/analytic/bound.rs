//! The generic resource bound of any compiled kernel: walk every warp's program functionally (no
//! timing), add up what each instruction asks of each unit with the engine's own cost formulas,
//! and divide by the unit's capacity. The busiest unit bounds the kernel's time from below: no
//! schedule can finish sooner than the time its busiest unit needs.
//!
//! Units and capacities (per cycle):
//! - per SM: `tensor` (HGMMA math, one at a time), `smem` (the shared-memory port: HGMMA operands,
//!   ld/st.shared and cp.async wavefronts, TMA box bytes over the port width), `tma` (TMA issue
//!   cycles),
//!   `l2_port` (bytes through the SM's port to L2, `memory.sm_bytes_per_cycle`);
//! - per partition (the busiest one counts): `issue` (one instruction), `alu`, `fma`, `mufu`,
//!   `mma` (pipe cycles per warp-instruction); warp `w` of a CTA runs on partition `w % partitions`;
//! - GPU-wide: `l2` (all L2 request bytes over `memory.l2.bytes_per_cycle`) and `hbm` (bytes that
//!   must cross HBM during the kernel over the sustained bandwidth).
//!
//! CTA `b` runs on SM `b % SMs`, which is the engine's placement for the first wave and for later
//! waves of equal CTAs; an SM's demand is the sum over its CTAs, so a last wave with one CTA costs
//! a whole CTA time (wave quantization). HBM bytes are the distinct L2 lines that a miss must fill
//! (touched by a read or a partial-line write) plus the written lines that cannot all stay dirty
//! in L2 at the end (written lines beyond the L2's capacity). Atomics: the k-th atomic of CTA `c`
//! is assumed to be the `(c + k·num_ctas)`-th on its counter (round-robin tile order).
//! Blind spots (see `docs/analytic.md`): no latency, no dependencies between instructions or
//! warps, L2 slices and HBM channels assumed evenly loaded.

use crate::engine::MAX_CONTROL_STEPS;
use crate::gpu::cta_scheduler::occupancy;
use crate::gpu::preset::Preset;
use crate::sm::pipes::MAX_MACRO_COUNT;
use crate::sm::tensor_core::Hgmma;
use crate::{memory::coalesce, sm::smem, sm::tma};
use isa::expr::Code;
use isa::program::{slot, Inst, Kernel, Op, Pipe, RoleInfo, SlotRef, WARPS_PER_WARPGROUP};
use std::collections::HashMap;

/// Walk steps (ops visited, 32 per per-lane address, one per TMA box span) before the bound gives
/// up. A step costs about 80 ns (a 4096³ GEMM walks 4.8 M steps in 0.4 s, a quarter of its
/// simulation time), so this caps the walk near 20 s, for kernels that take minutes to simulate.
pub const WALK_BUDGET: u64 = 1 << 28;

/// Unit names in tie-break order: of units with equal time, the first one listed binds.
pub const UNITS: [&str; 11] = [
    "tensor", "mma", "smem", "issue", "mufu", "fma", "alu", "tma", "l2_port", "l2", "hbm",
];

/// What one SM's CTAs ask of its units.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Demand {
    /// HGMMA math cycles on the SM's tensor pipe.
    pub tensor: u64,
    /// Shared-memory port cycles (wavefronts).
    pub smem: u64,
    /// TMA issue cycles.
    pub tma: u64,
    /// Bytes through the SM's port to L2.
    pub port_bytes: u64,
    /// Bytes the SM's requests move through L2.
    pub l2_bytes: u64,
    /// Per partition: cycles of the ALU, FMA, MUFU and mma.sync pipes, in that order.
    pub pipes: Vec<[u64; 4]>,
    /// Per partition: issue slots.
    pub issue: Vec<u64>,
}

impl Demand {
    fn new(partitions: usize) -> Self {
        Demand {
            pipes: vec![[0; 4]; partitions],
            issue: vec![0; partitions],
            ..Default::default()
        }
    }

    fn add(&mut self, o: &Demand) {
        self.tensor += o.tensor;
        self.smem += o.smem;
        self.tma += o.tma;
        self.port_bytes += o.port_bytes;
        self.l2_bytes += o.l2_bytes;
        for (a, b) in self.pipes.iter_mut().zip(&o.pipes) {
            for i in 0..4 {
                a[i] += b[i];
            }
        }
        for (a, b) in self.issue.iter_mut().zip(&o.issue) {
            *a += b;
        }
    }
}

fn pipe_index(p: Pipe) -> usize {
    match p {
        Pipe::Alu => 0,
        Pipe::Fma => 1,
        Pipe::Mufu => 2,
        Pipe::Mma => 3,
    }
}

/// The bound of one kernel.
#[derive(Clone, Debug)]
pub struct Bound {
    /// The binding unit's time, rounded up.
    pub cycles: u64,
    /// The binding unit (`none` when the kernel asks nothing of any unit).
    pub binding: &'static str,
    /// Every unit's time in cycles, in [`UNITS`] order (per-SM units: the busiest SM).
    pub units: Vec<(&'static str, f64)>,
    /// Demand summed over all SMs (per partition index for the pipes and issue slots).
    pub total: Demand,
    /// Bytes read from HBM: lines whose first touch fills them.
    pub dram_read_bytes: u64,
    /// Bytes that must be written back to HBM before the kernel ends.
    pub dram_write_bytes: u64,
    /// ⌈CTAs / (SMs · CTAs per SM)⌉.
    pub waves: u32,
}

impl Bound {
    /// The time of unit `name`.
    pub fn unit(&self, name: &str) -> Option<f64> {
        self.units.iter().find(|(n, _)| *n == name).map(|u| u.1)
    }
}

/// The bound of `k` on `p` at `clock_mhz` (which converts HBM bandwidth to bytes per cycle).
pub fn bound(k: &Kernel, p: &Preset, clock_mhz: f64) -> Result<Bound, String> {
    bound_within(k, p, clock_mhz, WALK_BUDGET)
}

/// As [`bound`], giving up after `budget` walk steps.
pub fn bound_within(k: &Kernel, p: &Preset, clock_mhz: f64, budget: u64) -> Result<Bound, String> {
    if !(clock_mhz > 0.0 && clock_mhz.is_finite()) {
        return Err(format!("clock {clock_mhz} MHz is not a positive number"));
    }
    let occ = occupancy(k, p);
    if occ.ctas == 0 {
        return Err(format!("no CTA fits on an SM (limit: {})", occ.limiter()));
    }
    let sms = p.sm.count.max(1);
    let parts = p.sm.partitions.max(1) as usize;
    let mut walk = Walk::new(k, p, budget);
    let mut per_sm = vec![Demand::new(parts); sms.min(k.grid) as usize];
    for b in 0..k.grid {
        walk.cta(b, &mut per_sm[(b % sms) as usize])?;
    }

    let mut total = Demand::new(parts);
    for d in &per_sm {
        total.add(d);
    }
    let line = p.memory.l2.line_bytes;
    let (fills, dirty) = walk.lines.counts();
    // At most the L2's capacity can still be dirty when the kernel ends; the rest was written
    // back during it.
    let l2_lines = p.memory.l2.bytes / line;
    let dram_read_bytes = fills * line;
    let dram_write_bytes = dirty.saturating_sub(l2_lines) * line;
    let m = &p.memory;
    let hbm_bytes_per_cycle = m.hbm.bandwidth_gbs * m.hbm.efficiency * 1e9 / (clock_mhz * 1e6);

    let busiest = |f: &dyn Fn(&Demand) -> f64| per_sm.iter().map(f).fold(0.0, f64::max);
    let part_max = |v: &mut dyn Iterator<Item = u64>| v.max().unwrap_or(0) as f64;
    let pipe = |i: usize| busiest(&|d: &Demand| part_max(&mut d.pipes.iter().map(|p| p[i])));
    let issue_rate = p.sm.issue_per_partition.max(1) as f64;
    let times = [
        busiest(&|d: &Demand| d.tensor as f64),
        pipe(pipe_index(Pipe::Mma)),
        busiest(&|d: &Demand| d.smem as f64),
        busiest(&|d: &Demand| part_max(&mut d.issue.iter().copied()) / issue_rate),
        pipe(pipe_index(Pipe::Mufu)),
        pipe(pipe_index(Pipe::Fma)),
        pipe(pipe_index(Pipe::Alu)),
        busiest(&|d: &Demand| d.tma as f64),
        busiest(&|d: &Demand| d.port_bytes as f64 / m.sm_bytes_per_cycle),
        total.l2_bytes as f64 / m.l2.bytes_per_cycle,
        (dram_read_bytes + dram_write_bytes) as f64 / hbm_bytes_per_cycle,
    ];
    let units: Vec<(&'static str, f64)> = UNITS.iter().copied().zip(times).collect();
    let (mut binding, mut max) = ("none", 0.0);
    for &(name, t) in &units {
        if t > max {
            (binding, max) = (name, t);
        }
    }
    Ok(Bound {
        cycles: max.ceil() as u64,
        binding,
        units,
        total,
        dram_read_bytes,
        dram_write_bytes,
        waves: k.grid.div_ceil(sms * occ.ctas),
    })
}

/// Lines per page of [`Lines`]: 4096 lines (512 KiB of addresses at 128-byte lines).
const PAGE_WORDS: usize = 64;
const PAGE_LINES: u64 = PAGE_WORDS as u64 * 64;

/// Per-line flags of one page of addresses.
#[derive(Clone)]
struct Page {
    /// Touched by a read or a partial-line write: a miss on it fills from HBM.
    partial: [u64; PAGE_WORDS],
    /// Written whole by one request: a miss on it needs no fill.
    whole: [u64; PAGE_WORDS],
    /// Written: dirty in L2 until written back.
    dirty: [u64; PAGE_WORDS],
}

/// The set of lines the kernel touches, as sparse bitmaps (a sorted set of every touch would
/// hold one entry per line of a gigabyte stream).
#[derive(Default)]
struct Lines {
    index: HashMap<u64, usize>,
    pages: Vec<Page>,
    /// The last page used: streams touch one page many times in a row.
    last: Option<(u64, usize)>,
}

#[derive(Clone, Copy)]
enum Touch {
    Read,
    PartialWrite,
    WholeWrite,
}

impl Lines {
    fn mark(&mut self, line: u64, t: Touch) {
        let key = line / PAGE_LINES;
        let i = match self.last {
            Some((k, i)) if k == key => i,
            _ => {
                let pages = &mut self.pages;
                let i = *self.index.entry(key).or_insert_with(|| {
                    pages.push(Page {
                        partial: [0; PAGE_WORDS],
                        whole: [0; PAGE_WORDS],
                        dirty: [0; PAGE_WORDS],
                    });
                    pages.len() - 1
                });
                self.last = Some((key, i));
                i
            }
        };
        let page = &mut self.pages[i];
        let bit = line % PAGE_LINES;
        let (w, m) = ((bit / 64) as usize, 1u64 << (bit % 64));
        match t {
            Touch::Read => page.partial[w] |= m,
            Touch::PartialWrite => {
                page.partial[w] |= m;
                page.dirty[w] |= m;
            }
            Touch::WholeWrite => {
                page.whole[w] |= m;
                page.dirty[w] |= m;
            }
        }
    }

    /// (lines that must be filled, lines written). A line both written whole and touched
    /// otherwise needs no fill if the whole write came first, which a walk without timing cannot
    /// tell: it is not counted, keeping the bound a lower bound.
    fn counts(&self) -> (u64, u64) {
        let mut fills = 0;
        let mut dirty = 0;
        for p in &self.pages {
            for w in 0..PAGE_WORDS {
                fills += (p.partial[w] & !p.whole[w]).count_ones() as u64;
                dirty += p.dirty[w].count_ones() as u64;
            }
        }
        (fills, dirty)
    }
}

/// Which warp is walking, for its built-in variables and its error messages.
#[derive(Clone, Copy)]
struct WarpId {
    cta: u32,
    wg: u32,
    warp: u32,
    warp_in_cta: u32,
}

struct Walk<'a> {
    k: &'a Kernel,
    p: &'a Preset,
    /// Tensors laid out as the engine lays them out: one after another, 4 KiB aligned.
    tensor_base: Vec<u64>,
    /// Atomic counters live after the tensors, one line each.
    counter_base: u64,
    lines: Lines,
    budget: u64,
    /// Per counter, atomics of the current CTA already charged to memory (the engine sends the
    /// k-th atomic of a CTA once; its other warps reuse the value).
    charged: Vec<u64>,
}

impl<'a> Walk<'a> {
    fn new(k: &'a Kernel, p: &'a Preset, budget: u64) -> Self {
        let mut tensor_base = Vec::new();
        let mut next = 0u64;
        for t in &k.tensors {
            tensor_base.push(next);
            next = next.saturating_add(t.bytes).div_ceil(4096) * 4096;
        }
        Walk {
            k,
            p,
            tensor_base,
            counter_base: next,
            lines: Lines::default(),
            budget,
            charged: Vec::new(),
        }
    }

    fn spend(&mut self, steps: u64) -> Result<(), String> {
        if self.budget < steps {
            return Err(
                "the generic bound is unavailable: the program walk passed its step budget (the kernel runs too many instructions)"
                    .to_string(),
            );
        }
        self.budget -= steps;
        Ok(())
    }

    /// Adds CTA `b`'s demand to `d`.
    fn cta(&mut self, b: u32, d: &mut Demand) -> Result<(), String> {
        let parts = d.issue.len() as u32;
        self.charged = vec![0; self.k.counters.len()];
        let mut warp_in_cta = 0;
        for role in &self.k.roles {
            for wg in 0..role.warpgroups {
                // An HGMMA starts once all four warps have issued it: the warpgroup's tensor
                // work is what its least advanced warp issued.
                let (mut math, mut feed) = (u64::MAX, u64::MAX);
                for warp in 0..WARPS_PER_WARPGROUP {
                    let id = WarpId {
                        cta: b,
                        wg,
                        warp,
                        warp_in_cta,
                    };
                    let part = (warp_in_cta % parts) as usize;
                    let (m, f) = self.warp(role, id, part, d).map_err(|(pc, e)| {
                        let path = role
                            .paths
                            .get(pc)
                            .cloned()
                            .unwrap_or_else(|| format!("role `{}`: end of program", role.name));
                        format!(
                            "CTA {b}, warp {}{wg}.w{warp}: {e}\n  = in {path}",
                            role.name
                        )
                    })?;
                    (math, feed) = (math.min(m), feed.min(f));
                    warp_in_cta += 1;
                }
                d.tensor += math;
                d.smem += feed;
            }
        }
        Ok(())
    }

    /// Walks one warp's program, adding its demand to `d` (issue and pipes on partition `part`);
    /// returns its HGMMA (math, operand feed) cycles. Errors carry the op index.
    fn warp(
        &mut self,
        role: &RoleInfo,
        id: WarpId,
        part: usize,
        d: &mut Demand,
    ) -> Result<(u64, u64), (usize, String)> {
        let mut env = vec![0i64; (role.slots.max(slot::FIRST_LOOP_SLOT)) as usize];
        env[slot::WARP as usize] = id.warp as i64;
        env[slot::WG as usize] = id.wg as i64;
        env[slot::WARP_ID as usize] = id.warp_in_cta as i64;
        env[slot::CTA as usize] = id.cta as i64;
        env[slot::NUM_CTAS as usize] = self.k.grid as i64;
        let mut w = WarpWalk {
            env,
            atomics: vec![0; self.k.counters.len()],
            hgmma: (0, 0),
            cta: id.cta,
        };
        let mut pc = 0usize;
        let mut steps = 0u32;
        while let Some(op) = role.code.get(pc) {
            steps += 1;
            let err = |e: String| (pc, e);
            if steps > MAX_CONTROL_STEPS {
                return Err(err(format!(
                    "{MAX_CONTROL_STEPS} control-flow steps without an instruction (an empty loop with a huge trip count?)"
                )));
            }
            self.spend(1).map_err(err)?;
            match op {
                Op::LoopStart {
                    var,
                    count_slot,
                    count,
                    exit,
                } => {
                    let n = w.eval(count).map_err(|e| err(format!("loop count: {e}")))?;
                    w.set(*var, 0).map_err(err)?;
                    w.set(*count_slot, n).map_err(err)?;
                    pc = if n > 0 { pc + 1 } else { *exit as usize };
                }
                Op::LoopEnd {
                    var,
                    count_slot,
                    body,
                } => {
                    let v = w.get(*var).map_err(err)?.saturating_add(1);
                    w.set(*var, v).map_err(err)?;
                    pc = if v < w.get(*count_slot).map_err(err)? {
                        *body as usize
                    } else {
                        pc + 1
                    };
                }
                Op::BranchIfZero { cond, target } => {
                    let c = w.eval(cond).map_err(|e| err(format!("condition: {e}")))?;
                    pc = if c == 0 { *target as usize } else { pc + 1 };
                }
                Op::Jump { target } => pc = *target as usize,
                Op::Set { slot, value } => {
                    let v = w.eval(value).map_err(|e| err(format!("let: {e}")))?;
                    w.set(*slot, v).map_err(err)?;
                    pc += 1;
                }
                Op::Issue(inst) => {
                    let issued = self.inst(inst, &mut w, part, d).map_err(err)?;
                    if issued > 0 {
                        d.issue[part] += issued;
                        steps = 0;
                    }
                    pc += 1;
                }
            }
        }
        Ok(w.hgmma)
    }

    /// Adds one instruction's demand; returns the issue slots it takes (0: skipped, as the
    /// engine skips a compute instruction with a count of zero).
    fn inst(
        &mut self,
        inst: &Inst,
        w: &mut WarpWalk,
        part: usize,
        d: &mut Demand,
    ) -> Result<u64, String> {
        let p = self.p;
        let port = p.smem.bytes_per_cycle();
        match inst {
            Inst::Compute { pipe, count, .. } => {
                let n = w.eval(count)?;
                if n <= 0 {
                    return Ok(0);
                }
                if n > MAX_MACRO_COUNT {
                    return Err(format!(
                        "{} count {n} exceeds {MAX_MACRO_COUNT} warp-instructions per instruction",
                        pipe.name()
                    ));
                }
                let cycles = match pipe {
                    Pipe::Alu => p.pipes.alu.cycles_per_warp_instr(),
                    Pipe::Fma => p.pipes.fma.cycles_per_warp_instr(),
                    Pipe::Mufu => p.pipes.mufu.cycles_per_warp_instr(),
                    Pipe::Mma => p.tensor.mma_cycles,
                };
                d.pipes[part][pipe_index(*pipe)] += n as u64 * cycles;
                Ok(n as u64)
            }
            Inst::Wgmma { n, ksteps, a, .. } => {
                let h = Hgmma {
                    warpgroup: 0,
                    n: *n,
                    a_smem: a.is_some(),
                    reads: [crate::sm::tensor_core::NO_SLOT; 2],
                };
                let ks = *ksteps as u64;
                w.hgmma.0 += ks * h.flops().div_ceil(p.tensor.flops_per_cycle);
                w.hgmma.1 += ks * h.smem_bytes().div_ceil(port);
                Ok(ks)
            }
            Inst::TmaLoad {
                tensor,
                coords,
                dst,
                ..
            } => {
                self.slot_base(w, dst)?;
                let spans = self.tma_spans(w, *tensor, coords, dst.buf)?;
                self.spend(spans.len() as u64)?;
                let traffic: u64 = spans.iter().map(|s| s.1).sum();
                for (addr, len) in spans {
                    self.access(d, addr, len, false);
                }
                // The box streams back in chunks; each chunk is written through the port.
                let chunk = p.tma.chunk_bytes.max(1);
                d.smem += traffic / chunk * chunk.div_ceil(port) + (traffic % chunk).div_ceil(port);
                d.port_bytes += traffic;
                d.tma += p.tma.issue_cycles;
                Ok(1)
            }
            Inst::TmaStore {
                tensor,
                coords,
                src,
                bytes,
            } => {
                self.slot_base(w, src)?;
                let spans = self.tma_spans(w, *tensor, coords, src.buf)?;
                self.spend(spans.len() as u64)?;
                d.port_bytes += spans.iter().map(|s| s.1).sum::<u64>();
                for (addr, len) in spans {
                    self.access(d, addr, len, true);
                }
                d.smem += bytes.div_ceil(port);
                d.tma += p.tma.issue_cycles;
                Ok(1)
            }
            Inst::CpAsync {
                tensor,
                src,
                dst,
                addr,
                width,
            } => {
                let t = self.tensor(*tensor)?;
                let from = self.lane_addrs(w, src, t.0, t.1, *width, "the tensor")?;
                let slot = self.slot_base(w, dst)?;
                let limit = self.k.buffers[dst.buf as usize].slot_bytes;
                let to = self.lane_addrs(w, addr, slot, limit, *width, "the slot")?;
                self.sectors(d, &from, *width, false);
                d.smem += smem::wavefronts(&to, *width, p.smem.banks, p.smem.bank_bytes) as u64;
                Ok(1)
            }
            Inst::Global {
                store,
                tensor,
                addr,
                width,
            } => {
                let t = self.tensor(*tensor)?;
                let addrs = self.lane_addrs(w, addr, t.0, t.1, *width, "the tensor")?;
                self.sectors(d, &addrs, *width, *store);
                Ok(1)
            }
            Inst::Shared {
                slot: s,
                addr,
                width,
                ..
            } => {
                let base = self.slot_base(w, s)?;
                let limit = self.k.buffers[s.buf as usize].slot_bytes;
                let addrs = self.lane_addrs(w, addr, base, limit, *width, "the slot")?;
                d.smem += smem::wavefronts(&addrs, *width, p.smem.banks, p.smem.bank_bytes) as u64;
                Ok(1)
            }
            Inst::AtomicAdd { counter, add, slot } => {
                let c = *counter as usize;
                let init = self
                    .k
                    .counters
                    .get(c)
                    .map(|x| x.1)
                    .ok_or_else(|| format!("atomic counter {c} is not declared"))?;
                let add = w.eval(add)?;
                let kth = w.atomics[c];
                w.atomics[c] += 1;
                // Round-robin order: the k-th atomic of CTA c is the (c + k·CTAs)-th overall.
                let value = (kth as i64)
                    .checked_mul(self.k.grid as i64)
                    .and_then(|v| v.checked_add(w.cta as i64))
                    .and_then(|order| order.checked_mul(add))
                    .and_then(|v| v.checked_add(init))
                    .ok_or_else(|| "atomic counter overflow".to_string())?;
                w.set(*slot, value)?;
                if kth >= self.charged[c] {
                    self.charged[c] = kth + 1;
                    let addr = self.counter_base + c as u64 * 128;
                    self.access(d, addr, 4, true);
                }
                Ok(1)
            }
            Inst::TmaStoreCommit
            | Inst::TmaStoreWait { .. }
            | Inst::Arrive { .. }
            | Inst::ArriveExpectTx { .. }
            | Inst::ExpectTx { .. }
            | Inst::Wait { .. }
            | Inst::WgmmaFence
            | Inst::WgmmaCommit
            | Inst::WgmmaWait { .. }
            | Inst::BarSync { .. }
            | Inst::BarArrive { .. }
            | Inst::SetMaxNReg { .. }
            | Inst::CpAsyncCommit
            | Inst::CpAsyncWait { .. } => Ok(1),
        }
    }

    /// One L2 request of `bytes` at `addr`, line by line as the memory system splits it.
    fn access(&mut self, d: &mut Demand, addr: u64, bytes: u64, write: bool) {
        d.l2_bytes += bytes;
        let line = self.p.memory.l2.line_bytes;
        let first = addr / line;
        let last = (addr + bytes.max(1) - 1) / line;
        for l in first..=last {
            let lo = addr.max(l * line);
            let hi = (addr + bytes).min((l + 1) * line);
            let touch = match (write, hi.saturating_sub(lo) >= line) {
                (false, _) => Touch::Read,
                (true, true) => Touch::WholeWrite,
                (true, false) => Touch::PartialWrite,
            };
            self.lines.mark(l, touch);
        }
    }

    /// A warp's global access: one request per line it touches (the engine's split), all
    /// through the SM's port.
    fn sectors(&mut self, d: &mut Demand, addrs: &[u64], width: u32, write: bool) {
        let sector = self.p.memory.sector_bytes;
        let sectors = coalesce::sectors(addrs, width, sector);
        d.port_bytes += sectors.len() as u64 * sector;
        for (a, n) in coalesce::line_requests(&sectors, sector, self.p.memory.l2.line_bytes) {
            self.access(d, a, n, write);
        }
    }

    /// (base address, bytes) of tensor `t`.
    fn tensor(&self, t: u16) -> Result<(u64, u64), String> {
        match (
            self.tensor_base.get(t as usize),
            self.k.tensors.get(t as usize),
        ) {
            (Some(&base), Some(info)) => Ok((base, info.bytes)),
            _ => Err(format!("tensor {t} is not declared")),
        }
    }

    fn slot_base(&self, w: &WarpWalk, s: &SlotRef) -> Result<u64, String> {
        let b = self
            .k
            .buffers
            .get(s.buf as usize)
            .ok_or_else(|| format!("buffer {} is not declared", s.buf))?;
        b.slot_offset(w.eval(&s.slot)?).map_err(|e| e.to_string())
    }

    fn tma_spans(
        &self,
        w: &WarpWalk,
        tensor: u16,
        coords: &[Code],
        buf: u16,
    ) -> Result<Vec<(u64, u64)>, String> {
        let (base, _) = self.tensor(tensor)?;
        let t = &self.k.tensors[tensor as usize];
        let c = coords
            .iter()
            .map(|c| w.eval(c))
            .collect::<Result<Vec<i64>, String>>()?;
        let boxdims = &self.k.buffers[buf as usize].shape;
        if t.shape.is_empty() || c.len() != t.shape.len() || boxdims.len() != t.shape.len() {
            return Err(format!(
                "TMA box of rank {} at {} coordinates on a tensor of rank {}",
                boxdims.len(),
                c.len(),
                t.shape.len()
            ));
        }
        Ok(tma::box_spans(&t.shape, t.dtype.bytes(), &c, boxdims)
            .into_iter()
            .map(|(off, len)| (base + off, len))
            .collect())
    }

    /// The 32 lanes' addresses of a per-lane expression, checked as the engine checks them.
    fn lane_addrs(
        &mut self,
        w: &mut WarpWalk,
        addr: &Code,
        base: u64,
        limit: u64,
        width: u32,
        what: &str,
    ) -> Result<Vec<u64>, String> {
        self.spend(32)?;
        let mut out = Vec::with_capacity(32);
        for lane in 0..32i64 {
            w.env[slot::LANE as usize] = lane;
            let a = w.eval(addr)?;
            if a < 0 || a as u64 + width as u64 > limit {
                return Err(format!(
                    "lane {lane} accesses bytes {a}..{}, outside {what} ({limit} bytes)",
                    a.saturating_add(width as i64)
                ));
            }
            out.push(base + a as u64);
        }
        w.env[slot::LANE as usize] = 0;
        Ok(out)
    }
}

/// One warp's run-time state during the walk.
struct WarpWalk {
    env: Vec<i64>,
    /// Per counter, atomics this warp has executed.
    atomics: Vec<u64>,
    /// HGMMA math and operand-feed cycles this warp issued.
    hgmma: (u64, u64),
    cta: u32,
}

impl WarpWalk {
    fn eval(&self, c: &Code) -> Result<i64, String> {
        c.eval(&self.env)
            .map_err(|e| format!("expression cannot be evaluated: {e}"))
    }
    fn get(&self, s: u16) -> Result<i64, String> {
        self.env
            .get(s as usize)
            .copied()
            .ok_or_else(|| format!("variable slot {s} is out of range"))
    }
    fn set(&mut self, s: u16, v: i64) -> Result<(), String> {
        let slot = self
            .env
            .get_mut(s as usize)
            .ok_or_else(|| format!("variable slot {s} is out of range"))?;
        *slot = v;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{load_source, RunOptions};

    /// Compiles a one-role scenario on h100-sxm with `program` (RON instructions) and `extra`
    /// kernel fields.
    fn kernel(grid: &str, warpgroups: u32, extra: &str, program: &str) -> (Kernel, Preset) {
        let text = format!(
            r#"Scenario(
    name: "t",
    gpu: "h100-sxm",
    kernel: Kernel(
        grid: "{grid}",
        regs_per_thread: 128,
        {extra}
        roles: [Role(name: "w", warpgroups: {warpgroups}, regs: 128, program: [{program}])],
    ),
)"#
        );
        load_source("t.ron", &text, &RunOptions::default()).unwrap_or_else(|e| panic!("{e}"))
    }

    fn of(k: &Kernel, p: &Preset) -> Bound {
        bound(k, p, p.clock.loaded_mhz).unwrap_or_else(|e| panic!("{e}"))
    }

    const WGMMA_BUFS: &str = r#"smem: [
            Buffer(name: "sA", dtype: BF16, shape: [64, 16]),
            Buffer(name: "sB", dtype: BF16, shape: [256, 16]),
        ],"#;

    fn hgmmas(n: u32, a: &str, count: u32) -> Bound {
        let program = format!(
            r#"Loop(var: "i", count: {count}, body: [Wgmma(n: {n}, a: {a}, b: "sB"), WgmmaCommit]), WgmmaWait(0)"#
        );
        let (k, p) = kernel("1", 1, WGMMA_BUFS, &program);
        of(&k, &p)
    }

    #[test]
    fn narrow_ss_hgmmas_are_bound_by_the_operand_feed() {
        // N = 32: 16 cycles of math, (2048 + 1024) / 128 = 24 of feed per HGMMA.
        let b = hgmmas(32, r#"Smem("sA")"#, 10);
        assert_eq!((b.binding, b.cycles), ("smem", 10 * (16 + 8)));
        assert_eq!(b.unit("tensor"), Some(160.0));
        assert_eq!((b.total.tensor, b.total.smem), (160, 240));
        // Each warp issues 10 HGMMAs, 10 commits and a wait, on its own partition.
        assert_eq!(b.total.issue, vec![21; 4]);
        assert_eq!(b.unit("issue"), Some(21.0));
    }

    #[test]
    fn wide_hgmmas_are_bound_by_the_math() {
        // N = 256: 128 cycles of math against 16 + 64 of feed (SS) or 64 (RS).
        let b = hgmmas(256, r#"Smem("sA")"#, 10);
        assert_eq!((b.binding, b.cycles), ("tensor", 10 * 128));
        assert_eq!(b.unit("smem"), Some(800.0));
        let rs = hgmmas(256, "Regs", 10);
        assert_eq!((rs.binding, rs.cycles), ("tensor", 10 * 128));
        assert_eq!(rs.unit("smem"), Some(640.0));
    }

    #[test]
    fn mufu_work_is_counted_per_partition() {
        // 4 lanes per partition: a MUFU warp-instruction holds its pipe 8 cycles. Warps 0 and 4
        // share partition 0.
        let (k, p) = kernel("1", 2, "", r#"Mufu("100 + warp_id")"#);
        let b = of(&k, &p);
        assert_eq!(b.binding, "mufu");
        // The busiest partition is 3 (warps 3 and 7).
        assert_eq!(b.cycles, (103 + 107) * 8);
        assert_eq!(b.total.pipes[1][pipe_index(Pipe::Mufu)], (101 + 105) * 8);
        assert_eq!(b.unit("issue"), Some(210.0));
    }

    #[test]
    fn a_zero_count_takes_no_issue_slot() {
        let (k, p) = kernel("1", 1, "", "Fma(0), Alu(3)");
        let b = of(&k, &p);
        // ALU: 16 lanes per partition, 2 cycles a warp-instruction.
        assert_eq!(b.total.issue, vec![3; 4]);
        assert_eq!((b.binding, b.cycles), ("alu", 6));
    }

    #[test]
    fn the_last_partial_wave_costs_a_whole_cta() {
        // SM 0 runs CTAs 0 and 132: 2 x 1000 ALU instructions of 2 cycles on each partition,
        // one after the other when only one CTA fits (128 KiB of shared memory), side by side
        // on the same pipes when both fit.
        let reserve = r#"smem: [Buffer(name: "r", dtype: BF16, shape: [64, 1024])],"#;
        for (extra, waves) in [(reserve, 2), ("", 1)] {
            let (k, p) = kernel("num_sms + 1", 1, extra, "Alu(1000)");
            let b = of(&k, &p);
            assert_eq!(b.waves, waves);
            assert_eq!((b.binding, b.cycles), ("alu", 4000));
            assert_eq!(b.unit("issue"), Some(2000.0));
            assert_eq!(b.total.pipes[0][pipe_index(Pipe::Alu)], 133 * 2000);
        }
    }

    const STREAM_TENSORS: &str = r#"tensors: [
            Tensor(name: "X", dtype: F32, shape: [1048576]),
            Tensor(name: "Y", dtype: F32, shape: [1048576]),
        ],"#;

    /// 4 MiB of X read (and copied to Y when `copy`) by 256 CTAs of 4 warps with 16-byte
    /// loads, 8 iterations of 4 warps x 512 B per CTA.
    fn stream(copy: bool) -> (Kernel, Preset) {
        let addr = "((i * num_ctas + cta) * 4 + warp) * 512 + lane * 16";
        let store = if copy {
            format!(r#"StGlobal(tensor: "Y", addr: "{addr}", width: 16),"#)
        } else {
            String::new()
        };
        let program = format!(
            r#"Loop(var: "i", count: 8, body: [LdGlobal(tensor: "X", addr: "{addr}", width: 16), {store}])"#
        );
        kernel("256", 1, STREAM_TENSORS, &program)
    }

    #[test]
    fn a_streaming_read_is_bound_by_hbm() {
        let (k, p) = stream(false);
        let b = of(&k, &p);
        let bytes = 4u64 << 20;
        assert_eq!((b.dram_read_bytes, b.dram_write_bytes), (bytes, 0));
        assert_eq!(b.total.l2_bytes, bytes);
        assert_eq!(b.total.port_bytes, bytes);
        let m = &p.memory;
        let per_cycle = m.hbm.bandwidth_gbs * m.hbm.efficiency * 1e9 / (p.clock.loaded_mhz * 1e6);
        assert_eq!(b.binding, "hbm");
        assert_eq!(b.cycles, (bytes as f64 / per_cycle).ceil() as u64);
        // At half the clock a cycle moves twice the bytes.
        let slow = bound(&k, &p, p.clock.loaded_mhz / 2.0).unwrap();
        assert!((slow.cycles as f64 - b.cycles as f64 / 2.0).abs() <= 1.0);
    }

    #[test]
    fn writes_that_fit_in_l2_need_not_reach_hbm_during_the_kernel() {
        let (k, mut p) = stream(true);
        let bytes = 4u64 << 20;
        // A warp's 512 contiguous bytes are whole lines: Y is overwritten without being read.
        let b = of(&k, &p);
        assert_eq!((b.dram_read_bytes, b.dram_write_bytes), (bytes, 0));
        // With a 1 MiB L2, 3 MiB of Y must be written back before the end.
        p.memory.l2.bytes = 1 << 20;
        let small = of(&k, &p);
        assert_eq!(small.dram_write_bytes, 3 << 20);
    }

    #[test]
    fn atomics_hand_out_work_round_robin() {
        // 2 CTAs claim 5 items: CTA 0 gets 0, 2, 4 and CTA 1 gets 1, 3.
        let (mut k, p) = kernel(
            "2",
            1,
            r#"counters: [Counter(name: "next")],"#,
            r#"Loop(var: "i", count: 100, body: [
                AtomicAdd(counter: "next", into: "t"),
                If(cond: "t >= 5", then: [Break]),
                Mufu(1),
            ])"#,
        );
        let b = of(&k, &p);
        assert_eq!(b.unit("mufu"), Some(3.0 * 8.0));
        assert_eq!(b.total.pipes[0][pipe_index(Pipe::Mufu)], 5 * 8);
        // One memory request per CTA and atomic (4 per CTA), whatever the warps per CTA.
        assert_eq!(b.total.l2_bytes, (4 + 3) * 4);
        // A counter starting at 3 leaves two items.
        k.counters[0].1 = 3;
        assert_eq!(of(&k, &p).total.pipes[0][pipe_index(Pipe::Mufu)], 2 * 8);
    }

    #[test]
    fn tma_boxes_cost_port_and_traffic() {
        // A 64 x 64 bf16 box of a 64 x 104 tensor at column 64: 40 columns inside, 80 B per row.
        let (k, p) = kernel(
            "1",
            1,
            r#"tensors: [Tensor(name: "T", dtype: BF16, shape: [64, 104])],
               smem: [Buffer(name: "s", dtype: BF16, shape: [64, 64])],
               mbarriers: [MBarrier(name: "b", arrivals: 1)],"#,
            r#"If(cond: "warp == 0", then: [
                TmaLoad(tensor: "T", coords: [0, 64], dst: "s", bar: "b"),
                TmaStore(tensor: "T", coords: [0, 0], src: "s"),
            ])"#,
        );
        let b = of(&k, &p);
        let loaded = 64 * 80;
        // Load: chunks of 2048 B written at 128 B/cycle; store: the whole 8 KiB box read.
        assert_eq!(b.total.smem, 2 * 16 + (loaded - 4096u64).div_ceil(128) + 64);
        assert_eq!(b.total.port_bytes, loaded + 64 * 128);
        assert_eq!(b.total.tma, 2 * p.tma.issue_cycles);
    }

    #[test]
    fn walk_errors_are_reported_not_panicked() {
        let (k, p) = kernel(
            "1",
            1,
            r#"smem: [Buffer(name: "s", slots: 2, dtype: F32, shape: [32])],"#,
            r#"LdShared(buf: "s[warp]", addr: "lane * 4")"#,
        );
        let e = bound(&k, &p, 1830.0).unwrap_err();
        assert!(
            e.contains("CTA 0, warp w0.w2: slot 2 of `s` is out of range"),
            "{e}"
        );
        let (k, p) = kernel("1", 1, "", r#"Loop(var: "i", count: 2000000, body: [])"#);
        let e = bound(&k, &p, 1830.0).unwrap_err();
        assert!(
            e.contains("control-flow steps without an instruction"),
            "{e}"
        );
        let (k, p) = kernel("1", 1, "", r#"Loop(var: "i", count: 1000, body: [Fma(1)])"#);
        let e = bound_within(&k, &p, 1830.0, 500).unwrap_err();
        assert!(e.contains("the generic bound is unavailable"), "{e}");
        assert!(bound_within(&k, &p, 1830.0, 1 << 20).is_ok());
        assert!(bound(&k, &p, 0.0).is_err());
    }
}
