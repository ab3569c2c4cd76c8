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
//! `Ldc` and `S2r` (SASS LDC, S2R) read a constant or a special register onto one of the warp's
//! scoreboards, `pipes.ldc_latency` or `pipes.s2r_latency` after issue; they book no pipe (their
//! rate under load is not measured).

use crate::engine::error::Fault;
use crate::engine::hooks::Hook;
use crate::engine::schedule::{Outcome, Pending};
use crate::engine::Engine;
use crate::observe::warp_state::State;
use isa::expr::Code;
use isa::program::{Pipe, RegSource};

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

impl Engine<'_> {
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
        let shared_free = self.parts[warp.partition as usize].pipes[pipe_index(pipe)].next_free();
        // A warp's own mma.sync interval is a stall count the compiler encodes, which Nsight
        // Compute reports as `wait`; only a core busy with another warp's work is a throttle.
        let own_free = if pipe == Pipe::Mma { warp.mma_next } else { 0 };
        let pipe_free = shared_free.max(own_free);
        if let Some(o) = self.spill_outcome(w, pipe, count, acc, at, pipe_free)? {
            return Ok(Some(o));
        }
        let throttle = if own_free > shared_free {
            State::Wait
        } else {
            State::MathPipeThrottle
        };
        Ok(Some(match at.scoreboard {
            Some(stall) if at.starting => stall,
            _ if pipe_free > self.now => Outcome::StallUntil(throttle, pipe_free),
            _ => Outcome::Ready,
        }))
    }

    /// The pipe's occupancy per warp-instruction, result latency, and the state a warp waiting
    /// for the result is in.
    fn pipe_timing(&self, pipe: Pipe) -> PipeTiming {
        let p = &self.p;
        let of = |c: &crate::gpu::preset::Pipe, result: State| PipeTiming {
            cycles: c.cycles_per_warp_instr(),
            latency: c.latency,
            result,
        };
        match pipe {
            Pipe::Alu => of(&p.pipes.alu, State::Wait),
            Pipe::Fma => of(&p.pipes.fma, State::Wait),
            Pipe::Mufu => of(&p.pipes.mufu, State::ShortScoreboard),
            // Shuffles return through the shared-memory crossbar: a short-scoreboard wait.
            Pipe::Shfl => of(&p.pipes.shfl, State::ShortScoreboard),
            Pipe::Mma => PipeTiming {
                cycles: p.tensor.mma_cycles,
                latency: p.tensor.mma_latency,
                result: State::Wait,
            },
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
            let n = self.eval(w, count)?;
            if n > MAX_MACRO_COUNT {
                return Err(Fault::MacroCount {
                    pipe: pipe.name(),
                    count: n,
                    max: MAX_MACRO_COUNT,
                });
            }
            self.warps[w as usize].progress = n as u32;
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
        warp.progress -= 1;
    }
}
