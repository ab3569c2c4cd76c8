//! Register spills (docs/isa.md, "Register estimate and spills"): a role that states its live
//! values and exceeds its budget reloads and stores the excess through the L1 and, past its
//! capacity, L2; a role within its budget runs exactly as without the estimate.

use crate::common;

use common::{root, scenario, sets, sim, temp_scenario};
use sim::observe::report::Report;
use sim::run::{self, RunOptions};

fn spill_text() -> String {
    std::fs::read_to_string(scenario("calibration/spill")).unwrap()
}

fn run_text(name: &str, text: &str, opts: &RunOptions) -> Report {
    let path = temp_scenario(name, text);
    run::run_file(&path, opts).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The twin's cycles per loop iteration (slope between `iters` and 2 `iters`) and the report
/// of the longer run.
fn per_iteration(warps: i64, live: i64, regs: i64, iters: i64) -> (f64, Report) {
    let run = |n: i64| {
        let opts = sets(&[
            ("warps", warps),
            ("live", live),
            ("regs", regs),
            ("iters", n),
        ]);
        run::run_file(&scenario("calibration/spill"), &opts).unwrap()
    };
    let (a, b) = (run(iters), run(2 * iters));
    ((b.cycles - a.cycles) as f64 / iters as f64, b)
}

#[test]
fn within_budget_nothing_changes() {
    // The estimate within the budget (128 live + 10 <= 255), and the same twin without `live`.
    let opts = sets(&[("warps", 4), ("live", 128), ("regs", 255)]);
    let with = run_text("within.ron", &spill_text(), &opts);
    let without = run_text(
        "without.ron",
        &spill_text().replace(" live: \"live\",", ""),
        &opts,
    );
    assert_eq!(with.to_json(), without.to_json());
    assert!(with.roles["w"].spill.is_none());
    assert!(with.warnings().is_empty());
    // gemm_ws's consumers within their 232 registers: 128 accumulators (BN 256) + 80 + 10.
    let text = std::fs::read_to_string(scenario("gemm_ws")).unwrap();
    let live = text.replace(
        "Role(name: \"consumer\", warpgroups: 2, regs: 232,",
        "Role(name: \"consumer\", warpgroups: 2, regs: 232, live: 80,",
    );
    assert_ne!(live, text);
    let opts = sets(&[("bn", 256)]);
    assert_eq!(
        run_text("gemm_ws_live.ron", &live, &opts).to_json(),
        run_text("gemm_ws.ron", &text, &opts).to_json()
    );
}

#[test]
fn one_warp_over_budget_pays_a_batched_round_trip_per_four_spilled_values() {
    let (plain, _) = per_iteration(1, 128, 255, 64);
    // 128 FFMAs, the first waiting for the last iteration's result.
    assert_eq!(plain, 131.0);
    // 64 registers: 128 + 10 - 64 = 74 spilled. 18 batches of 4 reloads and one of 2: the
    // loads book 2 cycles each on the L1 (behind the last batch's stores), 34 cycles of latency,
    // the FFMAs, 3 cycles to their results, the stores: 5 b + 37 cycles a batch; then the 54
    // FFMAs on registers.
    let (spilled, r) = per_iteration(1, 128, 64, 64);
    let expect = 18.0 * (5.0 * 4.0 + 37.0) + (5.0 * 2.0 + 37.0) + 54.0;
    assert!(
        (spilled - expect).abs() <= 0.01 * expect,
        "{spilled} cycles an iteration, expected {expect}"
    );
    assert!(spilled > 8.0 * plain);
    // Every iteration reloads and stores each spilled value once.
    let sp = r.roles["w"].spill.as_ref().unwrap();
    assert_eq!((sp.registers, sp.budget, sp.spilled), (138, 64, 74));
    assert_eq!(sp.bytes_per_thread, 74 * 4);
    assert_eq!((sp.local_loads, sp.local_stores), (128 * 74, 128 * 74));
    assert_eq!(sp.l1_hit_rate, 1.0);
    // The warp waits for its reloads in long_scoreboard, as Nsight Compute reports LDL.
    let w = &r.roles["w"];
    let long = w.ncu["long_scoreboard"] as f64 / w.lifetime as f64;
    assert!(long > 0.2, "long_scoreboard {long}");
    // Each local load and store takes an issue slot: 128 FFMAs and 2 x 74 spill instructions.
    assert_eq!(w.instructions, 128 * (128 + 2 * 74));
}

#[test]
fn warps_sharing_the_l1_and_past_its_capacity_run_at_its_rates() {
    // 4 warps x 148 local accesses of 128 bytes an iteration at 64 B/cycle: 1184 cycles, plus at
    // most one warp's FFMAs on registers and one round trip.
    let (w4, r) = per_iteration(4, 128, 64, 64);
    let l1 = 4.0 * 148.0 * 2.0;
    assert!((l1..=l1 + 54.0 + 50.0).contains(&w4), "{w4}");
    assert_eq!(r.roles["w"].spill.as_ref().unwrap().l1_hit_rate, 1.0);
    // 32 warps keep 32 x 74 x 128 bytes, past the L1's 128 KiB: every access also crosses the
    // L1's path to L2 at 47 B/cycle.
    let (w32, r) = per_iteration(32, 128, 64, 16);
    let miss = 32.0 * 148.0 * 128.0 / 47.0;
    assert!((w32 - miss).abs() <= 0.01 * miss, "{w32} against {miss}");
    let sp = r.roles["w"].spill.as_ref().unwrap();
    assert!(sp.l1_hit_rate < 0.01, "{}", sp.l1_hit_rate);
    // All of them go to L2, but the last ones, once warps that finished have left the L1 room.
    let accesses = (32 * 32 * 148 * 128) as f64;
    assert!(r.l2.bytes as f64 >= 0.99 * accesses, "{}", r.l2.bytes);
    // 32 warps with 10 spilled values each (40 KiB) stay in the L1: 32 x 20 accesses x 2 cycles.
    let (small, r) = per_iteration(32, 32, 32, 16);
    assert!((1280.0..=1280.0 * 1.05).contains(&small), "{small}");
    assert_eq!(r.roles["w"].spill.as_ref().unwrap().l1_hit_rate, 1.0);
    assert_eq!(r.l2.bytes, 0);
}

#[test]
fn sim_run_warns_when_a_role_spills() {
    let file = "scenarios/calibration/spill.ron";
    let out = sim(&["run", file, "--no-trace", "--set", "regs=64"]);
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "warning: scenarios/calibration/spill.ron: role `w` needs 138 registers per thread (128 live + 0 accumulators + 10 baseline) and has 64: 74 spill to local memory, 296 bytes per thread\n"
    );
    let summary = String::from_utf8(out.stdout).unwrap();
    assert!(
        summary.contains("  spills      w: 74 of 138 registers per thread in local memory"),
        "{summary}"
    );
    let out = sim(&["run", file, "--no-trace", "--set", "regs=255", "--json"]);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8(out.stdout).unwrap().contains("\"spill\""));
    assert!(root().join(file).exists());
}

#[test]
fn impossible_budgets_and_local_fields_are_errors() {
    // A wgmma's accumulators do not spill: m64n256 needs 128 registers, with the baseline 138.
    let text = std::fs::read_to_string(scenario("wave_quantization")).unwrap();
    let live = text.replace(
        "Role(name: \"mma\", regs: 128,",
        "Role(name: \"mma\", regs: 128, live: 0,",
    );
    let path = temp_scenario("wave_live.ron", &live);
    let e = run::run_file(&path, &RunOptions::default()).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains(
            "role `mma` has 128 registers per thread, fewer than its wgmma accumulators (128) \
             and the baseline (10) need: accumulators cannot be spilled to local memory"
        ),
        "{text}"
    );
    assert!(text.contains(":27:"), "{text}");
    // The preset's local-memory fields must be usable.
    for (field, value, message) in [
        ("l1.access_cycles", "0", "l1.access_cycles must be positive"),
        (
            "local.miss_bytes_per_cycle",
            "-1.0",
            "local.miss_bytes_per_cycle must be a positive number",
        ),
        (
            "local.reload_batch",
            "0",
            "local.reload_batch must be positive",
        ),
        ("local.l1_bytes", "0", "local.l1_bytes must be positive"),
    ] {
        let text = spill_text().replace(
            "gpu: \"h200-sxm\",",
            &format!("gpu: \"h200-sxm\",\n    gpu_overrides: {{\"{field}\": {value}}},"),
        );
        let path = temp_scenario("bad_local.ron", &text);
        let e = run::run_file(&path, &RunOptions::default()).unwrap_err();
        assert!(e.to_string().contains(message), "{field}: {e}");
    }
}
