//! The register file as a per-CTA pool (PTX `setmaxnreg`): a CTA is allocated its launch
//! registers; `setmaxnreg.dec` returns a warp's surplus to the pool, `.inc` takes from it and
//! blocks while the pool is short. Registers are allocated per warp in units of `alloc_unit`.
//!
//! `setmaxnreg` is issued here: `.inc` waits (blocked) while the pool is short; `.dec` returns
//! registers and wakes every warp blocked in `.inc`.

use crate::engine::error::Fault;
use crate::engine::schedule::Outcome;
use crate::engine::Shard;
use crate::observe::warp_state::State;

#[derive(Clone, Debug)]
pub struct RegPool {
    free: u32,
    alloc_unit: u32,
}

impl RegPool {
    pub fn new(alloc_unit: u32) -> Self {
        RegPool {
            free: 0,
            alloc_unit,
        }
    }

    /// Registers one warp holds at `per_thread` registers per thread.
    pub fn warp_alloc(&self, per_thread: u32) -> u32 {
        (per_thread * 32).div_ceil(self.alloc_unit) * self.alloc_unit
    }

    /// Whether [`RegPool::resize`] would succeed now.
    pub fn can_resize(&self, from: u32, to: u32) -> bool {
        let (old, new) = (self.warp_alloc(from), self.warp_alloc(to));
        new <= old || self.free >= new - old
    }

    /// Moves a warp from `from` to `to` registers per thread; false (and no change) when the pool
    /// cannot supply an increase yet.
    pub fn resize(&mut self, from: u32, to: u32) -> bool {
        if !self.can_resize(from, to) {
            return false;
        }
        let (old, new) = (self.warp_alloc(from), self.warp_alloc(to));
        self.free = self.free + old - new;
        true
    }

    pub fn free(&self) -> u32 {
        self.free
    }
}

impl Shard<'_> {
    /// `setmaxnreg.inc`: ready when the CTA's pool can supply the increase.
    pub(crate) fn setmaxnreg_inc_outcome(&mut self, w: u32, regs: u32) -> Outcome {
        let warp = &self.warps[w as usize];
        let cta = &mut self.ctas[warp.cta as usize];
        if cta.pool.can_resize(warp.regs, regs) {
            return Outcome::Ready;
        }
        if !cta.reg_waiters.contains(&w) {
            cta.reg_waiters.push(w);
        }
        Outcome::Blocked(State::Setmaxnreg)
    }

    pub(crate) fn issue_setmaxnreg(&mut self, w: u32, inc: bool, regs: u32) -> Result<(), Fault> {
        let warp = &self.warps[w as usize];
        let from = warp.regs;
        if inc && from > regs || !inc && from < regs {
            return Err(Fault::SetMaxNRegDirection {
                dir: if inc { "inc" } else { "dec" },
                regs,
                from,
            });
        }
        let cta = warp.cta as usize;
        if !self.ctas[cta].pool.resize(from, regs) {
            return Err(Fault::RegPool(regs));
        }
        self.warps[w as usize].regs = regs;
        if !inc {
            // Freed registers may satisfy warps blocked in setmaxnreg.inc.
            for waiter in std::mem::take(&mut self.ctas[cta].reg_waiters) {
                self.wake_at(waiter, self.now);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn producer_dec_funds_consumer_inc() {
        // PTX ISA setmaxnreg with CUTLASS's sm90 warp-specialized 40 / 232 split: 384 threads
        // launched at 168; producer 168 -> 40 frees 4 warps x 128 x 32 = 16,384; two consumer
        // warpgroups 168 -> 232 need exactly that.
        let mut pool = RegPool::new(256);
        assert!(!pool.resize(168, 232)); // nothing freed yet: blocks
        for _ in 0..4 {
            assert!(pool.resize(168, 40));
        }
        assert_eq!(pool.free(), 16384);
        for _ in 0..8 {
            assert!(pool.resize(168, 232));
        }
        assert_eq!(pool.free(), 0);
        assert!(!pool.resize(232, 240));
    }

    #[test]
    fn allocation_rounds_up_per_warp() {
        let pool = RegPool::new(256);
        assert_eq!(pool.warp_alloc(168), 5376);
        assert_eq!(pool.warp_alloc(1), 256);
    }
}
