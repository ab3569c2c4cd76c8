//! Below the SMs: coalescing of lane addresses into sectors and lines, the L2 (tags and
//! replacement), HBM channels, and the memory system that wires the SMs' ports, L2 slices and
//! HBM together.

pub mod coalesce;
pub mod hbm;
pub mod l2;
pub mod system;
pub mod tags;
