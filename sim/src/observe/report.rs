//! What a run reports: the `--json` object (a stable interface, documented in `docs/cli.md`) and
//! the readable summary printed by `sim run`.

use crate::analytic::bound::{Bound, BoundError};
use crate::analytic::fmt::grouped;
use crate::engine::RunStats;
use crate::gpu::cta_scheduler::max_active_clusters;
use crate::gpu::preset::Preset;
use crate::observe::ncu;
use crate::observe::warp_state::State;
use comfy_table::{presets, CellAlignment, ColumnConstraint, Table, Width};
use isa::program::{Kernel, WARP_SIZE};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// A kernel's thread-block clusters, as the CTA scheduler places them.
#[derive(Clone, Debug, Serialize)]
pub struct ClusterReport {
    /// CTAs per cluster.
    pub size: u32,
    /// Clusters resident at once (`cudaOccupancyMaxActiveClusters`).
    pub active: u32,
    /// CTA slots no cluster can use at once.
    pub idle_slots: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub scenario: String,
    pub gpu: String,
    pub seed: u64,
    pub params: BTreeMap<String, i64>,
    /// The parameters derived from others, with their values (in `params` too; the summary's
    /// `derived` line).
    #[serde(skip)]
    pub derived: BTreeMap<String, i64>,
    /// The scenario's tables (left out when it has none).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tables: BTreeMap<String, Vec<i64>>,
    /// SMs that ran at least one CTA (unit busy fractions are averaged over them).
    pub sms: u32,
    /// SMs of the GPU.
    pub sms_total: u32,
    pub ctas: u32,
    /// CTAs resident per SM at once (occupancy), and the limit that sets it.
    pub ctas_per_sm: u32,
    pub occupancy_limiter: String,
    /// CTAs per thread-block cluster, and the clusters the GPU holds at once (a cluster stays
    /// on one GPC, so GPCs may leave CTA slots idle); absent without clusters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clusters: Option<ClusterReport>,
    /// ⌈CTAs / CTA slots⌉: the slots are SMs × CTAs per SM, or with clusters the clusters that
    /// fit at once × their size.
    pub waves: u32,
    /// CTA slots the last wave uses, as a fraction of a full wave.
    pub last_wave_fill: f64,
    /// How many SMs ran how many CTAs over the run: {"CTAs": SMs}.
    pub sm_ctas: BTreeMap<u32, u32>,
    pub cycles: u64,
    /// The SM clock that turns cycles into time and rates.
    pub clock_mhz: f64,
    /// `sustained` (the preset's sustained clock at `tensor_load`) or `command-line`.
    pub clock_source: String,
    /// Tensor busy cycles summed over the SMs / (the GPU's SMs × cycles), idle SMs included.
    pub tensor_load: f64,
    /// The clock at which the simulation turned HBM bandwidth into bytes per cycle.
    pub reference_clock_mhz: f64,
    pub time_us: f64,
    /// Tensor-core FLOPs executed and their rate at `clock_mhz`.
    pub flops: u64,
    pub tflops: f64,
    pub instructions: u64,
    /// The SMs' L1 data caches as global loads used them; absent when no load went through one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l1: Option<L1Report>,
    pub l2: L2Report,
    pub dram: DramReport,
    pub units: BTreeMap<String, Unit>,
    /// The preset's peak rates, for the fractions `sim report` computes (its roofline).
    pub peak: Peak,
    pub schedulers: Schedulers,
    pub roles: BTreeMap<String, Role>,
    /// The figures above under Nsight Compute's metric names, with speed-of-light percentages
    /// per unit and the Warp State Statistics over every warp ([`ncu::metrics`]).
    pub ncu: BTreeMap<String, f64>,
    /// The scenario's own prediction, or else the generic bound's.
    pub analytic: Option<Analytic>,
    /// The generic resource bound (`docs/analytic.md`), reported for every scenario so those with
    /// their own model show both; null when the walk could not bound the kernel.
    pub bound: Option<BoundReport>,
    /// Why `bound` is null (for the summary).
    #[serde(skip)]
    pub bound_error: Option<String>,
    /// Engine work: events pushed on the queue.
    pub events: u64,
    /// The trace this run wrote, if any.
    pub trace: Option<TraceReport>,
    /// Role names in the kernel's order (for the summary; the JSON maps are sorted by name).
    #[serde(skip)]
    pub role_order: Vec<String>,
}

/// Where the run's trace went.
#[derive(Clone, Debug, Serialize)]
pub struct TraceReport {
    pub path: String,
    pub events: u64,
    /// Set when the trace holds only some SMs' warps by default: which, and how to get all.
    pub limited: Option<String>,
    /// Set when the trace reached its size limit (`max_bytes`): the cycle of the first event
    /// it left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated_at: Option<u64>,
    #[serde(skip)]
    pub max_bytes: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct L1Report {
    /// Sectors looked up that hit (a sector still being filled counts as a hit).
    pub hit_rate: f64,
    /// Sectors global loads looked up.
    pub sectors: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct L2Report {
    /// Line accesses that hit (a hit on a line still being filled counts as a hit).
    pub hit_rate: f64,
    /// Bytes the SMs read from and wrote to L2.
    pub bytes: u64,
    /// The part of `bytes` read on another SM's read-out of the same line (GPC-local sharing,
    /// `memory.l2.merge_cycles`): the slices moved `bytes - shared_bytes`.
    pub shared_bytes: u64,
    pub bandwidth_gbs: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct DramReport {
    /// Read plus written bytes (dirty lines left in L2 count as written).
    pub bytes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// The problem's minimum: every tensor that starts in DRAM (not `warm`) moved once.
    pub min_bytes: u64,
    /// The part of `write_bytes` still dirty in L2 when the kernel ended.
    pub flushed_bytes: u64,
    /// Bytes moved during the kernel (not the final flush of dirty L2 lines) over its time.
    pub bandwidth_gbs: f64,
}

/// Nsight Compute's per-scheduler averages (its Scheduler Statistics), over the run's cycles on
/// the SMs that ran CTAs, one scheduler per partition.
#[derive(Clone, Debug, Serialize)]
pub struct Schedulers {
    /// Resident warps per scheduler per cycle (`smsp__warps_active.avg.per_cycle_active`).
    pub active_warps: f64,
    /// Warps ready to issue (`selected` or `not_selected`) per scheduler per cycle
    /// (`smsp__warps_eligible.avg.per_cycle_active`).
    pub eligible_warps: f64,
    /// Warp-instructions issued per scheduler per cycle (`smsp__issue_active.avg.per_cycle_active`).
    pub issued_per_cycle: f64,
}

/// Peak rates of the preset the run used, per cycle: per SM unless marked GPU-wide.
#[derive(Clone, Debug, Serialize)]
pub struct Peak {
    /// Dense 16-bit tensor FLOP (`tensor.flops_per_cycle`).
    pub tensor_flops_per_cycle: u64,
    /// The shared-memory port (`smem.banks` × `smem.bank_bytes`).
    pub smem_bytes_per_cycle: u64,
    /// The SM's port to L2 (`memory.sm_bytes_per_cycle`).
    pub l2_port_bytes_per_cycle: f64,
    /// The SM's TMA fill path from L2 into shared memory at its fastest (boxes into slots with
    /// the 128-byte swizzle: `tma.fill_swizzled_bytes_per_cycle`, else `tma.fill_bytes_per_cycle`).
    pub tma_fill_bytes_per_cycle: f64,
    /// The SM's TMA store path towards L2 (`tma.store_bytes_per_cycle`).
    pub tma_store_bytes_per_cycle: f64,
    /// GPU-wide: L2 back to the SMs (`memory.l2.bytes_per_cycle`).
    pub l2_bytes_per_cycle: f64,
    /// GPU-wide: sustained HBM bandwidth at `reference_clock_mhz`, as the simulation used it.
    pub dram_bytes_per_cycle: f64,
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
    /// The longest-lived warp's lifetime (what `sim validate` times one warp of a role by).
    #[serde(skip)]
    pub longest: u64,
    pub instructions: u64,
    /// Active lanes summed over `instructions` (what `divergence` is computed from).
    #[serde(skip)]
    pub lanes: u64,
    /// Warp-cycles in each state of the taxonomy (`docs/stalls.md`).
    pub states: BTreeMap<String, u64>,
    /// The same warp-cycles grouped by Nsight Compute stall reason.
    pub ncu: BTreeMap<String, u64>,
    /// Those over the role's issued instructions: Nsight Compute's "warp cycles per issued
    /// instruction" per stall reason (Warp State Statistics).
    pub cycles_per_issued: BTreeMap<String, f64>,
    /// `mbarrier_wait` warp-cycles by the mbarrier waited on (its sub-reasons).
    pub mbarrier_waits: BTreeMap<String, u64>,
    /// `wgmma_wait` warp-cycles by where they were spent: `issue` (the issue gap, or HGMMAs in
    /// flight at the limit) and `wait_group`.
    pub wgmma_waits: BTreeMap<String, u64>,
    /// Present when the role's register estimate exceeds its budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spill: Option<Spill>,
    /// Present when some of the role's warp-instructions ran with lanes masked off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub divergence: Option<Divergence>,
}

/// How many lanes a diverging role's warp-instructions ran with (`isa::divergence`).
#[derive(Clone, Debug, Serialize)]
pub struct Divergence {
    /// Active lanes per issued warp-instruction: Nsight Compute's "avg. threads executed per
    /// instruction" (`smsp__thread_inst_executed_per_inst_executed.ratio`).
    pub threads_per_instruction: f64,
    /// That over 32: the warp execution efficiency
    /// (`smsp__thread_inst_executed_per_inst_executed.pct` / 100).
    pub efficiency: f64,
}

/// A spilling role's registers per thread and its local-memory traffic (`crate::sm::local`).
#[derive(Clone, Debug, Serialize)]
pub struct Spill {
    /// The register estimate (live values, wgmma accumulators, baseline) and the budget.
    pub registers: u32,
    pub live: u32,
    pub accumulators: u32,
    pub baseline: u32,
    pub budget: u32,
    /// Registers per thread kept in local memory, and their bytes.
    pub spilled: u32,
    pub bytes_per_thread: u64,
    /// Local loads and stores (warp-instructions of 128 bytes each), and the fraction of both
    /// that hit the L1.
    pub local_loads: u64,
    pub local_stores: u64,
    pub l1_hit_rate: f64,
}

impl Spill {
    /// The one-line warning `sim run` prints for role `name`.
    pub fn warning(&self, name: &str) -> String {
        format!(
            "role `{name}` needs {} registers per thread ({} live + {} accumulators + {} baseline) and has {}: {} spill to local memory, {} bytes per thread",
            self.registers,
            self.live,
            self.accumulators,
            self.baseline,
            self.budget,
            self.spilled,
            self.bytes_per_thread
        )
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Analytic {
    pub cycles: i64,
    pub bound: String,
    /// Simulated cycles / analytic cycles.
    pub ratio: f64,
    pub note: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct BoundReport {
    pub cycles: u64,
    /// The unit whose demand over capacity is largest.
    pub binding: String,
    /// Simulated cycles / bound cycles (at least about 1: the bound is a lower bound).
    pub ratio: f64,
    /// Every unit's demand over capacity, in cycles.
    pub units: BTreeMap<String, f64>,
}

/// The note of an `analytic` entry filled from the generic bound.
const GENERIC_NOTE: &str = "generic resource bound";

impl Report {
    /// The report without the generic bound (see [`Report::with_bound`]), its time at
    /// `clock_mhz` or else at the preset's sustained clock for the run's tensor load;
    /// `reference_mhz` is the clock the simulation converted HBM bandwidth at.
    pub fn new(
        k: &Kernel,
        p: &Preset,
        s: &RunStats,
        seed: u64,
        clock_mhz: Option<f64>,
        reference_mhz: f64,
    ) -> Self {
        let cycles = s.cycles.max(1);
        let u = &s.units;
        // wgmma math cycles on the SM's tensor pipe plus mma.sync cycles on the partitions'
        // tensor cores, over every SM of the GPU: the power cap is GPU-wide.
        let parts = s.partitions as u64;
        let tensor_load =
            (u.tensor as f64 + u.mma as f64 / parts as f64) / (cycles as f64 * p.sm.count as f64);
        let (clock, source) = match clock_mhz {
            Some(c) => (c, "command-line"),
            // In whole MHz, as the driver reports clocks.
            None => (p.clock.sustained_mhz(tensor_load).round(), "sustained"),
        };
        let time_us = s.cycles as f64 / clock;
        let sms = s.sms_used.max(1) as u64;
        let frac = |busy: u64, capacity: u64| busy as f64 / (cycles * capacity * sms) as f64;
        let gbs = |bytes: u64| {
            if time_us > 0.0 {
                bytes as f64 / time_us / 1e3
            } else {
                0.0
            }
        };
        let m = &s.mem;
        let clusters = (k.cluster > 1).then(|| {
            let gpcs = p.cluster.gpcs(p.sm.count);
            let active = max_active_clusters(&gpcs, s.occupancy.ctas, k.cluster);
            ClusterReport {
                size: k.cluster,
                active,
                idle_slots: p.sm.count * s.occupancy.ctas - active * k.cluster,
            }
        });
        let slots = match &clusters {
            Some(c) => (c.active * c.size).max(1),
            None => p.sm.count * s.occupancy.ctas.max(1),
        };
        let waves = k.grid.div_ceil(slots);
        let dram_bytes = m.dram_read_bytes + m.dram_write_bytes;
        let units = [
            // wgmma on the SM's tensor pipe plus mma.sync on the partitions' tensor cores.
            ("tensor", frac(u.tensor, 1) + frac(u.mma, parts)),
            ("smem", frac(u.smem, 1)),
            ("tma", frac(u.tma, 1)),
            ("tma_fill", frac(u.tma_fill, 1)),
            ("tma_store", frac(u.tma_store, 1)),
            ("l1", frac(u.l1, 1)),
            ("l2_port", frac(u.l2_port, 1)),
            ("fma", frac(u.fma, parts)),
            ("alu", frac(u.alu, parts)),
            ("mufu", frac(u.mufu, parts)),
            ("shfl", frac(u.shfl, parts)),
            ("issue", frac(u.issue, parts)),
        ]
        .into_iter()
        .map(|(n, busy)| (n.to_string(), Unit { busy }))
        .collect();

        let mut roles: BTreeMap<String, Role> = BTreeMap::new();
        for (role, w) in k.roles.iter().zip(&s.roles).filter(|(_, w)| w.warps > 0) {
            let r = roles.entry(role.name.clone()).or_insert_with(|| Role {
                warps: 0,
                lifetime: 0,
                longest: 0,
                instructions: 0,
                lanes: 0,
                states: State::ALL
                    .iter()
                    .map(|st| (st.name().to_string(), 0))
                    .collect(),
                ncu: BTreeMap::new(),
                cycles_per_issued: BTreeMap::new(),
                mbarrier_waits: BTreeMap::new(),
                wgmma_waits: BTreeMap::new(),
                spill: None,
                divergence: None,
            });
            if let Some(reg) = role.registers.filter(|r| r.spilled() > 0) {
                let l = &w.local;
                r.spill = Some(Spill {
                    registers: reg.needed(),
                    live: reg.live,
                    accumulators: reg.accumulators,
                    baseline: reg.baseline,
                    budget: reg.budget,
                    spilled: reg.spilled(),
                    bytes_per_thread: u64::from(reg.spilled()) * 4,
                    local_loads: l.loads,
                    local_stores: l.stores,
                    l1_hit_rate: 1.0 - l.misses as f64 / (l.loads + l.stores).max(1) as f64,
                });
            }
            for (place, c) in w.wgmma_waits() {
                if c > 0 {
                    *r.wgmma_waits.entry(place.to_string()).or_default() += c;
                }
            }
            for (m, &c) in k.mbarriers.iter().zip(&w.mbarrier_waits) {
                if c > 0 {
                    *r.mbarrier_waits.entry(m.name.clone()).or_default() += c;
                }
            }
            r.warps += w.warps;
            r.lifetime += w.lifetime;
            r.longest = r.longest.max(w.longest);
            r.instructions += w.issued;
            r.lanes += w.lanes;
            for st in State::ALL {
                let c = w.cycles[st as usize];
                *r.states.get_mut(st.name()).expect("all states present") += c;
                *r.ncu.entry(st.ncu().to_string()).or_default() += c;
            }
        }
        for r in roles.values_mut() {
            if r.lanes < r.instructions * u64::from(WARP_SIZE) {
                let per = r.lanes as f64 / r.instructions as f64;
                r.divergence = Some(Divergence {
                    threads_per_instruction: per,
                    efficiency: per / f64::from(WARP_SIZE),
                });
            }
            let issued = r.instructions.max(1) as f64;
            r.cycles_per_issued = r
                .ncu
                .iter()
                .map(|(reason, &c)| (reason.clone(), c as f64 / issued))
                .collect();
        }
        let scheduler_cycles = (cycles * sms * parts) as f64;
        let (mut active, mut eligible) = (0u64, 0u64);
        for r in roles.values() {
            active += r.lifetime;
            eligible += r.states["selected"] + r.states["not_selected"];
        }
        let schedulers = Schedulers {
            active_warps: active as f64 / scheduler_cycles,
            eligible_warps: eligible as f64 / scheduler_cycles,
            issued_per_cycle: s.instructions as f64 / scheduler_cycles,
        };
        let analytic = k.analytic.as_ref().map(|a| Analytic {
            cycles: a.cycles,
            bound: a.bound.clone(),
            ratio: s.cycles as f64 / a.cycles.max(1) as f64,
            note: a.note.clone(),
        });
        let mut report = Report {
            scenario: k.name.clone(),
            gpu: p.name.clone(),
            seed,
            params: k.params.clone(),
            derived: k
                .derived
                .iter()
                .filter_map(|name| Some((name.clone(), *k.params.get(name)?)))
                .collect(),
            tables: k.tables.clone(),
            sms: s.sms_used,
            sms_total: p.sm.count,
            ctas: k.grid,
            ctas_per_sm: s.occupancy.ctas.min(k.grid),
            occupancy_limiter: s.occupancy.limiter().to_string(),
            clusters,
            waves,
            last_wave_fill: (k.grid - (waves - 1) * slots) as f64 / slots as f64,
            sm_ctas: s.ctas_per_sm_run.iter().fold(BTreeMap::new(), |mut m, &c| {
                *m.entry(c).or_insert(0) += 1;
                m
            }),
            cycles: s.cycles,
            clock_mhz: clock,
            clock_source: source.to_string(),
            tensor_load,
            reference_clock_mhz: reference_mhz,
            time_us,
            flops: s.flops,
            tflops: if time_us > 0.0 {
                s.flops as f64 / time_us / 1e6
            } else {
                0.0
            },
            instructions: s.instructions,
            l1: (s.l1_sectors > 0).then(|| L1Report {
                hit_rate: s.l1_hits as f64 / s.l1_sectors as f64,
                sectors: s.l1_sectors,
            }),
            l2: L2Report {
                hit_rate: m.l2_hits as f64 / (m.l2_hits + m.l2_misses).max(1) as f64,
                bytes: m.l2_bytes,
                shared_bytes: m.l2_shared_bytes,
                bandwidth_gbs: gbs(m.l2_bytes),
            },
            dram: DramReport {
                bytes: dram_bytes,
                read_bytes: m.dram_read_bytes,
                write_bytes: m.dram_write_bytes,
                min_bytes: k.tensors.iter().filter(|t| !t.warm).map(|t| t.bytes).sum(),
                flushed_bytes: m.dram_flush_bytes,
                // Dirty lines flushed after the kernel do not count toward its bandwidth.
                bandwidth_gbs: gbs(dram_bytes - m.dram_flush_bytes),
            },
            units,
            peak: Peak {
                tensor_flops_per_cycle: p.tensor.flops_per_cycle,
                smem_bytes_per_cycle: p.smem.bytes_per_cycle(),
                l2_port_bytes_per_cycle: p.memory.sm_bytes_per_cycle,
                tma_fill_bytes_per_cycle: crate::sm::tma::fill_peak_bytes_per_cycle(&p.tma),
                tma_store_bytes_per_cycle: p.tma.store_bytes_per_cycle,
                l2_bytes_per_cycle: p.memory.l2.bytes_per_cycle,
                // As `MemSys::new` converts it.
                dram_bytes_per_cycle: p.memory.hbm.bandwidth_gbs * 1e9 * p.memory.hbm.efficiency
                    / (reference_mhz * 1e6),
            },
            schedulers,
            roles,
            ncu: BTreeMap::new(),
            analytic,
            bound: None,
            bound_error: Some("not computed".to_string()),
            events: s.events,
            trace: None,
            role_order: k.roles.iter().map(|r| r.name.clone()).collect(),
        };
        report.ncu = ncu::metrics(&report, p);
        report
    }

    /// Adds the generic resource bound of `k` (or why there is none); a scenario without its own
    /// analytic prediction gets the bound as its `analytic` entry.
    pub fn with_bound(mut self, k: &Kernel, bound: Result<Bound, BoundError>) -> Self {
        match bound {
            Ok(b) => {
                let ratio = self.cycles as f64 / b.cycles.max(1) as f64;
                if k.analytic.is_none() {
                    self.analytic = Some(Analytic {
                        cycles: i64::try_from(b.cycles).unwrap_or(i64::MAX),
                        bound: b.binding.to_string(),
                        ratio,
                        note: GENERIC_NOTE.to_string(),
                    });
                }
                self.bound = Some(BoundReport {
                    cycles: b.cycles,
                    binding: b.binding.to_string(),
                    ratio,
                    units: b.units.iter().map(|&(n, c)| (n.to_string(), c)).collect(),
                });
                self.bound_error = None;
            }
            Err(e) => {
                self.bound = None;
                self.bound_error = Some(e.to_string());
            }
        }
        self
    }

    /// One line per role that spills registers to local memory, for `sim run` to warn with.
    pub fn warnings(&self) -> Vec<String> {
        self.role_order
            .iter()
            .filter_map(|name| Some(self.roles.get(name)?.spill.as_ref()?.warning(name)))
            .collect()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report serializes")
    }

    /// The readable summary.
    pub fn summary(&self) -> String {
        let mut o = String::new();
        let clock_note = match self.clock_source.as_str() {
            "command-line" => "set with --clock-mhz".to_string(),
            _ => format!(
                "sustained at {:.0}% GPU-wide tensor load; --clock-mhz to change",
                100.0 * self.tensor_load
            ),
        };
        let _ = writeln!(
            o,
            "{} on {} — {} CTA(s) on {} of {} SMs, {} per SM (limit: {}), {} wave(s), seed {}",
            self.scenario,
            self.gpu,
            self.ctas,
            self.sms,
            self.sms_total,
            self.ctas_per_sm,
            self.occupancy_limiter,
            self.waves,
            self.seed
        );
        if !self.derived.is_empty() {
            let values: Vec<String> = self
                .derived
                .iter()
                .map(|(name, v)| format!("{name} {v}"))
                .collect();
            let _ = writeln!(o, "  derived     {}", values.join(", "));
        }
        if let Some(c) = &self.clusters {
            let _ = writeln!(
                o,
                "  clusters    {} CTAs each, {} at once on the GPU's GPCs ({} CTA slots idle: a cluster never spans two GPCs)",
                c.size, c.active, c.idle_slots
            );
        }
        let _ = writeln!(
            o,
            "  simulated   {} cycles = {:.2} µs at {} MHz ({clock_note})",
            grouped(self.cycles),
            self.time_us,
            self.clock_mhz
        );
        if self.flops > 0 {
            let _ = writeln!(
                o,
                "  tensor      {} FLOP, {:.1} TFLOP/s",
                grouped(self.flops),
                self.tflops
            );
        }
        match &self.analytic {
            Some(a) => {
                let _ = writeln!(
                    o,
                    "  analytic    {} cycles, bound by {}; simulated / analytic = {:.3}",
                    grouped(a.cycles as u64),
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
        match (&self.bound, &self.bound_error) {
            (Some(b), _) => {
                let _ = writeln!(
                    o,
                    "  bound       {} cycles, binding unit {} ({GENERIC_NOTE}); simulated / bound = {:.3}",
                    grouped(b.cycles),
                    b.binding,
                    b.ratio
                );
            }
            (None, why) => {
                // One line: a walk error carries its program path on a second line.
                let why = why.as_deref().unwrap_or("").replace('\n', " ");
                let _ = writeln!(o, "  bound       unavailable: {why}");
            }
        }
        if self.waves > 1 {
            let spread: Vec<String> = self
                .sm_ctas
                .iter()
                .rev()
                .map(|(ctas, sms)| format!("{sms} SM(s) ran {ctas}"))
                .collect();
            let _ = writeln!(
                o,
                "  waves       {}, the last {:.0}% full; CTAs per SM over the run: {}",
                self.waves,
                100.0 * self.last_wave_fill,
                spread.join(", ")
            );
        }
        let _ = writeln!(
            o,
            "  issued      {} warp-instructions",
            grouped(self.instructions)
        );
        for name in &self.role_order {
            if let Some(sp) = self.roles.get(name).and_then(|r| r.spill.as_ref()) {
                let _ = writeln!(
                    o,
                    "  spills      {name}: {} of {} registers per thread in local memory; {} loads and {} stores of 128 B, {:.1}% L1 hits",
                    sp.spilled,
                    sp.registers,
                    grouped(sp.local_loads),
                    grouped(sp.local_stores),
                    100.0 * sp.l1_hit_rate
                );
            }
        }
        for name in &self.role_order {
            if let Some(d) = self.roles.get(name).and_then(|r| r.divergence.as_ref()) {
                let _ = writeln!(
                    o,
                    "  divergence  {name}: {:.1} of 32 threads per warp-instruction ({:.1}% warp execution efficiency)",
                    d.threads_per_instruction,
                    100.0 * d.efficiency
                );
            }
        }
        if let Some(l1) = &self.l1 {
            let _ = writeln!(
                o,
                "  L1          {:.1}% hit, {} sectors of global loads",
                100.0 * l1.hit_rate,
                grouped(l1.sectors)
            );
        }
        let _ = writeln!(
            o,
            "  L2          {:.1}% hit, {} B at {:.0} GB/s",
            100.0 * self.l2.hit_rate,
            grouped(self.l2.bytes),
            self.l2.bandwidth_gbs
        );
        // The minimum is every tensor that starts in DRAM moved once; without one there is none
        // to compare with.
        let bytes = grouped(self.dram.bytes);
        let bandwidth = self.dram.bandwidth_gbs;
        let _ = match self.dram.min_bytes {
            0 => writeln!(
                o,
                "  DRAM        {bytes} B at {bandwidth:.0} GB/s (no tensor starts in DRAM: no minimum to compare with)"
            ),
            min => writeln!(
                o,
                "  DRAM        {bytes} B ({:.2}x the minimum {} B) at {bandwidth:.0} GB/s",
                self.dram.bytes as f64 / min as f64,
                grouped(min)
            ),
        };
        let _ = write!(o, "units busy  ");
        for name in [
            "tensor",
            "smem",
            "tma",
            "tma_fill",
            "tma_store",
            "l1",
            "l2_port",
            "mufu",
            "fma",
            "alu",
            "shfl",
            "issue",
        ] {
            let _ = write!(o, " {name} {:.1}%", 100.0 * self.units[name].busy);
        }
        let _ = writeln!(o);
        let sch = &self.schedulers;
        let _ = writeln!(
            o,
            "schedulers  {:.2} active warps, {:.2} eligible, {:.2} issued per cycle (per partition)",
            sch.active_warps, sch.eligible_warps, sch.issued_per_cycle
        );
        let n = |name: &str| self.ncu.get(name).copied().unwrap_or(0.0);
        let _ = writeln!(
            o,
            "SOL         SM {:.1}%, L2 {:.1}%, DRAM {:.1}% of peak over all {} SMs; {:.2} warp cycles per issued instruction (Nsight Compute names: --json, --csv)",
            n(ncu::SM_THROUGHPUT),
            n(ncu::L2_THROUGHPUT),
            n(ncu::DRAM_THROUGHPUT),
            self.sms_total,
            n(ncu::WARP_CYCLES_PER_ISSUED)
        );
        let _ = writeln!(
            o,
            "warp states (% of the role's warp-cycles; Nsight Compute name in brackets)"
        );
        let mut roles = Table::new();
        roles.load_style(presets::NOTHING);
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
            roles.add_row([
                name.clone(),
                r.warps.to_string(),
                format!("warps: {}", parts.join(", ")),
            ]);
        }
        // Indented by two; names at least 10 wide, counts at least 2, right-aligned.
        let widths = [(2, 10), (1, 2), (1, 0)];
        for (column, (pad, width)) in roles.column_iter_mut().zip(widths) {
            column.set_padding((pad, 0));
            let bound = Width::Fixed(pad + width);
            column.set_constraint(ColumnConstraint::LowerBoundary(bound));
        }
        if let Some(c) = roles.column_mut(1) {
            c.set_cell_alignment(CellAlignment::Right);
        }
        if !self.role_order.is_empty() {
            let _ = writeln!(o, "{}", roles.trim_fmt());
        }
        if let Some(t) = &self.trace {
            let _ = writeln!(
                o,
                "trace written to {} ({} events; `sim stalls {0}`, `sim report {0}`)",
                t.path,
                grouped(t.events)
            );
            if let Some(l) = &t.limited {
                let _ = writeln!(o, "  the trace holds the {l}");
            }
            if let Some(at) = t.truncated_at {
                let _ = writeln!(
                    o,
                    "  the trace stops at cycle {}: it reached its size limit of {} MiB (--trace-max-mb to raise it); the report above covers the whole run",
                    grouped(at),
                    t.max_bytes >> 20
                );
            }
        }
        o
    }
}
