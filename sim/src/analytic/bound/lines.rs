//! The L2 fill units (`memory.hbm.fetch_bytes`, called lines here) a kernel touches, to count
//! the bytes that must cross HBM.

use std::collections::HashMap;

/// Lines per page of [`Lines`]: 4096 lines (512 KiB of addresses at 128-byte lines).
const PAGE_WORDS: usize = 64;
const PAGE_LINES: u64 = PAGE_WORDS as u64 * 64;

/// Per-line flags of one page of addresses.
#[derive(Clone)]
struct Page {
    /// Touched by a read or a partial-line write: a miss on it fills from HBM.
    partial: [u64; PAGE_WORDS],
    /// Written whole by one request: a miss on it needs no fill.
    whole: [u64; PAGE_WORDS],
    /// Written: dirty in L2 until written back.
    dirty: [u64; PAGE_WORDS],
}

/// The set of lines the kernel touches, as sparse bitmaps (a sorted set of every touch would
/// hold one entry per line of a gigabyte stream).
#[derive(Default)]
pub(super) struct Lines {
    index: HashMap<u64, usize>,
    pages: Vec<Page>,
    /// The last page used: streams touch one page many times in a row.
    last: Option<(u64, usize)>,
}

#[derive(Clone, Copy)]
pub(super) enum Touch {
    Read,
    PartialWrite,
    WholeWrite,
}

impl Lines {
    pub(super) fn mark(&mut self, line: u64, t: Touch) {
        let key = line / PAGE_LINES;
        let i = match self.last {
            Some((k, i)) if k == key => i,
            _ => {
                let pages = &mut self.pages;
                let i = *self.index.entry(key).or_insert_with(|| {
                    pages.push(Page {
                        partial: [0; PAGE_WORDS],
                        whole: [0; PAGE_WORDS],
                        dirty: [0; PAGE_WORDS],
                    });
                    pages.len() - 1
                });
                self.last = Some((key, i));
                i
            }
        };
        let page = &mut self.pages[i];
        let bit = line % PAGE_LINES;
        let (w, m) = ((bit / 64) as usize, 1u64 << (bit % 64));
        match t {
            Touch::Read => page.partial[w] |= m,
            Touch::PartialWrite => {
                page.partial[w] |= m;
                page.dirty[w] |= m;
            }
            Touch::WholeWrite => {
                page.whole[w] |= m;
                page.dirty[w] |= m;
            }
        }
    }

    /// (lines that must be filled, lines written). A line both written whole and touched
    /// otherwise needs no fill if the whole write came first, which a walk without timing cannot
    /// tell: it is not counted, keeping the bound a lower bound.
    pub(super) fn counts(&self) -> (u64, u64) {
        let mut fills = 0;
        let mut dirty = 0;
        for p in &self.pages {
            for w in 0..PAGE_WORDS {
                fills += (p.partial[w] & !p.whole[w]).count_ones() as u64;
                dirty += p.dirty[w].count_ones() as u64;
            }
        }
        (fills, dirty)
    }
}

/// A sparse set of indices (the 32-byte sectors cached loads have read), as pages of bits.
#[derive(Default)]
pub(super) struct Seen {
    index: HashMap<u64, usize>,
    pages: Vec<[u64; PAGE_WORDS]>,
}

impl Seen {
    /// Adds `i`; whether it was not there before.
    pub(super) fn insert(&mut self, i: u64) -> bool {
        let pages = &mut self.pages;
        let p = *self.index.entry(i / PAGE_LINES).or_insert_with(|| {
            pages.push([0; PAGE_WORDS]);
            pages.len() - 1
        });
        let bit = i % PAGE_LINES;
        let (w, m) = ((bit / 64) as usize, 1u64 << (bit % 64));
        let new = self.pages[p][w] & m == 0;
        self.pages[p][w] |= m;
        new
    }
}
