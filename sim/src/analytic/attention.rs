//! FlashAttention-style forward pass on Hopper (the Hopper models of the project's seed models,
//! `docs/analytic.md`; FlashAttention-3, Shah et al., arXiv:2407.08608): the registers a consumer
//! warpgroup needs for S and O, the FLOPs per byte of K/V against the machine balance with an
//! L2 hit rate, and the exp (MUFU) time of softmax against the tensor time of the two GEMMs.
//!
//! Shapes: a CTA owns `bm` rows of Q and steps over K/V tiles of `bn` rows, head dim `hd`,
//! 16-bit K/V, fp32 accumulators; each consumer warpgroup owns 64 rows (the wgmma M).

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

#[cfg(test)]
mod tests {
    use super::*;

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
