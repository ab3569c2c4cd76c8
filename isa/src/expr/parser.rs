//! The expression parser (nom): C precedence levels, `?:`, the functions `min`, `max`, `cdiv`,
//! `name[index]` table entries, and `name[index]` references.

use super::{Ast, BinOp, UnOp};
use nom::{
    branch::alt,
    bytes::complete::tag,
    character::complete::{char, digit1, multispace0, satisfy},
    combinator::{all_consuming, map, map_res, opt, recognize},
    multi::{many0, separated_list0},
    sequence::{delimited, pair, preceded, tuple},
    IResult,
};
use std::cell::Cell;

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
        None => {
            let (i, index) = opt(delimited(ws(char('[')), expr_ast, ws(char(']'))))(i)?;
            Ok(match index {
                None => (i, Ast::Name(name.to_string())),
                Some(index) => (i, Ast::Index(name.to_string(), Box::new(index))),
            })
        }
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

/// How deeply an expression may nest: parentheses, function calls, unary operators and `?:`
/// branches each open a level. The parser recurses per level, so this bounds its stack.
pub const MAX_NESTING: usize = 256;

/// The longest expression text; it bounds the depth of an operator chain's tree (`a + b + ...`),
/// which later passes walk recursively, and the size of messages that quote the text.
pub const MAX_LEN: usize = 4096;

thread_local! {
    /// Levels open in the expression being parsed.
    static NESTING: Cell<usize> = const { Cell::new(0) };
}

/// One open nesting level, closed on drop (also when the parser backtracks).
struct Level;

impl Level {
    fn open(i: &str) -> Result<Level, nom::Err<nom::error::Error<&str>>> {
        let depth = NESTING.with(|n| n.get()) + 1;
        if depth > MAX_NESTING {
            return Err(nom::Err::Failure(nom::error::Error::new(
                i,
                nom::error::ErrorKind::TooLarge,
            )));
        }
        NESTING.with(|n| n.set(depth));
        Ok(Level)
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        NESTING.with(|n| n.set(n.get() - 1));
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
    let Ok((rest, op)) = ws(alt((
        char::<_, nom::error::Error<&str>>('-'),
        char('!'),
        char('~'),
    )))(i) else {
        return primary(i);
    };
    let _level = Level::open(i)?;
    let (rest, a) = unary(rest)?;
    let op = match op {
        '-' => UnOp::Neg,
        '!' => UnOp::Not,
        _ => UnOp::BitNot,
    };
    Ok((rest, Ast::Unary(op, Box::new(a))))
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
    let _level = Level::open(i)?;
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
pub enum ParseError {
    #[error("cannot parse expression `{text}` at character {offset}: expected an integer, a name, a table entry `name[i]`, `min(a, b)`, `max(a, b)`, `cdiv(a, b)` or a parenthesized expression joined by C operators")]
    Syntax { text: String, offset: usize },
    #[error("the expression nests more than {MAX_NESTING} levels deep (parentheses, function calls, unary operators and `?:` each open one) at character {offset}")]
    TooDeep { offset: usize },
    #[error("the expression has {len} characters; at most {MAX_LEN} are allowed")]
    TooLong { len: usize },
}

/// Parses a whole expression.
pub fn parse(text: &str) -> Result<Ast, ParseError> {
    finish(text, |t| all_consuming(expr_ast)(t))
}

/// Runs a whole-input parse within [`MAX_LEN`]; a failure becomes a [`ParseError`] at the
/// failing offset.
fn finish<'a, T>(
    text: &'a str,
    parser: impl FnOnce(&'a str) -> IResult<&'a str, T>,
) -> Result<T, ParseError> {
    let len = text.chars().count();
    if len > MAX_LEN {
        return Err(ParseError::TooLong { len });
    }
    let syntax = |offset| ParseError::Syntax {
        text: text.to_string(),
        offset,
    };
    match parser(text) {
        Ok((_, v)) => Ok(v),
        Err(nom::Err::Failure(e)) if e.code == nom::error::ErrorKind::TooLarge => {
            Err(ParseError::TooDeep {
                offset: text.len() - e.input.len(),
            })
        }
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(syntax(text.len() - e.input.len())),
        Err(nom::Err::Incomplete(_)) => Err(syntax(text.len())),
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
    let (name, index) = finish(text, |t| {
        all_consuming(ws(pair(
            ident,
            opt(delimited(ws(char('[')), expr_ast, ws(char(']')))),
        )))(t)
    })?;
    Ok(RefAst {
        name: name.to_string(),
        index: index.unwrap_or(Ast::Int(0)),
    })
}
