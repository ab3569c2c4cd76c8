//! The GEMM resource model K1 of the project's seed models (`docs/analytic.md`): FLOPs, minimum
//! and tiled bytes, shared memory and registers per CTA, and whether a config launches (its
//! occupancy and waves: [`super::occupancy`]); plus an L2-aware variant of the DRAM bytes.
//!
//! Operands are 16-bit (2 bytes); C is written once. Tiled bytes assume no L2: every CTA reads
//! its A row-panel and B column-panel from DRAM.

use super::error::{in_range, InputError};
use super::gpu::GpuSpec;
use super::occupancy::{occupancy, Block, Occupancy};
use std::fmt;

/// Bytes per element of A, B and C (fp16/bf16).
pub const ELEM_BYTES: u64 = 2;
/// The analytic model's register estimate adds this to the accumulator registers per thread (addresses,
/// indices, operand fragments).
pub const REGS_OVERHEAD: u64 = 40;
/// Largest M, N or K accepted: keeps every byte and FLOP count within u64.
pub const MAX_DIM: u64 = 1 << 20;

/// A GEMM problem `C[M, N] = A[M, K] · B[K, N]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gemm {
    pub m: u64,
    pub n: u64,
    pub k: u64,
}

impl Gemm {
    pub fn new(m: u64, n: u64, k: u64) -> Result<Gemm, InputError> {
        Ok(Gemm {
            m: in_range("M", m, MAX_DIM)?,
            n: in_range("N", n, MAX_DIM)?,
            k: in_range("K", k, MAX_DIM)?,
        })
    }

    pub fn flops(&self) -> u64 {
        2 * self.m * self.n * self.k
    }

    /// Each matrix touched once.
    pub fn min_bytes(&self) -> u64 {
        ELEM_BYTES * (self.m * self.k + self.k * self.n + self.m * self.n)
    }

    pub fn tile_rows(&self, t: &TileConfig) -> u64 {
        self.m.div_ceil(t.bm)
    }

    pub fn tile_cols(&self, t: &TileConfig) -> u64 {
        self.n.div_ceil(t.bn)
    }

    pub fn tiles(&self, t: &TileConfig) -> u64 {
        self.tile_rows(t) * self.tile_cols(t)
    }

    /// A and B bytes read with no L2: A once per column of tiles, B once per row of tiles.
    pub fn tiled_read_bytes(&self, t: &TileConfig) -> u64 {
        ELEM_BYTES * (self.m * self.k * self.tile_cols(t) + self.k * self.n * self.tile_rows(t))
    }

    pub fn write_bytes(&self) -> u64 {
        ELEM_BYTES * self.m * self.n
    }

    /// DRAM bytes with no L2: every re-read of A and B goes to DRAM.
    pub fn tiled_bytes(&self, t: &TileConfig) -> u64 {
        self.tiled_read_bytes(t) + self.write_bytes()
    }

    /// DRAM bytes when a fraction `hit` of the tiled A/B reads hits L2 (an assumption, or the
    /// hit rate a simulation measured). Never below the minimum bytes: first touches miss.
    pub fn l2_dram_bytes(&self, t: &TileConfig, hit: f64) -> f64 {
        let compulsory = (self.min_bytes() - self.write_bytes()) as f64;
        let reads = (1.0 - hit) * self.tiled_read_bytes(t) as f64;
        reads.max(compulsory) + self.write_bytes() as f64
    }

    /// The L2 hit rate of A/B reads above which the tiled GEMM is compute-bound; 0 if it is
    /// compute-bound without L2, `None` if even the minimum bytes leave it memory-bound.
    pub fn compute_bound_hit(&self, gpu: &GpuSpec, t: &TileConfig) -> Option<f64> {
        let affordable = self.flops() as f64 / gpu.balance() - self.write_bytes() as f64;
        if affordable < (self.min_bytes() - self.write_bytes()) as f64 {
            return None;
        }
        Some((1.0 - affordable / self.tiled_read_bytes(t) as f64).max(0.0))
    }

    /// Fraction of the padded tile grid that lies outside the problem (wasted work).
    pub fn padding(&self, t: &TileConfig) -> f64 {
        let padded = (self.tile_rows(t) * t.bm * self.tile_cols(t) * t.bn) as f64;
        1.0 - (self.m * self.n) as f64 / padded
    }
}

impl fmt::Display for Gemm {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} x {} x {}", self.m, self.n, self.k)
    }
}

/// The seed's `TileConfig(BM, BN, BK, num_warps, num_stages)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileConfig {
    pub bm: u64,
    pub bn: u64,
    pub bk: u64,
    pub warps: u64,
    pub stages: u64,
}

impl TileConfig {
    /// Checks the ranges that keep the resource arithmetic meaningful (32 warps = 1024 threads,
    /// the per-CTA maximum on every GPU here).
    pub fn new(
        bm: u64,
        bn: u64,
        bk: u64,
        warps: u64,
        stages: u64,
    ) -> Result<TileConfig, InputError> {
        Ok(TileConfig {
            bm: in_range("BM", bm, 1024)?,
            bn: in_range("BN", bn, 1024)?,
            bk: in_range("BK", bk, 1024)?,
            warps: in_range("warps", warps, 32)?,
            stages: in_range("stages", stages, 16)?,
        })
    }

    /// Parses `BMxBNxBK`, e.g. `128x128x64`.
    pub fn parse_tile(s: &str) -> Result<(u64, u64, u64), InputError> {
        let bad = || InputError::BadTile(s.to_string());
        let dims: Vec<u64> = s
            .split('x')
            .map(|d| d.trim().parse::<u64>().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        match dims[..] {
            [bm, bn, bk] => Ok((bm, bn, bk)),
            _ => Err(bad()),
        }
    }

    pub fn threads(&self) -> u64 {
        32 * self.warps
    }

    /// A and B tiles for every pipeline stage.
    pub fn smem_bytes(&self) -> u64 {
        self.stages * (self.bm * self.bk + self.bk * self.bn) * ELEM_BYTES
    }

    /// The seed's estimate: the fp32 accumulator tile spread over the threads, plus overhead.
    pub fn regs_per_thread(&self) -> u64 {
        self.bm * self.bn / self.threads() + REGS_OVERHEAD
    }

    /// What one CTA of this config asks of an SM.
    pub fn block(&self) -> Block {
        Block {
            threads: self.threads(),
            regs_per_thread: self.regs_per_thread(),
            smem: self.smem_bytes(),
        }
    }
}

impl fmt::Display for TileConfig {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "{}x{}x{} {}w {}s",
            self.bm, self.bn, self.bk, self.warps, self.stages
        )
    }
}

/// Why a config cannot launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Illegal {
    Smem {
        bytes: u64,
        max: u64,
    },
    Regs {
        per_thread: u64,
        max: u64,
    },
    /// Legal per CTA, but not even one CTA fits on an SM under this limit.
    NoFit {
        limiter: &'static str,
    },
}

impl fmt::Display for Illegal {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Illegal::Smem { bytes, max } => write!(
                f,
                "shared memory {} B > {} B per CTA",
                super::fmt::grouped(*bytes),
                super::fmt::grouped(*max)
            ),
            Illegal::Regs { per_thread, max } => {
                write!(f, "registers {per_thread} per thread > {max}")
            }
            Illegal::NoFit { limiter } => write!(f, "no CTA fits on an SM ({limiter} limit 0)"),
        }
    }
}

/// The occupancy of a launchable config; shared memory is checked first, then registers.
pub fn check(gpu: &GpuSpec, t: &TileConfig) -> Result<Occupancy, Illegal> {
    if t.smem_bytes() > gpu.smem_per_cta {
        return Err(Illegal::Smem {
            bytes: t.smem_bytes(),
            max: gpu.smem_per_cta,
        });
    }
    if t.regs_per_thread() > gpu.max_regs_per_thread {
        return Err(Illegal::Regs {
            per_thread: t.regs_per_thread(),
            max: gpu.max_regs_per_thread,
        });
    }
    let o = occupancy(gpu, &t.block());
    if o.ctas == 0 {
        return Err(Illegal::NoFit { limiter: o.limiter });
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile(bm: u64, bn: u64, bk: u64, warps: u64, stages: u64) -> TileConfig {
        TileConfig::new(bm, bn, bk, warps, stages).unwrap()
    }

    #[test]
    fn bytes_follow_the_closed_forms() {
        let g = Gemm::new(300, 200, 100).unwrap();
        let t = tile(128, 64, 32, 4, 2);
        assert_eq!(g.flops(), 2 * 300 * 200 * 100);
        assert_eq!(g.min_bytes(), 2 * (300 * 100 + 100 * 200 + 300 * 200));
        // 3 rows and 4 columns of tiles: A read 4 times, B read 3 times.
        assert_eq!(g.tiles(&t), 12);
        assert_eq!(
            g.tiled_bytes(&t),
            2 * (300 * 100 * 4 + 100 * 200 * 3 + 300 * 200)
        );
    }

    #[test]
    fn one_tile_reads_each_matrix_once() {
        let g = Gemm::new(64, 64, 512).unwrap();
        let t = tile(64, 64, 32, 4, 2);
        assert_eq!(g.tiled_bytes(&t), g.min_bytes());
        assert_eq!(g.padding(&t), 0.0);
    }

    #[test]
    fn l2_bytes_interpolate_between_tiled_and_minimum() {
        let g = Gemm::new(1024, 1024, 1024).unwrap();
        let t = tile(128, 128, 32, 4, 2);
        assert_eq!(g.l2_dram_bytes(&t, 0.0), g.tiled_bytes(&t) as f64);
        assert_eq!(g.l2_dram_bytes(&t, 1.0), g.min_bytes() as f64);
        // 8 column tiles and 8 row tiles: half the reads hitting leaves 4 reads of A and B.
        let expect = 2.0 * (1024.0 * 1024.0 * 4.0 * 2.0 + 1024.0 * 1024.0);
        assert_eq!(g.l2_dram_bytes(&t, 0.5), expect);
    }

    #[test]
    fn compute_bound_hit_balances_memory_and_compute_time() {
        let gpu = GpuSpec::rtx3070();
        let g = Gemm::new(4096, 4096, 4096).unwrap();
        let t = tile(128, 128, 64, 4, 3);
        let h = g.compute_bound_hit(&gpu, &t).unwrap();
        let t_memory = g.l2_dram_bytes(&t, h) / gpu.dram_bytes_per_s;
        let t_compute = g.flops() as f64 / gpu.peak_flops;
        assert!((t_memory / t_compute - 1.0).abs() < 1e-12);
        // A vector-like GEMM stays memory-bound at any hit rate.
        let thin = Gemm::new(4096, 1, 4096).unwrap();
        assert_eq!(thin.compute_bound_hit(&gpu, &t), None);
    }

    #[test]
    fn padding_is_the_share_of_the_tile_grid_outside_the_problem() {
        let g = Gemm::new(100, 4096, 4096).unwrap();
        assert_eq!(g.padding(&tile(256, 128, 32, 4, 2)), 156.0 / 256.0);
        assert_eq!(g.padding(&tile(128, 128, 32, 4, 2)), 28.0 / 128.0);
    }

    #[test]
    fn resources_per_cta_follow_the_closed_forms() {
        let t = tile(128, 64, 32, 8, 4);
        assert_eq!(t.smem_bytes(), 4 * (128 * 32 + 32 * 64) * 2);
        assert_eq!(t.regs_per_thread(), 128 * 64 / 256 + 40);
    }

    #[test]
    fn limiter_is_the_smallest_limit_first_by_name() {
        let gpu = GpuSpec::rtx3070();
        // 32 warps: threads 1536 / 1024 = 1 and regs 65536 / (48 * 1024) = 1 tie; `regs` wins.
        let o = occupancy(&gpu, &tile(64, 128, 32, 32, 2).block());
        assert_eq!((o.threads, o.regs, o.ctas, o.limiter), (1, 1, 1, "regs"));
        // Small tile, 1 warp: the 16-block limit binds.
        let o = occupancy(&gpu, &tile(16, 16, 16, 1, 1).block());
        assert_eq!((o.blocks, o.ctas, o.limiter), (16, 16, "blocks"));
    }

    #[test]
    fn check_names_the_first_broken_rule() {
        let gpu = GpuSpec::rtx3070();
        // Over both the shared-memory and the register limit: shared memory is named.
        assert_eq!(
            check(&gpu, &tile(256, 256, 64, 4, 3)),
            Err(Illegal::Smem {
                bytes: 196_608,
                max: 101_376
            })
        );
        assert_eq!(
            check(&gpu, &tile(256, 256, 32, 4, 2)),
            Err(Illegal::Regs {
                per_thread: 552,
                max: 255
            })
        );
        // 32 warps at 168 registers: 172,032 > 65,536 registers, zero CTAs.
        assert_eq!(
            check(&gpu, &tile(256, 512, 16, 32, 1)),
            Err(Illegal::NoFit { limiter: "regs" })
        );
    }

    #[test]
    fn bad_dimensions_and_tiles_are_errors() {
        assert_eq!(
            Gemm::new(0, 1, 1).unwrap_err().to_string(),
            "M = 0 must be in 1..=1048576"
        );
        assert!(Gemm::new(1, 1 << 21, 1).is_err());
        assert_eq!(
            TileConfig::new(128, 128, 64, 33, 3)
                .unwrap_err()
                .to_string(),
            "warps = 33 must be in 1..=32"
        );
        assert_eq!(
            TileConfig::parse_tile("128x128").unwrap_err().to_string(),
            "tile `128x128` is not BMxBNxBK (e.g. 128x128x64)"
        );
        assert!(TileConfig::parse_tile("128x-1x64").is_err());
        assert_eq!(TileConfig::parse_tile("64x256x32"), Ok((64, 256, 32)));
    }
}
