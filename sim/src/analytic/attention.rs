//! FlashAttention-style forward pass on Hopper (the Hopper models of the project's seed models,
//! `docs/analytic.md`; FlashAttention-3, Shah et al., arXiv:2407.08608): the registers a consumer
//! warpgroup needs for S and O, the FLOPs per byte of K/V against the machine balance with an
//! L2 hit rate, and the exp (MUFU) time of softmax against the tensor time of the two GEMMs.
//!
//! Shapes: a CTA owns `bm` rows of Q and steps over K/V tiles of `bn` rows, head dim `hd`,
//! 16-bit K/V, fp32 accumulators; each consumer warpgroup owns 64 rows (the wgmma M).

use super::error::{in_range, InputError};
use super::gpu::GpuSpec;
use super::wgmma::WGMMA_M;

pub const WARPGROUP_THREADS: u64 = 128;
const KV_ELEM_BYTES: u64 = 2;

/// fp32 accumulator registers per thread of one consumer warpgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumerRegs {
    /// S = Q·Kᵀ, [64, bn].
    pub s: u64,
    /// O, [64, hd].
    pub o: u64,
}

impl ConsumerRegs {
    pub fn total(&self) -> u64 {
        self.s + self.o
    }
}

pub fn consumer_regs(bn: u64, hd: u64) -> ConsumerRegs {
    ConsumerRegs {
        s: WGMMA_M * bn / WARPGROUP_THREADS,
        o: WGMMA_M * hd / WARPGROUP_THREADS,
    }
}

/// FLOPs of one K/V step: S = Q·Kᵀ and O += P·V, `2·bm·bn·hd` each.
pub fn step_flops(bm: u64, bn: u64, hd: u64) -> u64 {
    4 * bm * bn * hd
}

/// Bytes of one K/V tile: K and V, each [bn, hd].
pub fn kv_tile_bytes(bn: u64, hd: u64) -> u64 {
    2 * bn * hd * KV_ELEM_BYTES
}

/// FLOPs per byte of K/V; `bn` and `hd` cancel, leaving `bm`.
pub fn kv_intensity(bm: u64, bn: u64, hd: u64) -> f64 {
    step_flops(bm, bn, hd) as f64 / kv_tile_bytes(bn, hd) as f64
}

/// Intensity against DRAM when a fraction `hit` of K/V bytes comes from L2.
pub fn effective_intensity(intensity: f64, hit: f64) -> f64 {
    intensity / (1.0 - hit)
}

/// The L2 hit rate that lifts `intensity` to the machine balance (0 if already above it).
pub fn required_hit(gpu: &GpuSpec, intensity: f64) -> f64 {
    (1.0 - intensity / gpu.balance()).max(0.0)
}

/// Cycles of one K/V step on one SM: both GEMMs on the tensor cores, one exp per score on MUFU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoftmaxCost {
    pub tensor_clk: f64,
    pub exps: u64,
    pub mufu_clk: f64,
}

impl SoftmaxCost {
    pub fn ratio(&self) -> f64 {
        self.mufu_clk / self.tensor_clk
    }
}

pub fn softmax_cost(gpu: &GpuSpec, bm: u64, bn: u64, hd: u64) -> SoftmaxCost {
    let exps = bm * bn;
    SoftmaxCost {
        tensor_clk: step_flops(bm, bn, hd) as f64 / gpu.tensor_flops_per_clk as f64,
        exps,
        mufu_clk: exps as f64 / gpu.mufu_per_clk as f64,
    }
}

/// An attention forward problem as the scenarios state it: `batch × heads` sequences of
/// `seqlen_q` queries over `seqlen_k` keys, cut into tiles of `bm` query rows and KV blocks of
/// `bn` keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Problem {
    pub batch: u64,
    pub heads: u64,
    pub seqlen_q: u64,
    pub seqlen_k: u64,
    pub hd: u64,
    pub causal: bool,
}

/// Largest batch, head count or sequence length accepted: tile and block sums stay exact.
pub const MAX_DIM: u64 = 1 << 20;

impl Problem {
    pub fn new(
        batch: u64,
        heads: u64,
        seqlen_q: u64,
        seqlen_k: u64,
        hd: u64,
        causal: bool,
    ) -> Result<Problem, InputError> {
        Ok(Problem {
            batch: in_range("batch", batch, MAX_DIM)?,
            heads: in_range("heads", heads, MAX_DIM)?,
            seqlen_q: in_range("seqlen-q", seqlen_q, MAX_DIM)?,
            seqlen_k: in_range("seqlen-k", seqlen_k, MAX_DIM)?,
            hd,
            causal,
        })
    }

    /// The FLOPs of attention itself: `4·sq·sk·hd` per sequence, the causal lower triangle
    /// (queries aligned to the keys' end) when causal.
    pub fn flops(&self) -> u64 {
        let seqs = self.batch * self.heads;
        let pairs = if self.causal {
            // Query i (0-based) sees keys 0 ..= i + sk - sq.
            let shift = self.seqlen_k as i128 - self.seqlen_q as i128;
            (0..self.seqlen_q as i128)
                .map(|i| (i + shift + 1).clamp(0, self.seqlen_k as i128) as u64)
                .sum()
        } else {
            self.seqlen_q * self.seqlen_k
        };
        4 * seqs * pairs * self.hd
    }

    /// KV blocks query block `m` computes: all of them, or causal up to the diagonal (as
    /// scenarios/fa3_pingpong.ron and fa2_forward.ron walk them).
    pub fn blocks(&self, m: u64, bm: u64, bn: u64) -> u64 {
        let all = self.seqlen_k.div_ceil(bn);
        if !self.causal {
            return all;
        }
        let edge = ((m + 1) * bm + self.seqlen_k).saturating_sub(self.seqlen_q);
        all.min(edge.div_ceil(bn))
    }
}

/// A tiling of a [`Problem`] on a GPU: what the kernel computes and the time its tensor cores
/// and HBM need at least.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    pub tiles: u64,
    /// KV blocks over all tiles, and the most of one tile.
    pub steps: u64,
    pub max_steps: u64,
    /// FLOPs of every computed block (masked scores of diagonal blocks included).
    pub flops: u64,
    /// Tensor cycles of one SM: the steps spread over the SMs, no SM under its longest tile,
    /// non-causal tiles in whole waves.
    pub tensor_clk: f64,
    /// K and V bytes the tiles read (each tile all of its blocks), plus Q read and O written.
    pub kv_bytes: u64,
    pub qo_bytes: u64,
}

impl Plan {
    pub fn new(gpu: &GpuSpec, p: &Problem, bm: u64, bn: u64) -> Plan {
        let m_blocks = p.seqlen_q.div_ceil(bm);
        let seqs = p.batch * p.heads;
        let per_seq: Vec<u64> = (0..m_blocks).map(|m| p.blocks(m, bm, bn)).collect();
        let steps = seqs * per_seq.iter().sum::<u64>();
        let max_steps = per_seq.iter().copied().max().unwrap_or(0);
        let tiles = seqs * m_blocks;
        let step_clk = step_flops(bm, bn, p.hd) as f64 / gpu.tensor_flops_per_clk as f64;
        let per_sm = if p.causal {
            steps.div_ceil(gpu.sms).max(max_steps)
        } else {
            tiles.div_ceil(gpu.sms) * max_steps
        };
        Plan {
            tiles,
            steps,
            max_steps,
            flops: steps * step_flops(bm, bn, p.hd),
            tensor_clk: per_sm as f64 * step_clk,
            kv_bytes: steps * kv_tile_bytes(bn, p.hd),
            qo_bytes: 2 * seqs * p.seqlen_q * p.hd * KV_ELEM_BYTES,
        }
    }

    /// Cycles the HBM needs when a fraction `hit` of the K/V reads hit L2.
    pub fn hbm_clk(&self, gpu: &GpuSpec, hit: f64) -> f64 {
        let bytes = self.kv_bytes as f64 * (1.0 - hit) + self.qo_bytes as f64;
        bytes / gpu.dram_bytes_per_s * gpu.clock_hz()
    }

    /// The K/V hit rate below which the HBM takes longer than the tensor cores (0 when it
    /// never does).
    pub fn required_hit(&self, gpu: &GpuSpec) -> f64 {
        let budget = self.tensor_clk / gpu.clock_hz() * gpu.dram_bytes_per_s - self.qo_bytes as f64;
        (1.0 - budget / self.kv_bytes as f64).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causal_blocks_stop_at_the_diagonal_and_halve_the_flops() {
        let p = Problem::new(1, 1, 2048, 2048, 128, true).unwrap();
        // Query block m of 128 rows sees 2 (m + 1) blocks of 64 keys.
        assert_eq!(
            (0..16).map(|m| p.blocks(m, 128, 64)).collect::<Vec<_>>(),
            (1..=16).map(|m| 2 * m).collect::<Vec<_>>()
        );
        let full = Problem { causal: false, ..p };
        assert_eq!(p.flops(), 4 * 128 * (2048 * 2049 / 2));
        assert_eq!(full.flops(), 4 * 128 * 2048 * 2048);
        let plan = Plan::new(&GpuSpec::h100_sxm(), &p, 128, 64);
        assert_eq!((plan.tiles, plan.steps, plan.max_steps), (16, 272, 32));
        // Diagonal blocks are computed whole: more than the triangle, less than the square.
        assert!(plan.flops > p.flops() && plan.flops < full.flops());
    }

    #[test]
    fn the_required_hit_of_a_large_problem_is_the_intensity_rule() {
        // Many waves: Q and O are small beside K/V, so the rule is 1 - bm / balance.
        let gpu = GpuSpec::h100_sxm();
        let p = Problem::new(1, 132, 16384, 16384, 128, false).unwrap();
        let plan = Plan::new(&gpu, &p, 64, 128);
        let rule = required_hit(&gpu, 64.0);
        assert!(
            (plan.required_hit(&gpu) - rule).abs() < 0.01,
            "{} vs {rule}",
            plan.required_hit(&gpu)
        );
        assert!((plan.hbm_clk(&gpu, rule) / plan.tensor_clk - 1.0).abs() < 0.05);
    }

    #[test]
    fn registers_are_half_of_bn_plus_half_of_hd() {
        assert_eq!(consumer_regs(176, 64), ConsumerRegs { s: 88, o: 32 });
    }

    #[test]
    fn intensity_is_the_q_rows_whatever_the_tile() {
        for (bm, bn, hd) in [(64, 256, 128), (128, 176, 128), (192, 128, 64)] {
            assert_eq!(kv_intensity(bm, bn, hd), bm as f64);
        }
        assert_eq!(kv_tile_bytes(176, 128), 2 * 176 * 128 * 2);
    }

    #[test]
    fn required_hit_reaches_the_balance_exactly() {
        let gpu = GpuSpec::h100_sxm();
        let h = required_hit(&gpu, 64.0);
        assert!((effective_intensity(64.0, h) / gpu.balance() - 1.0).abs() < 1e-12);
        assert_eq!(required_hit(&gpu, 400.0), 0.0);
        assert_eq!(effective_intensity(64.0, 0.5), 128.0);
    }

    #[test]
    fn mufu_over_tensor_is_64_over_hd_on_hopper() {
        // 16 exps/clk against 4096 FLOP/clk and 4·hd FLOPs per score.
        let gpu = GpuSpec::h100_sxm();
        for hd in [64u64, 128, 256] {
            assert_eq!(softmax_cost(&gpu, 64, 128, hd).ratio(), 64.0 / hd as f64);
        }
    }
}
