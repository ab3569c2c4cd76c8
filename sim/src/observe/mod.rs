//! Observers of the engine: warp-state accounting, the sanitizer, traces and their readers,
//! reports.

pub mod atomic;
pub mod diagnosis;
pub mod diff;
pub mod flat;
pub mod ncu;
pub mod report;
pub mod report_html;
pub mod sanitizer;
pub mod stalls;
pub mod timeline;
pub mod trace;
pub mod trace_read;
pub mod warp_state;
