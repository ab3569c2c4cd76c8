//! The L2 cache: shared by all SMs, set-associative over 128-byte lines with LRU replacement,
//! write-back with write-allocate. Each line remembers when its data is (or will be) present, so
//! requests for a line whose fill is still in flight wait for that fill instead of going to DRAM
//! again (miss merging, as MSHRs do).
//!
//! LRU: the working sets of tiled kernels are re-read within short reuse distances, which LRU
//! captures; it is also the policy whose hit rates have closed forms (tested below).

#[derive(Clone, Debug)]
pub struct L2 {
    sets: u64,
    ways: usize,
    tags: Vec<u64>,
    last_use: Vec<u64>,
    ready: Vec<u64>,
    dirty: Vec<bool>,
    clock: u64,
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

impl L2 {
    pub fn new(bytes: u64, line_bytes: u64, ways: u32) -> Self {
        let ways = ways.max(1) as usize;
        let sets = (bytes / line_bytes / ways as u64).max(1);
        let n = sets as usize * ways;
        L2 {
            sets,
            ways,
            tags: vec![INVALID; n],
            last_use: vec![0; n],
            ready: vec![0; n],
            dirty: vec![false; n],
            clock: 0,
            hits: 0,
            misses: 0,
        }
    }

    /// The set of a line: a fold of high address bits keeps power-of-two strides from mapping
    /// onto a few sets.
    fn set_of(&self, line: u64) -> usize {
        ((line ^ (line >> 13) ^ (line >> 27)) % self.sets) as usize
    }

    /// Looks up `line` (a line index, address / line size); on a miss the LRU way is replaced.
    pub fn access(&mut self, line: u64, write: bool) -> Access {
        self.clock += 1;
        let base = self.set_of(line) * self.ways;
        let ways = base..base + self.ways;
        if let Some(i) = ways.clone().find(|&i| self.tags[i] == line) {
            self.hits += 1;
            self.last_use[i] = self.clock;
            self.dirty[i] |= write;
            return Access {
                hit: true,
                ready: self.ready[i],
                slot: i,
                writeback: false,
            };
        }
        self.misses += 1;
        let victim = ways
            .min_by_key(|&i| (self.tags[i] != INVALID, self.last_use[i]))
            .expect("a set has at least one way");
        let writeback = self.tags[victim] != INVALID && self.dirty[victim];
        self.tags[victim] = line;
        self.last_use[victim] = self.clock;
        self.dirty[victim] = write;
        self.ready[victim] = 0;
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

    fn sweep(l2: &mut L2, lines: u64, passes: u32) {
        for _ in 0..passes {
            for line in 0..lines {
                l2.access(line, false);
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
        // 8 MiB streamed through a 4 MiB LRU cache, repeatedly: every access misses.
        let mut l2 = L2::new(4 << 20, 128, 16);
        sweep(&mut l2, (8 << 20) / 128, 3);
        assert!(l2.hit_rate() < 0.01, "{}", l2.hit_rate());
    }

    #[test]
    fn dirty_victims_are_written_back() {
        let mut l2 = L2::new(128 * 2, 128, 2); // one set of two ways
        assert!(!l2.access(1, true).writeback);
        l2.access(2, false);
        l2.access(1, false); // 2 is now LRU
        assert!(!l2.access(3, false).writeback); // evicts clean line 2
        assert!(l2.access(4, false).writeback); // evicts dirty line 1
        assert_eq!(l2.dirty_lines(), 0);
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
