//! Feeding the tensor cores with `wgmma m64nNk16` (16-bit operands; the Hopper models of the
//! project's seed models, `docs/analytic.md`; shapes from the PTX ISA's wgmma.mma_async): the
//! math takes `2·64·N·16 / (FLOP per cycle)` cycles of the SM's tensor cores, while the operands
//! cross the shared-memory port: A (64×16, 2 KB) in the SS form only, B (N×16, 32·N B) always.
//! An order-of-magnitude model: the operand path's real bandwidth is unpublished.

use super::gpu::GpuSpec;

pub const WGMMA_M: u64 = 64;
pub const WGMMA_K: u64 = 16;
const OPERAND_BYTES: u64 = 2;

/// Cycles of one wgmma's math and of its operand reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Feed {
    pub n: u64,
    pub compute_clk: f64,
    /// A from shared memory (SS form only).
    pub a_clk: f64,
    pub b_clk: f64,
}

pub fn feed(gpu: &GpuSpec, n: u64) -> Feed {
    let port = gpu.smem_bytes_per_clk as f64;
    Feed {
        n,
        compute_clk: (2 * WGMMA_M * n * WGMMA_K) as f64 / gpu.tensor_flops_per_clk as f64,
        a_clk: (WGMMA_M * WGMMA_K * OPERAND_BYTES) as f64 / port,
        b_clk: (n * WGMMA_K * OPERAND_BYTES) as f64 / port,
    }
}

impl Feed {
    /// Compute over feed time with both operands in shared memory.
    pub fn ss_ratio(&self) -> f64 {
        self.compute_clk / (self.a_clk + self.b_clk)
    }

    /// Compute over feed time with A in registers.
    pub fn rs_ratio(&self) -> f64 {
        self.compute_clk / self.b_clk
    }

    /// Tensor-pipe busy fraction of back-to-back SS wgmmas.
    pub fn ss_utilization(&self) -> f64 {
        self.ss_ratio().min(1.0)
    }

    pub fn rs_utilization(&self) -> f64 {
        self.rs_ratio().min(1.0)
    }
}

/// The N at which SS compute time equals feed time (the seed's `0.5N ≥ 16 + 0.25N`);
/// `None` if B alone outruns the math at every N.
pub fn min_fed_n(gpu: &GpuSpec) -> Option<f64> {
    let one = feed(gpu, 1);
    let margin = one.compute_clk - one.b_clk;
    (margin > 0.0).then(|| one.a_clk / margin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h100_cycles_are_half_n_versus_16_plus_quarter_n() {
        let gpu = GpuSpec::h100_sxm();
        for n in [8u64, 64, 200, 256] {
            let f = feed(&gpu, n);
            assert_eq!(f.compute_clk, 0.5 * n as f64);
            assert_eq!(f.a_clk, 16.0);
            assert_eq!(f.b_clk, 0.25 * n as f64);
        }
    }

    #[test]
    fn rs_form_is_twice_fed_at_every_n() {
        let gpu = GpuSpec::h100_sxm();
        assert_eq!(feed(&gpu, 8).rs_ratio(), 2.0);
        assert_eq!(feed(&gpu, 8).rs_utilization(), 1.0);
    }

    #[test]
    fn utilization_caps_at_one() {
        let gpu = GpuSpec::h100_sxm();
        assert_eq!(feed(&gpu, 16).ss_utilization(), 8.0 / 20.0);
        assert_eq!(feed(&gpu, 128).ss_utilization(), 1.0);
    }

    #[test]
    fn min_fed_n_solves_compute_equals_feed() {
        assert_eq!(min_fed_n(&GpuSpec::h100_sxm()), Some(64.0));
        // A port twice as slow as B needs: B alone outruns the math.
        let slow = GpuSpec {
            smem_bytes_per_clk: 32,
            ..GpuSpec::h100_sxm()
        };
        assert_eq!(min_fed_n(&slow), None);
    }
}
