//! Every number of the project's seed models (`docs/analytic.md`), asserted to its printed
//! precision through the analytic library: the GEMM resource model (K1), the tuner's steps (T3)
//! and the Hopper models. `sim analyze`, which prints them, is `analytic_cli.rs`; the generic
//! bound is `analytic_bound.rs`.

use sim::analytic::attention::{
    consumer_regs, effective_intensity, kv_intensity, required_hit, softmax_cost,
};
use sim::analytic::gemm::{check, Gemm, Illegal, TileConfig};
use sim::analytic::gpu::GpuSpec;
use sim::analytic::occupancy::{occupancy, waves};
use sim::analytic::roofline::{roofline, Bound};
use sim::analytic::tune::{
    early_prune, perf_model, pick_best, rank, space, tie_group, top_k, SEED_MEDIANS,
};
use sim::analytic::wgmma::{feed, min_fed_n};

fn tile(bm: u64, bn: u64, bk: u64, warps: u64, stages: u64) -> TileConfig {
    TileConfig::new(bm, bn, bk, warps, stages).unwrap()
}

fn k1() -> (GpuSpec, Gemm, TileConfig) {
    (
        GpuSpec::rtx3070(),
        Gemm::new(4096, 4096, 4096).unwrap(),
        tile(128, 128, 64, 4, 3),
    )
}

fn ms(s: f64, decimals: usize) -> String {
    format!("{:.*}", decimals, s * 1e3)
}

fn us(s: f64, decimals: usize) -> String {
    format!("{:.*}", decimals, s * 1e6)
}

fn pct(f: f64, decimals: usize) -> String {
    format!("{:.*}", decimals, f * 100.0)
}

// ---- GEMM resource model (K1) ----

#[test]
fn k1_flops_and_bytes() {
    let (_, g, t) = k1();
    assert_eq!(g.flops(), 137_438_953_472);
    assert_eq!(g.min_bytes(), 100_663_296);
    assert_eq!(g.min_bytes() >> 20, 96);
    assert_eq!(g.tiled_bytes(&t), 2_181_038_080);
    // A read once per column of tiles, B once per row of tiles.
    assert_eq!((g.tile_cols(&t), g.tile_rows(&t)), (32, 32));
    assert_eq!(
        format!("{:.1}", g.tiled_bytes(&t) as f64 / g.min_bytes() as f64),
        "21.7"
    );
    // A 256x256 tile re-reads A and B only 16 times.
    assert_eq!(g.tile_cols(&tile(256, 256, 32, 8, 2)), 16);
}

#[test]
fn k1_intensities_and_balance() {
    let (gpu, g, t) = k1();
    let f = g.flops() as f64;
    assert_eq!(format!("{:.0}", f / g.min_bytes() as f64), "1365");
    assert_eq!(format!("{:.0}", f / g.tiled_bytes(&t) as f64), "63");
    assert_eq!(format!("{:.0}", gpu.balance()), "89");
}

#[test]
fn k1_resources_and_occupancy() {
    let (gpu, _, t) = k1();
    assert_eq!(t.smem_bytes(), 98_304);
    assert_eq!(t.regs_per_thread(), 168);
    let o = check(&gpu, &t).unwrap();
    assert_eq!(
        (o.threads, o.regs, o.smem, o.blocks),
        (12, 3, Some(1), 16),
        "limits threads/regs/smem/blocks"
    );
    assert_eq!((o.ctas, o.limiter), (1, "smem"));
}

#[test]
fn k1_stage_and_bk_variants_from_the_seed_text() {
    let gpu = GpuSpec::rtx3070();
    let two_stages = tile(128, 128, 64, 4, 2);
    assert_eq!(two_stages.smem_bytes(), 65_536);
    assert_eq!(occupancy(&gpu, &two_stages.block()).smem, Some(1));
    let bk32 = tile(128, 128, 32, 4, 3);
    assert_eq!(bk32.smem_bytes(), 49_152);
    assert_eq!(occupancy(&gpu, &bk32.block()).smem, Some(2));
}

#[test]
fn k1_waves_at_one_and_two_ctas_per_sm() {
    let (gpu, g, t) = k1();
    let w = waves(&gpu, g.tiles(&t), 1);
    assert_eq!((w.tiles, w.per_wave, w.waves), (1024, 46, 23));
    assert_eq!(w.tiles - (w.waves - 1) * w.per_wave, 12);
    assert_eq!(pct(w.last_fill, 0), "26");
    assert_eq!(pct(w.efficiency, 1), "96.8");
    let w = waves(&gpu, g.tiles(&t), 2);
    assert_eq!((w.per_wave, w.waves), (92, 12));
    assert_eq!(pct(w.last_fill, 0), "13");
    assert_eq!(pct(w.efficiency, 1), "92.8");
}

#[test]
fn k1_roofline_rows() {
    let (gpu, g, t) = k1();
    let flops = g.flops() as f64;

    let r = roofline(&gpu, flops, g.min_bytes() as f64);
    assert_eq!(
        (ms(r.t_compute, 2), ms(r.t_memory, 2)),
        ("3.44".into(), "0.22".into())
    );
    assert_eq!(r.bound, Bound::Compute);

    let r = roofline(&gpu, flops, g.tiled_bytes(&t) as f64);
    assert_eq!(
        (ms(r.t_compute, 2), ms(r.t_memory, 2)),
        ("3.44".into(), "4.87".into())
    );
    assert_eq!(r.bound, Bound::Memory);

    // Vector add of 2^24 fp16 elements: one FLOP and 6 bytes (two reads, one write) each.
    let n = (1u64 << 24) as f64;
    let r = roofline(&gpu, n, 6.0 * n);
    assert_eq!(
        (us(r.t_compute, 1), us(r.t_memory, 0)),
        ("0.4".into(), "225".into())
    );
    assert_eq!(r.bound, Bound::Memory);

    let small = Gemm::new(64, 64, 64).unwrap();
    let r = roofline(&gpu, small.flops() as f64, small.min_bytes() as f64);
    assert_eq!(
        (us(r.t_compute, 3), us(r.t_memory, 2)),
        ("0.013".into(), "0.05".into())
    );
    assert_eq!(r.bound, Bound::Launch);
}

#[test]
fn k1_l2_aware_bytes_undo_the_memory_bound_illusion() {
    let (gpu, g, t) = k1();
    let flops = g.flops() as f64;
    // With every re-read hitting L2 the tiled GEMM moves the minimum bytes: compute-bound.
    assert_eq!(g.l2_dram_bytes(&t, 1.0), g.min_bytes() as f64);
    assert_eq!(
        roofline(&gpu, flops, g.l2_dram_bytes(&t, 0.9)).bound,
        Bound::Compute
    );
    // Above a 30% hit rate on the A/B reads the model already says compute.
    let h = g.compute_bound_hit(&gpu, &t).unwrap();
    assert_eq!(pct(h, 0), "30");
    assert_eq!(
        roofline(&gpu, flops, g.l2_dram_bytes(&t, h - 0.01)).bound,
        Bound::Memory
    );
    assert_eq!(
        roofline(&gpu, flops, g.l2_dram_bytes(&t, h + 0.01)).bound,
        Bound::Compute
    );
}

#[test]
fn k1_self_test_tie_goes_to_regs() {
    let gpu = GpuSpec::rtx3070();
    let t = tile(256, 128, 32, 8, 3);
    assert_eq!((t.smem_bytes(), t.regs_per_thread()), (73_728, 168));
    let o = occupancy(&gpu, &t.block());
    assert_eq!((o.threads, o.regs, o.smem, o.blocks), (6, 1, Some(1), 16));
    assert_eq!(o.limiter, "regs");
}

#[test]
fn k1_illegal_examples() {
    let gpu = GpuSpec::rtx3070();
    assert_eq!(
        check(&gpu, &tile(128, 256, 64, 4, 3)),
        Err(Illegal::Smem {
            bytes: 147_456,
            max: 101_376
        })
    );
    // 65536/128 + 40 registers per thread.
    assert_eq!(tile(256, 256, 32, 4, 2).regs_per_thread(), 552);
}

// ---- autotuner (T3) ----

#[test]
fn t3_early_prune_on_4096_cubed() {
    let (gpu, g, _) = k1();
    let all = space();
    assert_eq!(all.len(), 192);
    let p = early_prune(&gpu, &g, &all);
    assert_eq!((p.kept.len(), p.pruned.len()), (146, 46));
    assert_eq!((p.count("smem"), p.count("regs")), (34, 12));
    assert_eq!((p.count("fit"), p.count("padding")), (0, 0));
}

#[test]
fn t3_padding_rule_for_m_100() {
    let gpu = GpuSpec::rtx3070();
    let g = Gemm::new(100, 4096, 4096).unwrap();
    let p = early_prune(&gpu, &g, &space());
    assert_eq!(p.count("padding"), 20);
    for (t, why) in p.pruned.iter().filter(|(_, w)| w.reason() == "padding") {
        assert_eq!(t.bm, 256);
        assert_eq!(why.to_string(), "61% of the tile grid is padding");
    }
    assert_eq!(p.kept.iter().filter(|t| t.bm == 256).count(), 0);
}

#[test]
fn t3_one_more_tile_costs_a_whole_wave() {
    let gpu = GpuSpec::rtx3070();
    let t = tile(128, 128, 32, 4, 3);
    let full = perf_model(&gpu, &Gemm::new(128 * 92, 128, 4096).unwrap(), &t).unwrap();
    assert_eq!((full.ctas_per_sm, full.waves), (2, 1));
    assert_eq!(ms(full.predicted_s, 3), "0.442");
    assert_eq!(ms(full.memory_s, 3), "0.437");
    assert!(full.memory_s > full.compute_s, "the memory floor binds");

    let over = perf_model(&gpu, &Gemm::new(128 * 93, 128, 4096).unwrap(), &t).unwrap();
    assert_eq!(over.waves, 2);
    assert_eq!(ms(over.predicted_s, 3), "0.622");
    assert!(over.compute_s > over.memory_s, "two compute waves bind");

    assert_eq!(format!("{:.1}", (93.0 / 92.0 - 1.0) * 100.0), "1.1");
    assert_eq!(pct(over.predicted_s / full.predicted_s - 1.0, 0), "41");
}

#[test]
fn t3_perf_model_tie_group_of_eight() {
    let (gpu, g, _) = k1();
    let kept = early_prune(&gpu, &g, &space()).kept;
    let ranked = rank(&gpu, &g, &kept);
    let best = &ranked[0];
    assert_eq!((best.ctas_per_sm, best.waves), (1, 12));
    assert_eq!(ms(best.compute_s / 12.0, 4), "0.3087");
    assert_eq!(ms(best.predicted_s, 3), "3.709");
    assert_eq!(tie_group(&ranked), 8);
    let ties: Vec<TileConfig> = ranked[..8].iter().map(|p| p.config).collect();
    let expect = [
        tile(128, 256, 32, 8, 2),
        tile(128, 256, 32, 8, 3),
        tile(128, 256, 32, 8, 4),
        tile(128, 256, 64, 8, 2),
        tile(256, 128, 32, 8, 2),
        tile(256, 128, 32, 8, 3),
        tile(256, 128, 32, 8, 4),
        tile(256, 128, 64, 8, 2),
    ];
    assert_eq!(ties, expect);
    assert_ne!(ms(ranked[8].predicted_s, 3), "3.709");
    // The seed's "top 5" would cut the tie group; top_k is raised to eight.
    assert_eq!(top_k(&ranked, 5), 8);
}

#[test]
fn t3_pick_best_on_the_seed_table() {
    let p = pick_best(&SEED_MEDIANS).unwrap();
    let (fastest, chosen) = (&SEED_MEDIANS[p.fastest], &SEED_MEDIANS[p.chosen]);
    assert_eq!(fastest.config, tile(128, 256, 64, 8, 2));
    assert_eq!(format!("{:.3}", fastest.median_ms), "3.760");
    assert_eq!(fastest.config.smem_bytes(), 98_304);
    assert_eq!(chosen.config, tile(256, 128, 32, 8, 2));
    assert_eq!(format!("{:.3}", chosen.median_ms), "3.877");
    assert_eq!(chosen.config.smem_bytes(), 49_152);
    assert_eq!(pct(chosen.median_ms / fastest.median_ms - 1.0, 0), "3");
    assert_eq!(chosen.config.smem_bytes() * 2, fastest.config.smem_bytes());
    // Every shown row overlaps the fastest's band; 128x256x32 ties on shared memory and
    // loses on median.
    assert_eq!(p.overlapping, vec![0, 1, 2, 3]);
}

// ---- Hopper models ----

#[test]
fn hopper_tensor_rate_and_smem_port() {
    let gpu = GpuSpec::h100_sxm();
    assert_eq!(gpu.tensor_flops_per_clk, 4096);
    assert_eq!(gpu.tensor_flops_per_clk / 2 / 4, 512, "FMA per tensor core");
    assert_eq!(gpu.smem_bytes_per_clk, 128);
    assert_eq!(format!("{:.0}", gpu.balance()), "295");
}

#[test]
fn hopper_wgmma_feed() {
    let gpu = GpuSpec::h100_sxm();
    assert_eq!(min_fed_n(&gpu), Some(64.0));
    for (n, ratio) in [(64, "1.00"), (128, "1.33"), (256, "1.60")] {
        assert_eq!(format!("{:.2}", feed(&gpu, n).ss_ratio()), ratio, "N = {n}");
    }
    assert_eq!(format!("{:.2}", feed(&gpu, 32).ss_utilization()), "0.67");
    assert!(feed(&gpu, 4096).ss_ratio() < 2.0);
    assert_eq!(feed(&gpu, 32).rs_utilization(), 1.0);
}

#[test]
fn hopper_consumer_registers() {
    let r = consumer_regs(256, 128);
    assert_eq!((r.s, r.o, r.total()), (128, 64, 192));
}

#[test]
fn hopper_attention_l2_hit() {
    let h100 = GpuSpec::h100_sxm();
    let m = kv_intensity(64, 256, 128);
    assert_eq!(m, 64.0);
    assert_eq!(
        format!("{:.1}", h100.balance() / m),
        "4.6",
        "more than 4x short"
    );
    assert_eq!(pct(required_hit(&h100, m), 0), "78");
    assert_eq!(format!("{:.0}", effective_intensity(m, 0.8)), "320");
    assert_eq!(pct(required_hit(&GpuSpec::h200_sxm(), m), 0), "69");
}

#[test]
fn hopper_softmax_exp_costs_half_the_matmul_at_hd_128() {
    // FA3 (Shah et al., arXiv:2407.08608) §3.1: exp costs about half the matmul time at hd 128;
    // one 128x176 step (FA3's hd-128 tile, flash-attention hopper/tile_size.h).
    let s = softmax_cost(&GpuSpec::h100_sxm(), 128, 176, 128);
    assert_eq!(format!("{:.1}", 4.0 * 128.0 * 176.0 * 128.0 / 1e6), "11.5");
    assert_eq!((s.tensor_clk, s.exps, s.mufu_clk), (2816.0, 22_528, 1408.0));
    assert_eq!(pct(s.ratio(), 0), "50");
}
