//! `sim`: a cycle-level, discrete-event simulator of NVIDIA Hopper-class SMs.
//!
//! The engine ([`engine`]) runs a compiled tile-ISA kernel ([`isa::program::Kernel`]) on the
//! SM's units ([`sm`]) and the memory system below them ([`memory`]), with numbers from a GPU
//! preset ([`gpu::preset`]). Observers ([`observe`]) watch the engine's events: warp-state
//! accounting, traces and their readers, reports, the sanitizer. [`run`] ties scenario loading,
//! validation, simulation and reporting together for the CLI and the tests, and [`sequence`] runs
//! a scenario's kernels one after another; [`analytic`] holds
//! the closed-form models and [`validate`] compares simulations with measurements; [`sweep`] runs
//! a scenario over a product of parameters and tunes GEMM configs by simulation.

pub mod analytic;
pub mod engine;
pub mod gpu;
pub mod memory;
pub mod observe;
pub mod run;
pub mod sequence;
pub mod sm;
pub mod sweep;
pub mod validate;
