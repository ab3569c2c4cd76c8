//! Shared-memory banks: how many wavefronts (port cycles) one warp access takes.
//!
//! Rule (CUDA C++ Programming Guide, "Shared Memory"): 32 banks of 4 bytes, consecutive words in
//! consecutive banks. A request is served in wavefronts; in each, a bank delivers one distinct
//! word, and any number of lanes reading the same word share it (broadcast). 16-byte accesses
//! are split into two half-warp phases; narrower ones are one phase of the whole warp. The
//! wavefronts of a phase are the largest number of distinct words any one bank must deliver, so
//! a phase moving 256 distinct bytes takes 2. Measured on an H100 (calibration/core.cu,
//! h100-core_bcast.csv): every lane loading the same 8 bytes takes 1 wavefront, the same 16
//! bytes 2 (a split into quarter-warps of 128 B would give 2 and 4); with distinct addresses
//! both rules agree (h200-core.csv's smem_ld rows).
//!
//! The SM's shared-memory port moves one wavefront per cycle for every user: ld/st.shared
//! (issued here), HGMMA operand reads, TMA writes and reads, cp.async writes. An ld/st.shared
//! waits (`mio_throttle`) while the port's backlog is longer than `smem.queue_cycles`.

use crate::engine::error::Fault;
use crate::engine::hooks::Hook;
use crate::engine::schedule::{Outcome, Pending};
use crate::engine::Shard;
use crate::observe::warp_state::State;
use isa::expr::Code;
use isa::program::{LaneAddrs, SlotRef};

/// Wavefronts for one warp access: `a` holds the lanes' byte addresses and the active lanes,
/// `width` the bytes each lane moves (1, 2, 4, 8 or 16). Masked-off lanes touch no bank; a phase
/// with no active lane takes no wavefront.
pub fn wavefronts(a: &LaneAddrs, width: u32, banks: u32, bank_bytes: u32) -> u32 {
    let port = (banks * bank_bytes) as usize;
    // A phase moves at most two port widths: all 32 lanes up to 8 bytes each, half-warps of
    // 16-byte accesses (an LDS.64 of one address takes 1 wavefront, an LDS.128 of one 2).
    let lanes_per_phase = (2 * port / width.max(bank_bytes) as usize).clamp(1, a.addrs.len());
    let mut total = 0;
    for (p, phase) in a.addrs.chunks(lanes_per_phase).enumerate() {
        let all = (1u64 << phase.len()) - 1;
        let bits = (u64::from(a.mask) >> (p * lanes_per_phase)) & all;
        // A whole phase, the usual case, without a test per lane.
        total += match bits {
            0 => 0,
            b if b == all => phase_wavefronts(phase.iter().copied(), width, banks, bank_bytes),
            b => {
                let lanes = phase.iter().enumerate().filter(|&(l, _)| b & (1 << l) != 0);
                phase_wavefronts(lanes.map(|(_, &a)| a), width, banks, bank_bytes)
            }
        };
    }
    total
}

/// One phase's wavefronts: the distinct words its lanes at `addrs` touch, then the busiest
/// bank's count of them.
fn phase_wavefronts(
    addrs: impl Iterator<Item = u64> + Clone,
    width: u32,
    banks: u32,
    bank_bytes: u32,
) -> u32 {
    if let Some(words) = contiguous_words(addrs.clone(), width, bank_bytes) {
        // Consecutive words go round the banks: the busiest holds ceil(words / banks).
        return words.div_ceil(u64::from(banks)) as u32;
    }
    let mut words: Vec<u64> = addrs
        .flat_map(|a| {
            let first = a / bank_bytes as u64;
            let last = (a + width as u64 - 1) / bank_bytes as u64;
            first..=last
        })
        .collect();
    words.sort_unstable();
    words.dedup();
    let mut per_bank = vec![0u32; banks as usize];
    for w in words {
        per_bank[(w % banks as u64) as usize] += 1;
    }
    per_bank.into_iter().max().unwrap_or(0).max(1)
}

/// How many words the lanes touch when they read one run of consecutive bytes (lane i at the
/// first lane's address + i · width), else `None`. The common case (a warp's row, an ldmatrix,
/// a half-warp's 256 bytes of 16-byte accesses) without sorting its words.
fn contiguous_words(
    mut addrs: impl Iterator<Item = u64>,
    width: u32,
    bank_bytes: u32,
) -> Option<u64> {
    let first = addrs.next()?;
    let mut next = first + u64::from(width);
    for a in addrs {
        if a != next {
            return None;
        }
        next += u64::from(width);
    }
    let bank_bytes = u64::from(bank_bytes);
    Some((next - 1) / bank_bytes - first / bank_bytes + 1)
}

impl Shard<'_> {
    /// A store waits for the registers it writes out; every access waits for room in the
    /// port's queue.
    pub(crate) fn shared_outcome(&self, w: u32, store: bool, at: Pending) -> Outcome {
        let port_free = self.sms[self.warps[w as usize].sm as usize]
            .port
            .next_free();
        self.queued_outcome(store, at, port_free)
    }

    /// A store waits for its registers; any access waits while the path it queues on (free
    /// from `free`) has more than `smem.queue_cycles` of backlog.
    pub(crate) fn queued_outcome(&self, store: bool, at: Pending, free: u64) -> Outcome {
        let queue = self.p.smem.queue_cycles;
        match at.scoreboard {
            Some(stall) if store => stall,
            _ if free > self.now + queue => Outcome::StallUntil(State::MioThrottle, free - queue),
            _ => Outcome::Ready,
        }
    }

    /// ld/st.shared: the lanes' addresses decide the wavefronts booked on the port; a load's
    /// result is ready `smem.latency` cycles after its last wavefront.
    pub(crate) fn issue_shared(
        &mut self,
        w: u32,
        store: bool,
        s: &SlotRef,
        addr: &Code,
        width: u32,
        sb: Option<u8>,
    ) -> Result<(), Fault> {
        let (base, slot) = self.slot(w, s)?;
        if store {
            self.emit(Hook::SharedStored { warp: w, slot })?;
        }
        let limit = self.k.buffers[s.buf as usize].slot_bytes;
        let addrs = self.lane_addrs(w, addr, base, limit, width, "the slot")?;
        let wf = wavefronts(&addrs, width, self.p.smem.banks, self.p.smem.bank_bytes);
        let sm = self.warps[w as usize].sm as usize;
        let (_, end) = self.sms[sm].port.book(self.now, wf as u64);
        self.book_horizon(end);
        let warp = &mut self.warps[w as usize];
        if store {
            warp.smem_stores_done = warp.smem_stores_done.max(end);
        } else {
            warp.load_result(sb, end + self.p.smem.latency, State::ShortScoreboard);
        }
        Ok(())
    }

    /// `fence.proxy.async`: the warp's shared-memory stores are written once their wavefronts
    /// have passed the port; the fence holds the warp (`membar`) until then.
    pub(crate) fn proxy_fence_outcome(&self, w: u32) -> Outcome {
        match self.warps[w as usize].smem_stores_done {
            t if t > self.now => Outcome::StallUntil(State::Membar, t),
            _ => Outcome::Ready,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use isa::divergence::FULL;

    fn lanes(f: impl Fn(u64) -> u64) -> LaneAddrs {
        LaneAddrs {
            addrs: std::array::from_fn(|l| f(l as u64)),
            mask: FULL,
        }
    }

    #[test]
    fn masked_lanes_touch_no_bank() {
        // Stride 2 words: lanes 0..15 alone cover the even banks once each: 1 wavefront, not
        // the warp's 2.
        let low = LaneAddrs {
            mask: 0xffff,
            ..lanes(|l| l * 8)
        };
        assert_eq!(wavefronts(&low, 4, 32, 4), 1);
        assert_eq!(wavefronts(&lanes(|l| l * 8), 4, 32, 4), 2);
        // 8-byte accesses by lanes 0..15 only: the second half-warp phase has no lane.
        let low = LaneAddrs {
            mask: 0xffff,
            ..lanes(|l| l * 8)
        };
        assert_eq!(wavefronts(&low, 8, 32, 4), 1);
    }

    #[test]
    fn stride_one_word_is_one_wavefront() {
        assert_eq!(wavefronts(&lanes(|l| l * 4), 4, 32, 4), 1);
    }

    #[test]
    fn stride_of_32_words_is_32_wavefronts() {
        assert_eq!(wavefronts(&lanes(|l| l * 128), 4, 32, 4), 32);
    }

    #[test]
    fn all_lanes_on_one_word_is_a_broadcast() {
        assert_eq!(wavefronts(&lanes(|_| 64), 4, 32, 4), 1);
    }

    #[test]
    fn n_way_conflicts_follow_the_stride() {
        // Stride of s words hits gcd(s, 32)-way conflicts.
        for (stride, expect) in [(2, 2), (4, 4), (8, 8), (16, 16), (3, 1), (33, 1)] {
            assert_eq!(
                wavefronts(&lanes(|l| l * 4 * stride), 4, 32, 4),
                expect,
                "stride {stride}"
            );
        }
    }

    #[test]
    fn wide_accesses_take_one_wavefront_per_128_bytes() {
        // 32 lanes x 16 B contiguous = 512 B = 4 wavefronts; 8 B = 2.
        assert_eq!(wavefronts(&lanes(|l| l * 16), 16, 32, 4), 4);
        assert_eq!(wavefronts(&lanes(|l| l * 8), 8, 32, 4), 2);
        // 16 B per lane with a 256 B stride: every half-warp hits the same 4 banks 16 times.
        assert_eq!(wavefronts(&lanes(|l| l * 256), 16, 32, 4), 32);
    }

    #[test]
    fn a_broadcast_takes_one_wavefront_a_phase() {
        // Every lane the same 8 bytes: one phase, one word a bank. The same 16 bytes: two
        // half-warp phases (quarter-warps would take 4).
        assert_eq!(wavefronts(&lanes(|_| 64), 8, 32, 4), 1);
        assert_eq!(wavefronts(&lanes(|_| 64), 16, 32, 4), 2);
        assert_eq!(wavefronts(&lanes(|_| 64), 4, 32, 4), 1);
    }

    #[test]
    fn the_contiguous_shortcut_agrees_with_counting_words() {
        // Runs that start on a bank word, or off one, within the port or past it, in order
        // or not: the shortcut (consecutive words) gives what counting gives.
        let count = |a: &[u64], width: u32| {
            let words: std::collections::BTreeSet<u64> = a
                .iter()
                .flat_map(|&x| x / 4..=(x + u64::from(width) - 1) / 4)
                .collect();
            let mut per_bank = [0u32; 32];
            for w in words {
                per_bank[(w % 32) as usize] += 1;
            }
            per_bank.into_iter().max().unwrap().max(1)
        };
        for width in [1u32, 2, 4, 8, 16] {
            for start in [0u64, 2, 4, 64, 126] {
                for lanes in [1usize, 4, 8, 16, 32] {
                    let run: Vec<u64> = (0..lanes as u64)
                        .map(|i| start + i * u64::from(width))
                        .collect();
                    let mut reversed = run.clone();
                    reversed.reverse();
                    for a in [run, reversed] {
                        let fast = phase_wavefronts(a.iter().copied(), width, 32, 4);
                        assert_eq!(fast, count(&a, width), "width {width} start {start} {a:?}");
                    }
                }
            }
        }
    }
}
