//! The GPU numbers the analytic models read: per-SM limits, peak rates and launch overhead.
//!
//! Source tags as in the presets: [DS] datasheet or vendor document, [M:who] measured by the
//! named party, [INF] our arithmetic, [CODE] a constant in public source code, [SEED] a number of
//! the project's seed models (the GEMM resource model K1 and the autotuner T3, restated in
//! `docs/analytic.md`). The source abbreviations (DS-G, DS-H, CCCL, CUDAPG, REPRO, FA3, CUTLASS,
//! PTX-WG) are listed in `docs/scenario-format.md` §11.

use super::error::InputError;

/// One GPU as the analytic models see it.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuSpec {
    pub name: &'static str,
    pub sms: u64,
    pub threads_per_sm: u64,
    /// Largest block (CTA) a kernel may launch.
    pub threads_per_cta: u64,
    pub regs_per_sm: u64,
    pub max_regs_per_thread: u64,
    /// Registers are allocated per warp in multiples of this.
    pub reg_alloc_unit: u64,
    pub smem_per_sm: u64,
    /// Largest shared-memory allocation one CTA may opt into.
    pub smem_per_cta: u64,
    pub ctas_per_sm: u64,
    /// Dense 16-bit tensor FLOP/s with FP32 accumulation, whole GPU.
    pub peak_flops: f64,
    /// The same peak per SM per cycle; the feed and softmax models count cycles.
    pub tensor_flops_per_clk: u64,
    /// Shared-memory port width without bank conflicts.
    pub smem_bytes_per_clk: u64,
    /// Special-function (MUFU: ex2, rcp, ...) thread-operations per SM per cycle.
    pub mufu_per_clk: u64,
    pub dram_bytes_per_s: f64,
    /// Bandwidth one SM pulls from memory on its own (bounds decode when few SMs read).
    pub sm_bytes_per_s: f64,
    /// Host-side kernel launch overhead.
    pub launch_s: f64,
    /// From one kernel's end to the next one's start in a CUDA graph.
    pub graph_gap_s: f64,
    /// Whether the tensor cores take warpgroup MMAs (wgmma), i.e. Hopper.
    pub has_wgmma: bool,
}

impl GpuSpec {
    /// Every GPU the models know: the simulator's presets, in `sim presets` order.
    pub const NAMES: [&'static str; 4] = ["h100-sxm", "h200-sxm", "a100-sxm", "rtx3070"];

    /// The analytic models' example GPU, with the numbers the GEMM resource model uses (`docs/analytic.md`).
    pub fn rtx3070() -> GpuSpec {
        GpuSpec {
            name: "rtx3070",
            // [SEED] K1; [DS] DS-G: 46 SMs (GA104).
            sms: 46,
            // [SEED] K1; [DS] CCCL cc 8.6: 1536 threads, 64K registers, 255 per thread.
            threads_per_sm: 1536,
            threads_per_cta: 1024,
            regs_per_sm: 65_536,
            max_regs_per_thread: 255,
            // [DS] CUDA occupancy calculator: per warp in units of 256 registers.
            reg_alloc_unit: 256,
            // [SEED] K1; [DS] CCCL: 100 KB smem per SM, 99 KB per CTA.
            smem_per_sm: 102_400,
            smem_per_cta: 101_376,
            // [SEED] K1; [DS] CCCL: 16 resident CTAs per SM.
            ctas_per_sm: 16,
            // [SEED] K1 rounds 40.6 TFLOP/s (FP32 accumulate, [INF] below) to 40e12.
            peak_flops: 40e12,
            // [INF] DS-G: 46 x 4 x 128 FMA x 2 at FP32 accumulate, halved on GeForce.
            tensor_flops_per_clk: 512,
            // [DS] CUDAPG: 32 banks x 4 B.
            smem_bytes_per_clk: 128,
            // [DS] CUDAPG: 16 special-function ops per SM per cycle.
            mufu_per_clk: 16,
            // [SEED] K1; [DS] DS-G: 448 GB/s GDDR6.
            dram_bytes_per_s: 448e9,
            // [INF] unmeasured: 64 B/clk per SM (the rtx3070 preset's memory.sm_bytes_per_cycle)
            // at the 1725 MHz boost.
            sm_bytes_per_s: 64.0 * 1.725e9,
            // [SEED] K1/T3 launch overhead; host launches measure ~4-6 us (third-party reports).
            launch_s: 5e-6,
            // [INF] unmeasured here: the H200's (below).
            graph_gap_s: 768e-9,
            // [DS] CCCL: no wgmma before sm_90a.
            has_wgmma: false,
        }
    }

    /// H100 SXM5 80 GB.
    pub fn h100_sxm() -> GpuSpec {
        GpuSpec {
            name: "h100-sxm",
            // [DS] DS-H: 132 SMs enabled.
            sms: 132,
            // [DS] CCCL cc 9.0: 2048 threads, 64K registers, 255 per thread.
            threads_per_sm: 2048,
            threads_per_cta: 1024,
            regs_per_sm: 65_536,
            max_regs_per_thread: 255,
            // [DS] CUDA occupancy calculator: per warp in units of 256 registers.
            reg_alloc_unit: 256,
            // [DS] CCCL: 228 KB smem per SM, 227 KB per CTA ([CODE] CUTLASS 232,448 B).
            smem_per_sm: 233_472,
            smem_per_cta: 232_448,
            // [DS] CCCL: 32 resident CTAs per SM.
            ctas_per_sm: 32,
            // [DS] DS-H: 989.4 TFLOP/s dense BF16 at 1830 MHz.
            peak_flops: 989.4e12,
            // [INF] 989.4e12 / (132 x 1.83e9) = 4096 FLOP/clk/SM.
            tensor_flops_per_clk: 4096,
            // [DS] CUDAPG: 32 banks x 4 B; [M:REPRO] 127.5 B/clk.
            smem_bytes_per_clk: 128,
            // [DS] CUDAPG via FA3 footnote 5: 16 MUFU ops/clk/SM.
            mufu_per_clk: 16,
            // [DS] DS-H: HBM3 3.35 TB/s.
            dram_bytes_per_s: 3.35e12,
            // [INF] unmeasured placeholder: 64 B/clk per SM at 1830 MHz, below the 77 B/clk one SM
            // of 1024 threads moved from L2 on an H200 with mem_bw.cu's read loop
            // (calibration/data/h200-mem_bw.csv; the SM's port itself carries 128, the h100-sxm
            // preset's memory.sm_bytes_per_cycle); one SM's share is ~32-36 B/clk when all SMs
            // pull (REPRO's 4207-4808 B/clk GPU-wide L2 bandwidth / 132).
            sm_bytes_per_s: 64.0 * 1.83e9,
            // [SEED] K1/T3 launch overhead; host launches measure ~4-6 us (third-party reports).
            launch_s: 5e-6,
            // [M: calibration/data/h200-launch.csv, seq_gap graph_132cta_*] 768 ns from a
            // kernel's last CTA to the next kernel's start on 132 SMs in a CUDA graph.
            graph_gap_s: 768e-9,
            // [DS] PTX-WG: wgmma on sm_90a.
            has_wgmma: true,
        }
    }

    /// H200 SXM: the H100's GH100 compute with HBM3e (DS-H: NVIDIA's H200 spec pages).
    pub fn h200_sxm() -> GpuSpec {
        GpuSpec {
            name: "h200-sxm",
            // [DS] DS-H vendor spec pages: 4.8 TB/s HBM3e; compute as H100.
            dram_bytes_per_s: 4.8e12,
            // [M: calibration/data/h200-memsys.csv, inflight_all_hbm t1024_u8] one SM reads
            // 67.3 B/clk from HBM with 64 KiB in flight, at the 1980 MHz it ran at.
            sm_bytes_per_s: 67.3 * 1.98e9,
            ..GpuSpec::h100_sxm()
        }
    }

    /// A100 SXM4 80 GB: Ampere, cp.async and mma.sync (the a100-sxm preset's numbers).
    pub fn a100_sxm() -> GpuSpec {
        GpuSpec {
            name: "a100-sxm",
            // [DS] DS-A: 108 SMs of 128.
            sms: 108,
            // [DS] CCCL cc 8.0: 2048 threads, 64K registers, 255 per thread.
            threads_per_sm: 2048,
            threads_per_cta: 1024,
            regs_per_sm: 65_536,
            max_regs_per_thread: 255,
            // [DS] CUDA occupancy calculator: per warp in units of 256 registers.
            reg_alloc_unit: 256,
            // [DS] CCCL: 164 KB smem per SM, 163 KB per CTA.
            smem_per_sm: 167_936,
            smem_per_cta: 166_912,
            // [DS] CCCL: 32 resident CTAs per SM.
            ctas_per_sm: 32,
            // [DS] DS-A: 312 TFLOP/s dense FP16/BF16 with FP32 accumulation at 1410 MHz.
            peak_flops: 312e12,
            // [INF] 312e12 / (108 x 1.41e9) = 2048 FLOP/clk/SM.
            tensor_flops_per_clk: 2048,
            // [DS] CUDAPG: 32 banks x 4 B.
            smem_bytes_per_clk: 128,
            // [DS] CUDAPG: 16 special-function ops per SM per cycle.
            mufu_per_clk: 16,
            // [DS] DS-A: 2039 GB/s HBM2e.
            dram_bytes_per_s: 2039e9,
            // [INF] unmeasured: 64 B/clk per SM (the a100-sxm preset's memory.sm_bytes_per_cycle)
            // at the 1410 MHz boost.
            sm_bytes_per_s: 64.0 * 1.41e9,
            // [SEED] K1/T3 launch overhead; host launches measure ~4-6 us (third-party reports).
            launch_s: 5e-6,
            // [INF] unmeasured here: the H200's (below).
            graph_gap_s: 768e-9,
            // [DS] CCCL: no wgmma before sm_90a.
            has_wgmma: false,
        }
    }

    pub fn by_name(name: &str) -> Result<GpuSpec, InputError> {
        match name {
            "rtx3070" => Ok(GpuSpec::rtx3070()),
            "h100-sxm" => Ok(GpuSpec::h100_sxm()),
            "h200-sxm" => Ok(GpuSpec::h200_sxm()),
            "a100-sxm" => Ok(GpuSpec::a100_sxm()),
            _ => Err(InputError::UnknownGpu(name.to_string())),
        }
    }

    /// Machine balance: FLOPs per DRAM byte at which compute and memory take equal time.
    pub fn balance(&self) -> f64 {
        self.peak_flops / self.dram_bytes_per_s
    }

    /// The SM clock at which the tensor peak is quoted.
    pub fn clock_hz(&self) -> f64 {
        self.peak_flops / (self.sms * self.tensor_flops_per_clk) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::preset::Preset;

    #[test]
    fn every_name_resolves_to_its_spec() {
        for name in GpuSpec::NAMES {
            assert_eq!(GpuSpec::by_name(name).unwrap().name, name);
        }
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let e = GpuSpec::by_name("a100").unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown GPU `a100`; known: h100-sxm, h200-sxm, a100-sxm, rtx3070"
        );
    }

    /// `sim analyze --gpu` takes the names `sim presets` lists, and each spec holds its preset's
    /// limits and rates (the analytic peaks are the datasheets', the presets' clocks may differ).
    #[test]
    fn every_preset_has_a_spec_that_agrees_with_it() {
        assert_eq!(GpuSpec::NAMES.to_vec(), Preset::names());
        for name in Preset::names() {
            let (g, p) = (
                GpuSpec::by_name(name).unwrap(),
                Preset::builtin(name).unwrap(),
            );
            let smem_port = (p.smem.banks * p.smem.bank_bytes) as u64;
            let mufu = (p.pipes.mufu.lanes * p.sm.partitions) as u64;
            assert_eq!(
                (
                    g.sms,
                    g.threads_per_sm,
                    g.threads_per_cta,
                    g.regs_per_sm,
                    g.max_regs_per_thread,
                    g.reg_alloc_unit
                ),
                (
                    p.sm.count as u64,
                    p.sm.max_threads as u64,
                    p.sm.max_threads_per_cta as u64,
                    p.regs.per_sm as u64,
                    p.regs.max_per_thread as u64,
                    p.regs.alloc_unit as u64
                ),
                "{name}"
            );
            assert_eq!(
                (
                    g.smem_per_sm,
                    g.smem_per_cta,
                    g.ctas_per_sm,
                    g.smem_bytes_per_clk
                ),
                (
                    p.smem.per_sm,
                    p.smem.per_cta,
                    p.sm.max_ctas as u64,
                    smem_port
                ),
                "{name}"
            );
            assert_eq!(
                (g.tensor_flops_per_clk, g.mufu_per_clk, g.has_wgmma),
                (p.tensor.flops_per_cycle, mufu, p.tensor.has_wgmma),
                "{name}"
            );
            assert_eq!(
                g.dram_bytes_per_s,
                p.memory.hbm.bandwidth_gbs * 1e9,
                "{name}"
            );
        }
    }

    #[test]
    fn hopper_peak_is_sms_times_per_cycle_rate_times_clock() {
        let g = GpuSpec::h100_sxm();
        let peak = (g.sms * g.tensor_flops_per_clk) as f64 * 1.83e9;
        assert_eq!(format!("{:.1}", peak / 1e12), "989.4");
    }

    #[test]
    fn balances_match_the_reference_ridge_points() {
        assert_eq!(format!("{:.0}", GpuSpec::rtx3070().balance()), "89");
        assert_eq!(format!("{:.0}", GpuSpec::h100_sxm().balance()), "295");
        assert_eq!(format!("{:.0}", GpuSpec::h200_sxm().balance()), "206");
    }

    #[test]
    fn h200_differs_from_h100_only_in_its_memory() {
        let h200 = GpuSpec::h200_sxm();
        let as_h100 = GpuSpec {
            name: "h100-sxm",
            dram_bytes_per_s: 3.35e12,
            sm_bytes_per_s: 64.0 * 1.83e9,
            ..h200
        };
        assert_eq!(as_h100, GpuSpec::h100_sxm());
    }
}
