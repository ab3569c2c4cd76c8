//! The compiler's behaviour on a small two-buffer pipeline and variations of it.

use super::*;
use crate::program::{Inst, Op};
use crate::scenario::Poll;

fn h100() -> Limits {
    Limits {
        gpu: "h100-sxm".into(),
        sm_count: 132,
        max_regs_per_thread: 255,
        has_setmaxnreg: true,
        setmaxnreg_max: 256,
        regs_per_sm: 65536,
        reg_alloc_unit: 256,
        smem_per_cta: 232448,
        max_threads_per_cta: 1024,
        named_barriers: 16,
        has_tma: true,
        has_wgmma: true,
        baseline_regs: 10,
        max_cluster: 16,
        portable_cluster: 8,
    }
}

const BASE: &str = r#"Scenario(
name: "t",
gpu: "h100-sxm",
params: { "stages": 4, "n": 128 },
kernel: Kernel(
    regs_per_thread: 168,
    tensors: [Tensor(name: "B", dtype: BF16, shape: [64, 128])],
    smem: [
        Buffer(name: "sA", slots: "stages", dtype: BF16, shape: [64, 64]),
        Buffer(name: "sB", slots: "stages", dtype: BF16, shape: [64, 128]),
    ],
    mbarriers: [MBarrier(name: "full", count: "stages", arrivals: 1)],
    roles: [
        Role(name: "consumer", regs: 168, program: [
            Loop(var: "j", count: 8, body: [
                Wait(bar: "full[j % stages]", parity: "(j / stages) & 1"),
                Wgmma(n: "n", ksteps: 4, a: Smem("sA[j % stages]"), b: "sB[j % stages]"),
                WgmmaCommit,
                WgmmaWait(0),
            ]),
        ]),
    ],
),
)"#;

fn try_compile(src: &str, sets: &[(&str, i64)]) -> Result<program::Kernel, Diagnostic> {
    let s = crate::parse("t.ron", src)?;
    let sets: Vec<(String, i64)> = sets.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    compile(&s, &sets, &h100(), "t.ron", src)
}

#[test]
fn compiles_loops_to_flat_code() {
    let k = try_compile(BASE, &[]).unwrap();
    let role = &k.roles[0];
    assert_eq!(role.code.len(), 6); // LoopStart, 4 instructions, LoopEnd
    assert!(matches!(role.code[0], Op::LoopStart { exit: 6, .. }));
    assert!(matches!(role.code[5], Op::LoopEnd { body: 1, .. }));
    assert_eq!(k.buffers[1].base, 4 * 64 * 64 * 2);
    assert_eq!(k.smem_bytes, 4 * (8192 + 16384) + 4 * 8);
    assert_eq!(
        role.paths[2],
        "role `consumer`: program[0] loop(j).body[1] wgmma"
    );
}

#[test]
fn unknown_name_points_at_the_expression() {
    let src = BASE.replace("(j / stages) & 1", "(j / stagess) & 1");
    let e = try_compile(&src, &[]).unwrap_err();
    assert!(
        e.message.starts_with(
            "unknown name `stagess` in expression `(j / stagess) & 1` (did you mean `stages`?)"
        ),
        "{}",
        e.message
    );
    assert_eq!(e.pos.unwrap().0, 16);
    assert!(e
        .path
        .unwrap()
        .contains("program[0] loop(j).body[0] mbarrier.wait"));
}

#[test]
fn wgmma_shape_is_checked() {
    let e = try_compile(BASE, &[("n", 260)]).unwrap_err();
    assert_eq!(
        e.message,
        "wgmma N is 260; expected a multiple of 8 in 8..=256 (m64nNk16)"
    );
    assert_eq!(e.pos.unwrap().0, 17);
    let e = try_compile(BASE, &[("n", 100)]).unwrap_err();
    assert!(e.message.contains("N is 100"));
    let e = try_compile(&BASE.replace("shape: [64, 128])", "shape: [16, 128])"), &[]).unwrap_err();
    assert_eq!(
        e.message,
        "wgmma operand B needs 16384 bytes but a slot of `sB` holds 4096"
    );
}

#[test]
fn register_limits() {
    let src = BASE.replace("regs: 168", "regs: 300");
    let e = try_compile(&src, &[]).unwrap_err();
    assert_eq!(
        e.message,
        "role `consumer` asks for 300 registers per thread; h100-sxm allows at most 255 (256 with setmaxnreg)"
    );
    assert_eq!(e.pos.unwrap().0, 14);
    let src = BASE.replace("regs: 168", "regs: 232");
    let e = try_compile(&src, &[]).unwrap_err();
    assert!(
        e.message.contains("must reach 232 with SetMaxNReg"),
        "{}",
        e.message
    );
}

#[test]
fn smem_limit_and_overrides() {
    let e = try_compile(BASE, &[("stages", 12)]).unwrap_err();
    assert!(
        e.message
            .starts_with("the CTA needs 295008 bytes of shared memory"),
        "{}",
        e.message
    );
    let e = try_compile(BASE, &[("stage", 2)]).unwrap_err();
    assert_eq!(
        e.message,
        "--set stage: the scenario has no parameter `stage` (did you mean `stages`?) (parameters: n, stages)"
    );
}

#[test]
fn references_are_checked() {
    let e = try_compile(&BASE.replace("full[j % stages]", "ful[j]"), &[]).unwrap_err();
    assert_eq!(
        e.message,
        "no mbarrier named `ful` (did you mean `full`?); declared: full"
    );
    let e = try_compile(&BASE.replace("full[j % stages]", "full[4]"), &[]).unwrap_err();
    assert_eq!(
        e.message,
        "index 4 of `full` is out of range: it has 4 elements"
    );
    let e = try_compile(
        &BASE.replace("Smem(\"sA[j % stages]\")", "Smem(\"full\")"),
        &[],
    )
    .unwrap_err();
    assert!(e
        .message
        .starts_with("no shared-memory buffer named `full`"));
}

#[test]
fn lane_only_in_addresses() {
    let e = try_compile(&BASE.replace("WgmmaWait(0)", "WgmmaWait(\"lane\")"), &[]).unwrap_err();
    assert!(e.message.contains(
        "`lane` is only defined in per-lane addresses, `If` conditions and `Loop` counts"
    ));
    let ok = BASE.replace(
        "WgmmaWait(0),",
        "WgmmaWait(0), LdShared(buf: \"sA[0]\", addr: \"lane * 4\"),",
    );
    try_compile(&ok, &[]).unwrap();
}

#[test]
fn a_wait_polls_with_try_wait_unless_told_test() {
    let wait_poll = |src: &str| match try_compile(src, &[]).unwrap().roles[0].code[1] {
        Op::Issue(Inst::Wait { poll, .. }) => poll,
        ref op => panic!("{op:?}"),
    };
    assert_eq!(wait_poll(BASE), Poll::Try);
    let test = BASE.replace("& 1\"),", "& 1\", poll: Test),");
    assert_eq!(wait_poll(&test), Poll::Test);
    // A misspelled loop kind is a parse error at its position.
    let e = crate::parse("t.ron", &BASE.replace("& 1\"),", "& 1\", poll: Tset),")).unwrap_err();
    assert!(e.message.contains("Tset"), "{}", e.message);
    assert_eq!(e.pos.unwrap().0, 16);
}

#[test]
fn a_global_load_goes_through_the_l1_unless_told_l2() {
    let l1 = |access: &str| {
        let src = BASE.replace("WgmmaWait(0),", &format!("WgmmaWait(0), {access},"));
        let k = try_compile(&src, &[]).unwrap();
        k.roles[0]
            .code
            .iter()
            .find_map(|op| match op {
                Op::Issue(Inst::Global { l1, .. }) => Some(*l1),
                _ => None,
            })
            .expect("the access compiles to a Global")
    };
    assert!(l1(r#"LdGlobal(tensor: "B", addr: "lane * 4")"#));
    assert!(l1(r#"LdGlobal(tensor: "B", addr: "lane * 4", cache: L1)"#));
    assert!(!l1(r#"LdGlobal(tensor: "B", addr: "lane * 4", cache: L2)"#));
    assert!(!l1(r#"StGlobal(tensor: "B", addr: "lane * 4")"#));
    let e = crate::parse(
        "t.ron",
        &BASE.replace(
            "WgmmaWait(0),",
            r#"WgmmaWait(0), LdGlobal(tensor: "B", addr: "0", cache: L3),"#,
        ),
    )
    .unwrap_err();
    assert!(e.message.contains("L3"), "{}", e.message);
}

/// BASE's consumer with live values, and a second accumulator label of N = 64.
fn with_live(live: &str, regs: u32) -> String {
    BASE.replace("regs_per_thread: 168", &format!("regs_per_thread: {regs}"))
        .replace(
            "Role(name: \"consumer\", regs: 168,",
            &format!("Role(name: \"consumer\", regs: {regs}, live: {live},"),
        )
        .replace(
            "WgmmaCommit,",
            "Wgmma(n: 64, a: Smem(\"sA[j % stages]\"), b: \"sB[j % stages]\", acc: \"S\"),\n                WgmmaCommit,",
        )
}

#[test]
fn register_estimate_counts_live_values_accumulators_and_the_baseline() {
    // Accumulators: label `acc` at N = 128 (64 registers) and `S` at N = 64 (32), the widest
    // wgmma of each label counting once; the baseline is the preset's 10.
    let k = try_compile(&with_live("\"n / 2\"", 168), &[]).unwrap();
    let r = k.roles[0].registers.unwrap();
    assert_eq!(
        (r.live, r.accumulators, r.baseline, r.budget),
        (64, 96, 10, 168)
    );
    assert_eq!((r.needed(), r.spilled(), k.roles[0].spilled()), (170, 2, 2));
    // A wider wgmma of the label counts instead.
    let wide = |src: &str| {
        src.replace(
            "Buffer(name: \"sB\", slots: \"stages\", dtype: BF16, shape: [64, 128])",
            "Buffer(name: \"sB\", slots: \"stages\", dtype: BF16, shape: [128, 128])",
        )
    };
    let k = try_compile(&wide(&with_live("0", 232)), &[("n", 256)]).unwrap();
    assert_eq!(k.roles[0].registers.unwrap().accumulators, 128 + 32);
    assert_eq!(k.roles[0].spilled(), 0);
    // Without `live` nothing is estimated, whatever the accumulators.
    let k = try_compile(&wide(BASE), &[("n", 256)]).unwrap();
    assert_eq!(k.roles[0].registers, None);
    // The budget is at most the preset's 255 per thread (setmaxnreg may name 256).
    let src = with_live("200", 168)
        .replace("regs: 168, live", "regs: 256, live")
        .replace(
            "program: [\n",
            "program: [\n            SetMaxNReg(action: Inc, regs: 256),\n",
        );
    let r = try_compile(&src, &[]).unwrap().roles[0].registers.unwrap();
    assert_eq!((r.budget, r.spilled()), (255, 200 + 96 + 10 - 255));
}

#[test]
fn impossible_register_budgets_are_errors() {
    // The accumulators (96) and the baseline (10) exceed 104 registers: only live values spill.
    let src = with_live("1", 104);
    let e = try_compile(&src, &[]).unwrap_err();
    assert_eq!(
        e.message,
        "role `consumer` has 104 registers per thread, fewer than its wgmma accumulators (96) and the baseline (10) need: accumulators cannot be spilled to local memory"
    );
    assert_eq!(e.pos.unwrap().0, 14);
    assert_eq!(e.path.as_deref(), Some("kernel.roles[0] `consumer`"));
    // 106 registers hold them, with every live value spilled.
    assert_eq!(
        try_compile(&with_live("64", 106), &[]).unwrap().roles[0].spilled(),
        64
    );
    // More live values than a thread's 512 KiB of local memory holds.
    let e = try_compile(&with_live("131073", 168), &[]).unwrap_err();
    assert_eq!(
        e.message,
        "live values per thread is 131073 (`131073`); expected 0..=131072"
    );
    assert_eq!(e.pos.unwrap().0, 14);
    let e = try_compile(&with_live("-1", 168), &[]).unwrap_err();
    assert!(
        e.message.starts_with("live values per thread is -1"),
        "{}",
        e.message
    );
    // `live` is a constant of the parameters.
    let e = try_compile(&with_live("\"lane\"", 168), &[]).unwrap_err();
    assert!(e.message.contains("unknown name `lane`"), "{}", e.message);
}

#[test]
fn derived_parameters_follow_others_and_overrides() {
    let src = BASE.replace(
        r#"params: { "stages": 4, "n": 128 },"#,
        r#"params: { "stages": "n >= 128 ? 2 : 4", "n": 128, "waves": "num_sms / stages" },"#,
    );
    let k = try_compile(&src, &[]).unwrap();
    assert_eq!(k.params["stages"], 2);
    assert_eq!(k.params["waves"], 66);
    let k = try_compile(&src, &[("n", 64)]).unwrap();
    assert_eq!((k.params["stages"], k.params["waves"]), (4, 33));
    // An override replaces the expression.
    let k = try_compile(&src, &[("stages", 1)]).unwrap();
    assert_eq!((k.params["stages"], k.params["waves"]), (1, 132));
}

#[test]
fn derived_parameter_errors_name_the_parameter_and_its_place() {
    let with = |p: &str| BASE.replace(r#"params: { "stages": 4, "n": 128 },"#, p);
    let e = try_compile(&with(r#"params: { "stages": "n / 0", "n": 128 },"#), &[]).unwrap_err();
    assert_eq!(
        e.message,
        "parameter `stages` = `n / 0` cannot be evaluated (division by zero or overflow)"
    );
    assert_eq!(e.pos.map(|p| p.0), Some(4));
    let e = try_compile(&with(r#"params: { "stages": "m", "n": 128 },"#), &[]).unwrap_err();
    assert_eq!(
        e.message,
        "unknown name `m` in parameter `stages` = `m` (did you mean `n`?); a parameter may use the other parameters and `num_sms`: n, stages, num_sms"
    );
    let e = try_compile(
        &with(r#"params: { "stages": "n", "n": "stages + 1" },"#),
        &[],
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "parameter `n` depends on itself (through `stages`); give one of them a value"
    );
    // Setting one of them breaks the cycle.
    let k = try_compile(
        &with(r#"params: { "stages": "n / 32", "n": "stages * 32" },"#),
        &[("stages", 2)],
    )
    .unwrap();
    assert_eq!(k.params["n"], 64);
}

#[test]
fn assign_changes_only_a_let_variable_in_scope() {
    let with = |body: &str| {
        BASE.replace(
            "WgmmaWait(0),\n            ]),",
            &format!("WgmmaWait(0),\n            ]),\n            {body}"),
        )
    };
    let ok = with(
        r#"Let(var: "sum", value: "0"), Loop(var: "i", count: 4, body: [Assign(var: "sum", value: "sum + i")]),"#,
    );
    let k = try_compile(&ok, &[]).unwrap();
    let sets = k.roles[0]
        .code
        .iter()
        .filter(|op| matches!(op, Op::Set { .. }))
        .count();
    assert_eq!(sets, 2);
    let e = try_compile(
        &with(r#"Loop(var: "i", count: 4, body: [Assign(var: "i", value: "0")]),"#),
        &[],
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "`i` is a loop variable or an `AtomicAdd` result; `Assign` changes only a `Let`'s variable"
    );
    let e = try_compile(
        &with(r#"Let(var: "sum", value: "0"), Assign(var: "sun", value: "1"),"#),
        &[],
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "no variable `sun` in scope to assign; `Assign` changes a variable that a `Let` bound in an enclosing block (did you mean `sum`?)"
    );
}

#[test]
fn a_wgmma_of_m_rows_issues_m_over_64_hgmmas_per_k_step() {
    let src = with_live("0", 232)
        .replace(
            "Buffer(name: \"sA\", slots: \"stages\", dtype: BF16, shape: [64, 64])",
            "Buffer(name: \"sA\", slots: \"stages\", dtype: BF16, shape: [128, 64])",
        )
        .replace("Wgmma(n: \"n\",", "Wgmma(m: 128, n: \"n\",");
    let k = try_compile(&src, &[]).unwrap();
    let hgmmas: Vec<u32> = k.roles[0]
        .code
        .iter()
        .filter_map(|op| match op {
            Op::Issue(Inst::Wgmma { ksteps, .. }) => Some(*ksteps),
            _ => None,
        })
        .collect();
    // 2 m64 blocks x 4 k16 steps, beside `S`'s single block of 1 step.
    assert_eq!(hgmmas, vec![8, 1]);
    // Two m64 blocks of N = 128 hold 128 accumulator registers.
    assert_eq!(k.roles[0].registers.unwrap().accumulators, 128 + 32);
    // The A slot must hold all the rows.
    let e = try_compile(&src.replace("shape: [128, 64]", "shape: [64, 64]"), &[]).unwrap_err();
    assert_eq!(
        e.message,
        "wgmma operand A needs 16384 bytes but a slot of `sA` holds 8192"
    );
    let e = try_compile(&src.replace("m: 128", "m: 96"), &[]).unwrap_err();
    assert_eq!(
        e.message,
        "wgmma M is 96; expected 64, 128, 192 or 256 (m64nNk16 per 64 rows)"
    );
}

#[test]
fn a_requirement_that_does_not_hold_is_the_first_error() {
    let src = BASE.replace(
        "kernel: Kernel(",
        "requires: [Require(cond: \"n <= 64 || stages > 8\", message: \"n too wide\")],\nkernel: Kernel(",
    );
    let e = try_compile(&src, &[("n", 200)]).unwrap_err();
    assert_eq!(
        e.message,
        "n too wide (`n <= 64 || stages > 8` does not hold)"
    );
    assert_eq!(e.path.as_deref(), Some("requires[0]"));
    assert_eq!(e.pos.unwrap().0, 5);
    assert!(try_compile(&src, &[("n", 64)]).is_ok());
    // Only parameters and `num_sms` may appear.
    let e = try_compile(&src.replace("stages > 8", "warp > 8"), &[]).unwrap_err();
    assert!(
        e.message.starts_with("unknown name `warp`"),
        "{}",
        e.message
    );
}

#[test]
fn lane_dependent_control_flow_marks_its_reconvergence() {
    let src = BASE.replace(
        "WgmmaWait(0),",
        r#"WgmmaWait(0),
                If(cond: "lane % 2 == 0", then: [Alu(1)], else: [Fma(1)]),
                If(cond: "warp == 0", then: [Alu(1)]),
                Loop(var: "t", count: "lane + 1", body: [Fma(1)]),"#,
    );
    let k = try_compile(&src, &[]).unwrap();
    let code = &k.roles[0].code;
    // Loop(j) 0, its 4 instructions 1..=4, then the lane-dependent If at 5.
    assert!(matches!(code[5], Op::BranchLanes { otherwise: 7, .. }));
    assert!(matches!(code[7], Op::ElseLanes { end: 9 }));
    assert!(matches!(code[9], Op::Reconverge));
    // A uniform condition keeps its plain branch.
    assert!(matches!(code[10], Op::BranchIfZero { target: 12, .. }));
    assert!(matches!(code[12], Op::LoopLanesStart { exit: 15, .. }));
    assert!(matches!(code[14], Op::LoopLanesEnd { body: 13, .. }));
    assert!(matches!(code[15], Op::Reconverge));
}

#[test]
fn break_may_not_leave_a_loop_from_a_lane_dependent_if() {
    let src = BASE.replace(
        "WgmmaWait(0),",
        r#"WgmmaWait(0), If(cond: "lane < 4", then: [Break]),"#,
    );
    let e = try_compile(&src, &[]).unwrap_err();
    assert!(
        e.message
            .starts_with("`Break` inside an `If` whose condition depends on `lane`"),
        "{}",
        e.message
    );
    // A loop wholly inside the lane-dependent If may be left.
    let src = BASE.replace(
        "WgmmaWait(0),",
        r#"WgmmaWait(0), If(cond: "lane < 4", then: [Loop(var: "q", count: 2, body: [Break])]),"#,
    );
    try_compile(&src, &[]).unwrap();
}

#[test]
fn assign_under_a_lane_dependent_if_is_refused() {
    let src = BASE.replace(
        "WgmmaWait(0),\n            ]),",
        "WgmmaWait(0),\n            ]),\n            Let(var: \"s\", value: \"0\"), If(cond: \"lane < 4\", then: [Assign(var: \"s\", value: \"1\")]),",
    );
    let e = try_compile(&src, &[]).unwrap_err();
    assert_eq!(
        e.message,
        "`Assign` to `s` inside an `If` whose condition depends on `lane`: a variable holds one value for the whole warp"
    );
}

#[test]
fn a_swizzle_is_a_tma_mode_that_fits_the_rows_and_aligns_the_buffer() {
    let with = |sa: &str, sb: &str| {
        BASE.replace(
            r#"Buffer(name: "sA", slots: "stages", dtype: BF16, shape: [64, 64]),"#,
            &format!(r#"Buffer(name: "sA", slots: "stages", dtype: BF16, shape: [64, 64], swizzle: {sa}),"#),
        )
        .replace(
            r#"Buffer(name: "sB", slots: "stages", dtype: BF16, shape: [64, 128]),"#,
            &format!(r#"Buffer(name: "sB", slots: "stages", dtype: BF16, shape: [64, 128], swizzle: {sb}),"#),
        )
    };
    // 128-byte rows of sA and 256-byte rows of sB (two columns of swizzled rows).
    let k = try_compile(&with("128", "128"), &[]).unwrap();
    assert_eq!((k.buffers[0].swizzle, k.buffers[1].swizzle), (128, 128));
    assert_eq!(k.buffers[1].base, 4 * 64 * 64 * 2);
    // A buffer after an odd-sized one starts on 8 swizzle rows: 1024 bytes, not 256.
    let odd = with("128", "0").replace(
        "smem: [",
        r#"smem: [Buffer(name: "pad", dtype: BF16, shape: [72]),"#,
    );
    let k = try_compile(&odd, &[]).unwrap();
    assert_eq!(k.buffers[1].base, 1024);
    let e = try_compile(&with("48", "0"), &[]).unwrap_err();
    assert_eq!(
        e.message,
        "swizzle is 48 (`48`); expected 0 (none), 32, 64 or 128 bytes"
    );
    let e = try_compile(&with("0", "\"96\""), &[]).unwrap_err();
    assert!(e.message.starts_with("swizzle is 96"), "{}", e.message);
    let e = try_compile(
        &with("64", "0").replace(
            "shape: [64, 64], swizzle: 64",
            "shape: [64, 48], swizzle: 64",
        ),
        &[],
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "a tile row of buffer `sA` is 96 bytes: with a 64-byte swizzle it must be at most 64 bytes \
         or a multiple of 64 (TMA swizzles rows of at most the swizzle's width; wider tiles are \
         columns of them)"
    );
}

/// `BASE` with `tables` before its kernel and `launches` as the kernel's first field.
fn with_tables(tables: &str, launches: &str) -> String {
    BASE.replace(
        "kernel: Kernel(\n",
        &format!("tables: [{tables}],\nkernel: Kernel(\n    {launches}\n"),
    )
}

fn compile_all(src: &str, sets: &[(&str, i64)]) -> Result<Vec<program::Kernel>, Diagnostic> {
    let s = crate::parse("t.ron", src)?;
    let sets: Vec<(String, i64)> = sets.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    compile_sequence(&s, &sets, &h100(), "t.ron", src)
}

const ZIPF: &str =
    r#"Zipf(name: "hits", len: 8, draws: 1000, picks: 2, exponent: "s", seed: "seed"),"#;

#[test]
fn tables_are_lists_prefix_sums_and_seeded_zipf_counts() {
    let src = with_tables(
        &format!(
            r#"List(name: "sq", len: 4, var: "i", value: "i * i + n"),
            Prefix(name: "end", len: 4, var: "i", value: "sq[i] - n"),
            {}"#,
            ZIPF.replace("\"s\"", "100")
                .replace("\"seed\"", "\"stages\"")
        ),
        "grid: \"end[3] - 10 + sq[0] / n\",",
    );
    let k = try_compile(&src, &[]).unwrap();
    assert_eq!(k.tables["sq"], [128, 129, 132, 137]);
    assert_eq!(k.tables["end"], [0, 1, 5, 14]);
    assert_eq!(k.grid, 5);
    let hits = &k.tables["hits"];
    assert_eq!(hits.iter().sum::<i64>(), 2000);
    // No draw picks an item twice; the most weighted item is picked most.
    assert!(hits.iter().all(|&h| h <= 1000), "{hits:?}");
    assert_eq!(hits.iter().max(), Some(&hits[0]));
    // Same seed, same table; another seed, another table.
    assert_eq!(&try_compile(&src, &[]).unwrap().tables["hits"], hits);
    assert_ne!(
        &try_compile(&src, &[("stages", 5)]).unwrap().tables["hits"],
        hits
    );
}

#[test]
fn zipf_counts_follow_the_exponent() {
    // Exponent 0: every item equally likely; 1.0: item i about (i + 1) times rarer as a first
    // pick; 3.0: most draws take items 0 and 1.
    let flat = zipf_counts(8, 4000, 1, 0.0, 7);
    assert!(flat.iter().all(|&c| (400..600).contains(&c)), "{flat:?}");
    let zipf = zipf_counts(8, 4000, 1, 1.0, 7);
    assert!((1400..1750).contains(&zipf[0]), "{zipf:?}");
    assert!(zipf.windows(2).all(|w| w[0] >= w[1] - 60), "{zipf:?}");
    let steep = zipf_counts(8, 4000, 2, 3.0, 7);
    assert!(steep[0] > 3900 && steep[1] > 2400, "{steep:?}");
    assert_eq!(steep.iter().sum::<i64>(), 8000);
    assert_eq!(zipf_counts(8, 4000, 2, 3.0, 7), steep);
}

#[test]
fn table_errors_name_the_table_and_point_at_the_expression() {
    let e = try_compile(
        &with_tables(
            r#"List(name: "sq", len: 4, var: "i", value: "i * nn"),"#,
            "",
        ),
        &[],
    )
    .unwrap_err();
    assert!(
        e.message
            .starts_with("unknown name `nn` in expression `i * nn` (did you mean `n`?)"),
        "{}",
        e.message
    );
    assert_eq!(e.path.as_deref(), Some("tables[0] `sq`"));
    assert_eq!(e.pos.map(|p| p.0), Some(5));
    // Built-ins are the warps'; a table is computed before any runs.
    let e = try_compile(
        &with_tables(
            r#"List(name: "sq", len: 4, var: "i", value: "i * warp"),"#,
            "",
        ),
        &[],
    )
    .unwrap_err();
    assert!(
        e.message.starts_with("unknown name `warp`"),
        "{}",
        e.message
    );
    let e = try_compile(
        &with_tables(r#"Prefix(name: "n", len: 4, var: "i", value: "i"),"#, ""),
        &[],
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "table `n` shadows a parameter, a table above it, a built-in or `num_sms`; rename it"
    );
    let e = try_compile(
        &with_tables(r#"List(name: "sq", len: 0, var: "i", value: "i"),"#, ""),
        &[],
    )
    .unwrap_err();
    assert_eq!(e.message, "table length is 0 (`0`); expected 1..=65536");
    let e = try_compile(
        &with_tables(
            r#"List(name: "sq", len: 4, var: "i", value: "n / (i - 2)"),"#,
            "",
        ),
        &[],
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "entry 2 (`i` = 2) of `n / (i - 2)`: division by zero"
    );
    let zipf = ZIPF.replace("\"s\"", "100").replace("\"seed\"", "1");
    let e = try_compile(&with_tables(&zipf.replace("picks: 2", "picks: 9"), ""), &[]).unwrap_err();
    assert_eq!(
        e.message,
        "picks per draw (at most len) is 9 (`9`); expected 1..=8"
    );
    let src = with_tables(&zipf, "grid: \"hits[8]\",");
    let e = try_compile(&src, &[]).unwrap_err();
    assert_eq!(
        e.message,
        "grid (CTAs) `hits[8]` cannot be evaluated: index 8 of table `hits` is out of range: it has 8 entries"
    );
    let e = try_compile(
        &with_tables(
            r#"List(name: "sq", len: 4, var: "i", value: "i"),"#,
            "grid: \"sq\",",
        ),
        &[],
    )
    .unwrap_err();
    assert_eq!(e.message, "`sq` is a table: read an entry as `sq[i]`: `sq`");
}

#[test]
fn launches_compile_the_kernel_once_per_value() {
    let src = with_tables(
        r#"List(name: "ctas", len: 3, var: "i", value: "2 * i + 1"),"#,
        r#"launches: Launches(var: "e", count: "stages - 1"), grid: "ctas[e]","#,
    );
    let ks = compile_all(&src, &[]).unwrap();
    let got: Vec<(&str, u32, i64)> = ks
        .iter()
        .map(|k| (k.kernel_name.as_str(), k.grid, k.params["e"]))
        .collect();
    assert_eq!(got, [("t e=0", 1, 0), ("t e=1", 3, 1), ("t e=2", 5, 2)]);
    // The single-kernel entry point compiles the first launch.
    assert_eq!(try_compile(&src, &[]).unwrap().kernel_name, "t e=0");
    let e = compile_all(&src, &[("stages", 1)]).unwrap_err();
    assert_eq!(
        e.message,
        "the scenario launches no kernel: every kernel's `launches` count is 0"
    );
    let e = try_compile(&src, &[("stages", 1)]).unwrap_err();
    assert_eq!(
        e.message,
        "the launch count is 0: the kernel is never launched"
    );
    assert_eq!(e.path.as_deref(), Some("kernel.launches"));
    let e = compile_all(&src.replace("var: \"e\"", "var: \"n\""), &[]).unwrap_err();
    assert_eq!(
        e.message,
        "variable `n` shadows a parameter, a table, a built-in, `num_sms` or a variable in scope"
    );
    assert_eq!(e.path.as_deref(), Some("kernel.launches"));
    let e = compile_all(&src, &[("stages", 2000)]).unwrap_err();
    assert_eq!(
        e.message,
        "launch count is 1999 (`stages - 1`); expected 0..=1024"
    );
}

#[test]
fn counter_arrays_are_flattened_and_their_references_checked() {
    let with = |counters: &str, instr: &str| {
        BASE.replace(
            "    mbarriers:",
            &format!("    counters: [{counters}],\n    mbarriers:"),
        )
        .replace("WgmmaWait(0),", &format!("WgmmaWait(0), {instr},"))
    };
    let src = with(
        r#"Counter(name: "next"), Counter(name: "flags", init: 2, count: "n / 64")"#,
        r#"WaitCounter(counter: "flags[j % 2]", value: 3)"#,
    );
    let k = try_compile(&src, &[]).unwrap();
    let names: Vec<(&str, i64)> = k.counters.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    assert_eq!(names, [("next", 0), ("flags[0]", 2), ("flags[1]", 2)]);
    let e = try_compile(
        &with(
            r#"Counter(name: "flags", count: 2)"#,
            r#"Fence, AtomicAdd(counter: "flags[2]", into: "x")"#,
        ),
        &[],
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "index 2 of `flags` is out of range: it has 2 elements"
    );
    let e = try_compile(&with(r#"Counter(name: "flags", count: 0)"#, "Fence"), &[]).unwrap_err();
    assert!(e.message.contains("counters"), "{}", e.message);
    let e = try_compile(
        &with(
            r#"Counter(name: "flags")"#,
            r#"WaitCounter(counter: "flag", value: 1)"#,
        ),
        &[],
    )
    .unwrap_err();
    assert!(
        e.message
            .starts_with("no counter named `flag` (did you mean `flags`?)"),
        "{}",
        e.message
    );
}
