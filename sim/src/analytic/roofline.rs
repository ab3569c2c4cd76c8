//! The roofline with a launch floor (the GEMM resource model K1 of the project's seed models,
//! `docs/analytic.md`): compute time at peak, memory time at DRAM bandwidth, and which of the
//! two binds unless both hide under the launch overhead.

use super::gpu::GpuSpec;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Both times are below the launch overhead.
    Launch,
    Compute,
    Memory,
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            Bound::Launch => "launch",
            Bound::Compute => "compute",
            Bound::Memory => "memory",
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Roofline {
    pub t_compute: f64,
    pub t_memory: f64,
    pub bound: Bound,
}

/// `flops` at peak and `bytes` at DRAM bandwidth; a compute/memory tie counts as compute.
pub fn roofline(gpu: &GpuSpec, flops: f64, bytes: f64) -> Roofline {
    let t_compute = flops / gpu.peak_flops;
    let t_memory = bytes / gpu.dram_bytes_per_s;
    let bound = if t_compute < gpu.launch_s && t_memory < gpu.launch_s {
        Bound::Launch
    } else if t_compute >= t_memory {
        Bound::Compute
    } else {
        Bound::Memory
    };
    Roofline {
        t_compute,
        t_memory,
        bound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_work_over_rate() {
        let gpu = GpuSpec::rtx3070();
        let r = roofline(&gpu, 80e12, 448e9);
        assert_eq!(
            (r.t_compute, r.t_memory, r.bound),
            (2.0, 1.0, Bound::Compute)
        );
    }

    #[test]
    fn the_larger_time_binds_and_a_tie_is_compute() {
        let gpu = GpuSpec::rtx3070();
        assert_eq!(roofline(&gpu, 40e9, 448e9).bound, Bound::Memory);
        assert_eq!(roofline(&gpu, 40e9, 448e6).bound, Bound::Compute);
    }

    #[test]
    fn launch_binds_only_when_both_are_below_the_overhead() {
        let gpu = GpuSpec::rtx3070();
        // 4 us of compute and 4.9 us of memory: launch.
        assert_eq!(roofline(&gpu, 160e6, 4.9e-6 * 448e9).bound, Bound::Launch);
        // 6 us of memory: memory, however small the compute.
        assert_eq!(roofline(&gpu, 1.0, 6e-6 * 448e9).bound, Bound::Memory);
    }
}
