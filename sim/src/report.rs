//! What a run reports: the `--json` object (a stable interface, documented in `docs/cli.md`) and
//! the readable summary printed by `sim run`.

use crate::engine::RunStats;
use crate::preset::Preset;
use crate::warp_state::State;
use isa::program::Kernel;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub scenario: String,
    pub gpu: String,
    pub seed: u64,
    pub params: BTreeMap<String, i64>,
    /// SMs simulated (one until the whole-GPU model lands).
    pub sms: u32,
    pub ctas: u32,
    pub ctas_per_sm: u32,
    pub cycles: u64,
    pub clock_mhz: f64,
    /// `preset-loaded` (the preset's typical clock under tensor load) or `command-line`.
    pub clock_source: String,
    pub time_us: f64,
    /// Tensor-core FLOPs executed and their rate at `clock_mhz`.
    pub flops: u64,
    pub tflops: f64,
    pub instructions: u64,
    /// Bytes moved through the (temporary) memory path below shared memory.
    pub memory_bytes: u64,
    pub units: BTreeMap<String, Unit>,
    pub roles: BTreeMap<String, Role>,
    pub analytic: Option<Analytic>,
    /// Engine work: events pushed on the queue.
    pub events: u64,
    /// Role names in the kernel's order (for the summary; the JSON maps are sorted by name).
    #[serde(skip)]
    pub role_order: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Unit {
    /// Fraction of cycles (of capacity, for per-partition units) the unit was busy.
    pub busy: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Role {
    pub warps: u32,
    /// Warp-cycles summed over the role's warps (equals the sum of `states`).
    pub lifetime: u64,
    pub instructions: u64,
    /// Warp-cycles in each state of the taxonomy (`docs/stalls.md`).
    pub states: BTreeMap<String, u64>,
    /// The same warp-cycles grouped by Nsight Compute stall reason.
    pub ncu: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Analytic {
    pub cycles: i64,
    pub bound: String,
    /// Simulated cycles / analytic cycles.
    pub ratio: f64,
    pub note: String,
}

impl Report {
    pub fn new(k: &Kernel, p: &Preset, s: &RunStats, seed: u64, clock_mhz: Option<f64>) -> Self {
        let (clock, source) = match clock_mhz {
            Some(c) => (c, "command-line"),
            None => (p.clock.loaded_mhz, "preset-loaded"),
        };
        let cycles = s.cycles.max(1);
        let time_us = s.cycles as f64 / clock;
        let frac = |busy: u64, capacity: u64| busy as f64 / (cycles * capacity) as f64;
        let parts = s.partitions as u64;
        let u = &s.units;
        let units = [
            ("tensor", frac(u.tensor, 1)),
            ("smem", frac(u.smem, 1)),
            ("tma", frac(u.tma, 1)),
            ("memory", frac(u.memory, 1)),
            ("fma", frac(u.fma, parts)),
            ("alu", frac(u.alu, parts)),
            ("mufu", frac(u.mufu, parts)),
            ("issue", frac(u.issue, parts)),
        ]
        .into_iter()
        .map(|(n, busy)| (n.to_string(), Unit { busy }))
        .collect();

        let mut roles: BTreeMap<String, Role> = BTreeMap::new();
        for w in &s.warps {
            let r = roles.entry(w.role.clone()).or_insert_with(|| Role {
                warps: 0,
                lifetime: 0,
                instructions: 0,
                states: State::ALL
                    .iter()
                    .map(|st| (st.name().to_string(), 0))
                    .collect(),
                ncu: BTreeMap::new(),
            });
            r.warps += 1;
            r.lifetime += w.lifetime;
            r.instructions += w.issued;
            for st in State::ALL {
                let c = w.cycles[st as usize];
                *r.states.get_mut(st.name()).expect("all states present") += c;
                *r.ncu.entry(st.ncu().to_string()).or_default() += c;
            }
        }
        let analytic = k.analytic.as_ref().map(|a| Analytic {
            cycles: a.cycles,
            bound: a.bound.clone(),
            ratio: s.cycles as f64 / a.cycles.max(1) as f64,
            note: a.note.clone(),
        });
        Report {
            scenario: k.name.clone(),
            gpu: p.name.clone(),
            seed,
            params: k.params.clone(),
            sms: 1,
            ctas: k.grid,
            ctas_per_sm: s.occupancy.ctas.min(k.grid),
            cycles: s.cycles,
            clock_mhz: clock,
            clock_source: source.to_string(),
            time_us,
            flops: s.flops,
            tflops: if time_us > 0.0 {
                s.flops as f64 / time_us / 1e6
            } else {
                0.0
            },
            instructions: s.instructions,
            memory_bytes: s.memory_bytes,
            units,
            roles,
            analytic,
            events: s.events,
            role_order: k.roles.iter().map(|r| r.name.clone()).collect(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report serializes")
    }

    /// The readable summary.
    pub fn summary(&self) -> String {
        let mut o = String::new();
        let clock_note = match self.clock_source.as_str() {
            "command-line" => "set with --clock-mhz".to_string(),
            _ => "the preset's clock under tensor load; --clock-mhz to change".to_string(),
        };
        let _ = writeln!(
            o,
            "{} on {} — {} CTA(s), {} per SM, {} SM simulated, seed {}",
            self.scenario, self.gpu, self.ctas, self.ctas_per_sm, self.sms, self.seed
        );
        let _ = writeln!(
            o,
            "  simulated   {} cycles = {:.2} µs at {} MHz ({clock_note})",
            group(self.cycles),
            self.time_us,
            self.clock_mhz
        );
        if self.flops > 0 {
            let _ = writeln!(
                o,
                "  tensor      {} FLOP, {:.2} TFLOP/s on {} SM",
                group(self.flops),
                self.tflops,
                self.sms
            );
        }
        match &self.analytic {
            Some(a) => {
                let _ = writeln!(
                    o,
                    "  analytic    {} cycles, bound by {}; simulated / analytic = {:.3}",
                    group(a.cycles as u64),
                    a.bound,
                    a.ratio
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "  analytic    (the scenario states no analytic prediction)"
                );
            }
        }
        let _ = writeln!(
            o,
            "  issued      {} warp-instructions; memory path moved {} bytes",
            group(self.instructions),
            group(self.memory_bytes)
        );
        let _ = write!(o, "units busy  ");
        for name in [
            "tensor", "smem", "tma", "memory", "mufu", "fma", "alu", "issue",
        ] {
            let _ = write!(o, " {name} {:.1}%", 100.0 * self.units[name].busy);
        }
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "warp states (% of the role's warp-cycles; Nsight Compute name in brackets)"
        );
        for name in &self.role_order {
            let r = &self.roles[name];
            let mut states: Vec<(&String, &u64)> =
                r.states.iter().filter(|(_, c)| **c > 0).collect();
            states.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let parts: Vec<String> = states
                .iter()
                .take(5)
                .map(|(st, c)| {
                    let ncu = State::ALL
                        .iter()
                        .find(|s| s.name() == st.as_str())
                        .map(|s| s.ncu())
                        .unwrap_or("?");
                    let pct = 100.0 * **c as f64 / r.lifetime.max(1) as f64;
                    if ncu == st.as_str() {
                        format!("{st} {pct:.1}%")
                    } else {
                        format!("{st} {pct:.1}% [{ncu}]")
                    }
                })
                .collect();
            let _ = writeln!(o, "  {name:<10} {:>2} warps: {}", r.warps, parts.join(", "));
        }
        o
    }
}

/// 1234567 -> "1,234,567".
fn group(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::group;

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1234567), "1,234,567");
    }
}
