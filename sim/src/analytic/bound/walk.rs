//! The functional walk: every warp of every CTA runs its program's control flow (loops,
//! branches, `let`s) on its own variables, with no timing; each instruction it reaches adds its
//! demand ([`super::inst`]).

use super::demand::Demand;
use super::error::{BoundError, WalkError};
use super::lines::{Lines, Seen};
use crate::engine::MAX_CONTROL_STEPS;
use crate::gpu::cta_scheduler::{l1_cache_bytes, occupancy};
use crate::gpu::preset::Preset;
use isa::divergence::{lane_values, Lanes};
use isa::expr::Code;
use isa::program::{slot, Kernel, Op, RoleInfo, WARPS_PER_WARPGROUP};

/// Which warp is walking, for its built-in variables and its error messages.
#[derive(Clone, Copy)]
struct WarpId {
    cta: u32,
    wg: u32,
    warp: u32,
    warp_in_cta: u32,
}

/// The walk's state across all CTAs: the memory layout, the lines touched and the steps left.
pub(super) struct Walk<'a> {
    pub(super) k: &'a Kernel,
    pub(super) p: &'a Preset,
    /// Tensors laid out as the engine lays them out: one after another, 4 KiB aligned.
    pub(super) tensor_base: Vec<u64>,
    /// The address ranges of tensors that start in L2 (`warm`): their reads need no fill.
    pub(super) warm: Vec<std::ops::Range<u64>>,
    /// Atomic counters live after the tensors, one line each.
    pub(super) counter_base: u64,
    pub(super) lines: Lines,
    /// The sectors loads through the L1 have read so far; `None` when the SMs have no L1 data
    /// cache for this kernel.
    pub(super) l1_read: Option<Seen>,
    /// Walk steps left.
    budget: u64,
    /// Per counter, atomics of the current CTA already charged to memory (the engine sends the
    /// k-th atomic of a CTA once; its other warps reuse the value).
    pub(super) charged: Vec<u64>,
}

impl<'a> Walk<'a> {
    pub(super) fn new(k: &'a Kernel, p: &'a Preset, budget: u64) -> Self {
        let mut tensor_base = Vec::new();
        let mut warm = Vec::new();
        let mut next = 0u64;
        for t in &k.tensors {
            tensor_base.push(next);
            if t.warm {
                warm.push(next..next.saturating_add(t.bytes));
            }
            next = next.saturating_add(t.bytes).div_ceil(4096) * 4096;
        }
        Walk {
            k,
            p,
            tensor_base,
            warm,
            counter_base: next,
            lines: Lines::default(),
            l1_read: (l1_cache_bytes(k, p, &occupancy(k, p)) > 0).then(Seen::default),
            budget,
            charged: Vec::new(),
        }
    }

    /// Takes `steps` walk steps from the budget ([`super::WALK_BUDGET`]).
    pub(super) fn spend(&mut self, steps: u64) -> Result<(), WalkError> {
        if self.budget < steps {
            return Err(WalkError::OverBudget);
        }
        self.budget -= steps;
        Ok(())
    }

    /// Adds CTA `b`'s demand to `d`.
    pub(super) fn cta(&mut self, b: u32, d: &mut Demand) -> Result<(), BoundError> {
        let parts = d.issue.len() as u32;
        self.charged = vec![0; self.k.counters.len()];
        let mut warp_in_cta = 0;
        for role in &self.k.roles {
            for wg in 0..role.warpgroups {
                // An HGMMA starts once all four warps have issued it: the warpgroup's tensor
                // work is what its least advanced warp issued.
                let (mut math, mut feed) = (u64::MAX, u64::MAX);
                for warp in 0..WARPS_PER_WARPGROUP {
                    let id = WarpId {
                        cta: b,
                        wg,
                        warp,
                        warp_in_cta,
                    };
                    let part = (warp_in_cta % parts) as usize;
                    let (m, f) = self.warp(role, id, part, d).map_err(|(pc, error)| {
                        let path = role
                            .paths
                            .get(pc)
                            .cloned()
                            .unwrap_or_else(|| format!("role `{}`: end of program", role.name));
                        BoundError::Walk {
                            cta: b,
                            role: role.name.clone(),
                            warpgroup: wg,
                            warp,
                            path,
                            error,
                        }
                    })?;
                    (math, feed) = (math.min(m), feed.min(f));
                    warp_in_cta += 1;
                }
                d.tensor += math;
                d.smem += feed;
            }
        }
        Ok(())
    }

    /// Walks one warp's program, adding its demand to `d` (issue and pipes on partition `part`);
    /// returns its HGMMA (math, operand feed) cycles. Errors carry the op index.
    fn warp(
        &mut self,
        role: &RoleInfo,
        id: WarpId,
        part: usize,
        d: &mut Demand,
    ) -> Result<(u64, u64), (usize, WalkError)> {
        let mut env = vec![0i64; (role.slots.max(slot::FIRST_LOOP_SLOT)) as usize];
        env[slot::WARP as usize] = id.warp as i64;
        env[slot::WG as usize] = id.wg as i64;
        env[slot::WARP_ID as usize] = id.warp_in_cta as i64;
        slot::set_cta(&mut env, id.cta, self.k.grid, self.k.cluster);
        let mut w = WarpWalk {
            env,
            lanes: Lanes::default(),
            atomics: vec![0; self.k.counters.len()],
            hgmma: (0, 0),
            cta: id.cta,
            spill: match role.registers {
                Some(r) if r.spilled() > 0 => (u64::from(r.spilled()), u64::from(r.live)),
                _ => (0, 0),
            },
            spill_carry: 0,
        };
        let mut pc = 0usize;
        let mut steps = 0u32;
        while let Some(op) = role.code.get(pc) {
            steps += 1;
            let err = |e: WalkError| (pc, e);
            if steps > MAX_CONTROL_STEPS {
                return Err(err(WalkError::NoInstruction));
            }
            self.spend(1).map_err(err)?;
            match op {
                Op::LoopStart {
                    var,
                    count_slot,
                    count,
                    exit,
                } => {
                    let n = w.eval(count).map_err(|e| err(e.within("loop count")))?;
                    pc = w.enter_loop(*var, *count_slot, n, pc, *exit).map_err(err)?;
                }
                Op::LoopEnd {
                    var,
                    count_slot,
                    body,
                } => {
                    pc = match w.next_trip(*var, *count_slot).map_err(err)? {
                        Some(_) => *body as usize,
                        None => pc + 1,
                    };
                }
                Op::BranchIfZero { cond, target } => {
                    let c = w.eval(cond).map_err(|e| err(e.within("condition")))?;
                    pc = if c == 0 { *target as usize } else { pc + 1 };
                }
                Op::Jump { target } => pc = *target as usize,
                // A wait or a stall count adds no demand on any unit.
                Op::WaitScoreboard { .. } | Op::Stall { .. } => pc += 1,
                Op::BranchLanes { cond, otherwise } => {
                    self.spend(32).map_err(err)?;
                    let active = w.lanes.active();
                    let values = lane_values(&mut w.env, cond, active)
                        .map_err(|e| err(WalkError::Eval(e).within("condition")))?;
                    pc = if w.lanes.branch(&values) {
                        pc + 1
                    } else {
                        *otherwise as usize
                    };
                }
                Op::ElseLanes { end } => {
                    pc = if w.lanes.otherwise() {
                        pc + 1
                    } else {
                        *end as usize
                    };
                }
                Op::LoopLanesStart {
                    var,
                    count_slot,
                    count,
                    exit,
                } => {
                    self.spend(32).map_err(err)?;
                    let active = w.lanes.active();
                    let trips = lane_values(&mut w.env, count, active)
                        .map_err(|e| err(WalkError::Eval(e).within("loop count")))?;
                    let n = w.lanes.loop_start(trips);
                    pc = w.enter_loop(*var, *count_slot, n, pc, *exit).map_err(err)?;
                }
                Op::LoopLanesEnd {
                    var,
                    count_slot,
                    body,
                } => {
                    pc = match w.next_trip(*var, *count_slot).map_err(err)? {
                        Some(v) => {
                            w.lanes.iteration(v);
                            *body as usize
                        }
                        None => pc + 1,
                    };
                }
                Op::Reconverge => {
                    w.lanes.reconverge();
                    pc += 1;
                }
                Op::Set { slot, value } => {
                    let v = w.eval(value).map_err(|e| err(e.within("let")))?;
                    w.set(*slot, v).map_err(err)?;
                    pc += 1;
                }
                Op::Issue(inst) => {
                    let issued = self.inst(inst, &mut w, part, d).map_err(err)?;
                    if issued > 0 {
                        d.issue[part] += issued;
                        steps = 0;
                    }
                    pc += 1;
                }
            }
        }
        Ok(w.hgmma)
    }
}

/// One warp's run-time state during the walk.
pub(super) struct WarpWalk {
    pub(super) env: Vec<i64>,
    /// The active lanes (`isa::divergence`).
    pub(super) lanes: Lanes,
    /// Per counter, atomics this warp has executed.
    pub(super) atomics: Vec<u64>,
    /// HGMMA pipe (math, RS floor) and operand-feed cycles this warp issued.
    pub(super) hgmma: (u64, u64),
    pub(super) cta: u32,
    /// The role's spilled and live values per thread ((0, 0): it spills none), and the warp's
    /// running share of compute that touches them (as `crate::sm::local` counts it).
    pub(super) spill: (u64, u64),
    pub(super) spill_carry: u64,
}

impl WarpWalk {
    pub(super) fn eval(&self, c: &Code) -> Result<i64, WalkError> {
        c.eval(&self.env).map_err(WalkError::Eval)
    }
    fn get(&self, s: u16) -> Result<i64, WalkError> {
        self.env
            .get(s as usize)
            .copied()
            .ok_or(WalkError::SlotOutOfRange(s))
    }
    pub(super) fn set(&mut self, s: u16, v: i64) -> Result<(), WalkError> {
        let slot = self
            .env
            .get_mut(s as usize)
            .ok_or(WalkError::SlotOutOfRange(s))?;
        *slot = v;
        Ok(())
    }
    /// Enters a loop of `n` trips at `pc`: the next pc, the body's first op or `exit`.
    fn enter_loop(
        &mut self,
        var: u16,
        count_slot: u16,
        n: i64,
        pc: usize,
        exit: u32,
    ) -> Result<usize, WalkError> {
        self.set(var, 0)?;
        self.set(count_slot, n)?;
        Ok(if n > 0 { pc + 1 } else { exit as usize })
    }
    /// Advances the loop variable at a loop's end: its new value while trips remain.
    fn next_trip(&mut self, var: u16, count_slot: u16) -> Result<Option<i64>, WalkError> {
        let v = self.get(var)?.saturating_add(1);
        self.set(var, v)?;
        Ok((v < self.get(count_slot)?).then_some(v))
    }
}
