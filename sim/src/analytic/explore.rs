//! `sim explore -o page.html`: one self-contained HTML page (no network, charts in SVG) with
//! four widgets over the analytic models, for every GPU preset: occupancy (block size,
//! registers per thread, shared memory per block → the four limits and the binding one), the
//! wgmma feed over N, attention's K/V intensity against the L2 hit rate, and wave quantization.
//!
//! The page computes nothing: every number it shows is a cell `sim analyze` prints for the same
//! inputs, made here by the same functions over each control's whole range and embedded as
//! JSON; `explore.js` looks them up and draws the charts. Two lookups combine cells: the binding
//! occupancy limit is the smallest of the four (the first by name on a tie, as
//! [`occupancy`](super::occupancy::occupancy) picks it), and the resident warps are the CTAs
//! times the block's warps. Tables the presets share are stored once.

use super::cli::attention::intensity_rows;
use super::cli::occupancy::{ctas_cell, limit_cell, resident_share, waves_cells};
use super::cli::wgmma::{fed_n, feed_cells};
use super::cli::AnalyzeError;
use super::gpu::GpuSpec;
use super::occupancy::{cluster_waves, occupancy, waves, Block};
use super::wgmma::WGMMA_M;
use crate::gpu::preset::Preset;
use serde_json::{json, Value};

/// The wgmma N and attention's bm the sliders offer, as `sim analyze` accepts them.
const N_STEP: u64 = 8;
const N_MAX: u64 = 256;
const BM_MAX: u64 = 4 * WGMMA_M;
/// The waves widget's CTAs per SM, and its tiles up to this many waves of one CTA per SM.
const WAVE_CTAS: u64 = 4;
const WAVE_TILES: u64 = 4;

/// The page, opening on `initial` (a preset name).
pub fn page(initial: &str) -> Result<String, AnalyzeError> {
    let first = GpuSpec::by_name(initial)?;
    let mut pool = Pool::default();
    let gpus: Vec<Value> = GpuSpec::NAMES
        .iter()
        .map(|name| gpu_data(&GpuSpec::by_name(name).expect("a known name"), &mut pool))
        .collect();
    let data = json!({ "initial": first.name, "gpus": gpus, "tables": pool.0 });
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>sim explore</title>\n<style>{CSS}</style></head>\n<body>\n{BODY}<script>\nconst DATA = {};\n{SCRIPT}</script>\n</body></html>\n",
        data.to_string().replace("</", "<\\/")
    ))
}

/// Tables stored once however many presets share them; a preset names them by index.
#[derive(Default)]
struct Pool(Vec<Value>);

impl Pool {
    fn add(&mut self, table: Value) -> usize {
        self.0.iter().position(|t| *t == table).unwrap_or_else(|| {
            self.0.push(table);
            self.0.len() - 1
        })
    }
}

fn gpu_data(gpu: &GpuSpec, pool: &mut Pool) -> Value {
    json!({
        "name": gpu.name,
        "sms": gpu.sms,
        "occupancy": occupancy_data(gpu, pool),
        "waves": waves_data(gpu, pool),
        "wgmma": wgmma_data(gpu),
        "attention": attention_data(gpu, pool),
    })
}

/// Each limit over the range of the input it depends on: threads and registers per warp count
/// (1 to the largest block's), shared memory per KiB (0 to the per-CTA maximum); the
/// occupancy share per count of resident warps.
fn occupancy_data(gpu: &GpuSpec, pool: &mut Pool) -> Value {
    let max_warps = gpu.threads_per_cta / 32;
    let at = |warps: u64, regs: u64, smem: u64| {
        occupancy(
            gpu,
            &Block {
                threads: 32 * warps,
                regs_per_thread: regs,
                smem,
            },
        )
    };
    let threads: Vec<u64> = (1..=max_warps).map(|w| at(w, 1, 0).threads).collect();
    let regs: Vec<Vec<u64>> = (1..=max_warps)
        .map(|w| {
            (1..=gpu.max_regs_per_thread)
                .map(|r| at(w, r, 0).regs)
                .collect()
        })
        .collect();
    let smem: Vec<String> = (0..=gpu.smem_per_cta / 1024)
        .map(|kib| limit_cell(at(1, 1, kib * 1024).smem))
        .collect();
    let slots = gpu.threads_per_sm / 32;
    let ctas: Vec<String> = (0..=gpu.ctas_per_sm).map(ctas_cell).collect();
    let share: Vec<String> = (0..=slots).map(|w| resident_share(gpu, w)).collect();
    json!({
        "max_warps": max_warps,
        "max_regs": gpu.max_regs_per_thread,
        "blocks": gpu.ctas_per_sm,
        "slots": slots,
        "threads": pool.add(json!(threads)),
        "regs": pool.add(json!(regs)),
        "smem": pool.add(json!(smem)),
        "ctas": pool.add(json!(ctas)),
        "share": pool.add(json!(share)),
    })
}

/// Per CTAs per SM (1 to 4) and cluster size (powers of two up to the preset's largest), the
/// slots of a wave, and the waves, last wave and efficiency cells of each whole number of
/// clusters up to 4·SMs tiles.
fn waves_data(gpu: &GpuSpec, pool: &mut Pool) -> Value {
    let max_tiles = WAVE_TILES * gpu.sms;
    let preset = Preset::builtin(gpu.name).expect("every analytic GPU is a preset");
    let gpc_sms = preset.cluster.gpcs(preset.sm.count);
    let sizes: Vec<u64> = (0..)
        .map(|i| 1u64 << i)
        .take_while(|&s| s <= u64::from(preset.cluster.max_size))
        .collect();
    let at = |tiles: u64, ctas: u64, size: u64| match size {
        1 => waves(gpu, tiles, ctas),
        _ => cluster_waves(tiles, ctas as u32, &gpc_sms, size as u32)
            .expect("clusters of 16 fit a GPC"),
    };
    let ctas = 1..=WAVE_CTAS.min(gpu.ctas_per_sm);
    let per_wave: Vec<Vec<String>> = ctas
        .clone()
        .map(|c| {
            sizes
                .iter()
                .map(|&s| at(s, c, s).per_wave.to_string())
                .collect()
        })
        .collect();
    let rows: Vec<Vec<Vec<[String; 3]>>> = ctas
        .map(|c| {
            sizes
                .iter()
                .map(|&s| {
                    (1..=max_tiles / s)
                        .map(|k| waves_cells(&at(k * s, c, s)))
                        .collect()
                })
                .collect()
        })
        .collect();
    json!({
        "max_tiles": max_tiles,
        "sizes": sizes,
        "per_wave": per_wave,
        "rows": pool.add(json!(rows)),
    })
}

/// The feed cells of each N, or why this GPU has none.
fn wgmma_data(gpu: &GpuSpec) -> Value {
    if !gpu.has_wgmma {
        return json!({ "error": AnalyzeError::NoWgmma(gpu.name, "wgmma").to_string() });
    }
    let ns: Vec<u64> = (1..=N_MAX / N_STEP).map(|i| i * N_STEP).collect();
    let cells: Vec<[String; 6]> = ns.iter().map(|&n| feed_cells(gpu, n)).collect();
    json!({ "n": ns, "cells": cells, "fed": fed_n(gpu) })
}

/// Per bm (64 to 256), the intensity rows' values, and the last row's value and note at each
/// whole-percent L2 hit rate from 0 to 99%; or why this GPU has none.
fn attention_data(gpu: &GpuSpec, pool: &mut Pool) -> Value {
    if !gpu.has_wgmma {
        return json!({ "error": AnalyzeError::NoWgmma(gpu.name, "attention").to_string() });
    }
    let bms: Vec<u64> = (1..=BM_MAX / WGMMA_M).map(|i| i * WGMMA_M).collect();
    let per_bm: Vec<Value> = bms
        .iter()
        .map(|&bm| {
            let m = bm as f64;
            let rows: Vec<String> = intensity_rows(gpu, m, None)
                .into_iter()
                .map(|[_, v, _]| v)
                .collect();
            let at: Vec<[String; 2]> = (0..100)
                .map(|p| {
                    let last = intensity_rows(gpu, m, Some(p as f64 / 100.0)).pop();
                    let [_, v, note] = last.expect("a row at the hit rate");
                    [v, note]
                })
                .collect();
            json!({ "rows": rows, "at": at })
        })
        .collect();
    json!({ "bm": bms, "balance": gpu.balance(), "per_bm": pool.add(json!(per_bm)) })
}

const CSS: &str = "body{font:14px sans-serif;margin:20px;color:#222;max-width:1240px}\
h2{margin:0 0 6px}.note{color:#666;max-width:1100px}\
.widgets{display:grid;grid-template-columns:repeat(2,600px);gap:20px}\
section{border:1px solid #ddd;padding:10px 14px}label{display:block;margin:4px 0}\
label input{width:240px;vertical-align:middle}label span{display:inline-block;width:230px}\
table{border-collapse:collapse;margin:6px 0}td,th{padding:1px 10px 1px 0;text-align:left}\
td.v{text-align:right;font-variant-numeric:tabular-nums}tr.bind td{font-weight:bold;color:#b71c1c}\
.result{font-weight:600}.none{color:#b71c1c}svg{display:block}svg text{font-size:11px;fill:#444}";

/// The sections, controls and cells `explore.js` fills.
const BODY: &str = include_str!("explore.html");

/// Fills the cells from `DATA` on every move of a control; draws the charts; marks the page
/// rendered (or the error) for headless checks.
const SCRIPT: &str = include_str!("explore.js");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_opens_the_page_and_others_are_refused() {
        for name in GpuSpec::NAMES {
            let html = page(name).unwrap();
            assert!(html.contains(&format!("\"initial\":\"{name}\"")), "{name}");
        }
        assert_eq!(
            page("b200").unwrap_err().to_string(),
            "unknown GPU `b200`; known: h100-sxm, h200-sxm, a100-sxm, rtx3070"
        );
    }

    #[test]
    fn shared_tables_are_stored_once() {
        let mut pool = Pool::default();
        let h100 = gpu_data(&GpuSpec::h100_sxm(), &mut pool);
        let h200 = gpu_data(&GpuSpec::h200_sxm(), &mut pool);
        // Same SM: the same occupancy and wave tables; other memory: another attention table.
        assert_eq!(h100["occupancy"], h200["occupancy"]);
        assert_eq!(h100["waves"], h200["waves"]);
        assert_ne!(h100["attention"], h200["attention"]);
    }

    #[test]
    fn the_tables_hold_the_cells_sim_analyze_prints() {
        let gpu = GpuSpec::h100_sxm();
        let mut pool = Pool::default();
        let o = occupancy_data(&gpu, &mut pool);
        let table = |k: &str| &pool.0[o[k].as_u64().unwrap() as usize];
        // 8 warps at 64 registers: 4 CTAs; 48 KiB: 4; no shared memory: no limit.
        assert_eq!(table("regs")[7][63], 4);
        assert_eq!(table("threads")[7], 8);
        assert_eq!(
            (&table("smem")[48], &table("smem")[0]),
            (&json!("4"), &json!("-"))
        );
        assert_eq!(table("share")[32], "50%");
        let w = waves_data(&gpu, &mut pool);
        let rows = &pool.0[w["rows"].as_u64().unwrap() as usize];
        assert_eq!(rows[0][0][132], json!(["2", "1%", "50.4%"]));
        // Clusters of 4 (index 2): 30 fit (seven GPCs of 16-18 SMs hold 4, the one of 8 holds
        // 2), 120 of 132 slots a wave; 64 clusters (256 CTAs) take three waves, the last 13%
        // full.
        assert_eq!(w["sizes"], json!([1, 2, 4, 8, 16]));
        assert_eq!(w["per_wave"][0][2], "120");
        assert_eq!(rows[0][2][63], json!(["3", "13%", "64.6%"]));
        let a = attention_data(&gpu, &mut pool);
        let per_bm = &pool.0[a["per_bm"].as_u64().unwrap() as usize];
        assert_eq!(per_bm[0]["rows"], json!(["64", "295", "4.6x", "78%"]));
        assert_eq!(per_bm[0]["at"][50], json!(["128", "FLOP/B: memory-bound"]));
        assert_eq!(
            wgmma_data(&GpuSpec::rtx3070())["error"],
            "rtx3070 has no wgmma; the wgmma model is for Hopper (h100-sxm, h200-sxm)"
        );
    }
}
