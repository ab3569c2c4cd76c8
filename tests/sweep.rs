//! `sim sweep` and `sim tune` end to end: the product's order, the same bytes for any `--jobs`
//! and for merged shards, failed points as rows, the cache, and the autotuner's acceptance
//! figures. Problems are small so that the whole file runs in seconds.

use crate::common;

use common::{command, scratch};
use serde_json::Value;
use sim::analytic::gemm::Gemm;
use sim::analytic::gpu::GpuSpec;
use sim::analytic::tune::Space;
use sim::sweep::tune::{tune, Plan, TuneOptions};
use std::path::Path;

/// A small Ampere GEMM: 16 CTAs of 64 x 64 tiles, a few thousand cycles per point.
const SMALL: [&str; 7] = [
    "scenarios/gemm_ampere.ron",
    "--set",
    "m=256",
    "--set",
    "n=256",
    "--set",
    "k=256",
];

/// `sim ARGS` with its result cache in `cache` (a scratch folder of this test), which must
/// succeed; its standard output.
fn sim_cached(cache: &Path, args: &[&str]) -> String {
    let out = command(args)
        .env("XDG_CACHE_HOME", cache)
        .output()
        .expect("the sim binary runs");
    assert!(
        out.status.success(),
        "sim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `sim sweep` over SMALL plus `more`, without the cache.
fn sweep(more: &[&str]) -> String {
    let mut args = vec!["sweep"];
    args.extend(SMALL);
    args.extend(["--set", "bm=64", "--set", "bn=64", "--set", "bk=32"]);
    args.extend(more);
    args.push("--no-cache");
    sim_cached(&scratch("unused-cache"), &args)
}

#[test]
fn points_come_in_product_order_the_first_set_outermost() {
    let out = sweep(&["--set", "stages=1..3", "--set", "num_warps=4,8", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["points"], 6);
    let rows = v["rows"].as_array().unwrap();
    let values: Vec<Vec<i64>> = rows
        .iter()
        .map(|r| {
            r["values"].as_array().unwrap()[6..]
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(
        values,
        [[1, 4], [1, 8], [2, 4], [2, 8], [3, 4], [3, 8]].map(|p| p.to_vec())
    );
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["point"], i);
        assert!(r["metrics"]["cycles"].as_u64().unwrap() > 0, "{r}");
    }
}

#[test]
fn any_number_of_jobs_prints_the_same_bytes() {
    for format in ["--json", "--csv", "--seed=3"] {
        let args = ["--set", "stages=1..4", format];
        let one = sweep(&[&args[..], &["--jobs", "1"]].concat());
        let two = sweep(&[&args[..], &["--jobs", "2"]].concat());
        assert_eq!(one, two, "{format}");
    }
}

#[test]
fn two_shards_merged_are_the_unsharded_sweep() {
    let axes = ["--set", "stages=1..3", "--set", "num_warps=4,8"];
    let whole_json = sweep(&[&axes[..], &["--json"]].concat());
    let whole_text = sweep(&axes);
    let mut files = Vec::new();
    for i in 0..2 {
        let shard = format!("{i}/2");
        let out = sweep(&[&axes[..], &["--json", "--shard", &shard]].concat());
        let v: Value = serde_json::from_str(&out).unwrap();
        let points: Vec<u64> = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["point"].as_u64().unwrap())
            .collect();
        assert_eq!(points, if i == 0 { [0, 2, 4] } else { [1, 3, 5] });
        let f = scratch(&format!("shard{i}.json"));
        std::fs::write(&f, out).unwrap();
        files.push(f.display().to_string());
    }
    let merge = |format: Option<&str>| {
        let mut args = vec!["sweep", "--merge", &files[1], &files[0]];
        args.extend(format);
        sim_cached(&scratch("unused-cache"), &args)
    };
    assert_eq!(merge(Some("--json")), whole_json);
    assert_eq!(merge(None), whole_text);
    // A shard missing is an error naming the first point absent.
    let out = command(&["sweep", "--merge", &files[0]]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: the shards hold 3 of the sweep's 6 points; missing: point 1\n"
    );
}

#[test]
fn a_point_that_fails_is_a_row_with_its_error() {
    // stages = 40 needs more shared memory than a CTA may have; num_warps = 6 breaks a
    // requirement; the others run.
    let out = sweep(&["--set", "stages=2,40", "--set", "num_warps=4,6", "--csv"]);
    let mut rows = csv::Reader::from_reader(out.as_bytes());
    let rows: Vec<csv::StringRecord> = rows.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 4);
    let error = |i: usize| rows[i].get(rows[i].len() - 1).unwrap().to_string();
    assert_eq!(error(0), "");
    assert!(
        error(1).contains("num_warps must be 4 or 8"),
        "{}",
        error(1)
    );
    assert!(error(2).contains("shared memory"), "{}", error(2));
    // A deadlock too: the fixture's producer waits on a phase nobody completes.
    let out = sim_cached(
        &scratch("unused-cache"),
        &[
            "sweep",
            "tests/fixtures/docs/deadlock.ron",
            "--set",
            "stages=2,4",
            "--no-cache",
        ],
    );
    assert_eq!(
        out.matches("error: tests/fixtures/docs/deadlock.ron: deadlock at cycle")
            .count(),
        2,
        "{out}"
    );
}

#[test]
fn the_cache_returns_the_same_output_and_no_cache_simulates() {
    let cache = scratch("cache");
    let _ = std::fs::remove_dir_all(&cache);
    let mut args = vec!["sweep"];
    args.extend(SMALL);
    args.extend(["--set", "stages=2,3", "--json"]);
    let first = sim_cached(&cache, &args);
    assert_eq!(sim_cached(&cache, &args), first);
    let entries: Vec<_> = std::fs::read_dir(cache.join("sim/sweep"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 2);
    // An entry altered on disk shows in a cached run and not with --no-cache.
    for e in &entries {
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(e).unwrap()).unwrap();
        v["metrics"]["cycles"] = 7.into();
        std::fs::write(e, v.to_string()).unwrap();
    }
    let cached = sim_cached(&cache, &args);
    assert!(cached.contains("\"cycles\": 7,"), "{cached}");
    args.push("--no-cache");
    assert_eq!(sim_cached(&cache, &args), first);
    // Another seed is another key.
    args.pop();
    args.push("--seed=1");
    assert!(!sim_cached(&cache, &args).contains("\"cycles\": 7,"));
}

#[test]
fn the_plot_draws_one_line_per_combination_of_the_others() {
    let svg = scratch("sweep.svg");
    let p = svg.display().to_string();
    sweep(&[
        "--set",
        "stages=1..3",
        "--set",
        "num_warps=4,8",
        "--plot",
        &p,
        "--x",
        "stages",
    ]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(text.contains("font-family=\"sans-serif\""));
    assert_eq!(text.matches("<path ").count(), 2);
    assert!(text.contains(">m=256, n=256, k=256, bm=64, bn=64, bk=32, num_warps=8</text>"));
    // A wrong --x fails before anything is simulated.
    let out = command(&[
        "sweep",
        SMALL[0],
        "--set",
        "stages=1,2",
        "--plot",
        &p,
        "--x",
        "bn",
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: --x bn: not a swept parameter (swept: stages)\n"
    );
}

/// `sim tune`'s plan for an M x N x K GEMM on rtx3070 over Triton's configs.
fn rtx3070_plan(m: u64, n: u64, k: u64, top_k: usize) -> Plan {
    let gpu = GpuSpec::rtx3070();
    let configs = Space::triton(&gpu).configs();
    let g = Gemm::new(m, n, k).unwrap();
    Plan::new(gpu, g, configs, "Triton's".into(), top_k)
}

/// The acceptance figures for rtx3070 at 4096³: the analytic steps `sim tune` prints.
#[test]
fn rtx3070_4096_cubed_prunes_46_of_192_and_ties_8_at_3_709_ms() {
    let plan = rtx3070_plan(4096, 4096, 4096, 1);
    assert_eq!(plan.configs.len(), 192);
    assert_eq!(plan.pruned.pruned.len(), 46);
    assert_eq!(
        (plan.pruned.count("smem"), plan.pruned.count("regs")),
        (34, 12)
    );
    assert_eq!(plan.k, 8);
    let text = plan.text();
    assert!(
        text.contains(
            "perf_model: top 8 of 146 (8 tie at 3.709 ms, top_k 1 raised to the tie group)"
        ),
        "{text}"
    );
}

/// On rtx3070 the survivors run through gemm_ampere.ron (8-warp configs included), and the
/// pick obeys the overlap rule: least shared memory among the bands that overlap the fastest's.
#[test]
fn an_ampere_tune_picks_by_the_overlap_rule() {
    let plan = rtx3070_plan(512, 512, 256, 4);
    let opts = TuneOptions {
        repeats: 3,
        seed: 0,
        max_cycles: 1 << 30,
        jobs: 2,
    };
    let t = tune(plan, opts, None, &|| ()).unwrap();
    assert_eq!(t.scenario, "scenarios/gemm_ampere.ron");
    let (table, pick) = t.pick().expect("configs ran");
    assert!(table.iter().any(|m| m.config.warps == 8));
    let fastest = &table[pick.fastest];
    for (i, m) in table.iter().enumerate() {
        assert!(m.median_ms >= fastest.median_ms);
        assert_eq!(pick.overlapping.contains(&i), m.overlaps(fastest));
    }
    let chosen = &table[pick.chosen];
    assert!(pick.overlapping.contains(&pick.chosen));
    assert!(pick
        .overlapping
        .iter()
        .all(|&i| table[i].config.smem_bytes() >= chosen.config.smem_bytes()));
}

/// The perf model cannot tell stages (or BK) apart; the simulation can, and says why.
#[test]
fn the_simulation_orders_what_the_perf_model_ties_on_bk_and_stages() {
    let out = sim_cached(
        &scratch("unused-cache"),
        &[
            "tune",
            "gemm",
            "--gpu",
            "h100-sxm",
            "512",
            "512",
            "1024",
            "--top-k",
            "4",
            "--repeats",
            "3",
            "--no-cache",
        ],
    );
    assert!(
        out.contains("perf_model: top 12 of 140 (12 tie at 0.009 ms"),
        "{out}"
    );
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("64x128 8w: the perf model gives its 3 BK/stages variants one time (it models neither); simulated, BK 128 stages 4 is fastest"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("BK 64 stages 5 slowest"), "{line}");
    assert!(line.contains("warps mostly in wgmma_wait"), "{line}");
    assert!(out.contains("  pick: "), "{out}");
}

#[test]
fn a_tune_prints_the_same_bytes_for_any_jobs() {
    let args = |jobs| {
        [
            "tune",
            "gemm",
            "--gpu",
            "h100-sxm",
            "256",
            "256",
            "512",
            "--top-k",
            "2",
            "--repeats",
            "2",
            "--no-cache",
            "--jobs",
            jobs,
        ]
    };
    let one = sim_cached(&scratch("unused-cache"), &args("1"));
    assert_eq!(one, sim_cached(&scratch("unused-cache"), &args("2")));
}

/// A config file: the one the simulator refuses is a row with its error, outside the pick.
#[test]
fn a_config_the_simulation_refuses_is_a_row_with_its_error() {
    let configs = scratch("configs.txt");
    std::fs::write(
        &configs,
        "# BMxBNxBK warps stages\n32x64x32 4 2\n64x64x32 4 2\n",
    )
    .unwrap();
    let out = sim_cached(
        &scratch("unused-cache"),
        &[
            "tune",
            "gemm",
            "--gpu",
            "h100-sxm",
            "256",
            "256",
            "256",
            "--configs",
            &configs.display().to_string(),
            "--repeats",
            "2",
            "--no-cache",
        ],
    );
    assert!(out.contains(": 2 configs ("), "{out}");
    let refused = out
        .lines()
        .find(|l| l.contains("32x64x32") && l.contains("error:"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        refused.contains("error: bm must be 64, 128 or 256"),
        "{refused}"
    );
    assert!(out.contains("  pick: 64x64x32 4w 2s, the fastest"), "{out}");
}

/// `sim tune gemm --json`: the text's rows as records (what the Python module's `tune`
/// returns): the refused config with its error, the pick with the text's sentence.
#[test]
fn a_tune_as_json_holds_the_texts_rows() {
    let configs = scratch("configs-json.txt");
    std::fs::write(&configs, "32x64x32 4 2\n64x64x32 4 2\n64x64x64 4 3\n").unwrap();
    let args = |json: bool| {
        let mut a = vec![
            "tune",
            "gemm",
            "256",
            "256",
            "256",
            "--configs",
            configs.to_str().unwrap(),
            "--repeats",
            "2",
            "--no-cache",
        ];
        if json {
            a.push("--json");
        }
        sim_cached(&scratch("unused-cache"), &a)
    };
    let text = args(false);
    let v: serde_json::Value = serde_json::from_str(&args(true)).unwrap();
    assert_eq!(v["gemm"], serde_json::json!({"m": 256, "n": 256, "k": 256}));
    assert_eq!(
        (v["configs"].as_u64(), v["repeats"].as_u64()),
        (Some(3), Some(2))
    );
    let rows = v["simulated"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let refused = rows.iter().find(|r| r["bm"] == 32).unwrap();
    assert!(refused["error"]
        .as_str()
        .unwrap()
        .starts_with("bm must be 64, 128 or 256"));
    assert_eq!(refused["median_ms"], serde_json::Value::Null);
    let picked: Vec<_> = rows.iter().filter(|r| r["picked"] == true).collect();
    assert_eq!(picked.len(), 1);
    let p = picked[0];
    let shown = format!("{}x{}x{}", p["bm"], p["bn"], p["bk"]);
    let line = text
        .lines()
        .find(|l| l.contains(&shown) && l.contains("picked"))
        .unwrap_or_else(|| panic!("{shown} in\n{text}"));
    assert!(
        line.contains(&format!("{:.3}", p["median_ms"].as_f64().unwrap() * 1e3)),
        "{line}"
    );
    assert!(
        text.contains(&format!("  {}\n", v["pick"]["why"].as_str().unwrap())),
        "{text}"
    );
}
