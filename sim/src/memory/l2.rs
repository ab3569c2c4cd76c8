//! The L2 cache: shared by all SMs, set-associative over 128-byte lines of 32-byte sectors,
//! write-back with write-allocate. A line holds the sectors that were filled or written (a
//! mask): a request finds its sectors there or has the missing ones filled, so an isolated
//! sector does not bring in the whole line. Each line remembers when its data is (or will be)
//! present, so requests for a line whose fill is still in flight wait for that fill instead of
//! going to DRAM again (miss merging, as MSHRs do).
//!
//! Replacement is SRRIP (static re-reference interval prediction, Jaleel et al., ISCA 2010)
//! with 2-bit counters: a hit predicts a line is re-referenced soon, the victim is a line
//! predicted furthest, and new lines are inserted at "long", so lines touched once (a GEMM's C
//! tiles, a stream) leave before lines that were re-read (scan resistance). It is not
//! thrash-resistant: a buffer re-read cyclically that exceeds the cache misses almost entirely,
//! as under LRU. That is what the H200 does: 132 SMs re-reading a footprint run at L2 speed up
//! to 50 MiB and at DRAM speed from 64 MiB on (calibration/data/h200-mem_knee.csv, l2_footprint:
//! 4176 B/cycle at 50 MiB, 3313 at 56, 2391 at 64), where a thrash-resistant policy (DRRIP)
//! would keep most of a 64 MiB buffer. NVIDIA does not document its policy; on plain re-reads
//! under capacity and on streams this one behaves like LRU.

#[derive(Clone, Debug)]
pub struct L2 {
    sets: u64,
    ways: usize,
    tags: Vec<u64>,
    /// Re-reference prediction value per way: 0 = soon .. MAX_RRPV = distant.
    rrpv: Vec<u8>,
    ready: Vec<u64>,
    /// The sectors each way holds (bit k: sector k of the line).
    valid: Vec<u8>,
    /// When the slice last read each way's data out for a response (0: never), and the GPCs
    /// (bit g: GPC g mod 32) it has sent the line to since the window of that read-out began.
    read_at: Vec<u64>,
    read_gpcs: Vec<u32>,
    dirty: Vec<bool>,
    hits: u64,
    misses: u64,
}

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

const INVALID: u64 = u64::MAX;

fn gpc_bit(gpc: u32) -> u32 {
    1 << (gpc % 32)
}
const MAX_RRPV: u8 = 3;
/// "Long" re-reference interval, one step short of distant.
const LONG_RRPV: u8 = MAX_RRPV - 1;

impl L2 {
    pub fn new(bytes: u64, line_bytes: u64, ways: u32) -> Self {
        let ways = ways.max(1) as usize;
        let sets = (bytes / line_bytes / ways as u64).max(1);
        let n = sets as usize * ways;
        L2 {
            sets,
            ways,
            tags: vec![INVALID; n],
            rrpv: vec![MAX_RRPV; n],
            ready: vec![0; n],
            valid: vec![0; n],
            read_at: vec![0; n],
            read_gpcs: vec![0; n],
            dirty: vec![false; n],
            hits: 0,
            misses: 0,
        }
    }

    /// The set of a line: a fold of high address bits keeps power-of-two strides from mapping
    /// onto a few sets.
    fn set_of(&self, line: u64) -> usize {
        ((line ^ (line >> 13) ^ (line >> 27)) % self.sets) as usize
    }

    /// Looks up `line` (a line index, address / line size); on a miss a way predicted to be
    /// re-referenced furthest in the future is replaced.
    pub fn access(&mut self, line: u64, write: bool) -> Access {
        let set = self.set_of(line);
        let base = set * self.ways;
        let ways = base..base + self.ways;
        if let Some(i) = ways.clone().find(|&i| self.tags[i] == line) {
            self.rrpv[i] = 0;
            self.dirty[i] |= write;
            return Access {
                hit: true,
                ready: self.ready[i],
                slot: i,
                writeback: false,
            };
        }
        // An empty way if there is one; else age the set until some way is predicted distant
        // and take the first such way.
        let victim = match ways.clone().find(|&i| self.tags[i] == INVALID) {
            Some(i) => i,
            None => {
                let oldest = ways.clone().map(|i| self.rrpv[i]).max().unwrap_or(MAX_RRPV);
                let age = MAX_RRPV - oldest;
                for i in ways.clone() {
                    self.rrpv[i] += age;
                }
                ways.clone()
                    .find(|&i| self.rrpv[i] == MAX_RRPV)
                    .unwrap_or(base)
            }
        };
        let writeback = self.tags[victim] != INVALID && self.dirty[victim];
        self.tags[victim] = line;
        self.rrpv[victim] = LONG_RRPV;
        self.dirty[victim] = write;
        self.ready[victim] = 0;
        self.valid[victim] = 0;
        self.read_at[victim] = 0;
        self.read_gpcs[victim] = 0;
        Access {
            hit: false,
            ready: 0,
            slot: victim,
            writeback,
        }
    }

    pub fn set_ready(&mut self, slot: usize, cycle: u64) {
        self.ready[slot] = cycle;
    }

    /// The sectors of `need` that `slot` lacks, widened to whole groups of `group` sectors (DRAM
    /// moves a group at a time); they are marked present (their fill is the caller's).
    pub fn fill(&mut self, slot: usize, need: u8, group: u32) -> u8 {
        let missing = need & !self.valid[slot];
        let mut fetch = 0u8;
        let whole = ((1u32 << group) - 1) as u8;
        for g in (0..8).step_by(group as usize) {
            if missing & (whole << g) != 0 {
                fetch |= whole << g;
            }
        }
        self.valid[slot] |= fetch;
        fetch
    }

    /// Marks sectors present without a fill (a write covering them whole).
    pub fn validate(&mut self, slot: usize, sectors: u8) {
        self.valid[slot] |= sectors;
    }

    /// Counts one line access: a hit when none of its sectors had to be filled.
    pub fn count(&mut self, hit: bool) {
        if hit {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
    }

    /// Whether a read of `slot` for an SM of GPC `gpc` at `t` rides on a read-out already sent
    /// to that GPC within `window` cycles of the last one (see `MemSys::access`).
    pub fn shares_read(&self, slot: usize, gpc: u32, t: u64, window: u64) -> bool {
        let last = self.read_at[slot];
        last > 0 && t <= last + window && self.read_gpcs[slot] & gpc_bit(gpc) != 0
    }

    /// Records a read-out of `slot` at `t` sent to GPC `gpc`; one after the window of the last
    /// read-out starts a new one.
    pub fn record_read(&mut self, slot: usize, gpc: u32, t: u64, window: u64) {
        let last = self.read_at[slot];
        if last == 0 || t > last + window {
            self.read_gpcs[slot] = 0;
        }
        self.read_gpcs[slot] |= gpc_bit(gpc);
        self.read_at[slot] = t;
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
        self.dirty.iter().filter(|&&d| d).count() as u64
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

    #[test]
    fn a_line_fills_the_sectors_asked_for_in_whole_groups() {
        let mut l2 = L2::new(1 << 20, 128, 16);
        let a = l2.access(7, false);
        // Sector 1 alone: its 64-byte half (sectors 0 and 1) comes from DRAM.
        assert_eq!(l2.fill(a.slot, 0b0010, 2), 0b0011);
        // Sector 0 is there now; sector 3 brings in the other half.
        assert_eq!(l2.fill(a.slot, 0b0001, 2), 0);
        assert_eq!(l2.fill(a.slot, 0b1000, 2), 0b1100);
        // A write covering sector 2 whole needs no fill; the line is complete.
        let b = l2.access(9, true);
        l2.validate(b.slot, 0b0100);
        assert_eq!(l2.fill(b.slot, 0b0100, 2), 0);
        assert_eq!(l2.fill(b.slot, 0b1111, 4), 0b1111);
    }

    #[test]
    fn a_hit_during_a_fill_waits_for_it() {
        let mut l2 = L2::new(1 << 20, 128, 16);
        let a = l2.access(7, false);
        assert!(!a.hit);
        l2.set_ready(a.slot, 900);
        let b = l2.access(7, false);
        assert_eq!((b.hit, b.ready), (true, 900));
    }
}
