//! The diagnosis that opens `sim report`: each unit's achieved fraction of its peak (speed of
//! light), the unit that binds and how far the run is from its bound, where each role's warps
//! wait most, how well the waves fill the GPU, and the kernel's roofline points. Computed from a
//! trace's summary (`otherData`: the run's report and per-warp totals), so it needs no event.

use crate::analytic::fmt::grouped;
use crate::observe::stalls::{ranked_shares, role_rows};
use crate::observe::warp_state::State;
use serde_json::Value;
use std::collections::BTreeMap;

/// Below this fraction of its peak no unit is said to bind: Nsight Compute's threshold for a
/// latency-bound kernel (its speed-of-light rule flags throughput under 60% of peak).
pub const LATENCY_BOUND: f64 = 0.6;

/// Below this tail efficiency the verdict names the tail first.
pub const TAIL_WARN: f64 = 0.9;

/// A second stall is named when it holds at least this share of the first one's cycles.
const SECOND_STALL: f64 = 0.5;

/// One unit's achieved fraction of its peak.
#[derive(Clone, Debug, PartialEq)]
pub struct Sol {
    /// The report's `units` key, or `l2` and `dram` for the GPU-wide memory.
    pub unit: &'static str,
    pub label: &'static str,
    pub busy: f64,
    /// Over the GPU's capacity (L2, DRAM), not averaged over the SMs used.
    pub gpu_wide: bool,
    /// False for `tma` (cycles with a load in flight: an occupancy, not a throughput), which
    /// never binds.
    pub throughput: bool,
}

/// (key, label, GPU-wide, throughput), in the order ties break in (the generic bound's).
const SOL_UNITS: [(&str, &str, bool, bool); 14] = [
    ("tensor", "tensor pipe", false, true),
    ("smem", "shared-memory port", false, true),
    ("issue", "issue slots", false, true),
    ("mufu", "MUFU pipe", false, true),
    ("fma", "FMA pipe", false, true),
    ("alu", "ALU pipe", false, true),
    ("shfl", "shuffle pipe", false, true),
    ("tma", "TMA loads in flight", false, false),
    ("tma_fill", "TMA fill path", false, true),
    ("tma_store", "TMA store path", false, true),
    ("l1", "L1 tag stage", false, true),
    ("l2_port", "L2 port", false, true),
    ("l2", "L2 (GPU-wide)", true, true),
    ("dram", "DRAM (GPU-wide)", true, true),
];

/// A bound the run is measured against.
#[derive(Clone, Debug, PartialEq)]
pub struct Gap {
    pub cycles: u64,
    /// What binds it, as the report names it (`tensor`, `HBM`, `tensor (per wave)`).
    pub unit: String,
    /// Simulated cycles over the bound's.
    pub ratio: f64,
    /// The generic resource bound, not the scenario's own model.
    pub generic: bool,
}

impl Gap {
    /// The [`Sol`] key the bound's unit names, if any (`HBM` is `dram`, `mma` is `tensor`).
    pub fn sol_unit(&self) -> Option<&'static str> {
        let word = self.unit.split_whitespace().next()?.to_lowercase();
        let word = match word.as_str() {
            "hbm" => "dram",
            "mma" => "tensor",
            w => w,
        };
        SOL_UNITS.iter().map(|u| u.0).find(|&k| k == word)
    }
}

/// A state a role's warps spend cycles in.
#[derive(Clone, Debug, PartialEq)]
pub struct Stall {
    pub state: State,
    /// Of the role's warp-cycles.
    pub fraction: f64,
    /// Warp-cycles in it per issued instruction (Nsight Compute's Warp State Statistics).
    pub per_issued: f64,
    /// For `mbarrier_wait` the mbarriers waited on, for `wgmma_wait` where: shares, largest
    /// first.
    pub places: Vec<(String, f64)>,
}

/// Where one role's warps wait most.
#[derive(Clone, Debug, PartialEq)]
pub struct RoleStalls {
    pub role: String,
    pub warps: u64,
    pub instructions: u64,
    /// The top stall (not `selected`), and the second when it is close.
    pub top: Vec<Stall>,
}

/// Waves of CTAs and how much of the run the SMs held one.
#[derive(Clone, Debug, PartialEq)]
pub struct Waves {
    pub ctas: u64,
    pub sms: u64,
    pub sms_total: u64,
    pub ctas_per_sm: u64,
    pub waves: u64,
    pub last_wave_fill: f64,
    /// Run time summed over CTAs (each CTA from launch to its last warp's exit), when the
    /// summary holds every warp.
    pub cta_cycles: Option<u64>,
    /// The CTA slots of the SMs used over the run: `sms` × `ctas_per_sm` × cycles.
    pub slot_cycles: u64,
}

impl Waves {
    /// CTAs over the CTA slots of the waves launched.
    pub fn wave_efficiency(&self) -> f64 {
        self.ctas as f64 / (self.waves * self.sms_total * self.ctas_per_sm).max(1) as f64
    }

    /// Useful CTA-slot cycles over all of them (with one CTA per SM: the SM-cycles a CTA ran
    /// over SMs × cycles): what the tail and the gaps between CTAs leave idle.
    pub fn tail_efficiency(&self) -> Option<f64> {
        Some(self.cta_cycles? as f64 / self.slot_cycles.max(1) as f64)
    }
}

/// One memory level of the roofline: the bytes the run moved there and its roof.
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    pub name: &'static str,
    pub bytes: f64,
    /// Bytes per cycle over the SMs used.
    pub roof: f64,
}

/// The kernel's roofline, in FLOP and bytes per cycle over the SMs the run used.
#[derive(Clone, Debug, PartialEq)]
pub struct Roofline {
    pub flops: f64,
    pub cycles: f64,
    /// Tensor FLOP per cycle of the SMs used.
    pub peak: f64,
    pub sms: u64,
    pub clock_mhz: f64,
    /// Bytes per cycle one SM takes in from L2 (its port plus its TMA fill path), which caps
    /// the L2 and DRAM roofs of a run on few SMs.
    pub sm_intake: f64,
    pub levels: Vec<Level>,
}

impl Roofline {
    /// FLOP per cycle over the run.
    pub fn achieved(&self) -> f64 {
        self.flops / self.cycles.max(1.0)
    }

    /// TFLOP/s at the run's clock of `per_cycle` FLOP per cycle.
    pub fn tflops(&self, per_cycle: f64) -> f64 {
        per_cycle * self.clock_mhz / 1e6
    }

    /// GB/s at the run's clock of `per_cycle` bytes per cycle.
    pub fn gbs(&self, per_cycle: f64) -> f64 {
        per_cycle * self.clock_mhz / 1e3
    }

    pub fn intensity(&self, l: &Level) -> f64 {
        self.flops / l.bytes
    }

    /// What the roofs allow at the level's intensity (FLOP per cycle).
    pub fn attainable(&self, l: &Level) -> f64 {
        (self.intensity(l) * l.roof).min(self.peak)
    }

    /// The level whose roof allows least, when a bandwidth roof is below the peak there.
    pub fn binding_level(&self) -> Option<&Level> {
        self.levels
            .iter()
            .filter(|l| self.attainable(l) < self.peak)
            .min_by(|a, b| self.attainable(a).total_cmp(&self.attainable(b)))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Diagnosis {
    pub cycles: u64,
    /// Why the run stopped (the first line of its error): its figures end there.
    pub stopped: Option<String>,
    /// In [`SOL_UNITS`] order; units the report lacks are left out.
    pub sol: Vec<Sol>,
    /// The busiest unit that can bind (none when no unit was busy).
    pub binding: Option<Sol>,
    /// The report's `analytic` (the scenario's model, or else the generic bound).
    pub analytic: Option<Gap>,
    /// The generic resource bound, when `analytic` is the scenario's own model.
    pub generic: Option<Gap>,
    pub roles: Vec<RoleStalls>,
    pub waves: Waves,
    /// None without tensor FLOPs or without the preset's peaks in the report.
    pub roofline: Option<Roofline>,
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn int(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The diagnosis of a trace's summary (`otherData`); none without a report.
pub fn diagnose(other: &Value) -> Option<Diagnosis> {
    let r = &other["report"];
    if !r.is_object() {
        return None;
    }
    let cycles = int(&r["cycles"]).max(1);
    let sms = int(&r["sms"]).max(1);
    let peak = &r["peak"];
    let has_peak = peak.is_object();
    let dram_bytes = int(&r["dram"]["bytes"]).saturating_sub(int(&r["dram"]["flushed_bytes"]));

    let sol: Vec<Sol> = SOL_UNITS
        .iter()
        .filter_map(|&(unit, label, gpu_wide, throughput)| {
            let busy = match unit {
                "l2" if has_peak => {
                    num(&r["l2"]["bytes"]) / (cycles as f64 * num(&peak["l2_bytes_per_cycle"]))
                }
                "dram" if has_peak => {
                    dram_bytes as f64 / (cycles as f64 * num(&peak["dram_bytes_per_cycle"]))
                }
                _ => r["units"][unit]["busy"].as_f64()?,
            };
            Some(Sol {
                unit,
                label,
                busy: if busy.is_finite() { busy } else { 0.0 },
                gpu_wide,
                throughput,
            })
        })
        .collect();
    // The first of the busiest wins a tie: `max_by` would keep the last.
    let binding = sol
        .iter()
        .filter(|s| s.throughput && s.busy > 0.0)
        .fold(None::<&Sol>, |best, s| match best {
            Some(b) if b.busy >= s.busy => Some(b),
            _ => Some(s),
        })
        .cloned();

    let gap = |v: &Value, unit: &str, generic: bool| {
        Some(Gap {
            cycles: v["cycles"].as_u64()?,
            unit: v[unit].as_str()?.to_string(),
            ratio: num(&v["ratio"]),
            generic,
        })
    };
    let generic_note = r["analytic"]["note"] == "generic resource bound";
    let analytic = gap(&r["analytic"], "bound", generic_note);
    let generic = if generic_note {
        None
    } else {
        gap(&r["bound"], "binding", true)
    };

    let roles = role_rows(other)
        .into_iter()
        .map(|row| {
            let instructions = int(&r["roles"][&row.name]["instructions"]);
            let stall = |(state, c): (State, u64)| {
                let places = match state {
                    State::MbarrierWait => &row.mbarrier_waits,
                    State::WgmmaWait => &row.wgmma_waits,
                    _ => &BTreeMap::new(),
                };
                Stall {
                    state,
                    fraction: c as f64 / row.cycles.max(1) as f64,
                    per_issued: c as f64 / instructions.max(1) as f64,
                    places: ranked_shares(places)
                        .into_iter()
                        .map(|(p, f)| (p.to_string(), f))
                        .collect(),
                }
            };
            let ranked: Vec<(State, u64)> = row
                .ranked()
                .into_iter()
                .filter(|(s, _)| *s != State::Selected)
                .collect();
            let mut top: Vec<Stall> = ranked.iter().take(1).map(|&s| stall(s)).collect();
            if let (Some(&first), Some(&second)) = (ranked.first(), ranked.get(1)) {
                if second.1 as f64 >= SECOND_STALL * first.1 as f64 {
                    top.push(stall(second));
                }
            }
            RoleStalls {
                role: row.name.clone(),
                warps: row.warps,
                instructions,
                top,
            }
        })
        .collect();

    let ctas_per_sm = int(&r["ctas_per_sm"]).max(1);
    let warps = other["warps"].as_array();
    let complete = other["warps_omitted"].is_null() && warps.is_some_and(|w| !w.is_empty());
    let cta_cycles = complete.then(|| {
        // Every warp of a CTA launches with it: the CTA runs until its last warp exits.
        let mut per_cta: BTreeMap<u64, u64> = BTreeMap::new();
        for w in warps.into_iter().flatten() {
            let c = per_cta.entry(int(&w["cta"])).or_default();
            *c = (*c).max(int(&w["lifetime"]));
        }
        per_cta.values().sum()
    });
    let waves = Waves {
        ctas: int(&r["ctas"]),
        sms,
        sms_total: int(&r["sms_total"]).max(1),
        ctas_per_sm,
        waves: int(&r["waves"]).max(1),
        last_wave_fill: num(&r["last_wave_fill"]),
        cta_cycles,
        slot_cycles: sms * ctas_per_sm * cycles,
    };

    let flops = num(&r["flops"]);
    let roofline = (has_peak && flops > 0.0).then(|| {
        let p = |k: &str| num(&peak[k]);
        let sm_intake = p("l2_port_bytes_per_cycle") + p("tma_fill_bytes_per_cycle");
        let intake = sm_intake * sms as f64;
        let smem_bytes =
            num(&r["units"]["smem"]["busy"]) * (cycles * sms) as f64 * p("smem_bytes_per_cycle");
        let levels = [
            (
                "shared memory",
                smem_bytes,
                p("smem_bytes_per_cycle") * sms as f64,
            ),
            (
                "L2",
                num(&r["l2"]["bytes"]),
                p("l2_bytes_per_cycle").min(intake),
            ),
            (
                "DRAM",
                dram_bytes as f64,
                p("dram_bytes_per_cycle").min(intake),
            ),
        ]
        .into_iter()
        .filter(|&(_, bytes, roof)| bytes > 0.0 && roof > 0.0)
        .map(|(name, bytes, roof)| Level { name, bytes, roof })
        .collect();
        Roofline {
            flops,
            cycles: cycles as f64,
            peak: p("tensor_flops_per_cycle") * sms as f64,
            sms,
            clock_mhz: num(&r["clock_mhz"]),
            sm_intake,
            levels,
        }
    });

    Some(Diagnosis {
        cycles,
        // `FILE: deadlock at cycle N: …:` without the file the page names already.
        stopped: other["error"].as_str().and_then(|e| {
            let line = e.lines().next()?;
            let file = other["file"].as_str().map(|f| format!("{f}: "));
            let line = file.and_then(|f| line.strip_prefix(&f)).unwrap_or(line);
            Some(line.trim_end_matches(':').to_string())
        }),
        sol,
        binding,
        analytic,
        generic,
        roles,
        waves,
        roofline,
    })
}

fn pct(f: f64) -> String {
    format!("{:.1}%", 100.0 * f)
}

/// `on empty 99%, full 1%` (mbarriers) or `(wgmma.wait_group 65%, HGMMA issue 35%)`.
fn places(s: &Stall) -> String {
    let list = |f: &dyn Fn(&str) -> String| {
        s.places
            .iter()
            .take(3)
            .map(|(p, share)| format!("{} {:.0}%", f(p), 100.0 * share))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match s.state {
        _ if s.places.is_empty() => String::new(),
        State::MbarrierWait => format!(" on {}", list(&|p| p.to_string())),
        State::WgmmaWait => format!(
            " ({})",
            list(&|p| match p {
                "wait_group" => "wgmma.wait_group".to_string(),
                "issue" => "HGMMA issue".to_string(),
                other => other.to_string(),
            })
        ),
        _ => String::new(),
    }
}

impl Diagnosis {
    /// The binding unit's busy fraction over the cycles its SMs held a CTA, when that differs
    /// from its busy fraction over the run (one CTA per SM, a tail below [`TAIL_WARN`]).
    pub fn busy_while_resident(&self) -> Option<f64> {
        let b = self.binding.as_ref()?;
        let tail = self.waves.tail_efficiency()?;
        (!b.gpu_wide && self.waves.ctas_per_sm == 1 && tail < TAIL_WARN && tail > 0.0)
            .then(|| (b.busy / tail).min(1.0))
    }

    /// No unit reaches [`LATENCY_BOUND`] of its peak, even over the cycles a CTA ran.
    pub fn latency_bound(&self) -> bool {
        let best = self
            .busy_while_resident()
            .or(self.binding.as_ref().map(|b| b.busy));
        best.is_none_or(|b| b < LATENCY_BOUND)
    }

    /// One line: what binds the run and where its warps wait.
    pub fn verdict(&self) -> String {
        let mut parts = Vec::new();
        if let Some(e) = &self.stopped {
            parts.push(format!("the run stopped ({e}), figures up to there"));
        }
        let w = &self.waves;
        if let Some(t) = w.tail_efficiency().filter(|&t| t < TAIL_WARN) {
            parts.push(format!(
                "tail: the SMs held a CTA {} of the run ({} wave(s), the last {:.0}% full)",
                pct(t),
                w.waves,
                100.0 * w.last_wave_fill
            ));
        }
        match &self.binding {
            None => parts.push("no unit was busy".to_string()),
            Some(b) if self.latency_bound() => parts.push(format!(
                "no unit reaches {:.0}% busy (the busiest, the {}, {}) — latency-bound",
                100.0 * LATENCY_BOUND,
                b.label,
                pct(b.busy)
            )),
            Some(b) => {
                let resident = self
                    .busy_while_resident()
                    .map(|f| format!(", {} while a CTA ran", pct(f)))
                    .unwrap_or_default();
                let gap = self
                    .analytic
                    .as_ref()
                    .map(|a| {
                        format!(
                            "; {:.3}× the {} bound ({} cycles, {})",
                            a.ratio,
                            if a.generic { "generic" } else { "analytic" },
                            grouped(a.cycles),
                            a.unit
                        )
                    })
                    .unwrap_or_default();
                parts.push(format!(
                    "{} {} busy{resident} — binding{gap}",
                    b.label,
                    pct(b.busy)
                ));
            }
        }
        for r in self.roles.iter().filter(|r| !r.top.is_empty()) {
            let waits: Vec<String> = r
                .top
                .iter()
                .map(|s| format!("{} in {}{}", pct(s.fraction), s.state.name(), places(s)))
                .collect();
            parts.push(format!("{} warps wait {}", r.role, waits.join(", ")));
        }
        parts.join("; ")
    }

    /// Sentences under the verdict, each with its topic: the binding unit, the bound, each
    /// role's stalls, the waves and the roofline.
    pub fn findings(&self) -> Vec<(String, String)> {
        let mut o = Vec::new();
        if let Some(e) = &self.stopped {
            o.push((
                "stopped".into(),
                format!("{e}. Every figure here covers the run up to that cycle."),
            ));
        }
        let w = &self.waves;
        let over = format!(
            "averaged over the {} SM{} that ran CTAs",
            w.sms,
            if w.sms == 1 { "" } else { "s" }
        );
        match &self.binding {
            None => o.push(("binding".into(), "No unit was busy.".to_string())),
            Some(b) => {
                let scope = if b.gpu_wide {
                    "of the GPU's capacity".to_string()
                } else {
                    over
                };
                let text = if self.latency_bound() {
                    format!(
                        "No unit reaches {:.0}% of its peak (Nsight Compute's threshold for a latency-bound kernel): the busiest is the {} at {} ({scope}). The warps wait more than the units work; their stalls are below.",
                        100.0 * LATENCY_BOUND,
                        b.label,
                        pct(b.busy)
                    )
                } else {
                    let resident = self
                        .busy_while_resident()
                        .map(|f| format!(", {} of the cycles its SMs held a CTA", pct(f)))
                        .unwrap_or_default();
                    format!(
                        "The {} is {} busy ({scope}{resident}): the busiest unit that can bind, idle {} of the run.",
                        b.label,
                        pct(b.busy),
                        pct(1.0 - b.busy)
                    )
                };
                o.push(("binding".into(), text));
            }
        }
        match &self.analytic {
            Some(a) => {
                let mut text = format!(
                    "{} cycles simulated: {:.3}× the {} of {} cycles (bound by {}), {} {} it.",
                    grouped(self.cycles),
                    a.ratio,
                    if a.generic {
                        "generic resource bound"
                    } else {
                        "scenario's analytic bound"
                    },
                    grouped(a.cycles),
                    a.unit,
                    pct((a.ratio - 1.0).abs()),
                    // Only a run that stopped early ends below its bound.
                    if a.ratio >= 1.0 { "above" } else { "below" }
                );
                if let (Some(b), Some(unit)) = (&self.binding, a.sol_unit()) {
                    if unit != b.unit && !self.latency_bound() {
                        text.push_str(&format!(
                            " The bound names {}; the run's busiest unit is the {}.",
                            a.unit, b.label
                        ));
                    }
                }
                if let Some(g) = &self.generic {
                    if g.cycles != a.cycles || g.sol_unit() != a.sol_unit() {
                        text.push_str(&format!(
                            " The generic resource bound: {} cycles, binding unit {} ({:.3}×).",
                            grouped(g.cycles),
                            g.unit,
                            g.ratio
                        ));
                    }
                }
                o.push(("bound".into(), text));
            }
            None => o.push((
                "bound".into(),
                "No bound: the scenario states no analytic prediction and the generic bound could not be computed.".to_string(),
            )),
        }
        for r in &self.roles {
            let head = format!(
                "{} warp{}, {} instructions",
                r.warps,
                if r.warps == 1 { "" } else { "s" },
                grouped(r.instructions)
            );
            let stalls: Vec<String> = r
                .top
                .iter()
                .map(|s| {
                    format!(
                        "{} {} of its warp-cycles [{}], {:.2} cycles per issued instruction{}",
                        s.state.name(),
                        pct(s.fraction),
                        s.state.ncu(),
                        s.per_issued,
                        places(s)
                    )
                })
                .collect();
            let text = if stalls.is_empty() {
                format!("{head}: no stall (its warps issued every cycle).")
            } else {
                format!("{head}: waits most in {}.", stalls.join("; then "))
            };
            o.push((r.role.clone(), text));
        }
        let slots = w.sms_total * w.ctas_per_sm;
        let mut text = format!(
            "{} CTA{} on {} of {} SMs, {} per SM: {} wave{} of {} CTA slots, the last {:.0}% full; wave efficiency {} (CTAs / slots of the waves launched).",
            w.ctas,
            if w.ctas == 1 { "" } else { "s" },
            w.sms,
            w.sms_total,
            w.ctas_per_sm,
            w.waves,
            if w.waves == 1 { "" } else { "s" },
            slots,
            100.0 * w.last_wave_fill,
            pct(w.wave_efficiency())
        );
        match (w.tail_efficiency(), w.cta_cycles) {
            (Some(t), Some(c)) => text.push_str(&format!(
                " Tail efficiency {}: the CTAs ran {} CTA-cycles of the {} that {} SM{} × {} slot{} × {} cycles hold (each CTA from launch to its last warp's exit).",
                pct(t),
                grouped(c),
                grouped(w.slot_cycles),
                w.sms,
                if w.sms == 1 { "" } else { "s" },
                w.ctas_per_sm,
                if w.ctas_per_sm == 1 { "" } else { "s" },
                grouped(self.cycles)
            )),
            _ => text.push_str(
                " Tail efficiency unknown: the trace's summary lacks some warps' lifetimes.",
            ),
        }
        if w.sms < w.sms_total {
            text.push_str(&format!(" {} SMs ran no CTA.", w.sms_total - w.sms));
        }
        o.push(("waves".into(), text));
        match &self.roofline {
            Some(rf) => {
                let at: Vec<String> = rf
                    .levels
                    .iter()
                    .map(|l| {
                        format!(
                            "{} {:.1} FLOP/B (roof {:.1} TFLOP/s)",
                            l.name,
                            rf.intensity(l),
                            rf.tflops(rf.attainable(l))
                        )
                    })
                    .collect();
                let limit = match rf.binding_level() {
                    Some(l) => format!(
                        "the {} roof binds: {} of what it allows",
                        l.name,
                        pct(rf.achieved() / rf.attainable(l))
                    ),
                    None => format!(
                        "compute-bound at every level: {} of the tensor peak",
                        pct(rf.achieved() / rf.peak)
                    ),
                };
                o.push((
                    "roofline".into(),
                    format!(
                        "{:.1} TFLOP/s achieved against a tensor peak of {:.1} TFLOP/s for {} SM{}; {}; {limit}.",
                        rf.tflops(rf.achieved()),
                        rf.tflops(rf.peak),
                        rf.sms,
                        if rf.sms == 1 { "" } else { "s" },
                        at.join(", ")
                    ),
                ));
            }
            None => o.push((
                "roofline".into(),
                "No roofline: the run executed no tensor FLOPs (FMA work is not counted as FLOP), or its report lacks the preset's peaks.".to_string(),
            )),
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A run of `ctas` one-warp CTAs on `sms` of 132 SMs over 1000 cycles, each CTA's warp
    /// living `life` cycles, with the given unit busy fractions.
    fn summary(units: Value, ctas: u64, sms: u64, life: u64) -> Value {
        let waves = ctas.div_ceil(132);
        json!({
            "role_order": ["producer", "consumer"],
            "report": {
                "cycles": 1000, "sms": sms, "sms_total": 132, "ctas": ctas, "ctas_per_sm": 1,
                "waves": waves, "last_wave_fill": (ctas - (waves - 1) * 132) as f64 / 132.0,
                "clock_mhz": 2000.0, "flops": 2_048_000,
                "l2": {"bytes": 64_000}, "dram": {"bytes": 40_000, "flushed_bytes": 8_000},
                "units": units,
                "peak": {
                    "tensor_flops_per_cycle": 4096, "smem_bytes_per_cycle": 128,
                    "l2_port_bytes_per_cycle": 64.0, "tma_fill_bytes_per_cycle": 100.0,
                    "l2_bytes_per_cycle": 5000.0, "dram_bytes_per_cycle": 1600.0
                },
                "analytic": {"cycles": 800, "bound": "tensor", "ratio": 1.25, "note": ""},
                "bound": {"cycles": 700, "binding": "smem", "ratio": 1000.0 / 700.0},
                "roles": {
                    "producer": {
                        "warps": 1, "lifetime": 1000, "instructions": 50,
                        "states": {"selected": 50, "mbarrier_wait": 900, "mio_throttle": 50},
                        "mbarrier_waits": {"empty": 675, "full": 225}, "wgmma_waits": {}
                    },
                    "consumer": {
                        "warps": 2, "lifetime": 2000, "instructions": 400,
                        "states": {"selected": 400, "wgmma_wait": 800, "mbarrier_wait": 500,
                                   "math_pipe_throttle": 300},
                        "mbarrier_waits": {"full": 500},
                        "wgmma_waits": {"wait_group": 600, "issue": 200}
                    }
                }
            },
            "warps": (0..ctas).map(|c| json!({"cta": c, "lifetime": life})).collect::<Vec<_>>()
        })
    }

    fn busy(pairs: &[(&str, f64)]) -> Value {
        pairs
            .iter()
            .map(|&(k, b)| (k.to_string(), json!({ "busy": b })))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    #[test]
    fn the_busiest_throughput_unit_binds_and_tma_in_flight_never_does() {
        let units = busy(&[("tensor", 0.74), ("smem", 0.5), ("tma", 0.95), ("fma", 0.1)]);
        let d = diagnose(&summary(units, 1, 1, 1000)).unwrap();
        let b = d.binding.as_ref().unwrap();
        assert_eq!((b.unit, b.busy), ("tensor", 0.74));
        assert!(!d.latency_bound());
        assert!(
            d.verdict()
                .starts_with("tensor pipe 74.0% busy — binding; "),
            "{}",
            d.verdict()
        );
        // GPU-wide: 64,000 B of 5,000 B/cycle over 1000 cycles; DRAM without the final flush.
        let sol: BTreeMap<&str, f64> = d.sol.iter().map(|s| (s.unit, s.busy)).collect();
        assert!((sol["l2"] - 0.0128).abs() < 1e-12);
        assert!((sol["dram"] - 32_000.0 / 1_600_000.0).abs() < 1e-12);
        assert!(
            !sol.contains_key("alu"),
            "units the report lacks are left out"
        );
    }

    #[test]
    fn ties_go_to_the_first_unit_and_no_unit_below_sixty_percent_binds() {
        let units = busy(&[("smem", 0.5), ("tensor", 0.5), ("mufu", 0.2)]);
        let d = diagnose(&summary(units, 1, 1, 1000)).unwrap();
        assert_eq!(d.binding.as_ref().unwrap().unit, "tensor");
        assert!(d.latency_bound());
        assert!(d.verdict().starts_with(
            "no unit reaches 60% busy (the busiest, the tensor pipe, 50.0%) — latency-bound"
        ));
        let mut s = summary(busy(&[("tensor", 0.0)]), 1, 1, 1000);
        s["report"]["l2"]["bytes"] = json!(0);
        s["report"]["dram"]["bytes"] = json!(8_000);
        let idle = diagnose(&s).unwrap();
        assert_eq!(idle.binding, None);
        assert!(idle.verdict().starts_with("no unit was busy"));
    }

    #[test]
    fn the_bound_gap_names_both_bounds_when_they_differ() {
        let d = diagnose(&summary(busy(&[("tensor", 0.9)]), 1, 1, 1000)).unwrap();
        let a = d.analytic.as_ref().unwrap();
        assert_eq!(
            (a.cycles, a.generic, a.sol_unit()),
            (800, false, Some("tensor"))
        );
        let g = d.generic.as_ref().unwrap();
        assert_eq!((g.cycles, g.sol_unit()), (700, Some("smem")));
        let bound = &d.findings()[1].1;
        assert!(
            bound.starts_with("1,000 cycles simulated: 1.250× the scenario's analytic bound of 800 cycles (bound by tensor), 25.0% above it."),
            "{bound}"
        );
        assert!(bound.contains("generic resource bound: 700 cycles, binding unit smem (1.429×)"));
        let named = |u: &str| Gap {
            cycles: 1,
            unit: u.into(),
            ratio: 1.0,
            generic: false,
        };
        assert_eq!(named("HBM").sol_unit(), Some("dram"));
        assert_eq!(named("tensor (per wave)").sol_unit(), Some("tensor"));
        assert_eq!(named("launch").sol_unit(), None);
    }

    #[test]
    fn each_role_names_its_top_stall_and_where_it_waits() {
        let d = diagnose(&summary(busy(&[("tensor", 0.9)]), 1, 1, 1000)).unwrap();
        let p = &d.roles[0];
        assert_eq!((p.role.as_str(), p.top.len()), ("producer", 1));
        let s = &p.top[0];
        assert_eq!(
            (s.state, s.fraction, s.per_issued),
            (State::MbarrierWait, 0.9, 18.0)
        );
        assert_eq!(
            s.places,
            vec![("empty".to_string(), 0.75), ("full".to_string(), 0.25)]
        );
        // The consumer's second stall (500) is within half of its first (800): both named.
        let c = &d.roles[1];
        let states: Vec<State> = c.top.iter().map(|s| s.state).collect();
        assert_eq!(states, [State::WgmmaWait, State::MbarrierWait]);
        let v = d.verdict();
        assert!(
            v.contains("producer warps wait 90.0% in mbarrier_wait on empty 75%, full 25%"),
            "{v}"
        );
        assert!(
            v.ends_with("consumer warps wait 40.0% in wgmma_wait (wgmma.wait_group 75%, HGMMA issue 25%), 25.0% in mbarrier_wait on full 100%"),
            "{v}"
        );
        let f = &d.findings()[3].1;
        assert!(f.starts_with("2 warps, 400 instructions: waits most in wgmma_wait 40.0% of its warp-cycles [barrier], 2.00 cycles per issued instruction"), "{f}");
    }

    #[test]
    fn wave_and_tail_efficiency_count_the_last_wave() {
        // 133 CTAs: 2 waves, the second holds one CTA; every CTA runs 500 of 1000 cycles.
        let d = diagnose(&summary(busy(&[("tensor", 0.498)]), 133, 132, 500)).unwrap();
        let w = &d.waves;
        assert_eq!(w.waves, 2);
        assert!((w.wave_efficiency() - 133.0 / 264.0).abs() < 1e-12);
        assert_eq!((w.cta_cycles, w.slot_cycles), (Some(66_500), 132_000));
        let tail = w.tail_efficiency().unwrap();
        assert!((tail - 66_500.0 / 132_000.0).abs() < 1e-12);
        // Busy 49.8% over the run is 98.9% while a CTA ran: the tensor pipe binds.
        assert!((d.busy_while_resident().unwrap() - 0.498 / tail).abs() < 1e-12);
        assert!(!d.latency_bound());
        assert!(
            d.verdict().starts_with("tail: the SMs held a CTA 50.4% of the run (2 wave(s), the last 1% full); tensor pipe 49.8% busy, 98.9% while a CTA ran — binding; 1.250×"),
            "{}",
            d.verdict()
        );
        // A summary that left warps out cannot say.
        let mut s = summary(busy(&[("tensor", 0.5)]), 133, 132, 500);
        s["warps_omitted"] = json!(5);
        assert_eq!(diagnose(&s).unwrap().waves.tail_efficiency(), None);
    }

    #[test]
    fn the_tail_of_multi_cta_waves_uses_the_slowest_warp_of_each_cta() {
        let mut s = summary(busy(&[("tensor", 0.9)]), 2, 1, 0);
        s["warps"] = json!([
            {"cta": 0, "lifetime": 1}, {"cta": 0, "lifetime": 400},
            {"cta": 1, "lifetime": 300}, {"cta": 1, "lifetime": 500}
        ]);
        s["report"]["ctas_per_sm"] = json!(2);
        let w = diagnose(&s).unwrap().waves;
        assert_eq!((w.cta_cycles, w.slot_cycles), (Some(900), 2000));
    }

    #[test]
    fn roofline_levels_use_the_bytes_moved_and_the_sms_roofs() {
        let units = busy(&[("tensor", 0.5), ("smem", 0.25)]);
        let d = diagnose(&summary(units, 1, 1, 1000)).unwrap();
        let rf = d.roofline.as_ref().unwrap();
        assert_eq!(
            (rf.peak, rf.achieved(), rf.sm_intake),
            (4096.0, 2048.0, 164.0)
        );
        let by: BTreeMap<&str, &Level> = rf.levels.iter().map(|l| (l.name, l)).collect();
        // Shared memory: 25% of 1000 cycles × 128 B; L2 and DRAM capped at one SM's intake.
        assert_eq!(
            (by["shared memory"].bytes, by["shared memory"].roof),
            (32_000.0, 128.0)
        );
        assert_eq!((by["L2"].bytes, by["L2"].roof), (64_000.0, 164.0));
        assert_eq!((by["DRAM"].bytes, by["DRAM"].roof), (32_000.0, 164.0));
        assert_eq!(rf.intensity(by["L2"]), 32.0);
        // 64 FLOP/B × 128 B/cycle is above the peak: compute-bound at every level.
        assert_eq!(rf.attainable(by["shared memory"]), 4096.0);
        assert_eq!(rf.binding_level(), None);
        assert!((rf.tflops(rf.peak) - 8.192).abs() < 1e-12);
        // On every SM the GPU-wide rates are below the SMs' intake: at 32 FLOP/B L2's 5000
        // B/cycle allow 160,000 FLOP/cycle, at 64 FLOP/B DRAM's 1600 allow 102,400, both
        // under the 540,672 peak; DRAM allows least.
        let rf = diagnose(&summary(busy(&[("tensor", 0.5)]), 132, 132, 1000))
            .unwrap()
            .roofline
            .unwrap();
        let l2 = rf.levels.iter().find(|l| l.name == "L2").unwrap();
        assert_eq!((l2.roof, rf.attainable(l2)), (5000.0, 160_000.0));
        let dram = rf.binding_level().unwrap();
        assert_eq!((dram.name, rf.attainable(dram)), ("DRAM", 102_400.0));
        // Without tensor FLOPs there is no point to draw.
        let mut s = summary(busy(&[("fma", 0.9)]), 1, 1, 1000);
        s["report"]["flops"] = json!(0);
        assert_eq!(diagnose(&s).unwrap().roofline, None);
    }

    #[test]
    fn a_run_that_stopped_says_so_first() {
        let mut s = summary(busy(&[("tensor", 0.9)]), 1, 1, 1000);
        s["file"] = json!("x.ron");
        s["error"] = json!("x.ron: deadlock at cycle 1000: 2 warps cannot proceed:\n  CTA 0 …");
        s["report"]["analytic"]["ratio"] = json!(0.5);
        let d = diagnose(&s).unwrap();
        assert!(d.verdict().starts_with(
            "the run stopped (deadlock at cycle 1000: 2 warps cannot proceed), figures up to there; tensor pipe 90.0% busy"
        ), "{}", d.verdict());
        assert!(d.findings()[2]
            .1
            .contains("(bound by tensor), 50.0% below it."));
        assert_eq!(d.findings()[0].0, "stopped");
        assert_eq!(diagnose(&json!({"report": null, "warps": []})), None);
    }
}
