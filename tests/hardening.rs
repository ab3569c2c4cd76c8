//! Hostile input and hostile surroundings (issue 13): each test feeds the binary or the library
//! one input of a class that used to crash, answer wrongly or lie, and asserts the diagnosis.

use crate::common;

use common::{command, sim, temp_scenario};
use std::process::Stdio;

/// A one-role scenario whose FMA count is `expr` (RON text), with `extra` after its `gpu`.
fn mini(expr: &str, extra: &str) -> String {
    format!(
        r#"Scenario(
    name: "mini",
    gpu: "h100-sxm",{extra}
    params: {{ "k": 64 }},
    kernel: Kernel(
        regs_per_thread: 128,
        roles: [
            Role(name: "w", regs: 128, program: [
                Loop(var: "j", count: "k / 16", body: [Fma({expr})]),
            ]),
        ],
    ),
)
"#
    )
}

/// Runs `sim ARGS`; asserts exit status 1, no panic, and every needle in standard error.
fn fails_with(args: &[&str], needles: &[&str]) -> String {
    let out = sim(args);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "sim {args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "expected `{n}` in:\n{err}");
    }
    err
}

/// `sim check` on scenario text written to a scratch file named `name`.
fn check_text(name: &str, text: &str, needles: &[&str]) -> String {
    let path = temp_scenario(name, text);
    fails_with(&["check", path.to_str().unwrap()], needles)
}

#[test]
fn deeply_nested_expressions_are_errors_at_their_position() {
    let deep = format!("\"{}j{}\"", "(".repeat(1000), ")".repeat(1000));
    check_text(
        "deep.ron",
        &mini(&deep, ""),
        &[
            "the expression nests more than 256 levels deep",
            "deep.ron:9:61",
        ],
    );
    let unary = format!("\"{}j\"", "-".repeat(3000));
    check_text(
        "unary.ron",
        &mini(&unary, ""),
        &["the expression nests more than 256 levels deep"],
    );
    let long = format!("\"{}\"", vec!["j"; 30_000].join("+"));
    check_text(
        "long.ron",
        &mini(&long, ""),
        &["the expression has 59999 characters; at most 4096 are allowed"],
    );
}

#[test]
fn a_closed_standard_output_ends_the_output_quietly() {
    // The read end is closed before `sim validate` has simulated its twins (a second) and
    // printed.
    let mut child = command(&["validate", "--group", "l2_disjoint"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[test]
fn a_closed_standard_error_keeps_the_exit_status() {
    // The read end is closed while the run simulates (a few tenths of a second), before it
    // reports the cycle limit.
    let mut child = command(&[
        "run",
        "scenarios/gemm.ron",
        "--no-trace",
        "--max-cycles",
        "100000",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    drop(child.stderr.take());
    assert_eq!(child.wait().unwrap().code(), Some(1));
}

#[test]
fn unknown_fields_inside_instructions_are_rejected() {
    let text = mini("1", "").replace("Fma(1)", "Arrive(bar: \"b\", elect: true, bogus: 3)");
    check_text(
        "unknown_field.ron",
        &text,
        &["Unexpected field named `bogus` in `Arrive`, expected one of `bar`, `elect`, `cta`, `ranks`, or `scope` instead"],
    );
    let wait = mini("1", "").replace("Fma(1)", "Wait(bar: \"b\", parity: 0, pol: Test)");
    check_text(
        "unknown_wait_field.ron",
        &wait,
        &["Unexpected field named `pol` in `Wait`"],
    );
}

#[test]
fn keys_written_twice_are_rejected() {
    let params = mini("1", "").replace("\"k\": 64", "\"k\": 64, \"k\": 32");
    check_text(
        "dup_params.ron",
        &params,
        &["the key `k` is written twice", "dup_params.ron:4:"],
    );
    let overrides = mini("1", " gpu_overrides: {\"sm.count\": 4, \"sm.count\": 8},");
    check_text(
        "dup_overrides.ron",
        &overrides,
        &[
            "the key `sm.count` is written twice",
            "dup_overrides.ron:3:",
        ],
    );
}

#[test]
fn text_encoding_a_bom_is_accepted_and_invalid_utf8_is_located() {
    let bom = temp_scenario("bom.ron", &format!("\u{feff}{}", mini("1", "")));
    let out = sim(&["check", bom.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut bytes = mini("1", "").into_bytes();
    bytes[12] = 0xc3; // `name: "mini"`: a lead byte without its continuation
    let path = common::scratch("bad_utf8.ron");
    std::fs::write(&path, bytes).unwrap();
    fails_with(
        &["check", path.to_str().unwrap()],
        &[
            "the file is not valid UTF-8 text (byte 0xC3)",
            "bad_utf8.ron:2:3",
        ],
    );
}

#[test]
fn integers_beyond_i64_are_too_large_not_floating_point() {
    for big in [
        "9223372036854775808",
        "18446744073709551616",
        "-9223372036854775809",
    ] {
        let err = check_text(
            "big.ron",
            &mini(big, ""),
            &["integer too large", "big.ron:9:"],
        );
        assert!(!err.contains("floating point"), "{err}");
    }
    let fraction = check_text(
        "fraction.ron",
        &mini("1.5", ""),
        &["floating point number `1.5`"],
    );
    assert!(!fraction.contains("too large"), "{fraction}");
}

#[test]
fn deep_programs_run_and_deeper_ones_are_explained() {
    let nested = |n: usize| {
        let mut body = "Fma(1)".to_string();
        for i in 0..n {
            body = format!("If(cond: {}, then: [{body}])", i % 2 + 1);
        }
        mini("1", "").replace("Fma(1)", &body)
    };
    let ok = temp_scenario("nested_ok.ron", &nested(80));
    let out = sim(&["check", ok.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_text(
        "nested_deep.ron",
        &nested(200),
        &[
            "the scenario nests more than 512 levels deep",
            "nested_deep.ron:9:",
        ],
    );
}

#[test]
fn an_error_on_a_huge_line_prints_a_clipped_message() {
    let field = "x".repeat(5_000_000);
    let text = mini("1", "").replace("name: \"mini\",", &format!("name: \"mini\", {field}: 1,"));
    let err = check_text(
        "huge_line.ron",
        &text,
        &["Unexpected field named `xxx", "characters left out"],
    );
    assert!(err.len() < 20_000, "{} bytes on stderr", err.len());
}

/// `scenarios/NAME.ron` with `gpu_overrides` set to `overrides` (RON map entries).
fn with_overrides(name: &str, overrides: &str) -> String {
    let text = std::fs::read_to_string(common::scenario(name)).unwrap();
    let gpu = text
        .lines()
        .find(|l| l.trim_start().starts_with("gpu:"))
        .unwrap();
    text.replacen(gpu, &format!("{gpu} gpu_overrides: {{{overrides}}},"), 1)
}

#[test]
fn override_counts_and_times_beyond_any_gpu_are_refused() {
    for (entry, message) in [
        (
            "\"barriers.named\": 4294967295",
            "barriers.named = 4294967295 must be at most 1024",
        ),
        (
            "\"memory.l2.ways\": 4294967295",
            "memory.l2.ways = 4294967295 must be at most 1024",
        ),
        (
            "\"memory.l2.slices\": 100000",
            "memory.l2.slices = 100000 must be at most 4096",
        ),
        (
            "\"memory.hbm.channels\": 100000",
            "memory.hbm.channels = 100000 must be at most 4096",
        ),
        (
            "\"memory.l2.bytes\": 18446744073709551615",
            "memory.l2.bytes = 18446744073709551615 must be at most 1073741824",
        ),
        ("\"memory.l2.ways\": 0", "memory.l2.ways must be positive"),
        (
            "\"memory.hbm.latency\": 18446744073709551615",
            "memory.hbm.latency = 18446744073709551615 must be at most 4294967296",
        ),
        (
            "\"sm.count\": 18446744073709551616",
            "sm.count = 18446744073709552000: integer too large",
        ),
        (
            "\"clock.max_mhz\": inf",
            "clock.max_mhz = inf must be a positive number of MHz up to 1000000",
        ),
        (
            "\"clock.sustained\": [(load: 0.0, mhz: inf)]",
            "clock.sustained[0].mhz = inf must be positive",
        ),
    ] {
        check_text(
            "override_range.ron",
            &with_overrides("gemm_ws", entry),
            &[&format!("preset `h100-sxm`: {message}")],
        );
    }
}

#[test]
fn a_tiny_bandwidth_or_a_huge_clock_is_slow_not_fast() {
    // 1e-12 GB/s made each HBM transfer's length wrap around u64: the stream ran 5x faster.
    let text = with_overrides("hbm_stream", "\"memory.hbm.bandwidth_gbs\": 1e-12");
    let path = temp_scenario("tiny_bandwidth.ron", &text);
    fails_with(
        &[
            "run",
            path.to_str().unwrap(),
            "--no-trace",
            "--max-cycles",
            "10000000",
        ],
        &["the run passed the cycle limit (10000000 cycles"],
    );
    fails_with(
        &[
            "run",
            "scenarios/hbm_stream.ron",
            "--no-trace",
            "--clock-mhz",
            "1e12",
        ],
        &["--clock-mhz 1000000000000 is beyond the fastest clock modeled, 1000000 MHz"],
    );
}

#[test]
fn shared_memory_sizes_that_wrap_around_u64_are_refused() {
    // 2^40 x 2^40 x 4 bytes per slot wrapped to 0 and passed the shared-memory check.
    let text = std::fs::read_to_string(common::scenario("gemm_ws")).unwrap().replace(
        "smem: [",
        "smem: [\n            Buffer(name: \"huge\", dtype: F32, shape: [1099511627776, 1099511627776]),",
    );
    check_text(
        "smem_wrap.ron",
        &text,
        &["a slot of buffer `huge` is 1099511627776x1099511627776 elements of 4 bytes: more than 2^48 bytes"],
    );
    // 2^16 slots of 2^48 bytes: the sum, 2^64 and a little, is reported as it is, not wrapped.
    let text = std::fs::read_to_string(common::scenario("gemm_ws")).unwrap().replace(
        "smem: [",
        "smem: [\n            Buffer(name: \"many\", slots: 65536, dtype: F32, shape: [4194304, 16777216]),",
    );
    check_text(
        "smem_sum.ron",
        &text,
        &["the CTA needs 18446744073709748288 bytes of shared memory"],
    );
}

#[test]
fn a_per_sm_limit_below_one_cta_is_an_impossible_configuration() {
    let text = with_overrides("gemm_ws", "\"sm.warps_per_partition\": 1");
    let err = check_text(
        "no_fit.ron",
        &text,
        &["impossible configuration: no CTA fits on an SM of h100-sxm: sm.warps_per_partition = 1 is below its 3 warps per partition (12 warps over 4 partitions)"],
    );
    assert!(!err.contains("deadlock"), "{err}");
}

#[test]
fn a_trace_never_replaces_its_input() {
    let text = mini("\"j + 1\"", "");
    let path = temp_scenario("self_trace.ron", &text);
    let p = path.to_str().unwrap();
    // The same file spelled another way, through its folder's `.`.
    let other = path.parent().unwrap().join(".").join("self_trace.ron");
    for trace in [p, other.to_str().unwrap()] {
        fails_with(
            &["run", p, "--trace", trace],
            &["--trace names the scenario file itself, which the trace would replace"],
        );
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    let trace = common::scratch("self_report.trace.json");
    let t = trace.to_str().unwrap();
    let out = sim(&["run", p, "--trace", t]);
    assert!(out.status.success());
    let before = std::fs::read(&trace).unwrap();
    fails_with(
        &["report", t, "-o", t],
        &["-o names the trace being read, which the page would replace"],
    );
    assert_eq!(std::fs::read(&trace).unwrap(), before);
}

#[test]
fn the_scenario_name_cannot_lead_the_default_trace_out_of_traces() {
    let dir = common::scratch("name_escape/work");
    std::fs::create_dir_all(&dir).unwrap();
    let text = mini("1", "").replace("name: \"mini\"", "name: \"../../escape\"");
    let path = temp_scenario("name_escape/escape.ron", &text);
    let out = command(&["run", path.to_str().unwrap()])
        .current_dir(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("trace written to traces/_._.._escape.trace.json"),
        "{stdout}"
    );
    assert!(dir.join("traces/_._.._escape.trace.json").is_file());
    assert!(!common::scratch("escape.trace.json").exists());
    // Written beside it under a temporary name, then renamed: nothing else is left there.
    let names: Vec<_> = std::fs::read_dir(dir.join("traces")).unwrap().collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn a_failing_trace_write_keeps_the_diagnosis() {
    // A folder where the trace should go: the trace is written beside it, and the final
    // rename onto it fails after the run has deadlocked.
    let dir = common::scratch("trace_is_a_folder");
    std::fs::create_dir_all(dir.join("inside")).unwrap();
    let err = fails_with(
        &[
            "run",
            "tests/fixtures/deadlock_empty.ron",
            "--trace",
            dir.to_str().unwrap(),
        ],
        &[
            "deadlock at cycle",
            &format!("= the trace could not be written to {}: ", dir.display()),
        ],
    );
    assert!(
        err.starts_with("error: tests/fixtures/deadlock_empty.ron: deadlock"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("trace_is_a_folder.")
        })
        .collect();
    assert!(left.is_empty(), "temporary trace left behind: {left:?}");
}

/// A kernel whose stores end long after its warps exit (8,479 cycles; no event waits for them).
const STORES: &str = r#"Scenario(
    name: "stores",
    gpu: "h100-sxm",
    kernel: Kernel(
        regs_per_thread: 128,
        tensors: [Tensor(name: "T", dtype: F32, shape: [1048576])],
        roles: [
            Role(name: "w", regs: 128, program: [
                Loop(var: "i", count: 64, body: [StGlobal(tensor: "T", addr: "(i * 32 + lane) * 128")]),
            ]),
        ],
    ),
)
"#;

#[test]
fn the_cycle_limit_covers_work_booked_past_the_last_event() {
    let path = temp_scenario("stores.ron", STORES);
    let p = path.to_str().unwrap();
    let ok = sim(&["run", p, "--no-trace", "--max-cycles", "8473"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("simulated   8,473 cycles"));
    // It used to exit 0 reporting 3,931 cycles under a limit of 100.
    for limit in ["100", "8472"] {
        fails_with(
            &["run", p, "--no-trace", "--max-cycles", limit],
            &[&format!("the run passed the cycle limit ({limit} cycles")],
        );
    }
}

#[test]
fn a_check_that_stops_early_is_inconclusive_not_valid() {
    let out = sim(&[
        "check",
        "tests/fixtures/deadlock_empty.ron",
        "--check-cycles",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("0 is not in 1..=274877906944"));
    for args in [
        &[
            "check",
            "tests/fixtures/deadlock_empty.ron",
            "--check-cycles",
            "1",
        ][..],
        &["check", "scenarios/gemm_ws.ron", "--check-cycles", "1000"],
        &["check", "scenarios/gemm_ws.ron", "--max-cycles", "1000"],
    ] {
        let out = sim(args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stdout}");
        assert!(
            stdout.contains(": inconclusive; no hazard and no deadlock in the first "),
            "{stdout}"
        );
        assert!(!stdout.contains("valid"), "{stdout}");
    }
}

#[test]
fn concurrent_runs_on_one_trace_path_leave_one_whole_trace() {
    // Each run writes its own temporary file and renames it onto the path when complete;
    // they used to write into one file at once.
    let trace = common::scratch("concurrent.trace.json");
    let t = trace.to_str().unwrap();
    let start = |name: &str| {
        command(&["run", &format!("scenarios/{name}.ron"), "--trace", t])
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    };
    // The second, short run starts while the first (most of a second) is writing.
    let long = start("gemm_ampere");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let short = start("fa3_pingpong");
    for mut run in [long, short] {
        assert!(run.wait().unwrap().success());
    }
    let text = std::fs::read_to_string(&trace).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).expect("one whole JSON trace");
    let scenario = v["otherData"]["scenario"].as_str().unwrap();
    assert!(
        ["fa3_pingpong", "gemm_ampere"].contains(&scenario),
        "{scenario}"
    );
    let left = std::fs::read_dir(trace.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("concurrent.trace.json.")
        })
        .count();
    assert_eq!(left, 0, "temporary traces left behind");
}

/// `tests/fixtures/docs/livelock.ron`: CTA 0 polls a counter that never reaches its target.
const LIVELOCK: &str = "tests/fixtures/docs/livelock.ron";

#[test]
fn a_spin_without_progress_is_a_livelock_naming_its_warps() {
    let err = fails_with(
        &["run", LIVELOCK, "--no-trace"],
        &[
            "livelock at cycle 10000796: no progress for 10000240 cycles (since cycle 556",
            "while 4 warps keep running:",
            "CTA 0 warp w0.w3 at role `w`: program[0] if.then[0] loop(i).body[1] if: in state long_scoreboard",
            "atomic counter done = 263",
            "--livelock-cycles",
        ],
    );
    assert_eq!(err.matches("CTA 0 warp").count(), 4, "{err}");
    // The window is the option's, and `sim check` diagnoses it too instead of passing.
    fails_with(
        &["run", LIVELOCK, "--no-trace", "--livelock-cycles", "1000"],
        &["livelock at cycle 1594: no progress for 1038 cycles (since cycle 556"],
    );
    fails_with(&["check", LIVELOCK], &["livelock at cycle 10000796"]);
}

#[test]
fn the_shipped_scenarios_never_trip_the_livelock_detector() {
    // Their longest stretch without progress is far below the default window; a window of
    // 10^5 cycles still lets each finish.
    for name in [
        "gemm_ws",
        "fa3_pingpong",
        "wave_quantization",
        "persistent_gemm",
    ] {
        let out = sim(&[
            "run",
            &format!("scenarios/{name}.ron"),
            "--no-trace",
            "--livelock-cycles",
            "100000",
        ]);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_wall_clock_limit_stops_a_run_and_leaves_check_inconclusive() {
    let endless = [
        "--livelock-cycles",
        "274877906944",
        "--max-cycles",
        "274877906944",
    ];
    let mut args = vec!["run", LIVELOCK, "--no-trace", "--max-wall", "0.2"];
    args.extend(endless);
    fails_with(
        &args,
        &[
            "the run passed the wall-clock limit (0.2 s) at cycle ",
            "with 263 of 264 CTAs done (raise it with --max-wall)",
        ],
    );
    let mut args = vec![
        "check",
        LIVELOCK,
        "--max-wall",
        "0.2",
        "--check-cycles",
        endless[1],
    ];
    args.extend(endless);
    let out = sim(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(
        text.contains("inconclusive; no hazard and no deadlock before the wall-clock limit"),
        "{text}"
    );
    let out = sim(&["run", LIVELOCK, "--max-wall", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("`0` is not a positive number of seconds")
    );
}

#[test]
fn a_trace_past_its_size_limit_is_cut_with_a_note_and_stays_readable() {
    let trace = common::scratch("capped.trace.json");
    let t = trace.to_str().unwrap();
    let out = common::sim_ok(&[
        "run",
        "scenarios/gemm_ws.ron",
        "--trace-level",
        "instructions",
        "--trace-max-mb",
        "1",
        "--trace",
        t,
    ]);
    let summary = String::from_utf8_lossy(&out.stdout);
    // The report is the whole run's.
    assert!(summary.contains("simulated   66,804 cycles"), "{summary}");
    assert!(
        summary.contains("the trace stops at cycle ")
            && summary.contains(": it reached its size limit of 1 MiB (--trace-max-mb to raise it); the report above covers the whole run"),
        "{summary}"
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).expect("a whole JSON trace");
    let cut = &v["otherData"]["truncated"];
    assert_eq!(cut["max_bytes"], 1 << 20);
    let at = cut["at_cycle"].as_u64().unwrap();
    assert!(at > 0 && at < 66_821, "{at}");
    let events = v["traceEvents"].as_array().unwrap().len();
    assert!(
        text.len() < (1 << 20) + 200_000 && events > 1000,
        "{} bytes, {events} events",
        text.len()
    );
    common::sim_ok(&["stalls", t]);
}

#[test]
fn a_huge_grid_keeps_role_totals_and_the_first_warps_only() {
    // 20,000 one-warpgroup CTAs (80,000 warps) whose producer exits with its TMA load still in
    // flight: the CTA's state must outlive its warps until the load lands.
    let text = r#"Scenario(
    name: "grid",
    gpu: "h100-sxm",
    kernel: Kernel(
        grid: 20000,
        regs_per_thread: 32,
        tensors: [Tensor(name: "A", dtype: BF16, shape: [64, 64])],
        smem: [Buffer(name: "s", dtype: BF16, shape: [64, 64])],
        mbarriers: [MBarrier(name: "b", arrivals: 1)],
        roles: [
            Role(name: "w", regs: 32, program: [
                If(cond: "warp == 0", then: [
                    ArriveExpectTx(bar: "b[0]", bytes: 8192),
                    TmaLoad(tensor: "A", coords: [0, 0], dst: "s[0]", bar: "b[0]"),
                ]),
                Fma(8),
            ]),
        ],
    ),
)
"#;
    let (k, p) = sim::run::load_source("grid.ron", text, &Default::default()).unwrap();
    let stats = sim::engine::Engine::new(&k, &p, Default::default())
        .run()
        .unwrap();
    assert_eq!(stats.warps.len(), sim::engine::stats::MAX_WARP_RESULTS);
    assert_eq!(stats.warps_omitted, 80_000 - 16_384);
    assert_eq!(stats.roles[0].warps, 80_000);
    assert_eq!(stats.roles[0].issued, stats.instructions);
    let lifetimes: u64 = stats.warps.iter().map(|w| w.lifetime).sum();
    assert!(lifetimes < stats.roles[0].lifetime);
    assert_eq!(stats.warps[16_383].name, "w0.w3");
    assert_eq!(stats.warps[16_383].cta, 4095);
}

/// The files of `dir`, sorted.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A scratch folder `name` holding `mini.ron` (an FMA loop): the folder and the file.
fn folder_with_mini(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = common::scratch(name);
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("mini.ron");
    std::fs::write(&scenario, mini("\"j + 1\"", "")).unwrap();
    (dir, scenario)
}

/// `sim run -o FILE` writes what standard output would have held, and refuses to write over
/// the scenario, the baseline or the trace, before the run, leaving them as they were.
#[test]
fn run_output_writes_the_file_and_never_an_input() {
    let (dir, scenario) = folder_with_mini("output");
    let s = scenario.to_str().unwrap();
    let csv = dir.join("mini.csv");
    let c = csv.to_str().unwrap();
    let out = sim(&["run", s, "--no-trace", "--csv", "-o", c]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty());
    assert_eq!(String::from_utf8_lossy(&out.stderr), format!("wrote {c}\n"));
    let stdout = sim(&["run", s, "--no-trace", "--csv"]).stdout;
    assert_eq!(std::fs::read(&csv).unwrap(), stdout);
    // The summary and --json go there too; a second run replaces the file.
    let json = dir.join("mini.json");
    let j = json.to_str().unwrap();
    for flag in ["--json", "--json"] {
        assert!(sim(&["run", s, "--no-trace", flag, "--output", j])
            .status
            .success());
    }
    assert_eq!(
        std::fs::read(&json).unwrap(),
        sim(&["run", s, "--no-trace", "--json"]).stdout
    );
    let before = listing(&dir);
    let other = dir.join(".").join("mini.ron");
    for (args, what) in [
        (vec!["-o", s], "the scenario file itself"),
        (
            vec!["-o", other.to_str().unwrap()],
            "the scenario file itself",
        ),
        (vec!["--baseline", j, "-o", j], "the baseline being read"),
        (vec!["--trace", c, "-o", c], "the trace this run writes"),
    ] {
        let target = args[args.len() - 1];
        let msg = format!("error: {target}: -o names {what}, which the output would replace");
        let err = fails_with(&[&["run", s][..], &args[..]].concat(), &[&msg]);
        assert!(!err.contains("wrote"), "{err}");
    }
    assert_eq!(
        listing(&dir),
        before,
        "nothing written, nothing left behind"
    );
    assert_eq!(
        std::fs::read_to_string(&scenario).unwrap(),
        mini("\"j + 1\"", "")
    );
    assert_eq!(std::fs::read(&csv).unwrap(), stdout);
}

/// `-o` over the trace a run wrote under its default name is refused once that name is known,
/// after the trace is written and before the output is.
#[test]
fn run_output_never_replaces_the_default_trace() {
    let trace = "traces/wgmma_stream.trace.json";
    let args = ["run", "scenarios/wgmma_stream.ron", "-o", trace];
    fails_with(
        &args,
        &[&format!(
            "error: {trace}: -o names the trace this run wrote, which the output would replace"
        )],
    );
    let text = std::fs::read_to_string(common::root().join(trace)).unwrap();
    assert!(
        text.starts_with("{\"traceEvents\":["),
        "the trace is still the trace"
    );
}

/// A run that fails, or an output that cannot be written, leaves no file and no temporary.
#[test]
fn run_output_leaves_nothing_behind_on_error() {
    let (dir, scenario) = folder_with_mini("output_errors");
    let s = scenario.to_str().unwrap();
    let deadlock = common::fixture("deadlock_empty");
    let out = dir.join("out.json");
    let o = out.to_str().unwrap();
    fails_with(
        &[
            "run",
            deadlock.to_str().unwrap(),
            "--no-trace",
            "--json",
            "-o",
            o,
        ],
        &["deadlock"],
    );
    // A folder in the way, and a folder that does not exist.
    let folder = dir.join("folder");
    std::fs::create_dir_all(&folder).unwrap();
    let f = folder.to_str().unwrap();
    fails_with(
        &["run", s, "--no-trace", "-o", f],
        &[&format!("error: {f}: ")],
    );
    let missing = dir.join("missing").join("out.csv");
    let m = missing.to_str().unwrap();
    fails_with(
        &["run", s, "--no-trace", "--csv", "-o", m],
        &[&format!("error: {m}: No such file or directory")],
    );
    assert_eq!(listing(&dir), ["folder", "mini.ron"]);
    assert!(listing(&folder).is_empty());
}

/// `sim report -o FILE` writes the page whole through a temporary file, as `sim run -o` does:
/// a second report replaces it, and one that fails (a folder in the way, a missing trace, the
/// trace itself named another way) leaves the folder as it was, with no temporary behind.
#[test]
fn report_output_is_written_whole_and_never_over_its_trace() {
    let (dir, scenario) = folder_with_mini("report_output");
    let trace = dir.join("mini.trace.json");
    let t = trace.to_str().unwrap();
    assert!(sim(&["run", scenario.to_str().unwrap(), "--trace", t])
        .status
        .success());
    let page = dir.join("page.html");
    let p = page.to_str().unwrap();
    for _ in 0..2 {
        let out = sim(&["report", t, "-o", p]);
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), format!("wrote {p}\n"));
    }
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.trim_end().ends_with("</html>"), "{:.200}", html);
    let before = listing(&dir);
    let trace_bytes = std::fs::read(&trace).unwrap();
    let folder = dir.join("folder");
    std::fs::create_dir_all(&folder).unwrap();
    let f = folder.to_str().unwrap();
    fails_with(&["report", t, "-o", f], &[&format!("error: {f}: ")]);
    let missing = dir.join("missing.trace.json");
    let elsewhere = dir.join("elsewhere.html");
    fails_with(
        &[
            "report",
            missing.to_str().unwrap(),
            "-o",
            elsewhere.to_str().unwrap(),
        ],
        &["missing.trace.json"],
    );
    let other = dir.join(".").join("mini.trace.json");
    fails_with(
        &["report", t, "-o", other.to_str().unwrap()],
        &["-o names the trace being read, which the page would replace"],
    );
    std::fs::remove_dir(&folder).unwrap();
    assert_eq!(
        listing(&dir),
        before,
        "nothing written, nothing left behind"
    );
    assert_eq!(std::fs::read(&trace).unwrap(), trace_bytes);
    assert_eq!(std::fs::read_to_string(&page).unwrap(), html);
}

/// Run-time errors quote role names in every warp's name and instruction path; a deadlock
/// lists every live warp. A role named with 100,000 characters is clipped in each, so that the
/// message stays a few kilobytes (it was 1.6 MB for the deadlock's 12 warps).
#[test]
fn long_role_names_are_clipped_in_run_time_errors() {
    let long = "r".repeat(100_000);
    let deadlock = std::fs::read_to_string(common::fixture("deadlock_empty"))
        .unwrap()
        .replace("\"consumer\"", &format!("\"{long}\""));
    let runtime = mini("\"10 / (j - 2)\"", "").replace("name: \"w\"", &format!("name: \"{long}\""));
    for (name, text, what) in [
        ("long_deadlock.ron", deadlock, "deadlock at cycle"),
        (
            "long_runtime.ron",
            runtime,
            "expression cannot be evaluated: division by zero",
        ),
    ] {
        let err = check_text(
            name,
            &text,
            &[what, "rrrr … (", " characters left out) … rrrr"],
        );
        assert!(err.len() < 20_000, "{name}: {} bytes on stderr", err.len());
        // A line quotes at most two clipped strings (a warp's name and its message).
        let longest = err.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(longest < 2300, "{name}: a line of {longest} characters");
    }
}
