//! `sim`: a cycle-level, discrete-event simulator of NVIDIA Hopper-class SMs.
//!
//! The engine ([`engine`]) runs a compiled tile-ISA kernel ([`isa::program::Kernel`]) on the
//! hardware models below, with numbers from a GPU preset ([`preset`]). [`run`] ties scenario
//! loading, validation, simulation and reporting together for the CLI and the tests.

pub mod analytic;
pub mod async_groups;
pub mod cta_scheduler;
pub mod engine;
pub mod gmem;
pub mod hbm;
pub mod l2;
pub mod mbarrier;
pub mod memsys;
pub mod named_barrier;
pub mod preset;
pub mod queue;
pub mod regfile;
pub mod report;
pub mod report_html;
pub mod run;
pub mod server;
pub mod smem;
pub mod stalls;
pub mod tensor_core;
pub mod tma;
pub mod trace;
pub mod trace_read;
pub mod validate;
pub mod warp_state;
