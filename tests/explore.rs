//! `sim explore`'s page in a real browser: every widget's control is moved on every preset, and
//! each number the page then shows must be what `sim analyze` prints for the same inputs.

use crate::common;

use common::{driven_page, scratch, sim, sim_ok};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Occupancy: threads, registers, KiB of shared memory (values past a preset's range are
/// clamped by the slider: the page's own values are read back).
const OCCUPANCY: [(u64, u64, u64); 6] = [
    (256, 64, 48),
    (1024, 255, 0),
    (128, 32, 100),
    (32, 16, 0),
    (96, 40, 227),
    (640, 72, 20),
];
const WGMMA_N: [u64; 4] = [8, 64, 136, 256];
/// Attention: bm and the L2 hit rate in percent, around H100's 78% threshold at M = 64.
const ATTENTION: [(u64, u64); 6] = [(64, 0), (64, 77), (64, 78), (128, 50), (192, 13), (256, 99)];
/// Waves: tiles, CTAs per SM and the cluster slider's position (cluster size 2^i, clamped to
/// the preset's largest; the tiles snap to whole clusters).
const WAVES: [(u64, u64, u64); 9] = [
    (132, 1, 0),
    (133, 1, 0),
    (1, 1, 0),
    (264, 2, 0),
    (400, 3, 0),
    (528, 4, 0),
    (256, 1, 2),
    (133, 1, 1),
    (400, 2, 4),
];

/// Moves every control through its settings on every preset and records the page's cells and
/// command line after each move.
fn driver() -> String {
    let list = |v: Vec<String>| format!("[{}]", v.join(","));
    let occupancy = list(
        OCCUPANCY
            .iter()
            .map(|(t, r, k)| format!("[{t},{r},{k}]"))
            .collect(),
    );
    let wgmma = list(WGMMA_N.iter().map(u64::to_string).collect());
    let attention = list(
        ATTENTION
            .iter()
            .map(|(b, h)| format!("[{b},{h}]"))
            .collect(),
    );
    let waves = list(
        WAVES
            .iter()
            .map(|(t, c, k)| format!("[{t},{c},{k}]"))
            .collect(),
    );
    format!(
        r#"
const $ = (id) => document.getElementById(id);
const set = (id, v) => {{ const e = $(id); e.value = v; e.dispatchEvent(new Event('input')); return Number(e.value); }};
const txt = (sel) => document.querySelector(sel).textContent;
const cells = (attr, keys) => keys.map((k) => txt('[data-' + attr + '="' + k + '"]'));
const gpu = $('gpu');
out.initial = [gpu.value, txt('#occ-cmd')];
out.states = [];
for (const name of [...gpu.options].map((o) => o.value)) {{
  gpu.value = name; gpu.dispatchEvent(new Event('change'));
  for (const [t, r, k] of {occupancy}) {{
    const s = {{ gpu: name, widget: 'occupancy', threads: set('occ-threads', t), regs: set('occ-regs', r), smem: set('occ-smem', k) * 1024 }};
    s.cells = cells('occ', ['blocks', 'regs', 'smem', 'threads']).concat([txt('#occ-ctas'), txt('#occ-limiter'), txt('#occ-warps'), txt('#occ-share')]);
    s.cmd = txt('#occ-cmd');
    out.states.push(s);
  }}
  for (const n of {wgmma}) {{
    const s = {{ gpu: name, widget: 'wgmma', n: set('wgmma-n', n), error: $('wgmma-none').hidden ? null : txt('#wgmma-none') }};
    s.cells = cells('wgmma', ['compute', 'ss', 'rs', 'ss-ratio', 'rs-ratio', 'ss-util']).concat([txt('#wgmma-fed')]);
    s.cmd = txt('#wgmma-cmd');
    out.states.push(s);
  }}
  for (const [b, h] of {attention}) {{
    const s = {{ gpu: name, widget: 'attention', bm: set('att-bm', b), hit: set('att-hit', h), error: $('att-none').hidden ? null : txt('#att-none') }};
    s.cells = cells('att', ['intensity', 'balance', 'shortfall', 'needed', 'effective', 'bound']).concat([txt('#att-at')]);
    s.cmd = txt('#att-cmd');
    out.states.push(s);
  }}
  for (const [t, c, k] of {waves}) {{
    set('waves-cluster', k);
    const s = {{ gpu: name, widget: 'waves', ctas: set('waves-ctas', c), tiles: set('waves-tiles', t), cluster: Number(txt('#waves-cluster-v')) }};
    s.cells = [txt('#waves-per-wave')].concat(cells('waves', ['waves', 'last', 'efficiency']));
    s.cmd = txt('#waves-cmd');
    out.states.push(s);
  }}
}}
"#
    )
}

/// The whitespace-separated fields of the first line of `text` that starts with `prefix` once
/// trimmed.
fn fields<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines()
        .map(str::trim)
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with `{prefix}` in\n{text}"))
        .split_whitespace()
        .collect()
}

/// The value cell of a labelled row: the first field after `label`.
fn value<'a>(text: &'a str, label: &str) -> &'a str {
    let words = label.split_whitespace().count();
    fields(text, label)[words]
}

/// The cells `sim analyze` prints for one recorded state, in the page's order, and its
/// arguments; or its error.
fn analyze(s: &Value) -> (Vec<String>, Vec<String>, Result<String, String>) {
    let int = |k: &str| s[k].as_u64().unwrap().to_string();
    let gpu = s["gpu"].as_str().unwrap().to_string();
    let widget = s["widget"].as_str().unwrap();
    let mut args = vec![
        "analyze".to_string(),
        widget.to_string(),
        "--gpu".into(),
        gpu,
    ];
    let opts: Vec<(&str, String)> = match widget {
        "occupancy" => vec![
            ("--threads", int("threads")),
            ("--regs", int("regs")),
            ("--smem", int("smem")),
        ],
        "wgmma" => vec![("--n", int("n"))],
        "attention" => vec![
            ("--bm", int("bm")),
            (
                "--l2-hit",
                format!("{:.2}", s["hit"].as_f64().unwrap() / 100.0),
            ),
        ],
        _ => {
            let mut o = vec![("--tiles", int("tiles")), ("--ctas-per-sm", int("ctas"))];
            if s["cluster"] != 1 {
                o.push(("--cluster", int("cluster")));
            }
            o
        }
    };
    for (k, v) in opts {
        args.push(k.into());
        args.push(v);
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = sim(&argv);
    if !out.status.success() {
        let err = String::from_utf8(out.stderr).unwrap();
        return (vec![], args, Err(err));
    }
    let text = String::from_utf8(out.stdout).unwrap();
    let cells: Vec<String> = match widget {
        "occupancy" => {
            let mut c: Vec<String> = ["blocks", "regs", "smem", "threads"]
                .iter()
                .map(|l| value(&text, &format!("{l} ")).to_string())
                .collect();
            // `-> 4 CTAs/SM, limiter regs`.
            let bind = fields(&text, "->");
            c.push(format!("{} {}", bind[1], bind[2].trim_end_matches(',')));
            c.push(bind[4].to_string());
            // `32 of 64 warps resident: 50% occupancy`.
            let line = text.lines().find(|l| l.contains("warps resident")).unwrap();
            let w: Vec<&str> = line.split_whitespace().collect();
            c.push(format!("{} of {}", w[0], w[2]));
            c.push(w[5].to_string());
            c
        }
        "wgmma" => {
            let row = fields(&text, &format!("{} ", s["n"]));
            let mut c: Vec<String> = row[1..].iter().map(|f| f.to_string()).collect();
            let fed = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("SS keeps the tensor cores fed for "))
                .unwrap();
            c.push(fed.to_string());
            c
        }
        "attention" => {
            let hit = format!("{}%", s["hit"]);
            let at = fields(&text, &format!("at L2 hit {hit} "));
            vec![
                value(&text, "intensity (FLOPs per K/V byte = bm)").to_string(),
                value(&text, "machine balance").to_string(),
                value(&text, "all K/V from HBM").to_string(),
                value(&text, "L2 hit needed").to_string(),
                at[4].to_string(),
                at[5..].join(" "),
                hit,
            ]
        }
        _ => {
            let row = fields(&text, &format!("{} ", s["ctas"]));
            assert_eq!(row[1], s["tiles"].to_string(), "{text}");
            row[2..].iter().map(|f| f.to_string()).collect()
        }
    };
    (cells, args, Ok(text))
}

/// Every preset, every widget: each control moved through its settings, and the page's numbers
/// after each move are `sim analyze`'s for the inputs the page's controls then hold (and the
/// command the page shows is that one). The page is small, self-contained, and opens on
/// `--gpu`'s preset.
#[test]
fn every_widget_shows_what_sim_analyze_prints_in_a_browser() {
    let page = scratch("explore.html");
    sim_ok(&["explore", "--gpu", "h200-sxm", "-o", page.to_str().unwrap()]);
    let size = std::fs::metadata(&page).unwrap().len();
    assert!(size < 300_000, "the page is {size} bytes");
    let (_, seen) = driven_page(&page, "explore", &driver());
    assert_eq!(
        seen["initial"],
        serde_json::json!([
            "h200-sxm",
            "sim analyze occupancy --gpu h200-sxm --threads 256 --regs 64 --smem 49152"
        ])
    );
    let states = seen["states"].as_array().unwrap();
    let per_gpu = OCCUPANCY.len() + WGMMA_N.len() + ATTENTION.len() + WAVES.len();
    assert_eq!(states.len(), 4 * per_gpu, "every preset, every setting");
    let mut shown: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for s in states {
        let (cells, args, printed) = analyze(s);
        assert_eq!(
            s["cmd"].as_str().unwrap(),
            format!("sim {}", args.join(" ")),
            "{s}"
        );
        match printed {
            Ok(text) => {
                let page: Vec<&str> = s["cells"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().unwrap())
                    .collect();
                assert_eq!(
                    page,
                    cells,
                    "the page against `sim {}`:\n{text}",
                    args.join(" ")
                );
                shown
                    .entry((s["gpu"].to_string(), s["widget"].to_string()))
                    .or_default()
                    .insert(page.join("|"));
            }
            // Only the Hopper presets have wgmma; the page says why as `sim analyze` does.
            Err(error) => {
                let shown = s["error"].as_str().unwrap_or_else(|| {
                    panic!("`sim {}` failed, the page did not: {error}", args.join(" "))
                });
                assert_eq!(format!("error: {shown}\n"), error, "{s}");
            }
        }
    }
    // Moving a control changes the numbers (wgmma and attention on Hopper only).
    assert_eq!(shown.len(), 4 * 2 + 2 * 2);
    for (widget, cells) in &shown {
        assert!(cells.len() >= 3, "{widget:?}: {cells:?}");
    }
    // The cluster slider: clusters of 4 leave 4 of the H100's 132 slots idle; 133 tiles snap
    // to 134 in pairs; at 2 CTAs per SM each GPC holds two clusters of 16 (256 of 264 slots);
    // presets without clusters stay at 1.
    let waves_on = |gpu: &str| -> Vec<(u64, u64, String)> {
        states
            .iter()
            .filter(|s| s["gpu"] == gpu && s["widget"] == "waves")
            .map(|s| {
                let per = s["cells"][0].as_str().unwrap().to_string();
                (
                    s["tiles"].as_u64().unwrap(),
                    s["cluster"].as_u64().unwrap(),
                    per,
                )
            })
            .collect()
    };
    let h100 = waves_on("h100-sxm");
    assert_eq!(
        h100[6..],
        [
            (256, 4, "120".into()),
            (134, 2, "132".into()),
            (400, 16, "240".into())
        ]
    );
    assert!(waves_on("a100-sxm").iter().all(|w| w.1 == 1));
    // 256 threads of 64 registers with 48 KiB on an H100: the registers bind, at 4 CTAs.
    let first = &states[0];
    assert_eq!(
        (&first["gpu"], &first["cells"][4], &first["cells"][5]),
        (&"h100-sxm".into(), &"4 CTAs/SM".into(), &"regs".into())
    );
}
