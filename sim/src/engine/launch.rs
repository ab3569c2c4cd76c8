//! CTA launch and retirement: a CTA's warps, warpgroups, barriers and register pool are
//! created when the CTA scheduler (`crate::gpu::cta_scheduler`) places it on an SM, and its
//! slot is freed when its last warp exits.

use super::event::Event;
use super::hooks::Hook;
use super::state::{Cluster, Cta, Warp, WarpGroup};
use super::Engine;
use crate::gpu::cta_scheduler::{least_loaded_sm, place_cluster};
use crate::observe::trace::WarpInfo;
use crate::observe::warp_state::{Accounting, State};
use crate::sm::async_groups::AsyncGroups;
use crate::sm::cluster::ClusterBarrier;
use crate::sm::local::LocalTraffic;
use crate::sm::mbarrier::MBarrier;
use crate::sm::named_barrier::NamedBarrier;
use crate::sm::regfile::RegPool;
use isa::divergence::{Lanes, FULL};
use isa::program::{slot, SCOREBOARDS, WARPS_PER_WARPGROUP};
use std::collections::VecDeque;

impl Engine<'_> {
    /// Dispatches CTAs in block-id order, each to the SM with room that holds the fewest (the
    /// first in `dispatch_order` on a tie: one GPC after another): the first wave spreads over
    /// all SMs, later CTAs refill as CTAs retire.
    /// A cluster's CTAs launch together, on one GPC (`place_cluster`).
    pub(crate) fn launch_ctas(&mut self) {
        let size = self.k.cluster;
        while self.next_block < self.k.grid {
            let resident: Vec<u32> = self.sms.iter().map(|s| s.resident).collect();
            let sms = if size == 1 {
                match least_loaded_sm(&resident, &self.dispatch_order, self.occ.ctas) {
                    Some(sm) => vec![sm],
                    None => return,
                }
            } else {
                match place_cluster(&resident, &self.gpcs, self.occ.ctas, size) {
                    Some(sms) => sms,
                    None => return,
                }
            };
            let cluster = self.clusters.push(Cluster {
                first_cta: self.ctas.next_id(),
                size,
                live_ctas: size,
                live_warps: size * self.k.warps_per_cta(),
                barrier: ClusterBarrier::default(),
            });
            for (rank, sm) in sms.into_iter().enumerate() {
                let block = self.next_block;
                self.next_block += 1;
                self.sms[sm].resident += 1;
                self.sms[sm].launched += 1;
                self.launch_cta(sm as u32, block, cluster, rank as u32);
            }
        }
    }

    fn launch_cta(&mut self, sm: u32, block: u32, cluster: u32, rank: u32) {
        let k = self.k;
        let cta_idx = self.ctas.next_id();
        let first_warp = self.warps.next_id();
        let first_wg = self.wgs.next_id();
        let wgs_per_cta: u32 = k.roles.iter().map(|r| r.warpgroups).sum();
        let mut mbars = Vec::new();
        for m in &k.mbarriers {
            for _ in 0..m.count {
                mbars.push(MBarrier::new(m.arrivals));
            }
        }
        self.ctas.push(Cta {
            block,
            sm,
            mbar_waiters: vec![Vec::new(); mbars.len()],
            mbars,
            named: vec![NamedBarrier::default(); self.p.barriers.named as usize],
            // The pool starts empty: every warp holds its launch allocation.
            pool: RegPool::new(self.p.regs.alloc_unit),
            reg_waiters: Vec::new(),
            live_warps: k.warps_per_cta(),
            atomics: vec![Vec::new(); k.counters.len()],
            warps: first_warp..first_warp + k.warps_per_cta(),
            wgs: first_wg..first_wg + wgs_per_cta,
            tma_in_flight: 0,
            remote_in_flight: 0,
            cluster,
            rank,
        });
        self.last_progress = self.now;
        let mut warp_in_cta = 0u32;
        for (r, role) in k.roles.iter().enumerate() {
            for wg in 0..role.warpgroups {
                let wg_idx = self.wgs.next_id();
                let mut members = [0u32; WARPS_PER_WARPGROUP as usize];
                for (w, member) in members.iter_mut().enumerate() {
                    let partition =
                        (sm * self.p.sm.partitions + warp_in_cta % self.p.sm.partitions) as usize;
                    let part = &mut self.parts[partition];
                    let Some(slot_idx) = part.slots.iter().position(Option::is_none) else {
                        unreachable!("occupancy admits only CTAs whose warps fit the partitions")
                    };
                    let id = self.warps.next_id();
                    part.slots[slot_idx] = Some(id);
                    part.check |= 1 << slot_idx;
                    self.active[partition / 64] |= 1 << (partition % 64);
                    let mut env = vec![0i64; role.slots as usize];
                    env[slot::WARP as usize] = w as i64;
                    env[slot::WG as usize] = wg as i64;
                    env[slot::WARP_ID as usize] = warp_in_cta as i64;
                    slot::set_cta(&mut env, block, k.grid, k.cluster);
                    self.warps.push(Warp {
                        sm,
                        cta: cta_idx,
                        role: r as u16,
                        wg: wg_idx,
                        partition: partition as u32,
                        slot: slot_idx as u8,
                        pc: 0,
                        env,
                        cluster_arrivals: 0,
                        lanes: Lanes::default(),
                        acct: Accounting::new(self.now, State::NotSelected),
                        progress: 0,
                        reg_ready: 0,
                        reg_kind: State::Wait,
                        sb_ready: [0; SCOREBOARDS],
                        sb_kind: [State::Wait; SCOREBOARDS],
                        hgmma_issued: 0,
                        hgmma_next: 0,
                        mma_next: 0,
                        wgmma_groups: VecDeque::new(),
                        stores: AsyncGroups::default(),
                        copies: AsyncGroups::default(),
                        sync_until: 0,
                        sync_state: State::LongScoreboard,
                        wait_blocked: false,
                        after_tma_issue: false,
                        atomics: vec![0; k.counters.len()],
                        stores_done: 0,
                        dsmem_loads: Vec::new(),
                        regs: k.regs_per_thread,
                        hold: None,
                        hold_pc: 0,
                        state_pc: 0,
                        waiting_on: 0,
                        mbar_wait: vec![0; k.mbarriers.len()],
                        polling: None,
                        wgmma_issue_wait: 0,
                        issued: 0,
                        masked_lanes: 0,
                        state_mask: FULL,
                        spill: None,
                        mix: None,
                        spill_carry: 0,
                        spill_slot: 0,
                        local: LocalTraffic::default(),
                    });
                    self.sms[sm as usize].local_bytes += self.spill_frame(r as u16);
                    if let Some(t) = &mut self.tracer {
                        let name = format!("{}{wg}.w{w}", role.name);
                        t.warp(
                            id,
                            WarpInfo {
                                sm,
                                name,
                                cta: block,
                            },
                        );
                    }
                    *member = id;
                    warp_in_cta += 1;
                }
                self.wgs.push(WarpGroup {
                    cta: cta_idx,
                    warps: members,
                    submitted: 0,
                    released: 0,
                    completed: 0,
                    admitted: 0,
                    waiters: Vec::new(),
                    issue_waiters: Vec::new(),
                });
            }
        }
    }

    pub(crate) fn retire_warp(&mut self, w: u32) {
        let (old, since) = self.warps[w as usize].acct.exit(self.now);
        self.close_interval(w, old, since);
        let warp = &self.warps[w as usize];
        let (p, s, cta) = (
            warp.partition as usize,
            warp.slot as usize,
            warp.cta as usize,
        );
        let warp_sm = warp.sm as usize;
        let frame = self.spill_frame(warp.role);
        self.sms[warp_sm].local_bytes -= frame;
        self.parts[p].slots[s] = None;
        self.parts[p].eligible &= !(1 << s);
        self.parts[p].check &= !(1 << s);
        self.account_warp(w);
        self.last_progress = self.now;
        self.ctas[cta].live_warps -= 1;
        let cluster = self.ctas[cta].cluster;
        self.clusters[cluster as usize].live_warps -= 1;
        self.settle_cluster_barrier(cluster);
        if self.ctas[cta].live_warps == 0 {
            self.drop_cta(cta as u32);
            self.retired += 1;
            let gap = self.p.sm.cta_launch_gap;
            // The slot stays taken for the launch gap, but only while CTAs wait for one: the
            // kernel ends with its last CTA.
            if gap > 0 && self.next_block < self.k.grid {
                self.q
                    .push(self.now + gap, Event::CtaSlotFree(warp_sm as u32));
            } else {
                self.free_cta_slot(warp_sm as u32);
            }
        }
    }

    /// Drops a retired CTA's state, with its warps' and warpgroups', once no queued event
    /// refers to it: its TMA loads have landed and its HGMMAs are released and complete (a
    /// kernel may exit with either in flight). Then, not at its last warp's exit, the observers
    /// hear `CtaRetired`.
    pub(crate) fn drop_cta(&mut self, cta: u32) {
        let c = &self.ctas[cta as usize];
        let drained = |g: &WarpGroup| g.released == g.submitted && g.completed == g.submitted;
        if c.live_warps > 0
            || c.tma_in_flight > 0
            || c.remote_in_flight > 0
            || !c.wgs.clone().all(|g| drained(&self.wgs[g as usize]))
        {
            return;
        }
        let (warps, wgs, cluster) = (c.warps.clone(), c.wgs.clone(), c.cluster);
        // The observers forget it too (the sanitizer's per-CTA state), after its last event.
        self.record(Hook::CtaRetired { cta });
        self.warps.remove(warps);
        self.wgs.remove(wgs);
        self.ctas.remove(cta..cta + 1);
        let cl = &mut self.clusters[cluster as usize];
        cl.live_ctas -= 1;
        if cl.live_ctas == 0 {
            self.clusters.remove(cluster..cluster + 1);
        }
    }

    pub(crate) fn free_cta_slot(&mut self, sm: u32) {
        self.sms[sm as usize].resident -= 1;
        self.launch_ctas();
    }
}
