//! Compiling an [`Ast`] to postfix [`Code`]: names resolved to constants or run-time slots,
//! constant sub-expressions folded, `&&`, `||` and `?:` turned into jumps.

use super::eval::MAX_DEPTH;
use super::{Ast, BinOp, UnOp};

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
}

/// An expression compiled to postfix code with parameters folded; evaluation touches no strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code {
    pub(super) nodes: Vec<Node>,
}

impl Code {
    /// Compiles `ast`; `resolve` maps a name to its binding or `None` when unknown.
    /// Returns the first unknown name as the error.
    pub fn compile(
        ast: &Ast,
        resolve: &mut impl FnMut(&str) -> Option<Binding>,
    ) -> Result<Code, CompileError> {
        let mut nodes = Vec::new();
        emit(ast, resolve, &mut nodes)?;
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

    fn constant(v: i64) -> Code {
        Code {
            nodes: vec![Node::Const(v)],
        }
    }

    /// Whether evaluating the expression may read run-time slot `s`.
    pub fn reads(&self, s: u16) -> bool {
        self.nodes.contains(&Node::Slot(s))
    }

    /// The value when the expression does not depend on run-time variables.
    pub fn as_const(&self) -> Option<i64> {
        match self.nodes.as_slice() {
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
    out: &mut Vec<Node>,
) -> Result<bool, CompileError> {
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
            None => return Err(CompileError::UnknownName(n.clone())),
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
