//! The L2 cache: shared by all SMs, set-associative over 128-byte lines of 32-byte sectors,
//! write-back with write-allocate. Its lines, their sector masks, fill times and SRRIP
//! replacement are a [`SectorTags`] array (miss merging, scan resistance: `memory::tags`), the
//! set index folded; this file adds what only the L2 keeps: dirty lines and their write-back,
//! the slice's last read-out of each line, and the hit counts. Lines touched once (a GEMM's C
//! tiles, a stream) leave before lines that were re-read. SRRIP is not thrash-resistant: a
//! buffer re-read cyclically that exceeds the cache misses almost entirely, as under LRU. That is what the H200 does: 132 SMs re-reading a footprint run at L2 speed up
//! to 50 MiB and at DRAM speed from 64 MiB on (calibration/data/h200-mem_knee.csv, l2_footprint:
//! 4176 B/cycle at 50 MiB, 3313 at 56, 2391 at 64), where a thrash-resistant policy (DRRIP)
//! would keep most of a 64 MiB buffer. NVIDIA does not document its policy; on plain re-reads
//! under capacity and on streams this one behaves like LRU.

use crate::memory::tags::{Replacement, SectorTags, SetIndex, ZeroInit};

fn gpc_bit(gpc: u32) -> u32 {
    1 << (gpc % 32)
}

#[derive(Clone, Debug)]
pub struct L2 {
    tags: SectorTags<L2Way>,
    /// Dirty lines in the cache: counted as they change, not by a walk over 409,600 ways.
    dirty: u64,
    hits: u64,
    misses: u64,
}

/// What the L2 keeps of each way beside the tags' own.
#[derive(Clone, Copy, Debug, Default)]
struct L2Way {
    /// When the slice last read the way's data out for a response (0: never), and the GPCs
    /// (bit g: GPC g mod 32) it has sent the line to since the window of that read-out began.
    read_at: u64,
    read_gpcs: u32,
    dirty: bool,
}

// SAFETY: integers and a bool.
unsafe impl ZeroInit for L2Way {}

/// The outcome of one line access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub hit: bool,
    /// When the line's data is in L2 (a hit on a line still being filled waits for the fill).
    pub ready: u64,
    /// Index of the line's way, to record the fill time with [`L2::set_ready`] on a miss.
    pub slot: usize,
    /// A dirty line was evicted and must be written back.
    pub writeback: bool,
}

impl L2 {
    pub fn new(bytes: u64, line_bytes: u64, ways: u32) -> Self {
        L2 {
            tags: SectorTags::new(bytes / line_bytes, ways, SetIndex::Fold, Replacement::Srrip),
            dirty: 0,
            hits: 0,
            misses: 0,
        }
    }

    /// Looks up `line` (a line index, address / line size); on a miss a way predicted to be
    /// re-referenced furthest in the future is replaced.
    pub fn access(&mut self, line: u64, write: bool) -> Access {
        let a = self.tags.access(line);
        let slot = a.slot;
        let way = self.tags.extra(slot);
        if a.hit {
            self.dirty += u64::from(write && !way.dirty);
            way.dirty |= write;
            return Access {
                hit: true,
                ready: a.ready,
                slot,
                writeback: false,
            };
        }
        let writeback = a.replaced && way.dirty;
        self.dirty = self.dirty - u64::from(writeback) + u64::from(write);
        *way = L2Way {
            dirty: write,
            ..L2Way::default()
        };
        Access {
            hit: false,
            ready: 0,
            slot,
            writeback,
        }
    }

    /// Starts bringing `line`'s tags into the host's cache ahead of its lookup.
    pub fn prefetch(&self, line: u64) {
        self.tags.prefetch(line);
    }

    pub fn set_ready(&mut self, slot: usize, cycle: u64) {
        self.tags.set_ready(slot, cycle);
    }

    /// The sectors of `need` that `slot` lacks, widened to whole groups of `group` sectors (DRAM
    /// moves a group at a time); they are marked present (their fill is the caller's).
    pub fn fill(&mut self, slot: usize, need: u8, group: u32) -> u8 {
        self.tags.fill(slot, need, group)
    }

    /// Marks sectors present without a fill (a write covering them whole).
    pub fn validate(&mut self, slot: usize, sectors: u8) {
        self.tags.validate(slot, sectors);
    }

    /// Counts one line access: a hit when none of its sectors had to be filled.
    pub fn count(&mut self, hit: bool) {
        if hit {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
    }

    /// The read-out a read of `slot` for an SM of GPC `gpc` rides on, if any: the line's last
    /// read-out (its cycle), when it was sent to that GPC and the read's own read-out would start
    /// at most `window` cycles after it, at `t` (see `MemSys::access`).
    pub fn shared_read_out(&self, slot: usize, gpc: u32, t: u64, window: u64) -> Option<u64> {
        let way = self.tags.extra_ref(slot);
        (way.read_at > 0 && t <= way.read_at + window && way.read_gpcs & gpc_bit(gpc) != 0)
            .then_some(way.read_at)
    }

    /// Records a read-out of `slot` at `t` sent to GPC `gpc`; one after the window of the last
    /// read-out starts a new one.
    pub fn record_read(&mut self, slot: usize, gpc: u32, t: u64, window: u64) {
        let way = self.tags.extra(slot);
        if way.read_at == 0 || t > way.read_at + window {
            way.read_gpcs = 0;
        }
        way.read_gpcs |= gpc_bit(gpc);
        way.read_at = t;
    }

    /// Forgets the hit and miss counts so far (the preloaded lines of a warm run).
    pub fn clear_counts(&mut self) {
        self.hits = 0;
        self.misses = 0;
    }

    pub fn hits(&self) -> u64 {
        self.hits
    }
    pub fn misses(&self) -> u64 {
        self.misses
    }
    pub fn hit_rate(&self) -> f64 {
        self.hits as f64 / (self.hits + self.misses).max(1) as f64
    }
    /// Dirty lines still in the cache (written back after the kernel).
    pub fn dirty_lines(&self) -> u64 {
        self.dirty
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads whole lines (4 sectors, filled 2 at a time), counting hits as the memory system
    /// does.
    fn read(l2: &mut L2, line: u64) -> Access {
        let a = l2.access(line, false);
        let filled = l2.fill(a.slot, 0b1111, 2);
        l2.count(filled == 0);
        a
    }

    fn sweep(l2: &mut L2, lines: u64, passes: u32) {
        for _ in 0..passes {
            for line in 0..lines {
                read(l2, line);
            }
        }
    }

    #[test]
    fn a_working_set_under_capacity_hits_after_the_first_pass() {
        // 4 MiB cache, 2 MiB working set read 10 times: only the first pass misses.
        let mut l2 = L2::new(4 << 20, 128, 16);
        let lines = (2 << 20) / 128;
        sweep(&mut l2, lines, 10);
        assert_eq!(l2.misses(), lines);
        assert!((l2.hit_rate() - 0.9).abs() < 1e-9);
    }

    #[test]
    fn a_stream_over_capacity_never_hits() {
        // 24 MiB of distinct lines streamed through a 4 MiB cache: nothing is re-read.
        let mut l2 = L2::new(4 << 20, 128, 16);
        sweep(&mut l2, (24 << 20) / 128, 1);
        assert_eq!(l2.hits(), 0);
    }

    #[test]
    fn dirty_victims_are_written_back() {
        let mut l2 = L2::new(128 * 2, 128, 2); // one set of two ways
        assert!(!l2.access(1, true).writeback);
        l2.access(2, false);
        l2.access(2, false); // 2 re-referenced: kept over 1
        assert!(l2.access(3, false).writeback); // evicts dirty line 1
        assert!(l2.access(2, false).hit);
        assert!(!l2.access(4, false).writeback); // evicts clean line 3
        assert_eq!(l2.dirty_lines(), 0);
    }

    #[test]
    fn a_reused_set_survives_a_scan() {
        // 2 MiB read twice (so predicted reusable), then a 3 MiB write-once scan, then the
        // 2 MiB again: it stays (LRU would keep only 1 MiB of it in a 4 MiB cache).
        let mut l2 = L2::new(4 << 20, 128, 16);
        let hot = (2 << 20) / 128;
        sweep(&mut l2, hot, 2);
        for line in 0..(3 << 20) / 128 {
            l2.access(1 << 30 | line, true);
        }
        let before = l2.hits();
        sweep(&mut l2, hot, 1);
        let kept = (l2.hits() - before) as f64 / hot as f64;
        assert!(kept > 0.9, "{kept}");
    }

    #[test]
    fn a_cyclic_set_over_capacity_thrashes() {
        // 5 MiB read cyclically through a 4 MiB cache: as under LRU (and on the H200), later
        // passes find almost nothing.
        let mut l2 = L2::new(4 << 20, 128, 16);
        let lines = (5 << 20) / 128;
        sweep(&mut l2, lines, 2);
        let before = (l2.hits(), l2.misses());
        sweep(&mut l2, lines, 8);
        let hits = (l2.hits() - before.0) as f64;
        let rate = hits / (hits + (l2.misses() - before.1) as f64);
        assert!(rate < 0.05, "{rate}");
    }
}
