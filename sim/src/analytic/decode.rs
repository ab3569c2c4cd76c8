//! Split-KV decoding (Dao, Haziza, Massa, Sizov, "Flash-Decoding for long-context inference",
//! 2023): one query token per sequence reads the whole K/V cache, so the time is bytes over the
//! bandwidth the reading SMs can draw, plus the combine kernel that merges the splits' partial
//! outputs.
//!
//! One CTA per (sequence, KV head, split), with the query heads of a GQA group packed into it
//! as FA3 does; at most one CTA per SM reads at a time.

use super::error::{in_range, InputError};
use super::gpu::GpuSpec;

const KV_ELEM_BYTES: u64 = 2;
/// Partial outputs and their log-sum-exp are fp32.
const PARTIAL_BYTES: u64 = 4;
const OUT_ELEM_BYTES: u64 = 2;
/// FA3 caps the split count at 128 (`max_splits` in Dao-AILab/flash-attention,
/// hopper/flash_api.cpp `get_num_splits` and hopper/heuristics.h `num_splits_heuristic`).
pub const MAX_SPLITS: u64 = 128;
/// Largest batch, head count, sequence length or head dim accepted.
pub const MAX_DIM: u64 = 1 << 24;
/// Largest K/V cache or partial-output size accepted: exact in f64.
pub const MAX_BYTES: u128 = 1 << 53;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decode {
    pub batch: u64,
    pub q_heads: u64,
    pub kv_heads: u64,
    pub seqlen: u64,
    pub hd: u64,
}

impl Decode {
    pub fn new(
        batch: u64,
        q_heads: u64,
        kv_heads: u64,
        seqlen: u64,
        hd: u64,
    ) -> Result<Decode, InputError> {
        let d = Decode {
            batch: in_range("batch", batch, MAX_DIM)?,
            q_heads: in_range("q-heads", q_heads, MAX_DIM)?,
            kv_heads: in_range("kv-heads", kv_heads, MAX_DIM)?,
            seqlen: in_range("seqlen", seqlen, MAX_DIM)?,
            hd: in_range("hd", hd, MAX_DIM)?,
        };
        if !q_heads.is_multiple_of(kv_heads) {
            return Err(InputError::HeadsNotGrouped { q_heads, kv_heads });
        }
        // Checked in u128 so the u64 byte counts below cannot overflow and stay exact in f64.
        let wide = |v: u64| v as u128;
        let kv = wide(batch) * wide(kv_heads) * wide(seqlen) * 2 * wide(hd) * wide(KV_ELEM_BYTES);
        let partial =
            wide(MAX_SPLITS) * wide(batch) * wide(q_heads) * (wide(hd) + 1) * wide(PARTIAL_BYTES);
        if kv.max(partial) > MAX_BYTES {
            return Err(InputError::TooManyBytes(kv));
        }
        Ok(d)
    }

    /// K and V of every sequence and KV head.
    pub fn kv_bytes(&self) -> u64 {
        self.batch * self.kv_heads * self.seqlen * 2 * self.hd * KV_ELEM_BYTES
    }

    /// Partial O and LSE of every split, query head and sequence.
    pub fn partial_bytes(&self, splits: u64) -> u64 {
        splits * self.batch * self.q_heads * (self.hd + 1) * PARTIAL_BYTES
    }

    pub fn out_bytes(&self) -> u64 {
        self.batch * self.q_heads * self.hd * OUT_ELEM_BYTES
    }
}

/// The model's view of one split count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Split {
    pub splits: u64,
    pub ctas: u64,
    pub active_sms: u64,
    /// `min(HBM bandwidth, active SMs × per-SM bandwidth)`.
    pub bytes_per_s: f64,
    /// A launch gap plus K/V bytes at that bandwidth.
    pub t_kv: f64,
    /// Zero for one split; else a second launch gap, partials written and read back, and the
    /// output written, at HBM bandwidth.
    pub t_combine: f64,
    pub total: f64,
}

/// How the step's kernels are launched: one after another from the host, or as a CUDA graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    Eager,
    Graph,
}

impl Launch {
    /// The time each kernel of a step adds on `gpu` before its work starts.
    pub fn gap_s(self, gpu: &GpuSpec) -> f64 {
        match self {
            Launch::Eager => gpu.launch_s,
            Launch::Graph => gpu.graph_gap_s,
        }
    }
}

/// `splits` must be in 1..=seqlen (use [`check_splits`]).
pub fn split(gpu: &GpuSpec, d: &Decode, splits: u64, launch: Launch) -> Split {
    let gap = launch.gap_s(gpu);
    let ctas = d.batch * d.kv_heads * splits;
    let active_sms = ctas.min(gpu.sms);
    let bytes_per_s = gpu
        .dram_bytes_per_s
        .min(active_sms as f64 * gpu.sm_bytes_per_s);
    let t_kv = gap + d.kv_bytes() as f64 / bytes_per_s;
    let t_combine = if splits == 1 {
        0.0
    } else {
        let bytes = 2 * d.partial_bytes(splits) + d.out_bytes();
        gap + bytes as f64 / gpu.dram_bytes_per_s
    };
    Split {
        splits,
        ctas,
        active_sms,
        bytes_per_s,
        t_kv,
        t_combine,
        total: t_kv + t_combine,
    }
}

pub fn check_splits(d: &Decode, splits: u64) -> Result<(), InputError> {
    in_range("splits", splits, MAX_SPLITS.min(d.seqlen))?;
    Ok(())
}

/// Powers of two up to FA3's cap, the sequence length, and the first count that fills the GPU.
pub fn default_splits(gpu: &GpuSpec, d: &Decode) -> Vec<u64> {
    let max = MAX_SPLITS.min(d.seqlen);
    let fill = gpu.sms.div_ceil(d.batch * d.kv_heads);
    let limit = max.min(fill.next_power_of_two());
    std::iter::successors(Some(1u64), |s| Some(s * 2))
        .take_while(|&s| s <= limit)
        .collect()
}

/// The fastest split count; a tie goes to fewer splits.
pub fn best(splits: &[Split]) -> Option<&Split> {
    splits
        .iter()
        .min_by(|a, b| a.total.total_cmp(&b.total).then(a.splits.cmp(&b.splits)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama70b(seqlen: u64) -> Decode {
        Decode::new(1, 64, 8, seqlen, 128).unwrap()
    }

    #[test]
    fn bytes_follow_the_closed_forms() {
        let d = llama70b(1000);
        assert_eq!(d.kv_bytes(), 8 * 1000 * 2 * 128 * 2);
        assert_eq!(d.partial_bytes(4), 4 * 64 * 129 * 4);
        assert_eq!(d.out_bytes(), 64 * 128 * 2);
    }

    #[test]
    fn few_ctas_are_limited_by_per_sm_bandwidth() {
        let gpu = GpuSpec::h200_sxm();
        let d = llama70b(32768);
        let s = split(&gpu, &d, 1, Launch::Eager);
        assert_eq!((s.ctas, s.active_sms), (8, 8));
        assert_eq!(s.bytes_per_s, 8.0 * gpu.sm_bytes_per_s);
        assert_eq!(s.t_kv, 5e-6 + d.kv_bytes() as f64 / s.bytes_per_s);
        let graph = split(&gpu, &d, 1, Launch::Graph);
        assert_eq!(graph.t_kv, 768e-9 + d.kv_bytes() as f64 / s.bytes_per_s);
        assert_eq!((s.t_combine, s.total), (0.0, s.t_kv));
    }

    #[test]
    fn enough_splits_saturate_hbm_and_pay_for_a_combine() {
        let gpu = GpuSpec::h200_sxm();
        let d = llama70b(32768);
        let s = split(&gpu, &d, 32, Launch::Eager);
        assert_eq!((s.ctas, s.active_sms, s.bytes_per_s), (256, 132, 4.8e12));
        let combine = (2 * d.partial_bytes(32) + d.out_bytes()) as f64 / 4.8e12;
        assert_eq!(s.t_combine, 5e-6 + combine);
    }

    #[test]
    fn default_splits_stop_at_the_first_power_of_two_that_fills_the_gpu() {
        let gpu = GpuSpec::h200_sxm();
        // 8 CTAs per split: 17 splits fill 132 SMs; the list ends at 32.
        assert_eq!(
            default_splits(&gpu, &llama70b(32768)),
            vec![1, 2, 4, 8, 16, 32]
        );
        // Never more splits than tokens.
        assert_eq!(default_splits(&gpu, &llama70b(3)), vec![1, 2]);
    }

    #[test]
    fn bad_shapes_and_split_counts_are_errors() {
        assert_eq!(
            Decode::new(1, 12, 8, 10, 128).unwrap_err().to_string(),
            "q-heads = 12 must be a multiple of kv-heads = 8"
        );
        assert!(Decode::new(0, 8, 8, 10, 128).is_err());
        assert!(Decode::new(1 << 24, 8, 8, 1 << 24, 128).is_err());
        assert_eq!(
            check_splits(&llama70b(100), 129).unwrap_err().to_string(),
            "splits = 129 must be in 1..=100"
        );
        assert!(check_splits(&llama70b(100), 100).is_ok());
    }
}
