//! Named barriers (PTX `bar.sync` / `bar.arrive`): 16 per CTA. Arrival is per warp (32 threads);
//! the barrier completes when the thread count given by the arrivals is reached, releases its
//! waiters and resets at once.
//!
//! `bar.sync` and `bar.arrive` are issued here: `bar.sync` holds its warp until the barrier
//! completes; every participant, the last arriver too, resumes `barriers.named_latency` +
//! `barriers.named_per_warp` × (participating warps) cycles after the completing arrival.

use crate::engine::error::Fault;
use crate::engine::event::Event;
use crate::engine::hooks::Hook;
use crate::engine::Shard;
use crate::observe::warp_state::State;
use isa::expr::Code;

#[derive(Clone, Debug, Default)]
pub struct NamedBarrier {
    /// Thread count of the instance being collected (0 when idle).
    expected: u32,
    arrived: u32,
    /// Warps blocked in `bar.sync` on this instance.
    waiters: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NamedBarrierError {
    #[error("a warp arrived with thread count {given} while the barrier is collecting {expected}")]
    CountMismatch { given: u32, expected: u32 },
}

impl NamedBarrier {
    /// One warp arrives for a barrier of `threads` threads; `waiter` is the warp when it waits
    /// (`bar.sync`). Returns the warps to release when this arrival completes the barrier.
    pub fn arrive(
        &mut self,
        threads: u32,
        waiter: Option<u32>,
    ) -> Result<Option<Vec<u32>>, NamedBarrierError> {
        if self.expected != 0 && self.expected != threads {
            return Err(NamedBarrierError::CountMismatch {
                given: threads,
                expected: self.expected,
            });
        }
        self.expected = threads;
        self.arrived += 32;
        if self.arrived >= self.expected {
            self.expected = 0;
            self.arrived = 0;
            return Ok(Some(std::mem::take(&mut self.waiters)));
        }
        if let Some(w) = waiter {
            self.waiters.push(w);
        }
        Ok(None)
    }

    pub fn arrived(&self) -> u32 {
        self.arrived
    }
    pub fn expected(&self) -> u32 {
        self.expected
    }
    pub fn waiters(&self) -> &[u32] {
        &self.waiters
    }
}

impl Shard<'_> {
    /// `bar.sync` (`wait`) or `bar.arrive` on the barrier whose id `id` evaluates to.
    pub(crate) fn issue_bar(
        &mut self,
        w: u32,
        id: &Code,
        threads: u32,
        wait: bool,
    ) -> Result<(), Fault> {
        let v = self.eval(w, id)?;
        let count = self.p.barriers.named;
        if v < 0 || v >= count as i64 {
            return Err(Fault::NamedBarrierId { id: v, count });
        }
        let id = v as usize;
        let cta = self.warps[w as usize].cta;
        self.record(Hook::NamedBarrierArrived {
            warp: w,
            id,
            sync: wait,
        });
        let released = self.ctas[cta as usize].named[id]
            .arrive(threads, wait.then_some(w))
            .map_err(|error| Fault::NamedBarrier { id, error })?;
        if wait {
            let warp = &mut self.warps[w as usize];
            warp.hold = Some(State::NamedBarrier);
            warp.hold_pc = warp.pc;
        }
        if let Some(mut waiters) = released {
            if wait {
                waiters.push(w);
            }
            let b = &self.p.barriers;
            let t = self.now + b.named_latency + b.named_per_warp * (threads / 32) as u64;
            self.record(Hook::NamedBarrierReleased { cta, id, threads });
            for waiter in waiters {
                self.q.push(t, Event::Release(waiter));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_at_the_thread_count_and_resets() {
        let mut b = NamedBarrier::default();
        // 256 threads = 8 warps: 4 sync (wait), 4 arrive.
        for w in 0..4 {
            assert_eq!(b.arrive(256, Some(w)), Ok(None));
        }
        for _ in 0..3 {
            assert_eq!(b.arrive(256, None), Ok(None));
        }
        assert_eq!(b.arrive(256, None), Ok(Some(vec![0, 1, 2, 3])));
        assert_eq!((b.arrived(), b.expected()), (0, 0));
        // The next instance starts clean.
        assert_eq!(b.arrive(64, Some(9)), Ok(None));
        assert_eq!(b.arrive(64, None), Ok(Some(vec![9])));
    }

    #[test]
    fn mismatched_thread_counts_are_an_error() {
        let mut b = NamedBarrier::default();
        b.arrive(256, Some(0)).unwrap();
        assert_eq!(
            b.arrive(128, None),
            Err(NamedBarrierError::CountMismatch {
                given: 128,
                expected: 256
            })
        );
    }
}
