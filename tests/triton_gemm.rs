//! Triton's Hopper matmul on the H200 (`calibration/data/h200-triton_gemm.csv`, bf16 4096³)
//! against its twin `gemm_pipelined.ron`: what the two agree on (docs/scenarios.md has the
//! whole comparison; `sim validate`'s `triton_gemm` group its rows).

use crate::common;

use common::scenario;
use sim::run::{self, RunOptions};
use sim::validate::Data;
use std::sync::LazyLock;

static DATA: LazyLock<Data> = LazyLock::new(|| Data::stored().expect("stored calibration data"));

/// The configs of the measured grid: (bm, bn, bk, num_warps, stages) and the chip's param name.
fn grid() -> Vec<([i64; 5], String)> {
    let mut v = Vec::new();
    for bm in [64, 128] {
        for bn in [128, 256] {
            for bk in [64, 128] {
                for w in [4, 8] {
                    for s in [2, 3, 4, 5] {
                        v.push((
                            [bm, bn, bk, w, s],
                            format!("bm{bm}_bn{bn}_bk{bk}_w{w}_s{s}"),
                        ));
                    }
                }
            }
        }
    }
    v
}

/// The value of the chip's row (test, param), if it has one.
fn chip(test: &str, param: &str) -> Option<f64> {
    DATA.value("triton_gemm", test, param).ok()
}

fn opts(cfg: [i64; 5], shape: i64, clock_mhz: Option<f64>) -> RunOptions {
    let [bm, bn, bk, w, s] = cfg;
    let pairs = [
        ("m", shape),
        ("n", shape),
        ("k", shape),
        ("bm", bm),
        ("bn", bn),
        ("bk", bk),
        ("num_warps", w),
        ("stages", s),
    ];
    RunOptions {
        sets: pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        gpu: Some("h200-sxm".to_string()),
        clock_mhz,
        ..RunOptions::default()
    }
}

/// Shared memory decides alike: the model refuses exactly the 20 configs Triton refused for
/// shared memory (its `tgemm_error` rows), though its CTA holds the epilogue's two subtiles
/// besides the stages (Triton's store reuses the mainloop's buffers): no config of the grid
/// lies between the two sizes and the 227 KiB limit. The registers do not: Triton runs the
/// four 128 x 256 tiles on 4 warps at 255 registers, spilling 156 bytes (at 448 to 687 FLOP
/// per SM-cycle), where the model refuses 256 accumulators a thread.
#[test]
fn the_model_refuses_for_shared_memory_what_triton_refused() {
    let (mut smem, mut regs, mut ran) = (Vec::new(), Vec::new(), 0);
    for (cfg, param) in grid() {
        // The shared memory and registers of a CTA do not depend on the problem size.
        match run::run_file(&scenario("gemm_pipelined"), &opts(cfg, 512, None)) {
            Ok(_) => {
                assert!(
                    chip("tgemm_us", &param).is_some(),
                    "{param}: ran, not on the chip"
                );
                ran += 1;
            }
            Err(e) if e.to_string().contains("bytes of shared memory") => smem.push(param),
            Err(e) if e.to_string().contains("accumulators cannot be spilled") => {
                assert_eq!(chip("tgemm_regs", &param), Some(255.0), "{param}");
                assert_eq!(chip("tgemm_spills", &param), Some(156.0), "{param}");
                regs.push(param);
            }
            Err(e) => panic!("{param}: {e}"),
        }
    }
    let refused: Vec<String> = grid()
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| chip("tgemm_error", p).is_some())
        .collect();
    assert_eq!(smem, refused);
    assert_eq!((ran, smem.len(), regs.len()), (40, 20, 4));
}

/// The one stage effect both sides show strongly: 128 x 128 tiles with k-tiles of 128 on 4
/// warps lose a third or more of their rate with 2 stages (the next k-tile's loads issued one
/// k-tile ahead) against 3: the chip 1,378 against 2,410 FLOP per SM-cycle (1.75x), the model
/// 1.62x. Each at the clock NVML read while the config ran.
#[test]
fn a_third_stage_speeds_up_128x128x128_on_both_sides() {
    let flop = 2.0 * 4096f64.powi(3);
    let mut rates = Vec::new();
    for (cfg, param) in [
        ([128, 128, 128, 4, 2], "bm128_bn128_bk128_w4_s2"),
        ([128, 128, 128, 4, 3], "bm128_bn128_bk128_w4_s3"),
    ] {
        let mhz = chip("tgemm_clock", param).unwrap();
        let r = run::run_file(&scenario("gemm_pipelined"), &opts(cfg, 4096, Some(mhz)))
            .unwrap_or_else(|e| panic!("{param}: {e}"));
        rates.push((
            r.cycles,
            flop / (132.0 * r.cycles as f64),
            chip("tgemm_flop_per_sm_cycle", param).unwrap(),
        ));
    }
    let cycles: Vec<u64> = rates.iter().map(|r| r.0).collect();
    assert_eq!(cycles, [522_509, 332_344]);
    let (sim, measured) = (rates[1].1 / rates[0].1, rates[1].2 / rates[0].2);
    assert!((1.5..1.7).contains(&sim), "model: {sim:.3}x");
    assert!((1.7..1.8).contains(&measured), "chip: {measured:.3}x");
}
