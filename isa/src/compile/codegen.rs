//! Code generation: each role's program lowered to flat [`Op`] code. Loops become a counter
//! slot and a back jump, conditionals and `Break` forward jumps patched once the target is known;
//! an `If` or `Loop` that depends on `lane` also marks where its lanes reconverge.
//! Blocks scope the variables bound in them.

use super::names::Names;
use super::Compiler;
use crate::diag::Diagnostic;
use crate::expr::Code;
use crate::program::{slot, Inst, Op, Pipe, RegSource, RoleInfo, WARP_SIZE};
use crate::scenario::{Cache, ComputePipe, Expr, Instr, RegAction, Role, Scope};

/// The accumulator label of a wgmma that names none.
const DEFAULT_ACC: &str = "acc";

impl Compiler<'_> {
    /// Checks a role's configuration and compiles its program.
    pub(super) fn role(
        &mut self,
        r: &Role,
        launch_regs: u32,
        path: &str,
    ) -> Result<RoleInfo, Diagnostic> {
        let warpgroups = self.in_range(&r.warpgroups, path, "warpgroups", 1, 16)? as u32;
        let regs = self.role_regs(r, launch_regs, path)?;
        let live = self.role_live(r, path)?;
        self.scope.clear();
        self.next_slot = slot::FIRST_LOOP_SLOT;
        self.max_slot = slot::FIRST_LOOP_SLOT;
        self.code.clear();
        self.paths.clear();
        self.role_accs.clear();
        self.block(&r.program, &format!("role `{}`: program", r.name))?;
        self.ops_limit(&r.name, path)?;
        let registers = live
            .map(|live| self.role_registers(r, live, regs, &self.role_accs, path))
            .transpose()?;
        Ok(RoleInfo {
            name: r.name.clone(),
            warpgroups,
            regs,
            registers,
            code: std::mem::take(&mut self.code),
            paths: std::mem::take(&mut self.paths),
            slots: self.max_slot,
        })
    }

    /// An optional operand: a warp-uniform expression over the program's names.
    fn optional(&self, e: &Option<Expr>, path: &str) -> Result<Option<Code>, Diagnostic> {
        e.as_ref()
            .map(|e| self.code(e, Names::Program, path))
            .transpose()
    }

    /// Appends `op` from instruction `path` and returns its index.
    fn emit(&mut self, op: Op, path: String) -> u32 {
        self.code.push(op);
        self.paths.push(path);
        (self.code.len() - 1) as u32
    }

    /// Compiles a block; variables bound in it (`Let`, `AtomicAdd`) go out of scope at its end.
    fn block(&mut self, body: &[Instr], path: &str) -> Result<(), Diagnostic> {
        let (scope, lets, next) = (self.scope.len(), self.lets.len(), self.next_slot);
        for (i, ins) in body.iter().enumerate() {
            self.instr(ins, &format!("{path}[{i}] {}", ins.mnemonic()))?;
        }
        self.scope.truncate(scope);
        self.lets.truncate(lets);
        self.next_slot = next;
        Ok(())
    }

    /// Lowers one instruction; control flow becomes jumps, the rest one `Issue` op.
    fn instr(&mut self, ins: &Instr, path: &str) -> Result<(), Diagnostic> {
        let inst = match ins {
            Instr::Loop { var, count, body } => return self.loop_(var, count, body, path),
            Instr::If {
                cond,
                then,
                otherwise,
            } => return self.if_(cond, then, otherwise, path),
            Instr::TmaLoad {
                tensor,
                coords,
                dst,
                bar,
                multicast,
                part,
            } => {
                self.require(self.limits.has_tma, path, "TMA unit (use cp.async)")?;
                let tensor = self.tensor(tensor, path)?;
                let coords = self.coords(tensor, coords, path)?;
                let dst = self.slot(dst, path)?;
                let bytes = self.tma_box(tensor, &dst, path)?;
                let bar = self.bar(bar, path)?;
                let (part, parts) = match part {
                    Some((i, n)) => {
                        let n = self.tma_parts(&dst, n, path)?;
                        (Some(self.code(i, Names::Program, path)?), n)
                    }
                    None => (None, 1),
                };
                Inst::TmaLoad {
                    tensor,
                    coords,
                    dst,
                    bar,
                    bytes: bytes / u64::from(parts),
                    multicast: self.optional(multicast, path)?,
                    part,
                    parts,
                }
            }
            Instr::TmaStore {
                tensor,
                coords,
                src,
            } => {
                self.require(self.limits.has_tma, path, "TMA unit")?;
                let tensor = self.tensor(tensor, path)?;
                let coords = self.coords(tensor, coords, path)?;
                let src = self.slot(src, path)?;
                let bytes = self.tma_box(tensor, &src, path)?;
                Inst::TmaStore {
                    tensor,
                    coords,
                    src,
                    bytes,
                }
            }
            Instr::Let { var, value } => {
                let value = self.code(value, Names::Program, path)?;
                let slot = self.bind(var, path)?;
                self.lets.push((slot, self.lane_ifs));
                self.emit(Op::Set { slot, value }, path.to_string());
                return Ok(());
            }
            Instr::Assign { var, value } => {
                let value = self.code(value, Names::Program, path)?;
                let slot = self.assignable(var, path)?;
                self.emit(Op::Set { slot, value }, path.to_string());
                return Ok(());
            }
            Instr::Break => {
                // Jumps to the loop's exit, patched when the loop ends.
                let Some(&(lane_ifs, _)) = self.breaks.last() else {
                    return Err(Diagnostic::new(self.file, "`Break` outside a loop").in_path(path));
                };
                // Some lanes would leave the loop and others stay: the reconvergence this
                // model keeps (one per `If` and `Loop`) has no place for that.
                if lane_ifs != self.lane_ifs {
                    return Err(Diagnostic::new(
                        self.file,
                        "`Break` inside an `If` whose condition depends on `lane`: lanes cannot leave a loop separately (make the loop's count depend on `lane` instead)",
                    )
                    .in_path(path));
                }
                let at = self.emit(Op::Jump { target: 0 }, path.to_string());
                if let Some((_, list)) = self.breaks.last_mut() {
                    list.push(at);
                }
                return Ok(());
            }
            Instr::AtomicAdd { counter, add, into } => {
                let counter = self.counter(counter, path)?;
                let add = self.code(add, Names::Program, path)?;
                let slot = self.bind(into, path)?;
                Inst::AtomicAdd { counter, add, slot }
            }
            Instr::WaitCounter { counter, value } => Inst::WaitCounter {
                counter: self.counter(counter, path)?,
                value: self.code(value, Names::Program, path)?,
            },
            Instr::Fence => Inst::Fence,
            Instr::FenceProxyAsync => Inst::FenceProxyAsync,
            Instr::CpAsync {
                tensor,
                src,
                dst,
                addr,
                width,
            } => {
                let w = self.cp_async_width(width, path)?;
                Inst::CpAsync {
                    tensor: self.tensor(tensor, path)?,
                    src: self.code(src, Names::Lanes, path)?,
                    dst: self.slot(dst, path)?,
                    addr: self.code(addr, Names::Lanes, path)?,
                    width: w,
                }
            }
            Instr::CpAsyncCommit => Inst::CpAsyncCommit,
            Instr::CpAsyncWait(n) => Inst::CpAsyncWait {
                n: self.code(n, Names::Program, path)?,
            },
            Instr::Mma(n) => self.compute(Pipe::Mma, n, path)?,
            Instr::TmaStoreCommit => Inst::TmaStoreCommit,
            Instr::TmaStoreWait(n) => Inst::TmaStoreWait {
                n: self.code(n, Names::Program, path)?,
            },
            Instr::Arrive {
                bar,
                elect,
                cta,
                ranks,
                scope,
            } => {
                if cta.is_some() && ranks.is_some() {
                    return Err(Diagnostic::new(
                        self.file,
                        "mbarrier.arrive takes `cta` (one rank) or `ranks` (a mask), not both",
                    )
                    .in_path(path));
                }
                Inst::Arrive {
                    bar: self.bar(bar, path)?,
                    count: if *elect || ranks.is_some() {
                        1
                    } else {
                        WARP_SIZE
                    },
                    cta: self.optional(cta, path)?,
                    ranks: self.optional(ranks, path)?,
                    membar: *scope == Scope::Cluster,
                }
            }
            Instr::ArriveExpectTx { bar, bytes } => Inst::ArriveExpectTx {
                bar: self.bar(bar, path)?,
                bytes: self.code(bytes, Names::Program, path)?,
            },
            Instr::ExpectTx { bar, bytes } => Inst::ExpectTx {
                bar: self.bar(bar, path)?,
                bytes: self.code(bytes, Names::Program, path)?,
            },
            Instr::Wait { bar, parity, poll } => Inst::Wait {
                bar: self.bar(bar, path)?,
                parity: self.code(parity, Names::Program, path)?,
                poll: *poll,
            },
            Instr::Wgmma {
                m,
                n,
                ksteps,
                a,
                b,
                acc,
            } => {
                self.require(self.limits.has_wgmma, path, "wgmma (use mma)")?;
                let shape = self.wgmma_shape(m, n, ksteps, a, b, path)?;
                let acc = self.acc(acc.as_deref().unwrap_or(DEFAULT_ACC));
                let widest = self.role_accs.entry(acc).or_default();
                *widest = (*widest).max(shape.blocks * shape.n);
                Inst::Wgmma {
                    n: shape.n,
                    k: shape.k,
                    // The m64 blocks of each k-step are HGMMAs of their own.
                    ksteps: shape.blocks * shape.ksteps,
                    a: shape.a,
                    b: shape.b,
                    acc,
                }
            }
            Instr::WgmmaFence => Inst::WgmmaFence,
            Instr::WgmmaCommit => Inst::WgmmaCommit,
            Instr::WgmmaWait(n) => Inst::WgmmaWait {
                n: self.code(n, Names::Program, path)?,
            },
            Instr::BarSync { id, threads } => {
                let (id, threads) = self.named_barrier(id, threads, path)?;
                Inst::BarSync { id, threads }
            }
            Instr::BarArrive { id, threads } => {
                let (id, threads) = self.named_barrier(id, threads, path)?;
                Inst::BarArrive { id, threads }
            }
            Instr::SetMaxNReg { action, regs } => Inst::SetMaxNReg {
                inc: *action == RegAction::Inc,
                regs: self.setmaxnreg(regs, path)?,
            },
            Instr::Alu(n) => self.compute(Pipe::Alu, n, path)?,
            Instr::Fma(n) => self.compute(Pipe::Fma, n, path)?,
            Instr::Mufu(n) => self.compute(Pipe::Mufu, n, path)?,
            Instr::Shfl(n) => self.compute(Pipe::Shfl, n, path)?,
            Instr::Compute { pipe, count, acc } => {
                let pipe = match pipe {
                    ComputePipe::Alu => Pipe::Alu,
                    ComputePipe::Fma => Pipe::Fma,
                    ComputePipe::Mufu => Pipe::Mufu,
                    ComputePipe::Shfl => Pipe::Shfl,
                };
                Inst::Compute {
                    pipe,
                    count: self.code(count, Names::Program, path)?,
                    acc: acc.as_deref().map(|a| self.acc(a)),
                }
            }
            Instr::Mix {
                alu,
                fma,
                mufu,
                shfl,
                uniform,
                stalls,
                acc,
            } => {
                // In the order of `MIX_PIPES`.
                let [mufu, shfl, alu, fma, uniform] =
                    [mufu, shfl, alu, fma, uniform].map(|n| self.code(n, Names::Program, path));
                Inst::Mix {
                    counts: [mufu?, shfl?, alu?, fma?, uniform?],
                    stalls: self.code(stalls, Names::Program, path)?,
                    acc: acc.as_deref().map(|a| self.acc(a)),
                }
            }
            Instr::LdShared {
                buf,
                addr,
                width,
                cta,
                ..
            }
            | Instr::StShared {
                buf,
                addr,
                width,
                cta,
            } => Inst::Shared {
                store: matches!(ins, Instr::StShared { .. }),
                slot: self.slot(buf, path)?,
                addr: self.code(addr, Names::Lanes, path)?,
                width: self.width(width, path)?,
                sb: self.load_scoreboard(ins, path)?,
                cta: self.optional(cta, path)?,
            },
            Instr::ClusterArrive => Inst::ClusterArrive { membar: true },
            Instr::ClusterArriveRelaxed => Inst::ClusterArrive { membar: false },
            Instr::ClusterWait => Inst::ClusterWait,
            Instr::LdGlobal {
                tensor,
                addr,
                width,
                ..
            }
            | Instr::StGlobal {
                tensor,
                addr,
                width,
            } => Inst::Global {
                store: matches!(ins, Instr::StGlobal { .. }),
                tensor: self.tensor(tensor, path)?,
                addr: self.code(addr, Names::Lanes, path)?,
                width: self.width(width, path)?,
                sb: self.load_scoreboard(ins, path)?,
                l1: matches!(
                    ins,
                    Instr::LdGlobal {
                        cache: Cache::L1,
                        ..
                    }
                ),
            },
            Instr::WaitScoreboard(sbs) => {
                let mask = self.scoreboard_mask(sbs, path)?;
                self.emit(Op::WaitScoreboard { mask }, path.to_string());
                return Ok(());
            }
            Instr::Ldc { sb } | Instr::S2r { sb } => Inst::RegRead {
                source: if matches!(ins, Instr::Ldc { .. }) {
                    RegSource::Constant
                } else {
                    RegSource::Special
                },
                sb: self.scoreboard(*sb, path)?,
            },
            Instr::Stall(n) => {
                let cycles = self.code(n, Names::Program, path)?;
                self.emit(Op::Stall { cycles }, path.to_string());
                return Ok(());
            }
        };
        self.emit(Op::Issue(inst), path.to_string());
        Ok(())
    }

    fn compute(&self, pipe: Pipe, n: &Expr, path: &str) -> Result<Inst, Diagnostic> {
        Ok(Inst::Compute {
            pipe,
            count: self.code(n, Names::Program, path)?,
            acc: None,
        })
    }

    /// `BranchIfZero` over the then-block, and a `Jump` over the else-block when there is one;
    /// a condition that reads `lane` compiles to `BranchLanes`, the then-block, `ElseLanes`, the
    /// else-block and `Reconverge` (`crate::divergence`).
    fn if_(
        &mut self,
        cond: &Expr,
        then: &[Instr],
        otherwise: &[Instr],
        path: &str,
    ) -> Result<(), Diagnostic> {
        let cond = self.code(cond, Names::Lanes, path)?;
        if cond.reads(slot::LANE) {
            return self.lane_if(cond, then, otherwise, path);
        }
        let branch = self.emit(Op::BranchIfZero { cond, target: 0 }, path.to_string());
        self.block(then, &format!("{path}.then"))?;
        let jump =
            (!otherwise.is_empty()).then(|| self.emit(Op::Jump { target: 0 }, path.to_string()));
        let else_start = self.code.len() as u32;
        if let Op::BranchIfZero { target, .. } = &mut self.code[branch as usize] {
            *target = else_start;
        }
        if let Some(jump) = jump {
            self.block(otherwise, &format!("{path}.else"))?;
            let end = self.code.len() as u32;
            if let Op::Jump { target } = &mut self.code[jump as usize] {
                *target = end;
            }
        }
        Ok(())
    }

    fn lane_if(
        &mut self,
        cond: Code,
        then: &[Instr],
        otherwise: &[Instr],
        path: &str,
    ) -> Result<(), Diagnostic> {
        self.lane_ifs += 1;
        let branch = self.emit(Op::BranchLanes { cond, otherwise: 0 }, path.to_string());
        self.block(then, &format!("{path}.then"))?;
        let else_op = self.emit(Op::ElseLanes { end: 0 }, path.to_string());
        self.block(otherwise, &format!("{path}.else"))?;
        let end = self.emit(Op::Reconverge, path.to_string());
        self.lane_ifs -= 1;
        if let Op::BranchLanes { otherwise, .. } = &mut self.code[branch as usize] {
            *otherwise = else_op;
        }
        if let Op::ElseLanes { end: e } = &mut self.code[else_op as usize] {
            *e = end;
        }
        Ok(())
    }

    /// `LoopStart`, the body, `LoopEnd`; the count is evaluated once, into its own slot. A
    /// count that reads `lane` compiles to `LoopLanesStart`, the body, `LoopLanesEnd` and
    /// `Reconverge`, the loop's exit.
    fn loop_(
        &mut self,
        var: &str,
        count: &Expr,
        body: &[Instr],
        path: &str,
    ) -> Result<(), Diagnostic> {
        let count_expr = count;
        let count = self.code(count, Names::Lanes, path)?;
        self.trips(&count, count_expr, path)?;
        let per_lane = count.reads(slot::LANE);
        let (scope, next) = (self.scope.len(), self.next_slot);
        let var_slot = self.bind(var, path)?;
        let count_slot = self.new_slot();
        let start = if per_lane {
            Op::LoopLanesStart {
                var: var_slot,
                count_slot,
                count,
                exit: 0,
            }
        } else {
            Op::LoopStart {
                var: var_slot,
                count_slot,
                count,
                exit: 0,
            }
        };
        let start = self.emit(start, path.to_string());
        self.breaks.push((self.lane_ifs, Vec::new()));
        self.block(body, &format!("{path}({var}).body"))?;
        let (var, body) = (var_slot, start + 1);
        let end = if per_lane {
            Op::LoopLanesEnd {
                var,
                count_slot,
                body,
            }
        } else {
            Op::LoopEnd {
                var,
                count_slot,
                body,
            }
        };
        self.emit(end, path.to_string());
        let exit = if per_lane {
            self.emit(Op::Reconverge, path.to_string())
        } else {
            self.code.len() as u32
        };
        if let Op::LoopStart { exit: e, .. } | Op::LoopLanesStart { exit: e, .. } =
            &mut self.code[start as usize]
        {
            *e = exit;
        }
        for b in self.breaks.pop().map(|(_, list)| list).unwrap_or_default() {
            if let Op::Jump { target } = &mut self.code[b as usize] {
                *target = exit;
            }
        }
        self.scope.truncate(scope);
        self.next_slot = next;
        Ok(())
    }
}
