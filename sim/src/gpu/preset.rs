//! GPU presets: hardware numbers as data. Each preset is a RON file in `sim/presets/`, every
//! number with its source in a comment, compiled into the binary.

use serde::Deserialize;
use std::collections::BTreeMap;

/// The built-in presets: (name, RON text).
const BUILTIN: &[(&str, &str)] = &[
    ("h100-sxm", include_str!("../../presets/h100-sxm.ron")),
    ("h200-sxm", include_str!("../../presets/h200-sxm.ron")),
    ("a100-sxm", include_str!("../../presets/a100-sxm.ron")),
    ("rtx3070", include_str!("../../presets/rtx3070.ron")),
];

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    pub name: String,
    pub description: String,
    pub clock: Clock,
    pub sm: Sm,
    pub regs: Regs,
    pub smem: Smem,
    pub pipes: Pipes,
    pub tensor: Tensor,
    pub barriers: Barriers,
    pub tma: Tma,
    pub memory: Memory,
    pub l1: L1,
    pub local: Local,
    pub launch: Launch,
    pub cluster: Cluster,
}

/// Thread-block clusters (`crate::sm::cluster`): where they are placed, and what distributed
/// shared memory, remote arrivals, the cluster barrier and TMA multicast cost.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// The most CTAs a cluster may hold (1: no clusters) and the most without the non-portable
    /// opt-in.
    pub max_size: u32,
    pub portable_size: u32,
    /// The SMs of each GPC, in SM order: a cluster's CTAs are all placed on one GPC. Empty
    /// without clusters. With another `sm.count` (an override), see [`Cluster::gpcs`].
    #[serde(default)]
    pub gpc_sms: Vec<u32>,
    /// The GPC (an index into `gpc_sms`) of each CTA of a kernel's first wave, in block order,
    /// as the chip hands them out (`cta_scheduler::dispatch_order`). Empty: the GPCs take turns.
    #[serde(default)]
    pub dispatch_gpcs: Vec<u32>,
    /// Cycles from a distributed-shared-memory load's issue to its result, without queueing.
    #[serde(default)]
    pub dsmem_latency: u64,
    /// Bytes per cycle an SM's requests to other SMs' shared memory move at most.
    #[serde(default)]
    pub dsmem_bytes_per_cycle: f64,
    /// Distributed-shared-memory loads one warp may have in flight (0: no limit); the next
    /// waits for the oldest to return.
    #[serde(default)]
    pub dsmem_loads_per_warp: u32,
    /// Cycles from a remote `mbarrier.arrive` (`shared::cluster`) to its arrival counting.
    #[serde(default)]
    pub remote_arrive_latency: u64,
    /// Cycles an `mbarrier.arrive` through a cluster address holds its thread (on any rank's
    /// barrier, its own included; `barriers.arrive_cycles` if more).
    #[serde(default)]
    pub remote_arrive_cycles: u64,
    /// Cycles from the last warp's `barrier.cluster.arrive` to the waiters' release, plus
    /// `barrier_per_warp` for each warp of a CTA.
    #[serde(default)]
    pub barrier_latency: u64,
    #[serde(default)]
    pub barrier_per_warp: u64,
    /// Cycles a multicast TMA box takes beyond a unicast one to land in the other CTAs.
    #[serde(default)]
    pub multicast_latency: u64,
}

impl Cluster {
    /// The GPCs of a GPU of `sms` SMs: `gpc_sms` in order, repeated when `sms` is larger, the
    /// last one cut where the SMs end (a preset whose `sm.count` is overridden keeps its GPCs'
    /// sizes).
    pub fn gpcs(&self, sms: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut left = sms;
        for &n in self.gpc_sms.iter().cycle() {
            if left == 0 || n == 0 {
                break;
            }
            out.push(n.min(left));
            left -= n.min(left);
        }
        out
    }
}

/// Kernels launched one after another in a stream (a scenario's `then`): the next kernel's
/// first CTA starts `gap` after the last CTA of the one before ends, and an eager launch no
/// sooner than `eager_interval_ns` after the one before it started (the host's launch rate).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Launch {
    /// The gap between kernels of one SM each, launched eagerly or from a CUDA graph.
    pub eager_gap_ns: u64,
    pub graph_gap_ns: u64,
    /// What the gap adds when the kernels fill every SM (linear in the SMs in between).
    pub full_gpu_gap_ns: u64,
    pub eager_interval_ns: u64,
}

impl Launch {
    /// Nanoseconds from one kernel's end to the next one's start for kernels on `sms` of the
    /// GPU's `count` SMs, launched as `launch`.
    pub fn gap_ns(&self, launch: isa::scenario::Launch, sms: u32, count: u32) -> f64 {
        let base = match launch {
            isa::scenario::Launch::Eager => self.eager_gap_ns,
            isa::scenario::Launch::Graph => self.graph_gap_ns,
        };
        let spread = f64::from(sms.saturating_sub(1)) / f64::from(count.saturating_sub(1).max(1));
        base as f64 + self.full_gpu_gap_ns as f64 * spread.min(1.0)
    }
}

/// The SM clock: the highest, and the clock the chip sustains under its power cap as a function
/// of tensor load (`docs/engine.md`, "Cycles and time").
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clock {
    /// The highest SM clock. Simulations convert HBM bandwidth into bytes per cycle at it
    /// (unless `--clock-mhz` is given): the runs that HBM limits have little tensor load, where
    /// the chip runs at this clock.
    pub max_mhz: f64,
    /// Measured sustained clocks by GPU-wide tensor load, from low to high load: between two
    /// points linear, beyond the ends the end's clock.
    pub sustained: Vec<LoadClock>,
}

/// One measured point of the sustained clock.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadClock {
    /// Tensor-pipe busy cycles summed over all SMs over (SMs × elapsed cycles), idle SMs included.
    pub load: f64,
    pub mhz: f64,
}

impl Clock {
    /// The sustained clock at GPU-wide tensor load `load` (the table is non-empty and ordered:
    /// `Preset::check`).
    pub fn sustained_mhz(&self, load: f64) -> f64 {
        let t = &self.sustained;
        let (first, last) = (t[0], t[t.len() - 1]);
        if load <= first.load {
            return first.mhz;
        }
        if load >= last.load {
            return last.mhz;
        }
        let hi = t.partition_point(|p| p.load <= load);
        let (a, b) = (t[hi - 1], t[hi]);
        a.mhz + (b.mhz - a.mhz) * (load - a.load) / (b.load - a.load)
    }

    /// Why the clock table cannot be used, naming the field.
    fn problem(&self) -> Option<String> {
        let max = self.max_mhz;
        if !(max > 0.0 && max <= MAX_CLOCK_MHZ) {
            return Some(format!(
                "clock.max_mhz = {max} must be a positive number of MHz up to {MAX_CLOCK_MHZ}"
            ));
        }
        if self.sustained.is_empty() {
            return Some("clock.sustained needs at least one point".to_string());
        }
        for (i, p) in self.sustained.iter().enumerate() {
            let at = format!("clock.sustained[{i}]");
            if !(0.0..=1.0).contains(&p.load) {
                return Some(format!("{at}.load = {} must be in [0, 1]", p.load));
            }
            if !(p.mhz > 0.0 && p.mhz <= max) {
                return Some(format!(
                    "{at}.mhz = {} must be positive and at most clock.max_mhz = {max}",
                    p.mhz
                ));
            }
            if let Some(prev) = i.checked_sub(1).map(|j| self.sustained[j]) {
                if p.load <= prev.load {
                    return Some(format!(
                        "{at}.load = {} must exceed the previous point's {} (loads increase)",
                        p.load, prev.load
                    ));
                }
                if p.mhz > prev.mhz {
                    return Some(format!(
                        "{at}.mhz = {} must not exceed the previous point's {} (more load, no faster clock)",
                        p.mhz, prev.mhz
                    ));
                }
            }
        }
        None
    }
}

/// Written as a string (`"gto"`, `"lrr"`) so presets survive being read as generic RON values
/// for overrides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum SchedulerPolicy {
    /// Greedy-then-oldest: keep issuing from the last warp while it can, else the oldest.
    Gto,
    /// Loose round-robin: start the search after the last warp that issued.
    Lrr,
}

#[derive(Debug, thiserror::Error)]
#[error("unknown scheduler policy `{0}` (expected \"gto\" or \"lrr\")")]
pub struct UnknownPolicy(String);

impl TryFrom<String> for SchedulerPolicy {
    type Error = UnknownPolicy;
    fn try_from(s: String) -> Result<Self, UnknownPolicy> {
        match s.as_str() {
            "gto" => Ok(SchedulerPolicy::Gto),
            "lrr" => Ok(SchedulerPolicy::Lrr),
            _ => Err(UnknownPolicy(s)),
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sm {
    pub count: u32,
    pub partitions: u32,
    pub warps_per_partition: u32,
    pub max_threads: u32,
    pub max_ctas: u32,
    pub max_threads_per_cta: u32,
    pub issue_per_partition: u32,
    pub scheduler: SchedulerPolicy,
    /// Cycles from a CTA's exit until the next CTA can start in the slot it frees.
    pub cta_launch_gap: u64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Regs {
    pub has_setmaxnreg: bool,
    pub per_sm: u32,
    pub max_per_thread: u32,
    pub setmaxnreg_max: u32,
    pub alloc_unit: u32,
    /// Registers per thread a role's register estimate adds to its live values and wgmma
    /// accumulators: what the compiler keeps besides them (addresses, loop counters, constants).
    pub baseline: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Smem {
    pub per_sm: u64,
    pub per_cta: u64,
    pub banks: u32,
    pub bank_bytes: u32,
    pub latency: u64,
    pub queue_cycles: u64,
}

impl Smem {
    /// Bytes the shared-memory port moves per cycle (one wavefront).
    pub fn bytes_per_cycle(&self) -> u64 {
        (self.banks * self.bank_bytes) as u64
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipe {
    pub lanes: u32,
    pub latency: u64,
}

impl Pipe {
    /// Cycles one warp instruction occupies the pipe.
    pub fn cycles_per_warp_instr(&self) -> u64 {
        (32 / self.lanes) as u64
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipes {
    pub fma: Pipe,
    pub alu: Pipe,
    pub mufu: Pipe,
    pub shfl: Pipe,
    /// Cycles from an LDC (constant cache hit) or an S2R to its result.
    pub ldc_latency: u64,
    pub s2r_latency: u64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tensor {
    /// Dense 16-bit FLOP per cycle per SM (all four tensor cores).
    pub flops_per_cycle: u64,
    pub extra_latency: u64,
    pub has_wgmma: bool,
    /// HGMMAs a warpgroup (or the SM's warpgroups together: `hgmma_window_per_sm`) may have
    /// issued and not released; issuing one more waits. An HGMMA is
    /// released `inflight_release_lead` cycles before its results are visible (never before it
    /// is done).
    pub max_hgmma_in_flight: u64,
    /// Whether those `max_hgmma_in_flight` places are the SM's, shared by its warpgroups (a
    /// released place goes to a waiting warpgroup that holds places before one that holds
    /// none, among either to the one waiting longest), rather than each warpgroup's own.
    #[serde(default)]
    pub hgmma_window_per_sm: bool,
    pub inflight_release_lead: u64,
    /// A warp's next HGMMA issues `N/2 / issue_acc_regs_per_cycle − issue_overlap_cycles`
    /// cycles (at least 1) after its last one of width N.
    pub issue_acc_regs_per_cycle: u64,
    pub issue_overlap_cycles: u64,
    /// The fewest cycles an RS-form HGMMA (A from registers) holds the pipe, whatever its math;
    /// its results are not later for it.
    pub rs_min_cycles: u64,
    /// Cycles one mma.sync m16n8k16 holds its partition's tensor core, and its latency.
    pub mma_cycles: u64,
    pub mma_latency: u64,
    /// The fewest cycles between one warp's mma.sync issues, however free its partition's
    /// tensor core is (0: only the core limits them).
    #[serde(default)]
    pub mma_issue_cycles: u64,
    /// Extra cycles a partition's issue port is held by each ALU, FMA or MUFU warp-instruction
    /// it issues while the SM's tensor pipe runs an HGMMA (Nsight Compute's `dispatch_stall`);
    /// fractions accumulate. 0 where nothing was measured.
    #[serde(default)]
    pub issue_beside_hgmma: f64,
    /// Cycles the running HGMMA holds the tensor pipe longer for each ALU, FMA or MUFU
    /// warp-instruction issued beside it (the other side of `issue_beside_hgmma`); fractions
    /// accumulate. 0 where nothing was measured.
    #[serde(default)]
    pub hgmma_beside_issue: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Barriers {
    pub named: u32,
    /// Cycles from the completing arrival to every participant's release: `named_latency` plus
    /// `named_per_warp` per participating warp.
    pub named_latency: u64,
    pub named_per_warp: u64,
    pub mbarrier_latency: u64,
    /// Cycles between a `test_wait` loop's polls; a polling warp sees a completed phase half
    /// an interval after a `try_wait` loop would wake (the mean wait for its next poll).
    pub test_wait_interval: u64,
    /// Cycles a `try_wait` loop takes when its phase has already completed (the thread's
    /// round trip to the barrier; a waiting thread is woken `mbarrier_latency` after instead).
    pub wait_pass_cycles: u64,
    /// The same for a `test_wait` loop whose first poll passes.
    pub test_pass_cycles: u64,
    /// Cycles a thread's `mbarrier.arrive` and `mbarrier.arrive.expect_tx` hold it (back to
    /// back, on a barrier that does not complete). 0 where nothing was measured: one issue slot.
    #[serde(default)]
    pub arrive_cycles: u64,
    #[serde(default)]
    pub arrive_expect_cycles: u64,
    /// Cycles a GPU-scope memory barrier holds its warp (MEMBAR.*.GPU with ERRBAR: a
    /// `fence.acq_rel.gpu`, a `.release.cluster` arrive, a non-relaxed cluster-barrier arrive).
    /// 0 where nothing was measured.
    #[serde(default)]
    pub membar_cycles: u64,
    /// Cycles between the starts of two such barriers of one partition's warps: the next
    /// waits for this much of the one before.
    #[serde(default)]
    pub membar_interval: u64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tma {
    pub has_tma: bool,
    /// Cycles the SM's TMA unit takes to accept one box (load or store) from any of its warps.
    pub issue_cycles: u64,
    /// Cycles one TMA load or store holds the thread that issues it: the compiled sequence of
    /// a `cp.async.bulk.tensor` (elect one lane, the coordinates into uniform registers, the
    /// instruction, the branch that waits for the unit to read them). 0 where nothing was
    /// measured.
    #[serde(default)]
    pub thread_cycles: u64,
    pub chunk_bytes: u64,
    pub extra_latency: u64,
    /// Cycles added to the return of a wait that finds its phase complete when the thread's
    /// previous mbarrier-side instruction was a TMA load's issue. 0 where nothing was measured.
    #[serde(default)]
    pub wait_after_issue_cycles: u64,
    /// Bytes per cycle of the SM's path from L2 into shared memory that TMA loads take; it
    /// is neither the shared-memory port nor the SM's port for ordinary loads. Boxes into
    /// slots without the 128-byte swizzle.
    pub fill_bytes_per_cycle: f64,
    /// The same for boxes into slots with the 128-byte swizzle. 0 where nothing was measured:
    /// `fill_bytes_per_cycle`.
    #[serde(default)]
    pub fill_swizzled_bytes_per_cycle: f64,
    /// Box rows (the innermost dimension) the fill path writes a cycle at most, whatever
    /// their width. 0 where nothing was measured: no such limit.
    #[serde(default)]
    pub fill_rows_per_cycle: f64,
    /// Bytes per cycle at which an SM's TMA stores move their data towards L2.
    pub store_bytes_per_cycle: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub sector_bytes: u64,
    pub latency_jitter: u64,
    /// One SM's port to L2 (bytes per cycle).
    pub sm_bytes_per_cycle: f64,
    pub l2: L2,
    pub hbm: Hbm,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L2 {
    pub bytes: u64,
    pub partitions: u32,
    pub line_bytes: u64,
    pub ways: u32,
    /// GPU-wide bandwidth of the crossbar back to the SMs, spread over `slices`.
    pub bytes_per_cycle: f64,
    /// GPU-wide rate of reading distinct lines out of the slices' data arrays.
    pub data_bytes_per_cycle: f64,
    /// A GPC's read of a line whose read-out would start within this many cycles of the line's
    /// last read-out for that GPC shares that read-out.
    pub merge_cycles: u64,
    pub slices: u32,
    pub near_latency: u64,
    pub far_latency: u64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hbm {
    pub bandwidth_gbs: f64,
    /// Sustained fraction of `bandwidth_gbs`.
    pub efficiency: f64,
    pub channels: u32,
    pub interleave_bytes: u64,
    /// Cycles beyond the L2 latency.
    pub latency: u64,
    /// Cycles more for a miss in the L2 partition far from the requesting SM.
    pub far_latency: u64,
    /// Cycles a channel's bus loses when it switches between reading and writing.
    pub turnaround_cycles: u64,
    /// Bytes of writes a channel buffers before it drains them in one burst.
    pub write_batch_bytes: u64,
    /// Bytes a fill moves at least: the aligned group of sectors around a missing one.
    pub fetch_bytes: u64,
}

/// Local memory as register spills use it (`crate::sm::local`): per-thread values in 4-byte
/// words, a warp's access to one of them 128 bytes, through the SM's L1 and, once the SM's
/// spilled values outgrow it, to L2.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Local {
    /// Cycles from the end of a load's L1 booking until its value is usable.
    pub latency: u64,
    /// Bytes of spilled values (all resident warps') the L1 keeps; beyond that every local
    /// access misses (a cyclic reuse larger than the cache).
    pub l1_bytes: u64,
    /// Bytes per cycle at which the L1 exchanges missing local lines with L2 (fills and
    /// write-backs together).
    pub miss_bytes_per_cycle: f64,
    /// Spilled values a warp reloads before it uses them, in one batch: the registers the
    /// compiler keeps free for reloads.
    pub reload_batch: u32,
}

/// The SM's L1 as its load/store unit uses it: every warp access to global or local memory
/// (ld/st.global, cp.async, spill loads and stores) holds its tag stage for
/// `max(access_cycles, lines x line_cycles)` cycles, `lines` the 128-byte lines it touches
/// (`crate::sm::lsu`), a global load that finds all its sectors in the L1 data cache
/// `max(hit_cycles, lines x line_cycles)` (`crate::sm::l1`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L1 {
    /// The least a warp access holds the stage, however few lines it touches.
    pub access_cycles: u64,
    /// Cycles per line a warp access touches.
    pub line_cycles: u64,
    /// Global accesses that may wait for the stage; a warp whose ld/st.global or cp.async
    /// would be one more stalls (`lg_throttle`).
    pub queue: u32,
    /// Bytes of the array that L1 data and shared memory share per SM; 0: global loads are
    /// not cached in L1.
    #[serde(default)]
    pub unified_bytes: u64,
    /// The shared-memory carveouts the driver chooses from, in bytes, ascending: the smallest
    /// that holds what the kernel's resident CTAs need; the rest of the array is L1.
    #[serde(default)]
    pub carveouts: Vec<u64>,
    /// Shared memory the system reserves per CTA, which the carveout must hold too.
    #[serde(default)]
    pub smem_reserved_per_cta: u64,
    /// Ways per set of the L1 data cache (its sets are hashed).
    #[serde(default)]
    pub ways: u32,
    /// Cycles from the end of a hit's tag-stage access until its value is usable.
    #[serde(default)]
    pub hit_latency: u64,
    /// The least a global load whose lines all hit holds the tag stage.
    #[serde(default)]
    pub hit_cycles: u64,
}

/// Most bytes of the L1/shared-memory array per SM (its tags take ~18 bytes per line).
pub const MAX_L1_BYTES: u64 = 1 << 26;

impl L1 {
    /// Why the L1 data cache's fields cannot be used, naming the field.
    fn problem(&self) -> Option<String> {
        if self.unified_bytes == 0 {
            return None;
        }
        if self.unified_bytes > MAX_L1_BYTES {
            return Some(format!(
                "l1.unified_bytes = {} must be at most {MAX_L1_BYTES}",
                self.unified_bytes
            ));
        }
        let c = &self.carveouts;
        if c.is_empty()
            || c.windows(2).any(|w| w[0] >= w[1])
            || c.iter().any(|&b| b > self.unified_bytes)
        {
            return Some(format!(
                "l1.carveouts {c:?} must list at least one carveout, ascending, each at most \
                 l1.unified_bytes = {}",
                self.unified_bytes
            ));
        }
        for (field, v, max) in [
            ("l1.ways", u64::from(self.ways), 1024),
            ("l1.hit_cycles", self.hit_cycles, MAX_FIELD_CYCLES),
        ] {
            if v == 0 || v > max {
                return Some(format!("{field} = {v} must be in 1..={max}"));
            }
        }
        for (field, v, max) in [
            ("l1.hit_latency", self.hit_latency, MAX_FIELD_CYCLES),
            (
                "l1.smem_reserved_per_cta",
                self.smem_reserved_per_cta,
                1 << 32,
            ),
        ] {
            if v > max {
                return Some(format!("{field} = {v} must be at most {max}"));
            }
        }
        None
    }

    /// Bytes of L1 data cache an SM has for a kernel of `smem_per_cta` bytes of shared memory
    /// per CTA and `ctas` resident CTAs per SM: the array less the smallest carveout that holds
    /// them (the largest when none does).
    pub fn cache_bytes(&self, smem_per_cta: u64, ctas: u32) -> u64 {
        let need = u64::from(ctas).saturating_mul(smem_per_cta + self.smem_reserved_per_cta);
        let carveout = self
            .carveouts
            .iter()
            .copied()
            .find(|&c| c >= need)
            .or(self.carveouts.last().copied())
            .unwrap_or(0);
        self.unified_bytes.saturating_sub(carveout)
    }
}

/// A `gpu_overrides` path that names no field of the preset.
#[derive(Debug, thiserror::Error)]
pub enum FieldError {
    #[error("`{within}` is a number or text, it has no field `{part}`")]
    NotAStruct { within: String, part: String },
    #[error("no field `{part}` in `{within}` (fields: {})", known.join(", "))]
    Unknown {
        part: String,
        within: String,
        known: Vec<String>,
    },
}

/// The value at a dotted field path of a preset read as a RON value.
fn field<'v>(value: &'v mut ron::Value, path: &str) -> Result<&'v mut ron::Value, FieldError> {
    let mut cur = value;
    let mut seen = String::new();
    for part in path.split('.') {
        let ron::Value::Map(map) = cur else {
            return Err(FieldError::NotAStruct {
                within: seen,
                part: part.to_string(),
            });
        };
        let known: Vec<String> = map
            .keys()
            .filter_map(|k| match k {
                ron::Value::String(s) => Some(s.clone()),
                _ => None,
            })
            .collect();
        cur = map
            .get_mut(&ron::Value::String(part.to_string()))
            .ok_or_else(|| FieldError::Unknown {
                part: part.to_string(),
                within: if seen.is_empty() {
                    "the preset".to_string()
                } else {
                    seen.clone()
                },
                known,
            })?;
        if !seen.is_empty() {
            seen.push('.');
        }
        seen.push_str(part);
    }
    Ok(cur)
}

/// The value of `new`, when it replaces an integer field and is an integer beyond i64: ron
/// reads such a literal as a floating-point number, and the field's type error would say so.
fn too_large_integer(field: &ron::Value, new: &ron::Value) -> Option<f64> {
    use ron::value::Number;
    let (ron::Value::Number(old), ron::Value::Number(n @ (Number::F32(_) | Number::F64(_)))) =
        (field, new)
    else {
        return None;
    };
    let v = n.into_f64();
    let integer_field = !matches!(old, Number::F32(_) | Number::F64(_));
    (integer_field && v.fract() == 0.0 && v.abs() >= i64::MAX as f64).then_some(v)
}

/// Most SMs a preset may have (the largest GPUs have under 200).
pub const MAX_SMS: u32 = 1024;

/// The fastest SM clock a preset or `--clock-mhz` may name (1 THz): far beyond any chip, and
/// slow enough that HBM still moves a fraction of a byte per cycle.
pub const MAX_CLOCK_MHZ: f64 = 1e6;

/// The longest latency or per-operation time a preset may give, in cycles. Simulated time
/// stops at `--max-cycles` (at most 2^38), so sums of a few such times stay far from wrapping
/// around u64.
pub const MAX_FIELD_CYCLES: u64 = 1 << 32;

/// Launch gaps and intervals up to a second.
pub const MAX_LAUNCH_NS: u64 = 1_000_000_000;

#[derive(Debug, thiserror::Error)]
pub enum PresetError {
    #[error("unknown GPU preset `{0}`; built-in presets: {1}")]
    Unknown(String, String),
    #[error("preset `{name}`: {message}")]
    Invalid { name: String, message: String },
}

impl Preset {
    pub fn names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(n, _)| *n).collect()
    }

    /// A built-in preset's RON text (what results computed on it depend on).
    pub fn source(name: &str) -> Option<&'static str> {
        BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
    }

    /// Loads a built-in preset by name and checks it.
    pub fn builtin(name: &str) -> Result<Preset, PresetError> {
        Self::with_overrides(name, &BTreeMap::new())
    }

    /// Loads a built-in preset, replaces the fields named by dotted paths
    /// (`memory.l2.bytes`), and checks the result.
    pub fn with_overrides(
        name: &str,
        overrides: &BTreeMap<String, ron::Value>,
    ) -> Result<Preset, PresetError> {
        let (_, text) = BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| PresetError::Unknown(name.to_string(), Self::names().join(", ")))?;
        let invalid = |message: String| PresetError::Invalid {
            name: name.to_string(),
            message,
        };
        let mut value: ron::Value = ron::from_str(text).map_err(|e| {
            invalid(format!(
                "{}:{}: {}",
                e.span.start.line, e.span.start.col, e.code
            ))
        })?;
        for (path, new) in overrides {
            let slot = field(&mut value, path).map_err(|e| invalid(e.to_string()))?;
            if let Some(v) = too_large_integer(slot, new) {
                return Err(invalid(format!("{path} = {v}: integer too large")));
            }
            *slot = new.clone();
        }
        let p: Preset = value.into_rust().map_err(|e| {
            invalid(format!(
                "after overriding {:?}: {e}",
                overrides.keys().collect::<Vec<_>>()
            ))
        })?;
        p.check()?;
        Ok(p)
    }

    /// Rejects impossible combinations, naming the field.
    pub fn check(&self) -> Result<(), PresetError> {
        let bad = |message: String| {
            Err(PresetError::Invalid {
                name: self.name.clone(),
                message,
            })
        };
        for (field, pipe) in [
            ("pipes.fma", &self.pipes.fma),
            ("pipes.alu", &self.pipes.alu),
            ("pipes.mufu", &self.pipes.mufu),
            ("pipes.shfl", &self.pipes.shfl),
        ] {
            if pipe.lanes == 0 || 32 % pipe.lanes != 0 {
                return bad(format!("{field}.lanes = {} must divide 32", pipe.lanes));
            }
        }
        // Every SM is simulated, so a count beyond any GPU's would only exhaust memory.
        if self.sm.count == 0 || self.sm.count > MAX_SMS {
            return bad(format!(
                "sm.count = {} must be in 1..={MAX_SMS}",
                self.sm.count
            ));
        }
        if self.sm.partitions == 0 || self.sm.partitions > 8 {
            return bad(format!(
                "sm.partitions = {} must be in 1..=8",
                self.sm.partitions
            ));
        }
        if self.sm.warps_per_partition == 0 || self.sm.warps_per_partition > 32 {
            return bad(format!(
                "sm.warps_per_partition = {} must be in 1..=32",
                self.sm.warps_per_partition
            ));
        }
        if self.sm.issue_per_partition != 1 {
            return bad("sm.issue_per_partition: only 1 is modeled".to_string());
        }
        for (field, v) in [
            ("sm.max_threads", self.sm.max_threads as u64),
            ("sm.max_ctas", self.sm.max_ctas as u64),
            ("sm.max_threads_per_cta", self.sm.max_threads_per_cta as u64),
            ("smem.per_sm", self.smem.per_sm),
            ("smem.per_cta", self.smem.per_cta),
            ("smem.banks", self.smem.banks as u64),
            ("smem.bank_bytes", self.smem.bank_bytes as u64),
            ("tensor.flops_per_cycle", self.tensor.flops_per_cycle),
            ("tma.issue_cycles", self.tma.issue_cycles),
            ("tma.chunk_bytes", self.tma.chunk_bytes),
            ("memory.sector_bytes", self.memory.sector_bytes),
            ("memory.l2.line_bytes", self.memory.l2.line_bytes),
            ("memory.l2.bytes", self.memory.l2.bytes),
            ("memory.l2.ways", self.memory.l2.ways as u64),
            ("memory.l2.slices", self.memory.l2.slices as u64),
            ("memory.l2.partitions", self.memory.l2.partitions as u64),
            ("memory.hbm.channels", self.memory.hbm.channels as u64),
            (
                "memory.hbm.interleave_bytes",
                self.memory.hbm.interleave_bytes,
            ),
            (
                "memory.hbm.write_batch_bytes",
                self.memory.hbm.write_batch_bytes,
            ),
            ("tensor.mma_cycles", self.tensor.mma_cycles),
            (
                "barriers.test_wait_interval",
                self.barriers.test_wait_interval,
            ),
            (
                "tensor.max_hgmma_in_flight",
                self.tensor.max_hgmma_in_flight,
            ),
            (
                "tensor.issue_acc_regs_per_cycle",
                self.tensor.issue_acc_regs_per_cycle,
            ),
            ("regs.alloc_unit", self.regs.alloc_unit as u64),
            ("local.l1_bytes", self.local.l1_bytes),
            ("l1.access_cycles", self.l1.access_cycles),
            ("l1.line_cycles", self.l1.line_cycles),
            ("l1.queue", self.l1.queue as u64),
            ("local.reload_batch", self.local.reload_batch as u64),
        ] {
            if v == 0 {
                return bad(format!("{field} must be positive"));
            }
        }
        for (field, v) in [
            ("memory.sm_bytes_per_cycle", self.memory.sm_bytes_per_cycle),
            ("tma.fill_bytes_per_cycle", self.tma.fill_bytes_per_cycle),
            ("tma.store_bytes_per_cycle", self.tma.store_bytes_per_cycle),
            ("memory.l2.bytes_per_cycle", self.memory.l2.bytes_per_cycle),
            (
                "memory.l2.data_bytes_per_cycle",
                self.memory.l2.data_bytes_per_cycle,
            ),
            ("memory.hbm.bandwidth_gbs", self.memory.hbm.bandwidth_gbs),
            (
                "local.miss_bytes_per_cycle",
                self.local.miss_bytes_per_cycle,
            ),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return bad(format!("{field} must be a positive number"));
            }
        }
        for (field, v) in [
            (
                "tma.fill_swizzled_bytes_per_cycle",
                self.tma.fill_swizzled_bytes_per_cycle,
            ),
            ("tma.fill_rows_per_cycle", self.tma.fill_rows_per_cycle),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return bad(format!(
                    "{field} must be 0 (not measured) or a positive number"
                ));
            }
        }
        // Counts the engine allocates by (per SM, per CTA, per cache way or channel) and
        // sizes it multiplies: beyond any GPU's they would only exhaust memory or wrap around.
        let (b, m, t) = (&self.barriers, &self.memory, &self.tensor);
        for (field, v, max) in [
            ("barriers.named", b.named as u64, 1024),
            ("sm.max_ctas", self.sm.max_ctas as u64, 1024),
            ("sm.max_threads", self.sm.max_threads as u64, 1 << 16),
            (
                "sm.max_threads_per_cta",
                self.sm.max_threads_per_cta as u64,
                1 << 16,
            ),
            ("regs.per_sm", self.regs.per_sm as u64, 1 << 24),
            ("regs.alloc_unit", self.regs.alloc_unit as u64, 1 << 16),
            (
                "regs.max_per_thread",
                self.regs.max_per_thread as u64,
                1 << 16,
            ),
            (
                "regs.setmaxnreg_max",
                self.regs.setmaxnreg_max as u64,
                1 << 16,
            ),
            ("smem.per_sm", self.smem.per_sm, 1 << 32),
            ("smem.per_cta", self.smem.per_cta, 1 << 32),
            ("smem.banks", self.smem.banks as u64, 1024),
            ("smem.bank_bytes", self.smem.bank_bytes as u64, 1024),
            ("tensor.flops_per_cycle", t.flops_per_cycle, 1 << 32),
            ("tensor.max_hgmma_in_flight", t.max_hgmma_in_flight, 1024),
            (
                "tensor.issue_acc_regs_per_cycle",
                t.issue_acc_regs_per_cycle,
                1 << 16,
            ),
            ("tma.chunk_bytes", self.tma.chunk_bytes, 1 << 32),
            ("memory.sector_bytes", m.sector_bytes, 1 << 16),
            ("memory.l2.line_bytes", m.l2.line_bytes, 1 << 16),
            // Its tags and states take ~18 bytes per line.
            ("memory.l2.bytes", m.l2.bytes, 1 << 30),
            ("memory.l2.ways", m.l2.ways as u64, 1024),
            ("memory.l2.slices", m.l2.slices as u64, 4096),
            ("memory.l2.partitions", m.l2.partitions as u64, 64),
            ("memory.hbm.channels", m.hbm.channels as u64, 4096),
            (
                "memory.hbm.interleave_bytes",
                m.hbm.interleave_bytes,
                1 << 32,
            ),
            ("smem.latency", self.smem.latency, MAX_FIELD_CYCLES),
            ("l1.access_cycles", self.l1.access_cycles, MAX_FIELD_CYCLES),
            ("l1.line_cycles", self.l1.line_cycles, MAX_FIELD_CYCLES),
            ("l1.queue", self.l1.queue as u64, 1 << 16),
            (
                "smem.queue_cycles",
                self.smem.queue_cycles,
                MAX_FIELD_CYCLES,
            ),
            (
                "pipes.fma.latency",
                self.pipes.fma.latency,
                MAX_FIELD_CYCLES,
            ),
            (
                "pipes.alu.latency",
                self.pipes.alu.latency,
                MAX_FIELD_CYCLES,
            ),
            (
                "pipes.mufu.latency",
                self.pipes.mufu.latency,
                MAX_FIELD_CYCLES,
            ),
            (
                "pipes.shfl.latency",
                self.pipes.shfl.latency,
                MAX_FIELD_CYCLES,
            ),
            (
                "pipes.ldc_latency",
                self.pipes.ldc_latency,
                MAX_FIELD_CYCLES,
            ),
            (
                "pipes.s2r_latency",
                self.pipes.s2r_latency,
                MAX_FIELD_CYCLES,
            ),
            ("tensor.extra_latency", t.extra_latency, MAX_FIELD_CYCLES),
            (
                "launch.eager_gap_ns",
                self.launch.eager_gap_ns,
                MAX_LAUNCH_NS,
            ),
            (
                "launch.graph_gap_ns",
                self.launch.graph_gap_ns,
                MAX_LAUNCH_NS,
            ),
            (
                "launch.full_gpu_gap_ns",
                self.launch.full_gpu_gap_ns,
                MAX_LAUNCH_NS,
            ),
            (
                "launch.eager_interval_ns",
                self.launch.eager_interval_ns,
                MAX_LAUNCH_NS,
            ),
            (
                "tensor.inflight_release_lead",
                t.inflight_release_lead,
                MAX_FIELD_CYCLES,
            ),
            (
                "tensor.issue_overlap_cycles",
                t.issue_overlap_cycles,
                MAX_FIELD_CYCLES,
            ),
            ("tensor.rs_min_cycles", t.rs_min_cycles, MAX_FIELD_CYCLES),
            ("tensor.mma_cycles", t.mma_cycles, MAX_FIELD_CYCLES),
            ("tensor.mma_latency", t.mma_latency, MAX_FIELD_CYCLES),
            (
                "tensor.mma_issue_cycles",
                t.mma_issue_cycles,
                MAX_FIELD_CYCLES,
            ),
            ("barriers.named_latency", b.named_latency, MAX_FIELD_CYCLES),
            (
                "barriers.named_per_warp",
                b.named_per_warp,
                MAX_FIELD_CYCLES,
            ),
            (
                "barriers.mbarrier_latency",
                b.mbarrier_latency,
                MAX_FIELD_CYCLES,
            ),
            (
                "barriers.test_wait_interval",
                b.test_wait_interval,
                MAX_FIELD_CYCLES,
            ),
            (
                "barriers.wait_pass_cycles",
                b.wait_pass_cycles,
                MAX_FIELD_CYCLES,
            ),
            (
                "barriers.test_pass_cycles",
                b.test_pass_cycles,
                MAX_FIELD_CYCLES,
            ),
            ("barriers.arrive_cycles", b.arrive_cycles, MAX_FIELD_CYCLES),
            (
                "barriers.arrive_expect_cycles",
                b.arrive_expect_cycles,
                MAX_FIELD_CYCLES,
            ),
            ("tma.issue_cycles", self.tma.issue_cycles, MAX_FIELD_CYCLES),
            (
                "tma.thread_cycles",
                self.tma.thread_cycles,
                MAX_FIELD_CYCLES,
            ),
            (
                "tma.wait_after_issue_cycles",
                self.tma.wait_after_issue_cycles,
                MAX_FIELD_CYCLES,
            ),
            (
                "tma.extra_latency",
                self.tma.extra_latency,
                MAX_FIELD_CYCLES,
            ),
            ("memory.latency_jitter", m.latency_jitter, MAX_FIELD_CYCLES),
            (
                "memory.l2.near_latency",
                m.l2.near_latency,
                MAX_FIELD_CYCLES,
            ),
            ("memory.l2.far_latency", m.l2.far_latency, MAX_FIELD_CYCLES),
            ("memory.hbm.latency", m.hbm.latency, MAX_FIELD_CYCLES),
            (
                "memory.hbm.far_latency",
                m.hbm.far_latency,
                MAX_FIELD_CYCLES,
            ),
            ("regs.baseline", self.regs.baseline as u64, 1 << 16),
            ("local.latency", self.local.latency, MAX_FIELD_CYCLES),
            ("local.l1_bytes", self.local.l1_bytes, 1 << 32),
            (
                "local.reload_batch",
                self.local.reload_batch as u64,
                1 << 16,
            ),
        ] {
            if v > max {
                return bad(format!("{field} = {v} must be at most {max}"));
            }
        }
        for (field, v) in [
            ("issue_beside_hgmma", self.tensor.issue_beside_hgmma),
            ("hgmma_beside_issue", self.tensor.hgmma_beside_issue),
        ] {
            if !(0.0..=16.0).contains(&v) {
                return bad(format!("tensor.{field} = {v} must be in [0, 16] cycles"));
            }
        }
        let eff = self.memory.hbm.efficiency;
        if !(eff > 0.0 && eff <= 1.0) {
            return bad(format!("memory.hbm.efficiency = {eff} must be in (0, 1]"));
        }
        if !self
            .memory
            .l2
            .line_bytes
            .is_multiple_of(self.memory.sector_bytes)
        {
            return bad(
                "memory.l2.line_bytes must be a multiple of memory.sector_bytes".to_string(),
            );
        }
        // A line's sectors are a bit mask of at most 8.
        let m = &self.memory;
        if m.l2.line_bytes / m.sector_bytes > 8 {
            return bad(format!(
                "memory.l2.line_bytes = {} holds more than 8 sectors of memory.sector_bytes = {}",
                m.l2.line_bytes, m.sector_bytes
            ));
        }
        let fetch = m.hbm.fetch_bytes;
        if fetch == 0
            || !fetch.is_multiple_of(m.sector_bytes)
            || !m.l2.line_bytes.is_multiple_of(fetch)
        {
            return bad(format!(
                "memory.hbm.fetch_bytes = {fetch} must be a multiple of memory.sector_bytes ({}) \
                 that divides memory.l2.line_bytes ({})",
                m.sector_bytes, m.l2.line_bytes
            ));
        }
        if let Some(message) = self.clock.problem() {
            return bad(message);
        }
        let c = &self.cluster;
        if c.max_size == 0
            || c.portable_size == 0
            || c.portable_size > c.max_size
            || c.max_size > 16
        {
            return bad(format!(
                "cluster.portable_size = {} and cluster.max_size = {} must satisfy 1 <= portable <= max <= 16",
                c.portable_size, c.max_size
            ));
        }
        if c.max_size > 1 {
            if c.gpc_sms.is_empty() || c.gpc_sms.contains(&0) {
                return bad(format!(
                    "cluster.gpc_sms {:?} must list each GPC's SMs, every count positive",
                    c.gpc_sms
                ));
            }
            if c.dsmem_bytes_per_cycle <= 0.0 {
                return bad("cluster.dsmem_bytes_per_cycle must be positive".to_string());
            }
        }
        if let Some(g) = c
            .dispatch_gpcs
            .iter()
            .find(|&&g| g as usize >= c.gpc_sms.len())
        {
            return bad(format!(
                "cluster.dispatch_gpcs names GPC {g}, but cluster.gpc_sms lists {}",
                c.gpc_sms.len()
            ));
        }
        if let Some(message) = self.l1.problem() {
            return bad(message);
        }
        Ok(())
    }

    /// The limits static validation checks scenarios against.
    pub fn limits(&self) -> isa::Limits {
        isa::Limits {
            gpu: self.name.clone(),
            sm_count: self.sm.count,
            max_regs_per_thread: self.regs.max_per_thread,
            has_setmaxnreg: self.regs.has_setmaxnreg,
            setmaxnreg_max: self.regs.setmaxnreg_max,
            regs_per_sm: self.regs.per_sm,
            reg_alloc_unit: self.regs.alloc_unit,
            smem_per_cta: self.smem.per_cta,
            max_threads_per_cta: self.sm.max_threads_per_cta,
            named_barriers: self.barriers.named,
            has_tma: self.tma.has_tma,
            has_wgmma: self.tensor.has_wgmma,
            baseline_regs: self.regs.baseline,
            max_cluster: self.cluster.max_size,
            portable_cluster: self.cluster.portable_size,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h100_preset_loads_and_matches_the_datasheet() {
        let p = Preset::builtin("h100-sxm").unwrap();
        assert_eq!(p.sm.count, 132);
        // 132 SMs x 4096 FLOP/clk x 1.83 GHz (the datasheet's clock) = 989.4 TFLOP/s dense BF16.
        let tflops = p.sm.count as f64 * p.tensor.flops_per_cycle as f64 * 1830e6 / 1e12;
        assert!((tflops - 989.4).abs() < 0.5, "{tflops}");
        assert_eq!(p.smem.bytes_per_cycle(), 128);
        assert_eq!(p.pipes.mufu.cycles_per_warp_instr(), 8);
        assert_eq!(p.sm.partitions * p.sm.warps_per_partition, 64);
    }

    #[test]
    fn every_builtin_preset_loads() {
        for name in Preset::names() {
            let p = Preset::builtin(name).unwrap();
            assert_eq!(p.name, name);
        }
        // The analytic models' example GPU (the GEMM resource model's RTX 3070, docs/analytic.md).
        let g = Preset::builtin("rtx3070").unwrap();
        assert_eq!(
            (
                g.sm.count,
                g.sm.max_threads,
                g.regs.per_sm,
                g.smem.per_sm,
                g.smem.per_cta,
                g.sm.max_ctas
            ),
            (46, 1536, 65536, 102400, 101376, 16)
        );
        assert_eq!(g.memory.hbm.bandwidth_gbs, 448.0);
        let h200 = Preset::builtin("h200-sxm").unwrap();
        assert_eq!(h200.memory.l2.bytes, 62_914_560);
        assert_eq!(h200.memory.hbm.bandwidth_gbs, 4800.0);
    }

    #[test]
    fn unknown_preset_lists_the_known_ones() {
        let e = Preset::builtin("h101").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown GPU preset `h101`; built-in presets: h100-sxm, h200-sxm, a100-sxm, rtx3070"
        );
    }

    #[test]
    fn overrides_replace_fields_by_path() {
        let mut o = BTreeMap::new();
        o.insert("memory.l2.bytes".to_string(), ron::Value::from(1u64 << 24));
        o.insert("sm.count".to_string(), ron::Value::from(8u32));
        let p = Preset::with_overrides("h100-sxm", &o).unwrap();
        assert_eq!((p.memory.l2.bytes, p.sm.count), (1 << 24, 8));
        let mut bad = BTreeMap::new();
        bad.insert("memory.l3.bytes".to_string(), ron::Value::from(1u32));
        let e = Preset::with_overrides("h100-sxm", &bad)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("preset `h100-sxm`: no field `l3` in `memory` (fields: "),
            "{e}"
        );
        let mut wrong = BTreeMap::new();
        wrong.insert("sm.count".to_string(), ron::Value::String("many".into()));
        let e = Preset::with_overrides("h100-sxm", &wrong)
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("after overriding [\"sm.count\"]: Expected u32 but found the string \"many\" instead"), "{e}");
    }

    #[test]
    fn the_sustained_clock_is_linear_between_measured_points_and_flat_beyond() {
        let c = Preset::builtin("h200-sxm").unwrap().clock;
        assert_eq!(c.max_mhz, 1980.0);
        // Each measured point gives its own clock.
        for (load, mhz) in [
            (0.0, 1980.0),
            (0.570, 1797.0),
            (0.682, 1755.0),
            (0.747, 1691.0),
            (0.821, 1485.0),
            (0.840, 1455.0),
        ] {
            assert_eq!(c.sustained_mhz(load), mhz, "load {load}");
        }
        // Halfway between cuDNN's attention and matmul4096: halfway between their clocks.
        assert!((c.sustained_mhz(0.784) - 1588.0).abs() < 1e-6);
        // One busy SM of 132 (load 1/132): 1980 - 183 / (0.570 * 132) MHz.
        assert!((c.sustained_mhz(1.0 / 132.0) - 1977.568).abs() < 1e-3);
        // Beyond the last point, its clock.
        assert_eq!(c.sustained_mhz(0.95), 1455.0);
        // The H100 takes the H200's table; the others hold their boost clock.
        let h100 = Preset::builtin("h100-sxm").unwrap().clock;
        assert_eq!(h100.sustained_mhz(0.821), 1485.0);
        let a100 = Preset::builtin("a100-sxm").unwrap().clock;
        assert_eq!(
            (a100.sustained_mhz(0.0), a100.sustained_mhz(0.9)),
            (1410.0, 1410.0)
        );
    }

    #[test]
    fn a_clock_table_that_is_not_monotonic_or_out_of_range_is_refused() {
        let with = |path: &str, value: &str| {
            let o = BTreeMap::from([(path.to_string(), ron::from_str(value).unwrap())]);
            Preset::with_overrides("h200-sxm", &o)
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let table = |t: &str| with("clock.sustained", t);
        let cases = [
            (
                table("[(load: 0.5, mhz: 1500), (load: 0.4, mhz: 1400)]"),
                "clock.sustained[1].load = 0.4 must exceed the previous point's 0.5 (loads increase)",
            ),
            (
                table("[(load: 0.0, mhz: 1500), (load: 0.5, mhz: 1600)]"),
                "clock.sustained[1].mhz = 1600 must not exceed the previous point's 1500 (more load, no faster clock)",
            ),
            (
                table("[(load: 1.5, mhz: 1500)]"),
                "clock.sustained[0].load = 1.5 must be in [0, 1]",
            ),
            (
                table("[(load: 0.0, mhz: 0)]"),
                "clock.sustained[0].mhz = 0 must be positive and at most clock.max_mhz = 1980",
            ),
            (
                table("[(load: 0.0, mhz: 2100)]"),
                "clock.sustained[0].mhz = 2100 must be positive and at most clock.max_mhz = 1980",
            ),
            (table("[]"), "clock.sustained needs at least one point"),
            (
                with("clock.max_mhz", "-5.0"),
                "clock.max_mhz = -5 must be a positive number of MHz up to 1000000",
            ),
            (
                with("clock.max_mhz", "inf"),
                "clock.max_mhz = inf must be a positive number of MHz up to 1000000",
            ),
            (
                table("[(load: 0.0, mhz: inf)]"),
                "clock.sustained[0].mhz = inf must be positive and at most clock.max_mhz = 1980",
            ),
        ];
        for (got, message) in cases {
            assert_eq!(got, Err(format!("preset `h200-sxm`: {message}")));
        }
        assert_eq!(table("[(load: 0.0, mhz: 1500)]"), Ok(()));
    }

    #[test]
    fn impossible_values_name_the_field() {
        let mut p = Preset::builtin("h100-sxm").unwrap();
        p.pipes.mufu.lanes = 3;
        assert_eq!(
            p.check().unwrap_err().to_string(),
            "preset `h100-sxm`: pipes.mufu.lanes = 3 must divide 32"
        );
    }

    #[test]
    fn counts_that_would_crash_or_exhaust_memory_are_refused() {
        let with = |path: &str, v: u64| {
            let o = BTreeMap::from([(path.to_string(), ron::Value::Number(v.into()))]);
            Preset::with_overrides("h100-sxm", &o)
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            with("sm.count", 0),
            Err("preset `h100-sxm`: sm.count = 0 must be in 1..=1024".to_string())
        );
        assert!(with("sm.count", 1 << 40).is_err());
        let huge = BTreeMap::from([(
            "sm.count".to_string(),
            ron::from_str::<ron::Value>("18446744073709551616").unwrap(),
        )]);
        assert_eq!(
            Preset::with_overrides("h100-sxm", &huge)
                .unwrap_err()
                .to_string(),
            "preset `h100-sxm`: sm.count = 18446744073709552000: integer too large"
        );
        assert_eq!(with("sm.count", 1024), Ok(()));
        for field in [
            "sm.max_ctas",
            "sm.max_threads",
            "smem.per_sm",
            "smem.per_cta",
        ] {
            assert_eq!(
                with(field, 0),
                Err(format!("preset `h100-sxm`: {field} must be positive"))
            );
        }
    }

    #[test]
    fn the_l1_is_what_the_carveout_leaves() {
        let l1 = Preset::builtin("h100-sxm").unwrap().l1;
        let kib = |b: u64| b / 1024;
        // No shared memory: one CTA's 1 KB reserve takes the 8 KB step, 8 CTAs still do.
        assert_eq!(kib(l1.cache_bytes(0, 1)), 248);
        assert_eq!(kib(l1.cache_bytes(0, 8)), 248);
        assert_eq!(kib(l1.cache_bytes(0, 9)), 240);
        // Two CTAs of 8 KiB tiles: 18 KB, the 32 KB step.
        assert_eq!(kib(l1.cache_bytes(8 << 10, 2)), 224);
        // 200 KiB: the largest step, 228 KB; more than it holds takes it too.
        assert_eq!(kib(l1.cache_bytes(200 << 10, 1)), 28);
        assert_eq!(kib(l1.cache_bytes(200 << 10, 2)), 28);
        let off = |field: &str, value: &str| {
            let o = BTreeMap::from([(field.to_string(), ron::from_str(value).unwrap())]);
            Preset::with_overrides("h100-sxm", &o).map(|p| p.l1.cache_bytes(0, 1))
        };
        assert_eq!(off("l1.unified_bytes", "0").unwrap(), 0);
        let e = off("l1.carveouts", "[8192, 0]").unwrap_err().to_string();
        assert!(e.contains("l1.carveouts [8192, 0] must list"), "{e}");
        let e = off("l1.ways", "0").unwrap_err().to_string();
        assert!(e.contains("l1.ways = 0 must be in 1..=1024"), "{e}");
    }
}
