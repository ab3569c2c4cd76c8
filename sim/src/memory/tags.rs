//! A set-associative array of lines divided into sectors, the part the L2 ([`crate::memory::l2`])
//! and each SM's L1 ([`crate::sm::l1`]) share: per way its line's tag, the sectors it holds (a
//! mask: a request finds its sectors there or has the missing ones filled, so an isolated
//! sector does not bring in the whole line), when its data is (or will be) present, so that
//! requests for a line whose fill is still in flight wait for that fill instead of fetching it
//! again (miss merging, as MSHRs do), and its replacement state.
//!
//! Replacement is LRU or SRRIP (static re-reference interval prediction, Jaleel et al., ISCA
//! 2010) with 2-bit counters: a hit predicts a line is re-referenced soon, the victim is a line
//! predicted furthest, and new lines are inserted at "long", so lines touched once leave
//! before lines that were re-read (scan resistance). Neither is thrash-resistant: a buffer
//! re-read cyclically that exceeds a set misses almost entirely.

use crate::memory::system::spread;
use std::cell::Cell;

/// How a line's index picks its set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetIndex {
    /// The index folded with its high bits, modulo the sets: consecutive lines fill the sets
    /// evenly, and power-of-two strides do not map onto a few sets.
    Fold,
    /// A multiplicative hash of the index ([`spread`]): consecutive lines land in sets as if
    /// at random, so some sets overflow before the array is full.
    Hash,
}

/// Which way of a full set a new line takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replacement {
    /// The least recently used: a line in use stays however often lines no longer used were
    /// re-read before.
    Lru,
    /// SRRIP: the first way predicted to be re-referenced furthest.
    Srrip,
}

#[derive(Clone, Debug)]
pub struct SectorTags<X = ()> {
    sets: u64,
    ways: usize,
    index: SetIndex,
    replacement: Replacement,
    /// Each set's tags side by side, the only part a lookup scans: a line's complement
    /// ([`tag`]), 0 for an empty way, so that a new array is the allocator's zeroed pages.
    tags: Vec<u64>,
    lookups: u64,
    /// The rest of each way in one record: a hit reads the set's tags and one record, not one
    /// array per field (the L2's 409,600 ways are far larger than the host's caches).
    state: Vec<Way<X>>,
    /// The last two lines prefetched and their sets, the latest first: a lookup comes after
    /// the prefetch of the line that follows it (so that the two overlap), and takes its set
    /// from here rather than dividing again on the way to its tags.
    prefetched: Cell<[(u64, usize); 2]>,
}

/// A way's state beside its tag, and what the cache that owns the array keeps per way (`X`).
/// All zeros is an empty way's state: the L2's 13 MiB of ways are mapped as they are touched,
/// not written when a run starts (a tenth of a millisecond, what a small scenario takes).
#[derive(Clone, Copy, Debug, Default)]
pub struct Way<X> {
    ready: u64,
    /// Replacement state: how far the re-reference prediction value is below distant (SRRIP,
    /// `MAX_RRPV - rrpv`, so 0 is distant), or the lookup that last touched the way (LRU).
    order: u64,
    /// The sectors the way holds (bit k: sector k of the line).
    valid: u8,
    pub extra: X,
}

/// The outcome of one line lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lookup {
    /// The line was there (whichever of its sectors it holds).
    pub hit: bool,
    /// When the line's data is there (a hit on a line still being filled waits for the fill);
    /// 0 for a line just allocated.
    pub ready: u64,
    /// The line's way, for the calls that follow.
    pub slot: usize,
    /// A miss took the way of another line (not an empty one).
    pub replaced: bool,
}

/// The tag of an empty way.
const EMPTY: u64 = 0;

/// The tag of `line`: its complement, never [`EMPTY`] (a line index is an address / line
/// size, far below 2^64 - 1).
fn tag(line: u64) -> u64 {
    !line
}

/// Types whose all-zero bytes are a valid value (their `Default`), so that an array of ways can
/// come from zeroed memory.
///
/// # Safety
/// Every field must be an integer, a `bool` or another `ZeroInit` type.
pub unsafe trait ZeroInit: Copy + Default {}
// SAFETY: no fields.
unsafe impl ZeroInit for () {}

/// `n` ways of all zeros (empty, `X`'s default), from `alloc_zeroed`: the kernel maps the
/// pages as they are first touched.
fn zeroed_ways<X: ZeroInit>(n: usize) -> Vec<Way<X>> {
    let layout = std::alloc::Layout::array::<Way<X>>(n).expect("ways fit in memory");
    if layout.size() == 0 {
        return Vec::new();
    }
    // SAFETY: the layout is non-empty; all-zero bytes are a valid `Way<X>` (integers, and `X`
    // is `ZeroInit`); the vector owns the allocation, made with the global allocator and the
    // layout of `n` ways, as `Vec` frees it.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout).cast::<Way<X>>();
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Vec::from_raw_parts(p, n, n)
    }
}
const MAX_RRPV: u8 = 3;
/// "Long" re-reference interval, one step short of distant.
const LONG_RRPV: u8 = MAX_RRPV - 1;

impl<X: ZeroInit> SectorTags<X> {
    /// An empty array of `lines` lines (at least one set) in sets of `ways`.
    pub fn new(lines: u64, ways: u32, index: SetIndex, replacement: Replacement) -> Self {
        let ways = ways.max(1) as usize;
        let sets = (lines / ways as u64).max(1);
        let n = sets as usize * ways;
        let mut tags = SectorTags {
            sets,
            ways,
            index,
            replacement,
            tags: vec![EMPTY; n],
            lookups: 0,
            state: zeroed_ways(n),
            prefetched: Cell::new([(0, 0); 2]),
        };
        tags.prefetched = Cell::new([(0, tags.set_of(0)); 2]);
        tags
    }

    fn set_of(&self, line: u64) -> usize {
        match self.index {
            SetIndex::Fold => ((line ^ (line >> 13) ^ (line >> 27)) % self.sets) as usize,
            SetIndex::Hash => spread(line, self.sets as usize),
        }
    }

    /// Looks up `line` (a line index, address / line size); on a miss a way predicted to be
    /// re-referenced furthest in the future is given to it, holding no sectors yet (what the
    /// owner keeps of it, `X`, is the owner's to reset).
    pub fn access(&mut self, line: u64) -> Lookup {
        let set = match self.prefetched.get() {
            [_, (before, set)] if before == line => set,
            [(last, set), _] if last == line => set,
            _ => self.set_of(line),
        };
        let base = set * self.ways;
        let ways = base..base + self.ways;
        self.lookups += 1;
        let t = tag(line);
        if let Some(i) = ways.clone().find(|&i| self.tags[i] == t) {
            self.touch(i, 0);
            return Lookup {
                hit: true,
                ready: self.state[i].ready,
                slot: i,
                replaced: false,
            };
        }
        let victim = match ways.clone().find(|&i| self.tags[i] == EMPTY) {
            Some(i) => i,
            None => self.victim(ways),
        };
        let replaced = self.tags[victim] != EMPTY;
        self.tags[victim] = t;
        let way = &mut self.state[victim];
        (way.ready, way.valid) = (0, 0);
        self.touch(victim, LONG_RRPV);
        Lookup {
            hit: false,
            ready: 0,
            slot: victim,
            replaced,
        }
    }

    /// Starts bringing `line`'s set into the host's cache ahead of its lookup.
    pub fn prefetch(&self, line: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let index = self.set_of(line);
            let [last, _] = self.prefetched.get();
            self.prefetched.set([(line, index), last]);
            let set = self.tags.as_ptr().wrapping_add(index * self.ways);
            // SAFETY: a prefetch is only a hint; it never faults, whatever the address.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(set.cast());
                _mm_prefetch::<_MM_HINT_T0>(set.wrapping_add(8).cast());
            }
        }
    }

    /// Way `i` is used now; under SRRIP it is predicted at `rrpv`.
    fn touch(&mut self, i: usize, rrpv: u8) {
        self.state[i].order = match self.replacement {
            Replacement::Lru => self.lookups,
            Replacement::Srrip => u64::from(MAX_RRPV - rrpv),
        };
    }

    /// The way of a full set that a new line takes. SRRIP ages the set until some way is
    /// predicted distant and takes the first such way.
    fn victim(&mut self, ways: std::ops::Range<usize>) -> usize {
        let first = ways.start;
        let set = &mut self.state[ways.clone()];
        let oldest = set.iter().map(|w| w.order);
        let pick = match self.replacement {
            Replacement::Lru => (0..set.len()).min_by_key(|&i| set[i].order),
            Replacement::Srrip => {
                // Aging by the distance of the most distant way (its `order`) brings it to
                // distant (0).
                let age = oldest.min().unwrap_or(0);
                for w in set.iter_mut() {
                    w.order -= age;
                }
                set.iter().position(|w| w.order == 0)
            }
        };
        first + pick.unwrap_or(0)
    }

    /// When way `slot`'s data is there.
    pub fn ready_of(&self, slot: usize) -> u64 {
        self.state[slot].ready
    }

    pub fn set_ready(&mut self, slot: usize, cycle: u64) {
        self.state[slot].ready = cycle;
    }

    /// The sectors of `need` that `slot` lacks, widened to whole groups of `group` sectors (the
    /// level below moves a group at a time); they are marked present (their fill is the
    /// caller's).
    pub fn fill(&mut self, slot: usize, need: u8, group: u32) -> u8 {
        let missing = need & !self.state[slot].valid;
        if missing == 0 {
            return 0;
        }
        let mut fetch = 0u8;
        let whole = ((1u32 << group) - 1) as u8;
        for g in (0..8).step_by(group as usize) {
            if missing & (whole << g) != 0 {
                fetch |= whole << g;
            }
        }
        self.state[slot].valid |= fetch;
        fetch
    }

    /// Marks sectors present without a fill (a write covering them whole).
    pub fn validate(&mut self, slot: usize, sectors: u8) {
        self.state[slot].valid |= sectors;
    }

    /// What the owner keeps of way `slot`.
    pub fn extra(&mut self, slot: usize) -> &mut X {
        &mut self.state[slot].extra
    }

    pub fn extra_ref(&self, slot: usize) -> &X {
        &self.state[slot].extra
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_fills_the_sectors_asked_for_in_whole_groups() {
        let mut t = SectorTags::<()>::new(1 << 13, 16, SetIndex::Fold, Replacement::Srrip);
        let a = t.access(7);
        // Sector 1 alone: its 64-byte half (sectors 0 and 1) comes from below.
        assert_eq!(t.fill(a.slot, 0b0010, 2), 0b0011);
        // Sector 0 is there now; sector 3 brings in the other half.
        assert_eq!(t.fill(a.slot, 0b0001, 2), 0);
        assert_eq!(t.fill(a.slot, 0b1000, 2), 0b1100);
        // Sector by sector: only the one asked for.
        let b = t.access(9);
        t.validate(b.slot, 0b0100);
        assert_eq!(t.fill(b.slot, 0b0110, 1), 0b0010);
    }

    #[test]
    fn a_hit_during_a_fill_waits_for_it() {
        let mut t = SectorTags::<()>::new(1 << 13, 16, SetIndex::Hash, Replacement::Lru);
        let a = t.access(7);
        assert!(!a.hit);
        t.set_ready(a.slot, 900);
        let b = t.access(7);
        assert_eq!((b.hit, b.ready, b.slot), (true, 900, a.slot));
    }

    #[test]
    fn a_full_set_replaces_a_line_predicted_distant() {
        // One set of two ways: line 2, re-read, is kept over line 1.
        let mut t = SectorTags::<()>::new(2, 2, SetIndex::Fold, Replacement::Srrip);
        assert!(!t.access(1).replaced);
        t.access(2);
        t.access(2);
        let c = t.access(3);
        assert!(c.replaced && !c.hit);
        assert!(t.access(2).hit);
        assert!(!t.access(1).hit);
    }

    #[test]
    fn lru_keeps_the_line_in_use_over_lines_reread_before() {
        // One set of two ways. Line 1 was read many times and is done with; line 2 has just
        // come in and is read again after line 3 comes. LRU gives line 3 line 1's way; SRRIP
        // predicts line 1 re-referenced sooner than the new line 2 and gives it line 2's.
        for (replacement, kept) in [(Replacement::Lru, true), (Replacement::Srrip, false)] {
            let mut t = SectorTags::<()>::new(2, 2, SetIndex::Fold, replacement);
            (0..8).for_each(|_| {
                t.access(1);
            });
            t.access(2);
            t.access(3);
            assert_eq!(t.access(2).hit, kept, "{replacement:?}");
        }
    }

    #[test]
    fn hashed_sets_overflow_before_the_array_is_full() {
        // 256 lines of 4 ways: folded, 256 consecutive lines fill every set exactly; hashed,
        // some sets get more than 4 and lose lines on a second pass.
        let second_pass_misses = |index| {
            let mut t = SectorTags::<()>::new(256, 4, index, Replacement::Lru);
            (0..256).for_each(|l| {
                t.access(l);
            });
            (0..256).filter(|&l| !t.access(l).hit).count()
        };
        assert_eq!(second_pass_misses(SetIndex::Fold), 0);
        assert!(second_pass_misses(SetIndex::Hash) > 0);
    }

    #[test]
    fn prefetches_leave_the_lookups_as_they_were() {
        // The same lookups with and without prefetches ahead of them (the sets of the last
        // two prefetched lines are kept), over lines that share sets and lines that do not.
        let lines: Vec<u64> = (0..2000u64).map(|i| (i * 7919) % 3001).collect();
        for index in [SetIndex::Fold, SetIndex::Hash] {
            let mut plain = SectorTags::<()>::new(1 << 10, 4, index, Replacement::Srrip);
            let mut ahead = plain.clone();
            for (i, &line) in lines.iter().enumerate() {
                if let Some(&next) = lines.get(i + 1 + i % 3) {
                    ahead.prefetch(next);
                }
                assert_eq!(ahead.access(line), plain.access(line), "line {line}");
            }
        }
    }
}
