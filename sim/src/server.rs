//! A bandwidth-limited resource as a "next free" server: a request of `c` cycles of work at
//! time `t` starts at `max(t, next_free)` and holds the resource until `start + c`. Requests
//! must be made in non-decreasing time order (the engine makes them from events in time order),
//! so the server is FIFO and its busy time never exceeds elapsed time.

#[derive(Clone, Debug, Default)]
pub struct Server {
    next_free: u64,
    busy: u64,
}

impl Server {
    /// Books `cycles` of work requested at `now`; returns (start, end).
    pub fn book(&mut self, now: u64, cycles: u64) -> (u64, u64) {
        let start = now.max(self.next_free);
        let end = start + cycles;
        self.next_free = end;
        self.busy += cycles;
        (start, end)
    }

    /// The first cycle at which a new request would start without waiting.
    pub fn next_free(&self) -> u64 {
        self.next_free
    }

    /// Cycles of work booked so far.
    pub fn busy(&self) -> u64 {
        self.busy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_requests_back_to_back() {
        let mut s = Server::default();
        assert_eq!(s.book(10, 5), (10, 15));
        assert_eq!(s.book(12, 5), (15, 20)); // waits for the first
        assert_eq!(s.book(30, 1), (30, 31)); // idle gap is not busy
        assert_eq!(s.busy(), 11);
        assert_eq!(s.next_free(), 31);
    }

    #[test]
    fn saturated_throughput_equals_rate() {
        // 1000 requests of 3 cycles arriving every cycle: the server finishes at 3000.
        let mut s = Server::default();
        let mut end = 0;
        for t in 0..1000 {
            end = s.book(t, 3).1;
        }
        assert_eq!(end, 3000);
        assert_eq!(s.busy(), 3000);
    }
}
