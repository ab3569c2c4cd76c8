//! `sim analyze gemm|attention|decode` end to end: the seed models' tables (`docs/analytic.md`)
//! as the binary prints them (the models themselves: `analytic_models.rs`).

use crate::common;

use common::{scratch, sim, stdout_of};

/// The whitespace-separated fields of the first line starting with `prefix`.
fn fields(text: &str, prefix: &str) -> Vec<String> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with `{prefix}` in\n{text}"));
    line.split_whitespace().map(String::from).collect()
}

#[test]
fn analyze_gemm_prints_the_k1_tables() {
    let out = stdout_of(&[
        "analyze",
        "gemm",
        "--gpu",
        "rtx3070",
        "4096",
        "4096",
        "4096",
        "--tile",
        "128x128x64",
        "--warps",
        "4",
        "--stages",
        "3",
    ]);
    assert_eq!(fields(&out, "FLOPs  ")[1], "137,438,953,472");
    assert_eq!(fields(&out, "minimum bytes ")[2], "100,663,296");
    assert_eq!(
        fields(&out, "tiled bytes, no L2")[4..8],
        ["2,181,038,080", "A", "read", "32x,"]
    );
    assert_eq!(fields(&out, "tiled / minimum")[3], "21.7x");
    assert_eq!(fields(&out, "intensity, minimum")[3], "1365");
    assert_eq!(fields(&out, "intensity, tiled")[3], "63");
    assert_eq!(fields(&out, "machine balance")[2], "89");
    assert_eq!(fields(&out, "shared memory")[2], "98,304");
    assert_eq!(fields(&out, "registers per thread")[3], "168");
    for (limit, v) in [
        ("threads", "12"),
        ("regs", "3"),
        ("smem", "1"),
        ("blocks", "16"),
    ] {
        assert_eq!(fields(&out, limit), [limit, v]);
    }
    assert!(out.contains("-> 1 CTA/SM, limiter smem"), "{out}");
    assert_eq!(
        fields(&out, "1 "),
        ["1", "1024", "46", "23", "26%", "96.8%"]
    );
    assert_eq!(
        fields(&out, "2 (if it fit)")[4..],
        ["1024", "92", "12", "13%", "92.8%"]
    );
    assert_eq!(
        fields(&out, "minimum bytes (all")[6..],
        ["100,663,296", "3.44", "ms", "0.22", "ms", "compute"]
    );
    assert_eq!(
        fields(&out, "tiled, no L2  ")[3..],
        ["2,181,038,080", "3.44", "ms", "4.87", "ms", "memory"]
    );
    assert!(out.contains("compute-bound once L2 serves 30% of the A/B reads"));
}

#[test]
fn analyze_gemm_l2_hit_row_is_the_corrected_roofline() {
    let out = stdout_of(&[
        "analyze", "gemm", "--gpu", "rtx3070", "4096", "4096", "4096", "--l2-hit", "0.9",
    ]);
    assert_eq!(
        fields(&out, "tiled, L2 hit 90%")[4..],
        ["248,302,797", "3.44", "ms", "0.55", "ms", "compute"]
    );
}

#[test]
fn analyze_gemm_tune_prints_prune_ranking_and_pick() {
    let out = stdout_of(&[
        "analyze", "gemm", "--gpu", "rtx3070", "4096", "4096", "4096", "--tune", "--top-k", "5",
    ]);
    assert!(out.contains("192 configs"), "{out}");
    assert!(out.contains("early_prune: 146 kept, 46 pruned"));
    assert_eq!(fields(&out, "shared memory > 101,376 B per CTA")[7], "34");
    assert_eq!(fields(&out, "registers > 255 per thread")[5], "12");
    assert!(out
        .contains("perf_model: top 8 of 146 (8 tie at 3.709 ms, top_k 5 raised to the tie group)"));
    assert_eq!(
        fields(&out, "8  256x128x64 8w 2s"),
        [
            "8",
            "256x128x64",
            "8w",
            "2s",
            "1",
            "12",
            "3.704",
            "ms",
            "3.670",
            "ms",
            "3.709",
            "ms",
            "tie"
        ]
    );
    assert_eq!(
        fields(&out, "256x128x32 8w 2s   3.877"),
        [
            "256x128x32",
            "8w",
            "2s",
            "3.877",
            "3.765",
            "3.980",
            "49,152",
            "overlaps,",
            "picked"
        ]
    );
    assert!(out.contains("pick: 256x128x32 8w 2s, 3.1% slower than the fastest"));
}

#[test]
fn analyze_gemm_tune_reads_a_medians_file() {
    let path = scratch("medians.txt");
    std::fs::write(
        &path,
        "# ms\n128x128x32 4 3 1.000 0.990 1.010\n64x64x32 4 2 1.200 1.150 1.250\n",
    )
    .unwrap();
    let out = stdout_of(&[
        "analyze",
        "gemm",
        "--gpu",
        "h100-sxm",
        "4096",
        "4096",
        "4096",
        "--tune",
        "--medians",
        path.to_str().unwrap(),
    ]);
    assert!(out.contains("pick: 128x128x32 4w 3s, the fastest"), "{out}");
}

#[test]
fn analyze_attention_prints_the_hopper_figures() {
    let out = stdout_of(&[
        "analyze",
        "attention",
        "--gpu",
        "h100-sxm",
        "--hd",
        "128",
        "--bm",
        "64",
        "--bn",
        "256",
    ]);
    assert!(
        out.contains("SS keeps the tensor cores fed for N >= 64"),
        "{out}"
    );
    for (n, ratio) in [("64", "1.00"), ("128", "1.33"), ("256", "1.60")] {
        assert_eq!(fields(&out, &format!("{n} "))[4], ratio);
    }
    assert_eq!(fields(&out, "total")[1], "192");
    assert_eq!(fields(&out, "L2 hit needed")[3], "78%");
    assert_eq!(fields(&out, "MUFU / tensor")[3], "50%");
    let h200 = stdout_of(&["analyze", "attention", "--gpu", "h200-sxm"]);
    assert_eq!(fields(&h200, "L2 hit needed")[3], "69%");
}

#[test]
fn analyze_attention_takes_the_scenarios_problem() {
    // fa3_pingpong.ron's L2 question: 132 heads x 8 query blocks of 64 rows over 2048 keys.
    let args = |hit: &'static str| {
        stdout_of(&[
            "analyze",
            "attention",
            "--bm",
            "64",
            "--bn",
            "176",
            "--heads",
            "132",
            "--seqlen-q",
            "512",
            "--seqlen-k",
            "2048",
            "--l2-hit",
            hit,
        ])
    };
    let shared = args("0.848");
    assert!(
        shared.contains("Problem: batch 1 x heads 132, seqlen_q 512, seqlen_k 2048, hd 128"),
        "{shared}"
    );
    assert_eq!(fields(&shared, "tiles of 64 rows")[4], "1,056");
    assert_eq!(fields(&shared, "K/V hit rate needed")[4], "81%");
    assert!(shared.contains(": tensor-bound"), "{shared}");
    assert!(args("0.0").contains(": HBM-bound"));
    // Causal: the lower triangle, 2048 · 2049 / 2 query-key pairs a head.
    let causal = stdout_of(&[
        "analyze",
        "attention",
        "--bm",
        "128",
        "--bn",
        "128",
        "--heads",
        "16",
        "--seqlen",
        "2048",
        "--causal",
    ]);
    assert!(causal.contains("hd 128, causal"), "{causal}");
    let flops = 16 * 4 * 128 * (2048 * 2049 / 2);
    assert_eq!(
        fields(&causal, "FLOPs")[1],
        sim::analytic::fmt::grouped(flops)
    );
}

#[test]
fn analyze_decode_prints_the_split_table() {
    let out = stdout_of(&["analyze", "decode", "--gpu", "h200-sxm", "--splits", "1,8"]);
    assert_eq!(fields(&out, "K/V ")[1], "134,217,728");
    assert_eq!(
        fields(&out, "1 "),
        ["1", "8", "8", "1.07", "TB/s", "126.7", "µs", "-", "126.7", "µs"]
    );
    assert!(
        out.contains("fastest: 8 splits, 29.6 µs (CUDA graph: a gap of 0.8 µs per kernel)"),
        "{out}"
    );
    // The scenario's names for the same problem, and eager launches' 5 µs a kernel.
    let same = stdout_of(&[
        "analyze",
        "decode",
        "--gpu",
        "h200-sxm",
        "--splits",
        "1,8",
        "--hq",
        "32",
        "--hkv",
        "8",
        "--seqlen-k",
        "32768",
    ]);
    assert_eq!(same, out);
    let eager = stdout_of(&[
        "analyze", "decode", "--gpu", "h200-sxm", "--splits", "1,8", "--launch", "eager",
    ]);
    assert!(
        eager.contains("fastest: 8 splits, 38.0 µs (eager: a launch of 5.0 µs per kernel)"),
        "{eager}"
    );
}

#[test]
fn analyze_errors_exit_1_with_a_message() {
    for (args, msg) in [
        (
            vec!["analyze", "gemm", "--gpu", "b200", "64", "64", "64"],
            "error: unknown GPU `b200`; known: h100-sxm, h200-sxm, a100-sxm, rtx3070\n",
        ),
        (
            vec!["analyze", "gemm", "64", "64", "64", "--tile", "128x128"],
            "error: tile `128x128` is not BMxBNxBK (e.g. 128x128x64)\n",
        ),
        (
            vec!["analyze", "gemm", "0", "64", "64"],
            "error: M = 0 must be in 1..=1048576\n",
        ),
        (
            vec!["analyze", "decode", "--q-heads", "12"],
            "error: q-heads = 12 must be a multiple of kv-heads = 8\n",
        ),
    ] {
        let out = sim(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), msg, "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// `sim analyze … --gpu NAME` takes every name `sim presets` lists, and names that GPU in its
/// tables; attention, a Hopper model, refuses the presets without wgmma by name.
#[test]
fn analyze_takes_every_preset() {
    let presets = stdout_of(&["presets"]);
    let names: Vec<&str> = presets
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.len() >= 4, "{presets}");
    for name in names {
        for args in [
            vec!["analyze", "gemm", "--gpu", name, "4096", "4096", "4096"],
            vec![
                "analyze", "gemm", "--gpu", name, "--tune", "4096", "4096", "4096",
            ],
            vec!["analyze", "decode", "--gpu", name],
        ] {
            let out = stdout_of(&args);
            assert!(out.contains(name), "{args:?}:\n{out}");
        }
        let out = sim(&["analyze", "attention", "--gpu", name]);
        let has_wgmma = sim::gpu::preset::Preset::builtin(name)
            .unwrap()
            .tensor
            .has_wgmma;
        if has_wgmma {
            assert!(out.status.success(), "{name}: {out:?}");
        } else {
            assert_eq!(out.status.code(), Some(1), "{name}");
            let msg = format!(
                "error: {name} has no wgmma; the attention model is for Hopper (h100-sxm, h200-sxm)\n"
            );
            assert_eq!(String::from_utf8_lossy(&out.stderr), msg);
        }
    }
}

/// `--json`: the figures of the tables above as numbers (what the Python module's `analyze`
/// returns), and the same input errors.
#[test]
fn analyze_json_holds_the_tables_figures() {
    let json = |args: &[&str]| -> serde_json::Value {
        serde_json::from_str(&stdout_of(&[&["analyze"], args, &["--json"]].concat())).unwrap()
    };
    let g = json(&["gemm", "--gpu", "rtx3070", "4096", "4096", "4096"]);
    assert_eq!(g["model"], "gemm");
    assert_eq!(g["flops"], 137_438_953_472u64);
    assert_eq!(g["min_bytes"], 100_663_296);
    assert_eq!(g["tiled_bytes"], 2_181_038_080u64);
    assert_eq!(
        (g["a_reads"].as_u64(), g["b_reads"].as_u64()),
        (Some(32), Some(32))
    );
    assert_eq!(g["roofline"][1]["case"], "tiled, no L2");
    assert_eq!(g["waves"][1]["hypothetical"], true);
    let illegal = json(&[
        "gemm",
        "--gpu",
        "rtx3070",
        "4096",
        "4096",
        "4096",
        "--tile",
        "128x256x64",
    ]);
    assert_eq!(
        illegal["not_launchable"],
        "shared memory 147,456 B > 101,376 B per CTA"
    );
    assert_eq!(illegal["occupancy"], serde_json::Value::Null);
    let d = json(&["decode", "--gpu", "h200-sxm", "--splits", "1,8"]);
    assert_eq!(d["fastest"], 8);
    assert_eq!(
        format!("{:.1}", d["splits"][1]["total_s"].as_f64().unwrap() * 1e6),
        "29.6"
    );
    let a = json(&["attention", "--l2-hit", "0.9"]);
    assert_eq!(a["consumer_regs"]["total"], 192);
    assert_eq!(a["problem"]["bound"], "tensor");
    let t = json(&["gemm", "--gpu", "rtx3070", "4096", "4096", "4096", "--tune"]);
    assert_eq!(t["model"], "gemm_tune");
    assert_eq!(t["early_prune"]["pruned"], 46);
    assert_eq!(t["perf_model"].as_array().unwrap().len(), 8);
    let w = json(&["waves", "--tiles", "133"]);
    assert_eq!((&w["waves"], &w["per_wave"]), (&2.into(), &132.into()));
    let o = json(&["occupancy", "--threads", "384", "--regs", "168"]);
    assert_eq!(o["occupancy"]["limiter"], "regs");
    assert_eq!(o["resident_warps"], 12);
    let f = json(&["wgmma", "--n", "32,64"]);
    assert_eq!(f["feed"][1]["ss_ratio"], 1.0);
    assert_eq!(f["min_fed_n"], 64.0);
    let out = sim(&[
        "analyze", "gemm", "64", "64", "64", "--l2-hit", "1.5", "--json",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: --l2-hit 1.5 must be in [0, 1)\n"
    );
}

/// `sim analyze waves --cluster`: whole clusters on each GPC, the idle slots counted as waste,
/// and a size or tile count the preset cannot launch refused.
#[test]
fn analyze_waves_places_clusters_on_gpcs() {
    let out = stdout_of(&["analyze", "waves", "--tiles", "256", "--cluster", "4"]);
    assert_eq!(
        fields(&out, "1 "),
        ["1", "256", "120", "3", "13%", "64.6%"],
        "{out}"
    );
    assert!(out.contains("clusters of 4, each on one GPC (18, 18, 18, 18, 18, 18, 16, 8 SMs): 30 at once, 12 of 132 CTA slots idle"), "{out}");
    // Pairs fit every GPC: the same waves as without clusters.
    let pairs = stdout_of(&["analyze", "waves", "--tiles", "256", "--cluster", "2"]);
    assert_eq!(
        fields(&pairs, "1 "),
        ["1", "256", "132", "2", "94%", "97.0%"]
    );
    for (args, err) in [
        (
            vec!["--tiles", "255", "--cluster", "2"],
            "error: --tiles 255 is not a whole number of clusters of 2 (a grid is whole clusters)\n",
        ),
        (
            vec!["--tiles", "256", "--cluster", "32"],
            "error: --cluster 32: h100-sxm runs clusters of 1 to 16 CTA(s), all on one GPC\n",
        ),
        (
            vec!["--gpu", "a100-sxm", "--tiles", "256", "--cluster", "2"],
            "error: --cluster 2: a100-sxm runs clusters of 1 to 1 CTA(s), all on one GPC\n",
        ),
    ] {
        let out = sim(&[&["analyze", "waves"], &args[..]].concat());
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(String::from_utf8_lossy(&out.stderr), err);
    }
}
