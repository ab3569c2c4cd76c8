//! A partition's math pipes — ALU, FMA, MUFU, the shuffle path, and the tensor core as mma.sync
//! uses it — and the compute instructions that book them (`Compute`: `Alu(n)`, `Fma(n)`,
//! `Mufu(n)`, `Shfl(n)`, `Mma(n)`).
//!
//! A compute macro is `n` independent warp-instructions. Each takes one issue slot and books its
//! pipe for `32 / lanes` cycles (mma.sync: `tensor.mma_cycles`); its result is ready `latency`
//! cycles after it starts. One warp's mma.sync issue at most every `tensor.mma_issue_cycles`
//! (on the H200 a warp alone issues independent HMMAs every 8.4 cycles, where 2 warps of a
//! partition keep its core busy every 7.0: calibration/mma_sync.cu, mma_rate). The warp keeps its pc while the count runs down, so other warps of
//! the partition may issue in between.
//!
//! Beside a running HGMMA the partition dispatches these more slowly: each ALU, FMA or MUFU
//! warp-instruction issued while the SM's tensor pipe runs an HGMMA holds the partition's issue
//! port `tensor.issue_beside_hgmma` extra cycles (fractions carry over), and the warp the
//! scheduler would issue meanwhile is in `dispatch_stall`. Measured on the H200: a consumer's
//! softmax step takes 1.57x as long beside back-to-back SS wgmma of another warpgroup, 1.47x to
//! 1.66x beside RS (calibration/softmax.cu, softmax_beside_{ss,rs}), the stall Nsight Compute
//! reports on the FADD, FMUL and MUFU of FA3-class kernels. The HGMMAs slow down too: each such
//! warp-instruction adds `tensor.hgmma_beside_issue` cycles to the tensor pipe's next HGMMA
//! (back-to-back m64n128k16 take 83.0 cycles beside the softmax step against 73.9 alone, SS;
//! 77.7 against 71.8, RS: calibration/softmax.cu, wgmma_beside_{ss,rs}).
//!
//! A warp waiting for a pipe that its own previous warp-instruction holds is in `wait`: the
//! compiler encodes a pipe's rate for one warp in its stall counts (two MUFU.EX2 of a warp 8
//! cycles apart, `calibration/sass.py softmax softmax_kernel`), which Nsight Compute reports as
//! `wait`; only a pipe held by another warp is `math_pipe_throttle`.
//!
//! `Mix` is a compiled block of independent warp-instructions on several pipes, interleaved as
//! the compiler schedules them: each next warp-instruction goes to the pipe with the largest
//! share of its count still to issue (ties to the slower pipe: MUFU, shuffle, ALU, FMA, then
//! the uniform datapath), so the slow pipe's work spreads evenly through the block and the
//! others fill the gaps, and each warp-instruction holds the warp for its share of `stalls`
//! (what a warp alone takes to issue the block in SASS, spread evenly) from its dispatch
//! before the next may issue.
//!
//! `Ldc` and `S2r` (SASS LDC, S2R) read a constant or a special register onto one of the warp's
//! scoreboards, `pipes.ldc_latency` or `pipes.s2r_latency` after issue; they book no pipe (their
//! rate under load is not measured).

use crate::engine::error::Fault;
use crate::engine::hooks::Hook;
use crate::engine::schedule::{Outcome, Pending};
use crate::engine::Shard;
use crate::gpu::preset::Preset;
use crate::observe::warp_state::State;
use isa::expr::Code;
use isa::program::{MixPipe, Pipe, RegSource, MIX_PIPES};

/// Largest per-thread count of one compute instruction (keeps the count in a u32).
pub const MAX_MACRO_COUNT: i64 = 1 << 30;

/// How one pipe times a warp-instruction (see `Engine::pipe_timing`).
struct PipeTiming {
    cycles: u64,
    latency: u64,
    result: State,
}

/// FLOPs of one mma.sync m16n8k16.
const MMA_FLOPS: u64 = 2 * 16 * 8 * 16;

/// A warp's place in a `Mix`: each pipe's count and what is left of it (in the order of
/// `MIX_PIPES`), the block's stall counts, and the earliest cycle of its next warp-instruction.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MixProgress {
    count: [u32; MIX_PIPES.len()],
    left: [u32; MIX_PIPES.len()],
    stalls: u64,
    /// The earliest cycle the next warp-instruction may issue: the block's stall counts spread
    /// evenly over its warp-instructions, each counted from the one before (a stall count
    /// holds the warp after its instruction, however late that issued). 0 before the first.
    due: u64,
    /// `issued * stalls % total` for the warp-instructions issued so far: the k-th one's share
    /// of the stalls, `k * stalls / total - (k - 1) * stalls / total`, is `(rem + stalls) /
    /// total` with the k - 1 before it (one division per warp-instruction, none when a warp is
    /// evaluated again).
    rem: u64,
}

impl MixProgress {
    fn total(&self) -> u64 {
        self.count.iter().map(|&c| c as u64).sum()
    }

    /// The index in `MIX_PIPES` of the next warp-instruction: the pipe with the largest share of
    /// its count left, the earlier one on a tie.
    fn next(&self) -> usize {
        let mut best = usize::MAX;
        for i in 0..MIX_PIPES.len() {
            if self.left[i] == 0 {
                continue;
            }
            let ahead = |b: usize| {
                self.left[i] as u64 * self.count[b] as u64
                    > self.left[b] as u64 * self.count[i] as u64
            };
            if best == usize::MAX || ahead(best) {
                best = i;
            }
        }
        best
    }

    /// A warp-instruction was dispatched at `last`: the next one's earliest cycle is its share
    /// of the stalls after it.
    fn paced_from(&mut self, last: u64) {
        let share = self.rem + self.stalls;
        let total = self.total();
        (self.due, self.rem) = (last + share / total, share % total);
    }
}

/// The pipe's index in `Partition::pipes`.
pub fn pipe_index(p: Pipe) -> usize {
    match p {
        Pipe::Alu => 0,
        Pipe::Fma => 1,
        Pipe::Mufu => 2,
        Pipe::Mma => 3,
        Pipe::Shfl => 4,
    }
}

/// Cycles one warp-instruction holds `pipe` (the bound's cost formula is the engine's).
pub fn pipe_cycles(p: &Preset, pipe: Pipe) -> u64 {
    match pipe {
        Pipe::Alu => p.pipes.alu.cycles_per_warp_instr(),
        Pipe::Fma => p.pipes.fma.cycles_per_warp_instr(),
        Pipe::Mufu => p.pipes.mufu.cycles_per_warp_instr(),
        Pipe::Shfl => p.pipes.shfl.cycles_per_warp_instr(),
        Pipe::Mma => p.tensor.mma_cycles,
    }
}

impl Shard<'_> {
    /// A compute instruction waits for its inputs when it starts, then for its pipe before each
    /// warp-instruction; `None` when its count is zero (nothing to do).
    pub(crate) fn compute_outcome(
        &mut self,
        w: u32,
        pipe: Pipe,
        count: &Code,
        acc: Option<u16>,
        at: Pending,
    ) -> Result<Option<Outcome>, Fault> {
        if at.starting && self.eval(w, count)? <= 0 {
            return Ok(None);
        }
        let warp = &self.warps[w as usize];
        // A warp's own mma.sync interval is a stall count the compiler encodes, as is its own
        // last warp-instruction's hold on the pipe.
        let own_free = if pipe == Pipe::Mma { warp.mma_next } else { 0 };
        let (pipe_free, throttle) = self.pipe_wait(w, pipe, own_free);
        if let Some(o) = self.spill_outcome(w, pipe, count, acc, at, pipe_free)? {
            return Ok(Some(o));
        }
        Ok(Some(match at.scoreboard {
            Some(stall) if at.starting => stall,
            _ if pipe_free > self.now => Outcome::StallUntil(throttle, pipe_free),
            _ => Outcome::Ready,
        }))
    }

    /// When warp `w` may next book `pipe` (not before `own_free`, an interval of its own), and
    /// its state until then: `wait` when its own work holds the pipe (a stall count the
    /// compiler encodes, which Nsight Compute reports as `wait`), `math_pipe_throttle` when
    /// another warp's does.
    fn pipe_wait(&self, w: u32, pipe: Pipe, own_free: u64) -> (u64, State) {
        let part = &self.parts[self.warps[w as usize].partition as usize];
        let shared_free = part.pipes[pipe_index(pipe)].next_free();
        let own = own_free > shared_free || part.pipe_owner[pipe_index(pipe)] == w;
        let state = if own {
            State::Wait
        } else {
            State::MathPipeThrottle
        };
        (shared_free.max(own_free), state)
    }

    /// A `Mix` waits for its inputs when it starts, then before each warp-instruction for the
    /// block's stall counts and for that warp-instruction's pipe; `None` when all its counts
    /// are zero (nothing to do).
    pub(crate) fn mix_outcome(
        &mut self,
        w: u32,
        counts: &[Code; MIX_PIPES.len()],
        stalls: &Code,
        at: Pending,
    ) -> Result<Option<Outcome>, Fault> {
        let mix = match self.warps[w as usize].mix {
            Some(mix) => mix,
            None => {
                let mut count = [0u32; MIX_PIPES.len()];
                for ((c, code), pipe) in count.iter_mut().zip(counts).zip(MIX_PIPES) {
                    *c = self.macro_count(w, code, pipe.name())?;
                }
                if count.iter().all(|&c| c == 0) {
                    return Ok(None);
                }
                let stalls = self.eval(w, stalls)?;
                if stalls > MAX_MACRO_COUNT {
                    return Err(Fault::StallCycles {
                        cycles: stalls,
                        max: MAX_MACRO_COUNT,
                    });
                }
                let mix = MixProgress {
                    count,
                    left: count,
                    stalls: stalls.max(0) as u64,
                    due: 0,
                    rem: 0,
                };
                self.warps[w as usize].mix = Some(mix);
                mix
            }
        };
        if let (Some(stall), true) = (at.scoreboard, at.starting) {
            return Ok(Some(stall));
        }
        if mix.due > self.now {
            return Ok(Some(Outcome::StallUntil(State::Wait, mix.due)));
        }
        let MixPipe::Pipe(pipe) = MIX_PIPES[mix.next()] else {
            return Ok(Some(Outcome::Ready));
        };
        let (pipe_free, state) = self.pipe_wait(w, pipe, 0);
        Ok(Some(if pipe_free > self.now {
            Outcome::StallUntil(state, pipe_free)
        } else {
            Outcome::Ready
        }))
    }

    /// A macro's count of warp-instructions, checked against the limit (`what` names the pipe
    /// in the error); one ≤ 0 is none.
    fn macro_count(&self, w: u32, code: &Code, what: &'static str) -> Result<u32, Fault> {
        let n = self.eval(w, code)?;
        if n > MAX_MACRO_COUNT {
            return Err(Fault::MacroCount {
                pipe: what,
                count: n,
                max: MAX_MACRO_COUNT,
            });
        }
        Ok(n.max(0) as u32)
    }

    /// Issues one warp-instruction of a `Mix`; returns whether the block is done.
    pub(crate) fn issue_mix(&mut self, w: u32, acc: Option<u16>) -> Result<bool, Fault> {
        let warp = &mut self.warps[w as usize];
        let mut mix = warp.mix.take().expect("mix_outcome starts the block");
        if warp.progress == 0 {
            warp.progress = mix.total() as u32;
        }
        warp.progress -= 1;
        let i = mix.next();
        mix.left[i] -= 1;
        let mut last = self.now;
        if let MixPipe::Pipe(pipe) = MIX_PIPES[i] {
            if let Some(acc) = acc {
                let warpgroup = self.warps[w as usize].wg;
                self.emit(Hook::AccumulatorsRead {
                    warp: w,
                    warpgroup,
                    acc,
                    pipe,
                })?;
            }
            self.book_pipe(w, pipe);
            // The stall count runs from the dispatch, which a running HGMMA holds longer.
            let part = &self.parts[self.warps[w as usize].partition as usize];
            last = last.max(part.issue_free.saturating_sub(1));
        }
        mix.paced_from(last);
        let warp = &mut self.warps[w as usize];
        let done = warp.progress == 0;
        warp.mix = (!done).then_some(mix);
        Ok(done)
    }

    /// The pipe's occupancy per warp-instruction, result latency, and the state a warp waiting
    /// for the result is in.
    fn pipe_timing(&self, pipe: Pipe) -> PipeTiming {
        let p = &self.p;
        let (latency, result) = match pipe {
            Pipe::Alu => (p.pipes.alu.latency, State::Wait),
            Pipe::Fma => (p.pipes.fma.latency, State::Wait),
            Pipe::Mufu => (p.pipes.mufu.latency, State::ShortScoreboard),
            // Shuffles return through the shared-memory crossbar: a short-scoreboard wait.
            Pipe::Shfl => (p.pipes.shfl.latency, State::ShortScoreboard),
            Pipe::Mma => (p.tensor.mma_latency, State::Wait),
        };
        PipeTiming {
            cycles: pipe_cycles(p, pipe),
            latency,
            result,
        }
    }

    /// Issues one warp-instruction of a compute macro; returns whether the macro is done.
    pub(crate) fn issue_compute(
        &mut self,
        w: u32,
        pipe: Pipe,
        count: &Code,
        acc: Option<u16>,
    ) -> Result<bool, Fault> {
        if let Some(acc) = acc {
            let warp = &self.warps[w as usize];
            self.emit(Hook::AccumulatorsRead {
                warp: w,
                warpgroup: warp.wg,
                acc,
                pipe,
            })?;
        }
        if self.warps[w as usize].progress == 0 && self.warps[w as usize].spill.is_none() {
            let n = self.macro_count(w, count, pipe.name())?;
            self.warps[w as usize].progress = n;
            self.start_spills(w, pipe, acc, n as u64);
        }
        if let Some(done) = self.issue_spill_step(w, |e| e.book_compute(w, pipe)) {
            return Ok(done);
        }
        self.book_compute(w, pipe);
        Ok(self.warps[w as usize].progress == 0)
    }

    /// Issues an LDC or S2R: its result on scoreboard `sb` after the source's latency.
    pub(crate) fn issue_reg_read(&mut self, w: u32, source: RegSource, sb: u8) {
        let latency = match source {
            RegSource::Constant => self.p.pipes.ldc_latency,
            RegSource::Special => self.p.pipes.s2r_latency,
        };
        let ready = self.now + latency;
        self.horizon = self.horizon.max(ready);
        self.warps[w as usize].load_result(Some(sb), ready, State::ShortScoreboard);
    }

    /// Books one warp-instruction of a compute macro on its pipe and counts it down.
    fn book_compute(&mut self, w: u32, pipe: Pipe) {
        self.book_pipe(w, pipe);
        self.warps[w as usize].progress -= 1;
    }

    /// Books one warp-instruction on its pipe: its result on the scoreboard, and its cost
    /// beside a running HGMMA.
    fn book_pipe(&mut self, w: u32, pipe: Pipe) {
        let PipeTiming {
            cycles,
            latency,
            result: kind,
        } = self.pipe_timing(pipe);
        if pipe == Pipe::Mma {
            self.mma_flops += MMA_FLOPS;
        }
        let warp = &mut self.warps[w as usize];
        let part = &mut self.parts[warp.partition as usize];
        let (start, end) = part.pipes[pipe_index(pipe)].book(self.now, cycles);
        part.pipe_owner[pipe_index(pipe)] = w;
        if pipe == Pipe::Mma {
            warp.mma_next = start + self.p.tensor.mma_issue_cycles;
        }
        let beside = self.p.tensor.issue_beside_hgmma;
        let measured_beside = matches!(pipe, Pipe::Alu | Pipe::Fma | Pipe::Mufu);
        let tensor = &mut self.sms[warp.sm as usize].tensor;
        if measured_beside && !tensor.is_idle() {
            if beside > 0.0 {
                part.issue_debt += beside;
                let whole = part.issue_debt.floor();
                part.issue_debt -= whole;
                part.issue_free = self.now + 1 + whole as u64;
            }
            tensor.slow_down(self.p.tensor.hgmma_beside_issue);
        }
        self.horizon = self.horizon.max(end);
        warp.scoreboard(start + latency, kind);
    }
}
