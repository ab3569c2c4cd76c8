//! Register spills to local memory. A role whose register estimate per thread (live values,
//! wgmma accumulators and the preset's baseline: `isa::program::Registers`) exceeds its budget
//! keeps the excess live values in local memory, a fraction `spilled / live` of them. Each
//! ALU, FMA, MUFU or shuffle warp-instruction of the role (`Alu`, `Fma`, `Mufu`, `Shfl`,
//! `Compute` without `acc`) reads and writes one live value, so that fraction of them (counted
//! exactly over the warp's run) reloads its value from local memory before it runs and stores
//! it back after, as compiled spill code does (LDL, the instruction, STL).
//!
//! A compute macro runs its spilled warp-instructions first, in batches of
//! `local.reload_batch`: the batch's loads (one issue slot each), its warp-instructions (the
//! first waits for the loads: `long_scoreboard`), its stores (the first waits for their
//! results); then the rest as usual. Every local access is one 128-byte warp access (32 threads
//! x 4 bytes) booked on the SM's L1 as one line (`crate::sm::lsu`); a load's value is usable
//! `local.latency` cycles after its booking ends. While the SM's resident warps' spilled
//! values exceed `local.l1_bytes`, every access misses (a cyclic reuse larger than the cache):
//! it also takes the L1's path to L2 (`local.miss_bytes_per_cycle`, fills and write-backs
//! together) and makes an L2 request of its line, a read for a load (its value is usable once
//! back, plus the latency), a write for a store. Measured on the H200: calibration/spill.cu
//! (h200-spill.csv), `sim validate` group `spill`.

use crate::engine::crossing::Then;
use crate::engine::error::Fault;
use crate::engine::schedule::{Outcome, Pending};
use crate::engine::Shard;
use crate::observe::warp_state::State;
use isa::expr::Code;
use isa::program::Pipe;
use serde::Serialize;

/// Bytes of one warp's access to one spilled value: 32 threads x 4 bytes, one L1 line.
pub const VALUE_BYTES: u64 = 128;

/// Where a warp is in the spilled part of its current compute macro.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpillSeq {
    /// Spilled warp-instructions of the macro not yet through their batch.
    left: u32,
    /// The current batch's size and step, and its warp-instructions issued in that step.
    batch: u32,
    step: Step,
    done: u32,
    /// The frame slot of the batch's first value.
    first: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Load,
    Compute,
    Store,
}

/// A warp's (or a role's) local-memory traffic: warp-level loads and stores, and those that
/// missed the L1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LocalTraffic {
    pub loads: u64,
    pub stores: u64,
    pub misses: u64,
}

impl LocalTraffic {
    pub fn add(&mut self, o: &LocalTraffic) {
        self.loads += o.loads;
        self.stores += o.stores;
        self.misses += o.misses;
    }
}

/// Of `n` more warp-instructions, each touching a spilled value `spilled` times in `live`, how
/// many do, and the carry to the next count: the running count of a warp with `carry` left.
pub(crate) fn spilled_share(carry: u64, n: u64, spilled: u64, live: u64) -> (u64, u64) {
    // Saturating: a count past the macro limit is an error at issue, not a wrap to 0.
    let total = carry.saturating_add(n.saturating_mul(spilled));
    (total / live, total % live)
}

impl Shard<'_> {
    /// Registers per thread warp `w`'s role spills, and its live values (0, 0 when it spills
    /// none): what fraction of its compute touches local memory.
    fn spill_ratio(&self, w: u32) -> (u64, u64) {
        match self.k.roles[self.warps[w as usize].role as usize].registers {
            Some(r) if r.spilled() > 0 => (u64::from(r.spilled()), u64::from(r.live)),
            _ => (0, 0),
        }
    }

    /// Whether a compute instruction on `pipe` of warp `w` reads and writes a live value that
    /// may be spilled: ALU, FMA, MUFU and shuffles of a spilling role, not on accumulators.
    fn touches_spills(&self, w: u32, pipe: Pipe, acc: Option<u16>) -> bool {
        acc.is_none() && pipe != Pipe::Mma && self.spill_ratio(w).0 > 0
    }

    /// How many of a macro's `n` warp-instructions touch a spilled value: the warp's running
    /// count of `spilled / live` per warp-instruction, so that the fraction is exact over its
    /// run. With `take` the warp's count moves on.
    fn spilled_in(&mut self, w: u32, n: u64, take: bool) -> u64 {
        let (spilled, live) = self.spill_ratio(w);
        let warp = &mut self.warps[w as usize];
        let (count, carry) = spilled_share(warp.spill_carry, n, spilled, live);
        if take {
            warp.spill_carry = carry;
        }
        count
    }

    /// The bytes of local memory each warp of role `role` keeps.
    pub(crate) fn spill_frame(&self, role: u16) -> u64 {
        u64::from(self.k.roles[role as usize].spilled()) * VALUE_BYTES
    }

    /// Whether the compute instruction can issue, when the spilled part of its macro decides:
    /// a local load or store, or a warp-instruction of a batch; `None` otherwise.
    pub(crate) fn spill_outcome(
        &mut self,
        w: u32,
        pipe: Pipe,
        count: &Code,
        acc: Option<u16>,
        at: Pending,
        pipe_free: u64,
    ) -> Result<Option<Outcome>, Fault> {
        let Some(seq) = self.warps[w as usize].spill else {
            if at.starting && self.touches_spills(w, pipe, acc) {
                let n = self.eval(w, count)?.max(0) as u64;
                if self.spilled_in(w, n, false) > 0 {
                    // Its first step is a load, which reads no register.
                    return Ok(Some(Outcome::Ready));
                }
            }
            return Ok(None);
        };
        let inputs = at.scoreboard.filter(|_| seq.done == 0);
        Ok(Some(match seq.step {
            Step::Load => Outcome::Ready,
            Step::Compute => match inputs {
                Some(stall) => stall,
                None if pipe_free > self.now => {
                    Outcome::StallUntil(State::MathPipeThrottle, pipe_free)
                }
                None => Outcome::Ready,
            },
            Step::Store => inputs.unwrap_or(Outcome::Ready),
        }))
    }

    /// At the start of a macro of `n` warp-instructions: begins its spilled part, if it has one.
    pub(crate) fn start_spills(&mut self, w: u32, pipe: Pipe, acc: Option<u16>, n: u64) {
        if !self.touches_spills(w, pipe, acc) {
            return;
        }
        // At most the macro's count, which issue keeps within a u32.
        let s = self.spilled_in(w, n, true) as u32;
        if s > 0 {
            let batch = s.min(self.p.local.reload_batch);
            let warp = &mut self.warps[w as usize];
            warp.spill = Some(SpillSeq {
                left: s,
                batch,
                step: Step::Load,
                done: 0,
                first: warp.spill_slot,
            });
        }
    }

    /// Issues the next step of the macro's spilled part when it has one: a local load, a
    /// warp-instruction of the batch (through `compute`) or a local store. `None` when the
    /// macro has no spilled part left; otherwise whether the macro is done.
    pub(crate) fn issue_spill_step(
        &mut self,
        w: u32,
        compute: impl FnOnce(&mut Self),
    ) -> Option<bool> {
        let mut seq = self.warps[w as usize].spill?;
        let spilled = self.spill_ratio(w).0 as u32;
        let slot = (seq.first + seq.done) % spilled;
        match seq.step {
            Step::Load => self.local_access(w, slot, false),
            Step::Compute => compute(self),
            Step::Store => self.local_access(w, slot, true),
        }
        seq.done += 1;
        let warp = &mut self.warps[w as usize];
        if seq.done < seq.batch {
            warp.spill = Some(seq);
            return Some(false);
        }
        seq.done = 0;
        seq.step = match seq.step {
            Step::Load => Step::Compute,
            Step::Compute => Step::Store,
            Step::Store => {
                seq.left -= seq.batch;
                seq.first = (seq.first + seq.batch) % spilled;
                warp.spill_slot = seq.first;
                if seq.left == 0 {
                    warp.spill = None;
                    return Some(warp.progress == 0);
                }
                seq.batch = seq.left.min(self.p.local.reload_batch);
                Step::Load
            }
        };
        warp.spill = Some(seq);
        Some(false)
    }

    /// One warp access of 128 bytes to frame slot `slot` of warp `w`'s local memory: through
    /// the SM's L1, and to L2 while the SM's spilled values do not fit the L1.
    fn local_access(&mut self, w: u32, slot: u32, store: bool) {
        let l = &self.p.local;
        let warp = &self.warps[w as usize];
        let sm = warp.sm;
        let addr = self.local_base
            + self.frame_index(w) * self.frame_stride
            + u64::from(slot) * VALUE_BYTES;
        let miss = self.sms[sm as usize].local_bytes > l.l1_bytes;
        let latency = l.latency;
        let (_, done) = self.book_l1(sm, 1);
        let s = &mut self.sms[sm as usize];
        if miss {
            let through = s.local_miss.book(done, VALUE_BYTES);
            self.book_horizon(through);
            let from = self.next_request();
            if store {
                self.request(sm, through, addr, VALUE_BYTES, true);
            } else {
                self.request(sm, done, addr, VALUE_BYTES, false);
                self.warps[w as usize].load_pending(None);
            }
            let load = (!store).then_some(latency);
            self.then(
                from,
                Then::Local {
                    warp: w,
                    load,
                    done: through,
                },
            );
        } else {
            self.book_horizon(done);
            if !store {
                self.warps[w as usize].scoreboard(done + latency, State::LongScoreboard);
            }
        }
        let warp = &mut self.warps[w as usize];
        if store {
            warp.local.stores += 1;
        } else {
            warp.local.loads += 1;
        }
        warp.local.misses += u64::from(miss);
    }

    /// Warp `w`'s frame among every warp slot of the GPU: local memory belongs to the slot, as
    /// the hardware allocates it per resident warp.
    fn frame_index(&self, w: u32) -> u64 {
        let warp = &self.warps[w as usize];
        let sm = &self.p.sm;
        u64::from(warp.partition) * u64::from(sm.warps_per_partition) + u64::from(warp.slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spilled_share_is_exact_over_a_run() {
        // 74 of 128 live values spilled: one Fma(128) an iteration touches 74 of them, one
        // instruction at a time 74 in every 128, and any split of a run the same in total.
        assert_eq!(spilled_share(0, 128, 74, 128), (74, 0));
        let (mut carry, mut total) = (0, 0);
        for _ in 0..128 {
            let (n, c) = spilled_share(carry, 1, 74, 128);
            (total, carry) = (total + n, c);
        }
        assert_eq!((total, carry), (74, 0));
        let (a, c) = spilled_share(0, 100, 3, 7);
        let (b, c) = spilled_share(c, 40, 3, 7);
        assert_eq!((a + b, c), (60, 0));
        assert_eq!(spilled_share(6, u64::MAX, 3, 7).0, u64::MAX / 7);
    }
}
