//! Structure-aware fuzzing whose oracles can fail (issue 13, part 8).
//!
//! A generator of warp-specialized ring pipelines (one TMA producer warpgroup, one or two wgmma
//! consumer warpgroups, full and empty mbarriers per stage, as in `scenarios/gemm_ws.ron`),
//! valid by construction, into which each test injects at most one bug of a known class. Every
//! case is compiled and run through the engine in-process; the oracle knows from the parameters
//! what the run must end in: a clean run with the pipeline's FLOPs, cycles, DRAM bytes and
//! warp-instructions, or the class's diagnosis with the role of the warp at fault and its
//! instruction. Then semantic
//! mutations of every shipped scenario, judged by the report's invariants or the error's text,
//! and a mutation check: with the sanitizer off, the hazard oracles fail.
//!
//! Programs reaching the engine per run, each test asserting its count: 2,500 valid pipelines;
//! 6,000 with one bug, 600 per class (no release, early release, short expect-tx, long
//! expect-tx, wrong parity, early accumulator read, over-arrival, named-barrier mismatch, named
//! barrier short of threads, tx-count range); 8,500 generated pipelines in all, about 15% of
//! them run a second time (without the sanitizer, or again for determinism). Of 1,000 mutants
//! of the shipped scenarios about 740 reach the engine (the compiler rejects the others with a
//! diagnosis; at least half must). The target takes 18 to 22 s (as much CPU time) on a 2-core
//! machine in the test profile (opt-level 3, overflow checks on).
//!
//! `failure_persistence: None`: a failure prints the minimal case and its scenario text, which
//! is all it takes to reproduce it; a persisted seed would replay a different case as soon as a
//! generator changed. A bug found here is kept as a named regression test instead.

use crate::common;

use isa::scenario::Instr;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use sim::gpu::preset::Preset;
use sim::observe::report::Report;
use sim::run::{self, RunError, RunOptions};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

/// Presets the pipelines run on: both have TMA, wgmma and setmaxnreg.
const GPUS: [&str; 2] = ["h100-sxm", "h200-sxm"];

/// A run past this many cycles is a failure: the slowest valid pipelines take a few 10^5.
const MAX_CYCLES: u64 = 2_000_000;

/// One warp-specialized ring pipeline: C[bm, bn] += A[bm, K] · B[bn, K]ᵀ in `k_tiles` k-blocks
/// of `bk`, through `stages` shared-memory slots.
#[derive(Clone, Debug)]
struct Pipeline {
    gpu: &'static str,
    /// Consumer warpgroups, 64 rows of the tile each.
    consumers: u32,
    bn: u32,
    bk: u32,
    k_tiles: u32,
    stages: u32,
    /// wgmma batches a consumer keeps in flight before releasing a stage (0 or 1).
    lag: u32,
    /// A and B start in L2.
    warm: bool,
    /// Accumulators scaled, written to shared memory and stored with TMA after a named barrier.
    epilogue: bool,
    /// CTAs, each the same tile: 1 to 3, on as many SMs or one after another on one SM.
    ctas: u32,
    one_sm: bool,
    /// Waits poll with test_wait (each failing test issues) instead of try_wait.
    poll: bool,
    seed: u64,
    /// Timing knobs (`gpu_overrides`), and ALU work after each wait: findings must not depend
    /// on timing.
    tma_latency: Option<u32>,
    tensor_latency: Option<u32>,
    producer_delay: u32,
    consumer_delay: u32,
    /// Run the case twice: a hazard must go unseen without the sanitizer (its oracle then
    /// fails); any other case must end the same way again.
    twice: bool,
}

impl Pipeline {
    fn bm(&self) -> u64 {
        64 * self.consumers as u64
    }

    fn consumer_threads(&self) -> u64 {
        128 * self.consumers as u64
    }

    /// Bytes of one k-block of A and of B.
    fn a_bytes(&self) -> u64 {
        self.bm() * self.bk as u64 * 2
    }

    fn b_bytes(&self) -> u64 {
        self.bn as u64 * self.bk as u64 * 2
    }

    fn k(&self) -> u64 {
        self.k_tiles as u64 * self.bk as u64
    }

    /// Tensor FLOPs of one CTA.
    fn flops(&self) -> u64 {
        2 * self.bm() * self.bn as u64 * self.k()
    }

    /// CTAs the busiest SM runs.
    fn ctas_per_sm(&self) -> u64 {
        if self.one_sm {
            self.ctas as u64
        } else {
            1
        }
    }

    /// Whether a consumer releases any stage: with one batch in flight the first release comes
    /// in the second k-block.
    fn releases(&self) -> bool {
        self.lag == 0 || self.k_tiles > 1
    }

    /// Whether the producer comes round the ring to a slot it filled before.
    fn refills(&self) -> bool {
        self.k_tiles > self.stages
    }
}

/// The bug injected into a pipeline.
#[derive(Clone, Debug)]
enum Bug {
    None,
    /// The consumers never arrive on the empty barriers.
    NoRelease,
    /// The consumers release a stage right after committing its wgmma, before the wait_group
    /// that covers its reads.
    EarlyRelease,
    /// arrive.expect_tx of this many bytes fewer than the two loads bring (less than the
    /// smaller load, so that the excess shows however the loads land).
    ShortTx(u64),
    /// arrive.expect_tx of this many bytes more than the loads bring.
    LongTx(u64),
    /// The consumers wait on the full barrier with the producer's parity.
    WrongParity,
    /// A compute instruction on the accumulators right after the commit, or after a
    /// wait_group(1) that leaves the batch in flight (`after_wait`, lag 1 only).
    EarlyAccRead {
        pipe: &'static str,
        after_wait: bool,
    },
    /// The empty barriers expect this many (1..32) fewer arrivals than the consumers' threads.
    OverArrival(u64),
    /// The epilogue's named barrier: the first consumer warp syncs for all consumer threads,
    /// the others for this many warps more.
    BarrierMismatch(u64),
    /// Every consumer warp syncs for this many warps more than there are.
    BarrierShort(u64),
    /// An expect-tx of this many bytes before each arrive.expect_tx, which takes the tx-count
    /// past 2^20 - 1.
    TxRange(u64),
}

/// The scenario text of `p` with `bug` in it.
fn text(p: &Pipeline, bug: &Bug) -> String {
    let ct = p.consumer_threads();
    let mut overrides = Vec::new();
    if p.one_sm {
        overrides.push("\"sm.count\": 1".to_string());
    }
    if let Some(l) = p.tma_latency {
        overrides.push(format!("\"tma.extra_latency\": {l}"));
    }
    if let Some(l) = p.tensor_latency {
        overrides.push(format!("\"tensor.extra_latency\": {l}"));
    }
    let overrides = if overrides.is_empty() {
        String::new()
    } else {
        format!("\n    gpu_overrides: {{ {} }},", overrides.join(", "))
    };
    let empty_arrivals = match bug {
        Bug::OverArrival(r) => ct - r,
        _ => ct,
    };
    let (c_tensor, c_buffer) = if p.epilogue {
        (
            "\n            Tensor(name: \"C\", dtype: BF16, shape: [\"bm\", \"bn\"]),",
            "\n            Buffer(name: \"sC\", dtype: BF16, shape: [\"bm\", \"bn\"]),",
        )
    } else {
        ("", "")
    };
    let delay = |n: u32, indent: usize| match n {
        0 => String::new(),
        n => format!("\n{:indent$}Alu({n}),", ""),
    };
    let bytes = match bug {
        Bug::ShortTx(d) => format!("(bm + bn) * bk * 2 - {d}"),
        Bug::LongTx(d) => format!("(bm + bn) * bk * 2 + {d}"),
        _ => "(bm + bn) * bk * 2".into(),
    };
    let expect = match bug {
        Bug::TxRange(x) => {
            format!("\n                        ExpectTx(bar: \"full[kb % stages]\", bytes: {x}),")
        }
        _ => String::new(),
    };
    let poll = if p.poll { ", poll: Test" } else { "" };
    let parity = match bug {
        Bug::WrongParity => "((kb / stages) & 1) ^ 1",
        _ => "(kb / stages) & 1",
    };
    let wait = "\n                    WgmmaWait(\"lag\"),";
    let release = match p.lag {
        0 => "\n                    Arrive(bar: \"empty[kb % stages]\"),",
        _ => "\n                    If(cond: \"kb >= lag\", then: [Arrive(bar: \"empty[(kb - lag) % stages]\")]),",
    };
    let after_commit = match bug {
        Bug::NoRelease => wait.to_string(),
        Bug::EarlyRelease => {
            format!("\n                    Arrive(bar: \"empty[kb % stages]\"),{wait}")
        }
        Bug::EarlyAccRead { pipe, after_wait } => {
            let read =
                format!("\n                    Compute(pipe: {pipe}, count: 8, acc: \"C\"),");
            if *after_wait {
                format!("{wait}{read}{release}")
            } else {
                format!("{read}{wait}{release}")
            }
        }
        _ => format!("{wait}{release}"),
    };
    let barrier = match bug {
        Bug::BarrierMismatch(j) => format!(
            "If(cond: \"warp_id == 4\", then: [BarSync(id: 1, threads: {ct})], else: [BarSync(id: 1, threads: {})]),",
            ct + 32 * j
        ),
        Bug::BarrierShort(j) => format!("BarSync(id: 1, threads: {}),", ct + 32 * j),
        _ => format!("BarSync(id: 1, threads: {ct}),"),
    };
    let epilogue = if !p.epilogue {
        String::new()
    } else {
        format!(
            r#"
                Compute(pipe: Fma, count: "bn / 8", acc: "C"),
                Loop(var: "r", count: "bn / 16", body: [
                    StShared(buf: "sC", addr: "((r * {warps} + warp_id - 4) * 32 + lane) * 16", width: 16),
                ]),
                FenceProxyAsync,
                {barrier}
                If(cond: "warp_id == 4", then: [
                    TmaStore(tensor: "C", coords: [0, 0], src: "sC"),
                    TmaStoreCommit,
                    TmaStoreWait(0),
                ]),"#,
            warps = 4 * p.consumers
        )
    };
    format!(
        r#"Scenario(
    name: "pipeline",
    gpu: "{gpu}",{overrides}
    params: {{ "bm": {bm}, "bn": {bn}, "bk": {bk}, "kt": {kt}, "stages": {stages}, "lag": {lag}, "warm": {warm} }},
    kernel: Kernel(
        grid: {ctas},
        regs_per_thread: 168,
        tensors: [
            Tensor(name: "A", dtype: BF16, shape: ["bm", "kt * bk"], warm: "warm"),
            Tensor(name: "B", dtype: BF16, shape: ["bn", "kt * bk"], warm: "warm"),{c_tensor}
        ],
        smem: [
            Buffer(name: "sA", slots: "stages", dtype: BF16, shape: ["bm", "bk"]),
            Buffer(name: "sB", slots: "stages", dtype: BF16, shape: ["bn", "bk"]),{c_buffer}
        ],
        mbarriers: [
            MBarrier(name: "full", count: "stages", arrivals: 1),
            MBarrier(name: "empty", count: "stages", arrivals: {empty_arrivals}),
        ],
        roles: [
            Role(name: "producer", regs: 40, program: [
                SetMaxNReg(action: Dec, regs: 40),
                If(cond: "warp == 0", then: [
                    Loop(var: "kb", count: "kt", body: [
                        Wait(bar: "empty[kb % stages]", parity: "((kb / stages) & 1) ^ 1"{poll}),{pdelay}{expect}
                        ArriveExpectTx(bar: "full[kb % stages]", bytes: "{bytes}"),
                        TmaLoad(tensor: "A", coords: [0, "kb * bk"], dst: "sA[kb % stages]", bar: "full[kb % stages]"),
                        TmaLoad(tensor: "B", coords: [0, "kb * bk"], dst: "sB[kb % stages]", bar: "full[kb % stages]"),
                    ]),
                ]),
            ]),
            Role(name: "consumer", warpgroups: {consumers}, regs: 232, program: [
                SetMaxNReg(action: Inc, regs: 232),
                Loop(var: "kb", count: "kt", body: [
                    Wait(bar: "full[kb % stages]", parity: "{parity}"{poll}),{cdelay}
                    WgmmaFence,
                    Wgmma(n: "bn", ksteps: "bk / 16", a: Smem("sA[kb % stages]"), b: "sB[kb % stages]", acc: "C"),
                    WgmmaCommit,{after_commit}
                ]),
                WgmmaWait(0),{epilogue}
            ]),
        ],
    ),
)
"#,
        gpu = p.gpu,
        bm = p.bm(),
        bn = p.bn,
        bk = p.bk,
        kt = p.k_tiles,
        stages = p.stages,
        lag = p.lag,
        warm = u8::from(p.warm),
        pdelay = delay(p.producer_delay, 24),
        cdelay = delay(p.consumer_delay, 20),
        consumers = p.consumers,
        ctas = p.ctas,
    )
}

/// What a case must end in.
#[derive(Debug)]
enum Expect {
    /// No diagnosis, and the pipeline's FLOPs, cycles and DRAM bytes.
    Clean,
    /// A hazard (from the sanitizer) or an always-on run-time error: the role of the warp at
    /// fault, one of `messages`, and the instruction's mnemonic.
    Fault {
        hazard: bool,
        role: &'static str,
        messages: Vec<String>,
        inst: &'static str,
    },
    /// A deadlock whose listing has a warp of `role` blocked as `why` says.
    Deadlock { role: &'static str, why: String },
}

fn expect(p: &Pipeline, bug: &Bug) -> Expect {
    let hazard = |role, message: String, inst| Expect::Fault {
        hazard: true,
        role,
        messages: vec![message],
        inst,
    };
    let ct = p.consumer_threads();
    let polling = if p.poll {
        " (polling with test_wait)"
    } else {
        ""
    };
    match *bug {
        Bug::NoRelease if p.refills() => Expect::Deadlock {
            role: "producer",
            why: format!(
                "program[1] if.then[0] loop(kb).body[0] mbarrier.wait: waits on mbarrier empty[0]\
                 {polling} for the phase of parity 0; it is in phase 0 with {ct} arrivals and 0 tx bytes missing"
            ),
        },
        Bug::EarlyRelease if p.refills() => hazard(
            "producer",
            "TMA load overwrites sA[0] while the wgmma reads of it by consumer0.w0 are not known \
             to be complete (write-after-read"
                .into(),
            "tma_load",
        ),
        Bug::None | Bug::NoRelease | Bug::EarlyRelease => Expect::Clean,
        Bug::ShortTx(d) => hazard(
            "producer",
            format!(
                "mbarrier full[0] received {d} transaction bytes beyond its expect-tx count (its \
                 phase can never complete)"
            ),
            "tma_load",
        ),
        Bug::LongTx(d) => Expect::Deadlock {
            role: "consumer",
            why: format!(
                "program[1] loop(kb).body[0] mbarrier.wait: waits on mbarrier full[0]{polling} \
                 for the phase of parity 0; it is in phase 0 with 0 arrivals and {d} tx bytes missing"
            ),
        },
        Bug::WrongParity => hazard(
            "consumer",
            "wgmma reads sA[0] before waiting for the phase of full[0] that its TMA load \
             completes (read before the data arrived"
                .into(),
            "wgmma",
        ),
        Bug::EarlyAccRead { pipe, .. } => hazard(
            "consumer",
            format!(
                "{} reads accumulators `C` before the wgmma writing them has completed ({} wgmma \
                 instruction(s) of the warp pending; no wgmma.wait_group covers them)",
                pipe.to_lowercase(),
                p.bk / 16
            ),
            "compute",
        ),
        Bug::OverArrival(r) if p.releases() => Expect::Fault {
            hazard: false,
            role: "consumer",
            messages: vec![format!(
                "mbarrier empty[0]: over-arrival: 32 arrivals on a phase with only {} pending \
                 (of {} expected)",
                32 - r,
                ct - r
            )],
            inst: "mbarrier.arrive",
        },
        Bug::OverArrival(_) => Expect::Clean,
        Bug::BarrierMismatch(j) => {
            let (a, b) = (ct, ct + 32 * j);
            let m = |x, y| {
                format!(
                    "named barrier 1: a warp arrived with thread count {x} while the barrier is \
                     collecting {y}"
                )
            };
            Expect::Fault {
                hazard: false,
                role: "consumer",
                messages: vec![m(a, b), m(b, a)],
                inst: "bar.sync",
            }
        }
        Bug::BarrierShort(j) => Expect::Deadlock {
            role: "consumer",
            why: format!(
                "program[6] bar.sync: waits at named barrier 1: {ct} of {} threads arrived",
                ct + 32 * j
            ),
        },
        Bug::TxRange(x) => hazard(
            "producer",
            format!(
                "mbarrier full[0] tx-count {} is outside the range ±(2^20-1)",
                x + p.a_bytes() + p.b_bytes()
            ),
            "mbarrier.arrive_expect_tx",
        ),
    }
}

/// The role of a warp named like `consumer1.w3`.
fn role_of(warp: &str) -> &str {
    warp.split('.')
        .next()
        .unwrap_or("")
        .trim_end_matches(|c: char| c.is_ascii_digit())
}

/// Checks a run's outcome against what `p` with `bug` must end in; the reason when it does not.
fn judge(p: &Pipeline, bug: &Bug, outcome: &Result<Report, RunError>) -> Result<(), String> {
    let error = outcome.as_ref().err().map(|e| e.to_string());
    match (expect(p, bug), outcome) {
        (Expect::Clean, Ok(r)) => clean(p, bug, r),
        (
            Expect::Fault {
                hazard,
                role,
                messages,
                inst,
            },
            Err(_),
        ) => {
            let e = error.unwrap_or_default();
            let kind = if hazard { "hazard at cycle " } else { "cycle " };
            // FILE: [hazard at ]cycle C, …CTA N, warp W: MESSAGE\n  = in role `R`: PATH INST
            let parts = e.split_once(", warp ").and_then(|(head, rest)| {
                let (warp, rest) = rest.split_once(": ")?;
                let (message, path) = rest.split_once("\n  = in ")?;
                Some((head, warp, message, path))
            });
            let ok = parts.is_some_and(|(head, warp, message, path)| {
                head.contains(kind)
                    && (hazard || !head.contains("hazard"))
                    && role_of(warp) == role
                    && messages.iter().any(|m| message.contains(m.as_str()))
                    && path.starts_with(&format!("role `{role}`: "))
                    && path.ends_with(&format!(" {inst}"))
            });
            if ok {
                Ok(())
            } else {
                Err(format!(
                    "expected a {kind}error at a {role} warp's {inst}: one of {messages:?}; got:\n{e}"
                ))
            }
        }
        (Expect::Deadlock { role, why }, Err(_)) => {
            let e = error.unwrap_or_default();
            let found = e.starts_with("pipeline.ron: deadlock at cycle ")
                && e.lines().any(|l| {
                    let words: Vec<&str> = l.split(' ').collect();
                    l.starts_with("  CTA ")
                        && words.get(4) == Some(&"warp")
                        && words.get(5).is_some_and(|w| role_of(w) == role)
                        && l.contains(&format!(" at role `{role}`: {why}"))
                });
            if found {
                Ok(())
            } else {
                Err(format!(
                    "expected a deadlock with a {role} warp: {why}; got:\n{e}"
                ))
            }
        }
        (expected, _) => Err(format!(
            "expected {expected:?}; the run ended in {}",
            error.unwrap_or_else(|| "a clean run".into())
        )),
    }
}

/// A busy fraction above 1 (with rounding), or not a number.
fn beyond_capacity(busy: f64) -> bool {
    busy.is_nan() || busy > 1.0 + 1e-9
}

/// Warp-instructions each role issues in a clean run of `p`: one per instruction, `n` per
/// `Alu(n)` or compute count, `ksteps` per wgmma, none for control flow.
fn issued(p: &Pipeline, bug: &Bug) -> [(&'static str, u64); 2] {
    let kt = p.k_tiles as u64;
    // Warp 0: the loop; all 4: setmaxnreg.
    let producer = 4 + kt * (4 + p.producer_delay as u64);
    let per_tile = 4 + p.consumer_delay as u64 + p.bk as u64 / 16;
    let releases = match (bug, p.lag) {
        (Bug::NoRelease, _) => 0,
        (Bug::EarlyRelease, _) | (_, 0) => kt,
        _ => kt - 1,
    };
    // The conversion, the stores, the proxy fence and the barrier.
    let epilogue = p.bn as u64 / 8 + p.bn as u64 / 16 + 2;
    let mut consumer = 4 * p.consumers as u64 * (2 + kt * per_tile + releases);
    if p.epilogue {
        // Every warp's epilogue, and the first warp's TMA store, commit and wait.
        consumer += 4 * p.consumers as u64 * epilogue + 3;
    }
    let g = p.ctas as u64;
    [("consumer", g * consumer), ("producer", g * producer)]
}

/// The invariants of a clean run of `p`.
fn clean(p: &Pipeline, bug: &Bug, r: &Report) -> Result<(), String> {
    let preset = Preset::builtin(p.gpu).map_err(|e| e.to_string())?;
    let flops = p.ctas as u64 * p.flops();
    let bound = p.ctas_per_sm() * p.flops() / preset.tensor.flops_per_cycle;
    let ab = (p.bm() + p.bn as u64) * p.k() * 2;
    let c = p.bm() * p.bn as u64 * 2;
    // No mma.sync here: the tensor unit is the wgmma pipe alone, within capacity too.
    let busy = r.units.iter().find(|(_, u)| beyond_capacity(u.busy));
    let roles: Vec<(&str, u64)> = r
        .roles
        .iter()
        .map(|(name, role)| (name.as_str(), role.instructions))
        .collect();
    let failed = [
        (r.flops != flops, format!("{} FLOPs, not {flops}", r.flops)),
        (
            r.cycles < bound,
            format!("{} cycles, below the tensor bound {bound}", r.cycles),
        ),
        (
            !p.warm && r.dram.read_bytes < ab,
            format!(
                "{} DRAM bytes read of a cold run, below A and B's {ab}",
                r.dram.read_bytes
            ),
        ),
        (
            p.warm && r.dram.read_bytes != 0,
            format!("{} DRAM bytes read with A and B in L2", r.dram.read_bytes),
        ),
        (
            p.epilogue && r.dram.write_bytes < c,
            format!("{} DRAM bytes written, below C's {c}", r.dram.write_bytes),
        ),
        (
            busy.is_some(),
            format!("a unit busy beyond capacity: {busy:?}"),
        ),
        (
            // Polling adds a slot per failing test, as many as the timing makes.
            roles
                .iter()
                .zip(issued(p, bug))
                .any(|(&(r, n), (role, least))| r != role || n < least || (!p.poll && n != least)),
            format!(
                "warp-instructions by role {roles:?}, not {:?}",
                issued(p, bug)
            ),
        ),
    ];
    match failed.into_iter().find(|(bad, _)| *bad) {
        Some((_, why)) => Err(why),
        None => Ok(()),
    }
}

/// Compiles `text` (which must: the generator makes valid scenarios) and simulates it.
fn simulate(text: &str, seed: u64, check: bool) -> Result<Result<Report, RunError>, String> {
    let opts = RunOptions {
        seed,
        check,
        max_cycles: MAX_CYCLES,
        ..RunOptions::default()
    };
    let (kernel, preset) = run::load_source("pipeline.ron", text, &opts)
        .map_err(|e| format!("a generated case does not compile: {e}"))?;
    Ok(run::simulate("pipeline.ron", &kernel, &preset, &opts))
}

/// Runs `p` with `bug` and judges it; `reached` counts the programs that reached the engine.
fn case(p: &Pipeline, bug: &Bug, reached: &AtomicU32) -> Result<(), TestCaseError> {
    let text = text(p, bug);
    let fail = |why: String| TestCaseError::fail(format!("{why}\n{text}"));
    let outcome = simulate(&text, p.seed, true).map_err(fail)?;
    reached.fetch_add(1, Ordering::Relaxed);
    judge(p, bug, &outcome).map_err(fail)?;
    if !p.twice {
        return Ok(());
    }
    if let Expect::Fault { hazard: true, .. } = expect(p, bug) {
        // The mutation check: without the sanitizer the hazard goes unseen and the oracle fails.
        let unchecked = simulate(&text, p.seed, false).map_err(fail)?;
        if judge(p, bug, &unchecked).is_ok() {
            return Err(fail("the diagnosis did not depend on the sanitizer".into()));
        }
    } else {
        // The report of a clean run, or the whole diagnosis of a failed one.
        let said = |o: &Result<Report, RunError>| match o {
            Ok(r) => serde_json::to_string(r).unwrap(),
            Err(e) => e.to_string(),
        };
        let again = simulate(&text, p.seed, true).map_err(fail)?;
        if said(&again) != said(&outcome) {
            return Err(fail("the same text and seed ended differently".into()));
        }
    }
    Ok(())
}

prop_compose! {
    /// A valid pipeline (with room for the epilogue when `epilogue` is true).
    fn pipeline(epilogue: bool)(
        gpu in prop::sample::select(&GPUS[..]),
        consumers in 1u32..=2,
        bn in prop::sample::select(&[64u32, 128, 256][..]),
        bk in prop::sample::select(&[32u32, 64][..]),
        k_tiles in 1u32..=24,
        stages in any::<Index>(),
        lag in 0u32..=1,
        warm in any::<bool>(),
        with_epilogue in any::<bool>(),
        ctas in prop_oneof![3 => Just(1u32), 1 => 2u32..=3],
        one_sm in prop::bool::weighted(0.5),
        poll in prop::bool::weighted(0.25),
        seed in 0u64..4,
        tma_latency in prop::option::weighted(0.3, 0u32..3000),
        tensor_latency in prop::option::weighted(0.3, 0u32..3000),
        producer_delay in prop_oneof![3 => Just(0u32), 1 => 1u32..300],
        consumer_delay in prop_oneof![3 => Just(0u32), 1 => 1u32..40],
        twice in prop::bool::weighted(0.15),
    ) -> Pipeline {
        let epilogue = epilogue || with_epilogue;
        let per_cta = Preset::builtin(gpu).unwrap().smem.per_cta;
        let bm = 64 * consumers as u64;
        let c = if epilogue { bm * bn as u64 * 2 } else { 0 };
        // A and B slots, and a full and an empty mbarrier of 8 bytes each, per stage.
        let stage = (bm + bn as u64) * bk as u64 * 2 + 16;
        let fit = ((per_cta - c) / stage).min(6) as usize;
        let stages = 1 + stages.index(fit) as u32;
        Pipeline {
            gpu,
            consumers,
            bn,
            bk,
            k_tiles,
            stages,
            // One stage cannot hold a batch in flight: the producer would wait for its release.
            lag: if stages == 1 { 0 } else { lag },
            warm,
            epilogue,
            ctas,
            one_sm,
            poll,
            seed,
            tma_latency,
            tensor_latency,
            producer_delay,
            consumer_delay,
            twice,
        }
    }
}

/// Every run of this file draws the same cases: a failure reproduces, and CI's time is the
/// time measured here.
const SEED: u64 = 0x5EED_0013;

/// Wall time one mutant may take. A mutated size (`m = 1 << 40`) can fill every SM for the
/// whole cycle limit, minutes in a debug build; the wall-clock error ends it like any other
/// outcome.
const MUTANT_WALL: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs `cases` generated (pipeline, bug) cases, asserting that each reached the engine.
fn fuzz<S: Strategy<Value = (Pipeline, Bug)>>(cases: u32, strategy: S) {
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(SEED),
        ..Config::default()
    });
    let reached = AtomicU32::new(0);
    if let Err(e) = runner.run(&strategy, |(p, bug)| case(&p, &bug, &reached)) {
        panic!("{e}");
    }
    assert_eq!(reached.load(Ordering::Relaxed), cases);
}

/// Pipelines with the bug `make` builds for each.
fn with_bug<B: Strategy<Value = Bug> + 'static>(
    make: impl Fn(&Pipeline) -> B + 'static,
    epilogue: bool,
) -> impl Strategy<Value = (Pipeline, Bug)> {
    pipeline(epilogue).prop_flat_map(move |p| (Just(p.clone()), make(&p)))
}

#[test]
fn valid_pipelines_run_clean_with_their_flops_cycles_and_bytes() {
    fuzz(2500, with_bug(|_| Just(Bug::None), false));
}

#[test]
fn unreleased_stages_deadlock_the_producer_once_it_comes_round() {
    fuzz(600, with_bug(|_| Just(Bug::NoRelease), false));
}

#[test]
fn stages_released_before_their_wait_group_are_refilled_under_the_readers() {
    fuzz(600, with_bug(|_| Just(Bug::EarlyRelease), false));
}

#[test]
fn expect_tx_short_of_the_loads_leaves_excess_bytes() {
    fuzz(
        600,
        with_bug(
            |p| (1..p.a_bytes().min(p.b_bytes())).prop_map(Bug::ShortTx),
            false,
        ),
    );
}

#[test]
fn expect_tx_beyond_the_loads_deadlocks_the_consumers() {
    fuzz(600, with_bug(|_| (1u64..4096).prop_map(Bug::LongTx), false));
}

#[test]
fn consumers_waiting_on_the_producers_parity_read_before_arrival() {
    fuzz(600, with_bug(|_| Just(Bug::WrongParity), false));
}

#[test]
fn accumulators_read_before_their_wait_group() {
    fuzz(
        600,
        with_bug(
            |p| {
                let lag = p.lag;
                (
                    prop::sample::select(&["Fma", "Alu", "Mufu"][..]),
                    any::<bool>(),
                )
                    .prop_map(move |(pipe, after)| Bug::EarlyAccRead {
                        pipe,
                        after_wait: after && lag == 1,
                    })
            },
            false,
        ),
    );
}

#[test]
fn empty_barriers_expecting_fewer_arrivals_are_over_arrived() {
    fuzz(
        600,
        with_bug(|_| (1u64..32).prop_map(Bug::OverArrival), false),
    );
}

#[test]
fn named_barrier_thread_counts_that_disagree() {
    fuzz(
        600,
        with_bug(|_| (1u64..=4).prop_map(Bug::BarrierMismatch), true),
    );
}

#[test]
fn named_barriers_waiting_for_more_threads_than_arrive_deadlock() {
    fuzz(
        600,
        with_bug(|_| (1u64..=4).prop_map(Bug::BarrierShort), true),
    );
}

#[test]
fn expect_tx_past_the_tx_count_range() {
    fuzz(
        600,
        with_bug(
            |p| {
                let limit = (1u64 << 20) - 1;
                (limit + 1 - p.a_bytes() - p.b_bytes()..=limit).prop_map(Bug::TxRange)
            },
            false,
        ),
    );
}

/// A pipeline with every knob at its plainest.
fn plain() -> Pipeline {
    Pipeline {
        gpu: "h100-sxm",
        consumers: 2,
        bn: 128,
        bk: 64,
        k_tiles: 8,
        stages: 4,
        lag: 1,
        warm: false,
        epilogue: false,
        ctas: 1,
        one_sm: false,
        poll: false,
        seed: 0,
        tma_latency: None,
        tensor_latency: None,
        producer_delay: 0,
        consumer_delay: 0,
        twice: false,
    }
}

/// The mutation check: each hazard oracle passes with the sanitizer and fails without it (so
/// the tests above depend on its rules), the always-on checks and the deadlock report do not
/// depend on it, and the clean-run oracle fails on a report of another pipeline. Disabling any
/// one rule in `sim/src/observe/sanitizer.rs` (write-after-read, either read-before-arrival
/// check, accumulators, excess bytes, tx-count range) fails a generated-case test above as well
/// (tried by hand when this file was written).
#[test]
fn the_oracles_fail_without_the_sanitizer_or_with_wrong_figures() {
    let p = plain();
    let run = |bug: &Bug, check| simulate(&text(&p, bug), 0, check).unwrap();
    let hazards = [
        Bug::EarlyRelease,
        Bug::ShortTx(1000),
        Bug::WrongParity,
        Bug::EarlyAccRead {
            pipe: "Fma",
            after_wait: true,
        },
        Bug::TxRange((1 << 20) - p.a_bytes() - p.b_bytes()),
    ];
    for bug in &hazards {
        assert_eq!(judge(&p, bug, &run(bug, true)), Ok(()), "{bug:?}");
        let unchecked = run(bug, false);
        let why = judge(&p, bug, &unchecked).unwrap_err();
        assert!(why.starts_with("expected "), "{bug:?}: {why}");
        let unseen = unchecked.map_or_else(|e| !e.to_string().contains("hazard"), |_| true);
        assert!(unseen, "{bug:?}: {why}");
    }
    let always = [
        Bug::NoRelease,
        Bug::LongTx(100),
        Bug::OverArrival(5),
        Bug::BarrierMismatch(1),
        Bug::BarrierShort(2),
    ];
    for bug in &always {
        let p = Pipeline {
            epilogue: true,
            ..plain()
        };
        let outcome = simulate(&text(&p, bug), 0, false).unwrap();
        assert_eq!(judge(&p, bug, &outcome), Ok(()), "{bug:?}");
    }
    let clean = run(&Bug::None, true);
    assert_eq!(judge(&p, &Bug::None, &clean), Ok(()));
    let others = [
        (
            Pipeline {
                k_tiles: 9,
                ..plain()
            },
            "FLOPs, not",
        ),
        (
            Pipeline {
                warm: true,
                ..plain()
            },
            "DRAM bytes read with A and B in L2",
        ),
        (
            Pipeline {
                epilogue: true,
                ..plain()
            },
            "DRAM bytes written, below C's 32768",
        ),
        (
            Pipeline {
                producer_delay: 5,
                ..plain()
            },
            "warp-instructions by role [(\"consumer\", 584), (\"producer\", 36)], not [(\"consumer\", 584), (\"producer\", 76)]",
        ),
    ];
    for (other, why) in others {
        let e = judge(&other, &Bug::None, &clean).unwrap_err();
        assert!(e.contains(why), "{e}");
    }
    let warm = Pipeline {
        warm: true,
        ..plain()
    };
    let e = judge(
        &p,
        &Bug::None,
        &simulate(&text(&warm, &Bug::None), 0, true).unwrap(),
    );
    assert_eq!(
        e,
        Err("0 DRAM bytes read of a cold run, below A and B's 262144".into())
    );
}

// ------------------------------------------------------------------------------------------
// Mutations of the shipped scenarios: a parameter set within or beyond its range, an
// instruction deleted, two adjacent instructions swapped; each run ends in a sane report or
// an error that says what happened.

/// `--set` values that keep the whole-GPU scenarios to a few CTAs (their pipelines are the
/// same at any size).
fn small(name: &str) -> Vec<(String, i64)> {
    let sets: &[(&str, i64)] = match name {
        "gemm" | "gemm_pingpong" | "gemm_pipelined" | "persistent_gemm" => {
            &[("m", 512), ("n", 512), ("k", 512)]
        }
        "gemm_ampere" => &[("m", 256), ("n", 256), ("k", 256)],
        // 88 tiles of 4 k-steps.
        "moe_grouped_gemm" => &[("k", 256)],
        // 133 tiles of 4 k-blocks over 132 CTAs: ranges cross tiles, flags and fix-ups.
        "gemm_streamk" => &[("k", 256)],
        // One CTA of 6 KV blocks.
        "fa3_pingpong" => &[("heads", 1), ("seqlen_q", 128), ("seqlen", 1056)],
        // 2 CTAs of 4 KV blocks.
        "fa2_forward" => &[("heads", 1), ("seqlen", 256)],
        // 4 CTAs of 64 k-steps.
        "naive_vs_tiled_gemm" => &[("n", 64)],
        "hbm_stream" => &[("mib", 4)],
        "sector" => &[("ctas", 8)],
        "loaded" => &[("streamers", 4), ("hops", 16), ("iters", 16)],
        _ => &[],
    };
    sets.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// A shipped scenario: its name, text, small sets and the cycle limit of its mutants.
struct Shipped {
    name: String,
    source: String,
    sets: Vec<(String, i64)>,
    max_cycles: u64,
}

/// Every scenarios/*.ron and scenarios/calibration/*.ron, with its clean run's cycles.
fn shipped() -> Vec<Shipped> {
    let calibration = common::root().join("scenarios/calibration");
    let mut files: Vec<PathBuf> = std::fs::read_dir(calibration)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    files.sort();
    files.splice(0..0, common::scenario_files());
    files
        .iter()
        .map(|path| {
            let name = path.file_stem().unwrap().to_str().unwrap().to_string();
            let sets = small(&name);
            let opts = RunOptions {
                sets: sets.clone(),
                ..RunOptions::default()
            };
            let r = run::run_file(path, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
            Shipped {
                name,
                source: std::fs::read_to_string(path).unwrap(),
                sets,
                // A mutant that runs longer stops there with the cycle-limit error, an outcome
                // like any other: this bounds the test's time.
                max_cycles: 8 * r.cycles + 100_000,
            }
        })
        .collect()
}

#[derive(Clone, Debug)]
enum Mutation {
    /// Sets the parameter at this index to one of `values`.
    Set(Index, Index),
    Delete {
        role: Index,
        list: Index,
        at: Index,
    },
    Swap {
        role: Index,
        list: Index,
        at: Index,
    },
}

/// Instruction lists in `list` (itself, then loop bodies and branches, depth first).
fn count_lists(list: &[Instr]) -> usize {
    let nested = |i: &Instr| match i {
        Instr::Loop { body, .. } => count_lists(body),
        Instr::If {
            then, otherwise, ..
        } => count_lists(then) + count_lists(otherwise),
        _ => 0,
    };
    1 + list.iter().map(nested).sum::<usize>()
}

/// Applies `f` to the `n`th instruction list of `list` in [`count_lists`] order.
fn with_list(list: &mut Vec<Instr>, n: &mut usize, f: &mut dyn FnMut(&mut Vec<Instr>)) {
    if *n == 0 {
        f(list);
    }
    *n = n.wrapping_sub(1);
    for i in list.iter_mut() {
        match i {
            Instr::Loop { body, .. } => with_list(body, n, f),
            Instr::If {
                then, otherwise, ..
            } => {
                with_list(then, n, f);
                with_list(otherwise, n, f);
            }
            _ => {}
        }
    }
}

/// Values a parameter of value `v` is set to: its edges, near it, and far beyond any range.
fn values(v: i64) -> [i64; 11] {
    [
        0,
        1,
        -1,
        v.saturating_sub(1),
        v.saturating_add(1),
        v / 2,
        v.saturating_mul(2),
        v.saturating_mul(3),
        1 << 40,
        i64::MAX,
        i64::MIN,
    ]
}

/// Applies `mutations` to `scenario` and `sets`; what was done, for the failure message.
fn mutate(
    scenario: &mut isa::Scenario,
    sets: &mut Vec<(String, i64)>,
    mutations: &[Mutation],
) -> Vec<String> {
    let mut done = Vec::new();
    for m in mutations {
        match m {
            Mutation::Set(param, value) => {
                let Some((key, v)) = scenario
                    .params
                    .iter()
                    .nth(param.index(scenario.params.len().max(1)))
                else {
                    continue;
                };
                // A derived parameter's value is an expression: mutate around 1.
                let declared = match v {
                    isa::scenario::ParamValue::Int(v) => *v,
                    isa::scenario::ParamValue::Derived(_) => 1,
                };
                let base = sets
                    .iter()
                    .find(|(k, _)| k == key)
                    .map_or(declared, |(_, v)| *v);
                let new = values(base)[value.index(11)];
                sets.retain(|(k, _)| k != key);
                sets.push((key.clone(), new));
                done.push(format!("--set {key}={new}"));
            }
            Mutation::Delete { role, list, at } | Mutation::Swap { role, list, at } => {
                let roles = &mut scenario.kernel.roles;
                let which = role.index(roles.len());
                let r = &mut roles[which];
                let mut n = list.index(count_lists(&r.program));
                let swap = matches!(m, Mutation::Swap { .. });
                let mut what = None;
                with_list(&mut r.program, &mut n, &mut |l| match (swap, l.len()) {
                    (false, len) if len > 0 => {
                        let i = at.index(len);
                        what = Some(format!("deleted {}", l.remove(i).mnemonic()));
                    }
                    (true, len) if len > 1 => {
                        let i = at.index(len - 1);
                        l.swap(i, i + 1);
                        what = Some(format!(
                            "swapped {} and {}",
                            l[i].mnemonic(),
                            l[i + 1].mnemonic()
                        ));
                    }
                    _ => {}
                });
                if let Some(w) = what {
                    done.push(format!("role `{}`: {w}", r.name));
                }
            }
        }
    }
    done
}

/// The invariants of a mutant's outcome: a report within the units' capacities, or an error
/// that says what happened (for a deadlock or livelock, which warps).
fn judge_mutant(outcome: &Result<Report, RunError>) -> Result<(), String> {
    match outcome {
        Ok(r) => {
            let over = r
                .units
                .iter()
                .find(|(unit, u)| *unit != "tensor" && beyond_capacity(u.busy));
            // A mutant whose warps issue nothing (its loops deleted) takes no time.
            match (r.cycles, over) {
                (0, _) if r.instructions > 0 => Err("a run of 0 cycles".into()),
                (_, Some((unit, u))) => Err(format!("{unit} busy {}", u.busy)),
                _ => Ok(()),
            }
        }
        Err(e) => {
            let e = e.to_string();
            let stuck = e.contains("deadlock at cycle") || e.contains("livelock at cycle");
            // "  CTA 3 warp …", or in a cluster "  CTA 3 (cluster rank 1) warp …".
            let names_a_warp = e.lines().any(|l| {
                l.strip_prefix("  CTA ")
                    .and_then(|l| l.split_once(' '))
                    .map(|(_, l)| match l.strip_prefix("(cluster rank ") {
                        Some(l) => l.split_once(") ").map_or(l, |(_, l)| l),
                        None => l,
                    })
                    .is_some_and(|l| l.starts_with("warp "))
            });
            match (e.trim().is_empty(), stuck && !names_a_warp) {
                (true, _) => Err("an empty error".into()),
                (_, true) => Err(format!("a deadlock that names no warp:\n{e}")),
                _ => Ok(()),
            }
        }
    }
}

#[test]
fn mutated_shipped_scenarios_end_in_a_sane_report_or_a_diagnosis() {
    const CASES: u32 = 1000;
    let shipped = shipped();
    let mutation = prop_oneof![
        (any::<Index>(), any::<Index>()).prop_map(|(p, v)| Mutation::Set(p, v)),
        (any::<Index>(), any::<Index>(), any::<Index>())
            .prop_map(|(role, list, at)| Mutation::Delete { role, list, at }),
        (any::<Index>(), any::<Index>(), any::<Index>())
            .prop_map(|(role, list, at)| Mutation::Swap { role, list, at }),
    ];
    let strategy = (
        0..shipped.len(),
        prop::collection::vec(mutation, 1..=3),
        0u64..4,
    );
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(SEED),
        ..Config::default()
    });
    let reached = AtomicU32::new(0);
    let result = runner.run(&strategy, |(which, mutations, seed)| {
        let s = &shipped[which];
        let file = format!("{}.ron", s.name);
        let mut scenario = isa::parse(&file, &s.source).unwrap();
        let mut sets = s.sets.clone();
        let done = mutate(&mut scenario, &mut sets, &mutations);
        let fail = |why: String| TestCaseError::fail(format!("{file} with {done:?}: {why}"));
        let preset = Preset::with_overrides(&scenario.gpu, &scenario.gpu_overrides).unwrap();
        let kernel = match isa::compile(&scenario, &sets, &preset.limits(), &file, &s.source) {
            Ok(k) => k,
            Err(d) if d.to_string().trim().is_empty() => {
                return Err(fail("an empty diagnostic".into()))
            }
            Err(_) => return Ok(()),
        };
        reached.fetch_add(1, Ordering::Relaxed);
        let opts = RunOptions {
            seed,
            max_cycles: s.max_cycles,
            max_wall: Some(MUTANT_WALL),
            ..RunOptions::default()
        };
        judge_mutant(&run::simulate(&file, &kernel, &preset, &opts)).map_err(fail)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let reached = reached.load(Ordering::Relaxed);
    // Most mutants compile: a generator whose mutants the compiler rejects tests little.
    assert!(
        reached >= CASES / 2,
        "{reached} of {CASES} mutants reached the engine"
    );
}
