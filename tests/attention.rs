//! The attention library's scenarios as users run them: split-KV decode (a sequence of a split
//! kernel and a combine kernel) against the H200's figures (calibration/data/h200-decode.csv).

mod common;

use common::{scenario, sets};
use sim::sequence::{self, SequenceReport};

fn decode(pairs: &[(&str, i64)]) -> SequenceReport {
    sequence::run_file(&scenario("split_kv_decode"), &sets(pairs)).unwrap()
}

/// K and V bytes per µs of the whole step (both kernels and the gap), in GB/s.
fn gbps(s: &SequenceReport, seqlen_k: u64) -> f64 {
    let kv = 2 * 8 * seqlen_k * 128 * 2;
    kv as f64 / s.time_us / 1e3
}

/// The h200-sxm preset's sustained HBM bandwidth, GB/s.
fn sustained() -> f64 {
    let p = sim::gpu::preset::Preset::builtin("h200-sxm").unwrap();
    p.memory.hbm.bandwidth_gbs * p.memory.hbm.efficiency
}

#[test]
fn decode_reaches_hbm_bandwidth_with_enough_splits_and_not_with_one() {
    let best = decode(&[]);
    assert_eq!(
        best.kernels
            .iter()
            .map(|k| k.name.as_str())
            .collect::<Vec<_>>(),
        ["split", "combine"]
    );
    // 8 KV heads x 32 splits; the combine a CTA per query head.
    assert_eq!(best.kernels[0].report.ctas, 256);
    assert_eq!(best.kernels[1].report.ctas, 32);
    let at_32 = gbps(&best, 32768);
    // The H200: 3,584 GB/s at 32 splits (decode_gbps b1_l32768_s32), 85% of the sustained 4,224.
    assert!(at_32 >= 0.8 * sustained(), "{at_32:.0} GB/s at 32 splits");
    assert!(
        (at_32 / 3583.65 - 1.0).abs() < 0.10,
        "{at_32:.0} GB/s at 32 splits"
    );
    // One split: 8 CTAs on 8 SMs, each bound by its own chain (the H200: 282 GB/s).
    let one = gbps(&decode(&[("splits", 1)]), 32768);
    assert!(one < 0.1 * sustained(), "{one:.0} GB/s at 1 split");
    assert!(
        (one / 281.71 - 1.0).abs() < 0.25,
        "{one:.0} GB/s at 1 split"
    );
}

#[test]
fn decode_bandwidth_rises_with_splits_until_hbm_binds() {
    // Few CTAs, each latency-bound: twice the splits, close to twice the bandwidth.
    let rates: Vec<f64> = [1, 2, 4, 8]
        .iter()
        .map(|&s| gbps(&decode(&[("splits", s), ("seqlen_k", 8192)]), 8192))
        .collect();
    for w in rates.windows(2) {
        let gain = w[1] / w[0];
        assert!((1.7..=2.05).contains(&gain), "{rates:?}");
    }
}

#[test]
fn an_uneven_split_count_gives_the_last_split_fewer_rows() {
    // 3 splits of 8192 rows: chunks of 2752 rows (43 blocks), the last one 2688 (42 blocks).
    let s = decode(&[("splits", 3), ("seqlen_k", 8192)]);
    assert_eq!(s.kernels[0].report.ctas, 24);
    assert_eq!(s.kernels[0].report.params["chunk"], 2752);
}

fn fa3_on(gpu: &str, pairs: &[(&str, i64)]) -> sim::observe::report::Report {
    let opts = sim::run::RunOptions {
        gpu: Some(gpu.to_string()),
        ..sets(pairs)
    };
    sim::run::run_file(&scenario("fa3_pingpong"), &opts).unwrap()
}

fn fa3(pairs: &[(&str, i64)]) -> sim::observe::report::Report {
    fa3_on("h100-sxm", pairs)
}

#[test]
fn fa3_on_the_whole_h200_does_what_cudnn_does_per_sm_cycle() {
    // 2 heads x 66 query blocks of 128 rows: one tile per SM, 48 KV blocks of 176 each.
    let r = fa3_on("h200-sxm", &[]);
    assert_eq!((r.ctas, r.sms), (132, 132));
    assert_eq!(r.flops, 2 * 8448 * 8448 * 128 * 4 / 2 * 2);
    let per_sm_cycle = r.flops as f64 / (r.cycles as f64 * 132.0);
    // cuDNN's FA3-class kernel at head dim 128, seqlen 8k: 2,946 FLOP per SM-cycle
    // (calibration/data/h200-attention.csv, attn_flop_per_sm_cycle cudnn_hd128_s8192).
    assert!(
        (per_sm_cycle / 2946.07 - 1.0).abs() < 0.15,
        "{per_sm_cycle:.0} FLOP per SM-cycle"
    );
}

#[test]
fn causal_fa3_does_half_the_work_and_longest_first_balances_it() {
    // 16 heads x 16 query blocks of 128 rows, KV blocks of 128: tile m sees m + 1 blocks.
    let base = [("causal", 1), ("heads", 16), ("seqlen", 2048)];
    let lpt = fa3(&base);
    let blocks: u64 = 16 * (1..=16).sum::<u64>();
    assert_eq!(lpt.flops, blocks * 4 * 128 * 128 * 128);
    let full = fa3(&[("heads", 16), ("seqlen", 2048), ("bn", 128)]);
    assert_eq!(full.flops * 17, lpt.flops * 32);
    // 256 tiles on 132 SMs: longest first leaves each SM within a few blocks of the mean;
    // head by head, first block first, the last tiles handed out are the longest.
    let naive = fa3(&[("causal", 1), ("heads", 16), ("seqlen", 2048), ("lpt", 0)]);
    assert_eq!(naive.flops, lpt.flops);
    let gain = naive.cycles as f64 / lpt.cycles as f64;
    assert!(gain > 1.1, "longest first: {gain:.3}x");
}
