//! HBM: the preset's bandwidth (times a sustained-efficiency factor) split over channels that
//! addresses interleave across; each channel queues FIFO, so demand above bandwidth queues.

use crate::engine::server::Link;

#[derive(Clone, Debug)]
pub struct Hbm {
    channels: Vec<Link>,
    interleave: u64,
    latency: u64,
    read_bytes: u64,
    write_bytes: u64,
}

impl Hbm {
    /// `bytes_per_cycle` is the sustained bandwidth in bytes per SM cycle.
    pub fn new(bytes_per_cycle: f64, channels: u32, interleave: u64, latency: u64) -> Self {
        let n = channels.max(1);
        Hbm {
            channels: (0..n)
                .map(|_| Link::new(bytes_per_cycle / n as f64))
                .collect(),
            interleave: interleave.max(1),
            latency,
            read_bytes: 0,
            write_bytes: 0,
        }
    }

    /// Channels are picked by a hash of the interleave unit, as memory controllers hash
    /// addresses, so power-of-two strides (a tile's rows) spread over all channels.
    fn channel(&mut self, addr: u64) -> &mut Link {
        let c = crate::memory::system::spread(addr / self.interleave, self.channels.len());
        &mut self.channels[c]
    }

    /// Reads `bytes` at `addr`, requested at `now`; returns when the data is back at L2.
    pub fn read(&mut self, now: u64, addr: u64, bytes: u64) -> u64 {
        self.read_bytes += bytes;
        let lat = self.latency;
        self.channel(addr).book(now, bytes) + lat
    }

    /// Writes `bytes` at `addr` (a write-back); occupies the channel, nobody waits for it.
    pub fn write(&mut self, now: u64, addr: u64, bytes: u64) -> u64 {
        self.write_bytes += bytes;
        self.channel(addr).book(now, bytes)
    }

    pub fn read_bytes(&self) -> u64 {
        self.read_bytes
    }
    pub fn write_bytes(&self) -> u64 {
        self.write_bytes
    }
    /// Bytes through the channels by cycle `t` (at least; `Link::bytes_by`).
    pub fn bytes_by(&self, t: u64) -> f64 {
        self.channels.iter().map(|c| c.bytes_by(t)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_over_all_channels_moves_at_full_bandwidth() {
        // 1830 B/cycle over 32 channels, 256-byte interleave: 64 MiB sequential takes
        // 64 MiB / 1830 = 36,671 cycles (+ latency).
        let mut h = Hbm::new(1830.0, 32, 256, 250);
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
        let mut h = Hbm::new(1830.0, 32, 256, 0);
        let mut end = 0;
        for _ in 0..1000u64 {
            end = h.read(0, 4096, 128);
        }
        let per_channel = 1830.0 / 32.0;
        assert!((end as f64 - 128_000.0 / per_channel).abs() <= 1.0, "{end}");
    }

    #[test]
    fn power_of_two_strides_spread_over_channels() {
        // 1024 rows 8 KiB apart (a tile column of a 4096-wide bf16 matrix): within 10% of the
        // full bandwidth, not 1/8 of it as plain modulo interleaving would give.
        let mut h = Hbm::new(1830.0, 40, 256, 0);
        let mut end = 0;
        for row in 0..1024u64 {
            end = end.max(h.read(0, row * 8192, 128));
        }
        let ideal = 1024.0 * 128.0 / 1830.0;
        assert!((end as f64) < 1.6 * ideal, "{end} vs {ideal}");
    }
}
