//! Hostile input and hostile surroundings (issue 13): each test feeds the binary or the library
//! one input of a class that used to crash, answer wrongly or lie, and asserts the diagnosis.

mod common;

use common::{command, sim, temp_scenario};
use std::process::Stdio;

/// A one-role scenario whose FMA count is `expr` (RON text), with `extra` after its `gpu`.
fn mini(expr: &str, extra: &str) -> String {
    format!(
        r#"Scenario(
    name: "mini",
    gpu: "h100-sxm",{extra}
    params: {{ "k": 64 }},
    kernel: Kernel(
        regs_per_thread: 128,
        roles: [
            Role(name: "w", regs: 128, program: [
                Loop(var: "j", count: "k / 16", body: [Fma({expr})]),
            ]),
        ],
    ),
)
"#
    )
}

/// Runs `sim ARGS`; asserts exit status 1, no panic, and every needle in standard error.
fn fails_with(args: &[&str], needles: &[&str]) -> String {
    let out = sim(args);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "sim {args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "expected `{n}` in:\n{err}");
    }
    err
}

/// `sim check` on scenario text written to a scratch file named `name`.
fn check_text(name: &str, text: &str, needles: &[&str]) -> String {
    let path = temp_scenario(name, text);
    fails_with(&["check", path.to_str().unwrap()], needles)
}

#[test]
fn deeply_nested_expressions_are_errors_at_their_position() {
    let deep = format!("\"{}j{}\"", "(".repeat(1000), ")".repeat(1000));
    check_text(
        "deep.ron",
        &mini(&deep, ""),
        &[
            "the expression nests more than 256 levels deep",
            "deep.ron:9:61",
        ],
    );
    let unary = format!("\"{}j\"", "-".repeat(3000));
    check_text(
        "unary.ron",
        &mini(&unary, ""),
        &["the expression nests more than 256 levels deep"],
    );
    let long = format!("\"{}\"", vec!["j"; 30_000].join("+"));
    check_text(
        "long.ron",
        &mini(&long, ""),
        &["the expression has 59999 characters; at most 4096 are allowed"],
    );
}

#[test]
fn a_closed_standard_output_ends_the_output_quietly() {
    // The read end is closed before `sim validate` has simulated its twins (a second) and
    // printed.
    let mut child = command(&["validate", "--group", "l2_disjoint"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[test]
fn a_closed_standard_error_keeps_the_exit_status() {
    // The read end is closed while the run simulates (a few tenths of a second), before it
    // reports the cycle limit.
    let mut child = command(&[
        "run",
        "scenarios/gemm.ron",
        "--no-trace",
        "--max-cycles",
        "100000",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    drop(child.stderr.take());
    assert_eq!(child.wait().unwrap().code(), Some(1));
}
