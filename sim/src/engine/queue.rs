//! The engine's one event queue: a binary heap keyed by (cycle, sequence number), so events at
//! the same cycle pop in insertion order — a total, reproducible order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Debug)]
pub struct EventQueue<E> {
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
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub fn push(&mut self, cycle: u64, event: E) {
        self.heap.push(Reverse((cycle, self.seq, Entry(event))));
        self.seq += 1;
    }

    pub fn peek_cycle(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((c, _, _))| *c)
    }

    /// Pops the earliest event if it is due at or before `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<(u64, E)> {
        if self.peek_cycle()? <= now {
            self.heap.pop().map(|Reverse((c, _, Entry(e)))| (c, e))
        } else {
            None
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
}
