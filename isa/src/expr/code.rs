//! Compiling an [`Ast`] to postfix [`Code`]: names resolved to constants or run-time slots,
//! constant sub-expressions folded, `&&`, `||` and `?:` turned into jumps.

use super::eval::MAX_DEPTH;
use super::{Ast, BinOp, UnOp};
use std::sync::Arc;

/// A scenario's integer table, read in expressions as `name[i]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub name: String,
    pub values: Vec<i64>,
}

/// How a name resolves when an expression is compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Binding {
    /// A scenario parameter: folded into the code.
    Const(i64),
    /// A run-time variable: an index into the environment slice given to [`Code::eval`].
    Slot(u16),
    /// A table: only `name[i]` reads it; a constant index folds to the entry.
    Table(Arc<Table>),
}

/// Why an expression cannot be compiled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    #[error("unknown name `{0}`")]
    UnknownName(String),
    #[error("the expression is nested too deeply (more than {MAX_DEPTH} pending operands)")]
    TooDeep,
    #[error("`{0}` is a table: read an entry as `{0}[i]`")]
    TableWithoutIndex(String),
    #[error("`{0}` is not a table, so `{0}[...]` has no entries")]
    NotATable(String),
}

/// One step of postfix code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Node {
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
    /// Replaces the top value `i` by entry `i` of the code's table at this index.
    Index(u16),
}

/// An expression compiled to postfix code with parameters folded; evaluation touches no strings.
/// Boxed slices, not vectors: instructions hold many codes, and they do not grow once compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code {
    pub(super) nodes: Box<[Node]>,
    /// The tables that `Node::Index` reads.
    pub(super) tables: Box<[Arc<Table>]>,
}

/// A [`Code`] being emitted.
#[derive(Default)]
struct Builder {
    nodes: Vec<Node>,
    tables: Vec<Arc<Table>>,
}

impl Code {
    /// Compiles `ast`; `resolve` maps a name to its binding or `None` when unknown.
    /// Returns the first unknown name as the error.
    pub fn compile(
        ast: &Ast,
        resolve: &mut impl FnMut(&str) -> Option<Binding>,
    ) -> Result<Code, CompileError> {
        let mut built = Builder::default();
        emit(ast, resolve, &mut built)?;
        // Straight-line depth bounds the depth along any jump path.
        let mut depth = 0usize;
        for n in &built.nodes {
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
                Node::Un(_) | Node::Jump(_) | Node::Truth | Node::Index(_) => {}
            }
        }
        let code = Code {
            nodes: built.nodes.into(),
            tables: built.tables.into(),
        };
        // Fold a constant expression to one node, so the hot path does no arithmetic for it.
        if code.nodes.iter().all(|n| !matches!(n, Node::Slot(_))) {
            if let Ok(v) = code.eval(&[]) {
                return Ok(Code::constant(v));
            }
        }
        Ok(code)
    }

    fn constant(v: i64) -> Code {
        Code {
            nodes: Box::new([Node::Const(v)]),
            tables: Box::default(),
        }
    }

    /// Whether evaluating the expression may read run-time slot `s`.
    pub fn reads(&self, s: u16) -> bool {
        self.nodes.contains(&Node::Slot(s))
    }

    /// The value when the expression does not depend on run-time variables.
    pub fn as_const(&self) -> Option<i64> {
        match &*self.nodes {
            [Node::Const(v)] => Some(*v),
            _ => None,
        }
    }
}

/// Emits `ast`'s code and returns whether it reads no run-time slot. A sub-expression of
/// constants becomes one constant (unless evaluating it fails: that error is left for run
/// time, where the expression may not even be reached).
fn emit(
    ast: &Ast,
    resolve: &mut impl FnMut(&str) -> Option<Binding>,
    code: &mut Builder,
) -> Result<bool, CompileError> {
    let start = code.nodes.len();
    let constant = match ast {
        Ast::Int(v) => {
            code.nodes.push(Node::Const(*v));
            true
        }
        Ast::Name(n) => match resolve(n) {
            Some(Binding::Const(v)) => {
                code.nodes.push(Node::Const(v));
                true
            }
            Some(Binding::Slot(s)) => {
                code.nodes.push(Node::Slot(s));
                false
            }
            Some(Binding::Table(_)) => return Err(CompileError::TableWithoutIndex(n.clone())),
            None => return Err(CompileError::UnknownName(n.clone())),
        },
        Ast::Index(n, i) => {
            let table = match resolve(n) {
                Some(Binding::Table(t)) => t,
                Some(_) => return Err(CompileError::NotATable(n.clone())),
                None => return Err(CompileError::UnknownName(n.clone())),
            };
            let c = emit(i, resolve, code)?;
            let at = match code.tables.iter().position(|t| Arc::ptr_eq(t, &table)) {
                Some(at) => at,
                None => {
                    code.tables.push(table);
                    code.tables.len() - 1
                }
            };
            code.nodes.push(Node::Index(at as u16));
            c
        }
        Ast::Unary(op, a) => {
            let c = emit(a, resolve, code)?;
            code.nodes.push(Node::Un(*op));
            c
        }
        Ast::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
            // a; jump on the deciding value; b as 0/1; skip the short-circuit constant.
            let ca = emit(a, resolve, code)?;
            let decide = code.nodes.len();
            code.nodes.push(Node::Jump(0));
            let cb = emit(b, resolve, code)?;
            let out = &mut code.nodes;
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
            let ca = emit(a, resolve, code)?;
            let cb = emit(b, resolve, code)?;
            code.nodes.push(Node::Bin(*op));
            ca && cb
        }
        Ast::Cond(c, a, b) => {
            let cc = emit(c, resolve, code)?;
            let to_else = code.nodes.len();
            code.nodes.push(Node::Jump(0));
            let ca = emit(a, resolve, code)?;
            let to_end = code.nodes.len();
            code.nodes.push(Node::Jump(0));
            code.nodes[to_else] = Node::JumpIfZero(code.nodes.len() as u32);
            let cb = emit(b, resolve, code)?;
            code.nodes[to_end] = Node::Jump(code.nodes.len() as u32);
            cc && ca && cb
        }
    };
    if constant && code.nodes.len() - start > 1 {
        // Jump targets are absolute: evaluate the sub-code relocated to index 0.
        let nodes: Vec<Node> = code.nodes[start..]
            .iter()
            .map(|n| match *n {
                Node::JumpIfZero(t) => Node::JumpIfZero(t - start as u32),
                Node::JumpIfNonZero(t) => Node::JumpIfNonZero(t - start as u32),
                Node::Jump(t) => Node::Jump(t - start as u32),
                other => other,
            })
            .collect();
        let sub = Code {
            nodes: nodes.into(),
            tables: code.tables.clone().into(),
        };
        if let Ok(v) = sub.eval(&[]) {
            code.nodes.truncate(start);
            code.nodes.push(Node::Const(v));
        }
    }
    Ok(constant)
}
