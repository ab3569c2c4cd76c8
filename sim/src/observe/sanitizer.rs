//! The sanitizer: an observer of the engine's events ([`Hook`]) that finds the hazards a real
//! kernel would turn into wrong answers, without touching timing.
//!
//! It keeps, per shared-memory slot, the TMA loads into it still in flight and the submitted
//! HGMMAs still reading it; per warp and accumulator label, the HGMMA count of the warp's last
//! wgmma writing it; per warpgroup, the HGMMAs completed. From those alone it reports:
//! - a wgmma reading a slot whose TMA load has not landed (read before arrival);
//! - a TMA load into a slot that submitted HGMMAs still read (write after read);
//! - a compute instruction reading accumulators before the wgmma writing them has completed;
//! - an mbarrier with all its arrivals in and more transaction bytes than it expected (its
//!   phase can never complete).
//!
//! The engine reports each event before it applies the instruction's effects, so a finding
//! stops the instruction where it stands.

use crate::engine::hooks::Hook;
use crate::engine::names::Names;
use crate::sm::tensor_core::NO_SLOT;

/// A hazard, in the words the run reports.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Finding {
    #[error("wgmma reads {slot} while a TMA load into it is still in flight (read before the data arrived: the wait on its full barrier passed for another phase?)")]
    ReadBeforeArrival { slot: String },
    #[error("TMA load overwrites {slot} while {readers} wgmma instruction(s) still read it (write-after-read: the slot was released before the wgmma.wait_group that covers its readers)")]
    WriteAfterRead { slot: String, readers: u32 },
    #[error("{pipe} reads accumulators `{acc}` before the wgmma writing them has completed ({pending} wgmma instruction(s) of the warpgroup pending; no wgmma.wait_group covers them)")]
    AccumulatorsInFlight {
        pipe: &'static str,
        acc: String,
        pending: u64,
    },
    #[error("mbarrier {mbarrier} received {bytes} transaction bytes beyond its expect-tx count (its phase can never complete)")]
    ExcessTx { mbarrier: String, bytes: i64 },
}

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// TMA loads into the slot not yet complete.
    loads: u32,
    /// Submitted HGMMAs reading the slot not yet complete.
    readers: u32,
}

#[derive(Clone, Debug, Default)]
struct Warp {
    hgmmas: u64,
    /// Per accumulator label, the HGMMA count that closes the last wgmma writing it.
    acc_last: Vec<u64>,
}

/// The sanitizer's state over a whole run; it grows as CTAs and warps appear in the events.
#[derive(Clone, Debug)]
pub struct Sanitizer {
    names: Names,
    slots: Vec<Slot>,
    warps: Vec<Warp>,
    /// Completed HGMMAs per warpgroup.
    completed: Vec<u64>,
}

fn grown<T: Default + Clone>(v: &mut Vec<T>, i: u32) -> &mut T {
    if v.len() <= i as usize {
        v.resize(i as usize + 1, T::default());
    }
    &mut v[i as usize]
}

impl Sanitizer {
    pub fn new(names: Names) -> Self {
        Sanitizer {
            names,
            slots: Vec::new(),
            warps: Vec::new(),
            completed: Vec::new(),
        }
    }

    /// Observes one engine event; a hazard is returned before the event's state is recorded.
    pub fn observe(&mut self, hook: &Hook) -> Result<(), Finding> {
        match *hook {
            Hook::WgmmaIssued { warp, reads, acc } => {
                for s in reads.into_iter().filter(|&s| s != NO_SLOT) {
                    if grown(&mut self.slots, s).loads > 0 {
                        return Err(Finding::ReadBeforeArrival {
                            slot: self.names.slot_name(s),
                        });
                    }
                }
                let w = grown(&mut self.warps, warp);
                w.hgmmas += 1;
                *grown(&mut w.acc_last, acc as u32) = w.hgmmas;
            }
            Hook::HgmmaSubmitted { reads } => {
                for s in reads.into_iter().filter(|&s| s != NO_SLOT) {
                    grown(&mut self.slots, s).readers += 1;
                }
            }
            Hook::HgmmaCompleted { warpgroup, reads } => {
                for s in reads.into_iter().filter(|&s| s != NO_SLOT) {
                    grown(&mut self.slots, s).readers -= 1;
                }
                *grown(&mut self.completed, warpgroup) += 1;
            }
            Hook::AccumulatorsRead {
                warp,
                warpgroup,
                acc,
                pipe,
            } => {
                let done = *grown(&mut self.completed, warpgroup);
                let w = grown(&mut self.warps, warp);
                if *grown(&mut w.acc_last, acc as u32) > done {
                    return Err(Finding::AccumulatorsInFlight {
                        pipe: pipe.name(),
                        acc: self.names.acc(acc).to_string(),
                        pending: w.hgmmas - done,
                    });
                }
            }
            Hook::TmaLoadIssued { slot, .. } => {
                let s = grown(&mut self.slots, slot);
                if s.readers > 0 {
                    return Err(Finding::WriteAfterRead {
                        slot: self.names.slot_name(slot),
                        readers: s.readers,
                    });
                }
                s.loads += 1;
            }
            Hook::TmaLoadLanded { slot, .. } => grown(&mut self.slots, slot).loads -= 1,
            Hook::MbarrierUpdated {
                bar,
                pending_arrivals,
                pending_tx,
                ..
            } => {
                if pending_arrivals == 0 && pending_tx < 0 {
                    return Err(Finding::ExcessTx {
                        mbarrier: self.names.mbarrier(bar),
                        bytes: -pending_tx,
                    });
                }
            }
            Hook::PhaseCompleted { .. }
            | Hook::MbarrierWaiterReleased { .. }
            | Hook::NamedBarrierReleased { .. }
            | Hook::WgmmaCommitted { .. }
            | Hook::WgmmaWaitReleased { .. } => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use isa::program::Pipe;

    fn sanitizer() -> Sanitizer {
        // Two CTAs' worth of slots: sA[0..2], sB[0..2] per CTA.
        Sanitizer::new(Names::from_parts(
            &[("sA", 2), ("sB", 2)],
            &[("full", 2), ("empty", 2)],
            &["acc", "o"],
        ))
    }

    fn run(s: &mut Sanitizer, hooks: &[Hook]) -> Result<(), Finding> {
        hooks.iter().try_for_each(|h| s.observe(h))
    }

    const A0: u32 = 0;
    const B0: u32 = 2;

    #[test]
    fn a_wgmma_on_a_slot_still_loading_is_read_before_arrival() {
        let mut s = sanitizer();
        let err = run(
            &mut s,
            &[
                Hook::TmaLoadIssued { warp: 0, slot: B0 },
                Hook::WgmmaIssued {
                    warp: 0,
                    reads: [NO_SLOT, B0],
                    acc: 0,
                },
            ],
        );
        assert_eq!(
            err,
            Err(Finding::ReadBeforeArrival {
                slot: "sB[0]".into()
            })
        );
    }

    #[test]
    fn the_load_landing_first_makes_the_read_clean() {
        let mut s = sanitizer();
        let hooks = [
            Hook::TmaLoadIssued { warp: 0, slot: B0 },
            Hook::TmaLoadLanded {
                cta: 0,
                slot: B0,
                bar: 0,
                bytes: 4096,
            },
            Hook::WgmmaIssued {
                warp: 0,
                reads: [A0, B0],
                acc: 0,
            },
        ];
        assert_eq!(run(&mut s, &hooks), Ok(()));
    }

    #[test]
    fn refilling_a_slot_before_its_readers_complete_is_write_after_read() {
        let mut s = sanitizer();
        let reads = [A0, B0];
        let mut hooks = vec![
            Hook::HgmmaSubmitted { reads },
            Hook::HgmmaSubmitted { reads },
        ];
        assert_eq!(run(&mut s, &hooks), Ok(()));
        assert_eq!(
            s.observe(&Hook::TmaLoadIssued { warp: 0, slot: A0 }),
            Err(Finding::WriteAfterRead {
                slot: "sA[0]".into(),
                readers: 2
            })
        );
        // Once both HGMMAs complete, the same load is clean; a slot of the second CTA is
        // named within its own CTA.
        hooks = vec![
            Hook::HgmmaCompleted {
                warpgroup: 0,
                reads,
            },
            Hook::HgmmaCompleted {
                warpgroup: 0,
                reads,
            },
            Hook::TmaLoadIssued { warp: 0, slot: A0 },
            Hook::HgmmaSubmitted {
                reads: [NO_SLOT, 7],
            },
        ];
        assert_eq!(run(&mut s, &hooks), Ok(()));
        assert_eq!(
            s.observe(&Hook::TmaLoadIssued { warp: 0, slot: 7 }),
            Err(Finding::WriteAfterRead {
                slot: "sB[1]".into(),
                readers: 1
            })
        );
    }

    #[test]
    fn accumulators_are_in_flight_until_their_warpgroup_completes_the_wgmma() {
        let mut s = sanitizer();
        let issue = |acc| Hook::WgmmaIssued {
            warp: 3,
            reads: [NO_SLOT, NO_SLOT],
            acc,
        };
        let read = |acc| Hook::AccumulatorsRead {
            warp: 3,
            warpgroup: 1,
            acc,
            pipe: Pipe::Fma,
        };
        let done = Hook::HgmmaCompleted {
            warpgroup: 1,
            reads: [NO_SLOT, NO_SLOT],
        };
        // Two HGMMAs into `acc`, then one into `o`. After one completion the second HGMMA
        // still writes `acc`: 2 of the warpgroup's 3 are pending.
        assert_eq!(run(&mut s, &[issue(0), issue(0), issue(1), done]), Ok(()));
        assert_eq!(
            s.observe(&read(0)),
            Err(Finding::AccumulatorsInFlight {
                pipe: "fma",
                acc: "acc".into(),
                pending: 2
            })
        );
        assert_eq!(run(&mut s, &[done]), Ok(()));
        assert_eq!(s.observe(&read(0)), Ok(()));
        assert!(s.observe(&read(1)).is_err());
        assert_eq!(run(&mut s, &[done, read(1)]), Ok(()));
        // Another warp's accumulators are its own.
        let other = Hook::AccumulatorsRead {
            warp: 4,
            warpgroup: 1,
            acc: 0,
            pipe: Pipe::Mufu,
        };
        assert_eq!(s.observe(&other), Ok(()));
    }

    #[test]
    fn bytes_beyond_expect_tx_with_every_arrival_in_are_excess() {
        let mut s = sanitizer();
        let update = |pending_arrivals, pending_tx| Hook::MbarrierUpdated {
            cta: 0,
            bar: 3,
            pending_arrivals,
            pending_tx,
        };
        // Bytes landing before the expect-tx, or arrivals still missing: not yet a hazard.
        assert_eq!(run(&mut s, &[update(1, -4096), update(0, 2048)]), Ok(()));
        assert_eq!(
            s.observe(&update(0, -128)),
            Err(Finding::ExcessTx {
                mbarrier: "empty[1]".into(),
                bytes: 128
            })
        );
        assert_eq!(
            Finding::ExcessTx {
                mbarrier: "empty[1]".into(),
                bytes: 128
            }
            .to_string(),
            "mbarrier empty[1] received 128 transaction bytes beyond its expect-tx count (its phase can never complete)"
        );
    }
}
