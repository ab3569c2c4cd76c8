//! Kernel sequences (a scenario's `then`): the L2 carried from kernel to kernel, the launch gap
//! and the host's launch interval, the accounting of dirty lines, and the errors.

use crate::common;

use common::{fixture, sets, sim, temp_scenario};
use sim::sequence::{self, SequenceReport};

fn run_text(name: &str, text: &str) -> SequenceReport {
    sequence::run_file(&temp_scenario(name, text), &sets(&[])).unwrap()
}

fn source() -> String {
    std::fs::read_to_string(fixture("sequence")).unwrap()
}

/// The fixture with `declaration` added to the reader kernel and `first` as its role's first
/// instruction.
fn reader_with(declaration: &str, first: &str) -> String {
    let role = "Role(name: \"r\", warpgroups: 1, regs: 32, program: [";
    source()
        .replace(role, &format!("{role}\n                    {first}"))
        .replace(
            "            roles: [\n                Role(name: \"r\"",
            &format!(
                "            {declaration}\n            roles: [\n                Role(name: \"r\""
            ),
        )
}

#[test]
fn the_second_kernel_hits_on_what_the_first_left_in_l2() {
    let s = sequence::run_file(&fixture("sequence"), &sets(&[])).unwrap();
    let (write, read) = (&s.kernels[0].report, &s.kernels[1].report);
    assert_eq!(
        (s.kernels[0].name.as_str(), s.kernels[1].name.as_str()),
        ("write", "read")
    );
    // 132 CTAs x 15 iterations x 128 threads x 16 bytes.
    let bytes = 132 * 15 * 128 * 16;
    assert_eq!(read.l2.hit_rate, 1.0);
    assert_eq!(read.dram.read_bytes, 0);
    // The first kernel's lines are still dirty: its writes, not the second's.
    assert_eq!(
        (write.dram.write_bytes, write.dram.flushed_bytes),
        (bytes, bytes)
    );
    assert_eq!((read.dram.write_bytes, read.dram.flushed_bytes), (0, 0));
    // The same read alone starts on an empty L2 and reads everything from DRAM.
    let alone = temp_scenario("read_alone.ron", &only_the_read_kernel(&source()));
    let cold = sim::run::run_file(&alone, &sets(&[])).unwrap();
    assert_eq!(cold.l2.hit_rate, 0.0);
    assert_eq!(cold.dram.read_bytes, bytes);
}

/// The fixture with its second kernel as the only one.
fn only_the_read_kernel(text: &str) -> String {
    let from = text.find("kernel: Kernel(").unwrap();
    let to = text.find("then: [").unwrap();
    let then = &text[to + "then: [".len()..];
    let end = then.rfind("],").unwrap();
    format!(
        "{}kernel: {}\n)\n",
        &text[..from],
        then[..end].trim().trim_end_matches(',')
    )
}

#[test]
fn an_eager_launch_waits_for_the_host_and_a_graph_for_the_gap() {
    // Kernel 1 takes ~0.6 us, less than the host's 4536 ns between eager launches: kernel 2
    // starts 4536 ns x 1.98 GHz after kernel 1 started.
    let eager = sequence::run_file(&fixture("sequence"), &sets(&[])).unwrap();
    assert_eq!(eager.launch, "eager");
    let first = &eager.kernels[0];
    assert!(first.report.cycles < 8981);
    assert_eq!(eager.kernels[1].start, 8981);
    assert_eq!(eager.kernels[1].gap, 8981 - first.report.cycles);
    // From a graph: 512 ns + 256 ns on all 132 SMs after kernel 1's end.
    let graph = run_text(
        "graph.ron",
        &source().replace("params: {", "launch: Graph,\n    params: {"),
    );
    assert_eq!(graph.launch, "graph");
    let k1 = &graph.kernels[0].report;
    assert_eq!(graph.kernels[1].gap, 1521); // 768 ns x 1.98 GHz
    assert_eq!(graph.kernels[1].start, k1.cycles + 1521);
    // The sequence's cycles run to the last kernel's end; its time adds the gaps.
    let last = &graph.kernels[1];
    assert_eq!(graph.cycles, last.start + last.report.cycles);
    let time = k1.time_us + last.report.time_us + 1521.0 / 1980.0;
    assert!(
        (graph.time_us - time).abs() < 1e-9,
        "{} vs {time}",
        graph.time_us
    );
    // On one SM the gap is the one-SM figure: 512 ns.
    let one = run_text(
        "graph1.ron",
        &source()
            .replace("params: {", "launch: Graph,\n    params: {")
            .replace("\"ctas\": 132", "\"ctas\": 1"),
    );
    assert_eq!(one.kernels[1].gap, 1014); // 512 ns x 1.98 GHz
}

#[test]
fn kernels_that_declare_one_tensor_differently_are_an_error() {
    let text = source().replacen("shape: [\"kib * 256\"]", "shape: [\"kib * 512\"]", 1);
    let path = temp_scenario("disagree.ron", &text);
    let e = sequence::run_file(&path, &sets(&[]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tensor `X` is declared as F32 [2097152] by kernel `write` and as F32 [1048576] by `read`"),
        "{e}"
    );
    assert!(e.contains("then[0]"), "{e}");
}

#[test]
fn sim_run_and_check_take_every_kernel_and_bench_refuses_a_sequence() {
    let file = fixture("sequence");
    let out = sim(&["run", file.to_str().unwrap(), "--no-trace"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("kernel 1/2 `write`: cycles 0.."),
        "{first}"
    );
    assert!(text.contains("kernel 2/2 `read`: cycles 8981.."), "{text}");
    assert!(
        text.contains("sequence    2 kernels on h200-sxm, eager launches:"),
        "{text}"
    );
    let json = sim(&["run", file.to_str().unwrap(), "--no-trace", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["kernels"][1]["report"]["l2"]["hit_rate"], 1.0);
    let csv = sim(&["run", file.to_str().unwrap(), "--no-trace", "--csv"]);
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert!(
        csv.contains("sequence,h200-sxm,0,/kernels/1/start,8981,cycles,\n"),
        "{csv}"
    );
    let cycles = v["kernels"][1]["report"]["cycles"].as_u64().unwrap();
    let row = format!("sequence,h200-sxm,0,/kernels/1/report/cycles,{cycles},cycles,\n");
    assert!(csv.contains(&row), "{csv}");
    // `sim check` runs the sanitizer over every kernel; `sim bench` times one kernel.
    let check = sim(&["check", file.to_str().unwrap()]);
    let said = String::from_utf8(check.stdout).unwrap();
    assert!(check.status.success(), "{said}");
    let total = v["cycles"].as_u64().unwrap();
    assert!(
        said.ends_with(&format!(
            "valid; simulated to completion in {total} cycles with no hazard and no deadlock\n"
        )),
        "{said}"
    );
    let bench = sim(&["bench", file.to_str().unwrap()]);
    assert!(!bench.status.success());
    let err = String::from_utf8(bench.stderr).unwrap();
    assert!(
        err.contains(
            "the scenario is a sequence of 2 kernels (`then` or `launches`): `sim run` runs it"
        ),
        "{err}"
    );
}

#[test]
fn a_kernel_that_deadlocks_is_named_with_its_place() {
    // The reader waits on an mbarrier phase that nothing completes.
    let text = reader_with(
        "mbarriers: [MBarrier(name: \"never\", arrivals: 1)],",
        "Wait(bar: \"never\", parity: 0),",
    );
    assert!(text.contains("Wait(bar: \"never\""), "{text}");
    let path = temp_scenario("sequence_deadlock.ron", &text);
    let e = sequence::run_file(&path, &sets(&[]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("deadlock.ron: kernel `read` (2/2): deadlock at cycle"),
        "{e}"
    );
}

#[test]
fn a_later_kernels_counters_live_past_every_tensor() {
    // The reader's one atomic: on an address of its own (a cold line, a miss), not on the
    // first line of X that the writer left in L2.
    let text = reader_with(
        "counters: [Counter(name: \"c\")],",
        "If(cond: \"cta == 0 && warp == 0\", then: [AtomicAdd(counter: \"c\", into: \"t\")]),",
    );
    assert!(text.contains("AtomicAdd"), "{text}");
    let s = run_text("counter.ron", &text);
    let read = &s.kernels[1].report;
    assert!(read.l2.hit_rate < 1.0, "{}", read.l2.hit_rate);
    assert!(read.dram.read_bytes > 0);
}

/// Every shipped sequence checks clean (the sanitizer over each kernel) and each of its kernels
/// starts after the one before ended.
#[test]
fn shipped_sequences_check_clean_and_run_in_order() {
    let files = common::sequence_files();
    assert!(!files.is_empty());
    for file in files {
        let name = file.display().to_string();
        let check = sim(&["check", &name]);
        let said = String::from_utf8(check.stdout).unwrap();
        assert!(check.status.success(), "{name}: {said}");
        assert!(
            said.contains("with no hazard and no deadlock"),
            "{name}: {said}"
        );
        let s = sequence::run_file(&file, &sets(&[])).unwrap();
        for w in s.kernels.windows(2) {
            assert!(w[1].start >= w[0].start + w[0].report.cycles, "{name}");
        }
    }
}
