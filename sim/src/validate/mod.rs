//! `sim validate`: every calibration microbenchmark measured on a real GPU
//! (`calibration/data/`) next to its twin scenario (`scenarios/calibration/`) simulated on a
//! preset, with the error of each row and the mean absolute error of each group
//! (`docs/validation.md`). The stored measurements and the twins are compiled in, so it runs
//! anywhere, without a GPU; `--data DIR` compares a new run of `calibration/run.sh` instead.

use crate::run::{self, RunOptions};
use clap::Args;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// GPU preset to simulate (the stored data were measured on an H200 SXM).
    #[arg(long, default_value = "h200-sxm")]
    pub gpu: String,
    /// Print one JSON object instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Read `<program>.csv` (as `calibration/run.sh` writes them to $OUT) from this folder
    /// instead of the stored `calibration/data/h200-<program>.csv`; missing files fall back to
    /// the stored ones.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Only these groups (repeatable; default all).
    #[arg(long = "group", value_name = "NAME")]
    pub groups: Vec<String>,
}

/// The stored measurements: (program, CSV text).
const STORED: &[(&str, &str)] = &[
    (
        "core",
        include_str!("../../../calibration/data/h200-core.csv"),
    ),
    (
        "wgmma",
        include_str!("../../../calibration/data/h200-wgmma.csv"),
    ),
    (
        "mem",
        include_str!("../../../calibration/data/h200-mem.csv"),
    ),
    (
        "tma",
        include_str!("../../../calibration/data/h200-tma.csv"),
    ),
    (
        "mem_bw",
        include_str!("../../../calibration/data/h200-mem_bw.csv"),
    ),
];

/// The twin scenarios: (name, RON text).
const TWINS: &[(&str, &str)] = &[
    (
        "pipes",
        include_str!("../../../scenarios/calibration/pipes.ron"),
    ),
    (
        "smem",
        include_str!("../../../scenarios/calibration/smem.ron"),
    ),
    (
        "wgmma",
        include_str!("../../../scenarios/calibration/wgmma.ron"),
    ),
    (
        "barriers",
        include_str!("../../../scenarios/calibration/barriers.ron"),
    ),
    (
        "gmem",
        include_str!("../../../scenarios/calibration/gmem.ron"),
    ),
    (
        "tma",
        include_str!("../../../scenarios/calibration/tma.ron"),
    ),
];

/// How a group's rows are judged.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Mean |simulated / measured − 1| at most this.
    Relative(f64),
    /// Every row equal (integers, such as bank-conflict wavefronts).
    Exact,
    /// Reported, not judged: the model lacks the mechanism (the reason is the group's note).
    None,
}

struct Group {
    name: &'static str,
    bound: Bound,
    note: &'static str,
}

const GROUPS: &[Group] = &[
    Group {
        name: "wgmma",
        bound: Bound::Relative(0.05),
        note:
            "cycles per wgmma m64nNk16, back to back, SS all N and RS N >= 32, 1 and 2 warpgroups",
    },
    Group {
        name: "wgmma_rs_floor",
        bound: Bound::None,
        note: "not modeled: an RS HGMMA takes at least ~13 cycles on the H200; the model's RS \
               time is its math, N/2",
    },
    Group {
        name: "pipes",
        bound: Bound::Relative(0.05),
        note: "FFMA and MUFU.EX2 warp-instructions per cycle per SM",
    },
    Group {
        name: "smem_banks",
        bound: Bound::Exact,
        note: "shared-memory wavefronts per warp-load vs width and lane stride",
    },
    Group {
        name: "bandwidth",
        bound: Bound::Relative(0.10),
        note: "shared memory, L2 (every SM reading one buffer, 1 to 132 SMs) and HBM reads \
               (66 and 132 SMs) bytes per cycle",
    },
    Group {
        name: "latency",
        bound: Bound::Relative(0.15),
        note: "dependent-issue latencies (FFMA, MUFU, LDS, LDG L2 hit and miss), wgmma \
               issue-to-wait, mbarrier hand-off, TMA load to mbarrier wake",
    },
    Group {
        name: "l2_disjoint",
        bound: Bound::None,
        note: "not modeled: SMs reading disjoint L2-resident data get ~4300 B/cycle GPU-wide \
               (32 per SM at 132 SMs, 60 for one SM) against 7446 when all read one buffer; the \
               model has one pool of L2 slices and no far-partition link",
    },
    Group {
        name: "l2_capacity",
        bound: Bound::None,
        note: "not modeled: past ~50 MiB the H200's L2 keeps almost nothing of a re-read buffer \
               (64 MiB: DRAM speed); the model's 60 MiB DRRIP L2 keeps most of it",
    },
    Group {
        name: "hbm_write_mix",
        bound: Bound::None,
        note: "not modeled: a copy moves 1544 B/cycle (read + write) against 2197 for reads \
               alone (DRAM read/write turnaround); the model's channels move either at one rate",
    },
    Group {
        name: "hbm_few_sms",
        bound: Bound::None,
        note: "not modeled: one SM streams ~47 B/cycle from DRAM (outstanding misses per SM); the \
               model has no limit on misses in flight, so an SM reaches its 77 B/cycle port",
    },
    Group {
        name: "named_barrier",
        bound: Bound::None,
        note: "not modeled: bar.sync costs 12 + 2 cycles per warp (16 to 76 cycles for 2 to 32 \
               warps); the model releases after a constant barriers.named_latency",
    },
    Group {
        name: "mbarrier_poll",
        bound: Bound::None,
        note: "not modeled: a test_wait polling loop hands a phase over slower than try_wait; \
               the model's Wait is the try_wait loop",
    },
    Group {
        name: "tma_throughput",
        bound: Bound::None,
        note: "not modeled: one issuing thread completes one multi-row box per ~580 cycles \
               whatever its size (2 to 32 KiB), and more issuing warps scale it; the model has a \
               per-operation issue interval and the SM's port",
    },
    Group {
        name: "cta_launch",
        bound: Bound::None,
        note: "not modeled: ~480 cycles between a CTA's end and the next CTA's start on an SM; \
               the model dispatches in the same cycle",
    },
];

/// Where a row's measured value comes from.
#[derive(Clone, Debug)]
enum Measured {
    /// The `value` of row (test, param).
    Value(&'static str, String),
    /// (value(hi) − value(lo)) / units: a per-step cost from two totals.
    Slope(&'static str, &'static str, &'static str, f64),
}

/// How the simulated value comes from the twin's cycles. `key` runs at `lo` and at `hi`; the
/// difference of their cycles leaves out the start and the drain, which the CUDA kernels also
/// leave out (or amortize).
#[derive(Clone, Debug)]
enum Metric {
    /// Δcycles / `per` − `minus`.
    Slope {
        key: &'static str,
        lo: i64,
        hi: i64,
        per: f64,
        minus: f64,
    },
    /// `amount` / Δcycles.
    SlopeRate {
        key: &'static str,
        lo: i64,
        hi: i64,
        amount: f64,
    },
    /// cycles / `per` − `minus` of one run.
    Single { per: f64, minus: f64 },
    /// `amount` / cycles of one run.
    SingleRate { amount: f64 },
    /// Δcycles / Δcycles of the same twin with `base` sets, rounded: a multiple of a base case.
    Degree {
        key: &'static str,
        lo: i64,
        hi: i64,
        base: Vec<(String, i64)>,
    },
}

#[derive(Clone, Debug)]
struct Spec {
    group: &'static str,
    name: String,
    unit: &'static str,
    program: &'static str,
    measured: Measured,
    twin: &'static str,
    sets: Vec<(String, i64)>,
    metric: Metric,
}

#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub group: String,
    pub name: String,
    pub unit: String,
    pub measured: f64,
    pub simulated: f64,
    /// simulated / measured − 1, or simulated − measured in an exact group.
    pub error: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct GroupResult {
    pub name: String,
    pub bound: Bound,
    pub rows: usize,
    /// Mean absolute error of the rows: relative, or in the rows' unit for an exact group.
    pub mae: f64,
    /// None where the group is not bounded.
    pub pass: Option<bool>,
    pub note: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Validation {
    pub gpu: String,
    pub rows: Vec<Row>,
    pub groups: Vec<GroupResult>,
}

impl Validation {
    /// The bounded groups over their bound, one line each.
    pub fn failures(&self) -> Vec<String> {
        self.groups
            .iter()
            .filter(|g| g.pass == Some(false))
            .map(|g| match g.bound {
                Bound::Exact => format!("{}: mean |error| {:.3}, must be 0", g.name, g.mae),
                Bound::Relative(b) => format!(
                    "{}: mean |error| {:.1}% over its {:.0}% bound",
                    g.name,
                    g.mae * 100.0,
                    b * 100.0
                ),
                Bound::None => String::new(),
            })
            .collect()
    }

    /// Both tables as text.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<16} {:<26} {:>12} {:>12} {:>8}  unit",
            "group", "microbenchmark", "measured", "simulated", "error"
        );
        for r in &self.rows {
            let exact = GROUPS
                .iter()
                .any(|g| g.name == r.group && g.bound == Bound::Exact);
            let err = if exact {
                format!("{:+.0}", r.error)
            } else {
                format!("{:+.1}%", r.error * 100.0)
            };
            let _ = writeln!(
                out,
                "{:<16} {:<26} {:>12} {:>12} {:>8}  {}",
                r.group,
                r.name,
                num(r.measured),
                num(r.simulated),
                err,
                r.unit
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<16} {:>5} {:>9} {:>7}  result",
            "group", "rows", "mean|err|", "bound"
        );
        for g in &self.groups {
            let (mae, bound) = match g.bound {
                Bound::Relative(b) => (
                    format!("{:.1}%", g.mae * 100.0),
                    format!("{:.0}%", b * 100.0),
                ),
                Bound::Exact => (format!("{:.2}", g.mae), "exact".to_string()),
                Bound::None => (format!("{:.1}%", g.mae * 100.0), "-".to_string()),
            };
            let result = match g.pass {
                Some(true) => "pass".to_string(),
                Some(false) => "FAIL".to_string(),
                None => g.note.clone(),
            };
            let _ = writeln!(
                out,
                "{:<16} {:>5} {:>9} {:>7}  {}",
                g.name, g.rows, mae, bound, result
            );
        }
        out
    }
}

fn num(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// The measured rows of the programs' CSV files, by (program, test, param), and each row's SM
/// clock (a `sm_clock_mhz` column, else the file's `sm_clock_mhz_at_start` header).
#[derive(Clone, Debug, Default)]
pub struct Data {
    rows: BTreeMap<(String, String, String), (f64, f64)>,
}

impl Data {
    /// The stored measurements.
    pub fn stored() -> Result<Data, String> {
        let mut d = Data::default();
        for (program, text) in STORED {
            d.add(program, text)
                .map_err(|e| format!("calibration/data/h200-{program}.csv: {e}"))?;
        }
        Ok(d)
    }

    /// The stored measurements with each `<program>.csv` found in `dir` in place of its own.
    pub fn with_dir(dir: &Path) -> Result<Data, String> {
        let mut d = Data::default();
        for (program, stored) in STORED {
            let path = dir.join(format!("{program}.csv"));
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => stored.to_string(),
                Err(e) => return Err(format!("{}: {e}", path.display())),
            };
            d.add(program, &text)
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(d)
    }

    /// Parses one program's CSV: `#` lines (one may carry `sm_clock_mhz_at_start=MHz`), a
    /// header naming `test`, `param` or `sms`, and `value` or `bytes_per_clk_total`.
    pub fn add(&mut self, program: &str, text: &str) -> Result<(), String> {
        let mut clock = None;
        let mut header: Option<Vec<&str>> = None;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if let Some(comment) = line.strip_prefix('#') {
                for word in comment.split_whitespace() {
                    if let Some(v) = word.strip_prefix("sm_clock_mhz_at_start=") {
                        clock = v.parse::<f64>().ok();
                    }
                }
                continue;
            }
            let cells: Vec<&str> = line.split(',').map(str::trim).collect();
            let Some(h) = &header else {
                header = Some(cells);
                continue;
            };
            let col = |names: &[&str]| h.iter().position(|c| names.contains(c));
            let (Some(t), Some(p), Some(v)) = (
                col(&["test"]),
                col(&["param", "sms"]),
                col(&["value", "bytes_per_clk_total"]),
            ) else {
                return Err(format!(
                    "the header `{}` lacks test, param (or sms) or value (or bytes_per_clk_total)",
                    h.join(",")
                ));
            };
            let cell = |i: usize| {
                cells
                    .get(i)
                    .copied()
                    .ok_or_else(|| format!("line {}: only {} cells", n + 1, cells.len()))
            };
            let text = cell(v)?;
            let value: f64 = text
                .parse()
                .map_err(|_| format!("line {}: `{text}` is not a number", n + 1))?;
            let row_clock = col(&["sm_clock_mhz"])
                .and_then(|c| cells.get(c))
                .and_then(|c| c.parse::<f64>().ok())
                .or(clock)
                .filter(|c| *c > 0.0)
                .ok_or_else(|| format!("line {}: no SM clock for this row", n + 1))?;
            self.rows.insert(
                (
                    program.to_string(),
                    cell(t)?.to_string(),
                    cell(p)?.to_string(),
                ),
                (value, row_clock),
            );
        }
        if header.is_none() {
            return Err("no header line".to_string());
        }
        Ok(())
    }

    fn get(&self, program: &str, test: &str, param: &str) -> Result<(f64, f64), String> {
        self.rows
            .get(&(program.to_string(), test.to_string(), param.to_string()))
            .copied()
            .ok_or_else(|| format!("no measured row {test},{param} in {program}.csv"))
    }

    /// Scales every value of `test` in `program` (for tests of the checking itself).
    pub fn scale(&mut self, program: &str, test: &str, factor: f64) {
        for ((p, t, _), (v, _)) in self.rows.iter_mut() {
            if p == program && t == test {
                *v *= factor;
            }
        }
    }
}

/// Bytes one pass of gmem.ron's test 1 or 2 reads: every CTA reads whole batches of 256
/// warp-loads of 512 bytes, of the whole buffer (`same`) or of its slice.
fn pass_bytes(ctas: i64, kib: i64, same: bool) -> f64 {
    let loads = if same { kib * 2 } else { kib * 2 / ctas } / 256 * 256;
    (ctas * loads * 512) as f64
}

fn sets(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// Every row of the validation, in table order.
fn specs() -> Vec<Spec> {
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
                    Metric::Slope {
                        key: "iters",
                        lo: 8,
                        hi: 16,
                        per: 8.0 * 32.0 * wgs as f64,
                        minus: 0.0,
                    },
                );
            }
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
        // crowd onto few slices at once.
        let kib = if n >= 132 {
            4096
        } else if n >= 33 {
            2048
        } else {
            1024
        };
        add(
            "bandwidth",
            format!("l2_read {n} SMs"),
            "B/cycle",
            "mem_bw",
            v("l2_read", &n.to_string()),
            "gmem",
            sets(&[("test", 1), ("ctas", n), ("kib", kib), ("same", 1)]),
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
            sets(&[("test", 1), ("ctas", n), ("kib", n * 2048), ("same", 0)]),
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
            sets(&[("test", 1), ("ctas", 132), ("kib", kib), ("same", 0)]),
            Metric::SlopeRate {
                key: "passes",
                lo: 1,
                hi: 2,
                amount: pass_bytes(132, kib, false),
            },
        );
    }
    for n in [1i64, 2, 4, 8, 16, 33, 66, 132] {
        // 512 KiB per CTA: in the model only the bytes per SM matter while the data fit in L2.
        add(
            "l2_disjoint",
            format!("l2_disjoint {n} SMs"),
            "B/cycle",
            "mem",
            v("l2_disjoint", &n.to_string()),
            "gmem",
            sets(&[("test", 1), ("ctas", n), ("kib", n * 512), ("same", 0)]),
            Metric::SlopeRate {
                key: "passes",
                lo: 1,
                hi: 2,
                amount: pass_bytes(n, n * 512, false),
            },
        );
    }
    // Latencies.
    for (test, op) in [("ffma_dep", 0), ("ex2_dep", 1)] {
        add(
            "latency",
            test.to_string(),
            "cycles",
            "core",
            v(test, "32"),
            "pipes",
            sets(&[("op", op), ("chains", 1), ("warpgroups", 1)]),
            Metric::Slope {
                key: "iters",
                lo: 64,
                hi: 128,
                per: 64.0,
                minus: 0.0,
            },
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
        Metric::Slope {
            key: "iters",
            lo: 64,
            hi: 128,
            per: 64.0,
            minus: 1.0,
        },
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
                Metric::Slope {
                    key: "iters",
                    lo: 64,
                    hi: 128,
                    per: 64.0,
                    minus: 0.0,
                },
            );
        }
    }
    let pingpong = Metric::Slope {
        key: "iters",
        lo: 64,
        hi: 128,
        per: 64.0,
        minus: 0.0,
    };
    add(
        "latency",
        "mbarrier round trip".into(),
        "cycles",
        "core",
        v("mbar_pingpong", "try_wait"),
        "barriers",
        sets(&[("test", 1)]),
        pingpong.clone(),
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
                Metric::Slope {
                    key: "iters",
                    lo: 16,
                    hi: 32,
                    per: 16.0,
                    minus: 0.0,
                },
            );
        }
    }
    // Not modeled.
    for threads in [128i64, 256, 512, 1024] {
        add(
            "named_barrier",
            format!("bar.sync {threads} threads"),
            "cycles",
            "core",
            v("bar_sync", &threads.to_string()),
            "barriers",
            sets(&[("test", 0), ("warpgroups", threads / 128)]),
            Metric::Slope {
                key: "iters",
                lo: 64,
                hi: 128,
                per: 64.0,
                minus: 0.0,
            },
        );
    }
    add(
        "mbarrier_poll",
        "mbarrier round trip (test_wait)".into(),
        "cycles",
        "core",
        v("mbar_pingpong", "test_wait"),
        "barriers",
        sets(&[("test", 1)]),
        pingpong,
    );
    add(
        "tma_throughput",
        "tma_issue (1-row boxes)".into(),
        "cycles/box",
        "tma",
        Measured::Slope("tma_issue", "32", "256", 224.0),
        "tma",
        sets(&[("test", 1)]),
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
    for stages in [1i64, 2, 4, 8] {
        add(
            "tma_throughput",
            format!("tma_bw_l2 {stages} stages"),
            "B/cycle/SM",
            "tma",
            v("tma_bw_l2", &stages.to_string()),
            "tma",
            sets(&[("test", 2), ("rows", 128), ("stages", stages)]),
            box16k(256),
        );
        add(
            "tma_throughput",
            format!("tma_bw_hbm {stages} stages"),
            "B/cycle/SM",
            "tma",
            v("tma_bw_hbm", &stages.to_string()),
            "tma",
            sets(&[
                ("test", 2),
                ("rows", 128),
                ("stages", stages),
                ("region", 8388608),
            ]),
            box16k(256),
        );
    }
    for streams in [2i64, 4] {
        add(
            "tma_throughput",
            format!("tma_bw_streams {streams} warps"),
            "B/cycle/SM",
            "tma",
            v("tma_bw_streams", &streams.to_string()),
            "tma",
            sets(&[
                ("test", 2),
                ("rows", 128),
                ("stages", 8 / streams),
                ("streams", streams),
            ]),
            Metric::SlopeRate {
                key: "loads",
                lo: 256,
                hi: 512,
                amount: (streams * 256 * 16384) as f64,
            },
        );
    }
    for rows in [16i64, 64, 256] {
        let stages = (1024 / rows).min(8);
        add(
            "tma_throughput",
            format!("tma_bw_rows {rows} rows"),
            "B/cycle/SM",
            "tma",
            v("tma_bw_rows", &rows.to_string()),
            "tma",
            // A region the first 256 boxes cover once: the slope's boxes hit in L2, as the
            // CUDA kernel's after its warm-up launch.
            sets(&[
                ("test", 2),
                ("rows", rows),
                ("stages", stages),
                ("region", 256 * rows),
            ]),
            Metric::SlopeRate {
                key: "loads",
                lo: 256,
                hi: 512,
                amount: (256 * rows * 128) as f64,
            },
        );
    }
    add(
        "tma_throughput",
        "tma_bw_wide (256 B rows)".into(),
        "B/cycle/SM",
        "tma",
        v("tma_bw_wide", "256"),
        "tma",
        sets(&[
            ("test", 2),
            ("rows", 64),
            ("wide", 1),
            ("stages", 8),
            ("region", 16384),
        ]),
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
    s
}

/// One simulation: twin, parameter overrides (sorted), SM clock in kHz (an integer key).
type RunKey = (&'static str, Vec<(String, i64)>, u64);

fn run_key(
    twin: &'static str,
    sets: &[(String, i64)],
    extra: Option<(&str, i64)>,
    mhz: f64,
) -> RunKey {
    let mut m: BTreeMap<String, i64> = sets.iter().cloned().collect();
    if let Some((k, v)) = extra {
        m.insert(k.to_string(), v);
    }
    (twin, m.into_iter().collect(), (mhz * 1000.0).round() as u64)
}

/// The runs a spec needs.
fn runs_of(spec: &Spec, mhz: f64) -> Vec<RunKey> {
    let k = |extra| run_key(spec.twin, &spec.sets, extra, mhz);
    match &spec.metric {
        Metric::Slope { key, lo, hi, .. } | Metric::SlopeRate { key, lo, hi, .. } => {
            vec![k(Some((key, *lo))), k(Some((key, *hi)))]
        }
        Metric::Single { .. } | Metric::SingleRate { .. } => vec![k(None)],
        Metric::Degree { key, lo, hi, base } => vec![
            k(Some((key, *lo))),
            k(Some((key, *hi))),
            run_key(spec.twin, base, Some((key, *lo)), mhz),
            run_key(spec.twin, base, Some((key, *hi)), mhz),
        ],
    }
}

fn simulate(gpu: &str, key: &RunKey) -> Result<u64, String> {
    let (twin, sets, khz) = key;
    let text = TWINS
        .iter()
        .find(|(n, _)| n == twin)
        .map(|(_, t)| *t)
        .ok_or_else(|| format!("no twin scenario `{twin}`"))?;
    let opts = RunOptions {
        sets: sets.clone(),
        gpu: Some(gpu.to_string()),
        clock_mhz: Some(*khz as f64 / 1000.0),
        ..RunOptions::default()
    };
    let file = format!("scenarios/calibration/{twin}.ron");
    let (kernel, preset) = run::load_source(&file, text, &opts).map_err(|e| e.to_string())?;
    let report = run::simulate(&file, &kernel, &preset, &opts).map_err(|e| e.to_string())?;
    Ok(report.cycles)
}

/// Runs the twins of the selected groups (all when `groups` is empty) on `gpu` against `data`.
pub fn validate(gpu: &str, data: &Data, groups: &[String]) -> Result<Validation, String> {
    for g in groups {
        if !GROUPS.iter().any(|x| x.name == g) {
            let names: Vec<&str> = GROUPS.iter().map(|x| x.name).collect();
            return Err(format!(
                "unknown group `{g}` (groups: {})",
                names.join(", ")
            ));
        }
    }
    let specs: Vec<Spec> = specs()
        .into_iter()
        .filter(|s| groups.is_empty() || groups.iter().any(|g| g == s.group))
        .collect();
    // Measured values and the clock each twin runs at.
    let mut measured = Vec::with_capacity(specs.len());
    for s in &specs {
        measured.push(match &s.measured {
            Measured::Value(test, param) => data.get(s.program, test, param)?,
            Measured::Slope(test, lo, hi, units) => {
                let (a, mhz) = data.get(s.program, test, lo)?;
                let (b, _) = data.get(s.program, test, hi)?;
                ((b - a) / units, mhz)
            }
        });
    }
    let all: BTreeSet<RunKey> = specs
        .iter()
        .zip(&measured)
        .flat_map(|(s, (_, mhz))| runs_of(s, *mhz))
        .collect();
    let cycles = run_all(gpu, all.into_iter().collect())?;
    let c = |k: &RunKey| cycles.get(k).copied().unwrap_or(0) as f64;
    let mut rows = Vec::with_capacity(specs.len());
    for (s, (meas, mhz)) in specs.iter().zip(&measured) {
        let r = runs_of(s, *mhz);
        let sim = match &s.metric {
            Metric::Slope { per, minus, .. } => (c(&r[1]) - c(&r[0])) / per - minus,
            Metric::SlopeRate { amount, .. } => amount / (c(&r[1]) - c(&r[0])).max(1.0),
            Metric::Single { per, minus } => c(&r[0]) / per - minus,
            Metric::SingleRate { amount } => amount / c(&r[0]).max(1.0),
            Metric::Degree { .. } => {
                ((c(&r[1]) - c(&r[0])) / (c(&r[3]) - c(&r[2])).max(1.0)).round()
            }
        };
        let exact = GROUPS
            .iter()
            .any(|g| g.name == s.group && g.bound == Bound::Exact);
        let error = if exact {
            sim - meas
        } else if *meas != 0.0 {
            sim / meas - 1.0
        } else {
            f64::INFINITY
        };
        rows.push(Row {
            group: s.group.to_string(),
            name: s.name.clone(),
            unit: s.unit.to_string(),
            measured: *meas,
            simulated: sim,
            error,
        });
    }
    let groups = GROUPS
        .iter()
        .filter_map(|g| {
            let errs: Vec<f64> = rows
                .iter()
                .filter(|r| r.group == g.name)
                .map(|r| r.error.abs())
                .collect();
            if errs.is_empty() {
                return None;
            }
            let mae = errs.iter().sum::<f64>() / errs.len() as f64;
            let pass = match g.bound {
                Bound::Relative(b) => Some(mae <= b),
                Bound::Exact => Some(mae == 0.0),
                Bound::None => None,
            };
            Some(GroupResult {
                name: g.name.to_string(),
                bound: g.bound,
                rows: errs.len(),
                mae,
                pass,
                note: g.note.to_string(),
            })
        })
        .collect();
    Ok(Validation {
        gpu: gpu.to_string(),
        rows,
        groups,
    })
}

/// Simulates every run, on as many threads as the machine offers (each run is independent and
/// deterministic, so the results do not depend on the threads).
fn run_all(gpu: &str, keys: Vec<RunKey>) -> Result<BTreeMap<RunKey, u64>, String> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(keys.len().max(1));
    let next = Mutex::new(0usize);
    let results: Mutex<BTreeMap<RunKey, Result<u64, String>>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = {
                    let mut n = next.lock().unwrap_or_else(|p| p.into_inner());
                    let i = *n;
                    *n += 1;
                    i
                };
                let Some(key) = keys.get(i) else { break };
                let r = simulate(gpu, key);
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key.clone(), r);
            });
        }
    });
    let mut out = BTreeMap::new();
    for (k, r) in results.into_inner().unwrap_or_else(|p| p.into_inner()) {
        let sets: Vec<String> = k.1.iter().map(|(a, b)| format!("{a}={b}")).collect();
        let cycles = r.map_err(|e| format!("twin {} ({}): {e}", k.0, sets.join(" ")))?;
        out.insert(k, cycles);
    }
    Ok(out)
}

/// `sim validate`: prints the tables (or JSON); an error when a bounded group is over its
/// bound.
pub fn run_cli(args: &ValidateArgs) -> Result<(), String> {
    let data = match &args.data {
        Some(dir) => Data::with_dir(dir)?,
        None => Data::stored()?,
    };
    let v = validate(&args.gpu, &data, &args.groups)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", v.table());
    }
    let failures = v.failures();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} group(s) over their bound: {}",
            failures.len(),
            failures.join("; ")
        ))
    }
}
