//! The autotuner's analytic steps (the autotuner T3 of the project's seed models, modelled on
//! `triton.autotune`; `docs/analytic.md`): the config space, `early_prune` with reasons, the
//! wave-quantized `perf_model` with its `top_k` ranking, and `pick_best` on a table of measured
//! quantiles. The measuring sweep itself lives elsewhere.

use super::error::InputError;
use super::gemm::{check, Gemm, Illegal, TileConfig};
use super::gpu::GpuSpec;
use super::occupancy::waves;
use std::fmt;

/// The space that reproduces the seed's prune counts (the seed gives only its size, 192).
pub const BLOCK_MN: [u64; 4] = [32, 64, 128, 256];
pub const BLOCK_K: [u64; 2] = [32, 64];
pub const WARPS: [u64; 2] = [4, 8];
pub const STAGES: [u64; 3] = [2, 3, 4];

/// A tile is dropped when more than this share of its grid is padding.
pub const MAX_PADDING: f64 = 0.5;

/// Predictions this close (relative) count as one tie group: the model cannot order them.
const TIE_TOLERANCE: f64 = 1e-9;

/// Triton's Hopper matmul space for `sim tune` (216 configs): wgmma's m64 instructions need BM of
/// 64 or more, and Hopper's 227 KB of shared memory makes BK = 128 and a fifth stage worth trying.
pub const HOPPER_BLOCK_MN: [u64; 3] = [64, 128, 256];
pub const HOPPER_BLOCK_K: [u64; 3] = [32, 64, 128];
pub const HOPPER_STAGES: [u64; 4] = [2, 3, 4, 5];

/// The axes of a config space: BM, BN, BK, warps and stages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Space {
    pub block_mn: &'static [u64],
    pub block_k: &'static [u64],
    pub warps: &'static [u64],
    pub stages: &'static [u64],
}

impl Space {
    /// The classic space (192 configs): `sim analyze gemm --tune`, and `sim tune` on Ampere.
    pub const SEED: Space = Space {
        block_mn: &BLOCK_MN,
        block_k: &BLOCK_K,
        warps: &WARPS,
        stages: &STAGES,
    };
    pub const HOPPER: Space = Space {
        block_mn: &HOPPER_BLOCK_MN,
        block_k: &HOPPER_BLOCK_K,
        warps: &WARPS,
        stages: &HOPPER_STAGES,
    };

    /// Triton's configs for `gpu`: Hopper's with wgmma, else the classic 192.
    pub fn triton(gpu: &GpuSpec) -> Space {
        if gpu.has_wgmma {
            Space::HOPPER
        } else {
            Space::SEED
        }
    }

    /// Every config, BM outermost, stages innermost.
    pub fn configs(&self) -> Vec<TileConfig> {
        let mut out = Vec::new();
        for &bm in self.block_mn {
            for &bn in self.block_mn {
                for &bk in self.block_k {
                    for &warps in self.warps {
                        for &stages in self.stages {
                            out.push(TileConfig {
                                bm,
                                bn,
                                bk,
                                warps,
                                stages,
                            });
                        }
                    }
                }
            }
        }
        out
    }
}

impl fmt::Display for Space {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "BM, BN in {:?}, BK in {:?}, warps {:?}, stages {:?}",
            self.block_mn, self.block_k, self.warps, self.stages
        )
    }
}

/// The seed's space: every config, BM outermost, stages innermost.
pub fn space() -> Vec<TileConfig> {
    Space::SEED.configs()
}

/// Why `early_prune` dropped a config.
#[derive(Clone, Debug, PartialEq)]
pub enum Prune {
    Illegal(Illegal),
    /// Share of the tile grid that is padding.
    Padding(f64),
}

impl Prune {
    /// Short name of the reason: `smem`, `regs`, `fit` or `padding`.
    pub fn reason(&self) -> &'static str {
        match self {
            Prune::Illegal(Illegal::Smem { .. }) => "smem",
            Prune::Illegal(Illegal::Regs { .. }) => "regs",
            Prune::Illegal(Illegal::NoFit { .. }) => "fit",
            Prune::Padding(_) => "padding",
        }
    }
}

impl fmt::Display for Prune {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Prune::Illegal(i) => i.fmt(f),
            Prune::Padding(p) => write!(f, "{:.0}% of the tile grid is padding", p * 100.0),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Pruned {
    pub kept: Vec<TileConfig>,
    pub pruned: Vec<(TileConfig, Prune)>,
}

impl Pruned {
    pub fn count(&self, reason: &str) -> usize {
        self.pruned
            .iter()
            .filter(|(_, p)| p.reason() == reason)
            .count()
    }
}

/// Drops configs that cannot launch (shared memory checked first, then registers) and then
/// tiles that are mostly padding for this problem.
pub fn early_prune(gpu: &GpuSpec, g: &Gemm, configs: &[TileConfig]) -> Pruned {
    let mut out = Pruned {
        kept: Vec::new(),
        pruned: Vec::new(),
    };
    for &t in configs {
        match check(gpu, &t) {
            Err(i) => out.pruned.push((t, Prune::Illegal(i))),
            Ok(_) if g.padding(&t) > MAX_PADDING => {
                out.pruned.push((t, Prune::Padding(g.padding(&t))))
            }
            Ok(_) => out.kept.push(t),
        }
    }
    out
}

/// The perf model's view of one config.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    pub config: TileConfig,
    pub ctas_per_sm: u64,
    pub waves: u64,
    /// Whole waves at per-SM peak: a partial last wave costs as much as a full one.
    pub compute_s: f64,
    /// Tiled bytes (no L2) at DRAM bandwidth: a floor.
    pub memory_s: f64,
    pub predicted_s: f64,
}

/// `max(waves · per_wave, tiled_bytes / bandwidth) + launch`, where a wave runs `occupancy`
/// tiles per SM at the SM's share of peak.
pub fn perf_model(gpu: &GpuSpec, g: &Gemm, t: &TileConfig) -> Result<Prediction, Illegal> {
    let ctas_per_sm = check(gpu, t)?.ctas;
    let w = waves(gpu, g.tiles(t), ctas_per_sm);
    let sm_flops = gpu.peak_flops / gpu.sms as f64;
    let per_wave = ctas_per_sm as f64 * 2.0 * (t.bm * t.bn * g.k) as f64 / sm_flops;
    let compute_s = w.waves as f64 * per_wave;
    let memory_s = g.tiled_bytes(t) as f64 / gpu.dram_bytes_per_s;
    Ok(Prediction {
        config: *t,
        ctas_per_sm,
        waves: w.waves,
        compute_s,
        memory_s,
        predicted_s: compute_s.max(memory_s) + gpu.launch_s,
    })
}

/// Launchable configs by predicted time, fastest first; equal predictions keep `configs` order.
pub fn rank(gpu: &GpuSpec, g: &Gemm, configs: &[TileConfig]) -> Vec<Prediction> {
    let mut ranked: Vec<Prediction> = configs
        .iter()
        .filter_map(|t| perf_model(gpu, g, t).ok())
        .collect();
    ranked.sort_by(|a, b| a.predicted_s.total_cmp(&b.predicted_s));
    ranked
}

/// How many configs share the best prediction.
pub fn tie_group(ranked: &[Prediction]) -> usize {
    let Some(best) = ranked.first() else {
        return 0;
    };
    ranked
        .iter()
        .take_while(|p| {
            (p.predicted_s - best.predicted_s).abs() <= TIE_TOLERANCE * best.predicted_s
        })
        .count()
}

/// `top_k` never cuts the tie group: the model cannot say which of its members is faster.
pub fn top_k(ranked: &[Prediction], k: usize) -> usize {
    k.max(tie_group(ranked)).min(ranked.len())
}

/// One measured config: median and the [p20, p80] band, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    pub config: TileConfig,
    pub median_ms: f64,
    pub p20_ms: f64,
    pub p80_ms: f64,
}

impl Measured {
    pub fn overlaps(&self, other: &Measured) -> bool {
        self.p20_ms <= other.p80_ms && other.p20_ms <= self.p80_ms
    }
}

const fn measured(t: [u64; 5], median_ms: f64, p20_ms: f64, p80_ms: f64) -> Measured {
    Measured {
        config: TileConfig {
            bm: t[0],
            bn: t[1],
            bk: t[2],
            warps: t[3],
            stages: t[4],
        },
        median_ms,
        p20_ms,
        p80_ms,
    }
}

/// The rows of the seed's sweep table (the autotuner T3's `sweep` and `pick_best` step, 4096³ on
/// the RTX 3070, `fake_measure` with seed 0); the seed elides the rest of its top 8.
pub const SEED_MEDIANS: [Measured; 4] = [
    measured([128, 256, 64, 8, 2], 3.760, 3.686, 3.880),
    measured([256, 128, 32, 8, 3], 3.761, 3.683, 3.795),
    measured([256, 128, 32, 8, 2], 3.877, 3.765, 3.980),
    measured([128, 256, 32, 8, 2], 3.894, 3.838, 4.061),
];

/// `pick_best`'s decision, as indices into the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pick {
    /// Smallest median (the first on a tie).
    pub fastest: usize,
    /// Rows whose band overlaps the fastest's band, the fastest included.
    pub overlapping: Vec<usize>,
    /// Least shared memory among those; ties go to the smaller median.
    pub chosen: usize,
}

/// `None` for an empty table.
pub fn pick_best(table: &[Measured]) -> Option<Pick> {
    let fastest =
        (0..table.len()).min_by(|&a, &b| table[a].median_ms.total_cmp(&table[b].median_ms))?;
    let overlapping: Vec<usize> = (0..table.len())
        .filter(|&i| table[i].overlaps(&table[fastest]))
        .collect();
    let chosen = *overlapping.iter().min_by(|&&a, &&b| {
        let key = |i: usize| table[i].config.smem_bytes();
        key(a)
            .cmp(&key(b))
            .then(table[a].median_ms.total_cmp(&table[b].median_ms))
    })?;
    Some(Pick {
        fastest,
        overlapping,
        chosen,
    })
}

/// Why a table of measurements (or a list of configs) cannot be read.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MediansError {
    #[error("{origin}:{line}: {problem}")]
    Line {
        origin: String,
        line: usize,
        problem: MedianLineError,
    },
    /// The input and what it should have held (`measurements`, `configs`).
    #[error("{0}: no {1}")]
    Empty(String, &'static str),
}

/// What is wrong with one line of a table of measurements.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MedianLineError {
    #[error("expected `BMxBNxBK warps stages median p20 p80`, found {0} fields")]
    Fields(usize),
    #[error("expected `BMxBNxBK warps stages`, found {0} fields")]
    ConfigFields(usize),
    #[error("expected `M N K`, found {0} fields")]
    ShapeFields(usize),
    #[error(transparent)]
    Config(#[from] InputError),
    #[error("{name} `{text}` is not a whole number")]
    NotWhole { name: &'static str, text: String },
    #[error("{name} `{text}` is not a positive time in ms")]
    NotATime { name: &'static str, text: String },
    #[error("need p20 <= median <= p80")]
    Unordered,
}

/// Reads a table of measurements: one config per line, `BMxBNxBK warps stages median p20 p80`
/// (milliseconds); `#` starts a comment. `origin` names the input in errors.
pub fn parse_medians(text: &str, origin: &str) -> Result<Vec<Measured>, MediansError> {
    parse_lines(text, origin, "measurements", parse_median_line)
}

/// Reads a list of configs: one `BMxBNxBK warps stages` per line; `#` starts a comment.
pub fn parse_configs(text: &str, origin: &str) -> Result<Vec<TileConfig>, MediansError> {
    parse_lines(text, origin, "configs", |line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields[..] {
            [tile, warps, stages] => parse_config(tile, warps, stages),
            _ => Err(MedianLineError::ConfigFields(fields.len())),
        }
    })
}

/// Reads a list of problems: one `M N K` per line; `#` starts a comment.
pub fn parse_shapes(text: &str, origin: &str) -> Result<Vec<Gemm>, MediansError> {
    parse_lines(text, origin, "shapes", |line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [m, n, k] = fields[..] else {
            return Err(MedianLineError::ShapeFields(fields.len()));
        };
        let int = |text: &str, name| {
            text.parse::<u64>().map_err(|_| MedianLineError::NotWhole {
                name,
                text: text.to_string(),
            })
        };
        Ok(Gemm::new(int(m, "M")?, int(n, "N")?, int(k, "K")?)?)
    })
}

/// The non-blank lines of `text`, comments stripped, each through `parse`; errors name
/// `origin` and the line.
fn parse_lines<T>(
    text: &str,
    origin: &str,
    what: &'static str,
    parse: impl Fn(&str) -> Result<T, MedianLineError>,
) -> Result<Vec<T>, MediansError> {
    let mut rows = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let row = parse(line).map_err(|problem| MediansError::Line {
            origin: origin.to_string(),
            line: i + 1,
            problem,
        })?;
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(MediansError::Empty(origin.to_string(), what));
    }
    Ok(rows)
}

/// `BMxBNxBK`, warps and stages as written.
fn parse_config(tile: &str, warps: &str, stages: &str) -> Result<TileConfig, MedianLineError> {
    let (bm, bn, bk) = TileConfig::parse_tile(tile)?;
    let int = |text: &str, name| {
        text.parse::<u64>().map_err(|_| MedianLineError::NotWhole {
            name,
            text: text.to_string(),
        })
    };
    Ok(TileConfig::new(
        bm,
        bn,
        bk,
        int(warps, "warps")?,
        int(stages, "stages")?,
    )?)
}

/// One line of [`parse_medians`], comment and blanks stripped.
fn parse_median_line(line: &str) -> Result<Measured, MedianLineError> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [tile, warps, stages, median, p20, p80] = fields[..] else {
        return Err(MedianLineError::Fields(fields.len()));
    };
    let config = parse_config(tile, warps, stages)?;
    let ms = |text: &str, name| match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(MedianLineError::NotATime {
            name,
            text: text.to_string(),
        }),
    };
    let row = Measured {
        config,
        median_ms: ms(median, "median")?,
        p20_ms: ms(p20, "p20")?,
        p80_ms: ms(p80, "p80")?,
    };
    if !(row.p20_ms <= row.median_ms && row.median_ms <= row.p80_ms) {
        return Err(MedianLineError::Unordered);
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile(bm: u64, bn: u64, bk: u64, warps: u64, stages: u64) -> TileConfig {
        TileConfig::new(bm, bn, bk, warps, stages).unwrap()
    }

    #[test]
    fn space_is_the_product_of_its_axes() {
        let s = space();
        assert_eq!(s.len(), 4 * 4 * 2 * 2 * 3);
        assert_eq!(s[0], tile(32, 32, 32, 4, 2));
        assert_eq!(s[191], tile(256, 256, 64, 8, 4));
        let h = Space::HOPPER.configs();
        assert_eq!(h.len(), 216);
        assert_eq!(h[0], tile(64, 64, 32, 4, 2));
        assert_eq!(h[215], tile(256, 256, 128, 8, 5));
    }

    #[test]
    fn configs_parse_one_per_line() {
        let c = parse_configs("128x256x64 8 3 # Triton's\n\n64x64x32 4 2\n", "c.txt").unwrap();
        assert_eq!(c, vec![tile(128, 256, 64, 8, 3), tile(64, 64, 32, 4, 2)]);
        let e = parse_configs("64x64x32 4", "c.txt")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "c.txt:1: expected `BMxBNxBK warps stages`, found 2 fields"
        );
        let g = parse_shapes("# M N K\n4096 4096 512\n", "s.txt").unwrap();
        assert_eq!(g, vec![Gemm::new(4096, 4096, 512).unwrap()]);
        let e = parse_shapes("1 2", "s.txt").unwrap_err().to_string();
        assert_eq!(e, "s.txt:1: expected `M N K`, found 2 fields");
        assert_eq!(
            parse_shapes("", "s.txt").unwrap_err().to_string(),
            "s.txt: no shapes"
        );
    }

    #[test]
    fn padding_prunes_only_tiles_mostly_outside_the_problem() {
        let gpu = GpuSpec::rtx3070();
        let g = Gemm::new(100, 100, 64).unwrap();
        let configs = [tile(64, 64, 32, 4, 2), tile(256, 64, 32, 4, 2)];
        let p = early_prune(&gpu, &g, &configs);
        // 64-row tiles: a 128 x 128 grid, 39% padding, kept; 256 x 64 tiles: 256 x 128, 69%.
        assert_eq!(p.kept, vec![configs[0]]);
        assert_eq!(p.count("padding"), 1);
        assert_eq!(p.pruned[0].1.to_string(), "69% of the tile grid is padding");
    }

    #[test]
    fn perf_model_counts_whole_waves_at_per_sm_peak() {
        let gpu = GpuSpec::rtx3070();
        // 47 tiles of 64 x 64; shared memory allows 6 CTAs/SM, so 276 per wave: one wave.
        let g = Gemm::new(64 * 47, 64, 64).unwrap();
        let t = tile(64, 64, 32, 4, 2);
        let p = perf_model(&gpu, &g, &t).unwrap();
        assert_eq!((p.ctas_per_sm, p.waves), (6, 1));
        let per_tile = 2.0 * 64.0 * 64.0 * 64.0 / (40e12 / 46.0);
        assert_eq!(p.compute_s, 6.0 * per_tile);
        assert_eq!(p.memory_s, g.tiled_bytes(&t) as f64 / 448e9);
        assert_eq!(p.predicted_s, p.compute_s.max(p.memory_s) + 5e-6);
    }

    #[test]
    fn top_k_is_raised_to_the_tie_group() {
        let gpu = GpuSpec::rtx3070();
        let g = Gemm::new(4096, 4096, 4096).unwrap();
        // Two configs the model cannot tell apart, then a slower one.
        let configs = [
            tile(64, 64, 32, 4, 2),
            tile(128, 256, 32, 8, 2),
            tile(128, 256, 32, 8, 3),
        ];
        let ranked = rank(&gpu, &g, &configs);
        assert_eq!(ranked[0].config, configs[1]);
        assert_eq!(tie_group(&ranked), 2);
        assert_eq!(top_k(&ranked, 1), 2);
        assert_eq!(top_k(&ranked, 5), 3);
        assert_eq!(tie_group(&[]), 0);
    }

    #[test]
    fn pick_best_prefers_less_shared_memory_inside_the_band() {
        let row = |t: TileConfig, m: f64, lo: f64, hi: f64| Measured {
            config: t,
            median_ms: m,
            p20_ms: lo,
            p80_ms: hi,
        };
        let big = tile(128, 128, 64, 4, 3);
        let small = tile(64, 64, 32, 4, 2);
        // The smaller config's band misses the fastest's: the fastest stays.
        let apart = [row(big, 1.0, 0.9, 1.1), row(small, 1.3, 1.2, 1.4)];
        assert_eq!(pick_best(&apart).unwrap().chosen, 0);
        // Touching bands overlap.
        let touching = [row(big, 1.0, 0.9, 1.1), row(small, 1.3, 1.1, 1.4)];
        let p = pick_best(&touching).unwrap();
        assert_eq!(
            (p.fastest, p.overlapping.clone(), p.chosen),
            (0, vec![0, 1], 1)
        );
        assert_eq!(pick_best(&[]), None);
    }

    #[test]
    fn medians_parse_with_comments_and_report_bad_lines() {
        let text = "# sweep\n128x256x64 8 2 3.760 3.686 3.880  # fastest\n\n";
        let rows = parse_medians(text, "m.txt").unwrap();
        assert_eq!(rows, vec![SEED_MEDIANS[0]]);
        for (text, error) in [
            (
                "128x256x64 8 2 3.7",
                "m.txt:1: expected `BMxBNxBK warps stages median p20 p80`, found 4 fields",
            ),
            (
                "\n128x256x64 8 2 3.7 3.8 3.9",
                "m.txt:2: need p20 <= median <= p80",
            ),
            (
                "128x256x64 8 two 1 1 1",
                "m.txt:1: stages `two` is not a whole number",
            ),
            (
                "1x1x1 1 1 nan 1 1",
                "m.txt:1: median `nan` is not a positive time in ms",
            ),
            ("# none", "m.txt: no measurements"),
        ] {
            assert_eq!(parse_medians(text, "m.txt").unwrap_err().to_string(), error);
        }
    }
}
