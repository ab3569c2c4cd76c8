//! The engine's events as observers see them, and the one place that hands them out.
//!
//! Timing code reports what happened with [`Engine::emit`] and never mentions who listens: the
//! sanitizer ([`crate::observe::sanitizer`]) checks the event before the instruction's effects
//! are applied, and the trace writer ([`crate::observe::trace`]) gets its instants, state
//! intervals and counter samples from here. Observers never change timing.

use super::Engine;
use crate::observe::sanitizer::Finding;
use crate::observe::trace;
use crate::observe::warp_state::State;
use isa::program::{Inst, Op, Pipe};
use serde_json::{json, Value};

/// Something that happened in the engine. Slots are engine-wide slot indices
/// ([`super::names::Names::slot`], `NO_SLOT` for none), CTAs engine-wide CTA indices, `bar`
/// a flat mbarrier index within the CTA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// A warp issued one HGMMA of a wgmma reading `reads` and writing accumulators `acc`.
    WgmmaIssued {
        warp: u32,
        reads: [u32; 2],
        acc: u16,
    },
    /// A warpgroup's HGMMA went to the tensor pipe (all four warps issued it).
    HgmmaSubmitted { reads: [u32; 2] },
    /// An HGMMA's results are visible to its warpgroup.
    HgmmaCompleted { warpgroup: u32, reads: [u32; 2] },
    /// A compute instruction that reads wgmma accumulators issued.
    AccumulatorsRead {
        warp: u32,
        warpgroup: u32,
        acc: u16,
        pipe: Pipe,
    },
    /// A TMA load into `slot` issued.
    TmaLoadIssued { slot: u32 },
    /// A TMA load's box of `bytes` is in shared memory (before its complete-tx on `bar`).
    TmaLoadLanded {
        cta: u32,
        slot: u32,
        bar: u32,
        bytes: u64,
    },
    /// An arrival or complete-tx left mbarrier `bar` with its phase still open.
    MbarrierUpdated {
        cta: u32,
        bar: u32,
        pending_arrivals: u32,
        pending_tx: i64,
    },
    /// Mbarrier `bar` completed a phase.
    PhaseCompleted { cta: u32, bar: u32 },
    /// Named barrier `id` reached its thread count.
    NamedBarrierReleased { cta: u32, id: usize, threads: u32 },
}

impl Engine<'_> {
    /// Hands an event to the observers; a sanitizer finding stops the instruction that caused it.
    pub(crate) fn emit(&mut self, hook: Hook) -> Result<(), Finding> {
        if let Some(s) = &mut self.sanitizer {
            s.observe(&hook)?;
        }
        if self.tracer.is_some() {
            self.trace_instant(hook);
        }
        Ok(())
    }

    /// Hands an event that only informs the observers to them: the sanitizer finds hazards only
    /// at the events an instruction reports through [`Engine::emit`] before its effects.
    pub(crate) fn record(&mut self, hook: Hook) {
        let _ = self.emit(hook);
    }

    /// The trace's instant events: TMA landings, mbarrier phases, named-barrier releases.
    fn trace_instant(&mut self, hook: Hook) {
        let (cta, name, args) = match hook {
            Hook::TmaLoadLanded {
                cta, bar, bytes, ..
            } => {
                let args = json!({
                    "cta": self.ctas[cta as usize].block,
                    "mbarrier": self.names.mbarrier(bar),
                    "bytes": bytes,
                });
                (cta, "TMA complete", args)
            }
            Hook::PhaseCompleted { cta, bar } => {
                let c = &self.ctas[cta as usize];
                let phase = c.mbars[bar as usize].phase() - 1;
                let args = json!({
                    "cta": c.block,
                    "mbarrier": self.names.mbarrier(bar),
                    "completed_phase": phase,
                });
                (cta, "mbarrier phase", args)
            }
            Hook::NamedBarrierReleased { cta, id, threads } => {
                let args =
                    json!({ "cta": self.ctas[cta as usize].block, "id": id, "threads": threads });
                (cta, "named barrier", args)
            }
            _ => return,
        };
        let sm = self.ctas[cta as usize].sm;
        if let Some(t) = &mut self.tracer {
            t.instant(sm, self.now, name, args);
        }
    }

    /// A state interval of warp `w` closed: charges mbarrier waits to their barrier and reports
    /// the interval to the tracer.
    pub(crate) fn close_interval(&mut self, w: u32, state: State, since: u64) {
        let warp = &mut self.warps[w as usize];
        let role = &self.k.roles[warp.role as usize];
        match state {
            State::MbarrierWait => warp.mbar_wait[warp.waiting_on as usize] += self.now - since,
            State::WgmmaWait
                if matches!(
                    role.code.get(warp.state_pc as usize),
                    Some(Op::Issue(Inst::Wgmma { .. }))
                ) =>
            {
                warp.wgmma_issue_wait += self.now - since
            }
            _ => {}
        }
        if let Some(t) = &mut self.tracer {
            let role = &self.k.roles[warp.role as usize];
            let path = role
                .paths
                .get(warp.state_pc as usize)
                .map_or("exit", |p| p.as_str());
            if state == State::MbarrierWait {
                let bar = &self.k.mbarriers[warp.waiting_on as usize].name;
                t.interval(w, state, since, self.now, &format!("{path} on {bar}"));
            } else {
                t.interval(w, state, since, self.now, path);
            }
        }
    }

    /// Reports every live warp's current state interval up to now to the tracer (the run
    /// stopped).
    pub(crate) fn close_open_intervals(&mut self) {
        for w in 0..self.warps.len() as u32 {
            let warp = &self.warps[w as usize];
            if warp.acct.exited().is_none() {
                let (state, since) = (warp.acct.state(), warp.acct.since());
                self.close_interval(w, state, since);
            }
        }
    }

    /// Writes unit busy fractions per SM and GPU-wide bandwidths for each elapsed sample window
    /// (`last`: also the partial window at the end).
    pub(crate) fn sample(&mut self, last: bool) {
        let Some(t) = &self.tracer else {
            return;
        };
        let every = t.level().sample_every();
        let at = if last {
            self.now.max(self.horizon)
        } else {
            self.now / every * every
        };
        if at <= self.sampled_at || (!last && self.now < self.sampled_at + every) {
            return;
        }
        let span = (at - self.sampled_at) as f64;
        let parts = self.p.sm.partitions as usize;
        let mut rows = Vec::new();
        for (i, sm) in self.sms.iter().enumerate() {
            let pp = &self.parts[i * parts..(i + 1) * parts];
            let now = [
                sm.tensor.busy(),
                sm.port.busy(),
                pp.iter().map(|p| p.pipes[2].busy()).sum::<u64>() / parts as u64,
                sm.tma_busy,
                self.mem.port_busy(i as u32),
                sm.tma_fill.busy(),
            ];
            let before = std::mem::replace(&mut self.sample_prev[i], now);
            if sm.launched > 0 {
                let series: serde_json::Map<String, Value> = trace::BUSY_UNITS
                    .iter()
                    .zip(now.iter().zip(before))
                    .map(|(&name, (&n, b))| {
                        (name.to_string(), json!(((n - b) as f64 / span).min(1.0)))
                    })
                    .collect();
                rows.push((i as u32, Value::Object(series)));
            }
        }
        let (l2, dram) = (self.mem.l2_bytes(), self.mem.dram_bytes());
        let gpu = json!({
            "l2_bytes_per_cycle": (l2 - self.sample_mem.0) as f64 / span,
            "dram_bytes_per_cycle": (dram - self.sample_mem.1) as f64 / span,
        });
        self.sample_mem = (l2, dram);
        let start = self.sampled_at;
        self.sampled_at = at;
        let Some(t) = &mut self.tracer else {
            return;
        };
        for (sm, series) in rows {
            t.counters(sm, "busy", start, series);
        }
        t.counters(trace::GPU_PID, "bandwidth", start, gpu);
    }
}
