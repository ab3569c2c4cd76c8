//! Evaluating [`Code`] on a warp's variables: checked 64-bit arithmetic on a fixed-size stack.

use super::code::{Code, Node};
use super::{BinOp, UnOp};

/// Why an expression cannot be evaluated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("division by zero")]
    DivByZero,
    #[error("integer overflow")]
    Overflow,
    #[error("shift by {0} is outside 0..64")]
    BadShift(i64),
    /// Only while folding constants: [`Code::compile`] rejects a deeper expression as a whole.
    #[error("more than {MAX_DEPTH} pending operands")]
    TooDeep,
    #[error("index {index} of table `{table}` is out of range: it has {len} entries")]
    Index {
        table: String,
        index: i64,
        len: usize,
    },
}

/// The deepest evaluation stack an expression may need; [`Code::compile`] rejects deeper ones,
/// so evaluation never allocates.
pub const MAX_DEPTH: usize = 32;

/// A fixed-size evaluation stack of `N` values.
struct Stack<const N: usize> {
    v: [i64; N],
    n: usize,
}

impl<const N: usize> Stack<N> {
    fn push(&mut self, x: i64) -> Result<(), EvalError> {
        *self.v.get_mut(self.n).ok_or(EvalError::TooDeep)? = x;
        self.n += 1;
        Ok(())
    }
    fn pop(&mut self) -> Option<i64> {
        self.n = self.n.checked_sub(1)?;
        Some(self.v[self.n])
    }
}

/// Codes of at most this many nodes run on a stack of this depth (no code pushes more values
/// than it has nodes): most expressions are that short, and a small stack is cheap to set up.
const SHORT: usize = 8;

impl Code {
    /// The value with run-time variables read from `env`, indexed by slot.
    pub fn eval(&self, env: &[i64]) -> Result<i64, EvalError> {
        // One operator on two operands (`j % stages`): no stack.
        let operand = |n: &Node| match *n {
            Node::Const(v) => Some(v),
            Node::Slot(s) => Some(env[s as usize]),
            _ => None,
        };
        if let [a, b, Node::Bin(op)] = &*self.nodes {
            if let (Some(a), Some(b)) = (operand(a), operand(b)) {
                return apply(*op, a, b);
            }
        }
        match &*self.nodes {
            [Node::Const(v)] => Ok(*v),
            nodes if nodes.len() <= SHORT => self.run::<SHORT>(env),
            _ => self.run::<MAX_DEPTH>(env),
        }
    }

    fn run<const N: usize>(&self, env: &[i64]) -> Result<i64, EvalError> {
        let mut stack = Stack::<N> { v: [0; N], n: 0 };
        let mut pc = 0;
        while let Some(node) = self.nodes.get(pc) {
            pc += 1;
            match *node {
                Node::Const(v) => stack.push(v)?,
                Node::Slot(s) => stack.push(env[s as usize])?,
                Node::Un(op) => {
                    let a = stack.pop().unwrap_or_default();
                    stack.push(match op {
                        UnOp::Neg => a.checked_neg().ok_or(EvalError::Overflow)?,
                        UnOp::Not => (a == 0) as i64,
                        UnOp::BitNot => !a,
                    })?;
                }
                Node::Bin(op) => {
                    let b = stack.pop().unwrap_or_default();
                    let a = stack.pop().unwrap_or_default();
                    stack.push(apply(op, a, b)?)?;
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
                    stack.push((a != 0) as i64)?;
                }
                Node::Index(t) => {
                    let i = stack.pop().unwrap_or_default();
                    stack.push(self.entry(t, i)?)?;
                }
            }
        }
        Ok(stack.pop().unwrap_or_default())
    }
}

impl Code {
    /// Entry `i` of the code's table `t`.
    pub(super) fn entry(&self, t: u16, i: i64) -> Result<i64, EvalError> {
        let table = &self.tables[t as usize];
        usize::try_from(i)
            .ok()
            .and_then(|i| table.values.get(i).copied())
            .ok_or_else(|| EvalError::Index {
                table: table.name.clone(),
                index: i,
                len: table.values.len(),
            })
    }
}

#[inline]
pub(super) fn apply(op: BinOp, a: i64, b: i64) -> Result<i64, EvalError> {
    use BinOp::*;
    let checked = |v: Option<i64>| v.ok_or(EvalError::Overflow);
    Ok(match op {
        Mul => checked(a.checked_mul(b))?,
        Div | Rem | CeilDiv if b == 0 => return Err(EvalError::DivByZero),
        Div => checked(a.checked_div(b))?,
        // The remainder always fits: only the quotient of `i64::MIN / -1` overflows, while
        // `i64::MIN % -1` is 0, not an overflow.
        Rem => a.wrapping_rem(b),
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
