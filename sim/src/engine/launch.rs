//! CTA launch and retirement: a CTA's warps, warpgroups, barriers and register pool are
//! created when the CTA scheduler (`crate::gpu::cta_scheduler`) places it on an SM, and its
//! slot is freed when its last warp exits.

use super::event::Event;
use super::hooks::Hook;
use super::state::{Cluster, Cta, Warp, WarpGroup};
use super::Shard;
use crate::gpu::cta_scheduler::{dispatch_order, least_loaded_sm, place_cluster};
use crate::gpu::preset::Preset;
use crate::observe::trace::WarpInfo;
use crate::observe::warp_state::{Accounting, State};
use crate::sm::async_groups::AsyncGroups;
use crate::sm::cluster::ClusterBarrier;
use crate::sm::local::LocalTraffic;
use crate::sm::mbarrier::MBarrier;
use crate::sm::named_barrier::NamedBarrier;
use crate::sm::regfile::RegPool;
use isa::divergence::{Lanes, FULL};
use isa::program::{slot, Kernel, SCOREBOARDS, WARPS_PER_WARPGROUP};
use std::collections::VecDeque;

/// The CTA scheduler: which SM each CTA goes to, and the GPU-wide ids of what it launches.
/// One scheduler places every CTA of a run, in block order; it lives in the shard when one shard
/// holds every SM, and in the engine otherwise (it decides at window ends).
pub(crate) struct CtaSched {
    /// Each SM's CTAs, counting a retired one's slot until it is free again.
    resident: Vec<u32>,
    pub next_block: u32,
    grid: u32,
    cluster: u32,
    /// CTAs an SM holds at once.
    limit: u32,
    /// The SMs of each GPC, and the order in which the first wave takes the SMs
    /// (`cta_scheduler::dispatch_order`).
    gpcs: Vec<u32>,
    order: Vec<usize>,
    /// The next ids, and a CTA's warps and warpgroups.
    next_cta: u32,
    pub next_warp: u32,
    next_wg: u32,
    warps_per_cta: u32,
    wgs_per_cta: u32,
}

/// A CTA placed by the scheduler: its block, SM, GPU-wide ids (CTA, first warp and warpgroup:
/// consecutive from there) and its rank in its cluster.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Launch {
    pub block: u32,
    pub sm: u32,
    pub cta: u32,
    pub first_warp: u32,
    pub first_wg: u32,
    pub rank: u32,
}

impl CtaSched {
    pub fn new(k: &Kernel, p: &Preset, limit: u32) -> Self {
        let gpcs = p.cluster.gpcs(p.sm.count);
        CtaSched {
            resident: vec![0; p.sm.count as usize],
            next_block: 0,
            grid: k.grid,
            cluster: k.cluster,
            limit,
            order: dispatch_order(&gpcs, &p.cluster.dispatch_gpcs, p.sm.count as usize),
            gpcs,
            next_cta: 0,
            next_warp: 0,
            next_wg: 0,
            warps_per_cta: k.warps_per_cta(),
            wgs_per_cta: k.roles.iter().map(|r| r.warpgroups).sum(),
        }
    }

    /// Whether CTAs still wait for a slot.
    pub fn waiting(&self) -> bool {
        self.next_block < self.grid
    }

    /// Places CTAs in block-id order, each on the SM with room that holds the fewest (the
    /// first in the dispatch order on a tie: one GPC after another), while they fit: the first
    /// wave spreads over all SMs, later CTAs refill as CTAs retire. A cluster's CTAs go
    /// together, on one GPC (`place_cluster`).
    pub fn launch(&mut self) -> Vec<Launch> {
        let size = self.cluster;
        let mut out = Vec::new();
        while self.next_block < self.grid {
            let sms = if size == 1 {
                match least_loaded_sm(&self.resident, &self.order, self.limit) {
                    Some(sm) => vec![sm],
                    None => break,
                }
            } else {
                match place_cluster(&self.resident, &self.gpcs, self.limit, size) {
                    Some(sms) => sms,
                    None => break,
                }
            };
            for (rank, sm) in sms.into_iter().enumerate() {
                self.resident[sm] += 1;
                out.push(Launch {
                    block: self.next_block,
                    sm: sm as u32,
                    cta: self.next_cta,
                    first_warp: self.next_warp,
                    first_wg: self.next_wg,
                    rank: rank as u32,
                });
                self.next_block += 1;
                self.next_cta += 1;
                self.next_warp += self.warps_per_cta;
                self.next_wg += self.wgs_per_cta;
            }
        }
        out
    }

    /// A CTA slot of SM `sm` is free again.
    pub fn free(&mut self, sm: u32) {
        self.resident[sm as usize] -= 1;
    }
}

impl Shard<'_> {
    /// Launches the CTAs its own scheduler places now (the shard holds every SM).
    pub(crate) fn launch_placed(&mut self) {
        let launches = match &mut self.sched {
            Some(s) => s.launch(),
            None => return,
        };
        for l in launches {
            self.launch_cta(l);
        }
    }

    /// Starts CTA `l` on its SM now.
    pub(crate) fn launch_cta(&mut self, l: Launch) {
        let k = self.k;
        let Launch {
            block,
            sm,
            cta: cta_gid,
            first_warp: first_warp_gid,
            first_wg: first_wg_gid,
            rank,
        } = l;
        let wgs_per_cta: u32 = k.roles.iter().map(|r| r.warpgroups).sum();
        // The shard's own ids, in its launch order (which is the GPU-wide ids' order): its
        // tables hold its agents alone. A cluster's CTAs launch one after another in one shard,
        // so their ids are consecutive from a multiple of the cluster's size, as GPU-wide.
        let cta_idx = self.launched_ctas;
        self.launched_ctas += 1;
        let first_warp = cta_idx * k.warps_per_cta();
        let first_wg = cta_idx * wgs_per_cta;
        let cluster = cta_idx / k.cluster;
        debug_assert_eq!(rank, cta_idx % k.cluster, "a cluster's CTAs launch by rank");
        self.sms[sm as usize].launched += 1;
        if rank == 0 {
            self.clusters.insert(
                cluster,
                Cluster {
                    first_cta: cta_idx,
                    size: k.cluster,
                    live_ctas: k.cluster,
                    live_warps: k.cluster * k.warps_per_cta(),
                    barrier: ClusterBarrier::default(),
                },
            );
        }
        let mut mbars = Vec::new();
        for m in &k.mbarriers {
            for _ in 0..m.count {
                mbars.push(MBarrier::new(m.arrivals));
            }
        }
        self.ctas.insert(
            cta_idx,
            Cta {
                gid: cta_gid,
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
            },
        );
        self.last_progress = self.now;
        let mut warp_in_cta = 0u32;
        let mut id = first_warp;
        let mut wg_idx = first_wg;
        for (r, role) in k.roles.iter().enumerate() {
            for wg in 0..role.warpgroups {
                let mut members = [0u32; WARPS_PER_WARPGROUP as usize];
                for (w, member) in members.iter_mut().enumerate() {
                    let partition =
                        (sm * self.p.sm.partitions + warp_in_cta % self.p.sm.partitions) as usize;
                    let part = &mut self.parts[partition];
                    let Some(slot_idx) = part.slots.iter().position(Option::is_none) else {
                        unreachable!("occupancy admits only CTAs whose warps fit the partitions")
                    };
                    part.slots[slot_idx] = Some(id);
                    part.check |= 1 << slot_idx;
                    self.activate(partition);
                    let mut env = vec![0i64; role.slots as usize];
                    env[slot::WARP as usize] = w as i64;
                    env[slot::WG as usize] = wg as i64;
                    env[slot::WARP_ID as usize] = warp_in_cta as i64;
                    slot::set_cta(&mut env, block, k.grid, k.cluster);
                    self.warps.insert(
                        id,
                        Warp {
                            gid: first_warp_gid + warp_in_cta,
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
                            reg_pending: 0,
                            sb_pending: [0; SCOREBOARDS],
                            hgmma_issued: 0,
                            hgmma_next: 0,
                            mma_next: 0,
                            wgmma_groups: VecDeque::new(),
                            stores: AsyncGroups::default(),
                            copies: AsyncGroups::default(),
                            sync_until: 0,
                            sync_state: State::LongScoreboard,
                            sync_pending: 0,
                            answer_wakes: false,
                            wait_blocked: false,
                            after_tma_issue: false,
                            atomics: vec![0; k.counters.len()],
                            stores_done: 0,
                            smem_stores_done: 0,
                            stores_pending: 0,
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
                        },
                    );
                    self.sms[sm as usize].local_bytes += self.spill_frame(r as u16);
                    if let Some(t) = &mut self.tracer {
                        let name = format!("{}{wg}.w{w}", role.name);
                        t.warp(
                            first_warp_gid + warp_in_cta,
                            WarpInfo {
                                sm,
                                name,
                                cta: block,
                            },
                        );
                    }
                    *member = id;
                    warp_in_cta += 1;
                    id += 1;
                }
                self.wgs.insert(
                    wg_idx,
                    WarpGroup {
                        gid: first_wg_gid + (wg_idx - first_wg),
                        cta: cta_idx,
                        warps: members,
                        submitted: 0,
                        released: 0,
                        completed: 0,
                        admitted: 0,
                        waiters: Vec::new(),
                        issue_waiters: Vec::new(),
                    },
                );
                wg_idx += 1;
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
            // kernel ends with its last CTA. Without a scheduler of its own the shard tells the
            // engine's, which frees the slot at that cycle (a window or more ahead).
            match &self.sched {
                None => self.freed.push((self.now + gap, warp_sm as u32)),
                Some(s) if gap > 0 && s.waiting() => {
                    self.q
                        .push(self.now + gap, Event::CtaSlotFree(warp_sm as u32));
                }
                Some(_) => self.free_cta_slot(warp_sm as u32),
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

    /// A CTA slot of SM `sm` is free again (the shard's own scheduler).
    pub(crate) fn free_cta_slot(&mut self, sm: u32) {
        if let Some(s) = &mut self.sched {
            s.free(sm);
        }
        self.launch_placed();
    }
}
