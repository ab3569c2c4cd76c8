//! Static validation and compilation of a scenario into a [`program::Kernel`].
//!
//! One pass resolves every name (parameters, built-ins, loop variables, tensors, buffers,
//! mbarriers), checks shapes and resource limits against the GPU preset, and emits flat code.
//! Every error names the instruction's path and, when it belongs to an expression or a
//! reference, the file:line:column of that node.

use crate::diag::Diagnostic;
use crate::expr::{Ast, Binding, Code, CompileError};
use crate::program::{self, slot, BarRef, Inst, Op, Pipe, SlotRef, WARP_SIZE};
use crate::scenario::{AOperand, ComputePipe, Expr, Instr, Ref, RegAction, Scenario};
use std::collections::BTreeMap;

/// The preset's limits that static validation checks against.
#[derive(Clone, Debug)]
pub struct Limits {
    pub gpu: String,
    /// SMs of the GPU: the predefined constant `num_sms` in expressions.
    pub sm_count: u32,
    pub max_regs_per_thread: u32,
    pub has_setmaxnreg: bool,
    /// setmaxnreg's range: 24..=this, multiples of 8.
    pub setmaxnreg_max: u32,
    pub regs_per_sm: u32,
    /// Registers are allocated per warp in units of this many.
    pub reg_alloc_unit: u32,
    pub smem_per_cta: u64,
    pub max_threads_per_cta: u32,
    pub named_barriers: u32,
    pub has_tma: bool,
    pub has_wgmma: bool,
}

/// The accumulator label of a wgmma that names none.
const DEFAULT_ACC: &str = "acc";

/// Predefined constant: the GPU's SM count (for persistent grids).
const NUM_SMS: &str = "num_sms";

/// The most CTAs a kernel may launch: the simulator keeps every launched CTA's and warp's record.
pub const MAX_GRID: i64 = 1 << 18;
/// The most ops one role's program may compile to.
pub const MAX_OPS: usize = 1 << 20;
/// The largest loop trip count.
pub const MAX_TRIPS: i64 = 1 << 32;

/// The largest mbarrier arrival count (PTX: 2^20 - 1).
const MAX_ARRIVALS: i64 = (1 << 20) - 1;
/// wgmma N: a multiple of 8 in 8..=256 (PTX wgmma.mma_async, 16-bit types).
const WGMMA_N_MAX: i64 = 256;

/// Validates `scenario` with parameters overridden by `overrides` and compiles it.
/// `file` and `source` are used to point errors at line and column.
pub fn compile(
    scenario: &Scenario,
    overrides: &[(String, i64)],
    limits: &Limits,
    file: &str,
    source: &str,
) -> Result<program::Kernel, Diagnostic> {
    let mut params: BTreeMap<String, i64> = scenario
        .params
        .iter()
        .map(|(k, v)| (k.clone(), v.0))
        .collect();
    for (key, value) in overrides {
        match params.get_mut(key) {
            Some(v) => *v = *value,
            None => {
                let known: Vec<&str> = params.keys().map(String::as_str).collect();
                return Err(Diagnostic::new(
                    file,
                    format!(
                        "--set {key}: the scenario has no parameter `{key}`{} (parameters: {})",
                        suggest(key, known.iter().copied()),
                        list_or_none(&known)
                    ),
                ));
            }
        }
    }
    for name in params.keys() {
        if name == NUM_SMS {
            return Err(Diagnostic::new(
                file,
                format!("parameter `{name}` shadows the predefined constant `{NUM_SMS}` (the GPU's SM count); rename it"),
            )
            .in_path("params"));
        }
        if let Some((b, _)) = slot::BUILTINS.iter().find(|(b, _)| b == name) {
            return Err(Diagnostic::new(
                file,
                format!("parameter `{name}` shadows the built-in variable `{b}`; rename it"),
            )
            .in_path("params"));
        }
    }
    let mut c = Compiler {
        file,
        source,
        params,
        limits,
        scope: Vec::new(),
        next_slot: slot::FIRST_LOOP_SLOT,
        max_slot: slot::FIRST_LOOP_SLOT,
        code: Vec::new(),
        paths: Vec::new(),
        breaks: Vec::new(),
        accs: Vec::new(),
        counters: Vec::new(),
        tensors: Vec::new(),
        buffers: Vec::new(),
        mbarriers: Vec::new(),
    };
    c.kernel(scenario)
}

struct Compiler<'a> {
    file: &'a str,
    source: &'a str,
    params: BTreeMap<String, i64>,
    limits: &'a Limits,
    /// Loop variables in scope, innermost last.
    scope: Vec<(String, u16)>,
    next_slot: u16,
    max_slot: u16,
    code: Vec<Op>,
    paths: Vec<String>,
    /// Per enclosing loop, the `Break` jumps to point at its exit.
    breaks: Vec<Vec<u32>>,
    accs: Vec<String>,
    counters: Vec<(String, i64)>,
    tensors: Vec<program::TensorInfo>,
    buffers: Vec<program::BufferInfo>,
    mbarriers: Vec<program::MBarrierInfo>,
}

/// Which names an expression may use.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Names {
    /// Parameters only (resource declarations, evaluated once).
    Params,
    /// Parameters, built-ins except `lane`, and loop variables.
    Program,
    /// As `Program`, plus `lane` (per-lane address expressions).
    Lanes,
}

impl<'a> Compiler<'a> {
    fn err(&self, node_id: Option<u32>, path: &str, message: String) -> Diagnostic {
        let d = Diagnostic::new(self.file, message).in_path(path);
        match node_id.and_then(|id| crate::locate(self.source, id)) {
            Some((line, col)) => d.at(self.source, line, col),
            None => d,
        }
    }

    fn code(&self, e: &Expr, names: Names, path: &str) -> Result<Code, Diagnostic> {
        let mut resolve = |n: &str| -> Option<Binding> {
            if let Some(&v) = self.params.get(n) {
                return Some(Binding::Const(v));
            }
            if n == NUM_SMS {
                return Some(Binding::Const(self.limits.sm_count as i64));
            }
            if names == Names::Params {
                return None;
            }
            if let Some((_, s)) = self.scope.iter().rev().find(|(v, _)| v == n) {
                return Some(Binding::Slot(*s));
            }
            slot::BUILTINS
                .iter()
                .find(|(b, s)| *b == n && (names == Names::Lanes || *s != slot::LANE))
                .map(|(_, s)| Binding::Slot(*s))
        };
        Code::compile(&e.ast, &mut resolve).map_err(|err| {
            let unknown = match err {
                CompileError::UnknownName(n) => n,
                CompileError::TooDeep => {
                    return self.err(Some(e.id), path, format!("{err}: `{}`", e.text))
                }
            };
            let mut known: Vec<&str> = self.params.keys().map(String::as_str).collect();
            known.push(NUM_SMS);
            if names != Names::Params {
                known.extend(self.scope.iter().map(|(v, _)| v.as_str()));
                known.extend(
                    slot::BUILTINS
                        .iter()
                        .filter(|(_, s)| names == Names::Lanes || *s != slot::LANE)
                        .map(|(b, _)| *b),
                );
            }
            let hint = if unknown == "lane" {
                " (`lane` is only defined in per-lane address expressions)".to_string()
            } else {
                suggest(&unknown, known.iter().copied())
            };
            self.err(
                Some(e.id),
                path,
                format!(
                    "unknown name `{unknown}` in expression `{}`{hint}; names defined here: {}",
                    e.text,
                    list_or_none(&known)
                ),
            )
        })
    }

    /// An expression that must be a constant once parameters are folded.
    fn constant(&self, e: &Expr, path: &str, what: &str) -> Result<i64, Diagnostic> {
        let code = self.code(e, Names::Params, path).map_err(|d| {
            if self.scope.is_empty() {
                d
            } else {
                self.err(
                    Some(e.id),
                    path,
                    format!("{what} must be a constant (parameters only): `{}`", e.text),
                )
            }
        })?;
        code.as_const().ok_or_else(|| {
            self.err(
                Some(e.id),
                path,
                format!(
                    "{what} `{}` cannot be evaluated (division by zero or overflow)",
                    e.text
                ),
            )
        })
    }

    fn in_range(
        &self,
        e: &Expr,
        path: &str,
        what: &str,
        lo: i64,
        hi: i64,
    ) -> Result<i64, Diagnostic> {
        let v = self.constant(e, path, what)?;
        if v < lo || v > hi {
            return Err(self.err(
                Some(e.id),
                path,
                format!("{what} is {v} (`{}`); expected {lo}..={hi}", e.text),
            ));
        }
        Ok(v)
    }

    fn kernel(&mut self, s: &Scenario) -> Result<program::Kernel, Diagnostic> {
        let k = &s.kernel;
        let lim = self.limits;
        let grid = self.in_range(&k.grid, "kernel.grid", "grid (CTAs)", 1, MAX_GRID)? as u32;
        let launch_regs = self.in_range(
            &k.regs_per_thread,
            "kernel.regs_per_thread",
            "registers per thread at launch",
            1,
            lim.max_regs_per_thread as i64,
        )? as u32;

        for (i, t) in k.tensors.iter().enumerate() {
            let path = format!("kernel.tensors[{i}] `{}`", t.name);
            self.unique_name(&t.name, &path)?;
            let shape = self.shape(&t.shape, &path)?;
            let bytes = shape.iter().product::<u64>() * t.dtype.bytes();
            self.tensors.push(program::TensorInfo {
                name: t.name.clone(),
                dtype: t.dtype,
                shape,
                bytes,
            });
        }

        let mut smem: u64 = 0;
        for (i, b) in k.smem.iter().enumerate() {
            let path = format!("kernel.smem[{i}] `{}`", b.name);
            self.unique_name(&b.name, &path)?;
            let slots = self.in_range(&b.slots, &path, "slots", 1, 1 << 16)? as u32;
            let shape = self.shape(&b.shape, &path)?;
            let slot_bytes = shape.iter().product::<u64>() * b.dtype.bytes();
            let base = smem.div_ceil(128) * 128;
            smem = base + slot_bytes * slots as u64;
            self.buffers.push(program::BufferInfo {
                name: b.name.clone(),
                slots,
                dtype: b.dtype,
                shape,
                slot_bytes,
                base,
            });
        }
        let mut first = 0u32;
        for (i, m) in k.mbarriers.iter().enumerate() {
            let path = format!("kernel.mbarriers[{i}] `{}`", m.name);
            self.unique_name(&m.name, &path)?;
            let count = self.in_range(&m.count, &path, "count", 1, 1 << 16)? as u32;
            let arrivals = self.in_range(&m.arrivals, &path, "arrivals", 1, MAX_ARRIVALS)? as u32;
            self.mbarriers.push(program::MBarrierInfo {
                name: m.name.clone(),
                count,
                arrivals,
                first,
            });
            first += count;
        }
        let smem_bytes = smem.div_ceil(8) * 8 + 8 * first as u64;
        for (i, c) in k.counters.iter().enumerate() {
            let path = format!("kernel.counters[{i}] `{}`", c.name);
            self.unique_name(&c.name, &path)?;
            let init = self.constant(&c.init, &path, "initial value")?;
            self.counters.push((c.name.clone(), init));
        }
        if smem_bytes > lim.smem_per_cta {
            return Err(Diagnostic::new(
                self.file,
                format!(
                    "the CTA needs {smem_bytes} bytes of shared memory ({}); {} allows at most {} per CTA",
                    self.buffers
                        .iter()
                        .map(|b| format!("{} {}x{} B", b.name, b.slots, b.slot_bytes))
                        .collect::<Vec<_>>()
                        .join(", "),
                    lim.gpu,
                    lim.smem_per_cta
                ),
            )
            .in_path("kernel.smem"));
        }

        if k.roles.is_empty() {
            return Err(
                Diagnostic::new(self.file, "the kernel has no roles").in_path("kernel.roles")
            );
        }
        let mut roles = Vec::new();
        for (i, r) in k.roles.iter().enumerate() {
            let path = format!("kernel.roles[{i}] `{}`", r.name);
            if k.roles[..i].iter().any(|o| o.name == r.name) {
                return Err(Diagnostic::new(
                    self.file,
                    format!("two roles are named `{}`", r.name),
                )
                .in_path(path));
            }
            let warpgroups = self.in_range(&r.warpgroups, &path, "warpgroups", 1, 16)? as u32;
            let regs = self.constant(&r.regs, &path, "registers per thread")?;
            let max = lim.setmaxnreg_max.max(lim.max_regs_per_thread) as i64;
            if regs < 1 || regs > max {
                return Err(self.err(
                    Some(r.regs.id),
                    &path,
                    format!(
                        "role `{}` asks for {regs} registers per thread; {} allows at most {} ({} with setmaxnreg)",
                        r.name, lim.gpu, lim.max_regs_per_thread, lim.setmaxnreg_max
                    ),
                ));
            }
            let regs = regs as u32;
            if regs != launch_regs && !sets_regs_to(&r.program, regs as i64, &self.params) {
                return Err(self.err(
                    Some(r.regs.id),
                    &path,
                    format!(
                        "role `{}` runs with {regs} registers per thread but the kernel launches with {launch_regs}; its program must reach {regs} with SetMaxNReg",
                        r.name
                    ),
                ));
            }
            self.scope.clear();
            self.next_slot = slot::FIRST_LOOP_SLOT;
            self.max_slot = slot::FIRST_LOOP_SLOT;
            self.code.clear();
            self.paths.clear();
            self.block(&r.program, &format!("role `{}`: program", r.name))?;
            if self.code.len() > MAX_OPS {
                return Err(Diagnostic::new(
                    self.file,
                    format!(
                        "the program of role `{}` compiles to {} ops; the limit is {MAX_OPS}",
                        r.name,
                        self.code.len()
                    ),
                )
                .in_path(path));
            }
            roles.push(program::RoleInfo {
                name: r.name.clone(),
                warpgroups,
                regs,
                code: std::mem::take(&mut self.code),
                paths: std::mem::take(&mut self.paths),
                slots: self.max_slot,
            });
        }

        let warps: u32 = roles.iter().map(|r| r.warps()).sum();
        let threads = warps * WARP_SIZE;
        if threads > lim.max_threads_per_cta {
            return Err(Diagnostic::new(
                self.file,
                format!(
                    "the CTA has {threads} threads ({warps} warps); {} allows at most {} per CTA",
                    lim.gpu, lim.max_threads_per_cta
                ),
            )
            .in_path("kernel.roles"));
        }
        let alloc = |regs: u32, warps: u32| {
            (regs * WARP_SIZE).div_ceil(lim.reg_alloc_unit) * lim.reg_alloc_unit * warps
        };
        let at_launch = alloc(launch_regs, warps);
        if at_launch > lim.regs_per_sm {
            return Err(self.err(
                Some(k.regs_per_thread.id),
                "kernel.regs_per_thread",
                format!(
                    "{threads} threads x {launch_regs} registers need {at_launch} registers; {} has {} per SM",
                    lim.gpu, lim.regs_per_sm
                ),
            ));
        }
        let budget: u32 = roles.iter().map(|r| alloc(r.regs, r.warps())).sum();
        if budget > lim.regs_per_sm {
            return Err(Diagnostic::new(
                self.file,
                format!(
                    "the roles' register budgets need {budget} registers ({}); {} has {} per SM",
                    roles
                        .iter()
                        .map(|r| format!("{} {}x{}", r.name, r.warps() * WARP_SIZE, r.regs))
                        .collect::<Vec<_>>()
                        .join(" + "),
                    lim.gpu,
                    lim.regs_per_sm
                ),
            )
            .in_path("kernel.roles"));
        }

        let analytic = match &s.analytic {
            None => None,
            Some(a) => Some(program::AnalyticInfo {
                cycles: self.constant(&a.cycles, "analytic.cycles", "analytic cycles")?,
                bound: a.bound.clone(),
                note: a.note.clone(),
            }),
        };

        Ok(program::Kernel {
            name: s.name.clone(),
            gpu: s.gpu.clone(),
            params: self.params.clone(),
            grid,
            regs_per_thread: launch_regs,
            tensors: std::mem::take(&mut self.tensors),
            buffers: std::mem::take(&mut self.buffers),
            mbarriers: std::mem::take(&mut self.mbarriers),
            mbarrier_count: first,
            smem_bytes,
            counters: std::mem::take(&mut self.counters),
            accs: std::mem::take(&mut self.accs),
            roles,
            analytic,
        })
    }

    fn unique_name(&self, name: &str, path: &str) -> Result<(), Diagnostic> {
        let taken = self.tensors.iter().any(|t| t.name == name)
            || self.buffers.iter().any(|b| b.name == name)
            || self.mbarriers.iter().any(|m| m.name == name)
            || self.counters.iter().any(|(c, _)| c == name);
        if taken {
            return Err(Diagnostic::new(
                self.file,
                format!("the name `{name}` is declared twice (tensors, buffers, mbarriers and counters share one namespace)"),
            )
            .in_path(path));
        }
        Ok(())
    }

    fn shape(&self, dims: &[Expr], path: &str) -> Result<Vec<u64>, Diagnostic> {
        if dims.is_empty() || dims.len() > 5 {
            return Err(Diagnostic::new(
                self.file,
                format!("a shape has 1 to 5 dimensions, this one has {}", dims.len()),
            )
            .in_path(path));
        }
        dims.iter()
            .map(|d| {
                self.in_range(d, path, "dimension", 1, 1 << 40)
                    .map(|v| v as u64)
            })
            .collect()
    }

    fn emit(&mut self, op: Op, path: String) -> u32 {
        self.code.push(op);
        self.paths.push(path);
        (self.code.len() - 1) as u32
    }

    /// Compiles a block; variables bound in it (`Let`, `AtomicAdd`) go out of scope at its end.
    fn block(&mut self, body: &[Instr], path: &str) -> Result<(), Diagnostic> {
        let (scope, next) = (self.scope.len(), self.next_slot);
        for (i, ins) in body.iter().enumerate() {
            self.instr(ins, &format!("{path}[{i}] {}", ins.mnemonic()))?;
        }
        self.scope.truncate(scope);
        self.next_slot = next;
        Ok(())
    }

    fn bar(&self, r: &Ref, path: &str) -> Result<BarRef, Diagnostic> {
        match self.mbarriers.iter().position(|m| m.name == r.parsed.name) {
            Some(i) => {
                let index = self.index(r, self.mbarriers[i].count, path)?;
                Ok(BarRef {
                    array: i as u16,
                    index,
                })
            }
            None => Err(self.unknown_ref(
                r,
                path,
                "mbarrier",
                self.mbarriers.iter().map(|m| m.name.as_str()),
            )),
        }
    }

    fn slot(&self, r: &Ref, path: &str) -> Result<SlotRef, Diagnostic> {
        match self.buffers.iter().position(|b| b.name == r.parsed.name) {
            Some(i) => {
                let slot = self.index(r, self.buffers[i].slots, path)?;
                Ok(SlotRef {
                    buf: i as u16,
                    slot,
                })
            }
            None => Err(self.unknown_ref(
                r,
                path,
                "shared-memory buffer",
                self.buffers.iter().map(|b| b.name.as_str()),
            )),
        }
    }

    fn index(&self, r: &Ref, len: u32, path: &str) -> Result<Code, Diagnostic> {
        let e = Expr {
            text: r.text.clone(),
            ast: r.parsed.index.clone(),
            id: r.id,
        };
        let code = self.code(&e, Names::Program, path)?;
        if let Some(v) = code.as_const() {
            if v < 0 || v >= len as i64 {
                return Err(self.err(
                    Some(r.id),
                    path,
                    format!(
                        "index {v} of `{}` is out of range: it has {len} elements",
                        r.parsed.name
                    ),
                ));
            }
        }
        Ok(code)
    }

    fn unknown_ref<'n>(
        &self,
        r: &Ref,
        path: &str,
        kind: &str,
        known: impl Iterator<Item = &'n str> + Clone,
    ) -> Diagnostic {
        let names: Vec<&str> = known.clone().collect();
        self.err(
            Some(r.id),
            path,
            format!(
                "no {kind} named `{}`{}; declared: {}",
                r.parsed.name,
                suggest(&r.parsed.name, known),
                list_or_none(&names)
            ),
        )
    }

    fn tensor(&self, name: &str, path: &str) -> Result<u16, Diagnostic> {
        self.tensors
            .iter()
            .position(|t| t.name == name)
            .map(|i| i as u16)
            .ok_or_else(|| {
                let names: Vec<&str> = self.tensors.iter().map(|t| t.name.as_str()).collect();
                Diagnostic::new(
                    self.file,
                    format!(
                        "no tensor named `{name}`{}; declared: {}",
                        suggest(name, names.iter().copied()),
                        list_or_none(&names)
                    ),
                )
                .in_path(path)
            })
    }

    fn require(&self, ok: bool, path: &str, what: &str) -> Result<(), Diagnostic> {
        if ok {
            Ok(())
        } else {
            Err(
                Diagnostic::new(self.file, format!("{} has no {what}", self.limits.gpu))
                    .in_path(path),
            )
        }
    }

    fn width(&self, e: &Expr, path: &str) -> Result<u32, Diagnostic> {
        let w = self.constant(e, path, "access width")?;
        if ![1, 2, 4, 8, 16].contains(&w) {
            return Err(self.err(
                Some(e.id),
                path,
                format!("access width is {w} bytes per lane; expected 1, 2, 4, 8 or 16"),
            ));
        }
        Ok(w as u32)
    }

    fn named_barrier(
        &self,
        id: &Expr,
        threads: &Expr,
        path: &str,
    ) -> Result<(Code, u32), Diagnostic> {
        let code = self.code(id, Names::Program, path)?;
        let n = self.limits.named_barriers as i64;
        if let Some(v) = code.as_const() {
            if v < 0 || v >= n {
                return Err(self.err(
                    Some(id.id),
                    path,
                    format!("named barrier id {v} is out of range: expected 0..{n}"),
                ));
            }
        }
        let t = self.in_range(
            threads,
            path,
            "thread count",
            32,
            self.limits.max_threads_per_cta as i64,
        )?;
        if t % 32 != 0 {
            return Err(self.err(
                Some(threads.id),
                path,
                format!("named-barrier thread count {t} is not a multiple of 32 (the warp size)"),
            ));
        }
        Ok((code, t as u32))
    }

    fn coords(&self, tensor: u16, coords: &[Expr], path: &str) -> Result<Vec<Code>, Diagnostic> {
        let rank = self.tensors[tensor as usize].shape.len();
        if coords.len() != rank {
            return Err(Diagnostic::new(
                self.file,
                format!(
                    "tensor `{}` has {rank} dimensions but {} coordinates are given",
                    self.tensors[tensor as usize].name,
                    coords.len()
                ),
            )
            .in_path(path));
        }
        coords
            .iter()
            .map(|c| self.code(c, Names::Program, path))
            .collect()
    }

    fn tma_box(&self, tensor: u16, slot: &SlotRef, path: &str) -> Result<u64, Diagnostic> {
        let t = &self.tensors[tensor as usize];
        let b = &self.buffers[slot.buf as usize];
        if t.shape.len() != b.shape.len() {
            return Err(Diagnostic::new(
                self.file,
                format!(
                    "the TMA box is buffer `{}`'s slot shape ({} dimensions) but tensor `{}` has {}",
                    b.name,
                    b.shape.len(),
                    t.name,
                    t.shape.len()
                ),
            )
            .in_path(path));
        }
        if let Some(d) = b.shape.iter().find(|&&d| d > 256) {
            return Err(Diagnostic::new(
                self.file,
                format!(
                    "TMA box dimension {d} of buffer `{}` exceeds 256 elements",
                    b.name
                ),
            )
            .in_path(path));
        }
        if t.dtype != b.dtype {
            return Err(Diagnostic::new(
                self.file,
                format!(
                    "tensor `{}` is {:?} but buffer `{}` is {:?}",
                    t.name, t.dtype, b.name, b.dtype
                ),
            )
            .in_path(path));
        }
        Ok(b.slot_bytes)
    }

    fn instr(&mut self, ins: &Instr, path: &str) -> Result<(), Diagnostic> {
        let inst = match ins {
            Instr::Loop { var, count, body } => return self.loop_(var, count, body, path),
            Instr::If {
                cond,
                then,
                otherwise,
            } => {
                let cond = self.code(cond, Names::Program, path)?;
                let branch = self.emit(Op::BranchIfZero { cond, target: 0 }, path.to_string());
                self.block(then, &format!("{path}.then"))?;
                let jump = (!otherwise.is_empty())
                    .then(|| self.emit(Op::Jump { target: 0 }, path.to_string()));
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
                return Ok(());
            }
            Instr::TmaLoad {
                tensor,
                coords,
                dst,
                bar,
            } => {
                self.require(self.limits.has_tma, path, "TMA unit (use cp.async)")?;
                let tensor = self.tensor(tensor, path)?;
                let coords = self.coords(tensor, coords, path)?;
                let dst = self.slot(dst, path)?;
                let bytes = self.tma_box(tensor, &dst, path)?;
                let bar = self.bar(bar, path)?;
                Inst::TmaLoad {
                    tensor,
                    coords,
                    dst,
                    bar,
                    bytes,
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
                self.emit(Op::Set { slot, value }, path.to_string());
                return Ok(());
            }
            Instr::Break => {
                if self.breaks.is_empty() {
                    return Err(Diagnostic::new(self.file, "`Break` outside a loop").in_path(path));
                }
                let at = self.emit(Op::Jump { target: 0 }, path.to_string());
                if let Some(list) = self.breaks.last_mut() {
                    list.push(at);
                }
                return Ok(());
            }
            Instr::AtomicAdd { counter, add, into } => {
                let Some(c) = self.counters.iter().position(|(n, _)| n == counter) else {
                    let names: Vec<&str> = self.counters.iter().map(|(n, _)| n.as_str()).collect();
                    return Err(Diagnostic::new(
                        self.file,
                        format!(
                            "no counter named `{counter}`{}; declared: {}",
                            suggest(counter, names.iter().copied()),
                            list_or_none(&names)
                        ),
                    )
                    .in_path(path));
                };
                let add = self.code(add, Names::Program, path)?;
                let slot = self.bind(into, path)?;
                Inst::AtomicAdd {
                    counter: c as u16,
                    add,
                    slot,
                }
            }
            Instr::CpAsync {
                tensor,
                src,
                dst,
                addr,
                width,
            } => {
                let w = self.width(width, path)?;
                if ![4, 8, 16].contains(&w) {
                    return Err(self.err(
                        Some(width.id),
                        path,
                        format!("cp.async copies 4, 8 or 16 bytes per lane, not {w}"),
                    ));
                }
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
            Instr::Arrive { bar, elect } => Inst::Arrive {
                bar: self.bar(bar, path)?,
                count: if *elect { 1 } else { WARP_SIZE },
            },
            Instr::ArriveExpectTx { bar, bytes } => Inst::ArriveExpectTx {
                bar: self.bar(bar, path)?,
                bytes: self.code(bytes, Names::Program, path)?,
            },
            Instr::ExpectTx { bar, bytes } => Inst::ExpectTx {
                bar: self.bar(bar, path)?,
                bytes: self.code(bytes, Names::Program, path)?,
            },
            Instr::Wait { bar, parity } => Inst::Wait {
                bar: self.bar(bar, path)?,
                parity: self.code(parity, Names::Program, path)?,
            },
            Instr::Wgmma {
                n,
                ksteps,
                a,
                b,
                acc,
            } => {
                self.require(self.limits.has_wgmma, path, "wgmma (use mma)")?;
                let nv = self.constant(n, path, "wgmma N")?;
                if nv % 8 != 0 || !(8..=WGMMA_N_MAX).contains(&nv) {
                    return Err(self.err(
                        Some(n.id),
                        path,
                        format!("wgmma N is {nv}; expected a multiple of 8 in 8..={WGMMA_N_MAX} (m64nNk16)"),
                    ));
                }
                let ks = self.in_range(ksteps, path, "wgmma k-steps", 1, 64)? as u32;
                let a = match a {
                    AOperand::Regs => None,
                    AOperand::Smem(r) => Some(self.operand(r, path, 64 * 16 * ks as u64, "A")?),
                };
                let b = self.operand(b, path, nv as u64 * 16 * ks as u64, "B")?;
                Inst::Wgmma {
                    n: nv as u32,
                    ksteps: ks,
                    a,
                    b,
                    acc: self.acc(acc.as_deref().unwrap_or(DEFAULT_ACC)),
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
            Instr::SetMaxNReg { action, regs } => {
                self.require(self.limits.has_setmaxnreg, path, "setmaxnreg (sm_90a)")?;
                let max = self.limits.setmaxnreg_max as i64;
                let v = self.in_range(regs, path, "setmaxnreg count", 24, max)?;
                if v % 8 != 0 {
                    return Err(self.err(
                        Some(regs.id),
                        path,
                        format!(
                            "setmaxnreg count {v} is not a multiple of 8 (expected 24..={max})"
                        ),
                    ));
                }
                Inst::SetMaxNReg {
                    inc: *action == RegAction::Inc,
                    regs: v as u32,
                }
            }
            Instr::Alu(n) => self.compute(Pipe::Alu, n, path)?,
            Instr::Fma(n) => self.compute(Pipe::Fma, n, path)?,
            Instr::Mufu(n) => self.compute(Pipe::Mufu, n, path)?,
            Instr::Compute { pipe, count, acc } => {
                let pipe = match pipe {
                    ComputePipe::Alu => Pipe::Alu,
                    ComputePipe::Fma => Pipe::Fma,
                    ComputePipe::Mufu => Pipe::Mufu,
                };
                Inst::Compute {
                    pipe,
                    count: self.code(count, Names::Program, path)?,
                    acc: acc.as_deref().map(|a| self.acc(a)),
                }
            }
            Instr::LdShared { buf, addr, width } | Instr::StShared { buf, addr, width } => {
                Inst::Shared {
                    store: matches!(ins, Instr::StShared { .. }),
                    slot: self.slot(buf, path)?,
                    addr: self.code(addr, Names::Lanes, path)?,
                    width: self.width(width, path)?,
                }
            }
            Instr::LdGlobal {
                tensor,
                addr,
                width,
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
            },
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

    /// The index of accumulator label `name`, registering it on first use.
    fn acc(&mut self, name: &str) -> u16 {
        match self.accs.iter().position(|a| a == name) {
            Some(i) => i as u16,
            None => {
                self.accs.push(name.to_string());
                (self.accs.len() - 1) as u16
            }
        }
    }

    /// A wgmma operand slot; checks the slot holds `elems` elements of a 16-bit type.
    fn operand(&self, r: &Ref, path: &str, elems: u64, which: &str) -> Result<SlotRef, Diagnostic> {
        let s = self.slot(r, path)?;
        let b = &self.buffers[s.buf as usize];
        let need = elems * 2;
        if b.slot_bytes < need {
            return Err(self.err(
                Some(r.id),
                path,
                format!(
                    "wgmma operand {which} needs {need} bytes but a slot of `{}` holds {}",
                    b.name, b.slot_bytes
                ),
            ));
        }
        Ok(s)
    }

    /// Allocates a run-time slot for a new variable `var` visible in the current block.
    fn bind(&mut self, var: &str, path: &str) -> Result<u16, Diagnostic> {
        if self.params.contains_key(var)
            || var == NUM_SMS
            || slot::BUILTINS.iter().any(|(b, _)| *b == var)
            || self.scope.iter().any(|(v, _)| v == var)
        {
            return Err(Diagnostic::new(
                self.file,
                format!("variable `{var}` shadows a parameter, a built-in, `{NUM_SMS}` or a variable in scope"),
            )
            .in_path(path));
        }
        if crate::expr::parse(var) != Ok(Ast::Name(var.to_string())) {
            return Err(Diagnostic::new(
                self.file,
                format!("`{var}` is not a valid variable name"),
            )
            .in_path(path));
        }
        let s = self.new_slot();
        self.scope.push((var.to_string(), s));
        Ok(s)
    }

    fn new_slot(&mut self) -> u16 {
        let s = self.next_slot;
        self.next_slot += 1;
        self.max_slot = self.max_slot.max(self.next_slot);
        s
    }

    fn loop_(
        &mut self,
        var: &str,
        count: &Expr,
        body: &[Instr],
        path: &str,
    ) -> Result<(), Diagnostic> {
        let count_expr = count;
        let count = self.code(count, Names::Program, path)?;
        if let Some(n) = count.as_const().filter(|&n| n > MAX_TRIPS) {
            return Err(self.err(
                Some(count_expr.id),
                path,
                format!("loop trip count {n} exceeds the limit {MAX_TRIPS}"),
            ));
        }
        let (scope, next) = (self.scope.len(), self.next_slot);
        let var_slot = self.bind(var, path)?;
        let count_slot = self.new_slot();
        let start = self.emit(
            Op::LoopStart {
                var: var_slot,
                count_slot,
                count,
                exit: 0,
            },
            path.to_string(),
        );
        self.breaks.push(Vec::new());
        self.block(body, &format!("{path}({var}).body"))?;
        self.emit(
            Op::LoopEnd {
                var: var_slot,
                count_slot,
                body: start + 1,
            },
            path.to_string(),
        );
        let exit = self.code.len() as u32;
        if let Op::LoopStart { exit: e, .. } = &mut self.code[start as usize] {
            *e = exit;
        }
        for b in self.breaks.pop().unwrap_or_default() {
            if let Op::Jump { target } = &mut self.code[b as usize] {
                *target = exit;
            }
        }
        self.scope.truncate(scope);
        self.next_slot = next;
        Ok(())
    }
}

/// Whether `program` contains a `SetMaxNReg` to `regs` (parameters folded).
fn sets_regs_to(program: &[Instr], regs: i64, params: &BTreeMap<String, i64>) -> bool {
    program.iter().any(|i| match i {
        Instr::SetMaxNReg { regs: r, .. } => {
            Code::compile(&r.ast, &mut |n| params.get(n).map(|&v| Binding::Const(v)))
                .ok()
                .and_then(|c| c.as_const())
                == Some(regs)
        }
        Instr::Loop { body, .. } => sets_regs_to(body, regs, params),
        Instr::If {
            then, otherwise, ..
        } => sets_regs_to(then, regs, params) || sets_regs_to(otherwise, regs, params),
        _ => false,
    })
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names.join(", ")
    }
}

/// " (did you mean `x`?)" for the closest name within edit distance 2, else "".
fn suggest<'n>(name: &str, known: impl Iterator<Item = &'n str>) -> String {
    known
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + (ca != *cb) as usize)
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn h100() -> Limits {
        Limits {
            gpu: "h100-sxm".into(),
            sm_count: 132,
            max_regs_per_thread: 255,
            has_setmaxnreg: true,
            setmaxnreg_max: 256,
            regs_per_sm: 65536,
            reg_alloc_unit: 256,
            smem_per_cta: 232448,
            max_threads_per_cta: 1024,
            named_barriers: 16,
            has_tma: true,
            has_wgmma: true,
        }
    }

    const BASE: &str = r#"Scenario(
    name: "t",
    gpu: "h100-sxm",
    params: { "stages": 4, "n": 128 },
    kernel: Kernel(
        regs_per_thread: 168,
        tensors: [Tensor(name: "B", dtype: BF16, shape: [64, 128])],
        smem: [
            Buffer(name: "sA", slots: "stages", dtype: BF16, shape: [64, 64]),
            Buffer(name: "sB", slots: "stages", dtype: BF16, shape: [64, 128]),
        ],
        mbarriers: [MBarrier(name: "full", count: "stages", arrivals: 1)],
        roles: [
            Role(name: "consumer", regs: 168, program: [
                Loop(var: "j", count: 8, body: [
                    Wait(bar: "full[j % stages]", parity: "(j / stages) & 1"),
                    Wgmma(n: "n", ksteps: 4, a: Smem("sA[j % stages]"), b: "sB[j % stages]"),
                    WgmmaCommit,
                    WgmmaWait(0),
                ]),
            ]),
        ],
    ),
)"#;

    fn try_compile(src: &str, sets: &[(&str, i64)]) -> Result<program::Kernel, Diagnostic> {
        let s = crate::parse("t.ron", src)?;
        let sets: Vec<(String, i64)> = sets.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        compile(&s, &sets, &h100(), "t.ron", src)
    }

    #[test]
    fn compiles_loops_to_flat_code() {
        let k = try_compile(BASE, &[]).unwrap();
        let role = &k.roles[0];
        assert_eq!(role.code.len(), 6); // LoopStart, 4 instructions, LoopEnd
        assert!(matches!(role.code[0], Op::LoopStart { exit: 6, .. }));
        assert!(matches!(role.code[5], Op::LoopEnd { body: 1, .. }));
        assert_eq!(k.buffers[1].base, 4 * 64 * 64 * 2);
        assert_eq!(k.smem_bytes, 4 * (8192 + 16384) + 4 * 8);
        assert_eq!(
            role.paths[2],
            "role `consumer`: program[0] loop(j).body[1] wgmma"
        );
    }

    #[test]
    fn unknown_name_points_at_the_expression() {
        let src = BASE.replace("(j / stages) & 1", "(j / stagess) & 1");
        let e = try_compile(&src, &[]).unwrap_err();
        assert!(
            e.message.starts_with(
                "unknown name `stagess` in expression `(j / stagess) & 1` (did you mean `stages`?)"
            ),
            "{}",
            e.message
        );
        assert_eq!(e.pos.unwrap().0, 16);
        assert!(e
            .path
            .unwrap()
            .contains("program[0] loop(j).body[0] mbarrier.wait"));
    }

    #[test]
    fn wgmma_shape_is_checked() {
        let e = try_compile(BASE, &[("n", 260)]).unwrap_err();
        assert_eq!(
            e.message,
            "wgmma N is 260; expected a multiple of 8 in 8..=256 (m64nNk16)"
        );
        assert_eq!(e.pos.unwrap().0, 17);
        let e = try_compile(BASE, &[("n", 100)]).unwrap_err();
        assert!(e.message.contains("N is 100"));
        let e =
            try_compile(&BASE.replace("shape: [64, 128])", "shape: [16, 128])"), &[]).unwrap_err();
        assert_eq!(
            e.message,
            "wgmma operand B needs 16384 bytes but a slot of `sB` holds 4096"
        );
    }

    #[test]
    fn register_limits() {
        let src = BASE.replace("regs: 168", "regs: 300");
        let e = try_compile(&src, &[]).unwrap_err();
        assert_eq!(
            e.message,
            "role `consumer` asks for 300 registers per thread; h100-sxm allows at most 255 (256 with setmaxnreg)"
        );
        assert_eq!(e.pos.unwrap().0, 14);
        let src = BASE.replace("regs: 168", "regs: 232");
        let e = try_compile(&src, &[]).unwrap_err();
        assert!(
            e.message.contains("must reach 232 with SetMaxNReg"),
            "{}",
            e.message
        );
    }

    #[test]
    fn smem_limit_and_overrides() {
        let e = try_compile(BASE, &[("stages", 12)]).unwrap_err();
        assert!(
            e.message
                .starts_with("the CTA needs 295008 bytes of shared memory"),
            "{}",
            e.message
        );
        let e = try_compile(BASE, &[("stage", 2)]).unwrap_err();
        assert_eq!(
            e.message,
            "--set stage: the scenario has no parameter `stage` (did you mean `stages`?) (parameters: n, stages)"
        );
    }

    #[test]
    fn references_are_checked() {
        let e = try_compile(&BASE.replace("full[j % stages]", "ful[j]"), &[]).unwrap_err();
        assert_eq!(
            e.message,
            "no mbarrier named `ful` (did you mean `full`?); declared: full"
        );
        let e = try_compile(&BASE.replace("full[j % stages]", "full[4]"), &[]).unwrap_err();
        assert_eq!(
            e.message,
            "index 4 of `full` is out of range: it has 4 elements"
        );
        let e = try_compile(
            &BASE.replace("Smem(\"sA[j % stages]\")", "Smem(\"full\")"),
            &[],
        )
        .unwrap_err();
        assert!(e
            .message
            .starts_with("no shared-memory buffer named `full`"));
    }

    #[test]
    fn lane_only_in_addresses() {
        let e = try_compile(&BASE.replace("WgmmaWait(0)", "WgmmaWait(\"lane\")"), &[]).unwrap_err();
        assert!(e
            .message
            .contains("`lane` is only defined in per-lane address expressions"));
        let ok = BASE.replace(
            "WgmmaWait(0),",
            "WgmmaWait(0), LdShared(buf: \"sA[0]\", addr: \"lane * 4\"),",
        );
        try_compile(&ok, &[]).unwrap();
    }

    #[test]
    fn edit_distance_closed_forms() {
        assert_eq!(edit_distance("stages", "stages"), 0);
        assert_eq!(edit_distance("stagess", "stages"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
