//! The SM's units — math pipes, tensor core, shared memory, TMA, the load/store path, mbarriers,
//! named barriers, the register file, async-copy groups, clusters — each with the issue logic of the
//! instruction family that drives it (`impl Engine` blocks beside the unit's model).

pub mod async_groups;
pub mod cluster;
pub mod l1;
pub mod local;
pub mod lsu;
pub mod mbarrier;
pub mod named_barrier;
pub mod pipes;
pub mod regfile;
pub mod smem;
pub mod tensor_core;
pub mod tma;
