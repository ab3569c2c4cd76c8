//! Limits: what the GPU preset has (features, registers, shared memory, threads, named
//! barriers) and what the simulator keeps (grid size, program length, trip counts).

use super::names::Names;
use super::Compiler;
use crate::diag::Diagnostic;
use crate::expr::{Binding, Code};
use crate::program::{Registers, RoleInfo, WARP_SIZE};
use crate::scenario::{Expr, Instr, Role};
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
    /// Registers per thread the compiler needs besides live values and accumulators.
    pub baseline_regs: u32,
    /// The most CTAs a cluster may hold (1: no clusters), and the most without the
    /// non-portable opt-in (`cudaFuncAttributeNonPortableClusterSizeAllowed`).
    pub max_cluster: u32,
    pub portable_cluster: u32,
}

/// The most CTAs a kernel may launch: the simulator keeps every launched CTA's and warp's record.
pub const MAX_GRID: i64 = 1 << 18;
/// The most ops one role's program may compile to.
pub const MAX_OPS: usize = 1 << 20;
/// The largest loop trip count.
pub const MAX_TRIPS: i64 = 1 << 32;
/// The most dimensions of a tensor or a buffer slot (TMA's rank limit).
pub const MAX_RANK: usize = 5;

/// The largest mbarrier arrival count (PTX: 2^20 - 1).
pub(super) const MAX_ARRIVALS: i64 = (1 << 20) - 1;

/// The most live values a thread may keep: its 512 KiB of local memory (CUDA's limit per
/// thread) in 4-byte values.
pub const MAX_LIVE: i64 = 512 * 1024 / 4;

impl Compiler<'_> {
    /// The kernel's CTAs per cluster: within the preset's limit, and a divisor of the grid (a
    /// cluster launch rejects a grid that is not a whole number of clusters).
    pub(super) fn cluster(
        &self,
        k: &crate::scenario::Kernel,
        grid: u32,
    ) -> Result<u32, Diagnostic> {
        let path = format!("{}.cluster", self.at);
        let v = self.constant(&k.cluster, &path, "cluster size")?;
        let lim = self.limits;
        let message = if v < 1 {
            format!(
                "cluster size is {v} (`{}`); expected at least 1",
                k.cluster.text
            )
        } else if v > 1 && lim.max_cluster <= 1 {
            format!(
                "{} has no thread-block clusters (cluster size {v})",
                lim.gpu
            )
        } else if v > lim.max_cluster as i64 {
            format!(
                "a cluster of {v} CTAs does not fit: {} places at most {} CTAs in a cluster ({} \
                 portably, more with the non-portable opt-in)",
                lim.gpu, lim.max_cluster, lim.portable_cluster
            )
        } else if grid as i64 % v != 0 {
            format!("the grid of {grid} CTAs is not a whole number of clusters of {v}")
        } else {
            return Ok(v as u32);
        };
        Err(self.err(Some(k.cluster.id), &path, message))
    }

    /// An error unless the GPU has the feature `what`.
    pub(super) fn require(&self, ok: bool, path: &str, what: &str) -> Result<(), Diagnostic> {
        if ok {
            Ok(())
        } else {
            Err(
                Diagnostic::new(self.file, format!("{} has no {what}", self.limits.gpu))
                    .in_path(path),
            )
        }
    }

    /// The kernel's registers per thread at launch.
    pub(super) fn launch_regs(&self, e: &Expr) -> Result<u32, Diagnostic> {
        let max = self.limits.max_regs_per_thread as i64;
        let regs = self.in_range(
            e,
            &format!("{}.regs_per_thread", self.at),
            "registers per thread at launch",
            1,
            max,
        )?;
        Ok(regs as u32)
    }

    /// The CTA's shared memory (buffers and mbarriers) fits the preset's per-CTA limit; returns
    /// it.
    pub(super) fn smem_limit(&self, smem_bytes: u128) -> Result<u64, Diagnostic> {
        let lim = self.limits;
        if smem_bytes > lim.smem_per_cta as u128 {
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
            .in_path(format!("{}.smem", self.at)));
        }
        // At most smem_per_cta, a u64.
        Ok(smem_bytes as u64)
    }

    /// A role's registers per thread: within the preset's limit, and either the launch count or
    /// one its program reaches with `SetMaxNReg`.
    pub(super) fn role_regs(&self, r: &Role, launch: u32, path: &str) -> Result<u32, Diagnostic> {
        let lim = self.limits;
        let regs = self.constant(&r.regs, path, "registers per thread")?;
        let max = lim.setmaxnreg_max.max(lim.max_regs_per_thread) as i64;
        if regs < 1 || regs > max {
            return Err(self.err(
                Some(r.regs.id),
                path,
                format!(
                    "role `{}` asks for {regs} registers per thread; {} allows at most {} ({} with setmaxnreg)",
                    r.name, lim.gpu, lim.max_regs_per_thread, lim.setmaxnreg_max
                ),
            ));
        }
        if regs != launch as i64 && !sets_regs_to(&r.program, regs, &self.params) {
            return Err(self.err(
                Some(r.regs.id),
                path,
                format!(
                    "role `{}` runs with {regs} registers per thread but the kernel launches with {launch}; its program must reach {regs} with SetMaxNReg",
                    r.name
                ),
            ));
        }
        Ok(regs as u32)
    }

    /// A role's live values per thread (its header), if it states them: 0..=[`MAX_LIVE`].
    pub(super) fn role_live(&self, r: &Role, path: &str) -> Result<Option<u32>, Diagnostic> {
        r.live
            .as_ref()
            .map(|e| Ok(self.in_range(e, path, "live values per thread", 0, MAX_LIVE)? as u32))
            .transpose()
    }

    /// A role's register estimate against its budget, once its program has named its
    /// accumulators (`accs`: each label's widest wgmma, m64 blocks x N). Live values may spill to local
    /// memory; wgmma accumulators and the baseline must fit the budget.
    pub(super) fn role_registers(
        &self,
        r: &Role,
        live: u32,
        regs: u32,
        accs: &BTreeMap<u16, u32>,
        path: &str,
    ) -> Result<Registers, Diagnostic> {
        let lim = self.limits;
        let est = Registers {
            live,
            // m64nN fp32 accumulators over a warpgroup's 128 threads: N/2 registers per m64 block.
            accumulators: accs.values().map(|n| n / 2).sum(),
            baseline: lim.baseline_regs,
            budget: regs.min(lim.max_regs_per_thread),
        };
        if est.accumulators + est.baseline > est.budget {
            return Err(self.err(
                Some(r.regs.id),
                path,
                format!(
                    "role `{}` has {} registers per thread, fewer than its wgmma accumulators ({}) and the baseline ({}) need: accumulators cannot be spilled to local memory",
                    r.name, est.budget, est.accumulators, est.baseline
                ),
            ));
        }
        Ok(est)
    }

    /// A `SetMaxNReg` count: 24..=the preset's maximum, a multiple of 8.
    pub(super) fn setmaxnreg(&self, regs: &Expr, path: &str) -> Result<u32, Diagnostic> {
        self.require(self.limits.has_setmaxnreg, path, "setmaxnreg (sm_90a)")?;
        let max = self.limits.setmaxnreg_max as i64;
        let v = self.in_range(regs, path, "setmaxnreg count", 24, max)?;
        if v % 8 != 0 {
            return Err(self.err(
                Some(regs.id),
                path,
                format!("setmaxnreg count {v} is not a multiple of 8 (expected 24..={max})"),
            ));
        }
        Ok(v as u32)
    }

    /// A named barrier's id (checked when constant) and thread count (a multiple of the warp
    /// size, at most the CTA's thread limit).
    pub(super) fn named_barrier(
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

    /// A loop's trip count, when constant, is at most [`MAX_TRIPS`].
    pub(super) fn trips(&self, count: &Code, e: &Expr, path: &str) -> Result<(), Diagnostic> {
        if let Some(n) = count.as_const().filter(|&n| n > MAX_TRIPS) {
            return Err(self.err(
                Some(e.id),
                path,
                format!("loop trip count {n} exceeds the limit {MAX_TRIPS}"),
            ));
        }
        Ok(())
    }

    /// The role's compiled program has at most [`MAX_OPS`] ops.
    pub(super) fn ops_limit(&self, role: &str, path: &str) -> Result<(), Diagnostic> {
        if self.code.len() > MAX_OPS {
            return Err(Diagnostic::new(
                self.file,
                format!(
                    "the program of role `{role}` compiles to {} ops; the limit is {MAX_OPS}",
                    self.code.len()
                ),
            )
            .in_path(path));
        }
        Ok(())
    }

    /// The CTA's threads, and its registers at launch and under the roles' budgets, fit the SM.
    pub(super) fn cta_limits(
        &self,
        roles: &[RoleInfo],
        launch_regs: u32,
        launch_expr: &Expr,
    ) -> Result<(), Diagnostic> {
        let lim = self.limits;
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
            .in_path(format!("{}.roles", self.at)));
        }
        let alloc = |regs: u32, warps: u32| {
            (regs * WARP_SIZE).div_ceil(lim.reg_alloc_unit) * lim.reg_alloc_unit * warps
        };
        let at_launch = alloc(launch_regs, warps);
        if at_launch > lim.regs_per_sm {
            return Err(self.err(
                Some(launch_expr.id),
                &format!("{}.regs_per_thread", self.at),
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
            .in_path(format!("{}.roles", self.at)));
        }
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
