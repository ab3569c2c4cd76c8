//! The GPU as a whole: presets (hardware numbers as data) and the CTA scheduler.

pub mod cta_scheduler;
pub mod preset;
