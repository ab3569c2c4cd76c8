//! Thread-block clusters: placement on one GPC, TMA multicast, distributed shared memory,
//! remote mbarrier arrivals and the cluster barrier, with their errors.

use crate::common::{fixture, scenario, sets, sim, stdout_of, temp_scenario};
use sim::engine::{Config, Engine, RunStats, SimError};
use sim::gpu::preset::Preset;
use sim::run::{self, RunOptions};

fn run_file(path: &std::path::Path, pairs: &[(&str, i64)]) -> Result<RunStats, SimError> {
    let (kernel, preset) = run::load(path, &sets(pairs)).unwrap();
    Engine::new(&kernel, &preset, Config::default()).run()
}

fn twin(pairs: &[(&str, i64)]) -> RunStats {
    run_file(&scenario("calibration/cluster"), pairs).unwrap()
}

/// Cycles one more step of the twin's `key` loop takes: the slope between 1000 and 2000.
fn per_step(key: &str, pairs: &[(&str, i64)]) -> u64 {
    let at = |n: i64| {
        let mut p = pairs.to_vec();
        p.push((key, n));
        twin(&p).cycles
    };
    (at(2000) - at(1000)) / 1000
}

/// A multicast tile is read from L2 once for the whole cluster; unicast reads it once per CTA.
/// DRAM sees each tile once either way (the L2 keeps it for the other CTAs' reads).
#[test]
fn multicast_reads_each_tile_once_per_cluster() {
    for cluster in [2, 4] {
        let run = |mcast| {
            run_file(
                &fixture("cluster"),
                &[("cluster", cluster), ("mcast", mcast)],
            )
            .unwrap()
        };
        let (uni, multi) = (run(0), run(1));
        // 2 clusters x 8 k-tiles x 128 rows x 64 bf16.
        let tiles = 2 * 8 * 128 * 64 * 2;
        assert_eq!(multi.mem.l2_bytes, tiles, "cluster {cluster}");
        assert_eq!(
            uni.mem.l2_bytes,
            cluster as u64 * tiles,
            "cluster {cluster}"
        );
        assert_eq!(uni.mem.dram_read_bytes, multi.mem.dram_read_bytes);
        assert_eq!(multi.mem.dram_read_bytes, tiles);
        assert_eq!(uni.flops, multi.flops);
    }
}

/// A cluster's CTAs all run on one GPC: with the H100's GPCs of 18, 18 and six of 16 SMs, 8
/// clusters of 16 fit at once and each 18-SM GPC keeps 2 SMs idle.
#[test]
fn clusters_stay_on_one_gpc() {
    let p = Preset::builtin("h100-sxm").unwrap();
    assert_eq!(p.cluster.gpc_sms, [18, 18, 18, 18, 18, 18, 16, 8]);
    let wide = [("cluster", 16), ("clusters", 8), ("n", 256)];
    let s = run_file(&fixture("cluster"), &wide).unwrap();
    let idle: Vec<usize> = s
        .ctas_per_sm_run
        .iter()
        .enumerate()
        .filter(|(_, &c)| c == 0)
        .map(|(sm, _)| sm)
        .collect();
    // Seven clusters at once, one a GPC of 16 or more SMs (two idle in each of 18), the eighth
    // after one of them; the GPC of 8 SMs never holds one.
    assert_eq!(
        idle,
        [34, 35, 52, 53, 70, 71, 88, 89, 106, 107, 124, 125, 126, 127, 128, 129, 130, 131]
    );
    let (kernel, preset) = run::load(&fixture("cluster"), &sets(&wide)).unwrap();
    let report = run::simulate("cluster", &kernel, &preset, &RunOptions::default()).unwrap();
    let c = report.clusters.as_ref().unwrap();
    assert_eq!((c.size, c.active, c.idle_slots), (16, 7, 20));
    // 20 clusters of 16 at 7 a wave: 3 waves.
    let out = stdout_of(&[
        "run",
        fixture("cluster").to_str().unwrap(),
        "--set",
        "cluster=16",
        "--set",
        "clusters=20",
        "--set",
        "n=256",
        "--no-trace",
    ]);
    assert!(
        out.contains("320 CTA(s) on 124 of 132 SMs, 1 per SM (limit: regs), 3 wave(s)"),
        "{out}"
    );
    assert!(
        out.contains("clusters    16 CTAs each, 7 at once on the GPU's GPCs (20 CTA slots idle"),
        "{out}"
    );
}

/// A remote shared-memory load costs the preset's DSMEM latency plus a cycle on the link and
/// one on the other SM's port; a local one, or one through the CTA's own cluster address, the
/// shared-memory latency. The relaxed cluster barrier releases its warps `barrier_latency` (and
/// `barrier_per_warp` a warp of a CTA) after the last arrival, the default one after their
/// memory barriers as well; two threads
/// handing an mbarrier phase back and forth by remote arrivals take two remote arrivals and two
/// wake-ups a round trip, and with `.release.cluster` two memory barriers (and the arrives'
/// own cycles, which follow them).
#[test]
fn remote_accesses_cost_the_preset_latencies() {
    let p = Preset::builtin("h200-sxm").unwrap();
    let c = &p.cluster;
    let chase = |place| per_step("hops", &[("test", 0), ("where", place)]);
    assert_eq!(chase(2), c.dsmem_latency + 2);
    assert_eq!(chase(0), p.smem.latency + 1);
    assert_eq!(chase(1), chase(0));
    let b = &p.barriers;
    let barrier = |relaxed| per_step("iters", &[("test", 2), ("relaxed", relaxed)]);
    // The twin's CTAs have 4 warps, one a partition.
    let release = c.barrier_latency + 4 * c.barrier_per_warp;
    assert_eq!(barrier(1), release);
    assert_eq!(barrier(0), b.membar_cycles + release);
    let hand_off = c.remote_arrive_latency + b.mbarrier_latency + 1;
    let ping_pong = |scope| per_step("iters", &[("test", 3), ("scope", scope)]);
    assert_eq!(ping_pong(0), 2 * hand_off);
    assert_eq!(ping_pong(1), 2 * (hand_off + b.membar_cycles));
}

/// DSMEM bandwidth is the requesting SM's link: 32 warps storing to their peer's shared memory
/// move `dsmem_bytes_per_cycle` an SM, whether one CTA writes or both write each other; their
/// loads come within 6% of it (two in flight a warp), and one warp's loads to a fraction.
#[test]
fn distributed_shared_memory_moves_at_the_link_rate() {
    let p = Preset::builtin("h200-sxm").unwrap();
    let rate = |warps: i64, pairs: &[(&str, i64)]| {
        let at = |rounds: i64| {
            let mut q = pairs.to_vec();
            let threads = 128 * ((warps + 3) / 4);
            q.extend([
                ("test", 1),
                ("warps", warps),
                ("threads", threads),
                ("rounds", rounds),
            ]);
            twin(&q).cycles as f64
        };
        // warps x 32 lanes x 8 accesses x 16 B a round.
        (warps as f64 * 32.0 * 8.0 * 16.0 * 64.0) / (at(128) - at(64))
    };
    let link = p.cluster.dsmem_bytes_per_cycle;
    for pairs in [&[("st", 1)][..], &[("st", 1), ("both", 1)]] {
        let r = rate(32, pairs);
        assert!((r - link).abs() / link < 0.01, "{pairs:?}: {r} B/cycle");
    }
    for pairs in [&[][..], &[("both", 1)]] {
        let r = rate(32, pairs);
        assert!(r < link && r > 0.94 * link, "{pairs:?}: {r} B/cycle");
    }
    // One warp: 8 loads of 512 B a round, two at a time, each a DSMEM latency away.
    let one = rate(1, &[]);
    assert!(one < 0.25 * link, "{one} B/cycle");
}

/// The mistakes a cluster kernel can make, each with its message.
#[test]
fn cluster_errors_name_the_limit_the_rank_or_the_barrier() {
    let cluster = fixture("cluster");
    let path = cluster.to_str().unwrap();
    let fails = |args: &[&str], message: &str| {
        let out = sim(args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(message), "{args:?}: {err}");
    };
    fails(
        &["check", path, "--set", "cluster=32", "--set", "n=256"],
        "a cluster of 32 CTAs does not fit: h100-sxm places at most 16 CTAs in a cluster (8 portably, more with the non-portable opt-in)\n  --> ",
    );
    fails(
        &["check", path, "--gpu", "a100-sxm"],
        "a100-sxm has no thread-block clusters (cluster size 2)",
    );
    let text = std::fs::read_to_string(&cluster).unwrap();
    let edited = |name: &str, from: &str, to: &str| {
        assert!(text.contains(from), "{from}");
        temp_scenario(name, &text.replacen(from, to, 1))
    };
    let grid = edited(
        "cluster_grid.ron",
        "grid: \"clusters * cluster\"",
        "grid: 3",
    );
    fails(
        &["check", grid.to_str().unwrap()],
        "the grid of 3 CTAs is not a whole number of clusters of 2",
    );
    let mask = edited(
        "cluster_mask.ron",
        "multicast: \"(1 << cluster) - 1\"",
        "multicast: \"8\"",
    );
    fails(
        &["check", mask.to_str().unwrap()],
        "warp producer0.w0: multicast mask 0x8 names no CTA or a rank outside the cluster of 2 CTAs\n  = in role `producer`: program[0] if.then[0] loop(kb).body[3] if.then[0] tma_load",
    );
    let rank = edited("cluster_rank.ron", "cta: \"r\"", "cta: \"r + 1\"");
    fails(
        &["check", rank.to_str().unwrap()],
        "cluster rank 2 is out of range: the cluster has 2 CTAs (0..2)",
    );
    // Eight SMs in one GPC hold no cluster of 16 at one CTA an SM.
    let small = edited(
        "cluster_small.ron",
        "    gpu: \"h100-sxm\",",
        "    gpu: \"h100-sxm\",\n    gpu_overrides: {\"sm.count\": 8},",
    );
    fails(
        &["check", small.to_str().unwrap(), "--set", "cluster=16", "--set", "n=256", "--set", "clusters=1"],
        "a cluster of 16 CTAs cannot be placed: a cluster runs on one GPC, and the largest holds 8 of its CTAs (8 SMs, 1 CTA(s) an SM)",
    );
    // Rank 1 leaves at once; rank 0 arrives on its barrier later.
    let gone = temp_scenario(
        "cluster_gone.ron",
        r#"Scenario(
    name: "gone",
    gpu: "h100-sxm",
    kernel: Kernel(
        grid: 2,
        cluster: 2,
        regs_per_thread: 32,
        mbarriers: [MBarrier(name: "b", arrivals: 1)],
        roles: [Role(name: "a", regs: 32, program: [
            If(cond: "cluster_rank == 0 && warp == 0", then: [
                Stall(1000),
                Arrive(bar: "b[0]", elect: true, cta: 1),
            ]),
        ])],
    ),
)"#,
    );
    fails(
        &["check", gone.to_str().unwrap()],
        "mbarrier.arrive on CTA rank 1 of the cluster, which has exited (its shared memory is gone: a cluster barrier before exit keeps it)",
    );
}

/// A warp that never reaches the cluster barrier leaves the others waiting: the deadlock report
/// says how many of the cluster's running warps arrived, and names each CTA's rank.
#[test]
fn a_cluster_barrier_deadlock_counts_the_arrivals() {
    let text = r#"Scenario(
    name: "stuck",
    gpu: "h100-sxm",
    kernel: Kernel(
        grid: 2,
        cluster: 2,
        regs_per_thread: 32,
        mbarriers: [MBarrier(name: "never", arrivals: 1)],
        roles: [
            Role(name: "a", regs: 32, program: [ClusterArrive, ClusterWait]),
            Role(name: "b", regs: 32, program: [Wait(bar: "never[0]", parity: 0)]),
        ],
    ),
)"#;
    let path = temp_scenario("cluster_stuck.ron", text);
    let out = sim(&["check", path.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("CTA 1 (cluster rank 1) warp a0.w3 at role `a`: program[1] barrier.cluster.wait: waits at the cluster barrier: 8 of the cluster's 16 running warps arrived"),
        "{err}"
    );
    let lonely = text.replace("[ClusterArrive, ClusterWait]", "[ClusterWait]");
    let path = temp_scenario("cluster_lonely.ron", &lonely);
    let out = sim(&["check", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("barrier.cluster.wait without a barrier.cluster.arrive before it"),
        "{err}"
    );
}

/// Split-K over a cluster: each extra CTA shortens the main loop, and rank 0's DSMEM reads of
/// the partials (64 KiB each at the link's rate) add up until 8 CTAs are slower than 4.
#[test]
fn split_k_over_a_cluster_gains_until_the_reduction_costs_more() {
    let cycles = |splits| {
        run::run_file(&scenario("cluster_splitk"), &sets(&[("splits", splits)]))
            .unwrap()
            .cycles
    };
    let c: Vec<u64> = [1, 2, 4, 8].into_iter().map(cycles).collect();
    assert_eq!(c, [68_734, 40_407, 31_277, 38_071]);
    // From 4 CTAs to 8 the main loop saves about a quarter of one CTA's, while rank 0 reads 4
    // more partials of 64 KiB through its link.
    let link = Preset::builtin("h100-sxm")
        .unwrap()
        .cluster
        .dsmem_bytes_per_cycle;
    let reads = 4.0 * 65536.0 / link;
    let saved = (c[0] as f64) / 4.0 - (c[0] as f64) / 8.0;
    assert!(reads > saved && c[3] > c[2], "{c:?}");
}

/// A 2x1 cluster multicasting B halves B's L2 reads of the whole-GPU GEMM; A's are unchanged.
#[test]
fn a_2x1_cluster_gemm_multicasts_b() {
    let size = [("m", 2048), ("n", 2048), ("k", 2048)];
    let run = |cluster_m| {
        let mut p = size.to_vec();
        p.push(("cluster_m", cluster_m));
        run_file(&scenario("gemm"), &p).unwrap()
    };
    let (one, two) = (run(1), run(2));
    // Each of the 16 x 8 tiles reads its A rows (128 x 2048) and B columns (256 x 2048) once.
    let (a, b) = (128 * 8 * 2048 * 2 * 16, 256 * 16 * 2048 * 2 * 8);
    let c_bytes = 2048 * 2048 * 2;
    assert_eq!(one.mem.l2_bytes, a + b + c_bytes);
    assert_eq!(two.mem.l2_bytes, a + b / 2 + c_bytes);
    assert_eq!(one.flops, two.flops);
}

/// The hazards of a cluster kernel: a remote arrive beyond the barrier's count names the rank
/// it went to; reading a multicast stage before the CTA's own wait on it is a read before the
/// data arrived, reported in the reading CTA; releasing a stage to the other CTAs before the
/// wait_group covering its reads lets their multicast overwrite it (write after read, naming
/// the reader's rank).
#[test]
fn remote_arrivals_and_multicast_fills_are_checked() {
    let over = temp_scenario(
        "cluster_over.ron",
        r#"Scenario(
    name: "over",
    gpu: "h100-sxm",
    kernel: Kernel(
        grid: 2,
        cluster: 2,
        regs_per_thread: 32,
        mbarriers: [MBarrier(name: "b", arrivals: 1)],
        roles: [Role(name: "a", regs: 32, program: [
            If(cond: "cluster_rank == 0 && warp == 0", then: [Arrive(bar: "b[0]", cta: 1)]),
            ClusterArrive,
            ClusterWait,
        ])],
    ),
)"#,
    );
    let out = sim(&["check", over.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cycle 263: CTA 0, warp a0.w0: on cluster rank 1's mbarrier (a remote arrive): mbarrier b[0]: over-arrival: 32 arrivals on a phase with only 1 pending (of 1 expected)\n  = in role `a`: program[0] if.then[0] mbarrier.arrive"),
        "{err}"
    );
    let text = std::fs::read_to_string(fixture("cluster")).unwrap();
    let wait = "                    Wait(bar: \"full[s]\", parity: \"(kb / stages) & 1\"),\n";
    assert!(text.contains(wait));
    let early = temp_scenario("cluster_early.ron", &text.replacen(wait, "", 1));
    let out = sim(&["check", early.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "wgmma reads sB[0] before waiting for the phase of full[0] that its TMA load completes"
        ),
        "{err}"
    );
    let release = "                    WgmmaWait(0),
                    If(cond: \"mcast == 1\", then: [
                        Loop(var: \"r\", count: \"cluster\", body: [
                            Arrive(bar: \"empty[s]\", elect: true, cta: \"r\"),
                        ]),
";
    let remote_first = "                    If(cond: \"mcast == 1\", then: [
                        Loop(var: \"r\", count: \"cluster\", body: [
                            If(cond: \"r != cluster_rank\", then: [Arrive(bar: \"empty[s]\", elect: true, cta: \"r\")]),
                        ]),
                        WgmmaWait(0),
                        Arrive(bar: \"empty[s]\", elect: true),
";
    assert!(text.contains(release));
    let war = temp_scenario("cluster_war.ron", &text.replacen(release, remote_first, 1));
    let out = sim(&["check", war.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("hazard at cycle 1346, SM 0, CTA 0, warp producer0.w0: TMA load overwrites sB[0] while the wgmma reads of it by consumer0.w0 (cluster rank 1) are not known to be complete"),
        "{err}"
    );
}
