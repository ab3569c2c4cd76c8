//! The engine's events as observers see them, and the one place that hands them out.
//!
//! Timing code reports what happened with [`Engine::emit`] and never mentions who listens: the
//! sanitizer ([`crate::observe::sanitizer`]) checks the event before the instruction's effects
//! are applied, and the trace writer ([`crate::observe::trace`]) gets its events, flows, state
//! intervals and counter samples from here. Observers never change timing.

use super::{Engine, Shard};
use crate::observe::sanitizer::Finding;
use crate::observe::trace::{self, Lane};
use crate::observe::warp_state::State;
use isa::program::{Inst, Op, Pipe};
use serde_json::{json, Value};

/// Something that happened in the engine. Slots are the shard's slot indices
/// ([`super::names::Names::slot`] of its CTA ids, `NO_SLOT` for none), CTAs and warps the
/// shard's ids (a CTA's warps are consecutive, in launch order), `bar` a flat mbarrier index
/// within the CTA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// A warp issued one HGMMA of the wgmma at `pc` reading `reads` and writing accumulators
    /// `acc`.
    WgmmaIssued {
        warp: u32,
        pc: u32,
        reads: [u32; 2],
        acc: u16,
    },
    /// An HGMMA's results are visible to its warpgroup.
    HgmmaCompleted { warpgroup: u32 },
    /// A compute instruction that reads wgmma accumulators issued.
    AccumulatorsRead {
        warp: u32,
        warpgroup: u32,
        acc: u16,
        pipe: Pipe,
    },
    /// Warp `warp` issued a TMA load into `slot` of CTA `cta` whose complete-tx goes to `bar`
    /// there (another CTA of its cluster's when it multicasts).
    TmaLoadIssued {
        warp: u32,
        cta: u32,
        slot: u32,
        bar: u32,
    },
    /// Warp `warp` stored to `slot` of its CTA's shared memory with an ordinary (generic-proxy)
    /// store.
    SharedStored { warp: u32, slot: u32 },
    /// Warp `warp` issued `fence.proxy.async`.
    ProxyFenced { warp: u32 },
    /// Warp `warp` issued a TMA store reading `slot` (through the async proxy).
    TmaStoreIssued { warp: u32, slot: u32 },
    /// A TMA load's box of `bytes` is in shared memory (before its complete-tx on `bar`).
    TmaLoadLanded {
        cta: u32,
        slot: u32,
        bar: u32,
        bytes: u64,
    },
    /// Warp `warp` arrives on mbarrier `bar` of CTA `cta` (its own, or another of its
    /// cluster's), before the arrival is counted.
    MbarrierArrived { warp: u32, cta: u32, bar: u32 },
    /// An arrival, expect-tx or complete-tx left mbarrier `bar` with its phase still open.
    MbarrierUpdated {
        cta: u32,
        bar: u32,
        pending_arrivals: u32,
        pending_tx: i64,
    },
    /// Mbarrier `bar` completed a phase.
    PhaseCompleted { cta: u32, bar: u32 },
    /// Warp `warp`'s wait on mbarrier `bar` for the phase of parity `parity` passed.
    MbarrierWaitPassed { warp: u32, bar: u32, parity: u32 },
    /// The phase just completed (`PhaseCompleted`) releases warp `warp` of CTA `cta`, which
    /// wakes at cycle `at`.
    MbarrierWaiterReleased { warp: u32, cta: u32, at: u64 },
    /// Warp `warp` of `warpgroup` committed a wgmma group, closed by its `group`-th HGMMA.
    WgmmaCommitted {
        warp: u32,
        warpgroup: u32,
        group: u64,
    },
    /// Warp `warp`'s `wgmma.wait_group` is released: the group closed by its warpgroup's
    /// `group`-th HGMMA completed.
    WgmmaWaitReleased { warp: u32, group: u64 },
    /// Warp `warp`'s `wgmma.wait_group(n)` passed.
    WgmmaWaitPassed { warp: u32, n: u64 },
    /// Warp `warp` arrives at named barrier `id`, waiting for its release (`bar.sync`) or not
    /// (`bar.arrive`).
    NamedBarrierArrived { warp: u32, id: usize, sync: bool },
    /// Named barrier `id` reached its thread count.
    NamedBarrierReleased { cta: u32, id: usize, threads: u32 },
    /// CTA `cta` is gone: its last warp exited and none of its TMA loads or HGMMAs is still
    /// in flight (so no later hook names it).
    CtaRetired { cta: u32 },
}

impl Shard<'_> {
    /// Hands an event to the observers; a sanitizer finding stops the instruction that caused it.
    pub(crate) fn emit(&mut self, hook: Hook) -> Result<(), Finding> {
        if let Some(s) = &mut self.sanitizer {
            s.observe(&hook)?;
        }
        if self.tracer.is_some() {
            self.trace_hook(hook);
        }
        Ok(())
    }

    /// Hands an event that only informs the observers to them: the sanitizer finds hazards only
    /// at the events an instruction reports through [`Engine::emit`] before its effects.
    pub(crate) fn record(&mut self, hook: Hook) {
        let _ = self.emit(hook);
    }

    /// What the trace draws of an event: the event threads' slices, the TMA boxes and wgmma
    /// groups in flight, and the flows between them and the warps.
    fn trace_hook(&mut self, hook: Hook) {
        let now = self.now;
        let sm_of = |e: &Self, cta: u32| e.ctas[cta as usize].sm;
        match hook {
            Hook::TmaLoadIssued {
                warp, cta, slot, ..
            } => {
                let (warp, slot) = (self.warps[warp as usize].gid, self.slot_gid(cta, slot));
                if let Some(t) = &mut self.tracer {
                    t.tma_issued(warp, slot, now);
                }
            }
            Hook::TmaLoadLanded {
                cta,
                slot,
                bar,
                bytes,
            } => {
                let args = json!({
                    "cta": self.ctas[cta as usize].block,
                    "slot": self.names.slot_name(slot),
                    "mbarrier": self.names.mbarrier(bar),
                    "bytes": bytes,
                });
                let name = format!("TMA {}", self.names.slot_name(slot));
                let sm = sm_of(self, cta);
                let slot = self.slot_gid(cta, slot);
                if let Some(t) = &mut self.tracer {
                    t.tma_landed(sm, slot, now, &name, args);
                }
            }
            Hook::PhaseCompleted { cta, bar } => {
                let c = &self.ctas[cta as usize];
                let phase = c.mbars[bar as usize].phase() - 1;
                let args = json!({
                    "cta": c.block,
                    "mbarrier": self.names.mbarrier(bar),
                    "completed_phase": phase,
                });
                let sm = c.sm;
                if let Some(t) = &mut self.tracer {
                    t.sm_event(sm, Lane::Barriers, now, "mbarrier phase", args);
                }
            }
            Hook::MbarrierWaiterReleased { warp, cta, at } => {
                let sm = sm_of(self, cta);
                let warp = self.warps[warp as usize].gid;
                if let Some(t) = &mut self.tracer {
                    t.waiter_released(sm, warp, now, at);
                }
            }
            Hook::NamedBarrierReleased { cta, id, threads } => {
                let c = &self.ctas[cta as usize];
                let args = json!({ "cta": c.block, "id": id, "threads": threads });
                let sm = c.sm;
                if let Some(t) = &mut self.tracer {
                    t.sm_event(sm, Lane::Barriers, now, "named barrier", args);
                }
            }
            Hook::WgmmaCommitted {
                warp,
                warpgroup,
                group,
            } => {
                // The hook comes while the warp's pc is still at its `wgmma.commit_group`.
                let w = &self.warps[warp as usize];
                let paths = &self.k.roles[w.role as usize].paths;
                let commit = paths.get(w.pc as usize).map_or("", String::as_str);
                let (warp, warpgroup) = (w.gid, self.wgs[warpgroup as usize].gid);
                if let Some(t) = &mut self.tracer {
                    t.wgmma_committed(warp, warpgroup, group, now, commit);
                }
            }
            Hook::WgmmaWaitReleased { warp, group } => {
                let warp = self.warps[warp as usize].gid;
                if let Some(t) = &mut self.tracer {
                    t.wgmma_released(warp, group, now);
                }
            }
            Hook::HgmmaCompleted { warpgroup, .. } => {
                let warpgroup = self.wgs[warpgroup as usize].gid;
                if let Some(t) = &mut self.tracer {
                    t.hgmma_completed(warpgroup, now);
                }
            }
            Hook::WgmmaIssued { .. }
            | Hook::SharedStored { .. }
            | Hook::ProxyFenced { .. }
            | Hook::TmaStoreIssued { .. }
            | Hook::AccumulatorsRead { .. }
            | Hook::MbarrierArrived { .. }
            | Hook::MbarrierUpdated { .. }
            | Hook::MbarrierWaitPassed { .. }
            | Hook::WgmmaWaitPassed { .. }
            | Hook::NamedBarrierArrived { .. }
            | Hook::CtaRetired { .. } => {}
        }
    }

    /// A state interval of warp `w` closed: charges mbarrier waits to their barrier and reports
    /// the interval to the tracer. Inline: it closes every change of a warp's state, and
    /// without a trace it is a few operations.
    #[inline]
    pub(crate) fn close_interval(&mut self, w: u32, state: State, since: u64) {
        let warp = &mut self.warps[w as usize];
        match state {
            State::MbarrierWait => warp.mbar_wait[warp.waiting_on as usize] += self.now - since,
            State::WgmmaWait
                if matches!(
                    self.k.roles[warp.role as usize]
                        .code
                        .get(warp.state_pc as usize),
                    Some(Op::Issue(Inst::Wgmma { .. }))
                ) =>
            {
                warp.wgmma_issue_wait += self.now - since
            }
            _ => {}
        }
        if self.tracer.is_some() {
            self.trace_interval(w, state, since);
        }
    }

    /// The trace's slice of warp `w`'s state interval that closed.
    fn trace_interval(&mut self, w: u32, state: State, since: u64) {
        let warp = &self.warps[w as usize];
        if let Some(t) = &mut self.tracer {
            let role = &self.k.roles[warp.role as usize];
            let path = role
                .paths
                .get(warp.state_pc as usize)
                .map_or("exit", |p| p.as_str());
            let lanes = warp.state_mask.count_ones();
            if state == State::MbarrierWait {
                let bar = &self.k.mbarriers[warp.waiting_on as usize].name;
                let what = format!("{path} on {bar}");
                t.interval(warp.gid, state, (since, self.now), lanes, &what);
            } else {
                t.interval(warp.gid, state, (since, self.now), lanes, path);
            }
        }
    }

    /// Slot `slot` of CTA `cta` (the shard's ids) as the trace numbers it: by the CTA's
    /// GPU-wide id, so that the shards' slots stay apart in the one trace.
    fn slot_gid(&self, cta: u32, slot: u32) -> u32 {
        self.names.same_slot(slot, self.ctas[cta as usize].gid)
    }

    /// Reports every live warp's current state interval up to now to the tracer (the run
    /// stopped).
    pub(crate) fn close_open_intervals(&mut self) {
        let live: Vec<(u32, State, u64)> = self
            .warps
            .iter()
            .filter(|(_, w)| w.acct.exited().is_none())
            .map(|(id, w)| (id, w.acct.state(), w.acct.since()))
            .collect();
        for (w, state, since) in live {
            self.close_interval(w, state, since);
        }
    }
}

impl Engine<'_> {
    /// Writes unit busy fractions per SM and GPU-wide bandwidths for each elapsed sample window
    /// (`last`: also the partial window at the end).
    ///
    /// Work is booked ahead of time (a load books the L2 slices and HBM channels it will use
    /// hundreds of cycles later), so a sample counts the work done by its cycle, not the work
    /// booked by then: each unit's busy cycles (bytes for L2 and HBM) less those still booked
    /// ahead of the cycle (`busy_by`). That never exceeds what the unit did, and a sample never
    /// counts more than its unit can do in the window: work booked later starts after all that
    /// is booked now, so the idle time subtracted ahead of one sample is idle for good. The
    /// cumulative figures are kept from going back (a new booking far ahead enlarges what is
    /// subtracted), so no sample is negative; the last sample counts all the work booked to end
    /// by the run's last cycle (write-backs still queued after it are not drawn).
    ///
    /// The engine samples at window ends, up to `until`: the start of the oldest window whose
    /// requests are not all answered and delivered (what they book is known only then).
    pub(crate) fn sample(&mut self, last: bool, until: u64) {
        let Some(t) = &self.tracer else {
            return;
        };
        let every = t.level().sample_every();
        let now = self.stopped_at.unwrap_or_else(|| self.last_cycle());
        let at = if last {
            now.max(self.horizon())
        } else {
            now.min(until) / every * every
        };
        if at <= self.sampled_at || (!last && now.min(until) < self.sampled_at + every) {
            return;
        }
        let span = (at - self.sampled_at) as f64;
        let parts = self.p.sm.partitions as usize;
        let mut rows = Vec::new();
        for (sh, (i, sm)) in self
            .shards
            .iter()
            .flat_map(|sh| sh.sms.range().zip(sh.sms.iter()).map(move |x| (sh, x)))
        {
            let pp: Vec<_> = (i * parts..(i + 1) * parts).map(|p| &sh.parts[p]).collect();
            let tma_ahead = sm.tma_covered_until.saturating_sub(at).min(sm.tma_busy);
            let now = [
                sm.tensor.busy_by(at) as f64,
                sm.port.busy_by(at) as f64,
                pp.iter().map(|p| p.pipes[2].busy_by(at)).sum::<u64>() as f64 / parts as f64,
                (sm.tma_busy - tma_ahead) as f64,
                sh.ports[i].busy_by(at),
                sm.tma_fill.busy_by(at),
                sm.tma_store.busy_by(at),
            ];
            let before = self.sample_prev[i];
            let now = std::array::from_fn(|u| now[u].max(before[u]));
            self.sample_prev[i] = now;
            if sm.launched > 0 {
                let series: serde_json::Map<String, Value> = trace::BUSY_UNITS
                    .iter()
                    .zip(now.iter().zip(before))
                    .map(|(&name, (&n, b))| (name.to_string(), json!((n - b) / span)))
                    .collect();
                rows.push((i as u32, Value::Object(series)));
            }
        }
        let l2 = self.mem.l2_bytes_by(at).max(self.sample_mem.0);
        let dram = self.mem.dram_bytes_by(at).max(self.sample_mem.1);
        let gpu = json!({
            "l2_bytes_per_cycle": (l2 - self.sample_mem.0) / span,
            "dram_bytes_per_cycle": (dram - self.sample_mem.1) / span,
        });
        self.sample_mem = (l2, dram);
        let start = self.sampled_at;
        self.sampled_at = at;
        let Some(t) = &mut self.tracer else {
            return;
        };
        for (sm, series) in rows {
            t.counters(Some(sm), "busy", start, series);
        }
        t.counters(None, "bandwidth", start, gpu);
    }
}
