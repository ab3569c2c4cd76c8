//! Warp scheduling: each active partition evaluates its candidate warps (control flow runs for
//! free up to the next issuing instruction), picks one eligible warp by the preset's policy
//! (`sm.scheduler`: GTO or LRR) and issues it. Whether an instruction can issue and what issuing
//! it does are dispatched to the instruction's family, beside its unit in `crate::sm`.

use super::crossing::PENDING;
use super::error::Fault;
use super::hooks::Hook;
use super::state::Warp;
use super::Shard;
use super::MAX_CONTROL_STEPS;
use crate::gpu::preset::SchedulerPolicy;
use crate::observe::warp_state::State;
use crate::sm::async_groups::GroupKind;
use crate::sm::pipes::MAX_MACRO_COUNT;
use crate::sm::tensor_core::WgmmaOperands;
use crate::sm::tma::TmaOperands;
use isa::divergence::{lane_values, FULL};
use isa::program::{Inst, Op};
use isa::scenario::Poll;

/// What a warp's next instruction can do now.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Outcome {
    Ready,
    /// Cannot issue before `until` (scoreboard, busy pipe): stall in `State` until then.
    StallUntil(State, u64),
    /// Waits for another agent to release it (it registered itself as a waiter).
    Blocked(State),
    Exit,
}

/// Where the warp stands when its next instruction is checked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    /// The stall while an earlier result this instruction may read is not ready.
    pub scoreboard: Option<Outcome>,
    /// The instruction has not issued any of its warp-instructions yet.
    pub starting: bool,
}

impl Pending {
    /// Instructions that read registers wait for them before their first warp-instruction.
    fn inputs_or_ready(self) -> Outcome {
        match self.scoreboard {
            Some(stall) if self.starting => stall,
            _ => Outcome::Ready,
        }
    }
}

impl Shard<'_> {
    // The engine's innermost step, called from one place: kept inline, and so is `set_state`
    // (out of line they cost fa3_pingpong 4% more instructions under callgrind).
    #[inline(always)]
    pub(crate) fn tick(&mut self, p: usize) {
        let cand = self.parts[p].check | self.parts[p].eligible;
        self.parts[p].check = 0;
        let mut bits = cand;
        while bits != 0 {
            let s = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let Some(w) = self.parts[p].slots[s] else {
                continue;
            };
            let outcome = match self.evaluate(w) {
                Ok(o) => o,
                Err(msg) => {
                    self.fail(w, msg);
                    return;
                }
            };
            let bit = 1u32 << s;
            match outcome {
                Outcome::Ready => {
                    self.parts[p].eligible |= bit;
                    self.set_state(w, State::NotSelected);
                }
                Outcome::StallUntil(state, until) => {
                    self.parts[p].eligible &= !bit;
                    self.set_state(w, state);
                    self.wake_at(w, until);
                }
                Outcome::Blocked(state) => {
                    self.parts[p].eligible &= !bit;
                    self.set_state(w, state);
                }
                Outcome::Exit => self.retire_warp(w),
            }
        }
        let Some(s) = self.pick(p) else {
            return;
        };
        let Some(w) = self.parts[p].slots[s] else {
            return;
        };
        if self.now < self.parts[p].issue_free {
            // The dispatcher holds back the warp it would issue (see `crate::sm::pipes`).
            self.set_state(w, State::DispatchStall);
            return;
        }
        let part = &mut self.parts[p];
        part.eligible &= !(1 << s);
        part.check |= 1 << s;
        part.last = Some(s);
        part.issued += 1;
        self.set_state(w, State::Selected);
        let warp = &mut self.warps[w as usize];
        warp.issued += 1;
        let active = warp.lanes.active();
        if active != FULL {
            warp.masked_lanes += u64::from(active.count_zeros());
        }
        if let Err(msg) = self.issue(w) {
            self.fail(w, msg);
        }
    }

    /// The scheduler's choice among eligible slots (see `SchedulerPolicy`).
    fn pick(&self, p: usize) -> Option<usize> {
        let part = &self.parts[p];
        if part.eligible == 0 {
            return None;
        }
        let slots = part.slots.len();
        match self.p.sm.scheduler {
            SchedulerPolicy::Gto => {
                if let Some(last) = part.last {
                    if part.eligible & (1 << last) != 0 {
                        return Some(last);
                    }
                }
                // Oldest: warp ids grow with launch order.
                (0..slots)
                    .filter(|s| part.eligible & (1 << s) != 0)
                    .min_by_key(|&s| part.slots[s])
            }
            SchedulerPolicy::Lrr => {
                let start = part.last.map_or(0, |l| l + 1);
                (0..slots)
                    .map(|i| (start + i) % slots)
                    .find(|s| part.eligible & (1 << s) != 0)
            }
        }
    }

    #[inline(always)]
    fn set_state(&mut self, w: u32, s: State) {
        let warp = &mut self.warps[w as usize];
        if warp.acct.state() != s {
            let (old, since) = warp.acct.set(self.now, s);
            self.close_interval(w, old, since);
            let warp = &mut self.warps[w as usize];
            // A warp held at a named barrier has moved past the bar.sync that holds it.
            warp.state_pc = if warp.hold.is_some() {
                warp.hold_pc
            } else {
                warp.pc
            };
            warp.state_mask = warp.lanes.active();
        }
    }

    // ---------------------------------------------------------------- instruction dispatch

    /// Runs free control flow up to the next issuing instruction and says whether it can issue.
    fn evaluate(&mut self, w: u32) -> Result<Outcome, Fault> {
        if let Some(s) = self.warps[w as usize].hold {
            return Ok(Outcome::Blocked(s));
        }
        let warp = &self.warps[w as usize];
        if warp.sync_pending > 0 {
            return Ok(Outcome::StallUntil(warp.sync_state, PENDING));
        }
        if warp.sync_until > self.now {
            return Ok(Outcome::StallUntil(warp.sync_state, warp.sync_until));
        }
        let code = &self.k.roles[self.warps[w as usize].role as usize].code;
        let mut steps = 0u32;
        loop {
            let pc = self.warps[w as usize].pc as usize;
            let Some(op) = code.get(pc) else {
                return Ok(Outcome::Exit);
            };
            steps += 1;
            if steps > MAX_CONTROL_STEPS {
                return Err(Fault::ControlSteps {
                    steps: MAX_CONTROL_STEPS,
                });
            }
            let warp = &mut self.warps[w as usize];
            match op {
                Op::LoopStart {
                    var,
                    count_slot,
                    count,
                    exit,
                } => {
                    let n = count.eval(&warp.env).map_err(Fault::LoopCount)?;
                    warp.pc = enter_loop(warp, *var, *count_slot, n, pc as u32, *exit)?;
                }
                Op::LoopEnd {
                    var,
                    count_slot,
                    body,
                } => {
                    warp.env[*var as usize] += 1;
                    warp.pc = if warp.env[*var as usize] < warp.env[*count_slot as usize] {
                        *body
                    } else {
                        pc as u32 + 1
                    };
                }
                Op::BranchIfZero { cond, target } => {
                    let c = cond.eval(&warp.env).map_err(Fault::Condition)?;
                    warp.pc = if c == 0 { *target } else { pc as u32 + 1 };
                }
                Op::Jump { target } => warp.pc = *target,
                Op::Stall { cycles } => {
                    let n = cycles.eval(&warp.env).map_err(Fault::Eval)?;
                    if n > MAX_MACRO_COUNT {
                        return Err(Fault::StallCycles {
                            cycles: n,
                            max: MAX_MACRO_COUNT,
                        });
                    }
                    warp.pc += 1;
                    if n > 0 {
                        warp.sync_until = self.now + n as u64;
                        warp.sync_state = State::Wait;
                        return Ok(Outcome::StallUntil(State::Wait, warp.sync_until));
                    }
                }
                Op::WaitScoreboard { mask } => match warp.scoreboards(*mask) {
                    (ready, state) if ready > self.now => {
                        return Ok(Outcome::StallUntil(state, ready))
                    }
                    _ => warp.pc += 1,
                },
                Op::BranchLanes { .. }
                | Op::ElseLanes { .. }
                | Op::LoopLanesStart { .. }
                | Op::LoopLanesEnd { .. }
                | Op::Reconverge => warp.pc = lane_step(warp, op, pc as u32)?,
                Op::Set { slot, value } => {
                    warp.env[*slot as usize] = value.eval(&warp.env).map_err(Fault::Let)?;
                    warp.pc += 1;
                }
                Op::Issue(inst) => match self.can_issue(w, inst)? {
                    Some(outcome) => return Ok(outcome),
                    // An instruction with nothing to do (a zero count): skip it.
                    None => self.warps[w as usize].pc += 1,
                },
            }
        }
    }

    /// Whether `inst` can issue now; `None` when it has no work and is skipped.
    fn can_issue(&mut self, w: u32, inst: &Inst) -> Result<Option<Outcome>, Fault> {
        let warp = &self.warps[w as usize];
        let at = Pending {
            scoreboard: warp
                .registers_wait(self.now)
                .map(|(state, until)| Outcome::StallUntil(state, until)),
            // A macro's spilled part may end in stores after its last warp-instruction.
            starting: warp.progress == 0 && warp.spill.is_none(),
        };
        let outcome = match inst {
            Inst::Compute { pipe, count, acc } => {
                return self.compute_outcome(w, *pipe, count, *acc, at)
            }
            Inst::Mix { counts, stalls, .. } => return self.mix_outcome(w, counts, stalls, at),
            Inst::Wgmma { .. } => self.wgmma_outcome(w, at),
            Inst::WgmmaFence => at.inputs_or_ready(),
            Inst::WgmmaWait { n } => self.wgmma_wait_outcome(w, n)?,
            Inst::Wait {
                bar,
                parity,
                poll: Poll::Try,
            } => self.mbarrier_wait_outcome(w, bar, parity)?,
            Inst::Wait {
                bar,
                parity,
                poll: Poll::Test,
            } => self.mbarrier_poll_outcome(w, bar, parity)?,
            Inst::TmaStoreWait { n } => self.group_wait_outcome(w, GroupKind::TmaStores, n)?,
            Inst::CpAsyncWait { n } => self.group_wait_outcome(w, GroupKind::CpAsync, n)?,
            Inst::SetMaxNReg { inc: true, regs } => self.setmaxnreg_inc_outcome(w, *regs),
            Inst::Shared {
                store,
                cta: Some(rank),
                ..
            } => self.dsmem_outcome(w, *store, rank, at),
            Inst::Shared { store, .. } => self.shared_outcome(w, *store, at),
            Inst::Global { store, .. } => self.global_outcome(w, *store, at),
            Inst::CpAsync { .. } => self.global_outcome(w, false, at),
            Inst::WaitCounter { counter, value } => self.wait_counter_outcome(w, counter, value)?,
            Inst::Fence => self.fence_outcome(w),
            Inst::FenceProxyAsync => self.proxy_fence_outcome(w),
            Inst::TmaStoreCommit
            | Inst::CpAsyncCommit
            | Inst::RegRead { .. }
            | Inst::AtomicAdd { .. }
            | Inst::Arrive { .. }
            | Inst::ArriveExpectTx { .. }
            | Inst::ExpectTx { .. }
            | Inst::WgmmaCommit
            | Inst::BarSync { .. }
            | Inst::BarArrive { .. }
            | Inst::ClusterArrive { .. }
            | Inst::ClusterWait
            // A TMA load or store queues at the SM's unit in the order warps issue it; the
            // warp waits for its box to be taken (`hold_tma_issuer`).
            | Inst::TmaLoad { .. }
            | Inst::TmaStore { .. }
            | Inst::SetMaxNReg { inc: false, .. } => Outcome::Ready,
        };
        Ok(Some(outcome))
    }

    /// Executes the instruction at the warp's pc (already known to be issuable); the pc moves
    /// on once its last warp-instruction has issued.
    fn issue(&mut self, w: u32) -> Result<(), Fault> {
        let k = self.k;
        let warp = &self.warps[w as usize];
        let Op::Issue(inst) = &k.roles[warp.role as usize].code[warp.pc as usize] else {
            unreachable!("evaluate stops only at issuing ops")
        };
        let active = warp.lanes.active();
        if let Some(name) = inst.aligned().filter(|_| active != FULL) {
            return Err(Fault::Diverged {
                inst: name,
                active: active.count_ones(),
            });
        }
        let done = match inst {
            Inst::Compute { pipe, count, acc } => self.issue_compute(w, *pipe, count, *acc)?,
            Inst::Mix { acc, .. } => self.issue_mix(w, *acc)?,
            Inst::Wgmma {
                n,
                k,
                ksteps,
                a,
                b,
                acc,
            } => self.issue_wgmma(
                w,
                WgmmaOperands {
                    n: *n,
                    k: *k,
                    ksteps: *ksteps,
                    a: a.as_ref(),
                    b,
                    acc: *acc,
                },
            )?,
            Inst::Wait {
                bar,
                parity,
                poll: Poll::Test,
            } => self.issue_poll(w, bar, parity)?,
            Inst::Wait {
                bar,
                parity,
                poll: Poll::Try,
            } => {
                self.pass_wait(w, bar, parity)?;
                true
            }
            Inst::WgmmaWait { n } => {
                self.pass_wgmma_wait(w, n)?;
                true
            }
            Inst::WgmmaFence => true,
            Inst::FenceProxyAsync => {
                self.emit(Hook::ProxyFenced { warp: w })?;
                true
            }
            Inst::TmaStoreWait { .. } | Inst::CpAsyncWait { .. } => true,
            Inst::WgmmaCommit => {
                self.issue_wgmma_commit(w);
                true
            }
            Inst::Arrive {
                bar,
                count,
                cta: None,
                ranks: None,
                membar: false,
            } => {
                self.issue_arrive(w, bar, *count)?;
                true
            }
            Inst::Arrive {
                bar,
                count,
                cta,
                ranks,
                membar,
            } => {
                self.issue_remote_arrive(w, bar, *count, cta.as_ref(), ranks.as_ref(), *membar)?;
                true
            }
            Inst::ClusterArrive { membar } => {
                self.issue_cluster_arrive(w, *membar);
                true
            }
            Inst::ClusterWait => {
                self.issue_cluster_wait(w)?;
                true
            }
            Inst::ArriveExpectTx { bar, bytes } => {
                self.issue_arrive_expect_tx(w, bar, bytes)?;
                true
            }
            Inst::ExpectTx { bar, bytes } => {
                self.issue_expect_tx(w, bar, bytes)?;
                true
            }
            Inst::TmaLoad {
                tensor,
                coords,
                dst,
                bar,
                bytes,
                multicast,
                part,
                parts,
            } => {
                if let Some(part) = part {
                    let i = self.eval(w, part)?;
                    if i < 0 || i >= i64::from(*parts) {
                        return Err(Fault::TmaPart {
                            part: i,
                            parts: *parts,
                        });
                    }
                }
                let op = TmaOperands {
                    tensor: *tensor,
                    coords,
                    slot: dst,
                    bytes: *bytes,
                    parts: *parts,
                };
                self.issue_tma_load(w, op, bar, multicast.as_ref())?;
                true
            }
            Inst::TmaStore {
                tensor,
                coords,
                src,
                bytes,
            } => {
                let op = TmaOperands {
                    tensor: *tensor,
                    coords,
                    slot: src,
                    bytes: *bytes,
                    parts: 1,
                };
                self.issue_tma_store(w, op)?;
                true
            }
            Inst::TmaStoreCommit => {
                self.issue_group_commit(w, GroupKind::TmaStores);
                true
            }
            Inst::CpAsyncCommit => {
                self.issue_group_commit(w, GroupKind::CpAsync);
                true
            }
            Inst::CpAsync {
                tensor,
                src,
                dst,
                addr,
                width,
            } => {
                self.issue_cp_async(w, *tensor, src, dst, addr, *width)?;
                true
            }
            Inst::AtomicAdd { counter, add, slot } => {
                self.issue_atomic_add(w, counter, add, *slot)?;
                true
            }
            Inst::WaitCounter { counter, .. } => {
                self.issue_wait_counter(w, counter)?;
                true
            }
            Inst::Fence => {
                self.membar(w);
                true
            }
            Inst::BarSync { id, threads } => {
                self.issue_bar(w, id, *threads, true)?;
                true
            }
            Inst::BarArrive { id, threads } => {
                self.issue_bar(w, id, *threads, false)?;
                true
            }
            Inst::SetMaxNReg { inc, regs } => {
                self.issue_setmaxnreg(w, *inc, *regs)?;
                true
            }
            Inst::Shared {
                store,
                slot,
                addr,
                width,
                sb,
                cta,
            } => {
                let remote = match cta {
                    Some(rank) => self.issue_dsmem(w, *store, slot, addr, *width, *sb, rank)?,
                    None => false,
                };
                if !remote {
                    self.issue_shared(w, *store, slot, addr, *width, *sb)?;
                }
                true
            }
            Inst::Global {
                store: true,
                tensor,
                addr,
                width,
                ..
            } => {
                self.issue_store(w, *tensor, addr, *width)?;
                true
            }
            Inst::Global {
                store: false,
                tensor,
                addr,
                width,
                sb,
                l1,
            } => {
                self.issue_load(w, *tensor, addr, *width, *sb, *l1)?;
                true
            }
            Inst::RegRead { source, sb } => {
                self.issue_reg_read(w, *source, *sb);
                true
            }
        };
        if changes_state(inst) {
            self.last_progress = self.now;
        }
        if done {
            self.warps[w as usize].pc += 1;
        }
        Ok(())
    }
}

/// Whether issuing `inst` changes what another warp or the kernel's end can observe (memory,
/// barriers, the register pool): progress for the livelock detector (`Config::livelock_cycles`;
/// an atomic counts where it changes its counter).
fn changes_state(inst: &Inst) -> bool {
    matches!(
        inst,
        Inst::TmaLoad { .. }
            | Inst::TmaStore { .. }
            | Inst::CpAsync { .. }
            | Inst::Arrive { .. }
            | Inst::ArriveExpectTx { .. }
            | Inst::ExpectTx { .. }
            | Inst::BarSync { .. }
            | Inst::BarArrive { .. }
            | Inst::ClusterArrive { .. }
            | Inst::SetMaxNReg { .. }
            | Inst::Shared { store: true, .. }
            | Inst::Global { store: true, .. }
    )
}

/// Enters a loop of `n` trips at `pc` (its start op): the variable at 0, the count kept; the
/// next pc is the body's first op, or `exit` when there are no trips.
fn enter_loop(
    warp: &mut Warp,
    var: u16,
    count_slot: u16,
    n: i64,
    pc: u32,
    exit: u32,
) -> Result<u32, Fault> {
    if n > isa::compile::MAX_TRIPS {
        return Err(Fault::TripCount {
            count: n,
            limit: isa::compile::MAX_TRIPS,
        });
    }
    warp.env[var as usize] = 0;
    warp.env[count_slot as usize] = n;
    Ok(if n > 0 { pc + 1 } else { exit })
}

/// A lane-dependent control-flow op (`isa::divergence`): moves the warp's active lanes and
/// returns its next pc. Out of line: the warp-uniform ops, nearly all of them, stay a small
/// loop in `evaluate`.
#[inline(never)]
fn lane_step(warp: &mut Warp, op: &Op, pc: u32) -> Result<u32, Fault> {
    Ok(match op {
        Op::BranchLanes { cond, otherwise } => {
            let active = warp.lanes.active();
            let values = lane_values(&mut warp.env, cond, active).map_err(Fault::Condition)?;
            if warp.lanes.branch(&values) {
                pc + 1
            } else {
                *otherwise
            }
        }
        Op::ElseLanes { end } => {
            if warp.lanes.otherwise() {
                pc + 1
            } else {
                *end
            }
        }
        Op::LoopLanesStart {
            var,
            count_slot,
            count,
            exit,
        } => {
            let active = warp.lanes.active();
            let trips = lane_values(&mut warp.env, count, active).map_err(Fault::LoopCount)?;
            let n = warp.lanes.loop_start(trips);
            enter_loop(warp, *var, *count_slot, n, pc, *exit)?
        }
        Op::LoopLanesEnd {
            var,
            count_slot,
            body,
        } => {
            let i = warp.env[*var as usize] + 1;
            warp.env[*var as usize] = i;
            if i < warp.env[*count_slot as usize] {
                warp.lanes.iteration(i);
                *body
            } else {
                pc + 1
            }
        }
        Op::Reconverge => {
            warp.lanes.reconverge();
            pc + 1
        }
        _ => unreachable!("evaluate passes only lane-dependent ops"),
    })
}
