//! The engine's one event queue, keyed by (cycle, sequence number), so events at the same cycle
//! pop in insertion order — a total, reproducible order.
//!
//! Nearly every event is due within a few thousand cycles of the clock, so those wait in a
//! calendar: a ring of [`WINDOW`] buckets, one per cycle from `base`, each a list in push order,
//! and a bitset of the buckets that hold events. A push or pop there is a few operations where
//! a binary heap of thousands of events took a dozen levels (a tenth of a whole-GPU GEMM's
//! time). Events outside the window (further ahead, or pushed for a cycle before `base`) go to
//! a binary heap keyed by (cycle, seq). `base` only moves forward, so an event of the heap is
//! always older (a lower seq) than the ring's events of its cycle: pushed while its cycle was
//! beyond the window, before any event of that cycle went to the ring. Popping the heap first
//! on a tie in cycle is therefore the (cycle, seq) order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Cycles the calendar covers from `base` (a power of two).
const WINDOW: usize = 4096;
/// No node: the end of a bucket's list or of the free list.
const NIL: u32 = u32::MAX;

#[derive(Debug)]
pub struct EventQueue<E> {
    /// The first cycle the ring covers: every event in the ring is due at or after it.
    base: u64,
    /// Per bucket (cycle % WINDOW), the first and last node of its list.
    head: Vec<u32>,
    tail: Vec<u32>,
    /// Buckets with events, bit `b % 64` of word `b / 64`.
    occupied: Vec<u64>,
    /// The ring's events and each one's successor in its bucket (or in the free list).
    nodes: Vec<(E, u32)>,
    free: u32,
    in_ring: usize,
    heap: BinaryHeap<Reverse<(u64, u64, Entry<E>)>>,
    seq: u64,
}

/// Wraps an event so the heap orders by (cycle, seq) only.
#[derive(Debug)]
struct Entry<E>(E);

impl<E> PartialEq for Entry<E> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            base: 0,
            head: vec![NIL; WINDOW],
            tail: vec![NIL; WINDOW],
            occupied: vec![0; WINDOW / 64],
            nodes: Vec::new(),
            free: NIL,
            in_ring: 0,
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn push(&mut self, cycle: u64, event: E) {
        if cycle >= self.base && cycle - self.base < WINDOW as u64 {
            let node = if self.free == NIL {
                self.nodes.push((event, NIL));
                (self.nodes.len() - 1) as u32
            } else {
                let node = self.free;
                self.free = self.nodes[node as usize].1;
                self.nodes[node as usize] = (event, NIL);
                node
            };
            let b = cycle as usize % WINDOW;
            match self.tail[b] {
                NIL => {
                    self.head[b] = node;
                    self.occupied[b / 64] |= 1 << (b % 64);
                }
                last => self.nodes[last as usize].1 = node,
            }
            self.tail[b] = node;
            self.in_ring += 1;
        } else {
            self.heap.push(Reverse((cycle, self.seq, Entry(event))));
        }
        self.seq += 1;
    }

    /// The cycle of the ring's earliest event (the buckets from `base` to it are empty).
    fn ring_first(&self) -> Option<u64> {
        if self.in_ring == 0 {
            return None;
        }
        let start = self.base as usize % WINDOW;
        let mut word = start / 64;
        // The first word only from the start's bit; then whole words around the ring, back to
        // the start's word for the bits below it.
        let mut bits = self.occupied[word] & (!0u64 << (start % 64));
        while bits == 0 {
            word = (word + 1) % self.occupied.len();
            bits = self.occupied[word];
        }
        let b = word * 64 + bits.trailing_zeros() as usize;
        Some(self.base + ((b + WINDOW - start) % WINDOW) as u64)
    }

    pub fn peek_cycle(&self) -> Option<u64> {
        let heap = self.heap.peek().map(|Reverse((c, _, _))| *c);
        match (self.ring_first(), heap) {
            (Some(r), Some(h)) => Some(r.min(h)),
            (r, h) => r.or(h),
        }
    }

    /// Pops the earliest event if it is due at or before `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<(u64, E)> {
        let ring = self.ring_first();
        // The ring follows the clock, but no further than its first event, so that the
        // cycles the clock books next land in it.
        self.base = self.base.max(ring.unwrap_or(now).min(now));
        let heap = self.heap.peek().map(|Reverse((c, _, _))| *c);
        match (ring, heap) {
            // On a tie the heap's event is the older (see the module's summary).
            (Some(r), Some(h)) if h <= r => self.pop_heap(now),
            (Some(r), _) if r <= now => {
                let b = r as usize % WINDOW;
                let node = self.head[b];
                let (event, next) = self.nodes[node as usize];
                self.head[b] = next;
                if next == NIL {
                    self.tail[b] = NIL;
                    self.occupied[b / 64] &= !(1 << (b % 64));
                }
                self.nodes[node as usize].1 = self.free;
                self.free = node;
                self.in_ring -= 1;
                Some((r, event))
            }
            (Some(_), _) => None,
            (None, _) => self.pop_heap(now),
        }
    }

    fn pop_heap(&mut self, now: u64) -> Option<(u64, E)> {
        match self.heap.peek() {
            Some(Reverse((c, _, _))) if *c <= now => {
                self.heap.pop().map(|Reverse((c, _, Entry(e)))| (c, e))
            }
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        self.in_ring + self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Events pushed so far.
    pub fn pushed(&self) -> u64 {
        self.seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_cycle_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(5, "b");
        q.push(3, "a");
        q.push(5, "c");
        q.push(5, "d");
        assert_eq!(q.pop_due(2), None);
        assert_eq!(q.pop_due(10), Some((3, "a")));
        assert_eq!(q.pop_due(10), Some((5, "b")));
        assert_eq!(q.pop_due(10), Some((5, "c")));
        assert_eq!(q.pop_due(10), Some((5, "d")));
        assert!(q.is_empty());
        assert_eq!(q.pushed(), 4);
    }

    /// The calendar against a plain (cycle, seq) heap: random pushes near and far ahead of a
    /// clock that steps and jumps, some behind it, popped as the engine pops them.
    #[test]
    fn the_calendar_pops_in_the_order_of_a_heap() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut q = EventQueue::default();
        let mut reference = BinaryHeap::new();
        let (mut now, mut seq) = (0u64, 0u64);
        let mut popped = Vec::new();
        for _ in 0..200_000 {
            for _ in 0..rng.random_range(0..3) {
                let ahead = match rng.random_range(0..10) {
                    0 => rng.random_range(0..3 * WINDOW as u64),
                    1 => 0,
                    _ => rng.random_range(0..64),
                };
                let cycle = if rng.random_range(0..50) == 0 {
                    now.saturating_sub(5)
                } else {
                    now + ahead
                };
                q.push(cycle, seq);
                reference.push(Reverse((cycle, seq)));
                seq += 1;
            }
            while let Some((c, e)) = q.pop_due(now) {
                let Reverse(expect) = reference.pop().unwrap();
                assert_eq!((c, e), expect);
                popped.push(e);
            }
            assert_eq!(q.len(), reference.len());
            now = match q.peek_cycle() {
                Some(t) if rng.random_range(0..4) == 0 => t.max(now + 1),
                _ => now + 1,
            };
            assert_eq!(q.peek_cycle(), reference.peek().map(|Reverse((c, _))| *c));
        }
        assert!(popped.len() > 100_000);
    }
}
