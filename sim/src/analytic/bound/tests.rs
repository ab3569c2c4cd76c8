use super::*;
use crate::run::{load_source, RunOptions};

/// Compiles a one-role scenario on h100-sxm with `program` (RON instructions) and `extra`
/// kernel fields.
fn kernel(grid: &str, warpgroups: u32, extra: &str, program: &str) -> (Kernel, Preset) {
    let text = format!(
        r#"Scenario(
name: "t",
gpu: "h100-sxm",
kernel: Kernel(
    grid: "{grid}",
    regs_per_thread: 128,
    {extra}
    roles: [Role(name: "w", warpgroups: {warpgroups}, regs: 128, program: [{program}])],
),
)"#
    );
    load_source("t.ron", &text, &RunOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn of(k: &Kernel, p: &Preset) -> Bound {
    bound(k, p, p.clock.max_mhz).unwrap_or_else(|e| panic!("{e}"))
}

const WGMMA_BUFS: &str = r#"smem: [
        Buffer(name: "sA", dtype: BF16, shape: [64, 16]),
        Buffer(name: "sB", dtype: BF16, shape: [256, 16]),
    ],"#;

fn hgmmas(n: u32, a: &str, count: u32) -> Bound {
    let program = format!(
        r#"Loop(var: "i", count: {count}, body: [Wgmma(n: {n}, a: {a}, b: "sB"), WgmmaCommit]), WgmmaWait(0)"#
    );
    let (k, p) = kernel("1", 1, WGMMA_BUFS, &program);
    of(&k, &p)
}

#[test]
fn narrow_ss_hgmmas_are_bound_by_the_operand_feed() {
    // N = 32: 16 cycles of math, (2048 + 1024) / 128 = 24 of feed per HGMMA.
    let b = hgmmas(32, r#"Smem("sA")"#, 10);
    assert_eq!((b.binding, b.cycles), ("smem", 10 * (16 + 8)));
    assert_eq!(b.unit("tensor"), Some(160.0));
    assert_eq!((b.total.tensor, b.total.smem), (160, 240));
    // Each warp issues 10 HGMMAs, 10 commits and a wait, on its own partition.
    assert_eq!(b.total.issue, vec![21; 4]);
    assert_eq!(b.unit("issue"), Some(21.0));
}

#[test]
fn wide_hgmmas_are_bound_by_the_math() {
    // N = 256: 128 cycles of math against 16 + 64 of feed (SS) or 64 (RS).
    let b = hgmmas(256, r#"Smem("sA")"#, 10);
    assert_eq!((b.binding, b.cycles), ("tensor", 10 * 128));
    assert_eq!(b.unit("smem"), Some(800.0));
    let rs = hgmmas(256, "Regs", 10);
    assert_eq!((rs.binding, rs.cycles), ("tensor", 10 * 128));
    assert_eq!(rs.unit("smem"), Some(640.0));
}

#[test]
fn narrow_rs_hgmmas_are_bound_by_the_pipe_floor() {
    // N = 16, RS: 8 cycles of math and 4 of feed, but the pipe takes an RS HGMMA per 13 cycles.
    let rs = hgmmas(16, "Regs", 10);
    assert_eq!((rs.binding, rs.cycles), ("tensor", 10 * 13));
    assert_eq!(rs.unit("smem"), Some(40.0));
}

#[test]
fn mufu_work_is_counted_per_partition() {
    // 4 lanes per partition: a MUFU warp-instruction holds its pipe 8 cycles. Warps 0 and 4
    // share partition 0.
    let (k, p) = kernel("1", 2, "", r#"Mufu("100 + warp_id")"#);
    let b = of(&k, &p);
    assert_eq!(b.binding, "mufu");
    // The busiest partition is 3 (warps 3 and 7).
    assert_eq!(b.cycles, (103 + 107) * 8);
    assert_eq!(b.total.pipes[1][pipe_index(Pipe::Mufu)], (101 + 105) * 8);
    assert_eq!(b.unit("issue"), Some(210.0));
}

#[test]
fn a_mix_books_each_pipe_and_an_issue_slot_for_every_warp_instruction() {
    // 10 MUFU (8 cycles each), 30 FMA (1), 4 ALU (2), a count <= 0 none, 6 uniform (no pipe).
    let (k, p) = kernel(
        "1",
        1,
        "",
        "Mix(mufu: 10, fma: 30, alu: 4, shfl: -1, uniform: 6, stalls: 500)",
    );
    let b = of(&k, &p);
    let pipes = &b.total.pipes[0];
    assert_eq!(pipes[pipe_index(Pipe::Mufu)], 80);
    assert_eq!(pipes[pipe_index(Pipe::Fma)], 30);
    assert_eq!(pipes[pipe_index(Pipe::Alu)], 8);
    assert_eq!(pipes[pipe_index(Pipe::Shfl)], 0);
    assert_eq!(b.total.issue, vec![50; 4]);
    assert_eq!((b.binding, b.cycles), ("mufu", 80));
}

#[test]
fn a_zero_count_takes_no_issue_slot() {
    let (k, p) = kernel("1", 1, "", "Fma(0), Alu(3)");
    let b = of(&k, &p);
    // ALU: 16 lanes per partition, 2 cycles a warp-instruction.
    assert_eq!(b.total.issue, vec![3; 4]);
    assert_eq!((b.binding, b.cycles), ("alu", 6));
}

#[test]
fn the_last_partial_wave_costs_a_whole_cta() {
    // SM 0 runs CTAs 0 and 132: 2 x 1000 ALU instructions of 2 cycles on each partition,
    // one after the other when only one CTA fits (128 KiB of shared memory), side by side
    // on the same pipes when both fit.
    let reserve = r#"smem: [Buffer(name: "r", dtype: BF16, shape: [64, 1024])],"#;
    for (extra, waves) in [(reserve, 2), ("", 1)] {
        let (k, p) = kernel("num_sms + 1", 1, extra, "Alu(1000)");
        let b = of(&k, &p);
        assert_eq!(b.waves, waves);
        assert_eq!((b.binding, b.cycles), ("alu", 4000));
        assert_eq!(b.unit("issue"), Some(2000.0));
        assert_eq!(b.total.pipes[0][pipe_index(Pipe::Alu)], 133 * 2000);
    }
}

const STREAM_TENSORS: &str = r#"tensors: [
        Tensor(name: "X", dtype: F32, shape: [1048576]),
        Tensor(name: "Y", dtype: F32, shape: [1048576]),
    ],"#;

/// 4 MiB of X read (and copied to Y when `copy`) by 256 CTAs of 4 warps with 16-byte
/// loads, 8 iterations of 4 warps x 512 B per CTA.
fn stream(copy: bool) -> (Kernel, Preset) {
    let addr = "((i * num_ctas + cta) * 4 + warp) * 512 + lane * 16";
    let store = if copy {
        format!(r#"StGlobal(tensor: "Y", addr: "{addr}", width: 16),"#)
    } else {
        String::new()
    };
    let program = format!(
        r#"Loop(var: "i", count: 8, body: [LdGlobal(tensor: "X", addr: "{addr}", width: 16), {store}])"#
    );
    kernel("256", 1, STREAM_TENSORS, &program)
}

#[test]
fn a_streaming_read_is_bound_by_hbm() {
    let (k, p) = stream(false);
    let b = of(&k, &p);
    let bytes = 4u64 << 20;
    assert_eq!((b.dram_read_bytes, b.dram_write_bytes), (bytes, 0));
    assert_eq!(b.total.l2_bytes, bytes);
    assert_eq!(b.total.port_bytes, bytes);
    let m = &p.memory;
    let per_cycle = m.hbm.bandwidth_gbs * m.hbm.efficiency * 1e9 / (p.clock.max_mhz * 1e6);
    assert_eq!(b.binding, "hbm");
    assert_eq!(b.cycles, (bytes as f64 / per_cycle).ceil() as u64);
    // At half the clock a cycle moves twice the bytes.
    let slow = bound(&k, &p, p.clock.max_mhz / 2.0).unwrap();
    assert!((slow.cycles as f64 - b.cycles as f64 / 2.0).abs() <= 1.0);
}

#[test]
fn writes_that_fit_in_l2_need_not_reach_hbm_during_the_kernel() {
    let (k, mut p) = stream(true);
    let bytes = 4u64 << 20;
    // A warp's 512 contiguous bytes are whole lines: Y is overwritten without being read.
    let b = of(&k, &p);
    assert_eq!((b.dram_read_bytes, b.dram_write_bytes), (bytes, 0));
    // With a 1 MiB L2, 3 MiB of Y must be written back before the end.
    p.memory.l2.bytes = 1 << 20;
    let small = of(&k, &p);
    assert_eq!(small.dram_write_bytes, 3 << 20);
}

#[test]
fn atomics_hand_out_work_round_robin() {
    // 2 CTAs claim 5 items: CTA 0 gets 0, 2, 4 and CTA 1 gets 1, 3.
    let (mut k, p) = kernel(
        "2",
        1,
        r#"counters: [Counter(name: "next")],"#,
        r#"Loop(var: "i", count: 100, body: [
            AtomicAdd(counter: "next", into: "t"),
            If(cond: "t >= 5", then: [Break]),
            Mufu(1),
        ])"#,
    );
    let b = of(&k, &p);
    assert_eq!(b.unit("mufu"), Some(3.0 * 8.0));
    assert_eq!(b.total.pipes[0][pipe_index(Pipe::Mufu)], 5 * 8);
    // One memory request per CTA and atomic (4 per CTA), whatever the warps per CTA.
    assert_eq!(b.total.l2_bytes, (4 + 3) * 4);
    // A counter starting at 3 leaves two items.
    k.counters[0].1 = 3;
    assert_eq!(of(&k, &p).total.pipes[0][pipe_index(Pipe::Mufu)], 2 * 8);
}

#[test]
fn tma_boxes_cost_port_and_traffic() {
    // A 64 x 64 bf16 box of a 64 x 104 tensor at column 64: 40 columns inside, 80 B per row.
    let (k, p) = kernel(
        "1",
        1,
        r#"tensors: [Tensor(name: "T", dtype: BF16, shape: [64, 104])],
           smem: [Buffer(name: "s", dtype: BF16, shape: [64, 64])],
           mbarriers: [MBarrier(name: "b", arrivals: 1)],"#,
        r#"If(cond: "warp == 0", then: [
            TmaLoad(tensor: "T", coords: [0, 64], dst: "s", bar: "b"),
            TmaStore(tensor: "T", coords: [0, 0], src: "s"),
        ])"#,
    );
    let b = of(&k, &p);
    let loaded = 64 * 80;
    // The load streams in by the fill path; the store reads its whole 8 KiB box through the
    // shared-memory port and sends it through the SM's port.
    assert_eq!(b.total.smem, 64);
    assert_eq!(b.total.fill_bytes, loaded);
    assert_eq!(b.total.port_bytes, 64 * 128);
    assert_eq!(b.total.store_bytes, 64 * 128);
    assert_eq!(b.total.tma, 2 * p.tma.issue_cycles);
}

#[test]
fn tma_stores_bind_on_their_own_path() {
    // 100 stores of an 8 KiB box from one SM: the store path (32 B/cycle on h100-sxm) takes
    // longer than the SM's port to L2 and the shared-memory reads.
    let (k, p) = kernel(
        "1",
        1,
        r#"tensors: [Tensor(name: "T", dtype: BF16, shape: [64, 64])],
           smem: [Buffer(name: "s", dtype: BF16, shape: [64, 64])],"#,
        r#"If(cond: "warp == 0", then: [
            Loop(var: "i", count: 100, body: [TmaStore(tensor: "T", coords: [0, 0], src: "s")]),
        ])"#,
    );
    let b = of(&k, &p);
    let store = 100.0 * 8192.0 / p.tma.store_bytes_per_cycle;
    assert_eq!(b.unit("tma_store"), Some(store));
    assert!(b.unit("l2_port").unwrap() < store);
    assert_eq!((b.binding, b.cycles), ("tma_store", store.ceil() as u64));
}

#[test]
fn walk_errors_are_reported_not_panicked() {
    let (k, p) = kernel(
        "1",
        1,
        r#"smem: [Buffer(name: "s", slots: 2, dtype: F32, shape: [32])],"#,
        r#"LdShared(buf: "s[warp]", addr: "lane * 4")"#,
    );
    let e = bound(&k, &p, 1830.0).unwrap_err().to_string();
    assert!(
        e.contains("CTA 0, warp w0.w2: slot 2 of `s` is out of range"),
        "{e}"
    );
    let (k, p) = kernel("1", 1, "", r#"Loop(var: "i", count: 2000000, body: [])"#);
    let e = bound(&k, &p, 1830.0).unwrap_err().to_string();
    assert!(
        e.contains("control-flow steps without an instruction"),
        "{e}"
    );
    let (k, p) = kernel("1", 1, "", r#"Loop(var: "i", count: 1000, body: [Fma(1)])"#);
    let e = bound_within(&k, &p, 1830.0, 500).unwrap_err().to_string();
    assert!(e.contains("the generic bound is unavailable"), "{e}");
    assert!(bound_within(&k, &p, 1830.0, 1 << 20).is_ok());
    assert!(bound(&k, &p, 0.0).is_err());
}
