//! The SM's units: shared memory, register file, tensor core, TMA, mbarriers, named barriers,
//! async-copy groups.

pub mod async_groups;
pub mod mbarrier;
pub mod named_barrier;
pub mod regfile;
pub mod smem;
pub mod tensor_core;
pub mod tma;
