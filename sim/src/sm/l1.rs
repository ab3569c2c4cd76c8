//! The SM's L1 data cache as global loads use it (plain `ld.global`, `.ca`: `LdGlobal` with
//! `cache: L1`). Set-associative over 128-byte lines of 32-byte sectors, its lines kept as the
//! L2 keeps its own ([`SectorTags`]: sector masks, miss merging), the set index hashed and the
//! least recently used line replaced (the preset's `l1` section says why).
//! Its size is what the kernel leaves of the SM's unified L1/shared-memory array
//! (`l1.unified_bytes`): the driver carves out the smallest shared-memory size
//! (`l1.carveouts`) that holds the resident CTAs' shared memory and the system's reserve
//! (`l1.smem_reserved_per_cta`), as [`crate::gpu::preset::L1::cache_bytes`] computes. It starts
//! empty with each kernel, as the chip's L1 does.
//!
//! A load looks up each line it touches: the sectors present (or being filled) hit, the
//! missing ones are filled from L2, sector by sector (`crate::sm::lsu` makes the request and
//! records when the fill arrives). Hit rates count sectors, as Nsight Compute's
//! `l1tex__t_sector_hit_rate` does. Stores, `.cg` loads, cp.async, atomics and TMA do not go
//! through it: the L1 is write-through for global memory, so a store's bytes reach L2 as
//! before and a line the L1 holds takes them too (it stays valid, with the stored bytes);
//! nothing is allocated for a store, and no load of this SM reads stale data. Register spills
//! have their own model of the L1 (`crate::sm::local`).

use crate::engine::crossing::PENDING;
use crate::memory::tags::{Replacement, SectorTags, SetIndex};

/// One SM's L1 data cache for the present kernel.
#[derive(Clone, Debug)]
pub(crate) struct L1Cache {
    /// Allocated at the first lookup: most kernels make none.
    tags: Option<SectorTags>,
    lines: u64,
    ways: u32,
    /// Sectors looked up that were present (or being filled), and that were not.
    pub hits: u64,
    pub misses: u64,
}

/// What one line's lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LineLookup {
    /// The sectors asked for that the line lacked; they are now being filled.
    pub missing: u8,
    /// When the sectors the line held are there (0: none were, or long ago).
    pub ready: u64,
    /// The line's way, to record when the missing sectors arrive ([`L1Cache::filled`]).
    pub slot: usize,
}

impl L1Cache {
    /// An empty cache of `bytes` (0: none) in lines of `line_bytes`, sets of `ways`.
    pub fn new(bytes: u64, line_bytes: u64, ways: u32) -> Self {
        L1Cache {
            tags: None,
            lines: bytes / line_bytes.max(1),
            ways,
            hits: 0,
            misses: 0,
        }
    }

    /// Whether the SM has an L1 data cache for this kernel.
    pub fn enabled(&self) -> bool {
        self.lines > 0
    }

    /// Looks up sectors `touched` of `line` (a line index); the missing ones are allocated,
    /// their fill the caller's.
    pub fn lookup(&mut self, line: u64, touched: u8) -> LineLookup {
        let (lines, ways) = (self.lines, self.ways);
        let tags = self
            .tags
            .get_or_insert_with(|| SectorTags::new(lines, ways, SetIndex::Hash, Replacement::Lru));
        let a = tags.access(line);
        let missing = tags.fill(a.slot, touched, 1);
        self.hits += u64::from((touched & !missing).count_ones());
        self.misses += u64::from(missing.count_ones());
        LineLookup {
            missing,
            ready: a.ready,
            slot: a.slot,
        }
    }

    /// The missing sectors of a lookup are on their way from L2 as fill `fill` (an id of its
    /// shard's, `Shard::fills`): until it is answered, the way's data is there at
    /// `PENDING + fill`.
    pub fn filling(&mut self, l: &LineLookup, fill: u32) {
        if let Some(tags) = &mut self.tags {
            tags.set_ready(l.slot, PENDING + u64::from(fill));
        }
    }

    /// Fill `fill` of way `slot` ([`L1Cache::filling`]) is there at `at`, and so the way's
    /// data, unless a later fill of the way is on its way (that one waits for this one too).
    pub fn answer_fill(&mut self, slot: usize, fill: u32, at: u64) {
        if let Some(tags) = &mut self.tags {
            if tags.ready_of(slot) == PENDING + u64::from(fill) {
                tags.set_ready(slot, at);
            }
        }
    }
}

/// The runs of consecutive set bits of a sector mask: (first sector, sectors), in order.
pub(crate) fn runs(mask: u8) -> impl Iterator<Item = (u32, u32)> {
    let mut rest = mask;
    std::iter::from_fn(move || {
        if rest == 0 {
            return None;
        }
        let first = rest.trailing_zeros();
        let count = (rest >> first).trailing_ones();
        rest &= !(((1u32 << count) - 1) << first) as u8;
        Some((first, count))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mask_splits_into_runs_of_sectors() {
        assert_eq!(runs(0b1111).collect::<Vec<_>>(), [(0, 4)]);
        assert_eq!(runs(0b1001).collect::<Vec<_>>(), [(0, 1), (3, 1)]);
        assert_eq!(runs(0b0110_1100).collect::<Vec<_>>(), [(2, 2), (5, 2)]);
        assert_eq!(runs(0b1000_0000).collect::<Vec<_>>(), [(7, 1)]);
        assert_eq!(runs(0).count(), 0);
    }

    /// The missing sectors of lookup `l` come as fill `id`, answered at `at`.
    fn fill(l1: &mut L1Cache, l: &LineLookup, id: u32, at: u64) {
        l1.filling(l, id);
        l1.answer_fill(l.slot, id, at.max(l.ready));
    }

    /// Reads `lines` whole lines (4 sectors) in order, `passes` times, each fill arriving at
    /// once; returns the hit rate of the last pass.
    fn passes(l1: &mut L1Cache, lines: u64, passes: u32) -> f64 {
        let mut before = (0, 0);
        for _ in 0..passes {
            before = (l1.hits, l1.misses);
            for line in 0..lines {
                let l = l1.lookup(line, 0b1111);
                fill(l1, &l, 0, 0);
            }
        }
        let hits = (l1.hits - before.0) as f64;
        hits / (hits + (l1.misses - before.1) as f64)
    }

    #[test]
    fn lines_that_fit_hit_after_the_first_pass() {
        // 192 KiB through 248 KiB of 4 ways: no set overflows.
        let mut l1 = L1Cache::new(248 << 10, 128, 4);
        assert_eq!(passes(&mut l1, (192 << 10) / 128, 3), 1.0);
        assert_eq!(l1.misses, 4 * (192 << 10) / 128);
    }

    #[test]
    fn the_knee_is_gradual_and_a_footprint_far_over_it_misses() {
        // Hashed sets overflow one by one past ~200 KiB of a 248 KiB cache; at 384 KiB every
        // set thrashes.
        let rate = |kib: u64| passes(&mut L1Cache::new(248 << 10, 128, 4), (kib << 10) / 128, 4);
        let (at224, at256, at384) = (rate(224), rate(256), rate(384));
        assert!(at224 > 0.6 && at224 < 1.0, "{at224}");
        assert!(at256 > 0.2 && at256 < at224, "{at256}");
        assert!(at384 < 0.05, "{at384}");
    }

    #[test]
    fn sectors_fill_one_by_one_and_count_as_sectors() {
        let mut l1 = L1Cache::new(1 << 15, 128, 4);
        // One word of sector 2: only that sector comes in.
        let a = l1.lookup(5, 0b0100);
        assert_eq!(a.missing, 0b0100);
        // While the fill is on its way, a lookup sees its id; once answered, its time.
        l1.filling(&a, 7);
        assert_eq!(l1.lookup(5, 0b0100).ready, PENDING + 7);
        l1.answer_fill(a.slot, 7, 500);
        // The whole line: sector 2 hits (its fill arrives at 500), the other three miss.
        let b = l1.lookup(5, 0b1111);
        assert_eq!((b.missing, b.ready, b.slot), (0b1011, 500, a.slot));
        fill(&mut l1, &b, 8, 300);
        assert_eq!(l1.lookup(5, 0b0001).ready, 500);
        assert_eq!((l1.hits, l1.misses), (3, 4));
    }

    #[test]
    fn a_cache_of_no_bytes_is_off() {
        assert!(!L1Cache::new(0, 128, 4).enabled());
        assert!(L1Cache::new(28 << 10, 128, 4).enabled());
    }
}
