//! The fundamentals as scenarios (issue 19): coalescing, bank conflicts, divergence and the
//! block reduction, each against the closed form in its `analytic` section, and the rules of
//! lane-dependent control flow (`isa::divergence`) they rest on.

use crate::common;

use common::{scenario, sets, temp_scenario};
use sim::observe::report::Report;
use sim::run::{self, RunError};

fn run(name: &str, pairs: &[(&str, i64)]) -> Report {
    run::run_file(&scenario(name), &sets(pairs)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Simulated over analytic cycles, which must be within `tol` of 1.
fn agrees(r: &Report, tol: f64, what: &str) {
    let a = r.analytic.as_ref().expect("the scenario has a closed form");
    assert!(
        (a.ratio - 1.0).abs() <= tol,
        "{what}: simulated {} against analytic {} (ratio {:.4})",
        r.cycles,
        a.cycles,
        a.ratio
    );
}

fn gcd32(s: i64) -> i64 {
    (0..=5).rev().map(|k| 1 << k).find(|p| s % p == 0).unwrap()
}

#[test]
fn bank_conflicts_cost_gcd_of_stride_and_32_wavefronts() {
    let loads = 32 * 64;
    for stride in 1..=33 {
        let r = run("bank_conflicts", &[("stride", stride)]);
        assert_eq!(r.cycles as i64, loads * gcd32(stride), "stride {stride}");
        agrees(&r, 0.02, &format!("stride {stride}"));
    }
    // The 32 x 32 column read is 32-way; one word of padding per row makes it conflict-free.
    let column = run("bank_conflicts", &[("layout", 1)]);
    let padded = run("bank_conflicts", &[("layout", 1), ("pad", 1)]);
    assert_eq!((column.cycles, padded.cycles), (65_536, 2_048));
    agrees(&column, 0.02, "column");
    agrees(&padded, 0.02, "padded column");
}

#[test]
fn coalescing_from_l2_moves_a_sector_per_touched_32_bytes_and_takes_a_cycle_per_line() {
    let loads = 32 * 16;
    for stride in 1..=32 {
        let r = run("coalescing", &[("stride", stride)]);
        let sectors = (4 * stride).min(32) as u64;
        assert_eq!(r.l2.bytes, loads * 32 * sectors, "stride {stride}");
        assert_eq!(r.l2.hit_rate, 1.0);
        // Strides 1 to 4 take 2 to 4 cycles a load (the tag stage's 2 at least, the port's 128
        // bytes a cycle from stride 2), so the last load's L2 latency (with its jitter) shows.
        let tol = if stride <= 4 { 0.03 } else { 0.02 };
        agrees(&r, tol, &format!("L2, stride {stride}"));
        let l1 = r.units["l1"].busy * r.cycles as f64;
        assert_eq!(
            l1.round() as u64,
            loads * stride.max(2) as u64,
            "stride {stride}"
        );
    }
    // Strides 2 to 8 are bound by the sectors on the SM's port, 128 bytes a cycle: stride 2's
    // 512 loads of 256 bytes take 1,024 cycles and the last load's latency; from stride 4 to
    // 8 twice the bytes take twice that time.
    let (two, four, eight) = (
        run("coalescing", &[("stride", 2)]),
        run("coalescing", &[("stride", 4)]),
        run("coalescing", &[("stride", 8)]),
    );
    assert_eq!(eight.l2.bytes, 4 * two.l2.bytes);
    let latency = two.cycles as f64 - 1024.0;
    assert!((250.0..350.0).contains(&latency), "{latency}");
    let ratio = (eight.cycles as f64 - latency) / (four.cycles as f64 - latency);
    assert!((ratio - 2.0).abs() < 0.02 * 2.0, "{ratio}");
    // Past that the lines bind, one a cycle, whatever the width: 16-byte lanes 64 bytes apart
    // touch 16 lines as 4-byte lanes at stride 16 do.
    let (wide, narrow) = (
        run("coalescing", &[("width", 16), ("stride", 4)]),
        run("coalescing", &[("stride", 16)]),
    );
    assert_eq!(wide.cycles, narrow.cycles);
    assert_eq!(wide.bound.as_ref().unwrap().binding, "l1");
    // Beyond the L1's queue of 26 accesses the warps wait to issue: 32 warps of 32-line loads
    // spend nearly all their time in lg_throttle, none waiting for data they never use.
    let wide_stride = run("coalescing", &[("stride", 32)]);
    let states = &wide_stride.roles["r"].states;
    let total: u64 = states.values().sum();
    assert!(
        states["lg_throttle"] as f64 > 0.95 * total as f64,
        "{states:?}"
    );
}

#[test]
fn coalescing_from_dram_moves_whole_lines_or_sector_pairs() {
    let loads = 132 * 32 * 16;
    // Stride 16 is left out: the model fills one sector pair per line there (its line requests
    // carry a sector count, not which sectors), the H200 two (the scenario's header).
    for (stride, per_load) in [(1, 128), (2, 256), (4, 512), (8, 1024), (32, 2048)] {
        let r = run(
            "coalescing",
            &[("stride", stride), ("warm", 0), ("ctas", 132)],
        );
        assert_eq!(r.dram.read_bytes, loads * per_load, "stride {stride}");
        assert_eq!(r.l2.bytes, loads * 32 * (4 * stride as u64).min(32));
        // The closed form leaves out HBM's read/write turnaround and channel imbalance.
        agrees(&r, 0.05, &format!("DRAM, stride {stride}"));
    }
}

#[test]
fn a_lane_dependent_branch_runs_both_paths() {
    let uniform = run("divergence", &[("mode", 0)]);
    let parity = run("divergence", &[("mode", 1)]);
    assert_eq!((uniform.cycles, parity.cycles), (2_045, 4_093));
    assert_eq!(parity.instructions, 2 * uniform.instructions);
    assert!(uniform.roles["w"].divergence.is_none());
    let d = parity.roles["w"].divergence.as_ref().unwrap();
    assert_eq!((d.threads_per_instruction, d.efficiency), (16.0, 0.5));
    // Nsight Compute's name for it, only where lanes were masked off.
    let threads = "smsp__thread_inst_executed_per_inst_executed.ratio";
    assert_eq!(parity.ncu.get(threads), Some(&16.0));
    assert_eq!(uniform.ncu.get(threads), None);
    for r in [&uniform, &parity] {
        agrees(r, 0.02, "if/else");
    }
}

#[test]
fn a_loop_runs_to_its_slowest_lane() {
    for trips in [2, 8, 32] {
        let lanes = run("divergence", &[("mode", 2), ("trips", trips)]);
        let all = run("divergence", &[("mode", 3), ("trips", trips)]);
        assert_eq!(lanes.cycles, all.cycles, "trips {trips}");
        agrees(&lanes, 0.02, "per-lane trips");
        // Lane L runs 1 + L (trips - 1) / 31 iterations: their mean over the warp's `trips`.
        let mean: i64 = (0..32).map(|l| 1 + l * (trips - 1) / 31).sum();
        let d = lanes.roles["w"].divergence.as_ref().unwrap();
        let expect = mean as f64 / trips as f64;
        assert!((d.threads_per_instruction - expect).abs() < 1e-9, "{d:?}");
        assert!(all.roles["w"].divergence.is_none());
    }
}

#[test]
fn warp_shuffles_save_the_single_warp_rounds_barriers() {
    let tree = run("block_sum", &[]);
    let shfl = run("block_sum", &[("shuffle", 1)]);
    assert_eq!((tree.cycles, shfl.cycles), (1_138, 937));
    // Six 57-cycle barrier rounds and the final read (27) against the shuffle tail (168).
    assert_eq!(tree.cycles - shfl.cycles, 6 * 57 + 27 - 168);
    agrees(&tree, 0.02, "tree");
    agrees(&shfl, 0.02, "shuffles");
    let eff = |r: &Report| r.roles["t"].divergence.as_ref().unwrap().efficiency;
    assert!(eff(&tree) < 0.87 && eff(&shfl) > 0.98);
}

#[test]
fn occupancy_follows_the_tightest_limit_and_pays_up_to_four_warps_per_partition() {
    // (warpgroups, registers, KiB of shared memory) -> CTAs per SM, binding limit, cycles.
    let cases = [
        ((1, 32, 1), 16, "threads", 8_192),
        ((8, 32, 1), 2, "threads", 8_192),
        ((2, 128, 1), 2, "regs", 11_538),
        ((2, 255, 1), 1, "regs", 23_552),
        ((2, 32, 100), 2, "smem", 11_538),
        ((2, 32, 20), 8, "threads", 8_192),
        ((4, 64, 1), 2, "regs", 8_192),
        ((8, 64, 1), 1, "regs", 9_633),
    ];
    for ((wg, regs, smem), ctas, limiter, cycles) in cases {
        let r = run(
            "occupancy",
            &[("warpgroups", wg), ("regs", regs), ("smem_kib", smem)],
        );
        let what = format!("{wg} warpgroups, {regs} registers, {smem} KiB");
        assert_eq!(
            (r.ctas_per_sm, r.occupancy_limiter.as_str(), r.cycles),
            (ctas, limiter, cycles),
            "{what}"
        );
        agrees(&r, 0.02, &what);
    }
}

/// A one-warpgroup kernel running `body` with a 64 KiB tensor `X` and a 64 KiB buffer `s`.
fn kernel(body: &str) -> String {
    format!(
        r#"Scenario(
    name: "lanes",
    gpu: "h200-sxm",
    kernel: Kernel(
        regs_per_thread: 32,
        tensors: [Tensor(name: "X", dtype: F32, shape: [16384], warm: 1)],
        smem: [Buffer(name: "s", dtype: F32, shape: [16384])],
        roles: [Role(name: "w", regs: 32, program: [{body}])],
    ),
)"#
    )
}

fn run_text(body: &str) -> Result<Report, RunError> {
    let path = temp_scenario("fundamentals_lanes.ron", &kernel(body));
    run::run_file(&path, &sets(&[]))
}

#[test]
fn masked_lanes_make_no_accesses() {
    // Lanes 0..15 at a 32-word stride: 16 wavefronts and 16 sectors, not the warp's 32.
    let half = run_text(
        r#"If(cond: "lane < 16", then: [
            LdShared(buf: "s", addr: "lane * 128"),
            LdGlobal(tensor: "X", addr: "lane * 128"),
        ])"#,
    )
    .unwrap();
    let whole = run_text(
        r#"LdShared(buf: "s", addr: "lane * 128"), LdGlobal(tensor: "X", addr: "lane * 128")"#,
    )
    .unwrap();
    let units = |r: &Report| (r.units["smem"].busy * r.cycles as f64).round() as u64;
    assert_eq!(units(&half) * 2, units(&whole));
    // The 4 warps look up 16 and 32 sectors each in the L1; the first warp's go to L2, the
    // others find them there.
    let looked_up = |r: &Report| r.l1.as_ref().map(|l1| l1.sectors);
    assert_eq!(
        (looked_up(&half), looked_up(&whole)),
        (Some(4 * 16), Some(4 * 32))
    );
    assert_eq!((half.l2.bytes, whole.l2.bytes), (16 * 32, 32 * 32));
    // A masked-off lane's address may lie outside the tensor: it is never formed.
    let guarded =
        run_text(r#"If(cond: "lane < 8", then: [LdGlobal(tensor: "X", addr: "lane * 8192")])"#)
            .unwrap();
    assert_eq!(looked_up(&guarded), Some(4 * 8));
    assert_eq!(guarded.l2.bytes, 8 * 32);
}

#[test]
fn a_condition_uniform_per_warp_costs_one_path() {
    // `warp_id * 32 + lane < 64` reads `lane` but splits no warp: warps 0 and 1 take the
    // then-path whole, as `warp_id < 2` has them.
    let body = |cond: &str| format!(r#"If(cond: "{cond}", then: [Fma(16)], else: [Alu(4)])"#);
    let by_lane = run_text(&body("warp_id * 32 + lane < 2 * 32")).unwrap();
    let by_warp = run_text(&body("warp_id < 2")).unwrap();
    assert_eq!(by_lane.to_json(), by_warp.to_json());
    assert!(by_lane.roles["w"].divergence.is_none());
}

#[test]
fn aligned_instructions_need_every_lane() {
    let err = run_text(r#"If(cond: "lane % 2 == 0", then: [BarSync(id: 0, threads: 128)])"#)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "bar.sync with 16 of 32 lanes active: it is .aligned in PTX, so every lane of the warp must execute it together"
        ),
        "{err}"
    );
    assert!(err.contains("program[0] if.then[0] bar.sync"), "{err}");
}

/// Relative difference of `a` from `b`.
fn off(a: u64, b: f64) -> f64 {
    a as f64 / b - 1.0
}

/// The naive and the shared-memory-tiled fp32 GEMM on the H100 at n = 512 (one wave: 256 CTAs
/// of 1024 threads, 2 an SM; n = 1024 takes minutes to simulate), against the chip's cycles
/// (calibration/data/h100-l1_cache.csv: 88,293 and 62,625) and Nsight Compute's L1 hit rates
/// at n = 1024 (h100-l1_ncu.csv: 95.02% and 0.52%; the naive kernel's compulsory misses, an A
/// sector per warp every 8 k-steps and a B line per CTA and k-step, are 5% at any n).
#[test]
fn the_naive_gemm_hits_the_l1_and_tiling_still_saves_time() {
    let naive = run("naive_vs_tiled_gemm", &[("n", 512)]);
    let tiled = run("naive_vs_tiled_gemm", &[("n", 512), ("tiled", 1)]);
    // The naive kernel's 128 one-line loads an SM and k-step keep the L1's tag stage busy,
    // one cycle a hit: 6.6% fast.
    let naive_off = off(naive.cycles, 88_293.0);
    assert!(naive_off.abs() <= 0.10, "naive: {} cycles", naive.cycles);
    // The tiled kernel is 3.6% fast: the shared-memory port binds it at 48 wavefronts a
    // warp-step, each of its 8 LDS.128 broadcasts of A's tile 2 (h100-core_bcast.csv).
    let tiled_off = off(tiled.cycles, 62_625.0);
    assert!(tiled_off.abs() <= 0.10, "tiled: {} cycles", tiled.cycles);
    assert!(tiled.cycles < naive.cycles);
    let hit = |r: &Report| {
        r.l1.as_ref()
            .expect("plain loads go through the L1")
            .hit_rate
    };
    assert!((hit(&naive) - 0.9502).abs() <= 0.015, "{}", hit(&naive));
    assert!(hit(&tiled) < 0.02, "{}", hit(&tiled));
    // The tiled kernel reads each element of A and B once per CTA, 32 warps x 2 lines a step.
    assert_eq!(tiled.l1.as_ref().unwrap().sectors, 256 * 32 * 16 * 2 * 4);
}
