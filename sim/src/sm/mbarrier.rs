//! The mbarrier object (PTX ISA, "mbarrier"): a phase number, an expected arrival count, a
//! pending arrival count and a transaction (tx) byte count. The current phase completes when
//! pending arrivals AND pending tx bytes are both zero, in either order; completion advances
//! the phase and reloads the pending count. `wait(parity)` passes once the phase with that
//! parity has completed, i.e. when the current phase's parity differs from `parity`.
//!
//! The mbarrier instructions (`arrive`, `arrive.expect_tx`, `expect_tx`, `try_wait.parity`) are
//! issued here: a wait that does not pass registers the warp as a waiter, and a phase completion
//! wakes every waiter whose parity now passes `barriers.mbarrier_latency` cycles later. A
//! `test_wait.parity` loop (`Wait(poll: Test)`) takes an issue slot every
//! `barriers.test_wait_interval` cycles while it polls, and sees a completed phase half an
//! interval after a `try_wait` loop would wake: the mean wait for its next poll.

use crate::engine::error::Fault;
use crate::engine::event::Event;
use crate::engine::hooks::Hook;
use crate::engine::schedule::Outcome;
use crate::engine::Shard;
use crate::observe::sanitizer::Finding;
use crate::observe::warp_state::State;
use isa::expr::Code;
use isa::program::BarRef;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MBarrier {
    expected: u32,
    pending: u32,
    /// Bytes still expected; may go negative when complete-tx lands before expect-tx.
    tx: i64,
    phase: u32,
}

/// Misuse of an mbarrier.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MBarrierError {
    #[error("over-arrival: {count} arrivals on a phase with only {pending} pending (of {expected} expected)")]
    OverArrival {
        count: u32,
        pending: u32,
        expected: u32,
    },
}

impl MBarrier {
    /// `mbarrier.init(count)`.
    pub fn new(expected: u32) -> Self {
        MBarrier {
            expected,
            pending: expected,
            tx: 0,
            phase: 0,
        }
    }

    pub fn phase(&self) -> u32 {
        self.phase
    }
    pub fn pending_arrivals(&self) -> u32 {
        self.pending
    }
    pub fn pending_tx(&self) -> i64 {
        self.tx
    }

    /// arrive-on with `count` arrivals; returns whether the phase completed.
    pub fn arrive(&mut self, count: u32) -> Result<bool, MBarrierError> {
        if count > self.pending {
            return Err(MBarrierError::OverArrival {
                count,
                pending: self.pending,
                expected: self.expected,
            });
        }
        self.pending -= count;
        Ok(self.try_complete())
    }

    /// expect-tx: more bytes must land before the phase can complete. Returns whether the
    /// phase completed (bytes that landed early can be exactly balanced by it).
    pub fn expect_tx(&mut self, bytes: u64) -> bool {
        self.tx += bytes as i64;
        bytes > 0 && self.try_complete()
    }

    /// complete-tx (done by the TMA unit as bytes land); returns whether the phase completed.
    pub fn complete_tx(&mut self, bytes: u64) -> bool {
        self.tx -= bytes as i64;
        self.try_complete()
    }

    /// `try_wait.parity(parity)` succeeds.
    pub fn passes(&self, parity: u32) -> bool {
        (self.phase & 1) != (parity & 1)
    }

    fn try_complete(&mut self) -> bool {
        if self.pending == 0 && self.tx == 0 {
            self.phase += 1;
            self.pending = self.expected;
            true
        } else {
            false
        }
    }
}

/// A warp's `test_wait` loop in progress: when its next poll is due, and, once the phase it
/// waits for has completed, the cycle its polls first see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Polling {
    pub next: u64,
    pub sees_at: Option<u64>,
}

/// What a `test_wait` loop does at a cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollStep {
    /// The poll sees the completed phase: the loop ends.
    Passes,
    /// A poll that fails is due: it takes the issue slot.
    Polls,
    /// Between polls.
    Waits,
}

/// The loop's step at `now`, with the phase it waits for `complete` or not. A loop that has
/// not polled yet sees a phase completed before it at its first poll.
pub fn poll_step(polling: Option<Polling>, complete: bool, now: u64) -> PollStep {
    let seen = polling.and_then(|p| p.sees_at).is_none_or(|t| t <= now);
    if complete && seen {
        PollStep::Passes
    } else if polling.is_none_or(|p| p.next <= now) {
        PollStep::Polls
    } else {
        PollStep::Waits
    }
}

/// When a polling warp sees a phase completed at `completed`: a `try_wait` loop's wake,
/// `latency` later, plus the mean wait for its next poll.
pub fn poll_sees_at(completed: u64, latency: u64, interval: u64) -> u64 {
    completed + latency + interval / 2
}

impl Shard<'_> {
    /// `mbarrier.try_wait.parity`: ready when the phase of that parity has completed; otherwise
    /// the warp waits on the barrier.
    pub(crate) fn mbarrier_wait_outcome(
        &mut self,
        w: u32,
        bar: &BarRef,
        parity: &Code,
    ) -> Result<Outcome, Fault> {
        let b = self.bar_index(w, bar)?;
        let parity = self.eval(w, parity)? as u32;
        let cta = &mut self.ctas[self.warps[w as usize].cta as usize];
        if cta.mbars[b as usize].passes(parity) {
            return Ok(Outcome::Ready);
        }
        let list = &mut cta.mbar_waiters[b as usize];
        if !list.contains(&(w, parity)) {
            list.push((w, parity));
        }
        let warp = &mut self.warps[w as usize];
        warp.waiting_on = bar.array;
        warp.wait_blocked = true;
        Ok(Outcome::Blocked(State::MbarrierWait))
    }

    /// A `try_wait` loop issues with its phase complete: one that found it complete at once
    /// still takes `barriers.wait_pass_cycles` to return, `tma.wait_after_issue_cycles` more
    /// right after the warp issued a TMA load; one that was woken has paid its wake.
    pub(crate) fn pass_wait(&mut self, w: u32, bar: &BarRef, parity: &Code) -> Result<(), Fault> {
        self.waited(w, bar, parity)?;
        let warp = &mut self.warps[w as usize];
        let after_tma = std::mem::take(&mut warp.after_tma_issue);
        if !std::mem::take(&mut warp.wait_blocked) {
            let extra = if after_tma {
                self.p.tma.wait_after_issue_cycles
            } else {
                0
            };
            self.hold_for(w, self.p.barriers.wait_pass_cycles + extra);
        }
        Ok(())
    }

    /// A wait passed: the observers learn the barrier and the parity it waited for.
    fn waited(&mut self, w: u32, bar: &BarRef, parity: &Code) -> Result<(), Fault> {
        let b = self.bar_index(w, bar)?;
        let parity = self.eval(w, parity)? as u32;
        self.record(Hook::MbarrierWaitPassed {
            warp: w,
            bar: b,
            parity,
        });
        Ok(())
    }

    /// The warp's next instruction waits `cycles` in its mbarrier wait.
    pub(crate) fn hold_for(&mut self, w: u32, cycles: u64) {
        if cycles > 0 {
            self.warps[w as usize].hold_until(self.now + cycles, State::MbarrierWait);
        }
    }

    /// A `test_wait.parity` loop: ready to issue when its poll sees the phase or when a poll
    /// is due (a failing poll takes the issue slot too); between polls the warp waits.
    pub(crate) fn mbarrier_poll_outcome(
        &mut self,
        w: u32,
        bar: &BarRef,
        parity: &Code,
    ) -> Result<Outcome, Fault> {
        Ok(match self.poll(w, bar, parity)? {
            PollStep::Passes | PollStep::Polls => Outcome::Ready,
            PollStep::Waits => Outcome::Blocked(State::MbarrierWait),
        })
    }

    /// Issues one poll of a `test_wait` loop; returns whether it passed (the loop is over).
    pub(crate) fn issue_poll(
        &mut self,
        w: u32,
        bar: &BarRef,
        parity: &Code,
    ) -> Result<bool, Fault> {
        if self.poll(w, bar, parity)? == PollStep::Passes {
            self.waited(w, bar, parity)?;
            let warp = &mut self.warps[w as usize];
            warp.after_tma_issue = false;
            // The loop's first poll passed: the poll's own round trip (a later pass has paid
            // its polls).
            if warp.polling.take().is_none() {
                self.hold_for(w, self.p.barriers.test_pass_cycles);
            }
            return Ok(true);
        }
        let next = self.now + self.p.barriers.test_wait_interval;
        if let Some(p) = &mut self.warps[w as usize].polling {
            p.next = next;
        }
        self.polls_pending += 1;
        self.q.push(next, Event::Poll(w));
        Ok(false)
    }

    /// The loop's step now. A loop whose phase has not completed (re)joins the barrier's
    /// waiters, so that the completion tells it when its polls see the phase.
    fn poll(&mut self, w: u32, bar: &BarRef, parity: &Code) -> Result<PollStep, Fault> {
        let b = self.bar_index(w, bar)?;
        let parity = self.eval(w, parity)? as u32;
        let warp = &mut self.warps[w as usize];
        let cta = &mut self.ctas[warp.cta as usize];
        let complete = cta.mbars[b as usize].passes(parity);
        let step = poll_step(warp.polling, complete, self.now);
        if step == PollStep::Passes {
            return Ok(step);
        }
        let polling = warp.polling.get_or_insert(Polling {
            next: self.now,
            sees_at: None,
        });
        if !complete {
            // A phase seen to complete may have completed again since (its parity is back).
            polling.sees_at = None;
            let list = &mut cta.mbar_waiters[b as usize];
            if !list.contains(&(w, parity)) {
                list.push((w, parity));
            }
        }
        warp.waiting_on = bar.array;
        Ok(step)
    }

    pub(crate) fn issue_arrive(&mut self, w: u32, bar: &BarRef, count: u32) -> Result<(), Fault> {
        let b = self.bar_index(w, bar)?;
        self.hold_for(w, self.p.barriers.arrive_cycles);
        self.arrive(w, b, count)
    }

    /// `mbarrier.arrive.expect_tx`: the expect-tx first, then one arrival.
    pub(crate) fn issue_arrive_expect_tx(
        &mut self,
        w: u32,
        bar: &BarRef,
        bytes: &Code,
    ) -> Result<(), Fault> {
        let b = self.bar_index(w, bar)?;
        self.hold_for(w, self.p.barriers.arrive_expect_cycles);
        self.expect_tx(w, b, bytes)?;
        self.arrive(w, b, 1)
    }

    pub(crate) fn issue_expect_tx(
        &mut self,
        w: u32,
        bar: &BarRef,
        bytes: &Code,
    ) -> Result<(), Fault> {
        let b = self.bar_index(w, bar)?;
        self.expect_tx(w, b, bytes)
    }

    fn expect_tx(&mut self, w: u32, bar: u32, bytes: &Code) -> Result<(), Fault> {
        let bytes = self.tx_bytes(w, bytes)?;
        let cta = self.warps[w as usize].cta;
        let completed = self.ctas[cta as usize].mbars[bar as usize].expect_tx(bytes);
        Ok(self.settle(cta, bar, completed)?)
    }

    fn arrive(&mut self, w: u32, bar: u32, count: u32) -> Result<(), Fault> {
        let warp = &mut self.warps[w as usize];
        warp.after_tma_issue = false;
        let cta = warp.cta;
        self.arrive_on(w, cta, bar, count)
    }

    /// `count` arrivals of warp `w` on mbarrier `bar` of CTA `cta` (its own, or another of its
    /// cluster's).
    pub(crate) fn arrive_on(
        &mut self,
        w: u32,
        cta: u32,
        bar: u32,
        count: u32,
    ) -> Result<(), Fault> {
        self.record(Hook::MbarrierArrived { warp: w, cta, bar });
        let m = &mut self.ctas[cta as usize].mbars[bar as usize];
        let completed = m.arrive(count).map_err(|error| Fault::MBarrier {
            name: self.names.mbarrier(bar),
            error,
        })?;
        Ok(self.settle(cta, bar, completed)?)
    }

    /// Complete-tx of `bytes` landed by a TMA load; a finding is the load's.
    pub(crate) fn complete_tx(&mut self, cta: u32, bar: u32, bytes: u64) -> Result<(), Finding> {
        let completed = self.ctas[cta as usize].mbars[bar as usize].complete_tx(bytes);
        self.settle(cta, bar, completed)
    }

    /// After an arrival, an expect-tx or a complete-tx: the phase completed, or the observers
    /// see the barrier still open.
    fn settle(&mut self, cta: u32, bar: u32, completed: bool) -> Result<(), Finding> {
        if completed {
            self.phase_completed(cta, bar);
            return Ok(());
        }
        let m = &self.ctas[cta as usize].mbars[bar as usize];
        self.emit(Hook::MbarrierUpdated {
            cta,
            bar,
            pending_arrivals: m.pending_arrivals(),
            pending_tx: m.pending_tx(),
        })
    }

    /// The barrier's phase completed: wake every waiter whose parity now passes, a polling one
    /// when its polls see the phase.
    fn phase_completed(&mut self, cta: u32, bar: u32) {
        self.record(Hook::PhaseCompleted { cta, bar });
        let b = &self.p.barriers;
        let t = self.now + b.mbarrier_latency;
        let seen = poll_sees_at(self.now, b.mbarrier_latency, b.test_wait_interval);
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
            let at = match &mut self.warps[w as usize].polling {
                Some(p) => {
                    p.sees_at = Some(seen);
                    seen
                }
                None => t,
            };
            self.record(Hook::MbarrierWaiterReleased { warp: w, cta, at });
            self.wake_at(w, at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_when_arrivals_then_bytes_reach_zero() {
        let mut b = MBarrier::new(1);
        b.expect_tx(100);
        assert_eq!(b.arrive(1), Ok(false)); // bytes still pending
        assert!(!b.passes(0));
        assert!(!b.complete_tx(60));
        assert!(b.complete_tx(40));
        assert_eq!(b.phase(), 1);
        assert!(b.passes(0));
        assert_eq!(b.pending_arrivals(), 1); // reloaded
    }

    #[test]
    fn completes_when_bytes_then_arrivals_reach_zero() {
        let mut b = MBarrier::new(2);
        // complete-tx before expect-tx: tx goes negative, then back to zero.
        assert!(!b.complete_tx(64));
        assert_eq!(b.pending_tx(), -64);
        assert!(!b.expect_tx(64));
        assert_eq!(b.arrive(1), Ok(false));
        assert_eq!(b.arrive(1), Ok(true));
        assert_eq!(b.phase(), 1);
    }

    #[test]
    fn early_bytes_balanced_by_expect_tx_complete_the_phase() {
        let mut b = MBarrier::new(1);
        b.arrive(1).unwrap_or_default(); // completes phase 0 (no bytes expected)
        assert_eq!(b.phase(), 1);
        // Phase 1: the arrival comes first, the bytes land, then expect-tx balances them.
        b.expect_tx(0);
        assert!(!b.complete_tx(32));
        assert_eq!(b.arrive(1), Ok(false));
        assert!(b.expect_tx(32));
        assert_eq!(b.phase(), 2);
    }

    #[test]
    fn wait_on_completed_phase_returns_at_once_and_blocks_while_pending() {
        let mut b = MBarrier::new(1);
        // A fresh barrier: phase 0 pending; parity 1 (the "preceding" phase) passes at once,
        // which is how producers start on empty barriers.
        assert!(!b.passes(0));
        assert!(b.passes(1));
        b.arrive(1).unwrap();
        assert!(b.passes(0)); // phase 0 done
        assert!(!b.passes(1)); // phase 1 pending
        b.arrive(1).unwrap();
        assert!(b.passes(1));
        assert!(!b.passes(0)); // phase 2 has parity 0 and is pending
    }

    #[test]
    fn a_polling_loop_passes_at_its_first_poll_or_when_its_polls_see_the_phase() {
        // A phase completed before the loop: its first poll passes.
        assert_eq!(poll_step(None, true, 5), PollStep::Passes);
        // Not complete: the first poll fails, the next is due at `next`.
        assert_eq!(poll_step(None, false, 5), PollStep::Polls);
        let waiting = Polling {
            next: 89,
            sees_at: None,
        };
        assert_eq!(poll_step(Some(waiting), false, 50), PollStep::Waits);
        assert_eq!(poll_step(Some(waiting), false, 89), PollStep::Polls);
        // h200-sxm: completed at 1000, a try_wait loop wakes at 1103, a poll sees it at 1145.
        let seen = poll_sees_at(1000, 103, 84);
        assert_eq!(seen, 1145);
        let told = Polling {
            next: 1173,
            sees_at: Some(seen),
        };
        assert_eq!(poll_step(Some(told), true, 1144), PollStep::Waits);
        assert_eq!(poll_step(Some(told), true, 1145), PollStep::Passes);
    }

    #[test]
    fn over_arrival_is_an_error() {
        let mut b = MBarrier::new(2);
        b.arrive(1).unwrap();
        assert_eq!(
            b.arrive(32),
            Err(MBarrierError::OverArrival {
                count: 32,
                pending: 1,
                expected: 2
            })
        );
        assert_eq!(
            b.arrive(32).unwrap_err().to_string(),
            "over-arrival: 32 arrivals on a phase with only 1 pending (of 2 expected)"
        );
    }
}
