//! The fuzz targets of `fuzz/` on stable Rust (issue 13, part 8), and generated command lines
//! of the binary (`cli`, here only: libFuzzer runs no processes): every input kept in
//! `fuzz/regressions/TARGET/` first, then generated ones, the bytes drawn from ChaCha8 with a
//! fixed seed, so that CI's cases are the same every run and a failure reproduces. A case that
//! fails (a panic in the code under test, or an oracle's) is written to the target's
//! regressions folder under the hash of its bytes, and replays first from then on.
//!
//! `FUZZ_SEED=N` draws other cases and `FUZZ_SCALE=N` draws N times as many, for a longer run
//! than CI's: `FUZZ_SCALE=50 FUZZ_SEED=1 cargo test --release --test all fuzz::`.

#[path = "../fuzz/src/lib.rs"]
mod targets;

use crate::common;

use arbitrary::Unstructured;
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// CI's seed.
const SEED: u64 = 0x5EED_F022;

/// `NAME=N` from the environment, or `default`.
fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v} is not a number"))
        })
        .unwrap_or(default)
}

/// The inputs kept for `target`, in name order.
fn regressions(target: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = common::root().join("fuzz/regressions").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.is_file());
    files.sort();
    (dir, files)
}

/// Runs `f` on `bytes`; the panic's message if it panicked.
fn attempt(f: targets::Target, bytes: &[u8]) -> Result<bool, String> {
    catch_unwind(AssertUnwindSafe(|| f(bytes))).map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// Keeps a failing input as `fuzz/regressions/TARGET/HASH`; returns its path.
fn keep(dir: &Path, bytes: &[u8]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let hash = Sha256::digest(bytes);
    let name: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
    let path = dir.join(format!("crash-{name}"));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The target named `name` of `fuzz/src/lib.rs`.
fn target(name: &str) -> targets::Target {
    targets::TARGETS.iter().find(|(n, _)| *n == name).unwrap().1
}

/// Replays `target`'s regressions, then runs `f` on `cases` (times `FUZZ_SCALE`) generated
/// inputs of up to `max_len` bytes, of which at least the fraction `deep` must go all the way:
/// a generator whose inputs stop early tests little.
fn fuzz(target: &str, f: targets::Target, cases: u64, max_len: usize, deep: f64) {
    let (dir, kept) = regressions(target);
    for path in &kept {
        let bytes = std::fs::read(path).unwrap();
        if let Err(why) = attempt(f, &bytes) {
            panic!(
                "{target}: the regression {} fails again: {why}",
                path.display()
            );
        }
    }
    let seed = setting("FUZZ_SEED", SEED);
    let cases = cases * setting("FUZZ_SCALE", 1);
    // One stream per target: adding cases to one leaves the others' as they were.
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ Sha256::digest(target)[0] as u64);
    let mut through = 0;
    for case in 0..cases {
        let mut bytes = vec![0; rng.random_range(1..=max_len)];
        rng.fill_bytes(&mut bytes);
        match attempt(f, &bytes) {
            Ok(all_the_way) => through += all_the_way as u64,
            Err(why) => panic!(
                "{target}: case {case} of seed {seed:#x} fails: {why}\nits input is kept in {}, \
                 which this test replays first from now on",
                keep(&dir, &bytes).display()
            ),
        }
    }
    // Shown with --nocapture: how deep the generated cases went.
    eprintln!("{target}: {through} of {cases} generated cases went all the way");
    assert!(
        through as f64 >= deep * cases as f64,
        "{target}: only {through} of {cases} generated cases went all the way"
    );
}

/// About 45% of the cases are mutated scenarios, and about 40% of those compile.
#[test]
fn scenario_files_compile_or_get_a_short_diagnosis() {
    fuzz("scenario", target("scenario"), 20_000, 256, 0.1);
}

/// Half the cases are generated trees, nearly all compared; raw text rarely parses.
#[test]
fn expressions_evaluate_as_the_reference_does() {
    fuzz("expr", target("expr"), 200_000, 512, 0.3);
}

/// About 45% of the mutated kernels compile and are simulated.
#[test]
fn mutated_kernels_end_in_a_sane_report_or_a_typed_error() {
    fuzz("engine", target("engine"), 600, 256, 0.3);
}

// ---------------------------------------------------------------------------------------------
// Command lines: the binary, so not a libFuzzer target; the same runner and regressions.

/// Scenario arguments: small kernels, a sequence, broken files, a folder, a missing file.
const FILES: [&str; 11] = [
    "scenarios/wgmma_stream.ron",
    "scenarios/block_sum.ron",
    "scenarios/divergence.ron",
    "tests/fixtures/hazard_war.ron",
    "tests/fixtures/deadlock_empty.ron",
    "tests/fixtures/sequence.ron",
    "tests/fixtures/errors/malformed.ron",
    "tests/fixtures/errors/bad_override.ron",
    "tests/fixtures/errors/regs300.ron",
    "scenarios",
    "missing.ron",
];

/// Values of numeric options and arguments: zero, edges, beyond `u64`, not numbers.
const VALUES: [&str; 16] = [
    "0",
    "1",
    "7",
    "64",
    "-1",
    "1000",
    "65536",
    "4294967296",
    "9223372036854775807",
    "18446744073709551616",
    "0.5",
    "1e300",
    "-0",
    "nan",
    "inf",
    "x",
];

/// A random option of `sim run`, `check` or `bench`, with its value.
fn option(u: &mut Unstructured, scratch: &Path) -> arbitrary::Result<Vec<String>> {
    let value = |u: &mut Unstructured| u.choose(&VALUES).map(|v| v.to_string());
    let range = |u: &mut Unstructured| -> arbitrary::Result<String> {
        Ok(format!("{}..{}", value(u)?, value(u)?))
    };
    let flag = |f: &str| vec![f.to_string()];
    let with = |f: &str, v: String| vec![f.to_string(), v];
    Ok(match u.choose_index(16)? {
        0 | 1 => {
            let key = u.choose(&["k", "stages", "bm", "n", "x", "", "k=1"])?;
            with("--set", format!("{key}={}", value(u)?))
        }
        2 => with(
            "--gpu",
            u.choose(&["h100-sxm", "a100-sxm", "rtx3070", "nope"])?
                .to_string(),
        ),
        3 => with("--seed", value(u)?),
        4 => with("--max-cycles", value(u)?),
        5 => with("--livelock-cycles", value(u)?),
        6 => with("--clock-mhz", value(u)?),
        7 => flag("--no-check"),
        8 => flag(u.choose(&["--json", "--csv"])?),
        9 => with("--trace-sms", range(u)?),
        10 => with("--trace-window", range(u)?),
        11 => with(
            "--trace-level",
            u.choose(&["summary", "warps", "instructions", "x"])?
                .to_string(),
        ),
        12 => with("--trace-max-mb", value(u)?),
        13 => with("-o", scratch.join("out.txt").display().to_string()),
        14 => with("--check-cycles", value(u)?),
        _ => with("--iters", value(u)?),
    })
}

/// A command line: `run`, `check` or `bench` on a file with up to four options, or `analyze`
/// with random sizes. Runs write their traces to the scratch folder or none, and stop within a
/// few seconds of wall time whatever the options say.
fn command_line(u: &mut Unstructured, scratch: &Path) -> arbitrary::Result<Vec<String>> {
    let value = |u: &mut Unstructured| u.choose(&VALUES).map(|v| v.to_string());
    let mut args: Vec<String> = Vec::new();
    match u.choose_index(8)? {
        0..=4 => {
            args.push(u.choose(&["run", "run", "check", "bench"])?.to_string());
            args.push(u.choose(&FILES)?.to_string());
            for _ in 0..u.int_in_range(0..=4)? {
                args.extend(option(u, scratch)?);
            }
            if args[0] == "run" && u.arbitrary()? {
                args.extend([
                    "--trace".into(),
                    scratch.join("t.json").display().to_string(),
                ]);
            } else if args[0] == "run" {
                args.push("--no-trace".into());
            }
            args.extend(["--max-wall".into(), "3".into()]);
        }
        5 => {
            args.extend(["analyze".into(), "gemm".into()]);
            for _ in 0..3 {
                args.push(value(u)?);
            }
            for option in ["--tile", "--warps", "--stages", "--l2-hit", "--top-k"] {
                if u.ratio(1, 3)? {
                    let v = match option {
                        "--tile" => format!("{}x{}x{}", value(u)?, value(u)?, value(u)?),
                        _ => value(u)?,
                    };
                    args.extend([option.to_string(), v]);
                }
            }
            if u.ratio(1, 4)? {
                args.push("--tune".into());
            }
        }
        6 => {
            args.extend(["analyze".into(), "attention".into()]);
            for option in ["--hd", "--bm", "--bn", "--l2-hit"] {
                if u.ratio(1, 2)? {
                    args.extend([option.to_string(), value(u)?]);
                }
            }
        }
        _ => {
            args.extend(["analyze".into(), "decode".into()]);
            let options = [
                "--batch",
                "--q-heads",
                "--kv-heads",
                "--seqlen",
                "--hd",
                "--splits",
                "--sm-gbps",
            ];
            for option in options {
                if u.ratio(1, 2)? {
                    args.extend([option.to_string(), value(u)?]);
                }
            }
        }
    }
    if u.ratio(1, 4)? {
        args.extend([
            "--gpu".into(),
            u.choose(&["h200-sxm", "a100-sxm", "rtx3070", "nope"])?
                .to_string(),
        ]);
    }
    Ok(args)
}

/// `sim` on a generated command line: it ends with its exit status (0; 1 for an error, 2 for
/// usage, 3 for an inconclusive check) and says why when it does not succeed, never with a
/// panic or a signal. True when it succeeded.
fn cli(data: &[u8]) -> bool {
    let scratch = common::scratch("fuzz_cli");
    std::fs::create_dir_all(&scratch).unwrap();
    let Ok(args) = command_line(&mut Unstructured::new(data), &scratch) else {
        return false;
    };
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = common::command(&argv)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "sim {}: {err}", args.join(" "));
    match out.status.code() {
        Some(0) => true,
        Some(1..=3) => {
            // An inconclusive check says so on standard output, errors on standard error.
            let said = err.trim().len() + String::from_utf8_lossy(&out.stdout).trim().len();
            assert!(said > 0, "sim {} failed saying nothing", args.join(" "));
            false
        }
        other => panic!("sim {} ended with {other:?}: {err}", args.join(" ")),
    }
}

/// Most command lines hold a value their option refuses; about one in ten succeeds.
#[test]
fn generated_command_lines_end_in_an_exit_status_not_a_panic() {
    fuzz("cli", cli, 200, 64, 0.04);
}
