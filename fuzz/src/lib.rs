//! The fuzz targets (issue 13, part 8): one function per target, each taking arbitrary bytes
//! and panicking only when an oracle fails or the code under test panics. The same functions
//! run under libFuzzer (`fuzz/fuzz_targets/*.rs`, `cargo fuzz run NAME`) and on stable Rust in
//! CI (`tests/fuzz.rs` includes this file as a module and feeds it seeded bytes), so what one
//! finds the other replays.
//!
//! - [`scenario`]: a scenario file's bytes, as they are or a shipped scenario mutated, through
//!   reading, validation and compilation: a kernel or a bounded diagnostic.
//! - [`expr`]: an expression, generated with its C-precedence text or as raw text, through
//!   parse, compile and evaluation, against a reference evaluation on `i128`.
//! - [`engine`]: a shipped scenario mutated and run on a few SMs under tight cycle and
//!   livelock limits: a report within its invariants, the same again without the sanitizer, or
//!   a typed error that says what happened.

mod expr;

pub use expr::expr;

use arbitrary::{Result, Unstructured};
use expr::{ast, render};
use sim::observe::report::Report;
use sim::run::{self, RunError, RunOptions};

/// A fuzz target: arbitrary bytes in; whether the input went all the way (compiled, compared
/// with the reference, simulated) out, which the stable runner counts.
pub type Target = fn(&[u8]) -> bool;

/// The targets by name: their folders under `fuzz/regressions/`, their binaries under
/// `fuzz/fuzz_targets/`.
pub const TARGETS: [(&str, Target); 3] =
    [("scenario", scenario), ("expr", expr), ("engine", engine)];

// ---------------------------------------------------------------------------------------------
// Scenario files.

/// Scenarios and fixtures the mutating targets start from: every instruction kind, hazards,
/// deadlocks, a sequence, lane-dependent control flow, Ampere's cp.async and mma.sync.
const BASES: [(&str, &str); 18] = [
    ("gemm_ws.ron", include_str!("../../scenarios/gemm_ws.ron")),
    (
        "wgmma_stream.ron",
        include_str!("../../scenarios/wgmma_stream.ron"),
    ),
    (
        "block_sum.ron",
        include_str!("../../scenarios/block_sum.ron"),
    ),
    (
        "bank_conflicts.ron",
        include_str!("../../scenarios/bank_conflicts.ron"),
    ),
    (
        "divergence.ron",
        include_str!("../../scenarios/divergence.ron"),
    ),
    (
        "coalescing.ron",
        include_str!("../../scenarios/coalescing.ron"),
    ),
    (
        "occupancy.ron",
        include_str!("../../scenarios/occupancy.ron"),
    ),
    (
        "gemm_ampere.ron",
        include_str!("../../scenarios/gemm_ampere.ron"),
    ),
    (
        "persistent_gemm.ron",
        include_str!("../../scenarios/persistent_gemm.ron"),
    ),
    (
        "split_kv_decode.ron",
        include_str!("../../scenarios/split_kv_decode.ron"),
    ),
    (
        "hazard_war.ron",
        include_str!("../../tests/fixtures/hazard_war.ron"),
    ),
    (
        "hazard_acc.ron",
        include_str!("../../tests/fixtures/hazard_acc.ron"),
    ),
    (
        "hazard_tx.ron",
        include_str!("../../tests/fixtures/hazard_tx.ron"),
    ),
    (
        "hazard_named_barrier.ron",
        include_str!("../../tests/fixtures/hazard_named_barrier.ron"),
    ),
    (
        "deadlock_named_barrier.ron",
        include_str!("../../tests/fixtures/deadlock_named_barrier.ron"),
    ),
    (
        "epilogue.ron",
        include_str!("../../tests/fixtures/epilogue.ron"),
    ),
    (
        "memory_patterns.ron",
        include_str!("../../tests/fixtures/memory_patterns.ron"),
    ),
    (
        "sequence.ron",
        include_str!("../../tests/fixtures/sequence.ron"),
    ),
];

/// Numbers a mutation writes in place of a number or inside an expression: the edges of the
/// integer types, powers of two around sizes and counts, and zero.
const NUMBERS: [&str; 16] = [
    "0",
    "1",
    "2",
    "3",
    "-1",
    "31",
    "33",
    "4096",
    "65536",
    "2147483648",
    "4294967296",
    "1099511627776",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "1e300",
];

/// Preset fields an engine case may override (besides `sm.count`, which every case sets), with
/// values at the edges of their ranges.
const OVERRIDES: [(&str, &[&str]); 10] = [
    ("barriers.named", &["1", "16"]),
    ("memory.l2.ways", &["1", "1024"]),
    ("memory.hbm.channels", &["1", "4096"]),
    ("barriers.named_latency", &["0", "1", "1000000"]),
    ("memory.hbm.bandwidth_gbs", &["0.001", "1", "1e12"]),
    ("memory.l2.bytes", &["0", "128", "4096"]),
    ("tma.has_tma", &["false", "true"]),
    ("sm.scheduler", &["\"lrr\"", "\"gto\"", "\"x\""]),
    ("tensor.extra_latency", &["0", "100000"]),
    ("smem.per_sm", &["0", "1024", "232448"]),
];

/// One of `spans`, as `u` chooses; `None` when there is none.
fn nth<T: Copy>(u: &mut Unstructured, spans: &[T]) -> Result<Option<T>> {
    if spans.is_empty() {
        return Ok(None);
    }
    Ok(Some(spans[u.choose_index(spans.len())?]))
}

/// Byte ranges of the numbers of `text`, in expressions and comments too: a number changed in a
/// comment changes nothing, which is a case like any other.
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    spans
}

/// Byte ranges of the insides of `"..."` strings (no escapes occur in the shipped files).
fn strings(text: &str) -> Vec<(usize, usize)> {
    let quotes: Vec<usize> = text.match_indices('"').map(|(i, _)| i).collect();
    quotes.chunks_exact(2).map(|q| (q[0] + 1, q[1])).collect()
}

/// Byte ranges of the lines of `text`, newline included.
fn lines(text: &str) -> Vec<(usize, usize)> {
    let mut start = 0;
    text.split_inclusive('\n')
        .map(|l| {
            start += l.len();
            (start - l.len(), start)
        })
        .collect()
}

/// One edit of a scenario's text: a number or an expression replaced, a line deleted,
/// duplicated or swapped with the next, a byte changed.
fn mutate_once(u: &mut Unstructured, text: &mut String) -> Result<()> {
    match u.choose_index(6)? {
        0 => {
            if let Some((a, b)) = nth(u, &numbers(text))? {
                text.replace_range(a..b, u.choose(&NUMBERS)?);
            }
        }
        1 => {
            // An expression or a name replaced, wrapped or cut.
            if let Some((a, b)) = nth(u, &strings(text))? {
                let old = text[a..b].to_string();
                let new = match u.choose_index(4)? {
                    0 => render(&ast(u, 3)?, u)?,
                    1 => format!("({old}) * {}", u.choose(&NUMBERS)?),
                    2 => format!("{old} - {}", u.choose(&NUMBERS)?),
                    _ => {
                        // Quotes in comments pair up with others: the span may hold any text.
                        let mut cut = u.choose_index(old.len() + 1)?;
                        while !old.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        old[..cut].to_string()
                    }
                };
                text.replace_range(a..b, &new);
            }
        }
        2 => {
            if let Some((a, b)) = nth(u, &lines(text))? {
                text.replace_range(a..b, "");
            }
        }
        3 => {
            if let Some((a, b)) = nth(u, &lines(text))? {
                let line = text[a..b].to_string();
                text.insert_str(a, &line);
            }
        }
        4 => {
            let all = lines(text);
            if all.len() > 1 {
                let i = u.choose_index(all.len() - 1)?;
                let ((a, _), (b, c)) = (all[i], all[i + 1]);
                let (first, second) = (text[a..b].to_string(), text[b..c].to_string());
                text.replace_range(a..c, &(second + &first));
            }
        }
        _ => {
            // One ASCII byte in place of another: a bracket, quote or comma out of place.
            let len = text.len();
            if len > 0 {
                let i = u.choose_index(len)?;
                if text.is_char_boundary(i) && text.is_char_boundary(i + 1) {
                    let c = *u.choose(b"()[]{},:\"0-_ a")? as char;
                    text.replace_range(i..i + 1, &c.to_string());
                }
            }
        }
    }
    Ok(())
}

/// A shipped scenario with up to `edits` edits, and its file name.
fn mutated(u: &mut Unstructured, edits: u32) -> Result<(&'static str, String)> {
    let (file, source) = *u.choose(&BASES)?;
    let mut text = source.to_string();
    for _ in 0..u.int_in_range(0..=edits)? {
        mutate_once(u, &mut text)?;
    }
    Ok((file, text))
}

/// The scenario-reading target. The first byte chooses the input: the bytes as a file (what
/// libFuzzer's own mutations work on), or a mutated shipped scenario (what reaches validation
/// and compilation from random bytes). Either is read, validated and compiled:
/// the outcome is kernels or a diagnostic, which must say something and stay short.
pub fn scenario(data: &[u8]) -> bool {
    let Some((&first, rest)) = data.split_first() else {
        return false;
    };
    // A text file starts with an ASCII byte: the shipped scenarios seed libFuzzer's corpus as
    // they are.
    let (file, text) = if first < 0x80 {
        ("fuzz.ron", data.to_vec())
    } else {
        match mutated(&mut Unstructured::new(rest), 4) {
            Ok((file, text)) => (file, text.into_bytes()),
            Err(_) => return false,
        }
    };
    let outcome = isa::decode(file, &text)
        .map_err(RunError::Scenario)
        .and_then(|source| run::load_sequence_source(file, source, &RunOptions::default()));
    match outcome {
        Ok(_) => true,
        Err(e) => {
            judge_message(&e.to_string());
            false
        }
    }
}

/// Longest diagnostic accepted: messages are clipped to 8 KiB and the quoted source line to the
/// terminal's width, so a 50 MB line or name must not reach standard error whole.
const MAX_DIAGNOSTIC: usize = 32 * 1024;

fn judge_message(message: &str) {
    assert!(!message.trim().is_empty(), "an empty error");
    assert!(
        message.len() <= MAX_DIAGNOSTIC,
        "a {}-byte error: {:.300}",
        message.len(),
        message
    );
}

// ---------------------------------------------------------------------------------------------
// The engine.

/// Cycle and no-progress limits of an engine case: shipped kernels take 10^4 to 10^7 cycles,
/// so most cases stop at a limit, which is an outcome like any other and bounds their time.
const MAX_CYCLES: u64 = 100_000;
const LIVELOCK_CYCLES: u64 = 20_000;

/// Runs every kernel of a loaded scenario: one kernel alone, or the sequence.
fn simulate(
    file: &str,
    (kernels, preset, launch): &(
        Vec<isa::program::Kernel>,
        sim::gpu::preset::Preset,
        isa::scenario::Launch,
    ),
    opts: &RunOptions,
) -> std::result::Result<Vec<Report>, RunError> {
    match kernels.as_slice() {
        [kernel] => run::simulate(file, kernel, preset, opts).map(|r| vec![r]),
        _ => sim::sequence::simulate(file, kernels, preset, *launch, opts)
            .map(|s| s.kernels.into_iter().map(|k| k.report).collect()),
    }
}

/// The invariants of a report: within the cycle limit, every unit within its capacity, every
/// figure a number, bytes and warp-cycles that add up.
fn judge_report(r: &Report) {
    let at = format!("{} ({} cycles)", r.scenario, r.cycles);
    assert!(r.cycles <= MAX_CYCLES, "{at}: past the cycle limit");
    assert!(
        r.cycles > 0 || r.instructions == 0,
        "{at}: instructions in no time"
    );
    for (unit, u) in &r.units {
        assert!(
            (0.0..=1.0 + 1e-9).contains(&u.busy),
            "{at}: {unit} busy {}",
            u.busy
        );
    }
    assert!(
        (0.0..=1.0).contains(&r.l2.hit_rate),
        "{at}: L2 hit rate {}",
        r.l2.hit_rate
    );
    let d = &r.dram;
    assert_eq!(d.bytes, d.read_bytes + d.write_bytes, "{at}: DRAM bytes");
    assert!(
        d.flushed_bytes <= d.write_bytes,
        "{at}: flushed more than written"
    );
    let figures = [
        r.time_us,
        r.tflops,
        r.l2.bandwidth_gbs,
        d.bandwidth_gbs,
        r.tensor_load,
    ];
    assert!(
        figures.iter().chain(r.ncu.values()).all(|f| f.is_finite()),
        "{at}: a figure is not a number"
    );
    let mut instructions = 0;
    for (name, role) in &r.roles {
        let states: u64 = role.states.values().sum();
        assert_eq!(role.lifetime, states, "{at}: role {name}'s warp-cycles");
        instructions += role.instructions;
    }
    assert_eq!(
        instructions, r.instructions,
        "{at}: warp-instructions of the roles"
    );
}

/// An error must say what happened; a deadlock or livelock names its warps.
fn judge_error(e: &RunError) {
    let message = e.to_string();
    judge_message(&message);
    if message.contains("deadlock at cycle") || message.contains("livelock at cycle") {
        assert!(
            message
                .lines()
                .any(|l| l.starts_with("  CTA ") && l.contains(" warp ")),
            "a deadlock that names no warp:\n{message}"
        );
    }
}

/// The engine target: a shipped scenario with a few edits, on 0 to 4 SMs, sometimes with one
/// preset field at an edge, run under [`MAX_CYCLES`] and [`LIVELOCK_CYCLES`]. It ends in
/// reports within their invariants or a typed error; run again without the sanitizer, a clean
/// run gives the same report (observers change no engine state) and a run-time error, deadlock
/// or limit the same error.
pub fn engine(data: &[u8]) -> bool {
    let mut u = Unstructured::new(data);
    // Two edits at most: most edits leave a kernel that still compiles, most pairs of them not.
    let Ok((file, text)) = mutated(&mut u, 2) else {
        return false;
    };
    let Ok(&sms) = u.choose(&[1u32, 1, 2, 4, 0]) else {
        return false;
    };
    let mut overrides = format!("\"sm.count\": {sms}");
    if let (Ok(true), Ok((field, values))) = (u.ratio(1, 3), u.choose(&OVERRIDES)) {
        if let Ok(v) = u.choose(values) {
            overrides += &format!(", \"{field}\": {v}");
        }
    }
    // Without its head the text would run on the whole GPU: skip it.
    if !text.contains("Scenario(") {
        return false;
    }
    let head = format!("Scenario(gpu_overrides: {{{overrides}}},");
    let text = text.replacen("Scenario(", &head, 1);
    let opts = RunOptions {
        seed: u.int_in_range(0..=3).unwrap_or(0),
        max_cycles: MAX_CYCLES,
        livelock_cycles: LIVELOCK_CYCLES,
        ..RunOptions::default()
    };
    let loaded = match run::load_sequence_source(file, &text, &opts) {
        Ok(l) => l,
        Err(e) => {
            judge_error(&e);
            return false;
        }
    };
    let checked = simulate(file, &loaded, &opts);
    match &checked {
        Ok(reports) => reports.iter().for_each(judge_report),
        Err(e) => judge_error(e),
    }
    let hazard = matches!(&checked, Err(RunError::Sim { error, .. })
        if matches!(**error, sim::engine::SimError::Hazard { .. }));
    if !hazard {
        let unchecked = simulate(
            file,
            &loaded,
            &RunOptions {
                check: false,
                ..opts
            },
        );
        let said = |o: &std::result::Result<Vec<Report>, RunError>| match o {
            Ok(reports) => reports
                .iter()
                .map(Report::to_json)
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => e.to_string(),
        };
        assert_eq!(
            said(&checked),
            said(&unchecked),
            "{file} without the sanitizer:\n{text}"
        );
    }
    true
}
