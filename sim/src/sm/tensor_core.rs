//! The SM's tensor pipe: its four tensor cores work on one HGMMA (wgmma m64nNk16 step) at a time.
//!
//! Cost of one HGMMA: `2·64·N·16 / flops_per_cycle` cycles of math (for any operand type: a k32
//! 8-bit or k8 tf32 HGMMA takes the cycles of a k16 16-bit one), and its shared-memory operands
//! (A: 64 rows × 32 B = 2048 B in the SS form, none in the RS form; B: 32·N B) read through the
//! shared-memory port it shares with every other user. The pipe is held for the longer of the two,
//! which gives back-to-back SS wgmma a busy fraction of `min(1, 0.5N / (16 + 0.25N))` on H100,
//! and an RS HGMMA holds it at least `tensor.rs_min_cycles` (a floor on the pipe's throughput that
//! does not delay the HGMMA's results). HGMMAs queue FIFO across the SM's warpgroups.
//!
//! The wgmma instruction family (`wgmma.fence`, `wgmma.mma_async`, `commit_group`,
//! `wait_group`) is issued here too: a warpgroup's HGMMA is submitted once all four of its warps
//! have issued it, and `wait_group(n)` blocks until all but the `n` newest committed groups of the
//! warp have completed. A warp's HGMMAs issue no closer than [`issue_gap`], and no more than
//! `tensor.max_hgmma_in_flight` are issued and not yet released: the SM's warpgroups' together
//! with `tensor.hgmma_window_per_sm` (a freed place goes to a waiting warpgroup that holds
//! places before one that holds none), else each warpgroup's own. An HGMMA is released
//! `tensor.inflight_release_lead` cycles before its results are visible.

use crate::engine::error::Fault;
use crate::engine::event::Event;
use crate::engine::hooks::Hook;
use crate::engine::schedule::{Outcome, Pending};
use crate::engine::server::Server;
use crate::engine::Shard;
use crate::observe::warp_state::State;
use isa::expr::Code;
use isa::program::SlotRef;
use std::collections::VecDeque;

/// One HGMMA waiting for or running on the pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hgmma {
    /// Index of the warpgroup (in its shard's numbering) that issued it.
    pub warpgroup: u32,
    pub n: u32,
    /// Its K: 16 (bf16/f16), 32 (e4m3/e5m2) or 8 (tf32).
    pub k: u32,
    /// A comes from shared memory (SS form).
    pub a_smem: bool,
}

/// No slot (an RS-form HGMMA reads no A slot).
pub const NO_SLOT: u32 = u32::MAX;

impl Hgmma {
    pub fn flops(&self) -> u64 {
        2 * 64 * self.n as u64 * self.k as u64
    }
    /// Its math at `flops_per_cycle` 16-bit FLOP a cycle. Every type takes the cycles of a k16
    /// 16-bit HGMMA of the same N: a row of 32 bytes per operand, so 8-bit types run at twice
    /// the 16-bit FLOP rate and tf32 at half (the H100's dense peaks: 1,979, 989 and 494
    /// TFLOP/s, NVIDIA H100 datasheet; calibration/wgmma_dtype.cu measured e4m3 and tf32 at
    /// bf16's cycles per instruction for N = 64, 128, 256 on an H100, h100-wgmma_dtype.csv).
    pub fn math_cycles(&self, flops_per_cycle: u64) -> u64 {
        (2 * 64 * self.n as u64 * 16).div_ceil(flops_per_cycle)
    }
    /// Cycles it holds the pipe apart from its operand reads: its math, and in the RS form at
    /// least `rs_min_cycles`.
    pub fn pipe_cycles(&self, flops_per_cycle: u64, rs_min_cycles: u64) -> u64 {
        let math = self.math_cycles(flops_per_cycle);
        if self.a_smem {
            math
        } else {
            math.max(rs_min_cycles)
        }
    }
    /// Bytes read from shared memory: 32 bytes of each operand row, whatever the type.
    pub fn smem_bytes(&self) -> u64 {
        let a = if self.a_smem { 64 * 32 } else { 0 };
        a + self.n as u64 * 32
    }
}

/// What the pipe needs to know to time an HGMMA (from `tensor` and `smem` of the preset).
#[derive(Clone, Copy, Debug)]
pub struct PipeCosts {
    pub flops_per_cycle: u64,
    pub rs_min_cycles: u64,
    pub port_bytes_per_cycle: u64,
}

/// An HGMMA the pipe started: when the pipe is free for the next one, and when its math and
/// operand reads are done (its results follow `tensor.extra_latency` later).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Started {
    pub hgmma: Hgmma,
    pub free: u64,
    pub done: u64,
}

#[derive(Clone, Debug, Default)]
pub struct TensorPipe {
    queue: VecDeque<Hgmma>,
    running: Option<Hgmma>,
    /// Math cycles (the busy measure: the fraction of time the tensor cores compute).
    busy: u64,
    /// When the running (or last) HGMMA's math ends.
    math_until: u64,
    flops: u64,
    /// Pipe cycles owed for math issued beside the running HGMMA (`tensor.hgmma_beside_issue`),
    /// paid by the next HGMMA to start; fractions carry over.
    beside_debt: f64,
}

impl TensorPipe {
    pub fn submit(&mut self, h: Hgmma) {
        self.queue.push_back(h);
    }

    pub fn is_idle(&self) -> bool {
        self.running.is_none()
    }

    /// One math warp-instruction issued beside the running HGMMA: `cycles` more pipe time.
    pub fn slow_down(&mut self, cycles: f64) {
        self.beside_debt += cycles;
    }

    /// Starts the next queued HGMMA at `now` if the pipe is idle; books its operand reads on the
    /// shared-memory `port`.
    pub fn start_next(&mut self, now: u64, cost: PipeCosts, port: &mut Server) -> Option<Started> {
        if self.running.is_some() {
            return None;
        }
        let h = self.queue.pop_front()?;
        let math = h.math_cycles(cost.flops_per_cycle);
        let (_, read_end) = port.book(now, h.smem_bytes().div_ceil(cost.port_bytes_per_cycle));
        self.running = Some(h);
        self.busy += math;
        self.math_until = now + math;
        self.flops += h.flops();
        let owed = self.beside_debt.floor();
        self.beside_debt -= owed;
        let done = (now + math + owed as u64).max(read_end);
        let held = now + h.pipe_cycles(cost.flops_per_cycle, cost.rs_min_cycles) + owed as u64;
        Some(Started {
            hgmma: h,
            free: done.max(held),
            done,
        })
    }

    /// The running HGMMA left the pipe.
    pub fn finish(&mut self) {
        self.running = None;
    }

    pub fn busy(&self) -> u64 {
        self.busy
    }
    /// Math cycles done by cycle `t` (HGMMAs run one at a time, so only the running one's math
    /// can lie ahead of `t`).
    pub fn busy_by(&self, t: u64) -> u64 {
        self.busy - self.math_until.saturating_sub(t).min(self.busy)
    }
    pub fn flops(&self) -> u64 {
        self.flops
    }
}

/// Cycles from a warp's HGMMA of width `n` to its next one: the next waits while this one's
/// `n/2` accumulator registers per thread are handed over, `regs_per_cycle` per cycle, the
/// last `overlap` cycles of it overlapping the next issue; at least the one issue slot.
pub fn issue_gap(n: u32, regs_per_cycle: u64, overlap: u64) -> u64 {
    (n as u64 / 2 / regs_per_cycle)
        .saturating_sub(overlap)
        .max(1)
}

/// The operands of one wgmma as the engine resolved them.
pub(crate) struct WgmmaOperands<'k> {
    pub n: u32,
    pub k: u32,
    pub ksteps: u32,
    pub a: Option<&'k SlotRef>,
    pub b: &'k SlotRef,
    pub acc: u16,
}

impl Shard<'_> {
    /// A wgmma waits for its inputs when it starts; before each HGMMA for the gap after the
    /// warp's last one, then for a place among the `tensor.max_hgmma_in_flight` HGMMAs issued
    /// and not released (the SM's or its warpgroup's; the H200's issuing thread blocks there);
    /// the release that makes room wakes it.
    pub(crate) fn wgmma_outcome(&mut self, w: u32, at: Pending) -> Outcome {
        if let (Some(stall), true) = (at.scoreboard, at.starting) {
            return stall;
        }
        let warp = &self.warps[w as usize];
        if warp.hgmma_next > self.now {
            return Outcome::StallUntil(State::WgmmaWait, warp.hgmma_next);
        }
        let limit = self.p.tensor.max_hgmma_in_flight;
        let (issued, g, sm) = (warp.hgmma_issued, warp.wg, warp.sm as usize);
        if self.p.tensor.hgmma_window_per_sm {
            // The warpgroup's next HGMMA needs a place in the SM's window; the first of its
            // warps to reach it takes one.
            if issued < self.wgs[g as usize].admitted {
                return Outcome::Ready;
            }
            let unit = &mut self.sms[sm];
            if unit.hgmma_places < limit && unit.hgmma_waiting.is_empty() {
                unit.hgmma_places += 1;
                self.wgs[g as usize].admitted += 1;
                return Outcome::Ready;
            }
            if !unit.hgmma_waiting.contains(&g) {
                unit.hgmma_waiting.push_back(g);
            }
            let wg = &mut self.wgs[g as usize];
            if !wg.issue_waiters.contains(&(w, issued + 1)) {
                wg.issue_waiters.push((w, issued + 1));
            }
            return Outcome::Blocked(State::WgmmaWait);
        }
        let wg = &mut self.wgs[g as usize];
        if issued < wg.released + limit {
            return Outcome::Ready;
        }
        let target = issued + 1 - limit;
        if !wg.issue_waiters.contains(&(w, target)) {
            wg.issue_waiters.push((w, target));
        }
        Outcome::Blocked(State::WgmmaWait)
    }

    /// A place in SM `sm`'s HGMMA window is free: it goes to a waiting warpgroup that holds
    /// places before one that holds none (on the H200 a warpgroup that starts into another's
    /// batch of wgmmas once the window is full waits for the whole batch, while two that
    /// started together share it: calibration/wgmma_arb.cu), among either to the one waiting
    /// longest; its warps blocked at that HGMMA go on.
    fn grant_hgmma_place(&mut self, sm: u32) {
        let limit = self.p.tensor.max_hgmma_in_flight;
        let unit = &mut self.sms[sm as usize];
        if unit.hgmma_places >= limit {
            return;
        }
        // A warpgroup that holds places goes before one that holds none; among either, the
        // one waiting longest.
        let wgs = &self.wgs;
        let holds = |g: u32| wgs[g as usize].admitted > wgs[g as usize].released;
        let pick = unit
            .hgmma_waiting
            .iter()
            .position(|&g| holds(g))
            .unwrap_or(0);
        let Some(g) = unit.hgmma_waiting.remove(pick) else {
            return;
        };
        unit.hgmma_places += 1;
        let wg = &mut self.wgs[g as usize];
        wg.admitted += 1;
        for w in reached(&mut wg.issue_waiters, wg.admitted) {
            self.wake_at(w, self.now);
        }
    }

    /// `wgmma.wait_group(n)`: ready when at most `n` of the warp's committed groups are
    /// pending; otherwise the warp waits for the HGMMA count that closes the group it needs.
    pub(crate) fn wgmma_wait_outcome(&mut self, w: u32, n: &Code) -> Result<Outcome, Fault> {
        let n = self.eval(w, n)?.max(0) as usize;
        let warp = &mut self.warps[w as usize];
        let done = self.wgs[warp.wg as usize].completed;
        while warp.wgmma_groups.front().is_some_and(|&end| end <= done) {
            warp.wgmma_groups.pop_front();
        }
        let pending = warp.wgmma_groups.len();
        if pending <= n {
            return Ok(Outcome::Ready);
        }
        let target = warp.wgmma_groups[pending - n - 1];
        let list = &mut self.wgs[warp.wg as usize].waiters;
        if !list.contains(&(w, target)) {
            list.push((w, target));
        }
        Ok(Outcome::Blocked(State::WgmmaWait))
    }

    /// Issues one HGMMA of a wgmma; returns whether the wgmma's last k-step has issued.
    pub(crate) fn issue_wgmma(&mut self, w: u32, op: WgmmaOperands) -> Result<bool, Fault> {
        let reads = [
            match op.a {
                Some(a) => self.slot_index(w, a)?,
                None => NO_SLOT,
            },
            self.slot_index(w, op.b)?,
        ];
        self.emit(Hook::WgmmaIssued {
            warp: w,
            pc: self.warps[w as usize].pc,
            reads,
            acc: op.acc,
        })?;
        let t = &self.p.tensor;
        let gap = issue_gap(op.n, t.issue_acc_regs_per_cycle, t.issue_overlap_cycles);
        let warp = &mut self.warps[w as usize];
        if warp.progress == 0 {
            warp.progress = op.ksteps;
        }
        warp.progress -= 1;
        let last = warp.progress == 0;
        warp.hgmma_issued += 1;
        warp.hgmma_next = self.now + gap;
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
            self.sms[sm as usize].tensor.submit(Hgmma {
                warpgroup: wg as u32,
                n: op.n,
                k: op.k,
                a_smem: op.a.is_some(),
            });
        }
        if self.sms[sm as usize].tensor.is_idle() {
            self.start_tensor(sm);
        }
        Ok(last)
    }

    /// `wgmma.commit_group`: the warp's HGMMAs so far close a group.
    pub(crate) fn issue_wgmma_commit(&mut self, w: u32) {
        let warp = &mut self.warps[w as usize];
        warp.wgmma_groups.push_back(warp.hgmma_issued);
        let (warpgroup, group) = (warp.wg, warp.hgmma_issued);
        self.record(Hook::WgmmaCommitted {
            warp: w,
            warpgroup,
            group,
        });
    }

    /// `wgmma.wait_group(n)` passes: the observers learn how many of the warp's latest groups
    /// it leaves pending.
    pub(crate) fn pass_wgmma_wait(&mut self, w: u32, n: &Code) -> Result<(), Fault> {
        let n = self.eval(w, n)?.max(0) as u64;
        self.record(Hook::WgmmaWaitPassed { warp: w, n });
        Ok(())
    }

    /// Starts the SM's next queued HGMMA if its tensor pipe is idle.
    pub(crate) fn start_tensor(&mut self, sm: u32) {
        let cost = PipeCosts {
            flops_per_cycle: self.p.tensor.flops_per_cycle,
            rs_min_cycles: self.p.tensor.rs_min_cycles,
            port_bytes_per_cycle: self.p.smem.bytes_per_cycle(),
        };
        let unit = &mut self.sms[sm as usize];
        if let Some(s) = unit.tensor.start_next(self.now, cost, &mut unit.port) {
            self.book_horizon(s.free);
            self.q.push(s.free, Event::TensorDone(sm));
            let t = &self.p.tensor;
            let visible = s.done + t.extra_latency;
            let released = visible - t.inflight_release_lead.min(t.extra_latency);
            self.q
                .push(released, Event::HgmmaReleased(s.hgmma.warpgroup));
            self.q
                .push(visible, Event::HgmmaComplete(s.hgmma.warpgroup));
        }
    }

    pub(crate) fn on_tensor_done(&mut self, sm: u32) {
        self.sms[sm as usize].tensor.finish();
        self.start_tensor(sm);
    }

    /// An HGMMA left the warpgroup's in-flight count: wake the warps whose issue it makes room
    /// for.
    pub(crate) fn on_hgmma_released(&mut self, warpgroup: u32) {
        let g = &mut self.wgs[warpgroup as usize];
        g.released += 1;
        let cta = g.cta;
        if self.p.tensor.hgmma_window_per_sm {
            let sm = self.ctas[cta as usize].sm;
            self.sms[sm as usize].hgmma_places -= 1;
            self.grant_hgmma_place(sm);
        } else {
            for w in reached(&mut g.issue_waiters, g.released) {
                self.wake_at(w, self.now);
            }
        }
        self.drop_cta(cta);
    }

    /// An HGMMA's results are visible: wake the warpgroup's warps whose wait_group it ends.
    pub(crate) fn on_hgmma_complete(&mut self, warpgroup: u32) {
        self.record(Hook::HgmmaCompleted { warpgroup });
        let g = &mut self.wgs[warpgroup as usize];
        g.completed += 1;
        let (group, cta) = (g.completed, g.cta);
        for w in reached(&mut g.waiters, group) {
            self.record(Hook::WgmmaWaitReleased { warp: w, group });
            self.wake_at(w, self.now);
        }
        self.last_progress = self.now;
        self.drop_cta(cta);
    }
}

/// Takes out of `waiters` (warp, target count) those that `count` reaches.
fn reached(waiters: &mut Vec<(u32, u64)>, count: u64) -> Vec<u32> {
    let mut out = Vec::new();
    waiters.retain(|&(w, target)| {
        let ok = count >= target;
        if ok {
            out.push(w);
        }
        !ok
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const COSTS: PipeCosts = PipeCosts {
        flops_per_cycle: 4096,
        rs_min_cycles: 13,
        port_bytes_per_cycle: 128,
    };

    fn hgmma(n: u32, a_smem: bool) -> Hgmma {
        Hgmma {
            warpgroup: 0,
            n,
            k: 16,
            a_smem,
        }
    }

    #[test]
    fn every_operand_type_takes_the_16_bit_cycles_for_its_own_flops() {
        let (bf16, fp8, tf32) = (
            hgmma(128, true),
            Hgmma {
                k: 32,
                ..hgmma(128, true)
            },
            Hgmma {
                k: 8,
                ..hgmma(128, true)
            },
        );
        for h in [bf16, fp8, tf32] {
            assert_eq!((h.math_cycles(4096), h.smem_bytes()), (64, 6144));
        }
        assert_eq!(
            (bf16.flops(), fp8.flops(), tf32.flops()),
            (262_144, 524_288, 131_072)
        );
    }

    /// Runs `count` back-to-back HGMMAs and returns (end cycle, math busy cycles).
    fn stream(n: u32, a_smem: bool, count: u32) -> (u64, u64) {
        let mut pipe = TensorPipe::default();
        let mut port = Server::default();
        for _ in 0..count {
            pipe.submit(hgmma(n, a_smem));
        }
        let mut now = 0;
        while let Some(s) = pipe.start_next(now, COSTS, &mut port) {
            now = s.free;
            pipe.finish();
        }
        (now, pipe.busy())
    }

    #[test]
    fn ss_busy_fraction_matches_the_feed_model() {
        for n in [16u32, 32, 64, 128, 256] {
            let (end, busy) = stream(n, true, 100);
            let expect = (0.5 * n as f64 / (16.0 + 0.25 * n as f64)).min(1.0);
            let got = busy as f64 / end as f64;
            assert!((got - expect).abs() < 1e-9, "N={n}: {got} vs {expect}");
        }
    }

    #[test]
    fn rs_form_is_compute_bound() {
        for n in [32u32, 64, 256] {
            let (end, busy) = stream(n, false, 100);
            assert_eq!(end, busy, "N={n}");
            assert_eq!(busy, 100 * n as u64 / 2);
        }
    }

    #[test]
    fn narrow_rs_form_holds_the_pipe_for_its_floor() {
        // N = 8, 16, 24: 4, 8, 12 cycles of math, 13 of pipe; the busy count stays the math.
        for n in [8u32, 16, 24] {
            let (end, busy) = stream(n, false, 100);
            assert_eq!((end, busy), (1300, 100 * n as u64 / 2), "N={n}");
        }
        // The floor delays the next HGMMA, not this one's results.
        let mut pipe = TensorPipe::default();
        pipe.submit(hgmma(8, false));
        let s = pipe.start_next(10, COSTS, &mut Server::default());
        assert_eq!(s.map(|s| (s.free, s.done)), Some((23, 14)));
    }

    #[test]
    fn the_issue_gap_grows_with_the_accumulators() {
        // h200-sxm's 4 registers per cycle less 4 cycles: the measured 4, 12, 28 at N = 64,
        // 128, 256, and the issue slot alone at N <= 32.
        let gaps: Vec<u64> = [8, 32, 48, 64, 128, 256]
            .iter()
            .map(|&n| issue_gap(n, 4, 4))
            .collect();
        assert_eq!(gaps, [1, 1, 2, 4, 12, 28]);
    }

    #[test]
    fn operand_reads_wait_for_a_busy_port() {
        let mut pipe = TensorPipe::default();
        let mut port = Server::default();
        port.book(0, 100); // e.g. a TMA write holds the port
        pipe.submit(hgmma(256, true));
        // Reads 80 cycles from 100 to 180; math alone would end at 128.
        let s = pipe.start_next(0, COSTS, &mut port);
        assert_eq!(s.map(|s| (s.free, s.done)), Some((180, 180)));
    }
}
