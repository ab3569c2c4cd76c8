//! Why the walk could not bound a kernel. The messages name the CTA, warp and source line, so
//! that a scenario's author can find the instruction the walk rejected.

use crate::engine::MAX_CONTROL_STEPS;
use crate::sm::pipes::MAX_MACRO_COUNT;
use isa::expr::EvalError;
use isa::program::LaneError;

#[derive(Debug, thiserror::Error)]
pub enum BoundError {
    #[error("clock {0} MHz is not a positive number")]
    BadClock(f64),
    #[error("no CTA fits on an SM (limit: {0})")]
    NoCtaFits(&'static str),
    /// Warp `warp` of warpgroup `warpgroup` of role `role` cannot be walked.
    #[error("CTA {cta}, warp {role}{warpgroup}.w{warp}: {error}\n  = in {path}")]
    Walk {
        cta: u32,
        role: String,
        warpgroup: u32,
        warp: u32,
        /// The source path of the op the walk stopped at.
        path: String,
        error: WalkError,
    },
}

/// What stopped one warp's walk.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("the generic bound is unavailable: the program walk passed its step budget (the kernel runs too many instructions)")]
    OverBudget,
    #[error("{MAX_CONTROL_STEPS} control-flow steps without an instruction (an empty loop with a huge trip count?)")]
    NoInstruction,
    #[error("expression cannot be evaluated: {0}")]
    Eval(EvalError),
    /// An error in one part of an op (`loop count`, `condition`, `let`).
    #[error("{0}: {1}")]
    In(&'static str, Box<WalkError>),
    #[error("variable slot {0} is out of range")]
    SlotOutOfRange(u16),
    #[error("{pipe} count {count} exceeds {MAX_MACRO_COUNT} warp-instructions per instruction")]
    CountTooLarge { pipe: &'static str, count: i64 },
    #[error("tensor {0} is not declared")]
    NoTensor(u16),
    #[error("buffer {0} is not declared")]
    NoBuffer(u16),
    #[error("{0}")]
    BufferSlot(#[from] isa::program::IndexError),
    #[error("TMA box of rank {rank} at {coords} coordinates on a tensor of rank {tensor_rank}")]
    TmaRank {
        rank: usize,
        coords: usize,
        tensor_rank: usize,
    },
    #[error("{0}")]
    Lane(LaneError),
    #[error("atomic counter {0} is not declared")]
    NoCounter(usize),
    #[error("atomic counter overflow")]
    CounterOverflow,
    #[error("counter index {0} is out of range: the array has {1} elements")]
    CounterIndex(i64, u32),
}

impl WalkError {
    /// This error as part `what` of an op.
    pub(super) fn within(self, what: &'static str) -> WalkError {
        WalkError::In(what, Box::new(self))
    }
}

impl From<LaneError> for WalkError {
    fn from(e: LaneError) -> Self {
        match e {
            LaneError::Eval(e) => WalkError::Eval(e),
            other => WalkError::Lane(other),
        }
    }
}
