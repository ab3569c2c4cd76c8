//! Integer expressions over scenario parameters, loop variables and built-ins
//! (`j % stages`, `(j / stages) & 1`, `seqlen / bn`, `lane * 4`).
//!
//! C operator precedence, 64-bit signed arithmetic, checked: overflow, division by zero and
//! out-of-range shifts are evaluation errors, never panics or silent wrap-around.
//! Functions: `min(a, b)`, `max(a, b)`, `cdiv(a, b)` (ceiling division). `name[i]` reads entry
//! `i` of a scenario's integer table.
//!
//! - [`parser`]: text to an [`Ast`] (nom);
//! - [`code`]: an [`Ast`] with its names resolved to postfix [`Code`], constants folded;
//! - [`eval`]: running [`Code`] on a warp's variables, without allocating;
//! - [`lanes`]: running a per-lane [`Code`] for a whole warp at once.

mod code;
mod eval;
mod lanes;
mod parser;
#[cfg(test)]
mod tests;

pub use code::{Binding, Code, CompileError, Table};
pub use eval::{EvalError, MAX_DEPTH};
pub use parser::{parse, parse_ref, ParseError, RefAst, MAX_LEN, MAX_NESTING};

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
    /// `name[index]`: an entry of a table.
    Index(String, Box<Ast>),
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
            Ast::Index(n, i) => write!(f, "{n}[{i}]"),
        }
    }
}

/// An operator as written: `<<`, `&&`, or a function's name (`min`).
pub fn symbol(op: BinOp) -> &'static str {
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
