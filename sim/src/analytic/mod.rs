//! Analytic models: closed forms that predict a kernel's resources and time from a GPU's
//! published numbers, to set next to the simulated cycles (the project's seed models: the GEMM
//! resource model K1, the autotuner T3 and the Hopper models; explained with their blind spots in
//! `docs/analytic.md`).
//!
//! [`gpu`] describes the GPU; [`occupancy`] the CTAs an SM holds and the waves they run in;
//! [`gemm`] and [`roofline`] are the GEMM resource model,
//! [`tune`] the autotuner's analytic steps, [`wgmma`], [`attention`] and [`decode`] the Hopper
//! models; [`cli`] prints them as `sim analyze`, through the table helpers in [`fmt`], and
//! [`explore`] shows the same cells as `sim explore`'s interactive page. Inputs
//! outside a model's range are an [`InputError`].
//! [`bound`] is the generic resource bound of any compiled scenario, which `sim run` reports.

pub mod attention;
pub mod bound;
pub mod cli;
pub mod decode;
mod error;
pub mod explore;
pub mod fmt;
pub mod gemm;
pub mod gpu;
pub mod occupancy;
pub mod roofline;
pub mod tune;
pub mod wgmma;

pub use error::InputError;
