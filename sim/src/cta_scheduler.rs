//! How many CTAs of a kernel fit on one SM at once: the minimum of the thread, register,
//! shared-memory, warp-slot and CTA-slot limits.

use crate::preset::Preset;
use isa::program::{Kernel, WARP_SIZE};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Occupancy {
    pub ctas: u32,
    /// Each limit: (name, CTAs it allows).
    pub limits: Vec<(&'static str, u32)>,
}

impl Occupancy {
    /// The limit that binds (the first, in the listed order, on a tie).
    pub fn limiter(&self) -> &'static str {
        self.limits
            .iter()
            .min_by_key(|(_, n)| *n)
            .map(|(name, _)| *name)
            .unwrap_or("none")
    }
}

pub fn occupancy(k: &Kernel, p: &Preset) -> Occupancy {
    let warps = k.warps_per_cta();
    let threads = warps * WARP_SIZE;
    let per_warp = (k.regs_per_thread * WARP_SIZE).div_ceil(p.regs.alloc_unit) * p.regs.alloc_unit;
    let regs = per_warp * warps;
    let limits = vec![
        ("threads", p.sm.max_threads / threads.max(1)),
        (
            "warps",
            p.sm.partitions * p.sm.warps_per_partition / warps.max(1),
        ),
        ("regs", p.regs.per_sm / regs.max(1)),
        ("smem", (p.smem.per_sm / k.smem_bytes.max(1)) as u32),
        ("ctas", p.sm.max_ctas),
    ];
    Occupancy {
        ctas: limits.iter().map(|(_, n)| *n).min().unwrap_or(0),
        limits,
    }
}
