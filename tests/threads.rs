//! One run on any number of threads (`--threads`): the engine's shards work through the same
//! windows whatever the threads, so the report and the trace are the same bytes.

use crate::common;

use common::{root, scratch, sim_ok};

/// `--set`s that keep each scenario's run short (its size parameters, smaller); a scenario not
/// listed runs as it is. Every file of `scenarios/` runs.
fn shrink(name: &str) -> &'static [&'static str] {
    match name {
        "fa2_forward" => &["--set", "heads=1", "--set", "seqlen=1024"],
        "fa3_pingpong" => &["--set", "heads=1", "--set", "seqlen=2112"],
        // Two waves of CTAs: slots freed and taken again cross between the shards.
        "gemm" | "gemm_pingpong" => &["--set", "m=4096", "--set", "n=2048", "--set", "k=256"],
        "gemm_pipelined" | "persistent_gemm" => {
            &["--set", "m=2048", "--set", "n=2048", "--set", "k=512"]
        }
        "hbm_stream" => &["--set", "mib=64"],
        "naive_vs_tiled_gemm" => &["--set", "n=128"],
        "occupancy" => &["--set", "chain=64"],
        "split_kv_decode" => &["--set", "seqlen_k=4096"],
        "wave_quantization" => &["--set", "iters=16"],
        _ => &[],
    }
}

/// `sim run FILE --no-trace --json` on 1, 2 and 3 threads, for every scenario.
#[test]
fn every_scenario_reports_the_same_on_one_two_and_three_threads() {
    let mut files: Vec<_> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{files:?}");
    for file in files {
        let name = file.file_stem().unwrap().to_str().unwrap().to_string();
        let path = file.to_str().unwrap();
        let report = |threads: &str| {
            let mut args = vec!["run", path, "--no-trace", "--json", "--threads", threads];
            args.extend(shrink(&name));
            String::from_utf8(sim_ok(&args).stdout).unwrap()
        };
        let one = report("1");
        assert!(one.contains("\"cycles\""), "{name}: {one}");
        for threads in ["2", "3"] {
            assert!(
                report(threads) == one,
                "{name}: --threads {threads} differs from 1"
            );
        }
    }
}

/// The trace, too: a whole-GPU GEMM of two waves and the FA3 kernel, traced on 1, 2 and 3
/// threads, write the same bytes.
#[test]
fn traces_are_the_same_on_any_thread_count() {
    for (name, sets) in [
        ("gemm", shrink("gemm")),
        ("fa3_pingpong", shrink("fa3_pingpong")),
    ] {
        let file = root().join(format!("scenarios/{name}.ron"));
        let trace = |threads: &str| {
            let out = scratch(&format!("threads_{name}_{threads}.json"));
            let mut args = vec![
                "run",
                file.to_str().unwrap(),
                "--trace",
                out.to_str().unwrap(),
                "--threads",
                threads,
            ];
            args.extend(sets);
            sim_ok(&args);
            std::fs::read(&out).unwrap()
        };
        let one = trace("1");
        assert!(one.len() > 1000, "{name}");
        for threads in ["2", "3"] {
            assert!(
                trace(threads) == one,
                "{name}: the trace on {threads} threads differs"
            );
        }
    }
}
