//! GEMM as the libraries run it (issue 17): CUTLASS's cooperative (`gemm.ron`) and ping-pong
//! (`gemm_pingpong.ron`) schedules and Triton's pipelined one (`gemm_pipelined.ron`), each with
//! its tile shapes, tails, batches, TMA-store epilogue and register use.

use crate::common;

use common::{scenario, sets};
use sim::observe::report::Report;
use sim::run::{self, RunOptions};

const SCHEDULES: [&str; 3] = ["gemm", "gemm_pingpong", "gemm_pipelined"];

fn run(name: &str, pairs: &[(&str, i64)]) -> Report {
    run::run_file(&scenario(name), &sets(pairs)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The error of a configuration the scenario refuses.
fn refused(name: &str, pairs: &[(&str, i64)]) -> String {
    let opts: RunOptions = sets(pairs);
    match run::run_file(&scenario(name), &opts) {
        Ok(r) => panic!("{name} {pairs:?} ran: {} cycles", r.cycles),
        Err(e) => e.to_string(),
    }
}

/// `pairs` with the problem shape `m` x `n` x `k` in front.
fn shape(m: i64, n: i64, k: i64, pairs: &[(&'static str, i64)]) -> Vec<(&'static str, i64)> {
    let mut v = vec![("m", m), ("n", n), ("k", k)];
    v.extend_from_slice(pairs);
    v
}

#[test]
fn every_schedule_does_the_gemms_flops_and_writes_c_once() {
    let (m, n, k) = (1024, 1024, 512);
    for name in SCHEDULES {
        let r = run(name, &shape(m, n, k, &[]));
        assert_eq!(r.flops, 2 * (m * n * k) as u64, "{name}");
        // C goes out once, through the TMA stores: whole lines, no fill read.
        assert_eq!(r.dram.write_bytes, (m * n * 2) as u64, "{name}");
        assert_eq!(r.dram.read_bytes, ((m + n) * k * 2) as u64, "{name}");
        // Never under the tensor bound; at this size one tile a CTA, whose first loads and
        // epilogue are exposed (ping-pong's second warpgroup has no tile of its own; C leaves
        // at the TMA store path's 32 B/cycle).
        let a = r.analytic.as_ref().unwrap();
        assert!(
            (1.0..2.0).contains(&a.ratio),
            "{name}: {} x analytic",
            a.ratio
        );
    }
}

#[test]
fn every_tile_height_covers_its_rows() {
    let (m, n, k) = (1024, 512, 256);
    let cases: [(&str, &[(&str, i64)]); 5] = [
        ("gemm", &[("bm", 256), ("bn", 128)]),
        ("gemm_pingpong", &[("bm", 64)]),
        // 8 warps on 64 rows: the second warpgroup takes the other half of the columns.
        ("gemm_pipelined", &[("bm", 64), ("bn", 128)]),
        ("gemm_pipelined", &[("bm", 256), ("bn", 128)]),
        ("gemm_pipelined", &[("bm", 64), ("num_warps", 4)]),
    ];
    for (name, pairs) in cases {
        let r = run(name, &shape(m, n, k, pairs));
        assert_eq!(r.flops, 2 * (m * n * k) as u64, "{name} {pairs:?}");
        assert_eq!(r.dram.write_bytes, (m * n * 2) as u64, "{name} {pairs:?}");
    }
}

#[test]
fn tails_and_batches_are_clipped_at_the_tensors_edges() {
    // 1000 = 7 x 128 + 104 = 3 x 256 + 232 = 15 x 64 + 40: partial tiles in M, N and K. The
    // loads are zero-filled past the edges, so the tensor pipe runs whole tiles; the stores are
    // clipped, so C's 1000 x 1000 x 2 bytes go out exactly once per batch.
    for name in SCHEDULES {
        let r = run(name, &shape(1000, 1000, 1000, &[("batch", 3)]));
        let (bm, bn) = (r.params["bm"] as u64, r.params["bn"] as u64);
        let tiles = 3 * 1000u64.div_ceil(bm) * 1000u64.div_ceil(bn);
        assert_eq!(r.flops, tiles * 2 * bm * bn * 1024, "{name}");
        assert_eq!(r.dram.write_bytes, 3 * 2_000_000, "{name}");
        assert_eq!(r.dram.min_bytes, 3 * 3 * 2_000_000, "{name}");
    }
}

#[test]
fn ping_pong_hides_the_epilogue_that_the_cooperative_kernel_exposes() {
    // 1024 tiles of 128 x 128 at K = 512, 7.8 a CTA: the epilogue is a large share of each
    // tile. Both kernels persistent, with the same tile and ring. Both run at the L2's
    // bandwidth (its read-outs are shared within a GPC only); with CUTLASS's 32-column subtiles
    // the cooperative kernel's longer epilogue still costs it 3%, while ping-pong runs one
    // warpgroup's epilogue beside the other's mainloop and does not slow down.
    let at = |name: &str, epi_n: i64| {
        let mut p = shape(
            4096,
            4096,
            512,
            &[("bn", 128), ("stages", 5), ("epi_n", epi_n)],
        );
        if name == "gemm" {
            p.push(("persistent", 1));
        }
        run(name, &p).cycles
    };
    let figures = [
        at("gemm", 64),
        at("gemm_pingpong", 64),
        at("gemm", 32),
        at("gemm_pingpong", 32),
    ];
    assert_eq!(figures, [57_688, 57_489, 59_746, 57_207]);
    let [coop64, pp64, coop32, pp32] = figures.map(|c| c as f64);
    assert!((pp64 / coop64 - 1.0).abs() < 0.02);
    assert!(coop32 > 1.025 * coop64);
    assert!((pp32 / pp64 - 1.0).abs() < 0.02);
}

#[test]
fn registers_come_from_the_program() {
    let small = shape(1024, 1024, 1024, &[]);
    // Triton's launch count: accumulators + live values + the baseline, rounded to 8 registers:
    // 192 + 32 + 10 fits 255.
    let fits = run(
        "gemm_pipelined",
        &[&small[..], &[("num_warps", 4), ("bn", 192)]].concat(),
    );
    assert!(fits.roles["warps"].spill.is_none());
    // 224 columns on one warpgroup: 224 accumulators + 32 + 10 = 266 > 255, 11 values spill and
    // the loop's integer work reloads them from local memory.
    let spills = run(
        "gemm_pipelined",
        &[&small[..], &[("num_warps", 4), ("bn", 224)]].concat(),
    );
    let s = spills.roles["warps"].spill.as_ref().unwrap();
    assert_eq!((s.registers, s.budget, s.spilled), (266, 255, 11));
    assert!(s.local_loads > 0);
    // Small tiles need few registers: shared memory decides how many CTAs share an SM.
    let many = run(
        "gemm_pipelined",
        &[
            &small[..],
            &[("num_warps", 4), ("bm", 64), ("bn", 64), ("stages", 2)],
        ]
        .concat(),
    );
    assert_eq!(
        (many.ctas_per_sm, many.occupancy_limiter.as_str()),
        (4, "smem")
    );
    // 8 warps on 64 x 16: 4 + 32 + 10 -> 48 registers, 12,288 a CTA, 5 CTAs in 65,536.
    let thin = run(
        "gemm_pipelined",
        &[&small[..], &[("bm", 64), ("bn", 16), ("stages", 2)]].concat(),
    );
    assert_eq!(
        (thin.ctas_per_sm, thin.occupancy_limiter.as_str()),
        (5, "regs")
    );
}

#[test]
fn unsupported_configurations_say_why() {
    let first = |e: String| e.lines().next().unwrap().to_string();
    assert_eq!(
        first(refused("gemm", &[("bm", 64)])),
        "the cooperative schedule needs bm = 128 or 256: its two consumer warpgroups split the tile's rows in m64 wgmmas (CUTLASS requires a tile M of at least 128); bm = 64 runs in gemm_pingpong.ron or gemm_pipelined.ron (`bm == 128 || bm == 256` does not hold)"
    );
    assert_eq!(
        first(refused("gemm_pingpong", &[("bm", 256)])),
        "the ping-pong schedule needs bm = 64 or 128: one consumer warpgroup holds the whole tile's accumulators (bm = 256 runs in gemm.ron) (`bm == 64 || bm == 128` does not hold)"
    );
    assert_eq!(
        first(refused("gemm_pipelined", &[("num_warps", 2)])),
        "num_warps must be 4 or 8: wgmma needs whole warpgroups, and Triton's Hopper matmul uses 1 or 2 (`num_warps == 4 || num_warps == 8` does not hold)"
    );
    assert_eq!(
        first(refused("gemm", &[("bn", 100)])),
        "bn must be a multiple of 8 in 16..=256 (wgmma N, and the TMA box of B has at most 256 rows) (`bn % 8 == 0 && bn >= 16 && bn <= 256` does not hold)"
    );
    // 256 x 256 on two warpgroups: 256 accumulators each, beyond setmaxnreg's 232.
    assert_eq!(
        first(refused("gemm", &[("bm", 256), ("stages", 2)])),
        "role `consumer` has 232 registers per thread, fewer than its wgmma accumulators (256) and the baseline (10) need: accumulators cannot be spilled to local memory"
    );
    // Triton's 128 x 256 tile on 4 warps: 256 accumulators per thread, past ptxas's 255.
    assert_eq!(
        first(refused("gemm_pipelined", &[("num_warps", 4)])),
        "role `warps` has 255 registers per thread, fewer than its wgmma accumulators (256) and the baseline (10) need: accumulators cannot be spilled to local memory"
    );
    // Four stages of 256 x 64 + 192 x 64 and the epilogue's subtiles do not fit; three do.
    assert!(refused("gemm", &[("bm", 256), ("bn", 192)])
        .contains("the CTA needs 262208 bytes of shared memory (sA 4x32768 B, sB 4x24576 B, sC 2x16384 B); h100-sxm allows at most 232448 per CTA"));
}

#[test]
fn every_config_of_a_triton_grid_runs_or_is_refused_for_memory_or_registers() {
    // BM x BN 64/128/256, BK 32/64, 4 or 8 warps, 2 to 4 stages: 108 configurations.
    let (mut ran, mut smem, mut regs) = (0, 0, 0);
    for bm in [64, 128, 256] {
        for bn in [64, 128, 256] {
            for bk in [32, 64] {
                for warps in [4, 8] {
                    for stages in [2, 3, 4] {
                        let p = shape(
                            256,
                            256,
                            128,
                            &[
                                ("bm", bm),
                                ("bn", bn),
                                ("bk", bk),
                                ("num_warps", warps),
                                ("stages", stages),
                            ],
                        );
                        match run::run_file(&scenario("gemm_pipelined"), &sets(&p)) {
                            Ok(r) => {
                                assert_eq!(r.flops, 2 * 256 * 256 * 128, "{p:?}");
                                ran += 1;
                            }
                            Err(e) if e.to_string().contains("bytes of shared memory") => smem += 1,
                            Err(e) if e.to_string().contains("accumulators cannot be spilled") => {
                                // More than 255 - 10 accumulators per thread.
                                assert!(bm * bn / (32 * warps) > 245, "{p:?}");
                                regs += 1;
                            }
                            Err(e) => panic!("{p:?}: {e}"),
                        }
                    }
                }
            }
        }
    }
    assert_eq!((ran, smem, regs), (83, 6, 19));
}

/// `tile_auto`: the kernel-selection rule picks the largest tile whose grid fills 90% of the
/// SMs. A skinny M of 64 or 128 then runs 64 x 32 or 64 x 64 tiles on 128 of the 132 SMs,
/// where the default 128 x 256 tile leaves all but 16 idle; a square 4096³ keeps 128 x 256 x 8
/// warps. The summary prints the choice.
#[test]
fn tile_auto_spreads_a_skinny_gemm_over_the_sms() {
    let chosen = |pairs: &[(&str, i64)]| {
        let (k, _) = run::load(&scenario("gemm_pipelined"), &sets(pairs)).unwrap();
        (k.params["bm"], k.params["bn"], k.params["num_warps"])
    };
    assert_eq!(chosen(&[("tile_auto", 1)]), (128, 256, 8));
    assert_eq!(
        chosen(&shape(1024, 1024, 4096, &[("tile_auto", 1)])),
        (64, 128, 4)
    );
    for (m, bn) in [(64, 32), (128, 64)] {
        let auto = run("gemm_pipelined", &shape(m, 4096, 4096, &[("tile_auto", 1)]));
        let fixed = run("gemm_pipelined", &shape(m, 4096, 4096, &[]));
        assert_eq!(
            (auto.params["bm"], auto.params["bn"], auto.sms),
            (64, bn, 128)
        );
        assert_eq!(fixed.sms, 16);
        assert!(
            fixed.cycles > 2 * auto.cycles,
            "M = {m}: {} cycles fixed, {} auto",
            fixed.cycles,
            auto.cycles
        );
        assert!(
            auto.summary()
                .contains(&format!("  derived     bm 64, bn {bn}, num_warps 4\n")),
            "{}",
            auto.summary()
        );
    }
}

/// Stream-K on 133 tiles of 128 x 256 over 132 SMs: the data-parallel grid's second round
/// runs one tile, stream-K splits the k-blocks evenly and fixes up the split tiles through the
/// workspace and flags. Both do every FLOP once and write C once.
#[test]
fn stream_k_beats_a_second_round_of_one_tile() {
    let size = [("k", 2048)];
    let run_k = |streamk| {
        run(
            "gemm_streamk",
            &[&size[..], &[("streamk", streamk)]].concat(),
        )
    };
    let (sk, dp) = (run_k(1), run_k(0));
    assert_eq!((sk.ctas, dp.ctas, dp.waves), (132, 133, 2));
    assert_eq!(sk.flops, dp.flops);
    assert_eq!(sk.flops, 2 * 896 * 4864 * 2048);
    // Stream-K gains little since each consumer warp releases a stage through a cluster address
    // (CUTLASS's PipelineTmaAsync for a cluster of one: ~90 cycles a warp) and the L2 shares a
    // read-out only within a GPC: its CTAs, at different k, wait on their loads.
    let gain = dp.cycles as f64 / sk.cycles as f64;
    assert!((1.0..1.1).contains(&gain), "stream-K gains {gain:.3}x");
}

/// Split-K on a skinny GEMM (1024 x 1024 x 8192: 32 tiles on 132 SMs): four CTAs a tile fill
/// 128 SMs and the owners add three partials each; eight take two waves and lose again. Every
/// split does its FLOPs once.
#[test]
fn split_k_fills_the_sms_for_a_skinny_gemm() {
    let size = [("streamk", 0), ("m", 1024), ("n", 1024), ("k", 8192)];
    let split = |splits| run("gemm_streamk", &[&size[..], &[("splits", splits)]].concat());
    let (one, four, eight) = (split(1), split(4), split(8));
    assert_eq!((one.ctas, four.ctas, eight.ctas), (32, 128, 256));
    assert_eq!((four.waves, eight.waves), (1, 2));
    assert_eq!((four.flops, eight.flops), (one.flops, one.flops));
    assert_eq!(
        (one.cycles, four.cycles, eight.cycles),
        (135_522, 49_258, 86_527)
    );
    // Stream-K (the default) takes no splits.
    let err = refused("gemm_streamk", &[("splits", 2)]);
    assert!(
        err.contains("splits must be 1 to kt (the k-blocks a tile), and 1 with stream-K"),
        "{err}"
    );
}

/// A tile's owner waits for its flag: with no peer adding to it the run ends in a deadlock
/// that names the counter; an index past the array is an error naming it.
#[test]
fn stream_k_flags_are_checked() {
    let text = std::fs::read_to_string(scenario("gemm_streamk")).unwrap();
    let add = r#"AtomicAdd(counter: "flags[t]", into: "old")"#;
    assert!(text.contains(add));
    let silent = common::temp_scenario(
        "streamk_silent.ron",
        &text.replace(
            add,
            r#"AtomicAdd(counter: "flags[t]", add: 0, into: "old")"#,
        ),
    );
    let opts: RunOptions = sets(&[("k", 256)]);
    let err = run::run_file(&silent, &opts).unwrap_err().to_string();
    assert!(
        err.contains("\n  CTA 32 warp consumer0.w0 at role `consumer`: program[3] loop(s).body[6] if.else[1] if.then[0] if.then[0] wait counter: spins until counter flags[33] reaches 1; it is 0\n"),
        "{err}"
    );
    let past = common::temp_scenario(
        "streamk_past.ron",
        &text.replace(
            add,
            r#"AtomicAdd(counter: "flags[t + mt * nt]", into: "old")"#,
        ),
    );
    let err = run::run_file(&past, &opts).unwrap_err().to_string();
    assert!(
        err.contains("cycle 7763: CTA 100, warp consumer0.w0: counter index 233 is out of range: `flags` has 133 elements\n  = in role `consumer`: program[3] loop(s).body[6] if.then[3] if.then[0] atom.add"),
        "{err}"
    );
}
