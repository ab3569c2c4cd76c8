//! Thread-block clusters (PTX ISA, "Cluster of Cooperative Thread Arrays"): the CTAs of a
//! cluster run at once on one GPC (placement: `crate::gpu::cta_scheduler`) and reach each
//! other's shared memory through the SM-to-SM network.
//!
//! Issued here:
//! - `barrier.cluster.arrive` / `barrier.cluster.wait`: a phase completes when every warp of the
//!   cluster that has not exited has arrived (PTX: "all non-exited threads of the cluster");
//!   its waiters resume `cluster.barrier_latency` cycles after the last arrival, plus
//!   `cluster.barrier_per_warp` for each warp of a CTA (its SM counts them). A non-relaxed
//!   arrive is a release: it arrives once its warp's memory barrier (`crate::sm::lsu`) is done.
//! - An `mbarrier.arrive` through a cluster address (`Arrive(cta: ...)`, or `Arrive(ranks:
//!   ...)` on several ranks from one instruction): it holds its warp
//!   `cluster.remote_arrive_cycles` whichever rank it targets, and counts on another CTA's
//!   mbarrier `cluster.remote_arrive_latency` cycles after its issue, or after its memory
//!   barrier with `.release.cluster`.
//! - Distributed shared memory (`LdShared`/`StShared` with `cta`): the bytes leave through the
//!   issuing SM's DSMEM link (`cluster.dsmem_bytes_per_cycle`), take their wavefronts on the
//!   other SM's shared-memory port, and a load's result is back `cluster.dsmem_latency` cycles
//!   later; a warp has at most `cluster.dsmem_loads_per_warp` loads in flight. An access to the
//!   CTA's own rank is an ordinary shared-memory access.
//!
//! TMA multicast is in `crate::sm::tma`.

use crate::engine::error::Fault;
use crate::engine::event::Event;
use crate::engine::schedule::{Outcome, Pending};
use crate::engine::Shard;
use crate::observe::warp_state::State;
use isa::expr::Code;
use isa::program::{BarRef, SlotRef};

/// A cluster's barrier: arrivals in the open phase, phases completed, and the warps waiting.
#[derive(Clone, Debug, Default)]
pub struct ClusterBarrier {
    arrived: u32,
    /// When the open phase's arrivals have all taken effect (the last of their memory barriers).
    arrived_by: u64,
    completed: u32,
    /// When the last completed phase releases its warps.
    released_at: u64,
    waiters: Vec<u32>,
}

impl ClusterBarrier {
    /// Warps arrived in the open phase.
    pub fn arrived(&self) -> u32 {
        self.arrived
    }
    pub fn waiters(&self) -> &[u32] {
        &self.waiters
    }

    /// The open phase completes when its arrivals reach the cluster's live warps (`live`):
    /// returns the waiters to release, `latency` after `now` or after the arrivals' memory
    /// barriers, whichever is later, and that time.
    fn settle(&mut self, live: u32, now: u64, latency: u64) -> Option<(Vec<u32>, u64)> {
        if self.arrived == 0 || self.arrived < live {
            return None;
        }
        let at = self.arrived_by.max(now) + latency;
        self.arrived = 0;
        self.arrived_by = 0;
        self.completed += 1;
        self.released_at = at;
        Some((std::mem::take(&mut self.waiters), at))
    }
}

/// A remote mbarrier arrival on its way: the target CTA and mbarrier, the arrival count, and
/// the warp and instruction that sent it (for diagnostics).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RemoteArrival {
    cta: u32,
    bar: u32,
    count: u32,
    warp: u32,
    pc: u32,
}

impl Shard<'_> {
    /// The CTA of cluster rank `rank` (an expression) of warp `w`'s cluster, with the rank.
    pub(crate) fn cluster_cta(
        &self,
        w: u32,
        rank: &Code,
        what: &'static str,
    ) -> Result<u32, Fault> {
        let r = self.eval(w, rank)?;
        let own = &self.ctas[self.warps[w as usize].cta as usize];
        let c = &self.clusters[own.cluster as usize];
        if r < 0 || r >= c.size as i64 {
            return Err(Fault::ClusterRank {
                rank: r,
                size: c.size,
            });
        }
        let cta = c.first_cta + r as u32;
        if self.ctas.get(cta).is_none_or(|t| t.live_warps == 0) {
            return Err(Fault::RemoteExited {
                what,
                rank: r as u32,
            });
        }
        Ok(cta)
    }

    /// A mask of ranks of warp `w`'s cluster (a multicast's ctaMask, the ranks an arrive
    /// signals): not empty, each CTA still running. Returns the mask and the CTA of rank 0.
    pub(crate) fn cluster_mask(
        &self,
        w: u32,
        mask: &Code,
        kind: &'static str,
        what: &'static str,
    ) -> Result<(u16, u32), Fault> {
        let m = self.eval(w, mask)?;
        let c = &self.clusters[self.ctas[self.warps[w as usize].cta as usize].cluster as usize];
        if m <= 0 || m >= 1 << c.size {
            return Err(Fault::RankMask {
                what: kind,
                mask: m,
                size: c.size,
            });
        }
        for r in (0..c.size).filter(|r| m & (1 << r) != 0) {
            if self
                .ctas
                .get(c.first_cta + r)
                .is_none_or(|t| t.live_warps == 0)
            {
                return Err(Fault::RemoteExited { what, rank: r });
            }
        }
        Ok((m as u16, c.first_cta))
    }

    /// `barrier.cluster.arrive` by warp `w`, after its memory barrier unless relaxed.
    pub(crate) fn issue_cluster_arrive(&mut self, w: u32, membar: bool) {
        let effective = if membar { self.membar(w) } else { self.now };
        let warp = &mut self.warps[w as usize];
        warp.cluster_arrivals += 1;
        let cluster = self.ctas[warp.cta as usize].cluster;
        let b = &mut self.clusters[cluster as usize].barrier;
        b.arrived += 1;
        b.arrived_by = b.arrived_by.max(effective);
        self.settle_cluster_barrier(cluster);
    }

    /// A warp of `cluster` arrived or exited: the phase may be complete.
    pub(crate) fn settle_cluster_barrier(&mut self, cluster: u32) {
        let c = &mut self.clusters[cluster as usize];
        let per_cta = u64::from(c.live_warps / c.size.max(1));
        let latency = self.p.cluster.barrier_latency + self.p.cluster.barrier_per_warp * per_cta;
        let settled = c.barrier.settle(c.live_warps, self.now, latency);
        if let Some((waiters, at)) = settled {
            for w in waiters {
                self.q.push(at, Event::Release(w));
            }
        }
    }

    /// `barrier.cluster.wait` by warp `w`: passes once the phase of its last arrival has
    /// completed and released; otherwise the warp is held until then.
    pub(crate) fn issue_cluster_wait(&mut self, w: u32) -> Result<(), Fault> {
        let warp = &self.warps[w as usize];
        let need = warp.cluster_arrivals;
        if need == 0 {
            return Err(Fault::ClusterWaitWithoutArrive);
        }
        let cluster = self.ctas[warp.cta as usize].cluster;
        let b = &mut self.clusters[cluster as usize].barrier;
        let release = if b.completed >= need {
            (b.released_at > self.now).then_some(b.released_at)
        } else {
            b.waiters.push(w);
            None
        };
        let blocked = b.completed < need;
        if blocked || release.is_some() {
            let warp = &mut self.warps[w as usize];
            warp.hold = Some(State::NamedBarrier);
            warp.hold_pc = warp.pc;
        }
        if let Some(t) = release {
            self.q.push(t, Event::Release(w));
        }
        Ok(())
    }

    /// An `mbarrier.arrive` through a cluster address: on cluster rank `rank`'s `bar`, or with
    /// `ranks` on the `bar` of each rank of that mask (one lane a rank, one instruction), or
    /// the warp's own without either, after the warp's memory barrier with `membar`
    /// (`.release.cluster`). The arrive holds the warp `cluster.remote_arrive_cycles`, its own
    /// CTA's as much as another's; it counts on another CTA `cluster.remote_arrive_latency`
    /// cycles later, on its own once sent.
    pub(crate) fn issue_remote_arrive(
        &mut self,
        w: u32,
        bar: &BarRef,
        count: u32,
        rank: Option<&Code>,
        ranks: Option<&Code>,
        membar: bool,
    ) -> Result<(), Fault> {
        let own = self.warps[w as usize].cta;
        let targets: Vec<u32> = match (rank, ranks) {
            (_, Some(mask)) => {
                let (m, first) = self.cluster_mask(w, mask, "arrive rank", "mbarrier.arrive")?;
                (0..16u32)
                    .filter(|r| m & (1 << r) != 0)
                    .map(|r| first + r)
                    .collect()
            }
            (Some(rank), None) => vec![self.cluster_cta(w, rank, "mbarrier.arrive")?],
            (None, None) => vec![own],
        };
        let b = self.bar_index(w, bar)?;
        let sent = if membar {
            // The arrive's own cycles follow the barrier, in its state.
            let done = self.membar(w);
            let until = done + self.p.barriers.arrive_cycles;
            self.warps[w as usize].hold_until(until, State::Membar);
            done
        } else {
            let hold = (self.p.barriers.arrive_cycles).max(self.p.cluster.remote_arrive_cycles);
            self.hold_for(w, hold);
            self.now
        };
        self.warps[w as usize].after_tma_issue = false;
        let sender = self.warps[w as usize].cta;
        for cta in targets {
            // Both CTAs stay until it lands: the target's barrier, the sender's names for errors.
            self.ctas[cta as usize].remote_in_flight += 1;
            self.ctas[sender as usize].remote_in_flight += 1;
            let i = self.remote_arrivals.insert(RemoteArrival {
                cta,
                bar: b,
                count,
                warp: w,
                pc: self.warps[w as usize].pc,
            });
            let at = if cta == own {
                sent
            } else {
                sent + self.p.cluster.remote_arrive_latency
            };
            self.q.push(at, Event::RemoteArrive(i));
            self.book_horizon(at);
        }
        Ok(())
    }

    /// A remote arrival reaches its mbarrier; an error there is the sending warp's.
    pub(crate) fn on_remote_arrive(&mut self, i: u32) {
        let RemoteArrival {
            cta,
            bar,
            count,
            warp,
            pc,
        } = self.remote_arrivals.remove(i);
        let sender = self.warps[warp as usize].cta;
        self.ctas[cta as usize].remote_in_flight -= 1;
        self.ctas[sender as usize].remote_in_flight -= 1;
        self.last_progress = self.now;
        if let Err(fault) = self.arrive_on(warp, cta, bar, count) {
            let fault = match fault {
                // A finding names the target CTA itself (its SM and block), as does an
                // arrival on the warp's own CTA.
                f @ Fault::Hazard(_) => f,
                f if cta == sender => f,
                f => Fault::Remote {
                    rank: self.ctas[cta as usize].rank,
                    fault: Box::new(f),
                },
            };
            self.fail_at((warp, pc), cta, fault);
        }
        self.drop_cta(cta);
        self.drop_cta(sender);
    }

    /// A remote store waits for the registers it writes out, a remote load for one of the
    /// warp's loads in flight to return when it has `cluster.dsmem_loads_per_warp`, and any
    /// remote access for room in the DSMEM link's queue (`smem.queue_cycles` of backlog, as the
    /// port's); an access to the CTA's own rank is a local one. A rank that cannot be
    /// evaluated faults at issue.
    pub(crate) fn dsmem_outcome(&self, w: u32, store: bool, rank: &Code, at: Pending) -> Outcome {
        let warp = &self.warps[w as usize];
        let cta = &self.ctas[warp.cta as usize];
        if self.eval(w, rank).is_ok_and(|r| r == i64::from(cta.rank)) {
            return self.shared_outcome(w, store, at);
        }
        let cap = self.p.cluster.dsmem_loads_per_warp as usize;
        if !store && cap > 0 {
            let (pending, first) = warp
                .dsmem_loads
                .iter()
                .filter(|&&t| t > self.now)
                .fold((0, u64::MAX), |(n, first), &t| (n + 1, first.min(t)));
            if pending >= cap {
                return Outcome::StallUntil(State::MioThrottle, first);
            }
        }
        self.queued_outcome(store, at, self.sms[warp.sm as usize].dsmem.next_free())
    }

    /// ld/st.shared on cluster rank `rank`'s shared memory: through this SM's DSMEM link to the
    /// other SM's port. Returns `false` when the rank is the warp's own CTA (a local access).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn issue_dsmem(
        &mut self,
        w: u32,
        store: bool,
        s: &SlotRef,
        addr: &Code,
        width: u32,
        sb: Option<u8>,
        rank: &Code,
    ) -> Result<bool, Fault> {
        let what = if store {
            "st.shared::cluster"
        } else {
            "ld.shared::cluster"
        };
        let cta = self.cluster_cta(w, rank, what)?;
        if cta == self.warps[w as usize].cta {
            return Ok(false);
        }
        let base = self.slot_base(w, s)?;
        let limit = self.k.buffers[s.buf as usize].slot_bytes;
        let addrs = self.lane_addrs(w, addr, base, limit, width, "the slot")?;
        let bytes = u64::from(addrs.mask.count_ones()) * u64::from(width);
        let wf = super::smem::wavefronts(&addrs, width, self.p.smem.banks, self.p.smem.bank_bytes);
        let (src, dst) = (
            self.warps[w as usize].sm as usize,
            self.ctas[cta as usize].sm as usize,
        );
        let sent = self.sms[src].dsmem.book(self.now, bytes);
        let (_, served) = self.sms[dst].port.book(sent, u64::from(wf));
        let done = served + self.p.cluster.dsmem_latency;
        self.book_horizon(done);
        if !store {
            let warp = &mut self.warps[w as usize];
            let now = self.now;
            warp.dsmem_loads.retain(|&t| t > now);
            warp.dsmem_loads.push(done);
            warp.load_result(sb, done, State::LongScoreboard);
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_completes_when_every_live_warp_has_arrived() {
        let mut b = ClusterBarrier {
            arrived: 3,
            ..Default::default()
        };
        assert_eq!(b.settle(4, 10, 5), None);
        b.waiters = vec![7, 8, 9];
        b.arrived = 4;
        assert_eq!(b.settle(4, 10, 5), Some((vec![7, 8, 9], 15)));
        assert_eq!((b.arrived, b.completed, b.released_at), (0, 1, 15));
        // A warp that exits lowers the count: the three that arrived complete the phase.
        b.arrived = 3;
        assert_eq!(b.settle(3, 20, 5), Some((vec![], 25)));
        // No arrival, no phase: exits alone complete nothing.
        assert_eq!(b.settle(0, 30, 5), None);
        assert_eq!(b.completed, 2);
        // An arrival whose memory barrier ends after the last arrival holds the phase.
        b.arrived = 2;
        b.arrived_by = 700;
        assert_eq!(b.settle(2, 40, 5), Some((vec![], 705)));
        assert_eq!(b.arrived_by, 0);
    }
}
