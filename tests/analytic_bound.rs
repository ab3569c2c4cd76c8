//! The generic resource bound (`sim::analytic::bound`): its binding unit and tightness, its
//! demand against the engine's on every scenario, and how `sim run` reports it.

use crate::common;

use common::{scenario, scenario_files, sets, stdout_of, temp_scenario};

/// The generic bound of a scenario at the preset's clock, without simulating it.
fn generic_bound(name: &str, pairs: &[(&str, i64)]) -> sim::analytic::bound::Bound {
    let (k, p) = sim::run::load(&scenario(name), &sets(pairs)).unwrap();
    sim::analytic::bound::bound(&k, &p, p.clock.max_mhz).unwrap()
}

/// Simulated / bound cycles from `sim run`'s report.
fn bound_ratio(name: &str, pairs: &[(&str, i64)]) -> f64 {
    let r = sim::run::run_file(&scenario(name), &sets(pairs)).unwrap();
    r.bound
        .unwrap_or_else(|| panic!("{name}: {:?}", r.bound_error))
        .ratio
}

#[test]
fn generic_bound_names_the_binding_unit() {
    // 128x256x64 SS tiles: 1024 cycles of HGMMA math per k-block against 640 of operand reads
    // on the shared-memory port (8 HGMMAs of 2048 + 8192 B); TMA writes take the fill path.
    let ws = generic_bound("gemm_ws", &[("stages", 4)]);
    assert_eq!(ws.binding, "tensor");
    assert_eq!(ws.cycles, 65_536);
    assert_eq!(ws.unit("smem"), Some(64.0 * 640.0));
    // SS N = 32: 24 cycles of operand feed per HGMMA against 16 of math.
    let narrow = generic_bound("wgmma_stream", &[("n", 32), ("a_from", 0)]);
    assert_eq!((narrow.binding, narrow.cycles), ("smem", 64 * 4 * 24));
    assert_eq!(narrow.unit("tensor"), Some(64.0 * 4.0 * 16.0));
}

#[test]
fn generic_bound_is_tight_on_the_wgmma_streams_and_bounds_the_hbm_stream() {
    for a_from in [0, 1] {
        for n in [16, 32, 64, 128, 256] {
            let ratio = bound_ratio("wgmma_stream", &[("n", n), ("a_from", a_from)]);
            // RS at N = 16 is bound by the pipe's 13-cycle RS floor, which the bound's tensor
            // demand includes (tensor.rs_min_cycles).
            let expected = 1.0;
            assert!(
                (ratio - expected).abs() <= 0.02,
                "wgmma_stream n={n} a_from={a_from}: simulated / bound = {ratio:.4}"
            );
        }
    }
    // The simulation leaves the last dirty lines in L2 (29 MiB here, written back after the
    // kernel). The HBM term counts only the written lines beyond the L2's capacity, which must
    // reach DRAM during the kernel: 2 GiB - 50 MiB at the sustained bandwidth. The bound takes
    // reads and writes at that one rate; the simulated channels also lose
    // memory.hbm.turnaround_cycles per switch between reading and writing, which puts the copy
    // 12.6% above the bound (1.4% without the turnaround).
    let ratio = bound_ratio("hbm_stream", &[]);
    assert!(
        (1.0..=1.15).contains(&ratio),
        "hbm_stream: simulated / bound = {ratio:.4}"
    );
}

/// On every scenario: the walk asks of each unit exactly what the engine booked on it (of L2
/// at most, where loads go through the L1 data cache), its DRAM bytes are at most the
/// simulation's, and the simulation takes at least the bound (2% slack:
/// where atomics hand out work the walk assumes a round-robin order the simulation need not
/// follow).
#[test]
fn every_scenario_is_bounded_from_below_by_its_demand() {
    let files = scenario_files();
    assert!(files.len() >= 8);
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        // FA2's 83 M warp-instructions pass the walk's step budget: 4 of its CTAs.
        let small: &[(&str, i64)] = match name.as_str() {
            "fa2_forward" => &[("heads", 1), ("seqlen", 512)],
            // The n = 1024 default runs 4 waves for minutes: 16 CTAs.
            "naive_vs_tiled_gemm" => &[("n", 128)],
            _ => &[],
        };
        let (k, p) = sim::run::load(&path, &sets(small)).unwrap();
        let cfg = sim::engine::Config {
            clock_mhz: p.clock.max_mhz,
            ..Default::default()
        };
        let s = sim::engine::Engine::new(&k, &p, cfg).run().unwrap();
        let b = sim::analytic::bound::bound(&k, &p, p.clock.max_mhz)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let t = &b.total;
        let pipe = |i: usize| t.pipes.iter().map(|x| x[i]).sum::<u64>();
        let u = &s.units;
        assert_eq!(t.tensor, u.tensor, "{name}: tensor");
        assert_eq!(t.smem, u.smem, "{name}: smem");
        assert_eq!(
            [pipe(0), pipe(1), pipe(2), pipe(3)],
            [u.alu, u.fma, u.mufu, u.mma],
            "{name}: alu, fma, mufu, mma"
        );
        assert_eq!(t.issue.iter().sum::<u64>(), u.issue, "{name}: issue");
        // Loads through the L1 data cache count their sectors once for the whole GPU in the
        // walk; each SM fetches what it reads, and again after an eviction.
        if s.l1_sectors == 0 {
            assert_eq!(t.l2_bytes, s.mem.l2_bytes, "{name}: L2 bytes");
        } else {
            assert!(t.l2_bytes <= s.mem.l2_bytes, "{name}: L2 bytes");
        }
        assert!(
            b.dram_read_bytes <= s.mem.dram_read_bytes,
            "{name}: DRAM reads"
        );
        assert!(
            b.dram_write_bytes <= s.mem.dram_write_bytes - s.mem.dram_flush_bytes,
            "{name}: DRAM writes"
        );
        let ratio = s.cycles as f64 / b.cycles as f64;
        eprintln!(
            "{name:<18} simulated {:>9} bound {:>9} ({}) ratio {ratio:.3}",
            s.cycles, b.cycles, b.binding
        );
        assert!(ratio >= 0.98, "{name}: simulated / bound = {ratio:.3}");
    }
}

#[test]
fn sim_run_prints_and_reports_the_generic_bound() {
    let out = stdout_of(&["run", "scenarios/wgmma_stream.ron", "--set", "n=32"]);
    assert!(
        out.contains(
            "\n  bound       6,144 cycles, binding unit smem (generic resource bound); simulated / bound = 1.0"
        ),
        "{out}"
    );
    // The scenario's own prediction is kept.
    assert!(
        out.contains("analytic    6,144 cycles, bound by tensor pipe"),
        "{out}"
    );
    let json = stdout_of(&[
        "run",
        "scenarios/wgmma_stream.ron",
        "--set",
        "n=32",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["bound"]["cycles"], 6144);
    assert_eq!(v["bound"]["binding"], "smem");
    assert_eq!(v["bound"]["units"]["tensor"], 4096.0);
    assert_eq!(v["bound"]["units"]["hbm"], 0.0);
    assert!(v["bound"]["ratio"].as_f64().unwrap() >= 1.0);
    assert_eq!(
        v["analytic"]["note"],
        "the wgmma feed model (docs/analytic.md)"
    );
}

#[test]
fn a_scenario_without_a_model_gets_the_generic_bound_as_its_analytic_line() {
    let text = std::fs::read_to_string(scenario("wgmma_stream")).unwrap();
    let (kernel_part, _) = text.split_once("    analytic: Analytic(").unwrap();
    let path = temp_scenario("no_model.ron", &format!("{kernel_part})\n"));
    let path = path.to_str().unwrap();
    let out = stdout_of(&["run", path, "--set", "a_from=1"]);
    // RS N = 128: 64 cycles of math per HGMMA.
    assert!(
        out.contains("analytic    16,384 cycles, bound by tensor; simulated / analytic = 1.0"),
        "{out}"
    );
    let json = stdout_of(&["run", path, "--set", "a_from=1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["analytic"]["note"], "generic resource bound");
    assert_eq!(v["analytic"]["bound"], "tensor");
    assert_eq!(v["analytic"]["cycles"], v["bound"]["cycles"]);
}

#[test]
fn a_kernel_the_walk_cannot_bound_still_runs() {
    // CTA 0 starts its atomic late, so in the simulation CTA 1 takes value 0 and CTA 0 value 1;
    // the walk's round-robin order gives CTA 1 value 1, and slot 2 does not exist.
    let path = temp_scenario(
        "atomic_order.ron",
        r#"Scenario(
    name: "atomic_order",
    gpu: "h100-sxm",
    kernel: Kernel(
        grid: 2,
        regs_per_thread: 32,
        smem: [Buffer(name: "s", slots: 2, dtype: F32, shape: [32])],
        counters: [Counter(name: "c")],
        roles: [Role(name: "w", regs: 32, program: [
            Fma("cta == 0 ? 1000 : 0"),
            AtomicAdd(counter: "c", into: "t"),
            LdShared(buf: "s[t * cta * 2]", addr: "lane * 4"),
        ])],
    ),
)"#,
    );
    let path = path.to_str().unwrap();
    let out = stdout_of(&["run", path]);
    let line = out
        .lines()
        .find(|l| l.starts_with("  bound "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.starts_with(
            "  bound       unavailable: CTA 1, warp w0.w0: slot 2 of `s` is out of range"
        ),
        "{line}"
    );
    assert!(line.contains("= in role `w`"), "{line}");
    assert!(
        out.contains("analytic    (the scenario states no analytic prediction)"),
        "{out}"
    );
    let json = stdout_of(&["run", path, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["bound"].is_null() && v["analytic"].is_null(), "{json}");
}
