//! How many CTAs of a block fit on one SM, and how the CTAs of a grid fill the GPU in waves.
//!
//! Occupancy is the minimum of four limits (CUDA C++ Programming Guide, "Occupancy"; the CUDA
//! occupancy calculator): threads, in whole warps; registers, allocated per warp in units of
//! `reg_alloc_unit`; shared memory; and the CTA slots. The simulator's CTA scheduler applies the
//! same limits (`gpu::cta_scheduler`, which adds the warp slots of each partition: the same
//! limit for blocks of whole warpgroups). Waves: the grid's tiles over `SMs · CTAs per SM`.

use super::error::{in_range, InputError};
use super::gpu::GpuSpec;
use crate::gpu::cta_scheduler::max_active_clusters;

const WARP: u64 = 32;

/// What one CTA asks of an SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub threads: u64,
    pub regs_per_thread: u64,
    /// Shared memory, bytes.
    pub smem: u64,
}

impl Block {
    /// A block `gpu` can launch: 1 to its most threads and registers per thread, at most its
    /// per-CTA shared memory (0 allowed).
    pub fn new(
        gpu: &GpuSpec,
        threads: u64,
        regs_per_thread: u64,
        smem: u64,
    ) -> Result<Block, InputError> {
        in_range("threads", threads, gpu.threads_per_cta)?;
        in_range("registers", regs_per_thread, gpu.max_regs_per_thread)?;
        if smem > gpu.smem_per_cta {
            return Err(InputError::AtMost {
                name: "shared memory",
                value: smem,
                max: gpu.smem_per_cta,
            });
        }
        Ok(Block {
            threads,
            regs_per_thread,
            smem,
        })
    }

    /// Warps, the last one partly filled if the threads are not a multiple of 32.
    pub fn warps(&self) -> u64 {
        self.threads.div_ceil(WARP)
    }

    /// Registers one warp is allocated: the threads' rounded up to the allocation unit.
    pub fn regs_per_warp(&self, gpu: &GpuSpec) -> u64 {
        (self.regs_per_thread * WARP).div_ceil(gpu.reg_alloc_unit) * gpu.reg_alloc_unit
    }
}

/// CTAs per SM under each of the four limits, and the binding one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Occupancy {
    pub blocks: u64,
    pub regs: u64,
    /// `None` when the block uses no shared memory.
    pub smem: Option<u64>,
    pub threads: u64,
    pub ctas: u64,
    pub limiter: &'static str,
}

impl Occupancy {
    /// The limits by name, alphabetically (the order that breaks ties).
    pub fn limits(&self) -> [(&'static str, Option<u64>); 4] {
        [
            ("blocks", Some(self.blocks)),
            ("regs", Some(self.regs)),
            ("smem", self.smem),
            ("threads", Some(self.threads)),
        ]
    }
}

/// The threads limit: whole warps of the SM's threads.
pub fn threads_limit(gpu: &GpuSpec, b: &Block) -> u64 {
    gpu.threads_per_sm / (b.warps() * WARP)
}

pub fn regs_limit(gpu: &GpuSpec, b: &Block) -> u64 {
    gpu.regs_per_sm / (b.regs_per_warp(gpu) * b.warps())
}

pub fn smem_limit(gpu: &GpuSpec, b: &Block) -> Option<u64> {
    (b.smem > 0).then(|| gpu.smem_per_sm / b.smem)
}

pub fn occupancy(gpu: &GpuSpec, b: &Block) -> Occupancy {
    let mut o = Occupancy {
        blocks: gpu.ctas_per_sm,
        regs: regs_limit(gpu, b),
        smem: smem_limit(gpu, b),
        threads: threads_limit(gpu, b),
        ctas: 0,
        limiter: "",
    };
    // `min_by_key` keeps the first of equal minima: alphabetical order breaks ties.
    let (limiter, ctas) = o
        .limits()
        .into_iter()
        .filter_map(|(name, v)| Some((name, v?)))
        .min_by_key(|&(_, v)| v)
        .expect("the CTA slots always limit");
    o.ctas = ctas;
    o.limiter = limiter;
    o
}

/// How `tiles` CTAs fill the GPU in waves of `SMs · CTAs per SM`.
#[derive(Clone, Debug, PartialEq)]
pub struct Waves {
    pub tiles: u64,
    pub per_wave: u64,
    pub waves: u64,
    /// Share of the last wave's slots that hold a tile.
    pub last_fill: f64,
    /// Share of all wave slots that hold a tile.
    pub efficiency: f64,
}

/// `tiles` and `ctas_per_sm` must be at least 1 (an occupancy from [`occupancy`] that fits).
pub fn waves(gpu: &GpuSpec, tiles: u64, ctas_per_sm: u64) -> Waves {
    fill(tiles, gpu.sms * ctas_per_sm)
}

/// As [`waves`] for a grid of clusters of `size` CTAs, each placed on one GPC (SMs per GPC in
/// `gpc_sms`): a wave holds the clusters each GPC's CTA slots allow
/// (`cudaOccupancyMaxActiveClusters`), so a GPC's slots short of a whole cluster stay idle. None
/// when no GPC holds one. The efficiency counts the idle slots as wasted.
pub fn cluster_waves(tiles: u64, ctas_per_sm: u32, gpc_sms: &[u32], size: u32) -> Option<Waves> {
    let clusters = max_active_clusters(gpc_sms, ctas_per_sm, size);
    let slots: u64 = gpc_sms.iter().map(|&n| u64::from(n * ctas_per_sm)).sum();
    (clusters > 0).then(|| {
        let w = fill(tiles, u64::from(clusters * size));
        Waves {
            efficiency: tiles as f64 / (w.waves * slots) as f64,
            ..w
        }
    })
}

/// `tiles` in waves of `per_wave` (at least 1).
fn fill(tiles: u64, per_wave: u64) -> Waves {
    let waves = tiles.div_ceil(per_wave);
    Waves {
        tiles,
        per_wave,
        waves,
        last_fill: (tiles - (waves - 1) * per_wave) as f64 / per_wave as f64,
        efficiency: tiles as f64 / (waves * per_wave) as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(threads: u64, regs: u64, smem: u64) -> Block {
        Block::new(&GpuSpec::h100_sxm(), threads, regs, smem).unwrap()
    }

    #[test]
    fn clusters_fill_each_gpc_with_whole_clusters() {
        // Eight GPCs of 18, 18 and six of 16 SMs, one CTA per SM: clusters of 4 leave two SMs
        // of each 18-SM GPC idle, clusters of 16 two of those and none of the others.
        let gpcs = [18, 18, 16, 16, 16, 16, 16, 16];
        let w = |size| cluster_waves(128, 1, &gpcs, size).unwrap();
        assert_eq!((w(2).per_wave, w(2).waves), (132, 1));
        assert_eq!((w(4).per_wave, w(4).waves), (128, 1));
        assert_eq!((w(4).last_fill, w(4).efficiency), (1.0, 128.0 / 132.0));
        assert_eq!(w(16).per_wave, 128);
        assert_eq!(cluster_waves(132, 1, &gpcs, 4).unwrap().waves, 2);
        assert_eq!(cluster_waves(32, 1, &[8, 8], 16), None);
        assert_eq!(cluster_waves(32, 2, &[8, 8], 16).unwrap().per_wave, 32);
    }

    #[test]
    fn each_limit_follows_its_resource() {
        let gpu = GpuSpec::h100_sxm();
        // 256 threads, 64 registers, 48 KiB: threads 8, registers 65,536 / (8 x 2,048) = 4,
        // shared memory 233,472 / 49,152 = 4, CTA slots 32; registers win the tie.
        let o = occupancy(&gpu, &block(256, 64, 48 << 10));
        assert_eq!((o.threads, o.regs, o.smem, o.blocks), (8, 4, Some(4), 32));
        assert_eq!((o.ctas, o.limiter), (4, "regs"));
        // 32 threads, no shared memory: only the CTA slots bind.
        let o = occupancy(&gpu, &block(32, 32, 0));
        assert_eq!(
            (o.threads, o.smem, o.ctas, o.limiter),
            (64, None, 32, "blocks")
        );
    }

    #[test]
    fn registers_go_per_warp_in_units_of_256_and_threads_in_whole_warps() {
        let gpu = GpuSpec::h100_sxm();
        // 33 registers: 1,056 a warp, allocated 1,280.
        assert_eq!(block(128, 33, 0).regs_per_warp(&gpu), 1280);
        assert_eq!(regs_limit(&gpu, &block(128, 33, 0)), 65_536 / (4 * 1280));
        // 100 threads take 4 warps' slots.
        assert_eq!(threads_limit(&gpu, &block(100, 32, 0)), 16);
    }

    #[test]
    fn blocks_outside_the_gpus_limits_are_errors() {
        let gpu = GpuSpec::rtx3070();
        for (threads, regs, smem, error) in [
            (0, 32, 0, "threads = 0 must be in 1..=1024"),
            (1025, 32, 0, "threads = 1025 must be in 1..=1024"),
            (128, 256, 0, "registers = 256 must be in 1..=255"),
            (
                128,
                32,
                101_377,
                "shared memory = 101377 must be at most 101376",
            ),
        ] {
            assert_eq!(
                Block::new(&gpu, threads, regs, smem)
                    .unwrap_err()
                    .to_string(),
                error
            );
        }
    }

    #[test]
    fn waves_count_full_and_partial_waves() {
        let gpu = GpuSpec::rtx3070();
        // 100 tiles on 46 SMs x 2: 100 = 92 + 8.
        let w = waves(&gpu, 100, 2);
        assert_eq!((w.tiles, w.per_wave, w.waves), (100, 92, 2));
        assert_eq!(w.last_fill, 8.0 / 92.0);
        assert_eq!(w.efficiency, 100.0 / 184.0);
        // One tile past a full wave doubles the waves.
        let h100 = GpuSpec::h100_sxm();
        assert_eq!(waves(&h100, 132, 1).efficiency, 1.0);
        assert_eq!(waves(&h100, 133, 1).waves, 2);
    }
}
