//! Static validation and compilation of a scenario into a [`program::Kernel`].
//!
//! One walk over the scenario does everything, in document order, so the first error reported
//! is the first one in the file:
//! - [`names`] resolves parameters, built-ins, loop variables, tensors, buffers, mbarriers,
//!   counters and accumulators, and suggests the closest name when one is unknown;
//! - [`resources`] declares tensors, buffers, mbarriers and counters and lays out shared memory;
//! - [`shapes`] checks operand shapes (dimensions, coordinates, TMA boxes, wgmma, widths);
//! - [`limits`] checks the GPU preset's and the simulator's limits;
//! - [`codegen`] lowers each role's program to flat [`program::Op`] code.
//!
//! Every error names the instruction's path and, when it belongs to an expression or a
//! reference, the file:line:column of that node.

mod codegen;
mod limits;
mod names;
mod resources;
mod shapes;
mod tables;
#[cfg(test)]
mod tests;

pub use limits::{Limits, MAX_GRID, MAX_LIVE, MAX_OPS, MAX_RANK, MAX_TRIPS};
pub use tables::{zipf_counts, MAX_TABLE_LEN, MAX_ZIPF_WORK};

use crate::diag::Diagnostic;
use crate::expr::Table;
use crate::program::{self, Op};
use crate::scenario::{Kernel, ParamValue, Scenario};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The most launches a kernel's `launches` may ask for.
pub const MAX_LAUNCHES: i64 = 1024;

/// Validates `scenario` with parameters overridden by `overrides` and compiles its `kernel`
/// (the first launch, when it has `launches`). `file` and `source` are used to point errors at
/// line and column.
pub fn compile(
    scenario: &Scenario,
    overrides: &[(String, i64)],
    limits: &Limits,
    file: &str,
    source: &str,
) -> Result<program::Kernel, Diagnostic> {
    let p = Prepared::new(scenario, overrides, limits, file, source)?;
    let first = p.launches(scenario, &scenario.kernel, "kernel", Some(1))?;
    first.into_iter().next().ok_or_else(|| {
        Diagnostic::new(file, "the launch count is 0: the kernel is never launched")
            .in_path("kernel.launches")
    })
}

/// Compiles `kernel` and every kernel of `then`, each once per launch, in launch order. A
/// tensor that several kernels declare is one array in memory: its declarations must agree.
pub fn compile_sequence(
    scenario: &Scenario,
    overrides: &[(String, i64)],
    limits: &Limits,
    file: &str,
    source: &str,
) -> Result<Vec<program::Kernel>, Diagnostic> {
    let p = Prepared::new(scenario, overrides, limits, file, source)?;
    let mut kernels: Vec<program::Kernel> = Vec::new();
    let all = std::iter::once(("kernel".to_string(), &scenario.kernel)).chain(
        scenario
            .then
            .iter()
            .enumerate()
            .map(|(i, k)| (format!("then[{i}]"), k)),
    );
    for (at, k) in all {
        for compiled in p.launches(scenario, k, &at, None)? {
            if let Some(e) = kernels
                .iter()
                .find_map(|earlier| disagreeing_tensor(earlier, &compiled))
            {
                return Err(Diagnostic::new(file, e).in_path(at));
            }
            kernels.push(compiled);
        }
    }
    if kernels.is_empty() {
        // Only kernels with `launches` can be left out: point at the first one's count.
        let count = scenario.kernel.launches.as_ref().map(|l| l.count.id);
        return Err(p.compiler("kernel").err(
            count,
            "kernel.launches",
            "the scenario launches no kernel: every kernel's `launches` count is 0".into(),
        ));
    }
    Ok(kernels)
}

/// What every kernel of a scenario compiles against: the parameters with their overrides, and
/// the tables, once the `requires` hold.
struct Prepared<'a> {
    file: &'a str,
    source: &'a str,
    limits: &'a Limits,
    params: BTreeMap<String, i64>,
    tables: BTreeMap<String, Arc<Table>>,
}

impl<'a> Prepared<'a> {
    fn new(
        scenario: &Scenario,
        overrides: &[(String, i64)],
        limits: &'a Limits,
        file: &'a str,
        source: &'a str,
    ) -> Result<Self, Diagnostic> {
        let params = names::params(scenario, overrides, file, source, limits.sm_count)?;
        let mut p = Prepared {
            file,
            source,
            limits,
            params,
            tables: BTreeMap::new(),
        };
        let mut c = p.compiler("kernel");
        c.tables(scenario)?;
        c.requirements(scenario)?;
        p.tables = c.tables;
        Ok(p)
    }

    fn compiler(&self, at: &str) -> Compiler<'a> {
        Compiler::new(
            self.file,
            self.source,
            self.params.clone(),
            self.tables.clone(),
            self.limits,
            at,
        )
    }

    /// The launches of `k` (at `at`), the first `most` of them when given: one, or one per
    /// value of its `launches` parameter, which joins the parameters and names the launch
    /// (`moe e=3`).
    fn launches(
        &self,
        s: &Scenario,
        k: &Kernel,
        at: &str,
        most: Option<i64>,
    ) -> Result<Vec<program::Kernel>, Diagnostic> {
        let name = match (&k.name, at) {
            (Some(n), _) => n.clone(),
            (None, "kernel") => s.name.clone(),
            (None, at) => at.to_string(),
        };
        // The scenario's `analytic` predicts the first launch of `kernel` only.
        let Some(l) = &k.launches else {
            return Ok(vec![self.compiler(at).kernel(
                s,
                k,
                name,
                at == "kernel",
            )?]);
        };
        let path = format!("{at}.launches");
        let mut c = self.compiler(at);
        let n = c.in_range(&l.count, &path, "launch count", 0, MAX_LAUNCHES)?;
        c.bind(&l.var, &path)?;
        (0..most.map_or(n, |m| m.min(n)))
            .map(|i| {
                let mut c = self.compiler(at);
                c.params.insert(l.var.clone(), i);
                let name = format!("{name} {}={i}", l.var);
                c.kernel(s, k, name, at == "kernel" && i == 0)
            })
            .collect()
    }
}

/// A tensor `later` declares with another type or size than `earlier` does.
fn disagreeing_tensor(earlier: &program::Kernel, later: &program::Kernel) -> Option<String> {
    later.tensors.iter().find_map(|t| {
        let e = earlier.tensors.iter().find(|e| e.name == t.name)?;
        (e.dtype != t.dtype || e.shape != t.shape).then(|| {
            format!(
                "tensor `{}` is declared as {:?} {:?} by kernel `{}` and as {:?} {:?} by `{}`: \
                 kernels of a sequence share a tensor by its name",
                t.name, e.dtype, e.shape, earlier.kernel_name, t.dtype, t.shape, later.kernel_name
            )
        })
    })
}

/// The compiler's state: what is declared so far, and the role being compiled.
struct Compiler<'a> {
    file: &'a str,
    source: &'a str,
    params: BTreeMap<String, i64>,
    tables: BTreeMap<String, Arc<Table>>,
    limits: &'a Limits,
    /// Loop variables in scope, innermost last.
    scope: Vec<(String, u16)>,
    /// The slots of `scope` that a `Let` bound, the only ones `Assign` may change, with the
    /// lane-dependent `If`s around each `Let`.
    lets: Vec<(u16, u32)>,
    next_slot: u16,
    max_slot: u16,
    code: Vec<Op>,
    paths: Vec<String>,
    /// Per enclosing loop, the lane-dependent `If`s open around it and the `Break` jumps to
    /// point at its exit.
    breaks: Vec<(u32, Vec<u32>)>,
    /// Lane-dependent `If`s open around the instruction being compiled.
    lane_ifs: u32,
    accs: Vec<String>,
    /// The role being compiled: each accumulator label's widest wgmma N.
    role_accs: BTreeMap<u16, u32>,
    counters: Vec<resources::CounterDecl>,
    tensors: Vec<program::TensorInfo>,
    buffers: Vec<program::BufferInfo>,
    mbarriers: Vec<program::MBarrierInfo>,
    /// Where the kernel being compiled sits in the document (`kernel`, `then[0]`), for errors.
    at: String,
}

impl<'a> Compiler<'a> {
    fn new(
        file: &'a str,
        source: &'a str,
        params: BTreeMap<String, i64>,
        tables: BTreeMap<String, Arc<Table>>,
        limits: &'a Limits,
        at: &str,
    ) -> Self {
        Compiler {
            file,
            source,
            params,
            tables,
            limits,
            scope: Vec::new(),
            lets: Vec::new(),
            next_slot: program::slot::FIRST_LOOP_SLOT,
            max_slot: program::slot::FIRST_LOOP_SLOT,
            code: Vec::new(),
            paths: Vec::new(),
            breaks: Vec::new(),
            lane_ifs: 0,
            accs: Vec::new(),
            role_accs: BTreeMap::new(),
            counters: Vec::new(),
            tensors: Vec::new(),
            buffers: Vec::new(),
            mbarriers: Vec::new(),
            at: at.to_string(),
        }
    }

    /// An error at `path`, pointing at the spanned node `node_id` when it has a position.
    fn err(&self, node_id: Option<u32>, path: &str, message: String) -> Diagnostic {
        let d = Diagnostic::new(self.file, message).in_path(path);
        match node_id.and_then(|id| crate::locate(self.source, id)) {
            Some((line, col)) => d.at(self.source, line, col),
            None => d,
        }
    }

    /// The scenario's `requires`, in order: the first that does not hold is the error.
    fn requirements(&self, s: &Scenario) -> Result<(), Diagnostic> {
        for (i, r) in s.requires.iter().enumerate() {
            let path = format!("requires[{i}]");
            if self.constant(&r.cond, &path, "requirement")? == 0 {
                return Err(self.err(
                    Some(r.cond.id),
                    &path,
                    format!("{} (`{}` does not hold)", r.message, r.cond.text),
                ));
            }
        }
        Ok(())
    }

    /// The pass driver: launch configuration, declarations, roles, then CTA-wide limits.
    fn kernel(
        &mut self,
        s: &Scenario,
        k: &Kernel,
        kernel_name: String,
        first: bool,
    ) -> Result<program::Kernel, Diagnostic> {
        let grid_path = format!("{}.grid", self.at);
        let grid = self.in_range(&k.grid, &grid_path, "grid (CTAs)", 1, MAX_GRID)? as u32;
        let cluster = self.cluster(k, grid)?;
        let launch_regs = self.launch_regs(&k.regs_per_thread)?;
        let layout = self.declare(k)?;

        if k.roles.is_empty() {
            return Err(Diagnostic::new(self.file, "the kernel has no roles")
                .in_path(format!("{}.roles", self.at)));
        }
        let mut roles = Vec::new();
        for (i, r) in k.roles.iter().enumerate() {
            let path = format!("{}.roles[{i}] `{}`", self.at, r.name);
            if k.roles[..i].iter().any(|o| o.name == r.name) {
                return Err(Diagnostic::new(
                    self.file,
                    format!("two roles are named `{}`", r.name),
                )
                .in_path(path));
            }
            roles.push(self.role(r, launch_regs, &path)?);
        }
        self.cta_limits(&roles, launch_regs, &k.regs_per_thread)?;

        // A later kernel of a sequence has only its own prediction.
        let (analytic, at) = match (&k.analytic, first) {
            (Some(a), _) => (Some(a), format!("{}.analytic.cycles", self.at)),
            (None, true) => (s.analytic.as_ref(), "analytic.cycles".to_string()),
            (None, false) => (None, String::new()),
        };
        let analytic = match analytic {
            None => None,
            Some(a) => Some(program::AnalyticInfo {
                cycles: self.constant(&a.cycles, &at, "analytic cycles")?,
                bound: a.bound.clone(),
                note: a.note.clone(),
            }),
        };

        Ok(program::Kernel {
            name: s.name.clone(),
            kernel_name,
            gpu: s.gpu.clone(),
            params: self.params.clone(),
            derived: s
                .params
                .iter()
                .filter(|(_, v)| matches!(v, ParamValue::Derived(_)))
                .map(|(k, _)| k.clone())
                .collect(),
            tables: self
                .tables
                .iter()
                .map(|(n, t)| (n.clone(), t.values.clone()))
                .collect(),
            grid,
            cluster,
            regs_per_thread: launch_regs,
            tensors: std::mem::take(&mut self.tensors),
            buffers: std::mem::take(&mut self.buffers),
            mbarriers: std::mem::take(&mut self.mbarriers),
            mbarrier_count: layout.mbarrier_count,
            smem_bytes: layout.smem_bytes,
            counters: resources::flat_counters(&self.counters),
            accs: std::mem::take(&mut self.accs),
            roles,
            analytic,
        })
    }
}
