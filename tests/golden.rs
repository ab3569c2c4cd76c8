//! The golden test: the regression guard of every simulated figure.
//!
//! Each case runs the `sim` binary from the repository root and records, in a snapshot under
//! `tests/golden/`, its exit code, its standard output (the `--json` report, a table, a
//! summary), its standard error (diagnostics) and the SHA-256 of every file it writes (traces,
//! the HTML report). Any difference fails. A change that alters a model on purpose updates the
//! snapshots in the same commit (`INSTA_UPDATE=always cargo test --test all golden::`, then
//! review `git diff tests/golden`) and says in its message which figures moved and why.

use crate::common;

use common::{command, root};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// Runs `sim ARGS` and renders what it did; `outputs` are the files it is expected to write,
/// relative to the repository root (removed first, so a stale file cannot pass).
fn record(args: &[&str], outputs: &[&str]) -> String {
    let root = root();
    for o in outputs {
        let _ = std::fs::remove_file(root.join(o));
    }
    let out = command(args)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .output()
        .expect("sim runs");
    let mut s = format!("$ sim {}\nexit: {:?}\n", args.join(" "), out.status.code());
    for o in outputs {
        match std::fs::read(root.join(o)) {
            Ok(bytes) => {
                let hash = Sha256::digest(&bytes);
                let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
                writeln!(s, "wrote {o}: {} bytes, sha256 {hex}", bytes.len()).unwrap();
            }
            Err(e) => writeln!(s, "did not write {o}: {}", e.kind()).unwrap(),
        }
    }
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    write!(
        s,
        "--- stdout\n{}\n--- stderr\n{}",
        text(&out.stdout),
        text(&out.stderr)
    )
    .unwrap();
    s
}

fn check(name: &str, args: &[&str], outputs: &[&str]) {
    let recorded = record(args, outputs);
    insta::with_settings!({
        snapshot_path => root().join("tests/golden"),
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, recorded);
    });
}

/// `sim run FILE --json` with a trace, plus extra options.
fn run(name: &str, file: &str, extra: &[&str]) {
    let trace = format!("traces/golden/{name}.trace.json");
    let mut args = vec!["run", file, "--json", "--trace", &trace];
    args.extend_from_slice(extra);
    check(name, &args, &[&trace]);
}

macro_rules! runs {
    ($($name:ident: $file:literal $(, $extra:literal)*;)*) => {
        $(#[test]
        fn $name() {
            run(stringify!($name), $file, &[$($extra),*]);
        })*
    };
}

runs! {
    // Every scenario, on its own preset and defaults.
    fa3_pingpong: "scenarios/fa3_pingpong.ron";
    gemm: "scenarios/gemm.ron";
    gemm_ampere: "scenarios/gemm_ampere.ron";
    gemm_pingpong: "scenarios/gemm_pingpong.ron";
    gemm_pipelined: "scenarios/gemm_pipelined.ron";
    gemm_ws: "scenarios/gemm_ws.ron";
    hbm_stream: "scenarios/hbm_stream.ron";
    moe_grouped_gemm: "scenarios/moe_grouped_gemm.ron";
    persistent_gemm: "scenarios/persistent_gemm.ron";
    wave_quantization: "scenarios/wave_quantization.ron";
    wgmma_stream: "scenarios/wgmma_stream.ron";
    calibration_barriers: "scenarios/calibration/barriers.ron";
    calibration_gmem: "scenarios/calibration/gmem.ron";
    calibration_pipes: "scenarios/calibration/pipes.ron";
    calibration_smem: "scenarios/calibration/smem.ron";
    calibration_smem_port: "scenarios/calibration/smem_port.ron";
    calibration_tma: "scenarios/calibration/tma.ron";
    calibration_wgmma: "scenarios/calibration/wgmma.ron";
    // Every fixture: the working ones, hazards and deadlocks (diagnostics and partial traces).
    fixture_deadlock_empty: "tests/fixtures/deadlock_empty.ron";
    fixture_deadlock_named_barrier: "tests/fixtures/deadlock_named_barrier.ron";
    fixture_epilogue: "tests/fixtures/epilogue.ron";
    fixture_hazard_acc: "tests/fixtures/hazard_acc.ron";
    fixture_hazard_named_barrier: "tests/fixtures/hazard_named_barrier.ron";
    fixture_hazard_overarrival: "tests/fixtures/hazard_overarrival.ron";
    fixture_hazard_raw: "tests/fixtures/hazard_raw.ron";
    fixture_hazard_setmaxnreg: "tests/fixtures/hazard_setmaxnreg.ron";
    fixture_hazard_tx: "tests/fixtures/hazard_tx.ron";
    fixture_hazard_war: "tests/fixtures/hazard_war.ron";
    fixture_memory_patterns: "tests/fixtures/memory_patterns.ron";
    error_malformed: "tests/fixtures/errors/malformed.ron";
    error_unknown_param: "tests/fixtures/errors/unknown_param.ron";
    error_regs300: "tests/fixtures/errors/regs300.ron";
    error_deadlock_ring: "tests/fixtures/errors/deadlock_ring.ron";
    error_bad_override: "tests/fixtures/errors/bad_override.ron";
    error_unknown_gpu: "tests/fixtures/errors/unknown_gpu.ron";
    // Parameters, presets, seeds and trace levels that take other paths through the models
    // (FA3's variants as one CTA: the pipeline, not the grid).
    fa3_no_pingpong: "scenarios/fa3_pingpong.ron", "--set", "pingpong=false", "--set", "heads=1", "--set", "seqlen_q=128", "--set", "seqlen=4224";
    fa3_no_intra_overlap: "scenarios/fa3_pingpong.ron", "--set", "intra_overlap=false", "--set", "heads=1", "--set", "seqlen_q=128", "--set", "seqlen=4224";
    fa3_instructions: "scenarios/fa3_pingpong.ron", "--trace-level", "instructions", "--set", "heads=1", "--set", "seqlen_q=128", "--set", "seqlen=4224";
    fa3_h200: "scenarios/fa3_pingpong.ron", "--gpu", "h200-sxm", "--set", "heads=1", "--set", "seqlen_q=128", "--set", "seqlen=4224";
    gemm_ws_one_stage: "scenarios/gemm_ws.ron", "--set", "stages=1";
    gemm_ws_two_stages_seed: "scenarios/gemm_ws.ron", "--set", "stages=2", "--seed", "7";
    gemm_h200_window: "scenarios/gemm.ron", "--gpu", "h200-sxm", "--trace-window", "1000..50000", "--trace-sms", "0..3";
    hbm_stream_seed: "scenarios/hbm_stream.ron", "--seed", "12345";
    gemm_ampere_a100: "scenarios/gemm_ampere.ron", "--gpu", "a100-sxm", "--trace-level", "summary";
    persistent_gemm_no_check: "scenarios/persistent_gemm.ron", "--no-check";
    // The naive GEMM's loads through the L1, and its tiled form (16 CTAs: the default n = 1024
    // takes minutes).
    naive_gemm_n128: "scenarios/naive_vs_tiled_gemm.ron", "--set", "n=128";
    tiled_gemm_n128: "scenarios/naive_vs_tiled_gemm.ron", "--set", "n=128", "--set", "tiled=1";
}

macro_rules! commands {
    ($($name:ident: [$($arg:literal),*] writes [$($out:literal),*];)*) => {
        $(#[test]
        fn $name() {
            check(stringify!($name), &[$($arg),*], &[$($out),*]);
        })*
    };
}

commands! {
    summary_gemm_ws: ["run", "scenarios/gemm_ws.ron", "--trace", "traces/golden/summary_gemm_ws.trace.json"]
        writes ["traces/golden/summary_gemm_ws.trace.json"];
    summary_gemm: ["run", "scenarios/gemm.ron", "--no-trace"] writes [];
    check_war: ["check", "tests/fixtures/hazard_war.ron"] writes [];
    check_acc: ["check", "tests/fixtures/hazard_acc.ron"] writes [];
    check_gemm_ws: ["check", "scenarios/gemm_ws.ron"] writes [];
    check_bad_set: ["check", "scenarios/gemm_ws.ron", "--set", "bn=100"] writes [];
    run_unknown_set: ["run", "scenarios/gemm_ws.ron", "--set", "stage=2", "--no-trace"] writes [];
    run_bad_clock: ["run", "scenarios/gemm_ws.ron", "--clock-mhz", "0", "--no-trace"] writes [];
    run_missing_file: ["run", "scenarios/nope.ron"] writes [];
    presets: ["presets"] writes [];
    // The JSON's shape on a few groups (tests/validate.rs pins every row's numbers, in
    // validate_table).
    validate_h200: ["validate", "--gpu", "h200-sxm", "--json", "--group", "smem_banks", "--group", "l1_lines", "--group", "coalescing"] writes [];
    analyze_gemm: ["analyze", "gemm", "4096", "4096", "4096"] writes [];
    analyze_gemm_ampere: ["analyze", "gemm", "--gpu", "rtx3070", "4096", "4096", "4096", "--tile", "128x128x64", "--warps", "4", "--stages", "3"] writes [];
    analyze_gemm_tune: ["analyze", "gemm", "--tune", "4096", "4096", "4096"] writes [];
    analyze_attention: ["analyze", "attention", "--hd", "128", "--bn", "176"] writes [];
    analyze_decode: ["analyze", "decode", "--batch", "4", "--seqlen", "65536"] writes [];
    // A sequence of kernels (split, combine): each kernel's report and the total.
    split_kv_decode: ["run", "scenarios/split_kv_decode.ron", "--json"] writes [];
    // A kernel launched once per expert: each launch's summary and the sequence's line.
    moe_per_expert: ["run", "scenarios/moe_grouped_gemm.ron", "--set", "variant=1"] writes [];
}

/// `sim stalls` and `sim report` over a trace this test writes first (FA3 as one CTA).
#[test]
fn trace_readers() {
    let trace = "traces/golden/readers.trace.json";
    let _ = std::fs::create_dir_all(root().join("traces/golden"));
    let mut args = vec!["run", "scenarios/fa3_pingpong.ron"];
    args.extend_from_slice(common::FA3_ONE_CTA);
    args.extend_from_slice(&["--trace", trace, "--json"]);
    let made = record(&args, &[trace]);
    assert!(made.contains("exit: Some(0)"), "{made}");
    check("stalls", &["stalls", trace], &[]);
    check(
        "stalls_per_warp_csv",
        &["stalls", trace, "--per-warp", "--csv"],
        &[],
    );
    check("stalls_json", &["stalls", trace, "--json"], &[]);
    let html = "traces/golden/readers.html";
    check("report_html", &["report", trace, "-o", html], &[html]);
}
