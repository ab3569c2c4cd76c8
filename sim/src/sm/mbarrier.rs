//! The mbarrier object (PTX ISA, "mbarrier"): a phase number, an expected arrival count, a
//! pending arrival count and a transaction (tx) byte count. The current phase completes when
//! pending arrivals AND pending tx bytes are both zero, in either order; completion advances
//! the phase and reloads the pending count. `wait(parity)` passes once the phase with that
//! parity has completed, i.e. when the current phase's parity differs from `parity`.

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
