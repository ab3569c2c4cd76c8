//! Observers of the engine: warp-state accounting, traces and their readers, reports.

pub mod report;
pub mod report_html;
pub mod stalls;
pub mod trace;
pub mod trace_read;
pub mod warp_state;
