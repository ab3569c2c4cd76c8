//! TEMPORARY model of everything below shared memory, until L2 and HBM are modeled: each SM
//! reaches memory through one path with a fixed latency (plus seeded jitter) and a bandwidth
//! cap. A request's data starts returning after the latency and streams at the cap, queued FIFO
//! behind earlier requests.

use crate::preset;
use crate::server::Server;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

#[derive(Clone, Debug)]
pub struct Memory {
    path: Server,
    latency: u64,
    jitter: u64,
    bytes_per_cycle: u64,
    bytes: u64,
}

impl Memory {
    pub fn new(p: &preset::Memory) -> Self {
        Memory {
            path: Server::default(),
            latency: p.latency,
            jitter: p.latency_jitter,
            bytes_per_cycle: p.bytes_per_cycle,
            bytes: 0,
        }
    }

    /// A request for `bytes` issued at `now` (plus `extra` latency, e.g. the TMA unit's);
    /// returns the cycle its last byte arrives.
    pub fn request(&mut self, now: u64, bytes: u64, extra: u64, rng: &mut ChaCha8Rng) -> u64 {
        let jitter = if self.jitter > 0 {
            rng.random_range(0..=self.jitter)
        } else {
            0
        };
        self.bytes += bytes;
        let first_byte = now + self.latency + extra + jitter;
        self.path
            .book(first_byte, bytes.div_ceil(self.bytes_per_cycle))
            .1
    }

    /// Cycles the path has been transferring.
    pub fn busy(&self) -> u64 {
        self.path.busy()
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// When the path will have finished everything booked so far.
    pub fn drained_at(&self) -> u64 {
        self.path.next_free()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn mem(jitter: u64) -> Memory {
        Memory::new(&preset::Memory {
            latency: 400,
            latency_jitter: jitter,
            bytes_per_cycle: 64,
            sector_bytes: 32,
        })
    }

    #[test]
    fn latency_then_bandwidth() {
        let mut m = mem(0);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // One 1 KiB request: 400 cycles latency + 16 cycles at 64 B/clk.
        assert_eq!(m.request(0, 1024, 0, &mut rng), 416);
        // A stream of requests saturates the path: 100 x 1 KiB at 64 B/clk = 1600 cycles.
        let mut end = 0;
        for t in 0..100 {
            end = m.request(t, 1024, 0, &mut rng);
        }
        assert_eq!(end, 416 + 1600);
        assert_eq!(m.bytes(), 101 * 1024);
    }

    #[test]
    fn jitter_is_seeded_and_bounded() {
        let draw = |seed| {
            let mut m = mem(16);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            (0..50)
                .map(|i| m.request(i * 1000, 64, 0, &mut rng) - i * 1000)
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert!(draw(7).iter().all(|&l| (401..=417).contains(&l)));
        assert_ne!(draw(7), draw(8));
    }
}
