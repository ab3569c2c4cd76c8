//! The report's figures under Nsight Compute's metric names (the `ncu` object of `--json`, the
//! `ncu` column of `--csv`, the summary's `SOL` line), so a run lines up with `ncu --csv`.
//!
//! Every name is one that Nsight Compute's own section and rule files request on compute
//! capability 9.0 (SpeedOfLight, ComputeWorkloadAnalysis, MemoryWorkloadAnalysis,
//! WarpStateStats, SourceCounters, Occupancy, IssueSlotUtilization) or that its nvprof
//! comparison table maps an nvprof metric to; `docs/cli.md` lists each with its source. Figures
//! without such a name (the shared-memory port, TMA loads in flight and the TMA fill path, the
//! SM's L2 port, MUFU and SHFL occupancy) are left out rather than given one that counts
//! something else.
//!
//! `.avg` is over every SM of the GPU. Nsight Compute's active cycles are an SM's cycles with
//! a warp resident; the engine does not keep them per SM, so `…_active` figures count the
//! whole run on each SM that ran a CTA (the `units` and `schedulers` definitions), and
//! `…_elapsed` ones the whole run on every SM.

use super::report::Report;
use super::warp_state::State;
use crate::gpu::preset::Preset;
use std::collections::{BTreeMap, BTreeSet};

/// The SM pipes with a Compute Workload Analysis name: the report's unit and the counter.
const PIPES: [(&str, &str); 3] = [
    ("tensor", "sm__pipe_tensor_op_hmma_cycles_active"),
    ("fma", "sm__pipe_fma_cycles_active"),
    ("alu", "sm__pipe_alu_cycles_active"),
];

/// The SM's compute units, whose largest elapsed percentage stands for `sm__throughput`
/// (Nsight Compute's compound is the largest of its sub-metrics' percentages).
const SM_UNITS: [&str; 6] = ["tensor", "fma", "alu", "mufu", "shfl", "issue"];

pub const SM_THROUGHPUT: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
pub const L2_THROUGHPUT: &str = "lts__t_sectors.avg.pct_of_peak_sustained_elapsed";
pub const DRAM_THROUGHPUT: &str = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed";
pub const WARP_CYCLES_PER_ISSUED: &str = "smsp__average_warp_latency_per_inst_issued.ratio";
pub const THREADS_PER_INST: &str = "smsp__thread_inst_executed_per_inst_executed.ratio";

const STALL_RATIO: (&str, &str) = (
    "smsp__average_warps_issue_stalled_",
    "_per_issue_active.ratio",
);
const STALL_SAMPLES: &str = "smsp__pcsamp_warps_issue_stalled_";

/// The unit of a metric of [`metrics`]: Nsight Compute's quantity, in these units.
pub fn unit(name: &str) -> &'static str {
    if name.starts_with(STALL_SAMPLES) {
        "warp-cycles"
    } else if name.starts_with("smsp__average_warp") {
        "cycles/inst"
    } else if name.contains(".pct") {
        "%"
    } else {
        match name {
            "gpc__cycles_elapsed.max" => "cycles",
            "gpu__time_duration.sum" => "ns",
            "smsp__inst_executed.sum" => "warp-inst",
            "launch__waves_per_multiprocessor" => "waves",
            "dram__bytes_read.sum" | "dram__bytes_write.sum" | "lts__t_bytes.sum" => "B",
            "dram__bytes.sum.per_second" => "B/s",
            "smsp__issue_active.avg.per_cycle_active" => "inst/cycle",
            THREADS_PER_INST => "threads",
            "smsp__warps_active.avg.per_cycle_active"
            | "smsp__warps_eligible.avg.per_cycle_active" => "warps",
            _ => "",
        }
    }
}

/// The report's figures under Nsight Compute's names; `p` is the preset that ran.
pub fn metrics(r: &Report, p: &Preset) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    let mut put = |name: String, value: f64| {
        m.insert(name, value);
    };
    let cycles = r.cycles.max(1) as f64;
    let active = |unit: &str| r.units[unit].busy;
    let elapsed = |unit: &str| active(unit) * r.sms as f64 / r.sms_total.max(1) as f64;

    put("gpc__cycles_elapsed.max".into(), r.cycles as f64);
    put("gpu__time_duration.sum".into(), r.time_us * 1e3);
    put("smsp__inst_executed.sum".into(), r.instructions as f64);
    // The grid over one full wave: ⌈·⌉ is `waves`, the fraction the last wave's fill.
    put(
        "launch__waves_per_multiprocessor".into(),
        (r.waves.max(1) - 1) as f64 + r.last_wave_fill,
    );

    let sm = SM_UNITS.iter().map(|u| elapsed(u)).fold(0.0, f64::max);
    put(SM_THROUGHPUT.into(), 100.0 * sm);
    put(
        L2_THROUGHPUT.into(),
        100.0 * r.l2.bytes as f64 / cycles / p.memory.l2.bytes_per_cycle,
    );
    // A rate over the preset's HBM bandwidth, as `dram.bandwidth_gbs` is: in time, since the
    // DRAM's clock is not the SM's.
    put(
        DRAM_THROUGHPUT.into(),
        100.0 * r.dram.bandwidth_gbs / p.memory.hbm.bandwidth_gbs,
    );
    for (unit, counter) in PIPES {
        put(
            format!("{counter}.avg.pct_of_peak_sustained_active"),
            100.0 * active(unit),
        );
        put(
            format!("{counter}.avg.pct_of_peak_sustained_elapsed"),
            100.0 * elapsed(unit),
        );
    }

    // Only a run whose loads went through an L1 has it: others' metrics stay as they were.
    if let Some(l1) = &r.l1 {
        put("l1tex__t_sector_hit_rate.pct".into(), 100.0 * l1.hit_rate);
    }
    put("lts__t_sector_hit_rate.pct".into(), 100.0 * r.l2.hit_rate);
    // The slices' traffic: a read that rode on another SM's read-out counts once.
    put(
        "lts__t_bytes.sum".into(),
        (r.l2.bytes - r.l2.shared_bytes) as f64,
    );
    put("dram__bytes_read.sum".into(), r.dram.read_bytes as f64);
    // Lines still dirty in L2 at the end are written after the kernel, out of its counters.
    put(
        "dram__bytes_write.sum".into(),
        r.dram.write_bytes.saturating_sub(r.dram.flushed_bytes) as f64,
    );
    put(
        "dram__bytes.sum.per_second".into(),
        r.dram.bandwidth_gbs * 1e9,
    );

    let sch = &r.schedulers;
    put(
        "smsp__issue_active.avg.pct_of_peak_sustained_active".into(),
        100.0 * active("issue"),
    );
    put(
        "smsp__issue_active.avg.per_cycle_active".into(),
        sch.issued_per_cycle,
    );
    put(
        "smsp__warps_active.avg.per_cycle_active".into(),
        sch.active_warps,
    );
    put(
        "smsp__warps_eligible.avg.per_cycle_active".into(),
        sch.eligible_warps,
    );
    put(
        "sm__warps_active.avg.pct_of_peak_sustained_active".into(),
        100.0 * sch.active_warps / p.sm.warps_per_partition.max(1) as f64,
    );

    // Warp State Statistics over every warp: warp-cycles per issued instruction, by reason.
    let issued = r.instructions.max(1) as f64;
    let lifetime: u64 = r.roles.values().map(|role| role.lifetime).sum();
    put(WARP_CYCLES_PER_ISSUED.into(), lifetime as f64 / issued);
    let reasons: BTreeSet<&str> = State::ALL.iter().map(|s| s.ncu()).collect();
    for reason in reasons {
        let c: u64 = r.roles.values().map(|role| role.ncu[reason]).sum();
        let (head, tail) = STALL_RATIO;
        put(format!("{head}{reason}{tail}"), c as f64 / issued);
        // Nsight Compute samples warps every so many cycles; here every warp-cycle counts.
        put(format!("{STALL_SAMPLES}{reason}"), c as f64);
    }
    // Only a run with lanes masked off has it: others' metrics stay as they were.
    if r.roles.values().any(|role| role.divergence.is_some()) {
        let lanes: u64 = r.roles.values().map(|role| role.lanes).sum();
        put(THREADS_PER_INST.into(), lanes as f64 / issued);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_has_a_unit() {
        for name in [
            "smsp__pcsamp_warps_issue_stalled_barrier",
            "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
            WARP_CYCLES_PER_ISSUED,
            SM_THROUGHPUT,
            "lts__t_sector_hit_rate.pct",
            "gpu__time_duration.sum",
            "dram__bytes.sum.per_second",
        ] {
            assert_ne!(unit(name), "", "{name}");
        }
        assert_eq!(
            unit("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"),
            "%"
        );
        assert_eq!(unit("smsp__pcsamp_warps_issue_stalled_wait"), "warp-cycles");
    }
}
