//! Integer expressions over scenario parameters, loop variables and built-ins
//! (`j % stages`, `(j / stages) & 1`, `seqlen / bn`, `lane * 4`).
//!
//! C operator precedence, 64-bit signed arithmetic, checked: overflow, division by zero and
//! out-of-range shifts are evaluation errors, never panics or silent wrap-around.
//! Functions: `min(a, b)`, `max(a, b)`, `cdiv(a, b)` (ceiling division).

use nom::{
    branch::alt,
    bytes::complete::tag,
    character::complete::{char, digit1, multispace0, satisfy},
    combinator::{all_consuming, map, map_res, opt, recognize},
    multi::{many0, separated_list0},
    sequence::{delimited, pair, preceded, tuple},
    IResult,
};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
    BitNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    And,
    Or,
    Min,
    Max,
    CeilDiv,
}

/// A parsed expression tree, names unresolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ast {
    Int(i64),
    Name(String),
    Unary(UnOp, Box<Ast>),
    Binary(BinOp, Box<Ast>, Box<Ast>),
    Cond(Box<Ast>, Box<Ast>, Box<Ast>),
}

impl Ast {
    /// Every name the expression mentions, in order of appearance.
    pub fn names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_names(&mut out);
        out
    }

    fn collect_names<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Ast::Int(_) => {}
            Ast::Name(n) => out.push(n),
            Ast::Unary(_, a) => a.collect_names(out),
            Ast::Binary(_, a, b) => {
                a.collect_names(out);
                b.collect_names(out);
            }
            Ast::Cond(c, a, b) => {
                c.collect_names(out);
                a.collect_names(out);
                b.collect_names(out);
            }
        }
    }
}

fn ws<'a, O>(
    inner: impl FnMut(&'a str) -> IResult<&'a str, O>,
) -> impl FnMut(&'a str) -> IResult<&'a str, O> {
    delimited(multispace0, inner, multispace0)
}

fn ident(i: &str) -> IResult<&str, &str> {
    recognize(pair(
        satisfy(|c| c.is_ascii_alphabetic() || c == '_'),
        many0(satisfy(|c| c.is_ascii_alphanumeric() || c == '_')),
    ))(i)
}

fn integer(i: &str) -> IResult<&str, i64> {
    map_res(
        recognize(pair(digit1, many0(alt((digit1, tag("_")))))),
        |s: &str| s.replace('_', "").parse::<i64>(),
    )(i)
}

fn call_or_name(i: &str) -> IResult<&str, Ast> {
    let (i, name) = ident(i)?;
    let (i, args) = opt(delimited(
        ws(char('(')),
        separated_list0(ws(char(',')), expr_ast),
        ws(char(')')),
    ))(i)?;
    match args {
        None => Ok((i, Ast::Name(name.to_string()))),
        Some(args) => {
            let op = match name {
                "min" => BinOp::Min,
                "max" => BinOp::Max,
                "cdiv" => BinOp::CeilDiv,
                _ => {
                    return Err(nom::Err::Failure(nom::error::Error::new(
                        i,
                        nom::error::ErrorKind::Verify,
                    )))
                }
            };
            let mut it = args.into_iter();
            match (it.next(), it.next(), it.next()) {
                (Some(a), Some(b), None) => Ok((i, Ast::Binary(op, Box::new(a), Box::new(b)))),
                _ => Err(nom::Err::Failure(nom::error::Error::new(
                    i,
                    nom::error::ErrorKind::Count,
                ))),
            }
        }
    }
}

fn primary(i: &str) -> IResult<&str, Ast> {
    ws(alt((
        map(integer, Ast::Int),
        call_or_name,
        delimited(char('('), expr_ast, char(')')),
    )))(i)
}

fn unary(i: &str) -> IResult<&str, Ast> {
    alt((
        map(
            pair(ws(alt((char('-'), char('!'), char('~')))), unary),
            |(op, a)| {
                let op = match op {
                    '-' => UnOp::Neg,
                    '!' => UnOp::Not,
                    _ => UnOp::BitNot,
                };
                Ast::Unary(op, Box::new(a))
            },
        ),
        primary,
    ))(i)
}

/// One left-associative precedence level: `next (op next)*`.
fn level<'a>(
    i: &'a str,
    ops: &[(&'static str, BinOp)],
    next: fn(&'a str) -> IResult<&'a str, Ast>,
) -> IResult<&'a str, Ast> {
    let (mut i, mut acc) = next(i)?;
    'outer: loop {
        for (sym, op) in ops {
            // `&` must not match the start of `&&`, nor `|` of `||`, nor `<` of `<<` / `<=`.
            if let Ok((rest, _)) = ws(tag::<_, _, nom::error::Error<&str>>(*sym))(i) {
                let longer = ["&&", "||", "<<", ">>", "<=", ">=", "=="];
                let trimmed = i.trim_start();
                if longer
                    .iter()
                    .any(|l| l.len() > sym.len() && l.starts_with(sym) && trimmed.starts_with(l))
                {
                    continue;
                }
                let (rest, rhs) = next(rest)?;
                acc = Ast::Binary(*op, Box::new(acc), Box::new(rhs));
                i = rest;
                continue 'outer;
            }
        }
        return Ok((i, acc));
    }
}

fn mul(i: &str) -> IResult<&str, Ast> {
    level(
        i,
        &[("*", BinOp::Mul), ("/", BinOp::Div), ("%", BinOp::Rem)],
        unary,
    )
}
fn add(i: &str) -> IResult<&str, Ast> {
    level(i, &[("+", BinOp::Add), ("-", BinOp::Sub)], mul)
}
fn shift(i: &str) -> IResult<&str, Ast> {
    level(i, &[("<<", BinOp::Shl), (">>", BinOp::Shr)], add)
}
fn rel(i: &str) -> IResult<&str, Ast> {
    level(
        i,
        &[
            ("<=", BinOp::Le),
            (">=", BinOp::Ge),
            ("<", BinOp::Lt),
            (">", BinOp::Gt),
        ],
        shift,
    )
}
fn eq(i: &str) -> IResult<&str, Ast> {
    level(i, &[("==", BinOp::Eq), ("!=", BinOp::Ne)], rel)
}
fn bitand(i: &str) -> IResult<&str, Ast> {
    level(i, &[("&", BinOp::BitAnd)], eq)
}
fn bitxor(i: &str) -> IResult<&str, Ast> {
    level(i, &[("^", BinOp::BitXor)], bitand)
}
fn bitor(i: &str) -> IResult<&str, Ast> {
    level(i, &[("|", BinOp::BitOr)], bitxor)
}
fn logand(i: &str) -> IResult<&str, Ast> {
    level(i, &[("&&", BinOp::And)], bitor)
}
fn logor(i: &str) -> IResult<&str, Ast> {
    level(i, &[("||", BinOp::Or)], logand)
}

fn expr_ast(i: &str) -> IResult<&str, Ast> {
    let (i, c) = logor(i)?;
    let (i, rest) = opt(tuple((
        preceded(ws(char('?')), expr_ast),
        preceded(ws(char(':')), expr_ast),
    )))(i)?;
    Ok(match rest {
        None => (i, c),
        Some((a, b)) => (i, Ast::Cond(Box::new(c), Box::new(a), Box::new(b))),
    })
}

/// Why an expression's text does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse expression `{text}` at character {offset}: expected an integer, a name, `min(a, b)`, `max(a, b)`, `cdiv(a, b)` or a parenthesized expression joined by C operators")]
pub struct ParseError {
    pub text: String,
    pub offset: usize,
}

/// Parses a whole expression.
pub fn parse(text: &str) -> Result<Ast, ParseError> {
    finish(text, all_consuming(expr_ast)(text))
}

/// A whole-input parse result as a value or a [`ParseError`] at the failing offset.
fn finish<T>(text: &str, result: IResult<&str, T>) -> Result<T, ParseError> {
    match result {
        Ok((_, v)) => Ok(v),
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(ParseError {
            text: text.to_string(),
            offset: text.len() - e.input.len(),
        }),
        Err(nom::Err::Incomplete(_)) => Err(ParseError {
            text: text.to_string(),
            offset: text.len(),
        }),
    }
}

/// A reference to one element of a named array: `full[j % stages]`, or `sA` (index 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefAst {
    pub name: String,
    pub index: Ast,
}

/// Parses `name` or `name[expr]`.
pub fn parse_ref(text: &str) -> Result<RefAst, ParseError> {
    let parsed = all_consuming(ws(pair(
        ident,
        opt(delimited(ws(char('[')), expr_ast, ws(char(']')))),
    )))(text);
    let (name, index) = finish(text, parsed)?;
    Ok(RefAst {
        name: name.to_string(),
        index: index.unwrap_or(Ast::Int(0)),
    })
}

/// How a name resolves when an expression is compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// A scenario parameter: folded into the code.
    Const(i64),
    /// A run-time variable: an index into the environment slice given to [`Code::eval`].
    Slot(u16),
}

/// Why an expression cannot be compiled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    #[error("unknown name `{0}`")]
    UnknownName(String),
    #[error("the expression is nested too deeply (more than {MAX_DEPTH} pending operands)")]
    TooDeep,
}

/// Why an expression cannot be evaluated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("division by zero")]
    DivByZero,
    #[error("integer overflow")]
    Overflow,
    #[error("shift by {0} is outside 0..64")]
    BadShift(i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Node {
    Const(i64),
    Slot(u16),
    Un(UnOp),
    Bin(BinOp),
    /// Pops a value; jumps to the node index when it is zero (non-zero). `&&`, `||` and `?:`
    /// evaluate only the operand they need, so `x == 0 ? 1 : 10 / x` is safe.
    JumpIfZero(u32),
    JumpIfNonZero(u32),
    Jump(u32),
    /// Replaces the top value by 1 if it is non-zero, else 0.
    Truth,
}

/// An expression compiled to postfix code with parameters folded; evaluation touches no strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code {
    nodes: Vec<Node>,
}

impl Code {
    /// Compiles `ast`; `resolve` maps a name to its binding or `None` when unknown.
    /// Returns the first unknown name as the error.
    pub fn compile(
        ast: &Ast,
        resolve: &mut impl FnMut(&str) -> Option<Binding>,
    ) -> Result<Code, CompileError> {
        let mut nodes = Vec::new();
        emit(ast, resolve, &mut nodes).map_err(CompileError::UnknownName)?;
        // Straight-line depth bounds the depth along any jump path.
        let mut depth = 0usize;
        for n in &nodes {
            match n {
                Node::Const(_) | Node::Slot(_) => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Err(CompileError::TooDeep);
                    }
                }
                Node::Bin(_) | Node::JumpIfZero(_) | Node::JumpIfNonZero(_) => {
                    depth = depth.saturating_sub(1)
                }
                Node::Un(_) | Node::Jump(_) | Node::Truth => {}
            }
        }
        let code = Code { nodes };
        // Fold a constant expression to one node, so the hot path does no arithmetic for it.
        if code.nodes.iter().all(|n| !matches!(n, Node::Slot(_))) {
            if let Ok(v) = code.eval(&[]) {
                return Ok(Code::constant(v));
            }
        }
        Ok(code)
    }

    pub fn constant(v: i64) -> Code {
        Code {
            nodes: vec![Node::Const(v)],
        }
    }

    /// The value when the expression does not depend on run-time variables.
    pub fn as_const(&self) -> Option<i64> {
        match self.nodes.as_slice() {
            [Node::Const(v)] => Some(*v),
            _ => None,
        }
    }

    /// Whether the expression reads the run-time variable in `slot`.
    pub fn uses_slot(&self, slot: u16) -> bool {
        self.nodes.contains(&Node::Slot(slot))
    }

    pub fn eval(&self, env: &[i64]) -> Result<i64, EvalError> {
        if let [Node::Const(v)] = self.nodes.as_slice() {
            return Ok(*v);
        }
        let mut stack = Stack::default();
        let mut pc = 0;
        while let Some(node) = self.nodes.get(pc) {
            pc += 1;
            match *node {
                Node::Const(v) => stack.push(v),
                Node::Slot(s) => stack.push(env[s as usize]),
                Node::Un(op) => {
                    let a = stack.pop().unwrap_or_default();
                    stack.push(match op {
                        UnOp::Neg => a.checked_neg().ok_or(EvalError::Overflow)?,
                        UnOp::Not => (a == 0) as i64,
                        UnOp::BitNot => !a,
                    });
                }
                Node::Bin(op) => {
                    let b = stack.pop().unwrap_or_default();
                    let a = stack.pop().unwrap_or_default();
                    stack.push(apply(op, a, b)?);
                }
                Node::JumpIfZero(t) => {
                    if stack.pop().unwrap_or_default() == 0 {
                        pc = t as usize;
                    }
                }
                Node::JumpIfNonZero(t) => {
                    if stack.pop().unwrap_or_default() != 0 {
                        pc = t as usize;
                    }
                }
                Node::Jump(t) => pc = t as usize,
                Node::Truth => {
                    let a = stack.pop().unwrap_or_default();
                    stack.push((a != 0) as i64);
                }
            }
        }
        Ok(stack.pop().unwrap_or_default())
    }
}

/// The deepest evaluation stack an expression may need; [`Code::compile`] rejects deeper ones,
/// so evaluation never allocates.
pub const MAX_DEPTH: usize = 32;

/// A fixed-size evaluation stack.
struct Stack {
    v: [i64; MAX_DEPTH],
    n: usize,
}

impl Default for Stack {
    fn default() -> Self {
        Stack {
            v: [0; MAX_DEPTH],
            n: 0,
        }
    }
}

impl Stack {
    fn push(&mut self, x: i64) {
        self.v[self.n] = x;
        self.n += 1;
    }
    fn pop(&mut self) -> Option<i64> {
        self.n = self.n.checked_sub(1)?;
        Some(self.v[self.n])
    }
}

/// Emits `ast`'s code and returns whether it reads no run-time slot. A sub-expression of
/// constants becomes one constant (unless evaluating it fails: that error is left for run
/// time, where the expression may not even be reached).
fn emit(
    ast: &Ast,
    resolve: &mut impl FnMut(&str) -> Option<Binding>,
    out: &mut Vec<Node>,
) -> Result<bool, String> {
    let start = out.len();
    let constant = match ast {
        Ast::Int(v) => {
            out.push(Node::Const(*v));
            true
        }
        Ast::Name(n) => match resolve(n) {
            Some(Binding::Const(v)) => {
                out.push(Node::Const(v));
                true
            }
            Some(Binding::Slot(s)) => {
                out.push(Node::Slot(s));
                false
            }
            None => return Err(n.clone()),
        },
        Ast::Unary(op, a) => {
            let c = emit(a, resolve, out)?;
            out.push(Node::Un(*op));
            c
        }
        Ast::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
            // a; jump on the deciding value; b as 0/1; skip the short-circuit constant.
            let ca = emit(a, resolve, out)?;
            let decide = out.len();
            out.push(Node::Jump(0));
            let cb = emit(b, resolve, out)?;
            out.push(Node::Truth);
            let skip = out.len();
            out.push(Node::Jump(0));
            let short = out.len() as u32;
            let (jump, value) = if *op == BinOp::And {
                (Node::JumpIfZero(short), 0)
            } else {
                (Node::JumpIfNonZero(short), 1)
            };
            out[decide] = jump;
            out.push(Node::Const(value));
            out[skip] = Node::Jump(out.len() as u32);
            ca && cb
        }
        Ast::Binary(op, a, b) => {
            let ca = emit(a, resolve, out)?;
            let cb = emit(b, resolve, out)?;
            out.push(Node::Bin(*op));
            ca && cb
        }
        Ast::Cond(c, a, b) => {
            let cc = emit(c, resolve, out)?;
            let to_else = out.len();
            out.push(Node::Jump(0));
            let ca = emit(a, resolve, out)?;
            let to_end = out.len();
            out.push(Node::Jump(0));
            out[to_else] = Node::JumpIfZero(out.len() as u32);
            let cb = emit(b, resolve, out)?;
            out[to_end] = Node::Jump(out.len() as u32);
            cc && ca && cb
        }
    };
    if constant && out.len() - start > 1 {
        // Jump targets are absolute: evaluate the sub-code relocated to index 0.
        let sub: Vec<Node> = out[start..]
            .iter()
            .map(|n| match *n {
                Node::JumpIfZero(t) => Node::JumpIfZero(t - start as u32),
                Node::JumpIfNonZero(t) => Node::JumpIfNonZero(t - start as u32),
                Node::Jump(t) => Node::Jump(t - start as u32),
                other => other,
            })
            .collect();
        if let Ok(v) = (Code { nodes: sub }).eval(&[]) {
            out.truncate(start);
            out.push(Node::Const(v));
        }
    }
    Ok(constant)
}

fn apply(op: BinOp, a: i64, b: i64) -> Result<i64, EvalError> {
    use BinOp::*;
    let checked = |v: Option<i64>| v.ok_or(EvalError::Overflow);
    Ok(match op {
        Mul => checked(a.checked_mul(b))?,
        Div | Rem | CeilDiv if b == 0 => return Err(EvalError::DivByZero),
        Div => checked(a.checked_div(b))?,
        Rem => checked(a.checked_rem(b))?,
        CeilDiv => {
            let q = checked(a.checked_div(b))?;
            if a % b != 0 && ((a < 0) == (b < 0)) {
                q + 1
            } else {
                q
            }
        }
        Add => checked(a.checked_add(b))?,
        Sub => checked(a.checked_sub(b))?,
        Shl | Shr if !(0..64).contains(&b) => return Err(EvalError::BadShift(b)),
        Shl => {
            let r = a << b;
            if r >> b != a {
                return Err(EvalError::Overflow);
            }
            r
        }
        Shr => a >> b,
        Lt => (a < b) as i64,
        Le => (a <= b) as i64,
        Gt => (a > b) as i64,
        Ge => (a >= b) as i64,
        Eq => (a == b) as i64,
        Ne => (a != b) as i64,
        BitAnd => a & b,
        BitXor => a ^ b,
        BitOr => a | b,
        // Compiled to jumps (short-circuit); never reaches here.
        And => (a != 0 && b != 0) as i64,
        Or => (a != 0 || b != 0) as i64,
        Min => a.min(b),
        Max => a.max(b),
    })
}

impl fmt::Display for Ast {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ast::Int(v) => write!(f, "{v}"),
            Ast::Name(n) => write!(f, "{n}"),
            Ast::Unary(op, a) => {
                let s = match op {
                    UnOp::Neg => "-",
                    UnOp::Not => "!",
                    UnOp::BitNot => "~",
                };
                write!(f, "{s}({a})")
            }
            Ast::Binary(op, a, b) => match op {
                BinOp::Min => write!(f, "min({a}, {b})"),
                BinOp::Max => write!(f, "max({a}, {b})"),
                BinOp::CeilDiv => write!(f, "cdiv({a}, {b})"),
                _ => write!(f, "({a} {} {b})", symbol(*op)),
            },
            Ast::Cond(c, a, b) => write!(f, "({c} ? {a} : {b})"),
        }
    }
}

fn symbol(op: BinOp) -> &'static str {
    use BinOp::*;
    match op {
        Mul => "*",
        Div => "/",
        Rem => "%",
        Add => "+",
        Sub => "-",
        Shl => "<<",
        Shr => ">>",
        Lt => "<",
        Le => "<=",
        Gt => ">",
        Ge => ">=",
        Eq => "==",
        Ne => "!=",
        BitAnd => "&",
        BitXor => "^",
        BitOr => "|",
        And => "&&",
        Or => "||",
        Min => "min",
        Max => "max",
        CeilDiv => "cdiv",
    }
}

#[cfg(test)]
mod tests {
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
        let e = parse("j % ").unwrap_err();
        assert_eq!(e.offset, 4); // the missing operand
        assert!(parse("(1 + 2").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn constants_fold_and_names_resolve() {
        let ast = parse("seqlen / bn").unwrap();
        assert_eq!(ast.names(), vec!["seqlen", "bn"]);
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
}
