//! A bandwidth-limited resource as a "next free" server: a request of `c` cycles of work at
//! time `t` starts at `max(t, next_free)` and holds the resource until `start + c`. Requests are
//! served in the order they are booked, so queueing is exact when bookings come in time order.
//! The shared-memory ports are booked only from events and issues at the current cycle for
//! that reason; the L2 slices and HBM channels are booked when a request is made, for the cycle
//! it reaches them, so their queueing is approximate. Busy time never exceeds the span from the
//! first booking to the kernel's end, which covers every booked end.

#[derive(Clone, Debug, Default)]
pub struct Server {
    next_free: u64,
    busy: u64,
}

impl Server {
    /// Books `cycles` of work requested at `now`; returns (start, end).
    pub fn book(&mut self, now: u64, cycles: u64) -> (u64, u64) {
        // Saturating: a time past u64 is past any cycle limit, never a wrap to an early one.
        let start = now.max(self.next_free);
        let end = start.saturating_add(cycles);
        self.next_free = end;
        self.busy = self.busy.saturating_add(cycles);
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

    /// A lower bound on the busy cycles done by cycle `t`: the work booked less the span still
    /// booked ahead of `t` (exact when nothing is booked to start after a gap ahead of `t`).
    pub fn busy_by(&self, t: u64) -> u64 {
        self.busy - self.next_free.saturating_sub(t).min(self.busy)
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
    fn work_booked_ahead_is_not_done_yet() {
        let mut s = Server::default();
        s.book(10, 20); // [10, 30)
        assert_eq!([s.busy_by(5), s.busy_by(20), s.busy_by(30)], [0, 10, 20]);
        // Booked for later, past a gap: the gap counts as ahead too, so by 40 this says 10 of
        // the 20 done (a lower bound), and exact again from the booking's start.
        s.book(50, 10); // [50, 60)
        assert_eq!([s.busy_by(40), s.busy_by(55), s.busy_by(60)], [10, 25, 30]);
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

/// Sub-cycle resolution of [`Link`] (2^24 units per cycle): bandwidths that are not whole bytes
/// per cycle (an HBM channel moves ~57 B per SM cycle) would lose rate to rounding otherwise.
const FP: u64 = 1 << 24;

/// A bandwidth-limited path (bytes per cycle, fractional allowed) as a next-free server kept in
/// sub-cycle units. Same FIFO semantics as [`Server`].
#[derive(Clone, Debug)]
pub struct Link {
    next_free: u64,
    busy: u64,
    fp_per_byte: u64,
}

/// A rate in bytes per cycle as [`Link`]'s sub-cycle units per byte.
pub fn fp_per_byte(bytes_per_cycle: f64) -> u64 {
    ((FP as f64 / bytes_per_cycle).round() as u64).max(1)
}

/// [`Link`] sub-cycle units as cycles.
pub fn fp_to_cycles(units: u64) -> f64 {
    units as f64 / FP as f64
}

impl Link {
    pub fn new(bytes_per_cycle: f64) -> Self {
        Link {
            next_free: 0,
            busy: 0,
            fp_per_byte: fp_per_byte(bytes_per_cycle),
        }
    }

    /// Moves `bytes` starting no earlier than cycle `now`; returns the cycle the last byte is
    /// through (rounded up).
    pub fn book(&mut self, now: u64, bytes: u64) -> u64 {
        self.book_at(now, bytes, self.fp_per_byte)
    }

    /// The cycle a transfer asked for at `now` would start: after the transfers booked before.
    pub fn start_at(&self, now: u64) -> u64 {
        now.max(self.next_free / FP)
    }

    /// [`Link::book`] for a transfer that moves at its own rate ([`fp_per_byte`]), such as a
    /// TMA box whose shape sets how fast it fills shared memory.
    pub fn book_at(&mut self, now: u64, bytes: u64, fp_per_byte: u64) -> u64 {
        // Saturating: a tiny bandwidth (a huge --clock-mhz, an override) makes transfers long,
        // never wraps them around to short ones; the result stays below u64::MAX / FP.
        let start = now.saturating_mul(FP).max(self.next_free);
        let len = bytes.saturating_mul(fp_per_byte);
        self.next_free = start.saturating_add(len);
        self.busy = self.busy.saturating_add(len);
        self.next_free.div_ceil(FP)
    }

    /// Cycles spent transferring (rounded down).
    pub fn busy(&self) -> u64 {
        self.busy / FP
    }

    /// The cycle from which a new transfer would start at once.
    pub fn next_free(&self) -> u64 {
        self.next_free.div_ceil(FP)
    }

    /// Sub-cycle units of transfer done by cycle `t`, at least: as [`Server::busy_by`].
    fn done_by(&self, t: u64) -> u64 {
        let ahead = self.next_free.saturating_sub(t * FP).min(self.busy);
        self.busy - ahead
    }

    /// Cycles spent transferring by cycle `t` (a lower bound, as [`Server::busy_by`]).
    pub fn busy_by(&self, t: u64) -> f64 {
        self.done_by(t) as f64 / FP as f64
    }

    /// Bytes transferred by cycle `t` (a lower bound, as [`Server::busy_by`]).
    pub fn bytes_by(&self, t: u64) -> f64 {
        self.done_by(t) as f64 / self.fp_per_byte as f64
    }
}

#[cfg(test)]
mod link_tests {
    use super::*;

    #[test]
    fn fractional_rates_are_not_rounded_away() {
        // 57.2 B/cycle: 10,000 lines of 128 B take 10,000 x 128 / 57.2 = 22,378 cycles.
        let mut l = Link::new(57.2);
        let mut end = 0;
        for _ in 0..10_000 {
            end = l.book(0, 128);
        }
        assert!((end as f64 - 22_378.0).abs() <= 1.0, "{end}");
        assert!(end - l.busy() <= 1);
    }

    #[test]
    fn a_bandwidth_too_small_to_represent_takes_forever_not_no_time() {
        let mut l = Link::new(1e-30);
        let first = l.book(0, 128);
        assert!(first >= u64::MAX / FP - 1, "{first}");
        assert!(l.book(first, 128) >= first);
    }

    #[test]
    fn idle_gaps_are_not_busy() {
        let mut l = Link::new(64.0);
        assert_eq!(l.book(100, 640), 110);
        assert_eq!([l.bytes_by(105), l.bytes_by(110)], [320.0, 640.0]);
        assert_eq!(l.book(200, 64), 201);
        assert_eq!(l.busy(), 11);
        assert_eq!([l.busy_by(200), l.busy_by(201)], [10.0, 11.0]);
    }
}
