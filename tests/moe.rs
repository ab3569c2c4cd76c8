//! A mixture-of-experts layer's expert GEMMs (`scenarios/moe_grouped_gemm.ron`, issue 17): the
//! seeded top-k Zipf routing, one persistent grouped kernel against a launch per expert and one
//! dense GEMM of the same rows, the grouped kernel's tiles, and the errors of `tables` and
//! `launches`.

use crate::common;

use common::{scenario, sets, sim, temp_scenario};
use sim::observe::report::Report;
use sim::run::{self, Ran};
use sim::sequence::SequenceReport;
use sim::sweep::{self, Options};

const FILE: &str = "scenarios/moe_grouped_gemm.ron";
const GROUPED: i64 = 0;
const PER_EXPERT: i64 = 1;
const DENSE: i64 = 2;

/// The shipped shape: 512 tokens, top-2 of 8 experts, n = k = 2048, 128 × 256 tiles.
const EXPERTS: usize = 8;
const N: u64 = 2048;
const K: u64 = 2048;
/// FLOPs of one 128 × 256 tile over the whole K.
const TILE_FLOPS: u64 = 2 * 128 * 256 * K;

fn ran(variant: i64) -> Ran {
    run::run_scenario(
        &scenario("moe_grouped_gemm"),
        &sets(&[("variant", variant)]),
    )
    .unwrap_or_else(|e| panic!("variant {variant}: {e}"))
}

fn kernel(variant: i64) -> Report {
    match ran(variant) {
        Ran::Kernel(r) => *r,
        Ran::Sequence(s) => panic!("variant {variant}: {} kernels", s.kernels.len()),
    }
}

fn per_expert() -> SequenceReport {
    match ran(PER_EXPERT) {
        Ran::Sequence(s) => s,
        Ran::Kernel(r) => panic!("one kernel of {} cycles", r.cycles),
    }
}

#[test]
fn the_routing_is_a_seeded_top_k_zipf_sampling() {
    let (k, _) = run::load(&scenario("moe_grouped_gemm"), &sets(&[])).unwrap();
    let routed = &k.tables["routed"];
    assert_eq!(routed, &[324, 199, 126, 105, 78, 68, 62, 62]);
    // Each token goes to top_k distinct experts.
    assert_eq!(routed.iter().sum::<i64>(), 512 * 2);
    assert!(routed.iter().all(|&r| r <= 512), "{routed:?}");
    // ⌈rows / 128⌉ × 2048 / 256 tiles an expert, and where each expert's tiles end.
    assert_eq!(k.tables["tiles"], [24, 16, 8, 8, 8, 8, 8, 8]);
    assert_eq!(k.tables["tile_end"], [24, 40, 48, 56, 64, 72, 80, 88]);
    assert_eq!(
        k.tables["row_end"],
        [324, 523, 649, 754, 832, 900, 962, 1024]
    );
    // Another seed routes otherwise, the same number of rows.
    let (other, _) = run::load(&scenario("moe_grouped_gemm"), &sets(&[("seed", 2)])).unwrap();
    assert_ne!(&other.tables["routed"], routed);
    assert_eq!(other.tables["routed"].iter().sum::<i64>(), 1024);
}

#[test]
fn grouped_beats_a_launch_per_expert_and_dense_bounds_both() {
    let grouped = kernel(GROUPED);
    let per = per_expert();
    let dense = kernel(DENSE);
    // Every expert's tiles fit on the GPU at once. The grouped kernel runs all 88 in one wave,
    // a tile's time stretched by reading every expert's weights from DRAM; the launches run
    // one such wave each, one after another, on 8 to 24 SMs.
    assert!(
        grouped.cycles * 4 < per.cycles,
        "grouped {} against per expert {}",
        grouped.cycles,
        per.cycles
    );
    assert_eq!(grouped.bound.as_ref().unwrap().binding, "hbm");
    let weights = EXPERTS as u64 * N * K * 2;
    assert!(grouped.dram.read_bytes > weights, "{:?}", grouped.dram);
    // One weight matrix and no M tails: 64 tiles, tensor-bound.
    assert!(
        dense.cycles <= grouped.cycles,
        "dense {} against grouped {}",
        dense.cycles,
        grouped.cycles
    );
    assert_eq!(dense.bound.as_ref().unwrap().binding, "tensor");
    assert!(dense.dram.read_bytes < weights, "{:?}", dense.dram);
    // The tensor pipes' share of the GPU over the run: the launches leave most SMs idle.
    assert!(per.tensor_load < 0.1, "{}", per.tensor_load);
    assert!(grouped.tensor_load > 0.35, "{}", grouped.tensor_load);
}

#[test]
fn the_launches_run_one_expert_each_after_a_gap() {
    let per = per_expert();
    let names: Vec<&str> = per.kernels.iter().map(|k| k.name.as_str()).collect();
    let expected: Vec<String> = (0..EXPERTS)
        .map(|e| format!("moe_grouped_gemm e={e}"))
        .collect();
    assert_eq!(names, expected);
    // A CTA per tile of the expert (each fits an SM of its own).
    let ctas: Vec<u32> = per.kernels.iter().map(|k| k.report.ctas).collect();
    assert_eq!(ctas, [24, 16, 8, 8, 8, 8, 8, 8]);
    // Each launch starts after the one before ended and the launch gap passed; the sequence's
    // cycles are the kernels' and the gaps'.
    assert_eq!(per.kernels[0].gap, 0);
    assert!(per.kernels[1..].iter().all(|k| k.gap > 2000), "gaps");
    let kernels: u64 = per.kernels.iter().map(|k| k.report.cycles).sum();
    let gaps: u64 = per.kernels.iter().map(|k| k.gap).sum();
    assert_eq!(kernels + gaps, per.cycles);
}

#[test]
fn every_variant_computes_each_tile_once_and_writes_c_once() {
    let grouped = kernel(GROUPED);
    let per = per_expert();
    let dense = kernel(DENSE);
    // The grouped kernel's binary search gives each of the 88 tiles one expert: as many FLOPs
    // as the launches' tiles, each expert's M tail a whole tile.
    assert_eq!(grouped.flops, 88 * TILE_FLOPS);
    let flops: Vec<u64> = per.kernels.iter().map(|k| k.report.flops).collect();
    let tiles = [24, 16, 8, 8, 8, 8, 8, 8];
    assert_eq!(flops, tiles.map(|t| t * TILE_FLOPS));
    assert_eq!(dense.flops, 1024 / 128 * (N / 256) * TILE_FLOPS);
    // Every row of C is written: its 1024 × 2048 bf16 once, whichever tiles wrote it.
    let c = 1024 * N * 2;
    assert_eq!(grouped.dram.write_bytes, c);
    assert_eq!(dense.dram.write_bytes, c);
    let written: u64 = per.kernels.iter().map(|k| k.report.dram.write_bytes).sum();
    assert_eq!(written, c);
}

#[test]
fn a_sweep_runs_the_launches_as_a_sequence() {
    let source = std::fs::read_to_string(scenario("moe_grouped_gemm")).unwrap();
    let opts = Options {
        gpu: None,
        seed: 0,
        max_cycles: 10_000_000,
        check: true,
        jobs: 1,
    };
    let sets = vec![("variant".to_string(), PER_EXPERT)];
    let m = sweep::simulate_point(FILE, &source, sets, 0, &opts, None).unwrap();
    let per = per_expert();
    assert_eq!(m.cycles, per.cycles);
    assert_eq!(m.time_us, per.time_us);
    // The rate over the whole sequence, gaps included.
    let flops: u64 = per.kernels.iter().map(|k| k.report.flops).sum();
    assert!(
        (m.tflops - flops as f64 / per.time_us / 1e6).abs() < 1e-6,
        "{}",
        m.tflops
    );
}

/// `file:line:column` of `expr`, an expression written `"expr"` on the first line holding
/// `line`, in the shipped scenario.
fn place(line: &str, expr: &str) -> String {
    let text = std::fs::read_to_string(scenario("moe_grouped_gemm")).unwrap();
    let (i, l) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(line))
        .unwrap();
    let col = l.find(&format!("\"{expr}\"")).unwrap() + 2;
    format!("{FILE}:{}:{col}", i + 1)
}

/// `sim run` with `--set` options, which must fail: its standard error.
fn refused(args: &[&str]) -> String {
    let mut all = vec!["run", FILE, "--no-trace"];
    for a in args {
        all.extend(["--set", a]);
    }
    let out = sim(&all);
    assert_eq!(out.status.code(), Some(1), "{args:?}");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn bad_routing_and_launch_counts_are_errors_at_their_place() {
    let zipf = "Zipf(name: \"routed\"";
    let routed = "= in tables[0] `routed`";
    let cases = [
        (
            vec!["experts=0"],
            "error: table length is 0 (`experts`); expected 1..=65536",
            place(zipf, "experts"),
            routed,
        ),
        (
            vec!["top_k=9"],
            "error: picks per draw (at most len) is 9 (`top_k`); expected 1..=8",
            place(zipf, "top_k"),
            routed,
        ),
        (
            vec!["tokens=-1"],
            "error: draws (len × draws at most 2^26) is -1 (`tokens`); expected 0..=8388608",
            place(zipf, "tokens"),
            routed,
        ),
        (
            vec!["skew=1001"],
            "error: Zipf exponent in hundredths is 1001 (`skew`); expected 0..=1000",
            place(zipf, "skew"),
            routed,
        ),
        (
            vec!["variant=1", "experts=1025", "top_k=1"],
            "error: launch count is 1025 (`variant == 1 ? experts : 1`); expected 0..=1024",
            place("launches: Launches(", "variant == 1 ? experts : 1"),
            "= in kernel.launches",
        ),
    ];
    for (sets, message, at, path) in cases {
        let e = refused(&sets);
        assert!(e.starts_with(message), "{sets:?}: {e}");
        assert!(e.contains(&format!("--> {at}\n")), "{sets:?}: {e}");
        assert!(e.contains(path), "{sets:?}: {e}");
        assert!(!e.contains("panicked"), "{e}");
    }
}

/// A kernel of 2 CTAs launched `launches` times, each warp reading `t[cta * 3 + i]` for `i` in
/// `0..3` of the table `t` = [0, 2, 4, 6].
fn table_reader(launches: &str) -> String {
    format!(
        r#"Scenario(
    name: "reader",
    gpu: "h100-sxm",
    params: {{ "n": 4 }},
    tables: [List(name: "t", len: "n", var: "i", value: "i * 2")],
    kernel: Kernel(
        launches: Launches(var: "e", count: "{launches}"),
        grid: 2,
        regs_per_thread: 32,
        roles: [
            Role(name: "w", warpgroups: 1, regs: 32, program: [
                Loop(var: "i", count: 3, body: [
                    Let(var: "x", value: "t[cta * 3 + i]"),
                    Alu("x + 1"),
                ]),
            ]),
        ],
    ),
)
"#
    )
}

#[test]
fn a_table_read_out_of_range_at_run_time_and_no_launch_at_all_are_errors() {
    let path = temp_scenario("moe_table_reader.ron", &table_reader("2"));
    let file = path.display().to_string();
    let out = sim(&["run", &file, "--no-trace"]);
    assert_eq!(out.status.code(), Some(1));
    let e = String::from_utf8(out.stderr).unwrap();
    // CTA 1 reads entries 3, 4 and 5 of the 4; the first launch stops the sequence.
    assert!(e.starts_with(&format!("error: {file}: kernel `reader e=0` (1/2): cycle ")));
    assert!(
        e.contains(
            ": CTA 1, warp w0.w0: let: index 4 of table `t` is out of range: it has 4 entries\n  \
             = in role `w`: program[0] loop(i).body[0] let"
        ),
        "{e}"
    );
    let path = temp_scenario("moe_no_launch.ron", &table_reader("n - 4"));
    let file = path.display().to_string();
    for args in [vec!["run", &file, "--no-trace"], vec!["check", &file]] {
        let out = sim(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let e = String::from_utf8(out.stderr).unwrap();
        assert!(
            e.starts_with(
                "error: the scenario launches no kernel: every kernel's `launches` count is 0\n"
            ),
            "{e}"
        );
        assert!(e.contains(&format!("--> {file}:7:46\n")), "{e}");
        assert!(e.contains("= in kernel.launches"), "{e}");
    }
}
