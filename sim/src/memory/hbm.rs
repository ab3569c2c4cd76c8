//! HBM: the preset's bandwidth (times a sustained-efficiency factor) split over channels that
//! addresses interleave across; each channel queues FIFO, so demand above bandwidth queues.
//!
//! A channel's data bus carries reads and writes in turn: a transfer in the other direction
//! than the channel's last one waits `turnaround` cycles after that one (the bus turnaround
//! and the write-to-read recovery of DRAM, tWTR and tRTW). It costs nothing when the channel
//! has been idle that long, so a trickle of writes among reads is free and only a channel kept
//! busy in both directions pays it.

use crate::engine::server::Link;

#[derive(Clone, Debug)]
pub struct Hbm {
    channels: Vec<Channel>,
    interleave: u64,
    turnaround: u64,
    batch: u64,
    latency: u64,
    read_bytes: u64,
    write_bytes: u64,
}

/// One channel: its data bus, the direction of its last transfer, and its write buffer.
#[derive(Clone, Debug)]
struct Channel {
    bus: Link,
    writing: bool,
    /// Bytes of writes posted since the last drain.
    buffered: u64,
}

impl Channel {
    /// Moves `bytes` in direction `write` from `now` on, after the turnaround if the bus last
    /// moved the other way; returns when the last byte is through.
    fn transfer(&mut self, now: u64, bytes: u64, write: bool, turnaround: u64) -> u64 {
        let from = if write == self.writing {
            now
        } else {
            now.max(self.bus.next_free() + turnaround)
        };
        self.writing = write;
        self.bus.book(from, bytes)
    }
}

impl Hbm {
    /// `bytes_per_cycle` is the sustained bandwidth in bytes per SM cycle; `turnaround` the
    /// cycles a channel loses when it switches between reading and writing; a channel drains
    /// its writes `batch` bytes at a time.
    pub fn new(
        bytes_per_cycle: f64,
        channels: u32,
        interleave: u64,
        latency: u64,
        turnaround: u64,
        batch: u64,
    ) -> Self {
        let n = channels.max(1);
        Hbm {
            channels: (0..n)
                .map(|_| Channel {
                    bus: Link::new(bytes_per_cycle / n as f64),
                    writing: false,
                    buffered: 0,
                })
                .collect(),
            interleave: interleave.max(1),
            turnaround,
            batch: batch.max(1),
            latency,
            read_bytes: 0,
            write_bytes: 0,
        }
    }

    /// Channels are picked by a hash of the interleave unit, as memory controllers hash
    /// addresses, so power-of-two strides (a tile's rows) spread over all channels.
    fn channel(&mut self, addr: u64) -> &mut Channel {
        let c = crate::memory::system::spread(addr / self.interleave, self.channels.len());
        &mut self.channels[c]
    }

    /// Reads `bytes` at `addr`, requested at `now`; returns when the data is back at L2.
    pub fn read(&mut self, now: u64, addr: u64, bytes: u64) -> u64 {
        self.read_bytes += bytes;
        let (lat, turn) = (self.latency, self.turnaround);
        self.channel(addr).transfer(now, bytes, false, turn) + lat
    }

    /// Writes `bytes` at `addr` (a write-back) into its channel's write buffer, as memory
    /// controllers post writes and drain them in batches to turn the bus around less often.
    /// Returns when the buffer has taken them: at once, or, for the write that fills a batch,
    /// when the batch is through (the buffer is full until then).
    pub fn write(&mut self, now: u64, addr: u64, bytes: u64) -> u64 {
        self.write_bytes += bytes;
        let (turn, batch) = (self.turnaround, self.batch);
        let c = self.channel(addr);
        c.buffered += bytes;
        if c.buffered < batch {
            return now;
        }
        let drain = std::mem::take(&mut c.buffered);
        c.transfer(now, drain, true, turn)
    }

    pub fn read_bytes(&self) -> u64 {
        self.read_bytes
    }
    pub fn write_bytes(&self) -> u64 {
        self.write_bytes
    }
    /// Bytes through the channels by cycle `t` (at least; `Link::bytes_by`).
    pub fn bytes_by(&self, t: u64) -> f64 {
        self.channels.iter().map(|c| c.bus.bytes_by(t)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_over_all_channels_moves_at_full_bandwidth() {
        // 1830 B/cycle over 32 channels, 256-byte interleave: 64 MiB sequential takes
        // 64 MiB / 1830 = 36,671 cycles (+ latency).
        let mut h = Hbm::new(1830.0, 32, 256, 250, 0, 128);
        let mut end = 0;
        for line in 0..(64u64 << 20) / 128 {
            end = end.max(h.read(0, line * 128, 128));
        }
        let ideal = (64u64 << 20) as f64 / 1830.0;
        assert!(((end - 250) as f64 - ideal).abs() / ideal < 0.001, "{end}");
        assert_eq!(h.read_bytes(), 64 << 20);
    }

    #[test]
    fn one_channel_hot_spot_queues() {
        // Every request to the same interleave unit: one channel, 1/32 of the bandwidth.
        let mut h = Hbm::new(1830.0, 32, 256, 0, 0, 128);
        let mut end = 0;
        for _ in 0..1000u64 {
            end = h.read(0, 4096, 128);
        }
        let per_channel = 1830.0 / 32.0;
        assert!((end as f64 - 128_000.0 / per_channel).abs() <= 1.0, "{end}");
    }

    #[test]
    fn each_switch_of_direction_costs_the_turnaround() {
        // One channel at 128 B/cycle (a line a cycle), 10-cycle turnaround, writes drained one
        // line at a time: read, write, read, write, ... all requested at 0. Each of the 2n
        // lines takes 1 cycle and each of the 2n - 1 switches 10: the last write ends at
        // 2n + 10 (2n - 1).
        let mut h = Hbm::new(128.0, 1, 256, 0, 10, 128);
        let n = 50u64;
        let mut end = 0;
        for _ in 0..n {
            h.read(0, 0, 128);
            end = h.write(0, 0, 128);
        }
        assert_eq!(end, 2 * n + 10 * (2 * n - 1));
        // The same lines in one direction each: no switch but the one between the two runs.
        let mut h = Hbm::new(128.0, 1, 256, 0, 10, 128);
        for _ in 0..n {
            h.read(0, 0, 128);
        }
        let mut end = 0;
        for _ in 0..n {
            end = h.write(0, 0, 128);
        }
        assert_eq!(end, 2 * n + 10);
    }

    #[test]
    fn writes_drain_in_batches_and_only_the_batch_filling_one_waits() {
        // 4-line batches: writes 1-3 are posted at once; the 4th drains all four after one
        // turnaround (the bus last read): 1 read + 10 + 4 lines = 15.
        let mut h = Hbm::new(128.0, 1, 256, 0, 10, 512);
        h.read(0, 0, 128);
        for _ in 0..3 {
            assert_eq!(h.write(0, 0, 128), 0);
        }
        assert_eq!(h.write(0, 0, 128), 15);
        // The next read turns the bus around again.
        assert_eq!(h.read(0, 0, 128), 26);
        assert_eq!(h.write_bytes(), 512);
    }

    #[test]
    fn an_idle_channel_hides_the_turnaround() {
        let mut h = Hbm::new(128.0, 1, 256, 0, 10, 128);
        assert_eq!(h.read(0, 0, 128), 1);
        // 100 cycles later the bus has long been free: the write starts at once.
        assert_eq!(h.write(100, 0, 128), 101);
        // 4 cycles after it, the bus is still turning: the read starts at 101 + 10.
        assert_eq!(h.read(105, 0, 128), 112);
        assert_eq!(h.write(200, 0, 128), 201);
    }

    #[test]
    fn power_of_two_strides_spread_over_channels() {
        // 1024 rows 8 KiB apart (a tile column of a 4096-wide bf16 matrix): within 10% of the
        // full bandwidth, not 1/8 of it as plain modulo interleaving would give.
        let mut h = Hbm::new(1830.0, 40, 256, 0, 0, 128);
        let mut end = 0;
        for row in 0..1024u64 {
            end = end.max(h.read(0, row * 8192, 128));
        }
        let ideal = 1024.0 * 128.0 / 1830.0;
        assert!((end as f64) < 1.6 * ideal, "{end} vs {ideal}");
    }
}
