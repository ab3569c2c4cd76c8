//! Parsing, precedence, folding and evaluation of expressions.

use super::*;

fn eval_with(text: &str, vars: &[(&str, i64)]) -> Result<i64, EvalError> {
    let ast = parse(text).unwrap();
    let code = Code::compile(&ast, &mut |n| {
        vars.iter()
            .position(|(k, _)| *k == n)
            .map(|i| Binding::Slot(i as u16))
    })
    .unwrap();
    let env: Vec<i64> = vars.iter().map(|(_, v)| *v).collect();
    code.eval(&env)
}

#[test]
fn ring_buffer_index_and_parity() {
    for j in 0..20 {
        let vars = [("j", j), ("stages", 4)];
        assert_eq!(eval_with("j % stages", &vars), Ok(j % 4));
        assert_eq!(eval_with("(j / stages) & 1", &vars), Ok((j / 4) & 1));
    }
}

#[test]
fn c_precedence() {
    assert_eq!(eval_with("1 + 2 * 3", &[]), Ok(7));
    assert_eq!(eval_with("8 >> 1 + 1", &[]), Ok(2));
    assert_eq!(eval_with("6 & 3 == 3", &[]), Ok(0)); // == binds tighter than &
    assert_eq!(eval_with("1 << 4 | 1", &[]), Ok(17));
    assert_eq!(eval_with("2 < 3 && 3 <= 3 || 0", &[]), Ok(1));
    assert_eq!(eval_with("-3 + 10 % 4", &[]), Ok(-1));
    assert_eq!(eval_with("0 ? 5 : 1 ? 6 : 7", &[]), Ok(6));
    assert_eq!(eval_with("!0 + ~0", &[]), Ok(0));
    assert_eq!(eval_with("1_024 / 16", &[]), Ok(64));
}

#[test]
fn logic_and_conditionals_short_circuit() {
    assert_eq!(eval_with("x == 0 ? 1 : 10 / x", &[("x", 0)]), Ok(1));
    assert_eq!(eval_with("x == 0 ? 1 : 10 / x", &[("x", 5)]), Ok(2));
    assert_eq!(eval_with("x != 0 && 10 / x > 1", &[("x", 0)]), Ok(0));
    assert_eq!(eval_with("x == 0 || 10 / x > 1", &[("x", 0)]), Ok(1));
    assert_eq!(eval_with("3 && 4", &[]), Ok(1));
    assert_eq!(eval_with("0 || -2", &[]), Ok(1));
    assert_eq!(eval_with("0 || 0", &[]), Ok(0));
    assert_eq!(eval_with("1 + (2 && 0) * 5", &[]), Ok(1));
}

#[test]
fn functions() {
    assert_eq!(eval_with("min(3, 9) + max(3, 9)", &[]), Ok(12));
    assert_eq!(eval_with("cdiv(100, 64)", &[]), Ok(2));
    assert_eq!(eval_with("cdiv(128, 64)", &[]), Ok(2));
    assert!(parse("foo(1, 2)").is_err());
    assert!(parse("min(1)").is_err());
}

#[test]
fn errors_are_values_not_panics() {
    assert_eq!(eval_with("1 / 0", &[]), Err(EvalError::DivByZero));
    assert_eq!(eval_with("x % 0", &[("x", 3)]), Err(EvalError::DivByZero));
    assert_eq!(
        eval_with("9223372036854775807 + 1", &[]),
        Err(EvalError::Overflow)
    );
    assert_eq!(eval_with("1 << 64", &[]), Err(EvalError::BadShift(64)));
    assert_eq!(eval_with("1 << 63", &[]), Err(EvalError::Overflow));
    assert_eq!(eval_with("-1 << 63", &[]), Ok(i64::MIN));
    // The quotient overflows, the remainder is 0 and the ceiling 2^63 is beyond i64.
    let min = [("x", i64::MIN)];
    assert_eq!(eval_with("x / -1", &min), Err(EvalError::Overflow));
    assert_eq!(eval_with("x % -1", &min), Ok(0));
    assert_eq!(eval_with("cdiv(x, -1)", &min), Err(EvalError::Overflow));
    let e = parse("j % ").unwrap_err();
    assert!(matches!(e, ParseError::Syntax { offset: 4, .. }), "{e:?}"); // the missing operand
    assert!(parse("(1 + 2").is_err());
    assert!(parse("").is_err());
}

#[test]
fn constants_fold_and_names_resolve() {
    let ast = parse("seqlen / bn").unwrap();
    let code = Code::compile(&ast, &mut |n| match n {
        "seqlen" => Some(Binding::Const(4096)),
        "bn" => Some(Binding::Const(128)),
        _ => None,
    })
    .unwrap();
    assert_eq!(code.as_const(), Some(32));
    let unknown = Code::compile(&parse("a + stagess").unwrap(), &mut |n| {
        (n == "a").then_some(Binding::Const(1))
    });
    assert_eq!(
        unknown,
        Err(CompileError::UnknownName("stagess".to_string()))
    );
    let deep = format!("{}1{}", "(x + ".repeat(40), ")".repeat(40));
    let deep = Code::compile(&parse(&deep).unwrap(), &mut |_| Some(Binding::Slot(0)));
    assert_eq!(deep, Err(CompileError::TooDeep));
    // Constant sub-expressions fold: `x * (2 + 3)` is three nodes.
    let code = Code::compile(&parse("x * (2 + 3)").unwrap(), &mut |_| {
        Some(Binding::Slot(0))
    })
    .unwrap();
    assert_eq!(code.nodes.len(), 3);
    assert_eq!(code.eval(&[4]), Ok(20));
}

#[test]
fn references() {
    let r = parse_ref("full[j % stages]").unwrap();
    assert_eq!(r.name, "full");
    assert_eq!(r.index.to_string(), "(j % stages)");
    assert_eq!(parse_ref(" sA ").unwrap().index, Ast::Int(0));
    assert!(parse_ref("full[").is_err());
}

/// Compiles `text` with `j` as a run-time slot.
fn compile_j(text: &str) -> Result<Code, String> {
    let ast = parse(text).map_err(|e| e.to_string())?;
    Code::compile(&ast, &mut |n| (n == "j").then_some(Binding::Slot(0))).map_err(|e| e.to_string())
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    // Run on a small stack (4 MiB; the test profile keeps debug assertions, whose frames are
    // larger): the limits must hold well below the main thread's 8 MiB.
    std::thread::Builder::new()
        .stack_size(4 << 20)
        .spawn(|| {
            let at_limit = format!(
                "{}j{}",
                "(".repeat(MAX_NESTING - 2),
                ")".repeat(MAX_NESTING - 2)
            );
            assert!(compile_j(&at_limit).is_ok());
            let parens = format!("{}j{}", "(".repeat(2000), ")".repeat(2000));
            let unary = format!("{}j", "-".repeat(4000));
            let cond = format!("{}1{}", "j ? ".repeat(500), " : 2".repeat(500));
            for text in [&parens, &unary, &cond] {
                let e = compile_j(text).unwrap_err();
                assert!(
                    e.starts_with(&format!(
                        "the expression nests more than {MAX_NESTING} levels deep"
                    )),
                    "{e}"
                );
            }
            // The longest chain that fits the length limit compiles (2 operands pending).
            let chain = vec!["j"; MAX_LEN / 2].join("+");
            assert!(compile_j(&chain).is_ok());
            let long = vec!["j"; 50_000].join("+");
            assert_eq!(
                compile_j(&long).unwrap_err(),
                format!("the expression has 99999 characters; at most {MAX_LEN} are allowed")
            );
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn folding_a_deep_constant_that_fails_is_not_a_panic() {
    // Each level's fold evaluates the code below it, which fails at its innermost `1 / 0`
    // with more operands pending than the evaluation stack holds.
    let text = format!("{}1 / 0{}", "1 + (".repeat(40), ")".repeat(40));
    assert_eq!(
        compile_j(&text).unwrap_err(),
        "the expression is nested too deeply (more than 32 pending operands)"
    );
}

#[test]
fn a_warp_at_once_matches_lane_by_lane() {
    // Slots: 0 lane, 1 row, 2 n.
    let compile = |text: &str| {
        Code::compile(&parse(text).unwrap(), &mut |n| {
            ["lane", "row", "n"]
                .iter()
                .position(|k| *k == n)
                .map(|i| Binding::Slot(i as u16))
        })
        .unwrap()
    };
    let by_lane = |code: &Code, env: &mut [i64]| -> Result<Vec<i64>, EvalError> {
        (0..32)
            .map(|l| {
                env[0] = l;
                code.eval(env)
            })
            .collect()
    };
    let mut env = [0, 7, 4096];
    for text in [
        "((row * 64 + (lane * 8) / 256) * n + (lane * 8) % 256) * 2",
        "row * n + 5",
        "lane",
        "-lane + !lane + ~row",
        "row > 3 ? lane * 2 : lane + 1",
        "(lane + 1) * (lane + 2) * (lane + 3) * (lane + 4) * (lane + 5)",
        "min(lane, 9) - max(lane % 3, row) + cdiv(lane, 5) + (lane << 2) + (n >> lane % 4)",
    ] {
        let code = compile(text);
        let whole = code.eval_lanes(&env, 0).map(|v| v.to_vec());
        assert_eq!(whole, Some(by_lane(&code, &mut env).unwrap()), "{text}");
    }
    // A branch on the lane, an error in some lane: left to the lane-by-lane evaluation.
    for text in [
        "lane > 3 ? 1 : 2",
        "lane && row",
        "n / (lane - 5)",
        "row << (lane + 60)",
        "lane * 4611686018427387904",
        "lane + 9223372036854775800",
    ] {
        assert_eq!(compile(text).eval_lanes(&env, 0), None, "{text}");
    }
}

/// `text` with `t` bound to the table `[5, 7, 11]` and `j` to slot 0.
fn with_table(text: &str) -> Result<Code, CompileError> {
    let t = std::sync::Arc::new(Table {
        name: "t".into(),
        values: vec![5, 7, 11],
    });
    Code::compile(&parse(text).unwrap(), &mut |n| match n {
        "t" => Some(Binding::Table(t.clone())),
        "j" => Some(Binding::Slot(0)),
        "p" => Some(Binding::Const(2)),
        _ => None,
    })
}

#[test]
fn table_entries_fold_read_and_check_their_index() {
    assert_eq!(
        parse("t[j + 1] * 2").unwrap().to_string(),
        "(t[(j + 1)] * 2)"
    );
    // A constant index folds to the entry; a run-time one reads the table.
    assert_eq!(with_table("t[p] + t[0]").unwrap().as_const(), Some(16));
    let code = with_table("t[j] + t[t[0] - 5 + j / 2]").unwrap();
    assert_eq!(code.eval(&[1]), Ok(7 + 5));
    assert_eq!(code.eval(&[2]), Ok(11 + 7));
    assert_eq!(
        code.eval(&[3]).unwrap_err().to_string(),
        "index 3 of table `t` is out of range: it has 3 entries"
    );
    assert_eq!(
        with_table("t[-1]")
            .unwrap()
            .eval(&[0])
            .unwrap_err()
            .to_string(),
        "index -1 of table `t` is out of range: it has 3 entries"
    );
    assert_eq!(
        with_table("t + 1").unwrap_err().to_string(),
        "`t` is a table: read an entry as `t[i]`"
    );
    assert_eq!(
        with_table("p[0]").unwrap_err().to_string(),
        "`p` is not a table, so `p[...]` has no entries"
    );
    assert_eq!(
        with_table("q[0]").unwrap_err(),
        CompileError::UnknownName("q".into())
    );
    // Per lane: an index that varies with the lane, and one that does not.
    let lanes = Code::compile(&parse("t[j % 3] + t[1]").unwrap(), &mut |n| match n {
        "t" => Some(Binding::Table(std::sync::Arc::new(Table {
            name: "t".into(),
            values: vec![5, 7, 11],
        }))),
        "j" => Some(Binding::Slot(0)),
        _ => None,
    })
    .unwrap();
    let all = lanes.eval_lanes(&[0], 0).unwrap();
    for (l, v) in all.iter().enumerate() {
        assert_eq!(*v, [5, 7, 11][l % 3] + 7);
    }
}
