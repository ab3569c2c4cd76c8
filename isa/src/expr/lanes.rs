//! Evaluating a per-lane [`Code`] for all lanes of a warp at once. Sub-expressions that do not
//! read the lane slot are computed once, not once per lane, and each operator is dispatched once
//! for the warp: an address such as `(row + lane / 4) * n + col + lane % 4 * 8` costs a handful of
//! lane loops instead of 32 walks of the whole code.

use super::code::{Code, Node};
use super::eval::{apply, MAX_DEPTH};
use super::{BinOp, UnOp};

const LANES: usize = crate::program::WARP_SIZE as usize;

/// Per-lane values held at once: addresses need two or three; a deeper mix is evaluated lane
/// by lane.
const VARYING: usize = 4;

/// A stack value: the same for every lane, or one per lane in a row of the varying values.
#[derive(Clone, Copy)]
enum Val {
    Uniform(i64),
    Varying(u8),
}

struct Rows {
    rows: [[i64; LANES]; VARYING],
    /// Bit `r` set: row `r` is free.
    free: u8,
}

impl Rows {
    fn take(&mut self) -> Option<u8> {
        let r = self.free.trailing_zeros();
        (r < VARYING as u32).then(|| {
            self.free &= !(1 << r);
            r as u8
        })
    }
}

/// `out[l] = a(l) op b(l)` for every lane; `None` when some lane's result is an error. Sums,
/// differences and products, the bulk of address arithmetic, run as one loop without an exit
/// per lane.
fn lanes(
    op: BinOp,
    out: &mut [i64; LANES],
    a: impl Fn(usize) -> i64,
    b: impl Fn(usize) -> i64,
) -> Option<()> {
    let wrapping = |f: fn(i64, i64) -> (i64, bool), out: &mut [i64; LANES]| {
        let mut overflow = false;
        for (l, v) in out.iter_mut().enumerate() {
            let (r, o) = f(a(l), b(l));
            *v = r;
            overflow |= o;
        }
        (!overflow).then_some(())
    };
    match op {
        BinOp::Add => wrapping(i64::overflowing_add, out),
        BinOp::Sub => wrapping(i64::overflowing_sub, out),
        BinOp::Mul => wrapping(i64::overflowing_mul, out),
        _ => {
            for (l, v) in out.iter_mut().enumerate() {
                *v = apply(op, a(l), b(l)).ok()?;
            }
            Some(())
        }
    }
}

impl Code {
    /// The value for each lane `0..LANES` with slot `lane` holding the lane's index, as
    /// [`Code::eval`] would give with `env[lane]` set to it. `None` when some lane's evaluation
    /// fails, when a branch depends on the lane, or when the expression holds more per-lane
    /// values at once than this evaluator keeps: the caller then evaluates lane by lane, which
    /// also finds the first failing lane.
    pub fn eval_lanes(&self, env: &[i64], lane: u16) -> Option<[i64; LANES]> {
        let mut rows = Rows {
            rows: [[0; LANES]; VARYING],
            free: (1 << VARYING) - 1,
        };
        let mut stack = [Val::Uniform(0); MAX_DEPTH];
        let mut n = 0usize;
        let mut pc = 0;
        while let Some(node) = self.nodes.get(pc) {
            pc += 1;
            match *node {
                Node::Const(v) => {
                    *stack.get_mut(n)? = Val::Uniform(v);
                    n += 1;
                }
                Node::Slot(s) if s == lane => {
                    let r = rows.take()?;
                    for (l, v) in rows.rows[r as usize].iter_mut().enumerate() {
                        *v = l as i64;
                    }
                    *stack.get_mut(n)? = Val::Varying(r);
                    n += 1;
                }
                Node::Slot(s) => {
                    *stack.get_mut(n)? = Val::Uniform(env[s as usize]);
                    n += 1;
                }
                Node::Un(op) => {
                    let top = stack.get_mut(n.checked_sub(1)?)?;
                    let f = |a: i64| match op {
                        UnOp::Neg => a.checked_neg(),
                        UnOp::Not => Some((a == 0) as i64),
                        UnOp::BitNot => Some(!a),
                    };
                    match *top {
                        Val::Uniform(a) => *top = Val::Uniform(f(a)?),
                        Val::Varying(r) => {
                            for v in &mut rows.rows[r as usize] {
                                *v = f(*v)?;
                            }
                        }
                    }
                }
                Node::Bin(op) => {
                    n = n.checked_sub(2)?;
                    stack[n] = match (stack[n], stack[n + 1]) {
                        (Val::Uniform(a), Val::Uniform(b)) => Val::Uniform(apply(op, a, b).ok()?),
                        (Val::Varying(r), Val::Uniform(b)) => {
                            let a = rows.rows[r as usize];
                            lanes(op, &mut rows.rows[r as usize], |l| a[l], |_| b)?;
                            Val::Varying(r)
                        }
                        (Val::Uniform(a), Val::Varying(r)) => {
                            let b = rows.rows[r as usize];
                            lanes(op, &mut rows.rows[r as usize], |_| a, |l| b[l])?;
                            Val::Varying(r)
                        }
                        (Val::Varying(r), Val::Varying(q)) => {
                            let (a, b) = (rows.rows[r as usize], rows.rows[q as usize]);
                            lanes(op, &mut rows.rows[r as usize], |l| a[l], |l| b[l])?;
                            rows.free |= 1 << q;
                            Val::Varying(r)
                        }
                    };
                    n += 1;
                }
                Node::JumpIfZero(t) | Node::JumpIfNonZero(t) => {
                    n = n.checked_sub(1)?;
                    // A branch the lanes may take differently: lane by lane.
                    let Val::Uniform(c) = stack[n] else {
                        return None;
                    };
                    if (c == 0) == matches!(node, Node::JumpIfZero(_)) {
                        pc = t as usize;
                    }
                }
                Node::Jump(t) => pc = t as usize,
                Node::Index(t) => {
                    let top = stack.get_mut(n.checked_sub(1)?)?;
                    match *top {
                        Val::Uniform(i) => *top = Val::Uniform(self.entry(t, i).ok()?),
                        Val::Varying(r) => {
                            for v in &mut rows.rows[r as usize] {
                                *v = self.entry(t, *v).ok()?;
                            }
                        }
                    }
                }
                Node::Truth => {
                    let top = stack.get_mut(n.checked_sub(1)?)?;
                    match *top {
                        Val::Uniform(a) => *top = Val::Uniform((a != 0) as i64),
                        Val::Varying(r) => {
                            for v in &mut rows.rows[r as usize] {
                                *v = (*v != 0) as i64;
                            }
                        }
                    }
                }
            }
        }
        match stack[..n].last()? {
            Val::Uniform(v) => Some([*v; LANES]),
            Val::Varying(r) => Some(rows.rows[*r as usize]),
        }
    }
}
