//! Why a run stops early: [`SimError`] for the caller, and the typed faults an instruction
//! raises while it is evaluated or issued ([`Fault`]), which the engine turns into a
//! [`SimError`] with the cycle, CTA, warp and instruction path.

use crate::observe::sanitizer::Finding;
use crate::sm::mbarrier::MBarrierError;
use crate::sm::named_barrier::NamedBarrierError;
use isa::expr::EvalError;
use isa::program::{IndexError, LaneError};

/// Why a run stopped without finishing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("cycle {cycle}: CTA {cta}, warp {}: {}\n  = in {}", shown(.warp), shown(.message), shown(.path))]
    Runtime {
        cycle: u64,
        cta: u32,
        warp: String,
        path: String,
        message: String,
    },
    #[error("deadlock at cycle {cycle}: no event is pending and {warps} warps cannot proceed:\n{}", lines(.blocked))]
    Deadlock {
        cycle: u64,
        warps: usize,
        blocked: Vec<String>,
    },
    #[error("hazard at cycle {cycle}, SM {sm}, CTA {cta}, warp {}: {}\n  = in {}", shown(.warp), shown(.message), shown(.path))]
    Hazard {
        cycle: u64,
        sm: u32,
        cta: u32,
        warp: String,
        path: String,
        message: String,
    },
    #[error("a cluster of {size} CTAs cannot be placed: a cluster runs on one GPC, and the largest holds {slots} of its CTAs ({sms} SMs, {per_sm} CTA(s) an SM)")]
    ClusterPlacement {
        size: u32,
        slots: u32,
        sms: u32,
        per_sm: u32,
    },
    #[error("the run passed the cycle limit ({limit} cycles; raise it with --max-cycles)")]
    CycleLimit { limit: u64 },
    #[error("livelock at cycle {cycle}: no progress for {} cycles (since cycle {since} no warp exited, no CTA launched, nothing was stored, no barrier was arrived on, no TMA load landed, no atomic changed a counter and no wgmma completed), while {warps} warps keep running:\n{}\n  = raise the limit with --livelock-cycles if the kernel really computes that long without any of these", cycle - since, lines(.spinning))]
    Livelock {
        cycle: u64,
        since: u64,
        warps: usize,
        spinning: Vec<String>,
    },
    #[error("the run passed the wall-clock limit ({} s) at cycle {cycle}, with {retired} of {grid} CTAs done (raise it with --max-wall)", limit.as_secs_f64())]
    WallLimit {
        limit: std::time::Duration,
        cycle: u64,
        retired: u32,
        grid: u32,
    },
}

/// The longest warp name, instruction path, message or line of a warp listing shown whole.
/// They quote the scenario's names (roles, buffers, mbarriers, counters), which may be as long
/// as the file; a deadlock lists every live warp, each line naming its role twice.
const MAX_SHOWN: usize = 1024;

/// `text`, clipped in the middle past [`MAX_SHOWN`] characters.
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    isa::diag::clip(text, MAX_SHOWN)
}

/// A warp listing's lines, each [`shown`].
fn lines(listing: &[String]) -> String {
    listing
        .iter()
        .map(|l| shown(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What stops a warp's instruction: a run-time error of the program, or a sanitizer finding.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    #[error("expression cannot be evaluated: {0}")]
    Eval(EvalError),
    #[error("loop count: {0}")]
    LoopCount(EvalError),
    #[error("condition: {0}")]
    Condition(EvalError),
    #[error("let: {0}")]
    Let(EvalError),
    #[error("loop trip count {count} exceeds the limit {limit}")]
    TripCount { count: i64, limit: i64 },
    #[error(
        "{steps} control-flow steps without an instruction (an empty loop with a huge trip count?)"
    )]
    ControlSteps { steps: u32 },
    #[error("{0}")]
    Index(#[from] IndexError),
    #[error("{0}")]
    Lane(LaneError),
    #[error("stall of {cycles} cycles exceeds {max}")]
    StallCycles { cycles: i64, max: i64 },
    #[error("{pipe} count {count} exceeds {max} warp-instructions per instruction")]
    MacroCount {
        pipe: &'static str,
        count: i64,
        max: i64,
    },
    #[error("transaction byte count {0} is outside 0..2^20")]
    TxBytes(i64),
    #[error("mbarrier {name}: {error}")]
    MBarrier { name: String, error: MBarrierError },
    #[error("named barrier id {id} is out of range 0..{count}")]
    NamedBarrierId { id: i64, count: u32 },
    #[error("named barrier {id}: {error}")]
    NamedBarrier { id: usize, error: NamedBarrierError },
    #[error("setmaxnreg.{dir} {regs} with {from} registers per thread (.inc needs current <= target, .dec current >= target)")]
    SetMaxNRegDirection {
        dir: &'static str,
        regs: u32,
        from: u32,
    },
    #[error("setmaxnreg.inc {0}: the CTA's register pool cannot supply it")]
    RegPool(u32),
    #[error("{inst} with {active} of 32 lanes active: it is .aligned in PTX, so every lane of the warp must execute it together (move it out of the `If` or `Loop` that depends on `lane`)")]
    Diverged { inst: &'static str, active: u32 },
    #[error("atomic counter overflow")]
    CounterOverflow,
    #[error("cluster rank {rank} is out of range: the cluster has {size} CTAs (0..{size})")]
    ClusterRank { rank: i64, size: u32 },
    #[error("{what} mask {mask:#x} names no CTA or a rank outside the cluster of {size} CTAs")]
    RankMask {
        what: &'static str,
        mask: i64,
        size: u32,
    },
    #[error("{what} on CTA rank {rank} of the cluster, which has exited (its shared memory is gone: a cluster barrier before exit keeps it)")]
    RemoteExited { what: &'static str, rank: u32 },
    #[error(
        "TMA load part {part} is out of range: the slot's rows are in {parts} parts (0..{parts})"
    )]
    TmaPart { part: i64, parts: u32 },
    #[error("on cluster rank {rank}'s mbarrier (a remote arrive): {fault}")]
    Remote { rank: u32, fault: Box<Fault> },
    #[error("barrier.cluster.wait without a barrier.cluster.arrive before it")]
    ClusterWaitWithoutArrive,
    #[error("{0}")]
    Hazard(Finding),
}

impl From<EvalError> for Fault {
    fn from(e: EvalError) -> Self {
        Fault::Eval(e)
    }
}

impl From<LaneError> for Fault {
    fn from(e: LaneError) -> Self {
        match e {
            LaneError::Eval(e) => Fault::Eval(e),
            other => Fault::Lane(other),
        }
    }
}

impl From<Finding> for Fault {
    fn from(f: Finding) -> Self {
        Fault::Hazard(f)
    }
}
