//! The sanitizer: an observer of the engine's events ([`Hook`]) that finds the hazards a real
//! kernel would turn into wrong answers, without touching timing.
//!
//! It checks the order the program guarantees, not the order the simulation produced: each
//! warp carries a clock of what it is known to follow, per CTA of its cluster (its own CTA
//! alone without clusters) the mbarrier phases completed and the HGMMAs each warp completed. An
//! arrival adds the warp's clock to its barrier, a remote arrival (release at cluster scope) to
//! the other CTA's; a completed phase publishes the join of its arrivals' clocks (and of the
//! phases before it); a wait that passes joins the clock of the *earliest* phase its parity
//! can have seen into the waiter's; `bar.sync` joins the clocks of all its arrivals; a passed
//! `wgmma.wait_group` adds the warp's own HGMMAs it covers. From those it reports:
//! - a wgmma reading a slot before waiting for the phase its last TMA load completes, or a TMA
//!   load into a slot that a wgmma read before any load into it (read before arrival);
//! - a TMA load into a slot while a wgmma read of its previous fill is not known complete
//!   (write after read), also a multicast into another CTA of the cluster, whose readers the
//!   issuer knows of through their remote arrivals;
//! - a compute instruction reading accumulators before a wait covers the wgmma writing them;
//! - an mbarrier with all its arrivals in and more transaction bytes than it expected (its
//!   phase can never complete), or a tx-count outside ±(2^20-1);
//! - a wgmma or TMA store reading a slot (through the async proxy) that a warp wrote with
//!   ordinary stores and has not yet fenced with `fence.proxy.async`: the reader may see the
//!   data from before those stores (CUTLASS's `tma_store_fence`, FA3's fence before its
//!   SS P V).
//!
//! The engine reports each event before it applies the instruction's effects, so a finding
//! stops the instruction where it stands.

use crate::engine::hooks::Hook;
use crate::engine::names::Names;
use crate::sm::tensor_core::NO_SLOT;
use isa::program::WARPS_PER_WARPGROUP;
use std::collections::VecDeque;

/// The mbarrier tx-count range (PTX ISA, "mbarrier": the tx-count is in -(2^20-1)..=2^20-1).
pub const TX_COUNT_MAX: i64 = (1 << 20) - 1;

/// Completed phases whose clocks a barrier keeps: a wait needs the earliest phase of its
/// parity at or after what it knows, which the barrier passed by at most two phases unless the
/// program lets it run ahead of the waiter.
const PHASES_KEPT: u64 = 4;

/// Committed groups a warp keeps that no wait has covered yet; one with more outstanding has
/// its oldest dropped (a wait can then cover them only by a later group).
const GROUPS_KEPT: usize = 1 << 12;

/// A hazard, in the words the run reports.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Finding {
    /// `culprit`: the reading warp and its wgmma's pc, when the finding comes at a later load.
    #[error("wgmma reads {slot} before waiting for the phase of {mbarrier} that its TMA load completes (read before the data arrived: the wait on its full barrier passed for another phase?)")]
    ReadBeforeArrival {
        slot: String,
        mbarrier: String,
        culprit: Option<(u32, u32)>,
    },
    #[error("TMA load overwrites {slot} while the wgmma reads of it by {warp} are not known to be complete (write-after-read: the slot was released before the wgmma.wait_group that covers its readers)")]
    WriteAfterRead { slot: String, warp: String },
    #[error("{pipe} reads accumulators `{acc}` before the wgmma writing them has completed ({pending} wgmma instruction(s) of the warp pending; no wgmma.wait_group covers them)")]
    AccumulatorsInFlight {
        pipe: &'static str,
        acc: String,
        pending: u64,
    },
    #[error("mbarrier {mbarrier} received {bytes} transaction bytes beyond its expect-tx count (its phase can never complete)")]
    ExcessTx { mbarrier: String, bytes: i64 },
    #[error("mbarrier {mbarrier} tx-count {count} is outside the range ±(2^20-1) (expect-tx or complete-tx beyond what one phase can count)")]
    TxCountRange { mbarrier: String, count: i64 },
    #[error("{reader} reads {slot} through the async proxy while {warp}'s st.shared to it is not fenced (no fence.proxy.async between the stores and this read: it may see the data from before them)")]
    UnfencedSharedStore {
        reader: &'static str,
        slot: String,
        warp: String,
    },
}

impl Finding {
    /// The (warp, pc) at fault when it is not the instruction that reported the event.
    pub fn culprit(&self) -> Option<(u32, u32)> {
        match *self {
            Finding::ReadBeforeArrival { culprit, .. } => culprit,
            _ => None,
        }
    }
}

/// A clock: per CTA of a cluster (by rank), per flat mbarrier the phases completed, then per
/// warp the HGMMAs completed, that something is known to follow.
type Clock = Vec<u64>;

fn join(into: &mut [u64], from: &[u64]) {
    for (a, &b) in into.iter_mut().zip(from) {
        *a = (*a).max(b);
    }
}

/// [`join`] of two clocks of one CTA's [`CtaState::clocks`], `width` entries from `from` into
/// those from `into`.
fn join_within(clocks: &mut [u64], into: usize, from: usize, width: usize) {
    for i in 0..width {
        clocks[into + i] = clocks[into + i].max(clocks[from + i]);
    }
}

#[derive(Clone, Debug)]
struct WarpState {
    hgmmas: u64,
    /// Per accumulator label, the HGMMA count that closes the last wgmma writing it.
    acc_last: Vec<u64>,
    /// The HGMMA counts closing the warp's committed groups that no wait has covered yet.
    groups: VecDeque<u64>,
    /// Slots the warp stored to since its last `fence.proxy.async`.
    unfenced: Vec<u32>,
}

/// The last TMA load into a slot: its barrier, and the phase its complete-tx went to once it
/// landed.
#[derive(Clone, Copy, Debug)]
struct Fill {
    bar: u32,
    phase: Option<u64>,
}

/// A warp's last wgmma read of a slot since its last fill: the HGMMA count and the pc.
#[derive(Clone, Copy, Debug, Default)]
struct Read {
    hgmma: u64,
    pc: u32,
}

#[derive(Clone, Debug, Default)]
struct SlotState {
    fill: Option<Fill>,
    /// TMA loads into the slot in flight.
    loading: u32,
    /// Per warp of the CTA (grown as they read).
    readers: Vec<Read>,
}

#[derive(Clone, Debug, Default)]
struct Named {
    /// The join of the clocks of this round's arrivals, and the warps waiting for its release.
    clock: Clock,
    syncing: Vec<u32>,
}

#[derive(Clone, Debug)]
struct CtaState {
    warps: Vec<WarpState>,
    /// Per mbarrier, its phases completed.
    completed: Vec<u64>,
    /// The CTA's clocks side by side, in one allocation (a check reads one entry of a warp's
    /// clock: a vector per clock was a host cache miss more per event): each warp's (see
    /// [`Sanitizer::warp_clock`]), then per mbarrier the join of its arrivals' clocks so far
    /// ([`Sanitizer::open`]), then its last `PHASES_KEPT` phases' as each completed
    /// ([`Sanitizer::done`]).
    clocks: Vec<u64>,
    slots: Vec<SlotState>,
    named: Vec<Named>,
}

/// The sanitizer's state over a whole run: per resident CTA, created at its first event and
/// dropped when it retires.
#[derive(Clone, Debug)]
pub struct Sanitizer {
    names: Names,
    /// Flat mbarriers, warps and slots per CTA.
    nb: u32,
    nw: u32,
    ns: u32,
    /// CTAs per cluster: a clock has `nb + nw` entries for each.
    cluster: u32,
    ctas: Vec<Option<CtaState>>,
    /// A warp's clock (or its HGMMA entries) copied out, to be read against another CTA's
    /// state, or its own.
    scratch: Clock,
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
            nb: names.mbarriers_per_cta(),
            nw: names.warps_per_cta(),
            ns: names.slots_per_cta(),
            cluster: names.cluster_size(),
            names,
            ctas: Vec::new(),
            scratch: Vec::new(),
        }
    }

    fn cta(&mut self, cta: u32) -> &mut CtaState {
        // Nearly every event is of a CTA seen before: its state, without sizing a new one.
        if matches!(self.ctas.get(cta as usize), Some(Some(_))) {
            return self.ctas[cta as usize].as_mut().expect("matched");
        }
        let (nb, nw, ns) = (self.nb as usize, self.nw as usize, self.ns as usize);
        let clocks = (nw + nb * (1 + PHASES_KEPT as usize)) * self.width();
        grown(&mut self.ctas, cta).get_or_insert_with(|| CtaState {
            warps: vec![
                WarpState {
                    hgmmas: 0,
                    acc_last: Vec::new(),
                    groups: VecDeque::new(),
                    unfenced: Vec::new(),
                };
                nw
            ],
            completed: vec![0; nb],
            clocks: vec![0; clocks],
            slots: vec![SlotState::default(); ns],
            named: Vec::new(),
        })
    }

    /// The entries of a clock.
    fn width(&self) -> usize {
        (self.cluster * (self.nb + self.nw)) as usize
    }

    /// Where warp `wl`'s clock starts in its CTA's clocks.
    fn warp_clock(&self, wl: u32) -> usize {
        wl as usize * self.width()
    }

    /// Where the join of mbarrier `bar`'s arrivals so far starts in its CTA's clocks.
    fn open(&self, bar: u32) -> usize {
        (self.nw + bar) as usize * self.width()
    }

    /// Where mbarrier `bar`'s clock as phase count `phase` completed starts (kept for the last
    /// `PHASES_KEPT`, at `phase % PHASES_KEPT`).
    fn done(&self, bar: u32, phase: u64) -> usize {
        let kept = bar as usize * PHASES_KEPT as usize + (phase % PHASES_KEPT) as usize;
        (self.nw as usize + self.nb as usize + kept) * self.width()
    }

    /// A warp's CTA and its index within it.
    fn warp(&self, warp: u32) -> (u32, u32) {
        (warp / self.nw, warp % self.nw)
    }

    /// Where CTA `cta`'s entries start in a clock: at its cluster rank's.
    fn at(&self, cta: u32) -> usize {
        ((cta % self.cluster) * (self.nb + self.nw)) as usize
    }

    /// Observes one engine event; a hazard is returned before the event's state is recorded.
    /// An async-proxy read of `slot` by CTA `ci`: no warp of the CTA (`only`: that warp, whose
    /// part of the slot it is) may have stored to it since its last `fence.proxy.async`.
    fn fenced(
        &mut self,
        ci: u32,
        only: Option<u32>,
        reader: &'static str,
        slot: u32,
    ) -> Result<(), Finding> {
        let s = slot % self.ns;
        let writer = self
            .cta(ci)
            .warps
            .iter()
            .enumerate()
            .position(|(wl, w)| only.is_none_or(|o| o == wl as u32) && w.unfenced.contains(&s));
        match writer {
            Some(wl) => Err(Finding::UnfencedSharedStore {
                reader,
                slot: self.names.slot_name(slot),
                warp: self.names.warp(wl as u32).to_string(),
            }),
            None => Ok(()),
        }
    }

    pub fn observe(&mut self, hook: &Hook) -> Result<(), Finding> {
        let nb = self.nb as usize;
        match *hook {
            Hook::SharedStored { warp, slot } => {
                let (ci, wl) = self.warp(warp);
                let slot = slot % self.ns;
                let w = &mut self.cta(ci).warps[wl as usize];
                if !w.unfenced.contains(&slot) {
                    w.unfenced.push(slot);
                }
            }
            Hook::ProxyFenced { warp } => {
                let (ci, wl) = self.warp(warp);
                self.cta(ci).warps[wl as usize].unfenced.clear();
            }
            Hook::TmaStoreIssued { warp, slot } => {
                let (ci, _) = self.warp(warp);
                self.fenced(ci, None, "TMA store", slot)?;
            }
            Hook::WgmmaIssued {
                warp,
                pc,
                reads,
                acc,
            } => {
                let (ci, wl) = self.warp(warp);
                // A warp's HGMMA reads its own 16 rows of A, all of B.
                if reads[0] != NO_SLOT {
                    self.fenced(ci, Some(wl), "wgmma", reads[0])?;
                }
                self.fenced(ci, None, "wgmma", reads[1])?;
                let (ns, at) = (self.ns, self.at(ci));
                let known = self.warp_clock(wl) + at;
                let c = self.cta(ci);
                for s in reads.into_iter().filter(|&s| s != NO_SLOT) {
                    if let Some(f) = c.slots[(s % ns) as usize].fill {
                        if f.phase
                            .is_none_or(|p| c.clocks[known + f.bar as usize] <= p)
                        {
                            return Err(Finding::ReadBeforeArrival {
                                slot: self.names.slot_name(s),
                                mbarrier: self.names.mbarrier(f.bar),
                                culprit: None,
                            });
                        }
                    }
                }
                let w = &mut c.warps[wl as usize];
                w.hgmmas += 1;
                let hgmma = w.hgmmas;
                *grown(&mut w.acc_last, acc as u32) = hgmma;
                for s in reads.into_iter().filter(|&s| s != NO_SLOT) {
                    let slot = &mut c.slots[(s % ns) as usize];
                    *grown(&mut slot.readers, wl) = Read { hgmma, pc };
                }
            }
            Hook::AccumulatorsRead {
                warp, acc, pipe, ..
            } => {
                let (ci, wl) = self.warp(warp);
                let own = self.warp_clock(wl) + self.at(ci) + nb + wl as usize;
                let c = self.cta(ci);
                let (w, done) = (&mut c.warps[wl as usize], c.clocks[own]);
                // No wgmma of the warp pending (the last one closes the latest `acc_last`): no
                // accumulators to look up.
                if w.hgmmas > done && *grown(&mut w.acc_last, acc as u32) > done {
                    let pending = w.hgmmas - done;
                    return Err(Finding::AccumulatorsInFlight {
                        pipe: pipe.name(),
                        acc: self.names.acc(acc).to_string(),
                        pending,
                    });
                }
            }
            Hook::TmaLoadIssued {
                warp,
                cta,
                slot,
                bar,
            } => {
                // `cta` is another CTA of the cluster's when the load multicasts: its readers
                // are ordered by what the issuer learned of them through remote arrivals.
                let (ci, wl) = self.warp(warp);
                let (nw, ns) = (self.nw, self.ns);
                let known = self.warp_clock(wl) + self.at(cta) + nb;
                // The issuer's HGMMA entries are copied out: `cta` may be another CTA.
                let mut done = std::mem::take(&mut self.scratch);
                done.clear();
                done.extend_from_slice(&self.cta(ci).clocks[known..known + nw as usize]);
                let s = &self.cta(cta).slots[(slot % ns) as usize];
                let fill = s.fill;
                let unordered = s
                    .readers
                    .iter()
                    .zip(&done)
                    .enumerate()
                    .find(|(_, (read, &done))| read.hgmma > done)
                    .map(|(r, (&read, _))| (r, read));
                self.scratch = done;
                if let Some((r, read)) = unordered {
                    let mut reader = self.names.warp(r as u32).to_string();
                    if cta != ci {
                        reader += &format!(" (cluster rank {})", cta % self.cluster);
                    }
                    return Err(match fill {
                        Some(_) => Finding::WriteAfterRead {
                            slot: self.names.slot_name(slot),
                            warp: reader,
                        },
                        // A read before the slot's first load reads what this load brings.
                        None => Finding::ReadBeforeArrival {
                            slot: self.names.slot_name(slot),
                            mbarrier: self.names.mbarrier(bar),
                            culprit: Some((cta * nw + r as u32, read.pc)),
                        },
                    });
                }
                let s = &mut self.cta(cta).slots[(slot % ns) as usize];
                s.fill = Some(Fill { bar, phase: None });
                s.loading += 1;
                s.readers.clear();
            }
            Hook::TmaLoadLanded { cta, slot, .. } => {
                let ns = self.ns;
                let c = self.cta(cta);
                let s = &mut c.slots[(slot % ns) as usize];
                s.loading -= 1;
                // With two loads in flight the fill's phase is the later landing's, which no
                // earlier wait can have seen.
                if let (Some(f), 0) = (&mut s.fill, s.loading) {
                    f.phase = Some(c.completed[f.bar as usize]);
                }
            }
            Hook::MbarrierArrived { warp, cta, bar } => {
                // `cta` is another CTA of the cluster's for a remote arrival: it releases what
                // the sender knows at cluster scope.
                let (ci, wl) = self.warp(warp);
                let (known, open, width) = (self.warp_clock(wl), self.open(bar), self.width());
                // The sender's clock is copied out: `cta` may be another CTA.
                let mut sent = std::mem::take(&mut self.scratch);
                sent.clear();
                sent.extend_from_slice(&self.cta(ci).clocks[known..known + width]);
                join(&mut self.cta(cta).clocks[open..open + width], &sent);
                self.scratch = sent;
            }
            Hook::MbarrierUpdated {
                bar,
                pending_arrivals,
                pending_tx,
                ..
            } => {
                if pending_tx.abs() > TX_COUNT_MAX {
                    return Err(Finding::TxCountRange {
                        mbarrier: self.names.mbarrier(bar),
                        count: pending_tx,
                    });
                }
                if pending_arrivals == 0 && pending_tx < 0 {
                    return Err(Finding::ExcessTx {
                        mbarrier: self.names.mbarrier(bar),
                        bytes: -pending_tx,
                    });
                }
            }
            Hook::PhaseCompleted { cta, bar } => {
                let (at, open, width) = (self.at(cta), self.open(bar), self.width());
                let c = self.cta(cta);
                let completed = &mut c.completed[bar as usize];
                *completed += 1;
                let completed = *completed;
                c.clocks[open + at + bar as usize] = completed;
                let done = self.done(bar, completed);
                let c = self.cta(cta);
                c.clocks.copy_within(open..open + width, done);
            }
            Hook::MbarrierWaitPassed { warp, bar, parity } => {
                let (ci, wl) = self.warp(warp);
                let (clock, width) = (self.warp_clock(wl), self.width());
                let at = self.at(ci);
                let c = self.cta(ci);
                let known = c.clocks[clock + at + bar as usize];
                // The earliest phase count at or after what the warp knows whose parity lets
                // the wait pass (a count whose last completed phase has parity `parity`).
                let seen = known + u64::from(known % 2 == u64::from(parity & 1));
                if seen > known {
                    // Older than the kept phases: the oldest kept, which knows more than the
                    // wait guarantees.
                    let completed = c.completed[bar as usize];
                    let seen = seen.max((completed + 1).saturating_sub(PHASES_KEPT));
                    let done = self.done(bar, seen);
                    join_within(&mut self.cta(ci).clocks, clock, done, width);
                }
            }
            Hook::WgmmaCommitted { warp, group, .. } => {
                let (ci, wl) = self.warp(warp);
                let groups = &mut self.cta(ci).warps[wl as usize].groups;
                if groups.len() == GROUPS_KEPT {
                    groups.pop_front();
                }
                groups.push_back(group);
            }
            Hook::WgmmaWaitPassed { warp, n } => {
                let (ci, wl) = self.warp(warp);
                let (nw, clock) = (self.nw as usize, self.warp_clock(wl) + self.at(ci));
                let c = self.cta(ci);
                let w = &mut c.warps[wl as usize];
                // All but the `n` latest committed groups are complete. A wgmma is one operation
                // of its warpgroup, whose warps issue the same HGMMAs: complete for this warp, it
                // is for the other three (CUTLASS and FA3 release a stage from one warp of it).
                let covered = (w.groups.len() as u64).saturating_sub(n) as usize;
                if let Some(end) = w.groups.drain(..covered).next_back() {
                    let first =
                        wl as usize / WARPS_PER_WARPGROUP as usize * WARPS_PER_WARPGROUP as usize;
                    let last = (first + WARPS_PER_WARPGROUP as usize).min(nw);
                    for done in &mut c.clocks[clock + nb + first..clock + nb + last] {
                        *done = (*done).max(end);
                    }
                }
            }
            Hook::NamedBarrierArrived { warp, id, sync } => {
                let (ci, wl) = self.warp(warp);
                let (clock, width) = (self.warp_clock(wl), self.width());
                let c = self.cta(ci);
                let named = grown(&mut c.named, id as u32);
                named.clock.resize(width, 0);
                join(&mut named.clock, &c.clocks[clock..clock + width]);
                if sync {
                    named.syncing.push(wl);
                }
            }
            Hook::NamedBarrierReleased { cta, id, .. } => {
                let width = self.width();
                let c = self.cta(cta);
                let named = grown(&mut c.named, id as u32);
                for &w in &named.syncing {
                    let clock = w as usize * width;
                    join(&mut c.clocks[clock..clock + width], &named.clock);
                }
                named.syncing.clear();
                named.clock.iter_mut().for_each(|t| *t = 0);
            }
            Hook::CtaRetired { cta } => {
                if let Some(c) = self.ctas.get_mut(cta as usize) {
                    *c = None;
                }
            }
            Hook::HgmmaCompleted { .. }
            | Hook::MbarrierWaiterReleased { .. }
            | Hook::WgmmaWaitReleased { .. } => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use isa::program::Pipe;

    /// Per CTA: sA[0..2], sB[0..2]; full[0..2], empty[0..2]; producer0.w0..w3 (warps 0..4),
    /// consumer0.w0..w3 (warps 4..8).
    fn sanitizer() -> Sanitizer {
        Sanitizer::new(Names::from_parts(
            &[("sA", 2), ("sB", 2)],
            &[("full", 2), ("empty", 2)],
            &[("producer", 1), ("consumer", 1)],
            &["acc", "o"],
        ))
    }

    fn run(s: &mut Sanitizer, hooks: &[Hook]) -> Result<(), Finding> {
        hooks.iter().try_for_each(|h| s.observe(h))
    }

    const A0: u32 = 0;
    const B0: u32 = 2;
    const FULL0: u32 = 0;
    const EMPTY0: u32 = 2;
    const PRODUCER: u32 = 0;
    const CONSUMER: u32 = 4;

    fn load(slot: u32) -> [Hook; 3] {
        [
            Hook::MbarrierArrived {
                warp: PRODUCER,
                cta: 0,
                bar: FULL0,
            },
            Hook::TmaLoadIssued {
                warp: PRODUCER,
                cta: 0,
                slot,
                bar: FULL0,
            },
            Hook::TmaLoadLanded {
                cta: 0,
                slot,
                bar: FULL0,
                bytes: 4096,
            },
        ]
    }

    fn phase(bar: u32) -> Hook {
        Hook::PhaseCompleted { cta: 0, bar }
    }

    fn wait(warp: u32, bar: u32, parity: u32) -> Hook {
        Hook::MbarrierWaitPassed { warp, bar, parity }
    }

    fn wgmma(warp: u32, reads: [u32; 2]) -> Hook {
        Hook::WgmmaIssued {
            warp,
            pc: 7,
            reads,
            acc: 0,
        }
    }

    #[test]
    fn async_proxy_reads_need_the_writers_proxy_fence() {
        let store = |warp| Hook::SharedStored { warp, slot: A0 };
        let fence = |warp| Hook::ProxyFenced { warp };
        let tma_store = Hook::TmaStoreIssued {
            warp: CONSUMER,
            slot: A0,
        };
        let unfenced = |reader| {
            Err(Finding::UnfencedSharedStore {
                reader,
                slot: "sA[0]".into(),
                warp: "consumer0.w1".into(),
            })
        };
        // Another warp's unfenced stores are blamed on it, at a wgmma reading the slot as B
        // and at the TMA store; as A, a warp's HGMMA reads only its own rows, so only its own
        // stores count.
        let mut s = sanitizer();
        assert_eq!(
            run(&mut s, &[store(CONSUMER + 1), wgmma(CONSUMER, [B0, A0])]),
            unfenced("wgmma")
        );
        let mut s = sanitizer();
        assert_eq!(
            run(&mut s, &[store(CONSUMER + 1), wgmma(CONSUMER, [A0, B0])]),
            Ok(())
        );
        assert_eq!(
            run(&mut s, &[wgmma(CONSUMER + 1, [A0, B0])]),
            unfenced("wgmma")
        );
        let mut s = sanitizer();
        assert_eq!(
            run(&mut s, &[store(CONSUMER + 1), tma_store]),
            unfenced("TMA store")
        );
        // The writer's fence covers all its stores so far; one after it needs another.
        let mut s = sanitizer();
        let fenced = [
            store(CONSUMER + 1),
            store(CONSUMER),
            fence(CONSUMER + 1),
            fence(CONSUMER),
        ];
        assert_eq!(run(&mut s, &fenced), Ok(()));
        assert_eq!(run(&mut s, &[tma_store, wgmma(CONSUMER, [A0, B0])]), Ok(()));
        assert_eq!(
            run(&mut s, &[store(CONSUMER + 1), tma_store]),
            unfenced("TMA store")
        );
        // A store to another slot does not matter to this one's readers.
        let mut s = sanitizer();
        let other = Hook::SharedStored {
            warp: CONSUMER + 1,
            slot: B0 + 1,
        };
        assert_eq!(run(&mut s, &[other, tma_store]), Ok(()));
    }

    #[test]
    fn a_read_needs_a_wait_on_the_phase_its_load_completes_landed_or_not() {
        let mut s = sanitizer();
        let raw = Err(Finding::ReadBeforeArrival {
            slot: "sB[0]".into(),
            mbarrier: "full[0]".into(),
            culprit: None,
        });
        // In flight, and landed with its phase complete but not waited for: the same finding.
        assert_eq!(run(&mut s, &load(B0)[..2]), Ok(()));
        assert_eq!(s.observe(&wgmma(CONSUMER, [NO_SLOT, B0])), raw);
        assert_eq!(run(&mut s, &[load(B0)[2], phase(FULL0)]), Ok(()));
        assert_eq!(s.observe(&wgmma(CONSUMER, [NO_SLOT, B0])), raw);
        // A fresh barrier passes parity 1 at once and orders nothing; parity 0 sees the fill.
        assert_eq!(s.observe(&wait(CONSUMER, FULL0, 1)), Ok(()));
        assert_eq!(s.observe(&wgmma(CONSUMER, [NO_SLOT, B0])), raw);
        let read = [wait(CONSUMER, FULL0, 0), wgmma(CONSUMER, [NO_SLOT, B0])];
        assert_eq!(run(&mut s, &read), Ok(()));
    }

    #[test]
    fn a_multicast_fill_orders_the_other_ctas_readers_through_their_remote_arrivals() {
        let mut s = Sanitizer::new(sanitizer().names.with_cluster(2));
        // CTA 0's producer multicasts into CTA 1's sB[0] (slot 4 + B0), which CTA 1's consumer
        // reads after its own wait and has not released: multicasting again overwrites it.
        let mcast = Hook::TmaLoadIssued {
            warp: PRODUCER,
            cta: 1,
            slot: 4 + B0,
            bar: FULL0,
        };
        let first = [
            mcast,
            Hook::TmaLoadLanded {
                cta: 1,
                slot: 4 + B0,
                bar: FULL0,
                bytes: 4096,
            },
            Hook::PhaseCompleted { cta: 1, bar: FULL0 },
            wait(CONSUMER + 8, FULL0, 0),
            wgmma(CONSUMER + 8, [NO_SLOT, 4 + B0]),
        ];
        assert_eq!(run(&mut s, &first), Ok(()));
        let war = Err(Finding::WriteAfterRead {
            slot: "sB[0]".into(),
            warp: "consumer0.w0 (cluster rank 1)".into(),
        });
        assert_eq!(s.observe(&mcast), war);
        // Its release without a wait_group covering the read, on CTA 0's empty[0], passes
        // nothing the producer can rely on.
        let arrive = Hook::MbarrierArrived {
            warp: CONSUMER + 8,
            cta: 0,
            bar: EMPTY0,
        };
        let handoff = [arrive, phase(EMPTY0), wait(PRODUCER, EMPTY0, 0)];
        assert_eq!(run(&mut s, &handoff), Ok(()));
        assert_eq!(s.observe(&mcast), war);
        // With the wait_group before the remote arrive, the next phase orders the read.
        let covered = [
            Hook::WgmmaCommitted {
                warp: CONSUMER + 8,
                warpgroup: 0,
                group: 1,
            },
            Hook::WgmmaWaitPassed {
                warp: CONSUMER + 8,
                n: 0,
            },
            arrive,
            phase(EMPTY0),
            wait(PRODUCER, EMPTY0, 1),
        ];
        assert_eq!(run(&mut s, &covered), Ok(()));
        assert_eq!(s.observe(&mcast), Ok(()));
        // The fill is recorded in CTA 1: reading it before CTA 1's own wait is a read before
        // arrival.
        assert_eq!(
            s.observe(&wgmma(CONSUMER + 8, [NO_SLOT, 4 + B0])),
            Err(Finding::ReadBeforeArrival {
                slot: "sB[0]".into(),
                mbarrier: "full[0]".into(),
                culprit: None,
            })
        );
    }

    #[test]
    fn a_read_before_the_first_load_is_blamed_on_the_reader() {
        let mut s = sanitizer();
        assert_eq!(s.observe(&wgmma(CONSUMER + 8, [4 + A0, NO_SLOT])), Ok(()));
        let err = s.observe(&Hook::TmaLoadIssued {
            warp: PRODUCER + 8,
            cta: 1,
            slot: 4 + A0,
            bar: FULL0,
        });
        assert_eq!(
            err,
            Err(Finding::ReadBeforeArrival {
                slot: "sA[0]".into(),
                mbarrier: "full[0]".into(),
                culprit: Some((CONSUMER + 8, 7)),
            })
        );
        assert_eq!(err.unwrap_err().culprit(), Some((12, 7)));
    }

    /// The consumer reads sA[0]'s first fill, releases it on empty[0] (after `covered`), the
    /// producer waits for that phase and refills it.
    fn refill(covered: &[Hook]) -> Result<(), Finding> {
        let mut s = sanitizer();
        let mut hooks = load(A0).to_vec();
        hooks.extend([
            phase(FULL0),
            wait(CONSUMER, FULL0, 0),
            wgmma(CONSUMER, [A0, B0]),
        ]);
        hooks.extend_from_slice(covered);
        hooks.extend([
            Hook::MbarrierArrived {
                warp: CONSUMER,
                cta: 0,
                bar: EMPTY0,
            },
            phase(EMPTY0),
            wait(PRODUCER, EMPTY0, 0),
            Hook::TmaLoadIssued {
                warp: PRODUCER,
                cta: 0,
                slot: A0,
                bar: FULL0,
            },
        ]);
        run(&mut s, &hooks)
    }

    #[test]
    fn a_refill_needs_the_readers_wait_group_before_their_release() {
        let commit = Hook::WgmmaCommitted {
            warp: CONSUMER,
            warpgroup: 1,
            group: 1,
        };
        let waited = |n| Hook::WgmmaWaitPassed { warp: CONSUMER, n };
        let war = Err(Finding::WriteAfterRead {
            slot: "sA[0]".into(),
            warp: "consumer0.w0".into(),
        });
        assert_eq!(refill(&[]), war);
        // wait_group(1) leaves the one group pending; wait_group(0) covers it.
        assert_eq!(refill(&[commit, waited(1)]), war);
        assert_eq!(refill(&[commit, waited(0)]), Ok(()));
    }

    #[test]
    fn accumulators_need_a_wait_group_covering_the_wgmma_writing_them() {
        let mut s = sanitizer();
        let issue = |acc| Hook::WgmmaIssued {
            warp: 3,
            pc: 0,
            reads: [NO_SLOT, NO_SLOT],
            acc,
        };
        let commit = |group| Hook::WgmmaCommitted {
            warp: 3,
            warpgroup: 0,
            group,
        };
        let read = |acc| Hook::AccumulatorsRead {
            warp: 3,
            warpgroup: 0,
            acc,
            pipe: Pipe::Fma,
        };
        let waited = |n| Hook::WgmmaWaitPassed { warp: 3, n };
        // Two HGMMAs into `acc` (group 1), one into `o` (group 2); wait_group(1) covers group 1.
        let hooks = [
            issue(0),
            issue(0),
            commit(2),
            issue(1),
            commit(3),
            waited(1),
        ];
        assert_eq!(run(&mut s, &hooks), Ok(()));
        assert_eq!(s.observe(&read(0)), Ok(()));
        assert_eq!(
            s.observe(&read(1)),
            Err(Finding::AccumulatorsInFlight {
                pipe: "fma",
                acc: "o".into(),
                pending: 1
            })
        );
        assert_eq!(run(&mut s, &[waited(0), read(1)]), Ok(()));
    }

    #[test]
    fn bar_sync_passes_what_one_warp_waited_for_to_the_others() {
        let mut s = sanitizer();
        let arrive = |warp| Hook::NamedBarrierArrived {
            warp,
            id: 1,
            sync: true,
        };
        let released = Hook::NamedBarrierReleased {
            cta: 0,
            id: 1,
            threads: 64,
        };
        let mut hooks = load(A0).to_vec();
        hooks.extend([phase(FULL0), wait(CONSUMER, FULL0, 0)]);
        hooks.extend([arrive(CONSUMER), arrive(CONSUMER + 1), released]);
        hooks.push(wgmma(CONSUMER + 1, [A0, NO_SLOT]));
        assert_eq!(run(&mut s, &hooks), Ok(()));
        // The next round starts empty: what the barrier carried is not carried again.
        let again = [arrive(CONSUMER + 2), arrive(CONSUMER + 3), released];
        assert_eq!(run(&mut s, &again), Ok(()));
        assert!(s.observe(&wgmma(CONSUMER + 2, [A0, NO_SLOT])).is_err());
    }

    #[test]
    fn excess_bytes_and_tx_counts_out_of_range() {
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
        assert_eq!(s.observe(&update(1, TX_COUNT_MAX)), Ok(()));
        for count in [TX_COUNT_MAX + 1, -TX_COUNT_MAX - 1] {
            assert_eq!(
                s.observe(&update(1, count)),
                Err(Finding::TxCountRange {
                    mbarrier: "empty[1]".into(),
                    count
                })
            );
        }
        assert_eq!(
            s.observe(&update(1, 1 << 20)).unwrap_err().to_string(),
            "mbarrier empty[1] tx-count 1048576 is outside the range ±(2^20-1) (expect-tx or complete-tx beyond what one phase can count)"
        );
    }

    #[test]
    fn a_retired_cta_is_forgotten() {
        let mut s = sanitizer();
        assert_eq!(run(&mut s, &load(A0)[..2]), Ok(()));
        assert!(s.ctas[0].is_some());
        assert_eq!(s.observe(&Hook::CtaRetired { cta: 0 }), Ok(()));
        assert!(s.ctas[0].is_none());
    }
}
