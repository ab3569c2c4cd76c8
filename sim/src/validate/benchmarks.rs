//! Every microbenchmark row of the validation, in table order: its group, the measured row it
//! reads, the twin and the parameters that reproduce it, and its metric.

use super::spec::{Measured, Metric, Spec, TwinRole};

/// Bytes one pass of gmem.ron's test 1 or 2 reads: every CTA reads whole batches of 256
/// warp-loads of 512 bytes, of the whole buffer (`same`) or of its slice.
fn pass_bytes(ctas: i64, kib: i64, same: bool) -> f64 {
    let loads = if same { kib * 2 } else { kib * 2 / ctas } / 256 * 256;
    (ctas * loads * 512) as f64
}

/// Cycles of stall counts tma_box.cu's bursts spend a box beyond the ISA's TmaLoad
/// (`tma.thread_cycles`, 44): 51 in 12 instructions, the box's address math into uniform
/// registers (calibration/sass.py tma_box burst_kernel).
const TMA_BOX_EXTRA: i64 = 7;

/// The same for tma.cu's loop of scattered 1-row boxes: 58.75 cycles a box (calibration/sass.py
/// tma tma_issue).
const TMA_CU_EXTRA: i64 = 15;

/// Cycles of stall counts in a trip of tma.cu's stream loop that none of the twin's ops (wait,
/// arrive.expect_tx, TmaLoad) stand for: the loop's test, increment and branch and the slot's
/// address, 46 of the trip's 135 (calibration/sass.py tma tma_streamILi4ELi16384E), counted as
/// mbar_cost.ron's streams count theirs.
const TMA_STREAM_EXTRA: i64 = 46;

fn sets(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// The label's tail for an FA3 variant with ping-pong `pp` and intra-warpgroup overlap `io`
/// (1 on, 0 off): the techniques it goes without.
fn fa3_without(pp: i64, io: i64) -> String {
    let mut tail = String::new();
    if pp == 0 {
        tail.push_str(", no ping-pong");
    }
    if io == 0 {
        tail.push_str(", no intra-WG overlap");
    }
    tail
}

/// The tma twin's bursts from `warps` warps (test 3 loads, 4 stores) of `rows`-row boxes.
fn warps_burst(test: i64, rows: i64, warps: i64, extra: i64) -> Vec<(String, i64)> {
    sets(&[
        ("test", test),
        ("rows", rows),
        ("streams", warps),
        ("warm", 1),
        ("region", 65536),
        ("extra", extra),
    ])
}

/// Cycles a box: the slope over the boxes a warp issues, `lo` to `hi`, over `per` boxes.
fn n_slope(lo: i64, hi: i64, per: f64) -> Metric {
    Metric::Slope {
        key: "n",
        lo,
        hi,
        per,
        minus: 0.0,
    }
}

/// Every row of the validation, in table order.
/// Cycles per wgmma of wgmma.ron's `wgs` warpgroups: the slope between 8 and 16 groups of 32.
fn per_wgmma(wgs: i64) -> Metric {
    Metric::Slope {
        key: "iters",
        lo: 8,
        hi: 16,
        per: 8.0 * 32.0 * wgs as f64,
        minus: 0.0,
    }
}

pub(super) fn specs() -> Vec<Spec> {
    let mut s = Vec::new();
    let mut add = |group, name: String, unit, program, measured, twin, sets, metric| {
        s.push(Spec {
            group,
            name,
            unit,
            program,
            measured,
            twin,
            sets,
            metric,
        })
    };
    let v = |test: &'static str, param: &str| Measured::Value(test, param.to_string());

    // wgmma: slope between 8 and 16 iterations of 32 wgmmas per warpgroup.
    for n in [8, 16, 24, 32, 48, 64, 96, 128, 192, 256] {
        for (form, rs) in [("ss", 0), ("rs", 1)] {
            for wgs in [1, 2] {
                let test = match (rs, wgs) {
                    (0, 1) => "wgmma_ss_1wg",
                    (0, _) => "wgmma_ss_2wg",
                    (_, 1) => "wgmma_rs_1wg",
                    _ => "wgmma_rs_2wg",
                };
                let group = if rs == 1 && n < 32 {
                    "wgmma_rs_floor"
                } else {
                    "wgmma"
                };
                add(
                    group,
                    format!("{form} {wgs}wg N={n}"),
                    "cycles/wgmma",
                    "wgmma",
                    v(test, &n.to_string()),
                    "wgmma",
                    sets(&[("n", n), ("rs", rs), ("warpgroups", wgs)]),
                    per_wgmma(wgs),
                );
            }
        }
    }
    // wgmma by operand type (wgmma_dtype.cu on an H100, same SM as the H200): SS m64nNk32 e4m3
    // and m64nNk8 tf32, back to back in groups of 32, as the bf16 rows above.
    for (dtype, bytes) in [("e4m3", 1i64), ("tf32", 4)] {
        for n in [64i64, 128, 256] {
            for wgs in [1i64, 2] {
                add(
                    "wgmma_dtype",
                    format!("{dtype} ss {wgs}wg N={n}"),
                    "cycles/wgmma",
                    "wgmma_dtype",
                    v("wgmma_dtype", &format!("{dtype}_n{n}_{wgs}wg")),
                    "wgmma",
                    sets(&[("n", n), ("warpgroups", wgs), ("ab_bytes", bytes)]),
                    per_wgmma(wgs),
                );
            }
        }
    }
    // SS wgmma beside a TMA stream into slots it does not read (smem_port.cu), at the
    // highest-bandwidth stream, boxes of 256 rows from 1 issuing lane in each of 4 warps (4
    // producer warps in the model, which issues TMA per warp): cycles per wgmma from the slope
    // between 16 and 32 groups of 32, the stream sized to end before the wgmmas; and the
    // stream's bytes per cycle beside them, from the slope between 16 and 32 boxes per
    // producer, the wgmmas sized to outlast 32 boxes at 52 B/cycle.
    let with_stream =
        |own: &[(&str, i64)]| sets(&[own, &[("rows", 256), ("producers", 4)]].concat());
    for n in [32i64, 64, 128, 256] {
        for wgs in [1i64, 2] {
            let (ss, with) = if wgs == 1 {
                ("ss_tma_1wg", "tma_with_1wg")
            } else {
                ("ss_tma_2wg", "tma_with_2wg")
            };
            let param = format!("n{n}_b256_p1x4");
            add(
                "smem_port",
                format!("ss {wgs}wg N={n} + TMA stream"),
                "cycles/wgmma",
                "smem_port",
                v(ss, &param),
                "smem_port",
                with_stream(&[("test", 0), ("n", n), ("warpgroups", wgs)]),
                Metric::Slope {
                    key: "iters",
                    lo: 16,
                    hi: 32,
                    per: 16.0 * 32.0 * wgs as f64,
                    minus: 0.0,
                },
            );
            // An SS wgmma's pipe time (the measured ss_alone rate), and a stream's bytes.
            let pipe = (n / 2).max(16 + n / 4);
            let bytes = |boxes: i64| boxes * 4 * 256 * 128;
            let iters = (bytes(32) as f64 / (52.0 * 32.0 * (wgs * pipe) as f64)).ceil() as i64;
            add(
                "tma_beside_wgmma",
                format!("tma_with {wgs}wg N={n}"),
                "B/cycle/SM",
                "smem_port",
                v(with, &param),
                "smem_port",
                with_stream(&[("test", 1), ("n", n), ("warpgroups", wgs), ("iters", iters)]),
                Metric::SlopeRate {
                    key: "loads",
                    lo: 16,
                    hi: 32,
                    amount: bytes(16) as f64,
                },
            );
        }
    }
    for (test, op) in [("ffma_rate", 0), ("ex2_rate", 1)] {
        add(
            "pipes",
            test.to_string(),
            "warp-inst/cycle/SM",
            "core",
            v(test, "1024"),
            "pipes",
            sets(&[("op", op)]),
            Metric::SlopeRate {
                key: "iters",
                lo: 64,
                hi: 128,
                amount: 32.0 * 64.0 * 8.0,
            },
        );
    }
    // mma.sync m16n8k16 per cycle per SM (calibration/mma_sync.cu): w warps of 8 independent
    // chains each, one macro of 8 x iters in the twin.
    for w in [1i64, 4, 8, 16] {
        add(
            "pipes",
            format!("mma_rate w{w}"),
            "HMMA/cycle/SM",
            "mma_sync",
            v("mma_rate", &format!("w{w}")),
            "pipes",
            sets(&[("op", 2), ("warpgroups", (w + 3) / 4), ("warps", w)]),
            Metric::SlopeRate {
                key: "iters",
                lo: 64,
                hi: 128,
                amount: (w * 64 * 8) as f64,
            },
        );
    }
    // Shared-memory wavefronts: cycles per warp-load over the conflict-free 4-byte load's.
    let base = sets(&[("width", 4), ("stride", 4)]);
    for (w, st) in [
        (4, 0),
        (4, 4),
        (4, 8),
        (4, 12),
        (4, 16),
        (4, 32),
        (4, 64),
        (4, 128),
        (4, 256),
        (8, 8),
        (8, 16),
        (16, 16),
        (16, 32),
        (16, 256),
    ] {
        let p = format!("w{w}_s{st}");
        add(
            "smem_banks",
            format!("smem {w} B, stride {st} B"),
            "wavefronts",
            "core",
            v("smem_degree", &p),
            "smem",
            sets(&[("width", w), ("stride", st)]),
            Metric::Degree {
                key: "iters",
                lo: 64,
                hi: 128,
                base: base.clone(),
            },
        );
    }
    // Broadcasts: every lane the same 8 or 16 bytes (core.cu's later build, on an H100).
    for w in [8i64, 16] {
        let p = format!("w{w}_s0");
        add(
            "smem_banks",
            format!("smem {w} B, stride 0 B (broadcast)"),
            "wavefronts",
            "core_bcast",
            v("smem_degree", &p),
            "smem",
            sets(&[("width", w), ("stride", 0)]),
            Metric::Degree {
                key: "iters",
                lo: 64,
                hi: 128,
                base: base.clone(),
            },
        );
    }
    // Bandwidths.
    add(
        "bandwidth",
        "smem_bw (16 B loads)".into(),
        "B/cycle/SM",
        "core",
        v("smem_bw", "16"),
        "smem",
        sets(&[("width", 16), ("stride", 16)]),
        Metric::SlopeRate {
            key: "iters",
            lo: 64,
            hi: 128,
            amount: 32.0 * 64.0 * 512.0,
        },
    );
    for n in [1i64, 2, 4, 8, 16, 33, 66, 132] {
        // Every CTA reads one buffer: a larger one for many SMs, as the lines of a small one
        // crowd onto few slices at once (at 132 SMs 2 and 4 MiB give 7,233 and 7,250 B/cycle).
        let kib = if n >= 33 { 2048 } else { 1024 };
        add(
            "bandwidth",
            format!("l2_read {n} SMs"),
            "B/cycle",
            "mem_bw",
            v("l2_read", &n.to_string()),
            "gmem",
            sets(&[
                ("test", 1),
                ("ctas", n),
                ("kib", kib),
                ("same", 1),
                ("sass", 1),
            ]),
            Metric::SlopeRate {
                key: "passes",
                lo: 1,
                hi: 2,
                amount: pass_bytes(n, kib, true),
            },
        );
    }
    for n in [1i64, 2, 4, 8, 16, 33, 66, 132] {
        let group = if n >= 66 { "bandwidth" } else { "hbm_few_sms" };
        add(
            group,
            format!("hbm_read {n} SMs"),
            "B/cycle",
            "mem_bw",
            v("hbm_read", &n.to_string()),
            "gmem",
            sets(&[
                ("test", 1),
                ("ctas", n),
                ("kib", n * 2048),
                ("same", 0),
                ("sass", 1),
            ]),
            Metric::SingleRate {
                amount: pass_bytes(n, n * 2048, false),
            },
        );
    }
    add(
        "hbm_write_mix",
        "hbm_copy 132 SMs".into(),
        "B/cycle",
        "mem_bw",
        v("hbm_copy", "132"),
        "gmem",
        // The slope between two sizes leaves out the dirty lines still in L2 at the end, which
        // the model counts but does not time; the CUDA kernel copies 4 GiB.
        sets(&[("test", 2), ("ctas", 132), ("same", 0)]),
        Metric::SlopeRate {
            key: "kib",
            lo: 132 * 1024,
            hi: 132 * 2048,
            amount: 2.0 * (pass_bytes(132, 132 * 2048, false) - pass_bytes(132, 132 * 1024, false)),
        },
    );
    // 132 CTAs mixing streaming loads and stores (memsys.cu hbm_mix): R loads and 4 - R stores
    // per 4 positions, every position touched once; the slope between two sizes as the copy's.
    for reads in [4i64, 3, 2, 1, 0] {
        add(
            "hbm_write_mix",
            format!("hbm_mix r{reads}w{}", 4 - reads),
            "B/cycle",
            "memsys",
            v("hbm_mix", &format!("r{reads}w{}", 4 - reads)),
            "gmem",
            sets(&[("test", 3), ("ctas", 132), ("same", 0), ("reads", reads)]),
            Metric::SlopeRate {
                key: "kib",
                lo: 132 * 1024,
                hi: 132 * 2048,
                amount: pass_bytes(132, 132 * 2048, false) - pass_bytes(132, 132 * 1024, false),
            },
        );
    }
    // Isolated reads at random addresses: the bytes DRAM moves over the bytes asked for
    // (sector.cu under Nsight Compute; the twin asks for 132 x 1024 x 8 units).
    for bytes in [32i64, 64] {
        add(
            "dram_granularity",
            format!("sector_dram_ratio {bytes} B"),
            "x",
            "sector",
            v("sector_dram_ratio", &bytes.to_string()),
            "sector",
            sets(&[("bytes", bytes)]),
            Metric::DramPerAsked {
                asked: (132 * 1024 * 8 * bytes) as f64,
            },
        );
    }
    // One SM with T threads x U loads of 16 B in flight (memsys.cu inflight_hbm, inflight_l2):
    // from DRAM the slope between 32 and 64 iterations of fresh data, from L2 between one and
    // two passes over 32 iterations' region.
    for threads in [32i64, 64, 128, 256, 512, 1024] {
        for unroll in [1i64, 2, 4, 8] {
            let param = format!("t{threads}_u{unroll}");
            let bytes = (threads * unroll * 16 * 32) as f64;
            let own = sets(&[("warps", threads / 32), ("unroll", unroll)]);
            add(
                "inflight",
                format!("inflight_hbm {param}"),
                "B/cycle",
                "memsys",
                v("inflight_hbm", &param),
                "inflight",
                own.clone(),
                Metric::SlopeRate {
                    key: "iters",
                    lo: 32,
                    hi: 64,
                    amount: bytes,
                },
            );
            add(
                "inflight",
                format!("inflight_l2 {param}"),
                "B/cycle",
                "memsys",
                v("inflight_l2", &param),
                "inflight",
                own,
                Metric::SlopeRate {
                    key: "passes",
                    lo: 1,
                    hi: 2,
                    amount: bytes,
                },
            );
        }
    }
    // Footprints of k x 16.5 MiB: 132 CTAs reading whole 128 KiB batches each; compared with the
    // measured footprint of k x 16 MiB.
    for k in [1i64, 2, 3, 4, 8] {
        let (mib, kib) = (16 * k, 16896 * k);
        let group = if k >= 4 { "l2_capacity" } else { "l2_disjoint" };
        add(
            group,
            format!("l2_footprint {mib} MiB"),
            "B/cycle",
            "mem",
            v("l2_footprint", &mib.to_string()),
            "gmem",
            sets(&[
                ("test", 1),
                ("ctas", 132),
                ("kib", kib),
                ("same", 0),
                ("sass", 2),
            ]),
            Metric::SlopeRate {
                key: "passes",
                lo: 1,
                hi: 2,
                amount: pass_bytes(132, kib, false),
            },
        );
    }
    for n in [1i64, 2, 4, 8, 16, 33, 66, 132] {
        // The CUDA kernel's 32 MiB buffer, split among the CTAs; the slope between 2 and 4
        // passes, so that the cold first pass's fills (still landing when a small slice's
        // second pass starts) stay out of it.
        add(
            if n >= 132 {
                "l2_disjoint"
            } else {
                "l2_few_sms"
            },
            format!("l2_disjoint {n} SMs"),
            "B/cycle",
            "mem",
            v("l2_disjoint", &n.to_string()),
            "gmem",
            sets(&[
                ("test", 1),
                ("ctas", n),
                ("kib", 32768),
                ("same", 0),
                ("sass", 2),
            ]),
            Metric::SlopeRate {
                key: "passes",
                lo: 2,
                hi: 4,
                amount: 2.0 * pass_bytes(n, 32768, false),
            },
        );
    }
    // Latencies.
    for (test, op, program, param) in [
        ("ffma_dep", 0, "core", "32"),
        ("ex2_dep", 1, "core", "32"),
        ("mma_dep", 2, "mma_sync", "1"),
    ] {
        add(
            "latency",
            test.to_string(),
            "cycles",
            program,
            v(test, param),
            "pipes",
            sets(&[("op", op), ("chains", 1), ("warpgroups", 1)]),
            Metric::per_iteration(64, 0.0),
        );
    }
    // Chases: each hop is a load and the Alu(1) that waits for it; the Alu's issue slot is
    // not part of the load-to-use latency.
    add(
        "latency",
        "smem_chase".into(),
        "cycles",
        "core",
        v("smem_chase", "1"),
        "smem",
        sets(&[("chase", 1)]),
        Metric::per_iteration(64, 1.0),
    );
    add(
        "latency",
        "l2_chase (hit)".into(),
        "cycles",
        "mem",
        v("l2_chase", "2048"),
        "gmem",
        sets(&[("test", 0), ("hops", 1024)]),
        Metric::Slope {
            key: "passes",
            lo: 1,
            hi: 2,
            per: 1024.0,
            minus: 1.0,
        },
    );
    add(
        "latency",
        "hbm_chase (miss)".into(),
        "cycles",
        "mem",
        v("hbm_chase", "2048"),
        "gmem",
        sets(&[("test", 0), ("hops", 1024), ("passes", 1)]),
        Metric::Single {
            per: 1024.0,
            minus: 1.0,
        },
    );
    // The L1 data cache (l1_cache.cu on an H100, the same SM): one thread's chase over `kib`
    // KiB, the slope between 1 and 2 passes per hop, less the Alu's issue slot, as l2_chase.
    for (test, cg, smem, label) in [
        ("l1_chase", 0i64, 0i64, "plain"),
        ("l1_chase_cg", 1, 0, ".cg"),
        ("l1_chase_smem", 0, 1, "plain, 228 KB shared"),
    ] {
        for kib in [8i64, 16, 32, 64, 96, 128, 160, 192, 224, 256, 384] {
            add(
                "l1_cache",
                format!("chase {kib} KiB, {label}"),
                "cycles",
                "l1_cache",
                v(test, &kib.to_string()),
                "l1",
                sets(&[("kib", kib), ("cg", cg), ("smem", smem)]),
                Metric::Slope {
                    key: "passes",
                    lo: 1,
                    hi: 2,
                    per: (kib * 8) as f64,
                    minus: 1.0,
                },
            );
        }
    }
    for n in [8, 16, 24, 32, 48, 64, 96, 128, 192, 256] {
        for (form, rs) in [("ss", 0), ("rs", 1)] {
            add(
                "latency",
                format!("wgmma {form} latency N={n}"),
                "cycles",
                "wgmma",
                v(
                    if rs == 0 {
                        "wgmma_ss_lat"
                    } else {
                        "wgmma_rs_lat"
                    },
                    &n.to_string(),
                ),
                "wgmma",
                sets(&[("n", n), ("rs", rs), ("per", 1), ("ks", 1)]),
                Metric::per_iteration(64, 0.0),
            );
        }
    }
    // wgmma in flight (smem_port.cu): one warpgroup, k back-to-back wgmmas, commit, wait_group
    // 0; until the wait returns (slope between 8 and 16 batches), and from the 1st issue to
    // the k-th: the chip's time to the k-th issue less its time to the 1st (both include the
    // fence and the clock reads), the run with k wgmmas before a fixed FFMA tail less the run
    // with 1.
    for n in [64i64, 128, 256] {
        let (done, issue) = match n {
            64 => ("inflight_done_n64", "inflight_issue_n64"),
            128 => ("inflight_done_n128", "inflight_issue_n128"),
            _ => ("inflight_done_n256", "inflight_issue_n256"),
        };
        for (k, param) in [
            (1i64, "1"),
            (2, "2"),
            (4, "4"),
            (8, "8"),
            (16, "16"),
            (32, "32"),
        ] {
            add(
                "wgmma_in_flight",
                format!("inflight_done N={n} k={k}"),
                "cycles",
                "smem_port",
                v(done, param),
                "smem_port",
                sets(&[("test", 2), ("n", n), ("k", k)]),
                Metric::per_iteration(8, 0.0),
            );
            if k == 1 {
                continue;
            }
            add(
                "wgmma_issue",
                format!("inflight_issue N={n} 1st to k={k}"),
                "cycles",
                "smem_port",
                Measured::Slope(issue, "1".into(), param.to_string(), 1.0),
                "smem_port",
                sets(&[
                    ("test", 2),
                    ("n", n),
                    ("iters", 0),
                    ("issue", 1),
                    ("tail", 1024),
                ]),
                Metric::Slope {
                    key: "k",
                    lo: 1,
                    hi: k,
                    per: 1.0,
                    minus: 0.0,
                },
            );
        }
    }
    add(
        "latency",
        "mbarrier round trip".into(),
        "cycles",
        "core",
        v("mbar_pingpong", "try_wait"),
        "barriers",
        sets(&[("test", 1)]),
        Metric::per_iteration(64, 0.0),
    );
    for rows in [1i64, 16, 128] {
        for (test, step) in [("tma_lat_l2", 0), ("tma_lat_hbm", 8192)] {
            add(
                "latency",
                format!("{test} {rows} rows"),
                "cycles",
                "tma",
                v(test, &rows.to_string()),
                "tma",
                sets(&[("test", 0), ("rows", rows), ("step", step)]),
                Metric::per_iteration(16, 0.0),
            );
        }
    }
    // One thread's TMA boxes from L2 (calibration/tma_box.cu): a box alone and a pair on two
    // mbarriers (the second's wait), contiguous rows (c) or a GEMM operand's k-tile box with
    // the 128-byte swizzle (s), which the model tells apart only by its fill rate; and a
    // burst's cost per box (the slope over the boxes of one burst on one mbarrier).
    let swz = |kind: &str| if kind == "s" { 128 } else { 0 };
    for kind in ["c", "s"] {
        for rows in [1i64, 32, 64, 128, 256] {
            for (boxes, case) in [(1, "none_first"), (2, "second")] {
                let param = match boxes {
                    1 => format!("{kind}{rows}_{case}"),
                    _ => format!("{kind}{rows}_{kind}{rows}_{case}"),
                };
                add(
                    "tma_pair",
                    format!(
                        "{kind}{rows} {}",
                        if boxes == 1 { "alone" } else { "pair, second" }
                    ),
                    "cycles",
                    "tma_box",
                    v("tma_pair", &param),
                    "tma",
                    sets(&[
                        ("test", 0),
                        ("rows", rows),
                        ("boxes", boxes),
                        ("swz", swz(kind)),
                    ]),
                    Metric::per_iteration(16, 0.0),
                );
            }
        }
        for rows in [1i64, 16, 64, 128, 256] {
            let hi = if rows == 256 { 4 } else { 8 };
            add(
                "tma_burst",
                format!("{kind}{rows} burst, per box (2 to {hi})"),
                "cycles/box",
                "tma_box",
                Measured::Slope(
                    "tma_burst",
                    format!("{kind}{rows}_n2"),
                    format!("{kind}{rows}_n{hi}"),
                    (hi - 2) as f64,
                ),
                "tma",
                sets(&[
                    ("test", 1),
                    ("rows", rows),
                    ("warm", 1),
                    ("region", 65536),
                    ("extra", TMA_BOX_EXTRA),
                    ("swz", swz(kind)),
                ]),
                Metric::Slope {
                    key: "n",
                    lo: 2,
                    hi,
                    per: (hi - 2) as f64,
                    minus: 0.0,
                },
            );
        }
    }
    // The SM's TMA unit (tma_box.cu unit): W warps each issuing a burst of boxes on their own
    // mbarrier, the SM's cycles per box (the slope over the boxes a warp issues, over all W).
    // From 16 warps on the unit or the fill path binds; with fewer, each thread's own code
    // (tma_burst's rows). At 8 warps the 2 KiB rows moved 20-26% between two runs.
    for (kind, rows, lo, hi) in [("c", 1i64, 2i64, 6i64), ("c", 16, 1, 3), ("s", 16, 1, 3)] {
        for warps in [16i64, 32] {
            let param = |n: i64| format!("{kind}{rows}_n{n}_w{warps}");
            let per = (warps * (hi - lo)) as f64;
            add(
                "tma_unit",
                format!("{kind}{rows} from {warps} warps, per box"),
                "cycles/box",
                "tma_unit",
                Measured::Slope("tma_burstw", param(lo), param(hi), per),
                "tma",
                [
                    warps_burst(3, rows, warps, TMA_BOX_EXTRA),
                    sets(&[("swz", swz(kind))]),
                ]
                .concat(),
                n_slope(lo, hi, per),
            );
        }
    }
    for threads in [128i64, 256, 512, 1024] {
        add(
            "named_barrier",
            format!("bar.sync {threads} threads"),
            "cycles",
            "core",
            v("bar_sync", &threads.to_string()),
            "barriers",
            sets(&[("test", 0), ("warpgroups", threads / 128)]),
            Metric::per_iteration(64, 0.0),
        );
    }
    add(
        "mbarrier_poll",
        "mbarrier round trip (test_wait)".into(),
        "cycles",
        "core",
        v("mbar_pingpong", "test_wait"),
        "barriers",
        sets(&[("test", 1), ("poll", 1)]),
        Metric::per_iteration(64, 0.0),
    );
    add(
        "tma_throughput",
        "tma_issue (1-row boxes)".into(),
        "cycles/box",
        "tma",
        Measured::Slope("tma_issue", "32".into(), "256".into(), 224.0),
        "tma",
        sets(&[("test", 1), ("extra", TMA_CU_EXTRA)]),
        Metric::Slope {
            key: "n",
            lo: 32,
            hi: 256,
            per: 224.0,
            minus: 0.0,
        },
    );
    let box16k = |loads: i64| Metric::SlopeRate {
        key: "loads",
        lo: loads,
        hi: 2 * loads,
        amount: (loads * 16384) as f64,
    };
    // tma.cu's streams of 16 KiB boxes. One thread with 4 or more boxes in flight from L2 (8
    // from DRAM) issues as fast as its loop goes (tma_thread_loop); with fewer, a box's latency
    // binds: from L2 (tma_throughput) and from DRAM (dram_box). `stream`: the twin's stream of
    // boxes of `rows` rows through `stages` slots over `region` rows, with tma.cu's loop.
    let stream = |rows: i64, stages: i64, region: i64| {
        sets(&[
            ("test", 2),
            ("rows", rows),
            ("stages", stages),
            ("region", region),
            ("extra", TMA_STREAM_EXTRA),
        ])
    };
    for stages in [1i64, 2, 4, 8] {
        add(
            if stages <= 2 {
                "tma_throughput"
            } else {
                "tma_thread_loop"
            },
            format!("tma_bw_l2 {stages} stages"),
            "B/cycle/SM",
            "tma",
            v("tma_bw_l2", &stages.to_string()),
            "tma",
            stream(128, stages, 32768),
            box16k(256),
        );
        add(
            if stages <= 4 {
                "dram_box"
            } else {
                "tma_thread_loop"
            },
            format!("tma_bw_hbm {stages} stages"),
            "B/cycle/SM",
            "tma",
            v("tma_bw_hbm", &stages.to_string()),
            "tma",
            stream(128, stages, 8388608),
            box16k(256),
        );
    }
    // Several warps, 8 slots in all (43: 4 warps of 3 stages), from L2 (one region) and from
    // DRAM (a region each): the SM's fill path binds.
    for (streams, stages, hbm) in [
        (2i64, 4i64, false),
        (4, 2, false),
        (2, 4, true),
        (4, 2, true),
        (8, 1, true),
        (4, 3, true),
    ] {
        let (name, param) = match (hbm, stages * streams) {
            (false, _) => ("tma_bw_streams", streams.to_string()),
            (true, 12) => ("tma_bw_hbm_streams", "43".to_string()),
            (true, _) => ("tma_bw_hbm_streams", streams.to_string()),
        };
        let mut params = stream(128, stages, if hbm { 131072 } else { 32768 });
        params.extend(sets(&[("streams", streams), ("own", hbm as i64)]));
        add(
            "tma_throughput",
            format!("{name} {param} ({streams} warps x {stages} stages)"),
            "B/cycle/SM",
            "tma",
            v(name, &param),
            "tma",
            params,
            Metric::SlopeRate {
                key: "loads",
                lo: 256,
                hi: 512,
                amount: (streams * 256 * 16384) as f64,
            },
        );
    }
    // The fill rule: 4 warps x 2 stages of boxes of 128 rows of 128 B, without swizzle and
    // with the 128-byte one, and of 256 rows of 64 and 32 B, without and with theirs.
    for (width, sw) in [
        (128i64, 0i64),
        (128, 128),
        (64, 0),
        (64, 64),
        (32, 0),
        (32, 32),
    ] {
        let rows = if width == 128 { 128 } else { 256 };
        let param = match width {
            128 => format!("p128_sw{sw}_pr0"),
            _ => format!("w{width}_sw{sw}"),
        };
        add(
            "tma_throughput",
            format!("tma_bw_shape {width} B rows, swizzle {sw}"),
            "B/cycle/SM",
            "tma",
            v("tma_bw_shape", &param),
            "tma",
            [
                stream(rows, 2, if width == 128 { 32768 } else { 65536 }),
                sets(&[
                    ("cols", width / 2),
                    ("bcols", width / 2),
                    ("swz", sw),
                    ("streams", 4),
                ]),
            ]
            .concat(),
            Metric::SlopeRate {
                key: "loads",
                lo: 256,
                hi: 512,
                amount: (4 * 256 * rows * width) as f64,
            },
        );
    }
    for rows in [16i64, 64, 256] {
        let stages = (1024 / rows).min(8);
        add(
            if rows == 256 {
                "tma_throughput"
            } else {
                "tma_thread_loop"
            },
            format!("tma_bw_rows {rows} rows"),
            "B/cycle/SM",
            "tma",
            v("tma_bw_rows", &rows.to_string()),
            "tma",
            // A region the first 256 boxes cover once: the slope's boxes hit in L2, as the
            // CUDA kernel's after its warm-up launch.
            stream(rows, stages, 256 * rows),
            Metric::SlopeRate {
                key: "loads",
                lo: 256,
                hi: 512,
                amount: (256 * rows * 128) as f64,
            },
        );
    }
    add(
        "tma_thread_loop",
        "tma_bw_wide (256 B rows)".into(),
        "B/cycle/SM",
        "tma",
        v("tma_bw_wide", "256"),
        "tma",
        [stream(64, 8, 16384), sets(&[("cols", 128), ("bcols", 128)])].concat(),
        box16k(256),
    );
    add(
        "cta_launch",
        "cta_gap".into(),
        "cycles",
        "core",
        v("cta_gap", "128"),
        "barriers",
        sets(&[("test", 2), ("spin", 500)]),
        // Two more CTAs per SM; each spins 500 dependent FFMAs of 4 cycles.
        Metric::Slope {
            key: "ctas",
            lo: 264,
            hi: 528,
            per: 2.0,
            minus: 2000.0,
        },
    );
    // An attention consumer's softmax step: alone (1, 4 and 8 warps) and, 4 warps, beside
    // back-to-back wgmma of another warpgroup (the twin's softmax warps end last: a tail of
    // dependent FFMAs outlasts the wgmmas in both runs of the slope).
    for warps in [1i64, 4, 8] {
        add(
            "softmax",
            format!(
                "softmax step, {warps} warp{}",
                if warps == 1 { "" } else { "s" }
            ),
            "cycles",
            "softmax",
            v("softmax_step", &warps.to_string()),
            "softmax",
            sets(&[("warps", warps)]),
            Metric::per_iteration(100, 0.0),
        );
    }
    for (form, beside, test) in [
        ("SS", 1, "softmax_beside_ss"),
        ("RS", 2, "softmax_beside_rs"),
    ] {
        add(
            "softmax",
            format!("softmax step beside {form} wgmma"),
            "cycles",
            "softmax",
            v(test, "4"),
            "softmax",
            sets(&[("beside", beside), ("tail", 150_000)]),
            Metric::per_iteration(100, 0.0),
        );
        // Two softmax warps a partition, as two consumer warpgroups (measured on an H100: the
        // same SM, h100-softmax.csv).
        add(
            "softmax_pair",
            format!("softmax step, 8 warps, beside {form} wgmma"),
            "cycles",
            "softmax_h100",
            v(test, "8"),
            "softmax",
            sets(&[("warps", 8), ("beside", beside), ("tail", 150_000)]),
            Metric::per_iteration(100, 0.0),
        );
    }
    // The other side: what the softmax steps of 4 warps (or 8, two a partition, on the H100)
    // that outlast them add to each of another warpgroup's back-to-back wgmma m64n128k16 (8 a
    // group, one group in flight); the slope over 100 groups. (Alone these take 73.9 (SS) and 71.8 (RS) cycles on the chip
    // against 64.3 in groups of 32 (h200-wgmma.csv), 64 in the model: not yet explained.)
    for (form, beside, test, base) in [
        ("SS", 1, "wgmma_beside_ss", "wgmma_alone_ss"),
        ("RS", 2, "wgmma_beside_rs", "wgmma_alone_rs"),
    ] {
        for (warps, program, param) in [(4, "softmax", "128"), (8, "softmax_h100", "128_w8")] {
            add(
                "hgmma_beside",
                format!("{form} wgmma beside {warps} softmax warps, over alone"),
                "cycles/wgmma",
                program,
                Measured::Over(test, param, base, "128"),
                "softmax",
                sets(&[("warps", warps), ("beside", beside), ("iters", 150)]),
                Metric::MmaSlopeOver {
                    key: "groups",
                    lo: 100,
                    hi: 200,
                    per: 800.0,
                    base: sets(&[("beside", beside), ("iters", 0)]),
                },
            );
        }
    }
    // Two warpgroups sharing the tensor pipe (calibration/wgmma_arb.cu): when each one's group
    // of wgmmas completes, counted from the first one's start. The case names the forms, the
    // HGMMAs of each and N; the twin's second warpgroup starts as late as the chip's did
    // (its start stamp less the first one's, in cycles).
    for (case, delay) in [
        ("ss8_ss0_n128_d0", 0),
        ("ss16_ss0_n128_d0", 0),
        ("rs8_ss0_n128_d0", 0),
        ("ss4_ss0_n128_d0", 0),
        ("ss8_ss0_n256_d0", 0),
        ("ss8_ss8_n128_d0", 0),
        ("ss8_ss8_n128_d128", 74),
        ("ss8_ss8_n128_d256", 127),
        ("ss16_ss4_n128_d0", 2),
        ("ss16_ss4_n128_d100", 118),
        ("ss16_ss4_n128_d200", 138),
        ("ss16_ss4_n128_d400", 358),
        ("ss32_ss4_n128_d300", 285),
        ("ss8_rs8_n128_d0", 3),
        ("ss8_rs8_n128_d200", 106),
        ("rs16_ss4_n128_d200", 144),
        ("ss16_rs4_n128_d200", 140),
        ("ss8_ss2_n256_d200", 205),
    ] {
        let parts: Vec<&str> = case.split('_').collect();
        let form = |p: &str| {
            (
                i64::from(p.starts_with("rs")),
                p[2..].parse::<i64>().unwrap_or(0),
            )
        };
        let ((rs0, g0), (rs1, g1)) = (form(parts[0]), form(parts[1]));
        let n = parts[2][1..].parse::<i64>().unwrap_or(128);
        let twin = sets(&[
            ("n", n),
            ("g0", g0),
            ("g1", g1),
            ("rs0", rs0),
            ("rs1", rs1),
            ("delay", delay),
        ]);
        let label = format!("{}+{} n{n} +{delay}", parts[0], parts[1]);
        let start = format!("{case}_wg0_start");
        let ends = [("wg0", TwinRole::First), ("wg1", TwinRole::Mma)];
        for (wg, role) in ends.into_iter().take(if g1 > 0 { 2 } else { 1 }) {
            add(
                "wgmma_arb",
                format!("{wg} done, {label}"),
                "cycles",
                "wgmma_arb",
                Measured::Between("wgmma_arb", start.clone(), format!("{case}_{wg}_done")),
                "wgmma_arb",
                twin.clone(),
                Metric::Lifetime(role),
            );
        }
    }
    // Whole kernels, the check of the mechanisms above. FA3-class attention (head dim 128,
    // 2048 tiles of 128 query rows on 132 SMs): the chip's FLOP per SM-cycle over the whole run
    // times 16 / 15.52 (the busiest SM's tiles over the mean) is its steady state; the twin's
    // is 4·128·128·128 FLOP per KV block over the slope between 64 and 128 blocks.
    for (s_len, param) in [
        ("8192", "cudnn_hd128_s8192"),
        ("16384", "cudnn_hd128_s16384"),
    ] {
        add(
            "attention",
            format!("cuDNN FA3-class hd128 s{s_len}"),
            "FLOP/SM-cycle",
            "attention",
            Measured::Scaled(
                "attn_flop_per_sm_cycle",
                param.to_string(),
                16.0 * 132.0 / 2048.0,
            ),
            "attention",
            Vec::new(),
            Metric::SlopeRate {
                key: "seqlen",
                lo: 8192,
                hi: 16384,
                amount: 64.0 * 4.0 * 128.0 * 128.0 * 128.0,
            },
        );
    }
    // TMA stores (tma_box.cu unit): W warps each storing a burst of boxes, committing and
    // waiting for them; the SM's cycles a store (the slope over a warp's stores, over all W).
    // One store from one thread takes 40.5 cycles, below the 52 of its SASS's stall counts:
    // the twin adds nothing to the 44 of a TmaStore.
    for (rows, lo, hi, warps) in [
        (1i64, 2i64, 6i64, &[1i64, 8, 16, 32][..]),
        (16, 1, 3, &[1, 8, 32]),
    ] {
        for &w in warps {
            let per = (w * (hi - lo)) as f64;
            add(
                "tma_store",
                format!("c{rows} stores from {w} warps, per store"),
                "cycles/store",
                "tma_unit",
                Measured::Slope(
                    "tma_storew",
                    format!("c{rows}_n{lo}_w{w}"),
                    format!("c{rows}_n{hi}_w{w}"),
                    per,
                ),
                "tma",
                warps_burst(4, rows, w, 0),
                n_slope(lo, hi, per),
            );
        }
    }
    // What one issuing thread pays per mbarrier operation and TMA issue (calibration/
    // mbar_cost.cu): cycles per loop iteration, the slope between 256 and 512 iterations.
    for (variant, test, group) in [
        (0, "wait_done", "mbarrier_ops"),
        (1, "self_arrive_wait", "mbarrier_ops"),
        (2, "arrive_only", "mbarrier_ops"),
        (3, "expect_only", "mbarrier_ops"),
        (5, "tma_wait", "mbarrier_ops"),
        (9, "lat_same", "mbarrier_ops"),
        (10, "lat_alt", "mbarrier_ops"),
        (4, "tma_onebar", "tma_issue"),
        (6, "tma_expect_each", "tma_issue"),
        (7, "stream_rot4", "tma_issue"),
        (8, "stream_same4", "tma_issue"),
    ] {
        add(
            group,
            test.replace('_', " "),
            "cycles/iter",
            "mbar_cost",
            v("mbar_cost", test),
            "mbar_cost",
            sets(&[("v", variant)]),
            Metric::Slope {
                key: "iters",
                lo: 256,
                hi: 512,
                per: 256.0,
                minus: 0.0,
            },
        );
    }
    // One TMA box of contiguous 128-byte rows from DRAM (calibration/dram_map.cu): cycles
    // from arrive.expect_tx to the wake, each box in a region nothing touched before.
    for rows in [1i64, 8, 32, 64, 128] {
        add(
            "dram_box",
            format!("dram box {rows} rows"),
            "cycles",
            "dram_map",
            v("dram_box_c", &rows.to_string()),
            "tma",
            sets(&[("test", 0), ("rows", rows), ("step", 8192)]),
            Metric::per_iteration(16, 0.0),
        );
    }
    // FA3's two techniques switched off one at a time (calibration/fa3.cu, one CTA, head dim
    // 128, KV blocks of 128): cycles per KV block, the slope between 32 and 64 blocks.
    for (stages, suffix) in [(2, ""), (3, "_s3")] {
        for (pp, io) in [(1, 1), (0, 1), (1, 0), (0, 0)] {
            add(
                "fa3",
                format!("fa3 bn 128, {stages} stages{}", fa3_without(pp, io)),
                "cycles/block",
                "fa3",
                v("fa3_block", &format!("pp{pp}_io{io}_g1{suffix}")),
                "fa3_pingpong",
                // One CTA: one head, one query block; `seqlen` moves the keys only.
                sets(&[
                    ("heads", 1),
                    ("seqlen_q", 128),
                    ("bn", 128),
                    ("stages", stages),
                    ("pingpong", pp),
                    ("intra_overlap", io),
                ]),
                Metric::Slope {
                    key: "seqlen",
                    lo: 4096,
                    hi: 8192,
                    per: 32.0,
                    minus: 0.0,
                },
            );
        }
    }
    // FlashAttention-3 itself (calibration/fa3_real.cu): its FLOP per SM-cycle over the run at
    // the build's NVML clock (group fa3_real) or in the cycles Nsight Compute counted
    // (calibration/fa3_ncu.sh, on an H100: the same SM; group fa3_cycles), times the busiest
    // SM's tiles over the mean (2048 tiles of 128 x 176 at head dim 128, 2752 of 192 x 192 at
    // 64, 1024 of 128 x 80 at 256, on 132 SMs), against the twin's steady state at FA3's tile
    // (one CTA, 4·bm·bn·hd FLOP per KV block over the slope between 24 and 48 blocks). At head
    // dim 256 FA3 runs without ping-pong.
    let nvml = ("fa3_real", "fa3_real", "fa3_real_flop_per_sm_cycle", "");
    let ncu = (
        "fa3_cycles",
        "fa3_ncu",
        "fa3_ncu_flop_per_sm_cycle",
        " (cycles)",
    );
    for ((group, program, test, basis), param, pp, io, hd) in [
        (nvml, "s8192_pp1_io1_c1", 1, 1, 128),
        (nvml, "s8192_pp0_io1_c1", 0, 1, 128),
        (nvml, "s8192_pp1_io0_c1", 1, 0, 128),
        (nvml, "s8192_pp0_io0_c1", 0, 0, 128),
        (nvml, "s16384_pp1_io1_c1", 1, 1, 128),
        (nvml, "s16384_pp0_io1_c1", 0, 1, 128),
        (nvml, "s16384_pp1_io0_c1", 1, 0, 128),
        (nvml, "s16384_pp0_io0_c1", 0, 0, 128),
        (nvml, "s8192_pp1_io1_c1_hd64", 1, 1, 64),
        (nvml, "s8192_pp0_io1_c1_hd64", 0, 1, 64),
        (nvml, "s16384_pp1_io1_c1_hd64", 1, 1, 64),
        (nvml, "s16384_pp0_io1_c1_hd64", 0, 1, 64),
        (nvml, "s8192_pp1_io1_c1_hd256", 0, 1, 256),
        (nvml, "s8192_pp1_io0_c1_hd256", 1, 0, 256),
        (nvml, "s16384_pp1_io1_c1_hd256", 0, 1, 256),
        (nvml, "s16384_pp1_io0_c1_hd256", 1, 0, 256),
        (ncu, "s8192_pp1_io1_c1", 1, 1, 128),
        (ncu, "s8192_pp1_io0_c1", 1, 0, 128),
    ] {
        let (bm, bn, tiles) = match hd {
            64 => (192, 192, 2752),
            256 => (128, 80, 1024),
            _ => (128, 176, 2048),
        };
        let seqlen = param.split('_').next().unwrap_or_default();
        add(
            group,
            format!("FA3 hd{hd} {seqlen}{}{basis}", fa3_without(pp, io)),
            "FLOP/SM-cycle",
            program,
            Measured::Scaled(
                test,
                param.to_string(),
                (tiles as f64 / 132.0).ceil() * 132.0 / tiles as f64,
            ),
            "fa3_pingpong",
            sets(&[
                ("heads", 1),
                ("hd", hd),
                ("seqlen_q", bm),
                ("pingpong", pp),
                ("intra_overlap", io),
            ]),
            Metric::SlopeRate {
                key: "seqlen",
                lo: 24 * bn,
                hi: 48 * bn,
                amount: 24.0 * 4.0 * (bm * bn * hd) as f64,
            },
        );
    }
    // gemm_ws as measured (calibration/gemm_ws.cu, one CTA): cycles per k-tile with A and B in
    // L2 (the slope between K = 4096 and 8192), and the whole K = 4096 run from DRAM.
    // Cycles per k-tile: the slope between K = 4096 and 8192 (64 k-tiles of 64).
    let per_ktile = || Metric::Slope {
        key: "k",
        lo: 4096,
        hi: 8192,
        per: 64.0,
        minus: 0.0,
    };
    for (bn, stages) in [(128, 1..=6), (256, 1..=4)] {
        for st in stages.clone() {
            // Two stages, where the chip's round trip is longer than the model's, apart.
            add(
                if st == 2 {
                    "gemm_ws_latency"
                } else {
                    "gemm_ws"
                },
                format!("ws_ktile_warm bn {bn} stages {st}"),
                "cycles/k-tile",
                "gemm_ws",
                v("ws_ktile_warm", &format!("n{bn}_s{st}")),
                "gemm_ws",
                sets(&[("bn", bn), ("stages", st), ("warm", 1)]),
                per_ktile(),
            );
        }
        // The TMA ring alone: the consumers release each stage as it lands (no wgmma).
        for st in stages.clone() {
            add(
                "tma_ring",
                format!("ws_ktile_parts no_mma bn {bn} stages {st}"),
                "cycles/k-tile",
                "gemm_ws",
                v("ws_ktile_parts", &format!("n{bn}_s{st}_no_mma")),
                "gemm_ws",
                sets(&[("bn", bn), ("stages", st), ("warm", 1), ("mma", 0)]),
                per_ktile(),
            );
        }
        for st in stages {
            add(
                "gemm_ws_cold",
                format!("ws_total_cold bn {bn} stages {st}"),
                "cycles",
                "gemm_ws",
                v("ws_total_cold", &format!("n{bn}_s{st}")),
                "gemm_ws",
                sets(&[("bn", bn), ("stages", st)]),
                Metric::Single {
                    per: 1.0,
                    minus: 0.0,
                },
            );
        }
    }
    // Register spills (spill.cu): cycles per loop iteration of W warps each keeping `live`
    // values per thread under a -maxrregcount cap, the slope between `lo` and 2 `lo`
    // iterations. The twin runs with the registers the build uses: the cap, or ptxas's count
    // where that is lower (h200-spill.csv's header: 47, 77, 107, 139, 202 at 255).
    for cap in [255i64, 128, 64, 32] {
        for (live, used) in [(32i64, 47i64), (64, 77), (96, 107), (128, 139), (192, 202)] {
            for warps in [1i64, 4, 32] {
                let regs = cap.min(used);
                if regs * 32 * warps > 65536 {
                    // spill.cu skips what does not fit on the SM.
                    continue;
                }
                let test = match warps {
                    1 => "spill_iter_w1",
                    4 => "spill_iter_w4",
                    _ => "spill_iter_w32",
                };
                add(
                    "spill",
                    format!("spill w{warps} cap {cap} live {live}"),
                    "cycles/iteration",
                    "spill",
                    v(test, &format!("{cap}_{live}")),
                    "spill",
                    sets(&[("warps", warps), ("live", live), ("regs", regs)]),
                    Metric::per_iteration(if warps == 32 { 16 } else { 64 }, 0.0),
                );
            }
        }
    }
    // The fundamentals on one SM (fundamentals.cu; twins scenarios/bank_conflicts.ron,
    // coalescing.ron, divergence.ron): cycles per warp-load of 32 warps x 64 shared loads at
    // lane strides, and of 32 warps x 16 L2-resident global loads; cycles per if/else round of
    // 4 warps, and of a loop whose trip count differs by lane.
    for stride in 1..=33i64 {
        add(
            "bank_conflicts",
            format!("smem stride {stride}"),
            "cycles/warp-load",
            "fundamentals",
            v("smem_stride", &stride.to_string()),
            "bank_conflicts",
            sets(&[("stride", stride)]),
            Metric::Single {
                per: 2048.0,
                minus: 0.0,
            },
        );
    }
    for pad in [0i64, 1] {
        add(
            "bank_conflicts",
            format!("smem 32x32 column, pad {pad}"),
            "cycles/warp-load",
            "fundamentals",
            v("smem_column", &format!("pad{pad}")),
            "bank_conflicts",
            sets(&[("layout", 1), ("pad", pad)]),
            Metric::Single {
                per: 2048.0,
                minus: 0.0,
            },
        );
    }
    for stride in [1i64, 2, 3, 4, 8, 16, 32] {
        add(
            "coalescing",
            format!("gmem stride {stride} (L2)"),
            "cycles/warp-load",
            "fundamentals",
            v("gmem_stride", &stride.to_string()),
            "coalescing",
            sets(&[("stride", stride)]),
            Metric::Single {
                per: 512.0,
                minus: 0.0,
            },
        );
    }
    // One SM's steady L2-resident warp-loads (l1_rate.cu: 32 warps x 8 loads a round, 64 rounds
    // less 16; the twin 64 loads a warp less 16, all in L2): those whose lines bind (the L1's
    // tag stage), and those whose sectors move at up to 128 B/cycle on the chip (the SM's port
    // in the model).
    for (group, width, stride) in [
        ("l1_lines", 4i64, 1i64),
        ("l1_lines", 4, 32),
        ("l1_lines", 8, 8),
        ("l1_lines", 8, 32),
        ("l1_lines", 16, 4),
        ("l1_lines", 16, 8),
        ("l1_port", 4, 2),
        ("l1_port", 4, 4),
        ("l1_port", 4, 8),
        ("l1_port", 8, 1),
        ("l1_port", 8, 2),
        ("l1_port", 16, 1),
        ("l1_port", 16, 2),
    ] {
        add(
            group,
            format!("{width}-byte loads, stride {stride}"),
            "cycles/warp-load",
            "l1_rate",
            v("l1_load", &format!("w{width}_s{stride}_W32_U8")),
            "coalescing",
            sets(&[("width", width), ("stride", stride)]),
            Metric::Slope {
                key: "iters",
                lo: 16,
                hi: 64,
                per: 48.0 * 32.0,
                minus: 0.0,
            },
        );
    }
    // One SM: a pointer chase's latency while S other warps stream U loads each (loaded_lat.cu;
    // the twin's streamers stop at 28 beside the chaser's warpgroup), and the stream's rate.
    for (level, name) in [(0i64, "l2"), (1, "hbm")] {
        for unroll in [1i64, 4] {
            for streamers in [0i64, 1, 4, 16, 28] {
                let param = format!("{name}_S{streamers}_U{unroll}");
                let sets = sets(&[
                    ("level", level),
                    ("unroll", unroll),
                    ("streamers", streamers),
                ]);
                add(
                    "loaded_latency",
                    format!("{name} chase beside {streamers} warps x {unroll} loads"),
                    "cycles/hop",
                    "loaded_lat",
                    v("loaded_lat", &param),
                    "loaded",
                    sets.clone(),
                    Metric::LongestPer { per: 256.0 },
                );
                if streamers > 0 {
                    add(
                        "loaded_latency",
                        format!("{name} stream of {streamers} warps x {unroll} loads"),
                        "B/cycle",
                        "loaded_lat",
                        v("loaded_bw", &param),
                        "loaded",
                        sets,
                        Metric::SingleRate {
                            amount: (streamers * unroll * 400 * 512) as f64,
                        },
                    );
                }
            }
        }
    }
    for (test, param, mode, per) in [
        ("div_branch", "uniform", 0i64, 16.0),
        ("div_branch", "parity", 1, 16.0),
        ("div_trips", "uniform", 3, 1.0),
        ("div_trips", "lanes", 2, 1.0),
    ] {
        add(
            "divergence",
            format!("{test} {param}"),
            if per > 1.0 { "cycles/round" } else { "cycles" },
            "fundamentals",
            v(test, param),
            "divergence",
            sets(&[("mode", mode)]),
            Metric::Single { per, minus: 0.0 },
        );
    }
    // Whole kernels: Triton's Hopper matmul, bf16 4096^3 (calibration/triton_gemm.py), against
    // gemm_pipelined.ron at each config's NVML clock: FLOP per SM-cycle over the whole run on
    // both sides. Four of the 40 configs both ran, spanning the chip's range (1,358 to 2,782),
    // the tile shapes, warps and stages, and the 64-row tiles' cheapest (a 64 x 128 tile takes
    // 6 to 12 s of CPU, the four together about 16 s: the test suite runs them twice); the 40
    // are in docs/scenarios.md.
    for (bm, bn, bk, warps, stages) in [
        (64i64, 256i64, 64i64, 4i64, 4i64),
        (128, 128, 64, 4, 3),
        (128, 256, 64, 8, 3),
        (128, 128, 64, 8, 2),
    ] {
        add(
            "triton_gemm",
            format!("{bm}x{bn}x{bk} {warps}w {stages}s"),
            "FLOP/SM-cycle",
            "triton_gemm",
            Measured::AtClock(
                "tgemm_flop_per_sm_cycle",
                format!("bm{bm}_bn{bn}_bk{bk}_w{warps}_s{stages}"),
                "tgemm_clock",
            ),
            "gemm_pipelined",
            sets(&[
                ("bm", bm),
                ("bn", bn),
                ("bk", bk),
                ("num_warps", warps),
                ("stages", stages),
            ]),
            Metric::SingleRate {
                amount: 2.0 * 4096f64.powi(3) / 132.0,
            },
        );
    }
    // Thread-block clusters (calibration/cluster.cu on an H100, whose GPCs and SM-to-SM network
    // are the H200's die's; twin scenarios/calibration/cluster.ron). A chase through the last
    // rank's shared memory, over the same chase through the CTA's own: the slope between 1000
    // and 2000 hops of each (the loop's own instructions, which the twin does not carry, cancel).
    for (param, size) in [
        ("remote_c2", 2),
        ("remote_c4", 4),
        ("remote_c8", 8),
        ("remote_c16", 16),
    ] {
        add(
            "cluster_dsmem_lat",
            format!("chase, cluster of {size}, over own"),
            "cycles/hop",
            "cluster",
            Measured::Over("dsmem_lat", param, "dsmem_lat", "own_c2"),
            "cluster",
            sets(&[("test", 0), ("where", 2), ("cluster", size)]),
            Metric::per_step_over("hops", sets(&[("test", 0), ("where", 0), ("cluster", 2)])),
        );
    }
    // Bytes per cycle of one reading SM: W warps x 32 lanes x 8 x 16 B a round.
    for (op, st) in [("ld", 0), ("st", 1)] {
        for (dir, both) in [("one", 0), ("both", 1)] {
            for w in [1i64, 4, 8, 16, 32] {
                add(
                    "cluster_dsmem_bw",
                    format!("{op} {dir} {w} warps"),
                    "B/cycle",
                    "cluster",
                    v("dsmem_bw", &format!("{op}_{dir}_w{w}")),
                    "cluster",
                    sets(&[
                        ("test", 1),
                        ("st", st),
                        ("both", both),
                        ("warps", w),
                        ("threads", 128 * ((w + 3) / 4)),
                    ]),
                    Metric::SlopeRate {
                        key: "rounds",
                        lo: 64,
                        hi: 128,
                        amount: (w * 32 * 8 * 16 * 64) as f64,
                    },
                );
            }
        }
    }
    // barrier.cluster.arrive + wait, back to back: the default arrive (a release: the memory
    // barrier first) and the relaxed one.
    for size in [1i64, 2, 4, 8, 16] {
        for (threads, relaxed) in [(128i64, 0i64), (384, 0), (128, 1), (384, 1)] {
            let form = if relaxed == 1 { ", relaxed" } else { "" };
            let tail = if relaxed == 1 { "_relaxed" } else { "" };
            add(
                "cluster_barrier",
                format!("{size} CTAs x {threads} threads{form}"),
                "cycles",
                "cluster",
                v("cluster_barrier", &format!("{size}_t{threads}{tail}")),
                "cluster",
                sets(&[
                    ("test", 2),
                    ("cluster", size),
                    ("threads", threads),
                    ("relaxed", relaxed),
                ]),
                Metric::per_iteration(1000, 0.0),
            );
        }
    }
    // Two CTAs' threads handing an mbarrier phase to each other by remote arrives, CUTLASS's
    // (CTA-scope release) and .release.cluster: the round trip.
    for (scope, form, tail) in [(0i64, "CTA scope", "_cta"), (1, ".release.cluster", "")] {
        for size in [2i64, 4, 8, 16] {
            add(
                "cluster_remote_arrive",
                format!("ping-pong, cluster of {size}, {form}"),
                "cycles",
                "cluster",
                v("remote_pingpong", &format!("{size}{tail}")),
                "cluster",
                sets(&[("test", 3), ("cluster", size), ("scope", scope)]),
                Metric::per_iteration(1000, 0.0),
            );
        }
    }
    // One thread's arrives through a cluster address, over its local ones with the same loop
    // (the loop's own instructions, which the twin does not carry, cancel): back to back,
    // `gap` FFMAs apart, from 4 warps, CUTLASS's one-instruction release to every rank, and its
    // own barrier by its cluster address (cluster.cu's fourth run).
    for (mode, form, param, base, pairs) in [
        (
            1i64,
            "another rank's",
            "remote_cta_n2000",
            "local_n2000",
            vec![],
        ),
        (
            2,
            ".release.cluster",
            "remote_release_cluster_n2000",
            "local_n2000",
            vec![],
        ),
        (
            1,
            "another rank's, 25 FFMAs apart",
            "remote_cta_n1000_gap25_w1_c2",
            "local_n1000_gap25_w1_c2",
            vec![("gap", 25)],
        ),
        (
            1,
            "another rank's, 50 FFMAs apart",
            "remote_cta_n1000_gap50_w1_c2",
            "local_n1000_gap50_w1_c2",
            vec![("gap", 50)],
        ),
        (
            1,
            "another rank's, 4 warps",
            "remote_cta_n1000_gap0_w4_c2",
            "local_n1000_gap0_w4_c2",
            vec![("arrivers", 4)],
        ),
        (
            3,
            "CUTLASS's release to 2 ranks",
            "cutlass_lanes_n2000",
            "local_n2000",
            vec![],
        ),
        (
            4,
            "its own by cluster address",
            "self_cluster_addr_n2000",
            "local_n2000",
            vec![],
        ),
    ] {
        let with = |mode: i64| {
            let mut v = vec![("test", 6), ("cluster", 2), ("mode", mode)];
            v.extend(pairs.iter().copied());
            sets(&v)
        };
        add(
            "remote_arrive_issue",
            format!("arrives on {form}, over local"),
            "cycles",
            "cluster2",
            Measured::Over("arrive_cost", param, "arrive_cost", base),
            "cluster",
            with(mode),
            Metric::per_step_over("iters", with(0)),
        );
    }
    // Unicast against multicast across a cluster (cluster.cu's mcast kernel on an H100, one
    // thread a CTA streaming 256 tiles of 16 KiB through 4 stages, every CTA of a cluster the
    // same tiles): L2 slice bytes (Nsight Compute's lts__t_bytes) with 8 tiles a cluster
    // re-read from L2, DRAM bytes with 256 distinct tiles a cluster, each over the bytes the
    // CTAs' tiles hold; and the cycles a tile takes (group cluster_mcast_cycles).
    for (c, grid) in [(1i64, 132i64), (2, 132), (4, 120)] {
        for (form, mode) in [
            ("unicast", 0i64),
            ("unicast_sync_cta", 3),
            ("multicast_cta", 4),
        ] {
            if c == 1 && mode != 0 {
                continue;
            }
            let asked = (grid * 256 * 16384) as f64;
            for (src, warm, region) in [("l2", 1i64, 8i64), ("hbm", 0, 256)] {
                let param = format!("{form}_c{c}_{src}");
                let own = sets(&[
                    ("test", 4),
                    ("cluster", c),
                    ("clusters", grid / c),
                    ("mode", mode),
                    ("warm", warm),
                    ("region", region),
                    ("tiles", 256),
                ]);
                let (counter, metric) = if src == "l2" {
                    ("ncu_lts__t_bytes.sum", Metric::L2SlicePerAsked { asked })
                } else {
                    ("ncu_dram__bytes_read.sum", Metric::DramPerAsked { asked })
                };
                add(
                    "cluster_mcast",
                    format!("{param}: {} bytes / tile bytes", &src.to_uppercase()),
                    "B/B",
                    "cluster_mcast_ncu",
                    Measured::Scaled(counter, param.clone(), 1.0 / asked),
                    "cluster_h100",
                    own.clone(),
                    metric,
                );
                add(
                    "cluster_mcast_cycles",
                    param.clone(),
                    "cycles/tile",
                    "cluster2",
                    v("mcast", &param),
                    "cluster_h100",
                    own,
                    Metric::Single {
                        per: 256.0,
                        minus: 0.0,
                    },
                );
            }
        }
    }
    // Whole kernels: CUTLASS 4.3's persistent Hopper GEMMs at 4096^3 on an H100 (its own
    // cycles, Nsight Compute's gpc__cycles_elapsed.max) against the scenarios that rebuild them.
    for (name, param, twin, own) in [
        (
            "cooperative 128x256, persistent",
            "coop_128x256_c1_4096",
            "gemm_h100",
            vec![("persistent", 1i64)],
        ),
        (
            "cooperative 128x256, persistent, 2x1 cluster",
            "coop_128x256_c2_4096",
            "gemm_h100",
            vec![("persistent", 1), ("cluster_m", 2)],
        ),
        (
            "ping-pong 128x128 (model 5 stages, CUTLASS 6)",
            "pp_128x128_c1_4096",
            "gemm_pingpong_h100",
            vec![],
        ),
    ] {
        add(
            "gemm_cutlass",
            format!("{name}, 4096^3"),
            "cycles",
            "cutlass_gemm",
            v("ncu_gpc__cycles_elapsed.max", param),
            twin,
            sets(&own),
            Metric::Single {
                per: 1.0,
                minus: 0.0,
            },
        );
    }
    // The scheduler's policy (calibration/sched.cu on an H100): 2 to 4 warps of one partition
    // each issue 512 independent FFMAs after a barrier; the first to finish (the chip's
    // youngest, the model's oldest) and the last, counted from the barrier.
    for (warps, first, last) in [
        (2i64, "w2_warp0_n512", "w2_warp1_n512"),
        (3, "w3_warp2_n512", "w3_warp0_n512"),
        (4, "w4_warp3_n512", "w4_warp0_n512"),
    ] {
        for (which, param, metric) in [
            ("first", first, Metric::LongestPer { per: 1.0 }),
            (
                "last",
                last,
                Metric::Single {
                    per: 1.0,
                    minus: 0.0,
                },
            ),
        ] {
            add(
                "scheduler",
                format!("{warps} warps of a partition: the {which} to finish"),
                "cycles",
                "sched",
                v("sched_end", param),
                "sched",
                sets(&[("warps", warps), ("n", 512)]),
                metric,
            );
        }
    }
    // One thread a CTA streaming 16 KiB TMA boxes from L2 through 4 slots (calibration/
    // l2_share.cu on an H100, twin scenarios/calibration/l2_share.ron): 132 CTAs on disjoint
    // tiles, and 128 (or 132, 120 in clusters) in groups reading the same tiles.
    let tiles = || Metric::Slope {
        key: "tiles",
        lo: 128,
        hi: 256,
        per: 128.0,
        minus: 0.0,
    };
    add(
        "l2_share",
        "132 SMs, disjoint tiles".to_string(),
        "cycles/tile",
        "l2_share",
        v("sms", "n132"),
        "l2_share",
        sets(&[("ctas", 132)]),
        tiles(),
    );
    for (spread, g) in [
        (0, 1),
        (0, 2),
        (0, 4),
        (0, 8),
        (0, 16),
        (0, 32),
        (1, 2),
        (1, 4),
        (1, 8),
        (1, 16),
    ] {
        let kind = if spread == 1 { "spread" } else { "adj" };
        add(
            "l2_share",
            format!("128 SMs, groups of {g} ({kind})"),
            "cycles/tile",
            "l2_share",
            v("share", &format!("{kind}_g{g}_r8")),
            "l2_share",
            sets(&[("ctas", 128), ("share", g), ("spread", spread)]),
            tiles(),
        );
    }
    for (c, ctas) in [(2i64, 132i64), (4, 120)] {
        add(
            "l2_share",
            format!("{ctas} SMs, clusters of {c} reading one tile"),
            "cycles/tile",
            "l2_share",
            v("share", &format!("cluster_c{c}")),
            "l2_share",
            sets(&[("ctas", ctas), ("cluster", c), ("share", c)]),
            tiles(),
        );
    }
    // Clusters of 2 whose second CTA reads each tile `lag` tiles after the first (regions of
    // 16 tiles): how long a GPC's read-out stays shared (memory.l2.merge_cycles).
    for lag in [0i64, 1, 2, 4, 8] {
        add(
            "l2_merge",
            format!("clusters of 2, second read {lag} tiles later"),
            "cycles/tile",
            "l2_share2",
            v("lag", &format!("c2_l{lag}")),
            "l2_share",
            sets(&[
                ("ctas", 132),
                ("cluster", 2),
                ("share", 2),
                ("region", 16),
                ("lag", lag),
            ]),
            tiles(),
        );
    }
    // A GPU-scope memory barrier back to back, 1, 2 and 4 warps a partition: the chip's
    // fence.release.cluster (MEMBAR.ALL.GPU + ERRBAR), the twin's Fence with no stores pending.
    for threads in [128i64, 256, 512] {
        add(
            "membar",
            format!("fence.release.cluster, {threads} threads"),
            "cycles",
            "cluster",
            v("fence", &format!("release_cluster_t{threads}")),
            "cluster",
            sets(&[("test", 5), ("cluster", 1), ("threads", threads)]),
            Metric::per_iteration(1000, 0.0),
        );
    }
    s
}
