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
