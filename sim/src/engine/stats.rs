//! What a run hands back: cycles, per-unit busy time, per-warp state cycles, traffic.

use super::state::Warp;
use super::{Engine, Shard};
use crate::gpu::cta_scheduler::Occupancy;
use crate::memory::system::{MemStats, MemSys};
use crate::observe::warp_state::State;
use crate::sm::local::LocalTraffic;
use isa::program::WARP_SIZE;

/// Per-unit busy cycles of the SM.
#[derive(Clone, Debug, Default)]
pub struct UnitBusy {
    pub tensor: u64,
    pub smem: u64,
    /// Summed over partitions (capacity = partitions × cycles).
    pub fma: u64,
    pub alu: u64,
    pub mufu: u64,
    pub shfl: u64,
    /// Partition tensor cores running mma.sync, summed over partitions.
    pub mma: u64,
    /// Cycles with at least one TMA load in flight.
    pub tma: u64,
    /// Cycles the SMs' TMA fill paths were moving data into shared memory.
    pub tma_fill: u64,
    /// Cycles the SMs' TMA store paths were moving store data towards L2.
    pub tma_store: u64,
    /// Cycles the SMs' L1 tag stages were taken by warp accesses (`sm::lsu`).
    pub l1: u64,
    /// Cycles the SMs' ports to L2 were transferring.
    pub l2_port: u64,
    /// Issue slots used, summed over partitions.
    pub issue: u64,
}

/// Per-warp results, in launch order.
#[derive(Clone, Debug)]
pub struct WarpResult {
    pub cta: u32,
    pub sm: u32,
    /// `mbarrier_wait` cycles by mbarrier array, in declaration order.
    pub mbarrier_waits: Vec<u64>,
    /// `wgmma_wait` cycles at a `Wgmma`'s issue (the issue gap, or HGMMAs in flight at the limit).
    pub wgmma_issue_waits: u64,
    pub role: String,
    /// `consumer1.w2`: role, warpgroup index in the role, warp index in the warpgroup.
    pub name: String,
    pub cycles: [u64; State::COUNT],
    pub lifetime: u64,
    pub issued: u64,
    /// Active lanes summed over the issued warp-instructions (32 each unless it diverged).
    pub lanes: u64,
    /// Local loads and stores of spilled registers.
    pub local: LocalTraffic,
}

impl WarpResult {
    /// `wgmma_wait` cycles by where they were spent: at a `Wgmma`'s issue (`issue`: the issue
    /// gap, or its warpgroup's HGMMAs in flight at the limit) and in `wgmma.wait_group`
    /// (`wait_group`).
    pub fn wgmma_waits(&self) -> [(&'static str, u64); 2] {
        let total = self.cycles[State::WgmmaWait as usize];
        [
            ("issue", self.wgmma_issue_waits),
            // See `RoleTotals::wgmma_waits`: a stopped run's shards end at their windows.
            ("wait_group", total.saturating_sub(self.wgmma_issue_waits)),
        ]
    }
}

/// Warps whose own results a run keeps (the first by launch order); every warp counts in its
/// role's [`RoleTotals`]. Per-warp results of a huge grid would take memory in proportion to
/// the grid, not to the CTAs resident at once.
pub const MAX_WARP_RESULTS: usize = 1 << 14;

/// One role's warps, summed.
#[derive(Clone, Debug)]
pub struct RoleTotals {
    pub warps: u32,
    pub cycles: [u64; State::COUNT],
    pub lifetime: u64,
    /// The longest-lived warp's lifetime.
    pub longest: u64,
    pub issued: u64,
    /// Active lanes summed over the issued warp-instructions.
    pub lanes: u64,
    /// `mbarrier_wait` cycles by mbarrier array, in declaration order.
    pub mbarrier_waits: Vec<u64>,
    /// `wgmma_wait` cycles at a `Wgmma`'s issue.
    pub wgmma_issue_waits: u64,
    pub local: LocalTraffic,
}

impl RoleTotals {
    pub fn new(mbarriers: usize) -> Self {
        RoleTotals {
            warps: 0,
            cycles: [0; State::COUNT],
            lifetime: 0,
            longest: 0,
            issued: 0,
            lanes: 0,
            mbarrier_waits: vec![0; mbarriers],
            wgmma_issue_waits: 0,
            local: LocalTraffic::default(),
        }
    }

    fn add(&mut self, w: &WarpResult) {
        self.warps += 1;
        for (t, c) in self.cycles.iter_mut().zip(w.cycles) {
            *t += c;
        }
        self.lifetime += w.lifetime;
        self.longest = self.longest.max(w.lifetime);
        self.issued += w.issued;
        self.lanes += w.lanes;
        for (t, c) in self.mbarrier_waits.iter_mut().zip(&w.mbarrier_waits) {
            *t += c;
        }
        self.wgmma_issue_waits += w.wgmma_issue_waits;
        self.local.add(&w.local);
    }

    /// `wgmma_wait` cycles at a `Wgmma`'s issue and in `wgmma.wait_group`, as
    /// [`WarpResult::wgmma_waits`].
    pub fn wgmma_waits(&self) -> [(&'static str, u64); 2] {
        let total = self.cycles[State::WgmmaWait as usize];
        [
            ("issue", self.wgmma_issue_waits),
            // A run stopped by an error in another shard: this warp's shard went on to its
            // window's end, so a wait it closed there may pass the cycles counted to the stop.
            ("wait_group", total.saturating_sub(self.wgmma_issue_waits)),
        ]
    }
}

/// The result of a completed run.
#[derive(Clone, Debug)]
pub struct RunStats {
    pub cycles: u64,
    /// SMs that ran at least one CTA; unit busy cycles are summed over them.
    pub sms_used: u32,
    /// CTAs each SM ran, by SM.
    pub ctas_per_sm_run: Vec<u32>,
    /// The first [`MAX_WARP_RESULTS`] warps' results, in launch order.
    pub warps: Vec<WarpResult>,
    /// Warps launched beyond those in `warps`.
    pub warps_omitted: u64,
    /// Totals over every warp, by role in the kernel's order.
    pub roles: Vec<RoleTotals>,
    pub units: UnitBusy,
    pub partitions: u32,
    pub flops: u64,
    pub instructions: u64,
    pub events: u64,
    pub mem: MemStats,
    /// Sectors global loads looked up in the SMs' L1 data caches, and those that hit.
    pub l1_sectors: u64,
    pub l1_hits: u64,
    pub occupancy: Occupancy,
}

impl Shard<'_> {
    fn warp_result(&self, w: &Warp, end: u64) -> WarpResult {
        WarpResult {
            cta: self.ctas[w.cta as usize].block,
            sm: w.sm,
            mbarrier_waits: w.mbar_wait.clone(),
            wgmma_issue_waits: w.wgmma_issue_wait,
            role: self.k.roles[w.role as usize].name.clone(),
            name: self.warp_name(w),
            cycles: w.acct.cycles_at(end),
            lifetime: w.acct.lifetime_at(end),
            issued: w.issued,
            lanes: w.issued * u64::from(WARP_SIZE) - w.masked_lanes,
            local: w.local,
        }
    }

    /// Adds warp `id`'s results (final once it has exited, up to `end` if not) to its role's
    /// totals and, for the first warps, keeps them.
    fn account(&mut self, id: u32, end: u64) {
        let w = &self.warps[id as usize];
        let r = self.warp_result(w, end);
        self.role_totals[w.role as usize].add(&r);
        if (w.gid as usize) < MAX_WARP_RESULTS {
            self.warp_results.push((w.gid, r));
        }
    }

    /// A warp exited: its results are final.
    pub(crate) fn account_warp(&mut self, id: u32) {
        self.account(id, self.now);
    }

    /// Accounts the warps still live at `end` (the run stopped early: their results run up
    /// to its end).
    pub(crate) fn account_live(&mut self, end: u64) {
        let live: Vec<u32> = self
            .warps
            .iter()
            .filter(|(_, w)| w.acct.exited().is_none())
            .map(|(id, _)| id)
            .collect();
        for id in live {
            self.account(id, end);
        }
    }
}

impl RoleTotals {
    /// Adds another shard's totals of the same role.
    fn merge(&mut self, o: &RoleTotals) {
        self.warps += o.warps;
        for (t, c) in self.cycles.iter_mut().zip(o.cycles) {
            *t += c;
        }
        self.lifetime += o.lifetime;
        self.longest = self.longest.max(o.longest);
        self.issued += o.issued;
        self.lanes += o.lanes;
        for (t, c) in self.mbarrier_waits.iter_mut().zip(&o.mbarrier_waits) {
            *t += c;
        }
        self.wgmma_issue_waits += o.wgmma_issue_waits;
        self.local.add(&o.local);
    }
}

impl Engine<'_> {
    /// The run's results; `stopped`: it failed during cycle `now`, whose issues and bookings
    /// then count (a run that completes ends after its last cycle with work in it).
    pub(crate) fn finish(mut self, stopped: bool) -> (RunStats, MemSys) {
        // The last cycle anything happened, or later if booked work was still running. A run
        // stopped by an error has worked through cycle `now` itself: without it, what issued
        // in that cycle would count over one cycle too few (a 4-cycle run issuing in all four
        // reported 125% of its issue slots).
        // A run stopped by an error in one shard counts what the others did in that window too.
        let last = self.last_cycle();
        let now = self.stopped_at.map_or(last, |s| s.max(last));
        let end = (now + u64::from(stopped)).max(self.horizon());
        let p = self.p;
        let shards = std::mem::take(&mut self.shards);
        let sms = || shards.iter().flat_map(|s| s.sms.iter());
        let parts = || shards.iter().flat_map(|s| s.parts.iter());
        let pipe_busy = |i: usize| parts().map(|pt| pt.pipes[i].busy()).sum::<u64>();
        let ports: Vec<_> = shards
            .iter()
            .flat_map(|s| s.ports.iter().cloned())
            .collect();
        self.mem.restore_ports(ports);
        let mem = self.mem.stats();
        let units = UnitBusy {
            tensor: sms().map(|sm| sm.tensor.busy()).sum(),
            smem: sms().map(|sm| sm.port.busy()).sum(),
            alu: pipe_busy(0),
            fma: pipe_busy(1),
            mufu: pipe_busy(2),
            mma: pipe_busy(3),
            shfl: pipe_busy(4),
            tma: sms().map(|sm| sm.tma_busy).sum(),
            tma_fill: sms().map(|sm| sm.tma_fill.busy()).sum(),
            tma_store: sms().map(|sm| sm.tma_store.busy()).sum(),
            l1: sms().map(|sm| sm.l1.busy()).sum(),
            l2_port: mem.port_busy_total,
            issue: parts().map(|pt| pt.issued).sum(),
        };
        let mut shards = shards;
        let mut roles = vec![RoleTotals::new(self.k.mbarriers.len()); self.k.roles.len()];
        let mut warps = Vec::new();
        for s in &mut shards {
            s.account_live(end);
            for (t, o) in roles.iter_mut().zip(&s.role_totals) {
                t.merge(o);
            }
            warps.append(&mut s.warp_results);
        }
        warps.sort_unstable_by_key(|&(id, _)| id);
        let warps: Vec<WarpResult> = warps.into_iter().map(|(_, r)| r).collect();
        let sms = || shards.iter().flat_map(|s| s.sms.iter());
        let launched = match &self.sched {
            Some(s) => s.next_warp,
            None => shards[0].sched.as_ref().map_or(0, |s| s.next_warp),
        };
        let stats = RunStats {
            cycles: end - self.start,
            sms_used: sms().filter(|sm| sm.launched > 0).count() as u32,
            ctas_per_sm_run: sms().map(|sm| sm.launched).collect(),
            warps_omitted: u64::from(launched) - warps.len() as u64,
            warps,
            roles,
            units,
            partitions: p.sm.partitions,
            flops: sms().map(|sm| sm.tensor.flops()).sum::<u64>()
                + shards.iter().map(|s| s.mma_flops).sum::<u64>(),
            instructions: shards
                .iter()
                .flat_map(|s| s.parts.iter())
                .map(|pt| pt.issued)
                .sum(),
            events: shards.iter().map(|s| s.q.pushed()).sum(),
            mem,
            l1_sectors: sms().map(|sm| sm.l1_cache.hits + sm.l1_cache.misses).sum(),
            l1_hits: sms().map(|sm| sm.l1_cache.hits).sum(),
            occupancy: self.occ,
        };
        (stats, self.mem)
    }
}
