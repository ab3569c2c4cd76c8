//! An input outside the range where a closed-form model's arithmetic stays meaningful.

use super::decode::MAX_BYTES;
use super::gpu::GpuSpec;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("unknown GPU `{0}`; known: {known}", known = GpuSpec::NAMES.join(", "))]
    UnknownGpu(String),
    /// A size or count that must be in `1..=max`.
    #[error("{name} = {value} must be in 1..={max}")]
    OutOfRange {
        name: &'static str,
        value: u64,
        max: u64,
    },
    /// A size that may be 0 but not above `max`.
    #[error("{name} = {value} must be at most {max}")]
    AtMost {
        name: &'static str,
        value: u64,
        max: u64,
    },
    #[error("q-heads = {q_heads} must be a multiple of kv-heads = {kv_heads}")]
    HeadsNotGrouped { q_heads: u64, kv_heads: u64 },
    #[error("{0} bytes of K/V is beyond this model's range ({MAX_BYTES} bytes)")]
    TooManyBytes(u128),
    #[error("tile `{0}` is not BMxBNxBK (e.g. 128x128x64)")]
    BadTile(String),
}

/// `value` if it is in `1..=max`.
pub(crate) fn in_range(name: &'static str, value: u64, max: u64) -> Result<u64, InputError> {
    if value == 0 || value > max {
        return Err(InputError::OutOfRange { name, value, max });
    }
    Ok(value)
}
