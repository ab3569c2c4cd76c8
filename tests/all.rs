//! The end-to-end tests as one test binary: each module is one file of this folder (`golden`,
//! `traces`, `validate`, ...), run as `cargo test --test all golden::`. One binary links the
//! simulator once instead of once per file, and its tests share both cores from start to end
//! where separate binaries ran one after another. `docs` stays a binary of its own: it changes
//! the process's working directory and environment.

mod common;

mod analytic_bound;
mod analytic_cli;
mod analytic_models;
mod attention;
mod cluster;
mod e2e;
mod explore;
mod fundamentals;
mod fuzz;
mod gemm_library;
mod golden;
mod hardening;
mod moe;
mod pipelines;
mod sanitizer;
mod sequence;
mod spill;
mod sweep;
mod threads;
mod traces;
mod triton_gemm;
mod validate;
mod whole_gpu;
