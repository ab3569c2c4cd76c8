//! The expression target: generated trees written with C precedence and raw text, through
//! parse, compile and evaluation, against a reference evaluation on `i128`.

use arbitrary::{Result, Unstructured};
use isa::expr::{symbol, Ast, BinOp, Binding, Code, EvalError, Table, UnOp};
use std::sync::Arc;

/// Names a generated expression may use: `a` and `b` are parameters (folded into the code),
/// `x` and `lane` run-time slots 0 and 1.
const NAMES: [&str; 4] = ["a", "b", "x", "lane"];

/// The table a generated expression may read (`t[i]`), and its length.
const TABLE: &str = "t";
const TABLE_LEN: usize = 4;

const UNARY: [UnOp; 3] = [UnOp::Neg, UnOp::Not, UnOp::BitNot];

const BINARY: [BinOp; 21] = [
    BinOp::Mul,
    BinOp::Div,
    BinOp::Rem,
    BinOp::Add,
    BinOp::Sub,
    BinOp::Shl,
    BinOp::Shr,
    BinOp::Lt,
    BinOp::Le,
    BinOp::Gt,
    BinOp::Ge,
    BinOp::Eq,
    BinOp::Ne,
    BinOp::BitAnd,
    BinOp::BitXor,
    BinOp::BitOr,
    BinOp::And,
    BinOp::Or,
    BinOp::Min,
    BinOp::Max,
    BinOp::CeilDiv,
];

/// A value near an edge: small, a power of two and its neighbours, the ends of `i64`.
fn value(u: &mut Unstructured) -> Result<i64> {
    Ok(match u.choose_index(4)? {
        0 => u.int_in_range(-4..=70)?,
        1 => {
            let p = 1i64 << u.int_in_range(0..=62)?;
            p + u.int_in_range(-1..=1)?
        }
        2 => *u.choose(&[i64::MIN, i64::MIN + 1, i64::MAX, i64::MAX - 1])?,
        _ => u.arbitrary()?,
    })
}

/// A random expression tree at most `depth` operators deep over [`NAMES`] and entries of
/// [`TABLE`]; literals are not negative (the text `-5` is negation applied to 5).
pub(crate) fn ast(u: &mut Unstructured, depth: u32) -> Result<Ast> {
    if depth == 0 || u.ratio(1, 4)? {
        return Ok(if u.arbitrary()? {
            Ast::Int(value(u)?.checked_abs().unwrap_or(i64::MAX))
        } else {
            Ast::Name(u.choose(&NAMES)?.to_string())
        });
    }
    let sub = |u: &mut Unstructured| ast(u, depth - 1).map(Box::new);
    Ok(match u.choose_index(9)? {
        0 => Ast::Unary(*u.choose(&UNARY)?, sub(u)?),
        1 => Ast::Cond(sub(u)?, sub(u)?, sub(u)?),
        2 => Ast::Index(TABLE.to_string(), sub(u)?),
        _ => Ast::Binary(*u.choose(&BINARY)?, sub(u)?, sub(u)?),
    })
}

/// C precedence of an operator: `?:` 0, `||` 1 up to `*` 10, unary 11, a primary 12.
fn precedence(e: &Ast) -> u8 {
    use BinOp::*;
    match e {
        Ast::Int(_) | Ast::Name(_) | Ast::Index(..) | Ast::Binary(Min | Max | CeilDiv, ..) => 12,
        Ast::Unary(..) => 11,
        Ast::Binary(op, ..) => match op {
            Mul | Div | Rem => 10,
            Add | Sub => 9,
            Shl | Shr => 8,
            Lt | Le | Gt | Ge => 7,
            Eq | Ne => 6,
            BitAnd => 5,
            BitXor => 4,
            BitOr => 3,
            And => 2,
            _ => 1,
        },
        Ast::Cond(..) => 0,
    }
}

/// `e` as text with only the parentheses C precedence needs, and random white space, so that
/// parsing it back tests the parser's precedence and associativity.
pub(crate) fn render(e: &Ast, u: &mut Unstructured) -> Result<String> {
    let mut out = String::new();
    write(e, 0, u, &mut out)?;
    Ok(out)
}

fn write(e: &Ast, min: u8, u: &mut Unstructured, out: &mut String) -> Result<()> {
    let paren = precedence(e) < min || u.ratio(1, 16)?;
    if paren {
        out.push('(');
    }
    let space = |u: &mut Unstructured, out: &mut String| -> Result<()> {
        out.push_str(u.choose(&["", " ", " ", "\n\t"])?);
        Ok(())
    };
    match e {
        Ast::Int(v) => out.push_str(&v.to_string()),
        Ast::Name(n) => out.push_str(n),
        Ast::Index(n, i) => {
            out.push_str(n);
            out.push('[');
            write(i, 0, u, out)?;
            out.push(']');
        }
        Ast::Unary(op, a) => {
            out.push(match op {
                UnOp::Neg => '-',
                UnOp::Not => '!',
                UnOp::BitNot => '~',
            });
            space(u, out)?;
            write(a, 11, u, out)?;
        }
        Ast::Binary(op @ (BinOp::Min | BinOp::Max | BinOp::CeilDiv), a, b) => {
            out.push_str(symbol(*op));
            out.push('(');
            write(a, 0, u, out)?;
            out.push(',');
            space(u, out)?;
            write(b, 0, u, out)?;
            out.push(')');
        }
        Ast::Binary(op, a, b) => {
            // Left-associative: the right operand needs a higher level.
            let p = precedence(e);
            write(a, p, u, out)?;
            space(u, out)?;
            out.push_str(symbol(*op));
            space(u, out)?;
            write(b, p + 1, u, out)?;
        }
        Ast::Cond(c, a, b) => {
            write(c, 1, u, out)?;
            out.push_str(" ? ");
            write(a, 0, u, out)?;
            out.push_str(" : ");
            write(b, 0, u, out)?;
        }
    }
    if paren {
        out.push(')');
    }
    Ok(())
}

/// The value of `e` by the expression language's definition, computed on `i128` so that no
/// step wraps: each operation's exact result, an error where it leaves `i64`, operands left
/// to right, `&&`, `||` and `?:` evaluating only the operand they need.
fn reference(
    e: &Ast,
    var: &dyn Fn(&str) -> i64,
    table: &[i64],
) -> std::result::Result<i64, EvalError> {
    let fit = |r: i128| i64::try_from(r).map_err(|_| EvalError::Overflow);
    let eval = |e: &Ast| reference(e, var, table);
    Ok(match e {
        Ast::Int(v) => *v,
        Ast::Name(n) => var(n),
        Ast::Index(n, i) => {
            let i = eval(i)?;
            match usize::try_from(i).ok().and_then(|i| table.get(i)) {
                Some(v) => *v,
                None => {
                    return Err(EvalError::Index {
                        table: n.clone(),
                        index: i,
                        len: table.len(),
                    })
                }
            }
        }
        Ast::Unary(op, a) => {
            let a = eval(a)?;
            match op {
                UnOp::Neg => fit(-(a as i128))?,
                UnOp::Not => (a == 0) as i64,
                UnOp::BitNot => !a,
            }
        }
        Ast::Binary(BinOp::And, a, b) => (eval(a)? != 0 && eval(b)? != 0) as i64,
        Ast::Binary(BinOp::Or, a, b) => (eval(a)? != 0 || eval(b)? != 0) as i64,
        Ast::Cond(c, a, b) => {
            if eval(c)? != 0 {
                eval(a)?
            } else {
                eval(b)?
            }
        }
        Ast::Binary(op, a, b) => {
            let (a, b) = (eval(a)? as i128, eval(b)? as i128);
            use BinOp::*;
            match op {
                Div | Rem | CeilDiv if b == 0 => return Err(EvalError::DivByZero),
                Shl | Shr if !(0..64).contains(&b) => return Err(EvalError::BadShift(b as i64)),
                Mul => fit(a * b)?,
                Div => fit(a / b)?,
                Rem => fit(a % b)?,
                CeilDiv => fit(a / b + (a % b != 0 && (a < 0) == (b < 0)) as i128)?,
                Add => fit(a + b)?,
                Sub => fit(a - b)?,
                Shl => fit(a << b)?,
                Shr => fit(a >> b)?,
                // On the operands' order and on their sign-extended bits: the same answers as
                // `i64`'s operators, worked out another way.
                Lt | Le | Gt | Ge | Eq | Ne => {
                    let order = a.cmp(&b);
                    let holds = match op {
                        Lt => order.is_lt(),
                        Le => order.is_le(),
                        Gt => order.is_gt(),
                        Ge => order.is_ge(),
                        Eq => order.is_eq(),
                        _ => order.is_ne(),
                    };
                    holds as i64
                }
                BitAnd => fit(a & b)?,
                BitXor => fit(a ^ b)?,
                BitOr => fit(a | b)?,
                Min => fit(if a < b { a } else { b })?,
                Max => fit(if a < b { b } else { a })?,
                And | Or => unreachable!("matched above"),
            }
        }
    })
}

/// Compiles `e` with `a` and `b` bound to parameters, `x`, `lane` to run-time slots and `t` to
/// `table`, and checks the compiled code against [`reference`]: the scalar evaluation, the whole-warp one
/// (each lane as the scalar evaluation gives it) and constant folding (a slot the code does
/// not read does not change the value). False when it does not compile (too deep, or naming
/// something else), which is all there is to check then.
fn check_eval(
    e: &Ast,
    text: &str,
    params: [i64; 2],
    env: [i64; 2],
    table: [i64; TABLE_LEN],
) -> bool {
    let t = Arc::new(Table {
        name: TABLE.to_string(),
        values: table.to_vec(),
    });
    let mut resolve = |n: &str| match n {
        "a" => Some(Binding::Const(params[0])),
        "b" => Some(Binding::Const(params[1])),
        "x" => Some(Binding::Slot(0)),
        "lane" => Some(Binding::Slot(1)),
        TABLE => Some(Binding::Table(t.clone())),
        _ => None,
    };
    let Ok(code) = Code::compile(e, &mut resolve) else {
        return false;
    };
    let value = |env: [i64; 2]| {
        move |n: &str| match n {
            "a" => params[0],
            "b" => params[1],
            "x" => env[0],
            _ => env[1],
        }
    };
    let got = code.eval(&env);
    let want = reference(e, &value(env), &table);
    assert_eq!(got, want, "`{text}` with {params:?}, {env:?}");
    if let Some(lanes) = code.eval_lanes(&env, 1) {
        for (l, v) in lanes.iter().enumerate() {
            let at = [env[0], l as i64];
            assert_eq!(code.eval(&at), Ok(*v), "`{text}` lane {l} of the warp");
        }
    }
    if !code.reads(0) {
        let other = [env[0] ^ 0x5a5a, env[1]];
        assert_eq!(
            code.eval(&other),
            got,
            "`{text}` depends on x it does not read"
        );
    }
    true
}

/// Parameter values `a`, `b` and slot values `x`, `lane` for an expression.
fn values(u: &mut Unstructured) -> Result<([i64; 2], [i64; 2])> {
    Ok(([value(u)?, value(u)?], [value(u)?, u.int_in_range(0..=31)?]))
}

/// The expression target. The first byte chooses the input: raw text (what libFuzzer's own
/// mutations work on), or a generated tree written with C precedence, which must parse back to
/// itself. Either is compiled and evaluated against [`reference`]; raw text that parses must
/// also read back from its printed form.
pub fn expr(data: &[u8]) -> bool {
    let mut u = Unstructured::new(data);
    let (Ok(raw), Ok((params, env))) = (u.arbitrary::<bool>(), values(&mut u)) else {
        return false;
    };
    // The values already drawn, so that the inputs kept from before tables read as they did.
    let table = [params[0], env[0], params[1], env[1]];
    if raw {
        let text = String::from_utf8_lossy(u.take_rest()).into_owned();
        let _ = isa::expr::parse_ref(&text);
        let Ok(e) = isa::expr::parse(&text) else {
            return false;
        };
        let printed = e.to_string();
        // The printed form adds parentheses, which may pass the nesting or length limit.
        if let Ok(again) = isa::expr::parse(&printed) {
            assert_eq!(again, e, "`{text}` printed as `{printed}`");
        }
        return check_eval(&e, &text, params, env, table);
    }
    let Ok(e) = ast(&mut u, 6) else {
        return false;
    };
    let Ok(text) = render(&e, &mut u) else {
        return false;
    };
    match isa::expr::parse(&text) {
        Ok(parsed) => assert_eq!(parsed, e, "`{text}` parsed as `{parsed}`"),
        Err(isa::expr::ParseError::TooLong { .. }) => return false,
        Err(err) => panic!("`{text}` written with C precedence: {err}"),
    }
    check_eval(&e, &text, params, env, table)
}
