//! The deadlock and livelock reports: every live warp and what it waits for or spins on.

use super::{Engine, Shard, SimError};
use crate::observe::warp_state::State;

impl Engine<'_> {
    /// The live warps of every shard, by id.
    fn live_warps(&self) -> Vec<String> {
        let mut lines: Vec<(u32, String)> =
            self.shards.iter().flat_map(Shard::live_warps).collect();
        lines.sort_by_key(|&(id, _)| id);
        lines.into_iter().map(|(_, l)| l).collect()
    }

    pub(crate) fn deadlock(&self) -> SimError {
        let mut blocked = self.live_warps();
        let warps = blocked.len();
        if self.next_block() < self.k.grid {
            blocked.push(format!(
                "  {} CTAs never launched",
                self.k.grid - self.next_block()
            ));
        }
        SimError::Deadlock {
            cycle: self.last_cycle(),
            warps,
            blocked,
        }
    }

    /// No progress for `Config::livelock_cycles`: the live warps, the counters they may poll,
    /// and the CTAs still waiting for a slot.
    pub(crate) fn livelock(&self) -> SimError {
        let mut spinning = self.live_warps();
        let warps = spinning.len();
        // Arrays can be long: the first counters, then how many more (a kernel with counters
        // runs as one shard).
        const SHOWN: usize = 16;
        let counters = &self.shards[0].counters;
        for ((name, _), value) in self.k.counters.iter().zip(counters).take(SHOWN) {
            spinning.push(format!("  atomic counter {name} = {value}"));
        }
        if counters.len() > SHOWN {
            spinning.push(format!(
                "  and {} more atomic counters",
                counters.len() - SHOWN
            ));
        }
        if self.next_block() < self.k.grid {
            spinning.push(format!(
                "  {} CTAs not launched yet",
                self.k.grid - self.next_block()
            ));
        }
        SimError::Livelock {
            cycle: self.stopped_at.unwrap_or_else(|| self.last_cycle()),
            since: self.last_progress(),
            warps,
            spinning,
        }
    }
}

impl Shard<'_> {
    /// One line per live warp (by GPU-wide id): its CTA, name, instruction and what it waits
    /// for.
    fn live_warps(&self) -> Vec<(u32, String)> {
        let mut blocked = Vec::new();
        for (id, w) in self.warps.iter() {
            if w.acct.exited().is_some() {
                continue;
            }
            let role = &self.k.roles[w.role as usize];
            let cta = &self.ctas[w.cta as usize];
            let pc = if w.hold.is_some() { w.hold_pc } else { w.pc };
            let path = role.paths.get(pc as usize).cloned().unwrap_or_default();
            let why = match w.acct.state() {
                State::MbarrierWait => cta
                    .mbar_waiters
                    .iter()
                    .enumerate()
                    .flat_map(|(b, ws)| ws.iter().filter(|&&(x, _)| x == id).map(move |&(_, p)| (b, p)))
                    .map(|(b, parity)| {
                        let m = &cta.mbars[b];
                        let tx = match m.pending_tx() {
                            t if t < 0 => format!("{} tx bytes more than expected", -t),
                            t => format!("{t} tx bytes missing"),
                        };
                        let how = if w.polling.is_some() { " (polling with test_wait)" } else { "" };
                        format!(
                            "waits on mbarrier {}{how} for the phase of parity {parity}; it is in phase {} with {} arrivals and {tx}",
                            self.names.mbarrier(b as u32),
                            m.phase(),
                            m.pending_arrivals(),
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
                State::NamedBarrier => {
                    let cl = &self.clusters[cta.cluster as usize];
                    if cl.barrier.waiters().contains(&id) {
                        format!(
                            "waits at the cluster barrier: {} of the cluster's {} running warps arrived",
                            cl.barrier.arrived(),
                            cl.live_warps
                        )
                    } else {
                        cta.named
                            .iter()
                            .enumerate()
                            .find(|(_, b)| b.waiters().contains(&id))
                            .map(|(i, b)| {
                                format!(
                                    "waits at named barrier {i}: {} of {} threads arrived",
                                    b.arrived(),
                                    b.expected()
                                )
                            })
                            .unwrap_or_default()
                    }
                }
                State::WgmmaWait => format!(
                    "waits for wgmma groups ({} pending)",
                    w.wgmma_groups.len()
                ),
                State::LongScoreboard
                    if self.counter_waiters.iter().flatten().any(|&(x, _)| x == id) =>
                {
                    let (c, value) = self
                        .counter_waiters
                        .iter()
                        .enumerate()
                        .find_map(|(c, ws)| ws.iter().find(|&&(x, _)| x == id).map(|&(_, v)| (c, v)))
                        .expect("the guard found it");
                    format!(
                        "spins until counter {} reaches {value}; it is {}",
                        self.k.counters[c].0, self.counters[c]
                    )
                }
                State::Setmaxnreg => format!(
                    "waits in setmaxnreg.inc for registers ({} free in the CTA pool)",
                    cta.pool.free()
                ),
                s => format!("in state {}", s.name()),
            };
            let rank = match self.k.cluster {
                1 => String::new(),
                _ => format!(" (cluster rank {})", cta.rank),
            };
            blocked.push((
                w.gid,
                format!(
                    "  CTA {}{rank} warp {} at {path}: {why}",
                    cta.block,
                    self.warp_name(w)
                ),
            ));
        }
        blocked
    }
}
