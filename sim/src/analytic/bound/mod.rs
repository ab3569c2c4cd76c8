//! The generic resource bound of any compiled kernel: walk every warp's program functionally (no
//! timing), add up what each instruction asks of each unit with the engine's own cost formulas,
//! and divide by the unit's capacity. The busiest unit bounds the kernel's time from below: no
//! schedule can finish sooner than the time its busiest unit needs.
//!
//! Units and capacities (per cycle):
//! - per SM: `tensor` (HGMMA math, at least the RS floor; one at a time), `smem` (the shared-memory port: HGMMA operands,
//!   ld/st.shared and cp.async wavefronts, TMA box bytes over the port width), `tma` (TMA issue
//!   cycles), `tma_fill` (TMA load bytes, each box at its fill rate), `tma_store` (TMA store
//!   bytes over `tma.store_bytes_per_cycle`), `l1` (the L1's tag stage:
//!   `max(l1.access_cycles, lines x l1.line_cycles)` per global or local warp access, a load
//!   through the L1 data cache as a hit), `l2_port` (bytes through the SM's port to L2,
//!   `memory.sm_bytes_per_cycle`; of loads through the L1 data cache only the sectors no such
//!   load read before: each reaches some SM once);
//! - per partition (the busiest one counts): `issue` (one instruction), `alu`, `fma`, `mufu`, `shfl`,
//!   `mma` (pipe cycles per warp-instruction); warp `w` of a CTA runs on partition `w % partitions`;
//! - GPU-wide: `l2` (all L2 request bytes over `memory.l2.bytes_per_cycle`) and `hbm` (bytes that
//!   must cross HBM during the kernel over the sustained bandwidth).
//!
//! CTA `b` runs on SM `b % SMs`, which is the engine's placement for the first wave and for later
//! waves of equal CTAs; an SM's demand is the sum over its CTAs, so a last wave with one CTA costs
//! a whole CTA time (wave quantization). HBM bytes are the distinct L2 lines that a miss must fill
//! (touched by a read or a partial-line write) plus the written lines that cannot all stay dirty
//! in L2 at the end (written lines beyond the L2's capacity). Atomics: the k-th atomic of CTA `c`
//! is assumed to be the `(c + k·num_ctas)`-th on its counter (round-robin tile order).
//! Blind spots (see `docs/analytic.md`): no latency, no dependencies between instructions or
//! warps, L2 slices and HBM channels assumed evenly loaded.

mod demand;
mod error;
mod inst;
mod lines;
#[cfg(test)]
mod tests;
mod walk;

pub use demand::Demand;
pub use error::{BoundError, WalkError};

use crate::engine::server::fp_to_cycles;
use crate::gpu::cta_scheduler::occupancy;
use crate::gpu::preset::Preset;
use crate::sm::pipes::pipe_index;
use isa::program::{Kernel, Pipe};
use walk::Walk;

/// Walk steps (ops visited, 32 per per-lane address, condition or trip count, one per TMA box
/// span) before the bound gives
/// up. A step costs about 80 ns (a 4096³ GEMM walks 4.8 M steps in 0.4 s, a quarter of its
/// simulation time), so this caps the walk near 20 s, for kernels that take minutes to simulate.
pub const WALK_BUDGET: u64 = 1 << 28;

/// Unit names in tie-break order: of units with equal time, the first one listed binds.
pub const UNITS: [&str; 15] = [
    "tensor",
    "mma",
    "smem",
    "issue",
    "mufu",
    "fma",
    "alu",
    "shfl",
    "tma",
    "tma_fill",
    "tma_store",
    "l1",
    "l2_port",
    "l2",
    "hbm",
];

/// The bound of one kernel.
#[derive(Clone, Debug)]
pub struct Bound {
    /// The binding unit's time, rounded up.
    pub cycles: u64,
    /// The binding unit (`none` when the kernel asks nothing of any unit).
    pub binding: &'static str,
    /// Every unit's time in cycles, in [`UNITS`] order (per-SM units: the busiest SM).
    pub units: Vec<(&'static str, f64)>,
    /// Demand summed over all SMs (per partition index for the pipes and issue slots).
    pub total: Demand,
    /// Bytes read from HBM: fill units whose first touch fills them.
    pub dram_read_bytes: u64,
    /// Bytes that must be written back to HBM before the kernel ends.
    pub dram_write_bytes: u64,
    /// ⌈CTAs / (SMs · CTAs per SM)⌉.
    pub waves: u32,
}

impl Bound {
    /// The time of unit `name`.
    pub fn unit(&self, name: &str) -> Option<f64> {
        self.units.iter().find(|(n, _)| *n == name).map(|u| u.1)
    }
}

/// The bound of `k` on `p` at `clock_mhz` (which converts HBM bandwidth to bytes per cycle).
pub fn bound(k: &Kernel, p: &Preset, clock_mhz: f64) -> Result<Bound, BoundError> {
    bound_within(k, p, clock_mhz, WALK_BUDGET)
}

/// As [`bound`], giving up after `budget` walk steps.
pub fn bound_within(
    k: &Kernel,
    p: &Preset,
    clock_mhz: f64,
    budget: u64,
) -> Result<Bound, BoundError> {
    if !(clock_mhz > 0.0 && clock_mhz.is_finite()) {
        return Err(BoundError::BadClock(clock_mhz));
    }
    let occ = occupancy(k, p);
    if occ.ctas == 0 {
        return Err(BoundError::NoCtaFits(occ.limiter()));
    }
    let sms = p.sm.count.max(1);
    let parts = p.sm.partitions.max(1) as usize;
    let mut walk = Walk::new(k, p, budget);
    let mut per_sm = vec![Demand::new(parts); sms.min(k.grid) as usize];
    for b in 0..k.grid {
        walk.cta(b, &mut per_sm[(b % sms) as usize])?;
    }

    let mut total = Demand::new(parts);
    for d in &per_sm {
        total.add(d);
    }
    // Lines counts fill units (`memory.hbm.fetch_bytes`); a dirty unit's line is written back
    // whole, so counting the units keeps the write-back a lower bound.
    let unit = p.memory.hbm.fetch_bytes;
    let (fills, dirty) = walk.lines.counts();
    // At most the L2's capacity can still be dirty when the kernel ends; the rest was written
    // back during it.
    let l2_units = p.memory.l2.bytes / unit;
    let dram_read_bytes = fills * unit;
    let dram_write_bytes = dirty.saturating_sub(l2_units) * unit;
    let m = &p.memory;
    let hbm_bytes_per_cycle = m.hbm.bandwidth_gbs * m.hbm.efficiency * 1e9 / (clock_mhz * 1e6);

    let busiest = |f: &dyn Fn(&Demand) -> f64| per_sm.iter().map(f).fold(0.0, f64::max);
    let part_max = |v: &mut dyn Iterator<Item = u64>| v.max().unwrap_or(0) as f64;
    let pipe = |i: usize| busiest(&|d: &Demand| part_max(&mut d.pipes.iter().map(|p| p[i])));
    let issue_rate = p.sm.issue_per_partition.max(1) as f64;
    let times = [
        busiest(&|d: &Demand| d.tensor as f64),
        pipe(pipe_index(Pipe::Mma)),
        busiest(&|d: &Demand| d.smem as f64),
        busiest(&|d: &Demand| part_max(&mut d.issue.iter().copied()) / issue_rate),
        pipe(pipe_index(Pipe::Mufu)),
        pipe(pipe_index(Pipe::Fma)),
        pipe(pipe_index(Pipe::Alu)),
        pipe(pipe_index(Pipe::Shfl)),
        busiest(&|d: &Demand| d.tma as f64),
        busiest(&|d: &Demand| fp_to_cycles(d.fill_time)),
        busiest(&|d: &Demand| d.store_bytes as f64 / p.tma.store_bytes_per_cycle),
        busiest(&|d: &Demand| d.l1 as f64),
        busiest(&|d: &Demand| d.port_bytes as f64 / m.sm_bytes_per_cycle),
        total.l2_bytes as f64 / m.l2.bytes_per_cycle,
        (dram_read_bytes + dram_write_bytes) as f64 / hbm_bytes_per_cycle,
    ];
    let units: Vec<(&'static str, f64)> = UNITS.iter().copied().zip(times).collect();
    let (mut binding, mut max) = ("none", 0.0);
    for &(name, t) in &units {
        if t > max {
            (binding, max) = (name, t);
        }
    }
    Ok(Bound {
        cycles: max.ceil() as u64,
        binding,
        units,
        total,
        dram_read_bytes,
        dram_write_bytes,
        waves: k.grid.div_ceil(sms * occ.ctas),
    })
}
